"""A third set of realistic mistakes in mytorch, each one edit to the reference solution.

Written from the solution's code and the handout (handout/assignment/*.md) alone, without reading the grader's
catalogue of mistakes (autograder/diagnosis/) or the earlier sets (tests/fresh_mistakes.py): an independent
sample of what students get wrong in BPTT (mytorch/nn/recurrent.py), the CTC loss (ctc.py, ctc_course.py), CTC
decoding (ctc_decode.py: greedy collapse, pruning, prefix extension) and a few cells. The diagnosis tests use it to
measure how often the grader's report locates the edited line, names the quantity that goes wrong, and says
nothing false.

Each entry is one edit of one to three consecutive whole lines that keeps the file's line count:

    file   the solution file, relative to the repository
    part   the first autograder part that takes points off for it
    line   the 1-based line of the solution file a TA would point at: the first line the edit changes
    what   what the student did, in plain words
    old    the solution's lines (exactly once in the file), new: the student's (as many lines)
    truth  the true diagnosis, for a judge to compare the grader's report against

``UNGRADED_THIRD`` holds mistakes of the same kind that no part takes points off today (see its comment); they
are kept out of ``FRESH_THIRD``.

``python -m tests.fresh_mistakes_third`` applies every edit to a copy of mytorch and checks the data;
with ``--grade`` it also grades each copy and checks that its part loses points.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FRESH_THIRD = [
    # ---------------------------------------------------------------- BPTT: recurrent.py, forward over layers (step 1)
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 123,
     'what': "Every layer is run on the layer's input X, not on the outputs of the layer below.",
     'old': "                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[k], lengths, reverse=direction == 1)\n",
     'new': "                Y_k, finals[k] = self._run_direction(self.cells[k], X, starts[k], lengths, reverse=direction == 1)\n",
     'truth': "layer l > 0 reads X instead of layer l-1's outputs, so with I != H layer 1 gets an input of the wrong "
              "width and with I == H the upper layer's outputs (and Y) are wrong"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 123,
     'what': "The cell of layer `layer` starts from starts[layer] instead of starts[k].",
     'old': "                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[k], lengths, reverse=direction == 1)\n",
     'new': "                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[layer], lengths, reverse=direction == 1)\n",
     'truth': "the start state is indexed by the layer instead of by k = layer·D + direction, so in a bidirectional "
              "stack the reverse cell of layer 0 starts from the forward cell's initial state (a unidirectional stack, "
              "where k = layer, is unaffected)"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 125,
     'what': "The two directions' outputs are concatenated along axis 1 (the batch) instead of the feature axis.",
     'old': "            inp = np.concatenate(outputs, axis=2)                      # T,N,D·H_out: the next layer's input\n",
     'new': "            inp = np.concatenate(outputs, axis=1)                      # T,N,D·H_out: the next layer's input\n",
     'truth': "in a bidirectional layer the forward and reverse outputs are stacked along the batch axis (T, 2N, H) "
              "instead of side by side (T, N, 2H), so Y has the wrong shape"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 125,
     'what': "The concatenation that makes the next layer's input is indented into the direction loop.",
     'old': "            inp = np.concatenate(outputs, axis=2)                      # T,N,D·H_out: the next layer's input\n",
     'new': "                inp = np.concatenate(outputs, axis=2)                  # T,N,D·H_out: the next layer's input\n",
     'truth': "inp is replaced after the forward direction, so the reverse cell of each layer reads the forward cell's "
              "outputs instead of the layer's input"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 126,
     'what': "Y is set to the last direction's outputs instead of the top layer's concatenated outputs.",
     'old': "        Y = inp\n",
     'new': "        Y = Y_k\n",
     'truth': "Y holds only the last cell's outputs (the reverse direction of the top layer), so a bidirectional "
              "layer's Y is H_out wide instead of 2·H_out and lacks the forward half"},
    # ---------------------------------------------------------------- BPTT: one direction forward (step 2)
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 192,
     'what': "The live mask uses t <= lengths[n] instead of t < lengths[n].",
     'old': "            (np.arange(T)[:, None] < lengths[None, :])[:, :, None]     # T,N,1: True where t < lengths[n]\n",
     'new': "            (np.arange(T)[:, None] <= lengths[None, :])[:, :, None]    # T,N,1: True where t < lengths[n]\n",
     'truth': "the step t = lengths[n] counts as live, so each padded sequence runs one step past its end: its output "
              "there is not zero and its final state is one step too late"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 195,
     'what': "The steps are always visited t = 0 … T−1, also for the reverse direction.",
     'old': "        steps = reversed(range(T)) if reverse else range(T)\n",
     'new': "        steps = range(T)\n",
     'truth': "the reverse direction reads the sequence forwards, so its outputs (the second half of Y) and its final "
              "state are those of a second forward cell"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 197,
     'what': "Every step calls the cell with state0 instead of the state carried from the previous step.",
     'old': "            new = cell.forward(X[t], state)\n",
     'new': "            new = cell.forward(X[t], state0)\n",
     'truth': "each step starts from the initial state instead of the previous step's state, so the state never "
              "carries and every output after the first step is wrong"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 198,
     'what': "The state is set to the cell's new state with no masking (only the output is masked).",
     'old': ("            state = self._as_state(tuple(np.where(live[t], a, b)       # past a sequence's end, its state stays\n"
             "                                         for a, b in zip(self._parts(new), self._parts(state))))\n"),
     'new': ("            state = new                                                 # past a sequence's end, its state stays\n"
             "\n"),
     'truth': "the state keeps changing past a sequence's end, so a padded sequence's final state is the one after T "
              "steps and the reverse direction does not start at the sequence's own end"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 200,
     'what': "The output at step t is the cell's new h with no masking.",
     'old': "            Y[t] = np.where(live[t], self._h(new), 0.0)                # and its output is zero\n",
     'new': "            Y[t] = self._h(new)                                        # and its output is zero\n",
     'truth': "the outputs of padded steps (t >= lengths[n]) are the cell's h instead of zero"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 201,
     'what': "The reverse direction's outputs are reversed once more before stacking.",
     'old': "        Y = np.stack(Y)\n",
     'new': "        Y = np.stack(Y[::-1] if reverse else Y)\n",
     'truth': "the reverse direction's outputs, already stored by time index, are flipped in time, so Y[t]'s reverse "
              "half holds the output of step T−1−t"},
    # ---------------------------------------------------------------- BPTT: backward over layers (step 3)
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 155,
     'what': "Backward walks the layers bottom-up, from layer 0.",
     'old': "        for layer in reversed(range(self.num_layers)):                 # top layer first: LIFO across layers too\n",
     'new': "        for layer in range(self.num_layers):                           # top layer first: LIFO across layers too\n",
     'truth': "layer 0 is backpropagated first with dY (the top layer's gradient), so with I != H the shapes clash and "
              "with I == H every layer gets the wrong output gradient"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 159,
     'what': "Each direction's columns of d_out are sliced from `direction` instead of `direction * W`.",
     'old': "                dX_k, d_state0[k] = self._backward_direction(self.cells[k], d_out[:, :, direction * W:(direction + 1) * W],\n",
     'new': "                dX_k, d_state0[k] = self._backward_direction(self.cells[k], d_out[:, :, direction:direction + W],\n",
     'truth': "the reverse cell gets columns 1 … W of dY (almost all the forward half) instead of its own block W … 2W−1, "
              "so its gradients and the layer's dX are wrong"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 160,
     'what': "The final-state gradient is taken as d_finals[layer] instead of d_finals[k].",
     'old': "                                                             d_finals[k], lengths, reverse=direction == 1)\n",
     'new': "                                                             d_finals[layer], lengths, reverse=direction == 1)\n",
     'truth': "d_state_T is indexed by the layer instead of k, so in a bidirectional layer the reverse cell starts "
              "backward from the forward cell's final-state gradient (a unidirectional stack is unaffected)"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 161,
     'what': "The two directions' input gradients are assigned instead of added.",
     'old': "                d_in = d_in + dX_k                                     # both directions read the same input\n",
     'new': "                d_in = dX_k                                            # both directions read the same input\n",
     'truth': "in a bidirectional layer the forward cell's input gradient is overwritten by the reverse cell's, so dX "
              "(and the gradient reaching the layer below) lacks the forward direction's share"},
    # ---------------------------------------------------------------- BPTT: one direction backward (step 4)
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 218,
     'what': "Backward visits the steps in the same order as forward.",
     'old': "        steps = range(T) if reverse else reversed(range(T))           # the opposite order of forward\n",
     'new': "        steps = reversed(range(T)) if reverse else range(T)           # the opposite order of forward\n",
     'truth': "the steps are backpropagated in forward order, so each cell.backward pops the record of another step "
              "(last in, first out) and d_state flows the wrong way in time"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.4', 'line': 220,
     'what': "dY[t] is added to every part of the state's gradient, not only to h's.",
     'old': "            with_output = (self._parts(d_state)[0] + dY[t],) + self._parts(d_state)[1:]\n",
     'new': "            with_output = tuple(d + dY[t] for d in self._parts(d_state))\n",
     'truth': "for two-state cells dY[t] is also added to the gradient of the second part (c, or m), though only h "
              "is an output: every gradient of a GMU layer is wrong, and where that part is not as wide as h "
              "(TGRU's m, an LSTM's c with proj_size) the addition fails"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 221,
     'what': "The gradient reaching each step is not masked with live[t].",
     'old': "            d_new = self._as_state(tuple(np.where(live[t], d, 0.0) for d in with_output))\n",
     'new': "            d_new = self._as_state(with_output)\n",
     'truth': "padded steps get the loss's gradient, so their dX is not zero and they add to the parameter gradients "
              "although their outputs were the constant 0"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 222,
     'what': "The cell's backward is given the carried d_state instead of d_new (the gradient with dY[t] added).",
     'old': "            dX[t], d_prev = cell.backward(d_new)\n",
     'new': "            dX[t], d_prev = cell.backward(d_state)\n",
     'truth': "cell.backward never sees dY[t] (nor the mask), so no output's gradient enters the recurrence and dX "
              "and every parameter gradient come only from d_state_T"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 224,
     'what': "On padded rows the carried gradient is taken from with_output (d_state plus dY[t]) instead of d_state.",
     'old': "                                           for a, b in zip(self._parts(d_prev), self._parts(d_state))))\n",
     'new': "                                           for a, b in zip(self._parts(d_prev), self._parts(with_output))))\n",
     'truth': "a padded step passes on d_state plus dY[t], so the gradient of the (constant zero) padded outputs "
              "leaks into the state gradient of the sequence's last live step"},
    {'file': 'mytorch/nn/recurrent.py', 'part': '6.1', 'line': 223,
     'what': "The new d_state is d_prev on every row, padded ones included.",
     'old': ("            d_state = self._as_state(tuple(np.where(live[t], a, b)    # a padded step passes d_state by\n"
             "                                           for a, b in zip(self._parts(d_prev), self._parts(d_state))))\n"),
     'new': ("            d_state = d_prev                                            # a padded step passes d_state by\n"
             "\n"),
     'truth': "on padded rows d_prev is zero (the step got no gradient), so the gradient that should pass through a "
              "sequence's padding is wiped out: d_state_T never reaches a padded sequence's last live step, and in "
              "the reverse direction its d_state0 is zeroed"},
]
FRESH_THIRD += [
    # ---------------------------------------------------------------- CTC loss: ctc.py
    {'file': 'mytorch/nn/ctc.py', 'part': '8.1', 'line': 92,
     'what': "The labels are written at the even positions from 2 on (ext[2::2]) instead of the odd ones.",
     'old': "    ext[1::2] = target                                            # labels at the odd positions\n",
     'new': "    ext[2::2] = target                                            # labels at the odd positions\n",
     'truth': "the labels land at positions 2, 4, …, 2L (shifted by one), so ext begins with two blanks and holds the "
              "labels where the blanks should be"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.1', 'line': 93,
     'what': "Every label after the first may skip the blank before it, repeated labels included.",
     'old': "    skip[3::2] = target[1:] != target[:-1]                        # a label may skip the blank before it if it differs\n",
     'new': "    skip[3::2] = True                                             # a label may skip the blank before it if it differs\n",
     'truth': "skip is 1 also where a label equals the one two positions back, so the compulsory blank between two "
              "equal labels can be skipped (and 'a a' collapses to 'a')"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.2', 'line': 112,
     'what': "alpha at step 0 is set only in state 0 (the first blank), not in the first label's state.",
     'old': "    la[0, ..., :2] = ly[0, ..., :2]                               # start on the first blank or the first label\n",
     'new': "    la[0, ..., :1] = ly[0, ..., :1]                               # start on the first blank or the first label\n",
     'truth': "α[0, 1] stays 0 (log −∞), so no path may start on the first label and α misses every path that does "
              "not begin with a blank"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.2', 'line': 113,
     'what': "The alpha loop stops one step early (range(1, T − 1)).",
     'old': "    for t in range(1, len(ly)):\n",
     'new': "    for t in range(1, len(ly) - 1):\n",
     'truth': "the last step of α is never computed, so α[T−1] stays 0 (log −∞) everywhere"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.2', 'line': 114,
     'what': "The skip transition reads alpha from s − 1 instead of s − 2.",
     'old': "        stay, move, jump = la[t - 1], _shift(la[t - 1], 1), np.where(skip, _shift(la[t - 1], 2), NEG_INF)\n",
     'new': "        stay, move, jump = la[t - 1], _shift(la[t - 1], 1), np.where(skip, _shift(la[t - 1], 1), NEG_INF)\n",
     'truth': "where skip is allowed the term α[t−1, s−1] is counted twice and α[t−1, s−2] not at all, so α is wrong "
              "from the first step a skip is possible"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.2', 'line': 115,
     'what': "The three incoming terms of alpha are combined with a maximum instead of log-sum-exp.",
     'old': "        la[t] = _lse(stay, move, jump) + ly[t]\n",
     'new': "        la[t] = np.maximum(np.maximum(stay, move), jump) + ly[t]\n",
     'truth': "α keeps only the best incoming path (a Viterbi score) instead of summing the paths, so from t = 1 α is "
              "too small wherever two or more paths meet"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.3', 'line': 126,
     'what': "beta at the last step is set to y[T−1, ext_s] in the final states instead of 1.",
     'old': "    lb[T - 1] = np.where(final, 0.0, NEG_INF)                     # end on the last label or the last blank: β = 1\n",
     'new': "    lb[T - 1] = np.where(final, ly[T - 1], NEG_INF)               # end on the last label or the last blank: β = 1\n",
     'truth': "β[T−1] includes step T−1's own y (PyTorch's convention, not the course's), so every β is multiplied by "
              "an extra emission of the last step"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.3', 'line': 128,
     'what': "beta's recurrence multiplies by step t's emissions instead of step t + 1's.",
     'old': "        ahead = lb[t + 1] + ly[t + 1]\n",
     'new': "        ahead = lb[t + 1] + ly[t]\n",
     'truth': "β[t] uses y[t] instead of y[t+1], so it counts step t's emission (which belongs to α) and leaves out "
              "step t+1's"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.3', 'line': 129,
     'what': "The skip term of beta is gated with skip (skip[s]) instead of skip_from (skip[s + 2]).",
     'old': "        lb[t] = _lse(ahead, _shift(ahead, -1), np.where(skip_from, _shift(ahead, -2), NEG_INF))\n",
     'new': "        lb[t] = _lse(ahead, _shift(ahead, -1), np.where(skip, _shift(ahead, -2), NEG_INF))\n",
     'truth': "the jump s → s+2 is allowed where state s may be entered by a skip instead of where s+2 may, so β wrongly "
              "includes or excludes skips around repeated labels"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.3', 'line': 129,
     'what': "beta reads its neighbours from the left (shift +1, +2) instead of from the right.",
     'old': "        lb[t] = _lse(ahead, _shift(ahead, -1), np.where(skip_from, _shift(ahead, -2), NEG_INF))\n",
     'new': "        lb[t] = _lse(ahead, _shift(ahead, 1), np.where(skip_from, _shift(ahead, 2), NEG_INF))\n",
     'truth': "β[t, s] adds β[t+1, s−1] and β[t+1, s−2] (moves backwards through the lattice) instead of s+1 and s+2"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.4', 'line': 138,
     'what': "The normaliser of gamma is summed over time (axis 0) instead of over the states.",
     'old': "    norm = _lse_last(joint)[..., None]                            # log Σ_s α β  (= log P at every t)\n",
     'new': "    norm = np.log(np.exp(joint).sum(axis=0, keepdims=True))       # log Σ_s α β  (= log P at every t)\n",
     'truth': "γ is normalised over t for each state instead of over s at each step, so its rows do not sum to 1"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.9', 'line': 139,
     'what': "The normaliser is subtracted as it is, without guarding the rows where it is −∞.",
     'old': "    log_gamma = joint - np.where(np.isneginf(norm), 0.0, norm)            # a row of −∞ stays −∞\n",
     'new': "    log_gamma = joint - norm                                              # a row of −∞ stays −∞\n",
     'truth': "where no alignment exists the whole row is −∞ − (−∞): γ is NaN there instead of 0 and NumPy warns "
              "'invalid value encountered in subtract' (CTCLoss then zeroes that sequence's gradient, so only the "
              "warning shows)"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.9', 'line': 228,
     'what': "−log P sums alpha over every state at the last step, not only the two final states.",
     'old': "    nll = -_lse_last(np.where(final, la[-1], NEG_INF))            # N   −log P: the paths that end in a final state\n",
     'new': "    nll = -_lse_last(la[-1])                                      # N   −log P: the paths that end in a final state\n",
     'truth': "P includes paths that end before the last label (α[T−1, s] for s < S−2), so the loss is too small"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.9', 'line': 230,
     'what': "The gradient is −Σγ alone, without the exp(log_probs) term PyTorch returns.",
     'old': "    grad = np.exp(lp) - class_sums(gamma, ext, C + 1)[..., :C]    # PyTorch's: d/dz of log_softmax(z), see above\n",
     'new': "    grad = -class_sums(gamma, ext, C + 1)[..., :C]                # PyTorch's: d/dz of log_softmax(z), see above\n",
     'truth': "the gradient is ∂(−log P)/∂log y (−Σγ) instead of PyTorch's y − Σγ (the gradient through the "
              "log_softmax), so every entry lacks the y[t, c] term"},
    {'file': 'mytorch/nn/ctc.py', 'part': '8.9', 'line': 231,
     'what': "Only the padded steps' gradient is zeroed; a sequence with no alignment keeps its gradient.",
     'old': "    grad[waiting | np.isinf(nll)[None, :]] = 0.0                  # padded steps; no alignment: a constant +inf\n",
     'new': "    grad[waiting] = 0.0                                           # padded steps; no alignment: a constant +inf\n",
     'truth': "a sequence whose loss is +inf (no alignment) gets exp(log_probs) as its gradient instead of 0"},
    # ---------------------------------------------------------------- CTC loss: ctc_course.py
    {'file': 'mytorch/nn/ctc_course.py', 'part': '8.5', 'line': 107,
     'what': "gamma is left as log gamma (the exp is forgotten).",
     'old': "            gamma = np.exp(core.log_posterior(core.log_alpha(ly, skip), core.log_beta(ly, skip, final)))\n",
     'new': "            gamma = core.log_posterior(core.log_alpha(ly, skip), core.log_beta(ly, skip, final))\n",
     'truth': "gamma holds log γ (≤ 0, −∞ off the lattice's reach) instead of γ, so the loss and the stored gammas the "
              "backward uses are wrong"},
    {'file': 'mytorch/nn/ctc_course.py', 'part': '8.5', 'line': 108,
     'what': "The loss weights the probabilities y[t, ext_s] by gamma instead of their logs.",
     'old': "            total_loss[b] = -np.sum(gamma * np.where(gamma > 0, ly, 0.0))   # 0 · log 0 counts 0\n",
     'new': "            total_loss[b] = -np.sum(gamma * np.where(gamma > 0, y[:, ext], 0.0))   # 0 · log 0 counts 0\n",
     'truth': "the loss is −Σ γ y[t, ext_s] instead of −Σ γ log y[t, ext_s] (probability used where its log belongs)"},
    {'file': 'mytorch/nn/ctc_course.py', 'part': '8.6', 'line': 121,
     'what': "gamma is not divided by y (the ratio is gamma itself).",
     'old': "                ratio = np.where(gamma > 0, gamma / y[:, ext], 0.0)         # γ[t, s] / y[t, ext_s]\n",
     'new': "                ratio = np.where(gamma > 0, gamma, 0.0)                     # γ[t, s] / y[t, ext_s]\n",
     'truth': "dY is −Σγ, the gradient with respect to log y, instead of −Σγ / y[t, c], the gradient with respect to "
              "the probabilities"},
    {'file': 'mytorch/nn/ctc_course.py', 'part': '8.6', 'line': 122,
     'what': "The gradient is divided by the batch size.",
     'old': "            dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1])       # summed over the s with ext_s = c\n",
     'new': "            dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1]) / len(self.gammas)  # summed over the s with ext_s = c\n",
     'truth': "dY is divided by B, though the course's backward is the per-sequence gradient, so with B > 1 every "
              "entry is B times too small"},
    {'file': 'mytorch/nn/ctc_course.py', 'part': '8.6', 'line': 122,
     'what': "The whole time column dY[:, b] is assigned instead of the first input_lengths[b] steps.",
     'old': "            dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1])       # summed over the s with ext_s = c\n",
     'new': "            dY[:, b] = -core.class_sums(ratio, ext, y.shape[1])             # summed over the s with ext_s = c\n",
     'truth': "a sequence shorter than T gives a (T_b, C) array for a (T, C) slot, so the backward fails with a shape "
              "error on a batch of unequal input lengths"},
]
FRESH_THIRD += [
    # ---------------------------------------------------------------- decoding: collapse (greedy)
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.7', 'line': 41,
     'what': "Blanks are dropped first and repeats merged afterwards.",
     'old': ("    merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]\n"
             "    return tuple(int(c) for c in merged if c != blank)\n"),
     'new': ("    merged = [c for c in path if c != blank]\n"
             "    return tuple(int(c) for k, c in enumerate(merged) if k == 0 or c != merged[k - 1])\n"),
     'truth': "removing blanks before merging joins labels a blank kept apart, so 'a ∅ a' decodes to 'a' instead of "
              "'aa'"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.7', 'line': 41,
     'what': "The repeat test compares with path[k − 1] at every k, k = 0 included (no k == 0 guard).",
     'old': "    merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]\n",
     'new': "    merged = [c for k, c in enumerate(path) if c != path[k - 1]]\n",
     'truth': "at k = 0, path[−1] is the last step, so when the first and last classes are equal (e.g. T = 1) the "
              "first label is dropped"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.7', 'line': 42,
     'what': "The blanks are never removed from the merged path.",
     'old': "    return tuple(int(c) for c in merged if c != blank)\n",
     'new': "    return tuple(int(c) for c in merged)\n",
     'truth': "the decoded prefix keeps the blanks (class 0), so the decoded string has extra symbols"},
    # ---------------------------------------------------------------- decoding: _prune, the course's rule
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 84,
     'what': "The scores are sorted ascending (reverse=True forgotten).",
     'old': "        scores = sorted(list(blank_end.values()) + list(label_end.values()), reverse=True)\n",
     'new': "        scores = sorted(list(blank_end.values()) + list(label_end.values()))\n",
     'truth': "the cutoff is the beam_width-th worst score instead of the beam_width-th best, so almost nothing is "
              "pruned"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 84,
     'what': "Only the label-ending hypotheses are ranked to find the cutoff.",
     'old': "        scores = sorted(list(blank_end.values()) + list(label_end.values()), reverse=True)\n",
     'new': "        scores = sorted(list(label_end.values()), reverse=True)\n",
     'truth': "the blank-ending hypotheses are left out of the ranking, so the cutoff is the beam_width-th best "
              "label-ending score and too many (or too few) hypotheses survive"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 85,
     'what': "The cutoff is scores[beam_width − 1] with no guard for fewer hypotheses than beam_width.",
     'old': "        cutoff = scores[min(beam_width, len(scores)) - 1]             # the beam_width-th best, or the last\n",
     'new': "        cutoff = scores[beam_width - 1]                               # the beam_width-th best, or the last\n",
     'truth': "with fewer hypotheses than beam_width the index is out of range and the search fails with an "
              "IndexError"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 86,
     'what': "Hypotheses are kept when their score is > the cutoff instead of >=.",
     'old': "        return tuple({p: s for p, s in hypotheses.items() if s >= cutoff} for hypotheses in (blank_end, label_end))\n",
     'new': "        return tuple({p: s for p, s in hypotheses.items() if s > cutoff} for hypotheses in (blank_end, label_end))\n",
     'truth': "the beam_width-th best hypothesis itself (and its ties) is pruned, so the beam keeps beam_width − 1 "
              "hypotheses"},
    # ---------------------------------------------------------------- decoding: _extend
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 99,
     'what': "Only the blank-ending hypotheses are extended by a blank.",
     'old': "    for hypotheses in (blank_end, label_end):                     # any hypothesis + ∅ ends in a blank\n",
     'new': "    for hypotheses in (blank_end,):                               # any hypothesis + ∅ ends in a blank\n",
     'truth': "label-ending hypotheses are never extended by a blank, so b'(p) lacks n(p)·y[∅] and their prefixes lose "
              "that probability"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 101,
     'what': "A blank extension assigns the new score instead of adding it to what is already there.",
     'old': "            new_blank[prefix] = _add(new_blank.get(prefix, NEG_INF), score + y[blank])\n",
     'new': "            new_blank[prefix] = score + y[blank]\n",
     'truth': "when both the blank- and the label-ending hypothesis of a prefix extend by a blank, the second "
              "overwrites the first instead of merging, so b'(p) holds only n(p)·y[∅]"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 101,
     'what': "The log score and the blank's log-probability are multiplied instead of added.",
     'old': "            new_blank[prefix] = _add(new_blank.get(prefix, NEG_INF), score + y[blank])\n",
     'new': "            new_blank[prefix] = _add(new_blank.get(prefix, NEG_INF), score * y[blank])\n",
     'truth': "in log space the blank's probability must be added to the score; multiplying two logs gives a "
              "meaningless (positive) score for every blank extension"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 104,
     'what': "A blank-ending prefix extended by its own last label is merged into the prefix.",
     'old': "            new_label[prefix + (c,)] = _add(new_label.get(prefix + (c,), NEG_INF), score + y[c])\n",
     'new': "            key = prefix if prefix and c == prefix[-1] else prefix + (c,); new_label[key] = _add(new_label.get(key, NEG_INF), score + y[c])\n",
     'truth': "'a ∅' + a is treated like 'a' + a: its probability goes to 'a' instead of 'aa', so a repeated label "
              "with a blank between (which CTC keeps) can never be decoded"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 107,
     'what': "A label-ending prefix extended by its own last label grows instead of staying.",
     'old': "            grown = prefix if c == prefix[-1] else prefix + (c,)\n",
     'new': "            grown = prefix + (c,)\n",
     'truth': "'a' + a becomes 'aa' instead of staying 'a', so repeats without a blank between them are not merged"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 108,
     'what': "Hypotheses that reach the same label-ending prefix are merged with max instead of log-sum-exp.",
     'old': "            new_label[grown] = _add(new_label.get(grown, NEG_INF), score + y[c])\n",
     'new': "            new_label[grown] = max(new_label.get(grown, NEG_INF), score + y[c])\n",
     'truth': "the probabilities of paths reaching the same prefix are not summed: n'(p) keeps only the largest, so "
              "the merged scores are too small"},
]
# ---------------------------------------------------------------- the cells
FRESH_THIRD += [
    {'file': 'mytorch/nn/rnn_cell.py', 'part': '1.1', 'line': 58,
     'what': "The recurrent bias bias_hh is left out of the pre-activation.",
     'old': "        a = x @ p[\"weight_ih\"].T + self._bias(\"bias_ih\") + h @ p[\"weight_hh\"].T + self._bias(\"bias_hh\")  # N,H\n",
     'new': "        a = x @ p[\"weight_ih\"].T + self._bias(\"bias_ih\") + h @ p[\"weight_hh\"].T  # N,H\n",
     'truth': "the pre-activation a lacks b_hh, so h' = tanh(a) is wrong whenever bias_hh is not zero"},
    {'file': 'mytorch/nn/rnn_cell.py', 'part': '1.2', 'line': 78,
     'what': "bias_ih's gradient is assigned (=) instead of accumulated (+=).",
     'old': "            g[\"bias_ih\"] += da.sum(axis=0)             # da/db = 1, summed over the batch\n",
     'new': "            g[\"bias_ih\"] = da.sum(axis=0)              # da/db = 1, summed over the batch\n",
     'truth': "each backward overwrites the bias_ih gradient, so after several steps it holds only the last step's "
              "share (and it replaces the grads array the layer shares)"},
    {'file': 'mytorch/nn/gru_cell.py', 'part': '2.1', 'line': 157,
     'what': "The candidate n gates the recurrent term with z instead of r.",
     'old': "        n = np.tanh(gx[:, 2 * H:] + r * g_n)\n",
     'new': "        n = np.tanh(gx[:, 2 * H:] + z * g_n)\n",
     'truth': "n uses the update gate z where the reset gate r belongs, so n and h' are wrong"},
    {'file': 'mytorch/nn/gru_cell.py', 'part': '2.2', 'line': 196,
     'what': "The direct path of dh is dh' ⊙ (1 − z) instead of dh' ⊙ z.",
     'old': "        dh = dA_h @ p[\"weight_hh\"] + dh_t * z                     # through the gates, and directly: dh'/dh = z\n",
     'new': "        dh = dA_h @ p[\"weight_hh\"] + dh_t * (1.0 - z)             # through the gates, and directly: dh'/dh = z\n",
     'truth': "h' = (1 − z) n + z h, so ∂h'/∂h directly is z; using 1 − z makes the state gradient dh wrong"},
    {'file': 'mytorch/nn/lstm_cell.py', 'part': '7.2', 'line': 153,
     'what': "The forget gate's gradient uses the incoming dc' instead of the total dc (which adds the path through h').",
     'old': "        df = dc * c                                               # dc'/df = c, the PREVIOUS cell state\n",
     'new': "        df = dc_t * c                                             # dc'/df = c, the PREVIOUS cell state\n",
     'truth': "df misses the gradient that reaches c' through h' = o ⊙ tanh(c'), so da_f and every gradient through the "
              "forget gate are wrong (di, dg and dc_prev use the full dc)"},
    {'file': 'mytorch/nn/gmu_cell.py', 'part': '4.2', 'line': 108,
     'what': "dc leaves out the gradient through the o gate's peephole (da_o ⊙ w_ch_o).",
     'old': "        dc = dh_t * (1.0 - m) + dc_t * o + da_m * p[\"weight_ch_m\"] + da_o * p[\"weight_ch_o\"]\n",
     'new': "        dc = dh_t * (1.0 - m) + dc_t * o + da_m * p[\"weight_ch_m\"]\n",
     'truth': "c also feeds o through the peephole w_ch_o, so dc lacks da_o ⊙ w_ch_o and the gradient of the old cell "
              "state is wrong"},
]

# No part takes points off for these today, so they are not in FRESH_THIRD:
# - prune="prefix", the default of prefix_beam_search / beam_search: 8.8 grades the course's BeamSearchDecoder,
#   which always prunes with prune="hypothesis", and no other part calls the prefix branch of _prune;
# - a cell backward that writes into its incoming gradient: 7.2 passes views of its input arrays, notices that
#   they changed (the case's `mutated`), but that costs no points.
UNGRADED_THIRD = [
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 87,
     'what': "A prefix's total is the max of its blank- and label-ending scores instead of their log-sum.",
     'old': "    totals = {p: _add(blank_end.get(p, NEG_INF), label_end.get(p, NEG_INF)) for p in {**blank_end, **label_end}}\n",
     'new': "    totals = {p: max(blank_end.get(p, NEG_INF), label_end.get(p, NEG_INF)) for p in {**blank_end, **label_end}}\n",
     'truth': "prefixes are ranked by their better hypothesis instead of b + n, so a prefix with two middling endings "
              "can be pruned before one with a single strong ending"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 87,
     'what': "The totals are built only over the blank-ending prefixes.",
     'old': "    totals = {p: _add(blank_end.get(p, NEG_INF), label_end.get(p, NEG_INF)) for p in {**blank_end, **label_end}}\n",
     'new': "    totals = {p: _add(blank_end.get(p, NEG_INF), label_end.get(p, NEG_INF)) for p in blank_end}\n",
     'truth': "a prefix that only has a label-ending hypothesis gets no total and is always pruned"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 89,
     'what': "Prefixes are kept when their total is > the cutoff instead of >=.",
     'old': "    kept = {p for p, s in totals.items() if s >= cutoff}                 # whole prefixes, ranked by b + n\n",
     'new': "    kept = {p for p, s in totals.items() if s > cutoff}                  # whole prefixes, ranked by b + n\n",
     'truth': "the beam_width-th best prefix (and its ties) is pruned, so only beam_width − 1 prefixes survive"},
    {'file': 'mytorch/nn/ctc_decode.py', 'part': '8.8', 'line': 90,
     'what': "The label-ending hypotheses are returned unfiltered.",
     'old': "    return ({p: s for p, s in blank_end.items() if p in kept}, {p: s for p, s in label_end.items() if p in kept})\n",
     'new': "    return ({p: s for p, s in blank_end.items() if p in kept}, label_end)\n",
     'truth': "only the blank-ending hypotheses are pruned, so every label-ending hypothesis survives and the beam grows "
              "with every step"},
    {'file': 'mytorch/nn/lstm_cell.py', 'part': '7.2', 'line': 151,
     'what': "The cell-state gradient is accumulated in place into the incoming dc_t (dc = dc_t; dc += …).",
     'old': "        dc = dc_t + dh_hat * o * F.tanh_grad(tanh_c)              # dh_hat/dc' = o ⊙ (1 - tanh²(c'))\n",
     'new': "        dc = dc_t; dc += dh_hat * o * F.tanh_grad(tanh_c)         # dh_hat/dc' = o ⊙ (1 - tanh²(c'))\n",
     'truth': "dc aliases the caller's dc' array, so backward overwrites its input gradient (the values it returns are "
              "right, but the caller's array is changed)"},
]


def apply(mistake, root):
    """Apply ``mistake`` to the copy of the repository (or submission) at ``root``; return the edited path."""
    path = os.path.join(root, mistake["file"])
    with open(path, encoding="utf-8") as f:
        text = f.read()
    check(mistake, text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(mistake["old"], mistake["new"]))
    return path


def check(mistake, text):
    """Assert that ``mistake`` fits ``text``, the solution file: one match, whole lines, same line count, and
    ``line`` the first line of the match."""
    old, new = mistake["old"], mistake["new"]
    assert text.count(old) == 1, f"{mistake['file']}:{mistake['line']}: 'old' occurs {text.count(old)} times"
    start = text.index(old)
    assert start == 0 or text[start - 1] == "\n", f"{mistake['file']}:{mistake['line']}: 'old' is not whole lines"
    assert old.endswith("\n") and new.endswith("\n"), f"{mistake['file']}:{mistake['line']}: no trailing newline"
    assert old.count("\n") == new.count("\n"), f"{mistake['file']}:{mistake['line']}: the line count changes"
    assert old != new
    first = text[:start].count("\n") + 1
    assert mistake["line"] == first, f"{mistake['file']}: 'line' is {mistake['line']}, 'old' starts at {first}"
    changed = [k for k, (a, b) in enumerate(zip(old.splitlines(), new.splitlines())) if a != b]
    assert changed and changed[0] == 0, f"{mistake['file']}:{mistake['line']}: the first line is not edited"
    after = text.replace(old, new)
    assert after.count("\n") == text.count("\n")


def _grade(index, mistake, workdir):
    """Grade a copy of mytorch with ``mistake`` applied: {part: (score, max)} of the parts that lost points."""
    sub = os.path.join(workdir, f"{index:02d}", "sub")
    shutil.copytree(os.path.join(ROOT, "mytorch"), os.path.join(sub, "mytorch"))
    apply(mistake, sub)
    out = os.path.join(workdir, f"{index:02d}", "results.json")
    subprocess.run([sys.executable, "-m", "autograder", "--submission", sub, "--json", out, "--jobs", "4"],
                   cwd=ROOT, capture_output=True, check=False)
    with open(out, encoding="utf-8") as f:
        tests = json.load(f)["tests"]
    return {t["name"].split()[0]: (t["score"], t["max_score"]) for t in tests if t["score"] < t["max_score"]}


def main(argv):
    for mistake in FRESH_THIRD + UNGRADED_THIRD:
        with open(os.path.join(ROOT, mistake["file"]), encoding="utf-8") as f:
            check(mistake, f.read())
    with tempfile.TemporaryDirectory(prefix="fresh3-") as tmp:        # every edit applies to a copy
        for k, mistake in enumerate(FRESH_THIRD + UNGRADED_THIRD):
            sub = os.path.join(tmp, f"{k:02d}")
            shutil.copytree(os.path.join(ROOT, "mytorch"), os.path.join(sub, "mytorch"))
            apply(mistake, sub)
    print(f"{len(FRESH_THIRD)} mistakes (and {len(UNGRADED_THIRD)} ungraded) apply cleanly")
    if "--grade" not in argv:
        return 0
    failures = 0
    with tempfile.TemporaryDirectory(prefix="fresh3-") as tmp, \
            concurrent.futures.ThreadPoolExecutor(max(1, (os.cpu_count() or 2) // 2)) as pool:
        listed = [(k, m, True) for k, m in enumerate(FRESH_THIRD)] + \
                 [(len(FRESH_THIRD) + k, m, False) for k, m in enumerate(UNGRADED_THIRD)]
        results = pool.map(lambda item: _grade(item[0], item[1], tmp), listed)
        for (k, mistake, graded), lost in zip(listed, results):
            first = next(iter(sorted(lost, key=lambda p: tuple(map(int, p.split("."))))), None)
            good = first == mistake["part"] if graded else not lost
            failures += not good
            print(f"{'ok ' if good else 'BAD'} {k:2d} {mistake['file']}:{mistake['line']} {mistake['part']} "
                  f"lost: {', '.join(f'{p} {s:g}/{m:g}' for p, (s, m) in sorted(lost.items())) or 'nothing'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

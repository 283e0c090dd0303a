"""Realistic mistakes in the sequence layer, CTC and CTC decoding, written as students write them by someone who
had not read the grader's catalogue of mistakes (autograder/diagnosis/mistakes.py): the diagnosis must find them
as it finds the catalogue's. Each: the file, the part that loses points, the line a good TA would point at (the
first it changes), what the student did, and the exact lines of the solution (``old``) with their replacement
(``new``, as many lines). tests/test_diagnosis.py grades each and prints how often the report names the line
and the quantity, per area."""

FRESH = [{'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 125,
  'what': "Puts the two directions' outputs side by side along axis 1 (the batch axis of a (T, N, H) array) "
          "instead of the last axis, so a bidirectional layer's output has 2N rows of width H.",
  'old': "            inp = np.concatenate(outputs, axis=2)                      # T,N,D·H_out: the next layer's "
         'input\n',
  'new': "            inp = np.concatenate(outputs, axis=1)                      # the two directions' h side by "
         'side\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 123,
  'what': 'Starts each direction from starts[layer] instead of starts[k], so the reverse cell of a bidirectional '
          "layer starts from the forward cell's initial state (and upper layers from a lower layer's).",
  'old': '                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[k], lengths, '
         'reverse=direction == 1)\n',
  'new': '                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[layer], lengths, '
         'reverse=direction == 1)\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 195,
  'what': 'Writes the reverse loop as range(T - 1, 0, -1), an off-by-one that never visits step 0, so Y[0] of the '
          'reverse direction is never filled.',
  'old': '        steps = reversed(range(T)) if reverse else range(T)\n',
  'new': '        steps = range(T - 1, 0, -1) if reverse else range(T)\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 197,
  'what': 'Reverses time twice in the reverse direction: the steps already run from T-1 down to 0, and the student '
          'also reads X[T - 1 - t], so the reverse cell reads the sequence forwards.',
  'old': '            new = cell.forward(X[t], state)\n',
  'new': '            new = cell.forward(X[T - 1 - t] if reverse else X[t], state)\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 192,
  'what': 'Builds the padding mask with <= instead of <, so every sequence runs one step past its length (t = '
          'lengths[n] counts as live).',
  'old': '            (np.arange(T)[:, None] < lengths[None, :])[:, :, None]     # T,N,1: True where t < '
         'lengths[n]\n',
  'new': '            (np.arange(T)[:, None] <= lengths[None, :])[:, :, None]    # T,N,1: True where t <= '
         'lengths[n]\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 200,
  'what': "Takes the output from the masked state (self._h(state)) instead of zeroing it, so past a sequence's end "
          'Y repeats its last h instead of being 0.',
  'old': '            Y[t] = np.where(live[t], self._h(new), 0.0)                # and its output is zero\n',
  'new': '            Y[t] = self._h(state)                                      # the output is the h of the new '
         'state\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 155,
  'what': 'Walks the layers in backward with range(self.num_layers - 1, 0, -1), an off-by-one that never '
          'backpropagates through layer 0.',
  'old': '        for layer in reversed(range(self.num_layers)):                 # top layer first: LIFO across '
         'layers too\n',
  'new': '        for layer in range(self.num_layers - 1, 0, -1):              # top layer first: LIFO across '
         'layers too\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 159,
  'what': "Gives every layer's backward its columns of the caller's dY instead of d_out, the gradient coming down "
          'from the layer above.',
  'old': '                dX_k, d_state0[k] = self._backward_direction(self.cells[k], d_out[:, :, direction * '
         'W:(direction + 1) * W],\n',
  'new': '                dX_k, d_state0[k] = self._backward_direction(self.cells[k], dY[:, :, direction * '
         'W:(direction + 1) * W],\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 159,
  'what': "Slices each direction's columns of d_out on axis 1 (the batch) instead of the last axis, so a "
          "bidirectional layer's directions get the wrong gradient rows.",
  'old': '                dX_k, d_state0[k] = self._backward_direction(self.cells[k], d_out[:, :, direction * '
         'W:(direction + 1) * W],\n',
  'new': '                dX_k, d_state0[k] = self._backward_direction(self.cells[k], d_out[:, direction * '
         'W:(direction + 1) * W],\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 161,
  'what': "Assigns instead of accumulating the directions' input gradients (d_in = dX_k), so only the reverse "
          "direction's gradient reaches the layer below.",
  'old': '                d_in = d_in + dX_k                                     # both directions read the same '
         'input\n',
  'new': '                d_in = dX_k                                            # both directions read the same '
         'input\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 218,
  'what': 'Always walks time from T-1 down to 0 in backward, forgetting that the reverse direction ran forward '
          'from T-1 and must be backpropagated from step 0 up.',
  'old': '        steps = range(T) if reverse else reversed(range(T))           # the opposite order of forward\n',
  'new': '        steps = reversed(range(T))                                    # backward: from the last step to '
         'the first\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 217,
  'what': 'Starts the carried state gradient at zeros instead of d_state_T, so the gradient of the final state is '
          'dropped.',
  'old': '        d_state = d_state_T\n',
  'new': '        d_state = self._as_state(tuple(np.zeros_like(p) for p in self._parts(d_state_T)))\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.4',
  'line': 220,
  'what': "Adds dY[t] to every part of the state gradient (also the GMU's c / TGRU's m / LSTM's c) instead of the "
          'h part only.',
  'old': '            with_output = (self._parts(d_state)[0] + dY[t],) + self._parts(d_state)[1:]\n',
  'new': '            with_output = tuple(d + dY[t] for d in self._parts(d_state))\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '6.1',
  'line': 223,
  'what': 'On padded steps zeroes the carried state gradient instead of passing the previous d_state by, so the '
          "gradient of a short sequence's final state never reaches its last live step.",
  'old': '            d_state = self._as_state(tuple(np.where(live[t], a, b)    # a padded step passes d_state by\n'
         '                                           for a, b in zip(self._parts(d_prev), '
         'self._parts(d_state))))\n',
  'new': '            d_state = self._as_state(tuple(np.where(live[t], a, 0.0)  # padded rows: no gradient at all\n'
         '                                           for a in self._parts(d_prev)))\n'},
 {'file': 'mytorch/nn/recurrent.py',
  'part': '7.3',
  'line': 122,
  'what': 'Numbers the cells direction-major (k = direction * num_layers + layer) instead of layer-major, so in a '
          'two-layer bidirectional stack layer 0 reverse and layer 1 forward swap cells.',
  'old': '                k = layer * self.num_directions + direction\n'
         '                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[k], lengths, '
         'reverse=direction == 1)\n',
  'new': '                k = direction * self.num_layers + layer\n'
         '                Y_k, finals[k] = self._run_direction(self.cells[k], inp, starts[k], lengths, '
         'reverse=direction == 1)\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.1',
  'line': 93,
  'what': 'Puts the skip flag on the blank between two labels (the state being skipped) instead of on the label '
          'the path skips into.',
  'old': '    skip[3::2] = target[1:] != target[:-1]                        # a label may skip the blank before it '
         'if it differs\n',
  'new': '    skip[2:-1:2] = target[1:] != target[:-1]                      # the blank between two different '
         'labels may be skipped\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.2',
  'line': 112,
  'what': 'Starts alpha with probability 1 (log 0) in the first two states, as beta ends, forgetting the emission '
          'of step 0.',
  'old': '    la[0, ..., :2] = ly[0, ..., :2]                               # start on the first blank or the '
         'first label\n',
  'new': '    la[0, ..., :2] = 0.0                                          # start on the first blank or the '
         'first label\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.2',
  'line': 112,
  'what': 'Lets a path start only in the first blank (alpha_0(1) left at -inf), forgetting that an alignment may '
          'begin directly with the first label.',
  'old': '    la[0, ..., :2] = ly[0, ..., :2]                               # start on the first blank or the '
         'first label\n',
  'new': '    la[0, ..., 0] = ly[0, ..., 0]                                 # every path starts with a blank\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.2',
  'line': 115,
  'what': "Off by one in time: adds the previous step's emission ly[t - 1] instead of ly[t] in the alpha "
          'recursion.',
  'old': '        la[t] = _lse(stay, move, jump) + ly[t]\n',
  'new': '        la[t] = _lse(stay, move, jump) + ly[t - 1]\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.3',
  'line': 127,
  'what': 'Writes the backward loop as range(T - 2, 0, -1), so beta at t = 0 is never computed (stays -inf).',
  'old': '    for t in range(T - 2, -1, -1):                                # ahead[s] = β[t+1, s] y[t+1, ext_s]\n',
  'new': '    for t in range(T - 2, 0, -1):                                 # ahead[s] = β[t+1, s] y[t+1, '
         'ext_s]\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.3',
  'line': 129,
  'what': 'Uses skip[s] instead of skip[s + 2] for the backward skip from s + 2 to s (the skip_from that is '
          'computed is not used).',
  'old': '        lb[t] = _lse(ahead, _shift(ahead, -1), np.where(skip_from, _shift(ahead, -2), NEG_INF))\n',
  'new': '        lb[t] = _lse(ahead, _shift(ahead, -1), np.where(skip, _shift(ahead, -2), NEG_INF))\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.3',
  'line': 128,
  'what': "Off by one in time in beta: multiplies by step t's emission ly[t] instead of step t+1's.",
  'old': '        ahead = lb[t + 1] + ly[t + 1]\n',
  'new': '        ahead = lb[t + 1] + ly[t]\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.4',
  'line': 138,
  'what': 'Normalises gamma by the largest alpha*beta at each step (the max, as in a stable softmax) instead of '
          'the log-sum over the states.',
  'old': '    norm = _lse_last(joint)[..., None]                            # log Σ_s α β  (= log P at every t)\n',
  'new': '    norm = joint.max(axis=-1, keepdims=True)                      # normalise each step\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.4',
  'line': 138,
  'what': "Normalises alpha*beta over time (axis 0, each state's column sums to 1) instead of over the states at "
          'each step.',
  'old': '    norm = _lse_last(joint)[..., None]                            # log Σ_s α β  (= log P at every t)\n',
  'new': '    norm = np.logaddexp.reduce(joint, axis=0)[None]               # log Σ_t α β: gamma sums to 1\n'},
 {'file': 'mytorch/nn/ctc_course.py',
  'part': '8.5',
  'line': 107,
  'what': 'Takes gamma as exp(log alpha + log beta) without normalising it by P (skips log_posterior).',
  'old': '            gamma = np.exp(core.log_posterior(core.log_alpha(ly, skip), core.log_beta(ly, skip, '
         'final)))\n',
  'new': '            gamma = np.exp(core.log_alpha(ly, skip) + core.log_beta(ly, skip, final))\n'},
 {'file': 'mytorch/nn/ctc_course.py',
  'part': '8.5',
  'line': 108,
  'what': "Forgets the log in the course's loss: sums gamma times the probability y[t, ext_s] instead of gamma "
          'times log y.',
  'old': '            total_loss[b] = -np.sum(gamma * np.where(gamma > 0, ly, 0.0))   # 0 · log 0 counts 0\n',
  'new': '            total_loss[b] = -np.sum(gamma * y[:, ext])                      # −Σ γ y[t, ext_s]\n'},
 {'file': 'mytorch/nn/ctc_course.py',
  'part': '8.6',
  'line': 122,
  'what': 'Writes dY[:, b] (every step) instead of dY[:len(y), b], ignoring that sequence b has only '
          'input_lengths[b] steps.',
  'old': '            dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1])       # summed over the s with '
         'ext_s = c\n',
  'new': '            dY[:, b] = -core.class_sums(ratio, ext, y.shape[1])             # summed over the s with '
         'ext_s = c\n'},
 {'file': 'mytorch/nn/ctc_course.py',
  'part': '8.6',
  'line': 122,
  'what': 'Forgets the minus sign of the gradient of −Σ γ log y: returns +Σ γ / y, the gradient of the '
          'log-likelihood rather than of the loss.',
  'old': '            dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1])       # summed over the s with '
         'ext_s = c\n',
  'new': '            dY[:len(y), b] = core.class_sums(ratio, ext, y.shape[1])        # summed over the s with '
         'ext_s = c\n'},
 {'file': 'mytorch/nn/ctc_course.py',
  'part': '8.6',
  'line': 121,
  'what': 'Forgets to divide by y: returns −Σ γ (the gradient with respect to log y) instead of −Σ γ / y (with '
          'respect to y).',
  'old': '                ratio = np.where(gamma > 0, gamma / y[:, ext], 0.0)         # γ[t, s] / y[t, ext_s]\n',
  'new': '                ratio = np.where(gamma > 0, gamma, 0.0)                     # γ[t, s]\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.9',
  'line': 228,
  'what': 'Sums alpha at the last step over every state instead of only the two final ones (last label and last '
          'blank).',
  'old': '    nll = -_lse_last(np.where(final, la[-1], NEG_INF))            # N   −log P: the paths that end in a '
         'final state\n',
  'new': '    nll = -_lse_last(la[-1])                                      # N   −log P: every path at the last '
         'step\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.9',
  'line': 230,
  'what': "Returns −Σ γ (the gradient for log y) and leaves out the exp(log_probs) term that PyTorch's gradient "
          'through log_softmax has.',
  'old': "    grad = np.exp(lp) - class_sums(gamma, ext, C + 1)[..., :C]    # PyTorch's: d/dz of log_softmax(z), "
         'see above\n',
  'new': '    grad = -class_sums(gamma, ext, C + 1)[..., :C]                # −Σ γ over the s with ext_s = c\n'},
 {'file': 'mytorch/nn/ctc.py',
  'part': '8.9',
  'line': 231,
  'what': 'Zeroes the gradient only at padded steps and forgets sequences with no alignment (nll = inf), which '
          'keep exp(log_probs).',
  'old': '    grad[waiting | np.isinf(nll)[None, :]] = 0.0                  # padded steps; no alignment: a '
         'constant +inf\n',
  'new': '    grad[waiting] = 0.0                                           # padded steps get no gradient\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.7',
  'line': 41,
  'what': 'Merges repeats with np.unique, which removes every duplicate class anywhere in the path (and sorts '
          'them) instead of only consecutive repeats.',
  'old': '    merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]\n',
  'new': '    merged = [int(c) for c in np.unique(path)]                    # remove the repeated classes\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.7',
  'line': 41,
  'what': 'Writes the repeat test as k > 0 and c != path[k - 1], so the first frame is always dropped.',
  'old': '    merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]\n',
  'new': '    merged = [c for k, c in enumerate(path) if k > 0 and c != path[k - 1]]\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.7',
  'line': 41,
  'what': 'Compares each class with path[k - 1] without handling k = 0, so the first frame is compared with the '
          "last (Python's path[-1]) and dropped when they are equal (a one-step path decodes to nothing).",
  'old': '    merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]\n',
  'new': '    merged = [c for k, c in enumerate(path) if c != path[k - 1]]\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 84,
  'what': 'Sorts the scores ascending (forgets reverse=True), so the cutoff is the beam_width-th worst score and '
          'nearly nothing is pruned.',
  'old': '        scores = sorted(list(blank_end.values()) + list(label_end.values()), reverse=True)\n',
  'new': '        scores = sorted(list(blank_end.values()) + list(label_end.values()))\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 85,
  'what': 'Takes the cutoff as scores[beam_width - 1] without capping it by the number of hypotheses, which fails '
          'when there are fewer hypotheses than the beam width.',
  'old': '        cutoff = scores[min(beam_width, len(scores)) - 1]             # the beam_width-th best, or the '
         'last\n',
  'new': '        cutoff = scores[beam_width - 1]                               # the beam_width-th best\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 84,
  'what': 'Prunes the blank-ending and label-ending hypotheses separately (beam_width of each) instead of ranking '
          'them together.',
  'old': '        scores = sorted(list(blank_end.values()) + list(label_end.values()), reverse=True)\n'
         '        cutoff = scores[min(beam_width, len(scores)) - 1]             # the beam_width-th best, or the '
         'last\n'
         '        return tuple({p: s for p, s in hypotheses.items() if s >= cutoff} for hypotheses in (blank_end, '
         'label_end))\n',
  'new': '        best = {id(h): sorted(h.values(), reverse=True) for h in (blank_end, label_end)}\n'
         '        cutoff = {k: s[min(beam_width, len(s)) - 1] if s else NEG_INF for k, s in best.items()}\n'
         '        return tuple({p: s for p, s in h.items() if s >= cutoff[id(h)]} for h in (blank_end, '
         'label_end))\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 86,
  'what': 'Prunes only the label-ending hypotheses and returns every blank-ending one unpruned.',
  'old': '        return tuple({p: s for p, s in hypotheses.items() if s >= cutoff} for hypotheses in (blank_end, '
         'label_end))\n',
  'new': '        return blank_end, {p: s for p, s in label_end.items() if s >= cutoff}\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 101,
  'what': 'Merges hypotheses that reach the same prefix with max (Viterbi) instead of adding their probabilities.',
  'old': '            new_blank[prefix] = _add(new_blank.get(prefix, NEG_INF), score + y[blank])\n'
         '    for prefix, score in blank_end.items():                       # "… ∅" + c is always a new label\n'
         '        for c in labels:\n'
         '            new_label[prefix + (c,)] = _add(new_label.get(prefix + (c,), NEG_INF), score + y[c])\n'
         '    for prefix, score in label_end.items():                       # "… a" + a merges into "… a"\n'
         '        for c in labels:\n'
         '            grown = prefix if c == prefix[-1] else prefix + (c,)\n'
         '            new_label[grown] = _add(new_label.get(grown, NEG_INF), score + y[c])\n',
  'new': '            new_blank[prefix] = max(new_blank.get(prefix, NEG_INF), score + y[blank])\n'
         '    for prefix, score in blank_end.items():                       # "… ∅" + c is always a new label\n'
         '        for c in labels:\n'
         '            new_label[prefix + (c,)] = max(new_label.get(prefix + (c,), NEG_INF), score + y[c])\n'
         '    for prefix, score in label_end.items():                       # "… a" + a merges into "… a"\n'
         '        for c in labels:\n'
         '            grown = prefix if c == prefix[-1] else prefix + (c,)\n'
         '            new_label[grown] = max(new_label.get(grown, NEG_INF), score + y[c])\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 107,
  'what': 'Extends a label-ending prefix by its own last label into a new prefix ("a" + "a" -> "aa") instead of '
          'merging it into the same prefix.',
  'old': '            grown = prefix if c == prefix[-1] else prefix + (c,)\n',
  'new': '            grown = prefix + (c,)\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 102,
  'what': 'Treats blank-ending hypotheses like label-ending ones when extending by a label, so "a ∅ a" merges into '
          '"a" instead of giving "aa".',
  'old': '    for prefix, score in blank_end.items():                       # "… ∅" + c is always a new label\n'
         '        for c in labels:\n'
         '            new_label[prefix + (c,)] = _add(new_label.get(prefix + (c,), NEG_INF), score + y[c])\n'
         '    for prefix, score in label_end.items():                       # "… a" + a merges into "… a"\n'
         '        for c in labels:\n'
         '            grown = prefix if c == prefix[-1] else prefix + (c,)\n'
         '            new_label[grown] = _add(new_label.get(grown, NEG_INF), score + y[c])\n',
  'new': '    for prefix, score in list(blank_end.items()) + list(label_end.items()):   # any hypothesis + c\n'
         '        for c in labels:\n'
         '            if prefix and c == prefix[-1]:                         # "a" + "a" stays "a"\n'
         '                grown = prefix\n'
         '            else:\n'
         '                grown = prefix + (c,)\n'
         '            new_label[grown] = _add(new_label.get(grown, NEG_INF), score + y[c])\n'},
 {'file': 'mytorch/nn/ctc_decode.py',
  'part': '8.8',
  'line': 99,
  'what': 'Extends only the blank-ending hypotheses by a blank, forgetting that a label-ending hypothesis followed '
          'by a blank also ends in a blank.',
  'old': '    for hypotheses in (blank_end, label_end):                     # any hypothesis + ∅ ends in a blank\n',
  'new': '    for hypotheses in (blank_end,):                               # hypothesis + ∅ ends in a blank\n'}]

"""Instructor only: a catalogue of realistic mistakes, written as edits to the solution source.

Each ``Mistake`` replaces ``old`` by ``new`` in one file of ``mytorch`` (``count`` occurrences; 0 = all) and
names the parts it must cost points on. Those marked ``variant`` are run by the generator so that the grader
recognises their outputs (``HINTED``); the test suite applies every one and checks that the grader takes
points off those parts, says the hint, points at the student's line when the mistake raises (``located``),
and keeps each part's report within ``budget`` lines. Not shipped in the student handout.
"""
import dataclasses
import os
import re

from autograder.diagnosis import compare, places


@dataclasses.dataclass(frozen=True)
class Mistake:
    id: str
    path: str                    # inside mytorch/
    old: str
    new: str
    parts: tuple                 # the parts that must lose points
    hint: str = ""               # text the grader's output must contain ('' for none expected)
    variant: bool = False        # the generator stores this mistake's outputs, and ``hint`` is the text to show
    count: int = 1               # occurrences to replace; 0 = all
    also: tuple = ()             # more texts the output must contain (a second hint, a location's words)
    located: str = ""            # 'line': the report points at a line of ``new`` or one of the two after it
                                 # (the statement that uses the mistaken value); 'function': at its def line
    budget: int = 28             # most lines the report of any one part may take: 20, and the diagnosis (8)
    timeout: float = 20.0        # seconds per part when the test grades it (an endless loop: short)
    arrays: tuple = ()           # the generator stores only outputs whose names start so ('' = every output)

    def apply(self, root):
        path = os.path.join(root, "mytorch", self.path)
        with open(path) as f:
            source = f.read()
        found = source.count(self.old)
        if found == 0 or (self.count and found < self.count):
            raise ValueError(f"mistake {self.id}: {self.old!r} occurs {found} times in {self.path}")
        with open(path, "w") as f:
            f.write(source.replace(self.old, self.new, self.count if self.count else -1))


# hints recognised from stored outputs of the mistake itself
SWAPPED_ACTIVATION = ("these values are what σ and tanh swapped in one place would give: check each gate's "
                      "activation against the equations (gates squash into (0, 1) with σ; candidates use tanh)")
Z_SWAPPED = ("these values are what z and 1 − z swapped would give: PyTorch's GRU keeps the OLD state with z, "
             "h' = (1 − z) ⊙ n + z ⊙ h")
U_SWAPPED = ("these values are what u and 1 − u swapped would give: TensorFlow's block cell keeps the OLD state "
             "with u, h' = u ⊙ h_prev + (1 − u) ⊙ c")
M_SWAPPED = ("these values are what m and 1 − m swapped would give: the GMU takes the NEW input with m, "
             "h' = (1 − m) ⊙ c + m ⊙ i")
NOT_ACCUMULATED = ("these gradients are those of the last backward step alone: when one cell runs several steps, "
                   "each backward must ADD to the parameter gradients (+=), not replace them (=)")
ERRATUM_W_U = ("this matches TensorFlow's documented formula for d_x/d_h_prev component 1, which has an erratum: "
               "the update-gate term uses w_u (columns H: of w_ru), not w_r again")
ERRATUM_D_H_U = ("this matches TensorFlow's documented d_h_prev = … + d_hr ∘ r + u, which has an erratum: the "
                 "direct path is d_h ∘ u")
LSTM_DF_NEW_C = ("these gradients are what df = dc' ⊙ c' would give, with the NEW cell state: the forget gate scales "
                 "the PREVIOUS one (c' = f ⊙ c_prev + i ⊙ g), so df = dc' ⊙ c_prev; do not overwrite c before "
                 "the cache keeps it")
LSTM_NO_TANH = ("these values are what h' = o ⊙ c' would give: the output squashes the cell state first, "
                "h' = o ⊙ tanh(c')")
LSTM_NO_C_PATH = ("these gradients are what dropping the path from h' to c' would give: c' reaches the loss "
                  "directly (dc') and through h' = o ⊙ tanh(c'), so dc' += dh' ⊙ o ⊙ (1 − tanh²(c'))")
GRU_GATE_ORDER = ("these values are what r and z read from each other's rows would give: torch.nn.GRUCell stacks "
                  "the rows of weight_ih and weight_hh (and of their biases) as r, z, n: reset, update, new")
LSTM_GATE_ORDER = ("these values are what the gates read in another order would give: torch.nn.LSTMCell stacks "
                   "them i, f, g, o (rows 0:H, H:2H, 2H:3H, 3H:4H of the weights), the same order in forward "
                   "and in the gradient")
IGNORES_LENGTHS = places.IGNORES_LENGTHS
IGNORES_LENGTHS_BACKWARD = places.IGNORES_LENGTHS_BACKWARD
X_AT_W = ("these values are what x @ W_ih would give instead of x @ W_ih.T (with I = H both run): weights are "
          "stored (out, in) as in PyTorch, so the input term is x @ W_ih.T")
H_AT_W = ("these values are what h @ W_hh would give instead of h @ W_hh.T: W_hh is square (H, H), so no "
          "error shows it; weights are stored (out, in), so the recurrent term is h @ W_hh.T")
DH_AT_WT = ("these values are what da @ W_hh.T would give instead of da @ W_hh: W_hh is square (H, H), so no "
            "error shows it; forward used h @ W_hh.T, so its gradient with respect to h is da @ W_hh")
FUTURE_DROPPED = places.FUTURE_DROPPED
TIME_NOT_REVERSED = places.TIME_NOT_REVERSED
ONLY_LAST_DY = places.ONLY_LAST_DY
DY_DROPPED = places.DY_DROPPED
# hints recognised by transforming the reference or from an error (compare.py); a substring suffices
TRANSPOSED = "the transpose of the expected array"
SIGN = "opposite sign"
GATE_ORDER = "gate blocks in the wrong order"
BATCH_MEAN = "divided by the batch size"
MATMUL = "the equation means an elementwise product, `*`"
FLOAT32 = "converts to float32"
SQUEEZED = "lost an axis of length 1"
TRANSPOSE_FIX = "Check the .T on"
STABLE = "use mytorch.functional.sigmoid"
NO_CACHE_FIELD = "forward's Cache has no field"
HUNG = "It was running"
ZEROS_SHARED = "binds a new array the layer never sees"
STATE_NOT_CARRIED = "step t must start from the state step t-1 returned"
STATE_FROM_START = ("these values are what starting every step from the initial state would give: " + STATE_NOT_CARRIED
                    + " (new = cell.forward(X[t], state), then state = new), not from state0 again")

SKIP_REPEATS = ("these values are what allowing a skip between two EQUAL labels would give: skip_connect[s] is 1 only "
                "where a label differs from the one two places before; between repeated labels the blank is compulsory, "
                "or 'a a' would collapse to 'a'")
BETA_WITH_Y = ("these values are what a beta that includes the current step's y would give: the course's β[t, s] "
               "leaves y[t] out (β[T−1, S−1] = β[T−1, S−2] = 1, and y[t+1] enters β[t]), so that α ⊙ β counts y[t] once")
TANH_OF_PRE_ACTIVATION = ("these values are what tanh's derivative taken at the pre-activation would give, 1 − a²: "
                          "tanh'(a) = 1 − tanh²(a), so from the output it is 1 − h'² (F.tanh_grad(cache.h_t))")
LOG_SUM_WITH_PLUS = ("these values are what adding log α's with + would give: that multiplies the probabilities; "
                     "in log space their sum is the log-sum-exp, _lse(stay, move, jump), and the product with y "
                     "is + ly[t]")
LOG_PRODUCT_WITH_TIMES = ("these values are what multiplying by ly[t] would give: in log space α·y is log α + log y, "
                          "so add ly[t]")
GAMMA_UNNORMALISED = ("these values are what α ⊙ β without the normalisation would give: γ[t, s] = α[t, s] β[t, s] "
                      "divided by Σ_s α[t, s] β[t, s] at each t")
UNDERFLOW = ("these values are what computing α and β in probability space would give on this long sequence: their "
             "products underflow to 0 (P is below 1e-308), so γ is lost. Keep log α and log β (log-sum-exp) and "
             "normalise γ in log space")
NO_MERGE = ("these scores are what overwriting instead of adding would give: when two hypotheses reach the same "
            "prefix (a symbol-ending path extended by its own last symbol, or a blank-ending one by a new symbol), "
            "ADD their probabilities")
BLANKS_FIRST = ("this is what dropping blanks BEFORE merging repeats would give: merge repeated symbols first, then "
                "drop blanks, so that 'a - a' decodes to 'aa' and 'a a' to 'a'")
PREFIX_TIES_DROPPED = ("these are the scores of a beam that keeps only prefixes strictly above the cutoff: with the "
                       "default prune='prefix', keep every prefix whose total b + n is at least (>=) the "
                       "beam_width-th best total")
TIES_DROPPED = ("these are the scores of a beam that keeps only hypotheses strictly above the cutoff: keep every "
                "hypothesis whose score is at least (>=) the beam_width-th best score")
TORCH_GRAD_WITHOUT_SOFTMAX = ("these gradients are −Σ γ alone, the gradient with respect to log y with the "
                              "log_softmax's part left out: PyTorch's ctc_loss returns y − Σ_{s: ext_s = c} γ[t, s] "
                              "for log_probs (exp(log_probs) minus the class sums of γ)")
DY_BY_BATCH = ("dY is the expected gradient divided by the batch size: the course's backward returns "
               "−Σ γ / y for each sequence, not divided by B, although its forward is a mean over the batch")

RNN, GRU, GB, GMU, TGRU, SEQ = "nn/rnn_cell.py", "nn/gru_cell.py", "nn/gru_block_cell.py", "nn/gmu_cell.py", \
    "nn/tgru_cell.py", "nn/recurrent.py"
LSTM = "nn/lstm_cell.py"
CTC, DEC, COURSE = "nn/ctc.py", "nn/ctc_decode.py", "nn/ctc_course.py"
ALL_SEQ = ("6.1", "6.2", "6.3", "6.4", "6.5", "7.3")
PADDED = ("6.1", "6.2", "7.3")                 # the parts with a padded batch

CATALOGUE = (
    # ---- RNN cell
    Mistake("rnn-sigmoid-for-tanh", RNN, "h_t = np.tanh(a) if", "h_t = F.sigmoid(a) if", ("1.1", "1.2", "6.1"),
            SWAPPED_ACTIVATION, variant=True),
    Mistake("rnn-missing-bias-hh", RNN, ' + h @ p["weight_hh"].T + self._bias("bias_hh")', ' + h @ p["weight_hh"].T',
            ("1.1", "1.2", "6.1")),
    Mistake("rnn-no-activation-derivative", RNN, "da = dh_t * act_grad", "da = dh_t", ("1.2", "6.1")),
    Mistake("rnn-dx-transposed", RNN, 'dx = da @ p["weight_ih"]', 'dx = (da @ p["weight_ih"]).T', ("1.2", "6.1"),
            TRANSPOSED),
    Mistake("rnn-dh-sign", RNN, 'dh = da @ p["weight_hh"]', 'dh = -(da @ p["weight_hh"])', ("1.2", "6.1"), SIGN),
    Mistake("rnn-tanh-derivative-of-the-pre-activation", RNN, "act_grad = F.tanh_grad(cache.h_t) if",
            'act_grad = 1 - (cache.x @ p["weight_ih"].T + self._bias("bias_ih") + cache.hidden @ p["weight_hh"].T'
            ' + self._bias("bias_hh")) ** 2 if', ("1.2", "6.1"), TANH_OF_PRE_ACTIVATION, variant=True),
    Mistake("rnn-relu-derivative-of-tanh", RNN, "F.relu_grad(cache.h_t)", "F.tanh_grad(cache.h_t)", ("1.2",)),
    Mistake("rnn-bias-grad-averaged", RNN, 'g["bias_ih"] += da.sum(axis=0)', 'g["bias_ih"] += da.mean(axis=0)',
            ("1.2", "6.1"), BATCH_MEAN),
    Mistake("rnn-grad-assigned-in-place", RNN, 'g["weight_ih"] += da.T @ cache.x',
            'g["weight_ih"][...] = da.T @ cache.x', ("1.2", "6.1"), NOT_ACCUMULATED),
    Mistake("rnn-dW-uses-new-state", RNN, 'g["weight_hh"] += da.T @ cache.hidden', 'g["weight_hh"] += da.T @ cache.h_t',
            ("1.2", "6.1")),
    # ---- GRU cell
    Mistake("gru-z-swapped", GRU, "h_t = n + z * (h - n)", "h_t = h + z * (n - h)", ("2.1", "6.2"),
            Z_SWAPPED, variant=True),
    Mistake("gru-gates-tanh", GRU, "rz = F.sigmoid(gx[:, :2 * H] + gh[:, :2 * H])",
            "rz = np.tanh(gx[:, :2 * H] + gh[:, :2 * H])", ("2.1", "2.2", "6.2"), SWAPPED_ACTIVATION, variant=True),
    Mistake("gru-n-sigmoid", GRU, "n = np.tanh(gx[:, 2 * H:] + r * g_n)", "n = F.sigmoid(gx[:, 2 * H:] + r * g_n)",
            ("2.1", "2.2", "6.2"), SWAPPED_ACTIVATION, variant=True),
    Mistake("gru-r-matmul-h", GRU, "n = np.tanh(gx[:, 2 * H:] + r * g_n)", "n = np.tanh(gx[:, 2 * H:] + r @ g_n)",
            ("2.1", "2.2", "6.2"), MATMUL),
    Mistake("gru-b-hn-outside-r", GRU, "n = np.tanh(gx[:, 2 * H:] + r * g_n)",
            'n = np.tanh(gx[:, 2 * H:] + r * (g_n - b_hh[2 * H:]) + b_hh[2 * H:])', ("2.1", "2.2", "6.2")),
    Mistake("gru-rz-swapped", GRU, "r, z = rz[:, :H], rz[:, H:]", "z, r = rz[:, :H], rz[:, H:]", ("2.1", "2.2", "6.2"),
            GRU_GATE_ORDER, variant=True),
    Mistake("gru-z-reads-r-chunk", GRU, "r, z = rz[:, :H], rz[:, H:]", "r, z = rz[:, :H], rz[:, :H]",
            ("2.1", "2.2", "6.2")),
    Mistake("gru-gate-grads-out-of-order", GRU, "dA_x = np.concatenate([da_r, da_z, da_n], axis=1)",
            "dA_x = np.concatenate([da_z, da_r, da_n], axis=1)", ("2.2", "6.2"), GATE_ORDER),
    Mistake("gru-no-direct-path", GRU, 'dh = dA_h @ p["weight_hh"] + dh_t * z', 'dh = dA_h @ p["weight_hh"]',
            ("2.2", "6.2")),
    Mistake("gru-dz-sign", GRU, "dz = dh_t * (h - n)", "dz = dh_t * (n - h)", ("2.2", "6.2")),
    Mistake("gru-dg-n-without-r", GRU, "dg_n = da_n * r", "dg_n = da_n", ("2.2", "6.2")),
    Mistake("gru-stale-cache", GRU, "x, h, r, z, n = cache.x, cache.hidden, cache.r, cache.z, cache.n",
            "x, h, r, z, n = cache.x, cache.hidden, self.r, self.z, self.n", ("2.2", "6.2")),
    Mistake("gru-float32", GRU, "h_t = n + z * (h - n)", "h_t = (n + z * (h - n)).astype(np.float32)",
            ("2.1", "6.2"), FLOAT32),
    Mistake("gru-bias-grad-averaged", GRU, 'g["bias_hh"] += dA_h.sum(axis=0)', 'g["bias_hh"] += dA_h.mean(axis=0)',
            ("2.2", "6.2"), BATCH_MEAN),
    # ---- TensorFlow GRU block cell
    Mistake("gb-reset-after-matmul", GB, "c_bar = np.concatenate([x, r * h_prev], axis=1) @ w_c + b_c",
            "c_bar = x @ w_c[:x.shape[1]] + r * (h_prev @ w_c[x.shape[1]:]) + b_c", ("3.1", "3.2", "6.3")),
    Mistake("gb-u-swapped", GB, "h = u * h_prev + (1.0 - u) * c", "h = (1.0 - u) * h_prev + u * c", ("3.1", "6.3"),
            U_SWAPPED, variant=True),
    Mistake("gb-r-tanh", GB, "r = F.sigmoid(r_u_bar[:, :H])", "r = np.tanh(r_u_bar[:, :H])", ("3.1", "3.2", "6.3"),
            SWAPPED_ACTIVATION, variant=True),
    Mistake("gb-reset-in-place", GB, "c_bar = np.concatenate([x, r * h_prev], axis=1) @ w_c + b_c",
            "h_prev *= r\n    c_bar = np.concatenate([x, h_prev], axis=1) @ w_c + b_c", ("3.1", "3.2", "6.3"),
            "in place"),
    Mistake("gb-erratum-w-r-for-w-u", GB, "d_x_1_h_1 = d_r_bar_u_bar @ w_ru.T",
            "d_x_1_h_1 = d_r_bar_u_bar @ np.concatenate([w_ru[:, :d_h.shape[1]]] * 2, axis=1).T", ("3.2", "6.3"),
            ERRATUM_W_U, variant=True),
    Mistake("gb-erratum-missing-d-h", GB, "d_hr * r + d_h * u", "d_hr * r + u", ("3.2", "6.3"), ERRATUM_D_H_U,
            variant=True),
    Mistake("gb-d-u-bar-sign", GB, "d_u_bar = d_h * (h_prev - c)", "d_u_bar = d_h * (c - h_prev)", ("3.2", "6.3")),
    Mistake("gb-b-ru-averaged", GB, 'g["b_ru"] += d_r_bar_u_bar.sum(axis=0)', 'g["b_ru"] += d_r_bar_u_bar.mean(axis=0)',
            ("3.2", "6.3"), BATCH_MEAN),
    Mistake("gb-w-c-grad-without-reset", GB, 'g["w_c"] += np.concatenate([x, r * h], axis=1).T @ d_c_bar',
            'g["w_c"] += np.concatenate([x, h], axis=1).T @ d_c_bar', ("3.2", "6.3")),
    # ---- GMU cell
    Mistake("gmu-forgot-peephole-m", GMU, 'm = F.sigmoid(a[:, H:2 * H] + p["weight_ch_m"] * c)',
            "m = F.sigmoid(a[:, H:2 * H])", ("4.1", "4.2", "6.4")),
    Mistake("gmu-peephole-on-h", GMU, 'o = F.sigmoid(a[:, 2 * H:] + p["weight_ch_o"] * c)',
            'o = F.sigmoid(a[:, 2 * H:] + p["weight_ch_o"] * h)', ("4.1", "4.2", "6.4")),
    Mistake("gmu-i-sigmoid", GMU, "i = np.tanh(a[:, :H])", "i = F.sigmoid(a[:, :H])", ("4.1", "4.2", "6.4"),
            SWAPPED_ACTIVATION, variant=True),
    Mistake("gmu-m-swapped", GMU, "h_t = (1.0 - m) * c + m * i", "h_t = m * c + (1.0 - m) * i", ("4.1", "6.4"),
            M_SWAPPED, variant=True),
    Mistake("gmu-dc-forgets-peepholes", GMU, ' + da_m * p["weight_ch_m"] + da_o * p["weight_ch_o"]', "",
            ("4.2", "6.4")),
    Mistake("gmu-di-forgets-c-path", GMU, "di = dh_t * m + dc_t * (1.0 - o)", "di = dh_t * m", ("4.2", "6.4")),
    Mistake("gmu-peephole-grad-averaged", GMU, 'g["weight_ch_m"] += (da_m * c).sum(axis=0)',
            'g["weight_ch_m"] += (da_m * c).mean(axis=0)', ("4.2", "6.4"), BATCH_MEAN),
    # ---- TGRU cell
    Mistake("tgru-memory-not-updated", TGRU, "m_t = x.copy()", "m_t = mem.copy()", ("5.1", "5.2", "6.5")),
    Mistake("tgru-z-sigmoid", TGRU, "z = a[:, :H]", "z = F.sigmoid(a[:, :H])", ("5.1", "5.2", "6.5")),
    Mistake("tgru-f-tanh", TGRU, "f = F.sigmoid(a[:, H:2 * H])", "f = np.tanh(a[:, H:2 * H])", ("5.1", "5.2", "6.5"),
            SWAPPED_ACTIVATION, variant=True),
    Mistake("tgru-z-reads-f-chunk", TGRU, "z = a[:, :H]", "z = a[:, H:2 * H]", ("5.1", "5.2", "6.5")),
    Mistake("tgru-dx-forgets-memory", TGRU, 'dx = dA @ p["weight_ih"] + dm_t', 'dx = dA @ p["weight_ih"]',
            ("5.2", "6.5")),
    Mistake("tgru-initial-state-grad-averaged", TGRU, 'g["hidden_state"] += dh.sum(axis=0)',
            'g["hidden_state"] += dh.mean(axis=0)', ("5.2",), BATCH_MEAN),     # layers fill the state themselves
    Mistake("tgru-dh-through-gates", TGRU, "dh = dh_t * f", "dh = dh_t * f + dz", ("5.2", "6.5")),
    # ---- LSTM cell
    Mistake("lstm-forget-gate-fed-new-c", LSTM, "c_t = f * c + i * g", "c = c_t = f * c + i * g", ("7.2", "7.3"),
            LSTM_DF_NEW_C, variant=True),
    Mistake("lstm-tanh-forgotten", LSTM, "h_hat = o * tanh_c", "h_hat = o * c_t", ("7.1", "7.2", "7.3"),
            LSTM_NO_TANH, variant=True),
    Mistake("lstm-no-c-path-from-h", LSTM, "dc = dc_t + dh_hat * o * F.tanh_grad(tanh_c)", "dc = dc_t",
            ("7.2", "7.3"), LSTM_NO_C_PATH, variant=True),
    Mistake("lstm-gates-out-of-order", LSTM, "g = np.tanh(a[:, 2 * H:3 * H])\n        o = F.sigmoid(a[:, 3 * H:])",
            "g = np.tanh(a[:, 3 * H:])\n        o = F.sigmoid(a[:, 2 * H:3 * H])", ("7.1", "7.2", "7.3"),
            LSTM_GATE_ORDER, variant=True),
    Mistake("lstm-gate-grads-out-of-order", LSTM, "dA = np.concatenate([da_i, da_f, da_g, da_o], axis=1)",
            "dA = np.concatenate([da_i, da_f, da_o, da_g], axis=1)", ("7.2", "7.3"), LSTM_GATE_ORDER, variant=True),
    Mistake("lstm-dg-sigmoid-derivative", LSTM, "da_g = dg * F.tanh_grad(g)", "da_g = dg * F.sigmoid_grad(g)",
            ("7.2", "7.3")),
    Mistake("lstm-bias-grad-averaged", LSTM, 'grad["bias_hh"] += dA.sum(axis=0)', 'grad["bias_hh"] += dA.mean(axis=0)',
            ("7.2", "7.3"), BATCH_MEAN),
    # ---- BPTT through the sequence layer: recognised from the values, located at the student's line (places.py)
    Mistake("seq-no-gradient-from-the-future", SEQ,
            "with_output = (self._parts(d_state)[0] + dY[t],) + self._parts(d_state)[1:]",
            "with_output = (0.0 * self._parts(d_state)[0] + dY[t],) + tuple(0.0 * d for d in self._parts(d_state)[1:])",
            ALL_SEQ, FUTURE_DROPPED, variant=True, located="line"),
    Mistake("seq-layers-bottom-up", SEQ, "for layer in reversed(range(self.num_layers)):  ",
            "for layer in range(self.num_layers):  # bottom-up  ", ALL_SEQ, compare.LAYER_ORDER, variant=True, located="line"),
    Mistake("seq-time-not-reversed", SEQ, "steps = range(T) if reverse else reversed(range(T))",
            "steps = reversed(range(T)) if reverse else range(T)  # as in forward", ALL_SEQ, TIME_NOT_REVERSED, variant=True,
            located="line"),
    Mistake("seq-only-last-dY", SEQ, "self._parts(d_state)[0] + dY[t],)",
            "self._parts(d_state)[0] + (dY[t] if t == T - 1 else 0.0 * dY[t]),)", ALL_SEQ, ONLY_LAST_DY,
            variant=True, located="line"),
    # the reverse direction's backward walks T-1 … 0 too: only a bidirectional case of T > 1 sees it
    Mistake("seq-reverse-direction-not-reversed", SEQ, "steps = range(T) if reverse else reversed(range(T))",
            "steps = reversed(range(T))", ("6.1", "6.2", "7.3")),
    Mistake("seq-state-not-carried", SEQ, "new = cell.forward(X[t], state)", "new = cell.forward(X[t], state0)",
            ALL_SEQ, STATE_FROM_START, variant=True),
    Mistake("seq-output-gradient-dropped", SEQ, "self._parts(d_state)[0] + dY[t],)", "self._parts(d_state)[0],)",
            ALL_SEQ, DY_DROPPED, variant=True, located="line"),
    Mistake("seq-ignores-lengths", SEQ, "state = self._as_state(tuple(np.where(live[t], a, b)",
            "state = new\n            _ = self._as_state(tuple(np.where(live[t], a, b)", PADDED,
            IGNORES_LENGTHS, variant=True, located="line"),
    Mistake("seq-backward-ignores-lengths", SEQ,
            "d_new = self._as_state(tuple(np.where(live[t], d, 0.0) for d in with_output))",
            "d_new = self._as_state(with_output)", PADDED, IGNORES_LENGTHS_BACKWARD, variant=True,
            located="line"),
    # ---- the orientation of the weights: an error when I != H, recognised from the values when I == H
    Mistake("rnn-x-at-weight-untransposed", RNN, 'a = x @ p["weight_ih"].T', 'a = x @ p["weight_ih"]',
            ("1.1", "1.2", "6.1"), X_AT_W, variant=True, also=(TRANSPOSE_FIX,), located="line"),
    Mistake("rnn-h-at-weight-hh-untransposed", RNN, 'h @ p["weight_hh"].T', 'h @ p["weight_hh"]',
            ("1.1", "1.2", "6.1"), H_AT_W, variant=True),
    Mistake("rnn-dh-through-transposed-weight", RNN, 'dh = da @ p["weight_hh"]', 'dh = da @ p["weight_hh"].T',
            ("1.2", "6.1"), DH_AT_WT, variant=True),
    Mistake("gru-h-at-weight-untransposed", GRU, 'gh = h @ p["weight_hh"].T', 'gh = h @ p["weight_hh"]',
            ("2.1", "2.2", "6.2"), TRANSPOSE_FIX, located="line"),
    Mistake("rnn-dh-transposed", RNN, 'dh = da @ p["weight_hh"]', 'dh = (da @ p["weight_hh"]).T', ("1.2", "6.1"),
            "returned dh_prev of shape (4, 3), expected (3, 4)", also=(compare.TRANSPOSED_RETURN,),
            located="function"),
    # ---- shapes: np.squeeze drops the batch axis of N = 1 and of unbatched input
    Mistake("rnn-dx-squeezed", RNN, 'dx = da @ p["weight_ih"]', 'dx = np.squeeze(da @ p["weight_ih"])', ("1.2",),
            SQUEEZED, also=("dx: shape (4,), expected (1, 4)", "got numpy.float64")),
    # (forward's alone: backward's math, and the layer's, are right, and broadcasting hides the lost axis there)
    Mistake("rnn-h-squeezed", RNN, "h_t = np.tanh(a) if", "h_t = np.squeeze(np.tanh(a)) if", ("1.1",),
            SQUEEZED, also=("h_t: shape (3,), expected (1, 3)",)),
    # ---- a tanh written with exp: NaN (inf / inf) on large inputs, and np.tanh named
    Mistake("rnn-naive-tanh", RNN, "h_t = np.tanh(a) if",
            "h_t = (np.exp(a) - np.exp(-a)) / (np.exp(a) + np.exp(-a)) if", ("1.1", "1.2"),
            "use np.tanh, which never overflows", located="line"),
    # ---- a naive sigmoid: right values, and an overflow warning on large inputs
    Mistake("gru-naive-sigmoid", GRU, "rz = F.sigmoid(gx[:, :2 * H] + gh[:, :2 * H])",
            "rz = 1 / (1 + np.exp(-(gx[:, :2 * H] + gh[:, :2 * H])))", ("2.1", "2.2"), STABLE, located="line"),
    Mistake("gmu-naive-sigmoid", GMU, 'o = F.sigmoid(a[:, 2 * H:] + p["weight_ch_o"] * c)',
            'o = 1.0 / (1.0 + np.exp(-a[:, 2 * H:] - p["weight_ch_o"] * c))', ("4.1", "4.2"), STABLE,
            located="line"),
    Mistake("gb-naive-sigmoid", GB, "u = F.sigmoid(r_u_bar[:, H:])", "u = 1 / (1 + np.exp(-r_u_bar[:, H:]))",
            ("3.1", "3.2"), STABLE, located="line"),
    Mistake("tgru-naive-sigmoid", TGRU, "f = F.sigmoid(a[:, H:2 * H])", "f = 1 / (1 + np.exp(-a[:, H:2 * H]))",
            ("5.1", "5.2"), STABLE, located="line"),
    # ---- a field missing from the Cache: located at the student's line, named
    Mistake("gru-cache-without-n", GRU, "r=r, z=z, n=n, g_n=g_n", "r=r, z=z, g_n=g_n", ("2.1", "2.2", "6.2"),
            NO_CACHE_FIELD + " n", also=("raised inside the provided _finish",), located="line"),
    Mistake("gru-cache-without-g_n", GRU, "r=r, z=z, n=n, g_n=g_n", "r=r, z=z, n=n", ("2.2", "6.2"),
            NO_CACHE_FIELD + " g_n", also=("in backward: da_r = da_n * cache.g_n",)),
    # ---- an endless loop: where it was
    Mistake("rnn-endless-loop", RNN, '        dx = da @ p["weight_ih"]',
            '        step = 0\n        while step < 1:\n            dx = da @ p["weight_ih"]', ("1.2",), HUNG,
            located="line", timeout=3.0),
    # … and where a loop over time that never ends calls the cell: the loop, not the cell it was caught in
    Mistake("seq-endless-loop", SEQ,
            "        steps = reversed(range(T)) if reverse else range(T)\n        for t in steps:\n",
            "        steps = list(reversed(range(T)) if reverse else range(T))\n        i = 0\n"
            "        while i < T:\n            t = steps[i]\n", ("6.1",), HUNG + " mytorch/nn/recurrent.py:",
            also=("in _run_direction when it was stopped",), timeout=3.0),
)
CATALOGUE += (
    # ---- CTC (section 8)
    Mistake("ctc-skip-between-repeats", CTC, "skip[3::2] = target[1:] != target[:-1]", "skip[3::2] = True",
            ("8.1", "8.5", "8.6"), SKIP_REPEATS, variant=True),
    Mistake("ctc-alpha-without-skip", CTC, "la[t] = _lse(stay, move, jump) + ly[t]", "la[t] = _lse(stay, move) + ly[t]",
            ("8.2", "8.5", "8.6")),
    Mistake("ctc-alpha-log-sum-with-plus", CTC, "la[t] = _lse(stay, move, jump) + ly[t]",
            "la[t] = stay + move + jump + ly[t]", ("8.2", "8.5", "8.6"), LOG_SUM_WITH_PLUS, variant=True),
    Mistake("ctc-alpha-log-product-with-times", CTC, "la[t] = _lse(stay, move, jump) + ly[t]",
            "la[t] = _lse(stay, move, jump) * ly[t]", ("8.2", "8.5", "8.6"), LOG_PRODUCT_WITH_TIMES, variant=True),
    Mistake("ctc-alpha-starts-on-blank-only", CTC, "la[0, ..., :2] = ly[0, ..., :2]", "la[0, ..., :1] = ly[0, ..., :1]",
            ("8.2", "8.5", "8.6")),
    Mistake("ctc-beta-includes-current-y", CTC,        # β'[t] = y[t] β[t]: started at y[T−1], y[t] multiplied in
            "    lb[T - 1] = np.where(final, 0.0, NEG_INF)                     "
            "# end on the last label or the last blank: β = 1\n"
            "    for t in range(T - 2, -1, -1):                                # ahead[s] = β[t+1, s] y[t+1, ext_s]\n"
            "        ahead = lb[t + 1] + ly[t + 1]\n"
            "        lb[t] = _lse(",
            "    lb[T - 1] = np.where(final, ly[T - 1], NEG_INF)\n"
            "    for t in range(T - 2, -1, -1):\n"
            "        ahead = lb[t + 1]\n"
            "        lb[t] = ly[t] + _lse(", ("8.3", "8.5", "8.6"), BETA_WITH_Y, variant=True),
    Mistake("ctc-gamma-not-normalised", CTC, "log_gamma = joint - np.where(np.isneginf(norm), 0.0, norm)",
            "log_gamma = joint", ("8.4", "8.5", "8.6"), GAMMA_UNNORMALISED, variant=True),
    Mistake("ctc-probability-space-underflow", COURSE,
            "gamma = np.exp(core.log_posterior(core.log_alpha(ly, skip), core.log_beta(ly, skip, final)))",
            "gamma = self.ctc.get_posterior_probs(self.ctc.get_forward_probs(y, ext, skip), "
            "self.ctc.get_backward_probs(y, ext, skip))", ("8.5", "8.6"), UNDERFLOW, variant=True),
    Mistake("ctc-loss-sign", COURSE, "total_loss[b] = -np.sum(", "total_loss[b] = np.sum(", ("8.5",), SIGN),
    Mistake("ctc-backward-divided-by-batch", COURSE, "dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1])",
            "dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1]) / len(self.gammas)", ("8.6",), DY_BY_BATCH,
            variant=True),
    Mistake("ctc-torch-gradient-without-softmax", CTC, "grad = np.exp(lp) - class_sums(gamma, ext, C + 1)[..., :C]",
            "grad = -class_sums(gamma, ext, C + 1)[..., :C]", ("8.9",), TORCH_GRAD_WITHOUT_SOFTMAX, variant=True),
    Mistake("ctc-torch-nll-from-last-blank", CTC, "nll = -_lse_last(np.where(final, la[-1], NEG_INF))",
            "nll = -la[-1][..., 0]", ("8.9",)),
    Mistake("ctc-greedy-drops-blanks-first", DEC, "merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]\n"
            "    return tuple(int(c) for c in merged if c != blank)",
            "kept = [c for c in path if c != blank]\n"
            "    return tuple(int(c) for k, c in enumerate(kept) if k == 0 or c != kept[k - 1])", ("8.7",), BLANKS_FIRST,
            variant=True),
    Mistake("ctc-beam-not-merging", DEC, "new_label[grown] = _add(new_label.get(grown, NEG_INF), score + y[c])",
            "new_label[grown] = score + y[c]", ("8.8",), NO_MERGE, variant=True,
            arrays=("log_merged_path_scores/",)),
    Mistake("ctc-beam-drops-ties", DEC, "if s >= cutoff", "if s > cutoff", ("8.8",), TIES_DROPPED, variant=True,
            arrays=("log_merged_path_scores/",)),
    Mistake("ctc-beam-prefix-drops-ties", DEC, "kept = {p for p, s in totals.items() if s >= cutoff}",
            "kept = {p for p, s in totals.items() if s > cutoff}", ("8.8",), PREFIX_TIES_DROPPED, variant=True,
            arrays=("log_merged_path_scores/",)),
)


def _assigned(path, source, parameter, parts):
    """``grads[parameter] = …`` where ``+=`` was meant, on the first line that accumulates it."""
    line = re.search(rf'^ *(?:g|grad)\["{parameter}"\] \+= .*$', source, re.M).group(0)
    return Mistake(f"{path.split('/')[-1][:-3].replace('_cell', '')}-{parameter}-assigned", path, line,
                   line.replace(" += ", " = ", 1), parts, NOT_ACCUMULATED, also=(ZEROS_SHARED,))


def _assigned_everywhere():
    """`=` for `+=`, for every parameter of every cell: the cell's multi-step case shows the last step's
    gradient alone, the sequence layer's the zeros of an array it no longer shares."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))      # the checkout
    found = []
    for path, cell, layer in ((RNN, "1.2", "6.1"), (GRU, "2.2", "6.2"), (GB, "3.2", "6.3"), (GMU, "4.2", "6.4"),
                              (TGRU, "5.2", "6.5"), (LSTM, "7.2", "7.3")):
        with open(os.path.join(here, "mytorch", path)) as f:
            source = f.read()
        for parameter in dict.fromkeys(re.findall(r'^ *(?:g|grad)\["(\w+)"\] \+= ', source, re.M)):
            if parameter in ("hidden_state", "memory"):    # added once per sequence: `=` is right there
                continue
            found.append(_assigned(path, source, parameter, (cell, layer)))
    return tuple(found)


CATALOGUE += _assigned_everywhere()
HINTED = tuple(m for m in CATALOGUE if m.variant)
assert len({m.id for m in CATALOGUE}) == len(CATALOGUE)

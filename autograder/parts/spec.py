"""What is graded: the parts (numbered like the handout), their points, and their cases.

A case is a config (JSON: which cell, sizes, flags, how many steps) plus input arrays (x, states, upstream
gradients, parameters). Cases are drawn from a seed with NumPy alone: the grading process builds them
without importing any ``mytorch``, and ``--fresh-seed`` draws new ones.

Size letters: N batch (None: unbatched), T steps, I input_size, H hidden_size, L layers.
"""
import dataclasses

import numpy as np
import numpy.random  # noqa: F401  (now: NumPy imports it on first use, and threads making cases at once race it)

# cell name -> (state part names, what forward exposes and the grader checks)
CELLS = {
    "RNNCell": (("h",), ()),
    "GRUCell": (("h",), ("r", "z", "n")),
    "GRUBlockCell": (("h",), ("r", "u", "c")),
    "GMUCell": (("h", "c"), ("i", "m", "o")),
    "TGRUCell": (("h", "m"), ("z", "f", "o")),
    "LSTMCell": (("h", "c"), ("i", "f", "g", "o")),
}
LAYERS = {"RNNCell": "RNN", "GRUCell": "GRU", "GRUBlockCell": "GRUBlock", "GMUCell": "GMU", "TGRUCell": "TGRU",
          "LSTMCell": "LSTM"}
# a layer's states: an array (L·D, N, H) for one-state cells, a list of L·D tuples for two-state cells, except
# these, which give a tuple of arrays (L·D, N, ·) as torch.nn.LSTM does
STATE_FORMS = {"LSTMCell": "tuple"}


@dataclasses.dataclass(frozen=True)
class Part:
    number: str
    name: str
    points: int
    kind: str                    # forward | backward | sequence
    cell: str
    shapes: tuple                # per case: (N, I, H, flags, steps[, layers, batch_first][, options])
                                 # options: a dict (see make_case), or an interface name for cells

    @property
    def id(self):
        return self.number


def _cell_cases(*extra):
    """The shapes every cell part covers: unbatched, N=1, N>1 with I != H, and I == H."""
    return ((None, 3, 5, {}, 1), (1, 4, 3, {}, 1), (4, 3, 5, {}, 1), (2, 4, 4, {}, 1)) + extra


LIFO = (3, 3, 4, {}, 3)          # three forwards then three backwards on one cell object
# inputs of magnitude ~5000: gate pre-activations reach far below -709, where a naive 1 / (1 + exp(-a))
# overflows (it still returns the right value, with a RuntimeWarning the grader counts)
LARGE = (4, 3, 4, {}, 1, {"scale": 5000.0})


def _sequence_cases(*extra):
    """Every sequence part: two layers with I != H; two layers with I == H (a mistake that walks the layers
    in the wrong order gives wrong values instead of an error); unbatched without an initial state."""
    return ((2, 3, 4, {}, 5, 2, False), (2, 4, 4, {}, 3, 2, False)) + extra + \
        ((None, 3, 4, {}, 4, 1, False, {"state0": False}),)

# ---- section 8, CTC (CMU 11-785's course interface). Shapes: (task, …) read by make_ctc_case below.
# The lattice cases give the extended target literally, so alpha and beta are graded on their own.
LATTICES = (
    (7, 4, (0, 1, 0, 2, 0, 2, 0, 3, 0), (0, 0, 0, 1, 0, 0, 0, 1, 0)),       # target 1 2 2 3: no skip between the 2s
    (1, 3, (0, 2, 0), (0, 0, 0)),                                            # T = 1
    (6, 5, (4, 1, 4, 3, 4), (0, 0, 0, 1, 0)),                                # blank 4
    (2, 3, (0, 1, 0, 1, 0), (0, 0, 0, 0, 0)),                                # 1 1 needs 3 steps: no alignment
    (10, 3, (0, 1, 0, 2, 0, 1, 0, 2, 0), (0, 0, 0, 1, 0, 1, 0, 1, 0)),
)
LOSSES = ((8, 3, 5, (8, 7, 5), (3, 4, 1)), (1, 1, 3, (1,), (1,)), (12, 2, 4, (12, 9), (5, 2)),
          (600, 1, 10, (600,), (30,)))                                      # long: α β underflow in probability space
CTC_PARTS = (
    Part("8.1", "CTC: extend the target with blanks", 2, "ctc", "CTC",
         (("extend", 0, 4), ("extend", 0, 1), ("extend", 3, 5), ("extend", 0, 7))),
    Part("8.2", "CTC: forward probabilities (alpha)", 3, "ctc", "CTC", tuple(("alpha",) + c for c in LATTICES)),
    Part("8.3", "CTC: backward probabilities (beta)", 3, "ctc", "CTC", tuple(("beta",) + c for c in LATTICES)),
    Part("8.4", "CTC: posteriors (gamma)", 2, "ctc", "CTC", (("gamma", 5, 9, False), ("gamma", 1, 3, False),
                                                              ("gamma", 6, 7, True))),
    Part("8.5", "CTC loss forward", 2, "ctc", "CTCLoss", tuple(("loss",) + c for c in LOSSES)),
    Part("8.6", "CTC loss backward", 3, "ctc", "CTCLoss", tuple(("loss_backward",) + c for c in LOSSES)),
    Part("8.7", "CTC greedy search", 3, "ctc", "GreedySearchDecoder",
         (("greedy", 10, 3, (1, 1, 0, 1, 2, 0, 0, 2, 3, 3)), ("greedy", 15, 3, None), ("greedy", 1, 2, None),
          ("greedy", 12, 5, (0, 5, 5, 0, 5, 1, 1, 2, 0, 0, 4, 4)))),
    # both pruning rules: prefix_beam_search's default (whole prefixes ranked by b + n) first, then the course's
    Part("8.8", "CTC beam search", 5, "ctc", "BeamSearchDecoder",
         (("beam", 10, 3, 2, False, "prefix"), ("beam", 20, 4, 3, False, "prefix"), ("beam", 6, 2, 1, False, "prefix"),
          ("beam", 4, 2, 1, True, "prefix"),
          ("beam", 10, 3, 2, False, "hypothesis"), ("beam", 20, 4, 3, False, "hypothesis"),
          ("beam", 20, 5, 3, False, "hypothesis"), ("beam", 6, 2, 1, False, "hypothesis"),
          ("beam", 4, 2, 1, True, "hypothesis"), ("beam", 5, 3, 50, False, "hypothesis"))),
    # what notebook 09 trains with: PyTorch's semantics (reductions, zero_infinity) and gradient for log_probs
    Part("8.9", "CTC loss and gradient (PyTorch)", 2, "ctc", "CTCLoss",
         (("torch_loss", 8, 3, 5, (8, 7, 5), (3, 4, 1), "mean", False),
          ("torch_loss", 12, 2, 4, (12, 9), (5, 2), "sum", False),
          ("torch_loss", 6, 2, 3, (6, 3), (2, 3), "none", True),           # sequence 2 has no alignment
          ("torch_loss", 5, None, 4, (5,), (2,), "mean", False))),         # unbatched (T, C)
)

PARTS = (
    Part("1.1", "RNN cell forward", 4, "forward", "RNNCell",
         _cell_cases((3, 2, 4, {"nonlinearity": "relu"}, 1), LARGE)),
    Part("1.2", "RNN cell backward", 5, "backward", "RNNCell",
         _cell_cases((3, 2, 4, {"nonlinearity": "relu"}, 1), LIFO, LARGE)),
    Part("2.1", "GRU cell forward", 5, "forward", "GRUCell",
         ((None, 5, 2, {}, 1, "course"),) + _cell_cases(LARGE)),
    Part("2.2", "GRU cell backward", 7, "backward", "GRUCell",
         ((None, 5, 2, {}, 1, "course"),) + _cell_cases(LIFO, LARGE)),
    Part("3.1", "GRU block cell forward", 3, "forward", "GRUBlockCell", _cell_cases(LARGE)),
    Part("3.2", "GRU block cell backward", 5, "backward", "GRUBlockCell", _cell_cases(LIFO, LARGE)),
    Part("4.1", "GMU cell forward", 3, "forward", "GMUCell", _cell_cases(LARGE)),
    Part("4.2", "GMU cell backward", 5, "backward", "GMUCell", _cell_cases(LIFO, LARGE)),
    Part("5.1", "TGRU cell forward", 3, "forward", "TGRUCell",
         _cell_cases((2, 3, 4, {"train_state": True, "train_memory": True}, 1), LARGE)),
    Part("5.2", "TGRU cell backward", 5, "backward", "TGRUCell",
         _cell_cases((2, 3, 4, {"train_state": True, "train_memory": True}, 1),
                     (2, 3, 4, {"train_state": True, "train_memory": True}, 3), LARGE)),
    # a bidirectional layer of T > 1 in each of the first two: the reverse direction's order is graded there too;
    # and a padded batch in each (last, so the other cases stay as drawn): section 6 grades the masking of padded
    # steps itself, forward and backward, whether or not the course has section 7
    Part("6.1", "BPTT: RNN sequence layer", 3, "sequence", "RNNCell",
         _sequence_cases((2, 3, 4, {}, 4, 1, False, {"bidirectional": True})) +
         ((3, 3, 4, {}, 5, 2, False, {"lengths": [5, 2, 4]}),)),
    Part("6.2", "BPTT: GRU sequence layer", 3, "sequence", "GRUCell",
         _sequence_cases((3, 4, 2, {}, 1, 1, True), (2, 3, 4, {}, 4, 1, False, {"bidirectional": True})) +
         ((3, 3, 4, {}, 4, 1, True, {"bidirectional": True, "lengths": [4, 1, 3]}),)),
    Part("6.3", "BPTT: GRU block sequence layer", 3, "sequence", "GRUBlockCell", _sequence_cases()),
    Part("6.4", "BPTT: GMU sequence layer", 3, "sequence", "GMUCell", _sequence_cases((1, 4, 3, {}, 3, 2, True))),
    Part("6.5", "BPTT: TGRU sequence layer", 3, "sequence", "TGRUCell",
         _sequence_cases((2, 3, 4, {"train_state": True, "train_memory": True}, 4, 2, False))),
    Part("7.1", "LSTM cell forward", 4, "forward", "LSTMCell", _cell_cases((3, 4, 5, {"proj_size": 2}, 1), LARGE)),
    Part("7.2", "LSTM cell backward", 6, "backward", "LSTMCell",
         _cell_cases(LIFO, (2, 3, 4, {"proj_size": 3}, 3), LARGE)),
    Part("7.3", "Bidirectional LSTM, padded batch", 5, "sequence", "LSTMCell",
         ((3, 3, 4, {}, 5, 2, False, {"bidirectional": True, "lengths": [5, 2, 4]}),
          (2, 4, 3, {"proj_size": 2}, 4, 1, True, {"bidirectional": True, "lengths": [1, 4]}),
          (None, 3, 2, {}, 4, 1, False, {"bidirectional": True, "lengths": [3]}))),
) + CTC_PARTS
PARTS_BY_NUMBER = {p.number: p for p in PARTS}
WAITS_ON_A_CELL = "not implemented yet: the layer runs your "     # a sequence part stopped at its cell's TODO


def cell_part_of_todo(part, where):
    """The cell's part (``where``: 'mytorch/nn/gmu_cell.py:46 in forward') a sequence part stopped at a TODO of,
    since the layer runs the student's cell; None for a TODO of the layer's own file or of another part."""
    if part.kind != "sequence" or "nn/recurrent.py" in where:
        return None
    kind = "backward" if where.endswith(" in backward") else "forward"
    return next((p for p in PARTS if p.cell == part.cell and p.kind == kind), None)


SECTIONS = {"1": "RNN cell", "2": "GRU cell", "3": "GRU block cell", "4": "GMU cell", "5": "TGRU cell",
            "6": "BPTT through the sequence layer", "7": "LSTM cell, bidirectional and variable-length layers",
            "8": "CTC: loss and decoding"}
assert sum(p.points for p in PARTS) == 100
CELL_SECTIONS = {"RNNCell": "1", "GRUCell": "2", "GRUBlockCell": "3", "GMUCell": "4", "TGRUCell": "5", "LSTMCell": "7"}


def code_needed(part):
    """{section: what of it} whose code ``part`` runs: its cell's, and for a sequence part the BPTT of section 6."""
    if part.kind == "ctc":
        return {"8": "the CTC code"}
    needed = {CELL_SECTIONS[part.cell]: part.cell}
    if part.kind == "sequence":
        needed["6"] = f"{LAYERS[part.cell]}'s BPTT (Recurrent)"
    return needed


def param_shapes(cell, I, H, flags):
    """The parameters of ``cell`` with their shapes (the reference systems' layouts: PyTorch, TensorFlow, Lux)."""
    if cell == "RNNCell":
        shapes = {"weight_ih": (H, I), "weight_hh": (H, H), "bias_ih": (H,), "bias_hh": (H,)}
        return shapes if flags.get("bias", True) else {k: v for k, v in shapes.items() if k.startswith("weight")}
    if cell == "GRUCell":
        return {"weight_ih": (3 * H, I), "weight_hh": (3 * H, H), "bias_ih": (3 * H,), "bias_hh": (3 * H,)}
    if cell == "GRUBlockCell":
        return {"w_ru": (I + H, 2 * H), "w_c": (I + H, H), "b_ru": (2 * H,), "b_c": (H,)}
    if cell == "GMUCell":
        return {"weight_ih": (3 * H, I), "weight_hh": (3 * H, H), "weight_ch_m": (H,), "weight_ch_o": (H,),
                "bias_ih": (3 * H,), "bias_hh": (3 * H,)}
    if cell == "LSTMCell":
        P = flags.get("proj_size", 0)
        shapes = {"weight_ih": (4 * H, I), "weight_hh": (4 * H, P or H), "bias_ih": (4 * H,), "bias_hh": (4 * H,)}
        return dict(shapes, weight_hr=(P, H)) if P else shapes
    if cell == "TGRUCell":
        shapes = {"weight_ih": (3 * H, I), "weight_hh": (3 * H, I), "bias_ih": (3 * H,), "bias_hh": (3 * H,)}
        if flags.get("train_state"):
            shapes["hidden_state"] = (H,)
        if flags.get("train_memory"):
            shapes["memory"] = (I,)
        return shapes
    raise KeyError(cell)


def state_widths(cell, I, H, flags=None):
    if cell == "LSTMCell":
        return ((flags or {}).get("proj_size") or H, H)
    return {"GMUCell": (H, H), "TGRUCell": (H, I)}.get(cell, (H,))


def _batch(n, *shape):
    return shape if n is None else (n,) + shape


def _options(shape, at):
    """A case's options: a dict at position ``at`` of its shape tuple (or an interface name, for cells)."""
    extra = shape[at] if len(shape) > at else {}
    return {"interface": extra} if isinstance(extra, str) else dict(extra)


def make_case(rng, part, shape):
    """One case of ``part``: ``(config, inputs)``; inputs is a dict of float64 arrays.

    Options (a dict at the end of a shape): ``interface`` ('course' for CMU 11-785's GRU interface), ``scale``
    (x drawn that much larger), ``state0`` (False: a sequence case that passes no initial state),
    ``bidirectional`` and ``lengths`` (sequence cases: both directions, a padded batch of these lengths).
    """
    if part.kind == "ctc":
        return make_ctc_case(rng, part, shape)
    n, I, H, flags, steps = shape[:5]
    states, exposed = CELLS[part.cell]
    options = _options(shape, 7 if part.kind == "sequence" else 5)
    config = {"part": part.number, "kind": part.kind, "cell": part.cell, "layer": LAYERS[part.cell],
              "states": list(states), "exposed": list(exposed), "n": n, "I": I, "H": H, "flags": flags,
              "steps": steps, "interface": options.get("interface", "mytorch")}
    config.update({k: v for k, v in options.items() if k != "interface"})
    if part.kind == "backward":
        config["stepped"] = ["dx"]                 # one dx per backward call, stacked by the driver on axis 0
    inputs = {}
    if part.kind == "sequence":
        layers, batch_first = shape[5], shape[6]
        config.update(layers=layers, batch_first=batch_first)
        bidirectional = options.get("bidirectional", False)
        if part.cell in STATE_FORMS:
            config["state_form"] = STATE_FORMS[part.cell]
        D = 2 if bidirectional else 1
        H_out = state_widths(part.cell, I, H, flags)[0]
        in_widths = [I] + [D * H_out] * (layers - 1)
        for layer in range(layers):                        # entry k = layer·D + direction, PyTorch's order
            for direction in range(D):
                for name, s in param_shapes(part.cell, in_widths[layer], H, flags).items():
                    inputs[f"param/{name}_l{layer}{'_reverse' if direction else ''}"] = rng.uniform(-0.6, 0.6, s)
        x_shape = (steps, I) if n is None else ((n, steps, I) if batch_first else (steps, n, I))
        inputs["X"] = rng.standard_normal(x_shape)
        inputs["dY"] = rng.standard_normal(x_shape[:-1] + (D * H_out,))
        trainable = flags.get("train_state") or flags.get("train_memory")
        for k in range(layers * D):
            widths = state_widths(part.cell, in_widths[k // D], H, flags)
            for j, w in enumerate(widths):
                if not trainable and options.get("state0", True):   # else state0 stays None
                    inputs[f"state0/{k}/{j}"] = rng.standard_normal(_batch(n, w))
                inputs[f"d_state_T/{k}/{j}"] = rng.standard_normal(_batch(n, w))
        return config, inputs
    for name, s in param_shapes(part.cell, I, H, flags).items():
        inputs[f"param/{name}"] = rng.uniform(-0.6, 0.6, s)
    if part.cell == "GRUBlockCell":
        inputs["param/b_ru"] += 1.0                        # TensorFlow's gates start open
    inputs["x"] = rng.standard_normal((steps,) + _batch(n, I)) * options.get("scale", 1.0)
    trainable = flags.get("train_state") or flags.get("train_memory")
    for k, w in enumerate(state_widths(part.cell, I, H, flags)):
        if not trainable:
            inputs[f"state/{k}"] = rng.standard_normal(_batch(n, w))
        if part.kind == "backward":
            inputs[f"d_state/{k}"] = rng.standard_normal((steps,) + _batch(n, w))
    if part.cell == "GRUBlockCell" and part.kind == "backward":
        # the op gru_block_cell_grad is a pure function of its inputs: r, u, c need not come from a forward
        N = 1 if n is None else n
        inputs.update({"op/r": rng.uniform(0.05, 0.95, (N, H)), "op/u": rng.uniform(0.05, 0.95, (N, H)),
                       "op/c": rng.uniform(-0.95, 0.95, (N, H)), "op/d_h": rng.standard_normal((N, H))})
    return config, inputs


def make_cases(part, seed):
    """Every case of ``part`` drawn from ``seed`` (and the part's number, so parts differ)."""
    rng = np.random.default_rng([seed, *map(int, part.number.split("."))])
    return [make_case(rng, part, shape) for shape in part.shapes]


def select_parts(requested):
    """Parts named by number ('2.1') or section ('2'); all parts when none are named."""
    if not requested:
        return list(PARTS)
    chosen = []
    for name in requested:
        matches = [p for p in PARTS if p.number == name or p.number.split(".")[0] == name]
        if not matches:
            known = ", ".join(p.number for p in PARTS)
            sections = ", ".join(SECTIONS)
            raise ValueError(f"unknown part {name!r}: the parts are {known} (or a section number: {sections})")
        chosen += [p for p in matches if p not in chosen]
    return chosen


# ---- section 8, CTC: one case of the course's interface, drawn from ``rng``

SYMBOLS = "abcdefgh"


def _labels(rng, count, C, blank):
    """``count`` random labels in [0, C) other than ``blank``, with at least one pair of equal neighbours."""
    labels = rng.choice([c for c in range(C) if c != blank], size=count)
    if count >= 2:
        k = int(rng.integers(1, count))
        labels[k] = labels[k - 1]
    return labels.astype(np.int64)


def _softmax_columns(scores):
    e = np.exp(scores - scores.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def make_ctc_case(rng, part, shape):
    """(config, inputs) of a CTC part; ``config['describe']`` says the case in words."""
    task = shape[0]
    config = {"part": part.number, "kind": "ctc", "cell": part.cell, "task": task, "n": None, "flags": {}}
    inputs = {}
    if task == "extend":
        _, blank, length = shape
        C = max(blank + 1, 6)
        inputs["target"] = _labels(rng, length, C, blank)
        config.update(blank=blank, describe=f"target {inputs['target'].tolist()}, BLANK={blank}")
    elif task in ("alpha", "beta"):
        _, T, C, ext, skip = shape
        inputs["logits"] = rng.uniform(0.05, 1.0, (T, C))          # positive scores, used as they are
        inputs["extended_symbols"] = np.array(ext, dtype=np.int64)
        inputs["skip_connect"] = np.array(skip, dtype=np.int64)
        config["describe"] = f"T={T}, C={C}, extended symbols {list(ext)}, skip_connect {list(skip)}"
    elif task == "gamma":
        _, T, S, zeros = shape
        alpha, beta = rng.uniform(0.01, 1.0, (T, S)), rng.uniform(0.01, 1.0, (T, S))
        if zeros:                                                     # unreachable states, never a whole row
            alpha[:, -2:] = 0.0
            beta[:, :1] = 0.0
        inputs.update(alpha=alpha, beta=beta)
        config["describe"] = f"T={T}, S={S}" + (", some alpha and beta are 0" if zeros else "")
    elif task in ("loss", "loss_backward"):
        _, T, B, C, input_lengths, target_lengths = shape
        inputs["logits"] = np.stack([_softmax_columns(rng.standard_normal((C, T)) * 1.5).T for _ in range(B)], axis=1)
        target = np.zeros((B, max(target_lengths)), dtype=np.int64)
        for b, length in enumerate(target_lengths):
            target[b, :length] = _labels(rng, length, C, 0)
        inputs.update(target=target, input_lengths=np.array(input_lengths, dtype=np.int64),
                      target_lengths=np.array(target_lengths, dtype=np.int64))
        config["describe"] = (f"T={T}, B={B}, C={C}, input_lengths {list(input_lengths)}, target_lengths "
                              f"{list(target_lengths)}" + (", a long sequence" if T >= 100 else ""))
    elif task == "torch_loss":
        _, T, B, C, input_lengths, target_lengths, reduction, zero_infinity = shape
        scores = rng.standard_normal((T, B or 1, C)) * 1.5
        log_probs = scores - np.log(np.exp(scores).sum(axis=2, keepdims=True))
        target = np.zeros((B or 1, max(target_lengths)), dtype=np.int64)
        for b, length in enumerate(target_lengths):
            target[b, :length] = _labels(rng, length, C, 0)
        inputs.update(log_probs=log_probs if B else log_probs[:, 0], targets=target if B else target[0],
                      input_lengths=np.array(input_lengths, dtype=np.int64),
                      target_lengths=np.array(target_lengths, dtype=np.int64))
        config.update(reduction=reduction, zero_infinity=zero_infinity,
                      describe=f"T={T}, " + (f"N={B}" if B else "unbatched") + f", C={C}, input_lengths "
                               f"{list(input_lengths)}, target_lengths {list(target_lengths)}, reduction="
                               f"'{reduction}'" + (", zero_infinity" if zero_infinity else ""))
    elif task == "greedy":
        _, T, K, planted = shape
        scores = rng.uniform(0.0, 1.0, (K + 1, T))
        if planted is not None:                                       # this path is the argmax at every step
            scores[list(planted), np.arange(T)] += 1.0
        inputs["y_probs"] = (scores / scores.sum(axis=0, keepdims=True))[:, :, None]
        config.update(symbol_set=list(SYMBOLS[:K]), describe=f"T={T}, symbol_set {list(SYMBOLS[:K])}")
    elif task == "beam":
        _, T, K, beam_width, uniform, prune = shape
        y = np.ones((K + 1, T)) if uniform else rng.uniform(1e-3, 1.0, (K + 1, T))
        inputs["y_probs"] = (y / y.sum(axis=0, keepdims=True))[:, :, None]
        call = "prefix_beam_search, its default prune='prefix'" if prune == "prefix" else \
            "BeamSearchDecoder, prune='hypothesis'"
        config.update(symbol_set=list(SYMBOLS[:K]), beam_width=beam_width, prune=prune,
                      describe=f"{call}: T={T}, symbol_set {list(SYMBOLS[:K])}, beam_width={beam_width}"
                               + (", every probability equal (ties)" if uniform else ""))
    else:
        raise KeyError(task)
    return config, inputs

"""What is graded: the parts (numbered like the handout), their points, and their cases.

A case is a config (JSON: which cell, sizes, flags, how many steps) plus input arrays (x, states, upstream
gradients, parameters). Cases are drawn from a seed with NumPy alone: the grading process builds them
without importing any ``mytorch``, and ``--fresh-seed`` draws new ones.

Size letters: N batch (None: unbatched), T steps, I input_size, H hidden_size, L layers.
"""
import dataclasses

import numpy as np

# cell name -> (state part names, what forward exposes and the grader checks)
CELLS = {
    "RNNCell": (("h",), ()),
    "GRUCell": (("h",), ("r", "z", "n")),
    "GRUBlockCell": (("h",), ("r", "u", "c")),
    "GMUCell": (("h", "c"), ("i", "m", "o")),
    "TGRUCell": (("h", "m"), ("z", "f", "o")),
}
LAYERS = {"RNNCell": "RNN", "GRUCell": "GRU", "GRUBlockCell": "GRUBlock", "GMUCell": "GMU", "TGRUCell": "TGRU"}


@dataclasses.dataclass(frozen=True)
class Part:
    number: str
    name: str
    points: int
    kind: str                    # forward | backward | sequence
    cell: str
    shapes: tuple                # per case: (N, I, H, flags, steps[, interface or layers/batch_first])

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

PARTS = (
    Part("1.1", "RNN cell forward", 6, "forward", "RNNCell", _cell_cases((3, 2, 4, {"nonlinearity": "relu"}, 1))),
    Part("1.2", "RNN cell backward", 8, "backward", "RNNCell",
         _cell_cases((3, 2, 4, {"nonlinearity": "relu"}, 1), LIFO)),
    Part("2.1", "GRU cell forward", 8, "forward", "GRUCell",
         ((None, 5, 2, {}, 1, "course"),) + _cell_cases(LARGE)),
    Part("2.2", "GRU cell backward", 12, "backward", "GRUCell",
         ((None, 5, 2, {}, 1, "course"),) + _cell_cases(LIFO, LARGE)),
    Part("3.1", "GRU block cell forward", 6, "forward", "GRUBlockCell", _cell_cases(LARGE)),
    Part("3.2", "GRU block cell backward", 10, "backward", "GRUBlockCell", _cell_cases(LIFO, LARGE)),
    Part("4.1", "GMU cell forward", 6, "forward", "GMUCell", _cell_cases(LARGE)),
    Part("4.2", "GMU cell backward", 10, "backward", "GMUCell", _cell_cases(LIFO, LARGE)),
    Part("5.1", "TGRU cell forward", 6, "forward", "TGRUCell",
         _cell_cases((2, 3, 4, {"train_state": True, "train_memory": True}, 1), LARGE)),
    Part("5.2", "TGRU cell backward", 10, "backward", "TGRUCell",
         _cell_cases((2, 3, 4, {"train_state": True, "train_memory": True}, 1),
                     (2, 3, 4, {"train_state": True, "train_memory": True}, 3), LARGE)),
    Part("6.1", "BPTT: RNN sequence layer", 3, "sequence", "RNNCell", _sequence_cases()),
    Part("6.2", "BPTT: GRU sequence layer", 4, "sequence", "GRUCell", _sequence_cases((3, 4, 2, {}, 1, 1, True))),
    Part("6.3", "BPTT: GRU block sequence layer", 4, "sequence", "GRUBlockCell", _sequence_cases()),
    Part("6.4", "BPTT: GMU sequence layer", 4, "sequence", "GMUCell", _sequence_cases((1, 4, 3, {}, 3, 2, True))),
    Part("6.5", "BPTT: TGRU sequence layer", 3, "sequence", "TGRUCell",
         _sequence_cases((2, 3, 4, {"train_state": True, "train_memory": True}, 4, 2, False))),
)
PARTS_BY_NUMBER = {p.number: p for p in PARTS}
SECTIONS = {"1": "RNN cell", "2": "GRU cell", "3": "GRU block cell", "4": "GMU cell", "5": "TGRU cell",
            "6": "BPTT through the sequence layer"}
assert sum(p.points for p in PARTS) == 100


def param_shapes(cell, I, H, flags):
    """The parameters of ``cell`` with their shapes (the layouts of DESIGN.md)."""
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
    if cell == "TGRUCell":
        shapes = {"weight_ih": (3 * H, I), "weight_hh": (3 * H, I), "bias_ih": (3 * H,), "bias_hh": (3 * H,)}
        if flags.get("train_state"):
            shapes["hidden_state"] = (H,)
        if flags.get("train_memory"):
            shapes["memory"] = (I,)
        return shapes
    raise KeyError(cell)


def state_widths(cell, I, H):
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
    (x drawn that much larger), ``state0`` (False: a sequence case that passes no initial state).
    """
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
        for layer in range(layers):
            for name, s in param_shapes(part.cell, I if layer == 0 else H, H, flags).items():
                inputs[f"param/{name}_l{layer}"] = rng.uniform(-0.6, 0.6, s)
        x_shape = (steps, I) if n is None else ((n, steps, I) if batch_first else (steps, n, I))
        inputs["X"] = rng.standard_normal(x_shape)
        inputs["dY"] = rng.standard_normal(x_shape[:-1] + (H,))
        trainable = flags.get("train_state") or flags.get("train_memory")
        for layer in range(layers):
            widths = state_widths(part.cell, I if layer == 0 else H, H)
            for k, w in enumerate(widths):
                if not trainable and options.get("state0", True):   # else state0 stays None
                    inputs[f"state0/{layer}/{k}"] = rng.standard_normal(_batch(n, w))
                inputs[f"d_state_T/{layer}/{k}"] = rng.standard_normal(_batch(n, w))
        return config, inputs
    for name, s in param_shapes(part.cell, I, H, flags).items():
        inputs[f"param/{name}"] = rng.uniform(-0.6, 0.6, s)
    if part.cell == "GRUBlockCell":
        inputs["param/b_ru"] += 1.0                        # TensorFlow's gates start open
    inputs["x"] = rng.standard_normal((steps,) + _batch(n, I)) * options.get("scale", 1.0)
    trainable = flags.get("train_state") or flags.get("train_memory")
    for k, w in enumerate(state_widths(part.cell, I, H)):
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
            raise ValueError(f"unknown part {name!r}: the parts are {known} (or a section number 1-6)")
        chosen += [p for p in matches if p not in chosen]
    return chosen

"""Check a cell's or a sequence layer's backward against centred finite differences.

    errors = gradcheck(cell, x, state)          # {'x': 3e-11, 'state[0]': …, 'weight_ih': …, …}
    errors = gradcheck(layer, X, state0)
    errors = gradcheck(layer, X, state0, lengths=lengths)     # a padded batch of unequal lengths

The loss is L = Σ w ⊙ out over every output array (h, c, m, Y, the final states), with random weights w
drawn from ``seed``; ``backward`` is called with d_out = w. Each gradient entry is compared with

    (L(θ + ε) − L(θ − ε)) / 2ε        (error O(ε²) + rounding O(1e-16 / ε); ε = 1e-6 in float64)

and reported per array as the maximum relative error max|analytic − numeric| / max(max|analytic|,
max|numeric|). A correct backward gives about 1e-9 or less; a wrong one, 1e-2 or more. The module's
parameters and gradients are restored afterwards, and nothing is left on its record.
"""
import numpy as np

from mytorch.grad_mode import no_grad


def _flatten(structure):
    """The arrays in a nested structure of arrays, tuples, lists and Nones, in order (Nones skipped)."""
    if structure is None:
        return []
    if isinstance(structure, (tuple, list)):
        return [a for part in structure for a in _flatten(part)]
    return [structure]


def _rebuild(structure, arrays):
    """``structure`` with its arrays replaced, in order, by the next items of the iterator ``arrays``."""
    if structure is None:
        return None
    if isinstance(structure, (tuple, list)):
        return type(structure)(_rebuild(part, arrays) for part in structure)
    return next(arrays)


def _names(structure, prefix):
    """Names for the arrays of a structure: 'state', or 'state[0]', 'state[1][0]', …"""
    if structure is None:
        return []
    if isinstance(structure, (tuple, list)):
        return [n for k, part in enumerate(structure) for n in _names(part, f"{prefix}[{k}]")]
    return [prefix]


def relative_error(analytic, numeric):
    """max|a − n| / max(max|a|, max|n|); 0 when both are exactly zero."""
    scale = max(np.max(np.abs(analytic), initial=0.0), np.max(np.abs(numeric), initial=0.0))
    diff = np.max(np.abs(analytic - numeric), initial=0.0)
    return 0.0 if diff == 0 else float(diff / scale) if scale > 0 else float("inf")


def gradcheck(module, x, state=None, eps=1e-6, seed=0, lengths=None):
    """Max relative error of ``module.backward`` against finite differences, per input, state part and parameter.

    ``module`` is a cell (``forward(x, state) -> new_state``) or a ``Recurrent`` layer
    (``forward(X, state0, lengths) -> (Y, state_T)``); it must be float64. ``state`` and ``lengths`` may be None.
    """
    if np.dtype(module.dtype) != np.float64:
        raise ValueError(f"gradcheck: {type(module).__name__} is {module.dtype}; finite differences need float64")
    x = np.array(x, dtype=np.float64)
    state = _rebuild(state, (np.array(a, dtype=np.float64) for a in _flatten(state)))
    state_arrays = _flatten(state)

    from mytorch.nn.recurrent import Recurrent  # on use, so importing mytorch imports no cell
    if lengths is not None and not isinstance(module, Recurrent):
        raise ValueError("gradcheck: lengths is for sequence layers; a cell runs one step")

    def run():
        return module.forward(x, state, lengths=lengths) if lengths is not None else module.forward(x, state)

    def outputs():
        return _flatten(run())

    with no_grad():
        weights = [np.random.default_rng(seed).standard_normal(a.shape) for a in outputs()]

    def loss():
        with no_grad():
            return sum(float(np.sum(w * o)) for w, o in zip(weights, outputs()))

    # analytic: one recorded forward, one backward, with the caller's gradients set aside
    saved = {k: g.copy() for k, g in module.grads.items()}
    module.zero_grad()
    result = run()
    d_out = _rebuild(result, iter(weights))
    dx, d_state = module.backward(*d_out) if isinstance(module, Recurrent) else module.backward(d_out)
    analytic = {"x": dx}
    analytic.update(zip(_names(state, "state"), _flatten(d_state) if state is not None else []))
    analytic.update({k: g.copy() for k, g in module.grads.items()})
    for k, g in module.grads.items():
        g[...] = saved[k]

    # numeric: perturb every entry of every checked array in place, then restore it
    targets = {"x": x}
    targets.update(zip(_names(state, "state"), state_arrays))
    targets.update(module.params)
    errors = {}
    for name, array in targets.items():
        numeric = np.zeros_like(array, dtype=np.float64)
        for idx in np.ndindex(array.shape):
            original = array[idx]
            array[idx] = original + eps
            up = loss()
            array[idx] = original - eps
            down = loss()
            array[idx] = original
            numeric[idx] = (up - down) / (2 * eps)
        errors[name] = relative_error(np.asarray(analytic[name]).reshape(array.shape), numeric)
    return errors

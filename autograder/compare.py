"""Judge one returned array against its reference, in the order type → dtype → shape → values, and explain.

Everything here runs in the grading process on plain arrays read with ``allow_pickle=False``; no student
object ever reaches it. A mismatch says which array, the expected and actual shape, the largest absolute
and relative errors, where the first large difference is, and a hint when the pattern is recognisable:

- transposed, sign-flipped, gates (the 3H or 2H chunks) in the wrong order, a bias gradient averaged instead
  of summed over the batch: recognised by transforming the reference;
- a known mistake (sigmoid and tanh swapped, z and 1 − z swapped, gradients assigned instead of accumulated
  over time steps, …): recognised because the reference data holds what that mistake produces;
- ``@`` where an elementwise ``*`` was meant: recognised from the error it raises.
"""
import dataclasses
import itertools

import numpy as np

RTOL, ATOL = 1e-6, 1e-8


@dataclasses.dataclass
class Verdict:
    passed: bool
    message: str = ""
    hints: tuple = ()


def close(a, b):
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


def _gate_permutations(expected):
    """(description, permuted reference) for every other order of the 2 or 3 stacked gate chunks."""
    for axis in {0, expected.ndim - 1}:
        size = expected.shape[axis]
        for chunks in (3, 2):
            if size % chunks or size < 2 * chunks:
                continue
            pieces = np.split(expected, chunks, axis=axis)
            for order in itertools.permutations(range(chunks)):
                if order != tuple(range(chunks)):
                    yield order, np.concatenate([pieces[i] for i in order], axis=axis)


def transform_hints(name, actual, expected, batch):
    """Hints found by transforming the reference: transposed, sign, gate order, batch averaging."""
    hints = []
    swapped = np.swapaxes(expected, -1, -2) if expected.ndim >= 2 else None       # the transpose of every matrix
    if swapped is not None and close(actual, swapped) and not close(actual, expected):
        hints.append(f"{name} is the transpose of the expected array: check the orientation (x @ W.T gives (N, H); "
                     "a weight gradient is d_outᵀ @ input, shaped like the weight)")
    if actual.shape != expected.shape:
        if not hints and actual.size == expected.size and close(actual.reshape(expected.shape), expected):
            hints.append(f"{name} has the right values in the wrong shape: an unbatched input (1-D) must give "
                         "1-D results, a batched one (N, ·) results")
        return hints
    if np.abs(expected).max(initial=0) > ATOL and close(actual, -expected):
        hints.append(f"{name} has the right magnitude but the opposite sign: check a subtraction such as "
                     "(h − n) versus (n − h), or 1 − z versus z − 1")
    for order, permuted in _gate_permutations(expected):
        if close(actual, permuted):
            hints.append(f"{name} holds the right gate blocks in the wrong order (the order found is "
                         f"{list(order)} of the expected blocks): gates are stacked in the reference order, "
                         "e.g. r, z, n for the GRU")
            break
    if batch and batch > 1 and name.startswith("grad/") and close(actual * batch, expected):
        hints.append(f"{name} is the expected gradient divided by the batch size: sum over the batch "
                     "(np.sum(..., axis=0)); averaging belongs to the loss, not to the cell")
    return hints


def compare(name, actual, expected, type_text, variants=(), batch=None):
    """The verdict on one array. ``variants``: (hint text, array) pairs of known mistakes' outputs."""
    if type_text is None:
        return Verdict(False, f"{name}: nothing was returned or set (expected an array of shape {expected.shape})")
    if actual is None:
        return Verdict(False, f"{name}: expected a numpy.ndarray of shape {expected.shape}, got {type_text}")
    if actual.dtype != expected.dtype:
        hint = ()
        if actual.dtype == np.float32:
            hint = ("something converts to float32 (np.float32, astype, a float32 constant array): keep the "
                    "dtype of the inputs (float64)",)
        return Verdict(False, f"{name}: dtype {actual.dtype}, expected {expected.dtype}", hint)
    hints = []
    if actual.shape != expected.shape:
        hints = transform_hints(name, actual, expected, batch)
        return Verdict(False, f"{name}: shape {actual.shape}, expected {expected.shape}", tuple(hints))
    if close(actual, expected):
        return Verdict(True)
    diff = np.abs(actual.astype(np.float64) - expected)
    bad = ~np.isclose(actual, expected, rtol=RTOL, atol=ATOL)
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.nanmax(np.where(bad, diff / np.maximum(np.abs(expected), 1e-12), 0.0))
    lines = [f"{name}: values differ in {int(bad.sum())} of {bad.size} entries; "
             f"max abs error {np.nanmax(diff):.3g}, max rel error {rel:.3g}",
             f"  first at index {first}: got {actual[first]:.6g}, expected {expected[first]:.6g}"]
    if np.isnan(actual).any():
        lines.append(f"  {name} contains NaN: look for 0/0, log of a negative number, or overflow in exp")
    hints = transform_hints(name, actual, expected, batch)
    hints += [text for text, variant in variants if variant.shape == actual.shape and close(actual, variant)]
    return Verdict(False, "\n".join(lines), tuple(dict.fromkeys(hints)))


def error_hints(error):
    """Hints recognised from an exception's text."""
    hints = []
    if "matmul" in error and "mismatch in its core dimension" in error:
        hints.append("`@` is a matrix product: an elementwise product (⊙ in the equations, e.g. r ⊙ h) is `*` "
                     "in NumPy")
    if "operands could not be broadcast" in error:
        hints.append("two arrays of incompatible shapes met in an elementwise operation: print their shapes; "
                     "a sum over the batch is np.sum(..., axis=0)")
    if "non-broadcastable output operand" in error:
        hints.append("an in-place update (+=) got an array of another shape: a bias gradient (H,) needs the "
                     "batch summed out, np.sum(d, axis=0)")
    return hints

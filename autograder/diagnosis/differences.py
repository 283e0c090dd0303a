"""The kind of difference between a student's value and the reference's, said only when the values prove it.

Each kind is checked against its definition, entry by entry within the grader's tolerance: the opposite sign,
a constant factor, the transpose, one gate block, the value one step before, all zeros, and the algebraic
identities with what the quantity reads (a term or factor missing or once too often, a log for a probability).
"""
import numpy as np

from autograder.diagnosis import matching
from autograder.diagnosis.matching import ATOL

GATES = {"GRUCell": ("r", "z", "n"), "LSTMCell": ("i", "f", "g", "o"), "GMUCell": ("i", "m", "o"),
         "TGRUCell": ("z", "f", "o"), "GRUBlockCell": ("r", "u")}


BEFORE_UPDATE = "the value it had before its previous update in this call"


def kind_of_difference(got, expected, previous=(), gates=(), function=None, hidden=None):
    """The kind of difference between a student's value and the expected one, in words ('' if none known), each
    said only when its definition holds: ``previous``, the quantity's reference value at its assignment before
    this one, with the function that made it (None: in this same call); ``function``: this value's."""
    if got.shape != expected.shape:
        if got.ndim == 2 and got.shape == expected.shape[::-1] and matching.close(got.T, expected):
            return "transposed"
        return ""
    finite = np.isfinite(expected) & np.isfinite(got)
    if np.abs(expected[finite]).max(initial=0) > ATOL and matching.close(got, -expected):
        return "the opposite sign"
    for earlier, made_in in previous:
        if earlier.shape == got.shape and matching.close(got, earlier):
            if made_in is None:                      # the same call: a loop's update (a layer's, a direction's)
                return BEFORE_UPDATE
            if made_in == function:
                return f"the value it had one step before (its value in the previous call of {made_in})"
            return f"the value {made_in} gave it before this call"
    nonzero = finite & (np.abs(expected) > 1e-12)
    if nonzero.any() and finite.all():
        ratios = np.sort(got[nonzero] / expected[nonzero])
        # their median (np.median imports numpy.ma: 16 ms of a grade's CPU)
        factor = float(ratios[(ratios.size - 1) // 2] + ratios[ratios.size // 2]) / 2
        if not got.any():
            return "all zeros"
        if got.size > 1 and abs(factor - 1) > 1e-6 and np.allclose(ratios, factor, rtol=1e-6) and matching.close(got, factor * expected):
            return f"a constant factor: {factor:.4g} times the expected values"
    block = _one_block(got, expected, gates, hidden)
    return block


def _one_block(got, expected, gates, hidden=None):
    """'only gate z's block differs' when a stacked array is right but for one of its gate blocks: an axis of
    len(gates) blocks (of ``hidden`` entries each, when the case's hidden size is known: a batch of 3 rows is
    no stack of 3 gates)."""
    for axis in {expected.ndim - 1, 0} if expected.ndim else ():
        count = len(gates)
        if count < 2 or expected.shape[axis] % count or expected.shape[axis] < count:
            continue
        if hidden is not None and expected.shape[axis] != count * hidden:
            continue
        bad = [not matching.close(a, b) for a, b in zip(np.split(got, count, axis=axis), np.split(expected, count, axis=axis))]
        if sum(bad) == 1:
            k = bad.index(True)
            where = "columns" if axis == expected.ndim - 1 and expected.ndim > 1 else "rows"
            if expected.ndim == 1:
                where = "entries"
            size = expected.shape[axis] // count
            return f"only gate {gates[k]}'s block differs ({where} {k * size}:{(k + 1) * size})"
    return ""


def algebra(got, q, reference):
    """'Hint: your value plus `d_in` (its value before this line) is the reference's: …' when one of the values
    q reads, taken once more as a term or a factor, turns the student's value into the reference's, entry by
    entry (within the grader's tolerance): what the line misses or has too many of, from the reference
    trace's own algebra. [] when no such identity holds, or it would hold for any value (a term of zeros, a
    factor of ones)."""
    expected = q.value
    if got.shape != expected.shape or not np.isfinite(got).all() or not np.isfinite(expected).all():
        return []
    for p in dict.fromkeys(q.reads):
        r = reference[p]
        value = r.value
        if value.shape != expected.shape or not np.isfinite(value).all():
            continue
        name = f"`{r.name}`" + (" (its value before this line)" if matching.base_name(r.name) == matching.base_name(q.name) else "")
        with np.errstate(all="ignore"):
            said = None
            if np.abs(value).max(initial=0) > ATOL:
                if matching.close(got + value, expected):
                    said = f"your value plus {name} is the reference's: the line misses that term"
                elif matching.close(got - value, expected):
                    said = f"your value minus {name} is the reference's: the line adds that term once too often"
            if said is None and not matching.close(value, np.ones_like(value)) and np.abs(got).max(initial=0) > ATOL:
                if matching.close(got * value, expected):
                    said = f"your value times {name} is the reference's: the line misses that factor"
                elif (np.abs(value) > ATOL).all() and matching.close(got / value, expected):
                    said = f"your value divided by {name} is the reference's: the line has that factor once too often"
        if said:
            return [f"    Hint: {said}"]
    with np.errstate(all="ignore"):                  # a log-space value and its probability taken one for the other
        if (expected > 0).all() and matching.close(got, np.log(expected)):
            return ["    Hint: your value is the log of the reference's: a log-probability where a probability "
                    "belongs (np.exp it)"]
        if matching.close(got, np.exp(expected)) and not matching.close(expected, np.exp(expected)):
            return ["    Hint: your value is the exp of the reference's: a probability where a log-probability "
                    "belongs (np.log it, or stay in log space)"]
    return []


def gate_blocks(names_and_arrays, config):
    """For the fallback: 'only gate z's block of grads['weight_ih'] differs' for outputs wrong in one block."""
    gates = GATES.get((config or {}).get("cell"), ())
    found = []
    for label, got, expected in names_and_arrays:
        if got is not None and got.shape == expected.shape:
            hidden = (config or {}).get("H")
            block = _one_block(got, expected, gates, hidden if isinstance(hidden, int) else None)
            if block:
                found.append(f"{label}: {block}")
    return found

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


def algebra(got, q, reference, inputs=None):
    """'Hint: your value plus `d_in` (its value before this line) is the reference's: …' when one of the values
    q reads, taken once more as a term or a factor, turns the student's value into the reference's, entry by
    entry (within the grader's tolerance): what the line misses or has too many of, from the reference
    trace's own algebra. [] when no such identity holds, or it would hold for any value (a term of zeros, a
    factor of ones)."""
    expected = q.value
    if got.shape != expected.shape or not np.isfinite(got).all() or not np.isfinite(expected).all():
        return []
    operands = [(f"`{reference[p].name}`" + (" (its value before this line)" if matching.base_name(reference[p].name)
                                             == matching.base_name(q.name) else ""), reference[p].value)
                for p in dict.fromkeys(q.reads)]
    operands += [(f"`{name}`", value) for name, value in (inputs or {}).items()]
    for name, value in operands:
        if value.ndim > expected.ndim or value.shape != expected.shape[expected.ndim - value.ndim:] \
                or not np.isfinite(value).all():
            continue                                  # of the value's shape, or one that broadcasts to it (a bias)
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


def hints(s, q, finding, reference, student, inputs=None):
    """At most one 'Hint: …' line, the first of these that the values prove (floats only, each against its
    definition within the tolerance): a term or factor of what q reads or of the case's inputs missing or once
    too often (``algebra``); a log for a probability or the reverse; the reference's value at the next
    iteration; the reference's rows shifted by one or two along time or the lattice; time reversed; a sum over
    another axis; the same vector missing from every row (a bias); a sibling read in the place of the
    reference's operand. ``s``: the student's value shown; ``inputs``: the case's arrays, or None."""
    if not s.kind == q.kind == "f":
        return []
    named = {name.rpartition("/")[2]: value for name, value in (inputs or {}).items()
             if isinstance(value, np.ndarray) and value.dtype.kind == "f" and name.startswith(("param/", "x"))}
    for found in (algebra(s.value, q, reference, named), _log_or_exp(s.value, q.value),
                  _next_iteration(s.value, q, reference),
                  _shifted(s.value, q.value), _reversed(s.value, q.value), _other_axis(s.value, q, reference, named),
                  _bias(s.value, q.value), _sibling(s, q, finding, reference, student)):
        if found:
            return found
    return []


def _said(text):
    return [f"    Hint: {text}"]


def _telling(value):
    """Whether a value can prove an identity: finite somewhere, and not one constant (zeros, ones, a row of
    -inf would match many things)."""
    finite = value[np.isfinite(value)]
    return finite.size >= 2 and np.ptp(finite) > ATOL


def _log_or_exp(got, expected):
    """The student's value is the log of the reference's (a log-probability where a probability belongs) or its
    exp (the reverse), entry by entry, log 0 = −∞ included; not of a value equal to its own log or exp."""
    if got.shape != expected.shape or not _telling(expected):
        return []
    with np.errstate(all="ignore"):
        if (expected >= 0).all() and matching.close(got, np.log(expected)):
            return _said("your value is the log of the reference's: a log-probability where a probability "
                         "belongs (np.exp it)")
        if matching.close(got, np.exp(expected)) and not matching.close(expected, np.exp(expected)):
            return _said("your value is the exp of the reference's: a probability where a log-probability "
                         "belongs (np.log it, or stay in log space)")
    return []


def _next_iteration(got, q, reference):
    """The reference's next value of q's name in q's call, when it is the student's (an index one step ahead)."""
    i = next((k for k, r in enumerate(reference) if r is q), None)
    later = next((r for r in reference[i + 1:] if r.frame == q.frame and matching.base_name(r.name)
                  == matching.base_name(q.name)), None) if i is not None else None
    if later is None or later.value.shape != got.shape or not _telling(got) or not matching.close(got, later.value):
        return []
    when = ", ".join(f"{n} = {v}" for n, v in later.at)
    return _said(f"your value is the reference's next value of `{q.name}`" + (f" (when {when})" if when else "")
                 + ": an index one step ahead")


def _shifted(got, expected):
    """The student's entries are the reference's moved by one or two along time (axis 0) or along the last axis
    (a lattice's states): equal on the overlap, which proves something (two or more varied entries)."""
    if got.shape != expected.shape or got.ndim == 0 or matching.close(got, expected):
        return []
    for axis in dict.fromkeys((0, got.ndim - 1)):
        for d in (1, 2, -1, -2):
            n = got.shape[axis]
            if n - abs(d) < 2:
                continue
            mine = np.take(got, range(max(d, 0), n + min(d, 0)), axis=axis)
            theirs = np.take(expected, range(max(-d, 0), n + min(-d, 0)), axis=axis)
            if _telling(theirs) and matching.close(mine, theirs):
                where = "row" if axis == 0 else "entry"
                ahead = "behind" if d > 0 else "ahead"
                return _said(f"your {where} k holds the reference's {where} k {'-' if d > 0 else '+'} {abs(d)} "
                             f"(along axis {axis}): an index {abs(d)} step{'s' if abs(d) > 1 else ''} {ahead}")
    return []


def _reversed(got, expected):
    """The reference's value with its first axis (time) reversed."""
    if got.shape != expected.shape or got.ndim == 0 or got.shape[0] < 2:
        return []
    flipped = expected[::-1]
    if _telling(expected) and not matching.close(flipped, expected) and matching.close(got, flipped):
        return _said("your value is the reference's with its first axis reversed: time taken in the opposite order")
    return []


def _other_axis(got, q, reference, named):
    """An operand of q (or a case input) summed over another axis than the one whose sum is the reference's."""
    operands = [(f"`{reference[p].name}`", reference[p].value) for p in dict.fromkeys(q.reads)] + \
        [(f"`{name}`", value) for name, value in named.items()]
    for name, value in operands:
        if value.ndim < 2 or not _telling(value):
            continue
        sums = {axis: value.sum(axis=axis) for axis in range(value.ndim)}
        theirs = [a for a, v in sums.items() if v.shape == q.value.shape and matching.close(v, q.value)]
        mine = [a for a, v in sums.items() if v.shape == got.shape and matching.close(v, got)]
        if theirs and mine and set(mine).isdisjoint(theirs):
            return _said(f"your value is {name} summed over axis {mine[0]}; the reference's sums it over axis "
                         f"{theirs[0]}")
    return []


def _bias(got, expected):
    """The reference's value minus the student's is one nonzero vector, the same in every row (two or more):
    a bias term missing, or added twice."""
    if got.shape != expected.shape or got.ndim != 2 or got.shape[0] < 2 or not np.isfinite(got).all() \
            or not np.isfinite(expected).all():
        return []
    gap = expected - got
    if np.abs(gap).max() > ATOL and matching.close(gap, np.broadcast_to(gap[0], gap.shape)):
        return _said("the reference's value minus yours is the same vector in every row: a bias term missing "
                     "(or one added twice, where the difference is the negative of one)")
    return []


def _sibling(s, q, finding, reference, student):
    """The student's line read a value equal to the reference's quantity A where the reference's line reads B
    (of the same shape, which the student's line did not read): one operand taken for a sibling."""
    index = next((k for k, r in enumerate(student) if r is s), None)
    if index is None or not q.reads:
        return []
    held = {}                                          # student index -> the reference quantities found there
    for i, hits in finding.found.items():
        for j, _ in hits:
            held.setdefault(j, set()).add(i)
    mine = set().union(*(held.get(j, set()) for j in s.reads)) if s.reads else set()
    theirs = set(q.reads)
    extra, missing = mine - theirs, theirs - mine
    extra = [i for i in extra if any(reference[i].value.shape == reference[m].value.shape for m in missing)]
    if len(extra) == 1 and len(missing) == 1:
        a, b = reference[extra[0]], reference[next(iter(missing))]
        if a.value.shape == b.value.shape and matching.base_name(a.name) != matching.base_name(b.name):
            return _said(f"your line reads a value equal to the reference's `{a.name}` where the reference's "
                         f"reads `{b.name}`")
    return []

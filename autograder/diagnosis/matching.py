"""Find where a failing case first goes wrong: the student's first wrong quantity and the line that computed it.

The grader re-runs the first failing case of a part in a fresh child with tracing on (``tracing``): every
value the submission's own frames assign comes back, with its file:line. The reference trace is the same
record of the solution on the same case (stored with the reference data by ``python -m autograder generate``,
or, with a fresh seed, computed by the solution's child when asked). Each reference record is a named quantity
q with the records it reads, in computation order.

Matching, in the grading process, on plain arrays:

1. q is *found* if a student value equals it (``allclose``), also up to a transpose, as one gate block of a
   stacked array, or summed over the batch (axis 0); the value must be assigned after the student's values of
   what q reads (for q that reads nothing found, after what q's call computed before it), and, if the student
   uses q's name, be that name's next assignment (so d_prev never stands in for d_state, nor one step's value
   for the next one's). A quantity computed from nothing the trace holds is judged by what reads it when it
   is a sum's start (a scalar or zeros) or a name the student never uses (``_given``).
2. q is *right* if found, or if a statement computed from it is right (the student wrote q inline).
3. The first wrong quantity is the first q, in the solution's order, that is not right while everything it
   reads is right.
4. Its nearest candidate: the student's next assignment of q's name after its inputs, else a value of a
   compatible shape that matches nothing in the reference (a like name breaks ties). The report gives its
   file:line (and, for a helper of the same file, the line that called it), got against expected at the
   first entry that differs, and the kind of difference when recognisable (the opposite sign, a constant
   factor, transposed, one gate block, the value one step before, all zeros).
5. Without a candidate (an inline expression): the quantities that read q, and the gate block the wrong
   outputs are confined to, if one.

The reference trace holds names, places, dependencies and values, never the solution's source: the data ships
with the student handout. Values that differ between two runs of the solution (a cell's random initial
parameters, replaced once it is built) are dropped from it (``stable``).

Everything the child sent is untrusted: ``parse`` checks the trace whole, and any problem means no diagnosis.
Nothing here raises into the grader: ``explain`` returns [] when it cannot say anything.
"""
import ast
import bisect
import dataclasses
import difflib
import functools
import math
import re
import textwrap
import threading
import time

import numpy as np

from autograder.diagnosis import compare
from autograder.parts.driver import handout_function  # a plain table; imported now, never after
from autograder.sandbox import childspec, runner, untrusted

RTOL, ATOL = compare.RTOL, compare.ATOL      # one tolerance for judging and for diagnosing
RECORD_LIMIT = 5000              # records accepted from one trace
# what the parent spends on one student trace, whatever the child sent (a forged trace of 5,000 copies of a value
# the reference holds 546 times kept every match of every one: 11 million, 1.6 GB and 108 s): the student's
# values kept per reference quantity (the first ones, in the student's order: the earliest is the one used), and
# the seconds the matching may take before the diagnosis is given up (never the grade)
MATCHES_KEPT = 16
DIAGNOSIS_SECONDS = 4.0          # a part's (its trace read and matched): a forged trace's cost stays under 5 s more
SUBMISSION_SECONDS = 10.0        # … and all the diagnoses of one submission, its parts together
SHOWN_RIGHT = 4                  # right quantities named before the wrong one
GATES = {"GRUCell": ("r", "z", "n"), "LSTMCell": ("i", "f", "g", "o"), "GMUCell": ("i", "m", "o"),
         "TGRUCell": ("z", "f", "o"), "GRUBlockCell": ("r", "u")}
TRACE = "__trace__"              # the array of a traced case's values (driver.TRACE)


@dataclasses.dataclass
class Record:
    name: str
    file: str
    line: int
    text: str
    frame: int
    function: str
    reads: tuple
    value: np.ndarray
    at: tuple = ()               # (name, value) of the loop variables of its iteration: (("t", 3), ("k", 1))
    loop: int = 0                # the line of the innermost for loop it is computed in (0: none)


def _int(v, low=0, high=1 << 31):
    if type(v) is not int or not low <= v < high:
        raise ValueError("not a bounded integer")
    return v


def _dim(v):
    return _int(v, 0, 1 << 24)


def parse(meta, flat):
    """The records of one trace (see ``tracing.Trace.pack``), checked; ValueError if anything is malformed. Its
    names, files, functions and source lines are the child's: each becomes one line of printable text."""
    if not isinstance(meta, dict) or not isinstance(meta.get("records"), list) or type(flat) is not np.ndarray:
        raise ValueError("not a trace")
    entries, texts = meta["records"], meta.get("texts") if isinstance(meta.get("texts"), dict) else {}
    if len(entries) > RECORD_LIMIT or flat.ndim != 1 or flat.dtype != np.float64:
        raise ValueError("a trace too long or of the wrong type")
    records, offset, cleaned, code = [], 0, {}, {}

    def clean(value, limit):                           # a trace repeats its names, files and lines many times
        if type(value) is not str:
            return untrusted.line(value, limit)
        key = (value, limit)
        if key not in cleaned:
            cleaned[key] = untrusted.line(value, limit)
        return cleaned[key]
    for index, entry in enumerate(entries):
        if not (isinstance(entry, list) and len(entry) in (7, 8, 9)):
            raise ValueError("a malformed trace record")
        name, file, line, frame, function, reads, dims = entry[:7]
        if not (isinstance(name, str) and isinstance(file, str) and isinstance(function, str)
                and isinstance(reads, list) and isinstance(dims, list) and len(dims) <= 8):
            raise ValueError("a malformed trace record")
        shape = tuple(map(_dim, dims))
        size = math.prod(shape)
        if offset + size > flat.size:
            raise ValueError("a trace's values are cut short")
        line = _int(line, 0, 1 << 24)
        where = f"{file}:{line}"
        if where not in code:
            code[where] = code_text(texts.get(where, ""))
        records.append(Record(clean(name, 120), clean(file, 200), line, code[where],
                              _int(frame), clean(function, 80), tuple(r for r in map(_int, reads[:64]) if r < index),
                              flat[offset:offset + size].reshape(shape), _iteration(entry[7] if len(entry) > 7 else []),
                              _loop_line(entry[8] if len(entry) > 8 else 0)))
        offset += size
    if offset != flat.size:
        raise ValueError("a trace's values do not add up")
    callers = {}
    raw = meta.get("callers") if isinstance(meta.get("callers"), dict) else {}
    for frame, entry in list(raw.items())[:RECORD_LIMIT]:
        if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[1], str) and frame.isdigit():
            file, line = untrusted.line(entry[1], 200), _int(entry[2], 0, 1 << 24)
            callers[int(frame)] = (_int(entry[0]), file, line, code_text(texts.get(f"{entry[1]}:{line}", "")))
    lost = untrusted.line(meta.get("lost", ""), 200) if isinstance(meta.get("lost", ""), str) else ""
    return Trace(records, lost, callers)


CODE_LINES = 4                                 # lines of a statement shown
MODULES = {"np", "numpy", "math"}              # names a statement reads that no call gives
LOOP_NAME = re.compile(r"[A-Za-z_]\w{0,29}")


def _iteration(raw):
    """A record's loop variables from the child, checked: ((name, int or tuple of ints), …), at most 4; anything
    malformed is dropped (it only labels a report)."""
    if not isinstance(raw, list):
        return ()
    at = []
    for pair in raw[:4]:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and LOOP_NAME.fullmatch(pair[0])):
            return ()
        value = pair[1]
        if type(value) is int and abs(value) < 1 << 31:
            at.append((pair[0], value))
        elif type(value) is list and len(value) <= 20 and all(type(v) is int and abs(v) < 1 << 31 for v in value):
            at.append((pair[0], tuple(value)))
        else:
            return ()
    return tuple(at)


def _loop_line(raw):
    """A record's loop line from the child: a line number, or 0 when it is none (it only labels a report)."""
    return raw if type(raw) is int and 0 < raw < 1 << 24 else 0


def _when(record):
    """' (when t = 3, k = 1)' for a value computed in a loop, in the student's own names; '' otherwise."""
    if not record.at:
        return ""
    return " (when " + ", ".join(f"{name} = {value}" for name, value in record.at) + ")"


def code_text(value):
    """A statement's source from the child, as its lines (at most CODE_LINES, 200 characters in all), each one
    printable line of text: what the report shows indented under the grader's own words, never at a line's start."""
    if type(value) is not str:
        return ""
    lines = [untrusted.line(part, 200).rstrip() for part in value[:200].split("\n")[:CODE_LINES]]
    return "\n".join(line for line in lines if line.strip())


@dataclasses.dataclass
class Trace:
    records: list
    lost: str = ""
    callers: dict = dataclasses.field(default_factory=dict)   # frame -> (caller frame, file, line, text)
    places: dict = dataclasses.field(default=None, repr=False, compare=False)   # id(record) -> index, made once


def trace_case(child, config, inputs):
    """Run one case of the mytorch in ``child.root`` with tracing on, in a child of ``child`` (a ``ChildSpec``):
    ``(Trace, outcome)``, or None."""
    outcome = runner.run_child(child, [dict(config, trace=True)], [inputs])
    if outcome.failure or not outcome.reports:
        return None
    meta, flat = outcome.reports[0].get("trace"), outcome.arrays.get((0, TRACE))
    try:
        return parse(meta, flat), outcome
    except (ValueError, TypeError):
        return None


def stable(first, second):
    """``first`` without the records whose value differs in ``second``, a second run of the same case: what
    depends on more than the case (a cell's random initial parameters, replaced after it is built)."""
    if [r.name for r in first.records] != [r.name for r in second.records]:
        return first
    keep = [a.value.shape == b.value.shape and bool(np.array_equal(a.value, b.value, equal_nan=True))
            for a, b in zip(first.records, second.records)]
    new_index, records = {}, []
    for i, record in enumerate(first.records):
        if keep[i]:
            new_index[i] = len(records)
            records.append(dataclasses.replace(record, reads=tuple(new_index[p] for p in record.reads
                                                                   if p in new_index)))
    return Trace(records, first.lost, first.callers)


# ---- matching

def _close_rows(matrix, target):
    """Which rows of ``matrix`` (n, size) equal ``target`` (size,) within the tolerance (±inf and NaN alike).
    Called under ``np.errstate(invalid="ignore", over="ignore")`` (by ``first_wrong``, once for all)."""
    close = np.abs(matrix - target) <= ATOL + RTOL * np.abs(target)
    finite = np.isfinite(target)
    if not finite.all():                              # (for a finite target, closeness says it all)
        # an infinite entry is matched by itself alone: its tolerance, RTOL * inf, would admit any finite value
        # (a jump from a state the lattice forbids, −inf in log space, taken as right)
        close = np.where(finite, close, (matrix == target) | (np.isnan(matrix) & np.isnan(target)))
    return close.all(axis=1)


@functools.lru_cache(maxsize=4096)               # bounded: the shapes come from students' traces, a class of them
def _forms(shape):
    """(how, shape, take) for every form a student's value of ``shape`` may hold a reference quantity in, in
    the order they are tried; ``take`` is None (itself), "T", "sum" or (axis, start, stop) (a block)."""
    forms = [("", shape, None)]
    if len(shape) == 2:
        forms.append(("transposed", shape[::-1], "T"))
    if len(shape) >= 2 and shape[0] > 1:
        forms.append(("summed over the batch", shape[1:], "sum"))
    for axis in {len(shape) - 1, 0} if shape else ():
        size = shape[axis]
        for blocks in (2, 3, 4):
            if size % blocks == 0 and size >= 2 * blocks:
                width = size // blocks
                for k in range(blocks):
                    forms.append((f"block {k + 1} of {blocks}", shape[:axis] + (width,) + shape[axis + 1:],
                                  (axis, k * width, (k + 1) * width)))
    return tuple(forms)


def _take(value, take):
    if take is None:
        return value
    if take == "T":
        return value.T
    if take == "sum":
        return value.sum(axis=0)
    axis, start, stop = take                          # what np.split gives, without its overhead
    return value[(slice(None),) * axis + (slice(start, stop),)]


class _Index:
    """The student's values, and their forms (``_forms``), grouped by shape for one vectorised comparison per
    quantity. A shape's group is made when a reference quantity of that shape is first looked for: most forms
    have a shape no quantity has."""

    def __init__(self, records):
        self.records, self.groups = records, {}
        self.of_shape = {}                             # a record's shape -> its indices, in order
        for j, record in enumerate(records):
            self.of_shape.setdefault(record.value.shape, []).append(j)
        self.forms = {}                                # a form's shape -> [(record shape, place in its forms)]
        for shape in self.of_shape:
            for place, (_, form_shape, _) in enumerate(_forms(shape)):
                self.forms.setdefault(form_shape, []).append((shape, place))

    def _group(self, shape):
        """(student indices, hows, matrix of the raveled values) of every form of ``shape``, in the student's
        order (and for one value, in the order of its forms)."""
        rows = sorted((j, place, shape_from) for shape_from, place in self.forms.get(shape, ())
                      for j in self.of_shape[shape_from])
        if not rows:
            return None
        forms = [_forms(shape_from)[place] for _, place, shape_from in rows]
        matrix = np.stack([_take(self.records[j].value, take).ravel() for (j, _, _), (_, _, take) in zip(rows, forms)])
        return [j for j, _, _ in rows], [how for how, _, _ in forms], matrix

    def find(self, value, after=-1, only=None):
        """[(student index, how)] of the values equal to ``value`` among those assigned after the student's
        index ``after`` (``only``: among the views of that student index alone)."""
        if value.shape not in self.groups:
            self.groups[value.shape] = self._group(value.shape)
        group = self.groups[value.shape]
        if group is None:
            return []
        indices, hows, matrix = group                  # rows in the student's order: a slice is a range of it
        if only is None:
            low, high = bisect.bisect_right(indices, after), len(indices)
        else:
            low, high = bisect.bisect_left(indices, only), bisect.bisect_right(indices, only)
        if low >= high:
            return []
        hits = np.flatnonzero(_close_rows(matrix[low:high], value.ravel()))[:MATCHES_KEPT]
        return [(indices[low + h], hows[low + h]) for h in hits]


@dataclasses.dataclass
class Finding:
    wrong: int                   # index of the first wrong reference quantity
    right: list                  # indices of the reference quantities found right
    found: dict                  # reference index -> [(student index, how)]
    after: int = -1              # the student's values of what it reads end here


def first_wrong(reference, student, reference_complete=True, student_complete=True, settled=frozenset(),
                deadline=None):
    """A ``Finding`` for the first wrong quantity, or None if every reference quantity is right (or none can be
    named). ``settled``: indices of reference quantities known right (a forward whose graded outputs matched).
    A trace cut short (``tracing``'s limits) hides things: with the reference's cut, a quantity no record in it
    reads may be read, and so vouched for, past the cut; with the student's, a quantity not found may come past
    the cut. Neither is named then: only what the traces show is. ``deadline`` (``time.monotonic()``): past it,
    TimeoutError."""
    index = _Index(student)
    names, names_in = {}, {}                           # base name (and function) -> the student's indices
    for j, s in enumerate(student):                    # assigning it, in order
        names.setdefault(_base(s.name), []).append(j)
        names_in.setdefault((s.function, _base(s.name)), []).append(j)
    found, at, bounds = {}, {}, {}
    latest, latest_in_frame = -1, {}                   # the student's index of the last quantity found (in q's call)
    compared = {}                                      # (q's call, name) -> the student's value last found for it
    contradicted = set()                               # quantities the student's own value of their name differs from
    with np.errstate(invalid="ignore", over="ignore"):   # (for _close_rows: once, not per comparison)
        for i, q in enumerate(reference):
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the diagnosis took too long")
            # only values assigned after the student's values of what q reads (not an earlier step's); a value that
            # reads nothing found: after what its own call computed before it, else after what was computed just
            # before it. Not after all its call computed before it: statements that do not read each other may come
            # in any order (dx and dh before the weights' gradients)
            after = max((at[p] for p in q.reads if p in at), default=None)
            if after is None:
                after = latest_in_frame.get(q.frame, latest)
            # … and for a name the student uses too, only its next assignment (d_prev must not stand in for d_state,
            # nor next step's value for this one), after the one found for this name's previous assignment in the
            # same call: a loop's iterations are compared in order, the n-th with the n-th, even when what they
            # read (a dict, a loop variable) is not a value of its own
            # (the name in q's function: a caller's `ext` is not its callee's `ext`)
            named = names_in.get((q.function, _base(q.name))) or names.get(_base(q.name), [])
            key = (q.frame, _base(q.name))
            if named:
                after = max(after, compared.get(key, -1))
            k = bisect.bisect_right(named, after)
            found[i] = index.find(q.value, only=named[k]) if k < len(named) else index.find(q.value, after)
            if found[i] and k < len(named):
                compared[key] = named[k]
            elif k < len(named) and student[named[k]].value.shape == q.value.shape:   # (else another quantity)
                contradicted.add(i)
            if found[i]:
                at[i] = latest = latest_in_frame[q.frame] = min(j for j, _ in found[i])
            bounds[i] = after
    children = [[] for _ in reference]
    for i, q in enumerate(reference):
        if re.fullmatch(r"return of .*\[\d+\]", q.name):   # one element of a returned tuple: it reads every
            continue                                      # element's name, and vouches for none but its own
        for p in q.reads:
            children[p].append(i)
    # the records of one statement (a, b = f(…)) read the same things: one vouches for them only with the others
    statement = [i if i == 0 or (reference[i - 1].frame, reference[i - 1].line) != (q.frame, q.line) else None
                 for i, q in enumerate(reference)]
    for i in range(1, len(reference)):
        statement[i] = statement[i - 1] if statement[i] is None else statement[i]
    members = {}
    for i, first in enumerate(statement):
        members.setdefault(first, []).append(i)
    right = [False] * len(reference)
    for i in reversed(range(len(reference))):          # found, or read by something right (inline)
        # a value the student computes inline is vouched for by what reads it, one of their own of its name
        # that differs is not (a mask read a row at a time: its readers are right until a padded step)
        right[i] = bool(found[i]) or (i not in contradicted and any(all(right[m] for m in members[statement[c]])
                                                                     for c in children[i])) \
            or _given(reference[i], names) or i in settled or _in_handout(reference[i])
    found_after = [False] * len(reference)            # some later quantity was found: the student got past it
    for i in reversed(range(len(reference) - 1)):
        found_after[i] = found_after[i + 1] or bool(found[i + 1])
    for i, q in enumerate(reference):
        if not right[i] and all(right[p] for p in q.reads):
            if (reference_complete or children[i]) and (student_complete or found_after[i]):
                return Finding(i, [k for k in range(i) if right[k]], found, bounds[i])
    return None


def _in_handout(q):
    """Whether q is computed in a function the handout gives whole (``_lse``, ``_shift``): its values are judged
    by what reads them, the student's own, never named wrong themselves. What the student passed it, or a call
    of it their loop never made, shows in the student's value that reads its result (their inline ``norm``, for
    the solution's ``_lse_last``, is named the same way)."""
    return handout_function(q.file, q.function)


def _given(q, names):
    """Whether q, computed from nothing the trace holds, is judged by what reads it rather than named wrong
    itself: how the solution starts a sum or a state (``total = 0.0``, ``h = np.zeros(...)``: a scalar or zeros,
    which a student may start otherwise, with None or the first term), or a value the student's code never
    names (``names``: the student's base names), read from the parameters, the cache or a provided helper
    (``act_grad = 1 - cache.h_t ** 2``, ``return of _bias``), which the student may write inline or leave out:
    the first wrong thing is then what reads it, the student's own line."""
    return not q.reads and (q.value.ndim == 0 or not q.value.any() or _base(q.name) not in names)


def _compatible(q, value):
    """How ``value`` could hold q: '' same shape, 'transposed', 'block' (q is one block of it), or None."""
    if value.shape == q.shape:
        return ""
    if q.ndim == 2 and value.shape == q.shape[::-1]:
        return "transposed"
    if value.ndim == q.ndim and value.ndim >= 1:
        ratios = [a / b if b else 0 for a, b in zip(value.shape, q.shape)]
        if sorted(ratios)[:-1] == [1] * (len(ratios) - 1) and max(ratios) in (2, 3, 4):
            return "block"
    return None


def candidate(finding, reference, student):
    """The student's value nearest to the wrong quantity: index into ``student``, or None. Its name's next
    assignment after its inputs of a shape that could hold it, if the student uses the name; else a value of a
    compatible shape that matches nothing in the reference, computed in the same function, a like name first
    (another function's value of another name is another quantity: a beam's prefix is no cutoff score)."""
    q = reference[finding.wrong]
    named = [j for j in range(finding.after + 1, len(student)) if _base(student[j].name) == _base(q.name)
             and _compatible(q.value, student[j].value) is not None]     # of another shape: another quantity
    frame = _call_frame(finding, reference, student)
    if frame is not None and (not named or student[named[0]].frame != frame):
        # none after its inputs in the student's call of q: the value that call kept of that name (assigned
        # before its loop and never again), not a later call's
        kept = [j for j in range(finding.after + 1) if student[j].frame == frame
                and _base(student[j].name) == _base(q.name) and _compatible(q.value, student[j].value) is not None]
        if kept:
            return kept[-1]
    if named:
        return named[0]
    matched_student = {j for hits in finding.found.values() for j, _ in hits}
    ranked = []
    for j in range(finding.after + 1, len(student)):
        how = _compatible(q.value, student[j].value) if student[j].function == q.function else None
        if how is not None:
            similarity = difflib.SequenceMatcher(None, _base(student[j].name), _base(q.name)).ratio()
            ranked.append((j in matched_student, how != "", -round(similarity, 1), j))
    return min(ranked)[-1] if ranked else None


@functools.lru_cache(maxsize=4096)             # a trace names a few quantities many times
def _base(name):
    return re.sub(r"\s+", "", name.replace("'", '"'))


def _close(a, b):
    return compare.close(a, b, equal_nan=True)


def kind_of_difference(got, expected, previous=(), gates=(), function=None, hidden=None):
    """The kind of difference between a student's value and the expected one, in words ('' if none known), each
    said only when its definition holds: ``previous``, the quantity's reference value at its assignment before
    this one, with the function that made it (None: in this same call); ``function``: this value's."""
    if got.shape != expected.shape:
        if got.ndim == 2 and got.shape == expected.shape[::-1] and _close(got.T, expected):
            return "transposed"
        return ""
    finite = np.isfinite(expected) & np.isfinite(got)
    if np.abs(expected[finite]).max(initial=0) > ATOL and _close(got, -expected):
        return "the opposite sign"
    for earlier, made_in in previous:
        if earlier.shape == got.shape and _close(got, earlier):
            if made_in is None:                      # the same call: a loop's update (a layer's, a direction's)
                return "the value it had before its previous update in this call"
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
        if got.size > 1 and abs(factor - 1) > 1e-6 and np.allclose(ratios, factor, rtol=1e-6) and _close(got, factor * expected):
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
        bad = [not _close(a, b) for a, b in zip(np.split(got, count, axis=axis), np.split(expected, count, axis=axis))]
        if sum(bad) == 1:
            k = bad.index(True)
            where = "columns" if axis == expected.ndim - 1 and expected.ndim > 1 else "rows"
            if expected.ndim == 1:
                where = "entries"
            size = expected.shape[axis] // count
            return f"only gate {gates[k]}'s block differs ({where} {k * size}:{(k + 1) * size})"
    return ""


def _first_difference(got, expected, other=None, lattice=None):
    """'got 0.123 at [0, 2], expected 0.456' at the first entry that differs; ``other``: the name of the
    quantity ``expected`` is, when ``got`` is a value of another name ('…, where `act_grad` is 0.456');
    ``lattice``: a CTC case's extended symbols, whose state s an array over them names ('… at [3] (s = 3, the
    2nd label, symbol 2)')."""
    if got.shape != expected.shape:
        return f"shape {got.shape}, " + (f"where `{other}` has shape {expected.shape}" if other else
                                         f"expected {expected.shape}")
    with np.errstate(invalid="ignore"):
        bad = ~(np.isclose(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True) | (got == expected))
    if not bad.any():
        return ""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    at = f" at {list(first)}" if first else ""
    if first and lattice is not None and got.shape[-1] == len(lattice) > 1:
        at += f" ({lattice_state(first[-1], lattice)})"
    return f"got {got[first]:.6g}{at}, " + (f"where `{other}` is {expected[first]:.6g}" if other else
                                            f"expected {expected[first]:.6g}")


def _ordinal(k):
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def lattice_state(s, extended):
    """'s = 4, the blank between the 2nd and 3rd labels' for state s of an extended target (blank, label,
    blank, …, blank)."""
    labels = len(extended) // 2
    if s % 2:
        return f"s = {s}, the {_ordinal(s // 2 + 1)} label, symbol {int(extended[s])}"
    if s == 0:
        return "s = 0, the blank before the 1st label"
    if s // 2 == labels:
        return f"s = {s}, the blank after the last label"
    return f"s = {s}, the blank between the {_ordinal(s // 2)} and {_ordinal(s // 2 + 1)} labels"


# ---- the report

def _equation(text):
    """A solution line as an equation: its code, then its comment in brackets."""
    code, _, comment = text.partition("#")
    code, comment = code.strip(), comment.strip()
    return f"{code}   ({comment})" if comment else code


def _names(items):
    items = list(dict.fromkeys(items))
    if len(items) > SHOWN_RIGHT:
        items = items[:SHOWN_RIGHT - 1] + [f"{len(items) - SHOWN_RIGHT + 1} more"]
    return ", ".join(f"`{n}`" if not n[0].isdigit() else n for n in items[:-1]) + \
        (" and " if len(items) > 1 else "") + (f"`{items[-1]}`" if not items[-1][0].isdigit() else items[-1])


def _what_is_right(finding, reference, student, callers=None, besides=()):
    """'your RNNCell.forward; in RNNCell.backward, `dh_t` and `da` match the reference': the functions before the
    wrong quantity's (but those its call was made from, still under way: ``callers``, a trace's), and the
    student's own values found right in its call, by the student's names (but ``besides``: a stray write's)."""
    q = reference[finding.wrong]
    calling, frame = set(), q.frame
    while callers and frame in callers and frame not in calling:
        calling.add(frame)
        frame = callers[frame][0]
    calling = {r.function for r in reference if r.frame in calling - {q.frame} | {frame}}
    earlier = [f for f in dict.fromkeys(r.function for r in reference[:finding.wrong])
               if f != q.function and f not in calling][-3:]
    same = [student[min(j for j, _ in finding.found[k])].name for k in finding.right
            if reference[k].frame == q.frame and finding.found.get(k)]
    same = [name for name in same if not name.startswith("return of") and name not in besides
            and _base(name) != _base(q.name)]          # (right at earlier steps: said by the "when" below)
    words = []
    files = {r.function: r.file for r in reference}
    earlier = [f for f in earlier if not f.rpartition(".")[2].startswith("_")     # helpers: named where they fail
               and "<locals>" not in f and not handout_function(files[f], f)]        # and the handout's: not yours
    if earlier and all(any(reference[k].function == f for k in finding.right) for f in earlier):
        wrong_before = [k for k in range(finding.wrong) if k not in set(finding.right)
                        and reference[k].function in earlier]
        if not wrong_before:
            words.append(f"your {_names(earlier).replace('`', '')}")
    if same:
        verb = "matches" if len(set(same)) == 1 else "match"
        words.append(f"in {q.function}, {_names(same[-SHOWN_RIGHT:])} {verb} the reference")
    return "; ".join(words)


def _index_of(trace, record):
    """``record``'s place in ``trace`` (by identity; a trace's records are distinct objects)."""
    if trace.places is None:
        trace.places = {id(r): k for k, r in enumerate(trace.records)}
    return trace.places.get(id(record), -1)


def _shown(record):
    """'  your `da` at FILE:LINE:' and the statement, or '  `total` in the provided _lse at …' for a value
    computed in a function the handout gives whole: only the student's own code is called theirs."""
    if handout_function(record.file, record.function):
        where = f"  `{record.name}` in the provided {record.function} at {record.file}:{record.line}"
    else:
        where = f"  your `{record.name}` at {record.file}:{record.line}{_when(record)}"
    return where + (":\n" + textwrap.indent(record.text, "    ") if record.text else "")


def _called_from(trace, record, levels=2, across_files=False, until_own=False):
    """'called from ctc.py:112 (which gives `la[t]`): <line>' when ``record`` was computed in a helper of the
    same file (or in any call, ``across_files``): the line that called it is where the student wrote the call.
    ``until_own``: up to the first call made from the student's own code, which is 'your line'."""
    lines, frame = [], record.frame
    functions = {r.frame: (r.file, r.function) for r in trace.records} if until_own else {}
    while frame in trace.callers and len(lines) < levels:
        caller, file, line, text = trace.callers[frame]
        if file != record.file and not across_files:
            break
        own = until_own and caller in functions and not handout_function(*functions[caller])
        gives = [r for r in trace.records if r.frame == caller and r.line == line]
        # the iteration this call was made in: that of the first value its line gave after the record shown
        after = next((r for r in gives if _index_of(trace, r) > _index_of(trace, record)), None)
        about = ([_when(after)[2:-1]] if after is not None and after.at else []) + (
            [f"which gives {_names([r.name for r in gives])}"] if gives else [])
        lines.append(f"    called from {'your line ' if own else ''}{file}:{line}" +
                     (f" ({'; '.join(about)})" if about else "") +
                     (":\n" + textwrap.indent(text, "      ") if text else ""))
        if own:
            break
        frame = caller
    return lines


def forward_records(trace):
    """Indices of ``trace``'s records computed in a forward call or in what one called."""
    function = {r.frame: r.function for r in trace.records}
    memo = {}

    def in_forward(frame):
        seen = []
        while frame not in memo:
            seen.append(frame)
            if function.get(frame, "").rpartition(".")[2] == "forward":
                answer = True
                break
            if frame not in trace.callers or len(seen) > 64:
                answer = False
                break
            frame = trace.callers[frame][0]
        else:
            answer = memo[frame]
        memo.update(dict.fromkeys(seen, answer))
        return answer
    return frozenset(i for i, r in enumerate(trace.records) if in_forward(r.frame))


def explain(reference, student, config=None, wrong_outputs=(), forward_right=False, deadline=None, lattice=None):
    """The diagnosis as a few lines of text, from two ``Trace``s, or [] when there is nothing to say;
    ``forward_right``: the forward's own graded outputs matched (a layer whose backward alone differs), so no
    value of a forward call is the first wrong one. ``deadline``: as for ``first_wrong``. ``lattice``: a CTC
    case's extended symbols, which name a lattice state where a value over them first differs."""
    settled = forward_records(reference) if forward_right else frozenset()
    finding = first_wrong(reference.records, student.records, not reference.lost, not student.lost, settled,
                          deadline)
    symbols = (config or {}).get("symbol_set")
    if finding is not None and isinstance(symbols, list) and all(isinstance(c, str) for c in symbols):
        student = _spelled(student, symbols)              # a beam's prefix as the student reads it: 'ba'

    if finding is None:
        return []
    ref, mine = reference.records, student.records
    q = ref[finding.wrong]
    gates = GATES.get((config or {}).get("cell"), ())
    reads = [_whole(ref, p) for p in q.reads]
    lines = [f"Where your values first go wrong: `{q.name}`" +
             (f" (computed from {_names(reads)})" if reads else "") + (f": {_equation(q.text)}" if q.text else "")]
    j = candidate(finding, ref, mine)
    stray = _stray_write(finding, ref, mine, j)
    misplaced = _misplaced(finding, ref, mine, j) if stray is None else None
    placed_wrong = [mine[k].name for k in (stray, misplaced and misplaced[0]) if k is not None]
    right = _what_is_right(finding, ref, mine, reference.callers, placed_wrong)
    if right:
        lines.append(f"  Right so far: {right}.")
    if stray is not None:
        lines += _stray_lines(finding, ref, mine, stray)
        j = None if j is not None and mine[j].line == mine[stray].line else j
    elif misplaced is not None:
        lines += _misplaced_lines(mine, misplaced)
    lines += _in_place(ref, mine, j if j is not None else finding.after + 1)
    if j is not None:
        s = mine[j]
        previous = [(r.value, None if r.frame == q.frame else r.function)
                    for r in ref[:finding.wrong] if _base(r.name) == _base(q.name)][-1:]
        hidden = (config or {}).get("H")
        kind = kind_of_difference(s.value, q.value, previous, gates, q.function,
                                  hidden if isinstance(hidden, int) else None)
        lines.append(_shown(s))
        # a value of another name is the nearest one, not the quantity: say whose value it is compared with
        other = q.name if _base(s.name) != _base(q.name) else None
        difference = "; ".join(t for t in (_first_difference(s.value, q.value, other, lattice), kind) if t)
        if difference:
            lines.append(f"    {difference}")
        if not kind and other is None:
            lines += _algebra(s.value, q, ref)
        lines += _never_updated(finding, ref, student, s)
        if handout_function(s.file, s.function):
            lines += _called_from(student, s, levels=3, across_files=True, until_own=True)
        elif not q.reads and not s.reads and s.frame in student.callers and _reads_given(s.text) \
                and _first_of_its_call(student, s):
            # computed from the call's arguments alone: the wrong value came in with the call, whose line (in
            # any file, and its caller's) is where to look
            lines.append(f"    it reads only what {s.function} was given: if this line is right, look at what the "
                         "call passed in")
            lines += _called_from(student, s, across_files=True)
        else:
            lines += _called_from(student, s)
    else:
        named = [s for s in mine[finding.after + 1:] if _base(s.name) == _base(q.name)]
        if named:                                      # the student's value of that name, in another shape
            s = named[0]
            lines.append(_shown(s))
            lines.append(f"    shape {s.value.shape}, expected {q.value.shape}")
            lines += _called_from(student, s)
        else:
            readers = [ref[i].name for i in range(finding.wrong + 1, len(ref)) if finding.wrong in ref[i].reads]
            lines.append("  no value of yours has its shape (an inline expression?)" +
                         (f"; it is read by {_names(readers)}" if readers else ""))
            lines += [line[2:] for line in _never_updated(finding, ref, student)]
            lines += [f"  {o}" for o in wrong_outputs[:2]]
    if student.lost:
        lines.append(f"  (the trace of your code stopped early: {student.lost})")
    return lines


def _spelled(trace, symbols):
    """``trace`` with each loop variable that holds a prefix of labels (1 = the first symbol; 0, the blank, is in
    no prefix) spelled in the case's symbols: ``prefix = 'ba'`` for ``(2, 1)``."""
    def spell(value):
        if isinstance(value, tuple) and all(1 <= v <= len(symbols) for v in value):
            return repr("".join(symbols[v - 1] for v in value))
        return value
    records = [dataclasses.replace(r, at=tuple((n, spell(v)) for n, v in r.at)) if r.at else r for r in trace.records]
    return dataclasses.replace(trace, records=records, places=None)


def _whole(reference, p):
    """The name to say for what a quantity reads: ``d_state`` for ``d_state[1]``, one part of a state tuple a
    statement assigned whole (its parts are the records beside it), which stands for the whole state (the
    read was of ``d_state``, and took the last part's record); the record's own name otherwise."""
    r = reference[p]
    match = re.fullmatch(r"(.+)\[\d+\]", r.name)
    if match and not r.name.startswith("return of"):
        part = re.compile(re.escape(match.group(1)) + r"\[\d+\]")
        for k in (p - 1, p + 1):
            if 0 <= k < len(reference) and reference[k].frame == r.frame and reference[k].line == r.line \
                    and part.fullmatch(reference[k].name):
                return match.group(1)
    return r.name


def _container(name):
    """``new_label`` of ``new_label[grown]``, ``ext`` of ``ext[1::2]``; None for a plain name."""
    match = re.fullmatch(r"(\w+)\[.*\]", _base(name))
    return match.group(1) if match and not name.startswith("return of") else None


def _stray_write(finding, reference, student, before=None):
    """The student's index of a value written into the wrong container, or None: an entry the reference never
    assigns in that function, of a container the wrong quantity is or reads, whose value is the reference's
    value of an entry of another container there (``ext[3::2] = …`` where the reference writes that value to
    ``skip[3::2]``; ``new_label[prefix] = …`` in the loop that fills ``new_blank``). Only in the wrong
    quantity's call, before its own value (``before``: the student's index of it, if known). The value is right
    and in the wrong place, so it is never the first wrong quantity itself: what reads its container is. An
    entry merely indexed otherwise (``la[t, :]`` for ``la[t]``) is the same container's, never stray."""
    q = reference[finding.wrong]
    containers = {_container(r.name) or _base(r.name) for r in [q] + [reference[p] for p in q.reads]}
    written = {_base(r.name) for r in reference if r.function == q.function}
    for j in _same_call(finding, q, student, before):
        if _container(student[j].name) in containers and _base(student[j].name) not in written \
                and _entry_held(finding, reference, student, j, q.function, same_container=False) is not None:
            return j
    return None


def _same_call(finding, q, student, before):
    """The student's indices in the call that computed the wrong quantity q, before the student's value of it
    (``before``, when known); else those after what q reads, in q's function."""
    if before is not None:
        frame = student[before].frame
        return [j for j in range(before) if student[j].frame == frame]
    return [j for j in range(finding.after + 1, len(student)) if student[j].function == q.function]


def _misplaced(finding, reference, student, before):
    """``(student index, reference name)`` of a write into a container the wrong quantity is or reads, in its
    call, whose value is the reference's entry of that container under another index (``skip[2:-1:2] = …``
    holding what the reference writes to ``skip[3::2]``); or None."""
    q = reference[finding.wrong]
    containers = {_container(r.name) or _base(r.name) for r in [q] + [reference[p] for p in q.reads]}
    for j in _same_call(finding, q, student, before):
        s = student[j]
        container = _container(s.name)
        if container not in containers:
            continue
        theirs = _entry_held(finding, reference, student, j, q.function, same_container=True)
        if theirs is not None:
            return j, theirs
    return None


def _misplaced_lines(student, misplaced):
    j, theirs = misplaced
    s = student[j]
    return [_shown(s), f"    this value is the reference's `{theirs}`, written here to `{s.name}`, and "
                       f"`{_container(s.name)}` ends up unlike the reference's: check which entries this write reaches"]


def _algebra(got, q, reference):
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
        name = f"`{r.name}`" + (" (its value before this line)" if _base(r.name) == _base(q.name) else "")
        with np.errstate(all="ignore"):
            said = None
            if np.abs(value).max(initial=0) > ATOL:
                if _close(got + value, expected):
                    said = f"your value plus {name} is the reference's: the line misses that term"
                elif _close(got - value, expected):
                    said = f"your value minus {name} is the reference's: the line adds that term once too often"
            if said is None and not _close(value, np.ones_like(value)) and np.abs(got).max(initial=0) > ATOL:
                if _close(got * value, expected):
                    said = f"your value times {name} is the reference's: the line misses that factor"
                elif (np.abs(value) > ATOL).all() and _close(got / value, expected):
                    said = f"your value divided by {name} is the reference's: the line has that factor once too often"
        if said:
            return [f"    Hint: {said}"]
    with np.errstate(all="ignore"):                  # a log-space value and its probability taken one for the other
        if (expected > 0).all() and _close(got, np.log(expected)):
            return ["    Hint: your value is the log of the reference's: a log-probability where a probability "
                    "belongs (np.exp it)"]
        if _close(got, np.exp(expected)) and not _close(expected, np.exp(expected)):
            return ["    Hint: your value is the exp of the reference's: a probability where a log-probability "
                    "belongs (np.log it, or stay in log space)"]
    return []


def _call_frame(finding, reference, student):
    """The student's frame of the call the wrong quantity is computed in: that of the student's value found for
    the last earlier quantity of the same reference call; None if none was found."""
    q = reference[finding.wrong]
    return next((student[finding.found[i][0][0]].frame for i in reversed(range(finding.wrong))
                 if reference[i].frame == q.frame and finding.found.get(i)), None)


def _never_updated(finding, reference, student, s=None):
    """A note when, in the student's call of the wrong quantity q (the call an earlier value of q's found, else
    that of the student's value shown, ``s``), q's name is assigned fewer times than the reference assigns it
    there: once, where the reference assigns it at every step of a loop (a carried ``d_state`` never
    reassigned), or in a loop that makes fewer iterations (``range(T - 2, 0, -1)`` for ``range(T - 2, -1, -1)``).
    Said only when the counts show it, over a whole trace."""
    q = reference[finding.wrong]
    frame = _call_frame(finding, reference, student.records)
    if frame is None and s is not None and s.function == q.function:
        frame = s.frame
    if frame is None or student.lost:
        return []
    theirs = sum(1 for r in reference if r.frame == q.frame and _base(r.name) == _base(q.name))
    mine = [r for r in student.records if r.frame == frame and _base(r.name) == _base(q.name)]
    if len(mine) == 1 and theirs >= 3 and not mine[0].loop:
        where = "here" if mine[0] is s else f"at {mine[0].file}:{mine[0].line}"
        return [f"    your `{mine[0].name}` is assigned once in this call, {where}; the reference assigns it {theirs} "
                "times in this case, again at every step of its loop: your loop never updates it"]
    if 1 <= len(mine) < theirs and mine[-1].loop:
        times = "once" if len(mine) == 1 else f"{len(mine)} times"
        return [f"    your `{mine[-1].name}` is assigned {times} in this call, the reference's {theirs} times: your "
                f"loop at {mine[-1].file}:{mine[-1].loop} makes fewer iterations than the reference's"]
    return []


def _first_of_its_call(trace, record):
    """Whether ``record`` is the first value its call computed: it can read only what the call was given (not a
    loop's variables, nor anything the call computed before it)."""
    return next(r for r in trace.records if r.frame == record.frame) is record


def _parsed(text):
    """A statement's source from the child, parsed (at most CODE_LINES lines of 200 characters), or None."""
    try:
        return ast.parse(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _reads_given(text):
    """Whether a statement's source reads a name (a parameter, when nothing it reads was assigned in the call);
    False for one that reads constants alone (``la[0, ..., :2] = 0.0``) or does not parse."""
    tree = _parsed(text)
    if tree is None:
        return False
    values = [node.value for node in tree.body if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))]
    return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in MODULES
               for value in values if value is not None for node in ast.walk(value))


def _in_place(reference, student, before):
    """For the first write, before the student's index ``before``, into an array the student's call did not
    make: one the reference makes in that function and never writes into there (``h[...] = …`` in a forward,
    over the ``h`` its cache keeps), or one the student's own ``la = ly`` made another name of (``la[…] = …``
    writes into ``ly``, which the caller reads again). Where, and that changing it in place changes it wherever
    it is kept. [] if there is none."""
    made, written = set(), set()
    for r in reference:
        made.add((r.function, _base(r.name)))
        if _container(r.name):
            written.add((r.function, _container(r.name)))
    aliases = {}                                       # (frame, name) -> the name it was made another name of
    for s in student[:max(before, 0)]:
        container = _container(s.name)
        if not container:
            other = _plain_copy(s.text, s.name)
            aliases[(s.frame, s.name)] = other
            continue
        alias = aliases.get((s.frame, container))
        if alias:
            return [_shown(s), f"    `{container}` is `{alias}` itself (`{container} = {alias}` makes no copy): "
                               f"writing into it changes `{alias}` too, wherever it is read again"]
        if (s.function, container) in made and (s.function, container) not in written:
            return [_shown(s), f"    the reference never writes into `{container}` in {s.function}: writing into it "
                               "in place changes it wherever it is kept too (a cache, the caller's array)"]
    return []


def _plain_copy(text, name):
    """``ly`` for a statement ``la = ly`` assigning ``name`` another name's array (no copy made); else None."""
    tree = _parsed(text)
    if tree is not None and len(tree.body) == 1 and isinstance(tree.body[0], ast.Assign) and len(tree.body[0].targets) == 1:
        target, value = tree.body[0].targets[0], tree.body[0].value
        if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Name):
            return value.id
    return None


def _entry_held(finding, reference, student, j, function, same_container):
    """The name of the reference's entry in ``function`` whose value the student's write j holds: one of the
    container j writes into under another index (``same_container``), or one of another container; or None."""
    container, name = _container(student[j].name), _base(student[j].name)
    for i, hits in finding.found.items():
        r = reference[i]
        theirs = _container(r.name)
        fits = theirs == container and _base(r.name) != name if same_container else theirs not in (None, container)
        if r.function == function and fits and any(k == j for k, _ in hits):
            return r.name
    return None


def _stray_lines(finding, reference, student, j):
    """The report's lines for a stray write (``_stray_write``): where, and whose value it is."""
    s, q = student[j], reference[finding.wrong]
    theirs = _entry_held(finding, reference, student, j, q.function, same_container=False)
    return [_shown(s), f"    the reference never assigns `{s.name}` in {q.function}; this value is its `{theirs}`, "
                       f"so `{_container(s.name)}` holds an entry it should not"]


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


def reference_trace(part_data, k, child=None):
    """The solution's ``Trace`` of case k: stored with the reference data, or traced now by the solution's
    child (a fresh seed: in a child of ``child``'s limits and Python, a ``ChildSpec``), without its source
    text."""
    stored = (part_data.traces or [None] * (k + 1))[k]
    if stored is not None:
        return parse(*stored)
    if part_data.solution is None:
        return None
    limits, python = (child.limits, child.python) if child else (childspec.DEFAULT, None)
    solution = childspec.ChildSpec(part_data.solution, limits, python=python)
    runs = [trace_case(solution, part_data.configs[k], part_data.inputs[k]) for _ in range(2)]
    return None if None in runs else without_source(stable(runs[0][0], runs[1][0]))


def without_source(trace):
    """``trace`` without the text of any line: the solution's lines never reach a student's feedback (the stored
    traces hold none either: ``generate``), only its names, places and values."""
    return Trace([dataclasses.replace(r, text="") for r in trace.records], trace.lost,
                 {frame: (*entry[:3], "") for frame, entry in trace.callers.items()})


class Budget:
    """The seconds the diagnoses of one submission may take, its parts together (each part's at most
    DIAGNOSIS_SECONDS): the traced run of the student's code, its trace's transfer and parsing, and the
    matching. Forged or stalling traces in every failing part cost it SUBMISSION_SECONDS in all, and a few
    diagnoses' more while they end (parts are judged at once)."""

    def __init__(self, seconds=SUBMISSION_SECONDS):
        self.left, self._lock = seconds, threading.Lock()

    def deadline(self):
        """When a diagnosis starting now must stop, or None if none may start."""
        with self._lock:
            return time.monotonic() + min(DIAGNOSIS_SECONDS, self.left) if self.left > 0 else None

    def spend(self, seconds):
        with self._lock:
            self.left -= seconds


def diagnose_case(part_data, k, child, wrong=(), budget=None):
    """Lines saying where case k of the submission in ``child.root`` first goes wrong, traced in a child of
    ``child`` (a ``ChildSpec``); [] if that cannot be said. ``wrong``: (label, got, expected) of the outputs
    that differ; ``budget``: the submission's ``Budget`` (a fresh one if None)."""
    budget = budget or Budget()
    deadline, start = budget.deadline(), time.monotonic()
    if deadline is None:
        return []
    try:
        reference = reference_trace(part_data, k, child)
        if reference is None or not reference.records:
            return []
        # the traced run is the student's code, which may stall when it sees a tracer: it gets what is left of
        # the diagnosis's time, not the part's, and its trace's transfer and parsing count too
        left = deadline - time.monotonic()
        if left <= 0:
            return []
        limits = dataclasses.replace(child.limits, timeout=min(child.limits.timeout, left))
        traced = trace_case(dataclasses.replace(child, limits=limits), part_data.configs[k], part_data.inputs[k])
        if traced is None:
            return []
        # a layer's forward outputs graded right in this case: what differs comes from its backward
        forward_right = "Y" in part_data.expected[k] and not any(
            label.startswith(("Y", "state_T")) for label, _, _ in wrong)
        extended = part_data.inputs[k].get("extended_symbols")          # a CTC case's lattice, to name its states
        return explain(reference, traced[0], part_data.configs[k], gate_blocks(wrong, part_data.configs[k]),
                       forward_right, deadline, extended if extended is not None and extended.ndim == 1 else None)
    except Exception:                   # the diagnosis is a courtesy: it never costs the grade or the run
        return []
    finally:
        budget.spend(time.monotonic() - start)

"""Find where a failing case first goes wrong: the student's first wrong quantity, from two ``traces.Trace``s.

The grader re-runs the first failing case of a part in a fresh child with tracing on (``tracing``): every
value the submission's own frames assign comes back, with its file:line. The reference trace is the same
record of the solution on the same case. Each reference record is a named quantity q with the records it
reads, in computation order. ``first_wrong`` matches them in passes, on plain arrays:

1. *found* (``_found``): q is found if a student value equals it (``allclose``), also up to a transpose, as one
   gate block of a stacked array, or summed over the batch (axis 0); the value must be assigned after the
   student's values of what q reads (for q that reads nothing found, after what q's call computed before it),
   and, if the student uses q's name, be that name's next assignment (so d_prev never stands in for d_state,
   nor one step's value for the next one's).
2. *right* (``_right``): q is right if found, or if a statement computed from it is right (the student wrote q
   inline). A quantity computed from nothing the trace holds is judged by what reads it when it is a sum's
   start (a scalar or zeros) or a name the student never uses (``_given``).
3. *first wrong* (``_first``): the first q, in the solution's order, that is not right while everything it
   reads is right.

``candidate`` then picks the student's value nearest to it: the student's next assignment of q's name after
its inputs, else a value of a compatible shape that matches nothing in the reference (a like name breaks ties).
``wording`` says all this in the report.
"""
import bisect
import dataclasses
import difflib
import functools
import re
import time

import numpy as np

from autograder.diagnosis import compare
from autograder.parts.driver import handout_function  # a plain table; imported now, never after

RTOL, ATOL = compare.RTOL, compare.ATOL      # one tolerance for judging and for diagnosing


# what the parent spends on one student trace, whatever the child sent (a forged trace of 5,000 copies of a value
# the reference holds 546 times kept every match of every one: 11 million, 1.6 GB and 108 s): the student's
# values kept per reference quantity (the first ones, in the student's order: the earliest is the one used), and
# the seconds the matching may take before the diagnosis is given up (never the grade)
MATCHES_KEPT = 16


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


@dataclasses.dataclass
class _Found:
    """What the first pass finds: reference index -> [(student index, how)], the student's index each found
    quantity is first matched at, the bound each was looked for after, and the quantities the student's own
    value of their name contradicts."""
    found: dict
    at: dict
    bounds: dict
    contradicted: set


def first_wrong(reference, student, reference_complete=True, student_complete=True, settled=frozenset(),
                deadline=None):
    """A ``Finding`` for the first wrong quantity, or None if every reference quantity is right (or none can be
    named). ``settled``: indices of reference quantities known right (a forward whose graded outputs matched).
    A trace cut short (``tracing``'s limits) hides things: with the reference's cut, a quantity no record in it
    reads may be read, and so vouched for, past the cut; with the student's, a quantity not found may come past
    the cut. Neither is named then: only what the traces show is. ``deadline`` (``time.monotonic()``): past it,
    TimeoutError."""
    names = {}                                         # base name -> the student's indices assigning it, in order
    for j, s in enumerate(student):
        names.setdefault(base_name(s.name), []).append(j)
    passed = _found(reference, student, deadline)
    right, children = _right(reference, passed, names, settled)
    return _first(reference, passed, right, children, reference_complete, student_complete)


def _found(reference, student, deadline):
    """The first pass: each reference quantity looked for among the student's values (see the module
    docstring), in the solution's order."""
    index = _Index(student)
    names, names_in = {}, {}                           # base name (and function) -> the student's indices
    for j, s in enumerate(student):                    # assigning it, in order
        names.setdefault(base_name(s.name), []).append(j)
        names_in.setdefault((s.function, base_name(s.name)), []).append(j)
    passed = _Found({}, {}, {}, set())
    latest, latest_in_frame = -1, {}                   # the student's index of the last quantity found (in q's call)
    compared = {}                                      # (q's call, name) -> the student's value last found for it
    with np.errstate(invalid="ignore", over="ignore"):   # (for _close_rows: once, not per comparison)
        for i, q in enumerate(reference):
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the diagnosis took too long")
            # only values assigned after the student's values of what q reads (not an earlier step's); a value that
            # reads nothing found: after what its own call computed before it, else after what was computed just
            # before it. Not after all its call computed before it: statements that do not read each other may come
            # in any order (dx and dh before the weights' gradients)
            after = max((passed.at[p] for p in q.reads if p in passed.at), default=None)
            if after is None:
                after = latest_in_frame.get(q.frame, latest)
            # … and for a name the student uses too, only its next assignment (d_prev must not stand in for d_state,
            # nor next step's value for this one), after the one found for this name's previous assignment in the
            # same call: a loop's iterations are compared in order, the n-th with the n-th, even when what they
            # read (a dict, a loop variable) is not a value of its own
            # (the name in q's function: a caller's `ext` is not its callee's `ext`)
            named = names_in.get((q.function, base_name(q.name))) or names.get(base_name(q.name), [])
            key = (q.frame, base_name(q.name))
            if named:
                after = max(after, compared.get(key, -1))
            k = bisect.bisect_right(named, after)
            hits = index.find(q.value, only=named[k]) if k < len(named) else index.find(q.value, after)
            if hits and k < len(named):
                compared[key] = named[k]
            elif k < len(named) and student[named[k]].value.shape == q.value.shape:   # (else another quantity)
                passed.contradicted.add(i)
            if hits:
                passed.at[i] = latest = latest_in_frame[q.frame] = min(j for j, _ in hits)
            passed.found[i], passed.bounds[i] = hits, after
    return passed


def _right(reference, passed, names, settled):
    """The second pass, from the last quantity back: ``(right, children)``, whether each quantity is right
    (found, or read by a statement that is right: written inline) and the quantities that read each."""
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
        right[i] = bool(passed.found[i]) or (i not in passed.contradicted and any(
            all(right[m] for m in members[statement[c]]) for c in children[i])) \
            or _given(reference[i], names) or i in settled or _in_handout(reference[i])
    return right, children


def _first(reference, passed, right, children, reference_complete, student_complete):
    """The third pass: the ``Finding`` of the first quantity not right whose reads are all right, if the
    traces show it (see ``first_wrong``); else None."""
    found_after = [False] * len(reference)            # some later quantity was found: the student got past it
    for i in reversed(range(len(reference) - 1)):
        found_after[i] = found_after[i + 1] or bool(passed.found[i + 1])
    for i, q in enumerate(reference):
        if not right[i] and all(right[p] for p in q.reads):
            if (reference_complete or children[i]) and (student_complete or found_after[i]):
                return Finding(i, [k for k in range(i) if right[k]], passed.found, passed.bounds[i])
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
    return not q.reads and (q.value.ndim == 0 or not q.value.any() or base_name(q.name) not in names)


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
    assignment after its inputs of a shape that could hold it, in its function, if the student uses the name
    there (in any function, if the student's code never runs q's); else a value of a
    compatible shape that matches nothing in the reference, computed in the same function, a like name first
    (another function's value of another name is another quantity: a beam's prefix is no cutoff score)."""
    q = reference[finding.wrong]
    # of another shape: another quantity; of another function (when the student's code runs q's): another one too
    runs_it = any(s.function == q.function for s in student)
    named = [j for j in range(finding.after + 1, len(student)) if base_name(student[j].name) == base_name(q.name)
             and _compatible(q.value, student[j].value) is not None
             and (student[j].function == q.function or not runs_it)]
    frame = call_frame(finding, reference, student)
    reshaped = [j for j in range(finding.after + 1, len(student)) if student[j].frame == frame
                and base_name(student[j].name) == base_name(q.name)]
    if not named and reshaped and " passed to " in q.name:
        return None                   # the call's own next argument of that name, in another shape: said as such
    if frame is not None and (not named or student[named[0]].frame != frame):
        # none after its inputs in the student's call of q: the value that call kept of that name (assigned
        # before its loop and never again), not a later call's
        kept = [j for j in range(finding.after + 1) if student[j].frame == frame
                and base_name(student[j].name) == base_name(q.name) and _compatible(q.value, student[j].value) is not None]
        if kept:
            return kept[-1]
    if named:
        return named[0]
    matched_student = {j for hits in finding.found.values() for j, _ in hits}
    ranked = []
    for j in range(finding.after + 1, len(student)):
        how = _compatible(q.value, student[j].value) if student[j].function == q.function else None
        if how is not None:
            similarity = difflib.SequenceMatcher(None, base_name(student[j].name), base_name(q.name)).ratio()
            ranked.append((j in matched_student, how != "", -round(similarity, 1), j))
    return min(ranked)[-1] if ranked else None


@functools.lru_cache(maxsize=4096)             # a trace names a few quantities many times
def base_name(name):
    return re.sub(r"\s+", "", name.replace("'", '"'))


def close(a, b):
    return compare.close(a, b, equal_nan=True)


def call_frame(finding, reference, student):
    """The student's frame of the call the wrong quantity is computed in: that of the student's value found for
    the last earlier quantity of the same reference call; None if none was found."""
    q = reference[finding.wrong]
    return next((student[finding.found[i][0][0]].frame for i in reversed(range(finding.wrong))
                 if reference[i].frame == q.frame and finding.found.get(i)), None)

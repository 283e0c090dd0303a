"""The diagnosis in words: where a failing case first goes wrong, at the student's line, in the student's names.

``explain`` turns ``matching``'s finding into a few lines: the first wrong quantity and its equation, what is
right so far, the student's value and line (with the iteration it is from, and the line that called a helper),
got against expected at the first entry that differs, and the kind of difference when the values prove one
(``differences``). Without a candidate (an inline expression): the quantities that read it, and the gate block
the wrong outputs are confined to, if one. Nothing here raises into the grader: ``explain`` returns [] when it
cannot say anything.
"""
import ast
import dataclasses
import re
import textwrap

import numpy as np

from autograder.diagnosis import calls, differences, matching, traces
from autograder.diagnosis.matching import ATOL
from autograder.parts.driver import handout_function  # a plain table; imported now, never after

SHOWN_RIGHT = 4                  # right quantities named before the wrong one


MODULES = {"np", "numpy", "math"}              # names a statement reads that no call gives


def _when(record):
    """' (when t = 3, k = 1)' for a value computed in a loop, in the student's own names; '' otherwise."""
    if not record.at:
        return ""
    return " (when " + ", ".join(f"{name} = {value}" for name, value in record.at) + ")"


def _first_difference(got, expected, other=None, lattice=None):
    """'got 0.123 at [0, 2], expected 0.456' at the first entry that differs; ``other``: the name of the
    quantity ``expected`` is, when ``got`` is a value of another name ('…, where `act_grad` is 0.456');
    ``lattice``: a CTC case's extended symbols, whose state s an array over them names ('… at [3] (s = 3, the
    2nd label, symbol 2)')."""
    if got.shape != expected.shape:
        return f"shape {got.shape}, " + (f"where {calls.label(other)} has shape {expected.shape}" if other else
                                         f"expected {expected.shape}")
    with np.errstate(invalid="ignore"):
        bad = ~(np.isclose(got, expected, rtol=matching.RTOL, atol=ATOL, equal_nan=True) | (got == expected))
    if not bad.any():
        return ""
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    at = f" at {list(first)}" if first else ""
    if first and lattice is not None and got.shape[-1] == len(lattice) > 1:
        at += f" ({lattice_state(first[-1], lattice)})"
    return f"got {got[first]:.6g}{at}, " + (f"where {calls.label(other)} is {expected[first]:.6g}" if other else
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
            and not calls.argument(name)
            and matching.base_name(name) != matching.base_name(q.name)]          # (right at earlier steps: said by the "when" below)
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


def _shown(record):
    """'  your `da` at FILE:LINE:' and the statement, or '  `total` in the provided _lse at …' for a value
    computed in a function the handout gives whole: only the student's own code is called theirs."""
    if calls.argument(record.name):
        where = calls.shown(record, _when(record))
    elif handout_function(record.file, record.function):
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
        gives = [r for r in trace.records if r.frame == caller and r.line == line and not calls.argument(r.name)]
        # the iteration this call was made in: that of the first value its line gave after the record shown
        after = next((r for r in gives if traces.index_of(trace, r) > traces.index_of(trace, record)), None)
        about = ([_when(after)[2:-1]] if after is not None and after.at else []) + (
            [f"which gives {_names([r.name for r in gives])}"] if gives else [])
        lines.append(f"    called from {'your line ' if own else ''}{file}:{line}" +
                     (f" ({'; '.join(about)})" if about else "") +
                     (":\n" + textwrap.indent(text, "      ") if text else ""))
        if own:
            break
        frame = caller
    return lines


@dataclasses.dataclass(frozen=True)
class Case:
    """What a diagnosis knows of its case besides the two traces: its ``config`` and ``inputs`` (the arrays the
    driver gave it, whose parameters a hint may name), ``wrong_outputs`` (the gate blocks the wrong outputs are
    confined to, for the fallback), ``forward_right`` (the forward's own graded outputs matched: a layer whose
    backward alone differs, so no value of a forward call is the first wrong one), ``lattice`` (a CTC case's
    extended symbols, which name a lattice state where a value over them first differs) and ``raised`` (the
    student's run raised: a loop that stopped early stopped there, and is not said to make fewer iterations)."""
    config: dict = None
    inputs: dict = None
    wrong_outputs: tuple = ()
    forward_right: bool = False
    lattice: np.ndarray = None
    raised: bool = False              # the student's run of the case raised: its loops were cut short by it


def explain(reference, student, case=Case(), deadline=None):
    """The diagnosis of ``case`` (a ``Case``) as a few lines of text, from two ``traces.Trace``s, or [] when
    there is nothing to say. ``deadline``: as for ``matching.first_wrong``."""
    config, wrong_outputs, lattice = case.config, case.wrong_outputs, case.lattice
    settled = traces.forward_records(reference) if case.forward_right else frozenset()
    finding = matching.first_wrong(reference.records, student.records, not reference.lost, not student.lost, settled,
                          deadline)
    symbols = (config or {}).get("symbol_set")
    if finding is not None and isinstance(symbols, list) and all(isinstance(c, str) for c in symbols):
        student = _spelled(student, symbols)              # a beam's prefix as the student reads it: 'ba'
        reference = _spelled(reference, symbols)

    if finding is None:
        return []
    ref, mine = reference.records, student.records
    q = ref[finding.wrong]
    gates = differences.GATES.get((config or {}).get("cell"), ())
    reads = [_whole(ref, p) for p in q.reads]
    lines = [f"Where your values first go wrong: {calls.label(q.name)}" +
             (f" (computed from {_names(reads)})" if reads else "") + (f": {_equation(q.text)}" if q.text else "")]
    j = matching.candidate(finding, ref, mine)
    stray = _stray_write(finding, ref, mine, j)
    misplaced = _misplaced(finding, ref, mine, j) if stray is None else None
    placed_wrong = [mine[k].name for k in (stray, misplaced and misplaced[0]) if k is not None]
    right = _what_is_right(finding, ref, mine, reference.callers, placed_wrong)
    if right:
        lines.append(f"  Right so far: {right}.")
    never = calls.never_made(q, mine)
    lines += never
    if stray is not None:
        lines += _stray_lines(finding, ref, mine, stray)
        j = None if j is not None and mine[j].line == mine[stray].line else j
    elif misplaced is not None:
        lines += _misplaced_lines(mine, misplaced)
    else:
        lines += _narrow_write(finding, ref, mine, j)
    lines += _in_place(ref, mine, j if j is not None else finding.after + 1)
    if j is not None and mine[j].value.shape == q.value.shape and matching.close(mine[j].value, q.value):
        # the nearest value is right, where the reference computes it is not: another order or number of them
        lines += [_shown(mine[j]), f"    this value is right, but not at this point: your values of "
                                   f"{calls.label(q.name)} come in another order or number than the reference's"]
        lines += _elsewhere_in_the_loop(mine[j], q)
    elif j is not None:
        s = mine[j]
        before = [r for r in ref[:finding.wrong] if matching.base_name(r.name) == matching.base_name(q.name)][-1:]
        previous = [(r.value, None if r.frame == q.frame else r.function) for r in before]
        hidden = (config or {}).get("H")
        floats = s.kind == q.kind == "f"             # a kind of difference is a statement about numbers
        kind = differences.kind_of_difference(s.value, q.value, previous, gates, q.function,
                                              hidden if isinstance(hidden, int) else None) if floats else ""
        if kind == differences.BEFORE_UPDATE:
            kind = _before(before[0], q)
        lines.append(_shown(s))
        # a value of another name is the nearest one, not the quantity: say whose value it is compared with
        other = q.name if matching.base_name(s.name) != matching.base_name(q.name) else None
        difference = "; ".join(t for t in (_first_difference(s.value, q.value, other, lattice), kind) if t) \
            if not never else ""                      # a call never made: its argument is no value to compare
        if difference:
            lines.append(f"    {difference}")
        if calls.argument(s.name):
            lines += calls.instead(s.value, q, ref, finding.wrong)
        lines += _elsewhere_in_the_loop(s, q)
        if not kind and other is None and not calls.argument(s.name):      # (an argument: said by calls.instead)
            lines += differences.hints(s, q, finding, ref, mine, case.inputs)
        lines += _never_updated(finding, ref, student, s) if not case.raised else []
        if handout_function(s.file, s.function):
            lines += _called_from(student, s, levels=3, across_files=True, until_own=True)
        elif not q.reads and not s.reads and s.frame in student.callers and _reads_given(s.text) \
                and _first_of_its_call(student, s) and not _arguments_checked(finding, ref, q):
            # computed from the call's arguments alone: the wrong value came in with the call, whose line (in
            # any file, and its caller's) is where to look
            lines.append(f"    it reads only what {s.function} was given: if this line is right, look at what the "
                         "call passed in")
            lines += _called_from(student, s, across_files=True)
        else:
            lines += _called_from(student, s)
    else:
        runs_it = any(s.function == q.function for s in mine)
        named = [s for s in mine[finding.after + 1:] if matching.base_name(s.name) == matching.base_name(q.name)
                 and (s.function == q.function or not runs_it)]
        if named:                                      # the student's value of that name, in another shape
            s = named[0]
            lines.append(_shown(s))
            lines.append(f"    shape {s.value.shape}, expected {q.value.shape}")
            lines += calls.instead(s.value, q, ref, finding.wrong) if calls.argument(s.name) else []
            lines += _elsewhere_in_the_loop(s, q)
            lines += _called_from(student, s)
        else:
            readers = [ref[i].name for i in range(finding.wrong + 1, len(ref)) if finding.wrong in ref[i].reads]
            lines += [] if never else ["  no value of yours has its shape (an inline expression?)" +
                                       (f"; it is read by {_names(readers)}" if readers else "")]
            lines += [line[2:] for line in _never_updated(finding, ref, student)] if not case.raised else []
            lines += [f"  {o}" for o in wrong_outputs[:2]]
    if student.lost:
        lines.append(f"  (the trace of your code stopped early: {student.lost})")
    return lines


def _elsewhere_in_the_loop(s, q):
    """'    at this point the reference is at t = 4, you at t = 0: check the order of your loop at FILE:LINE' when
    the student's value and the reference's it is compared with (the n-th of its name with the n-th) come from
    other iterations of loop variables of the same names; [] otherwise."""
    mine, theirs = dict(s.at), dict(q.at)
    other = [n for n in theirs if n in mine and mine[n] != theirs[n]]
    if not other:
        return []
    innermost = s.at[-1][0] if s.at else None          # the loop at s.loop binds the last of them
    loop = f" at {s.file}:{s.loop}" if s.loop and other == [innermost] else f" over `{other[0]}`"
    return [f"    at this point the reference is at {', '.join(f'{n} = {theirs[n]}' for n in other)}, you at "
            f"{', '.join(f'{n} = {mine[n]}' for n in other)}: check the order and range of your loop{loop}"]


def _arguments_checked(finding, reference, q):
    """Whether the arguments of the call q is computed in were compared and found right (the reference's
    arguments of a call of q's function, right before q): then what the call was given is no suspect."""
    passed = [k for k in finding.right if (calls.argument(reference[k].name) or (None, None))[1] == q.function]
    return bool(passed)


def _before(earlier, q):
    """What a value equal to the reference's previous assignment of q's name (``earlier``, in q's call) is, in
    words: the argument the line passed in the call before; the reference's value at another iteration (a
    dict's entry for another key, a loop's other step: not this entry's value before an update); else the value
    it had before its previous update."""
    if calls.argument(q.name):
        return "what this line passed in the call before"
    other = {n: v for n, v in earlier.at if dict(q.at).get(n, v) != v}
    if other:
        return "the reference's value of it when " + ", ".join(f"{n} = {v}" for n, v in other.items())
    return differences.BEFORE_UPDATE


def names_a_value(lines):
    """Whether a diagnosis shows a value of the student's (``your `x` at …``, ``your line passes …``): what a case
    that raised can be told, a value computed wrong before the error (the error itself is said already)."""
    return any(line.startswith(("  your `", "  your line passes ")) for line in lines)


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
    match = re.fullmatch(r"(\w+)\[.*\]", matching.base_name(name))
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
    containers = {_container(r.name) or matching.base_name(r.name) for r in [q] + [reference[p] for p in q.reads]}
    written = {matching.base_name(r.name) for r in reference if r.function == q.function}
    for j in _same_call(finding, q, student, before):
        if _container(student[j].name) in containers and matching.base_name(student[j].name) not in written \
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
    containers = {_container(r.name) or matching.base_name(r.name) for r in [q] + [reference[p] for p in q.reads]}
    for j in _same_call(finding, q, student, before):
        s = student[j]
        container = _container(s.name)
        if container not in containers:
            continue
        theirs = _entry_held(finding, reference, student, j, q.function, same_container=True)
        if theirs is not None:
            return j, theirs
    return None


def _narrow_write(finding, reference, student, before):
    """The student's write that covers another number of entries than the reference's write into the same
    container, where the wrong quantity reads that write (``la[0, ..., :1] = …`` for ``la[0, ..., :2] = …``: the
    first step of α too narrow, read at the next step): where it is written, not where it is read. The
    reference's write is judged right by what reads it (the student never names it so); [] if there is none."""
    q = reference[finding.wrong]
    for p in q.reads:
        r = reference[p]
        if _container(r.name) is None or finding.found.get(p):
            continue
        for k in _same_call(finding, q, student, before):
            w = student[k]
            if w.function == r.function and _container(w.name) == _container(r.name) \
                    and matching.base_name(w.name) != matching.base_name(r.name) and w.value.size != r.value.size:
                return [_shown(w), f"    this write covers {_entries(w.value.size)} of `{_container(w.name)}`; the "
                                   f"reference's write, `{r.name}`, covers {_entries(r.value.size)}: check which "
                                   "entries it reaches"]
    return []


def _entries(count):
    return f"{count} {'entry' if count == 1 else 'entries'}"


def _misplaced_lines(student, misplaced):
    j, theirs = misplaced
    s = student[j]
    return [_shown(s), f"    this value is the reference's `{theirs}`, written here to `{s.name}`, and "
                       f"`{_container(s.name)}` ends up unlike the reference's: check which entries this write reaches"]


def _never_updated(finding, reference, student, s=None):
    """A note when, in the student's call of the wrong quantity q (the call an earlier value of q's found, else
    that of the student's value shown, ``s``), q's name is assigned fewer times than the reference assigns it
    there: once, where the reference assigns it at every step of a loop (a carried ``d_state`` never
    reassigned), or in a loop that makes fewer iterations (``range(T - 2, 0, -1)`` for ``range(T - 2, -1, -1)``).
    Said only when the counts show it, over a whole trace."""
    q = reference[finding.wrong]
    frame = matching.call_frame(finding, reference, student.records)
    if frame is None and s is not None and s.function == q.function:
        frame = s.frame
    if frame is None or student.lost:
        return []
    theirs = sum(1 for r in reference if r.frame == q.frame and matching.base_name(r.name) == matching.base_name(q.name))
    mine = [r for r in student.records if r.frame == frame and matching.base_name(r.name) == matching.base_name(q.name)]
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
    """A statement's source from the child, parsed (at most traces.CODE_LINES lines of 200 characters), or None."""
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


ALLOCATED = re.compile(r"\bn(umpy|p)\.(zeros|empty|full|ones)(_like)?\(")


def _in_place(reference, student, before):
    """For the first write, before the student's index ``before``, into an array the student's call did not
    make: one the reference makes in that function and never writes into there (``h[...] = …`` in a forward,
    over the ``h`` its cache keeps), or one the student's own ``la = ly`` made another name of (``la[…] = …``
    writes into ``ly``, which the caller reads again). Where, and that changing it in place changes it wherever
    it is kept. [] if there is none, or the array is one the student's call allocated itself (``np.zeros``: the
    reference may write into its own with an index the trace cannot read)."""
    made, written = set(), set()
    for r in reference:
        made.add((r.function, matching.base_name(r.name)))
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
        own = any(r.frame == s.frame and r.name == container and ALLOCATED.search(r.text)   # a buffer it made
                  for r in student[:max(before, 0)])
        if (s.function, container) in made and (s.function, container) not in written and not own:
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
    container, name = _container(student[j].name), matching.base_name(student[j].name)
    for i, hits in finding.found.items():
        r = reference[i]
        theirs = _container(r.name)
        fits = theirs == container and matching.base_name(r.name) != name if same_container else theirs not in (None, container)
        if r.function == function and fits and any(k == j for k, _ in hits):
            return r.name
    return None


def _stray_lines(finding, reference, student, j):
    """The report's lines for a stray write (``_stray_write``): where, and whose value it is."""
    s, q = student[j], reference[finding.wrong]
    theirs = _entry_held(finding, reference, student, j, q.function, same_container=False)
    return [_shown(s), f"    the reference never assigns `{s.name}` in {q.function}; this value is its `{theirs}`, "
                       f"so `{_container(s.name)}` holds an entry it should not"]

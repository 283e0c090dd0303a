"""Turn a child's outcome into a part's score and a message that teaches, in the grading process.

Everything the child reported is untrusted data: strings are cut to a bounded length, lists to a bounded
count, and anything of the wrong type is ignored. A part's message is short on purpose:

    2 of 6 cases passed
    case 1 (N=2, I=3, H=4, T=5, 2 layers): failed           <- the first failing case, in full
      dX: values differ in …
      Hint: …                                                <- each hint once per part
    case 3 (unbatched, …): failed: Y, dX differ              <- every other failing case, one line

Hints come from ``compare`` (shapes, transforms, known mistakes' stored outputs) and from the error text
and the student's line it was raised at.
"""
import re

import numpy as np

from autograder.diagnosis import compare, places
from autograder.parts import data, spec
from autograder.parts.driver import PROVIDED_FILES, PROVIDED_FUNCTIONS  # plain tables; imported now, never after
from autograder.sandbox import untrusted

                                                                    # student code has run (it may edit the file)

MAX_TEXT = 2000                  # characters kept of any one string the child sent
MAX_ITEMS = 20                   # entries kept of any list the child sent
SHOWN_ARRAYS = 3                 # failing arrays shown in full for the first failing case
MAX_DIAGNOSIS = 8                # lines of the diagnosis of a part's first failing case


def _text(value, limit=MAX_TEXT):
    return value[:limit] if isinstance(value, str) else ""


def _texts(value):
    return [_text(v, 500) for v in value[:MAX_ITEMS] if isinstance(v, str)] if isinstance(value, list) else []


def describe_case(config):
    """The case's shapes in the terms of the call the student wrote."""
    if config["kind"] == "ctc":                                # section 8 says its case in words
        return config["describe"]
    n = config["n"]
    words = ["unbatched" if n is None else f"N={n}", f"I={config['I']}", f"H={config['H']}"]
    if config["kind"] == "sequence":
        words += [f"T={config['steps']}", f"{config['layers']} layer{'s' if config['layers'] > 1 else ''}"]
        if config["batch_first"]:
            words.append("batch_first")
        if config.get("bidirectional"):
            words.append("bidirectional")
        if config.get("lengths") is not None:
            words.append(f"lengths={config['lengths']}")
        if config.get("state0") is False:
            words.append("no state0")
    elif config["steps"] > 1:
        words.append(f"{config['steps']} steps forward then backward on one cell")
    if config["interface"] == "course":
        words.append("course interface: init_weights, Wrx … bnh, dWrx … dbnh")
    if config.get("scale"):
        words.append(f"inputs of magnitude ~{config['scale']:g}")
    words += [f"{k}={v}" for k, v in config["flags"].items()]
    return ", ".join(words)


# what each cell's backward names the gradients it returns, (dx, (d_state parts)), as the handout's code does
RETURNED = {"RNNCell": ("dx", ("dh",)), "GRUCell": ("dx", ("dh",)), "GRUBlockCell": ("d_x", ("d_h_prev",)),
            "GMUCell": ("dx", ("dh", "dc")), "LSTMCell": ("dx", ("dh", "dc_prev")), "TGRUCell": ("dx", ("dh", "dm"))}


# outputs the driver sends one array per key of a dict the student returns: the dict's name, as the student has it
KEYED = {"log_merged_path_scores": "merged_path_scores"}
KEYS_SHOWN = 4


def _key_text(key):
    return repr("" if key == "(empty)" else key)


def _keys(name, arrays, expected):
    """For a dict of the student's that differs from the reference's in its keys: the keys it lacks, and those it
    has that the reference's lacks, in a line ('' when its keys are the reference's)."""
    prefix = name + "/"
    theirs = {k[len(prefix):] for k in expected if k.startswith(prefix)}
    mine = {k[len(prefix):] for k in arrays if isinstance(k, str) and k.startswith(prefix)}

    def listed(keys):
        keys = sorted(keys, key=lambda k: (len(k), k) if k != "(empty)" else (0, ""))
        return ", ".join(_key_text(k) for k in keys[:KEYS_SHOWN]) + (f" and {len(keys) - KEYS_SHOWN} more"
                                                                    if len(keys) > KEYS_SHOWN else "")
    said = []
    if theirs - mine:
        said.append(f"lacks {len(theirs - mine)} key{'s' if len(theirs - mine) > 1 else ''} the reference's has: "
                    f"{listed(theirs - mine)}")
    if mine - theirs:
        said.append(f"has {len(mine - theirs)} key{'s' if len(mine - theirs) > 1 else ''} the reference's lacks: "
                    f"{listed(mine - theirs)}")
    return f"your {KEYED[name]} " + "; it ".join(said) if said else ""


def label(name, config):
    """An array's name as the student's code spells it: ``grads['w_c']``, ``state_T[1]``, ``d_state0[0][1] (c)``,
    and a cell's returned gradients as its backward names them (``dh``, ``d_h_prev``)."""
    returned = RETURNED.get(config.get("cell")) if config.get("kind") == "backward" else None
    if returned and name == "dx":
        return returned[0]
    if returned and name in [f"d{n}_prev" for n in config["states"]]:
        return returned[1][[f"d{n}_prev" for n in config["states"]].index(name)]
    parts = name.split("/")
    if parts[0] == "grad" and len(parts) == 2:
        return f"grads['{parts[1]}']"
    if parts[0] in KEYED and len(parts) == 2:
        return f"{KEYED[parts[0]]}[{_key_text(parts[1])}]"
    if len(parts) == 3 and parts[0] in ("state_T", "d_state0") and parts[2] in config["states"]:
        if len(config["states"]) == 1:                       # one-state cells: an array (L, N, H)
            return f"{parts[0]}[{parts[1]}]"
        if config.get("state_form") == "tuple":              # the LSTM: (h, c), each (L·D, N, ·)
            return f"{parts[0]}[{config['states'].index(parts[2])}][{parts[1]}] ({parts[2]})"
        return f"{parts[0]}[{parts[1]}][{config['states'].index(parts[2])}] ({parts[2]})"
    return name


class CaseVerdict:
    """One case: passed or not, its full lines, its one-line summary, and the hints it raised."""

    def __init__(self, passed, header, lines=(), summary="", hints=(), wrong=()):
        self.passed, self.header, self.lines = passed, header, list(lines)
        self.summary, self.hints = summary, list(hints)
        self.wrong = list(wrong)         # (label, got, expected) of the arrays whose values differ


def _indented(text):
    """An error's text as lines, every line after the first indented: a message is the student's own (raise
    ValueError("...\\n...")), and none of its lines may stand where the grader's do."""
    first, *rest = text.splitlines() or [""]
    return [first] + ["    " + line for line in rest]


def _error_case(header, report, sequence):
    error, where = _text(report.get("error")) or "failed", _text(report.get("where"), 600)
    error = re.sub(r", with gufunc signature \S+", "", error)          # numpy's detail, not the student's
    first, *rest = _indented(error)
    lines = [f"{header}: {first}"] + rest + ([f"  at {where}"] if where else [])
    first_line = error.splitlines()[0] if error else "failed"
    first_line = first_line if len(first_line) <= 160 else first_line[:159] + "…"
    place = f" (at {where.split(': ', 1)[0]})" if where else ""
    hints = compare.error_hints(error, where, sequence)
    if sequence and not _walks_layers_up(report.get("places")):     # a guess from the error alone: not said
        hints = [h for h in hints if h != compare.LAYER_ORDER]
    if sequence:
        hints = [_placed(hint, report.get("places")) for hint in hints]
        hints = [_zeros_explained(hint, report.get("places")) for hint in hints]
    return CaseVerdict(False, header, lines, f"{header}: {first_line}{place}", hints)


NUMERIC = r"RuntimeWarning: (overflow|divide by zero|invalid value) encountered"


def numeric_hint(warning):
    """The stable form for a floating-point warning raised on a student's line."""
    if "overflow" in warning:
        if "in exp" not in warning:
            return compare.OVERFLOW
        line = warning.partition(" at ")[2]                 # the student's line, as the warning names it
        return compare.STABLE_TANH if line.count("exp(") >= 2 else compare.STABLE_SIGMOID
    if "divide by zero" in warning:
        return compare.LOG_OF_ZERO if "in log" in warning else compare.DIVIDE
    return compare.INVALID


def judge_case(k, config, expected, variants, report, arrays, verbose=False):
    """The verdict on one case."""
    header = f"case {k + 1} ({describe_case(config)})"
    status = report.get("status")
    sequence = config["kind"] == "sequence"
    if status == "not_implemented":
        error = untrusted.line(_text(report.get("error"), 300), 300)
        line = f"{header}: not implemented yet" + (f" ({error})" if error else "")
        return CaseVerdict(False, header, [line], line)
    if status in ("error", "import_error"):
        return _error_case(header, report, sequence)
    failures, hints, wrong = [], [], []
    mutated = list(dict.fromkeys(_texts(report.get("mutated"))))     # once each, however often it was seen
    if mutated:
        at = untrusted.line(_text(report.get("mutated_at"), 300), 300)
        failures.append(f"modified {', '.join(mutated)} in place{f' at {at}' if at else ''}: never change inputs "
                        "or parameters in forward/backward (x += … changes the caller's array; use x = x + …)")
    numeric = [w for w in _texts(report.get("warnings")) if re.search(NUMERIC, w)]
    if numeric:                      # costs the case in every part, even where the values come out right
        failures.append(numeric[0] + (f" (and {len(numeric) - 1} more)" if len(numeric) > 1 else ""))
        hints.append(numeric_hint(numeric[0]))
    types = report.get("types") if isinstance(report.get("types"), dict) else {}
    stepped = set(config.get("stepped", ()))
    for name, reference in expected.items():
        if name.split("/")[0] in KEYED and name not in arrays:
            continue                                 # a key the dict lacks, said with its keys below
        verdict = compare.compare(name, arrays.get(name), reference, _text(types.get(name), 300) or None,
                                  variants.get(name, ()), config["n"] or 1,
                                  steps=config["steps"] if name in stepped else None, sequence=sequence,
                                  label=label(name, config))
        if not verdict.passed:
            failures.append(_as_paths(name, arrays.get(name), reference, config) or verdict.message)
            hints += verdict.hints
            wrong.append((label(name, config), arrays.get(name), reference))
    for dict_name in KEYED:                           # a dict whose keys differ: which, not an array "not set"
        keys = _keys(dict_name, arrays, expected)
        if keys:
            failures.append(keys)
    if not failures:
        return CaseVerdict(True, header, [f"{header}: passed"] if verbose else [])
    if sequence:
        hints = [_placed(hint, report.get("places")) for hint in hints]
        hints = [_zeros_explained(hint, report.get("places")) for hint in hints]
    shown = failures if verbose else failures[:SHOWN_ARRAYS]
    more = [] if len(shown) == len(failures) else [f"  … and {len(failures) - len(shown)} more arrays differ "
                                                   "(--verbose shows all)"]
    lines = [f"{header}: failed"] + ["  " + m.replace("\n", "\n  ") for m in shown] + more
    first = failures[0].splitlines()[0]
    first = first if len(first) <= 100 else first[:99] + "…"
    others = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
    return CaseVerdict(False, header, lines, f"{header}: {first}{others}", hints, wrong)


PATHS = ("decoded_path", "best_path")           # decoded strings, which the child sends as symbol indices


def _as_paths(name, actual, expected, config):
    """For a decoded path that differs, both as the strings they are: 'got "abcb", expected "abc"' (None for
    any other array, or one that is not the driver's encoding of a string of the right length)."""
    if name not in PATHS or not isinstance(actual, np.ndarray) or actual.dtype != expected.dtype \
            or actual.shape != expected.shape or actual.ndim != 1:
        return None
    symbols = config.get("symbol_set") or []
    return f'{name}: got "{_path_text(actual, symbols)}", expected "{_path_text(expected, symbols)}"'


def _path_text(codes, symbols):
    """The string a decoded path encodes (``driver._encode_path``: symbol k as k + 1, 0 after its end, -1 for a
    character that is no symbol; ``symbols``, the case's own, from the spec), any other code shown as '?'."""
    text = []
    for code in codes.tolist():
        if code == 0:
            break
        text.append(symbols[code - 1] if 0 < code <= len(symbols) else "?")
    return "".join(text)


def _placed(hint, found):
    """A recognised BPTT mistake's hint with the student's line it names (``places``; the child's text)."""
    name, text = hint if isinstance(hint, tuple) else (None, hint)
    key = places.PLACE_OF.get(text)
    where = _text(found.get(key), 300) if key and isinstance(found, dict) else ""
    if not where:
        return hint
    text = compare.Hint(f"{text}; look at {where}", _key(text))
    return (name, text) if name is not None else text


BOTTOM_UP = re.compile(r"\bfor\s+\w+\s+in\s+range\(\s*(0\s*,\s*)?(self\.)?num_layers\s*\)")


def _walks_layers_up(found):
    """Whether the student's backward's layer loop (``places``: its line, read in the child) walks the layers
    bottom-up, ``for layer in range(self.num_layers)``: what proves the layer-order hint an error suggests."""
    where = _text(found.get("layer loop"), 300) if isinstance(found, dict) else ""
    return bool(BOTTOM_UP.search(where.partition(": ")[2]))


def _zeros_explained(hint, found):
    """A sequence layer's gradient of zeros: why, with the cell's line that binds a new array
    (``grads[name] = …``, where the layer shares the cell's own), when the child found one; else the fact alone
    (zeros have other causes: the diagnosis follows the values)."""
    name, text = hint if isinstance(hint, tuple) else (None, hint)
    if text != compare.ZERO_GRAD_SEQUENCE:
        return hint
    where = _text(found.get(places.GRADS_ASSIGNED), 300) if isinstance(found, dict) else ""
    text = compare.Hint(f"{text}; look at {where}", text) if where else compare.NO_GRADIENT
    return (name, text) if name is not None else text


def _drop_unproved(verdicts, part_data, reports, outputs):
    """Remove each known mistake's hint that the student's values do not prove: the hint is said only when a
    mistake of that hint, applied to the solution, gives every output the student's code gave in every case
    (its stored values where it differs from the reference, the reference's elsewhere), on every output it
    changes in any case. A partial match (one array of one case, where two mistakes agree) says nothing. A case
    the student's code raised in proves nothing either way when the mistake's values were not stored for it (it
    may have raised too), and disproves it when they were."""
    mistakes = _stored(part_data.variants)
    proved = {}
    for verdict in verdicts:
        for hint in verdict.hints:
            text = _key(hint[1] if isinstance(hint, tuple) else hint)
            if text not in proved and any(t == text for t, _ in mistakes):
                proved[text] = any(_reproduces(part_data, reports, outputs, stored)
                                   for (t, _), stored in mistakes.items() if t == text)
    for verdict in verdicts:
        verdict.hints = [h for h in verdict.hints if proved.get(_key(h[1] if isinstance(h, tuple) else h), True)]


def _stored(variants):
    """{(hint text, mistake id): {case: {output name: the mistake's array}}} of every known mistake stored."""
    stored = {}
    for k, case in enumerate(variants):
        for name, pairs in case.items():
            members = pairs.by_mistake() if hasattr(pairs, "by_mistake") else [(t, t, a) for t, a in pairs]
            for mistake, text, array in members:
                mistake = f"{mistake}:{name}" if mistake == data.ASSIGNED else mistake
                stored.setdefault((text, mistake), {}).setdefault(k, {})[name] = array
    return stored


def _reproduces(part_data, reports, outputs, stored):
    """Whether a known mistake (``stored``: {case: {name: its array}}) gives the student's outputs in every case
    (see ``_drop_unproved``)."""
    names = {name for case in stored.values() for name in case}
    for k, expected in enumerate(part_data.expected):
        if reports[k].get("status") != "ok":
            if k in stored:
                return False
            continue
        for name in names & set(expected):
            if name not in outputs[k] and name not in stored.get(k, {}):
                continue                       # a dict's key neither has: the mistake's dict may lack it too
            predicted = stored.get(k, {}).get(name, expected[name])
            if not compare.same_output(outputs[k].get(name), predicted):
                return False
    return True


def _message(verdicts, verbose):
    """(lines, hints): the first failing case in full, the others in one line each, then each hint once (all in
    full with verbose); the hints as the class report counts them, without the student's own text that the
    lines show (the field, operand or line a hint names: ``compare.Hint``)."""
    lines, hints, failing = [], [], []
    for v in verdicts:
        if v.passed:
            lines += v.lines
            continue
        if not failing or verbose:
            lines += v.lines
        failing.append(v)
        hints += [h for h in v.hints if h not in hints]
    if not verbose:
        lines += folded(failing)
    counted = merge_hints([(h[0], _key(h[1])) if isinstance(h, tuple) else _key(h) for h in hints])
    return lines + [f"  Hint: {h}" for h in merge_hints(hints)], counted


CASE_HEADER = re.compile(r"case (\d+)\b")


def folded(failing):
    """One line for each kind of failure after the first failing case (shown in full): cases whose one-line
    summaries are the same but for their numbers (a shape's sizes, a value; never a line number) share a line,
    "cases 2–6: …", and a kind the first case had too says so instead of repeating it."""
    def split(v):
        number = CASE_HEADER.match(v.header)
        body = v.summary[len(v.header):].lstrip(": ") if v.summary.startswith(v.header) else v.summary
        return (int(number.group(1)) if number else None), body, re.sub(r"(?<![:\w.])\d+(\.\d+)?", "#", body)

    if len(failing) < 2:
        return []
    first_number, _, first_key = split(failing[0])
    groups = {}                                            # key -> [(number, body, summary)], in order
    for v in failing[1:]:
        number, body, key = split(v)
        groups.setdefault(key, []).append((number, body, v.summary))
    lines = []
    for key, members in groups.items():
        numbers = [n for n, _, _ in members]
        if len(members) == 1 or None in numbers:
            lines += [summary for _, _, summary in members]
            continue
        text = f"the same as case {first_number}" if key == first_key and first_number else members[0][1]
        if len({body for _, body, _ in members}) > 1:
            text += " (each with its own sizes or values)"
        lines.append(f"cases {_numbers(numbers)}: {text}")
    return lines


def _numbers(numbers):
    """2–6, or 2, 4 and 7."""
    if numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 2:
        return f"{numbers[0]}–{numbers[-1]}"
    return ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def _key(text):
    return getattr(text, "key", text)


def merge_hints(hints):
    """Texts once each; ``(name, text)`` pairs with the same text as one line naming up to 3 arrays."""
    merged = {}
    for hint in hints:
        name, text = hint if isinstance(hint, tuple) else (None, hint)
        names = merged.setdefault(text, [])
        if name is not None and name not in names:
            names.append(name)
    out = []
    for text, names in merged.items():
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            text = f"{shown}: {text}"
        out.append(text)
    return out


DUMP_FRAME = re.compile(r'File "[^"\n]*?/(mytorch/[^"\n]{1,200})", line (\d{1,7}) in (\w{1,100}|<module>)')
# where a dump begins: its header, or (in a tail cut inside one, maybe inside a line) a frame line as
# faulthandler writes it, which has no comma before "in" (a Python traceback's has)
DUMP_START = re.compile(r'^(Thread 0x[0-9a-f]+|Current thread 0x[0-9a-f]+|Timeout \(\d|.*", line \d+ in \S+$)',
                        re.M)


GRADER_FRAME = re.compile(r'File "[^"\n]*/driver\.py", line \d+ in ')     # below the student's frames
RECENT_DUMPS = 4                 # whole dumps read: the last few of a child that started late, else both


def _own(frames):
    return [(path, line, function) for path, line, function in frames
            if path not in PROVIDED_FILES and (path, function) not in PROVIDED_FUNCTIONS]


def where_it_hung(output):
    """The frame of the submission's own code that was looping, from faulthandler dumps of the child's stack:
    'mytorch/nn/recurrent.py:197 in _run_direction'.

    A dump (``Timeout (…)!``, ``Thread …`` / ``Current thread …``, then ``File "…", line N in NAME``, most
    recent call first) is printed by the child shortly before its time is up, then one of the frames its stack
    held at every one of many looks until then (``worker.dump_again``); one that started late prints a dump
    every tenth of a second instead. A loop that calls a function is caught in the function at some looks and
    in itself at others: the innermost frame of the student's in every one of the last whole dumps (each from
    its header down to the grader's driver) is the loop's. With no whole dump, the innermost frame of the
    student's in the last dump that has one (the very last may have been cut short by the kill), else the
    innermost mytorch frame of any. It is text the child controls, so it only ever becomes part of a message.
    """
    pieces = re.split(r"^Timeout \(", output, flags=re.M)
    whole = [own for piece in pieces[1:] if GRADER_FRAME.search(piece)
             for own in [_own(DUMP_FRAME.findall(piece))] if own][-RECENT_DUMPS:]
    for path, line, function in whole[-1] if whole else ():
        if all(any((p, f) == (path, function) for p, _, f in dump) for dump in whole):
            return f"{path}:{line} in {function}"
    seen = []
    for dump in reversed(pieces):
        frames = DUMP_FRAME.findall(dump)
        seen = seen or frames
        for path, line, function in _own(frames)[:1]:
            return f"{path}:{line} in {function}"
    return f"{seen[0][0]}:{seen[0][1]} in {seen[0][2]}" if seen else ""


def strip_dump(output):
    """``output`` without the faulthandler dumps (everything from the first line of one on)."""
    match = DUMP_START.search(output)
    return output[:match.start()] if match else output


PRINTED_LINES = 15               # lines of a part's printout shown
PRINTED = "  | "                 # before each: a printed "Hint: …" is not taken for the grader's


def judge_part(part, part_data, outcome, verbose=False, diagnose=None):
    """``(score, status, output, hints)`` of one part from the child's outcome (``hints``: the output's hints as
    the class report counts them, the grader's texts alone: a line of the output that only looks like one, in
    the student's own error or printout, is not one). ``diagnose(k, wrong)``: lines that say where case k first
    goes wrong (``matching``), asked for the first case whose values differ, else (``wrong`` None) for the first
    that raised: a value the student's code computed wrong before the error.

    What the student's code printed is kept out of the way, but not lost: ``verbose`` shows its last lines, and
    a part that loses points says it printed (a student debugging with print looks for it)."""
    score, status, output, hints = _judge_part(part, part_data, outcome, verbose, diagnose)
    printed = [] if outcome.failure else strip_dump(outcome.output).strip("\n").splitlines()
    if printed and verbose:
        output += "\nYour code printed (its last lines):\n" + "\n".join(PRINTED + line for line in
                                                                       printed[-PRINTED_LINES:])
    elif printed and status != "passed":
        output += f"\nYour code printed {'a line' if len(printed) == 1 else 'lines'} (python -m autograder -v " \
                  f"shows the last {PRINTED_LINES})."
    return score, status, output, hints


def _judge_part(part, part_data, outcome, verbose, diagnose):
    cases = len(part_data.configs)
    if outcome.failure and getattr(outcome, "setup", False):
        return 0.0, "error", (f"The grader {outcome.failure}. This is the grader's set-up, not your code: tell "
                              "whoever installed the grader (the course staff, if it was not you)."), []
    if outcome.failure:
        lines = [f"Your code {outcome.failure}."]
        hung = where_it_hung(outcome.output) if "did not finish" in outcome.failure else ""
        if hung:
            lines.append(f"It was running {hung} when it was stopped: look there for a loop that never ends.")
        shown = strip_dump(outcome.output).strip()
        if shown:
            lines.append("Last output:\n" + "\n".join(PRINTED + line for line in shown.splitlines()[-15:]))
        return 0.0, "error", "\n".join(lines), []
    reports = [r if isinstance(r, dict) else {} for r in outcome.reports]
    statuses = {r.get("status") for r in reports}
    if statuses == {"not_implemented"}:
        where = _text(reports[0].get("where"), 600).split(": ", 1)[0]
        owner = spec.cell_part_of_todo(part, where)
        if owner is not None:
            return 0.0, "not implemented", (f"{spec.WAITS_ON_A_CELL}{part.cell}, whose {owner.kind} is still a TODO "
                                            f"({where}): finish part {owner.number} first"), []
        return 0.0, "not implemented", "not implemented yet" + (f" (the first TODO it reached: {where})"
                                                                 if where else ""), []
    if statuses == {"import_error"}:
        r = reports[0]
        where = _text(r.get("where"), 600)
        return 0.0, "error", "\n".join(_indented(_text(r.get("error")))) + (f"\n  at {where}" if where else ""), []
    errors = {(r.get("status"), r.get("error"), r.get("where")) for r in reports}
    if len(errors) == 1 and next(iter(errors))[0] == "error":          # one error, raised by every case
        v = _error_case("", reports[0], part.kind == "sequence")
        v.lines[0] = "all {} cases{}".format(cases, v.lines[0])          # ": the error's first line"
        lines, hints = _message([v], verbose)
        return 0.0, "failed", "\n".join([f"0 of {cases} cases passed"] + lines), hints
    outputs = [{} for _ in range(cases)]
    for (case, name), array in outcome.arrays.items():
        if 0 <= case < cases:
            outputs[case][name] = array
    verdicts = [judge_case(k, part_data.configs[k], part_data.expected[k], part_data.variants[k], reports[k],
                           outputs[k], verbose) for k in range(cases)]
    _drop_unproved(verdicts, part_data, reports, outputs)
    passed = sum(v.passed for v in verdicts)
    score = round(part.points * passed / cases, 2)
    status = "passed" if passed == cases else "failed"
    lines, hints = _message(verdicts, verbose)
    lines = [f"{passed} of {cases} cases passed"] + lines
    traced = next((k for k, v in enumerate(verdicts) if v.wrong and reports[k].get("status") == "ok"), None)
    wrong = verdicts[traced].wrong if traced is not None else None
    if traced is None:                 # values wrong before an error: what the student's code computed up to it
        traced = next((k for k, r in enumerate(reports) if r.get("status") == "error"), None)
    if diagnose is not None and traced is not None:        # after the hints: the catalogue's come first
        diagnosis = "\n".join(diagnose(traced, wrong)).splitlines()[:MAX_DIAGNOSIS]
        lines += [line.replace("Where your values first go wrong:", f"Where case {traced + 1} first goes wrong:")
                  for line in diagnosis]
    return score, status, "\n".join(lines), hints

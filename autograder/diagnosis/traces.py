"""A trace as the grading process holds it: the records of the values one run of a submission (or of the
solution) computed, checked whole as they come from the child.

A ``Record`` is one value a statement assigned: its name as the code spells it, file:line and source text,
which call of which function (``frame``, ``function``), the earlier records of that call it reads, the loop
variables of its iteration (``at``) and the value itself. A ``Trace`` is the records in computation order, why
tracing stopped early (``lost``) and who called each frame (``callers``: frame -> caller frame, file, line,
text).

Everything the child sent is untrusted: ``parse`` checks the trace whole and raises ValueError on anything
malformed (the caller then says nothing); every name, file and source line becomes one line of printable text.
The reference's trace holds names, places, dependencies and values, never the solution's source
(``without_source``); values that differ between two runs of the solution are dropped from it (``stable``).
"""
import dataclasses
import math
import re

import numpy as np

from autograder.sandbox import untrusted

RECORD_LIMIT = 5000              # records accepted from one trace


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
    kind: str = "f"              # what it held before it became float64: "f" floats, "i" integers, "b" truth values


def _int(v, low=0, high=1 << 31):
    if type(v) is not int or not low <= v < high:
        raise ValueError("not a bounded integer")
    return v


def _dim(v):
    return _int(v, 0, 1 << 24)


def parse(meta, flat):
    """The records of one trace (see ``tracing.Tracer.pack``), checked; ValueError if anything is malformed. Its
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
        if not (isinstance(entry, list) and len(entry) in (7, 8, 9, 10)):
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
                              _loop_line(entry[8] if len(entry) > 8 else 0),
                              entry[9] if len(entry) > 9 and entry[9] in ("i", "b") else "f"))
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


def index_of(trace, record):
    """``record``'s place in ``trace`` (by identity; a trace's records are distinct objects)."""
    if trace.places is None:
        trace.places = {id(r): k for k, r in enumerate(trace.records)}
    return trace.places.get(id(record), -1)


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


def without_source(trace):
    """``trace`` without the text of any line: the solution's lines never reach a student's feedback (the stored
    traces hold none either: ``generate``), only its names, places and values."""
    return Trace([dataclasses.replace(r, text="") for r in trace.records], trace.lost,
                 {frame: (*entry[:3], "") for frame, entry in trace.callers.items()})

"""A call's arguments as quantities: which argument of which call a record is, the student's expression for it,
and what a wrong one equals instead.

The tracer keeps each argument a traced call is given as a value of the caller's statement that makes the call,
named ``x passed to RNNCell.forward (argument 1)``: the reference's calls are compared with the student's,
argument by argument, at the same iteration, and a wrong argument whose caller's inputs were right is the
caller's mistake, reported at the caller's line.
"""
import ast
import re

import numpy as np

from autograder.diagnosis import matching

ARGUMENT = re.compile(r"(\w+) passed to (\S+) \(argument (\d+)\)(\[\d\])?")


def argument(name):
    """``(parameter, function, position)`` of an argument's record name (position 1 is the first argument the
    call is written with; ``state0[1]`` for one part of a state tuple), or None for any other record."""
    match = ARGUMENT.fullmatch(name)
    return (match.group(1) + (match.group(4) or ""), match.group(2), int(match.group(3))) if match else None


def label(name):
    """A quantity as the report names it: '`x` passed to RNNCell.forward' for an argument, '`da`' otherwise."""
    passed = argument(name)
    return f"`{passed[0]}` passed to {passed[1]}" if passed else f"`{name}`"


def expression(text, name):
    """The expression the student's statement ``text`` passes as the argument ``name`` (by keyword, or at its
    position, in a call of that function's name), as they wrote it; '' if it cannot be read off the line."""
    parameter, function, position = argument(name)
    parameter = parameter.partition("[")[0]
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    short = function.rpartition(".")[2]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if called != short:
            continue
        given = [k.value for k in node.keywords if k.arg == parameter]
        if not given and position <= len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args):
            given = [node.args[position - 1]]
        if given:
            return ast.unparse(given[0])[:80]
    return ""


def shown(record, when):
    """'  your line passes `X` as `inp` to Recurrent._run_direction at FILE:LINE (when …):' for an argument's
    record (``when``: its iteration, said as the report says it)."""
    parameter, function, _ = argument(record.name)
    written = expression(record.text, record.name)
    what = f"`{written}` as `{parameter}`" if written and written != parameter else f"`{parameter}`"
    return f"  your line passes {what} to {function} at {record.file}:{record.line}{when}"


def instead(value, q, reference, wrong):
    """'    it equals the reference's `X`, where the reference passes its `inp`': the first value of the reference
    (computed before the wrong one; not an argument itself) that the student's argument equals, and what the
    reference's argument is: the value its calling statement reads that equals it, else the last value of the
    calling function that does (what a variable holds at the call); [] when the student's equals none.
    Constant values (zeros equal many things) are matched with nothing."""
    earlier = [r for r in reference[:wrong] if argument(r.name) is None]
    mine = _equal(value, earlier)
    if mine is None:
        return []
    read = [reference[p] for p in q.reads if argument(reference[p].name) is None]
    theirs = _equal(q.value, read) or _equal(q.value, [r for r in reversed(earlier) if r.function == q.function])
    where = f", where the reference passes its {_named(theirs, q)}" if theirs is not None \
        and theirs.name != mine.name else ""
    return [f"    it equals the reference's {_named(mine, q)}{where}"]


def never_made(q, student):
    """'  your code never calls log_posterior from CTCLoss.forward; the reference's does, passing it `la`' when
    the wrong quantity is an argument of a call the student's code does not make (no argument of that call in
    the student's trace); [] otherwise."""
    passed = argument(q.name)
    if passed is None or any(argument(s.name) and argument(s.name)[1] == passed[1] for s in student):
        return []
    when = f" (when {', '.join(f'{n} = {v}' for n, v in q.at)})" if q.at else ""
    return [f"  your code never calls {passed[1]}; the reference's {q.function} does{when}, passing it "
            f"`{passed[0]}`"]


def _named(record, q):
    """'`inp`', or '`Y` (of Recurrent._run_direction)' for a value of another function than the caller's."""
    return f"`{record.name}`" + (f" (of {record.function})" if record.function != q.function else "")


def _equal(value, records):
    """The first of ``records`` whose value equals ``value`` within the tolerance, or None (also for a value too
    small or constant to say which it is)."""
    if value.size < 2 or not np.isfinite(value).all() or np.ptp(value) <= matching.ATOL:
        return None
    return next((r for r in records if r.value.shape == value.shape and matching.close(r.value, value)), None)

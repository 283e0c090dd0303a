"""A call's arguments as quantities, a write blamed where it is written, the iteration a value is from, and a case
that raised: the diagnosis on small traces built by hand, and on the solution with one realistic mistake."""
import dataclasses
import json
import os
import shutil
import sys

import numpy as np
import pytest

from autograder.diagnosis import calls, diagnose, traces, tracing, wording
from autograder.parts import data, driver
from tests import mutants
from tests.graderkit import REPO

X = np.arange(6.0).reshape(3, 2)
H0 = np.array([[0.5, -1.0]])


def _record(name, value, reads=(), line=1, frame=1, function="Layer.forward", text="", at=()):
    return traces.Record(name, "mytorch/nn/x.py", line, text, frame, function, tuple(reads),
                         np.asarray(value, dtype=float), at)


def _argument(parameter, value, position, reads=(), line=5, at=(), text="h = cell.forward(X[t], state)"):
    return _record(f"{parameter} passed to Cell.forward (argument {position})", value, reads, line, text=text, at=at)


def test_an_argument_record_is_read_back_into_its_parameter_function_and_position():
    assert calls.argument("x passed to RNNCell.forward (argument 1)") == ("x", "RNNCell.forward", 1)
    assert calls.argument("state0 passed to Recurrent._run_direction (argument 3)[1]") == (
        "state0[1]", "Recurrent._run_direction", 3)
    assert calls.argument("x") is None and calls.argument("x passed to f") is None
    assert calls.label("x passed to RNNCell.forward (argument 1)") == "`x` passed to RNNCell.forward"
    assert calls.label("da") == "`da`"


@pytest.mark.parametrize("text, name, written", [
    ("h = cell.forward(X[t], state)", "x passed to Cell.forward (argument 1)", "X[t]"),
    ("h = cell.forward(X[t], state)", "state passed to Cell.forward (argument 2)", "state"),
    ("h = cell.forward(X[t], state=state0)", "state passed to Cell.forward (argument 2)", "state0"),
    ("a, b = self._run(self.cells[k], inp, starts[layer])", "state0 passed to L._run (argument 3)[0]", "starts[layer]"),
    ("h = cell.forward(*args)", "x passed to Cell.forward (argument 1)", ""),          # not readable: not said
    ("h = other(X[t])", "x passed to Cell.forward (argument 1)", ""),
    ("h = cell.forward(X[t]", "x passed to Cell.forward (argument 1)", ""),           # does not parse
])
def test_the_expression_a_student_passes_is_read_off_their_own_line(text, name, written):
    assert calls.expression(text, name) == written


def test_a_wrong_argument_is_reported_at_the_callers_line_with_what_it_equals():
    """The layer passes X where the reference passes the layer below's output: the first wrong quantity is the
    argument, at the caller's line, with the student's expression and the reference values each one equals."""
    below = np.tanh(X + 1.0)
    reference = traces.Trace([_record("X", X, line=2), _record("inp", below, [0], 3),
                              _argument("x", below, 1, [1], at=(("layer", 1),), text="")])
    student = traces.Trace([_record("X", X, line=2), _record("inp", below, [0], 3),
                            _argument("x", X, 1, [0], text="h = cell.forward(X, state)", at=(("layer", 1),))])
    lines = "\n".join(wording.explain(reference, student)).splitlines()
    assert lines[0] == "Where your values first go wrong: `x` passed to Cell.forward (computed from `inp`)"
    assert lines[2:] == [
        "  your line passes `X` as `x` to Cell.forward at mytorch/nn/x.py:5 (when layer = 1):",
        "    h = cell.forward(X, state)",
        f"    got 0 at [0, 0], expected {below[0, 0]:.6g}",
        "    it equals the reference's `X`, where the reference passes its `inp`"]


def test_a_call_the_student_never_makes_is_said_and_no_value_is_compared_with_its_argument():
    reference = traces.Trace([_record("la", X, line=2), _argument("la", X, 1, [0], at=(("b", 0),)),
                              _record("gamma", np.exp(X), [1], 6)])
    student = traces.Trace([_record("la", X, line=2), _record("gamma", np.exp(X) * 2, [0], 6)])
    lines = wording.explain(reference, student)
    assert "  your code never calls Cell.forward; the reference's Layer.forward does (when b = 0), passing it `la`" \
        in lines
    assert not any("got" in line for line in lines)


def test_a_value_from_another_iteration_says_where_the_reference_is():
    """The n-th value of a name is compared with the reference's n-th: when their loop variables differ, the
    report says where each is, and points at the student's loop."""
    values = [np.full(2, float(t)) for t in range(3)]
    reference = traces.Trace([_record("d", values[t], line=4, at=(("t", t),)) for t in (2, 1, 0)])
    mine = [dataclasses.replace(_record("d", values[t], line=4, at=(("t", t),)), loop=3) for t in (0, 1, 2)]
    lines = wording.explain(reference, traces.Trace(mine))
    assert "    at this point the reference is at t = 2, you at t = 0: check the order and range of your loop at " \
           "mytorch/nn/x.py:3" in lines
    same = traces.Trace([dataclasses.replace(r, value=r.value + 1) for r in reference.records])
    assert not any("at this point" in line for line in wording.explain(reference, same))


def test_a_write_narrower_than_the_references_is_blamed_where_it_is_written():
    """α's first step written into one entry where the reference writes two: the value read at the next step is
    wrong, and the report shows the write that covered too few entries, where it is."""
    first = np.array([-0.5, -1.5])
    reference = traces.Trace([_record("la[0, :2]", first, line=12), _record("stay", first, [0], 14)])
    student = traces.Trace([_record("la[0, :1]", first[:1], line=12, text="la[0, :1] = ly[0, :1]"),
                            _record("stay", [-0.5, -np.inf], [0], 14)])
    lines = "\n".join(wording.explain(reference, student)).splitlines()
    assert lines[1:4] == ["  your `la[0, :1]` at mytorch/nn/x.py:12:", "    la[0, :1] = ly[0, :1]",
                          "    this write covers 1 entry of `la`; the reference's write, `la[0, :2]`, covers 2 "
                          "entries: check which entries it reaches"]
    same_size = traces.Trace([_record("la[0, 1:3]", first, line=12), _record("stay", [-0.5, -np.inf], [0], 14)])
    assert not any("this write covers" in line for line in wording.explain(reference, same_size))


def test_the_tracer_keeps_a_calls_arguments_but_not_those_of_a_function_the_handout_gives(tmp_path):
    (tmp_path / "mytorch").mkdir()
    source = ("import numpy as np\n"
              "def given(a):\n"
              "    return a + 1.0\n"
              "def cell(x, state):\n"
              "    return np.tanh(x + state)\n"
              "def layer(X, h0):\n"
              "    h = h0\n"
              "    for t in range(2):\n"
              "        h = cell(X[t], h)\n"
              "        g = given(h)\n"
              "    return h\n")
    (tmp_path / "mytorch" / "m.py").write_text(source)
    namespace = {}
    exec(compile(source, str(tmp_path / "mytorch" / "m.py"), "exec"), namespace)
    with tracing.Tracer(str(tmp_path), given=lambda rel, function: function == "given") as trace:
        namespace["layer"](np.ones((2, 3)), np.zeros(3))
    names = [(r["name"], r["line"], r["at"]) for r in trace.records if "passed to" in r["name"]]
    assert names == [("x passed to cell (argument 1)", 9, [["t", 0]]), ("state passed to cell (argument 2)", 9, [["t", 0]]),
                     ("x passed to cell (argument 1)", 9, [["t", 1]]), ("state passed to cell (argument 2)", 9, [["t", 1]])]


# ---- on the solution, with one realistic mistake each

def _traced(tmp_path, part, k, old, new):
    """(reference trace, student trace, config, the case's status) of case k of ``part`` with ``old`` replaced
    by ``new`` in the solution: run in a forked child, which imports the edited copy (this process keeps its
    own mytorch)."""
    shutil.copytree(os.path.join(REPO, "mytorch"), tmp_path / "mytorch")
    files = [p for p in (tmp_path / "mytorch" / "nn").glob("*.py") if old in p.read_text()]
    assert len(files) == 1
    files[0].write_text(files[0].read_text().replace(old, new, 1))
    part_data = data.load_part(part)

    def run():
        for name in [n for n in sys.modules if n == "mytorch" or n.startswith("mytorch.")]:
            del sys.modules[name]
        sys.path.insert(0, str(tmp_path))
        import mytorch
        result = driver.run_case(mytorch, str(tmp_path), dict(part_data.configs[k], trace=True),
                                 {n: v.copy() for n, v in part_data.inputs[k].items()}, tracing)
        return [result.trace[0], result.trace[1].tolist(), result.status]
    meta, flat, status = mutants._forked(run, 60)
    student = traces.parse(json.loads(json.dumps(meta)), np.array(flat, dtype=np.float64))
    return diagnose.reference_trace(part_data, k), student, part_data.configs[k], status


def test_starting_the_reverse_direction_from_another_cells_state_is_the_callers_argument(tmp_path):
    reference, student, config, _ = _traced(
        tmp_path, "6.1", 2, "self._run_direction(self.cells[k], inp, starts[k],",
        "self._run_direction(self.cells[k], inp, starts[layer],")
    lines = wording.explain(reference, student, wording.Case(config))
    assert lines[0].startswith("Where your values first go wrong: `state0` passed to Recurrent._run_direction")
    assert "your line passes `starts[layer]` as `state0` to Recurrent._run_direction at mytorch/nn/recurrent.py:123 " \
           "(when layer = 0, direction = 1):" in "\n".join(lines)
    assert lines[-1] == "    it equals the reference's `starts[0]`, where the reference passes its `starts[1]`"


def test_a_case_that_raised_is_told_the_value_its_code_computed_wrong_before_the_error(tmp_path):
    """The directions' outputs put side by side on the batch axis: the layer's own backward refuses dY later;
    the value first wrong is the concatenation, at its line."""
    reference, student, config, status = _traced(
        tmp_path, "6.1", 2, "inp = np.concatenate(outputs, axis=2)", "inp = np.concatenate(outputs, axis=1)")
    assert status == "error"
    lines = wording.explain(reference, student, wording.Case(config))
    assert wording.names_a_value(lines)
    lines = "\n".join(lines).splitlines()
    assert lines[2:5] == ["  your `inp` at mytorch/nn/recurrent.py:125 (when layer = 0):",
                          "    inp = np.concatenate(outputs, axis=1)", "    shape (4, 4, 4), expected (4, 2, 8)"]

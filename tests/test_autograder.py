"""The autograder on the solution, its command line, its results file, and the catalogue of mistakes."""
import os
import subprocess
import sys
import tarfile

import pytest

from autograder import grade
from autograder.diagnosis import compare, feedback, mistakes, places
from autograder.parts import spec
from autograder.sandbox.childspec import ChildSpec, Limits
from tests.graderkit import (
    REPO,
    TWO_SECTIONS,
    at_top_of_forward,
    check_gradescope,
    load_results,
    make_grader_copy,
    make_submission,
    run_cli,
)


def test_numpy_random_is_imported_with_the_spec_not_first_by_threads_making_cases():
    """NumPy imports numpy.random on first use (its module __getattr__); the grader makes the cases of several
    parts in threads at once, and two first uses at once once ended a batch in a RecursionError inside
    NumPy's __getattr__. The spec imports it when it is imported, before any thread."""
    code = "import sys; import autograder.parts.spec; print('numpy.random' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip() == "True"


def test_points_sum_to_100_and_parts_are_numbered_like_the_handout():
    assert sum(p.points for p in spec.PARTS) == 100
    assert [p.number for p in spec.PARTS] == sorted(p.number for p in spec.PARTS)
    assert {p.number.split(".")[0] for p in spec.PARTS} == set(spec.SECTIONS)


def test_solution_scores_full_marks_and_the_parent_never_imports_mytorch():
    code = ("import sys; from autograder import grade; r = grade.grade(sys.argv[1]); "
            "print(sum(x.score for x in r)); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'mytorch'))")
    out = subprocess.run([sys.executable, "-c", code, REPO], capture_output=True, text=True, cwd=REPO, check=True)
    score, imported = out.stdout.split("\n")[:2]
    assert float(score) == 100.0
    assert imported == "[]"


def test_cli_table_and_gradescope_json(tmp_path):
    path = tmp_path / "out" / "results.json"
    proc = run_cli(["--gradescope", "--json", str(path)])
    assert proc.returncode == 0, proc.stderr
    assert "Total" in proc.stdout and "100.00/100" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr
    tests = check_gradescope(load_results(path))
    assert sorted(tests) == sorted(p.number for p in spec.PARTS)
    assert all(t["status"] == "passed" and t["score"] == t["max_score"] for t in tests.values())


def test_cli_selects_parts_and_sections(tmp_path):
    proc = run_cli(["2", "6.1", "--json", str(tmp_path / "r.json")])
    assert proc.returncode == 0
    assert set(check_gradescope(load_results(tmp_path / "r.json"))) == {"2.1", "2.2", "6.1"}
    proc = run_cli(["9.9"])
    assert proc.returncode == 2 and "unknown part '9.9'" in proc.stderr


def test_not_implemented_is_said_plainly(tmp_path):
    sub = make_submission(tmp_path, [("nn/rnn_cell.py", "        # BEGIN SOLUTION\n        a = x @",
                                      "        raise NotImplementedError('RNNCell.forward')\n        a = x @")])
    results = {r.part.number: r for r in grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"], spec.PARTS_BY_NUMBER["2.1"]])}
    assert results["1.1"].status == "not implemented" and results["1.1"].score == 0
    assert results["1.1"].output.startswith("not implemented yet (the first TODO it reached: mytorch/nn/rnn_cell.py:")
    assert results["2.1"].score == spec.PARTS_BY_NUMBER["2.1"].points


def test_verbose_lists_every_case():
    results = grade.grade(REPO, [spec.PARTS_BY_NUMBER["4.1"]], verbose=True)
    assert results[0].output.count(": passed") == len(spec.PARTS_BY_NUMBER["4.1"].shapes)


def test_messages_teach(tmp_path):
    """A wrong value says which array, which case, the errors, where, and the hint."""
    m = next(m for m in mistakes.CATALOGUE if m.id == "gru-z-swapped")
    sub = make_submission(tmp_path, [(m.path, m.old, m.new)])
    out = grade.grade(sub, [spec.PARTS_BY_NUMBER["2.1"]])[0].output
    assert "case 1 (unbatched, I=5, H=2, course interface" in out
    assert "h_t: values differ in" in out and "max abs error" in out and "first at index" in out
    assert "Hint: these values are what z and 1 − z swapped would give" in out


def test_a_state_squeezed_by_forward_costs_forward_and_leaves_backward_its_batch(tmp_path):
    """A forward that squeezes its state to (H,) loses forward's points with the squeeze hint; backward, whose
    math is right, is not told that d_state should be (H, H) (the batch was read off the squeezed state)."""
    squeeze = ('h_t = np.tanh(a) if self.nonlinearity == "tanh" else F.relu(a)',
               'h_t = np.squeeze(np.tanh(a) if self.nonlinearity == "tanh" else F.relu(a))')
    sub = make_submission(tmp_path, [("nn/rnn_cell.py", *squeeze)])
    forward, backward = grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"], spec.PARTS_BY_NUMBER["1.2"]])
    assert forward.score < forward.part.points and mistakes.SQUEEZED in forward.output, forward.output
    assert backward.score == backward.part.points, backward.output


def test_what_a_students_code_printed_is_shown_with_verbose_and_mentioned_when_it_loses_points(tmp_path):
    printing = at_top_of_forward("print('debug x', x.shape)")
    sub = make_submission(tmp_path / "passes", printing)
    quiet, = grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"]])
    shown, = grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"]], verbose=True)
    assert quiet.score == quiet.part.points and "printed" not in quiet.output, quiet.output
    assert "Your code printed (its last lines):\n  | debug x (3,)\n  | debug x (1, 4)\n" in shown.output, shown.output
    mistake = next(m for m in mistakes.CATALOGUE if m.id == "rnn-sigmoid-for-tanh")
    sub = make_submission(tmp_path / "fails", printing + [(mistake.path, mistake.old, mistake.new)])
    failing, = grade.grade(sub, [spec.PARTS_BY_NUMBER["1.1"]])
    assert failing.output.endswith("\nYour code printed lines (python -m autograder -v shows the last 15)."), \
        failing.output


def test_help_and_usage_errors_fit_80_columns_and_keep_instructors_options_apart():
    shown = run_cli(["--help"], env={"COLUMNS": "80"}).stdout
    # argparse heads the options "options:" from Python 3.10, "optional arguments:" before
    heading = "\noptions:\n" if sys.version_info >= (3, 10) else "\noptional arguments:\n"
    assert heading in shown, shown
    options, _, instructors = shown.partition(heading)[2].partition("\nfor instructors:\n")
    assert all(flag in instructors for flag in ("--fresh-seed", "--solution", "--run-as", "--python"))
    assert not any(flag in options for flag in ("--fresh-seed", "--solution", "--run-as")), options
    assert "python -m autograder handin" in shown and all(len(line) <= 80 for line in shown.splitlines())
    wrong = run_cli(["9.9"], env={"COLUMNS": "80"})
    assert wrong.returncode == 2 and "unknown part '9.9'" in wrong.stderr
    assert all(len(line) <= 80 for line in wrong.stderr.splitlines()), wrong.stderr


def mistake_lines(mistake, root):
    """Where a mistake sits in the edited file: {'line': its line numbers, 'function': its def line}."""
    with open(os.path.join(root, "mytorch", mistake.path)) as f:
        source = f.read()
    start = source.count("\n", 0, source.index(mistake.new)) + 1
    lines = set(range(start, start + mistake.new.count("\n") + 3))
    defs = [k + 1 for k, line in enumerate(source.splitlines()[:start]) if line.lstrip().startswith("def ")]
    return {"line": lines, "function": {defs[-1]}}


class _Kept:
    """A zygote lent to many grades: ``grade`` ends the zygote it is given, and this one stays for the next."""

    def __init__(self, worker):
        self.worker = worker

    def __getattr__(self, name):
        return getattr(self.worker, name)

    def close(self):
        pass


@pytest.fixture(scope="module")
def kept_zygote():
    """One zygote for the catalogue's grades (a test fixture only: batch gives every submission its own, and
    tests/test_zygote.py checks that each child starts from its pristine state): 0.2 s less per mistake."""
    from autograder.sandbox import reaper, zygotes
    reaper.become_subreaper()
    worker = zygotes.Zygote()
    yield _Kept(worker)
    worker.close()


@pytest.mark.parametrize("mistake", mistakes.CATALOGUE, ids=lambda m: m.id)
def test_every_mistake_loses_points_with_its_hint(mistake, tmp_path, kept_zygote):
    """Points off every part it touches; the intended hint; the student's line; a short report."""
    sub = make_submission(tmp_path, [(mistake.path, mistake.old, mistake.new)])
    child = ChildSpec(sub, Limits(timeout=mistake.timeout), zygote=kept_zygote)
    results = grade.grade(child, [spec.PARTS_BY_NUMBER[n] for n in mistake.parts])
    everything = "\n".join(f"--- {r.part.number}\n{r.output}" for r in results)
    full = [r.part.number for r in results if r.score >= r.part.points]
    assert not full, f"{mistake.id} keeps full marks on {full}"
    for text in ((mistake.hint,) if mistake.hint else ()) + mistake.also:
        assert text in everything, everything
    if mistake.located:
        places = {f"mytorch/{mistake.path}:{n}" for n in mistake_lines(mistake, sub)[mistake.located]}
        assert any(place in everything for place in places), (places, everything)
    long = {r.part.number: len(r.output.splitlines()) for r in results
            if len(r.output.splitlines()) > mistake.budget}
    assert not long, f"reports longer than {mistake.budget} lines: {long}\n{everything}"


def test_catalogue_is_large_and_covers_the_hint_list():
    assert len(mistakes.CATALOGUE) >= 40
    for hint in (mistakes.TRANSPOSED, mistakes.SIGN, mistakes.GATE_ORDER, mistakes.SWAPPED_ACTIVATION,
                 mistakes.Z_SWAPPED, mistakes.MATMUL, mistakes.NOT_ACCUMULATED, mistakes.BATCH_MEAN):
        assert any(m.hint == hint for m in mistakes.CATALOGUE)
    assert {n for m in mistakes.CATALOGUE for n in m.parts} == {p.number for p in spec.PARTS}
    texts = [m.hint for m in mistakes.CATALOGUE] + [t for m in mistakes.CATALOGUE for t in m.also]
    for hint in (mistakes.X_AT_W, mistakes.TRANSPOSE_FIX, mistakes.SQUEEZED, mistakes.STABLE, mistakes.HUNG,
                 mistakes.FUTURE_DROPPED, mistakes.TIME_NOT_REVERSED, mistakes.ONLY_LAST_DY, compare.LAYER_ORDER,
                 mistakes.DY_DROPPED, mistakes.IGNORES_LENGTHS, mistakes.IGNORES_LENGTHS_BACKWARD,
                 mistakes.ZEROS_SHARED, compare.TRANSPOSED_RETURN):
        assert any(hint in text for text in texts), hint
    assert any(mistakes.NO_CACHE_FIELD in text for text in texts)


def test_every_bptt_hint_is_shown_at_the_students_line():
    """Each hint ``places`` knows has a mistake in the catalogue that the grader recognises from its values
    and locates at the line it changed (the test above checks both on the grader's output)."""
    for hint in places.PLACE_OF:
        chosen = [m for m in mistakes.CATALOGUE if m.hint == hint]
        assert chosen and all(m.variant and m.located == "line" and m.path == "nn/recurrent.py" for m in chosen), hint


LAYERS_SOURCE = """\
def logged(method):
    method.logged = True
    return method


class Other:
    def backward(self, dY):
        for k in range(3):
            pass


def direction(self, dY, state):
    for t in range(4):
        state = dY[t]


class Forwards:
    _backward_direction = direction


class Layer:
    @logged
    def backward(self, dY):
        total = 0
        for layer in range(2):
            total += layer

    def _backward_direction(self, dY, state):
        '''A docstring whose second line
is at column 0.'''
        for t in reversed(range(4)):
            state = state + dY[t]
            self.cell.backward(state)
"""


def _student_module(folder, name, source):
    """``source`` as the module ``mytorch/<name>.py`` of a submission in ``folder``, imported."""
    import importlib.util
    os.makedirs(folder / "mytorch", exist_ok=True)
    path = folder / "mytorch" / f"{name}.py"
    path.write_text(source)
    spec_ = importlib.util.spec_from_file_location(f"student_{name}", path)
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    return module


def test_places_names_the_line_of_the_students_own_method(tmp_path, monkeypatch):
    """``places.find`` reads the method that runs, by its file and first line: not another class's method of
    the same name in that file, and a decorated one counted from its decorator (as Python counts it)."""
    layers = _student_module(tmp_path, "layers", LAYERS_SOURCE)
    lines = LAYERS_SOURCE.splitlines()
    at = {text: f"mytorch/layers.py:{lines.index(text) + 1}: {text.strip()}"
          for text in lines if text.strip().startswith(("for", "self.cell", "state"))}
    assert places.find(layers.Layer(), str(tmp_path)) == {
        "layer loop": at["        for layer in range(2):"], "time loop": at["        for t in reversed(range(4)):"],
        "step gradient": at["            state = state + dY[t]"],
        "masked gradient": at["            self.cell.backward(state)"]}
    assert places.find(layers.Other(), str(tmp_path)) == {"layer loop": at["        for k in range(3):"]}
    assert places.find(object(), str(tmp_path)) == {}
    # each method is read from its own lines; the whole file, where they are not one definition, says the same
    assert places.find(layers.Forwards(), str(tmp_path)) == {"time loop": at["    for t in range(4):"],
                                                              "step gradient": at["        state = dY[t]"]}
    # each method is read from its own lines (its last line is known from code.co_positions, Python 3.11+;
    # before it, always from the whole file); the whole file, where they are not one definition, says the same
    method = layers.Layer._backward_direction.__code__
    if sys.version_info >= (3, 11):
        assert places._own_definition(method).lineno == method.co_firstlineno
    else:
        assert places._own_definition(method) is None
    own = [places._places(layer, str(tmp_path)) for layer in (layers.Layer(), layers.Forwards())]
    monkeypatch.setattr(places, "_own_definition", lambda code: None)
    assert [places._places(layer, str(tmp_path)) for layer in (layers.Layer(), layers.Forwards())] == own


ORDERED_SOURCE = """\
class Layer:
    def backward(self, dY):
        order = list(range(2))
        order.reverse()
        for layer in order:
            pass

    def _backward_direction(self, dY, state):
        steps = range(4)
        steps = reversed(steps)
        for t in steps:
            state = state + dY[t]
"""


def test_a_loop_over_a_named_order_is_placed_at_the_line_that_decides_the_order(tmp_path):
    """``for t in steps:`` walks in the order ``steps = …`` decided: a hint about the order (time not reversed,
    layers bottom-up) names that assignment, the last one before the loop, not the loop's own line."""
    found = places.find(_student_module(tmp_path, "ordered", ORDERED_SOURCE).Layer(), str(tmp_path))
    assert found["layer loop"] == "mytorch/ordered.py:3: order = list(range(2))"
    assert found["time loop"] == "mytorch/ordered.py:10: steps = reversed(steps)"
    assert found["step gradient"] == "mytorch/ordered.py:12: state = state + dY[t]"


def test_a_naive_sigmoid_costs_its_points_even_with_numpys_warnings_silenced_at_import(tmp_path, kept_zygote):
    """np.seterr(all="ignore") at the top of a file would hide the overflow that the naive sigmoid's hint is
    given for: each case runs under NumPy's default error handling."""
    naive = next(m for m in mistakes.CATALOGUE if m.id == "gru-naive-sigmoid")
    sub = make_submission(tmp_path, [(naive.path, naive.old, naive.new),
                                     (naive.path, "import numpy as np\n", "import numpy as np\nnp.seterr(all='ignore')\n")])
    result, = grade.grade(ChildSpec(sub, zygote=kept_zygote), [spec.PARTS_BY_NUMBER["2.1"]])
    assert result.score < result.part.points and naive.hint in result.output, result.output


def test_equals_for_plus_equals_is_caught_for_every_parameter_of_every_cell():
    """Each parameter a cell accumulates has its `=` mistake (the initial-state vectors of the TGRU are added
    once per sequence, so `=` is right for them)."""
    ids = {m.id for m in mistakes.CATALOGUE}
    for cell, params in (("rnn", ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
                         ("gru", ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
                         ("gru_block", ("w_ru", "w_c", "b_ru", "b_c")),
                         ("gmu", ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_ch_m", "weight_ch_o")),
                         ("tgru", ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))):
        for name in params:
            assert f"{cell}-{name}-assigned" in ids


def test_fresh_seed_defeats_hard_coded_answers(tmp_path):
    """A forward that looks its answer up in the stored reference data passes normally, and fails on fresh cases."""
    cheat = (
        "        import glob, numpy\n"
        f"        for f in glob.glob({os.path.join(REPO, 'autograder', 'data', 'part_1.1.npz')!r}):\n"
        "            d = numpy.load(f)\n"
        "            for k in range(10):\n"
        "                if f'{k}:in:x' in d.files and numpy.array_equal(d[f'{k}:in:x'][0], x):\n"
        "                    return d[f'{k}:out:h_t']\n"
        "        x, (h,), batched, _ = self._prepare(x, state)\n")
    sub = make_submission(tmp_path, [("nn/rnn_cell.py", "        x, (h,), batched, _ = self._prepare(x, state)\n",
                                      cheat + "        raise NotImplementedError\n")])
    part = [spec.PARTS_BY_NUMBER["1.1"]]
    assert grade.grade(sub, part)[0].score == part[0].points
    assert grade.grade(sub, part, fresh_seed=424242, solution=REPO)[0].score == 0


def test_fresh_seed_on_the_solution(tmp_path):
    proc = run_cli(["1", "--fresh-seed", "99", "--json", str(tmp_path / "r.json")])
    assert proc.returncode == 0 and "fresh cases from seed 99" in proc.stdout
    assert load_results(tmp_path / "r.json")["score"] == sum(p.points for p in spec.select_parts(["1"]))


def test_batch_writes_scores(tmp_path):
    make_submission(tmp_path / "subs" / "alice")
    m = mistakes.CATALOGUE[0]
    make_submission(tmp_path / "subs" / "bob", [(m.path, m.old, m.new)])
    proc = run_cli(["batch", str(tmp_path / "subs"), "--jobs", "2", "--csv", str(tmp_path / "scores.csv")],
                   cwd=make_grader_copy(tmp_path / "grader", TWO_SECTIONS))
    assert proc.returncode == 0, proc.stderr
    rows = (tmp_path / "scores.csv").read_text().splitlines()
    assert rows[0].startswith("submission,handed in as,1.1,1.2") and rows[0].endswith(",total,problem,reason")
    assert rows[1].startswith("alice,mytorch/,") and rows[1].endswith(",100,,")
    assert rows[2].startswith("bob,mytorch/,") and float(rows[2].split(",")[-3]) < 100


def test_handin_packs_the_student_files(tmp_path):
    sub = make_submission(tmp_path / "me")
    os.makedirs(os.path.join(sub, "mytorch", "__pycache__"), exist_ok=True)
    open(os.path.join(sub, "mytorch", "__pycache__", "x.pyc"), "w").close()
    open(os.path.join(sub, "secret.txt"), "w").close()
    proc = run_cli(["handin", "--submission", sub, "--out", str(tmp_path / "handin.tar")])
    assert proc.returncode == 0, proc.stderr
    names = tarfile.open(tmp_path / "handin.tar").getnames()
    assert "mytorch/nn/gru_cell.py" in names and "mytorch/__init__.py" in names
    assert not any("__pycache__" in n or "secret" in n for n in names)


def test_a_student_inside_their_mytorch_grades_and_packs_their_own(tmp_path):
    """From mytorch/nn/ (where a student edits), the grader grades the mytorch of the nearest folder above that
    holds one, says which, and handin writes handin.tar beside it; from a folder with none above it, it grades
    this checkout and says so."""
    mistake = next(m for m in mistakes.CATALOGUE if m.id == "rnn-sigmoid-for-tanh")
    sub = make_submission(tmp_path / "me", [(mistake.path, mistake.old, mistake.new)])
    inside = os.path.join(sub, "mytorch", "nn")
    proc = run_cli(["1.1"], cwd=inside)
    assert f"Grading the mytorch in {sub} " in " ".join(proc.stdout.split()), proc.stdout
    assert "4.00/4" not in proc.stdout, proc.stdout
    packed = run_cli(["handin", "--no-grade"], cwd=inside)
    assert packed.returncode == 0 and f"Packing the mytorch in {sub} " in " ".join(packed.stdout.split()), packed
    assert "mytorch/nn/rnn_cell.py" in tarfile.open(os.path.join(sub, "handin.tar")).getnames()
    assert not os.path.exists(os.path.join(inside, "handin.tar"))
    (tmp_path / "elsewhere").mkdir()
    proc = run_cli(["1.1"], cwd=tmp_path / "elsewhere")
    assert f"Grading the mytorch beside this grader, in {REPO}: no folder from here up holds a mytorch/" in \
        " ".join(proc.stdout.split()) and "4.00/4" in proc.stdout, proc.stdout      # not "the nearest folder"
    assert "Grading the mytorch" not in run_cli(["1.1"], cwd=sub).stdout      # its own folder: nothing to say


def test_sequence_parts_grade_the_per_step_loop_not_a_fast_path(tmp_path):
    """A cell's fast path is never what part 6 grades: the driver turns it off (here it would raise)."""
    fast = ("\nfor _alias in COURSE_ORDER:",                  # replaces the cell's own fast path, if it has one
            "\ndef _fast(self, X, state0, lengths=None, reverse=False):\n"
            "    raise RuntimeError(\"a fast path the grader must not call\")\n\n\n"
            "GRUCell.sequence_forward = _fast\n\nfor _alias in COURSE_ORDER:")
    sub = make_submission(tmp_path, [("nn/gru_cell.py", *fast)])
    result = grade.grade(sub, [spec.PARTS_BY_NUMBER["6.2"]])[0]
    assert result.score == result.part.points, result.output
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np; from mytorch.nn import GRU\n"
            "GRU(3, 4).forward(np.zeros((2, 1, 3)))")
    proc = subprocess.run([sys.executable, "-c", code, sub], capture_output=True, text=True)
    assert "a fast path the grader must not call" in proc.stderr        # outside the grader, it is tried first


CELLS_SOURCE = """
class Adds:
    def backward(self, d):
        p, g = self.params, self.grads
        g["w"] += d
        g["b"] += d


class Binds(Adds):
    def backward(self, d):
        grads = self.grads
        grads["w"] += d
        grads["b"] = d.sum(axis=0)
        self.grads["c"] = d


class Layer:
    def __init__(self, cell):
        self.cells = [cell]
"""


def test_places_finds_a_cells_gradient_bound_anew_and_only_that_proves_the_zeros_hint(tmp_path):
    """A sequence layer's gradient of zeros is explained by a cell that binds a new array (``grads[name] = …``)
    only where the child found such a line in the layer's cell; otherwise the hint says the fact alone."""
    cells = _student_module(tmp_path, "cells", CELLS_SOURCE)
    line = CELLS_SOURCE.splitlines().index('        grads["b"] = d.sum(axis=0)') + 1
    assert places.find(cells.Layer(cells.Adds()), str(tmp_path)) == {}
    found = places.find(cells.Layer(cells.Binds()), str(tmp_path))
    assert found == {"grads assigned": f'mytorch/cells.py:{line}: grads["b"] = d.sum(axis=0)'}
    hint = ("grads['w']", compare.ZERO_GRAD_SEQUENCE)
    assert feedback._zeros_explained(hint, found) == (
        "grads['w']", f"{compare.ZERO_GRAD_SEQUENCE}; look at {found['grads assigned']}")
    assert feedback._zeros_explained(hint, {}) == ("grads['w']", compare.NO_GRADIENT)
    assert feedback._zeros_explained(("x", "another hint"), found) == ("x", "another hint")

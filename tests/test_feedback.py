"""What the grader prints: within the terminal's width, coloured only on a terminal, never crashing on an
encoding that lacks σ ⊙ ─, with progress while parts run; messages built from untrusted child reports;
the score and the warnings of ``handin``."""
import io
import os
import subprocess
import sys
import tarfile
import types

import numpy as np
import pytest

from autograder.diagnosis import compare, feedback, mistakes, report
from autograder.parts import data, driver, spec
from autograder.sandbox import runner
from tests.graderkit import REPO, make_submission, run_cli

# one mistake per kind of message: errors with a location, stored-output hints, overflow warnings, zeros
FAILING = ("gru-z-swapped", "seq-no-gradient-from-the-future", "rnn-x-at-weight-untransposed", "gb-naive-sigmoid",
           "tgru-weight_hh-assigned", "gmu-m-swapped")


@pytest.fixture(scope="module")
def failing_submission(tmp_path_factory):
    chosen = [m for m in mistakes.CATALOGUE if m.id in FAILING]
    assert len(chosen) == len(FAILING)
    return make_submission(tmp_path_factory.mktemp("failing"), [(m.path, m.old, m.new) for m in chosen])


def lines_of(text):
    return text.splitlines()


def test_a_full_failing_run_fits_80_columns_and_shows_progress(failing_submission):
    proc = run_cli(["--submission", failing_submission])
    assert proc.returncode == 0, proc.stderr
    out, err = proc.stdout, proc.stderr
    too_long = [line for line in lines_of(out) + lines_of(err) if len(line) > 80]
    assert not too_long, too_long
    assert "\033[" not in out + err                           # not a terminal: no colour
    assert "Hint: these values are what z and 1 − z swapped would give" in out
    progress = [line for line in lines_of(err) if line.startswith("[")]
    assert len(progress) == len(spec.PARTS)                   # one line per finished part
    assert progress[-1].startswith(f"[{len(spec.PARTS)}/{len(spec.PARTS)}] ")
    assert [line.split()[1] for line in progress] == [p.number for p in spec.PARTS]     # in part order
    assert any(line.endswith("✗") for line in progress) and any("6/6" in line for line in progress)


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_an_ascii_or_cp1252_stdout_never_crashes(failing_submission, encoding):
    env = dict(os.environ, PYTHONPATH="", PYTHONIOENCODING=encoding, LC_ALL="C")
    proc = subprocess.run([sys.executable, "-m", "autograder", "--submission", failing_submission], cwd=REPO,
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    text = proc.stdout.decode(encoding)                       # strict: all of it is in the encoding
    assert "Total" in text and "Hint:" in text
    assert "z and 1 - z swapped" in text                      # − spelled as -
    assert "(1 - z) * n + z * h" in text                      # ⊙ spelled as *
    assert "-- 1.1 RNN cell forward: failed ---" in text      # ─ spelled as -


class FakeTerminal(io.StringIO):
    encoding = "utf-8"

    def isatty(self):
        return True


def test_console_wraps_to_the_width_and_colours_only_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "50")
    long = "  Hint: " + "a fairly long hint with words " * 10
    tty = report.Console(FakeTerminal(), environ={})
    assert tty.width == 50 and tty.colour
    tty.print(long)
    shown = tty.stream.getvalue()
    assert "\033[33mHint:\033[0m" in shown
    plain = [line.replace("\033[33m", "").replace("\033[0m", "") for line in shown.splitlines()]
    assert len(plain) > 1 and all(len(line) <= 50 for line in plain)
    assert all(line.startswith("        ") for line in plain[1:])          # under the hint's first word
    no_colour = report.Console(FakeTerminal(), environ={"NO_COLOR": "1"})
    no_colour.print(long)
    assert "\033[" not in no_colour.stream.getvalue()
    pipe = report.Console(io.StringIO(), environ={})
    assert pipe.width == 80 and not pipe.colour


def test_console_spells_what_the_encoding_lacks():
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    console = report.Console(stream, environ={})
    console.print("σ(a) ⊙ h ─── ✗ … ᵀ and a stray ☃")
    stream.seek(0)
    assert stream.read() == "sigma(a) * h --- x ... ^T and a stray ?\n"


def test_progress_is_a_live_line_on_a_terminal():
    console = report.Console(FakeTerminal(), environ={"NO_COLOR": "1"})
    progress = report.Progress(console, 2)
    for part in spec.PARTS[:2]:
        progress(type("R", (), {"part": part, "score": part.points, "status": "passed"})())
    progress.finish()
    written = console.stream.getvalue()
    assert written.count("\r\033[K") == 3 and "\n" not in written
    points = spec.PARTS_BY_NUMBER["1.2"].points
    assert f"[2/2] 1.2 RNN cell backward: {points}/{points}" in written


def test_where_it_hung_reads_a_faulthandler_dump_and_nothing_else():
    dump = ('Thread 0x00007f (most recent call first):\n'
            '  File "/tmp/x/mytorch/nn/cell.py", line 80 in _prepare\n'
            '  File "/tmp/x/mytorch/nn/rnn_cell.py", line 57 in forward\n'
            '  File "/opt/autograder/parts/driver.py", line 96 in cell_case\n')
    assert feedback.where_it_hung(dump) == "mytorch/nn/rnn_cell.py:57 in forward"
    assert feedback.strip_dump("my print\n" + dump) == "my print\n"
    assert feedback.where_it_hung("no dump here " * 1000) == ""
    assert feedback.where_it_hung('File "/a/mytorch/' + "x" * 5000 + '", line 1 in f') == ""


def test_a_loop_that_calls_a_function_is_located_in_itself_not_in_the_function():
    """Near the limit the child prints faulthandler's dump, then the frames its stack held at every one of many
    looks (``worker.dump_again``): the innermost frame of the student's in both is the loop's, though the one
    dump caught it inside the cell it calls."""
    def dump(header, *frames):
        return f"Timeout ({header})!\nThread 0x00007f (most recent call first):\n" + "".join(
            f'  File "{path}", line {line} in {name}\n' for path, line, name in frames)
    grader = [("/opt/autograder/parts/driver.py", 199, "sequence_case"), ("/opt/autograder/sandbox/worker.py", 156, "main")]
    caught = dump("0:00:01", ("/tmp/x/mytorch/nn/rnn_cell.py", 58, "forward"),
                  ("/tmp/x/mytorch/nn/recurrent.py", 199, "_run_direction"),
                  ("/tmp/x/mytorch/nn/recurrent.py", 123, "forward"), *grader)
    looks = dump("the frames held at all 38 looks", ("/tmp/x/mytorch/nn/recurrent.py", 201, "_run_direction"),
                 ("/tmp/x/mytorch/nn/recurrent.py", 123, "forward"), *grader)
    assert feedback.where_it_hung("my print\n" + caught + looks) == "mytorch/nn/recurrent.py:201 in _run_direction"
    assert feedback.where_it_hung(caught) == "mytorch/nn/rnn_cell.py:58 in forward"      # one look: where it was
    cut = looks[:looks.index("recurrent.py", looks.index("201"))]            # the looks cut short by the kill
    assert feedback.where_it_hung(caught + cut) == "mytorch/nn/rnn_cell.py:58 in forward"


def test_repeated_dumps_give_the_students_line_and_none_of_them_is_shown_as_output():
    """A child that started late dumps every tenth of a second: the last dump that reaches the student's code
    is read (the very last, cut short by the kill, shows only a provided function), and a tail of the output
    that begins inside a dump shows none of it, though the student's own traceback (``line N, in f``) stays."""
    def dump(*frames):
        return "Timeout (0:00:00.100000)!\nThread 0x00007f (most recent call first):\n" + "".join(
            f'  File "/tmp/x/mytorch/{path}", line {line} in {name}\n' for path, line, name in frames)
    complete = dump(("nn/cell.py", 80, "_prepare"), ("nn/rnn_cell.py", 61, "forward"))
    cut_short = dump(("nn/cell.py", 80, "_prepare"))
    assert feedback.where_it_hung(dump(("nn/rnn_cell.py", 57, "forward")) + complete + cut_short) == \
        "mytorch/nn/rnn_cell.py:61 in forward"
    assert feedback.where_it_hung(cut_short) == "mytorch/nn/cell.py:80 in _prepare"
    own = 'Traceback (most recent call last):\n  File "/tmp/x/mytorch/nn/rnn_cell.py", line 9, in f\nValueError\n'
    for cut in (complete.index("  File"), complete.index("mytorch")):     # at a line, inside one
        assert feedback.strip_dump(own + complete[cut:] + complete) == own
        assert feedback.strip_dump(complete[cut:] + complete) == ""


def test_a_child_report_of_the_wrong_types_is_ignored_not_trusted():
    part = spec.PARTS_BY_NUMBER["1.1"]
    stored = data.load_part("1.1")
    reports = [{"status": "ok", "types": ["not", "a", "dict"], "mutated": "not a list",
                "warnings": [{"overflow": 1}, "overflow " + "x" * 10000]}] * len(stored.configs)
    outcome = runner.Outcome(reports=reports, arrays={})
    score, status, output, _ = feedback.judge_part(part, stored, outcome)
    assert score == 0 and status == "failed"
    assert max(map(len, output.splitlines())) < 1000          # the long warning was cut


def test_an_input_changed_in_place_is_named_once_however_often_it_was_seen():
    part = spec.PARTS_BY_NUMBER["1.1"]
    stored = data.load_part("1.1")
    reports = [{"status": "ok", "mutated": ["parameter bias_ih", "parameter bias_ih"]}] * len(stored.configs)
    arrays = {(k, name): a for k, expected in enumerate(stored.expected) for name, a in expected.items()}
    score, status, output, _ = feedback.judge_part(part, stored, runner.Outcome(reports=reports, arrays=arrays))
    assert score == 0 and "modified parameter bias_ih in place: never change" in output
    assert "bias_ih, parameter bias_ih" not in output


def test_shapes_and_indices_are_the_students_not_the_step_axis():
    expected = np.arange(6.0).reshape(1, 2, 3)                # one backward call, N=2, I=3
    wrong = expected.copy()
    wrong[0, 1, 2] += 1
    verdict = compare.compare("dx", wrong, expected, "numpy.ndarray of dtype float64", steps=1)
    assert "first at index (1, 2)" in verdict.message
    three = np.zeros((3, 2, 3))
    bad = three.copy()
    bad[2, 0, 1] = 1
    assert "index (0, 1) of step 3's backward" in compare.compare("dx", bad, three, "x", steps=3).message
    squeezed = compare.compare("dx", np.zeros((1, 3)), np.zeros((1, 1, 3)), "x", steps=1)
    assert squeezed.message == "dx: shape (3,), expected (1, 3)"
    scalar = compare.compare("dx", None, np.zeros((1, 3)), "numpy.float64", steps=1)
    assert scalar.message == "dx: expected a numpy.ndarray of shape (3,), got numpy.float64"
    assert any(mistakes.SQUEEZED in text for _, text in scalar.hints)


def test_a_shape_hint_names_the_cause_the_shapes_show():
    """A parameter's gradient kept with keepdims is told it has the parameter's shape (not about batched input);
    a result summed over a batch of 4 is told so (not that it lost an axis of length 1), per step too."""
    rng = np.random.default_rng(2)
    bias = rng.standard_normal(5)
    kept = compare.compare("grad/bias_ih", bias[None], bias, "x", batch=4, label="grads['bias_ih']")
    assert kept.hints == (("grads['bias_ih']", "the right values in the wrong shape: a parameter's gradient has "
                                               "the parameter's own shape, whatever the batch (a sum over the "
                                               "batch without keepdims)"),)
    dx = rng.standard_normal((1, 4, 3))                       # one backward call, N=4, I=3
    summed = compare.compare("dx", dx.sum(axis=1), dx, "x", batch=4, steps=1)
    assert summed.message == "dx: shape (3,), expected (4, 3)"
    assert [text for _, text in summed.hints] == [
        "the sum over the batch of the expected rows: this result has one row per example, (N, ·); sum over the "
        "batch only for a parameter's gradient"]
    assert compare.compare("dx", dx.sum(axis=1) + 1, dx, "x", batch=4, steps=1).hints == ()
    unbatched = compare.compare("h_t", bias[None], bias, "x", batch=1)
    assert "an unbatched input (1-D) gives 1-D results" in unbatched.hints[0][1]


def test_a_bias_gradient_summed_over_every_axis_and_a_deleted_file_are_named():
    rng = np.random.default_rng(3)
    da = rng.standard_normal((4, 5))
    summed = compare.compare("grad/bias_ih", np.full(5, da.sum()), da.sum(axis=0), "x", batch=4, label="b")
    assert ("b", "every entry the same: a sum over every axis (np.sum(d) with no axis) where a bias's gradient "
                 "sums over the batch alone, np.sum(d, axis=0)") in summed.hints
    assert not any("every entry" in text for _, text in
                   compare.compare("grad/bias_ih", np.zeros(5), da.sum(axis=0), "x", batch=4, label="b").hints)
    assert compare.error_hints("ModuleNotFoundError: No module named 'mytorch.nn.gru_cell'") == [
        "mytorch/nn/gru_cell.py is missing: restore it from the handout (its name and folder as they were)"]


def test_a_nan_is_counted_as_one_and_the_errors_are_those_of_the_numbers():
    """NaN has no size: a mismatch line counts the NaN among the entries that differ, and its largest errors
    are those of the entries that are numbers (an error of 0 beside 11 wrong entries told a student nothing)."""
    expected = np.arange(1.0, 17.0).reshape(4, 4)
    wrong = expected.copy()
    wrong[0, :3], wrong[1, 1] = np.nan, expected[1, 1] + 0.5
    message = compare.compare("n", wrong, expected, "x").message
    assert message.startswith("n: values differ in 4 of 16 entries (3 of them NaN); max abs error 0.5, max rel "
                              f"error {0.5 / expected[1, 1]:.3g}\n  first at index (0, 0): got nan, expected 1\n"), message
    wrong[1, 1] = expected[1, 1]
    message = compare.compare("n", wrong, expected, "x").message
    assert message.splitlines()[0] == "n: values differ in 3 of 16 entries (all of them NaN)"
    assert "n contains NaN" in message
    wrong[:] = expected
    wrong[3, 3] = np.inf
    assert compare.compare("n", wrong, expected, "x").message.splitlines()[0] == \
        "n: values differ in 1 of 16 entries; max abs error inf, max rel error inf"
    # where 0 was expected (a padded step's output) a relative error says nothing: it is counted instead
    padded = np.array([[0.5, 0.0], [2.0, 0.0]])
    got = np.array([[0.5, 3.0], [2.2, 0.0]])
    assert compare.compare("Y", got, padded, "x").message.splitlines()[0] == \
        "Y: values differ in 2 of 4 entries; max abs error 3, max rel error 0.1; 1 of them where 0 was expected"
    assert compare.compare("Y", np.array([[0.5, 3.0], [2.0, 0.0]]), padded, "x").message.splitlines()[0] == \
        "Y: values differ in 1 of 4 entries; max abs error 3; 1 of them where 0 was expected"
    # labels and flags (integers) differ or not: no error sizes (a flag 1 for 0 was 'max rel error 1e+12')
    flags = np.array([0, 0, 0, 1, 0, 1])
    assert compare.compare("skip_connect", np.array([0, 0, 0, 1, 1, 1]), flags, "x").message.splitlines() == \
        ["skip_connect: values differ in 1 of 6 entries", "  first at index (4,): got 1, expected 0"]


@pytest.mark.parametrize("line, fix", [
    ('a = x @ p["weight_ih"] + self._bias("bias_ih")', 'Check the .T on p["weight_ih"]'),
    ("r_u_bar = np.concatenate([x, h_prev], axis=1) @ w_ru.T + b_ru", "Weights are stored (out, in)"),
    ('a = x.T @ p["weight_ih"].T + b', "Weights are stored (out, in)"),        # which .T is wrong: not said
    ('a = p["weight_ih"].T @ x + b', "Weights are stored (out, in)"),         # the operands swapped: not said
    ('a = x @ p["weight_ih"].T + h @ p["weight_hh"] + b', 'Check the .T on p["weight_hh"]'),
    ("n = np.tanh(gx[:, 2 * H:] + r @ g_n)", "an elementwise product"),
    ("y = f(a) @ g(b)", "either one side needs a transpose"),
    ('g["weight_hh"] += da @ cache.hidden', "check the order of the operands and the .T"),   # not elementwise
    ("self.dWrx += np.outer(dr, x) @ x", "check the order of the operands and the .T"),
    ('g["weight_ih"] += da.T @ cache.hidden.T', "check which input this line uses"),  # the .T is there
    ('grads["weight_hh"] = (da * s).T @ h_prev.T', "check which input this line uses"),
])
def test_a_matmul_error_names_the_fix_its_line_needs(line, fix):
    error = "ValueError: matmul: Input operand 1 has a mismatch in its core dimension 0"
    hints = compare.error_hints(error, f"mytorch/nn/x.py:3 in forward: {line}")
    assert len(hints) == 1 and fix in hints[0]
    assert "Check the .T" not in hints[0] or fix.startswith("Check the .T")


def test_a_backward_that_returns_an_unusable_state_is_located_at_its_qualified_definition(tmp_path):
    """A value a backward returned that the next step cannot use is located at that method's definition, named
    as ``Class.method`` on every Python (``co_qualname`` is 3.11's; before it, the function's ``__qualname__``)."""
    folder = tmp_path / "mytorch"
    folder.mkdir()
    source = "class MyCell:\n    def backward(self, d):\n        return d, d\n"
    (folder / "my_cell.py").write_text(source)
    namespace = {}
    exec(compile(source, str(folder / "my_cell.py"), "exec"), namespace)
    with pytest.raises(driver.WrongShape) as caught:
        driver._check_carried(namespace["MyCell"](), ["h"], (np.zeros(2), np.zeros(2)), [np.zeros(2)], 0, 3)
    assert driver.where_in(caught.value, str(tmp_path)) == "mytorch/my_cell.py:2 in MyCell.backward"


def test_handin_grades_first_warns_and_says_where_to_upload(tmp_path):
    sub = make_submission(tmp_path / "me", [("nn/rnn_cell.py", "        # BEGIN SOLUTION\n        a = x @",
                                             "        raise NotImplementedError('RNNCell.forward')\n        a = x @")])
    out = tmp_path / "handin.tar"
    proc = run_cli(["handin", "--submission", sub, "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())                                   # unwrapped
    lost = sum(spec.PARTS_BY_NUMBER[p].points for p in ("1.1", "1.2", "6.1"))     # RNNCell.forward is used there
    assert f"Graded locally before packing: {100 - lost}/100 points" in text
    assert "Warning: 3 parts are not implemented yet and score 0: 1.1 RNN cell forward" in text
    assert text.index("Warning") < text.index("Wrote")                    # before the archive is written
    assert f"Upload{out}tothisassignment(thefileitself" in "".join(text.split())    # a long path may be cut
    assert "mytorch/nn/rnn_cell.py" in tarfile.open(out).getnames()
    quick = run_cli(["handin", "--submission", sub, "--out", str(out), "--no-grade"])
    assert quick.returncode == 0 and "Graded locally" not in quick.stdout


def test_the_generator_knows_gradient_assignment_for_every_parameter():
    """Every multi-step backward case stores what `=` for `+=` gives, for each parameter it grades."""
    for part in spec.PARTS:
        if part.kind != "backward":
            continue
        stored = data.load_part(part.number)
        for config, expected, variants in zip(stored.configs, stored.expected, stored.variants):
            if config["steps"] == 1:
                continue
            graded = {n for n in expected if n.startswith("grad/") and n[5:] not in ("hidden_state", "memory")}
            hinted = {n for n, pairs in variants.items() if any(t == mistakes.NOT_ACCUMULATED for t, _ in pairs)}
            assert graded <= hinted, (part.number, graded - hinted)
            assert not any(n.startswith("after_step/") for n in expected)
    assert os.path.isdir(os.path.join(REPO, "autograder", "data"))


def test_progress_lines_come_in_part_order_whatever_order_parts_finish_in():
    stream = io.StringIO()
    parts = spec.PARTS[:4]
    progress = report.Progress(report.Console(stream, environ={"NO_COLOR": "1"}), 4, [p.number for p in parts])
    for part in (parts[2], parts[0], parts[3], parts[1]):
        progress(type("R", (), {"part": part, "score": 0, "status": "failed"})())
    lines = stream.getvalue().splitlines()
    assert [line.split()[:2] for line in lines] == [[f"[{k + 1}/4]", p.number] for k, p in enumerate(parts)]


def test_a_wrong_decoded_path_is_shown_as_the_two_strings(tmp_path):
    """A greedy decoder that drops the blanks before merging repeats: the first failing case shows the path it
    returned and the expected one as strings (computed here afresh from the case's y_probs), not as the symbol
    indices the child sends, and the mistake's hint is still given."""
    mistake = next(m for m in mistakes.CATALOGUE if m.id == "ctc-greedy-drops-blanks-first")
    sub = make_submission(tmp_path / "sub", [(mistake.path, mistake.old, mistake.new)])
    proc = run_cli(["8.7", "--submission", sub, "--json", str(tmp_path / "r.json")])
    assert proc.returncode == 0, proc.stderr
    stored = data.load_part("8.7")
    for k, (config, inputs) in enumerate(zip(stored.configs, stored.inputs)):
        best = inputs["y_probs"][..., 0].argmax(axis=0) if inputs["y_probs"].ndim == 3 else \
            inputs["y_probs"].argmax(axis=0)
        merged = [c for t, c in enumerate(best) if t == 0 or c != best[t - 1]]
        right = "".join(config["symbol_set"][c - 1] for c in merged if c != 0)
        kept = [c for c in best if c != 0]
        wrong = "".join(config["symbol_set"][c - 1] for t, c in enumerate(kept) if t == 0 or c != kept[t - 1])
        if right != wrong:
            break
    shown = " ".join(proc.stdout.split())
    assert f'case {k + 1} (' in shown and f'decoded_path: got "{wrong}", expected "{right}"' in shown, proc.stdout
    assert "values differ" not in shown.split(f"case {k + 1} (")[1].split("case ")[0]
    assert " ".join(mistake.hint.split())[:40] in shown


def test_a_layer_part_stopped_at_its_cells_todo_names_the_cells_part_and_is_shown():
    """A sequence part that reached a TODO in the cell it runs (its own layer done) says which cell part to
    finish first, and the report shows that without --verbose; a TODO of the layer itself stays one mark."""
    from autograder import grade
    part, stored = spec.PARTS_BY_NUMBER["6.3"], data.load_part("6.3")

    def judged(where):
        reports = [{"status": "not_implemented", "where": where}] * len(stored.configs)
        score, status, output, _ = feedback.judge_part(part, stored, runner.Outcome(reports=reports, arrays={}))
        return grade.PartResult(part, score, status, output)
    cell = judged("mytorch/nn/gru_block_cell.py:46 in forward: raise NotImplementedError")
    assert cell.status == "not implemented" and cell.output == (
        "not implemented yet: the layer runs your GRUBlockCell, whose forward is still a TODO "
        "(mytorch/nn/gru_block_cell.py:46 in forward): finish part 3.1 first")
    assert "finish part 3.2 first" in judged("mytorch/nn/gru_block_cell.py:80 in backward: raise").output
    layer = judged("mytorch/nn/recurrent.py:118 in forward: raise NotImplementedError")
    assert layer.output == "not implemented yet (the first TODO it reached: mytorch/nn/recurrent.py:118 in forward)"
    table = report.table([cell, layer])
    assert "finish part 3.1 first" in table and "recurrent.py:118" not in table


def test_a_known_mistakes_hint_is_said_only_when_that_mistake_gives_every_output_of_every_case():
    """The hint of a known mistake is kept only when the mistake's stored values (and the reference's, where it
    changes nothing) are the student's outputs in every case: one array of one case matching (two mistakes
    that agree there) says nothing; nor does a case the mistake changes that the student passed, or a second
    output the mistake changes that the student's code got otherwise. A case the student's code raised in
    disproves it where the mistake gave values, and is no evidence where it did not."""
    right, mistake = {"dY": np.ones(2), "dX": np.ones(3)}, {"dY": np.zeros(2), "dX": np.full(3, 2.0)}
    data = types.SimpleNamespace(expected=[right, right, right],
                                 variants=[{n: [("T", mistake[n])] for n in mistake}, {"dY": [("T", mistake["dY"])]}, {}])
    ok = [{"status": "ok"}] * 3

    def kept(outputs, reports=ok):
        verdicts = [feedback.CaseVerdict(False, f"case {k}", hints=["T", "other"]) for k in range(3)]
        feedback._drop_unproved(verdicts, data, reports, outputs)
        return [v.hints for v in verdicts]
    both = {"dY": np.zeros(2), "dX": np.full(3, 2.0)}
    dy_only = {"dY": np.zeros(2), "dX": np.ones(3)}
    assert kept([both, dy_only, right]) == [["T", "other"]] * 3                         # every output, every case
    assert kept([both, both, right]) == [["other"]] * 3                                # case 2's dX unlike it
    assert kept([both, right, right]) == [["other"]] * 3                               # case 2 passed: not it
    assert kept([dy_only, dy_only, right]) == [["other"]] * 3                          # one array of case 1
    assert kept([both, dy_only, dy_only]) == [["other"]] * 3                           # case 3 changed: not it
    assert kept([both, {}, right], [ok[0], {"status": "error"}, ok[2]]) == [["other"]] * 3   # raised where it gave values
    assert kept([both, dy_only, {}], [ok[0], ok[1], {"status": "error"}]) == [["T", "other"]] * 3   # where it gave none
    assert kept([{"dY": np.zeros(2, np.float32), "dX": np.full(3, 2.0)}, dy_only, right]) == [["other"]] * 3


def test_an_opposite_sign_is_explained_for_the_ctc_gradient_in_its_own_terms():
    dy = np.random.default_rng(5).standard_normal((3, 2, 4))
    assert "dY = −Σ γ / y" in compare.compare("dY", -dy, dy, "x").hints[0][1]
    assert "1 − z versus z − 1" in compare.compare("dh", -dy[0], dy[0], "x").hints[0][1]


def _verdict(number, body, config="N=2"):
    header = f"case {number} ({config})"
    return feedback.CaseVerdict(False, header, [f"{header}: {body}", "  more of it"], f"{header}: {body}")


def test_cases_failing_the_same_way_share_one_line():
    """After the first failing case in full, cases whose one-line summaries differ only in their numbers are one
    line; a line number is never such a number; a kind the first case had says so."""
    at = "(at mytorch/nn/rnn_cell.py:76 in backward)"
    same = [_verdict(k, f"ValueError: matmul: size {k} is different from 5 {at}") for k in (1, 2, 3, 4)]
    lines, _ = feedback._message(same, verbose=False)
    assert lines == same[0].lines + ["cases 2–4: the same as case 1 (each with its own sizes or values)"]
    other_line = _verdict(5, "ValueError: matmul: size 5 is different from 5 (at mytorch/nn/rnn_cell.py:77 in "
                             "backward)")
    shape = [_verdict(k, "Y: shape (3, 4), expected (4, 3)") for k in (6, 8)]
    lines, _ = feedback._message(same[:2] + [other_line] + shape + [same[3]], verbose=False)
    assert lines[2:] == ["cases 2 and 4: the same as case 1 (each with its own sizes or values)",
                         other_line.summary,                              # another line of the file: its own
                         "cases 6 and 8: Y: shape (3, 4), expected (4, 3)"]
    assert feedback._message(same, verbose=True)[0] == [line for v in same for line in v.lines]


def test_a_statement_is_shown_as_written_without_its_comments():
    """A statement over several lines keeps its lines and their relative indentation; comments (trailing, or
    between its lines) go, a # inside a string stays; the error line of a traceback loses its comment too."""
    from autograder.diagnosis.tracing import shown_source
    from autograder.parts.driver import without_comment
    written = ['        a = (x @ W.T      # the input', '             # the state:', '             + h @ U.T)',
               '        s = "#1"  # not this']
    assert shown_source(written[:3]) == "a = (x @ W.T\n     + h @ U.T)"
    assert shown_source(written[3:]) == 's = "#1"'
    assert without_comment('    g["w"] += da @ h          # dW = daᵀ h') == 'g["w"] += da @ h'
    assert without_comment("    a = (b +   # goes on") == "a = (b +"
    assert without_comment('x = "a # b"') == 'x = "a # b"'


def test_handin_packs_the_package_you_work_in_beside_built_copies(tmp_path):
    """An instructor's checkout holds built copies of mytorch under build/: handin packs the one at the top, and
    --submission may name the package itself."""
    work = tmp_path / "checkout"
    make_submission(work)
    for copy in ("build/handout", "build/gradescope/solution"):
        make_submission(work / copy)
    for given, out in ((work, work / "handin.tar"), (work / "mytorch", tmp_path / "again.tar")):
        proc = run_cli(["handin", "--submission", str(given), "--out", str(out), "--no-grade"])
        assert proc.returncode == 0, proc.stderr
        names = tarfile.open(out).getnames()
        assert "mytorch/nn/rnn_cell.py" in names and not any(n.startswith("build") for n in names), names


def test_a_dict_whose_keys_differ_says_which():
    """A beam's scores come back as a dict: a key the student's lacks is named as such (not "nothing was
    returned or set"), and so are keys the reference's lacks; the empty prefix reads ''."""
    from autograder.diagnosis import feedback
    expected = {"best_path": 0, "log_merged_path_scores/ab": 0, "log_merged_path_scores/(empty)": 0,
                "log_merged_path_scores/b": 0}
    arrays = {"best_path": 0, "log_merged_path_scores/b": 0, "log_merged_path_scores/ba": 0}
    assert feedback._keys("log_merged_path_scores", arrays, expected) == (
        "your merged_path_scores lacks 2 keys the reference's has: '', 'ab'; it has 1 key the reference's "
        "lacks: 'ba'")
    assert feedback._keys("log_merged_path_scores", expected, expected) == ""
    assert feedback.label("log_merged_path_scores/ab", {}) == "merged_path_scores['ab']"


def test_a_transformed_reference_is_a_hint_about_numbers_only():
    """A decoded path's symbol codes whose halves come in another order are no gates in the wrong order, nor a
    count of the opposite sign: the transforms are tried on float arrays alone."""
    path = np.array([1, 2, 3, 4, 5, 6])
    assert compare.compare("best_path", np.array([3, 4, 1, 2, 5, 6]), path, "x").hints == ()
    assert compare.compare("count", -path, path, "x").hints == ()
    floats = compare.compare("h", np.array([3.0, 4, 1, 2, 5, 6]), path.astype(float), "x").hints
    assert len(floats) == 1 and "gate blocks in the wrong order" in floats[0][1]


@pytest.mark.parametrize("loop, said", [
    ("for layer in range(self.num_layers):", True), ("for l in range(0, self.num_layers):", True),
    ("for layer in reversed(range(self.num_layers)):", False),
    ("for layer in range(self.num_layers - 1, -1, -1):", False), ("", False)])
def test_the_layer_order_hint_of_an_error_needs_a_layer_loop_that_walks_up(loop, said):
    """A broadcast error in a sequence's backward suggests the layers were walked bottom-up; the hint is said
    only when the student's own layer loop (read in the child) does walk them so."""
    places = {"layer loop": f"mytorch/nn/recurrent.py:155: {loop}"} if loop else {}
    report = {"error": "ValueError: operands could not be broadcast together with shapes (2,4) (2,8) ",
              "where": "mytorch/nn/recurrent.py:220 in _backward_direction: x = a + b", "places": places}
    hints = feedback._error_case("case 1", report, sequence=True).hints
    assert any(compare.LAYER_ORDER in str(h) for h in hints) is said


GAMMA_LINE = "            gamma = np.exp(core.log_posterior(core.log_alpha(ly, skip), core.log_beta(ly, skip, final)))\n"
PREPARE = "        cache, (dh_t, dc_t) = self._prepare_backward(d_state)\n"
D_FINALS = ("        d_finals = [self._zeros_for_none(cell, parts, record.batch) for cell, parts in zip(self.cells, "
            "given)]\n")


@pytest.mark.parametrize("part, path, old, new, said", [
    # the course's CTC loss scales a view of its logits: the case's input, located at the line that changed it
    ("8.5", "nn/ctc_course.py", GAMMA_LINE, "            y *= 1.0001; " + GAMMA_LINE.lstrip(),
     "modified input logits in place at mytorch/nn/ctc_course.py:{line}: y *= 1.0001;"),
    # an LSTM backward that adds into the d_state it was given (before the provided validation copies it): the
    # arrays the driver made for each step are checked after each call
    ("7.2", "nn/lstm_cell.py", PREPARE,
     "        d_state[1][...] += 1e-3; cache, (dh_t, dc_t) = self._prepare_backward((d_state[0], d_state[1] - 1e-3))\n",
     "modified d_state[1] (c) given to backward at step 1"),
    # a sequence layer's backward that changes the d_state_T it was given (the driver stacks it for the call)
    ("6.1", "nn/recurrent.py", D_FINALS, "        d_state_T[...] += 1e-3; " + D_FINALS.lstrip(),
     "modified d_state_T given to backward in place"),
])
def test_an_argument_changed_in_place_loses_the_case_with_the_line_that_changed_it(tmp_path, part, path, old, new,
                                                                                   said):
    line = open(os.path.join(REPO, "mytorch", path)).read().split(old)[0].count("\n") + 1
    sub = make_submission(tmp_path / "sub", [(path, old, new)])
    proc = run_cli([part, "--submission", sub, "--json", str(tmp_path / "r.json")], env={"COLUMNS": "200"})
    output = " ".join(proc.stdout.split())
    assert " ".join(said.format(line=line).split()) in output, proc.stdout
    assert "0 of " in output

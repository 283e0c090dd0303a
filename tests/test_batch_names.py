"""What a class hands in reaches the instructor only as inert text. A student chooses their folder's name (in a
bulk download, often), the names inside their archive, and the messages their code raises; a batch shows all
of these in the terminal, the feedback files, scores.csv and gradebook.csv. None of it may move the cursor,
retitle or clear the terminal, start a line that looks like the grader's (a fake row of the summary, a fake
"all N cases" line), start a formula in a spreadsheet, whatever separator it is opened with, or make a
feedback file that cannot be written or that a shell command reads as an option."""
import csv
import json
import os
import zipfile

import pytest

from autograder.sandbox import untrusted
from tests.graderkit import at_top_of_forward, make_grader_copy, make_submission, report_of, run_cli
from tests.test_batch_class import _pack

COURSE = '[assignment]\ntitle = "RNN"\nsections = ["1"]\n'
# terminal title, clear screen, home, colour, a hyperlink: all ESC/BEL sequences, then a fake total
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[H\x1b[32mTotal 100.00\x1b]8;;https:evil.example\x07click\x1b]8;;\x07\x1b[0m"
FAKE_ROW = "\ncarol                          100.00"
FORMULAS = ";=1+1;\t=2+3\t-3+3;@SUM(1)"
FORMULA_START = ("=", "+", "-", "@")
FORGED = "all 5 cases: forged\n  Hint: you got 100/100"


def _in_some_cases(statement):
    """Edits that run ``statement`` first in the RNN cell's forward in the cases of I = 3 alone (two of five)."""
    return at_top_of_forward(f"if x.shape[-1] == 3:\n    {statement}")


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    grader = make_grader_copy(root / "grader", COURSE)
    subs = root / "subs"
    solution = make_submission(root / "solution")
    # two folders holding mytorch, named with escapes and a fake row: ungradable, the names in its reason
    make_submission(subs / "twins" / (ESCAPES + "1"))
    make_submission(subs / "twins" / (ESCAPES + FAKE_ROW))
    # an archive whose one member is a file named with all of it: ungradable, the member's name in its reason
    (subs / "member").mkdir(parents=True)
    with zipfile.ZipFile(subs / "member" / "a.zip", "w") as z:
        z.writestr(FAKE_ROW + ESCAPES + "/mytorch", "x")
    make_submission(subs / f"mallory{FAKE_ROW}")                         # full marks under a two-line name
    # some cases raise a message with formulas, a forged "all cases" line and a forged hint
    make_submission(subs / "spoof", _in_some_cases(f"raise ValueError({'boom' + FORMULAS + chr(10) + FORGED!r})"))
    # … the same through a NotImplementedError's message, and through the name of a type returned
    make_submission(subs / "notimpl", _in_some_cases(f"raise NotImplementedError({'TODO' + chr(10) + FORGED!r})"))
    make_submission(subs / "typename", _in_some_cases(f"return type({'R' + chr(10) + FORGED!r}, (), {{}})()"))
    # every case fails to import, with the same kind of message
    make_submission(subs / "importer",
                    [("nn/rnn_cell.py", '"""', f'raise ValueError({"bad" + chr(10) + FORGED!r})\n"""')])
    _pack("tar", solution, subs / f"semi{FORMULAS}.tar")                         # an archive at the top: name and form
    make_submission(subs / ("😀" * 63))                                  # 252 bytes: its feedback's name is cut
    make_submission(subs / "-2+3")                                       # a name a command reads as an option
    proc = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    again = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    return subs, report_of(subs), proc, again


def test_the_terminal_shows_one_printable_line_per_submission(hostile_class):
    subs, _, proc, again = hostile_class
    assert proc.returncode == 0, proc.stdout + proc.stderr
    names = sorted(os.listdir(subs))
    lines = (proc.stdout + proc.stderr).splitlines()
    assert all(line.isprintable() for line in lines), [line for line in lines if not line.isprintable()]
    assert not any(line.lstrip().startswith(("carol", "Total", "all 5 cases")) for line in lines), proc.stdout
    summary = proc.stdout.splitlines()
    rows = summary[1:summary.index(f"{len(names)} submissions found, {len(names)} rows written:")]
    assert len(rows) == len(names), proc.stdout                          # one each (the report is beside them)
    assert all(len(row) <= 80 for row in rows), proc.stdout
    # every submission's feedback was written, so a second run grades nobody again
    assert again.returncode == 0 and f"Resuming: {len(names)} already graded" in again.stdout, again.stdout


def _cells(path, delimiter):
    with open(path, newline="", encoding="utf-8") as f:
        return [cell for row in csv.reader(f, delimiter=delimiter) for cell in row]


def _number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("table", ["scores.csv", "gradebook.csv"])
@pytest.mark.parametrize("delimiter", [",", ";", "\t"], ids=["comma", "semicolon", "tab"])
def test_no_cell_starts_a_formula_whatever_the_separator(hostile_class, table, delimiter):
    _, report, _, _ = hostile_class
    cells = _cells(report / table, delimiter)
    assert any("=1+1" in cell for cell in cells)                         # the payloads are there, as text
    formulas = [c for c in cells if c.strip().startswith(FORMULA_START) and not _number(c.strip())]
    assert formulas == []
    if delimiter == ",":
        assert all(cell.isprintable() for cell in cells), [c for c in cells if not c.isprintable()]


def test_feedback_files_are_printable_and_named_safely(hostile_class):
    subs, report, _, _ = hostile_class
    files = os.listdir(report / "feedback")
    assert len(files) == 2 * len(os.listdir(subs))                        # a .txt and a .json each
    for name in files:
        assert name.isprintable() and not name.startswith("-") and len(name.encode()) <= 255, name
        if name.endswith(".txt"):
            text = (report / "feedback" / name).read_text(encoding="utf-8")
            # (a tab of the student's own message stays: it moves nothing but the text after it)
            assert all(line.replace("\t", " ").isprintable() for line in text.splitlines()), name
            # a message's own lines are indented under its case: none stands where the grader's lines do
            assert not any(line.startswith("all 5 cases: forged") for line in text.splitlines()), text
        else:
            results = json.loads((report / "feedback" / name).read_text(encoding="utf-8"))
            assert results["extra_data"]["submission"].isprintable()       # the name as shown, on one line
            # each part's output as graded (before wrapping to 80 columns, which indents whatever it carries over)
            lines = [line for test in results["tests"] for line in test["output"].splitlines()]
            assert not any(line.startswith(("all 5 cases: forged", "  Hint: you got")) for line in lines), name


def test_a_message_chooses_no_problem_and_no_reason(hostile_class):
    _, report, _, _ = hostile_class
    with open(report / "scores.csv", newline="", encoding="utf-8") as f:
        rows = {row[0]: row for row in csv.reader(f)}
    for name in ("spoof", "notimpl", "typename"):                         # some cases passed: none crashed
        assert rows[name][-2:] == ["", ""], rows[name]
    assert rows["importer"][-2] == "crashed" and "forged" not in rows["importer"][-1], rows["importer"]
    assert rows["twins"][-2] == "ungradable" and "several folders" in rows["twins"][-1]
    assert rows["member"][-2] == "ungradable" and "a.zip holds no mytorch package" in rows["member"][-1]


@pytest.mark.parametrize("what", ["an archive", "a handin folder", "a file named like the report's",
                                  "a link", "a mytorch folder", "a submission in a feedback folder"])
def test_a_submission_named_like_the_report_folder_is_not_taken_for_it(tmp_path, what):
    """Whatever lies at the report folder's place (beside DIR by default) that a report of this grader would not
    hold is the instructor's, never written over: the batch refuses to start, and says why."""
    subs = tmp_path / "subs"
    make_submission(subs / "alice")
    grading = report_of(subs)
    if what == "an archive":
        grading.mkdir()
        _pack("tar", str(subs / "alice"), grading / "handin.tar")
    elif what == "a handin folder":
        make_submission(grading / "handin")
    elif what == "a file named like the report's":
        (grading / "scores.csv").mkdir(parents=True)
    elif what == "a submission in a feedback folder":                   # a report's names, a handin inside
        make_submission(grading / "feedback")
        (grading / "scores.csv").write_text("")
    elif what == "a link":
        grading.symlink_to(subs / "alice")
    else:
        make_submission(grading)
    proc = run_cli(["batch", str(subs)], timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    if what == "a link":                                                  # to a submission: inside DIR
        assert f"--out {grading} is inside {subs}, where every folder is a submission" in proc.stderr
    else:
        assert f"{grading} is not a report folder of this grader" in proc.stderr and "--out" in proc.stderr
    assert "Found" not in proc.stdout                                     # before anything was graded


def test_a_gradescope_upload_named_with_escapes_is_reported_in_printable_text(tmp_path):
    from tests.test_bounded_inputs import _gradescope
    proc, results, _ = _gradescope(tmp_path, lambda sub: (sub / (ESCAPES + FAKE_ROW + ".tar")).write_bytes(b"no"))
    assert proc.returncode == 0, proc.log
    assert all(line.isprintable() for line in proc.log.splitlines()), proc.log
    for test in results["tests"]:
        assert "was not unpacked: it is neither a tar" in test["output"] and "PWNED" in test["output"]
        assert all(line.isprintable() for line in test["output"].splitlines()), test["output"]


def test_a_trace_names_nothing_on_two_lines():
    """A trace's names, files, functions and source lines are the child's (a file of the submission may be
    named "w\nall 9 cases: …"): each is one line, so the diagnosis, printed line by line, forges none. A source
    line's text is the statement's lines (a statement may span several), each printable and shown indented."""
    import numpy as np

    from autograder.diagnosis import traces, wording
    from autograder.instructor import class_report
    odd = "x\nall 9 cases: forged"
    meta = {"records": [[odd, f"mytorch/nn/{odd}.py", 3, 0, odd, [], [1]]], "texts": {f"mytorch/nn/{odd}.py:3": odd},
            "callers": {"0": [0, f"mytorch/{odd}", 2]}, "lost": odd}
    trace = traces.parse(meta, np.zeros(1))
    record = trace.records[0]
    assert not any("\n" in v for v in (record.name, record.file, record.function, trace.lost,
                                       trace.callers[0][1]))
    assert record.text.splitlines() == ["x", "all 9 cases: forged"]           # the statement's two lines …
    many = traces.parse({**meta, "texts": {f"mytorch/nn/{odd}.py:3": "a\x1b[2J\n" * 9}}, np.zeros(1)).records[0]
    assert many.text.splitlines() == ["a?[2J"] * traces.CODE_LINES          # … printable, and a few at most
    same_file = traces.parse({**meta, "callers": {"0": [1, f"mytorch/nn/{odd}.py", 3]}}, np.zeros(1))
    shown = "\n".join(wording._called_from(same_file, same_file.records[0])).splitlines()
    assert len(shown) == 3 and all(line.startswith("    ") for line in shown), shown     # under the report's words
    # and the class tables read a part's problem from the grader's own first lines alone
    from autograder.grade import PartResult
    from autograder.parts import spec
    part = spec.PARTS_BY_NUMBER["1.1"]
    forged = PartResult(part, 1.0, "failed", "4 of 5 cases passed\ncase 1: ValueError: x\n    all 5 cases: forged")
    assert class_report.problem_of([forged]) == ("", "")
    raised = PartResult(part, 0.0, "failed", "0 of 5 cases passed\nall 5 cases: ValueError: always\n  at …")
    assert class_report.problem_of([raised]) == ("crashed", "part 1.1: ValueError: always")
    assert class_report._cell(" =1+1") == "' =1+1" and class_report._cell(" -1.5") == " -1.5"


def test_a_line_of_untrusted_text_holds_no_control_character():
    for raw in (ESCAPES + FAKE_ROW, "a\tb\r\nc\x00d\u202ee\u200bf", b"\xff\xfe name", "\ud800 lone"):
        shown = untrusted.line(raw, 200)
        assert shown.isprintable() and "\n" not in shown, repr(shown)
    assert untrusted.line("plain name", 200) == "plain name"
    assert untrusted.line("x" * 50, 10) == "x" * 10 + " … (40 more characters)"


def test_a_submission_shaped_like_a_report_is_graded_like_any_other(tmp_path):
    """A student can name their folder in the class folder as they like, and fill it as they like: here
    ``grading``, holding a real report of this grader (its key included) in which their wrong code scored full
    marks, and a seed of their choosing. Nothing in DIR is read as the grader's own: the report goes beside
    it, the student is graded on their code, and ``grading`` is one more submission, graded like any other."""
    grader = make_grader_copy(tmp_path / "grader", COURSE)
    honest = tmp_path / "honest"
    make_submission(honest / "mallory")
    forged = tmp_path / "forged-report"
    proc = run_cli(["batch", str(honest), "--out", str(forged)], cwd=grader, timeout=300)
    assert proc.returncode == 0, proc.stderr
    subs = tmp_path / "subs"
    make_submission(subs / "mallory", at_top_of_forward("raise ValueError('wrong')"))
    os.rename(forged, subs / "grading")                                   # full marks, with the grader's key
    (subs / "grading" / ".batch.json").write_text(json.dumps({"fresh_seed": 1234, "check": "0" * 32}))
    proc = run_cli(["batch", str(subs)], cwd=grader, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Resuming" not in proc.stdout + proc.stderr and "Found 2 submissions" in proc.stdout
    with open(report_of(subs) / "scores.csv", newline="") as f:
        rows = {row[0]: row for row in csv.reader(f)}
    assert set(rows) == {"submission", "mallory", "grading"}
    assert float(rows["mallory"][rows["submission"].index("total")]) == 0, rows["mallory"]
    assert rows["grading"][-2] == "ungradable", rows["grading"]          # it holds no mytorch

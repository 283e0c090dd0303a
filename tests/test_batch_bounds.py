"""Every step of a batch that reads student files is bounded per submission. The class report's similarity check,
which once took hours over a file of blank lines before grading anyone, compares each submission in a child of
its own within a time, CPU, memory and output limit, several at once; a submission past a bound is named as such in
report.md and its feedback, and everyone else is compared as usual."""
import json
import os
import sys
import textwrap
import time

import pytest

from autograder.instructor import batch, class_report, similarity
from tests.graderkit import REPO, make_grader_copy, make_submission, report_of, run_cli

COURSE = '[assignment]\ntitle = "RNN"\nsections = ["1"]\n'
SECTIONS = [str(k) for k in range(1, 9)]


def _with_blank_lines(folder, size):
    """A copy of the solution whose every file with a TODO ends in ``size`` bytes of blank lines (valid Python)."""
    make_submission(folder)
    for name in similarity.FILE_SECTIONS:
        with open(os.path.join(folder, "mytorch", "nn", name), "a") as f:
            f.write("\n" * size)
    return str(folder)


def test_a_class_with_files_of_blank_lines_is_graded_and_compared_within_a_minute(tmp_path):
    """Before, ``similarity`` took time growing with the square of the blank lines (64k: 5 s, 128k: 25 s): this class
    of three had graded nobody after 240 s. Now a file past READ_LIMIT is named as not compared, one just under it
    is compared as usual (it is the solution), and the honest one is too."""
    grader = make_grader_copy(tmp_path / "grader", COURSE)
    subs = tmp_path / "subs"
    _with_blank_lines(subs / "blank", similarity.READ_LIMIT)               # 10 files of 1 MiB of blank lines
    _with_blank_lines(subs / "blanker", similarity.READ_LIMIT - (64 << 10))
    make_submission(subs / "honest")
    start = time.monotonic()
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--solution", REPO], cwd=grader, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert time.monotonic() - start < 60
    assert "3 submissions found, 3 rows written" in proc.stdout
    rows = (report_of(subs) / "scores.csv").read_text().splitlines()[1:]
    assert sorted(r.split(",")[0] for r in rows) == ["blank", "blanker", "honest"]
    section = (report_of(subs) / "report.md").read_text().split("## Similarity")[1]
    assert "Compared the code 2 submissions wrote themselves" in section
    assert "- Not compared, past a bound of the comparison: blank (its nn\\/rnn\\_cell\\.py is larger than 1 MiB)." \
        in section
    assert "- Identical to the solution: blanker, honest." in section
    feedback = json.loads((report_of(subs) / "feedback" / "blank.json").read_text())
    assert feedback["extra_data"]["similarity"] == {"not_compared": "its nn/rnn_cell.py is larger than 1 MiB"}


@pytest.fixture
def two_copies(tmp_path):
    """Two copies of the solution's package, the first in order marked 'slow' (a file a test's child looks for)."""
    slow, fine = make_submission(tmp_path / "slow"), make_submission(tmp_path / "fine")
    open(os.path.join(slow, "mytorch", "SLOW"), "w").close()
    return {"a-slow": os.path.join(slow, "mytorch"), "b-fine": os.path.join(fine, "mytorch")}


def _child(tmp_path, on_slow):
    """A similarity child that runs ``on_slow`` (Python statements) for a package holding SLOW, else the real one."""
    script = tmp_path / "child.py"
    script.write_text("import io, json, os, runpy, sys\n"
                      "data = sys.stdin.read()\n"
                      "if os.path.exists(os.path.join(json.loads(data)['package'], 'SLOW')):\n"
                      + textwrap.indent(on_slow, "    ") + "\n"
                      "sys.stdin = io.StringIO(data)\n"
                      f"runpy.run_path({similarity.__file__!r}, run_name='__main__')\n")
    return lambda: [sys.executable, "-I", "-S", str(script)]


@pytest.mark.parametrize("on_slow, why", [
    ("import time\ntime.sleep(600)", "comparing it took longer than 8 s"),
    ("while True:\n    pass", "comparing it took longer than 8 s"),            # its CPU, or the clock's
    ("sys.stdout.write('[' + '1, ' * (1 << 20))", "its summary was larger than 1 MiB"),
    ("x = bytearray(2 << 30)", "comparing it needed more than 1024 MiB of memory"),
    ("sys.stdout.write('{\"untouched\": false}')", "comparing it gave no summary"),
    ("raise SystemExit(3)", "comparing it failed (exit status 3)"),
])
def test_a_child_past_a_bound_is_reported_as_such_and_the_other_compared(tmp_path, monkeypatch, two_copies, on_slow,
                                                                           why):
    monkeypatch.setattr(batch, "SIMILARITY_SECONDS", 8)    # the fine one takes 0.2 s alone
    monkeypatch.setattr(batch, "SIMILARITY_OUTPUT", 1 << 20)
    monkeypatch.setattr(batch, "similarity_child", _child(tmp_path, on_slow))
    base = similarity.base(REPO, SECTIONS)
    start = time.monotonic()
    found = batch.similarity_summaries(two_copies, base, jobs=1)
    assert time.monotonic() - start < 20
    assert found["a-slow"] == {"not_compared": why}
    assert found["b-fine"]["solution"] is True                          # compared as usual, beside it
    rows = [{"name": name, "similarity": summary} for name, summary in found.items()]
    section = "\n".join(class_report.similarity_md(rows, compared=True))
    assert "Compared the code 1 submissions" in section and "- Identical to the solution: b\\-fine." in section
    assert "- Not compared, past a bound of the comparison: a\\-slow (" in section


def test_one_slow_submission_holds_up_no_other(tmp_path, monkeypatch, two_copies):
    """With --jobs 1, the children still run two at once: the fine one's summary, second in order, does not wait
    for the first one's child to reach its time limit."""
    monkeypatch.setattr(batch, "SIMILARITY_SECONDS", 10)
    monkeypatch.setattr(batch, "similarity_child", _child(tmp_path, "import time\ntime.sleep(600)"))
    done = {}
    real = batch.similarity_of

    def timed(copy, request):
        summary = real(copy, request)
        done[copy] = time.monotonic()
        return summary
    monkeypatch.setattr(batch, "similarity_of", timed)
    start = time.monotonic()
    batch.similarity_summaries(two_copies, similarity.base(REPO, SECTIONS), jobs=1)
    assert done[two_copies["b-fine"]] - start < 10 <= done[two_copies["a-slow"]] - start


def test_the_stub_pattern_and_the_line_match_take_linear_time():
    start = time.monotonic()
    assert similarity.tokens("\n" * 200000 + "        raise NotImplementedError('x')\nh = 1\n") == ["V", "=", "1"]
    assert time.monotonic() - start < 2                              # before: the square of the blank lines (64k: 10 s)


@pytest.mark.parametrize("edit, why", [
    (lambda text: "x = 1\n" * (similarity.LINES + 1), f"its nn/rnn_cell.py has more than {similarity.LINES} lines "
                                                      "that are not blank"),
    (lambda text: text + "# " + "x" * similarity.READ_LIMIT, "its nn/rnn_cell.py is larger than 1 MiB"),
    (lambda text: text + "h = a + b + c + d + e + f + g\n" * (similarity.TOKENS // 12), f"its own code is longer than {similarity.TOKENS} "
                                                                   "tokens"),
])
def test_a_submission_past_a_bound_is_not_compared_and_says_which(tmp_path, edit, why):
    package = os.path.join(make_submission(tmp_path / "s"), "mytorch")
    path = os.path.join(package, "nn", "rnn_cell.py")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(edit(text))
    assert similarity.summary(package, similarity.base(REPO, ["1"])) == {"not_compared": why}
    assert similarity.compare({"s": {"not_compared": why}}).solution == []

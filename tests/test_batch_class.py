"""Batch grading of a class that hands in every form there is: nobody is dropped, each gets feedback, and the
class report says what the rows say. The grader runs from a copy whose course is sections 1 and 2 (23 points),
so the class grades in seconds."""
import csv
import json
import os
import re
import statistics
import tarfile
import zipfile

import pytest

from autograder import mistakes, spec
from tests.graderkit import check_gradescope, make_grader_copy, make_submission, run_cli

COURSE = '[assignment]\ntitle = "RNN and GRU"\nsections = ["1", "2"]\n'
TOTAL = sum(p.points for p in spec.PARTS if p.number[0] in "12")                          # 23
RNN_FORWARD_USERS = sum(spec.PARTS_BY_NUMBER[n].points for n in ("1.1", "1.2"))          # the loop costs these
Z_SWAPPED = next(m for m in mistakes.HINTED if m.id == "gru-z-swapped")
TIMEOUT = "3"              # seconds a part may take: judy's two RNN parts wait it out in each run


def _pack(kind, source, path, prefix=""):
    """The mytorch under ``source`` as a tar, tar.gz or zip at ``path`` (members under ``prefix``)."""
    names = [os.path.relpath(os.path.join(f, n), source) for f, _, ns in os.walk(os.path.join(source, "mytorch"))
             for n in ns if "__pycache__" not in f]
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as z:
            for name in names:
                z.write(os.path.join(source, name), prefix + name)
    else:
        with tarfile.open(path, "w:gz" if kind == "tar.gz" else "w") as tar:
            for name in names:
                tar.add(os.path.join(source, name), prefix + name)


# name -> (the total it must get, the problem, words of the reason)
EXPECTED = {
    "alice": (TOTAL, "", ""),                                                   # mytorch/
    "bob": (TOTAL, "", ""),                                                     # handin/mytorch/
    "carol": (TOTAL, "", ""),                                                   # handin.tar
    "dave": (None, "", ""),                                                     # a .tar.gz with a mistake
    "erin": (TOTAL, "", ""),                                                    # a .zip, mytorch one level down
    "frank": (0, "ungradable", "the folder is empty"),
    "gina": (0, "ungradable", "no mytorch/ folder, handin.tar or zip in it (it holds notes.txt, photo.jpg)"),
    "hank": (0, "ungradable", "mytorch is a file, not a folder"),
    "ivan": (TOTAL - RNN_FORWARD_USERS, "crashed", "SyntaxError"),             # the RNN parts fail to import
    "judy": (TOTAL - RNN_FORWARD_USERS, "timed out", "did not finish within"),  # RNNCell.forward never returns
    "kim.zip": (TOTAL, "", ""),                                                 # an archive at the folder's top
}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    grader = make_grader_copy(root / "grader")
    (root / "grader" / "course.toml").write_text(COURSE)
    subs = root / "subs"
    solution = make_submission(root / "solution")
    make_submission(subs / "alice")
    make_submission(subs / "bob" / "handin")
    (subs / "carol").mkdir()
    _pack("tar", solution, subs / "carol" / "handin.tar")
    wrong = make_submission(root / "wrong", [(Z_SWAPPED.path, Z_SWAPPED.old, Z_SWAPPED.new)])
    (subs / "dave").mkdir()
    _pack("tar.gz", wrong, subs / "dave" / "submission.tar.gz")
    (subs / "erin").mkdir()
    _pack("zip", solution, subs / "erin" / "upload.zip", prefix="work/")
    (subs / "frank").mkdir()
    (subs / "gina").mkdir()
    (subs / "gina" / "notes.txt").write_text("I ran out of time")
    (subs / "gina" / "photo.jpg").write_bytes(b"\xff\xd8")
    (subs / "hank").mkdir()
    (subs / "hank" / "mytorch").write_text("oops")
    make_submission(subs / "ivan", [("nn/rnn_cell.py", "class RNNCell", "class RNNCell(:\nclass _Unused")])
    make_submission(subs / "judy", [("nn/rnn_cell.py", "        # BEGIN SOLUTION\n        a = x @",
                                     "        import time\n        while True:\n            time.sleep(1)\n        a = x @")])
    _pack("zip", solution, subs / "kim.zip")
    (subs / "README.txt").write_text("not a submission")
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT, "--csv", str(root / "copy.csv")],
                   cwd=grader, timeout=600)
    return root, subs / "grading", proc, grader


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_every_submission_gets_one_row_with_its_total_and_reason(graded_class):
    root, report, proc, _ = graded_class
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Found {len(EXPECTED)} submissions" in proc.stdout
    assert f"{len(EXPECTED)} submissions found, {len(EXPECTED)} rows written" in proc.stdout
    rows = _rows(report / "scores.csv")
    parts = ["1.1", "1.2", "2.1", "2.2"]
    assert rows[0] == ["submission", "handed in as"] + parts + ["total", "problem", "reason"]
    by_name = {r[0]: r for r in rows[1:]}
    assert list(by_name) == sorted(EXPECTED) and len(rows) == len(EXPECTED) + 1
    for name, (total, problem, reason) in EXPECTED.items():
        row = by_name[name]
        assert abs(sum(float(s) for s in row[2:6]) - float(row[6])) < 1e-6, row
        if total is not None:
            assert float(row[6]) == total, row
        assert row[7] == problem and reason in row[8], row
    assert 0 < float(by_name["dave"][6]) < TOTAL and float(by_name["dave"][2]) == 4
    assert [by_name[n][1] for n in ("alice", "bob", "carol", "dave", "erin", "kim.zip")] == \
        ["mytorch/", "handin/mytorch/", "handin.tar", "submission.tar.gz", "upload.zip", "kim.zip"]
    assert _rows(root / "copy.csv") == rows


def test_every_submission_gets_feedback_the_student_would_have_seen(graded_class):
    _, report, _, _ = graded_class
    assert sorted(os.listdir(report / "feedback")) == sorted(f"{n}.{ext}" for n in EXPECTED for ext in ("json", "txt"))
    for name, (total, _, reason) in EXPECTED.items():
        text = (report / "feedback" / f"{name}.txt").read_text()
        results = json.loads((report / "feedback" / f"{name}.json").read_text())
        tests = check_gradescope(results)
        assert sorted(tests) == ["1.1", "1.2", "2.1", "2.2"]
        assert re.search(rf"Total\s+{results['score']:.2f}/{TOTAL}", text), text
        assert all(len(line) <= 80 for line in text.splitlines())
        if reason and name != "ivan":
            assert reason in " ".join(text.split())
    dave = (report / "feedback" / "dave.txt").read_text()
    assert "Hint:" in dave and "z and 1 − z swapped" in dave and "── 2.1 GRU cell forward: failed" in dave
    judy = (report / "feedback" / "judy.txt").read_text()
    assert "mytorch/nn/rnn_cell.py" in judy and "loop that never ends" in judy


def test_the_class_report_matches_the_rows(graded_class):
    _, report, _, _ = graded_class
    rows = _rows(report / "scores.csv")[1:]
    text = (report / "report.md").read_text()
    totals = [float(r[6]) for r in rows]
    assert f"{len(rows)} submissions, total out of {TOTAL}: mean {statistics.fmean(totals):.2f}, median " \
           f"{statistics.median(totals):.2f}." in text
    for k, number in enumerate(["1.1", "1.2", "2.1", "2.2"]):
        scores = [float(r[2 + k]) for r in rows]
        points = spec.PARTS_BY_NUMBER[number].points
        full = sum(s == points for s in scores) / len(scores)
        line = next(l for l in text.splitlines() if l.startswith(f"| {number} "))
        assert line.endswith(f"| {points} | {statistics.fmean(scores):.2f} | {statistics.median(scores):.2f} | "
                             f"{full:.0%} |"), line
    hint = next(l for l in text.splitlines() if "z and 1 − z swapped" in l)
    assert hint.startswith(f"- {1 / len(rows):.0%} of the class (1 of {len(rows)}): ")
    problems = re.findall(r"^\| (\w+) \| (ungradable|crashed|timed out) \|", text, re.M)
    assert sorted(problems) == sorted((n, p) for n, (_, p, _) in EXPECTED.items() if p)
    assert "![totals](totals.png)" in text
    with open(report / "totals.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    book = _rows(report / "gradebook.csv")
    assert book[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "RNN and GRU"]
    assert book[1] == ["    Points Possible", "", "", "", "", str(TOTAL)]
    assert [(r[0], r[3], float(r[5])) for r in book[2:]] == [(r[0], r[0], float(r[6])) for r in rows]


def test_a_second_run_resumes_and_regrade_grades_again(graded_class):
    _, report, _, grader = graded_class
    subs = report.parent
    os.unlink(report / "feedback" / "alice.json")                          # as if stopped before alice
    before = _rows(report / "scores.csv")
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT], cwd=grader, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"Resuming: {len(EXPECTED) - 1} already graded" in proc.stdout and "1 to grade" in proc.stdout
    assert _rows(report / "scores.csv") == before
    assert f"{len(EXPECTED)} submissions found, {len(EXPECTED)} rows written" in proc.stdout
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT, "--regrade", "1.1"], cwd=grader)
    assert proc.returncode == 2                                        # batch takes no part list
    (subs / "alice" / "mytorch" / "__init__.py").unlink()             # graded again: now it has no package
    proc = run_cli(["batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT, "--regrade"], cwd=grader, timeout=600)
    assert proc.returncode == 0 and "Resuming" not in proc.stdout
    alice = next(r for r in _rows(report / "scores.csv") if r[0] == "alice")
    assert alice[6] == "0" and alice[7] == "ungradable" and "no __init__.py" in alice[8]


def test_names_no_file_system_or_terminal_takes_as_they_are_get_their_rows_and_feedback(tmp_path):
    """An archive's name of 254 bytes (past a file name's 255 with .json) and a folder's name that is not UTF-8,
    with a terminal escape and a right-to-left override: every submission is graded, gets its row (the name
    as printable text) and its feedback (under the name's printable start and a digest of it), and the class's
    tables are written; a second run finds that feedback and grades nothing again."""
    grader = make_grader_copy(tmp_path / "grader")
    (tmp_path / "grader" / "course.toml").write_text(COURSE)
    subs = tmp_path / "subs"
    solution = make_submission(tmp_path / "solution")
    make_submission(subs / "alice")
    long = "L" * 250 + ".zip"
    _pack("zip", solution, subs / long)
    odd = os.fsdecode(b"carol\xff\x1b[2J" + "\u202e".encode())
    make_submission(subs / odd)
    proc = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = {r[0]: r for r in _rows(subs / "grading" / "scores.csv")[1:]}
    assert sorted(rows) == sorted(["alice", long, "carol??[2J?"])
    assert all(float(r[6]) == TOTAL for r in rows.values()), rows
    feedback = sorted(os.listdir(subs / "grading" / "feedback"))
    assert len(feedback) == 6 and all(len(os.fsencode(name)) <= 255 for name in feedback)
    assert {"alice.json", "alice.txt"} < set(feedback) and sum("~" in name for name in feedback) == 4
    assert (subs / "grading" / "report.md").exists() and (subs / "grading" / "gradebook.csv").exists()
    again = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert again.returncode == 0 and "3 already graded" in again.stdout + again.stderr, again.stdout + again.stderr


def test_a_report_folder_a_student_could_have_filled_is_neither_trusted_nor_taken_for_a_submission(tmp_path):
    """A seed kept in the report folder is used again only with the grader's check (a student's planted seed
    would grade the class on cases they know); a report folder that holds a mytorch, as a submission named
    like it does, is refused (that submission would go ungraded, and the report be written into it)."""
    import argparse
    from autograder import batch, class_report, course
    the_course = course.load_course()
    folder = class_report.Folder(str(tmp_path / "report"))
    args = argparse.Namespace(fresh_seed="random", regrade=False)
    folder.write(batch.STATE, json.dumps({"fresh_seed": 1234}))
    assert batch.batch_seed(args, folder, the_course) != 1234
    folder.write(batch.STATE, json.dumps({"fresh_seed": 1234, "check": batch.seed_check(the_course, 1234)}))
    assert batch.batch_seed(args, folder, the_course) == 1234
    folder.write(batch.STATE, json.dumps({"fresh_seed": 1234, "check": batch.seed_check(the_course, 1235)}))
    assert batch.batch_seed(args, folder, the_course) != 1234
    subs = tmp_path / "subs"
    make_submission(subs / "alice")
    make_submission(subs / "grading")
    proc = run_cli(["batch", str(subs)], timeout=120)
    assert proc.returncode == 2 and "holds a mytorch folder, as a submission does" in proc.stderr, proc.stderr

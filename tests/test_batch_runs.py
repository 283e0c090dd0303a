"""A batch's runs: stopped with Ctrl-C it says how far it got and how to go on, loses nothing and leaves nothing;
run again after the course changed, it says why it grades again and keeps the earlier report, named."""
import csv
import glob
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile

import pytest

from tests.graderkit import at_top_of_forward, make_grader_copy, make_submission, report_of, run_cli

COURSE = '[assignment]\ntitle = "RNN"\nsections = ["1"]\n'
CLASS = 6

pytestmark = pytest.mark.waits


def _class(root, n=CLASS):
    for k in range(n):
        make_submission(root / "subs" / f"student{k:02d}")
    return root / "subs"


def test_ctrl_c_stops_cleanly_and_the_same_command_continues(tmp_path):
    grader = make_grader_copy(tmp_path / "grader", COURSE)
    subs = _class(tmp_path)
    command = [sys.executable, "-m", "autograder", "batch", str(subs), "--jobs", "1"]
    proc = subprocess.Popen(command, cwd=grader, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=""))
    err = []
    for line in proc.stderr:                              # the first submission graded: stop it there
        err.append(line)
        if line.startswith("graded 1/"):
            break
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=120)
    err = "".join(err) + rest
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err + out, err
    done = int(err.split("interrupted after ")[1].split(" of ")[0])
    assert f"interrupted after {done} of {CLASS}; run the same command to continue" in err
    assert 1 <= done < CLASS
    feedback = report_of(subs) / "feedback"
    assert len(glob.glob(str(feedback / "*.json"))) == done                # every one it said, whole
    assert not glob.glob(os.path.join(tempfile.gettempdir(), f"mytorch-batch-{proc.pid}-*"))   # no copies left
    assert not (report_of(subs) / "report.md").exists()
    again = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"Resuming: {done} already graded" in again.stdout and f"{CLASS - done} to grade" in again.stdout
    assert f"{CLASS} submissions found, {CLASS} rows written" in again.stdout


def test_a_changed_point_value_says_why_it_regrades_and_keeps_the_earlier_report(tmp_path):
    grader = make_grader_copy(tmp_path / "grader", COURSE)
    subs = _class(tmp_path, 2)
    first = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert first.returncode == 0, first.stderr
    before = (report_of(subs) / "scores.csv").read_text()
    with open(os.path.join(grader, "course.toml"), "a") as f:
        f.write('[assignment.points]\n"1.1" = 10\n')
    second = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "Grading every submission again: the course changed: part 1.1 is worth 10 points (was 4)." in second.stdout
    aside = second.stdout.split("The earlier report is kept in ")[1].splitlines()[0]
    assert os.path.dirname(aside) == str(tmp_path) and os.path.basename(aside).startswith("subs-grading-before-")
    assert open(os.path.join(aside, "scores.csv")).read() == before                 # kept as it was
    assert "Resuming" not in second.stdout and (report_of(subs) / "scores.csv").read_text() != before
    third = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)   # nothing changed: resumes
    assert "Resuming: 2 already graded" in third.stdout and "Grading every submission again" not in third.stdout
    fourth = run_cli(["batch", str(subs), "--jobs", "2", "--regrade"], cwd=grader, timeout=600)
    assert "Grading every submission again: --regrade was given." in fourth.stdout
    assert len(glob.glob(str(tmp_path / "subs-grading-before-*"))) == 2
    assert json.loads((report_of(subs) / "feedback" / "student00.json").read_text())["score"] > 0
    assert stat.S_IMODE(os.stat(report_of(subs)).st_mode) == 0o700          # every student's feedback: ours alone


def test_under_sudo_the_report_is_the_instructors(tmp_path, monkeypatch):
    """Run as root through sudo, the report folder belongs to the instructor who ran sudo, mode 0700."""
    from autograder.instructor import batch
    folder = tmp_path / "report"
    folder.mkdir()
    monkeypatch.setenv("SUDO_UID", "4321")
    monkeypatch.setenv("SUDO_GID", "4322")
    batch.keep_private(str(folder))
    seen = os.stat(folder)
    assert stat.S_IMODE(seen.st_mode) == 0o700
    if os.geteuid() == 0:
        assert (seen.st_uid, seen.st_gid) == (4321, 4322)
    else:                                                  # not root: the folder stays its owner's
        assert seen.st_uid == os.geteuid()


def test_no_reason_names_a_temporary_or_staging_path(tmp_path):
    """Whatever a submission's error says of where its files are (its own __file__ is the grader's copy), the
    reason columns and the report name no temporary folder: only what went wrong."""
    grader = make_grader_copy(tmp_path / "grader", COURSE)
    subs = tmp_path / "subs"
    make_submission(subs / "file", [("nn/rnn_cell.py", "class RNNCell", "raise RuntimeError('broken: ' + __file__)\n"
                                                                         "class RNNCell")])
    make_submission(subs / "syntax", [("nn/rnn_cell.py", "class RNNCell", "class RNNCell(:\nclass _Unused")])
    make_submission(subs / "opens", at_top_of_forward(f"open({str(tempfile.gettempdir())!r} + '/gone/x.npy')"))
    make_submission(subs / "fine")
    (subs / "empty").mkdir()
    proc = run_cli(["batch", str(subs), "--jobs", "2"], cwd=grader, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = report_of(subs)
    reasons = [row[-1] for row in csv.reader(open(report / "scores.csv"))][1:]
    reasons += [json.loads(p.read_text())["extra_data"]["problem_detail"] for p in (report / "feedback").glob("*.json")]
    assert sum(bool(r) for r in reasons) >= 8, reasons                 # four of five explained, twice
    for text in reasons + [(report / "report.md").read_text(), (report / "gradebook.csv").read_text()]:
        for place in {tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir()), str(tmp_path)}:
            assert place + "/" not in text, text
        assert "mytorch-batch-" not in text and "graded/mytorch" not in text, text


def test_a_regrade_names_every_change_of_the_course():
    from autograder.instructor import batch
    from autograder.parts import course
    before = course.parse({"assignment": {"sections": ["1", "2"]}}, None)
    now = course.parse({"assignment": {"sections": ["1", "6"], "points": {"1.1": 10}, "seed": 5},
                        "grading": {"bptt_on_reference_cells": True}}, None)
    assert batch.course_changes(before, now) == ("sections 1, 6 (were 1, 2); part 1.1 is worth 10 points (was 4); "
                                                 "the reference seed is 5 (was 11785); bptt_on_reference_cells is true")
    assert batch.course_changes(before, batch._course_of(before.to_toml())) == ""

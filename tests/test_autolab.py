"""Autolab's Tango, simulated as it runs an autograder: an empty folder with the assessment's autograde.tar,
its Makefile (autograde-Makefile, renamed) and the student's handin.tar, ``make`` run there, and the last line
of what it printed read as the scores: ``{"scores": {...}, "scoreboard": [...]}``."""
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from autograder.parts import course
from handout import build
from tests.graderkit import REPO, make_submission

pytestmark = pytest.mark.slow                  # builds the bundle and grades uploads through make


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return build.build_autolab(str(tmp_path_factory.mktemp("autolab") / "out"))


def _tango(bundle, tmp_path, handin=None, env=None):
    """(the lines printed before the last, the scores line's JSON) of grading ``handin`` (a path, or None for an
    upload without it) as Tango does, with ``env`` added to the environment."""
    folder = tmp_path / "job"
    folder.mkdir()
    tar, makefile = bundle
    shutil.copy(tar, folder / "autograde.tar")
    shutil.copy(makefile, folder / "Makefile")
    if handin is not None:
        shutil.copy(handin, folder / "handin.tar")
    # one stream, as Tango's autodriver keeps it: the scores line must be the last of both outputs
    proc = subprocess.run(["make"], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0 and "Traceback" not in proc.stdout, proc.stdout
    lines = proc.stdout.rstrip("\n").split("\n")
    last = json.loads(lines[-1])
    the_course = course.load_course()
    assert set(last) == {"scores", "scoreboard"} and list(last["scores"]) == [p.number for p in the_course.parts()]
    assert last["scoreboard"] == [round(sum(last["scores"].values()), 2)]
    return lines[:-1], last


def _handin(source, tmp_path):
    path = tmp_path / "handin.tar"
    subprocess.run([sys.executable, "-m", "autograder", "handin", "--submission", str(source), "--out", str(path),
                    "--no-grade"], cwd=REPO, check=True, capture_output=True)
    return path


def test_the_bundle_holds_the_grader_and_its_data_and_no_solution(bundle):
    tar, makefile = bundle
    with tarfile.open(tar) as t:
        names = t.getnames()
    assert "autograder/__main__.py" in names and "autograder/data/manifest.json" in names
    assert not any(n.startswith(("solution", "mytorch")) for n in names)
    assert "autograder/instructor/generate.py" not in names and "autograder/diagnosis/mistakes.py" not in names
    text = open(makefile, encoding="utf-8").read()
    assert "\n\t@tar xf autograde.tar\n" in text and "\n\t@python3 -E -s -m autograder autolab" in text


def test_the_solution_scores_the_total(bundle, tmp_path):
    report, last = _tango(bundle, tmp_path, _handin(REPO, tmp_path))
    the_course = course.load_course()
    assert last["scores"] == {p.number: float(p.points) for p in the_course.parts()}
    assert last["scoreboard"] == [the_course.total]
    assert any(line.split()[:1] == ["Total"] for line in report), report      # the report before it


def test_a_wrong_submission_loses_points_with_its_diagnosis(bundle, tmp_path):
    wrong = make_submission(tmp_path / "wrong", [("nn/rnn_cell.py", "h_t = np.tanh(a) if", "h_t = np.sin(a) if")])
    report, last = _tango(bundle, tmp_path, _handin(wrong, tmp_path))
    assert last["scores"]["1.1"] < 4 and last["scores"]["2.1"] == course.load_course().points["2.1"]
    text = "\n".join(report)
    assert "mytorch/nn/rnn_cell.py:59" in text and "h_t = np.sin(a)" in text, text


@pytest.mark.parametrize("upload", ["nothing", "not a tar", "a tar with no mytorch"])
def test_a_broken_upload_scores_zero_with_its_reason(bundle, tmp_path, upload):
    handin = None
    if upload == "not a tar":
        handin = tmp_path / "junk.tar"
        handin.write_bytes(b"this is not an archive")
    elif upload == "a tar with no mytorch":
        (tmp_path / "empty").mkdir()
        handin = shutil.make_archive(str(tmp_path / "empty-handin"), "tar", str(tmp_path / "empty"))
    report, last = _tango(bundle, tmp_path, handin)
    assert all(v == 0 for v in last["scores"].values()) and last["scoreboard"] == [0]
    text = "\n".join(report)
    reason = {"nothing": "no handin.tar was handed in", "not a tar": "handin.tar was not unpacked: it is neither a tar",
              "a tar with no mytorch": "handin.tar holds no mytorch package (the folder is empty)"}[upload]
    assert reason in text, text


def test_a_python_that_cannot_run_the_grader_still_prints_a_scores_line(bundle, tmp_path):
    """No NumPy (here: a python3 first on PATH that fails as one without it would): the Makefile prints the
    reason and a line of zeros for the course's parts, which the build wrote into it."""
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python3").write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'numpy'\"\nexit 1\n")
    (stub / "python3").chmod(0o755)
    before, last = _tango(bundle, tmp_path, _handin(REPO, tmp_path), env={"PATH": f"{stub}:{os.environ['PATH']}"})
    assert set(last["scores"].values()) == {0.0} and last["scoreboard"] == [0.0]
    assert before[-1] == "the autograder could not run (see above): please tell the course staff"

"""PrairieLearn's external grading, simulated as its documentation describes it (externalGrading.md): the
question's tests/ at ROOT/tests, the student's files at ROOT/student, its data at ROOT/data/data.json, the
entrypoint run, and ROOT/results/results.json read back, with gradable, a score in [0, 1], a message, the
output and one test per part."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder.parts import course
from handout import build
from tests.graderkit import REPO, make_submission

pytestmark = pytest.mark.slow                  # builds a question and grades three uploads through it


@pytest.fixture(scope="module")
def question(tmp_path_factory):
    return build.build_prairielearn(str(tmp_path_factory.mktemp("pl") / "question"))


def _grade(question, tmp_path, upload, env=None, gradable=True):
    """Lay out ROOT as PrairieLearn does, with ``upload(ROOT/student)`` putting the student's files there, run
    the entrypoint (with ``env`` added to the environment) and return the results it wrote."""
    root = tmp_path / "grade"
    shutil.copytree(os.path.join(question, "tests"), root / "tests")
    (root / "student").mkdir()
    (root / "data").mkdir()
    (root / "data" / "data.json").write_text(json.dumps({"params": {}, "submitted_answers": {}}))
    upload(root / "student")
    proc = subprocess.run(["sh", str(root / "tests" / "run.sh")],
                          env=dict(os.environ, MYTORCH_PL_ROOT=str(root), **(env or {})),
                          capture_output=True, text=True, timeout=600)
    if gradable:
        assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    with open(root / "results" / "results.json", encoding="utf-8") as f:
        results = json.load(f)
    assert results["gradable"] is gradable and 0.0 <= results["score"] <= 1.0
    assert isinstance(results["message"], str) and isinstance(results["output"], str)
    for test in results["tests"]:
        assert set(test) == {"name", "points", "max_points", "message", "output"}
        assert 0 <= test["points"] <= test["max_points"]
    return results


def _handin(source):
    """What a student uploads: handin.tar, made by the grader's own handin command from ``source``."""
    def upload(folder):
        subprocess.run([sys.executable, "-m", "autograder", "handin", "--submission", str(source), "--out",
                        str(folder / "handin.tar"), "--no-grade"], cwd=REPO, check=True, capture_output=True)
    return upload


def test_the_question_is_built_from_the_course(question):
    with open(os.path.join(question, "info.json"), encoding="utf-8") as f:
        info = json.load(f)
    options = info["externalGradingOptions"]
    assert info["gradingMethod"] == "External" and options["enabled"] is True
    assert options["entrypoint"] == "/grade/tests/run.sh" and 0 < options["timeout"] <= 600 and options["image"]
    the_course = course.load_course()
    assert info["title"] == the_course.title
    page = open(os.path.join(question, "question.html"), encoding="utf-8").read()
    assert '<pl-file-upload file-names="handin.tar">' in page and "<pl-external-grader-results>" in page
    assert f"{len(the_course.parts())} parts, {the_course.total:g} points" in page
    assert os.access(os.path.join(question, "tests", "run.sh"), os.X_OK)
    assert os.path.isfile(os.path.join(question, "tests", "solution", "mytorch", "__init__.py"))
    grader = os.path.join(question, "tests", "autograder")
    assert not os.path.exists(os.path.join(grader, "instructor", "generate.py"))      # the instructor's alone
    assert not os.path.exists(os.path.join(grader, "diagnosis", "mistakes.py"))


def test_the_solution_scores_full_marks(question, tmp_path):
    results = _grade(question, tmp_path, _handin(REPO))
    the_course = course.load_course()
    assert results["score"] == 1.0 and results["message"] == f"{the_course.total:g} of {the_course.total:g} points"
    assert [t["name"].split()[0] for t in results["tests"]] == [p.number for p in the_course.parts()]
    assert all(t["points"] == t["max_points"] for t in results["tests"])


def test_a_wrong_submission_loses_points_with_its_diagnosis(question, tmp_path):
    wrong = make_submission(tmp_path / "wrong", [("nn/rnn_cell.py", "h_t = np.tanh(a) if", "h_t = np.sin(a) if")])
    results = _grade(question, tmp_path, _handin(wrong))
    assert 0 < results["score"] < 1
    failed = {t["name"].split()[0]: t for t in results["tests"] if t["points"] < t["max_points"]}
    assert "1.1" in failed and "1.2" in failed and "2.1" not in failed
    assert "```" not in failed["1.1"]["output"]                            # text, as PrairieLearn shows it
    said = failed["1.1"]["output"]                                        # the student's own line, as elsewhere
    assert "first go" in said and "mytorch/nn/rnn_cell.py:59" in said and "h_t = np.sin(a)" in said, said


@pytest.mark.parametrize("upload", ["nothing", "not a tar", "a tar with no mytorch"])
def test_a_broken_upload_scores_zero_with_its_reason(question, tmp_path, upload):
    def put(folder):
        if upload == "not a tar":
            (folder / "handin.tar").write_bytes(b"this is not an archive")
        elif upload == "a tar with no mytorch":
            (tmp_path / "empty").mkdir()
            shutil.make_archive(str(folder / "handin"), "tar", str(tmp_path / "empty"))
    results = _grade(question, tmp_path, put)
    assert results["score"] == 0.0 and all(t["points"] == 0 for t in results["tests"])
    assert {"not a tar": "handin.tar was not unpacked: it is neither a tar", "a tar with no mytorch":
            "handin.tar holds no mytorch package (the folder is empty)"}.get(upload, "the folder is empty") in \
        results["message"], results["message"]


def test_a_grader_that_cannot_start_is_not_the_student_s_attempt(question, tmp_path):
    """A setup fault (here the Python named for student code is not there) writes results that PrairieLearn
    neither scores nor counts as an attempt, saying to tell the staff; the reason is in the job's log."""
    results = _grade(question, tmp_path, _handin(REPO), env={"MYTORCH_GRADER_PYTHON": str(tmp_path / "no-python")},
                     gradable=False)
    assert results["message"] == "the autograder could not start: please tell the course staff"
    assert results["tests"] == []


def test_a_python_that_cannot_run_the_grader_still_leaves_results(question, tmp_path):
    """No NumPy (here: a python3 first on PATH that fails as one without it would): run.sh writes the results
    itself, not gradable."""
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "python3").write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'numpy'\" >&2\nexit 1\n")
    (stub / "python3").chmod(0o755)
    results = _grade(question, tmp_path, _handin(REPO), env={"PATH": f"{stub}:{os.environ['PATH']}"}, gradable=False)
    assert results["message"] == "The autograder could not run: please tell the course staff."

"""Helpers for the autograder tests: make a submission from the solution with edits, run the CLI, check results."""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


FORWARD = "        x, (h,), batched, _ = self._prepare(x, state)\n"     # the first line of every cell's forward


def at_top_of_forward(code, path="nn/rnn_cell.py"):
    """Edits for ``make_submission`` that run ``code`` first in the forward of the cell in ``path``."""
    lines = "".join("        " + line + "\n" if line else "\n" for line in code.strip("\n").split("\n"))
    return [(path, FORWARD, lines + FORWARD)]


def make_submission(folder, edits=()):
    """A copy of the solution's mytorch in ``folder``, with ``(path in mytorch, old, new)`` edits applied."""
    shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(folder, "mytorch"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for path, old, new in edits:
        full = os.path.join(folder, "mytorch", path)
        with open(full) as f:
            source = f.read()
        assert old in source, f"{old!r} not in {path}"
        with open(full, "w") as f:
            f.write(source.replace(old, new, 1))
    return str(folder)


# A course of sections 1 and 2 alone, its four parts worth 100 points, for a grader whose subject in a test is
# not the whole course (isolation, batch, resuming): a batch grades each submission in a fifth of the time.
TWO_SECTIONS = ('[assignment]\ntitle = "RNN and GRU"\nsections = ["1", "2"]\n\n[assignment.points]\n'
                + "".join(f'"{n}" = 25\n' for n in ("1.1", "1.2", "2.1", "2.2")))


def make_grader_copy(folder, course=None):
    """A copy of the grader (autograder/ with its data) to run from, so a test may damage it; ``course``: the text
    of its course.toml (default: none, every section). Its bytecode comes with it (compiled once by
    tests/conftest.py; each pyc holds its source's size and time, which the copy keeps, so a module a test edits
    is compiled again): where nothing writes bytecode, every grader run from a copy compiled the grader's thirty
    modules again, 0.2 s of CPU each."""
    shutil.copytree(os.path.join(REPO, "autograder"), os.path.join(folder, "autograder"))
    if course is not None:
        with open(os.path.join(folder, "course.toml"), "w") as f:
            f.write(course)
    return str(folder)


def closed_to_others(path):
    """The first place from ``/`` down to ``path`` that a user who is neither its owner nor in its group cannot
    pass (a folder it may not search; ``path`` itself, a file it may not read), else None: a sandbox user
    cannot read ``path`` then."""
    path = os.path.realpath(path)
    places = [path]
    while os.path.dirname(places[-1]) != places[-1]:
        places.append(os.path.dirname(places[-1]))
    for place in reversed(places):
        mode = os.stat(place).st_mode
        if not mode & (stat.S_IXOTH if stat.S_ISDIR(mode) else stat.S_IROTH):
            return place
    return None


def world_readable_dir(prefix):
    """A new folder (0755) that every user may search, for what a sandbox user must read: in the temporary
    folder (``tempfile``), or where ``prefix`` (a path) names. The test is skipped, with the reason, where a
    folder above it is closed to other users (a TMPDIR in a private home): nothing there can be made readable
    by a sandbox user."""
    path = tempfile.mkdtemp(prefix=prefix)
    closed = closed_to_others(os.path.dirname(path))
    if closed is not None:
        os.rmdir(path)
        pytest.skip(f"{closed} is closed to other users, so a sandbox user can read nothing in {path}: set TMPDIR "
                    "to a folder every user may search, such as /tmp")
    os.chmod(path, 0o755)
    return path


# what a grade from the checkout reads as the sandbox user: a file a part's child opens by path, and the
# checkout's own mytorch (graded when the checkout is the current folder, or --submission or --solution)
READ_AS_THE_USER = ("autograder/sandbox/worker.py", "mytorch/__init__.py")


def readable_checkout():
    """A checkout of this repository that every user may read as a grade reads it: REPO itself where a sandbox
    user can reach its files, else a copy (the grader with its course file, and the solution's ``mytorch``) in a
    new world-readable folder (``world_readable_dir``; the caller removes the folder above it). From a checkout
    in a private folder (a 0700 home, where CI may clone it), a grade as a sandbox user is refused, rightly:
    that user can read neither the grader's files a part's child opens (``preflight.refuse_unreadable_grader``)
    nor the checkout's ``mytorch``."""
    if not any(closed_to_others(os.path.join(REPO, path)) for path in READ_AS_THE_USER):
        return REPO
    course = os.path.join(REPO, "course.toml")
    with open(course, encoding="utf-8") as f:
        checkout = make_grader_copy(os.path.join(world_readable_dir("mytorch-checkout-"), "checkout"), f.read())
    shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(checkout, "mytorch"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder, dirs, files in os.walk(checkout):      # modes as a clone's under umask 022, whatever REPO's
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, 0o755 if os.stat(path).st_mode & stat.S_IXUSR else 0o644)
    return checkout


def report_of(subs):
    """Where ``python -m autograder batch SUBS`` leaves its report without --out: beside SUBS (a str or a Path)."""
    return type(subs)(str(subs) + "-grading")


def run_cli(args, cwd=REPO, timeout=120, env=None):
    """``python -m autograder args`` in a child with this environment, PYTHONPATH emptied, and ``env`` on top
    (``env`` wins, PYTHONPATH included)."""
    env = {**os.environ, "PYTHONPATH": "", **(env or {})}
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def check_gradescope(results):
    """Gradescope's results.json fields and types; returns the tests by number."""
    assert isinstance(results["score"], (int, float)) and results["score"] >= 0
    assert isinstance(results["execution_time"], (int, float)) and results["execution_time"] >= 0
    assert isinstance(results["output"], str)
    assert results.get("stdout_visibility", "hidden") in ("hidden", "after_due_date", "after_published", "visible")
    assert isinstance(results["tests"], list) and results["tests"]
    for test in results["tests"]:
        assert set(test) >= {"name", "number", "score", "max_score", "status", "output", "visibility"}
        assert isinstance(test["name"], str) and isinstance(test["number"], str) and isinstance(test["output"], str)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["status"] in ("passed", "failed")
        assert test["visibility"] in ("hidden", "after_due_date", "after_published", "visible")
    assert abs(sum(t["score"] for t in results["tests"]) - results["score"]) < 1e-6
    return {t["number"]: t for t in results["tests"]}


def load_results(path):
    with open(path) as f:
        return json.load(f)

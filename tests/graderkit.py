"""Helpers for the autograder tests: make a submission from the solution with edits, run the CLI, check results."""
import json
import os
import shutil
import subprocess
import sys

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

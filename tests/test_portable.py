"""The portable backend (macOS, Windows) run on this machine: each part a fresh Python on its standard streams,
its processes ended without Linux's subreaper or /proc. The grader is told it is not on Linux
(``system.LINUX`` false), so it takes the path macOS takes: limits set before the child starts, a session of
its own, and its process group and every process below it stopped and killed at its end."""
import os
import subprocess
import sys
import time

import pytest

from tests.graderkit import REPO, at_top_of_forward, make_submission

AS_ELSEWHERE = ("import sys\n"
                "from autograder.sandbox import system\n"
                "system.LINUX = False\n"
                "system.NAME = 'macos'\n"
                "from autograder import __main__\n"
                "sys.exit(__main__.main(sys.argv[1:]))\n")


def grade_elsewhere(args, cwd, timeout=240):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-c", AS_ELSEWHERE, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def running_with(marker):
    """Pids of the processes whose command line holds ``marker``, read from this (Linux) machine's /proc."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        with open(f"/proc/{name}/stat", "rb") as s:
                            if s.read().rpartition(b")")[2].split()[0] != b"Z":
                                found.append(int(name))
            except OSError:
                pass
    return found


def test_the_solution_scores_full_marks_without_the_linux_sandbox(tmp_path):
    sub = make_submission(tmp_path)
    run = grade_elsewhere(["1", "2", "8"], sub)
    assert run.returncode == 0, run.stderr
    score, maximum = run.stdout.rstrip().splitlines()[-1].split()[1].split("/")
    assert float(score) == float(maximum) == 46, run.stdout          # sections 1, 2 and 8: 46 of the 100 points
    assert "Traceback" not in run.stdout + run.stderr


def test_a_sign_flip_is_located_at_its_line_without_the_linux_sandbox(tmp_path):
    sub = make_submission(tmp_path, [("nn/gru_cell.py", "dz = dh_t * (h - n)", "dz = dh_t * (n - h)")])
    run = grade_elsewhere(["2.2"], sub)
    assert run.returncode == 0, run.stderr
    assert "gru_cell.py:" in run.stdout and "dz = dh_t * (n - h)" in run.stdout, run.stdout


@pytest.mark.slow
@pytest.mark.waits
@pytest.mark.parametrize("code", [
    "while True:\n    pass",
    "import time\ntime.sleep(1000)",
    "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'while True: pass', '{marker}'])\nwhile True:\n    pass",
    "import os, subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', '{marker}'],"
    " start_new_session=True)\nimport time\ntime.sleep(1000)",
], ids=["endless loop", "sleep", "a child that loops", "a child in a session of its own"])
def test_a_part_that_never_ends_is_ended_with_everything_it_started(tmp_path, code):
    marker = f"mytorch-portable-{os.getpid()}-{time.monotonic_ns()}"
    sub = make_submission(tmp_path / marker, at_top_of_forward(code.format(marker=marker)))
    start = time.monotonic()
    run = grade_elsewhere(["1.1", "--timeout", "3"], sub)
    assert run.returncode == 0, run.stderr
    assert "did not finish within 3 s" in run.stdout, run.stdout
    assert time.monotonic() - start < 60
    time.sleep(0.2)
    assert running_with(marker) == [], f"left running: {running_with(marker)}"

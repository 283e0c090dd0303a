"""The grader on macOS and Windows, as simulated on Linux by tests/platforms: a student's commands run in a
profile venv's Python (``python -m autograder ...`` from the submission's folder, a minimal environment), and
every process the grader starts runs in it too.

The import test is in the quick lane; the grades are slow (marked ``slow``). Processes left behind are looked
for from this test process, which is not simulated: in the real /proc.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from tests.graderkit import at_top_of_forward, make_submission
from tests.platforms import PROFILES, minimal_env, profile_python

STUDENT_MODULES = ("autograder.__main__", "autograder.cli", "autograder.grade", "autograder.instructor.handin",
                   "autograder.sandbox.worker")
TOTAL = re.compile(r"^\s*Total\s+(\d+\.\d\d)/(\d+)", re.MULTILINE)
TIMEOUT = "did not finish within 3 s"


def test_what_students_run_imports_on_macos_and_windows(platform_python, tmp_path):
    """``python -I`` from a folder that is not the checkout: the editable install is what is imported."""
    proc = subprocess.run([platform_python, "-I", "-c", "import " + ", ".join(STUDENT_MODULES)], cwd=tmp_path,
                          env=minimal_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def grade(python, folder, args=(), timeout=600):
    """``python -m autograder ARGS`` from ``folder`` as a student runs it: ``(process, seconds)``."""
    start = time.monotonic()
    proc = subprocess.run([python, "-m", "autograder", *args], cwd=folder, env=minimal_env(folder.parent / "home"),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return proc, time.monotonic() - start


def total(proc):
    """The total line's ``(score, out of)``, or None (with the output to say why) when there is none."""
    found = TOTAL.search(proc.stdout)
    return (found.group(1), found.group(2)) if found else None


def said(proc):
    """What a failed run said, for an assertion's message: the end of its stderr and stdout."""
    return f"exit {proc.returncode}\n--- stderr (end)\n{proc.stderr[-3000:]}\n--- stdout (end)\n{proc.stdout[-1500:]}"


def left_running(mark):
    """Pids of live processes that carry ``mark`` (a folder of the test) in their command line, environment or
    working folder, from the real /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
            seen = [os.readlink(f"/proc/{name}/cwd").encode()]
            for what in ("cmdline", "environ"):
                with open(f"/proc/{name}/{what}", "rb") as f:
                    seen.append(f.read())
        except (OSError, IndexError):
            continue
        if any(mark.encode() in text for text in seen):
            found.append(int(name))
    return found


@pytest.fixture(params=("native",) + PROFILES)
def python(request, tmp_path_factory):
    """The Python of a grade: this one (native: what the test itself must pass with, on Linux) or a profile's."""
    return sys.executable if request.param == "native" else profile_python(request.param, tmp_path_factory)


@pytest.mark.slow
def test_the_solution_scores_full_marks_and_how_long_a_grade_takes(tmp_path_factory, capsys):
    """A full grade of the solution, natively and under each profile, in this one test so that their times are
    comparable (printed: run with -rA to see them, the ratio is not asserted)."""
    runs = {}
    for name in ("native",) + PROFILES:
        folder = tmp_path_factory.mktemp(f"grade-{name}") / "submission"
        make_submission(folder)
        python = sys.executable if name == "native" else profile_python(name, tmp_path_factory)
        runs[name] = grade(python, folder)
    native = runs["native"][1]
    for name, (proc, seconds) in runs.items():
        print(f"full grade, {name}: {seconds:.2f} s wall ({seconds / native:.2f}x native), "
              f"total {total(proc)}, exit {proc.returncode}")
    for name, (proc, _) in runs.items():
        assert total(proc) == ("100.00", "100") and "Traceback" not in proc.stderr, f"{name}: {said(proc)}"


@pytest.mark.slow
def test_the_handout_scores_nothing_and_says_not_implemented(python, built_handout, tmp_path):
    out, _, _ = built_handout
    folder = tmp_path / "work"
    shutil.copytree(os.path.join(out, "mytorch"), folder / "mytorch")
    proc, _ = grade(python, folder)
    assert total(proc) == ("0.00", "100"), said(proc)
    assert "not implemented yet" in proc.stdout and "Traceback" not in proc.stdout + proc.stderr, said(proc)


FLIPPED = "        dz = dh_t * (n - h)"


@pytest.mark.slow
def test_a_sign_flip_is_located_at_its_line(python, tmp_path):
    folder = tmp_path / "submission"
    make_submission(folder, [("nn/gru_cell.py", "        dz = dh_t * (h - n)", FLIPPED)])
    with open(folder / "mytorch" / "nn" / "gru_cell.py") as f:
        line = next(k for k, text in enumerate(f, 1) if text.startswith(FLIPPED))
    proc, _ = grade(python, folder, ["2.2"])
    assert total(proc) == ("0.00", "7"), said(proc)
    assert f"mytorch/nn/gru_cell.py:{line}" in proc.stdout, said(proc)


ENDLESS = {
    "loop": "while True:\n    pass",
    "sleep": "import time\ntime.sleep(1000)",
    "child": "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'while True: pass', __file__]).wait()",
}


@pytest.mark.slow
@pytest.mark.waits
@pytest.mark.parametrize("what", sorted(ENDLESS))
def test_what_never_ends_is_ended_and_leaves_no_process(python, what, tmp_path):
    """An endless loop, a long sleep and a looping child process, at the top of RNNCell.forward: part 1.1 fails
    with the timeout's message, and once the grader has exited no process of the grade is left (each carries
    the submission's folder: in its command line, its environment or its working folder)."""
    folder = tmp_path / "submission"
    make_submission(folder, at_top_of_forward(ENDLESS[what]))
    proc, _ = grade(python, folder, ["1.1", "--timeout", "3"], timeout=120)
    try:
        assert total(proc) == ("0.00", "4") and TIMEOUT in proc.stdout, said(proc)
    finally:
        deadline = time.monotonic() + 5
        while left_running(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = left_running(str(tmp_path))
        for pid in left:
            os.kill(pid, 9)
    assert left == [], f"left running after the grader exited: {left}"


@pytest.mark.slow
def test_handin_packs_the_package(python, tmp_path):
    folder = tmp_path / "submission"
    make_submission(folder)
    proc, _ = grade(python, folder, ["handin", "--no-grade", "--out", str(tmp_path / "handin.tar")], timeout=120)
    assert proc.returncode == 0, said(proc)
    with tarfile.open(tmp_path / "handin.tar") as tar:
        names = tar.getnames()
    assert "mytorch/__init__.py" in names and "mytorch/nn/gru_cell.py" in names, names


@pytest.mark.parametrize("args", [["batch", "."], ["gradescope"], ["prairielearn"], ["autolab"],
                                  ["--run-as", "nobody", "1.1"], ["--gradescope", "1.1"]], ids=lambda args: args[0])
def test_what_grades_others_code_says_it_needs_linux(platform_python, args, tmp_path):
    """Their promises (sandbox users, namespaces, the subreaper) are Linux's: elsewhere each says so and stops,
    at 80 columns, before it grades or writes anything."""
    make_submission(tmp_path / "sub")
    proc, _ = grade(platform_python, tmp_path / "sub", args, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, said(proc)
    text = " ".join(proc.stderr.split())
    assert f"{args[0]} needs Linux" in text and "run 'python -m autograder'" in text, said(proc)
    assert max(len(line) for line in proc.stderr.splitlines()) <= 80, said(proc)
    assert os.listdir(tmp_path / "sub") == ["mytorch"]


@pytest.mark.slow
@pytest.mark.waits
def test_ctrl_c_stops_a_grade_at_once_with_one_line_and_nothing_left(python, tmp_path):
    """Ctrl+C (SIGINT, as a terminal sends it) while a part loops and spawned a child that loops: the grade
    ends within seconds with exit status 130 and one line, no traceback, and nothing of it left running."""
    mark = f"mytorch-ctrl-c-{os.getpid()}-{time.monotonic_ns()}"
    code = (f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'while True: pass', '{mark}'])\n"
            "while True:\n    pass")
    sub = tmp_path / "sub"                       # the mark is in the spawned child's command line alone
    make_submission(sub, at_top_of_forward(code))
    proc = subprocess.Popen([python, "-m", "autograder", "1.1", "2.1", "--timeout", "60"], cwd=sub,
                            env=minimal_env(tmp_path / "home"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, stdin=subprocess.DEVNULL, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                                               signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not left_running(mark) and time.monotonic() < deadline:       # the part and its child are running
        time.sleep(0.1)
    assert left_running(mark), "the part never started"
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - start < 10 and proc.returncode == 130, err
    assert "Interrupted: the parts running were stopped" in err and "Traceback" not in out + err, err
    time.sleep(0.2)
    assert left_running(mark) == []

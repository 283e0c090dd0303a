"""The grader's temporary folders are named for the process that made them (``sandbox.scratch``): a killed
grader's are removed by the next one, and nothing else is, whatever is named like them."""
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from autograder.sandbox import reaper, scratch
from tests.graderkit import REPO, at_top_of_forward, make_submission

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc")


def _dead_process():
    """(pid, start) of a process that has ended."""
    proc = subprocess.Popen(["true"])
    start = reaper.start_time(proc.pid)
    proc.wait()
    return proc.pid, start


def test_a_folder_of_a_process_that_is_gone_is_removed_and_nothing_else_is(tmp_path):
    pid, start = _dead_process()
    boot = scratch.owner()[2]
    top = tempfile.gettempdir()
    dead = tempfile.mkdtemp(prefix=f"mytorch-work-{pid}-{start}-{boot}-")
    reused = tempfile.mkdtemp(prefix=f"mytorch-autolab-{os.getpid()}-{(start or 0) + 1}-{boot}-")   # pid reused
    old_boot = tempfile.mkdtemp(prefix=f"mytorch-handed-in-{os.getpid()}-{scratch.owner()[1]}-00000000-")
    alive = scratch.folder("submission")
    link = os.path.join(top, f"mytorch-work-{pid}-{start}-{boot}-link{os.getpid()}")
    os.symlink(str(tmp_path), link)                       # named like a dead one's: a link, never followed
    plain = os.path.join(top, f"mytorch-work-{pid}-{start}-{boot}-file{os.getpid()}")
    open(plain, "w").close()
    lent = tempfile.mkdtemp(prefix=f"mytorch-work-{pid}-{start}-{boot}-")
    if os.geteuid() == 0:                                 # a working folder lent to a sandbox user: root's to sweep
        os.chown(lent, 65534, 65534)
    (tmp_path / "kept").write_text("x")
    try:
        swept = scratch.sweep()
        assert {dead, reused, old_boot, lent} <= set(swept)
        assert not any(map(os.path.exists, (dead, reused, old_boot, lent)))
        assert os.path.isdir(alive) and os.path.islink(link) and os.path.isfile(plain)
        assert (tmp_path / "kept").read_text() == "x"
    finally:
        os.rmdir(alive)
        os.unlink(link)
        os.unlink(plain)


@pytest.mark.slow
def test_what_a_killed_autolab_grader_left_is_removed_by_the_next_job(tmp_path):
    """Autolab's grader killed hard mid-part (a platform timeout) leaves its folders and the submission's copy;
    the next job on the machine removes every one of them before it grades."""
    started = tmp_path / "started"
    sub = make_submission(tmp_path / "sub", at_top_of_forward(
        f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(600)"))
    job = tmp_path / "job"
    job.mkdir()
    subprocess.run([sys.executable, "-m", "autograder", "handin", "--submission", str(sub), "--out",
                    str(job / "handin.tar"), "--no-grade"], cwd=REPO, check=True, capture_output=True)
    env = dict(os.environ, MYTORCH_GRADER_LANDLOCK="0", MYTORCH_GRADER_PID_NAMESPACE="0")
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "autolab", "--handin", str(job / "handin.tar")],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started.exists()
    made = [n for n in os.listdir(tempfile.gettempdir())          # while it runs: its folders, by their names
            if scratch.NAME.match(n) and scratch.NAME.match(n).group("pid") == str(proc.pid)]
    os.killpg(proc.pid, signal.SIGKILL)                   # the grader and its children, as a timeout does
    proc.wait()
    assert {"autolab", "handed-in", "submission", "work"} <= {scratch.NAME.match(n).group("kind") for n in made}
    scratch.sweep()                                       # (another test's grader may have swept some already)
    assert not any(os.path.lexists(os.path.join(tempfile.gettempdir(), n)) for n in made), made

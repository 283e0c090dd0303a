"""The reaper tells the grader's own helper processes apart from orphans a part left behind.

When a part ends, every child of the grader that the grader did not start itself is taken for an orphan that
escaped its part, and killed. So every process the grader starts (a probe of a Python as the sandbox user,
find, unshare, useradd) must be started through ``reaper.spawn`` or ``reaper.run``: one started otherwise is
killed by any part that ends while it runs (under ``--fresh-seed --run-as`` the solution's parts end while the
Pythons are being checked, and the check failed with "cannot run ... with numpy" one time in four)."""
import ast
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import types

import pytest

from autograder.sandbox import reaper

PACKAGE = pathlib.Path(reaper.__file__).parent.parent                 # the autograder package, every module
STARTS = {("subprocess", name) for name in ("run", "Popen", "call", "check_call", "check_output",
                                              "getoutput", "getstatusoutput")} | {("os", name) for name in (
    "system", "popen", "spawnv", "spawnve", "spawnvp", "spawnl", "posix_spawn", "posix_spawnp")}


def _children():
    return {pid for pid, (parent, state) in reaper._table().items() if parent == os.getpid() and state != "Z"}


def _until(condition, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_helper_started_through_the_reaper_outlives_a_part_ending_while_an_orphan_does_not():
    assert reaper.become_subreaper()
    before = _children()
    stray = subprocess.Popen(["sleep", "30"])             # what an escaped grandchild looks like to the grader
    done, (hold, release) = {}, os.pipe()                 # the helper waits for a line the test writes at the end
    helper = threading.Thread(target=lambda: done.setdefault("run", reaper.run(
        ["sh", "-c", "read line"], stdin=hold, capture_output=True)))
    helper.start()
    assert _until(lambda: len(_children() - before) == 2)
    reaper.end_orphans()                                  # what every part's end does (it reaps the stray)
    assert stray.pid not in _children() and stray.poll() is not None
    assert helper.is_alive()
    os.write(release, b"done\n")
    os.close(release)
    helper.join(timeout=30)
    os.close(hold)
    assert done["run"].returncode == 0


HIDING = """
import os, sys, time
out = int(sys.argv[1])
def hide(depth):
    if os.fork() == 0:                                    # a child in a session of its own, and its child
        os.setsid()
        if depth:
            hide(depth - 1)
        os.write(out, b"%d\\n" % os.getpid())
        time.sleep(60)
        os._exit(0)
for _ in range(3):
    hide(2)
if os.fork():                                             # a double fork: the middle one exits at once
    os._exit(0)
os.write(out, b"%d\\n" % os.getpid())
time.sleep(60)
"""


@pytest.mark.parametrize("children_files", [True, False])
def test_end_kills_every_process_a_child_started_however_it_hid(monkeypatch, children_files):
    """Nine processes in sessions of their own, three levels deep, and one whose parent exited: all ended,
    whether the reaper reads the children files of the part's processes or the whole process table."""
    if children_files and not reaper.children_files():
        pytest.skip("this kernel has no /proc/PID/task/TID/children")
    monkeypatch.setattr(reaper, "_children_files", [children_files])
    assert reaper.become_subreaper()
    read, write = os.pipe()
    proc = reaper.spawn(lambda: subprocess.Popen([sys.executable, "-c", HIDING, str(write)], pass_fds=[write]))
    os.close(write)
    pids, text = [], b""
    while len(pids) < 10:
        text += os.read(read, 4096)
        pids = [int(p) for p in text.split()]
    os.close(read)
    assert all(reaper._state(pid) not in (None, "Z") for pid in pids)
    reaper.end(proc)
    assert [pid for pid in pids if reaper._state(pid) is not None] == []
    assert pids[-1] not in _children()


def test_run_kills_a_helper_past_its_timeout_and_forgets_it():
    try:
        reaper.run(["sleep", "30"], timeout=0.2)
    except subprocess.TimeoutExpired:
        pass
    else:
        raise AssertionError("no TimeoutExpired")
    assert not reaper._ours


def test_end_kills_only_the_process_it_started_not_one_that_took_its_pid():
    """A pid is given again once its process is reaped (pids wrap at 32768 here, and a run of the tests starts
    about 17,000 processes and threads). A zygote's child reaped by its zygote, or re-parented to the grader and
    reaped as an orphan, leaves its pid to whatever starts next: ending the child then must not kill that
    process, told apart by its start time. Here a process of the grader's own stands for the one that took
    the pid; ``end`` of what had it before leaves it, and what it started, alive."""
    other = reaper.spawn(lambda: subprocess.Popen([sys.executable, "-c", "import os, time\n"
                                                   "if os.fork() == 0:\n    time.sleep(30)\ntime.sleep(30)"]))
    try:
        assert _until(lambda: reaper._below([other.pid]).keys() - {other.pid})           # its child is there
        below = set(reaper._below([other.pid]))

        def alive():
            return {pid for pid in below if reaper._state(pid) not in (None, "Z")}

        earlier = types.SimpleNamespace(pid=other.pid, returncode=None, started=other.started - 1,
                                        wait=lambda timeout=None: None)
        reaper.end(earlier, budget=1.0)
        assert not _until(lambda: not below <= alive(), seconds=1.0)                     # both stay alive
        assert reaper._ours.get(other.pid) is other                                       # and still ours
        reaper.end(other)                                                                 # the process itself
        assert other.returncode == -signal.SIGKILL and _until(lambda: not alive())
    finally:
        reaper._sweep_once([other.pid], {other.pid: other.started})


@pytest.mark.waits
@pytest.mark.parametrize("hide", ["child", "new session", "double fork"])
def test_run_past_its_timeout_returns_though_what_the_helper_started_holds_its_pipes(hide):
    """A helper (a Python probe runs a .pth of whoever could write there) that leaves a process holding its
    stdout and stderr, in its own session or re-parented to the grader: run still ends by its timeout, with
    every one of them killed."""
    start = {"child": "os.fork() == 0", "new session": "os.fork() == 0 and os.setsid() is None",
             "double fork": "os.fork() == 0 and os.fork() == 0"}[hide]
    ready, started = os.pipe()                            # the last process says it exists, well before the timeout
    code = (f"import os, sys, time  # {os.getpid()} {hide}\n"          # told apart from another test's
            f"if {start}:\n    print(os.getpid(), flush=True)\n    os.write({started}, b'x')\n    time.sleep(60)\n"
            "time.sleep(60)\n")
    reaper.become_subreaper()
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        reaper.run([sys.executable, "-c", code], timeout=5, capture_output=True, pass_fds=[started])
    os.close(started)
    assert os.read(ready, 1) == b"x"                      # what the timeout ended had started its child
    os.close(ready)
    assert time.monotonic() - began < 30                  # not the 60 s of the processes holding its pipes
    assert not reaper._ours
    assert _until(lambda: not _children())
    assert not [pid for pid, (_, state) in reaper._table().items()
                if state != "Z" and _command(pid).startswith(sys.executable.encode() + b"\0-c\0" + code.encode())]


def _command(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _started_outside_the_reaper(tree):
    """Calls that start a process, except as ``spawn(lambda: subprocess.Popen(...))`` and inside reaper.run."""
    inside_spawn = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "spawn"
                and node.args and isinstance(node.args[0], ast.Lambda)):
            inside_spawn.update(id(n) for n in ast.walk(node.args[0]))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and (node.func.value.id, node.func.attr) in STARTS
            and id(node) not in inside_spawn]


def test_every_process_the_grader_starts_goes_through_the_reaper():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _started_outside_the_reaper(ast.parse(path.read_text(), str(path)))
        if lines:
            found[path.name] = lines
    assert found == {}, f"processes started outside reaper.spawn/run (file: lines): {found}"
    sample = ast.parse("import subprocess\nsubprocess.run(['true'])\nspawn(lambda: subprocess.Popen(['true']))\n")
    assert _started_outside_the_reaper(sample) == [2]     # the check itself sees one

"""Student code that runs as the grader's own user (Autolab: ``make``, its shell, the grader and student code are
one user) cannot reach the processes above it: it can neither stop nor kill them, open their descriptors or
memory, nor write the log their output goes to (``sandbox.landlock``).

The attack is Autolab's scores forgery: a submission finds ``make`` (here by a word on its command line),
tries to stop it and every process below it but its own, to open their standard output through
``/proc/<pid>/fd/1`` and the log Tango reads by its path, to write a full-marks scores line there, to read the
grader's memory, and to kill them all, so that the forged line is the last. Each class of access is tried on
every process of the job, and the submission reports what it could do in its error, which the grader
prints. The job is run as Tango runs it, with the output in a log file, and without a PID namespace (Autolab
gives no root to make one); with Landlock turned off the same submission forges the line, which shows the
test can tell.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import uuid

import pytest

from autograder.sandbox import landlock
from handout import build
from tests.graderkit import REPO, at_top_of_forward, make_grader_copy, make_submission, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc")]

FORGED = {"scores": {"1.1": 999.0}, "scoreboard": [999.0]}

ATTACK = '''
import os as _os, signal as _signal
_job, _log, _line = JOB, LOG, LINE
def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""
def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0
_pids = [int(p) for p in _os.listdir("/proc") if p.isdigit()]
_make = [p for p in _pids if _job in _cmdline(p) and "make" in _cmdline(p)]
_mine = {_os.getpid()}
_targets = []
for _p in _pids:
    _q, _seen = _p, 0
    while _q > 1 and _seen < 64:
        if _q in _make and _p not in _mine:
            _targets.append(_p)
            break
        _q, _seen = _parent(_q), _seen + 1
_done = {"found": len(_targets)}
def _try(what, call):
    try:
        call()
        _done[what] = _done.get(what, 0) + 1
    except OSError:
        _done.setdefault(what, 0)
for _p in _targets:
    _try("stop", lambda: _os.kill(_p, _signal.SIGSTOP))
for _p in _targets:
    for _fd in (1, 2):
        def _write(p=_p, fd=_fd):
            with open(f"/proc/{p}/fd/{fd}", "a") as f:
                f.write(_line + "\\n")
        _try("descriptor", _write)
    def _memory(p=_p):
        with open(f"/proc/{p}/mem", "rb") as f:
            f.read(1)
    _try("memory", _memory)
def _append():
    with open(_log, "a") as f:
        f.write(_line + "\\n")
_try("log", _append)
for _p in _targets:
    _try("kill", lambda: _os.kill(_p, _signal.SIGKILL))
raise RuntimeError("attack " + " ".join(f"{k}={v}" for k, v in sorted(_done.items())))
'''


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return build.build_autolab(str(tmp_path_factory.mktemp("autolab") / "out"))


def _job(bundle, tmp_path, landlock_abi):
    """Run a forging submission as Tango runs an Autolab job: (the log's lines, what the attack reported)."""
    job, word = tmp_path / "job", uuid.uuid4().hex
    job.mkdir()
    tar, makefile = bundle
    shutil.copy(tar, job / "autograde.tar")
    shutil.copy(makefile, job / "Makefile")
    log = tmp_path / "output.log"
    code = ATTACK.replace("JOB", repr(word)).replace("LOG", repr(str(log))).replace("LINE", repr(json.dumps(FORGED)))
    sub = make_submission(tmp_path / "sub", at_top_of_forward(code))
    subprocess.run([sys.executable, "-m", "autograder", "handin", "--submission", str(sub), "--out",
                    str(job / "handin.tar"), "--no-grade"], cwd=REPO, check=True, capture_output=True)
    env = dict(os.environ, MYTORCH_GRADER_PID_NAMESPACE="0", MYTORCH_GRADER_LANDLOCK=str(landlock_abi))
    with open(log, "w") as out:                            # the autodriver's log: opened by the job's user
        subprocess.run(["make", f"JOB={word}"], cwd=job, stdout=out, stderr=subprocess.STDOUT, env=env,
                       timeout=900)
    lines = log.read_text().rstrip("\n").split("\n")
    reports = [dict(re.findall(r"(\w+)=(\d+)", (line + following).split("attack ", 1)[1]))   # wrapped at 80
               for line, following in zip(lines, lines[1:]) if "RuntimeError: attack " in line]
    return lines, reports


@pytest.mark.skipif(landlock.abi() < 6, reason="Landlock's signal scope needs Linux 6.12 (ABI 6)")
def test_student_code_of_the_graders_user_cannot_forge_autolabs_scores_line(bundle, tmp_path):
    lines, reports = _job(bundle, tmp_path, landlock.abi())
    last = json.loads(lines[-1])
    assert last != FORGED and last["scoreboard"][0] < 100, lines[-5:]
    assert not any(json.dumps(FORGED) in line for line in lines), lines[-5:]
    assert reports, lines[-40:]
    for seen in reports:                                   # every access tried on every process, and refused
        assert int(seen["found"]) >= 3, seen               # make, its shell and the grader at least
        assert all(seen[what] == "0" for what in ("stop", "descriptor", "memory", "log", "kill")), seen


def test_without_landlock_the_same_submission_forges_the_line(bundle, tmp_path):
    """What the confinement holds: with it turned off, the forged line is the last Autolab would read."""
    lines, _ = _job(bundle, tmp_path, 0)
    assert json.loads(lines[-1]) == FORGED, lines[-5:]


@pytest.mark.skipif(landlock.abi() < 1, reason="no Landlock in this kernel")
def test_on_a_kernel_without_the_signal_scope_the_forgery_is_not_written(bundle, tmp_path):
    """Before Linux 6.12 (Landlock ABI 1 to 5) the child can still stop and kill the job's processes, but not
    write to their output or the log: the job ends with no scores line (Autolab tells the student the grader
    gave none), never with a forged one."""
    lines, reports = _job(bundle, tmp_path, 5)
    assert not any(json.dumps(FORGED) in line for line in lines), lines[-5:]
    assert not any('"scores"' in line for line in lines), lines[-5:]    # killed before it printed any
    assert not reports, reports                           # nor the report of the part that killed it


WRITES = '''
import glob as _glob, os as _os, tempfile as _tempfile
_tried = {"grader": _glob.glob(GRADER + "/autograder/**/*.py", recursive=True)[:50]
          + _glob.glob(GRADER + "/autograder/data/*")[:20],
          "results": [RESULTS], "submission": _glob.glob(SUB + "/mytorch/**/*.py", recursive=True),
          "tmp": [_os.path.join(_os.path.dirname(_tempfile.gettempdir()), "tmp", "planted")], "home": [HOME]}
_done = {}
for _what, _paths in _tried.items():
    _done[_what] = 0
    for _p in _paths:
        try:
            with open(_p, "a") as _f:
                _f.write("#")
            _done[_what] += 1
        except OSError:
            pass
with open("own", "w") as _f:                            # its own folder (the working folder) it may write
    _f.write("x")
raise RuntimeError("writes " + " ".join(f"{k}={v}" for k, v in sorted(_done.items())))
'''


@pytest.mark.skipif(landlock.abi() < 1, reason="no Landlock in this kernel")
def test_student_code_of_the_graders_user_writes_in_its_own_folder_alone(tmp_path):
    """Every place a submission could leave something for the grader or the next job, tried file by file: the
    grader's modules and reference data, the results file, the submission itself, the temporary folder, the
    home folder. None is written; its own working folder is."""
    grader = make_grader_copy(tmp_path / "grader")
    results, home = tmp_path / "r.json", tmp_path / "home-file"
    code = (WRITES.replace("GRADER", repr(str(grader))).replace("RESULTS", repr(str(results)))
            .replace("SUB", repr(str(tmp_path / "sub"))).replace("HOME", repr(str(home))))
    sub = make_submission(tmp_path / "sub", at_top_of_forward(code))
    before = {p: p.read_bytes() for p in (tmp_path / "sub").rglob("*.py")}
    proc = run_cli(["1.1", "--submission", sub, "--json", str(results)], cwd=grader,
                   env={"MYTORCH_GRADER_PID_NAMESPACE": "0"})
    text = (proc.stdout + "\n").replace("\n  ", " ")
    seen = dict(re.findall(r"(\w+)=(\d+)", text.split("RuntimeError: writes ", 1)[1].split("\n")[0]))
    assert seen == {"grader": "0", "home": "0", "results": "0", "submission": "0", "tmp": "0"}, seen
    assert {p: p.read_bytes() for p in (tmp_path / "sub").rglob("*.py")} == before and not home.exists()
    assert "PermissionError" not in text                  # its own folder was written: the error is its own

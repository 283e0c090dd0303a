"""``--run-as`` and ``batch --run-as`` for real (as root): a user made for this run, a Python it can execute, and
the attacks of tests/securitykit.py plus a batch whose one submission attacks the others and the grader.
Skipped, with the reason, when not root or when the Python cannot be built."""
import compileall
import contextlib
import csv
import ctypes
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile

import pytest

import autograder
from autograder.diagnosis import mistakes
from autograder.parts import spec
from autograder.sandbox import interpreter, ipc, reaper, tree
from tests import securitykit as kit
from tests.graderkit import (
    REPO,
    TWO_SECTIONS,
    at_top_of_forward,
    check_gradescope,
    make_grader_copy,
    make_submission,
    readable_checkout,
    report_of,
    world_readable_dir,
)

pytestmark = pytest.mark.slow                  # grades as sandbox users it makes: attack campaigns, users and Pythons made per test

SECRET_TEXT = "ROOT-ONLY-51d0e2"
RUN_AS_ATTACKS = ["honest broken", "FIFO in place of every reachable file",
                  "symlink to a secret in place of every reachable file", "every inherited fd written to",
                  "daemons that outlive the grader and rewrite the results"]
# a process of the same user (as a sibling would be) opens this worker's memory: refused, it is non-dumpable
PEEK = ("import sys\ntry:\n    open('/proc/%s/mem' % sys.argv[1], 'rb')\n    print('memory: read')\n"
        "except OSError as e:\n    print('memory: refused', e.strerror)")
MEMORY_PEEK = ("import subprocess\n"
               f"done = subprocess.run([sys.executable, '-c', {PEEK!r}, str(os.getpid())], capture_output=True, "
               "text=True)\nraise ValueError(done.stdout.strip() or done.stderr[-300:])")
# System V shared memory, a semaphore set and a message queue, and POSIX shared memory, all left behind
IPC_LEFT = (
    "import ctypes\nlibc = ctypes.CDLL(None)\n"
    "for k in range(4):\n    libc.shmget(0, 1 << 20, 0o1600)\nlibc.semget(0, 4, 0o1600)\nlibc.msgget(0, 0o1600)\n"
    "open(f'/dev/shm/mytorch-left-{os.getpid()}', 'wb').write(bytes(1 << 16))\n"
    "raise ValueError('broken')")
# POSIX shared memory is memory of no process's: 256 MiB of 1 MiB files in /dev/shm, then its size
SHM_FILL = ("written = 0\ntry:\n    while written < 256:\n"
            "        with open(f'/dev/shm/fill-{os.getpid()}-{written}', 'wb') as f:\n"
            "            f.write(bytes(1 << 20))\n        written += 1\nexcept OSError:\n    pass\n"
            "room = os.statvfs('/dev/shm')\n"
            "raise ValueError(f'shm filled: {written} MiB of {room.f_blocks * room.f_frsize >> 20} MiB')")
FORK_BOMB = ("if not hasattr(builtins, 'attacked'):\n    builtins.attacked = 1\n"
             "    def bomb():\n        while True:\n            try:\n                os.fork()\n"
             "            except OSError:\n                time.sleep(0.01)\n"
             "    daemon(bomb, 60)\nraise ValueError('broken')")


def _numpy_copied_into(venv):
    """Put this Python's NumPy into ``venv`` when both are the same minor version (seconds, where a download
    takes minutes); True if the venv's Python then imports it."""
    import numpy
    python = os.path.join(venv, "bin", "python")
    probe = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2] == %r and sys.path[-1])"
                            % (tuple(sys.version_info[:2]),)], capture_output=True, text=True)
    site = probe.stdout.strip()
    if probe.returncode != 0 or not site.startswith(venv):
        return False
    here = os.path.dirname(os.path.dirname(numpy.__file__))
    for name in ("numpy", "numpy.libs"):
        if os.path.isdir(os.path.join(here, name)):
            shutil.copytree(os.path.join(here, name), os.path.join(site, name),
                            ignore=shutil.ignore_patterns("__pycache__", "tests"))
    return subprocess.run([python, "-I", "-c", "import numpy"], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def sandbox_python(tmp_path_factory):
    """A Python with numpy that any user can run (a venv of /usr/bin/python3), made once per test process."""
    if os.geteuid() != 0:
        pytest.skip("--run-as needs root")
    if shutil.which("useradd") is None or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs useradd and /usr/bin/python3")
    home = world_readable_dir("mytorch-run-as-python-")
    venv = os.path.join(home, "venv")
    made = subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], capture_output=True, text=True)
    if made.returncode == 0 and not _numpy_copied_into(venv):
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run(["/usr/bin/python3", "-m", "venv", venv], capture_output=True, text=True)
        if made.returncode == 0:
            made = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "numpy"],
                                  capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(home, ignore_errors=True)
        pytest.skip(f"could not build a Python with numpy for the sandbox user: {made.stderr[-300:]}")
    yield os.path.join(venv, "bin", "python")
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def sandbox_user(sandbox_python):
    """(a function making a new user, a Python with numpy any user can run, a world-readable folder); the
    users and the folder are removed afterwards. One user per grading process: the grader kills every process
    of its sandbox user at the end, so two graders must not share one."""
    home = world_readable_dir("mytorch-run-as-")
    made = []

    def make_user():
        name = "mtg" + secrets.token_hex(4)
        added = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                               capture_output=True, text=True)
        if added.returncode != 0:
            pytest.skip(f"could not create a user: {added.stderr}")
        made.append(name)
        return pwd.getpwnam(name)

    try:
        yield make_user, sandbox_python, home
    finally:
        for name in made:
            subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def checkout():
    """The checkout the tests below grade from (its grader, course and ``mytorch``) as a sandbox user: this one,
    or, where a sandbox user cannot read it (a clone in a 0700 home), a copy of it that every user may read
    (``readable_checkout``), removed afterwards."""
    path = readable_checkout()
    yield path
    if path != REPO:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


@pytest.fixture(scope="module")
def campaign(sandbox_user):
    make_user, python, home = sandbox_user
    root = world_readable_dir(os.path.join(home, "campaign-"))
    grader = make_grader_copy(os.path.join(root, "grader"))
    before = kit.tree_digest(grader)
    secret = os.path.join(root, "secret.txt")              # root alone may read it
    with open(secret, "w") as f:
        f.write(SECRET_TEXT)
    os.chmod(secret, 0o600)
    attacks = {name: kit.ATTACKS[name][0] for name in RUN_AS_ATTACKS}
    attacks["fork bomb"] = FORK_BOMB
    attacks["memory of a sibling read"] = MEMORY_PEEK
    attacks["IPC objects left behind"] = IPC_LEFT
    attacks["IPC objects left behind, no IPC namespace"] = IPC_LEFT
    attacks["/dev/shm filled"] = SHM_FILL
    users = {name: make_user() for name in attacks}
    runs = {name: kit.launch(root, name, code, grader, secret, ["--run-as", users[name].pw_name, "--python", python],
                             ipc_namespace="no IPC namespace" not in name)
            for name, code in attacks.items()}
    kit.wait_all(runs.values())
    with open(secret) as f:
        secret_after = f.read()
    return {"runs": runs, "grader_changed": kit.tree_digest(grader) != before, "secret_after": secret_after,
            "users": users}


@pytest.mark.parametrize("name", RUN_AS_ATTACKS[1:] + ["fork bomb", "memory of a sibling read", "IPC objects left behind",
                                  "IPC objects left behind, no IPC namespace", "/dev/shm filled"])
def test_attack_as_the_sandbox_user(campaign, name):
    runs = campaign["runs"]
    honest = kit.verdicts(runs["honest broken"])
    assert honest["score"] == spec.PARTS_BY_NUMBER["1.1"].points     # part 1.1 in full: the sandbox Python grades
    run = runs[name]
    results = kit.verdicts(run)
    tests = check_gradescope(results)
    assert results["score"] == honest["score"], run.at_exit.decode()[:3000]
    assert tests["2.1"]["score"] == 0
    assert run.later == run.at_exit
    assert not kit.processes_mentioning(run.base, uid=campaign["users"][name].pw_uid)
    assert SECRET_TEXT not in run.at_exit.decode() + run.stdout + run.stderr
    assert not campaign["grader_changed"] and campaign["secret_after"] == SECRET_TEXT
    assert not left_by(campaign["users"][name].pw_uid)


def test_a_part_fills_only_a_dev_shm_of_its_own_bounded_to_its_memory(campaign):
    """Its own tmpfs, bounded to the part's memory limit (1024 MiB), not the machine's. (Past it the writes
    fail; as root the part's memory cgroup counts these pages too, and ends the part first: see
    test_hostile.)"""
    if not _can_make_mount_namespace():
        pytest.skip("this kernel lets no process here make a mount namespace: /dev/shm is cleared after the part")
    output = check_gradescope(kit.verdicts(campaign["runs"]["/dev/shm filled"]))["2.1"]["output"]
    assert "shm filled: 256 MiB of 1024 MiB" in output, output


def _can_make_mount_namespace():
    """Whether a child of this process can make a mount namespace with a private tmpfs (as the grader's do)."""
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            ok = ipc._libc.unshare(ipc.CLONE_NEWNS) == 0 and ipc._libc.mount(None, b"/", None,
                                                                          ipc.MS_REC | ipc.MS_PRIVATE, None) == 0
        finally:
            os._exit(0 if ok else 1)
    return os.waitpid(pid, 0)[1] == 0


def left_by(uid):
    """What ``uid`` still has: System V IPC objects, POSIX shared memory, entries in /tmp and /var/tmp."""
    found = [f"{kind} {ident}" for kind, ident in ipc.system_v_owned_by(uid)]
    for top in ("/dev/shm", "/tmp", "/var/tmp"):
        for name in os.listdir(top):
            try:
                if os.lstat(os.path.join(top, name)).st_uid == uid:
                    found.append(os.path.join(top, name))
            except FileNotFoundError:                   # another test's grader removed it meanwhile
                pass
    return found


def test_a_worker_is_non_dumpable(campaign):
    tests = check_gradescope(kit.verdicts(campaign["runs"]["memory of a sibling read"]))
    assert "memory: refused" in tests["2.1"]["output"], tests["2.1"]["output"]


def test_batch_isolates_submissions_and_the_grader(sandbox_user):
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "batch-"))
    grader = make_grader_copy(os.path.join(root, "grader"), TWO_SECTIONS)
    before = kit.tree_digest(grader)
    subs = os.path.join(root, "subs")
    make_submission(os.path.join(subs, "alice"))
    m = mistakes.CATALOGUE[0]
    make_submission(os.path.join(subs, "bob"), [(m.path, m.old, m.new)])
    for folder, dirs, files in os.walk(subs):              # even a careless folder: anyone may write alice's files
        for name in dirs + files:
            os.chmod(os.path.join(folder, name), 0o777 if name in dirs else 0o666)
    vandal = (
        "import glob\nhere = os.path.dirname(os.path.abspath(__file__))\n"
        "staging = os.path.dirname(os.path.dirname(os.path.dirname(here)))\n"
        f"targets = glob.glob({subs!r} + '/*/mytorch/**/*.py', recursive=True)\n"
        "targets += glob.glob(staging + '/*/mytorch/**/*.py', recursive=True)\n"
        f"targets += glob.glob({grader!r} + '/autograder/**/*', recursive=True)\n"
        "for t in targets:\n    if 'mallory' in t or t.startswith(here):\n        continue\n    try:\n"
        "        open(t, 'w').write('raise SystemExit(0)\\n')\n    except OSError:\n        pass\n"
        f"try:\n    open({str(report_of(subs)) + '/scores.csv'!r}, 'w').write('alice,0\\n')\nexcept OSError:\n    pass\n"
        + FORK_BOMB.replace("raise ValueError('broken')", ""))
    make_submission(os.path.join(subs, "mallory"), kit.attack_edits(vandal, root, "", ""))
    env = dict(os.environ, PYTHONPATH="")
    bob_alone = subprocess.run([sys.executable, "-m", "autograder", "--submission", os.path.join(subs, "bob")],
                               cwd=grader, env=env, capture_output=True, text=True, timeout=300)
    proc = subprocess.run([sys.executable, "-m", "autograder", "batch", subs, "--run-as", user.pw_name,
                           "--python", python, "--jobs", "2"], cwd=grader, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "graded 3/3 submissions" in proc.stderr and "no isolation" not in proc.stderr
    with open(os.path.join(report_of(subs), "scores.csv")) as f:
        rows = {line.split(",")[0]: line.split(",") for line in f.read().splitlines()}
    assert rows["alice"][-3] == "100"
    assert f"{float(rows['bob'][-3]):.2f}/100" in bob_alone.stdout     # as graded alone, before the batch
    assert kit.tree_digest(grader) == before                 # the grader's code and data, byte for byte
    assert not kit.processes_mentioning("/nonexistent", uid=user.pw_uid)


def _reach_probe(solution_file, references):
    """Code that fails a case if student code can read the solution's source or the reference data, or is root."""
    return ("import os\n"
            f"for _place in ({solution_file!r}, {references!r}):\n"
            "    try:\n"
            "        os.listdir(_place) if os.path.isdir(_place) else open(_place).close()\n"
            "    except OSError:\n"
            "        continue\n"
            "    raise ValueError('student code reached ' + _place)\n"
            "if os.getuid() == 0:\n"
            "    raise ValueError('student code ran as root')\n")


# the folder of the copy graded: root's, read by the sandbox user's group alone (no other user reads it)
COPY_IS_ITS_OWN = ("import mytorch as _mine\n"
                   "_folder = os.stat(os.path.dirname(os.path.dirname(os.path.abspath(_mine.__file__))))\n"
                   "if _folder.st_mode & 0o777 != 0o750 or (_folder.st_uid, _folder.st_gid) != (0, os.getgid()):\n"
                   "    raise ValueError('the copy is open to others: ' + oct(_folder.st_mode))\n")


def test_gradescope_as_root_runs_student_code_as_its_user_who_can_read_no_solution_and_no_reference(
        sandbox_user, tmp_path):
    """The Gradescope zip as Gradescope runs it: run_autograder as root, with the user setup.sh makes present
    (a test user of its own, named by MYTORCH_GRADER_USER) and python3 a Python that user may run. The
    submission, the solution plus code that tries the solution's source, the grader's reference data and
    root's privileges, scores 100 on fresh cases: it runs as the user and reaches none of them. The grader
    left them readable by root alone, and has no warning for the course staff."""
    import zipfile

    from handout import build
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "gradescope-"))        # /autograder: root's, open to pass
    build.build_gradescope(os.path.join(root, "package"), True, fixed_cases=False)
    source = os.path.join(root, "source")
    with zipfile.ZipFile(os.path.join(root, "package.zip")) as z:
        z.extractall(source)
    os.chmod(os.path.join(source, "run_autograder"), 0o755)
    solution_file = os.path.join(source, "solution", "mytorch", "nn", "rnn_cell.py")
    references = os.path.join(source, "autograder", "data")
    assert os.path.isfile(solution_file) and os.listdir(references)
    probe = _reach_probe(solution_file, references) + COPY_IS_ITS_OWN
    sub = make_submission(tmp_path / "sub", at_top_of_forward(probe))
    shutil.copytree(os.path.join(sub, "mytorch"), os.path.join(root, "submission", "mytorch"))
    os.makedirs(os.path.join(root, "results"))
    env = dict(os.environ, AUTOGRADER_ROOT=root, MYTORCH_GRADER_USER=user.pw_name,
               PATH=os.path.dirname(python) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run([os.path.join(source, "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=300)
    told = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in told, told
    with open(os.path.join(root, "results", "results.json")) as f:
        results = json.load(f)
    tests = check_gradescope(results)
    assert results["score"] == 100, [t["output"] for t in results["tests"] if t["score"] < t["max_score"]]
    notes = results["extra_data"]["instructor_notes"]
    assert [n for n in notes if not n.startswith("graded on fresh cases")] == [] and len(notes) == 1, notes
    assert "INSTRUCTOR WARNING" not in told, told
    assert "1.1" in tests and "reached" not in json.dumps(results)
    tops = [os.path.join(source, n) for n in os.listdir(source) if os.path.isdir(os.path.join(source, n))]
    for place in [references] + [p for p in tops if os.path.basename(p) != "autograder"]:    # solution/ among them
        assert os.stat(place).st_mode & 0o777 == 0o700, place


def test_batch_without_a_sandbox_user_says_there_is_no_isolation(tmp_path):
    make_submission(tmp_path / "subs" / "alice")
    proc = subprocess.run([sys.executable, "-m", "autograder", "batch", str(tmp_path / "subs"), "--jobs", "2"],
                          cwd=make_grader_copy(tmp_path / "grader", TWO_SECTIONS),
                          env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "warning: no isolation" in proc.stderr
    assert "graded 1/1 submissions" in proc.stderr
    assert "Found 1 submission in" in proc.stdout and "1 submission found, 1 row written:" in proc.stdout


def test_a_python_the_sandbox_user_cannot_use_is_a_usage_error(sandbox_user):
    make_user, python, home = sandbox_user
    user = make_user()
    broken = os.path.join(home, "python-without-numpy")
    with open(broken, "w") as f:
        f.write("#!/bin/sh\necho 'No module named numpy' >&2\nexit 1\n")
    os.chmod(broken, 0o755)
    proc = subprocess.run([sys.executable, "-m", "autograder", "1.1", "--run-as", user.pw_name, "--python", broken],
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert f"user {user.pw_name} cannot run {broken} with numpy (No module named numpy)" in proc.stderr


@pytest.mark.parametrize("closed", ["a folder above", "the package", "its __init__.py"])
def test_a_submission_the_sandbox_user_cannot_read_is_a_usage_error(sandbox_user, checkout, closed):
    """Student code runs as the user: a submission it cannot read would score 0 with 'No module named mytorch'
    in every part. The grade refuses it first and names what the user cannot read."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "unreadable-"))
    sub = make_submission(os.path.join(folder, "above", "alice"))
    shut = {"a folder above": (os.path.join(folder, "above"), 0o700),
            "the package": (os.path.join(sub, "mytorch"), 0o700),
            "its __init__.py": (os.path.join(sub, "mytorch", "__init__.py"), 0o600)}[closed]
    command = [sys.executable, "-m", "autograder", "1.1", "--submission", sub, "--run-as", user.pw_name, "--python",
               python]
    env = dict(os.environ, PYTHONPATH="")
    os.chmod(*shut)
    proc = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert f"user {user.pw_name} cannot read" in said and "give --submission a folder it may read" in said, said
    assert max(len(line) for line in proc.stderr.splitlines()) <= 80
    os.chmod(shut[0], 0o755 if os.path.isdir(shut[0]) else 0o644)
    proc = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "4.00/4" in proc.stdout, proc.stdout + proc.stderr


REACH_ZYGOTE = """import ctypes, errno, signal
libc = ctypes.CDLL(None, use_errno=True)
tried, found = [], 0
for pid in [int(p) for p in os.listdir('/proc') if p.isdigit()]:
    try:                                                    # the zygote, not its children (forks of it) of our uid
        if b'autograder/sandbox/zygote.py' not in open(f'/proc/{pid}/cmdline', 'rb').read() or os.stat(
                f'/proc/{pid}').st_uid == os.getuid():
            continue
    except OSError:
        continue
    found += 1
    attached = libc.ptrace(16, pid, 0, 0)                  # PTRACE_ATTACH
    tried.append(f'ptrace:{errno.errorcode.get(ctypes.get_errno(), "0") if attached else "ATTACHED"}')
    try:
        with open(f'/proc/{pid}/mem', 'rb') as f:
            tried.append('mem:READ')
    except OSError as error:
        tried.append(f'mem:{errno.errorcode[error.errno]}')
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(pid, sig)
            tried.append('kill:SENT')
        except OSError as error:
            tried.append(f'kill:{errno.errorcode[error.errno]}')
sockets = []
for fd in os.listdir('/proc/self/fd'):
    try:
        sockets += [fd] if os.readlink('/proc/self/fd/' + fd).startswith('socket:') else []
    except OSError:
        pass
raise ValueError(f"zygote reached: {found} processes, {' '.join(sorted(set(tried)))}; sockets: {len(sockets)}")"""


@pytest.mark.parametrize("namespace", ["1", "0"], ids=["pid-namespace", "no-pid-namespace"])
def test_a_child_cannot_reach_its_zygote(sandbox_user, checkout, tmp_path, namespace):
    """As the sandbox user, a part's child with the machine's /proc (where it cannot have one of its own, see
    the next test) finds its zygote there (a process of another user whose command is the zygote's) but
    cannot trace it, open its memory or signal it, and holds no end of its control socket; the grade
    completes with no worker replaced."""
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "reach-"))
    sub = make_submission(os.path.join(root, "sub"), kit.attack_edits(REACH_ZYGOTE, root, "", ""))
    out = os.path.join(root, "results.json")
    proc = subprocess.run([sys.executable, "-m", "autograder", "1.1", "2.1", "--submission", sub, "--json", out,
                           "--run-as", user.pw_name, "--python", python], cwd=checkout,
                          env=dict(os.environ, PYTHONPATH="", MYTORCH_GRADER_PID_NAMESPACE=namespace,
                                   MYTORCH_GRADER_PROC_MOUNT="0"),       # the zygote in sight: the layer beneath
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "grading worker" not in proc.stderr
    with open(out) as f:
        tests = check_gradescope(json.load(f))
    assert tests["1.1"]["score"] == spec.PARTS_BY_NUMBER["1.1"].points
    said = tests["2.1"]["output"]
    assert re.search(r"zygote reached: [1-9]\d* processes, ", said) and "sockets: 0" in said, said
    assert "ATTACHED" not in said and "READ" not in said and "SENT" not in said, said
    assert not kit.processes_mentioning("/nonexistent", uid=user.pw_uid)
    shutil.rmtree(root, ignore_errors=True)


# what a part's child sees of the machine's processes: those of another uid, and any command line of the grader's
SEE_PROCESSES = """mine, others, grader = 0, 0, 0
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        uid = os.stat(f'/proc/{pid}').st_uid
        command = open(f'/proc/{pid}/cmdline', 'rb').read()
    except OSError:
        continue
    mine += uid == os.getuid()
    others += uid != os.getuid()
    grader += b'-m\\0autograder' in command or b'--fresh-seed' in command
pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]
raise ValueError(f"processes seen: {mine} of mine, {others} of others, {grader} of the grader's; "
                 f"highest pid {max(pids)}")"""


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["zygote", "spawned"])
@pytest.mark.parametrize("namespace", ["1", "0"], ids=["pid-namespace", "no-pid-namespace"])
def test_a_child_sees_its_own_processes_alone(sandbox_user, checkout, zygote, namespace):
    """A child run as the sandbox user has a /proc of its own (its PID namespace's, and hidepid): no process of
    another user, so no command line of the grader's (which names --fresh-seed SEED when given so), whether
    its child was forked by the zygote or spawned, in a PID namespace of its own or not."""
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "proc-"))
    sub = make_submission(os.path.join(root, "sub"), kit.attack_edits(SEE_PROCESSES, root, "", ""))
    out = os.path.join(root, "results.json")
    proc = subprocess.run([sys.executable, "-m", "autograder", "2.1", "--submission", sub, "--json", out,
                           "--run-as", user.pw_name, "--python", python, "--fresh-seed", "4242", "--solution",
                           checkout],
                          cwd=checkout, env=dict(os.environ, PYTHONPATH="", MYTORCH_GRADER_PID_NAMESPACE=namespace,
                                                 MYTORCH_GRADER_ZYGOTE=zygote),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        said = check_gradescope(json.load(f))["2.1"]["output"]
    seen = re.search(r"processes seen: [1-9]\d* of mine, 0 of others, 0 of the grader's; highest pid (\d+)", said)
    assert seen, said
    if namespace == "1":                                  # a proc of its own PID namespace: a handful of pids
        assert int(seen.group(1)) < 100, said
    shutil.rmtree(root, ignore_errors=True)


def test_a_child_in_batch_cannot_reach_its_zygote_or_the_template(sandbox_user):
    """In batch, the part's child with the machine's /proc finds two zygote processes of root (the batch's
    template and its own zygote, a fork of it) and can trace, read or signal neither; every part is graded,
    no worker replaced."""
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "reach-batch-"))
    subs = os.path.join(root, "subs")
    make_submission(os.path.join(subs, "alice"), kit.attack_edits(REACH_ZYGOTE, root, "", ""))
    proc = _batch(subs, user.pw_name, python, world_readable_dir(os.path.join(root, "tmp-")),
                  extra_env={"MYTORCH_GRADER_PROC_MOUNT": "0"})
    assert proc.returncode == 0, proc.stderr
    assert "grading worker" not in proc.stderr
    with open(os.path.join(report_of(subs), "feedback", "alice.json")) as f:
        tests = check_gradescope(json.load(f))
    assert tests["1.1"]["score"] == tests["1.1"]["max_score"]
    said = tests["2.1"]["output"]
    seen = re.search(r"zygote reached: (\d+) processes, ", said)      # any other grader's on the machine too
    assert seen and int(seen.group(1)) >= 2 and "sockets: 0" in said, said
    assert "ATTACHED" not in said and "READ" not in said and "SENT" not in said, said
    assert not kit.processes_mentioning("/nonexistent", uid=user.pw_uid)
    shutil.rmtree(root, ignore_errors=True)


def test_clear_user_removes_what_it_left_in_every_folder_any_user_may_write(sandbox_user):
    """In every shared folder of the machine (/tmp, /var/tmp, /dev/shm, /run/lock, any other folder below /,
    /var, /run or /dev that any user may write) and in root's shared folders inside them (like /tmp/.X11-unix),
    what the sandbox user owns is gone after ``clear_user``, and what others own is kept."""
    from autograder.sandbox import cleanup
    make_user, _, _ = sandbox_user
    user = make_user()
    tops = cleanup.shared_folders()
    for known in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        if os.path.isdir(known) and os.stat(known).st_mode & 0o002:
            assert os.path.realpath(known) in tops, (known, tops)
    planted, kept, nested = [], [], []
    for top in tops:
        # root's, and anyone's to write in (so not named mytorch-*, which an attack run beside it fills with
        # folders thousands deep)
        inner = tempfile.mkdtemp(dir=top, prefix="clear-user-shared-")
        os.chmod(inner, 0o1777)
        nested.append(inner)
        for folder in (top, inner):
            mine = os.path.join(folder, f"left-{user.pw_name}")
            os.makedirs(os.path.join(mine, "deeper"))
            os.chown(mine, user.pw_uid, user.pw_gid)
            planted.append(mine)
            theirs = os.path.join(folder, f"kept-{user.pw_name}")
            open(theirs, "w").close()
            kept.append(theirs)
    try:
        cleanup.clear_user(user)
        assert not [p for p in planted if os.path.lexists(p)]
        assert all(os.path.exists(p) for p in kept)
    finally:
        for path in kept + planted:
            with contextlib.suppress(OSError):
                os.remove(path) if os.path.isfile(path) else shutil.rmtree(path)
        for inner in nested:
            tree.remove(inner)                              # however deep what was written there


# every work folder it can find and its own, /tmp, and IPC: what two submissions run as one user could do
NEIGHBOUR = (
    "import ctypes, glob\nlibc = ctypes.CDLL(None)\nlibc.shmget(0, 1 << 20, 0o1600)\nlibc.semget(0, 2, 0o1600)\n"
    "open(f'/dev/shm/mytorch-left-{os.getpid()}', 'wb').write(b'x')\n"
    "def chain(top):\n    try:\n        fd = os.open(top, os.O_RDONLY)\n        for _ in range(1500):\n"
    "            os.mkdir('d', dir_fd=fd)\n            child = os.open('d', os.O_RDONLY, dir_fd=fd)\n"
    "            os.close(fd)\n            fd = child\n        os.close(fd)\n    except OSError:\n        pass\n"
    "tops = glob.glob(os.path.dirname(os.getcwd()) + '/mytorch-*') + glob.glob('/tmp/mytorch-*')\n"
    "tops += glob.glob(os.path.dirname(os.getcwd()) + '/mytorch-batch-*/*')\n"
    "for top in tops + [os.getcwd()]:\n    chain(top)\n"
    "mine = f'/tmp/mytorch-left-{os.getpid()}'\nos.makedirs(mine, exist_ok=True)\nchain(mine)\n"
    "raise ValueError('broken')")


def _batch(subs, run_as, python, temp, jobs=2, extra_env=None, extra=()):
    """A batch as root, run by a copy of the grader beside ``subs`` whose course is sections 1 and 2 (the
    solution, for a fresh seed, is the checkout's)."""
    grader = make_grader_copy(world_readable_dir(os.path.join(os.path.dirname(subs), "grader-")), TWO_SECTIONS)
    env = dict(os.environ, PYTHONPATH="", TMPDIR=temp, **(extra_env or {}))
    return subprocess.run([sys.executable, "-m", "autograder", "batch", subs, "--run-as", run_as, "--python", python,
                           "--jobs", str(jobs), "--solution", REPO, *extra], cwd=grader, env=env, capture_output=True,
                          text=True, timeout=900)


def test_a_report_folder_the_sandbox_user_could_change_is_refused_on_stored_cases_too(sandbox_user):
    """The report is written as root: a folder of the user's is refused whatever the seed (once, the check ran
    only with --fresh-seed), as any report folder of another user's is, before a sandbox user is made."""
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "report-"))
    subs = os.path.join(root, "subs")
    make_submission(os.path.join(subs, "alice"))
    out = os.path.join(root, "theirs")
    os.mkdir(out)
    os.chown(out, user.pw_uid, user.pw_gid)
    proc = _batch(subs, user.pw_name, python, world_readable_dir(os.path.join(root, "tmp-")), extra=["--out", out])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{out} is not yours alone (theirs belongs to {user.pw_name}, not to you)" in " ".join(proc.stderr.split())


def _scores(subs):
    """{submission: total} from the batch's scores table."""
    with open(os.path.join(report_of(subs), "scores.csv"), newline="") as f:
        return {row["submission"]: float(row["total"]) for row in csv.DictReader(f)}


def test_batch_pool_keeps_concurrent_submissions_apart(sandbox_user):
    """Two users, two jobs, fresh cases: the attacker fills every folder it can reach with 1500-deep chains and
    leaves IPC objects (with no IPC namespace, so their removal is what is tested); the honest ones score 100,
    one folder too deep scores 0 with the reason, and nothing of either user is left."""
    make_user, python, home = sandbox_user
    users = [make_user(), make_user()]
    root = world_readable_dir(os.path.join(home, "pool-"))
    temp = world_readable_dir(os.path.join(root, "tmp-"))
    subs = os.path.join(root, "subs")
    for name in ("alice", "carol", "erin"):
        make_submission(os.path.join(subs, name))
    make_submission(os.path.join(subs, "mallory"), kit.attack_edits(NEIGHBOUR, root, "", ""))
    deep = make_submission(os.path.join(subs, "dave"))
    os.makedirs(os.path.join(deep, "mytorch", *["d"] * 40))
    proc = _batch(subs, ",".join(u.pw_name for u in users), python, temp,
                  extra_env={"MYTORCH_GRADER_IPC_NAMESPACE": "0"}, extra=["--fresh-seed", "11"])
    assert proc.returncode == 0, proc.stderr
    assert "graded 5/5 submissions" in proc.stderr and "Traceback" not in proc.stderr
    assert "stored cases" not in proc.stderr                        # new cases: no note that answers could be replayed
    scores = _scores(subs)
    assert scores["alice"] == scores["carol"] == scores["erin"] == 100
    assert scores["mallory"] < 100 and scores["dave"] == 0
    with open(os.path.join(report_of(subs), "scores.csv")) as f:
        assert "dave" in f.read()
    assert os.listdir(temp) == []
    for user in users:
        assert not left_by(user.pw_uid), left_by(user.pw_uid)
        assert not kit.processes_mentioning("/nonexistent", uid=user.pw_uid)


def test_batch_makes_its_users_and_deletes_them(sandbox_user):
    """With the system's own useradd, userdel and groupdel, whatever the grader's PATH says (it runs them as
    root after student code ran; a folder on PATH may be one someone else can write), and nothing of the
    grader's environment reaches a process it starts (the Python probes run as the sandbox user)."""
    _, python, home = sandbox_user
    root = world_readable_dir(os.path.join(home, "made-"))
    subs = os.path.join(root, "subs")
    make_submission(os.path.join(subs, "alice"))
    decoys = world_readable_dir(os.path.join(root, "bin-"))
    seen = world_readable_dir(os.path.join(root, "seen-"))
    os.chmod(seen, 0o1777)
    for name in ("useradd", "userdel", "groupdel", "unshare", "find", "python3"):
        with open(os.path.join(decoys, name), "w") as f:
            f.write(f"#!/bin/sh\necho {name} >> {seen}/decoys\nexit 1\n")
        os.chmod(os.path.join(decoys, name), 0o755)
    wrapper = os.path.join(decoys, "python")                  # records the environment each Python start gets
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nenv > "$(mktemp {seen}/env-XXXXXX)"\nexec {python} "$@"\n')
    os.chmod(wrapper, 0o755)
    prefix = "mtp" + secrets.token_hex(3)
    proc = _batch(subs, prefix + "*", wrapper, world_readable_dir(os.path.join(root, "tmp-")),
                  extra_env={"PATH": decoys + ":" + os.environ["PATH"], "MYTORCH_TEST_SECRET": "hush"})
    assert proc.returncode == 0, proc.stderr
    assert _scores(subs)["alice"] == 100
    assert not [u.pw_name for u in pwd.getpwall() if u.pw_name.startswith(prefix)]
    assert not os.path.exists(os.path.join(seen, "decoys"))
    environments = [open(os.path.join(seen, name)).read() for name in os.listdir(seen)]
    assert len(environments) >= 3                      # the probes as the user, the template, the solution
    assert not [e for e in environments if "hush" in e or decoys in e]


def test_a_python_the_sandbox_user_could_change_is_refused(sandbox_user):
    """A .pth file the user may write would run in every later child, and as root in --fresh-seed's solution."""
    make_user, python, home = sandbox_user
    user = make_user()
    site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                          text=True).stdout.strip()
    planted = os.path.join(site, f"planted-{user.pw_name}.pth")
    with open(planted, "w") as f:
        f.write("\n")
    os.chown(planted, user.pw_uid, user.pw_gid)
    try:
        proc = subprocess.run([sys.executable, "-m", "autograder", "1.1", "--run-as", user.pw_name, "--python",
                               python], cwd=REPO, env=dict(os.environ, PYTHONPATH=""), capture_output=True,
                              text=True, timeout=300)
    finally:
        os.remove(planted)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"user {user.pw_name} could change {planted}" in proc.stderr
    subs = os.path.join(world_readable_dir(os.path.join(home, "refused-")), "subs")
    make_submission(os.path.join(subs, "alice"))
    proc = _batch(subs, user.pw_name, python, tempfile.gettempdir())
    assert proc.returncode == 0 and _scores(subs)["alice"] == 100      # the same Python, once it is root's alone


def _logging_wrapper(folder, python, prefix=""):
    """A root-owned ``--python`` in ``folder`` that runs ``prefix python "$@"`` and appends the uid it runs as to
    a log only root may write (the log's path: it exists once root has run it)."""
    wrapper, log = os.path.join(folder, "python"), os.path.join(folder, "started")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\necho "$(id -u)" >> {log} 2>/dev/null\n{prefix}exec {python} "$@"\n')
    os.chmod(wrapper, 0o755)
    return wrapper, log


@pytest.mark.parametrize("mode", ["grade", "grade, zygotes off", "batch"])
def test_a_grader_the_sandbox_user_cannot_read_is_refused_before_any_part_runs(sandbox_user, mode):
    """A grader installed in a private folder (a 0700 home, as Debian 12 makes them): a part's child started as
    the sandbox user cannot open the worker.py it is started with (nor a module it loads by path), and every
    part would tell the student that their code exited with code 2. The grade and the batch refuse first,
    naming the file and the fix, with zygotes on too (a failed zygote leaves the parts to a Python started
    per part as the user); once the user may read it, the same grader grades."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "private-grader-"))
    private = os.path.join(folder, "home")
    os.mkdir(private, 0o700)
    grader = os.path.realpath(make_grader_copy(os.path.join(private, "grader"), TWO_SECTIONS))
    subs = os.path.join(folder, "subs")
    make_submission(os.path.join(subs, "alice"))
    out = os.path.join(folder, "results.json")
    command = [sys.executable, "-m", "autograder"] + (["batch", subs, "--jobs", "1"] if mode == "batch" else
                                                      ["1.1", "--submission", os.path.join(subs, "alice"), "--json",
                                                       out])
    command += ["--run-as", user.pw_name, "--python", python]
    env = dict(os.environ, PYTHONPATH="", MYTORCH_GRADER_ZYGOTE="0" if mode == "grade, zygotes off" else "1")

    def refused(path, why):
        proc = subprocess.run(command, cwd=grader, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        said = "".join(proc.stderr.split())                # wrapped at 80 columns, a long path too
        expected = (f"user {user.pw_name} cannot read {path}, which each part's child runs as that user: install "
                    f"the grader where {user.pw_name} can read it, e.g. a folder every user may search; {why}")
        assert "".join(expected.split()) in said, proc.stderr
        assert max(len(line) for line in proc.stderr.splitlines()) <= 80
        assert "graded" not in proc.stdout + proc.stderr and not os.path.exists(out)
    refused(os.path.join(grader, "autograder", "sandbox", "worker.py"),
            f"the checkout in {grader} is private ({user.pw_name} may not enter {os.path.realpath(private)})")
    os.chmod(private, 0o755)
    driver = os.path.join(grader, "autograder", "parts", "driver.py")         # loaded by path, in the child
    os.chmod(driver, 0o600)
    refused(driver, f"its mode or an ACL keeps {user.pw_name} from it")
    os.chmod(driver, 0o644)
    proc = subprocess.run(command, cwd=grader, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if mode == "batch":
        assert _scores(subs)["alice"] == 100
    else:
        with open(out) as f:
            part = check_gradescope(json.load(f))["1.1"]
        assert part["score"] == part["max_score"], part["output"]


def test_grader_files_the_sandbox_user_could_change_are_refused_before_the_python_runs_as_root(sandbox_user):
    """The zygote of the --python loads grader modules that the grader itself has not imported (the per-part
    entry, the tracer) as root: a grader whose such file the user could change is refused before it starts."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "grader-"))
    grader = make_grader_copy(os.path.join(folder, "copy"))
    worker = os.path.join(grader, "autograder", "sandbox", "worker.py")
    os.chown(worker, user.pw_uid, user.pw_gid)
    wrapper, log = _logging_wrapper(folder, python)
    command = [sys.executable, "-m", "autograder", "1.1", "--run-as", user.pw_name, "--python", wrapper,
               "--submission", make_submission(os.path.join(folder, "alice"))]
    proc = subprocess.run(command, cwd=grader, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert not os.path.exists(log), "the --python ran as root before it was refused"
    assert f"user {user.pw_name} could change the grader's files" in proc.stderr and worker in proc.stderr
    os.chown(worker, 0, 0)
    proc = subprocess.run(command, cwd=grader, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "1.1" in proc.stdout, proc.stdout + proc.stderr
    with open(log) as f:
        assert "0" in f.read().split()


@pytest.mark.parametrize("command", [["1.1"], ["1.1", "--python", None], ["batch", None]],
                         ids=["grade, its own Python", "grade, --python", "batch"])
def test_a_grader_module_the_sandbox_user_could_change_never_runs_as_root(sandbox_user, command):
    """A module of the grader's own the user could change (here report.py, which the grader imports before its
    checks of its own Python end) is refused as it is imported, before it runs: a line planted in it that
    records root never runs, in a grade (and its zygote) and in a batch."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "planted-"))
    grader = make_grader_copy(os.path.join(folder, "copy"))
    marker = os.path.join(tempfile.mkdtemp(), "ran-as-root")                 # a folder of root's alone
    planted = os.path.join(grader, "autograder", "diagnosis", "report.py")
    with open(planted, "a") as f:
        f.write(f"\nimport os as _os\nif _os.geteuid() == 0:\n    open({marker!r}, 'w').close()\n")
    os.chown(planted, user.pw_uid, user.pw_gid)
    subs = os.path.join(folder, "subs")
    sub = make_submission(os.path.join(subs, "alice"))
    args = [python if a is None and "--python" in command else subs if a is None else a for a in command]
    args += ["--run-as", user.pw_name] + (["--submission", sub] if command[0] != "batch" else [])
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=grader,
                          env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"user {user.pw_name} could change {planted}, which the grader runs or may import as root" in \
        proc.stderr
    assert not os.path.exists(marker), "the planted line ran as root"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_each_module_imported_as_root_is_looked_at_before_it_runs(tmp_path, monkeypatch, capsys):
    """``preflight._CheckedImports``: a module file, its bytecode, its package's folder or a library its wheel
    ships beside it (``.libs``) that a sandbox user owns or may write is refused before the module runs; the
    same module, root's alone, is found as usual."""
    from autograder import preflight
    who = [("user mallory", 64001, {64001})]
    site = tmp_path / "site"
    (site / "wheel" / "__pycache__").mkdir(parents=True)
    (site / "wheel.libs").mkdir()
    (site / "wheel.libs" / "libblas.so").write_text("")
    (site / "wheel" / "__init__.py").write_text("import sys\nsys.ran = True\n")
    (site / "plain.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    hook = preflight._CheckedImports(who)
    assert hook.find_spec("wheel").origin == str(site / "wheel" / "__init__.py")
    assert hook.find_spec("plain") is not None and not hasattr(sys, "ran")
    for planted in (site / "plain.py", site / "wheel" / "__init__.py", site / "wheel", site / "wheel.libs",
                    site / "wheel.libs" / "libblas.so"):
        os.chown(planted, 64001, 64001)
        with pytest.raises(SystemExit) as stop:
            preflight._CheckedImports(who).find_spec("plain" if planted.name == "plain.py" else "wheel")
        assert stop.value.code == 2
        assert f"user mallory could change {planted}, which the grader runs or may import as root" in \
            capsys.readouterr().err
        os.chown(planted, 0, 0)
    os.chmod(site / "wheel" / "__init__.py", 0o666)                          # anyone may write it
    with pytest.raises(SystemExit):
        preflight._CheckedImports(who).find_spec("wheel")
    assert not hasattr(sys, "ran")
    os.chmod(site / "wheel" / "__init__.py", 0o644)
    import struct  # an ACL entry for the user: user:64001:rw-, mask::rw-
    acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *entry) for entry in
                                          [(1, 6, 0), (2, 6, 64001), (4, 4, 0), (0x10, 6, 0), (0x20, 4, 0)])
    try:
        os.setxattr(site / "plain.py", "system.posix_acl_access", acl)
    except OSError:
        pass                                           # no POSIX ACLs on this file system
    else:
        with pytest.raises(SystemExit):
            preflight._CheckedImports(who).find_spec("plain")
        assert f"user mallory could change {site / 'plain.py'}," in capsys.readouterr().err
        os.removexattr(site / "plain.py", "system.posix_acl_access")
        os.chmod(site / "plain.py", 0o644)
    (tmp_path / "theirs").mkdir()                                            # a link to a file in their folder
    (tmp_path / "theirs" / "real.py").write_text("")
    os.chown(tmp_path / "theirs", 64001, 64001)
    (site / "linked.py").symlink_to(tmp_path / "theirs" / "real.py")
    with pytest.raises(SystemExit):
        preflight._CheckedImports(who).find_spec("linked")
    assert f"user mallory could change {tmp_path / 'theirs'}," in capsys.readouterr().err
    archive = tmp_path / "lib.zip"                                           # found by zipimport: the archive
    with zipfile.ZipFile(archive, "w") as f:
        f.writestr("zipped.py", "X = 1\n")
    monkeypatch.syspath_prepend(str(archive))
    assert preflight._CheckedImports(who).find_spec("zipped") is not None
    os.chown(archive, 64001, 64001)
    with pytest.raises(SystemExit):
        preflight._CheckedImports(who).find_spec("zipped")
    assert f"user mallory could change {archive}," in capsys.readouterr().err
    (site / "wheel.libs" / "gone.so").symlink_to(tmp_path / "nowhere")       # a dangling link: its own owner
    assert preflight._CheckedImports(who).find_spec("wheel") is not None

    def unreadable(path):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(os, "listdir", unreadable)                           # what cannot be checked is not run
    with pytest.raises(SystemExit) as stop:
        preflight._CheckedImports(who).find_spec("wheel")
    assert stop.value.code == 2 and "could not be checked before the grader imports it as root" in \
        capsys.readouterr().err


def test_a_library_the_python_loads_from_outside_its_tree_that_the_sandbox_user_could_change_is_refused(
        sandbox_user, checkout):
    """The zygote imports NumPy as root: every file mapped executable then counts, also one from outside the
    Python's own tree (here a copy of a system library that a root-owned --python wrapper preloads, in a
    folder of the user's)."""
    import glob
    make_user, python, home = sandbox_user
    user = make_user()
    system = sorted(glob.glob("/lib/*-linux-gnu/libutil.so.1") + glob.glob("/usr/lib/*-linux-gnu/libutil.so.1"))
    if not system:
        pytest.skip("no libutil.so.1 to preload")
    folder = world_readable_dir(os.path.join(home, "preload-"))
    theirs = os.path.join(folder, "theirs")
    os.mkdir(theirs)
    library = os.path.join(theirs, "libutil.so.1")
    shutil.copy(system[0], library)
    os.chmod(library, 0o755)
    os.chown(library, user.pw_uid, user.pw_gid)
    wrapper, log = _logging_wrapper(folder, python, f"LD_PRELOAD={library} ")
    command = [sys.executable, "-m", "autograder", "1.1", "--run-as", user.pw_name, "--python", wrapper]
    for extra in ([], ["--fresh-seed", "5"]):             # fresh cases: the solution's child runs it as root
        proc = subprocess.run(command + extra, cwd=checkout, env=dict(os.environ, PYTHONPATH=""), capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"user {user.pw_name} could change {library}, which a Python of this run" in proc.stderr
    assert not os.path.exists(log), "the --python ran as root before it was refused"
    os.chown(library, 0, 0)
    proc = subprocess.run(command, cwd=checkout, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "1.1" in proc.stdout, proc.stdout + proc.stderr
    with open(log) as f:
        assert "0" in f.read().split()                    # the log would have shown root: once it may run so


def test_the_graders_own_python_the_sandbox_user_could_change_is_refused_before_student_code_runs(sandbox_user,
                                                                                                  checkout):
    """The grader's own Python is checked while the grade starts (its zygote, its references), but the grade
    stops with the usage error before anything runs as the sandbox user: the student's code never starts."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "own-"))
    ran = os.path.join(folder, "ran.txt")                 # root's, so not cleared with what the user left
    with open(ran, "w"):
        os.chmod(ran, 0o666)
    sub = make_submission(os.path.join(folder, "alice"),
                          [("__init__.py", '"""mytorch:', f'open({ran!r}, "a").write("ran")\n"""mytorch:')])
    command = [sys.executable, "-m", "autograder", "1.1", "--run-as", user.pw_name, "--python", python,
               "--submission", sub]
    planted = os.path.join(sysconfig.get_paths()["purelib"], f"planted-{user.pw_name}.pth")
    with open(planted, "w") as f:
        f.write("\n")
    os.chown(planted, user.pw_uid, user.pw_gid)
    try:
        proc = subprocess.run(command, cwd=checkout, env=dict(os.environ, PYTHONPATH=""), capture_output=True,
                              text=True, timeout=300)
    finally:
        os.remove(planted)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"user {user.pw_name} could change {planted}" in proc.stderr
    assert os.path.getsize(ran) == 0
    proc = subprocess.run(command, cwd=checkout, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and os.path.getsize(ran) > 0, proc.stdout + proc.stderr    # it runs once it may


def test_a_grader_started_in_a_folder_the_sandbox_user_may_write_is_refused(sandbox_user, checkout):
    """``python -m`` puts the current folder first on the grader's sys.path: a module a submission added there
    (json.py, say) would run as root the next time the grader imported that name."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "cwd-"))
    os.chmod(folder, 0o1777)                              # like /tmp
    command = [sys.executable, "-m", "autograder", "1.1", "--run-as", user.pw_name, "--python", python,
               "--submission", checkout]
    proc = subprocess.run(command, cwd=folder, env=dict(os.environ, PYTHONPATH=checkout), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"user {user.pw_name} could change {folder}, which the grader runs or may import as root" in proc.stderr
    os.chmod(folder, 0o755)
    proc = subprocess.run(command, cwd=folder, env=dict(os.environ, PYTHONPATH=checkout), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "1.1" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("variable", ["LD_LIBRARY_PATH", "PYTHONPYCACHEPREFIX"])
def test_a_library_or_bytecode_folder_the_sandbox_user_owns_is_refused_before_anything_is_imported(sandbox_user,
                                                                                                 variable):
    """The dynamic loader looks in LD_LIBRARY_PATH's folders first for every library an import loads (a planted
    libbz2 ran as root when tempfile imported bz2), and Python reads bytecode from PYTHONPYCACHEPREFIX: a folder
    of the user's named there is refused before the grader imports anything more."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "loaded-"))
    os.chown(folder, user.pw_uid, user.pw_gid)
    proc = subprocess.run([sys.executable, "-m", "autograder", "1.1", "--run-as", user.pw_name, "--python", python,
                           "--submission", REPO], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH="", **{variable: folder}))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"user {user.pw_name} could change {folder}, which the grader runs or may import as root" in proc.stderr
    assert "LD_LIBRARY_PATH or PYTHONPYCACHEPREFIX" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_a_folder_an_unreadable_pth_file_names_is_checked_as_root_reads_it(tmp_path, monkeypatch):
    """``site`` skips a .pth file it cannot read: the user's probe of a --python never sees the folder a
    root-only .pth names, while the zygote, as root, adds it. The .pth files are read as root too."""
    import pwd
    user = pwd.struct_passwd(("mytorch-nobody-a", "x", 64001, 64001, "", "/", "/bin/false"))
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("include-system-site-packages = false\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").write_text("")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, user.pw_uid, user.pw_gid)
    (site / "extra.pth").write_text(f"# a comment\nimport os\n{theirs}\nrelative\n")
    os.chmod(site / "extra.pth", 0o600)
    assert interpreter.pth_paths([str(site)]) == [str(theirs), str(site / "relative")]
    monkeypatch.setattr(interpreter, "reported_paths", lambda python, user: [str(site)])   # what the user sees
    assert interpreter.exposed([str(venv / "bin" / "python")], [user]) == [(user, str(theirs))]


@pytest.mark.parametrize("mode", ["grade", "batch", "PYTHONPATH"])
def test_a_module_planted_in_the_current_folder_never_runs_as_root(sandbox_user, mode):
    """Modules the grader imports before its checks (argparse first) are looked for in the current folder under
    ``python -m`` (and in PYTHONPATH's folders): one planted there by a sandbox user must not run, as root, even
    once before the refusal."""
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "planted-"))
    os.chmod(folder, 0o1777)                              # like /tmp
    for name in ("argparse", "json", "concurrent", "subprocess", "tempfile"):
        with open(os.path.join(folder, f"{name}.py"), "w") as f:
            f.write(f"open({folder!r} + '/ran-{name}-as-%d' % __import__('os').geteuid(), 'w').close()\n")
    command = ([sys.executable, "-m", "autograder", "1.1", "--submission", REPO, "--run-as", user.pw_name]
               if mode == "grade" else [sys.executable, "-m", "autograder", "batch", home, "--run-as", "mtp*"])
    where = dict(cwd=REPO, env=dict(os.environ, PYTHONPATH=folder)) if mode == "PYTHONPATH" else \
        dict(cwd=folder, env=dict(os.environ, PYTHONPATH=REPO))
    proc = subprocess.run(command + ["--python", python], capture_output=True, text=True, timeout=300, **where)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"could change {folder}, which the grader runs or may import as root" in proc.stderr
    if mode != "PYTHONPATH":      # Python's own start-up (site, .pth files) imports from PYTHONPATH before any
        assert not [n for n in os.listdir(folder) if n.startswith("ran-")]     # grader code: python -E is the fix


def test_a_solution_the_sandbox_user_could_change_is_refused(sandbox_user, checkout, tmp_path):
    """The solution's child runs as root under --fresh-seed: a file of it the user may write is refused."""
    make_user, python, home = sandbox_user
    user = make_user()
    solution = make_submission(tmp_path / "solution")
    os.chown(os.path.join(solution, "mytorch", "functional.py"), user.pw_uid, user.pw_gid)
    subs = os.path.join(world_readable_dir(os.path.join(home, "solution-")), "subs")
    make_submission(os.path.join(subs, "alice"))
    for command in (["1.1", "--submission", os.path.join(subs, "alice")], ["batch", subs]):
        proc = subprocess.run([sys.executable, "-m", "autograder", *command, "--run-as", user.pw_name, "--python",
                               python, "--fresh-seed", "3", "--solution", solution], cwd=checkout,
                              env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"user {user.pw_name} could change the solution, which runs as root" in proc.stderr
        assert "Traceback" not in proc.stderr          # a grade's zygote, started by then, is ended on the way out


# run as the sandbox user before a grade: says so of every other process of that user it sees, until killed
WATCHER = """
import os, sys, time
me, seen = os.getuid(), {os.getpid()}
print('watching', flush=True)
for _ in range(60000):
    for name in os.listdir('/proc'):
        if name.isdigit() and int(name) not in seen:
            try:
                if os.stat('/proc/' + name).st_uid != me:
                    continue
                with open('/proc/%s/cmdline' % name, 'rb') as f:
                    command = f.read(200).replace(b'\\0', b' ').decode(errors='replace')
            except OSError:
                continue
            seen.add(int(name))
            print('ran as the user while I watched:', command, flush=True)
    time.sleep(0.002)
"""


@pytest.mark.parametrize("mode", ["grade", "batch"])
def test_a_process_the_sandbox_user_left_running_is_gone_before_anything_runs_as_it(sandbox_user, mode):
    """A process of the user from before the run (a run killed before it could clear the user, or anyone's) could
    trace the probe of the Python, forge what it reports, or tamper with the children: it is killed before the
    first of them starts, in a grade (whose probe starts before the grader imports NumPy) and in batch."""
    make_user, python, home = sandbox_user
    user = make_user()
    subs = os.path.join(world_readable_dir(os.path.join(home, "left-")), "subs")
    make_submission(os.path.join(subs, "alice"))
    read, write = os.pipe()
    watcher = subprocess.Popen([python, "-I", "-c", WATCHER], stdout=write, stderr=subprocess.DEVNULL, cwd="/",
                               preexec_fn=lambda: (os.setgroups([]), os.setgid(user.pw_gid), os.setuid(user.pw_uid)))
    os.close(write)
    try:
        with os.fdopen(read, "r") as said:
            assert said.readline() == "watching\n"
            command = (["--submission", os.path.join(subs, "alice"), "1.1", "2.1"] if mode == "grade"
                       else ["batch", subs])
            grader = make_grader_copy(world_readable_dir(os.path.join(home, "grader-")), TWO_SECTIONS)
            proc = subprocess.run([sys.executable, "-m", "autograder", *command, "--run-as", user.pw_name, "--python",
                                   python], cwd=grader, env=dict(os.environ, PYTHONPATH=""), capture_output=True,
                                  text=True, timeout=300)
            assert watcher.wait(timeout=10) == -9
            seen = said.read()
    finally:
        watcher.kill()
        watcher.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert seen == "", seen
    if mode == "grade":
        assert "Total" in proc.stdout and "100.00/100" not in proc.stdout, proc.stdout    # two parts graded
    else:
        assert _scores(subs)["alice"] == 100


# a submission that reads what it can of the places it is given, then runs the instructor's solution if it found
# it (a submission with no code of its own would score full marks, even on --fresh-seed's new cases)
SNOOP = '''\
import os
reached = []
for place in {places!r}:
    try:
        names = sorted(os.listdir(place))
        reached.append(place)
        for name in names:
            if os.path.isfile(os.path.join(place, name)):
                open(os.path.join(place, name), "rb").read(64)
                reached.append(os.path.join(place, name))
    except OSError:
        pass
for name in {files!r}:
    try:
        if open(name, "rb").read(64):
            reached.append(name)
    except OSError:
        pass
solution = {solution!r}
if os.path.isfile(os.path.join(solution, "__init__.py")):
    __path__ = [solution]
    exec(compile(open(os.path.join(solution, "__init__.py")).read(), os.path.join(solution, "__init__.py"), "exec"))
else:
    raise ImportError(f"reached: {{reached}}")
'''


def _instructor_checkout(root, course_file=None):
    """A grader that holds its solution, as an instructor's clone does (world-readable, with its history);
    ``course_file``: the text of its course.toml (default: none, every section)."""
    course = make_grader_copy(os.path.join(root, "course"), course_file)
    shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(course, "mytorch"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(os.path.join(course, ".git", "objects"))
    with open(os.path.join(course, ".git", "objects", "solution"), "w") as f:
        f.write(SECRET_TEXT)
    shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(root, "elsewhere", "mytorch"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.symlink(os.path.join(root, "elsewhere"), os.path.join(course, "published"))     # a link to a folder
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chmod(os.path.join(folder, name), 0o755 if name in dirs else 0o644)
    return course


def _snoop(folder, places, solution, files=()):
    """A submission that lists every folder of ``places`` and reads their files and ``files``, then imports
    ``solution`` if it can, else raises an ImportError naming what it reached."""
    os.makedirs(os.path.join(folder, "mytorch"))
    with open(os.path.join(folder, "mytorch", "__init__.py"), "w") as f:
        f.write(SNOOP.format(places=places, solution=solution, files=list(files)))
    return folder


def test_a_submission_cannot_read_the_instructors_checkout(sandbox_user):
    """Every folder of the instructor's checkout but the grader's package (the solution, its git history), and
    of that package its instructor-only modules (the catalogue of mistakes holds the solution's lines) and its
    bytecode, are out of the sandbox user's reach in every child, though the files are world-readable: an empty
    folder (or /dev/null) is mounted over each in the child's own mount namespace. The same submission run
    without --run-as reads them all and scores full marks with the solution's code (the attack works); where no
    mount namespace can be had, the grader refuses to start until they are made root's alone."""
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "checkout-"))
    course = _instructor_checkout(root)
    grader = os.path.join(course, "autograder")
    compileall.compile_dir(grader, quiet=1)
    bytecode = [os.path.join(grader, package, "__pycache__") for package in ("", *autograder.PACKAGES)]
    instructor_only = [os.path.join(grader, name) for name in autograder.INSTRUCTOR_ONLY]
    for name in autograder.INSTRUCTOR_ONLY:                         # each one's bytecode, in its package's cache
        cache = os.path.join(grader, os.path.dirname(name), "__pycache__")
        stem = os.path.basename(name)[:-3] + "."
        instructor_only += [os.path.join(cache, pyc) for pyc in sorted(os.listdir(cache)) if pyc.startswith(stem)]
    # each module's bytecode of this Python at least (a checkout graded by other Pythons too has theirs as well)
    assert all(any(pyc.endswith(f"{os.path.basename(name)[:-3]}.{sys.implementation.cache_tag}.pyc")
                   for pyc in instructor_only) for name in autograder.INSTRUCTOR_ONLY), instructor_only
    for folder, dirs, files in os.walk(grader):
        for name in dirs + files:
            os.chmod(os.path.join(folder, name), 0o755 if name in dirs else 0o644)
    places = [os.path.join(course, name) for name in (".git", ".git/objects", "mytorch", "mytorch/nn", "published")]
    sub = _snoop(os.path.join(root, "sub"), places, os.path.join(course, "published", "mytorch"), instructor_only)
    os.chmod(os.path.join(root, "sub"), 0o755)
    results = os.path.join(root, "results.json")
    env = dict(os.environ, PYTHONPATH="")

    def grade(*extra, **more):
        return subprocess.run([sys.executable, "-m", "autograder", "1.1", "2.1", "--submission", sub, "--json",
                               results, *extra], cwd=course, env=dict(env, **more), capture_output=True, text=True,
                              timeout=300)

    def score():
        with open(results) as f:
            return json.load(f)["score"]

    with open(os.path.join(sub, "mytorch", "__init__.py"), "a") as f:    # run as root, it reads them all
        f.write("\nif len(reached) < 10 + len(%r):\n    raise ImportError(reached)\n" % instructor_only)
    assert grade().returncode == 0 and score() == 9                       # … and takes the solution
    for extra in ([], ["--fresh-seed", "7"]):
        for zygote in ("1", "0"):
            proc = grade("--run-as", user.pw_name, "--python", python, *extra, MYTORCH_GRADER_ZYGOTE=zygote)
            assert proc.returncode == 0 and score() == 0, proc.stdout + proc.stderr
            assert "reached: []" in proc.stdout and SECRET_TEXT not in proc.stdout, proc.stdout
    refused = grade("--run-as", user.pw_name, "--python", python, MYTORCH_GRADER_MOUNT_NAMESPACE="0")
    assert refused.returncode == 2
    assert f"user {user.pw_name} can read {os.path.realpath(root)}/" in refused.stderr     # the checkout's, or elsewhere
    assert "make it readable by root alone first (chmod -R go-rwx" in refused.stderr
    for name in (".git", "mytorch", "published"):
        os.chmod(os.path.join(course, name), 0o700)
    refused = grade("--run-as", user.pw_name, "--python", python, MYTORCH_GRADER_MOUNT_NAMESPACE="0")
    assert refused.returncode == 2 and f"can read {os.path.realpath(grader)}/" in refused.stderr, refused.stderr
    for path in bytecode + instructor_only[:len(autograder.INSTRUCTOR_ONLY)]:
        os.chmod(path, 0o700 if path in bytecode else 0o600)
    proc = grade("--run-as", user.pw_name, "--python", python, MYTORCH_GRADER_MOUNT_NAMESPACE="0")
    assert proc.returncode == 0 and "reached: []" in proc.stdout, proc.stdout + proc.stderr


def test_a_submission_in_batch_cannot_read_the_others_or_their_feedback(sandbox_user):
    """The class folder and the report folder are hidden from every child in batch as well (world-readable:
    without that, a submission graded later could copy an earlier one's code, or read its feedback)."""
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "class-"))
    course = _instructor_checkout(root, TWO_SECTIONS)
    subs, report = os.path.join(root, "subs"), os.path.join(root, "report")
    make_submission(os.path.join(subs, "alice"))
    places = [subs, os.path.join(subs, "alice"), os.path.join(subs, "alice", "mytorch"), report,
              os.path.join(report, "feedback"), os.path.join(course, "mytorch")]
    _snoop(os.path.join(subs, "zed"), places, os.path.join(subs, "alice", "mytorch"))
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chmod(os.path.join(folder, name), 0o755 if name in dirs else 0o644)
    proc = subprocess.run([sys.executable, "-m", "autograder", "batch", subs, "--out", report, "--run-as",
                           user.pw_name, "--python", python, "--jobs", "1"], cwd=course,
                          env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(report, "scores.csv")) as f:
        rows = {line.split(",")[0]: line.split(",") for line in f.read().splitlines()}
    assert rows["alice"][-3] == "100" and rows["zed"][-3] == "0", rows
    with open(os.path.join(report, "feedback", "zed.txt")) as f:
        assert "reached: []" in f.read()


ADD_KEY, KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219), "riscv64": (217, 219), "ppc64le": (269, 271),
                   "s390x": (278, 280)}.get(os.uname().machine, (None, None))
# keys left in every keyring of the uid that outlives its processes: the user keyring, the user session keyring
# and the persistent keyring (kept for days, and across a user deleted and another given its uid)
KEYS_LEFT = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
    "libc.syscall(L({keyctl}), L(1), L(0))\n"                    # a session keyring: possessing what it links
    "persistent = libc.syscall(L({keyctl}), L(22), L(-1), L(-3))\n"
    "added = [libc.syscall(L({add_key}), b'user', b'left-' + bytes([65 + k]), b'data', L(4), L(ring))\n"
    "         for k, ring in enumerate((-4, -5, persistent))]\n"
    "raise ValueError(f'keys added: {{sum(a > 0 for a in added)}}')")


def _keys_of(user):
    """How many keys each keyring of ``user``'s uid that outlives its processes holds, read as that user."""
    syscall = ctypes.CDLL(None, use_errno=True).syscall

    def keyctl(*args):
        return syscall(ctypes.c_long(KEYCTL), *(ctypes.c_long(a) for a in args))

    def count():
        keyctl(1, 0)                                                  # a session keyring of its own
        persistent = keyctl(22, -1, -3)
        buffer = ctypes.create_string_buffer(1 << 12)
        return json.dumps([keyctl(11, ring, ctypes.addressof(buffer), 1 << 12) // 4
                           for ring in (-4, -5, persistent)]).encode()
    return json.loads(reaper.as_user(user, count) or b"null")


def test_keys_a_submission_left_in_its_users_keyrings_are_gone(sandbox_user, checkout, tmp_path):
    """The kernel's keyrings of a uid outlive its processes: what one submission left there would reach the next
    one graded as the same user. The grader empties them with the user's processes."""
    if ADD_KEY is None:
        pytest.skip(f"add_key's number on {os.uname().machine} is not known here")
    make_user, python, home = sandbox_user
    user = make_user()
    edits = kit.attack_edits(KEYS_LEFT.format(keyctl=KEYCTL, add_key=ADD_KEY), home, "", "")
    sub = make_submission(os.path.join(world_readable_dir(os.path.join(home, "keys-")), "sub"), edits)
    proc = subprocess.run([sys.executable, "-m", "autograder", "2.1", "--run-as", user.pw_name, "--python", python,
                           "--submission", sub], cwd=checkout, env=dict(os.environ, PYTHONPATH=""), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "keys added: 3" in proc.stdout, proc.stdout + proc.stderr
    assert _keys_of(user) == [0, 0, 0]



# the keys the part's child can see in its session keyring, after adding one of its own there
SESSION_KEYS = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
    "libc.syscall(L({add_key}), b'user', b'from-a-part', b'data', L(4), L(-3))\n"
    "buffer = ctypes.create_string_buffer(1 << 12)\n"
    "seen = libc.syscall(L({keyctl}), L(11), L(-3), buffer, L(1 << 12)) // 4\n"
    "raise ValueError(f'keys in the session keyring: {{seen}}')")
# the grader started as from a login: a session keyring of its own, with a key of root's in it
IN_A_SESSION = (
    "import ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nL = ctypes.c_long\n"
    "libc.syscall(L({keyctl}), L(1), L(0))\n"
    "libc.syscall(L({add_key}), b'user', b'root-secret', b'data', L(4), L(-3))\n"
    "os.execv(sys.executable, [sys.executable] + sys.argv[1:])\n")


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["zygote", "spawned"])
def test_a_child_has_a_session_keyring_of_its_own(sandbox_user, checkout, zygote):
    """A grader started from a login or a service has a session keyring, which each process it starts would
    share: a key one part added there would reach every other part and submission (and the grader's keys
    them). Each child joins a new one: it sees only the key it added itself, in every part."""
    if ADD_KEY is None:
        pytest.skip(f"add_key's number on {os.uname().machine} is not known here")
    make_user, python, home = sandbox_user
    user = make_user()
    folder = world_readable_dir(os.path.join(home, "session-"))
    edits = kit.attack_edits(SESSION_KEYS.format(keyctl=KEYCTL, add_key=ADD_KEY), home, "", "")
    sub = make_submission(os.path.join(folder, "sub"), edits)
    wrapper = os.path.join(folder, "in_a_session.py")
    with open(wrapper, "w") as f:
        f.write(IN_A_SESSION.format(keyctl=KEYCTL, add_key=ADD_KEY))
    proc = subprocess.run([sys.executable, wrapper, "-m", "autograder", "2.1", "--run-as", user.pw_name, "--python",
                           python, "--submission", sub, "--jobs", "1"], cwd=checkout,
                          env=dict(os.environ, PYTHONPATH="", MYTORCH_GRADER_ZYGOTE=zygote), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 6 cases: ValueError: keys in the session keyring: 1" in proc.stdout, proc.stdout


def test_a_helper_stopped_as_the_user_is_killed_and_the_grader_goes_on(sandbox_user):
    """A helper the grader forks as the sandbox user (to kill its processes, to ask what it may read) can be
    stopped by any process of that user once it has taken the uid: it is killed after its deadline, and the
    grader is told it failed instead of waiting for ever."""
    make_user, _, _ = sandbox_user
    user = make_user()

    def stop_myself():
        os.kill(os.getpid(), signal.SIGSTOP)
        return b"never"
    start = time.monotonic()
    said = reaper.as_user(user, stop_myself, seconds=1.0)
    assert said is None and 1.0 <= time.monotonic() - start < 10
    assert reaper.as_user(user, lambda: b"fine", seconds=5.0) == b"fine"


def test_what_a_batch_killed_hard_left_is_removed_by_the_next_one(sandbox_user):
    """A batch killed with SIGKILL (as the out-of-memory killer or a reboot ends it) deletes nothing: the users
    it made, the student code still running as them, and its copies of the submissions stay. The next batch
    ends and deletes them before it makes a user of its own, and says so; its own are gone at its end."""
    _, python, home = sandbox_user
    root = world_readable_dir(os.path.join(home, "killed-"))
    temp = world_readable_dir(os.path.join(root, "tmp-"))
    marks = world_readable_dir(os.path.join(root, "marks-"))
    os.chmod(marks, 0o777)
    started = os.path.join(marks, "started")
    subs = os.path.join(root, "subs")
    make_submission(os.path.join(subs, "alice"),
                    at_top_of_forward(f"open({started!r}, 'w').close()\nimport time\ntime.sleep(300)"))
    prefix = "mtk" + secrets.token_hex(3)
    grader = make_grader_copy(world_readable_dir(os.path.join(root, "grader-")), TWO_SECTIONS)
    command = [sys.executable, "-m", "autograder", "batch", subs, "--run-as", prefix + "*", "--python", python,
               "--jobs", "1", "--timeout", "250"]
    env = dict(os.environ, PYTHONPATH="", TMPDIR=temp)
    killed = subprocess.Popen(command, cwd=grader, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not os.path.exists(started) and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert os.path.exists(started), "the student's code never ran"
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    left = [u for u in pwd.getpwall() if u.pw_name.startswith(prefix)]
    try:
        assert left and all(reaper.processes_of(u.pw_uid) for u in left)        # still running as them …
        assert [n for n in os.listdir(temp) if n.startswith(f"mytorch-batch-{killed.pid}-")]      # … and the copies
        shutil.rmtree(subs)
        make_submission(os.path.join(subs, "bob"))
        again = subprocess.run(command, cwd=grader, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr
        # the users are the machine's: any batch run as root meanwhile (a test beside this one) may have swept
        # them first; the copies lie in this test's own temporary folder, which only these two batches use
        assert "killed before their end left: copies of submissions" in again.stderr, again.stderr
        assert not [u for u in pwd.getpwall() if u.pw_name.startswith(prefix)]
        # none runs (a zombie, dead and waiting for init to collect it, runs nothing)
        running = [pid for u in left for pid in reaper.processes_of(u.pw_uid) if reaper._state(pid) not in ("Z", None)]
        assert not running, running
        assert not [n for n in os.listdir(temp) if n.startswith("mytorch-batch-")]
    finally:
        for user in left:                                                        # whatever the outcome
            subprocess.run(["pkill", "-KILL", "-u", str(user.pw_uid)], capture_output=True)
            subprocess.run(["userdel", user.pw_name], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_prairielearn_as_root_runs_student_code_as_its_user_who_can_read_no_solution_and_no_reference(
        sandbox_user, tmp_path):
    """A PrairieLearn question's entrypoint as PrairieLearn runs it, as root, with the user run.sh makes present
    (a test user here, named by MYTORCH_GRADER_USER) and python3 a Python that user may run: a submission that
    tries the solution's source, the reference data and root's privileges scores full marks on fresh cases."""
    from handout import build
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "prairielearn-"))     # /grade
    question = build.build_prairielearn(os.path.join(tmp_path, "question"))
    shutil.copytree(os.path.join(question, "tests"), os.path.join(root, "tests"))
    solution_file = os.path.join(root, "tests", "solution", "mytorch", "nn", "rnn_cell.py")
    references = os.path.join(root, "tests", "autograder", "data")
    probe = _reach_probe(solution_file, references)
    sub = make_submission(tmp_path / "sub", at_top_of_forward(probe))
    shutil.copytree(os.path.join(sub, "mytorch"), os.path.join(root, "student", "mytorch"))
    env = dict(os.environ, MYTORCH_PL_ROOT=root, MYTORCH_GRADER_USER=user.pw_name,
               PATH=os.path.dirname(python) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(["sh", os.path.join(root, "tests", "run.sh")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    with open(os.path.join(root, "results", "results.json")) as f:
        results = json.load(f)
    assert results["score"] == 1.0, [t["output"] for t in results["tests"] if t["points"] < t["max_points"]]
    assert oct(os.stat(references).st_mode & 0o777) == oct(0o700)             # root's alone, as on Gradescope
    assert not kit.processes_mentioning("/nonexistent", uid=user.pw_uid)
    shutil.rmtree(root, ignore_errors=True)


def test_ctrl_c_leaves_no_sandbox_user_copy_or_process(sandbox_user):
    """A real SIGINT to a batch grading as users it makes: it says how far it got, and its users, their
    processes and the copies of the submissions are gone; the same command then finishes the class."""
    _, python, home = sandbox_user
    root = world_readable_dir(os.path.join(home, "interrupted-"))
    subs = os.path.join(root, "subs")
    for k in range(6):
        make_submission(os.path.join(subs, f"student{k}"))
    temp = world_readable_dir(os.path.join(root, "tmp-"))
    grader = make_grader_copy(world_readable_dir(os.path.join(root, "grader-")), TWO_SECTIONS)
    prefix = "mti" + secrets.token_hex(3)
    command = [sys.executable, "-m", "autograder", "batch", subs, "--run-as", prefix + "*", "--python", python,
               "--jobs", "2"]
    env = dict(os.environ, PYTHONPATH="", TMPDIR=temp)
    proc = subprocess.Popen(command, cwd=grader, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    err = []
    for line in proc.stderr:
        err.append(line)
        if line.startswith("graded 1/"):
            break
    os.killpg(proc.pid, signal.SIGINT)                    # as a terminal's Ctrl-C: the whole process group
    _, rest = proc.communicate(timeout=300)
    err = "".join(err) + rest
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert re.search(r"interrupted after \d of 6; run the same command to continue", err), err
    assert not [u.pw_name for u in pwd.getpwall() if u.pw_name.startswith(prefix)]
    assert os.listdir(temp) == []
    again = subprocess.run(command, cwd=grader, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and "6 submissions found, 6 rows written" in again.stdout, again.stderr
    assert not [u.pw_name for u in pwd.getpwall() if u.pw_name.startswith(prefix)]


MOVE_WORK_FOLDERS = '''
import os as _os, tempfile as _tempfile
_here = _os.getcwd()
_tries = [_here, _os.path.dirname(_here)] + [
    _os.path.join(_tempfile.gettempdir(), _n) for _n in _os.listdir(_tempfile.gettempdir()) if _n.startswith("mytorch-")]
_moved = []
for _k, _path in enumerate(_tries):
    try:
        _os.rename(_path, _path + "-moved%d" % _k)
        _moved.append(_path)
        _os.symlink("/", _path)                         # a link in its place, for the next child to enter
    except OSError:
        pass
raise ValueError("moved %d of %d: %s" % (len(_moved), len(_tries), _moved[:3]))
'''


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["zygote", "spawned"])
def test_a_child_cannot_move_a_working_folder_for_the_next_child_to_enter(sandbox_user, checkout, tmp_path, zygote):
    """The grader enters a child's working folder (as root, before it gives root up) by name: a sandbox user who
    could rename one (its own, a sibling part's) and leave a link in its place would send the next child into
    any folder root may enter, past the hidden folders. Its own folder, the folder holding it, and every folder
    of the grader's in the temporary folder, tried by parts running two at a time: none moves."""
    make_user, python, home = sandbox_user
    user = make_user()
    root = world_readable_dir(os.path.join(home, "move-"))
    sub = make_submission(os.path.join(root, "sub"), at_top_of_forward(MOVE_WORK_FOLDERS, "nn/gru_cell.py"))
    out = os.path.join(root, "results.json")
    proc = subprocess.run([sys.executable, "-m", "autograder", "1.1", "2.1", "2.2", "--submission", sub, "--json",
                           out, "--jobs", "2", "--run-as", user.pw_name, "--python", python], cwd=checkout,
                          env=dict(os.environ, PYTHONPATH="", MYTORCH_GRADER_ZYGOTE=zygote),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        tests = check_gradescope(json.load(f))
    assert tests["1.1"]["score"] == spec.PARTS_BY_NUMBER["1.1"].points
    for part in ("2.1", "2.2"):
        said = tests[part]["output"].replace("\n  ", " ")
        assert re.search(r"ValueError: moved 0 of [2-9]\d*", said), said
    shutil.rmtree(root, ignore_errors=True)

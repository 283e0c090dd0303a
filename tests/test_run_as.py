"""``--run-as`` and ``batch --run-as`` for real (as root): a user made for this run, a Python it can execute, and
the attacks of tests/securitykit.py plus a batch whose one submission attacks the others and the grader.
Skipped, with the reason, when not root or when the Python cannot be built."""
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile

import pytest

from autograder import mistakes, spec
from tests import securitykit as kit
from tests.graderkit import check_gradescope, make_grader_copy, make_submission

SECRET_TEXT = "ROOT-ONLY-51d0e2"
RUN_AS_ATTACKS = ["honest broken", "FIFO in place of every reachable file",
                  "symlink to a secret in place of every reachable file", "every inherited fd written to",
                  "daemons that outlive the grader and rewrite the results"]
FORK_BOMB = ("if not hasattr(builtins, 'attacked'):\n    builtins.attacked = 1\n"
             "    def bomb():\n        while True:\n            try:\n                os.fork()\n"
             "            except OSError:\n                time.sleep(0.01)\n"
             "    daemon(bomb, 60)\nraise ValueError('broken')")


def _world_readable_dir(prefix):
    path = tempfile.mkdtemp(prefix=prefix)
    os.chmod(path, 0o755)
    return path


@pytest.fixture(scope="module")
def sandbox_user():
    """(a function making a new user, a Python with numpy any user can run, a world-readable folder); the
    users and the folder are removed afterwards. One user per grading process: the grader kills every process
    of its sandbox user at the end, so two graders must not share one."""
    if os.geteuid() != 0:
        pytest.skip("--run-as needs root")
    if shutil.which("useradd") is None or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs useradd and /usr/bin/python3")
    home = _world_readable_dir("mytorch-run-as-")
    venv = os.path.join(home, "venv")
    made = subprocess.run(["/usr/bin/python3", "-m", "venv", venv], capture_output=True, text=True)
    if made.returncode == 0:
        made = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "numpy"],
                              capture_output=True, text=True)
    if made.returncode != 0:
        shutil.rmtree(home, ignore_errors=True)
        pytest.skip(f"could not build a Python with numpy for the sandbox user: {made.stderr[-300:]}")
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
        yield make_user, os.path.join(venv, "bin", "python"), home
    finally:
        for name in made:
            subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def campaign(sandbox_user):
    make_user, python, home = sandbox_user
    root = _world_readable_dir(os.path.join(home, "campaign-"))
    grader = make_grader_copy(os.path.join(root, "grader"))
    before = kit.tree_digest(grader)
    secret = os.path.join(root, "secret.txt")              # root alone may read it
    with open(secret, "w") as f:
        f.write(SECRET_TEXT)
    os.chmod(secret, 0o600)
    attacks = {name: kit.ATTACKS[name][0] for name in RUN_AS_ATTACKS}
    attacks["fork bomb"] = FORK_BOMB
    users = {name: make_user() for name in attacks}
    runs = {name: kit.launch(root, name, code, grader, secret, ["--run-as", users[name].pw_name, "--python", python])
            for name, code in attacks.items()}
    kit.wait_all(runs.values())
    with open(secret) as f:
        secret_after = f.read()
    return {"runs": runs, "grader_changed": kit.tree_digest(grader) != before, "secret_after": secret_after,
            "users": users}


@pytest.mark.parametrize("name", RUN_AS_ATTACKS[1:] + ["fork bomb"])
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


def test_batch_isolates_submissions_and_the_grader(sandbox_user):
    make_user, python, home = sandbox_user
    user = make_user()
    root = _world_readable_dir(os.path.join(home, "batch-"))
    grader = make_grader_copy(os.path.join(root, "grader"))
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
        f"try:\n    open({subs!r} + '/grading/scores.csv', 'w').write('alice,0\\n')\nexcept OSError:\n    pass\n"
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
    with open(os.path.join(subs, "grading", "scores.csv")) as f:
        rows = {line.split(",")[0]: line.split(",") for line in f.read().splitlines()}
    assert rows["alice"][-3] == "100"
    assert f"{float(rows['bob'][-3]):.2f}/100" in bob_alone.stdout     # as graded alone, before the batch
    assert kit.tree_digest(grader) == before                 # the grader's code and data, byte for byte
    assert not kit.processes_mentioning("/nonexistent", uid=user.pw_uid)


def test_batch_without_a_sandbox_user_says_there_is_no_isolation(tmp_path):
    make_submission(tmp_path / "subs" / "alice")
    proc = subprocess.run([sys.executable, "-m", "autograder", "batch", str(tmp_path / "subs"), "--jobs", "2"],
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "warning: no isolation" in proc.stderr
    assert "graded 1/1 submissions" in proc.stderr


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

"""Attacks on the grader, written generically, and a campaign that runs many of them at once.

Each attack is code put at the top of ``GRUCell.forward`` (part 2.1); part 1.1 runs beside it. The grader runs
as a separate process per attack, all at once; the campaign then waits 5 s after the last one ended and
checks, for every attack, what the issue promises: exit 0 in time, a results file of valid UTF-8 JSON under
1 MB whose score equals an honest broken submission's, no process of the submission alive, results unchanged
5 s after exit, no secret file read into the results, and nothing outside the sandbox written.
"""
import hashlib
import json
import os
import subprocess
import sys
import threading
import time

from tests.graderkit import at_top_of_forward, make_submission

PARTS = ["1.1", "2.1"]
TIMEOUT = 30                     # seconds per part: generous, the campaign shares the machine; no attack loops
MARGIN = 60                      # the campaign runs many graders at once on a shared machine

# Shared by every attack: BASE is the attack's own folder (only files under it are touched), SECRET a file
# outside it that student code must never get into the results, RESULTS the results file's path.
PRELUDE = '''
import builtins, os, sys, time
BASE, SECRET, RESULTS = {base!r}, {secret!r}, {results!r}
PLANT = ["output.txt", "response.npz", "request.npz", "results.json", "stdout.txt", "response", "request"]
def daemon(job, seconds):
    """Run job() for about ``seconds`` in a grandchild that left our session (fork, setsid, fork)."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            end = time.time() + seconds
            try:
                while time.time() < end:
                    job()
                    time.sleep(0.05)
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()
def reachable():
    """Every file (and a few likely names) in every folder this process can see and may write, under BASE."""
    tops = {{os.getcwd(), os.path.dirname(os.getcwd()), os.environ.get("HOME", ""), os.environ.get("TMPDIR", ""),
            os.path.dirname(RESULTS)}}
    for fd in os.listdir("/proc/self/fd"):
        try:
            tops.add(os.path.dirname(os.readlink("/proc/self/fd/" + fd)))
        except OSError:
            pass
    found = []
    for top in tops:
        if not top or not os.path.realpath(top).startswith(BASE + os.sep):
            continue
        for folder, dirs, files in os.walk(top):
            if os.path.realpath(folder).startswith(os.path.join(BASE, "sub")):
                continue
            found += [os.path.join(folder, n) for n in set(files) | set(PLANT)]
    return found[:3000]
def replace_all(make):
    for path in reachable():
        try:
            if os.path.lexists(path):
                os.unlink(path)
            make(path)
        except OSError:
            pass
'''

ATTACKS = {
    # name: (code after the prelude, text expected in part 2.1's output)
    "honest broken": ("raise ValueError('broken')", "ValueError: broken"),
    "FIFO in place of every reachable file": (
        "if not hasattr(builtins, 'attacked'):\n    builtins.attacked = 1\n    replace_all(os.mkfifo)\n"
        "    daemon(lambda: replace_all(os.mkfifo), 4)\nraise ValueError('broken')", "ValueError: broken"),
    "symlink to a secret in place of every reachable file": (
        "if not hasattr(builtins, 'attacked'):\n    builtins.attacked = 1\n"
        "    replace_all(lambda p: os.symlink(SECRET, p))\n"
        "    daemon(lambda: replace_all(lambda p: os.symlink(SECRET, p)), 4)\nraise ValueError('broken')",
        "ValueError: broken"),
    "every inherited fd written to": (
        "junk = [b'MYTORCH1' + (26).to_bytes(8, 'big') + b'{\"meta\": [], \"arrays\": []}',\n"
        "        b'PK\\x03\\x04' + bytes(2000), b'\\xff\\xfe\\x1b[2J' * 20000]\n"
        "def spray():\n    for fd in range(256):\n        for j in junk:\n            try:\n"
        "                os.write(fd, j)\n            except OSError:\n                pass\n"
        "if not hasattr(builtins, 'attacked'):\n    builtins.attacked = 1\n    spray()\n    daemon(spray, 3)\n"
        "raise ValueError('broken')", ""),
    "compressed bomb as the response": (
        "import io, zipfile\nbuf = io.BytesIO()\n"
        "with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:\n"
        "    z.writestr('__report__.npy', bytes(64 << 20))\n"
        "for fd in range(3, 256):\n    try:\n        os.write(fd, buf.getvalue())\n    except OSError:\n        pass\n"
        "os._exit(0)", "returned results that could not be read"),
    "oversized response": (
        "block = b'MYTORCH1' + bytes(1 << 20)\n"
        "for fd in range(3, 256):\n    try:\n        for _ in range(40):\n            os.write(fd, block)\n"
        "    except OSError:\n        pass\nos._exit(0)", "returned more than 16 MiB"),
    "response that lies about its arrays": (
        "import json\nhead = json.dumps({'meta': [{}] * 5, 'arrays': [[0, 'h_t', '<f8', [1 << 40]]] * 100000})"
        ".encode()\n"
        "frame = b'MYTORCH1' + len(head).to_bytes(8, 'big') + head + bytes(4096)\n"
        "for fd in range(3, 256):\n    try:\n        os.write(fd, frame)\n    except OSError:\n        pass\n"
        "os._exit(0)", "returned results that could not be read"),
    "daemons that outlive the grader and rewrite the results": (
        "def forge():\n    global hoard\n    hoard = bytearray(200 << 20)\n    try:\n"
        "        open(RESULTS, 'w').write('{\"score\": 100, \"tests\": []}')\n    except OSError:\n        pass\n"
        "if not hasattr(builtins, 'attacked'):\n    builtins.attacked = 1\n    daemon(forge, 60)\n"
        "    if os.fork() == 0:\n        os.setpgid(0, 0)\n        time.sleep(60)\n        os._exit(0)\n"
        "raise ValueError('broken')", "ValueError: broken"),
    "8 MB exception message": ("raise ValueError('x' * (8 << 20))", "ValueError: xxxxxxxx"),
    "lone surrogate and escapes in the message": ("raise ValueError('bad \\ud800 \\x1b[31m red')",
                                                  "ValueError: bad ? ?[31m red"),
    "undecodable bytes printed, then exit": (
        "sys.stdout.flush()\nos.write(1, b'before \\xff\\xfe \\xed\\xa0\\x80 \\x1b]0;title\\x07 after\\n')\n"
        "os._exit(3)", "exited with code 3"),
    "placeholder results present while student code runs": (
        "try:\n    seen = open(RESULTS).read()\nexcept OSError:\n    seen = ''\n"
        "os._exit(7 if 'the grader stopped before grading this part' in seen else 9)", "exited with code 7"),
    "exception whose __str__ raises": (
        "class Sneaky(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise Sneaky()",
        "Sneaky (its message cannot be shown"),
}


def attack_edits(code, base, secret, results):
    return at_top_of_forward(PRELUDE.format(base=base, secret=secret, results=results) + code, "nn/gru_cell.py")


def tree_digest(folder):
    h = hashlib.sha256()
    for top, dirs, files in sorted(os.walk(folder)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(top, name)
            h.update(path.encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def processes_mentioning(text, uid=None):
    """Processes whose environment or working folder mentions ``text`` (or that run as ``uid``)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            if uid is not None and os.stat(f"/proc/{name}").st_uid == uid:
                found.append(int(name))
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if text.encode() in env or cwd.startswith(text):
            found.append(int(name))
    return found


class Run:
    """One grader run on one attack: started, then finished, then looked at again 5 s later."""

    def __init__(self, name, base, command, env, results, cwd):
        self.name, self.base, self.results = name, base, results
        self.start = time.monotonic()
        self.proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.seconds = self.at_exit = self.later = None
        self.waiter = threading.Thread(target=self._wait, daemon=True)
        self.waiter.start()

    def _wait(self):
        out, err = self.proc.communicate()
        self.seconds = time.monotonic() - self.start            # the moment it exited, read at once
        self.at_exit = _read(self.results)
        self.stdout, self.stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def finish(self, timeout):
        self.waiter.join(timeout)
        if self.waiter.is_alive():
            self.proc.kill()
            self.waiter.join()


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as error:
        return repr(error).encode()


def launch(campaign, name, code, grader, secret, extra=(), wrap=None, pid_namespace=True, ipc_namespace=True):
    """Start the grader on the attack ``code``; the submission and everything it may touch under one folder.
    ``pid_namespace=False``: without the grader's optional PID namespace, so its own process ending is tested;
    ``ipc_namespace=False`` likewise for the IPC namespace, so the removal of what a user left is tested."""
    base = os.path.realpath(os.path.join(campaign, "".join(c if c.isalnum() else "_" for c in name)))
    os.makedirs(os.path.join(base, "tmp"))
    os.makedirs(os.path.join(base, "results"))
    os.chmod(base, 0o755)
    results = os.path.join(base, "results", "results.json")
    sub = make_submission(os.path.join(base, "sub"), attack_edits(code, base, secret, results))
    env = dict(os.environ, PYTHONPATH="", TMPDIR=os.path.join(base, "tmp"),
               MYTORCH_GRADER_PID_NAMESPACE="1" if pid_namespace else "0",
               MYTORCH_GRADER_IPC_NAMESPACE="1" if ipc_namespace else "0")
    command = [sys.executable, "-m", "autograder", *PARTS, "--submission", sub, "--timeout", str(TIMEOUT),
               "--json", results, *extra]
    if wrap:
        command = wrap(command, base)
    return Run(name, base, command, env, results, cwd=grader)


def wait_all(runs, settle=5.0):
    for run in runs:
        run.finish(TIMEOUT * 2 + MARGIN + 60)
    time.sleep(settle)
    for run in runs:
        run.later = _read(run.results)


def verdicts(run):
    """The results file, checked as the issue asks: valid UTF-8 JSON under 1 MB. Returns it parsed."""
    assert run.proc.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
    assert run.seconds < 2 * TIMEOUT + MARGIN
    assert len(run.at_exit) < 1 << 20
    return json.loads(run.at_exit.decode("utf-8"))

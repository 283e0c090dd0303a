"""Run one part's cases in a child process with limits, and bring back plain arrays and a report.

The child gets: a fresh working directory (its only writable place, with /tmp), no standard input, a
minimal environment, ``python -I -B`` (no user site, no PYTHON* variables, the script's folder not on
sys.path), one BLAS thread, and limits on address space, CPU time, the size of any file it writes, the files
each process holds open and, under ``--run-as``, the number of processes of the sandbox user; as root, also
on the memory of all its processes together (``cgroups``).

The grader never opens a path the child could create, replace or point elsewhere. Everything travels over
pipes the grader made before the child started: the request (configs and inputs) on one, the response on
another, and what the child prints (stdout and stderr) on a third, which the grader drains as it comes,
keeping only the tail. Each is read up to a limit; the response is a ``frames`` message (no compression)
checked before it is decoded, and every string in it passes through ``untrusted``. When the part ends,
``reaper.end`` kills and reaps the child and everything it started (as root, the child also runs in its own
PID namespace where ``unshare`` can make one, and in an IPC namespace of its own: see ``ipc``). Once no
child of a sandbox user runs any more, ``clear_user`` ends every process of that user and removes its IPC
objects and temporary files; working folders are removed with ``tree.remove``, which no shape of tree
defeats. Whatever happens, the caller gets an ``Outcome``; nothing raises.

That is the Linux sandbox. Where it cannot run (macOS, Windows: ``system.LINUX`` is false) a part's child is
``portable``'s, a fresh Python per part with the limits that system has; what comes back is read and judged
here the same way.
"""
import contextlib
import dataclasses
import os
import select
import signal
import subprocess
import sys
import threading
import time

from autograder.sandbox import (
    cgroups,
    childspec,
    cleanup,
    confinement,
    fairness,
    frames,
    ipc,
    landlock,
    namespaces,
    portable,
    reaper,
    system,
    untrusted,
)

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
DRAIN_SECONDS = 2.0             # after the child is gone, how long to wait for the pipes to close


@dataclasses.dataclass
class Outcome:
    """What came back from a child: per-case reports and arrays, or why nothing usable came back."""
    reports: list = None
    arrays: dict = dataclasses.field(default_factory=dict)
    failure: str = ""           # non-empty: the whole part failed, and this says why
    output: str = ""            # the tail of what the child printed
    seconds: float = 0.0
    starved: bool = False       # it ran out of time having waited for a CPU longer than it ran (``fairness``)
    setup: bool = False         # the failure is the grader's own set-up (no Python, an unreadable grader file)


_users = {}                     # uid -> number of children running as it now
_users_lock = threading.Lock()  # guards _user_locks
_user_locks = {}                # uid -> the lock held while its count changes (and its leftovers are cleared)


def _user_lock(uid):
    """One lock per sandbox user: clearing what one user left never holds back another's children."""
    with _users_lock:
        return _user_locks.setdefault(uid, threading.Lock())


def _starting(user):
    """A child of ``user`` (a pwd entry, or None) is about to start."""
    if user is not None:
        with _user_lock(user.pw_uid):
            _users[user.pw_uid] = _users.get(user.pw_uid, 0) + 1


def _ended(user):
    """A child of ``user`` has ended: if it was the last, ``clear_user``, while none of its can start."""
    if user is not None:
        with _user_lock(user.pw_uid):
            _users[user.pw_uid] -= 1
            if _users[user.pw_uid] == 0:
                cleanup.clear_user(user)               # anything that reached outside the grader's tree


def _tasks_of(uid):
    """How many tasks (processes and threads) ``uid`` runs now: what RLIMIT_NPROC counts."""
    count = 0
    for pid in reaper.processes_of(uid):
        with contextlib.suppress(OSError):
            count += len(os.listdir(f"/proc/{pid}/task"))
    return count



def cpu_limit(limits):
    """A child's soft limit on CPU seconds (RLIMIT_CPU; the hard one is a second more) for ``limits``."""
    return limits.cpu_seconds


def _settings(spec, work, start, group, task="part"):
    """What a Linux child is confined with (``confinement``), and, for a zygote to fork it, where it runs."""
    user = spec.user
    return {"root": os.path.abspath(spec.root), "work": work, "env": _env(work, spec.limits.timeout, start),
            "memory_mb": spec.limits.memory_mb, "cpu_seconds": cpu_limit(spec.limits),
            "file_limit": childspec.OUTPUT_LIMIT, "open_files": childspec.OPEN_FILES,
            "pid_namespace": namespaces.pid_namespace() is not None,
            # RLIMIT_NPROC caps the tasks of the whole uid, so a fork bomb in one part would stop every other part
            # of the same user from starting: each child may start PROCESS_LIMIT tasks beyond those running now
            "user": None if user is None else [user.pw_uid, user.pw_gid,
                                               _tasks_of(user.pw_uid) + childspec.PROCESS_LIMIT],
            "task": task, "ipc_namespace": ipc.wanted(), "cgroup": group,
            "hidden": namespaces.hidden_from(user), "own_proc": user is not None and ipc.proc_wanted(),
            # student code of the grader's own user: it may write in its folder alone, and reach no process
            # outside its sandbox (``landlock``; a sandbox user is kept from those by its uid)
            "landlock": [[work], landlock.wanted()] if user is None and landlock.wanted() else None}


def _signal_reason(code, limits, cpu_seconds=None):
    """Why the child ended by signal ``-code``. A SIGKILL once it had used its soft CPU limit (``cpu_seconds``,
    when known) is the CPU limit's: a process 1 of a PID namespace never gets the SIGXCPU before it."""
    name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
    timeout, memory_mb = limits.timeout, limits.memory_mb
    if name == "SIGKILL" and cpu_seconds is not None and cpu_seconds >= cpu_limit(limits):
        name = "SIGXCPU"
    reasons = {"SIGXCPU": f"used more than {timeout} s of CPU time (an infinite loop?)",
               "SIGKILL": f"was killed (out of memory? the limit is {memory_mb} MiB)",
               "SIGSEGV": "crashed with a segmentation fault",
               "SIGXFSZ": f"wrote a file larger than {childspec.OUTPUT_LIMIT >> 20} MiB"}
    return reasons.get(name, f"was stopped by {name}")


def request_bytes(configs, inputs_list):
    return frames.encode(configs, {(k, name): value for k, inputs in enumerate(inputs_list)
                                   for name, value in inputs.items()})


def read_response(data, cases):
    """The child's response, checked: ``(reports, {(case, name): array})``. Raises ValueError if malformed."""
    meta, arrays = frames.decode(data, cases)
    arrays = {(case, untrusted.text(name, 200)): a for (case, name), a in arrays.items()}
    return untrusted.reports(meta, cases), arrays


def _feed(fd, data):
    """Write the request (in a thread: the pipe holds 64 KiB and the child may never read it)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass                                              # the child closed it or died: its outcome says why
    finally:
        os.close(fd)


class _Pipes:
    """The response and output pipes, read as data comes, each up to its limit."""

    def __init__(self, response_fd, output_fd):
        self.response, self.output = bytearray(), bytearray()
        self.response_total = self.output_total = 0
        self.open = {response_fd: "response", output_fd: "output"}

    def read(self, seconds):
        if not self.open:
            time.sleep(min(seconds, 0.05))
            return
        ready, _, _ = select.select(list(self.open), [], [], seconds)
        for fd in ready:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                os.close(fd)
                del self.open[fd]
            elif self.open[fd] == "response":
                self.response_total += len(chunk)
                if self.response_total <= childspec.RESPONSE_LIMIT:
                    self.response += chunk
            else:
                self.output_total += len(chunk)
                self.output = (self.output + chunk)[-untrusted.OUTPUT_TAIL:]

    def close(self):
        for fd in self.open:
            os.close(fd)
        self.open = {}


def _env(work, timeout, start):
    """The child's environment. MYTORCH_GRADER_DUMP_AT: when (``time.monotonic()``, one clock for every process)
    it prints where every thread is, a second (a quarter of a short limit: MYTORCH_GRADER_DUMP_LEFT) before the
    limit counted from ``start`` ends it, and a few times more in that time (``worker.dump_again``), so an
    endless loop is located however long the child took to start."""
    left = min(1.0, 0.25 * timeout)
    return {**reaper.HELPER_ENV, "HOME": work, "TMPDIR": work,
            "MYTORCH_GRADER_DUMP_AT": repr(start + timeout - left), "MYTORCH_GRADER_DUMP_LEFT": repr(left)}



def _fork(spec, work, fds, start, group, task):
    """The child forked by ``spec.zygote`` with the settings ``_start`` gives a spawned one, or None without one.
    ``fds``: the request, response and output pipes' ends; ``task``: "part" (the worker) or "compile"
    (``zygote.compiled``)."""
    if spec.zygote is None:
        return None
    extra = []
    if spec.bytecode:
        code_r, code_w = os.pipe()
        threading.Thread(target=_feed, args=(code_w, spec.bytecode), daemon=True).start()
        extra = [code_r]
    try:
        return spec.zygote.fork(_settings(spec, work, start, group, task), list(fds) + extra)
    finally:
        for fd in extra:
            os.close(fd)


def _start(spec, work, fds, start, group):
    """A fresh Python running the worker, confined by ``confinement`` before it runs (``preexec_fn``)."""
    request_r, response_w, out_w = fds
    args = [spec.python or sys.executable, "-I", "-B", WORKER, os.path.abspath(spec.root), str(request_r),
            str(response_w)]
    unshare = namespaces.pid_namespace()
    user = spec.user
    if unshare is not None:
        who = ["--setgid", str(user.pw_gid), "--setuid", str(user.pw_uid)] if user is not None else []
        # the /proc that confinement mounted is of the grader's PID namespace (it runs before unshare makes the
        # child's): a proc of the child's own namespace over it, where this unshare can mount one
        proc = ["--mount-proc"] if user is not None and ipc.proc_wanted() and namespaces.mount_proc(unshare) else []
        args = [unshare, "--pid", "--fork", "--kill-child"] + proc + who + ["--"] + args
    settings = dict(_settings(spec, work, start, group), switch_user=unshare is None)
    keyctl = ipc.keyctl_call()
    import resource  # noqa: F401  (imported here, never between fork and exec)
    rules = landlock.ruleset(*settings["landlock"]) if settings["landlock"] else None
    restrict = landlock.Restrict() if rules is not None else None
    try:
        return reaper.spawn(lambda: subprocess.Popen(
            args, cwd=work, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w, env=settings["env"],
            pass_fds=[request_r, response_w], start_new_session=True,
            preexec_fn=lambda: confinement.apply(settings, ipc, cgroups, keyctl, lambda: restrict(rules))))
    finally:
        if rules is not None:
            os.close(rules)


def run_child(spec, configs, inputs_list, task="part"):
    """Run the worker on ``spec.root``'s mytorch for these cases, as ``spec`` (a ``childspec.ChildSpec``) says:
    forked from its zygote when it has one (else, or once that has given up, a new Python is started), with
    its bytecode handed to the child. A part whose zygote died under it is graded again."""
    for _ in range(2):
        outcome = _run_child(spec, configs, inputs_list, task)
        if outcome is not None:
            return outcome
    if task != "part":
        return Outcome(failure="could not be run: its zygote failed")
    return _run_child(spec.spawned(), configs, inputs_list, task)


def _poll(proc):
    """``proc.poll()``. A spawned child (a Popen) is reaped here by ``os.wait4`` alone, which also gives the CPU
    time of it and of every process it waited for, kept as ``proc.cpu_seconds`` (as a zygote's child has it):
    under ``unshare --fork`` the worker is process 1 of its PID namespace, ended by the CPU limit's SIGKILL.
    Still running when asked, it is not asked again here: ``proc.poll()`` would reap a child that ended just
    after, without its CPU time, and a CPU limit's end would read as the memory limit's."""
    if isinstance(proc, subprocess.Popen) and proc.returncode is None:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return proc.poll()
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            proc.cpu_seconds = usage.ru_utime + usage.ru_stime
        return proc.returncode
    return proc.poll()



def _run_child(spec, configs, inputs_list, task):
    if reaper.interrupted():
        return Outcome(failure="was not run: grading was interrupted")
    start = time.monotonic()
    request = request_bytes(configs, inputs_list)
    work = cleanup.work_folder()
    try:
        if not system.LINUX:
            return _run_portable(spec, request, work, len(configs), start)
        return _run_linux(spec, request, work, len(configs), start, task)
    finally:
        cleanup.remove_work(work)


def _run_portable(spec, request, work, cases, start):
    """A part's child on macOS or Windows (``portable``)."""
    try:
        code, streams, timed_out, flooded = portable.run(spec, request, work, _env(work, spec.limits.timeout,
                                                                                   start), start)
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        return Outcome(failure=f"could not start Python ({error})", setup=True)
    return _outcome(code, streams, timed_out, flooded, cases, spec.limits, start)


def _run_linux(spec, request, work, cases, start, task):
    """A part's child in the Linux sandbox: forked from the submission's zygote, or a fresh Python."""
    reaper.become_subreaper()
    user = spec.user
    fds, token = [], None
    group = cgroups.make(spec.limits.memory_mb)         # None where memory cgroups cannot be had
    _starting(user)
    try:
        if user is not None:
            os.chown(work, user.pw_uid, user.pw_gid)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        fds = [req_w, resp_r, out_r]
        try:
            proc = _fork(spec, work, [req_r, resp_w, out_w], start, group, task)
            if proc is None:
                proc = _start(spec, work, [req_r, resp_w, out_w], start, group)
        except (OSError, subprocess.SubprocessError) as error:
            who = f" as user {user.pw_name}" if user is not None else ""
            return Outcome(failure=f"could not start Python{who} ({error})", setup=True)
        finally:
            for fd in (req_r, resp_w, out_w):
                os.close(fd)
        token = reaper.alive(lambda: os.kill(proc.pid, signal.SIGKILL))
        threading.Thread(target=_feed, args=(req_w, request), daemon=True).start()
        fds = [resp_r, out_r]
        pipes = _Pipes(resp_r, out_r)
        deadline = start + spec.limits.timeout
        timed_out = flooded = False
        while _poll(proc) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if pipes.open:
                pipes.read(min(left, 0.1))
            elif hasattr(proc, "await_end"):           # both pipes closed: only its exit is left to see,
                proc.await_end(min(left, 0.1))         # which its zygote reports (a sleep here cost a part 10 ms)
            else:
                time.sleep(min(left, 0.02))
            if pipes.output_total > childspec.OUTPUT_LIMIT:
                flooded = True
                break
        starved = timed_out and fairness.starved(proc.pid, spec.limits.timeout)     # read before it is killed
        lost = getattr(proc, "lost", False)            # its zygote died under it (so no one reaped it)
        if lost:
            proc.returncode = None                     # kill it with its tree (if its pid is still its own)
        reaper.end(proc)                               # the child and everything it started are gone
        if lost:                                       # grade the part again
            pipes.close()
            fds = []
            spec.zygote.lost(proc)
            return None
        drain_until = time.monotonic() + DRAIN_SECONDS
        while pipes.open and time.monotonic() < drain_until:
            pipes.read(0.05)
        pipes.close()
        fds = []
        outcome = _outcome(_unshare_passed_on(proc, pipes), pipes, timed_out, flooded, cases, spec.limits, start,
                           getattr(proc, "cpu_seconds", None))
        outcome.starved = starved
        return outcome
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        reaper.gone(token)
        _ended(user)
        cgroups.remove_soon(group)                     # its processes are gone


UNSHARE_KILLED = b"unshare: sigprocmask unblock failed: Invalid argument"


def _unshare_passed_on(proc, pipes):
    """The child's exit status. A spawned worker runs under ``unshare --fork``, which ends as its child did; but
    util-linux 2.38's cannot pass on a SIGKILL (the memory cgroup's, the hard CPU limit's): it says so and exits
    with 1. That is read as the SIGKILL it was, and the line is dropped from the output shown."""
    said = pipes.output.rstrip()
    if (proc.returncode == 1 and isinstance(proc, subprocess.Popen) and proc.args[0] == namespaces.pid_namespace()
            and said.endswith(UNSHARE_KILLED)):
        del pipes.output[len(said) - len(UNSHARE_KILLED):]
        return -signal.SIGKILL
    return proc.returncode


def _worker_unopened(output):
    """True when Python said it could not open the worker script (so no code of the submission ever ran)."""
    said = bytes(output)
    return b"can't open file" in said and os.fsencode(WORKER) in said


def _outcome(code, pipes, timed_out, flooded, cases, limits, start, cpu_seconds=None):
    outcome = Outcome(output=untrusted.output_tail(pipes.output), seconds=time.monotonic() - start)
    output_limit, response_limit = childspec.OUTPUT_LIMIT, childspec.RESPONSE_LIMIT
    if timed_out:
        outcome.failure = f"did not finish within {limits.timeout:g} s (an infinite loop, or far too slow)"
    elif flooded or pipes.output_total > output_limit:
        outcome.failure = f"printed more than {output_limit >> 20} MiB of output; remove debugging prints"
    elif pipes.response_total > response_limit:
        outcome.failure = f"returned more than {response_limit >> 20} MiB of results"
    elif not pipes.response and _worker_unopened(pipes.output):
        outcome.failure = (f"could not start its worker: Python could not open {WORKER} (the user that runs student "
                           "code must be able to read the grader's files)")
        outcome.setup = True
    elif not pipes.response:
        if code is not None and code < 0:
            outcome.failure = _signal_reason(code, limits, cpu_seconds)
        else:
            outcome.failure = (f"exited with code {code} before returning its results "
                               "(does the code call sys.exit, os._exit or exit?)")
    else:
        try:
            outcome.reports, outcome.arrays = read_response(bytes(pipes.response), cases)
        except Exception as error:                      # anything malformed: the part fails, grading goes on
            outcome.failure = f"returned results that could not be read ({untrusted.text(str(error), 300)})"
    return outcome

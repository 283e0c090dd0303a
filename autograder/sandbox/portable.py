"""A part's child where the Linux sandbox is not to be had: macOS, Windows, another POSIX system.

Each part gets a fresh Python, ``python -I -B worker.py ROOT - -``, with three pipes on its standard streams:
its request arrives on standard input, its response leaves on standard output (which the worker moves to a
descriptor of its own before any student code runs, pointing its fd 1 at standard error), and everything it
prints goes to standard error. Threads read the two output pipes (Windows cannot ``select`` a pipe), each up
to its limit, keeping the tail of what it printed, as on Linux.

Its limits and its end, by system:

* Windows: a Job Object (``jobs``) caps each of its processes' memory and their number, and holds every
  process the child ever starts; closing it ends them all. The child is assigned to it before it is sent its
  request, and reads that request before anything of the submission runs.
* macOS and other POSIX systems: ``confinement`` sets the limits before it starts (CPU time, file size, open
  files, core dumps; memory as the system allows), in a session of its own. At its end every process of its
  process group and every process below it (read from ``ps``) is stopped, then killed, until none is left.
  A process that leaves both (a double fork into a session of its own) is out of reach: docs/security.md.

Whatever happens the caller gets ``(exit code, streams, timed_out, flooded)``; nothing raises but OSError
when the child could not be started.
"""
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

from autograder.sandbox import childspec, confinement, reaper, system

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
PS = next((p for p in ("/bin/ps", "/usr/bin/ps") if os.path.exists(p)), "ps")   # macOS: /bin/ps
END_ROUNDS = 20                 # looks for processes left, when ending a POSIX child's tree
DRAIN_SECONDS = 2.0             # after the child is gone, how long to wait for the pipes to close


class _Reader(threading.Thread):
    """Reads one pipe to its end: the first ``limit`` bytes (``keep="head"``) or the last ``limit``
    (``"tail"``), counting all of them."""

    def __init__(self, pipe, limit, keep):
        super().__init__(daemon=True)
        self.pipe, self.limit, self.keep = pipe, limit, keep
        self.data, self.total = bytearray(), 0

    def run(self):
        with contextlib.suppress(OSError, ValueError):
            while True:
                chunk = self.pipe.read(1 << 16)
                if not chunk:
                    break
                self.total += len(chunk)
                if self.keep == "tail":
                    self.data = (self.data + chunk)[-self.limit:]
                elif self.total <= self.limit:
                    self.data += chunk


class Streams:
    """What came back, as ``runner`` reads it: ``response`` (at most RESPONSE_LIMIT bytes), ``output`` (the tail
    of what the child printed) and how much of each the child sent."""

    def __init__(self, response, output):
        self.response, self.response_total = response.data, response.total
        self.output, self.output_total = output.data, output.total


def environment(work, env):
    """The child's environment: ``env`` (the grader's minimal one) with what a Python needs on this system
    (Windows: SYSTEMROOT for its random numbers, PATH for NumPy's libraries, TEMP in the working folder)."""
    if not system.WINDOWS:
        return env
    kept = {name: os.environ[name] for name in ("SYSTEMROOT", "SYSTEMDRIVE", "PATH", "PATHEXT", "COMSPEC")
            if name in os.environ}
    return {**env, **kept, "TEMP": work, "TMP": work, "USERPROFILE": work}


def _start(spec, work, env):
    """The child, started (not yet sent anything), with the job that holds it on Windows (else None)."""
    args = [spec.python or sys.executable, "-I", "-B", WORKER, os.path.abspath(spec.root), "-", "-"]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "bufsize": 0,
             "cwd": work, "env": environment(work, env)}
    if system.WINDOWS:
        from autograder.sandbox import jobs
        proc = reaper.spawn(lambda: subprocess.Popen(args, creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,
                                                     **pipes))
        try:
            job = jobs.Job(spec.limits.memory_mb, childspec.PROCESS_LIMIT)
            job.assign(proc.pid)
        except OSError:
            proc.kill()
            proc.wait()
            raise
        return proc, job
    limits = {"memory_mb": spec.limits.memory_mb, "cpu_seconds": spec.limits.cpu_seconds,
              "file_limit": childspec.OUTPUT_LIMIT, "open_files": childspec.OPEN_FILES, "memory_fallback": True}
    import resource  # noqa: F401  (imported here, never between fork and exec)
    proc = reaper.spawn(lambda: subprocess.Popen(args, start_new_session=True,
                                                 preexec_fn=lambda: confinement.apply(limits), **pipes))
    return proc, None


def _feed(pipe, data):
    try:
        view = memoryview(data)
        while view:                                       # an unbuffered pipe may take part of it at a time
            view = view[pipe.write(view):]
    except OSError:
        pass                                              # it closed its end or died: its outcome says why
    finally:
        with contextlib.suppress(OSError):
            pipe.close()


def run(spec, request, work, env, start):
    """Run one part's child on ``request`` (the bytes of ``runner.request_bytes``) in ``work``: ``(exit code,
    Streams, timed_out, flooded)``, the child and all it started gone. OSError if it could not be started."""
    proc, job = _start(spec, work, env)
    token = reaper.alive(job.close if job is not None else lambda: os.killpg(proc.pid, signal.SIGKILL))
    response = _Reader(proc.stdout, childspec.RESPONSE_LIMIT, "head")
    output = _Reader(proc.stderr, childspec.OUTPUT_LIMIT, "tail")
    for thread in (response, output):
        thread.start()
    threading.Thread(target=_feed, args=(proc.stdin, request), daemon=True).start()
    deadline = start + spec.limits.timeout
    timed_out = flooded = False
    try:
        while proc.poll() is None:
            if output.total > childspec.OUTPUT_LIMIT:
                flooded = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(min(0.05, max(0.0, deadline - time.monotonic())))
    finally:
        end(proc, job)
        reaper.gone(token)
    for thread in (response, output):
        thread.join(DRAIN_SECONDS)                        # what a process that escaped holds open is not waited for
    for pipe in (proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            pipe.close()
    return proc.returncode, Streams(response, output), timed_out, flooded


def end(proc, job):
    """End the child and everything it started, and reap it."""
    if job is not None:
        job.close()
    else:
        _end_tree(proc.pid)
    with contextlib.suppress(OSError):
        proc.kill()
    proc.wait()
    reaper.reaped(proc)


def _processes():
    """{pid: (parent pid, process group, state)} of every process, from ``ps``; {} if it cannot be run."""
    try:
        listing = reaper.run([PS, "-A", "-o", "pid=,ppid=,pgid=,stat="], capture_output=True, timeout=10,
                             env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}).stdout.decode("ascii", "replace")
    except (OSError, subprocess.SubprocessError):
        return {}
    table = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit():
            table[int(fields[0])] = (int(fields[1]), int(fields[2]), fields[3])
    return table


def _tree(table, pid):
    """``pid``, every process of its process group (the child leads one), and every process below them."""
    found = {p for p, (_, group, _) in table.items() if group == pid} | {pid}
    todo = list(found)
    while todo:
        parent = todo.pop()
        for p, (ppid, _, _) in table.items():
            if ppid == parent and p not in found:
                found.add(p)
                todo.append(p)
    return {p for p in found if p in table and not table[p][2].startswith("Z")}


def _end_tree(pid):
    """Stop the child's tree (a stopped process forks no more), look again until no new one appears, then
    kill them all; again until none is left. The child itself is not reaped here."""
    for _ in range(END_ROUNDS):
        stopped = set()
        while True:
            found = _tree(_processes(), pid) - stopped
            if not found:
                break
            _signal(found, signal.SIGSTOP)
            stopped |= found
        if not stopped:
            return
        _signal(stopped, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        time.sleep(0.01)


def _signal(pids, number):
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, number)

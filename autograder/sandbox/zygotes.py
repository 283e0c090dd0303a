"""The grader's side of the zygotes (``zygote`` is the process itself): one per submission, started at once,
forking each of its parts' children; a ``Template`` forks zygotes for batch.

``Zygote(python, template=None)``, its ``fork(settings, fds)`` (a ``Child`` that quacks like the ``Popen`` the
``reaper`` expects) and ``close()``; ``Template(python)``; ``running(count)`` and ``early(argv)``.
``enabled()`` is false when MYTORCH_GRADER_ZYGOTE=0, and where the Linux sandbox cannot run (macOS has no
SOCK_SEQPACKET, Windows no fork): each part then starts its own Python.
"""
import contextlib
import json
import os
import signal
import socket
import sys

from autograder.sandbox import system

HERE = os.path.dirname(os.path.abspath(__file__))
MESSAGE_LIMIT = 1 << 16
START_SECONDS = 60.0             # the zygote's NumPy import, on a loaded machine
ANSWER_SECONDS = 10.0            # a fork request it does not answer in this time: it is stuck, or stopped
RESTARTS = 2                     # zygotes started again after the first, before going back to one Python a part


def enabled():
    return system.LINUX and os.environ.get("MYTORCH_GRADER_ZYGOTE", "1") != "0"


class ZygoteGone(Exception):
    """The zygote died, stopped answering or answered nonsense; the message says which."""


class Child:
    """A part's child forked by the zygote, as the ``reaper`` and ``runner`` use a ``Popen``: ``pid``,
    ``returncode``, ``poll()``, ``wait(timeout)``. ``lost`` is true if its zygote went away before the child
    ended: its part must be graded again."""

    def __init__(self, generation, pid):
        from autograder.sandbox import reaper
        self.generation, self.pid, self.returncode, self.lost = generation, pid, None, False
        self.cpu_seconds = None          # the CPU time it used, once it ended (None if that could not be read)
        self.started = reaper.start_time(pid)      # its zygote reaps it only when told, so it is still there

    def poll(self):
        if self.returncode is None:
            ended = self.generation.ended(self.pid)
            if ended is not None:
                self.returncode, self.cpu_seconds = ended
            elif not self.generation.alive:
                self.returncode, self.lost = -signal.SIGKILL, True
        return self.returncode

    def await_end(self, seconds):
        """Return once the zygote has reported this child's end (or any other news of it), or ``seconds`` on."""
        generation = self.generation
        with generation.event:
            if self.returncode is None and self.pid not in generation.exits and generation.alive:
                generation.event.wait(seconds)

    def wait(self, timeout=None):
        import subprocess
        import time
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("a part's child", timeout)
            self.await_end(0.05)
        return self.returncode


class _Generation:
    """One zygote process and what it said: started at once (forked by ``template``, a ``Template``, when it
    has one that works), listened to by a thread of its own. ``role``: "zygote", or "template"."""

    def __init__(self, python, template=None, role="zygote"):
        import subprocess
        import threading

        from autograder.sandbox import reaper
        self.event = threading.Condition()
        self.started, self.exits, self.next_id = {}, {}, 0
        self.alive, self.ready, self.failure, self.proc, self.control = False, False, "", None, None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = reaper.HELPER_ENV
        try:
            self.proc = template.fork_zygote(theirs.fileno()) if template is not None else None
            if self.proc is None:
                self.proc = reaper.spawn(lambda: subprocess.Popen(
                    [python, "-I", "-B", os.path.join(HERE, "zygote.py"), str(theirs.fileno()), role], cwd="/",
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                    pass_fds=[theirs.fileno()], start_new_session=True))
        except (OSError, subprocess.SubprocessError) as error:
            ours.close()
            self.failure = f"it could not be started ({error})"
            return
        finally:
            theirs.close()
        self.control, self.alive = ours, True
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self):
        """Read the zygote's messages until it is gone; anything malformed counts as gone."""
        try:
            while True:
                data = self.control.recv(MESSAGE_LIMIT)
                if not data:
                    raise ZygoteGone("it ended")
                message = json.loads(data)
                with self.event:
                    if set(message) == {"ready"} and message["ready"] == self.proc.pid:
                        self.ready = True
                    elif set(message) == {"started", "pid"} and type(message["pid"]) is int and message["pid"] > 0:
                        self.started[message["started"]] = message["pid"]
                    elif set(message) == {"exited", "code"} and type(message["code"]) is int:
                        self.exits[message["exited"]] = message["code"]
                    else:
                        raise ZygoteGone("it sent a message the grader does not know")
                    self.event.notify_all()
        except (OSError, ValueError, TypeError, ZygoteGone) as error:
            self.lose(str(error) or type(error).__name__)

    def lose(self, why):
        with self.event:
            if self.alive:
                self.alive, self.failure = False, why
            self.event.notify_all()

    def wait(self, seconds):
        with self.event:
            self.event.wait(seconds)

    def send(self, message, fds=()):
        try:
            socket.send_fds(self.control, [json.dumps(message).encode()], list(fds))
        except OSError as error:
            self.lose(f"it stopped reading ({error})")

    def ended(self, pid):
        """``(returncode, CPU seconds used)`` of ``pid`` once the zygote reported its end, else None; the zygote
        reaps it then, and not before: until then it is a zombie whose times the kernel still shows."""
        with self.event:
            code = self.exits.pop(pid, None)
        if code is None:
            return None
        from autograder.sandbox import reaper
        used = reaper.cpu_seconds(pid)
        if self.alive:
            self.send({"op": "reap", "pid": pid})
        return code, used

    def fork(self, settings, fds, op="fork"):
        """The pid of a new child (``op`` "zygote": of a new zygote), or None (and ``alive`` false) if this
        process cannot make one."""
        import time
        with self.event:
            self.next_id += 1
            ident = self.next_id
            deadline = time.monotonic() + START_SECONDS
            while self.alive and not self.ready and time.monotonic() < deadline:
                self.event.wait(0.1)
            if not self.ready:
                self.lose(self.failure or "it did not start in time")
                return None
            self.send(dict(settings, op=op, id=ident), fds)
            deadline = time.monotonic() + ANSWER_SECONDS
            while self.alive and ident not in self.started and time.monotonic() < deadline:
                self.event.wait(0.1)
            if ident not in self.started:
                self.lose(self.failure or "it did not answer in time")
                return None
            return self.started.pop(ident)

    def end(self):
        from autograder.sandbox import reaper
        self.lose(self.failure or "it was closed")
        if self.proc is not None:
            reaper.end(self.proc)
        if self.control is not None:
            self.control.close()


@contextlib.contextmanager
def running(count, python=None):
    """``count`` zygotes of ``python`` to fork trusted children from (the solution's), each None when zygotes
    are off (MYTORCH_GRADER_ZYGOTE=0); all ended on leaving."""
    workers = [Zygote(python) if enabled() else None for _ in range(count)]
    try:
        yield workers
    finally:
        for worker in workers:
            if worker is not None:
                worker.close()


def early(argv):
    """A ``Zygote`` of this Python for a plain grade about to parse ``argv``, started before the grader imports
    NumPy and loads the references, so that both happen at once; None when the grade may not use one (no
    zygotes, another ``--python``, ``--run-as``, whose user must first be found unable to change the grader
    modules the zygote loads as root, or only help asked for). It runs no student code, and the same
    interpreter as the grader itself, so starting it before the options are checked exposes nothing more."""
    if not enabled() or any(a.startswith(("--python", "--run-as")) or a in ("-h", "--help") for a in argv):
        return None
    return Zygote(sys.executable)


class Zygote:
    """One submission's zygote, started at once and used by every part of that submission (from any thread):
    ``fork(settings, fds)`` gives a ``Child``, or None once it has given up (the caller then spawns);
    ``close()`` ends it. ``note(text)`` says what went wrong (default: on stderr). ``template``: a ``Template``
    of the same Python to fork it from (and any zygote that replaces it) instead of starting a Python."""

    def __init__(self, python=None, note=None, template=None):
        import threading
        self.python = python or sys.executable
        self.note = note or (lambda text: print(f"note: {text}", file=sys.stderr, flush=True))
        self.lock = threading.Lock()
        self.template = template
        self.restarts, self.current = 0, _Generation(self.python, template)

    def _replace(self, failed):
        """The generation ``failed`` failed: end it, and start another unless too many failed (then give up)."""
        with self.lock:
            if failed is not self.current:
                return
            why = failed.failure or "it stopped answering"
            failed.end()
            if self.restarts >= RESTARTS:
                self.current = None
                self.note(f"the grading worker failed again ({why}); each part now starts its own Python")
                return
            self.restarts += 1
            self.note(f"the grading worker failed ({why}); a new one is started and the parts that were "
                      "running on it are graded again")
            self.current = _Generation(self.python, self.template)

    def fork(self, settings, fds):
        """A ``Child`` running one part with ``settings`` (see ``_child``) on the pipe ends ``fds`` (request,
        response, output), or None when there is no working zygote any more."""
        while True:
            with self.lock:
                generation = self.current
            if generation is None:
                return None
            pid = generation.fork(settings, fds)
            if pid is not None:
                return Child(generation, pid)
            self._replace(generation)

    def lost(self, child):
        """``child`` was lost with its zygote: replace that zygote (once, whichever part notices first)."""
        self._replace(child.generation)

    def close(self):
        with self.lock:
            generation, self.current = self.current, None
        if generation is not None:
            generation.end()


class Template:
    """A zygote that forks zygotes, for batch grading: each submission's ``Zygote(template=...)`` is then a fork
    of it (a few milliseconds) instead of a new Python importing NumPy (~0.3 s of CPU). It is started like a
    zygote and holds exactly what one holds, never forks a part's child and never runs student code, so
    every zygote forked from it starts as a fresh one would; each is still one submission's alone. If it
    fails, zygotes are started as without it. ``close()`` ends it (the zygotes forked from it end with their
    ``Zygote``)."""

    def __init__(self, python=None):
        self.generation = _Generation(python or sys.executable, role="template")

    def fork_zygote(self, control_fd):
        """A ``Child`` for a new zygote on the socket ``control_fd``, or None if the template cannot make one."""
        pid = self.generation.fork({}, [control_fd], op="zygote") if self.generation.alive else None
        return None if pid is None else Child(self.generation, pid)

    def close(self):
        self.generation.end()

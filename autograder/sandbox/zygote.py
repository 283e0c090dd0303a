"""A per-submission process that has imported NumPy once and forks each part's child from that state.

Starting Python and importing NumPy costs each child ~0.15 s, while most parts run a few milliseconds of math.
So for one submission the grader starts one *zygote*::

    python -I -B zygote.py CONTROL_FD

It imports NumPy (``numpy.random`` too) and executes the grader's per-part code once (``worker`` with the
``driver``, ``frames``, ``tracing``, ``places`` and ``ipc`` it loads: functions and tables, the same files
every child ran anyway), and nothing else: no reference data, no grader state, nothing a student may not see.
It freezes those objects out of the garbage collector's reach (a child's collections then leave their pages
shared), makes itself non-dumpable, and only obeys the grader over the control socket (an ``AF_UNIX``
``SOCK_SEQPACKET`` pair, one JSON message per packet):

    grader -> zygote   {"op": "fork", "id": N, ...the child's settings}  + 3 fds (request, response, output)
                       {"op": "reap", "pid": P}     (the grader has seen P's end: the pid may be reused now)
    zygote -> grader   {"ready": pid}   {"started": N, "pid": P}   {"exited": P, "code": returncode}

No student code ever runs in the zygote. As root, it forks each child as the process 1 of a PID namespace
of its own (``_fork``), as ``runner`` starts a spawned one under ``unshare --pid --fork --kill-child``.
Each forked child first closes the control socket and every other fd it inherited, then does what
``runner`` does to a spawned child: a new session (``setsid``), stdin from /dev/null and stdout and stderr
into the output pipe, its working folder and environment, as root an IPC namespace of its own (``ipc``),
the limits on memory, CPU, file size, core dumps and (under ``--run-as``) processes, the sandbox user, and
then the per-part entry, ``worker.main``, which imports the submission's
sources alone, from the pycs its compile child made (``_read_bytecode``, ``worker.source_only``). A child
therefore starts from the zygote's pristine memory: what one part does to its copy of NumPy or anything else
cannot reach the next part.

The trust boundary. The zygote runs as the grader (root under ``--run-as``) and is non-dumpable; the child
runs as the sandbox user, so it cannot trace the zygote, read or write its memory through ``/proc/PID/mem``,
or signal it (and as root it sits in its own PID namespace). It holds no end of the control socket, so it
cannot ask for anything. The zygote reports exits without reaping (``waitid(WNOWAIT)``) until the grader says
so, so a pid the grader may still kill is never reused. Without ``--run-as`` a child runs as you and could
signal the zygote, as it could the grader itself: then, as when the zygote dies or stops answering for any
reason, the grader notices, starts a new zygote and grades the parts that were running again, or after
repeated failures goes back to starting one Python per part; it says so on stderr every time.

Batch grades many submissions with one Python, so it keeps one *template*: a process started exactly as a
zygote (``zygote.py CONTROL_FD template``) that forks zygotes and nothing else:

    grader -> template {"op": "zygote", "id": N}  + 1 fd (the new zygote's control socket)
    template -> grader {"started": N, "pid": P}   {"exited": P, "code": returncode}

The forked zygote makes a session of its own, closes every fd but its control socket and /dev/null, says
``ready`` and serves as any zygote. A submission's zygote then costs a fork (milliseconds) instead of a Python
importing NumPy (~0.3 s of CPU); it is still that submission's alone, and starts from what a started zygote
holds, since the template never forks a part and never runs student code. A template that fails is not
replaced: zygotes are then started as without one.

Grader side: ``Zygote(python, template=None)``, its ``fork(settings, fds)`` (a ``Child`` that quacks like the
``Popen`` the ``reaper`` expects) and ``close()``; ``Template(python)``. ``enabled()`` is false when
MYTORCH_GRADER_ZYGOTE=0.
"""
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")
PR_SET_DUMPABLE = 4
CLONE_NEWPID = 0x20000000
MESSAGE_LIMIT = 1 << 16
START_SECONDS = 60.0             # the zygote's NumPy import, on a loaded machine
ANSWER_SECONDS = 10.0            # a fork request it does not answer in this time: it is stuck, or stopped
RESTARTS = 2                     # zygotes started again after the first, before going back to one Python a part


# ---------------------------------------------------------------- the zygote process (stdlib and NumPy only)

def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _exit_code(pid):
    """The ``Popen.returncode`` of the ended child ``pid`` without reaping it, or None while it runs."""
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None or info.si_pid == 0:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def serve(control, template=False):
    """The zygote's loop: fork on request, report each child's end, reap when told; exit when the grader is gone.
    A zygote forks parts' children ("fork") and nothing else; a ``template`` forks zygotes ("zygote") and
    nothing else."""
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    running, ended = set(), set()
    while True:
        ready = select.select([control, wake_r], [], [])[0]
        if wake_r in ready:
            while True:
                try:
                    if not os.read(wake_r, 512):
                        break
                except BlockingIOError:
                    break
        for pid in sorted(running - ended):
            code = _exit_code(pid)
            if code is not None:
                ended.add(pid)
                control.send(json.dumps({"exited": pid, "code": code}).encode())
        if control not in ready:
            continue
        message, fds, _, _ = socket.recv_fds(control, MESSAGE_LIMIT, 4)
        if not message:                                   # the grader is gone: so are its parts
            for pid in running:
                with _suppress():
                    os.kill(pid, signal.SIGKILL)
            os._exit(0)
        command = json.loads(message)
        if command["op"] == ("zygote" if template else "fork"):
            pid = _fork(new_pid_namespace=not template and bool(command.get("pid_namespace")))
            if pid == 0:                                  # neither returns
                if template:
                    _zygote_child(fds[0] if fds else -1)
                else:
                    _child(command, fds)
            for fd in fds:
                os.close(fd)
            running.add(pid)
            control.send(json.dumps({"started": command["id"], "pid": pid}).encode())
        elif command["op"] == "reap" and command["pid"] in ended:
            os.waitpid(command["pid"], 0)
            running.discard(command["pid"])
            ended.discard(command["pid"])


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        return kind is not None and issubclass(kind, OSError)


def _child(command, fds):
    """In the forked child: confine it as ``runner`` confines a spawned child, then run the per-part entry."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        request, response, output = fds[:3]
        bytecode = fds[3] if len(fds) > 3 else None
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        keep = {0, 1, 2, request, response, bytecode}
        for name in os.listdir("/proc/self/fd"):          # the control socket, the wake pipe, anything else
            if int(name) not in keep:
                with _suppress():
                    os.close(int(name))
        os.chdir(command["work"])
        os.environ.clear()
        os.environ.update(command["env"])
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = None        # it follows TMPDIR, the working folder
        if command.get("cgroup"):                        # as root: the part's memory, all its processes
            _worker()._load("cgroups").join(command["cgroup"])
        ipc = _worker()._load("ipc")
        if command.get("ipc_namespace"):                 # as root, before giving it up (see ipc)
            ipc.fresh_namespace(command["memory_mb"])
        if command.get("hidden") and not ipc.hide(command["hidden"]):
            sys.stderr.write("the grader could not hide the instructor's files from student code\n")
            raise SystemExit(1)
        if command.get("own_proc"):                      # as root: its own processes alone (see ipc)
            ipc.own_proc()
        ipc.own_session_keyring(ipc.keyctl_call())
        import resource
        memory = command["memory_mb"] << 20
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (command["cpu_seconds"], command["cpu_seconds"] + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (command["file_limit"], command["file_limit"]))
        resource.setrlimit(resource.RLIMIT_NOFILE, (command["open_files"], command["open_files"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        user = command.get("user")                        # [uid, gid, processes] under --run-as
        if user is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (user[2], user[2]))
            os.setgroups([])
        if user is not None:
            os.setgid(user[1])
            os.setuid(user[0])
        _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        root = command["root"]
        sys.argv = [WORKER, root, str(request), str(response)]
        if command.get("task") == "compile":
            _compile_sources(root, request, response)
            os._exit(0)
        pycs = _read_bytecode(bytecode, root) if bytecode is not None else None
        _worker().main(root, str(request), str(response), pycs)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        with _suppress():
            import traceback
            traceback.print_exc()
    finally:
        with _suppress():
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _zygote_child(control_fd):
    """In a zygote forked by the template: a new session, no fd but the standard three (/dev/null) and its own
    control socket, and the zygote's loop on that socket. It holds what a started zygote holds, in the state
    the template has kept it in since it started: nothing of any submission ever ran in the template."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for name in os.listdir("/proc/self/fd"):          # the template's socket and wake pipe, anything else
            if int(name) not in (0, 1, 2, control_fd):
                with _suppress():
                    os.close(int(name))
        control = socket.socket(fileno=control_fd)
        control.send(json.dumps({"ready": os.getpid()}).encode())
        serve(control)
    finally:
        os._exit(0)


def _fork(new_pid_namespace=False):
    """``os.fork()``; with ``new_pid_namespace`` the child is the process 1 of a PID namespace of its own, as
    ``unshare --pid --fork`` makes one but without a process between that waits for it: ``unshare`` makes
    the zygote's *next* child the first of a new namespace, and ``setns`` back to the zygote's own namespace
    lets the child after it have a new one too (without it, that child would join the first one's). Without
    the privilege to make one, a plain fork: the namespace is a second line of defence, never required."""
    if not new_pid_namespace:
        return os.fork()
    try:
        own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return os.fork()
    try:
        if _libc().unshare(CLONE_NEWPID) != 0:
            return os.fork()
        pid = os.fork()              # if it fails, the zygote ends: the grader replaces it
        if pid != 0 and _libc().setns(own, CLONE_NEWPID) != 0:
            os._exit(1)              # its next child would share this one's namespace: the grader replaces it
        return pid
    finally:
        os.close(own)                # in the child too (it closes every fd it inherited anyway)


_WORKER = []                     # the per-part entry, ``worker``, with the grader modules it loads: run once


def _worker():
    """``worker.py`` as a module, with ``driver``, ``frames``, ``tracing`` and ``ipc`` loaded: grader code and
    tables only (no state, nothing secret), executed once in the zygote so that no child runs it again."""
    if not _WORKER:
        import importlib.util
        spec = importlib.util.spec_from_file_location("__worker__", WORKER)
        worker = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(worker)
        for name in worker.CHILD_CODE:
            worker._load(name)
        _WORKER.append(worker)
    return _WORKER[0]


# ---- the submission's bytecode: compiled once by a confined child, handed to each part's child

SOURCE_FILES, SOURCE_BYTES, SOURCE_DEPTH = 500, 16 << 20, 16


def _frames():
    return _worker()._load("frames")


def _compile_sources(root, request, response):
    """The compile task, in a confined child: every ``mytorch/**.py`` of ``root`` compiled (never run) into a
    checked hash-based pyc, sent as one ``frames`` message ``{(0, relative path): uint8 array}``. A file that
    does not compile is left out (the part's child compiles it and reports the error as it always did), and
    so is one whose source hash the request names as known for its path: an empty array stands for it (the
    grader has its pyc, and sends it on for that file alone)."""
    import importlib._bootstrap_external as bootstrap
    import importlib.util

    import numpy as np
    known = _known_hashes(request)
    arrays, total, todo = {}, 0, [("mytorch", 0)]
    while todo and len(arrays) < SOURCE_FILES:              # iterative and bounded: the tree is the student's
        folder, depth = todo.pop()
        with os.scandir(os.path.join(root, folder)) as entries:
            for entry in entries:
                relative = f"{folder}/{entry.name}"
                if entry.is_dir(follow_symlinks=False) and depth < SOURCE_DEPTH and entry.name != "__pycache__":
                    todo.append((relative, depth + 1))
                elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                    with open(entry.path, "rb") as f:
                        source = f.read(SOURCE_BYTES - total + 1)
                    total += len(source)
                    if total > SOURCE_BYTES:
                        todo = []
                        break
                    if known.get(relative) == (importlib.util.MAGIC_NUMBER + importlib.util.source_hash(source)).hex():
                        arrays[(0, relative)] = np.zeros(0, dtype=np.uint8)
                        continue
                    try:
                        code = compile(source, entry.path, "exec", dont_inherit=True)
                    except Exception:
                        continue
                    pyc = bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(source), checked=True)
                    arrays[(0, relative)] = np.frombuffer(bytes(pyc), dtype=np.uint8)
    report = [{"status": "ok", "error": "", "where": "", "types": {}, "mutated": []}]
    view = memoryview(_frames().encode(report, arrays))
    while view:
        view = view[os.write(response, view):]
    os.close(response)


def _read_all(fd):
    """Everything the pipe ``fd`` holds until the grader closes it (then closed here)."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _known_hashes(fd):
    """The compile request (from the grader): ``{relative path: magic number and source hash}`` of the
    sources it has pycs of (for a Python of that magic number); {} if there is none."""
    try:
        configs, _ = _frames().decode(_read_all(fd))
        known = configs[0].get("known", {})
    except (ValueError, IndexError, AttributeError):
        return {}
    return known if isinstance(known, dict) else {}


def _read_bytecode(fd, root):
    """In a part's child (already confined): the submission's pycs the grader passed on, ``{source path: pyc}``
    (``worker.source_only`` uses each only while its source still hashes the same); {} if anything is wrong."""
    try:
        _, arrays = _frames().decode(_read_all(fd))
    except ValueError:
        return {}
    pycs = {}
    for (_, relative), array in arrays.items():
        parts = relative.split("/")
        if parts[0] == "mytorch" and all(p not in ("", ".", "..") for p in parts) and relative.endswith(".py"):
            pycs[os.path.join(root, *parts)] = array.tobytes()
    return pycs


def zygote_main(control_fd, role="zygote"):
    _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)           # before anything else: no one traces or reads it
    import faulthandler  # noqa: E401,F401,F811
    import json

    import numpy  # noqa: F401  (the point of it all)
    import numpy.random  # noqa: F401  (imported on first use: 10 ms a part)
    _worker()
    import gc
    gc.freeze()                                           # the children's collections leave these pages shared
    control = socket.socket(fileno=int(control_fd))
    control.send(json.dumps({"ready": os.getpid()}).encode())
    serve(control, template=role == "template")


# ---------------------------------------------------------------- the grader's side

def enabled():
    return os.environ.get("MYTORCH_GRADER_ZYGOTE", "1") != "0"


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


if __name__ == "__main__":
    zygote_main(*sys.argv[1:3])

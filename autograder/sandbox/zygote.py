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

The grader's side (``Zygote``, ``Template``) is ``zygotes``. This file is the process alone: it runs as a
script and imports nothing of the grader's by name (it loads ``worker`` and the code that loads by path).
"""
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
        worker = _worker()
        ipc = worker._load("ipc")
        try:
            worker._load("confinement").apply(command, ipc, worker._load("cgroups"), ipc.keyctl_call(),
                                              lambda: worker._load("landlock").confine(*command["landlock"]))
        except OSError as error:
            sys.stderr.write(f"{error}\n")
            raise SystemExit(1) from None
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


if __name__ == "__main__":
    zygote_main(*sys.argv[1:3])

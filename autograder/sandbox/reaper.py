"""Ending every process a part started, whatever it did to hide (new session, new process group, double fork).

The grading process makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): a process
whose parent dies is re-parented to the grader instead of to init, so nothing a child starts can leave the
grader's tree. When a part ends, ``end`` kills the part's child and every descendant, then every orphan
re-parented to the grader (a process whose parent is the grader but that the grader did not start itself),
and reaps them, until none is left. Under ``--run-as``, ``kill_user`` also kills every process of the sandbox
user (it may have reached a system service), once no part runs as that user any more.

The grader must start every process it runs through ``spawn`` or ``run`` (so it is told apart from an
orphan), and the program embedding it should start no other processes while grading.
"""
import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from autograder.sandbox import ipc, system

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
AS_USER_SECONDS = 30.0           # a helper run as a sandbox user that has not answered by then is killed
_lock = threading.Lock()            # held while starting a process and while sweeping orphans
_ours = {}                          # {pid: Popen} of the processes this module started and has not reaped yet
_subreaper = None
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"      # where the grader's helpers are found, whatever PATH says
HELPER_ENV = {"PATH": SYSTEM_PATH, "HOME": "/", "LANG": "C.UTF-8",   # all a helper (or a zygote) is given
              "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


_interrupted = threading.Event()    # Ctrl+C: no child starts any more
_live = {}                          # token -> what kills one running child at once (a system call or two)


def alive(kill):
    """Record a running child (``kill()`` ends it at once): a token for ``gone``. Killed at once if the grade
    was interrupted meanwhile."""
    token = object()
    _live[token] = kill
    if _interrupted.is_set():
        with contextlib.suppress(Exception):
            kill()
    return token


def gone(token):
    _live.pop(token, None)


def interrupt():
    """Ctrl+C: no child starts from now on, and every running one is killed at once; its part's thread then
    ends it with everything it started and reaps it, as at any part's end."""
    _interrupted.set()
    for kill in list(_live.values()):
        with contextlib.suppress(Exception):
            kill()


def interrupted():
    return _interrupted.is_set()


def become_subreaper():
    """Make this process the reaper of its orphaned descendants (once; True if the kernel agreed). Also make
    it non-dumpable, so a child running as the same user cannot trace it or write its memory."""
    global _subreaper
    if _subreaper is None:
        libc = system.libc() if system.LINUX else None        # Linux's calls: macOS's C library has no prctl
        if libc is None:
            _subreaper = False
        else:
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
            _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


def spawn(start):
    """``start()`` (which starts one process and returns its Popen) with the process recorded as ours, and
    when it started (``proc.started``, see ``start_time``)."""
    with _lock:
        proc = start()
        proc.started = start_time(proc.pid)
        _ours[proc.pid] = proc
    return proc


def tool(name):
    """The path of the system program ``name`` (useradd, unshare) on ``SYSTEM_PATH``, or None. Never looked
    up on the grader's PATH, which may name a folder a sandbox user can write (it runs as root)."""
    return shutil.which(name, path=SYSTEM_PATH)


def run(args, timeout=None, limit=None, **options):
    """``subprocess.run(args, timeout=timeout, **options)`` for a helper of the grader's own (a probe, find,
    useradd), started through ``spawn``: a part ending meanwhile does not take it for an orphan and kill it.
    Its environment is ``HELPER_ENV`` unless ``env`` is given: nothing of the grader's own (a helper may
    run as a sandbox user). On timeout it is killed with everything it started and
    ``subprocess.TimeoutExpired`` raised, as ``subprocess.run`` does (which would wait for ever on a process
    it started that keeps its pipes open). ``limit``: with ``capture_output``, the bytes kept of each output
    of a helper that runs code the grader does not trust (a probe of a Python as a sandbox user): it writes
    to files it may make no larger (``RLIMIT_FSIZE``), read back here, rather than to pipes read whole."""
    options.setdefault("env", HELPER_ENV)
    with contextlib.ExitStack() as files:
        kept = []                                         # the files it writes to, with a limit
        if options.pop("capture_output", False):
            if limit is None:
                options.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            else:
                kept = [files.enter_context(tempfile.TemporaryFile()) for _ in range(2)]
                options.update(stdout=kept[0], stderr=kept[1], preexec_fn=_bounded(options.get("preexec_fn"), limit))
        proc = spawn(lambda: subprocess.Popen(args, **options))
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            if system.LINUX:
                _sweep_once([proc.pid])  # it and all it started: one holding its pipes would block the read
            else:
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=1.0)
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait()
            raise
        finally:
            reaped(proc)
        if kept:
            out, err = (_read_back(file, limit) for file in kept)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def _bounded(preexec_fn, limit):
    import resource  # POSIX: here in the parent, never after fork

    def start():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        if preexec_fn is not None:
            preexec_fn()
    return start


def _read_back(file, limit):
    file.seek(0)
    return file.read(limit)


def reaped(proc):
    """``proc`` (from ``spawn``) was waited for by its caller: its pid is no longer ours, unless it went to a
    process started since (a pid is given again once its process is reaped)."""
    with _lock:
        if _ours.get(proc.pid) is proc:
            del _ours[proc.pid]


_children_files = []            # [True or False], once known


def children_files():
    """True where /proc/PID/task/TID/children exists (CONFIG_PROC_CHILDREN, in most Linux kernels)."""
    if not _children_files:
        _children_files.append(os.path.exists("/proc/thread-self/children"))
    return _children_files[0]


def _children(pid):
    """The children of every thread of ``pid`` (/proc/PID/task/TID/children); [] once it is gone."""
    found = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    found += [int(child) for child in f.read().split()]
    return found


def start_time(pid):
    """When process ``pid`` started (clock ticks after boot, field 22 of ``/proc/PID/stat``), None once it is gone.
    With it a pid names one process: the kernel gives a pid again once its process is reaped (pids wrap at
    ``/proc/sys/kernel/pid_max``, 32768 on many machines, within minutes of grading), never with the same start."""
    fields = _stat(pid)
    try:
        return int(fields[19])
    except (TypeError, ValueError, IndexError):
        return None


def _stat(pid):
    """The fields of ``/proc/PID/stat`` after the command name (the state letter first), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()
    except OSError:
        return None


def _state(pid):
    """``pid``'s state letter ("Z" for a zombie), None once it is gone."""
    fields = _stat(pid)
    return fields[0].decode("ascii", "replace") if fields else None


def cpu_seconds(pid):
    """The user and system CPU time of process ``pid`` and all its threads, a zombie's too (its parent has not
    reaped it), or None. A process 1 of a PID namespace ignores the SIGXCPU of its soft CPU limit, so the
    kernel's SIGKILL at the hard limit ends it: this tells that end from the memory limit's."""
    fields = _stat(pid)
    try:
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (TypeError, ValueError, IndexError):
        return None


def _below(roots, table=None):
    """{pid: state letter} of ``roots`` and every process below them that is still there: read from the
    children files of these processes alone, where ``table`` (``_table``, without those files) holds every
    process of the machine."""
    if table is not None or not children_files():
        table = _table() if table is None else table
        return {pid: table[pid][1] for pid in _descendants(table, roots) if pid in table}
    found, todo = {}, list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found[pid] = _state(pid)
            if found[pid] is not None:
                todo += _children(pid)
    return {pid: state for pid, state in found.items() if state is not None}


def _table():
    """{pid: (parent pid, state letter)} of every process, from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(name)
            if fields and len(fields) > 1:            # else it ended while we looked
                table[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
    return table


def _descendants(table, roots):
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def tree(pid):
    """``pid`` and every process below it (grandchildren whose parent ended are below the grader, not it)."""
    return set(_below([pid]))


def _kill(pids):
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _sweep_once(roots, started=None):
    """Kill ``roots``, the orphans and all their descendants; reap the orphans. True when none was alive.
    ``started``: {root: its start time}; a root started at another time is another process that took its pid
    (its own was reaped meanwhile, by its zygote or as an orphan), left alone with its descendants."""
    me = os.getpid()
    with _lock:
        if started is not None:
            roots = [pid for pid in roots if start_time(pid) == started.get(pid)]
        table = None if children_files() else _table()
        mine = _children(me) if table is None else [pid for pid, (ppid, _) in table.items() if ppid == me]
        orphans = {pid for pid in mine if pid not in _ours}
        alive = {pid for pid, state in _below(set(roots) | orphans, table).items() if state != "Z"}
        _kill(alive)
        for pid in orphans:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    return not alive and not orphans


def end(proc, budget=10.0):
    """Kill ``proc`` (a Popen from ``spawn``, or a zygote's ``Child``) and everything it started; reap them all."""
    deadline = time.monotonic() + budget
    if proc.returncode is None:                       # not reaped by us: its pid is its own if its start is
        _sweep_once([proc.pid], {proc.pid: proc.started} if hasattr(proc, "started") else None)
    with contextlib.suppress(Exception):
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    reaped(proc)
    end_orphans(max(0.1, deadline - time.monotonic()))


def _clear_keys(keyctl):
    """In the helper, as the user: empty every keyring of its uid that outlives its processes (the user
    keyring, the user session keyring, the persistent one kept for days and across a uid given again). A
    session keyring of the helper's own first, so that the one it inherited (root's) is never touched."""
    if not ipc.own_session_keyring(keyctl):
        return
    persistent = keyctl(ipc.KEYCTL_GET_PERSISTENT, -1, ipc.KEY_SPEC_SESSION_KEYRING)
    if persistent > 0:
        keyctl(ipc.KEYCTL_CLEAR, persistent)
    keyctl(ipc.KEYCTL_CLEAR, ipc.KEY_SPEC_USER_KEYRING)
    keyctl(ipc.KEYCTL_CLEAR, ipc.KEY_SPEC_USER_SESSION_KEYRING)


def kill_user(user):
    """Kill every process of ``user`` (a pwd entry), then empty the keyrings of its uid (``_clear_keys``).

    First as root, each process whose real uid is the user's (``_kill_as_root``): one that does not fork is then
    gone before anything of the grader runs as the user, so it never sees (or stops, or traces) the helper
    that follows. Then a short-lived helper takes that uid, kills -1 and clears the keyrings: kill(-1) reaches
    in one call what forked meanwhile, and on Linux spares the caller, which goes on to the keyrings while
    every other process of the user holds a pending SIGKILL and none of them returns to its code."""
    if user is None or user.pw_uid == 0:
        return
    _kill_as_root(user.pw_uid)
    keyctl = ipc.keyctl_call()

    def kill_then_clear():
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:                    # none left to signal
            pass
        _clear_keys(keyctl)
    as_user(user, kill_then_clear)
    end_orphans()


def _kill_as_root(uid):
    """SIGKILL every process whose real uid is ``uid``."""
    for pid in processes_of(uid):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def processes_of(uid):
    """The pids of the processes whose real uid is ``uid`` now."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and real_uid(name) == uid]


def real_uid(pid):
    """The real uid of process ``pid`` (from its status: a non-dumpable process's /proc entries belong to root,
    and the folder's owner is its effective uid), or None if it is gone."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        fd = os.open(f"/proc/{pid}/status", os.O_RDONLY)  # one read, no file object: it is called per process
        try:
            status = os.read(fd, 4096)
        finally:
            os.close(fd)
        return int(status[status.index(b"\nUid:") + 5:].split(None, 1)[0])
    return None


def as_user(user, action, seconds=AS_USER_SECONDS):
    """``action()`` in a short-lived child that has become ``user`` (a pwd entry, no supplementary groups, as a
    grading child does): the bytes it returned (b"" for None), or None if it raised, was killed, or had not
    answered after ``seconds`` (a process of the user may stop it with SIGSTOP once it has the user's uid: it is
    then killed, and the grader goes on). Forked under the lock, so that no sweep takes it for an orphan;
    ``action`` should make system calls alone (this process has threads)."""
    read_end, write_end = os.pipe()
    status = None
    with _lock:
        pid = os.fork()
        if pid == 0:                                  # the helper: only system calls, then out
            code = 1
            try:
                os.close(read_end)
                os.setgroups([])
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)
                os.write(write_end, action() or b"")
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        said, deadline = b"", time.monotonic() + seconds
        with os.fdopen(read_end, "rb", buffering=0) as answer:
            while select.select([answer], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = answer.read(1 << 16)
                if not chunk:
                    break
                said += chunk
            else:                                     # no answer in time: stopped, or stuck
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            status = os.waitpid(pid, 0)[1]
    return said if status == 0 else None


def end_orphans(budget=5.0):
    """Kill and reap every orphan re-parented to the grader (at the end of a run). Linux's alone: elsewhere no
    orphan comes back to the grader, and ``portable`` ends each part's processes itself."""
    if not system.LINUX:
        return
    deadline = time.monotonic() + budget
    while not _sweep_once([]) and time.monotonic() < deadline:
        time.sleep(0.01)

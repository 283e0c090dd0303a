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
"""
import contextlib
import dataclasses
import os
import resource
import select
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import types

import numpy as np

from autograder.sandbox import cgroups, fairness, frames, interpreter, ipc, reaper, tree, untrusted

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
OUTPUT_LIMIT = 1 << 20          # what a child may print, and the size of any file it writes: 1 MiB
RESPONSE_LIMIT = 16 << 20       # the most the parent will read back
PROCESS_LIMIT = 128             # processes a child may start as the sandbox user (under --run-as)
OPEN_FILES = 256                # files each of its processes may hold open: a memfd or a pipe holds memory
                                # that no address-space limit counts (each memfd at most OUTPUT_LIMIT)
DRAIN_SECONDS = 2.0             # after the child is gone, how long to wait for the pipes to close
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue")   # where any user may leave files, and
SHARED_PARENTS = ("/", "/var", "/run", "/dev")                  # any folder below these that any user may write
SHARED_DEPTH = 4                # levels of root's shared folders inside them (/tmp/.X11-unix) looked into


@dataclasses.dataclass
class Outcome:
    """What came back from a child: per-case reports and arrays, or why nothing usable came back."""
    reports: list = None
    arrays: dict = dataclasses.field(default_factory=dict)
    failure: str = ""           # non-empty: the whole part failed, and this says why
    output: str = ""            # the tail of what the child printed
    seconds: float = 0.0
    starved: bool = False       # it ran out of time having waited for a CPU longer than it ran (``fairness``)


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
                clear_user(user)                       # anything that reached outside the grader's tree
_work_dirs = set()              # children's working folders not removed yet
_hidden = []                    # folders no child run as a sandbox user may see (``hide``)


def hide(folders):
    """From now on, every child run as a sandbox user has an empty folder over each of ``folders`` (``ipc.hide``
    in its own mount namespace): the instructor's files a sandbox user could read (``cli.hide_from_users``).
    A folder inside another (the report in the class folder) is hidden with it."""
    folders = set(_hidden) | set(folders)
    _hidden[:] = sorted(f for f in folders if not any(interpreter.within(f, g) for g in folders if g != f))


_can_hide = []                   # [True or False], once known


def can_hide():
    """True when ``ipc.hide`` works here (as root, where the kernel lets this process make a mount namespace and
    mount a tmpfs in it), unless MYTORCH_GRADER_MOUNT_NAMESPACE=0: tried once, in a child over a folder of its
    own."""
    if not _can_hide:
        works = False
        if ipc._libc is not None and os.geteuid() == 0 and os.environ.get("MYTORCH_GRADER_MOUNT_NAMESPACE", "1") != "0":
            folder = tempfile.mkdtemp(prefix="mytorch-hide-")
            try:
                with open(os.path.join(folder, "seen"), "w"):
                    pass
                child = reaper.spawn(lambda: types.SimpleNamespace(pid=os.fork()))   # no part's end kills it
                if child.pid == 0:
                    try:
                        os._exit(0 if ipc.hide([folder]) and not os.listdir(folder) else 1)
                    finally:                          # whatever it raised, the copy of the grader goes no further
                        os._exit(1)
                try:
                    works = os.waitstatus_to_exitcode(os.waitpid(child.pid, 0)[1]) == 0
                finally:
                    reaper.reaped(child)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, "seen"))
                os.rmdir(folder)
        _can_hide.append(works)
    return _can_hide[0]


def _hidden_from(user):
    """The folders hidden from a child run as ``user`` (a sandbox user; none for the grader's own)."""
    return list(_hidden) if user is not None else []


def _tasks_of(uid):
    """How many tasks (processes and threads) ``uid`` runs now: what RLIMIT_NPROC counts."""
    count = 0
    for pid in reaper.processes_of(uid):
        with contextlib.suppress(OSError):
            count += len(os.listdir(f"/proc/{pid}/task"))
    return count


def _limits(memory_mb, cpu_seconds, user, switch_user=True, group=None):
    # RLIMIT_NPROC caps the tasks of the whole uid, so a fork bomb in one part would stop every other part
    # of the same user from starting: each child may start PROCESS_LIMIT tasks beyond those running now.
    processes = _tasks_of(user.pw_uid) + PROCESS_LIMIT if user is not None else None
    own_ipc = ipc.wanted()
    own_proc = user is not None and ipc.proc_wanted()
    hidden = _hidden_from(user)
    keyctl = ipc.keyctl_call()

    def apply():
        cgroups.join(group)                               # as root: the part's memory, all its processes
        if own_ipc:                                       # as root, before giving it up
            ipc.fresh_namespace(memory_mb)
        if hidden and not ipc.hide(hidden):
            raise OSError("the grader could not hide the instructor's files from student code")
        if own_proc:                                      # as root: its own processes alone (see ipc)
            ipc.own_proc()
        ipc.own_session_keyring(keyctl)
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT, OUTPUT_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
        if user is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
            os.setgroups([])
            if switch_user:                               # else unshare switches, inside the new namespace
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)
    return apply


_unshare = []                   # [path to unshare, or None], once known


def pid_namespace():
    """``unshare`` when a PID namespace can be made here (as root, util-linux present), else None. In one, the
    child is process 1 and the kernel kills everything in it when the child ends: a second line of defence
    behind ``reaper``, never required (Gradescope images may lack it). MYTORCH_GRADER_PID_NAMESPACE=0 turns
    it off."""
    if not _unshare:
        wanted = os.geteuid() == 0 and os.environ.get("MYTORCH_GRADER_PID_NAMESPACE", "1") != "0"
        path = reaper.tool("unshare") if wanted else None
        if path is not None:
            try:
                probe = reaper.run([path, "--pid", "--fork", "--kill-child", "true"], capture_output=True,
                                       timeout=10)
                path = path if probe.returncode == 0 else None
            except (OSError, subprocess.SubprocessError):
                path = None
        _unshare.append(path)
    return _unshare[0]


_mount_proc = []                # [True or False], once known


def mount_proc(unshare):
    """True when ``unshare --mount-proc`` works here (as root, where a proc filesystem can be mounted)."""
    if not _mount_proc:
        try:
            probe = reaper.run([unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "true"],
                               capture_output=True, timeout=10)
            _mount_proc.append(probe.returncode == 0)
        except (OSError, subprocess.SubprocessError):
            _mount_proc.append(False)
    return _mount_proc[0]


def cpu_limit(timeout):
    """A child's soft limit on CPU seconds (RLIMIT_CPU; the hard one is a second more) for a part's ``timeout``."""
    return int(timeout) + 1


def _signal_reason(code, memory_mb, timeout, cpu_seconds=None):
    """Why the child ended by signal ``-code``. A SIGKILL once it had used its soft CPU limit (``cpu_seconds``,
    when known) is the CPU limit's: a process 1 of a PID namespace never gets the SIGXCPU before it."""
    name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
    if name == "SIGKILL" and cpu_seconds is not None and cpu_seconds >= cpu_limit(timeout):
        name = "SIGXCPU"
    reasons = {"SIGXCPU": f"used more than {timeout} s of CPU time (an infinite loop?)",
               "SIGKILL": f"was killed (out of memory? the limit is {memory_mb} MiB)",
               "SIGSEGV": "crashed with a segmentation fault",
               "SIGXFSZ": f"wrote a file larger than {OUTPUT_LIMIT >> 20} MiB"}
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
                if self.response_total <= RESPONSE_LIMIT:
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


def _fork(zygote, root, work, fds, memory_mb, timeout, start, user, out_w, task, bytecode, group=None):
    """The child forked by ``zygote`` with the settings ``_start`` gives a spawned one, or None without one.
    ``task``: "part" (the worker) or "compile" (``zygote.compiled``); ``bytecode``: what that gave, if any."""
    if zygote is None:
        return None
    settings = {"root": os.path.abspath(root), "work": work, "env": _env(work, timeout, start),
                "memory_mb": memory_mb, "cpu_seconds": cpu_limit(timeout), "file_limit": OUTPUT_LIMIT,
                "open_files": OPEN_FILES, "pid_namespace": pid_namespace() is not None,
                "user": None if user is None else [user.pw_uid, user.pw_gid, _tasks_of(user.pw_uid) + PROCESS_LIMIT],
                "task": task, "ipc_namespace": ipc.wanted(), "cgroup": group,
                "hidden": _hidden_from(user), "own_proc": user is not None and ipc.proc_wanted()}
    extra = []
    if bytecode:
        code_r, code_w = os.pipe()
        threading.Thread(target=_feed, args=(code_w, bytecode), daemon=True).start()
        extra = [code_r]
    try:
        return zygote.fork(settings, list(fds) + [out_w] + extra)
    finally:
        for fd in extra:
            os.close(fd)


def _start(python, root, work, fds, memory_mb, timeout, start, user, out_w, group=None):
    env = _env(work, timeout, start)
    args = [python, "-I", "-B", WORKER, os.path.abspath(root)] + [str(fd) for fd in fds]
    unshare = pid_namespace()
    if unshare is not None:
        who = ["--setgid", str(user.pw_gid), "--setuid", str(user.pw_uid)] if user is not None else []
        # the /proc that _limits mounted is of the grader's PID namespace (it runs before unshare makes the
        # child's): a proc of the child's own namespace over it, where this unshare can mount one
        proc = ["--mount-proc"] if user is not None and ipc.proc_wanted() and mount_proc(unshare) else []
        args = [unshare, "--pid", "--fork", "--kill-child"] + proc + who + ["--"] + args
    limits = _limits(memory_mb, cpu_limit(timeout), user, switch_user=unshare is None, group=group)
    return reaper.spawn(lambda: subprocess.Popen(
        args, cwd=work, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w, env=env, pass_fds=fds,
        start_new_session=True, preexec_fn=limits))


def run_child(root, configs, inputs_list, timeout=20.0, memory_mb=1024, user=None, python=None, zygote=None,
              task="part", bytecode=None):
    """Run the worker on ``root``'s mytorch for these cases. ``user``: a pwd entry to run as (when root);
    ``python``: the interpreter for the child (default: the grader's own); ``zygote``: the submission's
    ``zygote.Zygote`` to fork the child from (else, or once it has given up, a new Python is started), with
    ``bytecode`` (from ``compiled``) handed to the child. A part whose zygote died under it is graded again."""
    for _ in range(2):
        outcome = _run_child(root, configs, inputs_list, timeout, memory_mb, user, python, zygote, task, bytecode)
        if outcome is not None:
            return outcome
    if task != "part":
        return Outcome(failure="could not be run: its zygote failed")
    return _run_child(root, configs, inputs_list, timeout, memory_mb, user, python, None, task, None)


def compiled(root, timeout=20.0, memory_mb=1024, user=None, zygote=None, known=None):
    """The bytecode of ``root``'s mytorch, compiled (never run) once by a child confined like a part's, checked
    and re-encoded here, for ``run_child(bytecode=...)``; None if there is no zygote or anything failed.
    ``known``: ``{relative path: pyc}`` of trusted sources (``known_sources``); the child skips a file with
    the same bytes as one of them, and its pyc goes along instead (a part's child uses a pyc only for the
    source it was compiled from, so nothing the child says can attach one to other code). Only for such a
    file: the part's child holds what it is sent where student code can read it, so the solution's pyc of a
    file the submission lacks or changed would hand it the solution."""
    if zygote is None:
        return None
    known = known or {}
    hashes = {relative: bytes(pyc[:4] + pyc[8:16]).hex() for relative, pyc in known.items()}   # magic, source
    try:
        outcome = run_child(root, [{"known": hashes}], [{}], timeout, memory_mb, user, zygote=zygote, task="compile")
    except OSError:             # the grader's own (no space for a work folder, say): each part's child compiles
        return None
    if outcome.failure:
        return None
    arrays = {}
    for key, array in (outcome.arrays or {}).items():
        if array.dtype == "u1" and array.ndim == 1 and array.size:
            arrays[key] = array
        elif array.dtype == "u1" and array.ndim == 1 and key[1] in known:     # empty: the same as the known one
            arrays[key] = np.frombuffer(known[key[1]], dtype=np.uint8)
    return frames.encode([], arrays) if arrays else None


KNOWN_BYTES = 1 << 20           # the largest trusted source (or pyc of one) read here
_compiled_here = {}             # sha256 of a trusted source -> the checked hash-based pyc of it
_compiled_lock = threading.Lock()
# pycs of trusted sources kept between runs, named by the sha256 of the source: in the grader's own bytecode
# folder (hidden from every child under --run-as, as the grader's bytecode is), in a folder of the grader's
# user alone. Whoever could write there could write the grader's own bytecode (which Python runs).
KNOWN_CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", "known")


def known_sources(checkout, user=None):
    """``{relative path ("mytorch/nn/rnn_cell.py"): pyc}`` (checked hash-based) of the ``.py`` files of
    ``checkout``'s mytorch (the instructor's solution beside the grader), compiled here from the bytes read,
    once per content in this process. Never taken from its ``__pycache__``: a pyc there that Python would
    take by its recorded mtime and size can still hold other code (copied with its times kept, or written
    by whoever could write there), and it would be graded in place of the source. {} if there is none, or
    if ``user`` (a pwd entry) could change any of it. A submission's handout copies of those files are most
    of it, and compiling them was most of the compile child's time."""
    import hashlib
    package = os.path.join(checkout, "mytorch")
    if not os.path.isfile(os.path.join(package, "__init__.py")):
        return {}
    if user is not None:
        from autograder.sandbox import isolation
        if isolation.writable_by([package], user):
            return {}
    found = {}
    try:
        for rel, folder, dirs, files in tree.walk(package, 16, 5000):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in (n for n in files if n.endswith(".py")):
                source = _read_regular(name, folder)
                key = hashlib.sha256(source).digest()
                with _compiled_lock:
                    if key not in _compiled_here:
                        path = os.path.normpath(os.path.join(package, rel, name))
                        _compiled_here[key] = _kept_pyc(key, source) or _keep_pyc(key, _compiled_pyc(path, source))
                found["/".join(["mytorch"] + [p for p in rel.split(os.sep) if p != "."] + [name])] = \
                    _compiled_here[key]
    except (OSError, SyntaxError, ValueError, tree.TreeError):
        return {}
    return found


def _read_regular(name, folder):
    """The bytes of the regular file ``name`` in the folder open as ``folder``; OSError for anything else."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > KNOWN_BYTES:
            raise OSError(f"{name} is not a regular file of at most {KNOWN_BYTES} bytes")
        return f.read(KNOWN_BYTES)


def _cache_folder(create=False):
    """An fd of ``KNOWN_CACHE`` (made if ``create``) if it is a folder of this process's user that no one else
    may read or write, in a bytecode folder of that user or root's that no one else may write; else None."""
    if sys.implementation.cache_tag is None:       # a Python that keeps no bytecode
        return None
    bytecode, name = os.path.split(KNOWN_CACHE)
    try:
        if create:
            make_bytecode_folder(bytecode)
            with contextlib.suppress(FileExistsError):
                os.mkdir(KNOWN_CACHE, 0o700)
        parent = os.open(bytecode, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(parent)
        if info.st_uid not in (os.geteuid(), 0) or info.st_mode & 0o022:
            return None
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError:
        return None
    finally:
        os.close(parent)
    info = os.fstat(fd)
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def make_bytecode_folder(folder):
    """``folder`` (a ``__pycache__``) made if missing, writable by its owner alone whatever the umask (which
    can only take bits away): made by Python under a umask of 0 it would be anyone's, and what is written
    there is what Python runs."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o755)


def _cache_name(key):
    return f"{key.hex()}.{sys.implementation.cache_tag}.pyc"


def _kept_pyc(key, source):
    """The pyc of ``source`` (sha256 ``key``) kept by an earlier run, if it is one: this Python's magic, a
    checked hash-based pyc of those bytes, a code object; else None."""
    import importlib.util
    import marshal
    import types
    folder = _cache_folder()
    if folder is None:
        return None
    try:
        pyc = _read_regular(_cache_name(key), folder)
        code = marshal.loads(pyc[16:])
    except (OSError, EOFError, ValueError, TypeError):
        return None
    finally:
        os.close(folder)
    checked_hash = (3).to_bytes(4, "little")              # flags: hash-based, checked against the source
    header = importlib.util.MAGIC_NUMBER + checked_hash + importlib.util.source_hash(source)
    return pyc if pyc[:16] == header and isinstance(code, types.CodeType) else None


def _keep_pyc(key, pyc):
    """``pyc`` (of the source of sha256 ``key``), kept for later runs where the cache folder can be had."""
    folder = _cache_folder(create=True)
    if folder is None:
        return pyc
    temporary = f".{_cache_name(key)}.{os.getpid()}.{threading.get_ident()}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(pyc)
        os.replace(temporary, _cache_name(key), src_dir_fd=folder, dst_dir_fd=folder)   # whole, or not at all
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
    finally:
        os.close(folder)
    return pyc


def _compiled_pyc(path, source):
    import importlib._bootstrap_external as bootstrap
    import importlib.util
    code = compile(source, path, "exec", dont_inherit=True, optimize=0)     # as a child runs: asserts kept
    return bytes(bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(source), checked=True))


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


def _run_child(root, configs, inputs_list, timeout, memory_mb, user, python, zygote, task, bytecode):
    start = time.monotonic()
    reaper.become_subreaper()
    request = request_bytes(configs, inputs_list)
    work = tempfile.mkdtemp(prefix="mytorch-work-")      # 0700: under --run-as, its user's alone
    _work_dirs.add(work)
    fds = []
    group = cgroups.make(memory_mb)                    # None where memory cgroups cannot be had
    _starting(user)
    try:
        if user is not None:
            os.chown(work, user.pw_uid, user.pw_gid)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        fds = [req_w, resp_r, out_r]
        try:
            proc = _fork(zygote, root, work, [req_r, resp_w], memory_mb, timeout, start, user, out_w, task, bytecode,
                         group)
            if proc is None:
                proc = _start(python or sys.executable, root, work, [req_r, resp_w], memory_mb, timeout, start, user,
                              out_w, group)
        except (OSError, subprocess.SubprocessError) as error:
            who = f" as user {user.pw_name}" if user is not None else ""
            return Outcome(failure=f"could not be run: the grader failed to start Python{who} ({error})")
        finally:
            for fd in (req_r, resp_w, out_w):
                os.close(fd)
        threading.Thread(target=_feed, args=(req_w, request), daemon=True).start()
        fds = [resp_r, out_r]
        pipes = _Pipes(resp_r, out_r)
        deadline = start + timeout
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
            if pipes.output_total > OUTPUT_LIMIT:
                flooded = True
                break
        starved = timed_out and fairness.starved(proc.pid, timeout)     # read before it is killed
        lost = getattr(proc, "lost", False)            # its zygote died under it (so no one reaped it)
        if lost:
            proc.returncode = None                     # kill it with its tree (if its pid is still its own)
        reaper.end(proc)                               # the child and everything it started are gone
        if lost:                                       # grade the part again
            pipes.close()
            fds = []
            zygote.lost(proc)
            return None
        drain_until = time.monotonic() + DRAIN_SECONDS
        while pipes.open and time.monotonic() < drain_until:
            pipes.read(0.05)
        pipes.close()
        fds = []
        outcome = _outcome(_unshare_passed_on(proc, pipes), pipes, timed_out, flooded, len(configs), memory_mb,
                           timeout, start, getattr(proc, "cpu_seconds", None))
        outcome.starved = starved
        return outcome
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        _ended(user)
        cgroups.remove_soon(group)                     # its processes are gone
        tree.remove(work)
        _work_dirs.discard(work)


def clear_user(user):
    """End every process of ``user`` (a pwd entry) and remove all it left: its System V IPC objects and
    whatever it owns in the shared temporary folders (``shared_folders``, POSIX shared memory included).
    Call only when no part runs as ``user``."""
    if user is None or user.pw_uid == 0:
        return
    reaper.kill_user(user)
    ipc.remove_owned_by(user.pw_uid)
    _remove_owned(user.pw_uid)


def shared_folders():
    """The shared temporary folders of this machine, each once: the temporary folder, SHARED_TEMP, and every
    folder directly below SHARED_PARENTS that any user may write (/run/lock, /var/crash, ...)."""
    fixed = {tempfile.gettempdir(), *SHARED_TEMP}
    candidates = list(fixed)
    for parent in SHARED_PARENTS:
        with contextlib.suppress(OSError), os.scandir(parent) as entries:
            candidates += [entry.path for entry in entries]
    found = set()
    for top in candidates:
        with contextlib.suppress(OSError):
            info = os.stat(top)                               # a link (/var/lock) counts as where it leads
            if stat.S_ISDIR(info.st_mode) and (top in fixed or info.st_mode & stat.S_IWOTH):
                found.add(os.path.realpath(top))
    return sorted(found)


def _remove_owned(uid):
    for top in shared_folders():
        _remove_owned_in(top, uid, SHARED_DEPTH)


def _remove_owned_in(folder, uid, depth):
    """Remove what ``uid`` owns in ``folder``, and in the folders there that any user may write but only their
    owner (root) may rename: a shared folder inside a shared folder (sticky, so nobody can swap it)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid:
                tree.remove(entry.path)
            elif (depth > 0 and stat.S_ISDIR(info.st_mode) and info.st_uid == 0
                  and info.st_mode & stat.S_IWOTH and info.st_mode & stat.S_ISVTX):
                _remove_owned_in(entry.path, uid, depth - 1)


def free_space(user=None):
    """Delete what children left on disk: their working folders and, under ``--run-as``, everything the
    sandbox user owns in the shared temporary folders. Call only once every child is dead."""
    for work in list(_work_dirs):
        tree.remove(work)
    if user is not None and user.pw_uid != 0:
        _remove_owned(user.pw_uid)


UNSHARE_KILLED = b"unshare: sigprocmask unblock failed: Invalid argument"


def _unshare_passed_on(proc, pipes):
    """The child's exit status. A spawned worker runs under ``unshare --fork``, which ends as its child did; but
    util-linux 2.38's cannot pass on a SIGKILL (the memory cgroup's, the hard CPU limit's): it says so and exits
    with 1. That is read as the SIGKILL it was, and the line is dropped from the output shown."""
    said = pipes.output.rstrip()
    if (proc.returncode == 1 and isinstance(proc, subprocess.Popen) and proc.args[0] == pid_namespace()
            and said.endswith(UNSHARE_KILLED)):
        del pipes.output[len(said) - len(UNSHARE_KILLED):]
        return -signal.SIGKILL
    return proc.returncode


def _outcome(code, pipes, timed_out, flooded, cases, memory_mb, timeout, start, cpu_seconds=None):
    outcome = Outcome(output=untrusted.output_tail(pipes.output), seconds=time.monotonic() - start)
    if timed_out:
        outcome.failure = f"did not finish within {timeout:g} s (an infinite loop, or far too slow)"
    elif flooded or pipes.output_total > OUTPUT_LIMIT:
        outcome.failure = f"printed more than {OUTPUT_LIMIT >> 20} MiB of output; remove debugging prints"
    elif pipes.response_total > RESPONSE_LIMIT:
        outcome.failure = f"returned more than {RESPONSE_LIMIT >> 20} MiB of results"
    elif not pipes.response:
        if code is not None and code < 0:
            outcome.failure = _signal_reason(code, memory_mb, timeout, cpu_seconds)
        else:
            outcome.failure = (f"exited with code {code} before returning its results "
                               "(does the code call sys.exit, os._exit or exit?)")
    else:
        try:
            outcome.reports, outcome.arrays = read_response(bytes(pipes.response), cases)
        except Exception as error:                      # anything malformed: the part fails, grading goes on
            outcome.failure = f"returned results that could not be read ({untrusted.text(str(error), 300)})"
    return outcome

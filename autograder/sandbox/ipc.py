"""System V IPC and POSIX shared memory: what a child makes there must not outlive its part; and the rest of
what a child would otherwise share with the machine: its ``/proc`` (``own_proc``) and the kernel's keyrings.

A shared memory segment, semaphore set or message queue belongs to the kernel, not to the process that made
it: killing the process leaves it (and the memory it pins, which no per-process limit counts) until someone
removes it. Two defences, the first where it can be had, the second always under ``--run-as``:

* ``fresh_namespace`` (as root, called in the child just before it starts) gives the child an IPC namespace
  of its own, with limits on what it may make there (``kernel.shmall``/``shmmax`` to its memory limit, a few
  segments and queues). The kernel destroys every object in it when the child's last process ends. Never
  required: MYTORCH_GRADER_IPC_NAMESPACE=0 turns it off, and it is simply skipped where the kernel refuses.
* ``remove_owned_by(uid)`` (as root, once no process of ``uid`` is alive) removes every System V object that
  ``uid`` created or owns in the grader's namespace (the owner can be changed, the creator cannot).

POSIX shared memory and named semaphores are files in ``/dev/shm`` (and message queues in ``/dev/mqueue``
where mounted). ``/dev/shm`` is memory that belongs to no process: filled, it takes the machine's memory from
every other submission and from the grader, and the kernel's out-of-memory killer cannot end the culprit.
So ``fresh_namespace`` also gives the child a mount namespace of its own (mounts private, nothing reaches
the machine's) with its own ``/dev/shm``: a tmpfs bounded to its memory limit and SHM_FILES files, gone
with the child's last process. Where that cannot be had, ``cleanup.clear_user`` removes what a user left
in ``/dev/shm`` with its other temporary files.
"""
import contextlib
import ctypes
import os
import sys

CLONE_NEWIPC = 0x08000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x8, 0x1000, 0x4000, 0x40000
SHM = b"/dev/shm"
SHM_FILES = 4096                # files a child may make in its own /dev/shm
IPC_RMID = 0
SEGMENTS = 16                   # shared memory segments a child may make in its own namespace
QUEUES = 4                      # message queues likewise

try:                            # Linux's: the calls below are Linux's alone (macOS's C library lacks them)
    _libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except (OSError, TypeError):
    _libc = None


def wanted():
    """True when children should get a fresh IPC namespace: as root, unless turned off."""
    return (_libc is not None and os.geteuid() == 0
            and os.environ.get("MYTORCH_GRADER_IPC_NAMESPACE", "1") != "0")


def fresh_namespace(memory_mb):
    """Move the calling process (a child about to start, still root) into a new IPC namespace and bound it.
    Only system calls: safe between fork and exec. True if it worked."""
    if _libc is None or _libc.unshare(CLONE_NEWIPC) != 0:
        return False
    limits = {"shmmax": memory_mb << 20, "shmall": (memory_mb << 20) // os.sysconf("SC_PAGE_SIZE"),
              "shmmni": SEGMENTS, "msgmni": QUEUES}
    for name, value in limits.items():
        with contextlib.suppress(OSError):
            fd = os.open(f"/proc/sys/kernel/{name}", os.O_WRONLY)
            try:
                os.write(fd, str(value).encode())
            finally:
                os.close(fd)
    own_shm(memory_mb)
    return True


def own_shm(memory_mb):
    """Give the calling process (single-threaded, still root) a mount namespace where no mount propagates to
    the machine's, and there a ``/dev/shm`` of its own: a tmpfs of at most ``memory_mb`` MiB and SHM_FILES
    files. Only system calls. True if it worked; nothing changed if the namespace could not be made."""
    if not os.path.isdir(SHM) or _libc.unshare(CLONE_NEWNS) != 0:
        return False
    if _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False                                   # a mount here could reach the machine's: none is made
    options = f"size={memory_mb << 20},nr_inodes={SHM_FILES},mode=1777".encode()
    return _libc.mount(b"tmpfs", SHM, b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0


def proc_wanted():
    """True when a child run as a sandbox user should get a ``/proc`` of its own (``own_proc``): as root, unless
    MYTORCH_GRADER_PROC_MOUNT=0 turns it off (the defences beneath it are tested that way)."""
    return (_libc is not None and os.geteuid() == 0
            and os.environ.get("MYTORCH_GRADER_PROC_MOUNT", "1") != "0")


def own_proc():
    """Give the calling process (single-threaded, still root, about to become a sandbox user) a ``/proc`` of its
    own, in a mount namespace of its own: a new proc filesystem of the PID namespace it is in (its own, where
    the zygote forked it into one; a spawned child's gets another, of its own namespace, from ``unshare
    --mount-proc``) that shows no process it could not trace (``hidepid=2``). Its user then sees its own
    processes alone: not the grader's command line, nor any process of another user or submission. Only
    system calls. True if it worked; nothing changed if the namespace could not be made (a container without
    CAP_SYS_ADMIN), and the child then sees the machine's processes as before (never their memory: the grader's
    are non-dumpable and root's)."""
    if _libc is None or _libc.unshare(CLONE_NEWNS) != 0:
        return False
    if _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False                                   # a mount here could reach the machine's: none is made
    return _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"hidepid=2") == 0


# keyctl(2): the kernel's key store. A process shares the session keyring of whatever started it, and a uid has
# keyrings that outlive every process of it (``reaper.kill_user`` empties those)
KEYCTL = None                   # Linux's numbers alone: on Darwin 250 is another call
if sys.platform.startswith("linux"):
    KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 271, "s390x": 280}.get(os.uname().machine)
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 1, 7, 22
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -3, -4, -5


def keyctl_call():
    """``keyctl(option, *args)`` through libc's ``syscall``, or None where it cannot be had. Made before a fork:
    the child then only calls it."""
    if KEYCTL is None or _libc is None:
        return None
    try:
        syscall = _libc.syscall
    except AttributeError:
        return None
    syscall.restype = ctypes.c_long
    return lambda *args: syscall(ctypes.c_long(KEYCTL), *(ctypes.c_long(a) for a in args))


def own_session_keyring(keyctl):
    """Give the calling process (a child about to run student code) a new session keyring of its own, gone
    with its last process: the grader's, if it has one (a login or a service gives root one), would be
    shared by every child, and a key one submission added there would reach the others. True if it worked."""
    return keyctl is not None and keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0) > 0


def hide(paths):
    """Give the calling process (single-threaded, still root) a mount namespace of its own where no mount
    propagates to the machine's, and there an empty read-only tmpfs, root's alone, over each of ``paths``
    that is a folder, and /dev/null over each file: nothing in them can be reached by path. Only system
    calls. True if every one is hidden; else the caller must not run student code."""
    if _libc is None or _libc.unshare(CLONE_NEWNS) != 0:
        return False
    if _libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False                                   # a mount here could reach the machine's: none is made
    flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    return all(_libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, b"size=4k,mode=0700") == 0
               if os.path.isdir(path) else _libc.mount(b"/dev/null", os.fsencode(path), None, MS_BIND, None) == 0
               for path in paths)


def _objects(kind):
    """[(id, owner uid, creator uid)] of the System V objects of ``kind`` (shm, sem, msg) in our namespace."""
    try:
        with open(f"/proc/sysvipc/{kind}") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    if not lines:
        return []
    header = lines[0].split()
    found = []
    for line in lines[1:]:
        fields = dict(zip(header, line.split()))
        with contextlib.suppress(KeyError, ValueError):
            ident = int(fields["shmid" if kind == "shm" else "semid" if kind == "sem" else "msqid"])
            found.append((ident, int(fields["uid"]), int(fields["cuid"])))
    return found


def _remove(kind, ident):
    if kind == "shm":
        return _libc.shmctl(ident, IPC_RMID, None) == 0
    if kind == "sem":
        return _libc.semctl(ident, 0, IPC_RMID) == 0
    return _libc.msgctl(ident, IPC_RMID, None) == 0


def system_v_owned_by(uid):
    """[(kind, id)] of the System V objects ``uid`` owns or created."""
    return [(kind, ident) for kind in ("shm", "sem", "msg")
            for ident, owner, creator in _objects(kind) if uid in (owner, creator)]


def remove_owned_by(uid):
    """Remove every System V object of ``uid`` (never root's); returns how many were removed."""
    if uid == 0 or _libc is None:
        return 0
    return sum(_remove(kind, ident) for kind, ident in system_v_owned_by(uid))

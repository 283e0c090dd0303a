"""The macOS profile: what native CPython on macOS (an Apple-silicon Mac, macOS 14) has and lacks, on Linux.

``apply()`` runs at the start of every Python of a profile venv (its sitecustomize), so every process the
grader starts gets it too. One function per area; each item says what real CPython on macOS does. Values
stay Linux's wherever the kernel reads them (errno numbers, signal numbers, open flags, socket constants):
code compares them with the names, which match.

Known limits: os.name, os.sep and os.path cannot change (they are "posix" there too); kqueue cannot be had
(selectors.DefaultSelector is the PollSelector macOS also has, not its KqueueSelector); the kernel is Linux's,
so what the kernel does itself (the OOM killer, /dev/shm) still happens; fork is Linux's fork (macOS forks
alike, but its system frameworks are not fork-safe, which nothing here shows).
"""
import errno
import os
import sys

from . import common

# os names macOS's CPython does not have (each is Linux-only, or Linux and some BSDs, in posixmodule.c).
OS_LINUX_ONLY = (
    "sched_getaffinity", "sched_setaffinity",           # Linux's CPU sets; macOS has no affinity API
    "sched_setscheduler", "sched_getscheduler", "sched_setparam", "sched_getparam", "sched_rr_get_interval",
    "sched_param", "SCHED_BATCH", "SCHED_IDLE", "SCHED_RESET_ON_FORK",  # macOS has sched_yield and priority bounds only
    "pidfd_open", "memfd_create", "eventfd", "eventfd_read", "eventfd_write", "splice", "copy_file_range",
    "getresuid", "getresgid", "setresuid", "setresgid",  # Linux and the BSDs, not Darwin
    "posix_fadvise", "posix_fallocate",                 # Darwin has neither
    "pipe2",                                            # Darwin has no pipe2
    "getrandom", "unshare", "setns",                     # Linux system calls (3.12's os.unshare, os.setns)
    "getxattr", "setxattr", "listxattr", "removexattr",  # CPython's xattr functions are built on Linux only
    "O_PATH", "O_TMPFILE", "O_NOATIME", "O_DIRECT", "O_LARGEFILE", "O_RSYNC",  # Linux's open flags
    "RWF_APPEND", "RWF_DSYNC", "RWF_HIPRI", "RWF_NOWAIT", "RWF_SYNC",
    "RTLD_DEEPBIND", "EFD_CLOEXEC", "EFD_NONBLOCK", "EFD_SEMAPHORE", "SPLICE_F_MORE", "SPLICE_F_MOVE",
    "SPLICE_F_NONBLOCK", "GRND_NONBLOCK", "GRND_RANDOM", "POSIX_SPAWN_OPEN", "POSIX_SPAWN_CLOSE",
    "ST_NODEV", "ST_NOEXEC", "ST_SYNCHRONOUS", "ST_MANDLOCK", "ST_WRITE", "ST_APPEND", "ST_NOATIME",
    "ST_NODIRATIME", "ST_RELATIME", "CLONE_FILES", "CLONE_FS", "CLONE_NEWCGROUP", "CLONE_NEWIPC",
    "CLONE_NEWNET", "CLONE_NEWNS", "CLONE_NEWPID", "CLONE_NEWTIME", "CLONE_NEWUSER", "CLONE_NEWUTS",
    "CLONE_SIGHAND", "CLONE_SYSVSEM", "CLONE_THREAD", "CLONE_VM",
)
OS_PREFIXES = ("MFD_", "XATTR_", "POSIX_FADV_", "SCHED_DEADLINE", "PIDFD_")
# waitid and its P_* / CLD_* names: CPython enables waitid on macOS only from 3.13 (before, configure left it
# out there); os.P_PID etc. exist only with it.
WAITID = ("waitid", "waitid_result", "P_PID", "P_PGID", "P_ALL", "P_PIDFD", "WEXITED", "WSTOPPED", "WNOWAIT",
          "CLD_EXITED", "CLD_KILLED", "CLD_DUMPED", "CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED")

# os.uname() of macOS 14.5 on Apple silicon; platform.* as CPython computes them from it there
UNAME = ("Darwin", "23.5.0", "Darwin Kernel Version 23.5.0: Wed May  1 20:12:58 PDT 2024; "
         "root:xnu-10063.121.3~5/RELEASE_ARM64_T6000", "arm64")
MAC_VER = ("14.5", ("", "", ""), "arm64")

# libc symbols glibc has and macOS's libSystem does not: reading one from a CDLL raises AttributeError, as
# dlsym not finding it does there. Linux system calls and glibc extensions.
LIBC_LINUX_ONLY = frozenset({
    "prctl", "unshare", "setns", "keyctl", "add_key", "request_key", "umount2", "pidfd_open", "pidfd_send_signal",
    "pidfd_getfd", "memfd_create", "pivot_root", "clone", "clone3", "eventfd", "signalfd", "timerfd_create",
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "inotify_init", "inotify_init1",
    "inotify_add_watch", "sched_getaffinity", "sched_setaffinity", "prlimit", "prlimit64", "capget", "capset",
    "personality", "mallopt", "malloc_trim", "malloc_usable_size", "gnu_get_libc_version", "getauxval",
    "sysinfo", "syncfs", "getresuid", "getresgid", "setresuid", "setresgid", "pipe2", "dup3", "accept4",
    "splice", "tee", "vmsplice", "fallocate", "posix_fallocate", "posix_fadvise", "seccomp", "mount_setattr",
    "open_tree", "move_mount", "fsopen", "fsmount", "getrandom", "copy_file_range", "close_range",
})
# Symbols macOS has with another meaning: calling one raises (nothing may call them with Linux's arguments):
# syscall(2) takes Darwin's system call numbers (Linux's 157, prctl, is Darwin's statfs... ), and mount(2) is
# BSD's mount(type, dir, flags, data), not Linux's mount(source, target, fstype, flags, data).
LIBC_OTHER_MEANING = frozenset({"syscall", "mount"})
# libproc (libSystem's process listing, what a Mac has in place of /proc): stand-ins with its signatures, the
# counts they return and errno set as there; read from the real /proc
LIBPROC = ("proc_listallpids", "proc_listchildpids", "proc_listpgrppids", "proc_pidpath")
# the names a Mac's libSystem answers to (ctypes.util.find_library gives /usr/lib/lib<name>.dylib for these)
LIBSYSTEM = frozenset({"c", "m", "dl", "pthread", "System"})


def apply():
    """Simulate macOS in this process (see the module's doc). Call once, first thing (sitecustomize)."""
    common.begin()
    _modules()
    _os()
    _platform()
    _resource()
    _signal()
    _select()
    _socket()
    _ctypes()
    _shutil()
    _multiprocessing()
    common.set_platform("darwin")


def _modules():
    """spwd (shadow passwords) and ossaudiodev (OSS sound) are built on Linux only; macOS has the rest
    (resource, pwd, grp, fcntl, termios, pty, tty, syslog, posix; crypt until 3.13 removed it everywhere)."""
    common.BlockedModules(["spwd", "ossaudiodev"]).install()


def _os():
    """os: OS_LINUX_ONLY and OS_PREFIXES removed (and from posix, which os copies them from); waitid below
    3.13; os.uname() says Darwin."""
    import posix
    gone = OS_LINUX_ONLY + (WAITID if sys.version_info < (3, 13) else ())
    for module in (os, posix):
        common.remove(module, gone)
        common.remove_prefixed(module, OS_PREFIXES)
    node = os.uname().nodename
    uname = os.uname_result((UNAME[0], node) + UNAME[1:])

    def uname_():
        """Return an object identifying the current operating system (macOS, simulated)."""
        return uname
    os.uname = posix.uname = uname_
    common.refresh_supports()


def _platform():
    """platform.system() "Darwin", machine() "arm64", mac_ver() macOS 14.5's; libc_ver() ('', '') (it scans the
    executable for glibc's name, which a Mac's python has not); freedesktop_os_release() raises OSError (no
    /etc/os-release there)."""
    import platform
    result = platform.uname_result(UNAME[0], os.uname().nodename, UNAME[1], UNAME[2], UNAME[3])
    result.__dict__["processor"] = "arm"          # `uname -p` on Apple silicon
    platform._uname_cache = result
    platform.mac_ver = lambda release="", versioninfo=("", "", ""), machine="": MAC_VER
    platform.libc_ver = lambda executable=None, lib="", version="", chunksize=16384: (lib, version)

    def freedesktop_os_release():
        raise OSError(errno.ENOENT, "Unable to read files /etc/os-release, /usr/lib/os-release")
    platform.freedesktop_os_release = freedesktop_os_release


def _resource():
    """resource: setrlimit(RLIMIT_AS, finite) fails: macOS's kernel answers EINVAL, which CPython reports as
    ValueError("current limit exceeds maximum limit"). prlimit is Linux-only. macOS has RLIMIT_AS, CORE, CPU,
    DATA, FSIZE, MEMLOCK, NOFILE, NPROC, RSS and STACK, and RUSAGE_SELF/CHILDREN only."""
    resource = common.REAL.resource
    common.remove(resource, ["prlimit", "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_RTPRIO", "RLIMIT_RTTIME",
                             "RLIMIT_SIGPENDING", "RLIMIT_LOCKS", "RLIMIT_OFILE", "RUSAGE_THREAD"])
    real = common.REAL.setrlimit

    def setrlimit(which, limits):
        if which == resource.RLIMIT_AS and tuple(limits) != (resource.RLIM_INFINITY, resource.RLIM_INFINITY):
            raise ValueError("current limit exceeds maximum limit")
        return real(which, limits)
    setrlimit.__doc__ = real.__doc__
    resource.setrlimit = setrlimit


def _signal():
    """signal: Linux's real-time and Linux-only signals are gone (SIGRTMIN, SIGRTMAX, SIGPOLL, SIGPWR,
    SIGSTKFLT, SIGCLD), and sigtimedwait, sigwaitinfo (Darwin has neither) and pidfd_send_signal. The numbers
    kept are Linux's (SIGCHLD is 17 here, 20 on a Mac): the kernel delivering them is Linux's. Signals (the
    enum) is made again from the names left."""
    import signal
    common.remove(signal, ["SIGRTMIN", "SIGRTMAX", "SIGPOLL", "SIGPWR", "SIGSTKFLT", "SIGCLD", "sigtimedwait",
                           "sigwaitinfo", "pidfd_send_signal"])
    common.rebuild_signals(signal)


def _select():
    """select: no epoll (Linux-only); macOS has select, poll and kqueue. kqueue cannot be simulated on Linux,
    so selectors.DefaultSelector is PollSelector here (KqueueSelector on a Mac)."""
    import select
    import selectors
    common.remove(select, ["epoll", "EPOLLIN", "EPOLLOUT", "EPOLLPRI", "EPOLLERR", "EPOLLHUP", "EPOLLET",
                           "EPOLLONESHOT", "EPOLLEXCLUSIVE", "EPOLLRDHUP", "EPOLLRDNORM", "EPOLLRDBAND",
                           "EPOLLWRNORM", "EPOLLWRBAND", "EPOLLMSG", "EPOLL_CLOEXEC", "POLLRDHUP"])
    common.remove(selectors, ["EpollSelector", "DevpollSelector"])
    selectors.DefaultSelector = selectors.PollSelector


def _socket():
    """socket: AF_UNIX sockets of type SOCK_SEQPACKET are refused: Darwin's AF_UNIX has SOCK_STREAM and
    SOCK_DGRAM only, and socket() (or socketpair()) answers EPROTONOSUPPORT, "Protocol not supported" (errno
    43 on a Mac; the profile raises this kernel's number so that errno.EPROTONOSUPPORT matches it). Gone:
    Linux's SOCK_CLOEXEC and SOCK_NONBLOCK type flags, SO_PEERCRED, SO_PASSCRED, SCM_CREDENTIALS, and the
    Linux families (AF_NETLINK, AF_PACKET, AF_ALG, AF_VSOCK, AF_CAN, AF_TIPC). send_fds and recv_fds stay:
    macOS passes fds over AF_UNIX stream sockets."""
    import socket
    seqpacket = socket.SOCK_SEQPACKET
    flags = getattr(socket, "SOCK_CLOEXEC", 0) | getattr(socket, "SOCK_NONBLOCK", 0)
    common.remove(socket, ["SOCK_CLOEXEC", "SOCK_NONBLOCK", "SO_PEERCRED", "SO_PASSCRED", "SCM_CREDENTIALS",
                           "AF_NETLINK", "AF_PACKET", "AF_ALG", "AF_VSOCK", "AF_CAN", "AF_TIPC", "SO_PEERSEC",
                           "SO_BINDTODEVICE", "SO_MARK", "SO_DOMAIN", "SO_PROTOCOL", "SO_PASSSEC"])
    common.remove_prefixed(socket, ("NETLINK_", "PACKET_", "ALG_", "CAN_", "TIPC_", "VMADDR_", "SO_VM_"))

    def refused(family, kind):
        return family == common.REAL.AF_UNIX and kind is not None and int(kind) & ~flags == seqpacket

    def protocol_not_supported():
        return OSError(errno.EPROTONOSUPPORT, "Protocol not supported")
    real_init, real_pair = common.REAL.socket_init, common.REAL.socketpair

    def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
        if fileno is None and refused(family, type):
            raise protocol_not_supported()
        real_init(self, family, type, proto, fileno)
    socket.socket.__init__ = __init__

    def socketpair(family=None, type=socket.SOCK_STREAM, proto=0):
        if refused(socket.AF_UNIX if family is None else family, type):
            raise protocol_not_supported()
        return real_pair(family, type, proto) if family is not None else real_pair(type=type, proto=proto)
    socketpair.__doc__ = real_pair.__doc__
    socket.socketpair = socketpair


def _ctypes():
    """ctypes: CDLL(None) works (dlopen(NULL): the process's symbols, libSystem's included) but a symbol only
    Linux has (LIBC_LINUX_ONLY) raises AttributeError as dlsym not finding it does ("symbol not found"), and
    one of LIBC_OTHER_MEANING can be looked up but not called. CDLL of a Linux library name ("libc.so.6")
    fails with OSError as dlopen does there; the Mac names of libSystem (libc.dylib, /usr/lib/libSystem.B.dylib)
    load this process's C library. ctypes.util.find_library("c") is "/usr/lib/libc.dylib" (Big Sur and later
    answer from the dyld cache); a library that is not libSystem's is not found (None). libproc's listing
functions (LIBPROC) are stand-ins, since glibc has none of them."""
    import ctypes
    import ctypes.util
    real_cdll = ctypes.CDLL

    class CDLL(real_cdll):
        def __init__(self, name, *args, **kwargs):
            self._use_errno = kwargs.get("use_errno", args[2] if len(args) > 2 else False)
            base = os.path.basename(name) if isinstance(name, str) else None
            self._libsystem = name is None or _libsystem_name(base)
            if base is not None and "/" not in name and (".so." in base or base.endswith(".so")):
                raise OSError(f"dlopen({name}, 0x0006): tried: '{name}' (no such file), "
                              f"'/usr/lib/{name}' (no such file, not in dyld cache), '{name}' (no such file)")
            super().__init__(None if self._libsystem else name, *args, **kwargs)
            if self._libsystem and name is not None:
                self._name = name

        def __getitem__(self, name):                  # CDLL.__getattr__ asks this too
            if self.__dict__.get("_libsystem") and isinstance(name, str):
                if name in LIBC_LINUX_ONLY:
                    raise AttributeError(f"dlsym(RTLD_DEFAULT, {name}): symbol not found")
                if name in LIBC_OTHER_MEANING:
                    return _OtherMeaning(name)
                if name in LIBPROC:
                    return _Libproc(name, self.__dict__.get("_use_errno", False))
            return super().__getitem__(name)
    CDLL.__name__ = CDLL.__qualname__ = "CDLL"
    CDLL.__module__ = "ctypes"
    ctypes.CDLL = CDLL
    ctypes.cdll = ctypes.LibraryLoader(CDLL)

    def find_library(name):
        return f"/usr/lib/lib{name}.dylib" if name in LIBSYSTEM else None
    ctypes.util.find_library = find_library


def _libsystem_name(base):
    if base is None:
        return False
    stem = base[3:] if base.startswith("lib") else base
    stem = stem.split(".")[0]
    return (base.endswith(".dylib") or base == "libSystem") and stem in LIBSYSTEM


class _OtherMeaning:
    """A libSystem symbol whose meaning is not Linux's: its ctypes attributes can be set, a call raises."""

    def __init__(self, name):
        self.__name__, self.argtypes, self.restype, self.errcheck = name, None, None, None

    def __call__(self, *args):
        raise OSError(errno.ENOSYS, f"simulated macOS: {self.__name__}() exists there with another meaning "
                                    "(Darwin's own system call numbers, BSD's arguments): never call it there")


class _Libproc:
    """A libproc function: ``proc_listallpids(buffer, size)``, ``proc_listchildpids(ppid, buffer, size)`` and
    ``proc_listpgrppids(pgrp, buffer, size)`` fill ``buffer`` with pids (C ints) and return how many (with a
    NULL buffer, how many there are); ``proc_pidpath(pid, buffer, size)`` writes the executable's path and
    returns its length, 0 with errno ESRCH for no such process. ``argtypes``/``restype`` may be set."""

    def __init__(self, name, use_errno):
        self.__name__, self.use_errno, self.argtypes, self.restype, self.errcheck = name, use_errno, None, None, None

    def __call__(self, *args):
        import ctypes
        args = [a.value if isinstance(a, ctypes._SimpleCData) and not isinstance(a, ctypes.c_void_p) else a
                for a in args]
        if self.__name__ == "proc_pidpath":
            pid, buffer, size = args
            try:
                path = os.fsencode(common.REAL.os.readlink(f"/proc/{int(pid)}/exe"))
            except OSError:
                if self.use_errno:
                    ctypes.set_errno(errno.ESRCH)
                return 0
            data = path[:max(0, int(size) - 1)] + b"\0"
            ctypes.memmove(common.address(buffer), data, len(data))
            return len(data) - 1
        if self.__name__ == "proc_listallpids":
            (buffer, size), pids = args, [p for p, _, _ in common.processes()]
        else:
            key, buffer, size = args
            column = 1 if self.__name__ == "proc_listchildpids" else 2
            pids = [row[0] for row in common.processes() if row[column] == int(key)]
        at = common.address(buffer)
        if at is None:
            return len(pids)
        pids = pids[:int(size) // ctypes.sizeof(ctypes.c_int)]
        data = (ctypes.c_int * len(pids))(*pids)
        ctypes.memmove(at, data, ctypes.sizeof(data))
        return len(pids)


def _shutil():
    """shutil: copies do not use sendfile (CPython uses it on Linux only; on macOS it uses fcopyfile, which
    this kernel lacks: plain reads and writes here) nor copy extended attributes (xattr support is Linux's)."""
    import shutil
    shutil._USE_CP_SENDFILE = False
    shutil._copyxattr = lambda *args, **kwargs: None


def _multiprocessing():
    """multiprocessing: the default start method is "spawn" (since 3.8 on macOS); fork and forkserver stay
    available, as there."""
    import multiprocessing.context as context
    context._default_context._default_context = context._concrete_contexts["spawn"]

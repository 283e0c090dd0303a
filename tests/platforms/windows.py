"""The Windows profile: what native CPython on Windows (10 or 11, x64) has and lacks, on Linux.

``apply()`` runs at the start of every Python of a profile venv (its sitecustomize), so every process the
grader starts gets it too. One function per area; each item says what real CPython on Windows does. Values
stay Linux's wherever the kernel reads them (errno numbers, signal numbers, open flags).

Known limits: os.name stays "posix", os.sep "/", os.pathsep ":", os.linesep "\\n", os.devnull "/dev/null" and
os.path is posixpath (every file name this kernel takes is a POSIX one); os.environ is case-sensitive; ctypes'
c_long is 8 bytes (4 on Windows: ctypes.wintypes' 32-bit names are made 4 bytes here); exit codes above 255 of a
process that exits by itself are cut to 8 bits by this kernel; a file open elsewhere can still be deleted or
renamed (Windows refuses); os.chmod changes every mode bit (Windows only the read-only one); a process a
Windows job holds is simulated by its process group (see kernel32.py); shell=True runs /bin/sh, not cmd.exe;
asyncio cannot be imported (its Windows event loop needs _overlapped), nor can multiprocessing start a process
(its Windows child code needs _winapi); signal numbers are Linux's (SIGABRT is 6 here, 22 on Windows).
"""
import errno
import os
import stat
import sys
import types

from . import common, kernel32

# POSIX-only modules: Windows' CPython has none of them (posix is nt there; _posixsubprocess, _posixshmem
# are the POSIX halves of subprocess and multiprocessing.shared_memory; readline and curses are not built).
BLOCKED = ("resource", "pwd", "grp", "fcntl", "termios", "pty", "tty", "crypt", "spwd", "syslog", "posix",
           "_posixsubprocess", "_posixshmem", "readline", "curses", "_curses", "_curses_panel", "nis",
           "ossaudiodev")

# os names Windows' CPython does not have ("Availability: Unix" or "Linux" in the os docs)
OS_MISSING = (
    "fork", "forkpty", "register_at_fork",
    "geteuid", "getegid", "getuid", "getgid", "getgroups", "setgroups", "getgrouplist", "initgroups",
    "setuid", "setgid", "seteuid", "setegid", "setreuid", "setregid",
    "getresuid", "getresgid", "setresuid", "setresgid",
    "setsid", "getsid", "setpgid", "getpgid", "getpgrp", "setpgrp", "tcgetpgrp", "tcsetpgrp", "killpg",
    "wait", "wait3", "wait4", "waitid", "waitid_result",     # waitpid stays: Windows has it (on a process handle)
    "WNOHANG", "WCONTINUED", "WUNTRACED", "WEXITED", "WSTOPPED", "WNOWAIT", "WIFEXITED", "WEXITSTATUS",
    "WIFSIGNALED", "WTERMSIG", "WIFSTOPPED", "WSTOPSIG", "WIFCONTINUED", "WCOREDUMP",
    "P_PID", "P_PGID", "P_ALL", "P_PIDFD",
    "uname", "uname_result",
    "O_DIRECTORY", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_PATH", "O_NOCTTY", "O_SYNC", "O_DSYNC",
    "O_RSYNC", "O_NDELAY", "O_ASYNC", "O_DIRECT", "O_LARGEFILE", "O_NOATIME", "O_TMPFILE", "O_FSYNC",
    "O_ACCMODE",
    "chown", "lchown", "fchown", "lchmod", "fchdir", "chroot", "mkfifo", "mknod", "makedev", "major", "minor",
    "getloadavg", "statvfs", "fstatvfs", "statvfs_result", "sync", "fdatasync",
    "pidfd_open", "memfd_create", "eventfd", "eventfd_read", "eventfd_write", "splice", "copy_file_range",
    "posix_spawn", "posix_spawnp", "sendfile", "pipe2",
    "openpty", "login_tty", "ttyname", "ctermid", "nice", "getpriority", "setpriority",
    "sysconf", "sysconf_names", "confstr", "confstr_names", "pathconf", "fpathconf", "pathconf_names",
    "lockf", "F_LOCK", "F_TLOCK", "F_ULOCK", "F_TEST", "pread", "pwrite", "preadv", "pwritev", "readv", "writev",
    "posix_fadvise", "posix_fallocate", "getxattr", "setxattr", "listxattr", "removexattr",
    "getrandom", "unshare", "setns", "fwalk", "NGROUPS_MAX", "SEEK_DATA", "SEEK_HOLE",
    "grantpt", "posix_openpt", "ptsname", "unlockpt",
)
OS_PREFIXES = ("sched_", "SCHED_", "CLD_", "PRIO_", "POSIX_SPAWN_", "POSIX_FADV_", "RWF_", "EX_", "RTLD_", "ST_",
               "XATTR_", "GRND_", "MFD_", "EFD_", "SPLICE_", "CLONE_", "SF_", "PIDFD_")
if sys.version_info < (3, 12):
    OS_MISSING += ("get_blocking", "set_blocking")       # Windows has them from 3.12 (for pipes)
if sys.version_info < (3, 13):
    OS_MISSING += ("fchmod",)                            # Windows has it from 3.13
# open flags Windows has and Linux has not, all 0 here: O_BINARY (0x8000 there: no newline translation, which
# this C library never does), O_TEXT (0x4000), O_NOINHERIT (0x80: an fd Python opens is not inherited anyway,
# PEP 446), O_RANDOM (0x10), O_SEQUENTIAL (0x20) and O_SHORT_LIVED (0x1000), hints to the cache. O_TEMPORARY
# (delete on close) is left out: nothing here could do it.
O_WINDOWS = ("O_BINARY", "O_TEXT", "O_NOINHERIT", "O_RANDOM", "O_SEQUENTIAL", "O_SHORT_LIVED")

# the signals Windows' C runtime has (and so CPython's signal module): the kernel's numbers for the five Linux
# shares (SIGABRT is 22 on Windows, 6 here), SIGBREAK 21 (Ctrl+Break), and the console events os.kill sends
WINDOWS_SIGNALS = ("SIGABRT", "SIGFPE", "SIGILL", "SIGINT", "SIGSEGV", "SIGTERM")
CTRL_C_EVENT, CTRL_BREAK_EVENT, SIGBREAK = 0, 1, 21
STATUS_CONTROL_C_EXIT = 0xC000013A
# the exit code Windows gives a process that ends the way a Linux one ends by these signals (when no stand-in
# said what code it ended with): an access violation, a division by zero, an illegal instruction, abort()
# (3 in the C runtime), Ctrl+C; a job's time limit ends a process with ERROR_NOT_ENOUGH_QUOTA; anything else
# that kills (SIGKILL from the kernel: memory) is reported as 1
SIGNAL_EXIT_CODES = {"SIGSEGV": 0xC0000005, "SIGFPE": 0xC0000094, "SIGILL": 0xC000001D, "SIGABRT": 3,
                     "SIGINT": STATUS_CONTROL_C_EXIT, "SIGXCPU": 1816}

# subprocess's Windows-only names (values from winbase.h, as _winapi gives them)
CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW = 0x200, 0x08000000
CREATE_BREAKAWAY_FROM_JOB, CREATE_SUSPENDED = 0x01000000, 0x4
SUBPROCESS_NAMES = {
    "CREATE_NEW_PROCESS_GROUP": CREATE_NEW_PROCESS_GROUP, "CREATE_NO_WINDOW": CREATE_NO_WINDOW,
    "CREATE_BREAKAWAY_FROM_JOB": CREATE_BREAKAWAY_FROM_JOB, "CREATE_SUSPENDED": CREATE_SUSPENDED,
    "CREATE_NEW_CONSOLE": 0x10, "DETACHED_PROCESS": 0x8, "CREATE_DEFAULT_ERROR_MODE": 0x04000000,
    "ABOVE_NORMAL_PRIORITY_CLASS": 0x8000, "BELOW_NORMAL_PRIORITY_CLASS": 0x4000, "HIGH_PRIORITY_CLASS": 0x80,
    "IDLE_PRIORITY_CLASS": 0x40, "NORMAL_PRIORITY_CLASS": 0x20, "REALTIME_PRIORITY_CLASS": 0x100,
    "STD_INPUT_HANDLE": -10, "STD_OUTPUT_HANDLE": -11, "STD_ERROR_HANDLE": -12, "SW_HIDE": 0,
    "STARTF_USESTDHANDLES": 0x100, "STARTF_USESHOWWINDOW": 0x1,
}
# Set in the environment of a process started with CREATE_NEW_PROCESS_GROUP, and passed on to what it starts:
# a CREATE_NEW_PROCESS_GROUP asked for from inside such a process keeps the new process in the group (the
# simulated job follows groups; Windows keeps a job's descendants in the job, whatever their console group).
IN_GROUP = "MYTORCH_PLATFORM_KIT_GROUP"

WINDOWS_VERSION = (10, 0, 19045)                          # Windows 10 22H2
PROCESSOR = "Intel64 Family 6 Model 158 Stepping 10, GenuineIntel"


def apply():
    """Simulate Windows in this process (see the module's doc). Call once, first thing (sitecustomize)."""
    common.begin()
    _modules()
    _sys()
    _os()
    _signal()
    _subprocess()
    _select()
    _socket()
    _ctypes()
    _platform()
    _shutil()
    _multiprocessing()
    _faulthandler()
    common.set_platform("win32")


def _modules():
    """BLOCKED cannot be imported (ModuleNotFoundError); msvcrt can (a stand-in: get_osfhandle, open_osfhandle,
    setmode, SetErrorMode, GetErrorMode and the LK_ and SEM_ names); _winapi, nt and winreg cannot (nothing
    here could stand in for them: code that needs them is Windows-only and must be proved on Windows)."""
    common.BlockedModules(BLOCKED).install()
    sys.modules["msvcrt"] = _msvcrt()


def _msvcrt():
    module = types.ModuleType("msvcrt", "The Windows C runtime's functions (a stand-in of the Windows profile).")
    files, mode = {}, [0]

    def get_osfhandle(fd):
        os.fstat(fd)                                      # OSError (EBADF) for an fd that is not open
        handle = kernel32._new_handle(("file", fd))
        files[handle] = fd
        return handle

    def open_osfhandle(handle, flags):
        if handle not in files:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return files[handle]

    def setmode(fd, flags):
        os.fstat(fd)
        return 0x8000                                     # the mode it had: O_BINARY, as Python opens them

    def SetErrorMode(new):
        old, mode[0] = mode[0], new
        return old

    module.get_osfhandle, module.open_osfhandle, module.setmode = get_osfhandle, open_osfhandle, setmode
    module.SetErrorMode, module.GetErrorMode = SetErrorMode, lambda: mode[0]
    for name, value in {"LK_UNLCK": 0, "LK_LOCK": 1, "LK_NBLCK": 2, "LK_RLCK": 3, "LK_NBRLCK": 4,
                        "SEM_FAILCRITICALERRORS": 0x1, "SEM_NOGPFAULTERRORBOX": 0x2,
                        "SEM_NOALIGNMENTFAULTEXCEPT": 0x4, "SEM_NOOPENFILEERRORBOX": 0x8000}.items():
        setattr(module, name, value)
    return module


def _sys():
    """sys: getwindowsversion() and winver exist; getdlopenflags, setdlopenflags and abiflags do not (Unix)."""
    common.remove(sys, ["getdlopenflags", "setdlopenflags", "abiflags"])
    major, minor, build = WINDOWS_VERSION
    version = types.SimpleNamespace(major=major, minor=minor, build=build, platform=2, service_pack="",
                                    service_pack_major=0, service_pack_minor=0, suite_mask=256, product_type=1,
                                    platform_version=WINDOWS_VERSION)
    sys.getwindowsversion = lambda: version
    sys.winver = "%d.%d" % sys.version_info[:2]


def _os():
    """os: OS_MISSING and OS_PREFIXES removed; O_WINDOWS added (0 here); os.kill, os.open, os.rename,
    os.times as on Windows; dir_fd, follow_symlinks=False (but for stat) and effective_ids refused, and an
    fd where only a path is taken refused, as Windows' CPython does; the supports_* sets say so."""
    real = common.REAL.os
    common.remove(os, OS_MISSING)
    common.remove_prefixed(os, OS_PREFIXES)
    for name in O_WINDOWS:
        setattr(os, name, 0)
    for name in ("access", "chmod", "link", "mkdir", "open", "readlink", "rename", "replace", "rmdir", "stat",
                 "lstat", "symlink", "unlink", "remove", "utime", "listdir", "scandir", "chdir", "truncate"):
        setattr(os, name, _windows_call(getattr(os, name), name))
    os.open, os.rename = _open(os.open), _rename(os.rename)
    os.kill, os.times = _kill, _times(real.times)
    os.supports_dir_fd = set()                            # os.py's sets as Windows' build fills them
    os.supports_fd = {os.stat, os.truncate} | ({os.chmod} if sys.version_info >= (3, 13) else set())
    os.supports_follow_symlinks = {os.stat} | ({os.chmod} if sys.version_info >= (3, 13) else set())
    os.supports_effective_ids = set()


def _windows_call(real, name):
    """``real`` as Windows' CPython takes its arguments: dir_fd= (any of them) raises NotImplementedError("dir_fd
    unavailable on this platform"); follow_symlinks=False too, except for stat ("NAME: follow_symlinks
    unavailable on this platform"); effective_ids=True ("access: effective_ids unavailable..."); an fd in
    place of a path is a TypeError except for stat and truncate (fstat, ftruncate)."""
    takes_fd = name in ("stat", "truncate") or (name == "chmod" and sys.version_info >= (3, 13))
    none_ok = name in ("listdir", "scandir")
    links = name == "stat" or (name == "chmod" and sys.version_info >= (3, 13))    # 3.13: lchmod on Windows

    def wrapper(*args, **kwargs):
        for key in ("dir_fd", "src_dir_fd", "dst_dir_fd"):
            if kwargs.get(key) is not None:
                raise NotImplementedError("dir_fd unavailable on this platform")
        if kwargs.get("follow_symlinks", True) is False and not links:
            raise NotImplementedError(f"{name}: follow_symlinks unavailable on this platform")
        if kwargs.get("effective_ids"):
            raise NotImplementedError(f"{name}: effective_ids unavailable on this platform")
        path = args[0] if args else kwargs.get("path", kwargs.get("src"))
        if isinstance(path, int) and not isinstance(path, bool) and not takes_fd:
            kinds = "string, bytes, os.PathLike or None" if none_ok else "string, bytes or os.PathLike"
            raise TypeError(f"{name}: path should be {kinds}, not int")
        return real(*args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = real.__doc__
    wrapper.__wrapped__ = real
    return wrapper


def _open(real):
    """os.open of a folder fails on Windows with PermissionError (errno 13): a folder cannot be opened as a
    file there (and O_DIRECTORY does not exist)."""
    def open(path, flags, mode=0o777, **kwargs):
        fd = real(path, flags, mode, **kwargs)
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return fd
    open.__doc__, open.__wrapped__ = real.__doc__, real
    return open


def _rename(real):
    """os.rename onto a name that exists fails on Windows (FileExistsError, WinError 183 "Cannot create a file
    when that file already exists"); os.replace replaces."""
    def rename(src, dst, **kwargs):
        if os.path.lexists(dst):
            raise os_error(183, errno.EEXIST, src)
        return real(src, dst, **kwargs)
    rename.__doc__, rename.__wrapped__ = real.__doc__, real
    return rename


def _kill(pid, sig):
    """os.kill on Windows. CTRL_C_EVENT (0) and CTRL_BREAK_EVENT (1) go to the console process group ``pid``
    (GenerateConsoleCtrlEvent; group 0: every process of the console, this one too): Ctrl+C is ignored by a
    group made with CREATE_NEW_PROCESS_GROUP, Ctrl+Break ends its processes (STATUS_CONTROL_C_EXIT); a pid
    that leads no group is WinError 87. Any other number ends the process at once with that number as its
    exit code (TerminateProcess: no handler runs, its children live on): here a SIGKILL, the code kept for
    the profile's Popen. os.kill(pid, 0) is therefore no way to ask whether a process lives, on Windows."""
    real = common.REAL
    sig, pid = int(sig), int(pid)
    if sig in (CTRL_C_EVENT, CTRL_BREAK_EVENT):
        try:
            group = real.os.getpgrp() if pid == 0 else pid
            if real.os.getpgid(group) != group:
                raise ProcessLookupError
        except OSError:
            raise os_error(kernel32.ERROR_INVALID_PARAMETER) from None
        if sig == CTRL_BREAK_EVENT:
            kernel32.EXIT_CODES[group] = STATUS_CONTROL_C_EXIT
            real.os.killpg(group, real.SIGKILL)
        elif pid == 0:
            real.os.killpg(group, real.SIGINT)
        return
    try:
        real.os.kill(pid, 0)
    except ProcessLookupError:
        raise os_error(kernel32.ERROR_INVALID_PARAMETER) from None   # OpenProcess's answer
    except PermissionError:
        raise os_error(kernel32.ERROR_ACCESS_DENIED) from None
    kernel32.EXIT_CODES[pid] = sig
    real.os.kill(pid, real.SIGKILL)


def _times(real):
    """os.times(): on Windows only user and system are known; the children's times and elapsed are 0."""
    def times():
        now = real()
        return os.times_result((now.user, now.system, 0.0, 0.0, 0.0))
    times.__doc__ = real.__doc__
    return times


def _signal():
    """signal: only WINDOWS_SIGNALS, SIGBREAK, CTRL_C_EVENT and CTRL_BREAK_EVENT; NSIG 23; signal() and
    getsignal() take those alone (ValueError "invalid signal value" else); no alarm, setitimer, getitimer,
    pause, pthread_kill, pthread_sigmask, sigpending, sigwait, sigwaitinfo, sigtimedwait, siginterrupt,
    pidfd_send_signal, Sigmasks or SIG_BLOCK...; Signals (the enum) is made again from those names.
    signal(SIGBREAK, ...) sets Linux's signal 21 (SIGTTIN), harmlessly: nothing sends it here."""
    import signal
    keep = set(WINDOWS_SIGNALS)
    common.remove(signal, [n for n in vars(signal) if n.startswith("SIG") and not n.startswith("SIG_")
                           and n not in keep])
    common.remove(signal, ["alarm", "setitimer", "getitimer", "pause", "pthread_kill", "pthread_sigmask",
                           "sigpending", "sigwait", "sigwaitinfo", "sigtimedwait", "siginterrupt",
                           "pidfd_send_signal", "Sigmasks", "SIG_BLOCK", "SIG_UNBLOCK", "SIG_SETMASK",
                           "ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF", "ItimerError", "struct_siginfo"])
    signal.NSIG = 23
    common.rebuild_signals(signal, {"SIGBREAK": SIGBREAK, "CTRL_C_EVENT": CTRL_C_EVENT,
                                    "CTRL_BREAK_EVENT": CTRL_BREAK_EVENT})
    valid = {int(getattr(signal, n)) for n in WINDOWS_SIGNALS} | {SIGBREAK}
    real_signal, real_getsignal = common.REAL.signal, common.REAL.getsignal

    def check(signalnum):
        if int(signalnum) not in valid:
            raise ValueError("invalid signal value")

    def signal_(signalnum, handler):
        check(signalnum)
        return real_signal(signalnum, handler)

    def getsignal(signalnum):
        check(signalnum)
        return real_getsignal(signalnum)
    signal_.__name__, signal_.__doc__, getsignal.__doc__ = "signal", real_signal.__doc__, real_getsignal.__doc__
    signal.signal, signal.getsignal = signal_, getsignal
    signal.valid_signals = lambda: {signal.Signals(n) for n in valid}


def _subprocess():
    """subprocess: the names of SUBPROCESS_NAMES, STARTUPINFO and Handle; Popen as Windows' takes its arguments
    (preexec_fn: ValueError "preexec_fn is not supported on Windows platforms"; pass_fds: its assertion
    "pass_fds not supported on Windows."; user, group, extra_groups: ValueError "The 'user' parameter is not
    supported on the current platform", as there, where os has no setreuid; start_new_session,
    process_group, umask, restore_signals, pipesize: ignored; startupinfo and creationflags accepted;
    CREATE_NEW_PROCESS_GROUP: a new process group, IN_GROUP; CREATE_SUSPENDED: stopped (SIGSTOP) once started,
    until ntdll's NtResumeProcess), its ``_handle`` a process handle of the
    kernel32 stand-in, send_signal/terminate/kill as Windows' (TerminateProcess with exit code 1), and its
    returncode never negative (a process a stand-in ended: the code it was ended with; one a signal ended:
    SIGNAL_EXIT_CODES, else 1). Its inner workings are the POSIX ones, with the whole os module."""
    import subprocess
    real_os = common.REAL.os
    subprocess.os = real_os                               # its POSIX half needs WNOHANG, posix_spawn...
    subprocess._USE_POSIX_SPAWN = False
    for name, value in SUBPROCESS_NAMES.items():
        setattr(subprocess, name, value)
    subprocess.STARTUPINFO = _startupinfo()
    subprocess.Handle = Handle
    base = subprocess.Popen
    import inspect
    signature = inspect.signature(common.REAL.Popen.__init__)

    class Popen(base):
        def __init__(self, *args, **kwargs):
            bound = signature.bind(self, *args, **kwargs)
            given = bound.arguments
            if given.get("preexec_fn") is not None:
                raise ValueError("preexec_fn is not supported on Windows platforms")
            for name in ("group", "extra_groups", "user"):
                if given.get(name) is not None:
                    raise ValueError(f"The '{name}' parameter is not supported on the current platform")
            if given.pop("pass_fds", ()) and not sys.flags.optimize:
                raise AssertionError("pass_fds not supported on Windows.")
            for name in ("start_new_session", "process_group", "umask", "restore_signals", "pipesize",
                         "startupinfo"):
                given.pop(name, None)
            flags = int(given.pop("creationflags", 0) or 0)
            inside = IN_GROUP in os.environ
            if flags & CREATE_NEW_PROCESS_GROUP or inside:
                env = dict(os.environ if given.get("env") is None else given["env"])
                env[IN_GROUP] = "1"
                given["env"] = env
            if flags & CREATE_NEW_PROCESS_GROUP and not inside:
                if "process_group" in signature.parameters:
                    given["process_group"] = 0
                else:
                    given["preexec_fn"] = real_os.setpgrp
            del given["self"]
            super().__init__(**given)
            self._handle = Handle(kernel32.process_handle(self.pid))
            if flags & CREATE_SUSPENDED:                  # stopped until ntdll.NtResumeProcess (it may have run the
                real_os.kill(self.pid, common.REAL.SIGSTOP)   # first milliseconds of its start)

        def _reap(self, pid, flags):
            """waitpid, keeping the times of the ended child first (its /proc entry, as a zombie: wait4 would
            import resource, which cannot be imported here)."""
            ended = real_os.waitid(real_os.P_PID, pid, real_os.WEXITED | real_os.WNOWAIT | flags)
            if ended is None:
                return 0, 0
            kernel32.keep_times(pid)
            return real_os.waitpid(pid, flags)

        def _internal_poll(self, _deadstate=None, **kwargs):
            kwargs["_waitpid"] = self._reap
            return super()._internal_poll(_deadstate, **kwargs)

        def _try_wait(self, wait_flags):
            try:
                return self._reap(self.pid, wait_flags)
            except ChildProcessError:
                return self.pid, 0

        def _handle_exitstatus(self, sts, *args, **kwargs):
            if not real_os.WIFSIGNALED(sts):
                return super()._handle_exitstatus(sts, *args, **kwargs)
            super()._handle_exitstatus(0, *args, **kwargs)
            self.returncode = exit_code(self.pid, real_os.WTERMSIG(sts))

        def send_signal(self, sig):
            if self.returncode is not None:
                return
            if sig == common.REAL.SIGTERM:
                self.terminate()
            elif sig in (CTRL_C_EVENT, CTRL_BREAK_EVENT):
                os.kill(self.pid, sig)
            else:
                raise ValueError(f"Unsupported signal: {sig}")

        def terminate(self):
            if self.returncode is not None:
                return
            if not kernel32.TerminateProcess(self._handle, 1):
                if self.poll() is None:
                    raise os_error(kernel32.get_last_error())

        kill = terminate
    Popen.__name__ = Popen.__qualname__ = "Popen"
    Popen.__module__ = "subprocess"
    subprocess.Popen = Popen


class Handle(int):
    """subprocess.Handle: a Windows handle, closed once."""
    closed = False

    def Close(self):
        if not self.closed:
            self.closed = True
            try:
                kernel32.CloseHandle(int(self))
            except Exception:                             # at interpreter shutdown, with modules torn down
                pass

    def Detach(self):
        if not self.closed:
            self.closed = True
            return int(self)
        raise ValueError("already closed")

    __del__ = Close


def exit_code(pid, signum):
    """The code Windows would report for ``pid`` ended by Linux's signal ``signum`` here (see SIGNAL_EXIT_CODES)."""
    if pid in kernel32.EXIT_CODES:
        return kernel32.EXIT_CODES.pop(pid)
    names = {int(getattr(common.REAL, name)): name for name in ("SIGSEGV", "SIGFPE", "SIGILL", "SIGABRT",
                                                                 "SIGINT", "SIGXCPU")}
    return SIGNAL_EXIT_CODES.get(names.get(signum), 1)


def _startupinfo():
    class STARTUPINFO:
        """subprocess.STARTUPINFO: accepted by Popen, which the simulation starts no window for anyway."""

        def __init__(self, *, dwFlags=0, hStdInput=None, hStdOutput=None, hStdError=None, wShowWindow=0,
                     lpAttributeList=None):
            self.dwFlags, self.hStdInput, self.hStdOutput, self.hStdError = dwFlags, hStdInput, hStdOutput, hStdError
            self.wShowWindow, self.lpAttributeList = wShowWindow, lpAttributeList or {"handle_list": []}
    STARTUPINFO.__module__ = "subprocess"
    return STARTUPINFO


def _select():
    """select: select() alone (no poll, epoll, devpoll, kqueue, PIPE_BUF), and it takes sockets alone: anything
    else is OSError WinError 10038 "An operation was attempted on something that is not a socket"; three empty
    lists are WinError 10022 "An invalid argument was supplied" (Winsock's select needs a socket). selectors:
    DefaultSelector is SelectSelector, which on Windows passes the write list as the except list too."""
    import select
    import selectors
    common.remove(select, [n for n in vars(select) if n.startswith(("POLL", "EPOLL"))])
    common.remove(select, ["poll", "epoll", "devpoll", "kqueue", "kevent", "PIPE_BUF"])
    real = common.REAL.select

    def is_socket(item):
        try:
            fd = item if isinstance(item, int) else item.fileno()
            return stat.S_ISSOCK(os.fstat(fd).st_mode)
        except (OSError, AttributeError, TypeError, ValueError):
            return False

    def select_(rlist, wlist, xlist, timeout=None):
        items = list(rlist) + list(wlist) + list(xlist)
        if not items:
            raise _winsock_error(10022)
        if not all(is_socket(item) for item in items):
            raise _winsock_error(10038)
        return real(rlist, wlist, xlist, timeout)
    select_.__name__, select_.__doc__ = "select", real.__doc__
    select.select = select_

    def _select(self, r, w, _, timeout=None):
        r, w, x = select.select(r, w, w, timeout)
        return r, w + x, []
    selectors.SelectSelector._select = _select
    common.remove(selectors, ["PollSelector", "EpollSelector", "DevpollSelector", "KqueueSelector"])
    selectors.DefaultSelector = selectors.SelectSelector


def _winsock_error(code):
    """What Winsock's errors are in CPython: OSError whose errno and winerror are both the WSA code."""
    return os_error(code, errno_=code)


def os_error(code, errno_=None, filename=None):
    """An OSError as CPython raises one for the Windows error ``code`` (PyErr_SetExcFromWindowsErr): errno
    mapped from it (so 5 is a PermissionError), ``winerror`` the code, the system's message without its final
    period (CPython strips it; ctypes.FormatError keeps it)."""
    args = (kernel32.TO_ERRNO.get(code, errno.EINVAL) if errno_ is None else errno_,
            kernel32.MESSAGES.get(code, "Unknown error").rstrip("."))
    error = OSError(*args, filename) if filename is not None else OSError(*args)
    error.winerror = code
    return error


def _socket():
    """socket: no AF_UNIX (a socket of family 1 is WinError 10047), no send_fds, recv_fds, sendmsg, recvmsg,
    CMSG_*, SCM_RIGHTS, SO_REUSEPORT, SOCK_CLOEXEC/SOCK_NONBLOCK or Linux's families; socketpair() is
    CPython's Windows one: a TCP pair over 127.0.0.1 (AF_INET or AF_INET6, SOCK_STREAM only)."""
    import socket
    common.remove(socket, ["AF_UNIX", "send_fds", "recv_fds", "CMSG_LEN", "CMSG_SPACE", "SCM_RIGHTS",
                           "SCM_CREDENTIALS", "SO_PEERCRED", "SO_PASSCRED", "SO_REUSEPORT", "SOCK_CLOEXEC",
                           "SOCK_NONBLOCK", "AF_NETLINK", "AF_PACKET", "AF_ALG", "AF_VSOCK", "AF_CAN", "AF_TIPC",
                           "sethostname", "SO_PEERSEC", "SO_BINDTODEVICE", "SO_MARK", "SO_DOMAIN", "SO_PROTOCOL"])
    common.remove_prefixed(socket, ("NETLINK_", "PACKET_", "ALG_", "CAN_", "TIPC_", "VMADDR_", "SO_VM_"))
    for name in ("sendmsg", "recvmsg", "recvmsg_into", "sendmsg_afalg"):
        setattr(socket.socket, name, common.Missing("socket", name))
    real_init, unix = common.REAL.socket_init, common.REAL.AF_UNIX

    def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
        if fileno is None and family == unix:
            raise _winsock_error(10047)
        real_init(self, family, type, proto, fileno)
    socket.socket.__init__ = __init__

    def socketpair(family=socket.AF_INET, type=socket.SOCK_STREAM, proto=0):
        if family == socket.AF_INET:
            host = "127.0.0.1"
        elif family == socket.AF_INET6:
            host = "::1"
        else:
            raise ValueError("Only AF_INET and AF_INET6 socket address families are supported")
        if type != socket.SOCK_STREAM:
            raise ValueError("Only SOCK_STREAM socket type is supported")
        if proto != 0:
            raise ValueError("Only protocol zero is supported")
        listener = socket.socket(family, type, proto)
        try:
            listener.bind((host, 0))
            listener.listen()
            client = socket.socket(family, type, proto)
            try:
                client.connect(listener.getsockname()[:2])
                server, _ = listener.accept()
            except BaseException:
                client.close()
                raise
        finally:
            listener.close()
        return server, client
    socket.socketpair = socketpair


def _ctypes():
    """ctypes: CDLL(None) is a TypeError (Windows' CDLL tests '/' in name: "argument of type 'NoneType' is not
    iterable"); CDLL, WinDLL, cdll, windll load the stand-ins of kernel32.LIBRARIES by name ("kernel32",
    "kernel32.dll", a path ending so) and nothing else (FileNotFoundError "Could not find module ...", as
    Windows' LoadLibrary of a missing DLL); a function the stand-in lacks: AttributeError "function 'X' not
    found". get_last_error, set_last_error, WinError, FormatError and WINFUNCTYPE exist (WINFUNCTYPE is
    CFUNCTYPE: on x64 stdcall is cdecl). ctypes.util.find_library("c") is None (CPython finds no msvcrt on
    builds since VS 2015); kernel32 and ntdll are found in system32. ctypes.wintypes' DWORD, ULONG, LONG and
    BOOL are 4 bytes, as on Windows (its long is 32-bit); ctypes.c_long itself stays 8 bytes."""
    import ctypes
    import ctypes.util
    import ctypes.wintypes as wintypes
    real_cdll = ctypes.CDLL

    class CDLL(real_cdll):
        def __init__(self, name, mode=ctypes.DEFAULT_MODE, handle=None, use_errno=False, use_last_error=False,
                     winmode=None):
            if name is None:                              # Windows' CDLL asks whether '/' is in name
                raise TypeError("argument of type 'NoneType' is not iterable")
            name = os.fspath(name)
            key = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
            key = key[:-4] if key.endswith(".dll") else key
            if key not in kernel32.LIBRARIES:
                raise FileNotFoundError(f"Could not find module '{name}' (or one of its dependencies). Try using "
                                        "the full path with constructor syntax.")
            self._name, self._handle, self._standin = name, 0, kernel32.LIBRARIES[key]

        def __getitem__(self, name):                      # CDLL.__getattr__ asks this too
            if name not in self._standin:
                raise AttributeError(f"function '{name}' not found")
            return kernel32.Function(name, self._standin[name])

    class WinDLL(CDLL):
        """ctypes.WinDLL: stdcall libraries (the same thing on x64)."""
    for cls in (CDLL, WinDLL):
        cls.__name__ = cls.__qualname__ = cls.__name__
        cls.__module__ = "ctypes"
    ctypes.CDLL, ctypes.WinDLL = CDLL, WinDLL
    ctypes.cdll, ctypes.windll = ctypes.LibraryLoader(CDLL), ctypes.LibraryLoader(WinDLL)
    ctypes.get_last_error, ctypes.set_last_error = kernel32.get_last_error, kernel32.set_last_error
    ctypes.WinError, ctypes.FormatError = kernel32.win_error, kernel32.format_error
    ctypes.WINFUNCTYPE = ctypes.CFUNCTYPE

    def find_library(name):
        if name.lower().replace(".dll", "") in kernel32.LIBRARIES or name.lower().startswith("ntdll"):
            return "C:\\WINDOWS\\system32\\%s.dll" % name.lower().replace(".dll", "")
        return None
    ctypes.util.find_library = find_library
    for name in ("DWORD", "ULONG"):
        setattr(wintypes, name, ctypes.c_uint32)
    for name in ("LONG", "BOOL"):
        setattr(wintypes, name, ctypes.c_int32)
    for pointer, target in (("PDWORD", "DWORD"), ("LPDWORD", "DWORD"), ("PULONG", "ULONG"), ("PLONG", "LONG"),
                            ("LPLONG", "LONG"), ("PBOOL", "BOOL"), ("LPBOOL", "BOOL")):
        setattr(wintypes, pointer, ctypes.POINTER(getattr(wintypes, target)))


def _platform():
    """platform: system() "Windows", release() "10", version() "10.0.19045", machine() "AMD64", win32_ver(),
    win32_edition() "Professional", win32_is_iot() False, libc_ver() ('', ''), freedesktop_os_release()
    OSError (no /etc/os-release)."""
    import platform
    release, version = str(WINDOWS_VERSION[0]), ".".join(map(str, WINDOWS_VERSION))
    result = platform.uname_result("Windows", common.REAL.os.uname().nodename, release, version, "AMD64")
    result.__dict__["processor"] = PROCESSOR
    platform._uname_cache = result
    platform.win32_ver = lambda release="", version="", csd="", ptype="": (
        str(WINDOWS_VERSION[0]), ".".join(map(str, WINDOWS_VERSION)), "SP0", "Multiprocessor Free")
    platform.win32_edition = lambda: "Professional"
    platform.win32_is_iot = lambda: False
    platform.libc_ver = lambda executable=None, lib="", version="", chunksize=16384: (lib, version)

    def freedesktop_os_release():
        raise OSError(errno.ENOENT, "Unable to read files /etc/os-release, /usr/lib/os-release")
    platform.freedesktop_os_release = freedesktop_os_release


def _shutil():
    """shutil: rmtree is the one without fd functions (rmtree.avoids_symlink_attacks is False on Windows);
    no sendfile and no extended attributes in copies; no chown (Unix); disk_usage works (Windows has it, on
    its own call); which() as on Windows finds no LINUX_TOOLS program nor a POSIX shell tool (its win32
    branch looks for NAME.EXE... and would find nothing here: this one looks as on Linux, without those)."""
    import shutil
    shutil._use_fd_functions = False
    shutil.rmtree.avoids_symlink_attacks = False
    shutil._USE_CP_SENDFILE = False
    shutil._copyxattr = lambda *args, **kwargs: None
    common.remove(shutil, ["chown"])
    statvfs = common.REAL.os.statvfs

    def disk_usage(path):
        info = statvfs(path)
        free = info.f_bavail * info.f_frsize
        total = info.f_blocks * info.f_frsize
        return shutil._ntuple_diskusage(total, total - info.f_bfree * info.f_frsize, free)
    shutil.disk_usage = disk_usage
    absent = common.LINUX_TOOLS | {"sh", "bash", "ps", "kill", "pkill", "pgrep", "id", "su", "sudo", "chown",
                                   "chmod", "env", "nice", "ulimit", "setsid", "xargs", "true", "false", "sleep"}

    def which(cmd, mode=os.F_OK | os.X_OK, path=None):
        name = os.fsdecode(cmd)
        if os.path.basename(name) in absent:
            return None
        if os.path.dirname(name):
            return cmd if os.path.isfile(name) and os.access(name, mode) else None
        folders = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
        for folder in folders:
            candidate = os.path.join(folder, name)
            if folder and os.path.isfile(candidate) and os.access(candidate, mode):
                return os.fsencode(candidate) if isinstance(cmd, bytes) else candidate
        return None
    which.__doc__ = shutil.which.__doc__
    shutil.which = which


def _multiprocessing():
    """multiprocessing: "spawn" is the only start method (get_context("fork") is a ValueError)."""
    import multiprocessing.context as context
    spawn = context._concrete_contexts["spawn"]
    context._concrete_contexts = {"spawn": spawn}
    context._default_context._default_context = spawn


def _faulthandler():
    """faulthandler: no register/unregister (Unix); dump_traceback_later stays (it is a thread, on Windows too)."""
    import faulthandler
    common.remove(faulthandler, ["register", "unregister"])

"""What the macOS and Windows profiles share: the real functions kept before anything is changed, the standard
library modules imported before ``sys.platform`` changes, modules that cannot be imported, names removed, and
the Linux-only folders (/proc, /sys, /dev/shm) made invisible.

Nothing here runs at import; a profile's ``apply()`` calls these in order (see ``macos.py``, ``windows.py``).
It must run on Python 3.9 as on 3.11: no ``match``, no ``X | Y`` types.
"""
import builtins
import errno
import io
import os
import posixpath
import sys
import types

# The standard library modules that read sys.platform (or os.name with it) when they are imported: imported
# here first, while sys.platform still says "linux", so that each keeps the implementation that works on this
# kernel (subprocess: _posixsubprocess, not _winapi; selectors: epoll and poll; socket's socketpair; ctypes.util:
# ldconfig; multiprocessing: its fork and spawn contexts, its reduction without _winapi; locale: nl_langinfo,
# not _locale._getdefaultlocale, which only Windows' _locale has). What a profile simulates is what code sees
# of these modules from then on, never their inner workings.
PREIMPORTED = ("locale", "signal", "select", "selectors", "socket", "subprocess", "tempfile", "shutil", "ctypes",
               "ctypes.util", "ctypes.wintypes", "platform", "pathlib", "faulthandler", "threading",
               "multiprocessing", "multiprocessing.connection", "multiprocessing.reduction", "concurrent.futures")
if sys.version_info < (3, 10):
    PREIMPORTED += ("_bootlocale",)        # 3.9's io.TextIOWrapper asks it for the encoding; it branches on win32

# Real functions and values, kept before a profile removes or wraps them (a profile's stand-ins call these).
REAL = types.SimpleNamespace()

# Programs a Linux machine has and macOS and Windows do not: shutil.which finds none of them, and a
# subprocess cannot start one by name (FileNotFoundError, as on those systems).
LINUX_TOOLS = frozenset({"unshare", "setpriv", "nsenter", "useradd", "userdel", "usermod", "groupadd", "groupdel",
                         "runuser", "setfacl", "getfacl", "prlimit", "systemd-run", "chrt", "taskset", "ionice",
                         "cgexec", "capsh", "setcap", "getcap", "bwrap", "firejail", "newuidmap", "newgidmap"})
# Folders only Linux has. /proc: the process file system (macOS has sysctl and libproc instead, Windows the
# Win32 API); /sys: sysfs, where cgroups live; /dev/shm and /dev/mqueue: POSIX shared memory and message queues
# as files (macOS keeps them in the kernel, with no path). /dev itself is not hidden: macOS has /dev (and
# /dev/fd), and the profiles cannot move os.devnull to Windows' "nul".
HIDDEN_FOLDERS = ("/proc", "/sys", "/dev/shm", "/dev/mqueue")
_HINTS = ("proc", "sys", "shm", "mqueue")     # a path holding none of these is in none of them


def keep_real():
    """Keep the real functions the stand-ins need, before any is removed or wrapped."""
    import resource
    import select
    import signal
    import socket
    import subprocess
    REAL.os = types.ModuleType("os")                  # the whole os module as it was (a copy of its namespace)
    REAL.os.__dict__.update(os.__dict__)
    REAL.open = builtins.open
    REAL.Popen = subprocess.Popen
    REAL.resource = resource
    REAL.prlimit = getattr(resource, "prlimit", None)
    REAL.setrlimit = resource.setrlimit
    REAL.select = select.select
    REAL.signal = signal.signal
    REAL.getsignal = signal.getsignal
    REAL.SIGKILL, REAL.SIGINT, REAL.SIGTERM = signal.SIGKILL, signal.SIGINT, signal.SIGTERM
    REAL.SIGSEGV, REAL.SIGXCPU, REAL.SIGABRT = signal.SIGSEGV, signal.SIGXCPU, signal.SIGABRT
    REAL.SIGFPE, REAL.SIGILL = signal.SIGFPE, signal.SIGILL
    REAL.SIGSTOP, REAL.SIGCONT = signal.SIGSTOP, signal.SIGCONT
    REAL.socket_init = socket.socket.__init__
    REAL.socketpair = socket.socketpair
    REAL.AF_UNIX = socket.AF_UNIX


def begin():
    """What every profile does first: the real functions kept, the modules that read sys.platform at import
    imported while it is still the real one, and Linux's folders and tools hidden."""
    keep_real()
    preimport()
    hide_linux_folders()
    hide_linux_tools()


def preimport():
    """Import PREIMPORTED (see there) while sys.platform is still the real one."""
    import importlib
    for name in PREIMPORTED:
        importlib.import_module(name)


def set_platform(value):
    """The last step of a profile: sys.platform as that system's CPython has it. os.name stays "posix", os.sep
    "/", os.pathsep ":", os.linesep "\\n", os.devnull "/dev/null" and os.path posixpath: every file name this
    kernel takes is a POSIX one, so those cannot change."""
    sys.platform = value


class BlockedModules:
    """First on sys.meta_path: ``import NAME`` (or NAME.anything) raises ModuleNotFoundError, as on a system
    whose CPython has no such module. A module already imported is dropped from sys.modules (a module that
    imported it keeps its own reference: only new importers are refused)."""

    def __init__(self, names):
        self.names = frozenset(names)

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

    def install(self):
        sys.meta_path.insert(0, self)
        for name in list(sys.modules):
            if name.partition(".")[0] in self.names:
                del sys.modules[name]


def remove(module, names):
    """Delete ``names`` (those it has) from ``module``: an attribute the system's CPython does not have."""
    for name in names:
        if name in module.__dict__:
            delattr(module, name)


def remove_prefixed(module, prefixes, keep=()):
    """Delete every attribute of ``module`` whose name starts with one of ``prefixes``, except ``keep``."""
    remove(module, [n for n in list(module.__dict__) if n.startswith(tuple(prefixes)) and n not in keep])


class Missing:
    """A class attribute that is not there: its lookup raises AttributeError (so hasattr is False), for a
    method a built-in base class gives that the system's CPython does not have (socket.sendmsg on Windows)."""

    def __init__(self, owner, name):
        self.owner, self.name = owner, name

    def __get__(self, instance, owner=None):
        raise AttributeError(f"{self.owner!r} object has no attribute {self.name!r}")


def rebuild_signals(signal, extra=None):
    """Make signal.Signals again from the SIG* (and CTRL_*) names the module has now, plus ``extra``."""
    import enum
    members = {name: int(value) for name, value in vars(signal).items()
               if (name.startswith("SIG") and not name.startswith("SIG_") or name.startswith("CTRL_"))
               and isinstance(value, int)}
    members.update(extra or {})
    signals = enum.IntEnum("Signals", members, module="signal")
    signal.Signals = signals
    for name, member in signals.__members__.items():
        setattr(signal, name, member)


def processes():
    """``[(pid, parent pid, process group)]`` of every live process, from the real /proc (for stand-ins of the
    system calls that list processes there)."""
    found = []
    for name in REAL.os.listdir("/proc"):
        if name.isdigit():
            try:
                with REAL.open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] not in (b"Z", b"X"):
                found.append((int(name), int(fields[1]), int(fields[2])))
    return found


def address(buffer):
    """The address a ctypes buffer argument stands for (an array, a structure, byref, a pointer, c_void_p, an
    int), or None for NULL."""
    import ctypes
    if buffer is None:
        return None
    if isinstance(buffer, int):
        return buffer or None
    if hasattr(buffer, "_obj"):                          # byref(x)
        return ctypes.addressof(buffer._obj)
    if isinstance(buffer, (ctypes._Pointer, ctypes.c_void_p, ctypes.c_char_p)):
        return ctypes.cast(buffer, ctypes.c_void_p).value
    return ctypes.addressof(buffer)


# ---------------------------------------------------------------- Linux-only folders, invisible

def _text(path):
    """``path`` as text, or None for what is not a path (an fd, None)."""
    if path is None or isinstance(path, int):
        return None
    try:
        path = os.fspath(path)
    except TypeError:
        return None
    return os.fsdecode(path) if isinstance(path, bytes) else path


def hidden(path):
    """True for a path in a Linux-only folder, or for a Linux-only program (LINUX_TOOLS) in a folder of PATH
    (the name written, without following links: /dev/stdin leads to /proc/self/fd/0, and macOS has /dev/stdin)."""
    text = _text(path)
    if text is None:
        return False
    if not any(hint in text for hint in _HINTS) and posixpath.basename(text) not in LINUX_TOOLS:
        return False                                   # the common case, without asking for the current folder
    if not text.startswith("/"):
        text = posixpath.join(REAL.os.getcwd(), text)
    text = "/" + posixpath.normpath(text).lstrip("/")
    if any(text == top or text.startswith(top + "/") for top in HIDDEN_FOLDERS):
        return True
    return posixpath.basename(text) in LINUX_TOOLS and posixpath.dirname(text) in _path_folders()


def _path_folders():
    return {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"} | {
        posixpath.normpath(p) for p in os.environ.get("PATH", "").split(":") if p.startswith("/")}


def _not_found(path):
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


def _path_wrapper(real):
    """``real`` (whose first argument is a path), raising FileNotFoundError for a hidden path."""
    def wrapper(path, *args, **kwargs):
        if hidden(path):
            raise _not_found(path)
        return real(path, *args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = real.__name__
    wrapper.__doc__ = real.__doc__
    wrapper.__wrapped__ = real
    return wrapper


class _Scandir:
    """os.scandir's iterator of the root folder without its Linux-only entries."""

    def __init__(self, entries):
        self.entries = entries

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            entry = next(self.entries)
            if not hidden(entry.path):
                return entry

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def close(self):
        self.entries.close()


def hide_linux_folders():
    """/proc and /sys are not there: every os function that takes a path (and open) raises FileNotFoundError
    for one inside them, so os.path.exists, isdir, isfile... say False, and os.listdir("/") leaves them out.
    Python's own imports use the posix module directly and are unaffected. Both systems: macOS and Windows
    have neither (macOS reads processes through sysctl and libproc, Windows through the Win32 API)."""
    for name in ("stat", "lstat", "open", "access", "readlink", "chdir", "chmod", "chown", "lchown", "utime",
                 "mkdir", "rmdir", "unlink", "remove", "truncate", "statvfs", "getxattr", "listxattr", "setxattr",
                 "removexattr", "pathconf", "chflags", "lchflags", "lchmod", "mkfifo", "mknod"):
        if hasattr(os, name):
            setattr(os, name, _path_wrapper(getattr(os, name)))
    real_listdir, real_scandir = os.listdir, os.scandir

    def listdir(path=None):
        if hidden(path):
            raise _not_found(path)
        names = real_listdir(path) if path is not None else real_listdir()
        if _text(path) is not None and posixpath.normpath(_text(path)) == "/":
            names = [n for n in names if not hidden("/" + os.fsdecode(n))]
        return names

    def scandir(path=None):
        if hidden(path):
            raise _not_found(path)
        entries = real_scandir(path) if path is not None else real_scandir()
        if _text(path) is not None and posixpath.normpath(_text(path)) == "/":
            return _Scandir(entries)
        return entries
    listdir.__doc__, scandir.__doc__ = real_listdir.__doc__, real_scandir.__doc__
    os.listdir, os.scandir = listdir, scandir
    real_open = builtins.open

    def open(file, *args, **kwargs):
        if hidden(file):
            raise _not_found(file)
        return real_open(file, *args, **kwargs)
    open.__doc__ = real_open.__doc__
    builtins.open = io.open = open
    _refresh_supports()


def _refresh_supports():
    """os.supports_dir_fd and its kin hold function objects: those now in os in place of those wrapped."""
    current = {getattr(getattr(os, name, None), "__wrapped__", None): getattr(os, name)
               for name in dir(os) if callable(getattr(os, name, None))}
    for name in ("supports_dir_fd", "supports_fd", "supports_follow_symlinks", "supports_effective_ids",
                 "supports_bytes_environ"):
        value = getattr(os, name, None)
        if isinstance(value, set):
            setattr(os, name, {current.get(f, f) for f in value})


def refresh_supports():
    _refresh_supports()


# ---------------------------------------------------------------- programs only Linux has

def hide_linux_tools():
    """shutil.which finds no LINUX_TOOLS program (its os.access and os.stat now say so), and subprocess cannot
    start one by name or by path (FileNotFoundError, errno 2, as on macOS and Windows)."""
    import subprocess
    real_popen = subprocess.Popen

    class Popen(real_popen):
        def __init__(self, args, *rest, **kwargs):
            program = kwargs.get("executable") or (rest[1] if len(rest) > 1 else None)
            if program is None:
                first = args if isinstance(args, (str, bytes, os.PathLike)) else (list(args) or [""])[0]
                program = first.split()[0] if isinstance(first, str) and kwargs.get("shell") else first
            name = posixpath.basename(_text(program) or "")
            if name in LINUX_TOOLS:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), _text(program))
            super().__init__(args, *rest, **kwargs)
    Popen.__name__ = Popen.__qualname__ = "Popen"
    Popen.__module__ = "subprocess"
    subprocess.Popen = Popen
    return Popen

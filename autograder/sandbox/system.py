"""What this platform offers the sandbox, asked in one place.

The grader runs where students work: Linux, macOS and Windows. Linux has everything the full sandbox uses
(fork and a zygote, a subreaper, /proc, namespaces, cgroups, sandbox users); macOS and Windows start a fresh
Python per part and end its processes by the means they have (``portable``). Every other module asks here,
never ``sys.platform`` or ``os.name`` itself, and never calls a Linux-only function before ``LINUX`` says it
may: on Windows ``os.geteuid`` does not exist, and on macOS ``prctl`` is no symbol of its C library.

    NAME          "linux", "macos", "windows", or sys.platform for another POSIX system
    LINUX         True where the Linux sandbox can run (Linux with /proc)
    cpu_count()   the cores this process may use
    is_root()     True for the superuser (never on Windows)
    READ_ONLY     the flags to read a file with os.open: never through a link, never blocking on a FIFO (where
                  the system has such flags: Windows has neither), in binary mode (Windows' O_BINARY: without
                  it os.read translates line ends and stops at a Ctrl-Z)
    CREATE_NEW    likewise, to create a file that must not exist yet
    libc()        the C library through ctypes, or None (Windows has none to load by that name)
"""
import os
import sys

NAME = {"linux": "linux", "darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform)
SHOWN = {"linux": "Linux", "macos": "macOS", "windows": "Windows"}.get(NAME, sys.platform)      # in messages
LINUX = False
if sys.platform.startswith("linux"):
    LINUX = os.path.isdir("/proc/self/fd")              # the Linux sandbox reads /proc throughout
WINDOWS = NAME == "windows"
O_BINARY = getattr(os, "O_BINARY", 0)
READ_ONLY = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | O_BINARY
CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | O_BINARY


def cpu_count():
    """The cores this process may run on (its affinity where the system has one), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def is_root():
    """True when this process runs as the superuser (where there is one)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


_libc = []                      # [the C library, or None], once loaded


def libc():
    """The C library of this process (``ctypes.CDLL(None)``), or None where none can be loaded so (Windows
    raises TypeError for it; a Python without ctypes raises ImportError)."""
    if not _libc:
        try:
            import ctypes
            _libc.append(ctypes.CDLL(None, use_errno=True))
        except (ImportError, OSError, TypeError):
            _libc.append(None)
    return _libc[0]


def linux_only(what):
    """Why ``what`` (an instructor's command or option) does not run here: its isolation is Linux's."""
    return (f"{what} needs Linux, the only system with the isolation it promises (sandbox users, namespaces, "
            f"the subreaper); this is {SHOWN}. To grade your own code here, run 'python -m autograder'; grade "
            "others' code on a Linux machine, or the course's Gradescope, PrairieLearn or Autolab image.")

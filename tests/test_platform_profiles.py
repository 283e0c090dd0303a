"""The platform kit itself (tests/platforms): each profile's Python shows what macOS's or Windows' CPython shows,
in its grader-style children too, and the Windows job-object stand-in ends a whole tree and limits memory.

Every fact is observed by ``tests/platforms/probe.py`` in the profile's Python and compared with what that
system's CPython shows; the same probe run natively must show otherwise (or, for what the system shares with
Linux, the same), so that no check passes whatever the profile does.
"""
import errno
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from tests.platforms import HERE, profile_python

PROBE = os.path.join(HERE, "probe.py")
MISSING_MODULE = "raised ModuleNotFoundError: No module named '{}'"
POSIX_MODULES = ("resource", "pwd", "grp", "fcntl", "termios", "pty", "tty", "syslog", "posix", "_posixsubprocess")
RUN_ARGS = dict(capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)

WINDOWS = {
    "platform": "win32",
    "os_name_and_sep": ["posix", "/"],                    # cannot change (documented): the kernel's paths
    "posix_only_modules": {name: MISSING_MODULE.format(name) for name in POSIX_MODULES},
    "windows_modules": {"msvcrt": "imported", "_winapi": MISSING_MODULE.format("_winapi"),
                        "winreg": MISSING_MODULE.format("winreg")},
    "os_names": ["O_BINARY", "getlogin", "getppid", "kill", "waitpid"],
    "o_binary": 0,
    "uname_sysname": "raised AttributeError: module 'os' has no attribute 'uname'",
    "platform_system": ["Windows", "AMD64"],
    "proc_visible": [False, False, False, False, False],
    "shared_memory_folder": [False, True],                # /dev/shm is Linux's; /dev stays (see common.py)
    "proc_open": "raised FileNotFoundError: [Errno 2] No such file or directory: '/proc/self/status'",
    "proc_listdir": "raised FileNotFoundError: [Errno 2] No such file or directory: '/proc/self/fd'",
    "proc_os_open": "raised FileNotFoundError: [Errno 2] No such file or directory: '/proc/self/stat'",
    "seqpacket_pair": "raised AttributeError: module 'socket' has no attribute 'AF_UNIX'",
    "seqpacket_socket": "raised AttributeError: module 'socket' has no attribute 'AF_UNIX'",
    "socket_names": [],
    "socketpair_family": "AF_INET",
    "preexec_fn": "raised ValueError: preexec_fn is not supported on Windows platforms",
    "pass_fds": "raised AssertionError: pass_fds not supported on Windows.",
    "run_as_user": "raised ValueError: The 'user' parameter is not supported on the current platform",
    "new_process_group_flag": 0x200,
    "select_pipe": "raised OSError: [Errno 10038] An operation was attempted on something that is not a socket",
    "select_nothing": "raised OSError: [Errno 10022] An invalid argument was supplied",
    "select_socket": [0, 1, 0],
    "select_names": ["SelectSelector"],
    "cdll_none": "raised TypeError: argument of type 'NoneType' is not iterable",
    "cdll_prctl": "raised TypeError: argument of type 'NoneType' is not iterable",
    "cdll_linux_name": "raised FileNotFoundError: Could not find module 'libc.so.6' (or one of its dependencies). "
                       "Try using the full path with constructor syntax.",
    "find_library_c": None,
    "libproc_children": "raised TypeError: argument of type 'NoneType' is not iterable",
    "suspended_until_resumed": [False, 0, "ran"],
    "windows_ctypes": ["FormatError", "WinDLL", "WinError", "get_last_error", "windll"],
    "rlimit_as": MISSING_MODULE.format("resource"),
    "resource_names": MISSING_MODULE.format("resource"),
    "signal_names": ["CTRL_BREAK_EVENT", "CTRL_C_EVENT", "SIGBREAK", "SIGINT", "SIGTERM"],
    "signals_enum": ["SIGBREAK", "SIGINT"],
    "signal_sigusr1": "raised ValueError: invalid signal value",
    "terminate_returncode": 1,                            # TerminateProcess(handle, 1)
    "kill_returncode": 7,                                 # os.kill(pid, 7): TerminateProcess(handle, 7)
    "kill_nobody": "raised OSError: [Errno 22] The parameter is incorrect",   # WinError 87
    "dir_fd": "raised NotImplementedError: dir_fd unavailable on this platform",
    "open_folder": "raised PermissionError: [Errno 13] Permission denied: '/'",
    "listdir_fd": "raised TypeError: listdir: path should be string, bytes, os.PathLike or None, not int",
    "which_linux_tools": {"unshare": False, "setfacl": False, "prlimit": False},
    "run_linux_tool": "raised FileNotFoundError: [Errno 2] No such file or directory: 'unshare'",
    "start_methods": [["spawn"], "spawn"],
    "child_profile": "win32",
    "numpy_computes": [285.0, [0.1, 0.6]],
    "files_and_temporary_folders": ["ok", False],
    "faulthandler_later": False,                          # no faulthandler.register on Windows
}
MACOS = dict(WINDOWS, **{
    "platform": "darwin",
    "posix_only_modules": {name: "imported" for name in POSIX_MODULES},
    "windows_modules": {name: MISSING_MODULE.format(name) for name in ("msvcrt", "_winapi", "winreg")},
    "os_names": sorted(["fork", "setsid", "setpgid", "killpg", "getpgid", "wait4", "WNOHANG", "geteuid", "getuid",
                        "uname", "O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC", "O_NONBLOCK", "posix_spawn", "sysconf",
                        "kill", "waitpid", "getlogin", "getppid"] + (["waitid"] if sys.version_info >= (3, 13) else [])),
    "o_binary": "raised AttributeError: module 'os' has no attribute 'O_BINARY'",
    "uname_sysname": "Darwin",
    "platform_system": ["Darwin", "arm64"],
    "seqpacket_pair": f"raised OSError: [Errno {errno.EPROTONOSUPPORT}] Protocol not supported",
    "seqpacket_socket": f"raised OSError: [Errno {errno.EPROTONOSUPPORT}] Protocol not supported",
    "socket_names": ["AF_UNIX", "recv_fds", "send_fds", "sendmsg"],
    "socketpair_family": "AF_UNIX",
    "preexec_fn": 0, "pass_fds": 0, "run_as_user": 0,
    "new_process_group_flag": None,
    "select_pipe": [0, 1, 0],
    "select_nothing": [0, 0, 0],
    "select_names": ["poll", "PollSelector"],
    "cdll_none": True,
    "cdll_prctl": "raised AttributeError: dlsym(RTLD_DEFAULT, prctl): symbol not found",
    "cdll_linux_name": "raised OSError: dlopen(libc.so.6, 0x0006): tried: 'libc.so.6' (no such file), "
                       "'/usr/lib/libc.so.6' (no such file, not in dyld cache), 'libc.so.6' (no such file)",
    "find_library_c": "/usr/lib/libc.dylib",
    "libproc_children": True,
    "suspended_until_resumed": "raised AttributeError: module 'subprocess' has no attribute 'CREATE_NEW_PROCESS_GROUP'",
    "windows_ctypes": [],
    "rlimit_as": "raised ValueError: current limit exceeds maximum limit",
    "resource_names": ["RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_NPROC"],
    "signal_names": ["SIGALRM", "SIGCHLD", "SIGINT", "SIGKILL", "SIGSTOP", "SIGTERM", "SIGUSR1", "SIGXCPU", "alarm",
                     "pthread_sigmask", "setitimer"],
    "signals_enum": ["SIGINT", "SIGKILL"],               # and no SIGRTMIN
    "signal_sigusr1": 0,
    "terminate_returncode": -15,
    "kill_returncode": -7,
    "kill_nobody": "raised ProcessLookupError: [Errno 3] No such process",
    "dir_fd": True,
    "open_folder": "opened",
    "listdir_fd": "raised NotADirectoryError: [Errno 20] Not a directory: 0",
    "start_methods": [["spawn", "fork", "forkserver"], "spawn"],
    "child_profile": "darwin",
    "faulthandler_later": True,
})
EXPECTED = {"macos": MACOS, "windows": WINDOWS}
# what the profile shows as Linux does (the system shares it, or it cannot change): the native run must agree
SAME_AS_LINUX = {
    "macos": {"os_name_and_sep", "posix_only_modules", "windows_modules", "o_binary", "socketpair_family",
              "preexec_fn", "pass_fds", "run_as_user", "new_process_group_flag", "select_pipe", "select_nothing",
              "select_socket", "cdll_none", "windows_ctypes", "signal_sigusr1", "terminate_returncode",
              "kill_returncode", "kill_nobody", "dir_fd", "open_folder", "listdir_fd", "numpy_computes",
              "suspended_until_resumed",
              "files_and_temporary_folders", "faulthandler_later"},
    "windows": {"os_name_and_sep", "select_socket", "numpy_computes", "files_and_temporary_folders"},
}

_observed = {}


def observed(python):
    """The probe's observations in ``python`` (run once per python in this test process)."""
    if python not in _observed:
        proc = subprocess.run([python, "-I", "-B", PROBE], cwd=HERE, **RUN_ARGS)
        assert proc.returncode == 0, proc.stderr
        _observed[python] = json.loads(proc.stdout)
    return _observed[python]


@pytest.mark.parametrize("profile, fact", [(p, f) for p in ("macos", "windows") for f in EXPECTED[p]])
def test_the_profile_shows_what_that_system_shows(profile, fact, tmp_path_factory):
    seen = observed(profile_python(profile, tmp_path_factory))
    assert seen[fact] == EXPECTED[profile][fact]


@pytest.mark.parametrize("profile", ["macos", "windows"])
def test_linux_shows_otherwise_so_each_check_can_fail(profile):
    native = observed(sys.executable)
    same = {fact for fact in EXPECTED[profile] if native[fact] == EXPECTED[profile][fact]}
    assert same == SAME_AS_LINUX[profile]


def test_a_profile_is_kept_in_a_minimal_environment_and_by_python_I(platform_python, tmp_path):
    """The grader starts its children as python -I -B with a minimal environment: they simulate all the same,
    and so do theirs."""
    code = ("import subprocess, sys; print(sys.platform); sys.stdout.flush(); "
            "subprocess.run([sys.executable, '-I', '-B', '-c', 'import sys; print(sys.platform)'], env={})")
    proc = subprocess.run([platform_python, "-I", "-B", "-c", code], cwd=tmp_path, env={}, **RUN_ARGS)
    first, second = proc.stdout.split()
    assert first == second and first in ("darwin", "win32"), proc.stderr


# ---------------------------------------------------------------- the Windows job object stand-in

JOB = r'''
import ctypes, subprocess, sys, time
from ctypes import wintypes

class BASIC(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD), ("SchedulingClass", wintypes.DWORD)]

class IO(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("Reads", "Writes", "Others", "ReadBytes", "WriteBytes", "OtherBytes")]

class EXTENDED(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", BASIC), ("IoInfo", IO), ("ProcessMemoryLimit", ctypes.c_size_t),
                ("JobMemoryLimit", ctypes.c_size_t), ("PeakProcessMemoryUsed", ctypes.c_size_t),
                ("PeakJobMemoryUsed", ctypes.c_size_t)]

class ACCOUNTING(ctypes.Structure):
    _fields_ = [("TotalUserTime", ctypes.c_int64), ("TotalKernelTime", ctypes.c_int64),
                ("ThisPeriodTotalUserTime", ctypes.c_int64), ("ThisPeriodTotalKernelTime", ctypes.c_int64),
                ("TotalPageFaultCount", wintypes.DWORD), ("TotalProcesses", wintypes.DWORD),
                ("ActiveProcesses", wintypes.DWORD), ("TotalTerminatedProcesses", wintypes.DWORD)]

kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
kernel32.CreateJobObjectW.restype = wintypes.HANDLE
MARKER, HOW = sys.argv[1], sys.argv[2]
job = kernel32.CreateJobObjectW(None, None)
info = EXTENDED()
info.BasicLimitInformation.LimitFlags = 0x2000 | 0x100          # KILL_ON_JOB_CLOSE | PROCESS_MEMORY
info.ProcessMemoryLimit = 1 << 30
assert kernel32.SetInformationJobObject(job, 9, ctypes.byref(info), ctypes.sizeof(info))
# the child starts a looping grandchild, and another with CREATE_NEW_PROCESS_GROUP (it stays in the job), then
# exits: both grandchildren are orphans
child = ("import subprocess, sys; loop = [sys.executable, '-c', 'while True: pass', sys.argv[1]]; "
         "subprocess.Popen(loop); subprocess.Popen(loop, creationflags=subprocess.CREATE_NEW_PROCESS_GROUP)")
proc = subprocess.Popen([sys.executable, "-c", child, MARKER], creationflags=subprocess.CREATE_NEW_PROCESS_GROUP)
assert kernel32.AssignProcessToJobObject(job, int(proc._handle)), ctypes.get_last_error()
proc.wait()
time.sleep(0.5)                                   # the grandchildren run a while
accounting = ACCOUNTING()
assert kernel32.QueryInformationJobObject(job, 1, ctypes.byref(accounting), ctypes.sizeof(accounting), None)
print(proc.returncode, accounting.ActiveProcesses, accounting.TotalUserTime > 0, flush=True)
sys.stdin.readline()                              # the test has seen them running
if HOW == "terminate":
    assert kernel32.TerminateJobObject(job, 3)
    time.sleep(0.5)
elif HOW == "close":
    assert kernel32.CloseHandle(job)
    time.sleep(0.5)
else:
    import os
    os._exit(0)                                   # its handles close with it: the job is killed
'''


def _running(marker, but=None):
    """Pids of the live processes whose command line holds ``marker`` (read from the real /proc: this test
    process is not simulated), but ``but``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != but:
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def _gone(marker, seconds=10.0):
    deadline = time.monotonic() + seconds
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _running(marker)


@pytest.mark.parametrize("how", ["terminate", "close", "exit"])
def test_a_job_object_ends_the_whole_tree_even_orphans(how, tmp_path_factory, tmp_path):
    """TerminateJobObject, closing the last handle of a KILL_ON_JOB_CLOSE job, or the end of the process holding
    it: every process the job's process started is gone, grandchildren whose parent had exited included."""
    marker = f"mytorch-job-{uuid.uuid4().hex}"
    python = profile_python("windows", tmp_path_factory)
    proc = subprocess.Popen([python, "-I", "-B", "-c", JOB, marker, how], cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = proc.stdout.readline().split()
        running = _running(marker, but=proc.pid)
        assert said == ["0", "2", "True"], proc.stderr.read() if not said else said
        assert len(running) == 2                          # both grandchildren run: the check below can fail
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(30) == 0, proc.stderr.read()
        assert _gone(marker) == []
    finally:
        proc.kill()
        for pid in _running(marker):
            os.kill(pid, 9)


MEMORY = r'''
import ctypes, subprocess, sys
from ctypes import wintypes

class BASIC(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD), ("SchedulingClass", wintypes.DWORD)]

class EXTENDED(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", BASIC), ("IoInfo", ctypes.c_uint64 * 6), ("ProcessMemoryLimit", ctypes.c_size_t),
                ("JobMemoryLimit", ctypes.c_size_t), ("PeakProcessMemoryUsed", ctypes.c_size_t),
                ("PeakJobMemoryUsed", ctypes.c_size_t)]

kernel32 = ctypes.windll.kernel32
kernel32.CreateJobObjectW.restype = wintypes.HANDLE
job = kernel32.CreateJobObjectW(None, None)
info = EXTENDED()
info.BasicLimitInformation.LimitFlags = 0x100 if sys.argv[1] == "limited" else 0
info.ProcessMemoryLimit = 600 << 20
kernel32.SetInformationJobObject(job, 9, ctypes.pointer(info), ctypes.sizeof(info))
grow = "import sys; sys.stdin.readline(); b = bytearray(800 << 20); print(len(b) >> 20)"
child = subprocess.Popen([sys.executable, "-c", grow], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, creationflags=subprocess.CREATE_NEW_PROCESS_GROUP)
kernel32.AssignProcessToJobObject(job, int(child._handle))
out, err = child.communicate("go\n", timeout=60)
print(child.returncode, out.strip() or err.strip().splitlines()[-1])
'''


@pytest.mark.parametrize("limit, said", [("limited", "1 MemoryError"), ("unlimited", "0 800")])
def test_a_job_memory_limit_makes_a_large_allocation_fail(limit, said, tmp_path_factory, tmp_path):
    python = profile_python("windows", tmp_path_factory)
    proc = subprocess.run([python, "-I", "-B", "-c", MEMORY, limit], cwd=tmp_path, **RUN_ARGS)
    assert proc.stdout.strip() == said, proc.stderr


def test_a_job_refuses_a_process_that_is_not_the_leader_of_its_group(tmp_path_factory, tmp_path):
    """Without CREATE_NEW_PROCESS_GROUP the simulation could not follow the process's children: it says so
    (Windows itself would take it), rather than leave them out of the job."""
    code = ("import ctypes, subprocess, sys\nk = ctypes.windll.kernel32\njob = k.CreateJobObjectW(None, None)\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
            "try:\n    k.AssignProcessToJobObject(job, int(p._handle))\nfinally:\n    p.kill()\n")
    proc = subprocess.run([profile_python("windows", tmp_path_factory), "-I", "-B", "-c", code], cwd=tmp_path,
                          **RUN_ARGS)
    assert "RuntimeError: simulated Windows" in proc.stderr and "CREATE_NEW_PROCESS_GROUP" in proc.stderr

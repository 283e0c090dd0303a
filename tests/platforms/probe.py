"""What a Python shows of the facts a profile simulates, one observation per name, printed as JSON.

    python -I -B probe.py            (by path: it imports nothing of this checkout)

Run in a profile's Python and natively (tests/test_platform_profiles.py): each observation is a plain value, or
"raised NAME: message" for what raised, so a test compares it with what the system's CPython shows, and the
native run shows that the comparison can fail.
"""
import json
import os
import sys

OBSERVED = {}


def observe(function):
    try:
        OBSERVED[function.__name__] = function()
    except BaseException as error:
        OBSERVED[function.__name__] = f"raised {type(error).__name__}: {error}"
    return function


def imports(name):
    try:
        __import__(name)
        return "imported"
    except ImportError as error:
        return f"raised {type(error).__name__}: {error}"


@observe
def platform():
    return sys.platform


@observe
def os_name_and_sep():
    return [os.name, os.sep]


@observe
def posix_only_modules():
    return {name: imports(name) for name in ("resource", "pwd", "grp", "fcntl", "termios", "pty", "tty", "syslog",
                                             "posix", "_posixsubprocess")}


@observe
def windows_modules():
    return {name: imports(name) for name in ("msvcrt", "_winapi", "winreg")}


@observe
def os_names():
    names = ("fork", "setsid", "setpgid", "killpg", "getpgid", "wait4", "waitid", "WNOHANG", "geteuid", "getuid",
             "sched_getaffinity", "uname", "O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC", "O_NONBLOCK", "O_PATH", "pipe2",
             "memfd_create", "pidfd_open", "getxattr", "posix_spawn", "sysconf", "getresuid", "kill", "waitpid",
             "getlogin", "getppid", "O_BINARY")
    return sorted(name for name in names if hasattr(os, name))


@observe
def o_binary():
    return os.O_BINARY


@observe
def uname_sysname():
    return os.uname().sysname


@observe
def platform_system():
    import platform
    return [platform.system(), platform.machine()]


@observe
def proc_visible():
    return [os.path.exists("/proc/self"), os.path.isdir("/proc"), "proc" in os.listdir("/"),
            os.path.exists("/sys/fs/cgroup"), os.path.exists("/proc/../proc/self/status")]


@observe
def shared_memory_folder():
    return [os.path.exists("/dev/shm"), os.path.exists("/dev/null")]


@observe
def proc_open():
    with open("/proc/self/status") as f:
        return f.read(4)


@observe
def proc_listdir():
    return len(os.listdir("/proc/self/fd")) > 0


@observe
def proc_os_open():
    os.close(os.open("/proc/self/stat", os.O_RDONLY))
    return "opened"


@observe
def seqpacket_pair():
    import socket
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    a.close()
    b.close()
    return "made"


@observe
def seqpacket_socket():
    import socket
    socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).close()
    return "made"


@observe
def socket_names():
    import socket
    return sorted(name for name in ("AF_UNIX", "send_fds", "recv_fds", "SOCK_CLOEXEC", "SO_PEERCRED")
                  if hasattr(socket, name)) + (["sendmsg"] if hasattr(socket.socket, "sendmsg") else [])


@observe
def socketpair_family():
    import socket
    a, b = socket.socketpair()
    family = a.family.name
    a.close()
    b.close()
    return family


@observe
def preexec_fn():
    import subprocess
    return subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None).returncode


@observe
def pass_fds():
    import subprocess
    r, w = os.pipe()
    try:
        return subprocess.run([sys.executable, "-c", "pass"], pass_fds=[w]).returncode
    finally:
        os.close(r)
        os.close(w)


@observe
def run_as_user():
    import subprocess
    user = os.getuid() if hasattr(os, "getuid") else 0
    return subprocess.run([sys.executable, "-c", "pass"], user=user).returncode


@observe
def new_process_group_flag():
    import subprocess
    return getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", None)


@observe
def select_pipe():
    import select
    r, w = os.pipe()
    try:
        return [len(x) for x in select.select([r], [w], [], 0)]
    finally:
        os.close(r)
        os.close(w)


@observe
def select_nothing():
    import select
    return [len(x) for x in select.select([], [], [], 0)]


@observe
def select_socket():
    import select
    import socket
    a, b = socket.socketpair()
    try:
        return [len(x) for x in select.select([a], [b], [], 0)]
    finally:
        a.close()
        b.close()


@observe
def select_names():
    import select
    import selectors
    return sorted(n for n in ("poll", "epoll", "kqueue") if hasattr(select, n)) + [selectors.DefaultSelector.__name__]


@observe
def cdll_none():
    import ctypes
    libc = ctypes.CDLL(None)
    return libc.getpid() == os.getpid()


@observe
def cdll_prctl():
    import ctypes
    ctypes.CDLL(None).prctl
    return "found"


@observe
def cdll_linux_name():
    import ctypes
    ctypes.CDLL("libc.so.6")
    return "loaded"


@observe
def libproc_children():
    import ctypes
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pids = (ctypes.c_int * 4096)()
        count = libc.proc_listchildpids(os.getpid(), pids, ctypes.sizeof(pids))
        return child.pid in list(pids[:count])
    finally:
        child.kill()
        child.wait()


@observe
def suspended_until_resumed():
    import ctypes
    import subprocess
    import time
    child = subprocess.Popen([sys.executable, "-c", "print('ran')"], stdout=subprocess.PIPE, text=True,
                             creationflags=subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_SUSPENDED)
    time.sleep(1.0)
    ended_before = child.poll() is not None
    status = ctypes.WinDLL("ntdll").NtResumeProcess(int(child._handle))
    return [ended_before, status, child.communicate(timeout=60)[0].strip()]


@observe
def find_library_c():
    import ctypes.util
    return ctypes.util.find_library("c")


@observe
def windows_ctypes():
    import ctypes
    return sorted(n for n in ("windll", "WinDLL", "get_last_error", "WinError", "FormatError") if hasattr(ctypes, n))


@observe
def rlimit_as():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (1 << 40, hard))
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return "set"


@observe
def resource_names():
    import resource
    return sorted(n for n in ("prlimit", "RLIMIT_CPU", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_MSGQUEUE")
                  if hasattr(resource, n))


@observe
def signal_names():
    import signal
    return sorted(n for n in ("SIGKILL", "SIGSTOP", "SIGCHLD", "SIGXCPU", "SIGALRM", "SIGUSR1", "SIGRTMIN", "SIGBREAK",
                              "CTRL_C_EVENT", "CTRL_BREAK_EVENT", "alarm", "setitimer", "pthread_sigmask",
                              "sigtimedwait", "SIGINT", "SIGTERM") if hasattr(signal, n))


@observe
def signals_enum():
    import signal
    return sorted(n for n in ("SIGKILL", "SIGINT", "SIGBREAK", "SIGRTMIN") if n in signal.Signals.__members__)


@observe
def signal_sigusr1():
    import signal
    return int(signal.getsignal(10))


@observe
def terminate_returncode():
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    child.terminate()
    return child.wait(30)


@observe
def kill_returncode():
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    os.kill(child.pid, 7)
    return child.wait(30)


@observe
def kill_nobody():
    os.kill(2 ** 22 + 1, 15)
    return "sent"


@observe
def dir_fd():
    return os.stat("/", dir_fd=1).st_mode > 0           # dir_fd is not read for an absolute path


@observe
def open_folder():
    os.close(os.open("/", os.O_RDONLY))
    return "opened"


@observe
def listdir_fd():
    return os.listdir(0)


@observe
def which_linux_tools():
    import shutil
    return {name: shutil.which(name) is not None for name in ("unshare", "setfacl", "prlimit")}


@observe
def run_linux_tool():
    import subprocess
    return subprocess.run(["unshare", "--help"], capture_output=True).returncode


@observe
def start_methods():
    import multiprocessing
    return [multiprocessing.get_all_start_methods(), multiprocessing.get_start_method()]


@observe
def child_profile():
    import subprocess
    return subprocess.run([sys.executable, "-I", "-B", "-c", "import sys; print(sys.platform)"], env={},
                          capture_output=True, text=True, timeout=60).stdout.strip()


@observe
def numpy_computes():
    import numpy as np
    a = np.array([[4.0, 1.0], [2.0, 3.0]])
    return [float((np.arange(10) ** 2).sum()), [round(float(x), 9) for x in np.linalg.solve(a, [1.0, 2.0])]]


@observe
def files_and_temporary_folders():
    import shutil
    import tempfile
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "a.txt"), "w") as f:
        f.write("ok")
    with open(os.path.join(folder, "a.txt")) as f:
        text = f.read()
    shutil.rmtree(folder)
    return [text, os.path.exists(folder)]


@observe
def faulthandler_later():
    import faulthandler
    faulthandler.dump_traceback_later(60)
    faulthandler.cancel_dump_traceback_later()
    return hasattr(faulthandler, "register")


if __name__ == "__main__":
    print(json.dumps(OBSERVED))

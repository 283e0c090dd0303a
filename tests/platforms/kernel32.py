"""A stand-in for ``ctypes.windll.kernel32`` (and ``ntdll``) in the Windows profile: the Win32 calls a grader
makes to confine a child in a *job object*, with Windows' signatures and return conventions (a BOOL nonzero on
success; 0, or a NULL handle, on failure with the thread's last error set: ``GetLastError()``,
``ctypes.get_last_error()``).

How a job is simulated. Windows puts every process a job's process starts in the job, wherever it ends up in
the tree, and the job cannot be left. Here a job is a set of POSIX process groups: ``AssignProcessToJobObject``
takes a process started with ``subprocess.CREATE_NEW_PROCESS_GROUP`` (the profile's Popen makes it the leader
of a new group) and adds its group, which everything it starts inherits (the profile removes setsid, setpgid
and fork, so code inside cannot leave it; a CREATE_NEW_PROCESS_GROUP asked for from inside stays in it).
``TerminateJobObject`` kills those groups with SIGKILL. Limits: JOB_OBJECT_LIMIT_PROCESS_MEMORY and
JOB_MEMORY become RLIMIT_AS of the assigned process (inherited by what it starts later; address space, where
Windows counts committed memory; the job-wide total is not summed), JOB_OBJECT_LIMIT_PROCESS_TIME becomes
RLIMIT_CPU (user and system time; Windows counts user time), through the real ``resource.prlimit``.
KILL_ON_JOB_CLOSE: closing the job's last handle kills it, and so does the end of the process holding it,
however it ends (a watchdog process that holds a pipe from it), as Windows closes a dead process's handles.
ACTIVE_PROCESS is recorded, not enforced. What is read from a structure is read by field name
(``BasicLimitInformation.LimitFlags``, ``ProcessMemoryLimit``...), so any ``ctypes.Structure`` laid out as
Windows' works, whatever its field types; it may be passed by ``byref``, ``pointer`` or itself.

Exit codes: a process ended by TerminateJobObject(job, code), TerminateProcess(h, code) or os.kill(pid, code)
is reported by the profile's Popen with that code (``EXIT_CODES``), never a negative one.
"""
import ctypes
import os
import sys
import threading

from . import common

# Windows' error codes (winerror.h) the stand-ins set
ERROR_ACCESS_DENIED, ERROR_INVALID_HANDLE, ERROR_INVALID_PARAMETER = 5, 6, 87
MESSAGES = {0: "The operation completed successfully.", 2: "The system cannot find the file specified.",
            5: "Access is denied.", 6: "The handle is invalid.", 8: "Not enough memory resources are available "
            "to process this command.", 87: "The parameter is incorrect.", 183: "Cannot create a file when that file already exists.", 1816: "Not enough quota is available "
            "to process this command.", 10022: "An invalid argument was supplied.",
            10038: "An operation was attempted on something that is not a socket.",
            10047: "An address incompatible with the requested protocol was used."}
TO_ERRNO = {2: 2, 5: 13, 6: 9, 8: 12, 87: 22}          # CPython's winerror_to_errno for these (else EINVAL)

JobObjectBasicAccountingInformation, JobObjectBasicLimitInformation = 1, 2
JobObjectExtendedLimitInformation = 9
JOB_OBJECT_LIMIT_PROCESS_TIME, JOB_OBJECT_LIMIT_ACTIVE_PROCESS = 0x2, 0x8
JOB_OBJECT_LIMIT_PROCESS_MEMORY, JOB_OBJECT_LIMIT_JOB_MEMORY = 0x100, 0x200
JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x400, 0x2000
CURRENT_PROCESS = -1                                     # GetCurrentProcess()'s pseudo handle

EXIT_CODES = {}                  # pid -> the exit code Windows would report for a process a stand-in ended
FINAL_TIMES = {}                 # pid -> (user, system) seconds, kept as the profile's Popen reaps it
_lock = threading.RLock()
_state = threading.local()
_handles = {}                    # handle -> ("process", pid) or a _Job
_next = [0x100]                  # Windows' handles are multiples of 4


# ---------------------------------------------------------------- the thread's last error

def get_last_error():
    return getattr(_state, "error", 0)


def set_last_error(code):
    old, _state.error = get_last_error(), code
    return old


def _fail(code, result=0):
    set_last_error(code)
    return result


def format_error(code=None):
    code = get_last_error() if code is None else code
    return MESSAGES.get(code, "<no description>")


def win_error(code=None, descr=None):
    """ctypes.WinError: OSError(None, descr, None, code) on Windows, whose errno is mapped from the Windows
    error (5 is EACCES, so a PermissionError) and whose ``winerror`` is the code."""
    code = get_last_error() if code is None else code
    error = OSError(TO_ERRNO.get(code, 22), format_error(code) if descr is None else descr)
    error.winerror = code
    return error


# ---------------------------------------------------------------- handles

def _new_handle(thing):
    with _lock:
        _next[0] += 4
        _handles[_next[0]] = thing
        return _next[0]


def process_handle(pid):
    """A new handle to process ``pid`` (what Popen._handle holds in the profile)."""
    return _new_handle(("process", pid))


def _plain(arg):
    """An argument as the C function would see it: a number for a simple ctypes value or a handle, the object
    itself for a structure or a ``byref``."""
    if arg is None:
        return 0
    if isinstance(arg, ctypes._SimpleCData):
        return arg.value if arg.value is not None else 0
    return arg


def _pid_of(handle):
    handle = _plain(handle)
    if isinstance(handle, int) and handle in (CURRENT_PROCESS, (1 << 64) - 1, (1 << 32) - 1):
        return os.getpid()
    thing = _handles.get(handle)
    return thing[1] if isinstance(thing, tuple) and thing[0] == "process" else None


def _job_of(handle):
    thing = _handles.get(_plain(handle))
    return thing if isinstance(thing, _Job) else None


def _target(arg):
    """The structure a pointer argument leads to: ``byref(x)`` (its ``_obj``), ``pointer(x)``, or ``x``."""
    if hasattr(arg, "_obj"):
        return arg._obj
    if isinstance(arg, ctypes._Pointer):
        return arg.contents
    return arg if isinstance(arg, (ctypes.Structure, ctypes.Union, ctypes._SimpleCData)) else None


def _field(structure, *names):
    """The first of the dotted ``names`` ``structure`` has, as a number (None if it has none of them)."""
    for name in names:
        value = structure
        for part in name.split("."):
            value = getattr(value, part, None)
            if value is None:
                break
        if value is not None:
            return value.value if isinstance(value, ctypes._SimpleCData) else value
    return None


def _set_field(structure, value, *names):
    for name in names:
        *path, last = name.split(".")
        owner = structure
        for part in path:
            owner = getattr(owner, part, None)
        if owner is not None and hasattr(owner, last):
            setattr(owner, last, value)
            return


def _store(arg, value):
    """Write the 64-bit ``value`` where ``arg`` points: a FILETIME (dwLowDateTime, dwHighDateTime), a
    LARGE_INTEGER or any integer type."""
    target = _target(arg)
    if target is None:
        return
    if hasattr(target, "dwLowDateTime"):
        target.dwLowDateTime, target.dwHighDateTime = value & 0xFFFFFFFF, value >> 32
    elif hasattr(target, "QuadPart"):
        target.QuadPart = value
    else:
        target.value = value


# ---------------------------------------------------------------- processes, read from the real /proc

def _stat(pid):
    """Fields of /proc/PID/stat after the command (state first), or None if there is no such process."""
    try:
        with common.REAL.open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _alive(pid):
    fields = _stat(pid)
    return fields is not None and fields[0] not in (b"Z", b"X")


def _members(groups):
    """The pids of every process (zombies included) in the process groups ``groups``."""
    found = []
    for name in common.REAL.os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(name)
            if fields is not None and int(fields[2]) in groups:
                found.append(int(name))
    return found


def keep_times(pid):
    """Keep the times of ``pid`` (with those of the children it reaped) before it is reaped (FINAL_TIMES)."""
    fields = _stat(pid)
    if fields is not None:
        FINAL_TIMES[pid] = ((int(fields[11]) + int(fields[13])) / _ticks(), (int(fields[12]) + int(fields[14])) / _ticks())


def _ticks():
    return common.REAL.os.sysconf("SC_CLK_TCK")


def _kill_groups(groups):
    for group in groups:
        for _ in range(2):                               # a fork under way when the first came gets the second
            try:
                common.REAL.os.killpg(group, common.REAL.SIGKILL)
            except (ProcessLookupError, PermissionError):
                break


# ---------------------------------------------------------------- job objects

class _Job:
    def __init__(self):
        self.groups, self.pids, self.handles = set(), [], 1
        self.flags, self.process_memory, self.job_memory, self.active_processes, self.process_time = 0, 0, 0, 0, 0

    def limit_pid(self, pid):
        """Apply the job's limits to the assigned process ``pid`` (what it starts later inherits them)."""
        resource = common.REAL.resource
        memory = [m for m, flag in ((self.process_memory, JOB_OBJECT_LIMIT_PROCESS_MEMORY),
                                    (self.job_memory, JOB_OBJECT_LIMIT_JOB_MEMORY)) if self.flags & flag and m]
        try:
            if memory:
                common.REAL.prlimit(pid, resource.RLIMIT_AS, (min(memory), min(memory)))
            if self.flags & JOB_OBJECT_LIMIT_PROCESS_TIME and self.process_time:
                seconds = max(1, -(-self.process_time // 10_000_000))
                common.REAL.prlimit(pid, resource.RLIMIT_CPU, (seconds, seconds + 1))
        except (ProcessLookupError, PermissionError):
            pass

    def terminate(self, code):
        with _lock:
            groups = set(self.groups)
            for thing in list(_handles.values()):
                if isinstance(thing, tuple) and thing[0] == "process":
                    try:
                        if common.REAL.os.getpgid(thing[1]) in groups:
                            EXIT_CODES[thing[1]] = code
                    except OSError:
                        pass
        _kill_groups(groups)

    def accounting(self):
        """(user, kernel) in 100 ns units, live processes: the job's processes alive or not yet reaped, with the
        children they reaped, and (FINAL_TIMES) those the profile's Popen reaped."""
        user = kernel = active = 0
        scale = 10_000_000 / _ticks()
        for pid in _members(self.groups):
            fields = _stat(pid)
            if fields is None:
                continue
            active += fields[0] not in (b"Z", b"X")
            user += int(fields[11]) + int(fields[13])
            kernel += int(fields[12]) + int(fields[14])
        user, kernel = user * scale, kernel * scale
        for pid in self.pids:
            if pid in FINAL_TIMES:
                user += FINAL_TIMES[pid][0] * 1e7
                kernel += FINAL_TIMES[pid][1] * 1e7
        return int(user), int(kernel), active


class _Watchdog:
    """One helper process per process that holds a KILL_ON_JOB_CLOSE job: it reads which groups such jobs hold,
    and when this process ends (its pipe closes), it kills those still held, as Windows does when a dead
    process's handles are closed. Started without the profile (-S), in a session of its own, its output
    nowhere (a reader of this process's output never waits for it)."""
    SCRIPT = ("import os, signal, sys\njobs = {}\nfor line in sys.stdin:\n    op, job, *group = line.split()\n"
              "    if op == 'add':\n        jobs.setdefault(job, set()).add(int(group[0]))\n"
              "    else:\n        jobs.pop(job, None)\nfor groups in jobs.values():\n    for group in groups:\n"
              "        for _ in range(2):\n            try:\n                os.killpg(group, signal.SIGKILL)\n"
              "            except OSError:\n                pass\n")
    proc = None

    @classmethod
    def send(cls, line):
        with _lock:
            try:
                if cls.proc is None:
                    cls.proc = common.REAL.Popen([sys.executable, "-I", "-S", "-c", cls.SCRIPT], stdin=-1,
                                                 stdout=-3, stderr=-3, start_new_session=True, cwd="/")
                cls.proc.stdin.write(line.encode() + b"\n")
                cls.proc.stdin.flush()
            except OSError:
                pass


def _watch(job):
    if job.flags & JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE:
        for group in job.groups:
            _Watchdog.send(f"add {id(job)} {group}")
    elif _Watchdog.proc is not None:
        _Watchdog.send(f"drop {id(job)}")


# ---------------------------------------------------------------- the functions

def OpenProcess(access, inherit, pid):
    if not pid:
        return _fail(ERROR_INVALID_PARAMETER)
    try:
        common.REAL.os.kill(pid, 0)
    except ProcessLookupError:
        return _fail(ERROR_INVALID_PARAMETER)           # what OpenProcess says of a pid no process has
    except PermissionError:
        return _fail(ERROR_ACCESS_DENIED)
    return process_handle(pid)


def CloseHandle(handle):
    with _lock:
        thing = _handles.pop(_plain(handle), None)
        if thing is None:
            return _fail(ERROR_INVALID_HANDLE)
        if isinstance(thing, _Job):
            thing.handles -= 1
            if thing.handles == 0 and thing.flags & JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE:
                thing.terminate(0)                       # the exit code of this case is not documented: 0 here
            if thing.handles == 0 and _Watchdog.proc is not None:
                _Watchdog.send(f"drop {id(thing)}")
    return 1


def CreateJobObjectW(attributes, name):
    return _new_handle(_Job())                           # a named job is not looked up by its name here


CreateJobObjectA = CreateJobObjectW


def SetInformationJobObject(job_handle, info_class, info, size):
    job, target = _job_of(job_handle), _target(info)
    if job is None:
        return _fail(ERROR_INVALID_HANDLE)
    if info_class in (JobObjectBasicLimitInformation, JobObjectExtendedLimitInformation):
        if target is None:
            return _fail(ERROR_INVALID_PARAMETER)
        job.flags = _field(target, "BasicLimitInformation.LimitFlags", "LimitFlags") or 0
        job.active_processes = _field(target, "BasicLimitInformation.ActiveProcessLimit", "ActiveProcessLimit") or 0
        job.process_time = _field(target, "BasicLimitInformation.PerProcessUserTimeLimit",
                                  "PerProcessUserTimeLimit") or 0
        if info_class == JobObjectExtendedLimitInformation:
            job.process_memory = _field(target, "ProcessMemoryLimit") or 0
            job.job_memory = _field(target, "JobMemoryLimit") or 0
        for pid in job.pids:
            job.limit_pid(pid)
        _watch(job)
    return 1                      # other classes (UI restrictions, CPU rate...) are accepted and not enforced


def AssignProcessToJobObject(job_handle, process_handle_):
    job, pid = _job_of(job_handle), _pid_of(process_handle_)
    if job is None or pid is None:
        return _fail(ERROR_INVALID_HANDLE)
    if not _alive(pid):
        return _fail(ERROR_ACCESS_DENIED)                # as Windows says of a process that has exited
    group = common.REAL.os.getpgid(pid)
    if group != pid:
        raise RuntimeError(f"simulated Windows: process {pid} was not started with "
                           "subprocess.CREATE_NEW_PROCESS_GROUP, which the simulation needs to follow the "
                           "processes it starts into the job (Windows itself does not)")
    with _lock:
        job.groups.add(group)
        job.pids.append(pid)
    job.limit_pid(pid)
    _watch(job)
    return 1


def TerminateJobObject(job_handle, exit_code):
    job = _job_of(job_handle)
    if job is None:
        return _fail(ERROR_INVALID_HANDLE)
    job.terminate(exit_code)
    return 1


def QueryInformationJobObject(job_handle, info_class, info, size, returned):
    job, target = _job_of(job_handle), _target(info)
    if job is None:
        return _fail(ERROR_INVALID_HANDLE)
    if target is None:
        return _fail(ERROR_INVALID_PARAMETER)
    if info_class == JobObjectBasicAccountingInformation:
        user, kernel, active = job.accounting()
        _set_field(target, user, "TotalUserTime")
        _set_field(target, kernel, "TotalKernelTime")
        _set_field(target, active, "ActiveProcesses")
        _set_field(target, len(job.pids), "TotalProcesses")
    elif info_class in (JobObjectBasicLimitInformation, JobObjectExtendedLimitInformation):
        _set_field(target, job.flags, "BasicLimitInformation.LimitFlags", "LimitFlags")
        _set_field(target, job.active_processes, "BasicLimitInformation.ActiveProcessLimit", "ActiveProcessLimit")
        _set_field(target, job.process_memory, "ProcessMemoryLimit")
        _set_field(target, job.job_memory, "JobMemoryLimit")
    else:
        return _fail(ERROR_INVALID_PARAMETER)
    if returned:
        _store(returned, ctypes.sizeof(target))
    return 1


def IsProcessInJob(process_handle_, job_handle, result):
    pid, job = _pid_of(process_handle_), _job_of(job_handle)
    if pid is None:
        return _fail(ERROR_INVALID_HANDLE)
    try:
        group = common.REAL.os.getpgid(pid)
    except OSError:
        return _fail(ERROR_ACCESS_DENIED)
    jobs = [job] if job is not None else [j for j in _handles.values() if isinstance(j, _Job)]
    _store(result, int(any(group in j.groups for j in jobs)))
    return 1


def TerminateProcess(process_handle_, exit_code):
    pid = _pid_of(process_handle_)
    if pid is None:
        return _fail(ERROR_INVALID_HANDLE)
    if not _alive(pid):
        return _fail(ERROR_ACCESS_DENIED)                # Windows' answer for a process that has exited
    EXIT_CODES[pid] = exit_code
    common.REAL.os.kill(pid, common.REAL.SIGKILL)
    return 1


def GetProcessTimes(process_handle_, creation, exit_time, kernel, user):
    """Times in 100 ns units (creation as a FILETIME since 1601; exit time 0); after the profile's Popen reaped
    the process, its final times (with those of the children it reaped)."""
    pid = _pid_of(process_handle_)
    if pid is None:
        return _fail(ERROR_INVALID_HANDLE)
    fields = _stat(pid)
    if fields is not None:
        scale = 10_000_000 / _ticks()
        with common.REAL.open("/proc/stat", "rb") as f:
            boot = int(next(line for line in f if line.startswith(b"btime")).split()[1])
        _store(creation, int((boot + 11644473600) * 1e7 + int(fields[19]) * scale))
        _store(user, int(int(fields[11]) * scale))
        _store(kernel, int(int(fields[12]) * scale))
    elif pid in FINAL_TIMES:
        _store(user, int(FINAL_TIMES[pid][0] * 1e7))
        _store(kernel, int(FINAL_TIMES[pid][1] * 1e7))
    else:
        return _fail(ERROR_INVALID_HANDLE)
    _store(exit_time, 0)
    return 1


def GetCurrentProcess():
    return CURRENT_PROCESS


def GetCurrentProcessId():
    return os.getpid()


def GetLastError():
    return get_last_error()


def SetLastError(code):
    set_last_error(code)


KERNEL32 = {name: value for name, value in dict(globals()).items()
            if name[0].isupper() and callable(value) and not name.startswith("_") and name not in ("KERNEL32",)}


# ntdll: suspending and resuming a whole process (what code resumes a CREATE_SUSPENDED process with, since
# Popen closes the thread handle ResumeThread would take); NTSTATUS 0 is success
STATUS_INVALID_HANDLE = 0xC0000008


def _signal_process(handle, signum):
    pid = _pid_of(handle)
    if pid is None:
        return STATUS_INVALID_HANDLE
    try:
        common.REAL.os.kill(pid, signum)
    except OSError:
        return STATUS_INVALID_HANDLE
    return 0


def NtSuspendProcess(handle):
    return _signal_process(handle, common.REAL.SIGSTOP)


def NtResumeProcess(handle):
    return _signal_process(handle, common.REAL.SIGCONT)


LIBRARIES = {"kernel32": KERNEL32, "ntdll": {"NtSuspendProcess": NtSuspendProcess,
                                             "NtResumeProcess": NtResumeProcess}}


class Function:
    """A stand-in function as ctypes shows one: ``argtypes``, ``restype`` (c_int unless set) and ``errcheck``
    may be set; the result is converted by ``restype`` (a pointer type: None for NULL, as ctypes does)."""

    def __init__(self, name, impl):
        self.__name__, self._impl = name, impl
        self.argtypes, self.restype, self.errcheck = None, ctypes.c_int, None

    def __call__(self, *args):
        result = self._impl(*[_plain(a) if not isinstance(a, (ctypes.Structure, ctypes.Union)) else a
                              for a in args])
        if self.restype is None:
            value = None
        elif isinstance(self.restype, type) and issubclass(self.restype, (ctypes.c_void_p, ctypes._Pointer)):
            value = (result & ((1 << 64) - 1)) or None
        elif self.restype is ctypes.c_bool:
            value = bool(result)
        else:
            value = result
        return self.errcheck(value, self, args) if self.errcheck is not None else value

    def __repr__(self):
        return f"<simulated Windows function {self.__name__}>"

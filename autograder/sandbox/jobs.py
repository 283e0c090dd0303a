"""Windows Job Objects: every process a part's child starts, capped in memory and ended at once.

On Windows a process belongs to the job of the process that started it, unless it asks to break away, which
this job does not allow; so a job assigned to the part's child holds everything the child ever starts, and
``TerminateJobObject`` ends all of it, however deep, whether their parents still run or not. The job also caps
the memory of each of its processes (``JOB_OBJECT_LIMIT_PROCESS_MEMORY``: an allocation past it fails, which
Python reports as a MemoryError), the number of processes at once, and ends everything when the grader's
handle closes (``KILL_ON_JOB_CLOSE``: a grader that dies takes its parts with it).

The child is assigned before it is sent its request, and it runs no student code before it has read that
request: nothing can start outside the job.

Through ctypes rather than a package such as psutil: psutil finds a process's descendants by their parent ids,
which lose the thread once a parent in between has ended (Windows never re-parents), and it has no job
objects; the five kernel32 calls below are all this needs, and the runtime stays numpy and matplotlib.

    job = Job(memory_mb, processes)    # OSError if the system refuses (the caller then ends the child alone)
    job.assign(pid)
    job.close()                        # terminate everything in it, and let it go
"""
import ctypes
from ctypes import wintypes

JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS = 9
JOB_OBJECT_LIMIT_ACTIVE_PROCESS = 0x0008
JOB_OBJECT_LIMIT_PROCESS_MEMORY = 0x0100
JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION = 0x0400
JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE = 0x2000
PROCESS_TERMINATE = 0x0001
PROCESS_SET_QUOTA = 0x0100
KILLED = 1                      # the exit code of a process the job ended


class _IoCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_ulonglong) for name in ("ReadOperationCount", "WriteOperationCount",
                                                        "OtherOperationCount", "ReadTransferCount",
                                                        "WriteTransferCount", "OtherTransferCount")]


class _BasicLimits(ctypes.Structure):
    _fields_ = [("PerProcessUserTimeLimit", ctypes.c_longlong), ("PerJobUserTimeLimit", ctypes.c_longlong),
                ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD),
                ("SchedulingClass", wintypes.DWORD)]


class _ExtendedLimits(ctypes.Structure):
    _fields_ = [("BasicLimitInformation", _BasicLimits), ("IoInfo", _IoCounters),
                ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]


def _kernel32():
    """kernel32 with the signatures of the calls used here (a HANDLE is pointer-sized)."""
    kernel = ctypes.WinDLL("kernel32", use_last_error=True)
    handle, dword = wintypes.HANDLE, wintypes.DWORD
    for name, result, arguments in (
            ("CreateJobObjectW", handle, (ctypes.c_void_p, wintypes.LPCWSTR)),
            ("SetInformationJobObject", wintypes.BOOL, (handle, ctypes.c_int, ctypes.POINTER(_ExtendedLimits), dword)),
            ("OpenProcess", handle, (dword, wintypes.BOOL, dword)),
            ("AssignProcessToJobObject", wintypes.BOOL, (handle, handle)),
            ("TerminateJobObject", wintypes.BOOL, (handle, wintypes.UINT)),
            ("CloseHandle", wintypes.BOOL, (handle,))):
        function = getattr(kernel, name)
        function.restype, function.argtypes = result, arguments
    return kernel


def _check(result, what):
    if not result:
        raise OSError(ctypes.get_last_error(), f"{what} failed")
    return result


class Job:
    """One part's job: ``memory_mb`` per process, at most ``processes`` at once, killed on close."""

    def __init__(self, memory_mb, processes):
        self.kernel = _kernel32()
        self.handle = _check(self.kernel.CreateJobObjectW(None, None), "CreateJobObjectW")
        limits = _ExtendedLimits()
        limits.BasicLimitInformation.LimitFlags = (JOB_OBJECT_LIMIT_PROCESS_MEMORY | JOB_OBJECT_LIMIT_ACTIVE_PROCESS
                                                   | JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
                                                   | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION)
        limits.BasicLimitInformation.ActiveProcessLimit = processes
        limits.ProcessMemoryLimit = memory_mb << 20
        try:
            _check(self.kernel.SetInformationJobObject(self.handle, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION_CLASS,
                                                       ctypes.byref(limits), ctypes.sizeof(limits)),
                   "SetInformationJobObject")
        except OSError:
            self.close()
            raise

    def assign(self, pid):
        """Put the process ``pid`` (not yet running student code) into the job."""
        process = _check(self.kernel.OpenProcess(PROCESS_SET_QUOTA | PROCESS_TERMINATE, False, pid), "OpenProcess")
        try:
            _check(self.kernel.AssignProcessToJobObject(self.handle, process), "AssignProcessToJobObject")
        finally:
            self.kernel.CloseHandle(process)

    def close(self):
        """End every process in the job, and let the job go."""
        if self.handle:
            self.kernel.TerminateJobObject(self.handle, KILLED)
            self.kernel.CloseHandle(self.handle)
            self.handle = None

"""Run one part's cases in a child process with limits, and bring back plain arrays and a report.

The child gets: a fresh working directory, no standard input, a minimal environment, ``python -I -B``
(no user site, no PYTHON* variables, the script's folder not on sys.path), one BLAS thread, and limits on
address space, CPU time and the size of any file it writes (which also caps what it prints). On a timeout
its whole process group is killed. Whatever happens, the caller gets an ``Outcome``; nothing raises.
"""
import dataclasses
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
OUTPUT_LIMIT = 1 << 20          # what a child may print (and the size of any file it writes): 1 MiB
RESPONSE_LIMIT = 16 << 20       # the most the parent will read back


@dataclasses.dataclass
class Outcome:
    """What came back from a child: per-case reports and arrays, or why nothing usable came back."""
    reports: list = None
    arrays: dict = dataclasses.field(default_factory=dict)
    failure: str = ""           # non-empty: the whole part failed, and this says why
    output: str = ""            # the tail of what the child printed
    seconds: float = 0.0


def _limits(memory_mb, cpu_seconds, user):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_LIMIT, OUTPUT_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if user is not None:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
    return apply


def _signal_reason(code, memory_mb, timeout):
    name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
    reasons = {"SIGXCPU": f"used more than {timeout} s of CPU time (an infinite loop?)",
               "SIGKILL": f"was killed (out of memory? the limit is {memory_mb} MiB)",
               "SIGSEGV": "crashed with a segmentation fault",
               "SIGXFSZ": f"printed or wrote more than {OUTPUT_LIMIT >> 20} MiB"}
    return reasons.get(name, f"was stopped by {name}")


def write_request(path, configs, inputs_list):
    arrays = {f"{k}:{name}": value for k, inputs in enumerate(inputs_list) for name, value in inputs.items()}
    with open(path, "wb") as f:
        np.savez(f, __configs__=np.array(json.dumps(configs)), **arrays)


def read_response(path, cases):
    """The child's response file, checked: plain arrays only, a report per case. Raises ValueError if malformed."""
    if os.path.getsize(path) > RESPONSE_LIMIT:
        raise ValueError("the response is too large")
    arrays = {}
    with np.load(path, allow_pickle=False) as data:
        report = json.loads(str(data["__report__"]))
        for key in data.files:
            if key != "__report__":
                k, name = key.split(":", 1)
                arrays[(int(k), name)] = np.asarray(data[key])
    if not isinstance(report, list) or len(report) != cases or not all(isinstance(r, dict) for r in report):
        raise ValueError("the report does not describe every case")
    for r in report:
        if not isinstance(r.get("types", {}), dict) or not isinstance(r.get("mutated", []), list):
            raise ValueError("a case report is malformed")
    return report, arrays


def run_child(root, configs, inputs_list, timeout=20.0, memory_mb=1024, user=None):
    """Run the worker on ``root``'s mytorch for these cases. ``user``: a pwd entry to run as (when root)."""
    start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="mytorch-grade-")
    try:
        request, response = os.path.join(tmp, "request.npz"), os.path.join(tmp, "response.npz")
        work, out_path = os.path.join(tmp, "work"), os.path.join(tmp, "output.txt")
        os.mkdir(work)
        write_request(request, configs, inputs_list)
        if user is not None:
            for path in (tmp, work):
                os.chown(path, user.pw_uid, user.pw_gid)
            os.chmod(request, 0o644)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LANG": "C.UTF-8",
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "MYTORCH_GRADER_DUMP_AFTER": f"{max(timeout - 1.0, 0.75 * timeout):g}"}
        timed_out = False
        with open(out_path, "wb") as out:
            try:
                proc = subprocess.Popen([sys.executable, "-I", "-B", WORKER, os.path.abspath(root), request, response],
                                        cwd=work, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True,
                                        preexec_fn=_limits(memory_mb, int(timeout) + 1, user))
            except (OSError, subprocess.SubprocessError) as error:
                who = f" as user {user.pw_name}" if user is not None else ""
                return Outcome(failure=f"could not be run: the grader failed to start Python{who} ({error})")
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)        # the child and anything it started
            except (ProcessLookupError, PermissionError):
                pass
            code = proc.wait()
        size = os.path.getsize(out_path)
        with open(out_path, "rb") as f:
            f.seek(max(0, size - 4000))
            output = f.read().decode("utf-8", "replace")
        outcome = Outcome(output=output, seconds=time.monotonic() - start)
        if timed_out:
            outcome.failure = f"did not finish within {timeout:g} s (an infinite loop, or far too slow)"
        elif size >= OUTPUT_LIMIT:
            outcome.failure = f"printed more than {OUTPUT_LIMIT >> 20} MiB of output; remove debugging prints"
        elif not os.path.exists(response):
            if code < 0:
                outcome.failure = _signal_reason(code, memory_mb, timeout)
            else:
                outcome.failure = (f"the process exited with code {code} before returning its results "
                                   "(does the code call sys.exit, os._exit or exit?)")
        else:
            try:
                outcome.reports, outcome.arrays = read_response(response, len(configs))
            except Exception as error:                      # anything malformed: the part fails, grading goes on
                outcome.failure = f"returned results that could not be read ({type(error).__name__}: {error})"
        return outcome
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

"""The child process: import the ``mytorch`` found in ROOT, run one part's cases, send plain arrays back.

    python -I worker.py ROOT REQUEST_FD RESPONSE_FD
    python -I worker.py ROOT - -            (macOS, Windows: the request on stdin, the response on stdout)

Started by the grading process with resource limits; nothing here is trusted by it. The request (configs
and inputs) is read from the pipe REQUEST_FD before any student code runs; the response (per-case reports
and arrays) is one ``frames`` message written to the pipe RESPONSE_FD. Given "-" for both, the request is
standard input, and the response goes to what standard output was when the child started, on a descriptor
of its own: fd 1 then points at standard error, where everything the submission prints goes. The grader modules the child runs
(``CHILD_CODE``: the part driver, the message format, the tracer) are loaded from the grader's folder by path,
so the only directory added to ``sys.path`` is ROOT.

Before any student code runs the worker makes itself non-dumpable: no other process of the same user (another
part, or anything a submission left running) may trace it, read or write its memory through
``/proc/PID/mem``, or take its file descriptors; its ``/proc`` entries belong to root.
"""
import ctypes
import importlib.util
import json
import os
import sys
import time

GRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))       # the autograder package
# the grader modules a child runs, by the package each lives in: plain code and tables, loaded by path before any
# student code (``import autograder`` would search the submission's folder first)
CHILD_CODE = {"driver": "parts", "frames": "sandbox", "tracing": "diagnosis", "ipc": "sandbox", "cgroups": "sandbox",
              "confinement": "sandbox", "landlock": "sandbox"}

_loaded = {}                     # name -> module: a zygote loads them once, before forking each part's child


def _load(name):
    if name not in _loaded:
        spec = importlib.util.spec_from_file_location(f"_autograder_{name}",
                                                      os.path.join(GRADER, CHILD_CODE[name], f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[name] = module
    return _loaded[name]


def _read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            os.close(fd)
            return b"".join(chunks)
        chunks.append(chunk)


def _every_case_failed(configs, status, message, where=""):
    return [{"status": status, "error": message, "where": where, "types": {}, "mutated": []} for _ in configs]


def non_dumpable():
    """prctl(PR_SET_DUMPABLE, 0) on Linux; True if the kernel agreed. Kept across fork, so inherited by what it
    starts. Elsewhere there is no such call (macOS's C library has no prctl; Windows has no C library to load
    so): False."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):
        return False


def standard_streams(request_fd, response_fd):
    """``(request fd, response fd)`` as ints; for "-", standard input, and standard output kept on a descriptor
    of its own while fd 1 becomes standard error (what the submission prints goes there, never into the
    response)."""
    if request_fd != "-":
        return int(request_fd), int(response_fd)
    response = os.dup(1)                                  # not inherited by what the submission starts
    os.dup2(2, 1)
    return 0, response


def source_only(root, pycs=None):
    """Import the submission in ``root`` from its ``.py`` sources alone: no bytecode found on disk (an unchecked
    pyc in ``__pycache__``, a ``.pyc`` with no source) and no compiled extension, so what is graded is the code
    a reader of the submission sees. ``pycs``: ``{source path: pyc}`` compiled from those same sources by the
    grader's compile child, each used only while its source still hashes the same (else it is compiled
    again). Other modules load as always."""
    import _imp
    import importlib.machinery as machinery
    import importlib.util
    import marshal
    top = os.path.realpath(root)
    # a Python inside the submission's folder (a student's .venv in their checkout) is not the submission: its
    # NumPy's compiled modules load as always
    python = [p for p in {os.path.realpath(q) for q in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
              if p.startswith(top + os.sep)]
    pycs = dict(pycs or {})
    real_folders = {}            # folder -> its realpath: each import asks of a file in a folder asked of before

    def real(path):
        folder, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir) or not folder:
            return os.path.realpath(path)
        if folder not in real_folders:
            real_folders[folder] = os.path.realpath(folder)
        path = os.path.join(real_folders[folder], name)
        return os.path.realpath(path) if os.path.islink(path) else path

    def inside(path):
        path = real(path)
        return (path == top or path.startswith(top + os.sep)) and not any(
            path == p or path.startswith(p + os.sep) for p in python)

    sources = machinery.FileFinder.path_hook((machinery.SourceFileLoader, machinery.SOURCE_SUFFIXES))

    def finder(path):
        if not inside(path):
            raise ImportError("not the submission's")   # the next hook, Python's own, takes it
        return sources(path)
    sys.path_hooks.insert(0, finder)
    for cached in [p for p in sys.path_importer_cache if not (isinstance(p, str) and os.path.isabs(p)) or inside(p)]:
        del sys.path_importer_cache[cached]     # the hook takes these; NumPy's own finders stay as they were
    original = machinery.SourceFileLoader.get_code

    def get_code(self, fullname):
        if not inside(self.path):
            return original(self, fullname)
        source = self.get_data(self.path)
        pyc = pycs.pop(self.path, b"")
        if pyc[:8] == importlib.util.MAGIC_NUMBER + b"\x03\0\0\0" and importlib.util.source_hash(source) == pyc[8:16]:
            code = marshal.loads(memoryview(pyc)[16:])              # a checked hash-based pyc of this source
            _imp._fix_co_filename(code, self.path)                 # compiled from a copy elsewhere: name this one
            return code
        return self.source_to_code(source, self.path)
    machinery.SourceFileLoader.get_code = get_code


SAMPLE_EVERY = 0.02              # seconds between two looks at the stack near the limit


def dump_again(dump_at, left):
    """After faulthandler's dump at ``dump_at``, the frames that the main thread's stack held at every one of
    many looks over most of the ``left`` seconds before the limit, printed as a faulthandler dump (innermost
    first, after a 'Timeout (' line). One dump shows where the code was, not which frame loops: a loop that
    calls a function is caught in the function at some looks and in itself at others, and only the loop's own
    frame and its callers are there at all of them (``feedback.where_it_hung``). From a thread, which needs the
    GIL now and then; faulthandler's dump needs none. A child that starts after ``dump_at`` has no time for it
    (faulthandler dumps every tenth of a second then)."""
    import threading
    if dump_at - time.monotonic() < 0.1:
        return
    main = threading.get_ident()

    def look():
        frame, stack = sys._current_frames().get(main), []
        while frame is not None:
            stack.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno))
            frame = frame.f_back
        return stack[::-1]                              # outermost first

    def sample():
        time.sleep(max(0.0, dump_at - time.monotonic()))
        common, looks, end = look(), 1, dump_at + 0.75 * left
        while time.monotonic() < end and common:
            time.sleep(SAMPLE_EVERY)
            stack, k = look(), 0
            while k < min(len(common), len(stack)) and common[k][:2] == stack[k][:2]:
                k += 1
            common, looks = stack[:k], looks + 1        # the frames every look held, at their latest lines
        frames = "".join(f'  File "{path}", line {line} in {name}\n' for path, name, line in reversed(common))
        os.write(2, f"Timeout (the frames held at all {looks} looks)!\nThread 0x{main:016x} (most recent call "
                    f"first):\n{frames}".encode("utf-8", "replace"))
    try:
        threading.Thread(target=sample, name="looks", daemon=True).start()
    except RuntimeError:                                 # no thread to be had (a process limit): one dump
        pass


def main(root, request_fd, response_fd, pycs=None):
    import faulthandler

    non_dumpable()
    # shortly before the parent's time limit, print where every thread is, so an endless loop is located; a child
    # that started so late that its code may not be running by then prints it again every tenth of a second or
    # more until it ends (the next dump of one that started in time would come after the limit)
    dump_at = os.environ.get("MYTORCH_GRADER_DUMP_AT")
    if dump_at:
        faulthandler.dump_traceback_later(max(float(dump_at) - time.monotonic(), 0.1), repeat=True, exit=False)
        dump_again(float(dump_at), float(os.environ.get("MYTORCH_GRADER_DUMP_LEFT", "1.0")))
    driver, frames, tracing = _load("driver"), _load("frames"), _load("tracing")
    request_fd, response_fd = standard_streams(request_fd, response_fd)
    configs, arrays = frames.decode(_read_all(request_fd))
    if request_fd == 0:                                   # read and closed: nothing more comes from there
        null = os.open(os.devnull, os.O_RDONLY)
        if null != 0:
            os.dup2(null, 0)
            os.close(null)
    inputs = [{} for _ in configs]
    for (k, name), value in arrays.items():
        inputs[k][name] = value

    sys.path.insert(0, root)
    try:
        source_only(root, pycs)
        import mytorch
        location = os.path.realpath(os.path.dirname(mytorch.__file__))
        if not location.startswith(os.path.realpath(root) + os.sep):
            raise ImportError(f"mytorch was imported from {location}, not from the submission in {root}")
    except BaseException as error:                      # SyntaxError, ImportError, SystemExit at import …
        arrays, report = {}, _every_case_failed(configs, "import_error",
                                                f"importing mytorch failed: {driver.describe_error(error)}",
                                                _where(driver, error, root))
    else:
        try:
            arrays, report_json = driver.run(mytorch, root, configs, inputs, tracing)
            report = json.loads(report_json)
            arrays = {(int(key.split(":", 1)[0]), key.split(":", 1)[1]): value for key, value in arrays.items()}
        except BaseException as error:                  # e.g. an exception the driver could not describe
            arrays, report = {}, _every_case_failed(configs, "error", "the grader could not report what your code "
                                                    f"did: {driver.describe_error(error)}{_out_of_memory(error)}")
    try:
        message = frames.encode(report, arrays)
    except BaseException as error:
        message = frames.encode(_every_case_failed(configs, "error", "the grader could not send back what your "
                                                   f"code returned: {driver.describe_error(error)}"), {})
    view = memoryview(message)
    while view:
        view = view[os.write(response_fd, view):]
    os.close(response_fd)


def _out_of_memory(error):
    """What to add to an error that memory running out explains: a MemoryError, or the SystemError CPython
    raises when an allocation in C fails without saying so ('error return without exception set')."""
    if not isinstance(error, (MemoryError, SystemError)):
        return ""
    try:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        shown = f" of {limit >> 20} MiB" if limit != resource.RLIM_INFINITY else ""
    except ImportError:                                  # Windows: the job's limit, which this child cannot read
        shown = ""
    return (f" (most likely your code used up its memory{shown}: look for a loop that never ends and keeps "
            "something growing, such as a forward whose record no backward consumes)")


def _where(driver, error, root):
    try:
        return driver.where_in(error, root)
    except BaseException:
        return ""


if __name__ == "__main__":
    main(*sys.argv[1:4])

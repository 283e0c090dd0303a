"""The submission's bytecode, compiled once per grade, and the solution's, kept between runs.

``compiled(spec, known)`` has a child confined like a part's compile (never run) the submission's sources;
each part's child then gets those pycs instead of compiling every file again (Linux, with a zygote).
``known_sources`` are the trusted sources beside the grader (the handout's copies of the solution's files),
compiled here once per content and kept in the grader's own bytecode folder (``KNOWN_CACHE``).
"""
import contextlib
import os
import stat
import sys
import threading

import numpy as np

from autograder.sandbox import frames, runner, tree


def compiled(spec, known=None):
    """The bytecode of ``spec.root``'s mytorch, compiled (never run) once by a child of ``spec`` confined like a
    part's, checked and re-encoded here, for ``ChildSpec.bytecode``; None if there is no zygote or anything
    failed.
    ``known``: ``{relative path: pyc}`` of trusted sources (``known_sources``); the child skips a file with
    the same bytes as one of them, and its pyc goes along instead (a part's child uses a pyc only for the
    source it was compiled from, so nothing the child says can attach one to other code). Only for such a
    file: the part's child holds what it is sent where student code can read it, so the solution's pyc of a
    file the submission lacks or changed would hand it the solution."""
    if spec.zygote is None:
        return None
    known = known or {}
    hashes = {relative: bytes(pyc[:4] + pyc[8:16]).hex() for relative, pyc in known.items()}   # magic, source
    try:
        outcome = runner.run_child(spec, [{"known": hashes}], [{}], task="compile")
    except OSError:             # the grader's own (no space for a work folder, say): each part's child compiles
        return None
    if outcome.failure:
        return None
    arrays = {}
    for key, array in (outcome.arrays or {}).items():
        if array.dtype == "u1" and array.ndim == 1 and array.size:
            arrays[key] = array
        elif array.dtype == "u1" and array.ndim == 1 and key[1] in known:     # empty: the same as the known one
            arrays[key] = np.frombuffer(known[key[1]], dtype=np.uint8)
    return frames.encode([], arrays) if arrays else None


KNOWN_BYTES = 1 << 20           # the largest trusted source (or pyc of one) read here
_compiled_here = {}             # sha256 of a trusted source -> the checked hash-based pyc of it
_compiled_lock = threading.Lock()
# pycs of trusted sources kept between runs, named by the sha256 of the source: in the grader's own bytecode
# folder (hidden from every child under --run-as, as the grader's bytecode is), in a folder of the grader's
# user alone. Whoever could write there could write the grader's own bytecode (which Python runs).
KNOWN_CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__", "known")


def known_sources(checkout, user=None):
    """``{relative path ("mytorch/nn/rnn_cell.py"): pyc}`` (checked hash-based) of the ``.py`` files of
    ``checkout``'s mytorch (the instructor's solution beside the grader), compiled here from the bytes read,
    once per content in this process. Never taken from its ``__pycache__``: a pyc there that Python would
    take by its recorded mtime and size can still hold other code (copied with its times kept, or written
    by whoever could write there), and it would be graded in place of the source. {} if there is none, or
    if ``user`` (a pwd entry) could change any of it. A submission's handout copies of those files are most
    of it, and compiling them was most of the compile child's time."""
    import hashlib
    package = os.path.join(checkout, "mytorch")
    if not os.path.isfile(os.path.join(package, "__init__.py")):
        return {}
    if user is not None:
        from autograder.sandbox import isolation
        if isolation.writable_by([package], user):
            return {}
    found = {}
    try:
        for rel, folder, dirs, files in tree.walk(package, 16, 5000):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in (n for n in files if n.endswith(".py")):
                source = _read_regular(name, folder)
                key = hashlib.sha256(source).digest()
                with _compiled_lock:
                    if key not in _compiled_here:
                        path = os.path.normpath(os.path.join(package, rel, name))
                        _compiled_here[key] = _kept_pyc(key, source) or _keep_pyc(key, _compiled_pyc(path, source))
                found["/".join(["mytorch"] + [p for p in rel.split(os.sep) if p != "."] + [name])] = \
                    _compiled_here[key]
    except (OSError, SyntaxError, ValueError, tree.TreeError):
        return {}
    return found


def _read_regular(name, folder):
    """The bytes of the regular file ``name`` in the folder open as ``folder``; OSError for anything else."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > KNOWN_BYTES:
            raise OSError(f"{name} is not a regular file of at most {KNOWN_BYTES} bytes")
        return f.read(KNOWN_BYTES)


def _cache_folder(create=False):
    """An fd of ``KNOWN_CACHE`` (made if ``create``) if it is a folder of this process's user that no one else
    may read or write, in a bytecode folder of that user or root's that no one else may write; else None."""
    if sys.implementation.cache_tag is None:       # a Python that keeps no bytecode
        return None
    bytecode, name = os.path.split(KNOWN_CACHE)
    try:
        if create:
            make_bytecode_folder(bytecode)
            with contextlib.suppress(FileExistsError):
                os.mkdir(KNOWN_CACHE, 0o700)
        parent = os.open(bytecode, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(parent)
        if info.st_uid not in (os.geteuid(), 0) or info.st_mode & 0o022:
            return None
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError:
        return None
    finally:
        os.close(parent)
    info = os.fstat(fd)
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def make_bytecode_folder(folder):
    """``folder`` (a ``__pycache__``) made if missing, writable by its owner alone whatever the umask (which
    can only take bits away): made by Python under a umask of 0 it would be anyone's, and what is written
    there is what Python runs."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o755)


def _cache_name(key):
    return f"{key.hex()}.{sys.implementation.cache_tag}.pyc"


def _kept_pyc(key, source):
    """The pyc of ``source`` (sha256 ``key``) kept by an earlier run, if it is one: this Python's magic, a
    checked hash-based pyc of those bytes, a code object; else None."""
    import importlib.util
    import marshal
    import types
    folder = _cache_folder()
    if folder is None:
        return None
    try:
        pyc = _read_regular(_cache_name(key), folder)
        code = marshal.loads(pyc[16:])
    except (OSError, EOFError, ValueError, TypeError):
        return None
    finally:
        os.close(folder)
    checked_hash = (3).to_bytes(4, "little")              # flags: hash-based, checked against the source
    header = importlib.util.MAGIC_NUMBER + checked_hash + importlib.util.source_hash(source)
    return pyc if pyc[:16] == header and isinstance(code, types.CodeType) else None


def _keep_pyc(key, pyc):
    """``pyc`` (of the source of sha256 ``key``), kept for later runs where the cache folder can be had."""
    folder = _cache_folder(create=True)
    if folder is None:
        return pyc
    temporary = f".{_cache_name(key)}.{os.getpid()}.{threading.get_ident()}"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(pyc)
        os.replace(temporary, _cache_name(key), src_dir_fd=folder, dst_dir_fd=folder)   # whole, or not at all
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
    finally:
        os.close(folder)
    return pyc


def _compiled_pyc(path, source):
    import importlib._bootstrap_external as bootstrap
    import importlib.util
    code = compile(source, path, "exec", dont_inherit=True, optimize=0)     # as a child runs: asserts kept
    return bytes(bootstrap._code_to_hash_pyc(code, importlib.util.source_hash(source), checked=True))


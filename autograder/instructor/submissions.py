"""What a folder of submissions holds, one submission each, and where each one's ``mytorch`` package is: the one
locator of every mode (batch, Gradescope, PrairieLearn, Autolab, handin), so the same folder is gradable
everywhere or nowhere, with the same reason.

Every sub-folder of the class folder is a submission (named by the folder), and so is an archive lying at its
top (named by the file, for a learning system's bulk download); on a platform, the upload is one submission.
A submission is graded if it holds exactly one ``mytorch`` package (a folder with its ``__init__.py``) at any
depth (``Downloads/hw3 final/hw3/mytorch/`` as well as ``mytorch/``), or else, when it holds no package, exactly
one among the archives it holds (handin.tar, *.tar.gz, *.tgz, *.zip, at most ARCHIVES of them), unpacked with
``archive.unpack``'s limits into a folder of the grader's, found there the same way. Folders whose names start
with '.' and ``__MACOSX`` (a Mac's zip) are not looked in, nor is a package's inside.

Anything else is still a submission: it gets a row with 0 and the reason (an empty folder, unrelated files,
``mytorch`` a file or a link, a package without ``__init__.py``, two packages, an archive that breaks a limit, a
tree deeper or larger than the walk's limits). Nothing here follows a link, every name read from the submission
is cleaned before it is shown, and no reason names a folder of the grader's: paths are the submission's own.
"""
import dataclasses
import os
import re
import stat
import tempfile

from autograder.sandbox import archive, tree, untrusted

ENDINGS = (".tar", ".tar.gz", ".tgz", ".zip")
LISTED = 5                       # names shown when saying what a folder holds instead
ARCHIVES = 5                     # archives unpacked from one submission that holds no package
WALK_LIMIT = 20000               # entries of a submission looked at
WALK_DEPTH = 32                  # levels of folders in it
SKIPPED = ("__MACOSX",)          # folders never looked in (nor those whose names start with '.')


@dataclasses.dataclass
class Located:
    name: str                    # the submission's name (its folder's, or its archive's)
    package: str = None          # the mytorch folder to grade; None: not gradable
    form: str = ""               # how it was handed in: mytorch/, handin/mytorch/, handin.tar, ...
    reason: str = ""             # why it is not gradable
    similarity: dict = None      # what the class report compares (``similarity.summary``), when it does


def _kind(path):
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def is_archive(name):
    return name.lower().endswith(ENDINGS)


def find(folder):
    """The submissions in ``folder`` in name order: every sub-folder (links and hidden names too: nobody is
    dropped, and none is taken for the grader's own: batch's report is kept outside ``folder``) and every
    archive at its top. Returns (names, ignored): ignored lists the other top-level files, which are not
    submissions."""
    names, ignored = [], []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        mode = _kind(path)
        if stat.S_ISDIR(mode) or stat.S_ISLNK(mode) or (stat.S_ISREG(mode) and is_archive(name)):
            names.append(name)
        else:
            ignored.append(name)
    return names, ignored



class Unreadable(Exception):
    """The submission's tree breaks the walk's limits; the message says which."""


def _scan(top):
    """(packages, problems, archives, names at the top) of the folder ``top``: the relative paths of its ``mytorch``
    packages, what is wrong with each ``mytorch`` that is not one (its relative path, why), the relative paths of
    its archives (regular files). Raises ``Unreadable`` past the walk's limits."""
    packages, problems, archives, names = [], [], [], []
    try:
        for rel, fd, dirs, files in tree.walk(top, WALK_DEPTH, WALK_LIMIT, everything=True):
            rel = "" if rel == "." else rel
            if rel == "":
                names = sorted(dirs + files)
            if os.path.basename(rel) == "mytorch":
                if "__init__.py" in files and stat.S_ISREG(os.stat("__init__.py", dir_fd=fd,
                                                                   follow_symlinks=False).st_mode):
                    packages.append(rel)
                    dirs[:] = []                          # a package's inside is the package's
                    continue
                problems.append((rel, "has no __init__.py (hand in the whole package, or handin.tar)"))
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED]
            for name in files:
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                if name == "mytorch":
                    problems.append((os.path.join(rel, name), "is a link, not a folder" if stat.S_ISLNK(mode) else
                                     "is a file, not a folder (hand in the folder, or handin.tar)"))
                elif stat.S_ISREG(mode) and is_archive(name):
                    archives.append(os.path.join(rel, name))
    except tree.TreeError as error:
        raise Unreadable(f"the submission cannot be read: {error}") from None
    return packages, problems, archives, names


def _shown(rel, width=100):
    return untrusted.line(rel, width)


def _several(what, found):
    return f"several {what} hold a mytorch package: " + ", ".join(
        _shown(f) for f in found[:LISTED]) + (", …" if len(found) > LISTED else "") + " (hand in one)"


def _unpacked(path, rel, staging):
    """(packages as absolute paths, reason) of the archive ``path`` (shown as ``rel``), unpacked into ``staging``."""
    name = _shown(rel)
    try:
        archive.unpack(path, staging)
    except archive.UnpackError as error:
        return [], f"{name} was not unpacked: {error}"
    except Exception as error:                            # a damaged archive
        return [], f"{name} is damaged or not an archive ({type(error).__name__})"
    try:
        packages, problems, _, names = _scan(staging)
    except Unreadable as error:
        return [], f"{name}: {error}"
    if not packages:
        return [], f"{name} holds no mytorch package ({_none_in(problems, names)})"
    return [(os.path.join(staging, p), f"{name}:{_shown(p)}/") for p in packages], ""


def locate_path(path, staging, name=None):
    """Where the ``mytorch`` of the submission at ``path`` (a folder, or an archive) is, unpacking archives into
    ``staging`` (an empty folder of the grader's, removed by the caller); a ``Located`` with the reason when there is
    none. ``name``: the submission's name (default: the last part of ``path``)."""
    name = name if name is not None else os.path.basename(path)
    mode = _kind(path)
    try:
        if stat.S_ISLNK(mode):
            return Located(name, reason="a link, not a folder (copy the submission in)")
        if stat.S_ISREG(mode):
            if not is_archive(name):
                return Located(name, reason="a file that is not an archive (hand in handin.tar, a zip or a folder)")
            found, reason = _unpacked(path, name, os.path.join(staging, "1"))
            return _chosen(name, found, reason, archive_form=_shown(name))
        if not stat.S_ISDIR(mode):
            return Located(name, reason="nothing there" if not mode else "not a folder or an archive")
        packages, problems, archives, names = _scan(path)
        if len(packages) > 1:
            return Located(name, reason=_several("folders", [f"{p}/" for p in packages]))
        if packages:
            return Located(name, os.path.join(path, packages[0]), f"{_shown(packages[0])}/")
        if archives and len(archives) > ARCHIVES:
            return Located(name, reason=f"it holds more than {ARCHIVES} archives and no mytorch package")
        found, reasons = [], []
        for k, rel in enumerate(archives, 1):
            packages_in, why = _unpacked(os.path.join(path, rel), rel, os.path.join(staging, str(k)))
            found += [(package, form, rel) for package, form in packages_in]
            reasons += [why] if why else []
        if len(found) > 1:
            return Located(name, reason=_several("archives" if len({r for *_, r in found}) > 1 else "folders",
                                                 [form for _, form, _ in found]))
        if found:
            return Located(name, found[0][0], _shown(found[0][2]))
        if reasons:
            return Located(name, reason=reasons[0])
        return Located(name, reason=_none_in(problems, names))
    except Unreadable as error:
        return Located(name, reason=str(error))
    except OSError as error:
        return Located(name, reason=f"it could not be read ({error.strerror or type(error).__name__})")


def _none_in(problems, names):
    """Why a folder holding no package and no archive (with ``problems`` and ``names`` at its top) is not graded."""
    if problems:
        rel, why = problems[0]
        return f"{_shown(rel)} {why}"
    if not names:
        return "the folder is empty"
    shown = ", ".join(_shown(n, 60) for n in names[:LISTED]) + (", …" if len(names) > LISTED else "")
    return f"no mytorch/ folder, handin.tar or zip in it (it holds {shown})"


def _chosen(name, found, reason, archive_form):
    if len(found) > 1:
        return Located(name, reason=_several("folders", [form for _, form in found]))
    if found:
        return Located(name, found[0][0], archive_form)
    return Located(name, reason=reason)


def locate(folder, name, staging):
    """``locate_path`` of the submission ``name`` in the class folder ``folder``."""
    return locate_path(os.path.join(folder, name), staging, name)


def copy_refused(error):
    """The reason of a submission whose package could not be copied (``isolation.private_copy``'s error): its
    words, never the path of the grader's copy."""
    said = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return f"the submission could not be copied ({without_paths(untrusted.line(said, 300))})"


def without_paths(text, *places):
    """``text`` (a reason shown to the instructor and the student) with every path under ``places`` (the grader's
    folders) and under the temporary folder replaced (``_in_package``): a reason names what went wrong, never
    where the grader staged the submission."""
    for place in sorted({os.path.realpath(p) for p in places} | {os.path.abspath(p) for p in places}, key=len,
                        reverse=True):
        text = text.replace(place, "…")
    for top in {tempfile.gettempdir(), os.path.realpath(tempfile.gettempdir())}:
        text = re.sub(re.escape(top.rstrip("/")) + r"/[^\s'\"():,]*", _in_package, text)
    return text


def _in_package(found):
    """A temporary path as a reason shows it: a file of the graded package by its path in the package
    (``mytorch/nn/rnn_cell.py``), anything else as '…'."""
    path = found.group()
    return "mytorch/" + path.rsplit("/mytorch/", 1)[1] if "/mytorch/" in path else "…"

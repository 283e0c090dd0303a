"""What a folder of submissions holds, one submission each, and where each one's ``mytorch`` package is.

Every sub-folder of the class folder is a submission (named by the folder), and so is an archive lying at its
top (named by the file, for a learning system's bulk download). A submission is graded if it holds, in this
order of preference:

    mytorch/                      the package itself (with its __init__.py)
    <one folder>/mytorch/         one level down (handin/mytorch/, say)
    handin.tar, *.tar.gz, *.tgz, *.zip   exactly one archive, unpacked with ``archive.unpack``'s limits (the
                                  same as Gradescope mode) into a folder of the grader's, holding mytorch/ at
                                  its top or one level down

Anything else is still a submission: it gets a row with 0 and the reason (an empty folder, unrelated files,
``mytorch`` a file or a link, a package without ``__init__.py``, two archives, an archive that breaks a limit).
Nothing here follows a link, and every name read from the submission is cleaned before it is shown.
"""
import dataclasses
import os
import stat

from autograder.sandbox import archive, untrusted

ARCHIVES = (".tar", ".tar.gz", ".tgz", ".zip")
LISTED = 5                       # names shown when saying what a folder holds instead


@dataclasses.dataclass
class Located:
    name: str                    # the submission's name (its folder's, or its archive's)
    package: str = None          # the mytorch folder to grade; None: not gradable
    form: str = ""               # how it was handed in: mytorch/, handin/mytorch/, handin.tar, ...
    reason: str = ""             # why it is not gradable


def _kind(path):
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def is_archive(name):
    return name.lower().endswith(ARCHIVES)


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


def _package_in(folder):
    """``folder``/mytorch if it is a package; else (None, why not, or '' when there is no mytorch at all)."""
    path = os.path.join(folder, "mytorch")
    mode = _kind(path)
    if not mode:
        return None, ""
    if stat.S_ISLNK(mode):
        return None, "mytorch is a link, not a folder"
    if not stat.S_ISDIR(mode):
        return None, "mytorch is a file, not a folder (hand in the folder, or handin.tar)"
    if not stat.S_ISREG(_kind(os.path.join(path, "__init__.py"))):
        return None, "mytorch/ has no __init__.py (hand in the whole package, or handin.tar)"
    return path, ""


def _one_level_down(folder):
    """(package, form, reason) of the sub-folders of ``folder`` holding mytorch/."""
    found, reasons = [], []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name == "mytorch" or not stat.S_ISDIR(_kind(path)):
            continue
        package, reason = _package_in(path)
        if package:
            found.append((package, f"{untrusted.line(name, 60)}/mytorch/"))
        elif reason:
            reasons.append(f"{untrusted.line(name, 60)}/{reason}")
    if len(found) > 1:
        return None, "", "several folders hold a mytorch package: " + ", ".join(form for _, form in found[:LISTED])
    if found:
        return found[0][0], found[0][1], ""
    return None, "", reasons[0] if reasons else ""


def _from_archive(path, staging):
    """(package, reason) of the archive at ``path``, unpacked into the empty folder ``staging``."""
    name = untrusted.line(os.path.basename(path), 100)
    try:
        archive.unpack(path, staging)
    except archive.UnpackError as error:
        return None, f"{name} was not unpacked: {error}"
    except Exception as error:                            # a damaged archive
        return None, f"{name} is damaged or not an archive ({type(error).__name__})"
    package, reason = _package_in(staging)
    if package is None and not reason:
        package, _, reason = _one_level_down(staging)
    if package is None:
        return None, f"{name} holds no mytorch package" + (f" ({reason})" if reason else "")
    return package, ""


def _holds(folder):
    names = sorted(os.listdir(folder))
    shown = ", ".join(untrusted.line(n, 60) for n in names[:LISTED]) + (", …" if len(names) > LISTED else "")
    return names, shown


def locate(folder, name, staging):
    """Where the ``mytorch`` of the submission ``name`` in ``folder`` is, unpacking into ``staging`` (a folder
    of the grader's, made empty for this submission); a ``Located`` with the reason when there is none."""
    path = os.path.join(folder, name)
    mode = _kind(path)
    try:
        if stat.S_ISREG(mode):                            # an archive at the class folder's top
            package, reason = _from_archive(path, staging)
            return Located(name, package, untrusted.line(name, 100), reason)
        if stat.S_ISLNK(mode):
            return Located(name, reason="a link, not a folder (copy the submission in)")
        package, reason = _package_in(path)
        if package:
            return Located(name, package, "mytorch/")
        if reason:
            return Located(name, reason=reason)
        package, form, reason = _one_level_down(path)
        if package:
            return Located(name, package, form)
        names, shown = _holds(path)
        archives = [n for n in names if is_archive(n) and stat.S_ISREG(_kind(os.path.join(path, n)))]
        if len(archives) == 1:
            package, why = _from_archive(os.path.join(path, archives[0]), staging)
            return Located(name, package, untrusted.line(archives[0], 100), why)
        if len(archives) > 1:
            return Located(name, reason="several archives (" + ", ".join(untrusted.line(a, 60) for a in
                                                                        archives[:LISTED]) + "): hand in one")
        if reason:
            return Located(name, reason=reason)
        if not names:
            return Located(name, reason="the folder is empty")
        return Located(name, reason=f"no mytorch/ folder, handin.tar or zip in it (it holds {shown})")
    except OSError as error:
        return Located(name, reason=f"it could not be read ({error.strerror or error})")

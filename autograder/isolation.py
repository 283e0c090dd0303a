"""Keeping submissions apart from each other and from the grader (batch and Gradescope grading).

* ``private_copy`` copies a submission's ``mytorch`` package (regular files and folders only: no links,
  devices or FIFOs, bounded in size and count) into a folder of the grader's own, readable by all and
  writable by the grader alone. Student code runs on that copy; the handed-in files are never run.
  Nothing else of the submission is copied, so an ``autograder`` package shipped beside ``mytorch`` never
  reaches the grading area.
* ``writable_by`` finds what a sandbox user could change among the grader's files (its code, the reference
  data and manifest) and the folders above them.
* ``grader_inside`` says whether the grading code itself was imported from a submission.
"""
import errno
import grp
import os
import stat

COPY_BYTES = 64 << 20            # one submission's mytorch package
COPY_FILES = 5000


class CopyError(Exception):
    """The submission cannot be copied within the limits; the message says why."""


def private_copy(package, destination):
    """Copy the folder ``package`` (a ``mytorch``) to ``destination`` (which must not exist)."""
    total, count = 0, 0
    package = os.path.abspath(package)
    if not stat.S_ISDIR(os.lstat(package).st_mode):
        raise CopyError("mytorch is a link or not a folder")
    for folder, dirs, files in os.walk(package):
        rel = os.path.relpath(folder, package)
        target = os.path.normpath(os.path.join(destination, rel))
        os.makedirs(target, mode=0o755, exist_ok=rel != ".")
        os.chmod(target, 0o755)
        dirs[:] = [d for d in dirs if d != "__pycache__" and stat.S_ISDIR(os.lstat(os.path.join(folder, d)).st_mode)]
        for name in files:
            source = os.path.join(folder, name)
            try:
                fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError as error:
                if error.errno == errno.ELOOP:            # a symbolic link, left out
                    continue
                raise
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    continue                              # FIFOs, devices and sockets are left out
                count += 1
                total += info.st_size
                if count > COPY_FILES or total > COPY_BYTES:
                    raise CopyError(f"the mytorch package is larger than {COPY_BYTES >> 20} MiB or "
                                    f"{COPY_FILES} files")
                out = os.open(os.path.join(target, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                try:
                    left = COPY_BYTES
                    while left > 0:
                        block = os.read(fd, min(1 << 20, left))
                        if not block:
                            break
                        os.write(out, block)
                        left -= len(block)
                finally:
                    os.close(out)
            finally:
                os.close(fd)
    return destination


def writable_by(paths, user):
    """The paths among ``paths`` (walked recursively) and the folders above them that ``user`` could change."""
    found = []

    def can_write(path, info):
        if info.st_uid == user.pw_uid:
            return True
        if info.st_mode & stat.S_IWOTH:
            return True
        groups = {user.pw_gid} | {g.gr_gid for g in grp.getgrall() if user.pw_name in g.gr_mem}
        return bool(info.st_mode & stat.S_IWGRP) and info.st_gid in groups

    def note(path):
        info = os.lstat(path)
        if can_write(path, info):
            found.append(path)
        return info

    for top in paths:
        parent = os.path.dirname(os.path.abspath(top))
        while True:                                       # a writable folder above lets it swap the whole tree
            info = os.lstat(parent)
            if can_write(parent, info) and not info.st_mode & stat.S_ISVTX:
                found.append(parent)
            if parent == os.path.dirname(parent):
                break
            parent = os.path.dirname(parent)
        for folder, dirs, files in os.walk(top):
            note(folder)
            for name in files:
                note(os.path.join(folder, name))
    return found


def grader_inside(folder):
    """True if this grading code lives inside ``folder`` (it would be a submission's own grader)."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    folder = os.path.realpath(folder)
    return here == folder or here.startswith(folder + os.sep)

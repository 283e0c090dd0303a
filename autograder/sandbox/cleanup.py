"""What children leave behind, removed: their working folders, and under ``--run-as`` every process, IPC object
and temporary file of the sandbox user (``clear_user``, once no child of that user runs any more).
"""
import contextlib
import os
import stat
import tempfile

from autograder.sandbox import ipc, reaper, scratch, tree

SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue")   # where any user may leave files, and
SHARED_PARENTS = ("/", "/var", "/run", "/dev")                  # any folder below these that any user may write
SHARED_DEPTH = 4                # levels of root's shared folders inside them (/tmp/.X11-unix) looked into
_work_dirs = set()              # children's working folders not removed yet


def work_folder():
    """A new working folder for a child (0700: under --run-as, chowned to its user alone), recorded until
    ``remove_work`` (or ``free_space``) removes it. It is made inside a folder of the grader's own (0711,
    ``scratch.folder``) that the child's user may pass through but not write: a sandbox user owns its working
    folder, and could otherwise rename it in the shared temporary folder and plant a link in its place for the
    next child, which enters its folder (as root, before it gives up root) by that name."""
    parent = scratch.folder("work")
    os.chmod(parent, 0o711)
    work = os.path.join(parent, "w")
    os.mkdir(work, 0o700)
    _work_dirs.add(work)
    return work


def remove_work(work):
    tree.remove(os.path.dirname(work))
    _work_dirs.discard(work)


def clear_user(user):
    """End every process of ``user`` (a pwd entry) and remove all it left: its System V IPC objects and
    whatever it owns in the shared temporary folders (``shared_folders``, POSIX shared memory included).
    Call only when no part runs as ``user``."""
    if user is None or user.pw_uid == 0:
        return
    reaper.kill_user(user)
    ipc.remove_owned_by(user.pw_uid)
    _remove_owned(user.pw_uid)


def shared_folders():
    """The shared temporary folders of this machine, each once: the temporary folder, SHARED_TEMP, and every
    folder directly below SHARED_PARENTS that any user may write (/run/lock, /var/crash, ...)."""
    fixed = {tempfile.gettempdir(), *SHARED_TEMP}
    candidates = list(fixed)
    for parent in SHARED_PARENTS:
        with contextlib.suppress(OSError), os.scandir(parent) as entries:
            candidates += [entry.path for entry in entries]
    found = set()
    for top in candidates:
        with contextlib.suppress(OSError):
            info = os.stat(top)                               # a link (/var/lock) counts as where it leads
            if stat.S_ISDIR(info.st_mode) and (top in fixed or info.st_mode & stat.S_IWOTH):
                found.add(os.path.realpath(top))
    return sorted(found)


def _remove_owned(uid):
    for top in shared_folders():
        _remove_owned_in(top, uid, SHARED_DEPTH)


def _remove_owned_in(folder, uid, depth):
    """Remove what ``uid`` owns in ``folder``, and in the folders there that any user may write but only their
    owner (root) may rename: a shared folder inside a shared folder (sticky, so nobody can swap it)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if info.st_uid == uid:
                tree.remove(entry.path)
            elif (depth > 0 and stat.S_ISDIR(info.st_mode) and info.st_uid == 0
                  and info.st_mode & stat.S_IWOTH and info.st_mode & stat.S_ISVTX):
                _remove_owned_in(entry.path, uid, depth - 1)


def free_space(user=None):
    """Delete what children left on disk: their working folders and, under ``--run-as``, everything the
    sandbox user owns in the shared temporary folders. Call only once every child is dead."""
    for work in list(_work_dirs):
        tree.remove(os.path.dirname(work))
    if user is not None and user.pw_uid != 0:
        _remove_owned(user.pw_uid)


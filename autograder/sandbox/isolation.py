"""Keeping submissions apart from each other and from the grader (batch and Gradescope grading).

* ``private_copy`` copies a submission's ``mytorch`` package (regular files and folders only: no links,
  devices or FIFOs, bounded in size and count) into a folder of the grader's own, readable by all and
  writable by the grader alone. Student code runs on that copy; the handed-in files are never run.
  Nothing else of the submission is copied, so an ``autograder`` package shipped beside ``mytorch`` never
  reaches the grading area.
* ``writable_by`` finds what a sandbox user could change among the grader's files (its code, the reference
  data and manifest), or the interpreter's (see ``interpreter``), and the folders above them.
"""
import errno
import os
import stat
import struct
import subprocess

from autograder.sandbox import reaper, tree

COPY_BYTES = 64 << 20            # one submission's mytorch package
COPY_FILES = 5000
COPY_DEPTH = 16                  # levels of folders inside it
WALK_ENTRIES = 500000            # entries looked at in the trees whose writers are checked (a Python's site)
FIND = next((p for p in ("/usr/bin/find", "/bin/find") if os.access(p, os.X_OK)), None)
FIND_SECONDS = 120               # a tree find(1) cannot list in this time is walked in Python (bounded)


class CopyError(Exception):
    """The submission cannot be copied within the limits; the message says why."""


def private_copy(package, destination):
    """Copy the folder ``package`` (a ``mytorch``) to ``destination`` (which must not exist)."""
    total, count = 0, 0
    package = os.path.abspath(package)
    if not stat.S_ISDIR(os.lstat(package).st_mode):
        raise CopyError("mytorch is a link or not a folder")
    try:
        for rel, folder, dirs, files in tree.walk(package, COPY_DEPTH, 2 * COPY_FILES):
            target = os.path.normpath(os.path.join(destination, rel))
            os.makedirs(target, mode=0o755, exist_ok=rel != ".")
            os.chmod(target, 0o755)
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                count += 1
                if count > COPY_FILES:
                    raise CopyError(f"the mytorch package holds more than {COPY_FILES} files")
                total = _copy_file(folder, name, os.path.join(target, name), total)
    except tree.TreeError as error:
        raise CopyError(f"the mytorch package cannot be copied: {error}") from None
    return destination


def _copy_file(folder, name, target, total):
    """Copy the regular file ``name`` of the folder open as ``folder`` (a FIFO or device is skipped, a link
    swapped in is refused); returns the bytes copied so far in all."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.ELOOP:                    # a symbolic link, left out
            return total
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return total                                  # FIFOs, devices and sockets are left out
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            while True:
                block = os.read(fd, 1 << 20)
                if not block:
                    return total
                total += len(block)
                if total > COPY_BYTES:
                    raise CopyError(f"the mytorch package is larger than {COPY_BYTES >> 20} MiB")
                os.write(out, block)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def groups_of(user):
    import grp  # POSIX: groups exist only where sandbox users do
    return {user.pw_gid} | {g.gr_gid for g in grp.getgrall() if user.pw_name in g.gr_mem}


ACL_ACCESS = "system.posix_acl_access"   # its value: a version (u32), then (tag u16, permissions u16, id u32)
ACL_USER, ACL_GROUP_OBJ, ACL_GROUP = 0x02, 0x04, 0x08
ACL_WRITE = 0x02


def can_write(info, user, groups, path=None):
    """Whether ``user`` (in ``groups``) may change what ``info`` (a stat result of ``path``) describes: as its
    owner, as anyone, through its group, or through an entry of its POSIX ACL naming the user or one of the
    groups (where an ACL has such entries, the mode's group bits are its mask, so only a group-writable
    mode can let one of them write)."""
    if info.st_uid == user.pw_uid or info.st_mode & stat.S_IWOTH:
        return True
    if not info.st_mode & stat.S_IWGRP:
        return False
    return info.st_gid in groups or (path is not None and _acl_lets_write(path, user, groups))


def _acl_lets_write(path, user, groups):
    try:
        acl = os.getxattr(path, ACL_ACCESS)
    except OSError:                                       # none, or a file system without ACLs
        return False
    for at in range(4, len(acl) - 7, 8):
        tag, permissions, who = struct.unpack_from("<HHI", acl, at)
        if permissions & ACL_WRITE and ((tag == ACL_USER and who == user.pw_uid)
                                        or (tag == ACL_GROUP and who in groups)):
            return True
    return False


def writable_by(paths, user):
    """The paths among ``paths`` (walked, no links followed) and the folders above them that ``user`` could
    change."""
    return writable_by_each(paths, [user])[0]


def writable_by_each(paths, users, shallow=()):
    """``writable_by`` for each of ``users`` (a list per user, in order), in one walk of ``paths``;
    ``shallow``: folders looked at with what lies directly in them alone. A path that does not exist is
    looked at through the folders above it (whoever may write there may make it)."""
    who = [(user, groups_of(user), []) for user in users]
    uids = sorted({user.pw_uid for user in users})

    def anyone(info):
        """Whether any of the users might change it: a cheap test first, since a Python's tree is ~100,000
        entries and almost all are someone else's, writable by their owner alone."""
        return info.st_uid in uids or info.st_mode & (stat.S_IWOTH | stat.S_IWGRP)    # group: or by an ACL

    def check(info, path, above=False):
        """``above``: a folder above what was named, which a user can swap the tree under unless it is
        sticky (only an entry's owner may rename it) and not the user's own."""
        for user, groups, found in who:
            if can_write(info, user, groups, path) and not (above and info.st_mode & stat.S_ISVTX
                                                            and info.st_uid != user.pw_uid):
                found.append(path)

    folders, shallow_folders, above = [], [], set()
    for top, deep in [(p, True) for p in paths] + [(p, False) for p in shallow]:
        for parent in (os.path.abspath(top), os.path.realpath(top)):  # the folders named, and those reached
            while parent != os.path.dirname(parent):                 # one writable lets it swap the tree
                parent = os.path.dirname(parent)
                if parent in above:
                    break
                above.add(parent)
                try:
                    info = os.lstat(parent)
                except FileNotFoundError:                 # whoever may write the folder above may make it
                    continue
                if not stat.S_ISLNK(info.st_mode):        # a link's bits mean nothing; where it leads is checked
                    check(info, parent, above=True)
        try:
            info = os.lstat(top)
        except FileNotFoundError:                         # (a sys.path entry) the folders above tell who could
            continue
        if stat.S_ISDIR(info.st_mode):
            (folders if deep else shallow_folders).append(top)
        else:
            check(os.stat(top) if stat.S_ISLNK(info.st_mode) else info, top)
    listed = _found_by_find(folders, uids) if folders else []
    if listed is None:                                    # no find, or it failed: the walk in Python
        listed = [p for top in folders for p in _walked(top)]
    listed += [p for top in shallow_folders for p in _walked(top, deep=False)]   # a find costs more than these
    for path in dict.fromkeys(listed):
        try:
            info = os.lstat(path)
        except FileNotFoundError:    # removed since it was listed, so nothing can run it; whoever may write its
            continue                 # folder could make it again, and the folder itself is looked at
        if stat.S_ISLNK(info.st_mode):                    # what it points to is what Python would read
            try:
                info = os.stat(path)
            except OSError:
                continue
        if anyone(info):
            check(info, path)
    return [found for _, _, found in who]


def _walked(top, deep=True):
    """Every path in the folder ``top`` (itself included, no link followed), bounded (``tree.walk``); not
    ``deep``: what lies directly in it alone."""
    for rel, folder, dirs, files in tree.walk(top, 64, WALK_ENTRIES, everything=True):
        for name in ["."] + files + ([] if deep else dirs):
            yield os.path.normpath(os.path.join(top, rel, name))
        if not deep:
            dirs[:] = []


def _found_by_find(folders, uids):
    """The paths in ``folders`` that a user of ``uids`` might change (owned by one, group- or
    world-writable) and every link, as GNU find(1) lists them: a superset of what ``writable_by_each`` must
    look at, found in half a Python walk's time (0.26 s against 0.5 s for a Python of 95,000 files). None if
    find is missing, fails (a file removed while it looked) or takes too long: the walk in Python does it
    all then."""
    if FIND is None:
        return None
    test = ["(", "-type", "l", "-o", "-perm", "/022", *[a for uid in uids for a in ("-o", "-uid", str(uid))], ")"]
    try:
        done = reaper.run([FIND, "-P", *folders, *test, "-print0"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=FIND_SECONDS, cwd="/",
                          env={"LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [os.fsdecode(path) for path in done.stdout.split(b"\0") if path]


def readable_by_each(paths, users):
    """For each of ``users`` (pwd entries, in order), the paths among ``paths`` it could reach by path: list (a
    folder), enter (a folder) or read. Asked of the kernel, in a child that has become the user as a grading
    child does (no supplementary groups), so owners, groups, ACLs and every folder above count as they will."""
    found = []
    for user in users:
        reachable = reaper.as_user(user, lambda: bytes(os.access(p, os.R_OK) or os.access(p, os.X_OK)
                                                       for p in paths))
        if reachable is None or len(reachable) != len(paths):
            raise OSError(f"could not check what user {user.pw_name} may read")
        found.append([path for path, seen in zip(paths, reachable) if seen])
    return found

"""Walking and removing folders that student code made or handed in, without trusting their shape.

A submission may hand in, or a child may leave behind, a folder chain thousands of levels deep, a folder of a
million entries, folders without read or write permission, links in place of folders. Python's recursive
walkers end in ``RecursionError`` on the first and names longer than PATH_MAX on the second; so here:

* ``walk(top)`` is iterative and works through open folder descriptors (``openat`` relative to the parent,
  ``O_NOFOLLOW``), so no path grows with depth and no link is followed. It is bounded: more than DEPTH
  levels or ENTRIES entries is a ``TreeError`` naming which, for that tree alone.
* ``remove(path)`` deletes a tree of any depth and size, also iteratively through descriptors. It holds at
  most HELD descriptors: a folder deeper than that is first moved up to the top of the tree (``renameat``
  between two descriptors it holds), so a chain of depth D costs D/HELD moves, never D open files. It never
  crosses into another file system, and folders made unreadable or read-only by their owner are opened up
  first. It raises nothing; it returns False if something could not be removed.

Call ``remove`` on a child's tree only once every process that could write it is dead, as the sandbox does.

Windows has no folder descriptors (``os.open`` takes no ``dir_fd`` there): both then work through paths, as
bounded, with the folder's path in place of its descriptor; links are still never followed.
"""
import contextlib
import os
import secrets
import shutil
import stat
import time

DEPTH = 64                      # levels below the top a walk accepts
ENTRIES = 20000                 # entries (files, folders, anything) a walk looks at in all
HELD = 32                       # folder descriptors ``remove`` keeps open at once
REMOVE_TRIES = 10               # without descriptors (Windows): tries a tenth of a second apart



def _by_descriptor():
    """True where folders can be opened and worked in through descriptors (every POSIX system; not Windows)."""
    return os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


def _dir_flags():
    return os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TreeError(Exception):
    """The tree is deeper or larger than the walk accepts; the message says which."""


def _open_dir(name, dir_fd):
    """Open the folder ``name`` in ``dir_fd`` (never a link); if its owner took away our read or search
    right, give it back first (through an O_PATH descriptor, so a link swapped in cannot be followed)."""
    try:
        return os.open(name, _dir_flags(), dir_fd=dir_fd)
    except PermissionError:
        if not hasattr(os, "O_PATH"):                     # macOS: fchmodat, which never follows a link here
            os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)
            return os.open(name, _dir_flags(), dir_fd=dir_fd)
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
        return os.open(name, _dir_flags(), dir_fd=dir_fd)


def walk(top, depth=DEPTH, entries=ENTRIES, everything=False):
    """Yield ``(relative folder, folder fd, dirs, files)`` top-down for ``top`` and every folder below it, like
    ``os.fwalk``: ``dirs`` (sorted; prune it in place to skip some) and ``files`` (sorted: regular files only,
    unless ``everything``: then links, FIFOs, devices and sockets too) are names in the folder open as
    ``folder fd``, valid until the next step. Raises TreeError past ``depth`` levels or ``entries`` entries,
    OSError if ``top`` is not a folder (a link to one is not). Without folder descriptors (Windows), the
    folder's path stands where its descriptor would."""
    if not _by_descriptor():
        yield from _walk_paths(top, depth, entries, everything)
        return
    seen = 0
    frames = []                                           # [fd, relative path, level, folders still to visit]
    try:
        frames.append([os.open(top, _dir_flags()), ".", 0, None])
        while frames:
            frame = frames[-1]
            fd, rel, level, pending = frame
            if pending is None:                           # first visit: list it, hand it to the caller
                with os.scandir(fd) as listing:
                    dirs, files, seen = _listed(listing, seen, entries, everything)
                yield rel, fd, dirs, files
                frame[3] = pending = list(reversed(dirs))
            if not pending:
                os.close(frames.pop()[0])
                continue
            name = pending.pop()
            if level + 1 > depth:
                raise TreeError(f"its folders are nested more than {depth} levels deep")
            child = os.open(name, _dir_flags(), dir_fd=fd)
            frames.append([child, name if rel == "." else os.path.join(rel, name), level + 1, None])
    finally:
        for frame in frames:
            with contextlib.suppress(OSError):
                os.close(frame[0])


def remove(path):
    """Delete ``path`` (a folder tree of any shape, a file or a link) without following links and without
    recursion. Returns True when it is gone."""
    path = os.path.abspath(path)
    if not _by_descriptor():
        return _remove_paths(path)
    try:
        parent = os.open(os.path.dirname(path), _dir_flags())
    except OSError:
        return not os.path.lexists(path)
    try:
        return _remove_in(parent, os.path.basename(path))
    finally:
        os.close(parent)


def _remove_in(parent, name):
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=parent)
        return not _exists(parent, name)
    try:
        top = _open_dir(name, parent)
    except OSError:
        return False
    ok = True
    frames = [(top, None)]                                # (fd, its name in the folder below it in the list)
    try:
        device = os.fstat(top).st_dev
        while frames:
            fd = frames[-1][0]
            _writable(fd)
            descend = None
            with os.scandir(fd) as listing:
                for entry in listing:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if not is_dir:
                        try:
                            os.unlink(entry.name, dir_fd=fd)
                        except FileNotFoundError:
                            pass
                        except OSError:
                            ok = False
                        continue
                    if entry.stat(follow_symlinks=False).st_dev != device:
                        ok = False                        # a mount point: never remove another file system
                        continue
                    if len(frames) >= HELD:               # too deep to hold: move it up to the top
                        with contextlib.suppress(OSError):
                            os.rename(entry.name, f".deep-{secrets.token_hex(8)}", src_dir_fd=fd, dst_dir_fd=top)
                            descend = False
                            break
                        ok = False
                        continue
                    descend = entry.name
                    break
            if descend:
                try:
                    frames.append((_open_dir(descend, fd), descend))
                    continue
                except OSError:
                    ok = False
            if descend is False:                          # something moved up: list this folder again
                continue
            done_fd, done_name = frames.pop()
            os.close(done_fd)
            holder = frames[-1][0] if frames else parent
            try:
                os.rmdir(done_name if frames else name, dir_fd=holder)
            except FileNotFoundError:
                pass
            except OSError:
                ok = False
                if frames:                                # a folder left behind would be listed forever
                    return False
    except OSError:
        return False
    finally:
        for fd, _ in frames:
            with contextlib.suppress(OSError):
                os.close(fd)
    return ok and not _exists(parent, name)


def _listed(listing, seen, entries, everything):
    """``(folders, files, entries seen)`` of one folder's ``os.scandir``, each sorted, no link (nor a Windows
    junction) taken for a folder; TreeError once more than ``entries`` were seen in all."""
    dirs, files = [], []
    for entry in listing:
        seen += 1
        if seen > entries:
            raise TreeError(f"it holds more than {entries} files and folders")
        junction = getattr(entry, "is_junction", lambda: False)()             # Python 3.12 and newer
        if entry.is_dir(follow_symlinks=False) and not junction:
            dirs.append(entry.name)
        elif everything or entry.is_file(follow_symlinks=False):
            files.append(entry.name)
    return sorted(dirs), sorted(files), seen


def _walk_paths(top, depth, entries, everything):
    """``walk`` through paths (Windows): the same bounds, the same order, no link (or junction) followed."""
    if os.path.islink(top) or not os.path.isdir(top):
        raise NotADirectoryError(top)
    seen, todo = 0, [(".", 0)]
    while todo:
        rel, level = todo.pop()
        folder = os.path.normpath(os.path.join(top, rel))
        with os.scandir(folder) as listing:
            dirs, files, seen = _listed(listing, seen, entries, everything)
        yield rel, folder, dirs, files
        if dirs and level + 1 > depth:
            raise TreeError(f"its folders are nested more than {depth} levels deep")
        todo += [(d if rel == "." else os.path.join(rel, d), level + 1) for d in reversed(dirs)]


def _remove_paths(path):
    """``remove`` through paths (Windows): read-only files are made writable first; links are removed, never
    followed."""
    def writable_then_again(function, name, _):
        with contextlib.suppress(OSError):
            os.chmod(name, stat.S_IWRITE | stat.S_IREAD)
            function(name)
    for _ in range(REMOVE_TRIES):                         # a process just ended may hold a file a moment longer
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, onerror=writable_then_again)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
        if not os.path.lexists(path):
            return True
        time.sleep(0.1)
    return False


def _writable(fd):
    """Give the owner write and search rights on the folder open as ``fd`` (a no-op for root, which needs none)."""
    if os.geteuid() != 0:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)


def _exists(parent, name):
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
    except OSError:
        return True

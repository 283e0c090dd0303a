"""Linux's namespaces for a part's child, each probed once: a PID namespace of its own (``unshare``), and an
empty folder over each of the instructor's folders that a sandbox user could read (a mount namespace,
``ipc.hide``). Both need root; neither is ever required where the kernel or the image refuses it (Gradescope's
images may lack ``unshare``), but hiding is, where it was asked for: ``preflight.hide_from_users`` refuses to grade
then.
"""
import contextlib
import os
import subprocess
import tempfile
import types

from autograder.sandbox import interpreter, ipc, reaper, system

_hidden = []                    # folders no child run as a sandbox user may see (``hide``)


def hide(folders):
    """From now on, every child run as a sandbox user has an empty folder over each of ``folders`` (``ipc.hide``
    in its own mount namespace): the instructor's files a sandbox user could read (``preflight.hide_from_users``).
    A folder inside another (the report in the class folder) is hidden with it."""
    folders = set(_hidden) | set(folders)
    _hidden[:] = sorted(f for f in folders if not any(interpreter.within(f, g) for g in folders if g != f))


_can_hide = []                   # [True or False], once known


def can_hide():
    """True when ``ipc.hide`` works here (as root, where the kernel lets this process make a mount namespace and
    mount a tmpfs in it), unless MYTORCH_GRADER_MOUNT_NAMESPACE=0: tried once, in a child over a folder of its
    own."""
    if not _can_hide:
        works = False
        if ipc._libc is not None and system.is_root() and os.environ.get("MYTORCH_GRADER_MOUNT_NAMESPACE", "1") != "0":
            folder = tempfile.mkdtemp(prefix="mytorch-hide-")
            try:
                with open(os.path.join(folder, "seen"), "w"):
                    pass
                child = reaper.spawn(lambda: types.SimpleNamespace(pid=os.fork()))   # no part's end kills it
                if child.pid == 0:
                    try:
                        os._exit(0 if ipc.hide([folder]) and not os.listdir(folder) else 1)
                    finally:                          # whatever it raised, the copy of the grader goes no further
                        os._exit(1)
                try:
                    works = os.waitstatus_to_exitcode(os.waitpid(child.pid, 0)[1]) == 0
                finally:
                    reaper.reaped(child)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, "seen"))
                os.rmdir(folder)
        _can_hide.append(works)
    return _can_hide[0]


def hidden_from(user):
    """The folders hidden from a child run as ``user`` (a sandbox user; none for the grader's own)."""
    return list(_hidden) if user is not None else []



_unshare = []                   # [path to unshare, or None], once known


def pid_namespace():
    """``unshare`` when a PID namespace can be made here (as root, util-linux present), else None. In one, the
    child is process 1 and the kernel kills everything in it when the child ends: a second line of defence
    behind ``reaper``, never required (Gradescope images may lack it). MYTORCH_GRADER_PID_NAMESPACE=0 turns
    it off."""
    if not _unshare:
        wanted = system.LINUX and system.is_root() and os.environ.get("MYTORCH_GRADER_PID_NAMESPACE", "1") != "0"
        path = reaper.tool("unshare") if wanted else None
        if path is not None:
            try:
                probe = reaper.run([path, "--pid", "--fork", "--kill-child", "true"], capture_output=True,
                                       timeout=10)
                path = path if probe.returncode == 0 else None
            except (OSError, subprocess.SubprocessError):
                path = None
        _unshare.append(path)
    return _unshare[0]


_mount_proc = []                # [True or False], once known


def mount_proc(unshare):
    """True when ``unshare --mount-proc`` works here (as root, where a proc filesystem can be mounted)."""
    if not _mount_proc:
        try:
            probe = reaper.run([unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "true"],
                               capture_output=True, timeout=10)
            _mount_proc.append(probe.returncode == 0)
        except (OSError, subprocess.SubprocessError):
            _mount_proc.append(False)
    return _mount_proc[0]


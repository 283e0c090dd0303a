"""The grader's temporary folders, named for the process that made them, so the next grader removes what a
killed one left.

A grader that is killed (SIGKILL, a platform's timeout, the machine's OOM killer) removes nothing. Autolab,
PrairieLearn and Gradescope may run the next job on the same machine, as the same user: a folder that held a
submission's copy must not outlive its grader there. So each is made private (0700) and named

    mytorch-KIND-PID-START-BOOT-XXXXXXXX      in the temporary folder

(the process that made it: its pid, when it started, this boot of the machine; ``owner``), and every grader
removes, when it starts (``sweep``), the folders of that form of its own user whose maker no longer runs (as
root, of any user: a child's working folder is lent to its sandbox user).
Off Linux (no /proc to tell a process's start) the name holds the pid alone and nothing is swept.
"""
import contextlib
import os
import re
import tempfile

from autograder.sandbox import reaper, system, tree

NAME = re.compile(r"mytorch-(?P<kind>[a-z]+(?:-[a-z]+)*)-(?P<pid>\d+)-(?P<start>\d+)-(?P<boot>[0-9a-f]{8})-")


def _boot():
    """This boot of the machine (the first 8 characters of the kernel's boot id), or '-'."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()[:8] or "-"
    except OSError:
        return "-"


def owner(pid=None):
    """(pid, start, boot) of a process (this one by default): they name it as long as it runs, on this boot."""
    pid = os.getpid() if pid is None else pid
    return pid, reaper.start_time(pid), _boot()


def folder(kind):
    """A new private folder of this process's, ``mytorch-KIND-…`` in the temporary folder."""
    if not system.LINUX:
        return tempfile.mkdtemp(prefix=f"mytorch-{kind}-{os.getpid()}-")
    pid, start, boot = owner()
    return tempfile.mkdtemp(prefix=f"mytorch-{kind}-{pid}-{start}-{boot}-")


def sweep():
    """Remove this user's folders (``folder``'s) in the temporary folder whose maker is gone; their paths."""
    if not system.LINUX:
        return []
    swept, uid = [], os.geteuid()
    with contextlib.suppress(OSError):
        for entry in os.scandir(tempfile.gettempdir()):
            found = NAME.match(entry.name)
            if not found or not entry.is_dir(follow_symlinks=False):
                continue
            if uid != 0 and entry.stat(follow_symlinks=False).st_uid != uid:    # root's: its sandbox users' too
                continue
            pid = int(found.group("pid"))
            if owner(pid) != (pid, int(found.group("start")), found.group("boot")):
                tree.remove(entry.path)
                swept.append(entry.path)
    return swept

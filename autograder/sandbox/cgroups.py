"""A part's memory, counted across all its processes: a memory control group per part's child, where it can be had.

The address-space limit is per process: a part that forks (up to PROCESS_LIMIT processes under ``--run-as``)
may hold that much in each, and memory that is in no process's address space (a memfd, a tmpfs file) is
counted by none. A memory cgroup counts every page its processes use, shared memory included; the kernel
ends one of them (out of memory, in the cgroup alone) when the part goes over. So as root the grader makes,
below its own memory cgroup, one group per part's child, with the part's memory limit
(``memory.limit_in_bytes`` of cgroup v1, ``memory.max`` of cgroup v2, no swap beside it); the child joins it
(``join``, as root, before anything of the student's runs) and the grader removes it once every process of
the part is gone. Never required: where the grader has no memory cgroup it may create groups in, or with
MYTORCH_GRADER_CGROUP=0, each process keeps only its own limits.
"""
import contextlib
import os
import secrets
import threading
import time

PREFIX = "mytorch-part-"


def _own_memory_group():
    """(folder of this process's memory cgroup, limit file name, swap limit file name), or None."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = [line.rstrip("\n").split(":", 2) for line in f]
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    for mount in mounts:
        fields = mount[mount.index("-") + 1:] if "-" in mount else []
        if len(fields) < 3:
            continue
        kind, options = fields[0], fields[2].split(",")
        if kind == "cgroup" and "memory" in options:
            path = next((p for _, controllers, p in lines if "memory" in controllers.split(",")), None)
            if path is not None:
                return os.path.join(mount[4], path.lstrip("/")), "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"
        if kind == "cgroup2":
            path = next((p for number, controllers, p in lines if number == "0" and controllers == ""), None)
            if path is not None:
                folder = os.path.join(mount[4], path.lstrip("/"))
                with contextlib.suppress(OSError), open(os.path.join(folder, "cgroup.subtree_control")) as f:
                    if "memory" in f.read().split():
                        return folder, "memory.max", "memory.swap.max"
    return None


def wanted():
    """As root, unless MYTORCH_GRADER_CGROUP=0."""
    return os.geteuid() == 0 and os.environ.get("MYTORCH_GRADER_CGROUP", "1") != "0"


def make(memory_mb):
    """A new memory cgroup limited to ``memory_mb`` MiB for one part's child: its folder, or None."""
    if not wanted():
        return None
    own = _own_memory_group()
    if own is None:
        return None
    parent, limit, swap = own
    folder = os.path.join(parent, PREFIX + secrets.token_hex(6))
    try:
        os.mkdir(folder)
    except OSError:
        return None
    try:
        with open(os.path.join(folder, limit), "w") as f:
            f.write(str(memory_mb << 20))
        if swap == "memory.swap.max":
            with contextlib.suppress(OSError), open(os.path.join(folder, swap), "w") as f:
                f.write("0")
        else:                                          # v1 counts memory and swap together, at most the same
            with contextlib.suppress(OSError), open(os.path.join(folder, swap), "w") as f:
                f.write(str(memory_mb << 20))
    except OSError:
        remove(folder)
        return None
    return folder


def join(folder):
    """Move the calling process (a child about to run student code, still root) into ``folder``'s group.
    Only system calls. True if it worked."""
    if not folder:
        return False
    try:
        fd = os.open(os.path.join(folder, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
        return True
    except OSError:
        return False


def remove(folder):
    """Remove the group once its processes are gone (the reaper killed them; a moment for the kernel)."""
    if not folder:
        return
    for _ in range(50):
        try:
            os.rmdir(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


_removing = []                  # threads removing a group (``remove_soon``) not waited for yet


def remove_soon(folder):
    """``remove`` in a thread of its own: the kernel takes a moment to let go of a group whose processes just
    ended (10 ms sleeps, a few times), which would keep the part's slot from the next part meanwhile (a batch
    of 20 took 12% longer). ``wait_removed`` waits for them all."""
    if folder:
        thread = threading.Thread(target=remove, args=(folder,), name="cgroup-remove")
        thread.start()
        _removing.append(thread)


def wait_removed():
    """Return once every group ``remove_soon`` was given is gone (or given up)."""
    while _removing:
        _removing.pop().join()

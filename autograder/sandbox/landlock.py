"""Landlock: a child that shares the grader's user can write only in its own working folder, and can neither
reach nor signal a process outside its sandbox.

Where student code runs as the grader's own user (Autolab runs ``make``, the grader and student code as one
user; a student grading their own code), the user's permissions keep nothing from it: it could open the
standard output of ``make`` through ``/proc/<pid>/fd/1``, or the log that output goes to, and print a scores
line of its own after the grader's. Landlock, a Linux security module any process may apply to itself (no
root, and allowed by Docker's default seccomp profile), takes those away from the child and everything it
starts (its *domain*), whatever the user's permissions say:

    ABI 1 (Linux 5.13)   writing, creating, removing and renaming files only beneath the child's working
                         folder (and writing /dev/null); no ptrace-class access to processes outside the
                         domain: /proc/<pid>/fd, mem, environ of the grader, make or the shell
    ABI 2, 3             linking or moving files in from elsewhere (REFER), truncating (TRUNCATE)
    ABI 6 (Linux 6.12)   no signal to a process outside the domain, no abstract UNIX socket outside it

Reading stays allowed (the child imports NumPy and its own package wherever they are). ``abi()`` says what
the kernel offers (0: nothing, off Linux, or Landlock not enabled at boot); ``wanted()`` the version children
get: MYTORCH_GRADER_LANDLOCK=0 turns it off (for tests whose student code leaves a record elsewhere), and a
number N caps it at ABI N (to see what an older kernel holds). The parent builds the rules
(``ruleset``: a descriptor, closed at exec) and the child applies them (``restrict``: two system calls,
safe between fork and exec); a zygote's child, a single thread, does both (``confine``).

This file imports nothing of the grader's: the zygote loads it by path.
"""
import ctypes
import os
import struct
import sys

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446      # the same numbers on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE = sum(1 << bit for bit in range(6, 13))                  # char, dir, reg, sock, fifo, block, sym
REFER, TRUNCATE = 1 << 13, 1 << 14
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
NULL_DEVICE = "/dev/null"

_abi = []


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi():
    """The Landlock ABI version this kernel offers this process, 0 when none."""
    if not _abi:
        version = 0
        if sys.platform.startswith("linux"):
            try:
                version = max(0, _libc().syscall(CREATE_RULESET, None, 0, CREATE_RULESET_VERSION))
            except (OSError, AttributeError):
                version = 0
        _abi.append(version)
    return _abi[0]


def wanted():
    """The ABI version children that share the grader's user are confined with: the kernel's, or at most
    MYTORCH_GRADER_LANDLOCK's number; 0 for none."""
    cap = os.environ.get("MYTORCH_GRADER_LANDLOCK", "")
    return min(abi(), int(cap)) if cap.isdigit() else abi()


def handled(version):
    """The file rights the rules govern at ``version``: every kind of write."""
    rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    return rights


def _attr(version):
    """struct landlock_ruleset_attr as ``version`` knows it: handled_access_fs, then handled_access_net (ABI 4),
    then scoped (ABI 6)."""
    fields = [handled(version)]
    if version >= 4:
        fields.append(0)                                      # the network is left as it is
    if version >= 6:
        fields.append(SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET)
    return struct.pack(f"={len(fields)}Q", *fields)


def _fail(what):
    error = ctypes.get_errno()
    raise OSError(error, f"Landlock: {what}: {os.strerror(error)}")


def ruleset(writable, version):
    """A ruleset descriptor (close-on-exec) of ABI ``version`` for a child that may write beneath the folders
    ``writable`` alone. Raises OSError if the kernel refuses these rules."""
    libc, attr = _libc(), _attr(version)
    fd = libc.syscall(CREATE_RULESET, attr, len(attr), 0)
    if fd < 0:
        _fail("creating the ruleset")
    try:
        rights = handled(version)
        for path, allowed in [(folder, rights) for folder in writable] + [
                (NULL_DEVICE, WRITE_FILE | (TRUNCATE if version >= 3 else 0))]:
            beneath = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = struct.pack("=Qi", allowed, beneath)   # struct landlock_path_beneath_attr (packed)
                if libc.syscall(ADD_RULE, fd, RULE_PATH_BENEATH, rule, 0) != 0:
                    _fail(f"allowing writes beneath {path}")
            finally:
                os.close(beneath)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Restrict:
    """``restrict(fd)``, its C calls looked up before the fork (nothing between fork and exec loads a library)."""

    def __init__(self):
        self.libc = _libc()

    def __call__(self, fd):
        """Apply the ruleset ``fd`` to the calling process and all it starts, for good."""
        if self.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            _fail("no_new_privs")
        if self.libc.syscall(RESTRICT_SELF, fd, 0) != 0:
            _fail("restricting the child")


def confine(writable, version):
    """Build and apply the rules in the calling process (a zygote's child: one thread)."""
    fd = ruleset(writable, version)
    try:
        Restrict()(fd)
    finally:
        os.close(fd)

"""Sandbox identities for batch grading: submissions graded at the same time never share a user.

Two submissions run as one user could read and write each other's working folders, signal each other's
processes and read each other's memory. So batch takes a pool of unprivileged users and leases one to each
submission while it is graded:

    --run-as USER               one user: one submission at a time (its parts still run in parallel)
    --run-as USER1,USER2,...    these users: as many submissions at a time (at most --jobs)
    --run-as 'PREFIX*'          the grader creates one user per job, named PREFIX and a random suffix, with
                                no home and no login shell, and deletes them when the batch ends

When a lease ends, every process of the user is killed and everything it left (IPC objects, files in the
shared temporary folders) is removed (``cleanup.clear_user``) before another submission gets the user.

A batch killed hard (SIGKILL, the out-of-memory killer, a reboot) deletes nothing: the users it made, and
what still runs as them, would stay. So each user a batch makes carries its maker in its comment field
(``owner_mark``: the batch's pid, when that process started, and the boot), and the next batch, before it
makes or leases any user, ends and deletes every user whose maker is gone (``sweep``).
"""
import contextlib
import pwd
import queue
import re
import secrets
import subprocess

from autograder.sandbox import cleanup, reaper, scratch

NAME = re.compile(r"[a-z_][a-z0-9_-]{0,20}\Z")          # a prefix useradd accepts, leaving room for the suffix


MARK = "mytorch-grader batch"    # the comment field of a user a batch made: MARK PID START BOOT


owner = scratch.owner            # (pid, start, boot): a process, as long as it runs, on this boot


def owner_mark(pid=None):
    """The mark of a process (this one by default), as a user's comment field holds it."""
    return " ".join(map(str, (MARK, *owner(pid))))


def orphaned(mark):
    """True if ``mark`` (``owner_mark``'s form) names a process that is no longer running: another one now has
    its pid (another start), or the machine has booted since."""
    parts = mark.split()
    if mark.startswith(MARK + " ") and len(parts) == 5 and parts[2].isdigit():
        return owner_mark(int(parts[2])) != mark
    return False


def sweep():
    """End and delete every user an earlier batch made whose batch is gone (killed before it could): their
    processes, IPC objects and temporary files first (``cleanup.clear_user``). Returns their names."""
    swept = []
    for user in pwd.getpwall():
        if user.pw_uid != 0 and orphaned(user.pw_gecos):
            cleanup.clear_user(user)
            _delete(user.pw_name)
            swept.append(user.pw_name)
    return swept


def _delete(name):
    reaper.run([reaper.tool("userdel") or "/usr/sbin/userdel", name], stdin=subprocess.DEVNULL, capture_output=True)
    reaper.run([reaper.tool("groupdel") or "/usr/sbin/groupdel", name], stdin=subprocess.DEVNULL, capture_output=True)


class IdentityError(Exception):
    """The --run-as value cannot be used; the message says why."""


def _entry(name):
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        raise IdentityError(f"no user named {name!r}") from None
    if user.pw_uid == 0:
        raise IdentityError(f"{name!r} is root; name an unprivileged user")
    return user


class Pool:
    """Users leased one per submission; ``made``: the users this pool created (deleted by ``close``)."""

    def __init__(self, users, made=()):
        self.users, self.made = list(users), list(made)
        self._free = queue.Queue()
        for user in self.users:
            self._free.put(user)

    @contextlib.contextmanager
    def lease(self):
        """A user no other submission runs as until the lease ends; then nothing of it is left running."""
        user = self._free.get()
        try:
            yield user
        finally:
            cleanup.clear_user(user)
            self._free.put(user)

    def close(self):
        """Clear every user and delete the ones this pool made."""
        for user in self.users:
            cleanup.clear_user(user)
        for user in self.made:
            _delete(user.pw_name)
        self.made = []


def pool(value, jobs):
    """The Pool that ``--run-as value`` names (``jobs``: how many users a prefix makes). Needs root."""
    if value.endswith("*"):
        prefix = value[:-1]
        if not NAME.match(prefix):
            raise IdentityError(f"{prefix!r} cannot start a user name: use lower-case letters, digits, '_' "
                                "or '-', at most 21 characters")
        useradd = reaper.tool("useradd")
        if useradd is None:
            raise IdentityError("making users needs useradd: name existing users instead (USER1,USER2)")
        made = []
        try:
            for _ in range(max(1, jobs)):
                name = prefix + secrets.token_hex(4)
                added = reaper.run([useradd, "--system", "--user-group", "--no-create-home", "--shell",
                                    "/usr/sbin/nologin", "--comment", owner_mark(), name],
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True)
                if added.returncode != 0:
                    raise IdentityError(f"could not create the user {name}: {added.stderr.strip()[-200:]}")
                made.append(_entry(name))
        except BaseException:
            Pool([], made).close()
            raise
        return Pool(made, made)
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise IdentityError("name at least one user")
    users = [_entry(n) for n in names]
    if len({u.pw_uid for u in users}) != len(users):
        raise IdentityError("the users must be different users (different uids)")
    return Pool(users)

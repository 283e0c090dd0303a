"""The limits a part's child takes on before any student code runs, written once.

A POSIX child applies them in itself: the one a zygote forks (``zygote._child``) and the one ``runner`` or
``portable`` spawns (in ``preexec_fn``, between fork and exec: system calls only, nothing that allocates
much or takes a lock another thread may hold). The parent builds ``settings`` (plain values: a zygote gets
them as JSON) and the child calls ``apply``; Windows has no such step, its limits are a Job Object's (``jobs``).

    settings = {"memory_mb", "cpu_seconds", "file_limit", "open_files",     every child
                "memory_fallback",     macOS: RLIMIT_AS is refused there, RLIMIT_DATA is taken instead
                "cgroup", "ipc_namespace", "hidden", "own_proc",            Linux, as root (``cgroups``, ``ipc``)
                "user": [uid, gid, processes] or None, "switch_user"}       Linux, under --run-as
                "landlock": [[folders it may write in], ABI] or None        Linux, as the grader's own user

This module is loaded by path in the zygote, so it imports nothing of the grader's: ``ipc`` and ``cgroups``
(and the keyring call ``ipc.keyctl_call`` found in the parent) are passed in, and so is ``seal``, which applies
the rules of ``landlock``, last.
"""
import os


def apply(settings, ipc=None, cgroups=None, keyctl=None, seal=None):
    """Confine the calling process (a child about to run a part) as ``settings`` say. Raises OSError (or
    ValueError, from ``setrlimit``) if a limit Linux must enforce cannot be set: the child must not go on."""
    import resource
    if settings.get("cgroup"):                            # as root: the part's memory, all its processes
        cgroups.join(settings["cgroup"])
    if settings.get("ipc_namespace"):                     # as root, before giving it up
        ipc.fresh_namespace(settings["memory_mb"])
    if settings.get("hidden") and not ipc.hide(settings["hidden"]):
        raise OSError("the grader could not hide the instructor's files from student code")
    if settings.get("own_proc"):                          # as root: its own processes alone (see ipc)
        ipc.own_proc()
    if ipc is not None:
        ipc.own_session_keyring(keyctl)
    _memory(resource, settings["memory_mb"] << 20, settings.get("memory_fallback", False))
    resource.setrlimit(resource.RLIMIT_CPU, (settings["cpu_seconds"], settings["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (settings["file_limit"], settings["file_limit"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (settings["open_files"], settings["open_files"]))
    user = settings.get("user")
    if user is not None:
        uid, gid, processes = user
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        os.setgroups([])
        if settings.get("switch_user", True):             # else unshare switches, inside the new namespace
            os.setgid(gid)
            os.setuid(uid)
    if settings.get("landlock"):                          # last: nothing above may need what it takes away
        seal()


def _memory(resource, size, fallback):
    """The address-space limit; where the system refuses one (macOS answers EINVAL) and ``fallback`` allows,
    the data segment's instead (which macOS enforces for some allocations only)."""
    try:
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    except (ValueError, OSError):
        if not fallback:
            raise
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (size, size))
        except (ValueError, OSError):
            pass

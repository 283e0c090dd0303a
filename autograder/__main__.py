"""The command line: ``python -m autograder`` dispatches to the command named first.

    python -m autograder [PART ...] [--verbose] [--json PATH] [--gradescope] [--timeout S] [--memory MB]
                         [--submission DIR] [--fresh-seed [SEED]] [--solution DIR] [--jobs N]
                         [--run-as USER] [--python PATH]
    python -m autograder batch DIR [--out REPORT] [--regrade] [--run-as USER[,USER...]|'PREFIX*'] [--jobs N]
                               [--timeout S] [--fresh-seed [SEED]]
    python -m autograder handin [--submission DIR] [--out handin.tar]
    python -m autograder gradescope [--root /autograder]      (Gradescope's run_autograder calls this)
    python -m autograder prairielearn [--root /grade]         (a PrairieLearn question's tests/run.sh calls this)
    python -m autograder autolab [--handin handin.tar]        (an Autolab assessment's Makefile calls this)
    python -m autograder generate [--config FILE] [--check]   (instructors: the reference data)

PART is a part number (2.1) or a section (2). The exit status is 0 whenever grading ran, whatever the score;
2 for a usage error.
"""
import os
import sys

# the commands that grade other people's code, whose isolation is Linux's (docs/security.md)
LINUX_ONLY = ("batch", "gradescope", "prairielearn", "autolab")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if hasattr(sys.stdout, "reconfigure"):            # a terminal that cannot show a character gets '?'
        sys.stdout.reconfigure(errors="replace")
    _refuse_a_path_the_users_may_write(argv)
    if argv and argv[0] in LINUX_ONLY:
        from autograder.sandbox import system
        if not system.LINUX:                          # their promises rest on the Linux sandbox alone
            print(f"python -m autograder {argv[0]}: {system.linux_only(f'python -m autograder {argv[0]}')}",
                  file=sys.stderr)
            return 2
    if argv and argv[0] == "batch":
        from autograder.instructor import batch
        return batch.main(argv[1:])
    if argv and argv[0] == "handin":
        from autograder.instructor import handin
        return handin.main(argv[1:])
    if argv and argv[0] == "gradescope":
        from autograder.instructor import gradescope
        return gradescope.main(argv[1:])
    if argv and argv[0] == "prairielearn":
        from autograder.instructor import prairielearn
        return prairielearn.main(argv[1:])
    if argv and argv[0] == "autolab":
        from autograder.instructor import autolab
        return autolab.main(argv[1:])
    if argv and argv[0] == "generate":
        if not os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(__file__)), "instructor", "generate.py")):
            print("python -m autograder generate: the reference-data generator ships with the instructor's "
                  "checkout only, not with the student handout", file=sys.stderr)
            return 2
        from autograder.instructor import generate
        return generate.main(argv[1:])
    _check_early(argv)
    from autograder.sandbox import zygotes
    worker = zygotes.early(argv)                       # starts importing NumPy while the grader does
    try:
        from autograder import cli
        return cli.main_grade(argv, worker)
    finally:
        if worker is not None:
            worker.close()


def _options(argv, names):
    """``{name: value}`` of the options ``names`` in ``argv`` (the last of each, as argparse takes it), read as
    text before anything is imported."""
    options = {}
    for k, arg in enumerate(argv):
        for name in names:
            if arg == name and k + 1 < len(argv):
                options[name] = argv[k + 1]
            elif arg.startswith(name + "="):
                options[name] = arg[len(name) + 1:]
    return options


def _refuse_a_path_the_users_may_write(argv):
    """Under ``--run-as`` (as root): every module the grader imports before its own checks run (argparse, json,
    ...) is looked for in each folder of ``sys.path`` in turn, the current one first under ``python -m`` (and
    those of PYTHONPATH), and one a sandbox user planted there would run as root. So, before any of them is
    imported (``os`` is loaded, ``pwd`` built in), a usage error if a sandbox user (each of a list; for batch's
    ``PREFIX*``, users not made yet: anyone) owns such a folder (or, for one not there yet, the nearest above),
    or could write it or rename it (through a folder above it); and every module imported from then on is
    looked at before it runs (``_CheckedImports``). The grader's checks look at them again later, whole (ACLs
    too)."""
    import os
    names = _options(argv, ["--run-as"]).get("--run-as")
    if names is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    import pwd
    users = []
    for name in names.split(","):
        try:
            users.append(pwd.getpwnam(name))
        except (KeyError, ValueError):
            pass                                      # PREFIX*, or no such user (refused later): anyone counts
    who = [(f"user {u.pw_name}", u.pw_uid, set(os.getgrouplist(u.pw_name, u.pw_gid))) for u in users] \
        or [("a sandbox user", -1, set())]
    # … and the folders the dynamic loader searches first for every library an import loads later, and where
    # Python reads bytecode from when PYTHONPYCACHEPREFIX or -X pycache_prefix names one
    loaded_from = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    loaded_from += [sys.pycache_prefix] if sys.pycache_prefix else []
    for entry in [p for p in sys.path if isinstance(p, str)] + loaded_from:
        folder = above = os.path.abspath(entry or os.curdir)
        while not os.path.exists(above):
            above = os.path.dirname(above)
        _refuse_a_writer(folder, _folders_up(above, None), who,
                         "start it from a folder only root may write, with no such folder on PYTHONPATH, "
                         "LD_LIBRARY_PATH or PYTHONPYCACHEPREFIX (or run python -P -m autograder)")
    sys.meta_path.insert(0, _CheckedImports(who))


def _folders_up(first, stop):
    """``(folder, its stat, lasting)`` from ``first`` up to ``stop`` (excluded) or ``/``: ``lasting``, whether a
    writer of it could change what lies in it for good (``first`` itself, or a folder that is not sticky: in a
    sticky one no one renames another's entry)."""
    import os
    folder = first
    while folder != stop:
        info = os.stat(folder)
        yield folder, info, folder == first or not info.st_mode & 0o1000
        if folder == os.path.dirname(folder):
            return
        folder = os.path.dirname(folder)


def _made_in(path):
    """``path``, or for a link to nothing, the nearest folder that holds what it would lead to: whoever may write
    there could make it."""
    import os
    if os.path.exists(path):
        return path
    target = os.path.realpath(path)
    while not os.path.exists(target):
        target = os.path.dirname(target)
    return target


def _acl_lets_write(path, uid, groups):
    """Whether a POSIX ACL entry of ``path`` lets the user ``uid`` (or one of ``groups``) write it (asked only
    where the mode's group bits, the ACL's mask, allow writing). Its value: a version (u32), then entries of
    tag u16 (2 a user, 8 a group), permissions u16 (2: write), id u32, little-endian."""
    import os
    try:
        acl = os.getxattr(path, "system.posix_acl_access")
    except OSError:                                    # none, or a file system without ACLs
        return False
    for at in range(4, len(acl) - 7, 8):
        tag, permissions = int.from_bytes(acl[at:at + 2], "little"), int.from_bytes(acl[at + 2:at + 4], "little")
        who = int.from_bytes(acl[at + 4:at + 8], "little")
        if permissions & 2 and ((tag == 2 and who == uid) or (tag == 8 and who in groups)):
            return True
    return False


def _refuse_a_writer(named, places, who, fix):
    """Exit 2 (before anything else runs) if one of ``who`` could change one of ``places`` (``(path, stat,
    lasting)``): as its owner, or, where lasting, through its mode or its group. The message names ``named``,
    or (None) the place found."""
    for path, info, lasting in places:
        for name, uid, groups in who:
            if info.st_uid == uid or (lasting and (info.st_mode & 0o002 or (info.st_mode & 0o020 and (
                    info.st_gid in groups or _acl_lets_write(path, uid, groups))))):
                sys.stderr.write(f"python -m autograder: error: {name} could change {named or path}, which the "
                                 f"grader runs or may import as root: student code could plant code there; {fix}\n")
                sys.exit(2)


class _CheckedImports:
    """First on ``sys.meta_path`` under ``--run-as``: each module the grader imports as root from then on is
    found as usual, then refused (exit 2) if a sandbox user could change its file, its bytecode or a folder
    between it and the folder of ``sys.path`` it lies in (one those checks looked at already), or the libraries
    a wheel ships beside its package (``numpy.libs``): a file planted there would otherwise run as root before
    the grader's checks of its own Python could refuse the run. The Pythons the grader starts as root are
    checked before it starts them."""

    def __init__(self, who):
        self.who, self.seen = who, set()

    def find_spec(self, name, path=None, target=None):
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                self._check(spec)
                return spec
        return None

    def _check(self, spec):
        import os
        folders = [p for p in spec.submodule_search_locations or () if isinstance(p, str)]
        places = [spec.origin] if spec.has_location and isinstance(spec.origin, str) else []
        places += folders + [p + ".libs" for p in folders if "." not in spec.name and os.path.isdir(p + ".libs")]
        if isinstance(spec.cached, str) and os.path.exists(spec.cached):
            places.append(spec.cached)
        entries = {os.path.abspath(p or os.curdir) for p in sys.path if isinstance(p, str)}
        for place in {p for place in places for p in (os.path.abspath(place), os.path.realpath(place))}:
            place = _made_in(place)                       # inside a zip archive: the archive
            if place in self.seen:                        # (a link's target and its folders too)
                continue
            stop = next((e for e in sorted(entries, key=len, reverse=True)
                         if place.startswith(e.rstrip(os.sep) + os.sep)), None)
            try:
                inside = [os.path.join(place, n) for n in os.listdir(place)] if place.endswith(".libs") else []
                checked = [(p, os.stat(p), True) for p in map(_made_in, [place] + inside)]
                checked += list(_folders_up(os.path.dirname(place), stop))
            except OSError as error:                      # not known safe: not run
                sys.stderr.write(f"python -m autograder: error: {place} could not be checked before the grader "
                                 f"imports it as root ({error.strerror or error})\n")
                sys.exit(2)
            _refuse_a_writer(None, checked, self.who,
                             "make the grader's Python and its own files writable by root alone")
            self.seen.add(place)                          # once it has passed


def _check_early(argv):
    """Under ``--run-as USER --python PATH`` (as root), start the checks of PATH for USER now (the probe of it
    as USER importing NumPy, the walk of its files: ``interpreter.check_early``), while this process imports
    NumPy and the grader. The probe runs as USER alone, as the checks would run it anyway; anything odd
    (another spelling, no such user) leaves it all to them."""
    import os
    options = _options(argv, ["--run-as", "--python"])
    if set(options) != {"--run-as", "--python"} or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    import pwd
    try:
        user = pwd.getpwnam(options["--run-as"])
    except (KeyError, ValueError):
        return
    python = os.path.abspath(options["--python"])
    if user.pw_uid != 0 and os.path.isfile(python) and os.access(python, os.X_OK):
        from autograder.sandbox import interpreter
        interpreter.check_early(python, user)


if __name__ == "__main__":
    import os
    for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(threads, "1")   # set before NumPy loads: its arrays here are small, a BLAS thread
    sys.exit(main())                          # pool only costs CPU (0.1 s of it to start) that the parts need

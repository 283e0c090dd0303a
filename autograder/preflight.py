"""The checks a run makes before any student code runs: under ``--run-as`` (as root), that nothing a sandbox user
could change runs as root or in a later child, that the user can run what a part's child runs, and that what it
may not read is hidden from it; in every mode, that the grader was not imported from the submissions.

The sandbox (``isolation``, ``interpreter``, ``reaper``, ``runner``) holds the means: walking a tree for what a
user could write, asking the kernel as the user what it may read, probing a Python as the user, hiding a
folder. This module decides what is looked at, when, and what the instructor is told (a usage error, exit 2,
that names the place and the fix). The grading command runs them in this order:

1. ``refuse_a_path_the_users_may_write`` (from ``__main__``, before anything else is imported): every folder
   of ``sys.path`` (the current one first under ``python -m``), of ``LD_LIBRARY_PATH`` and the bytecode
   prefix, which a module the grader imports next (argparse, json, ...) would be looked for in: one a sandbox
   user could write would hand it root. It then puts ``_CheckedImports`` first on ``sys.meta_path``, so that
   each module imported as root from then on is looked at before it runs. This is why this module imports
   nothing at its top but ``os``, ``sys`` and ``autograder``, which ``__main__`` holds already: it is imported
   before the guard stands, from the package's own folder beside ``__main__.py`` (never through ``sys.path``),
   so it adds no place to trust; everything else it needs it imports inside its functions, once the guard
   stands.
2. ``check_early`` (from ``__main__``, with ``--python``): the probe of that Python as the user and the walk
   of its files start now, while this process imports NumPy and the grader.
3. ``resolve_user``: a real user, not root, and we are root.
4. ``resolve_python``: the user's earlier processes killed (``clear_before_probes``: one could trace a probe);
   the Python student code runs imports NumPy as the user, and no user could change it (all of it, and every
   library it maps), nor what the grader's own Python runs as root; the grader's own files: none the user
   could change (the zygote runs them as root), and every one a part's child opens by path readable by the
   user (``refuse_unreadable_grader``), so that a grader installed where the user cannot read it is refused
   here, not reported to the student as their code's exit. These come first because a zygote is started as
   root as soon as they pass.
5. For the grade (``cli._grade_checked``): the solution of ``--fresh-seed`` (run as root) changeable by no
   user (``refuse_writable``); the instructor's folders the user could read (``instructor_places``) hidden from
   every child (``hide_from_users``); the submission readable by the user (``refuse_unreadable``).
6. ``ready_for``, just before the first child runs as the user: the Pythons' checks still under way have
   passed, and the user is cleared of what an earlier run left.

``batch`` runs 4 and 5 for every user of its pool (``batch.sandbox_users``, which makes or finds the users),
all but the submission's readability (it copies each submission for its user), and refuses a report folder a
user could change; every platform's entry and ``batch`` refuse a grader imported from inside the submissions
(``grader_inside``).
"""
import os
import sys

import autograder

HERE = os.path.dirname(os.path.abspath(__file__))          # the grader's package


# ------------------------------------------------ before anything is imported (``__main__``): os and sys only

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


def refuse_a_path_the_users_may_write(argv):
    """Under ``--run-as`` (as root): every module the grader imports before its own checks run (argparse, json,
    ...) is looked for in each folder of ``sys.path`` in turn, the current one first under ``python -m`` (and
    those of PYTHONPATH), and one a sandbox user planted there would run as root. So, before any of them is
    imported (``os`` is loaded, ``pwd`` built in), a usage error if a sandbox user (each of a list; for batch's
    ``PREFIX*``, users not made yet: anyone) owns such a folder (or, for one not there yet, the nearest above),
    or could write it or rename it (through a folder above it); and every module imported from then on is
    looked at before it runs (``_CheckedImports``). The grader's checks look at them again later, whole (ACLs
    too)."""
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
    if os.path.exists(path):
        return path
    target = os.path.realpath(path)
    while not os.path.exists(target):
        target = os.path.dirname(target)
    return target


def _acl_lets_write(path, uid, groups):
    """Whether a POSIX ACL entry of ``path`` lets the user ``uid`` (or one of ``groups``) write it (asked only
    where the mode's group bits, the ACL's mask, allow writing). Its value: a version (u32), then entries of
    tag u16 (2 a user, 8 a group), permissions u16 (2: write), id u32, little-endian. (``isolation`` reads it
    with ``struct``, which is not loaded yet here.)"""
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


def check_early(argv):
    """Under ``--run-as USER --python PATH`` (as root), start the checks of PATH for USER now (the probe of it
    as USER importing NumPy, the walk of its files), while this process imports NumPy and the grader;
    ``resolve_python`` takes their results (``_numpy_probed``, ``_exposed_checked``). The probe runs as USER
    alone, as the checks would run it anyway; anything odd (another spelling, no such user) leaves it all to
    them."""
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
        import concurrent.futures

        from autograder.sandbox import interpreter
        clear_before_probes([user])
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        _early[("probe", python, user.pw_uid)] = pool.submit(interpreter.numpy_probe, python, user)
        _early[("exposed", python, user.pw_uid)] = pool.submit(interpreter.exposed, [python], [user])
        pool.shutdown(wait=False)


# ------------------------------------------------------------------------- the sandbox users and the Pythons

_early = {}                      # (what, python, uid) -> the Future of a numpy_probe or exposed started early
_cleared = set()                 # uids whose earlier processes this run has killed (clear_before_probes)


def clear_before_probes(users):
    """Kill every process of each of ``users`` (pwd entries), once a run, before its probes start: they are the
    first things a run starts as a user, and a process of that user from before (left by a run killed before
    it could clear the user, or started as it by anyone) could trace a probe, which is dumpable once it has
    exec'd, and forge what it reports, or lie in wait for the run's children."""
    from autograder.sandbox import reaper
    for user in users:
        if user.pw_uid not in _cleared:
            reaper.kill_user(user)
            _cleared.add(user.pw_uid)


def _numpy_probed(python, user):
    """What ``interpreter.numpy_probe(python, user)`` gives: the one ``check_early`` started, if any, else run
    now."""
    from autograder.sandbox import interpreter
    future = _early.pop(("probe", python, user.pw_uid), None)
    return future.result() if future is not None else interpreter.numpy_probe(python, user)


def _exposed_checked(pythons, users):
    """What ``interpreter.exposed(pythons, users)`` gives: the one ``check_early`` started, if it is the same,
    else now."""
    from autograder.sandbox import interpreter
    future = _early.pop(("exposed", pythons[0], users[0].pw_uid), None) if len(pythons) == len(users) == 1 \
        else None
    return future.result() if future is not None else interpreter.exposed(pythons, users)


def usage_error(parser, text):
    """``parser.error(text)``, wrapped to 80 columns after argparse's own 'prog: error: '."""
    import textwrap
    prefix = f"{parser.prog}: error: "
    parser.error(textwrap.fill(text, 80, initial_indent=" " * len(prefix), subsequent_indent="  ").lstrip())


def resolve_user(parser, name):
    """The pwd entry of ``--run-as`` (None without it); a usage error unless it is a real user and we are root."""
    if name is None:
        return None
    from autograder.sandbox import system
    if not system.LINUX:
        usage_error(parser, system.linux_only("--run-as"))
    import pwd
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        parser.error(f"--run-as: no user named {name!r}")
    if os.geteuid() != 0:
        parser.error("--run-as needs root")
    if user.pw_uid == 0:
        parser.error(f"--run-as: {name!r} is root; name an unprivileged user")
    return user


def resolve_python(parser, path, users=(), later=False):
    """The child's Python (None: this one), checked to run and import numpy as each of ``users`` (pwd
    entries), and refused if one of them could change what it or the grader's own Python runs
    (``interpreter``). ``later``: return ``(python, finish)`` while the checks of the grader's own Python are
    still under way (they take a tenth of a second, which the grade spends starting its zygote and loading
    references meanwhile); ``finish()`` waits for them, a usage error if one fails, and must return before
    anything runs as a sandbox user (``grade.grade(ready=)``). The grader's package, which the grade's zygote
    loads as root and whose files a part's child opens by path as the user (``_check_grader``), and a
    ``--python``'s own checks (its files, every library it maps once NumPy is imported) are done before this
    returns: ``main_grade`` starts that zygote at once, before the rest of its set-up.
    When student code runs another Python, the grader's own is checked for what this process has loaded and
    may import (``interpreter.own_places``: what it holds as the probes start, then what it loaded since):
    neither a grade nor a batch imports anything more of it as root later (batch draws its histogram as SVG
    text, with no plotting library)."""
    if path is not None and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        parser.error(f"--python: {path} is not an executable file")
    python = os.path.abspath(path) if path is not None else None
    if not users:
        return (python, lambda: None) if later else python
    import concurrent.futures

    from autograder.sandbox import interpreter
    clear_before_probes(users)
    checking = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    first = later and python is not None
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(users)) as pool:
        probes = [pool.submit(_numpy_probed, python, user) for user in users] if first else []
        # what the grader's own Python runs, looked at beside the probes (what it loads later, once they end)
        own_places = interpreter.own_places()
        own_checked = checking.submit(interpreter.places_exposed, own_places, list(users))
        exposed = _exposed_checked([python], list(users)) if first else []
    if first:
        _refuse_exposed(parser, exposed)
        _refuse_probed(parser, python, users, probes)
    _check_grader(parser, list(users))
    checked = checking.submit(_check_python, parser, python, list(users), first, own_places, own_checked)
    checking.shutdown(wait=False)
    if later:
        return python, checked.result
    checked.result()
    return python


def _check_grader(parser, users):
    """The grader's own files, for ``users``: none they could change (its zygote runs them as root), and those a
    part's child opens by path readable by each (``refuse_unreadable_grader``)."""
    refuse_writable(parser, users, [HERE], "the grader's files, which its zygote runs as root")
    refuse_unreadable_grader(parser, users)


def _check_python(parser, python, users, python_checked, own_places, own_checked):
    """The checks ``resolve_python`` promises, but those of a ``python_checked`` --python already done, and of
    the grader's own ``own_places``, under way (``own_checked``, a Future of ``interpreter.places_exposed``)."""
    import concurrent.futures

    from autograder.sandbox import interpreter
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(users)) as pool:     # probed while the files
        probes = [] if python_checked else [pool.submit(_numpy_probed, python or sys.executable, user)
                                            for user in users]                      # are checked
        # the Python student code runs, whole: student code may import anything in it
        whole = {python or sys.executable} - ({python} if python_checked else set())
        exposed = interpreter.exposed(sorted(whole), users) if whole else []
        own = own_checked.result() or interpreter.places_exposed(interpreter.own_places(), users, own_places)
    _refuse_probed(parser, python, users, probes)
    _refuse_exposed(parser, exposed)
    for user, path in own:
        parser.error(f"user {user.pw_name} could change {path}, which the grader runs or may import as root: "
                     "student code could plant code there; make it writable by root alone (a folder on the "
                     "grader's sys.path, such as the current one under python -m, counts too)")


def _refuse_probed(parser, python, users, probes):
    """A usage error if a user's probe of ``python`` (``interpreter.numpy_probe``, Futures in the order of
    ``users``) failed, or if a user could change a library it mapped."""
    import subprocess

    from autograder.sandbox import interpreter, untrusted
    libraries = set()
    for user, probed in zip(users, probes):
        try:
            done = probed.result()
            problem = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] if done.returncode else None
            libraries.update(interpreter.mapped_files(done.stdout.decode("utf-8", "surrogateescape")))
        except subprocess.TimeoutExpired:
            problem = ["it did not import numpy within 60 s"]
        except (OSError, subprocess.SubprocessError) as error:
            problem = [str(error)]
        if problem is not None:
            parser.error(f"user {user.pw_name} cannot run {python or sys.executable} with numpy "
                         f"({untrusted.text(' '.join(problem), 300)}): give --python PATH, e.g. a venv made from "
                         "the system Python with numpy installed")
    _refuse_exposed(parser, [(user, found[0]) for user, found in zip(users, _writable_libraries(libraries, users))
                             if found])


def _writable_libraries(libraries, users):
    from autograder.sandbox import isolation, tree
    try:
        return isolation.writable_by_each(sorted(libraries), users)
    except (OSError, tree.TreeError) as error:
        return [[f"{sorted(libraries)} (could not be checked: {error})"] for _ in users]


def _refuse_exposed(parser, exposed):
    for user, path in exposed:
        parser.error(f"user {user.pw_name} could change {path}, which a Python of this run (--python or the "
                     "grader's) runs: student code could plant code there; make it writable by root alone, "
                     "or give --python a venv owned by root")


# ------------------------------------------------------------------ what the users could change, or read

def refuse_writable(parser, users, paths, what):
    """A usage error if one of ``users`` (pwd entries) could change anything in ``paths`` (``what`` names
    them in the message)."""
    if not users or not paths:
        return
    from autograder.sandbox import isolation, tree
    try:
        exposed = isolation.writable_by_each(paths, users)
    except (OSError, tree.TreeError) as error:
        exposed = [[f"{paths[0]} (it could not be checked: {error})"]] * len(users)
    for user, found in zip(users, exposed):
        if found:
            parser.error(f"user {user.pw_name} could change {what}, e.g. {found[0]}: make them writable by root "
                         "alone first")


def child_files():
    """The grader's files a part's child opens by path, as the sandbox user: the entry a spawned child is started
    with (``runner.WORKER``), the modules it loads by path before any student code (``worker.CHILD_CODE``, in
    the folders ``worker.GRADER`` names) and those the part driver loads the same way (``places``), and the
    zygote's own file, which a forked child's traceback reads its lines from."""
    from autograder.sandbox import runner, worker
    loaded = [os.path.join(worker.GRADER, package, f"{name}.py") for name, package in worker.CHILD_CODE.items()]
    return [runner.WORKER, *loaded, os.path.join(worker.GRADER, "diagnosis", "places.py"),
            os.path.join(os.path.dirname(runner.WORKER), "zygote.py")]


def _unreachable(paths):
    """In a helper that has become the user (``reaper.as_user``): the first of ``paths`` it cannot read, and the
    first folder on the way to it that it cannot search (b"" if none), NUL-separated; b"" if it reads them all.
    System calls alone."""
    for path in paths:
        if not os.access(path, os.R_OK):
            folder = os.sep
            for part in os.path.dirname(path).split(os.sep):
                folder = os.path.join(folder, part)
                if not os.access(folder, os.X_OK):
                    return os.fsencode(path) + b"\0" + os.fsencode(folder)
            return os.fsencode(path) + b"\0"
    return b""


def refuse_unreadable_grader(parser, users):
    """A usage error if one of ``users`` (the sandbox users) cannot read a grader file a part's child opens by
    path (``child_files``), asked of the user itself (``os.access`` in a helper that has become it), so every
    folder above, its ACLs and its groups count as they will. Else a child started as the user could not open
    its own entry (a grader installed in a private folder, such as a 0700 home), and every part would tell the
    student that their code exited with code 2.

    Checked with zygotes on too, although the zygote runs as root and a child it forks opens none of these
    files: a zygote that fails (and the ones started in its place) leaves the grade to a Python started per
    part as the user, which opens ``worker.py`` by path; a grade must not pass or blame the student depending
    on whether the grader's own helper survived. And a child's traceback through the zygote's or the worker's
    code reads their lines as the user."""
    from autograder.sandbox import reaper
    files = [path for path in child_files() if os.path.isfile(path)]
    checkout = os.path.dirname(HERE)
    for user in users:
        said = reaper.as_user(user, lambda: _unreachable(files))
        if said is None:
            usage_error(parser, f"could not check that user {user.pw_name} can read the grader's files")
        if said:
            path, _, folder = (os.fsdecode(p) for p in said.partition(b"\0"))
            if not folder:
                why = f"its mode or an ACL keeps {user.pw_name} from it"
            elif checkout == folder or checkout.startswith(folder.rstrip(os.sep) + os.sep):
                why = f"the checkout in {checkout} is private ({user.pw_name} may not enter {folder})"
            else:
                why = f"{user.pw_name} may not enter {folder}"
            usage_error(parser, f"user {user.pw_name} cannot read {path}, which each part's child runs as that "
                                f"user: install the grader where {user.pw_name} can read it, e.g. a folder every "
                                f"user may search; {why}")


def refuse_unreadable(parser, user, root):
    """A usage error if ``user`` (the sandbox user) cannot read the package in ``root`` that it is to grade: every
    part would only say that ``mytorch`` could not be imported. Asked of the user itself (``os.access`` in a
    helper that has become it), so that every folder above, its ACLs and its groups count as they will."""
    package = os.path.join(root, "mytorch")
    wanted = [(root, os.X_OK), (package, os.R_OK | os.X_OK), (os.path.join(package, "__init__.py"), os.R_OK)]
    if not os.path.isfile(wanted[-1][0]):
        return                                            # the grade says there is no package there
    from autograder.sandbox import reaper
    said = reaper.as_user(user, lambda: next((p.encode() for p, mode in wanted if not os.access(p, mode)), b""))
    if said:
        usage_error(parser, f"user {user.pw_name} cannot read {os.fsdecode(said)}, and student code runs as that "
                            "user: give --submission a folder it may read (every folder above it searchable), or "
                            "grade a batch, which copies each submission for its user")


def instructor_places(solution, graded, python):
    """The folders of the instructor's checkout (this grader's, if it holds the solution) and of ``solution``
    that student code has no business reading, as ``(folder, what it is)``: every folder at their top (the
    solution's ``mytorch``, ``.git`` with its history, the notebooks, the tests; for a link to a folder, that
    folder), but the grader's own package and any that holds what a child needs (the ``graded`` packages,
    the Python ``python`` it runs, the temporary folder its work folder is in)."""
    import contextlib
    import tempfile

    from autograder import grade
    from autograder.sandbox import bytecode, interpreter
    needed = [os.path.realpath(p) for p in [HERE, tempfile.gettempdir(), *graded,
                                            *interpreter.disk_paths(python or sys.executable)]]
    places = []
    for top in sorted({os.path.realpath(t) for t in (grade.instructor_checkout(), solution) if t}):
        with os.scandir(top) as entries:
            for entry in entries:
                place = os.path.realpath(entry.path)      # a link to a folder: the folder (hidden by both names)
                if entry.is_dir() and not any(interpreter.within(n, place) for n in needed):
                    places.append((place, f"a folder of the instructor's checkout {top}"))
    # of the grader's own package: its instructor-only modules, and the bytecode of every module (theirs
    # included, whenever it is written: a child loads the grader's modules from their sources then) with the
    # solution's pycs the grade keeps there (bytecode.KNOWN_CACHE): each package's folder is made now if
    # missing, so that it is hidden and checked even if only this run writes it
    caches = [os.path.join(folder, "__pycache__") for folder in ("", *autograder.PACKAGES)]
    for folder in caches:
        with contextlib.suppress(OSError):
            bytecode.make_bytecode_folder(os.path.join(HERE, folder))
    for name in (*autograder.INSTRUCTOR_ONLY, *caches):
        place = os.path.realpath(os.path.join(HERE, name))
        if os.path.exists(place):
            places.append((place, "the grader's instructor-only modules and bytecode"))
    return places


def hide_from_users(parser, users, places):
    """Under ``--run-as``: each of ``places`` (``(folder, what it is)``) that one of ``users`` could read is
    hidden from every child run as a sandbox user (``ipc.hide``: an empty tmpfs over it, in the child's own
    mount namespace), or, where this machine cannot do that, a usage error that names the fix. (A submission
    that can read the solution can import it, and print it into its feedback.)"""
    if not users or not places:
        return
    from autograder.sandbox import isolation, namespaces
    what = {os.path.realpath(path): name for path, name in places}
    try:
        readable = isolation.readable_by_each(list(what), users)
    except OSError as error:
        parser.error(f"could not check what the sandbox users may read: {error}")
    for user, found in zip(users, readable):
        if found and not namespaces.can_hide():
            parser.error(f"user {user.pw_name} can read {found[0]} ({what[found[0]]}), and student code cannot be "
                         f"kept from it here (no mount namespace can be made): make it readable by root alone "
                         f"first (chmod -R go-rwx {found[0]})")
    namespaces.hide(sorted({path for found in readable for path in found}))


def ready_for(user, checked):
    """``checked()`` (the checks of the Pythons, which run as ``user`` too), then ``user`` (None: none) cleared
    of what an earlier run may have left (IPC objects, temporary files; its processes the checks killed): run
    before anything of the submission runs as ``user``."""
    from autograder.sandbox import cleanup
    checked()
    cleanup.clear_user(user)


def grader_inside(folder):
    """True if this grading code lives inside ``folder`` (it would be a submission's own grader)."""
    folder = os.path.realpath(folder)
    here = os.path.realpath(HERE)
    return here == folder or here.startswith(folder + os.sep)

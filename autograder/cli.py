"""The grading command and the options every command shares (``__main__`` only dispatches to these).

    python -m autograder [PART ...] [--verbose] [--json PATH] [--gradescope] [--timeout S] [--memory MB]
                         [--submission DIR] [--fresh-seed [SEED]] [--solution DIR] [--jobs N]
                         [--run-as USER] [--python PATH]
"""
import argparse
import concurrent.futures
import contextlib
import dataclasses
import errno
import os
import secrets
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import autograder
from autograder import grade
from autograder.diagnosis import report
from autograder.parts import course
from autograder.sandbox import (
    bytecode,
    childspec,
    cleanup,
    interpreter,
    isolation,
    namespaces,
    reaper,
    system,
    tree,
    untrusted,
    zygotes,
)

GRADESCOPE_RESULTS = "/autograder/results/results.json"
HERE = os.path.dirname(os.path.abspath(__file__))
FULL_DISK = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def default_submission():
    """The folder whose ``mytorch`` is graded: the nearest of the current folder and those above it that holds
    one (a student in mytorch/nn/ grades their own work, not another copy), else this checkout."""
    folder = os.getcwd()
    while not os.path.isfile(os.path.join(folder, "mytorch", "__init__.py")):
        if os.path.dirname(folder) == folder:
            return os.path.dirname(HERE)
        folder = os.path.dirname(folder)
    return folder


def graded_elsewhere(root):
    """What to tell a student whose current folder is not the one graded (None when it is)."""
    if os.path.abspath(root) == os.getcwd():
        return None
    folder = os.getcwd()
    if folder == root or folder.startswith(root.rstrip(os.sep) + os.sep):
        return f"Grading the mytorch in {root} (the nearest folder holding one; --submission DIR names another)."
    return (f"Grading the mytorch beside this grader, in {root}: no folder from here up holds a mytorch/ "
            "(run from your project's folder, or give --submission DIR).")


def add_common(parser, jobs="parts graded at once (default: one more than the cores)"):
    parser.add_argument("--timeout", type=float, default=20.0, metavar="S", help="seconds per part (default 20)")
    parser.add_argument("--memory", type=int, default=1024, metavar="MB", help="memory per part (default 1024)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N", help=jobs)
    parser = parser.add_argument_group("for instructors")          # what a student never needs
    parser.add_argument("--fresh-seed", nargs="?", const="random", default=None, metavar="SEED",
                        help="grade on new cases drawn from SEED (default: a random one), with "
                             "references computed by the solution (--solution)")
    parser.add_argument("--solution", default=None, metavar="DIR",
                        help="folder holding the instructor's solution mytorch (default: this checkout)")
    parser.add_argument("--run-as", default=None, metavar="USER",
                        help="run student code as this unprivileged user (needs root); batch also takes "
                             "USER1,USER2,... or 'PREFIX*' (users it makes and deletes): one per submission")
    parser.add_argument("--python", default=None, metavar="PATH",
                        help="the Python (with numpy) that runs student code; with --run-as that user must be "
                             "able to run it (default: this Python)")


def limits_of(args):
    """A part's ``childspec.Limits`` from ``--timeout`` and ``--memory``."""
    return childspec.Limits(args.timeout, args.memory)


def grade_parser():
    # no abbreviated options: what runs before the options are parsed (``__main__``: the checks of --run-as's
    # folders, the early zygote) reads --run-as and --python as they are spelled, and so must the parser
    parser = argparse.ArgumentParser(prog="python -m autograder", allow_abbrev=False,
                                     description="Grade the recurrent cells in mytorch against reference arrays.",
                                     epilog="Other commands: 'python -m autograder handin' packs your work into "
                                            "handin.tar, to upload; 'python -m autograder batch DIR' grades a "
                                            "folder of submissions (instructors).")
    parser.add_argument("parts", nargs="*", metavar="PART", help="part numbers (2.1) or sections (2); default all")
    parser.add_argument("--verbose", "-v", action="store_true", help="show every case, passing ones too")
    parser.add_argument("--json", metavar="PATH", help="write the results (Gradescope's format) to PATH")
    parser.add_argument("--gradescope", action="store_true",
                        help=f"write Gradescope's results.json (to {GRADESCOPE_RESULTS} unless --json says where)")
    parser.add_argument("--submission", default=None, metavar="DIR", help="folder holding the mytorch to grade")
    # Gradescope mode: a problem for the course staff alone, kept where students cannot see it
    parser.add_argument("--instructor-note", action="append", default=[], help=argparse.SUPPRESS)
    # another platform's entry: the outputs in this format rather than the course's Gradescope setting
    parser.add_argument("--output-format", default=None, choices=course.OUTPUT_FORMATS, help=argparse.SUPPRESS)
    add_common(parser)
    return parser


def load_course(parser):
    """The course this grader grades (``course.toml``); a usage error naming what is wrong in it."""
    try:
        return course.load_course()
    except course.CourseError as error:
        parser.error(f"the course file is wrong: {error}")


def resolve_fresh_seed(value):
    if value is None:
        return None
    if value == "random":
        return secrets.randbelow(2 ** 31)
    try:
        return int(value)
    except ValueError:
        raise SystemExit(f"python -m autograder: error: --fresh-seed takes an integer, got {value!r}") from None


def resolve_solution(args, fresh_seed):
    if fresh_seed is None:
        return None
    if args.solution is None and grade.instructor_checkout() is None:
        # a student handout (it ships no generator): "this checkout" is the submission itself
        raise SystemExit("python -m autograder: error: --fresh-seed needs the instructor's solution, "
                         "--solution DIR: in a student handout this folder's mytorch is the one being graded")
    solution = os.path.abspath(args.solution or grade.instructor_checkout())
    if not os.path.isfile(os.path.join(solution, "mytorch", "__init__.py")):
        raise SystemExit(f"python -m autograder: error: --fresh-seed needs the solution: no mytorch in {solution} "
                         "(give --solution DIR)")
    return solution


def resolve_user(parser, name):
    """The pwd entry of ``--run-as`` (None without it); a usage error unless it is a real user and we are root."""
    if name is None:
        return None
    if not system.LINUX:
        parser.error(system.linux_only("--run-as"))
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
    loads as root, and a ``--python``'s own checks (its files, every library it maps once NumPy is imported)
    are done before this returns: ``main_grade`` starts that zygote at once, before the rest of its set-up.
    When student code runs another Python, the grader's own is checked for what this process has loaded and
    may import (``interpreter.own_places``: what it holds as the probes start, then what it loaded since):
    neither a grade nor a batch imports anything more of it as root later (batch draws its histogram as SVG
    text, with no plotting library)."""
    if path is not None and not (os.path.isfile(path) and os.access(path, os.X_OK)):
        parser.error(f"--python: {path} is not an executable file")
    python = os.path.abspath(path) if path is not None else None
    if not users:
        return (python, lambda: None) if later else python
    interpreter.clear_before_probes(users)
    checking = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    first = later and python is not None
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(users)) as pool:
        probes = [pool.submit(interpreter.numpy_probed, python, user) for user in users] if first else []
        # what the grader's own Python runs, looked at beside the probes (what it loads later, once they end)
        own_places = interpreter.own_places()
        own_checked = checking.submit(interpreter.places_exposed, own_places, list(users))
        exposed = interpreter.exposed_checked([python], list(users)) if first else []
    if first:
        _refuse_exposed(parser, exposed)
        _refuse_probed(parser, python, users, probes)
    refuse_writable(parser, users, [HERE], "the grader's files, which its zygote runs as root")
    checked = checking.submit(_check_python, parser, python, list(users), first, own_places, own_checked)
    checking.shutdown(wait=False)
    if later:
        return python, checked.result
    checked.result()
    return python


def _check_python(parser, python, users, python_checked, own_places, own_checked):
    """The checks ``resolve_python`` promises, but those of a ``python_checked`` --python already done, and of
    the grader's own ``own_places``, under way (``own_checked``, a Future of ``interpreter.places_exposed``)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(users)) as pool:     # probed while the files
        probes = [] if python_checked else [pool.submit(interpreter.numpy_probed, python or sys.executable, user)
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
    try:
        return isolation.writable_by_each(sorted(libraries), users)
    except (OSError, tree.TreeError) as error:
        return [[f"{sorted(libraries)} (could not be checked: {error})"] for _ in users]


def _refuse_exposed(parser, exposed):
    for user, path in exposed:
        parser.error(f"user {user.pw_name} could change {path}, which a Python of this run (--python or the "
                     "grader's) runs: student code could plant code there; make it writable by root alone, "
                     "or give --python a venv owned by root")


def refuse_writable(parser, users, paths, what):
    """A usage error if one of ``users`` (pwd entries) could change anything in ``paths`` (``what`` names
    them in the message)."""
    if not users or not paths:
        return
    try:
        exposed = isolation.writable_by_each(paths, users)
    except (OSError, tree.TreeError) as error:
        exposed = [[f"{paths[0]} (it could not be checked: {error})"]] * len(users)
    for user, found in zip(users, exposed):
        if found:
            parser.error(f"user {user.pw_name} could change {what}, e.g. {found[0]}: make them writable by root "
                         "alone first")


def refuse_unreadable(parser, user, root):
    """A usage error if ``user`` (the sandbox user) cannot read the package in ``root`` that it is to grade: every
    part would only say that ``mytorch`` could not be imported. Asked of the user itself (``os.access`` in a
    helper that has become it), so that every folder above, its ACLs and its groups count as they will."""
    package = os.path.join(root, "mytorch")
    wanted = [(root, os.X_OK), (package, os.R_OK | os.X_OK), (os.path.join(package, "__init__.py"), os.R_OK)]
    if not os.path.isfile(wanted[-1][0]):
        return                                            # the grade says there is no package there
    said = reaper.as_user(user, lambda: next((p.encode() for p, mode in wanted if not os.access(p, mode)), b""))
    if said:
        usage_error(parser, f"user {user.pw_name} cannot read {os.fsdecode(said)}, and student code runs as that "
                            "user: give --submission a folder it may read (every folder above it searchable), or "
                            "grade a batch, which copies each submission for its user")


def usage_error(parser, text):
    """``parser.error(text)``, wrapped to 80 columns after argparse's own 'prog: error: '."""
    prefix = f"{parser.prog}: error: "
    parser.error(textwrap.fill(text, 80, initial_indent=" " * len(prefix), subsequent_indent="  ").lstrip())


def instructor_places(solution, graded, python):
    """The folders of the instructor's checkout (this grader's, if it holds the solution) and of ``solution``
    that student code has no business reading, as ``(folder, what it is)``: every folder at their top (the
    solution's ``mytorch``, ``.git`` with its history, the notebooks, the tests; for a link to a folder, that
    folder), but the grader's own package and any that holds what a child needs (the ``graded`` packages,
    the Python ``python`` it runs, the temporary folder its work folder is in)."""
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


class ResultsNotWritten(str):
    """Why the results file could not be written (falsy results of ``write_results`` carry one)."""

    def __bool__(self):
        return False


def write_results(path, payload, user=None):
    """Write the results file atomically; if the disk is full, free what student code left and try again; if
    something was put in the way (a folder at the path, a folder made read-only: student code runs as the same
    user in local mode), clear it and try again. Returns True, or a falsy ``ResultsNotWritten`` after saying
    why on stderr."""
    for attempt in range(2):
        try:
            report.write_json(path, payload)
            return True
        except OSError as error:
            if attempt or not (_free_space(user) if error.errno in FULL_DISK else _clear_the_way(path)):
                print(f"Could not write the results to {path}: {error.strerror or error}", file=sys.stderr)
                return ResultsNotWritten("disk full" if error.errno in FULL_DISK else "blocked")
    return ResultsNotWritten("blocked")


def _free_space(user):
    cleanup.free_space(user)
    return True


def _clear_the_way(path):
    """Remove a folder standing at the results path and make its folder writable again; True if it tried."""
    try:
        if os.path.isdir(path) and not os.path.islink(path) and not tree.remove(path):
            return False
        folder = os.path.dirname(os.path.abspath(path))
        os.chmod(folder, os.stat(folder).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        return True
    except OSError:
        return False


def ready_for(user, checked):
    """``checked()`` (the checks of the Pythons, which run as ``user`` too), then ``user`` (None: none) cleared
    of what an earlier run may have left (IPC objects, temporary files; its processes the checks killed): run
    before anything of the submission runs as ``user``."""
    checked()
    cleanup.clear_user(user)


def _no_package(root):
    """What to tell a student whose ``root`` holds no ``mytorch`` package (None when it does)."""
    if os.path.isfile(os.path.join(root, "mytorch", "__init__.py")):
        return None
    if os.path.basename(os.path.normpath(root)) == "mytorch" and os.path.isfile(os.path.join(root, "__init__.py")):
        return (f"No mytorch package in {root}, which is the package itself: give the folder that holds it, "
                f"--submission {os.path.dirname(os.path.normpath(root))}.")
    return f"No mytorch package in {root}: run from the folder that holds mytorch/, or give --submission DIR."


def _placeholder(parts, message):
    return [grade.PartResult(p, 0.0, "error", message) for p in parts]


def main_grade(argv, worker=None):
    """``python -m autograder [options]``; ``worker``: a zygote of this Python started early (``zygotes.early``,
    which starts none when ``--python`` names another interpreter), ended by the grade."""
    parser = grade_parser()
    args = parser.parse_args(argv)
    the_course = load_course(parser)
    try:
        parts = the_course.select(args.parts)
    except ValueError as error:
        usage_error(parser, str(error))
    root = os.path.abspath(args.submission or default_submission())
    user = resolve_user(parser, args.run_as)
    python, python_checked = resolve_python(parser, args.python, [user] if user else [], later=True)
    started = None
    if worker is not None and user is not None:           # never (early() starts none under --run-as): one started
        worker.close()                                    # before the checks of what it loads as root is not used
        worker = None
    if worker is None and user is not None and zygotes.enabled():
        # a --python and the grader's files are checked now: it imports NumPy while the rest is set up; the
        # grader's own Python, run as root by a zygote too, once its checks (still under way) have passed
        if python is None:
            python_checked()
        worker = started = zygotes.Zygote(python)
    loading = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    # the stored references, read and verified while the zygote starts and the rest is checked
    loaded = loading.submit(grade.references, parts, jobs=args.jobs) if args.fresh_seed is None else None
    loading.shutdown(wait=False)
    try:
        return _grade_checked(parser, args, the_course, parts, root, user, python, python_checked, worker, loaded)
    finally:
        if started is not None:
            started.close()


def _grade_checked(parser, args, the_course, parts, root, user, python, python_checked, worker, loaded):
    """The rest of ``main_grade``, once the user and the Pythons are resolved (the Pythons' last checks may
    still be under way: ``python_checked``; the stored references may still be loading: ``loaded``, a Future of
    ``grade.references``, None with a fresh seed)."""
    fresh_seed = resolve_fresh_seed(args.fresh_seed)
    solution = resolve_solution(args, fresh_seed)
    refuse_writable(parser, [user] if user else [], [os.path.join(solution, "mytorch")] if solution else [],
                    "the solution, which runs as root")
    if user:
        hide_from_users(parser, [user], instructor_places(args.solution, [os.path.join(root, "mytorch")], python))
        refuse_unreadable(parser, user, root)
    results_path = args.json or (GRADESCOPE_RESULTS if args.gradescope else None)
    start = time.monotonic()
    results = []
    console = report.Console()
    progress = report.Progress(report.Console(sys.stderr), len(parts), [p.number for p in parts])
    notes = list(args.instructor_note)
    if fresh_seed is not None:
        notes.append(f"graded on fresh cases from seed {fresh_seed}")
    cells, cells_note = grade.reference_cells(the_course, parts, user is not None, args.solution)
    if cells_note:
        notes.append(cells_note)
        print(f"note: {cells_note}", file=sys.stderr)

    def results_file(results, seconds):
        settings = the_course.gradescope
        if args.output_format:
            settings = dataclasses.replace(settings, output_format=args.output_format)
        return report.gradescope(results, seconds, settings, notes,
                                 {"course": the_course.title, "seed": fresh_seed if fresh_seed is not None
                                  else the_course.seed, "fresh_cases": fresh_seed is not None})

    reaper.become_subreaper()
    if results_path:                                      # before any student code runs
        write_results(results_path, results_file(
            _placeholder(parts, "the grader stopped before grading this part"), 0.0), user)
    try:
        if args.submission is None and graded_elsewhere(root):
            console.print(graded_elsewhere(root))
        missing = _no_package(root)
        if missing:                                       # every part would only fail to import it
            console.print(missing)
            results = _placeholder(parts, missing)
        else:
            child = childspec.ChildSpec(root, limits_of(args), user, python, zygote=worker)
            results = grade.grade(child, parts, verbose=args.verbose, fresh_seed=fresh_seed, solution=solution,
                                  jobs=args.jobs, progress=progress, ready=lambda: ready_for(user, python_checked),
                                  loaded=loaded and loaded.result, reference_cells=cells)
        progress.finish()
        if fresh_seed is not None:
            console.print(f"Graded on fresh cases from seed {fresh_seed}.")
        console.print(report.table(results, time.monotonic() - start, args.verbose, width=min(console.width, 78),
                                   local=not args.gradescope))
    finally:
        reaper.end_orphans()                              # every child is dead before the results are written
        if user is not None:
            cleanup.clear_user(user)
        if results_path:                                  # written always, even if grading itself broke
            if len(results) != len(parts):
                results = _placeholder(parts, "the grader stopped before grading this part")
            written = write_results(results_path, results_file(results, time.monotonic() - start), user)
            if written and not args.output_format:      # (another platform's entry reads the file itself)
                console.print(f"Results written to {results_path}")
            elif written == "blocked":                  # what is at that path now is not this run's result
                print(f"The file at {results_path} is not the result of this run.", file=sys.stderr)
                return 1
    return 0

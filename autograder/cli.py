"""The grading command (its options, and those every command shares) and its flow; the checks it makes before
any student code runs are ``preflight``'s (``__main__`` only dispatches to these).

    python -m autograder [PART ...] [--verbose] [--json PATH] [--gradescope] [--timeout S] [--memory MB]
                         [--submission DIR] [--fresh-seed [SEED]] [--solution DIR] [--jobs N]
                         [--run-as USER] [--python PATH]
"""
import argparse
import concurrent.futures
import dataclasses
import errno
import os
import secrets
import stat
import sys
import time

from autograder import grade, preflight
from autograder.diagnosis import report
from autograder.parts import course
from autograder.sandbox import childspec, cleanup, reaper, system, tree, zygotes

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
    if args.gradescope and not system.LINUX:              # Gradescope's image is Linux, and its results folder
        preflight.usage_error(parser, system.linux_only("--gradescope")    # is at the root of the disk
                              + " To keep the results in Gradescope's format, give --json PATH.")
    the_course = load_course(parser)
    try:
        parts = the_course.select(args.parts)
    except ValueError as error:
        preflight.usage_error(parser, str(error))
    root = os.path.abspath(args.submission or default_submission())
    user = preflight.resolve_user(parser, args.run_as)
    python, python_checked = preflight.resolve_python(parser, args.python, [user] if user else [], later=True)
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
    preflight.refuse_writable(parser, [user] if user else [],
                              [os.path.join(solution, "mytorch")] if solution else [], "the solution, which runs as root")
    if user:
        preflight.hide_from_users(parser, [user],
                                  preflight.instructor_places(args.solution, [os.path.join(root, "mytorch")], python))
        preflight.refuse_unreadable(parser, user, root)
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
                                  jobs=args.jobs, progress=progress,
                                  ready=lambda: preflight.ready_for(user, python_checked),
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

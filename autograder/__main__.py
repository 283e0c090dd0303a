"""The command line.

    python -m autograder [PART ...] [--verbose] [--json PATH] [--gradescope] [--timeout S]
                         [--submission DIR] [--fresh-seed [SEED]] [--solution DIR] [--memory MB] [--jobs N]
    python -m autograder batch DIR [--jobs N] [--csv PATH] [--timeout S] [--fresh-seed [SEED]]
    python -m autograder handin [--submission DIR] [--out handin.tar]
    python -m autograder gradescope [--root /autograder]      (Gradescope's run_autograder calls this)

PART is a part number (2.1) or a section (2). The exit status is 0 whenever grading ran, whatever the score;
2 for a usage error.
"""
import argparse
import os
import pwd
import secrets
import sys
import time

from autograder import grade, report, spec

GRADESCOPE_RESULTS = "/autograder/results/results.json"
HERE = os.path.dirname(os.path.abspath(__file__))


def default_submission():
    """The folder whose ``mytorch`` is graded: the current folder if it has one, else this checkout."""
    if os.path.isfile(os.path.join(os.getcwd(), "mytorch", "__init__.py")):
        return os.getcwd()
    return os.path.dirname(HERE)


def _add_common(parser):
    parser.add_argument("--timeout", type=float, default=20.0, metavar="S", help="seconds per part (default 20)")
    parser.add_argument("--memory", type=int, default=1024, metavar="MB", help="memory per part (default 1024)")
    parser.add_argument("--fresh-seed", nargs="?", const="random", default=None, metavar="SEED",
                        help="instructors: grade on new cases drawn from SEED (default: a random one), with "
                             "references computed by the solution (--solution)")
    parser.add_argument("--solution", default=None, metavar="DIR",
                        help="folder holding the instructor's solution mytorch (default: this checkout)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N", help="parallel child processes")


def grade_parser():
    parser = argparse.ArgumentParser(prog="python -m autograder",
                                     description="Grade the recurrent cells in mytorch against reference arrays.",
                                     epilog="Other commands: 'batch DIR' (instructors: a folder of submissions) "
                                            "and 'handin' (write handin.tar).")
    parser.add_argument("parts", nargs="*", metavar="PART", help="part numbers (2.1) or sections (2); default all")
    parser.add_argument("--verbose", "-v", action="store_true", help="show every case, passing ones too")
    parser.add_argument("--json", metavar="PATH", help="write the results (Gradescope's format) to PATH")
    parser.add_argument("--gradescope", action="store_true",
                        help=f"write Gradescope's results.json (to {GRADESCOPE_RESULTS} unless --json says where)")
    parser.add_argument("--submission", default=None, metavar="DIR", help="folder holding the mytorch to grade")
    parser.add_argument("--run-as", default=None, metavar="USER",
                        help="run student code as this unprivileged user (needs root)")
    _add_common(parser)
    return parser


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
    solution = os.path.abspath(args.solution or os.path.dirname(HERE))
    if not os.path.isfile(os.path.join(solution, "mytorch", "__init__.py")):
        raise SystemExit(f"python -m autograder: error: --fresh-seed needs the solution: no mytorch in {solution} "
                         "(give --solution DIR)")
    return solution


def main_grade(argv):
    parser = grade_parser()
    args = parser.parse_args(argv)
    try:
        parts = spec.select_parts(args.parts)
    except ValueError as error:
        parser.error(str(error))
    root = os.path.abspath(args.submission or default_submission())
    user = None
    if args.run_as:
        try:
            user = pwd.getpwnam(args.run_as)
        except KeyError:
            parser.error(f"--run-as: no user named {args.run_as!r}")
        if os.geteuid() != 0:
            parser.error("--run-as needs root")
    fresh_seed = resolve_fresh_seed(args.fresh_seed)
    solution = resolve_solution(args, fresh_seed)
    results_path = args.json or (GRADESCOPE_RESULTS if args.gradescope else None)
    start = time.monotonic()
    results = []
    console, progress = report.Console(), report.Progress(report.Console(sys.stderr), len(parts))
    try:
        if not os.path.isfile(os.path.join(root, "mytorch", "__init__.py")):
            console.print(f"No mytorch package in {root}: run from the folder that holds mytorch/, or give "
                          "--submission DIR.")
        results = grade.grade(root, parts, timeout=args.timeout, memory_mb=args.memory, verbose=args.verbose,
                              fresh_seed=fresh_seed, solution=solution, jobs=args.jobs, user=user, progress=progress)
        progress.finish()
        if fresh_seed is not None:
            console.print(f"Graded on fresh cases from seed {fresh_seed}.")
        console.print(report.table(results, time.monotonic() - start, args.verbose, width=min(console.width, 78)))
    finally:
        if results_path:                                  # written always, even if grading itself broke
            if len(results) != len(parts):
                results = [grade.PartResult(p, 0.0, "error", "the grader stopped before grading this part")
                           for p in parts]
            report.write_json(results_path, report.gradescope(results, time.monotonic() - start))
            console.print(f"Results written to {results_path}")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "batch":
        from autograder import batch
        return batch.main(argv[1:])
    if argv and argv[0] == "handin":
        from autograder import handin
        return handin.main(argv[1:])
    if argv and argv[0] == "gradescope":
        from autograder import gradescope
        return gradescope.main(argv[1:])
    return main_grade(argv)


if __name__ == "__main__":
    sys.exit(main())

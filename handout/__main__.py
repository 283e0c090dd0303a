"""python -m handout build [--out DIR] [--solutions] | python -m handout gradescope [--out DIR] [--with-solution]
| python -m handout site [--out DIR] [--config FILE] [--solutions]"""
import argparse
import os
import sys
import time

from handout.build import BuildError, build_gradescope, build_handout


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m handout", description="Build the student handout.")
    commands = parser.add_subparsers(dest="command", required=True)
    student = commands.add_parser("build", help="the student version (mytorch with TODOs, notebooks, grader, "
                                                "assignment) and its zip")
    student.add_argument("--out", default="build/handout", metavar="DIR")
    student.add_argument("--solutions", action="store_true",
                         help="release the notebooks' derivations (after the deadline); solution regions are "
                              "stripped all the same")
    gradescope = commands.add_parser("gradescope", help="Gradescope's autograder zip (setup.sh, run_autograder)")
    gradescope.add_argument("--out", default="build/gradescope", metavar="DIR")
    gradescope.add_argument("--with-solution", action="store_true",
                            help="include the solution, so each submission is graded on fresh cases")
    site = commands.add_parser("site", help="the course website, built from the handout (DIR/index.html)")
    site.add_argument("--out", default="build/site", metavar="DIR")
    site.add_argument("--config", metavar="FILE", help="the course configuration (course.toml)")
    site.add_argument("--solutions", action="store_true", help="the instructor's site, with the solutions")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            out, archive, regions = build_handout(args.out, solutions=args.solutions)
            kind = "Handout with the notebooks' derivations" if args.solutions else "Student handout"
            print(f"{kind} in {out} ({regions} solution regions replaced by TODOs); zip: {archive}")
        elif args.command == "site":
            from handout.site import build_site            # needs the site extra: pip install -e '.[site]'
            started = time.monotonic()
            out, _ = build_site(args.out, config=args.config, solutions=args.solutions)
            print(f"Course site in {out}: open {os.path.join(out, 'index.html')} "
                  f"({time.monotonic() - started:.0f} s)")
        else:
            out, archive = build_gradescope(args.out, args.with_solution)
            print(f"Gradescope autograder in {out}; upload {archive}")
    except BuildError as error:
        print(f"python -m handout: build error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

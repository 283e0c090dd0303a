"""python -m handout build [--out DIR] [--solutions] | python -m handout gradescope [--out DIR] [--with-solution]"""
import argparse
import sys

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
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            out, archive, regions = build_handout(args.out, solutions=args.solutions)
            kind = "Handout with the notebooks' derivations" if args.solutions else "Student handout"
            print(f"{kind} in {out} ({regions} solution regions replaced by TODOs); zip: {archive}")
        else:
            out, archive = build_gradescope(args.out, args.with_solution)
            print(f"Gradescope autograder in {out}; upload {archive}")
    except BuildError as error:
        print(f"python -m handout: build error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""python -m handout build [--out DIR] [--config FILE] [--solutions] [--force]
python -m handout gradescope [--out DIR] [--config FILE] [--fixed-cases] [--force]
python -m handout prairielearn [--out DIR] [--config FILE] [--image IMAGE] [--force]
python -m handout autolab [--out DIR] [--config FILE] [--force]
python -m handout site [--out DIR] [--config FILE] [--solutions] [--force]
python -m handout tables [--config FILE]      (rewrite the assignment's point tables in this repository)"""
import argparse
import os
import sys
import time

from handout import sections
from handout.build import HERE, BuildError, build_autolab, build_gradescope, build_handout, build_prairielearn, load


def write_tables(config):
    """The repository's assignment pages with their point tables made from the course."""
    course = load(config)
    folder = os.path.join(HERE, "assignment")
    changed = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".md"):
            continue
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = sections.inline_points(sections.intro(sections.points_table(text, course), course)
                                     if name == "README.md" else text, course)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            changed.append(name)
    return changed


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
    gradescope.add_argument("--with-solution", action="store_true", default=None,
                            help="include the solution, so each submission is graded on fresh cases (the default "
                                 "when the course says fresh_seed = true)")
    gradescope.add_argument("--fixed-cases", action="store_true",
                            help="build without the solution: every submission is graded on the stored cases, "
                                 "which the students hold")
    prairielearn = commands.add_parser("prairielearn", help="a PrairieLearn question graded externally (put DIR "
                                                            "under the course's questions/)")
    prairielearn.add_argument("--out", default="build/prairielearn", metavar="DIR")
    prairielearn.add_argument("--image", default=None, metavar="IMAGE",
                              help="the grading image: any with Python 3.9 or newer and NumPy (default "
                                   "prairielearn/grader-python)")
    autolab = commands.add_parser("autolab", help="an Autolab assessment's autograde.tar and autograde-Makefile")
    autolab.add_argument("--out", default="build/autolab", metavar="DIR")
    site = commands.add_parser("site", help="the course website, built from the handout (DIR/index.html)")
    site.add_argument("--out", default="build/site", metavar="DIR")
    site.add_argument("--solutions", action="store_true", help="the instructor's site, with the solutions")
    tables = commands.add_parser("tables", help="rewrite the point tables of handout/assignment/ from the course")
    for command in (student, gradescope, prairielearn, autolab, site, tables):
        command.add_argument("--config", default=None, metavar="FILE", help="the course (default: course.toml)")
    for command in (student, gradescope, prairielearn, autolab, site):
        command.add_argument("--force", action="store_true",
                             help="replace --out even if it is not an earlier build of the same kind")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            released = args.solutions or load(args.config).release_solutions
            out, archive, regions = build_handout(args.out, args.config, args.force, solutions=released)
            kind = "Handout with the notebooks' derivations" if released else "Student handout"
            print(f"{kind} in {out} ({regions} solution regions replaced by TODOs); zip: {archive}")
        elif args.command == "site":
            from handout.site import build_site  # needs the site extra: pip install -e '.[site]'
            started = time.monotonic()
            out, _ = build_site(args.out, config=args.config, solutions=args.solutions, force=args.force)
            print(f"Course site in {out}: open {os.path.join(out, 'index.html')} "
                  f"({time.monotonic() - started:.0f} s)")
        elif args.command == "gradescope":
            out, archive = build_gradescope(args.out, args.with_solution, args.config, args.force, args.fixed_cases)
            fresh = os.path.isdir(os.path.join(out, "solution"))
            print(f"Gradescope autograder in {out}; upload {archive} (graded on "
                  f"{'fresh cases computed by the solution' if fresh else 'the fixed cases'})")
        elif args.command == "prairielearn":
            out = build_prairielearn(args.out, args.config, args.force, **({"image": args.image} if args.image else {}))
            print(f"PrairieLearn question in {out}: copy it into your course's questions/ (graded on fresh cases "
                  "computed by the solution in its tests/)")
        elif args.command == "autolab":
            tar, makefile = build_autolab(args.out, args.config, args.force)
            parts = load(args.config).parts()
            print(f"Autolab autograder: upload {tar} and {makefile}; name the assessment's problems "
                  f"{', '.join(p.number for p in parts)} (graded on the stored cases)")
        else:
            changed = write_tables(args.config)
            print(f"Point tables rewritten in {', '.join(changed)}" if changed else "Point tables already match")
    except BuildError as error:
        print(f"python -m handout: build error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

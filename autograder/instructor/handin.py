"""Students: pack what you hand in.

    python -m autograder handin [--submission DIR] [--out handin.tar] [--no-grade]

It grades the folder locally first and says the score and which parts are not implemented yet, then writes the
tar and says what to upload where. The package is found as every grader finds it (``submissions``: at any depth of
the folder, or in the one archive it holds). The tar holds the ``mytorch`` package's Python files and the notebooks
(``notebooks/*.ipynb``) beside it, with paths relative to the folder holding it; caches and anything else are left out.
"""
import argparse
import os
import sys
import tarfile

from autograder import grade
from autograder.cli import default_submission, graded_elsewhere
from autograder.diagnosis import report
from autograder.instructor import submissions
from autograder.sandbox import childspec, scratch, tree


def files_to_hand_in(root):
    """The regular files to pack (links are left out: the grader refuses them), paths relative to ``root``."""
    chosen = []
    for top, pattern in (("mytorch", ".py"), ("notebooks", ".ipynb")):
        if not os.path.isdir(os.path.join(root, top)):
            continue
        for folder, _, dirs, files in tree.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
            chosen += [os.path.normpath(os.path.join(top, folder, f)) for f in files if f.endswith(pattern)]
    return chosen


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder handin", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)   # see cli.grade_parser
    parser.add_argument("--submission", default=None, metavar="DIR")
    parser.add_argument("--out", default=None, metavar="PATH", help="where to write it (default: handin.tar beside "
                        "the mytorch folder packed)")
    parser.add_argument("--no-grade", action="store_true", help="pack without grading locally first")
    args = parser.parse_args(argv)
    given = os.path.abspath(args.submission or default_submission())
    staging = scratch.folder("handin")
    try:
        return pack(parser, args, given, staging)
    finally:
        tree.remove(staging)


def own_package(given):
    """The package you work in, when there is no doubt which: ``given`` is a ``mytorch`` package itself, or holds
    one at its top (an instructor's checkout also holds built copies under build/, which are not handed in)."""
    for package, form in ((given, "mytorch/"), (os.path.join(given, "mytorch"), "mytorch/")):
        if os.path.basename(package) == "mytorch" and os.path.isfile(os.path.join(package, "__init__.py")) \
                and not os.path.islink(package):
            return submissions.Located(os.path.basename(given), package, form)
    return None


def pack(parser, args, given, staging):
    """Pack the ``mytorch`` that ``given`` hands in, found as every grader finds it (``submissions.locate_path``,
    archives unpacked into ``staging``), so what packs here is what grades there."""
    located = own_package(given) or submissions.locate_path(given, staging)
    if located.package is None:
        parser.error(f"cannot pack {given}: {located.reason}")
    root = os.path.dirname(located.package)
    args.out = args.out or os.path.join(given if root.startswith(staging + os.sep) else root, "handin.tar")
    try:
        files = files_to_hand_in(root)
    except (OSError, tree.TreeError) as error:
        parser.error(f"cannot pack {root}: {error}")
    console = report.Console()
    if located.form != "mytorch/":
        console.print(f"Packing the mytorch package found as {located.form} in {given}.")
    if args.submission is None and graded_elsewhere(root):
        console.print(graded_elsewhere(root).replace("Grading", "Packing"))
    if not args.no_grade:
        console.print(local_score(root))
    with tarfile.open(args.out, "w") as tar:
        for name in files:
            tar.add(os.path.join(root, name), arcname=name, recursive=False)
    console.print(f"Wrote {args.out} with {len(files)} files from {root}.\n"
                  f"Upload {os.path.abspath(args.out)} to this assignment (the file itself, not a folder or a zip "
                  "of it: Gradescope, PrairieLearn or Autolab, as your course says); it is graded again there, on "
                  "the course's own copy of these tests.")
    return 0


def local_score(root):
    """What this folder scores here, and a warning for every part that is not implemented yet."""
    results = grade.grade(childspec.ChildSpec(root))
    score, maximum = report.total(results)
    lines = [f"Graded locally before packing: {score:g}/{maximum} points (python -m autograder shows why)."]
    missing = [r.part for r in results if r.status == "not implemented"]
    if missing:
        lines.append(f"Warning: {len(missing)} part{'s are' if len(missing) > 1 else ' is'} not implemented yet "
                     f"and score 0: " + ", ".join(f"{p.number} {p.name}" for p in missing) + ".")
    failing = [r.part.number for r in results if r.status in ("failed", "error")]
    if failing:
        lines.append(f"Parts that lose points: {', '.join(failing)}.")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Gradescope's entry: grade /autograder/submission and write /autograder/results/results.json.

    python -m autograder gradescope [--root /autograder] [--python PATH]   (the root also comes from $AUTOGRADER_ROOT)

The submission may be ``handin.tar`` (from ``python -m autograder handin``), a ``mytorch`` folder, or a zip
or folder holding one. Archives are unpacked within limits (``archive``) into a folder of the grader's, and
only the ``mytorch`` package found is copied (``isolation.private_copy``) to the folder that is graded, so
nothing else handed in (an ``autograder`` package, say) is ever on a path the grader reads; both folders are
removed at the end. When started as root and the user ``student`` exists (setup.sh makes it), student code
runs as ``student`` and the reference data is made readable by root alone; when ``source/solution/mytorch``
exists, the solution is made readable by root alone and every submission is graded on fresh cases whose
references it computes. The results file is written in every case.
"""
import argparse
import os
import pwd
import secrets
import shutil
import sys
import tempfile

from autograder import archive, cli, data, isolation, report
from autograder.grade import PartResult

STUDENT = "student"
ARCHIVES = 5                     # archives unpacked from one submission
WALK_LIMIT = 5000                # entries of the submission folder looked at


def _walk(top):
    """(folder, dirs, files) of ``top``, no links followed, at most WALK_LIMIT entries in all."""
    seen = 0
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        seen += len(dirs) + len(files)
        if seen > WALK_LIMIT:
            raise archive.UnpackError(f"the submission holds more than {WALK_LIMIT} files")
        yield folder, dirs, sorted(files)


def find_package(submission, staging):
    """The ``mytorch`` folder handed in, unpacking archives into ``staging``; None if there is none."""
    unpacked = 0
    for folder, _, files in _walk(submission):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith((".tar", ".tar.gz", ".tgz", ".zip")) and os.path.isfile(path) \
                    and not os.path.islink(path):
                unpacked += 1
                if unpacked > ARCHIVES:
                    raise archive.UnpackError(f"it holds more than {ARCHIVES} archives")
                try:
                    archive.unpack(path, os.path.join(staging, str(unpacked)))
                except archive.UnpackError as error:
                    raise archive.UnpackError(f"{name}: {error}") from None
                except Exception as error:                # a damaged archive
                    raise archive.UnpackError(f"{name} is damaged ({type(error).__name__})") from None
    for source in (staging, submission):
        for folder, _, files in _walk(source):
            if os.path.basename(folder) == "mytorch" and "__init__.py" in files and not os.path.islink(folder):
                return folder
    return None


def instructor_notes(root, grade_args):
    """Add the run-as user and fresh cases to ``grade_args`` where this machine allows them; returns what the
    course staff must know about a mode that fell back (students never see it: it goes to stdout and to the
    results' ``extra_data``)."""
    notes = []
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(STUDENT)
            grade_args += ["--run-as", STUDENT]
            # the grader reads the references before any student code runs; the student may not read them
            os.chmod(data.DATA_DIR, 0o700)
        except KeyError:
            notes.append(f"no user {STUDENT!r} (setup.sh makes it): student code ran with the grader's privileges "
                         "and could read the solution and rewrite its score")
    else:
        notes.append("the grader did not run as root: student code ran as the grader's own user, without isolation")
    solution = os.path.join(root, "source", "solution")
    if os.path.isfile(os.path.join(solution, "mytorch", "__init__.py")):
        os.chmod(solution, 0o700)
        grade_args += ["--fresh-seed", str(secrets.randbelow(2 ** 31)), "--solution", solution]
    else:
        notes.append("no solution in the autograder zip: graded on the fixed cases the students hold (a "
                     "submission that returns the stored answers scores full marks); build it with the solution")
    return notes


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder gradescope", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    parser.add_argument("--python", default=None, metavar="PATH", help="the Python that runs student code")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    results = os.path.join(root, "results", "results.json")
    submission = os.path.join(root, "submission")
    if isolation.grader_inside(submission):
        parser.error(f"this grader was imported from inside {submission}: run Gradescope's run_autograder")
    the_course = cli.load_course(parser)
    staging, work = tempfile.mkdtemp(prefix="handed-in-"), tempfile.mkdtemp(prefix="submission-")
    os.chmod(work, 0o755)
    try:
        problem = "no mytorch package in the submission: upload handin.tar (python -m autograder handin)"
        try:
            found = find_package(submission, staging)
            if found is not None:
                isolation.private_copy(found, os.path.join(work, "mytorch"))
        except (archive.UnpackError, isolation.CopyError, OSError) as error:
            found, problem = None, f"the submission could not be unpacked ({error})"
        if found is None:
            parts = [PartResult(p, 0.0, "error", problem) for p in the_course.parts()]
            cli.write_results(results, report.gradescope(parts, 0.0, the_course.gradescope))
            print(problem)
            return 0
        grade_args = ["--gradescope", "--json", results, "--submission", work]
        if args.python:
            grade_args += ["--python", args.python]
        for note in instructor_notes(root, grade_args):
            grade_args += ["--instructor-note", note]
            print(f"INSTRUCTOR WARNING: {note}")          # stdout: shown to the course staff alone
        try:
            return cli.main_grade(grade_args)
        except SystemExit:                                # a setup problem, already explained on stderr
            parts = [PartResult(p, 0.0, "error", "the autograder could not start: please tell the course "
                                                 "staff") for p in the_course.parts()]
            cli.write_results(results, report.gradescope(parts, 0.0, the_course.gradescope,
                                                         ["the grader could not start: its stderr says why"]))
            return 0
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

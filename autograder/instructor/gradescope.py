"""Gradescope's entry: grade /autograder/submission and write /autograder/results/results.json.

    python -m autograder gradescope [--root /autograder] [--python PATH]   (the root also comes from $AUTOGRADER_ROOT)

The upload is graded as on every platform (``upload.grade_upload``): as the user ``student`` that setup.sh makes,
where the grader runs as root, and on fresh cases when the zip holds the solution (``source/solution``). The
results file is written in every case: a submission that breaks a limit scores 0 with the reason, and any
failure of the grader itself after it started still leaves a valid results file that says so.
"""
import argparse
import os
import sys
import traceback

from autograder import preflight
from autograder.instructor import upload
from autograder.parts import course


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder gradescope", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)   # see cli.grade_parser
    parser.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    parser.add_argument("--python", default=None, metavar="PATH", help="the Python that runs student code")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    results = os.path.join(root, "results", "results.json")
    submission = os.path.join(root, "submission")
    if preflight.grader_inside(submission):
        parser.error(f"this grader was imported from inside {submission}: run Gradescope's run_autograder")
    the_course = None
    try:
        the_course = course.load_course()
        return upload.grade_upload(submission, results, the_course, os.path.join(root, "source", "solution"),
                                   args.python)
    except Exception as error:                            # a fault of the grader: still a results file
        traceback.print_exc()
        upload.zero(results, f"the autograder failed ({type(error).__name__}): please tell the course staff", the_course,
              [f"the grader failed: {type(error).__name__}: {error}"])
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

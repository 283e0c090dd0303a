"""PrairieLearn's external grader: grade /grade/student and write /grade/results/results.json.

    python -m autograder prairielearn [--root /grade] [--python PATH]   (the root also comes from $MYTORCH_PL_ROOT)

PrairieLearn copies a question's ``tests/`` to /grade/tests (here: the grader, its data, the solution and
``run.sh``, the entrypoint), the student's files to /grade/student (``handin.tar``, from ``pl-file-upload``)
and its data to /grade/data/data.json, starts the entrypoint, and reads /grade/results/results.json, which
must exist when it ends. The upload is graded exactly as on Gradescope (``upload.grade_upload``: the same
parts, points, feedback and diagnosis; student code as the unprivileged user ``student``, which run.sh
makes, where the entrypoint runs as root; fresh cases computed by the solution, made readable by root alone),
into Gradescope's format first, then written in PrairieLearn's (its externalGrading.md, "Grading results"):
``gradable``, ``score`` in [0, 1], ``message``, ``output`` (the score table) and one entry of ``tests`` per
part (``name``, ``points``, ``max_points``, ``message``, ``output``). PrairieLearn shows every test to the
student (it has no notion of a hidden test), so the course's Gradescope visibility has no counterpart here.
A broken upload scores 0 with its reason; a failure of the grader still writes a results file, not gradable
(the submission is neither scored nor counted as an attempt), and run.sh writes one when Python cannot run
the grader at all.
"""
import argparse
import json
import os
import sys
import traceback

from autograder import preflight
from autograder.diagnosis import report
from autograder.instructor import upload
from autograder.parts import course
from autograder.sandbox import scratch, tree

ROOT = "/grade"


def from_gradescope(payload):
    """PrairieLearn's results from Gradescope's (as ``report.gradescope`` writes them, outputs as text)."""
    tests = [{"name": t["name"], "points": t["score"], "max_points": t["max_score"],
              "message": {"passed": "all cases passed"}.get(t["status"], t["extra_data"]["status"]),
              "output": t["output"]} for t in payload["tests"]]
    maximum = sum(t["max_points"] for t in tests)
    score = payload["score"]
    message = f"{score:g} of {maximum:g} points"
    reasons = {t["output"] for t in payload["tests"] if t["extra_data"]["status"] == "error"}
    if score == 0 and len(reasons) == 1 and all(t["extra_data"]["status"] == "error" for t in payload["tests"]):
        message += f": {reasons.pop()}"                   # one reason for every part: the upload's
    return {"gradable": True, "score": round(min(max(score / maximum, 0.0), 1.0), 6) if maximum else 0.0,
            "message": message, "output": payload["output"], "tests": tests}


def failed(problem):
    """The results of a grader that failed before it could grade: not gradable, so PrairieLearn neither scores
    the submission nor counts it as an attempt (the grader's fault is not the student's); the reason for the
    staff is in the job's log."""
    return {"gradable": False, "score": 0.0, "message": problem, "output": problem, "tests": []}


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder prairielearn", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)   # see cli.grade_parser
    parser.add_argument("--root", default=os.environ.get("MYTORCH_PL_ROOT", ROOT))
    parser.add_argument("--python", default=None, metavar="PATH", help="the Python that runs student code")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    submission, results = os.path.join(root, "student"), os.path.join(root, "results", "results.json")
    if preflight.grader_inside(submission):
        parser.error(f"this grader was imported from inside {submission}: run the question's tests/run.sh")
    os.makedirs(os.path.dirname(results), exist_ok=True)  # PrairieLearn does not make it
    results_folder = scratch.folder("pl-results")     # root's alone: Gradescope's format, read back here
    try:
        the_course = course.load_course()
        staged = os.path.join(results_folder, "results.json")
        upload.grade_upload(submission, staged, the_course, os.path.join(root, "tests", "solution"),
                                args.python, output_format="text", staff_sees_stdout=False)
        with open(staged, encoding="utf-8") as f:
            payload = from_gradescope(json.load(f))
        if all(t["output"] == upload.COULD_NOT_START for t in payload["tests"]):
            payload = failed(upload.COULD_NOT_START)         # its reason is on stderr, in the job's log
    except Exception as error:                            # a fault of the grader: still a results file
        traceback.print_exc()
        payload = failed(f"the autograder failed ({type(error).__name__}): please tell the course staff")
    finally:
        tree.remove(results_folder)
    report.write_json(results, payload)
    print(payload["message"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

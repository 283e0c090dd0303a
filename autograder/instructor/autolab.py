"""Autolab's autograder: grade the student's handin.tar in the current folder and print the scores last.

    python -m autograder autolab [--handin handin.tar]

Autolab's Tango copies an assessment's ``autograde.tar``, its Makefile and the student's ``handin.tar`` into an
empty folder and runs ``make`` there (``python -m handout autolab`` builds both: the Makefile unpacks the
grader and calls this). Autolab shows the student everything printed, and reads the scores from its last
line: ``{"scores": {PART: points, ...}, "scoreboard": [total]}``, one entry per part of the course (name the
assessment's problems after them), summing to the total. The lines before it are the report the local grader
prints: the same parts, points, feedback and diagnosis as on every platform (``upload.grade_upload``).

Tango runs ``make`` as an unprivileged user, the same one student code then runs as: nothing the grader reads
can be kept from it. Where the kernel has Landlock, student code can write only in its own folder and can
reach no process above it (``sandbox.landlock``), so it cannot print a scores line of its own; elsewhere the
output says so to the course staff. Every folder the grader makes is removed by the next job if a kill
leaves it (``sandbox.scratch``). So the bundle holds no solution (a submission could import it): it grades on the stored
cases, whose expected outputs the students hold with the handout. A broken upload scores 0 with its reason,
and a failure of the grader itself still prints a scores line.
"""
import argparse
import json
import os
import shutil
import stat
import sys
import textwrap
import traceback

from autograder.instructor import upload
from autograder.parts import course, spec
from autograder.sandbox import archive, landlock, scratch, system, tree, untrusted

UNCONFINED = textwrap.fill(
    "note for the course staff: this runner's kernel has no Landlock (Linux 5.13 or newer, with Landlock enabled "
    "at boot), so student code here runs as the grader's own user unconfined: it could print a scores line of "
    "its own after the grader's (see docs/autolab.md)", 80)


def scores_line(payload):
    """Autolab's last line from Gradescope's results: each part's points, and the total on the scoreboard."""
    scores = {t["number"]: t["score"] for t in payload["tests"]}
    return json.dumps({"scores": scores, "scoreboard": [round(sum(scores.values()), 2)]})


def zeros(parts):
    """The scores line of a grade that could not be made: 0 for every part (also the Makefile's fallback)."""
    return json.dumps({"scores": {p.number: 0.0 for p in parts}, "scoreboard": [0.0]})


def _staged(handin, folder):
    """``handin`` (a regular file, not a link, at most an archive's size) copied into ``folder``, alone: the
    upload grader looks for a mytorch in all it is given. The problem, or ''."""
    try:
        info = os.lstat(handin)
    except OSError:
        return f"no {os.path.basename(handin)} was handed in: upload the one python -m autograder handin writes"
    if not stat.S_ISREG(info.st_mode):
        return f"{os.path.basename(handin)} is not a file"
    if info.st_size > archive.ARCHIVE_BYTES:
        return f"{os.path.basename(handin)} is larger than {archive.ARCHIVE_BYTES >> 20} MiB"
    shutil.copyfile(handin, os.path.join(folder, os.path.basename(handin)), follow_symlinks=False)
    return ""


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder autolab", description=__doc__.split("\n\n")[0],
                                     allow_abbrev=False)   # see cli.grade_parser
    parser.add_argument("--handin", default="handin.tar", metavar="FILE", help="the student's upload")
    args = parser.parse_args(argv)
    parts = spec.PARTS
    scratch.sweep()                                       # what a killed grader of this user left
    if system.LINUX and not landlock.abi():
        print(UNCONFINED, flush=True)
    folder = scratch.folder("autolab")                    # this user's alone: the upload, the results
    try:
        the_course = course.load_course()
        parts = the_course.parts()
        submission, results = os.path.join(folder, "submission"), os.path.join(folder, "results.json")
        os.mkdir(submission)
        problem = _staged(os.path.abspath(args.handin), submission)
        if problem:
            print(untrusted.line(problem, 300))
            line = zeros(parts)
        else:
            upload.grade_upload(submission, results, the_course, None, output_format="text",
                                staff_sees_stdout=False)
            with open(results, encoding="utf-8") as f:
                line = scores_line(json.load(f))
    except Exception as error:                            # a fault of the grader: still a scores line
        traceback.print_exc(file=sys.stdout)
        print(f"the autograder failed ({type(error).__name__}): please tell the course staff")
        line = zeros(parts)
    finally:
        tree.remove(folder)
    sys.stderr.flush()
    print(line, flush=True)                               # the last line: what Autolab reads
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

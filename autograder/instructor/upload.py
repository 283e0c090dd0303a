"""Grading an upload, the same on every platform: found, unpacked within limits, copied, graded.

Every platform's entry (``gradescope``, ``prairielearn``, ``autolab``) calls ``grade_upload`` and reads the
results, written in Gradescope's format, into its own. The submission may be ``handin.tar`` (from ``python -m
autograder handin``), a ``mytorch`` folder, or a zip or folder holding one. Archives are unpacked within limits
(``archive``) into a folder of the grader's, and only the ``mytorch`` package found is copied
(``isolation.private_copy``) to the folder that is graded, so nothing else handed in (an ``autograder``
package, say) is ever on a path the grader reads; both folders are removed at the end. When started as root and
the platform's sandbox user exists (``student``; MYTORCH_GRADER_USER names another), student code runs as that
user, and the reference data and the grader's other folders are made readable by root alone; when
``SOLUTION/mytorch`` exists, the solution is made readable by root alone and every submission is graded on fresh
cases whose references it computes. A submission that breaks a limit (an archive, a folder tree too deep or too
large) scores 0 with the reason.
"""
import dataclasses
import os
import pwd
import secrets
import tempfile

from autograder import cli
from autograder.diagnosis import report
from autograder.grade import PartResult
from autograder.parts import course, data, spec
from autograder.sandbox import archive, isolation, tree, untrusted

STUDENT = "student"              # the user the platform makes, unless MYTORCH_GRADER_USER names another
ARCHIVES = 5                     # archives unpacked from one submission
WALK_LIMIT = 5000                # entries of the submission folder looked at
WALK_DEPTH = 32                  # levels of folders in it


def _walk(top):
    """(folder, dirs, files) of ``top``, no links followed, at most WALK_LIMIT entries and WALK_DEPTH levels."""
    try:
        for rel, _, dirs, files in tree.walk(top, WALK_DEPTH, WALK_LIMIT):
            yield os.path.normpath(os.path.join(top, rel)), dirs, files
    except tree.TreeError as error:
        raise archive.UnpackError(f"the submission cannot be read: {error}") from None


def find_package(submission, staging):
    """The ``mytorch`` folder handed in, unpacking archives into ``staging``; None if there is none."""
    unpacked = 0
    for folder, _, files in _walk(submission):
        for name in files:                                # regular files only, never a link
            path = os.path.join(folder, name)
            if name.endswith((".tar", ".tar.gz", ".tgz", ".zip")):
                unpacked += 1
                if unpacked > ARCHIVES:
                    raise archive.UnpackError(f"it holds more than {ARCHIVES} archives")
                try:
                    archive.unpack(path, os.path.join(staging, str(unpacked)))
                except archive.UnpackError as error:
                    raise archive.UnpackError(f"{untrusted.line(name, 100)}: {error}") from None
                except Exception as error:                # a damaged archive
                    raise archive.UnpackError(f"{untrusted.line(name, 100)} is damaged "
                                              f"({type(error).__name__})") from None
    for source in (staging, submission):
        for folder, _, files in _walk(source):
            if os.path.basename(folder) == "mytorch" and "__init__.py" in files and not os.path.islink(folder):
                return folder
    return None


def zero(results, problem, the_course=None, notes=(), output_format=None):
    """A results file scoring every part 0 with ``problem`` (the course's parts, or the spec's if the course
    file itself could not be read); ``notes`` go to the course staff alone."""
    parts = the_course.parts() if the_course is not None else spec.PARTS
    settings = the_course.gradescope if the_course is not None else course.Gradescope()
    if output_format:
        settings = dataclasses.replace(settings, output_format=output_format)
    cli.write_results(results, report.gradescope([PartResult(p, 0.0, "error", problem) for p in parts], 0.0,
                                                 settings, list(notes)))


def instructor_notes(solution, grade_args, python=None):
    """Add the run-as user and fresh cases (when ``solution``/mytorch exists; None: no solution) to
    ``grade_args`` where this machine allows them; returns what the course staff must know about a mode that
    fell back (students never see it: it goes to the results' ``extra_data``, and to stdout where the platform
    shows it to the staff alone)."""
    notes = []
    student = os.environ.get("MYTORCH_GRADER_USER") or STUDENT
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(student)
            grade_args += ["--run-as", student]
            # the grader reads the references before any student code runs; the student may not read them,
            # nor any other folder of the grader's (cli.instructor_places), hidden or not where it runs
            os.chmod(data.DATA_DIR, 0o700)
            for place, _ in cli.instructor_places(None, [], python):
                os.chmod(place, 0o700)
        except KeyError:
            notes.append(f"no user {student!r} (setup.sh makes it): student code ran with the grader's privileges "
                         "and could read the solution and rewrite its score")
    else:
        notes.append("the grader did not run as root: student code ran as the grader's own user, without isolation")
    if solution is not None and os.path.isfile(os.path.join(solution, "mytorch", "__init__.py")):
        os.chmod(solution, 0o700)
        grade_args += ["--fresh-seed", str(secrets.randbelow(2 ** 31)), "--solution", solution]
    else:
        notes.append("no solution in the autograder zip: graded on the fixed cases the students hold (a "
                     "submission that returns the stored answers scores full marks); build it with the solution")
    return notes


def grade_upload(submission, results, the_course, solution, python=None, output_format=None,
                 staff_sees_stdout=True):
    """Grade what was uploaded into the folder ``submission`` (``find_package``) and write ``results`` in
    Gradescope's format: every platform's entry does this, then reads the file into its own format. Student
    code runs as the platform's sandbox user where there is one (``instructor_notes``), on fresh cases when
    ``solution``/mytorch exists (None: there is none). ``output_format``: the outputs' format, if not the course's. Notes for the
    course staff are printed too where students never see the standard output (``staff_sees_stdout``)."""
    staging, work = tempfile.mkdtemp(prefix="handed-in-"), tempfile.mkdtemp(prefix="submission-")
    os.chmod(work, 0o755)
    try:
        problem = "no mytorch package in the submission: upload handin.tar (python -m autograder handin)"
        try:
            found = find_package(submission, staging)
            if found is not None:
                isolation.private_copy(found, os.path.join(work, "mytorch"))
        except (archive.UnpackError, isolation.CopyError, OSError) as error:
            found, problem = None, f"the submission could not be unpacked ({untrusted.line(str(error), 600)})"
        if found is None:
            zero(results, problem, the_course, output_format=output_format)
            print(problem)
            return 0
        grade_args = ["--gradescope", "--json", results, "--submission", work]
        if python:
            grade_args += ["--python", python]
        if output_format:
            grade_args += ["--output-format", output_format]
        for note in instructor_notes(solution, grade_args, python):
            grade_args += ["--instructor-note", note]
            if staff_sees_stdout:
                print(f"INSTRUCTOR WARNING: {note}")      # Gradescope's stdout: shown to the course staff alone
        try:
            return cli.main_grade(grade_args)
        except SystemExit:                                # a setup problem, already explained on stderr
            zero(results, "the autograder could not start: please tell the course staff", the_course,
                  ["the grader could not start: its stderr says why"], output_format)
            return 0
    finally:
        tree.remove(staging)
        tree.remove(work)

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

from autograder import cli, preflight
from autograder.diagnosis import report
from autograder.grade import PartResult
from autograder.instructor import submissions
from autograder.parts import course, data, spec
from autograder.sandbox import isolation, scratch, tree

STUDENT = "student"              # the user the platform makes, unless MYTORCH_GRADER_USER names another


COULD_NOT_START = "the autograder could not start: please tell the course staff"


def zero(results, problem, the_course=None, notes=(), output_format=None):
    """A results file scoring every part 0 with ``problem`` (the course's parts, or the spec's if the course
    file itself could not be read); ``notes`` go to the course staff alone."""
    parts = the_course.parts() if the_course is not None else spec.PARTS
    settings = the_course.gradescope if the_course is not None else course.Gradescope()
    if output_format:
        settings = dataclasses.replace(settings, output_format=output_format)
    cli.write_results(results, report.gradescope([PartResult(p, 0.0, "error", problem) for p in parts], 0.0,
                                                 settings, list(notes)))


def sandbox_user():
    """The platform's sandbox user (``student``, or MYTORCH_GRADER_USER's) when the grader runs as root and it
    exists, else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(os.environ.get("MYTORCH_GRADER_USER") or STUDENT)
    except KeyError:
        return None


def lend(work):
    """The folder of the submission's copy, root's, and readable by the sandbox user's group alone: no other
    user of the machine reads the copy while it is graded."""
    user = sandbox_user()
    if user is not None:
        os.chown(work, 0, user.pw_gid)
        os.chmod(work, 0o750)


def instructor_notes(solution, grade_args, python=None):
    """Add the run-as user and fresh cases (when ``solution``/mytorch exists; None: no solution) to
    ``grade_args`` where this machine allows them; returns what the course staff must know about a mode that
    fell back (students never see it: it goes to the results' ``extra_data``, and to stdout where the platform
    shows it to the staff alone)."""
    notes = []
    student = os.environ.get("MYTORCH_GRADER_USER") or STUDENT
    if os.geteuid() == 0:
        if sandbox_user() is not None:
            grade_args += ["--run-as", student]
            # the grader reads the references before any student code runs; the student may not read them,
            # nor any other folder of the grader's (preflight.instructor_places), hidden or not where it runs
            os.chmod(data.DATA_DIR, 0o700)
            for place, _ in preflight.instructor_places(None, [], python):
                os.chmod(place, 0o700)
        else:
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
    """Grade what was uploaded into the folder ``submission`` (``submissions.locate_path``, as every mode finds it) and write ``results`` in
    Gradescope's format: every platform's entry does this, then reads the file into its own format. Student
    code runs as the platform's sandbox user where there is one (``instructor_notes``), on fresh cases when
    ``solution``/mytorch exists (None: there is none). ``output_format``: the outputs' format, if not the course's. Notes for the
    course staff are printed too where students never see the standard output (``staff_sees_stdout``)."""
    scratch.sweep()                                       # what a killed grader of this user left
    staging, work = scratch.folder("handed-in"), scratch.folder("submission")
    try:
        located = submissions.locate_path(submission, staging, "the upload")
        problem = f"Not graded: {located.reason}." if located.package is None else ""
        if located.package is not None:
            try:
                isolation.private_copy(located.package, os.path.join(work, "mytorch"))
                lend(work)
            except (isolation.CopyError, OSError) as error:
                problem = f"Not graded: {submissions.copy_refused(error)}."
        if problem:
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
            zero(results, COULD_NOT_START, the_course,
                  ["the grader could not start: its stderr says why"], output_format)
            return 0
    finally:
        tree.remove(staging)
        tree.remove(work)

"""Gradescope's entry: grade /autograder/submission and write /autograder/results/results.json.

    python -m autograder gradescope [--root /autograder]     (the root also comes from $AUTOGRADER_ROOT)

The submission may be ``handin.tar`` (from ``python -m autograder handin``), a ``mytorch`` folder, or
a zip or folder holding one. It is copied to a fresh folder readable by all. When started as root and the user
``student`` exists (setup.sh makes it), student code runs as ``student`` and the reference data is made
readable by root alone; when ``source/solution/mytorch``
exists, the solution is made readable by root alone and every submission is graded on fresh cases whose
references it computes. The results file is written in every case.
"""
import argparse
import os
import pwd
import secrets
import shutil
import sys
import tarfile
import tempfile
import zipfile

from autograder import data, report, spec
from autograder.__main__ import main_grade
from autograder.grade import PartResult

STUDENT = "student"


def _safe_members(archive_names, destination):
    """Refuse absolute paths and '..' (a tar or zip may try to write outside its folder)."""
    root = os.path.realpath(destination)
    for name in archive_names:
        target = os.path.realpath(os.path.join(destination, name))
        if target != root and not target.startswith(root + os.sep):
            raise ValueError(f"the archive member {name!r} points outside the submission")


def unpack(submission, work):
    """Copy or unpack what was handed in into ``work``; return the folder holding mytorch/, or None."""
    for folder, dirs, files in os.walk(submission):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".tar") or name.endswith((".tar.gz", ".tgz")):
                with tarfile.open(path) as tar:
                    members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]   # no links, devices
                    _safe_members([m.name for m in members], work)
                    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                    tar.extractall(work, members=members, **safe)
            elif name.endswith(".zip"):
                with zipfile.ZipFile(path) as archive:
                    _safe_members(archive.namelist(), work)
                    archive.extractall(work)
    for source in (work, submission):
        for folder, dirs, files in os.walk(source):
            dirs.sort()
            if os.path.basename(folder) == "mytorch" and "__init__.py" in files:
                parent = os.path.dirname(folder)
                if source == submission:
                    shutil.copytree(folder, os.path.join(work, "mytorch"), dirs_exist_ok=True)
                    return work
                return parent
    return None


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder gradescope", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    results = os.path.join(root, "results", "results.json")
    work = tempfile.mkdtemp(prefix="submission-")
    os.chmod(work, 0o755)
    try:
        found = unpack(os.path.join(root, "submission"), work)
    except Exception as error:                      # a damaged or hostile archive
        found, problem = None, f"the submission could not be unpacked ({error})"
    else:
        problem = "no mytorch package in the submission: upload handin.tar (python -m autograder handin)"
    if found is None:
        parts = [PartResult(p, 0.0, "error", problem) for p in spec.PARTS]
        report.write_json(results, report.gradescope(parts, 0.0))
        print(problem)
        return 0
    for folder, dirs, files in os.walk(work):       # readable by the unprivileged user
        for name in dirs + files:
            os.chmod(os.path.join(folder, name), 0o755 if name in dirs else 0o644)
    grade_args = ["--gradescope", "--json", results, "--submission", found]
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(STUDENT)
            grade_args += ["--run-as", STUDENT]
            # the grader reads the references before any student code runs; the student may not read them
            os.chmod(data.DATA_DIR, 0o700)
        except KeyError:
            print(f"warning: no user {STUDENT!r}: student code runs with the grader's privileges")
    solution = os.path.join(root, "source", "solution")
    if os.path.isfile(os.path.join(solution, "mytorch", "__init__.py")):
        os.chmod(solution, 0o700)
        grade_args += ["--fresh-seed", str(secrets.randbelow(2 ** 31)), "--solution", solution]
    return main_grade(grade_args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

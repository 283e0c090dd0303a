"""Instructors: grade every submission in a folder, in parallel, and write a CSV of scores.

    python -m autograder batch DIR --run-as USER[,USER...]|'PREFIX*' [--python PATH] [--jobs N] [--csv PATH]
                                   [--timeout S] [--fresh-seed [SEED]]

Each sub-folder of DIR that holds ``mytorch/`` is one submission (named by the folder). The CSV has one row
per submission: its name, the score of every part, and the total. One seed is drawn for the whole batch, so
every submission is graded on the same cases.

Isolation, which is why a class is graded as root with ``--run-as`` (unprivileged users made for grading;
see ``identities``): every reference is read once before any student code runs; every submission's
``mytorch`` is copied first into a folder of the grader's that only the user grading it may read, and student
code runs on that copy; submissions graded at the same time run as different users, and a user's processes,
IPC objects and temporary files are gone before it grades the next one. No sandbox user can write the
copies, the grader's code and reference data, the solution or the Python that runs student code (checked
before starting), nor the CSV, which the grader writes at the end. One submission that breaks anything (a copy
refused, a tree too deep, a fault of the grader) scores 0 with the reason; the others are graded. Without
``--run-as`` it says plainly that there is no isolation.
"""
import argparse
import concurrent.futures
import csv
import io
import os
import sys
import tempfile
import threading
import time

from autograder import cli, grade, identities, isolation, reaper, report, spec, tree, untrusted


def submissions(folder):
    return sorted(name for name in os.listdir(folder)
                  if os.path.isfile(os.path.join(folder, name, "mytorch", "__init__.py")))


def no_isolation_warning():
    who = "root" if os.geteuid() == 0 else "you"
    return (f"warning: no isolation: student code runs as {who}, so each submission can read and change the "
            "others, this grader, its reference data and your files. To grade a class, run as root with "
            "--run-as USER (an unprivileged user made for grading).")


class Progress:
    """'graded 3/40 submissions, about 2 min left' on stderr."""

    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.lock = threading.Lock()

    def step(self):
        with self.lock:
            self.done += 1
            elapsed = time.monotonic() - self.start
            left = elapsed / self.done * (self.total - self.done)
            eta = f"about {left / 60:.0f} min left" if left >= 90 else f"about {left:.0f} s left"
            end = "\n" if self.done == self.total or not sys.stderr.isatty() else "\r"
            print(f"graded {self.done}/{self.total} submissions, {eta if self.done < self.total else 'done'}"
                  f" ({elapsed:.0f} s)", end=end, file=sys.stderr, flush=True)


def write_csv(path, all_results):
    """The scores table, written atomically by the grader."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["submission"] + [p.number for p in spec.PARTS] + ["total"])
    for name, results in all_results.items():
        writer.writerow([name] + [f"{r.score:g}" for r in results] + [f"{report.total(results)[0]:g}"])
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".scores-", suffix=".csv")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(buffer.getvalue())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def sandbox_users(parser, value, jobs, python, solution=None):
    """The identity pool of ``--run-as`` (None without it) and the checked Python; usage errors for a pool
    that cannot be used, a Python a sandbox user cannot run or could change, or grader files (or the
    solution) it could change."""
    if value is None:
        return None, cli.resolve_python(parser, python)
    if os.geteuid() != 0:
        parser.error("--run-as needs root")
    try:
        users = identities.pool(value, jobs)
    except identities.IdentityError as error:
        parser.error(f"--run-as: {error}")
    try:
        grader = os.path.dirname(os.path.abspath(grade.__file__))
        for user in users.users:
            python = cli.resolve_python(parser, python, user)
            cli.refuse_writable(parser, user, [grader], "the grader's files")
            cli.refuse_writable(parser, user, [os.path.join(solution, "mytorch")] if solution else [],
                                "the solution, which runs as root")
    except BaseException:
        users.close()
        raise
    return users, python


def stage(source, folder):
    """A private copy of the package ``source`` as ``folder``/mytorch, ``folder`` readable by root alone
    until ``lend`` hands it to the user grading it. Returns the copy, or the error that refused it."""
    try:
        os.makedirs(folder, mode=0o700)
        copy = isolation.private_copy(source, os.path.join(folder, "mytorch"))
        os.chmod(folder, 0o700)
        return copy
    except Exception as error:                            # whatever it is, this submission's alone
        return error


def lend(copy, user):
    """Let ``user`` alone read the copy: its folder becomes theirs, read and search only."""
    folder = os.path.dirname(copy)
    os.chown(folder, user.pw_uid, 0)
    os.chmod(folder, 0o500)


def grade_one(copy, users, **options):
    """One submission's results; whatever goes wrong, a score of 0 for every part with the reason, so the
    class is graded on. The copy is removed once its user's lease has ended (no process of it is left), so
    the user's next submission cannot read it."""
    try:
        return _grade_copy(copy, users, options)
    finally:
        if not isinstance(copy, Exception):
            tree.remove(os.path.dirname(copy))


def _grade_copy(copy, users, options):
    if isinstance(copy, Exception):
        return _zero(f"the submission could not be copied ({untrusted.text(str(copy), 300)})")
    try:
        if users is None:
            return grade.grade(os.path.dirname(copy), spec.PARTS, user=None, **options)
        with users.lease() as user:
            lend(copy, user)
            return grade.grade(os.path.dirname(copy), spec.PARTS, user=user, **options)
    except Exception as error:
        return _zero(f"the grader failed on this submission ({type(error).__name__}: "
                     f"{untrusted.text(str(error), 300)}); please report it")


def _zero(problem):
    return [grade.PartResult(p, 0.0, "error", problem) for p in spec.PARTS]


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder batch", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", metavar="DIR")
    parser.add_argument("--csv", default=None, metavar="PATH", help="where to write the scores (default DIR/scores.csv)")
    cli.add_common(parser)
    args = parser.parse_args(argv)
    if not os.path.isdir(args.folder):
        parser.error(f"{args.folder} is not a folder")
    folder = os.path.abspath(args.folder)
    if isolation.grader_inside(folder):
        parser.error(f"this grader was imported from inside {folder}: run it from its own copy, outside the "
                     "submissions")
    names = submissions(folder)
    if not names:
        parser.error(f"no submissions in {args.folder} (each must be a folder holding mytorch/)")
    jobs = args.jobs or os.cpu_count() or 1
    fresh_seed = cli.resolve_fresh_seed(args.fresh_seed)
    solution = cli.resolve_solution(args, fresh_seed)
    users, python = sandbox_users(parser, args.run_as, jobs, args.python, solution)
    if users is None:
        print(no_isolation_warning(), file=sys.stderr)
    at_once = jobs if users is None else min(jobs, len(users.users))    # never two submissions per user
    staging = None
    try:
        reaper.become_subreaper()
        loaded = grade.references(spec.PARTS, fresh_seed, solution, args.timeout, args.memory, jobs, python)
        staging = tempfile.mkdtemp(prefix="mytorch-batch-")
        os.chmod(staging, 0o711)                          # others may pass through, to their own copy alone
        progress = Progress(len(names))
        # every copy is made before any student code runs
        copies = {name: stage(os.path.join(folder, name, "mytorch"), os.path.join(staging, str(k)))
                  for k, name in enumerate(names)}
        options = dict(timeout=args.timeout, memory_mb=args.memory, jobs=max(1, jobs // at_once), python=python,
                       loaded=loaded)

        def one(name):
            results = grade_one(copies[name], users, **options)
            progress.step()
            return results

        with concurrent.futures.ThreadPoolExecutor(max_workers=at_once) as pool:
            all_results = dict(zip(names, pool.map(one, names)))
    finally:
        reaper.end_orphans()
        if users is not None:
            users.close()
        if staging is not None:
            tree.remove(staging)
    path = args.csv or os.path.join(folder, "scores.csv")
    write_csv(path, all_results)
    for name, results in all_results.items():
        print(f"{untrusted.text(name, 100):<30} {report.total(results)[0]:>7.2f}")
    print(f"Scores of {len(names)} submissions written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

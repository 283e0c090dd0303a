"""Instructors: grade every submission in a folder, in parallel, and leave feedback and a class report.

    python -m autograder batch DIR [--out REPORT] [--regrade] [--run-as USER] [--python PATH] [--jobs N]
                                   [--csv PATH] [--timeout S] [--fresh-seed [SEED]]

Every sub-folder of DIR is one submission (named by the folder), whatever it holds (``submissions``: a
``mytorch`` package, one level down, or an archive; anything else is a row with 0 and the reason); so is an
archive at DIR's top. It prints how many it found and how many rows it wrote: the same number. REPORT
(default ``DIR/grading/``) receives each submission's feedback as it is graded, then the class's tables and
report (``class_report``). Started again after an interruption it grades only what has no feedback from the
same grader and seed yet (``--regrade``: all of it). One seed is drawn for the whole batch (and kept for a
resumed run), so every submission is graded on the same cases.

Isolation, which is why a class is graded as root with ``--run-as USER`` (an unprivileged user made for
grading): every reference is read once before any student code runs; every submission's ``mytorch`` is
unpacked and copied first into a private folder of the grader's, and student code runs on that copy as USER,
who can write neither the copies, nor the grader's code and reference data (checked before starting), nor the
report, which the grader writes. Without ``--run-as`` it says plainly that there is no isolation.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import sys
import tempfile
import threading
import time

from autograder import class_report, cli, grade, isolation, reaper, report, submissions, untrusted

STATE = ".batch.json"            # in REPORT: the seed a --fresh-seed batch drew, for a resumed run


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


def batch_seed(args, folder):
    """The fresh seed (None: the stored cases): a random one is drawn once per class and kept in the report
    ``folder``, so a resumed run grades on the same cases."""
    if args.fresh_seed != "random" or args.regrade:
        return cli.resolve_fresh_seed(args.fresh_seed)
    try:
        seed = json.loads(folder.read(STATE))["fresh_seed"]
        if isinstance(seed, int) and not isinstance(seed, bool):
            return seed
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return cli.resolve_fresh_seed(args.fresh_seed)


def prepare(folder, names, staging):
    """Every submission of ``names`` located and copied into ``staging`` before any student code runs:
    {name: (Located, the graded copy's folder or None)}."""
    prepared = {}
    for k, name in enumerate(names):
        where = os.path.join(staging, str(k))
        os.makedirs(os.path.join(where, "unpacked"))
        located = submissions.locate(folder, name, os.path.join(where, "unpacked"))
        copy = None
        if located.package is not None:
            try:
                copy = os.path.dirname(isolation.private_copy(located.package, os.path.join(where, "graded", "mytorch")))
            except (OSError, isolation.CopyError) as error:
                located.reason = f"the submission could not be copied ({error})"
        prepared[name] = (located, copy)
    return prepared


def grade_one(located, copy, parts, args, loaded, user, python, fresh_seed):
    """(results, reason) of one prepared submission: a 0 for every part, with the reason, when not gradable."""
    if copy is None or located.reason:
        reason = located.reason or "no mytorch package"
        return [grade.PartResult(p, 0.0, "error", f"Not graded: {reason}.") for p in parts], reason
    return grade.grade(copy, parts, timeout=args.timeout, memory_mb=args.memory, jobs=1, user=user, python=python,
                       loaded=loaded), ""


def record(feedback, the_course, located, results, reason, seconds, key, fresh_seed):
    """Write the submission's feedback files; returns its results payload."""
    problem, detail = class_report.problem_of(results, reason)
    payload = report.gradescope(results, seconds, the_course.gradescope, extra={
        "submission": located.name, "form": located.form, "problem": problem, "problem_detail": detail,
        "grader_key": key, "seed": fresh_seed if fresh_seed is not None else the_course.seed})
    text = class_report.feedback_text(results, fresh_seed, reason)
    class_report.write_feedback(feedback, located.name, text, payload)
    return payload


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder batch", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", metavar="DIR")
    parser.add_argument("--out", default=None, metavar="REPORT",
                        help="the folder for the feedback and the class report (default DIR/grading)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade every submission again, even those an earlier run of this grader finished")
    parser.add_argument("--csv", default=None, metavar="PATH", help="also write the scores table to PATH")
    cli.add_common(parser)
    args = parser.parse_args(argv)
    if not os.path.isdir(args.folder):
        parser.error(f"{args.folder} is not a folder")
    folder = os.path.abspath(args.folder)
    if isolation.grader_inside(folder):
        parser.error(f"this grader was imported from inside {folder}: run it from its own copy, outside the "
                     "submissions")
    the_course = cli.load_course(parser)
    parts = the_course.parts()
    report_dir = os.path.abspath(args.out or os.path.join(folder, "grading"))
    names, ignored = submissions.find(folder, skip=[report_dir])
    if not names:
        parser.error(f"no submissions in {args.folder}: each must be a folder (or an archive) in it")
    print(f"Found {len(names)} submissions in {folder}" + (
        f" (not submissions, left alone: {len(ignored)} other files at its top, e.g. "
        f"{untrusted.text(ignored[0], 60)})" if ignored else ""))
    user = cli.resolve_user(parser, args.run_as)
    python = cli.resolve_python(parser, args.python, user)
    if user is None:
        print(no_isolation_warning(), file=sys.stderr)
    else:
        exposed = isolation.writable_by([os.path.dirname(os.path.abspath(grade.__file__))], user)
        if exposed:
            parser.error(f"user {user.pw_name} could change the grader's files, e.g. {exposed[0]}: make them "
                         "writable by root alone first")
    try:
        folder_out = class_report.Folder(report_dir)
        feedback = folder_out.sub(class_report.FEEDBACK)
    except OSError as error:
        parser.error(f"--out {report_dir}: not a folder the grader can write ({error.strerror or error})")
    if user is not None:
        exposed = isolation.writable_by([report_dir], user)
        if exposed:
            parser.error(f"user {user.pw_name} could change the report in {report_dir}, e.g. {exposed[0]}: give "
                         "--out a folder only root may write")
    fresh_seed = batch_seed(args, folder_out)
    solution = cli.resolve_solution(args, fresh_seed)
    key = class_report.grader_key(the_course, fresh_seed)
    folder_out.write(STATE, json.dumps({"fresh_seed": fresh_seed}) + "\n")
    payloads = {}
    if not args.regrade:
        payloads = {n: p for n in names for p in [class_report.read_feedback(feedback, n, key)] if p is not None}
    todo = [n for n in names if n not in payloads]
    if payloads:
        print(f"Resuming: {len(payloads)} already graded by this grader on these cases (--regrade grades them "
              f"again); {len(todo)} to grade")
    jobs = args.jobs or os.cpu_count() or 1
    reaper.become_subreaper()
    loaded = grade.references(parts, fresh_seed, solution, args.timeout, args.memory, jobs, python) if todo else None
    staging = tempfile.mkdtemp(prefix="mytorch-batch-")
    os.chmod(staging, 0o755)
    progress = Progress(len(todo))
    lock = threading.Lock()
    try:
        prepared = prepare(folder, todo, staging)

        def one(name):
            start = time.monotonic()
            located, copy = prepared[name]
            results, reason = grade_one(located, copy, parts, args, loaded, user, python, fresh_seed)
            with lock:
                payloads[name] = record(feedback, the_course, located, results, reason, time.monotonic() - start,
                                        key, fresh_seed)
            progress.step()

        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, todo))
    finally:
        reaper.end_orphans()
        if user is not None:
            reaper.kill_user(user)
        shutil.rmtree(staging, ignore_errors=True)
    class_rows = class_report.write_class(folder_out, names, payloads, the_course)
    if args.csv:
        with open(args.csv, "wb") as f:
            f.write(folder_out.read("scores.csv"))
    for row in class_rows:
        why = f"  {row['problem']}: {untrusted.text(row['detail'], 60)}" if row["problem"] else ""
        print(f"{untrusted.text(row['name'], 30):<30} {row['total']:>7.2f}{why}")
    print(f"{len(names)} submissions found, {len(class_rows)} rows written: {os.path.join(report_dir, 'scores.csv')}"
          f"; feedback in {os.path.join(report_dir, class_report.FEEDBACK)}, the class in "
          f"{os.path.join(report_dir, 'report.md')}")
    return 0 if len(class_rows) == len(names) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

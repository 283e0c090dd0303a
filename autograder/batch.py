"""Instructors: grade every submission in a folder, in parallel, and write a CSV of scores.

    python -m autograder batch DIR --run-as USER [--python PATH] [--jobs N] [--csv PATH] [--timeout S]
                                   [--fresh-seed [SEED]]

Each sub-folder of DIR that holds ``mytorch/`` is one submission (named by the folder). The CSV has one row
per submission: its name, the score of every part, and the total. One seed is drawn for the whole batch, so
every submission is graded on the same cases.

Isolation, which is why a class is graded as root with ``--run-as USER`` (an unprivileged user made for
grading): every reference is read once before any student code runs; every submission's ``mytorch`` is
copied first into a private folder of the grader's, and student code runs on that copy as USER, who can
write neither the copies, nor the grader's code and reference data (checked before starting), nor the
CSV, which the grader writes at the end. Without ``--run-as`` it says plainly that there is no isolation.
"""
import argparse
import concurrent.futures
import csv
import io
import os
import shutil
import sys
import tempfile
import threading
import time

from autograder import cli, grade, isolation, reaper, report, spec, untrusted


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
    user = cli.resolve_user(parser, args.run_as)
    python = cli.resolve_python(parser, args.python, user)
    if user is None:
        print(no_isolation_warning(), file=sys.stderr)
    else:
        exposed = isolation.writable_by([os.path.dirname(os.path.abspath(grade.__file__))], user)
        if exposed:
            parser.error(f"user {user.pw_name} could change the grader's files, e.g. {exposed[0]}: make them "
                         "writable by root alone first")
    fresh_seed = cli.resolve_fresh_seed(args.fresh_seed)
    solution = cli.resolve_solution(args, fresh_seed)
    jobs = args.jobs or os.cpu_count() or 1
    reaper.become_subreaper()
    loaded = grade.references(spec.PARTS, fresh_seed, solution, args.timeout, args.memory, jobs, python)
    staging = tempfile.mkdtemp(prefix="mytorch-batch-")
    os.chmod(staging, 0o755)
    progress = Progress(len(names))
    try:
        copies = {}
        for k, name in enumerate(names):                  # every copy is made before any student code runs
            try:
                copies[name] = isolation.private_copy(os.path.join(folder, name, "mytorch"),
                                                      os.path.join(staging, str(k), "mytorch"))
            except (OSError, isolation.CopyError) as error:
                copies[name] = error

        def one(name):
            copy = copies[name]
            if isinstance(copy, Exception):
                results = [grade.PartResult(p, 0.0, "error", f"the submission could not be copied ({copy})")
                           for p in spec.PARTS]
            else:
                results = grade.grade(os.path.dirname(copy), spec.PARTS, timeout=args.timeout,
                                      memory_mb=args.memory, jobs=1, user=user, python=python, loaded=loaded)
            progress.step()
            return results

        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            all_results = dict(zip(names, pool.map(one, names)))
    finally:
        reaper.end_orphans()
        if user is not None:
            reaper.kill_user(user)
        shutil.rmtree(staging, ignore_errors=True)
    path = args.csv or os.path.join(folder, "scores.csv")
    write_csv(path, all_results)
    for name, results in all_results.items():
        print(f"{untrusted.text(name, 100):<30} {report.total(results)[0]:>7.2f}")
    print(f"Scores of {len(names)} submissions written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

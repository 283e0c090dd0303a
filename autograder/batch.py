"""Instructors: grade every submission in a folder, in parallel, and write a CSV of scores.

    python -m autograder batch DIR [--jobs N] [--csv PATH] [--timeout S] [--fresh-seed [SEED]]

Each sub-folder of DIR that holds ``mytorch/`` is one submission (named by the folder). The CSV has one row
per submission: its name, the score of every part, and the total. One seed is drawn for the whole batch, so
every submission is graded on the same cases.
"""
import argparse
import concurrent.futures
import csv
import os
import sys

from autograder import grade, report, spec
from autograder.__main__ import _add_common, resolve_fresh_seed, resolve_solution


def submissions(folder):
    return sorted(name for name in os.listdir(folder)
                  if os.path.isfile(os.path.join(folder, name, "mytorch", "__init__.py")))


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m autograder batch", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", metavar="DIR")
    parser.add_argument("--csv", default=None, metavar="PATH", help="where to write the scores (default DIR/scores.csv)")
    _add_common(parser)
    args = parser.parse_args(argv)
    if not os.path.isdir(args.folder):
        parser.error(f"{args.folder} is not a folder")
    names = submissions(args.folder)
    if not names:
        parser.error(f"no submissions in {args.folder} (each must be a folder holding mytorch/)")
    fresh_seed = resolve_fresh_seed(args.fresh_seed)
    solution = resolve_solution(args, fresh_seed)
    jobs = args.jobs or os.cpu_count() or 1

    def one(name):
        return grade.grade(os.path.join(os.path.abspath(args.folder), name), spec.PARTS, timeout=args.timeout,
                           memory_mb=args.memory, fresh_seed=fresh_seed, solution=solution, jobs=1)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        all_results = dict(zip(names, pool.map(one, names)))
    path = args.csv or os.path.join(args.folder, "scores.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission"] + [p.number for p in spec.PARTS] + ["total"])
        for name, results in all_results.items():
            writer.writerow([name] + [f"{r.score:g}" for r in results] + [f"{report.total(results)[0]:g}"])
    for name, results in all_results.items():
        print(f"{name:<30} {report.total(results)[0]:>7.2f}")
    print(f"Scores of {len(names)} submissions written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Wall time of a full grading run (`python -m autograder`), median of repeated runs: on the solution, and on the
student handout, where every part fails (with the diagnosis of failing cases switched on, as always).

    python benchmarks/bench_autograder.py [--runs 5] [--no-handout]

Targets: the solution under 5 s on the project's 2-core machine; the handout under 3 times the solution's time.
The two are measured alternately, so load on a shared machine weighs on both alike. Measured here, never
asserted in a test.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(submission, out):
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autograder", "--submission", submission, "--json", out], cwd=REPO,
                   check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-handout", action="store_true", help="time the solution only")
    args = parser.parse_args()
    times = {"solution": [], "handout": []}
    with tempfile.TemporaryDirectory() as tmp:
        handout = os.path.join(tmp, "handout")
        if not args.no_handout:
            subprocess.run([sys.executable, "-m", "handout", "build", "--out", handout], cwd=REPO, check=True,
                           capture_output=True)
        for _ in range(args.runs):
            times["solution"].append(timed(REPO, os.path.join(tmp, "r.json")))
            if not args.no_handout:
                times["handout"].append(timed(handout, os.path.join(tmp, "h.json")))
    for name, values in times.items():
        if values:
            print(f"python -m autograder on the {name}: median {statistics.median(values):.2f} s "
                  f"(min {min(values):.2f}, max {max(values):.2f}) over {args.runs} runs, {os.cpu_count()} cores")
    if times["handout"]:
        ratio = statistics.median(times["handout"]) / statistics.median(times["solution"])
        print(f"handout / solution: {ratio:.2f} (target under 3)")


if __name__ == "__main__":
    main()

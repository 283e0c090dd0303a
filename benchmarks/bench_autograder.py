"""Wall time of a full grading run on the solution (`python -m autograder`), median of repeated runs.

    python benchmarks/bench_autograder.py [--runs 5]

The target is under 5 s on the project's 2-core machine. It is measured here, never asserted in a test.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "autograder", "--json", os.path.join(tmp, "r.json")], cwd=REPO,
                           check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    print(f"python -m autograder on the solution: median {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}) over {args.runs} runs, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()

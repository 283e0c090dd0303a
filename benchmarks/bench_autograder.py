"""How long grading takes, as ratios to peers measured in the same run (so they hold on any machine).

    python benchmarks/bench_autograder.py [--runs 5] [--class-size 100] [--jobs 2]
                                          [--run-as USER --python PATH] [--no-batch]

1. A full grade of the solution (``python -m autograder``) against one ``python -c "import numpy"``, in
   interleaved rounds (a pause before each sample), each ratio taken within its round and the median reported;
   the same with one Python per part (MYTORCH_GRADER_ZYGOTE=0), and with ``--run-as`` when given (as root; the
   user must be able to run ``--python``). Target: at most 8x. In the same rounds, the student handout,
   where every part fails and each failing part's first case is traced and diagnosed, and a copy of the
   solution with five realistic mistakes (``FIVE``), each diagnosed: targets under 3x the solution's time.
2. A class: ``--class-size`` submissions, half copies of the solution and half of the student handout (built
   with ``python -m handout build``), graded by ``python -m autograder batch --jobs N``, against the sum of
   their single full grades, which is the class size times the median single grade of each kind measured in
   the same run, ``--runs`` rounds before the batch and as many after, since the machine's speed may drift
   while the batch runs (the copies are byte for byte the same). Target: at most 0.6x. It also says what 1,000
   submissions would take at that rate.

The grader's packages are compiled to bytecode first, as an installed grader's first run leaves them: where
PYTHONDONTWRITEBYTECODE is set, every grade would otherwise compile its thirty modules again (0.2 s of CPU).

Measured here, never asserted in a test.
"""
import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAUSE = 0.3


def timed(command, env=None, cwd=REPO):
    time.sleep(PAUSE)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stderr[-2000:]}")
    return seconds


def grade_command(submission, results, extra=()):
    return [sys.executable, "-m", "autograder", "--submission", submission, "--json", results, *extra]


def rounds(peers, runs):
    """{name: [seconds per round]} for ``peers`` ({name: (command, env)}), interleaved, rotated each round."""
    names, times = list(peers), {name: [] for name in peers}
    for k in range(runs):
        for name in names[k % len(names):] + names[:k % len(names)]:
            command, env = peers[name]
            times[name].append(timed(command, env))
    return times


def build_handout(tmp):
    handout = os.path.join(tmp, "handout")
    if not os.path.isdir(handout):
        subprocess.run([sys.executable, "-m", "handout", "build", "--out", handout], cwd=REPO, check=True,
                       capture_output=True)
    return handout


# five realistic mistakes, one each in a cell, the sequence layer, the CTC loss, its course version and the beam
# search (tests/fresh_mistakes_third.py): each part they break is traced and diagnosed
FIVE = (("mytorch/nn/rnn_cell.py", 58), ("mytorch/nn/recurrent.py", 123), ("mytorch/nn/ctc.py", 112),
        ("mytorch/nn/ctc_course.py", 122), ("mytorch/nn/ctc_decode.py", 108))


def five_mistakes(tmp):
    """A copy of the solution with the mistakes FIVE names, each applied as its entry says."""
    sys.path.insert(0, REPO)
    from tests.fresh_mistakes_third import FRESH_THIRD
    folder = os.path.join(tmp, "five")
    if not os.path.isdir(folder):
        shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(folder, "mytorch"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for file, line in FIVE:
            mistake = next(m for m in FRESH_THIRD if (m["file"], m["line"]) == (file, line))
            path = os.path.join(folder, file)
            with open(path) as f:
                source = f.read()
            with open(path, "w") as f:
                f.write(source.replace(mistake["old"], mistake["new"], 1))
    return folder


def single_grades(args, tmp):
    numpy = ([sys.executable, "-c", "import numpy"], None)
    results = os.path.join(tmp, "r.json")
    peers = {"import numpy": numpy,
             "grade": (grade_command(REPO, results), None),
             "grade, one Python per part": (grade_command(REPO, results), {"MYTORCH_GRADER_ZYGOTE": "0"}),
             "grade the handout": (grade_command(build_handout(tmp), results), None),
             "grade five mistakes": (grade_command(five_mistakes(tmp), results), None)}
    if args.run_as:
        extra = ["--run-as", args.run_as] + (["--python", args.python] if args.python else [])
        peers["grade --run-as"] = (grade_command(REPO, results, extra), None)
        if args.python:                       # the children's Python: its own import is a second peer
            peers["import numpy, --python"] = ([args.python, "-c", "import numpy"], None)
    times = rounds(peers, args.runs)
    base = times["import numpy"]
    print(f"python -c 'import numpy': median {statistics.median(base):.2f} s over {args.runs} rounds, "
          f"{os.cpu_count()} cores" + (f"; with --python {args.python}: "
                                       f"{statistics.median(times['import numpy, --python']):.2f} s"
                                       if "import numpy, --python" in times else ""))
    for name, samples in times.items():
        if not name.startswith("import numpy"):
            ratio = statistics.median(t / b for t, b in zip(samples, base))
            target = name in ("grade", "grade --run-as")
            print(f"{name:<28} median {statistics.median(samples):6.2f} s  = {ratio:5.1f}x import numpy"
                  f"{'  (target <= 8x)' if target else ''}")
    if "import numpy, --python" in times:
        ratio = statistics.median(t / b for t, b in zip(times["grade --run-as"], times["import numpy, --python"]))
        print(f"{'grade --run-as':<28} {'':13}  = {ratio:5.1f}x the --python's import numpy")
    failing = statistics.median(h / g for h, g in zip(times["grade the handout"], times["grade"]))
    print(f"the handout, every part failing and diagnosed: {failing:.2f}x the solution's grade (target < 3x)")
    five = statistics.median(h / g for h, g in zip(times["grade five mistakes"], times["grade"]))
    print(f"five realistic mistakes, each diagnosed: {five:.2f}x the solution's grade (target < 3x)")


def a_class(args, tmp):
    handout = build_handout(tmp)
    originals = {"solution": REPO, "handout": handout}
    subs = os.path.join(tmp, "class")
    for k in range(args.class_size):
        kind = "solution" if k % 2 == 0 else "handout"
        shutil.copytree(os.path.join(originals[kind], "mytorch"), os.path.join(subs, f"{kind}-{k:04d}", "mytorch"),
                        ignore=shutil.ignore_patterns("__pycache__"))
    results = os.path.join(tmp, "r.json")
    peers = {kind: (grade_command(path, results), None) for kind, path in originals.items()}
    before = rounds(peers, args.runs)                    # the machine's speed drifts over minutes: the singles
    batch = timed([sys.executable, "-m", "autograder", "batch", subs, "--jobs", str(args.jobs),
                   "--csv", os.path.join(tmp, "scores.csv")])
    after = rounds(peers, args.runs)                     # are timed on both sides of the batch
    per_kind = {kind: statistics.median(before[kind] + after[kind]) for kind in peers}
    total = sum(per_kind["solution" if k % 2 == 0 else "handout"] for k in range(args.class_size))
    drift = statistics.median(after["solution"]) / statistics.median(before["solution"])
    print(f"single grades: solution {per_kind['solution']:.2f} s, handout {per_kind['handout']:.2f} s (medians of "
          f"{args.runs} rounds before the batch and {args.runs} after; the solution's {drift:.2f}x as long after); "
          f"sum over {args.class_size} submissions {total:.1f} s")
    if not 0.8 <= drift <= 1.25:
        print("  the machine's speed changed during the run: the next ratio is unreliable, run it again")
    print(f"batch of {args.class_size} with --jobs {args.jobs}: {batch:.1f} s = {batch / total:.2f}x the sum of "
          f"single grades (target <= 0.6x); 1,000 would take about {batch / args.class_size * 1000 / 60:.0f} min")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--class-size", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--run-as", default=None, metavar="USER")
    parser.add_argument("--python", default=None, metavar="PATH", help="the Python --run-as USER runs")
    parser.add_argument("--no-batch", action="store_true", help="only the single grades")
    args = parser.parse_args()
    for package in ("autograder", "mytorch"):
        compileall.compile_dir(os.path.join(REPO, package), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        single_grades(args, tmp)
        if not args.no_batch:
            a_class(args, tmp)


if __name__ == "__main__":
    main()

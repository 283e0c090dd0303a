"""The one timer every benchmark here uses, and how it avoids the OpenBLAS spin artifact.

After a NumPy matrix product, OpenBLAS's worker threads keep spinning for a while; a peer timed straight
afterwards (torch, or NumPy itself) finds a core busy and runs up to twice as slow. So every timed sample
starts after a pause (``PAUSE`` seconds, long enough for the spinners to sleep), and peers are timed in
rounds, interleaved, so that a burst of load from elsewhere on the machine hits every peer of a round alike.
Ratios are taken within a round and the median over rounds is reported.

``--threads N`` (read before NumPy is imported) pins OpenBLAS, OpenMP and torch to N threads; with
``--clock cpu`` a sample is the process's CPU time instead of wall time, which on a machine shared with other
jobs is far steadier for single-threaded runs (with more threads it also counts spinning, so use it with
``--threads 1`` only).
"""
import os
import statistics
import sys
import time

PAUSE = 0.4


def pin_threads_from_argv(argv=None):
    """Honour ``--threads N`` before NumPy loads (OpenBLAS reads its thread count once, at import)."""
    argv = sys.argv if argv is None else argv
    if "--threads" in argv:
        n = argv[argv.index("--threads") + 1]
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = n
        return int(n)
    return None


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def sample(run, pause=PAUSE, clock="wall", repeat=1):
    """Seconds one call of ``run`` takes, measured after ``pause`` seconds of quiet (the mean of ``repeat``
    calls back to back: a call of a millisecond or less, timed alone after a pause, mostly measures threads
    waking up)."""
    now = CLOCKS[clock]
    time.sleep(pause)
    start = now()
    for _ in range(repeat):
        run()
    return (now() - start) / repeat


def repeats_for(run, least=0.05):
    """How many calls of ``run`` back to back take at least ``least`` seconds (at least one)."""
    start = time.perf_counter()
    run()
    return max(1, int(least / max(time.perf_counter() - start, 1e-6)) + 1)


def median_seconds(run, repeats, pause=PAUSE, clock="wall"):
    """The median of ``repeats`` samples after one warm-up call (allocations, lazy init, caches)."""
    run()
    return statistics.median(sample(run, pause, clock) for _ in range(repeats))


def rounds(runs, count, pause=PAUSE, clock="wall"):
    """Time every callable of ``runs`` (name -> callable) once per round, interleaved, ``count`` rounds.

    Returns name -> list of seconds (one per round). Each round starts the peers in a rotated order so no
    peer always follows the same one."""
    names = list(runs)
    for name in names:
        runs[name]()                                              # warm-up
    repeat = {name: repeats_for(runs[name]) for name in names}
    times = {name: [] for name in names}
    for r in range(count):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(sample(runs[name], pause, clock, repeat[name]))
    return times


def paired_ratio(times, mine, peer):
    """The median over rounds of mine/peer, each ratio taken within one round."""
    return statistics.median(a / b for a, b in zip(times[mine], times[peer]))

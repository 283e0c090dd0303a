"""A part starved of CPU by another submission is graded again alone (``autograder.sandbox.fairness``): the gate that
makes "alone", the reading that tells starved from busy or asleep, and a batch where one submission's busy
processes starve another's correct parts."""
import contextlib
import csv
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from autograder import grade
from autograder.parts import spec
from autograder.sandbox import fairness, reaper, runner
from autograder.sandbox.childspec import ChildSpec, Limits
from tests.graderkit import REPO, make_grader_copy, make_submission, report_of

pytestmark = pytest.mark.slow                  # starves parts of CPU and waits out their timeouts

SPIN = "while True:\n    pass\n"


def _python(code, nice=0, cpu=None, stdout=None):
    def setup():
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        os.nice(nice)
    return subprocess.Popen([sys.executable, "-c", code], preexec_fn=setup, stdout=stdout)


@pytest.fixture
def processes():
    started = []
    yield started
    for proc in started:                              # each with what it forked
        for pid in reaper.tree(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def _until(condition, seconds=20.0):
    """Poll ``condition`` until it holds (a busy test machine only delays it)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_a_process_that_spins_or_sleeps_was_not_starved(processes):
    spinner = _python(SPIN)
    sleeper = _python("import time\nprint('asleep', flush=True)\ntime.sleep(60)", stdout=subprocess.PIPE)
    processes += [spinner, sleeper]
    assert _until(lambda: fairness.run_and_wait([spinner.pid])[0] >= 0.5)
    assert not fairness.starved(spinner.pid, 1.0)     # it ran half of a 1 s limit, however long it waited
    assert sleeper.stdout.readline() == b"asleep\n"
    readings = []

    def asleep():                                     # in time.sleep: nothing else can block it after the print
        readings.append(fairness.run_and_wait([sleeper.pid]))
        return reaper._state(sleeper.pid) == "S" and readings[-2:] == readings[-1:] * 2
    assert _until(asleep)
    ran, waited = readings[-1]
    time.sleep(1.0)
    ran_since, waited_since = (after - before for after, before in zip(fairness.run_and_wait([sleeper.pid]),
                                                                        (ran, waited)))
    assert ran_since < 0.01 and waited_since < 0.01   # asleep, it neither ran nor waited for a CPU
    # so a part that sleeps out the default 20 s limit is not starved, though it waited for most of a second
    # while Python started on a busy machine (a part's child, forked from the zygote, waits far less)
    assert not fairness.starved(sleeper.pid, 20.0)


def test_a_process_that_waited_for_a_cpu_more_than_it_ran_was_starved(processes):
    """On one CPU, a busy process at the lowest priority beside a busy one of normal priority gets ~1.5 % of it:
    alone it was starved; with the other (a part's tree of two) its tree ran for half the limit, so was not."""
    cpu = min(os.sched_getaffinity(0))
    tree = _python(f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nif os.fork() == 0:\n    os.nice(19)\n"
                   "while True:\n    pass\n")
    processes.append(tree)
    assert _until(lambda: len(reaper.tree(tree.pid)) == 2)
    victim, = reaper.tree(tree.pid) - {tree.pid}
    assert _until(lambda: fairness.run_and_wait([victim])[1] > 0.5)
    ran, waited = fairness.run_and_wait([victim])
    assert waited > 4 * ran, (ran, waited)
    assert fairness.starved(victim, 1.0)
    assert _until(lambda: fairness.run_and_wait([tree.pid])[0] >= 0.5)
    assert fairness.starved(victim, 1.0)              # still: its lot did not change
    assert not fairness.starved(tree.pid, 1.0)        # the tree (hog and victim) ran for half of 1 s


def test_alone_waits_for_every_shared_holder_and_holds_back_new_ones():
    gate, log = fairness.Gate(), []
    first_in, release_first, second_tried = threading.Event(), threading.Event(), threading.Event()

    def holder():
        with gate.shared():
            first_in.set()
            release_first.wait(5)
            log.append("first out")

    def loner():
        first_in.wait(5)
        with gate.alone():
            log.append("alone")

    def latecomer():
        while not gate._waiting:                      # once the loner waits
            time.sleep(0.001)
        second_tried.set()
        with gate.shared():
            log.append("latecomer in")

    threads = [threading.Thread(target=t) for t in (holder, loner, latecomer)]
    for t in threads:
        t.start()
    second_tried.wait(5)
    time.sleep(0.1)
    assert log == []                                  # the loner waits for the holder, the latecomer for the loner
    release_first.set()
    for t in threads:
        t.join(5)
    assert log == ["first out", "alone", "latecomer in"]


def test_two_alone_never_overlap():
    gate, inside, most = fairness.Gate(), [0], [0]
    lock = threading.Lock()

    def loner():
        for _ in range(50):
            with gate.alone():
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.0005)
                with lock:
                    inside[0] -= 1

    threads = [threading.Thread(target=loner) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert most[0] == 1


COURSE = '[assignment]\ntitle = "fair"\nsections = ["2"]\n'
TIMEOUT = "4"                    # honest parts need 0.3 s of CPU; on a busy machine, the starver is slow to start
FORWARD = '        """One step: returns h\' (N, H) or (H,). ``state`` is h_{t-1}; ``h_prev_t=`` is the course\'s name for it."""\n'
# every forward call of a part's process: the first one starts 20 busy processes, each in a session of its own
# (the scheduler gives each session a fair share), and waits; the part runs out of time with them
STARVER = ("        import os, time\n        if not getattr(os, 'started', 0):\n            os.started = 1\n"
           "            for _ in range(20):\n                if os.fork() == 0:\n                    os.setsid()\n"
           "                    while True:\n                        pass\n            time.sleep(60)\n")
# a correct submission whose first forward call needs 0.3 s of CPU: far less than the limit
HONEST = ("        import os, time\n        if not getattr(os, 'worked', 0):\n            os.worked = 1\n"
          "            start = time.process_time()\n            while time.process_time() - start < 0.3:\n"
          "                pass\n")


def _on_one_cpu(tmp_path, mallory, alice):
    """A batch of mallory and alice (``mallory``, ``alice``: code put at the top of GRUCell.forward) whose
    every process runs on one CPU: ``(the finished process, {submission: total})``. The batch runs in a session
    of its own, as one started from a terminal does: the kernel gives each session a fair share of a CPU, and
    in the test run's session, beside the busy processes of the other test workers, the grader could be kept
    from feeding a part its request for seconds (a part blocked on its grader is not starved: its timeout
    stood, and alice's part then ran slow when graded again alone)."""
    grader = make_grader_copy(tmp_path / "grader", COURSE)
    subs = tmp_path / "subs"
    make_submission(subs / "mallory", [("nn/gru_cell.py", FORWARD, FORWARD + mallory)])
    make_submission(subs / "alice", [("nn/gru_cell.py", FORWARD, FORWARD + alice)])
    cpu = min(os.sched_getaffinity(0))
    proc = subprocess.run([sys.executable, "-m", "autograder", "batch", str(subs), "--jobs", "2", "--timeout", TIMEOUT],
                          cwd=grader, env=dict(os.environ, PYTHONPATH=""), capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.sched_setaffinity(0, {cpu}), start_new_session=True)
    assert proc.returncode == 0, proc.stderr
    with open(report_of(subs) / "scores.csv", newline="") as f:
        return proc, {row["submission"]: float(row["total"]) for row in csv.DictReader(f)}


def test_a_submission_starved_by_another_is_graded_again_alone_and_the_starver_is_not(tmp_path):
    """The whole batch runs on one CPU (its children inherit it), so the busy processes starve the honest
    parts that run beside them. Every starved part of alice is graded again alone and passes. Mallory's parts
    ran out of time busy with their own processes; the two of them run at once, so one may read as starved by
    the other's, and mallory is then graded again alone for one part limit at most (``ALONE_LIMITS``)."""
    proc, totals = _on_one_cpu(tmp_path, STARVER, HONEST)
    assert totals == {"alice": 12.0, "mallory": 0.0}, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if "graded again alone" in line]
    alice = [line for line in notes if line.startswith("note: alice: part 2.")]
    assert alice and alice[0].endswith(" timed out starved of CPU; graded again alone"), proc.stderr
    assert len(notes) - len(alice) <= fairness.ALONE_LIMITS, proc.stderr      # mallory's, within the bound
    assert all(line.startswith(("note: alice: part 2.", "note: mallory: part 2.")) and len(line) <= 80
               for line in notes), proc.stderr


ENDLESS = "        while True:\n            pass\n"


def test_a_submission_is_graded_again_alone_for_one_part_limit_at_most(tmp_path, monkeypatch):
    """Processes that ended are not in the reading, so a part can look starved when its own short-lived
    processes kept it waiting: every starved part is graded again alone only until the submission has spent
    one part limit so; past it the timeout stands. (Here every timeout reads as starved.)"""
    monkeypatch.setattr(fairness, "starved", lambda pid, seconds: True)
    sub = make_submission(tmp_path / "sub", [("nn/gru_cell.py", FORWARD, FORWARD + ENDLESS)])
    parts = [spec.PARTS_BY_NUMBER["2.1"], spec.PARTS_BY_NUMBER["2.2"]]
    shown = []
    results = grade.grade(ChildSpec(sub, Limits(timeout=1.0)), parts, jobs=2, progress=shown.append)
    assert [r.status for r in results] == ["error", "error"]
    assert sorted(r.part.number for r in shown) == ["2.1", "2.2"]      # each part's final grade is shown once
    assert all("did not finish within 1 s" in r.output for r in results)
    assert [r.alone for r in results] == [True, False]      # the first spent the limit: the second stands


@pytest.mark.parametrize("again", [False, True], ids=["a passing grade alone", "the fault again"])
def test_a_part_the_grader_failed_on_is_graded_again_alone(monkeypatch, again):
    """A fault of the grader's own (here: no space left for a part's work folder, as when another submission
    graded beside it fills the disk) does not stand as the student's 0: the part is graded again once the
    others are done, alone; only if it fails again does the grader's message stand."""
    failures = []

    def no_space_once(*args, **kwargs):                    # the first run of 2.2 (or every run) finds no space,
        first = "part" not in failures
        if kwargs.get("task") == "compile" or args[1][0].get("kind") == "backward" and (again or first):
            failures.append(kwargs.get("task", "part"))        # and so does the compile of the submission
            raise OSError(28, "No space left on device")
        return run_child(*args, **kwargs)
    run_child = runner.run_child
    monkeypatch.setattr(runner, "run_child", no_space_once)
    shown = []
    results = grade.grade(REPO, [spec.PARTS_BY_NUMBER["2.1"], spec.PARTS_BY_NUMBER["2.2"]], jobs=2,
                          progress=shown.append)
    assert failures == ["compile"] + ["part"] * (2 if again else 1) and [r.alone for r in results] == [False, True]
    assert [r.part.number for r in shown].count("2.2") == 1              # its final grade alone is shown
    assert results[1].why_alone == "the grader failed on it"
    if again:
        assert results[1].score == 0 and "The grader failed on this part (OSError" in results[1].output
    else:
        assert results[1].status == "passed" and results[1].score == spec.PARTS_BY_NUMBER["2.2"].points


def test_a_starved_part_graded_again_alone_is_judged_on_that_grade(tmp_path, monkeypatch):
    """A correct part that timed out starved passes once graded alone; the others are not graded again."""
    first = []

    def timed_out_once(*args, **kwargs):                   # the first run of 2.2 is cut short and starved
        if args[1][0].get("kind") == "backward" and not first:
            first.append(1)
            return runner.Outcome(failure="did not finish within 20 s (an infinite loop, or far too slow)",
                                   starved=True)
        return run_child(*args, **kwargs)
    run_child = runner.run_child
    monkeypatch.setattr(runner, "run_child", timed_out_once)
    results = grade.grade(REPO, [spec.PARTS_BY_NUMBER["2.1"], spec.PARTS_BY_NUMBER["2.2"]], jobs=2)
    assert first and [(r.status, r.alone) for r in results] == [("passed", False), ("passed", True)]


# one busy process in a session of its own, started by whichever of mallory's parts gets there first (the
# other finds the flag file taken): a third of the one CPU is left to each of alice's two parts
ONE_STARVER = ("        import os, time\n        try:\n            os.close(os.open(FLAG, os.O_CREAT | os.O_EXCL))\n"
               "        except OSError:\n            pass\n        else:\n            if os.fork() == 0:\n"
               "                os.setsid()\n                while True:\n                    pass\n"
               "        time.sleep(60)\n")
# a correct submission whose first forward call of each part needs 1.8 s of CPU the first two times it runs
# (alice's two parts at once: with a third of the CPU each runs out of its 4 s) and 0.3 s after (graded again
# alone, it passes with room to spare beside whatever else the machine runs: needing 1.8 s then, the part
# timed out again when the rest of a test suite left the batch under half of its CPU)
SLOW_FIRST = ("        import os, time\n        if not getattr(os, 'worked', 0):\n            os.worked = 1\n"
              "            need = 0.3\n            for k in range(2):\n                try:\n"
              "                    os.close(os.open(TOKEN + str(k), os.O_CREAT | os.O_EXCL))\n"
              "                except OSError:\n                    continue\n                need = 1.8\n"
              "                break\n            start = time.process_time()\n"
              "            while time.process_time() - start < need:\n                pass\n")


def test_a_part_starved_by_another_submissions_busy_process_is_graded_again_though_its_sibling_ran_too(tmp_path):
    """Alice's two parts run at once, each getting a third of the one CPU beside mallory's one busy process:
    each part is judged on its own processes, so both were starved and pass graded again alone. (Counting a
    part's running siblings as its own meets the one-part threshold with the two thirds, and alice's timeouts
    stood.)"""
    proc, totals = _on_one_cpu(tmp_path, ONE_STARVER.replace("FLAG", repr(str(tmp_path / "started"))),
                               SLOW_FIRST.replace("TOKEN", repr(str(tmp_path / "slow-"))))
    assert totals == {"alice": 12.0, "mallory": 0.0}, proc.stderr + proc.stdout

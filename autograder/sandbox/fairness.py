"""A part's time limit is judged on the CPU it was given: a part starved by others is graded again, alone.

The limit on a part is wall-clock time. That is fair only while the part gets its share of the CPU; but a
submission graded at the same time may start many busy processes, each in a session of its own, and the
kernel's scheduler then gives each of them as much time as the whole part (one task group per session). A
correct part beside it can miss its limit having run for a fraction of it.

So when a part runs out of time, the grader reads, before killing it, how long its processes ran on a CPU
and how long they waited, ready to run, for one (``/proc/PID/task/TID/schedstat``: the kernel's run time
and run-queue delay of each thread, in ns). A part whose processes together ran for less than half its time
and waited, ready to run, for more than half was *starved*: ``grade`` grades it again once its other parts
are done, alone (``Gate.alone``: in a batch, while no other submission runs), and that result stands. Each
part is judged on its own processes, also beside its submission's other parts (a grade and a batch run
several of one submission at once): counting those as its own would let the threshold, meant for one part,
be met by two that each got a quarter of a CPU, and another submission could then starve a correct part
unseen; a part kept waiting by its own siblings is graded again alone like any other, within the bound
below. A part that ran for much of its time (an endless loop, or many busy processes of its own) or slept
(waiting on nothing the grader gives) was not starved: its timeout stands at once, and costs no one else any
time.

The reading cannot see processes that already ended: a part whose own short-lived processes keep its main
one waiting looks starved. So a submission is graded again alone for at most ``ALONE_LIMITS`` part limits
in all; past that, a starved part's timeout stands. A correct part starved by others takes a fraction of
its limit once alone, so that is room for many of them; a submission that gets itself judged starved costs
the others at most that, plus the one part (and its diagnosis) it had begun.
"""
import contextlib
import os
import threading

from autograder.sandbox import reaper

ALONE_LIMITS = 1                 # part limits a submission may spend graded again alone, in all


def run_and_wait(pids):
    """(seconds on a CPU, seconds waiting for one) of every thread of ``pids``, as far as they still exist."""
    ran = waited = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError, ValueError, IndexError):
                    with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                        fields = f.read().split()
                    ran, waited = ran + int(fields[0]), waited + int(fields[1])
    return ran / 1e9, waited / 1e9


def starved(pid, seconds):
    """Whether the process tree of ``pid`` (a part's child, still alive, that ran out of its ``seconds``) was
    starved: together, its processes ran for less than half that time and waited for a CPU for more than half."""
    ran, waited = run_and_wait(reaper.tree(pid))
    return ran < seconds / 2 < waited


class Gate:
    """Lets many submissions be graded at once (``shared``), or one alone (``alone``): ``alone`` waits until
    no other holds the gate, and holds back any new holder while it waits, so it cannot wait for ever."""

    def __init__(self):
        self._changed = threading.Condition()
        self._sharing = self._waiting = 0
        self._alone = False

    @contextlib.contextmanager
    def shared(self):
        with self._changed:
            self._changed.wait_for(lambda: not self._alone and not self._waiting)
            self._sharing += 1
        try:
            yield
        finally:
            with self._changed:
                self._sharing -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def alone(self):
        with self._changed:
            self._waiting += 1
            self._changed.wait_for(lambda: not self._alone and not self._sharing)
            self._waiting -= 1
            self._alone = True
        try:
            yield
        finally:
            with self._changed:
                self._alone = False
                self._changed.notify_all()

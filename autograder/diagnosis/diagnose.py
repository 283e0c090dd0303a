"""Running a diagnosis: the student's failing case traced in a child, against the reference's trace, in time.

The reference trace is stored with the reference data by ``python -m autograder generate``, or, with a fresh
seed, computed by the solution's child when asked. The student's traced run is their code: it gets what is left
of the diagnosis's time, and a submission's diagnoses share one ``Budget``. Nothing here raises into the grader:
``diagnose_case`` returns [] when it cannot say anything.
"""
import dataclasses
import threading
import time

from autograder.diagnosis import differences, traces, wording
from autograder.sandbox import childspec, runner

DIAGNOSIS_SECONDS = 4.0          # a part's (its trace read and matched): a forged trace's cost stays under 5 s more


SUBMISSION_SECONDS = 10.0        # … and all the diagnoses of one submission, its parts together


TRACE = "__trace__"              # the array of a traced case's values (driver.TRACE)


def trace_case(child, config, inputs):
    """Run one case of the mytorch in ``child.root`` with tracing on, in a child of ``child`` (a ``ChildSpec``):
    ``(traces.Trace, outcome)``, or None."""
    outcome = runner.run_child(child, [dict(config, trace=True)], [inputs])
    if outcome.failure or not outcome.reports:
        return None
    meta, flat = outcome.reports[0].get("trace"), outcome.arrays.get((0, TRACE))
    try:
        return traces.parse(meta, flat), outcome
    except (ValueError, TypeError):
        return None


def reference_trace(part_data, k, child=None):
    """The solution's ``traces.Trace`` of case k: stored with the reference data, or traced now by the solution's
    child (a fresh seed: in a child of ``child``'s limits and Python, a ``ChildSpec``), without its source
    text."""
    stored = (part_data.traces or [None] * (k + 1))[k]
    if stored is not None:
        return traces.parse(*stored)
    if part_data.solution is None:
        return None
    limits, python = (child.limits, child.python) if child else (childspec.DEFAULT, None)
    solution = childspec.ChildSpec(part_data.solution, limits, python=python)
    runs = [trace_case(solution, part_data.configs[k], part_data.inputs[k]) for _ in range(2)]
    return None if None in runs else traces.without_source(traces.stable(runs[0][0], runs[1][0]))


class Budget:
    """The seconds the diagnoses of one submission may take, its parts together (each part's at most
    DIAGNOSIS_SECONDS): the traced run of the student's code, its trace's transfer and parsing, and the
    matching. Forged or stalling traces in every failing part cost it SUBMISSION_SECONDS in all, and a few
    diagnoses' more while they end (parts are judged at once)."""

    def __init__(self, seconds=SUBMISSION_SECONDS):
        self.left, self._lock = seconds, threading.Lock()

    def deadline(self):
        """When a diagnosis starting now must stop, or None if none may start."""
        with self._lock:
            return time.monotonic() + min(DIAGNOSIS_SECONDS, self.left) if self.left > 0 else None

    def spend(self, seconds):
        with self._lock:
            self.left -= seconds


def diagnose_case(part_data, k, child, wrong=(), budget=None):
    """Lines saying where case k of the submission in ``child.root`` first goes wrong, traced in a child of
    ``child`` (a ``ChildSpec``); [] if that cannot be said. ``wrong``: (label, got, expected) of the outputs
    that differ, None for a case that raised (only a value computed wrong before the error is said);
    ``budget``: the submission's ``Budget`` (a fresh one if None)."""
    budget = budget or Budget()
    deadline, start = budget.deadline(), time.monotonic()
    if deadline is None:
        return []
    try:
        reference = reference_trace(part_data, k, child)
        if reference is None or not reference.records:
            return []
        # the traced run is the student's code, which may stall when it sees a tracer: it gets what is left of
        # the diagnosis's time, not the part's, and its trace's transfer and parsing count too
        left = deadline - time.monotonic()
        if left <= 0:
            return []
        limits = dataclasses.replace(child.limits, timeout=min(child.limits.timeout, left))
        traced = trace_case(dataclasses.replace(child, limits=limits), part_data.configs[k], part_data.inputs[k])
        if traced is None:
            return []
        # a layer's forward outputs graded right in this case: what differs comes from its backward
        forward_right = "Y" in part_data.expected[k] and wrong is not None and not any(
            label.startswith(("Y", "state_T")) for label, _, _ in wrong)
        extended = part_data.inputs[k].get("extended_symbols")          # a CTC case's lattice, to name its states
        case = wording.Case(part_data.configs[k], part_data.inputs[k],
                            differences.gate_blocks(wrong or (), part_data.configs[k]), forward_right,
                            extended if extended is not None and extended.ndim == 1 else None, wrong is None)
        lines = wording.explain(reference, traced[0], case, deadline)
        return lines if wrong is not None or wording.names_a_value(lines) else []
    except Exception:                   # the diagnosis is a courtesy: it never costs the grade or the run
        return []
    finally:
        budget.spend(time.monotonic() - start)

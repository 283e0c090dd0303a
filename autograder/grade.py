"""Grade a submission: one child process per part, every comparison and every score here in the parent.

This module never imports ``mytorch``. It loads and verifies the reference data (or, with a fresh seed,
draws new cases and has a separate child running the instructor's solution compute the references), sends
each part's inputs to a child that imports the submission, and judges the plain arrays that come back.
"""
import concurrent.futures
import dataclasses
import os
import shutil
import time

from autograder.diagnosis import diagnose, feedback
from autograder.parts import course, data, spec
from autograder.sandbox import (
    bytecode,
    cgroups,
    childspec,
    fairness,
    isolation,
    reaper,
    runner,
    scratch,
    system,
    tree,
    untrusted,
    zygotes,
)

PART_OUTPUT_LIMIT = 16000        # characters of one part's message: the results file stays well under 1 MB


@dataclasses.dataclass
class PartResult:
    part: spec.Part
    score: float
    status: str                  # passed | failed | not implemented | error
    output: str
    seconds: float = 0.0
    starved: bool = False        # timed out while waiting for a CPU more than running (``fairness``)
    alone: bool = False          # so graded again, alone: this is that grade (``why_alone`` says why)
    fault: bool = False          # the grader itself failed on it (a full disk, say): graded again alone, too
    why_alone: str = ""
    hints: tuple = ()            # the output's hints as the class report counts them (``feedback.judge_part``)

    @property
    def passed(self):
        return self.status == "passed"


def judge(part, part_data, outcome, verbose=False, diagnose=None):
    """Score one part from the child's outcome (the message is built in ``feedback``)."""
    score, status, output, hints = feedback.judge_part(part, part_data, outcome, verbose, diagnose)
    return PartResult(part, score, status, output, outcome.seconds, hints=tuple(hints))


def _fresh_part_data(part, seed, solution):
    """New cases from ``seed``, with references computed by a child running the instructor's solution
    (``solution``, a ``ChildSpec`` whose zygote, if any, is the references' own)."""
    cases = spec.make_cases(part, seed)
    configs, inputs = [c for c, _ in cases], [i for _, i in cases]
    outcome = runner.run_child(solution, configs, inputs)
    if outcome.failure or any(r.get("status") != "ok" for r in outcome.reports):
        problem = outcome.failure or next(r["error"] for r in outcome.reports if r.get("status") != "ok")
        raise data.ReferenceDataError(f"the reference solution in {solution.root} failed on part {part.number}: "
                                      f"{problem}")
    expected = [{name: a for (case, name), a in outcome.arrays.items() if case == k} for k in range(len(configs))]
    return data.PartData(configs, inputs, expected, [{} for _ in configs], solution=solution.root)


def reference(part, fresh_seed, solution, manifest):
    """A part's verified reference data, or the ReferenceDataError that explains why there is none.
    ``solution``: the ``ChildSpec`` of the instructor's solution, which computes them with a fresh seed."""
    try:
        if fresh_seed is not None:
            return _fresh_part_data(part, fresh_seed, solution)
        if isinstance(manifest, data.ReferenceDataError):
            raise manifest
        part_data = data.load_part(part.number, manifest=manifest)
        data.check_against_spec(part, part_data, spec.make_cases(part, manifest["seed"]))
        return part_data
    except data.ReferenceDataError as error:
        return error


def grade_part(part, part_data, child, verbose=False, budget=None):
    """One part graded in a child of ``child`` (a ``ChildSpec``): a ``PartResult``, whatever happened."""
    if isinstance(part_data, data.ReferenceDataError):
        return PartResult(part, 0.0, "error", f"Cannot grade this part: {part_data}")
    try:
        outcome = runner.run_child(child, part_data.configs, part_data.inputs)

        def where_it_goes_wrong(k, wrong):                 # a failing case re-run with tracing: the first wrong quantity
            return diagnose.diagnose_case(part_data, k, child, wrong, budget)
        result = judge(part, part_data, outcome, verbose, where_it_goes_wrong)
        result.starved = outcome.starved
    except Exception as error:          # a fault of the grader itself: this part scores 0, the others go on
        result = PartResult(part, 0.0, "error", f"The grader failed on this part ({type(error).__name__}: {error}); "
                                                "please report it to the course staff.", fault=True)
    result.output = untrusted.text(result.output, PART_OUTPUT_LIMIT)
    return result


def references(parts, fresh_seed=None, solution=None, limits=childspec.DEFAULT, jobs=None, python=None):
    """Every part's verified reference data (or its ReferenceDataError), read before any student code runs; with
    a fresh seed, computed by the instructor's ``solution`` (a folder) in children of ``limits`` and ``python``."""
    manifest = None
    if fresh_seed is None:
        try:
            manifest = data.read_manifest()
            data.check_seed(manifest, course.load_course().seed)
        except data.ReferenceDataError as error:
            manifest = error                                 # every part reports it; grading still finishes
    # with a fresh seed, the solution's children fork from a zygote of the references' own (none of a submission)
    with zygotes.running(1 if fresh_seed is not None else 0, python) as workers:
        worker = workers[0] if workers else None
        child = childspec.ChildSpec(solution, limits, python=python, zygote=worker)
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
            return list(pool.map(lambda p: reference(p, fresh_seed, child, manifest), parts))


def default_jobs():
    """Parts graded at once when ``--jobs`` is not given: one more than the cores. A part's child spends part
    of its short life asleep (forked, joining its memory cgroup, its namespaces torn down as it exits), so one
    child more keeps the cores busy: the 31 parts of the solution took 0.86 s against 1.03 s with one per core
    (2 cores, as root; 0.85 s against 1.01 s as another user)."""
    return system.cpu_count() + 1


def instructor_checkout():
    """The folder holding the instructor's solution beside this grader (its ``autograder`` ships the generator;
    a student handout's does not, and its ``mytorch`` is the submission itself), else None."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(here) if os.path.isfile(os.path.join(here, "instructor", "generate.py")) else None


# the files of the cells section 6's layers run (the course switch ``bptt_on_reference_cells``)
CELL_FILES = ("rnn_cell.py", "gru_cell.py", "gru_block_cell.py", "gmu_cell.py", "tgru_cell.py")
ON_REFERENCE_CELLS = ("Graded with the reference cells (the course's bptt_on_reference_cells): only your sequence "
                      "layer counts in this part; your cells are graded in their own sections.")


def reference_cells(the_course, parts, sandboxed, solution=None):
    """(the folder holding the solution whose cells section 6 is graded on, or None; a note for the course staff,
    or ''). The switch applies only where student code already runs with the grader's privileges (no sandbox
    user: ``sandboxed`` False), which can read the solution anyway: a sandbox user is never handed the
    solution's cells (a part's child could read them and print them into its feedback)."""
    if not the_course.bptt_on_reference_cells or not any(p.number.split(".")[0] == "6" for p in parts):
        return None, ""
    if sandboxed:
        return None, ("bptt_on_reference_cells is not applied: student code runs as a sandbox user, who is never "
                      "handed the solution's cells; section 6 was graded on each submission's own cells")
    place = solution or instructor_checkout()
    if place is None or not all(os.path.isfile(os.path.join(place, "mytorch", "nn", f)) for f in CELL_FILES):
        return None, ("bptt_on_reference_cells is not applied: no solution beside this grader (give --solution "
                      "DIR); section 6 was graded on the submission's own cells")
    return os.path.abspath(place), ""


def with_reference_cells(root, solution):
    """A folder of the grader's holding a copy of ``root``'s mytorch with the solution's cell files in place of
    the submission's (its sequence layer and everything else are its own)."""
    folder = scratch.folder("reference-cells")
    try:
        isolation.private_copy(os.path.join(root, "mytorch"), os.path.join(folder, "mytorch"))
        os.makedirs(os.path.join(folder, "mytorch", "nn"), exist_ok=True)
        for name in CELL_FILES:
            target = os.path.join(folder, "mytorch", "nn", name)
            if os.path.lexists(target):
                os.unlink(target)
            shutil.copyfile(os.path.join(solution, "mytorch", "nn", name), target)
        os.chmod(folder, 0o755)
    except BaseException:
        tree.remove(folder)
        raise
    return folder


def grade(child, parts=None, verbose=False, fresh_seed=None, solution=None, jobs=None, loaded=None, progress=None,
          template=None, gate=None, ready=None, reference_cells=None):
    """Grade the ``mytorch`` in ``child.root`` on ``parts`` (default: the course's), each part in a child of
    ``child`` (a ``ChildSpec``: its limits, the user and the Python it runs as, and the zygote it is forked
    from, if one was started for this grade; a folder alone: the default limits, as this Python). Returns a
    list of ``PartResult``.

    Every reference is loaded and verified (or computed by the solution) before any student code runs, so
    nothing a submission does to the files on disk can change this run's references; ``loaded``: the
    ``references(parts, ...)`` already read (batch grading reads them once for every submission), or a function
    that returns them (the grading command starts reading them before its checks).
    ``progress``: called with each ``PartResult`` as soon as its part is graded (from a worker thread). The
    parts' children are forked from one zygote of this submission's own (``zygotes``), never shared with
    another submission: ``child.zygote``, one started earlier for this grade, which this call then ends; else a
    new one (where zygotes run at all),
    forked from ``template`` (a ``zygotes.Template`` of ``python``: batch keeps one for all its submissions) if
    one is given. A part that ran out of time starved of CPU, or that the grader failed on, is graded again
    once the others are done, one at a time, alone through ``gate`` (a ``fairness.Gate``: batch shares one
    between its submissions), for at most ``fairness.ALONE_LIMITS`` part limits in all. ``ready``: called (in
    another thread, while the references load) before anything runs as ``user``; what it raises ends the
    grade (``cli``'s checks of the Pythons, still under way when the grade starts). ``reference_cells``: the
    solution folder whose cells section 6's parts run on (``reference_cells``), never given with a ``user``.
    """
    parts = list(parts or course.load_course().parts())
    jobs = jobs or default_jobs()
    gate = gate or fairness.Gate()
    if not isinstance(child, childspec.ChildSpec):                # a folder: its children as every default says
        child = childspec.ChildSpec(os.path.abspath(child))
    root, user, worker = child.root, child.user, child.zygote
    if worker is None and zygotes.enabled():
        worker = zygotes.Zygote(child.python, template=template)     # imports NumPy while the references load
        child = dataclasses.replace(child, zygote=worker)
    overlay = overlay_code = None
    if reference_cells is not None and user is None and any(p.number.split(".")[0] == "6" for p in parts):
        try:
            overlay = with_reference_cells(root, reference_cells)
        except (OSError, isolation.CopyError):
            overlay = None                                # its parts then run on the submission's own cells

    def place(part, code):
        """The child a part runs in: section 6 on the reference cells where asked."""
        if overlay is not None and part.number.split(".")[0] == "6":
            return child.at(overlay, overlay_code)
        return child.at(root, code)
    try:
        with gate.shared():
            def compile_when_ready():
                checkout = instructor_checkout()                 # the grader's own, compiled while it waits
                known = bytecode.known_sources(checkout, user) if checkout and worker is not None else None
                if ready is not None:
                    ready()
                return bytecode.compiled(child, known)
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as aside:    # compiled (never run) meanwhile
                compiling = aside.submit(compile_when_ready)
                if loaded is None:
                    loaded = references(parts, fresh_seed, solution, child.limits, jobs, child.python)
                elif callable(loaded):
                    loaded = loaded()
                code = compiling.result()                                           # compiled once, not per part
            if overlay is not None:
                overlay_code = bytecode.compiled(child.at(overlay))
            budget = diagnose.Budget()                    # the grading process's time on this one's diagnoses

            def graded(part, part_data):
                result = grade_part(part, part_data, place(part, code), verbose, budget)
                if progress is not None and not (result.starved or result.fault or reaper.interrupted()):
                    progress(result)
                return result
            with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
                results = list(pool.map(lambda pr: graded(*pr), zip(parts, loaded)))
        alone = 0.0                                    # seconds this submission has held the others back
        for k, (result, part_data) in enumerate(zip(results, loaded)):
            # starved of CPU, or failed by the grader (another submission may have filled its disk): again, alone
            if (result.starved or result.fault) and alone < child.limits.timeout * fairness.ALONE_LIMITS:
                with gate.alone():
                    start = time.monotonic()
                    results[k] = grade_part(result.part, part_data, place(result.part, code), verbose, budget)
                    alone += time.monotonic() - start
                results[k].alone = True
                results[k].why_alone = "timed out starved of CPU" if result.starved else "the grader failed on it"
            if (result.starved or result.fault) and progress is not None:   # held back above: final now
                progress(results[k])
    finally:
        if worker is not None:
            worker.close()
        cgroups.wait_removed()                         # every group removed in the background so far is gone
        if overlay is not None:
            tree.remove(overlay)
    if overlay is not None:
        for r in results:
            if r.part.number.split(".")[0] == "6":
                r.output = f"{ON_REFERENCE_CELLS}\n{r.output}" if r.output else ON_REFERENCE_CELLS
    by_number = {r.part.number: r for r in results}
    for r in results:                                          # a backward builds on its forward
        if r.part.kind == "backward" and not r.passed:
            forward = by_number.get(r.part.number[:-1] + "1")
            if forward is not None and not forward.passed and forward.status != "not implemented":
                r.output += (f"\nNote: part {forward.part.number} ({forward.part.name}) fails too; "
                             "fix it first, since backward uses the values forward computes.")
    return results

"""Instructor only: build the reference data from fixed seeds with the solution in this repository.

    python -m autograder generate                    # the root course's data: autograder/data/*.npz, manifest.json
    python -m autograder generate --check            # recompute and compare with what is stored (exit 1 if not equal)
    python -m autograder generate --config FILE      # another course's data, for its own seed

The seed is the course's (``seed`` in course.toml's ``[assignment]``): the grader refuses data drawn from any
other, so to change it, change it there and run this again. Every part of every section is generated (a
handout built for fewer sections ships only theirs).

One checkout serves several courses. ``--config FILE`` generates the data of the course in FILE: if its seed is
the root data's, that data already serves it (and is what is written); otherwise its parts are written to
``autograder/data/seed-SEED/`` (``data.seed_dir``), the root course's data left as it is, and a handout or
platform build for that course (``python -m handout build --config FILE``) ships that data as its grader's own.

Cases come from ``spec.make_cases(part, seed)``. Expected outputs are computed by the same child process
the students' code runs in, on this repository's solution. For every known mistake that carries a hint
(``mistakes.HINTED``), the solution is copied with that mistake applied and run too; where its outputs
differ from the solution's, they are stored, so the grader can recognise the mistake in a student's arrays.
Every case is also run once more with tracing on, and the solution's named quantities (``tracing``) are
stored as the case's reference trace, which ``matching`` matches a failing student's values against.
Not shipped in the student handout.
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

from autograder.diagnosis import compare, diagnose, traces
from autograder.parts import course, data, spec
from autograder.sandbox import childspec, runner, zygotes

SEED = course.DEFAULT_SEED
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMITS = childspec.Limits(timeout=60)       # the solution's children: generous, it is trusted


def run_solution(root, part, configs, inputs, worker=None):
    """Outputs per case of the mytorch in ``root``; None for a case that raised (a mistake may crash)."""
    outcome = runner.run_child(childspec.ChildSpec(root, LIMITS, zygote=worker), configs, inputs)
    if outcome.failure:
        raise RuntimeError(f"part {part.number}: the code in {root} {outcome.failure}\n{outcome.output}")
    return [None if r["status"] != "ok" else {name: a for (case, name), a in outcome.arrays.items() if case == k}
            for k, r in enumerate(outcome.reports)], outcome.reports


def mutated_copy(mistake, into):
    """A copy of this repository's mytorch with ``mistake`` applied, under the folder ``into``."""
    shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(into, "mytorch"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    mistake.apply(into)
    return into


ASSIGNED = data.ASSIGNED


def assigned_variant(outputs):
    """What `grads[name] = …` instead of `+=` gives for every parameter, from the solution's own gradients.

    Asked to (``record_steps``), the driver records each gradient after every backward call of a multi-step case
    (``after_step/t/grad/NAME``, popped from ``outputs`` here: they are not graded). Assigning keeps only the last call's contribution:
    the final gradient minus the one before that call (the calls run from the last step down to step 0).
    """
    snapshots = {name: outputs.pop(name) for name in [n for n in outputs if n.startswith("after_step/")]}
    assigned = {}
    for name, final in outputs.items():
        before = snapshots.get(f"after_step/1/{name}")
        if name.startswith("grad/") and before is not None and not compare.close(final - before, final):
            assigned[name] = final - before
    return assigned


def reference_trace(config, inputs, workers=(None, None)):
    """(meta, values) of the solution's trace of one case (see ``tracing.Tracer.pack``), traced twice, by a child
    of each of two ``workers`` (zygotes, or None: a new Python each; two processes, so that their NumPy was
    seeded apart): a value that differs between the runs (random initial parameters) is no reference."""
    runs = [diagnose.trace_case(childspec.ChildSpec(REPO, LIMITS, zygote=worker), config, inputs) for worker in workers]
    if None in runs:
        raise RuntimeError(f"part {config.get('part')}: the solution could not be traced")
    trace = traces.stable(runs[0][0], runs[1][0])
    # … with the iteration each value is from (its loop variables' names and values) and its kind
    records = [[r.name, r.file, r.line, r.frame, r.function, list(r.reads), list(r.value.shape),
                [[n, list(v) if isinstance(v, tuple) else v] for n, v in r.at], r.loop]
               + ([r.kind] if r.kind != "f" else []) for r in trace.records]
    callers = {str(f): [c, file, line] for f, (c, file, line, _) in trace.callers.items()}
    flat = np.concatenate([r.value.ravel() for r in trace.records]) if trace.records else np.zeros(0)
    # the data ships to students: no solution source (texts), only names, places and values
    return {"records": records, "texts": {}, "lost": trace.lost, "callers": callers}, flat


def build_part(part, seed, with_hints=True, with_traces=True, workers=(None, None)):
    """(configs, inputs, expected, variants, hints, traces) for one part (traces None without ``with_traces``);
    ``workers``: two zygotes (``zygotes.running``; a child then costs a fork, not a Python start) or None."""
    from autograder.diagnosis import mistakes  # instructor-only module

    cases = spec.make_cases(part, seed)
    configs, inputs = [c for c, _ in cases], [i for _, i in cases]
    # record_steps: the gradients after every backward call too, from which `=` for `+=` is recognised
    expected, reports = run_solution(REPO, part, [dict(c, record_steps=True) for c in configs], inputs, workers[0])
    for k, (outputs, report) in enumerate(zip(expected, reports)):
        if outputs is None:
            raise RuntimeError(f"part {part.number} case {k + 1}: the solution raised {report['error']} at {report['where']}")
    variants, hints = [{} for _ in configs], {}
    for k, outputs in enumerate(expected):
        assigned = assigned_variant(outputs)
        if assigned:
            variants[k][ASSIGNED] = assigned
            hints[ASSIGNED] = mistakes.NOT_ACCUMULATED
    for mistake in (mistakes.HINTED if with_hints else ()):
        if part.number not in mistake.parts:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            outputs, _ = run_solution(mutated_copy(mistake, tmp), part, configs, inputs, workers[0])
        for k, case_outputs in enumerate(outputs):
            differing = {name: a for name, a in (case_outputs or {}).items()
                         if name in expected[k] and not compare.close(a, expected[k][name])
                         and name.startswith(mistake.arrays or "")}
            if differing:
                variants[k][mistake.id] = differing
                hints[mistake.id] = mistake.hint
    traces = [reference_trace(c, i, workers) for c, i in zip(configs, inputs)] if with_traces else None
    return configs, inputs, expected, variants, hints, traces


def generate(seed=None, parts=spec.PARTS, data_dir=data.DATA_DIR, generator="python -m autograder generate"):
    """Write ``parts``' data drawn from ``seed`` to ``data_dir``, and its manifest (which keeps the other parts
    already listed there, outside the grader's own data)."""
    seed = course.load_course().seed if seed is None else seed
    os.makedirs(data_dir, exist_ok=True)
    with zygotes.running(2) as workers:        # two: see reference_trace
        for part in parts:
            *built, traces = build_part(part, seed, workers=workers)
            data.write_part(part.number, *built, data_dir=data_dir, traces=traces)
            print(f"part {part.number}: {os.path.relpath(os.path.join(data_dir, data.file_name(part.number)))}")
    numbers = [p.number for p in (spec.PARTS if data_dir == data.DATA_DIR else parts)]
    if data_dir != data.DATA_DIR:             # a course's folder may hold more parts, from another course
        try:
            earlier = data.read_manifest(data_dir)
        except data.ReferenceDataError:
            earlier = {}
        if earlier.get("seed") == seed:
            listed = {n for n in earlier.get("files", {})}
            numbers += [p.number for p in spec.PARTS if data.file_name(p.number) in listed and p.number not in numbers
                        and os.path.isfile(os.path.join(data_dir, data.file_name(p.number)))]
        numbers = [p.number for p in spec.PARTS if p.number in numbers]
    data.write_manifest(seed, numbers, data_dir, generator)


def data_dir_of(the_course):
    """Where ``the_course``'s reference data lives in this checkout: the grader's own data when it was drawn from
    the course's seed (or the course is the root one), else ``data.seed_dir``."""
    if the_course.path is None or the_course.path == course.ROOT or \
            (os.path.isfile(course.ROOT) and os.path.samefile(the_course.path, course.ROOT)):
        return data.DATA_DIR
    try:
        root_seed = data.read_manifest()["seed"]
    except (data.ReferenceDataError, KeyError):
        root_seed = None
    return data.DATA_DIR if root_seed == the_course.seed else data.seed_dir(the_course.seed)


def check(seed=None, parts=spec.PARTS, workers=None, data_dir=data.DATA_DIR):
    """Recompute ``parts`` (the inputs, outputs and hinted arrays; not the traces) and compare with the stored
    data in ``data_dir``; return the list of differences. ``workers``: the solution's zygotes to compute with (as
    ``zygotes.running`` gives them; default: one started for this check)."""
    manifest = data.read_manifest(data_dir)
    seed = manifest["seed"] if seed is None else seed
    if workers is None:
        with zygotes.running(1) as workers:
            return check(seed, parts, workers, data_dir)
    return [problem for part in parts for problem in _check_part(part, seed, manifest, workers, data_dir)]


def _check_part(part, seed, manifest, workers, data_dir=data.DATA_DIR):
    """The differences between one part's stored data and a fresh computation."""
    problems = []
    if data.file_name(part.number) not in manifest["files"]:
        return [f"part {part.number}: no data stored in {os.path.relpath(data_dir)}"]
    stored = data.load_part(part.number, data_dir, manifest=manifest)
    configs, inputs, expected, variants, _, _ = build_part(part, seed, with_traces=False, workers=workers)
    if configs != stored.configs:
        return [f"part {part.number}: the case configs differ"]
    for k in range(len(configs)):
        for kind, mine, theirs in (("input", inputs[k], stored.inputs[k]), ("output", expected[k], stored.expected[k])):
            if mine.keys() != theirs.keys():
                problems.append(f"part {part.number} case {k + 1}: {kind} names differ")
            for name in mine.keys() & theirs.keys():
                if not np.array_equal(mine[name], theirs[name]) and not compare.close(mine[name], theirs[name]):
                    problems.append(f"part {part.number} case {k + 1}: {kind} {name} differs")
        stored_hints = {n for n in stored.variants[k]}
        fresh_hints = {n for outputs in variants[k].values() for n in outputs}
        if stored_hints != fresh_hints:
            problems.append(f"part {part.number} case {k + 1}: hinted arrays differ")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder generate",
                                     description="Instructor only: write the reference data a course's grader grades "
                                                 "against, from the course's seed and this repository's solution.")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="the course (default: course.toml); a course whose seed is not the root data's gets "
                             "its own data in autograder/data/seed-SEED/, which its handout build ships")
    parser.add_argument("--seed", type=int, default=None,
                        help="the course's seed, as a check: any other is refused, since the grader refuses data "
                             "drawn from a seed its course does not name (change seed in the course file instead)")
    parser.add_argument("--check", action="store_true", help="compare a fresh computation with the stored data")
    args = parser.parse_args(argv)
    try:
        the_course = course.load_course(args.config)
    except course.CourseError as error:
        parser.error(f"the course file is wrong: {error}")
    if args.seed is not None and args.seed != the_course.seed:
        parser.error(f"--seed {args.seed}: the course says seed = {the_course.seed} "
                     f"({the_course.path or 'the default'}); the grader refuses data drawn from another seed, "
                     "so set seed there and run this again")
    data_dir = data_dir_of(the_course)
    parts = spec.PARTS if data_dir == data.DATA_DIR else the_course.parts()
    parts = [spec.PARTS_BY_NUMBER[p.number] for p in parts]
    if args.check:
        try:
            problems = check(the_course.seed, parts, data_dir=data_dir)
        except data.ReferenceDataError as error:
            problems = [f"{error} ({course.generate_command(the_course)} writes it)"]
        print("\n".join(problems) if problems else "reference data matches the solution")
        return 1 if problems else 0
    generate(the_course.seed, parts, data_dir, course.generate_command(the_course))
    where = os.path.relpath(data_dir)
    print(f"reference data of seed {the_course.seed} in {where}" +
          ("" if data_dir == data.DATA_DIR else f" (the root course's data in {os.path.relpath(data.DATA_DIR)} "
                                                "is as it was)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

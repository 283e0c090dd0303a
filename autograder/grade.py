"""Grade a submission: one child process per part, every comparison and every score here in the parent.

This module never imports ``mytorch``. It loads and verifies the reference data (or, with a fresh seed,
draws new cases and has a separate child running the instructor's solution compute the references), sends
each part's inputs to a child that imports the submission, and judges the plain arrays that come back.
"""
import concurrent.futures
import dataclasses
import os

from autograder import compare, data, sandbox, spec, untrusted

PART_OUTPUT_LIMIT = 16000        # characters of one part's message: the results file stays well under 1 MB


@dataclasses.dataclass
class PartResult:
    part: spec.Part
    score: float
    status: str                  # passed | failed | not implemented | error
    output: str
    seconds: float = 0.0

    @property
    def passed(self):
        return self.status == "passed"


def describe_case(config):
    if config["kind"] == "ctc":                                # section 8 says its case in words
        return config["describe"]
    n = config["n"]
    words = ["unbatched" if n is None else f"N={n}", f"I={config['I']}", f"H={config['H']}"]
    if config["kind"] == "sequence":
        words += [f"T={config['steps']}", f"{config['layers']} layer{'s' if config['layers'] > 1 else ''}"]
        if config["batch_first"]:
            words.append("batch_first")
        if config.get("bidirectional"):
            words.append("bidirectional")
        if config.get("lengths") is not None:
            words.append(f"lengths={config['lengths']}")
    elif config["steps"] > 1:
        words.append(f"{config['steps']} steps forward then backward on one cell")
    if config["interface"] == "course":
        words.append("course interface: init_weights, Wrx … bnh, dWrx … dbnh")
    words += [f"{k}={v}" for k, v in config["flags"].items()]
    return ", ".join(words)


def judge_case(k, config, expected, variants, report, arrays, verbose):
    """(passed, message lines) for one case."""
    header = f"case {k + 1} ({describe_case(config)})"
    status = report.get("status")
    if status == "not_implemented":
        return False, [f"{header}: not implemented yet" + (f" ({report['error']})" if report.get("error") else "")]
    if status in ("error", "import_error"):
        lines = [f"{header}: {report.get('error', 'failed')}"]
        if report.get("where"):
            lines.append(f"  at {report['where']}")
        lines += [f"  Hint: {h}" for h in compare.error_hints(str(report.get("error", "")))]
        return False, lines
    failures = []
    if report.get("mutated"):
        failures.append(f"modified {', '.join(map(str, report['mutated']))} in place: never change inputs or "
                        "parameters in forward/backward (x += … changes the caller's array; use x = x + …)")
    batch = config["n"] or 1
    for name, reference in expected.items():
        verdict = compare.compare(name, arrays.get(name), reference, report.get("types", {}).get(name),
                                  variants.get(name, ()), batch)
        if not verdict.passed:
            failures.append(verdict.message + "".join(f"\n  Hint: {h}" for h in verdict.hints))
    if not failures:
        return True, [f"{header}: passed"] if verbose else []
    failures.sort(key=lambda message: "Hint:" not in message)        # those that say what went wrong first
    shown = failures if verbose else failures[:3]
    more = [] if len(shown) == len(failures) else [f"  … and {len(failures) - len(shown)} more arrays differ "
                                                   "(--verbose shows all)"]
    return False, [f"{header}: failed"] + ["  " + m.replace("\n", "\n  ") for m in shown] + more


def judge(part, part_data, outcome, verbose=False):
    """Score one part from the child's outcome."""
    cases = len(part_data.configs)
    if outcome.failure:
        lines = [f"Your code {outcome.failure}."]
        if outcome.output.strip():
            lines.append("Last output:\n" + "\n".join("  " + line for line in outcome.output.strip().splitlines()[-15:]))
        return PartResult(part, 0.0, "error", "\n".join(lines), outcome.seconds)
    errors = {(r.get("status"), r.get("error"), r.get("where")) for r in outcome.reports}
    if len(errors) == 1 and next(iter(errors))[0] == "error":          # one error, raised by every case
        _, lines = judge_case(0, part_data.configs[0], {}, {}, outcome.reports[0], {}, verbose)
        lines[0] = f"all {cases} cases: {outcome.reports[0].get('error', 'failed')}"
        return PartResult(part, 0.0, "failed", "\n".join([f"0 of {cases} cases passed"] + lines), outcome.seconds)
    passed, lines = 0, []
    for k in range(cases):
        arrays = {name: a for (case, name), a in outcome.arrays.items() if case == k}
        ok, case_lines = judge_case(k, part_data.configs[k], part_data.expected[k], part_data.variants[k],
                                    outcome.reports[k], arrays, verbose)
        passed += ok
        lines += case_lines
    statuses = {r.get("status") for r in outcome.reports}
    if statuses == {"not_implemented"}:
        return PartResult(part, 0.0, "not implemented", "not implemented yet", outcome.seconds)
    if statuses == {"import_error"}:
        r = outcome.reports[0]
        return PartResult(part, 0.0, "error", r["error"] + (f"\n  at {r['where']}" if r.get("where") else ""),
                          outcome.seconds)
    score = round(part.points * passed / cases, 2)
    status = "passed" if passed == cases else "failed"
    summary = f"{passed} of {cases} cases passed"
    return PartResult(part, score, status, "\n".join([summary] + lines), outcome.seconds)


def _fresh_part_data(part, seed, solution, timeout, memory_mb, python=None):
    """New cases from ``seed``, with references computed by a child running the instructor's solution."""
    cases = spec.make_cases(part, seed)
    configs, inputs = [c for c, _ in cases], [i for _, i in cases]
    outcome = sandbox.run_child(solution, configs, inputs, timeout=timeout, memory_mb=memory_mb, python=python)
    if outcome.failure or any(r.get("status") != "ok" for r in outcome.reports):
        problem = outcome.failure or next(r["error"] for r in outcome.reports if r.get("status") != "ok")
        raise data.ReferenceDataError(f"the reference solution in {solution} failed on part {part.number}: {problem}")
    expected = [{name: a for (case, name), a in outcome.arrays.items() if case == k} for k in range(len(configs))]
    return data.PartData(configs, inputs, expected, [{} for _ in configs])


def reference(part, fresh_seed, solution, timeout, memory_mb, manifest, python=None):
    """A part's verified reference data, or the ReferenceDataError that explains why there is none."""
    try:
        if fresh_seed is not None:
            return _fresh_part_data(part, fresh_seed, solution, timeout, memory_mb, python)
        if isinstance(manifest, data.ReferenceDataError):
            raise manifest
        return data.load_part(part.number, manifest=manifest)
    except data.ReferenceDataError as error:
        return error


def grade_part(part, part_data, root, timeout, memory_mb, verbose, user, python=None):
    if isinstance(part_data, data.ReferenceDataError):
        return PartResult(part, 0.0, "error", f"Cannot grade this part: {part_data}")
    try:
        outcome = sandbox.run_child(root, part_data.configs, part_data.inputs, timeout=timeout, memory_mb=memory_mb,
                                    user=user, python=python)
        result = judge(part, part_data, outcome, verbose)
    except Exception as error:          # a fault of the grader itself: this part scores 0, the others go on
        result = PartResult(part, 0.0, "error", f"The grader failed on this part ({type(error).__name__}: {error}); "
                                                "please report it to the course staff.")
    result.output = untrusted.text(result.output, PART_OUTPUT_LIMIT)
    return result


def references(parts, fresh_seed=None, solution=None, timeout=20.0, memory_mb=1024, jobs=None, python=None):
    """Every part's verified reference data (or its ReferenceDataError), read before any student code runs."""
    manifest = None
    if fresh_seed is None:
        try:
            manifest = data.read_manifest()
        except data.ReferenceDataError as error:
            manifest = error                                 # every part reports it; grading still finishes
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        return list(pool.map(lambda p: reference(p, fresh_seed, solution, timeout, memory_mb, manifest, python),
                             parts))


def grade(root, parts=None, timeout=20.0, memory_mb=1024, verbose=False, fresh_seed=None, solution=None,
          jobs=None, user=None, python=None, loaded=None):
    """Grade the ``mytorch`` in ``root`` on ``parts`` (default all). Returns a list of ``PartResult``.

    Every reference is loaded and verified (or computed by the solution) before any student code runs, so
    nothing a submission does to the files on disk can change this run's references; ``loaded``: the
    ``references(parts, ...)`` already read (batch grading reads them once for every submission).
    ``user``: a pwd entry to run student code as; ``python``: the child's interpreter.
    """
    parts = list(parts or spec.PARTS)
    jobs = jobs or os.cpu_count() or 1
    if loaded is None:
        loaded = references(parts, fresh_seed, solution, timeout, memory_mb, jobs, python)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda pr: grade_part(pr[0], pr[1], root, timeout, memory_mb, verbose, user, python),
                                zip(parts, loaded)))
    by_number = {r.part.number: r for r in results}
    for r in results:                                          # a backward builds on its forward
        if r.part.kind == "backward" and not r.passed:
            forward = by_number.get(r.part.number[:-1] + "1")
            if forward is not None and not forward.passed and forward.status != "not implemented":
                r.output += (f"\nNote: part {forward.part.number} ({forward.part.name}) fails too; "
                             "fix it first, since backward uses the values forward computes.")
    return results

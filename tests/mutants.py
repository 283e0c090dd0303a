"""Generic mistakes for testing the grader's diagnosis: AST mutations of every graded solution line.

A *graded line* is a statement inside a ``# BEGIN SOLUTION`` region (not an optional, ungraded one) whose
file:line the solution's stored reference trace of some part reaches. Each gets the mutations that apply to it:

    operator      the first binary operator replaced (+ -, * /, @ stays a product: @ becomes *)
    swapped       the operands of the first non-commutative operator (a - b, a / b, a @ b) swapped
    transpose     a ``.T`` removed, or added to a name multiplied by @
    variable      a name read replaced by another name the same function assigned earlier, of the same shape
                  (shapes from the reference trace)

The mutated statement is written back on its first line (a multi-line statement leaves blank lines), so every
line keeps its number. ``run_mutants`` grades mutants in one process per call, through the grader's own child
entry (``driver.run``), judge (``feedback.judge_part``) and diagnosis (``tracing`` + ``diagnosis``): the
submission is imported in this process, which only a test may do.

    python -m tests.mutants IN.json OUT.json [OUTPUTS]   # what run_mutants does, in a fresh process

With OUTPUTS (a folder), each mutant's raw output arrays are kept there too, as ``N.npz`` for the N-th mutant
of IN.json (the driver's keys, ``case:name``): tests/hint_audit.py compares them with the catalogue's.
"""
import ast
import collections
import io
import json
import os
import re
import select
import shutil
import signal
import sys
import tempfile
import time
import tokenize

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTION_FILES = ("nn/rnn_cell.py", "nn/gru_cell.py", "nn/gru_block_cell.py", "nn/gmu_cell.py", "nn/tgru_cell.py",
                  "nn/lstm_cell.py", "nn/recurrent.py", "nn/ctc.py", "nn/ctc_course.py", "nn/ctc_decode.py")
Mutant = collections.namedtuple("Mutant", "file line kind source targets part")


def solution_lines(source):
    """Line numbers inside graded solution regions."""
    lines, inside = set(), False
    for number, text in enumerate(source.splitlines(), 1):
        stripped = text.strip()
        if stripped.startswith("# BEGIN SOLUTION"):
            inside = "optional" not in stripped
        elif stripped.startswith("# END SOLUTION"):
            inside = False
        elif inside:
            lines.add(number)
    return lines


def reached_lines():
    """{(file in the repo, line): (first part whose reference trace reaches it, its function, {name: shape} of
    every value that function assigns)}."""
    from autograder.diagnosis import traces
    from autograder.parts import data, spec

    reached, functions = {}, {}
    manifest = data.read_manifest()
    for part in spec.PARTS:
        stored = data.load_part(part.number, manifest=manifest)
        for k, trace in enumerate(stored.traces or ()):
            if trace is None:
                continue
            for record in traces.parse(*trace).records:
                shapes = functions.setdefault((record.file, record.function), {})
                shapes.setdefault(record.name, record.value.shape)
                reached.setdefault((record.file, record.line), (part.number, record.function, shapes))
    return reached


class _First(ast.NodeTransformer):
    """Applies ``change`` to the first node it accepts, once."""

    def __init__(self, change):
        self.change, self.done = change, False

    def visit(self, node):
        if not self.done:
            new = self.change(node)
            if new is not None:
                self.done = True
                return new
        return self.generic_visit(node)


SWAP_OP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.MatMult: ast.Mult}


def _operator(node):
    if isinstance(node, ast.BinOp) and type(node.op) in SWAP_OP:
        return ast.BinOp(node.left, SWAP_OP[type(node.op)](), node.right)
    return None


def _swapped(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Div, ast.MatMult)):
        return ast.BinOp(node.right, node.op, node.left)
    return None


def _transpose(node):
    if isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.ctx, ast.Load):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and isinstance(node.left, ast.Name):
        return ast.BinOp(ast.Attribute(node.left, "T", ast.Load()), node.op, node.right)
    return None


def _variable(shapes, assigned):
    def change(node):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in shapes:
            others = [n for n in assigned if n != node.id and shapes.get(n) == shapes[node.id]]
            if others:
                return ast.Name(others[-1], ast.Load())
        return None
    return change


def _targets(statement):
    if isinstance(statement, ast.Return):
        return []
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    names = []
    for target in targets:
        names += [ast.unparse(e) for e in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])]
    return names


def fresh(entries=None):
    """tests/fresh_mistakes.py's mistakes (or ``entries``, dicts of the same form) as mutants (kind 'fresh'): the
    quantity is what the solution's statement at the mistake's line assigns (nothing for a loop's head: its line
    alone is looked for)."""
    if entries is None:
        from tests.fresh_mistakes import FRESH as entries

    found = []
    for mistake in entries:
        with open(os.path.join(REPO, mistake["file"])) as f:
            source = f.read()
        assert source.count(mistake["old"]) == 1 and mistake["old"].count("\n") == mistake["new"].count("\n"), mistake
        first = source[:source.index(mistake["old"])].count("\n") + 1       # the line stays the edit's own
        assert first <= mistake["line"] < first + max(1, mistake["old"].count("\n")), mistake
        at = [node for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.Assign, ast.AugAssign, ast.Return))
              and node.lineno <= mistake["line"] <= node.end_lineno]
        found.append(Mutant(mistake["file"], mistake["line"], "fresh", source.replace(mistake["old"], mistake["new"]),
                            _targets(at[0]) if at else [], mistake["part"]))
    return found


def mutants():
    """Every mutant of every graded line (see the module docstring)."""
    reached, found = reached_lines(), []
    for path in SOLUTION_FILES:
        file = f"mytorch/{path}"
        with open(os.path.join(REPO, file)) as f:
            source = f.read()
        graded, lines = solution_lines(source), source.splitlines()
        for function in ast.walk(ast.parse(source)):
            if not isinstance(function, ast.FunctionDef):
                continue
            assigned = []
            for statement in ast.walk(function):
                if not isinstance(statement, (ast.Assign, ast.AugAssign, ast.Return)) or statement.value is None:
                    continue
                key = (file, statement.lineno)
                if statement.lineno not in graded or key not in reached:
                    assigned += [t for t in _targets(statement) if t.isidentifier()]
                    continue
                part, _, shapes = reached[key]
                for kind, change in (("operator", _operator), ("swapped", _swapped), ("transpose", _transpose),
                                     ("variable", _variable(shapes, list(dict.fromkeys(assigned))))):
                    tree = ast.parse(ast.unparse(statement))          # a fresh copy of the statement
                    text = ast.unparse(_First(change).visit(tree))
                    if text == ast.unparse(statement):
                        continue
                    indent = re.match(r"\s*", lines[statement.lineno - 1]).group(0)
                    span = (statement.end_lineno or statement.lineno) - statement.lineno
                    new = lines[:statement.lineno - 1] + [indent + text] + [""] * span + lines[statement.end_lineno:]
                    found.append(Mutant(file, statement.lineno, kind, "\n".join(new) + "\n", _targets(statement),
                                        part))
                assigned += [t for t in _targets(statement) if t.isidentifier()]
    return found


# ---- grading mutants in this process

def _purge():
    for name in [n for n in sys.modules if n == "mytorch" or n.startswith("mytorch.")]:
        del sys.modules[name]


class _Slow(Exception):
    pass


def _alarm(signum, frame):
    raise _Slow()


def compiled_solution(root):
    """{path under ``root``: checked pyc} of every file of the solution's mytorch, as if it were copied to
    ``root`` (the grader's own ``bytecode.known_sources``): a mutant's import (``worker.source_only``) then
    compiles only its mutated file, whose source no longer hashes the same."""
    from autograder.sandbox import bytecode
    return {os.path.join(root, *relative.split("/")): pyc for relative, pyc in bytecode.known_sources(REPO).items()}


def solution_copy(root):
    """The solution's mytorch copied to ``root`` (``root``/mytorch), for ``grade_mutant``."""
    shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(root, "mytorch"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return root


def grade_mutant(mutant, part_data, part, root, pycs=None, outputs=None):
    """``(lost points, report)`` of one mutant: its part graded and, if it loses points, diagnosed. ``root``: a
    ``solution_copy``, whose mutated file this writes (``restore`` puts it back). ``pycs``:
    ``compiled_solution(root)``, imported as a part's child imports a submission (``worker.source_only``;
    call in the mutant's forked child only). ``outputs``: a path where the arrays every case returned are saved
    (``np.savez``, keyed ``case:name`` as the driver keys them)."""
    from autograder.diagnosis import diagnose, differences, feedback, traces, tracing, wording
    from autograder.parts import driver
    from autograder.sandbox import runner, worker

    with open(os.path.join(root, mutant.file), "w") as f:
        f.write(mutant.source)
    if pycs:
        worker.source_only(root, pycs)
    _purge()
    sys.path.insert(0, root)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    try:
        import mytorch
        inputs = [{k: v.copy() for k, v in i.items()} for i in part_data.inputs]
        arrays, report = driver.run(mytorch, root, part_data.configs, inputs)
        if outputs:
            import numpy as np
            np.savez(outputs, **arrays)
        arrays = {(int(key.split(":", 1)[0]), key.split(":", 1)[1]): v for key, v in arrays.items()}
        outcome = runner.Outcome(reports=json.loads(report), arrays=arrays)

        def where_it_goes_wrong(k, wrong):            # as grade.grade_part, with the case run here
            result = driver.run_case(mytorch, root, dict(part_data.configs[k], trace=True),
                                     {n: v.copy() for n, v in part_data.inputs[k].items()}, tracing)
            if result.trace is None:
                return []
            student = traces.parse(json.loads(json.dumps(result.trace[0])), result.trace[1])   # as sent
            reference = diagnose.reference_trace(part_data, k)
            lines = wording.explain(reference, student, wording.Case(
                part_data.configs[k], part_data.inputs[k], differences.gate_blocks(wrong or (), part_data.configs[k]),
                raised=wrong is None))
            return lines if wrong is not None or wording.names_a_value(lines) else []
        score, status, text, _ = feedback.judge_part(part, part_data, outcome, diagnose=where_it_goes_wrong)
    except BaseException as error:                    # a mutant that hangs or breaks the run: not counted
        return None, f"{type(error).__name__}"
    finally:
        signal.alarm(0)
        sys.path.remove(root)
        _purge()
    return part.points - score, text


def restore(mutant, root):
    """Put the solution's file back where ``grade_mutant`` wrote ``mutant``."""
    shutil.copyfile(os.path.join(REPO, mutant.file), os.path.join(root, mutant.file))


CPU_SECONDS = 2                  # a mutant takes ~0.1 s of CPU; one that runs away is ended (and not counted)


def _forked(function, seconds):
    """``function()`` in a forked child (its memory, its imports) within ``seconds``: its JSON result, or
    (None, why) if it hung, blew its memory or died."""
    import resource

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                      # the child: one mutant, then gone
        os.close(read)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))     # a mutant that loops
            payload = json.dumps(function()).encode()
        except BaseException as error:
            payload = json.dumps([None, type(error).__name__]).encode()
        with os.fdopen(write, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(write)
    chunks, deadline = [], time.monotonic() + seconds
    with os.fdopen(read, "rb") as f:
        os.set_blocking(f.fileno(), False)
        while time.monotonic() < deadline:
            ready, _, _ = select.select([f], [], [], 0.2)
            if ready:
                chunk = f.read()
                if not chunk:
                    break
                chunks.append(chunk)
    if os.waitpid(pid, os.WNOHANG) == (0, 0):        # still running: out of time
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return [None, "timeout"]


def run_mutants(items, outputs=None):
    """Grade ``items`` (Mutant tuples), each in a forked child: [(mutant, lost points, report)]. ``outputs``: a
    folder where the n-th mutant's output arrays are saved as ``n.npz`` (see ``grade_mutant``)."""
    import importlib

    from autograder.parts import data, spec
    for name in ("diagnosis.matching", "diagnosis.wording", "diagnosis.diagnose", "parts.driver", "diagnosis.feedback", "sandbox.runner", "diagnosis.tracing",
                 "sandbox.worker"):                                      # once, not in every child
        importlib.import_module(f"autograder.{name}")
    # what a child would otherwise set up each time: numpy.random (imported on first use, by a cell's rng) and
    # tokenize's patterns
    importlib.import_module("numpy.random")
    list(tokenize.generate_tokens(io.StringIO("x = 1\n").readline))

    results, cache = [], {}
    with tempfile.TemporaryDirectory() as work:
        root = solution_copy(os.path.join(work, "sub"))   # copied once: each mutant changes one file of it
        pycs = compiled_solution(root)
        for n, mutant in enumerate(items):
            mutant = Mutant(*mutant)
            if mutant.part not in cache:
                cache[mutant.part] = data.load_part(mutant.part)
                cache[mutant.part].traces[0]              # read once here, not in every forked child
            saved = os.path.join(outputs, f"{n}.npz") if outputs else None
            lost, text = _forked(lambda: grade_mutant(mutant, cache[mutant.part],
                                                      spec.PARTS_BY_NUMBER[mutant.part], root, pycs, saved), 15)
            restore(mutant, root)
            results.append((mutant, lost, text))
    return results


def names_line(text, mutant):
    """The report names the mutated line, or the one before or after it."""
    return any(f"{mutant.file}:{line}" in text for line in (mutant.line - 1, mutant.line, mutant.line + 1))


def names_quantity(text, mutant):
    """The report names what the mutated line computes: the diagnosis names it (```da```, ``return of f`` for a
    return), or an error is located at the statement that assigns it (``at …:74 in backward: da = …``; or at the
    mutated statement itself, whose target the mutation may have changed: ``lb[T + 1] = …``), or an argument the
    mutated line passes is the first wrong quantity (``your line passes … at FILE:LINE``), or, for a loop's head
    (which assigns nothing), the report names that loop (``your loop at FILE:LINE``)."""
    quantities = [t.replace('"', "'") for t in mutant.targets] or ["return of "]
    text = text.replace('"', "'")
    located = re.findall(r"^\s*at (mytorch/\S+):(\d+) in \S+: (.*)$", text, re.M)
    passes = re.search(rf"your line passes .* at {re.escape(mutant.file)}:{mutant.line}\b", text) or \
        not mutant.targets and re.search(rf"your loop at {re.escape(mutant.file)}:{mutant.line}\b", text)
    return bool(passes) or any(f"`{q}" in text for q in quantities) or any(
        re.match(rf"(\w+, )*{re.escape(q)}(, \w+)* *(\+|-|\*)?=", line) for q in quantities for _, _, line in located) \
        or bool(mutant.targets) and any(path == mutant.file and int(number) == mutant.line for path, number, _ in located)


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    with open(sys.argv[1]) as f:
        items = json.load(f)
    graded = run_mutants(items, sys.argv[3] if len(sys.argv) > 3 else None)
    with open(sys.argv[2], "w") as f:
        json.dump([[list(m), lost, text] for m, lost, text in graded], f)

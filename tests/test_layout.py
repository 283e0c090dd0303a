"""The autograder's packages import one way, bottom up, with no circle (read from the source with ``ast``).

    sandbox < parts < diagnosis < the grading core (grade, preflight, cli) < instructor < __main__

A module may import from its own layer or any below it, and the package root (``autograder``: constants only)
from anywhere. The grader code a child loads by path imports nothing of the grader's at all: in the child,
``import autograder`` would find whatever the submission's folder holds under that name.
"""
import ast
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRADER = os.path.join(REPO, "autograder")
LAYERS = {"sandbox": 0, "parts": 1, "diagnosis": 2, "grade": 3, "preflight": 3, "cli": 3, "instructor": 4, "__main__": 5}


def _modules():
    """{dotted name: path} of every module of the autograder package."""
    found = {}
    for folder, dirs, files in os.walk(GRADER):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(folder, name), REPO)[:-3].split(os.sep)
                found[".".join(relative[:-1] if relative[-1] == "__init__" else relative)] = os.path.join(folder, name)
    return found


def _imports(dotted, path):
    """The autograder modules ``path`` imports (at any depth of its code), by dotted name."""
    package = dotted if path.endswith("__init__.py") else dotted.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "autograder"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "autograder":
                continue
            for alias in node.names:                      # "from autograder.sandbox import reaper": a module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return found


MODULES = _modules()
GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(dotted):
    parts = dotted.split(".")
    return None if len(parts) == 1 else LAYERS[parts[1]]


def test_every_module_belongs_to_a_layer():
    assert {name.split(".")[1] for name in MODULES if "." in name} == set(LAYERS)


def _upward(graph, name):
    return sorted(target for target in graph[name]
                  if _layer(target) is not None and _layer(name) is not None and _layer(target) > _layer(name))


def _circle(graph):
    """The first circle a depth-first search meets (a module met again on the current path), else None."""
    state, path = {}, []

    def visit(name):
        state[name] = "open"
        path.append(name)
        for target in sorted(graph.get(name, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target in graph and target not in state:
                found = visit(target)
                if found:
                    return found
        path.pop()
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_go_down_or_across_never_up(name):
    upward = _upward(GRAPH, name)
    assert not upward, f"{name} (layer {_layer(name)}) imports {upward}, above it: move the code or the import"


def test_no_circle():
    assert _circle(GRAPH) is None, "import circle: " + " -> ".join(_circle(GRAPH))


def test_the_checks_find_an_upward_import_and_a_circle():
    """What the two checks above would say of the sandbox importing the diagnosis, and of ipc and reaper
    importing each other (as they once did)."""
    graph = {name: set(targets) for name, targets in GRAPH.items()}
    graph["autograder.sandbox.ipc"].add("autograder.diagnosis.report")
    graph["autograder.sandbox.ipc"].add("autograder.sandbox.reaper")
    assert _upward(graph, "autograder.sandbox.ipc") == ["autograder.diagnosis.report"]
    circle = _circle(graph)
    assert circle[0] == circle[-1] and sorted(circle[1:]) == ["autograder.sandbox.ipc", "autograder.sandbox.reaper"]


def test_the_code_a_child_loads_by_path_imports_nothing_of_the_grader():
    from autograder.sandbox import worker
    loaded = [f"autograder.{package}.{name}" for name, package in worker.CHILD_CODE.items()]
    for name in loaded + ["autograder.sandbox.worker", "autograder.diagnosis.places"]:
        assert os.path.isfile(MODULES[name])
        assert not GRAPH[name], f"{name} runs in the child and imports {sorted(GRAPH[name])}"


def _imported_as_loaded(path):
    """The modules ``path`` imports as it is loaded: at its top, and in any statement there but a function's or
    a class's body (``from a import b``: ``a.b``)."""
    found, todo = set(), list(ast.parse(open(path, encoding="utf-8").read()).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        todo += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
    return found


def test_the_checks_that_run_before_anything_is_imported_import_nothing_more():
    """``__main__`` imports ``preflight``, whose first check (the folders a module is looked for in) must run
    before anything a sandbox user could have planted is imported: loading either imports os, sys and the
    autograder package alone (loaded already), every other import waits inside a function."""
    assert _imported_as_loaded(MODULES["autograder.preflight"]) <= {"os", "sys", "autograder"}
    assert _imported_as_loaded(MODULES["autograder.__main__"]) <= {"os", "sys", "autograder.preflight"}
    code = ("import sys, autograder; before = set(sys.modules); import autograder.__main__; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=""), check=True).stdout.split()
    assert loaded == ["autograder.__main__", "autograder.preflight"]


def test_the_checks_know_every_grader_file_a_child_opens_by_path():
    """``preflight.child_files``, which each sandbox user must be able to read, names the worker a spawned child
    is started with, every module the worker loads by path (``worker.CHILD_CODE``), every one those load so in
    turn (``_grader_module``), and the zygote."""
    from autograder import preflight
    from autograder.sandbox import worker
    named = {os.path.relpath(path, GRADER) for path in preflight.child_files()}
    loaded = {os.path.join(package, f"{name}.py") for name, package in worker.CHILD_CODE.items()}
    for name in ["autograder.sandbox.worker"] + [f"autograder.{package}.{name}" for name, package
                                                  in worker.CHILD_CODE.items()]:
        for call in ast.walk(ast.parse(open(MODULES[name], encoding="utf-8").read())):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "_grader_module":
                loaded.add(os.path.join(call.args[0].value, f"{call.args[1].value}.py"))
    assert "diagnosis/places.py" in loaded
    assert loaded | {"sandbox/worker.py", "sandbox/zygote.py"} <= named
    assert all(os.path.isfile(path) for path in preflight.child_files())

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


# ---------------------------------------------------------------- what runs at import runs on macOS and Windows
#
# The *portable surface*: the modules a student's command loads (``python -m autograder``, ``... handin``) and
# the child's entry, with every module they import as they are loaded (an import inside a function waits until
# it is called; the packages above a module are loaded before it). Students run those on macOS and Windows too
# (tests/platforms simulates both), so nothing in them may import a POSIX-only module, or read a name only Linux
# has, as it is loaded: in a module's statements, class bodies, default values and decorators. Code under a test
# of the platform (``sys.platform``, ``os.name``, ``platform.system()``) or of ``hasattr``, or in a ``try`` that
# catches ImportError or AttributeError, is taken to know what it does.

ENTRY_POINTS = ("autograder.__main__", "autograder.cli", "autograder.grade", "autograder.instructor.handin",
                "autograder.sandbox.worker")
POSIX_ONLY = frozenset({"resource", "pwd", "grp", "fcntl", "termios", "pty", "tty", "crypt", "spwd", "syslog",
                        "posix"})
LINUX_ONLY = frozenset({
    "os.geteuid", "os.getuid", "os.sched_getaffinity", "os.uname", "os.O_DIRECTORY", "os.O_NOFOLLOW", "os.O_PATH",
    "os.O_CLOEXEC", "os.O_NONBLOCK", "os.fork", "os.killpg", "os.getpgid", "os.setsid", "os.wait4", "os.waitid",
    "os.WNOHANG", "ctypes.CDLL", "socket.AF_UNIX", "socket.SOCK_SEQPACKET", "socket.send_fds", "socket.recv_fds",
    "signal.SIGKILL", "signal.SIGSTOP", "signal.SIGCHLD", "signal.SIGXCPU", "signal.SIGXFSZ"})
PLATFORM_TESTS = ("sys.platform", "os.name", "platform.system", "hasattr(")
GUARDING_ERRORS = ("ImportError", "ModuleNotFoundError", "AttributeError", "Exception", "BaseException")


def _targets(package, node, modules):
    """The autograder modules the import statement ``node`` (in ``package``) loads, by dotted name."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name.split(".")[0] == "autograder"}
    base = node.module or ""
    if node.level:
        base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
    if base.split(".")[0] != "autograder":
        return set()
    return {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names}


def _guards(test):
    return any(word in ast.unparse(test) for word in PLATFORM_TESTS)


def _catches(handler):
    names = [] if handler.type is None else [ast.unparse(e) for e in getattr(handler.type, "elts", [handler.type])]
    return handler.type is None or any(name.split(".")[-1] in GUARDING_ERRORS for name in names)


def _at_import(dotted, source, is_package, modules):
    """``(autograder modules loaded, offences)`` of a module as it is loaded: offences as ``(line, name)``."""
    package = dotted if is_package else dotted.rpartition(".")[0]
    tree = ast.parse(source)
    aliases = {}                      # local name -> module, from the imports run at load time
    loaded, found, evaluated = set(), [], []

    def statements(body, guarded):
        for node in body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value,
                                                                                                   str):
                continue                                          # a docstring
            statement(node, guarded)

    def statement(node, guarded):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            loaded.update(_targets(package, node, modules))
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for alias in node.names:
                if isinstance(node, ast.Import):
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or \
                        alias.name.split(".")[0]
                elif not guarded and f"{node.module}.{alias.name}" in LINUX_ONLY:
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
            if not guarded and not getattr(node, "level", 0):
                found.extend((node.lineno, n) for n in names if n.split(".")[0] in POSIX_ONLY)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            evaluated.extend((e, guarded) for e in node.decorator_list + node.args.defaults
                             + [d for d in node.args.kw_defaults if d is not None])
        elif isinstance(node, ast.ClassDef):
            evaluated.extend((e, guarded) for e in node.decorator_list + node.bases
                             + [k.value for k in node.keywords])
            statements(node.body, guarded)
        elif isinstance(node, ast.If):
            evaluated.append((node.test, guarded))
            statements(node.body, guarded or _guards(node.test))
            statements(node.orelse, guarded or _guards(node.test))
        elif isinstance(node, ast.Try):
            statements(node.body, guarded or any(_catches(h) for h in node.handlers))
            for handler in node.handlers:
                statements(handler.body, guarded)
            statements(node.orelse + node.finalbody, guarded)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    statement(child, guarded)
                else:
                    evaluated.append((child, guarded))

    def expression(node, guarded):
        if isinstance(node, ast.Lambda):
            for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
                expression(default, guarded)
            return                                                # its body runs when it is called
        if isinstance(node, ast.IfExp):
            expression(node.test, guarded)
            expression(node.body, guarded or _guards(node.test))
            expression(node.orelse, guarded or _guards(node.test))
            return
        if not guarded and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and f"{aliases.get(node.value.id)}.{node.attr}" in LINUX_ONLY:
            found.append((node.lineno, f"{aliases[node.value.id]}.{node.attr}"))
        text = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
        if not guarded and isinstance(text, ast.Constant) and isinstance(text.value, str) \
                and (text.value == "/proc" or text.value.startswith("/proc/")):
            found.append((node.lineno, repr(text.value) if text is node else f"f{text.value!r}..."))
            return
        for child in ast.iter_child_nodes(node):
            expression(child, guarded)

    statements(tree.body, False)
    for node, guarded in evaluated:
        expression(node, guarded)
    return loaded, sorted(set(found))


def _portable_surface(graph, entries=ENTRY_POINTS):
    """The modules ``entries`` load as they are loaded, with the packages above each (loaded first)."""
    todo, seen = list(entries), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:k]) for k in range(1, len(parts))] + sorted(graph[name])
    return seen


def _offences(modules, sources):
    """``module:line: name`` of every offence in the portable surface of ``sources`` ({dotted name: (source,
    is a package)}), in order."""
    read = {name: _at_import(name, source, is_package, modules) for name, (source, is_package) in sources.items()}
    surface = _portable_surface({name: loaded for name, (loaded, _) in read.items()})
    return [f"{name}:{line}: {what}" for name in sorted(surface) for line, what in read[name][1]]


SOURCES = {name: (open(path, encoding="utf-8").read(), path.endswith("__init__.py")) for name, path in MODULES.items()}


def test_what_students_run_imports_and_reads_nothing_only_linux_has_as_it_is_loaded():
    offences = _offences(MODULES, SOURCES)
    assert not offences, ("Linux-only code runs as the grader is loaded, so it cannot start on macOS or Windows "
                          "(move it into a function, or under a test of sys.platform):\n" + "\n".join(offences))


def test_the_portable_surface_check_finds_what_a_module_reads_as_it_is_loaded():
    """A planted set of modules: what each offence is, where the rule looks and where it does not (a function's
    body, a guarded branch, a module no entry point loads)."""
    planted = {
        "autograder": ("", True),
        "autograder.__main__": ("from autograder import cli\n", False),
        "autograder.cli": ("import os\nfrom . import helpers\n\n\ndef later():\n    import pwd\n    return os.fork()\n",
                           False),
        "autograder.helpers": ('"""/proc is read here (a docstring)."""\nimport os as system\nimport resource\n'
                               "import signal\nimport sys\nfrom socket import AF_UNIX\n"
                               "FLAGS = system.O_RDONLY | system.O_DIRECTORY\n"
                               "if sys.platform == 'linux':\n    import fcntl\n    SELF = '/proc/self'\n"
                               "try:\n    import grp\nexcept ImportError:\n    grp = None\n"
                               "WAIT = system.WNOHANG if hasattr(system, 'WNOHANG') else 0\n\n\n"
                               "class Child:\n    KILL = signal.SIGKILL\n\n    def stop(self, how=signal.SIGSTOP):\n"
                               "        return system.killpg(0, how)\n\n\n"
                               "TASKS = f'/proc/{system.getpid()}/task'\n", False),
        "autograder.instructor": ("", True),
        "autograder.instructor.batch": ("import termios\n", False),          # no entry point loads it
    }
    found = _offences(set(planted), planted)
    assert found == ["autograder.helpers:3: resource", "autograder.helpers:6: socket.AF_UNIX",
                     "autograder.helpers:7: os.O_DIRECTORY", "autograder.helpers:19: signal.SIGKILL",
                     "autograder.helpers:21: signal.SIGSTOP", "autograder.helpers:25: f'/proc/'..."]

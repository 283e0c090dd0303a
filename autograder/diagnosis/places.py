"""Where in a student's sequence layer a recognised BPTT mistake lives: the line to look at.

A BPTT mistake (layers walked bottom-up in backward, time walked forwards, the gradient from the step after
dropped, dY[t] missed, padded steps not masked) raises nothing: the grader recognises it from the values
(``compare``'s stored variants). Its hint then names the student's line that decides it, found in the
child by reading the methods of the student's layer with ``ast``:

    layer loop      the first ``for`` of ``backward`` (the walk over layers)
    time loop       the first ``for`` of ``_backward_direction`` (the walk over steps)
    step gradient   the first statement of that loop reading ``dY`` (else its ``cell.backward`` call)
    state kept      the first statement of ``_run_direction``'s loop assigning ``state``
    masked gradient the ``cell.backward`` call of ``_backward_direction``'s loop
    grads assigned  the first ``grads[name] = …`` (not ``+=``) of the layer's cell's ``backward``: a new array
                    bound where the layer shares the cell's own (``self.grads``, or a name given it)

``find`` runs in the child on untrusted code and never raises; its strings are untrusted data to the parent,
which only bounds them and shows them (``feedback``). Standard library only: the child loads this file by path
before any student code runs.
"""
import ast
import os

# hints of recognised BPTT mistakes (stored with the reference data by the generator), and the place each names
FUTURE_DROPPED = ("these values are what BPTT without the gradient from step t+1 would give: at step t the "
                  "gradient reaching the new state is d_state (what the backward of step t+1 returned, or "
                  "d_state_T at the last step) plus dY[t] on its h")
TIME_NOT_REVERSED = ("these values are what walking time forwards in backward would give: each cell's record "
                     "is last-in first-out, so backward takes the steps in the opposite order of forward "
                     "(T-1 down to 0, or 0 up to T-1 in the reverse direction)")
ONLY_LAST_DY = ("these values are what using only the last step's dY would give: every Y[t] is an output, so "
                "dY[t] joins the gradient of h at every step t")
DY_DROPPED = ("these values are what BPTT without dY would give: only d_state_T flows back; every Y[t] is an "
              "output, so dY[t] joins the gradient of h at every step t")
IGNORES_LENGTHS = ("these values are what running past each sequence's end would give: at a padded step "
                   "(t >= lengths[n]) the state must stay as it was (np.where(live[t], new, old) on each part) "
                   "and the output be zero")
IGNORES_LENGTHS_BACKWARD = ("these gradients are what backpropagating through padded steps would give: at a "
                            "padded step (t >= lengths[n]) nothing reaches the cell (zero its rows of the "
                            "gradient you pass to cell.backward) and d_state passes the step by unchanged")
LAYER_ORDER = ("in BPTT the gradient reaching layer l's outputs is the dX that layer l + 1 just returned: walk "
               "the layers from the top down, reversed(range(num_layers))")

PLACE_OF = {LAYER_ORDER: "layer loop", TIME_NOT_REVERSED: "time loop", FUTURE_DROPPED: "step gradient",
            ONLY_LAST_DY: "step gradient", DY_DROPPED: "step gradient", IGNORES_LENGTHS: "state kept",
            IGNORES_LENGTHS_BACKWARD: "masked gradient"}
GRADS_ASSIGNED = "grads assigned"        # the place of compare.ZERO_GRAD_SEQUENCE, which is said only with it


METHODS = ("backward", "_backward_direction", "_run_direction")


def _function(layer, name):
    """(ast of the method, its file, 1: its nodes' lines are the file's), or None. ``ast.parse`` is C, where
    ``inspect.getsourcelines`` tokenizes in Python (with regular expressions each child compiles again)."""
    method = getattr(type(layer), name, None)
    code = getattr(method, "__code__", None)
    if code is None:
        return None
    node = _own_definition(code)
    if node is None:                                 # its lines are not one definition: found in the whole file
        node = next((n for n in ast.walk(_parsed(code.co_filename)) if isinstance(n, DEFINITIONS)
                     and n.name == code.co_name
                     and min([n.lineno] + [d.lineno for d in n.decorator_list]) == code.co_firstlineno), None)
    return None if node is None else (node, code.co_filename, 1)


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _own_definition(code):
    """The ast of the definition ``code`` comes from, parsed from its own lines alone (from its first, a
    decorator's, to the last its instructions come from; blank lines before them, under an ``if 1:`` when
    indented, keep the file's line numbers), or None. Every sequence part's child reads them (once, for its first
    case): three methods, not their whole file, take 4 ms instead of 11 (the solution's layer)."""
    if not hasattr(code, "co_positions"):             # Python before 3.11
        return None
    first = code.co_firstlineno
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=first)
    with open(code.co_filename, "rb") as f:
        lines = f.read().splitlines(True)[first - 1:last]
    indented = bool(lines) and lines[0][:1].isspace()
    try:
        tree = ast.parse(b"if 1:\n" + b"\n" * (first - 2) + b"".join(lines) if indented
                         else b"\n" * (first - 1) + b"".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = tree.body[0].body if indented and tree.body and isinstance(tree.body[0], ast.If) else tree.body
    node = body[0] if len(body) == 1 else None
    return node if isinstance(node, DEFINITIONS) and node.name == code.co_name else None


_trees = {}                      # file -> its ast, for a method whose own lines are not one definition


def _parsed(filename):
    if filename not in _trees:
        with open(filename, "rb") as f:
            _trees[filename] = ast.parse(f.read(), filename)
    return _trees[filename]


def _first_for(node):
    return next((n for n in ast.walk(node) if isinstance(n, ast.For)), None)


def _order_of(function, loop):
    """The statement that decides the order ``loop`` walks in: the last assignment, before it, of the name it
    iterates over (``steps = reversed(range(T))`` before ``for t in steps:``), else the loop itself."""
    if loop is None or not isinstance(loop.iter, ast.Name):
        return loop
    assigned = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                and n.lineno < loop.lineno and _assigns(n, loop.iter.id)]
    return max(assigned, key=lambda n: n.lineno, default=loop)


def _reads(node, name):
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def _calls_backward(node):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
               for n in ast.walk(node))


def _assigns(node, name):
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets if t is not None for n in ast.walk(t))


def _grads_names(function):
    """The names a cell's backward gives its ``self.grads`` (``g = self.grads``), and ``self.grads`` itself."""
    names = {"self.grads"}
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:                  # g = self.grads; p, g = self.params, self.grads
            pairs = zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple) and isinstance(
                node.value, ast.Tuple) and len(target.elts) == len(node.value.elts) else [(target, node.value)]
            names.update(t.id for t, v in pairs if isinstance(t, ast.Name) and ast.unparse(v) == "self.grads")
    return names


def _binds_a_gradient(node, names):
    """Whether ``node`` is ``grads["name"] = …`` (a plain assignment, not ``+=``) into one of ``names``."""
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Subscript) and ast.unparse(t.value) in names for t in node.targets)


def _statement(loop, test):
    """The first statement in ``loop``'s body (at any depth) that passes ``test``."""
    for node in ast.walk(loop):
        if node is not loop and isinstance(node, ast.stmt) and not isinstance(node, (ast.For, ast.If, ast.While)) \
                and test(node):
            return node
    return None


def _places(layer, root):
    found, root = {}, os.path.realpath(root)

    def put(key, where, node):
        if node is None or where is None:
            return
        _, filename, first = where
        path = os.path.realpath(filename)
        if not path.startswith(root + os.sep):
            return
        line = first + node.lineno - 1
        with open(path, encoding="utf-8", errors="replace") as f:
            text = next((l for k, l in enumerate(f, 1) if k == line), "").strip()
        found[key] = f"{os.path.relpath(path, root)}:{line}: {text[:120]}"

    backward = _function(layer, "backward")
    if backward is not None:
        put("layer loop", backward, _order_of(backward[0], _first_for(backward[0])))
    steps = _function(layer, "_backward_direction")
    loop = _first_for(steps[0]) if steps is not None else None
    if loop is not None:
        put("time loop", steps, _order_of(steps[0], loop))
        put("step gradient", steps, _statement(loop, lambda n: _reads(n, "dY")) or _statement(loop, _calls_backward))
        put("masked gradient", steps, _statement(loop, _calls_backward))
    cells = getattr(layer, "cells", None)
    cell = _function(cells[0], "backward") if type(cells) is list and cells else None
    if cell is not None:
        put(GRADS_ASSIGNED, cell, _statement(cell[0], lambda n: _binds_a_gradient(n, _grads_names(cell[0]))))
    run = _function(layer, "_run_direction")
    loop = _first_for(run[0]) if run is not None else None
    if loop is not None:
        put("state kept", run, _statement(loop, lambda n: _assigns(n, "state")))
    return found


_found = {}                      # (root, the layer's methods' code) -> places: each case of a part asks again


def find(layer, root):
    """{place: 'mytorch/nn/recurrent.py:123: <the line>'} for the places of the layer's methods found in
    ``root``; empty when the code cannot be read (never raises)."""
    try:
        cells = getattr(layer, "cells", None)
        cell = type(cells[0]) if type(cells) is list and cells else None
        key = (root, *(getattr(getattr(type(layer), name, None), "__code__", None) for name in METHODS),
               getattr(getattr(cell, "backward", None), "__code__", None))
        if key not in _found:
            _found[key] = _places(layer, root)
        return dict(_found[key])
    except Exception:
        return {}

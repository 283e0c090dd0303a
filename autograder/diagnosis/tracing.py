"""Record the values a submission's own code computes, line by line, inside the child (``sys.settrace``).

While a ``Tracer`` is active, every frame of a file under ROOT (except the provided code the caller names) is
traced line by line. When a statement that assigns finishes, each of its targets is read back from the frame
and, if it holds numbers, kept as one record:

    name   the target as the code spells it: ``da_n``, ``self.r``, ``g["weight_ih"]``, ``la[t]``
    file, line, text   where the statement is (its first line) and its source as written, without comments
    frame  which call of which function (calls are numbered as they start); the function by its qualified
           name (``CTCLoss.forward``) on every Python: ``co_qualname``, or before 3.11 the same worked out from
           the source (``qualified_name``)
    reads  earlier records of the same call that the statement reads (by name, or by the array indexed)
    value  a float64 copy

A number (``ndarray`` of a numeric dtype, a NumPy or Python float, a list or tuple of numbers or of arrays) is
kept; anything else is skipped. Targets are read without running the submission's code: locals, an
instance's ``__dict__``, and indexing only of exact ``dict``, ``list`` and ``ndarray`` objects by constants,
names and slices. ``return <expression>`` (not a bare name) is recorded as ``return of f``. Each argument a
traced call is given (but a function the handout gives whole) is kept too, as a value of the caller's
statement: ``x passed to RNNCell.forward (argument 1)``, at the caller's line, reading what it reads, and
``kind`` says what a value held before it became float64 (floats, integers, truth values).

``sys.settrace`` works on every Python the grader supports (3.11 has no ``sys.monitoring``; on 3.12+ the
same tracer runs, and only failing cases are traced, so its speed matters little).

Budgets: records, bytes and seconds of the tracing thread's CPU time. When one is spent, or anything in the
tracer raises (a student's object can be anything), tracing stops for good and the run goes on untraced: what
is lost is the diagnosis, never the case. Stdlib and NumPy only: the child loads this file by path (so does
the test of the tracer).
"""
import ast
import io
import linecache
import os
import sys
import textwrap
import time
import tokenize

import numpy as np

RECORDS, BYTES, SECONDS = 3000, 8 << 20, 3.0      # per trace (seconds: of this thread's CPU time, which a busy
CHECK_EVERY = 32                                   # machine does not spend; read at the first event and every 32nd
                                                   # after it: reading it costs 0.7 µs, ten times a clock's)
ELEMENTS = 1 << 16                                 # the largest array kept
TEXT = 200                                         # characters of a line kept


class _Statement:
    """One assigning statement: its targets (AST nodes), the texts it reads, its first line and source, and the
    names its enclosing ``for`` loops bind (``t``; ``k, direction``): which iteration a value is from, and the
    line of the innermost one (0: none)."""
    __slots__ = ("line", "targets", "text", "is_return", "loops", "loop_line", "_node", "_reads")

    def __init__(self, node, targets, source_lines, is_return=False, loops=(), loop_line=0):
        self.line, self.targets, self.is_return, self.loops = node.lineno, targets, is_return, loops
        self.loop_line = loop_line
        self.text = shown_source(source_lines[node.lineno - 1:node.end_lineno])[:TEXT]
        self._node, self._reads = node, None

    @property
    def reads(self):
        """Worked out when the statement first runs: a case runs a few of a file's statements, and this is
        most of the cost of reading a file's statements (ast.unparse of every name in them)."""
        if self._reads is None:
            node = self._node
            self._reads = _loads(node.value if getattr(node, "value", None) is not None else node)
            if isinstance(node, ast.AugAssign):
                self._reads |= _loads(node.target)
        return self._reads


def shown_source(lines):
    """A statement's lines as written, its comments (a trailing one, or one between its lines) dropped and its
    indentation made relative to its first line; the lines as they are if they do not tokenize."""
    lines = textwrap.dedent("\n".join(lines)).splitlines()
    try:
        comments = {token.start for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
                    if token.type == tokenize.COMMENT}
    except (tokenize.TokenError, SyntaxError, ValueError):
        comments = set()
    for row, column in comments:
        lines[row - 1] = lines[row - 1][:column]
    return "\n".join(line.rstrip() for line in lines if line.strip())


def _text(node):
    try:
        return ast.unparse(node)
    except Exception:
        return ""


def _loads(node):
    """What an expression reads: (text, base) of names, attribute chains and subscripts (base: the array or
    dict indexed, read when that entry itself was never assigned: ``la[t - 1]`` reads what ``la[t]`` stored).
    A name that is only indexed (``g`` in ``g["w"]``) is not read as a whole."""
    found, bases = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript):
            bases.add(id(sub.value))
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript)) and id(sub) not in bases \
                and isinstance(getattr(sub, "ctx", None), (ast.Load, ast.Store)):
            keyed = isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant)   # g["w"]: one entry
            base = _text(sub.value) if isinstance(sub, ast.Subscript) and not keyed else None
            found.add((_text(sub), base if base else (_text(sub) if not keyed else "")))
    return found


def _statement_nodes(body, loops=(), loop_line=0):
    """(statement, names bound by the ``for`` loops around it in its function, the innermost one's line) for
    every statement in a list of statements and in the statements it holds, in source order (assignments are
    statements: the expressions between them need no visit, which ``ast.walk`` would make)."""
    for node in body:
        yield node, loops, loop_line
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inside, line = (), 0                         # a function's loops are its own
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            targets = node.target.elts if isinstance(node.target, (ast.Tuple, ast.List)) else [node.target]
            inside, line = loops + tuple(t.id for t in targets if isinstance(t, ast.Name)), node.lineno
        else:
            inside, line = loops, loop_line
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _statement_nodes(inner, *((inside, line) if field == "body" else (loops, loop_line)))


def _statements(filename, source=None):
    """{line: _Statement} for every line of every assigning statement of the file (or of ``source``, which
    stands for it); None if it does not parse."""
    if source is None:
        source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
        nodes = list(_statement_nodes(tree.body))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines, table = source.splitlines(), {}
    for node, loops, loop_line in nodes:
        if isinstance(node, ast.Assign):
            statement = _Statement(node, node.targets, lines, loops=loops, loop_line=loop_line)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            statement = _Statement(node, [node.target], lines, loops=loops, loop_line=loop_line)
        elif isinstance(node, ast.Return) and node.value is not None and not isinstance(node.value, ast.Name):
            statement = _Statement(node, [], lines, is_return=True, loops=loops, loop_line=loop_line)
        else:
            continue
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
            table.setdefault(line, statement)
    return table


def _function_statements(code):
    """``_statements`` of the function (or class body) ``code`` alone, read from its first line (a decorator's)
    to the last its instructions come from, with the file's line numbers (blank lines before it, under an
    ``if 1:`` when it is indented); None if that source is not one definition that parses, and then the whole
    file's table serves. A case enters a few of a file's functions: parsing whole files was 40% of a trace's
    time, and a trace child of the catalogue's mistakes takes 92 ms against 102 ms with this."""
    if not hasattr(code, "co_positions"):                 # Python before 3.11
        return None
    first = code.co_firstlineno
    last = max((end for _, end, _, _ in code.co_positions() if end is not None), default=first)
    lines = linecache.getlines(code.co_filename)[first - 1:last]
    if not lines or not lines[0].lstrip().startswith(("def ", "async def ", "class ", "@")):
        return None
    indented = lines[0][:1].isspace()
    if indented and first < 2:
        return None
    head = "if 1:\n" + "\n" * (first - 2) if indented else "\n" * (first - 1)
    return _statements(code.co_filename, head + "".join(lines))


def qualified_name(code, names=None):
    """``code``'s qualified name, as ``co_qualname`` (Python 3.11+) gives it: ``CTCLoss.forward``,
    ``_grad_view.<locals>.get``. Before 3.11 a code object has only its plain name (``forward``), so the name is
    worked out from the file's source, the way the compiler makes it (``_qualified_names``); ``names``: that
    table, when the caller keeps it per file. The plain name if the source does not say (it does not parse, or
    has changed)."""
    qualname = getattr(code, "co_qualname", None)
    if qualname is not None:
        return qualname
    if names is None:
        names = _qualified_names(code.co_filename)
    return names.get((code.co_firstlineno, code.co_name), code.co_name)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _qualified_names(filename, source=None):
    """{(first line, name): qualified name} of every function and class of a file, its first line the one
    ``co_firstlineno`` holds (its first decorator's). As the compiler names them: a definition in a class is
    ``Class.name``, one in a function ``function.<locals>.name``, and one whose name the enclosing scope declares
    ``global`` just ``name``. {} if the file does not parse."""
    if source is None:
        source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    names = {}

    def visit(body, prefix, declared):
        for node in _scope_nodes(body, definitions=True):
            qualname = node.name if node.name in declared else prefix + node.name
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            names.setdefault((first, node.name), qualname)
            inner = {n for sub in _scope_nodes(node.body) if isinstance(sub, ast.Global) for n in sub.names}
            visit(node.body, qualname + ("." if isinstance(node, ast.ClassDef) else ".<locals>."), inner)

    visit(tree.body, "", set())
    return names


def _scope_nodes(body, definitions=False):
    """The statements of a scope's body and of the blocks in it (``if``, ``for``, ``with``, ``try``, ``match``),
    not those of the functions and classes it defines, which are scopes of their own; with ``definitions``,
    only those definitions."""
    for node in body:
        if isinstance(node, _SCOPES):
            yield node
            continue
        if not definitions:
            yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                yield from _scope_nodes(inner, definitions)


PASSED = "passed to"             # an argument's name: ``x passed to RNNCell.forward (argument 1)``
ITERATION_NAMES = 4                                # loop variables kept per record


def _iteration(names, local):
    """[[name, value]] of the loop variables ``names`` that hold an integer or a short tuple of them (a step, a
    layer, a direction, a beam's prefix), innermost loop last: which iteration a value is from."""
    at = []
    for name in names[-ITERATION_NAMES:]:
        value = local.get(name)
        if type(value) in (int, np.int64, np.int32):
            at.append([name, int(value)])
        elif type(value) is tuple and len(value) <= 20 and all(type(v) in (int, np.int64) for v in value):
            at.append([name, [int(v) for v in value]])
    return at


def as_numbers(value):
    """``value`` as a float64 array if it is plain numbers, else None (never runs a student's method)."""
    t = type(value)
    if t is np.ndarray:
        if value.dtype.kind in "fiub" and value.size <= ELEMENTS:
            return np.array(value, dtype=np.float64)
        return None
    if t in (float, np.float64, np.float32, np.float16):
        return np.array(float(value))
    if t in (list, tuple) and len(value) <= 1000 and all(type(v) in (int, float, np.int64, np.float64)
                                                              for v in value):
        return np.array(value, dtype=np.float64)
    if t is dict and len(value) <= 1000 and all(type(k) in (str, int, tuple) for k in value) \
            and all(type(v) in (float, np.float64) for v in value.values()):
        # a beam's scores by prefix: its values in the order of their keys (plain keys, compared as text)
        if all(type(k) is not tuple or all(type(e) is int for e in k) for k in value):
            return np.array([value[k] for k in sorted(value, key=repr)], dtype=np.float64)
    return None


def kind_of(value):
    """What a kept value held before it became float64: 'b' truth values, 'i' integers, 'f' anything else
    (floats): a kind of difference (a factor, a log, a sign) is only said of floats."""
    t = type(value)
    if t is np.ndarray:
        return "b" if value.dtype.kind == "b" else "i" if value.dtype.kind in "iu" else "f"
    if t in (list, tuple) and value and all(type(v) in (int, np.int64) for v in value):
        return "i"
    return "f"


def _parts(name, value):
    """(name, array, kind) for a value, or for each array of a short tuple or list of arrays (a state (h, c))."""
    array = as_numbers(value)
    if array is not None:
        return [(name, array, kind_of(value))]
    if type(value) in (tuple, list) and 0 < len(value) <= 8:           # (h, c), or two dicts of scores
        return [(f"{name}[{k}]", a, kind_of(v)) for k, v in enumerate(value) for a in [as_numbers(v)] if a is not None]
    return []


class _Unreadable(Exception):
    pass


def _index(node, local):
    """A subscript's key built from constants, local names, slices and Ellipsis, or _Unreadable."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, str, type(Ellipsis), type(None)):
        return node.value
    if isinstance(node, ast.Name):
        value = local.get(node.id)
        if type(value) in (int, str, tuple, np.int64, bool):
            return value
        raise _Unreadable
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _index(node.operand, local)
        if type(value) is int:
            return -value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _index(node.left, local), _index(node.right, local)
        if type(a) is int and type(b) is int:
            return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    if isinstance(node, ast.Slice):
        return slice(*(None if part is None else _index(part, local) for part in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.Tuple):
        return tuple(_index(e, local) for e in node.elts)
    raise _Unreadable


def _read(node, local):
    """The current value of a target expression, read without running the submission's code."""
    if isinstance(node, ast.Name):
        if node.id not in local:
            raise _Unreadable
        return local[node.id]
    if isinstance(node, ast.Attribute):
        owner = _read(node.value, local)
        fields = object.__getattribute__(owner, "__dict__")
        if type(fields) is not dict or node.attr not in fields:
            raise _Unreadable
        return fields[node.attr]
    if isinstance(node, ast.Subscript):
        owner, key = _read(node.value, local), _index(node.slice, local)
        if type(owner) is dict:
            if key not in owner:
                raise _Unreadable
            return owner[key]
        if type(owner) is list and type(key) in (int, np.int64):
            return owner[key]
        if type(owner) is np.ndarray:
            return owner[key]
    raise _Unreadable


class Tracer:
    """``with Tracer(root, skip):`` records the submission's values (see the module docstring).

    ``skip(relpath, function)``: True for provided code that is not traced; ``given(relpath, qualified name)``:
    True for a function the handout gives whole, whose arguments are not kept (what it computes from them is).
    After the block, ``records`` holds dicts (name, file, line, text, frame, function, reads) and ``values`` the
    arrays; ``lost`` says why tracing stopped early ('' if it did not).
    """

    def __init__(self, root, skip=lambda relpath, function: False, records=RECORDS, nbytes=BYTES, seconds=SECONDS,
                 given=lambda relpath, function: False):
        self.root = os.path.realpath(root) + os.sep
        self.skip, self.given, self.limits = skip, given, (records, nbytes, seconds)
        self.records, self.values, self.lost = [], [], ""
        self._files, self._tables, self._frames = {}, {}, 0
        self._names, self._file_names = {}, {}           # code -> its qualified name; file -> _qualified_names
        self._active, self._callers = {}, {}             # id(frame) -> its state; frame -> [caller, line]
        self._bytes, self._deadline, self._previous, self._events = 0, 0.0, None, 0

    # ---- installing
    def __enter__(self):
        self._deadline = time.thread_time() + self.limits[2]
        self._previous = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)
        return False

    def _stop(self, why):
        if not self.lost:
            self.lost = why
        sys.settrace(None)

    # ---- events
    def _relpath(self, code):
        filename = code.co_filename
        if filename not in self._files:
            path = os.path.realpath(filename) if filename else ""
            self._files[filename] = path[len(self.root):].replace(os.sep, "/") if path.startswith(self.root) else None
        return self._files[filename]

    def _call(self, frame, event, arg):
        try:
            if self.lost:
                return None
            code = frame.f_code
            rel = self._relpath(code)
            if rel is None or code.co_name.startswith("<") or self.skip(rel, code.co_name):   # <genexpr> …
                return None
            table = self._tables.get(code)
            if table is None:
                table = _function_statements(code)
                if table is None:                       # the whole file's, read once
                    if code.co_filename not in self._tables:
                        self._tables[code.co_filename] = _statements(code.co_filename) or {}
                    table = self._tables[code.co_filename]
                self._tables[code] = table
            self._frames += 1
            caller = self._active.get(id(frame.f_back)) if frame.f_back is not None else None
            if caller is not None and caller["pending"] is not None and len(self._callers) < self.limits[0]:
                pending = caller["pending"]
                self._callers[self._frames] = (caller["frame"], caller["rel"], pending.line, pending.text)
            function = self._names.get(code)
            if function is None:
                if not hasattr(code, "co_qualname") and code.co_filename not in self._file_names:   # before 3.11
                    self._file_names[code.co_filename] = _qualified_names(code.co_filename)
                function = self._names[code] = qualified_name(code, self._file_names.get(code.co_filename))
            if caller is not None and caller["pending"] is not None and not self.given(rel, function):
                self._arguments(caller, frame, code, function)
            state = {"frame": self._frames, "rel": rel, "function": function, "table": table, "pending": None,
                     "lasti": -1, "by_text": {}, "by_base": {}}
            self._active[id(frame)] = state
            return self._local(state)
        except Exception as error:                      # a student's object in a frame: no diagnosis, no harm
            self._stop(f"the tracer failed ({type(error).__name__})")
            return None

    def _arguments(self, caller, frame, code, function):
        """Each argument a traced call is given, kept as a value of the caller's statement that makes the call
        (``x passed to RNNCell.forward``, at the caller's line, reading what that statement reads): a call's
        arguments are quantities, and a wrong one is the caller's."""
        statement = caller["pending"]
        reads = sorted({caller["by_text"].get(text, caller["by_base"].get(base))
                        for text, base in statement.reads} - {None})
        at = _iteration(statement.loops, frame.f_back.f_locals) if statement.loops else []
        local, parameters = frame.f_locals, code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        bound = 1 if parameters[:1] == ("self",) else 0          # a method's self is not in the call's arguments
        for position, parameter in enumerate(parameters[bound:]):
            if parameter in local:
                name = f"{parameter} {PASSED} {function} (argument {position + 1})"
                for part, array, kind in _parts(name, local[parameter]):
                    self._keep(caller, statement, reads, part, part, array, at, kind)

    def _local(self, state):
        def local(frame, event, arg):
            try:
                if self.lost:
                    return None
                self._events += 1
                if self._events % CHECK_EVERY == 1 and time.thread_time() > self._deadline:
                    self._stop("out of time")
                    return None
                if event == "line":
                    statement = state["table"].get(frame.f_lineno)
                    # the same statement again: its next line, or (a jump back) its next execution
                    if statement is not state["pending"] or frame.f_lasti <= state["lasti"]:
                        self._finish(state, frame)
                        state["pending"] = statement
                    state["lasti"] = frame.f_lasti
                elif event == "return":
                    self._finish(state, frame, returned=arg)
                    self._active.pop(id(frame), None)
                elif event == "exception":
                    state["pending"] = None             # the statement did not complete
                return local
            except Exception as error:
                self._stop(f"the tracer failed ({type(error).__name__})")
                return None
        return local

    def _finish(self, state, frame, returned=None):
        statement, state["pending"] = state["pending"], None
        if statement is None:
            return
        # what it read, resolved before any of its own targets is recorded (a, b = f(a, b) reads the old a)
        reads = sorted({state["by_text"].get(text, state["by_base"].get(base))
                        for text, base in statement.reads} - {None})
        local = frame.f_locals
        at = _iteration(statement.loops, local) if statement.loops else []
        if statement.is_return:
            if returned is not None:
                name = f"return of {frame.f_code.co_name}"
                for part, value, kind in _parts(name, returned):
                    self._keep(state, statement, reads, part, part, value, at, kind)
            return
        for target in statement.targets:
            self._target(state, statement, reads, target, local, at)

    def _target(self, state, statement, reads, target, local, at):
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(state, statement, reads, element, local, at)
            return
        if isinstance(target, ast.Starred):
            return
        try:
            value = _read(target, local)
        except Exception:                                # not readable without running its code: skipped
            return
        name = _text(target)
        base = _text(target.value) if isinstance(target, ast.Subscript) else name
        for part, array, kind in _parts(name, value):
            self._keep(state, statement, reads, part, base, array, at, kind)

    def _keep(self, state, statement, reads, name, base, value, at=(), kind="f"):
        records, nbytes, _ = self.limits
        if len(self.records) >= records or self._bytes + value.nbytes > nbytes:
            self._stop("the trace is full")
            return
        index = len(self.records)
        self.records.append({"name": name, "file": state["rel"], "line": statement.line, "text": statement.text,
                             "frame": state["frame"], "function": state["function"], "reads": reads, "at": at,
                             "loop": statement.loop_line, "kind": kind})
        self.values.append(value)
        self._bytes += value.nbytes
        state["by_text"][name] = index
        state["by_base"][base] = index

    # ---- sending
    def pack(self):
        """``(meta, flat)``: per record its fields and shape (JSON), and every value in one float64 array."""
        texts, meta = {}, []
        for record, value in zip(self.records, self.values):
            key = f"{record['file']}:{record['line']}"
            texts.setdefault(key, record["text"])
            # then, where they say more than their defaults: the iteration and loop line, the kind of the value
            extra = [record["at"], record["loop"]] if record["loop"] or record["kind"] != "f" else []
            extra += [record["kind"]] if record["kind"] != "f" else []
            meta.append([record["name"], record["file"], record["line"], record["frame"], record["function"],
                         record["reads"], list(value.shape)] + extra)
        flat = np.concatenate([v.ravel() for v in self.values]) if self.values else np.zeros(0)
        callers, wanted = {}, {r["frame"] for r in self.records}
        while wanted:                                    # who called each frame that recorded, and so on up
            frame = wanted.pop()
            if frame in self._callers and str(frame) not in callers:
                caller, rel, line, text = self._callers[frame]
                callers[str(frame)] = [caller, rel, line]
                texts.setdefault(f"{rel}:{line}", text)
                wanted.add(caller)
        return {"records": meta, "texts": texts, "lost": self.lost, "callers": callers}, flat

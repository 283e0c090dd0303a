"""Find solution lines that reach the student version outside their regions.

The handout hides each ``# BEGIN SOLUTION … # END SOLUTION`` region behind a TODO; that is worth nothing if
the same line also sits in plain sight elsewhere (a notebook that checks the exercise by recomputing it just
below the TODO, a docstring example, the assignment's text). ``find_leaks`` reads every non-trivial line of
every region and looks for it in every text file of a built handout (notebooks cell by cell, markdown and
code alike).

Lines are compared as code, not as text: a trailing comment and all whitespace are dropped, so
``h = f*h + z*o  # scan`` and ``h = f * h + z * o`` are the same line. A long line (``LONG`` characters or
more once normalised) also leaks when it is part of a longer line (`` `A = x @ W.T + b` `` in markdown).

A line is trivial, and may appear anywhere, when it computes nothing a student has to find: a blank line or
comment, lone brackets, ``pass``/``break``/``continue``/``else:``, ``return dx, dh`` (names only), an
assignment of names or constants (``hs, h = [], h0``), a loop/if/with header over plain names
(``for t in range(len(X)):``, ``with mytorch.no_grad():``), or a piece of a longer statement with no
arithmetic and no call (``axis=0)``).
Everything else is non-trivial, however short: ``dh = dA @ W`` leaks, and so does ``out = x.T``.
"""
import ast
import bisect
import functools
import io
import itertools
import json
import os
import re
import tokenize

from handout.markers import find_regions

LONG = 30                                           # normalised characters from which containment counts
COMMENT = re.compile(r"#[^'\"]*$")                  # a trailing comment with no quote after the '#'
SIMPLE_CALLS = {"range", "len", "reversed", "enumerate", "zip"}
KEYWORD_ONLY = {"else:", "try:", "finally:", "pass", "break", "continue", "return"}


@functools.lru_cache(maxsize=1 << 16)
def code_part(line):
    """``line`` without its trailing comment (found by Python's tokenizer; by a simpler rule if it gives up).
    Most lines have no '#' at all, and are kept as they are without being tokenized."""
    if "#" not in line:
        return line
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[:token.start[1]]
        return line
    except (tokenize.TokenError, SyntaxError):      # an unclosed bracket or string: a piece of a statement
        return COMMENT.sub("", line)


def normalise(line):
    """``line`` as code: without a trailing comment and without any whitespace."""
    return re.sub(r"\s+", "", code_part(line))


def _simple(node):
    """A plain value: names, attributes, constants, (empty) containers of them, and range(len(x))-style calls."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return node.attr != "T" and _simple(node.value)         # ``cache.x`` is plain; ``x.T`` is a transpose
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_simple(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return not node.keys
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.Call):
        return (isinstance(node.func, ast.Name) and node.func.id in SIMPLE_CALLS and not node.keywords
                and all(_simple(a) for a in node.args))
    return False


def _target(node):
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_target(e) for e in node.elts)
    return isinstance(node, (ast.Name, ast.Attribute))


def trivial(line):
    """True if ``line`` of a solution region computes nothing a student has to find (see the module docstring)."""
    code = code_part(line).strip()
    if not re.search(r"\w", code) or code in KEYWORD_ONLY:
        return True
    try:
        tree = ast.parse(code + " pass" if code.endswith(":") else code)
    except SyntaxError:                              # a piece of a statement spread over several lines:
        return not re.search(r"[-+*/@%]|\w\s*\(", code)   # trivial without arithmetic or a call (``axis=0)``)
    if len(tree.body) != 1:
        return False
    node = tree.body[0]
    if isinstance(node, (ast.Pass, ast.Break, ast.Continue)):
        return True
    if isinstance(node, ast.Return):
        return node.value is None or _simple(node.value)
    if isinstance(node, ast.Assign):
        return all(_target(t) for t in node.targets) and _simple(node.value)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return _target(node.target) and _simple(node.iter)
    if isinstance(node, (ast.If, ast.While)):         # ``if is_recording():``: a plain call decides nothing
        return _simple(node.test) or (_plain_call(node.test) and not node.test.args and not node.test.keywords)
    if isinstance(node, ast.With):                   # ``with mytorch.no_grad():``, ``with np.errstate(over="ignore"):``
        return all(_simple(item.context_expr) or _plain_call(item.context_expr) for item in node.items)
    return False


def _plain_call(node):
    """A call of a plain dotted name with plain arguments, such as ``np.errstate(over="ignore")``."""
    return (isinstance(node, ast.Call) and _simple(node.func) and all(_simple(a) for a in node.args)
            and all(_simple(k.value) for k in node.keywords))


def _source_lines(path):
    """The lines of a source file, per notebook cell for notebooks: [(where, [lines])]."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not path.endswith(".ipynb"):
        return [(path, text.split("\n"))]
    cells = json.loads(text).get("cells", [])
    return [(f"{path} (cell {i + 1})", "".join(c.get("source", "")).split("\n")) for i, c in enumerate(cells)]


def solution_lines(paths):
    """Every non-trivial line of every region of ``paths`` (.py files and notebooks): [(where, line)]."""
    found = []
    for path in paths:
        for where, lines in _source_lines(path):
            for region in find_regions(lines, where):
                found += [(f"{where}:{region.begin + 2 + k}", line.strip())
                          for k, line in enumerate(region.body(lines)) if not trivial(line)]
    return found


def _text_lines(root):
    """Every line of every text file under ``root``, in a fixed order: ('file:line' relative to it, line)."""
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            try:
                chunks = _source_lines(os.path.join(folder, name))
            except (UnicodeDecodeError, ValueError):    # binary data, or a notebook that is not JSON
                continue
            for where, lines in chunks:
                shown = os.path.relpath(where, root)
                for k, line in enumerate(lines):
                    yield f"{shown}:{k + 1}", line


def _shipped_lines(root):
    """Every line of every text file under ``root``: {normalised line: first 'file:line' where it appears}."""
    shipped = {}
    for at, line in _text_lines(root):
        shipped.setdefault(normalise(line), at)
    return shipped


def find_leaks(solutions, root):
    """The solution lines (from ``solution_lines``) that appear in the built handout ``root``.

    Returns [(region 'file:line', the line, shipped 'file:line')], empty when nothing leaks.
    """
    shipped = _shipped_lines(root)
    long_lines = [(text, where) for text, where in shipped.items() if len(text) >= LONG]
    # the long lines joined by newlines (a normalised line has none), searched at once: a match lies in one line
    joined = "\n".join(text for text, _ in long_lines)
    starts = list(itertools.accumulate((len(text) + 1 for text, _ in long_lines[:-1]), initial=0))
    leaks = []
    for source, line in solutions:
        code = normalise(line)
        where = shipped.get(code)
        if where is None and len(code) >= LONG and (at := joined.find(code)) >= 0:
            where = long_lines[bisect.bisect_right(starts, at) - 1][1]
        if where is not None:
            leaks.append((source, line, where))
    return leaks


# ---- derivations held back: an answer a notebook exercise asks for, written out in a docstring or a page

DERIVATION_BEGIN = re.compile(r"^(?P<indent>[ \t]*)(?:<!--\s*)?BEGIN DERIVATION: (?P<spec>.*?)\s*(?:-->)?\s*$")
DERIVATION_END = re.compile(r"^[ \t]*(?:<!--\s*)?END DERIVATION\s*(?:-->)?\s*$")


class DerivationError(ValueError):
    """A derivation block is malformed (the message says where)."""


def derivation_blocks(lines, where):
    """[(begin, end, indent, what the student reads instead, [answers])] of ``lines``.

    A block is a ``BEGIN DERIVATION: <what the student reads instead> | answer: <text> | answer: <text>`` line
    and an ``END DERIVATION`` line (each may sit in an HTML comment, in a page); the answers are the forms in
    which the held-back result is written, which must not reach a student anywhere else."""
    blocks, begin = [], None
    for k, line in enumerate(lines):
        if (match := DERIVATION_BEGIN.match(line)) is not None:
            if begin is not None:
                raise DerivationError(f"{where}:{k + 1}: BEGIN DERIVATION inside another (line {begin[0] + 1})")
            begin = (k, match)
        elif DERIVATION_END.match(line):
            if begin is None:
                raise DerivationError(f"{where}:{k + 1}: END DERIVATION without a BEGIN DERIVATION")
            start, match = begin
            instead, *answers = [part.strip() for part in match.group("spec").split(" | ")]
            if not answers or not all(a.startswith("answer: ") for a in answers):
                raise DerivationError(f"{where}:{start + 1}: BEGIN DERIVATION: <what students read instead> | "
                                      "answer: <the result held back> (one or more answers)")
            blocks.append((start, k, match.group("indent"), instead, [a[len("answer: "):] for a in answers]))
            begin = None
    if begin is not None:
        raise DerivationError(f"{where}:{begin[0] + 1}: BEGIN DERIVATION without an END DERIVATION")
    return blocks


def hold_back(text, where, released):
    """``text`` with each derivation block replaced by what students read instead (``released``: the block kept,
    its marker lines removed)."""
    lines = text.split("\n")
    blocks = derivation_blocks(lines, where)
    out, previous = [], 0
    for begin, end, indent, instead, _ in blocks:
        out += lines[previous:begin]
        out += lines[begin + 1:end] if released else [indent + instead]
        previous = end + 1
    return "\n".join(out + lines[previous:])


def _squeezed(text):
    return re.sub(r"\s+", "", text).replace("−", "-")


def derivation_answers(paths):
    """Every answer of every derivation block of ``paths``: [('file:line', answer)]."""
    found = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        found += [(f"{path}:{begin + 1}", answer) for begin, _, _, _, answers in derivation_blocks(lines, path)
                  for answer in answers]
    return found


def find_answer_leaks(answers, root):
    """The held-back answers (from ``derivation_answers``) written anywhere in the built ``root``: a docstring,
    a TODO's text, a comment, a page or a notebook cell, whitespace ignored. [(block, answer, 'file:line')]."""
    leaks = []
    wanted = [(source, answer, _squeezed(answer)) for source, answer in answers]
    for at, line in _text_lines(root):
        squeezed = _squeezed(line)
        leaks += [(source, answer, at) for source, answer, key in wanted if key in squeezed]
    return leaks

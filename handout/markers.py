"""Solution regions: find them, validate them, and replace each with a TODO that says what to compute.

A region is the lines from ``# BEGIN SOLUTION`` to ``# END SOLUTION`` (nbgrader's markers), both at the
same indentation. In a ``.py`` file a region must lie inside a function body. Text after ``BEGIN SOLUTION``
(``# BEGIN SOLUTION step every layer through time``) becomes the TODO; without it the TODO names what the
region computes that the rest of the function uses, found with ``ast``:

    # TODO: compute r, z, g_n, n, h_t (see the module docstring and assignment/)
    raise NotImplementedError("GRUCell.forward: compute r, z, n, g_n, h_t")

Every problem is a ``MarkerError`` naming the file and line.
"""
import ast
import dataclasses
import re

BEGIN = re.compile(r"^(?P<indent>\s*)#\s*BEGIN SOLUTION\b(?P<text>.*)$")
END = re.compile(r"^(?P<indent>\s*)#\s*END SOLUTION\b")
TODO_BLOCK = re.compile(r"^(?P<indent>[ \t]*)# TODO: .*\n(?P=indent)raise (NotImplementedError|todo)\(.*\)\n", re.M)


class MarkerError(Exception):
    """A malformed solution region; the message names the file and line."""


@dataclasses.dataclass
class Region:
    begin: int                   # 0-based line index of BEGIN
    end: int                     # 0-based line index of END
    indent: str
    text: str                    # what follows BEGIN SOLUTION, if anything

    def body(self, lines):
        return lines[self.begin + 1:self.end]


def find_regions(lines, where):
    """The regions of a list of lines (without newlines); ``where`` names the file for errors."""
    regions, open_region = [], None
    for i, line in enumerate(lines):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if open_region is not None:
                raise MarkerError(f"{where}:{i + 1}: nested BEGIN SOLUTION (the region opened at line "
                                  f"{open_region.begin + 1} is still open)")
            open_region = Region(i, -1, begin.group("indent"), begin.group("text").strip(" :-—"))
        elif end:
            if open_region is None:
                raise MarkerError(f"{where}:{i + 1}: END SOLUTION without a BEGIN SOLUTION")
            if end.group("indent") != open_region.indent:
                raise MarkerError(f"{where}:{i + 1}: END SOLUTION is not indented like its BEGIN SOLUTION at line "
                                  f"{open_region.begin + 1}")
            open_region.end = i
            if not any(l.strip() and not l.strip().startswith("#") for l in open_region.body(lines)):
                raise MarkerError(f"{where}:{open_region.begin + 1}: empty solution region")
            regions.append(open_region)
            open_region = None
    if open_region is not None:
        raise MarkerError(f"{where}:{open_region.begin + 1}: BEGIN SOLUTION without an END SOLUTION")
    return regions


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _qualified_name(tree, function):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and function in node.body:
            return f"{node.name}.{function.name}"
    return function.name


def describe(region, lines, tree, function):
    """What the region computes, in words: the names it assigns that the rest of the function reads."""
    if region.text:
        return region.text
    first, last = region.begin + 2, region.end          # 1-based line numbers of the body
    stores, used_after, accumulates = [], set(), False
    for node in ast.walk(function):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and first <= line <= last:
            stores.append((node.lineno, node.col_offset, node.id))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and line > last:
            used_after.add(node.id)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript) and first <= line <= last:
            accumulates = True
    assigned = list(dict.fromkeys(name for _, _, name in sorted(stores)))      # in source order
    names = [n for n in assigned if n in used_after]
    returns = any(isinstance(node, ast.Return) and first <= node.lineno <= last for node in ast.walk(function))
    if returns and not names:
        return "complete the function (its docstring says what it returns)"
    words = []
    if names:
        words.append("compute " + ", ".join(names))
    if accumulates:
        words.append("add (+=) each parameter's gradient into self.grads")
    return " and ".join(words) or "complete this step"


def strip_source(source, where, require_function=True, keep=None, removed=None, stop=None):
    """``source`` with every region replaced by its TODO, and the number of regions replaced.

    ``stop``: what the TODO raises instead of ``NotImplementedError`` (a notebook's ``todo``, from its
    needs.py, which stops the notebook with the message alone).

    ``keep(region)`` true: that region's body stays, its marker lines removed (working code). ``removed``: the
    reason a region is not the student's to write (its section is not in the course), said by the stub that
    replaces it instead of a TODO."""
    lines = source.split("\n")
    regions = find_regions(lines, where)
    if not regions:
        return source, 0
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError:
        if require_function:
            raise MarkerError(f"{where}: does not parse as Python") from None
        tree = None                                            # a notebook cell with IPython syntax
    functions = _functions(tree) if tree else []
    out, previous, count = [], 0, 0
    for region in regions:
        if keep is not None and keep(region):
            out += lines[previous:region.begin] + region.body(lines)
            previous = region.end + 1
            continue
        count += 1
        # the body's lines lie within the function (the END marker may follow its last statement)
        inside = [f for f in functions if f.body[0].lineno <= region.begin + 1 and region.end <= f.end_lineno
                  and len(region.indent) > f.col_offset]
        if require_function and not inside:
            raise MarkerError(f"{where}:{region.begin + 1}: a solution region must lie inside a function body")
        function = max(inside, key=lambda f: f.lineno) if inside else None     # the innermost
        what = describe(region, lines, tree, function) if function else (region.text or "complete this cell")
        label = _qualified_name(tree, function) if function else "exercise"
        out += lines[previous:region.begin]
        if removed is not None:
            out.append(f"{region.indent}# Not in this course: {removed}.")
            out.append(f"{region.indent}raise NotImplementedError({(label + ': not in this course: ' + removed)!r})")
            previous = region.end + 1
            continue
        where_to_look = " (see the module docstring and assignment/)" if require_function else ""
        out.append(f"{region.indent}# TODO: {what}{where_to_look}")
        out.append(f"{region.indent}raise {stop or 'NotImplementedError'}({(label + ': ' + what)!r})")
        previous = region.end + 1
    out += lines[previous:]
    return "\n".join(out), count


def region_texts(source, where):
    """The body of every region of ``source``, in order (to restore a built file: see ``restore``)."""
    lines = source.split("\n")
    return ["\n".join(r.body(lines)) + "\n" for r in find_regions(lines, where)]


def restore(stripped, bodies):
    """Put region bodies back in place of the TODO blocks of a stripped source, in order."""
    bodies = iter(bodies)
    restored = TODO_BLOCK.sub(lambda m: next(bodies), stripped)
    if next(bodies, None) is not None:
        raise ValueError("more solution regions than TODO blocks")
    return restored

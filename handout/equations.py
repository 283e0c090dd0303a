"""Find the equations of a graded backward in the student version's Markdown and LaTeX.

``handout.leaks`` finds solution *code* outside its region. A derivation leaks as well when a notebook or a
page writes the backward out in mathematics: ``$\\partial L/\\partial n = \\delta \\odot (1 - z)$`` gives away
the line ``dn = dh_t * (1 - z)`` as surely as the line itself. The equations to look for are not a hand list:
they are read from the comments inside the solution regions of every graded backward (a method ``backward``,
or a function whose name ends in ``_grad``), where the solution writes its derivation as a table:

    # dn   = dh' ⊙ (1 − z)             dz = dh' ⊙ (h − n)           dh ← dh' ⊙ z
    do = dh_hat * tanh_c                                      # dh_hat/do = tanh(c')

Comments and LaTeX name things differently (``dh'``, ``\\delta``, ``\\partial L/\\partial h'``,
``\\frac{\\partial L}{\\partial h'}``), so both are brought to one skeleton (``canonical``): every gradient
becomes ``∂`` whatever its name, ``⊙``/``\\odot``/``\\circ``/``\\cdot`` become ``*``, transposes ``ᵀ``, squares
``²``, hats, bars, primes, subscripts' underscores, braces and spaces go. An equation is looked for by its
right-hand side's skeleton, when that holds a gradient and a product and is at least ``SHORTEST``
characters long: ``∂*(1-z)`` and ``∂+∂*o*(1-tanh²(c))`` are found; a bare ``∂*z`` is too common to tell
a derivation from a sentence and is not. A gradient times a weight matrix by juxtaposition (``dh = da W_hh``,
skeleton ``∂Whh``) is looked for however short: it is the whole backward of a linear map. A time step's
subscript (``a_{t+1}``) is dropped, so BPTT's statement of a step's equation is found too.

Where: every Markdown cell of every notebook and every Markdown page, inside math (``$…$``, ``$$…$$``), code
spans and fenced code; and the comments of notebook code cells.
"""
import ast
import json
import os
import re
import unicodedata

from handout.markers import find_regions

SHORTEST = 5                      # characters of a skeleton from which an equation counts
OPERATIONS = re.compile(r"[*σ]|tanh")

LATEX = [  # (pattern, replacement), applied in order
    (r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big|displaystyle|quad|qquad)\b", ""),
    (r"\\[,;:! ]", ""),
    (r"\\mathrel\{\+\}=", "+="),
    (r"\\frac\{\\partial\s*(?:\\mathcal\{L\}|L)\}\{\\partial\s*", "∂{"),
    (r"\\partial\s*(?:\\mathcal\{L\}|L)\s*/\s*\\partial\s*", "∂"),
    (r"\\partial\s*", "∂"),
    (r"(?:\\bar|\\hat|\\tilde)\s*\\delta", "∂"),
    (r"\\delta", "∂"),
    (r"\\(?:odot|circ|cdot|times)", "*"),
    (r"\^\s*\{?\\top\}?", "ᵀ"),
    (r"\\top", "ᵀ"),
    (r"\^\s*\{?2\}?", "²"),
    (r"\\sigma", "σ"),
    (r"\\tanh", "tanh"),
    (r"\\sum_\{?N\}?|\\sum", "Σ"),
    (r"\\mid", "|"),
    (r"\\(?:bar|hat|tilde|mathrm|text|mathbf|operatorname|mathcal|boldsymbol)\b", ""),
]
UNICODE = {"⊙": "*", "∘": "*", "·": "*", "−": "-", "←": "=", "′": "", "'": "", "’": ""}
GRADIENT = re.compile(r"(?<![A-Za-z0-9_∂])(?:d(?=_?[A-Za-z])|∂)[A-Za-z0-9_]*")   # dh, da_n, d_c, dA, ∂x
DL_OVER = re.compile(r"dL/d|∂L/∂")
STEP = re.compile(r"_\{\s*t\s*(?:[-+−]\s*\d+)?\s*\}|_t(?![A-Za-z0-9])")   # a time step's subscript: _t, _{t+1}
WEIGHT_PRODUCT = re.compile(r"∂W[a-z]+ᵀ?")       # a gradient times a weight matrix, by juxtaposition: da W_hh


def canonical(text):
    """The skeleton of a piece of mathematics, from a comment or from LaTeX (see the module docstring)."""
    for pattern, replacement in LATEX:
        text = re.sub(pattern, replacement, text)
    text = "".join(UNICODE.get(ch, ch) for ch in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(ch))
    text = DL_OVER.sub("∂", text)
    text = re.sub(r"Σ_?\{?N\}?", "Σ", text)                          # a sum over the batch, however written
    text = STEP.sub("", text)                                        # a_{t+1} is a, at whatever step
    text = text.replace("{", "").replace("}", "").replace("_", "")
    text = re.sub(r"∂\s+", "∂", text)                              # ``\partial \hat h`` is one name
    text = GRADIENT.sub("∂", text)
    text = re.sub(r"\s+", "", text)
    return re.sub(r"\(∂\)", "∂", text)                              # (∂L/∂a) W is ∂ W


def _pieces(comment):
    """The equations of one comment line: split at runs of spaces and at ``;``/``,  `` between equations."""
    pieces = []
    for chunk in re.split(r"\s{2,}|;\s|,\s{2,}|:\s{2,}", comment.strip()):
        if pieces and re.match(r"^(=|←|\+=)", chunk):
            pieces[-1] += " " + chunk                        # ``dn   = …``: the name and its right-hand side
        elif chunk:
            pieces.append(chunk)
    return [p for p in pieces if re.search(r"(?<![=<>!])(=|←)(?!=)", p)]


def _right_side(equation):
    return re.split(r"\+=|=|←", equation)[-1]


def _graded_backwards(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (n.name == "backward" or n.name.endswith("_grad"))]


def backward_equations(paths):
    """Every equation of the comments in the solution regions of graded backwards: [(where, equation, skeleton)]."""
    found = []
    for path in paths:
        if not path.endswith(".py"):
            continue
        with open(path, encoding="utf-8") as f:
            source = f.read()
        lines = source.split("\n")
        functions = _graded_backwards(ast.parse(source))
        for region in find_regions(lines, path):
            if not any(f.lineno <= region.begin + 1 <= f.end_lineno for f in functions):
                continue
            for k, line in enumerate(region.body(lines)):
                if "#" not in line:
                    continue
                for equation in _pieces(line.split("#", 1)[1]):
                    skeleton = canonical(_right_side(equation))
                    if (len(skeleton) >= SHORTEST and "∂" in skeleton and OPERATIONS.search(skeleton)) or \
                            WEIGHT_PRODUCT.fullmatch(skeleton):
                        found.append((f"{path}:{region.begin + 2 + k}", equation.strip(), skeleton))
    return found


MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|```.*?```|`([^`\n]+)`", re.S)


def _math_of_markdown(text):
    return [m.group(0).strip("$`") for m in MATH.finditer(text)]


def _texts(root):
    """[(where, skeleton)] of every piece of mathematics a student reads under ``root``."""
    out = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            where = os.path.relpath(path, root)
            if name.endswith(".md"):
                with open(path, encoding="utf-8") as f:
                    out += [(where, canonical(m)) for m in _math_of_markdown(f.read())]
            elif name.endswith(".ipynb"):
                with open(path, encoding="utf-8") as f:
                    cells = json.load(f).get("cells", [])
                for i, cell in enumerate(cells):
                    source = "".join(cell.get("source", ""))
                    if cell.get("cell_type") == "markdown":
                        pieces = _math_of_markdown(source)
                    else:
                        pieces = [line.split("#", 1)[1] for line in source.split("\n") if "#" in line]
                    out += [(f"{where} (cell {i + 1})", canonical(p)) for p in pieces]
    return out


def find_equation_leaks(equations, root):
    """The equations (from ``backward_equations``) whose skeleton appears in the mathematics under ``root``:
    [(source 'file:line', equation, shipped place)]."""
    texts = _texts(root)
    leaks = []
    for source, equation, skeleton in equations:
        where = next((w for w, text in texts if skeleton in text), None)
        if where is not None:
            leaks.append((source, equation, where))
    return leaks

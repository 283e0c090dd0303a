"""Sphinx configuration of the course site (copied into the site's sources by ``python -m handout site``).

Sphinx runs in the handout build's folder with it on PYTHONPATH, so autodoc documents the build's own
``mytorch`` (the one students receive). Nothing here loads anything from another host: MathJax is the copy in
``_static/mathjax``, Furo ships its own assets, and widgets' JavaScript is switched off.
"""
import os
import re

project = "mytorch"
author = "the mytorch course staff"
copyright = "the mytorch course staff"

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}

# Markdown: $…$ and $$…$$ math (the assignment and the notebooks write LaTeX that way), tables, headings
# that links can point at.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_dmath_double_inline = True
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

# Notebooks arrive already executed (with the solution, outputs attached to the student's cells).
nb_execution_mode = "off"
nb_ipywidgets_js = {}
nb_merge_streams = True

# MathJax 3 from the site itself, SVG output (no web fonts, which Chromium refuses over file://).
mathjax_path = "mathjax/tex-svg-full.js"
mathjax3_config = {"options": {"enableMenu": False}, "svg": {"fontCache": "global"}}

html_theme = "furo"
html_title = os.environ.get("MYTORCH_SITE_TITLE") or "mytorch: recurrent networks by hand"   # the course's title
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {"navigation_with_keys": True}

highlight_language = "none"               # docstrings' blocks are equations and shapes, not Python
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "show-inheritance": True}
add_module_names = False

_LITERAL = re.compile(r"(``.+?``)")
_SPECIAL = re.compile(r"([\\*|_`\[\]<>])")
_LISTY = re.compile(r"^\s*([-*+•]|\d+[.)]|\.\.|:\w)\s")


def _prose(paragraph):
    """One paragraph of a docstring as reST: text escaped, ``literals`` kept."""
    text = " ".join(line.strip() for line in paragraph)
    if text.endswith("::"):                  # "Example::" introduces the block that follows, shown as code anyway
        text = text[:-1]
    parts = _LITERAL.split(text)
    return "".join(p if k % 2 else _SPECIAL.sub(r"\\\1", p) for k, p in enumerate(parts))


def _docstring_as_rest(app, what, name, obj, options, lines):
    """mytorch's docstrings are plain text written to be read in a terminal: prose paragraphs, and indented
    blocks of equations, shapes and examples aligned in columns. A prose paragraph is shown as text (with
    ``literals``); any paragraph with indented lines, a list or an argument table is shown as written, in a
    code block, so its alignment survives and nothing in it is read as reST markup."""
    paragraphs, current = [], []
    for line in lines + [""]:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            paragraphs.append(current)
            current = []
    out = []
    for paragraph in paragraphs:
        indented = any(line[:1] in (" ", "\t") for line in paragraph)
        if indented or any(_LISTY.match(line) for line in paragraph):
            out += ["::", ""] + ["    " + line for line in paragraph] + [""]
        else:
            out += [_prose(paragraph), ""]
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", _docstring_as_rest)
    return {"parallel_read_safe": True}


if os.environ.get("MYTORCH_SITE_SOLUTIONS") == "1":
    html_title += " (instructor's edition)"

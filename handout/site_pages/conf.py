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
html_title = "mytorch: recurrent networks by hand"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {"navigation_with_keys": True}

autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "show-inheritance": True}
add_module_names = False

_INDENTED = re.compile(r"^( {4,}|\t)\S")


def _literal_blocks(app, what, name, obj, options, lines):
    """Docstrings write equations and examples as indented blocks; show them as code, aligned as written.

    reST would otherwise read an indented block as a quotation and re-flow it (``h' = (1 − z) ⊙ n + z ⊙ h``
    and its comment column run together)."""
    out, inside = [], False
    for k, line in enumerate(lines):
        starts = _INDENTED.match(line) and not inside and (k == 0 or not lines[k - 1].strip())
        if starts and not (out and out[-1].rstrip().endswith("::")):
            if out and out[-1] == "":
                out[-1:] = ["::", ""]
            else:
                out += ["::", ""]
            inside = True
        elif inside and line.strip() and not line.startswith((" ", "\t")):
            inside = False
        out.append(line)
    lines[:] = out


def setup(app):
    app.connect("autodoc-process-docstring", _literal_blocks)
    return {"parallel_read_safe": True}


if os.environ.get("MYTORCH_SITE_SOLUTIONS") == "1":
    html_title += " (instructor's edition)"

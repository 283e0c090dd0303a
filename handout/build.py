"""Build the student handout and the Gradescope autograder from this repository.

    python -m handout build [--out build/handout] [--solutions]    the student version, and OUT.zip
    python -m handout gradescope [--out build/gradescope] [--with-solution]    Gradescope's autograder zip

Student version: ``mytorch/`` with every solution region replaced by a TODO; ``notebooks/`` stripped the same
way with outputs cleared, and each derivation held back (below); ``autograder/`` with its reference data but without the generator and the mistake
catalogue; the written assignment; a student README and setup.py. Nothing with a solution in it is copied:
the build fails if a ``BEGIN SOLUTION`` marker survives anywhere in the output, or if a non-trivial line of a
solution region appears anywhere in it outside its TODO (see ``handout.leaks``), or if an equation of a graded
backward appears in its Markdown or LaTeX (see ``handout.equations``).

Derivations: a notebook cell that derives or computes a graded quantity carries the cell tag ``derivation``,
and is followed by one or more cells tagged ``exercise`` that say what to derive, the shapes, and which check
(a gradcheck against the student's own code) tells when it is right. The student version drops the
``derivation`` cells and keeps the ``exercise`` cells. ``solutions=True`` (``--solutions``; the course's
``release_solutions``) is the version for after the deadline: the ``derivation`` cells kept and their
``exercise`` cells dropped. Solution regions are stripped all the same, in ``mytorch/`` and in the notebooks:
they are the graded code, and the leak check on code lines still holds.

Gradescope version: ``setup.sh`` and ``run_autograder`` at the root, the grader, and with ``--with-solution``
the solution ``mytorch`` under ``solution/`` so that every submission is graded on fresh cases
(``--fresh-seed``) whose references come from the solution; student code runs as the unprivileged user
``student`` (created by setup.sh), who cannot read the solution.
"""
import json
import os
import shutil

from handout.equations import backward_equations, find_equation_leaks
from handout.leaks import find_leaks, solution_lines
from handout.markers import MarkerError, strip_source

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(REPO, "handout")
INSTRUCTOR_ONLY = {"generate.py", "mistakes.py"}


class BuildError(Exception):
    """The build cannot go on; the message says why."""


def _ignore(folder, names):
    return {n for n in names if n == "__pycache__" or n.endswith(".pyc") or n.startswith(".")}


def strip_tree(src, dst, pattern=".py", sources=None):
    """Copy the .py files of ``src`` to ``dst`` with every solution region replaced. Returns the region count.

    The path of every file read is appended to ``sources`` when given."""
    count = 0
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in _ignore(folder, [d]))
        for name in sorted(files):
            if not name.endswith(pattern):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, REPO)
            if sources is not None:
                sources.append(path)
            with open(path, encoding="utf-8") as f:
                stripped, n = strip_source(f.read(), rel)
            count += n
            target = os.path.join(dst, os.path.relpath(path, src))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write(stripped)
    return count


DERIVATION, EXERCISE = "derivation", "exercise"


def _tags(cell):
    tags = cell.get("metadata", {}).get("tags", [])
    return set(tags) if isinstance(tags, list) else set()


def check_derivations(cells, where):
    """Every run of ``derivation`` cells is followed by an ``exercise`` cell, so nothing is held back without
    the exercise that replaces it."""
    for index, cell in enumerate(cells):
        if DERIVATION in _tags(cell):
            following = next((c for c in cells[index + 1:] if DERIVATION not in _tags(c)), None)
            if following is None or EXERCISE not in _tags(following):
                raise BuildError(f"{where} (cell {index + 1}): a cell tagged '{DERIVATION}' must be followed by a "
                                 f"cell tagged '{EXERCISE}' (what to derive, the shapes, the check)")


def strip_notebook(path, target, solutions=False):
    """A notebook with solution regions replaced in its code cells, derivations held back, every output cleared.

    With ``solutions``: derivations kept in place of their exercise cells (see the module docstring)."""
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    where = os.path.relpath(path, REPO)
    cells = notebook.get("cells", [])
    check_derivations(cells, where)
    count, kept = 0, []
    for index, cell in enumerate(cells):
        tags = _tags(cell)
        if (DERIVATION in tags and not solutions) or (EXERCISE in tags and solutions):
            continue
        kept.append(cell)
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        stripped, n = strip_source(source, f"{where} (cell {index + 1})", require_function=False)
        count += n
        cell["source"] = stripped
        cell["outputs"], cell["execution_count"] = [], None
    notebook["cells"] = kept
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        json.dump(notebook, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return count


def copy_grader(dst):
    shutil.copytree(os.path.join(REPO, "autograder"), dst,
                    ignore=lambda folder, names: _ignore(folder, names) | (INSTRUCTOR_ONLY & set(names)))


def check_no_markers(root):
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            if "BEGIN SOLUTION" in text or "END SOLUTION" in text:
                raise BuildError(f"{os.path.relpath(path, root)} still holds a solution marker")


def check_no_leaks(sources, root, equations=True):
    """A build error if a non-trivial line of a solution region of ``sources`` appears anywhere under ``root``,
    or (``equations``) an equation of a graded backward in its Markdown or LaTeX."""
    found = find_leaks(solution_lines(sources), root)
    if found:
        shown = "\n".join(f"  {os.path.relpath(source, REPO)}: `{line}` is also in {where}"
                          for source, line, where in found[:10])
        more = f"\n  … and {len(found) - 10} more" if len(found) > 10 else ""
        raise BuildError(f"{len(found)} solution line(s) would reach students outside their TODO "
                         f"(rewrite the other use, e.g. check the exercise against the library instead):\n"
                         f"{shown}{more}")
    found = find_equation_leaks(backward_equations(sources), root) if equations else []
    if found:
        shown = "\n".join(f"  {os.path.relpath(source, REPO)}: `{equation}` is written out in {where}"
                          for source, equation, where in found[:10])
        more = f"\n  … and {len(found) - 10} more" if len(found) > 10 else ""
        raise BuildError(f"{len(found)} equation(s) of a graded backward would reach students (tag the cell "
                         f"'{DERIVATION}' and follow it by an '{EXERCISE}' cell, or rewrite the page):\n"
                         f"{shown}{more}")


def _fresh(out):
    out = os.path.abspath(out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    return out


def build_handout(out, solutions=False):
    """The student version in ``out`` and ``out.zip``; returns (out, zip path, number of regions stripped).

    ``solutions``: the notebooks' derivations released (see the module docstring)."""
    out = _fresh(out)
    sources = []                                   # every file whose regions were stripped
    try:
        regions = strip_tree(os.path.join(REPO, "mytorch"), os.path.join(out, "mytorch"), sources=sources)
        notebooks = os.path.join(REPO, "notebooks")
        if os.path.isdir(notebooks):
            for name in sorted(os.listdir(notebooks)):
                if name.endswith(".ipynb"):
                    sources.append(os.path.join(notebooks, name))
                    regions += strip_notebook(os.path.join(notebooks, name), os.path.join(out, "notebooks", name),
                                              solutions)
                elif name.endswith((".py", ".md")) and not name.startswith("."):
                    shutil.copy(os.path.join(notebooks, name), os.path.join(out, "notebooks", name))
    except MarkerError as error:
        raise BuildError(str(error)) from None
    copy_grader(os.path.join(out, "autograder"))
    shutil.copytree(os.path.join(HERE, "assignment"), os.path.join(out, "assignment"), ignore=_ignore)
    for name in ("README.md", "setup.py"):
        shutil.copy(os.path.join(HERE, "student", name), os.path.join(out, name))
    check_no_markers(out)
    check_no_leaks(sources, out, equations=not solutions)
    archive = shutil.make_archive(out, "zip", root_dir=os.path.dirname(out), base_dir=os.path.basename(out))
    return out, archive, regions


def build_gradescope(out, with_solution=False):
    """Gradescope's autograder in ``out`` and ``out.zip`` (files at the zip's root, as Gradescope wants)."""
    out = _fresh(out)
    copy_grader(os.path.join(out, "autograder"))
    for name in ("setup.sh", "run_autograder"):
        shutil.copy(os.path.join(HERE, "gradescope", name), os.path.join(out, name))
        os.chmod(os.path.join(out, name), 0o755)
    if with_solution:
        shutil.copytree(os.path.join(REPO, "mytorch"), os.path.join(out, "solution", "mytorch"), ignore=_ignore)
    else:
        check_no_markers(out)
    archive = shutil.make_archive(out, "zip", root_dir=out)
    return out, archive

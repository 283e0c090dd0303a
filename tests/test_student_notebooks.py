"""What a student's notebook shows before the course releases anything: no graded equation, and a plain stop
while the parts it runs are still TODOs."""
import json
import os
import subprocess
import sys

import pytest

from handout import build
from handout.equations import backward_equations, canonical, find_equation_leaks
from tests.graderkit import REPO

NOTEBOOKS = sorted(n for n in os.listdir(os.path.join(REPO, "notebooks")) if n.endswith(".ipynb"))
GRADED_SOURCES = [os.path.join(REPO, "mytorch", "nn", n) for n in sorted(os.listdir(os.path.join(REPO, "mytorch", "nn")))
                  if n.endswith(".py")]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_graded_equation_in_a_student_notebook(tmp_path, name):
    """Every notebook, as a student receives it, states no equation of a graded backward (its derivations are
    held back until the course releases them)."""
    build.strip_notebook(os.path.join(REPO, "notebooks", name), str(tmp_path / name))
    assert find_equation_leaks(backward_equations(GRADED_SOURCES), str(tmp_path)) == []


def test_the_backward_of_a_linear_map_is_found_however_it_is_written(tmp_path):
    """dh = da W_hh (part 1.2) as BPTT states it, at step t+1 and by juxtaposition, is a graded equation: the
    student notebook 01 once stated it outside its derivation cells."""
    equations = [e for e in backward_equations(GRADED_SOURCES) if e[0].startswith(os.path.join(REPO, "mytorch",
                                                                                               "nn", "rnn_cell.py"))]
    skeletons = {skeleton for _, _, skeleton in equations}
    for text in (r"\partial L / \partial h_t \big|_{\text{future}} = (\partial L/\partial a_{t+1}) W_{hh}",
                 r"\frac{\partial L}{\partial h_t} = \frac{\partial L_t}{\partial h_t} + \frac{\partial L}{\partial a_{t+1}} W_{hh}",
                 r"\partial A_h W_{hh}"):
        assert any(s in canonical(text) for s in skeletons), text
    # the instructor's version of notebook 01 keeps its derivation, which states it: found there
    build.strip_notebook(os.path.join(REPO, "notebooks", "01_rnn_cell.ipynb"), str(tmp_path / "01.ipynb"),
                         solutions=True)
    found = find_equation_leaks(equations, str(tmp_path))
    assert any(e[1] == "dh = da W_hh" for e in found), found


def test_a_notebook_whose_parts_are_todos_stops_with_a_plain_message(tmp_path):
    """In Jupyter (IPython), needs() stops the notebook with what to write first, not a traceback into needs.py."""
    out = build.build_handout(str(tmp_path / "handout"), warn=lambda message: None)[0]
    code = ("from IPython.core.interactiveshell import InteractiveShell\n"
            "shell = InteractiveShell.instance()\n"
            "result = shell.run_cell(\"from needs import needs\\nneeds('1.1', '1.2', '6.1')\")\n"
            "print('stopped' if not result.success else 'ran')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(out, "notebooks"), capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=out), timeout=120)
    text = proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("stopped"), text
    assert "The notebook stops here until you write what it runs:" in text
    assert "this notebook needs parts 1.1-1.2, 6.1; run `python -m autograder 1 6`" in text
    assert "Traceback" not in text and "needs.py" not in text and "MissingParts" not in text, text


def test_every_shipped_notebook_names_its_parts_in_needs():
    """The student README lists what each notebook runs from its needs(...) call: every notebook that runs a
    graded part has one."""
    from handout import sections
    for name in NOTEBOOKS:
        with open(os.path.join(REPO, "notebooks", name)) as f:
            assert sections.notebook_needs(json.load(f)), name


def test_the_site_shows_no_needs_output_of_the_instructors_run(tmp_path):
    """What needs(...) printed when the instructor's notebook ran names every part of the full course; the site
    shows the course's students the cell without it, and every other output as it came."""
    nbformat = pytest.importorskip("nbformat")
    from handout import site
    built = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('needs("1.1", "3.1")', id="a"),
                                            nbformat.v4.new_code_cell("print(1)", id="b")])
    ran = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('needs("1.1", "3.1")', id="a"),
                                          nbformat.v4.new_code_cell("print(1)", id="b")])
    ran.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="runs parts 1.1, 3.1\n")]
    ran.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    path = tmp_path / "n.ipynb"
    nbformat.write(built, str(path))
    shown = site.shown_notebook(str(path), ran, str(tmp_path / "shown.ipynb"))
    assert shown["cells"][0]["outputs"] == [] and shown["cells"][1]["outputs"][0]["text"] == "1\n"

"""What a student's notebook shows before the course releases anything: no graded equation, and a plain stop
while the parts it runs are still TODOs; and how a notebook finds its course from wherever it was opened."""
import json
import os
import re
import shutil
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
    assert "this section needs parts 1.1-1.2, 6.1; run `python -m autograder 1 6`" in text
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


def _first_cell(name):
    with open(os.path.join(REPO, "notebooks", name), encoding="utf-8") as f:
        return "".join(next(c for c in json.load(f)["cells"] if c["cell_type"] == "code")["source"])


def _run_first_cell(cwd, block=()):
    """The notebooks' first cell run as Jupyter runs it (IPython), in ``cwd``, with the modules ``block`` made
    impossible to import; then where `needs` and `mytorch` came from, and whether NumPy was loaded."""
    code = ("import json, sys\n"
            f"for name in {list(block)!r}:\n    sys.modules[name] = None\n"
            "from IPython.core.interactiveshell import InteractiveShell\n"
            "shell = InteractiveShell.instance()\n"
            f"result = shell.run_cell({_first_cell(NOTEBOOKS[0])!r})\n"
            "print('numpy loaded' if 'numpy' in sys.modules else 'numpy not loaded')\n"
            "if result.success:\n"
            "    import mytorch\n"
            "    found = shell.user_ns['needs']\n"
            "    print(json.dumps([found.__module__, sys.modules['needs'].__file__, mytorch.__file__]))\n"
            "print('stopped' if not result.success else 'ran')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=""))
    return proc.stdout + proc.stderr


def _course(root):
    """A course folder as a student unpacks it: mytorch/ and setup.py beside notebooks/."""
    course = root / "course"
    shutil.copytree(os.path.join(REPO, "mytorch"), course / "mytorch", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(REPO, "notebooks"), course / "notebooks",
                    ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    shutil.copy(os.path.join(REPO, "handout", "student", "setup.py"), course / "setup.py")
    return course


def test_every_notebook_starts_with_the_same_cell():
    """One first cell for all: it finds needs.py, and a notebook opened alone runs it as is."""
    first = {name: _first_cell(name) for name in NOTEBOOKS}
    assert len(set(first.values())) == 1, first
    assert "from needs import needs" in first[NOTEBOOKS[0]]


@pytest.mark.parametrize("where", ["one folder down", "the course", "the notebooks", "two folders in"])
def test_the_first_cell_finds_needs_and_the_mytorch_beside_it_from_elsewhere(tmp_path, where):
    """Colab starts in /content, with the course unpacked one folder down; Jupyter starts where the notebook is;
    a student may start anywhere in the course. From each, the first cell finds the course's needs.py and puts
    its mytorch first (ahead of any mytorch installed), and loads no NumPy yet (notebook 10 sets its threads
    after it)."""
    course = _course(tmp_path)
    cwd = {"one folder down": tmp_path, "the course": course, "the notebooks": course / "notebooks",
           "two folders in": course / "mytorch" / "nn"}[where]
    text = _run_first_cell(str(cwd))
    assert text.rstrip().endswith("ran"), text
    module, needs_file, mytorch_file = json.loads(text.splitlines()[-2])
    assert module == "needs"
    assert os.path.samefile(needs_file, course / "notebooks" / "needs.py")
    assert os.path.samefile(mytorch_file, course / "mytorch" / "__init__.py")
    assert "numpy not loaded" in text


def test_without_mytorch_the_first_cell_says_plainly_what_to_do(tmp_path):
    """A notebooks folder opened alone, in a Python without mytorch: what to install and that the kernel must
    restart, not a ModuleNotFoundError's traceback; inside the course, with a dependency missing, the command
    names the course's folder."""
    alone = tmp_path / "alone"
    shutil.copytree(os.path.join(REPO, "notebooks"), alone / "notebooks")
    text = _run_first_cell(str(alone / "notebooks"), block=["mytorch"])
    assert text.rstrip().endswith("stopped"), text
    assert "This notebook's Python cannot import mytorch." in text
    assert '%pip install -e "FOLDER"' in text and "Runtime > Restart session" in text
    assert "put this notebooks/ folder back in the course's folder" in text
    assert "Traceback" not in text and "ModuleNotFoundError" not in text and "NotReady" not in text, text

    course = _course(tmp_path / "unpacked")
    text = _run_first_cell(str(tmp_path / "unpacked"), block=["matplotlib"])
    assert text.rstrip().endswith("stopped"), text
    assert "This notebook's Python cannot import matplotlib." in text
    assert os.path.samefile(re.search(r'%pip install -e "(.+)"', text).group(1), course)
    assert "put this notebooks/ folder back" not in text
    assert "Traceback" not in text and "ModuleNotFoundError" not in text, text


def test_with_no_course_in_sight_the_first_cell_says_where_it_looked(tmp_path):
    """A notebook uploaded alone (as to Colab) with no course near it: where it looked, and what to do."""
    text = _run_first_cell(str(tmp_path))
    assert text.rstrip().endswith("stopped"), text
    assert "No notebooks/needs.py in " in text and ", above it or one folder down: put the course's folder" in text
    assert "Traceback" not in text and "NotFound" not in text, text


def test_a_notebook_needs_the_union_of_its_sections_parts():
    """Each section calls needs(...) with its own parts; the README and the partial-course build read them all."""
    from handout import sections
    cell = lambda text: {"cell_type": "code", "source": text}          # noqa: E731
    notebook = {"cells": [cell('needs("8.1", "8.2")\nx = 1'), {"cell_type": "markdown", "source": 'needs("9.9")'},
                          cell('y = 2\nneeds("2.1")\nneeds("8.2", "GRUCell fast path")'), cell("needs()")]}
    assert sections.notebook_needs(notebook) == ["2.1", "8.1", "8.2"]
    with open(os.path.join(REPO, "notebooks", "09_ctc.ipynb")) as f:
        ctc = json.load(f)
    first = next(c for c in ctc["cells"] if c["cell_type"] == "code" and "needs(" in "".join(c["source"])
                 and "from needs import needs  #" not in "".join(c["source"]))
    assert 'needs("8.1", "8.2", "8.3", "8.4")' in "".join(first["source"])        # the α/β cells need no more
    assert sections.notebook_needs(ctc) == ["2.1", "2.2", "6.2"] + [f"8.{k}" for k in range(1, 10)]


def _in_ipython(code, cwd):
    script = ("from IPython.core.interactiveshell import InteractiveShell\n"
              "shell = InteractiveShell.instance()\n"
              f"result = shell.run_cell({code!r})\n"
              "print('stopped' if not result.success else 'ran')\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=REPO))
    return proc.stdout + proc.stderr


def test_a_check_prints_one_line_per_array_and_stops_plainly_with_what_differs():
    """CS231n-style: one line per array that agrees; on a disagreement a stop that says where and by how much
    (or which shapes), not an AssertionError's traceback."""
    notebooks = os.path.join(REPO, "notebooks")
    text = _in_ipython("import numpy as np\nfrom needs import check\n"
                       "want = np.arange(6.0).reshape(2, 3)\ncheck('dW_hh', want * (1 + 1e-13), want)\n"
                       "got = want.copy(); got[1, 2] += 0.5\ncheck('dW_ih', got, want)", notebooks)
    assert "dW_hh: max rel error 2.0e-13 ✓" in text or "dW_hh: max rel error 1.0e-13 ✓" in text, text
    assert text.rstrip().endswith("stopped"), text
    assert "A check failed; the notebook stops here:" in text
    assert "dW_ih: max rel error 1.0e-01, above the tolerance 1e-10" in text
    assert "the largest difference is at [1, 2]: 5.5 where 5 is expected (off by 5.00e-01); 1 of 6 entries differ" in text
    assert "Traceback" not in text and "AssertionError" not in text and "needs.py" not in text, text
    text = _in_ipython("import numpy as np\nfrom needs import check\ncheck('dx', np.zeros((3, 2)), np.zeros((2, 3)))",
                       notebooks)
    assert "dx has shape (3, 2), but should have shape (2, 3)" in text and "Traceback" not in text, text
    text = _in_ipython("from needs import expect\nexpect(1 > 2, 'the RNN should lose its gradient fastest')", notebooks)
    assert "the RNN should lose its gradient fastest" in text and "Traceback" not in text, text


def test_a_notebook_exercise_left_to_write_stops_plainly(tmp_path):
    """A solution region in a notebook becomes a TODO that raises needs' todo(...): the notebook stops with what to
    write, in the words needs() uses, not a NotImplementedError's traceback; without the import the build says so."""
    nbformat = pytest.importorskip("nbformat")
    cells = [nbformat.v4.new_code_cell("from needs import todo\n\n\ndef step(x):\n    \"\"\"Returns 2 x.\"\"\"\n"
                                       "    # BEGIN SOLUTION\n    return 2 * x\n    # END SOLUTION\n\n\nstep(1)")]
    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
    build.strip_notebook(str(path), str(tmp_path / "out" / "n.ipynb"))
    source = json.load(open(tmp_path / "out" / "n.ipynb"))["cells"][0]["source"]
    source = "".join(source) if isinstance(source, list) else source
    assert "raise todo('step: complete the function (its docstring says what it returns)')" in source
    text = _in_ipython(source, os.path.join(REPO, "notebooks"))
    assert text.rstrip().endswith("stopped"), text
    assert "The notebook stops here until you write this cell's exercise:" in text
    assert "step: complete the function (its docstring says what it returns)" in text
    assert "Traceback" not in text and "NotImplementedError" not in text and "NotWritten" not in text, text
    cells[0].source = cells[0].source.replace("from needs import todo\n", "from needs import needs\n")
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(path))
    with pytest.raises(build.BuildError, match=r"import it in a cell above them \(from needs import todo\)"):
        build.strip_notebook(str(path), str(tmp_path / "out" / "n.ipynb"))


def test_the_site_drops_only_what_needs_printed():
    """A section's cell that calls needs(...) keeps its own printed lines on the site; needs' line goes."""
    from handout import site
    output = {"output_type": "stream", "name": "stdout",
              "text": "this section runs parts 1.2: all written\ndx: max rel error 0.0e+00 ✓\n"}
    assert site._without_needs(dict(output))["text"] == "dx: max rel error 0.0e+00 ✓\n"


def test_a_held_back_answer_is_found_in_a_docstring_or_a_todo_and_the_build_holds_ctcs_back(tmp_path, built_handout):
    """The result a notebook exercise asks for, declared by its BEGIN DERIVATION block, is found wherever else it is
    written: a docstring, the text of a TODO, a page. The student build holds part 8.6's back (its docstrings, the
    TODO, the page); with the derivations released the block is kept."""
    from handout.leaks import derivation_answers, find_answer_leaks, hold_back
    source = tmp_path / "src.py"
    source.write_text('"""Module.\n\nBEGIN DERIVATION: dY is yours to derive. | answer: −Σ γ[t, s] / y[t, c]\n'
                      'dY = −Σ γ[t, s] / y[t, c].\nEND DERIVATION\n"""\n')
    answers = derivation_answers([str(source)])
    assert answers == [(f"{source}:3", "−Σ γ[t, s] / y[t, c]")]
    built = tmp_path / "built"
    built.mkdir()
    (built / "src.py").write_text(hold_back(source.read_text(), "src.py", released=False))
    assert "dY is yours to derive." in (built / "src.py").read_text()
    assert find_answer_leaks(answers, str(built)) == []
    (built / "other.py").write_text('def f():\n    """Returns dY[t, c] = -Σ γ[t,s]/y[t,c]."""\n')
    (built / "todo.py").write_text("def g():\n    # TODO: fill dY with −Σ γ[t, s] / y[t, c]\n"
                                   "    raise NotImplementedError('g: fill dY with −Σ γ[t, s] / y[t, c]')\n")
    found = sorted(where for _, _, where in find_answer_leaks(answers, str(built)))
    assert found == ["other.py:2", "todo.py:2", "todo.py:3"]
    assert "dY = −Σ γ[t, s] / y[t, c]." in hold_back(source.read_text(), "src.py", released=True)

    out = built_handout[0]
    ctc_answers = derivation_answers([os.path.join(REPO, "mytorch", "nn", "ctc_course.py"),
                                      os.path.join(REPO, "handout", "assignment", "8-ctc.md")])
    assert len(ctc_answers) >= 3
    assert find_answer_leaks(ctc_answers, out) == []
    shipped = open(os.path.join(out, "mytorch", "nn", "ctc_course.py"), encoding="utf-8").read()
    assert "notebook 09" in shipped and "DERIVATION" not in shipped
    page = open(os.path.join(out, "assignment", "8-ctc.md"), encoding="utf-8").read()
    assert "Derive it from $\\alpha$, $\\beta$ and $\\gamma$ in notebook 09's exercise" in page

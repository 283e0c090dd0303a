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

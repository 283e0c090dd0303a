"""The student handout and the Gradescope package: no solution leaks, the empty handout grades to zero without
a traceback, putting the solution back restores full marks, and markers are validated."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from autograder.parts import spec
from handout import build, leaks, markers
from tests.graderkit import REPO, check_gradescope, load_results, run_cli

PY_SOURCES = [os.path.join(folder, name) for folder, _, names in os.walk(os.path.join(REPO, "mytorch"))
              for name in names if name.endswith(".py")]
NOTEBOOKS = sorted(os.path.join(REPO, "notebooks", n) for n in os.listdir(os.path.join(REPO, "notebooks"))
                   if n.endswith(".ipynb"))


@pytest.fixture(scope="module")
def built(built_handout):
    return built_handout                      # (out, archive, regions), built once per test process


def region_bodies(path):
    with open(path, encoding="utf-8") as f:
        return markers.region_texts(f.read(), path)


def notebook_region_bodies(path):
    with open(path, encoding="utf-8") as f:
        notebook = json.load(f)
    return [body for cell in notebook["cells"] if cell["cell_type"] == "code"
            for body in markers.region_texts("".join(cell["source"]), path)]


def test_no_solution_line_reaches_the_handout(built):
    out, archive, regions = built
    assert regions >= 13
    bodies = [(path, body) for path in PY_SOURCES for body in region_bodies(path)]
    bodies += [(path, body) for path in NOTEBOOKS for body in notebook_region_bodies(path)]
    assert len(bodies) == regions
    solutions = leaks.solution_lines(PY_SOURCES + NOTEBOOKS)
    for path, body in bodies:                  # every region has something to hide: the filter is not too kind
        assert any(not leaks.trivial(line) for line in body.splitlines()), (path, body)
    assert leaks.find_leaks(solutions, out) == []
    assert sorted(os.listdir(os.path.join(out, "notebooks"))) == sorted([os.path.basename(p) for p in NOTEBOOKS]
                                                                        + ["data", "diagrams.py", "needs.py"])
    for folder, dirs, names in os.walk(out):
        assert "generate.py" not in names and "mistakes.py" not in names and "tests" not in folder
        assert "__pycache__" not in dirs and not any(n.endswith(".pyc") for n in names)    # the solution's pycs
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "handout/mytorch/nn/gru_cell.py" in names and "handout/assignment/README.md" in names
    assert "handout/autograder/data/manifest.json" in names


def test_every_solution_line_would_be_caught_in_a_py_file_and_a_notebook(tmp_path):
    """Plant every non-trivial solution line, re-indented and re-commented, in a .py file and (separately) in a
    notebook's code and markdown cells: the check finds each one."""
    solutions = leaks.solution_lines(PY_SOURCES + NOTEBOOKS)
    assert len(solutions) > 100
    planted = [" " * 12 + line.split("  #")[0].replace(" ", "  ") + "   # moved here" for _, line in solutions]
    (tmp_path / "py").mkdir()
    (tmp_path / "py" / "check.py").write_text("def check():\n" + "\n".join(planted) + "\n")
    assert len(leaks.find_leaks(solutions, str(tmp_path / "py"))) == len(solutions)
    (tmp_path / "nb").mkdir()
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": line}
             for line in planted[::2]]
    cells += [{"cell_type": "markdown", "metadata": {}, "source": f"Compare with `{line.strip()}` here."}
              for line in planted[1::2]]
    (tmp_path / "nb" / "n.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                                         "cells": cells}))
    in_code = {leaks.normalise(line) for _, line in solutions[::2]}
    expected = [s for s in solutions if leaks.normalise(s[1]) in in_code or len(leaks.normalise(s[1])) >= leaks.LONG]
    found = leaks.find_leaks(solutions, str(tmp_path / "nb"))
    assert [(source, line) for source, line, _ in found] == expected
    assert len(expected) > len(solutions[::2])                     # code cells, and long lines in markdown


LEAKY_NOTEBOOK_CELL = ("def scan(X, W):\n"
                       "    # BEGIN SOLUTION\n"
                       "    A = X @ W.T                 # all steps at once\n"
                       "    hs, h = [], 0\n"
                       "    for t in range(len(X)):\n"
                       "        h = A[t] * h + 1\n"
                       "        hs.append(h)\n"
                       "    return np.stack(hs)\n"
                       "    # END SOLUTION\n"
                       "\n"
                       "hs = scan(X, W)\n"
                       "A = X @ W.T\n"
                       "for t in range(len(X)):\n"
                       "    assert hs[t].shape == A[t].shape\n")


def test_a_notebook_that_recomputes_its_exercise_fails_the_build(tmp_path):
    """Notebook 05's old mistake, in miniature: the exercise's line recomputed just below the TODO."""
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "import numpy as np"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": LEAKY_NOTEBOOK_CELL.splitlines(keepends=True)}]}
    source = tmp_path / "leaky.ipynb"
    source.write_text(json.dumps(notebook))
    root = tmp_path / "out"
    assert build.strip_notebook(str(source), str(root / "notebooks" / "leaky.ipynb")) == 1
    with pytest.raises(build.BuildError) as error:
        build.check_no_leaks([str(source)], str(root))
    message = str(error.value)
    assert message.startswith("1 solution line(s) would reach students outside their TODO")
    assert "leaky.ipynb (cell 2):3: `A = X @ W.T                 # all steps at once` is also in " \
           "notebooks/leaky.ipynb (cell 2):" in message
    # trivial lines of the region (`hs, h = [], 0`, the loop header) may appear outside; the rest is hidden
    assert [line for _, line, _ in leaks.find_leaks(leaks.solution_lines([str(source)]), str(root))] == \
        ["A = X @ W.T                 # all steps at once"]


def test_a_py_solution_line_in_a_docstring_or_the_assignment_is_a_leak(tmp_path):
    source = tmp_path / "cell.py"
    source.write_text('def forward(self, x):\n    """Example: ``h = np.tanh(x @ self.weight.T + self.bias)``"""\n'
                      "    # BEGIN SOLUTION\n    h = np.tanh(x @ self.weight.T + self.bias)\n    # END SOLUTION\n"
                      "    return h\n")
    root = tmp_path / "out"
    (root / "assignment").mkdir(parents=True)
    (root / "assignment" / "a.md").write_text("Write `h=np.tanh( x@self.weight.T+self.bias )`.\n")
    stripped, _ = markers.strip_source(source.read_text(), "cell.py")
    (root / "cell.py").write_text(stripped)
    found = leaks.find_leaks(leaks.solution_lines([str(source)]), str(root))
    line = "h = np.tanh(x @ self.weight.T + self.bias)"
    assert found == [(f"{source}:4", line, "cell.py:2")]
    (root / "cell.py").write_text(stripped.replace(f"Example: ``{line}``", "Example"))
    found = leaks.find_leaks(leaks.solution_lines([str(source)]), str(root))
    assert found == [(f"{source}:4", line, "assignment/a.md:1")]


TRIVIAL = ["", "   ", "# a comment", ")", "    ]),", "else:", "try:", "pass", "continue", "break", "return",
           "return dx, dh", "return self.h", "hs, h = [], h0", "state = None", "d = {}", "k = -1",
           "for t in range(len(X)):", "for t in reversed(range(record.steps)):", "if self.bias:",
           "for layer, cell in enumerate(self.cells):", "axis=0)", "with mytorch.no_grad():", "except ValueError:",
           'with np.errstate(over="ignore"):', "elif self.bias:"]
NON_TRIVIAL = ["dh = dA @ W", "h = f * h + z * o", "return np.stack(hs)", "dx = -dy", "g['b'] += d.sum(0)",
               "hs.append(h)", "out = x.T", "z = a[:, :H]", "if t + 1 < T:", "for t in range(T - 1):",
               "grads[name] = d", "n = np.tanh(a)", "+ p['bias_hh'] + m @ w.T,", "x @ W.T + b_ih +",
               "elif t + 1 < T:", "with f(x @ W):"]


@pytest.mark.parametrize("line", TRIVIAL)
def test_trivial_lines(line):
    assert leaks.trivial(line)


@pytest.mark.parametrize("line", NON_TRIVIAL)
def test_non_trivial_lines(line):
    assert not leaks.trivial(line)


def test_every_todo_says_what_to_compute(built):
    out, _, _ = built
    with open(os.path.join(out, "mytorch", "nn", "gru_cell.py")) as f:
        source = f.read()
    assert "        # TODO: compute r, z, g_n, n, h_t" in source
    assert "raise NotImplementedError(\"GRUCell.backward: compute dx, dh and add (+=) each parameter's" in source
    compile(source, "gru_cell.py", "exec")                           # still valid Python, indentation kept


def test_empty_handout_installs_grades_zero_without_traceback(built, tmp_path):
    out, _, _ = built
    site = tmp_path / "site"
    # built with this Python's setuptools when it can build a wheel (half the time of pip fetching its own), else
    # as pip would by default. It can from setuptools 70.1 (its own bdist_wheel) or with the wheel package; the
    # setuptools a venv of Python 3.9 to 3.11 starts with (58, 65) cannot, and pip from 23.1 no longer falls back
    # to setup.py install (metadata-generation-failed: invalid command 'bdist_wheel')
    setuptools = importlib.util.find_spec("setuptools")
    own = setuptools is not None and (importlib.util.find_spec("wheel") is not None or os.path.isfile(
        os.path.join(os.path.dirname(setuptools.origin), "command", "bdist_wheel.py")))
    isolation = ["--no-build-isolation"] if own else []
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", *isolation, "--target", str(site), out],
                   check=True, capture_output=True)
    assert (site / "autograder" / "data" / "manifest.json").exists()          # the package data is installed
    work = tmp_path / "work"
    shutil.copytree(os.path.join(out, "mytorch"), work / "mytorch")
    env = dict(os.environ, PYTHONPATH=str(site))
    # every package of the grader comes from the installed handout (none from this checkout, which an editable
    # install of it would otherwise lend to a package the handout left out)
    imported = subprocess.run([sys.executable, "-c", "import mytorch, autograder, importlib\n"
                               "for name in ('', *autograder.PACKAGES):\n"
                               "    print(importlib.import_module('.'.join(('autograder', name)).strip('.')).__file__)\n"
                               "print(mytorch.nn.GRUCell(2, 3))"], cwd=work, capture_output=True, text=True, env=env)
    assert imported.returncode == 0, imported.stderr
    *files, cell = imported.stdout.splitlines()
    assert len(files) == 5 and all(f.startswith(str(site / "autograder")) for f in files), files
    assert "GRUCell(2, 3" in cell
    proc = subprocess.run([sys.executable, "-m", "autograder", "--json", str(tmp_path / "r.json")], cwd=work,
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr
    tests = check_gradescope(load_results(tmp_path / "r.json"))
    assert all(t["score"] == 0 and "not implemented yet" in t["output"] for t in tests.values())
    assert proc.stdout.count("(not implemented yet)") == len(tests)


def test_round_trip_restores_full_marks(built, tmp_path):
    out, _, _ = built
    restored = tmp_path / "restored"
    shutil.copytree(os.path.join(out, "mytorch"), restored / "mytorch")
    for path in PY_SOURCES:
        target = restored / os.path.relpath(path, REPO)
        with open(target) as f:
            stripped = f.read()
        with open(target, "w") as f:
            f.write(markers.restore(stripped, region_bodies(path)))
    proc = run_cli(["--submission", str(restored), "--json", str(tmp_path / "r.json")])
    assert proc.returncode == 0
    assert load_results(tmp_path / "r.json")["score"] == 100


@pytest.mark.parametrize("with_solution", [False, True], ids=["stored references", "fresh seed from the solution"])
def test_gradescope_zip(built, tmp_path, with_solution):
    build.build_gradescope(str(tmp_path / "package"), with_solution, fixed_cases=not with_solution)
    root = tmp_path / "autograder"
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True)
    with zipfile.ZipFile(str(tmp_path / "package.zip")) as z:
        assert {"setup.sh", "run_autograder"} <= set(z.namelist())
        z.extractall(root / "source")
    assert ("solution/mytorch/__init__.py" in z.namelist()) == with_solution
    os.chmod(root / "source" / "run_autograder", 0o755)

    def grade(submission_files):
        shutil.rmtree(root / "submission")
        shutil.copytree(submission_files, root / "submission")
        env = dict(os.environ, AUTOGRADER_ROOT=str(root))
        proc = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        results = load_results(root / "results" / "results.json")
        check_gradescope(results)
        return results["score"]

    handin = tmp_path / "handin"
    handin.mkdir()
    run_cli(["handin", "--submission", REPO, "--out", str(handin / "handin.tar")])
    assert grade(handin) == 100                                        # the solution, as handed in
    empty = tmp_path / "empty"
    shutil.copytree(os.path.join(built[0], "mytorch"), empty / "my_upload" / "mytorch")
    assert grade(empty) == 0                                           # the untouched handout, as a folder
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    assert grade(nothing) == 0


BAD = {
    "unterminated": ("def f():\n    # BEGIN SOLUTION\n    x = 1\n", "2: BEGIN SOLUTION without an END SOLUTION"),
    "nested": ("def f():\n    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n    x = 1\n    # END SOLUTION\n",
               "3: nested BEGIN SOLUTION (the region opened at line 2 is still open)"),
    "end without begin": ("def f():\n    x = 1\n    # END SOLUTION\n", "3: END SOLUTION without a BEGIN SOLUTION"),
    "outside a function": ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n",
                           "1: a solution region must lie inside a function body"),
    "mismatched indentation": ("def f():\n    # BEGIN SOLUTION\n    x = 1\n# END SOLUTION\n",
                               "4: END SOLUTION is not indented like its BEGIN SOLUTION at line 2"),
    "empty": ("def f():\n    # BEGIN SOLUTION\n    # END SOLUTION\n    return 1\n", "2: empty solution region"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_markers_are_build_errors_naming_file_and_line(name):
    source, message = BAD[name]
    with pytest.raises(markers.MarkerError) as error:
        markers.strip_source(source, "mytorch/nn/x.py")
    assert str(error.value) == f"mytorch/nn/x.py:{message}"


def test_regions_in_nested_functions_and_methods():
    source = ("class A:\n    def f(self, x):\n        y = 2\n        # BEGIN SOLUTION\n        z = x * y\n"
              "        w = z + 1\n        # END SOLUTION\n        return w\n")
    stripped, n = markers.strip_source(source, "a.py")
    assert n == 1
    assert stripped.split("\n")[3:5] == ["        # TODO: compute w (see the module docstring and assignment/)",
                                         "        raise NotImplementedError('A.f: compute w')"]
    assert markers.restore(stripped + "\n", markers.region_texts(source, "a.py")).rstrip() == \
        "\n".join(l for l in source.split("\n") if "SOLUTION" not in l).rstrip()


def test_notebooks_are_stripped_and_cleared(tmp_path):
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "$a = b$"]},
        {"cell_type": "code", "metadata": {}, "execution_count": 3, "outputs": [{"output_type": "stream",
         "name": "stdout", "text": ["42\n"]}], "source": ["x = 1\n", "# BEGIN SOLUTION\n", "answer = x * 42\n",
                                                           "# END SOLUTION\n", "print(answer)\n"]}]}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(notebook))
    assert build.strip_notebook(str(path), str(tmp_path / "out.ipynb")) == 1
    out = json.loads((tmp_path / "out.ipynb").read_text())
    code = out["cells"][1]
    assert code["outputs"] == [] and code["execution_count"] is None
    assert "answer = x * 42" not in code["source"] and "raise NotImplementedError" in code["source"]
    assert out["cells"][0]["source"] == ["# Title\n", "$a = b$"]


def test_cli_builds(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "handout", "build", "--out", str(tmp_path / "h")], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "solution regions replaced by TODOs" in proc.stdout
    assert (tmp_path / "h.zip").exists()


# ---- derivations held back until released, and the equations of graded backwards

from handout import equations  # noqa: E402


def _cells(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["cells"]


def _tagged(cells, tag):
    return [c for c in cells if tag in c.get("metadata", {}).get("tags", [])]


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out, _, _ = build.build_handout(str(tmp_path_factory.mktemp("released") / "handout"), solutions=True)
    return out


def test_derivations_are_exercises_until_released(built, released):
    out = built[0]
    derived = [p for p in NOTEBOOKS if _tagged(_cells(p), build.DERIVATION)]
    assert {os.path.basename(p)[:2] for p in derived} >= {"01", "02", "03", "04", "05", "08", "09"}
    for path in NOTEBOOKS:
        source, name = _cells(path), os.path.basename(path)
        student, instructor = _cells(os.path.join(out, "notebooks", name)), _cells(os.path.join(released, "notebooks", name))
        held = _tagged(source, build.DERIVATION)
        assert _tagged(student, build.DERIVATION) == [] and len(student) == len(source) - len(held)
        assert len(_tagged(student, build.EXERCISE)) == len(_tagged(source, build.EXERCISE))
        assert _tagged(instructor, build.EXERCISE) == []
        assert ["".join(c["source"]) for c in _tagged(instructor, build.DERIVATION)] == \
            ["".join(c["source"]) for c in held]
        for cell in _tagged(student, build.EXERCISE):           # each exercise names its check
            text = "".join(cell["source"])
            assert "right when" in text and any(k in text for k in ("gradcheck", "finite", "np.allclose", "max rel error")), \
                    (name, text)
    # the same code regions are stripped in both versions
    for name in ("02_gru_cell.ipynb", "08_lstm_cell.ipynb"):
        assert "# END SOLUTION" not in open(os.path.join(released, "notebooks", name)).read()


def test_no_equation_of_a_graded_backward_reaches_students(built, released):
    found = equations.backward_equations(PY_SOURCES)
    assert len(found) >= 20
    files = {source.split(":")[0] for source, _, _ in found}
    for cell in ("rnn_cell", "gru_cell", "gru_block_cell", "gmu_cell", "tgru_cell", "lstm_cell"):
        assert any(f.endswith(f"nn/{cell}.py") for f in files), cell
    assert equations.find_equation_leaks(found, built[0]) == []
    # released, the derivations hold them: the LSTM's two paths into c', the GRU's gates
    shown = {equation for _, equation, _ in equations.find_equation_leaks(found, released)}
    assert "dc' ← dc' + dh_hat ⊙ o ⊙ (1 − tanh²(c'))" in shown and "dn = dh' ⊙ (1 − z)" in shown


def _as_latex(equation):
    """A comment's equation as a notebook would typeset it."""
    text = equation.replace("⊙", r" \odot ").replace("ᵀ", r"^\top").replace("²", "^2").replace("−", "-")
    text = text.replace("Σ_N", r"\sum_N ").replace("←", "=")
    return re.sub(r"\bd(\w+)'?", lambda m: rf"\frac{{\partial L}}{{\partial {m.group(1)}}}", text)


def test_every_backward_equation_planted_in_latex_is_caught(tmp_path):
    found = equations.backward_equations(PY_SOURCES)
    cells = [{"cell_type": "markdown", "metadata": {}, "source": f"So $${_as_latex(eq)}$$ follows."} for _, eq, _ in found]
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "n.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                                         "cells": cells}))
    assert [eq for _, eq, _ in equations.find_equation_leaks(found, str(tmp_path / "nb"))] == [eq for _, eq, _ in found]


def line_of(cell_file, text):
    """The line of mytorch/nn/``cell_file`` where ``text`` first appears (1-based)."""
    with open(os.path.join(REPO, "mytorch", "nn", cell_file), encoding="utf-8") as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def test_a_planted_derivation_fails_the_build(tmp_path):
    """Notebook 08's old Markdown, written by hand, in a page and in a notebook: the build refuses both."""
    leak = (r"The total is $$\bar\delta_c = \delta_c + \frac{\partial L}{\partial \hat h} \odot o \odot "
            r"\bigl(1 - \tanh^2(c')\bigr).$$ and $\partial L/\partial a_g = \partial L/\partial g \odot (1 - g^2)$")
    for kind in ("page", "notebook"):
        root = tmp_path / kind
        if kind == "page":
            (root / "assignment").mkdir(parents=True)
            (root / "assignment" / "7-lstm-cell.md").write_text(f"# LSTM\n\n{leak}\n")
        else:
            (root / "notebooks").mkdir(parents=True)
            (root / "notebooks" / "n.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                "cells": [{"cell_type": "markdown", "metadata": {}, "source": leak}]}))
        with pytest.raises(build.BuildError) as error:
            build.check_no_leaks(PY_SOURCES, str(root))
        message = str(error.value)
        assert message.startswith("2 equation(s) of a graded backward would reach students")
        line = line_of("lstm_cell.py", "dc'  ← dc' + dh_hat")
        assert f"mytorch/nn/lstm_cell.py:{line}: `dc' ← dc' + dh_hat ⊙ o ⊙ (1 − tanh²(c'))` is written out in" in message
        assert "`da_g = dg ⊙ (1 − g²)`" in message


@pytest.mark.parametrize("comment, latex", [
    ("dn = dh' ⊙ (1 − z)", r"\partial L/\partial n = \delta \odot (1 - z)"),
    ("da_m = dm ⊙ m(1 − m)", r"\frac{\partial L}{\partial a_m} = \frac{\partial L}{\partial m} \odot m(1 - m)"),
    ("d_c̄  = d_h ⊙ (1 − u) ⊙ (1 − c²)", r"\partial L/\partial \bar c = \delta_h \odot (1-u) \odot (1 - c^{2})"),
])
def test_comments_and_latex_meet_in_one_skeleton(comment, latex):
    def right(text):
        return equations.canonical(re.split("=", text)[-1])
    assert right(comment) == right(latex)


def test_a_derivation_needs_its_exercise(tmp_path):
    cell = {"cell_type": "markdown", "metadata": {"tags": ["derivation"]}, "source": "$a = b$"}
    plain = {"cell_type": "markdown", "metadata": {}, "source": "text"}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell, plain]}))
    with pytest.raises(build.BuildError, match=r"\(cell 1\): a cell tagged 'derivation' must be followed by a cell "
                                               r"tagged 'exercise'"):
        build.strip_notebook(str(path), str(tmp_path / "out.ipynb"))


# ---- section 6 is the student's whole BPTT

def _restored(out, folder, keep_stripped=(), optional=True):
    """The built mytorch with every region's solution put back, except in ``keep_stripped`` (paths in mytorch/)
    and, without ``optional``, the optional regions (the cells' fast paths), which stay TODOs."""
    shutil.copytree(os.path.join(out, "mytorch"), folder / "mytorch")
    for path in PY_SOURCES:
        rel = os.path.relpath(path, os.path.join(REPO, "mytorch"))
        if rel in keep_stripped:
            continue
        target = folder / "mytorch" / rel
        stripped = target.read_text()
        source = open(path, encoding="utf-8").read()
        todos = [m.group(0) for m in markers.TODO_BLOCK.finditer(stripped)]
        regions = markers.find_regions(source.split("\n"), path)
        bodies = [todo if not optional and region.text.startswith("optional") else body
                  for todo, region, body in zip(todos, regions, region_bodies(path))]
        target.write_text(markers.restore(stripped, bodies))
    return folder


def test_bptt_is_the_students_whole(built, tmp_path):
    """Every cell written, recurrent.py as handed out: each sequence part is 'not implemented yet' and names the
    first BPTT TODO it reached; the solution's recurrent.py then gives full marks. Nothing in the handed-out
    file runs the walk: each of its four TODOs is a part of it."""
    out = built[0]
    stripped = open(os.path.join(out, "mytorch", "nn", "recurrent.py")).read()
    assert stripped.count("raise NotImplementedError") == 4
    for step, method in ((1, "forward"), (2, "_run_direction"), (3, "backward"), (4, "_backward_direction")):
        assert f"Recurrent.{method}:" in stripped and f"(assignment/6-bptt.md, step {step})" in stripped
    for gone in ("cell.forward(", "cell.backward(", "reversed(range", "np.where(live"):
        assert gone not in stripped, gone
    submission = _restored(out, tmp_path / "cells", keep_stripped={os.path.join("nn", "recurrent.py")})
    proc = run_cli(["--submission", str(submission), "--json", str(tmp_path / "r.json"), "6", "7"])
    assert proc.returncode == 0, proc.stderr
    tests = check_gradescope(load_results(tmp_path / "r.json"))
    sequence = [p.number for p in spec.PARTS if p.kind == "sequence"]
    assert sorted(tests) == sorted(sequence + ["7.1", "7.2"])
    for number in sequence:
        assert tests[number]["score"] == 0 and "not implemented yet" in tests[number]["output"], tests[number]
        assert "mytorch/nn/recurrent.py:" in tests[number]["output"]
    assert tests["7.1"]["score"] == tests["7.1"]["max_score"] and tests["7.2"]["score"] == tests["7.2"]["max_score"]
    shutil.copy(os.path.join(REPO, "mytorch", "nn", "recurrent.py"), submission / "mytorch" / "nn" / "recurrent.py")
    proc = run_cli(["--submission", str(submission), "--json", str(tmp_path / "full.json")])
    assert proc.returncode == 0 and load_results(tmp_path / "full.json")["score"] == 100


def test_the_student_layer_falls_back_to_the_loop_without_a_fast_path(built, tmp_path):
    """The fast paths are optional TODOs: with them left, a layer whose fast_path is on runs the student's loop,
    and gives the solution's values."""
    submission = _restored(built[0], tmp_path / "loops", optional=False)
    assert "optional and not graded" in (submission / "mytorch" / "nn" / "gru_cell.py").read_text()
    script = ("import numpy as np\nfrom mytorch.nn import GRU, LSTM\n"
              "for Layer in (GRU, LSTM):\n"
              "    layer = Layer(3, 4, num_layers=2, bidirectional=True, rng=0)\n"
              "    Y, _ = layer.forward(np.linspace(-1, 1, 30).reshape(5, 2, 3), lengths=np.array([5, 3]))\n"
              "    dX, _ = layer.backward(np.ones_like(Y))\n"
              "    print(layer.fast_path, sorted(set(layer._paths.values())), repr(float(Y.sum() + dX.sum())))\n")
    theirs = subprocess.run([sys.executable, "-c", script], cwd=submission, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=""))
    ours = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=""))
    assert theirs.returncode == 0 and ours.returncode == 0, theirs.stderr + ours.stderr
    for mine, solution in zip(theirs.stdout.splitlines(), ours.stdout.splitlines()):
        assert mine.startswith("True ['loop'] ") and solution.startswith("True ['fast'] ")
        assert np.isclose(float(mine.split()[-1]), float(solution.split()[-1]), rtol=1e-10)


def test_each_notebook_names_the_parts_it_needs(built, tmp_path):
    """In the handout every part is a TODO, so each notebook stops at its needs(...) call, naming its parts and the
    grader's command; with the solution nothing is missing."""
    probe = ("import json, sys\nsys.path.insert(0, 'notebooks')\nimport needs\n"
             "print(json.dumps(needs.missing(*needs.PROBES, *needs.OPTIONAL)))\n"
             "try:\n    needs.needs('8.2', '8.3', '8.4', '8.5', '8.6', '2.1')\nexcept needs.MissingParts as e:\n"
             "    print(e)\n")
    handout = subprocess.run([sys.executable, "-c", probe], cwd=built[0], capture_output=True, text=True,
                             env=dict(os.environ, PYTHONPATH=""))
    lines = handout.stdout.splitlines()
    assert json.loads(lines[0]) == [p.number for p in spec.PARTS] + ["GRUCell fast path"], handout.stderr
    assert lines[1] == "this section needs parts 2.1, 8.2-8.6; run `python -m autograder 2 8`"
    solution = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=""))
    assert solution.stdout.splitlines()[0] == "[]", solution.stderr
    for path in NOTEBOOKS:
        first = next(c for c in _cells(path) if c["cell_type"] == "code")
        assert "from needs import needs" in "".join(first["source"]), path

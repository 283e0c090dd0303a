"""mytorch.nn loads a cell's file when one of its names is first used: a program (or a grading child) that uses
one cell runs that file alone, and a half-written file breaks only its own names."""
import shutil
import subprocess
import sys
import textwrap

import pytest

import mytorch

CELL_FILES = {"RNNCell": "rnn_cell", "GRUCell": "gru_cell", "GRUBlockCell": "gru_block_cell", "GMUCell": "gmu_cell",
              "TGRUCell": "tgru_cell", "LSTMCell": "lstm_cell", "ctc_loss": "ctc", "greedy_search": "ctc_decode",
              "GRU": "recurrent", "Linear": "linear", "MSELoss": "loss"}


def run(root, code):
    proc = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(root)!r})\n"
                           + textwrap.dedent(code)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


@pytest.fixture
def copy(tmp_path):
    shutil.copytree(mytorch.__path__[0], tmp_path / "mytorch", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_importing_the_package_runs_no_file_of_a_cell_a_layer_a_loss_or_an_optimizer(copy):
    loaded = run(copy, """
        import mytorch
        print(*sorted(m for m in sys.modules if m.startswith('mytorch.')))
        print('then', mytorch.optim.SGD.__module__, 'optim' in dir(mytorch), 'GRUCell' in dir(mytorch.nn))""")
    before, after = loaded[:loaded.index("then")], loaded[loaded.index("then") + 1:]
    assert not {f"mytorch.nn.{file}" for file in CELL_FILES.values()} & set(before), before
    assert not [m for m in before if m.startswith("mytorch.optim")], before
    assert after == ["mytorch.optim.sgd", "True", "True"]                  # there when asked for


@pytest.mark.parametrize("name", CELL_FILES)
def test_a_name_loads_its_own_file_alone(copy, name):
    loaded = run(copy, f"""
        from mytorch.nn import {name}
        print({name}.__module__, *sorted(m for m in sys.modules if m.startswith('mytorch.nn.')))""")
    assert loaded[0] == f"mytorch.nn.{CELL_FILES[name]}"
    others = {f"mytorch.nn.{file}" for file in CELL_FILES.values()} - {loaded[0]}
    assert not others & set(loaded[1:]), loaded


def test_a_broken_file_breaks_its_names_alone_every_time(copy):
    path = copy / "mytorch" / "nn" / "gru_cell.py"
    path.write_text(path.read_text().replace("import math\n", "import math\ndef broken(:\n", 1))
    said = run(copy, """
        import numpy as np
        import mytorch.nn as nn
        for _ in range(2):
            try:
                nn.GRUCell
            except SyntaxError as error:
                print('SyntaxError', error.filename.endswith('gru_cell.py'))
        cell = nn.RNNCell(3, 4, rng=0)
        print(cell.forward(np.ones((2, 3))).shape == (2, 4))
        try:
            from mytorch.nn import *
        except SyntaxError:
            print('star SyntaxError')
        print(nn.LSTMCell.__name__)""")
    assert said == ["SyntaxError", "True", "SyntaxError", "True", "True", "star", "SyntaxError", "LSTMCell"]


def test_cells_are_the_six_cell_classes_and_unknown_names_are_attribute_errors(copy):
    said = run(copy, """
        import mytorch.nn as nn
        print(*[c.__name__ for c in nn.CELLS])
        try:
            nn.NoSuchCell
        except AttributeError as error:
            print('AttributeError', repr(str(error)))""")
    assert said[:6] == ["RNNCell", "GRUCell", "GRUBlockCell", "GMUCell", "TGRUCell", "LSTMCell"]
    assert said[6:] == ["AttributeError", "\"module", "'mytorch.nn'", "has", "no", "attribute", "'NoSuchCell'\""]

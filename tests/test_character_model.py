"""Notebook 11, the character model: the text it reads ships with the handout, a student's copy runs once the
cells it trains are written, and a course without the LSTM either runs the LSTM as provided code ("working") or
does not ship the notebook, and says so ("removed"), as with every notebook that runs a removed cell."""
import filecmp
import json
import os
import re
import subprocess
import sys

import pytest

from handout import build, markers, sections
from tests.graderkit import REPO

NOTEBOOK = "11_character_model.ipynb"
TEXT = os.path.join("notebooks", "data", "coriolanus.txt")
WITHOUT_LSTM = """[assignment]
title = "Recurrent nets without the LSTM"
sections = ["1", "2", "3", "4", "5", "6", "8"]
"""


def _build(tmp_path, config_text=None):
    config = None
    if config_text is not None:
        config = tmp_path / "course.toml"
        config.write_text(config_text)
        config = str(config)
    warnings = []
    out = build.build_handout(str(tmp_path / "handout"), config, warn=warnings.append)[0]
    return out, warnings


def _write_every_todo(out):
    """The handout in ``out`` as a student leaves it when every assigned TODO is written: the solution put back in
    each file whose regions are all TODOs (a section left out as working code keeps its optional fast paths as
    TODOs; the sequence layer then runs its per-step loop)."""
    for folder, _, names in os.walk(os.path.join(REPO, "mytorch")):
        for name in (n for n in names if n.endswith(".py")):
            source = os.path.join(folder, name)
            with open(source, encoding="utf-8") as f:
                bodies = markers.region_texts(f.read(), source)
            target = os.path.join(out, os.path.relpath(source, REPO))
            with open(target, encoding="utf-8") as f:
                shipped = f.read()
            if bodies and len(markers.TODO_BLOCK.findall(shipped)) == len(bodies):
                with open(target, "w", encoding="utf-8") as f:
                    f.write(markers.restore(shipped, bodies))


def _missing(out):
    """What needs.py, run in the handout's notebooks/ folder, finds still missing of the parts notebook 11 runs."""
    with open(os.path.join(out, "notebooks", NOTEBOOK), encoding="utf-8") as f:
        parts = sections.notebook_needs(json.load(f))
    code = f"import json, needs\nprint(json.dumps(needs.missing(*{parts!r})))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(out, "notebooks"), capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=""), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().split("\n")[-1])


def _readme_line(out):
    with open(os.path.join(out, "README.md"), encoding="utf-8") as f:
        return next((line for line in f.read().split("\n") if line.startswith(f"- `notebooks/{NOTEBOOK}`")), None)


def test_the_text_is_a_few_kb_of_plain_english_and_ships_with_the_handout(tmp_path):
    with open(os.path.join(REPO, TEXT), encoding="utf-8") as f:
        text = f.read()
    assert 3000 < len(text.encode("utf-8")) < 10000 and text.isascii() and "\r" not in text
    assert text.startswith("First Citizen:\nBefore we proceed any further, hear me speak.\n")
    out, _ = _build(tmp_path)
    assert filecmp.cmp(os.path.join(REPO, TEXT), os.path.join(out, TEXT), shallow=False)
    assert os.path.isfile(os.path.join(out, "notebooks", NOTEBOOK))
    assert _readme_line(out).endswith("(runs parts 1.1-1.2, 2.1-2.2, 3.1-3.2, 4.1-4.2, 5.1-5.2, 6.1-6.5, 7.1-7.3)")


def test_a_course_without_the_lstm_runs_it_as_provided_code(tmp_path):
    out, _ = _build(tmp_path, WITHOUT_LSTM)
    assert os.path.isfile(os.path.join(out, "notebooks", NOTEBOOK)) and os.path.isfile(os.path.join(out, TEXT))
    assert _readme_line(out).endswith("(runs parts 1.1-1.2, 2.1-2.2, 3.1-3.2, 4.1-4.2, 5.1-5.2, 6.1-6.5, and "
                                      "provided code of sections not in this course)")
    assert _missing(out) == ["1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2", "5.1", "5.2", "6.1", "6.2",
                             "6.3", "6.4", "6.5", "7.3"]      # 7.3 runs the LSTM through the student's BPTT
    _write_every_todo(out)
    assert _missing(out) == []                                 # the LSTM cell itself is provided, working


def test_a_course_that_removes_the_lstm_does_not_ship_the_notebook_and_says_so(tmp_path):
    out, warnings = _build(tmp_path, WITHOUT_LSTM + 'left_out = "removed"\n')
    shipped = sorted(os.listdir(os.path.join(out, "notebooks")))
    assert NOTEBOOK not in shipped and "07_training.ipynb" not in shipped   # 07 trains the LSTM too
    assert _readme_line(out) is None
    assert any(f"{NOTEBOOK} (runs sections 7)" in w for w in warnings), warnings


@pytest.mark.slow
def test_the_students_notebook_runs_once_the_cells_it_trains_are_written(tmp_path):
    """The student's copy, every TODO of mytorch written (the solution put back), executed in a fresh kernel from
    the handout's notebooks/ folder: it finds its text there and passes its own checks."""
    pytest.importorskip("nbclient")
    from handout import site
    out, _ = _build(tmp_path)
    _write_every_todo(out)
    ran = site.execute_notebook(os.path.join(out, "notebooks", NOTEBOOK), out)
    outputs = [o for c in ran.cells if c.cell_type == "code" for o in c.outputs]
    assert not any(o.output_type == "error" for o in outputs)
    printed = "".join(o.get("text", "") for o in outputs)
    assert "runs parts 1.1-1.2, 2.1-2.2, 3.1-3.2, 4.1-4.2, 5.1-5.2, 6.1-6.5, 7.1-7.3: all written" in printed
    assert re.search(r"trained and sampled 6 models in \d+ s", printed), printed

"""A student steps through a notebook while writing: each section names the parts its own cells run, so with
only the first section's parts written a notebook runs past its first cell and stops with a plain message; an
exercise of the notebook left to write stops its own cell and no other; with everything written it runs to the
end. Each notebook is run in a fresh kernel, from the built student handout with some parts put back."""
import json
import os
import re

import pytest

from handout import sections
from tests import notebook_steps
from tests.graderkit import REPO

pytestmark = pytest.mark.slow                  # runs every student notebook, three times each
pytest.importorskip("nbclient", reason="the test extras (pip install -e '.[test]') run the notebooks")

NOTEBOOKS = sorted(n for n in os.listdir(os.path.join(REPO, "notebooks")) if n.endswith(".ipynb"))
PLAIN_STOPS = {"MissingParts": "The notebook stops here until you write what it runs:",
               "NotWritten": "The notebook stops here until you write this cell's exercise:"}


def first_section_parts(name):
    """The graded parts of a notebook's first needs(...) call: what its first section runs."""
    with open(os.path.join(REPO, "notebooks", name), encoding="utf-8") as f:
        cells = json.load(f)["cells"]
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and (found := sections.NEEDS.search(source)):
            return [n for n in re.findall(r'"([^"]+)"', found.group(1)) if re.fullmatch(r"\d\.\d+", n)]
    return []


def assert_plain(error):
    text = "\n".join(error.traceback)
    assert error.ename in PLAIN_STOPS and error.traceback[0] == PLAIN_STOPS[error.ename], text
    assert "Traceback" not in text and "File " not in text and "needs.py" not in text, text


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_with_only_the_first_sections_parts_a_notebook_runs_past_its_first_cell(built_handout, tmp_path, name):
    parts = first_section_parts(name)
    assert parts, name
    everything = sections.notebook_needs(json.load(open(os.path.join(REPO, "notebooks", name), encoding="utf-8")))
    folder = notebook_steps.student_copy(built_handout[0], REPO, str(tmp_path / "course"), parts)
    ran, total, error = notebook_steps.run_until_stop(os.path.join(folder, "notebooks", name))
    assert ran >= 2, (name, ran, error and error.traceback)             # the finder cell, and the first section
    if error is None:                                                    # the first section runs it all
        assert ran == total and set(parts) == set(everything), name
        return
    assert_plain(error)
    said = "\n".join(error.traceback)
    assert not any(re.search(rf"\b{re.escape(p)}\b", said.split("run `")[0]) for p in parts
                   if error.ename == "MissingParts"), said        # what stops it is not a part already written


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_an_exercise_left_to_write_stops_its_own_cell_only_and_all_written_runs_to_the_end(built_handout, tmp_path,
                                                                                              name):
    folder = notebook_steps.student_copy(built_handout[0], REPO, str(tmp_path / "parts"), "all")
    path = os.path.join(folder, "notebooks", name)
    for index, ename, source in notebook_steps.run_all(path):
        assert ename == "NotWritten" and "raise todo(" in source, (name, index, ename)
    folder = notebook_steps.student_copy(built_handout[0], REPO, str(tmp_path / "all"), "all", notebooks_written=True)
    ran, total, error = notebook_steps.run_until_stop(os.path.join(folder, "notebooks", name))
    assert error is None and ran == total, (name, ran, total, error and error.traceback)

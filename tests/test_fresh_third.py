"""The data of the third set of realistic mistakes (tests/fresh_mistakes_third.py): each edit fits the solution."""
import collections
import os

import pytest

from autograder.parts.spec import PARTS_BY_NUMBER
from tests.fresh_mistakes_third import FRESH_THIRD, ROOT, UNGRADED_THIRD, check

KEYS = {"file", "part", "line", "what", "old", "new", "truth"}
CELL_FILES = {"mytorch/nn/rnn_cell.py", "mytorch/nn/gru_cell.py", "mytorch/nn/gru_block_cell.py",
              "mytorch/nn/gmu_cell.py", "mytorch/nn/tgru_cell.py", "mytorch/nn/lstm_cell.py"}


def _text(relpath):
    with open(os.path.join(ROOT, relpath), encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("k", range(len(FRESH_THIRD + UNGRADED_THIRD)))
def test_each_edit_fits_the_solution(k):
    mistake = (FRESH_THIRD + UNGRADED_THIRD)[k]
    assert set(mistake) == KEYS
    assert mistake["part"] in PARTS_BY_NUMBER
    assert all(type(mistake[key]) is str and mistake[key].strip() for key in KEYS - {"line"})
    text = _text(mistake["file"])
    check(mistake, text)                                  # once, whole lines, same count, line = its first line
    assert text.count(mistake["old"]) == 1
    assert mistake["old"].count("\n") == mistake["new"].count("\n")
    first = text[:text.index(mistake["old"])].count("\n") + 1
    assert mistake["line"] == first
    lines = text.splitlines()
    assert lines[first - 1] + "\n" == mistake["old"].splitlines(keepends=True)[0]


def test_the_set_is_large_enough_and_weighted():
    assert len(FRESH_THIRD) >= 40
    area = collections.Counter()
    for mistake in FRESH_THIRD:
        name = mistake["file"]
        area["bptt" if name == "mytorch/nn/recurrent.py" else
             "ctc loss" if name in ("mytorch/nn/ctc.py", "mytorch/nn/ctc_course.py") else
             "ctc decoding" if name == "mytorch/nn/ctc_decode.py" else
             "cells" if name in CELL_FILES else name] += 1
    assert area["bptt"] >= 14 and area["ctc loss"] >= 12 and area["ctc decoding"] >= 12
    assert 4 <= area["cells"] <= 6
    assert set(area) == {"bptt", "ctc loss", "ctc decoding", "cells"}
    # decoding covers greedy (collapse, 8.7) and beam search (8.8)
    assert {m["part"] for m in FRESH_THIRD if m["file"] == "mytorch/nn/ctc_decode.py"} == {"8.7", "8.8"}


def test_no_edit_repeats():
    edits = [(m["file"], m["old"], m["new"]) for m in FRESH_THIRD + UNGRADED_THIRD]
    assert len(edits) == len(set(edits))
    assert len({m["what"] for m in FRESH_THIRD}) == len(FRESH_THIRD)

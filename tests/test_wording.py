"""Every text a student or user reads names its sources by what they are (CMU 11-785's GRU handout,
TensorFlow's GRUBlockCellGrad documentation, a PyTorch forum question, Lux's TGRUCell documentation), never
by a label or a file they cannot open. Scanned: the source tree and the built student handout."""
import os
import re

import pytest

from tests.graderkit import REPO

# words that point at documents a reader does not have, or at how the project was made
PRIVATE = [
    r"seed[ _-]?00[0-4]",                         # labels of source documents
    r"seeds?/0\d\d",
    r"\b(DESIGN|REFERENCE|STYLE|CONTRACT|PREAMBLE)\.md\b",
    r"/work/(shared|wt)\b",
    r"came with this (assignment|cell)",
    r"the text that came with",
    r"the original assignment",
    r"the seed's",
    r"as in the seed\b",
    r"\bthe seed (document|text|file|question|code|equations)",
]
PATTERN = re.compile("|".join(f"(?:{p})" for p in PRIVATE), re.IGNORECASE)

SCANNED = ["mytorch", "autograder", "handout", "notebooks", "tests", "benchmarks", "docs", "README.md", "setup.py"]
THIS_FILE = os.path.abspath(__file__)


def text_files(root, names=None):
    for name in names or [""]:
        top = os.path.join(root, name)
        walk = [(os.path.dirname(top), [], [os.path.basename(top)])] if os.path.isfile(top) else os.walk(top)
        for folder, dirs, files in walk:
            dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
            for file in files:
                path = os.path.join(folder, file)
                if path == THIS_FILE or file.endswith((".npz", ".pyc", ".zip")):
                    continue
                try:
                    with open(path, encoding="utf-8") as f:
                        yield path, f.read()
                except UnicodeDecodeError:
                    continue


def hits(root, names=None):
    return [f"{os.path.relpath(path, root)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
            for path, text in text_files(root, names) for m in PATTERN.finditer(text)]


def test_the_pattern_catches_what_it_should():
    for phrase in ("seed 003", "Seed-000", "seed_004", "seeds/001_x.txt", "see DESIGN.md", "REFERENCE.md's",
                   "(the text that came with this assignment)", "The course interface of the original assignment",
                   "as in the seed.", "the seed's question"):
        assert PATTERN.search(phrase), phrase
    for fine in ("a numpy Generator or seed", "--fresh-seed 3", "from a fixed seed", "seed=0", "seed 11785"):
        assert not PATTERN.search(fine), fine


def test_source_tree_names_sources_by_what_they_are():
    assert hits(REPO, SCANNED) == []


@pytest.fixture(scope="module")
def built(built_handout):
    return built_handout[0]


def test_built_handout_names_sources_by_what_they_are(built):
    assert os.path.exists(os.path.join(built, "assignment", "3-gru-block-cell.md"))
    assert hits(built) == []


def test_the_errata_are_stated_in_the_handout(built):
    """A student sees each of TensorFlow's documented formulas next to the kernel's, without the documentation."""
    with open(os.path.join(built, "assignment", "3-gru-block-cell.md"), encoding="utf-8") as f:
        text = f.read()
    errata = text[text.index("## TensorFlow's documentation has errata"):]
    for documented in ("d_x_component_1 = d_r_bar * w_r_x^T + d_u_bar * w_r_x^T",
                       "d_h_prev_componenet_1 = d_r_bar * w_r_h_prev^T + d_u_bar * w_r_h_prev^T",
                       "d_h_prev = d_h_prev_component_1 + d_h_prevr ∘ r + u",
                       "d_w_ru = x_h_prevr^T * d_c_bar", "d_w_c = x_h_prev^T * d_r_bar_u_bar",
                       "d_u_bar = d_h ∘ (h - c) ∘ u ∘ (1 - u)", "b_ru = [b_ru_x b_ru_h]",
                       "d_r_bar_u_bar = [d_r_bar d_u_bar]",
                       "tf.raw_ops.GRUBlockCellGrad"):
        assert documented in errata, documented
    rows = [line for line in errata.splitlines() if re.match(r"\| [1-7] \|", line)]
    assert [row.split("|")[1].strip() for row in rows] == [str(k) for k in range(1, 8)]

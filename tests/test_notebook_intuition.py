"""The pictures before the algebra (notebooks/diagrams.py), the vanishing-gradient claims of notebook 06 on
real values, and the question cells of notebooks 01-10: answers held back from students until released."""
import ast
import glob
import importlib.util
import json
import os

import matplotlib
import numpy as np
import pytest

from mytorch.nn import RNNCell

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the headless backend is chosen)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = {os.path.basename(p)[:2]: p for p in sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))}
DIAGRAMS = os.path.join(REPO, "notebooks", "diagrams.py")
QUESTIONED = [f"{k:02d}" for k in range(1, 11)]


def _diagrams():
    found = importlib.util.spec_from_file_location("_mytorch_notebook_diagrams", DIAGRAMS)
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def _cells(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["cells"]


def _text(cell):
    return "".join(cell["source"])


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


# ---- the pictures


@pytest.mark.parametrize("draw, expected", [
    ("unrolled_rnn", ["$x_{t}$", "$x_{t-1}$", "$W_{ih}$", "$W_{hh}$", "$h_{t-1}$", "$h_{t}$", "RNNCell"]),
    ("unrolled_rnn_backward", [r"$\times\,\mathrm{diag}(1-h_{t}^2)\,W_{hh}$", r"$\partial L/\partial h_{t}$"]),
    ("gru_circuit", [r"$r=\sigma(\cdot)$", r"$z=\sigma(\cdot)$", r"$n=\tanh(\cdot)$", "$h_{t-1}$", "$h_t$", "$x_t$",
                     "$W_{hn}$", r"$(1-z)\odot n$", r"$z\odot h_{t-1}$"]),
    ("lstm_circuit", [r"$i=\sigma$", r"$f=\sigma$", r"$g=\tanh$", r"$o=\sigma$", "$c_{t-1}$", "$c_t$", "$h_{t-1}$",
                      "$h_t$", "$x_t$", r"$f\odot c_{t-1}$"]),
])
def test_each_picture_draws_headless_with_the_names_of_the_code(draw, expected):
    diagrams = _diagrams()
    if draw == "unrolled_rnn_backward":
        ax = diagrams.unrolled_rnn(backward=True)
    else:
        ax = getattr(diagrams, draw)()
    try:
        drawn = diagrams.labels(ax)
        assert matplotlib.get_backend().lower() == "agg"
        missing = [label for label in expected if not any(label in text for text in drawn)]
        assert missing == [], (draw, missing, drawn)
        assert ax.patches                                        # boxes, nodes and arrows, not only text
        ax.figure.canvas.draw()                                  # renders: every mathtext label parses
    finally:
        plt.close("all")


def test_the_pictures_use_matplotlib_alone():
    """They run before needs(): nothing of the student's mytorch, nor anything beyond the runtime deps."""
    with open(DIAGRAMS, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"matplotlib"}


@pytest.mark.parametrize("number, draw", [("01", "unrolled_rnn"), ("02", "gru_circuit"), ("06", "unrolled_rnn"),
                                          ("08", "lstm_circuit")])
def test_the_picture_comes_before_the_algebra_and_before_needs(number, draw):
    cells = _cells(NOTEBOOKS[number])
    sources = [_text(c) for c in cells]
    picture = next(i for i, s in enumerate(sources) if f"from diagrams import {draw}" in s)
    first_needs = next(i for i, s in enumerate(sources) if "needs(\"" in s)
    first_derivation = next((i for i, c in enumerate(cells) if "derivation" in _tags(c)), len(cells))
    assert picture < first_needs and picture < first_derivation
    assert cells[picture - 1]["cell_type"] == "markdown"       # the paragraph that says what it is for


# ---- notebook 06's claims, on the values of mytorch's RNNCell

T, N, I, H, STEPS = 60, 8, 4, 32, 50


def _product_norm(cell, W, X):
    """‖∂h_50/∂h_0‖₂ for the first sequence, from the cell's forward, and the mean tanh' along the way; the
    product is checked against the cell's backward."""
    cell.params["weight_hh"] = W
    state, J, slopes = None, np.eye(H), []
    for t in range(STEPS):
        state = cell.forward(X[t], state)
        J = (1 - state[0] ** 2)[:, None] * W @ J
        slopes.append(np.mean(1 - state[0] ** 2))
    w = np.random.default_rng(1).standard_normal(H)
    d = np.zeros((N, H))
    d[0] = w
    for t in range(STEPS):
        _, d = cell.backward(d)
    np.testing.assert_allclose(d[0], w @ J, rtol=1e-8, atol=1e-300)
    return np.linalg.norm(J, 2), np.mean(slopes)


@pytest.fixture(scope="module")
def vanishing():
    X = np.random.default_rng(0).standard_normal((T, N, I))
    cell = RNNCell(I, H, rng=2)
    W0 = cell.params["weight_hh"].copy()
    U, S, Vt = np.linalg.svd(W0)
    sigmas = np.linspace(0.5, 2.0, 31)
    out = {"sigmas": sigmas, "S": S, "rho": np.max(np.abs(np.linalg.eigvals(W0)))}
    for kind, W in (("random", W0 / S[0]), ("equal", U @ Vt)):
        out[kind] = np.array([_product_norm(cell, W * s, X) for s in sigmas])
    return out


def test_the_product_of_jacobians_obeys_its_bound_and_vanishes_below_one(vanishing):
    sigmas = vanishing["sigmas"]
    for kind in ("random", "equal"):
        norms = vanishing[kind][:, 0]
        assert np.all(norms <= sigmas ** STEPS * (1 + 1e-9)), kind
        below = norms[sigmas < 1]
        assert np.all(below < 1e-3) and np.all(np.diff(below) > 0), kind      # vanishes, less as σ_max nears 1


def test_with_equal_singular_values_the_transition_is_near_one_and_saturation_tames_it(vanishing):
    sigmas, norms, slopes = vanishing["sigmas"], vanishing["equal"][:, 0], vanishing["equal"][:, 1]
    crossing = sigmas[np.argmax(norms >= 1)]
    assert 1.0 < crossing <= 1.5
    assert norms[sigmas == 0.5][0] < 1e-12 and norms[-1] > 1e2          # from vanished to grown
    assert norms[-1] < 1e-10 * 2.0 ** STEPS                             # far below the bound
    assert slopes[0] > 0.9 and slopes[-1] < 0.6 and np.all(np.diff(slopes) < 0)   # tanh saturates


def test_a_random_w_hh_still_vanishes_above_one(vanishing):
    assert vanishing["rho"] / vanishing["S"][0] < 0.8
    assert vanishing["random"][-1, 0] < 1                               # σ_max = 2, and still below 1


def test_truncated_bptt_drops_the_long_contributions():
    """Chunks of k steps, the state carried on: the gradient lost shrinks with k and is zero at k = T."""
    X = np.random.default_rng(0).standard_normal((T, N, I))
    Ws = np.random.default_rng(5).standard_normal((T, N, H))
    cell = RNNCell(I, H, rng=2)

    def chunked(k):
        cell.zero_grad()
        state = None
        for start in range(0, T, k):
            for t in range(start, min(start + k, T)):
                state = cell.forward(X[t], state)
            d = np.zeros((N, H))
            for t in reversed(range(start, min(start + k, T))):
                _, d = cell.backward(Ws[t] + d)
        return cell.grads["weight_hh"].copy()

    full = chunked(T)
    lost = [np.linalg.norm(chunked(k) - full) / np.linalg.norm(full) for k in (1, 5, 20, T)]
    assert lost[0] > 0.3 and np.all(np.diff(lost) < 0) and lost[-1] == 0


# ---- the questions: held back from students as derivations are


@pytest.mark.parametrize("number", QUESTIONED)
def test_every_notebook_asks_questions_with_answers_held_back(number):
    cells = _cells(NOTEBOOKS[number])
    asked = [i for i, c in enumerate(cells) if _text(c).startswith("**Question ")]
    assert 2 <= len(asked) <= 3
    for i in asked:
        assert not _tags(cells[i])                                        # the question is for everyone
        answer, exercise = cells[i + 1], cells[i + 2]
        assert _tags(answer) == ["derivation"] and _text(answer).startswith("**Answer ")
        assert _tags(exercise) == ["exercise"] and _text(exercise).startswith("**Your answer:**")


@pytest.fixture(scope="module")
def handouts(built_handout, tmp_path_factory):
    from handout import build
    released, _, _ = build.build_handout(str(tmp_path_factory.mktemp("released") / "handout"), solutions=True)
    return built_handout[0], released


def test_students_get_the_questions_and_the_pictures_and_the_answers_once_released(handouts):
    student, released = handouts
    for version in handouts:
        assert os.path.isfile(os.path.join(version, "notebooks", "diagrams.py"))
    for number in QUESTIONED:
        name = os.path.basename(NOTEBOOKS[number])
        source = [_text(c) for c in _cells(NOTEBOOKS[number])]
        answers = [s for s in source if s.startswith("**Answer ")]
        mine = [_text(c) for c in _cells(os.path.join(student, "notebooks", name))]
        after = [_text(c) for c in _cells(os.path.join(released, "notebooks", name))]
        assert [s for s in mine if s.startswith("**Question ")] == [s for s in source if s.startswith("**Question ")]
        assert not any(s.startswith("**Answer ") for s in mine)
        assert sum(s.startswith("**Your answer:**") for s in mine) == len(answers)
        assert [s for s in after if s.startswith("**Answer ")] == answers
        assert not any(s.startswith("**Your answer:**") for s in after)

"""The stored CTC references (section 8) agree with independent oracles: the definitions by brute force over every
alignment, a probability-space rewrite of the course's beam search, and PyTorch's autograd for the gradient."""
import math

import numpy as np
import pytest

from autograder.parts import data
from tests.conftest import needs_torch
from tests.test_ctc import brute_alpha_beta, course_beam_reference, naive_collapse

TOL = dict(rtol=1e-10, atol=1e-300)
SYMBOLS = "abcdefgh"


def cases(number):
    stored = data.load_part(number)
    return list(zip(stored.configs, stored.inputs, stored.expected))


def target_of(ext, blank):
    return tuple(int(c) for c in ext[1::2]) if len(ext) > 1 else ()


def test_extended_targets():
    for config, inputs, expected in cases("8.1"):
        target, blank = inputs["target"].tolist(), config["blank"]
        ext = [blank]
        for label in target:
            ext += [label, blank]
        skip = [int(s % 2 == 1 and s >= 3 and ext[s] != ext[s - 2]) for s in range(len(ext))]
        assert expected["extended_symbols"].tolist() == ext
        assert expected["skip_connect"].tolist() == skip


@pytest.mark.parametrize("number", ["8.2", "8.3"])
def test_alpha_and_beta_by_brute_force(number):
    checked = 0
    for config, inputs, expected in cases(number):
        y, ext = inputs["logits"], inputs["extended_symbols"]
        T, C = y.shape
        if C ** T > 20000:
            continue
        blank = int(ext[0])
        relabel = np.arange(C)                           # brute_alpha_beta takes the blank as class 0
        relabel[[0, blank]] = relabel[[blank, 0]]
        alpha, beta = brute_alpha_beta(y[:, relabel], tuple(relabel[c] for c in target_of(ext, blank)))
        np.testing.assert_allclose(expected["alpha" if number == "8.2" else "beta"], alpha if number == "8.2" else beta,
                                   **TOL)
        checked += 1
    assert checked >= 4


def test_gamma_is_alpha_beta_normalised():
    for _, inputs, expected in cases("8.4"):
        joint = inputs["alpha"] * inputs["beta"]
        np.testing.assert_allclose(expected["gamma"], joint / joint.sum(axis=1, keepdims=True), **TOL)


def test_course_loss_by_brute_force():
    checked = 0
    for _, inputs, expected in cases("8.5"):
        y, target = inputs["logits"], inputs["target"]
        if y.shape[0] > 12:
            continue
        total = 0.0
        for b in range(y.shape[1]):
            yb, tb = y[:inputs["input_lengths"][b], b], tuple(target[b, :inputs["target_lengths"][b]])
            alpha, beta = brute_alpha_beta(yb, tb) if len(yb) <= 8 else (None, None)
            if alpha is None:
                break
            gamma = alpha * beta / (alpha * beta).sum(axis=1, keepdims=True)
            ext = [0]
            for label in tb:
                ext += [label, 0]
            total -= (gamma * np.log(yb[:, ext])).sum()
        else:
            assert expected["loss"][0] == pytest.approx(total / y.shape[1], rel=1e-10)
            checked += 1
    assert checked >= 2


@needs_torch
def test_course_gradient_against_torch_autograd():
    """dY = ∂(Σ_b −log P_b)/∂y. PyTorch's ctc_loss adds exp(log_probs) to its gradient on log_probs (it assumes a
    log_softmax before it), which is +1 on every y[t, c] of a used step: subtract it."""
    import torch
    for _, inputs, expected in cases("8.6"):
        y = torch.tensor(inputs["logits"], requires_grad=True)
        loss = torch.nn.functional.ctc_loss(torch.log(y), torch.tensor(inputs["target"]),
                                            torch.tensor(inputs["input_lengths"]),
                                            torch.tensor(inputs["target_lengths"]), reduction="sum")
        loss.backward()
        used = np.arange(y.shape[0])[:, None] < inputs["input_lengths"][None, :]
        dY = y.grad.numpy() - used[:, :, None]
        np.testing.assert_allclose(expected["dY"], dY, rtol=1e-8, atol=1e-10)


def test_greedy_by_definition():
    for config, inputs, expected in cases("8.7"):
        y = inputs["y_probs"][:, :, 0]                   # (C, T)
        best = y.argmax(axis=0)
        prefix = naive_collapse(best.tolist())
        T = y.shape[1]
        assert expected["decoded_path"].tolist() == list(prefix) + [0] * (T - len(prefix))
        assert expected["log_path_prob"][0] == pytest.approx(math.log(math.prod(y[best, range(T)])), rel=1e-12)


def test_beam_search_by_the_courses_pseudocode():
    """Every case of 8.8, both pruning rules (the default prefix rule's cases first), against the course's
    pseudocode written out in probability space."""
    assert [c["prune"] for c, _, _ in cases("8.8")] == ["prefix"] * 4 + ["hypothesis"] * 6
    for config, inputs, expected in cases("8.8"):
        y = inputs["y_probs"][:, :, 0].T                 # (T, C)
        symbols = config["symbol_set"]
        best, merged = course_beam_reference(y, symbols, config["beam_width"], config["prune"])
        T = y.shape[0]
        codes = [symbols.index(ch) + 1 for ch in best]
        assert expected["best_path"].tolist() == codes + [0] * (T - len(codes))
        assert expected["merged_path_count"].tolist() == [len(merged)]
        for key, value in merged.items():
            stored = expected[f"log_merged_path_scores/{key or '(empty)'}"]
            assert stored[0] == pytest.approx(math.log(value), rel=1e-10)


@needs_torch
def test_the_long_case_needs_log_space():
    """In the 600-step case P is below the smallest float64 (denormals included): a probability-space α is 0."""
    import torch
    long = [i for _, i, _ in cases("8.5") if i["logits"].shape[0] >= 100]
    assert long
    for inputs in long:
        nll = torch.nn.functional.ctc_loss(torch.log(torch.tensor(inputs["logits"])), torch.tensor(inputs["target"]),
                                           torch.tensor(inputs["input_lengths"]),
                                           torch.tensor(inputs["target_lengths"]), reduction="sum")
        assert float(nll) > -math.log(np.nextafter(0, 1))        # exp(-745) is the smallest positive float64

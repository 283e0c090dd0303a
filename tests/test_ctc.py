"""CTC: the loss against PyTorch and against a brute-force sum over every alignment; the course interface against
the same oracle and finite differences; the decoders against exhaustive enumeration of every path."""
import itertools
import math

import numpy as np
import pytest

from mytorch.nn import CTCLoss, beam_search, ctc_loss, greedy_search, prefix_beam_search
from mytorch.nn.ctc import extend_target
from mytorch.nn.ctc_course import CTC, BeamSearchDecoder, GreedySearchDecoder
from mytorch.nn.ctc_course import CTCLoss as CourseCTCLoss
from mytorch.nn.ctc_decode import collapse
from tests.conftest import needs_torch


def log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


# ---- brute force: every class sequence, kept by what it collapses to (no lattice, no recurrence)

def naive_collapse(path, blank=0):
    out, previous = [], None
    for c in path:
        if c != previous and c != blank:
            out.append(c)
        previous = c
    return tuple(out)


def path_prob(y, path, offset=0):
    return math.prod(y[offset + k, c] for k, c in enumerate(path))


def brute_alpha_beta(y, target, blank=0):
    """α (T, S) and the course's β (T, S) by enumeration, for probabilities y (T, C)."""
    T, C = y.shape
    target = tuple(target)
    S = 2 * len(target) + 1
    alpha, beta = np.zeros((T, S)), np.zeros((T, S))
    for s in range(S):
        done = target[:(s + 1) // 2]                     # the labels reached at s
        ends_in_blank = s % 2 == 0
        # a shortest class sequence that ends at s: the labels, a blank between equal neighbours, (a blank)
        representative = []
        for label in done:
            if representative and representative[-1] == label:
                representative.append(blank)
            representative.append(label)
        if ends_in_blank:
            representative.append(blank)
        for t in range(T):
            for path in itertools.product(range(C), repeat=t + 1):
                last_ok = (path[-1] == blank) if ends_in_blank else (path[-1] == done[-1])
                if last_ok and naive_collapse(path, blank) == done:
                    alpha[t, s] += path_prob(y, path)
            for rest in itertools.product(range(C), repeat=T - 1 - t):
                if naive_collapse(representative + list(rest), blank) == target:
                    beta[t, s] += path_prob(y, rest, offset=t + 1)
    return alpha, beta


def brute_prefix_probs(y, blank=0):
    """{prefix: Σ over every path that collapses to it} for probabilities y (T, C)."""
    out = {}
    for path in itertools.product(range(y.shape[1]), repeat=y.shape[0]):
        prefix = naive_collapse(path, blank)
        out[prefix] = out.get(prefix, 0.0) + path_prob(y, path)
    return out


TINY = [((4, 3), (1, 2)), ((5, 3), (1, 1)), ((4, 4), (2,)), ((3, 3), ()), ((5, 3), (2, 1, 2)), ((2, 3), (1, 1))]


@pytest.mark.parametrize("shape, target", TINY, ids=[f"T{s[0]}C{s[1]}-{t}" for s, t in TINY])
def test_alpha_beta_gamma_and_loss_match_the_sum_over_every_alignment(shape, target):
    rng = np.random.default_rng(sum(shape) + len(target))
    y = rng.uniform(0.05, 1.0, shape)                    # positive scores, deliberately not normalised
    ctc = CTC(BLANK=0)
    ext, skip = ctc.extend_target_with_blank(np.array(target, dtype=np.int64))
    alpha, beta = ctc.get_forward_probs(y, ext, skip), ctc.get_backward_probs(y, ext, skip)
    alpha_ref, beta_ref = brute_alpha_beta(y, target)
    np.testing.assert_allclose(alpha, alpha_ref, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(beta, beta_ref, rtol=1e-12, atol=1e-300)
    P = brute_prefix_probs(y).get(tuple(target), 0.0)
    joint = alpha_ref * beta_ref
    if P > 0:
        np.testing.assert_allclose(joint.sum(axis=1), P, rtol=1e-12)       # Σ_s α β = P at every t
        np.testing.assert_allclose(ctc.get_posterior_probs(alpha, beta), joint / P, rtol=1e-12, atol=1e-300)
        loss = ctc_loss(np.log(y), np.array(target, dtype=np.int64), shape[0], len(target), reduction="sum")
        assert loss == pytest.approx(-math.log(P), rel=1e-12)
    else:                                                # impossible: no alignment of that length
        assert joint.sum() == 0


def test_a_padded_batch_gives_each_sequence_its_own_loss():
    """Unequal input and target lengths share one padded lattice: each loss is the brute-force −log P."""
    rng = np.random.default_rng(21)
    T, C = 5, 3
    log_probs = log_softmax(rng.standard_normal((T, 4, C)))
    targets = np.array([[1, 2, 2], [2, 0, 0], [1, 1, 0], [0, 0, 0]])
    input_lengths, target_lengths = np.array([5, 3, 4, 2]), np.array([3, 1, 2, 0])
    losses = ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="none")
    for n in range(4):
        y = np.exp(log_probs[:input_lengths[n], n])
        P = brute_prefix_probs(y).get(tuple(targets[n, :target_lengths[n]]), 0.0)
        assert losses[n] == pytest.approx(-math.log(P), rel=1e-12)
    module = CTCLoss(reduction="sum")
    module(log_probs, targets, input_lengths, target_lengths)
    grad = module.backward()
    for n in range(4):
        alone = CTCLoss(reduction="sum")
        alone(log_probs[:input_lengths[n], n], targets[n, :target_lengths[n]], input_lengths[n], target_lengths[n])
        np.testing.assert_allclose(grad[:input_lengths[n], n], alone.backward(), rtol=1e-12, atol=1e-15)
        assert (grad[input_lengths[n]:, n] == 0).all()


def test_extend_target_with_blank_is_the_courses():
    ext, skip = CTC().extend_target_with_blank(np.array([1, 3, 3, 2]))
    assert ext.tolist() == [0, 1, 0, 3, 0, 3, 0, 2, 0]
    assert skip.tolist() == [0, 0, 0, 1, 0, 0, 0, 1, 0]  # no skip between the two 3s
    ext, skip = CTC(BLANK=4).extend_target_with_blank(np.array([1]))
    assert ext.tolist() == [4, 1, 4] and skip.tolist() == [0, 0, 0]
    assert extend_target(np.array([], dtype=np.int64))[0].tolist() == [0]


# ---- PyTorch as the second oracle

def torch_ctc(log_probs, targets, input_lengths, target_lengths, **kwargs):
    import torch
    x = torch.tensor(log_probs, requires_grad=True)
    loss = torch.nn.functional.ctc_loss(x, torch.tensor(targets), torch.tensor(input_lengths),
                                        torch.tensor(target_lengths), **kwargs)
    loss.sum().backward()
    return loss.detach().numpy(), x.grad.numpy()


def batch_case(rng, T=12, C=5, blank=0, normalised=True):
    N = 4
    lengths = np.array([T, T - 3, T - 5, T])
    target_lengths = np.array([3, 4, 2, 0])
    labels = [c for c in range(C) if c != blank]
    padded = rng.choice(labels, size=(N, 5))
    padded[1, :4] = [labels[0], labels[0], labels[1], labels[1]]     # repeated labels
    z = rng.standard_normal((T, N, C)) * 2
    return (log_softmax(z) if normalised else z), padded, lengths, target_lengths


@needs_torch
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("blank", [0, 3])
@pytest.mark.parametrize("normalised", [True, False], ids=["log_softmax", "unnormalised"])
def test_loss_and_gradient_equal_torch(reduction, layout, blank, normalised):
    rng = np.random.default_rng(7 + blank)
    log_probs, padded, lengths, target_lengths = batch_case(rng, blank=blank, normalised=normalised)
    targets = padded if layout == "padded" else np.concatenate([padded[n, :k] for n, k in enumerate(target_lengths)])
    expected, expected_grad = torch_ctc(log_probs, targets, lengths, target_lengths, blank=blank, reduction=reduction)
    module = CTCLoss(blank=blank, reduction=reduction)
    loss = module(log_probs, targets, lengths, target_lengths)
    np.testing.assert_allclose(loss, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ctc_loss(log_probs, targets, lengths, target_lengths, blank, reduction), expected,
                               rtol=1e-12, atol=1e-12)
    assert np.abs(module.backward() - expected_grad).max() <= 1e-9
    assert (expected_grad[lengths[2]:, 2] == 0).all()                  # padded steps: no gradient


@needs_torch
def test_gradient_through_log_softmax_is_the_true_gradient():
    """PyTorch's extra exp(log_probs) term vanishes through a log_softmax: check against finite differences."""
    rng = np.random.default_rng(3)
    log_probs, padded, lengths, target_lengths = batch_case(rng, T=10, C=4)
    z = rng.standard_normal(log_probs.shape)
    module = CTCLoss(reduction="sum")
    module(log_softmax(z), padded, lengths, target_lengths)
    g = module.backward()
    dz = g - np.exp(log_softmax(z)) * g.sum(axis=-1, keepdims=True)    # log_softmax's backward
    eps, numeric = 1e-6, np.zeros_like(z)
    for index in np.ndindex(z.shape):
        plus, minus = z.copy(), z.copy()
        plus[index] += eps
        minus[index] -= eps
        numeric[index] = (ctc_loss(log_softmax(plus), padded, lengths, target_lengths, reduction="sum")
                          - ctc_loss(log_softmax(minus), padded, lengths, target_lengths, reduction="sum")) / (2 * eps)
    assert np.abs(dz - numeric).max() < 1e-7


@needs_torch
@pytest.mark.parametrize("T", [1, 50, 500])
def test_long_sequences_do_not_underflow(T):
    rng = np.random.default_rng(T)
    C, N = 6, 2
    log_probs = log_softmax(rng.standard_normal((T, N, C)) * 3)
    target_lengths = np.array([min(T // 3, 40), min(T, 1)])
    targets = rng.integers(1, C, (N, 40))
    expected, expected_grad = torch_ctc(log_probs, targets, [T, T], target_lengths, reduction="sum")
    module = CTCLoss(reduction="sum")
    loss = module(log_probs, targets, [T, T], target_lengths)
    assert np.isfinite(loss) and loss == pytest.approx(float(expected), rel=1e-12)
    assert np.abs(module.backward() - expected_grad).max() <= 1e-9
    if T == 500:
        assert loss > 800                                  # P = exp(-loss) is far below the smallest float64


@needs_torch
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_impossible_alignments(zero_infinity, reduction):
    """"a a a" needs 5 steps; 4 are given. inf (or 0), and no gradient from that sequence (PyTorch: NaN)."""
    rng = np.random.default_rng(0)
    log_probs = log_softmax(rng.standard_normal((6, 2, 3)))
    targets, lengths, target_lengths = np.array([[1, 1, 1], [2, 1, 0]]), np.array([4, 6]), np.array([3, 2])
    expected, expected_grad = torch_ctc(log_probs, targets, lengths, target_lengths, reduction=reduction,
                                        zero_infinity=zero_infinity)
    module = CTCLoss(reduction=reduction, zero_infinity=zero_infinity)
    loss = np.asarray(module(log_probs, targets, lengths, target_lengths))
    np.testing.assert_array_equal(np.isinf(loss), np.isinf(expected))
    np.testing.assert_allclose(loss[np.isfinite(loss)], expected[np.isfinite(expected)], rtol=1e-12)
    grad = module.backward()
    assert (grad[:, 0] == 0).all()
    np.testing.assert_allclose(grad[:, 1], expected_grad[:, 1], atol=1e-12)
    if not zero_infinity:
        assert np.isnan(expected_grad[:4, 0]).all()       # what PyTorch gives instead of zero


@needs_torch
def test_unbatched_input_and_none_reduction_with_upstream_gradient():
    rng = np.random.default_rng(5)
    log_probs = log_softmax(rng.standard_normal((7, 4)))
    expected, expected_grad = torch_ctc(log_probs, np.array([1, 2, 2]), 7, 3, reduction="none")
    module = CTCLoss(reduction="none")
    loss = module(log_probs, np.array([1, 2, 2]), 7, 3)
    assert loss.shape == () and loss == pytest.approx(float(expected), rel=1e-12)
    assert np.abs(module.backward() - expected_grad).max() <= 1e-9
    batch, padded, lengths, target_lengths = batch_case(rng)
    module(batch, padded, lengths, target_lengths)
    weights = np.array([1.0, -2.0, 0.5, 3.0])
    import torch
    x = torch.tensor(batch, requires_grad=True)
    losses = torch.nn.functional.ctc_loss(x, torch.tensor(padded), torch.tensor(lengths), torch.tensor(target_lengths),
                                          reduction="none")
    (losses * torch.tensor(weights)).sum().backward()
    assert np.abs(module.backward(weights) - x.grad.numpy()).max() <= 1e-9


@needs_torch
def test_float32_stays_float32_and_agrees_with_torch():
    rng = np.random.default_rng(9)
    log_probs, padded, lengths, target_lengths = batch_case(rng, T=30)
    log_probs = log_probs.astype(np.float32)
    expected, expected_grad = torch_ctc(log_probs, padded, lengths, target_lengths)
    module = CTCLoss()
    assert module(log_probs, padded, lengths, target_lengths) == pytest.approx(float(expected), rel=1e-5)
    grad = module.backward()
    assert grad.dtype == np.float32 and np.abs(grad - expected_grad).max() < 1e-5


@pytest.mark.parametrize("bad, message", [
    (dict(targets=np.array([[1, 0, 2]])), "labels must lie in"),
    (dict(input_lengths=[9]), "input_lengths [9] must lie in [0, T=6]"),
    (dict(target_lengths=[4]), "need N=1 rows of at least max(target_lengths)=4"),
    (dict(log_probs=np.zeros((6, 1, 3), dtype=np.int64)), "expected floating point"),
    (dict(reduction="avg"), "reduction must be"),
])
def test_bad_input_is_named(bad, message):
    args = dict(log_probs=np.zeros((6, 1, 3)), targets=np.array([[1, 2, 2]]), input_lengths=[6], target_lengths=[3])
    args.update(bad)
    with pytest.raises((ValueError, TypeError)) as error:
        ctc_loss(**args)
    assert message in str(error.value)
    with pytest.raises(RuntimeError, match="without a matching forward"):
        CTCLoss().backward()


# ---- the course's CTCLoss

def course_batch(rng, T=6, C=4):
    B = 3
    y = rng.uniform(0.05, 1.0, (T, B, C))
    y /= y.sum(axis=-1, keepdims=True)
    target = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
    return y, target, np.array([T, T - 1, T - 3]), np.array([3, 2, 1])


def course_nll_sum(y, target, input_lengths, target_lengths, blank=0):
    """Σ_b −log P_b from the course's own α (probability space): what its backward differentiates."""
    ctc, total = CTC(BLANK=blank), 0.0
    for b in range(y.shape[1]):
        ext, skip = ctc.extend_target_with_blank(target[b, :target_lengths[b]])
        alpha = ctc.get_forward_probs(y[:input_lengths[b], b], ext, skip)
        total -= math.log(alpha[-1, -1] + alpha[-1, -2])
    return total


@pytest.mark.parametrize("blank", [0, 3])
def test_course_backward_is_the_gradient_of_the_negative_log_likelihood(blank):
    """dY = −Σ γ / y is ∂(Σ_b −log P_b)/∂y (not divided by B): centred differences agree to 1e-8."""
    rng = np.random.default_rng(11)
    y, target, input_lengths, target_lengths = course_batch(rng)
    if blank:
        target = np.where(target == blank, 0, target)                 # label 3 becomes 0: the blank is 3 now
    loss = CourseCTCLoss(BLANK=blank)
    loss(y, target, input_lengths, target_lengths)
    dY = loss.backward()
    eps, numeric = 1e-7, np.zeros_like(y)
    for index in np.ndindex(y.shape):
        plus, minus = y.copy(), y.copy()
        plus[index] += eps
        minus[index] -= eps
        numeric[index] = (course_nll_sum(plus, target, input_lengths, target_lengths, blank)
                          - course_nll_sum(minus, target, input_lengths, target_lengths, blank)) / (2 * eps)
    assert np.abs(dY - numeric).max() < 1e-6 * max(1.0, np.abs(numeric).max())
    assert (dY[input_lengths[2]:, 2] == 0).all()


def test_course_loss_is_the_posterior_weighted_divergence():
    """forward = mean_b −Σ γ log y, checked with the brute-force γ; it is >= the mean −log P."""
    rng = np.random.default_rng(12)
    y, target, input_lengths, target_lengths = course_batch(rng, T=5, C=4)
    value, nll = 0.0, 0.0
    for b in range(3):
        yb, tb = y[:input_lengths[b], b], tuple(target[b, :target_lengths[b]])
        alpha, beta = brute_alpha_beta(yb, tb)
        gamma = alpha * beta / (alpha * beta).sum(axis=1, keepdims=True)
        ext, _ = extend_target(np.array(tb))
        value -= (gamma * np.log(yb[:, ext])).sum() / 3
        nll -= math.log((alpha[-1, -1] + alpha[-1, -2])) / 3
    loss = CourseCTCLoss()(y, target, input_lengths, target_lengths)
    assert loss == pytest.approx(value, rel=1e-12)
    assert loss > nll


def test_course_loss_stays_finite_where_probability_space_underflows():
    rng = np.random.default_rng(13)
    T, C = 600, 10
    y = rng.uniform(0.01, 1.0, (T, 1, C))
    y /= y.sum(axis=-1, keepdims=True)
    target = rng.integers(1, C, (1, 30))
    ctc = CTC()
    ext, skip = ctc.extend_target_with_blank(target[0])
    alpha, beta = ctc.get_forward_probs(y[:, 0], ext, skip), ctc.get_backward_probs(y[:, 0], ext, skip)
    assert (alpha * beta).sum() == 0                       # the course's α β underflow to 0 ...
    loss = CourseCTCLoss()
    value = loss(y, target, [T], [30])
    assert np.isfinite(value) and value > 0                # ... the loss and its gradient do not
    assert np.isfinite(loss.backward()).all()


# ---- decoders

def random_probs(rng, T, C, sharp=1.0):
    p = np.exp(sharp * rng.standard_normal((T, C)))
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(6))
def test_greedy_is_the_most_probable_path_collapsed(seed):
    rng = np.random.default_rng(seed)
    y = random_probs(rng, 5, 3, sharp=2.0)
    best = max(itertools.product(range(3), repeat=5), key=lambda path: path_prob(y, path))
    prefix, log_p = greedy_search(np.log(y))
    assert prefix == naive_collapse(best) and log_p == pytest.approx(math.log(path_prob(y, best)), rel=1e-12)
    decoded, prob = GreedySearchDecoder(["a", "b"]).decode(y.T[:, :, None])
    assert decoded == "".join("ab"[c - 1] for c in naive_collapse(best))
    assert prob == pytest.approx(path_prob(y, best), rel=1e-14)


def test_collapse_merges_repeats_before_dropping_blanks():
    assert collapse([1, 1, 0, 1, 2, 2, 0, 0]) == (1, 1, 2)
    assert collapse([0, 0]) == ()
    assert collapse([3, 0, 3], blank=3) == (0,)


@pytest.mark.parametrize("prune", ["prefix", "hypothesis"])
@pytest.mark.parametrize("seed", range(5))
def test_wide_beam_is_exact(seed, prune):
    rng = np.random.default_rng(seed)
    T, C = 5, 3
    y = random_probs(rng, T, C, sharp=1.5)
    exact = brute_prefix_probs(y)
    ranked = prefix_beam_search(np.log(y), beam_width=1000, prune=prune)
    assert dict((p, math.exp(s)) for p, s in ranked) == pytest.approx(exact, rel=1e-12)
    assert ranked[0][0] == max(exact, key=exact.get)
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


def course_beam_reference(y, symbols, beam_width, prune="hypothesis"):
    """The course's pseudocode, written out in probability space with dicts: prune (ties kept), extend, merge.
    With prune='prefix', each prefix is ranked by the sum of its two hypotheses instead."""
    blank_paths, symbol_paths = {"": y[0, 0]}, {s: y[0, k + 1] for k, s in enumerate(symbols)}
    for t in range(1, len(y)):
        if prune == "hypothesis":
            ranked = {("b", p): v for p, v in blank_paths.items()} | {("s", p): v for p, v in symbol_paths.items()}
        else:
            ranked = {p: blank_paths.get(p, 0.0) + symbol_paths.get(p, 0.0) for p in {*blank_paths, *symbol_paths}}
        scores = sorted(ranked.values(), reverse=True)
        cutoff = scores[beam_width - 1] if beam_width < len(scores) else scores[-1]
        if prune == "hypothesis":
            blank_paths = {p: v for p, v in blank_paths.items() if v >= cutoff}
            symbol_paths = {p: v for p, v in symbol_paths.items() if v >= cutoff}
        else:
            blank_paths = {p: v for p, v in blank_paths.items() if ranked[p] >= cutoff}
            symbol_paths = {p: v for p, v in symbol_paths.items() if ranked[p] >= cutoff}
        new_blank = {}
        for p, v in list(blank_paths.items()) + list(symbol_paths.items()):
            new_blank[p] = new_blank.get(p, 0.0) + v * y[t, 0]
        new_symbol = {}
        for p, v in blank_paths.items():
            for k, s in enumerate(symbols):
                new_symbol[p + s] = new_symbol.get(p + s, 0.0) + v * y[t, k + 1]
        for p, v in symbol_paths.items():
            for k, s in enumerate(symbols):
                q = p if s == p[-1] else p + s
                new_symbol[q] = new_symbol.get(q, 0.0) + v * y[t, k + 1]
        blank_paths, symbol_paths = new_blank, new_symbol
    merged = dict(symbol_paths)
    for p, v in blank_paths.items():
        merged[p] = merged.get(p, 0.0) + v
    return max(merged, key=merged.get), merged


@pytest.mark.parametrize("beam_width", [1, 2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_course_beam_search_follows_the_pruning_rule(seed, beam_width):
    rng = np.random.default_rng(100 + seed)
    symbols = ["a", "b", "c"]
    y = random_probs(rng, 8, 4)
    best, merged = BeamSearchDecoder(symbols, beam_width).decode(y.T[:, :, None])
    best_ref, merged_ref = course_beam_reference(y, symbols, beam_width)
    assert best == best_ref
    assert merged == pytest.approx(merged_ref, rel=1e-12)


@pytest.mark.parametrize("beam_width", [1, 2, 4])
def test_prefix_pruning_narrow_beam(beam_width):
    rng = np.random.default_rng(200 + beam_width)
    y = random_probs(rng, 9, 4)
    ranked = prefix_beam_search(np.log(y), beam_width, prune="prefix")
    _, merged_ref = course_beam_reference(y, ["a", "b", "c"], beam_width, prune="prefix")
    assert {"".join("abc"[c - 1] for c in p): math.exp(s) for p, s in ranked} == pytest.approx(merged_ref, rel=1e-12)


def test_ties_are_kept_when_pruning():
    y = np.full((3, 3), 1 / 3)                             # every hypothesis ties at every step
    _, merged = BeamSearchDecoder(["a", "b"], 1).decode(y.T[:, :, None])
    assert merged == pytest.approx({k: v for k, v in course_beam_reference(y, ["a", "b"], 1)[1].items()}, rel=1e-12)
    assert sorted(merged) == ["a", "ab", "b", "ba"]       # beam 1 kept both "a" and "b": they tie
    assert merged["a"] == merged["b"] and merged["ab"] == merged["ba"]


def test_batched_decoders_with_lengths_and_n_best():
    rng = np.random.default_rng(8)
    T, N, C = 6, 3, 4
    log_probs = np.log(np.stack([random_probs(rng, T, C) for _ in range(N)], axis=1))
    lengths = np.array([6, 4, 1])
    greedy = greedy_search(log_probs, lengths=lengths)
    beams = beam_search(log_probs, beam_width=10_000, lengths=lengths, n_best=3)
    for n in range(N):
        assert greedy[n] == greedy_search(log_probs[:lengths[n], n])
        exact = brute_prefix_probs(np.exp(log_probs[:lengths[n], n]))
        top = sorted(exact.items(), key=lambda kv: -kv[1])[:3]
        assert [p for p, _ in beams[n]] == [p for p, _ in top]
        assert [math.exp(s) for _, s in beams[n]] == pytest.approx([v for _, v in top], rel=1e-12)
    y = np.exp(log_probs).transpose(2, 0, 1)              # the course's (C, T, batch)
    paths, probs = GreedySearchDecoder(["x", "y", "z"]).decode(y)
    assert len(paths) == N == len(probs)
    with pytest.raises(ValueError, match="beam_width must be a positive integer"):
        prefix_beam_search(log_probs[:, 0], 0)


@pytest.mark.parametrize("where", ["repository", "elsewhere"])
def test_the_courses_imports_work(where, tmp_path):
    """The course's tests put mytorch/ on the path and import CTC and CTCDecoding as top-level modules."""
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys; sys.path.append(sys.argv[1]); from CTC import CTC, CTCLoss; "
            "from CTCDecoding import GreedySearchDecoder, BeamSearchDecoder; import numpy as np; "
            "print(GreedySearchDecoder(['a']).decode(np.array([[0.2, 0.9], [0.8, 0.1]])[:, :, None]))")
    cwd = repo if where == "repository" else str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code, os.path.join(repo, "mytorch")], cwd=cwd, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=""))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(('a', 0.9 * 0.8))           # a running product, as the course computes it


def test_course_loss_names_bad_shapes():
    with pytest.raises(ValueError, match=r"logits \(4, 3\) and target \(2, 1\) must be \(T, B, C\)"):
        CourseCTCLoss()(np.ones((4, 3)), np.ones((2, 1), dtype=np.int64), [4, 4], [1, 1])
    with pytest.raises(ValueError, match=r"must both be \(2,\), one per sequence"):
        CourseCTCLoss()(np.ones((4, 2, 3)) / 3, np.ones((2, 1), dtype=np.int64), [4], [1, 1])

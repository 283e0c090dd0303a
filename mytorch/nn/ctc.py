"""CTC loss (connectionist temporal classification) with torch.nn.functional.ctc_loss's semantics.

Size letters: T time, N batch, C classes (the blank included), L target length, S = 2L + 1.

A target l = (l_1 … l_L) is extended with a blank ∅ around and between its labels,

    ext = (∅, l_1, ∅, l_2, …, ∅, l_L, ∅)                                         (S,)

and an alignment (one class per step) collapses to l when merging repeats and then dropping blanks gives l.
The alignments are the paths through ext that at each step stay (s → s), move on (s − 1 → s), or skip a blank
(s − 2 → s), the skip allowed only where ext_s is a label different from ext_{s−2} (``skip[s]``): between two
equal labels the blank is compulsory, or "a a" would collapse to "a".

Everything is in log space, log y[t, c] = log_probs[t, c], so that T = 1000 steps never underflow; lse is
log-sum-exp. One line per recurrence, each vectorised over s (and over the batch: the sequences share one padded
lattice, built by ``_lattice`` so that the padding changes nothing):

    log α[0, s]   = log y[0, ext_s]  for s ∈ {0, 1};  −∞ elsewhere
    log α[t, s]   = lse(log α[t−1, s], log α[t−1, s−1], skip[s] ? log α[t−1, s−2] : −∞) + log y[t, ext_s]
    log β[T−1, s] = 0  for s ∈ {S−2, S−1};  −∞ elsewhere                     (β leaves out step t's own y)
    log β[t, s]   = lse(log β[t+1, s]   + log y[t+1, ext_s],
                        log β[t+1, s+1] + log y[t+1, ext_{s+1}],
                        skip[s+2] ? log β[t+1, s+2] + log y[t+1, ext_{s+2}] : −∞)
    log P         = lse(log α[T−1, S−1], log α[T−1, S−2])  = lse_s(log α[t, s] + log β[t, s])  for every t
    log γ[t, s]   = log α[t, s] + log β[t, s] − lse_s(log α[t, s] + log β[t, s])       posterior of (t, s)
    loss          = −log P

α[t, s] is the probability of every path prefix that is at s after step t (step t's y included); β[t, s] the
probability of every way to finish from s after step t (step t's y left out), so α[t, s] β[t, s] sums the paths
through (t, s), and P = Σ_s α[t, s] β[t, s] at any t. This β is the one of CMU 11-785's course; PyTorch's code
keeps a β that includes step t's y and divides it out again.

The gradient: P is a sum over paths of Π_t y[t, π_t], so ∂P/∂log y[t, c] = Σ_{s: ext_s = c} α[t, s] β[t, s] and

    ∂(−log P)/∂log y[t, c] = −Σ_{s: ext_s = c} γ[t, s]

PyTorch returns instead exp(log y[t, c]) − Σ_{s: ext_s = c} γ[t, s]: the gradient with respect to the logits z
of log_probs = log_softmax(z), written onto log_probs. Through a log_softmax the two agree: its backward,
g ↦ g − softmax(z) Σ_c g_c, sends the extra term exp(log y) = softmax(z) to zero, so training is the same. On
log_probs that do not sum to 1 they differ, and this module returns what PyTorch's autograd returns.

Impossible alignments (L + number of repeated neighbours > T, so P = 0): the loss is inf, or 0 with
``zero_infinity=True``; the gradient of that sequence is 0 either way (PyTorch gives NaN without
``zero_infinity``; a loss that is +inf on a whole neighbourhood has no direction to follow).
"""
import numpy as np

NEG_INF = -np.inf


def _lse(*terms):
    """log Σ exp(terms), elementwise; −∞ (not NaN) where every term is −∞.

    One ``np.logaddexp`` per term after the first: log(e^a + e^b) = max(a, b) + log1p(e^−|a − b|), exact to
    an ulp, −∞ for two −∞ (no warning), and a few times faster than shifting by the maximum by hand."""
    total = terms[0]
    for term in terms[1:]:
        total = np.logaddexp(total, term)
    return total


def _lse_last(a):
    """log Σ_s exp(a[..., s]) along the last axis; −∞ where a whole row is −∞."""
    top = a.max(axis=-1, keepdims=True)
    shift = np.where(np.isneginf(top), 0.0, top)
    with np.errstate(divide="ignore"):
        return (shift + np.log(np.exp(a - shift).sum(axis=-1, keepdims=True)))[..., 0]


def _shift(a, k, fill=NEG_INF):
    """out[..., s] = a[..., s − k] (k > 0: from the left; k < 0: from the right), ``fill`` where out of range."""
    out = np.full_like(a, fill)
    S = a.shape[-1]
    if abs(k) < S:
        if k > 0:
            out[..., k:] = a[..., :S - k]
        else:
            out[..., :S + k] = a[..., -k:]
    return out


def extend_target(target, blank=0):
    """(ext, skip): the target (L,) with blanks around and between its labels (S,), and where a skip is allowed.

    skip[s] is True where ext_s is a label different from ext_{s−2}; the first label (s = 1) has no s − 2.
    """
    target = np.asarray(target, dtype=np.int64).reshape(-1)
    S = 2 * len(target) + 1
    ext = np.full(S, blank, dtype=np.int64)
    skip = np.zeros(S, dtype=bool)
    # BEGIN SOLUTION fill ext (labels at the odd positions) and skip (a label that differs from the one two back)
    ext[1::2] = target                                            # labels at the odd positions
    skip[3::2] = target[1:] != target[:-1]                        # a label may skip the blank before it if it differs
    # END SOLUTION
    return ext, skip


def final_states(S_lengths, S_max):
    """(…, S_max) booleans: the states a path may end in, the last label and the last blank of each lattice."""
    s = np.arange(S_max)
    S_lengths = np.asarray(S_lengths)[..., None]
    return (s >= S_lengths - 2) & (s < S_lengths)


def log_alpha(ly, skip):
    """log α (T, …, S): ly[t, …, s] = log y[t, ext_s] (the emissions on the lattice), skip (…, S).

    Leading dimensions after T (a batch) are carried along: every line works on whole rows of states.
    """
    la = np.full_like(ly, NEG_INF)
    # BEGIN SOLUTION fill la: log α at step 0, then one line per step over all states (stay, move, skip)
    la[0, ..., :2] = ly[0, ..., :2]                               # start on the first blank or the first label
    for t in range(1, len(ly)):
        stay, move, jump = la[t - 1], _shift(la[t - 1], 1), np.where(skip, _shift(la[t - 1], 2), NEG_INF)
        la[t] = _lse(stay, move, jump) + ly[t]
    # END SOLUTION
    return la


def log_beta(ly, skip, final):
    """log β (T, …, S), step t's own y left out (the course's β); ``final`` (…, S) from ``final_states``."""
    T = len(ly)
    lb = np.full_like(ly, NEG_INF)
    skip_from = _shift(skip, -2, fill=False)                      # skip_from[s] = skip[s + 2]: s + 2 may jump back to s
    # BEGIN SOLUTION fill lb: log β = 0 in the final states at T − 1, then one line per step backwards
    lb[T - 1] = np.where(final, 0.0, NEG_INF)                     # end on the last label or the last blank: β = 1
    for t in range(T - 2, -1, -1):                                # ahead[s] = β[t+1, s] y[t+1, ext_s]
        ahead = lb[t + 1] + ly[t + 1]
        lb[t] = _lse(ahead, _shift(ahead, -1), np.where(skip_from, _shift(ahead, -2), NEG_INF))
    # END SOLUTION
    return lb


def log_posterior(la, lb):
    """log γ (T, …, S): log α + log β normalised over s at each step; −∞ everywhere when no alignment exists."""
    # BEGIN SOLUTION
    joint = la + lb                                               # log of Σ over the paths through (t, s)
    norm = _lse_last(joint)[..., None]                            # log Σ_s α β  (= log P at every t)
    log_gamma = joint - np.where(np.isneginf(norm), 0.0, norm)            # a row of −∞ stays −∞
    # END SOLUTION
    return log_gamma


def class_sums(gamma, ext, C):
    """Σ_{s: ext_s = c} gamma[t, …, s] for every class c: (T, …, S) -> (T, …, C); ext (…, S)."""
    onehot = (ext[..., None] == np.arange(C)).astype(gamma.dtype)    # …,S,C  ext as rows of the identity
    return np.einsum("t...s,...sc->t...c", gamma, onehot)


def _int_array(value, what, name):
    a = np.asarray(value)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: {what} has dtype {a.dtype}, expected integers")
    return a.astype(np.int64)


def _prepare(log_probs, targets, input_lengths, target_lengths, blank, name):
    """Checked inputs: (log_probs (T, N, C), per-sequence targets, input lengths (N,), batched?)."""
    log_probs = np.asarray(log_probs)
    if log_probs.dtype.kind != "f":
        raise TypeError(f"{name}: log_probs has dtype {log_probs.dtype}, expected floating point")
    if log_probs.ndim not in (2, 3):
        raise ValueError(f"{name}: log_probs has shape {log_probs.shape}, expected (T, N, C) or (T, C)")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs[:, None, :]
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise ValueError(f"{name}: blank={blank} is not a class of log_probs, which has C={C}")
    targets = _int_array(targets, "targets", name)
    input_lengths = _int_array(input_lengths, "input_lengths", name).reshape(-1)
    target_lengths = _int_array(target_lengths, "target_lengths", name).reshape(-1)
    for what, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if lengths.shape != (N,):
            raise ValueError(f"{name}: {what} has {lengths.size} entries, expected one per sequence (N={N})")
    if (input_lengths < 0).any() or (input_lengths > T).any():
        raise ValueError(f"{name}: input_lengths {input_lengths.tolist()} must lie in [0, T={T}]")
    if (target_lengths < 0).any():
        raise ValueError(f"{name}: target_lengths {target_lengths.tolist()} must not be negative")
    if targets.ndim == 2 and batched:                             # padded (N, S_max)
        if targets.shape[0] != N or (target_lengths > targets.shape[1]).any():
            raise ValueError(f"{name}: padded targets {targets.shape} need N={N} rows of at least "
                             f"max(target_lengths)={target_lengths.max(initial=0)} labels")
        seqs = [targets[n, :target_lengths[n]] for n in range(N)]
    elif targets.ndim == 1:                                       # concatenated (sum of target_lengths,)
        if len(targets) < target_lengths.sum():
            raise ValueError(f"{name}: concatenated targets hold {len(targets)} labels, target_lengths add up to "
                             f"{target_lengths.sum()}")
        ends = np.cumsum(target_lengths)
        seqs = [targets[end - length:end] for end, length in zip(ends, target_lengths)]
    else:
        raise ValueError(f"{name}: targets has shape {targets.shape}, expected (N, S) padded or 1-D concatenated")
    for n, seq in enumerate(seqs):
        if ((seq < 0) | (seq >= C) | (seq == blank)).any():
            raise ValueError(f"{name}: target {n} holds {seq.tolist()}: labels must lie in [0, C={C}) and differ "
                             f"from the blank ({blank})")
    return lp, seqs, input_lengths, batched


def _lattice(lp, seqs, input_lengths, blank):
    """The batch as one padded lattice: (ly (T, N, S_max), ext (N, S_max), skip, final, onehot of ext).

    Padding that changes nothing: extended targets are padded with a class C that no step emits (log y = −∞),
    so those states are never reached; steps t >= input_lengths[n] emit the blank with probability 1 and
    nothing else, so a path waits in the last blank, and P (and γ before input_lengths[n]) are unchanged.
    """
    T, N, C = lp.shape
    S_lengths = np.array([2 * len(seq) + 1 for seq in seqs])
    S_max = S_lengths.max()
    ext = np.full((N, S_max), C, dtype=np.int64)
    skip = np.zeros((N, S_max), dtype=bool)
    for n, seq in enumerate(seqs):
        ext[n, :S_lengths[n]], skip[n, :S_lengths[n]] = extend_target(seq, blank)
    padded = np.concatenate([lp, np.full((T, N, 1), NEG_INF, dtype=lp.dtype)], axis=2)      # T,N,C+1  class C: never emitted
    waiting = np.arange(T)[:, None] >= input_lengths[None, :]               # T,N  steps past each sequence
    padded[waiting] = NEG_INF
    padded[waiting, blank] = 0.0
    ly = np.take_along_axis(padded, ext[None], axis=2)                      # T,N,S_max
    return ly, ext, skip, final_states(S_lengths, S_max), waiting


def _losses_and_grads(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, name):
    """Per-sequence −log P (N,) and each one's gradient (T, N, C) as PyTorch returns it; padded steps get 0."""
    lp, seqs, input_lengths, batched = _prepare(log_probs, targets, input_lengths, target_lengths, blank, name)
    T, N, C = lp.shape
    ly, ext, skip, final, waiting = _lattice(lp, seqs, input_lengths, blank)
    la, lb = log_alpha(ly, skip), log_beta(ly, skip, final)
    # BEGIN SOLUTION compute nll (N,) = −log P and grad (T, N, C) as PyTorch returns it, zero where no path helps
    nll = -_lse_last(np.where(final, la[-1], NEG_INF))            # N   −log P: the paths that end in a final state
    gamma = np.exp(log_posterior(la, lb))                         # T,N,S_max
    grad = np.exp(lp) - class_sums(gamma, ext, C + 1)[..., :C]    # PyTorch's: d/dz of log_softmax(z), see above
    grad[waiting | np.isinf(nll)[None, :]] = 0.0                  # padded steps; no alignment: a constant +inf
    # END SOLUTION
    if zero_infinity:
        nll[np.isinf(nll)] = 0.0
    return nll, grad, batched


def _reduce(nll, target_lengths, reduction, name):
    """The reduced loss and the factor of each sequence's gradient: (loss, scale (N,))."""
    if reduction == "none":
        return nll, np.ones_like(nll)
    if reduction == "sum":
        return nll.sum(), np.ones_like(nll)
    if reduction == "mean":                                       # PyTorch: each over its target length, then the mean
        per_label = 1.0 / np.maximum(np.asarray(target_lengths).reshape(-1), 1) / len(nll)
        return (nll * per_label).sum(), per_label
    raise ValueError(f"{name}: reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss, equal to torch.nn.functional.ctc_loss (see the module docstring for the equations).

    Args:
        log_probs: (T, N, C) or unbatched (T, C), log-probabilities (e.g. a log_softmax over C).
        targets: padded (N, S) with S >= max(target_lengths), or all targets concatenated (sum(target_lengths),).
            Labels in [0, C) other than ``blank``.
        input_lengths (N,): steps of each sequence, <= T; target_lengths (N,): labels of each target.
        blank: the blank's class index. reduction: 'none' (N,), 'sum', or 'mean' (each loss divided by its
            target length, then the mean over the batch, as PyTorch). zero_infinity: impossible alignments cost 0.

    Returns: a float, or for 'none' an array (N,) (a 0-d array for unbatched input).
    """
    nll, _, batched = _losses_and_grads(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity,
                                        "ctc_loss")
    loss, _ = _reduce(nll, target_lengths, reduction, "ctc_loss")
    if reduction == "none":
        return loss if batched else loss.reshape(())
    return float(loss)


class CTCLoss:
    """torch.nn.CTCLoss: ``forward(log_probs, targets, input_lengths, target_lengths)`` then ``backward()``.

    ``backward(grad_output=1.0)`` returns dL/dlog_probs shaped like log_probs, as PyTorch's autograd gives it
    (the module docstring says what that is); with reduction='none', grad_output may be an array (N,).

    Example::

        loss_fn = CTCLoss(blank=0)
        loss = loss_fn(log_probs, targets, input_lengths, target_lengths)   # log_probs (T, N, C)
        d_log_probs = loss_fn.backward()                                     # (T, N, C)
    """

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        _reduce(np.zeros(1), [1], reduction, "CTCLoss")                    # rejects an unknown reduction now
        self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity
        self._cache = None

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        nll, grad, batched = _losses_and_grads(log_probs, targets, input_lengths, target_lengths, self.blank,
                                               self.zero_infinity, "CTCLoss.forward")
        loss, scale = _reduce(nll, target_lengths, self.reduction, "CTCLoss.forward")
        self._cache = (grad, scale, batched)
        if self.reduction == "none":
            return loss if batched else loss.reshape(())
        return float(loss)

    def backward(self, grad_output=1.0):
        """dL/dlog_probs (T, N, C) or (T, C)."""
        if self._cache is None:
            raise RuntimeError("CTCLoss.backward: called without a matching forward")
        (grad, scale, batched), self._cache = self._cache, None
        upstream = np.broadcast_to(np.asarray(grad_output, dtype=grad.dtype).reshape(-1), scale.shape)
        out = grad * (scale * upstream).astype(grad.dtype)[None, :, None]          # float32 in, float32 out
        return out if batched else out[:, 0]

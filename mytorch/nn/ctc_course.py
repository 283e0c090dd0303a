"""CMU 11-785's CTC interface (its recurrent-network homework), as a thin layer over mytorch's CTC math.

The course's names and definitions, kept exactly: ``CTC(BLANK=0)`` with ``extend_target_with_blank``,
``get_forward_probs``, ``get_backward_probs``, ``get_posterior_probs``; ``CTCLoss(BLANK=0)`` with ``forward``
and ``backward``; ``GreedySearchDecoder(symbol_set)`` and ``BeamSearchDecoder(symbol_set, beam_width)``. The
course imports them as ``from CTC import CTC, CTCLoss`` and ``from CTCDecoding import …`` with ``mytorch/`` on
the path; ``mytorch/CTC.py`` and ``mytorch/CTCDecoding.py`` make both that and ``from mytorch.CTC import …``
work. Size letters: T time, B batch, C classes (blank included), S = 2L + 1.

Where the course differs from PyTorch (``mytorch.nn.ctc``), and why both train the same way:

- **Probability space.** The course's ``logits`` are probabilities y (T, C) (softmax outputs, or any positive
  scores: they are used as they are), and α, β, γ are probabilities. Here they are computed in log space and
  exponentiated, so they are the course's numbers wherever those are representable; on a long sequence the
  course's α and β underflow to 0 either way, but the loss and its gradient here stay finite (they use log γ).
- **The loss is a divergence, not −log P.** The course's loss is  −Σ_t Σ_s γ[t, s] log y[t, ext_s]
  (per sequence, then the mean over the batch); PyTorch's is −log P. They are different numbers:
  −Σ γ log y = −log P + H(alignment posterior) ≥ −log P.
BEGIN DERIVATION: - **The gradient.** The course's backward returns dY = ∂(−log P)/∂y (T, C) per sequence, not divided by B although its forward is a mean over B; PyTorch's returns the gradient with respect to log y instead. Notebook 09's exercise "The gradient" derives dY from α, β and γ, and why the two losses share it (held back until the course releases its derivations). | answer: −Σ_{s: ext_s = c} γ[t, s] / y[t, c] | answer: Σ_{s: ext_s = c} α β / y[t, c]
- **The gradient is the same.** The course's backward, dY[t, c] = −Σ_{s: ext_s = c} γ[t, s] / y[t, c], is its
  loss differentiated with γ held fixed, and that is exactly ∂(−log P)/∂y[t, c]: with β leaving out step t's y,
  P = Σ_s α[t, s] β[t, s] and α[t, s] is linear in y[t, ext_s], so ∂P/∂y[t, c] = Σ_{s: ext_s = c} α β / y[t, c]
  and dividing by −P gives −Σ γ / y. (The identity ∇ log P = ∇ E_γ[log p(alignment)] at fixed γ is the one
  EM rests on.) PyTorch differentiates with respect to log y instead: ∂(−log P)/∂log y = y ⊙ dY = −Σ γ,
  the same direction, rescaled per entry by y. The course's backward is not divided by B although its forward
  is a mean over B; it is the per-sequence gradient, as the course defines it.
END DERIVATION
"""
import numpy as np

from mytorch.nn import ctc as core
from mytorch.nn import ctc_decode as decode


def _log(y):
    """log y, with log 0 = −∞ and no warning (a zero probability is allowed)."""
    with np.errstate(divide="ignore"):
        return np.log(y)


class CTC:
    """α, β, γ of one sequence, in probability space (the course's ``CTC`` class)."""

    def __init__(self, BLANK=0):
        self.BLANK = BLANK

    def extend_target_with_blank(self, target):
        """(extended_symbols, skip_connect), both (2L + 1,) integer arrays: [∅, l1, ∅, l2, …, ∅] and 1 where a
        label differs from the label two positions before (it may skip the blank between them)."""
        ext, skip = core.extend_target(target, self.BLANK)
        return ext, skip.astype(np.int64)

    def get_forward_probs(self, logits, extended_symbols, skip_connect):
        """alpha (T, S): α[0, 0] = y[0, ext_0], α[0, 1] = y[0, ext_1];
        α[t, s] = (α[t−1, s] + α[t−1, s−1] + skip[s] α[t−1, s−2]) · y[t, ext_s]."""
        ext, skip = np.asarray(extended_symbols), np.asarray(skip_connect).astype(bool)
        return np.exp(core.log_alpha(_log(np.asarray(logits))[:, ext], skip))

    def get_backward_probs(self, logits, extended_symbols, skip_connect):
        """beta (T, S), leaving out step t's own y: β[T−1, S−1] = β[T−1, S−2] = 1;
        β[t, s] = β[t+1, s] y[t+1, ext_s] + β[t+1, s+1] y[t+1, ext_{s+1}] + skip[s+2] β[t+1, s+2] y[t+1, ext_{s+2}]."""
        ext, skip = np.asarray(extended_symbols), np.asarray(skip_connect).astype(bool)
        final = core.final_states(len(ext), len(ext))                      # the last two states
        return np.exp(core.log_beta(_log(np.asarray(logits))[:, ext], skip, final))

    def get_posterior_probs(self, alpha, beta):
        """gamma (T, S) = α ⊙ β normalised over s at each t (rows of zeros stay zero)."""
        return np.exp(core.log_posterior(_log(np.asarray(alpha)), _log(np.asarray(beta))))


class CTCLoss:
    """The course's CTC loss: the batch mean of −Σ_t Σ_s γ[t, s] log y[t, ext_s], and its backward.

    ``forward(logits (T, B, C), target (B, padded), input_lengths (B,), target_lengths (B,))`` returns a float;
    sequence b uses logits[:input_lengths[b], b] and target[b, :target_lengths[b]]. ``backward()`` returns
    BEGIN DERIVATION: dY (T, B, C): dY[t, b] = ∂(−log P_b)/∂y for t < input_lengths[b] (notebook 09 derives it), zero elsewhere. | answer: −Σ_{s: ext_s = c} γ[t, s] / y[t, c]
    dY (T, B, C): dY[t, b, c] = −Σ_{s: ext_s = c} γ[t, s] / y[t, c] for t < input_lengths[b], zero elsewhere.
    END DERIVATION
    """

    def __init__(self, BLANK=0):
        self.BLANK = BLANK
        self.ctc = CTC(BLANK)
        self.gammas, self.extended_symbols = [], []

    def __call__(self, logits, target, input_lengths, target_lengths):
        return self.forward(logits, target, input_lengths, target_lengths)

    def forward(self, logits, target, input_lengths, target_lengths):
        self.logits, self.target = np.asarray(logits), np.asarray(target)
        self.input_lengths, self.target_lengths = np.asarray(input_lengths), np.asarray(target_lengths)
        if self.logits.ndim != 3 or self.target.ndim != 2 or len(self.target) != self.logits.shape[1]:
            raise ValueError(f"CTCLoss.forward: logits {self.logits.shape} and target {self.target.shape} must be "
                             "(T, B, C) and (B, max target length)")
        B = self.logits.shape[1]
        if self.input_lengths.shape != (B,) or self.target_lengths.shape != (B,):
            raise ValueError(f"CTCLoss.forward: input_lengths {self.input_lengths.shape} and target_lengths "
                             f"{self.target_lengths.shape} must both be ({B},), one per sequence")
        total_loss = np.zeros(B)
        self.gammas, self.extended_symbols = [], []
        for b in range(B):
            y = self.logits[:self.input_lengths[b], b]                      # T_b,C
            ext, skip = core.extend_target(self.target[b, :self.target_lengths[b]], self.BLANK)
            ly = _log(y)[:, ext]                                            # T_b,S  log y[t, ext_s]
            final = core.final_states(len(ext), len(ext))
            # BEGIN SOLUTION compute gamma from log α and log β (log space), and total_loss[b] = −Σ γ log y[t, ext_s]
            gamma = np.exp(core.log_posterior(core.log_alpha(ly, skip), core.log_beta(ly, skip, final)))
            total_loss[b] = -np.sum(gamma * np.where(gamma > 0, ly, 0.0))   # 0 · log 0 counts 0
            # END SOLUTION
            self.gammas.append(gamma)
            self.extended_symbols.append(ext)
        return float(np.sum(total_loss) / B)

    def backward(self):
        """dY (T, B, C), the gradient of −log P with respect to the probabilities (see the module docstring)."""
        dY = np.zeros_like(self.logits, dtype=np.float64)
        for b, (gamma, ext) in enumerate(zip(self.gammas, self.extended_symbols)):
            y = self.logits[:self.input_lengths[b], b]                      # T_b,C
            # BEGIN SOLUTION fill dY[:len(y), b] with ∂(−log P)/∂y[t, c] from gamma, summed over the s with ext_s = c
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(gamma > 0, gamma / y[:, ext], 0.0)         # γ[t, s] / y[t, ext_s]
            dY[:len(y), b] = -core.class_sums(ratio, ext, y.shape[1])       # summed over the s with ext_s = c
            # END SOLUTION
        return dY


def _symbols(symbol_set, prefix):
    return "".join(symbol_set[c - 1] for c in prefix)


def _per_sequence(y_probs, name):
    y_probs = np.asarray(y_probs)
    if y_probs.ndim == 2:                                   # (C, T): one sequence
        y_probs = y_probs[:, :, None]
    if y_probs.ndim != 3:
        raise ValueError(f"{name}: y_probs has shape {y_probs.shape}, expected (len(symbol_set) + 1, T, batch)")
    return [y_probs[:, :, b].T for b in range(y_probs.shape[2])]          # each (T, C)


class GreedySearchDecoder:
    """The course's greedy decoder: y_probs (len(symbol_set) + 1, T, batch), blank at row 0."""

    def __init__(self, symbol_set):
        self.symbol_set = symbol_set

    def decode(self, y_probs):
        """(decoded_path, path_prob): the collapsed best path and the product of the per-step maxima.

        With batch > 1, two lists (one entry per sequence)."""
        paths, probs = [], []
        for y in _per_sequence(y_probs, "GreedySearchDecoder.decode"):
            prefix, path = decode.best_path(y, blank=0)
            path_prob = 1.0
            for t, c in enumerate(path):                                    # a running product, as the course
                path_prob *= float(y[t, c])
            paths.append(_symbols(self.symbol_set, prefix))
            probs.append(path_prob)
        return (paths[0], probs[0]) if len(paths) == 1 else (paths, probs)


class BeamSearchDecoder:
    """The course's beam search: y_probs (len(symbol_set) + 1, T, batch), blank at row 0.

    Prunes as the course does (``prune='hypothesis'`` of ``mytorch.nn.ctc_decode``): before extending at each
    step t >= 1, keep the hypotheses, blank-ending and symbol-ending together, whose score is at least the
    beam_width-th best (ties kept).
    """

    def __init__(self, symbol_set, beam_width):
        self.symbol_set = symbol_set
        self.beam_width = beam_width

    def decode(self, y_probs):
        """(best_path, merged_path_scores): the best prefix as a string, and a dict from every final prefix to
        the summed probability of its blank-ending and symbol-ending hypotheses. With batch > 1, two lists."""
        best, merged = [], []
        for y in _per_sequence(y_probs, "BeamSearchDecoder.decode"):
            ranked = decode.prefix_beam_search(_log(y), self.beam_width, blank=0, prune="hypothesis")
            scores = {_symbols(self.symbol_set, prefix): float(np.exp(score)) for prefix, score in ranked}
            best.append(_symbols(self.symbol_set, ranked[0][0]))
            merged.append(scores)
        return (best[0], merged[0]) if len(best) == 1 else (best, merged)

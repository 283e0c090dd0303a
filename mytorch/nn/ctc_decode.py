"""Decoding CTC outputs: greedy (best path) and prefix beam search, batched, in log space.

Size letters: T time, N batch, C classes (the blank included). Input is what ``ctc_loss`` takes: log_probs
(T, N, C) or (T, C), optionally with ``lengths`` (N,) so each sequence uses its first lengths[n] steps.

A prefix is the collapsed label sequence (a tuple of class indices, blanks removed, repeats merged). Its
probability is the sum over every alignment that collapses to it; the most probable *path* (greedy) need not
collapse to the most probable *prefix*, which is why beam search exists.

Prefix beam search keeps, for each prefix, two hypotheses: the alignments that end in a blank (score b) and
those that end in its last label (score n). At step t, with y = y[t]:

    extend by a blank:            b'(p)       += (b(p) + n(p)) · y[∅]
    extend by c = the last label: n'(p)       += n(p) · y[c]            ("a" + "a" stays "a")
                                  n'(p + c)   += b(p) · y[c]            (a blank between: "a ∅ a" is "aa")
    extend by any other label c:  n'(p + c)   += (b(p) + n(p)) · y[c]

Hypotheses that reach the same prefix are merged by adding their probabilities (``+=``, in log space
log-add-exp). Before extending at every step t >= 1, the beam is pruned to ``beam_width``:

- ``prune='prefix'`` (default): keep the prefixes whose total b + n is at least the beam_width-th largest;
- ``prune='hypothesis'`` (CMU 11-785's course): rank blank-ending and label-ending hypotheses together, and
  keep each hypothesis whose own score is at least the beam_width-th largest.

Both keep ties, so the result never depends on the order of a sort. With a beam as wide as every prefix,
both are exact: the best prefix is the argmax of the sum over alignments.
"""
import numpy as np

NEG_INF = -np.inf


def _add(a, b):
    """log(exp(a) + exp(b)) of two floats, −∞ allowed."""
    return float(np.logaddexp(a, b))


def collapse(path, blank=0):
    """The prefix an alignment collapses to: merge repeated classes, then drop blanks (in this order)."""
    # BEGIN SOLUTION return the tuple of labels: merge repeated classes first, then drop blanks
    merged = [c for k, c in enumerate(path) if k == 0 or c != path[k - 1]]
    return tuple(int(c) for c in merged if c != blank)
    # END SOLUTION


def _batched(log_probs, lengths, name):
    log_probs = np.asarray(log_probs)
    if log_probs.dtype.kind != "f" or log_probs.ndim not in (2, 3):
        raise ValueError(f"{name}: log_probs must be a float array (T, N, C) or (T, C), got {log_probs.dtype} "
                         f"{log_probs.shape}")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs[:, None]
    T, N, _ = lp.shape
    lengths = np.full(N, T) if lengths is None else np.asarray(lengths).reshape(-1)
    if lengths.shape != (N,) or (lengths < 1).any() or (lengths > T).any():
        raise ValueError(f"{name}: lengths must hold one length in [1, T={T}] per sequence (N={N}), got {lengths}")
    return lp, lengths, batched


def best_path(scores, blank=0):
    """Greedy decoding of one sequence: (prefix, path) with path (T,) the argmax class at every step.

    ``scores`` (T, C) may be probabilities or log-probabilities: the argmax is the same.
    """
    path = np.argmax(scores, axis=-1)
    return collapse(path, blank), path


def greedy_search(log_probs, blank=0, lengths=None):
    """Best-path decoding: [(prefix, log-probability of the best path)] per sequence (one pair if unbatched)."""
    lp, lengths, batched = _batched(log_probs, lengths, "greedy_search")
    out = []
    for n in range(lp.shape[1]):
        seq = lp[:lengths[n], n]
        prefix, path = best_path(seq, blank)
        out.append((prefix, float(seq[np.arange(len(path)), path].sum())))
    return out if batched else out[0]


def _prune(blank_end, label_end, beam_width, prune):
    """The hypotheses that survive: both dicts {prefix: log score}, filtered (ties kept)."""
    # BEGIN SOLUTION keep every hypothesis (prune="hypothesis") or every prefix by b + n (prune="prefix") whose score is >= the beam_width-th best
    if prune == "hypothesis":
        scores = sorted(list(blank_end.values()) + list(label_end.values()), reverse=True)
        cutoff = scores[min(beam_width, len(scores)) - 1]             # the beam_width-th best, or the last
        return tuple({p: s for p, s in hypotheses.items() if s >= cutoff} for hypotheses in (blank_end, label_end))
    totals = {p: _add(blank_end.get(p, NEG_INF), label_end.get(p, NEG_INF)) for p in {**blank_end, **label_end}}
    cutoff = sorted(totals.values(), reverse=True)[min(beam_width, len(totals)) - 1]
    kept = {p for p, s in totals.items() if s >= cutoff}                 # whole prefixes, ranked by b + n
    return ({p: s for p, s in blank_end.items() if p in kept}, {p: s for p, s in label_end.items() if p in kept})
    # END SOLUTION


def _extend(blank_end, label_end, y, blank):
    """One step of prefix beam search: the new (blank_end, label_end) after reading log-probabilities y (C,)."""
    labels = [c for c in range(len(y)) if c != blank]
    new_blank, new_label = {}, {}
    # BEGIN SOLUTION fill new_blank and new_label (extend by a blank, by the last label, by another label; add what meets)
    for hypotheses in (blank_end, label_end):                     # any hypothesis + ∅ ends in a blank
        for prefix, score in hypotheses.items():
            new_blank[prefix] = _add(new_blank.get(prefix, NEG_INF), score + y[blank])
    for prefix, score in blank_end.items():                       # "… ∅" + c is always a new label
        for c in labels:
            new_label[prefix + (c,)] = _add(new_label.get(prefix + (c,), NEG_INF), score + y[c])
    for prefix, score in label_end.items():                       # "… a" + a merges into "… a"
        for c in labels:
            grown = prefix if c == prefix[-1] else prefix + (c,)
            new_label[grown] = _add(new_label.get(grown, NEG_INF), score + y[c])
    # END SOLUTION
    return new_blank, new_label


def prefix_beam_search(log_probs, beam_width, blank=0, prune="prefix"):
    """Every final prefix of one sequence (T, C) with its log-probability, best first: [(prefix, log p)].

    The log-probability of a prefix is the log-sum of its blank-ending and label-ending hypotheses.
    """
    log_probs = np.asarray(log_probs)
    if log_probs.ndim != 2 or len(log_probs) == 0:
        raise ValueError(f"prefix_beam_search: log_probs must be (T, C) with T >= 1, got shape {log_probs.shape}")
    if isinstance(beam_width, bool) or not isinstance(beam_width, (int, np.integer)) or beam_width < 1:
        raise ValueError(f"prefix_beam_search: beam_width must be a positive integer, got {beam_width!r}")
    if prune not in ("prefix", "hypothesis"):
        raise ValueError(f"prefix_beam_search: prune must be 'prefix' or 'hypothesis', got {prune!r}")
    y0 = log_probs[0]
    blank_end = {(): float(y0[blank])}
    label_end = {(c,): float(y0[c]) for c in range(len(y0)) if c != blank}
    for t in range(1, len(log_probs)):
        blank_end, label_end = _prune(blank_end, label_end, beam_width, prune)
        blank_end, label_end = _extend(blank_end, label_end, log_probs[t], blank)
    merged = dict(label_end)                                       # b + n: a prefix's two kinds of ending
    for prefix in blank_end:
        merged[prefix] = _add(merged.get(prefix, NEG_INF), blank_end[prefix])
    return sorted(merged.items(), key=lambda item: -item[1])     # stable: ties keep their first-seen order


def beam_search(log_probs, beam_width=10, blank=0, lengths=None, n_best=1, prune="prefix"):
    """Prefix beam search over a batch: per sequence, its ``n_best`` best [(prefix, log p)], best first.

    log_probs (T, N, C) gives a list of N such lists; (T, C) gives one list.
    """
    lp, lengths, batched = _batched(log_probs, lengths, "beam_search")
    out = [prefix_beam_search(lp[:lengths[n], n], beam_width, blank, prune)[:n_best] for n in range(lp.shape[1])]
    return out if batched else out[0]

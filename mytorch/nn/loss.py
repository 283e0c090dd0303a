"""Losses with their backward. Averaging over the batch happens here, never inside a cell.

    MSELoss:          L = mean((ŷ − y)²)                  dL/dŷ = 2 (ŷ − y) / count
    CrossEntropyLoss: L = mean_n(−log softmax(z_n)[y_n])   dL/dz = (softmax(z) − onehot(y)) / N

``loss.forward(...)`` (or ``loss(...)``) returns the scalar and keeps what ``loss.backward()`` needs.
"""
import numpy as np

from mytorch import functional as F


class _Loss:
    def __init__(self, reduction="mean"):
        if reduction not in ("mean", "sum"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean' or 'sum', got {reduction!r}")
        self.reduction = reduction
        self._cache = None

    def __call__(self, *args):
        return self.forward(*args)

    def _float(self, value, what):
        a = np.asarray(value)
        if a.dtype.kind != "f":
            raise TypeError(f"{type(self).__name__}.forward: {what} has dtype {a.dtype}, expected floating point")
        return a

    def _take_cache(self):
        if self._cache is None:
            raise RuntimeError(f"{type(self).__name__}.backward: called without a matching forward")
        cache, self._cache = self._cache, None
        return cache


class MSELoss(_Loss):
    """Mean (or sum) of squared errors over every element, as torch.nn.MSELoss."""

    def forward(self, prediction, target):
        prediction, target = self._float(prediction, "prediction"), self._float(target, "target")
        if prediction.shape != target.shape:
            raise ValueError(f"MSELoss.forward: prediction has shape {prediction.shape}, "
                             f"target has shape {target.shape}; they must match")
        diff = prediction - target
        self._cache = diff
        total = np.sum(diff * diff)
        return float(total / diff.size if self.reduction == "mean" else total)

    def backward(self):
        """dL/d(prediction), the shape of the prediction."""
        diff = self._take_cache()
        scale = 2.0 / diff.size if self.reduction == "mean" else 2.0
        return scale * diff


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of logits (N, C) or (C,) against class indices (N,) or a scalar, as torch."""

    def forward(self, logits, target):
        logits = self._float(logits, "logits")
        target = np.asarray(target)
        if target.dtype.kind not in "iu":
            raise TypeError(f"CrossEntropyLoss.forward: target has dtype {target.dtype}, expected integer class indices")
        if logits.ndim not in (1, 2) or target.shape != logits.shape[:-1]:
            raise ValueError(f"CrossEntropyLoss.forward: logits {logits.shape} and target {target.shape} must be "
                             "(N, C) and (N,), or (C,) and ()")
        C = logits.shape[-1]
        if target.size and (target.min() < 0 or target.max() >= C):
            raise ValueError(f"CrossEntropyLoss.forward: target holds classes outside [0, {C})")
        z2, y = logits.reshape(-1, C), target.reshape(-1)
        log_p = F.log_softmax(z2, axis=1)
        picked = -log_p[np.arange(len(y)), y]
        self._cache = (np.exp(log_p), y, logits.shape)
        return float(picked.mean() if self.reduction == "mean" else picked.sum())

    def backward(self):
        """dL/d(logits), the shape of the logits."""
        p, y, shape = self._take_cache()
        grad = p.copy()
        grad[np.arange(len(y)), y] -= 1.0                  # softmax − onehot
        if self.reduction == "mean":
            grad /= len(y)
        return grad.reshape(shape)

"""Activations and their derivatives, numerically stable, written for hand-derived backward passes.

Derivative helpers take the activation's OUTPUT, because that is what a forward pass caches:

    y = sigmoid(a)  ->  dy/da = y * (1 - y)        (sigmoid_grad(y))
    y = tanh(a)     ->  dy/da = 1 - y**2            (tanh_grad(y))
    y = relu(a)     ->  dy/da = 1 if y > 0 else 0   (relu_grad(y))

Calling them with the pre-activation `a` instead of the output is a classic bug; the names say "of the
output" to make it visible.
"""
import numpy as np


def _as_float(a):
    """An array of a's own float dtype (float32 stays float32); integers become float64."""
    a = np.asarray(a)
    return a if a.dtype.kind == "f" else a.astype(np.float64)


def sigmoid(a):
    """σ(a) = 1 / (1 + exp(-a)), exact and without overflow for any finite a.

    Written branch-free as σ(a) = exp(min(a, 0)) / (1 + exp(-|a|)): both exponents are <= 0, so exp never
    overflows (the naive form warns at a = -1000), and for a < 0 it is e^a / (1 + e^a), so tiny values keep
    their relative precision. No masks or np.where: on random signs those run several times slower.
    """
    a = _as_float(a)
    shape, a = a.shape, a.reshape(-1)              # 1-D views, so 0-d input works with out=
    denominator = np.abs(a)
    np.negative(denominator, out=denominator)
    np.exp(denominator, out=denominator)
    denominator += 1.0                             # 1 + exp(-|a|)
    numerator = np.minimum(a, 0.0)
    np.exp(numerator, out=numerator)               # exp(min(a, 0))
    return np.divide(numerator, denominator, out=numerator).reshape(shape)


def sigmoid_grad(y):
    """dσ/da in terms of the output y = σ(a): y (1 - y)."""
    return y * (1.0 - y)


def tanh(a):
    """tanh(a); NumPy's is already stable (it saturates to ±1 rather than overflowing)."""
    return np.tanh(a)


def tanh_grad(y):
    """d tanh/da in terms of the output y = tanh(a): 1 - y²."""
    return 1.0 - y * y


def relu(a):
    """max(a, 0)."""
    return np.maximum(a, 0)


def relu_grad(y):
    """d relu/da in terms of the output y = relu(a): 1 where y > 0, else 0 (the subgradient 0 at 0, as PyTorch)."""
    return (y > 0).astype(y.dtype)


def softmax(a, axis=-1):
    """exp(a) / Σ exp(a) along `axis`, shifted by the max so exp never overflows."""
    a = _as_float(a)
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(a, axis=-1):
    """a - logsumexp(a) along `axis`; exact even where softmax underflows to 0."""
    a = _as_float(a)
    shifted = a - np.max(a, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))

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


def sigmoid(a, out=None, scratch=None):
    """σ(a) = 1 / (1 + exp(-a)), exact and without overflow for any finite a; written into ``out`` if given.

    Written branch-free as σ(a) = max(e, [a >= 0]) / (1 + e) with e = exp(-|a|): the exponent is <= 0, so exp
    never overflows (the naive form warns at a = -1000), and for a < 0 the numerator is e = e^a, so tiny values
    keep their relative precision. No masks or np.where: on random signs those run several times slower.
    ``out`` may be ``a`` itself (the sequence layers' fast paths work in place); ``scratch``, a float array of
    a's shape and dtype, is worked in instead of a new one (a loop over steps then allocates nothing).
    """
    a = _as_float(a)
    if a.ndim == 0:                                # ufuncs return scalars for 0-d input: work on (1,)
        y = sigmoid(a.reshape(1)).reshape(())
        return y if out is None else np.copyto(out, y) or out
    if out is None:
        out = np.empty_like(a)
    e = np.abs(a, out=scratch)
    np.negative(e, out=e)
    np.exp(e, out=e)                               # e = exp(-|a|) <= 1
    np.greater_equal(a, 0.0, out=out)              # [a >= 0] as 1.0 / 0.0 (a is read before out is written)
    np.maximum(e, out, out=out)                    # exp(min(a, 0)): 1 where a >= 0, else e
    e += 1.0                                       # 1 + exp(-|a|)
    return np.divide(out, e, out=out)


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

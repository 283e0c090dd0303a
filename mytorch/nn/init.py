"""Parameter initialisers. Each is a callable ``(rng, shape) -> ndarray`` (float64; the module casts).

The same signature as Lux's initialisers (``zeros32(rng, dims...)``), so a TGRU user can pass them as
``init_weight=...``; factories such as ``uniform(bound)`` return such a callable.
"""
import math

import numpy as np


def zeros(rng, shape):
    """All zeros."""
    return np.zeros(shape)


def ones(rng, shape):
    """All ones."""
    return np.ones(shape)


def constant(value):
    """An initialiser that fills with ``value``."""
    def init(rng, shape):
        return np.full(shape, float(value))
    return init


def uniform(bound):
    """An initialiser drawing U(-bound, +bound): PyTorch's recurrent default with bound = 1/sqrt(hidden_size)."""
    def init(rng, shape):
        return rng.uniform(-bound, bound, size=shape)
    return init


def glorot_uniform(rng, shape):
    """U(-b, b) with b = sqrt(6 / (fan_in + fan_out)) for a (fan_in, fan_out) matrix (TensorFlow's default)."""
    fan_in, fan_out = shape
    return uniform(math.sqrt(6.0 / (fan_in + fan_out)))(rng, shape)

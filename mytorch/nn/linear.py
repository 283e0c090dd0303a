"""A fully connected layer, y = x Wᵀ + b, as torch.nn.Linear.

    x (..., I)  ->  y (..., O);   weight (O, I), bias (O)
    backward(dy):  dW += Σ dyᵀ x,  db += Σ dy  (over every leading position),  dx = dy W

Like the cells it records each forward, last in first out, so one Linear can read out every time step of a
sequence and then be backpropagated step by step (or once, on the whole (T, N, H) output).
"""
import math

import numpy as np

from mytorch.nn.cell import Cache
from mytorch.nn.init import uniform
from mytorch.nn.module import Module


class Linear(Module):
    """y = x Wᵀ + b. Args: in_features, out_features, bias=True, dtype, rng (U(±1/sqrt(in_features)) as torch)."""

    def __init__(self, in_features, out_features, bias=True, dtype=np.float64, rng=None):
        super().__init__(dtype)
        for arg, value in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"Linear: {arg} must be a positive integer, got {value!r}")
        self.in_features, self.out_features, self.bias = int(in_features), int(out_features), bool(bias)
        rng = np.random.default_rng(rng)
        init = uniform(1.0 / math.sqrt(in_features))
        self._add_param("weight", init(rng, (out_features, in_features)))
        if self.bias:
            self._add_param("bias", init(rng, (out_features,)))

    def forward(self, x):
        """y = x Wᵀ + b for x (..., in_features)."""
        x = self._array(x, "x", "forward")
        if x.ndim < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"Linear.forward: x has shape {x.shape}, expected (..., {self.in_features})")
        self._record(Cache(x=x))
        y = x @ self.params["weight"].T
        return y + self.params["bias"] if self.bias else y

    def backward(self, dy):
        """Given dL/dy, accumulate dW, db and return dL/dx."""
        cache = self._pop()
        dy = self._array(dy, "dy", "backward")
        expected = cache.x.shape[:-1] + (self.out_features,)
        if dy.shape != expected:
            self._tape.append(cache)
            raise ValueError(f"Linear.backward: dy has shape {dy.shape}, expected {expected}")
        x2, dy2 = cache.x.reshape(-1, self.in_features), dy.reshape(-1, self.out_features)
        self.grads["weight"] += dy2.T @ x2            # dy/dW = x, summed over every position
        if self.bias:
            self.grads["bias"] += dy2.sum(axis=0)
        return dy @ self.params["weight"]             # dy/dx = W

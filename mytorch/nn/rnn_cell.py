"""An Elman RNN cell with PyTorch's semantics and parameter layout (torch.nn.RNNCell).

    a  = x @ W_ihᵀ + b_ih + h @ W_hhᵀ + b_hh          (N, H)
    h' = act(a)                                        act = tanh or relu
"""
import math

import numpy as np

from mytorch import functional as F
from mytorch.nn.cell import Cache, RecurrentCell
from mytorch.nn.init import uniform


class RNNCell(RecurrentCell):
    """h' = act(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh).

    Args:
        input_size (I), hidden_size (H): feature sizes.
        nonlinearity: 'tanh' (default) or 'relu'.
        bias: if False, no bias_ih / bias_hh.
        dtype: parameter and computation dtype (default float64).
        rng: a numpy Generator or seed; parameters are drawn from U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch.

    Attributes:
        weight_ih (H, I), weight_hh (H, H), bias_ih (H), bias_hh (H), in ``params``; same keys in ``grads``.
        After forward: ``x`` (N, I) and ``hidden`` (N, H), the step's input and previous state, and
        ``h_t`` (N, H), its output (unbatched shapes for unbatched input).

    Shapes: x (N, I) or (I,); state h (N, H) or (H,); returns h' of the same batch shape.
    """

    exposed = ("x", "hidden", "h_t")

    def __init__(self, input_size, hidden_size, nonlinearity="tanh", bias=True, dtype=np.float64, rng=None):
        super().__init__(input_size, hidden_size, dtype, rng)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        self.bias = bool(bias)
        init = uniform(1.0 / math.sqrt(hidden_size))
        self._add_param("weight_ih", init(self.rng, (hidden_size, input_size)))
        self._add_param("weight_hh", init(self.rng, (hidden_size, hidden_size)))
        if self.bias:
            self._add_param("bias_ih", init(self.rng, (hidden_size,)))
            self._add_param("bias_hh", init(self.rng, (hidden_size,)))

    def _bias(self, name):
        return self.params[name] if self.bias else 0.0

    def forward(self, x, state=None):
        """One step: returns h' (N, H) or (H,). See the class docstring."""
        x, (h,), batched, _ = self._prepare(x, state)
        p = self.params
        # BEGIN SOLUTION
        a = x @ p["weight_ih"].T + self._bias("bias_ih") + h @ p["weight_hh"].T + self._bias("bias_hh")  # N,H
        h_t = np.tanh(a) if self.nonlinearity == "tanh" else F.relu(a)
        # END SOLUTION
        return self._finish(Cache(x=x, hidden=h, h_t=h_t), (h_t,), batched)

    def backward(self, d_state):
        """Given dL/dh', accumulate parameter gradients and return (dx, dh)."""
        cache, (dh_t,) = self._prepare_backward(d_state)
        p, g = self.params, self.grads
        # BEGIN SOLUTION
        # Backward, given dh' = dL/dh' (N, H):
        #
        #     da    = dh' ⊙ act'(a)          written from the output: 1 - h'² (tanh) or [h' > 0] (relu)
        #     dW_ih += daᵀ x,  dW_hh += daᵀ h,  db_ih += Σ_N da,  db_hh += Σ_N da
        #     dx    = da W_ih,  dh = da W_hh
        act_grad = F.tanh_grad(cache.h_t) if self.nonlinearity == "tanh" else F.relu_grad(cache.h_t)
        da = dh_t * act_grad                           # dh'/da = act'(a), from the output
        g["weight_ih"] += da.T @ cache.x               # da/dW_ih = x
        g["weight_hh"] += da.T @ cache.hidden          # da/dW_hh = h
        if self.bias:
            g["bias_ih"] += da.sum(axis=0)             # da/db = 1, summed over the batch
            g["bias_hh"] += da.sum(axis=0)
        dx = da @ p["weight_ih"]                       # da/dx = W_ih
        dh = da @ p["weight_hh"]                       # da/dh = W_hh
        # END SOLUTION
        return self._finish_backward(cache, dx, (dh,))

"""The GMU cell: two states (h, c), three gates i, m, o, and peepholes from the previous c.

The cell as defined by the PyTorch code of a forum question ("Custom RNN GMU implementation", on
discuss.pytorch.org), whose paper is not named there: that code is the specification.

Gates are stacked i, m, o in weight_ih (3H, I), weight_hh (3H, H), bias_ih, bias_hh (3H); the peepholes
weight_ch_m, weight_ch_o (H) act elementwise on the PREVIOUS cell state c:

    [a_i | a_m | a_o] = x W_ihᵀ + b_ih + h W_hhᵀ + b_hh            (N, 3H)
    i  = tanh(a_i)                 m = σ(a_m + w_ch_m ⊙ c)          o = σ(a_o + w_ch_o ⊙ c)
    h' = (1 − m) ⊙ c + m ⊙ i       c' = (1 − o) ⊙ i + o ⊙ c           output h', state (h', c')

c is not disconnected from the loss: c_t reaches h_{t+1} through (1 − m) and through both peepholes, and
c_{t+1} through o. Only the LAST step's c' gets no gradient from a loss on h (pass ``None`` for it);
no ``h + 0·c`` trick is needed.
"""
import math

import numpy as np

from mytorch import functional as F
from mytorch.nn.cell import Cache, RecurrentCell
from mytorch.nn.init import uniform


class GMUCell(RecurrentCell):
    """The GMU step of the PyTorch forum question (see the module docstring for the equations and the backward).

    Args:
        input_size (I), hidden_size (H): feature sizes.
        dtype: parameter and computation dtype (default float64).
        rng: a numpy Generator or seed; every parameter U(-1/sqrt(H), 1/sqrt(H)) as in that code.

    Attributes:
        weight_ih (3H, I), weight_hh (3H, H), bias_ih (3H), bias_hh (3H): gates stacked i, m, o;
        weight_ch_m (H), weight_ch_o (H): peepholes. After forward: x, hidden, cell, i, m, o.

    Shapes: x (N, I) or (I,); state (h, c), each (N, H) or (H,); returns (h', c').
    """

    state_names = ("h", "c")
    exposed = ("x", "hidden", "cell", "i", "m", "o")

    def __init__(self, input_size, hidden_size, dtype=np.float64, rng=None):
        super().__init__(input_size, hidden_size, dtype, rng)
        H = hidden_size
        init = uniform(1.0 / math.sqrt(H))
        self._add_param("weight_ih", init(self.rng, (3 * H, input_size)))
        self._add_param("weight_hh", init(self.rng, (3 * H, H)))
        self._add_param("weight_ch_m", init(self.rng, (H,)))
        self._add_param("weight_ch_o", init(self.rng, (H,)))
        self._add_param("bias_ih", init(self.rng, (3 * H,)))
        self._add_param("bias_hh", init(self.rng, (3 * H,)))

    def forward(self, x, state=None):
        """One step: returns (h', c'), each (N, H) or (H,)."""
        x, (h, c), batched, _ = self._prepare(x, state)
        p, H = self.params, self.hidden_size
        # BEGIN SOLUTION
        a = x @ p["weight_ih"].T + p["bias_ih"] + h @ p["weight_hh"].T + p["bias_hh"]    # N,3H
        i = np.tanh(a[:, :H])
        m = F.sigmoid(a[:, H:2 * H] + p["weight_ch_m"] * c)                              # peephole on old c
        o = F.sigmoid(a[:, 2 * H:] + p["weight_ch_o"] * c)
        h_t = (1.0 - m) * c + m * i
        c_t = (1.0 - o) * i + o * c
        # END SOLUTION
        return self._finish(Cache(x=x, hidden=h, cell=c, i=i, m=m, o=o), (h_t, c_t), batched)

    def backward(self, d_state):
        """Given (dL/dh', dL/dc') (either may be None), accumulate gradients and return (dx, (dh, dc))."""
        cache, (dh_t, dc_t) = self._prepare_backward(d_state)
        p, g = self.params, self.grads
        x, h, c, i, m, o = cache.x, cache.hidden, cache.cell, cache.i, cache.m, cache.o
        # BEGIN SOLUTION
        # Backward, given (dh', dc'):
        #
        #     di   = dh' ⊙ m + dc' ⊙ (1 − o)        dm = dh' ⊙ (i − c)         do = dc' ⊙ (c − i)
        #     da_i = di ⊙ (1 − i²)                   da_m = dm ⊙ m(1 − m)        da_o = do ⊙ o(1 − o)
        #     dw_ch_m += Σ_N da_m ⊙ c                dw_ch_o += Σ_N da_o ⊙ c
        #     dA = [da_i | da_m | da_o]:  dW_ih += dAᵀ x,  dW_hh += dAᵀ h,  db_ih, db_hh += Σ_N dA
        #     dx = dA W_ih                  dh = dA W_hh
        #     dc = dh' ⊙ (1 − m) + dc' ⊙ o + da_m ⊙ w_ch_m + da_o ⊙ w_ch_o
        di = dh_t * m + dc_t * (1.0 - o)                          # h' and c' both use i
        dm = dh_t * (i - c)                                       # dh'/dm = i - c
        do = dc_t * (c - i)                                       # dc'/do = c - i
        da_i = di * F.tanh_grad(i)                                # di/da_i = 1 - i²
        da_m = dm * F.sigmoid_grad(m)                             # dm/da_m = m(1 - m)
        da_o = do * F.sigmoid_grad(o)                             # do/da_o = o(1 - o)
        g["weight_ch_m"] += (da_m * c).sum(axis=0)                # da_m/dw_ch_m = c
        g["weight_ch_o"] += (da_o * c).sum(axis=0)
        dA = np.concatenate([da_i, da_m, da_o], axis=1)           # N,3H
        g["weight_ih"] += dA.T @ x
        g["weight_hh"] += dA.T @ h
        g["bias_ih"] += dA.sum(axis=0)
        g["bias_hh"] += dA.sum(axis=0)
        dx = dA @ p["weight_ih"]
        dh = dA @ p["weight_hh"]
        dc = dh_t * (1.0 - m) + dc_t * o + da_m * p["weight_ch_m"] + da_o * p["weight_ch_o"]
        # END SOLUTION
        return self._finish_backward(cache, dx, (dh, dc))

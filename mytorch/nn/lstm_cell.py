"""A long short-term memory (LSTM) cell with PyTorch's semantics and layout (torch.nn.LSTMCell), and the
optional output projection of torch.nn.LSTM (``proj_size``).

Gates are stacked in the order i, f, g, o in weight_ih (4H, I), weight_hh (4H, H), bias_ih and bias_hh (4H).
The state is (h, c): h the output (N, H), c the cell state (N, H).

    [a_i | a_f | a_g | a_o] = x W_ihᵀ + b_ih + h W_hhᵀ + b_hh      (N, 4H)
    i = σ(a_i)      input gate          f = σ(a_f)      forget gate
    g = tanh(a_g)   candidate           o = σ(a_o)      output gate
    c' = f ⊙ c + i ⊙ g                  the forget gate scales the PREVIOUS cell state c
    h' = o ⊙ tanh(c')                   output h', state (h', c')

With ``proj_size = P > 0`` (torch.nn.LSTM's LSTMP), h' is projected down to P features by weight_hr (P, H):

    h' = (o ⊙ tanh(c')) W_hrᵀ           (N, P); the state's h is P wide, so weight_hh is (4H, P)

σ is the sigmoid, ⊙ the elementwise product. When f ≈ 1 and i ≈ 0, c' ≈ c: the cell state carries both
its value and its gradient over long spans unchanged (the "constant error carousel").
"""
import math

import numpy as np

from mytorch import functional as F
from mytorch.nn.cell import Cache, RecurrentCell
from mytorch.nn.init import uniform

GATES = ("i", "f", "g", "o")


class LSTMCell(RecurrentCell):
    """An LSTM step, as torch.nn.LSTMCell (see the module docstring for the equations).

    Args:
        input_size (I), hidden_size (H): feature sizes.
        bias: if False, no bias_ih / bias_hh.
        proj_size (P): if > 0, project h' to P features with weight_hr (P, H), as torch.nn.LSTM does.
        forget_bias: added to the initial forget-gate rows of bias_ih (default 0.0: PyTorch's initialisation
            unchanged; 1.0 is the usual advice, so that a fresh cell remembers by default). Initialisation
            only: the forward pass never adds it.
        dtype: parameter and computation dtype (default float64).
        rng: a numpy Generator or seed; parameters are drawn from U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch.

    Attributes:
        weight_ih (4H, I), weight_hh (4H, H) or (4H, P), bias_ih (4H), bias_hh (4H): gates stacked i, f, g, o;
        weight_hr (P, H) with proj_size. After forward: x, hidden, cell (the step's inputs), i, f, g, o, and
        tanh_c = tanh(c') (N, ·), or 1-D for 1-D input.

    Shapes: x (N, I) or (I,); state (h, c): h (N, H) or (N, P) with proj_size, c (N, H), or 1-D;
    returns (h', c').

    Example::

        cell = LSTMCell(3, 4, rng=0)
        h, c = cell.forward(np.ones(3))                # (4,), (4,)
        dx, (dh, dc) = cell.backward((np.ones(4), None))
    """

    state_names = ("h", "c")
    exposed = ("x", "hidden", "cell", "i", "f", "g", "o", "tanh_c")
    #: sequence layers stack (h, c) over layers into two arrays (L·D, N, ·), as torch.nn.LSTM does
    stacked_state = True

    def __init__(self, input_size, hidden_size, bias=True, proj_size=0, forget_bias=0.0, dtype=np.float64,
                 rng=None):
        super().__init__(input_size, hidden_size, dtype, rng)
        if isinstance(proj_size, bool) or not isinstance(proj_size, (int, np.integer)) or not \
                0 <= proj_size < hidden_size:
            raise ValueError(f"LSTMCell: proj_size must be an integer with 0 <= proj_size < hidden_size "
                             f"({hidden_size}), got {proj_size!r}")
        if not bias and forget_bias != 0.0:
            raise ValueError(f"LSTMCell: forget_bias={forget_bias!r} needs a bias (bias=False was given)")
        self.bias = bool(bias)
        self.proj_size = int(proj_size)
        self.forget_bias = float(forget_bias)
        H, P = hidden_size, self.proj_size
        init = uniform(1.0 / math.sqrt(H))
        self._add_param("weight_ih", init(self.rng, (4 * H, input_size)))
        self._add_param("weight_hh", init(self.rng, (4 * H, P or H)))
        if self.bias:
            bias_ih = init(self.rng, (4 * H,))
            bias_ih[H:2 * H] += self.forget_bias
            self._add_param("bias_ih", bias_ih)
            self._add_param("bias_hh", init(self.rng, (4 * H,)))
        if P:
            self._add_param("weight_hr", init(self.rng, (P, H)))

    def __repr__(self):
        extra = f", proj_size={self.proj_size}" if self.proj_size else ""
        return f"LSTMCell({self.input_size}, {self.hidden_size}{extra}, dtype={self.dtype.name})"

    @property
    def state_widths(self):
        """h is P wide with proj_size (else H); c is always H wide."""
        return (self.proj_size or self.hidden_size, self.hidden_size)

    def _bias(self, name):
        return self.params[name] if self.bias else 0.0

    def forward(self, x, state=None):
        """One step: returns (h', c'), each (N, ·) or 1-D. ``state`` is (h, c); None means zeros."""
        x, (h, c), batched, _ = self._prepare(x, state)
        p, H = self.params, self.hidden_size
        # BEGIN SOLUTION
        a = x @ p["weight_ih"].T + self._bias("bias_ih") + h @ p["weight_hh"].T + self._bias("bias_hh")  # N,4H
        i = F.sigmoid(a[:, :H])
        f = F.sigmoid(a[:, H:2 * H])
        g = np.tanh(a[:, 2 * H:3 * H])
        o = F.sigmoid(a[:, 3 * H:])
        c_t = f * c + i * g                                       # f scales the previous cell state
        tanh_c = np.tanh(c_t)
        h_hat = o * tanh_c                                        # N,H  h' before any projection
        h_t = h_hat @ p["weight_hr"].T if self.proj_size else h_hat
        # END SOLUTION
        cache = Cache(x=x, hidden=h, cell=c, i=i, f=f, g=g, o=o, tanh_c=tanh_c, h_hat=h_hat)
        return self._finish(cache, (h_t, c_t), batched)

    def backward(self, d_state):
        """Given (dL/dh', dL/dc') (either may be None), accumulate gradients and return (dx, (dh, dc))."""
        cache, (dh_t, dc_t) = self._prepare_backward(d_state)
        p, grad = self.params, self.grads
        x, h, c = cache.x, cache.hidden, cache.cell                      # the step's inputs
        i, f, g, o, tanh_c = cache.i, cache.f, cache.g, cache.o, cache.tanh_c
        # BEGIN SOLUTION
        # Backward, given (dh', dc'), in the reverse order of the forward lines:
        #
        #     (projection)  dW_hr += dh'ᵀ h_hat         dh_hat = dh' W_hr       (else dh_hat = dh')
        #     do   = dh_hat ⊙ tanh(c')
        #     dc'  ← dc' + dh_hat ⊙ o ⊙ (1 − tanh²(c'))   c' reaches the loss directly AND through h'
        #     di   = dc' ⊙ g        df = dc' ⊙ c        dg = dc' ⊙ i        dc = dc' ⊙ f
        #     da_i = di ⊙ i(1 − i)  da_f = df ⊙ f(1 − f)  da_g = dg ⊙ (1 − g²)  da_o = do ⊙ o(1 − o)
        #     dA = [da_i | da_f | da_g | da_o] (N, 4H):  dW_ih += dAᵀ x,  dW_hh += dAᵀ h,  db_ih, db_hh += Σ_N dA
        #     dx = dA W_ih                  dh = dA W_hh
        if self.proj_size:
            grad["weight_hr"] += dh_t.T @ cache.h_hat             # dh'/dW_hr = h_hat
            dh_hat = dh_t @ p["weight_hr"]                        # dh'/dh_hat = W_hr
        else:
            dh_hat = dh_t
        do = dh_hat * tanh_c                                      # dh_hat/do = tanh(c')
        dc = dc_t + dh_hat * o * F.tanh_grad(tanh_c)              # dh_hat/dc' = o ⊙ (1 - tanh²(c'))
        di = dc * g                                               # dc'/di = g
        df = dc * c                                               # dc'/df = c, the PREVIOUS cell state
        dg = dc * i                                               # dc'/dg = i
        dc_prev = dc * f                                          # dc'/dc = f
        da_i = di * F.sigmoid_grad(i)                             # di/da_i = i(1 - i)
        da_f = df * F.sigmoid_grad(f)                             # df/da_f = f(1 - f)
        da_g = dg * F.tanh_grad(g)                                # dg/da_g = 1 - g²
        da_o = do * F.sigmoid_grad(o)                             # do/da_o = o(1 - o)
        dA = np.concatenate([da_i, da_f, da_g, da_o], axis=1)    # N,4H  gates stacked i, f, g, o
        grad["weight_ih"] += dA.T @ x                             # dA/dW_ih = x
        grad["weight_hh"] += dA.T @ h                             # dA/dW_hh = h
        if self.bias:
            grad["bias_ih"] += dA.sum(axis=0)                     # dA/db = 1, summed over the batch
            grad["bias_hh"] += dA.sum(axis=0)
        dx = dA @ p["weight_ih"]                                  # dA/dx = W_ih
        dh = dA @ p["weight_hh"]                                  # dA/dh = W_hh
        # END SOLUTION
        return self._finish_backward(cache, dx, (dh, dc_prev))

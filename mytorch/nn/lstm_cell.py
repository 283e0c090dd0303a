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
from mytorch.grad_mode import is_recording
from mytorch.nn.cell import Cache, RecurrentCell
from mytorch.nn.fast_path import (
    Buffers,
    SequenceRecord,
    add_gate_product,
    begin_backward,
    begin_forward,
    gates_side_by_side,
    gates_transposed,
    transposed,
)
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

    # ----------------------------------------------------------------------------------------------
    # the fast path over a whole sequence (used by the sequence layer; see mytorch.nn.fast_path)
    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        """All T steps at once: returns ``(Y (T, N, P or H), (h_T, c_T))``, what T calls of ``forward`` return.

        In step order k (time t = k, or T-1-k in reverse), gate by gate (g = i, f, g, o):

            GX_g = X W_igᵀ + b_ig + b_hg          one product per gate for all steps       (T, N, H) each
            A_g  = GX_g + h_k W_hgᵀ               per step, weights made contiguous once    (N, H) each
            i, f, g, o, c_{k+1}, h_{k+1} from A and c_k as in ``forward``, in place (h through W_hrᵀ with proj_size).
        """
        steps, X, (h0, c0), _ = begin_forward(self, X, state0, lengths, reverse)
        # BEGIN SOLUTION optional and not graded: the whole-sequence fast path (notebook 10 builds one); until it exists the layer runs your per-step forward
        T, N, H = steps.T, steps.N, self.hidden_size
        P, p, recording = self.proj_size or H, self.params, is_recording()
        X2 = X.reshape(T * N, self.input_size)                     # TN,I  (a copy in reverse)
        order = [0, 1, 3, 2]                                       # i, f, o, g: the three σ gates side by side
        buffers = Buffers(self)                                    # per-call arrays, reused from call to call
        A = np.matmul(X2, gates_transposed(p["weight_ih"], 4)[order], out=buffers.empty(4, T * N, H))
        A = A.reshape(4, T, N, H)                                  # gate-major
        if self.bias:
            A += (p["bias_ih"] + p["bias_hh"]).reshape(4, 1, 1, H)[order]
        W_h = gates_side_by_side(p["weight_hh"], 4, order)         # P,4H  [W_hiᵀ | W_hfᵀ | W_hoᵀ | W_hgᵀ]
        W_hrT = transposed(p["weight_hr"]) if self.proj_size else None                  # H,P
        S, C = buffers.empty(T + 1, N, P), buffers.empty(T + 1, N, H)                  # h and c (step order)
        S[0], C[0] = h0, c0
        IFOG = buffers.empty(4, T, N, H)                           # i, f, o, g
        TC = buffers.empty(T, N, H)                                # tanh(c')
        H_hat = buffers.empty(T, N, H) if self.proj_size else None                     # o ⊙ tanh(c') before W_hr
        factors = buffers.empty(4, T, N, H) if recording else None
        dc_factor = buffers.empty(T, N, H) if recording else None
        gh, ig, one_minus = buffers.empty(N, 4 * H), buffers.empty(N, H), buffers.empty(N, H)
        exp_scratch = buffers.empty(3, N, H)                       # the sigmoid works in it
        for k in range(T):
            a = A[:, k]
            add_gate_product(a, S[k], W_h, gh)                     # a += h W_hgᵀ, every gate in one product
            i, f, o, g = IFOG[:, k]
            F.sigmoid(a[:3], out=IFOG[:3, k], scratch=exp_scratch)   # i, f, o
            np.tanh(a[3], out=g)
            c = C[k + 1]
            np.multiply(f, C[k], out=c)
            c += np.multiply(i, g, out=ig)                         # c' = f ⊙ c + i ⊙ g
            np.tanh(c, out=TC[k])
            if self.proj_size:
                np.multiply(o, TC[k], out=H_hat[k])
                np.matmul(H_hat[k], W_hrT, out=S[k + 1])           # h' = (o ⊙ tanh(c')) W_hrᵀ
            else:
                np.multiply(o, TC[k], out=S[k + 1])                # h' = o ⊙ tanh(c')
            if recording:
                # Backward, given dh = dL/dh_{k+1} and dc = dL/dc_{k+1}; the factors are made here, in cache.
                # With dh_hat = dh W_hr (proj_size) or dh, and dc ← dc + dh_hat ⊙ o(1 − tanh²(c')):
                #     da_i = dc ⊙ g i(1 − i)      da_f = dc ⊙ c f(1 − f)      da_g = dc ⊙ i(1 − g²)
                #     da_o = dh_hat ⊙ tanh(c') o(1 − o)
                #     dh_k = Σ_g da_g W_hg          dc_k = dc ⊙ f          dW_hr += dhᵀ h_hat
                d_i, d_f, d_g, d_o = factors[:, k]
                np.subtract(1.0, i, out=one_minus)
                np.multiply(i, one_minus, out=d_i)
                d_i *= g                                           # g i(1 − i)
                np.subtract(1.0, f, out=one_minus)
                np.multiply(f, one_minus, out=d_f)
                d_f *= C[k]                                        # c f(1 − f)
                np.multiply(g, g, out=d_g)
                np.subtract(1.0, d_g, out=d_g)
                d_g *= i                                           # i(1 − g²)
                np.subtract(1.0, o, out=one_minus)
                np.multiply(o, one_minus, out=d_o)
                d_o *= TC[k]                                       # tanh(c') o(1 − o)
                np.multiply(TC[k], TC[k], out=dc_factor[k])
                np.subtract(1.0, dc_factor[k], out=dc_factor[k])
                dc_factor[k] *= o                                  # o(1 − tanh²(c'))
            steps.keep_state(S[k + 1], S[k], k)
            steps.keep_state(c, C[k], k)
        Y, state_T = steps.outputs(S), (S[T].copy(), C[T].copy())
        if recording:
            # past a sequence's end every da is 0 (masked factors), dh_k = dh and dc_k = dc (f set to 1)
            self._record(SequenceRecord(steps=steps, X2=X2, S=S, H_hat=H_hat, factors=steps.mask(factors),
                                        dc_factor=steps.mask(dc_factor), c_carry=steps.pass_through(IFOG[1]),
                                        buffers=buffers))
        else:
            buffers.give_back()
        return Y, state_T
        # END SOLUTION

    def sequence_backward(self, dY, d_state_T):
        """Backward of ``sequence_forward``: returns ``(dX (T, N, I), (dh_0, dc_0))`` and adds to ``self.grads``
        what T calls of ``backward`` add. Per step one recurrent product and a few in-place products run; the
        input gradient and every weight gradient are one product over all steps."""
        record, steps, dY, (carry_h, carry_c) = begin_backward(self, dY, d_state_T)
        # BEGIN SOLUTION optional and not graded: the backward of your sequence_forward; until it exists the layer runs your per-step backward
        T, N, H = steps.T, steps.N, self.hidden_size
        P, p, grad = self.proj_size or H, self.params, self.grads
        buffers = Buffers(self)
        # step-major with the gates side by side, as weight_ih's and weight_hh's rows are stacked: each step's
        # dh_k is ONE product [da_i | da_f | da_g | da_o] W_hh, and each weight gradient one over all steps
        DA = buffers.empty(T, N, 4 * H)
        gate_blocks = DA.reshape(T, N, 4, H).transpose(0, 2, 1, 3)                      # T,4,N,H  (a view)
        DH = buffers.empty(T, N, P)                                # dL/dh_{k+1}
        dh_hat, dc, scratch = buffers.empty(N, H), buffers.empty(N, H), buffers.empty(N, P)
        for k in reversed(range(T)):
            d = DH[k]
            np.add(dY[k], carry_h, out=d)                          # from the output and from step k+1
            if self.proj_size:
                np.matmul(d, p["weight_hr"], out=dh_hat)
            else:
                dh_hat[...] = d
            np.multiply(dh_hat, record.dc_factor[k], out=dc)
            dc += carry_c                                          # c' reaches the loss directly and through h'
            np.multiply(dc, record.factors[:3, k], out=gate_blocks[k, :3])              # da_i, da_f, da_g
            np.multiply(dh_hat, record.factors[3, k], out=gate_blocks[k, 3])           # da_o
            np.matmul(DA[k], p["weight_hh"], out=carry_h)          # dh_k = Σ_g da_g W_hg
            np.multiply(dc, record.c_carry[k], out=carry_c)        # dc'/dc = f
            if steps.idle is not None:
                carry_h += np.multiply(d, steps.idle[k], out=scratch)                  # idle: straight through
        TN = T * N
        DA2, h_prev = DA.reshape(TN, 4 * H), record.S[:-1].reshape(TN, P)
        grad["weight_ih"] += DA2.T @ record.X2
        grad["weight_hh"] += DA2.T @ h_prev
        if self.bias:
            sums = DA2.sum(axis=0)
            grad["bias_ih"] += sums
            grad["bias_hh"] += sums
        if self.proj_size:
            grad["weight_hr"] += steps.mask(DH).reshape(TN, P).T @ record.H_hat.reshape(TN, H)
        dX = DA2 @ p["weight_ih"]
        record.buffers.give_back()
        buffers.give_back()
        return steps.order(dX.reshape(T, N, self.input_size)), (carry_h, carry_c)
        # END SOLUTION

"""An Elman RNN cell with PyTorch's semantics and parameter layout (torch.nn.RNNCell).

    a  = x @ W_ihᵀ + b_ih + h @ W_hhᵀ + b_hh          (N, H)
    h' = act(a)                                        act = tanh or relu
"""
import math

import numpy as np

from mytorch import functional as F
from mytorch.grad_mode import is_recording
from mytorch.nn.cell import Cache, RecurrentCell
from mytorch.nn.fast_path import Buffers, SequenceRecord, begin_backward, begin_forward, transposed
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

    # ----------------------------------------------------------------------------------------------
    # the fast path over a whole sequence (used by the sequence layer; see mytorch.nn.fast_path)
    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        """All T steps at once: returns ``(Y (T, N, H), h_T (N, H))``, what T calls of ``forward`` return.

        In step order k (time t = k, or T-1-k in reverse):

            PX      = X W_ihᵀ + b_ih + b_hh         one product for all steps             (T, N, H)
            h_{k+1} = act(h_k W_hhᵀ + PX_k)         per step, W_hhᵀ made contiguous once  (N, H)
        """
        steps, X, (h0,), _ = begin_forward(self, X, state0, lengths, reverse)
        # BEGIN SOLUTION optional and not graded: the whole-sequence fast path (notebook 10 builds one); until it exists the layer runs your per-step forward
        T, N, H = steps.T, steps.N, self.hidden_size
        p, recording = self.params, is_recording()
        X2 = X.reshape(T * N, self.input_size)                     # TN,I  (a copy in reverse)
        buffers = Buffers(self)                                    # per-call arrays, reused from call to call
        PX = np.matmul(X2, transposed(p["weight_ih"]), out=buffers.empty(T * N, H)).reshape(T, N, H)
        if self.bias:
            PX += p["bias_ih"] + p["bias_hh"]
        W_hhT = transposed(p["weight_hh"])                         # H,H
        S = buffers.empty(T + 1, N, H)                             # h_0 … h_T (step order)
        S[0] = h0
        for k in range(T):
            h = S[k + 1]
            np.matmul(S[k], W_hhT, out=h)
            h += PX[k]
            if self.nonlinearity == "tanh":
                np.tanh(h, out=h)
            else:
                np.maximum(h, 0.0, out=h)
            steps.keep_state(h, S[k], k)
        Y, h_T = steps.outputs(S), S[T].copy()
        if recording:
            # Backward, given d = dL/dh_{k+1}: da = d ⊙ act'(a), the factor act'(a) from the outputs for all
            # steps at once (1 − h'² or [h' > 0]) and zero past a sequence's end; dh_k = da W_hh (+ d when idle).
            da_factor = PX                                         # PX is spent: the factor is written over it
            if self.nonlinearity == "tanh":
                np.multiply(S[1:], S[1:], out=da_factor)
                np.subtract(1.0, da_factor, out=da_factor)         # 1 − h'²
            else:
                np.greater(S[1:], 0.0, out=da_factor)              # [h' > 0]
            self._record(SequenceRecord(steps=steps, X2=X2, S=S, da_factor=steps.mask(da_factor), buffers=buffers))
        else:
            buffers.give_back()
        return Y, h_T
        # END SOLUTION

    def sequence_backward(self, dY, d_state_T):
        """Backward of ``sequence_forward``: returns ``(dX (T, N, I), dh_0 (N, H))`` and adds to ``self.grads``
        what T calls of ``backward`` add. Per step only the recurrent product runs; the input gradient and
        every weight gradient are one product each over all steps."""
        record, steps, dY, (carry,) = begin_backward(self, dY, d_state_T)
        # BEGIN SOLUTION optional and not graded: the backward of your sequence_forward; until it exists the layer runs your per-step backward
        T, N, H = steps.T, steps.N, self.hidden_size
        p, g = self.params, self.grads
        buffers = Buffers(self)
        DA = buffers.empty(T, N, H)                                # da = d(x W_ihᵀ + h W_hhᵀ + biases)
        d = buffers.empty(N, H)
        for k in reversed(range(T)):
            np.add(dY[k], carry, out=d)                            # dL/dh_{k+1}
            np.multiply(d, record.da_factor[k], out=DA[k])
            np.matmul(DA[k], p["weight_hh"], out=carry)
            if steps.idle is not None:
                d *= steps.idle[k]
                carry += d                                         # idle: the gradient passes straight through
        DA2 = DA.reshape(T * N, H)
        g["weight_ih"] += DA2.T @ record.X2
        g["weight_hh"] += DA2.T @ record.S[:-1].reshape(T * N, H)
        if self.bias:
            da_sum = DA2.sum(axis=0)
            g["bias_ih"] += da_sum
            g["bias_hh"] += da_sum
        dX = DA2 @ p["weight_ih"]
        record.buffers.give_back()
        buffers.give_back()
        return steps.order(dX.reshape(T, N, self.input_size)), carry
        # END SOLUTION

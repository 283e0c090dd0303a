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
)
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

    # ----------------------------------------------------------------------------------------------
    # the fast path over a whole sequence (used by the sequence layer; see mytorch.nn.fast_path)
    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        """All T steps at once: returns ``(Y (T, N, H), (h_T, c_T))``, what T calls of ``forward`` return.

        In step order k (time t = k, or T-1-k in reverse), gate by gate (g = i, m, o), with both peepholes as
        one (2, H) array:

            GX_g = X W_igᵀ + b_ig + b_hg          one product per gate for all steps       (T, N, H) each
            A_g  = GX_g + h_k W_hgᵀ               per step, weights made contiguous once    (N, H) each
            i, m, o and (h_{k+1}, c_{k+1}) from A and c_k as in ``forward``, in place.
        """
        steps, X, (h0, c0), _ = begin_forward(self, X, state0, lengths, reverse)
        # BEGIN SOLUTION optional and not graded: the whole-sequence fast path (notebook 10 builds one); until it exists the layer runs your per-step forward
        T, N, H = steps.T, steps.N, self.hidden_size
        p = self.params
        X2 = X.reshape(T * N, self.input_size)                     # TN,I  (a copy in reverse)
        buffers = Buffers(self)                                    # per-call arrays, reused from call to call
        A = np.matmul(X2, gates_transposed(p["weight_ih"], 3), out=buffers.empty(3, T * N, H))
        A = A.reshape(3, T, N, H)                                  # gate-major
        A += (p["bias_ih"] + p["bias_hh"]).reshape(3, 1, 1, H)
        W_h = gates_side_by_side(p["weight_hh"], 3)                # H,3H  [W_hiᵀ | W_hmᵀ | W_hoᵀ]
        peep = np.stack([p["weight_ch_m"], p["weight_ch_o"]])[:, None, :]             # 2,1,H
        S, C = buffers.empty(T + 1, N, H), buffers.empty(T + 1, N, H)                  # h and c (step order)
        S[0], C[0] = h0, c0
        IN, MO = buffers.empty(T, N, H), buffers.empty(2, T, N, H)                     # i; m, o
        gh, pc = buffers.empty(N, 3 * H), buffers.empty(2, N, H)
        for k in range(T):
            add_gate_product(A[:, k], S[k], W_h, gh)               # A_g += h W_hgᵀ, every gate in one product
            np.tanh(A[0, k], out=IN[k])
            A[1:, k] += np.multiply(C[k], peep, out=pc)            # w_ch_m ⊙ c, w_ch_o ⊙ c: the old c
            F.sigmoid(A[1:, k], out=MO[:, k], scratch=pc)          # (pc is free again)
            i, m, o = IN[k], MO[0, k], MO[1, k]
            h, c = S[k + 1], C[k + 1]
            np.subtract(i, C[k], out=h)
            h *= m
            h += C[k]                                              # h' = c + m ⊙ (i − c)
            np.subtract(C[k], i, out=c)
            c *= o
            c += i                                                 # c' = i + o ⊙ (c − i)
            steps.keep_state(h, S[k], k)
            steps.keep_state(c, C[k], k)
        Y, state_T = steps.outputs(S), (S[T].copy(), C[T].copy())
        if is_recording():
            # the backward makes its factors from i, m, o and c step by step, in small arrays it reuses: storing
            # them here for all steps would write and read back five more (T, N, H) arrays
            self._record(SequenceRecord(steps=steps, X2=X2, S=S, C=C, IN=IN, MO=MO, peep=peep, buffers=buffers))
        else:
            buffers.give_back()
        return Y, state_T
        # END SOLUTION

    def sequence_backward(self, dY, d_state_T):
        """Backward of ``sequence_forward``: returns ``(dX (T, N, I), (dh_0, dc_0))`` and adds to ``self.grads``
        what T calls of ``backward`` add. Per step one recurrent product and the gate factors, in place, run; the
        input gradient and every weight gradient are one product (the peepholes' one sum) over all steps."""
        record, steps, dY, (carry_h, carry_c) = begin_backward(self, dY, d_state_T)
        # BEGIN SOLUTION optional and not graded: the backward of your sequence_forward; until it exists the layer runs your per-step backward
        T, N, H, p, g = steps.T, steps.N, self.hidden_size, self.params, self.grads
        buffers = Buffers(self)
        # step-major with the gates side by side, as weight_ih's and weight_hh's rows are stacked: each step's
        # dh_k is ONE product [da_i | da_m | da_o] W_hh, and each weight gradient one over all steps
        DA = buffers.empty(T, N, 3 * H)
        da = DA.reshape(T, N, 3, H).transpose(0, 2, 1, 3)         # T,3,N,H  (a view)
        dh, dc, tanh_grad, one_minus_o, one_minus_m, i_minus_c, scratch = (buffers.empty(N, H) for _ in range(7))
        peep_grad = buffers.empty(2, N, H)
        for k in reversed(range(T)):
            # given dh = dL/dh_{k+1} and dc = dL/dc_{k+1}, with i, m, o of step k and c = c_k:
            #     da_i = (dh ⊙ m + dc ⊙ (1 − o)) ⊙ (1 − i²)      da_m = dh ⊙ (i − c) m(1 − m)
            #     da_o = dc ⊙ (c − i) o(1 − o)                     dh_k = da_i W_hi + da_m W_hm + da_o W_ho
            #     dc_k = dh ⊙ (1 − m) + dc ⊙ o + da_m ⊙ w_ch_m + da_o ⊙ w_ch_o
            i, m, o, c = record.IN[k], record.MO[0, k], record.MO[1, k], record.C[k]
            np.add(dY[k], carry_h, out=dh)
            dc[...] = carry_c
            da_i, da_m, da_o = da[k]
            np.multiply(i, i, out=tanh_grad)
            np.subtract(1.0, tanh_grad, out=tanh_grad)             # 1 − i²
            np.subtract(1.0, o, out=one_minus_o)
            np.multiply(dc, one_minus_o, out=da_i)
            da_i += np.multiply(dh, m, out=scratch)
            da_i *= tanh_grad
            np.subtract(i, c, out=i_minus_c)
            np.subtract(1.0, m, out=one_minus_m)
            np.multiply(m, one_minus_m, out=da_m)
            da_m *= i_minus_c
            da_m *= dh
            np.multiply(o, one_minus_o, out=da_o)
            da_o *= i_minus_c
            da_o *= dc
            np.negative(da_o, out=da_o)                            # (c − i) = −(i − c)
            if steps.active is not None:
                DA[k] *= steps.active[k]                           # past a sequence's end: no gradient
            np.matmul(DA[k], p["weight_hh"], out=carry_h)
            np.multiply(dh, one_minus_m, out=carry_c)
            carry_c += np.multiply(dc, o, out=scratch)
            np.multiply(da[k, 1:], record.peep, out=peep_grad)
            carry_c += peep_grad[0]
            carry_c += peep_grad[1]                                # through both peepholes
            if steps.idle is not None:                             # idle: both gradients straight through
                np.copyto(carry_c, dc, where=steps.idle[k])
                dh *= steps.idle[k]
                carry_h += dh
        TN = T * N
        DA2, h_prev = DA.reshape(TN, 3 * H), record.S[:-1].reshape(TN, H)
        g["weight_ih"] += DA2.T @ record.X2
        g["weight_hh"] += DA2.T @ h_prev
        sums = DA2.sum(axis=0)
        g["bias_ih"] += sums
        g["bias_hh"] += sums
        # Σ da_m ⊙ c and Σ da_o ⊙ c over steps and batch, c the state before each step
        peep_terms = np.multiply(DA2.reshape(TN, 3, H)[:, 1:], record.C[:-1].reshape(TN, 1, H),
                                 out=buffers.empty(TN, 2, H))
        peep_sum = peep_terms.sum(axis=0)                          # 2,H
        g["weight_ch_m"] += peep_sum[0]
        g["weight_ch_o"] += peep_sum[1]
        dX = DA2 @ p["weight_ih"]
        record.buffers.give_back()
        buffers.give_back()
        return steps.order(dX.reshape(T, N, self.input_size)), (carry_h, carry_c)
        # END SOLUTION

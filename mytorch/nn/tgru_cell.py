"""The strongly-typed GRU (TGRU) of Balduzzi & Ghifary (2016), with the keyword interface of Lux's TGRUCell.

The state is (h, m): h (N, H) the hidden state, and m (N, I) the memory, which holds the PREVIOUS input
x_{t−1}. Gates are stacked z, f, o in weight_ih (3H, I), weight_hh (3H, I) (it acts on the memory, so it is
I wide), bias_ih and bias_hh (3H):

    [a_z | a_f | a_o] = x W_ihᵀ + b_ih + m W_hhᵀ + b_hh       (N, 3H)
    z = a_z  (no activation)     f = σ(a_f)     o = tanh(a_o)
    h' = f ⊙ h + z ⊙ o           m' = x                        state (h', m'), output h'

The gates see inputs only, never h: the recurrence h' = f ⊙ h + z ⊙ o is elementwise and linear in h,
which is what makes the network "strongly typed" and lets all the gates be computed for every time step
at once. (Lux allocates weight_hh as (3H, H) and the initial memory H wide although both act on x_{t−1};
that only works when I = H. mytorch uses the consistent I-wide form, as RecurrentLayers.jl does.)

With ``train_state`` / ``train_memory``, a missing initial state is the trainable vector ``hidden_state`` (H)
/ ``memory`` (I) repeated over the batch, and its gradient (summed over the batch) lands in
``grads['hidden_state']`` / ``grads['memory']``.
"""
import math

import numpy as np

from mytorch import functional as F
from mytorch.grad_mode import is_recording
from mytorch.nn.cell import Cache, RecurrentCell
from mytorch.nn.fast_path import (
    Buffers,
    SequenceRecord,
    begin_backward,
    begin_forward,
    gate_rows,
    gates_transposed,
    sum_of_products,
)
from mytorch.nn.init import constant, uniform, zeros


def _initialisers(name, value, default):
    """Lux's rule: None -> the default; one initialiser -> the same for z, f, o; else a tuple of three."""
    if value is None:
        value = default
    if isinstance(value, (tuple, list)):
        if len(value) != 3:
            raise ValueError(f"TGRUCell: {name} must be one initialiser or a tuple of 3 (z, f, o), got {len(value)}")
        inits = tuple(value)
    else:
        inits = (value,) * 3
    return tuple(constant(v) if isinstance(v, (int, float)) else v for v in inits)


def _draw(name, init, rng, shape):
    """Call an initialiser ``(rng, shape) -> array`` and check that it returned that shape."""
    if not callable(init):
        raise TypeError(f"TGRUCell: {name} must be a callable (rng, shape) -> array, got {type(init).__name__}")
    value = np.asarray(init(rng, shape))
    if value.shape != tuple(shape):
        raise ValueError(f"TGRUCell: {name} returned shape {value.shape}, expected {tuple(shape)}")
    return value


class TGRUCell(RecurrentCell):
    """A strongly-typed GRU step (see the module docstring for the equations and the backward).

    Args (the keywords of Lux's TGRUCell):
        input_size (I, Lux's in_dims), hidden_size (H, out_dims).
        use_bias: keep bias_ih. use_recurrent_bias: keep bias_hh.
        train_state: a trainable initial hidden state ``hidden_state`` (H). train_memory: a trainable
            initial memory ``memory`` (I).
        init_weight, init_recurrent_weight, init_bias, init_recurrent_bias: an initialiser
            ``(rng, shape) -> array`` or a tuple of three (for z, f, o); None: U(-1/sqrt(H), 1/sqrt(H)).
        init_state, init_memory: initialiser of the initial hidden state / memory (default zeros).
        dtype: default float64. rng: a numpy Generator or seed (also used by init_state/init_memory).

    Input cases (Lux's): forward(x) with no state uses the initial state: 1a neither trainable,
    1b train_state, 1c train_memory, 1d both; forward(x, (h, m)) is case 2.

    Attributes: weight_ih (3H, I), weight_hh (3H, I), bias_ih (3H), bias_hh (3H), [hidden_state (H)],
    [memory (I)]. After forward: x, hidden, memory, z, f, o.

    Shapes: x (N, I) or (I,); state (h, m): h (N, H), m (N, I), or 1-D; returns (h', m').
    """

    state_names = ("h", "m")
    exposed = ("x", "hidden", "memory", "z", "f", "o")

    def __init__(self, input_size, hidden_size, use_bias=True, use_recurrent_bias=True, train_state=False,
                 train_memory=False, init_bias=None, init_recurrent_bias=None, init_weight=None,
                 init_recurrent_weight=None, init_state=zeros, init_memory=zeros, dtype=np.float64, rng=None):
        super().__init__(input_size, hidden_size, dtype, rng)
        I, H = input_size, hidden_size
        self.use_bias, self.use_recurrent_bias = bool(use_bias), bool(use_recurrent_bias)
        self.train_state, self.train_memory = bool(train_state), bool(train_memory)
        self.init_state, self.init_memory = init_state, init_memory
        default = uniform(1.0 / math.sqrt(H))
        layout = [("weight_ih", init_weight, "init_weight", (H, I), True),
                  ("weight_hh", init_recurrent_weight, "init_recurrent_weight", (H, I), True),
                  ("bias_ih", init_bias, "init_bias", (H,), self.use_bias),
                  ("bias_hh", init_recurrent_bias, "init_recurrent_bias", (H,), self.use_recurrent_bias)]
        for param, init, keyword, gate_shape, wanted in layout:
            if wanted:
                gates = [_draw(keyword, f, self.rng, gate_shape) for f in _initialisers(keyword, init, default)]
                self._add_param(param, np.concatenate(gates, axis=0))           # stacked z, f, o
        if self.train_state:
            self._add_param("hidden_state", _draw("init_state", init_state, self.rng, (H,)))
        if self.train_memory:
            self._add_param("memory", _draw("init_memory", init_memory, self.rng, (I,)))

    def initial_state_part(self, k, n):
        """Case 1: the trainable vector repeated over the batch, or a fresh draw of init_state/init_memory."""
        trainable, param, init, keyword = ((self.train_state, "hidden_state", self.init_state, "init_state"),
                                           (self.train_memory, "memory", self.init_memory, "init_memory"))[k]
        if trainable:
            return np.repeat(self.params[param][None], n, axis=0)
        return _draw(keyword, init, self.rng, (n, self.state_widths[k])).astype(self.dtype)

    def initial_state_backward(self, k, d_part):
        """A sequence layer filled part ``k`` of the state with the initial state: add its gradient (N, width)
        to the trainable vector it repeats, if it is one (summed over the batch)."""
        if (self.train_state, self.train_memory)[k]:
            self.grads[("hidden_state", "memory")[k]] += d_part.sum(axis=0)

    @property
    def state_widths(self):
        return (self.hidden_size, self.input_size)

    def forward(self, x, state=None):
        """One step: returns (h', m') with m' = x. ``state`` None or a None entry: the initial state."""
        x, (h, mem), batched, defaulted = self._prepare(x, state)
        p, H = self.params, self.hidden_size
        # BEGIN SOLUTION
        a = x @ p["weight_ih"].T + mem @ p["weight_hh"].T                    # N,3H  inputs only, never h
        if self.use_bias:
            a = a + p["bias_ih"]
        if self.use_recurrent_bias:
            a = a + p["bias_hh"]
        z = a[:, :H]
        f = F.sigmoid(a[:, H:2 * H])
        o = np.tanh(a[:, 2 * H:])
        h_t = f * h + z * o
        m_t = x.copy()                                                       # the memory is the raw input
        # END SOLUTION
        from_params = (defaulted[0] and self.train_state, defaulted[1] and self.train_memory)
        cache = Cache(x=x, hidden=h, memory=mem, z=z, f=f, o=o, from_params=from_params)
        return self._finish(cache, (h_t, m_t), batched)

    def backward(self, d_state):
        """Given (dL/dh', dL/dm') (either may be None), accumulate gradients and return (dx, (dh, dm))."""
        cache, (dh_t, dm_t) = self._prepare_backward(d_state)
        p, g = self.params, self.grads
        x, h, mem, z, f, o = cache.x, cache.hidden, cache.memory, cache.z, cache.f, cache.o
        # BEGIN SOLUTION
        # Backward, given (dh', dm'):
        #
        #     dz = dh' ⊙ o            df = dh' ⊙ h                do = dh' ⊙ z            dh = dh' ⊙ f
        #     dA = [dz | df ⊙ f(1 − f) | do ⊙ (1 − o²)]            (N, 3H)
        #     dW_ih += dAᵀ x,  dW_hh += dAᵀ m,  db_ih, db_hh += Σ_N dA
        #     dx = dA W_ih + dm'      (x is also the next memory)      dm = dA W_hh
        dz = dh_t * o                                                        # dh'/dz = o  (z is linear)
        df = dh_t * h                                                        # dh'/df = h
        do = dh_t * z                                                        # dh'/do = z
        dA = np.concatenate([dz, df * F.sigmoid_grad(f), do * F.tanh_grad(o)], axis=1)   # N,3H
        g["weight_ih"] += dA.T @ x
        g["weight_hh"] += dA.T @ mem
        if self.use_bias:
            g["bias_ih"] += dA.sum(axis=0)
        if self.use_recurrent_bias:
            g["bias_hh"] += dA.sum(axis=0)
        dx = dA @ p["weight_ih"] + dm_t                                      # x feeds the gates and is m'
        dh = dh_t * f                                                        # dh'/dh = f: elementwise, linear
        dm = dA @ p["weight_hh"]
        if cache.from_params[0]:
            g["hidden_state"] += dh.sum(axis=0)                              # repeated over the batch: sum back
        if cache.from_params[1]:
            g["memory"] += dm.sum(axis=0)
        # END SOLUTION
        return self._finish_backward(cache, dx, (dh, dm))

    # ----------------------------------------------------------------------------------------------
    # the fast path over a whole sequence (used by the sequence layer; see mytorch.nn.fast_path)
    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        """All T steps at once: returns ``(Y (T, N, H), (h_T, m_T))``, what T calls of ``forward`` return.

        The gates never see h, so they are computed for every step first; only the elementwise, linear scan
        of h runs step by step. In step order k (time t = k, or T-1-k in reverse), with M_k the memory
        before step k (m_0, then the previous step's x):

            [A_z | A_f | A_o] = X W_ihᵀ + M W_hhᵀ + b_ih + b_hh       two products for all steps  (T, N, 3H)
            z = A_z,  f = σ(A_f),  o = tanh(A_o)                          for all steps at once
            h_{k+1} = f_k ⊙ h_k + z_k ⊙ o_k                               the only per-step work

        A None ``state0`` (or entry) is the initial state; with ``train_state`` / ``train_memory`` its gradient
        reaches ``grads['hidden_state']`` / ``grads['memory']``, as in ``forward``.
        """
        steps, X, (h0, m0), defaulted = begin_forward(self, X, state0, lengths, reverse)
        # BEGIN SOLUTION optional and not graded: the whole-sequence fast path (notebook 10 builds one); until it exists the layer runs your per-step forward
        T, N, H, I = steps.T, steps.N, self.hidden_size, self.input_size
        p = self.params
        buffers = Buffers(self)                                    # per-call arrays, reused from call to call
        M = buffers.empty(T + 1, N, I)                             # the memory before each step, and m_T
        M[0] = m0
        M[1:] = X
        if steps.idle is not None:
            for k in range(T):                                     # idle: the memory is kept, not replaced by x
                np.copyto(M[k + 1], M[k], where=steps.idle[k])
        X2, M2 = X.reshape(T * N, I), M[:-1].reshape(T * N, I)
        A = np.matmul(X2, gates_transposed(p["weight_ih"], 3), out=buffers.empty(3, T * N, H))    # gate-major
        A += np.matmul(M2, gates_transposed(p["weight_hh"], 3), out=buffers.empty(3, T * N, H))
        A = A.reshape(3, T, N, H)
        if self.use_bias:
            A += p["bias_ih"].reshape(3, 1, 1, H)
        if self.use_recurrent_bias:
            A += p["bias_hh"].reshape(3, 1, 1, H)
        Z, Fg, O = A
        F.sigmoid(Fg, out=Fg, scratch=buffers.empty(T, N, H))     # f = σ(A_f), in place
        np.tanh(O, out=O)                                          # o = tanh(A_o), in place
        B = steps.mask(np.multiply(Z, O, out=buffers.empty(T, N, H)))                  # z ⊙ o, zero when idle
        keep = steps.pass_through(Fg)                              # f, one when idle
        S = buffers.empty(T + 1, N, H)                             # h_0 … h_T (step order)
        S[0] = h0
        for k in range(T):
            h = S[k + 1]
            np.multiply(keep[k], S[k], out=h)
            h += B[k]                                              # h' = f ⊙ h + z ⊙ o
        Y, state_T = steps.outputs(S), (S[T].copy(), M[T].copy())
        if is_recording():
            self._record(SequenceRecord(steps=steps, X2=X2, M=M, S=S, A=A, keep=keep,
                                        from_params=(defaulted[0] and self.train_state,
                                                     defaulted[1] and self.train_memory), buffers=buffers))
        else:
            buffers.give_back()
        return Y, state_T
        # END SOLUTION

    def sequence_backward(self, dY, d_state_T):
        """Backward of ``sequence_forward``: returns ``(dX (T, N, I), (dh_0, dm_0))`` and adds to ``self.grads``
        what T calls of ``backward`` add. Only the scan of dh runs step by step; every gate gradient, the
        input gradient and every weight gradient are computed for all steps at once."""
        record, steps, dY, (carry_h, carry_m) = begin_backward(self, dY, d_state_T)
        # BEGIN SOLUTION optional and not graded: the backward of your sequence_forward; until it exists the layer runs your per-step backward
        # Backward, with D_k = dL/dh_{k+1} from the scan D_k = dY_k + D_{k+1} ⊙ f_{k+1}:
        #     dA_z, dA_f, dA_o = D ⊙ o, D ⊙ h f(1 − f), D ⊙ z(1 − o²)     (T, N, H) each, zero at idle steps
        #     per gate: dW_ig += dA_gᵀ X,  dW_hg += dA_gᵀ M,  db_g += Σ dA_g,  dX = Σ_g dA_g W_ig,  dM = Σ_g dA_g W_hg
        # and the memory's gradient runs back one step: x_k is the memory of step k+1 (or m_T).
        T, N, H, I = steps.T, steps.N, self.hidden_size, self.input_size
        p, g, A = self.params, self.grads, record.A
        buffers = Buffers(self)
        D = buffers.empty(T, N, H)                                 # dL/dh_{k+1}
        for k in reversed(range(T)):
            np.add(dY[k], carry_h, out=D[k])
            np.multiply(D[k], record.keep[k], out=carry_h)         # dh'/dh = f (1 when idle)
        steps.mask(D)
        Z, Fg, O = A
        DA, factor = buffers.empty(3, T, N, H), buffers.empty(T, N, H)                 # dA_z, dA_f, dA_o
        np.multiply(D, O, out=DA[0])                               # dh'/dz = o
        df = DA[1]
        np.multiply(D, record.S[:-1], out=df)                      # dh'/df = h
        np.subtract(1.0, Fg, out=factor)
        factor *= Fg
        df *= factor                                               # df/dA_f = f(1 − f)
        do = DA[2]
        np.multiply(D, Z, out=do)                                  # dh'/do = z
        np.multiply(O, O, out=factor)
        np.subtract(1.0, factor, out=factor)
        do *= factor                                               # do/dA_o = 1 − o²
        TN = T * N
        DA2, M2 = DA.reshape(3, TN, H), record.M[:-1].reshape(TN, I)
        g_ih, g_hh = gate_rows(g["weight_ih"], 3), gate_rows(g["weight_hh"], 3)
        for gate in range(3):
            g_ih[gate] += DA2[gate].T @ record.X2
            g_hh[gate] += DA2[gate].T @ M2
        if self.use_bias or self.use_recurrent_bias:
            da_sum = DA2.sum(axis=1).reshape(3 * H)
            if self.use_bias:
                g["bias_ih"] += da_sum
            if self.use_recurrent_bias:
                g["bias_hh"] += da_sum
        dX = sum_of_products(list(zip(DA2, gate_rows(p["weight_ih"], 3)))).reshape(T, N, I)
        dM = sum_of_products(list(zip(DA2, gate_rows(p["weight_hh"], 3)))).reshape(T, N, I)     # each step's memory
        if steps.idle is None:                                     # x_k is the memory of step k+1
            dX[:-1] += dM[1:]
            dX[-1] += carry_m
            carry_m = dM[0].copy()
        else:
            for k in reversed(range(T)):                           # active: x_k took the memory's gradient
                dX[k] += steps.active[k] * carry_m
                carry_m *= steps.idle[k]
                carry_m += dM[k]
        if record.from_params[0]:
            g["hidden_state"] += carry_h.sum(axis=0)               # the initial state repeated over the batch
        if record.from_params[1]:
            g["memory"] += carry_m.sum(axis=0)
        record.buffers.give_back()
        buffers.give_back()
        return steps.order(dX), (carry_h, carry_m)
        # END SOLUTION

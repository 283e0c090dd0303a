"""A GRU cell with PyTorch's semantics and layout (torch.nn.GRUCell), plus the interface of CMU 11-785's GRU handout.

Gates are stacked in the order r, z, n in weight_ih (3H, I), weight_hh (3H, H), bias_ih and bias_hh (3H):

    r  = σ(x W_irᵀ + b_ir + h W_hrᵀ + b_hr)                  reset gate       (N, H)
    z  = σ(x W_izᵀ + b_iz + h W_hzᵀ + b_hz)                  update gate      (N, H)
    n  = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn))         candidate        (N, H)
    h' = (1 − z) ⊙ n + z ⊙ h                                 z weights the OLD state

b_hn sits inside the product with r (it is part of the recurrent term r gates), and z keeps the old state:
both as PyTorch's code does. σ is the sigmoid, ⊙ the elementwise product.

Course interface (CMU 11-785's GRU handout, homework 3 part 1): ``Wrx Wzx Wnx`` (H, I), ``Wrh Wzh Wnh`` (H, H),
``brx bzx bnx brh bzh bnh`` (H) are views of the stacked parameters, ``dWrx … dbnh`` views of the gradients,
and ``init_weights(Wrx, Wzx, Wnx, Wrh, Wzh, Wnh, brx, bzx, bnx, brh, bzh, bnh)`` sets them. The course's
keyword names work too: ``forward(x, h_prev_t=h)`` and ``backward(delta=dh)``. After ``forward`` the attributes
``x, hidden, r, z, n`` hold the step's values, 1-D for a 1-D input (the course works on 1-D vectors, often
integer ones from ``np.random.randint``: every input is cast to the cell's dtype).
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
    gates_transposed,
)
from mytorch.nn.init import uniform

GATES = ("r", "z", "n")

# course name -> (stacked parameter, gate index)
COURSE_NAMES = {
    f"{kind}{gate}{side}": (f"{'weight' if kind == 'W' else 'bias'}_{'ih' if side == 'x' else 'hh'}", k)
    for kind in ("W", "b") for side in ("x", "h") for k, gate in enumerate(GATES)
}
COURSE_ORDER = ("Wrx", "Wzx", "Wnx", "Wrh", "Wzh", "Wnh", "brx", "bzx", "bnx", "brh", "bzh", "bnh")


def _param_view(alias):
    stacked, k = COURSE_NAMES[alias]

    def get(self):
        return self._gate_rows(self.params, stacked, k, alias)

    def set_(self, value):
        view = get(self)
        value = np.asarray(value)
        if value.shape != view.shape:
            raise ValueError(f"GRUCell.{alias}: got shape {value.shape}, expected {view.shape}")
        view[...] = value

    return property(get, set_, doc=f"Rows of {stacked} for gate {GATES[k]} (a view: writes reach the parameter).")


def _grad_view(alias):
    stacked, k = COURSE_NAMES[alias]

    def get(self):
        return self._gate_rows(self.grads, stacked, k, "d" + alias)

    def set_(self, value):
        raise AttributeError(f"GRUCell.d{alias} is a view of grads['{stacked}'] (gate {GATES[k]}); backward "
                             f"accumulates into self.grads['{stacked}'] instead of assigning d{alias}")

    return property(get, set_, doc=f"Rows of grads['{stacked}'] for gate {GATES[k]} (a view).")


class _Missing:
    """The default of an argument that must be given under one of two names."""

    def __repr__(self):
        return "<required>"


_MISSING = _Missing()


def _both_names(method, ours, course):
    return TypeError(f"GRUCell.{method}: got both {ours}= and {course}= (the course's name for {ours}); "
                     "pass only one")


class GRUCell(RecurrentCell):
    """A gated recurrent unit step, as torch.nn.GRUCell (see the module docstring for the equations).

    Args:
        input_size (I), hidden_size (H): feature sizes.
        bias: if False, no bias_ih / bias_hh.
        dtype: parameter and computation dtype (default float64).
        rng: a numpy Generator or seed; parameters are drawn from U(-1/sqrt(H), 1/sqrt(H)) as in PyTorch.

    Attributes:
        weight_ih (3H, I), weight_hh (3H, H), bias_ih (3H), bias_hh (3H): gates stacked r, z, n.
        After forward: x, hidden, r, z, n (N, ·), or 1-D for 1-D input.

    Shapes: x (N, I) or (I,); state h (N, H) or (H,); returns h' of the same batch shape.

    Example::

        cell = GRUCell(3, 4, rng=0)
        h = cell.forward(np.ones(3))          # (4,)
        dx, dh = cell.backward(np.ones(4))    # (3,), (4,)
    """

    exposed = ("x", "hidden", "r", "z", "n")

    def __init__(self, input_size, hidden_size, bias=True, dtype=np.float64, rng=None):
        super().__init__(input_size, hidden_size, dtype, rng)
        self.bias = bool(bias)
        init = uniform(1.0 / math.sqrt(hidden_size))
        H = hidden_size
        self._add_param("weight_ih", init(self.rng, (3 * H, input_size)))
        self._add_param("weight_hh", init(self.rng, (3 * H, H)))
        if self.bias:
            self._add_param("bias_ih", init(self.rng, (3 * H,)))
            self._add_param("bias_hh", init(self.rng, (3 * H,)))

    def _gate_rows(self, arrays, stacked, k, alias):
        if stacked not in arrays:
            raise AttributeError(f"GRUCell.{alias}: this cell was built with bias=False")
        H = self.hidden_size
        return arrays[stacked][k * H:(k + 1) * H]

    def init_weights(self, Wrx, Wzx, Wnx, Wrh, Wzh, Wnh, brx, bzx, bnx, brh, bzh, bnh):
        """Set every parameter from the course's pieces: W?x (H, I), W?h (H, H), b?? (H)."""
        values = dict(zip(COURSE_ORDER, (Wrx, Wzx, Wnx, Wrh, Wzh, Wnh, brx, bzx, bnx, brh, bzh, bnh)))
        for alias, value in values.items():                     # check all before changing any
            expected = getattr(self, alias).shape
            if np.shape(value) != expected:
                raise ValueError(f"GRUCell.init_weights: {alias} has shape {np.shape(value)}, expected {expected}")
        for alias, value in values.items():
            setattr(self, alias, value)

    def forward(self, x, state=None, *, h_prev_t=None):
        """One step: returns h' (N, H) or (H,). ``state`` is h_{t-1}; ``h_prev_t=`` is the course's name for it."""
        if h_prev_t is not None:
            if state is not None:
                raise _both_names("forward", "state", "h_prev_t")
            state = h_prev_t
        x, (h,), batched, _ = self._prepare(x, state)
        p, H = self.params, self.hidden_size
        b_ih = p["bias_ih"] if self.bias else 0.0
        b_hh = p["bias_hh"] if self.bias else 0.0
        # BEGIN SOLUTION
        gx = x @ p["weight_ih"].T + b_ih                          # N,3H  input terms of r, z, n
        gh = h @ p["weight_hh"].T + b_hh                          # N,3H  recurrent terms of r, z, n
        rz = F.sigmoid(gx[:, :2 * H] + gh[:, :2 * H])             # N,2H  r and z in one call
        r, z = rz[:, :H], rz[:, H:]
        g_n = gh[:, 2 * H:]                                       # h W_hnᵀ + b_hn: cached, da_r needs it
        n = np.tanh(gx[:, 2 * H:] + r * g_n)
        h_t = n + z * (h - n)                                     # (1 − z) ⊙ n + z ⊙ h, one pass fewer
        # END SOLUTION
        return self._finish(Cache(x=x, hidden=h, r=r, z=z, n=n, g_n=g_n), (h_t,), batched)

    def backward(self, d_state=_MISSING, *, delta=_MISSING):
        """Given dL/dh' (``delta=`` in the course's name), accumulate gradients and return (dx, dh_prev)."""
        if delta is not _MISSING:
            if d_state is not _MISSING:
                raise _both_names("backward", "d_state", "delta")
            d_state = delta
        elif d_state is _MISSING:
            raise TypeError("GRUCell.backward: missing d_state, the gradient dL/dh' of this step's output "
                            "(the course calls it delta)")
        cache, (dh_t,) = self._prepare_backward(d_state)
        p, g = self.params, self.grads
        x, h, r, z, n = cache.x, cache.hidden, cache.r, cache.z, cache.n
        # BEGIN SOLUTION
        # Backward, given dh' (N, H); let g_n = h W_hnᵀ + b_hn (cached):
        #
        #     dn   = dh' ⊙ (1 − z)             dz = dh' ⊙ (h − n)           dh ← dh' ⊙ z
        #     da_n = dn ⊙ (1 − n²)             da_z = dz ⊙ z(1 − z)         da_r = da_n ⊙ g_n ⊙ r(1 − r)
        #     dg_n = da_n ⊙ r
        #     input rows   [da_r | da_z | da_n] = dA_x  (N, 3H):  dW_ih += dA_xᵀ x,  db_ih += Σ_N dA_x,  dx = dA_x W_ih
        #     hidden rows  [da_r | da_z | dg_n] = dA_h  (N, 3H):  dW_hh += dA_hᵀ h,  db_hh += Σ_N dA_h,  dh += dA_h W_hh
        dn = dh_t * (1.0 - z)                                     # dh'/dn = 1 - z
        dz = dh_t * (h - n)                                       # dh'/dz = h - n
        da_n = dn * F.tanh_grad(n)                                # dn/da_n = 1 - n²
        da_z = dz * F.sigmoid_grad(z)                             # dz/da_z = z(1 - z)
        dg_n = da_n * r                                           # da_n/dg_n = r
        da_r = da_n * cache.g_n * F.sigmoid_grad(r)               # da_n/dr = g_n;  dr/da_r = r(1 - r)
        dA_x = np.concatenate([da_r, da_z, da_n], axis=1)        # N,3H  d(x W_ihᵀ + b_ih)
        dA_h = np.concatenate([da_r, da_z, dg_n], axis=1)        # N,3H  d(h W_hhᵀ + b_hh)
        g["weight_ih"] += dA_x.T @ x
        g["weight_hh"] += dA_h.T @ h
        if self.bias:
            g["bias_ih"] += dA_x.sum(axis=0)
            g["bias_hh"] += dA_h.sum(axis=0)
        dx = dA_x @ p["weight_ih"]
        dh = dA_h @ p["weight_hh"] + dh_t * z                     # through the gates, and directly: dh'/dh = z
        # END SOLUTION
        return self._finish_backward(cache, dx, (dh,))

    # ----------------------------------------------------------------------------------------------
    # the fast path over a whole sequence (used by the sequence layer; see mytorch.nn.fast_path)
    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        """All T steps at once: returns ``(Y (T, N, H), h_T (N, H))``, what T calls of ``forward`` return.

        In step order k (time t = k, or T-1-k in reverse), gate by gate (g = r, z, n), with b_hn kept apart
        because r gates it:

            GX_g = X W_igᵀ + b_ig (+ b_hg for r, z)     one product per gate for all steps     (T, N, H) each
            GH_g = h_k W_hgᵀ                              per step, weights made contiguous once  (N, H) each
            r, z, n, h_{k+1} from GX_k and GH as in ``forward``, each written in place into its (T, N, H) array.
        """
        steps, X, (h0,), _ = begin_forward(self, X, state0, lengths, reverse)
        # BEGIN SOLUTION optional and not graded: the whole-sequence fast path (notebook 10 builds one); until it exists the layer runs your per-step forward
        T, N, H = steps.T, steps.N, self.hidden_size
        p, recording = self.params, is_recording()
        X2 = X.reshape(T * N, self.input_size)                     # TN,I  (a copy in reverse)
        buffers = Buffers(self)                                    # per-call arrays, reused from call to call
        GX = np.matmul(X2, gates_transposed(p["weight_ih"], 3), out=buffers.empty(3, T * N, H))
        GX = GX.reshape(3, T, N, H)                                # x W_igᵀ, gate-major
        b_hn = 0.0
        if self.bias:
            GX += p["bias_ih"].reshape(3, 1, 1, H)
            GX[:2] += p["bias_hh"][:2 * H].reshape(2, 1, 1, H)     # b_hr, b_hz add like b_ir, b_iz
            b_hn = p["bias_hh"][2 * H:3 * H]                            # stays inside r ⊙ (…)
        W_h = gates_transposed(p["weight_hh"], 3)                  # 3,H,H  W_hgᵀ
        S = buffers.empty(T + 1, N, H)                             # h_0 … h_T (step order)
        S[0] = h0
        RZ = buffers.empty(2, T, N, H)                             # r, z
        NN, GN = buffers.empty(T, N, H), buffers.empty(T, N, H)    # n, g_n = h W_hnᵀ + b_hn
        dz_factor = buffers.empty(T, N, H) if recording else None
        gh, one_minus, exp_scratch = buffers.empty(3, N, H), buffers.empty(N, H), buffers.empty(2, N, H)
        for k in range(T):
            np.matmul(S[k], W_h, out=gh)                           # h W_hgᵀ for the three gates
            rz = RZ[:, k]
            np.add(GX[:2, k], gh[:2], out=rz)
            F.sigmoid(rz, out=rz, scratch=exp_scratch)             # r, z = σ(a_r), σ(a_z)
            r, z, n, g_n = RZ[0, k], RZ[1, k], NN[k], GN[k]
            np.add(gh[2], b_hn, out=g_n)
            np.multiply(r, g_n, out=n)
            n += GX[2, k]
            np.tanh(n, out=n)                                      # n = tanh(a_n + r ⊙ g_n)
            h = S[k + 1]
            np.subtract(S[k], n, out=h)
            h *= z
            h += n                                                 # h' = n + z ⊙ (h − n)
            if recording:
                # Backward, given d = dL/dh_{k+1}; the factors of d are made here, while the step is in cache:
                #     da_n = d ⊙ (1 − z)(1 − n²)      da_z = d ⊙ (h − n) z(1 − z)
                #     da_r = da_n ⊙ g_n r(1 − r)       dg_n = da_n ⊙ r
                #     dh_k = da_r W_hr + da_z W_hz + dg_n W_hn + d ⊙ z
                np.subtract(1.0, z, out=one_minus)
                dz = dz_factor[k]
                np.subtract(S[k], n, out=dz)
                dz *= z
                dz *= one_minus                                    # (h − n) z(1 − z)
                np.multiply(n, n, out=n)
                np.subtract(1.0, n, out=n)
                n *= one_minus                                     # (1 − z)(1 − n²), over n
                np.subtract(1.0, r, out=one_minus)
                g_n *= r
                g_n *= one_minus                                   # g_n r(1 − r), over g_n
            steps.keep_state(h, S[k], k)
        Y, h_T = steps.outputs(S), S[T].copy()
        if recording:
            # past a sequence's end every da is 0 (the factors are masked) and dh_k = d (z is set to 1)
            self._record(SequenceRecord(steps=steps, X2=X2, S=S, r=RZ[0], dn_factor=steps.mask(NN),
                                        dz_factor=steps.mask(dz_factor), dr_factor=GN,
                                        h_factor=steps.pass_through(RZ[1]), buffers=buffers))
        else:
            buffers.give_back()
        return Y, h_T
        # END SOLUTION

    def sequence_backward(self, dY, d_state_T):
        """Backward of ``sequence_forward``: returns ``(dX (T, N, I), dh_0 (N, H))`` and adds to ``self.grads``
        what T calls of ``backward`` add. Per step only one recurrent product and a few in-place products run;
        the input gradient and every weight gradient are one or two products over all steps."""
        record, steps, dY, (carry,) = begin_backward(self, dY, d_state_T)
        # BEGIN SOLUTION optional and not graded: the backward of your sequence_forward; until it exists the layer runs your per-step backward
        T, N, H = steps.T, steps.N, self.hidden_size
        p, g = self.params, self.grads
        buffers = Buffers(self)
        # d(h W_hgᵀ + b_hg) = [da_r | da_z | dg_n] step-major, the gates side by side as weight_hh's rows are
        # stacked: each step's dh_k is ONE product with W_hh, and grad weight_hh one product over all steps
        DH = buffers.empty(T, N, 3 * H)
        dh_gates = DH.reshape(T, N, 3, H).transpose(0, 2, 1, 3)   # T,3,N,H  (a view)
        DN = buffers.empty(T, N, H)                                # da_n = d(x W_inᵀ + b_in)
        d = buffers.empty(N, H)
        for k in reversed(range(T)):
            np.add(dY[k], carry, out=d)                            # dL/dh_{k+1}: from the output and from step k+1
            da_r, da_z, dg_n = dh_gates[k]
            da_n = DN[k]
            np.multiply(d, record.dn_factor[k], out=da_n)
            np.multiply(d, record.dz_factor[k], out=da_z)
            np.multiply(da_n, record.dr_factor[k], out=da_r)
            np.multiply(da_n, record.r[k], out=dg_n)
            np.matmul(DH[k], p["weight_hh"], out=carry)            # through the gates: da_r W_hr + da_z W_hz + dg_n W_hn
            d *= record.h_factor[k]
            carry += d                                             # and directly: dh'/dh = z
        TN = T * N
        DH2, DN2, h_prev = DH.reshape(TN, 3 * H), DN.reshape(TN, H), record.S[:-1].reshape(TN, H)
        g["weight_hh"] += DH2.T @ h_prev
        g["weight_ih"][:2 * H] += DH2[:, :2 * H].T @ record.X2    # d(x W_igᵀ) = da_r, da_z, da_n
        g["weight_ih"][2 * H:] += DN2.T @ record.X2
        if self.bias:
            sums = DH2.sum(axis=0)                                 # da_r, da_z, dg_n
            g["bias_hh"] += sums
            g["bias_ih"][:2 * H] += sums[:2 * H]
            g["bias_ih"][2 * H:] += DN2.sum(axis=0)
        dX = DH2[:, :2 * H] @ p["weight_ih"][:2 * H]
        dX += DN2 @ p["weight_ih"][2 * H:]
        record.buffers.give_back()
        buffers.give_back()
        return steps.order(dX.reshape(T, N, self.input_size)), carry
        # END SOLUTION


for _alias in COURSE_ORDER:
    setattr(GRUCell, _alias, _param_view(_alias))
    setattr(GRUCell, "d" + _alias, _grad_view(_alias))
del _alias

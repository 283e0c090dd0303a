"""TensorFlow's GRU block cell (tf GRUBlockCell and its ops GRUBlockCell / GRUBlockCellGrad), row-major.

Parameters: w_ru (I+H, 2H) with columns [r | u], w_c (I+H, H), b_ru (2H), b_c (H). With [a, b] the
concatenation along features:

    r̄, ū = [x, h] w_ru + b_ru              r = σ(r̄), u = σ(ū)             (N, H) each
    c̄    = [x, r ⊙ h] w_c + b_c             c = tanh(c̄)                    reset applied BEFORE the matmul
    h'   = u ⊙ h + (1 − u) ⊙ c                                              u weights the OLD state

Unlike PyTorch's GRU, the reset gate multiplies h before it meets the weights, and there is one bias per
gate. ``gru_block_cell_grad`` returns what TensorFlow's GRUBlockCellGrad op returns; the weight and bias
gradients are computed by the cell (TensorFlow does it in its Python wrapper). TensorFlow's documentation of
that op has seven errata against its kernel; the assignment and the notebook show each one.
"""
import numpy as np

from mytorch import functional as F
from mytorch.grad_mode import is_recording
from mytorch.nn.cell import Cache, RecurrentCell
from mytorch.nn.fast_path import Buffers, SequenceRecord, begin_backward, begin_forward, transposed
from mytorch.nn.init import constant, glorot_uniform


def _check_op(op, x, h_prev, w_ru, w_c, b_ru, b_c, **more):
    """The op's shape contract: x (N, I), h_prev (N, H), w_ru (I+H, 2H), w_c (I+H, H), b_ru (2H), b_c (H)."""
    arrays = dict(x=x, h_prev=h_prev, w_ru=w_ru, w_c=w_c, b_ru=b_ru, b_c=b_c, **more)
    for name, a in arrays.items():
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
            raise TypeError(f"{op}: {name} must be a floating-point ndarray, got {type(a).__name__}"
                            f"{'' if not isinstance(a, np.ndarray) else ' of dtype ' + str(a.dtype)}")
    if x.ndim != 2 or h_prev.ndim != 2:
        raise ValueError(f"{op}: x and h_prev must be 2-D (N, I) and (N, H), got {x.shape} and {h_prev.shape}")
    (N, I), H = x.shape, h_prev.shape[1]
    expected = dict(x=(N, I), h_prev=(N, H), w_ru=(I + H, 2 * H), w_c=(I + H, H), b_ru=(2 * H,), b_c=(H,),
                    r=(N, H), u=(N, H), c=(N, H), d_h=(N, H))
    for name, a in arrays.items():
        if a.shape != expected[name]:
            raise ValueError(f"{op}: {name} has shape {a.shape}, expected {expected[name]}")


def gru_block_cell(x, h_prev, w_ru, w_c, b_ru, b_c):
    """TensorFlow's GRUBlockCell op: one step forward. Returns ``(r, u, c, h)``, each (N, H)."""
    _check_op("gru_block_cell", x, h_prev, w_ru, w_c, b_ru, b_c)
    H = h_prev.shape[1]
    # BEGIN SOLUTION
    r_u_bar = np.concatenate([x, h_prev], axis=1) @ w_ru + b_ru       # N,2H
    r = F.sigmoid(r_u_bar[:, :H])
    u = F.sigmoid(r_u_bar[:, H:])
    c_bar = np.concatenate([x, r * h_prev], axis=1) @ w_c + b_c       # N,H   reset before the matmul
    c = np.tanh(c_bar)
    h = u * h_prev + (1.0 - u) * c
    # END SOLUTION
    return r, u, c, h


def gru_block_cell_grad(x, h_prev, w_ru, w_c, b_ru, b_c, r, u, c, d_h):
    """TensorFlow's GRUBlockCellGrad op. Returns ``(d_x, d_h_prev, d_c_bar, d_r_bar_u_bar)``.

    Shapes: d_x (N, I), d_h_prev (N, H), d_c_bar (N, H), d_r_bar_u_bar (N, 2H). The weight and bias
    gradients are not outputs of the op (TensorFlow computes them in its Python wrapper; so does
    ``GRUBlockCell.backward``).
    """
    _check_op("gru_block_cell_grad", x, h_prev, w_ru, w_c, b_ru, b_c, r=r, u=u, c=c, d_h=d_h)
    I = x.shape[1]
    # BEGIN SOLUTION
    # The backward, as TensorFlow's kernel computes it (gru_ops.h):
    #
    #     d_c̄  = d_h ⊙ (1 − u) ⊙ (1 − c²)                 d_ū = d_h ⊙ (h − c) ⊙ u(1 − u)
    #     [d_x₂ | d_hr] = d_c̄ w_cᵀ                          d_r̄ = d_hr ⊙ h ⊙ r(1 − r)
    #     [d_x₁ | d_h₁] = [d_r̄ | d_ū] w_ruᵀ
    #     d_x = d_x₁ + d_x₂                                 d_h_prev = d_h₁ + d_hr ⊙ r + d_h ⊙ u
    #     d_w_ru = [x, h]ᵀ [d_r̄ | d_ū]     d_w_c = [x, r ⊙ h]ᵀ d_c̄     d_b_ru, d_b_c = column sums
    d_c_bar = d_h * (1.0 - u) * F.tanh_grad(c)                        # dh/dc = 1 - u;  dc/dc̄ = 1 - c²
    d_u_bar = d_h * (h_prev - c) * F.sigmoid_grad(u)                  # dh/du = h_prev - c;  du/dū = u(1 - u)
    d_x_2_hr = d_c_bar @ w_c.T                                        # N,I+H  = [d_x₂ | d_hr]
    d_hr = d_x_2_hr[:, I:]                                            # dL/d(r ⊙ h_prev)
    d_r_bar = d_hr * h_prev * F.sigmoid_grad(r)                       # d(r⊙h)/dr = h_prev;  dr/dr̄ = r(1 - r)
    d_r_bar_u_bar = np.concatenate([d_r_bar, d_u_bar], axis=1)        # N,2H
    d_x_1_h_1 = d_r_bar_u_bar @ w_ru.T                                # N,I+H  = [d_x₁ | d_h₁]
    d_x = d_x_1_h_1[:, :I] + d_x_2_hr[:, :I]
    d_h_prev = d_x_1_h_1[:, I:] + d_hr * r + d_h * u                  # via the gates, via r ⊙ h, and directly
    # END SOLUTION
    return d_x, d_h_prev, d_c_bar, d_r_bar_u_bar


class GRUBlockCell(RecurrentCell):
    """TensorFlow's GRU block cell (see the module docstring for the equations and TF's errata).

    Args:
        input_size (I), hidden_size (H): feature sizes (TensorFlow calls H ``cell_size``).
        dtype: parameter and computation dtype (default float64).
        rng: a numpy Generator or seed. As in TensorFlow's GRUBlockCell: w_ru and w_c Glorot-uniform,
            b_ru = 1.0 (gates start mostly open), b_c = 0.0.

    Attributes:
        w_ru (I+H, 2H) columns [r | u], w_c (I+H, H), b_ru (2H), b_c (H).
        After forward: x, hidden (= h_prev), r, u, c (N, ·), or 1-D for 1-D input.

    Shapes: x (N, I) or (I,); state h (N, H) or (H,); returns h' of the same batch shape.
    """

    exposed = ("x", "hidden", "r", "u", "c")

    def __init__(self, input_size, hidden_size, dtype=np.float64, rng=None):
        super().__init__(input_size, hidden_size, dtype, rng)
        I, H = input_size, hidden_size
        self._add_param("w_ru", glorot_uniform(self.rng, (I + H, 2 * H)))
        self._add_param("w_c", glorot_uniform(self.rng, (I + H, H)))
        self._add_param("b_ru", constant(1.0)(self.rng, (2 * H,)))
        self._add_param("b_c", constant(0.0)(self.rng, (H,)))

    def forward(self, x, state=None):
        """One step: returns h' (N, H) or (H,)."""
        x, (h,), batched, _ = self._prepare(x, state)
        r, u, c, h_t = gru_block_cell(x, h, **self.params)
        return self._finish(Cache(x=x, hidden=h, r=r, u=u, c=c), (h_t,), batched)

    def backward(self, d_state):
        """Given dL/dh', accumulate gradients of w_ru, w_c, b_ru, b_c and return (dx, dh_prev)."""
        cache, (dh_t,) = self._prepare_backward(d_state)
        x, h, r = cache.x, cache.hidden, cache.r
        d_x, d_h_prev, d_c_bar, d_r_bar_u_bar = gru_block_cell_grad(
            x, h, **self.params, r=r, u=cache.u, c=cache.c, d_h=dh_t)
        g = self.grads
        # BEGIN SOLUTION
        # the concatenations are rebuilt rather than cached: one (N, I+H) copy each, cheaper than keeping them
        g["w_ru"] += np.concatenate([x, h], axis=1).T @ d_r_bar_u_bar       # (I+H,N)@(N,2H)
        g["w_c"] += np.concatenate([x, r * h], axis=1).T @ d_c_bar          # (I+H,N)@(N,H)
        g["b_ru"] += d_r_bar_u_bar.sum(axis=0)
        g["b_c"] += d_c_bar.sum(axis=0)
        # END SOLUTION
        return self._finish_backward(cache, d_x, (d_h_prev,))

    # ----------------------------------------------------------------------------------------------
    # the fast path over a whole sequence (used by the sequence layer; see mytorch.nn.fast_path)
    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        """All T steps at once: returns ``(Y (T, N, H), h_T (N, H))``, what T calls of ``forward`` return.

        With w_ru = [w_ru_x; w_ru_h] and w_c = [w_c_x; w_c_h] split by rows (x's I rows, then h's H rows) and
        each gate's columns (r, u, c) taken apart, in step order k (time t = k, or T-1-k in reverse):

            GX_g = X w_g_x + b_g                  one product per gate for all steps      (T, N, H) each
            r, u = σ(GX_r,u + h_k w_r,u_h)        c = tanh(GX_c + (r ⊙ h_k) w_c_h)
            h_{k+1} = c + u ⊙ (h_k − c)           three products per step, in place
        """
        steps, X, (h0,), _ = begin_forward(self, X, state0, lengths, reverse)
        # BEGIN SOLUTION optional and not graded: the whole-sequence fast path (notebook 10 builds one); until it exists the layer runs your per-step forward
        T, N, H, I = steps.T, steps.N, self.hidden_size, self.input_size
        p, recording = self.params, is_recording()
        W_x = np.stack([p["w_ru"][:I, :H], p["w_ru"][:I, H:], p["w_c"][:I]])           # 3,I,H  x rows of r, u, c
        W_ru_h = np.stack([p["w_ru"][I:, :H], p["w_ru"][I:, H:]])                      # 2,H,H  h rows of r, u
        w_c_h = p["w_c"][I:]                                                           # H,H
        X2 = X.reshape(T * N, I)                                   # TN,I  (a copy in reverse)
        buffers = Buffers(self)                                    # per-call arrays, reused from call to call
        GX = np.matmul(X2, W_x, out=buffers.empty(3, T * N, H)).reshape(3, T, N, H)
        GX += np.concatenate([p["b_ru"], p["b_c"]]).reshape(3, 1, 1, H)
        S = buffers.empty(T + 1, N, H)                             # h_0 … h_T (step order)
        S[0] = h0
        RU = buffers.empty(2, T, N, H)                             # r, u
        RH, C = buffers.empty(T, N, H), buffers.empty(T, N, H)     # r ⊙ h_k, c
        du_factor, dr_factor = (buffers.empty(T, N, H), buffers.empty(T, N, H)) if recording else (None, None)
        gh, one_minus = buffers.empty(2, N, H), buffers.empty(N, H)
        for k in range(T):
            ru = RU[:, k]
            np.add(GX[:2, k], np.matmul(S[k], W_ru_h, out=gh), out=ru)
            F.sigmoid(ru, out=ru, scratch=gh)                      # (gh is free again)
            r, u, c = RU[0, k], RU[1, k], C[k]
            np.multiply(r, S[k], out=RH[k])                        # reset before the product
            np.matmul(RH[k], w_c_h, out=c)
            c += GX[2, k]
            np.tanh(c, out=c)
            h = S[k + 1]
            np.subtract(S[k], c, out=h)
            h *= u
            h += c                                                 # h' = u ⊙ h + (1 − u) ⊙ c
            if recording:
                # Backward, given d = dL/dh_{k+1}, with the kernel's names; the factors of d made here:
                #     d_c̄ = d ⊙ (1 − u)(1 − c²)          d_ū = d ⊙ (h − c) u(1 − u)
                #     d_hr = d_c̄ w_c_hᵀ                   d_r̄ = d_hr ⊙ h r(1 − r)
                #     dh_k = d_r̄ w_r_hᵀ + d_ū w_u_hᵀ + d_hr ⊙ r + d ⊙ u
                np.subtract(1.0, u, out=one_minus)
                du = du_factor[k]
                np.subtract(S[k], c, out=du)
                du *= u
                du *= one_minus                                    # (h − c) u(1 − u)
                np.multiply(c, c, out=c)
                np.subtract(1.0, c, out=c)
                c *= one_minus                                     # (1 − u)(1 − c²), over c
                dr = dr_factor[k]
                np.subtract(1.0, r, out=dr)
                dr *= r
                dr *= S[k]                                         # h r(1 − r)
            steps.keep_state(h, S[k], k)
        Y, h_T = steps.outputs(S), S[T].copy()
        if recording:
            # past a sequence's end d_c̄ = d_ū = 0 (masked factors) and dh_k = d (u is set to 1)
            self._record(SequenceRecord(steps=steps, X2=X2, S=S, r=RU[0], RH=RH,
                                        dc_factor=steps.mask(C), du_factor=steps.mask(du_factor),
                                        dr_factor=dr_factor, h_factor=steps.pass_through(RU[1]), buffers=buffers))
        else:
            buffers.give_back()
        return Y, h_T
        # END SOLUTION

    def sequence_backward(self, dY, d_state_T):
        """Backward of ``sequence_forward``: returns ``(dX (T, N, I), dh_0 (N, H))`` and adds to ``self.grads``
        what T calls of ``backward`` add. Per step two products and a few in-place products run; the input
        gradient and every weight gradient are one product per weight over all steps."""
        record, steps, dY, (carry,) = begin_backward(self, dY, d_state_T)
        # BEGIN SOLUTION optional and not graded: the backward of your sequence_forward; until it exists the layer runs your per-step backward
        T, N, H, I = steps.T, steps.N, self.hidden_size, self.input_size
        p, g = self.params, self.grads
        w_ru_h, w_c_hT = p["w_ru"][I:], transposed(p["w_c"][I:])  # H,2H and H,H
        buffers = Buffers(self)
        # [d_r̄ | d_ū] step-major, side by side as w_ru's columns are: each step's path through r and u is ONE
        # product with w_ru_hᵀ, and w_ru's gradient one product over all steps
        D_ru = buffers.empty(T, N, 2 * H)
        ru_blocks = D_ru.reshape(T, N, 2, H).transpose(0, 2, 1, 3)                     # T,2,N,H  (a view)
        D_c = buffers.empty(T, N, H)                               # d_c̄
        d, d_hr = buffers.empty(N, H), buffers.empty(N, H)
        for k in reversed(range(T)):
            np.add(dY[k], carry, out=d)                            # dL/dh_{k+1}
            (d_r_bar, d_u_bar), d_c_bar = ru_blocks[k], D_c[k]
            np.multiply(d, record.dc_factor[k], out=d_c_bar)
            np.multiply(d, record.du_factor[k], out=d_u_bar)
            np.matmul(d_c_bar, w_c_hT, out=d_hr)
            np.multiply(d_hr, record.dr_factor[k], out=d_r_bar)
            np.matmul(D_ru[k], w_ru_h.T, out=carry)                # through the gates: d_r̄ w_r_hᵀ + d_ū w_u_hᵀ
            d_hr *= record.r[k]
            carry += d_hr                                          # through r ⊙ h
            d *= record.h_factor[k]
            carry += d                                             # and directly: dh'/dh = u
        TN = T * N
        D_ru2, D_c2 = D_ru.reshape(TN, 2 * H), D_c.reshape(TN, H)
        h_prev, rh = record.S[:-1].reshape(TN, H), record.RH.reshape(TN, H)
        g["w_ru"][:I] += record.X2.T @ D_ru2
        g["w_ru"][I:] += h_prev.T @ D_ru2
        g["w_c"][:I] += record.X2.T @ D_c2
        g["w_c"][I:] += rh.T @ D_c2
        g["b_ru"] += D_ru2.sum(axis=0)
        g["b_c"] += D_c2.sum(axis=0)
        dX = D_ru2 @ p["w_ru"][:I].T
        dX += D_c2 @ p["w_c"][:I].T
        record.buffers.give_back()
        buffers.give_back()
        return steps.order(dX.reshape(T, N, I)), carry
        # END SOLUTION

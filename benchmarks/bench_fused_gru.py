"""A hand-fused NumPy GRU, timed against mytorch's GRU (per-step layer and fast path) and torch.nn.GRU in one run.

    python benchmarks/bench_fused_gru.py [--repeats 7] [--dtype float32]

Everything the performance issue lists is done here: the input projection of all steps is one GEMM, so are
the three weight-gradient products and dX; every per-step buffer is preallocated for the whole sequence and
every elementwise update is in place. It is a benchmark peer, not part of mytorch (the cells keep the
readable per-step code students write). Before timing, its outputs and gradients are checked against
mytorch's GRU, so the times compare the same computation. mytorch's own fast path (GRUCell.sequence_forward /
sequence_backward) grew out of this file; it is timed here beside it. Every sample follows a pause (timing.py).
"""
import argparse

import numpy as np
from timing import median_seconds

from mytorch.functional import sigmoid
from mytorch.nn import GRU

try:
    import torch
except ImportError:
    torch = None

T, N, I, H = 100, 64, 128, 256          # the "large" configuration of bench_recurrent.py


class FusedGRU:
    """A one-layer GRU over (T, N, I), forward and backward, with PyTorch's equations and layout."""

    def __init__(self, params, dtype):
        self.W_ih, self.W_hh = params["weight_ih_l0"].astype(dtype), params["weight_hh_l0"].astype(dtype)
        self.b_ih, self.b_hh = params["bias_ih_l0"].astype(dtype), params["bias_hh_l0"].astype(dtype)
        self.GX = np.empty((T, N, 3 * H), dtype)      # x W_ihᵀ + b_ih for every step
        self.HS = np.empty((T + 1, N, H), dtype)      # h_0 … h_T
        self.RZ = np.empty((T, N, 2 * H), dtype)
        self.NN = np.empty((T, N, H), dtype)
        self.GN = np.empty((T, N, H), dtype)          # h W_hnᵀ + b_hn
        self.DGX = np.empty((T, N, 3 * H), dtype)     # dL/d(x W_ihᵀ + b_ih)
        self.DGH = np.empty((T, N, 3 * H), dtype)     # dL/d(h W_hhᵀ + b_hh)

    def forward(self, X):
        np.matmul(X.reshape(T * N, I), self.W_ih.T, out=self.GX.reshape(T * N, 3 * H))
        self.GX += self.b_ih
        self.HS[0] = 0
        for t in range(T):
            gh = self.HS[t] @ self.W_hh.T
            gh += self.b_hh
            a = self.GX[t, :, :2 * H]
            a += gh[:, :2 * H]
            self.RZ[t] = sigmoid(a)
            r, z = self.RZ[t, :, :H], self.RZ[t, :, H:]
            self.GN[t] = gh[:, 2 * H:]
            n = self.NN[t]
            np.multiply(r, self.GN[t], out=n)
            n += self.GX[t, :, 2 * H:]
            np.tanh(n, out=n)
            h = self.HS[t + 1]
            np.subtract(self.HS[t], n, out=h)
            h *= z
            h += n
        return self.HS[1:]

    def backward(self, X, dY):
        dh = np.zeros((N, H), dY.dtype)
        for t in reversed(range(T)):
            dh += dY[t]
            r, z, n, h = self.RZ[t, :, :H], self.RZ[t, :, H:], self.NN[t], self.HS[t]
            da_n = self.DGX[t, :, 2 * H:]
            np.multiply(n, n, out=da_n)
            np.subtract(1, da_n, out=da_n)
            da_n *= dh
            da_n *= 1 - z
            da_z = self.DGX[t, :, H:2 * H]
            np.subtract(h, n, out=da_z)
            da_z *= dh
            da_z *= z * (1 - z)
            da_r = self.DGX[t, :, :H]
            np.multiply(da_n, self.GN[t], out=da_r)
            da_r *= r * (1 - r)
            self.DGH[t, :, :2 * H] = self.DGX[t, :, :2 * H]
            np.multiply(da_n, r, out=self.DGH[t, :, 2 * H:])
            through_gates = self.DGH[t] @ self.W_hh
            dh *= z
            dh += through_gates
        dgx, dgh = self.DGX.reshape(T * N, 3 * H), self.DGH.reshape(T * N, 3 * H)
        grads = {"weight_ih_l0": dgx.T @ X.reshape(T * N, I), "weight_hh_l0": dgh.T @ self.HS[:-1].reshape(T * N, H),
                 "bias_ih_l0": dgx.sum(axis=0), "bias_hh_l0": dgh.sum(axis=0)}
        return (dgx @ self.W_ih).reshape(T, N, I), grads


def check_against_mytorch():
    """float64: the fused GRU computes what mytorch's GRU computes."""
    rng = np.random.default_rng(0)
    layer = GRU(I, H, rng=1)
    X, dY = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, H))
    fused = FusedGRU(layer.params, np.float64)
    Y, _ = layer.forward(X)
    dX, _ = layer.backward(dY)
    assert np.allclose(fused.forward(X), Y, rtol=1e-10, atol=1e-12)
    dX_fused, grads = fused.backward(X, dY)
    assert np.allclose(dX_fused, dX, rtol=1e-9, atol=1e-11)
    for name, g in grads.items():
        assert np.allclose(g, layer.grads[name], rtol=1e-9, atol=1e-10), name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = parser.parse_args()
    check_against_mytorch()
    dtype = np.dtype(args.dtype).type
    rng = np.random.default_rng(2)
    X, dY = rng.standard_normal((T, N, I)).astype(dtype), rng.standard_normal((T, N, H)).astype(dtype)
    layer = GRU(I, H, dtype=dtype, rng=3)
    fused = FusedGRU(layer.params, dtype)
    cell, h0 = layer.cells[0], np.zeros((N, H), dtype)
    times = {"mytorch GRU": median_seconds(lambda: (layer.forward(X), layer.backward(dY)), args.repeats),
             "GRUCell fast path": median_seconds(lambda: (cell.sequence_forward(X, h0), cell.sequence_backward(dY, None)),
                                                 args.repeats),
             "fused NumPy GRU": median_seconds(lambda: (fused.forward(X), fused.backward(X, dY)), args.repeats)}
    if torch is not None:
        module = torch.nn.GRU(I, H).to(torch.float32 if dtype == np.float32 else torch.float64)
        Xt = torch.tensor(X, requires_grad=True)
        dYt = torch.tensor(dY)
        times["torch.nn.GRU"] = median_seconds(lambda: module(Xt)[0].backward(dYt), args.repeats)
    flops = 3 * 2 * T * N * (I + H) * 3 * H
    print(f"GRU, T={T} N={N} I={I} H={H}, {args.dtype}, forward + backward (the fused version matches mytorch)")
    for name, seconds in times.items():
        ratio = f"  {seconds / times['torch.nn.GRU']:.2f} x torch.nn.GRU" if "torch.nn.GRU" in times else ""
        print(f"  {name:18s} {seconds * 1e3:7.1f} ms  {flops / seconds / 1e9:6.1f} GFLOP/s{ratio}")


if __name__ == "__main__":
    main()

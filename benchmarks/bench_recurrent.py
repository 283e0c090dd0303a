"""Forward + backward of mytorch's recurrent cells over a whole sequence, against PyTorch and naive NumPy.

    python benchmarks/bench_recurrent.py [--configs small large] [--dtypes float32 float64]
        [--cells RNN GRU GRUBlock GMU TGRU LSTM] [--bidirectional] [--rounds 7] [--pause 0.4]
        [--threads N] [--clock wall|cpu] [--markdown]

For each configuration, dtype and cell (one layer; both directions with ``--bidirectional``) it times, in
interleaved rounds with a pause before every sample (see timing.py):

- ``fast``: the cell's fast path, ``sequence_forward`` then ``sequence_backward`` per direction;
- ``layer``: mytorch's sequence layer (it uses the fast path when it is wired in, else the per-step loop);
- ``per-step``: what students write, one cell object, ``forward`` T times then ``backward`` T times;
- the peers of peers.py: torch.nn.RNN/GRU/LSTM, a torch autograd loop over the cell, naive NumPy, and the
  fast path's matrix products alone (its NumPy ceiling).

It reports the fast path's time, every ratio fast/peer (below 1: the fast path is faster; medians of the
per-round ratios), its GFLOP/s and its fraction of this machine's NumPy GEMM peak measured in the same run.
A column is "—" where the peer does not exist (no torch.nn module for the cell, torch not installed, a cell
without a fast path, a layer without ``bidirectional``).
"""
import argparse
import sys

from timing import pin_threads_from_argv

THREADS = pin_threads_from_argv()                                  # before NumPy is imported

import numpy as np  # noqa: E402
import peers  # noqa: E402
from timing import paired_ratio, rounds  # noqa: E402

from mytorch import nn  # noqa: E402

CONFIGS = {"small": dict(T=50, N=8, I=32, H=64), "large": dict(T=100, N=64, I=128, H=256)}
CELLS = {"RNN": ("RNNCell", "RNN"), "GRU": ("GRUCell", "GRU"), "GRUBlock": ("GRUBlockCell", "GRUBlock"),
         "GMU": ("GMUCell", "GMU"), "TGRU": ("TGRUCell", "TGRU"), "LSTM": ("LSTMCell", "LSTM")}
PEERS = ("layer", "per-step", "torch.nn", "torch loop", "naive numpy", "products")


def _cell_class(cell):
    try:
        return getattr(nn, CELLS[cell][0])
    except AttributeError:                                         # e.g. no LSTMCell in this version
        return None


def _data(cell, T, N, I, H, dtype, directions):
    rng = np.random.default_rng(1)
    return (rng.standard_normal((T, N, I)).astype(dtype),
            rng.standard_normal((T, N, H * directions)).astype(dtype))


def _cells_and_data(cell, T, N, I, H, dtype, bidirectional):
    """One cell object per direction and the data (X, dY), or None when this version has no such cell."""
    cls = _cell_class(cell)
    if cls is None:
        return None
    directions = 2 if bidirectional else 1
    return ([cls(I, H, dtype=dtype, rng=d) for d in range(directions)],) + _data(cell, T, N, I, H, dtype, directions)


def _zero_state(cell_object, N):
    parts = tuple(np.zeros((N, w), cell_object.dtype) for w in cell_object.state_widths)
    return parts[0] if len(parts) == 1 else parts


def fast(cell, T, N, I, H, dtype, bidirectional=False):
    """The fast path, one cell per direction; outputs concatenated on features as a bidirectional layer does."""
    made = _cells_and_data(cell, T, N, I, H, dtype, bidirectional)
    if made is None:
        return None
    cells, X, dY = made
    directions = len(cells)
    state0 = [_zero_state(c, N) for c in cells]
    try:
        cells[0].sequence_forward(X[:1], state0[0])
        cells[0].clear_tape()
    except NotImplementedError:
        return None

    def run():
        Y = [c.sequence_forward(X, s, None, d == 1)[0] for d, (c, s) in enumerate(zip(cells, state0))]
        if directions == 2:
            np.concatenate(Y, axis=2)
        dX = [c.sequence_backward(dY[:, :, d * H:(d + 1) * H], None)[0] for d, c in enumerate(cells)]
        sum(dX)
    return run


def layer(cell, T, N, I, H, dtype, bidirectional=False):
    """mytorch's sequence layer (RNN, GRU, …) over one layer."""
    cls = getattr(nn, CELLS[cell][1], None)
    if cls is None:
        return None
    try:
        module = cls(I, H, dtype=dtype, rng=0, **({"bidirectional": True} if bidirectional else {}))
    except TypeError:                                              # a layer without bidirectional
        return None
    X, dY = _data(cell, T, N, I, H, dtype, 2 if bidirectional else 1)

    def run():
        module.forward(X)
        module.backward(dY)
    return run


def per_step(cell, T, N, I, H, dtype, bidirectional=False):
    """The students' path: one cell object per direction, T forwards then T backwards (BPTT by hand)."""
    made = _cells_and_data(cell, T, N, I, H, dtype, bidirectional)
    if made is None:
        return None
    cells, X, dY = made
    two = len(cells[0].state_names) == 2

    def run():
        for d, one in enumerate(cells):
            order = range(T - 1, -1, -1) if d else range(T)
            state = None
            for t in order:
                state = one.forward(X[t], state)
            grad, dy = None, dY[:, :, d * H:(d + 1) * H]
            for t in reversed(order):
                if two:
                    grad = (dy[t] if grad is None else grad[0] + dy[t], None if grad is None else grad[1])
                else:
                    grad = dy[t] if grad is None else grad + dy[t]
                _, grad = one.backward(grad)
    return run


def gemm_peak(dtype, count, pause, clock):
    """The best GFLOP/s NumPy reaches here on large products (the machine's practical peak), median of rounds."""
    best = 0.0
    for m, k, n in ((2048, 2048, 2048), (6400, 384, 768), (4096, 1024, 1024)):
        a, b = np.ones((m, k), dtype), np.ones((k, n), dtype)
        times = rounds({"gemm": lambda: a @ b}, count, pause, clock)["gemm"]
        best = max(best, 2 * m * k * n / sorted(times)[len(times) // 2] / 1e9)
    return best


def measure(cells, configs, dtypes, bidirectional, count, pause, clock):
    rows, peaks = [], {dtype: gemm_peak(dtype, count, pause, clock) for dtype in dtypes}
    for config_name in configs:
        c = CONFIGS[config_name]
        size = (c["T"], c["N"], c["I"], c["H"])
        for dtype in dtypes:
            for cell in cells:
                for both in ([False, True] if bidirectional else [False]):
                    makers = {"fast": fast, "layer": layer, "per-step": per_step, "torch.nn": peers.torch_nn,
                              "torch loop": peers.torch_loop, "naive numpy": peers.naive,
                              "products": peers.products}
                    runs = {name: make(cell, *size, dtype, both) for name, make in makers.items()}
                    runs = {name: run for name, run in runs.items() if run is not None}
                    if "fast" not in runs:
                        print(f"skipping {config_name} {cell}: no fast path in this version", file=sys.stderr)
                        continue
                    times = rounds(runs, count, pause, clock)
                    fast_seconds = sorted(times["fast"])[len(times["fast"]) // 2]
                    spread = (max(times["fast"]) - min(times["fast"])) / 2 / fast_seconds
                    gflops = peers.total_flops(cell, *size, 2 if both else 1) / fast_seconds / 1e9
                    rows.append(dict(config=config_name, dtype=np.dtype(dtype).name, cell=cell,
                                     directions=2 if both else 1, ms=fast_seconds * 1e3, spread=spread, gflops=gflops,
                                     peak=gflops / peaks[dtype],
                                     ratios={p: paired_ratio(times, "fast", p) if p in times else None
                                             for p in PEERS}))
                    print(f"measured {config_name} {rows[-1]['dtype']} {cell} x{rows[-1]['directions']}",
                          file=sys.stderr, flush=True)
    return rows, peaks


def table(rows, peaks, markdown=False):
    head = ["config", "dtype", "cell", "dirs", "fast ms", "± rounds", "layer/fast", "per-step/fast", "fast/torch.nn",
            "fast/torch loop", "fast/naive", "fast/products", "GFLOP/s", "% GEMM peak"]
    fmt = (lambda cells: "| " + " | ".join(cells) + " |") if markdown else \
        (lambda cells: "  ".join(f"{x:>13}" for x in cells))
    lines = [fmt(head)] + (["|" + "---|" * len(head)] if markdown else [])
    for r in rows:
        q = r["ratios"]
        # layer and per-step are shown as their time over the fast path's (the inverse of the stored ratio)
        shown = ["—" if q["layer"] is None else f"{1 / q['layer']:.2f}",
                 "—" if q["per-step"] is None else f"{1 / q['per-step']:.2f}"]
        shown += ["—" if q[p] is None else f"{q[p]:.2f}" for p in ("torch.nn", "torch loop", "naive numpy", "products")]
        lines.append(fmt([r["config"], r["dtype"], r["cell"], str(r["directions"]), f"{r['ms']:.1f}",
                          f"±{100 * r['spread']:.0f}%", *shown,
                          f"{r['gflops']:.1f}", f"{100 * r['peak']:.0f}%"]))
    peak_text = ", ".join(f"{np.dtype(d).name} {p:.0f} GFLOP/s" for d, p in peaks.items())
    lines.append(f"\nNumPy GEMM peak measured in this run: {peak_text}. fast/peer: the fast path's time over the "
                 "peer's (below 1: faster), the median of per-round ratios; layer/fast and per-step/fast: "
                 "their time over the fast path's; fast/products: over the same matrix products alone, the NumPy ceiling "
                 "(1.0 would mean the elementwise work cost nothing); ± rounds: half the range of the fast path's rounds, over "
                 "their median.")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=["small", "large"], choices=sorted(CONFIGS))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    parser.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    parser.add_argument("--bidirectional", action="store_true", help="also time both directions")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pause", type=float, default=0.4, help="seconds of quiet before every sample")
    parser.add_argument("--threads", type=int, help="threads for OpenBLAS and torch (read before NumPy loads)")
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    if peers.torch is not None:
        if args.threads:
            peers.torch.set_num_threads(args.threads)
        print(f"torch {peers.torch.__version__}, {peers.torch.get_num_threads()} threads", file=sys.stderr)
    rows, peaks = measure(args.cells, args.configs, [np.dtype(d).type for d in args.dtypes], args.bidirectional,
                          args.rounds, args.pause, args.clock)
    print(table(rows, peaks, args.markdown))


if __name__ == "__main__":
    main()

"""Forward + backward of mytorch's sequence layers against PyTorch and a naive NumPy version, in one run.

    python benchmarks/bench_recurrent.py [--configs small large] [--dtypes float32 float64] [--repeats 7]
                                          [--cells RNN GRU GRUBlock GMU TGRU] [--markdown]

For each cell, dtype and configuration it times one forward and one backward over the whole sequence
(medians of repeated runs, after a warm-up) for: mytorch's layer (fast path), mytorch's per-step cell loop
(what students write: ``cell.forward`` T times then ``cell.backward`` T times), torch.nn.RNN/GRU where they
exist, a torch autograd loop over the cell, and a naive NumPy version (benchmarks/peers.py). It reports the
ratios mytorch / peer, mytorch's GFLOP/s and its fraction of this machine's NumPy GEMM peak, measured in the
same run. Torch columns are left empty when torch is not installed.
"""
import argparse
import statistics
import sys
import time

import numpy as np

import peers
from mytorch import nn

CONFIGS = {"small": dict(T=50, N=8, I=32, H=64), "large": dict(T=100, N=64, I=128, H=256)}
LAYERS = {"RNN": nn.RNN, "GRU": nn.GRU, "GRUBlock": nn.GRUBlock, "GMU": nn.GMU, "TGRU": nn.TGRU}


def median_seconds(run, repeats):
    run()                                                    # warm-up: allocations, lazy init, caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gemm_peak(dtype, repeats=5):
    """The best GFLOP/s NumPy reaches here on large square-ish products (the machine's practical peak)."""
    best = 0.0
    for m, k, n in ((2048, 2048, 2048), (6400, 384, 768), (4096, 1024, 1024)):
        a, b = np.ones((m, k), dtype), np.ones((k, n), dtype)
        best = max(best, 2 * m * k * n / median_seconds(lambda: a @ b, repeats) / 1e9)
    return best


def mytorch_layer(cell, T, N, I, H, dtype):
    layer = LAYERS[cell](I, H, dtype=dtype, rng=0)
    rng = np.random.default_rng(1)
    X, dY = rng.standard_normal((T, N, I)).astype(dtype), rng.standard_normal((T, N, H)).astype(dtype)

    def run():
        layer.forward(X)
        layer.backward(dY)
    return run


def mytorch_steps(cell, T, N, I, H, dtype):
    """The per-step path: one cell object, T forwards then T backwards (BPTT by hand)."""
    layer = LAYERS[cell](I, H, dtype=dtype, rng=0)
    one = layer.cells[0]
    rng = np.random.default_rng(1)
    X, dY = rng.standard_normal((T, N, I)).astype(dtype), rng.standard_normal((T, N, H)).astype(dtype)
    two = len(one.state_names) == 2

    def run():
        state = None
        for t in range(T):
            state = one.forward(X[t], state)
        d = None
        for t in reversed(range(T)):
            if two:
                d = (dY[t] if d is None else d[0] + dY[t], None if d is None else d[1])
            else:
                d = dY[t] if d is None else d + dY[t]
            _, d = one.backward(d)
    return run


def measure(cells, configs, dtypes, repeats):
    rows = []
    peaks = {dtype: gemm_peak(dtype) for dtype in dtypes}
    for config_name in configs:
        c = CONFIGS[config_name]
        for dtype in dtypes:
            for cell in cells:
                times = {}
                for name, make in (("mytorch", mytorch_layer), ("per-step", mytorch_steps), ("torch.nn", peers.torch_nn),
                                   ("torch loop", peers.torch_loop), ("naive numpy", peers.naive)):
                    run = make(cell, c["T"], c["N"], c["I"], c["H"], dtype)
                    times[name] = median_seconds(run, repeats) if run is not None else None
                gflops = peers.total_flops(cell, c["T"], c["N"], c["I"], c["H"]) / times["mytorch"] / 1e9
                rows.append(dict(config=config_name, dtype=np.dtype(dtype).name, cell=cell, times=times, gflops=gflops,
                                 peak=gflops / peaks[dtype]))
    return rows, peaks


def ratio(rows_times, peer):
    return None if rows_times[peer] is None else rows_times["mytorch"] / rows_times[peer]


def table(rows, peaks, markdown=False):
    head = ["config", "dtype", "cell", "mytorch ms", "per-step/mytorch", "/torch.nn", "/torch loop", "/naive numpy",
            "GFLOP/s", "% GEMM peak"]
    lines = []
    fmt = (lambda cells: "| " + " | ".join(cells) + " |") if markdown else (lambda cells: "  ".join(f"{x:>14}" for x in cells))
    lines.append(fmt(head))
    if markdown:
        lines.append("|" + "---|" * len(head))
    for r in rows:
        t = r["times"]
        cells = [r["config"], r["dtype"], r["cell"], f"{t['mytorch'] * 1e3:.1f}", f"{t['per-step'] / t['mytorch']:.2f}"]
        cells += ["—" if ratio(t, p) is None else f"{ratio(t, p):.2f}" for p in ("torch.nn", "torch loop", "naive numpy")]
        cells += [f"{r['gflops']:.1f}", f"{100 * r['peak']:.0f}%"]
        lines.append(fmt(cells))
    peak_text = ", ".join(f"{np.dtype(d).name} {p:.0f} GFLOP/s" for d, p in peaks.items())
    lines.append(f"\nNumPy GEMM peak measured in this run: {peak_text}. Ratios are mytorch time / peer time "
                 "(below 1: mytorch is faster); per-step/mytorch is the students' per-step path over the layer.")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=["small", "large"], choices=sorted(CONFIGS))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    parser.add_argument("--cells", nargs="+", default=list(LAYERS), choices=list(LAYERS))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    if peers.torch is not None:
        print(f"torch {peers.torch.__version__}, {peers.torch.get_num_threads()} threads", file=sys.stderr)
    rows, peaks = measure(args.cells, args.configs, [np.dtype(d).type for d in args.dtypes], args.repeats)
    print(table(rows, peaks, args.markdown))


if __name__ == "__main__":
    main()

"""The peers mytorch's sequence layers are timed against (forward + backward over a whole sequence).

- ``torch_nn``: torch.nn.RNN / torch.nn.GRU / torch.nn.LSTM on the CPU (the other cells have no torch.nn module).
- ``torch_loop``: a torch autograd loop over a cell written as the PyTorch forum question writes its GMU (fused weight_ih /
  weight_hh, chunk, elementwise gates), for every cell.
- ``naive``: a plain NumPy version with one matrix per gate, each step's gradients accumulated inside the
  backward loop, and fresh arrays everywhere: how the cells are usually first written.
- ``products``: only the matrix products the cell's fast path computes (the same shapes, the same number of
  calls), into arrays allocated once: what no NumPy version of the cell can beat, its ceiling here.

Each peer returns a callable that runs forward and backward once (both directions with ``bidirectional``);
every one computes the same function. A peer that does not exist for a cell returns None.
"""
import numpy as np

try:
    import torch
except ImportError:            # the torch columns are skipped
    torch = None

GATES = {"RNN": 1, "GRU": 3, "GRUBlock": 3, "GMU": 3, "TGRU": 3, "LSTM": 4}


def forward_flops(cell, T, N, I, H):
    """Multiply-adds ×2 of the forward's matrix products (backward does about twice as many)."""
    recurrent_in = I if cell == "TGRU" else H                 # the TGRU's second product acts on x_{t-1}
    return 2 * T * N * (I + recurrent_in) * GATES[cell] * H


def total_flops(cell, T, N, I, H, directions=1):
    """Forward + backward (the backward's products are twice the forward's), over every direction."""
    return 3 * forward_flops(cell, T, N, I, H) * directions


# --------------------------------------------------------------------------------------------------
# torch


def torch_nn(cell, T, N, I, H, dtype, bidirectional=False):
    modules = {"RNN": "RNN", "GRU": "GRU", "LSTM": "LSTM"}
    if torch is None or cell not in modules:
        return None
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    module = getattr(torch.nn, modules[cell])(I, H, bidirectional=bidirectional).to(tdtype)
    X = torch.randn(T, N, I, dtype=tdtype, requires_grad=True)
    dY = torch.randn(T, N, H * (2 if bidirectional else 1), dtype=tdtype)

    def run():
        Y, _ = module(X)
        Y.backward(dY)
    return run


def _torch_step(cell, p, x, state, H):
    if cell == "RNN":
        (h,) = state
        return (torch.tanh(x @ p["w_ih"].t() + p["b_ih"] + h @ p["w_hh"].t() + p["b_hh"]),)
    if cell == "GRU":
        (h,) = state
        gx, gh = x @ p["w_ih"].t() + p["b_ih"], h @ p["w_hh"].t() + p["b_hh"]
        xr, xz, xn = gx.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn)
        return ((1 - z) * n + z * h,)
    if cell == "GRUBlock":
        (h,) = state
        ru = torch.sigmoid(torch.cat([x, h], 1) @ p["w_ru"] + p["b_ru"])
        r, u = ru[:, :H], ru[:, H:]
        c = torch.tanh(torch.cat([x, r * h], 1) @ p["w_c"] + p["b_c"])
        return (u * h + (1 - u) * c,)
    if cell == "GMU":
        h, c = state
        xh = x @ p["w_ih"].t() + p["b_ih"] + h @ p["w_hh"].t() + p["b_hh"]
        i, m, o = xh.chunk(3, 1)
        i, m, o = torch.tanh(i), torch.sigmoid(m + p["w_m"] * c), torch.sigmoid(o + p["w_o"] * c)
        return ((1 - m) * c + m * i, (1 - o) * i + o * c)
    if cell == "TGRU":
        h, mem = state
        a = x @ p["w_ih"].t() + p["b_ih"] + mem @ p["w_hh"].t() + p["b_hh"]
        z, f, o = a.chunk(3, 1)
        return (torch.sigmoid(f) * h + z * torch.tanh(o), x)
    if cell == "LSTM":
        h, c = state
        i, f, g, o = (x @ p["w_ih"].t() + p["b_ih"] + h @ p["w_hh"].t() + p["b_hh"]).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return (torch.sigmoid(o) * torch.tanh(c), c)
    raise KeyError(cell)


def _shapes(cell, I, H):
    G = GATES[cell] * H
    if cell == "GRUBlock":
        return {"w_ru": (I + H, 2 * H), "b_ru": (2 * H,), "w_c": (I + H, H), "b_c": (H,)}
    shapes = {"w_ih": (G, I), "w_hh": (G, I if cell == "TGRU" else H), "b_ih": (G,), "b_hh": (G,)}
    if cell == "GMU":
        shapes.update(w_m=(H,), w_o=(H,))
    return shapes


def _initial_state(cell, N, I, H, zeros):
    two = {"GMU": (zeros(N, H), zeros(N, H)), "TGRU": (zeros(N, H), zeros(N, I)), "LSTM": (zeros(N, H), zeros(N, H))}
    return two.get(cell, (zeros(N, H),))


def torch_loop(cell, T, N, I, H, dtype, bidirectional=False):
    if torch is None:
        return None
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    bound = 1 / np.sqrt(H)
    directions = 2 if bidirectional else 1
    params = [{k: (torch.rand(s, dtype=tdtype) * 2 * bound - bound).requires_grad_()
               for k, s in _shapes(cell, I, H).items()} for _ in range(directions)]
    X = torch.randn(T, N, I, dtype=tdtype, requires_grad=True)
    dY = torch.randn(T, N, H * directions, dtype=tdtype)

    def run():
        per_direction = []
        for d, p in enumerate(params):
            state = _initial_state(cell, N, I, H, lambda *s: torch.zeros(*s, dtype=tdtype))
            outputs = [None] * T
            for t in (reversed(range(T)) if d else range(T)):
                state = _torch_step(cell, p, X[t], state, H)
                outputs[t] = state[0]
            per_direction.append(torch.stack(outputs))
        torch.cat(per_direction, dim=2).backward(dY)
    return run


# --------------------------------------------------------------------------------------------------
# naive NumPy: one matrix per gate, per-step everything


def _sig(a):
    return 1 / (1 + np.exp(-a))


def naive(cell, T, N, I, H, dtype, bidirectional=False):
    if cell not in GATES:
        return None
    one = _naive_one_direction(cell, T, N, I, H, dtype)
    if not bidirectional:
        return one
    other = _naive_one_direction(cell, T, N, I, H, dtype)        # the same work on a second set of weights

    def run():
        one()
        other()
    return run


def _naive_one_direction(cell, T, N, I, H, dtype):
    rng = np.random.default_rng(0)
    k = GATES[cell]
    W = [rng.uniform(-0.1, 0.1, (H, I)).astype(dtype) for _ in range(k)]
    Uin = I if cell == "TGRU" else H
    U = [rng.uniform(-0.1, 0.1, (H, Uin)).astype(dtype) for _ in range(k)]
    b = [np.zeros(H, dtype) for _ in range(k)]
    peep = [rng.uniform(-0.1, 0.1, H).astype(dtype) for _ in range(2)]
    X = rng.standard_normal((T, N, I)).astype(dtype)
    dY = rng.standard_normal((T, N, H)).astype(dtype)

    def run():
        dW = [np.zeros_like(w) for w in W]
        dU = [np.zeros_like(u) for u in U]
        db = [np.zeros_like(v) for v in b]
        h, c, mem = np.zeros((N, H), dtype), np.zeros((N, H), dtype), np.zeros((N, I), dtype)
        caches = []
        for t in range(T):
            x = X[t]
            pre = [x @ W[g].T + (mem if cell == "TGRU" else h) @ U[g].T + b[g] for g in range(k)]
            if cell == "RNN":
                h_new = np.tanh(pre[0])
                caches.append((x, h, h_new))
            elif cell in ("GRU", "GRUBlock"):
                r, z = _sig(pre[0]), _sig(pre[1])
                an = x @ W[2].T + r * (h @ U[2].T) + b[2]
                n = np.tanh(an)
                h_new = (1 - z) * n + z * h
                caches.append((x, h, r, z, n, h @ U[2].T))
            elif cell == "GMU":
                i, m, o = np.tanh(pre[0]), _sig(pre[1] + peep[0] * c), _sig(pre[2] + peep[1] * c)
                h_new, c_new = (1 - m) * c + m * i, (1 - o) * i + o * c
                caches.append((x, h, c, i, m, o))
                c = c_new
            elif cell == "LSTM":
                i, f, g, o = _sig(pre[0]), _sig(pre[1]), np.tanh(pre[2]), _sig(pre[3])
                c_new = f * c + i * g
                tc = np.tanh(c_new)
                h_new = o * tc
                caches.append((x, h, c, i, f, g, o, tc))
                c = c_new
            else:
                z, f, o = pre[0], _sig(pre[1]), np.tanh(pre[2])
                h_new = f * h + z * o
                caches.append((x, h, mem, z, f, o))
                mem = x
            h = h_new
        dh, dc, dmem = np.zeros((N, H), dtype), np.zeros((N, H), dtype), np.zeros((N, I), dtype)
        for t in reversed(range(T)):
            dh = dh + dY[t]
            cache = caches[t]
            if cell == "RNN":
                x, hp, hn = cache
                d = [dh * (1 - hn * hn)]
                dh_prev = d[0] @ U[0]
            elif cell in ("GRU", "GRUBlock"):
                x, hp, r, z, n, un = cache
                dn = dh * (1 - z) * (1 - n * n)
                dz = dh * (hp - n) * z * (1 - z)
                dr = dn * un * r * (1 - r)
                d = [dr, dz, dn]
                dU[2] += (dn * r).T @ hp
                dh_prev = dr @ U[0] + dz @ U[1] + (dn * r) @ U[2] + dh * z
            elif cell == "LSTM":
                x, hp, cp, i, f, g, o, tc = cache
                do = dh * tc * o * (1 - o)
                dc = dc + dh * o * (1 - tc * tc)
                d = [dc * g * i * (1 - i), dc * cp * f * (1 - f), dc * i * (1 - g * g), do]
                dc = dc * f
                dh_prev = sum(d[q] @ U[q] for q in range(k))
            elif cell == "GMU":
                x, hp, cp, i, m, o = cache
                di = (dh * m + dc * (1 - o)) * (1 - i * i)
                dm = dh * (i - cp) * m * (1 - m)
                do = dc * (cp - i) * o * (1 - o)
                d = [di, dm, do]
                dc = dh * (1 - m) + dc * o + dm * peep[0] + do * peep[1]
                dh_prev = di @ U[0] + dm @ U[1] + do @ U[2]
            else:
                x, hp, mp, z, f, o = cache
                d = [dh * o, dh * hp * f * (1 - f), dh * z * (1 - o * o)]
                dh_prev = dh * f
            dx = sum(d[g] @ W[g] for g in range(k))
            for g in range(k):
                dW[g] += d[g].T @ x
                db[g] += d[g].sum(0)
                if not (cell in ("GRU", "GRUBlock") and g == 2):
                    dU[g] += d[g].T @ (caches[t][2] if cell == "TGRU" else caches[t][1])
            if cell == "TGRU":
                dx = dx + dmem
                dmem = sum(d[g] @ U[g] for g in range(k))
            dh = dh_prev
    return run


# --------------------------------------------------------------------------------------------------
# the products alone: the NumPy ceiling


def product_shapes(cell, T, N, I, H):
    """[(m, k, n, calls)] of the (m × k)·(k × n) products one direction's forward + backward computes."""
    TN, G = T * N, GATES[cell]
    if cell == "TGRU":                       # no per-step product: the gates read x and the memory, never h
        return [(TN, I, G * H, 2), (G * H, TN, I, 2), (TN, G * H, I, 2)]
    all_steps = [(TN, I, G * H, 1), (G * H, TN, I, 1), (G * H, TN, H, 1), (TN, G * H, I, 1)]
    if cell == "GRUBlock":                   # r, u from h; then c from r ⊙ h: two products per step each way
        per_step = [(N, H, 2 * H, T), (N, H, H, T), (N, H, H, T), (N, 2 * H, H, T)]
    else:                                    # every gate's recurrent product as one, forward and backward
        per_step = [(N, H, G * H, T), (N, G * H, H, T)]
    return all_steps + per_step


def products(cell, T, N, I, H, dtype, bidirectional=False):
    rng = np.random.default_rng(0)
    work = [(rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype),
             np.empty((m, n), dtype), calls) for m, k, n, calls in product_shapes(cell, T, N, I, H)]
    directions = 2 if bidirectional else 1

    def run():
        for _ in range(directions):
            for a, b, out, calls in work:
                for _ in range(calls):
                    np.matmul(a, b, out=out)
    return run

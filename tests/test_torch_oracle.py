"""Level 3: an independent oracle. PyTorch's own modules where they exist (RNNCell, GRUCell, RNN, GRU), and
torch autograd over the equations written from the sources (the GMU as a PyTorch forum question wrote it, TGRU,
TF's GRU block cell). float64 throughout; agreement to 1e-10. Skipped when torch is not installed."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from mytorch.nn import GRU, RNN, TGRU, GMUCell, GRUBlockCell, GRUCell, RNNCell, gru_block_cell, gru_block_cell_grad
from tests.conftest import HAS_TORCH, REPO, lazy_torch, needs_torch

if HAS_TORCH:
    torch = lazy_torch()

pytestmark = needs_torch
TOL = dict(rtol=1e-10, atol=1e-12)


def tensor(a, grad=True):
    return torch.tensor(np.asarray(a), dtype=torch.float64, requires_grad=grad)


def close(mine, theirs, what):
    np.testing.assert_allclose(mine, theirs.detach().numpy(), **TOL, err_msg=what)


def load_from_torch(mine, module):
    """The route a PyTorch user takes: a torch state_dict converted with .numpy()."""
    mine.load_state_dict({k: v.detach().numpy() for k, v in module.state_dict().items()})


# --------------------------------------------------------------------------------------------------
# torch.nn modules


@pytest.mark.parametrize("kind, kwargs", [("rnn", {}), ("rnn", {"nonlinearity": "relu"}), ("rnn", {"bias": False}),
                                          ("gru", {}), ("gru", {"bias": False})], ids=str)
@pytest.mark.parametrize("n", [None, 1, 4], ids=["unbatched", "N1", "N4"])
def test_cells_match_torch_nn(kind, kwargs, n, rng):
    I, H = 3, 5
    torch.manual_seed(0)
    theirs = (torch.nn.RNNCell if kind == "rnn" else torch.nn.GRUCell)(I, H, **kwargs).double()
    mine = (RNNCell if kind == "rnn" else GRUCell)(I, H, rng=0, **kwargs)
    load_from_torch(mine, theirs)
    shape = (I,) if n is None else (n, I)
    x, h, w = rng.standard_normal(shape), rng.standard_normal(shape[:-1] + (H,)), rng.standard_normal(shape[:-1] + (H,))
    xt, ht = tensor(x), tensor(h)
    out = theirs(xt, ht)
    (out * tensor(w, False)).sum().backward()
    h_new = mine.forward(x, h)
    dx, dh = mine.backward(w)
    close(h_new, out, "h'")
    close(dx, xt.grad, "dx")
    close(dh, ht.grad, "dh")
    for name, p in theirs.named_parameters():
        close(mine.grads[name], p.grad, name)


@pytest.mark.parametrize("kind", ["rnn", "gru"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("T", [1, 6])
def test_sequence_layers_match_torch_nn(kind, batch_first, T, rng):
    I, H, N, L = 3, 4, 2, 2
    torch.manual_seed(1)
    theirs = (torch.nn.RNN if kind == "rnn" else torch.nn.GRU)(I, H, num_layers=L, batch_first=batch_first).double()
    mine = (RNN if kind == "rnn" else GRU)(I, H, num_layers=L, batch_first=batch_first, rng=0)
    load_from_torch(mine, theirs)
    X = rng.standard_normal((N, T, I) if batch_first else (T, N, I))
    h0 = rng.standard_normal((L, N, H))
    wY, wh = rng.standard_normal(X.shape[:-1] + (H,)), rng.standard_normal((L, N, H))
    Xt, h0t = tensor(X), tensor(h0)
    Yt, hnt = theirs(Xt, h0t)
    ((Yt * tensor(wY, False)).sum() + (hnt * tensor(wh, False)).sum()).backward()
    Y, h_n = mine.forward(X, h0)
    dX, dh0 = mine.backward(wY, wh)
    close(Y, Yt, "Y")
    close(h_n, hnt, "h_n")
    close(dX, Xt.grad, "dX")
    close(dh0, h0t.grad, "dh0")
    for name, p in theirs.named_parameters():
        close(mine.grads[name], p.grad, name)


def test_unbatched_sequence_matches_torch(rng):
    torch.manual_seed(2)
    theirs = torch.nn.GRU(3, 4).double()
    mine = GRU(3, 4)
    load_from_torch(mine, theirs)
    X = rng.standard_normal((5, 3))
    Yt, hnt = theirs(tensor(X, False))
    Y, h_n = mine.forward(X)
    close(Y, Yt, "Y")
    close(h_n, hnt, "h_n")


# --------------------------------------------------------------------------------------------------
# torch autograd over the written equations


def seed_gmu_cell(input_size, hidden_size):
    """The forum question's JitGMUCell, exactly as written there (without jit); a torch.nn.Module defined here,
    where PyTorch is imported, not when the module is collected."""
    class SeedGMUCell(torch.nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.weight_ih = torch.nn.Parameter(torch.empty(3 * hidden_size, input_size, dtype=torch.float64))
            self.weight_hh = torch.nn.Parameter(torch.empty(3 * hidden_size, hidden_size, dtype=torch.float64))
            self.weight_ch_m = torch.nn.Parameter(torch.empty(hidden_size, dtype=torch.float64))
            self.weight_ch_o = torch.nn.Parameter(torch.empty(hidden_size, dtype=torch.float64))
            self.bias_ih = torch.nn.Parameter(torch.empty(3 * hidden_size, dtype=torch.float64))
            self.bias_hh = torch.nn.Parameter(torch.empty(3 * hidden_size, dtype=torch.float64))
            stdv = 1.0 / np.sqrt(hidden_size)
            for weight in self.parameters():
                torch.nn.init.uniform_(weight, -stdv, stdv)

        def forward(self, x, state):
            hx, cx = state
            xh = torch.mm(x, self.weight_ih.t()) + self.bias_ih + torch.mm(hx, self.weight_hh.t()) + self.bias_hh
            i, m, o = xh.chunk(3, 1)
            m = m + (self.weight_ch_m * cx)
            o = o + (self.weight_ch_o * cx)
            i = torch.tanh(i)
            m = torch.sigmoid(m)
            o = torch.sigmoid(o)
            h = (1 - m) * cx + (m * i)
            c = (1 - o) * i + (o * cx)
            return h, (h, c)

    return SeedGMUCell(input_size, hidden_size)


def test_gmu_sequence_matches_the_forum_questions_module(rng):
    """A loss on h only; the last step's c gets no gradient (None), as the forum question asks."""
    T, N, I, H = 6, 3, 4, 5
    torch.manual_seed(3)
    theirs = seed_gmu_cell(I, H)
    mine = GMUCell(I, H)
    load_from_torch(mine, theirs)
    X, w = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, H))
    h0, c0 = rng.standard_normal((N, H)), rng.standard_normal((N, H))
    Xt, h0t, c0t = tensor(X), tensor(h0), tensor(c0)
    state, loss = (h0t, c0t), 0
    for t in range(T):
        out, state = theirs(Xt[t], state)
        loss = loss + (out * tensor(w[t], False)).sum()
    loss.backward()
    mine_state, hs = (h0, c0), []
    for t in range(T):
        mine_state = mine.forward(X[t], mine_state)
        hs.append(mine_state[0])
    close(hs[-1], state[0], "h_T")
    close(mine_state[1], state[1], "c_T")
    d_state, dX = (None, None), []
    for t in reversed(range(T)):
        dh = w[t] if d_state[0] is None else d_state[0] + w[t]
        dx, d_state = mine.backward((dh, d_state[1]))
        dX.append(dx)
    close(np.stack(dX[::-1]), Xt.grad, "dX")
    close(d_state[0], h0t.grad, "dh0")
    close(d_state[1], c0t.grad, "dc0")
    for name, p in theirs.named_parameters():
        close(mine.grads[name], p.grad, name)


def torch_tgru(p, x, h, m, H):
    a = x @ p["weight_ih"].T + m @ p["weight_hh"].T
    if "bias_ih" in p:
        a = a + p["bias_ih"]
    if "bias_hh" in p:
        a = a + p["bias_hh"]
    z, f, o = a[:, :H], torch.sigmoid(a[:, H:2 * H]), torch.tanh(a[:, 2 * H:])
    return f * h + z * o, x


@pytest.mark.parametrize("kwargs", [{}, {"train_state": True, "train_memory": True}, {"use_bias": False},
                                    {"use_recurrent_bias": False}], ids=str)
def test_tgru_sequence_matches_torch_autograd(kwargs, rng):
    T, N, I, H = 5, 2, 3, 4
    mine = TGRU(I, H, num_layers=2, rng=0, **kwargs)
    p = {k: tensor(v) for k, v in mine.params.items()}
    X, w = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, H))
    Xt = tensor(X)
    states = []
    for layer, cell in enumerate(mine.cells):
        h = p[f"hidden_state_l{layer}"].expand(N, H) if cell.train_state else torch.zeros(N, H, dtype=torch.float64)
        m = (p[f"memory_l{layer}"].expand(N, cell.input_size) if cell.train_memory
             else torch.zeros(N, cell.input_size, dtype=torch.float64))
        states.append((h, m))
    loss = 0
    for t in range(T):
        inp = Xt[t]
        for layer, cell in enumerate(mine.cells):
            lp = {k[:-3]: v for k, v in p.items() if k.endswith(f"_l{layer}")}
            states[layer] = torch_tgru(lp, inp, *states[layer], H)
            inp = states[layer][0]
        loss = loss + (inp * tensor(w[t], False)).sum()
    loss.backward()
    Y, _ = mine.forward(X)
    dX, _ = mine.backward(w)
    close(Y[-1], inp, "Y_T")
    close(dX, Xt.grad, "dX")
    for name, t in p.items():
        close(mine.grads[name], t.grad, name)


def torch_gru_block(x, h, w_ru, w_c, b_ru, b_c):
    """TensorFlow's GRUBlockCell equations (gru_ops.h), in torch, returning the pre-activations too."""
    H = h.shape[1]
    r_u_bar = torch.cat([x, h], 1) @ w_ru + b_ru
    r, u = torch.sigmoid(r_u_bar[:, :H]), torch.sigmoid(r_u_bar[:, H:])
    c_bar = torch.cat([x, r * h], 1) @ w_c + b_c
    c = torch.tanh(c_bar)
    return r_u_bar, c_bar, r, u, c, u * h + (1 - u) * c


@pytest.mark.parametrize("n", [None, 1, 3], ids=["unbatched", "N1", "N3"])
def test_gru_block_cell_matches_torch_autograd(n, rng):
    I, H = 4, 3
    mine = GRUBlockCell(I, H, rng=0)
    p = {k: tensor(v) for k, v in mine.params.items()}
    shape = (I,) if n is None else (n, I)
    x, h = rng.standard_normal(shape), rng.standard_normal(shape[:-1] + (H,))
    w = rng.standard_normal(h.shape)
    xt, ht = tensor(x), tensor(h)
    *_, out = torch_gru_block(xt.reshape(-1, I), ht.reshape(-1, H), **p)
    (out.reshape(w.shape) * tensor(w, False)).sum().backward()
    h_new = mine.forward(x, h)
    dx, dh = mine.backward(w)
    close(h_new, out.reshape(w.shape), "h'")
    close(dx, xt.grad, "dx")
    close(dh, ht.grad, "dh")
    for name, t in p.items():
        close(mine.grads[name], t.grad, name)


def test_gru_block_ops_match_torch_autograd(rng):
    """The op outputs r, u, c, h and d_x, d_h_prev, d_c_bar, d_r_bar_u_bar = dL/d(pre-activations)."""
    N, I, H = 3, 2, 4
    cell = GRUBlockCell(I, H, rng=0)
    x, h, d_h = rng.standard_normal((N, I)), rng.standard_normal((N, H)), rng.standard_normal((N, H))
    xt, ht = tensor(x), tensor(h)
    r_u_bar, c_bar, rt, ut, ct, outt = torch_gru_block(xt, ht, **{k: tensor(v, False) for k, v in cell.params.items()})
    r_u_bar.retain_grad()
    c_bar.retain_grad()
    (outt * tensor(d_h, False)).sum().backward()
    r, u, c, h_new = gru_block_cell(x, h, **cell.params)
    for mine, theirs, what in ((r, rt, "r"), (u, ut, "u"), (c, ct, "c"), (h_new, outt, "h")):
        close(mine, theirs, what)
    d_x, d_h_prev, d_c_bar, d_r_bar_u_bar = gru_block_cell_grad(x, h, **cell.params, r=r, u=u, c=c, d_h=d_h)
    close(d_x, xt.grad, "d_x")
    close(d_h_prev, ht.grad, "d_h_prev")
    close(d_c_bar, c_bar.grad, "d_c_bar")
    close(d_r_bar_u_bar, r_u_bar.grad, "d_r_bar_u_bar")


# --------------------------------------------------------------------------------------------------
# the oracle's cost: paid by the worker that runs these tests, not by every worker that collects them

TORCH_MODULES = sorted(f"tests.{path.stem}" for path in pathlib.Path(REPO, "tests").glob("test_*.py")
                       if "lazy_torch()" in path.read_text(encoding="utf-8"))
COLLECT_LIKE_PYTEST = """
import importlib, sys, unittest
for name in sys.argv[1:]:
    module = importlib.import_module(name)
    for value in list(vars(module).values()):   # pytest's unittest plugin asks this of every name of a module
        try:
            issubclass(value, unittest.TestCase)
        except TypeError:
            pass
print('torch._C' in sys.modules, sum(name in sys.modules for name in sys.argv[1:]))
"""


def test_collecting_the_modules_that_use_pytorch_does_not_import_it():
    """Each xdist worker imports every test module to collect it, and pytest asks every name of a module whether
    it is a unittest class; PyTorch (3 s of CPU) must not load to answer (``conftest.lazy_torch``)."""
    assert len(TORCH_MODULES) >= 4, TORCH_MODULES
    probe = subprocess.run([sys.executable, "-c", COLLECT_LIKE_PYTEST, *TORCH_MODULES], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert probe.stdout.split() == ["False", str(len(TORCH_MODULES))], probe.stdout + probe.stderr

"""Linear, the losses and the optimizers: hand formulas and finite differences always, torch when installed."""
import numpy as np
import pytest

from mytorch.nn import GRU, CrossEntropyLoss, Linear, MSELoss
from mytorch.optim import SGD, Adam, clip_grad_norm
from tests.conftest import HAS_TORCH, lazy_torch, needs_torch
from tests.oracle import numeric_gradient as numeric_grad

if HAS_TORCH:
    torch = lazy_torch()


def test_linear_gradients(rng):
    lin = Linear(3, 2, rng=0)
    x, w = rng.standard_normal((4, 5, 3)), rng.standard_normal((4, 5, 2))
    y = lin.forward(x)
    np.testing.assert_allclose(y, x @ lin.params["weight"].T + lin.params["bias"])
    dx = lin.backward(w)
    def loss():
        return float(np.sum(w * (x @ lin.params["weight"].T + lin.params["bias"])))
    np.testing.assert_allclose(dx, numeric_grad(loss, x), rtol=1e-7, atol=1e-9)
    for k in ("weight", "bias"):
        np.testing.assert_allclose(lin.grads[k], numeric_grad(loss, lin.params[k]), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match=r"Linear.forward: x has shape \(4, 4\), expected \(..., 3\)"):
        lin.forward(np.zeros((4, 4)))
    with pytest.raises(RuntimeError, match="Linear.backward: called without a matching forward"):
        lin.backward(w)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse(reduction, rng):
    pred, target = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    loss = MSELoss(reduction)
    value = loss(pred, target)
    expected = np.sum((pred - target) ** 2) / (pred.size if reduction == "mean" else 1)
    assert value == pytest.approx(expected, rel=1e-14)
    np.testing.assert_allclose(loss.backward(), numeric_grad(lambda: MSELoss(reduction)(pred, target), pred),
                               rtol=1e-7, atol=1e-10)
    with pytest.raises(RuntimeError, match="without a matching forward"):
        loss.backward()
    with pytest.raises(ValueError, match="must match"):
        loss(pred, target[:2])


@pytest.mark.parametrize("shape", [(5, 4), (4,)])
def test_cross_entropy(shape, rng):
    logits = rng.standard_normal(shape) * 3
    target = rng.integers(0, 4, size=shape[:-1])
    loss = CrossEntropyLoss()
    value = loss(logits, target)
    z, y = logits.reshape(-1, 4), np.atleast_1d(target)
    expected = np.mean([np.log(np.exp(z[n]).sum()) - z[n, y[n]] for n in range(len(y))])
    assert value == pytest.approx(expected, rel=1e-13)
    np.testing.assert_allclose(loss.backward(), numeric_grad(lambda: CrossEntropyLoss()(logits, target), logits),
                               rtol=1e-6, atol=1e-8)        # FD rounding is ~1e-10 absolute
    with pytest.raises(TypeError, match="integer class indices"):
        loss(logits, target.astype(float))
    with pytest.raises(ValueError, match="classes outside"):
        loss(logits, np.full(shape[:-1], 4))


@needs_torch
def test_losses_match_torch(rng):
    logits, target = rng.standard_normal((6, 5)), rng.integers(0, 5, 6)
    t = torch.tensor(logits, requires_grad=True)
    torch.nn.functional.cross_entropy(t, torch.tensor(target)).backward()
    ce = CrossEntropyLoss()
    assert ce(logits, target) == pytest.approx(torch.nn.functional.cross_entropy(torch.tensor(logits),
                                                                                 torch.tensor(target)).item(), rel=1e-13)
    np.testing.assert_allclose(ce.backward(), t.grad.numpy(), rtol=1e-12)


def _training_run(make_opt, steps=4, seed=0):
    """A few steps of a GRU + Linear on fixed data; returns the final parameters."""
    rng = np.random.default_rng(seed)
    gru, head = GRU(3, 4, rng=1), Linear(4, 2, rng=2)
    X, target = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2, 2))
    opt, mse = make_opt([gru, head]), MSELoss()
    for _ in range(steps):
        opt.zero_grad()
        Y, _ = gru.forward(X)
        mse(head.forward(Y), target)
        gru.backward(head.backward(mse.backward()))
        opt.step()
    return gru, head


@needs_torch
@pytest.mark.parametrize("name, mine, theirs", [
    ("sgd", lambda m: SGD(m, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    ("momentum", lambda m: SGD(m, lr=0.1, momentum=0.9, weight_decay=0.01),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("nesterov", lambda m: SGD(m, lr=0.1, momentum=0.5, nesterov=True),
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5, nesterov=True)),
    ("adam", lambda m: Adam(m, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
    ("adam-wd", lambda m: Adam(m, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1),
     lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_optimizers_match_torch(name, mine, theirs):
    gru, head = _training_run(mine)
    rng = np.random.default_rng(0)
    tg, th = torch.nn.GRU(3, 4).double(), torch.nn.Linear(4, 2).double()
    g0, h0 = GRU(3, 4, rng=1), Linear(4, 2, rng=2)
    with torch.no_grad():
        for module, ref in ((tg, g0), (th, h0)):
            for k, p in module.named_parameters():
                p.copy_(torch.tensor(ref.params[k]))
    X, target = torch.tensor(rng.standard_normal((5, 2, 3))), torch.tensor(rng.standard_normal((5, 2, 2)))
    opt = theirs(list(tg.parameters()) + list(th.parameters()))
    for _ in range(4):
        opt.zero_grad()
        torch.nn.functional.mse_loss(th(tg(X)[0]), target).backward()
        opt.step()
    for module, ref in ((tg, gru), (th, head)):
        for k, p in module.named_parameters():
            np.testing.assert_allclose(ref.params[k], p.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=k)


def test_sgd_by_hand():
    lin = Linear(1, 1, bias=False, rng=0)
    lin.params["weight"][...] = 1.0
    opt = SGD(lin, lr=0.5, momentum=0.5)
    for expected in (0.5, -0.25):                      # v=1: 1-0.5; v=0.5+1: 0.5-0.75
        lin.grads["weight"][...] = 1.0
        opt.step()
        assert lin.params["weight"][0, 0] == pytest.approx(expected)


def test_adam_first_step_is_lr_times_sign():
    lin = Linear(2, 1, bias=False, rng=0)
    before = lin.params["weight"].copy()
    lin.grads["weight"][...] = [[3.0, -0.001]]
    Adam(lin, lr=0.1).step()
    np.testing.assert_allclose(lin.params["weight"] - before, [[-0.1, 0.1]], rtol=1e-4)


def test_optimizer_keeps_views_valid():
    from mytorch.nn import GRUCell
    cell = GRUCell(2, 3, rng=0)
    view = cell.Wrx
    cell.grads["weight_ih"][...] = 1.0
    SGD(cell, lr=1.0).step()
    assert np.shares_memory(view, cell.params["weight_ih"]) and np.array_equal(view, cell.Wrx)


def test_clip_grad_norm():
    a, b = Linear(2, 2, rng=0), Linear(2, 1, bias=False, rng=0)
    for m in (a, b):
        for g in m.grads.values():
            g[...] = 2.0                                 # 4 + 2 + 2 = 8 entries of 2: norm sqrt(32)
    norm = clip_grad_norm([a, b], max_norm=1.0)
    assert norm == pytest.approx(np.sqrt(32))
    total = np.sqrt(sum(np.sum(g ** 2) for m in (a, b) for g in m.grads.values()))
    assert total == pytest.approx(1.0, rel=1e-5)
    assert clip_grad_norm([a, b], max_norm=5.0) == pytest.approx(total)       # below the limit: unchanged
    assert np.sqrt(sum(np.sum(g ** 2) for m in (a, b) for g in m.grads.values())) == pytest.approx(total)


def test_optimizer_errors():
    with pytest.raises(ValueError, match="lr must be positive"):
        SGD(Linear(1, 1), lr=0)
    with pytest.raises(TypeError, match="expected modules with .params and .grads"):
        Adam([object()])

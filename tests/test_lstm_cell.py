"""The LSTM cell: finite differences with and without proj_size, torch.nn.LSTMCell and torch.nn.LSTM (proj_size)
as oracles, its equations written out by hand, its options and errors."""
import numpy as np
import pytest

import mytorch
from mytorch.nn import LSTMCell
from tests.conftest import GRADCHECK_TOL, HAS_TORCH, SHAPES, lazy_torch, needs_torch, random_state, random_x, shape_id

if HAS_TORCH:
    torch = lazy_torch()


def sig(a):
    return 1.0 / (1.0 + np.exp(-a))


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("proj_size", [0, 1], ids=["no-proj", "proj1"])
@pytest.mark.parametrize("given_state", [False, True], ids=["state=None", "state given"])
def test_finite_differences(shape, proj_size, given_state, rng):
    n, i, h = shape
    cell = LSTMCell(i, h, proj_size=proj_size, rng=0)
    state = random_state(cell, rng, n) if given_state else None
    errors = mytorch.gradcheck(cell, random_x(rng, n, i), state)
    expected = {"x"} | set(cell.params) | ({"state[0]", "state[1]"} if given_state else set())
    assert expected <= set(errors)
    assert ("weight_hr" in errors) == (proj_size > 0)
    assert max(errors.values()) <= GRADCHECK_TOL, errors


@pytest.mark.parametrize("kwargs", [{"bias": False}, {"forget_bias": 1.0}, {"proj_size": 3, "bias": False}], ids=str)
def test_finite_differences_options(kwargs, rng):
    cell = LSTMCell(4, 5, rng=1, **kwargs)
    errors = mytorch.gradcheck(cell, rng.standard_normal((3, 4)), random_state(cell, rng, 3))
    assert max(errors.values()) <= GRADCHECK_TOL, errors


def test_equations_by_hand(rng):
    """The step written from the equations with separate gate matrices, and the exposed intermediates."""
    I, H, P, N = 3, 4, 2, 2
    cell = LSTMCell(I, H, proj_size=P, rng=0)
    p = cell.params
    W_i, W_f, W_g, W_o = np.split(p["weight_ih"], 4)
    U_i, U_f, U_g, U_o = np.split(p["weight_hh"], 4)
    b = np.split(p["bias_ih"] + p["bias_hh"], 4)
    x, h, c = rng.standard_normal((N, I)), rng.standard_normal((N, P)), rng.standard_normal((N, H))
    i = sig(x @ W_i.T + h @ U_i.T + b[0])
    f = sig(x @ W_f.T + h @ U_f.T + b[1])
    g = np.tanh(x @ W_g.T + h @ U_g.T + b[2])
    o = sig(x @ W_o.T + h @ U_o.T + b[3])
    c_new = f * c + i * g
    h_new = (o * np.tanh(c_new)) @ p["weight_hr"].T
    got_h, got_c = cell.forward(x, (h, c))
    assert got_h.shape == (N, P) and got_c.shape == (N, H)
    np.testing.assert_allclose(got_h, h_new, rtol=1e-13)
    np.testing.assert_allclose(got_c, c_new, rtol=1e-13)
    for name, value in (("i", i), ("f", f), ("g", g), ("o", o), ("tanh_c", np.tanh(c_new)), ("cell", c), ("hidden", h)):
        np.testing.assert_allclose(getattr(cell, name), value, rtol=1e-13, err_msg=name)


def test_constant_error_carousel(rng):
    """With f = 1 and i = 0 (saturated gates), c' = c and dL/dc passes back unchanged over any number of steps."""
    H = 3
    cell = LSTMCell(2, H, rng=0)
    cell.params["bias_ih"][:H] = -60.0           # i -> 0
    cell.params["bias_ih"][H:2 * H] = 60.0       # f -> 1
    c0 = rng.standard_normal(H)
    state = (np.zeros(H), c0)
    for _ in range(50):
        state = cell.forward(rng.standard_normal(2), state)
    np.testing.assert_allclose(state[1], c0, rtol=1e-12)
    d_state = (None, np.ones(H))
    for _ in range(50):
        _, d_state = cell.backward((None, d_state[1]))
    np.testing.assert_allclose(d_state[1], np.ones(H), rtol=1e-12)


def test_forget_bias_and_initialisation():
    a, b = LSTMCell(3, 16, rng=0), LSTMCell(3, 16, forget_bias=1.0, rng=0)
    for k, v in a.params.items():
        assert 0.2 < np.abs(v).max() <= 0.25, k                        # U(±1/sqrt(16)), as PyTorch
    shift = b.params["bias_ih"] - a.params["bias_ih"]
    np.testing.assert_allclose(shift, np.r_[np.zeros(16), np.ones(16), np.zeros(32)], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(a.params["bias_hh"], b.params["bias_hh"])
    assert LSTMCell(3, 4, proj_size=2).params["weight_hh"].shape == (16, 2)
    assert LSTMCell(3, 4, proj_size=2).state_widths == (2, 4)


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"LSTMCell: proj_size must be an integer with 0 <= proj_size < hidden_size \(4\), got 4"):
        LSTMCell(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="proj_size must be"):
        LSTMCell(3, 4, proj_size=-1)
    with pytest.raises(ValueError, match="LSTMCell: forget_bias=1.0 needs a bias"):
        LSTMCell(3, 4, bias=False, forget_bias=1.0)


def test_state_shapes_with_projection_are_checked(rng):
    cell = LSTMCell(3, 4, proj_size=2)
    with pytest.raises(ValueError, match=r"LSTMCell.forward: state\[0\] \(h\) has shape \(2, 4\), expected \(2, 2\)"):
        cell.forward(np.zeros((2, 3)), (np.zeros((2, 4)), np.zeros((2, 4))))
    cell.forward(np.zeros((2, 3)), (np.zeros((2, 2)), np.zeros((2, 4))))
    with pytest.raises(ValueError, match=r"LSTMCell.backward: d_state\[0\] \(dh\) has shape \(2, 4\), expected \(2, 2\)"):
        cell.backward((np.zeros((2, 4)), None))
    assert cell.pending_steps == 1


# --------------------------------------------------------------------------------------------------
# torch as the oracle


def close(mine, theirs, what):
    np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=what)


@needs_torch
@pytest.mark.parametrize("n", [None, 1, 4], ids=["unbatched", "N1", "N4"])
@pytest.mark.parametrize("bias", [True, False])
def test_cell_matches_torch_lstmcell(n, bias, rng):
    I, H = 3, 5
    torch.manual_seed(0)
    theirs = torch.nn.LSTMCell(I, H, bias=bias).double()
    mine = LSTMCell(I, H, bias=bias)
    mine.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    batch = () if n is None else (n,)
    x, h, c = rng.standard_normal(batch + (I,)), rng.standard_normal(batch + (H,)), rng.standard_normal(batch + (H,))
    wh, wc = rng.standard_normal(batch + (H,)), rng.standard_normal(batch + (H,))
    xt, ht, ct = (torch.tensor(a, requires_grad=True) for a in (x, h, c))
    h_t, c_t = theirs(xt, (ht, ct))
    ((h_t * torch.tensor(wh)).sum() + (c_t * torch.tensor(wc)).sum()).backward()
    got_h, got_c = mine.forward(x, (h, c))
    dx, (dh, dc) = mine.backward((wh, wc))
    close(got_h, h_t, "h'")
    close(got_c, c_t, "c'")
    close(dx, xt.grad, "dx")
    close(dh, ht.grad, "dh")
    close(dc, ct.grad, "dc")
    for name, param in theirs.named_parameters():
        close(mine.grads[name], param.grad, name)


@needs_torch
@pytest.mark.parametrize("n", [None, 3], ids=["unbatched", "N3"])
def test_projected_cell_matches_torch_lstm(n, rng):
    """torch has no LSTMCell with proj_size: a one-layer torch.nn.LSTM over T steps is the oracle."""
    I, H, P, T = 4, 5, 2, 3
    torch.manual_seed(1)
    theirs = torch.nn.LSTM(I, H, proj_size=P).double()
    mine = LSTMCell(I, H, proj_size=P)
    mine.load_state_dict({k[:-3]: v.numpy() for k, v in theirs.state_dict().items()})
    batch = () if n is None else (n,)
    X = rng.standard_normal((T,) + batch + (I,))
    h0, c0 = rng.standard_normal((1,) + batch + (P,)), rng.standard_normal((1,) + batch + (H,))
    wY = rng.standard_normal((T,) + batch + (P,))
    Xt, h0t, c0t = (torch.tensor(a, requires_grad=True) for a in (X, h0, c0))
    Y, (h_n, c_n) = theirs(Xt, (h0t, c0t))
    (Y * torch.tensor(wY)).sum().backward()
    state, d_X = (h0[0], c0[0]), []
    for t in range(T):
        state = mine.forward(X[t], state)
        close(state[0], Y[t], f"h at step {t}")
    close(state[1], c_n[0], "c_n")
    d_state = (wY[-1], None)
    for t in reversed(range(T)):
        dx, d_state = mine.backward(d_state)
        d_X.append(dx)
        if t:
            d_state = (d_state[0] + wY[t - 1], d_state[1])
    close(np.stack(d_X[::-1]), Xt.grad, "dX")
    close(d_state[0], h0t.grad[0], "dh0")
    close(d_state[1], c0t.grad[0], "dc0")
    for name, param in theirs.named_parameters():
        close(mine.grads[name[:-3]], param.grad, name)

"""Inputs as a NumPy user passes them: integer, boolean and list inputs are cast to the cell's dtype, while
complex, object, string and date inputs are a TypeError naming the cell, the argument and the dtype. And
GRUCell speaks CMU 11-785's keyword names (``forward(x, h_prev_t=...)``, ``backward(delta=...)``), checked
on the course's own kind of call: 1-D ``np.random.randint`` vectors, against torch.nn.GRUCell."""
import re

import numpy as np
import pytest

from mytorch.nn import GMU, GRU, RNN, TGRU, GRUBlock, GRUCell, Linear
from tests.conftest import needs_torch, random_state

LAYERS = (RNN, GRU, GRUBlock, GMU, TGRU)


def parts(state):
    return list(state) if isinstance(state, tuple) else [state]


def as_dtype(state, dtype):
    cast = tuple(np.asarray(p).astype(dtype) for p in parts(state))
    return cast if isinstance(state, tuple) else cast[0]


def integer_state(cell, rng, n):
    """A state of small integers (the course's np.random.randint style) with the cell's structure."""
    return as_dtype(random_state(cell, rng, n) * 3, np.int64)


def assert_same_state(a, b):
    for p, q in zip(parts(a), parts(b)):
        assert p.dtype == q.dtype == np.float64
        np.testing.assert_array_equal(p, q)


KINDS = {
    "int64": lambda a: np.rint(a * 3).astype(np.int64),
    "int8": lambda a: np.rint(a * 3).astype(np.int8),
    "uint16": lambda a: np.rint(np.abs(a) * 3).astype(np.uint16),
    "bool": lambda a: a > 0,
    "float32": lambda a: a.astype(np.float32),
    "nested list": lambda a: np.rint(a * 3).astype(int).tolist(),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [None, 2], ids=["unbatched", "N2"])
def test_real_inputs_are_cast_to_the_cells_dtype(cell_class, kind, n, rng):
    """forward and backward on int/bool/list/float32 inputs give exactly what the float64 cast gives."""
    make = KINDS[kind]
    a, b = cell_class(3, 4, rng=0), cell_class(3, 4, rng=0)
    x = make(rng.standard_normal(3 if n is None else (n, 3)))
    state = random_state(a, rng, n)
    given_state = tuple(make(p) for p in parts(state)) if isinstance(state, tuple) else make(state)
    out = a.forward(x, given_state)
    expected = b.forward(np.asarray(x).astype(np.float64), as_dtype(given_state, np.float64))
    assert_same_state(out, expected)
    d_out = tuple(make(p) for p in parts(out)) if isinstance(out, tuple) else make(out)
    dx, d_prev = a.backward(d_out)
    dx_expected, d_prev_expected = b.backward(as_dtype(d_out, np.float64))
    assert_same_state(dx, dx_expected)
    assert_same_state(d_prev, d_prev_expected)
    for k in a.grads:
        np.testing.assert_array_equal(a.grads[k], b.grads[k])


def test_float32_cell_casts_integer_input_to_float32(cell_class, rng):
    cell = cell_class(3, 4, dtype=np.float32, rng=0)
    out = cell.forward(rng.integers(-5, 5, size=(2, 3)))
    assert all(p.dtype == np.float32 for p in parts(out))


def test_cast_input_is_a_copy(rng):
    """The cell keeps its own float copy: changing the caller's int array later changes nothing."""
    cell = GRUCell(3, 4, rng=0)
    x = rng.integers(1, 5, size=(2, 3))
    original = x.copy()
    h = cell.forward(x)
    x[...] = 0
    assert cell.x.dtype == h.dtype == np.float64
    np.testing.assert_array_equal(cell.x, original)


NOT_REAL = {
    "complex128": np.ones((2, 3), dtype=complex),
    "object": np.array([[1.0, None, 2.0]] * 2, dtype=object),
    "<U1": np.full((2, 3), "a"),
    "datetime64[D]": np.full((2, 3), np.datetime64("2026-01-01")),
}


@pytest.mark.parametrize("dtype", NOT_REAL)
def test_non_real_inputs_name_cell_argument_and_dtype(cell_class, dtype, rng):
    name, bad = cell_class.__name__, NOT_REAL[dtype]
    cell = cell_class(3, 4, rng=0)
    with pytest.raises(TypeError, match=rf"^{name}\.forward: x has dtype {re.escape(dtype)}, expected real numbers"):
        cell.forward(bad)
    state = random_state(cell, rng, 2)
    bad_state = (np.ones_like(state[0], dtype=complex), state[1]) if isinstance(state, tuple) else \
        np.ones_like(state, dtype=complex)
    label = r"state\[0\] \(h\)" if isinstance(state, tuple) else "state"
    with pytest.raises(TypeError, match=rf"^{name}\.forward: {label} has dtype complex128, expected real numbers"):
        cell.forward(np.zeros((2, 3)), bad_state)
    assert cell.pending_steps == 0
    out = cell.forward(np.zeros((2, 3)), state)
    bad_d = tuple(np.ones_like(p, dtype=complex) for p in parts(out)) if isinstance(out, tuple) else \
        np.ones_like(out, dtype=complex)
    with pytest.raises(TypeError, match=rf"^{name}\.backward: d_state.* has dtype complex128, expected real"):
        cell.backward(bad_d)
    assert cell.pending_steps == 1                                   # a rejected backward consumes nothing


@pytest.mark.parametrize("Layer", LAYERS, ids=[L.__name__ for L in LAYERS])
def test_sequence_layers_cast_integer_inputs(Layer, rng):
    a, b = Layer(3, 4, num_layers=2, rng=0), Layer(3, 4, num_layers=2, rng=0)
    X = rng.integers(-3, 4, size=(5, 2, 3))
    Y, state = a.forward(X)
    Y_float, state_float = b.forward(X.astype(np.float64))
    np.testing.assert_array_equal(Y, Y_float)
    dY = rng.integers(-2, 3, size=Y.shape)
    dX, _ = a.backward(dY)
    dX_float, _ = b.backward(dY.astype(np.float64))
    assert dX.dtype == np.float64
    np.testing.assert_array_equal(dX, dX_float)
    Y_list, _ = b.forward(X[:, 0].tolist())                          # unbatched, as nested lists of ints
    np.testing.assert_array_equal(Y_list, a.forward(X[:, 0])[0])
    with pytest.raises(TypeError, match=rf"^{Layer.__name__}\.forward: X has dtype complex128, expected real"):
        a.forward(X.astype(complex))


def test_integer_initial_state_and_state_gradient(rng):
    a, b = GRU(3, 4, num_layers=2, rng=0), GRU(3, 4, num_layers=2, rng=0)
    X, h0 = rng.standard_normal((5, 2, 3)), rng.integers(-1, 2, size=(2, 2, 4))
    d_hT = rng.integers(-1, 2, size=(2, 2, 4)) > 0                   # a boolean gradient: True is 1.0
    Y, h_T = a.forward(X, h0)
    Y_float, h_T_float = b.forward(X, h0.astype(float))
    np.testing.assert_array_equal(Y, Y_float)
    np.testing.assert_array_equal(h_T, h_T_float)
    dX, dh0 = a.backward(np.zeros_like(Y), d_hT)
    dX_float, dh0_float = b.backward(np.zeros_like(Y), d_hT.astype(float))
    np.testing.assert_array_equal(dX, dX_float)
    np.testing.assert_array_equal(dh0, dh0_float)
    assert np.abs(dX).sum() > 0


def test_linear_casts_integer_inputs(rng):
    layer = Linear(3, 2, rng=0)
    x = rng.integers(-3, 4, size=(4, 3))
    np.testing.assert_array_equal(layer.forward(x), Linear(3, 2, rng=0).forward(x.astype(float)))


# --------------------------------------------------------------------------------------------------
# GRUCell: the course's keyword names


def test_course_keywords_are_the_same_call(rng):
    x, h, delta = rng.standard_normal(3), rng.standard_normal(4), rng.standard_normal(4)
    cells = [GRUCell(3, 4, rng=0) for _ in range(3)]
    outs = [cells[0].forward(x, h), cells[1].forward(x, state=h), cells[2].forward(x, h_prev_t=h)]
    backs = [cells[0].backward(delta), cells[1].backward(d_state=delta), cells[2].backward(delta=delta)]
    for out, (dx, dh) in zip(outs[1:], backs[1:]):
        np.testing.assert_array_equal(out, outs[0])
        np.testing.assert_array_equal(dx, backs[0][0])
        np.testing.assert_array_equal(dh, backs[0][1])
    for cell in cells[1:]:
        for k in cell.grads:
            np.testing.assert_array_equal(cell.grads[k], cells[0].grads[k])


def test_both_spellings_are_an_error(rng):
    cell, h = GRUCell(3, 4, rng=0), np.zeros(4)
    with pytest.raises(TypeError, match=r"^GRUCell\.forward: got both state= and h_prev_t= \(the course's name "
                                        r"for state\); pass only one$"):
        cell.forward(np.zeros(3), h, h_prev_t=h)
    assert cell.pending_steps == 0
    cell.forward(np.zeros(3), h_prev_t=h)
    with pytest.raises(TypeError, match=r"^GRUCell\.backward: got both d_state= and delta="):
        cell.backward(np.ones(4), delta=np.ones(4))
    with pytest.raises(TypeError, match=r"^GRUCell\.backward: missing d_state, the gradient dL/dh' .*delta"):
        cell.backward()
    assert cell.pending_steps == 1                                   # neither error consumed the step
    cell.backward(None)                                              # None is still a zero gradient
    assert cell.pending_steps == 0


@needs_torch
def test_course_style_call_matches_torch_gru_cell():
    """CMU 11-785's toy test, as the course writes it: 1-D integer vectors from np.random.randint, weights
    split from a torch.nn.GRUCell in r, z, n order, forward(x, h_prev_t) and backward(delta)."""
    import torch

    np.random.seed(11785)
    I, H = 5, 2
    reference = torch.nn.GRUCell(I, H).double()
    w_ih, w_hh = reference.weight_ih.detach().numpy(), reference.weight_hh.detach().numpy()
    b_ih, b_hh = reference.bias_ih.detach().numpy(), reference.bias_hh.detach().numpy()
    Wrx, Wzx, Wnx = np.split(w_ih, 3)
    Wrh, Wzh, Wnh = np.split(w_hh, 3)
    brx, bzx, bnx = np.split(b_ih, 3)
    brh, bzh, bnh = np.split(b_hh, 3)
    cell = GRUCell(I, H)
    cell.init_weights(Wrx, Wzx, Wnx, Wrh, Wzh, Wnh, brx, bzx, bnx, brh, bzh, bnh)

    x = np.random.randint(-3, 4, size=I)                             # int64, 1-D
    h_prev_t = np.random.randint(-1, 2, size=H)
    delta = np.random.randint(-2, 3, size=H)
    h_t = cell.forward(x, h_prev_t=h_prev_t)
    dx, dh_prev_t = cell.backward(delta=delta)

    tx = torch.tensor(x[None], dtype=torch.float64, requires_grad=True)
    th = torch.tensor(h_prev_t[None], dtype=torch.float64, requires_grad=True)
    th_t = reference(tx, th)
    th_t.backward(torch.tensor(delta[None], dtype=torch.float64))
    assert h_t.shape == (H,) and dx.shape == (I,) and dh_prev_t.shape == (H,)
    np.testing.assert_allclose(h_t, th_t.detach().numpy()[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx, tx.grad.numpy()[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dh_prev_t, th.grad.numpy()[0], rtol=1e-10, atol=1e-12)
    grads = dict(zip(("dWrx", "dWzx", "dWnx"), np.split(reference.weight_ih.grad.numpy(), 3)))
    grads.update(zip(("dWrh", "dWzh", "dWnh"), np.split(reference.weight_hh.grad.numpy(), 3)))
    grads.update(zip(("dbrx", "dbzx", "dbnx"), np.split(reference.bias_ih.grad.numpy(), 3)))
    grads.update(zip(("dbrh", "dbzh", "dbnh"), np.split(reference.bias_hh.grad.numpy(), 3)))
    for name, expected in grads.items():
        np.testing.assert_allclose(getattr(cell, name), expected, rtol=1e-10, atol=1e-12, err_msg=name)
    assert cell.x.dtype == np.float64 and cell.x.shape == (I,)      # the course's stored attributes, cast

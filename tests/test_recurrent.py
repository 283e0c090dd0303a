"""The sequence layer: BPTT against finite differences, against a hand-written loop over the cells, and its
shapes, state forms, names and errors."""
import numpy as np
import pytest

import mytorch
from mytorch.nn import GMU, GRU, LSTM, RNN, TGRU, GRUBlock, GRUCell, Recurrent
from tests.conftest import GRADCHECK_TOL

LAYERS = [RNN, GRU, GRUBlock, GMU, TGRU, LSTM]
layer_ids = [c.__name__ for c in LAYERS]


def x_shape(T, N, I, batch_first):
    if N is None:
        return (T, I)
    return (N, T, I) if batch_first else (T, N, I)


@pytest.mark.parametrize("layer_class", LAYERS, ids=layer_ids)
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("T, N, batch_first", [(1, 2, False), (5, 3, False), (5, 1, True), (6, None, False)],
                         ids=["T1-N2", "T5-N3", "T5-N1-batch_first", "T6-unbatched"])
def test_bptt_matches_finite_differences(layer_class, num_layers, T, N, batch_first, rng):
    layer = layer_class(3, 4, num_layers=num_layers, batch_first=batch_first, rng=0)
    X = rng.standard_normal(x_shape(T, N, 3, batch_first))
    errors = mytorch.gradcheck(layer, X)
    assert set(layer.params) | {"x"} <= set(errors)
    assert max(errors.values()) <= GRADCHECK_TOL, errors


@pytest.mark.parametrize("layer_class", LAYERS, ids=layer_ids)
def test_bptt_with_initial_state(layer_class, rng):
    layer = layer_class(3, 4, num_layers=2, rng=0)
    with mytorch.no_grad():
        _, state0 = layer.forward(rng.standard_normal((3, 2, 3)))      # a state of the right structure
    errors = mytorch.gradcheck(layer, rng.standard_normal((4, 2, 3)), state0)
    assert any(k.startswith("state") for k in errors)
    assert max(errors.values()) <= GRADCHECK_TOL, errors


def test_tgru_trainable_initial_state_through_layers(rng):
    layer = TGRU(3, 4, num_layers=2, train_state=True, train_memory=True, rng=0)
    assert layer.params["memory_l0"].shape == (3,) and layer.params["memory_l1"].shape == (4,)
    errors = mytorch.gradcheck(layer, rng.standard_normal((5, 2, 3)))
    for key in ("hidden_state_l0", "hidden_state_l1", "memory_l0", "memory_l1"):
        assert errors[key] <= GRADCHECK_TOL


@pytest.mark.parametrize("layer_class", LAYERS, ids=layer_ids)
def test_layer_equals_a_loop_over_its_cells(layer_class, rng):
    """The layer is exactly: step each cell, feed h upward, and in reverse feed gradients back."""
    T, N, I, H = 4, 2, 3, 5
    layer = layer_class(I, H, num_layers=2, rng=0)
    X, dY = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, H))
    Y, _ = layer.forward(X)
    dX, _ = layer.backward(dY)

    cells = [type(c)(c.input_size, H, rng=9) for c in layer.cells]
    for mine, theirs in zip(cells, layer.cells):
        mine.load_state_dict(theirs.state_dict())
    states, outputs = [None, None], []
    for t in range(T):
        inp = X[t]
        for k, cell in enumerate(cells):
            states[k] = cell.forward(inp, states[k])
            inp = states[k] if isinstance(states[k], np.ndarray) else states[k][0]
        outputs.append(inp)
    np.testing.assert_allclose(Y, np.stack(outputs), rtol=1e-13, atol=1e-14)
    two_state = len(cells[0].state_names) == 2
    d_future, d_inputs = [None, None], []
    for t in reversed(range(T)):
        d_inp = dY[t]
        for k in (1, 0):
            if two_state:
                d_state = (d_inp if d_future[k] is None else d_future[k][0] + d_inp,
                           None if d_future[k] is None else d_future[k][1])
            else:
                d_state = d_inp if d_future[k] is None else d_future[k] + d_inp
            d_inp, d_future[k] = cells[k].backward(d_state)
        d_inputs.append(d_inp)
    np.testing.assert_allclose(dX, np.stack(d_inputs[::-1]), rtol=1e-12, atol=1e-14)
    for k, cell in enumerate(cells):
        for name, grad in cell.grads.items():
            np.testing.assert_allclose(layer.grads[f"{name}_l{k}"], grad, rtol=1e-12, atol=1e-14)


def test_shapes_and_state_forms(rng):
    gru = GRU(3, 4, num_layers=2, batch_first=True, rng=0)
    Y, h_n = gru.forward(rng.standard_normal((2, 5, 3)))
    assert Y.shape == (2, 5, 4) and h_n.shape == (2, 2, 4)
    dX, dh0 = gru.backward(np.ones_like(Y), np.ones_like(h_n))
    assert dX.shape == (2, 5, 3) and dh0.shape == (2, 2, 4)
    Y, h_n = gru.forward(rng.standard_normal((5, 3)))               # unbatched (T, I)
    assert Y.shape == (5, 4) and h_n.shape == (2, 4)
    assert gru.backward(np.ones((5, 4)))[0].shape == (5, 3)

    tgru = TGRU(3, 4, num_layers=2, rng=0)
    Y, states = tgru.forward(rng.standard_normal((5, 2, 3)))
    assert [tuple(p.shape for p in s) for s in states] == [((2, 4), (2, 3)), ((2, 4), (2, 4))]
    dX, d_states = tgru.backward(np.ones_like(Y), [(None, np.ones((2, 3))), None])
    assert [tuple(p.shape for p in s) for s in d_states] == [((2, 4), (2, 3)), ((2, 4), (2, 4))]


def test_final_state_continues_the_sequence(rng):
    """Running T1 then T2 steps from the returned state equals running T1+T2 steps at once."""
    gmu = GMU(3, 4, num_layers=2, rng=0)
    X = rng.standard_normal((7, 2, 3))
    Y_all, s_all = gmu.forward(X)
    Y1, s1 = gmu.forward(X[:3])
    Y2, s2 = gmu.forward(X[3:], s1)
    np.testing.assert_allclose(np.concatenate([Y1, Y2]), Y_all, rtol=1e-14)
    for a, b in zip(s2, s_all):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_names_follow_torch(rng):
    assert set(GRU(3, 4, num_layers=2).params) == {f"{w}_{k}_l{l}" for w in ("weight", "bias")
                                                   for k in ("ih", "hh") for l in (0, 1)}
    assert "w_ru_l1" in GRUBlock(3, 4, num_layers=2).params
    assert "weight_ch_m_l0" in GMU(3, 4).params
    assert "bias_ih_l0" not in RNN(3, 4, bias=False).params


def test_params_are_the_cells_arrays(rng):
    layer = GRU(3, 4, num_layers=2, rng=0)
    assert layer.params["weight_hh_l1"] is layer.cells[1].params["weight_hh"]
    layer.load_state_dict({k: np.full(v.shape, 0.5) for k, v in layer.params.items()})
    assert (layer.cells[1].params["weight_hh"] == 0.5).all()


def test_bad_inputs_name_what_is_wrong(rng):
    gru = GRU(3, 4, num_layers=2, rng=0)
    with pytest.raises(ValueError, match=r"GRU.forward: X has shape \(5, 2, 7\)"):
        gru.forward(np.zeros((5, 2, 7)))
    with pytest.raises(ValueError, match="X has shape"):
        gru.forward(np.zeros((0, 2, 3)))
    with pytest.raises(TypeError, match="X has dtype complex128"):
        gru.forward(np.zeros((5, 2, 3), dtype=np.complex128))
    with pytest.raises(ValueError, match="state0 has 3 layers, expected 2"):
        gru.forward(np.zeros((5, 2, 3)), np.zeros((3, 2, 4)))
    with pytest.raises(ValueError, match=r"GRU.forward: state0 has shape \(2, 3, 4\), expected \(2, 2, 4\) to match X's batch of 2"):
        gru.forward(np.zeros((5, 2, 3)), np.zeros((2, 3, 4)))
    with pytest.raises(RuntimeError, match="without a matching forward"):
        gru.backward(np.zeros((5, 2, 4)))
    gru.forward(np.zeros((5, 2, 3)))
    with pytest.raises(ValueError, match="dY has shape"):
        gru.backward(np.zeros((4, 2, 4)))
    gru.backward(np.zeros((5, 2, 4)))                  # the rejected call consumed nothing


def test_forward_starts_a_new_sequence(rng):
    """A forward that is never backpropagated (evaluation) must not corrupt the next backward."""
    layer = GRU(3, 4, rng=0)
    X, dY = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 2, 4))
    layer.forward(X)
    layer.backward(dY)
    expected = {k: g.copy() for k, g in layer.grads.items()}
    layer.zero_grad()
    layer.forward(rng.standard_normal((6, 2, 3)))       # evaluation only
    layer.forward(X)
    layer.backward(dY)
    for k in expected:
        np.testing.assert_allclose(layer.grads[k], expected[k], rtol=1e-14)
    assert all(c.pending_steps == 0 for c in layer.cells)


def test_recurrent_accepts_any_cell_factory():
    layer = Recurrent(GRUCell, 2, 3, num_layers=2, bias=False)
    assert layer.cells[1].input_size == 3 and not layer.cells[0].bias
    with pytest.raises(ValueError, match="num_layers"):
        Recurrent(GRUCell, 2, 3, num_layers=0)

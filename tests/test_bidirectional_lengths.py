"""Sequence layers in both directions and on padded batches of unequal lengths: equal to torch.nn (RNN, GRU, LSTM
with pack_padded_sequence), to hand-stepped cells (GMU, TGRU, GRUBlock), to finite differences; padded steps get
exactly zero gradient; the fast-path dispatch of the layer."""
import numpy as np
import pytest

import mytorch
from mytorch.nn import GMU, GRU, LSTM, RNN, TGRU, GMUCell, GRUBlock, GRUBlockCell, GRUCell, TGRUCell
from mytorch.nn.recurrent import Recurrent
from tests.conftest import GRADCHECK_TOL, HAS_TORCH, lazy_torch, needs_torch

if HAS_TORCH:
    torch = lazy_torch()

LAYERS = [RNN, GRU, GRUBlock, GMU, TGRU, LSTM]
layer_ids = [c.__name__ for c in LAYERS]


def random_state0(layer, rng, n):
    """A random state0 in the layer's own form (built by running it once under no_grad)."""
    with mytorch.no_grad():
        X = rng.standard_normal((2, n, layer.input_size))
        _, state = layer.forward(X)
    if isinstance(state, np.ndarray):
        return rng.standard_normal(state.shape)
    if isinstance(state, tuple):
        return tuple(rng.standard_normal(s.shape) for s in state)
    return [tuple(rng.standard_normal(p.shape) for p in s) for s in state]


# --------------------------------------------------------------------------------------------------
# finite differences


@pytest.mark.parametrize("layer_class", LAYERS, ids=layer_ids)
@pytest.mark.parametrize("with_lengths", [False, True], ids=["full", "lengths"])
def test_bidirectional_two_layers_finite_differences(layer_class, with_lengths, rng):
    layer = layer_class(3, 2, num_layers=2, bidirectional=True, rng=0)
    X = rng.standard_normal((4, 3, 3))
    lengths = np.array([2, 4, 1]) if with_lengths else None
    errors = mytorch.gradcheck(layer, X, random_state0(layer, rng, 3), lengths=lengths)
    assert {"x", "weight_ih_l1_reverse" if layer_class not in (GRUBlock,) else "w_ru_l1_reverse"} <= set(errors)
    assert max(errors.values()) <= GRADCHECK_TOL, errors


@pytest.mark.parametrize("layer_class", [GRU, LSTM, TGRU], ids=["GRU", "LSTM", "TGRU"])
def test_unbatched_and_batch_first_with_lengths(layer_class, rng):
    layer = layer_class(3, 2, bidirectional=True, batch_first=True, rng=0)
    errors = mytorch.gradcheck(layer, rng.standard_normal((2, 4, 3)), lengths=[4, 2])
    assert max(errors.values()) <= GRADCHECK_TOL, errors
    errors = mytorch.gradcheck(layer, rng.standard_normal((4, 3)), lengths=3)
    assert max(errors.values()) <= GRADCHECK_TOL, errors


def test_tgru_trainable_initial_state_in_both_directions(rng):
    layer = TGRU(3, 2, num_layers=2, bidirectional=True, train_state=True, train_memory=True, rng=0)
    assert layer.params["memory_l1_reverse"].shape == (4,)             # layer 1 reads 2H
    errors = mytorch.gradcheck(layer, rng.standard_normal((4, 2, 3)), lengths=[4, 2])
    for key in ("hidden_state_l0", "hidden_state_l0_reverse", "memory_l1", "memory_l1_reverse"):
        assert 0 < errors[key] <= GRADCHECK_TOL or (errors[key] == 0 and layer.grads[key].any()), key
    assert max(errors.values()) <= GRADCHECK_TOL, errors


# --------------------------------------------------------------------------------------------------
# two hand-stepped cells


def hand_direction(cell, X, state, lengths, reverse):
    """One direction stepped by hand, the padding handled with explicit per-sequence bookkeeping."""
    T, N = X.shape[:2]
    two = len(cell.state_names) == 2
    Y = np.zeros((T, N, cell.hidden_size))
    for t in (reversed(range(T)) if reverse else range(T)):
        new = cell.forward(X[t], state)
        for n in range(N):
            if t < lengths[n]:
                Y[t, n] = (new[0] if two else new)[n]
        keep = np.array([t < length for length in lengths])[:, None]
        state = tuple(np.where(keep, a, b) for a, b in zip(new, state)) if two else np.where(keep, new, state)
    return Y, state


def hand_backward(cell, dY, d_state, lengths, reverse):
    T, N = dY.shape[:2]
    two = len(cell.state_names) == 2
    dX = np.zeros((T, N, cell.input_size))
    for t in (range(T) if reverse else reversed(range(T))):
        keep = np.array([t < length for length in lengths])[:, None]
        if two:
            d_in = (np.where(keep, d_state[0] + dY[t], 0.0), np.where(keep, d_state[1], 0.0))
            dx, d_prev = cell.backward(d_in)
            d_state = tuple(p + np.where(keep, 0.0, d) for p, d in zip(d_prev, d_state))
        else:
            dx, d_prev = cell.backward(np.where(keep, d_state + dY[t], 0.0))
            d_state = d_prev + np.where(keep, 0.0, d_state)
        dX[t] = dx
    return dX, d_state


@pytest.mark.parametrize("layer_class, cell_class", [(GMU, GMUCell), (TGRU, TGRUCell), (GRUBlock, GRUBlockCell)],
                         ids=["GMU", "TGRU", "GRUBlock"])
@pytest.mark.parametrize("lengths", [None, [5, 2, 4]], ids=["full", "lengths"])
def test_bidirectional_layer_is_two_hand_stepped_cells(layer_class, cell_class, lengths, rng):
    T, N, I, H = 5, 3, 4, 3
    layer = layer_class(I, H, bidirectional=True, rng=0)
    fwd, rev = cell_class(I, H, rng=5), cell_class(I, H, rng=6)
    fwd.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items() if k.endswith("_l0")})
    rev.load_state_dict({k[:-11]: v for k, v in layer.state_dict().items() if k.endswith("_l0_reverse")})
    X, dY = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, 2 * H))
    state0 = random_state0(layer, rng, N)
    d_state_T = random_state0(layer, rng, N)
    Y, state_T = layer.forward(X, state0, lengths=lengths)
    dX, d_state0 = layer.backward(dY, d_state_T)

    full = [T] * N if lengths is None else lengths
    as_state = (lambda s: tuple(s)) if layer_class is not GRUBlock else (lambda s: s)
    Y_f, s_f = hand_direction(fwd, X, as_state(state0[0]), full, reverse=False)
    Y_r, s_r = hand_direction(rev, X, as_state(state0[1]), full, reverse=True)
    np.testing.assert_allclose(Y, np.concatenate([Y_f, Y_r], axis=2), rtol=1e-13, atol=1e-15)
    for mine, theirs in ((state_T[0], s_f), (state_T[1], s_r)):
        for a, b in zip(np.atleast_1d(mine) if layer_class is GRUBlock else mine, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
    dX_r, d0_r = hand_backward(rev, dY[:, :, H:], as_state(d_state_T[1]), full, reverse=True)
    dX_f, d0_f = hand_backward(fwd, dY[:, :, :H], as_state(d_state_T[0]), full, reverse=False)
    np.testing.assert_allclose(dX, dX_f + dX_r, rtol=1e-12, atol=1e-14)
    for mine, theirs in ((d_state0[0], d0_f), (d_state0[1], d0_r)):
        for a, b in zip(mine, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for cell, suffix in ((fwd, "_l0"), (rev, "_l0_reverse")):
        for name, grad in cell.grads.items():
            np.testing.assert_allclose(layer.grads[name + suffix], grad, rtol=1e-12, atol=1e-14, err_msg=name + suffix)


# --------------------------------------------------------------------------------------------------
# padding


def flatten(structure):
    if isinstance(structure, (tuple, list)):
        return [a for part in structure for a in flatten(part)]
    return [structure]


@pytest.mark.parametrize("layer_class", LAYERS, ids=layer_ids)
def test_padded_steps_get_exactly_zero_gradient(layer_class, rng):
    """Garbage in the padding (inputs and upstream gradients) changes nothing, and its dX is exactly zero."""
    T, N, I, H = 6, 4, 3, 2
    lengths = np.array([6, 2, 4, 1])
    pad = np.arange(T)[:, None] >= lengths[None, :]                   # T,N
    layer = layer_class(I, H, num_layers=2, bidirectional=True, rng=0)
    X, dY = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, 2 * H))
    runs = []
    for garbage in (0.0, 1e3):
        layer.zero_grad()
        Xg, dYg = X.copy(), dY.copy()
        Xg[pad] = garbage * rng.standard_normal((pad.sum(), I))
        dYg[pad] = garbage * rng.standard_normal((pad.sum(), 2 * H))
        Y, state_T = layer.forward(Xg, lengths=lengths)
        dX, d_state0 = layer.backward(dYg)
        assert (Y[pad] == 0).all()
        assert (dX[pad] == 0).all()
        runs.append((Y, state_T, dX, d_state0, {k: g.copy() for k, g in layer.grads.items()}))
    (Y0, s0, dX0, d0, g0), (Y1, s1, dX1, d1, g1) = runs
    np.testing.assert_array_equal(Y0, Y1)
    np.testing.assert_array_equal(dX0, dX1)
    for a, b in zip(flatten([s0, d0]), flatten([s1, d1])):
        np.testing.assert_array_equal(a, b)
    for k in g0:
        np.testing.assert_array_equal(g0[k], g1[k], err_msg=k)


def test_lengths_equal_to_truncated_sequences(rng):
    """Each sequence alone, cut at its length, gives the same Y and final state as the padded batch."""
    layer = LSTM(3, 4, num_layers=2, bidirectional=True, rng=0)
    X, lengths = rng.standard_normal((5, 3, 3)), [3, 5, 1]
    Y, (h_n, c_n) = layer.forward(X, lengths=lengths)
    for n, length in enumerate(lengths):
        Y_n, (h, c) = layer.forward(X[:length, n:n + 1])
        np.testing.assert_allclose(Y[:length, n:n + 1], Y_n, rtol=1e-13)
        np.testing.assert_allclose(h_n[:, n:n + 1], h, rtol=1e-13)
        np.testing.assert_allclose(c_n[:, n:n + 1], c, rtol=1e-13)


def test_lengths_are_checked(rng):
    gru = GRU(3, 4, rng=0)
    X = np.zeros((5, 2, 3))
    with pytest.raises(ValueError, match=r"GRU.forward: lengths has shape \(3,\), expected \(2,\)"):
        gru.forward(X, lengths=[1, 2, 3])
    with pytest.raises(TypeError, match="GRU.forward: lengths has dtype float64, expected integers"):
        gru.forward(X, lengths=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"lengths must lie between 0 and T = 5, got \[6, 2\]"):
        gru.forward(X, lengths=[6, 2])
    with pytest.raises(ValueError, match="X is unbatched"):
        gru.forward(np.zeros((5, 3)), lengths=[1, 2])
    Y, _ = gru.forward(X, lengths=[0, 5])                             # an empty sequence: zeros, state0 kept
    assert (Y[:, 0] == 0).all()


# --------------------------------------------------------------------------------------------------
# state forms and names


def test_lstm_state_form_and_names(rng):
    lstm = LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2, rng=0)
    assert set(lstm.params) == {f"{w}_l{l}{r}" for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
                                for l in (0, 1) for r in ("", "_reverse")}
    assert lstm.params["weight_ih_l1"].shape == (16, 4) and lstm.params["weight_hh_l1"].shape == (16, 2)
    Y, (h_n, c_n) = lstm.forward(rng.standard_normal((5, 3, 3)))
    assert Y.shape == (5, 3, 4) and h_n.shape == (4, 3, 2) and c_n.shape == (4, 3, 4)
    dX, (dh0, dc0) = lstm.backward(np.ones_like(Y), (None, np.ones_like(c_n)))
    assert dX.shape == (5, 3, 3) and dh0.shape == (4, 3, 2) and dc0.shape == (4, 3, 4)
    Y, (h_n, c_n) = lstm.forward(rng.standard_normal((5, 3)), (np.zeros((4, 2)), None))    # unbatched
    assert Y.shape == (5, 4) and h_n.shape == (4, 2) and c_n.shape == (4, 4)
    with pytest.raises(ValueError, match=r"LSTM.forward: state0\[1\] \(c\) has 2 entries, expected 4 entries"):
        lstm.forward(np.zeros((5, 3, 3)), (None, np.zeros((2, 3, 4))))
    with pytest.raises(ValueError, match=r"state0 must be a tuple \(h, c\) of arrays"):
        lstm.forward(np.zeros((5, 3, 3)), np.zeros((4, 3, 2)))
    with pytest.raises(ValueError, match=r"state0\[0\] \(h\) has shape \(4, 3, 4\), expected \(4, 3, 2\) to match X's batch of 3"):
        lstm.forward(np.zeros((5, 3, 3)), (np.zeros((4, 3, 4)), None))


def test_bidirectional_state_forms(rng):
    gru = GRU(3, 4, num_layers=2, bidirectional=True, rng=0)
    Y, h_n = gru.forward(rng.standard_normal((5, 2, 3)))
    assert Y.shape == (5, 2, 8) and h_n.shape == (4, 2, 4)
    assert gru.cells[2].input_size == 8
    gmu = GMU(3, 4, bidirectional=True, rng=0)
    Y, states = gmu.forward(rng.standard_normal((5, 2, 3)))
    assert len(states) == 2 and all(p.shape == (2, 4) for s in states for p in s)
    dX, d_states = gmu.backward(np.ones_like(Y), [None, (np.ones((2, 4)), None)])
    assert dX.shape == (5, 2, 3) and all(p.shape == (2, 4) for s in d_states for p in s)
    with pytest.raises(ValueError, match="GMU.forward: state0 must be a list of 2 cell states"):
        gmu.forward(rng.standard_normal((5, 2, 3)), [None])


def test_explicit_layer_classes_have_their_signatures():
    import inspect
    assert list(inspect.signature(RNN).parameters)[:5] == ["input_size", "hidden_size", "num_layers",
                                                           "nonlinearity", "bias"]
    assert "proj_size" in inspect.signature(LSTM).parameters
    for cls in LAYERS:
        assert cls.__doc__ and cls.__module__ == "mytorch.nn.recurrent"
        assert "bidirectional" in inspect.signature(cls).parameters


# --------------------------------------------------------------------------------------------------
# the fast-path dispatch


class LoopedGRUCell(GRUCell):
    """A cell with a 'fast path' that is the per-step loop itself, counting its calls."""

    calls = []

    def sequence_forward(self, X, state0, lengths=None, reverse=False):
        self.calls.append(("forward", reverse))
        layer = Recurrent(GRUCell, 1, 1)                          # borrow the loop of a layer with no fast path
        layer.fast_path = False
        Y, state = layer._run_direction(self, X, state0, lengths, reverse)
        self._loop = (layer, lengths, reverse)
        return Y, state

    def sequence_backward(self, dY, d_state_T):
        self.calls.append(("backward",))
        layer, lengths, reverse = self._loop
        return layer._backward_direction(self, dY, d_state_T, lengths, reverse)


@pytest.mark.parametrize("fast_path", [True, False])
def test_fast_path_is_tried_first_and_remembered(fast_path, rng):
    reference = GRU(3, 4, num_layers=2, bidirectional=True, rng=0)
    reference.fast_path = False                                  # the per-step loop, bit for bit
    layer = Recurrent(LoopedGRUCell, 3, 4, num_layers=2, bidirectional=True, rng=0)
    layer.fast_path = fast_path
    LoopedGRUCell.calls.clear()
    X, dY, lengths = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 2, 8)), [4, 2]
    Y, h_n = layer.forward(X, lengths=lengths)
    dX, dh0 = layer.backward(dY)
    Y_ref, h_ref = reference.forward(X, lengths=lengths)
    dX_ref, dh0_ref = reference.backward(dY)
    np.testing.assert_array_equal(Y, Y_ref)
    np.testing.assert_array_equal(dX, dX_ref)
    np.testing.assert_array_equal(dh0, dh0_ref)
    for k in reference.grads:
        np.testing.assert_array_equal(layer.grads[k], reference.grads[k])
    if fast_path:
        assert LoopedGRUCell.calls == [("forward", False), ("forward", True)] * 2 + [("backward",)] * 4
    else:
        assert LoopedGRUCell.calls == []


# --------------------------------------------------------------------------------------------------
# torch.nn as the oracle

TORCH = {"rnn": (RNN, "RNN"), "gru": (GRU, "GRU"), "lstm": (LSTM, "LSTM")}


def build_pair(kind, I, H, L, batch_first, proj_size=0, seed=0):
    mine_class, torch_name = TORCH[kind]
    extra = {"proj_size": proj_size} if proj_size else {}
    torch.manual_seed(seed)
    theirs = getattr(torch.nn, torch_name)(I, H, num_layers=L, batch_first=batch_first, bidirectional=True,
                                           **extra).double()
    mine = mine_class(I, H, num_layers=L, batch_first=batch_first, bidirectional=True, **extra)
    mine.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return mine, theirs


def close(mine, theirs, what):
    np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=what)


def states_of(kind, L, N, H, P, rng):
    h0 = rng.standard_normal((2 * L, N, P or H))
    return (h0, rng.standard_normal((2 * L, N, H))) if kind == "lstm" else h0


@needs_torch
@pytest.mark.parametrize("kind, proj_size", [("rnn", 0), ("gru", 0), ("lstm", 0), ("lstm", 2)],
                         ids=["RNN", "GRU", "LSTM", "LSTM-proj"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-major", "batch_first"])
@pytest.mark.parametrize("T", [1, 5])
def test_bidirectional_matches_torch(kind, proj_size, batch_first, T, rng):
    I, H, N, L = 3, 4, 2, 2
    mine, theirs = build_pair(kind, I, H, L, batch_first, proj_size)
    X = rng.standard_normal((N, T, I) if batch_first else (T, N, I))
    state0 = states_of(kind, L, N, H, proj_size, rng)
    width = 2 * (proj_size or H)
    wY = rng.standard_normal(X.shape[:-1] + (width,))
    w_state = states_of(kind, L, N, H, proj_size, rng)
    Xt = torch.tensor(X, requires_grad=True)
    s0t = tuple(torch.tensor(s, requires_grad=True) for s in state0) if kind == "lstm" else \
        torch.tensor(state0, requires_grad=True)
    Yt, sTt = theirs(Xt, s0t)
    loss = (Yt * torch.tensor(wY)).sum()
    pairs = zip(sTt, w_state) if kind == "lstm" else [(sTt, w_state)]
    for s, w in pairs:
        loss = loss + (s * torch.tensor(w)).sum()
    loss.backward()
    Y, state_T = mine.forward(X, state0)
    dX, d_state0 = mine.backward(wY, w_state)
    close(Y, Yt, "Y")
    close(dX, Xt.grad, "dX")
    if kind == "lstm":
        for k, name in enumerate(("h", "c")):
            close(state_T[k], sTt[k], f"{name}_n")
            close(d_state0[k], s0t[k].grad, f"d{name}_0")
    else:
        close(state_T, sTt, "h_n")
        close(d_state0, s0t.grad, "dh_0")
    for name, p in theirs.named_parameters():
        close(mine.grads[name], p.grad, name)


@needs_torch
@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("bidirectional_torch", [False, True], ids=["one-direction", "bidirectional"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-major", "batch_first"])
def test_lengths_match_pack_padded_sequence(kind, bidirectional_torch, batch_first, rng):
    """Unsorted lengths, enforce_sorted=False; Y through pad_packed_sequence; every gradient."""
    I, H, N, L, T = 3, 4, 4, 2, 6
    lengths = [4, 6, 1, 3]
    mine_class, torch_name = TORCH[kind]
    torch.manual_seed(3)
    theirs = getattr(torch.nn, torch_name)(I, H, num_layers=L, batch_first=batch_first,
                                           bidirectional=bidirectional_torch).double()
    mine = mine_class(I, H, num_layers=L, batch_first=batch_first, bidirectional=bidirectional_torch)
    mine.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    D = 2 if bidirectional_torch else 1
    X = rng.standard_normal((N, T, I) if batch_first else (T, N, I))
    wY = rng.standard_normal(X.shape[:-1] + (D * H,))
    state0 = rng.standard_normal((D * L, N, H))
    w_h, w_c = rng.standard_normal((D * L, N, H)), rng.standard_normal((D * L, N, H))
    Xt, h0t = torch.tensor(X, requires_grad=True), torch.tensor(state0, requires_grad=True)
    c0t = torch.zeros(D * L, N, H, dtype=torch.float64, requires_grad=True)
    rnn_utils = torch.nn.utils.rnn
    packed = rnn_utils.pack_padded_sequence(Xt, torch.tensor(lengths), batch_first=batch_first, enforce_sorted=False)
    out, s_n = theirs(packed, (h0t, c0t) if kind == "lstm" else h0t)
    Yt, _ = rnn_utils.pad_packed_sequence(out, batch_first=batch_first, total_length=T)
    h_nt = s_n[0] if kind == "lstm" else s_n
    loss = (Yt * torch.tensor(wY)).sum() + (h_nt * torch.tensor(w_h)).sum()
    if kind == "lstm":
        loss = loss + (s_n[1] * torch.tensor(w_c)).sum()
    loss.backward()
    s0 = (state0, None) if kind == "lstm" else state0
    Y, s_T = mine.forward(X, s0, lengths=np.array(lengths))
    dX, d_s0 = mine.backward(wY, (w_h, w_c) if kind == "lstm" else w_h)
    close(Y, Yt, "Y")
    close(dX, Xt.grad, "dX")
    if kind == "lstm":
        close(s_T[0], s_n[0], "h_n")
        close(s_T[1], s_n[1], "c_n")
        close(d_s0[0], h0t.grad, "dh_0")
        close(d_s0[1], c0t.grad, "dc_0")
    else:
        close(s_T, s_n, "h_n")
        close(d_s0, h0t.grad, "dh_0")
    for name, p in theirs.named_parameters():
        close(mine.grads[name], p.grad, name)

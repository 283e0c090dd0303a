"""The cell contract (mytorch/nn/cell.py): state, BPTT record, accumulation, no stale caches, no mutation, errors,
state_dict, and the GRUCell interface of CMU 11-785's GRU handout."""
import numpy as np
import pytest

import mytorch
from mytorch.nn import GMUCell, GRUBlockCell, GRUCell, RNNCell, TGRUCell, init
from mytorch.optim import SGD
from tests.conftest import random_state


def run_sequence(cell, xs, dhs, state=None):
    """T forwards then T backwards on one cell; returns the dx per step (a loss on h only)."""
    two = len(cell.state_names) == 2
    for x in xs:
        state = cell.forward(x, state)
    d_state, dxs = None, []
    for dh in reversed(dhs):
        if two:
            d_state = (dh if d_state is None else d_state[0] + dh, None if d_state is None else d_state[1])
        else:
            d_state = dh if d_state is None else d_state + dh
        dx, d_state = cell.backward(d_state)
        dxs.append(dx)
    return dxs[::-1]


def test_bptt_on_one_object_equals_sum_of_per_step_gradients(cell_class, rng):
    """T forwards then T backwards accumulate; a second sequence gives the same again (no stale cache)."""
    cell = cell_class(3, 4, rng=0)
    xs, dhs = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2, 4))
    dx1 = run_sequence(cell, xs, dhs)
    first = {k: g.copy() for k, g in cell.grads.items()}
    assert cell.pending_steps == 0
    run_sequence(cell, rng.standard_normal((3, 2, 3)), rng.standard_normal((3, 2, 4)))   # another sequence
    cell.zero_grad()
    assert all((g == 0).all() for g in cell.grads.values())
    dx2 = run_sequence(cell, xs, dhs)
    for k in first:
        np.testing.assert_allclose(cell.grads[k], first[k], rtol=1e-14)
    np.testing.assert_allclose(dx1, dx2, rtol=1e-14)
    run_sequence(cell, xs, dhs)                                  # without zero_grad: accumulates
    for k in first:
        np.testing.assert_allclose(cell.grads[k], 2 * first[k], rtol=1e-13)


def test_gradients_correct_after_an_optimizer_step(cell_class, rng):
    cell = cell_class(3, 4, rng=0)
    xs, dhs = rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 2, 4))
    run_sequence(cell, xs, dhs)
    SGD(cell, lr=0.1).step()
    cell.zero_grad()
    x = rng.standard_normal((2, 3))
    errors = mytorch.gradcheck(cell, x, random_state(cell, rng, 2))
    assert max(errors.values()) < 1e-6
    fresh = cell_class(3, 4, rng=5)                              # same parameters, built from scratch
    fresh.load_state_dict(cell.state_dict())
    run_sequence(cell, xs, dhs)
    run_sequence(fresh, xs, dhs)
    for k in cell.grads:
        np.testing.assert_allclose(cell.grads[k], fresh.grads[k], rtol=1e-14)


def test_backward_without_forward(cell_class):
    cell = cell_class(2, 3)
    with pytest.raises(RuntimeError, match=f"{cell_class.__name__}.backward: called without a matching forward"):
        cell.backward(np.zeros(3) if len(cell.state_names) == 1 else (np.zeros(3), None))
    cell.forward(np.zeros(2))
    cell.backward(None)
    with pytest.raises(RuntimeError, match="a loop that calls backward more often than forward"):
        cell.backward(None)


def test_no_grad_records_nothing(cell_class):
    cell = cell_class(2, 3)
    with mytorch.no_grad():
        cell.forward(np.ones(2))
    assert cell.pending_steps == 0
    with pytest.raises(RuntimeError):
        cell.backward(None)


def parts(state):
    """A state (array or tuple) as a list of its arrays."""
    return list(state) if isinstance(state, tuple) else [state]


def like(state, fill):
    """A gradient of the same structure as ``state``, filled with ``fill``."""
    grads = tuple(np.full_like(a, fill) for a in parts(state))
    return grads if isinstance(state, tuple) else grads[0]


def test_nothing_is_mutated(cell_class, rng):
    cell = cell_class(3, 4, rng=0)
    x, state = rng.standard_normal((2, 3)), random_state(cell, rng, 2)
    inputs = [x] + parts(state)
    before, params0 = [a.copy() for a in inputs], cell.state_dict()
    d = like(cell.forward(x, state), 1.0)
    d0 = [a.copy() for a in parts(d)]
    cell.backward(d)
    for a, b in zip(inputs + parts(d), before + d0):
        np.testing.assert_array_equal(a, b)
    for k, v in params0.items():
        np.testing.assert_array_equal(cell.params[k], v)


def test_cache_is_safe_from_later_changes_to_the_input(cell_class, rng):
    cell = cell_class(3, 4, rng=0)
    x = rng.standard_normal((2, 3))
    expected_dx = None
    for poke in (False, True):
        cell.zero_grad()
        out = cell.forward(x.copy() if not poke else x, None)
        if poke:
            x[...] = 99.0                                        # the caller reuses its buffer
        dx, _ = cell.backward(like(out, 1.0))
        if expected_dx is None:
            expected_dx = dx
    np.testing.assert_array_equal(dx, expected_dx)


def test_unbatched_is_a_batch_of_one(cell_class, rng):
    a, b = cell_class(3, 4, rng=0), cell_class(3, 4, rng=0)
    x = rng.standard_normal(3)
    out1, out2 = a.forward(x), b.forward(x[None])
    for p, q in zip(parts(out1), parts(out2)):
        assert p.ndim == 1 and q.shape == (1,) + p.shape
        np.testing.assert_allclose(p, q[0], rtol=1e-15)
    for field in cell_class.exposed:
        assert getattr(a, field).ndim == 1 and getattr(b, field).ndim == 2
    dx1, ds1 = a.backward(like(out1, 1.0))
    dx2, ds2 = b.backward(like(out2, 1.0))
    assert dx1.shape == (3,) and dx2.shape == (1, 3)
    for p, q in zip(parts(ds1), parts(ds2)):
        np.testing.assert_allclose(p, q[0], rtol=1e-15)


BAD_INPUTS = [
    ("x wrong ndim", lambda c: c.forward(np.zeros((1, 2, 3))), ValueError, r"x has shape \(1, 2, 3\), expected \(N, 3\) or \(3,\)"),
    ("x wrong size", lambda c: c.forward(np.zeros((4, 7))), ValueError, r"x has shape \(4, 7\), expected \(N, 3\) or \(3,\)"),
    ("x complex", lambda c: c.forward(np.zeros((4, 3), dtype=complex)), TypeError, "x has dtype complex128"),
    ("x string", lambda c: c.forward("abc"), TypeError, "x has dtype <U3"),
    ("x ragged", lambda c: c.forward([[1.0, 2.0, 3.0], [1.0]]), ValueError, "x is not an array"),
]


@pytest.mark.parametrize("label, call, error, message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_inputs_name_cell_and_argument(cell_class, label, call, error, message):
    cell = cell_class(3, 4)
    with pytest.raises(error, match=f"^{cell_class.__name__}.forward: {message}"):
        call(cell)
    assert cell.pending_steps == 0


def test_bad_states_name_cell_and_argument(cell_class, rng):
    cell, name = cell_class(3, 4), cell_class.__name__
    two = len(cell.state_names) == 2
    good = random_state(cell, rng, 2)
    if not two:
        with pytest.raises(ValueError, match=rf"^{name}.forward: state has shape \(3, 4\), expected \(2, 4\) to match x's batch of 2"):
            cell.forward(np.zeros((2, 3)), np.zeros((3, 4)))
        with pytest.raises(ValueError, match=r"state has shape \(2, 4\), expected \(4,\) because x is unbatched"):
            cell.forward(np.zeros(3), good)
        with pytest.raises(TypeError, match=rf"^{name}.forward: state must be one array"):
            cell.forward(np.zeros((2, 3)), (good, good))
        with pytest.raises(TypeError, match=rf"^{name}.forward: state has dtype complex128"):
            cell.forward(np.zeros((2, 3)), good.astype(complex))
    else:
        part = cell.state_names[1]
        with pytest.raises(ValueError, match=rf"^{name}.forward: state must be a tuple \(h, {part}\) of 2 arrays, got length 3"):
            cell.forward(np.zeros((2, 3)), good + (good[0],))
        with pytest.raises(ValueError, match=rf"state must be a tuple \(h, {part}\) of 2 arrays, got ndarray"):
            cell.forward(np.zeros((2, 3)), good[0])
        with pytest.raises(ValueError, match=rf"^{name}.forward: state\[1\] \({part}\) has shape \(5, {cell.state_widths[1]}\), expected \(2, {cell.state_widths[1]}\)"):
            cell.forward(np.zeros((2, 3)), (good[0], np.zeros((5, cell.state_widths[1]))))
    out = cell.forward(np.zeros((2, 3)), good)                      # a bad d_state consumes nothing
    bad = (np.zeros((3, 4)), None) if two else np.zeros((3, 4))
    with pytest.raises(ValueError, match=rf"^{name}.backward: d_state.* has shape \(3, 4\), expected \(2, 4\)"):
        cell.backward(bad)
    assert cell.pending_steps == 1
    cell.backward(like(out, 0.0))


def test_constructor_errors():
    with pytest.raises(ValueError, match="GRUCell: hidden_size must be a positive integer, got 0"):
        GRUCell(3, 0)
    with pytest.raises(ValueError, match="input_size must be a positive integer"):
        RNNCell(2.5, 3)
    with pytest.raises(ValueError, match="nonlinearity must be 'tanh' or 'relu'"):
        RNNCell(2, 3, nonlinearity="sigmoid")
    with pytest.raises(TypeError, match="dtype must be a floating type"):
        GMUCell(2, 3, dtype=np.int32)


def test_state_dict_round_trip_and_errors(cell_class):
    a, b = cell_class(3, 4, rng=0), cell_class(3, 4, rng=1)
    b.load_state_dict(a.state_dict())
    for k in a.params:
        np.testing.assert_array_equal(a.params[k], b.params[k])
    sd = a.state_dict()
    sd[next(iter(sd))][...] = 42.0                                    # a copy: the cell is untouched
    assert not (a.params[next(iter(sd))] == 42.0).all()
    key = next(iter(sd))
    with pytest.raises(KeyError, match="missing keys"):
        b.load_state_dict({k: v for k, v in sd.items() if k != key})
    wrong = dict(sd, **{key: np.zeros((1, 1))})
    before = b.state_dict()
    with pytest.raises(ValueError, match=f"'{key}' has shape \\(1, 1\\)"):
        b.load_state_dict(wrong)
    for k in before:                                                  # nothing changed
        np.testing.assert_array_equal(b.params[k], before[k])


def test_float32_cells_compute_in_float32(cell_class, rng):
    cell = cell_class(3, 4, dtype=np.float32, rng=0)
    out = cell.forward(rng.standard_normal((2, 3)))
    assert all(p.dtype == np.float32 for p in parts(out))
    dx, _ = cell.backward(like(out, 1.0))
    assert dx.dtype == np.float32 and all(g.dtype == np.float32 for g in cell.grads.values())


def test_default_initialisation_bounds(rng):
    for cls in (RNNCell, GRUCell, GMUCell, TGRUCell):
        cell = cls(3, 16, rng=0)
        for k, v in cell.params.items():
            assert np.abs(v).max() <= 0.25 and np.abs(v).max() > 0.2, k      # U(±1/sqrt(16))
    assert not np.array_equal(GRUCell(3, 4, rng=0).params["weight_ih"], GRUCell(3, 4, rng=1).params["weight_ih"])
    np.testing.assert_array_equal(GRUCell(3, 4, rng=7).params["weight_hh"], GRUCell(3, 4, rng=7).params["weight_hh"])


# --------------------------------------------------------------------------------------------------
# the interface of CMU 11-785's GRU handout


def test_course_interface_one_dimensional(rng):
    I, H = 5, 2
    cell = GRUCell(I, H, rng=0)
    pieces = {n: rng.standard_normal((H, I) if n.endswith("x") and n.startswith("W") else
                                     (H, H) if n.startswith("W") else H)
              for n in ("Wrx", "Wzx", "Wnx", "Wrh", "Wzh", "Wnh", "brx", "bzx", "bnx", "brh", "bzh", "bnh")}
    cell.init_weights(**pieces)
    np.testing.assert_array_equal(cell.params["weight_ih"], np.vstack([pieces["Wrx"], pieces["Wzx"], pieces["Wnx"]]))
    np.testing.assert_array_equal(cell.params["bias_hh"], np.concatenate([pieces["brh"], pieces["bzh"], pieces["bnh"]]))
    x, h = rng.standard_normal(I), rng.standard_normal(H)
    h_t = cell.forward(x, h)
    # the handout's equations, written from its table with the separate matrices
    def sig(a):
        return 1 / (1 + np.exp(-a))
    P = pieces
    r = sig(P["Wrx"] @ x + P["brx"] + P["Wrh"] @ h + P["brh"])
    z = sig(P["Wzx"] @ x + P["bzx"] + P["Wzh"] @ h + P["bzh"])
    n = np.tanh(P["Wnx"] @ x + P["bnx"] + r * (P["Wnh"] @ h + P["bnh"]))
    for name, value in (("x", x), ("hidden", h), ("r", r), ("z", z), ("n", n)):
        assert getattr(cell, name).shape == value.shape
        np.testing.assert_allclose(getattr(cell, name), value, rtol=1e-14, err_msg=name)
    np.testing.assert_allclose(h_t, (1 - z) * n + z * h, rtol=1e-14)
    delta = rng.standard_normal(H)
    dx, dh = cell.backward(delta)
    assert dx.shape == (I,) and dh.shape == (H,)
    dn = delta * (1 - z) * (1 - n ** 2)
    np.testing.assert_allclose(cell.dWnx, np.outer(dn, x), rtol=1e-13)
    np.testing.assert_allclose(cell.dbnh, dn * r, rtol=1e-13)
    np.testing.assert_allclose(cell.dWzh, np.outer(delta * (h - n) * z * (1 - z), h), rtol=1e-13)


def test_course_aliases_are_views(rng):
    cell = GRUCell(3, 2)
    cell.Wzh = np.full((2, 2), 3.0)
    assert (cell.params["weight_hh"][2:4] == 3.0).all()
    cell.params["bias_ih"][4:6] = 5.0
    assert (cell.bnx == 5.0).all()
    cell.forward(np.ones(3))
    cell.backward(np.ones(2))
    assert cell.dWrx.base is cell.grads["weight_ih"] or np.shares_memory(cell.dWrx, cell.grads["weight_ih"])
    with pytest.raises(AttributeError, match="accumulates into self.grads\\['weight_ih'\\]"):
        cell.dWrx = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"GRUCell.Wrx: got shape \(3, 3\), expected \(2, 3\)"):
        cell.Wrx = np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"init_weights: Wnh has shape \(1,\)"):
        cell.init_weights(*[np.zeros(s) for s in [(2, 3)] * 3 + [(2, 2)] * 2 + [(1,)] + [(2,)] * 6])
    with pytest.raises(AttributeError, match="bias=False"):
        GRUCell(3, 2, bias=False).brx


# --------------------------------------------------------------------------------------------------
# TGRU's Lux interface


def test_tgru_input_cases(rng):
    x = rng.standard_normal((2, 3))
    base = dict(init_state=init.constant(0.5), init_memory=init.constant(-0.25), rng=0)
    # 1a: neither trainable: fresh initial state from init_state / init_memory
    c = TGRUCell(3, 4, **base)
    c.forward(x)
    assert (c.hidden == 0.5).all() and (c.memory == -0.25).all() and set(c.params) == {"weight_ih", "weight_hh", "bias_ih", "bias_hh"}
    # 1b/1c/1d: trainable vectors repeated over the batch
    for train_state, train_memory in ((True, False), (False, True), (True, True)):
        c = TGRUCell(3, 4, train_state=train_state, train_memory=train_memory, **base)
        assert ("hidden_state" in c.params) == train_state and ("memory" in c.params) == train_memory
        h, m = c.forward(x)
        np.testing.assert_array_equal(m, x)                       # the memory carried on is the input
        c.backward((np.ones((2, 4)), None))
        if train_state:
            assert c.params["hidden_state"].shape == (4,) and np.abs(c.grads["hidden_state"]).sum() > 0
        if train_memory:
            assert c.params["memory"].shape == (3,) and np.abs(c.grads["memory"]).sum() > 0
    # 2: a given state is used as is, and no gradient reaches the trainable vectors
    c = TGRUCell(3, 4, train_state=True, train_memory=True, **base)
    c.forward(x, (np.zeros((2, 4)), np.zeros((2, 3))))
    c.backward((np.ones((2, 4)), None))
    assert (c.grads["hidden_state"] == 0).all() and (c.grads["memory"] == 0).all()


def test_tgru_initialisers_per_gate():
    c = TGRUCell(2, 3, init_weight=(init.constant(1.0), init.constant(2.0), init.constant(3.0)),
                 init_recurrent_weight=init.zeros, init_bias=0.5, use_recurrent_bias=False)
    np.testing.assert_array_equal(c.params["weight_ih"][:, 0], [1, 1, 1, 2, 2, 2, 3, 3, 3])
    assert (c.params["weight_hh"] == 0).all() and (c.params["bias_ih"] == 0.5).all() and "bias_hh" not in c.params
    assert c.params["weight_hh"].shape == (9, 2)                 # acts on the memory: I wide
    with pytest.raises(ValueError, match="init_weight must be one initialiser or a tuple of 3"):
        TGRUCell(2, 3, init_weight=(init.zeros, init.zeros))
    with pytest.raises(ValueError, match=r"init_bias returned shape \(2,\), expected \(3,\)"):
        TGRUCell(2, 3, init_bias=lambda rng, shape: np.zeros(2))


def test_tgru_gates_never_see_h(rng):
    """Strongly typed: f, z, o depend on inputs only; h' is linear in h."""
    c = TGRUCell(3, 4, rng=0)
    x, m = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    h1, h2 = rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    out1, _ = c.forward(x, (h1, m))
    gates1 = (c.z, c.f, c.o)
    out2, _ = c.forward(x, (h2, m))
    for a, b in zip(gates1, (c.z, c.f, c.o)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(out1 - out2, c.f * (h1 - h2), rtol=1e-12, atol=1e-14)


def test_gru_block_cell_is_not_the_pytorch_gru(rng):
    """Same weights arranged both ways: the reset position makes them differ (unless r = 1)."""
    I, H = 3, 4
    tf, pt = GRUBlockCell(I, H, rng=0), GRUCell(I, H, bias=False, rng=0)
    tf.params["b_ru"][...] = 0.0
    W_r, W_u = tf.params["w_ru"][:, :H].T, tf.params["w_ru"][:, H:].T
    pt.params["weight_ih"][...] = np.vstack([W_r[:, :I], W_u[:, :I], tf.params["w_c"][:I].T])
    pt.params["weight_hh"][...] = np.vstack([W_r[:, I:], W_u[:, I:], tf.params["w_c"][I:].T])
    x, h = rng.standard_normal((2, I)), rng.standard_normal((2, H))
    a, b = tf.forward(x, h), pt.forward(x, h)
    np.testing.assert_allclose(tf.r, pt.r)                         # same gates
    np.testing.assert_allclose(tf.u, pt.z)
    assert np.abs(a - b).max() > 1e-3                              # different candidate: r ⊙ (W h) ≠ W (r ⊙ h)

"""The cells' fast paths (sequence_forward / sequence_backward) against the per-step cells they speed up.

The reference is a plain loop over the cell's own forward and backward with the sequence layer's rule for
variable lengths: run every step on the full batch and keep ``np.where(mask, new, old)``; in backward pass
``mask * d`` into the cell and ``~mask * d`` straight through to the previous state. Every output, final
state, input gradient, initial-state gradient and parameter gradient must agree: to 1e-10 in float64 and
1e-5 in float32.
"""
import numpy as np
import pytest

import mytorch
from mytorch.nn import GMUCell, GRUBlockCell, GRUCell, LSTMCell, RNNCell, TGRUCell

CELLS = {
    "RNN": lambda I, H, dtype: RNNCell(I, H, dtype=dtype, rng=0),
    "RNN-relu-nobias": lambda I, H, dtype: RNNCell(I, H, nonlinearity="relu", bias=False, dtype=dtype, rng=0),
    "GRU": lambda I, H, dtype: GRUCell(I, H, dtype=dtype, rng=0),
    "GRU-nobias": lambda I, H, dtype: GRUCell(I, H, bias=False, dtype=dtype, rng=0),
    "GRUBlock": lambda I, H, dtype: GRUBlockCell(I, H, dtype=dtype, rng=0),
    "GMU": lambda I, H, dtype: GMUCell(I, H, dtype=dtype, rng=0),
    "TGRU": lambda I, H, dtype: TGRUCell(I, H, dtype=dtype, rng=0),
    "TGRU-nobias": lambda I, H, dtype: TGRUCell(I, H, use_bias=False, use_recurrent_bias=False, dtype=dtype, rng=0),
    "LSTM": lambda I, H, dtype: LSTMCell(I, H, dtype=dtype, rng=0),
    "LSTM-nobias": lambda I, H, dtype: LSTMCell(I, H, bias=False, dtype=dtype, rng=0),
    "LSTM-proj": lambda I, H, dtype: LSTMCell(I, H, proj_size=H - 1, dtype=dtype, rng=0),
}
# T, N, I, H, lengths (unsorted; one equal to T, one equal to 1 where N allows)
SHAPES = {
    "T5-N4": (5, 4, 3, 6, [3, 5, 1, 2]),
    "T1-N1": (1, 1, 4, 3, [1]),
    "T6-N1": (6, 1, 2, 3, [4]),
    "T4-N3-I>H": (4, 3, 5, 2, [4, 1, 3]),
}
TOLERANCE = {np.float64: 1e-10, np.float32: 1e-5}


def parts(state):
    return state if isinstance(state, tuple) else (state,)


def like(cell, values):
    return values if len(cell.state_names) > 1 else values[0]


def per_step(cell, X, state0, lengths, reverse, dY, d_state_T):
    """The reference: T calls of cell.forward, then T calls of cell.backward, with the lengths rule."""
    T, N = X.shape[:2]
    order = range(T - 1, -1, -1) if reverse else range(T)
    real = np.ones((T, N), bool) if lengths is None else np.arange(T)[:, None] < np.asarray(lengths)[None, :]
    state, Y = parts(state0), np.zeros(dY.shape, cell.dtype)
    for t in order:
        new = parts(cell.forward(X[t], like(cell, state)))
        keep = real[t][:, None]
        state = tuple(np.where(keep, n, o) for n, o in zip(new, state))
        Y[t] = keep * state[0]
    d, dX = parts(d_state_T), np.zeros(X.shape, cell.dtype)
    for t in reversed(order):
        keep = real[t][:, None]
        d = (d[0] + keep * dY[t],) + d[1:]                         # Y[t] = keep * h
        dX[t], d_prev = cell.backward(like(cell, tuple(keep * part for part in d)))
        d = tuple(dp + ~keep * part for dp, part in zip(parts(d_prev), d))
    return Y, state, dX, d


def random_state(cell, N, rng):
    return tuple(rng.standard_normal((N, w)).astype(cell.dtype) for w in cell.state_widths)


def assert_close(fast, ref, tol, what):
    scale = max(1.0, float(np.abs(ref).max())) if np.size(ref) else 1.0
    np.testing.assert_allclose(fast, ref, rtol=tol, atol=tol * scale, err_msg=what)


def compare(make, T, N, I, H, lengths, reverse, dtype, seed=0):
    rng = np.random.default_rng(seed)
    fast, ref = make(I, H, dtype), make(I, H, dtype)
    X = rng.standard_normal((T, N, I)).astype(dtype)
    dY = rng.standard_normal((T, N, ref.state_widths[0])).astype(dtype)           # Y is the state's h
    state0, d_state_T = random_state(ref, N, rng), random_state(ref, N, rng)
    expected = per_step(ref, X, state0, lengths, reverse, dY, d_state_T)
    lengths = None if lengths is None else np.array(lengths)
    Y, state_T = fast.sequence_forward(X, like(fast, state0), lengths, reverse)
    assert fast.pending_steps == 1                                 # one record for the whole sequence
    dX, d_state0 = fast.sequence_backward(dY, like(fast, d_state_T))
    assert fast.pending_steps == 0 and ref.pending_steps == 0
    tol = TOLERANCE[dtype]
    for name, got, want in [("Y", Y, expected[0]), ("dX", dX, expected[2])] + \
            [(f"state_T[{k}]", a, b) for k, (a, b) in enumerate(zip(parts(state_T), expected[1]))] + \
            [(f"d_state0[{k}]", a, b) for k, (a, b) in enumerate(zip(parts(d_state0), expected[3]))]:
        assert got.shape == want.shape and got.dtype == dtype, (name, got.shape, got.dtype)
        assert_close(got, want, tol, name)
    assert fast.grads.keys() == ref.grads.keys()
    for key in ref.grads:
        assert_close(fast.grads[key], ref.grads[key], tol, f"grads[{key!r}]")
        assert np.abs(ref.grads[key]).max() > 0, key                 # every gradient was exercised


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("with_lengths", [False, True], ids=["full", "lengths"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
@pytest.mark.parametrize("cell", list(CELLS), ids=list(CELLS))
def test_fast_path_equals_per_step(cell, shape, reverse, with_lengths, dtype):
    T, N, I, H, lengths = SHAPES[shape]
    compare(CELLS[cell], T, N, I, H, lengths if with_lengths else None, reverse, dtype)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_tgru_trainable_initial_state_matches_finite_differences(reverse):
    """A None state0 is the cell's initial state: with train_state / train_memory, the whole gradient of the
    initial state (through the first step and, past a sequence's end, straight through) reaches the params."""
    rng = np.random.default_rng(3)
    T, N, I, H = 4, 3, 2, 3
    cell = TGRUCell(I, H, train_state=True, train_memory=True, rng=1)
    X, dY = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, H))
    dh_T, dm_T = rng.standard_normal((N, H)), rng.standard_normal((N, I))
    lengths = np.array([2, 4, 1])

    def loss():
        with mytorch.no_grad():
            Y, (h_T, m_T) = cell.sequence_forward(X, None, lengths, reverse)
        return np.sum(Y * dY) + np.sum(h_T * dh_T) + np.sum(m_T * dm_T)

    cell.sequence_forward(X, None, lengths, reverse)
    cell.sequence_backward(dY, (dh_T, dm_T))
    for name in ("hidden_state", "memory", "weight_hh"):
        param, numeric = cell.params[name], np.zeros_like(cell.params[name])
        for j in np.ndindex(param.shape):
            keep = param[j]
            param[j] = keep + 1e-6
            up = loss()
            param[j] = keep - 1e-6
            numeric[j] = (up - loss()) / 2e-6
            param[j] = keep
        np.testing.assert_allclose(cell.grads[name], numeric, rtol=1e-7, atol=1e-8, err_msg=name)


@pytest.mark.parametrize("cell", list(CELLS), ids=list(CELLS))
def test_none_state_gradient_and_accumulation(cell):
    """d_state_T None (and None entries) mean zero; gradients are added, so two backwards give twice one."""
    rng = np.random.default_rng(4)
    T, N, I, H = 3, 2, 3, 4
    fast, ref = CELLS[cell](I, H, np.float64), CELLS[cell](I, H, np.float64)
    X, dY = rng.standard_normal((T, N, I)), rng.standard_normal((T, N, ref.state_widths[0]))
    zeros = tuple(np.zeros((N, w)) for w in ref.state_widths)
    state0 = random_state(ref, N, rng)
    expected = per_step(ref, X, state0, None, False, dY, zeros)
    for _ in range(2):
        fast.sequence_forward(X, like(fast, state0))
        dX, _ = fast.sequence_backward(dY, None if len(fast.state_names) == 1 else (None, None))
        np.testing.assert_allclose(dX, expected[2], rtol=1e-12, atol=1e-12)
    for key in ref.grads:
        np.testing.assert_allclose(fast.grads[key], 2 * ref.grads[key], rtol=1e-10, atol=1e-12, err_msg=key)


def test_no_grad_records_nothing_and_inputs_are_not_changed():
    cell = GRUCell(3, 4, rng=0)
    X, h0 = np.ones((2, 5, 3)), np.full((5, 4), 0.5)
    with mytorch.no_grad():
        Y, h_T = cell.sequence_forward(X, h0)
    assert cell.pending_steps == 0 and Y.shape == (2, 5, 4) and h_T.shape == (5, 4)
    assert np.all(X == 1) and np.all(h0 == 0.5)
    Y[...] = 7                                              # the caller owns Y: the record is not a view of it
    cell.sequence_forward(X, h0)
    dX, _ = cell.sequence_backward(np.ones((2, 5, 4)), None)
    assert np.all(X == 1) and np.isfinite(dX).all()


def test_backward_kinds_must_match():
    cell = GRUCell(3, 4, rng=0)
    cell.forward(np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="single step"):
        cell.sequence_backward(np.ones((1, 2, 4)), None)
    assert cell.pending_steps == 1                          # a rejected call consumes nothing
    with pytest.raises(RuntimeError, match="without a matching forward"):
        GRUCell(3, 4, rng=0).sequence_backward(np.ones((1, 2, 4)), None)


def test_bad_input_names_the_cell_and_the_shape():
    cell = GMUCell(3, 4, rng=0)
    with pytest.raises(ValueError, match=r"GMUCell.sequence_forward: X has shape \(2, 5, 2\), expected \(T, N, 3\)"):
        cell.sequence_forward(np.ones((2, 5, 2)), None)
    with pytest.raises(ValueError, match="lengths must be an int array of shape"):
        cell.sequence_forward(np.ones((2, 5, 3)), None, lengths=np.ones(5))
    assert cell.pending_steps == 0



# --------------------------------------------------------------------------------------------------
# the workspace: per-call arrays reused from call to call, never handed out, never shared by two records


def one_call(cell, X, state0, dY, d_state_T):
    Y, state_T = cell.sequence_forward(X, like(cell, state0))
    dX, d_state0 = cell.sequence_backward(dY, like(cell, d_state_T))
    return [Y, dX, *parts(state_T), *parts(d_state0)]


def random_call(cell, T, N, I, rng):
    X = rng.standard_normal((T, N, I))
    return (X, random_state(cell, N, rng), rng.standard_normal((T, N, cell.state_widths[0])),
            random_state(cell, N, rng))


@pytest.mark.parametrize("name", list(CELLS), ids=list(CELLS))
def test_a_training_loop_reuses_its_arrays_and_what_it_returned_stays_its_callers(name):
    """Call after call on one cell gives what a fresh cell gives; nothing returned earlier changes later; and
    from the second call on, the large arrays come from the workspace (tracemalloc sees numpy's allocations)."""
    import tracemalloc
    rng = np.random.default_rng(5)
    T, N, I, H = 30, 8, 5, 12
    cell = CELLS[name](I, H, np.float64)
    calls = [random_call(cell, T, N, I, rng) for _ in range(4)]
    returned, peaks = [], []
    # NumPy before 2.3 (the newest there is for Python 3.9 and 3.10) runs a ufunc or a reduction that buffers
    # (np.greater into a float array, a sum over an axis) through a buffer of as much of the operand as its
    # bufsize allows, 8192 elements by default: here a whole (T, N, H) array, allocated anew by NumPy at each
    # call, which is not the workspace's to reuse. A small buffer keeps NumPy's share alike on every version.
    bufsize = np.setbufsize(1024)
    try:
        for args in calls:
            tracemalloc.start()
            returned.append(one_call(cell, *args))
            peaks.append(tracemalloc.get_traced_memory()[1])      # the most allocated at once during the call
            tracemalloc.stop()
    finally:
        np.setbufsize(bufsize)
    kept = [[a.copy() for a in got] for got in returned]
    for args, got, copies in zip(calls, returned, kept):
        fresh = one_call(CELLS[name](I, H, np.float64), *args)
        for a, b, c in zip(got, copies, fresh):
            np.testing.assert_array_equal(a, b)                   # untouched by every later call
            np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    one_array = T * N * H * 8                                     # one (T, N, H) float64 array
    assert peaks[0] > 3 * one_array, peaks                        # the first call allocates its arrays …
    assert max(peaks[2:]) < peaks[0] / 2, peaks                   # … later ones little more than what they return


@pytest.mark.parametrize("name", list(CELLS), ids=list(CELLS))
def test_records_pending_at_once_never_share_arrays(name):
    """Two forwards before their backwards (the second's backward first), and a forward without a record in
    between: each gives what it gives alone."""
    rng = np.random.default_rng(6)
    T, N, I, H = 4, 3, 5, 2
    cell = CELLS[name](I, H, np.float64)
    (X1, s1, dY1, d1), (X2, s2, dY2, d2) = (random_call(cell, T, N, I, rng) for _ in range(2))
    Y1, _ = cell.sequence_forward(X1, like(cell, s1))
    Y2, _ = cell.sequence_forward(X2, like(cell, s2))
    with mytorch.no_grad():
        cell.sequence_forward(X2[::-1].copy(), like(cell, s1))
    dX2, _ = cell.sequence_backward(dY2, like(cell, d2))
    dX1, _ = cell.sequence_backward(dY1, like(cell, d1))
    for (X, s, dY, d), Y, dX in [((X1, s1, dY1, d1), Y1, dX1), ((X2, s2, dY2, d2), Y2, dX2)]:
        alone = one_call(CELLS[name](I, H, np.float64), X, s, dY, d)
        np.testing.assert_allclose(Y, alone[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dX, alone[1], rtol=1e-12, atol=1e-12)


def test_the_workspace_keeps_only_what_recent_calls_used():
    """A run whose T changes every batch does not pile up arrays of every shape it has seen."""
    def pooled_bytes(cell):
        return sum(a.nbytes for free in cell._workspace._free.values() for a, _ in free)

    rng = np.random.default_rng(7)
    once = GRUCell(3, 4, rng=0)
    one_call(once, *random_call(once, 12, 2, 3, rng))
    cell = GRUCell(3, 4, rng=0)
    for T in range(1, 13):
        one_call(cell, *random_call(cell, T, 2, 3, rng))
    assert pooled_bytes(cell) <= 2 * pooled_bytes(once), (pooled_bytes(cell), pooled_bytes(once))

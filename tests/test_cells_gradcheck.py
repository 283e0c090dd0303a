"""Level 2: float64 centred finite differences against every cell's backward, for every parameter, input and
state entry, on unbatched, N=1 and N>1 inputs with I != H and I == H."""
import numpy as np
import pytest

import mytorch
from mytorch.nn import GMUCell, GRUCell, RNNCell, TGRUCell
from tests.conftest import GRADCHECK_TOL, SHAPES, random_state, random_x, shape_id

VARIANTS = [
    (RNNCell, {"nonlinearity": "relu"}),
    (RNNCell, {"bias": False}),
    (GRUCell, {"bias": False}),
    (TGRUCell, {"use_bias": False}),
    (TGRUCell, {"use_recurrent_bias": False}),
    (TGRUCell, {"train_state": True}),
    (TGRUCell, {"train_memory": True}),
    (TGRUCell, {"train_state": True, "train_memory": True}),
]


def assert_gradcheck(cell, x, state):
    errors = mytorch.gradcheck(cell, x, state)
    expected = {"x"} | set(cell.params)
    assert expected <= set(errors)
    bad = {k: v for k, v in errors.items() if not v <= GRADCHECK_TOL}
    assert not bad, f"{type(cell).__name__}: finite differences disagree: {bad}"
    return errors


@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
@pytest.mark.parametrize("given_state", [False, True], ids=["state=None", "state given"])
def test_every_cell(cell_class, shape, given_state, rng):
    n, i, h = shape
    cell = cell_class(i, h, rng=0)
    state = random_state(cell, rng, n) if given_state else None
    errors = assert_gradcheck(cell, random_x(rng, n, i), state)
    if given_state:                                    # every state part was checked too
        assert sum(k.startswith("state") for k in errors) == len(cell.state_names)


@pytest.mark.parametrize("cls, kwargs", VARIANTS, ids=lambda v: v.__name__ if isinstance(v, type) else str(v))
@pytest.mark.parametrize("n", [None, 3], ids=["unbatched", "N3"])
def test_cell_options(cls, kwargs, n, rng):
    cell = cls(4, 3, rng=1, **kwargs)
    assert_gradcheck(cell, random_x(rng, n, 4), None)


def test_gmu_last_step_c_gradient_none_is_zero(rng):
    """dL/dc' = None must mean zero, exactly as an explicit zero array."""
    cell = GMUCell(3, 4, rng=0)
    x, state = rng.standard_normal((2, 3)), random_state(cell, rng, 2)
    dh = rng.standard_normal((2, 4))
    cell.forward(x, state)
    dx_none, (dh_none, dc_none) = cell.backward((dh, None))
    grads_none = {k: g.copy() for k, g in cell.grads.items()}
    cell.zero_grad()
    cell.forward(x, state)
    dx_zero, (dh_zero, dc_zero) = cell.backward((dh, np.zeros((2, 4))))
    np.testing.assert_array_equal(dx_none, dx_zero)
    np.testing.assert_array_equal(dc_none, dc_zero)
    for k in grads_none:
        np.testing.assert_array_equal(grads_none[k], cell.grads[k])
    assert np.abs(dc_none).max() > 1e-3               # c_{t-1} still gets gradient, from h' and the peepholes


class _BrokenGRU(GRUCell):
    """A GRU whose backward forgets the direct path dh'/dh = z: gradcheck must notice."""

    def backward(self, d_state):
        dx, dh = super().backward(d_state)
        return dx, dh - d_state * self._last_z

    def forward(self, x, state=None):
        out = super().forward(x, state)
        self._last_z = self.z
        return out


def test_gradcheck_catches_a_wrong_backward(rng):
    cell = _BrokenGRU(3, 4, rng=0)
    errors = mytorch.gradcheck(cell, rng.standard_normal((2, 3)), rng.standard_normal((2, 4)))
    assert errors["state"] > 1e-2
    assert errors["weight_ih"] < GRADCHECK_TOL          # the parameters' gradients are still right


def test_gradcheck_restores_the_module(rng):
    cell = GRUCell(3, 4, rng=0)
    before = cell.state_dict()
    cell.grads["weight_ih"][...] = 7.0
    mytorch.gradcheck(cell, rng.standard_normal(3))
    for k, v in before.items():
        np.testing.assert_array_equal(cell.params[k], v)
    assert (cell.grads["weight_ih"] == 7.0).all() and (cell.grads["bias_hh"] == 0).all()
    assert cell.pending_steps == 0


def test_gradcheck_independent_entry(rng):
    """One entry checked by hand here, without mytorch.gradcheck: dL/dW_hh[1, 2] for L = Σ w ⊙ h'."""
    cell = TGRUCell(3, 2, rng=0)
    x, state = rng.standard_normal((2, 3)), (rng.standard_normal((2, 2)), rng.standard_normal((2, 3)))
    w = rng.standard_normal((2, 2))
    cell.forward(x, state)
    cell.backward((w, None))
    eps, W = 1e-6, cell.params["weight_hh"]

    def loss():
        with mytorch.no_grad():
            return float(np.sum(w * cell.forward(x, state)[0]))

    W[1, 2] += eps
    up = loss()
    W[1, 2] -= 2 * eps
    down = loss()
    W[1, 2] += eps
    assert cell.grads["weight_hh"][1, 2] == pytest.approx((up - down) / (2 * eps), rel=1e-7)


def test_gradcheck_refuses_float32():
    with pytest.raises(ValueError, match="float64"):
        mytorch.gradcheck(GRUCell(2, 2, dtype=np.float32), np.zeros(2))

"""TensorFlow's GRUBlockCell / GRUBlockCellGrad ops, checked against the kernel's formulas as TensorFlow's
gru_ops.h computes them (written out independently here), and against finite differences."""
import numpy as np
import pytest

from mytorch.nn import GRUBlockCell, gru_block_cell, gru_block_cell_grad


def sig(a):
    return 1 / (1 + np.exp(-a))


def kernel_forward(x, h_prev, w_ru, w_c, b_ru, b_c):
    H = h_prev.shape[1]
    ru = sig(np.hstack([x, h_prev]).dot(w_ru) + b_ru)
    r, u = ru[:, :H], ru[:, H:]
    c = np.tanh(np.hstack([x, r * h_prev]).dot(w_c) + b_c)
    return r, u, c, u * h_prev + (1 - u) * c


def kernel_grad(x, h_prev, w_ru, w_c, r, u, c, d_h):
    I = x.shape[1]
    d_c_bar = d_h * (1 - u) * (1 - c * c)
    d_u_bar = d_h * (h_prev - c) * u * (1 - u)
    d_x_2, d_hr = np.split(d_c_bar.dot(w_c.T), [I], axis=1)
    d_r_bar = d_hr * h_prev * r * (1 - r)
    d_r_bar_u_bar = np.hstack([d_r_bar, d_u_bar])
    d_x_1, d_h_1 = np.split(d_r_bar_u_bar.dot(w_ru.T), [I], axis=1)
    return d_x_1 + d_x_2, d_h_1 + d_hr * r + d_h * u, d_c_bar, d_r_bar_u_bar


@pytest.fixture
def case(rng):
    N, I, H = 3, 4, 2
    cell = GRUBlockCell(I, H, rng=0)
    cell.params["b_ru"][...] = rng.standard_normal(2 * H)       # not the 1.0 default: test every bias entry
    return cell, rng.standard_normal((N, I)), rng.standard_normal((N, H)), rng.standard_normal((N, H))


def test_ops_match_the_kernel(case):
    cell, x, h, d_h = case
    mine = gru_block_cell(x, h, **cell.params)
    for a, b in zip(mine, kernel_forward(x, h, **cell.params)):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    r, u, c, _ = mine
    grads = gru_block_cell_grad(x, h, **cell.params, r=r, u=u, c=c, d_h=d_h)
    expected = kernel_grad(x, h, cell.params["w_ru"], cell.params["w_c"], r, u, c, d_h)
    for name, a, b in zip(("d_x", "d_h_prev", "d_c_bar", "d_r_bar_u_bar"), grads, expected):
        np.testing.assert_allclose(a, b, rtol=1e-13, err_msg=name)


def test_cell_weight_gradients_are_the_wrapper_formulas(case):
    """d_w_ru = [x, h]ᵀ d_r̄ū and d_w_c = [x, r⊙h]ᵀ d_c̄ (TF's documentation has these two swapped)."""
    cell, x, h, d_h = case
    r, u, c, _ = gru_block_cell(x, h, **cell.params)
    _, _, d_c_bar, d_r_bar_u_bar = kernel_grad(x, h, cell.params["w_ru"], cell.params["w_c"], r, u, c, d_h)
    cell.forward(x, h)
    cell.backward(d_h)
    np.testing.assert_allclose(cell.grads["w_ru"], np.hstack([x, h]).T.dot(d_r_bar_u_bar), rtol=1e-13)
    np.testing.assert_allclose(cell.grads["w_c"], np.hstack([x, r * h]).T.dot(d_c_bar), rtol=1e-13)
    np.testing.assert_allclose(cell.grads["b_ru"], d_r_bar_u_bar.sum(0), rtol=1e-13)
    np.testing.assert_allclose(cell.grads["b_c"], d_c_bar.sum(0), rtol=1e-13)


def test_d_c_bar_and_d_r_bar_u_bar_are_pre_activation_gradients(case):
    """Finite differences of L = Σ d_h ⊙ h' with respect to c̄ and [r̄, ū], perturbed inside the forward."""
    cell, x, h, d_h = case
    p, H, eps = cell.params, h.shape[1], 1e-6

    def loss(dc_bar=0.0, dru_bar=0.0):
        ru = sig(np.hstack([x, h]) @ p["w_ru"] + p["b_ru"] + dru_bar)
        r, u = ru[:, :H], ru[:, H:]
        c = np.tanh(np.hstack([x, r * h]) @ p["w_c"] + p["b_c"] + dc_bar)
        return np.sum(d_h * (u * h + (1 - u) * c))

    r, u, c, _ = gru_block_cell(x, h, **p)
    _, _, d_c_bar, d_r_bar_u_bar = gru_block_cell_grad(x, h, **p, r=r, u=u, c=c, d_h=d_h)
    for analytic, key in ((d_c_bar, "dc_bar"), (d_r_bar_u_bar, "dru_bar")):
        numeric = np.zeros_like(analytic)
        for idx in np.ndindex(analytic.shape):
            bump = np.zeros_like(analytic)
            bump[idx] = eps
            numeric[idx] = (loss(**{key: bump}) - loss(**{key: -bump})) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-9)


def test_initialisation_follows_tensorflow():
    cell = GRUBlockCell(3, 4, rng=0)
    assert (cell.params["b_ru"] == 1.0).all() and (cell.params["b_c"] == 0.0).all()
    bound = np.sqrt(6 / (3 + 4 + 2 * 4))                      # Glorot: fan_in I+H, fan_out 2H
    assert np.abs(cell.params["w_ru"]).max() <= bound and np.abs(cell.params["w_ru"]).max() > 0.8 * bound


def test_ops_validate_shapes_and_types(case):
    cell, x, h, d_h = case
    p = cell.params
    with pytest.raises(ValueError, match=r"gru_block_cell: w_ru has shape \(5, 4\), expected \(6, 4\)"):
        gru_block_cell(x, h, p["w_ru"][:-1], p["w_c"], p["b_ru"], p["b_c"])
    with pytest.raises(ValueError, match=r"x and h_prev must be 2-D"):
        gru_block_cell(x[0], h[0], **p)
    with pytest.raises(TypeError, match="h_prev must be a floating-point ndarray"):
        gru_block_cell(x, h.astype(int), **p)
    r, u, c, _ = gru_block_cell(x, h, **p)
    with pytest.raises(ValueError, match=r"gru_block_cell_grad: d_h has shape \(2, 2\), expected \(3, 2\)"):
        gru_block_cell_grad(x, h, **p, r=r, u=u, c=c, d_h=d_h[:2])

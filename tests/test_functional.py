import warnings

import numpy as np
import pytest

from mytorch import functional as F


def test_sigmoid_is_stable_and_exact():
    a = np.array([-1000.0, -50.0, -1.0, 0.0, 1.0, 50.0, 1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # an overflow RuntimeWarning would fail the test
        y = F.sigmoid(a)
    assert y[0] == 0.0 and y[-1] == 1.0 and y[3] == 0.5
    mid = np.array([-30.0, -2.5, 0.3, 7.0])
    np.testing.assert_allclose(F.sigmoid(mid), 1.0 / (1.0 + np.exp(-mid)), rtol=1e-15)
    # tiny but non-zero where the naive 1 - σ(−a) form would round to zero
    assert F.sigmoid(np.array(-700.0)) == pytest.approx(np.exp(-700.0), rel=1e-12)


def test_dtype_is_kept():
    assert F.sigmoid(np.zeros(3, np.float32)).dtype == np.float32
    assert F.softmax(np.zeros(3, np.float32)).dtype == np.float32
    assert F.sigmoid(np.array([0, 1])).dtype == np.float64      # integers become float64


@pytest.mark.parametrize("act, grad", [(F.sigmoid, F.sigmoid_grad), (np.tanh, F.tanh_grad), (F.tanh, F.tanh_grad)])
def test_derivatives_from_outputs_match_finite_differences(act, grad):
    a = np.linspace(-4, 4, 17)
    eps = 1e-6
    numeric = (act(a + eps) - act(a - eps)) / (2 * eps)
    np.testing.assert_allclose(grad(act(a)), numeric, rtol=1e-8, atol=1e-10)


def test_relu_and_its_derivative():
    a = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(F.relu(a), [0.0, 0.0, 3.0])
    np.testing.assert_array_equal(F.relu_grad(F.relu(a)), [0.0, 0.0, 1.0])


def test_softmax_and_log_softmax():
    a = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, -1000.0]])
    p = F.softmax(a, axis=1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(p[0], np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    np.testing.assert_allclose(p[1], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(F.softmax(a + 7.0, axis=1), p)              # shift invariant
    log_p = F.log_softmax(a, axis=1)
    np.testing.assert_allclose(log_p[0], np.log(p[0]))
    assert np.isfinite(log_p).all() and log_p[1, 2] == pytest.approx(-2000.0 - np.log(2.0))

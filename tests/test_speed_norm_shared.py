"""LayerNorm's and batch norm's weight gradients read what their input gradient made in the same backward step
(the same g and x arrays: the rows' statistics, the weight's sums), and make their own otherwise: the bits are the
plain path's either way."""
import numpy as np

from minifp import _speed
from minifp._seams import PLAIN


def _same(a, b):
    assert a.dtype == b.dtype == np.float32 and np.array_equal(a.view(np.int32), b.view(np.int32))


def test_weight_gradient_with_and_without_the_shared_statistics():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 257)) * 10.0 ** rng.integers(-3, 4, (6, 257))).astype(np.float32)
    x[1, 5], x[2] = np.nan, 2.5
    g, w = rng.standard_normal((6, 257)).astype(np.float32), rng.standard_normal(257).astype(np.float32)
    want = PLAIN.layer_norm_grad_w(np, g, x, 1, 1e-5)
    with np.errstate(all="ignore"):
        _same(_speed.layer_norm_grad(np, g, x, w, 1, 1e-5), PLAIN.layer_norm_grad(np, g, x, w, 1, 1e-5))
        assert _speed._LEFT.value[2]() is x
        _same(_speed.layer_norm_grad_w(np, g, x, 1, 1e-5), want)           # the shared statistics, used up
        assert _speed._LEFT.value is None
        _speed.layer_norm_grad(np, g, x, w, 1, 1e-5)
        _same(_speed.layer_norm_grad_w(np, g.copy(), x, 1, 1e-5), want)    # another g: its own statistics
        _same(_speed.layer_norm_grad_w(np, g, x.copy(), 1, 1e-5), want)    # another x likewise
        x[0] += 1                                                           # (a changed x of another step)
        _same(_speed.layer_norm_grad_w(np, g.copy(), x, 1, 1e-5), PLAIN.layer_norm_grad_w(np, g, x, 1, 1e-5))


def test_batch_norm_weight_gradient_from_the_input_gradients_pass():
    rng = np.random.default_rng(4)
    x, g = (rng.standard_normal((5, 4, 3, 7)).astype(np.float32).transpose(0, 3, 1, 2) for _ in range(2))
    w = rng.standard_normal(7).astype(np.float32)
    want = PLAIN.batch_norm_train_grad_w(np, g, x, 1e-5)
    _same(_speed.batch_norm_train_grad_x(np, g, x, w, 1e-5), PLAIN.batch_norm_train_grad_x(np, g, x, w, 1e-5))
    made = _speed._LEFT.value[4]
    got = _speed.batch_norm_train_grad_w(np, g, x, 1e-5)
    assert got is made and _speed._LEFT.value is None                 # the input gradient's sums, used up
    _same(got, want)
    for g2, eps in ((g, 1e-3), (g.copy(order="K"), 1e-5)):           # another eps, or another g: its own sums
        _speed.batch_norm_train_grad_x(np, g, x, w, 1e-5)
        left = _speed._LEFT.value[4]
        got = _speed.batch_norm_train_grad_w(np, g2, x, eps)
        assert got is not left
        _same(got, PLAIN.batch_norm_train_grad_w(np, g2, x, eps))

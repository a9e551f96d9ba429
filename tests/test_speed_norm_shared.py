"""LayerNorm's and batch norm's weight gradients read what their input gradient made in the same backward step
(the same g and x arrays: the rows' statistics, the weight's sums), and make their own otherwise: the bits are the
plain path's either way."""
import numpy as np
import pytest

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



def _x_g_w_b(rng):
    """A channels-last NCHW view x with NaN, inf and equal values, g likewise laid out, w and b."""
    x = (rng.standard_normal((6, 5, 4, 9)) * 10.0 ** rng.integers(-3, 4, (6, 5, 4, 9))).astype(np.float32)
    x[0, 1, 0, 0], x[1, 2, 3, 4], x[..., 2] = np.nan, np.inf, 2.5
    g = rng.standard_normal((6, 5, 4, 9)).astype(np.float32)
    return x.transpose(0, 3, 1, 2), g.transpose(0, 3, 1, 2), *rng.standard_normal((2, 9)).astype(np.float32)


@pytest.mark.parametrize("backward", [
    lambda m, g, x, w: m.batch_norm_train_grad_x(np, g, x, w, 1e-5),
    lambda m, g, x, w: m.batch_norm_train_grad_w(np, g, x, 1e-5),
    lambda m, g, x, w: m.batch_stats(np, x, 0)])      # (bfloat16's staged backward reads them so)
def test_batch_norm_backward_reads_its_forwards_statistics(backward):
    """The backward reads the statistics the forward made of the same x array (PyTorch's saved mean and invstd),
    once, then makes its own: the plain path's bits either way."""
    x, g, w, b = _x_g_w_b(np.random.default_rng(5))
    memo = _speed._MOMENTS.__dict__.setdefault("memo", {})
    with np.errstate(all="ignore"):
        want = backward(PLAIN, g, x, w)
        _same(_speed.batch_norm_train(np, x, w, b, 1e-5), PLAIN.batch_norm_train(np, x, w, b, 1e-5))
        for left in (True, False):
            assert (id(x) in memo) is left
            got = backward(_speed, g, x, w)
            for a, e in zip(*((got, want) if isinstance(got, tuple) else ((got,), (want,)))):
                _same(a, e)
            _speed._take("batch norm", g, x, 1e-5)      # (the weight's sums an input gradient leaves)


def test_batch_norm_statistics_are_forgotten_with_their_input():
    x, g, w, b = _x_g_w_b(np.random.default_rng(6))
    memo = _speed._MOMENTS.__dict__.setdefault("memo", {})
    with np.errstate(all="ignore"):
        _speed.batch_norm_train(np, x, w, b, 1e-5)
        for a, e in zip(_speed.batch_stats(np, x, 1), PLAIN.batch_stats(np, x, 1)):   # ddof 1: its own, not them
            _same(a, e)
    assert id(x) in memo
    del x
    assert not memo

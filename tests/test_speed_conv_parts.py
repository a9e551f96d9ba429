"""The speed module's convolution passes on both cores (minifp/_speed.py's im2col, add_bias and relu, cut into parts
by in_parts) against the plain path, bit for bit: NaNs with payloads (quiet and signalling, either sign), signed
zeros, infinities, subnormals, odd sizes, the parts cut on the pool and the call whole on this thread. The speed
module's functions are called directly, so these run without the JIT too (small arrays)."""

import numpy as np
import pytest

from minifp import _speed
from minifp._seams import PLAIN

# signalling NaN, a negative one with a payload, a quiet one with a payload, the negative quiet NaN
_NANS = np.array([0x7F800001, 0xFF800123, 0x7FC00005, 0xFFC00000], np.uint32).view(np.int32)


def _awkward(rng, shape):
    """float32 values with ties, zeros of both signs, subnormals, infinities and NaNs of several bit patterns."""
    x = rng.integers(-3, 4, shape).astype(np.float32)
    x[rng.random(shape) < 0.15] = -0.0
    for value, share in ((np.inf, 0.03), (-np.inf, 0.03), (1e-45, 0.02), (-1e-40, 0.02)):
        x[rng.random(shape) < share] = value
    spread = rng.random(shape) < 0.4
    x[spread] = rng.standard_normal(int(spread.sum())) * 2.0 ** rng.integers(-20, 20, int(spread.sum()))
    nans = rng.random(shape) < 0.05
    x.view(np.int32)[nans] = rng.choice(_NANS, int(nans.sum()))
    return x


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.int32), b.view(np.int32))


def _relu_inputs(rng):
    """(x, whether the kernel serves it): C order, an NCHW view of channels-last data (from 2**15 elements), a
    strided view and a small array (plain)."""
    x = _awkward(rng, (5, 16, 17, 25))
    x.view(np.int32)[0, 0, 0, :4] = _NANS
    return [(x, True), (x.transpose(0, 3, 1, 2), True), (x[:, ::2], False), (x[:1, :3], False)]


def _bias_inputs(rng):
    out, b = _awkward(rng, (5, 16, 17, 25)), _awkward(rng, (25,))
    b.view(np.int32)[:4] = _NANS        # NaNs on both sides of the sum: the first operand's wins
    out.view(np.int32)[0, 0, 0, :8] = np.concatenate([_NANS, _NANS[::-1]])
    return [(out, b, True), (out.reshape(-1, 25), b, True), (out.astype(np.float64), b, False),
            (out[:1, :3].copy(), b, False)]


@pytest.mark.parametrize("threads, split_min, cut", [(2, 0, True), (3, 0, True), (2, 1 << 40, False),
                                                      (1, 0, False)])
def test_relu_is_the_plain_paths(threads, split_min, cut, parts):
    """max(x, 0): NaNs keep their bits, either zero gives +0; in parts or whole, in any memory order."""
    for x, served in _relu_inputs(np.random.default_rng(threads)):
        parts(threads, split_min)
        got = _speed.relu(np, x)
        want = PLAIN.relu(np, x)
        assert _same(np.ascontiguousarray(got), np.ascontiguousarray(want))
        assert got.strides == want.strides
        assert parts.split() == (cut and served)
    assert np.array_equal(_speed.relu(np, np.float32([-0.0, 0.0, -1e-45])).view(np.int32), [0, 0, 0])


@pytest.mark.parametrize("threads, split_min, cut", [(2, 0, True), (3, 0, True), (2, 1 << 40, False),
                                                      (1, 0, False)])
def test_add_bias_is_the_plain_paths(threads, split_min, cut, parts):
    """out += b along the last axis, in place: a NaN on one side of a sum as NumPy passes it (quieted, payload
    and sign kept); of two NaNs NumPy's loop passes either (its vector body the first, its tail what the compiler
    chose: NaNs compared as one there); float64 and small arrays stay plain."""
    with np.errstate(invalid="ignore"):
        for out, b, served in _bias_inputs(np.random.default_rng(threads)):
            for b1 in (b, np.where(np.isnan(b), np.float32(1.5), b)):     # NaNs on both sides, on one side
                parts(threads, split_min)
                mine = out.copy()
                got = _speed.add_bias(np, mine, b1)
                want = PLAIN.add_bias(np, out.copy(), b1)
                assert got is mine and got.dtype == want.dtype
                if got.dtype == np.float64:
                    assert np.array_equal(got.view(np.int64), want.view(np.int64))
                elif b1 is b:
                    assert np.array_equal(_nan_as_one(got), _nan_as_one(want))
                else:
                    assert np.array_equal(got.view(np.int32), want.view(np.int32))
                assert parts.split() == (cut and served)


_GEOMETRIES = [(3, 3, ((1, 1), (1, 1)), 1, 1, 1, 1), (3, 2, ((0, 1), (2, 0)), 2, 1, 1, 2),
               (2, 3, ((1, 0), (0, 0)), 1, 2, 2, 1), (1, 1, ((0, 0), (0, 0)), 1, 1, 1, 1),
               (1, 1, ((0, 0), (0, 0)), 2, 2, 1, 1)]


@pytest.mark.parametrize("channels", [3, 9])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW", "NCHW view"])
@pytest.mark.parametrize("threads, split_min", [(2, 0), (3, 0), (2, 1 << 40), (1, 0)])
def test_im2col_is_the_plain_paths(channels, layout, threads, split_min, parts):
    """The columns of every geometry (padding, strides, dilation, 1x1), few channels (NumPy's copy) and many (the
    kernel), channels-last, NCHW and an NCHW view of channels-last data: the plain path's bits, in parts or whole."""
    x = _awkward(np.random.default_rng(channels), (5, 7, 6, channels))
    x = {"NHWC": x, "NCHW": np.ascontiguousarray(x.transpose(0, 3, 1, 2)), "NCHW view": x.transpose(0, 3, 1, 2)}[layout]
    last = layout == "NHWC"
    for geometry in _GEOMETRIES:
        parts(threads, split_min)
        got = _speed.im2col(np, x, last, *geometry)
        assert _same(got, PLAIN.im2col(np, x, last, *geometry))
        served = geometry[:4] != (1, 1, ((0, 0), (0, 0)), 1)
        assert parts.split() == (served and threads > 1 and split_min == 0)


def _bn_arrays(rng, shape, kind):
    """x and g of shape (N, C, ...) as views of channels-last memory, w and b of shape (C,): normal values, or
    _awkward's, or _awkward's with every NaN the one that inf - inf makes (x86's default NaN)."""
    last = (shape[0], *shape[2:], shape[1])
    perm = (0, len(shape) - 1, *range(1, len(shape) - 1))
    if kind != "normal":
        xl, gl = _awkward(rng, last), _awkward(rng, last)
        if kind == "one NaN":
            with np.errstate(invalid="ignore"):
                made = np.float32(np.inf) - np.float32(np.inf)
            for a in (xl, gl):
                a[np.isnan(a)] = made
    else:
        xl, gl = (rng.standard_normal(last) * 3 + 1).astype(np.float32), rng.standard_normal(last).astype(np.float32)
    c = shape[1]
    return xl.transpose(perm), gl.transpose(perm), *(rng.standard_normal(c).astype(np.float32) for _ in range(2))


def _same_layout(a, b):
    """The same shape and strides (but on axes of length 1, whose strides mean nothing)."""
    return a.shape == b.shape and all(s == t for s, t, n in zip(a.strides, b.strides, a.shape) if n > 1)


def _nan_as_one(a):
    a = np.ascontiguousarray(a)
    return np.where(np.isnan(a), np.float32(np.nan), a).view(np.int32)


_BN_SHAPES = [(4, 5, 3, 3), (2, 16, 4, 5), (7, 3), (64, 32), (3, 2, 5), (5, 33, 3, 1), (1, 8, 2, 2)]


@pytest.mark.parametrize("shape", _BN_SHAPES)
@pytest.mark.parametrize("kind", ["normal", "awkward", "one NaN"])
@pytest.mark.parametrize("threads, split_min", [(2, 0), (3, 0), (2, 1 << 40), (1, 0)])
def test_batch_norm_is_the_plain_paths(shape, kind, threads, split_min, parts):
    """Batch norm by the batch's statistics, its input and weight gradients (the weight's from the input's pass, and
    alone) and the bias's channel sums: the plain path's bits and layout, with and without w and b, whatever the
    pool. Where two NaNs of different bits meet,
    NumPy's loops pass either (their vector body x86's first operand's, a scalar tail what the compiler chose), so
    the awkward values' NaNs are compared as one; with one NaN's bits throughout, every bit."""
    x, g, w, b = _bn_arrays(np.random.default_rng(len(shape)), shape, kind)
    bits = _nan_as_one if kind == "awkward" else (lambda a: np.ascontiguousarray(a).view(np.int32))
    with np.errstate(all="ignore"):
        for w1, b1 in ((w, b), (None, None), (w, None)):
            parts(threads, split_min)
            pairs = [(_speed.batch_norm_train(np, x, w1, b1, 1e-5), PLAIN.batch_norm_train(np, x, w1, b1, 1e-5)),
                     (_speed.batch_norm_train_grad_x(np, g, x, w1, 1e-5),
                      PLAIN.batch_norm_train_grad_x(np, g, x, w1, 1e-5)),
                     (_speed.batch_norm_train_grad_w(np, g, x, 1e-5), PLAIN.batch_norm_train_grad_w(np, g, x, 1e-5)),
                     # (again: the sums the input's gradient made are taken once; these are the kernel's own)
                     (_speed.batch_norm_train_grad_w(np, g, x, 1e-5), PLAIN.batch_norm_train_grad_w(np, g, x, 1e-5)),
                     (_speed.channel_sums(np, g), PLAIN.channel_sums(np, g))]
            for got, want in pairs:
                assert _same_layout(got, want) and got.dtype == want.dtype
                assert np.array_equal(bits(got), bits(want))
            assert not parts.seen       # (one thread: see _speed's batch norm)


def test_batch_norm_hands_other_layouts_back():
    """NCHW in C order (NumPy sums its rows pairwise), one channel, float64, a GPU-like namespace: the plain path."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, 5, 5)).astype(np.float32)
    g = np.ascontiguousarray(x[:, ::-1])
    for args in ((np, x, None, None, 1e-5), (np, x[:, :1], None, None, 1e-5),
                 (np, x.astype(np.float64), None, None, 1e-5)):
        assert _speed._channel_rows(args[1]) is None
        assert np.array_equal(_speed.batch_norm_train(*args), PLAIN.batch_norm_train(*args))
    assert np.array_equal(_speed.batch_norm_train_grad_x(np, g, x, None, 1e-5),
                          PLAIN.batch_norm_train_grad_x(np, g, x, None, 1e-5))
    assert np.array_equal(_speed.channel_sums(np, g), PLAIN.channel_sums(np, g))


@pytest.mark.parametrize("shape", _BN_SHAPES)
@pytest.mark.parametrize("kind", ["normal", "awkward", "one NaN"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_stats_are_the_plain_paths(shape, kind, dtype):
    """A normalisation layer's batch mean and (biased, unbiased) variance for its running statistics, in float32
    (Keras's) or float64 (PyTorch's): the plain path's bits (NaNs as one for the awkward values, as above)."""
    x = _bn_arrays(np.random.default_rng(len(shape)), shape, kind)[0]
    if dtype is np.float64 and kind == "normal":
        x = x * np.float32(3e3) + np.float32(1e4)       # large means: the variance's deviations lose low bits
    same = _nan_as_one if kind == "awkward" else (lambda a: np.ascontiguousarray(a).view(f"int{a.itemsize * 8}"))
    with np.errstate(all="ignore"):
        for ddof in (0, 1):
            for got, want in zip(_speed.batch_stats(np, x, ddof, dtype), PLAIN.batch_stats(np, x, ddof, dtype)):
                assert got.shape == want.shape == (shape[1],) and got.dtype == want.dtype == dtype
                assert np.array_equal(same(got), same(want))


@pytest.mark.parametrize("threads, split_min, cut", [(2, 0, True), (3, 0, True), (2, 1 << 40, False),
                                                      (1, 0, False)])
@pytest.mark.parametrize("lo, hi", [(0.0, 6.0), (-1.0, 1.0), (0, None), (-0.0, 0.0), (2.0, -2.0), (0.1, 6.0)])
def test_clamps_and_their_gradients_are_the_plain_paths(lo, hi, threads, split_min, cut, parts):
    """hardtanh's clip (NaNs kept, x kept where it equals a bound) and the gradient of a clamp (g where lo < x < hi,
    +0 elsewhere), from 2**15 elements, C order and an NCHW view of channels-last data; a bound that is no float32
    (0.1) stays on the plain path."""
    rng = np.random.default_rng(3)
    with np.errstate(all="ignore"):
        x = _awkward(rng, (4, 16, 16, 33)) * np.float32(2.5)
    g = _awkward(rng, x.shape)
    served = lo != 0.1
    for xv, gv in ((x, g), (x.transpose(0, 3, 1, 2), g.transpose(0, 3, 1, 2))):
        parts(threads, split_min)
        got, want = _speed.masked_between(np, gv, xv, lo, hi), PLAIN.masked_between(np, gv, xv, lo, hi)
        assert got.strides == want.strides and _same(np.ascontiguousarray(got), np.ascontiguousarray(want))
        assert parts.split() == cut or not served       # (the plain path's masked is the speed module's)
        if hi is not None:
            parts(threads, split_min)
            got, want = _speed.clip(np, xv, lo, hi), PLAIN.clip(np, xv, lo, hi)
            assert got.strides == want.strides and _same(np.ascontiguousarray(got), np.ascontiguousarray(want))
            assert parts.split() == (cut and served)


@pytest.mark.parametrize("rows, cols", [(1025, 32), (4097, 33), (65536, 1), (3000, 16), (2, 20000), (7, 5)])
@pytest.mark.parametrize("kind", ["normal", "awkward", "one NaN"])
@pytest.mark.parametrize("threads, split_min", [(2, 0), (3, 0), (2, 5000), (2, 1 << 40), (1, 0)])
def test_column_sums_are_the_plain_paths(rows, cols, kind, threads, split_min, parts):
    """A convolution's bias gradient (the folds of _ops.column_sums, an odd row out joining the last pair): the
    plain path's bits, every fold in parts, the first ones only, or none (NaNs as one for the awkward values, as
    batch norm's)."""
    rng = np.random.default_rng(rows + cols)
    if kind == "normal":
        a = (rng.standard_normal((rows, cols)) * 1000).astype(np.float32)
        a[rng.random(a.shape) < 0.1] = -0.0
    else:
        a = _bn_arrays(rng, (rows, cols), kind)[0]
    bits = _nan_as_one if kind == "awkward" else (lambda v: v.view(np.int32))
    if threads == 3 and rows * cols > 1 << 16 and not _speed.JIT:
        pytest.skip("a large array through the Python loops: slow without the JIT")
    with np.errstate(all="ignore"):
        parts(threads, split_min)
        got = _speed.column_sums(np, np.ascontiguousarray(a))
        want = PLAIN.column_sums(np, np.ascontiguousarray(a))
    assert got.shape == want.shape == (cols,) and got.dtype == want.dtype
    assert np.array_equal(bits(got), bits(want))
    assert parts.split() == (threads > 1 and split_min < 1 << 40 and a.size >= 1 << 15)


@pytest.mark.parametrize("threads, split_min", [(2, 0), (3, 0), (2, 1 << 40), (1, 0)])
def test_kernel_copies_are_the_plain_paths(threads, split_min, parts):
    """A convolution's kernel reshaped into the GEMMs' layouts (a copy where NumPy needs one, in parts; a view
    stays a view): the same bits and layout as the plain path, NaN payloads included."""
    rng = np.random.default_rng(threads)
    w = _awkward(rng, (20, 7, 3, 3))
    views = [(w.transpose(2, 3, 1, 0), (63, 20)), (w.transpose(0, 2, 3, 1), (20, -1)), (w, (20, -1)),
             (w[:, :1].transpose(2, 3, 1, 0), (9, 20))]     # (the last two: views)
    for a, shape in views:
        parts(threads, split_min)
        got, want = _speed.reshaped(a, shape), PLAIN.reshaped(a, shape)
        assert got.shape == want.shape and got.strides == want.strides
        assert np.array_equal(got.view(np.int32), want.view(np.int32))
        copied = not np.shares_memory(want, a)
        assert np.shares_memory(got, a) != copied
        assert parts.split() == (copied and threads > 1 and split_min == 0)

"""The speed module (minifp/_speed.py) against the plain path it stands in for, seam by seam, and the plain path's
tiled max-pool gradient against the general one: bit for bit, ties, signed zeros and NaNs included.

The speed module's functions are called directly, so these run without the JIT too (their kernels then run as
Python loops, on small arrays)."""
import dataclasses

import numpy as np
import pytest

import minifp as mf
from minifp import _ops, _speed
from minifp._seams import PLAIN, SEAMS


def _awkward(rng, shape, dtype=np.float32):
    """Values with many ties (zeros of both signs, repeated integers), infinities and NaNs."""
    x = rng.integers(-3, 4, shape).astype(dtype)
    x[rng.random(shape) < 0.15] = -0.0
    x[rng.random(shape) < 0.05] = np.inf
    x[rng.random(shape) < 0.05] = -np.inf
    x[rng.random(shape) < 0.05] = np.nan
    spread = rng.random(shape) < 0.3
    x[spread] = rng.standard_normal(int(spread.sum())).astype(dtype)
    return x


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kernel", [(2, 2), (3, 2), (1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiled_max_pool_gradient_is_the_windows_argmax(layout, kernel, dtype, monkeypatch):
    """The tiled path's gradient (a pass per tap, from the pooled maxima) against the general path's argmax over
    every window, which shares none of its code: the first maximum, the first NaN, -0 landing as +0."""
    rng = np.random.default_rng(sum(kernel) + (layout == "NHWC"))
    n, c, h, w = 3, 4, 7, 8                     # 7 and 8: rows or columns that no window reaches
    x = _awkward(rng, (n, h, w, c) if layout == "NHWC" else (n, c, h, w), dtype)
    params = dict(kernel_size=kernel, stride=kernel, layout=layout)
    top = _ops._max_pool2d(np, x, **params)
    g = rng.standard_normal(top.shape).astype(dtype)
    g[rng.random(g.shape) < 0.1] = -0.0
    got = _ops._max_pool2d_grad(np, g, top, x, **params)
    monkeypatch.setattr(_ops, "_tiles", lambda *args: None)
    want = _ops._max_pool2d_grad(np, g, _ops._max_pool2d(np, x, **params), x, **params)
    assert got.shape == x.shape and got.dtype == dtype
    bits = np.int64 if dtype == np.float64 else np.int32
    assert np.array_equal(got.view(bits), want.view(bits))
    assert ((got != 0).sum() <= g.size) and not np.isnan(got).any()


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("shape", [(3, 6, 8, 4), (1, 2, 2, 1), (2, 4, 14, 3)])
def test_the_2x2_max_pool_kernels_are_the_array_maths(shape, layout, monkeypatch):
    """float32 2x2 tiles that cover channels-last x (NHWC, or NCHW views of NHWC memory, as convolutions leave
    them) take the kernels: the same bits as the passes per tap, forward (NaNs, signs of zero) and backward."""
    rng = np.random.default_rng(shape[-1])
    x = _awkward(rng, shape)                    # (N, H, W, C) in memory
    x[0, :2, :2, 0] = np.nan                    # a tile of NaNs: the first one wins
    x[-1, -2:, -2:, -1] = [[0.0, -0.0], [-0.0, 0.0]]
    g = rng.standard_normal((shape[0], shape[1] // 2, shape[2] // 2, shape[3])).astype(np.float32)
    g[rng.random(g.shape) < 0.1] = -0.0
    if layout == "NCHW":
        x, g = x.transpose(0, 3, 1, 2), np.ascontiguousarray(g.transpose(0, 3, 1, 2))
    tiles = _ops._tiles(np, x, 2, 2, 0, 1, False, layout)
    calls = []
    for name in ("_max_pool_2x2", "_max_pool_2x2_grad"):
        monkeypatch.setattr(_speed, name, lambda *a, f=getattr(_speed, name): calls.append(f.__name__) or f(*a))
    top = _speed.tiles_max(np, x, tiles, layout)
    want_top = PLAIN.tiles_max(np, x, tiles, layout)
    got = _speed.tiles_max_grad(np, g, top, x, tiles, layout)
    want = PLAIN.tiles_max_grad(np, g, want_top, x, tiles, layout)
    assert calls == ["_max_pool_2x2", "_max_pool_2x2_grad"]
    for a, b in ((top, want_top), (got, want)):
        assert a.shape == b.shape and np.array_equal(a.view(np.int32), b.view(np.int32))
        same = [s for s, n in zip(a.strides, a.shape) if n > 1] == [s for s, n in zip(b.strides, b.shape) if n > 1]
        assert same         # the same memory layout: later reductions sum in the same order


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_masked_is_the_array_maths(dtype, monkeypatch):
    """g where keep holds, else +0, by the kernel (C order, or NCHW views of channels-last memory) and by the
    and of bits: the same bits, inf and NaN included; keep and g in different orders take the array math."""
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    g = _awkward(rng, (4, 16, 16, 32), dtype)       # 2**15 elements: the kernel serves from there
    keep = rng.random(g.shape) < 0.5
    cases = [(keep, g, True), (keep.transpose(0, 3, 1, 2), g.transpose(0, 3, 1, 2), True),
             (np.ascontiguousarray(keep.transpose(0, 3, 1, 2)), g.transpose(0, 3, 1, 2), False)]
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[np.dtype(dtype).itemsize]
    kernel_of = _speed._masked_kernel
    for k, v, kernel in cases:
        calls = []
        monkeypatch.setattr(_speed, "_masked_kernel", lambda *a: calls.append(1) or kernel_of(*a))
        got = _speed.masked(np, k, v)
        want = PLAIN.masked(np, k, v)
        assert calls == ([1] if kernel else []) and got.shape == want.shape == v.shape
        assert np.array_equal(got.view(bits), want.view(bits))


@pytest.mark.parametrize("stride, dilation, pad", [((1, 1), (1, 1), (0, 0)), ((2, 1), (1, 2), (1, 2)),
                                                   ((1, 3), (2, 1), (2, 0)), ((2, 2), (1, 1), (1, 1))])
def test_col2im_is_the_array_maths(stride, dilation, pad):
    """The kernel's sums are the NumPy passes' in the same order; taps on the padding (before the gradient's first
    row and column, and past its last) fall away."""
    rng = np.random.default_rng(stride[0] * 10 + dilation[1] + pad[0])
    n, ho, wo, kh, kw, c = 2, 5, 4, 3, 2, 3
    gcols = rng.standard_normal((n, ho, wo, kh, kw, c)).astype(np.float32) * 10.0 ** rng.integers(-8, 8, (n, ho, wo,
                                                                                                         kh, kw, c))
    gcols[0, 0, 0, 0, 0, 0] = -0.0
    h, w = (ho - 1) * stride[0] + dilation[0] * (kh - 1) + 1, (wo - 1) * stride[1] + dilation[1] * (kw - 1) + 1
    full = PLAIN.col2im(gcols, np.zeros((n, h, w, c), np.float32), *stride, *dilation)
    inner = (slice(None), slice(pad[0], h - pad[0]), slice(pad[1], w - pad[1]))
    for f in (PLAIN.col2im, _speed.col2im):
        got = f(gcols, np.zeros(full[inner].shape, np.float32), *stride, *dilation, *pad)
        assert np.array_equal(got.view(np.int32), full[inner].view(np.int32))      # the same sums in the same order


def test_a_cnns_gradients_are_the_same_without_the_speed_module(plain_path):
    """Conv, max pooling (both layouts) and their gradients with the speed module, then on the plain path."""
    rng = np.random.default_rng(7)
    x, w = _awkward(rng, (2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    g = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)

    def run():
        xt, wt = mf.tensor(x, requires_grad=True), mf.tensor(w, requires_grad=True)
        y = mf.apply("max_pool2d", mf.conv2d(xt, wt, padding=1), kernel_size=2, stride=2)
        xl = mf.tensor(x.transpose(0, 2, 3, 1).copy(), requires_grad=True)
        z = mf.apply("max_pool2d", mf.conv2d(xl, mf.tensor(w.transpose(2, 3, 1, 0).copy()), padding=1, layout="NHWC"),
                     kernel_size=2, stride=2, layout="NHWC")
        ((y * mf.tensor(g)).sum() + (z * mf.tensor(g.transpose(0, 2, 3, 1).copy())).sum()).backward()
        return [t.float32() for t in (y, z, xt.grad, wt.grad, xl.grad)]

    fast = run()
    with plain_path():
        plain = run()
    for a, b in zip(fast, plain):
        assert np.array_equal(a.view(np.int32), b.view(np.int32))


def test_float16_selections_are_not_rounded_again(monkeypatch):
    """relu, relu6 and max pooling of float16 tensors select float16 values, and the gradients of relu and relu6
    select values of g: the dispatcher keeps them without rounding them again (two fewer roundings of gradients
    here, which the speed module then skips), the same bits."""
    rng = np.random.default_rng(8)
    x, w = _awkward(rng, (2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    g = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
    rounded = []

    def counted(x, fmt, exact=False, inplace=False, f=SEAMS.round_gradient):
        if not exact:
            rounded.append(x.shape)
        return f(x, fmt, exact, inplace)
    monkeypatch.setattr(SEAMS, "round_gradient", counted)

    def run():
        rounded.clear()
        xt, wt = mf.tensor(x, dtype="float16", requires_grad=True), mf.tensor(w, dtype="float16", requires_grad=True)
        h = mf.conv2d(xt, wt, padding=1)
        y = mf.apply("max_pool2d", mf.apply("hardtanh", h.relu(), min_val=0.0, max_val=6.0), kernel_size=2, stride=2)
        (y * mf.tensor(g, dtype="float16")).sum().backward()
        return [t.float32() for t in (h, y, xt.grad, wt.grad)], len(rounded)

    kept, count = run()
    for name in ("relu", "max_pool2d", "hardtanh"):
        monkeypatch.setitem(_ops.OPS, name, dataclasses.replace(_ops.OPS[name], selects=False, masks=False))
    again, count_again = run()
    assert count_again == count + 2
    for a, b in zip(kept, again):
        assert np.array_equal(a.view(np.int32), b.view(np.int32))


def test_max_pool_gradient_of_overlapping_windows_is_rounded():
    """An input that is the maximum of two overlapping windows gets the sum of their gradients, rounded once into
    float16 (PyTorch's CUDA kernel sums in float32 and casts) before the op below reads it: 1 + 2**-11 is a tie
    that rounds to 1, so x0's gradient is 3 * 1."""
    x0 = mf.tensor(np.array([[[[0, 0, 5, 0, 0]]]], np.float32), dtype="float16", requires_grad=True)
    y = mf.apply("max_pool2d", x0 * mf.tensor(3.0, dtype="float16"), kernel_size=(1, 3), stride=(1, 2))
    y.backward(mf.tensor(np.array([[[[1.0, 2 ** -11]]]], np.float32), dtype="float16"))
    assert x0.grad.float32()[0, 0, 0].tolist() == [0, 0, 3, 0, 0]


@pytest.mark.parametrize("bounds", [(0.0, 6.0), (-0.1, 0.1), (-1e5, 7e4)])
def test_hardtanh_rounds_the_bounds_its_format_lacks(bounds, monkeypatch):
    """hardtanh's results are its input's values or its bounds: kept as they are where float16 holds both bounds,
    rounded where it does not (0.1, and 7e4 beyond float16's max, which rounds to inf) - the values of clamping
    in float32 and rounding once."""
    x = np.array([-1e6, -7e4, -1, -0.1, -0.0, 0.0, 0.05, 0.1, 5.5, 6, 7, 7e4, 1e6, np.nan], np.float32)
    want = mf.tensor(np.clip(mf.tensor(x, dtype="float16").float32(), *bounds), dtype="float16").float32()
    kept = []
    monkeypatch.setattr(SEAMS, "round_result", lambda x, fmt, exact=False, keep=False, inplace=False, f=SEAMS.round_result:
                        kept.append(exact) or f(x, fmt, exact, keep, inplace))
    got = mf.apply("hardtanh", mf.tensor(x, dtype="float16"), min_val=bounds[0], max_val=bounds[1]).float32()
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    assert kept == [bounds == (0.0, 6.0)]


@pytest.mark.parametrize("stride, padding, dilation", [(1, 1, 1), ((2, 1), ((1, 2), (0, 1)), (1, 2))])
def test_one_channel_columns_are_the_windows(stride, padding, dilation):
    """im2col of one channel copies tap by tap: the same columns as the windows' reshape (both layouts)."""
    x = _awkward(np.random.default_rng(3), (2, 1, 7, 8))
    for xi, last in ((x, False), (x.transpose(0, 2, 3, 1).copy(), True)):
        cols, _ = _ops._cols(np, xi, 3, 2, stride, padding, dilation, 1, last)
        win = _ops._windows(np, xi if last else xi.transpose(0, 2, 3, 1), 3, 2, stride, padding, dilation, last=True)
        want = win.transpose(0, 1, 2, 4, 5, 3).reshape(cols.shape)
        assert np.array_equal(cols.view(np.int32), want.view(np.int32))
        k = np.random.default_rng(4).standard_normal((cols.shape[1], 5)).astype(np.float32)
        finite = dict(nan=0.0, posinf=1.0, neginf=-1.0)     # (nan_to_num keeps the memory layout)
        assert np.array_equal(np.matmul(np.nan_to_num(cols, **finite), k), np.matmul(np.nan_to_num(want, **finite), k))


def test_float64_rounded_to_float32_is_the_plain_paths():
    """float64 values (batch norm's running statistics) rounded into float32: the conversion's bits where every
    value is zero or of normal float32 size, ties, overflows and signed zeros included; the plain path's wherever
    a NaN or a value below float32's smallest normal is among them."""
    rng = np.random.default_rng(3)
    tiny, f = 2.0 ** -126, rng.standard_normal(50).astype(np.float32)
    x = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300),
                        f.astype(np.float64) + np.spacing(f).astype(np.float64) / 2,      # ties
                        [0.0, -0.0, np.inf, -np.inf, 3.4028235677973366e38, -3.4028235e38 * (1 + 2.0 ** -25),
                         tiny, -tiny, 1e39]])
    for extra in ([], [np.nan], [tiny * (1 - 2.0 ** -30)], [-1e-45]):
        v = np.concatenate([x, extra]).reshape(1, -1) if extra else x[:358].reshape(2, -1)
        got, want = _speed.rounded(v, mf.float32), PLAIN.rounded(v, mf.float32)
        assert got.dtype == want.dtype == np.float32 and got.shape == v.shape
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    out = np.empty(x.size, np.float32)
    assert _speed._narrow_normal(x, out) and not _speed._narrow_normal(np.array([tiny / 2]), out[:1])

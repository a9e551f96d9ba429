"""Convolutions' fast paths against the plain path, bit for bit: the depthwise kernels of minifp/_speed.py against
_ops' passes per tap (ties, signed zeros, infinities, NaNs), through conv2d in both layouts and in the half
formats, and the plain depthwise passes against the GEMMs they replaced where every order sums exactly. Bit for
bit: every bit of every value but a NaN's sign and payload (a NaN is a NaN where the plain path has one).

The speed module's functions are called directly, so these run without the JIT too (their kernels then run as
Python loops, on small arrays)."""

import numpy as np
import pytest

import minifp as mf
from minifp import _ops, _speed
from minifp._seams import PLAIN, SEAMS

# (channels, multiplier m, kernel, stride, padding, dilation): 3x3 stride 1 and 2 (MobileNet's), odd shapes
CASES = [(4, 1, 3, 1, 1, 1), (5, 1, 3, 2, 1, 1), (3, 1, (3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2)),
         (2, 1, 1, 1, 0, 1), (3, 1, 5, 3, 2, 2), (3, 2, 3, 1, 1, 1)]


def _awkward(rng, shape):
    """float32 values with ties (zeros of both signs, small integers), infinities and NaNs, and wide exponents."""
    x = rng.integers(-3, 4, shape).astype(np.float32)
    x[rng.random(shape) < 0.15] = -0.0
    for value, share in ((np.inf, 0.02), (-np.inf, 0.02), (np.nan, 0.02)):
        x[rng.random(shape) < share] = value
    spread = rng.random(shape) < 0.4
    x[spread] = (rng.standard_normal(int(spread.sum())) * 2.0 ** rng.integers(-30, 30, int(spread.sum())))
    return x


def _bits(a):
    """float32 bits, every NaN as one: a NaN's sign and payload out of two NaNs are the compiler's choice (NumPy's
    own loops give the first operand's in the vectorised body, the second's in the tail of the same array)."""
    a = np.asarray(a, np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), a).view(np.int32)


def _same(a, b):
    return a.shape == b.shape and np.array_equal(_bits(a), _bits(b))


def _layout(a):
    """The memory layout: the strides of the axes longer than 1 (later reductions sum in its order)."""
    return [s for s, n in zip(a.strides, a.shape) if n > 1]


def _shapes(case, n=2, h=9, w=8):
    """x's (N, H, W, C), w's (kh, kw, C, m), the pads, (Ho, Wo) and (sh, sw, dh, dw) of a case."""
    c, m, k, s, p, d = case
    (kh, kw), (sh, sw), (dh, dw), pads = _ops._pair(k), _ops._pair(s), _ops._pair(d), _ops._pads(p)
    ho, wo = (h + sum(pads[0]) - dh * (kh - 1) - 1) // sh + 1, (w + sum(pads[1]) - dw * (kw - 1) - 1) // sw + 1
    return (n, h, w, c), (kh, kw, c, m), pads, (ho, wo), (sh, sw, dh, dw)


def _passes(speed, x, w, g, pads, ho, wo, steps):
    """The three depthwise seams of `speed` (the speed module or PLAIN) on one case."""
    return (speed.depthwise(np, x, w, pads, ho, wo, *steps),
            speed.depthwise_grad_x(np, g, w, *x.shape[1:3], pads, *steps),
            speed.depthwise_grad_w(np, x, g, *w.shape[:2], pads, *steps))


@pytest.mark.parametrize("case", CASES)
def test_the_depthwise_kernels_are_the_passes_per_tap(case):
    """Forward, input and weight gradients: the kernels' sums in the plain passes' order, bit for bit (padding
    read as zeros without a padded copy: 0 * inf is NaN there too)."""
    rng = np.random.default_rng(len(CASES) + CASES.index(case))
    xs, ws, pads, (ho, wo), steps = _shapes(case)
    x, w = _awkward(rng, xs), _awkward(rng, ws)
    g = _awkward(rng, (xs[0], ho, wo, xs[3], ws[3]))
    w[0, 0, 0] = g[0, 0, 0, 0] = np.inf         # into the corner's padding
    for got, want in zip(_passes(_speed, x, w, g, pads, ho, wo, steps), _passes(PLAIN, x, w, g, pads, ho, wo, steps)):
        assert _same(got, want) and _layout(got) == _layout(want)


def test_the_depthwise_kernels_serve_one_output_channel_per_input_channel(monkeypatch):
    """float32, C-contiguous, m == 1 takes the kernels; float64 and m > 1 the plain passes."""
    calls = []
    for name in ("_depthwise_kernel", "_depthwise_grad_x_kernel", "_depthwise_grad_w_kernel"):
        monkeypatch.setattr(_speed, name, lambda *a, f=getattr(_speed, name): calls.append(f.__name__) or f(*a))
    rng = np.random.default_rng(1)
    for case, dtype, kernels in ((CASES[0], np.float32, 3), (CASES[0], np.float64, 0), (CASES[-1], np.float32, 0)):
        calls.clear()
        xs, ws, pads, (ho, wo), steps = _shapes(case)
        x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
        g = rng.standard_normal((xs[0], ho, wo, xs[3], ws[3])).astype(dtype)
        outs = _passes(_speed, x, w, g, pads, ho, wo, steps)
        assert len(calls) == kernels and all(o.dtype == dtype for o in outs)


def test_numpy_sums_a_columns_rows_in_order():
    """_ops.depthwise_grad_w's premise: NumPy's sum over axis 0 of a C-contiguous array adds its rows one after
    the other, from +0 (the loop below), whatever the values."""
    rng = np.random.default_rng(2)
    for rows, cols in ((1, 3), (7, 5), (300, 17), (4099, 8)):
        a = _awkward(rng, (rows, cols))
        a[:, 0] = -0.0                          # a column of -0: +0, as a sum from +0
        want = np.zeros(cols, np.float32)
        for row in a:
            want = want + row
        assert _same(np.sum(a, axis=0), want)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", CASES)
def test_the_depthwise_passes_are_the_gemms_where_sums_are_exact(case, layout):
    """On small integers every order of the sums is exact: the passes give the im2col GEMMs' values (an
    accumulation model's namespace, whose matmul is a method, still takes the GEMMs)."""
    class Gemms:
        def __getattr__(self, name):
            return getattr(np, name)

        def matmul(self, a, b):
            return np.matmul(a, b)

    rng = np.random.default_rng(CASES.index(case))
    c, m, k, s, p, d = case
    kh, kw = _ops._pair(k)
    x, w = rng.integers(-3, 4, (2, c, 9, 8)).astype(np.float32), rng.integers(-3, 4, (c * m, 1, kh, kw)).astype(
        np.float32)
    if layout == "NHWC":
        x, w = x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).copy()
    params = dict(stride=s, padding=p, dilation=d, groups=c, layout=layout)
    out = _ops._conv2d(np, x, w, **params)
    assert np.array_equal(out, _ops._conv2d(Gemms(), x, w, **params))
    g = rng.integers(-3, 4, out.shape).astype(np.float32)
    for grad in (_ops._conv2d_grad_x, _ops._conv2d_grad_w):
        got, want = grad(np, g, out, x, w, **params), grad(Gemms(), g, out, x, w, **params)
        assert got.shape == want.shape and np.array_equal(got, want)


def _conv_run(x, w, g, dtype, params):
    """conv2d and its gradients through the engine (x's and w's gradients), float32 values of each."""
    xt, wt = mf.tensor(x, dtype=dtype, requires_grad=True), mf.tensor(w, dtype=dtype, requires_grad=True)
    y = mf.conv2d(xt, wt, **params)
    (y * mf.tensor(g, dtype=dtype)).sum().backward()
    return [t.float32() for t in (y, xt.grad, wt.grad)]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[2]])
def test_depthwise_conv2d_is_the_same_without_the_speed_module(case, layout, dtype, monkeypatch, plain_path):
    """Through the ops (NCHW input channels-last in memory too, as convolutions leave it): the same bits with
    the speed module (its three kernels) and on the plain path, in float32 and the half formats."""
    calls = set()
    for name in ("_depthwise_kernel", "_depthwise_grad_x_kernel", "_depthwise_grad_w_kernel"):
        monkeypatch.setattr(_speed, name, lambda *a, f=getattr(_speed, name): calls.add(f.__name__) or f(*a))
    rng = np.random.default_rng(CASES.index(case) + 10)
    c, m, k, s, p, d = case
    kh, kw = _ops._pair(k)
    x, w = _awkward(rng, (2, 9, 8, c)), rng.standard_normal((kh, kw, 1, c * m)).astype(np.float32)
    params = dict(stride=s, padding=p, dilation=d, groups=c, layout=layout)
    if layout == "NCHW":
        x, w = x.transpose(0, 3, 1, 2), np.ascontiguousarray(w.transpose(3, 2, 0, 1))
    with plain_path():
        g = _awkward(rng, _ops._conv2d(np, x, w, **params).shape)
        plain = _conv_run(x, w, g, dtype, params)
    assert not calls
    fast = _conv_run(x, w, g, dtype, params)
    assert len(calls) == 3 or not _speed.ENABLED
    for a, b in zip(fast, plain):
        assert _same(a, b)


@pytest.mark.parametrize("last", [False, True])
def test_a_1x1_kernels_input_gradient_is_col2im_without_the_zeros(last):
    """A 1x1 kernel at stride 1 without padding: its columns' gradient is the input's (-0 as +0, NaNs kept), the
    same bits and layout as col2im's sums into zeros."""
    rng = np.random.default_rng(5)
    gcols = _awkward(rng, (2, 5, 4, 1, 1, 3))
    shape = (2, 5, 4, 3) if last else (2, 3, 5, 4)
    got = _ops._untap_last(np, gcols, shape, 1, 0, (2, 3), last)
    want = PLAIN.col2im(gcols, np.zeros((2, 5, 4, 3), np.float32), 1, 1, 2, 3)
    want = want if last else want.transpose(0, 3, 1, 2)
    assert _same(got, want) and got.strides == want.strides
    assert not np.signbit(got[got == 0]).any() and np.isnan(got).sum() == np.isnan(gcols).sum()


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_a_grouped_convs_input_gradient_is_the_passes_per_tap(layout, plain_path):
    """Groups of several channels: col2im's one pass (the speed module's kernel) gives _untap's sums, tap by
    tap, bit for bit."""
    rng = np.random.default_rng(6)
    params = dict(stride=(2, 1), padding=((1, 2), (0, 1)), dilation=(1, 2), groups=2, layout=layout)
    x, w = _awkward(rng, (2, 4, 7, 8)), _awkward(rng, (6, 2, 3, 2))
    if layout == "NHWC":
        x, w = x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).copy()
    g = _awkward(rng, _ops._conv2d(np, x, w, **params).shape)
    gl = g if layout == "NHWC" else g.transpose(0, 2, 3, 1)
    gcols = np.matmul(gl.reshape(-1, 2, 3).transpose(1, 0, 2), _ops._oihw(w, layout).reshape(2, 3, -1))
    gcols = gcols.transpose(1, 0, 2).reshape(*gl.shape[:3], 4, 3, 2)     # (N, Ho, Wo, C, kh, kw): _untap's
    want = _ops._untap(np, gcols, x.shape, params["stride"], params["padding"], params["dilation"], layout == "NHWC")
    with plain_path():
        plain = _ops._conv2d_grad_x(np, g, None, x, w, **params)
    assert _same(_ops._conv2d_grad_x(np, g, None, x, w, **params), want) and _same(plain, want)


def test_the_cuda_float16_convolutions_bias_is_the_kernels(monkeypatch, plain_path):
    """Under cuda float16 autocast the convolution's sums are rounded before its bias is added (a staged op): the
    bias still goes in by the kernel, with the plain path's bits."""
    calls = []
    monkeypatch.setattr(_speed, "_add_bias_kernel", lambda *a, f=_speed._add_bias_kernel: calls.append(1) or f(*a))
    rng = np.random.default_rng(5)
    x, w = _awkward(rng, (4, 3, 32, 32)), rng.standard_normal((32, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)

    def run():
        import minifp.torch as torch
        xt, wt, bt = (torch.tensor(a, device="cuda", requires_grad=True) for a in (x, w, b))
        with torch.autocast("cuda", dtype=torch.float16):
            y = torch.nn.functional.conv2d(xt, wt, bt, padding=1)
        y.backward(torch.ones_like(y))
        return [t.detach().float().numpy() for t in (y, xt.grad, wt.grad, bt.grad)]
    with plain_path():
        plain = run()
    assert not calls
    assert all(_same(a, b) for a, b in zip(run(), plain)) and (calls or not _speed.ENABLED)


@pytest.mark.parametrize("pool", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(3, 2), stride=(1, 2))])
def test_channels_last_data_stays_channels_last_through_padded_convs_and_pooling(pool):
    """A padded convolution's input gradient and an overlapping max pool (forward and gradient) of a convolution's
    channels-last result come out compact and channels-last, as the ReLU and batch-norm kernels next want them
    (a padded slice, or NumPy's C-order pad, sent those to NumPy's passes); the values are those of the same ops
    on C-order data."""
    rng = np.random.default_rng(9)
    x = _awkward(rng, (2, 9, 8, 6)).transpose(0, 3, 1, 2)        # NCHW, channels-last in memory
    w = rng.standard_normal((5, 6, 3, 3)).astype(np.float32)
    g = rng.standard_normal((2, 5, 9, 8)).astype(np.float32).transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2)

    def channels_last(a):
        return not a.flags.c_contiguous and a.transpose(0, 2, 3, 1).flags.c_contiguous

    gx = _ops._conv2d_grad_x(np, g, None, x, w, padding=1)
    assert channels_last(gx)
    assert _same(gx.copy(), _ops._conv2d_grad_x(np, np.ascontiguousarray(g), None, np.ascontiguousarray(x), w,
                                                 padding=1).copy())
    y = _ops._max_pool2d(np, x, **pool)
    want = _ops._max_pool2d(np, np.ascontiguousarray(x), **pool)
    assert channels_last(y) and _same(y.copy(), want.copy())
    gy = _awkward(rng, y.shape)
    gp = _ops._max_pool2d_grad(np, gy, y, x, **pool)
    assert channels_last(gp)
    assert _same(gp.copy(), _ops._max_pool2d_grad(np, gy, want, np.ascontiguousarray(x), **pool).copy())


@pytest.mark.parametrize("last", [False, True])
def test_a_1x1_kernels_columns_are_xs_rows(last):
    """A 1x1 kernel's unpadded stride-1 columns are x's rows, a view of channels-last x (no window views to make),
    the same matrix as the windows'."""
    x = _awkward(np.random.default_rng(2), (2, 5, 4, 6))
    xi = x if last else x.transpose(0, 3, 1, 2)
    cols, size = _ops._cols(np, xi, 1, 1, 1, 0, 1, 1, last)
    win = _ops._windows(np, x, 1, 1, last=True).transpose(0, 1, 2, 4, 5, 3)
    assert size == (2, 5, 4) and np.shares_memory(cols, x)
    assert _same(cols, np.ascontiguousarray(win.reshape(cols.shape)))

"""Dense convolutions' copies (issue 35), bit for bit: the im2col seam's one-pass kernel against the plain path's
padded windows, the weight gradient's blocked copy into OIHW against NumPy's copy of the transposed view, and
conv2d's forward and weight gradient against the formulas they replaced (the same GEMM operands, so the same
sums), the weight gradient now C-contiguous OIHW. Copies keep every bit, NaN payloads included.

The speed module's functions are called directly, so these run without the JIT too (the kernels then run as
Python loops, on small arrays)."""

import numpy as np
import pytest

from minifp import _ops, _speed
from minifp._seams import PLAIN

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # inf - inf in the GEMMs: NaNs on purpose

# (channels, kernel, stride, padding, dilation): 3x3 stride 1 and 2, 1x1 stride 1 and 2, 7x7 stride 2 (ResNet's
# first), asymmetric padding and dilation, padding wider than the input
CASES = [(8, 3, 1, 1, 1), (9, 3, 2, 1, 1), (8, 1, 1, 0, 1), (8, 1, 2, 0, 1), (8, 1, 1, 1, 1), (8, 7, 2, 3, 1),
         (10, (3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2)), (8, 3, 1, 4, 2), (3, 3, 1, 1, 1), (1, 3, 1, 1, 1)]


def _awkward(rng, shape):
    """float32 values with zeros of both signs, ties, infinities, NaNs of several payloads and wide exponents."""
    x = rng.integers(-3, 4, shape).astype(np.float32)
    x[rng.random(shape) < 0.15] = -0.0
    for value, share in ((np.inf, 0.02), (-np.inf, 0.02)):
        x[rng.random(shape) < share] = value
    nans = rng.random(shape) < 0.03
    x.view(np.uint32)[nans] = rng.integers(0x7FC00000, 0x80000000, int(nans.sum()), dtype=np.uint32)
    spread = rng.random(shape) < 0.4
    x[spread] = rng.standard_normal(int(spread.sum())) * 2.0 ** rng.integers(-30, 30, int(spread.sum()))
    return x


def _identical(a, b):
    """Same shape and every bit (a copy keeps NaNs' signs and payloads)."""
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint32),
                                                 np.ascontiguousarray(b).view(np.uint32))


def _inputs(rng, c, layout, n=2, h=7, w=6):
    """x in `layout`: NHWC, NCHW channels-last in memory (as convolutions leave it) or NCHW C-contiguous."""
    if layout == "NCHW":
        return _awkward(rng, (n, c, h, w))
    x = _awkward(rng, (n, h, w, c))
    return x if layout == "NHWC" else x.transpose(0, 3, 1, 2)


def _steps(case):
    c, k, s, p, d = case
    return c, _ops._pair(k), _ops._pair(s), _ops._pads(p), _ops._pair(d)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW-last", "NCHW"])
@pytest.mark.parametrize("case", CASES)
def test_im2col_matches_the_plain_windows(case, layout):
    rng = np.random.default_rng(35)
    c, (kh, kw), (sh, sw), pads, (dh, dw) = _steps(case)
    x = _inputs(rng, c, layout)
    last = layout == "NHWC"
    want = PLAIN.im2col(np, x, last, kh, kw, pads, sh, sw, dh, dw)
    got = _speed.im2col(np, x, last, kh, kw, pads, sh, sw, dh, dw)
    assert _identical(got, want)
    assert got.flags.c_contiguous or (kh, kw, sh, sw) == (1, 1, 1, 1) and not any(map(any, pads))


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("case", CASES[:3] + CASES[6:8])
def test_im2col_kernel_on_any_strides(case, layout):
    """The kernel itself, also where the wrapper hands back to the plain path (few channels, NCHW memory)."""
    rng = np.random.default_rng(36)
    c, (kh, kw), (sh, sw), pads, (dh, dw) = _steps(case)
    x = _inputs(rng, 3, layout)
    xl = x if layout == "NHWC" else x.transpose(0, 2, 3, 1)
    want = PLAIN.im2col(np, x, layout == "NHWC", kh, kw, pads, sh, sw, dh, dw)
    n, ho, wo = xl.shape[0], *[(size + sum(p) - d * (k - 1) - 1) // s + 1 for size, p, d, k, s in
                               ((xl.shape[1], pads[0], dh, kh, sh), (xl.shape[2], pads[1], dw, kw, sw))]
    cols = np.full((n, ho, wo, kh, kw, 3), np.nan, np.float32)
    _speed._im2col_kernel(xl.view(np.uint32), cols.view(np.uint32), pads[0][0], pads[1][0], sh, sw, dh, dw)
    assert _identical(cols.reshape(n * ho * wo, -1), want)


def _old_forward(x, w, stride, padding, dilation):
    """conv2d's NCHW forward as it was: x made channels-last, padded windows copied, the kernel copied as
    (kh*kw*C, O) by NumPy's copy of the transposed view; (N, Ho, Wo, O)."""
    o, c, kh, kw = w.shape
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    win = _ops._windows(np, xl, kh, kw, stride, padding, dilation, last=True).transpose(0, 1, 2, 4, 5, 3)
    cols = win.reshape(-1, kh * kw * c)
    return np.matmul(cols, w.transpose(2, 3, 1, 0).reshape(-1, o)).reshape(*win.shape[:3], o), cols


@pytest.mark.parametrize("speed", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_conv2d_forward_and_weight_gradient_keep_their_bits(case, speed, plain_path):
    """conv2d (NCHW, channels-last x as convolutions leave it) against the formulas it replaced: the same GEMM
    operands, so the same bits; the weight gradient OIHW over the GEMM's (kh, kw, C, O) as it lies (an update then
    lays the weight out so, and the next forward reads it without a copy)."""
    rng = np.random.default_rng(38)
    c, k, s, p, d = case
    kh, kw = _ops._pair(k)
    x = _inputs(rng, c, "NCHW-last")
    w = _awkward(rng, (5, c, kh, kw))
    params = {"stride": s, "padding": p, "dilation": d}
    want, cols = _old_forward(x, w, s, p, d)
    g = _awkward(rng, want.shape).transpose(0, 3, 1, 2)
    want_gw = np.matmul(cols.T, g.transpose(0, 2, 3, 1).reshape(-1, 5)).reshape(kh, kw, c, 5).transpose(3, 2, 0, 1)
    if speed:
        got, gw = _ops._conv2d(np, x, w, **params), _ops._conv2d_grad_w(np, g, None, x, w, **params)
    else:
        with plain_path():
            got, gw = _ops._conv2d(np, x, w, **params), _ops._conv2d_grad_w(np, g, None, x, w, **params)
    assert _identical(got, want.transpose(0, 3, 1, 2))
    assert _identical(gw, want_gw) and gw.transpose(2, 3, 1, 0).flags.c_contiguous


def test_conv2d_nhwc_weight_gradient_stays_hwio():
    """TensorFlow's layout: the kernel (kh, kw, C, O) is the GEMM's partner as it lies, and so is its gradient."""
    rng = np.random.default_rng(39)
    x, w = _awkward(rng, (2, 6, 5, 8)), _awkward(rng, (3, 3, 8, 4))
    out = _ops._conv2d(np, x, w, padding=1, layout="NHWC")
    g = _awkward(rng, out.shape)
    cols = PLAIN.im2col(np, x, True, 3, 3, _ops._pads(1), 1, 1, 1, 1)
    assert _identical(out, np.matmul(cols, w.reshape(-1, 4)).reshape(out.shape))
    gw = _ops._conv2d_grad_w(np, g, None, x, w, padding=1, layout="NHWC")
    assert _identical(gw, np.matmul(cols.T, g.reshape(-1, 4)).reshape(w.shape)) and gw.flags.c_contiguous

"""The numerics rule, the gradient of every registered op, and the dispatcher's errors."""
import math

import ml_dtypes
import numpy as np
import pytest

import minifp as mf
from minifp._ops import OPS
from minifp._compute import unbroadcast as _unbroadcast

FORMATS = [mf.float16, mf.bfloat16, mf.float8_e4m3, mf.float8_e5m2, mf.tf32, mf.float32, mf.Format(3, 4),
           mf.Format(8, 20)]


def _two(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Convolution as a sum over kernel taps and groups (not the engine's im2col), accumulated in float64."""
    (sh, sw), (dh, dw) = _two(stride), _two(dilation)
    (pt, pb), (pl, pr) = [_two(p) for p in _two(padding)]
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    o, cg, kh, kw = w.shape
    ho, wo = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1, (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[0], o, ho, wo))
    og = o // groups
    for grp in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = x[:, grp * cg:(grp + 1) * cg, i * dh:i * dh + sh * ho:sh, j * dw:j * dw + sw * wo:sw]
                out[:, grp * og:(grp + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                             w[grp * og:(grp + 1) * og, :, i, j].astype(np.float64))
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def _pool_out(size, k, s, p, d, ceil):
    """Output size along one axis for padding p = (before, after)."""
    span = size + p[0] + p[1] - d * (k - 1) - 1
    out = -(-span // s) + 1 if ceil else span // s + 1
    return out - 1 if ceil and (out - 1) * s >= size + p[0] else out


def _pool_pads(padding):
    """((top, bottom), (left, right)) from an int, a pair or two explicit pairs."""
    return tuple(_two(p) for p in _two(padding))


def _channels_last(ref):
    """The NCHW reference applied to layout='NHWC' inputs (TensorFlow's (kh, kw, in, out) kernels) by transposing."""
    def run(x, *args, layout="NCHW", **params):
        if layout == "NCHW":
            return ref(x, *args, **params)
        args = [a.transpose(3, 2, 0, 1) if i == 0 and ref is _conv2d else a for i, a in enumerate(args)]
        return ref(x.transpose(0, 3, 1, 2), *args, **params).transpose(0, 2, 3, 1)
    return run


def _max_pool2d(x, kernel_size, stride, padding=0, dilation=1, ceil_mode=False):
    """Max pooling by explicit loops over output positions and window taps."""
    (kh, kw), (sh, sw), (dh, dw) = map(_two, (kernel_size, stride, dilation))
    ph, pw = _pool_pads(padding)
    ho = _pool_out(x.shape[2], kh, sh, ph, dh, ceil_mode)
    wo = _pool_out(x.shape[3], kw, sw, pw, dw, ceil_mode)
    out = np.full(x.shape[:2] + (ho, wo), -np.inf, x.dtype)
    for a in range(ho):
        for b in range(wo):
            for i in range(kh):
                for j in range(kw):
                    r, c = a * sh - ph[0] + i * dh, b * sw - pw[0] + j * dw
                    if 0 <= r < x.shape[2] and 0 <= c < x.shape[3]:
                        out[:, :, a, b] = np.maximum(out[:, :, a, b], x[:, :, r, c])
    return out


def _avg_pool2d(x, kernel_size, stride, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Average pooling by loops, with PyTorch's divisor rules written out (AvgPool2d.cpp)."""
    (kh, kw), (sh, sw) = map(_two, (kernel_size, stride))
    ph, pw = _pool_pads(padding)
    ho, wo = _pool_out(x.shape[2], kh, sh, ph, 1, ceil_mode), _pool_out(x.shape[3], kw, sw, pw, 1, ceil_mode)
    out = np.zeros(x.shape[:2] + (ho, wo), np.float64)
    for a in range(ho):
        for b in range(wo):
            h0, w0 = a * sh - ph[0], b * sw - pw[0]
            h1, w1 = min(h0 + kh, x.shape[2] + ph[1]), min(w0 + kw, x.shape[3] + pw[1])
            size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, x.shape[2]), min(w1, x.shape[3])
            div = divisor_override or (size if count_include_pad else (h1 - h0) * (w1 - w0))
            out[:, :, a, b] = x[:, :, h0:h1, w0:w1].astype(np.float64).sum(axis=(2, 3)) / div
    return out


def _adaptive_avg_pool2d(x, output_size):
    out = np.zeros(x.shape[:2] + tuple(output_size))
    for a in range(output_size[0]):
        for b in range(output_size[1]):
            h0, h1 = int(np.floor(a * x.shape[2] / output_size[0])), int(np.ceil((a + 1) * x.shape[2] / output_size[0]))
            w0, w1 = int(np.floor(b * x.shape[3] / output_size[1])), int(np.ceil((b + 1) * x.shape[3] / output_size[1]))
            out[:, :, a, b] = x[:, :, h0:h1, w0:w1].astype(np.float64).mean(axis=(2, 3))
    return out


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x, approximate="none"):
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _normalize(x, axes, eps, mean=None, var=None):
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True) if mean is None else mean
    var = x.var(axis=axes, keepdims=True) if var is None else var
    return (x - mean) / np.sqrt(var + eps)


def _layer_norm(x, w=None, b=None, normalized_ndim=1, eps=1e-5):
    y = _normalize(x, tuple(range(x.ndim - normalized_ndim, x.ndim)), eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def _group_norm(x, w=None, b=None, num_groups=1, eps=1e-5):
    y = _normalize(x.reshape(x.shape[0], num_groups, -1), (2,), eps).reshape(x.shape)
    c = (1, -1) + (1,) * (x.ndim - 2)
    return y * (1 if w is None else w.reshape(c)) + (0 if b is None else b.reshape(c))


def _batch_norm(x, w=None, b=None, mean=None, var=None, eps=1e-5):
    c = (1, -1) + (1,) * (x.ndim - 2)
    stats = (None, None) if mean is None else (np.reshape(mean, c), np.reshape(var, c))
    y = _normalize(x, (0,) + tuple(range(2, x.ndim)), eps, *stats)
    return y * (1 if w is None else w.reshape(c)) + (0 if b is None else b.reshape(c))


def _nll_loss(x, target, weight=None, ignore_index=-100, reduction="mean"):
    """Sample by sample, as the formula in PyTorch's NLLLoss documentation."""
    x = np.moveaxis(x.astype(np.float64), 1, -1).reshape(-1, x.shape[1])
    t = np.asarray(target).reshape(-1)
    w = np.ones(x.shape[1]) if weight is None else np.asarray(weight, np.float64)
    losses, weights = np.zeros(len(t)), np.zeros(len(t))
    for i, c in enumerate(t):
        if c != ignore_index:
            losses[i], weights[i] = -w[c] * x[i, c], w[c]
    if reduction == "none":
        return losses.reshape(np.shape(target))
    return losses.sum() if reduction == "sum" else losses.sum() / weights.sum()


def _reduced(loss, reduction):
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def _bce_with_logits(x, y, weight=None, pos_weight=None, reduction="mean"):
    x, y = x.astype(np.float64), y.astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    pw = 1 if pos_weight is None else pos_weight
    loss = -(pw * y * np.log(p) + (1 - y) * np.log(1 - p))
    return _reduced(loss * (1 if weight is None else weight), reduction)


def _bce(x, y, weight=None, reduction="mean"):
    x, y = x.astype(np.float64), y.astype(np.float64)
    loss = -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log(1 - x), -100))
    return _reduced(loss * (1 if weight is None else weight), reduction)


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


# One independent reference per registered op, written with NumPy and not with the registry's bodies:
# a new op without one fails test_every_op_has_a_reference.
def _put(x, value, index):
    out = x.copy()
    out[index] = value
    return out


def _scatter_reduce(x, src, index, reduce, include_self=True):
    """x with src's values folded into x[index] one at a time, in order (a loop, not ufunc.at)."""
    out, fold = x.copy(), {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}
    targets = np.broadcast_arrays(*(np.asarray(i) for i in index))
    flat = np.ravel_multi_index(targets, x.shape).ravel()
    seen = set()
    for pos, v in zip(flat, np.broadcast_to(src, targets[0].shape).ravel()):
        if pos not in seen and not include_self:
            out.flat[pos] = v
        else:
            out.flat[pos] = fold.get(reduce, np.add)(out.flat[pos], v)
        seen.add(pos)
    if reduce == "mean":
        count = np.bincount(flat, minlength=x.size).reshape(x.shape) + include_self
        out = np.where(count > 0, out / np.maximum(count, 1).astype(x.dtype), out)
    return out
def _multi_margin_loss(x, target, p=1, margin=1.0, weight=None, reduction="mean"):
    n, c = x.shape
    loss = [sum(max(0.0, margin - x[i, target[i]] + x[i, j]) ** p * (1 if weight is None else weight[target[i]])
                for j in range(c) if j != target[i]) / c for i in range(n)]
    return _reduced(np.array(loss, np.float64), reduction)


def _multilabel_margin_loss(x, target, reduction="mean"):
    n, c = x.shape
    loss = []
    for i in range(n):
        listed = list(target[i][:list(target[i]).index(-1)] if -1 in list(target[i]) else target[i])
        loss.append(sum(max(0.0, 1 - (x[i, j] - x[i, k])) for j in listed for k in range(c) if k not in listed) / c)
    return _reduced(np.array(loss, np.float64), reduction)


def _ctc_loss(lp, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """By enumeration: the summed probability of every path of each sample that collapses to its target."""
    import itertools
    losses = []
    for b, (tl, ll) in enumerate(zip(input_lengths, target_lengths)):
        want, total = list(targets[b][:ll]), 0.0
        for path in itertools.product(range(lp.shape[2]), repeat=tl):
            collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or k != path[i - 1])]
            if collapsed == want:
                total += np.exp(sum(lp[t, b, k] for t, k in enumerate(path)))
        losses.append(-np.log(total))
    losses = np.array(losses, np.float64)
    if reduction == "none":
        return losses
    return np.sum(losses / np.maximum(target_lengths, 1)) / len(losses) if reduction == "mean" else np.sum(losses)


def _attention(q, k, v, causal=False, scale=None):
    """softmax(q k^T / sqrt(d)) v, one query row at a time, in float64."""
    out = np.empty(q.shape[:-1] + (v.shape[-1],))
    for b in np.ndindex(q.shape[:-2]):
        for i in range(q.shape[-2]):
            s = k[b].astype(np.float64) @ q[b][i].astype(np.float64) / math.sqrt(q.shape[-1])
            s[i + 1:] = -np.inf if causal else s[i + 1:]
            p = np.exp(s - s.max())
            out[b][i] = (p / p.sum()) @ v[b].astype(np.float64)
    return out.astype(q.dtype)


REFERENCES = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power, "neg": np.negative,
    "maximum": np.maximum, "minimum": np.minimum, "where": lambda c, x, y: np.where(c, x, y),
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs,
    "sin": np.sin, "cos": np.cos, "log1p": np.log1p, "expm1": np.expm1, "rsqrt": lambda x: 1 / np.sqrt(x),
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "trunc": np.trunc, "sign": np.sign,
    "relu": lambda x: np.maximum(x, 0), "clamp": lambda x, min=None, max=None: np.clip(x, min, max), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
    "ne": np.not_equal,
    "sum": lambda x, axis=None, keepdims=False: np.sum(x, axis=axis, keepdims=keepdims),
    "mean": lambda x, axis=None, keepdims=False: np.mean(x, axis=axis, keepdims=keepdims),
    "max": lambda x, axis=None, keepdims=False: np.max(x, axis=axis, keepdims=keepdims),
    "softmax": _softmax, "log_softmax": _log_softmax, "matmul": np.matmul,
    "linear": lambda x, w, b: np.matmul(x, np.swapaxes(w, 0, 1)) + b,     # one rounding, after the bias
    "reshape": lambda x, shape: np.reshape(x, shape), "transpose": lambda x, axes=None: np.transpose(x, axes),
    "getitem": lambda x, index: x[index], "cast": lambda x: x,
    "concatenate": lambda *xs, axis=0: np.concatenate(xs, axis=axis), "conv2d": _channels_last(_conv2d),
    "max_pool2d": _channels_last(_max_pool2d), "avg_pool2d": _channels_last(_avg_pool2d),
    "adaptive_avg_pool2d": _adaptive_avg_pool2d,
    "gelu": _gelu, "silu": lambda x: x / (1 + np.exp(-x.astype(np.float64))),
    "hardtanh": lambda x, min_val=-1.0, max_val=1.0: np.minimum(np.maximum(x, min_val), max_val),
    "dropout": lambda x, mask, scale: np.where(mask, x * x.dtype.type(scale), np.copysign(0, x)),  # x * 0 keeps signs
    "layer_norm": _layer_norm, "group_norm": _group_norm, "batch_norm": _batch_norm,
    "embedding": lambda w, indices, padding_idx=None: np.take(w, indices, axis=0),
    "nll_loss": _nll_loss, "mse_loss": lambda x, y, reduction="mean": _reduced((x - y) ** 2, reduction),
    "l1_loss": lambda x, y, reduction="mean": _reduced(np.abs(x - y), reduction),
    "binary_cross_entropy_with_logits": _bce_with_logits, "binary_cross_entropy": _bce,
    "setitem": _put, "broadcast_to": lambda x, shape: np.broadcast_to(x, shape), "reciprocal": np.reciprocal,
    "var": lambda x, axis=None, correction=1, keepdims=False: np.var(x.astype(np.float64), axis=axis,
                                                                     ddof=correction, keepdims=keepdims),
    "cumsum": lambda x, axis: np.cumsum(x.astype(np.float64), axis=axis),
    "leaky_relu": lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
    # Transcendentals in the wide precision with the same NumPy functions (see ARCHITECTURE, "Adding an op").
    "elu": lambda x, alpha=1.0: np.where(x > 0, x, np.expm1(np.minimum(x, 0)) * x.dtype.type(alpha)),
    "selu": lambda x: np.where(x > 0, x * 1.0507009873554805, np.expm1(np.minimum(x, 0))
                               * (x.dtype.type(1.6732632423543772) * x.dtype.type(1.0507009873554805))),
    "softplus": lambda x, beta=1.0, threshold=20.0: np.where(x * beta > threshold, x,
                                                             np.log1p(np.exp(np.minimum(x * beta, threshold))) / beta),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hardsigmoid": lambda x: np.clip(x + 3, 0, 6) * (1 / 6),      # PyTorch multiplies by a float32 1/6
    "prod": lambda x, axis=None, keepdims=False: np.prod(x.astype(np.float64), axis=axis, keepdims=keepdims),
    "logsumexp": lambda x, axis=None, keepdims=False: np.log(np.sum(np.exp(x.astype(np.float64)), axis=axis,
                                                                   keepdims=keepdims)),
    "scatter_reduce": _scatter_reduce,
    "cumprod": lambda x, axis: np.cumprod(x.astype(np.float64), axis=axis),
    "logcumsumexp": lambda x, axis: np.logaddexp.accumulate(x.astype(np.float64), axis=axis),
    "acos": np.arccos, "asin": np.arcsin, "atan": np.arctan, "acosh": np.arccosh, "asinh": np.arcsinh,
    "atanh": np.arctanh, "sinh": np.sinh, "cosh": np.cosh, "tan": np.tan, "log2": np.log2, "log10": np.log10,
    "exp2": np.exp2, "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2, "copysign": np.copysign, "fmod": np.fmod, "remainder": np.remainder,
    "xlogy": lambda x, y: np.where((x == 0) & ~np.isnan(y), 0, x * np.log(y)).astype(x.dtype),
    "div_floor": np.floor_divide,
    "round_decimals": lambda x, decimals=0: (np.round(x * x.dtype.type(10.0**decimals)) / x.dtype.type(10.0**decimals)
                                             if decimals >= 0 else np.round(x / x.dtype.type(10.0**-decimals))
                                             * x.dtype.type(10.0**-decimals)),
    "logit": lambda x, eps=None: np.log((z := x if eps is None else np.clip(x, eps, 1 - eps)) / (1 - z)),
    "lerp": lambda x, y, w: np.where(np.abs(w) < 0.5, x + w * (y - x), y - (y - x) * (1 - w)),
    "addcmul": lambda x, a, b, value=1.0: x + value * a * b, "addcdiv": lambda x, a, b, value=1.0: x + value * a / b,
    "erf": np.vectorize(math.erf, otypes=[np.float64]), "erfc": np.vectorize(math.erfc, otypes=[np.float64]),
    "erfinv": np.vectorize(lambda y: _erfinv(y), otypes=[np.float64]),
    "sinc": lambda x: np.where(x == 0, 1, np.sin(x * x.dtype.type(np.pi))
                               / np.where(x == 0, 1, x * x.dtype.type(np.pi))),
    "log_sigmoid": lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))),
    "celu": lambda x, alpha=1.0: np.where(x > 0, x, np.expm1(np.minimum(x, 0) * x.dtype.type(1 / alpha)) * alpha),
    "huber_loss": lambda x, y, delta=1.0, reduction="mean": _reduced(
        np.where(np.abs(x - y) < delta, 0.5 * (x - y) ** 2, delta * (np.abs(x - y) - 0.5 * delta)), reduction),
    "smooth_l1_loss": lambda x, y, beta=1.0, reduction="mean": _reduced(
        np.where(np.abs(x - y) < beta, 0.5 * (x - y) ** 2 / beta, np.abs(x - y) - 0.5 * beta), reduction),
    "multi_margin_loss": _multi_margin_loss, "multilabel_margin_loss": _multilabel_margin_loss,
    "ctc_loss": _ctc_loss,
    "attention": _attention,
    "vector_norm": lambda x, ord=2, axis=None, keepdims=False: (
        np.max(np.abs(x), axis=axis, keepdims=keepdims) if ord == math.inf else
        np.sum(np.abs(x.astype(np.float64)) ** ord, axis=axis, keepdims=keepdims) ** (1 / ord)),
}
def _erfinv(y):
    """erfinv by bisection on math.erf (float64)."""
    if not -1 <= y <= 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2


# Sums in the BLAS's own order (or reductions and transcendentals computed in float32, or erf by a fit), which the
# float64 reference does not follow: within a few units in the last place, on moderate inputs.
BLAS_ORDER = {"var", "cumsum", "conv2d", "avg_pool2d", "adaptive_avg_pool2d", "gelu", "silu", "layer_norm", "group_norm",
              "batch_norm", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits",
              "binary_cross_entropy", "prod", "logsumexp", "cumprod", "logcumsumexp", "erf", "erfc", "erfinv",
              "huber_loss", "smooth_l1_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss",
              "vector_norm"}


def values(fmt, shape, rng):
    """Representable values of fmt spread over its range, some negative, zeros and edges included."""
    big = np.log2(mf.finfo(fmt).max)
    x = rng.choice([-1, 1], shape) * np.exp2(rng.uniform(np.log2(mf.finfo(fmt).smallest_subnormal), big, shape))
    x.flat[:3] = [0.0, mf.finfo(fmt).max, -mf.finfo(fmt).tiny][:x.size]
    return mf.tensor(x, dtype=fmt)


def bits_equal(t, expected):
    a, b = t.numpy(), np.asarray(expected)
    assert a.dtype == b.dtype and a.shape == b.shape
    same = (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")) | (np.isnan(a.astype(np.float32))
                                                                      & np.isnan(b.astype(np.float32)))
    return same.all()


def test_every_op_has_a_reference():
    missing = sorted(set(OPS) - set(REFERENCES))
    assert not missing, f"ops without an independent reference in tests/test_ops.py: {missing}"


def _inputs(op, fmt, rng):
    """The op's example inputs (float arrays made values of fmt; products get moderate ones) and params."""
    args, params = example(op, rng)
    spread = op.product is None and op.name not in BLAS_ORDER
    return [a if a.dtype == bool else values(fmt, a.shape, rng) if spread else mf.tensor(a, dtype=fmt)
            for a in args], params


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("name", sorted(OPS))
def test_numerics_rule(name, fmt):
    """Every op: the result is the exact op of the widened inputs, rounded once into the output format
    (computed in float32 up to 10 mantissa bits, in float64 above: one rounding either way)."""
    op = OPS[name]
    args, params = _inputs(op, fmt, np.random.default_rng(0))
    wide = np.float32 if fmt.man_bits <= 10 or fmt == mf.float32 else np.float64
    with np.errstate(all="ignore"):
        expected = REFERENCES[name](*(a if isinstance(a, np.ndarray) else a.float32().astype(wide) for a in args),
                                    **params)
        got = mf.apply(name, *args, **params)
    if op.returns_bool:
        assert got.dtype == np.bool_ and np.array_equal(got.numpy(), expected)
    elif name in BLAS_ORDER:
        want = mf.round_to(expected, fmt).astype(np.float32)
        # Statistics computed in float32 cancel: errors are relative to the largest value, not to each.
        scale = 0 if name == "conv2d" else np.max(np.abs(want[np.isfinite(want)]), initial=0)
        np.testing.assert_allclose(got.float32(), want, rtol=4 * 2.0**-fmt.man_bits,
                                   atol=4 * 2.0**-fmt.man_bits * scale)
    else:
        assert got.dtype == fmt
        assert bits_equal(got, mf.round_to(expected, fmt))


def test_formats_wider_than_ten_mantissa_bits_round_once():
    """float32 holds 24 bits: 1 + (2**-21 + 2**-30) would round twice there and lose the 2**-20."""
    f = mf.Format(8, 20)
    got = mf.tensor([1.0], dtype=f) + mf.tensor([2**-21 + 2**-30], dtype=f)
    assert got.item() == 1 + 2**-20


@pytest.mark.parametrize("name, native", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                          ("div", np.divide), ("sqrt", np.sqrt)])
@pytest.mark.parametrize("fmt, storage", [(mf.float16, np.float16), (mf.bfloat16, ml_dtypes.bfloat16)])
def test_matches_native_half_arithmetic(name, native, fmt, storage):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(10_000) * 100, rng.standard_normal(10_000)
    ta, tb = mf.tensor(a, dtype=fmt), mf.tensor(b, dtype=fmt)
    with np.errstate(all="ignore"):
        expected = native(*(t.numpy() for t in ([ta] if name == "sqrt" else [ta, tb])))
        got = mf.apply(name, *([ta] if name == "sqrt" else [ta, tb]))
    assert bits_equal(got, expected.astype(storage))


def test_guide_examples():
    assert mf.tensor([256.0], dtype="float16") ** 2 == np.inf
    assert (mf.tensor([1e-5], dtype="float16") ** 2).item() == 0.0
    assert (mf.tensor([1.0], dtype="float16") + 2**-11).item() == 1.0
    total = mf.tensor([0.0], dtype="float16")
    for _ in range(4096):
        total = total + 1
    assert total.item() == 2048.0


def test_scalars_are_weak_and_formats_promote():
    h, b = mf.tensor([1.0], dtype="float16"), mf.tensor([1.0], dtype="bfloat16")
    assert (h * 2.0).dtype == mf.float16 and (2 + h).dtype == mf.float16
    assert (h + b).dtype == mf.float32
    assert (h + mf.tensor([1.0])).dtype == mf.float32
    assert (mf.tensor([1.0], dtype="float8_e4m3") * h).dtype == mf.float16


def test_matmul_accumulates_in_float32():
    # 4096 products of 1 * 1 (+ one tiny term): a float16 accumulator would stop at 2048.
    x = mf.tensor(np.ones((1, 4096)), dtype="float16")
    assert (x @ mf.tensor(np.ones((4096, 1)), dtype="float16")).item() == 4096.0
    assert mf.sum(x).item() == 4096.0 and mf.sum(x).dtype == mf.float16


def test_reductions_and_softmax_round_once():
    rng = np.random.default_rng(2)
    x = mf.tensor(rng.standard_normal((8, 30)), dtype="bfloat16")
    w = x.float32()
    assert bits_equal(x.sum(axis=1), mf.round_to(w.sum(axis=1), "bfloat16"))
    assert bits_equal(x.mean(axis=0), mf.round_to(w.mean(axis=0), "bfloat16"))
    e = np.exp(w - w.max(axis=-1, keepdims=True))
    assert bits_equal(x.softmax(), mf.round_to(e / e.sum(axis=-1, keepdims=True), "bfloat16"))


def test_nbytes_are_real():
    assert mf.tensor(np.zeros(1000), dtype="float16").nbytes == 2000
    assert mf.tensor(np.zeros(1000), dtype="float8_e5m2").nbytes == 1000
    assert mf.tensor(np.zeros(1000), dtype="tf32").nbytes == 4000


# -- gradients: every registered op, by central differences in float64 ----------------------


def example(op, rng):
    if op.example is not None:
        return op.example(rng)
    shapes = [(3, 4), (4,), (1, 4)][:len(op.inputs)]      # the second input broadcasts
    return tuple(rng.uniform(0.5, 2.0, s) for s in shapes), {}


DIFFERENTIABLE = sorted(name for name, op in OPS.items() if not op.returns_bool)


def _check_gradient(name, args, params, rng):
    """The op's gradient of every float input against central differences of sum(r * op(args))."""
    op = OPS[name]
    ans = op.forward(np, *args, **params)
    r = rng.standard_normal(np.shape(ans))          # loss = sum(r * op(args))
    for i, a in enumerate(args):
        if a.dtype == bool or op.grad(i) is None:
            continue
        analytic = _unbroadcast(np, np.asarray(op.grad(i)(np, r, ans, *args, **params), np.float64), a.shape)
        numeric = np.zeros_like(a)
        h = 1e-6
        for j in np.ndindex(a.shape):
            hi, lo = a.copy(), a.copy()
            hi[j] += h
            lo[j] -= h
            f = [np.sum(r * op.forward(np, *(v if k == i else b for k, b in enumerate(args)), **params))
                 for v in (hi, lo)]
            numeric[j] = (f[0] - f[1]) / (2 * h)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7, err_msg=f"{name}, input {i}")


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_by_finite_differences(name):
    rng = np.random.default_rng(3)
    args, params = example(OPS[name], rng)
    _check_gradient(name, args, params, rng)


# Parameters the ops' examples leave out: TensorFlow's channels-last layout, asymmetric pooling padding.
LAYOUT_CASES = {
    "conv2d NHWC": ("conv2d", lambda rng: ((_u(rng, 2, 5, 6, 4), _u(rng, 3, 2, 2, 6), _u(rng, 6)),
                                           {"stride": (2, 1), "padding": ((1, 2), (0, 1)), "dilation": (1, 2),
                                            "groups": 2, "layout": "NHWC"})),
    "conv2d NHWC depthwise": ("conv2d", lambda rng: ((_u(rng, 2, 5, 5, 3), _u(rng, 3, 3, 1, 6)),
                                                     {"stride": 2, "padding": ((0, 1), (0, 1)), "groups": 3,
                                                      "layout": "NHWC"})),
    "max_pool2d asymmetric": ("max_pool2d", lambda rng: ((rng.permutation(180).reshape(2, 3, 5, 6) / 7.0,),
                                                         {"kernel_size": 2, "stride": 2, "padding": ((0, 1), (0, 0))})),
    "max_pool2d NHWC": ("max_pool2d", lambda rng: ((rng.permutation(180).reshape(2, 5, 6, 3) / 7.0,),
                                                   {"kernel_size": (3, 2), "stride": 2, "padding": ((1, 1), (0, 1)),
                                                    "layout": "NHWC"})),
    "avg_pool2d NHWC asymmetric": ("avg_pool2d", lambda rng: ((_u(rng, 2, 5, 6, 3),),
                                                              {"kernel_size": 3, "stride": 2,
                                                               "padding": ((1, 1), (0, 1)),
                                                               "count_include_pad": False, "layout": "NHWC"})),
}


def _u(rng, *shape):
    return rng.uniform(0.5, 2.0, shape)


@pytest.mark.parametrize("fmt", [mf.float16, mf.bfloat16, mf.float32], ids=str)
@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_layouts_and_asymmetric_padding(case, fmt):
    """Channels-last and asymmetric padding: the reference's values (one rounding) and gradients."""
    name, make = LAYOUT_CASES[case]
    args, params = make(np.random.default_rng(5))
    tensors = [mf.tensor(a, dtype=fmt) for a in args]
    expected = REFERENCES[name](*(t.float32() for t in tensors), **params)
    want = mf.round_to(expected, fmt).astype(np.float32)
    np.testing.assert_allclose(mf.apply(name, *tensors, **params).float32(), want, rtol=4 * 2.0**-fmt.man_bits)
    _check_gradient(name, args, params, np.random.default_rng(6))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("o,c,k", [(16, 8, 3), (24, 16, 1), (8, 3, 5)])
def test_convolution_gemms_take_the_kernel_as_it_lies(layout, o, c, k):
    """The forward's GEMM takes the transpose of the kernel's rows (O, taps x channels) and the input gradient's
    the rows, as views where they can be: the same bits as from the kernel copied into each product's C order."""
    from minifp import _ops
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 9, c)).astype(np.float32)            # NHWC values
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)            # OIHW
    xl, wl = (x, w.transpose(2, 3, 1, 0)) if layout == "NHWC" else (x.transpose(0, 3, 1, 2), w)
    cols, shape = _ops._cols(np, xl, k, k, 1, k // 2, 1, 1, layout == "NHWC")
    hwio = np.ascontiguousarray(w.transpose(2, 3, 1, 0)).reshape(-1, o)
    want = np.matmul(np.ascontiguousarray(cols), hwio).reshape(*shape, o)
    got = _ops._conv_gemm(np, xl, wl, k, k, 1, k // 2, 1, 1, layout)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    g = rng.standard_normal((cols.shape[0], o)).astype(np.float32)
    rows = _ops._kernel_rows(wl, layout)
    assert np.array_equal(np.matmul(g, rows).view(np.int32), np.matmul(g, np.ascontiguousarray(hwio.T)).view(np.int32))


def test_every_op_is_covered():
    assert {"add", "matmul", "getitem", "concatenate", "softmax", "cast", "where"} <= set(DIFFERENTIABLE)
    assert {"lt", "eq"}.isdisjoint(DIFFERENTIABLE)


def test_backward_through_the_dispatcher():
    x = mf.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    b = mf.tensor([0.5, 0.5, 0.5], requires_grad=True)
    y = ((x * b + 1.0).relu() ** 2).sum()
    y.backward()
    # d/dx of (0.5x + 1)^2 = (0.5x + 1) where positive; d/db sums x * 2(bx + 1) over the broadcast axis.
    np.testing.assert_allclose(x.grad.numpy(), [[1.5, 0.0, 2.5]])
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 0.0, 15.0])


def test_gradients_round_into_each_tensors_format():
    w = mf.tensor([1.0, 2.0], requires_grad=True)          # float32 master weight
    h = w.astype("float16")
    y = (h * 1e-8).sum()                                  # the float16 gradient of h is 1e-8 -> 0 (underflow)
    y.backward()
    assert h.dtype == mf.float16 and w.grad.dtype == mf.float32
    assert w.grad.numpy().tolist() == [0.0, 0.0]
    w2 = mf.tensor([1.0], requires_grad=True)
    (w2.astype("float16") * 1e-3).sum().backward()
    assert w2.grad.item() == float(np.float16(1e-3))   # the cast back is exact


def test_leaf_gradients_accumulate_in_the_leaf_format():
    # Each backward adds 1 to a float16 .grad: like any float16 sum it stops at 2048.
    w = mf.tensor([1.0], dtype="float16", requires_grad=True)
    for _ in range(3000):
        (w * 1.0).sum().backward()
    assert w.grad.dtype == mf.float16 and w.grad.item() == 2048.0


def test_no_grad_and_detach():
    w = mf.tensor([1.0], requires_grad=True)
    with mf.no_grad():
        y = w * 2
    assert not y.requires_grad
    assert not (w.detach() * 2).requires_grad


# -- clear errors -------------------------------------------------------------------------


def test_mismatched_shapes():
    with pytest.raises(ValueError, match=r"add \(inputs of shapes \(3,\), \(4,\)\): operands could not be broadcast"):
        mf.tensor([1.0, 2, 3]) + mf.tensor([1.0, 2, 3, 4])
    with pytest.raises(ValueError, match=r"matmul \(inputs of shapes \(2, 3\), \(2, 3\)\)"):
        mf.tensor(np.ones((2, 3))) @ mf.tensor(np.ones((2, 3)))


def test_backward_on_non_scalar_needs_a_gradient():
    y = mf.tensor([1.0, 2.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"only for scalar outputs \(backward\(\) on a tensor of shape \(2,\) needs a gradient"):
        y.backward()
    with pytest.raises(ValueError, match=r"gradient of shape \(3,\) does not match the tensor's shape \(2,\)"):
        y.backward(np.ones(3))
    y.backward(np.ones(2))


def test_backward_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad"):
        (mf.tensor([1.0]) * 2).sum().backward()


def test_raw_storage_is_guarded_and_assign_rounds():
    with pytest.raises(TypeError, match="storage dtype float16"):
        mf.Tensor(np.float32([1.0, 2.0]), mf.float16)
    with pytest.raises(ValueError, match="cannot represent"):
        mf.Tensor(np.float32([1 + 2**-20]), mf.tf32)
    t = mf.Tensor(np.float16([1.0, 2.0]), mf.float16)
    assert t.assign(np.float32([65520.0, 1 + 2**-11])) is t
    assert t.numpy().tolist() == [np.inf, 1.0]              # rounded into float16, not stored as given
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        t.assign(np.zeros(3))
    with pytest.raises(AttributeError):
        t.data = np.float16([0.0, 0.0])


@pytest.mark.parametrize("shape", [(2, 2), (2, 3)])
def test_transpose_with_mixed_sign_axes_has_the_right_gradient(shape):
    w = mf.tensor(np.arange(np.prod(shape), dtype=np.float32).reshape(shape), requires_grad=True)
    r = np.arange(np.prod(shape), dtype=np.float32).reshape(shape[::-1]) + 1
    (w.transpose(-1, 0) * r).sum().backward()
    assert w.grad.shape == shape
    assert np.array_equal(w.grad.numpy(), r.T)


def test_truth_value_follows_numpy_and_pytorch():
    assert not bool(mf.tensor([0.0])) and bool(mf.tensor([[2.0]])) and not mf.tensor(0.0)
    with pytest.raises(ValueError, match="truth value of a tensor of 2 elements is ambiguous"):
        bool(mf.tensor([1.0, 1.0]))
    with pytest.raises(ValueError, match="of 0 elements"):
        bool(mf.tensor(np.zeros(0)))


@pytest.mark.parametrize("dtype", [None, "float16", "bfloat16", "tf32", "float8_e4m3"])
def test_shapes_are_kept_zero_dimensional_ones_too(dtype):
    t = mf.tensor(1.5, dtype=dtype)
    assert t.shape == () and t.item() == 1.5
    assert (t * 2).shape == () and mf.tensor(np.float32(3.0), dtype=dtype).shape == ()
    assert mf.tensor(np.zeros((0, 3)), dtype=dtype).shape == (0, 3)


@pytest.mark.parametrize("call, error, message", [
    (lambda: mf.tensor(None), TypeError, "data must be numbers.*got None"),
    (lambda: mf.tensor([1 + 2j]), TypeError, "data must be real numbers.*complex128.*take .real"),
    (lambda: mf.tensor(["a"]), TypeError, "data must be real numbers"),
    (lambda: mf.tensor([1.0], requires_grad="yes"), TypeError, "requires_grad must be True or False, got 'yes'"),
    (lambda: mf.tensor([1], requires_grad=True), TypeError, "only floating-point tensors can require gradients"),
    (lambda: mf.tensor([1.0]) + None, TypeError, "add: operands must be tensors, arrays or real numbers, got None"),
    (lambda: mf.tensor([1.0]) * (1 + 1j), TypeError, r"mul: operands must be .* real numbers, got \(1\+1j\)"),
    (lambda: mf.tensor([1.0]).assign(["x"]), TypeError, "assign\\(\\): values must be real numbers"),
    (lambda: mf.sum(mf.tensor([1.0]), 0, False, 3), TypeError, r"sum\(x, axis=None, keepdims=False\): too many"),
    (lambda: mf.tensor([1.0]).relu(2), TypeError, r"relu\(self\): too many positional arguments"),
    (lambda: len(mf.tensor(1.0)), TypeError, "len\\(\\) of a 0-d tensor"),
])
def test_bad_input_to_tensors_and_ops(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_functions_and_methods_come_from_the_registry_with_real_signatures():
    import inspect
    for name, op in OPS.items():
        if op.function:
            fn = getattr(mf, name)
            assert fn.__doc__ == op.doc and name in mf.__all__
            assert "self" not in inspect.signature(fn).parameters
        if op.method:
            assert getattr(mf.Tensor, name).__doc__ == op.doc
    assert str(inspect.signature(mf.concatenate)) == "(tensors, axis=0)"
    x = mf.tensor([[1.0, -2.0], [3.0, 4.0]])
    assert mf.sum(x, 0).numpy().tolist() == x.sum(axis=0).numpy().tolist() == [4.0, 2.0]
    assert mf.concatenate([x, x], 1).shape == (2, 4) and (abs(x) == mf.abs(x)).numpy().all()


@pytest.mark.parametrize("fmt", [mf.bfloat16, mf.float8_e4m3, mf.float8_e5m2, mf.float16])
def test_tensors_from_every_storage_dtype(fmt):
    raw = mf.round_to(np.float32([1.5, -3.0, 0.25]), fmt)
    assert mf.tensor(raw).dtype == fmt and mf.tensor(raw).numpy().tolist() == raw.tolist()
    assert mf.tensor(raw, dtype="float32").numpy().tolist() == [1.5, -3.0, 0.25]
    assert mf.tensor([0.0, 0.0, 0.0], dtype=fmt).assign(raw).numpy().tolist() == raw.tolist()


@pytest.mark.parametrize("fmt", ["float16", "bfloat16", "float32"])
def test_linear_takes_keras_kernels_as_they_are(fmt):
    """linear(x, w.T, b, layout="io") is linear(x, w, b) bit for bit, gradients too."""
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (5, 4), (5,)))
    results = []
    for layout, kernel in (("oi", w), ("io", w.T.copy())):
        xs, ks, bs = (mf.tensor(a, dtype=fmt, requires_grad=True) for a in (x, kernel, b))
        y = mf.linear(xs, ks, bs, layout=layout)
        mf.sum(y * y).backward()
        grads = (xs.grad.numpy(), ks.grad.numpy() if layout == "oi" else ks.grad.numpy().T, bs.grad.numpy())
        results.append((y.numpy(),) + grads)
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b_).view(np.uint8))


def test_conv2d_bias_gradient_folds_channels_last_rows_pairwise():
    """The bias gradient over channels-last data (NHWC, or a convolution's NCHW result) sums each channel
    pairwise: the same bits in both layouts, and as close to the float64 sums as NumPy's NCHW reduction."""
    rng = np.random.default_rng(11)
    g = (rng.standard_normal((16, 14, 14, 3)) * 1e3 + 1e4).astype(np.float32)     # 3136 rows: folds to 49
    grad_b = OPS["conv2d"].grads[2]
    nhwc, nchw = grad_b(np, g, None, None, None, layout="NHWC"), grad_b(np, g.transpose(0, 3, 1, 2), None, None, None)
    assert np.array_equal(nhwc, nchw) and nhwc.dtype == np.float32
    exact = g.astype(np.float64).sum(axis=(0, 1, 2))
    reduction = np.ascontiguousarray(g.transpose(0, 3, 1, 2)).sum(axis=(0, 2, 3))   # NumPy's, on NCHW memory
    assert np.abs(nhwc - exact).max() <= max(np.abs(reduction - exact).max(), np.spacing(np.float32(exact.max())))
    assert np.abs(nhwc - exact).max() < np.abs(g.reshape(-1, 3).sum(axis=0) - exact).max()   # row after row


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(7, 5), (4, 3, 2)])
def test_nll_loss_without_weights_is_the_weighted_path_at_weight_one(reduction, shape):
    """No class weights and no target ignored: weights of 1 that are never made. The loss and its gradient are
    the bits of the general path with every class weight 1 (signed zeros, infinities and NaNs among the inputs)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:4] = [-0.0, np.inf, -np.inf, np.nan]
    target = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    g = np.float32(1.5) if reduction != "none" else rng.standard_normal(target.shape).astype(np.float32)
    op = OPS["nll_loss"]
    for weight in (None, np.ones(shape[1], np.float32)):
        params = {"target": target, "weight": weight, "reduction": reduction}
        loss, grad = op.forward(np, x, **params), op.grads[0](np, g, None, x, **params)
        if weight is None:
            fast = loss, grad
    for a, b in zip(fast, (loss, grad)):
        assert np.asarray(a).dtype == np.asarray(b).dtype == np.float32
        np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))

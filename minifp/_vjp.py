"""Gradients as graph tensors: each op's vector-Jacobian product written with the engine's own ops.

A create_graph sweep (`_autograd._sweep_graph`) passes each tensor's gradient, itself a tensor, through
VJP[op name]: one function per input, (g, ans, *inputs, **params) -> that input's gradient (a tensor, or None),
as the registry's gradients are one per input (a variadic op's one function takes the input's index i=). Every
step is an `apply`, recorded in the graph like any forward op, so a later backward differentiates through the
gradients (second order, and third by the same means).

Each function repeats its op's plain gradient step by step, in the same order on the same operands: in float32
every step rounds to float32 as the plain gradient's NumPy arithmetic does, so the first-order values are the
plain sweep's, bit for bit. In a half format every step rounds into the format (PyTorch's gradients of gradients
are tensors too), where the plain gradient computes in float32 and rounds once. Where an op's plain gradient is
no chain of elementwise float32 steps (exact GELU's float64 kernel, indexing's, embedding's and max pooling's
scatters, the convolutions, fused attention, ops linear in their input), `_known` keeps the plain gradient's own
values and gives them a node whose gradient is written out here.
"""
from __future__ import annotations

import math
import types

import numpy as np

from ._backend import array_module
from ._compute import wide
from ._dispatch import apply, function_node
from ._ops import _GELU_TANH, _SELU_ALPHA, _SELU_SCALE, OPS, _axes, _count, _inverse, _pool_windows
from ._rounding import round_to
from ._seams import SEAMS
from ._state import grad_mode
from ._tensor import Tensor, result_class

__all__ = ["VJP", "missing", "SWEEP"]

# The engine's sweep (its `gradients`), handed over by _autograd, which imports this module (so this one cannot
# import it): attention's gradient of a gradient runs a nested sweep
SWEEP = types.SimpleNamespace(gradients=None)


def _f32(x):
    """A Python number as the op bodies see it (a float32 scalar), back as a Python number: exact."""
    return float(np.float32(x))


def _kept(g, x, axis, keepdims):
    """A reduction's gradient reshaped so that it broadcasts against the input x (the registry's _keep): its
    reduced axes of length 1."""
    axes = range(x.ndim) if axis is None else [a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis)]
    return apply("reshape", g, shape=tuple(1 if i in axes else n for i, n in enumerate(x.shape)))


def _zeros(like):
    """Zeros of like's format, shape and class, outside the graph."""
    xp = array_module(like._data)
    return result_class(type(like))._wrap(xp.zeros(like.shape, like._data.dtype), like.fmt, device=like.device)


def _known(name, g, inputs, values, backward):
    """The gradient of op `name` whose values are the plain gradient's (float32 values, rounded into g's format)
    and whose own gradient is backward(gg) -> one gradient per input."""
    out = result_class(type(g))._wrap(round_to(values, g.fmt), g.fmt, device=g.device)
    if any(isinstance(a, Tensor) and a.requires_grad for a in inputs):
        function_node([out], inputs, backward, name=f"{name}_backward")
    return out


def _plain(name, i, g, *inputs, **params):
    """The registry's gradient of input i as the plain sweep computes it on NumPy (float32 values)."""
    return OPS[name].grads[i](array_module(g._data), wide(g), None, *[wide(a) for a in inputs], **params)


def _where(keep, a, b):
    return apply("where", keep, a, b)


# -- arithmetic ---------------------------------------------------------------------------------------------------


def _pow_x(g, ans, x, y):
    # g * (y * x ** (y - 1)), 0 where y == 0: y - 1 in float32, as the op body computes it
    if not isinstance(y, Tensor):
        if y == 0:
            return _zeros(g)
        return apply("mul", g, apply("mul", y, apply("pow", x, _f32(np.float32(y) - 1))))
    slope = apply("mul", g, apply("mul", y, apply("pow", x, apply("sub", y, 1))))
    return _where(apply("eq", y, 0), 0, slope)


def _pow_y(g, ans, x, y):
    # g * (ans * log(x)), 0 where x == 0 and y >= 0
    if not isinstance(x, Tensor):
        with np.errstate(all="ignore"):        # (a negative base's log: NaN, as the op body's)
            log = _f32(np.log(np.float32(x)))
        slope = apply("mul", g, apply("mul", ans, log))
        return _where(apply("ge", y, 0), 0, slope) if x == 0 else slope
    slope = apply("mul", g, apply("mul", ans, apply("log", x)))
    return _where(apply("eq", x, 0), _where(apply("ge", y, 0), 0, slope), slope)


def _pick(g, win, tie):
    """g where this input won, half of g on ties, zero elsewhere (maximum, minimum)."""
    return _where(win, g, _where(tie, apply("mul", g, 0.5), 0))


# -- activations ----------------------------------------------------------------------------------------------


def _sigmoid_of(x):
    return apply("reciprocal", apply("add", 1, apply("exp", apply("neg", x))))


def _silu_x(g, ans, x):
    # g * s * (1 + x * (1 - s)), s = 1 / (1 + exp(-x))
    s = _sigmoid_of(x)
    return apply("mul", apply("mul", g, s), apply("add", 1, apply("mul", x, apply("sub", 1, s))))


def _elu_x(g, ans, x, alpha=1.0, scale=1.0):
    negcoef = _f32(np.float32(alpha) * np.float32(scale))
    below = apply("mul", apply("mul", g, negcoef), apply("exp", apply("minimum", x, 0)))
    return _where(apply("gt", x, 0), apply("mul", g, scale), below)


def _softplus_x(g, ans, x, beta=1.0, threshold=20.0):
    z = apply("exp", apply("minimum", apply("mul", x, beta), threshold))
    return _where(apply("gt", apply("mul", x, beta), threshold), g,
                  apply("div", apply("mul", g, z), apply("add", z, 1)))


def _gelu_x(g, ans, x, approximate="none"):
    if approximate == "tanh":       # the plain gradient's float32 steps, in its order
        x3 = apply("mul", apply("mul", apply("mul", x, 0.044715), x), x)
        t = apply("tanh", apply("mul", apply("add", x, x3), _GELU_TANH))
        left = apply("mul", apply("add", t, 1), 0.5)
        inner = apply("add", apply("mul", apply("mul", x, 3 * 0.044715), x), 1)
        right = apply("mul", apply("mul", apply("mul", apply("mul", x, 0.5), apply("sub", 1, apply("mul", t, t))),
                                   _GELU_TANH), inner)
        return apply("mul", g, apply("add", left, right))
    xp = array_module(x._data)
    values = SEAMS.gelu_grad(xp, wide(g), wide(x), "none")      # one rounding of a float64 product: kept

    def backward(gg):       # d(g * gelu'(x)) = gelu'(x) dg + g * gelu''(x) dx, gelu'' = phi(x) * (2 - x * x)
        xx = apply("mul", x, x)
        phi = apply("mul", apply("exp", apply("mul", xx, -0.5)), 1 / math.sqrt(2 * math.pi))
        dx = apply("mul", apply("mul", gg, g), apply("mul", phi, apply("sub", 2, xx)))
        return (_gelu_x(gg, None, x) if g.requires_grad else None), dx
    return _known("gelu", g, (g, x), values, backward)


# -- reductions and layout ------------------------------------------------------------------------------------


def _sum_x(g, ans, x, axis=None, keepdims=False):
    return apply("broadcast_to", _kept(g, x, axis, keepdims), shape=x.shape)


def _mean_x(g, ans, x, axis=None, keepdims=False):
    return apply("broadcast_to", apply("div", _kept(g, x, axis, keepdims), _count(x.shape, axis)), shape=x.shape)


def _getitem_x(g, ans, x, index):
    # the plain gradient's scatter (repeated indices add in order), whose gradient is indexing again
    xp = array_module(g._data)
    values = OPS["getitem"].grads[0](xp, wide(g), None, wide(x), index)
    return _known("getitem", g, (g,), values, lambda gg: (apply("getitem", gg, index=index),))


def _setitem_x(g, ans, x, value, index):
    # the overwritten values reach nothing: g with zeros written at index (linear in g)
    return apply("setitem", g, _zeros(value), index=index)


def _concatenate_x(g, ans, *xs, i, axis=0):
    start = sum(x.shape[axis] for x in xs[:i])
    index = (slice(None),) * (axis % g.ndim) + (slice(start, start + xs[i].shape[axis]),)
    return apply("getitem", g, index=index)


def _softmax_x(g, ans, x, axis=-1):
    return apply("mul", ans, apply("sub", g, apply("sum", apply("mul", g, ans), axis=axis, keepdims=True)))


def _log_softmax_x(g, ans, x, axis=-1):
    return apply("sub", g, apply("mul", apply("exp", ans), apply("sum", g, axis=axis, keepdims=True)))


def _vector_norm_x(g, ans, x, ord=2, axis=None, keepdims=False):
    if ord not in (1, 2):
        raise NotImplementedError(f"derivative for vector_norm_backward is not implemented for ord={ord} "
                                  f"(minifp's create_graph=True covers ord 1 and 2)")
    gk = _kept(g, x, axis, keepdims)
    if ord == 1:
        return apply("mul", apply("sign", x), gk)
    norm = _kept(ans, x, axis, keepdims)
    return apply("mul", gk, _where(apply("eq", norm, 0), 0, apply("div", x, norm)))


def _unreduced(g, shape, reduction):
    """Each element's gradient from the reduced loss's (the registry's _unreduce): g / n for 'mean'."""
    if reduction == "none":
        return g
    return apply("broadcast_to", g if reduction == "sum" else apply("div", g, math.prod(shape)), shape=shape)


def _l1(g, ans, x, y, reduction="mean"):
    d = apply("sub", x, y)
    return apply("mul", apply("sign", d), _unreduced(g, d.shape, reduction))


def _huber(g, ans, x, y, delta=1.0, reduction="mean"):
    d = apply("sub", x, y)
    return apply("mul", apply("clamp", d, min=-delta, max=delta), _unreduced(g, d.shape, reduction))


def _smooth_l1(g, ans, x, y, beta=1.0, reduction="mean"):
    d = apply("sub", x, y)
    slope = apply("clamp", apply("div", d, beta), min=-1, max=1) if beta else apply("sign", d)   # beta 0: l1
    return apply("mul", slope, _unreduced(g, d.shape, reduction))


def _negative(vjp):
    """The VJP of a loss's target where it is the negated VJP of its input."""
    return lambda *args, **params: apply("neg", vjp(*args, **params))


def _constant(like, a):
    """An array parameter (a loss's weights) as an array of like's module."""
    return array_module(like._data).asarray(a)


def _bce_logits_x(g, ans, x, y, weight=None, pos_weight=None, reduction="mean"):
    # ((1 - y) - lw / (1 + exp(x))) * w, lw = (pos_weight - 1) * y + 1: the plain gradient's CPU steps
    lw = 1 if pos_weight is None else apply("add", apply("mul", _constant(x, pos_weight) - 1, y), 1)
    d = apply("sub", apply("sub", 1, y), apply("div", lw, apply("add", 1, apply("exp", x))))
    d = d if weight is None else apply("mul", d, _constant(x, weight))
    return apply("mul", d, _unreduced(g, d.shape, reduction))


def _bce_logits_y(g, ans, x, y, weight=None, pos_weight=None, reduction="mean"):
    # (-x - log_sigmoid(x) * (pos_weight - 1, or 0)) * w
    lw = 0 if pos_weight is None else _constant(x, pos_weight) - 1
    d = apply("sub", apply("neg", x), apply("mul", apply("log_sigmoid", x), lw))
    d = d if weight is None else apply("mul", d, _constant(x, weight))
    return apply("mul", d, _unreduced(g, d.shape, reduction))


def _var_x(g, ans, x, axis=None, correction=1, keepdims=False):
    # g * (2 * d / dof), d = x - mean(x): the plain gradient's CPU steps
    dof = max(_count(x.shape, axis) - correction, 0)
    d = apply("sub", x, apply("mean", x, axis=axis, keepdims=True))
    return apply("mul", _kept(g, x, axis, keepdims), apply("div", apply("mul", d, 2), dof))


def _max_x(g, ans, x, axis=None, keepdims=False):
    # g shared evenly by the elements equal to the maximum; which ones and how many are constants of the graph
    hit = apply("eq", x, _kept(ans.detach(), x, axis, keepdims))
    count = hit._data.sum(axis=axis, keepdims=True).astype(np.float32)
    return _where(hit, apply("div", _kept(g, x, axis, keepdims), count), 0)


def _logsumexp_x(g, ans, x, axis=None, keepdims=False):
    return apply("mul", _kept(g, x, axis, keepdims), apply("exp", apply("sub", x, _kept(ans, x, axis, keepdims))))


def _hardswish_x(g, ans, x):
    # 0 below -3, g * (x / 3 + 0.5) up to 3, g above
    middle = apply("mul", g, apply("add", apply("div", x, 3), 0.5))
    return _where(apply("lt", x, -3), 0, _where(apply("le", x, 3), middle, g))


def _embedding_w(g, ans, w, indices, padding_idx=None):
    # the plain gradient's scatter, whose gradient picks gg's rows again (none for the padding index)
    def backward(gg):
        rows = apply("embedding", gg, indices=indices)
        if padding_idx is None:
            return (rows,)
        return (_where(np.expand_dims(np.asarray(indices) != padding_idx % w.shape[0], -1), rows, 0),)
    return _known("embedding", g, (g,), _plain("embedding", 0, g, w, indices=indices, padding_idx=padding_idx),
                  backward)


# -- normalisation --------------------------------------------------------------------------------------------


def _normalized(x, axes, eps):
    """(x - mean) * rstd and rstd = 1 / sqrt(var + eps) over axes (the biased variance), as the registry's."""
    mean = apply("mean", x, axis=axes, keepdims=True)
    d = apply("sub", x, mean)
    var = apply("mean", apply("mul", d, d), axis=axes, keepdims=True)
    rstd = apply("div", 1, apply("sqrt", apply("add", var, eps)))
    return apply("mul", apply("sub", x, mean), rstd), rstd


def _norm_grad(gh, xhat, rstd, axes):
    """rstd * (gh - mean(gh) - xhat * mean(gh * xhat)): through normalisation by the batch's statistics."""
    centred = apply("sub", gh, apply("mean", gh, axis=axes, keepdims=True))
    along = apply("mul", xhat, apply("mean", apply("mul", gh, xhat), axis=axes, keepdims=True))
    return apply("mul", rstd, apply("sub", centred, along))


def _last(x, n):
    return tuple(range(x.ndim - n, x.ndim))


def _layer_norm_x(g, ans, x, w=None, b=None, normalized_ndim=1, eps=1e-5):
    axes = _last(x, normalized_ndim)
    return _norm_grad(g if w is None else apply("mul", g, w), *_normalized(x, axes, eps), axes)


def _layer_norm_w(g, ans, x, w=None, b=None, normalized_ndim=1, eps=1e-5):
    return apply("mul", g, _normalized(x, _last(x, normalized_ndim), eps)[0])    # summed to w's shape by _fit


def _channels(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def _per_channel(x):
    return (0,) + tuple(range(2, x.ndim))


def _bn_normalized(x, mean, var, eps):
    """(x - mean) * rstd and rstd per channel: the batch's statistics, or the given ones (constants)."""
    if mean is None:
        return _normalized(x, _per_channel(x), eps)
    mean, var = _constant(x, mean).reshape(_channels(x)), _constant(x, var).reshape(_channels(x))
    rstd = 1 / array_module(var).sqrt(var + eps)
    return apply("mul", apply("sub", x, mean), rstd), rstd


def _batch_norm_x(g, ans, x, w=None, b=None, mean=None, var=None, eps=1e-5):
    gh = g if w is None else apply("mul", g, apply("reshape", w, shape=_channels(x)))
    xhat, rstd = _bn_normalized(x, mean, var, eps)
    return _norm_grad(gh, xhat, rstd, _per_channel(x)) if mean is None else apply("mul", gh, rstd)


def _batch_norm_w(g, ans, x, w=None, b=None, mean=None, var=None, eps=1e-5):
    return apply("sum", apply("mul", g, _bn_normalized(x, mean, var, eps)[0]), axis=_per_channel(x))


def _batch_norm_b(g, ans, x, w=None, b=None, **params):
    return apply("sum", g, axis=_per_channel(x))


def _mse(g, ans, x, y, reduction="mean"):
    # norm * (x - y) * g, norm = 2 / n in float32 for 'mean'
    d = apply("sub", x, y)
    norm = _f32(2 / math.prod(d.shape) if reduction == "mean" else 2)
    return apply("mul", apply("mul", norm, d), g)


# -- products -----------------------------------------------------------------------------------------------


def _swap(a):
    return apply("transpose", a, axes=tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2))


def _rows(a):
    """a's leading axes folded into the rows of one matrix."""
    return apply("reshape", a, shape=(math.prod(a.shape[:-1]), a.shape[-1]))


def _matmul_x(g, ans, x, y):
    if x.ndim > 2 and y.ndim == 2:
        return apply("matmul", g, _swap(y))
    if y.ndim == 1:
        return apply("mul", apply("reshape", g, shape=g.shape + (1,)), y) if x.ndim > 1 else apply("mul", g, y)
    gx = apply("reshape", g, shape=g.shape[:-1] + (1, g.shape[-1])) if x.ndim == 1 else g
    out = apply("matmul", gx, _swap(y))
    return apply("reshape", out, shape=out.shape[:-2] + out.shape[-1:]) if x.ndim == 1 else out


def _matmul_y(g, ans, x, y):
    if x.ndim > 2 and y.ndim == 2:
        return apply("matmul", _swap(_rows(x)), _rows(g))
    if x.ndim == 1:
        return apply("mul", apply("reshape", x, shape=x.shape + (1,) * g.ndim), g) if y.ndim > 1 else \
            apply("mul", g, x)
    gy = apply("reshape", g, shape=g.shape + (1,)) if y.ndim == 1 else g
    out = apply("matmul", _swap(x), gy)
    return apply("reshape", out, shape=out.shape[:-1]) if y.ndim == 1 else out


def _linear_x(g, ans, x, w, b=None, layout="oi"):
    return apply("matmul", g, _swap(w) if layout == "io" else w)


def _linear_w(g, ans, x, w, b=None, layout="oi"):
    g2, x2 = _rows(g), _rows(x)
    return apply("matmul", _swap(x2), g2) if layout == "io" else apply("matmul", _swap(g2), x2)


def _conv_x(g, ans, x, w, b=None, **params):
    # the input's gradient is linear in g and in w: its gradient is the convolution for g and the weight's
    # gradient of (gg, g) for w (x: only its shape)
    def backward(gg):
        return (apply("conv2d", gg, w, **params) if g.requires_grad else None,
                _conv_w(g, None, gg, w, **params) if w.requires_grad else None)
    return _known("conv2d", g, (g, w), _plain("conv2d", 0, g, x, w, None, **params), backward)


def _conv_w(g, ans, x, w, b=None, **params):
    # likewise in g and x: the convolution of x with gg for g, the input's gradient of (g, gg) for x
    def backward(gg):
        return (apply("conv2d", x, gg, **params) if g.requires_grad else None,
                _conv_x(g, None, x, gg, **params) if x.requires_grad else None)
    return _known("conv2d", g, (g, x), _plain("conv2d", 1, g, x, w, None, **params), backward)


def _conv_b(g, ans, x, w, b, layout="NCHW", **params):
    def backward(gg):       # the sum's gradient: gg along the channels, repeated over the positions
        along = gg if layout == "NHWC" else apply("reshape", gg, shape=(1, -1, 1, 1))
        return (apply("broadcast_to", along, shape=tuple(g.shape)),)
    return _known("conv2d", g, (g,), _plain("conv2d", 2, g, x, w, b, layout=layout, **params), backward)


def _argmax_positions(x, kernel_size, stride, padding=0, dilation=1, ceil_mode=False, layout="NCHW"):
    """The flat index into x of each window's first maximum (max_pool2d's choice), in the pooled output's layout;
    -1 where it is padding (a window of -inf only)."""
    xp = array_module(x._data)
    win = _pool_windows(xp, x._data, kernel_size, stride, padding, dilation, ceil_mode, -xp.inf, layout)
    flat = xp.arange(x._data.size, dtype=xp.float64).reshape(x.shape)
    where = _pool_windows(xp, flat, kernel_size, stride, padding, dilation, ceil_mode, -1.0, layout)
    n, ho, wo, c, kh, kw = win.shape
    first = xp.argmax(win.reshape(n, ho, wo, c, kh * kw), axis=-1)[..., None]
    picked = xp.take_along_axis(where.reshape(n, ho, wo, c, kh * kw), first, axis=-1)[..., 0].astype(xp.int64)
    return picked if layout == "NHWC" else picked.transpose(0, 3, 1, 2)


def _max_pool_x(g, ans, x, **params):
    # the plain gradient's scatter to each window's first maximum (linear in g, the choice fixed by x), whose
    # gradient picks gg at those positions again
    def backward(gg):
        at = _argmax_positions(x, **params)
        rows = apply("getitem", apply("reshape", gg, shape=(-1,)), index=(at.clip(0),))     # (-1: a zero below)
        return (_where(at >= 0, rows, 0),)
    values = OPS["max_pool2d"].grads[0](array_module(g._data), wide(g), wide(ans), wide(x), **params)  # (tiles: ans)
    return _known("max_pool2d", g, (g,), values, backward)


def _attention_graph(q, k, v, causal=False, scale=None):
    """softmax(q k^T * scale) v in float32 engine ops: the attention its gradient of gradient differentiates."""
    s = apply("mul", apply("matmul", q, _swap(k)), 1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = _where(np.tril(np.ones(s.shape[-2:], bool)), s, -math.inf)
    return apply("matmul", apply("softmax", s, axis=-1), v)


def _attention_vjp(i):
    """The fused kernel's own gradient (float64, rounded once), whose gradient is that of the same gradient
    written in float32 engine ops (a nested create_graph sweep through _attention_graph)."""
    def vjp(g, ans, q, k, v, causal=False, scale=None):
        inputs = (g, q, k, v)

        def backward(gg):
            with grad_mode(True):
                out = _attention_graph(q, k, v, causal, scale)
                grad = SWEEP.gradients([out], [inputs[1 + i]], [g], create_graph=True)[id(inputs[1 + i])]
                wanted = [a for a in inputs if a.requires_grad]
                found = SWEEP.gradients([grad], wanted, [gg], create_graph=True)
            return tuple(found.get(id(a)) if a.requires_grad else None for a in inputs)
        return _known("attention", g, inputs, _plain("attention", i, g, q, k, v, causal=causal, scale=scale),
                      backward)
    return vjp


def _linear_op(name):
    """The VJP of an op linear in its one input (x only gives a shape): the plain gradient's values, whose own
    gradient is the op applied to gg (the adjoint of the adjoint)."""
    def vjp(g, ans, x, **params):
        return _known(name, g, (g,), _plain(name, 0, g, x, **params), lambda gg: (apply(name, gg, **params),))
    return (vjp,)


def _same(g, *inputs, **params):
    return g


def _negated(g, *inputs, **params):
    return apply("neg", g)


def _times_alpha(g, *inputs, alpha=None):
    """add's gradient for y: g times alpha (as the plain gradient)."""
    return g if alpha is None else apply("mul", g, alpha)


def _negated_times_alpha(g, *inputs, alpha=None):
    return _times_alpha(apply("neg", g), alpha=alpha)


VJP = {
    "add": (_same, _times_alpha),
    "sub": (_same, _negated_times_alpha),
    "mul": (lambda g, ans, x, y: apply("mul", g, y), lambda g, ans, x, y: apply("mul", g, x)),
    "div": (lambda g, ans, x, y, **params: apply("div", g, y, **params),
            lambda g, ans, x, y, **params: apply("mul", apply("neg", g), apply("div", ans, y))),
    "neg": (_negated,),
    "pow": (_pow_x, _pow_y),
    "exp": (lambda g, ans, x: apply("mul", g, ans),),
    "log": (lambda g, ans, x: apply("div", g, x),),
    "reciprocal": (lambda g, ans, x: apply("mul", apply("mul", apply("neg", g), ans), ans),),
    "sqrt": (lambda g, ans, x: apply("div", apply("mul", g, 0.5), ans),),
    "rsqrt": (lambda g, ans, x: apply("mul", apply("mul", apply("mul", apply("mul", g, -0.5), ans), ans), ans),),
    "sin": (lambda g, ans, x: apply("mul", g, apply("cos", x)),),
    "cos": (lambda g, ans, x: apply("mul", apply("neg", g), apply("sin", x)),),
    "tanh": (lambda g, ans, x: apply("mul", g, apply("sub", 1, apply("mul", ans, ans))),),
    "sigmoid": (lambda g, ans, x: apply("mul", apply("mul", g, apply("sub", 1, ans)), ans),),
    "relu": (lambda g, ans, x: _where(apply("gt", x, 0), g, 0),),
    "leaky_relu": (lambda g, ans, x, negative_slope=0.01:
                   _where(apply("gt", x, 0), g, apply("mul", g, negative_slope)),),
    "elu": (_elu_x,),
    "selu": (lambda g, ans, x: _elu_x(g, ans, x, alpha=_SELU_ALPHA, scale=_SELU_SCALE),),
    "hardtanh": (lambda g, ans, x, min_val=-1.0, max_val=1.0:
                 _where(apply("gt", x, min_val), _where(apply("lt", x, max_val), g, 0), 0),),
    "log1p": (lambda g, ans, x: apply("div", g, apply("add", 1, x)),),
    "expm1": (lambda g, ans, x: apply("mul", g, apply("add", ans, 1)),),
    "softplus": (_softplus_x,),
    "silu": (_silu_x,),
    "gelu": (_gelu_x,),
    "abs": (lambda g, ans, x: apply("mul", g, apply("sign", x)),),
    "maximum": (lambda g, ans, x, y: _pick(g, apply("gt", x, y), apply("eq", x, y)),
                lambda g, ans, x, y: _pick(g, apply("gt", y, x), apply("eq", x, y))),
    "minimum": (lambda g, ans, x, y: _pick(g, apply("lt", x, y), apply("eq", x, y)),
                lambda g, ans, x, y: _pick(g, apply("lt", y, x), apply("eq", x, y))),
    "where": (None, lambda g, ans, c, x, y: _where(c, g, 0), lambda g, ans, c, x, y: _where(c, 0, g)),
    "clamp": (lambda g, ans, x, min=None, max=None:
              _where(apply("eq", x, x) if min is None else apply("ge", x, min),
                     g if max is None else _where(apply("le", x, max), g, 0), 0),),
    "sum": (_sum_x,),
    "mean": (_mean_x,),
    "reshape": (lambda g, ans, x, shape: apply("reshape", g, shape=x.shape),),
    "transpose": (lambda g, ans, x, axes=None: apply("transpose", g, axes=_inverse(_axes(axes, x.ndim))),),
    "broadcast_to": (_same,),
    "cast": (_same,),
    "getitem": (_getitem_x,),
    "setitem": (_setitem_x, lambda g, ans, x, value, index: apply("getitem", g, index=index)),
    "concatenate": (_concatenate_x,),
    "softmax": (_softmax_x,),
    "log_softmax": (_log_softmax_x,),
    "vector_norm": (_vector_norm_x,),
    "mse_loss": (_mse, lambda g, ans, x, y, **params: apply("neg", _mse(g, ans, x, y, **params))),
    "matmul": (_matmul_x, _matmul_y),
    "linear": (_linear_x, _linear_w, _same),
    "conv2d": (_conv_x, _conv_w, _conv_b),
    "l1_loss": (_l1, _negative(_l1)),
    "huber_loss": (_huber, _negative(_huber)),
    "smooth_l1_loss": (_smooth_l1, _negative(_smooth_l1)),
    "binary_cross_entropy_with_logits": (_bce_logits_x, _bce_logits_y),
    "log_sigmoid": (lambda g, ans, x: apply("div", g, apply("add", 1, apply("exp", x))),),
    "var": (_var_x,),
    "logsumexp": (_logsumexp_x,),
    "hardswish": (_hardswish_x,),
    "max": (_max_x,),
    "embedding": (_embedding_w,),
    "layer_norm": (_layer_norm_x, _layer_norm_w, _same),
    "batch_norm": (_batch_norm_x, _batch_norm_w, _batch_norm_b),
    "max_pool2d": (_max_pool_x,),
    "attention": (_attention_vjp(0), _attention_vjp(1), _attention_vjp(2)),
    "avg_pool2d": _linear_op("avg_pool2d"),
    "cumsum": _linear_op("cumsum"),
    "dropout": _linear_op("dropout"),
    "nll_loss": _linear_op("nll_loss"),
}


def missing(op):
    """PyTorch's error for an op whose gradient minifp cannot yet record as a graph (None: it can)."""
    if op.name in VJP or op.name == "function":
        return None
    return NotImplementedError(f"derivative for {op.name}_backward is not implemented (minifp's create_graph=True "
                               f"has no graph gradient for '{op.name}' yet)")

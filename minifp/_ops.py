"""The op registry: each op is its forward, one gradient per input, and its autocast category.

Forwards and gradients are pure array math on float32 arrays through `xp`
(numpy or cupy). They never round, cast, unbroadcast or touch the graph: the
dispatcher in _tensor.py does all of that, once, for every op.
A gradient takes (xp, g, ans, *inputs, **params) and returns the gradient
with respect to its input, in the broadcast shape.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

LOWER, FLOAT32, PROMOTE = "lower_precision", "float32", "promote"


@dataclass(frozen=True)
class Op:
    """One primitive: its forward, a gradient function per input (None: not differentiable), its category."""

    name: str
    forward: Callable
    grads: tuple
    category: str = PROMOTE
    layout: bool = False   # moves values without arithmetic: may run on storage arrays directly
    returns_bool: bool = False
    example: Callable | None = None   # rng -> (args, params) for the gradient check, where shapes matter


OPS: dict[str, Op] = {}


def defop(name, forward, *grads, category=PROMOTE, layout=False, returns_bool=False, example=None):
    """Register a primitive."""
    OPS[name] = Op(name, forward, grads, category, layout, returns_bool, example)
    return OPS[name]


def _u(rng, *shape):
    return rng.uniform(0.5, 2.0, shape)


# -- elementwise arithmetic -------------------------------------------------
defop("add", lambda xp, x, y: x + y, lambda xp, g, ans, x, y: g, lambda xp, g, ans, x, y: g)
defop("sub", lambda xp, x, y: x - y, lambda xp, g, ans, x, y: g, lambda xp, g, ans, x, y: -g)
defop("mul", lambda xp, x, y: x * y, lambda xp, g, ans, x, y: g * y, lambda xp, g, ans, x, y: g * x)
defop("div", lambda xp, x, y: x / y, lambda xp, g, ans, x, y: g / y, lambda xp, g, ans, x, y: -g * ans / y)
defop("neg", lambda xp, x: -x, lambda xp, g, ans, x: -g)
defop("pow", lambda xp, x, y: x ** y,
      lambda xp, g, ans, x, y: g * y * x ** xp.where(y == 0, 1, y - 1),
      lambda xp, g, ans, x, y: g * ans * xp.log(xp.where(x > 0, x, 1)),
      category=FLOAT32)


def _pick(xp, g, win, tie):
    """g where this input won, half of g on ties (as PyTorch's maximum/minimum), zero elsewhere."""
    return xp.where(win, g, xp.where(tie, g * 0.5, 0))


defop("maximum", lambda xp, x, y: xp.maximum(x, y),
      lambda xp, g, ans, x, y: _pick(xp, g, x > y, x == y), lambda xp, g, ans, x, y: _pick(xp, g, y > x, x == y))
defop("minimum", lambda xp, x, y: xp.minimum(x, y),
      lambda xp, g, ans, x, y: _pick(xp, g, x < y, x == y), lambda xp, g, ans, x, y: _pick(xp, g, y < x, x == y))
defop("where", lambda xp, c, x, y: xp.where(c, x, y), None,
      lambda xp, g, ans, c, x, y: xp.where(c, g, 0), lambda xp, g, ans, c, x, y: xp.where(c, 0, g),
      example=lambda rng: ((rng.random((3, 4)) > 0.5, _u(rng, 3, 4), _u(rng, 4)), {}))

# -- unary math ---------------------------------------------------------------
defop("exp", lambda xp, x: xp.exp(x), lambda xp, g, ans, x: g * ans, category=FLOAT32)
defop("log", lambda xp, x: xp.log(x), lambda xp, g, ans, x: g / x, category=FLOAT32)
defop("sqrt", lambda xp, x: xp.sqrt(x), lambda xp, g, ans, x: g * 0.5 / ans)
defop("tanh", lambda xp, x: xp.tanh(x), lambda xp, g, ans, x: g * (1 - ans * ans))
defop("sigmoid", lambda xp, x: 1 / (1 + xp.exp(-x)), lambda xp, g, ans, x: g * ans * (1 - ans))
defop("relu", lambda xp, x: xp.maximum(x, 0), lambda xp, g, ans, x: xp.where(x > 0, g, 0))
defop("abs", lambda xp, x: xp.abs(x), lambda xp, g, ans, x: g * xp.sign(x))

# -- comparisons (no gradient, bool results) -----------------------------------
for _name, _fn in {"lt": lambda xp, x, y: x < y, "le": lambda xp, x, y: x <= y, "gt": lambda xp, x, y: x > y,
                   "ge": lambda xp, x, y: x >= y, "eq": lambda xp, x, y: x == y,
                   "ne": lambda xp, x, y: x != y}.items():
    defop(_name, _fn, None, None, returns_bool=True)


# -- reductions (float32 accumulation) -----------------------------------------
def _keep(xp, a, shape, axis, keepdims):
    """Re-insert reduced axes so `a` broadcasts against the input."""
    if keepdims or axis is None:
        return a if axis is not None else xp.reshape(a, (1,) * len(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return xp.expand_dims(a, tuple(ax % len(shape) for ax in axes))


def _count(shape, axis):
    axes = range(len(shape)) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    n = 1
    for ax in axes:
        n *= shape[ax]
    return n


defop("sum", lambda xp, x, axis=None, keepdims=False: xp.sum(x, axis=axis, keepdims=keepdims),
      lambda xp, g, ans, x, axis=None, keepdims=False:
      xp.broadcast_to(_keep(xp, g, x.shape, axis, keepdims), x.shape), category=FLOAT32,
      example=lambda rng: ((_u(rng, 3, 4, 2),), {"axis": (0, 2)}))
defop("mean", lambda xp, x, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
      lambda xp, g, ans, x, axis=None, keepdims=False:
      xp.broadcast_to(_keep(xp, g, x.shape, axis, keepdims) / _count(x.shape, axis), x.shape), category=FLOAT32,
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 0, "keepdims": True}))


def _max_grad(xp, g, ans, x, axis=None, keepdims=False):
    hit = x == _keep(xp, ans, x.shape, axis, keepdims)
    return xp.where(hit, _keep(xp, g, x.shape, axis, keepdims) / xp.sum(hit, axis=axis, keepdims=True), 0)


defop("max", lambda xp, x, axis=None, keepdims=False: xp.max(x, axis=axis, keepdims=keepdims), _max_grad,
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))


def _softmax(xp, x, axis=-1):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(xp, x, axis=-1):
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


defop("softmax", _softmax, lambda xp, g, ans, x, axis=-1: ans * (g - xp.sum(g * ans, axis=axis, keepdims=True)),
      category=FLOAT32)
defop("log_softmax", _log_softmax,
      lambda xp, g, ans, x, axis=-1: g - xp.exp(ans) * xp.sum(g, axis=axis, keepdims=True), category=FLOAT32)

# -- products -------------------------------------------------------------------


def _matmul_grad_x(xp, g, ans, x, y):
    if y.ndim == 1:
        return xp.multiply.outer(g, y) if x.ndim > 1 else g * y
    gx = g[..., None, :] if x.ndim == 1 else g
    out = gx @ xp.swapaxes(y, -1, -2)
    return out[..., 0, :] if x.ndim == 1 else out


def _matmul_grad_y(xp, g, ans, x, y):
    if x.ndim == 1:
        return xp.multiply.outer(x, g) if y.ndim > 1 else g * x
    gy = g[..., :, None] if y.ndim == 1 else g
    out = xp.swapaxes(x, -1, -2) @ gy
    return out[..., 0] if y.ndim == 1 else out


defop("matmul", lambda xp, x, y: x @ y, _matmul_grad_x, _matmul_grad_y, category=LOWER,
      example=lambda rng: ((_u(rng, 2, 3, 4), _u(rng, 4, 5)), {}))

# -- layout: no arithmetic, values move unchanged ------------------------------------


def _argsort(axes):
    return sorted(range(len(axes)), key=lambda i: axes[i])


def _unindex(xp, g, ans, x, index):
    out = xp.zeros(x.shape, g.dtype)
    xp.add.at(out, index, g)
    return out


defop("reshape", lambda xp, x, shape: xp.reshape(x, shape),
      lambda xp, g, ans, x, shape: xp.reshape(g, x.shape), layout=True,
      example=lambda rng: ((_u(rng, 3, 4),), {"shape": (2, 6)}))
defop("transpose", lambda xp, x, axes=None: xp.transpose(x, axes),
      lambda xp, g, ans, x, axes=None: xp.transpose(g, None if axes is None else tuple(_argsort(axes))),
      layout=True, example=lambda rng: ((_u(rng, 2, 3, 4),), {"axes": (1, 2, 0)}))
defop("getitem", lambda xp, x, index: x[index], _unindex, layout=True,
      example=lambda rng: ((_u(rng, 4, 5),), {"index": (slice(1, 3), [0, 2, 2])}))
defop("cast", lambda xp, x: x, lambda xp, g, ans, x: g, layout=True)


def _concat_grad(i):
    def grad(xp, g, ans, *xs, axis=0):
        start = sum(x.shape[axis] for x in xs[:i])
        return xp.take(g, range(start, start + xs[i].shape[axis]), axis=axis)
    return grad


class _EachInput(tuple):
    """The gradients of an op with any number of inputs: the i-th made on demand."""

    def __new__(cls, make):
        self = super().__new__(cls)
        self.make = make
        return self

    def __getitem__(self, i):
        return self.make(i)


OPS["concatenate"] = Op("concatenate", lambda xp, *xs, axis=0: xp.concatenate(xs, axis=axis),
                        _EachInput(_concat_grad), layout=True,
                        example=lambda rng: ((_u(rng, 2, 3), _u(rng, 4, 3), _u(rng, 1, 3)), {"axis": 0}))

# -- convolution: im2col + one float32 matmul ------------------------------------------------------


def _windows(xp, x, kh, kw, stride, padding):
    """(N, C, H, W) -> (N, Ho, Wo, C, kh, kw) views of every receptive field."""
    x = xp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = xp.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    return win.transpose(0, 2, 3, 1, 4, 5)


def _conv2d(xp, x, w, stride=1, padding=0):
    cols = _windows(xp, x, w.shape[2], w.shape[3], stride, padding)
    n, ho, wo = cols.shape[:3]
    out = cols.reshape(n * ho * wo, -1) @ w.reshape(w.shape[0], -1).T
    return out.reshape(n, ho, wo, -1).transpose(0, 3, 1, 2)


def _conv2d_grad_x(xp, g, ans, x, w, stride=1, padding=0):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    ho, wo = g.shape[2], g.shape[3]
    gcols = (g.transpose(0, 2, 3, 1).reshape(-1, o) @ w.reshape(o, -1)).reshape(n, ho, wo, c, kh, kw)
    gx = xp.zeros((n, c, h + 2 * padding, wd + 2 * padding), g.dtype)
    for i in range(kh):                     # col2im: every kernel tap adds back into the strided window
        for j in range(kw):
            gx[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride] += gcols[..., i, j].transpose(0, 3, 1, 2)
    return gx[:, :, padding:padding + h, padding:padding + wd]


def _conv2d_grad_w(xp, g, ans, x, w, stride=1, padding=0):
    cols = _windows(xp, x, w.shape[2], w.shape[3], stride, padding)
    gw = g.transpose(1, 0, 2, 3).reshape(w.shape[0], -1) @ cols.reshape(-1, cols[0, 0, 0].size)
    return gw.reshape(w.shape)


defop("conv2d", _conv2d, _conv2d_grad_x, _conv2d_grad_w, category=LOWER,
      example=lambda rng: ((_u(rng, 2, 3, 5, 6), _u(rng, 4, 3, 3, 2)), {"stride": 2, "padding": 1}))

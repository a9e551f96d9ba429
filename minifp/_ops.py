"""The op registry, the only list of ops: each is its forward, one gradient per input, its autocast
category and a one-line doc. minifp's public functions, Tensor methods and operators, the activations
and the tests are all derived from it.

Forwards and gradients are pure array math through `xp` (numpy or cupy) on float32 arrays (float64 for
formats of more than 10 mantissa bits). They never round, cast, unbroadcast or touch the graph: the
dispatcher in _tensor.py does all of that, once, for every op. A forward takes its tensor inputs
positionally and its parameters as keywords (after `*`); a gradient takes (xp, g, ans, *inputs,
**params) and returns the gradient with respect to its input, in the broadcast shape.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

LOWER, FLOAT32, PROMOTE = "lower_precision", "float32", "promote"


@dataclass(frozen=True)
class Op:
    """One primitive and how it is exposed."""

    name: str
    forward: Callable
    grads: tuple            # one gradient per input (None: not differentiable); variadic ops: one taking i=
    doc: str
    category: str = PROMOTE
    layout: bool = False    # moves values without arithmetic: may run on storage arrays directly
    returns_bool: bool = False
    operator: str | None = None     # Python operator: "add" gives __add__ (and __radd__ for binary ops)
    function: bool = True   # a public function minifp.<name>
    method: bool = True     # a Tensor method
    activation: bool = False        # usable by name as a layer's activation
    example: Callable | None = None     # rng -> (args, params) for the gradient check, where shapes matter
    product: str | None = None      # "matmul" or "conv": a float32 product that TF32-like hardware may run
    saves: bool = True      # its gradient reads saved values: backward frees them, as PyTorch's graph does

    @cached_property
    def inputs(self):
        """The names of the tensor inputs (a variadic op: one name, for the sequence)."""
        return [p.name for p in list(inspect.signature(self.forward).parameters.values())[1:]
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]

    @cached_property
    def optional(self):
        """Whether some tensor input may be None (a bias), which the dispatcher then passes through."""
        return any(p.default is None for p in list(inspect.signature(self.forward).parameters.values())[1:]
                   if p.name in self.inputs)

    @cached_property
    def variadic(self):
        return any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(self.forward).parameters.values())

    def grad(self, i):
        """The gradient function for input i."""
        if self.variadic:
            fn = self.grads[0]
            return lambda *args, **params: fn(*args, i=i, **params)
        return self.grads[i]


OPS: dict[str, Op] = {}


def defop(name, forward, *grads, doc, **options):
    """Register a primitive: its forward, one gradient per input (one taking i= for a variadic op), a doc."""
    OPS[name] = Op(name, forward, grads, doc, **options)
    return OPS[name]


def _u(rng, *shape):
    return rng.uniform(0.5, 2.0, shape)


# -- elementwise arithmetic -------------------------------------------------
defop("add", lambda xp, x, y: x + y, lambda xp, g, ans, x, y: g, lambda xp, g, ans, x, y: g,
      doc="Elementwise x + y.", operator="add", saves=False)
defop("sub", lambda xp, x, y: x - y, lambda xp, g, ans, x, y: g, lambda xp, g, ans, x, y: -g,
      doc="Elementwise x - y.", operator="sub", saves=False)
defop("mul", lambda xp, x, y: x * y, lambda xp, g, ans, x, y: g * y, lambda xp, g, ans, x, y: g * x,
      doc="Elementwise x * y.", operator="mul")
defop("div", lambda xp, x, y: x / y, lambda xp, g, ans, x, y: g / y, lambda xp, g, ans, x, y: -g * ans / y,
      doc="Elementwise x / y.", operator="truediv")
defop("neg", lambda xp, x: -x, lambda xp, g, ans, x: -g, doc="Elementwise -x.", operator="neg", saves=False)
defop("pow", lambda xp, x, y: x ** y,
      lambda xp, g, ans, x, y: g * y * x ** xp.where(y == 0, 1, y - 1),
      lambda xp, g, ans, x, y: g * ans * xp.log(xp.where(x > 0, x, 1)),
      doc="Elementwise x ** y.", category=FLOAT32, operator="pow")


def _pick(xp, g, win, tie):
    """g where this input won, half of g on ties (as PyTorch's maximum/minimum), zero elsewhere."""
    return xp.where(win, g, xp.where(tie, g * 0.5, 0))


defop("maximum", lambda xp, x, y: xp.maximum(x, y),
      lambda xp, g, ans, x, y: _pick(xp, g, x > y, x == y), lambda xp, g, ans, x, y: _pick(xp, g, y > x, x == y),
      doc="Elementwise maximum of x and y.")
defop("minimum", lambda xp, x, y: xp.minimum(x, y),
      lambda xp, g, ans, x, y: _pick(xp, g, x < y, x == y), lambda xp, g, ans, x, y: _pick(xp, g, y < x, x == y),
      doc="Elementwise minimum of x and y.")
defop("where", lambda xp, condition, x, y: xp.where(condition, x, y), None,
      lambda xp, g, ans, c, x, y: xp.where(c, g, 0), lambda xp, g, ans, c, x, y: xp.where(c, 0, g),
      doc="Elements of x where condition holds, else of y.", method=False,
      example=lambda rng: ((rng.random((3, 4)) > 0.5, _u(rng, 3, 4), _u(rng, 4)), {}))

# -- unary math ---------------------------------------------------------------
defop("exp", lambda xp, x: xp.exp(x), lambda xp, g, ans, x: g * ans, doc="Elementwise e**x.", category=FLOAT32)
defop("log", lambda xp, x: xp.log(x), lambda xp, g, ans, x: g / x, doc="Elementwise natural logarithm.",
      category=FLOAT32)
defop("sqrt", lambda xp, x: xp.sqrt(x), lambda xp, g, ans, x: g * 0.5 / ans, doc="Elementwise square root.")
defop("tanh", lambda xp, x: xp.tanh(x), lambda xp, g, ans, x: g * (1 - ans * ans),
      doc="Elementwise hyperbolic tangent.", activation=True)
defop("sigmoid", lambda xp, x: 1 / (1 + xp.exp(-x)), lambda xp, g, ans, x: g * ans * (1 - ans),
      doc="Elementwise 1 / (1 + exp(-x)).", activation=True)
defop("relu", lambda xp, x: xp.maximum(x, 0), lambda xp, g, ans, x: xp.where(x > 0, g, 0),
      doc="Elementwise max(x, 0).", activation=True)
defop("abs", lambda xp, x: xp.abs(x), lambda xp, g, ans, x: g * xp.sign(x), doc="Elementwise |x|.",
      operator="abs")

# -- comparisons (no gradient, bool results) -----------------------------------
for _name, _fn, _sign in (("lt", lambda xp, x, y: x < y, "<"), ("le", lambda xp, x, y: x <= y, "<="),
                          ("gt", lambda xp, x, y: x > y, ">"), ("ge", lambda xp, x, y: x >= y, ">="),
                          ("eq", lambda xp, x, y: x == y, "=="), ("ne", lambda xp, x, y: x != y, "!=")):
    defop(_name, _fn, None, None, doc=f"Elementwise x {_sign} y, as a bool tensor.", returns_bool=True,
          operator=_name)


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


defop("sum", lambda xp, x, *, axis=None, keepdims=False: xp.sum(x, axis=axis, keepdims=keepdims),
      lambda xp, g, ans, x, axis=None, keepdims=False:
      xp.broadcast_to(_keep(xp, g, x.shape, axis, keepdims), x.shape),
      doc="Sum over `axis` (all axes by default), accumulated in float32.", saves=False, category=FLOAT32,
      example=lambda rng: ((_u(rng, 3, 4, 2),), {"axis": (0, 2)}))
defop("mean", lambda xp, x, *, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
      lambda xp, g, ans, x, axis=None, keepdims=False:
      xp.broadcast_to(_keep(xp, g, x.shape, axis, keepdims) / _count(x.shape, axis), x.shape),
      doc="Mean over `axis` (all axes by default), accumulated in float32.", saves=False, category=FLOAT32,
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 0, "keepdims": True}))


def _max_grad(xp, g, ans, x, axis=None, keepdims=False):
    hit = x == _keep(xp, ans, x.shape, axis, keepdims)
    return xp.where(hit, _keep(xp, g, x.shape, axis, keepdims) / xp.sum(hit, axis=axis, keepdims=True), 0)


defop("max", lambda xp, x, *, axis=None, keepdims=False: xp.max(x, axis=axis, keepdims=keepdims), _max_grad,
      doc="Largest element over `axis` (all axes by default); ties share the gradient.",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))


def _softmax(xp, x, *, axis=-1):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(xp, x, *, axis=-1):
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


defop("softmax", _softmax, lambda xp, g, ans, x, axis=-1: ans * (g - xp.sum(g * ans, axis=axis, keepdims=True)),
      doc="Softmax along `axis` (default the last).", category=FLOAT32, activation=True)
defop("log_softmax", _log_softmax,
      lambda xp, g, ans, x, axis=-1: g - xp.exp(ans) * xp.sum(g, axis=axis, keepdims=True),
      doc="Log-softmax along `axis` (default the last).", category=FLOAT32, activation=True)

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


defop("matmul", lambda xp, x, y: x @ y, _matmul_grad_x, _matmul_grad_y,
      doc="Matrix product with batching and broadcasting, accumulated in float32.", category=LOWER,
      operator="matmul", product="matmul", example=lambda rng: ((_u(rng, 2, 3, 4), _u(rng, 4, 5)), {}))


def _linear(xp, x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def _linear_grad_w(xp, g, ans, x, w, b=None):
    return xp.tensordot(g, x, axes=(tuple(range(g.ndim - 1)), tuple(range(x.ndim - 1))))


defop("linear", _linear, lambda xp, g, ans, x, w, b=None: g @ w, _linear_grad_w,
      lambda xp, g, ans, x, w, b=None: g,
      doc="x @ w.T + b with w of shape (out, in), the bias added to the float32 product before the one rounding "
          "(a GEMM epilogue).", category=LOWER, method=False, product="matmul",
      example=lambda rng: ((_u(rng, 2, 3, 4), _u(rng, 5, 4), _u(rng, 5)), {}))

# -- layout: no arithmetic, values move unchanged ------------------------------------


def _axes(axes, ndim):
    """Axes as non-negative numbers (reversed when None), so that they can be inverted."""
    return tuple(range(ndim))[::-1] if axes is None else tuple(a % ndim for a in axes)


def _inverse(axes):
    return tuple(sorted(range(len(axes)), key=lambda i: axes[i]))


def _unindex(xp, g, ans, x, index):
    out = xp.zeros(x.shape, g.dtype)
    xp.add.at(out, index, g)
    return out


defop("reshape", lambda xp, x, *, shape: xp.reshape(x, shape), lambda xp, g, ans, x, shape: xp.reshape(g, x.shape),
      doc="The same values in a new shape.", saves=False, layout=True, method=False,
      example=lambda rng: ((_u(rng, 3, 4),), {"shape": (2, 6)}))
defop("transpose", lambda xp, x, *, axes=None: xp.transpose(x, axes),
      lambda xp, g, ans, x, axes=None: xp.transpose(g, _inverse(_axes(axes, x.ndim))),
      doc="Axes permuted as `axes` says (reversed by default).", saves=False, layout=True, method=False,
      example=lambda rng: ((_u(rng, 2, 3, 4),), {"axes": (-2, 2, 0)}))
defop("getitem", lambda xp, x, *, index: x[index], _unindex, doc="x[index], NumPy's indexing.", saves=False,
      layout=True, function=False, method=False, example=lambda rng: ((_u(rng, 4, 5),), {"index": (slice(1, 3), [0, 2, 2])}))
defop("cast", lambda xp, x: x, lambda xp, g, ans, x: g, doc="x rounded into the output format (Tensor.astype).",
      saves=False, layout=True, function=False, method=False)


def _concat_grad(xp, g, ans, *xs, i, axis=0):
    start = sum(x.shape[axis] for x in xs[:i])
    return xp.take(g, range(start, start + xs[i].shape[axis]), axis=axis)


defop("concatenate", lambda xp, *tensors, axis=0: xp.concatenate(tensors, axis=axis), _concat_grad,
      doc="Tensors joined along `axis`.", saves=False, layout=True, method=False,
      example=lambda rng: ((_u(rng, 2, 3), _u(rng, 4, 3), _u(rng, 1, 3)), {"axis": 0}))

# -- convolution: im2col + one float32 matmul ------------------------------------------------------


def _windows(xp, x, kh, kw, stride, padding):
    """(N, C, H, W) -> (N, Ho, Wo, C, kh, kw) views of every receptive field."""
    x = xp.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    win = xp.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    return win.transpose(0, 2, 3, 1, 4, 5)


def _conv2d(xp, x, w, *, stride=1, padding=0):
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


defop("conv2d", _conv2d, _conv2d_grad_x, _conv2d_grad_w,
      doc="2-D convolution of NCHW x with OIHW weights w (stride, zero padding), accumulated in float32.",
      category=LOWER, method=False,
      example=lambda rng: ((_u(rng, 2, 3, 5, 6), _u(rng, 4, 3, 3, 2)), {"stride": 2, "padding": 1}))

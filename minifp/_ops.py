"""The op registry, the only list of ops: each is its forward, one gradient per input and a one-line doc.
minifp's public functions, Tensor methods and operators, each face's names and the tests are all derived from it.

Forwards and gradients are pure array math through `xp` (numpy or cupy) on float32 arrays (float64 for
formats of more than 10 mantissa bits). They never round, cast, unbroadcast or touch the graph: the
dispatcher in _tensor.py does all of that, once, for every op (a `staged` op's gradient only marks, with
_stage, the intermediates PyTorch's formula rounds; the backward's namespace rounds them). A forward takes its
tensor inputs positionally and its parameters as keywords (after `*`); a gradient takes (xp, g, ans, *inputs,
**params) and returns the gradient with respect to its input, in the broadcast shape.

An op that `accumulates` sums through xp.sum and xp.mean, which minifp.accumulate's namespace replaces; the others
may reduce with the arrays' methods (x.sum()), the same ufunc without NumPy's Python wrapper (2.3 against 3.4 us
for 32 float32 numbers: what a small model's loss pays a few times a step).
"""
from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from ._seams import SEAMS, seam

@dataclass(frozen=True)
class Op:
    """One primitive and how it is exposed."""

    name: str
    forward: Callable
    grads: tuple            # one gradient per input (None: not differentiable); variadic ops: one taking i=
    doc: str
    layout: bool = False    # moves values without arithmetic: may run on storage arrays directly
    returns_bool: bool = False
    operator: str | None = None     # Python operator: "add" gives __add__ (and __radd__ for binary ops)
    function: bool = True   # a public function minifp.<name>
    method: bool = True     # a Tensor method
    example: Callable | None = None     # rng -> (args, params) for the gradient check, where shapes matter
    product: str | None = None      # "matmul" or "conv": a float32 product that TF32-like hardware may run
    saves: bool = True      # its gradient reads saved values: backward frees them, as PyTorch's graph does
    accumulates: bool = False       # its sums (xp.matmul, xp.sum, xp.mean) follow minifp.accumulate
    selects: bool | Callable = False    # its results are some of its input's values or zeros: in the input's
    # format they need no rounding (a callable of **params: the numbers it may put in besides, where the format
    # holds them)
    masks: bool = False     # its gradients are some of g's values or zeros (never sums of them): likewise
    kernel: str | None = None       # a device may run the op as a kernel of its own (Device.attention, Device.scan:
    # minifp._compute.Flash, Scan); elsewhere the op's body, rounded once
    staged: bool | str = False      # PyTorch's gradient is several ops, each rounded into the output's format
    # (True; "cuda": only its CUDA kernel rounds so; "device": where the Device says, see _devices; an op in
    # _devices.INPUT_FORMAT rounds into its first input's format): the gradient (or forward) marks them with _stage

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
    def routed(self):
        """Whether how the op computes may depend on more than the arrays' module (minifp._compute.route)."""
        return self.product is not None or self.accumulates or bool(self.staged) or self.kernel is not None

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


def _stages(xp):
    """Whether xp is a `staged` op's namespace that rounds the intermediates _stage marks (else they stay float32)."""
    return getattr(type(xp), "stage", None) is not None


def _stage(xp, v):
    """v where a `staged` op's PyTorch gradient formula stores an intermediate tensor: rounded into the output's
    format by the backward's namespace (xp.stage); plain xp computes in float32 and keeps it. v must be an array
    the body computed (a forward may round it in place), never an input."""
    stage = getattr(type(xp), "stage", None)      # asked of the class: NumPy's module __getattr__ costs 1.7 us
    return v if stage is None else stage(xp, v)


# -- elementwise arithmetic -------------------------------------------------
@seam
def fma(xp, a, b, c):
    """a * b + c rounded once to float32 (a fused multiply-add) for float32 arrays or scalars: the product is exact
    in float64, and their sum rounded to odd there (its last bit set where it is inexact) rounds correctly into
    float32 (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums", 2008). Infinities and NaNs
    propagate as in the sum. float64 operands (the wide custom formats' compute) multiply and add in float64."""
    a, b, c = (xp.asarray(v) for v in (a, b, c))
    if xp.float64 in (a.dtype, b.dtype, c.dtype):
        return a * b + c
    p = a.astype(xp.float64) * b
    c = c.astype(xp.float64)
    s = p + c
    t = s - p
    err = (p - (s - t)) + (c - t)               # s + err is p + c exactly (TwoSum); NaN where s is not finite
    bits = s.view(xp.int64)
    inexact = ((err > 0) | (err < 0)) & (bits & 1 == 0)
    # one step toward the exact sum: to the neighbour with the odd last bit
    odd = bits + xp.where((err > 0) == (s > 0), 1, -1) * inexact
    return odd.view(xp.float64).astype(xp.float32)


def _add(xp, x, y, *, alpha=None, forward_alpha=None):
    # PyTorch's kernels: x + alpha * y as one FMA, alpha in the compute's float (float32 for half tensors);
    # forward_alpha: the alpha the forward multiplies by where the kernel rounds it first (PyTorch's CPU kernels,
    # into a half-precision result's format), the gradient keeping alpha
    a = alpha if forward_alpha is None else forward_alpha
    return x + y if a is None else SEAMS.fma(xp, x.dtype.type(a) if hasattr(x, "dtype") else a, y, x)


def _sub(xp, x, y, *, alpha=None, forward_alpha=None):
    a = alpha if forward_alpha is None else forward_alpha
    return x - y if a is None else SEAMS.fma(xp, -(x.dtype.type(a) if hasattr(x, "dtype") else a), y, x)


def _scaled(g, alpha):
    return g if alpha is None else g * g.dtype.type(alpha)


defop("add", _add, lambda xp, g, ans, x, y, **_: g, lambda xp, g, ans, x, y, *, alpha=None, **_: _scaled(g, alpha),
      doc="Elementwise x + y (x + alpha * y: one rounding).", operator="add", saves=False)
defop("sub", _sub, lambda xp, g, ans, x, y, **_: g, lambda xp, g, ans, x, y, *, alpha=None, **_: _scaled(-g, alpha),
      doc="Elementwise x - y (x - alpha * y: one rounding).", operator="sub", saves=False)
defop("mul", lambda xp, x, y: x * y, lambda xp, g, ans, x, y: g * y, lambda xp, g, ans, x, y: g * x,
      doc="Elementwise x * y.", operator="mul")
def _over(x, y, reciprocal):
    # reciprocal: CUDA's division by a host scalar, x times its reciprocal: a 0-d tensor's taken in x's (opmath)
    # type (True); "inverted": y is already a Python number's reciprocal, taken in double
    if not reciprocal:
        return x / y
    return x * (y if reciprocal == "inverted" else x.dtype.type(1) / x.dtype.type(y))


defop("div", lambda xp, x, y, *, reciprocal=False: _over(x, y, reciprocal),
      lambda xp, g, ans, x, y, *, reciprocal=False: _over(g, y, reciprocal),
      lambda xp, g, ans, x, y, *, reciprocal=False: -g * _stage(xp, _over(ans, y, reciprocal)),   # -grad * ((x / y) / y)
      doc="Elementwise x / y (reciprocal=True: x * (1 / y); \"inverted\": x * y, y a number's reciprocal).",
      operator="truediv", staged=True)
defop("neg", lambda xp, x: -x, lambda xp, g, ans, x: -g, doc="Elementwise -x.", operator="neg", saves=False)


def _pow_grad_x(xp, g, ans, x, y):
    # PyTorch's grad * (y * x ** (y - 1)), 0 where y == 0; a Python number's y - 1 is not a tensor (not rounded)
    e = _stage(xp, y - 1) if isinstance(y, xp.ndarray) else y - 1
    return xp.where(y == 0, 0, g * _stage(xp, y * _stage(xp, x ** e)))


def _pow_grad_y(xp, g, ans, x, y):
    # PyTorch's grad * (ans * log(x)), 0 where x == 0 and y >= 0 (a negative x gives NaN, as its log)
    return xp.where((x == 0) & (y >= 0), 0, g * _stage(xp, ans * _stage(xp, xp.log(x))))


defop("pow", lambda xp, x, y: x ** y, _pow_grad_x, _pow_grad_y,
      doc="Elementwise x ** y.", operator="pow", staged=True)


@seam
def masked(xp, keep, g):
    """g where keep holds, +0 elsewhere (where g is inf or NaN too): xp.where(keep, g, 0) as an and of g's bits
    with a mask of ones, ten times quicker in NumPy (relu's gradient at 256x1024: 1.1 -> 0.11 ms)."""
    if xp.__name__ == "cupy":                # a GPU: where is one pass, the and three
        return xp.where(keep, g, 0).astype(g.dtype, copy=False)
    ints = {2: xp.int16, 4: xp.int32, 8: xp.int64}[g.dtype.itemsize]
    return xp.bitwise_and(g.view(ints), -xp.asarray(keep).astype(ints)).view(g.dtype)


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
      lambda xp, g, ans, c, x, y: SEAMS.masked(xp, c, g), lambda xp, g, ans, c, x, y: SEAMS.masked(xp, ~c, g),
      doc="Elements of x where condition holds, else of y.", method=False,
      example=lambda rng: ((rng.random((3, 4)) > 0.5, _u(rng, 3, 4), _u(rng, 4)), {}))

# -- unary math ---------------------------------------------------------------
defop("exp", lambda xp, x: xp.exp(x), lambda xp, g, ans, x: g * ans, doc="Elementwise e**x.")
defop("log", lambda xp, x: xp.log(x), lambda xp, g, ans, x: g / x, doc="Elementwise natural logarithm.")
defop("reciprocal", lambda xp, x: 1 / x, lambda xp, g, ans, x: -g * ans * ans, doc="Elementwise 1 / x.")
defop("sqrt", lambda xp, x: xp.sqrt(x), lambda xp, g, ans, x: g * 0.5 / ans, doc="Elementwise square root.")
# On CUDA their gradient kernels compute in the tensor's own type (c10::Half and BFloat16 arithmetic rounds
# every product and difference): g * (1 - y*y) and g * (1 - y) * y, each step rounded
defop("tanh", lambda xp, x: xp.tanh(x), lambda xp, g, ans, x: g * _stage(xp, 1 - _stage(xp, ans * ans)),
      doc="Elementwise hyperbolic tangent.", staged="cuda")
defop("sigmoid", lambda xp, x: 1 / (1 + xp.exp(-x)), lambda xp, g, ans, x: _stage(xp, g * _stage(xp, 1 - ans)) * ans,
      doc="Elementwise 1 / (1 + exp(-x)).", staged="cuda")
@seam
def relu(xp, x):
    """max(x, 0) elementwise (+0 for either zero, NaN kept)."""
    return xp.maximum(x, 0)


@seam
def masked_between(xp, g, x, lo, hi=None):
    """g where lo < x (and x < hi, unless hi is None), +0 elsewhere: the gradient of a clamp (relu, hardtanh)."""
    return SEAMS.masked(xp, x > lo if hi is None else (x > lo) & (x < hi), g)


defop("relu", lambda xp, x: SEAMS.relu(xp, x), lambda xp, g, ans, x: SEAMS.masked_between(xp, g, x, 0),
      doc="Elementwise max(x, 0).", selects=True, masks=True)


def _clamp_grad(xp, g, ans, x, *, min=None, max=None):
    keep = x == x if min is None else x >= min          # (NaN: no gradient, as PyTorch's and TF's masks)
    return SEAMS.masked(xp, keep if max is None else keep & (x <= max), g)


defop("clamp", lambda xp, x, *, min=None, max=None: xp.clip(x, min, max), _clamp_grad,
      doc="Elementwise x limited to [min, max] (numbers; either may be None); the gradient passes where "
          "min <= x <= max.", selects=lambda min=None, max=None: [v for v in (min, max) if v is not None],
      masks=True, method=False, example=lambda rng: ((_u(rng, 3, 4),), {"min": 0.9, "max": 1.7}))
defop("abs", lambda xp, x: xp.abs(x), lambda xp, g, ans, x: g * xp.sign(x), doc="Elementwise |x|.",
      operator="abs")
defop("sin", lambda xp, x: xp.sin(x), lambda xp, g, ans, x: g * xp.cos(x), doc="Elementwise sine.")
defop("cos", lambda xp, x: xp.cos(x), lambda xp, g, ans, x: -g * xp.sin(x), doc="Elementwise cosine.")
defop("log1p", lambda xp, x: xp.log1p(x), lambda xp, g, ans, x: g / (1 + x),
      doc="Elementwise log(1 + x), accurate for small x.")
defop("expm1", lambda xp, x: xp.expm1(x), lambda xp, g, ans, x: g * (ans + 1),
      doc="Elementwise e**x - 1, accurate for small x.")
defop("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda xp, g, ans, x: -0.5 * g * ans * ans * ans,
      doc="Elementwise 1 / sqrt(x).")
# Rounding to integers: every result is a value of the input's format already, and the gradient is zero
def _integral(name):
    return lambda xp, x: getattr(xp, name)(x)


for _name, _doc in (("floor", "largest integer <= x"), ("ceil", "smallest integer >= x"),
                    ("round", "nearest integer, halves to even"), ("trunc", "integer part (toward zero)"),
                    ("sign", "-1, 0 or 1 as the sign of x (NaN stays NaN)")):
    defop(_name, _integral("rint" if _name == "round" else _name),
          lambda xp, g, ans, x: xp.zeros_like(g), doc=f"Elementwise {_doc}.", saves=False, selects=True, masks=True)

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
      doc="Sum over `axis` (all axes by default), accumulated in float32 (or as minifp.accumulate says).",
      saves=False, accumulates=True,
      example=lambda rng: ((_u(rng, 3, 4, 2),), {"axis": (0, 2)}))
defop("mean", lambda xp, x, *, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
      lambda xp, g, ans, x, axis=None, keepdims=False:
      xp.broadcast_to(_keep(xp, g, x.shape, axis, keepdims) / _count(x.shape, axis), x.shape),
      doc="Mean over `axis` (all axes by default), accumulated in float32 (or as minifp.accumulate says).",
      saves=False, accumulates=True,
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 0, "keepdims": True}))



def _var(xp, x, *, axis=None, correction=1, keepdims=False):
    d = x - xp.mean(x, axis=axis, keepdims=True)
    return xp.sum(d * d, axis=axis, keepdims=keepdims) / max(_count(x.shape, axis) - correction, 0)


def _var_grad(xp, g, ans, x, axis=None, correction=1, keepdims=False):
    dof = max(_count(x.shape, axis) - correction, 0)
    if _stages(xp):     # PyTorch's var_backward, each step a tensor: (2 / dof * grad) * (x - x.mean(dim))
        mean = _stage(xp, xp.mean(x, axis=axis, keepdims=True))
        scale = xp.float32(2) / xp.float32(dof)     # inf where dof is 0, as PyTorch's
        return _stage(xp, scale * _keep(xp, g, x.shape, axis, keepdims)) * _stage(xp, x - mean)
    d = x - xp.mean(x, axis=axis, keepdims=True)
    return _keep(xp, g, x.shape, axis, keepdims) * (2 * d / dof)


defop("var", _var, _var_grad, doc="Variance over `axis` (all axes by default), dividing by the count less "
      "`correction` (1: the unbiased estimate), in float32 (two passes).", staged="device",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))
defop("cumsum", lambda xp, x, *, axis: xp.cumsum(x, axis=axis),
      lambda xp, g, ans, x, axis: xp.flip(xp.cumsum(xp.flip(g, axis), axis=axis), axis),
      doc="Running sums along `axis`, each in float32 and rounded once.", saves=False, kernel="scan",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))

def _max_grad(xp, g, ans, x, axis=None, keepdims=False):
    hit = x == _keep(xp, ans, x.shape, axis, keepdims)
    return xp.where(hit, _keep(xp, g, x.shape, axis, keepdims) / xp.sum(hit, axis=axis, keepdims=True), 0)


defop("max", lambda xp, x, *, axis=None, keepdims=False: x.max(axis=axis, keepdims=keepdims), _max_grad,
      doc="Largest element over `axis` (all axes by default); ties share the gradient.",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))


def _softmax(xp, x, *, axis=-1):
    e = xp.exp(x - (x.max(axis=axis, keepdims=True) if x.size else 0))     # (an empty x has no max)
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(xp, x, *, axis=-1):
    shifted = x - (x.max(axis=axis, keepdims=True) if x.size else 0)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


def _softmax_grad(xp, g, ans, x, axis=-1):
    if _stages(xp):     # PyTorch's CUDA softmax backward: grad * output a tensor first, then gy - output * sum(gy)
        gy = _stage(xp, g * ans)
        return gy - ans * gy.sum(axis=axis, keepdims=True)
    return ans * (g - (g * ans).sum(axis=axis, keepdims=True))


defop("softmax", _softmax, _softmax_grad, doc="Softmax along `axis` (default the last).", staged="device")
defop("log_softmax", _log_softmax,
      lambda xp, g, ans, x, axis=-1: g - xp.exp(ans) * g.sum(axis=axis, keepdims=True),
      doc="Log-softmax along `axis` (default the last).")

# -- products -------------------------------------------------------------------


def _folded(x):
    """x's leading axes folded into one: the (rows, last) matrix of a single GEMM, as PyTorch folds a batch of
    rows against one matrix (BLAS's and cuBLAS's low bits follow the GEMM's shape)."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _folds(x, y):
    """Whether x @ y is one GEMM of x's rows: x with batch axes against one matrix."""
    return x.ndim > 2 and y.ndim == 2


def _rows_times(xp, a, m):
    """a @ m for a 2-D m, a's batch axes (where it has them) folded into the rows of one GEMM."""
    if a.ndim <= 2:
        return xp.matmul(a, m)
    return xp.matmul(_folded(a), m).reshape(*a.shape[:-1], m.shape[-1])


@seam
def stacked_matmul(xp, x, y):
    """x @ y, NumPy's matmul: for stacks of matrices one GEMM per item."""
    return xp.matmul(x, y)


def _matmul(xp, x, y):
    return _rows_times(xp, x, y) if _folds(x, y) else SEAMS.stacked_matmul(xp, x, y)


def _matmul_grad_x(xp, g, ans, x, y):
    if _folds(x, y):
        return _rows_times(xp, g, y.T)
    if y.ndim == 1:
        return xp.multiply.outer(g, y) if x.ndim > 1 else g * y
    gx = g[..., None, :] if x.ndim == 1 else g
    out = SEAMS.stacked_matmul(xp, gx, xp.swapaxes(y, -1, -2))
    return out[..., 0, :] if x.ndim == 1 else out


def _matmul_grad_y(xp, g, ans, x, y):
    if _folds(x, y):
        return xp.matmul(_folded(x).T, _folded(g))
    if x.ndim == 1:
        return xp.multiply.outer(x, g) if y.ndim > 1 else g * x
    gy = g[..., :, None] if y.ndim == 1 else g
    out = SEAMS.stacked_matmul(xp, xp.swapaxes(x, -1, -2), gy)
    return out[..., 0] if y.ndim == 1 else out


defop("matmul", _matmul, _matmul_grad_x, _matmul_grad_y,
      doc="Matrix product with batching and broadcasting, accumulated in float32 (or as minifp.accumulate says).", operator="matmul", product="matmul", accumulates=True,
      example=lambda rng: ((_u(rng, 2, 3, 4), _u(rng, 4, 5)), {}))


def _linear(xp, x, w, b=None, *, layout="oi"):
    wt = w if layout == "io" else w.T
    y = _rows_times(xp, x, wt)
    if b is not None:
        y += b                              # the product is a new array: add the bias in place
    return y


def _linear_grad_x(xp, g, ans, x, w, b=None, *, layout="oi"):
    return _rows_times(xp, g, w.T if layout == "io" else w)


def _linear_grad_w(xp, g, ans, x, w, b=None, *, layout="oi"):
    g2, x2 = _folded(g), _folded(x)        # g.T @ x over all leading axes
    return xp.matmul(x2.T, g2) if layout == "io" else xp.matmul(g2.T, x2)


defop("linear", _linear, _linear_grad_x, _linear_grad_w, lambda xp, g, ans, x, w, b=None, **params: g,
      doc="x @ w.T + b with w of shape (out, in) (layout='io': x @ w with w of shape (in, out), Keras's kernel), "
          "the bias added to the float32 product before the one rounding (a GEMM epilogue).", method=False, product="matmul", accumulates=True,
      example=lambda rng: ((_u(rng, 2, 3, 4), _u(rng, 5, 4), _u(rng, 5)), {}))

# -- layout: no arithmetic, values move unchanged ------------------------------------


def _axes(axes, ndim):
    """Axes as non-negative numbers (reversed when None), so that they can be inverted."""
    return tuple(range(ndim))[::-1] if axes is None else tuple(a % ndim for a in axes)


def _inverse(axes):
    return tuple(sorted(range(len(axes)), key=lambda i: axes[i]))


def _basic(index):
    """Whether index is basic indexing (slices, integers, None, ...): a view, in which no element appears twice."""
    return all(i is None or i is Ellipsis or type(i) is slice or (isinstance(i, numbers.Integral) and
                                                                   not isinstance(i, bool))
               for i in (index if type(index) is tuple else (index,)))


def _unindex(xp, g, ans, x, index):
    out = xp.zeros(x.shape, g.dtype)
    if _basic(index):
        out[index] += g         # add.at's sums (0 + g), without its per-element loop
    else:
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


def _setitem(xp, x, value, *, index):
    out = x.copy()
    out[index] = value
    return out


def _setitem_grad_x(xp, g, ans, x, value, index):
    out = g.copy()
    out[index] = 0                          # overwritten values reach nothing
    return out


defop("setitem", _setitem, _setitem_grad_x, lambda xp, g, ans, x, value, index: g[index],
      doc="A copy of x with x[index] = value (NumPy's indexing; value broadcasts into the selection).", saves=False,
      layout=True, function=False, method=False,
      example=lambda rng: ((_u(rng, 4, 5), _u(rng, 2, 1)), {"index": (slice(1, 3), slice(0, 4))}))
defop("broadcast_to", lambda xp, x, *, shape: xp.broadcast_to(x, shape), lambda xp, g, ans, x, shape: g,
      doc="x repeated along new leading axes and its length-1 axes to `shape` (a view: no copy).", saves=False,
      layout=True, method=False, example=lambda rng: ((_u(rng, 3, 1),), {"shape": (2, 3, 4)}))
# (a cast into the input's own format is a copy, PyTorch's clone: no two tensors made by ops share an array, which an
# in-place change written into a shared array would then change both of)
defop("cast", lambda xp, x: x.copy(), lambda xp, g, ans, x: g, doc="x rounded into the output format (Tensor.astype).",
      saves=False, layout=True, function=False, method=False)


def _concat_grad(xp, g, ans, *xs, i, axis=0):
    start = sum(x.shape[axis] for x in xs[:i])
    return xp.take(g, range(start, start + xs[i].shape[axis]), axis=axis)


defop("concatenate", lambda xp, *tensors, axis=0: xp.concatenate(tensors, axis=axis), _concat_grad,
      doc="Tensors joined along `axis`.", saves=False, layout=True, method=False,
      example=lambda rng: ((_u(rng, 2, 3), _u(rng, 4, 3), _u(rng, 1, 3)), {"axis": 0}))

# -- convolution and pooling: windows (im2col) + float32 products -----------------------------------


def _pair(v):
    """An int or a pair as a pair."""
    return (v, v) if isinstance(v, numbers.Integral) else tuple(v)


def _pads(padding):
    """((top, bottom), (left, right)) from an int, a pair (the same both sides) or two explicit pairs."""
    return tuple((p, p) if isinstance(p, numbers.Integral) else tuple(p) for p in _pair(padding))


def _windows(xp, x, kh, kw, stride=1, padding=0, dilation=1, fill=0, out=None, last=False):
    """(N, C, H, W) (or (N, H, W, C) when `last`) -> (N, Ho, Wo, C, kh, kw) views of every receptive field
    (`out`: the output size, for pooling's ceil mode, which may need more padding on the bottom and right)."""
    (sh, sw), (dh, dw), ((pt, pb), (pl, pr)) = _pair(stride), _pair(dilation), _pads(padding)
    eh, ew = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    hx, wx = (1, 2) if last else (2, 3)
    if out is not None:
        pb = max(pb, (out[0] - 1) * sh + eh - x.shape[hx] - pt)
        pr = max(pr, (out[1] - 1) * sw + ew - x.shape[wx] - pl)
    if pt or pb or pl or pr:
        pads = [(0, 0)] * 4
        pads[hx], pads[wx] = (pt, pb), (pl, pr)
        x = xp.pad(x, pads, constant_values=fill)
    win = xp.lib.stride_tricks.sliding_window_view(x, (eh, ew), axis=(hx, wx))
    win = win[:, ::sh, ::sw, :, ::dh, ::dw] if last else win[:, :, ::sh, ::sw, ::dh, ::dw]
    if out is not None:
        win = win[:, :out[0], :out[1]] if last else win[:, :, :out[0], :out[1]]
    return win if last else win.transpose(0, 2, 3, 1, 4, 5)


def _untap(xp, gcols, shape, stride, padding, dilation=1, last=False):
    """col2im: gradients of the windows (N, Ho, Wo, C, kh, kw) added back into an (N, C, H, W) gradient
    (or (N, H, W, C) when `last`: col2im's passes, into a compact gradient)."""
    if last:
        return _untap_last(xp, gcols.transpose(0, 1, 2, 4, 5, 3), shape, stride, padding, dilation, True)
    n, ho, wo, c, kh, kw = gcols.shape
    (sh, sw), (dh, dw), ((pt, pb), (pl, pr)) = _pair(stride), _pair(dilation), _pads(padding)
    h, w = shape[2], shape[3]
    hp = max(h + pt + pb, (ho - 1) * sh + dh * (kh - 1) + 1)
    wp = max(w + pl + pr, (wo - 1) * sw + dw * (kw - 1) + 1)
    gx = xp.zeros((n, c, hp, wp), gcols.dtype)
    for i in range(kh):                     # every kernel tap adds back into its strided window
        for j in range(kw):
            rows, cols = slice(i * dh, i * dh + sh * ho, sh), slice(j * dw, j * dw + sw * wo, sw)
            gx[:, :, rows, cols] += gcols[..., i, j].transpose(0, 3, 1, 2)
    return gx[:, :, pt:pt + h, pl:pl + w]


def _oihw(w, layout):
    """The kernel as (out, in/groups, kh, kw): NHWC's kernels are TensorFlow's (kh, kw, in/groups, out)."""
    return w.transpose(3, 2, 0, 1) if layout == "NHWC" else w


def _channels_last(x, layout):
    """x as (N, H, W, C): itself in NHWC, a view in NCHW (C-contiguous where x is channels-last in memory, as
    convolutions leave their results)."""
    return x if layout == "NHWC" else x.transpose(0, 2, 3, 1)


def _untap_last(xp, gcols, shape, stride, padding, dilation=1, last=False):
    """_untap for gradients laid out (N, Ho, Wo, kh, kw, C): each tap adds whole runs of channels into an
    NHWC gradient (contiguous reads and writes), in _untap's tap order; returned NHWC when `last`, else as an
    NCHW view."""
    n, ho, wo, kh, kw, c = gcols.shape
    (sh, sw), (dh, dw), ((pt, _), (pl, _)) = _pair(stride), _pair(dilation), _pads(padding)
    h, w = (shape[1], shape[2]) if last else (shape[2], shape[3])
    if kh == kw == sh == sw == 1 and (ho, wo) == (h, w):    # a 1x1 kernel over every position: no sums
        gx = gcols.reshape(n, h, w, c) + 0                  # (+ 0: -0 lands as +0, as in col2im's sums from +0)
        return gx if last else gx.transpose(0, 3, 1, 2)
    gx = xp.zeros((n, h, w, c), gcols.dtype)       # compact, channels-last: what the next kernels read
    SEAMS.col2im(gcols, gx, sh, sw, dh, dw, pt, pl)
    return gx if last else gx.transpose(0, 3, 1, 2)


@seam
def col2im(gcols, gx, sh, sw, dh, dw, pt=0, pl=0):
    """gx[n, i*dh + y*sh - pt, j*dw + z*sw - pl, c] += gcols[n, y, z, i, j, c] where that lies in gx (the rest
    fall on the padding), a whole tap (i, j) at a time, in row-major order; gx (N, H, W, C)."""
    n, ho, wo, kh, kw, c = gcols.shape
    for i in range(kh):
        (y0, y1), r0 = _tap_range(i * dh - pt, sh, ho, gx.shape[1]), i * dh - pt
        for j in range(kw):
            (z0, z1), s0 = _tap_range(j * dw - pl, sw, wo, gx.shape[2]), j * dw - pl
            if y0 < y1 and z0 < z1:
                gx[:, r0 + y0 * sh:r0 + (y1 - 1) * sh + 1:sh, s0 + z0 * sw:s0 + (z1 - 1) * sw + 1:sw] += \
                    gcols[:, y0:y1, z0:z1, i, j]
    return gx


def _tap_range(offset, step, count, size):
    """The y in [0, count) with 0 <= offset + y * step < size, as a range (lo, hi)."""
    lo, hi = max(0, -(offset // step)), min(count, -((offset - size) // step))
    return lo, max(lo, hi)


# -- depthwise convolutions (each output channel reads one input channel): a pass per tap, in a defined order ---
# Their im2col GEMMs are stacks of matrix-vector products, which BLAS sums in an order of its own kernels (no
# kernel could match it); these sum in float32, from +0, in the order each docstring gives, on C-contiguous
# channels-last arrays (m: the output channels per input channel), and minifp/_speed.py's kernels in the same.

def _depthwise(xp, w, groups, layout):
    """Whether conv2d takes the depthwise passes: one input channel per group, products summed in float32 (an
    accumulation model's namespace, whose matmul is a method of its own, keeps its GEMMs)."""
    return groups > 1 and w.shape[2 if layout == "NHWC" else 1] == 1 and not inspect.ismethod(xp.matmul)


def _tap(a, i, j, rows, cols, sh, sw, dh, dw):
    """The (N, rows, cols, ...) view of channels-last `a` that tap (i, j) reads (or writes)."""
    return a[:, i * dh:i * dh + sh * (rows - 1) + 1:sh, j * dw:j * dw + sw * (cols - 1) + 1:sw]


@seam
def depthwise(xp, x, w, pads, ho, wo, sh, sw, dh, dw):
    """out[n, y, z, c, q] = sum over the taps (i, j) in row-major order of x[n, y*sh + i*dh, z*sw + j*dw, c] *
    w[i, j, c, q]: x (N, H, W, C) zero-padded by pads ((top, bottom), (left, right)), w (kh, kw, C, m)."""
    x = _zero_padded(xp, x, pads)
    out = xp.zeros((x.shape[0], ho, wo, *w.shape[2:]), x.dtype)
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            out += _tap(x, i, j, ho, wo, sh, sw, dh, dw)[..., None] * w[i, j]
    return out


@seam
def depthwise_grad_x(xp, g, w, h, wd, pads, sh, sw, dh, dw):
    """gx[n, y*sh + i*dh, z*sw + j*dw, c] += g[n, y, z, c, q] * w[i, j, c, q] over the taps (i, j) in row-major
    order, each over q, into zeros padded by pads, returned without the padding (N, h, wd, C), C-contiguous:
    g (N, Ho, Wo, C, m), w (kh, kw, C, m)."""
    (n, ho, wo, c, m), ((pt, pb), (pl, pr)) = g.shape, pads
    gx = xp.zeros((n, h + pt + pb, wd + pl + pr, c), g.dtype)
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            win = _tap(gx, i, j, ho, wo, sh, sw, dh, dw)
            for q in range(m):
                win += g[..., q] * w[i, j, :, q]
    return xp.ascontiguousarray(gx[:, pt:pt + h, pl:pl + wd])


@seam
def depthwise_grad_w(xp, x, g, kh, kw, pads, sh, sw, dh, dw):
    """gw[i, j, c, q] = sum over the positions (n, y, z) in row-major order of x[n, y*sh + i*dh, z*sw + j*dw, c] *
    g[n, y, z, c, q]: x (N, H, W, C) zero-padded by pads, g (N, Ho, Wo, C, m)."""
    x = _zero_padded(xp, x, pads)
    n, ho, wo, c, m = g.shape
    gw = xp.empty((kh, kw, c, m), g.dtype)
    for i in range(kh):
        for j in range(kw):
            products = (_tap(x, i, j, ho, wo, sh, sw, dh, dw)[..., None] * g).reshape(-1, c * m)
            # NumPy sums a C-contiguous array's rows one after the other from +0, a row's columns side by side
            # (tests/test_speed_conv.py checks it), 50x quicker than a running sum (xp.cumsum, sequential by law)
            gw[i, j] = xp.sum(products, axis=0).reshape(c, m)
    return gw


def _zero_padded(xp, x, pads):
    """Channels-last x zero-padded by ((top, bottom), (left, right))."""
    ((pt, pb), (pl, pr)), (n, h, w, c) = pads, x.shape
    if not (pt or pb or pl or pr):
        return x
    out = xp.zeros((n, h + pt + pb, w + pl + pr, c), x.dtype)
    out[:, pt:pt + h, pl:pl + w] = x
    return out


def _contiguous_last(xp, x, last):
    """x channels-last, C-contiguous (no copy where it is so in memory, as convolutions leave it)."""
    return xp.ascontiguousarray(x if last else x.transpose(0, 2, 3, 1))


def _depthwise_gradient(xp, g, groups, last):
    """The output's gradient as (N, Ho, Wo, C, m), C-contiguous."""
    g = _contiguous_last(xp, g, last)
    return g.reshape(*g.shape[:3], groups, -1)


def _depthwise_weights(xp, w, groups, layout):
    """The kernel as (kh, kw, C, m), C-contiguous: output channel c*m + q reads input channel c."""
    hwio = w if layout == "NHWC" else w.transpose(2, 3, 1, 0)
    kh, kw, _, o = hwio.shape
    return xp.ascontiguousarray(hwio).reshape(kh, kw, groups, o // groups)


def _cols(xp, x, kh, kw, stride, padding, dilation, groups, last):
    """im2col: every receptive field as a row (N*Ho*Wo, kh*kw*C) ordered taps first, channels last (cuDNN's
    NHWC order), so each copy moves a whole run of channels; grouped as (G, N*Ho*Wo, kh*kw*C/G)."""
    if groups == 1 and x.shape[3 if last else 1] > 1:
        (sh, sw), (dh, dw), pads = _pair(stride), _pair(dilation), _pads(padding)
        cols = SEAMS.im2col(xp, x, last, kh, kw, pads, sh, sw, dh, dw)
        h, w = _spatial(x, "NHWC" if last else "NCHW")
        return cols, (x.shape[0], _pool_size(h, kh, sh, pads[0], dh, False), _pool_size(w, kw, sw, pads[1], dw, False))
    x = x if last else xp.ascontiguousarray(x.transpose(0, 2, 3, 1))
    win = _windows(xp, x, kh, kw, stride, padding, dilation, last=True).transpose(0, 1, 2, 4, 5, 3)
    n, ho, wo = win.shape[:3]
    if groups == 1 and win.shape[5] == 1:   # one channel: a copy per tap into a row of the columns' transpose
        taps = xp.empty((kh, kw, n, ho, wo), win.dtype)     # moves whole rows, 5x quicker than NumPy's one copy
        for i in range(kh):                                 # of runs one element long (BLAS takes the transpose
            for j in range(kw):                             # as it is: the same products, bit for bit)
                taps[i, j] = win[:, :, :, i, j, 0]
        return taps.reshape(kh * kw, -1).T, (n, ho, wo)
    if groups == 1:
        return win.reshape(n * ho * wo, -1), (n, ho, wo)
    cols = win.reshape(n * ho * wo, kh * kw, groups, -1).transpose(2, 0, 1, 3)
    return cols.reshape(groups, n * ho * wo, -1), (n, ho, wo)


@seam
def im2col(xp, x, last, kh, kw, pads, sh, sw, dh, dw):
    """_cols' matrix (N*Ho*Wo, kh*kw*C), taps first and channels last, of x (N, H, W, C) if `last`, else
    (N, C, H, W), zero-padded by pads ((top, bottom), (left, right)). NCHW x is made channels-last first (one copy
    of x, a ninth of the columns' size for 3x3 kernels)."""
    x = x if last else xp.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if (kh, kw, sh, sw) == (1, 1, 1, 1) and not any(map(any, pads)):     # a 1x1 kernel's: x's rows (a view)
        return x.reshape(-1, x.shape[3])
    win = _windows(xp, x, kh, kw, (sh, sw), pads, (dh, dw), last=True).transpose(0, 1, 2, 4, 5, 3)
    return win.reshape(win.shape[0] * win.shape[1] * win.shape[2], -1)


@seam
def reshaped(a, shape):
    """a.reshape(shape): a copy in C order where a's memory allows no view (a convolution's transposed kernel)."""
    return a.reshape(shape)


def _kernel_rows(w, layout):
    """The kernel as (O, kh*kw*C): each output channel's taps first and channels last, the order of _cols' columns.
    A kernel laid out (kh, kw, C, O) in memory is viewed: TensorFlow's, and PyTorch's once an optimizer has updated
    it from its gradient, which the weight gradient's GEMM makes so. Other (O, C, kh, kw) kernels are copied, a
    small transpose per row that stays in the cache (a copy into the (kh*kw*C, O) transpose reads each element
    from another line: 4.2 against 0.9 ns an element at 512x512x3x3)."""
    hwio = w if layout == "NHWC" else w.transpose(2, 3, 1, 0)
    if layout == "NHWC" or hwio.flags.c_contiguous:
        return hwio.reshape(-1, hwio.shape[3]).T
    return SEAMS.reshaped(w.transpose(0, 2, 3, 1), (w.shape[0], -1))


def _kernel_matrix(w, groups, layout):
    """The kernel as the columns' partner: (kh*kw*C/G, O), taps first and channels last as _cols' rows (the
    transpose of _kernel_rows: BLAS takes it as it is, the same products bit for bit); grouped (G, kh*kw*C/G, O/G)."""
    if groups == 1:
        return _kernel_rows(w, layout).T
    kh, kw, cg, o = w.shape if layout == "NHWC" else (w.shape[2], w.shape[3], w.shape[1], w.shape[0])
    hwio = w if layout == "NHWC" else w.transpose(2, 3, 1, 0)
    return hwio.reshape(kh * kw * cg, groups, o // groups).transpose(1, 0, 2)


def _conv_gemm(xp, x, w, kh, kw, stride, padding, dilation, groups, layout):
    """The convolution (N, Ho, Wo, O) as im2col GEMMs."""
    cols, (n, ho, wo) = _cols(xp, x, kh, kw, stride, padding, dilation, groups, layout == "NHWC")
    out = xp.matmul(cols, _kernel_matrix(w, groups, layout))
    if groups != 1:                         # (G, M, O/G) -> (M, O), the groups' outputs side by side
        out = out.transpose(1, 0, 2).reshape(n * ho * wo, -1)
    return out.reshape(n, ho, wo, -1)


def _depthwise_conv(xp, x, w, stride, padding, dilation, groups, layout):
    """The depthwise convolution (N, Ho, Wo, O) tap by tap."""
    xl, wk = _contiguous_last(xp, x, layout == "NHWC"), _depthwise_weights(xp, w, groups, layout)
    (sh, sw), (dh, dw), (kh, kw), pads = _pair(stride), _pair(dilation), wk.shape[:2], _pads(padding)
    ho, wo = _pool_size(xl.shape[1], kh, sh, pads[0], dh, False), _pool_size(xl.shape[2], kw, sw, pads[1], dw, False)
    out = SEAMS.depthwise(xp, xl, wk, pads, ho, wo, sh, sw, dh, dw)
    return out.reshape(*out.shape[:3], -1)


def _conv2d(xp, x, w, b=None, *, stride=1, padding=0, dilation=1, groups=1, layout="NCHW"):
    last = layout == "NHWC"
    kh, kw = (w.shape[0], w.shape[1]) if last else (w.shape[2], w.shape[3])
    if _depthwise(xp, w, groups, layout):
        out = _depthwise_conv(xp, x, w, stride, padding, dilation, groups, layout)
    else:
        out = _conv_gemm(xp, x, w, kh, kw, stride, padding, dilation, groups, layout)
    if b is not None:   # into the float32 sum, before the one rounding, unless the device rounds the convolution
        out = SEAMS.add_bias(xp, _stage(xp, out), b)    # first (cuDNN's, then a half add of the bias)
    return out if last else out.transpose(0, 3, 1, 2)   # NCHW stays channels-last in memory (PyTorch's
    # channels_last): elementwise ops keep it, and pooling and the next convolution read it without a copy


@seam
def add_bias(xp, out, b):
    """out += b, b along out's last axis (a convolution's channels-last sums); out."""
    out += b
    return out


def _depthwise_conv_grad_x(xp, g, x, w, stride, padding, dilation, groups, last):
    """The depthwise convolution's input gradient (w OIHW) tap by tap, in x's layout."""
    g, w = _depthwise_gradient(xp, g, groups, last), _depthwise_weights(xp, w, groups, "NCHW")
    h, wd = _spatial(x, "NHWC" if last else "NCHW")
    gx = SEAMS.depthwise_grad_x(xp, g, w, h, wd, _pads(padding), *_pair(stride), *_pair(dilation))
    return gx if last else gx.transpose(0, 3, 1, 2)


def _conv2d_grad_x(xp, g, ans, x, w, b=None, *, stride=1, padding=0, dilation=1, groups=1, layout="NCHW"):
    last = layout == "NHWC"
    oihw = _oihw(w, layout)
    o, cg, kh, kw = oihw.shape
    n, ho, wo = (g.shape[0], g.shape[1], g.shape[2]) if last else (g.shape[0], g.shape[2], g.shape[3])
    if _depthwise(xp, oihw, groups, "NCHW"):
        return _depthwise_conv_grad_x(xp, g, x, oihw, stride, padding, dilation, groups, last)
    g2 = g.reshape(-1, o) if last else g.transpose(0, 2, 3, 1).reshape(-1, o)
    if groups == 1:                         # the weight's columns ordered taps first, channels last
        gcols = xp.matmul(g2, _kernel_rows(w, layout))
        return _untap_last(xp, gcols.reshape(n, ho, wo, kh, kw, cg), x.shape, stride, padding, dilation, last)
    gcols = xp.matmul(g2.reshape(-1, groups, o // groups).transpose(1, 0, 2), oihw.reshape(groups, o // groups, -1)
                      ).transpose(1, 0, 2)
    # taps first, channels last, as groups == 1: col2im's one pass (the same sums in the same order as _untap's)
    gcols = gcols.reshape(n, ho, wo, groups, cg, kh, kw).transpose(0, 1, 2, 5, 6, 3, 4)
    return _untap_last(xp, gcols.reshape(n, ho, wo, kh, kw, -1), x.shape, stride, padding, dilation, last)


def _conv2d_grad_w(xp, g, ans, x, w, b=None, *, stride=1, padding=0, dilation=1, groups=1, layout="NCHW"):
    last = layout == "NHWC"
    kh, kw = (w.shape[0], w.shape[1]) if last else (w.shape[2], w.shape[3])
    o = g.shape[-1] if last else g.shape[1]
    if _depthwise(xp, w, groups, layout):
        gw = SEAMS.depthwise_grad_w(xp, _contiguous_last(xp, x, last), _depthwise_gradient(xp, g, groups, last), kh, kw,
                                    _pads(padding), *_pair(stride), *_pair(dilation))
        hwio = gw.reshape(kh, kw, 1, o)
        return hwio if last else hwio.transpose(3, 2, 0, 1)
    cols, _ = _cols(xp, x, kh, kw, stride, padding, dilation, groups, last)
    g2 = g.reshape(-1, o) if last else g.transpose(0, 2, 3, 1).reshape(-1, o)
    if groups == 1:
        gw = xp.matmul(cols.T, g2)          # (kh*kw*C, O): _kernel_matrix's layout, handed on as it lies (an
        # optimizer's new weight takes its order: the next forward's kernel rows are then a view)
    else:                                   # (G, kh*kw*C/G, O/G) -> (kh*kw*C/G, O)
        gw = xp.matmul(cols.transpose(0, 2, 1), g2.reshape(-1, groups, o // groups).transpose(1, 0, 2))
        gw = gw.transpose(1, 0, 2).reshape(-1, o)
    hwio = gw.reshape(kh, kw, -1, o)
    return hwio if last else hwio.transpose(3, 2, 0, 1)


@seam
def column_sums(xp, a):
    """The sums of a 2-D array's columns, folding its bottom half onto its top (an odd row out joins the last
    pair): pairwise sums, more accurate than NumPy's row after row over axis 0, and quicker over channels-last
    gradients than a reduction over their other axes (0.19 against 1.1 ms at 64x28x28x16)."""
    while a.shape[0] > 1:
        half = a.shape[0] // 2
        folded = a[:half] + a[half:2 * half]
        if a.shape[0] % 2:
            folded[-1] += a[-1]
        a = folded
    return xp.sum(a, axis=0)


def _conv2d_grad_b(xp, g, ans, x, w, b=None, layout="NCHW", **params):
    # One row of channels per position, in one order whatever g's memory layout: NumPy's sums over axes follow
    # the layout, and a gradient's layout depends on which kernels made it
    rows = xp.ascontiguousarray(_channels_last(g, layout))
    return SEAMS.column_sums(xp, rows.reshape(-1, rows.shape[3]))


defop("conv2d", _conv2d, _conv2d_grad_x, _conv2d_grad_w, _conv2d_grad_b,
      doc="2-D convolution of NCHW x with OIHW weights w (stride, zero padding as an int, a pair or "
          "((top, bottom), (left, right)), dilation, groups) plus an optional bias added to the float32 sum "
          "before the one rounding (or after a first one, where the device's kernels do so); layout='NHWC': x "
          "and the result channels-last, w as (kh, kw, in/groups, out), TensorFlow's layouts.", method=False,
      product="conv", accumulates=True, staged="device",
      example=lambda rng: ((_u(rng, 2, 4, 5, 6), _u(rng, 6, 2, 3, 2), _u(rng, 6)),
                           {"stride": (2, 1), "padding": ((1, 2), (0, 1)), "dilation": (1, 2), "groups": 2}))


def _pool_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size (Pool.h) with padding p = (before, after): a ceil-mode window must start
    inside the input or the padding before it."""
    out = (size + p[0] + p[1] - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + p[0] else out


def _spatial(x, layout):
    return (x.shape[1], x.shape[2]) if layout == "NHWC" else (x.shape[2], x.shape[3])


def _pool_windows(xp, x, kernel_size, stride, padding, dilation, ceil_mode, fill, layout):
    (kh, kw), (sh, sw), (dh, dw) = map(_pair, (kernel_size, stride, dilation))
    (ph, pw), (h, w) = _pads(padding), _spatial(x, layout)
    out = (_pool_size(h, kh, sh, ph, dh, ceil_mode), _pool_size(w, kw, sw, pw, dw, ceil_mode))
    return _windows(xp, x, kh, kw, (sh, sw), (ph, pw), (dh, dw), fill, out, last=layout == "NHWC")


def _nchw(a, layout):
    """Pooled windows (N, Ho, Wo, C) in the layout asked for."""
    return a if layout == "NHWC" else a.transpose(0, 3, 1, 2)


def _tiles(xp, x, kernel_size, stride, padding, dilation, ceil_mode, layout):
    """Windows that tile x without overlap or padding (stride == kernel, the common 2x2 pooling) as a view
    (N, C, Ho, kh, Wo, kw) of x's top-left Ho*kh x Wo*kw corner (of either layout); None for any other pooling."""
    (kh, kw), (sh, sw), (dh, dw) = map(_pair, (kernel_size, stride, dilation))
    if (kh, kw) != (sh, sw) or any(map(any, _pads(padding))) or dh != 1 or dw != 1:
        return None
    (h, w), last = _spatial(x, layout), layout == "NHWC"
    ho, wo = _pool_size(h, kh, sh, (0, 0), 1, ceil_mode), _pool_size(w, kw, sw, (0, 0), 1, ceil_mode)
    if ho * kh > h or wo * kw > w:          # a ceil-mode window past the edge
        return None
    n, c = x.shape[0], x.shape[3] if last else x.shape[1]
    if last:
        return x[:, :ho * kh, :wo * kw, :].reshape(n, ho, kh, wo, kw, c).transpose(0, 5, 1, 2, 3, 4)
    return x[:, :, :ho * kh, :wo * kw].reshape(n, c, ho, kh, wo, kw)


def _taps(tiles):
    """The window taps of _tiles' view in row-major order, each an (N, C, Ho, Wo) view."""
    return [tiles[:, :, :, i, :, j] for i in range(tiles.shape[3]) for j in range(tiles.shape[5])]


def _tile_max(xp, taps):
    """The elementwise max of the taps, folded in order: the same values (NaN and the sign of zero too) as a
    max over the window axes, without NumPy's slow reduction over short inner axes."""
    top = taps[0]
    for v in taps[1:]:
        top = xp.maximum(top, v)
    return top


@seam
def tiles_max_grad(xp, g, top, x, tiles, layout):
    """_max_pool2d_grad for windows that tile x: each input gets g at its window's first maximum (its first NaN
    where it holds one), else 0. top: the pooled output, each window's maximum. A pass per tap over whole
    arrays: np.argmax over a short last axis is slow, and so are xp.where and masked copies (masked)."""
    n, c, ho, kh, wo, kw = tiles.shape
    last = layout == "NHWC"
    top = top.transpose(0, 3, 1, 2) if last else top
    nan = top != top
    nan = nan if nan.any() else None
    g0 = (g.transpose(0, 3, 1, 2) if last else g) + 0     # -0 lands as +0, as in the general path's sum into zeros
    covered = ho * kh == x.shape[1 + (not last)] and wo * kw == x.shape[2 + (not last)]
    # in x's memory order, as the input gradients of other pooling paths are; rows no window reaches: 0
    gx = xp.empty_like(x, dtype=g.dtype) if covered else xp.zeros_like(x, dtype=g.dtype)
    gt = _tiles(xp, gx, (kh, kw), (kh, kw), 0, 1, False, layout)    # a view: the taps write into gx
    free = None                             # windows whose first maximum is still to come
    for k, v in enumerate(_taps(tiles)):
        hit = v == top
        if nan is not None:
            hit |= nan & (v != v)
        if free is not None:
            hit &= free
        gt[:, :, :, k // kw, :, k % kw] = SEAMS.masked(xp, hit, g0)
        if k + 1 < kh * kw:
            free = ~hit if free is None else free & ~hit
    return gx


@seam
def tiles_max(xp, x, tiles, layout):
    """The maximum of each window of _tiles' view of x, in x's memory order."""
    top = _tile_max(xp, _taps(tiles))       # (N, C, Ho, Wo)
    return top.transpose(0, 2, 3, 1) if layout == "NHWC" else top


def _max_pool2d(xp, x, *, kernel_size, stride, padding=0, dilation=1, ceil_mode=False, layout="NCHW"):
    tiles = _tiles(xp, x, kernel_size, stride, padding, dilation, ceil_mode, layout)
    if tiles is not None:
        return SEAMS.tiles_max(xp, x, tiles, layout)
    if _last_in_memory(x, layout):
        return _max_pool2d(xp, x.transpose(0, 2, 3, 1), kernel_size=kernel_size, stride=stride, padding=padding,
                           dilation=dilation, ceil_mode=ceil_mode, layout="NHWC").transpose(0, 3, 1, 2)
    win = _pool_windows(xp, x, kernel_size, stride, padding, dilation, ceil_mode, -xp.inf, layout)
    return _nchw(xp.max(win, axis=(4, 5)), layout)


def _max_pool2d_grad(xp, g, ans, x, *, kernel_size, stride, padding=0, dilation=1, ceil_mode=False, layout="NCHW"):
    """The gradient goes to the first maximum of each window (PyTorch's argmax), nowhere else."""
    tiles = _tiles(xp, x, kernel_size, stride, padding, dilation, ceil_mode, layout)
    if tiles is not None:
        return SEAMS.tiles_max_grad(xp, g, ans, x, tiles, layout)
    if _last_in_memory(x, layout):
        return _max_pool2d_grad(xp, g.transpose(0, 2, 3, 1), None, x.transpose(0, 2, 3, 1), kernel_size=kernel_size,
                                stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode,
                                layout="NHWC").transpose(0, 3, 1, 2)
    win = _pool_windows(xp, x, kernel_size, stride, padding, dilation, ceil_mode, -xp.inf, layout)
    n, ho, wo, c, kh, kw = win.shape
    first = xp.argmax(win.reshape(n, ho, wo, c, kh * kw), axis=-1)[..., None]
    taps = xp.arange(kh * kw).reshape(1, 1, 1, 1, -1) == first
    g = g if layout == "NHWC" else g.transpose(0, 2, 3, 1)
    gcols = xp.where(taps, g[..., None], 0).reshape(win.shape)
    return _untap(xp, gcols, x.shape, stride, padding, dilation, layout == "NHWC")


def _last_in_memory(x, layout):
    """Whether NCHW x is channels-last in memory (a convolution's result): pooled as its NHWC view, the padded
    copy and the result stay so, for the kernels that read them next."""
    return layout == "NCHW" and not x.flags.c_contiguous and x.transpose(0, 2, 3, 1).flags.c_contiguous


def _avg_divisor(xp, size, out, k, s, p, count_include_pad):
    """Per output position along one axis: the window clipped to the padded input, or to the input."""
    start = xp.arange(out) * s - p[0]
    end = xp.minimum(start + k, size + p[1])
    if count_include_pad:
        return end - start
    return xp.minimum(end, size) - xp.maximum(start, 0)


def _avg_pool2d_divisor(xp, x, ho, wo, kernel_size, stride, padding, count_include_pad, divisor_override, layout):
    """The divisors, shaped (Ho, Wo) or (Ho, Wo, 1) to divide (N, Ho, Wo, C) sums."""
    if divisor_override:
        return divisor_override
    (kh, kw), (sh, sw), (ph, pw), (h, w) = _pair(kernel_size), _pair(stride), _pads(padding), _spatial(x, layout)
    dh = _avg_divisor(xp, h, ho, kh, sh, ph, count_include_pad)
    dw = _avg_divisor(xp, w, wo, kw, sw, pw, count_include_pad)
    return (dh[:, None, None] * dw[None, :, None]).astype(x.dtype)


def _avg_pool2d(xp, x, *, kernel_size, stride, padding=0, ceil_mode=False, count_include_pad=True,
                divisor_override=None, layout="NCHW"):
    win = _pool_windows(xp, x, kernel_size, stride, padding, 1, ceil_mode, 0, layout)
    total = xp.sum(win, axis=(4, 5))
    return _nchw(total / _avg_pool2d_divisor(xp, x, total.shape[1], total.shape[2], kernel_size, stride, padding,
                                             count_include_pad, divisor_override, layout), layout)


def _avg_pool2d_grad(xp, g, ans, x, *, kernel_size, stride, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None, layout="NCHW"):
    kh, kw = _pair(kernel_size)
    g = g if layout == "NHWC" else g.transpose(0, 2, 3, 1)
    share = g / _avg_pool2d_divisor(xp, x, g.shape[1], g.shape[2], kernel_size, stride, padding,
                                    count_include_pad, divisor_override, layout)
    gcols = xp.broadcast_to(share[..., None, None], share.shape + (kh, kw))
    return _untap(xp, gcols, x.shape, stride, padding, 1, layout == "NHWC")


defop("max_pool2d", _max_pool2d, _max_pool2d_grad,
      doc="Max over (dilated) windows of NCHW x (layout='NHWC': channels-last), padding (an int, a pair or "
          "((top, bottom), (left, right))) counting as -inf; the gradient goes to each window's first maximum.",
      method=False, function=False, selects=True,
      example=lambda rng: ((_u(rng, 2, 3, 6, 7),), {"kernel_size": (3, 2), "stride": 2, "padding": 1,
                                                    "dilation": (1, 2), "ceil_mode": True}))
defop("avg_pool2d", _avg_pool2d, _avg_pool2d_grad,
      doc="Mean over windows of NCHW x (layout='NHWC': channels-last; padding as for max_pool2d; PyTorch's "
          "divisor rules: count_include_pad, divisor_override), accumulated in float32.",
      method=False, function=False, saves=False,
      example=lambda rng: ((_u(rng, 2, 3, 6, 7),), {"kernel_size": 3, "stride": (2, 3), "padding": 1,
                                                    "ceil_mode": True, "count_include_pad": False}))


def _bins(size, out):
    """Adaptive pooling's bins along one axis: [floor(i*size/out), ceil((i+1)*size/out))."""
    return [((i * size) // out, ((i + 1) * size + out - 1) // out) for i in range(out)]


def _adaptive_avg_pool2d(xp, x, *, output_size):
    rows, cols = _bins(x.shape[2], output_size[0]), _bins(x.shape[3], output_size[1])
    out = xp.empty(x.shape[:2] + tuple(output_size), x.dtype)
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            out[:, :, i, j] = xp.mean(x[:, :, r0:r1, c0:c1], axis=(2, 3))
    return out


def _adaptive_avg_pool2d_grad(xp, g, ans, x, *, output_size):
    gx = xp.zeros(x.shape, g.dtype)
    for i, (r0, r1) in enumerate(_bins(x.shape[2], output_size[0])):
        for j, (c0, c1) in enumerate(_bins(x.shape[3], output_size[1])):
            gx[:, :, r0:r1, c0:c1] += (g[:, :, i, j] / ((r1 - r0) * (c1 - c0)))[:, :, None, None]
    return gx


defop("adaptive_avg_pool2d", _adaptive_avg_pool2d, _adaptive_avg_pool2d_grad,
      doc="Mean of NCHW x over output_size bins (PyTorch's adaptive bins), accumulated in float32.",
      method=False, function=False, saves=False,
      example=lambda rng: ((_u(rng, 2, 3, 5, 7),), {"output_size": (3, 4)}))

# -- activations that are one kernel in PyTorch (one rounding) ------------------------------------------------------
_GELU_TANH = math.sqrt(2 / math.pi)


def _erfc(xp, z, exp=None):
    """erfc by Numerical Recipes' Chebyshev fit (relative error below 1.2e-7), computed in float64 (exp: the
    exponential to use, xp.exp unless given)."""
    z = z.astype("float64")
    t = 1 / (1 + 0.5 * xp.abs(z))
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    r = t * (xp.exp if exp is None else exp)(-z * z + poly)
    return xp.where(z >= 0, r, 2 - r)


# fdlibm's exp: ln 2 in two parts (the high one with 21 trailing zero bits: k * _LN2_HI is exact), its polynomial
_LN2_HI, _LN2_LO, _INV_LN2 = 6.93147180369123816490e-01, 1.90821492927058770002e-10, 1.44269504088896338700e+00
_EXP_P1, _EXP_P2, _EXP_P3, _EXP_P4, _EXP_P5 = (1.66666666666666019037e-01, -2.77777777770155933842e-03,
                                               6.61375632143793436117e-05, -1.65339022054652515390e-06,
                                               4.13813679705723846039e-08)
_SHIFTER = 6755399441055744.0       # 1.5 * 2**52: a + _SHIFTER rounds a (|a| < 2**51) to an integer in its low bits
_SHIFTER_BITS = 0x4338000000000000


def exp64(xp, a):
    """exp of float64 a by fdlibm's formula (below an ulp off) in IEEE basic operations only, without libm or fused
    multiply-adds: the same bits from NumPy's array math as from the speed module's kernels on every CPU (NumPy's
    own float64 exp is its AVX-512 code on some CPUs and libm's on others, which differ in the last bit)."""
    a = xp.where(a < -746.0, -746.0, xp.where(a > 710.0, 710.0, a))     # exp's range (0 below, inf above); NaN stays
    s = a * _INV_LN2 + _SHIFTER
    k = s.view("int64") - _SHIFTER_BITS         # round(a / ln 2), from s's bits
    kf = s - _SHIFTER
    hi = a - kf * _LN2_HI
    lo = kf * _LN2_LO
    r = hi - lo                                 # a - k ln 2, within +-ln(2)/2
    t = r * r
    c = r - t * (_EXP_P1 + t * (_EXP_P2 + t * (_EXP_P3 + t * (_EXP_P4 + t * _EXP_P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    half = k >> 1                               # 2**k in two normal factors: one rounding, into subnormals too
    return y * ((half + 1023) << 52).view("float64") * ((k - half + 1023) << 52).view("float64")


def _exp(xp):
    return lambda a: exp64(xp, a)


def _one_nan(xp, y):
    """y with every NaN the positive quiet one: which NaN NumPy's loops pass on depends on the array's length
    (a SIMD body or a tail, with operands in either order), which no kernel could follow."""
    return xp.where(y != y, xp.asarray(xp.nan, dtype=y.dtype), y)


@seam
def gelu(xp, x, approximate):
    """x * Phi(x) in x's dtype: Phi by _erfc (in float64, its exp exp64's), or PyTorch's tanh form (in x's dtype);
    NaNs the positive quiet one."""
    if approximate == "tanh":
        return _one_nan(xp, 0.5 * x * (1 + xp.tanh(_GELU_TANH * (x + 0.044715 * x * x * x))))
    return _one_nan(xp, (x * 0.5 * _erfc(xp, -x * math.sqrt(0.5), _exp(xp))).astype(x.dtype))


@seam
def gelu_grad(xp, g, x, approximate):
    """g times gelu's derivative at x, in x's dtype (computed as gelu computes)."""
    if approximate == "tanh":
        t = xp.tanh(_GELU_TANH * (x + 0.044715 * x * x * x))
        return _one_nan(xp, g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_TANH * (1 + 3 * 0.044715 * x * x)))
    return _one_nan(xp, (g * _gelu_derivative(xp, x)).astype(x.dtype))


def _gelu_derivative(xp, x):
    """The exact form's derivative at x, in float64."""
    cdf = 0.5 * _erfc(xp, -x * math.sqrt(0.5), _exp(xp))
    return cdf + x * exp64(xp, -0.5 * x.astype("float64") ** 2) / math.sqrt(2 * math.pi)


def _gelu(xp, x, *, approximate="none"):
    return SEAMS.gelu(xp, x, approximate)


def _gelu_grad(xp, g, ans, x, *, approximate="none"):
    return SEAMS.gelu_grad(xp, g, x, approximate)


defop("gelu", _gelu, _gelu_grad, doc="x * Phi(x) (approximate='tanh': PyTorch's tanh form), one rounding.",
      method=False)


def _silu(xp, x):
    return x / (1 + xp.exp(-x))


defop("silu", _silu, lambda xp, g, ans, x: g * (1 / (1 + xp.exp(-x))) * (1 + x * (1 - 1 / (1 + xp.exp(-x)))),
      doc="x * sigmoid(x), one rounding.", method=False)
@seam
def clip(xp, x, lo, hi):
    """x clamped into [lo, hi] (NumPy's clip: a NaN kept, x kept where it equals a bound: -0.0 at a bound 0)."""
    return xp.clip(x, lo, hi)


defop("hardtanh", lambda xp, x, *, min_val=-1.0, max_val=1.0: SEAMS.clip(xp, x, min_val, max_val),
      lambda xp, g, ans, x, min_val=-1.0, max_val=1.0: SEAMS.masked_between(xp, g, x, min_val, max_val),
      doc="x clamped into [min_val, max_val]; no gradient at or beyond the ends (PyTorch's; relu6 is (0, 6)).",
      method=False, selects=lambda min_val=-1.0, max_val=1.0: (min_val, max_val),
      masks=True, example=lambda rng: ((rng.uniform(-2, 8, (3, 4)),), {"min_val": 0.0, "max_val": 6.0}))
defop("dropout", lambda xp, x, *, mask, scale: x * mask * scale,
      lambda xp, g, ans, x, mask, scale: g * mask * scale,
      doc="x where mask holds, times scale (1 / (1 - p)), one rounding (PyTorch's fused kernel).",
      method=False, function=False, saves=False,
      example=lambda rng: ((_u(rng, 3, 4),), {"mask": rng.random((3, 4)) > 0.3, "scale": 1 / 0.7}))

# -- normalisation: float32 statistics, one rounding of the result ---------------------------------------------


def _normalized(xp, x, axes, eps, mean=None, var=None):
    """(x - mean) / sqrt(var + eps) over `axes` (the biased variance), and 1 / sqrt(var + eps)."""
    if mean is None:
        mean = xp.mean(x, axis=axes, keepdims=True)
        var = xp.mean((x - mean) ** 2, axis=axes, keepdims=True)
    rstd = 1 / xp.sqrt(var + eps)
    return (x - mean) * rstd, rstd


def _norm_grad(xp, gh, xhat, rstd, axes):
    """The gradient through normalisation by batch statistics, from the gradient of the normalised values."""
    return rstd * (gh - xp.mean(gh, axis=axes, keepdims=True) - xhat * xp.mean(gh * xhat, axis=axes, keepdims=True))


def _affine(y, w, b, shape):
    y = y if w is None else y * w.reshape(shape)
    return y if b is None else y + b.reshape(shape)


def _last(x, n):
    return tuple(range(x.ndim - n, x.ndim))


@seam
def layer_norm(xp, x, w, b, normalized_ndim, eps):
    """(x - mean) / sqrt(var + eps) * w + b over the last normalized_ndim axes (w, b: None or of their shape); NaNs
    the positive quiet one (as gelu's)."""
    return _one_nan(xp, _affine(_normalized(xp, x, _last(x, normalized_ndim), eps)[0], w, b,
                                x.shape[x.ndim - normalized_ndim:]))


@seam
def layer_norm_grad(xp, g, x, w, normalized_ndim, eps):
    """layer_norm's gradient with respect to x."""
    axes = _last(x, normalized_ndim)
    return _one_nan(xp, _norm_grad(xp, g if w is None else g * w, *_normalized(xp, x, axes, eps), axes))


@seam
def layer_norm_grad_w(xp, g, x, normalized_ndim, eps):
    """layer_norm's gradient with respect to w, before the dispatcher sums it over the leading axes: g * xhat."""
    return _one_nan(xp, g * _normalized(xp, x, _last(x, normalized_ndim), eps)[0])


def _layer_norm_grad_w(xp, g, ans, x, w=None, b=None, normalized_ndim=1, eps=1e-5):
    gw = SEAMS.layer_norm_grad_w(xp, g, x, normalized_ndim, eps)
    if _stages(xp):     # PyTorch's CUDA kernel sums dy * xhat over the rows itself: no tensor of the products
        return gw.astype(xp.float64).sum(axis=tuple(range(x.ndim - normalized_ndim)))
    return gw


defop("layer_norm", lambda xp, x, w=None, b=None, *, normalized_ndim=1, eps=1e-5:
      SEAMS.layer_norm(xp, x, w, b, normalized_ndim, eps),
      lambda xp, g, ans, x, w=None, b=None, normalized_ndim=1, eps=1e-5:
      SEAMS.layer_norm_grad(xp, g, x, w, normalized_ndim, eps),
      _layer_norm_grad_w, lambda xp, g, ans, x, w=None, b=None, normalized_ndim=1, eps=1e-5: g,
      doc="(x - mean) / sqrt(var + eps) * w + b over the last normalized_ndim axes, one rounding.", method=False,
      function=False, staged="device",
      example=lambda rng: ((_u(rng, 3, 2, 4), _u(rng, 2, 4), _u(rng, 2, 4)), {"normalized_ndim": 2}))


def _channels(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def _group_norm_parts(xp, x, num_groups, eps):
    xr = x.reshape(x.shape[0], num_groups, -1)
    xhat, rstd = _normalized(xp, xr, (2,), eps)
    return xr, xhat, rstd


def _group_norm(xp, x, w=None, b=None, *, num_groups, eps=1e-5):
    if _stages(xp):     # PyTorch's CUDA kernel: y = x * a + b (one fma), a = rstd * w, b = bias - a * mean
        xr, mean, rstd, gamma = _gn_kernel_parts(xp, x, w, num_groups, eps)
        a = rstd * gamma
        shift = -a * mean if b is None else b.reshape(gamma.shape) - a * mean
        return SEAMS.fma(xp, xr, a, shift).reshape(x.shape)
    return _affine(_group_norm_parts(xp, x, num_groups, eps)[1].reshape(x.shape), w, b, _channels(x))


def _gn_kernel_parts(xp, x, w, num_groups, eps):
    """(x as (N, G, C/G, L) in float64, its mean and rstd (N, G, 1, 1), w as (G, C/G, 1) (ones if None)) as PyTorch's
    CUDA group norm keeps them: the statistics stored in x's format (its mean and rstd outputs are x's dtype)."""
    n, c = x.shape[:2]
    xr = x.reshape(n, num_groups, c // num_groups, -1).astype(xp.float64)
    mean = xr.mean(axis=(2, 3), keepdims=True)
    rstd = _stage(xp, (1 / xp.sqrt(((xr - mean) ** 2).mean(axis=(2, 3), keepdims=True) + eps)).astype(xp.float32))
    gamma = xp.ones((num_groups, c // num_groups, 1), xp.float32) if w is None else w.reshape(num_groups, -1, 1)
    return xr, _stage(xp, mean.astype(xp.float32)), rstd, gamma


def _gn_kernel_grads(xp, g, x, w, num_groups, eps):
    """(the input's gradient, the weight's) as PyTorch's CUDA group norm backward computes them from the stored
    statistics: per (n, c) sums ds = sum(dy * x), db = sum(dy); dx = rstd * w * dy + c2 * x + c3."""
    xr, mean, rstd, gamma = _gn_kernel_parts(xp, x, w, num_groups, eps)
    gr = g.reshape(xr.shape).astype(xp.float64)
    ds, db = (gr * xr).sum(axis=3, keepdims=True), gr.sum(axis=3, keepdims=True)
    sum1, sum2 = (ds * gamma).sum(axis=2, keepdims=True), (db * gamma).sum(axis=2, keepdims=True)
    s = 1 / (xr.shape[2] * xr.shape[3])
    c2 = (sum2 * mean - sum1) * rstd.astype(xp.float64) ** 3 * s
    c3 = -c2 * mean - sum2 * rstd * s
    gx = (rstd * gamma * gr + c2 * xr + c3).reshape(x.shape)
    return gx, ((ds - db * mean) * rstd).sum(axis=0).reshape(-1)


def _group_norm_grad_x(xp, g, ans, x, w=None, b=None, *, num_groups, eps=1e-5):
    if _stages(xp):
        return _gn_kernel_grads(xp, g, x, w, num_groups, eps)[0]
    _, xhat, rstd = _group_norm_parts(xp, x, num_groups, eps)
    gh = (g if w is None else g * w.reshape(_channels(x))).reshape(xhat.shape)
    return _norm_grad(xp, gh, xhat, rstd, (2,)).reshape(x.shape)


def _per_channel(xp, a):
    return xp.sum(a, axis=(0,) + tuple(range(2, a.ndim)))


def _group_norm_grad_w(xp, g, ans, x, w=None, b=None, *, num_groups, eps=1e-5):
    if _stages(xp):
        return _gn_kernel_grads(xp, g, x, w, num_groups, eps)[1]
    return _per_channel(xp, g * _group_norm_parts(xp, x, num_groups, eps)[1].reshape(x.shape))


defop("group_norm", _group_norm, _group_norm_grad_x, _group_norm_grad_w,
      lambda xp, g, ans, x, w=None, b=None, *, num_groups, eps=1e-5: _per_channel(xp, g),
      doc="x of shape (N, C, ...) normalised over each of num_groups channel groups, times w plus b per channel, "
          "one rounding.", method=False, function=False, staged="device",
      example=lambda rng: ((_u(rng, 2, 4, 3), _u(rng, 4), _u(rng, 4)), {"num_groups": 2}))


def _bn_parts(xp, x, mean, var, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    if mean is not None:
        mean, var = xp.asarray(mean).reshape(_channels(x)), xp.asarray(var).reshape(_channels(x))
    return _normalized(xp, x, axes, eps, mean, var), axes


def _batch_norm(xp, x, w=None, b=None, *, mean=None, var=None, eps=1e-5):
    if mean is None:
        return SEAMS.batch_norm_train(xp, x, w, b, eps)
    return _affine(_bn_parts(xp, x, mean, var, eps)[0][0], w, b, _channels(x))


@seam
def batch_norm_train(xp, x, w, b, eps):
    """Batch norm by the batch's own statistics: (x - mean) / sqrt(var + eps) * w + b per channel (w, b: None or
    of shape (C,))."""
    return _affine(_bn_parts(xp, x, None, None, eps)[0][0], w, b, _channels(x))


def _batch_norm_grad_x(xp, g, ans, x, w=None, b=None, *, mean=None, var=None, eps=1e-5):
    if mean is None and _stages(xp):
        return _kernel_grad_x(xp, g, x, w, *_kernel_stats(xp, x, mean, var, eps))
    if mean is None:
        return SEAMS.batch_norm_train_grad_x(xp, g, x, w, eps)
    rstd = _bn_parts(xp, x, mean, var, eps)[0][1]
    return (g if w is None else g * w.reshape(_channels(x))) * rstd


@seam
def batch_norm_train_grad_x(xp, g, x, w, eps):
    """batch_norm_train's gradient with respect to x."""
    (xhat, rstd), axes = _bn_parts(xp, x, None, None, eps)
    return _norm_grad(xp, g if w is None else g * w.reshape(_channels(x)), xhat, rstd, axes)


def _halving_sum(xp, v):
    """Lane 0 of a warp's shuffle-down sum over v's first axis (a power of two long): each step adds the upper half
    of the lanes, staged (a Float2 built from the input's scalar type), to the lower half (lanes first: both halves
    contiguous)."""
    while len(v) > 1:
        half = len(v) // 2
        v = v[:half] + _stage(xp, v[half:])
    return v[0]


def _kernel_channel_sum(xp, a):
    """Per-channel sums of a (N, C, ...) as PyTorch's native CUDA batch-norm backward makes them where xp stages
    (Normalization.cuh, reduce() in batch_norm_backward_kernel): 512 threads a channel, getNumThreads(L) of them
    along the L values of each (n, c) row, each summing its elements in float32, every element and every partial
    sum a warp shuffle passes in the input's format; elsewhere the exact sum."""
    if not _stages(xp):
        return _per_channel(xp, a)
    n, c = a.shape[:2]
    a = _stage(xp, xp.array(a.reshape(n, c, -1)))
    length = a.shape[2]
    tx = next((t for t in (32, 64, 128, 256) if length <= t), 512)
    ty = 512 // tx
    nb, nx = -(-n // ty), -(-length // tx)      # zeros pad the grid: x + 0 is x
    width = tx if nx > 1 else length             # a row shorter than tx: threads x >= length add nothing
    if (nb * ty, nx * width) != (n, length):
        a = xp.pad(a, ((0, nb * ty - n), (0, 0), (0, nx * width - length)))
    # thread (y, x) adds rows y, y + ty, ... and within each row elements x, x + tx, ..., in that order: one float32
    # add of a (ty, C, width) block of the grid per step
    blocks = a.reshape(nb, ty, c, nx, width)
    sums = blocks[0, :, :, 0].copy()
    for k in range(1, nb * nx):
        sums += blocks[k // nx, :, :, k % nx]
    # thread y * tx + x is lane x % 32 of warp (y * tx + x) // 32: lanes first (each shuffle step's halves
    # contiguous), the threads past the row holding zeros
    used = -(-width // 32)
    sums = xp.pad(sums, ((0, 0), (0, 0), (0, 32 * used - width))) if width % 32 else sums
    lanes = xp.zeros((32, ty, tx // 32, c), sums.dtype)
    lanes[:, :, :used] = sums.reshape(ty, c, used, 32).transpose(3, 0, 2, 1)
    per_warp = _halving_sum(xp, lanes.reshape(32, 16, c))
    return _halving_sum(xp, per_warp)           # the first warp again; its lanes 16..31 hold zeros


def _kernel_sum(xp, g, x, mu, which):
    """The kernel's channel sum of dy (which=0) or of dy * (x - mu) (which=1), made once per backward step: the
    kernel's one reduction serves dx, dw and db alike (x and mu are the node's, the same in each gradient)."""
    key = (id(g), id(x), which)
    if key not in xp.shared:
        xp.shared[key] = SEAMS.kernel_channel_sums(xp, g) if which == 0 else SEAMS.kernel_channel_sums(xp, g, x, mu)
    return xp.shared[key]


@seam
def kernel_channel_sums(xp, g, x=None, mu=None):
    """_kernel_channel_sum of g, or of g * (x - mu) (float32 products), for a namespace that stages."""
    return _kernel_channel_sum(xp, g if x is None else g * (x - mu))


def _kernel_stats(xp, x, mean, var, eps):
    """(the mean x is normalised by, 1 / sqrt(var + eps)) as _bn_parts makes them, once per staged backward step
    (its gradients share them, as the kernel's one pass does; they need no normalised x)."""
    key = (id(x), "stats")
    if key not in xp.shared:
        if mean is None:    # _normalized's sums, through the seam of the running statistics' (biased)
            mean, var = SEAMS.batch_stats(xp._xp, x, 0)
        mean, var = xp.asarray(mean).reshape(_channels(x)), xp.asarray(var).reshape(_channels(x))
        xp.shared[key] = (mean, 1 / xp.sqrt(var + eps))
    return xp.shared[key]


def _kernel_grad_x(xp, g, x, w, mu, rstd):
    """The input's gradient as batch_norm_backward_kernel computes it, from its two (staged) channel sums."""
    norm = xp.float32(1 / (x.size // x.shape[1]))
    shape = _channels(x)
    grad_mean = (_kernel_sum(xp, g, x, mu, 0) * norm).reshape(shape)
    proj_scale = (_kernel_sum(xp, g, x, mu, 1) * norm).reshape(shape) * rstd * rstd
    grad_scale = rstd if w is None else rstd * w.reshape(shape)
    return SEAMS.kernel_input_grad(g, x, mu, proj_scale, grad_mean, grad_scale)


@seam
def kernel_input_grad(g, x, mu, proj_scale, grad_mean, grad_scale):
    """batch_norm_backward_kernel's input gradient from its per-channel factors (each of shape (1, C, 1, ...))."""
    return (g - (x - mu) * proj_scale - grad_mean) * grad_scale


def _batch_norm_grad_w(xp, g, ans, x, w=None, b=None, *, mean=None, var=None, eps=1e-5):
    if not _stages(xp) and mean is None:
        return SEAMS.batch_norm_train_grad_w(xp, g, x, eps)
    if not _stages(xp):
        return _per_channel(xp, g * _bn_parts(xp, x, mean, var, eps)[0][0])
    mu, rstd = _kernel_stats(xp, x, mean, var, eps)
    return _kernel_sum(xp, g, x, mu, 1) * rstd.reshape(-1)    # sum(dy * (x - mean)) * invstd


@seam
def batch_norm_train_grad_w(xp, g, x, eps):
    """batch_norm_train's gradient with respect to w: the per-channel sums of g times the normalised x."""
    return _per_channel(xp, g * _bn_parts(xp, x, None, None, eps)[0][0])


def _batch_norm_grad_b(xp, g, ans, x, w=None, b=None, **params):
    if not _stages(xp):
        return SEAMS.channel_sums(xp, g)
    return _kernel_sum(xp, g, x, None, 0)


@seam
def channel_sums(xp, a):
    """The sums of a (N, C, ...) per channel (NumPy's, in its order of a's memory)."""
    return _per_channel(xp, a)


defop("batch_norm", _batch_norm, _batch_norm_grad_x, _batch_norm_grad_w, _batch_norm_grad_b,
      doc="x of shape (N, C, ...) normalised per channel by the batch's statistics (or the given mean and var), "
          "times w plus b, one rounding.", method=False, function=False, staged="device",
      example=lambda rng: ((_u(rng, 3, 4, 2), _u(rng, 4), _u(rng, 4)), {"eps": 1e-3}))


@seam
def embedding_grad(xp, g, shape, indices, padding_idx):
    """The gradient of w (of `shape`) for w[indices]: each row of g added into its index's row, in order."""
    gw = xp.zeros(shape, g.dtype)
    xp.add.at(gw, indices, g)
    if padding_idx is not None:
        gw[padding_idx] = 0                 # the padding row never learns (PyTorch's rule)
    return gw


def _embedding_grad(xp, g, ans, w, *, indices, padding_idx=None):
    if not (_stages(xp) and indices.size <= 3072):
        return SEAMS.embedding_grad(xp, g, w.shape, indices, padding_idx)
    gw = xp.zeros(w.shape, g.dtype)
    _feature_kernel_sums(xp, gw, indices.reshape(-1), g.reshape(-1, w.shape[-1]))
    if padding_idx is not None:
        gw[padding_idx] = 0                 # the padding row never learns (PyTorch's rule)
    return gw


def _feature_kernel_sums(xp, gw, rows, g):
    """Rows of g added into gw as PyTorch's embedding_backward_feature_kernel does (up to 3072 indices): 32 indices
    at a time, the rows of a chunk that share an index summed in float32, then added into gw in w's format."""
    for start in range(0, rows.size, 32):
        chunk = rows[start:start + 32]
        picked, at = xp.unique(chunk, return_inverse=True)
        part = xp.zeros((picked.size, g.shape[1]), g.dtype)
        xp.add.at(part, at, g[start:start + 32])
        gw[picked] = _stage(xp, gw[picked] + _stage(xp, part))


defop("embedding", lambda xp, w, *, indices, padding_idx=None: w[indices], _embedding_grad,
      doc="Rows of w picked by integer indices; the padding_idx row gets no gradient.", layout=True, saves=False,
      staged="device",
      method=False, function=False,
      example=lambda rng: ((_u(rng, 5, 3),), {"indices": rng.integers(0, 5, (2, 4))}))

# -- losses: one op each, computed in float32 (the reduction too), as PyTorch's kernels do ----------------------------


def _reduce(xp, loss, reduction):
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def _unreduce(xp, g, loss_shape, reduction):
    """The gradient of each element's loss from the gradient of the reduced loss."""
    if reduction == "none":
        return g
    n = 1
    for d in loss_shape:
        n *= d
    return xp.broadcast_to(g if reduction == "sum" else g / n, loss_shape)


def _nll_parts(xp, x, target, weight, ignore_index):
    """The targets made safe to index with, each sample's weight (0 where ignored), and the weights' sum. Without
    class weights and with no target ignored (the common case) the weights are None: all 1, summing exactly to
    their count (below 2**24)."""
    target = xp.asarray(target)
    keep = target != ignore_index
    if weight is None and keep.size <= 1 << 24 and keep.all():
        return target, None, x.dtype.type(keep.size)
    safe = xp.where(keep, target, 0)
    w = keep.astype(x.dtype) if weight is None else xp.asarray(weight).astype(x.dtype)[safe] * keep
    return safe, w, w.sum()


def _nll_loss(xp, x, *, target, weight=None, ignore_index=-100, reduction="mean"):
    safe, w, total = _nll_parts(xp, x, target, weight, ignore_index)
    picked = x[xp.arange(len(x)), safe] if x.ndim == 2 else xp.take_along_axis(x, safe[:, None], axis=1)[:, 0]
    loss = -picked if w is None else -picked * w
    return loss.sum() / total if reduction == "mean" else _reduce(xp, loss, reduction)


def _nll_loss_grad(xp, g, ans, x, *, target, weight=None, ignore_index=-100, reduction="mean"):
    safe, w, total = _nll_parts(xp, x, target, weight, ignore_index)
    gl = g / total if reduction == "mean" else g
    picked = xp.arange(x.shape[1]).reshape((1, -1) + (1,) * (x.ndim - 2)) == safe[:, None]
    # Zero where the weight is (ignored targets): with every target ignored the mean is 0/0, its gradient 0.
    each = -gl if w is None else xp.where(w != 0, -gl * w, 0)
    return xp.where(picked, each[:, None] if each.ndim else each, 0)


def _targets(rng):
    t = rng.integers(0, 3, (4, 2))
    t[1, 1] = -100
    return t


defop("nll_loss", _nll_loss, _nll_loss_grad,
      doc="Negative log-likelihood of log-probabilities x (N, C, ...) at integer targets, weighted per class, "
          "ignore_index skipped; mean divides by the weights' sum.", method=False,
      function=False,
      example=lambda rng: ((_u(rng, 4, 3, 2),), {"target": _targets(rng), "weight": _u(rng, 3)}))


# PyTorch's kernels compute (x - y) and its square in the inputs' type, each rounded, before the reduction (a
# float16 difference past 255.9 overflows when squared); l1_loss is abs(x - y), two ops
def _mse(xp, x, y, *, reduction="mean"):
    d = _stage(xp, x - y)
    return _reduce(xp, _stage(xp, d * d), reduction)


def _l1(xp, x, y, *, reduction="mean"):
    return _reduce(xp, xp.abs(_stage(xp, x - y)), reduction)


def _mse_grad(xp, g, ans, x, y, *, reduction="mean"):
    # PyTorch's norm * (x - y) * grad, norm = 2 / n for 'mean' (else 2), each step rounded in the inputs' type
    d = x - y
    norm = _stage(xp, xp.float32(2 / d.size if reduction == "mean" else 2))
    return _stage(xp, norm * _stage(xp, d)) * xp.broadcast_to(g, d.shape)


def _l1_grad(xp, g, ans, x, y, *, reduction="mean"):
    d = x - y
    return xp.sign(_stage(xp, d)) * _unreduce(xp, g, d.shape, reduction)


defop("mse_loss", _mse, _mse_grad, lambda xp, g, ans, x, y, **params: -_mse_grad(xp, g, ans, x, y, **params),
      doc="(x - y)**2, reduced ('mean', 'sum' or 'none') in float32.", method=False,
      function=False, staged=True, example=lambda rng: ((_u(rng, 3, 4), _u(rng, 3, 4)), {"reduction": "sum"}))
defop("l1_loss", _l1, _l1_grad, lambda xp, g, ans, x, y, **params: -_l1_grad(xp, g, ans, x, y, **params),
      doc="|x - y|, reduced ('mean', 'sum' or 'none') in float32.", method=False,
      function=False, staged=True, example=lambda rng: ((_u(rng, 3, 4), _u(rng, 3, 4)), {}))


def _log_sigmoid(xp, x):
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


def _bce_logits_parts(xp, x, y, weight, pos_weight):
    ls = _log_sigmoid(xp, x)
    lw = 1 if pos_weight is None else (xp.asarray(pos_weight) - 1) * y + 1
    w = 1 if weight is None else xp.asarray(weight)
    return ls, lw, w


def _bce_logits(xp, x, y, *, weight=None, pos_weight=None, reduction="mean"):
    ls, lw, w = _bce_logits_parts(xp, x, y, weight, pos_weight)
    ls = _stage(xp, ls)         # at::log_sigmoid(input): a tensor of x's format
    return _reduce(xp, ((1 - y) * x - ls * lw) * w, reduction)


def _bce_logits_grad_x(xp, g, ans, x, y, *, weight=None, pos_weight=None, reduction="mean"):
    if _stages(xp) and pos_weight is None:      # PyTorch's backward, in place in x's format
        return _bce_logits_grad_in_place(xp, g, x, y, weight, reduction)
    ls, lw, w = _bce_logits_parts(xp, x, y, weight, pos_weight)
    d = ((1 - y) - lw / (1 + xp.exp(x))) * w
    return d * _unreduce(xp, g, d.shape, reduction)


def _bce_logits_grad_in_place(xp, g, x, y, weight, reduction):
    """x.sigmoid().sub_(y).mul_(grad) (a 0-dim grad cast to x's format first), .mul_(weight), .div_(n) for 'mean':
    each step a tensor of x's format."""
    d = _stage(xp, _stage(xp, 1 / (1 + xp.exp(-x))) - y)
    d = _stage(xp, d * (_stage(xp, xp.array(g)) if g.ndim == 0 else g))
    d = d if weight is None else _stage(xp, d * xp.asarray(weight))
    return xp.broadcast_to(d / d.size if reduction == "mean" else d, x.shape)


def _bce_logits_grad_y(xp, g, ans, x, y, *, weight=None, pos_weight=None, reduction="mean"):
    ls, lw, w = _bce_logits_parts(xp, x, y, weight, pos_weight)
    d = (-x - ls * (0 if pos_weight is None else xp.asarray(pos_weight) - 1)) * w
    return d * _unreduce(xp, g, d.shape, reduction)


defop("binary_cross_entropy_with_logits", _bce_logits, _bce_logits_grad_x, _bce_logits_grad_y,
      doc="(1 - y) * x - log_sigmoid(x) * ((pos_weight - 1) * y + 1), times weight, reduced in float32.", method=False,
      function=False, staged="device",
      example=lambda rng: ((rng.uniform(-3, 3, (3, 4)), rng.uniform(0, 1, (3, 4))),
                           {"weight": rng.uniform(0.5, 2, 4), "pos_weight": rng.uniform(0.5, 2, 4)}))


def _bce_logs(xp, x):
    """PyTorch's clamped logs: log(x) and log(1 - x), each at least -100."""
    return xp.maximum(xp.log(x), -100), xp.maximum(xp.log1p(-x), -100)


def _bce(xp, x, y, *, weight=None, reduction="mean"):
    log_x, log_1mx = _bce_logs(xp, x)
    return _reduce(xp, ((y - 1) * log_1mx - y * log_x) * (1 if weight is None else xp.asarray(weight)), reduction)


def _bce_grad_x(xp, g, ans, x, y, *, weight=None, reduction="mean"):
    d = (x - y) / xp.maximum((1 - x) * x, 1e-12) * (1 if weight is None else xp.asarray(weight))
    return d * _unreduce(xp, g, d.shape, reduction)


def _bce_grad_y(xp, g, ans, x, y, *, weight=None, reduction="mean"):
    log_x, log_1mx = _bce_logs(xp, x)
    d = (log_1mx - log_x) * (1 if weight is None else xp.asarray(weight))
    return d * _unreduce(xp, g, d.shape, reduction)


defop("binary_cross_entropy", _bce, _bce_grad_x, _bce_grad_y,
      doc="(y - 1) * max(log(1 - x), -100) - y * max(log(x), -100), times weight, reduced in float32.", method=False, function=False,
      example=lambda rng: ((rng.uniform(0.1, 0.9, (3, 4)), rng.uniform(0, 1, (3, 4))), {"reduction": "mean"}))

# -- more activations: PyTorch's CUDA formulas in float32, one rounding ----------------------------------------
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _signed(rng, *shape):
    """Values of both signs kept away from the kinks of the piecewise activations (0 and +-3)."""
    return rng.choice([-3.6, -2.4, -1.3, -0.5, 0.4, 1.2, 2.5, 3.7], shape) + rng.uniform(-0.05, 0.05, shape)


defop("leaky_relu", lambda xp, x, *, negative_slope=0.01: xp.where(x > 0, x, x * negative_slope),
      lambda xp, g, ans, x, negative_slope=0.01: xp.where(x > 0, g, g * negative_slope),
      doc="x where x > 0, else x * negative_slope.", method=False,
      example=lambda rng: ((_signed(rng, 3, 4),), {"negative_slope": 0.2}))


def _elu(xp, x, *, alpha=1.0, scale=1.0):
    negcoef = x.dtype.type(alpha) * x.dtype.type(scale)       # PyTorch multiplies the two in float32
    return xp.where(x > 0, x * scale, xp.expm1(xp.minimum(x, 0)) * negcoef)


def _elu_grad(xp, g, ans, x, *, alpha=1.0, scale=1.0):
    negcoef = x.dtype.type(alpha) * x.dtype.type(scale)
    return xp.where(x > 0, g * scale, g * negcoef * xp.exp(xp.minimum(x, 0)))


defop("elu", _elu, _elu_grad, doc="x * scale where x > 0, else alpha * scale * expm1(x) (selu's constants).",
      method=False, example=lambda rng: ((_signed(rng, 3, 4),), {"alpha": 0.7}))
defop("selu", lambda xp, x: _elu(xp, x, alpha=_SELU_ALPHA, scale=_SELU_SCALE),
      lambda xp, g, ans, x: _elu_grad(xp, g, ans, x, alpha=_SELU_ALPHA, scale=_SELU_SCALE),
      doc="elu with the self-normalising alpha and scale.", method=False,
      example=lambda rng: ((_signed(rng, 3, 4),), {}))


def _softplus(xp, x, *, beta=1.0, threshold=20.0):
    z = x * beta
    return xp.where(z > threshold, x, xp.log1p(xp.exp(xp.minimum(z, threshold))) / beta)


def _softplus_grad(xp, g, ans, x, *, beta=1.0, threshold=20.0):
    z = xp.exp(xp.minimum(x * beta, threshold))
    return xp.where(x * beta > threshold, g, g * z / (z + 1))


defop("softplus", _softplus, _softplus_grad,
      doc="log1p(exp(beta * x)) / beta, or x where beta * x > threshold (PyTorch's).", method=False,
      example=lambda rng: ((_signed(rng, 3, 4),), {"beta": 2.0, "threshold": 5.0}))


def _mish_grad(xp, g, ans, x):
    t = xp.tanh(xp.log1p(xp.exp(x)))
    return g * (t + x * (1 / (1 + xp.exp(-x))) * (1 - t * t))


defop("mish", lambda xp, x: x * xp.tanh(xp.log1p(xp.exp(x))), _mish_grad,
      doc="x * tanh(log1p(exp(x))), one rounding.", method=False, example=lambda rng: ((_signed(rng, 3, 4),), {}))
defop("hardswish", lambda xp, x: x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6,
      lambda xp, g, ans, x: xp.where(x < -3, 0.0, xp.where(x <= 3, g * (x / 3 + 0.5), g)),
      doc="x * min(max(x + 3, 0), 6) / 6.", method=False, example=lambda rng: ((_signed(rng, 3, 4),), {}))
defop("hardsigmoid", lambda xp, x: xp.minimum(xp.maximum(x + 3, 0), 6) * (1 / 6),
      lambda xp, g, ans, x: SEAMS.masked(xp, (x > -3) & (x < 3), g * (1 / 6)),
      doc="min(max(x + 3, 0), 6) / 6; no gradient at or beyond +-3 (PyTorch's).", method=False,
      example=lambda rng: ((_signed(rng, 3, 4),), {}))


# -- products and log-sum-exp reductions (float32, one rounding) ---------------------------------------
def _prod_others(xp, x, axis):
    """The product of every other element along `axis` (exclusive cumulative products from both ends), exact
    where x holds zeros, unlike prod / x."""
    xs = xp.moveaxis(x, axis, -1)
    one = xp.ones_like(xs[..., :1])
    left = xp.concatenate([one, xp.cumprod(xs, axis=-1)[..., :-1]], axis=-1)
    right = xp.flip(xp.concatenate([one, xp.cumprod(xp.flip(xs, -1), axis=-1)[..., :-1]], axis=-1), -1)
    return xp.moveaxis(left * right, -1, axis)


def _prod_grad(xp, g, ans, x, axis=None, keepdims=False):
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % max(x.ndim, 1) for a in axes)
    if x.ndim == 0 or not axes:
        return g * xp.ones_like(x)
    ends = tuple(range(x.ndim - len(axes), x.ndim))
    moved = xp.moveaxis(x, axes, ends)          # the reduced axes flattened into one, last
    flat = xp.reshape(moved, moved.shape[:x.ndim - len(axes)] + (-1,))
    others = xp.moveaxis(xp.reshape(_prod_others(xp, flat, -1), moved.shape), ends, axes)
    return _keep(xp, g, x.shape, axis, keepdims) * others


def _logsumexp(xp, x, *, axis=None, keepdims=False):
    m = xp.max(x, axis=axis, keepdims=True) if x.size else xp.zeros((1,) * x.ndim, x.dtype)
    m = xp.where(xp.isinf(m), 0, m)                 # all -inf (or an inf) stays itself rather than NaN
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=axis)


defop("prod", lambda xp, x, *, axis=None, keepdims=False: xp.prod(x, axis=axis, keepdims=keepdims), _prod_grad,
      doc="Product over `axis` (one axis or all), in float32 and rounded once; zeros get their exact gradients.",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))
defop("logsumexp", _logsumexp,
      lambda xp, g, ans, x, axis=None, keepdims=False:
      _keep(xp, g, x.shape, axis, keepdims) * xp.exp(x - _keep(xp, ans, x.shape, axis, keepdims)),
      doc="log(sum(exp(x))) over `axis` (all axes by default), shifted by the max, in float32 and rounded once.",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": (1,)}))


# -- scatter reductions: sums, products, means and extremes into positions of x --------------------------------

_SCATTER_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "amax": -math.inf, "amin": math.inf}


def _scatter_counts(xp, x, index, src, include_self):
    """How many values each position of x reduces (x itself counts where include_self)."""
    count = xp.zeros(x.shape, "float32")
    xp.add.at(count, index, xp.ones(src.shape, "float32"))
    return count + (count > 0) * include_self if include_self else count


def _scatter_reduce(xp, x, src, *, index, reduce, include_self=True):
    out = x.copy()
    if not include_self:
        out[index] = _SCATTER_IDENTITY[reduce]
    ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
    ufunc.at(out, index, src)
    if reduce == "mean":
        count = _scatter_counts(xp, x, index, src, include_self)
        out = xp.where(count > 0, out / xp.maximum(count, 1), out)
    return out


def _scatter_targets(xp, x, index):
    hit = xp.zeros(x.shape, bool)
    hit[index] = True
    return hit


def _scatter_others(xp, ans, x, src, index, include_self):
    """Per src value: the product of everything else its position reduces (prod's gradient, as PyTorch's: the
    result over the value, and the product of the others where the value is zero)."""
    others = ans[index] / xp.where(src == 0, 1, src)
    flat = xp.ravel_multi_index(tuple(xp.broadcast_arrays(*index)), x.shape)
    for k in zip(*xp.nonzero(src == 0)):
        mates = flat == flat[k]
        mates[k] = False
        others[k] = xp.prod(src[mates]) * (x.flat[flat[k]] if include_self else 1)
    return others


def _scatter_extremes(xp, ans, x, src, index, include_self):
    """How many of the values each position reduces equal its result (amax and amin share the gradient)."""
    count = xp.zeros(x.shape, "float32")
    xp.add.at(count, index, (src == ans[index]).astype("float32"))
    return count + (x == ans) if include_self else count


def _scatter_reduce_grad_x(xp, g, ans, x, src, *, index, reduce, include_self=True):
    hit = _scatter_targets(xp, x, index)
    if not include_self:
        return xp.where(hit, 0, g)
    if reduce == "sum":
        return g
    if reduce == "mean":
        return xp.where(hit, g / xp.maximum(_scatter_counts(xp, x, index, src, True), 1), g)
    if reduce == "prod":                # the product of the values reduced into x's position
        rest = xp.ones(x.shape, "float32")
        xp.multiply.at(rest, index, src)
        return xp.where(hit, g * rest, g)
    count = _scatter_extremes(xp, ans, x, src, index, True)
    return xp.where(hit, g * (x == ans) / xp.maximum(count, 1), g)


def _scatter_reduce_grad_src(xp, g, ans, x, src, *, index, reduce, include_self=True):
    if reduce == "sum":
        return g[index]
    if reduce == "mean":
        return (g / xp.maximum(_scatter_counts(xp, x, index, src, include_self), 1))[index]
    if reduce == "prod":
        return g[index] * _scatter_others(xp, ans, x, src, index, include_self)
    count = _scatter_extremes(xp, ans, x, src, index, include_self)
    return g[index] * (src == ans[index]) / xp.maximum(count, 1)[index]


defop("scatter_reduce", _scatter_reduce, _scatter_reduce_grad_x, _scatter_reduce_grad_src,
      doc="x with src's values reduced (sum, prod, mean, amax, amin) into x[index] (NumPy integer arrays that "
          "broadcast to src's shape; repeats reduce together), x's own values taking part where include_self.",
      function=False, method=False,
      example=lambda rng: ((_u(rng, 4, 3), _u(rng, 2, 3)), {"index": ([[0, 2, 2], [2, 2, 0]], [[0, 1, 2], [0, 1, 2]]),
                                                            "reduce": "sum"}))


# -- running products and log-sum-exps ---------------------------------------------------------------------


def _cumprod_grad(xp, g, ans, x, *, axis):
    """sum over j >= i of g_j * (the product up to j without x_i): by division where x has no zeros, else
    position by position (PyTorch's zero-safe formula)."""
    if bool(xp.all(x != 0)):
        return xp.flip(xp.cumsum(xp.flip(g * ans, axis), axis=axis), axis) / x
    xs, gs = xp.moveaxis(x, axis, -1), xp.moveaxis(g, axis, -1)
    out = xp.empty_like(xs)
    for i in range(xs.shape[-1]):
        without = xs.copy()
        without[..., i] = 1
        out[..., i] = xp.sum((gs * xp.cumprod(without, axis=-1))[..., i:], axis=-1)
    return xp.moveaxis(out, -1, axis)


defop("cumprod", lambda xp, x, *, axis: xp.cumprod(x, axis=axis), _cumprod_grad,
      doc="Running products along `axis`, each in float32 and rounded once.",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))


def _logcumsumexp_grad(xp, g, ans, x, *, axis):
    """sum over j >= i of g_j * exp(x_i - ans_j): the positive and negative cotangents summed apart in log space
    (PyTorch's formula), in float64: in float32 exp(log-sum + x_i) loses x_i's ulp where x_i is large."""
    g, ans, x = (a.astype("float64") for a in (g, ans, x))
    log_abs = xp.log(xp.where(g != 0, xp.abs(g), 1))
    def later_sum(v):                   # log of the sums over j >= i: a reversed running logaddexp
        return xp.flip(xp.logaddexp.accumulate(xp.flip(v, axis), axis=axis), axis)
    pos = later_sum(xp.where(g > 0, log_abs, -math.inf) - ans)
    neg = later_sum(xp.where(g < 0, log_abs, -math.inf) - ans)
    return xp.exp(pos + x) - xp.exp(neg + x)


defop("logcumsumexp", lambda xp, x, *, axis: xp.logaddexp.accumulate(x, axis=axis), _logcumsumexp_grad,
      doc="Running log(sum(exp(x))) along `axis`, in float32 and rounded once.",
      example=lambda rng: ((_u(rng, 3, 4),), {"axis": 1}))
# -- more elementwise math (PyTorch's ELEMENTWISE family): computed in float32, one rounding --------------------


def _unit(rng, *shape):
    """Values inside (-1, 1) kept off the ends, for asin, acos, atanh."""
    return rng.uniform(-0.9, 0.9, shape)


for _name, _fwd, _grad, _doc, _ex in (
        ("acos", "arccos", lambda xp, g, ans, x: -g / xp.sqrt(1 - x * x), "arc cosine", _unit),
        ("asin", "arcsin", lambda xp, g, ans, x: g / xp.sqrt(1 - x * x), "arc sine", _unit),
        ("atan", "arctan", lambda xp, g, ans, x: g / (1 + x * x), "arc tangent", None),
        ("acosh", "arccosh", lambda xp, g, ans, x: g / xp.sqrt((x - 1) * (x + 1)), "inverse hyperbolic cosine",
         lambda rng, *s: rng.uniform(1.2, 3.0, s)),
        ("asinh", "arcsinh", lambda xp, g, ans, x: g / xp.sqrt(x * x + 1), "inverse hyperbolic sine", None),
        ("atanh", "arctanh", lambda xp, g, ans, x: g / (1 - x * x), "inverse hyperbolic tangent", _unit),
        ("sinh", "sinh", lambda xp, g, ans, x: g * xp.cosh(x), "hyperbolic sine", None),
        ("cosh", "cosh", lambda xp, g, ans, x: g * xp.sinh(x), "hyperbolic cosine", None),
        ("tan", "tan", lambda xp, g, ans, x: g * (1 + ans * ans), "tangent", None),
        ("log2", "log2", lambda xp, g, ans, x: g / (x * math.log(2)), "base-2 logarithm", None),
        ("log10", "log10", lambda xp, g, ans, x: g / (x * math.log(10)), "base-10 logarithm", None),
        ("exp2", "exp2", lambda xp, g, ans, x: g * ans * math.log(2), "2 ** x", None)):
    defop(_name, (lambda f: lambda xp, x: getattr(xp, f)(x))(_fwd), _grad, doc=f"Elementwise {_doc}.",
          example=None if _ex is None else (lambda ex: lambda rng: ((ex(rng, 3, 4),), {}))(_ex))


def _logaddexp_grads(base):
    """The gradients of log(base**x + base**y): each input's share, base**(x - ans)."""
    e = (lambda xp, v: xp.exp(v)) if base == "e" else (lambda xp, v: xp.exp2(v))
    return (lambda xp, g, ans, x, y: g * e(xp, x - ans), lambda xp, g, ans, x, y: g * e(xp, y - ans))


def _xlogy(xp, x, y):
    # 0 where x is 0 (PyTorch's rule), unless y is NaN
    return xp.where((x == 0) & ~xp.isnan(y), 0, x * xp.log(y))


defop("atan2", lambda xp, x, y: xp.arctan2(x, y), lambda xp, g, ans, x, y: g * y / (x * x + y * y),
      lambda xp, g, ans, x, y: -g * x / (x * x + y * y), doc="Elementwise angle of the point (y, x): atan(x / y) "
      "in the right quadrant.")
defop("hypot", lambda xp, x, y: xp.hypot(x, y), lambda xp, g, ans, x, y: g * x / ans,
      lambda xp, g, ans, x, y: g * y / ans, doc="Elementwise sqrt(x**2 + y**2), without overflow on the way.")
defop("logaddexp", lambda xp, x, y: xp.logaddexp(x, y), *_logaddexp_grads("e"),
      doc="Elementwise log(exp(x) + exp(y)), without overflow on the way.")
defop("logaddexp2", lambda xp, x, y: xp.logaddexp2(x, y), *_logaddexp_grads(2),
      doc="Elementwise log2(2**x + 2**y), without overflow on the way.")
defop("copysign", lambda xp, x, y: xp.copysign(x, y),
      lambda xp, g, ans, x, y: xp.where(x == 0, 0, g * xp.sign(x) * xp.where(xp.signbit(y), -1, 1)),
      lambda xp, g, ans, x, y: xp.zeros_like(g), doc="Elementwise |x| with the sign of y.")
defop("fmod", lambda xp, x, y: xp.fmod(x, y), lambda xp, g, ans, x, y: g,
      lambda xp, g, ans, x, y: -g * xp.trunc(x / y), doc="Elementwise remainder of x / y truncated (C's fmod): "
      "the sign of x.")
defop("remainder", lambda xp, x, y: xp.remainder(x, y), lambda xp, g, ans, x, y: g,
      lambda xp, g, ans, x, y: -g * xp.floor(x / y), doc="Elementwise remainder of x / y floored (Python's %): "
      "the sign of y.")
defop("xlogy", _xlogy, lambda xp, g, ans, x, y: g * xp.where((x == 0) & ~xp.isnan(y), 0, xp.log(y)),
      lambda xp, g, ans, x, y: g * x / y, doc="Elementwise x * log(y), 0 where x is 0.")
defop("div_floor", lambda xp, x, y: xp.floor_divide(x, y), lambda xp, g, ans, x, y: xp.zeros_like(g),
      lambda xp, g, ans, x, y: xp.zeros_like(g), doc="Elementwise x / y rounded down (Python's //); no gradient.",
      saves=False)


def _round_decimals(xp, x, *, decimals=0):
    # PyTorch's: nearbyint(x * 10**d) / 10**d (or x / 10**-d, then times it), the power a float32
    p = x.dtype.type(10.0 ** abs(decimals))
    return xp.rint(x * p) / p if decimals >= 0 else xp.rint(x / p) * p


defop("round_decimals", _round_decimals, lambda xp, g, ans, x, **params: xp.zeros_like(g),
      doc="Elementwise x rounded to `decimals` decimal places, halves to even; no gradient.", saves=False,
      example=lambda rng: ((_u(rng, 3, 4),), {"decimals": 2}))


def _logit(xp, x, *, eps=None):
    z = x if eps is None else xp.clip(x, eps, 1 - eps)
    return xp.log(z / (1 - z))


def _logit_grad(xp, g, ans, x, *, eps=None):
    inside = 1 if eps is None else (x >= eps) & (x <= 1 - eps)
    return xp.where(inside, g / (x * (1 - x)), 0)


defop("logit", _logit, _logit_grad, doc="Elementwise log(x / (1 - x)), x clamped to [eps, 1 - eps] where eps "
      "is given (no gradient outside).", example=lambda rng: ((rng.uniform(0.1, 0.9, (3, 4)),), {"eps": 0.2}))


def _lerp(xp, x, y, w):
    # PyTorch's two-sided form, each side one FMA: exact at both ends
    d = y - x
    return xp.where(xp.abs(w) < 0.5, SEAMS.fma(xp, w, d, x), SEAMS.fma(xp, -d, 1 - w, y))


defop("lerp", _lerp, lambda xp, g, ans, x, y, w: g * (1 - w), lambda xp, g, ans, x, y, w: g * w,
      lambda xp, g, ans, x, y, w: g * (y - x), doc="Elementwise x + w * (y - x), exact at w = 0 and w = 1.",
      example=lambda rng: ((_u(rng, 3, 4), _u(rng, 4), rng.uniform(0, 1, (3, 4))), {}))
defop("addcmul", lambda xp, x, a, b, *, value=1.0: SEAMS.fma(xp, value * a, b, x), lambda xp, g, ans, x, a, b, value=1.0: g,
      lambda xp, g, ans, x, a, b, value=1.0: g * value * b, lambda xp, g, ans, x, a, b, value=1.0: g * value * a,
      doc="Elementwise x + value * a * b: value * a, then one FMA (PyTorch's kernels).",
      example=lambda rng: ((_u(rng, 3, 4), _u(rng, 4), _u(rng, 3, 1)), {"value": 0.5}))
defop("addcdiv", lambda xp, x, a, b, *, value=1.0: x + value * a / b, lambda xp, g, ans, x, a, b, value=1.0: g,
      lambda xp, g, ans, x, a, b, value=1.0: g * value / b,
      lambda xp, g, ans, x, a, b, value=1.0: -g * value * a / (b * b),
      doc="Elementwise x + value * a / b, one rounding.",
      example=lambda rng: ((_u(rng, 3, 4), _u(rng, 4), _u(rng, 3, 1)), {"value": 0.5}))


def _erf(xp, x):
    """erf in float64: its Taylor series near 0 (where 1 - erfc would cancel), 1 - erfc beyond."""
    z = x.astype("float64")
    z2 = z * z
    series = z * (1 + z2 * (-1 / 3 + z2 * (1 / 10 + z2 * (-1 / 42 + z2 * (1 / 216 + z2 * (-1 / 1320 + z2 / 9360))))))
    near = series * (2 / math.sqrt(math.pi))
    return xp.where(xp.abs(z) < 0.5, near, xp.sign(z) * (1 - _erfc(xp, xp.abs(z)))).astype(x.dtype)


def _erfinv(xp, y):
    """erfinv in float64: Giles's single-precision approximation, then two Newton steps on erf."""
    v = y.astype("float64")
    w = -xp.log((1 - v) * (1 + v))
    small = w - 2.5
    big = xp.sqrt(xp.maximum(w, 5)) - 3
    p_small = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p_small = c + p_small * small
    p_big = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p_big = c + p_big * big
    x = xp.where(w < 5, p_small, p_big) * v
    for _ in range(2):
        x = x - (_erf(xp, x) - v) / (2 / math.sqrt(math.pi) * xp.exp(-x * x))
    x = xp.where(xp.abs(v) == 1, xp.copysign(xp.inf, v), x)
    return xp.where(xp.abs(v) > 1, xp.nan, x).astype(y.dtype)


defop("erf", _erf, lambda xp, g, ans, x: g * (2 / math.sqrt(math.pi)) * xp.exp(-x * x),
      doc="Elementwise error function, one rounding.")
defop("erfc", lambda xp, x: _erfc(xp, x.astype("float64")).astype(x.dtype),
      lambda xp, g, ans, x: -g * (2 / math.sqrt(math.pi)) * xp.exp(-x * x),
      doc="Elementwise 1 - erf(x), accurate where erf(x) is near 1.")
defop("erfinv", _erfinv, lambda xp, g, ans, x: g * (math.sqrt(math.pi) / 2) * xp.exp(ans * ans),
      doc="Elementwise inverse of erf on (-1, 1); +-inf at +-1, NaN beyond.",
      example=lambda rng: ((rng.uniform(-0.9, 0.9, (3, 4)),), {}))


def _sinc(xp, x):
    # PyTorch's kernel: sin(pi * x) / (pi * x) with the product in the compute precision, 1 at 0
    y = x * x.dtype.type(math.pi)
    return xp.where(x == 0, 1, xp.sin(y) / xp.where(x == 0, 1, y))


def _sinc_grad(xp, g, ans, x):
    y = x * math.pi
    safe = xp.where(x == 0, 1, y)
    return xp.where(x == 0, 0, g * (xp.cos(y) * y - xp.sin(y)) / (safe * xp.where(x == 0, 1, x)))


defop("sinc", _sinc, _sinc_grad, doc="Elementwise sin(pi * x) / (pi * x), 1 at 0.")
# -- issue 32's nn.functional breadth: activations and losses that are one kernel in PyTorch (one rounding) -------


def _log_sigmoid_fwd(xp, x):
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


defop("log_sigmoid", _log_sigmoid_fwd, lambda xp, g, ans, x: g / (1 + xp.exp(x)),
      doc="log(sigmoid(x)) as min(x, 0) - log1p(exp(-|x|)), one rounding.", method=False, function=False,
      example=lambda rng: ((_signed(rng, 3, 4),), {}))


def _celu(xp, x, *, alpha=1.0):
    # PyTorch runs celu as elu with input scale 1 / alpha (a float32 reciprocal)
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0) * x.dtype.type(1 / alpha)) * alpha)


defop("celu", _celu,
      lambda xp, g, ans, x, alpha=1.0: xp.where(x > 0, g, g * xp.exp(xp.minimum(x, 0) * x.dtype.type(1 / alpha))),
      doc="x where x > 0, else alpha * expm1(x / alpha), one rounding.", method=False, function=False,
      example=lambda rng: ((_signed(rng, 3, 4),), {"alpha": 0.7}))


def _huber(xp, x, y, *, delta=1.0, reduction="mean"):
    z = xp.abs(x - y)
    return _reduce(xp, xp.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), reduction)


def _huber_grad(xp, g, ans, x, y, *, delta=1.0, reduction="mean"):
    d = x - y
    return xp.clip(d, -delta, delta) * _unreduce(xp, g, d.shape, reduction)


def _smooth_l1(xp, x, y, *, beta=1.0, reduction="mean"):
    z = xp.abs(x - y)
    return _reduce(xp, xp.where(z < beta, 0.5 * z * z / (beta or 1), z - 0.5 * beta), reduction)


def _smooth_l1_grad(xp, g, ans, x, y, *, beta=1.0, reduction="mean"):
    d = x - y
    slope = xp.clip(d / beta, -1, 1) if beta else xp.sign(d)     # beta 0: PyTorch's l1_loss
    return slope * _unreduce(xp, g, d.shape, reduction)


defop("huber_loss", _huber, _huber_grad, lambda xp, g, ans, x, y, **params: -_huber_grad(xp, g, ans, x, y, **params),
      doc="0.5 * (x - y)**2 where |x - y| < delta, else delta * (|x - y| - delta / 2), reduced in float32.",
      method=False, function=False,
      example=lambda rng: ((_u(rng, 3, 4) * 3, _u(rng, 3, 4)), {"delta": 0.5, "reduction": "sum"}))
defop("smooth_l1_loss", _smooth_l1, _smooth_l1_grad,
      lambda xp, g, ans, x, y, **params: -_smooth_l1_grad(xp, g, ans, x, y, **params),
      doc="0.5 * (x - y)**2 / beta where |x - y| < beta, else |x - y| - beta / 2, reduced in float32.",
      method=False, function=False,
      example=lambda rng: ((_u(rng, 3, 4) * 3, _u(rng, 3, 4)), {"beta": 0.5}))


def _multi_margin_parts(xp, x, target, p, margin, weight):
    """(each class's hinge max(0, margin - x[y] + x[j]) with j != y, the class weight of each sample's y)."""
    t = xp.asarray(target)
    z = margin - xp.take_along_axis(x, t[:, None], axis=1) + x
    h = xp.where((xp.arange(x.shape[1]) != t[:, None]) & (z > 0), z, 0)
    w = 1 if weight is None else xp.asarray(weight).astype(x.dtype)[t][:, None]
    return h, w


def _multi_margin(xp, x, *, target, p=1, margin=1.0, weight=None, reduction="mean"):
    h, w = _multi_margin_parts(xp, x, target, p, margin, weight)
    return _reduce(xp, xp.sum((h if p == 1 else h * h) * w, axis=1) / x.shape[1], reduction)


def _multi_margin_grad(xp, g, ans, x, *, target, p=1, margin=1.0, weight=None, reduction="mean"):
    h, w = _multi_margin_parts(xp, x, target, p, margin, weight)
    d = (xp.where(h > 0, 1, 0) if p == 1 else 2 * h) * w / x.shape[1]
    d = d * _unreduce(xp, g, (x.shape[0],), reduction)[:, None]
    picked = xp.arange(x.shape[1]) == xp.asarray(target)[:, None]
    return xp.where(picked, -xp.sum(d, axis=1, keepdims=True), d)


defop("multi_margin_loss", _multi_margin, _multi_margin_grad,
      doc="sum over classes j != y of max(0, margin - x[y] + x[j]) ** p, times weight[y], over C; reduced in "
          "float32.", method=False, function=False,
      example=lambda rng: ((_u(rng, 4, 5),), {"target": rng.integers(0, 5, 4), "p": 2, "margin": 0.7,
                                              "weight": rng.uniform(0.5, 2, 5)}))


def _multilabel_parts(xp, x, target):
    """(how often each class is listed before the first -1, whether it is listed) per sample."""
    t = xp.asarray(target)
    listed = xp.cumprod(t >= 0, axis=1).astype(bool)
    hits = (t[:, :, None] == xp.arange(x.shape[1])) & listed[:, :, None]
    count = xp.sum(hits, axis=1).astype(x.dtype)
    return count, count > 0


def _multilabel_hinge(xp, x, target):
    count, is_target = _multilabel_parts(xp, x, target)
    z = 1 - x[:, :, None] + x[:, None, :]            # [n, j (a target), i (a non-target)]
    keep = count[:, :, None] * ~is_target[:, None, :]
    return z, keep


def _multilabel_margin(xp, x, *, target, reduction="mean"):
    z, keep = _multilabel_hinge(xp, x, target)
    return _reduce(xp, xp.sum(xp.maximum(z, 0) * keep, axis=(1, 2)) / x.shape[1], reduction)


def _multilabel_margin_grad(xp, g, ans, x, *, target, reduction="mean"):
    z, keep = _multilabel_hinge(xp, x, target)
    m = xp.where(z > 0, keep, 0) / x.shape[1] * _unreduce(xp, g, (x.shape[0],), reduction)[:, None, None]
    return xp.sum(m, axis=1) - xp.sum(m, axis=2)


defop("multilabel_margin_loss", _multilabel_margin, _multilabel_margin_grad,
      doc="sum over listed targets j (up to the first -1) and unlisted classes i of max(0, 1 - (x[j] - x[i])), "
          "over C; reduced in float32.", method=False, function=False,
      example=lambda rng: ((_u(rng, 3, 4) * 2,), {"target": _multilabel_targets(rng)}))



def _multilabel_targets(rng):
    """Multilabel targets: 2, 1 and 3 listed classes, then -1."""
    t = rng.permutation(4)[None].repeat(3, 0)
    t[0, 2:], t[1, 1:], t[2, 3:] = -1, -1, -1
    return t


def _logaddexp_all(xp, *terms):
    """log(sum(exp(terms))) elementwise, -inf where every term is -inf."""
    top = terms[0]
    for v in terms[1:]:
        top = xp.maximum(top, v)
    safe = xp.where(xp.isfinite(top), top, 0)
    return xp.log(sum(xp.exp(v - safe) for v in terms)) + safe


def _ctc_tables(xp, lp, targets, input_lengths, target_lengths, blank):
    """(alpha, beta, the extended labels, each sample's -log-likelihood) of the CTC recursions in log space:
    lp (T, N, C); targets (N, Lmax) padded; alpha and beta (T, N, 2 * Lmax + 1)."""
    t_max, n, _ = lp.shape
    s_max = 2 * targets.shape[1] + 1
    ext = xp.full((n, s_max), blank, dtype=targets.dtype)
    ext[:, 1::2] = targets
    s_len = 2 * xp.asarray(target_lengths) + 1
    valid = xp.arange(s_max)[None, :] < s_len[:, None]
    skip = xp.zeros((n, s_max), bool)             # s may come from s - 2: a label differing from the one before
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    emit = xp.take_along_axis(lp, xp.broadcast_to(ext[None], (t_max, n, s_max)), axis=2)     # (T, N, S)
    ninf = xp.full((n, s_max), -xp.inf, lp.dtype)
    alpha = xp.full((t_max, n, s_max), -xp.inf, lp.dtype)
    alpha[0, :, :2] = xp.where(valid[:, :2], emit[0, :, :2], -xp.inf)
    for t in range(1, t_max):
        a = alpha[t - 1]
        prev1 = xp.concatenate([ninf[:, :1], a[:, :-1]], axis=1)
        prev2 = xp.where(skip, xp.concatenate([ninf[:, :2], a[:, :-2]], axis=1), -xp.inf)
        alpha[t] = xp.where(valid, _logaddexp_all(xp, a, prev1, prev2) + emit[t], -xp.inf)
    beta = xp.full((t_max, n, s_max), -xp.inf, lp.dtype)
    rows, last = xp.arange(n), xp.asarray(input_lengths) - 1
    for k in (1, 2):                               # the last blank and the last label end a path
        s = s_len - k
        ok = s >= 0
        beta[last[ok], rows[ok], s[ok]] = emit[last[ok], rows[ok], s[ok]]
    skip_next = xp.concatenate([skip[:, 2:], xp.zeros((n, 2), bool)], axis=1)
    for t in range(t_max - 2, -1, -1):
        b = beta[t + 1]
        next1 = xp.concatenate([b[:, 1:], ninf[:, :1]], axis=1)
        next2 = xp.where(skip_next, xp.concatenate([b[:, 2:], ninf[:, :2]], axis=1), -xp.inf)
        step = xp.where(valid, _logaddexp_all(xp, b, next1, next2) + emit[t], -xp.inf)
        beta[t] = xp.where((t < last)[:, None], step, beta[t])
    end = alpha[last, rows]                        # (N, S) at each sample's last step
    tail = xp.where(s_len[:, None] - 2 <= xp.arange(s_max)[None, :], end, -xp.inf)
    nll = -_logaddexp_all(xp, *[tail[:, s] for s in range(s_max)])
    return alpha, beta, ext, nll


def _ctc_scale(xp, nll, target_lengths, reduction, zero_infinity):
    """Each sample's loss and its weight in the reduced loss."""
    loss = xp.where(xp.isinf(nll), 0, nll) if zero_infinity else nll
    if reduction == "mean":
        return loss, 1 / (xp.maximum(xp.asarray(target_lengths), 1) * nll.shape[0])
    return loss, 1


def _ctc_loss(xp, log_probs, *, targets, input_lengths, target_lengths, blank=0, reduction="mean",
              zero_infinity=False):
    nll = _ctc_tables(xp, log_probs, targets, input_lengths, target_lengths, blank)[3]
    loss, w = _ctc_scale(xp, nll, target_lengths, reduction, zero_infinity)
    return loss if reduction == "none" else xp.sum(loss * w)


def _logsumexp_axis(xp, v, axis):
    top = xp.max(v, axis=axis, keepdims=True)
    safe = xp.where(xp.isfinite(top), top, 0)
    return xp.squeeze(xp.log(xp.sum(xp.exp(v - safe), axis=axis, keepdims=True)) + safe, axis=axis)


def _ctc_loss_grad(xp, g, ans, log_probs, *, targets, input_lengths, target_lengths, blank=0, reduction="mean",
                   zero_infinity=False):
    """-exp(log(sum of alpha * beta over the positions of each class) + nll - lp): the derivative itself. (PyTorch's
    kernel adds exp(lp), which the log_softmax before it cancels: parameters get the same gradients.) 0 past each
    sample's input length, and for an infinite loss under zero_infinity."""
    alpha, beta, ext, nll = _ctc_tables(xp, log_probs, targets, input_lengths, target_lengths, blank)
    t_max, n, c = log_probs.shape
    ab = alpha + beta                              # (T, N, S)
    lcab = xp.stack([_logsumexp_axis(xp, xp.where((ext == k)[None], ab, -xp.inf), 2) for k in range(c)], axis=2)
    _, w = _ctc_scale(xp, nll, target_lengths, reduction, zero_infinity)
    gr = (g if reduction == "none" else g * xp.ones(n, log_probs.dtype)) * w
    ok = xp.isfinite(nll) if zero_infinity else xp.ones(n, bool)
    grad = -xp.exp(lcab + nll[None, :, None] - log_probs) * gr[None, :, None]
    live = (xp.arange(t_max)[:, None] < xp.asarray(input_lengths)[None, :]) & ok[None, :]
    return xp.where(live[:, :, None], grad, 0)


def _ctc_example(rng):
    return (rng.uniform(-3, 0, (4, 2, 3)),), {"targets": rng.integers(1, 3, (2, 2)), "input_lengths": [4, 3],
                                              "target_lengths": [2, 1], "reduction": "mean"}


defop("ctc_loss", _ctc_loss, _ctc_loss_grad,
      doc="Connectionist temporal classification: -log of the summed probability of every alignment of each "
          "target, log_probs (T, N, C), reduced as PyTorch does; the gradient is the derivative (PyTorch adds "
          "exp(log_probs), which its log_softmax cancels).", method=False, function=False,
      example=_ctc_example)


# -- fused attention: exact on the ideal device (one rounding), a device's own kernel elsewhere (_compute.Flash) ----
def _attention_probs(xp, q, k, causal, scale):
    """softmax(q k^T * scale) in float64, -inf above the diagonal (top-left aligned) when causal."""
    s = xp.matmul(q.astype("float64"), xp.swapaxes(k.astype("float64"), -1, -2))
    s = s * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        s = xp.where(xp.tril(xp.ones(s.shape[-2:], bool)), s, -xp.inf)
    e = xp.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _attention(xp, q, k, v, *, causal=False, scale=None):
    return xp.matmul(_attention_probs(xp, q, k, causal, scale), v.astype("float64")).astype(q.dtype)


def _attention_grad(i):
    def grad(xp, g, ans, q, k, v, *, causal=False, scale=None):
        p = _attention_probs(xp, q, k, causal, scale)
        g = g.astype("float64")
        if i == 2:
            return xp.matmul(xp.swapaxes(p, -1, -2), g).astype(v.dtype)
        dp = xp.matmul(g, xp.swapaxes(v.astype("float64"), -1, -2))
        ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
        if i == 0:
            return xp.matmul(ds, k.astype("float64")).astype(q.dtype)
        return xp.matmul(xp.swapaxes(ds, -1, -2), q.astype("float64")).astype(k.dtype)
    return grad


defop("attention", _attention, _attention_grad(0), _attention_grad(1), _attention_grad(2),
      doc="softmax(q k^T * scale) v as one fused kernel (scale: 1/sqrt(head dim) by default; causal: each query "
          "sees the keys up to its own position): exact, rounded once, where the device runs no kernel of its own "
          "(the H100's: cuDNN's flash attention, minifp._flash).", kernel="attention", method=False,
      example=lambda rng: ((_u(rng, 2, 3, 4), _u(rng, 2, 5, 4), _u(rng, 2, 5, 3)), {"causal": False}))


# -- vector norms -----------------------------------------------------------------


def _vector_norm(xp, x, *, ord=2, axis=None, keepdims=False):
    a = xp.abs(x)
    if ord == math.inf:
        return xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:        # the count of nonzeros (NaN counts, as PyTorch's a != 0)
        return xp.sum((a != 0).astype(a.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keepdims))
    return xp.sum(a ** ord, axis=axis, keepdims=keepdims) ** (1 / ord)


def _vector_norm_grad(xp, g, ans, x, ord=2, axis=None, keepdims=False):
    """PyTorch's norm_backward (FunctionsManual.cpp), each tensor it stores marked with _stage."""
    g, norm = _keep(xp, g, x.shape, axis, keepdims), _keep(xp, ans, x.shape, axis, keepdims)
    if ord == 0:
        return xp.zeros_like(x)
    if ord == 1:
        return xp.sign(x) * g
    if ord == 2:        # grad * (x / norm).masked_fill_(norm == 0, 0)
        return g * xp.where(norm == 0, 0, _stage(xp, x / norm))
    if ord in (math.inf, -math.inf):       # sgn * ((grad / count of the extremes) * mask)
        a = xp.abs(x)
        hit = (a == norm) | xp.isnan(a)
        share = _stage(xp, g / xp.sum(hit, axis=axis, keepdims=True).astype(g.dtype))
        return xp.sign(x) * (share * hit.astype(g.dtype))     # a product, not a where: the zeros' signs are its
    a = xp.abs(x)
    if ord < 1:         # sgn * |x|**(p - 1) (0 where x is), times grad, times norm**(1 - p)
        scaled = xp.sign(x) * xp.where(x == 0, 0, _stage(xp, a ** (ord - 1)))
        return _stage(xp, scaled * g) * _stage(xp, norm ** (1 - ord))
    if ord < 2:
        scaled = xp.sign(x) * _stage(xp, a ** (ord - 1))
    else:
        scaled = _stage(xp, x * _stage(xp, a ** (ord - 2)))
    scale = xp.where(norm == 0, 0, _stage(xp, g / _stage(xp, norm ** (ord - 1))))
    return scaled * scale


defop("vector_norm", _vector_norm, _vector_norm_grad,
      doc="The `ord`-norm over `axis` (all axes by default): |x|**ord summed in float32, its root rounded once "
          "(ord inf / -inf: the largest / smallest |x|; 0: the count of nonzeros).", method=False,
      accumulates=True, staged="device", example=lambda rng: ((_u(rng, 3, 4),), {"ord": 3, "axis": 1}))

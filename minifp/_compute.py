"""How an op computes: the namespace its body receives and what it makes of the op's factors.

One function, `route`, decides it for the forward (from the thread's state) and for the backward (from the node
the forward recorded), so that a gradient computes as its forward did:

- numpy or cupy, from the arrays themselves;
- minifp.accumulate: matmul, linear, conv2d, sum and mean sum in a chosen format or as a tensor-core model does
  (an `Accumulating` namespace instead of BLAS's sums);
- a real GPU's tensor cores: float16 and bfloat16 products as cuBLAS GEMMs that read the tensors' own storage;
- TF32: float32 products whose device rounds their factors to tf32 first (torch.backends' switches);
- fp8_autocast: GEMMs on fp8 factors with per-tensor scales (minifp/_fp8.py);
- staged ops: PyTorch computes them in steps, each rounded into the output's format (the namespace's `stage`).
"""
from __future__ import annotations

import importlib
import numbers

import numpy as np

from . import _fp8
from ._accumulate import accumulating
from ._cudascan import cuda_scan
from ._devices import DEVICES, IDEAL, INPUT_FORMAT, STAGES, numerics
from ._formats import bfloat16, float16, float32, promote
from ._rounding import round_to, widen
from ._seams import SEAMS, seam
from ._state import FLOAT32_PRODUCTS, STATE
from ._tensor import Tensor, values

__all__ = ["route", "ON_NUMPY", "wide", "in_format", "round_counted", "unbroadcast", "quiet", "owned"]

_F32 = np.dtype(np.float32)


@seam
def quiet():
    """A block in which NumPy's floating-point warnings are off: overflow to inf and 0/0 are what the engine
    emulates, not accidents (every op and the backward sweep run in one)."""
    return np.errstate(all="ignore")


def wide(a, dtype=np.float32):
    """What an op body sees of an input: values in `dtype`; bool masks stay bool; Python numbers become dtype
    scalars; anything else (None, arrays of indices) as it is."""
    if isinstance(a, Tensor):
        if a.fmt is None:
            data = a._data
            return data if data.dtype == bool else data.astype(dtype)
        if dtype is np.float32:
            if a._data.dtype is _F32:   # float32 storage holds the values themselves
                return a._data
            kept = a._float32           # the values kept beside the storage (the speed module keeps them)
            return kept if kept is not None else SEAMS.values(a)
        return values(a).astype(dtype)
    if type(a) is float or type(a) is int or isinstance(a, numbers.Real) and not isinstance(a, bool):
        return dtype(a)
    return a


def round_counted(x, fmt, op_name, layer, direction):
    """x rounded into fmt's storage, counted for the thread's watching monitors (the monitor sees every rounding)."""
    tally = np.zeros(4, np.int64)
    out = SEAMS.rounded(x, fmt, tally)
    for m in STATE.monitors:
        m.record(layer, op_name, direction, tally, x.size)
    return out


# The size from which a body's result is checked for `owned` (below it, its rounding runs in cache and the check
# would cost about what writing in place saves).
OWNED_MIN = 1 << 14


def owned(x, compute, arrays, params):
    """Whether x, the NumPy result of an op body that `compute` gave `arrays` and `params`, is the body's own: of
    OWNED_MIN elements at least, made by the plain compute (ON_NUMPY, or a staged op's namespace over NumPy, which
    holds only the sums its gradients share) and sharing memory with none of those (not one of them, nor a view of
    one). Op bodies keep nothing, so no one else holds it: rounding may write into it."""
    if type(x) is not np.ndarray or x.size < OWNED_MIN:
        return False
    if compute is not ON_NUMPY:
        xp = compute.xp
        if type(compute) is not Compute or type(xp) is not Staged or xp._xp is not np:
            return False
        arrays = (*arrays, *[a for v in xp.shared.values() for a in (v if isinstance(v, tuple) else (v,))])
    for a in (*arrays, *params.values()):
        if type(a) is np.ndarray and np.may_share_memory(x, a):
            return False
    return True


def in_format(g, fmt, node, inplace=False):
    """Gradient values g rounded into fmt, kept in g's dtype (the gradient a framework holds as a tensor of fmt);
    inplace: the speed module may write them into g (an intermediate no one else holds)."""
    if fmt.is_float32 and g.dtype == np.float32:
        return g
    if STATE.monitors and node is not None:
        data = round_counted(g, fmt, node.op.name, node.layer, "backward")
    else:
        data, values = SEAMS.round_gradient(g, fmt, inplace=inplace)     # the speed module rounds to float32 values in one pass
        if values is not None:
            return values if g.dtype == np.float32 else values.astype(g.dtype)
    w = widen(data, fmt)
    return w if g.dtype == np.float32 else w.astype(g.dtype)


class Compute:
    """Array math on `xp`: the forward and the gradients as the registry's op defines them."""

    __slots__ = ("xp",)
    saved = None        # what the backward needs besides the node (fp8's factors)

    def __init__(self, xp):
        self.xp = xp

    operand = staticmethod(wide)        # what the body sees of an input

    def forward(self, op, args, params):
        return op.forward(self.xp, *args, **params)

    def gradient(self, op, i, g, ans, args, params):
        """The gradient of input i (one that requires it), in its broadcast shape."""
        return (op.grad(i) if op.variadic else op.grads[i])(self.xp, g, ans, *args, **params)


ON_NUMPY = Compute(np)


class Tf32(Compute):
    """A float32 product whose device rounds its two factors to tf32 first (and, backward, the output gradient: the
    gradient products run on the same cores); a bias after them is added in float32. passes: whether the forward
    and the gradients of the two factors do so (a convolution's kernels choose per pass)."""

    __slots__ = ("fmt_in", "factors", "passes")

    def __init__(self, xp, fmt_in, passes=(True, True, True)):
        super().__init__(xp)
        self.fmt_in, self.factors, self.passes = fmt_in, None, passes

    def _rounded(self, arrays, n):
        return [widen(round_to(a, self.fmt_in), self.fmt_in) if i < n else a for i, a in enumerate(arrays)]

    def forward(self, op, args, params):
        if not self.passes[0]:
            return super().forward(op, args, params)
        return op.forward(self.xp, *self._rounded(args, 2), **params)

    def gradient(self, op, i, g, ans, args, params):
        if i >= 2 or not self.passes[1 + i]:       # a bias (no product), or a pass in full float32
            return super().gradient(op, i, g, ans, args, params)
        if self.factors is None:    # rounded once for both factors' gradients
            self.factors = self._rounded([g, *args], 3)
        g_in, *args_in = self.factors
        return super().gradient(op, i, g_in, ans, args_in, params)


class TensorCores(Compute):
    """A GPU's tensor cores: the product reads a tensor of the cores' format in its own storage."""

    __slots__ = ()

    def operand(self, a, dtype):
        return self.xp.operand(a, wide)


class Fp8(Compute):
    """A GEMM under fp8_autocast: forward from the recipe (`state`), backward from the forward's saved factors."""

    __slots__ = ("state", "node", "saved", "grads")

    def __init__(self, xp, state, node):
        super().__init__(xp)
        self.state, self.node, self.saved, self.grads = state, node, None, None

    def forward(self, op, args, params):
        recipe, tensors = self.state
        ans, self.saved = _fp8.forward(op, self.xp, args, recipe, tensors, params)
        return ans

    def gradient(self, op, i, g, ans, args, params):
        """The fp8 GEMM's gradient of input i, summed to its shape in float32 (before any rounding, as TE's); the
        first call computes every input's (the GEMMs run once per pass)."""
        inputs = self.node.inputs
        if self.grads is None:
            wanted = [isinstance(a, Tensor) and a.requires_grad for a in inputs]
            self.grads = _fp8.backward(self.node, self.xp, g, ans, args, wanted)
        return unbroadcast(self.xp, self.xp.asarray(self.grads[i], g.dtype), inputs[i]._data.shape)


class Flash(Compute):
    """The fused attention op as the H100 runs it (cuDNN's flash attention, minifp._flash): the forward keeps the
    row statistics for the backward (Node.saved), which computes the three gradients once, on the first call."""

    __slots__ = ("dtype", "node", "saved", "grads")

    def __init__(self, fmt, node):
        super().__init__(np)
        self.dtype, self.node, self.saved, self.grads = fmt.storage, node, None, None

    def forward(self, op, args, params):
        from ._flash import flash_forward
        q, k, v = (a.astype(self.dtype) for a in args)      # half values: exact
        out, mc, l = flash_forward(q, k, v, params.get("causal", False), params.get("scale"))
        self.saved = (mc, l)
        return out.astype(np.float32)

    def gradient(self, op, i, g, ans, args, params):
        if self.grads is None:
            from ._flash import flash_backward
            q, k, v, o, do = (a.astype(self.dtype) for a in (*args, ans, g))
            self.grads = flash_backward(q, k, v, o, do, *self.node.saved, params.get("causal", False),
                                        params.get("scale"))
        return self.grads[i].astype(np.float32)


class Scan(Compute):
    """cumsum as the device's CUDA kernel adds (minifp._cudascan), every add rounded into the output's format; its
    gradient, PyTorch's cumsum_backward(grad.to(self.dtype)): the reversed scan of the gradient cast to the input's
    format (under autocast too: cumsum takes dtype=float32 there, its input stays half)."""

    __slots__ = ("fmt", "node")

    def __init__(self, fmt, node):
        super().__init__(np)
        self.fmt, self.node = fmt, node

    def forward(self, op, args, params):
        x, axis = args[0], params["axis"]
        if x.size == x.shape[axis]:          # one row: CUB's scan, not modelled
            return super().forward(op, args, params)
        return cuda_scan(x, axis, lambda v: in_format(v, self.fmt, None))

    def gradient(self, op, i, g, ans, args, params):
        axis, fmt = params["axis"], self.node.inputs[0].fmt
        if g.size == g.shape[axis]:
            return super().gradient(op, i, g, ans, args, params)
        rnd = lambda v: in_format(v, fmt, None)     # noqa: E731
        return np.flip(cuda_scan(np.flip(rnd(g), axis), axis, rnd), axis)


class Staged:
    """The namespace of a `staged` op: xp, and stage(v), v rounded into the op's output format (its first input's
    for an op in INPUT_FORMAT; its values, in v's dtype), where PyTorch's formula stores an intermediate tensor."""

    def __init__(self, xp, fmt, node, name=None):
        self._xp, self._fmt, self._node, self._name = xp, fmt, node, name
        self.shared = {}        # what the op's gradients of one backward step share (batch norm's channel sums)

    def __getattr__(self, name):
        return getattr(self._xp, name)

    def stage(self, v):
        v = self._xp.asarray(v)
        if self._node is None and STATE.monitors:   # a forward's intermediate: counted as a rounding of the op's
            return widen(round_counted(v, self._fmt, self._name, STATE.layer, "forward"), self._fmt)
        return in_format(v, self._fmt, self._node, inplace=self._node is None)     # a forward's own array


def route(op, fmt, tensors, xp, device, node=None, params=None):
    """How `op` computes into output format `fmt` from `tensors` (its inputs; backward: the output, then the
    inputs) on `xp`: forward under the thread's state and the op's `params`, or the backward of `node`."""
    if not op.routed and xp is np:      # most ops: NumPy, as they are
        return ON_NUMPY
    acc = STATE.accumulator if node is None else node.acc
    if acc is None and op.product == "matmul" and xp is np:     # the device's own (cuBLAS's) GEMMs, half factors
        acc = DEVICES.get(device, IDEAL).gemm          # (numerics(device), inlined: every product asks)
        if acc is not None and _factors(tensors).is_float32:
            acc = None
    compute = None
    if op.product is not None:
        fp8 = STATE.fp8 if node is None else node.saved
        if fp8 is not None:
            return Fp8(xp, (fp8, tensors) if node is None else fp8, node)
        if acc is None and xp is not np:                # a real GPU: its tensor cores
            xp = importlib.import_module("minifp._gpu").tensor_cores(xp, _factors(tensors))
            compute = TensorCores(xp) if hasattr(xp, "operand") else None
        elif acc is None and FLOAT32_PRODUCTS and fmt.is_float32:
            fmt_in = FLOAT32_PRODUCTS.get((device, op.product))
            passes = _tf32_passes(op, tensors if node is None else tensors[1:], device,
                                  params if node is None else node.params) if fmt_in is not None else ()
            compute = Tf32(xp, fmt_in, passes) if any(passes) else None
    if op.kernel == "attention" and xp is np and fmt in (float16, bfloat16) and numerics(device).attention == "cudnn":
        return Flash(fmt, node)                         # the device's own kernel (half inputs only, as cuDNN's)
    if op.kernel == "scan" and xp is np and fmt.compute_dtype is np.float32 and numerics(device).scan == "cuda":
        return Scan(fmt, node)
    if op.accumulates and acc is not None:              # minifp.accumulate: not BLAS's sums
        xp = accumulating(xp, acc, _factors(tensors))
    at = fmt if op.name not in INPUT_FORMAT else tensors[node is not None].fmt or fmt    # the format steps round into
    if op.staged and not at.is_float32 and _staged(op, tensors, device, params, at, node):
        xp = Staged(xp, at, node, op.name)
    if compute is None:
        return ON_NUMPY if xp is np else Compute(xp)
    compute.xp = xp
    return compute


def _staged(op, tensors, device, params, fmt, node):
    """Whether a staged op's intermediates round into its output format here: always (True), on the device it
    names, or ("device") where the device's numerics say so (Device.stages for the ops in STAGES); conv2d's bias,
    forward only (its gradients are sums); batch_norm's weight and bias gradient sums, backward only (tensors: its
    output, x, weight, bias)."""
    if op.staged == "device":       # the dispatcher asks the device (as for a conv's TF32: _tf32_passes)
        if op.name == "batch_norm":
            return node is not None and numerics(device).native_batch_norm(fmt, tensors[2], tensors[3],
                                                                               tensors[1]._data.ndim)
        if op.name in STAGES:
            return numerics(device).stages(op.name)
        return node is None and len(tensors) == 3 and numerics(device).rounds_before_bias(
            tensors[0]._data.shape, tensors[1]._data.shape, params or {}, fmt)
    return op.staged is True or op.staged == device


def _tf32_passes(op, inputs, device, params):
    """Whether a float32 product's forward and its two factors' gradients round to tf32 where it is allowed: always,
    but for a convolution, where the device's kernels do (cuDNN picks them per pass and shape)."""
    if op.product != "conv":
        return (True, True, True)
    dev, x, w = numerics(device), inputs[0]._data.shape, inputs[1]._data.shape
    return tuple(dev.uses_tf32(p, x, w, params or {}) for p in ("fprop", "dgrad", "wgrad"))


def unbroadcast(xp, g, shape):
    """Sum a broadcast gradient back to `shape` (done by the backward once, never in op gradients)."""
    if g.shape == shape:
        return g
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _factors(tensors):
    """The format of a product's factors: the promotion of its float tensors' formats (a tensor-core model and the
    accumulation kernels read the width of the products from it)."""
    fmt = None
    for t in tensors:
        if isinstance(t, Tensor) and t.fmt is not None:
            fmt = t.fmt if fmt is None else promote(fmt, t.fmt)
    return fmt or float32

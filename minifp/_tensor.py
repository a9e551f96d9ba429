"""Tensors, the dispatcher that applies every op, and reverse-mode autograd."""
from __future__ import annotations

import contextlib
import numbers

import numpy as np

from . import _formats as F
from ._backend import array_module, to_numpy
from ._ops import FLOAT32, LOWER, OPS
from ._rounding import _round_to, round_to, widen

_grad_enabled = [True]
# Autocast: a stack of (dtype or None); the top decides. The cache maps id(leaf) -> its cast.
_autocast_stack: list = []
_cast_cache: dict = {}
# The numerics monitors watching (see numerics.py) and the layers being called (innermost last).
_monitors: list = []
_layer_stack: list = []


class Tensor:
    """An array whose every value is representable in its format, with an optional gradient."""

    __slots__ = ("_data", "fmt", "requires_grad", "grad", "_node", "name", "__weakref__")
    __array_priority__ = 1000   # numpy_array * tensor -> Tensor.__rmul__

    def __init__(self, data, fmt, requires_grad=False):
        """A tensor over raw storage `data`: the format's storage dtype holding only the format's values."""
        fmt = None if fmt is None else F.as_format(fmt)
        _check_storage(data, fmt)
        self._set(data, fmt, requires_grad, None)

    @classmethod
    def _wrap(cls, data, fmt, requires_grad=False, node=None):
        """The core's unchecked constructor, for arrays it has just rounded into fmt itself."""
        t = cls.__new__(cls)
        t._set(data, fmt, requires_grad, node)
        return t

    def _set(self, data, fmt, requires_grad, node):
        self._data, self.fmt, self._node = data, fmt, node
        self.requires_grad, self.grad, self.name = requires_grad, None, None

    data = property(lambda self: self._data, doc="The raw storage array (read-only: change values with assign).")

    def assign(self, values):
        """Replace the values in place by `values` rounded into this tensor's format; the shape must match."""
        new = _values_for(self, values)
        if new.shape != self.shape:
            raise ValueError(f"assign(): values of shape {new.shape} for a tensor of shape {self.shape}; "
                             f"the shapes must match")
        self._data = new
        return self

    # -- views of the data ------------------------------------------------------
    shape = property(lambda self: self.data.shape)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    nbytes = property(lambda self: self.data.nbytes)
    dtype = property(lambda self: self.fmt if self.fmt is not None else self.data.dtype)
    T = property(lambda self: self.transpose())
    is_leaf = property(lambda self: self._node is None)

    def __len__(self):
        return len(self.data)

    def numpy(self):
        """The values as a host NumPy array in the format's storage dtype."""
        return to_numpy(self.data)

    def float32(self):
        """The values widened to a float32 array (exact)."""
        return widen(self.data, self.fmt) if self.fmt is not None else self.data.astype(np.float32)

    def item(self):
        """The one value of a one-element tensor, as a Python number."""
        if self.size != 1:
            raise ValueError(f"item() needs a tensor of one element, this one has shape {self.shape}")
        return to_numpy(self.data if self.fmt is None else self.float32()).reshape(-1)[0].item()

    def detach(self):
        return Tensor._wrap(self.data, self.fmt)

    def astype(self, fmt):
        """A differentiable cast: values round into `fmt`, the gradient casts back."""
        return apply("cast", self, _out=F.as_format(fmt))

    to = astype

    def backward(self, gradient=None):
        backward(self, gradient)

    def __repr__(self):
        vals = np.array2string(to_numpy(self.float32()) if self.fmt else to_numpy(self.data), precision=6,
                               separator=", ")
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({vals}, dtype={self.dtype}{grad})"

    # -- operators -----------------------------------------------------------------
    def __add__(self, o): return apply("add", self, o)
    def __radd__(self, o): return apply("add", o, self)
    def __sub__(self, o): return apply("sub", self, o)
    def __rsub__(self, o): return apply("sub", o, self)
    def __mul__(self, o): return apply("mul", self, o)
    def __rmul__(self, o): return apply("mul", o, self)
    def __truediv__(self, o): return apply("div", self, o)
    def __rtruediv__(self, o): return apply("div", o, self)
    def __pow__(self, o): return apply("pow", self, o)
    def __rpow__(self, o): return apply("pow", o, self)
    def __matmul__(self, o): return apply("matmul", self, o)
    def __rmatmul__(self, o): return apply("matmul", o, self)
    def __neg__(self): return apply("neg", self)
    def __abs__(self): return apply("abs", self)
    def __lt__(self, o): return apply("lt", self, o)
    def __le__(self, o): return apply("le", self, o)
    def __gt__(self, o): return apply("gt", self, o)
    def __ge__(self, o): return apply("ge", self, o)
    def __eq__(self, o): return apply("eq", self, o)  # noqa: elementwise, as in NumPy and PyTorch
    def __ne__(self, o): return apply("ne", self, o)
    __hash__ = object.__hash__

    def __getitem__(self, index):
        return apply("getitem", self, index=_index(index))

    def exp(self): return apply("exp", self)
    def log(self): return apply("log", self)
    def sqrt(self): return apply("sqrt", self)
    def tanh(self): return apply("tanh", self)
    def sigmoid(self): return apply("sigmoid", self)
    def relu(self): return apply("relu", self)
    def abs(self): return apply("abs", self)
    def sum(self, axis=None, keepdims=False): return apply("sum", self, axis=axis, keepdims=keepdims)
    def mean(self, axis=None, keepdims=False): return apply("mean", self, axis=axis, keepdims=keepdims)
    def max(self, axis=None, keepdims=False): return apply("max", self, axis=axis, keepdims=keepdims)
    def softmax(self, axis=-1): return apply("softmax", self, axis=axis)
    def log_softmax(self, axis=-1): return apply("log_softmax", self, axis=axis)

    def reshape(self, *shape):
        return apply("reshape", self, shape=shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

    def transpose(self, *axes):
        return apply("transpose", self, axes=(axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes)
                     or None)


def _index(index):
    """Tensor indices -> their arrays, so indexing is plain array indexing."""
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    return index.data if isinstance(index, Tensor) else index


def _check_storage(data, fmt):
    """Refuse raw storage that is not fmt's storage dtype or holds values fmt cannot represent."""
    dtype = getattr(data, "dtype", None)
    if fmt is None:
        if dtype is None or dtype.kind not in "biu":
            raise TypeError(f"Tensor(data, None) holds integer or bool arrays; got {type(data).__name__} of dtype "
                            f"{dtype}; pass a format for float data")
        return
    if dtype != fmt.storage:
        raise TypeError(f"Tensor(data, {fmt}): data must be an array of {fmt}'s storage dtype "
                        f"{np.dtype(fmt.storage).name}, got {type(data).__name__} of dtype {dtype}; "
                        f"use minifp.tensor(data, dtype={fmt.name!r}) to round values into the format")
    if not fmt.native and not fmt.is_float32:
        wide = data.astype(np.float32)
        same = (round_to(wide, fmt).view(np.uint32) == wide.view(np.uint32)) | (wide != wide)
        if not bool(same.all()):
            raise ValueError(f"Tensor(data, {fmt}): data holds values that {fmt} cannot represent; "
                             f"use minifp.tensor(data, dtype=...) to round them")


def _values_for(t, values):
    """`values` as t's storage array on t's device: rounded into t's format (integers cast for integer tensors)."""
    xp = array_module(t.data)
    if isinstance(values, Tensor):
        values = values.float32() if values.fmt is not None else values.data
    arr = xp.asarray(values)
    if t.fmt is None:
        if arr.dtype.kind not in "biu":
            raise TypeError(f"assign(): an integer tensor takes integer values, got dtype {arr.dtype}")
        return arr.astype(t.data.dtype, copy=True)
    if arr.dtype == t.fmt.storage and (t.fmt.native or t.fmt.is_float32):
        return arr.copy()
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"assign(): values must be real numbers, got dtype {arr.dtype}")
    return round_to(arr if arr.dtype in (np.float32, np.float64) else widen(arr) if arr.dtype.kind == "f"
                    else arr.astype(np.float64), t.fmt)


# -- making tensors ------------------------------------------------------------------


def tensor(data, dtype=None, requires_grad=False):
    """A tensor holding `data` rounded into `dtype` (default: the data's own format, float32 for Python floats)."""
    if isinstance(data, Tensor):
        data = data.float32() if data.fmt is not None else data.data
    xp = array_module(data)
    arr = data if xp is not np else np.asarray(data)
    if dtype is None:
        if arr.dtype.kind in "biu":
            if requires_grad:
                raise TypeError(f"only floating-point tensors can require gradients, not {arr.dtype}")
            return Tensor._wrap(arr.copy(), None)
        fmt = F.as_format(arr.dtype) if arr.dtype.kind == "f" or arr.dtype.itemsize <= 2 else F.float32
    else:
        fmt = F.as_format(dtype)
    if arr.dtype == fmt.storage:
        return Tensor._wrap(arr.copy(), fmt, requires_grad)
    if arr.dtype.kind not in "fbiu":
        arr = widen(arr)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return Tensor._wrap(round_to(arr, fmt), fmt, requires_grad)


@contextlib.contextmanager
def no_grad():
    """Within this block ops record no graph."""
    _grad_enabled.append(False)
    try:
        yield
    finally:
        _grad_enabled.pop()


# -- the dispatcher --------------------------------------------------------------------


class _Node:
    __slots__ = ("op", "inputs", "params", "layer")

    def __init__(self, op, inputs, params):
        self.op, self.inputs, self.params = op, inputs, params
        self.layer = _layer_stack[-1] if _layer_stack else None


def _plan(op, args, out):
    """The output format, and the inputs as the op sees them (autocast may cast float inputs first)."""
    if out is not None:
        return out, args
    autocast = _autocast_stack[-1] if _autocast_stack else None
    target = autocast if op.category == LOWER else F.float32 if op.category == FLOAT32 else None
    if autocast is not None and target is not None:
        return target, tuple(_autocast_cast(a, target) for a in args)
    fmt = None
    for a in args:
        if isinstance(a, Tensor) and a.fmt is not None:
            fmt = a.fmt if fmt is None else F.promote(fmt, a.fmt)
    return fmt or F.float32, args


def _autocast_cast(a, fmt):
    if not isinstance(a, Tensor) or a.fmt is None or a.fmt == fmt:
        return a
    if a.is_leaf and a.requires_grad:       # PyTorch's cast cache: one cast of a parameter per region
        key = (id(a), fmt)
        if key not in _cast_cache:
            _cast_cache[key] = (a, a.astype(fmt))
        return _cast_cache[key][1]
    return a.astype(fmt)


def _operand(a):
    """Python numbers become weak float32 scalars; arrays become tensors."""
    if isinstance(a, Tensor):
        return a
    if isinstance(a, (bool, numbers.Number)) and not isinstance(a, np.ndarray):
        return np.float32(a) if not isinstance(a, bool) else a
    return tensor(a)


def _wide(a):
    """What an op body sees: float32 values; bool masks stay bool."""
    if not isinstance(a, Tensor):
        return a
    return a.data if a.fmt is None and a.data.dtype == bool else a.float32()


def apply(name, *args, _out=None, **params):
    """Apply a registered op: choose the format, widen, compute in float32, round once, record the node."""
    op = OPS[name]
    args = tuple(_operand(a) for a in args)
    fmt, args = _plan(op, args, _out)
    tensors = [a for a in args if isinstance(a, Tensor)]
    xp = array_module(*(t.data for t in tensors))
    floats = [t for t in tensors if t.fmt is not None]
    try:
        with np.errstate(all="ignore"):   # overflow to inf and 0/0 are what we emulate, not accidents
            if op.layout and all(t.fmt == fmt for t in floats):
                # No arithmetic: values stay representable, so work on the storage arrays directly.
                fmt = fmt if floats else None
                ans = op.forward(xp, *(a.data if isinstance(a, Tensor) else a for a in args), **params)
            else:
                ans = op.forward(xp, *(_wide(a) for a in args), **params)
                if op.returns_bool:
                    return Tensor._wrap(ans, None)
                ans = _round(ans, fmt, name, _layer_stack[-1] if _layer_stack else None, "forward")
    except (ValueError, IndexError) as e:
        shapes = ", ".join(str(getattr(a, "shape", "scalar")) for a in args)
        raise type(e)(f"{name}: cannot apply to inputs of shapes {shapes}: {e}") from None
    needs_grad = _grad_enabled[-1] and any(t.requires_grad for t in floats)
    return Tensor._wrap(ans, fmt, needs_grad, _Node(op, args, params) if needs_grad else None)


def _round(ans, fmt, op, layer, direction):
    """Round an op's float32 result into fmt, counting for any watching monitor."""
    if fmt.is_float32 and ans.dtype == np.float32:
        if _monitors:
            nan = int(np.isnan(ans).sum())
            for m in _monitors:
                m.record(layer, op, direction, np.array([0, 0, 0, nan]), ans.size)
        return ans
    if not _monitors:
        # The dispatcher already runs under np.errstate: plain float arrays skip round_to's checks.
        return _round_to(ans, fmt) if type(ans) is np.ndarray and ans.dtype in (np.float32, np.float64) \
            else round_to(ans, fmt)
    tally = np.zeros(4, np.int64)
    out = round_to(ans, fmt, counts=tally)
    for m in _monitors:
        m.record(layer, op, direction, tally, ans.size)
    return out


# -- backward ----------------------------------------------------------------------------


def _unbroadcast(xp, g, shape):
    """Sum a broadcast gradient back to `shape` (done here once, never in op gradients)."""
    if g.shape == shape:
        return g
    g = xp.sum(g, axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return xp.sum(g, axis=axes, keepdims=True) if axes else g


def _accumulate(store, t, g, node=None):
    """Add gradient g (float32) into the gradient of t, in t's format (counted against node's op)."""
    prev = store.get(id(t))
    total = g if prev is None else widen(prev[1], t.fmt) + g
    rounded = _round(total, t.fmt, node.op.name, node.layer, "backward") if node is not None \
        else round_to(total, t.fmt)
    store[id(t)] = (t, rounded)


def _topological(root):
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
        elif id(t) not in seen:
            seen.add(id(t))
            stack.append((t, True))
            if t._node is not None:
                stack.extend((a, False) for a in t._node.inputs if isinstance(a, Tensor) and a.requires_grad)
    return order


def backward(root, gradient=None):
    """Reverse-mode autodiff from `root`; leaves that require grad get .grad in their own format."""
    if not root.requires_grad:
        raise RuntimeError("backward() on a tensor that does not require grad: no input of it has "
                           "requires_grad=True, or it was computed under no_grad()")
    xp = array_module(root.data)        # the seed lives where the graph does: a GPU graph gets a GPU seed
    if gradient is None:
        if root.size != 1:
            raise RuntimeError(f"backward() on a non-scalar tensor of shape {root.shape} needs a gradient "
                               f"argument of that shape (gradients are only implied for scalars)")
        gradient = xp.ones(root.shape, np.float32)
    g0 = gradient.float32() if isinstance(gradient, Tensor) else xp.asarray(gradient, dtype=np.float32)
    if g0.shape != root.shape:
        raise ValueError(f"backward(): gradient of shape {g0.shape} does not match the tensor's shape {root.shape}")
    store = {}
    _accumulate(store, root, g0)
    leaves = []
    with np.errstate(all="ignore"):
        _backward(_topological(root), store, leaves)
    for m in _monitors:
        m.weight_gradients(leaves)


def _backward(order, store, leaves):
    """The reverse sweep of backward(): pop each tensor's gradient, pass it to its inputs."""
    for t in reversed(order):
        _, g_stored = store.pop(id(t))
        for m in _monitors:
            m.gradient(t, widen(g_stored, t.fmt))
        if t._node is None:
            t.grad = Tensor._wrap(g_stored, t.fmt) if t.grad is None else \
                Tensor._wrap(round_to(t.grad.float32() + widen(g_stored, t.fmt), t.fmt), t.fmt)
            leaves.append(t)
            continue
        op, inputs, params = t._node.op, t._node.inputs, t._node.params
        xp = array_module(g_stored)
        g, ans = widen(g_stored, t.fmt), t.float32()
        wide = [_wide(a) for a in inputs]
        for i, a in enumerate(inputs):
            if isinstance(a, Tensor) and a.requires_grad:
                gi = op.grads[i](xp, g, ans, *wide, **params)
                _accumulate(store, a, _unbroadcast(xp, xp.asarray(gi, np.float32), a.shape), t._node)

"""Tensors, the dispatcher that applies every op, and reverse-mode autograd."""
from __future__ import annotations

import importlib
import inspect
import itertools
import numbers
import sys

import numpy as np

from . import _formats as F, _fp8
from ._accumulate import accumulating
from ._backend import array_module, to_numpy
from ._ops import FLOAT32, LOWER, OPS
from ._rounding import (HALF_VALUES, _HALF_KERNELS, _half_pair, _half_values, _round_quiet, _round_unwarned,
                        _to_half_quiet, round_to, widen)
from ._state import FLOAT32_PRODUCTS, STATE, Autocast, grad_mode

_F32 = np.dtype(np.float32)
_CAST = OPS["cast"]
_FLOAT16, _FLOAT32 = F.float16, F.float32


class Tensor:
    """An array whose every value is representable in its format, with an optional gradient."""

    # _w32: (storage array, its float32 values), the widening an op's forward made, kept while the graph may
    # need it (the backward widens its inputs again); valid only while _data is that same array.
    __slots__ = ("_data", "fmt", "requires_grad", "grad", "_node", "name", "device", "_w32", "__weakref__")
    __array_priority__ = 1000   # numpy_array * tensor -> Tensor.__rmul__

    def __init__(self, data, fmt, requires_grad=False, device=None):
        """A tensor over raw storage `data`: the format's storage dtype holding only the format's values."""
        fmt = None if fmt is None else F.as_format(fmt)
        _check_storage(data, fmt)
        self._data, self.fmt, self._node, self.requires_grad, self.grad, self.name = data, fmt, None, requires_grad, \
            None, None
        self._w32 = None
        self.device = device or _device(data)

    @classmethod
    def _wrap(cls, data, fmt, requires_grad=False, node=None, device=None):
        """The core's unchecked constructor, for arrays it has just rounded into fmt itself."""
        t = cls.__new__(cls)
        t._data, t.fmt, t._node, t.requires_grad, t.grad, t.name, t._w32 = data, fmt, node, requires_grad, None, None, \
            None
        t.device = device or _device(data)
        return t

    def _like(self, data, fmt, requires_grad=False):
        """A new tensor of this one's class and device over `data`, already in `fmt` (None: integers or bools)."""
        return _result_class(type(self))._wrap(data, fmt, requires_grad, None, self.device)

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
    shape = property(lambda self: self._data.shape)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    nbytes = property(lambda self: self._data.nbytes)
    dtype = property(lambda self: self.fmt if self.fmt is not None else self._data.dtype)
    T = property(lambda self: self.transpose())
    is_leaf = property(lambda self: self._node is None)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self._data)

    def __bool__(self):
        if self._data.size != 1:
            raise ValueError(f"the truth value of a tensor of {self._data.size} elements is ambiguous: only a "
                             f"one-element tensor has one (compare elements, or use .item() on one)")
        return bool(self.item())

    def __float__(self):                          # float(loss), '%.4f' % metric.result(), as TF, Keras, torch
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def numpy(self):
        """The values as a host NumPy array in the format's storage dtype."""
        return to_numpy(self._data)

    def float32(self):
        """The values widened to a float32 array (exact)."""
        return widen(self._data, self.fmt) if self.fmt is not None else self._data.astype(np.float32)

    def item(self):
        """The one value of a one-element tensor, as a Python number."""
        if self._data.size != 1:
            raise ValueError(f"item() needs a tensor of one element, this one has shape {self.shape}")
        return to_numpy(self._data if self.fmt is None else self.float32()).reshape(-1)[0].item()

    def detach(self):
        """The same values, cut from the graph."""
        return self._like(self._data, self.fmt)

    def astype(self, fmt, mode="nearest", rng=None, bits=None):
        """A differentiable cast: values round into `fmt` in `mode` (round_to's), the gradient casts back."""
        fmt = F.as_format(fmt, "astype(): fmt")
        if mode == "nearest" and bits is None:
            if self.fmt is not None and self.fmt != fmt:    # a float format to another: the dispatcher's own cast
                return _cast(self, fmt)                     # (layers cast their inputs on every call)
            return apply("cast", self, _out=fmt)
        return _cast_in_mode(self, fmt, mode, rng, bits)

    to = astype

    def backward(self, gradient=None, retain_graph=None):
        """Gradients of this tensor with respect to every leaf that requires them, into their .grad."""
        backward(self, gradient, retain_graph)

    def __repr__(self):
        vals = np.array2string(to_numpy(self.float32()) if self.fmt else to_numpy(self._data), precision=6,
                               separator=", ")
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({vals}, dtype={self.dtype}{grad})"

    # Operators and most methods come from the op registry (see the end of this file).
    __hash__ = object.__hash__

    def __getitem__(self, index):
        return apply("getitem", self, index=_index(index))

    def reshape(self, *shape):
        """The same values in a new shape: x.reshape(2, 3) or x.reshape((2, 3))."""
        return apply("reshape", self, shape=shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)

    def transpose(self, *axes):
        """Axes permuted: x.transpose(1, 0, 2) or x.transpose((1, 0, 2)); reversed when none are given."""
        return apply("transpose", self, axes=(axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes)
                     or None)


def _result_class(cls):
    """The class of results computed from tensors of class cls: itself, unless it names another (a face's
    Parameter makes plain tensors, as PyTorch's does)."""
    return cls.__dict__.get("_result_class", cls)


def _device(data):
    """Where an array lives: "cpu" for host arrays, "cuda" for CuPy's."""
    return "cpu" if type(data) is np.ndarray or isinstance(data, np.ndarray) else "cuda"


def _index(index):
    """Tensor indices -> their arrays, so indexing is plain array indexing."""
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    return index._data if isinstance(index, Tensor) else index


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
    if not fmt.native and not fmt.is_float32:     # a float32 container, or a coded storage with other rules
        wide = widen(data, fmt)
        bits = f"u{data.dtype.itemsize}"
        same = (round_to(wide, fmt).view(bits) == data.view(bits)) | (wide != wide)
        if not bool(same.all()):
            raise ValueError(f"Tensor(data, {fmt}): data holds values that {fmt} cannot represent; "
                             f"use minifp.tensor(data, dtype=...) to round them")


def _values_for(t, values):
    """`values` as t's storage array on t's device: rounded into t's format (integers cast for integer tensors)."""
    xp = array_module(t._data)
    if isinstance(values, Tensor):
        values = values.float32() if values.fmt is not None else values._data
    arr = xp.asarray(values)
    if t.fmt is None:
        if arr.dtype.kind not in "biu":
            raise TypeError(f"assign(): an integer tensor takes integer values, got dtype {arr.dtype}")
        return arr.astype(t._data.dtype, copy=True)
    if arr.dtype == t.fmt.storage and (t.fmt.native or t.fmt.is_float32):
        return arr.copy()
    if not _real(arr.dtype):
        raise TypeError(f"assign(): values must be real numbers (float, int or bool), got dtype {arr.dtype}")
    return round_to(arr, t.fmt)         # any real dtype, storage dtypes and either byte order rounded once


def _take(t, values):
    """Replace t's values by `values`, a float32 array the caller has just computed and hands over: a float32
    tensor takes it as it is (no copy), any other format rounds it once (assign)."""
    data = t._data
    if t.fmt is not None and t.fmt.is_float32 and type(values) is type(data) and values.dtype is _F32 \
            and values.shape == data.shape:
        t._data = values
    else:
        t.assign(values)


def _real(dtype):
    """Whether arrays of dtype hold real numbers: NumPy's floats, integers and bools, or a format's storage."""
    return dtype.kind in "fiub" or dtype in F._BY_STORAGE


# -- making tensors ------------------------------------------------------------------


def tensor(data, dtype=None, requires_grad=False):
    """A tensor holding `data` rounded into `dtype` (default: the data's own format, float32 for Python floats)."""
    if not isinstance(requires_grad, bool):
        raise TypeError(f"tensor(): requires_grad must be True or False, got {requires_grad!r}")
    if isinstance(data, Tensor):
        data = data.float32() if data.fmt is not None else data._data
    if data is None:
        raise TypeError("tensor(): data must be numbers, a (nested) list of numbers or an array, got None")
    xp = array_module(data)
    arr = data if xp is not np else np.asarray(data)
    if not _real(arr.dtype):
        raise TypeError(f"tensor(): data must be real numbers (float, int or bool), got dtype {arr.dtype}"
                        + ("; take .real or abs() of complex data first" if arr.dtype.kind == "c" else ""))
    if dtype is None:
        if arr.dtype.kind in "biu":
            if requires_grad:
                raise TypeError(f"tensor(): only floating-point tensors can require gradients, not {arr.dtype}; "
                                f"pass dtype= a float format")
            return Tensor._wrap(arr.copy(), None)
        fmt = F.as_format(arr.dtype) if arr.dtype in F._BY_STORAGE else F.float32
    else:
        fmt = F.as_format(dtype, "tensor(): dtype")
    if arr.dtype == fmt.storage and (fmt.native or fmt.is_float32):
        return Tensor._wrap(arr.copy(), fmt, requires_grad)
    return Tensor._wrap(round_to(arr, fmt), fmt, requires_grad)


def no_grad():
    """Within this block ops record no graph (in this thread)."""
    return grad_mode(False)


def enable_grad():
    """Within this block ops record the graph again, inside a no_grad block too (in this thread)."""
    return grad_mode(True)


def is_grad_enabled():
    """Whether ops record the graph here and now."""
    return STATE.grad_enabled


# -- the dispatcher --------------------------------------------------------------------


_SEQUENCE = itertools.count()


class _Node:
    # acc: the accumulator the forward ran under; the backward's products of the node accumulate the same way.
    # seq: the order of creation, the order PyTorch's engine runs the backward in (latest first)
    __slots__ = ("op", "inputs", "params", "layer", "freed", "acc", "fp8", "seq")

    def __init__(self, op, inputs, params):
        self.op, self.inputs, self.params, self.layer, self.freed = op, inputs, params, STATE.layer, False
        self.seq = next(_SEQUENCE)
        self.acc = STATE.accumulator
        self.fp8 = None             # a GEMM under fp8_autocast: its fp8 factors and scaling state (minifp._fp8)


def _plan(op, args, out, device):
    """The output format, and the inputs as the op sees them (autocast may cast float inputs first)."""
    if out is not None:
        return out, args
    autocast = STATE.autocast
    if autocast is not None and autocast.device == device:
        if autocast.variables_only:         # Keras: variables are read in the compute dtype; formats then promote
            for a in args:
                if isinstance(a, Tensor) and a._node is None and a.requires_grad:     # most ops read no variable
                    args = tuple([_autocast_cast(a, autocast, False) if isinstance(a, Tensor)
                                  and a._node is None and a.requires_grad else a for a in args])
                    break
        else:
            if op.name in autocast.lower:
                fmt = autocast.fmt
                values = not op.layout      # a layout op would pass the copy's storage on as its own
                return fmt, tuple([a if not isinstance(a, Tensor) or a.fmt is fmt else
                                   _autocast_cast(a, autocast, values) for a in args])
            if op.name in autocast.float32:
                # No casts: the op widens narrower inputs exactly as a cast to float32 would, and its gradient is
                # rounded into each input's format as the cast's would be (a second gradient too: _accumulate).
                return F.float32, args
    fmt = None
    for a in args:
        if isinstance(a, Tensor) and a.fmt is not None and a.fmt is not fmt:
            fmt = a.fmt if fmt is None else F.promote(fmt, a.fmt)
    return fmt or F.float32, args


def _autocast_cast(a, autocast, values):
    """An eligible input cast to the autocast format: float tensors of at most 32 bits (PyTorch never casts
    float64). values: the op reading it is the only one that will, and reads its values (see _cast)."""
    have, fmt = a.fmt if isinstance(a, Tensor) else None, autocast.fmt
    if have is None or have is fmt or have.man_bits > 23 or have._key == fmt._key:     # (Format.__eq__'s test)
        return a
    if autocast.cache and a._node is None and a.requires_grad and have.is_float32:
        key = (id(a), id(autocast))     # PyTorch's cast cache: one cast of a float32 parameter per region
        hit = STATE.cast_cache.get(key)
        if hit is None:     # the entry keeps the leaf and the policy alive: neither id can be reused meanwhile
            hit = STATE.cast_cache[key] = (a, autocast, _cast(a, fmt, values))
        return hit[2]
    return _cast(a, fmt, values)


def _cast(a, fmt, values=False):
    """apply("cast", a, _out=fmt) for a float tensor a of another format, without the general dispatch
    (autocast makes several of these per layer call).

    values: a copy that only the op about to run reads (autocast's). Its float16 storage would be widened right
    back, so where the float16 kernels serve it holds the float32 values of its rounding instead: the engine
    reads float32 storage as values (_wide), whatever the format."""
    w32, data = None, a._data
    if STATE.monitors:
        with np.errstate(all="ignore"):
            ans = _round(_wide(a, _exact_in(fmt)), fmt, "cast", STATE.layer, "forward")
    elif fmt is _FLOAT16 and _HALF_KERNELS and data.dtype is _F32 and type(data) is np.ndarray:
        if values and data.flags.c_contiguous:
            ans = np.empty(data.shape, _F32)
            HALF_VALUES[data.ndim](data, ans)
        elif STATE.grad_enabled:    # the consumer widens it right back: keep the values beside the codes
            ans, w32 = _half_pair(data, quiet=False)
        else:
            ans = _round_unwarned(data, fmt)
    else:       # no error state to enter: the rounding kernels raise no floating-point warnings
        ans = _round_unwarned(_wide(a, _exact_in(fmt)), fmt)
    needs_grad = STATE.grad_enabled and a.requires_grad
    out = _result_class(type(a))._wrap(ans, fmt, needs_grad, _Node(_CAST, (a,), {}) if needs_grad else None, a.device)
    if w32 is not None:
        out._w32 = (ans, w32)
    return out


def _cast_in_mode(a, fmt, mode, rng, bits):
    """Tensor.astype in another rounding mode than nearest: round_to of the exact values (every format
    widens exactly to float32), counted for watching monitors; the cast's node, so the gradient casts back."""
    values = a._data if a.fmt is None else _wide(a)
    tally = np.zeros(4, np.int64) if STATE.monitors else None
    ans = round_to(values, fmt, mode, rng, tally, bits)
    for m in STATE.monitors:
        m.record(STATE.layer, "cast", "forward", tally, ans.size)
    needs_grad = STATE.grad_enabled and a.requires_grad and a.fmt is not None
    return _result_class(type(a))._wrap(ans, fmt, needs_grad, _Node(_CAST, (a,), {}) if needs_grad else None,
                                        a.device)


def default_autocast(fmt, device="cpu"):
    """The engine's own Autocast in fmt: lists from the ops' categories (PyTorch's CUDA lists for these ops)."""
    return Autocast(fmt, frozenset(n for n, op in OPS.items() if op.category == LOWER),
                    frozenset(n for n, op in OPS.items() if op.category == FLOAT32), device)


def _operand(a, name):
    """Tensors as they are; Python numbers stay weak scalars; arrays become tensors; anything else is refused."""
    if isinstance(a, Tensor) or isinstance(a, (bool, numbers.Real)) and not isinstance(a, np.ndarray):
        return a
    if a is None or isinstance(a, (str, bytes, numbers.Complex)):
        raise TypeError(f"{name}: operands must be tensors, arrays or real numbers, got {a!r}")
    return tensor(a)


def _exact_in(fmt):
    """The dtype an op computes in for output format fmt: float32 holds 24 bits, enough for one rounding
    into formats of at most 10 mantissa bits (24 >= 2p + 2); wider formats compute in float64."""
    return np.float32 if fmt.man_bits <= 10 or fmt.is_float32 else np.float64


def _wide(a, dtype=np.float32):
    """What an op body sees: values in `dtype`; bool masks stay bool; Python numbers become dtype scalars."""
    if isinstance(a, Tensor):
        data = a._data
        if a.fmt is None:
            return data if data.dtype == bool else data.astype(dtype)
        if dtype is np.float32:
            if data.dtype is _F32:          # float32 storage: the values themselves, no copy
                return data
            cached = a._w32
            if cached is not None and cached[0] is data:        # widened before (the forward, for the backward)
                return cached[1]
            w = widen(data, a.fmt)
            if STATE.grad_enabled:
                a._w32 = (data, w)
            return w
        return widen(data, a.fmt).astype(dtype)
    if type(a) is float or type(a) is int or isinstance(a, numbers.Real) and not isinstance(a, bool):
        return dtype(a)
    return a


def _widened(data, fmt, dtype):
    """Storage `data` of format fmt as values in dtype (float32, or float64 for wide formats): exact."""
    if dtype is np.float32 and data.dtype is _F32:
        return data
    w = widen(data, fmt)
    return w if dtype is np.float32 else w.astype(dtype)


def _on_one_device(tensors):
    """The device all the tensors live on (0-d tensors may come from the host, as in PyTorch)."""
    device = tensors[0].device if tensors else "cpu"
    for t in tensors:
        if t.device != device and t._data.ndim:
            if device == "cpu" and not tensors[0]._data.ndim:
                device = t.device
                continue
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{device} and {t.device}!")
    return device


def _products(op, fmt, device, arrays, n=2):
    """The first n arrays, a float32 product's factors, rounded first where the device's tensor cores
    would (TF32); a bias after them is added in float32."""
    fmt_in = FLOAT32_PRODUCTS.get((device, op.product))
    if fmt_in is None or not fmt.is_float32:
        return arrays
    return [_widened(round_to(a, fmt_in), fmt_in, np.float32) if i < n else a for i, a in enumerate(arrays)]


def apply(name, *args, _out=None, **params):
    """Apply a registered op: choose the format, widen, compute, round once, record the node."""
    op = OPS[name]
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) != len(args):           # numbers, arrays, a missing bias: the rare slow path
        args = tuple([a if isinstance(a, Tensor) or a is None and op.optional else _operand(a, name) for a in args])
        tensors = [a for a in args if isinstance(a, Tensor)]
    device = tensors[0].device if tensors else "cpu"
    for t in tensors:
        if t.device != device:
            device = _on_one_device(tensors)
            break
    if _out is None and STATE.autocast is None:         # no autocast: the promoted format of the float inputs
        fmt = None
        for t in tensors:
            if t.fmt is not None and t.fmt is not fmt:
                fmt = t.fmt if fmt is None else F.promote(fmt, t.fmt)
        fmt = fmt or F.float32
    else:
        fmt, planned = _plan(op, args, _out, device)
        if planned is not args:
            args, tensors = planned, [a for a in planned if isinstance(a, Tensor)]
    cls = _result_class(type(tensors[0])) if tensors else Tensor
    xp = np
    for t in tensors:
        if type(t._data) is not np.ndarray:
            xp = array_module(*[t._data for t in tensors])
            break
    w32 = fp8 = None
    try:
        if op.layout and all(t.fmt is fmt or t.fmt is None or t.fmt == fmt for t in tensors):
            # No arithmetic: values stay representable, so work on the storage arrays directly.
            fmt = fmt if any(t.fmt is not None for t in tensors) else None
            ans = op.forward(xp, *[a._data if isinstance(a, Tensor) else a for a in args], **params)
        else:
            with np.errstate(all="ignore"):   # overflow to inf and 0/0 are what we emulate, not accidents
                dtype = _exact_in(fmt)
                if op.product is not None and xp is not np and STATE.fp8 is None and STATE.accumulator is None:
                    xp = _gpu().tensor_cores(xp, _input_format(tensors))     # a real GPU: its tensor cores
                wide = [_wide(a, dtype) for a in args] if xp is np or type(xp) is not _gpu_cores() else \
                    [xp.operand(a, _wide) for a in args]        # their own storage: no widening to cast back
                if op.product is not None and STATE.fp8 is not None:     # fp8 GEMMs accumulate in float32
                    ans, fp8 = _fp8.forward(op, xp, wide, tensors, params)
                elif op.accumulates and STATE.accumulator is not None:   # minifp.accumulate: not BLAS's sums
                    ans = op.forward(accumulating(xp, STATE.accumulator, _input_format(tensors)), *wide, **params)
                else:
                    if op.product is not None and FLOAT32_PRODUCTS:
                        wide = _products(op, fmt, device, wide)
                    if op.staged and not fmt.is_float32 and (op.staged is True or op.staged == device):
                        xp = _Staged(xp, fmt, None)     # a forward that PyTorch computes in steps, each rounded
                    ans = op.forward(xp, *wide, **params)
                ans = ans if type(ans) is np.ndarray else xp.asarray(ans)      # reductions give scalars
                if op.returns_bool:
                    return cls._wrap(ans, None, False, None, device)
                if fmt is _FLOAT16 and _HALF_KERNELS and type(ans) is np.ndarray and ans.dtype is _F32 \
                        and STATE.grad_enabled and not STATE.monitors:
                    if op.selects and all(t.fmt is fmt for t in tensors):   # its values are float16's already
                        ans, w32 = _to_half_quiet(ans), ans
                    else:
                        ans, w32 = _half_pair(ans)  # the next op widens a float16 result right back: keep the values
                else:
                    ans = _round(ans, fmt, name, STATE.layer, "forward")
    except (ValueError, IndexError) as e:
        shapes = ", ".join(str(getattr(a, "shape", "scalar")) for a in args)
        raise type(e)(f"{name} (inputs of shapes {shapes}): {e}") from None   # the cause may not be the shapes
    needs_grad = False
    if STATE.grad_enabled:
        for t in tensors:
            if t.requires_grad and t.fmt is not None:
                needs_grad = True
                break
    out = cls._wrap(ans, fmt, needs_grad, _Node(op, args, params) if needs_grad else None, device)
    if w32 is not None:
        out._w32 = (ans, w32)
    if needs_grad and op.product is not None and fp8 is not None:
        out._node.fp8 = fp8
    return out


def _gpu():
    """minifp._gpu, imported when an op first meets CuPy arrays."""
    return importlib.import_module("minifp._gpu")


def _gpu_cores():
    """The tensor-core namespace's class, once minifp._gpu is imported (None before: no op met CuPy yet)."""
    module = sys.modules.get("minifp._gpu")
    return module.TensorCores if module is not None else None


def _input_format(tensors):
    """The format of a product's factors: the promotion of its float tensors' formats (a tensor-core model
    and the accumulation kernels read the width of the products from it)."""
    fmt = None
    for t in tensors:
        if isinstance(t, Tensor) and t.fmt is not None:
            fmt = t.fmt if fmt is None else F.promote(fmt, t.fmt)
    return fmt or F.float32


def _round(ans, fmt, op, layer, direction):
    """Round an op's result into fmt, counting for any watching monitor (called under np.errstate)."""
    monitors = STATE.monitors
    if fmt is _FLOAT16 and _HALF_KERNELS and not monitors and type(ans) is np.ndarray and ans.dtype is _F32:
        return _to_half_quiet(ans)      # the common rounding of float16 emulation, with fewer calls
    if fmt.is_float32 and ans.dtype == np.float32:
        if monitors:
            nan = int(np.isnan(ans).sum())
            for m in monitors:
                m.record(layer, op, direction, np.array([0, 0, 0, nan]), ans.size)
        return ans
    if not monitors:
        # The dispatcher already runs under np.errstate: plain float arrays skip round_to's checks.
        return _round_quiet(ans, fmt) if type(ans) is np.ndarray and ans.dtype in (np.float32, np.float64) \
            else round_to(ans, fmt)
    tally = np.zeros(4, np.int64)
    out = round_to(ans, fmt, counts=tally)
    for m in monitors:
        m.record(layer, op, direction, tally, ans.size)
    return out


# -- backward ----------------------------------------------------------------------------


def _unbroadcast(xp, g, shape):
    """Sum a broadcast gradient back to `shape` (done here once, never in op gradients)."""
    if g.shape == shape:
        return g
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _accumulate(store, t, g, node=None, keep_wide=False, exact=False):
    """Add gradient g into the gradient of t, in t's format (counted against node's op).

    The store holds (t, storage). With keep_wide (the engine's own backward), the gradient of a float16 tensor
    inside the graph is kept as (t, its float32 values, True) instead: the sweep would only widen it back,
    and one pass rounds and widens (the same values), or none where g is `exact` (already in t's format) and
    the first gradient t gets. Leaves, and any watched run, keep storage."""
    prev = store.get(id(t))
    if prev is None:
        total = g
    else:       # a second gradient is a tensor of t's format too (PyTorch's and TF's are), then the two are summed
        g = g if exact else _in_format(g, t.fmt, node)
        total = (prev[1] if len(prev) == 3 else _widened(prev[1], t.fmt, g.dtype.type)) + g
    if keep_wide and t.fmt is _FLOAT16 and t._node is not None and _HALF_KERNELS and type(total) is np.ndarray \
            and total.dtype is _F32 and not STATE.monitors:
        store[id(t)] = (t, total if exact and prev is None else _half_values(total), True)
        return
    rounded = _round(total, t.fmt, node.op.name, node.layer, "backward") if node is not None \
        else round_to(total, t.fmt)
    store[id(t)] = (t, rounded)


def _owned(g, given):
    """g for a leaf's new .grad, or a copy where g is a view or already another leaf's (add passes one array to
    both inputs): each .grad owns its array, as PyTorch's AccumulateGrad clones a shared gradient, so that an
    in-place update of one (GradScaler's unscale_) changes no other."""
    if type(g) is np.ndarray and (g.base is not None or id(g) in given or not g.flags.writeable):
        g = g.copy()
    given.add(id(g))
    return g


def _in_format(g, fmt, node):
    """Gradient values g rounded into fmt, kept in g's dtype (the gradient a framework holds as a tensor of fmt)."""
    if fmt.is_float32 and g.dtype == np.float32:
        return g
    return _widened(_round(g, fmt, node.op.name, node.layer, "backward") if node is not None else round_to(g, fmt),
                    fmt, g.dtype.type)


class _Staged:
    """The namespace of a `staged` op's gradient: xp, and stage(v), v rounded into the op's output format (its
    values, in v's dtype), where PyTorch's gradient formula stores an intermediate tensor."""

    def __init__(self, xp, fmt, node):
        self._xp, self._fmt, self._node = xp, fmt, node

    def __getattr__(self, name):
        return getattr(self._xp, name)

    def stage(self, v):
        return _in_format(self._xp.asarray(v), self._fmt, self._node)


def _topological(*roots):
    """Every tensor the roots depend on through tensors that require gradients: the leaves, then the others in the
    order their ops ran. The backward walks it from the end, latest op first, as PyTorch's engine does (its ready
    queue takes the latest-made node); so a tensor's gradients arrive, and are summed, in PyTorch's order."""
    leaves, made, seen, stack = [], [], set(), list(roots)
    while stack:
        t = stack.pop()
        if id(t) not in seen:
            seen.add(id(t))
            if t._node is None:
                leaves.append(t)
            else:
                made.append(t)
                stack.extend([a for a in t._node.inputs if isinstance(a, Tensor) and a.requires_grad])
    made.sort(key=_made_at)
    return leaves + made


def _made_at(t):
    return t._node.seq


FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
         "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
         "if you need to access saved tensors after calling backward.")


def backward(root, gradient=None, retain_graph=None):
    """Reverse-mode autodiff from `root`; leaves that require grad get .grad in their own format.

    As in PyTorch, the pass frees the values that gradients read (unless retain_graph): a second pass
    through an op that needs them raises before any gradient changes.
    """
    if not root.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn (backward() "
                           "on a tensor that no input with requires_grad=True reaches, or one computed under "
                           "no_grad())")
    xp = array_module(root._data)        # the seed lives where the graph does: a GPU graph gets a GPU seed
    dtype = _exact_in(root.fmt)
    if gradient is None:
        if root._data.size != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs (backward() on a tensor of "
                               f"shape {tuple(root.shape)} needs a gradient argument of that shape)")
        gradient = xp.ones(root.shape, dtype)
    if not isinstance(gradient, Tensor) and not _real(xp.asarray(gradient).dtype):
        raise TypeError(f"backward(): gradient must be a tensor or an array of real numbers, got {gradient!r}")
    g0 = _wide(gradient, dtype) if isinstance(gradient, Tensor) else xp.asarray(gradient, dtype=dtype)
    if g0.shape != root.shape:
        raise ValueError(f"backward(): gradient of shape {g0.shape} does not match the tensor's shape {root.shape}")
    order = _topological(root)
    if any(t._node is not None and t._node.freed for t in order):
        raise RuntimeError(FREED)
    store = {}
    _accumulate(store, root, g0)
    leaves = []
    with np.errstate(all="ignore"):
        _backward(order, store, leaves)
    if not retain_graph:
        for t in order:
            if t._node is not None and t._node.op.saves:
                t._node.freed = True
    for m in STATE.monitors:
        m.weight_gradients(leaves)


def _backward(order, store, leaves, collect=None):
    """The reverse sweep: pop each tensor's gradient, pass it to its inputs. Leaves get .grad (and are listed in
    `leaves`), unless `collect` = (wanted ids, found dict) asks for the gradients of the wanted tensors instead:
    found[id] = the gradient's storage, and no .grad changes (tf.GradientTape)."""
    monitors = STATE.monitors
    products = bool(FLOAT32_PRODUCTS)
    given = set()               # ids of the arrays handed to leaves as .grad in this pass
    for t in reversed(order):
        entry = store.pop(id(t), None)
        if entry is None:           # several roots: a tensor only some of them reach, and none of those did yet
            continue
        g_stored = entry[1]
        for m in monitors:
            m.gradient(t, widen(g_stored, t.fmt))
        node = t._node
        if collect is not None and id(t) in collect[0]:
            collect[1][id(t)] = g_stored if len(entry) != 3 else round_to(g_stored, t.fmt)   # exact: rounded values
        if node is None:
            if collect is None:
                t.grad = t._like(_owned(g_stored, given), t.fmt) if t.grad is None else \
                    t._like(round_to(t.grad.float32() + widen(g_stored, t.fmt), t.fmt), t.fmt)
                leaves.append(t)
            continue
        op, inputs, params = node.op, node.inputs, node.params
        if op is _CAST:         # the gradient casts back: g itself, rounded into the input's format (one per variable)
            a = inputs[0]
            if len(entry) == 3 and a.fmt is _FLOAT32 and id(a) not in store:
                store[id(a)] = (a, g_stored)    # autocast's float16 copy of a float32 weight: its values, exactly
            elif a.requires_grad:
                _accumulate(store, a, g_stored if len(entry) == 3 else _widened(g_stored, t.fmt, _exact_in(t.fmt)),
                            node, True)
            continue
        dtype = _exact_in(t.fmt)
        xp = np if type(g_stored) is np.ndarray else array_module(g_stored)
        # An op that saves nothing (add, cast, reshape...) reads no values of its output: skip widening it.
        g = g_stored if len(entry) == 3 else _widened(g_stored, t.fmt, dtype)
        ans = _wide(t, dtype) if op.saves else t._data
        if op.product is not None and xp is not np and node.acc is None and t.fmt == _input_format(inputs):
            xp = _gpu().tensor_cores(xp, t.fmt)        # g holds the output's format, the factors' own
        wide = [_wide(a, dtype) for a in inputs] if xp is np or type(xp) is not _gpu_cores() else \
            [xp.operand(a, _wide) for a in inputs]
        if node.fp8 is not None:    # a GEMM under fp8_autocast: gradients from its fp8 factors (minifp._fp8)
            wanted = [isinstance(a, Tensor) and a.requires_grad for a in inputs]
            for a, gi in zip(inputs, _fp8.backward(node, xp, g, ans, wide, wanted)):
                if gi is not None:
                    _accumulate(store, a, _unbroadcast(xp, xp.asarray(gi, dtype), a._data.shape), node, True)
            continue
        g_in, wide_in = g, wide
        if products and op.product is not None:      # the gradient products run on the same cores
            g_in, *wide_in = _products(op, t.fmt, t.device, [g, *wide], n=3)
        if node.acc is not None and op.accumulates:     # and accumulate as the forward's did
            xp = accumulating(xp, node.acc, _input_format([t, *inputs]))
        if op.staged and not t.fmt.is_float32 and (op.staged is True or op.staged == t.device):
            xp = _Staged(xp, t.fmt, node)
        for i, a in enumerate(inputs):
            if isinstance(a, Tensor) and a.requires_grad:
                args = (g_in, ans, *wide_in) if i < 2 else (g, ans, *wide)
                gi = (op.grad(i) if op.variadic else op.grads[i])(xp, *args, **params)
                if type(gi) is not np.ndarray or gi.dtype.type is not dtype:
                    gi = xp.asarray(gi, dtype)
                if gi.shape != a._data.shape and gi is not g and gi is not g_in:   # (g itself: values of t.fmt)
                    gi = _in_format(gi, t.fmt, node)    # PyTorch's gradient is a tensor of the op's format first
                _accumulate(store, a, _unbroadcast(xp, gi, a._data.shape), node, True, op.selects and a.fmt is t.fmt)
    _fp8.finish_backward()      # the output-gradient scales of the GEMMs this pass went through roll once


# -- the public face of the registry: functions, methods and operators -------------------


def _signature(op, method):
    """The op's public signature: its inputs, then its parameters (positional too, as NumPy's)."""
    params = [p.replace(kind=p.POSITIONAL_OR_KEYWORD) for p in list(inspect.signature(op.forward).parameters.values())[1:]]
    if method:
        params[0] = params[0].replace(name="self")
    return inspect.Signature(params)


def _public(op, method=False):
    """The function (or Tensor method) that applies `op`, with the op's signature and doc."""
    sig = _signature(op, method)
    names = list(sig.parameters)
    n, variadic = len(op.inputs), op.variadic
    param_names = frozenset(names[n:])

    def fn(*args, **kwargs):
        if len(args) == n and not variadic and kwargs.keys() <= param_names:     # the common call, fast
            return apply(op.name, *args, **kwargs)
        try:
            values = sig.bind(*args, **kwargs).arguments
        except TypeError as e:
            raise TypeError(f"{op.name}{sig}: {e}") from None
        inputs = list(values[names[0]]) if variadic else [values.get(k) for k in names[:n]]   # a bias left out: None
        return apply(op.name, *inputs, **{k: values[k] for k in names[n:] if k in values})

    fn.__name__, fn.__doc__, fn.__signature__ = op.name, op.doc, sig
    fn.__qualname__ = f"Tensor.{op.name}" if method else op.name
    return fn


def functions():
    """{name: public function} for every op the registry makes one of."""
    return {name: _public(op) for name, op in OPS.items() if op.function}


def _operator(name, reflected):
    if reflected:
        return lambda self, other: apply(name, other, self)
    return lambda self, *other: apply(name, self, *other)


for _op in OPS.values():
    if _op.method:
        setattr(Tensor, _op.name, _public(_op, method=True))
    if _op.operator:
        setattr(Tensor, f"__{_op.operator}__", _operator(_op.name, False))
        if len(_op.inputs) == 2 and not _op.returns_bool:
            setattr(Tensor, f"__r{_op.operator}__", _operator(_op.name, True))

"""The tensor: an array whose every value is representable in its format, with its place in the graph.

A tensor holds its values in the format's storage dtype (`_data`). The speed module may keep the same values as
float32 beside them (`_float32`), where the next op or the backward would widen the storage right back; only the
engine writes either, and every write of `_data` clears `_float32`. Ops, operators and most methods are attached
by minifp/_public.py, from the op registry.
"""
from __future__ import annotations

import numpy as np

from ._formats import _BY_STORAGE, as_format, float32
from ._backend import array_module, to_numpy
from ._rounding import round_to, widen
from ._seams import SEAMS, seam
from ._memory import WATCHED, note as _note_storage

__all__ = ["Tensor", "tensor", "real", "values", "Place", "CPU", "CUDA", "place"]

_F32 = np.dtype(np.float32)


class Place(str):
    """Where a tensor's storage lives: "cpu", or "cuda" (a GPU's memory through CuPy, or the host's emulating one).
    A str that compares and hashes as its name, with the type, index and printing of torch.device."""

    def __new__(cls, kind, index=None):
        place = super().__new__(cls, kind)
        place.index = index
        return place

    type = property(str.__str__)        # the plain name

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}'" + (")" if self.index is None else f", index={self.index})")

    def __reduce__(self):
        return Place, (self.type, self.index)


CPU, CUDA = Place("cpu"), Place("cuda", 0)
_PLACES = {"cpu": CPU, "cuda": CUDA}


def place(name):
    """The Place named `name` ("cpu", "cuda" or a Place)."""
    found = _PLACES.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"device: expected 'cpu' or 'cuda', got {name!r}")
    return found


class Tensor:
    """An array whose every value is representable in its format, with an optional gradient."""

    __slots__ = ("_data", "fmt", "requires_grad", "grad", "_node", "name", "device", "_float32", "__weakref__")
    __array_priority__ = 1000   # numpy_array * tensor -> Tensor.__rmul__

    def __init__(self, data, fmt, requires_grad=False, device=None):
        """A tensor over raw storage `data`: the format's storage dtype holding only the format's values."""
        fmt = None if fmt is None else as_format(fmt)
        check_storage(data, fmt)
        self._data, self.fmt, self._node, self.requires_grad, self.grad, self.name = data, fmt, None, requires_grad, \
            None, None
        self._float32 = None
        self.device = place(device) if device else device_of(data)
        if WATCHED and self.device in WATCHED:
            _note_storage(data, self.device)

    @classmethod
    def _wrap(cls, data, fmt, requires_grad=False, node=None, device=None):
        """The engine's unchecked constructor, for arrays it has just rounded into fmt itself."""
        t = cls.__new__(cls)
        t._data, t.fmt, t._node, t.requires_grad, t.grad, t.name, t._float32 = data, fmt, node, requires_grad, None, \
            None, None
        t.device = device or device_of(data)        # (a Place: the engine hands on tensors' own, make() checks others)
        if WATCHED and t.device in WATCHED:       # (torch.cuda's memory statistics: see _memory.py)
            _note_storage(data, t.device)
        return t

    @classmethod
    def op_error(cls, name, shapes, error):
        """The exception for an op `name` whose array math refused its inputs (shapes: each input's, None for a
        number) with `error`: the error's type, naming the op and the shapes. A face's tensor class phrases it as
        its framework does."""
        listed = ", ".join("scalar" if s is None else str(s) for s in shapes)
        return type(error)(f"{name} (inputs of shapes {listed}): {error}")

    def _like(self, data, fmt, requires_grad=False):
        """A new tensor of this one's result class and device over `data`, already in `fmt` (None: integers, bools)."""
        return result_class(type(self))._wrap(data, fmt, requires_grad, None, self.device)

    data = property(lambda self: self._data, doc="The raw storage array (read-only: change values with assign).")

    def assign(self, values):
        """Replace the values in place by `values` rounded into this tensor's format; the shape must match."""
        new = values_for(self, values)
        if new.shape != self.shape:
            raise ValueError(f"assign(): values of shape {new.shape} for a tensor of shape {self.shape}; "
                             f"the shapes must match")
        self._data, self._float32 = new, None
        if WATCHED and self.device in WATCHED:
            _note_storage(new, self.device)
        return self

    # -- views of the data ------------------------------------------------------
    shape = property(lambda self: self._data.shape)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    nbytes = property(lambda self: self._data.nbytes)
    dtype = property(lambda self: self.fmt if self.fmt is not None else self._data.dtype)
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
        """The values widened to a float32 array (exact; the storage itself, or the values kept beside it, where it
        has them: not to be written into)."""
        data = self._data
        if data.dtype is _F32:
            return data
        if self._float32 is not None:
            return self._float32
        return SEAMS.widened(data, self.fmt) if self.fmt is not None else data.astype(np.float32)

    def item(self):
        """The one value of a one-element tensor, as a Python number."""
        if self._data.size != 1:
            raise ValueError(f"item() needs a tensor of one element, this one has shape {self.shape}")
        return to_numpy(self._data if self.fmt is None else self.float32()).reshape(-1)[0].item()

    def detach(self):
        """The same values, cut from the graph."""
        return self._like(self._data, self.fmt)

    def __repr__(self):
        vals = np.array2string(to_numpy(self.float32()) if self.fmt else to_numpy(self._data), precision=6,
                               separator=", ")
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor({vals}, dtype={self.dtype}{grad})"

    __hash__ = object.__hash__


@seam
def values(t):
    """What ops compute with: the float32 values of a float tensor of at most float32's width (exact)."""
    data = t._data
    return data if data.dtype is _F32 else SEAMS.widened(data, t.fmt)


def result_class(cls):
    """The class of results computed from tensors of class cls: itself, unless it names another (a face's
    Parameter makes plain tensors, as PyTorch's does)."""
    return cls.__dict__.get("_result_class", cls)


def device_of(data):
    """Where an array lives: CPU for host arrays, CUDA for CuPy's."""
    return CPU if type(data) is np.ndarray or isinstance(data, np.ndarray) else CUDA


def check_storage(data, fmt):
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


def values_for(t, values):
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
        return arr.copy(order="K")      # (in its memory order, as round_to keeps it)
    if not real(arr.dtype):
        raise TypeError(f"assign(): values must be real numbers (float, int or bool), got dtype {arr.dtype}")
    return round_to(arr, t.fmt)         # any real dtype, storage dtypes and either byte order rounded once


def take(t, values):
    """Replace t's values by `values`, a float32 array the caller has just computed and hands over: a float32
    tensor takes it as it is (no copy), any other format rounds it once (assign)."""
    data = t._data
    if t.fmt is not None and t.fmt.is_float32 and type(values) is type(data) and values.dtype is _F32 \
            and values.shape == data.shape:
        t._data, t._float32 = values, None
        if WATCHED and t.device in WATCHED:
            _note_storage(values, t.device)
    else:
        t.assign(values)


def real(dtype):
    """Whether arrays of dtype hold real numbers: NumPy's floats, integers and bools, or a format's storage."""
    return dtype.kind in "fiub" or dtype in _BY_STORAGE


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
    if not real(arr.dtype):
        raise TypeError(f"tensor(): data must be real numbers (float, int or bool), got dtype {arr.dtype}"
                        + ("; take .real or abs() of complex data first" if arr.dtype.kind == "c" else ""))
    if dtype is None:
        if arr.dtype.kind in "biu":
            if requires_grad:
                raise TypeError(f"tensor(): only floating-point tensors can require gradients, not {arr.dtype}; "
                                f"pass dtype= a float format")
            return Tensor._wrap(arr.copy(), None)
        fmt = as_format(arr.dtype) if arr.dtype in _BY_STORAGE else float32
    else:
        fmt = as_format(dtype, "tensor(): dtype")
    if arr.dtype == fmt.storage and (fmt.native or fmt.is_float32):
        return Tensor._wrap(arr.copy(), fmt, requires_grad)
    return Tensor._wrap(round_to(arr, fmt), fmt, requires_grad)

"""Keras's tensors over the engine's: dtypes as strings, eager tensors, convert_to_tensor.

A `minifp.keras` Tensor is an engine tensor (every op still goes through the one dispatcher, which keeps
the class of its inputs); this module adds what Keras code reads: `x.dtype` is a DType, a str subclass
("float16" == x.dtype, x.dtype.name == "float16"), and `x.shape` is a tuple.
"""
from __future__ import annotations

import numpy as np

from .. import engine
from ..engine import make, rewrap, storage, Tensor as _EngineTensor, tensor as _engine_tensor, to_numpy

__all__ = ["DType", "as_dtype", "format_of", "is_float_dtype", "Tensor", "convert_to_tensor", "is_tensor"]

# Keras's dtype names -> minifp formats (None: integer and bool dtypes, kept as NumPy arrays).
_FLOATS = {"float32": engine.float32, "float16": engine.float16, "bfloat16": engine.bfloat16,
           "float8_e4m3fn": engine.float8_e4m3, "float8_e5m2": engine.float8_e5m2,
           "float64": engine.float32}        # minifp has no float64 format: float64 data becomes float32
_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool")
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int64"}
_BY_FORMAT = {engine.float32: "float32", engine.float16: "float16", engine.bfloat16: "bfloat16",
              engine.float8_e4m3: "float8_e4m3fn", engine.float8_e5m2: "float8_e5m2"}
VALID = ", ".join(list(_FLOATS) + list(_INTS))


class DType(str):
    """A dtype as Keras 3 spells it: a string that also has `.name` (as tf.DType has)."""

    __slots__ = ()

    name = property(lambda self: str(self))
    is_floating = property(lambda self: str(self) in _FLOATS)
    is_integer = property(lambda self: str(self) in _INTS[:-1])

    def __repr__(self):
        return repr(str(self))


def as_dtype(x, arg="dtype"):
    """The DType named by x: a name, a DType, a minifp Format, a NumPy dtype or a Python type."""
    if isinstance(x, DType):
        return x
    if x is float:
        return DType("float32")
    if x is int:
        return DType("int64")
    if x is bool:
        return DType("bool")
    name = getattr(x, "name", None) if not isinstance(x, str) else x
    if isinstance(x, engine.Format):
        name = _BY_FORMAT.get(x, x.name)
    elif not isinstance(x, str) and not isinstance(name, str):
        try:
            name = np.dtype(x).name
        except TypeError:
            name = None
    if isinstance(name, str):
        name = _ALIASES.get(name, name)
        if name in _FLOATS or name in _INTS or name in engine.FORMATS:
            return DType(name)
    raise ValueError(f"Invalid dtype: {x!r}. Valid dtypes: {VALID}")


def format_of(dtype):
    """The minifp Format of a floating dtype, None for integer and bool dtypes."""
    if isinstance(dtype, str) and dtype in _FLOATS:     # a float's name: layers ask on every call
        return _FLOATS[dtype]
    name = str(as_dtype(dtype))
    if name in _INTS:           # Keras's integers, even where minifp has a format of that name (int8)
        return None
    return _FLOATS.get(name) or engine.FORMATS.get(name)


def is_float_dtype(dtype):
    """Whether dtype names a floating-point type."""
    return format_of(dtype) is not None


class Tensor(_EngineTensor):
    """An eager tensor of minifp.keras: `.dtype` is a DType, `.shape` a tuple of ints."""

    # _keras_logits: set on softmax and sigmoid outputs (losses then use the logits, as Keras's); _keras_mask: the
    # mask a layer's output carries (Keras's attribute of that name), read by the next layer's call
    __slots__ = ("_keras_logits", "_keras_mask")

    @property
    def dtype(self):
        return DType(_BY_FORMAT.get(self.fmt, self.fmt.name) if self.fmt is not None else storage(self).dtype.name)

    def numpy(self):
        """The values as a host NumPy array (float16, bfloat16, float32 ... storage)."""
        return to_numpy(storage(self))

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __format__(self, spec):
        """A 0-d tensor formats as its number (TensorFlow hands the format to the NumPy value)."""
        return format(self.numpy()[()], spec) if self.ndim == 0 else super().__format__(spec)

    def __repr__(self):
        vals = np.array2string(to_numpy(self.float32()) if self.fmt else to_numpy(storage(self)), precision=6,
                               separator=", ")
        return f"<Tensor shape={self.shape}, dtype={self.dtype}, numpy=\n{vals}>"


def is_tensor(x):
    """Whether x is a tensor (of this face or the engine)."""
    return isinstance(x, _EngineTensor)


def convert_to_tensor(x, dtype=None):
    """x as a minifp.keras Tensor, in `dtype` when given (values rounded once); tensors of dtype stay."""
    if dtype is not None:
        dtype = as_dtype(dtype)
    if isinstance(x, _EngineTensor):
        if dtype is None or str(dtype) == str(as_dtype(x.fmt if x.fmt is not None else storage(x).dtype)):
            return x if isinstance(x, Tensor) else rewrap(x, Tensor)
        fmt = format_of(dtype)
        if fmt is not None and x.fmt is not None:
            return _as_face(x.astype(fmt))
        x = x.float32() if x.fmt is not None else storage(x)
    arr = np.asarray(x) if not hasattr(x, "__cuda_array_interface__") else x
    if dtype is None:
        if arr.dtype.kind in "biu":
            return make(Tensor, arr.copy(), None)
        fmt = engine.format_of(arr.dtype) or engine.float32
    else:
        fmt = format_of(dtype)
        if fmt is None:
            return make(Tensor, arr.astype(str(dtype)), None)
    return rewrap(_engine_tensor(arr, dtype=fmt), Tensor)


def _as_face(t):
    """An engine tensor seen as this face's Tensor (same storage and graph node)."""
    if isinstance(t, Tensor):
        return t
    return rewrap(t, Tensor)

"""TensorFlow's dtypes: `tf.float16`, `tf.float32`, ... as the Keras face's DType (one dtype type for both doors).

A `tf.DType` is a `minifp.keras` DType (a str subclass: `tf.float16 == "float16"`, `.name == "float16"`) that
prints as TensorFlow does (`tf.float16`) and has TensorFlow's attributes (`is_floating`, `as_numpy_dtype`, ...).
minifp has no float64 format: `tf.float64` and `tf.double` are `tf.float32` (as `torch.float64` in minifp.torch).
"""
from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

from .. import engine
from ..keras import _tensor as _K

__all__ = ["DType", "as_dtype", "format_of", "float16", "half", "float32", "float64", "double", "bfloat16",
           "int8", "int16", "int32", "int64", "uint8", "bool", "numpy_dtype"]

_NUMPY = {"float16": np.float16, "float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "int8": np.int8,
          "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}


class DType(_K.DType):
    """A TensorFlow dtype: equal to its name ("float16"), printed as `tf.float16`."""

    __slots__ = ()

    def __repr__(self):
        return f"tf.{self.name}"

    is_floating = property(lambda self: self.name in ("float16", "float32", "bfloat16"))
    is_integer = property(lambda self: self.name in ("int8", "int16", "int32", "int64", "uint8"))
    is_unsigned = property(lambda self: self.name in ("uint8", "bool"))
    is_bool = property(lambda self: self.name == "bool")
    as_numpy_dtype = property(lambda self: _NUMPY[self.name])
    base_dtype = property(lambda self: self)
    size = property(lambda self: np.dtype(_NUMPY[self.name]).itemsize)

    @property
    def max(self):
        """The largest finite value of the dtype."""
        return engine.finfo(engine.as_format(self.name)).max if self.is_floating else \
            builtins.bool(True) if self.is_bool else int(np.iinfo(_NUMPY[self.name]).max)

    @property
    def min(self):
        """The most negative finite value of the dtype."""
        return -self.max if self.is_floating else \
            builtins.bool(False) if self.is_bool else int(np.iinfo(_NUMPY[self.name]).min)


float16 = DType("float16")
float32 = DType("float32")
bfloat16 = DType("bfloat16")
int8, int16, int32, int64, uint8 = (DType(n) for n in ("int8", "int16", "int32", "int64", "uint8"))
bool = DType("bool")     # noqa: A001  (TensorFlow's name: tf.bool)
half, float64, double = float16, float32, float32          # no float64 format in minifp: see the module doc
DTYPES = {d.name: d for d in (float16, float32, bfloat16, int8, int16, int32, int64, uint8, bool)}
_ALIASES = {"half": float16, "float64": float32, "double": float32, "float": float32}
_VALID = ", ".join(f"tf.{n}" for n in DTYPES)


def as_dtype(x, arg="dtype"):
    """The tf DType named by x: a DType or its name, a NumPy dtype, a minifp Format, or Python's float/int/bool."""
    if isinstance(x, DType):
        return x
    if x is builtins.float:
        return float32
    if x is builtins.int:
        return int32            # TensorFlow: Python ints are int32
    if x is builtins.bool:
        return bool
    if isinstance(x, str):
        name = x
    elif isinstance(x, engine.Format):
        name = x.name
    else:
        try:
            name = np.dtype(x).name
        except TypeError:
            name = None
    found = DTYPES.get(name) or _ALIASES.get(name)
    if found is None:
        raise TypeError(f"{arg}: cannot convert {x!r} to a dtype; valid dtypes: {_VALID} (tf.float64 and "
                        f"tf.double are tf.float32 in minifp)")
    return found


def format_of(x):
    """The minifp Format of a floating dtype, None for integer and bool dtypes."""
    d = as_dtype(x)
    return engine.as_format(d.name) if d.is_floating else None


def numpy_dtype(x):
    """The NumPy storage dtype of a dtype."""
    return _NUMPY[as_dtype(x).name]

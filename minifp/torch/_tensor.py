"""STUB of the lead's face core (minifp.torch.Tensor and dtypes), only so that torch-data's code can be tested
before the core is on main; the lead's files replace this one when main is merged."""
import builtins

import ml_dtypes
import numpy as np

import minifp
from minifp import _formats as F


class dtype:
    """A PyTorch dtype: a name, a minifp Format (None for integers) and the NumPy dtype of its storage."""

    def __init__(self, name, fmt, numpy):
        self.name, self.fmt, self.numpy = name, fmt, np.dtype(numpy)

    is_floating_point = property(lambda self: self.fmt is not None)

    def __repr__(self):
        return f"torch.{self.name}"


float32 = dtype("float32", F.float32, np.float32)
float16 = dtype("float16", F.float16, np.float16)
bfloat16 = dtype("bfloat16", F.bfloat16, ml_dtypes.bfloat16)
float8_e4m3fn = dtype("float8_e4m3fn", F.float8_e4m3, ml_dtypes.float8_e4m3fn)
float8_e5m2 = dtype("float8_e5m2", F.float8_e5m2, ml_dtypes.float8_e5m2)
int64 = dtype("int64", None, np.int64)
int32 = dtype("int32", None, np.int32)
int16 = dtype("int16", None, np.int16)
int8 = dtype("int8", None, np.int8)
uint8 = dtype("uint8", None, np.uint8)
bool = dtype("bool", None, np.bool_)
DTYPES = (float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, int64, int32, int16, int8, uint8, bool)
_BY_FMT = {d.fmt: d for d in DTYPES if d.fmt is not None}
_BY_NUMPY = {d.numpy: d for d in DTYPES if d.fmt is None}


def as_dtype(x):
    """The torch dtype of a dtype, Format or name."""
    if isinstance(x, dtype):
        return x
    if isinstance(x, str) and x in {d.name for d in DTYPES}:
        return next(d for d in DTYPES if d.name == x)
    fmt = F.as_format(x)
    return _BY_FMT.get(fmt, fmt)


def format_of(d):
    """The minifp Format of a dtype (None for integer dtypes)."""
    d = as_dtype(d)
    return d if isinstance(d, F.Format) else d.fmt


class Tensor(minifp.Tensor):
    """A minifp tensor with PyTorch spellings (stub: dtype only)."""

    __slots__ = ()
    dtype = property(lambda self: _BY_FMT.get(self.fmt, self.fmt) if self.fmt is not None
                     else _BY_NUMPY[self._data.dtype])


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A face tensor (stub)."""
    if isinstance(data, minifp.Tensor):
        data = data.numpy()
    arr = np.asarray(data)
    if dtype is not None and format_of(dtype) is None:
        return Tensor._wrap(arr.astype(as_dtype(dtype).numpy), None)
    if dtype is None and arr.dtype.kind in "biu":
        return Tensor._wrap(arr.astype(np.int64) if arr.dtype.kind in "iu" and isinstance(data, (list, tuple, int))
                            else arr.copy(), None)
    t = minifp.tensor(arr, None if dtype is None else format_of(dtype), requires_grad=requires_grad)
    return Tensor._wrap(t._data, t.fmt, requires_grad)


def from_numpy(a):
    return tensor(a)


as_tensor = from_numpy


def stack(tensors, dim=0):
    parts = [minifp.apply("reshape", t, shape=t.shape[:dim] + (1,) + t.shape[dim:]) for t in tensors]
    return minifp.apply("concatenate", *parts, axis=dim)


def manual_seed(seed):
    minifp.manual_seed(seed)


builtins_bool = builtins.bool

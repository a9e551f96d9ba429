"""torch.<function>: PyTorch's free functions, each a call of the engine's op or of a Tensor method."""
from __future__ import annotations

import numpy as np

from ..engine import apply, finfo as _finfo, storage, Tensor as _EngineTensor, to_numpy
from ._tensor import (Tensor, _dim, _integral, _numpy_result, _type_name, _weak_out, as_dtype, format_of, matmul,
                      tensor)

__all__ = ["iinfo", "is_floating_point", "is_nonzero", "cat", "concat", "stack", "where", "mm", "bmm", "add", "sub", "mul", "div", "neg", "pow", "exp", "log",
           "sqrt", "tanh", "sigmoid", "relu", "abs", "sum", "mean", "max", "min", "argmax", "argmin", "softmax",
           "log_softmax", "clamp", "clip", "flatten", "reshape", "transpose", "permute", "unsqueeze", "squeeze",
           "allclose", "equal", "isfinite", "isnan", "isinf", "finfo", "numel", "t"]


def _t(x):
    return x if isinstance(x, _EngineTensor) else tensor(x)


def _tensor_list(tensors, fn):
    """cat's and stack's tensors: a sequence of tensors only, as PyTorch takes them."""
    if isinstance(tensors, _EngineTensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{'Tensor' if isinstance(tensors, _EngineTensor) else type(tensors).__name__}")
    for i, x in enumerate(tensors):
        if not isinstance(x, _EngineTensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    return list(tensors)


def cat(tensors, dim=0):
    """Tensors joined along dim; mixed float dtypes promote (PyTorch's cat). 1-D empty tensors join whatever the
    others' shape, as PyTorch's legacy rule says."""
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if not x.ndim:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    shaped = [x for x in tensors if x.shape != (0,)]
    if not shaped:
        return apply("concatenate", *tensors, axis=0)
    first = shaped[0]
    axis = _dim(dim, first.ndim)
    empty = first.shape[:axis] + (0,) + first.shape[axis + 1:]
    for i, x in enumerate(tensors):
        if x.shape == (0,):
            continue
        if x.ndim != first.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {first.ndim} and {x.ndim}")
        for d, (a, b) in enumerate(zip(first.shape, x.shape)):
            if d != axis and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {axis}. Expected size {a} but "
                                   f"got size {b} for tensor number {i} in the list.")
    # (empty 1-D tensors take part as empty slices: in the dtype's promotion, and each gets its empty gradient)
    return apply("concatenate", *[x.reshape(empty) if x.shape == (0,) else x for x in tensors], axis=axis)


concat = cat


def stack(tensors, dim=0):
    """Tensors of one shape joined along a new dim."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, x in enumerate(tensors):
        if x.shape != tensors[0].shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                               f"entry 0 and {list(x.shape)} at entry {i}")
    d = _dim(dim, tensors[0].ndim + 1)
    return cat([x.unsqueeze(d) for x in tensors], dim=d)


def where(condition, input=None, other=None):
    """input where condition holds, else other; with the condition alone, its nonzero positions (a tuple)."""
    condition = _t(condition)
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if storage(condition).dtype not in (np.bool_, np.uint8):
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_type_name(condition)}")
    if _integral(input, other):         # integers and bools keep their dtype (PyTorch's promotion)
        keep = to_numpy(storage(condition)).astype(bool)
        return _numpy_result(lambda a, b: np.where(keep, a, b), input, other, like=condition)
    return apply("where", condition, input, other, _out=_weak_out((input, other)))


def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"self must be a matrix" if input.ndim != 2 else "mat2 must be a matrix")
    return matmul(input, mat2)


def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if input.ndim != 3 else "batch2 must be a 3D tensor")
    if (input.shape[0], input.shape[2]) != tuple(mat2.shape[:2]):       # (bmm does not broadcast)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{input.shape[0]}, "
                           f"{input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return matmul(input, mat2)


def _method(name):
    def fn(input, *args, **kwargs):
        return getattr(_t(input), name)(*args, **kwargs)
    fn.__name__, fn.__doc__ = name, f"torch.{name}(input, ...): input.{name}(...)."
    return fn


add, sub, mul, div = (lambda a, b, n=n: apply(n, a, b, _out=_weak_out((a, b))) for n in ("add", "sub", "mul", "div"))
(neg, pow, exp, log, sqrt, tanh, sigmoid, relu, abs, sum, mean, max, min, argmax, argmin, softmax, log_softmax,
 clamp, flatten, reshape, transpose, permute, unsqueeze, squeeze, isfinite, isnan, isinf, numel, t) = (
    _method(n) for n in ("neg", "pow", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "sum", "mean", "max",
                         "min", "argmax", "argmin", "softmax", "log_softmax", "clamp", "flatten", "reshape",
                         "transpose", "permute", "unsqueeze", "squeeze", "isfinite", "isnan", "isinf", "numel", "t"))
clip = clamp


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.allclose(input.float32(), other.float32(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other):
    return input.shape == other.shape and bool(np.array_equal(input.float32(), other.float32()))


class finfo:
    """torch.finfo(dtype): bits, eps, max, min, tiny, smallest_normal, resolution of a floating dtype."""

    def __init__(self, type=None):
        fmt = format_of(type if type is not None else as_dtype("float32"))
        if fmt is None:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            f"'{type}'")
        info = _finfo(fmt)
        self.dtype = as_dtype(fmt)
        self.bits, self.eps, self.max, self.min = info.bits, info.eps, info.max, info.min
        self.tiny = self.smallest_normal = info.tiny
        self.resolution = 10.0 ** -int(np.floor(fmt.man_bits * np.log10(2)))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={str(self.dtype)[6:]})")


class iinfo:
    """torch.iinfo(dtype): bits, max, min of an integer (or bool) dtype."""

    def __init__(self, type):
        d = as_dtype(type)
        if format_of(d) is not None:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(d.numpy) if d.numpy != np.bool_ else np.iinfo(np.uint8)
        self.dtype, self.bits, self.max, self.min = str(d)[6:], info.bits, int(info.max), int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def is_floating_point(input):
    """Whether input's dtype is a floating one."""
    return input.is_floating_point()


def is_nonzero(input):
    """Whether the one value of a one-element tensor is not zero."""
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if input.numel() == 0 else
                           "Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


Tensor.add, Tensor.sub, Tensor.mul, Tensor.div = add, sub, mul, div
Tensor.mm, Tensor.bmm = mm, bmm

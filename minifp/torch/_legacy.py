"""PyTorch's legacy constructors, which older scripts still call: torch.Tensor(data) or torch.Tensor(*sizes), and
the tensor types (torch.FloatTensor, torch.LongTensor, torch.cuda.HalfTensor, ...) as constructors, as classes
for isinstance and as x.type(...)'s argument."""
from __future__ import annotations

import numbers

from ..engine import Tensor as _EngineTensor
from ._tensor import _CPP_NAMES, Size, Tensor, _TensorType, _default, _type_name, as_dtype, empty, tensor

__all__ = ["TYPES", "CUDA_TYPES", "construct"]


def construct(dtype, device, /, *args, **kwargs):
    """A tensor as torch.<Type>Tensor(...) makes it: sizes give a new (zero-filled) tensor, a sequence its values,
    a tensor itself (of that dtype only), nothing an empty one."""
    device = kwargs.pop("device", device)
    if kwargs:
        raise TypeError(f"new() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if len(args) == 1 and isinstance(args[0], _EngineTensor):
        if dtype is not None and args[0].dtype != dtype:
            raise TypeError(f"expected {_options(dtype, device)} (got {_options(args[0].dtype, args[0].device)})")
        return args[0].detach()
    if not args:
        return empty(0, dtype=dtype or _default[0], device=device)
    if len(args) == 1 and isinstance(args[0], Size) or all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        return empty(*args, dtype=dtype or _default[0], device=device)
    if len(args) == 1 and not isinstance(args[0], (numbers.Number, str)):
        return tensor(args[0], dtype=dtype or _default[0], device=device)
    got = type(args[0]).__name__ if len(args) == 1 else "several arguments"
    raise TypeError(f"new(): data must be a sequence (got {got})")


def _options(dtype, device):
    """PyTorch's words for a dtype on a device (its C++ TensorOptions)."""
    name = _type_name(empty(0, dtype=dtype))
    return (f"TensorOptions(dtype={_CPP_NAMES.get(name, name)}, device={device}, layout=Strided, requires_grad=false "
            f"(default), pinned_memory=false (default), memory_format=(nullopt))")


class _LegacyType(type):
    """torch.FloatTensor and its kin: each a dtype on a device, which constructs and is checked against."""

    def __call__(cls, *args, **kwargs):
        return construct(cls.dtype, cls._device, *args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.type() == cls._name

    def __repr__(cls):
        return f"<class '{cls._name}'>"


def _type(name, dtype, device):
    full = f"torch.{'cuda.' if device == 'cuda' else ''}{name}Tensor"
    return _LegacyType(f"{name}Tensor", (), {"dtype": as_dtype(dtype), "_device": device, "_name": full,
                                             "__doc__": f"{full}: a {dtype} tensor on {device} (legacy)."})


_NAMES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16", "Long": "int64",
          "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool"}
TYPES = {f"{n}Tensor": _type(n, d, "cpu") for n, d in _NAMES.items()}
CUDA_TYPES = {f"{n}Tensor": _type(n, d, "cuda") for n, d in _NAMES.items()}
_TensorType.legacy = staticmethod(construct)       # torch.Tensor(...) is this constructor

"""What keras.ops' parts share: arguments as tensors, floats where Keras's float ops make or require them."""
from __future__ import annotations

import functools

import numpy as np

from ...engine import storage, Tensor as _EngineTensor
from .._tensor import convert_to_tensor


def _tensor(x):
    return x if isinstance(x, _EngineTensor) else convert_to_tensor(x)


def _float(x):
    """x as a float tensor: integers and bools become float32, as Keras's float ops make them."""
    x = _tensor(x)
    return x if x.fmt is not None else convert_to_tensor(storage(x), "float32")


def _floating(x, name):
    """x as a tensor that must hold floats: TensorFlow's float kernels refuse integers, and Keras passes them on."""
    x = _tensor(x)
    if x.fmt is None:
        raise TypeError(f"Value passed to parameter 'x' of keras.ops.{name} has DataType {x.dtype} not in list "
                        f"of allowed values: float16, bfloat16, float32, float64")
    return x


def _int_array(x):
    x = x if not isinstance(x, _EngineTensor) else (storage(x) if x.fmt is None else np.asarray(x.float32()))
    return np.asarray(x).astype(np.int64)


# -- ops on symbolic tensors ---------------------------------------------------------------------------------------

RECORD = [None]     # record(fn, name, args, kwargs): the graph node for an op called on KerasTensors (layers.operation)


def _symbolic_arguments(args, kwargs):
    """Whether a symbolic tensor (a KerasTensor) is among the arguments, or in a list or tuple of them: cheap for
    eager calls."""
    for a in (*args, *kwargs.values()):
        if getattr(type(a), "symbolic", False) or type(a) in (list, tuple) and any(
                getattr(type(b), "symbolic", False) for b in a):
            return True
    return False


def symbolic(fn, name=None):
    """fn, which on KerasTensors records a node of the functional graph (and gives its KerasTensors) instead of
    computing."""
    op_name = name or fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _symbolic_arguments(args, kwargs):
            return RECORD[0](fn, op_name, args, kwargs)
        return fn(*args, **kwargs)
    return call

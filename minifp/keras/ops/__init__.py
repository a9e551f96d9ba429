"""keras.ops: Keras 3's op namespace over the engine's ops (what custom layers call: ops.matmul, ops.softmax, ...).

The names of minifp/keras/_names.py: those written here add Keras's semantics (its argument names, a list of
tensors to join, dtypes by name); every other one is the engine's op with the op's own signature, given by
minifp.engine.install_names when minifp.keras loads (`generated`). Results are minifp.keras Tensors. Keras's nn,
core and math parts (and linalg's norm) live in nn.py, core.py and math.py, re-exported here.
"""
from __future__ import annotations

from ...engine import op_function, Tensor as _EngineTensor
from .._tensor import Tensor as _Tensor, _as_face, as_dtype, convert_to_tensor, format_of

from . import core, image, math, nn
from .core import *  # noqa: F401,F403  (Keras 3's keras.ops.core)
from .math import *  # noqa: F401,F403  (keras.ops.math, and linalg's norm)
from .nn import *  # noqa: F401,F403  (keras.ops.nn)

__all__ = ["cast"] + core.__all__ + math.__all__ + nn.__all__


def _tensor(x):
    return x if isinstance(x, _EngineTensor) else convert_to_tensor(x)


def cast(x, dtype):
    """x in `dtype` (a float dtype: rounded once; an integer dtype: truncated toward zero)."""
    x, fmt = _tensor(x), format_of(as_dtype(dtype))
    return _as_face(x.astype(fmt)) if fmt is not None and x.fmt is not None else convert_to_tensor(x, dtype)


def generated(op, place):
    """The engine's op as keras.ops.<name>: arrays come in as tensors, results go out as this face's Tensors."""
    fn = op_function(op)

    def call(*args, **kwargs):
        return _as_face(fn(*[convert_to_tensor(a) if hasattr(a, "__array__") and not isinstance(a, _EngineTensor)
                             else a for a in args], **kwargs))
    call.__name__, call.__doc__, call.__signature__ = fn.__name__, fn.__doc__, fn.__signature__
    return call


# Keras 3's numpy part (keras/src/ops/numpy.py)
from . import numpy as _numpy  # noqa: E402
from .numpy import *  # noqa: E402,F401,F403

__all__ += [n for n in _numpy.__all__ if n not in __all__]

# Called on KerasTensors, every op records a node of the functional graph (what is no op on tensors stays as it is)
from ._common import symbolic as _symbolic  # noqa: E402

for _name in set(__all__) - {"shape", "ndim", "dtype", "size", "result_type", "is_tensor", "convert_to_numpy",
                             "convert_to_tensor", "cond", "fori_loop", "while_loop", "scan", "map", "vectorized_map",
                             "switch"}:
    globals()[_name] = _symbolic(globals()[_name], _name)
for _name in image.__all__:
    setattr(image, _name, _symbolic(getattr(image, _name), _name))

# The face's tensors divide and take remainders as keras.ops do (Keras's dtype rules)
_Tensor.__floordiv__ = lambda self, other: floor_divide(self, other)  # noqa: F405
_Tensor.__rfloordiv__ = lambda self, other: floor_divide(other, self)  # noqa: F405
_Tensor.__mod__ = lambda self, other: mod(self, other)  # noqa: F405
_Tensor.__rmod__ = lambda self, other: mod(other, self)  # noqa: F405

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.ops")

"""minifp: a NumPy autodiff engine that emulates float16, bfloat16 and fp8 training bit-exactly."""
from ._formats import (FORMATS, Format, bfloat16, finfo, float8_e4m3, float8_e5m2, float16, float32,
                       promote as promote_types, tf32)
from ._rounding import MODES as ROUNDING_MODES, round_to
from ._tensor import Tensor, apply, no_grad, tensor

__version__ = "0.1.0"


def _fn(name, doc):
    def f(*args, **params):
        return apply(name, *args, **params)
    f.__name__, f.__qualname__, f.__doc__ = name, name, doc
    return f


exp = _fn("exp", "Elementwise e**x.")
log = _fn("log", "Elementwise natural logarithm.")
sqrt = _fn("sqrt", "Elementwise square root.")
tanh = _fn("tanh", "Elementwise hyperbolic tangent.")
sigmoid = _fn("sigmoid", "Elementwise 1 / (1 + exp(-x)).")
relu = _fn("relu", "Elementwise max(x, 0).")
abs = _fn("abs", "Elementwise absolute value.")
maximum = _fn("maximum", "Elementwise maximum of two tensors.")
minimum = _fn("minimum", "Elementwise minimum of two tensors.")
where = _fn("where", "Elements of x where cond holds, else of y.")
matmul = _fn("matmul", "Matrix product with batching and broadcasting, float32 accumulation.")
softmax = _fn("softmax", "Softmax along `axis` (default -1).")
log_softmax = _fn("log_softmax", "Log-softmax along `axis` (default -1).")


def sum(x, axis=None, keepdims=False):
    """Sum with float32 accumulation."""
    return apply("sum", x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    """Mean with float32 accumulation."""
    return apply("mean", x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):
    """Largest element along `axis`."""
    return apply("max", x, axis=axis, keepdims=keepdims)


def reshape(x, shape):
    """The same values in a new shape."""
    return apply("reshape", x, shape=shape)


def transpose(x, axes=None):
    """Axes permuted (reversed by default)."""
    return apply("transpose", x, axes=axes)


def concatenate(tensors, axis=0):
    """Tensors joined along `axis`."""
    return apply("concatenate", *tensors, axis=axis)


__all__ = ["amp", "checkpoint", "datasets", "losses", "mixed_precision", "models", "nn", "numerics", "optim", "testing",
           "Format", "FORMATS", "ROUNDING_MODES", "Tensor", "abs", "bfloat16", "concatenate", "exp", "finfo",
           "float16", "float32", "float8_e4m3", "float8_e5m2", "log", "log_softmax", "manual_seed", "matmul", "max",
           "maximum", "mean", "minimum", "no_grad", "promote_types", "relu", "reshape", "round_to", "sigmoid",
           "softmax", "sqrt", "sum", "tanh", "tensor", "tf32", "transpose", "where"]

from ._random import manual_seed  # noqa: E402
from . import amp, checkpoint, datasets, losses, mixed_precision, models, nn, numerics, optim, testing  # noqa: E402  (they build on the names above)

"""minifp.tf: the small part of TensorFlow that the tf.keras mixed-precision guides use, over minifp's engine.

`import minifp.tf as tf` and `from minifp.tf import keras` run the guides with only their imports changed:
tf.keras (minifp.keras with tf.keras's mixed_precision), tf.GradientTape, tf.function (runs the function as
it is), tf.constant, tf.cast, the dtypes, tf.data.Dataset, tf.config, and the handful of tf / tf.math / tf.nn /
tf.random ops such code calls. Every tensor is a `minifp.keras` Tensor, so every value is the one the
hardware format holds. Not TensorFlow: no graphs, no XLA (set_jit is accepted and has no effect), no float64
(tf.float64 is tf.float32), no second derivatives through nested tapes.

`tf.__version__` (and `tf.version.VERSION`) is "2.21.0+minifp.<minifp's version>": it compares as TensorFlow
2.21 (whose tf-keras the face's fixtures were recorded from) and says it is minifp.
"""
from __future__ import annotations

import sys as _sys
import types as _types

import minifp as _minifp

from ..engine import install_names as _install_names
from ..keras._missing import missing as _missing
from . import _config, _data, _dtypes, _errors, _names, _ops
from ._config import function
from ._dtypes import (DType, as_dtype, bfloat16, bool, double, float16, float32, float64, half, int8,  # noqa: A004
                      int16, int32, int64, uint8)
from ._ops import (Tensor, abs, add, argmax, cast, concat, constant,  # noqa: A004  (TensorFlow's names)
                   convert_to_tensor, divide, equal, exp, fill, is_tensor, less, greater, log, matmul, maximum,
                   minimum, multiply, negative, norm, not_equal,
                   ones, ones_like, pow, range, reduce_max, reduce_mean, reduce_min, reduce_sum, reshape, shape,
                   sigmoid, sqrt, square, stack, subtract, tanh, transpose, where, zeros, zeros_like)
from ._tape import GradientTape, UnconnectedGradients
from ._variables import Variable

newaxis = None
__version__ = f"2.21.0+minifp.{_minifp.__version__}"


def _namespace(name, doc, **members):
    """A submodule object `minifp.tf.<name>` (importable by that name too) holding `members`."""
    mod = _types.ModuleType(f"{__name__}.{name}", doc)
    mod.__dict__.update(members)
    mod.__all__ = sorted(k for k in members if not k.startswith("_"))
    mod.__getattr__ = _missing(mod.__name__, "TensorFlow")
    _sys.modules[mod.__name__] = mod
    return mod


_MATH = {n: getattr(_ops, n) for n in ("abs", "add", "argmax", "divide", "equal", "exp", "greater", "is_finite",
                                       "is_inf", "is_nan", "less", "log", "log_softmax", "maximum", "minimum",
                                       "multiply", "negative", "not_equal", "pow", "reduce_max", "reduce_mean",
                                       "reduce_min", "reduce_sum", "sigmoid", "softmax", "sqrt", "square",
                                       "subtract", "tanh")}
math = _namespace("math", "tf.math: elementwise math and reductions.", **_MATH)
nn = _namespace("nn", "tf.nn: activations.", **{n: getattr(_ops, n) for n in (
    "relu", "relu6", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax", "gelu", "silu", "swish")})
linalg = _namespace("linalg", "tf.linalg: matmul, norm.", matmul=_ops.matmul, norm=_ops.norm)
random = _namespace("random", "tf.random: draws from minifp's one generator, rounded once into the dtype.",
                    normal=_ops.random_normal, uniform=_ops.random_uniform, set_seed=_ops.set_seed)
dtypes = _namespace("dtypes", "tf.dtypes.", DType=DType, as_dtype=as_dtype, cast=cast,
                    **{n: getattr(_dtypes, n) for n in ("float16", "half", "float32", "float64", "double",
                                                        "bfloat16", "int8", "int16", "int32", "int64", "uint8",
                                                        "bool")})
data = _namespace("data", "tf.data: Dataset.", Dataset=_data.Dataset, AUTOTUNE=_data.AUTOTUNE,
                  INFINITE_CARDINALITY=_data.INFINITE_CARDINALITY, UNKNOWN_CARDINALITY=_data.UNKNOWN_CARDINALITY,
                  experimental=_types.SimpleNamespace(AUTOTUNE=_data.AUTOTUNE))
config = _namespace(
    "config", "tf.config: devices (truthful) and compiler options (accepted, no effect in minifp).",
    list_physical_devices=_config.list_physical_devices, list_logical_devices=_config.list_logical_devices,
    PhysicalDevice=_config.PhysicalDevice, LogicalDevice=_config.LogicalDevice,
    experimental=_types.SimpleNamespace(set_memory_growth=_config.set_memory_growth,
                                        get_memory_growth=_config.get_memory_growth,
                                        list_physical_devices=_config.list_physical_devices,
                                        list_logical_devices=_config.list_logical_devices),
    optimizer=_types.SimpleNamespace(set_jit=_config.set_jit, get_jit=_config.get_jit,
                                     set_experimental_options=_config.set_experimental_options,
                                     get_experimental_options=_config.get_experimental_options))
version = _namespace("version", "tf.version: the TensorFlow release this face follows.", VERSION=__version__,
                     GIT_VERSION="minifp", COMPILER_VERSION="minifp", GRAPH_DEF_VERSION=0)
autodiff = _namespace("autodiff", "tf.autodiff.", GradientTape=GradientTape)
errors = _namespace("errors", "tf.errors: the exceptions minifp.tf raises.", OpError=_errors.OpError,
                    InvalidArgumentError=_errors.InvalidArgumentError)

from . import keras  # noqa: E402  (tf.keras: after the names it may use)

# Every name of the engine's ops that TensorFlow has and this face does not write by hand: the op itself.
_GIVEN = _install_names(_names.NAMES, {"tf": _sys.modules[__name__], "math": math, "nn": nn, "linalg": linalg},
                        _ops.generated)
for _name in _GIVEN:
    _place, _, _attr = _name.partition(".")
    if _place != "tf":
        globals()[_place].__all__.append(_attr)

__all__ = ["DType", "Tensor", "Variable", "GradientTape", "UnconnectedGradients", "function", "as_dtype", "constant",
           "convert_to_tensor", "cast", "is_tensor", "zeros", "ones", "zeros_like", "ones_like", "fill", "range",
           "reshape", "transpose", "matmul", "shape", "concat", "stack", "where", "add", "subtract", "multiply",
           "divide", "pow", "square", "sqrt", "exp", "log", "abs", "negative", "maximum", "minimum", "equal",
           "not_equal", "less", "greater", "argmax", "sigmoid", "tanh", "reduce_sum", "reduce_mean", "reduce_max",
           "reduce_min", "norm", "float16", "half", "float32", "float64", "double", "bfloat16", "int8", "int16",
           "int32", "int64", "uint8", "bool", "newaxis", "math", "nn", "linalg", "random", "dtypes", "data", "config",
           "autodiff", "keras", "errors", "version", "__version__"] + [name[3:] for name in _GIVEN if name.startswith("tf.")]

__getattr__ = _missing(__name__, "TensorFlow")

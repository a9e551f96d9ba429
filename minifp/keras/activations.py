"""keras.activations: activation functions by Keras's names, each through the engine's ops."""
from __future__ import annotations

import importlib

from ._tensor import Tensor

mf = importlib.import_module("..", __package__)       # the minifp package of this face (its op functions)

__all__ = ["relu", "relu6", "leaky_relu", "elu", "selu", "sigmoid", "hard_sigmoid", "tanh", "softmax",
           "log_softmax", "linear", "gelu", "silu", "swish", "softplus", "softsign", "exponential", "mish",
           "hard_silu", "get", "serialize", "deserialize"]


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """max(x, 0), with Keras's options: a slope below the threshold and a cap."""
    if negative_slope == 0.0 and max_value is None and threshold == 0.0:
        return mf.relu(x)
    below = x < threshold
    y = mf.where(below, (x - threshold) * negative_slope if negative_slope else x * 0.0, x)
    return mf.minimum(y, max_value) if max_value is not None else y


def relu6(x):
    """min(max(x, 0), 6)."""
    return mf.minimum(mf.relu(x), 6.0)


def leaky_relu(x, negative_slope=0.2):
    """x where x > 0, else negative_slope * x."""
    return mf.leaky_relu(x, negative_slope=float(negative_slope))


def elu(x, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return mf.elu(x, alpha=float(alpha))


def selu(x):
    """scale * elu(x, alpha) with the self-normalising constants."""
    return mf.selu(x)


def _with_logits(out, logits):
    """out, remembering the logits it came from: Keras's losses then compute from the logits (its TensorFlow
    backend does the same), which is more accurate than the log of a rounded probability."""
    if isinstance(out, Tensor):
        out._keras_logits = logits
    return out


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return _with_logits(mf.sigmoid(x), x)


def hard_sigmoid(x):
    """relu6(x + 3) / 6, Keras 3's piecewise-linear sigmoid."""
    return mf.hardsigmoid(x)


def tanh(x):
    """Hyperbolic tangent."""
    return mf.tanh(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along axis."""
    return _with_logits(mf.softmax(x, axis=axis), x)


def log_softmax(x, axis=-1):
    """log(softmax(x)) along axis."""
    return mf.log_softmax(x, axis=axis)


def linear(x):
    """x unchanged."""
    return x


def gelu(x, approximate=False):
    """Gaussian error linear unit (the tanh approximation when approximate=True)."""
    return mf.gelu(x, approximate="tanh" if approximate else "none")


def silu(x):
    """x * sigmoid(x)."""
    return mf.silu(x)


swish = silu


def hard_silu(x):
    """x * hard_sigmoid(x)."""
    return mf.hardswish(x)


def softplus(x):
    """log(exp(x) + 1)."""
    return mf.softplus(x)


def softsign(x):
    """x / (|x| + 1)."""
    return x / (abs(x) + 1.0)


def exponential(x):
    """exp(x)."""
    return mf.exp(x)


def mish(x):
    """x * tanh(softplus(x))."""
    return mf.mish(x)


# Called on KerasTensors, an activation records a node of the functional graph
from .ops._common import symbolic as _symbolic  # noqa: E402

(relu, relu6, leaky_relu, elu, selu, sigmoid, hard_sigmoid, tanh, softmax, log_softmax, gelu, silu, softplus,
 softsign, exponential, mish, hard_silu) = [_symbolic(f) for f in (
    relu, relu6, leaky_relu, elu, selu, sigmoid, hard_sigmoid, tanh, softmax, log_softmax, gelu, silu, softplus,
    softsign, exponential, mish, hard_silu)]

ALL_OBJECTS_DICT = {f.__name__: f for f in (relu, relu6, leaky_relu, elu, selu, sigmoid, hard_sigmoid, tanh,
                                             softmax, log_softmax, linear, gelu, silu, softplus, softsign,
                                             exponential, mish, hard_silu)}
ALL_OBJECTS_DICT["swish"] = silu
ALL_OBJECTS_DICT["hard_swish"] = hard_silu


def get(identifier):
    """An activation function from a name, a callable, a config dict or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, dict):
        identifier = identifier.get("config", identifier.get("class_name"))
    obj = ALL_OBJECTS_DICT.get(identifier) if isinstance(identifier, str) else identifier
    if callable(obj):
        return obj
    raise ValueError(f"Could not interpret activation function identifier: {identifier}. Valid names: "
                     f"{', '.join(sorted(ALL_OBJECTS_DICT))}")


def serialize(activation):
    """The name of a built-in activation."""
    name = getattr(activation, "__name__", None)
    if ALL_OBJECTS_DICT.get(name) is not activation:
        raise ValueError(f"Unknown activation function '{activation}' cannot be serialized")
    return name


def deserialize(config, custom_objects=None):
    """The activation a name or config names."""
    if custom_objects and config in custom_objects:
        return custom_objects[config]
    return get(config)

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.activations")

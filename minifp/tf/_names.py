"""TensorFlow's names for the engine's ops, as data: for every registered op, where tf code reaches it.

A name is "tf.X" (the tf module), "math.X", "nn.X" or "linalg.X" (tf.math, tf.nn, tf.linalg); an empty row says
the face has no name for the op. The face gives every name it does not write by hand (TensorFlow's dtype rules,
argument names and `name=`) the engine's op with the op's own signature and TensorFlow's `name=` accepted
(minifp.engine.install_names). tests/tf/test_names.py fails when a registered op has no row here.
"""
from __future__ import annotations

__all__ = ["NAMES"]

NAMES = {
    "add": ("tf.add", "math.add"), "sub": ("tf.subtract", "math.subtract"),
    "mul": ("tf.multiply", "math.multiply"), "div": ("tf.divide", "math.divide"),
    "neg": ("tf.negative", "math.negative"), "pow": ("tf.pow", "math.pow"),
    "maximum": ("tf.maximum", "math.maximum"), "minimum": ("tf.minimum", "math.minimum"), "where": ("tf.where",),
    "exp": ("tf.exp", "math.exp"), "log": ("math.log",), "sqrt": ("tf.sqrt", "math.sqrt"),
    "tanh": ("tf.tanh", "math.tanh", "nn.tanh"), "sigmoid": ("tf.sigmoid", "math.sigmoid", "nn.sigmoid"),
    "clamp": (), "relu": ("nn.relu",), "abs": ("tf.abs", "math.abs"),
    "lt": ("tf.less", "math.less"), "le": ("tf.less_equal", "math.less_equal"),
    "gt": ("tf.greater", "math.greater"), "ge": ("tf.greater_equal", "math.greater_equal"),
    "eq": ("tf.equal", "math.equal"), "ne": ("tf.not_equal", "math.not_equal"),
    "sum": ("tf.reduce_sum", "math.reduce_sum"), "mean": ("tf.reduce_mean", "math.reduce_mean"),
    "max": ("tf.reduce_max", "math.reduce_max"),
    "softmax": ("nn.softmax", "math.softmax"), "log_softmax": ("nn.log_softmax", "math.log_softmax"),
    "matmul": ("tf.matmul", "linalg.matmul"), "linear": (), "reshape": ("tf.reshape",),
    "transpose": ("tf.transpose",), "getitem": (), "cast": ("tf.cast",), "concatenate": ("tf.concat",),
    "conv2d": (), "max_pool2d": (), "avg_pool2d": (), "adaptive_avg_pool2d": (), "gelu": ("nn.gelu",),
    "silu": ("nn.silu",), "hardtanh": (), "dropout": (), "layer_norm": (), "group_norm": (), "batch_norm": (),
    "embedding": (), "nll_loss": (), "mse_loss": (), "l1_loss": (), "binary_cross_entropy_with_logits": (),
    "binary_cross_entropy": (),
    "setitem": (), "broadcast_to": (), "var": (), "cumsum": (),
    "reciprocal": ("math.reciprocal",),
    "leaky_relu": ("nn.leaky_relu",),
    "elu": ("nn.elu",), "selu": ("nn.selu",), "softplus": ("nn.softplus", "math.softplus"), "mish": (),
    "hardswish": (), "hardsigmoid": (),
    "sin": ("math.sin",), "cos": ("math.cos",), "log1p": ("math.log1p",), "expm1": ("math.expm1",),
    "rsqrt": ("math.rsqrt",), "floor": ("math.floor",), "ceil": ("math.ceil",), "round": ("math.round",), "trunc": (),
    "sign": ("math.sign",),
    "prod": ("math.reduce_prod",), "logsumexp": ("math.reduce_logsumexp",),
    "scatter_reduce": (),
    "cumprod": (), "logcumsumexp": (),
    "acos": ("math.acos",), "asin": ("math.asin",), "atan": ("math.atan",), "acosh": ("math.acosh",),
    "asinh": ("math.asinh",), "atanh": ("math.atanh",), "sinh": ("math.sinh",), "cosh": ("math.cosh",),
    "tan": ("math.tan",), "log2": (), "log10": (), "exp2": (), "atan2": ("math.atan2",), "hypot": (),
    "logaddexp": (), "logaddexp2": (), "copysign": (), "fmod": (), "remainder": ("math.floormod",),
    "xlogy": ("math.xlogy",), "div_floor": ("math.floordiv",),
    "round_decimals": (), "logit": (), "lerp": (), "addcmul": (), "addcdiv": (),
    "erf": ("math.erf",), "erfc": ("math.erfc",), "erfinv": ("math.erfinv",),
    "sinc": (),
    "log_sigmoid": (), "celu": (), "huber_loss": (), "smooth_l1_loss": (),
    "multi_margin_loss": (), "multilabel_margin_loss": (),
    "ctc_loss": (),
    "attention": (),
    "vector_norm": (),     # tf.norm: ord="euclidean" and matrix norms, not the op's signature
}

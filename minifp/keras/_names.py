"""Keras 3's names for the engine's ops, as data: for every registered op, where Keras code reaches it.

A name is "ops.X" (minifp.keras.ops, Keras 3's keras.ops), "activations.X" or "Tensor.X"; an empty row says the
face has no name for the op yet. The face gives every name it does not write by hand the engine's op with the op's
own signature (minifp.engine.install_names). Keras 3 has names for more of them (keras.ops.conv, max_pool,
layer_normalization, batch_normalization, binary_crossentropy, ...), with other signatures: the face's keras.ops
grows to them (issue 33). tests/keras/test_names.py fails when a registered op has no row here.
"""
from __future__ import annotations

__all__ = ["NAMES"]

NAMES = {
    "add": ("ops.add",), "sub": ("ops.subtract",), "mul": ("ops.multiply",), "div": ("ops.divide", "ops.true_divide"),
    "neg": ("ops.negative",), "pow": ("ops.power",), "maximum": ("ops.maximum",), "minimum": ("ops.minimum",),
    "where": ("ops.where",), "exp": ("ops.exp",), "log": ("ops.log",), "sqrt": ("ops.sqrt",),
    "tanh": ("ops.tanh", "activations.tanh"), "sigmoid": ("ops.sigmoid", "activations.sigmoid"),
    "clamp": (), "relu": ("ops.relu", "activations.relu"), "abs": ("ops.absolute", "ops.abs"),
    "lt": ("ops.less",), "le": ("ops.less_equal",), "gt": ("ops.greater",), "ge": ("ops.greater_equal",),
    "eq": ("ops.equal",), "ne": ("ops.not_equal",),
    "sum": ("ops.sum",), "mean": ("ops.mean",), "max": ("ops.max",),
    "softmax": ("ops.softmax", "activations.softmax"), "log_softmax": ("ops.log_softmax", "activations.log_softmax"),
    "matmul": ("ops.matmul",), "linear": (),            # Keras has no linear op: Dense's call is this one
    "reshape": ("ops.reshape",), "transpose": ("ops.transpose",), "getitem": ("Tensor.__getitem__",),
    "cast": ("ops.cast",), "concatenate": ("ops.concatenate",),
    "conv2d": (), "max_pool2d": (), "avg_pool2d": (), "adaptive_avg_pool2d": (),
    "gelu": ("activations.gelu",), "silu": ("activations.silu", "activations.swish"), "hardtanh": (),
    "dropout": (), "layer_norm": (), "group_norm": (), "batch_norm": (), "embedding": (),
    "nll_loss": (), "mse_loss": (), "l1_loss": (), "binary_cross_entropy_with_logits": (),
    "binary_cross_entropy": (),
    "setitem": (), "broadcast_to": ("ops.broadcast_to",), "var": ("ops.var",), "cumsum": ("ops.cumsum",),
    "reciprocal": ("ops.reciprocal",),
    "leaky_relu": ("ops.leaky_relu", "activations.leaky_relu"),
    "elu": ("ops.elu", "activations.elu"), "selu": ("ops.selu", "activations.selu"),
    "softplus": ("ops.softplus", "activations.softplus"), "mish": ("activations.mish",),
    "hardswish": ("ops.hard_silu", "ops.hard_swish", "activations.hard_silu"),
    "hardsigmoid": ("ops.hard_sigmoid", "activations.hard_sigmoid"),
    "sin": ("ops.sin",), "cos": ("ops.cos",), "log1p": ("ops.log1p",), "expm1": ("ops.expm1",), "rsqrt": ("ops.rsqrt",),
    "floor": ("ops.floor",), "ceil": ("ops.ceil",), "round": ("ops.round",), "trunc": ("ops.trunc",), "sign": ("ops.sign",),
    "prod": ("ops.prod",), "logsumexp": ("ops.logsumexp",),
    "scatter_reduce": (),
    "cumprod": ("ops.cumprod",), "logcumsumexp": (),
    "acos": ("ops.arccos",), "asin": ("ops.arcsin",), "atan": ("ops.arctan",), "acosh": ("ops.arccosh",),
    "asinh": ("ops.arcsinh",), "atanh": ("ops.arctanh",), "sinh": ("ops.sinh",), "cosh": ("ops.cosh",),
    "tan": ("ops.tan",), "log2": ("ops.log2",), "log10": ("ops.log10",), "exp2": ("ops.exp2",),
    "atan2": ("ops.arctan2",), "hypot": ("ops.hypot",), "logaddexp": ("ops.logaddexp",), "logaddexp2": ("ops.logaddexp2",),
    "copysign": ("ops.copysign",), "fmod": ("ops.fmod",), "remainder": ("ops.mod",), "xlogy": (),
    "div_floor": ("ops.floor_divide",), "round_decimals": (), "logit": (), "lerp": (),
    "addcmul": (), "addcdiv": (),
    "erf": ("ops.erf",), "erfc": (), "erfinv": ("ops.erfinv",),
    "sinc": ("ops.sinc",),
    "log_sigmoid": ("ops.log_sigmoid",), "celu": (), "huber_loss": (), "smooth_l1_loss": (),
    "multi_margin_loss": (), "multilabel_margin_loss": (),
    "ctc_loss": (),
    "attention": (),
    "vector_norm": ("ops.norm",),
}

"""PyTorch's names for the engine's ops, as data: for every registered op, where PyTorch code reaches it.

A name is "torch.X" (a function of the torch module), "Tensor.X" (a method) or "F.X" (torch.nn.functional);
an empty row says PyTorch has no name for the op. The face gives every name it does not write by hand (to add
PyTorch's semantics: dim= and keepdim=, 0-dim tensors weak in promotion, ...) the engine's op with the op's own
signature (minifp.engine.install_names). tests/torch/test_names.py fails when a registered op has no row here, or a name is missing.
"""
from __future__ import annotations

__all__ = ["NAMES"]

NAMES = {
    "add": ("torch.add", "Tensor.add"), "sub": ("torch.sub", "Tensor.sub"), "mul": ("torch.mul", "Tensor.mul"),
    "div": ("torch.div", "Tensor.div"), "neg": ("torch.neg", "Tensor.neg"), "pow": ("torch.pow", "Tensor.pow"),
    "maximum": ("torch.maximum", "Tensor.maximum"), "minimum": ("torch.minimum", "Tensor.minimum"),
    "where": ("torch.where",),
    "exp": ("torch.exp", "Tensor.exp"), "log": ("torch.log", "Tensor.log"), "sqrt": ("torch.sqrt", "Tensor.sqrt"),
    "tanh": ("torch.tanh", "Tensor.tanh", "F.tanh"), "sigmoid": ("torch.sigmoid", "Tensor.sigmoid", "F.sigmoid"),
    "clamp": (), "relu": ("torch.relu", "Tensor.relu", "F.relu"), "abs": ("torch.abs", "Tensor.abs"),
    "lt": ("torch.lt", "Tensor.lt"), "le": ("torch.le", "Tensor.le"), "gt": ("torch.gt", "Tensor.gt"),
    "ge": ("torch.ge", "Tensor.ge"), "eq": ("torch.eq", "Tensor.eq"), "ne": ("torch.ne", "Tensor.ne"),
    "sum": ("torch.sum", "Tensor.sum"), "mean": ("torch.mean", "Tensor.mean"), "max": ("torch.max", "Tensor.max"),
    "softmax": ("torch.softmax", "Tensor.softmax", "F.softmax"),
    "log_softmax": ("torch.log_softmax", "Tensor.log_softmax", "F.log_softmax"),
    "matmul": ("torch.matmul", "Tensor.matmul"), "linear": ("F.linear",),
    "reshape": ("torch.reshape", "Tensor.reshape"),
    "transpose": ("torch.permute", "Tensor.permute"),          # PyTorch's transpose swaps two dims (a permute)
    "getitem": ("Tensor.__getitem__",), "cast": ("Tensor.to",), "concatenate": ("torch.cat", "torch.concat"),
    "conv2d": ("F.conv2d",), "max_pool2d": ("F.max_pool2d",), "avg_pool2d": ("F.avg_pool2d",),
    "adaptive_avg_pool2d": ("F.adaptive_avg_pool2d",), "gelu": ("F.gelu",), "silu": ("F.silu",),
    "hardtanh": ("F.hardtanh",), "dropout": ("F.dropout",), "layer_norm": ("F.layer_norm",),
    "group_norm": ("F.group_norm",), "batch_norm": ("F.batch_norm",), "embedding": ("F.embedding",),
    "nll_loss": ("F.nll_loss",), "mse_loss": ("F.mse_loss",), "l1_loss": ("F.l1_loss",),
    "binary_cross_entropy_with_logits": ("F.binary_cross_entropy_with_logits",),
    "binary_cross_entropy": ("F.binary_cross_entropy",),
    "setitem": ("Tensor.__setitem__",), "broadcast_to": ("torch.broadcast_to", "Tensor.broadcast_to"),
    "var": ("torch.var", "Tensor.var"), "cumsum": ("torch.cumsum", "Tensor.cumsum"),
    "reciprocal": ("torch.reciprocal", "Tensor.reciprocal"),
    "leaky_relu": ("F.leaky_relu",), "elu": ("F.elu",), "selu": ("torch.selu", "F.selu"),
    "softplus": ("F.softplus",), "mish": ("F.mish",), "hardswish": ("F.hardswish",),
    "hardsigmoid": ("F.hardsigmoid",),
    "sin": ("torch.sin", "Tensor.sin"), "cos": ("torch.cos", "Tensor.cos"), "log1p": ("torch.log1p", "Tensor.log1p"),
    "expm1": ("torch.expm1", "Tensor.expm1"), "rsqrt": ("torch.rsqrt", "Tensor.rsqrt"), "floor": ("torch.floor", "Tensor.floor"),
    "ceil": ("torch.ceil", "Tensor.ceil"), "round": ("torch.round", "Tensor.round"), "trunc": ("torch.trunc", "Tensor.trunc"), "sign": ("torch.sign", "Tensor.sign"),
    "prod": ("torch.prod", "Tensor.prod"), "logsumexp": ("torch.logsumexp", "Tensor.logsumexp"),
    "scatter_reduce": (),
    "cumprod": ("torch.cumprod", "Tensor.cumprod"), "logcumsumexp": ("torch.logcumsumexp", "Tensor.logcumsumexp"),
    "acos": ("torch.acos", "Tensor.acos", "torch.arccos", "Tensor.arccos"),
    "asin": ("torch.asin", "Tensor.asin", "torch.arcsin", "Tensor.arcsin"),
    "atan": ("torch.atan", "Tensor.atan", "torch.arctan", "Tensor.arctan"),
    "acosh": ("torch.acosh", "Tensor.acosh", "torch.arccosh", "Tensor.arccosh"),
    "asinh": ("torch.asinh", "Tensor.asinh", "torch.arcsinh", "Tensor.arcsinh"),
    "atanh": ("torch.atanh", "Tensor.atanh", "torch.arctanh", "Tensor.arctanh"),
    "sinh": ("torch.sinh", "Tensor.sinh"), "cosh": ("torch.cosh", "Tensor.cosh"), "tan": ("torch.tan", "Tensor.tan"),
    "log2": ("torch.log2", "Tensor.log2"), "log10": ("torch.log10", "Tensor.log10"),
    "exp2": ("torch.exp2", "Tensor.exp2"), "atan2": ("torch.atan2", "Tensor.atan2", "torch.arctan2"),
    "hypot": ("torch.hypot", "Tensor.hypot"), "logaddexp": ("torch.logaddexp", "Tensor.logaddexp"),
    "logaddexp2": ("torch.logaddexp2", "Tensor.logaddexp2"), "copysign": ("torch.copysign", "Tensor.copysign"),
    "fmod": ("torch.fmod", "Tensor.fmod"), "remainder": ("torch.remainder", "Tensor.remainder"),
    "xlogy": ("torch.xlogy", "Tensor.xlogy"), "div_floor": ("torch.floor_divide", "Tensor.floor_divide"),
    "round_decimals": (), "logit": ("torch.logit", "Tensor.logit"),
    "lerp": ("torch.lerp", "Tensor.lerp"), "addcmul": ("torch.addcmul", "Tensor.addcmul"),
    "addcdiv": ("torch.addcdiv", "Tensor.addcdiv"),
    "erf": ("torch.erf", "Tensor.erf"), "erfc": ("torch.erfc", "Tensor.erfc"),
    "erfinv": ("torch.erfinv", "Tensor.erfinv"),
    "sinc": ("torch.sinc", "Tensor.sinc"),
    "log_sigmoid": ("F.logsigmoid",), "celu": ("F.celu", "torch.celu"), "huber_loss": ("F.huber_loss",),
    "smooth_l1_loss": ("F.smooth_l1_loss",),
    "multi_margin_loss": ("F.multi_margin_loss",), "multilabel_margin_loss": ("F.multilabel_margin_loss",),
    "ctc_loss": ("F.ctc_loss",),
    "attention": ("F.scaled_dot_product_attention",),
    "vector_norm": ("torch.norm", "Tensor.norm"),     # torch.linalg.vector_norm (torch.norm calls it)
}

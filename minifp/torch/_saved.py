"""PyTorch's refusal of a backward that would read a tensor changed in place after its op kept it (saved tensors and
version counters): which tensors each op's backward keeps, as recorded from PyTorch 2.13 by changing each one in
place after the forward (tools/record_torch_inplace.py, tests/torch/test_inplace.py).

Ops not listed keep nothing that the check knows of: their backward reads the tensors as they were (the engine's
rule), where PyTorch would refuse some of them.
"""
from __future__ import annotations

import re

from ..engine import Tensor as _EngineTensor
from ._graph import grad_fn

__all__ = ["refuse_stale"]

# By the engine op the face runs, what PyTorch's backward keeps: its result; inputs kept always; inputs kept for
# other inputs' gradients ({input: the inputs whose gradient needs it}).
_RESULT = {"relu", "sigmoid", "tanh", "exp", "sqrt", "rsqrt", "reciprocal", "softmax", "log_softmax", "logsumexp"}
_INPUTS = {**{op: (0,) for op in ("log", "sin", "cos", "abs", "square", "gelu", "silu", "leaky_relu", "clamp",
                                  "nll_loss", "softplus", "elu", "hardtanh", "log1p", "logsumexp", "var", "max_pool2d",
                                  "avg_pool2d")},
           "maximum": (0, 1), "minimum": (0, 1), "conv2d": (0, 1), "batch_norm": (0, 1), "layer_norm": (0, 1, 2),
           "group_norm": (0, 1), "mse_loss": (0, 1), "binary_cross_entropy_with_logits": (0, 1)}
_FOR_OTHERS = {"mul": {0: (1,), 1: (0,)}, "matmul": {0: (1,), 1: (0,)}, "linear": {0: (1,), 1: (0,)},
               "div": {0: (1,), 1: (0, 1)}}


def _kept(op, inputs, which, grads):
    """Whether PyTorch's backward of op keeps `which` ("output" or an input's position) of it."""
    if op == "pow":     # a tensor exponent: base, exponent and result; a number: the base
        return which == 0 or isinstance(inputs[1], _EngineTensor)
    if which == "output":
        return op in _RESULT
    needed_by = _FOR_OTHERS.get(op, {}).get(which, ())
    return which in _INPUTS.get(op, ()) or any(grads[i] for i in needed_by)


def _shown_name(t):
    """The name PyTorch's message gives t's node: its grad_fn's without "Backward<n>"."""
    node = grad_fn(t)
    return None if node is None else re.sub(r"Backward\d*$", "", node.name().rsplit("::", 1)[-1])


def refuse_stale(op, inputs, which, read, now, was, version):
    """The engine's on_stale for PyTorch: raise its RuntimeError where its backward kept the tensor that an in-place
    op has changed since (called before any gradient is computed, the latest node first, as PyTorch meets them)."""
    grads = [isinstance(a, _EngineTensor) and a.requires_grad for a in inputs]
    if not _kept(op, inputs, which, grads):
        return
    shape = list(now.shape)
    name = _shown_name(read) if which == "output" else _shown_name(now)
    if op == "linear" and which == 1 and len(shape) == 2:    # PyTorch keeps w.t(), a view made anew
        shape, name = shape[::-1], "AsStrided" if now.requires_grad else None
    origin = f", which is output 0 of {name}," if name is not None else ""
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[{now.type()} [{', '.join(map(str, shape))}]]{origin} is at version {version}; expected version {was} "
        f"instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
        f"torch.autograd.set_detect_anomaly(True, check_nan=False).")

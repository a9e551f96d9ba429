"""clip_grad_norm_ and clip_grad_value_ as PyTorch 2.x computes them (torch/nn/utils/clip_grad.py)."""
from __future__ import annotations

import warnings

from ....engine import apply, no_grad, Tensor as _EngineTensor
from ... import _tensor
from ..._functions import stack
from ...linalg import vector_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, _EngineTensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)
        if not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)); returns the total norm (a 0-dim tensor of the
    gradients' type), PyTorch's steps: each gradient's norm (its float32 sum rounded once into the gradient's type,
    as _foreach_norm), the norm of those, then the coefficient as tensor ops. foreach is accepted and changes
    nothing (one code path)."""
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return _tensor.tensor(0.0)
    with no_grad():
        total = vector_norm(stack([vector_norm(g, norm_type) for g in grads]), norm_type)
        if error_if_nonfinite and not bool(total.isfinite()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               f"so it cannot be clipped. To disable this error and scale the gradients by the "
                               f"non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:             # always multiplied, even by 1.0 (PyTorch does), into the gradient's own type
            g.assign(apply("mul", g, coef))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient in place into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.assign(apply("minimum", apply("maximum", g, -clip_value), clip_value))

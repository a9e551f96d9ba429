"""clip_grad_norm_ and clip_grad_value_ as PyTorch 2.x computes them (torch/nn/utils/clip_grad.py)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ....engine import apply, array_module, no_grad, Tensor as _EngineTensor
from ... import _tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, _EngineTensor):
        parameters = [parameters]
    else:
        parameters = list(parameters)
        if not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    return [p.grad for p in parameters if p.grad is not None]


def _norm(g, p):
    """One gradient's vector norm of order p, accumulated in float32 (float64 for the sum of powers)."""
    v = g.float32()
    xp = array_module(v)
    if p == math.inf:
        return float(xp.max(xp.abs(v))) if v.size else 0.0
    return float(xp.sum(xp.abs(v).astype(np.float64) ** p) ** (1 / p))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)); returns the total norm (a 0-dim tensor).
    foreach is accepted and changes nothing (one code path)."""
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return _tensor.tensor(0.0)
    norms = np.array([_norm(g, norm_type) for g in grads], np.float32)     # per tensor, in float32
    total = np.float32(np.max(norms) if norm_type == math.inf else
                       np.sum(norms.astype(np.float64) ** norm_type) ** (1 / norm_type))
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           f"it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    with np.errstate(all="ignore"):
        coef = np.minimum(np.float32(1) / (total + np.float32(1e-6)) * np.float32(max_norm), np.float32(1.0))
    with no_grad():
        for g in grads:             # always multiplied, even by 1.0 (PyTorch does)
            g.assign(apply("mul", g, coef))
    return _tensor.tensor(float(total), device=grads[0].device)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient in place into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.assign(apply("minimum", apply("maximum", g, -clip_value), clip_value))

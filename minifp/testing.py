"""Helpers for numeric-behaviour tests: gradient checks."""
from __future__ import annotations

import numpy as np

from ._tensor import Tensor, tensor

__all__ = ["check_grads"]


def check_grads(fn, *inputs, params=(), eps=1e-3, rtol=1e-2, atol=1e-2, seed=0):
    """Compare the gradients of sum(r * fn(*inputs)) by autodiff and by central differences.

    inputs: arrays or float32 tensors, all differentiated; params: tensors (a layer's parameters, say)
    read by fn, differentiated too. The engine computes in float32, hence the default tolerances.
    Raises AssertionError naming the first input or parameter whose gradients disagree.
    """
    xs = [tensor(x.float32() if isinstance(x, Tensor) else np.asarray(x, np.float32), requires_grad=True)
          for x in inputs]
    out = fn(*xs)
    r = np.random.default_rng(seed).standard_normal(out.shape).astype(np.float32)
    for p in params:
        p.grad = None
    (out * tensor(r)).sum().backward()
    targets = [(f"input {i}", x) for i, x in enumerate(xs)] + [(p.name or f"param {i}", p)
                                                                 for i, p in enumerate(params)]
    for name, t in targets:
        analytic = t.grad.float32() if t.grad is not None else np.zeros(t.shape, np.float32)
        numeric = np.zeros(t.shape)
        base = t.data.copy()
        for j in np.ndindex(t.shape):
            values = []
            for sign in (1, -1):
                t.data = base.copy()
                t.data[j] = base[j] + sign * eps
                values.append(float(np.sum(r.astype(np.float64) * fn(*xs).float32())))
            numeric[j] = (values[0] - values[1]) / (2 * eps)
        t.data = base
        if not np.allclose(analytic, numeric, rtol=rtol, atol=atol):
            worst = np.unravel_index(np.argmax(np.abs(analytic - numeric)), t.shape)
            raise AssertionError(f"gradient of {name} disagrees at {worst}: autodiff {analytic[worst]:.6g}, "
                                 f"finite differences {numeric[worst]:.6g}")

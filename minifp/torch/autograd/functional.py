"""torch.autograd.functional: Jacobians, Hessians and their products with vectors, built on autograd.grad as
PyTorch's reverse-mode versions are: a Jacobian row by row (a one-hot output gradient each), a Hessian as the
Jacobian of the gradient, and a Jacobian-vector product by the double-backward trick (the gradient with respect to
a zero output gradient)."""
from __future__ import annotations

import numpy as np

from ...engine import Tensor as _EngineTensor, enable_grad
from .. import _functions, _tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, arg, fn):
    """(x as a tuple of tensors, whether it was one)."""
    one = isinstance(x, _EngineTensor)
    xs = (x,) if one else tuple(x)
    for i, t in enumerate(xs):
        if not isinstance(t, _EngineTensor):
            raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors but the value at "
                            f"index {i} has type {type(t)}.")
    return xs, one


def _grad_ready(xs, create_graph):
    """The inputs as the function sees them: detached copies that require grad (the graph's own with create_graph,
    as PyTorch's _grad_preprocess keeps them)."""
    return tuple(x if create_graph and x.requires_grad else x.detach().requires_grad_(True) for x in xs)


def _grads(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad with zeros for the inputs the outputs do not reach (PyTorch's strict=False)."""
    from . import grad
    outputs = [o for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    given = [g for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not outputs:
        return tuple(_tensor.zeros_like(x) for x in inputs)
    found = grad(outputs, inputs, given, retain_graph=True, create_graph=create_graph, allow_unused=True)
    return tuple(_tensor.zeros_like(x) if g is None else g for g, x in zip(found, inputs))


def _done(xs, create_graph):
    """Results as PyTorch returns them: detached unless create_graph."""
    return tuple(x if create_graph else x.detach() for x in xs)


def _back(xs, one):
    return xs[0] if one else xs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at inputs (v may be omitted for a 1-element output)."""
    xs, one = _as_tuple(inputs, "inputs", "vjp")
    with enable_grad():
        xs = _grad_ready(xs, create_graph)
        out = func(*xs)
        outs, one_out = _as_tuple(out, "outputs of the user-provided function", "vjp")
        vs = _vectors(v, outs, "vjp")
        found = _grads(outs, xs, vs, create_graph)
    return _back(_done(outs, create_graph), one_out), _back(_done(found, create_graph), one)


def _vectors(v, outs, fn):
    """The vectors multiplying the outputs: v (a tensor or tuple), or ones for a single 1-element output."""
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        return (_tensor.ones_like(outs[0]),)
    vs, _ = _as_tuple(v, "v", fn)
    for a, b in zip(vs, outs):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Mismatch in shape: v has size {tuple(a.shape)} but the output has size "
                               f"{tuple(b.shape)}")
    return vs


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick as PyTorch computes it."""
    xs, one = _as_tuple(inputs, "inputs", "jvp")
    with enable_grad():
        xs = _grad_ready(xs, create_graph)
        vs = _vectors(v, xs, "jvp")
        out = func(*xs)
        outs, one_out = _as_tuple(out, "outputs of the user-provided function", "jvp")
        zeros = tuple(_tensor.zeros_like(o).requires_grad_(True) for o in outs)
        g = _grads(outs, xs, zeros, True)
        found = _grads(g, zeros, vs, create_graph)
    return _back(_done(outs, create_graph), one_out), _back(_done(found, create_graph), one_out)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """d func(inputs) / d inputs, row by row: a tensor of shape output.shape + input.shape (tuples of them for
    tuples of outputs or inputs)."""
    if strategy != "reverse-mode":
        raise NotImplementedError("minifp.torch computes Jacobians in reverse mode only (strategy='reverse-mode')")
    xs, one = _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        xs = _grad_ready(xs, create_graph)
        out = func(*xs)
        outs, one_out = _as_tuple(out, "outputs of the user-provided function", "jacobian")
        per_output = []
        for o in outs:
            rows = []
            for k in range(o.numel()):
                onehot = np.zeros(o.numel(), np.float32)
                onehot[k] = 1.0
                seed = _tensor.tensor(onehot.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device)
                rows.append(_grads((o,), xs, (seed,), create_graph))
            per_output.append(tuple(
                _functions.stack([r[i] for r in rows], 0).reshape(tuple(o.shape) + tuple(x.shape)) if rows else
                _tensor.zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
                for i, x in enumerate(xs)))
    per_output = [_done(p, create_graph) for p in per_output]
    if one_out:
        return _back(per_output[0], one)
    return tuple(_back(p, one) for p in per_output)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function with a single-element output: the Jacobian of its gradient."""
    xs, one = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*ys):
        out = func(*ys)
        if not isinstance(out, _EngineTensor) or out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return _grads((out.reshape(()),), ys, (_tensor.ones_like(out.reshape(())),), True)
    found = jacobian(gradient, xs, create_graph=create_graph, strategy=outer_jacobian_strategy)
    return found[0][0] if one else found


def _scalar_gradient(func, xs, create_graph):
    """vhp's and hvp's first steps: (the inputs made ready, func's single-element output, its gradient as a graph)."""
    xs = _grad_ready(xs, create_graph)
    out = func(*xs)
    if not isinstance(out, _EngineTensor) or out.numel() != 1:       # (PyTorch's vhp names hvp too)
        raise RuntimeError("The Tensor returned by the function given to hvp should contain a single element")
    return xs, out, _grads((out,), xs, (_tensor.ones_like(out),), True)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function with a single-element output."""
    xs, one = _as_tuple(inputs, "inputs", "vhp")
    with enable_grad():
        xs, out, g = _scalar_gradient(func, xs, create_graph)
        vs = _vectors(v, xs, "vhp")
        found = _grads(g, xs, vs, create_graph)
    return _done((out,), create_graph)[0], _back(_done(found, create_graph), one)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function with a single-element output, by the double-backward trick."""
    xs, one = _as_tuple(inputs, "inputs", "hvp")
    with enable_grad():
        xs, out, g = _scalar_gradient(func, xs, create_graph)
        zeros = tuple(_tensor.zeros_like(x).requires_grad_(True) for x in xs)
        vs = _vectors(v, xs, "hvp")
        gu = _grads(g, xs, zeros, True)
        found = _grads(gu, zeros, vs, create_graph)
    return _done((out,), create_graph)[0], _back(_done(found, create_graph), one)

"""The registry's public face: a function per op (minifp.<name>), the Tensor methods and operators, and the Tensor
methods that apply ops (astype, indexing, reshape, transpose, backward)."""
from __future__ import annotations

import inspect

from ._formats import as_format
from . import _autograd
from ._dispatch import apply, cast, cast_in_mode
from ._ops import OPS
from ._state import STATE, grad_mode
from ._tensor import Tensor

__all__ = ["functions", "public", "no_grad", "enable_grad", "is_grad_enabled"]


def no_grad():
    """Within this block ops record no graph (in this thread)."""
    return grad_mode(False)


def enable_grad():
    """Within this block ops record the graph again, inside a no_grad block too (in this thread)."""
    return grad_mode(True)


def is_grad_enabled():
    """Whether ops record the graph here and now."""
    return STATE.grad_enabled


def _signature(op, method):
    """The op's public signature: its inputs, then its parameters (positional too, as NumPy's)."""
    params = [p.replace(kind=p.POSITIONAL_OR_KEYWORD) for p in list(inspect.signature(op.forward).parameters.values())[1:]]
    if method:
        params[0] = params[0].replace(name="self")
    return inspect.Signature(params)


def public(op, method=False):
    """The function (or Tensor method) that applies `op`, with the op's signature and doc."""
    sig = _signature(op, method)
    names = list(sig.parameters)
    n, variadic = len(op.inputs), op.variadic
    param_names = frozenset(names[n:])

    def fn(*args, **kwargs):
        if len(args) == n and not variadic and kwargs.keys() <= param_names:     # the common call, fast
            return apply(op.name, *args, **kwargs)
        try:
            values = sig.bind(*args, **kwargs).arguments
        except TypeError as e:
            raise TypeError(f"{op.name}{sig}: {e}") from None
        inputs = list(values[names[0]]) if variadic else [values.get(k) for k in names[:n]]   # a bias left out: None
        return apply(op.name, *inputs, **{k: values[k] for k in names[n:] if k in values})

    fn.__name__, fn.__doc__, fn.__signature__ = op.name, op.doc, sig
    fn.__qualname__ = f"Tensor.{op.name}" if method else op.name
    return fn


def functions():
    """{name: public function} for every op the registry makes one of."""
    return {name: public(op) for name, op in OPS.items() if op.function}


def _operator(name, reflected):
    if reflected:
        return lambda self, other: apply(name, other, self)
    return lambda self, *other: apply(name, self, *other)


def _index(index):
    """Tensor indices -> their arrays, so indexing is plain array indexing."""
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    return index._data if isinstance(index, Tensor) else index


def astype(self, fmt, mode="nearest", rng=None, bits=None):
    """A differentiable cast: values round into `fmt` in `mode` (round_to's), the gradient casts back."""
    fmt = as_format(fmt, "astype(): fmt")
    if mode == "nearest" and bits is None:
        if self.fmt is not None and self.fmt != fmt:    # a float format to another: the dispatcher's own cast
            return cast(self, fmt)                      # (layers cast their inputs on every call)
        return apply("cast", self, _out=fmt)
    return cast_in_mode(self, fmt, mode, rng, bits)


def backward(self, gradient=None, retain_graph=None):
    """Gradients of this tensor with respect to every leaf that requires them, into their .grad."""
    _autograd.backward(self, gradient, retain_graph)


def __getitem__(self, index):
    return apply("getitem", self, index=_index(index))


def reshape(self, *shape):
    """The same values in a new shape: x.reshape(2, 3) or x.reshape((2, 3))."""
    return apply("reshape", self, shape=shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)


def transpose(self, *axes):
    """Axes permuted: x.transpose(1, 0, 2) or x.transpose((1, 0, 2)); reversed when none are given."""
    return apply("transpose", self, axes=(axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes)
                 or None)


Tensor.astype = Tensor.to = astype
Tensor.backward, Tensor.__getitem__, Tensor.reshape, Tensor.transpose = backward, __getitem__, reshape, transpose
Tensor.T = property(lambda self: self.transpose())
for _op in OPS.values():
    if _op.method:
        setattr(Tensor, _op.name, public(_op, method=True))
    if _op.operator:
        setattr(Tensor, f"__{_op.operator}__", _operator(_op.name, False))
        if len(_op.inputs) == 2 and not _op.returns_bool:
            setattr(Tensor, f"__r{_op.operator}__", _operator(_op.name, True))

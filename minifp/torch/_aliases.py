"""PyTorch names that are other names' work under another spelling or argument order (torch.ravel, torch.clone,
torch.unsafe_split, torch.msort, ...), a few small compositions (isin, slice_scatter, scalar_tensor) and the
remaining in-place random fills (cauchy_, geometric_, log_normal_)."""
from __future__ import annotations

import numpy as np

from ..engine import made_like, storage, to_numpy
from ._generator import stream
from ._methods import chunk, sort, split
from ._shapes import _dim, _put
from ._functions import where
from ._tensor import Tensor, bool_, float32, full_like, ones_like, tensor

__all__ = ["ravel", "clone", "fill", "scalar_tensor", "isin", "unsafe_chunk", "unsafe_split", "msort",
           "slice_scatter", "strided", "layout"]


class layout:
    """torch.strided: the one layout minifp's tensors have."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


strided = layout("strided")
unsafe_chunk, unsafe_split = chunk, split           # PyTorch's versions skip a view check minifp does not make


def ravel(input):
    """input's values as one dimension."""
    return input.reshape(-1)


def clone(input, *, memory_format=None):
    """A copy of input that keeps its place in the graph."""
    return input.clone()


def fill(input, value):
    """A tensor like input, every value `value` (in the graph, as PyTorch's: input's gradient is zero)."""
    filled = full_like(input, float(value) if input.is_floating_point() else value)
    return where(ones_like(input, dtype=bool_), filled, input) if input.requires_grad else filled


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    """A 0-dim tensor holding s (float32 unless dtype says otherwise)."""
    return tensor(s, dtype=dtype or float32, device=device, requires_grad=requires_grad)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of elements is among test_elements (a bool tensor of elements' shape)."""
    values = [to_numpy(storage(t)) if isinstance(t, Tensor) else np.asarray(t) for t in (elements, test_elements)]
    like = elements if isinstance(elements, Tensor) else test_elements
    return made_like(like, np.isin(*values, invert=invert), None)


def msort(input):
    """input sorted along its first dimension."""
    return sort(input, dim=0).values


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with src written at input[start:end:step] along dim."""
    d = _dim(dim, input.ndim)
    return _put(input, (slice(None),) * d + (slice(start, end, step),), src)


def _fill_with(name, draw, valid, refusal):
    """An in-place fill of `draw`'s samples, refusing arguments that fail `valid` with PyTorch's message."""
    def fill_(self, *args, generator=None):
        if not valid(*args):
            raise RuntimeError(f"{name} expects {refusal(*args)}")
        return self.assign(draw(stream(generator, f"{name}()", self.device), storage(self).shape, *args))
    fill_.__name__, fill_.__doc__ = name, f"Fill in place with {name[:-1].replace('_', '-')} samples."
    return fill_


Tensor.cauchy_ = _fill_with("cauchy_", lambda g, shape, median=0.0, sigma=1.0:
                            median + sigma * np.tan(np.pi * (g.random(shape) - 0.5)),
                            lambda median=0.0, sigma=1.0: sigma > 0,
                            lambda median=0.0, sigma=1.0: f"sigma > 0.0, but found sigma={sigma:g}")
Tensor.geometric_ = _fill_with("geometric_", lambda g, shape, p: g.geometric(p, shape), lambda p: 0 < p < 1,
                               lambda p: f"p to be in (0, 1), but got p={p:g}")
Tensor.log_normal_ = _fill_with("log_normal_", lambda g, shape, mean=1.0, std=2.0: g.lognormal(mean, std, shape),
                                lambda mean=1.0, std=2.0: std > 0,
                                lambda mean=1.0, std=2.0: f"std > 0.0, but found std={std:g}")
Tensor.ravel = ravel
Tensor.msort = msort

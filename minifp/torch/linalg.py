"""torch.linalg: the norms training code takes (gradient clipping, weight norms, logging); the rest of linear
algebra is not part of the face (docs/torch_coverage.md)."""
from __future__ import annotations

import math

from ._tensor import _dims

__all__ = ["vector_norm", "norm", "matrix_norm"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|**ord) ** (1/ord) over dim (all by default); ord inf / -inf: the largest / smallest |x|; 0: the count
    of nonzeros."""
    x = x.to(dtype) if dtype is not None else x
    axes = _dims(dim, x.ndim)
    a = x.abs()
    if ord == math.inf:
        return a.amax(axes, keepdim)
    if ord == -math.inf:
        return a.amin(axes, keepdim)
    if ord == 0:
        return (a != 0).to(x.dtype).sum(axes, keepdim)
    if ord == 1:
        return a.sum(axes, keepdim)
    if ord == 2:
        return (a * a).sum(axes, keepdim).sqrt()
    return (a ** ord).sum(axes, keepdim) ** (1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The Frobenius norm (ord "fro") over the two dims; other orders are not part of the face."""
    if ord != "fro":
        raise NotImplementedError(f"torch.linalg.matrix_norm(ord={ord!r}): minifp has the Frobenius norm only")
    return vector_norm(A, 2, dim, keepdim, dtype=dtype)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """vector_norm for ord None over all or one dim, or a vector ord; the Frobenius norm for "fro"."""
    if ord == "fro":
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)

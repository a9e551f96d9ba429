"""torch.linalg: the norms training code takes (gradient clipping, weight norms, logging); the rest of linear
algebra is not part of the face (docs/torch_coverage.md)."""
from __future__ import annotations

import math

from ..engine import apply
from ._tensor import _dim, _dims, _type_name, matmul

__all__ = ["vector_norm", "norm", "matrix_norm", "vecdot", "cross", "multi_dot"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|**ord) ** (1/ord) over dim (all by default) as one op, PyTorch's norm kernel: the float32 sum rounded
    once; ord inf / -inf: the largest / smallest |x|; 0: the count of nonzeros."""
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    if not x.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(x)}")
    x = x.to(dtype) if dtype is not None else x
    axes = _dims(dim, x.ndim)
    axes = None if x.ndim == 0 or axes == () else axes      # a 0-dim tensor's one element; () is every dim
    if ord < 0 or math.isinf(ord):      # no identity: an empty reduction has no value
        reduced = range(x.ndim) if axes is None else (axes,) if isinstance(axes, int) else axes
        if x.numel() == 0 and any(x.shape[d] == 0 for d in reduced):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an empty tensor because the "
                               f"operation does not have an identity")
    return apply("vector_norm", x, ord=float(ord), axis=axes, keepdims=keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The Frobenius norm ("fro") or the largest (smallest) absolute column sum (ord 1, -1) or row sum (inf, -inf)
    over the two dims; the orders that need singular values (2, -2, "nuc") are not part of the face."""
    if ord == "fro":
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if ord not in (1, -1, math.inf, -math.inf):
        if ord in (2, -2, "nuc"):
            raise NotImplementedError(f"torch.linalg.matrix_norm(ord={ord!r}) needs singular values, which "
                                      f"minifp.torch does not have")
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    A = A.to(dtype) if dtype is not None else A
    rows, cols = (_dim(d, A.ndim) for d in dim)
    summed, kept = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = A.abs().sum(summed, True)
    out = sums.amax(kept, True) if ord > 0 else sums.amin(kept, True)
    return out if keepdim else out.squeeze((rows, cols))


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A matrix norm over two dims (dim a pair, or a 2-D A with an ord), else vector_norm (the 2-norm for None)."""
    two = isinstance(dim, (tuple, list)) and len(dim) == 2
    if isinstance(ord, str) or ord is not None and (two or dim is None and A.ndim == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim if dim is not None else (-2, -1), keepdim,
                           dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def vecdot(x, y, *, dim=-1):
    """Sum of x * y along dim (PyTorch's own decomposition: the elementwise products, then their sum)."""
    return (x * y).sum(dim)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along dim (inputs broadcast)."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = _dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    a, b = (t.unbind(d) for t in (input, other))
    parts = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    from ._functions import stack           # (imported here: _functions imports this module's users)
    return stack(parts, d)


def multi_dot(tensors, *, out=None):
    """tensors[0] @ tensors[1] @ ...; a 1-D first (last) tensor is a row (column) vector, dropped from the result."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0].ndim == 1, tensors[-1].ndim == 1
    ts = [tensors[0].unsqueeze(0) if first else tensors[0], *tensors[1:-1],
          tensors[-1].unsqueeze(1) if last else tensors[-1]]
    for i, t in enumerate(ts):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i].ndim}D")
    out = _chain(ts, _chain_order([t.shape[0] for t in ts] + [ts[-1].shape[1]]), 0, len(ts) - 1)
    return out.reshape([s for s, drop in zip(out.shape, (first, last)) if not drop])


def _chain_order(dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (the matrix-chain order PyTorch uses)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                          for k in range(i, j))
    return split


def _chain(ts, split, i, j):
    if i == j:
        return ts[i]
    k = split[i][j]
    return matmul(_chain(ts, split, i, k), _chain(ts, split, k + 1, j))

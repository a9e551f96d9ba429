"""PyTorch's shape, creation and indexing ops: spaced values, diagonals, pads, rolls, rotations, takes and masks.

Every op here only moves or selects values, so each is composed of the engine's getitem, setitem, reshape,
transpose, broadcast_to, concatenate and where (values stay exact and gradients flow through them); integer and
bool tensors, which have no gradient, take the same index arrays through NumPy.
"""
from __future__ import annotations

import itertools
import math
import numbers

import numpy as np

from ..engine import apply, made_like, storage, Tensor as _EngineTensor, to_numpy
from ._functions import cat, stack
from ._methods import _in_place, flip
from ._tensor import Size, Tensor, broadcast_refusal, return_type, broadcast_shape, _dim, _dims, _shape_args, _type_name, get_default_dtype, int64, tensor, zeros
from . import linalg as _linalg

__all__ = ["linspace", "logspace", "eye", "meshgrid", "diagonal", "diag", "diag_embed", "diagflat", "narrow", "roll",
           "rot90", "take", "masked_select", "fliplr", "flipud", "movedim", "moveaxis",
           "swapaxes", "swapdims", "select", "index_select", "take_along_dim", "unflatten", "tensor_split", "hsplit",
           "vsplit", "dsplit", "split_with_sizes", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack",
           "row_stack", "dstack", "column_stack", "tile", "broadcast_shapes", "broadcast_tensors", "nonzero",
           "argwhere", "kthvalue", "median", "nanmedian", "mode", "diagonal_scatter", "select_scatter", "index_fill",
           "index_copy", "masked_scatter", "put", "scatter", "scatter_reduce", "scatter_add", "index_reduce",
           "index_add", "tril_indices", "triu_indices", "unravel_index", "combinations", "cartesian_prod",
           "block_diag", "repeat_interleave", "bincount", "searchsorted", "bucketize", "unique", "unique_consecutive",
           "diff", "cumprod", "logcumsumexp", "cummax", "cummin", "index_put", "nonzero_static"]


def _np(t):
    """A tensor's storage as a NumPy array."""
    return to_numpy(storage(t))


def _ints(like, arr):
    """An int64 tensor of `arr` on like's device."""
    return made_like(like, np.asarray(arr, np.int64), None)


def _at(x, index):
    """x[index] (NumPy's indexing): the engine's getitem for floating tensors, NumPy's for the others."""
    if x.fmt is not None:
        return apply("getitem", x, index=index)
    return made_like(x, np.array(_np(x)[index], order="C"), None)     # (ascontiguousarray makes 0-dim 1-dim)


def _put(base, index, value):
    """A copy of base with base[index] = value (the engine's setitem for floating tensors)."""
    if base.fmt is not None:
        value = value.to(base.dtype) if isinstance(value, _EngineTensor) else tensor(value, dtype=base.dtype)
        return apply("setitem", base, value, index=index)
    out = _np(base).copy()
    out[index] = _np(value) if isinstance(value, _EngineTensor) else value
    return made_like(base, out, None)


def _as_shape_of(input, out):
    """out (computed on a 0-dim input viewed as one of shape [1]) back in input's shape."""
    return out.reshape(()) if input.ndim == 0 else out


def _scalar(v, name):
    """A Python number from a number or a 0-dim tensor (linspace's start and end)."""
    if isinstance(v, _EngineTensor):
        if v.ndim:
            raise RuntimeError(f"linspace only supports 0-dimensional start and end tensors, but got {name} with "
                               f"{v.ndim} dimension(s).")
        return v.item()
    return v


def _steps(steps):
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return int(steps)


def _spaced(start, end, steps):
    """PyTorch's linspace values in float64: from start for the first half, back from end for the second."""
    start, end, steps = _scalar(start, "start"), _scalar(end, "end"), _steps(steps)
    if steps == 1:
        return np.array([start], np.float64)
    i = np.arange(steps, dtype=np.float64)
    step = (end - start) / max(steps - 1, 1)
    return np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """`steps` evenly spaced values from start to end, both included."""
    return tensor(_spaced(start, end, steps), dtype=dtype or get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """base ** linspace(start, end, steps)."""
    return tensor(np.power(float(base), _spaced(start, end, steps)), dtype=dtype or get_default_dtype(),
                  device=device, requires_grad=requires_grad)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The n x m identity matrix."""
    m = n if m is None else m
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    return tensor(np.eye(n, m), dtype=dtype or get_default_dtype(), device=device, requires_grad=requires_grad)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids: each 0-/1-dim tensor broadcast along its own dim ("ij"; "xy": the first two swapped)."""
    tensors = tuple(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:                            # "xy": the "ij" grids of the first two inputs swapped
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    grids = [_broadcast(t.reshape([-1 if j == i else 1 for j in range(len(ts))]), shape) for i, t in enumerate(ts)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _broadcast(t, shape):
    if t.fmt is not None:
        return apply("broadcast_to", t, shape=tuple(shape))
    return made_like(t, np.ascontiguousarray(np.broadcast_to(_np(t), shape)), None)


def _permute(t, axes):
    if t.fmt is not None:
        return apply("transpose", t, axes=tuple(axes))
    return made_like(t, np.ascontiguousarray(np.transpose(_np(t), axes)), None)


# -- diagonals ---------------------------------------------------------------------------------------------


def _diagonal_index(rows, cols, offset):
    """(row indices, column indices) of diagonal `offset` of a rows x cols matrix."""
    n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    return np.arange(n) + max(-offset, 0), np.arange(n) + max(offset, 0)


def _last_two(ndim, d1, d2):
    """The permutation that moves dims d1, d2 last (the others in order)."""
    return [i for i in range(ndim) if i not in (d1, d2)] + [d1, d2]


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal `offset` of the matrices in dims dim1, dim2, as input's last dim."""
    d1, d2 = _dim(dim1, input.ndim), _dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rows, cols = _diagonal_index(input.shape[d1], input.shape[d2], offset)
    return _at(_permute(input, _last_two(input.ndim, d1, d2)), (Ellipsis, rows, cols))


def _linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: torch.diagonal with the last two dims by default."""
    return diagonal(A, offset, dim1, dim2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices in dims dim1, dim2 of the output with input's last dim on their diagonal `offset`."""
    nd = input.ndim + 1
    d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset)
    rows, cols = _diagonal_index(n, n, offset)
    out = _put(zeros(tuple(input.shape[:-1]) + (n, n), dtype=input.dtype, device=input.device),
               (Ellipsis, rows, cols), input)
    batch = iter(range(nd - 2))
    return _permute(out, [nd - 2 if i == d1 else nd - 1 if i == d2 else next(batch) for i in range(nd)])


def diag(input, diagonal=0):
    """A 1-dim input on a matrix's diagonal `diagonal`; a 2-dim input's diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return globals()["diagonal"](input, diagonal)


def diagflat(input, offset=0):
    """input flattened onto a matrix's diagonal `offset`."""
    return diag_embed(input.reshape(-1), offset)


# -- slices, rolls, rotations ------------------------------------------------------------------------------


def narrow(input, dim, start, length):
    """`length` entries of dim from `start` (a negative start counts from the end)."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, input.ndim)
    n = input.shape[d]
    if isinstance(start, _EngineTensor) and (start.ndim or start.fmt is not None):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start = int(start.item()) if isinstance(start, _EngineTensor) else start
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    start %= max(n, 1) if start < 0 else n + 1
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _at(input, (slice(None),) * d + (slice(start, start + length),))


def roll(input, shifts, dims=None):
    """input shifted circularly by `shifts` along dims (the flattened input when dims is None)."""
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    for s, d in zip(shifts, dims):
        d = _dim(d, input.ndim)
        input = _at(input, (slice(None),) * d + (np.roll(np.arange(input.shape[d]), s),))
    return input


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by k quarter turns from dims[0] towards dims[1]."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    a, b = _dim(dims[0], input.ndim), _dim(dims[1], input.ndim)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    axes = list(range(input.ndim))
    axes[a], axes[b] = b, a
    k %= 4
    if k == 1:
        return _permute(flip(input, [b]), axes)
    if k == 2:
        return flip(input, [a, b])
    if k == 3:
        return flip(_permute(input, axes), [b])
    return _at(input, (slice(None),) * input.ndim)


def fliplr(input):
    """input with its columns (dim 1) reversed."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, [1])


def flipud(input):
    """input with its rows (dim 0) reversed."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, [0])


def movedim(input, source, destination):
    """input with dims `source` moved to positions `destination` (the others keep their order)."""
    src = _dims(list(source) if isinstance(source, (tuple, list)) else [source], input.ndim)
    dst = _dims(list(destination) if isinstance(destination, (tuple, list)) else [destination], input.ndim)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    rest = iter(i for i in range(input.ndim) if i not in src)
    where = dict(zip(dst, src))
    return _permute(input, [where[i] if i in where else next(rest) for i in range(input.ndim)])


moveaxis = movedim


def swapaxes(input, axis0, axis1):
    """input with two dims exchanged (transpose)."""
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def select(input, dim, index):
    """The slice at `index` of dim, without dim."""
    d = _dim(dim, input.ndim)
    n = input.shape[d]
    index = int(index.item()) if isinstance(index, _EngineTensor) else index
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return _at(input, (slice(None),) * d + (index,))


def index_select(input, dim, index):
    """The slices of dim at the entries of a 1-dim index."""
    if index.fmt is not None:
        raise RuntimeError("index_select(): Expected dtype int32/int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _dim(dim, input.ndim)
    idx = _np(index).reshape(-1)
    n = input.shape[d] if input.ndim else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError("index out of range in self")
    if input.ndim == 0:
        return _at(input.reshape(1), (idx,)).reshape(())
    return _at(input, (slice(None),) * d + (idx,))


def take(input, index):
    """input's values at flat positions `index`, in index's shape."""
    if index.fmt is not None:
        raise RuntimeError("take(): Expected a long tensor for index, but got Float")
    idx, n = _np(index), input.numel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"out of range: tried to access index {idx.max() if idx.max() >= n else idx.min()} on a "
                         f"tensor of {n} elements.")
    return _at(input.reshape(-1), (idx,))


def take_along_dim(input, indices, dim=None):
    """input's values at `indices` along dim (broadcast against each other), or at flat positions."""
    if indices.fmt is not None:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got Float")
    if dim is None:
        return take(input, indices.reshape(-1))
    d = _dim(dim, input.ndim)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    shape = [max(a, b) if i != d else None for i, (a, b) in enumerate(zip(input.shape, indices.shape))]
    xs = _broadcast(input, [s if s is not None else input.shape[d] for s in shape])
    idx = np.broadcast_to(_np(indices), [s if s is not None else indices.shape[d] for s in shape])
    grid = list(np.indices(idx.shape, sparse=True))
    grid[d] = idx
    return _at(xs, tuple(grid))


def masked_select(input, mask):
    """A 1-dim tensor of input's values where the (broadcast) bool mask holds."""
    if not isinstance(mask, _EngineTensor) or storage(mask).dtype != np.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask")
    shape = broadcast_shape(tuple(mask.shape), tuple(input.shape))
    return _at(_broadcast(input, shape), np.broadcast_to(_np(mask), shape))


# -- splits, stacks, tiles -------------------------------------------------------------------------------


def sum_to_size(self, *size):
    """self summed over the dims that broadcasting to `size` would have expanded."""
    size = _shape_args(size)
    lead = self.ndim - len(size)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(size, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(size) if n == 1 and self.shape[lead + i] != 1)
    return self.sum(dims, keepdim=True).reshape(size) if dims else self


def unflatten(input, dim, sizes):
    """input with dim split into `sizes` (one of them may be -1)."""
    d = _dim(dim, input.ndim)
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if -1 not in sizes and math.prod(sizes) != input.shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({input.shape[d]}) in the input tensor")
    return input.reshape(tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))


def tensor_split(input, indices_or_sections, dim=0):
    """Views of input split along dim into n near-equal sections, or at the given indices."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _dim(dim, input.ndim)
    n = input.shape[d]
    cut = indices_or_sections
    if isinstance(cut, _EngineTensor):
        if cut.fmt is not None or cut.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have integer dtype and to be "
                               "zero-dimensional or one-dimensional")
        cut = int(cut.item()) if cut.ndim == 0 else [int(v) for v in _np(cut)]
    if isinstance(cut, numbers.Integral):
        if cut <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {cut}")
        q, r = divmod(n, cut)
        bounds = np.cumsum([0] + [q + 1] * r + [q] * (cut - r))
    else:
        bounds = [0] + [min(max(int(i) if i >= 0 else n + int(i), 0), n) for i in cut] + [n]
    return tuple(_at(input, (slice(None),) * d + (slice(int(a), max(int(a), int(b))),))
                 for a, b in zip(bounds[:-1], bounds[1:]))


def _split_at(name, dim, least):
    def fn(input, indices_or_sections):
        if input.ndim < least:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {least} dimension, but got a tensor "
                               f"with {input.ndim} dimensions!")
        d = 1 if name == "hsplit" and input.ndim > 1 else 0 if name == "hsplit" else dim
        if isinstance(indices_or_sections, numbers.Integral) and (
                indices_or_sections == 0 or input.shape[d] % indices_or_sections):
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the dimension "
                               f"{input.shape[d]} is not divisible by the split_size {indices_or_sections}!")
        return tensor_split(input, indices_or_sections, d)
    fn.__name__ = name
    fn.__doc__ = f"torch.{name}: tensor_split along dim {dim} (numpy.{name}'s rules)."
    return fn


hsplit, vsplit, dsplit = _split_at("hsplit", 1, 1), _split_at("vsplit", 0, 2), _split_at("dsplit", 2, 3)


def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of the listed sizes along dim."""
    return input.split(list(split_sizes), dim)


def _atleast(n):
    def fn(*tensors):
        ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
        out = []
        for t in ts:
            shape = tuple(t.shape)
            if len(shape) < n:          # numpy's rules: (n,) -> (1, n) or (1, n, 1); (r, c) -> (r, c, 1)
                shape = {0: (1,) * n, 1: (1,) + shape + (1,) * (n - 2), 2: shape + (1,)}[len(shape)]
            out.append(t.reshape(shape) if shape != tuple(t.shape) else t)
        return out[0] if len(tensors) == 1 and isinstance(tensors[0], _EngineTensor) else tuple(out)
    fn.__name__ = f"atleast_{n}d"
    fn.__doc__ = f"Each tensor viewed with at least {n} dims."
    return fn


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def _stacker(name, prepare, dim):
    def fn(tensors):
        if not tensors:
            raise RuntimeError(f"{name} expects a non-empty TensorList")
        ts = [prepare(t) for t in tensors]
        for t in ts[1:]:
            if t.ndim != ts[0].ndim:
                raise RuntimeError(f"Tensors must have same number of dimensions: got {ts[0].ndim} and {t.ndim}")
        return cat(ts, 0 if name == "hstack" and ts[0].ndim == 1 else dim)
    fn.__name__ = name
    fn.__doc__ = f"torch.{name}: the tensors joined (numpy.{name}'s rules)."
    return fn


hstack = _stacker("hstack", atleast_1d, 1)
vstack = row_stack = _stacker("vstack", atleast_2d, 0)
dstack = _stacker("dstack", atleast_3d, 2)
column_stack = _stacker("column_stack", lambda t: t.reshape(-1, 1) if t.ndim <= 1 else t, 1)


def tile(input, *dims):
    """input repeated dims times along each dim (leading ones added to the shorter of the two); dims a sequence or
    several ints."""
    dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
    return input.repeat((1,) * (input.ndim - len(dims)) + dims)


def unfold(self, dimension, size, step):
    """Windows of `size` every `step` along dimension, as a new last dim."""
    d = _dim(dimension, self.ndim)
    n = self.shape[d] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if self.ndim == 0:
        return self.reshape(1)
    starts = np.arange(0, n - size + 1, step)
    win = starts[:, None] + np.arange(size)
    out = _at(self, (slice(None),) * d + (win,))
    return _permute(out, [i for i in range(out.ndim) if i != d + 1] + [d + 1])


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to."""
    try:
        return Size(np.broadcast_shapes(*[(s,) if isinstance(s, numbers.Integral) else tuple(s) for s in shapes]))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape") from None


def broadcast_tensors(*tensors):
    """The tensors broadcast to one shape."""
    refused = broadcast_refusal([tuple(t.shape) for t in tensors])
    if refused:
        raise RuntimeError(refused)
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(_broadcast(t, shape) if tuple(t.shape) != tuple(shape) else t for t in tensors)


def nonzero(input, *, as_tuple=False):
    """The indices of input's nonzero entries: an (n, ndim) int64 tensor, or one per dim."""
    a = _np(input)
    if input.ndim == 0:                 # a 0-dim tensor has one position (with no coordinates) or none
        n = int(a != 0)
        return (_ints(input, np.zeros(n)),) if as_tuple else _ints(input, np.zeros((n, 0)))
    where = np.nonzero(a)
    if as_tuple:
        return tuple(_ints(input, w) for w in where)
    return _ints(input, np.stack(where, -1).reshape(-1, input.ndim))


def argwhere(input):
    """nonzero(input): the indices of its nonzero entries, one row each."""
    return nonzero(input)


def reshape_as(self, other):
    """self reshaped to other's shape."""
    if self.numel() != other.numel():
        raise RuntimeError(f"shape '{list(other.shape)}' is invalid for input of size {self.numel()}")
    return self.reshape(other.shape)


# -- order statistics ------------------------------------------------------------------------------------

_values_indices = {n: return_type(n) for n in ("kthvalue", "median", "nanmedian",
                                                                                  "mode")}


def _pick(input, d, rank, keepdim, name):
    """(values, indices) at per-row positions `rank` (an array shaped as input with dim d of length 1) of input
    sorted along d."""
    s = input.sort(d)
    idx = made_like(input, np.asarray(rank, np.int64), None)
    values, indices = s.values.gather(d, idx), s.indices.gather(d, idx)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return _values_indices[name](values, indices)


def _row_dim(input, dim):
    return _dim(dim, input.ndim) if input.ndim else 0


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest entry along dim."""
    if input.fmt is None and input.ndim == 0:
        raise RuntimeError("kthvalue(): expected a floating or integer tensor of at least one element")
    d = _row_dim(input, dim)
    x = input.reshape(1) if input.ndim == 0 else input
    if not 1 <= k <= x.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    shape = list(x.shape)
    shape[d] = 1
    out = _pick(x, d, np.full(shape, k - 1), keepdim or input.ndim == 0, "kthvalue")
    return out if input.ndim else _values_indices["kthvalue"](out.values.reshape(()), out.indices.reshape(()))


def _median(input, dim, keepdim, name, skip_nan):
    if dim is None:
        flat = input.reshape(-1)
        if flat.shape[0] == 0:
            return tensor(float("nan"), dtype=input.dtype, device=input.device)
        return _median(flat, 0, False, name, skip_nan).values
    d = _row_dim(input, dim)
    x = input.reshape(1) if input.ndim == 0 else input
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    v = _np(x).astype(np.float32) if x.fmt is not None else _np(x)
    nans = np.isnan(v).sum(axis=d, keepdims=True) if v.dtype.kind == "f" else np.zeros(1, np.int64)
    n = x.shape[d]
    # NaNs sort last: median returns the first NaN, nanmedian the median of the others
    rank = (n - nans - 1) // 2 if skip_nan else np.where(nans > 0, n - nans, (n - 1) // 2)
    rank = np.broadcast_to(np.maximum(rank, 0), [1 if i == d else m for i, m in enumerate(x.shape)])
    out = _pick(x, d, rank, keepdim or input.ndim == 0, name)
    return out if input.ndim else _values_indices[name](out.values.reshape(()), out.indices.reshape(()))


def median(input, dim=None, keepdim=False):
    """The lower median (of all entries, or (values, indices) along dim); NaN where a NaN takes part."""
    return _median(input, dim, keepdim, "median", False)


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaNs (NaN where a row holds only NaNs)."""
    return _median(input, dim, keepdim, "nanmedian", True)


def _row_mode(row):
    """(smallest most frequent value's last position) in a 1-dim array."""
    values, counts = np.unique(row, return_counts=True)
    best = values[np.argmax(counts)]
    return int(np.flatnonzero(row == best)[-1])


def mode(input, dim=-1, keepdim=False):
    """(values, indices) of the most frequent entry along dim (the smallest of ties; its last position)."""
    d = _row_dim(input, dim)
    x = input.reshape(1) if input.ndim == 0 else input
    v = np.moveaxis(_np(x), d, -1)
    pos = np.array([_row_mode(r) for r in v.reshape(-1, v.shape[-1])], np.int64).reshape(v.shape[:-1])
    idx = made_like(x, np.expand_dims(pos, d), None)
    values, indices = x.gather(d, idx), idx
    if not keepdim or input.ndim == 0:
        values, indices = values.squeeze(d), indices.squeeze(d)
    if input.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return _values_indices["mode"](values, indices)


# -- scatters that overwrite ------------------------------------------------------------------------------


def _inverse(axes):
    return list(np.argsort(axes))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src written on the diagonal `offset` of dims dim1, dim2."""
    d1, d2 = _dim(dim1, input.ndim), _dim(dim2, input.ndim)
    axes = _last_two(input.ndim, d1, d2)
    rows, cols = _diagonal_index(input.shape[d1], input.shape[d2], offset)
    want = tuple(input.shape[a] for a in axes[:-2]) + (len(rows),)
    if tuple(src.shape) != want:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(want)}")
    return _permute(_put(_permute(input, axes), (Ellipsis, rows, cols), src), _inverse(axes))


def select_scatter(input, src, dim, index):
    """A copy of input with src written at `index` of dim."""
    d = _dim(dim, input.ndim)
    want = tuple(n for i, n in enumerate(input.shape) if i != d)
    if tuple(src.shape) != want:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(want)}")
    return _put(input, (slice(None),) * d + (index,), src)


def _index_along(input, dim, index, name):
    """The (dim, NumPy index) that selects index's entries of dim."""
    if not isinstance(index, _EngineTensor) or index.fmt is not None:
        raise IndexError(f"{name}(): Expected dtype int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    d = _row_dim(input, dim)
    idx = _np(index).reshape(-1)
    n = input.shape[d] if input.ndim else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"index {idx.max() if idx.max() >= n else idx.min()} is out of bounds for dimension {d} "
                         f"with size {n}")
    return d, (slice(None),) * d + (idx,)


def index_fill(input, dim, index, value):
    """A copy of input with `value` in the slices of dim at index."""
    if isinstance(value, _EngineTensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    x = input.reshape(1) if input.ndim == 0 else input
    d, where = _index_along(x, dim, index, "index_fill")
    where = where[:-1] + (np.unique(where[-1] % max(x.shape[d], 1)),)     # each slice once: value's gradient
    return _as_shape_of(input, _put(x, where, value))


def index_copy(input, dim, index, source):
    """A copy of input with source's slices written at the entries of index along dim."""
    x = input.reshape(1) if input.ndim == 0 else input
    d, where = _index_along(x, dim, index, "index_copy")
    src = source.reshape(1) if source.ndim == 0 else source
    want = list(x.shape)
    want[d] = len(where[-1])
    if list(src.shape) != want:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                           f"slice shape: {list(x.shape)} at dimension {d} and source slice shape: "
                           f"{list(src.shape)} at dimension 0.")
    return _as_shape_of(input, _put(x, where, src))


def masked_scatter(input, mask, source):
    """A copy of input (broadcast with mask) with source's leading values, in order, where mask holds."""
    if not isinstance(mask, _EngineTensor) or storage(mask).dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{input.dtype} and {source.dtype}")
    shape = broadcast_shape(tuple(mask.shape), tuple(input.shape))
    m = np.broadcast_to(_np(mask), shape)
    count = int(m.sum())
    if count > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    return _put(_broadcast(input, shape), m, source.reshape(-1)[:count])


def put(input, index, source, accumulate=False):
    """A copy of input with source's values at the flat positions index (accumulate: added there)."""
    if index.fmt is not None:
        raise RuntimeError("put_(): Expected a long tensor for index, but got Float")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n, idx = input.numel(), _np(index).reshape(-1)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"out of range: tried to access index {idx.max() if idx.max() >= n else idx.min()} on a "
                         f"tensor of {n} elements.")
    flat = input.reshape(-1)
    if accumulate:
        return index_add(flat, 0, made_like(index, idx, None), source.reshape(-1)).reshape(input.shape)
    return _put(flat, (idx,), source.reshape(-1)).reshape(input.shape)


def _scatter_index(input, dim, index, src, name):
    """The NumPy index of scatter's targets: index's positions, with dim's coordinate replaced by index."""
    if index.fmt is not None:
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")
    d = _row_dim(input, dim)
    idx = _np(index)
    if index.ndim != input.ndim and index.numel():
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, _EngineTensor) and src.ndim != index.ndim and index.numel():
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    n = input.shape[d] if input.ndim else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise RuntimeError(f"index {idx.max() if idx.max() >= n else idx.min()} is out of bounds for dimension "
                           f"{d} with size {n}")
    if input.ndim == 0:
        return d, idx.reshape(-1)
    grid = list(np.indices(idx.shape, sparse=True))
    grid[d] = idx
    return d, tuple(grid)


def _src_part(src, index):
    """src's leading block of index's shape (scatter reads only that much)."""
    if not isinstance(src, _EngineTensor):
        return src
    if src.ndim == 0:
        return src.reshape(1) if index.ndim else src
    return _at(src, tuple(slice(0, n) for n in index.shape))


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of input with src's values (or `value`) written at index along dim."""
    if src is None:
        src = value
    if reduce is not None:
        return scatter_reduce(input, dim, index, src if isinstance(src, _EngineTensor) else
                              _filled(input, index, src), {"add": "sum", "multiply": "prod"}[reduce])
    d, where = _scatter_index(input, dim, index, src, "scatter")
    x = input.reshape(1) if input.ndim == 0 else input
    part = _src_part(src, index)
    if input.ndim == 0 and isinstance(part, _EngineTensor):
        part = part.reshape(-1)
    return _as_shape_of(input, _put(x, where, part))


def _filled(input, index, value):
    """A tensor of index's shape filled with value in input's dtype (scatter's value form)."""
    return tensor(np.full(tuple(index.shape), value), dtype=input.dtype, device=input.device)


# -- scatters that reduce: one engine op (scatter_reduce), one rounding ---------------------------------------

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _reduced(input, where, src, reduce, include_self):
    """input with src reduced into input[where] (integer index arrays) by the engine's scatter_reduce."""
    if input.fmt is None:
        out = _np(input).copy()
        if not include_self:
            out[where] = {"sum": 0, "mean": 0, "prod": 1}.get(reduce, np.iinfo(out.dtype).min if reduce == "amax"
                                                                else np.iinfo(out.dtype).max)
        {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce].at(
            out, where, _np(src))
        if reduce == "mean":
            count = np.zeros(out.shape, np.int64)
            np.add.at(count, where, 1)
            out = np.where(count > 0, out // np.maximum(count + include_self, 1), out)
        return made_like(input, out.astype(storage(input).dtype), None)
    if src.dtype != input.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype")
    return apply("scatter_reduce", input, src, index=where, reduce=reduce, include_self=include_self)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """input with src's values reduced (sum, prod, mean, amax, amin) into the positions index names along dim."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d, where = _scatter_index(input, dim, index, src, "scatter_reduce")
    if index.numel() == 0:
        return _at(input, (Ellipsis,))
    x = input.reshape(1) if input.ndim == 0 else input
    part = _src_part(src, index)
    where = where if input.ndim else (where,)
    return _as_shape_of(input, _reduced(x, where, part.reshape(-1) if input.ndim == 0 else part, reduce,
                                        include_self))


def scatter_add(input, dim, index, src):
    """input with src's values added into the positions index names along dim."""
    return scatter_reduce(input, dim, index, src, "sum")


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """input with source's slices reduced (prod, mean, amax, amin) into the slices of dim at index."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                           f"{reduce}.")
    return _index_reduce(input, dim, index, source, reduce, include_self, "index_reduce")


def _index_reduce(input, dim, index, source, reduce, include_self, name):
    x = input.reshape(1) if input.ndim == 0 else input
    d, _ = _index_along(x, dim, index, name)
    src = source.reshape(1) if source.ndim == 0 else source
    idx = _np(index).reshape(-1)
    if src.ndim != x.ndim or src.shape[d] != len(idx) or any(
            a != b for i, (a, b) in enumerate(zip(src.shape, x.shape)) if i != d):
        raise RuntimeError(f"{name}_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {list(x.shape)} at dimension {d} and source slice shape: {list(src.shape)} "
                           f"at dimension 0.")
    grid = list(np.indices(src.shape, sparse=True))
    grid[d] = idx.reshape([-1 if i == d else 1 for i in range(src.ndim)]) % max(x.shape[d], 1)
    if not len(idx):
        return _at(input, (Ellipsis,))
    return _as_shape_of(input, _reduced(x, tuple(grid), src, reduce, include_self))


def index_add(input, dim, index, source, *, alpha=1):
    """input with alpha * source's slices added into the slices of dim at index."""
    return _index_reduce(input, dim, index, source * alpha if alpha != 1 else source, "sum", True, "index_add")


# -- index sets, counts and searches (integer results, no gradient) ---------------------------------------


def _triangle_indices(row, col, offset, lower, dtype, device):
    keep = np.tri(row, col, offset, dtype=bool) if lower else ~np.tri(row, col, offset - 1, dtype=bool)
    return tensor(np.stack(np.nonzero(keep)).reshape(2, -1), dtype=dtype or int64, device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, n) coordinates of a row x col matrix's lower triangle (from diagonal `offset` down)."""
    return _triangle_indices(row, col, offset, True, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, n) coordinates of a row x col matrix's upper triangle (from diagonal `offset` up)."""
    return _triangle_indices(row, col, offset, False, dtype, device)


def unravel_index(indices, shape):
    """The coordinates in `shape` of flat positions (one int64 tensor per dim)."""
    if not isinstance(indices, _EngineTensor):
        indices = tensor(indices)
    if indices.fmt is not None or storage(indices).dtype == np.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if any(n < 0 for n in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    idx, total = _np(indices).astype(np.int64), math.prod(shape)
    if idx.size and (idx.min() < -total or idx.max() >= total):
        raise RuntimeError("index out of bounds for the given shape")
    idx = idx % max(total, 1)
    out, rest = [], idx
    for n in reversed(shape):           # Python ints: sizes past int64's products stay exact
        out.append(rest % n if n else rest)
        rest = rest // n if n else rest
    return tuple(_ints(indices, o) for o in reversed(out))


def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-dim tensor's entries, one per row."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(pick(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    if r == 0:
        return _at(input, (slice(0, 0),))
    return _at(input, (rows,))


def cartesian_prod(*tensors):
    """Every combination of one entry from each 1-dim tensor, one per row (a 1-dim tensor for one input)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack(tuple(g.reshape(-1) for g in grids), 1)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-dim) as the blocks of one block-diagonal matrix."""
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        mats.append(t.reshape(1, -1) if t.ndim < 2 else t)
    rows, cols = sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)
    kinds = [m for m in mats if m.fmt is not None]
    like = kinds[0] if kinds else (mats[0] if mats else None)
    out = zeros(rows, cols, dtype=like.dtype if like is not None else None,
                device=like.device if like is not None else None)
    r = c = 0
    for m in mats:
        out = _put(out, (slice(r, r + m.shape[0]), slice(c, c + m.shape[1])), m)
        r, c = r + m.shape[0], c + m.shape[1]
    return out


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each entry (slice along dim) repeated `repeats` times; repeat_interleave(counts) repeats their positions."""
    if repeats is None:                 # torch.repeat_interleave(repeats): arange's entries repeated
        counts = _np(input)
        if input.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return _ints(input, np.repeat(np.arange(counts.size), counts))
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _dim(dim, x.ndim)
    if x.ndim == 0:
        x = x.reshape(1)
    reps = _np(repeats).reshape(-1) if isinstance(repeats, _EngineTensor) else np.array([repeats])
    if (reps < 0).any():
        raise RuntimeError("repeats can not be negative")
    if reps.size not in (1, x.shape[d]):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{reps.size} and input.size({d}) = {x.shape[d]}")
    return _at(x, (slice(None),) * d + (np.repeat(np.arange(x.shape[d]), np.broadcast_to(reps, x.shape[d])),))


def bincount(input, weights=None, minlength=0):
    """How often each non-negative integer occurs (weighted: the sum of its weights)."""
    if input.fmt is not None or input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    v = _np(input)
    if v.size and v.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _ints(input, np.bincount(v, minlength=minlength))
    if weights.shape != input.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    w = weights.float32() if weights.fmt is not None else _np(weights).astype(np.float64)
    return tensor(np.bincount(v, w, minlength=minlength),
                  dtype=weights.dtype if weights.fmt is not None else get_default_dtype(), device=input.device)


def _sorted_keys(t):
    return t.float32() if t.fmt is not None else _np(t)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Where input's values would be inserted into the innermost rows of sorted_sequence to keep them sorted."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    values = input if isinstance(input, _EngineTensor) else tensor(input)
    seq, v = _sorted_keys(sorted_sequence), _sorted_keys(values)
    if sorter is not None:
        seq = np.take_along_axis(seq, _np(sorter), -1)
    if seq.ndim > 1 and (values.ndim != seq.ndim or seq.shape[:-1] != v.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(v.shape)}")
    way = "right" if right else "left"
    if seq.ndim <= 1:
        found = np.searchsorted(seq.reshape(-1), v, side=way)
    else:
        rows, vals = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
        found = np.stack([np.searchsorted(a, b, side=way) for a, b in zip(rows, vals)]).reshape(v.shape)
    return made_like(values, np.asarray(found, np.int32 if out_int32 else np.int64), None)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value among 1-dim sorted boundaries (right: boundaries[i-1] <= x < boundaries[i])."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _unique_rows(a, consecutive):
    """(unique values, inverse, counts) of a 1-dim array, sorted or in runs."""
    if not consecutive:
        return np.unique(a, return_inverse=True, return_counts=True)
    if a.size == 0:
        return a, np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.concatenate([[True], a[1:] != a[:-1]])
    inverse = np.cumsum(starts) - 1
    return a[starts], inverse, np.bincount(inverse)


def _unique(input, return_inverse, return_counts, dim, consecutive, name):
    if dim is not None:
        d = _dim(dim, input.ndim)
        moved = np.moveaxis(_np(input), d, 0)
        rows = moved.reshape(moved.shape[0], -1)
        keys = [tuple(r) for r in rows]
        if consecutive:
            starts = [i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]]
            inverse = np.cumsum([i in starts for i in range(len(keys))]) - 1
            first = np.array(starts, np.int64)
        else:
            order = sorted(range(len(keys)), key=lambda i: keys[i])
            first, inverse, seen = [], np.zeros(len(keys), np.int64), {}
            for i in order:
                if keys[i] not in seen:
                    seen[keys[i]] = len(first)
                    first.append(i)
                inverse[i] = seen[keys[i]]
            first = np.array(first, np.int64)
        counts = np.bincount(inverse, minlength=len(first)) if len(keys) else np.zeros(0, np.int64)
        values = _at(input, (slice(None),) * d + (first,))
    else:
        values_np, inverse, counts = _unique_rows(_np(input).reshape(-1), consecutive)
        values = made_like(input, np.ascontiguousarray(values_np), input.fmt)
        inverse = inverse.reshape(input.shape)
    out = (values,) + ((_ints(input, inverse),) if return_inverse else ()) + (
        (_ints(input, counts),) if return_counts else ())
    return out[0] if len(out) == 1 else out


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (slices along dim) of input, sorted; with the inverse map and counts if asked."""
    return _unique(input, return_inverse, return_counts, dim, False, "unique")


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """input with each run of equal values (slices along dim) kept once."""
    return _unique(input, return_inverse, return_counts, dim, True, "unique_consecutive")


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (prepend and append joined first)."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim(dim, input.ndim)
    parts = [p if p.ndim else _broadcast(p.reshape([1] * input.ndim), [1 if i == d else m for i, m in
                                                                       enumerate(input.shape)])
             for p in (prepend, input, append) if p is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        a = _at(x, (slice(None),) * d + (slice(1, None),))
        b = _at(x, (slice(None),) * d + (slice(None, -1),))
        x = made_like(x, _np(a) ^ _np(b), None) if storage(x).dtype == np.bool_ else a - b
    return x


# -- running products, log-sum-exps and extremes ------------------------------------------------------------


def _running(name, input, dim, dtype=None):
    x = input.to(dtype) if dtype is not None else input
    if x.fmt is None:
        if name == "logcumsumexp":
            raise RuntimeError(f"\"logcumsumexp_out_cpu\" not implemented for '{_type_name(x)}'")
        return made_like(x, np.cumprod(_np(x).reshape(x.shape), axis=_row_dim(x, dim)).astype(np.int64)
                         if x.ndim else _np(x).astype(np.int64), None)
    if x.ndim == 0:
        _dim(dim, 0)
        return apply(name, x.reshape(1), axis=0).reshape(())
    return apply(name, x, axis=_dim(dim, x.ndim))


def cumprod(input, dim, *, dtype=None, out=None):
    """Running products along dim."""
    return _running("cumprod", input, dim, dtype)


def logcumsumexp(input, dim, *, out=None):
    """Running log(sum(exp(x))) along dim."""
    return _running("logcumsumexp", input, dim)


_cum_extreme = {n: return_type(n) for n in ("cummax", "cummin")}


def _cum_positions(v, larger):
    """Per position: where the running extreme so far sits (a later tie or a NaN takes over, as in PyTorch)."""
    idx = np.zeros(v.shape, np.int64)
    best, at = v[..., 0].copy(), np.zeros(v.shape[:-1], np.int64)
    for i in range(v.shape[-1]):
        x = v[..., i]
        better = (x >= best) if larger else (x <= best)
        take = np.isnan(x) | (~np.isnan(best) & better) if v.dtype.kind == "f" else better
        best, at = np.where(take, x, best), np.where(take, i, at)
        idx[..., i] = at
    return idx


def _cum_extreme_of(name, input, dim):
    d = _row_dim(input, dim)
    x = input.reshape(1) if input.ndim == 0 else input
    v = np.moveaxis(x.float32() if x.fmt is not None else _np(x), d, -1)
    pos = np.moveaxis(_cum_positions(v, name == "cummax") if v.shape[-1] else np.zeros(v.shape, np.int64), -1, d)
    idx = made_like(x, np.ascontiguousarray(pos), None)
    values = x.gather(d, idx) if x.numel() else x
    return _cum_extreme[name](values.reshape(input.shape), idx.reshape(input.shape))


def cummax(input, dim):
    """(values, indices) of the running maximum along dim."""
    return _cum_extreme_of("cummax", input, dim)


def cummin(input, dim):
    """(values, indices) of the running minimum along dim."""
    return _cum_extreme_of("cummin", input, dim)


def index_put(input, indices, values, accumulate=False):
    """A copy of input with values at input[indices] (a tuple of integer or bool tensors); accumulate: added."""
    where = tuple(_np(i) if isinstance(i, _EngineTensor) else i for i in indices)
    x = input.reshape(1) if input.ndim == 0 else input
    values = values if isinstance(values, _EngineTensor) else tensor(values, dtype=input.dtype)
    if not accumulate:
        return _as_shape_of(input, _put(x, where, values))
    positions = np.arange(x.numel()).reshape(x.shape)[where]      # repeats add up, as PyTorch's accumulate
    values = _broadcast(values.to(input.dtype), positions.shape)
    return _reduced(x.reshape(-1), (positions,), values, "sum", True).reshape(input.shape)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero(input) cut or padded with fill_value to `size` rows."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer but got {size}")
    found = _np(nonzero(input))[:size]
    pad_rows = np.full((size - len(found), found.shape[1]), fill_value, np.int64)
    return _ints(input, np.concatenate([found, pad_rows]))


def _pair(v, name):
    v = tuple(v) if isinstance(v, (tuple, list)) else (v, v)
    if len(v) != 2:
        raise RuntimeError(f"{name} must be an int or a pair of ints")
    return v


# -- attach: Tensor methods and nn.functional names -------------------------------------------------------------

_METHODS = ("index_put", "nonzero_static", "cumprod", "logcumsumexp", "cummax", "cummin", "repeat_interleave",
            "bincount", "unique", "unique_consecutive", "diff", "scatter_reduce", "scatter_add", "index_reduce",
            "index_add", "kthvalue", "median", "nanmedian", "mode", "diagonal_scatter", "select_scatter",
            "index_fill", "index_copy", "masked_scatter", "put", "scatter", "sum_to_size", "unflatten",
            "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "tile", "unfold", "nonzero",
            "argwhere", "reshape_as", "diagonal", "diag", "diag_embed", "diagflat", "narrow", "roll", "rot90",
            "take", "masked_select", "fliplr", "flipud", "movedim", "moveaxis", "swapaxes", "swapdims",
            "select", "index_select", "take_along_dim")
for _name in _METHODS:
    setattr(Tensor, _name, globals()[_name])


def _in_place_of(fn):
    """x.scatter_(...) and the like: x becomes fn(x, ...) (engine.become keeps its graph right)."""
    def method(self, *args, **kwargs):
        return _in_place(self, lambda t: fn(t, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


for _name in ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill", "index_put",
              "index_reduce", "masked_scatter", "put"):
    setattr(Tensor, _name + "_", _in_place_of(globals()[_name]))
# linalg cannot import this module (it imports linalg): it hands linalg its name
for _module, _names in ((_linalg, {"diagonal": _linalg_diagonal}),):
    for _name, _fn in _names.items():
        _fn.__name__ = _name
        setattr(_module, _name, _fn)
        _module.__all__.append(_name)

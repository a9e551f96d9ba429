"""keras.ops' core part (Keras 3's keras.ops.core): conversions, control flow run eagerly, slices and scatters;
values that flow through them stay on the engine's graph (differentiable) where Keras's do."""
from __future__ import annotations

import builtins

import numpy as np

from ...engine import apply, storage, Tensor as _EngineTensor
from .._tensor import DType, _as_face, as_dtype, convert_to_tensor as _convert, format_of, is_tensor
from ._common import _int_array, _tensor

__all__ = ["convert_to_tensor", "convert_to_numpy", "shape", "dtype", "is_tensor", "stop_gradient", "cond", "fori_loop",
           "while_loop", "scan", "map", "switch", "slice", "slice_update", "scatter", "scatter_update", "unstack",
           "vectorized_map", "saturate_cast"]


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    """x as a tensor; Python ints become int32 and Python floats float32, as Keras's."""
    if dtype is None and not hasattr(x, "dtype") and not isinstance(x, _EngineTensor):
        arr = np.asarray(x)
        dtype = {"i": "int32", "f": "float32"}.get(arr.dtype.kind)
    return _convert(x, dtype)


def convert_to_numpy(x):
    """x's values as a NumPy array."""
    return np.asarray(x)


def shape(x):
    """x's shape as a tuple of ints."""
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def dtype(x):
    """x's dtype as Keras names it ("float32", "int64", ...)."""
    return as_dtype(_tensor(x).dtype) if not isinstance(x, _EngineTensor) else DType(str(_as_face(x).dtype))


def stop_gradient(variable):
    """The same values, cut from the graph (no gradient flows back through it)."""
    return _as_face(_tensor(variable).detach())


def cond(pred, true_fn, false_fn):
    """true_fn() if pred else false_fn() (eager: only the branch taken runs)."""
    return true_fn() if bool(np.asarray(pred)) else false_fn()


def fori_loop(lower, upper, body_fun, init_val):
    """init_val through body_fun(i, val) for i in range(lower, upper)."""
    val = init_val
    for i in range(int(lower), int(upper)):
        val = body_fun(i, val)
    return val


def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """loop_vars through body while cond holds (at most maximum_iterations times); a tuple stays a tuple."""
    packed = isinstance(loop_vars, (tuple, list))
    state = tuple(loop_vars) if packed else (loop_vars,)
    steps = 0
    while (maximum_iterations is None or steps < maximum_iterations) and bool(np.asarray(cond(*state))):
        out = body(*state)
        state = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        steps += 1
    return state if packed else state[0]


def _stack(items):
    """Tensors of one shape joined along a new first axis (a tuple of tensors: each part stacked)."""
    if isinstance(items[0], (tuple, list)):
        return type(items[0])(_stack([it[i] for it in items]) for i in range(len(items[0])))
    if isinstance(items[0], dict):
        return {k: _stack([it[k] for it in items]) for k in items[0]}
    if items[0] is None:
        return None
    ts = [_tensor(t) for t in items]
    return _as_face(apply("concatenate", *[apply("reshape", t, shape=(1,) + t.shape) for t in ts], axis=0))


def _rows(xs, i):
    if isinstance(xs, (tuple, list)):
        return type(xs)(_rows(x, i) for x in xs)
    if isinstance(xs, dict):
        return {k: _rows(v, i) for k, v in xs.items()}
    return _tensor(xs)[i]


def _length(xs):
    if isinstance(xs, (tuple, list)):
        return _length(xs[0])
    if isinstance(xs, dict):
        return _length(next(iter(xs.values())))
    return _tensor(xs).shape[0]


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """(carry, ys): carry through f(carry, x) over the rows of xs (or `length` times), the ys stacked."""
    if not callable(f):
        raise TypeError(f"`f` should be a callable. Received: f={f}")
    if not isinstance(unroll, bool) and not (isinstance(unroll, int) and unroll >= 1):
        raise ValueError(f"`unroll` must be an positive integer or boolean. Received: unroll={unroll}")
    if xs is None and length is None:
        raise ValueError("Got no `xs` to scan over and `length` not provided.")
    n = length if xs is None else _length(xs)
    carry, ys = init, [None] * n
    for i in (reversed(range(n)) if reverse else range(n)):
        carry, ys[i] = f(carry, None if xs is None else _rows(xs, i))
    return carry, (_stack(ys) if n else None)


def map(f, xs):
    """f applied to each row of xs, the results stacked."""
    return _stack([f(_rows(xs, i)) for i in range(_length(xs))])


def vectorized_map(function, elements):
    """function applied to each row of elements, the results stacked (run row by row)."""
    return map(function, elements)


def switch(index, branches, *operands):
    """branches[index](*operands), index clamped to the branches' range."""
    i = builtins.max(0, builtins.min(int(np.asarray(index)), len(branches) - 1))
    return branches[i](*operands)


def _box(x, start_indices, sizes):
    starts = [int(s) for s in np.asarray(_int_array(start_indices)).reshape(-1)]
    return tuple(builtins.slice(s, s + n) for s, n in zip(starts, sizes))


def slice(inputs, start_indices, shape):
    """The block of `shape` starting at start_indices."""
    x = _tensor(inputs)
    return _as_face(apply("getitem", x, index=_box(x, start_indices, list(shape))))


def slice_update(inputs, start_indices, updates):
    """inputs with the block starting at start_indices replaced by updates."""
    x, u = _tensor(inputs), _tensor(updates)
    if x.fmt is not None and u.fmt != x.fmt:
        u = convert_to_tensor(u, x.dtype)
    return _as_face(apply("setitem", x, u, index=_box(x, start_indices, u.shape)))


def scatter(indices, values, shape):
    """A zeros tensor of `shape` with values added at indices (repeated indices sum)."""
    idx = _int_array(indices)
    values = _tensor(values)
    shape = tuple(int(s) for s in shape)
    depth = idx.shape[-1]
    points = idx.reshape(-1, depth)
    flat_at = np.ravel_multi_index(tuple(points.T), shape[:depth])
    if values.fmt is None:
        out = np.zeros(shape, storage(values).dtype).reshape((-1,) + shape[depth:])
        np.add.at(out, flat_at, storage(values).reshape((len(points),) + shape[depth:]))
        return convert_to_tensor(out.reshape(shape))
    hot = (np.arange(int(np.prod(shape[:depth])))[:, None] == flat_at[None, :]).astype(np.float32)
    rows = apply("reshape", values, shape=(len(points), -1))
    return _as_face(apply("reshape", apply("matmul", convert_to_tensor(hot, values.dtype), rows), shape=shape))


def scatter_update(inputs, indices, updates):
    """inputs with the entries (or slices) at indices replaced by updates."""
    x, u = _tensor(inputs), _tensor(updates)
    idx = _int_array(indices)
    if x.fmt is not None and u.fmt != x.fmt:
        u = convert_to_tensor(u, x.dtype)
    return _as_face(apply("setitem", x, u, index=tuple(idx.reshape(-1, idx.shape[-1]).T)))


def unstack(x, num=None, axis=0):
    """The slices of x along axis, as a list."""
    x = _tensor(x)
    axis = axis % x.ndim
    if num is not None and num != x.shape[axis]:
        raise ValueError(f"Cannot unstack {x.shape[axis]} entries into num={num}")
    lead = (builtins.slice(None),) * axis
    return [_as_face(apply("getitem", x, index=lead + (i,))) for i in range(x.shape[axis])]


def saturate_cast(x, dtype):
    """x in dtype, values first clipped to dtype's range (no overflow, no wrap-around)."""
    x, dtype = _tensor(x), as_dtype(dtype)
    fmt = format_of(dtype)
    if fmt is not None:
        big = float(np.finfo(np.float16).max) if str(dtype) == "float16" else None
        if x.fmt is None or big is None:
            return convert_to_tensor(x, dtype)
        return _as_face(apply("cast", apply("hardtanh", x, min_val=-big, max_val=big), _out=fmt))
    info = np.iinfo(str(dtype)) if str(dtype) != "bool" else None
    vals = np.asarray(x.float32()) if x.fmt is not None else storage(x)
    if info is not None:
        vals = np.clip(vals, builtins.max(info.min, -2.0 ** 63), builtins.min(info.max, 2.0 ** 63 - 1))
    return convert_to_tensor(np.asarray(vals).astype(str(dtype)))


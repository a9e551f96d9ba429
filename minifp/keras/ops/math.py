"""keras.ops' math part (Keras 3's keras.ops.math) and linalg.norm: top-k, segment reductions, logsumexp, erf,
framing, norms; the values pass through the engine's ops, so they are differentiable."""
from __future__ import annotations

import numpy as np

from ...engine import apply, storage
from .._tensor import _as_face, convert_to_tensor
from ._common import _float, _floating, _int_array, _tensor

__all__ = ["top_k", "in_top_k", "segment_sum", "segment_max", "logsumexp", "erf", "erfinv", "rsqrt",
           "extract_sequences", "norm"]


LOWEST = {"float16": -65504.0, "bfloat16": -3.3895313892515355e38, "float32": -3.4028234663852886e38}


def _values(x):
    """x's values as a NumPy array (float32 for float tensors)."""
    x = _tensor(x)
    return storage(x) if x.fmt is None else np.asarray(x.float32())


def top_k(x, k, sorted=True):
    """(values, indices) of the k largest entries along the last axis, largest first (ties: lower index first)."""
    x = _tensor(x)
    if k > x.shape[-1]:
        raise ValueError(f"input must have at least k={k} columns. Received: x.shape={x.shape}")
    vals = _values(x)
    order = np.argsort(-vals.astype(np.float64) if x.fmt is not None or vals.dtype.kind != "b" else ~vals,
                       axis=-1, kind="stable")[..., :k]
    flat = x.reshape(-1, x.shape[-1]) if x.ndim != 1 else x.reshape(1, -1)
    picked = apply("getitem", flat, index=(np.arange(flat.shape[0])[:, None], order.reshape(-1, k)))
    out = apply("reshape", picked, shape=x.shape[:-1] + (k,))
    return _as_face(out), convert_to_tensor(order.astype(np.int32))


def in_top_k(targets, predictions, k):
    """Whether each target's prediction is among its row's k largest (ties count in; non-finite rows: False)."""
    if str(_tensor(predictions).dtype) != "float32":     # TensorFlow's in_top_k kernel is float32 only
        raise TypeError(f"keras.ops.in_top_k: predictions must be float32, not {_tensor(predictions).dtype}")
    preds = _values(predictions).astype(np.float32)
    t = _int_array(targets)
    if preds.ndim != 2:
        raise ValueError(f"predictions must be 2-dimensional. Received: predictions.shape={preds.shape}")
    rows = np.arange(preds.shape[0])
    inside = (t >= 0) & (t < preds.shape[1])
    target = np.where(inside, preds[rows, np.clip(t, 0, preds.shape[1] - 1)], np.nan)
    above = (preds > target[:, None]).sum(axis=1)
    ok = inside & np.isfinite(target) & np.isfinite(preds).all(axis=1) & (above < k)
    return convert_to_tensor(ok)


def _segments(segment_ids, num_segments, sorted):
    ids = _int_array(segment_ids)
    if sorted and num_segments is not None:
        raise ValueError(f"Argument `num_segments` cannot be set when sorted is True when using the tensorflow "
                         f"backend.Received: num_segments={num_segments}, sorted={sorted}.")
    return ids


def segment_sum(data, segment_ids, num_segments=None, sorted=False):
    """The sums of data's rows per segment id (ids outside [0, num_segments) dropped)."""
    data = _tensor(data)
    ids = _segments(segment_ids, num_segments, sorted)
    if num_segments is None:
        num_segments = (ids.max() + 1 if ids.size else 0) if sorted else len(np.unique(ids))
    if data.fmt is None:                # integers: exact in NumPy
        out = np.zeros((num_segments,) + data.shape[1:], storage(data).dtype)
        keep = (ids >= 0) & (ids < num_segments)
        np.add.at(out, ids[keep], storage(data)[keep])
        return convert_to_tensor(out)
    hot = (np.arange(num_segments)[:, None] == ids[None, :]).astype(np.float32)
    flat = apply("reshape", data, shape=(data.shape[0], -1))
    out = apply("matmul", convert_to_tensor(hot, data.dtype), flat)
    return _as_face(apply("reshape", out, shape=(num_segments,) + data.shape[1:]))


def segment_max(data, segment_ids, num_segments=None, sorted=False):
    """The max of data's rows per segment id; empty segments: 0 (sorted) or the dtype's lowest value."""
    data = _float(data)
    ids = _segments(segment_ids, num_segments, sorted)
    if num_segments is None:
        num_segments = int(ids.max()) + 1 if ids.size else 0
    member = np.arange(num_segments)[:, None] == ids[None, :]          # (segments, rows)
    shape = member.shape + (1,) * (data.ndim - 1)
    lowest = LOWEST[str(data.dtype)]
    spread = apply("where", convert_to_tensor(member.reshape(shape)), apply("reshape", data, shape=(1,) + data.shape),
                   lowest)
    out = apply("max", spread, axis=1)
    if sorted:
        out = apply("where", convert_to_tensor(member.any(axis=1).reshape((num_segments,) + shape[2:])), out, 0.0)
    return _as_face(out)


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x - m), axis)) + m, m the (finite) max held constant: TensorFlow's steps, and its gradient
    softmax(x) to the last bit."""
    x = _floating(x, "logsumexp")
    top = apply("max", x, axis=axis, keepdims=True).detach()
    top = apply("where", convert_to_tensor(np.isfinite(_values(top))), top, 0.0)
    out = apply("add", apply("log", apply("sum", apply("exp", apply("sub", x, top)), axis=axis, keepdims=True)), top)
    if not keepdims:
        out = apply("reshape", out, shape=np.squeeze(np.zeros(top.shape, bool), axis=axis).shape)
    return _as_face(out)


def erf(x):
    """The error function, elementwise."""
    return _as_face(apply("erf", _float(x)))


def erfinv(x):
    """The inverse error function, elementwise."""
    return _as_face(apply("erfinv", _float(x)))


def rsqrt(x):
    """1 / sqrt(x), elementwise."""
    return _as_face(apply("rsqrt", _float(x)))


def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of sequence_length values every sequence_stride along the last axis: (..., frames, length)."""
    x = _tensor(x)
    n = x.shape[-1]
    frames = max((n - sequence_length) // sequence_stride + 1, 0)
    idx = np.arange(frames)[:, None] * sequence_stride + np.arange(sequence_length)[None, :]
    return _as_face(apply("getitem", x, index=(Ellipsis, idx)))


def _singular(x, rows, cols, ord):
    """The sum, max or min of the singular values of x's (rows, cols) matrices, as u_k^T A v_k with the singular
    vectors from NumPy held constant: the engine differentiates that to u_k v_k^T, the singular values' gradient."""
    rest = [i for i in range(x.ndim) if i not in (rows, cols)]
    a = apply("transpose", x, axes=tuple(rest + [rows, cols]))
    u, _, vt = np.linalg.svd(_values(a).astype(np.float64), full_matrices=False)
    if ord != "nuc":
        pick = slice(0, 1) if ord == 2 else slice(-1, None)
        u, vt = u[..., pick], vt[..., pick, :]
    av = apply("matmul", a, convert_to_tensor(np.swapaxes(vt, -1, -2).astype(np.float32)))
    s = apply("sum", apply("mul", convert_to_tensor(u.astype(np.float32)), av), axis=-2)
    return apply("sum", s, axis=-1)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norms (an int axis, or all of a 1-D x) and matrix norms ('fro', 1, -1, inf, -inf over two axes)."""
    x = _float(x)
    if axis is None:
        axis = tuple(range(x.ndim))
    elif isinstance(axis, int):
        axis = (axis,)
    axis = tuple(a % x.ndim for a in axis)
    if len(axis) == 1:
        if isinstance(ord, str):
            raise ValueError(f"Invalid `ord` argument for vector norm. Received: ord={ord}")
        # one op: the float32 sum of |x|**ord, its root rounded once
        out = apply("vector_norm", x, ord=2.0 if ord is None else float(ord), axis=axis, keepdims=keepdims)
        return _as_face(out)
    if len(axis) != 2:
        raise ValueError(f"Invalid axis values. Received: axis={axis}")
    rows, cols = axis
    if ord is None or ord == "fro":     # the 2-norm of the elements: one op, as a vector norm
        out = apply("vector_norm", x, ord=2.0, axis=axis, keepdims=keepdims)
    elif ord in (1, -1, float("inf"), float("-inf")):
        inner, outer = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = apply("sum", apply("abs", x), axis=inner, keepdims=True)
        if ord > 0:
            out = apply("max", sums, axis=outer, keepdims=True)
        else:
            out = apply("neg", apply("max", apply("neg", sums), axis=outer, keepdims=True))
        if not keepdims:
            out = apply("reshape", out, shape=tuple(s for i, s in enumerate(x.shape) if i not in axis))
    elif ord in ("nuc", 2, -2):
        out = _singular(x, rows, cols, ord)
        shape = tuple(1 if i in axis else s for i, s in enumerate(x.shape)) if keepdims else \
            tuple(s for i, s in enumerate(x.shape) if i not in axis)
        out = apply("reshape", out, shape=shape)
    else:
        raise ValueError(f"Invalid `ord` argument for matrix norm. Received: ord={ord}")
    return _as_face(out)

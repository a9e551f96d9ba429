"""Keras 3's core per-sample losses built from engine ops (mean squared and absolute error, Huber and the
crossentropies) and the tensor handling they share: what keras.losses and keras.ops' crossentropies both compute
with (minifp/keras/losses.py explains the rules)."""
from __future__ import annotations

import numpy as np

from .. import engine
from ..engine import apply, made_like, make, storage, Tensor as _EngineTensor
from ._tensor import Tensor

EPSILON = 1e-7          # keras.backend.epsilon()


# -- tensors -------------------------------------------------------------------------------------------------

def _face_class():
    """The class numpy inputs become: the Keras face's Tensor."""
    return Tensor


def _tensor(x, fmt=None, like=None):
    """x as a tensor (of like's class for arrays), in fmt when given (a differentiable cast), else its own
    format (float32 for arrays and integer tensors). A tensor already in fmt is returned as it is."""
    if isinstance(x, _EngineTensor):
        if x.fmt is None:
            x = made_like(x, storage(x).astype(np.float32), engine.float32)
        return x if fmt is None or x.fmt == fmt else apply("cast", x, _out=fmt)
    cls = type(like) if isinstance(like, _EngineTensor) else _face_class()
    arr = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"expected real numbers (an array or a tensor), got {type(x).__name__} of dtype {arr.dtype}")
    t = make(cls, np.array(arr, dtype=np.float32), engine.float32)
    return t if fmt is None or fmt == engine.float32 else apply("cast", t, _out=fmt)


def _like(y_true, y_pred):
    """y_true in y_pred's format and class (Keras: ops.cast(y_true, y_pred.dtype))."""
    t = _tensor(y_true, y_pred.fmt, like=y_pred)
    if type(t) is not type(y_pred) and not t.requires_grad:     # labels join y_pred's class
        t = made_like(y_pred, storage(t), t.fmt)
    return t


def _rank(x):
    return len(np.shape(x)) if not isinstance(x, _EngineTensor) else x.ndim


def _squeeze_last(x):
    return apply("reshape", x, shape=x.shape[:-1])


def _expand_last(x):
    return apply("reshape", x, shape=x.shape + (1,))


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Keras's rule: where the ranks differ by one and the longer ends in 1, squeeze it (or expand a rank-1 other)."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = _expand_last(x2)
        else:
            x1 = _squeeze_last(x1)
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = _expand_last(x1)
        else:
            x2 = _squeeze_last(x2)
    return x1, x2


def _clip(p, lo=EPSILON, hi=1.0 - EPSILON):
    """tf.clip_by_value: the gradient passes inside [lo, hi] (ends included) and is 0 outside."""
    return apply("where", apply("lt", p, lo), lo, apply("where", apply("gt", p, hi), hi, p))


def _logits(y_pred, from_logits):
    """TensorFlow's _get_logits: the logits behind a softmax/sigmoid output, used as if from_logits."""
    logits = getattr(y_pred, "_keras_logits", None)
    if logits is not None:
        return logits, True
    return y_pred, from_logits


def _same_shape(fn, target, output):
    if target.ndim != output.ndim:
        raise ValueError(f"Arguments `target` and `output` must have the same rank (ndim). Received: "
                         f"target.shape={target.shape}, output.shape={output.shape}")
    if target.shape != output.shape:
        raise ValueError(f"Arguments `target` and `output` must have the same shape. Received: "
                         f"target.shape={target.shape}, output.shape={output.shape}")


def _axis(axis, ndim):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type {type(axis)}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for a tensor of rank {ndim}")
    return int(axis) % ndim


# -- the per-sample functions --------------------------------------------------------------------------------

def mean_squared_error(y_true, y_pred):
    """mean(square(y_true - y_pred), axis=-1), one value per sample."""
    y_pred = _tensor(y_pred)
    y_true, y_pred = squeeze_or_expand_to_same_rank(_like(y_true, y_pred), y_pred)
    d = apply("sub", y_true, y_pred)
    return apply("mean", apply("mul", d, d), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """mean(abs(y_true - y_pred), axis=-1), one value per sample."""
    y_pred = _tensor(y_pred)
    y_true, y_pred = squeeze_or_expand_to_same_rank(_like(y_true, y_pred), y_pred)
    return apply("mean", apply("abs", apply("sub", y_true, y_pred)), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """mean over the last axis of 0.5 * e**2 where |e| <= delta, else delta * |e| - 0.5 * delta**2."""
    y_pred = _tensor(y_pred)
    y_true, y_pred = squeeze_or_expand_to_same_rank(_like(y_true, y_pred), y_pred)
    error = apply("sub", y_pred, y_true)
    abs_error = apply("abs", error)
    delta = _tensor(np.float32(delta), y_pred.fmt, like=y_pred)      # Keras: delta in y_pred's dtype
    quadratic = apply("mul", 0.5, apply("mul", error, error))
    linear = apply("sub", apply("mul", delta, abs_error), apply("mul", 0.5, apply("mul", delta, delta)))
    return apply("mean", apply("where", apply("le", abs_error, delta), quadratic, linear), axis=-1)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """mean over `axis` of -(t * log(p) + (1 - t) * log(1 - p)), p clipped to [1e-7, 1 - 1e-7]."""
    y_pred = _tensor(y_pred)
    y_true = _like(y_true, y_pred)
    if label_smoothing:
        y_true = apply("add", apply("mul", y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    return apply("mean", _binary_crossentropy(y_true, y_pred, from_logits), axis=_axis(axis, y_pred.ndim))


def _binary_crossentropy(target, output, from_logits):
    """keras.ops.binary_crossentropy on the TensorFlow backend: elementwise."""
    _same_shape("binary_crossentropy", target, output)
    output, from_logits = _logits(output, from_logits)
    if from_logits:
        # sigmoid_cross_entropy_with_logits: max(x, 0) - x * t + log1p(exp(-|x|))
        return apply("binary_cross_entropy_with_logits", output, _like(target, output), reduction="none")
    output = _clip(output)
    bce = apply("mul", target, apply("log", output))
    bce = apply("add", bce, apply("mul", apply("sub", 1, target), apply("log", apply("sub", 1, output))))
    return apply("neg", bce)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """-sum(y_true * log(p), axis): p are y_pred over their sum, clipped to [1e-7, 1 - 1e-7] (or from logits)."""
    if isinstance(axis, bool):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type {type(axis)}")
    y_pred = _tensor(y_pred)
    y_true = _like(y_true, y_pred)
    axis = _axis(axis, y_pred.ndim)
    if label_smoothing:
        classes = y_pred.shape[axis]
        y_true = apply("add", apply("mul", y_true, 1.0 - label_smoothing), label_smoothing / classes)
    if y_true.ndim < 1:
        raise ValueError(f"Arguments `target` and `output` must be at least rank 1. Received: "
                         f"target.shape={y_true.shape}, output.shape={y_pred.shape}")
    _same_shape("categorical_crossentropy", y_true, y_pred)
    output, from_logits = _logits(y_pred, from_logits)
    if from_logits:
        logp = apply("log_softmax", output, axis=axis)
        return apply("neg", apply("sum", apply("mul", y_true, logp), axis=axis))
    output = apply("div", output, apply("sum", output, axis=axis, keepdims=True))
    logp = apply("log", _clip(output))
    return apply("neg", apply("sum", apply("mul", y_true, logp), axis=axis))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """-log_softmax(logits)[label] per sample; from probabilities the logits are log(clip(p))."""
    values, mask = _sparse_categorical_crossentropy(y_true, y_pred, from_logits, ignore_class, axis)
    if mask is not None:
        try:
            values._keras_mask = mask
        except AttributeError:          # the engine's own tensor has no room for it
            pass
    return values


def tf_keras_sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """tf.keras's sparse_categorical_crossentropy: where the labels' rank is not the predictions' rank - 1, the
    labels are flattened and the predictions reshaped to (-1, classes), and the result takes the predictions'
    leading shape back when they have rank 3 or more ((n, 1) labels against (n, 1, 1, 10) give (n, 1, 1));
    Keras 3 raises instead. minifp.tf.keras's models use it."""
    y_pred = _tensor(y_pred)
    labels = _labels(y_true)
    if y_pred.ndim < 1 or labels.ndim == y_pred.ndim - 1:
        return sparse_categorical_crossentropy(y_true, y_pred, from_logits, ignore_class, axis)
    classes = y_pred.shape[-1]
    if labels.size * classes != storage(y_pred).size:
        raise ValueError(f"`labels.shape` must equal `logits.shape` except for the last dimension. Received: "
                         f"labels.shape={(labels.size,)} and logits.shape={(storage(y_pred).size // classes, classes)} "
                         f"(flattened from target.shape={labels.shape}, output.shape={y_pred.shape})")
    flat = apply("reshape", y_pred, shape=(-1, classes))
    res = sparse_categorical_crossentropy(labels.reshape(-1), flat, from_logits, ignore_class, -1)
    return apply("reshape", res, shape=y_pred.shape[:-1]) if y_pred.ndim >= 3 else res


def _sparse_categorical_crossentropy(y_true, y_pred, from_logits, ignore_class, axis):
    """The per-sample values and the mask of samples that count (None without ignore_class)."""
    y_pred = _tensor(y_pred)
    if y_pred.ndim < 1:
        raise ValueError(f"Argument `output` must be at least rank 1. Received: output.shape={y_pred.shape}")
    if axis != -1 and axis != y_pred.ndim - 1:
        raise ValueError(f"Only axis=-1 is currently supported. Received: axis={axis}")
    labels = _labels(y_true)
    if labels.ndim == y_pred.ndim and labels.shape[-1:] == (1,):
        labels = labels.reshape(labels.shape[:-1])
    if labels.ndim != y_pred.ndim - 1:
        raise ValueError(f"Argument `output` must have rank (ndim) `target.ndim - 1`. Received: "
                         f"target.shape={labels.shape}, output.shape={y_pred.shape}")
    if labels.shape != y_pred.shape[:-1]:
        raise ValueError(f"Arguments `target` and `output` must have the same shape up until the last dimension: "
                         f"target.shape={labels.shape}, output.shape={y_pred.shape}")
    valid = None
    if ignore_class is not None:
        valid = labels != ignore_class
        labels = np.where(valid, labels, 0)
        # The mask as a tensor of y_pred's class, so that the results stay of that class (and hold the mask).
        y_pred = apply("where", made_like(y_pred, valid[..., None], None), y_pred, 0)
    classes = y_pred.shape[-1]
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        # TensorFlow raises on CPU ("Received a label value of 10 which is outside the valid range of [0, 10)").
        bad = labels[(labels < 0) | (labels >= classes)].reshape(-1)[0]
        raise ValueError(f"Received a label value of {bad} which is outside the valid range of [0, {classes}).  "
                         f"Label values: {' '.join(str(v) for v in labels.reshape(-1))}")
    output, from_logits = _logits(y_pred, from_logits)
    if not from_logits:
        output = apply("log", _clip(output))
    logp = apply("log_softmax", output, axis=-1)
    picked = apply("reshape", logp, shape=(-1, classes))[np.arange(labels.size), labels.reshape(-1)]
    res = apply("neg", apply("reshape", picked, shape=labels.shape))
    if valid is not None:
        res = apply("where", made_like(y_pred, valid, None), res, 0.0)
    return res, valid


def _labels(y_true):
    """Integer class indices from y_true (Keras casts them to int64, truncating floats)."""
    arr = y_true.float32() if isinstance(y_true, _EngineTensor) and y_true.fmt is not None else \
        storage(y_true) if isinstance(y_true, _EngineTensor) else np.asarray(y_true)
    arr = np.asarray(arr)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"y_true must hold integer class indices, got dtype {arr.dtype}")
    return arr.astype(np.int64)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

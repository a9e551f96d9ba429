"""Keras 3's losses (`keras.losses`): the per-sample functions, the `Loss` classes and `get`.

The rules are Keras 3's on its default (TensorFlow) backend:
- A `Loss` object converts y_true and y_pred to its dtype (float32 unless given) before it computes, then
  reduces the per-sample values ("sum_over_batch_size" by default). The functions keep y_pred's format
  (a float16 y_pred computes in float16, rounded per op, as TensorFlow does); numpy inputs become float32
  (minifp has no float64 format).
- Crossentropies from probabilities clip them to [1e-7, 1 - 1e-7] (backend.epsilon()). Categorical
  crossentropy first divides by the row sums; sparse categorical crossentropy takes log(clip(p)) as logits
  of a softmax crossentropy, so it renormalises the clipped row.
- A softmax (sigmoid) output that carries the logits it came from in `_keras_logits` (Keras's softmax and
  sigmoid activations attach them) is scored from those logits even with from_logits=False: TensorFlow's
  `_get_logits`. A Loss object keeps them only when y_pred already is in its dtype (a float16 softmax cast
  to float32 is a new tensor, as in Keras). The JAX and PyTorch backends always clip.
Every value is built from engine ops, so `loss.backward()` reaches the predictions.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import engine
from ..engine import apply, made_like, make, storage, Tensor as _EngineTensor
from . import _registry
from ._tensor import Tensor

__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "mean_squared_error", "mean_absolute_error",
           "huber", "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy", "mse",
           "mae", "MSE", "MAE", "get", "serialize", "deserialize", "resolve", "REDUCTIONS", "EPSILON"]

EPSILON = 1e-7          # keras.backend.epsilon()
REDUCTIONS = ("sum_over_batch_size", "sum", None, "none", "mean", "mean_with_sample_weight")


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


# -- reductions ----------------------------------------------------------------------------------------------

def standardize_reduction(reduction):
    """The reduction itself, or Keras's error for an unknown one."""
    if not isinstance(reduction, (str, type(None))) or reduction not in REDUCTIONS:
        allowed = "{" + ", ".join(repr(r) for r in REDUCTIONS) + "}"
        raise ValueError(f"Invalid value for argument `reduction`. Expected one of {allowed}. Received: "
                         f"reduction={reduction}")
    return reduction


def _weights(sample_weight, mask, fmt, like, reduction):
    """The sample weights (a constant tensor or None) merged with a mask as Keras's apply_mask does."""
    sw = None if sample_weight is None else _tensor(sample_weight, fmt, like=like).detach()
    if mask is None:
        return sw
    mask = np.asarray(mask)
    if reduction in ("mean", "sum_over_batch_size"):
        # Valid entries weigh total / valid, so that the mean over all entries is the mean over valid ones.
        valid = np.float32(mask.sum())
        scale = np.float32(mask.size) / valid if valid else np.float32(0)
        float_mask = np.where(mask, scale, np.float32(0)).astype(np.float32)
    else:
        float_mask = mask.astype(np.float32)
    float_mask = _tensor(float_mask, fmt, like=like)
    if sw is None:
        return float_mask
    float_mask, sw = squeeze_or_expand_to_same_rank(float_mask, sw)
    return apply("mul", sw, float_mask)


def reduce_values(values, sample_weight=None, reduction="sum_over_batch_size"):
    """Keras's reduce_values: sum, or sum divided by the element count (or by the weights' sum), 0 for 0/0."""
    if reduction is None or reduction == "none" or values.shape in ((), (0,)):
        return values
    loss = apply("sum", values)
    if reduction in ("sum_over_batch_size", "mean", "mean_with_sample_weight"):
        if reduction == "mean_with_sample_weight" and sample_weight is not None:
            divisor = float(np.sum(sample_weight.float32(), dtype=np.float32))
        else:
            divisor = float(np.float32(storage(values).size))
        # divide_no_nan: 0 when the divisor is 0
        loss = apply("div", loss, divisor) if divisor else apply("where", np.array(False), loss, 0.0)
    return loss


def reduce_weighted_values(values, sample_weight=None, mask=None, reduction="sum_over_batch_size", fmt=engine.float32):
    """The per-sample values weighted, masked and reduced, as Keras's loss.reduce_weighted_values."""
    reduction = standardize_reduction(reduction)
    values = _tensor(values, fmt)
    sample_weight = _weights(sample_weight, mask, values.fmt, values, reduction)
    if sample_weight is not None:
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        values = apply("mul", values, sample_weight)
    return reduce_values(values, sample_weight, reduction)


# -- the classes ---------------------------------------------------------------------------------------------

_COUNTS = {}


def _auto_name(cls_name):
    """Keras's auto_name: the class name in snake case, numbered after the first."""
    base = "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(cls_name))
    n = _COUNTS.get(base, 0)
    _COUNTS[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


class Loss:
    """Keras's Loss base class: subclasses define call(y_true, y_pred) -> per-sample values."""

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        self.name = name or _auto_name(type(self).__name__)
        self.reduction = standardize_reduction(reduction)
        self._dtype = "float32" if dtype is None else _dtype_name(dtype)
        self._fmt = engine.as_format(self._dtype, "dtype")

    @property
    def dtype(self):
        return self._dtype

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The reduced loss: a 0-d tensor (per-sample values with reduction None or "none")."""
        in_mask = getattr(y_pred, "_keras_mask", None)
        y_pred = _tensor(y_pred, self._fmt)
        y_true = _like(y_true, y_pred)
        losses, out_mask = self._call_masked(y_true, y_pred)
        mask = _and(in_mask, out_mask)
        return reduce_weighted_values(losses, sample_weight, mask, self.reduction, self._fmt)

    def _call_masked(self, y_true, y_pred):
        losses = self.call(y_true, y_pred)
        return losses, getattr(losses, "_keras_mask", None)

    def call(self, y_true, y_pred):
        raise NotImplementedError

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r} reduction={self.reduction!r}>"


def _dtype_name(dtype):
    """The name of a dtype given as a name, a DType, a minifp Format or a DTypePolicy (its compute dtype)."""
    dtype = getattr(dtype, "compute_dtype", dtype)
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    engine.as_format(name if isinstance(name, str) else dtype, "dtype")        # unknown names raise here
    return str(name)


def _and(a, b):
    if a is None or b is None:
        return b if a is None else a
    return np.logical_and(np.asarray(a), np.asarray(b))


class LossFunctionWrapper(Loss):
    """A Loss from a per-sample function fn(y_true, y_pred, **kwargs)."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        config.update({"fn": getattr(self.fn, "__name__", repr(self.fn))})
        config.update(self._fn_kwargs)
        return config

    def __repr__(self):
        return f"<LossFunctionWrapper({self.fn}, kwargs={self._fn_kwargs})>"


class MeanSquaredError(LossFunctionWrapper):
    """mean(square(y_true - y_pred)), reduced."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, reduction=reduction, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class MeanAbsoluteError(LossFunctionWrapper):
    """mean(abs(y_true - y_pred)), reduced."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, reduction=reduction, dtype=dtype)

    def get_config(self):
        return Loss.get_config(self)


class Huber(LossFunctionWrapper):
    """The Huber loss: quadratic within delta of the target, linear beyond."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", dtype=None):
        super().__init__(huber, name=name, reduction=reduction, dtype=dtype, delta=delta)

    def get_config(self):
        config = super().get_config()
        config.pop("fn")
        return config


class _Crossentropy(LossFunctionWrapper):
    """Binary and categorical crossentropy: from_logits, label_smoothing and axis."""

    _fn = None

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size", name=None,
                 dtype=None):
        super().__init__(type(self)._fn, name=name, reduction=reduction, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis

    def get_config(self):
        config = Loss.get_config(self)
        config.update({"from_logits": self.from_logits, "label_smoothing": self.label_smoothing, "axis": self.axis})
        return config


class BinaryCrossentropy(_Crossentropy):
    """Crossentropy of binary (0 or 1) labels against probabilities (or logits)."""

    _fn = staticmethod(binary_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_crossentropy", dtype=None):
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)


class CategoricalCrossentropy(_Crossentropy):
    """Crossentropy of one-hot (or soft) labels against class probabilities (or logits)."""

    _fn = staticmethod(categorical_crossentropy)

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy", dtype=None):
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Crossentropy of integer class labels against class probabilities (or logits)."""

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size", axis=-1,
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(sparse_categorical_crossentropy, name=name, reduction=reduction, dtype=dtype,
                         from_logits=from_logits, ignore_class=ignore_class, axis=axis)
        self.from_logits, self.ignore_class, self.axis = from_logits, ignore_class, axis

    def _call_masked(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return _sparse_categorical_crossentropy(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("fn")
        return config


# -- lookup --------------------------------------------------------------------------------------------------

_CLASSES = (Loss, LossFunctionWrapper, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
            MeanSquaredError, MeanAbsoluteError, Huber)
_FUNCTIONS = (binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy, mean_squared_error,
              mean_absolute_error, huber)
ALL_OBJECTS = frozenset(_CLASSES + _FUNCTIONS)
ALL_OBJECTS_DICT = {o.__name__: o for o in _CLASSES + _FUNCTIONS}
ALL_OBJECTS_DICT.update({"bce": binary_crossentropy, "BCE": binary_crossentropy, "mae": mean_absolute_error,
                         "MAE": mean_absolute_error, "mse": mean_squared_error, "MSE": mean_squared_error})


def serialize(loss):
    """A loss's config: {"class_name", "config"} for Loss objects, the name for functions."""
    return _registry.serialize(loss, Loss)


def deserialize(config, custom_objects=None):
    """The loss a serialize() result (or a name) describes."""
    return _registry.deserialize(config, {**ALL_OBJECTS_DICT, **(custom_objects or {})}, _unknown)


def _unknown(identifier):
    names = ", ".join(sorted(k for k in ALL_OBJECTS_DICT if k not in ("Loss", "LossFunctionWrapper")))
    return f"Could not interpret loss identifier: {identifier}. Valid names: {names}"


def get(identifier):
    """Keras's losses.get: None, a name (a function, or a class made with its defaults), a config dict, a
    callable or Loss instance as it is."""
    return _registry.get(identifier, ALL_OBJECTS_DICT, _unknown)


def _is_binary_or_sparse(y_true_shape, y_pred_shape):
    """Keras's compile_utils rule: binary when y_pred ends in 1; sparse when y_true has a lower rank, or ends in 1
    where y_pred does not."""
    is_binary = y_pred_shape[-1] == 1
    is_sparse = len(y_true_shape) < len(y_pred_shape) or y_true_shape[-1] == 1 and y_pred_shape[-1] > 1
    return is_binary, is_sparse


def _as_tf_keras(obj):
    """obj with tf.keras's sparse crossentropy rule in place of Keras 3's (a copy of a wrapper; others as they are)."""
    if obj is sparse_categorical_crossentropy:
        return tf_keras_sparse_categorical_crossentropy
    if isinstance(obj, LossFunctionWrapper) and obj.fn is sparse_categorical_crossentropy:
        import copy
        obj = copy.copy(obj)
        obj.fn = tf_keras_sparse_categorical_crossentropy
        obj._call_masked = functools.partial(Loss._call_masked, obj)     # through self.fn, not Keras 3's rule
    return obj


def resolve(identifier, y_true=None, y_pred=None, tf_keras=False):
    """What Keras's compile makes of a loss identifier (compile_utils.get_loss): a Loss object (functions are
    wrapped in LossFunctionWrapper named by the identifier), None for None; "crossentropy"/"ce" pick
    binary, sparse or categorical crossentropy from the shapes of y_true and y_pred (arrays, tensors or shapes)."""
    if identifier is None:
        return None
    if str(identifier).lower() in ("crossentropy", "ce"):
        if y_true is None or y_pred is None:
            raise ValueError(f"loss {identifier!r} needs the shapes of y_true and y_pred to choose a crossentropy")
        is_binary, is_sparse = _is_binary_or_sparse(_shape(y_true), _shape(y_pred))
        obj = binary_crossentropy if is_binary else sparse_categorical_crossentropy if is_sparse else \
            categorical_crossentropy
    else:
        obj = get(identifier)
    if tf_keras:
        obj = _as_tf_keras(obj)
    if not isinstance(obj, Loss):
        name = identifier if isinstance(identifier, str) else getattr(obj, "__name__", None) or \
            type(obj).__name__.lower()
        obj = LossFunctionWrapper(obj, name=name)
    return obj


def _shape(x):
    """A shape from an array, a tensor or a shape tuple."""
    if isinstance(x, tuple) and all(d is None or isinstance(d, (int, np.integer)) for d in x):
        return x
    return tuple(np.shape(x)) if not isinstance(x, _EngineTensor) else x.shape

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.losses")

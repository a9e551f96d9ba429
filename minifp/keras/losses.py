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
import warnings

import numpy as np

from .. import engine
from ..engine import apply, storage, Tensor as _EngineTensor
from . import _registry, backend as _backend, ops
from ._loss_functions import (EPSILON, MAE, MSE, _like, _sparse_categorical_crossentropy, _tensor, binary_crossentropy,
                              categorical_crossentropy, huber, mae, mean_absolute_error, mean_squared_error, mse,
                              sparse_categorical_crossentropy, squeeze_or_expand_to_same_rank,
                              tf_keras_sparse_categorical_crossentropy)

__all__ = ["Loss", "LossFunctionWrapper", "MeanSquaredError", "MeanAbsoluteError", "Huber", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "MeanAbsolutePercentageError",
           "MeanSquaredLogarithmicError", "LogCosh", "Poisson", "KLDivergence", "Hinge", "SquaredHinge",
           "CategoricalHinge", "CosineSimilarity", "Dice", "Tversky", "BinaryFocalCrossentropy",
           "CategoricalFocalCrossentropy",
           "mean_squared_error", "mean_absolute_error", "huber", "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "mean_absolute_percentage_error", "mean_squared_logarithmic_error",
           "log_cosh", "poisson", "kl_divergence", "hinge", "squared_hinge", "categorical_hinge", "cosine_similarity",
           "dice", "tversky",
           "binary_focal_crossentropy", "categorical_focal_crossentropy", "mse", "mae", "MSE", "MAE", "get",
           "serialize", "deserialize", "resolve", "REDUCTIONS", "EPSILON"]

REDUCTIONS = ("sum_over_batch_size", "sum", None, "none", "mean", "mean_with_sample_weight")


# -- Keras's other per-sample losses, written with keras.ops (as Keras writes them: they compute in y_pred's
# format); keras.metrics has the same functions

def _pair(y_true, y_pred, same_rank=True):
    """y_pred as a tensor, y_true in its dtype (Keras's first lines), squeezed or expanded to the same rank."""
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.convert_to_tensor(y_true, dtype=y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred) if same_rank else (y_true, y_pred)


def _epsilon(like):
    return ops.convert_to_tensor(_backend.epsilon(), dtype=like.dtype)


def mean_absolute_percentage_error(y_true, y_pred):
    """100 * mean(|y_true - y_pred| / max(|y_true|, epsilon)) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    diff = ops.abs((y_true - y_pred) / ops.maximum(ops.abs(y_true), _epsilon(y_pred)))
    return 100.0 * ops.mean(diff, axis=-1)


def mean_squared_logarithmic_error(y_true, y_pred):
    """mean((log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))**2) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred)
    eps = _epsilon(y_pred)
    first_log = ops.log(ops.maximum(y_pred, eps) + 1.0)
    second_log = ops.log(ops.maximum(y_true, eps) + 1.0)
    return ops.mean(ops.square(first_log - second_log), axis=-1)


def log_cosh(y_true, y_pred):
    """mean(log(cosh(y_pred - y_true))) over the last axis, as x + softplus(-2x) - log(2)."""
    y_true, y_pred = _pair(y_true, y_pred)
    log2 = ops.convert_to_tensor(ops.log(2.0), dtype=y_pred.dtype)
    x = y_pred - y_true
    return ops.mean(x + ops.softplus(x * -2.0) - log2, axis=-1)


def poisson(y_true, y_pred):
    """mean(y_pred - y_true * log(y_pred + epsilon)) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred, same_rank=False)
    return ops.mean(y_pred - y_true * ops.log(y_pred + _epsilon(y_pred)), axis=-1)


def kl_divergence(y_true, y_pred):
    """sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [epsilon, 1]."""
    y_true, y_pred = _pair(y_true, y_pred, same_rank=False)
    y_true = ops.clip(y_true, _backend.epsilon(), 1)
    y_pred = ops.clip(y_pred, _backend.epsilon(), 1)
    return ops.sum(y_true * ops.log(y_true / y_pred), axis=-1)


def _hinge_labels(y_true):
    """Keras's convert_binary_labels_to_hinge: labels that are all 0 or 1 become -1 or 1."""
    binary = bool(ops.all(ops.logical_or(ops.equal(y_true, 0), ops.equal(y_true, 1))))
    return 2.0 * y_true - 1.0 if binary else y_true


def hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0)) over the last axis (0/1 labels taken as -1/1)."""
    y_true, y_pred = _pair(y_true, y_pred, same_rank=False)
    return ops.mean(ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


def squared_hinge(y_true, y_pred):
    """mean(max(1 - y_true * y_pred, 0)**2) over the last axis (0/1 labels taken as -1/1)."""
    y_true, y_pred = _pair(y_true, y_pred, same_rank=False)
    return ops.mean(ops.square(ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0) over the last axis."""
    y_true, y_pred = _pair(y_true, y_pred, same_rank=False)
    pos = ops.sum(y_true * y_pred, axis=-1)
    neg = ops.max((1.0 - y_true) * y_pred, axis=-1)
    return ops.maximum(neg - pos + 1.0, ops.cast(0.0, y_pred.dtype))


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                              label_smoothing=0.0, axis=-1):
    """The binary crossentropy times (1 - p_t)**gamma (and the class weight alpha), averaged over `axis`."""
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.cast(y_true, y_pred.dtype)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        y_pred = ops.sigmoid(y_pred)
    bce = ops.binary_crossentropy(y_true, y_pred, from_logits=False)
    p_t = y_true * y_pred + (1 - y_true) * (1 - y_pred)
    focal_bce = ops.power(1.0 - p_t, gamma) * bce
    if apply_class_balancing:
        focal_bce = (y_true * alpha + (1 - y_true) * (1 - alpha)) * focal_bce
    return ops.mean(focal_bce, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    """sum over `axis` of alpha * (1 - p)**gamma * -y_true * log(p), p the normalised, clipped y_pred."""
    if isinstance(axis, bool):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type {type(axis)}")
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.cast(y_true, y_pred.dtype)
    if y_pred.shape[-1] == 1:
        warnings.warn(f"In loss categorical_focal_crossentropy, expected y_pred.shape to be (batch_size, "
                      f"num_classes) with num_classes > 1. Received: y_pred.shape={y_pred.shape}. Consider using "
                      f"'binary_crossentropy' if you only have 2 classes.", SyntaxWarning, stacklevel=2)
    if label_smoothing:
        num_classes = ops.cast(ops.shape(y_true)[-1], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + (label_smoothing / num_classes)
    if from_logits:
        y_pred = ops.softmax(y_pred, axis=axis)
    output = y_pred / ops.sum(y_pred, axis=axis, keepdims=True)
    output = ops.clip(output, _backend.epsilon(), 1.0 - _backend.epsilon())
    cce = -y_true * ops.log(output)
    focal_cce = ops.multiply(ops.multiply(ops.power(1.0 - output, gamma), alpha), cce)
    return ops.sum(focal_cce, axis=axis)


def dice(y_true, y_pred, axis=None):
    """1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + epsilon), summed over `axis` (all: None)."""
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.cast(y_true, y_pred.dtype)
    intersection = ops.sum(y_true * y_pred, axis=axis)
    return 1 - ops.divide(2.0 * intersection, ops.sum(y_true, axis=axis) + ops.sum(y_pred, axis=axis)
                          + _backend.epsilon())


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """1 - TP / (TP + alpha * FP + beta * FN + epsilon), each a sum over `axis` of the soft counts."""
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.cast(y_true, y_pred.dtype)
    intersection = ops.sum(y_true * y_pred, axis=axis)
    fp = ops.sum((1 - y_pred) * y_true, axis=axis)
    fn = ops.sum(y_pred * (1 - y_true), axis=axis)
    return 1 - ops.divide(intersection, intersection + fp * alpha + fn * beta + _backend.epsilon())


def cosine_similarity(y_true, y_pred, axis=-1):
    """Minus the sum over `axis` of the L2-normalised y_true times the L2-normalised y_pred."""
    y_true, y_pred = _pair(y_true, y_pred)
    return -ops.sum(ops.normalize(y_true, axis=axis) * ops.normalize(y_pred, axis=axis), axis=axis)


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


def _plain(cls_name, fn, doc):
    """A Loss class of fn with no settings of its own: (reduction, name, dtype), Loss's config."""
    def __init__(self, reduction="sum_over_batch_size", name=fn.__name__, dtype=None):
        LossFunctionWrapper.__init__(self, fn, name=name, reduction=reduction, dtype=dtype)
    return type(cls_name, (LossFunctionWrapper,), {"__init__": __init__, "get_config": Loss.get_config,
                                                   "__doc__": doc, "__module__": __name__})


MeanAbsolutePercentageError = _plain("MeanAbsolutePercentageError", mean_absolute_percentage_error,
                                     "100 * mean(|y_true - y_pred| / max(|y_true|, epsilon)), reduced.")
MeanSquaredLogarithmicError = _plain("MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
                                     "mean((log(y_pred + 1) - log(y_true + 1))**2), reduced.")
LogCosh = _plain("LogCosh", log_cosh, "mean(log(cosh(y_pred - y_true))), reduced.")
Poisson = _plain("Poisson", poisson, "mean(y_pred - y_true * log(y_pred + epsilon)), reduced.")
KLDivergence = _plain("KLDivergence", kl_divergence,
                      "sum(y_true * log(y_true / y_pred)), both clipped to [epsilon, 1], reduced.")
Hinge = _plain("Hinge", hinge, "mean(max(1 - y_true * y_pred, 0)) (0/1 labels as -1/1), reduced.")
SquaredHinge = _plain("SquaredHinge", squared_hinge, "mean(max(1 - y_true * y_pred, 0)**2) (0/1 labels as -1/1), "
                                                     "reduced.")
CategoricalHinge = _plain("CategoricalHinge", categorical_hinge,
                          "max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0), reduced.")


class CosineSimilarity(LossFunctionWrapper):
    """Minus the cosine similarity of y_true and y_pred along axis, reduced."""

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity", dtype=None):
        super().__init__(cosine_similarity, name=name, reduction=reduction, dtype=dtype, axis=axis)

    def get_config(self):
        return Loss.get_config(self)


class Dice(LossFunctionWrapper):
    """The Dice loss, 1 - the soft Dice coefficient over axis, reduced."""

    def __init__(self, reduction="sum_over_batch_size", name="dice", axis=None, dtype=None):
        super().__init__(dice, name=name, reduction=reduction, dtype=dtype, axis=axis)
        self.axis = axis

    def get_config(self):
        return {**Loss.get_config(self), "axis": self.axis}


class Tversky(LossFunctionWrapper):
    """The Tversky loss: Dice's with false positives weighted by alpha and false negatives by beta, reduced."""

    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name="tversky", axis=None, dtype=None):
        super().__init__(tversky, name=name, reduction=reduction, dtype=dtype, alpha=alpha, beta=beta, axis=axis)
        self.alpha, self.beta, self.axis = alpha, beta, axis

    def get_config(self):
        return {**Loss.get_config(self), "alpha": self.alpha, "beta": self.beta, "axis": self.axis}


class BinaryFocalCrossentropy(LossFunctionWrapper):
    """The binary crossentropy down-weighted where it is already small: (1 - p_t)**gamma, optionally alpha."""

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                 axis=-1, reduction="sum_over_batch_size", name="binary_focal_crossentropy", dtype=None):
        super().__init__(binary_focal_crossentropy, name=name, reduction=reduction, dtype=dtype,
                         apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis
        self.apply_class_balancing, self.alpha, self.gamma = apply_class_balancing, alpha, gamma

    def get_config(self):
        config = Loss.get_config(self)
        config.update({"from_logits": self.from_logits, "label_smoothing": self.label_smoothing, "axis": self.axis,
                       "apply_class_balancing": self.apply_class_balancing, "alpha": self.alpha,
                       "gamma": self.gamma})
        return config


class CategoricalFocalCrossentropy(LossFunctionWrapper):
    """The categorical crossentropy down-weighted where it is already small: alpha * (1 - p)**gamma."""

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_focal_crossentropy", dtype=None):
        super().__init__(categorical_focal_crossentropy, name=name, reduction=reduction, dtype=dtype, alpha=alpha,
                         gamma=gamma, from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits, self.label_smoothing, self.axis = from_logits, label_smoothing, axis
        self.alpha, self.gamma = alpha, gamma

    def get_config(self):
        config = Loss.get_config(self)
        config.update({"from_logits": self.from_logits, "label_smoothing": self.label_smoothing, "axis": self.axis,
                       "alpha": self.alpha, "gamma": self.gamma})
        return config


# -- lookup --------------------------------------------------------------------------------------------------

_CLASSES = (Loss, LossFunctionWrapper, BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy,
            MeanSquaredError, MeanAbsoluteError, Huber, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
            LogCosh, Poisson, KLDivergence, Hinge, SquaredHinge, CategoricalHinge, CosineSimilarity, Dice, Tversky,
            BinaryFocalCrossentropy, CategoricalFocalCrossentropy)
_FUNCTIONS = (binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy, mean_squared_error,
              mean_absolute_error, huber, mean_absolute_percentage_error, mean_squared_logarithmic_error, log_cosh,
              poisson, kl_divergence, hinge, squared_hinge, categorical_hinge, cosine_similarity, dice, tversky,
              binary_focal_crossentropy, categorical_focal_crossentropy)
ALL_OBJECTS = frozenset(_CLASSES + _FUNCTIONS)
ALL_OBJECTS_DICT = {o.__name__: o for o in _CLASSES + _FUNCTIONS}
ALL_OBJECTS_DICT.update({"bce": binary_crossentropy, "BCE": binary_crossentropy, "kld": kl_divergence,
                         "KLD": kl_divergence, "mae": mean_absolute_error, "MAE": mean_absolute_error,
                         "mape": mean_absolute_percentage_error, "MAPE": mean_absolute_percentage_error,
                         "mse": mean_squared_error, "MSE": mean_squared_error, "msle": mean_squared_logarithmic_error,
                         "MSLE": mean_squared_logarithmic_error})


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

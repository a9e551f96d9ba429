"""Keras 3's regression, probabilistic, hinge, correlation and IoU metrics, behind minifp.keras.metrics.

The per-sample functions are Keras's own (keras/src/losses, correlation_metrics.py) written with keras.ops, so
they compute in y_pred's format as Keras does; their classes are MeanMetricWrappers. R2Score keeps Keras's float32
sums per output; the IoU metrics keep Keras's integer confusion matrix (int32: float labels and weights are
truncated, as Keras's cast truncates them).
"""
from __future__ import annotations

import warnings

import numpy as np

from . import backend as _backend, ops
from .losses import squeeze_or_expand_to_same_rank
from .metrics import Metric, MeanMetricWrapper, _f32, _out, _same_rank, _scalar, _wrapper

__all__ = ["mean_absolute_percentage_error", "mean_squared_logarithmic_error", "log_cosh",
           "poisson", "kl_divergence", "hinge", "squared_hinge", "categorical_hinge", "pearson_correlation",
           "concordance_correlation", "binary_focal_crossentropy", "categorical_focal_crossentropy",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
           "CosineSimilarity", "LogCoshError", "Poisson", "KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge",
           "PearsonCorrelation", "ConcordanceCorrelation", "R2Score", "IoU", "MeanIoU", "OneHotIoU", "OneHotMeanIoU",
           "BinaryIoU"]


def _pair(y_true, y_pred, same_rank=True):
    """y_pred as a tensor, y_true in its dtype (Keras's first lines), squeezed or expanded to the same rank."""
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.convert_to_tensor(y_true, dtype=y_pred.dtype)
    return squeeze_or_expand_to_same_rank(y_true, y_pred) if same_rank else (y_true, y_pred)


def _epsilon(like):
    return ops.convert_to_tensor(_backend.epsilon(), dtype=like.dtype)


# -- the per-sample functions --------------------------------------------------------------------------------

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


def _cosine_similarity(y_true, y_pred, axis=-1):
    """The sum over `axis` of the L2-normalised y_true times the L2-normalised y_pred (keras.metrics has no such
    function: keras.losses.cosine_similarity is its negative)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return ops.sum(ops.normalize(y_true, axis=axis) * ops.normalize(y_pred, axis=axis), axis=axis)


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


def pearson_correlation(y_true, y_pred, axis=-1):
    """Pearson's correlation coefficient along `axis` (mean of the products of the standardised values)."""
    y_true, y_pred = _pair(y_true, y_pred)
    y_true_norm = y_true - ops.mean(y_true, axis=axis, keepdims=True)
    y_pred_norm = y_pred - ops.mean(y_pred, axis=axis, keepdims=True)
    y_true_norm = y_true_norm / ops.std(y_true_norm, axis=axis, keepdims=True)
    y_pred_norm = y_pred_norm / ops.std(y_pred_norm, axis=axis, keepdims=True)
    return ops.mean(y_true_norm * y_pred_norm, axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1):
    """Lin's concordance correlation coefficient along `axis`, as Keras computes it."""
    y_true, y_pred = _pair(y_true, y_pred)
    y_true_mean = ops.mean(y_true, axis=axis, keepdims=True)
    y_pred_mean = ops.mean(y_pred, axis=axis, keepdims=True)
    y_true_var = ops.var(y_true - y_true_mean, axis=axis, keepdims=True)
    y_pred_var = ops.var(y_pred - y_pred_mean, axis=axis, keepdims=True)
    # Keras 3 centres y_true on y_pred's mean here (not on its own): its numbers, kept
    covar = (y_true - y_pred_mean) * (y_pred - y_pred_mean)
    norm = y_true_var + y_pred_var + ops.square(y_true_mean - y_pred_mean)
    return ops.mean(2 * covar / (norm + _backend.epsilon()), axis=axis)


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


# -- their metrics -------------------------------------------------------------------------------------------

def _mean_of(fn, name, default_name, doc, params=()):
    cls = type(name, (MeanMetricWrapper,), _wrapper(fn, default_name, doc, params))
    cls.__module__ = "minifp.keras.metrics"
    return cls


MeanAbsolutePercentageError = _mean_of(mean_absolute_percentage_error, "MeanAbsolutePercentageError",
                                       "mean_absolute_percentage_error", "The mean absolute percentage error.")
MeanSquaredLogarithmicError = _mean_of(mean_squared_logarithmic_error, "MeanSquaredLogarithmicError",
                                       "mean_squared_logarithmic_error", "The mean squared logarithmic error.")
LogCoshError = _mean_of(log_cosh, "LogCoshError", "logcosh", "The mean logarithm of the hyperbolic cosine of "
                        "the error.")
Poisson = _mean_of(poisson, "Poisson", "poisson", "The mean Poisson deviance term y_pred - y_true * log(y_pred).")
KLDivergence = _mean_of(kl_divergence, "KLDivergence", "kl_divergence", "The mean Kullback-Leibler divergence.")
Hinge = _mean_of(hinge, "Hinge", "hinge", "The mean hinge loss.")
SquaredHinge = _mean_of(squared_hinge, "SquaredHinge", "squared_hinge", "The mean squared hinge loss.")
CategoricalHinge = _mean_of(categorical_hinge, "CategoricalHinge", "categorical_hinge",
                            "The mean categorical hinge loss.")
PearsonCorrelation = _mean_of(pearson_correlation, "PearsonCorrelation", "pearson_correlation",
                              "The mean Pearson correlation along `axis`.", {"axis": -1})
ConcordanceCorrelation = _mean_of(concordance_correlation, "ConcordanceCorrelation", "concordance_correlation",
                                  "The mean concordance correlation along `axis`.", {"axis": -1})


class CosineSimilarity(_mean_of(_cosine_similarity, "CosineSimilarity", "cosine_similarity",
                                "The mean cosine similarity along `axis`.", {"axis": -1})):
    """The mean cosine similarity of y_true and y_pred along `axis`."""

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}        # Keras's config leaves the axis out


CosineSimilarity.__module__ = "minifp.keras.metrics"


# -- R2Score ---------------------------------------------------------------------------------------------------

_AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")


class R2Score(Metric):
    """The coefficient of determination 1 - SS_res / SS_tot per output, aggregated by class_aggregation, adjusted
    for num_regressors; Keras's float32 sums."""

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in _AGGREGATIONS:
            raise ValueError(f"Invalid value for argument `class_aggregation`. Expected one of {_AGGREGATIONS}. "
                             f"Received: class_aggregation={class_aggregation}")
        if num_regressors < 0:
            raise ValueError(f"Invalid value for argument `num_regressors`. Expected a value >= 0. Received: "
                             f"num_regressors={num_regressors}")
        self.class_aggregation, self.num_regressors = class_aggregation, num_regressors
        self.num_samples = self.add_variable((), "zeros", name="num_samples")
        self._built = False

    def _build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError(f"R2Score expects 2D inputs with shape (batch_size, output_dim). Received input "
                             f"shapes: y_pred.shape={y_pred_shape} and y_true.shape={y_true_shape}.")
        shape = (y_pred_shape[-1],)
        self.squared_sum = self.add_variable(shape, "zeros", name="squared_sum")
        self.sum = self.add_variable(shape, "zeros", name="sum")
        self.total_mse = self.add_variable(shape, "zeros", name="residual")
        self.count = self.add_variable(shape, "zeros", name="count")
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _same_rank_f32(y_true, y_pred)
        if not self._built:
            self._build(y_true.shape, y_pred.shape)
        weight = np.float32(1) if sample_weight is None else _f32(sample_weight)
        if weight.ndim == 1:
            weight = weight[:, None]
        weight = np.broadcast_to(weight, y_true.shape)
        weighted = y_true * weight
        d = y_true - y_pred

        def add(variable, values):
            variable.assign(_f32(variable) + np.sum(values, axis=0, dtype=np.float32))

        add(self.sum, weighted)
        add(self.squared_sum, y_true * weighted)
        add(self.total_mse, d * d * weight)
        add(self.count, weight)
        self.num_samples.assign(_f32(self.num_samples) + np.float32(y_true.size))

    def result(self):
        total_sum, count = _f32(self.sum), _f32(self.count)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = total_sum / count
            total = _f32(self.squared_sum) - total_sum * mean
            raw = np.float32(1) - _f32(self.total_mse) / total
        raw = np.where(np.isinf(raw), np.float32(0), raw)
        if self.class_aggregation == "uniform_average":
            score = np.mean(raw, dtype=np.float32)
        elif self.class_aggregation == "variance_weighted_average":
            score = np.sum(total * raw, dtype=np.float32) / np.sum(total, dtype=np.float32)
        else:
            score = raw
        return _out(self._adjusted(score))

    def _adjusted(self, score):
        """Keras's adjusted R2 (with its warnings where n - 1 <= num_regressors)."""
        n = _f32(self.num_samples)
        if self.num_regressors == 0:
            return score
        if self.num_regressors > n - 1:
            warnings.warn("More independent predictors than datapoints in adjusted R2 score. Falling back to "
                          "standard R2 score.", stacklevel=3)
            return score
        if self.num_regressors == n - 1:
            warnings.warn("Division by zero in Adjusted R2 score. Falling back to standard R2 score.", stacklevel=3)
            return score
        one, p = np.float32(1), np.float32(self.num_regressors)
        return one - ((one - score) * (n - one)) / ((n - p) - one)

    def reset_state(self):
        for v in self.variables:
            v.assign(np.zeros(tuple(v.shape), np.float32))

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}


def _same_rank_f32(y_true, y_pred):
    """Both as float32 arrays, squeezed or expanded to the same rank as Keras's losses do."""
    return _same_rank(_f32(y_true), _f32(y_pred))


# -- the IoU metrics -------------------------------------------------------------------------------------------

class IoU(Metric):
    """Intersection over union of the classes target_class_ids, averaged, from an integer confusion matrix."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_true=True,
                 sparse_y_pred=True, axis=-1):
        super().__init__(name=name)
        self._dtype = dtype or "int32"          # Keras's "int": an integer confusion matrix
        self.num_classes, self.ignore_class, self.axis = num_classes, ignore_class, axis
        self.sparse_y_true, self.sparse_y_pred = sparse_y_true, sparse_y_pred
        self.total_cm = self.add_variable((num_classes, num_classes), "zeros", dtype=self.dtype,
                                          name="total_confusion_matrix")
        if max(target_class_ids) >= num_classes:
            raise ValueError(f"Target class id {max(target_class_ids)} is out of range, which is "
                             f"[0, {num_classes}).")
        self.target_class_ids = list(target_class_ids)

    def _labels(self, values, sparse):
        """Class indices (int): the argmax along `axis` of one-hot values, else the values truncated."""
        values = _f32(values)
        if not sparse:
            values = np.argmax(values, axis=self.axis)
        return values.astype(np.int64).reshape(-1)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = self._labels(y_true, self.sparse_y_true), self._labels(y_pred, self.sparse_y_pred)
        if sample_weight is None:
            weight = np.ones(y_true.shape, np.int64)
        else:
            if "float" in str(getattr(sample_weight, "dtype", "")) and "int" in self.dtype:
                warnings.warn("You are passing weight as `float`, but dtype is `int`. This may result in an "
                              "incorrect weight due to type casting Consider using integer weights.", stacklevel=2)
            weight = np.broadcast_to(_f32(sample_weight).astype(np.int64).reshape(-1), y_true.shape)
        n = self.num_classes
        valid = (y_true >= 0) & (y_true < n) & (y_pred >= 0) & (y_pred < n)
        if self.ignore_class is not None:
            valid &= y_true != self.ignore_class
        cm = np.zeros((n, n), np.int64)
        np.add.at(cm, (y_true[valid], y_pred[valid]), weight[valid])
        self.total_cm.assign((np.asarray(self.total_cm.numpy(), np.int64) + cm).astype(self.dtype))

    def result(self):
        cm = np.asarray(self.total_cm.numpy(), np.int64)
        true_positives = np.diag(cm)
        denominator = cm.sum(axis=0) + cm.sum(axis=1) - true_positives
        ids = self.target_class_ids
        true_positives = true_positives[ids].astype(np.float32)
        denominator = denominator[ids].astype(np.float32)
        valid = denominator > np.float32(1e-9)
        eps = np.float32(_backend.epsilon())
        iou = np.where(valid, true_positives / (denominator + eps), np.float32(0))
        return _scalar(np.sum(iou, axis=self.axis, dtype=np.float32) /
                       (np.sum(valid, dtype=np.float32) + eps))

    def reset_state(self):
        self.total_cm.assign(np.zeros((self.num_classes,) * 2, self.dtype))

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "target_class_ids": self.target_class_ids,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class BinaryIoU(IoU):
    """IoU of binary labels against predictions thresholded at `threshold` (>=)."""

    def __init__(self, target_class_ids=(0, 1), threshold=0.5, name=None, dtype=None):
        super().__init__(num_classes=2, target_class_ids=target_class_ids, name=name, dtype=dtype)
        self.threshold = threshold

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = (_f32(y_pred) >= np.float32(self.threshold)).astype(np.int64)
        return super().update_state(y_true, y_pred, sample_weight)

    def get_config(self):
        return {"target_class_ids": self.target_class_ids, "threshold": self.threshold, "name": self.name,
                "dtype": self.dtype}


class MeanIoU(IoU):
    """IoU averaged over all num_classes classes."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_true=True, sparse_y_pred=True,
                 axis=-1):
        super().__init__(num_classes, list(range(num_classes)), name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=sparse_y_true, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_true": self.sparse_y_true,
                "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


class OneHotIoU(IoU):
    """IoU of one-hot labels (and, unless sparse_y_pred, class scores) by their argmax along `axis`."""

    def __init__(self, num_classes, target_class_ids, name=None, dtype=None, ignore_class=None, sparse_y_pred=False,
                 axis=-1):
        super().__init__(num_classes, target_class_ids, name=name, dtype=dtype, ignore_class=ignore_class,
                         sparse_y_true=False, sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "target_class_ids": self.target_class_ids, "name": self.name,
                "dtype": self.dtype, "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred,
                "axis": self.axis}


class OneHotMeanIoU(MeanIoU):
    """MeanIoU of one-hot labels (and, unless sparse_y_pred, class scores) by their argmax along `axis`."""

    def __init__(self, num_classes, name=None, dtype=None, ignore_class=None, sparse_y_pred=False, axis=-1):
        super().__init__(num_classes, name=name, dtype=dtype, ignore_class=ignore_class, sparse_y_true=False,
                         sparse_y_pred=sparse_y_pred, axis=axis)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype,
                "ignore_class": self.ignore_class, "sparse_y_pred": self.sparse_y_pred, "axis": self.axis}


for _cls in (R2Score, IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU):
    _cls.__module__ = "minifp.keras.metrics"

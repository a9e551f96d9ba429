"""Keras 3's metrics (`keras.metrics`): the accuracy functions, stateful Metric classes, `get` and `resolve`.

A metric keeps Keras's float32 state (`total` and `count`, both float32 as Keras's variables are) and adds to
it as Keras does: each batch's per-sample values (averaged over any further axes) are summed in float32 and
added to `total`; `count` grows by the batch size or by the sum of the sample weights. `result()` is
total / count (0 when count is 0), a float32 0-d tensor. Metric functions see y_pred in its own format (a
float16 output is compared or scored in float16, as in Keras); the state is float32 whatever it is.
Metrics are not differentiable (Keras's are not either); they are computed without recording gradients.
The confusion-matrix metrics (TruePositives ... FalseNegatives, Precision, Recall, AUC, SensitivityAtSpecificity
and its kin, F1Score, FBetaScore) keep Keras's variables instead (`true_positives`, ... per threshold, float32) and
update them with Keras's float32 arithmetic (see their section below).
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import engine
from ..engine import apply, make, no_grad, storage, Tensor as _EngineTensor
from . import _registry, backend as _backend, losses as _losses, ops
from ._loss_functions import _face_class, _like, _tensor
from .losses import (_pair, binary_crossentropy, binary_focal_crossentropy,
                     categorical_crossentropy, categorical_focal_crossentropy, categorical_hinge, hinge, huber,
                     kl_divergence, log_cosh, mean_absolute_error, mean_absolute_percentage_error, mean_squared_error,
                     mean_squared_logarithmic_error, poisson, sparse_categorical_crossentropy,
                     squared_hinge, squeeze_or_expand_to_same_rank)

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
           "SparseCategoricalAccuracy", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
           "MeanSquaredError", "MeanAbsoluteError", "RootMeanSquaredError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "TruePositives", "FalsePositives",
           "TrueNegatives", "FalseNegatives", "Precision", "Recall", "AUC", "SensitivityAtSpecificity",
           "SpecificityAtSensitivity", "PrecisionAtRecall", "RecallAtPrecision", "FBetaScore", "F1Score",
           "accuracy", "binary_accuracy",
           "categorical_accuracy", "sparse_categorical_accuracy", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy", "mean_squared_error", "mean_absolute_error", "mse", "mae", "huber",
           "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy", "get", "resolve",
           "serialize", "deserialize",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "CosineSimilarity", "LogCoshError",
           "Poisson", "KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge", "PearsonCorrelation",
           "ConcordanceCorrelation", "R2Score", "IoU", "MeanIoU", "OneHotIoU", "OneHotMeanIoU", "BinaryIoU",
           "mean_absolute_percentage_error", "mean_squared_logarithmic_error", "log_cosh",
           "poisson", "kl_divergence", "hinge", "squared_hinge", "categorical_hinge", "pearson_correlation",
           "concordance_correlation", "binary_focal_crossentropy", "categorical_focal_crossentropy"]


def _f32(x):
    """The values of a tensor or array as a float32 NumPy array (exact for every minifp format)."""
    if isinstance(x, _EngineTensor):
        x = x.float32() if x.fmt is not None else storage(x).astype(np.float32)
    return np.asarray(x, dtype=np.float32)


def _out(values, like=None):
    """Per-sample metric values (float32, Keras's floatx) as a tensor of the face's class."""
    cls = type(like) if isinstance(like, _EngineTensor) else _face_class()
    return make(cls, np.asarray(values, dtype=np.float32), engine.float32)


def _scalar(value):
    return _out(np.float32(value))


# -- the functions -------------------------------------------------------------------------------------------

def accuracy(y_true, y_pred):
    """1.0 where y_true equals y_pred (y_true cast to y_pred's format), else 0.0."""
    y_pred = _tensor(y_pred)
    y_true, y_pred = squeeze_or_expand_to_same_rank(_like(y_true, y_pred), y_pred)
    return _out(_f32(y_true) == _f32(y_pred), y_pred)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where y_true equals (y_pred > threshold), else 0.0."""
    y_pred = _tensor(y_pred)
    y_true = _tensor(y_true, like=y_pred)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    above = _f32(y_pred) > np.float32(threshold)
    return _out(_f32(y_true) == above.astype(np.float32), y_pred)


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_true) equals argmax(y_pred) along the last axis, else 0.0."""
    y_pred = _tensor(y_pred)
    truth = np.argmax(_f32(_tensor(y_true, like=y_pred)), axis=-1)
    shape = truth.shape
    if truth.ndim == y_pred.ndim:                 # Keras's rule (y_true of one more axis than y_pred)
        truth = truth[..., 0]
    matches = truth == np.argmax(_f32(y_pred), axis=-1)
    return _out(matches.reshape(shape) if truth.shape != shape else matches, y_pred)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the class index y_true equals argmax(y_pred), else 0.0 (both in y_pred's format, as Keras)."""
    y_pred = _tensor(y_pred)
    y_true = _like(y_true, y_pred)
    shape, truth = y_true.shape, _f32(y_true)
    squeezed = y_true.ndim == y_pred.ndim and shape[-1:] == (1,)
    if squeezed:
        truth = truth[..., 0]
    # Keras casts the argmax to y_true's dtype: into y_pred's format, like the labels.
    guess = _f32(_tensor(np.argmax(_f32(y_pred), axis=-1).astype(np.float32), y_pred.fmt))
    matches = truth == guess
    if squeezed:
        matches = matches.reshape(shape)
    if matches.ndim > 1 and matches.shape[-1] == 1:
        matches = matches[..., 0]
    return _out(matches, y_pred)


def _in_top_k(targets, predictions, k):
    """tf.math.in_top_k: the target's score is among the k largest (ties at the boundary count as in); a
    non-finite score never is."""
    picked = np.take_along_axis(predictions, targets[:, None], axis=1)[:, 0]
    higher = np.sum(predictions > picked[:, None], axis=1)
    return (higher < k) & np.isfinite(picked)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where argmax(y_true) is among the k classes y_pred scores highest."""
    y_pred = _tensor(y_pred)
    truth = np.argmax(_f32(_tensor(y_true, like=y_pred)), axis=-1)
    return _out(_in_top_k(truth.reshape(-1), _f32(y_pred).reshape(-1, y_pred.shape[-1]), k).reshape(truth.shape),
                y_pred)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the class index y_true is among the k classes y_pred scores highest."""
    y_pred = _tensor(y_pred)
    truth = _f32(_tensor(y_true, like=y_pred)).astype(np.int32)
    return _out(_in_top_k(truth.reshape(-1), _f32(y_pred).reshape(-1, y_pred.shape[-1]), k).reshape(truth.shape),
                y_pred)


mse = mean_squared_error
mae = mean_absolute_error


# -- the stateful metrics ------------------------------------------------------------------------------------

class Metric:
    """Keras's Metric base: update_state accumulates, result reads, reset_state zeroes the state."""

    def __init__(self, dtype=None, name=None):
        self.name = name or _backend.auto_name(type(self).__name__)     # AUC -> auc, auc_1 (Keras's counter)
        self._dtype = "float32" if dtype is None else _losses._dtype_name(dtype)
        self._variables = {}

    @property
    def dtype(self):
        return self._dtype

    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum", name=None):
        """A state variable (non-trainable; assign, assign_add, ...), made by `initializer`, listed in `variables`
        and zeroed by reset_state: a custom metric's state, as the Keras guides make it."""
        from . import initializers
        from .layers.layer import Variable
        v = Variable(initializers.get(initializer), shape=shape, dtype=dtype or self.dtype, trainable=False,
                     aggregation=aggregation, name=name)
        v.path = f"{self.name.replace('/', '>')}/{v.name}"          # Keras creates it in the metric's name scope
        self.__dict__.setdefault("_added", []).append(v)
        return v

    @property
    def variables(self):
        return [_out(v) for v in self._variables.values()] + list(self.__dict__.get("_added", ()))

    def reset_state(self):
        for key, v in self._variables.items():
            self._variables[key] = np.zeros_like(v)
        for v in self.__dict__.get("_added", ()):
            v.assign(np.zeros(tuple(v.shape), np.float32))

    def update_state(self, *args, **kwargs):
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        """update_state(*args), then result()."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _same_rank(x1, x2):
    """losses.squeeze_or_expand_to_same_rank on NumPy arrays."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        x2, x1 = (x2[..., None], x1) if r2 == 1 else (x2, x1[..., 0])
    if r2 == r1 + 1 and x2.shape[-1] == 1:
        x1, x2 = (x1[..., None], x2) if r1 == 1 else (x1, x2[..., 0])
    return x1, x2


def _reduce_to_samplewise(values, sample_weight, reduce_fn=np.mean):
    """Keras's reduce_to_samplewise_values (reduce_fn: np.mean for Mean, np.sum for Sum), in float32 NumPy."""
    values = _f32(values)
    if sample_weight is not None:
        values, sw = _same_rank(values, _f32(sample_weight))
        if values.ndim > sw.ndim:
            values = reduce_fn(values, axis=tuple(range(sw.ndim, values.ndim)), dtype=np.float32)
        sw = np.broadcast_to(sw, values.shape)
        values = values * sw
        if sw.ndim > 1:
            sw = reduce_fn(sw, axis=tuple(range(1, sw.ndim)), dtype=np.float32)
        sample_weight = sw
    if values.ndim > 1:
        values = reduce_fn(values, axis=tuple(range(1, values.ndim)), dtype=np.float32)
    return values, sample_weight


class Sum(Metric):
    """The (weighted) sum of the values seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._variables["total"] = np.float32(0)

    def update_state(self, values, sample_weight=None):
        values, _ = _reduce_to_samplewise(values, sample_weight, np.sum)
        self._variables["total"] = np.float32(self._variables["total"] + np.sum(values, dtype=np.float32))

    def result(self):
        return _scalar(self._variables["total"])


class Mean(Metric):
    """The (weighted) mean of the values seen: total / count."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._variables.update(total=np.float32(0), count=np.float32(0))

    def update_state(self, values, sample_weight=None):
        values, sample_weight = _reduce_to_samplewise(values, sample_weight)
        state = self._variables
        state["total"] = np.float32(state["total"] + np.sum(values, dtype=np.float32))
        if sample_weight is not None:
            n = np.sum(sample_weight, dtype=np.float32)
        else:
            n = np.float32(values.shape[0] if values.ndim >= 1 else 1)
        state["count"] = np.float32(state["count"] + n)

    def result(self):
        total, count = self._variables["total"], self._variables["count"]
        return _scalar(total / count if count else np.float32(0))      # divide_no_nan


class MeanMetricWrapper(Mean):
    """The mean of a per-sample function fn(y_true, y_pred, **kwargs)."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        with no_grad():
            values = self._fn(y_true, y_pred, **self._fn_kwargs)
        mask = getattr(values, "_keras_mask", None)
        if mask is not None and sample_weight is not None:
            # ignore_class: Keras's Mean applies the values' mask only to given weights (unweighted, the ignored
            # samples count, with value 0).
            sw, mask = _same_rank(_f32(sample_weight), np.asarray(mask, np.float32))
            sample_weight = sw * mask
        return super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        config = {"name": self.name, "dtype": self.dtype,
                  "fn": getattr(self._fn, "__name__", repr(self._fn))}
        config.update(self._fn_kwargs)
        return config


def _wrapper(fn, default_name, doc, params=()):
    """A MeanMetricWrapper subclass over fn with Keras's name, keyword defaults and config."""
    defaults = dict(params)

    def __init__(self, name=default_name, dtype=None, **kwargs):
        unknown = set(kwargs) - set(defaults)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) {sorted(unknown)}; "
                            f"valid: name, dtype{''.join(', ' + k for k in defaults)}")
        values = {**defaults, **kwargs}
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype, **values)
        for key, value in values.items():
            setattr(self, key, value)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, **{k: getattr(self, k) for k in defaults}}

    return {"__init__": __init__, "get_config": get_config, "__doc__": doc}


Accuracy = type("Accuracy", (MeanMetricWrapper,), _wrapper(accuracy, "accuracy",
                                                          "How often y_pred equals y_true."))
BinaryAccuracy = type("BinaryAccuracy", (MeanMetricWrapper,), _wrapper(
    binary_accuracy, "binary_accuracy", "How often (y_pred > threshold) equals the binary label.",
    {"threshold": 0.5}))
CategoricalAccuracy = type("CategoricalAccuracy", (MeanMetricWrapper,), _wrapper(
    categorical_accuracy, "categorical_accuracy", "How often argmax(y_pred) is argmax of the one-hot label."))
SparseCategoricalAccuracy = type("SparseCategoricalAccuracy", (MeanMetricWrapper,), _wrapper(
    sparse_categorical_accuracy, "sparse_categorical_accuracy", "How often argmax(y_pred) is the integer label."))
TopKCategoricalAccuracy = type("TopKCategoricalAccuracy", (MeanMetricWrapper,), _wrapper(
    top_k_categorical_accuracy, "top_k_categorical_accuracy", "How often the one-hot label is in the top k.",
    {"k": 5}))
SparseTopKCategoricalAccuracy = type("SparseTopKCategoricalAccuracy", (MeanMetricWrapper,), _wrapper(
    sparse_top_k_categorical_accuracy, "sparse_top_k_categorical_accuracy",
    "How often the integer label is in the top k.", {"k": 5}))
MeanSquaredError = type("MeanSquaredError", (MeanMetricWrapper,), _wrapper(
    mean_squared_error, "mean_squared_error", "The mean of the per-sample mean squared errors."))
MeanAbsoluteError = type("MeanAbsoluteError", (MeanMetricWrapper,), _wrapper(
    mean_absolute_error, "mean_absolute_error", "The mean of the per-sample mean absolute errors."))
BinaryCrossentropy = type("BinaryCrossentropy", (MeanMetricWrapper,), _wrapper(
    binary_crossentropy, "binary_crossentropy", "The mean binary crossentropy.",
    {"from_logits": False, "label_smoothing": 0}))
CategoricalCrossentropy = type("CategoricalCrossentropy", (MeanMetricWrapper,), _wrapper(
    categorical_crossentropy, "categorical_crossentropy", "The mean categorical crossentropy.",
    {"from_logits": False, "label_smoothing": 0, "axis": -1}))
SparseCategoricalCrossentropy = type("SparseCategoricalCrossentropy", (MeanMetricWrapper,), _wrapper(
    sparse_categorical_crossentropy, "sparse_categorical_crossentropy", "The mean sparse categorical crossentropy.",
    {"from_logits": False, "ignore_class": None, "axis": -1}))
for _cls in (Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
             SparseTopKCategoricalAccuracy, MeanSquaredError, MeanAbsoluteError, BinaryCrossentropy,
             CategoricalCrossentropy, SparseCategoricalCrossentropy):
    _cls.__module__ = __name__


class RootMeanSquaredError(Mean):
    """sqrt of the mean of the squared errors."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        with no_grad():
            y_true, y_pred = squeeze_or_expand_to_same_rank(_tensor(y_true, engine.float32), _tensor(y_pred, engine.float32))
        d = _f32(y_pred) - _f32(y_true)
        return super().update_state(d * d, sample_weight=sample_weight)

    def result(self):
        return _scalar(np.sqrt(_f32(super().result())))


# -- the confusion-matrix metrics (Keras's confusion_metrics.py, metrics_utils.py, f_score_metrics.py) -------
#
# Keras's float32 arithmetic in NumPy: labels are true where nonzero; a prediction counts as positive where it is
# above (`>`) a threshold rounded to float32; weights are summed in float32. Evenly spaced thresholds take Keras's
# bucket path instead (bucket = ceil(p * (n - 1)) - 1 with a float32 product, then a cumulative sum from the top),
# which places a prediction within a rounding of a threshold where Keras places it, not where `>` would.

_NEG_INF = -1e10         # metrics_utils.NEG_INF: the threshold under top_k, and the score of the classes outside it
_COUNTS = ("true_positives", "false_positives", "true_negatives", "false_negatives")


def _threshold_list(thresholds, default):
    """Keras's parse_init_thresholds: a list (anything else is one threshold), each in [0, 1]."""
    listed = thresholds if isinstance(thresholds, list) else [default if thresholds is None else thresholds]
    if thresholds is not None:
        bad = [t for t in listed if t is None or t < 0 or t > 1]
        if bad:
            raise ValueError(f"Threshold values must be in [0, 1]. Received: {bad}")
    return listed


def _evenly_spaced(thresholds):
    """Keras's is_evenly_distributed_thresholds: three or more, close to 0, 1/(n-1), ..., 1."""
    n = len(thresholds)
    return n >= 3 and bool(np.allclose(thresholds, np.arange(n, dtype=np.float32) / (n - 1),
                                       atol=_backend.epsilon()))


def _divide_no_nan(x, y):
    """x / y in float32, 0 where y is 0."""
    y_safe = np.where(y == 0, np.float32(1), y)
    return np.where(y == 0, np.float32(0), x / y_safe).astype(np.float32)


def _filter_top_k(x, k):
    """Keras's _filter_top_k: the k highest scores of the last axis kept, the others NEG_INF (ties: the lower
    index is in, as TensorFlow's top_k)."""
    top = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    mask = np.zeros_like(x)
    np.put_along_axis(mask, top, np.float32(1), axis=-1)
    return x * mask + np.float32(_NEG_INF) * (1 - mask)


def _update_confusion(variables, y_true, y_pred, thresholds, evenly, top_k=None, class_id=None,
                      sample_weight=None, multi_label=False, label_weights=None):
    """Keras's update_confusion_matrix_variables: add each threshold's weighted counts to `variables`
    ({"true_positives": variable, ...}, any of the four)."""
    y_pred, y_true = _same_rank(_f32(y_pred), _f32(y_true))
    if sample_weight is not None:
        sample_weight = _f32(sample_weight)[..., None]
        if sample_weight.ndim == y_true.ndim + 1:          # Keras expands it, then squeezes it to y_true's rank
            sample_weight = sample_weight[..., 0]
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.ndim == 1:
            raise ValueError(f"When class_id is provided, y_pred must be a 2D array with shape (num_samples, "
                             f"num_classes), found shape: {y_pred.shape}")
        y_true, y_pred = y_true[..., class_id, None], y_pred[..., class_id, None]
    weights = _confusion_weights(y_pred.shape, sample_weight, label_weights)
    if evenly:
        with_epsilon = thresholds[0] < 0.0 or thresholds[-1] > 1.0
        counts = _bucket_counts(y_true, y_pred, len(thresholds), with_epsilon, weights, multi_label)
    else:
        counts = _threshold_counts(y_true, y_pred, np.asarray(thresholds, np.float32), weights, multi_label)
    for name, variable in variables.items():
        variable.assign(_f32(variable) + counts[name])


def _confusion_weights(shape, sample_weight, label_weights):
    """Each prediction's weight: sample_weight times label_weights (per last-axis index), float32; None if
    neither is given."""
    weights = None if sample_weight is None else np.broadcast_to(sample_weight, shape)
    if label_weights is not None:
        label_weights = np.broadcast_to(label_weights[None], shape)
        weights = label_weights if weights is None else weights * label_weights
    return weights


def _threshold_counts(y_true, y_pred, thresholds, weights, multi_label):
    """Keras's general path: the weighted number of predictions above each threshold, by label and outcome."""
    truth = y_true != 0
    if not multi_label:                                    # one flat list of label-prediction pairs
        truth, y_pred = truth.reshape(-1), y_pred.reshape(-1)
        weights = None if weights is None else weights.reshape(-1)
    above = y_pred[None] > thresholds.reshape((-1,) + (1,) * y_pred.ndim)
    truth = truth[None]

    def total(cond):
        values = cond.astype(np.float32) if weights is None else np.where(cond, weights, np.float32(0))
        return np.sum(values, axis=1, dtype=np.float32)

    return {"true_positives": total(truth & above), "false_positives": total(~truth & above),
            "true_negatives": total(~truth & ~above), "false_negatives": total(truth & ~above)}


def _bucket_counts(y_true, y_pred, n, with_epsilon, weights, multi_label):
    """Keras's path for evenly spaced thresholds: each prediction's weight goes to bucket ceil(p * (n - 1)) - 1
    (the last threshold it is above) and the buckets are summed from the top. Predictions are clipped to [0, 1];
    a 0 falls in no bucket unless the end thresholds carry epsilons (AUC's)."""
    weights = np.float32(1) if weights is None else weights
    truth = (y_true != 0).astype(np.float32)
    if not multi_label:
        truth, y_pred = truth.reshape(-1), y_pred.reshape(-1)
        weights = np.reshape(weights, -1) if np.ndim(weights) else weights
    positive, negative = truth * weights, (np.float32(1) - truth) * weights
    bucket = np.ceil(np.clip(y_pred, 0, 1) * np.float32(n - 1)) - 1
    if with_epsilon:
        bucket = np.maximum(bucket, 0)
    bucket = bucket.astype(np.int32)
    tp, fp = (np.flip(np.cumsum(np.flip(_segment_sum(v, bucket, n), 0), axis=0, dtype=np.float32), 0)
              for v in (positive, negative))
    return {"true_positives": tp, "false_positives": fp,
            "true_negatives": np.sum(negative, axis=0, dtype=np.float32) - fp,
            "false_negatives": np.sum(positive, axis=0, dtype=np.float32) - tp}


def _segment_sum(values, segments, n):
    """ops.segment_sum along the first axis (column by column for 2-D values), in float32, in order; negative
    segments are dropped."""
    values = np.broadcast_to(values, segments.shape)
    out = np.zeros((n,) + segments.shape[1:], np.float32)
    keep = segments >= 0
    np.add.at(out, (segments[keep],) + np.nonzero(keep)[1:], values[keep])
    return out


def _one_or_all(values, thresholds):
    """A metric's result: a 0-d tensor for one threshold, else one value per threshold."""
    return _out(values[0] if len(thresholds) == 1 else values)


class _ConfusionMatrixConditionCount(Metric):
    """The weighted count of one confusion-matrix outcome at each threshold, in the variable `accumulator`."""

    _condition = None

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.thresholds = _threshold_list(thresholds, 0.5)
        self._thresholds_distributed_evenly = _evenly_spaced(self.thresholds)
        self.accumulator = self.add_variable((len(self.thresholds),), "zeros", name="accumulator")

    def update_state(self, y_true, y_pred, sample_weight=None):
        _update_confusion({self._condition: self.accumulator}, y_true, y_pred, self.thresholds,
                          self._thresholds_distributed_evenly, sample_weight=sample_weight)

    def result(self):
        return _one_or_all(_f32(self.accumulator), self.thresholds)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


class TruePositives(_ConfusionMatrixConditionCount):
    """The weighted number of true labels predicted above the threshold(s)."""
    _condition = "true_positives"


class FalsePositives(_ConfusionMatrixConditionCount):
    """The weighted number of false labels predicted above the threshold(s)."""
    _condition = "false_positives"


class TrueNegatives(_ConfusionMatrixConditionCount):
    """The weighted number of false labels predicted at or below the threshold(s)."""
    _condition = "true_negatives"


class FalseNegatives(_ConfusionMatrixConditionCount):
    """The weighted number of true labels predicted at or below the threshold(s)."""
    _condition = "false_negatives"


class _PrecisionRecall(Metric):
    """Precision's and Recall's common part: true_positives and one other count, by threshold, top_k, class_id."""

    _other = None

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds, self.top_k, self.class_id = thresholds, top_k, class_id
        self.thresholds = _threshold_list(thresholds, 0.5 if top_k is None else _NEG_INF)
        self._thresholds_distributed_evenly = _evenly_spaced(self.thresholds)
        for name in ("true_positives", self._other):
            setattr(self, name, self.add_variable((len(self.thresholds),), "zeros", name=name))

    def update_state(self, y_true, y_pred, sample_weight=None):
        _update_confusion({n: getattr(self, n) for n in ("true_positives", self._other)}, y_true, y_pred,
                          self.thresholds, self._thresholds_distributed_evenly, top_k=self.top_k,
                          class_id=self.class_id, sample_weight=sample_weight)

    def result(self):
        tp = _f32(self.true_positives)
        return _one_or_all(_divide_no_nan(tp, tp + _f32(getattr(self, self._other))), self.thresholds)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_PrecisionRecall):
    """tp / (tp + fp): how many of the predictions above the threshold (or in the top_k) are true."""
    _other = "false_positives"


class Recall(_PrecisionRecall):
    """tp / (tp + fn): how many of the true labels are predicted above the threshold (or in the top_k)."""
    _other = "false_negatives"


def _unit_interval(name, value):
    if value < 0 or value > 1:
        raise ValueError(f"Argument `{name}` must be in the range [0, 1]. Received: {name}={value}")
    return value


def _even_thresholds(n):
    """Keras's n thresholds from 0 to 1: 0, 1/(n-1), ..., 1 (Python floats)."""
    return [0.0] + [(i + 1) * 1.0 / (n - 1) for i in range(n - 2)] + [1.0]


class _SensitivitySpecificityBase(Metric):
    """The best `_dependent` rate among the thresholds whose `_constrained` rate is at least `value` (0 if none):
    all four counts at num_thresholds evenly spaced thresholds (one, 0.5, for num_thresholds=1)."""

    _constrained = _dependent = None

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if num_thresholds <= 0:
            raise ValueError(f"Argument `num_thresholds` must be an integer > 0. Received: "
                             f"num_thresholds={num_thresholds}")
        self.value, self.class_id, self.num_thresholds = value, class_id, num_thresholds
        self.thresholds = [0.5] if num_thresholds == 1 else _even_thresholds(num_thresholds)
        self._thresholds_distributed_evenly = num_thresholds != 1
        for name in _COUNTS:
            setattr(self, name, self.add_variable((len(self.thresholds),), "zeros", name=name))

    def update_state(self, y_true, y_pred, sample_weight=None):
        _update_confusion({n: getattr(self, n) for n in _COUNTS}, y_true, y_pred, self.thresholds,
                          self._thresholds_distributed_evenly, class_id=self.class_id, sample_weight=sample_weight)

    def result(self):
        tp, fp, tn, fn = (_f32(getattr(self, n)) for n in _COUNTS)
        rates = {"sensitivity": _divide_no_nan(tp, tp + fn), "specificity": _divide_no_nan(tn, tn + fp),
                 "precision": _divide_no_nan(tp, tp + fp)}
        feasible = rates[self._constrained] >= np.float32(self.value)
        return _scalar(np.max(np.where(feasible, rates[self._dependent], np.float32(0)), initial=np.float32(0)))

    def get_config(self):
        return {**super().get_config(), "class_id": self.class_id}


class SensitivityAtSpecificity(_SensitivitySpecificityBase):
    """The best sensitivity tp / (tp + fn) where the specificity tn / (tn + fp) is at least `specificity`."""
    _constrained, _dependent = "specificity", "sensitivity"

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        self.specificity = _unit_interval("specificity", specificity)
        super().__init__(specificity, num_thresholds, class_id, name, dtype)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "specificity": self.specificity}


class SpecificityAtSensitivity(_SensitivitySpecificityBase):
    """The best specificity tn / (tn + fp) where the sensitivity tp / (tp + fn) is at least `sensitivity`."""
    _constrained, _dependent = "sensitivity", "specificity"

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        self.sensitivity = _unit_interval("sensitivity", sensitivity)
        super().__init__(sensitivity, num_thresholds, class_id, name, dtype)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "sensitivity": self.sensitivity}


class PrecisionAtRecall(_SensitivitySpecificityBase):
    """The best precision tp / (tp + fp) where the recall tp / (tp + fn) is at least `recall`."""
    _constrained, _dependent = "sensitivity", "precision"

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        self.recall = _unit_interval("recall", recall)
        super().__init__(recall, num_thresholds, class_id, name, dtype)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "recall": self.recall}


class RecallAtPrecision(_SensitivitySpecificityBase):
    """The best recall tp / (tp + fn) where the precision tp / (tp + fp) is at least `precision`."""
    _constrained, _dependent = "precision", "sensitivity"

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        self.precision = _unit_interval("precision", precision)
        super().__init__(precision, num_thresholds, class_id, name, dtype)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "precision": self.precision}


def _choice(kind, key, values, title=str.capitalize):
    """Keras's AUCCurve / AUCSummationMethod.from_str: the canonical value that `key` names."""
    for value in values:
        if key in (value.lower(), title(value)):
            return value
    listed = ", ".join(f'"{v}"' for v in values)
    raise ValueError(f'Invalid AUC {kind} value: "{key}". Expected values are [{listed}]')


class AUC(Metric):
    """The area under the ROC (or PR, or PR-gain) curve, a Riemann sum over thresholds: -epsilon, the
    num_thresholds - 2 evenly spaced ones in (0, 1) or the `thresholds` given, 1 + epsilon."""

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            self.num_thresholds = len(thresholds) + 2
            thresholds = sorted(thresholds)
            self._thresholds_distributed_evenly = _evenly_spaced(np.array([0.0] + thresholds + [1.0]))
        else:
            if num_thresholds <= 1:
                raise ValueError(f"Argument `num_thresholds` must be an integer > 1. Received: "
                                 f"num_thresholds={num_thresholds}")
            self.num_thresholds = num_thresholds
            thresholds = _even_thresholds(num_thresholds)[1:-1]
            self._thresholds_distributed_evenly = True
        # End thresholds just outside [0, 1], so that predictions of exactly 0 and 1 are counted.
        self._thresholds = np.array([0.0 - _backend.epsilon()] + thresholds + [1.0 + _backend.epsilon()])
        self.curve = _choice("curve", curve, ("PR", "ROC", "PRGAIN"), str.upper)
        self.summation_method = _choice("summation method", summation_method,
                                        ("interpolation", "majoring", "minoring"))
        super().__init__(name=name, dtype=dtype)
        self.multi_label, self.num_labels = multi_label, num_labels
        self.label_weights = None if label_weights is None else _out(_f32(label_weights))
        self._from_logits = from_logits
        self._built = False
        if not multi_label and num_labels:
            raise ValueError("`num_labels` is needed only when `multi_label` is True.")
        if not multi_label or num_labels:
            self._build([None, num_labels] if multi_label else None)

    @property
    def thresholds(self):
        """The thresholds, the two end ones included."""
        return list(self._thresholds)

    def _build(self, shape):
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError(f"`y_pred` must have rank 2 when `multi_label=True`. Found rank {len(shape)}. "
                                 f"Full shape received for `y_pred`: {shape}")
            self._num_labels = shape[1]
        variable_shape = (self.num_thresholds, self._num_labels) if self.multi_label else (self.num_thresholds,)
        self._build_input_shape = shape
        for name in _COUNTS:
            setattr(self, name, self.add_variable(variable_shape, "zeros", name=name))
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        if not self._built:
            self._build(tuple(y_pred.shape) if hasattr(y_pred, "shape") else np.shape(y_pred))
        if self._from_logits:
            with no_grad():
                y_pred = apply("sigmoid", _tensor(y_pred))         # in y_pred's format, as Keras
        label_weights = None if self.multi_label or self.label_weights is None else _f32(self.label_weights)
        _update_confusion({n: getattr(self, n) for n in _COUNTS}, y_true, y_pred, self._thresholds,
                          self._thresholds_distributed_evenly, sample_weight=sample_weight,
                          multi_label=self.multi_label, label_weights=label_weights)

    def result(self):
        tp, fp, tn, fn = (_f32(getattr(self, n)) for n in _COUNTS)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _scalar(self._average(self._interpolated_pr_terms(tp, fp, fn)))
        recall = _divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, _divide_no_nan(tp, tp + fp)
        else:
            x, y = _pr_gains(tp, fp, tn, fn)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / np.float32(2)
        else:
            heights = (np.minimum if self.summation_method == "minoring" else np.maximum)(y[:-1], y[1:])
        return _scalar(self._average((x[:-1] - x[1:]) * heights))

    @staticmethod
    def _interpolated_pr_terms(tp, fp, fn):
        """Keras's interpolate_pr_auc (Davis & Goadrich 2006): between two thresholds the true and false positives
        change linearly, and the precision is integrated along that line."""
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = _divide_no_nan(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, _divide_no_nan(p[:-1], np.maximum(p[1:], 0)), np.ones_like(p[1:]))
        log = np.log(ratio.astype(np.float64)).astype(np.float32)     # rounded once, as a correctly rounded log
        return _divide_no_nan(slope * (dtp + intercept * log), np.maximum(tp[1:] + fn[1:], 0))

    def _average(self, terms):
        """The sum of the Riemann terms; with multi_label, each label's, averaged (weighted by label_weights)."""
        if not self.multi_label:
            return np.sum(terms, dtype=np.float32)
        by_label = np.sum(terms, axis=0, dtype=np.float32)
        if self.label_weights is None:
            return np.mean(by_label, dtype=np.float32)
        weights = _f32(self.label_weights)
        return _divide_no_nan(np.sum(by_label * weights, dtype=np.float32), np.sum(weights, dtype=np.float32))

    def get_config(self):
        config = {"num_thresholds": self.num_thresholds, "curve": self.curve,
                  "summation_method": self.summation_method, "multi_label": self.multi_label,
                  "num_labels": self.num_labels, "label_weights": self.label_weights,
                  "from_logits": self._from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return {**super().get_config(), **config}


def _pr_gains(tp, fp, tn, fn):
    """Keras's recall and precision gains (scaled by P / N; 0 and 1 where there are no true positives, the
    recall gain at least 0)."""
    scale = _divide_no_nan(tp + fn, tn + fp)
    recall_gain = np.float32(1) - scale * _divide_no_nan(fn, tp)
    precision_gain = np.float32(1) - scale * _divide_no_nan(fp, tp)
    recall_gain = np.where(tp == 0, np.float32(0), recall_gain)
    precision_gain = np.where(tp == 0, np.float32(1), precision_gain)
    return np.maximum(recall_gain, np.float32(0)), precision_gain


class FBetaScore(Metric):
    """(1 + beta^2) * precision * recall / (beta^2 * precision + recall) per class, or averaged ("micro",
    "macro", "weighted"); a prediction is positive above `threshold`, or (no threshold) where it is its row's
    highest."""

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError("Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                             f"'weighted'}}. Received: average={average}")
        if not isinstance(beta, float):
            raise ValueError(f"Invalid `beta` argument value. It should be a Python float. Received: beta={beta} "
                             f"of type '{type(beta)}'")
        if beta <= 0.0:
            raise ValueError(f"Invalid `beta` argument value. It should be > 0. Received: beta={beta}")
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError(f"Invalid `threshold` argument value. It should be a Python float. Received: "
                                 f"threshold={threshold} of type '{type(threshold)}'")
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError(f"Invalid `threshold` argument value. It should verify 0 < threshold <= 1. "
                                 f"Received: threshold={threshold}")
        self.average, self.beta, self.threshold = average, beta, threshold
        self.axis = None if average == "micro" else 0
        self._built = False

    def _build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError(f"FBetaScore expects 2D inputs with shape (batch_size, output_dim). Received input "
                             f"shapes: y_pred.shape={y_pred_shape} and y_true.shape={y_true_shape}.")
        shape = () if self.average == "micro" else (y_pred_shape[-1],)
        for name in ("true_positives", "false_positives", "false_negatives", "intermediate_weights"):
            setattr(self, name, self.add_variable(shape, "zeros", name=name))
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = _f32(y_true), _f32(y_pred)
        if not self._built:
            self._build(y_true.shape, y_pred.shape)
        if self.threshold is None:       # the row's maximum, unless it is 0 ([0, 0, 0] stays all negative)
            y_pred = (y_pred >= np.max(y_pred, axis=-1, keepdims=True)) & (np.abs(y_pred) > np.float32(1e-9))
        else:
            y_pred = y_pred > np.float32(self.threshold)
        y_pred = y_pred.astype(np.float32)
        weight = None if sample_weight is None else np.expand_dims(_f32(sample_weight), 1)

        def add(variable, values):
            values = values if weight is None else values * weight
            variable.assign(_f32(variable) + np.sum(values, axis=self.axis, dtype=np.float32))

        add(self.true_positives, y_pred * y_true)
        add(self.false_positives, y_pred * (1 - y_true))
        add(self.false_negatives, (1 - y_pred) * y_true)
        add(self.intermediate_weights, y_true)

    def result(self):
        eps = np.float32(_backend.epsilon())
        tp, fp, fn = _f32(self.true_positives), _f32(self.false_positives), _f32(self.false_negatives)
        precision, recall = tp / (tp + fp + eps), tp / (tp + fn + eps)
        beta2 = np.float32(self.beta ** 2)
        f_score = precision * recall / (beta2 * precision + recall + eps) * np.float32(1 + self.beta ** 2)
        if self.average == "weighted":
            weights = _f32(self.intermediate_weights)
            f_score = np.sum(f_score * (weights / (np.sum(weights, dtype=np.float32) + eps)), dtype=np.float32)
        elif self.average is not None:
            f_score = np.mean(f_score, dtype=np.float32)
        return _out(f_score)

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta, "threshold": self.threshold}


class F1Score(FBetaScore):
    """FBetaScore with beta = 1: 2 * precision * recall / (precision + recall)."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config


_CONFUSION_CLASSES = (TruePositives, FalsePositives, TrueNegatives, FalseNegatives, Precision, Recall, AUC,
                      SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall, RecallAtPrecision,
                      FBetaScore, F1Score)


# -- the regression, probabilistic, hinge, correlation and IoU metrics ----------------------------------------

# Keras 3's regression, probabilistic, hinge, correlation and IoU metrics, here.
# 
# The per-sample functions are Keras's own (keras/src/losses, correlation_metrics.py) written with keras.ops, so
# they compute in y_pred's format as Keras does (the losses' are minifp/keras/losses.py's); their classes are
# MeanMetricWrappers. R2Score keeps Keras's float32 sums per output; the IoU metrics keep Keras's integer
# confusion matrix (int32: float labels and weights are truncated, as Keras's cast truncates them).

# -- the correlation functions -------------------------------------------------------------------------------

def _cosine_similarity(y_true, y_pred, axis=-1):
    """The sum over `axis` of the L2-normalised y_true times the L2-normalised y_pred (keras.metrics has no such
    function: keras.losses.cosine_similarity is its negative)."""
    y_true, y_pred = _pair(y_true, y_pred)
    return ops.sum(ops.normalize(y_true, axis=axis) * ops.normalize(y_pred, axis=axis), axis=axis)


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


_MORE_CLASSES = (MeanAbsolutePercentageError, MeanSquaredLogarithmicError, CosineSimilarity, LogCoshError, Poisson,
                 KLDivergence, Hinge, SquaredHinge, CategoricalHinge, PearsonCorrelation, ConcordanceCorrelation,
                 R2Score, IoU, MeanIoU, OneHotIoU, OneHotMeanIoU, BinaryIoU)


# -- lookup --------------------------------------------------------------------------------------------------

_snake = _backend.to_snake_case        # Keras's: AUC -> auc, F1Score -> f1_score, FBetaScore -> f_beta_score

_CLASSES = (Metric, Mean, Sum, MeanMetricWrapper, MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError,
            BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, Accuracy, BinaryAccuracy,
            CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
            SparseTopKCategoricalAccuracy) + _CONFUSION_CLASSES + _MORE_CLASSES
ALL_OBJECTS = frozenset(_CLASSES)
ALL_OBJECTS_DICT = {c.__name__: c for c in _CLASSES}
ALL_OBJECTS_DICT.update({_snake(c.__name__): c for c in _CLASSES})
ALL_OBJECTS_DICT.update({"bce": BinaryCrossentropy, "BCE": BinaryCrossentropy, "mse": MeanSquaredError,
                         "MSE": MeanSquaredError, "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError,
                         "mape": MeanAbsolutePercentageError, "MAPE": MeanAbsolutePercentageError,
                         "msle": MeanSquaredLogarithmicError, "MSLE": MeanSquaredLogarithmicError})
_BASES = ("Metric", "metric", "MeanMetricWrapper", "mean_metric_wrapper")


def _unknown(identifier):
    names = ", ".join(sorted(k for k in ALL_OBJECTS_DICT if k not in _BASES))
    return (f"Could not interpret metric identifier: {identifier}. Valid names: {names} (and, in compile, "
            f"'accuracy'/'acc', chosen by the shapes of y_true and y_pred)")


def serialize(metric):
    """A metric's config: {"class_name", "config"} for Metric objects, the name for functions."""
    return _registry.serialize(metric, Metric)


def deserialize(config, custom_objects=None):
    """The metric a serialize() result (or a name) describes."""
    return _registry.deserialize(config, {**ALL_OBJECTS_DICT, **(custom_objects or {})}, _unknown)


def get(identifier):
    """Keras's metrics.get: None, a name (its class made with defaults), a config dict, a callable or Metric."""
    return _registry.get(identifier, ALL_OBJECTS_DICT, _unknown)


def _shape_of(x):
    return None if x is None else _losses._shape(x)


def resolve(identifier, loss=None, output_shape=None, y_true=None, y_pred=None):
    """The Metric Keras's compile makes of `identifier` (compile_utils.get_metric), named by the identifier when
    it is a string; functions are wrapped in MeanMetricWrapper.

    "accuracy"/"acc" is chosen from the shapes, as Keras does: binary when y_pred's
    last axis is 1; else sparse when y_true has fewer axes than y_pred, or a last axis of 1 where y_pred's is
    longer; else categorical. y_pred's shape is `y_pred` (an array, tensor or shape) or `output_shape`.
    Keras reads y_true's shape from the first batch; pass `y_true` (an array, tensor or shape) for its exact
    choice. Without it the loss decides between sparse and categorical (sparse for sparse categorical
    crossentropy, categorical otherwise, as y_true then has y_pred's shape)."""
    if identifier is None:
        raise ValueError("Expected metric, received `None`")
    if str(identifier).lower() in ("accuracy", "acc"):
        pred_shape, true_shape = _shape_of(y_pred) or _shape_of(output_shape), _shape_of(y_true)
        if pred_shape is None:
            raise ValueError(f"metric {identifier!r}: pass output_shape (or y_pred) so that the accuracy can be "
                             f"chosen as Keras does")
        if true_shape is None:
            true_shape = pred_shape[:-1] if _is_sparse_loss(loss) else pred_shape
        is_binary, is_sparse = _losses._is_binary_or_sparse(true_shape, pred_shape)
        cls = BinaryAccuracy if is_binary else SparseCategoricalAccuracy if is_sparse else CategoricalAccuracy
        obj = cls(name=str(identifier))
    else:
        obj = get(identifier)
    name = identifier if isinstance(identifier, str) else obj.name if isinstance(obj, Metric) else \
        getattr(obj, "__name__", type(obj).__name__)
    if not isinstance(obj, Metric):
        obj = MeanMetricWrapper(obj)
    obj.name = name
    return obj


def _is_sparse_loss(loss):
    """Whether a compile loss (name, function or Loss object) takes integer labels."""
    if loss is None:
        return False
    if isinstance(loss, str):
        return loss in ("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy")
    return loss is sparse_categorical_crossentropy or isinstance(loss, _losses.SparseCategoricalCrossentropy) or \
        getattr(loss, "fn", None) is sparse_categorical_crossentropy

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.metrics")

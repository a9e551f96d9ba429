"""Keras 3's metrics (`keras.metrics`): the accuracy functions, stateful Metric classes, `get` and `resolve`.

A metric keeps Keras's float32 state (`total` and `count`, both float32 as Keras's variables are) and adds to
it as Keras does: each batch's per-sample values (averaged over any further axes) are summed in float32 and
added to `total`; `count` grows by the batch size or by the sum of the sample weights. `result()` is
total / count (0 when count is 0), a float32 0-d tensor. Metric functions see y_pred in its own format (a
float16 output is compared or scored in float16, as in Keras); the state is float32 whatever it is.
Metrics are not differentiable (Keras's are not either); they are computed without recording gradients.
"""
from __future__ import annotations

import numpy as np

from .. import engine
from ..engine import make, no_grad, storage, Tensor as _EngineTensor
from . import _registry, losses as _losses
from .losses import (_face_class, _like, _tensor, binary_crossentropy, categorical_crossentropy, huber,
                     mean_absolute_error, mean_squared_error, sparse_categorical_crossentropy,
                     squeeze_or_expand_to_same_rank)

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy",
           "SparseCategoricalAccuracy", "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
           "MeanSquaredError", "MeanAbsoluteError", "RootMeanSquaredError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "accuracy", "binary_accuracy",
           "categorical_accuracy", "sparse_categorical_accuracy", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy", "mean_squared_error", "mean_absolute_error", "mse", "mae", "huber",
           "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy", "get", "resolve",
           "serialize", "deserialize"]


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
        self.name = name or _losses._auto_name(type(self).__name__)
        self._dtype = "float32" if dtype is None else _losses._dtype_name(dtype)
        self._variables = {}

    @property
    def dtype(self):
        return self._dtype

    def add_variable(self, shape=(), initializer="zeros", dtype=None, name=None):
        """A state variable (non-trainable; assign, assign_add, ...), made by `initializer`, listed in `variables`
        and zeroed by reset_state: a custom metric's state, as the Keras guides make it."""
        from . import initializers
        from .layers.layer import Variable
        v = Variable(initializers.get(initializer), shape=shape, dtype=dtype or self.dtype, trainable=False,
                     name=name)
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


# -- lookup --------------------------------------------------------------------------------------------------

def _snake(name):
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


_CLASSES = (Metric, Mean, Sum, MeanMetricWrapper, MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError,
            BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, Accuracy, BinaryAccuracy,
            CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy)
ALL_OBJECTS = frozenset(_CLASSES)
ALL_OBJECTS_DICT = {c.__name__: c for c in _CLASSES}
ALL_OBJECTS_DICT.update({_snake(c.__name__): c for c in _CLASSES})
ALL_OBJECTS_DICT.update({"bce": BinaryCrossentropy, "BCE": BinaryCrossentropy, "mse": MeanSquaredError,
                         "MSE": MeanSquaredError, "mae": MeanAbsoluteError, "MAE": MeanAbsoluteError})
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

"""Losses, all computed in float32 whatever the format of the predictions (Keras and PyTorch names)."""
from __future__ import annotations

import numpy as np

from . import _formats as F
from ._tensor import Tensor, apply, tensor

__all__ = ["cross_entropy", "sparse_categorical_crossentropy", "categorical_crossentropy", "mean_squared_error",
           "binary_cross_entropy_with_logits", "get", "LOSSES"]

_EPS = 1e-7   # Keras clips probabilities to [eps, 1 - eps] before the log


def _f32(x):
    x = x if isinstance(x, Tensor) else tensor(x)
    return x.astype(F.float32) if x.fmt is not None and x.fmt != F.float32 else x


def _labels(y, pred, where, name, pred_name):
    """One integer class index per row of pred (N, C): an int array of shape (N,), checked."""
    if pred.ndim != 2:
        raise ValueError(f"{where}: {pred_name} must have shape (N, C), N samples by C classes; got shape "
                         f"{pred.shape}")
    n, classes = pred.shape
    y = np.asarray(y.float32() if isinstance(y, Tensor) and y.fmt is not None else
                   y._data if isinstance(y, Tensor) else y)
    if y.dtype.kind not in "iuf":
        raise TypeError(f"{where}: {name} must hold integer class indices, got dtype {y.dtype}")
    if y.shape not in ((n,), (n, 1)):
        hint = "; one-hot labels go to categorical_crossentropy" if y.shape == pred.shape else ""
        raise ValueError(f"{where}: {name} of shape {y.shape} for predictions of shape {pred.shape}; it must hold "
                         f"one class index per sample, shape ({n},){hint}")
    if y.dtype.kind == "f":
        if not np.all(y == np.round(y)):
            raise ValueError(f"{where}: {name} must be integers (class indices), got non-integer values")
        y = y.astype(np.int64)
    y = y.reshape(-1)
    if y.size and (y.min() < 0 or y.max() >= classes):
        raise ValueError(f"{where}: {name}: labels must lie in [0, {classes - 1}] for {classes} classes; got labels "
                         f"from {y.min()} to {y.max()}")
    return y


def _floating(x):
    return x.fmt is not None if isinstance(x, Tensor) else np.asarray(x).dtype.kind == "f"


def _same_shape(where, a_name, a, b_name, b):
    if a.shape != b.shape:
        raise ValueError(f"{where}: {a_name} of shape {a.shape} and {b_name} of shape {b.shape} must have the same "
                         f"shape")


def _clip(p):
    """p clipped to [eps, 1 - eps], differentiably (as Keras clips)."""
    return apply("minimum", apply("maximum", p, _EPS), 1 - _EPS)


def _pick(logp, labels):
    """-mean(logp[i, labels[i]])."""
    return -logp[np.arange(labels.size), labels].mean()


def cross_entropy(logits, target):
    """PyTorch's cross_entropy(logits, target): target holds class indices, or class probabilities of logits' shape."""
    logits = _f32(logits)
    if np.shape(target) == logits.shape and _floating(target):
        return -(_f32(target) * logits.log_softmax()).sum(axis=-1).mean()     # probabilities, as PyTorch allows
    return _pick(logits.log_softmax(), _labels(target, logits, "cross_entropy", "target", "logits"))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    """Keras's loss for integer labels; y_pred are probabilities unless from_logits."""
    y_pred = _f32(y_pred)
    labels = _labels(y_true, y_pred, "sparse_categorical_crossentropy", "y_true", "y_pred")
    if from_logits:
        return _pick(y_pred.log_softmax(), labels)
    p = y_pred / y_pred.sum(axis=-1, keepdims=True)
    return _pick(_clip(p).log(), labels)


def categorical_crossentropy(y_true, y_pred, from_logits=False):
    """Keras's loss for one-hot (or soft) labels."""
    y_pred, y_true = _f32(y_pred), _f32(y_true)
    if y_true.shape != y_pred.shape:
        hint = "; class indices go to sparse_categorical_crossentropy" if y_true.shape == y_pred.shape[:-1] else ""
        raise ValueError(f"categorical_crossentropy: y_true (one-hot labels) of shape {y_true.shape} and y_pred of "
                         f"shape {y_pred.shape} must have the same shape{hint}")
    logp = y_pred.log_softmax() if from_logits else _clip(y_pred / y_pred.sum(axis=-1, keepdims=True)).log()
    return -(y_true * logp).sum(axis=-1).mean()


def mean_squared_error(y_true, y_pred):
    """mean((y_pred - y_true)**2); a trailing axis of 1 on either side is dropped first, as Keras does."""
    y_true, y_pred = _f32(y_true), _f32(y_pred)
    # (N,) against (N, 1) would otherwise broadcast to (N, N) and average the wrong differences.
    if y_true.ndim == y_pred.ndim + 1 and y_true.shape[-1:] == (1,):
        y_true = y_true.reshape(y_true.shape[:-1])
    elif y_pred.ndim == y_true.ndim + 1 and y_pred.shape[-1:] == (1,):
        y_pred = y_pred.reshape(y_pred.shape[:-1])
    _same_shape("mean_squared_error", "y_true", y_true, "y_pred", y_pred)
    d = y_pred - y_true
    return (d * d).mean()


def binary_cross_entropy_with_logits(logits, target):
    """Mean of max(x, 0) - x*t + log(1 + exp(-|x|)), the stable form."""
    x, t = _f32(logits), _f32(target)
    _same_shape("binary_cross_entropy_with_logits", "target", t, "logits", x)
    return (x.relu() - x * t + ((-x.abs()).exp() + 1).log()).mean()


LOSSES = {"sparse_categorical_crossentropy": sparse_categorical_crossentropy,
          "categorical_crossentropy": categorical_crossentropy, "mean_squared_error": mean_squared_error,
          "mse": mean_squared_error, "binary_cross_entropy_with_logits": lambda y, p: binary_cross_entropy_with_logits(p, y),
          "cross_entropy": lambda y, p: cross_entropy(p, y)}


def get(identifier):
    """A loss function (y_true, y_pred) from its name or itself."""
    if callable(identifier):
        return identifier
    try:
        return LOSSES[identifier]
    except (KeyError, TypeError):
        raise ValueError(f"unknown loss {identifier!r}; valid names: {', '.join(LOSSES)}") from None

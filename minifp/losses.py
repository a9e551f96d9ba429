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


def _labels(y, classes):
    """Integer class labels as an int array, checked against the number of classes."""
    y = np.asarray(y.data if isinstance(y, Tensor) else y)
    if y.dtype.kind == "f":
        if not np.all(y == np.round(y)):
            raise ValueError("sparse labels must be integers (class indices), got fractional values")
        y = y.astype(np.int64)
    y = y.reshape(-1)
    if y.size and (y.min() < 0 or y.max() >= classes):
        raise ValueError(f"labels must lie in [0, {classes - 1}] for {classes} classes; got labels from "
                         f"{y.min()} to {y.max()}")
    return y


def _clip(p):
    """p clipped to [eps, 1 - eps], differentiably (as Keras clips)."""
    return apply("minimum", apply("maximum", p, _EPS), 1 - _EPS)


def _pick(logp, labels):
    """-mean(logp[i, labels[i]])."""
    if logp.shape[0] != labels.size:
        raise ValueError(f"{labels.size} labels for {logp.shape[0]} predictions")
    return -logp[np.arange(labels.size), labels].mean()


def cross_entropy(logits, target):
    """PyTorch's cross_entropy(logits, integer targets): mean negative log-likelihood of log_softmax."""
    logits = _f32(logits)
    return _pick(logits.log_softmax(), _labels(target, logits.shape[-1]))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    """Keras's loss for integer labels; y_pred are probabilities unless from_logits."""
    y_pred = _f32(y_pred)
    labels = _labels(y_true, y_pred.shape[-1])
    if from_logits:
        return _pick(y_pred.log_softmax(), labels)
    p = y_pred / y_pred.sum(axis=-1, keepdims=True)
    return _pick(_clip(p).log(), labels)


def categorical_crossentropy(y_true, y_pred, from_logits=False):
    """Keras's loss for one-hot (or soft) labels."""
    y_pred, y_true = _f32(y_pred), _f32(y_true)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"one-hot labels of shape {y_true.shape} for predictions of shape {y_pred.shape}")
    logp = y_pred.log_softmax() if from_logits else _clip(y_pred / y_pred.sum(axis=-1, keepdims=True)).log()
    return -(y_true * logp).sum(axis=-1).mean()


def mean_squared_error(y_true, y_pred):
    """mean((y_pred - y_true)**2)."""
    d = _f32(y_pred) - _f32(y_true)
    return (d * d).mean()


def binary_cross_entropy_with_logits(logits, target):
    """Mean of max(x, 0) - x*t + log(1 + exp(-|x|)), the stable form."""
    x, t = _f32(logits), _f32(target)
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

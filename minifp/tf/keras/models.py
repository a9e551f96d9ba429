"""tf.keras.models: Model and Sequential as minifp.keras's with tf.keras's rules where the two differ (the
compiled sparse_categorical_crossentropy flattens labels and predictions whose ranks differ; under
mixed_float16 compile wraps the optimizer in tf.keras's LossScaleOptimizer; summary() prints tf.keras's layout,
see summary_utils.py; a functional model is named "model", "model_1" ...). Other names are minifp.keras.models'.
"""
from __future__ import annotations

from ...keras import backend
from ...keras._missing import missing as _missing
from ...keras import models as _models
from . import summary_utils
from .mixed_precision import LossScaleOptimizer

__all__ = ["Model", "Sequential", "Functional"]


def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
            layer_range=None):
    """Print the model's layers, output shapes and parameter counts in tf.keras's layout (one print_fn call per
    line)."""
    summary_utils.print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                                expand_nested=expand_nested, show_trainable=show_trainable, layer_range=layer_range)


class Model(_models.Model):
    """tf.keras.Model: `Model(inputs, outputs)` makes a functional model; subclasses define `call` or
    `train_step` as with tf.keras."""

    _tf_keras = True
    summary = summary

    _loss_scale_optimizer = LossScaleOptimizer

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "inputs" in kwargs or "outputs" in kwargs):
            return _models.Model.__new__(Functional)
        return _models.Model.__new__(cls)


class Functional(_models.Functional, Model):
    """A tf.keras model made from a graph of layers: tf.keras.Model(inputs, outputs), named "model", "model_1"
    ... as tf.keras names it."""

    def __init__(self, inputs, outputs, name=None, **kwargs):
        super().__init__(inputs, outputs, name=name or backend.auto_name("model"), **kwargs)
        self._name_prefix = None if name else "model"        # made up (for minifp.checkpoint's keys)


class Sequential(_models.Sequential):
    """tf.keras.Sequential: a stack of layers."""

    _tf_keras = True
    summary = summary
    _loss_scale_optimizer = LossScaleOptimizer


def __getattr__(name):
    if name in _models.__all__ or name.startswith("__"):
        return getattr(_models, name)
    return _missing(__name__, "TensorFlow")(name)

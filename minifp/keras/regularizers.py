"""keras.regularizers: penalties on weights (add_weight(regularizer=...), kernel_regularizer=) or on a layer's
outputs (activity_regularizer=), which show up in `layer.losses` and are added to the loss in fit."""
from __future__ import annotations

import math

from ..engine import apply
from . import _registry
from ._missing import missing as _missing
from ._tensor import convert_to_tensor

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize", "deserialize"]


def _penalty(value, name):
    """A non-negative finite float, or Keras's ValueError."""
    if isinstance(value, bool) or not isinstance(value, (float, int)) or math.isinf(value) or math.isnan(value) \
            or value < 0:
        raise ValueError(f"Invalid value for argument {name}: expected a non-negative float.Received: {name}={value}")
    return float(value)


def _scaled(factor, x, fn):
    """factor (cast to x's dtype) * sum(fn(x)), as Keras computes it in x's dtype."""
    return apply("mul", convert_to_tensor(factor, dtype=x.dtype), apply("sum", fn(x)))


class Regularizer:
    """The base class: a callable from a weight tensor to a scalar penalty (0 here)."""

    def __call__(self, x):
        return 0.0

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1(Regularizer):
    """l1 * sum(abs(x))."""

    def __init__(self, l1=0.01):
        self.l1 = _penalty(l1, "l1")

    def __call__(self, x):
        return _scaled(self.l1, x, lambda t: apply("abs", t))

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """l2 * sum(square(x))."""

    def __init__(self, l2=0.01):
        self.l2 = _penalty(l2, "l2")

    def __call__(self, x):
        return _scaled(self.l2, x, lambda t: apply("mul", t, t))

    def get_config(self):
        return {"l2": self.l2}


class L1L2(Regularizer):
    """l1 * sum(abs(x)) + l2 * sum(square(x)) (each term only where its factor is not 0)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = _penalty(l1, "l1"), _penalty(l2, "l2")

    def __call__(self, x):
        total = convert_to_tensor(0.0, dtype=x.dtype)
        if self.l1:
            total = apply("add", total, L1(self.l1)(x))
        if self.l2:
            total = apply("add", total, L2(self.l2)(x))
        return total

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


l1, l2, l1_l2 = L1, L2, L1L2
ALL_OBJECTS_DICT = {"L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2, "l1_l2": L1L2}


def _unknown(identifier):
    return f"Could not interpret regularizer identifier: {identifier}"


def serialize(regularizer):
    """{"class_name", "config"} of a regularizer."""
    return _registry.serialize(regularizer, Regularizer)


def deserialize(config, custom_objects=None):
    """The regularizer a serialize() result describes."""
    return _registry.deserialize(config, {**ALL_OBJECTS_DICT, **(custom_objects or {})}, _unknown)


def get(identifier):
    """A regularizer from None, a name ("l2"), a config dict, a class or a callable."""
    return _registry.get(identifier, ALL_OBJECTS_DICT, _unknown)


__getattr__ = _missing("minifp.keras.regularizers")

"""keras.constraints: projections applied to a variable after each optimizer update (add_weight(constraint=...),
kernel_constraint=), each computed in float32 op by op as Keras's."""
from __future__ import annotations

from ..engine import apply
from . import backend
from . import _registry
from ._missing import missing as _missing
from ._tensor import convert_to_tensor

__all__ = ["Constraint", "NonNeg", "MaxNorm", "UnitNorm", "MinMaxNorm", "non_neg", "max_norm", "unit_norm",
           "min_max_norm", "get", "serialize", "deserialize"]


def _norms(w, axis):
    """sqrt(sum(w * w, axis, keepdims))."""
    return apply("sqrt", apply("sum", apply("mul", w, w), axis=axis, keepdims=True))


def _rescaled(w, desired, norms):
    """w * (desired / (epsilon + norms))."""
    return apply("mul", w, apply("div", desired, apply("add", norms, backend.epsilon())))


def _clip(x, lo, hi):
    return apply("minimum", apply("maximum", x, lo), hi)


class Constraint:
    """The base class: a callable from a variable to its projected values (here: unchanged)."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class NonNeg(Constraint):
    """max(w, 0)."""

    def __call__(self, w):
        return apply("maximum", convert_to_tensor(w), 0.0)


class MaxNorm(Constraint):
    """Rescale each slice along `axis` whose norm exceeds max_value to that norm."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        return _rescaled(w, _clip(norms, 0.0, float(self.max_value)), norms)

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class UnitNorm(Constraint):
    """w / (epsilon + norm) along `axis`."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        return apply("div", w, apply("add", _norms(w, self.axis), backend.epsilon()))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Norms along `axis` moved (by `rate`) into [min_value, max_value]."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = apply("add", apply("mul", _clip(norms, float(self.min_value), float(self.max_value)),
                                     float(self.rate)), apply("mul", norms, float(1 - self.rate)))
        return _rescaled(w, desired, norms)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


non_neg, max_norm, unit_norm, min_max_norm = NonNeg, MaxNorm, UnitNorm, MinMaxNorm
ALL_OBJECTS_DICT = {"Constraint": Constraint, "NonNeg": NonNeg, "MaxNorm": MaxNorm, "UnitNorm": UnitNorm,
                    "MinMaxNorm": MinMaxNorm, "non_neg": NonNeg, "max_norm": MaxNorm, "unit_norm": UnitNorm,
                    "min_max_norm": MinMaxNorm}


def _unknown(identifier):
    return f"Could not interpret constraint identifier: {identifier}"


def serialize(constraint):
    """{"class_name", "config"} of a constraint."""
    return _registry.serialize(constraint, Constraint)


def deserialize(config, custom_objects=None):
    """The constraint a serialize() result describes."""
    return _registry.deserialize(config, {**ALL_OBJECTS_DICT, **(custom_objects or {})}, _unknown)


def get(identifier):
    """A constraint from None, a name ("non_neg"), a config dict, a class or a callable."""
    return _registry.get(identifier, ALL_OBJECTS_DICT, _unknown)


__getattr__ = _missing("minifp.keras.constraints")

"""Ops on KerasTensors (`inputs / 255.0`, ops.mean(x, axis=1), x[:, 0]): each call becomes a node of the
functional graph, as Keras 3's Operations are: listed in the summary under the op's name (true_divide (TrueDivide)),
not in model.layers, without weights, replaying the op on the values when the model runs."""
from __future__ import annotations

import functools

from .layer import _NULL, KerasTensor, Layer

__all__ = ["Operation", "symbolic"]

_CLASSES = {}       # op name -> its Operation subclass (named as Keras names the op's class)
_CAMEL = {"relu": "ReLU", "relu6": "ReLU6"}     # where Keras's op class is not the name in CamelCase


class Operation(Layer):
    """One call of an op on KerasTensors: call() is the op itself on the values."""

    _convert_input_args = False     # the op sees its arguments as given (its own dtype rules)
    _allow_non_tensor_positional_args = True
    _is_operation = True

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def build(self, input_shape=None):
        pass

    def call(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def _autocast_scope(self, args):
        return _NULL        # no layer's policy: variables are read as they are

    def _call_params(self):
        return {}, True     # no `training` to pass, any keyword taken


def _class_of(name):
    """The Operation subclass for an op name: true_divide -> TrueDivide."""
    cls = _CLASSES.get(name)
    if cls is None:
        camel = _CAMEL.get(name) or "".join(part[:1].upper() + part[1:] for part in name.split("_"))
        cls = _CLASSES[name] = type(camel, (Operation,), {"__module__": __name__})
    return cls


def _has_keras_tensor(args, kwargs):
    """Whether a KerasTensor is among the arguments (or in a list or tuple of them): cheap for eager calls."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, KerasTensor) or type(a) in (list, tuple) and any(isinstance(b, KerasTensor) for b in a):
            return True
    return False


def symbolic(fn, name=None):
    """fn, which on KerasTensors records an Operation node (and gives its KerasTensors) instead of computing."""
    op_name = name or fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _has_keras_tensor(args, kwargs):
            return _class_of(op_name)(fn)(*args, **kwargs)
        return fn(*args, **kwargs)
    return call

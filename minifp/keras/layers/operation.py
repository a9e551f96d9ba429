"""Ops on KerasTensors (`inputs / 255.0`, ops.mean(x, axis=1), x[:, 0]): each call becomes a node of the
functional graph, as Keras 3's Operations are: listed in the summary under the op's name (true_divide (TrueDivide)),
not in model.layers, without weights, replaying the op on the values when the model runs."""
from __future__ import annotations

from ..ops import _common
from .layer import _NULL, KerasTensor, Layer

__all__ = ["Operation"]

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


def _record(fn, name, args, kwargs):
    """The Operation node of fn called on KerasTensors: its outputs' KerasTensors."""
    return _class_of(name)(fn)(*args, **kwargs)


_common.RECORD[0] = _record


def _ops():
    from .. import ops      # (keras.ops imports the layers it computes with)
    return ops


# Operators on KerasTensors are keras.ops under the names Keras gives them
for _name, _op in {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                   "floordiv": "floor_divide", "mod": "mod", "pow": "power", "matmul": "matmul"}.items():
    setattr(KerasTensor, f"__{_name}__", lambda self, other, _op=_op: getattr(_ops(), _op)(self, other))
    setattr(KerasTensor, f"__r{_name}__", lambda self, other, _op=_op: getattr(_ops(), _op)(other, self))
for _name, _op in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "and": "logical_and",
                   "or": "logical_or", "getitem": "get_item"}.items():
    setattr(KerasTensor, f"__{_name}__", lambda self, other, _op=_op: getattr(_ops(), _op)(self, other))
for _name, _op in {"neg": "negative", "abs": "absolute", "invert": "logical_not"}.items():
    setattr(KerasTensor, f"__{_name}__", lambda self, _op=_op: getattr(_ops(), _op)(self))

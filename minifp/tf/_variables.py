"""tf.Variable: a minifp.keras Variable created TensorFlow's way (initial_value first, its dtype inferred as
tf.constant infers it: Python floats float32, ints int32)."""
from __future__ import annotations

from ..keras import Variable as _KerasVariable
from . import _ops

__all__ = ["Variable"]


class Variable(_KerasVariable, _ops.Tensor):
    """tf.Variable(initial_value, trainable=True, name=None, dtype=None, shape=None): trainable float
    variables require gradients, so a GradientTape watches them; its operators and results are tf.Tensor's."""

    _result_class = _ops.Tensor

    def __init__(self, initial_value=None, trainable=None, validate_shape=True, caching_device=None, name=None,
                 variable_def=None, dtype=None, import_scope=None, constraint=None, synchronization="auto",
                 aggregation="none", shape=None, experimental_enable_variable_lifting=True):
        if initial_value is None:
            raise ValueError("The `initial_value` arg to `tf.Variable` must be specified except when you are not "
                             "providing a `variable_def`. You provided neither.")
        if callable(initial_value):
            initial_value = initial_value()
        t = _ops.convert_to_tensor(initial_value) if dtype is None else _ops.constant(initial_value, dtype)
        super().__init__(t, dtype=t.dtype, trainable=True if trainable is None else trainable,
                         name=name or "Variable")

"""tf.errors: TensorFlow's exception classes that minifp.tf raises (OpError and its InvalidArgumentError)."""
from __future__ import annotations

__all__ = ["OpError", "InvalidArgumentError"]


class OpError(Exception):
    """An op could not run (TensorFlow's base class of op errors)."""

    def __init__(self, node_def, op, message, *args):
        super().__init__(message)
        self.node_def, self.op, self.message = node_def, op, message

    def __str__(self):
        return self.message


class InvalidArgumentError(OpError):
    """An op got an argument it cannot take (TensorFlow: mixed dtypes, an axis out of range, ...)."""

    def __init__(self, node_def=None, op=None, message="", *args):
        super().__init__(node_def, op, message, *args)

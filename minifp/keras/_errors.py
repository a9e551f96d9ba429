"""The TensorFlow error types Keras 3's TensorFlow backend lets through to the user."""
from __future__ import annotations

__all__ = ["InvalidArgumentError"]


class InvalidArgumentError(ValueError):
    """tf.errors.InvalidArgumentError: an op got an argument it cannot use (an axis out of range)."""


def check_axis(axis, ndim, what="dim"):
    """axis as a non-negative index of an ndim-rank tensor; TensorFlow's error when out of [-ndim, ndim)."""
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(f"`{what}` must be in the range [{-ndim}, {ndim}) where {ndim} is the number of "
                                   f"dimensions in the input. Received: {what}={axis}")
    return axis % ndim

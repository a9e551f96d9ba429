"""Keras 3's ZeroPadding2D: zeros added around the spatial axes (values move, no arithmetic)."""
from __future__ import annotations

import numbers

from ...engine import apply, array_module, made_like, storage
from .convolutional import standardize_data_format, standardize_tuple
from .layer import InputSpec, Layer

__all__ = ["ZeroPadding2D"]


class ZeroPadding2D(Layer):
    """Zeros added to the rows and columns: padding an int, (rows, cols) or ((top, bottom), (left, right))."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
            self.padding = ((int(padding),) * 2,) * 2
        elif hasattr(padding, "__len__"):
            if len(padding) != 2:
                raise ValueError(f"`padding` should have two elements. Received: padding={padding}.")
            self.padding = (standardize_tuple(padding[0], 2, "1st entry of padding", allow_zero=True),
                            standardize_tuple(padding[1], 2, "2nd entry of padding", allow_zero=True))
        else:
            raise ValueError("`padding` should be either an int, a tuple of 2 ints (symmetric_height_crop, "
                             "symmetric_width_crop), or a tuple of 2 tuples of 2 ints ((top_crop, bottom_crop), "
                             f"(left_crop, right_crop)). Received: padding={padding}.")
        self.input_spec = InputSpec(ndim=4)
        self.built = True

    def call(self, inputs):
        axes = (1, 2) if self.data_format == "channels_last" else (2, 3)
        x = inputs
        for axis, (before, after) in zip(axes, self.padding):
            x = _pad(x, axis, before, after)
        return x

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        first = 1 if self.data_format == "channels_last" else 2
        for i, (before, after) in enumerate(self.padding):
            if shape[first + i] is not None:
                shape[first + i] += before + after
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


def _pad(x, axis, before, after):
    """x with `before` and `after` zeros along axis: one concatenate (its gradient slices them off)."""
    if not before and not after:
        return x
    xp = array_module(storage(x))
    parts = []
    for n in (before, after):
        shape = list(x.shape)
        shape[axis] = n
        parts.append(made_like(x, xp.zeros(shape, storage(x).dtype), x.fmt) if n else None)
    return apply("concatenate", *[p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)

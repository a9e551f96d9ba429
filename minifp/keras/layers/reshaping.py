"""Keras 3's ZeroPadding2D, Cropping2D and UpSampling2D: values move (no arithmetic), except bilinear
upsampling, which interpolates in float32 as TensorFlow's resize kernel does."""
from __future__ import annotations

import numbers

import numpy as np

from ...engine import apply, array_module, float32, made_like, storage
from .convolutional import standardize_data_format, standardize_tuple
from .layer import InputSpec, Layer

__all__ = ["ZeroPadding2D", "Cropping2D", "UpSampling2D"]


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


def _pairs(value, name):
    """An int, (rows, cols) or ((top, bottom), (left, right)) as the latter (Keras's error otherwise)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return ((int(value),) * 2,) * 2
    if hasattr(value, "__len__") and len(value) == 2:
        return (standardize_tuple(value[0], 2, f"1st entry of {name}", allow_zero=True),
                standardize_tuple(value[1], 2, f"2nd entry of {name}", allow_zero=True))
    raise ValueError(f"`{name}` should be either an int, a tuple of 2 ints (symmetric_height_crop, "
                     f"symmetric_width_crop), or a tuple of 2 tuples of 2 ints ((top_crop, bottom_crop), "
                     f"(left_crop, right_crop)). Received: {name}={value}.")


class Cropping2D(Layer):
    """Rows and columns cut off the spatial edges: cropping an int, (rows, cols) or
    ((top, bottom), (left, right))."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.cropping = _pairs(cropping, "cropping")
        self.input_spec = InputSpec(ndim=4)
        self.built = True

    def _axes(self):
        return (1, 2) if self.data_format == "channels_last" else (2, 3)

    def call(self, inputs):
        self.compute_output_shape(tuple(inputs.shape))
        index = [slice(None)] * 4
        for axis, (before, after) in zip(self._axes(), self.cropping):
            index[axis] = slice(before, inputs.shape[axis] - after)
        return apply("getitem", inputs, index=tuple(index))

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, (before, after) in zip(self._axes(), self.cropping):
            if shape[axis] is not None:
                if shape[axis] - before - after <= 0:
                    raise ValueError(f"Values in `cropping` argument should be smaller than the corresponding "
                                     f"spatial dimension of the input. Received: input_shape={tuple(input_shape)}, "
                                     f"cropping={self.cropping}")
                shape[axis] -= before + after
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping, "data_format": self.data_format}


class UpSampling2D(Layer):
    """Rows and columns repeated size times ("nearest") or interpolated ("bilinear", TensorFlow's
    resize with half-pixel centres)."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.size = standardize_tuple(size, 2, "size")
        self.interpolation = interpolation.lower() if isinstance(interpolation, str) else interpolation
        self.input_spec = InputSpec(ndim=4)
        self.built = True

    def _axes(self):
        return (1, 2) if self.data_format == "channels_last" else (2, 3)

    def call(self, inputs):
        if self.interpolation == "nearest":
            return _repeat(inputs, self._axes(), self.size)
        if self.interpolation == "bilinear":
            return _bilinear(inputs, self._axes(), self.size)
        raise ValueError(f"Invalid value for argument `interpolation`: expected 'nearest' or 'bilinear' "
                         f"(minifp has no other). Received: interpolation={self.interpolation}")

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, s in zip(self._axes(), self.size):
            shape[axis] = None if shape[axis] is None else shape[axis] * s
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format,
                "interpolation": self.interpolation}


def _repeat(x, axes, sizes):
    """Each value along axes[i] repeated sizes[i] times: a broadcast over a new axis after it, then a reshape."""
    for axis, s in sorted(zip(axes, sizes), reverse=True):
        if s == 1:
            continue
        shape = list(x.shape)
        x = apply("reshape", x, shape=tuple(shape[:axis + 1]) + (1,) + tuple(shape[axis + 1:]))
        x = apply("broadcast_to", x, shape=tuple(shape[:axis + 1]) + (s,) + tuple(shape[axis + 1:]))
        shape[axis] *= s
        x = apply("reshape", x, shape=tuple(shape))
    return x


def _bilinear(x, axes, sizes):
    """TensorFlow's bilinear resize by integer factors (half-pixel centres), in float32 and rounded once into
    x's dtype: along each axis lo + (hi - lo) * frac, the columns first, as its kernel interpolates."""
    fmt = x.fmt
    y = x if fmt == float32 else apply("cast", x, _out=float32)
    for axis, s in sorted(zip(axes, sizes), reverse=True):
        n = y.shape[axis]
        where = (np.arange(n * s, dtype=np.float32) + np.float32(0.5)) / np.float32(s) - np.float32(0.5)
        lo_f = np.floor(where)
        frac = (where - lo_f).astype(np.float32)
        lo = np.clip(lo_f.astype(np.int64), 0, n - 1)
        hi = np.minimum(lo_f.astype(np.int64) + 1, n - 1)
        take = lambda idx: apply("getitem", y, index=(slice(None),) * axis + (idx,))  # noqa: E731
        shape = [1] * y.ndim
        shape[axis] = n * s
        low = take(lo)
        y = low + (take(hi) - low) * frac.reshape(shape)
    return y if fmt == float32 else apply("cast", y, _out=fmt)


_ORDINALS = ("1st", "2nd", "3rd")


def _triples(value, name, what):
    """An int, 3 ints or 3 (before, after) pairs as the latter (Keras's errors otherwise)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if name == "cropping" and value < 0:
            raise ValueError(f"`cropping` cannot be negative. Received: cropping={value}.")
        return ((value, value),) * 3
    if hasattr(value, "__len__"):
        if len(value) != 3:
            raise ValueError(f"`{name}` should have 3 elements. Received: {value}.")
        return tuple(standardize_tuple(v, 2, f"{o} entry of {name}", allow_zero=True)
                     for v, o in zip(value, _ORDINALS))
    # (Keras's text, its "right_dim2" for the third pair included)
    raise ValueError(f"`{name}` should be either an int, a tuple of 3 ints (symmetric_dim1_{what}, "
                     f"symmetric_dim2_{what}, symmetric_dim3_{what}), or a tuple of 3 tuples of 2 ints "
                     f"((left_dim1_{what}, right_dim1_{what}), (left_dim2_{what}, right_dim2_{what}), "
                     f"(left_dim3_{what}, right_dim2_{what})). Received: "
                     f"{'padding=' if name == 'padding' else ''}{value}.")


class _Volume(Layer):
    """What the 3-D reshaping layers share: 5-D inputs, the data format, the spatial axes."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)
        self.built = True

    def _axes(self):
        return (1, 2, 3) if self.data_format == "channels_last" else (2, 3, 4)


class ZeroPadding3D(_Volume):
    """Zeros added around the three spatial axes: padding an int, 3 ints or 3 (before, after) pairs."""

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.padding = _triples(padding, "padding", "pad")

    def call(self, inputs):
        x = inputs
        for axis, (before, after) in zip(self._axes(), self.padding):
            x = _pad(x, axis, before, after)
        return x

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, (before, after) in zip(self._axes(), self.padding):
            if shape[axis] is not None:
                shape[axis] += before + after
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


class Cropping3D(_Volume):
    """Planes, rows and columns cut off the spatial edges: cropping an int, 3 ints or 3 (before, after) pairs."""

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.cropping = _triples(cropping, "cropping", "crop")

    def _symbolic_call(self, args, kwargs):
        """Keras's error for a cropping the symbolic input cannot take (its shape with the batch unknown)."""
        if args and getattr(args[0], "ndim", 0) == 5:
            self.compute_output_shape(tuple(args[0].shape))
        return super()._symbolic_call(args, kwargs)

    def call(self, inputs):
        self._cropped(tuple(inputs.shape), "inputs.shape")
        index = [slice(None)] * 5
        for axis, (before, after) in zip(self._axes(), self.cropping):
            index[axis] = slice(before, inputs.shape[axis] - after)
        return apply("getitem", inputs, index=tuple(index))

    def _cropped(self, given, what):
        shape = list(given)
        for axis, (before, after) in zip(self._axes(), self.cropping):
            if shape[axis] is not None:
                shape[axis] -= before + after
                if shape[axis] <= 0:
                    raise ValueError(f"Values in `cropping` argument should be smaller than the corresponding "
                                     f"spatial dimension of the input. Received: {what}={given}, "
                                     f"cropping={self.cropping}")
        return tuple(shape)

    def compute_output_shape(self, input_shape):
        return self._cropped(tuple(input_shape), "input_shape")

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping, "data_format": self.data_format}


class UpSampling3D(_Volume):
    """Planes, rows and columns each repeated size times."""

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(data_format, **kwargs)
        self.size = standardize_tuple(size, 3, "size")

    def call(self, inputs):
        return _repeat(inputs, self._axes(), self.size)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        for axis, s in zip(self._axes(), self.size):
            shape[axis] = None if shape[axis] is None else shape[axis] * s
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format}


__all__ += ["ZeroPadding3D", "Cropping3D", "UpSampling3D"]

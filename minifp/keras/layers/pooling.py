"""Keras 3's pooling: MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D, and the 1-D
MaxPooling1D and AveragePooling1D (the 2-D ops over a height of 1), GlobalAveragePooling1D, GlobalMaxPooling1D.

"same" padding is TensorFlow's (the odd one at the end); max pooling pads with -inf, average pooling divides
by the number of input values in each window (padding not counted), as TensorFlow's kernels do.
"""
from __future__ import annotations

import numpy as np

from ...engine import apply
from .. import ops
from .convolutional import output_size, same_padding, spatial_padding, standardize_data_format, standardize_padding, \
    standardize_tuple
from .layer import InputSpec, Layer

__all__ = ["MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "GlobalMaxPooling2D", "MaxPool2D",
           "AvgPool2D", "GlobalAvgPool2D", "GlobalMaxPool2D"]


class _Pooling2D(Layer):
    _mode = None

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = standardize_tuple(pool_size, 2, "pool_size")
        self.strides = standardize_tuple(pool_size if strides is None else strides, 2, "strides", allow_zero=True)
        self.padding = standardize_padding(padding)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=4)
        self.built = True

    def _symbolic_call(self, args, kwargs):
        """Keras's error for a window no output position fits, where the sizes are known (the eager probes that
        infer shapes put 1 and 2 for unknown ones)."""
        if args:
            self.compute_output_shape(args[0].shape)
        return super()._symbolic_call(args, kwargs)

    def call(self, inputs):
        standardize_tuple(self.strides, 2, "strides")      # (Keras's error for a zero stride)
        layout = "NHWC" if self.data_format == "channels_last" else "NCHW"
        spatial = inputs.shape[1:3] if layout == "NHWC" else inputs.shape[2:4]
        pads = spatial_padding(self.padding, spatial, self.pool_size, self.strides)
        if self._mode == "max":
            return apply("max_pool2d", inputs, kernel_size=self.pool_size, stride=self.strides, padding=pads,
                         layout=layout)
        return apply("avg_pool2d", inputs, kernel_size=self.pool_size, stride=self.strides, padding=pads,
                     count_include_pad=False, layout=layout)

    def compute_output_shape(self, input_shape):
        """The output's shape; Keras's ValueError for a zero stride or a window no output position fits."""
        standardize_tuple(self.strides, 2, "strides")
        last = self.data_format == "channels_last"
        spatial = input_shape[1:3] if last else input_shape[2:4]
        out = tuple(output_size(n, k, s, self.padding) for n, k, s in zip(spatial, self.pool_size, self.strides))
        if any(n is not None and n <= 0 for n in out):
            raise ValueError(f"Computed output size would be zero or negative. Received: `inputs.shape="
                             f"{np.array(input_shape)}`, `pool_size={np.array(self.pool_size)}`, `strides="
                             f"{self.strides}`, `padding={self.padding}`.")
        return (input_shape[0],) + out + (input_shape[3],) if last else tuple(input_shape[:2]) + out

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


class MaxPooling2D(_Pooling2D):
    """The maximum over each pool_size window (strides default to pool_size)."""

    _mode = "max"


class AveragePooling2D(_Pooling2D):
    """The mean over each pool_size window (strides default to pool_size), accumulated in float32."""

    _mode = "average"

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, name, **kwargs)     # (no default pool_size)


class _GlobalPooling2D(Layer):
    _op = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=4)
        self.built = True

    def call(self, inputs):
        axes = (1, 2) if self.data_format == "channels_last" else (2, 3)
        return apply(self._op, inputs, axis=axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_last":
            return (input_shape[0], 1, 1, input_shape[3]) if self.keepdims else (input_shape[0], input_shape[3])
        return (input_shape[0], input_shape[1], 1, 1) if self.keepdims else (input_shape[0], input_shape[1])

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPooling2D):
    """The mean over the spatial axes (accumulated in float32, one rounding)."""

    _op = "mean"


class GlobalMaxPooling2D(_GlobalPooling2D):
    """The maximum over the spatial axes."""

    _op = "max"


MaxPool2D, AvgPool2D, GlobalAvgPool2D, GlobalMaxPool2D = (MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D,
                                                          GlobalMaxPooling2D)


class _Pooling1D(Layer):
    """Pooling over the steps axis as the 2-D op over a height of 1."""

    _mode = "max"

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = standardize_tuple(pool_size, 1, "pool_size")
        self.strides = standardize_tuple(pool_size if strides is None else strides, 1, "strides", allow_zero=True)
        self.padding = standardize_padding(padding)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=3)
        self.built = True

    def call(self, inputs):
        last = self.data_format == "channels_last"
        n, steps = inputs.shape[0], inputs.shape[1 if last else 2]
        x = apply("reshape", inputs, shape=(n, 1) + tuple(inputs.shape[1:]) if last else
                  tuple(inputs.shape[:2]) + (1, steps))
        pads = spatial_padding(self.padding, (1, steps), (1,) + self.pool_size, (1,) + self.strides)
        window = dict(kernel_size=(1,) + self.pool_size, stride=(1,) + self.strides, padding=pads,
                      layout="NHWC" if last else "NCHW")
        y = (apply("max_pool2d", x, **window) if self._mode == "max" else
             apply("avg_pool2d", x, count_include_pad=False, **window))
        return apply("reshape", y, shape=(n,) + (tuple(y.shape[2:]) if last else (y.shape[1], y.shape[3])))

    def compute_output_shape(self, input_shape):
        last = self.data_format == "channels_last"
        out = output_size(input_shape[1 if last else 2], self.pool_size[0], self.strides[0], self.padding)
        return (input_shape[0], out, input_shape[2]) if last else (input_shape[0], input_shape[1], out)

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


class MaxPooling1D(_Pooling1D):
    """The maximum over each pool_size window of the steps axis (strides default to pool_size)."""


class AveragePooling1D(_Pooling1D):
    """The mean over each pool_size window of the steps axis (padding not counted), accumulated in float32."""

    _mode = "average"

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, name, **kwargs)     # (no default pool_size)


class _GlobalPooling1D(Layer):
    _op = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=3)
        self.built = True

    def call(self, inputs):
        return apply(self._op, inputs, axis=1 if self.data_format == "channels_last" else 2,
                     keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        axis = 1 if self.data_format == "channels_last" else 2
        if self.keepdims:
            return tuple(1 if i == axis else d for i, d in enumerate(input_shape))
        return tuple(d for i, d in enumerate(input_shape) if i != axis)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format, "keepdims": self.keepdims}


class GlobalAveragePooling1D(_GlobalPooling1D):
    """The mean over the steps axis (accumulated in float32, one rounding); with a mask, over the unmasked steps
    (their sum over their count, as Keras computes it), and the mask stops here."""

    _op = "mean"

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(data_format, keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        axis = 1 if self.data_format == "channels_last" else 2
        keep = ops.cast(ops.expand_dims(mask, 3 - axis), "bool")
        inputs = ops.where(keep, inputs, 0)
        return ops.divide(ops.sum(inputs, axis=axis, keepdims=self.keepdims),
                          ops.sum(ops.cast(keep, inputs.dtype), axis=axis, keepdims=self.keepdims))

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalMaxPooling1D(_GlobalPooling1D):
    """The maximum over the steps axis."""

    _op = "max"


MaxPool1D, AvgPool1D, GlobalAvgPool1D, GlobalMaxPool1D = (MaxPooling1D, AveragePooling1D, GlobalAveragePooling1D,
                                                          GlobalMaxPooling1D)
__all__ += ["MaxPooling1D", "AveragePooling1D", "AvgPool1D",
            "GlobalAveragePooling1D", "GlobalMaxPooling1D", "MaxPool1D", "GlobalAvgPool1D",
            "GlobalMaxPool1D"]


def _window_index(padded, pool_size, strides):
    """The index that gathers the pooling windows of a padded (N, D, H, W, C) array: (N, Do, Ho, Wo, kd, kh, kw, C)
    when applied."""
    def along(axis, values):
        return values.reshape([-1 if a == axis else 1 for a in range(6)])
    index = [slice(None)]
    for i, (n, k, s) in enumerate(zip(padded, pool_size, strides)):
        index.append(along(i, np.arange((n - k) // s + 1) * s) + along(3 + i, np.arange(k)))
    return tuple(index)


def _windows(x, pool_size, strides, pads, fill):
    """Channels-last x (N, D, H, W, C) padded with `fill`, its pooling windows gathered:
    (N, Do, Ho, Wo, kd * kh * kw, C) (values move, nothing is rounded)."""
    for axis, (before, after) in zip((1, 2, 3), pads):
        x = _pad_with(x, axis, before, after, fill)
    w = apply("getitem", x, index=_window_index(x.shape[1:4], pool_size, strides))
    return apply("reshape", w, shape=tuple(w.shape[:4]) + (int(np.prod(pool_size)), w.shape[7]))


def _pad_with(x, axis, before, after, fill):
    """x with `before` and `after` entries of `fill` along axis (one concatenate)."""
    if not before and not after:
        return x
    parts = []
    for n in (before, after):
        shape = list(x.shape)
        shape[axis] = n
        parts.append(ops.cast(ops.full(shape, fill), x.dtype) if n else None)
    return apply("concatenate", *[p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)


_TO_LAST, _TO_FIRST = (0, 2, 3, 4, 1), (0, 4, 1, 2, 3)


class _Pooling3D(Layer):
    """Pooling over (depth, rows, cols) windows, gathered and reduced at once."""

    _mode = "max"

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, name=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = standardize_tuple(pool_size, 3, "pool_size")
        self.strides = standardize_tuple(pool_size if strides is None else strides, 3, "strides", allow_zero=True)
        self.padding = standardize_padding(padding)
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=5)
        self.built = True

    def call(self, inputs):
        standardize_tuple(self.strides, 3, "strides")      # (Keras's error for a zero stride)
        last = self.data_format == "channels_last"
        x = inputs if last else apply("transpose", inputs, axes=_TO_LAST)
        pads = tuple(same_padding(n, k, s) if self.padding == "same" else (0, 0) for n, k, s in
                     zip(x.shape[1:4], self.pool_size, self.strides))
        if self._mode == "max":
            y = apply("max", _windows(x, self.pool_size, self.strides, pads, -np.inf), axis=4)
        else:
            y = self._average(x, pads)
        return y if last else apply("transpose", y, axes=_TO_FIRST)

    def _average(self, x, pads):
        """The windows' sums over their counts of input values (padding not counted), in float32, rounded once
        more into x's dtype."""
        windows = _windows(ops.cast(x, "float32"), self.pool_size, self.strides, pads, 0.0)
        inside = np.pad(np.ones(x.shape[1:4], np.float32), pads)[None, ..., None]
        counts = inside[_window_index(inside.shape[1:4], self.pool_size, self.strides)].sum(axis=(4, 5, 6))
        return ops.cast(ops.divide(apply("sum", windows, axis=4), counts), x.dtype)

    def compute_output_shape(self, input_shape):
        last = self.data_format == "channels_last"
        spatial = input_shape[1:4] if last else input_shape[2:5]
        out = tuple(output_size(n, k, s, self.padding) for n, k, s in zip(spatial, self.pool_size, self.strides))
        return (input_shape[0],) + out + (input_shape[4],) if last else tuple(input_shape[:2]) + out

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "padding": self.padding,
                "strides": self.strides, "data_format": self.data_format}


class MaxPooling3D(_Pooling3D):
    """The maximum over each pool_size window of (depth, rows, cols) (strides default to pool_size)."""


class AveragePooling3D(_Pooling3D):
    """The mean over each pool_size window of (depth, rows, cols) (padding not counted), summed in float32."""

    _mode = "average"

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, name=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, name, **kwargs)     # (no default pool_size)


class _GlobalPooling3D(_GlobalPooling2D):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(data_format, keepdims, **kwargs)
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        axes = (1, 2, 3) if self.data_format == "channels_last" else (2, 3, 4)
        return apply(self._op, inputs, axis=axes, keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        if self.data_format == "channels_last":
            return (input_shape[0], 1, 1, 1, input_shape[4]) if self.keepdims else (input_shape[0], input_shape[4])
        return (input_shape[0], input_shape[1], 1, 1, 1) if self.keepdims else (input_shape[0], input_shape[1])


class GlobalAveragePooling3D(_GlobalPooling3D):
    """The mean over the three spatial axes (accumulated in float32, one rounding)."""

    _op = "mean"


class GlobalMaxPooling3D(_GlobalPooling3D):
    """The maximum over the three spatial axes."""

    _op = "max"


MaxPool3D, AvgPool3D, GlobalAvgPool3D, GlobalMaxPool3D = (MaxPooling3D, AveragePooling3D, GlobalAveragePooling3D,
                                                          GlobalMaxPooling3D)
__all__ += ["MaxPooling3D", "AveragePooling3D", "GlobalAveragePooling3D", "GlobalMaxPooling3D", "MaxPool3D",
            "AvgPool3D", "GlobalAvgPool3D", "GlobalMaxPool3D"]

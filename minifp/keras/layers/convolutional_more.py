"""Keras 3's Conv3D, Conv3DTranspose and Conv1DTranspose, composed over the engine's conv2d.

Conv3D (kernel (kd, kh, kw, in/groups, filters)) gathers the kd depth taps of each output depth into the
channels and runs one conv2d over (rows, cols) with the output depths in the batch: every product of a window
joins one float32 sum before the one rounding, with the bias, as in Conv2D. Conv3DTranspose (kernel
(kd, kh, kw, filters, in)) is Conv2DTranspose's construction one axis up: the input spread out with stride - 1
zeros, padded, correlated with the kernel flipped in its three spatial axes. Conv1DTranspose (kernel
(k, filters, in)) is Conv2DTranspose over a height of 1. Inputs run channels-last; channels_first ones are
transposed there and back (values move, nothing is rounded).
"""
from __future__ import annotations

import numpy as np

from ...engine import apply
from .. import constraints, initializers, regularizers
from .convolutional import _BaseConv, output_size, same_padding, standardize_tuple
from .convolutional_extra import Conv2DTranspose, _check_filters, deconv_output_length, spread, transpose_pads
from .layer import InputSpec
from .reshaping import _pad

__all__ = ["Conv3D", "Convolution3D", "Conv3DTranspose", "Convolution3DTranspose", "Conv1DTranspose",
           "Convolution1DTranspose"]

_TO_LAST, _TO_FIRST = (0, 2, 3, 4, 1), (0, 4, 1, 2, 3)


def conv3d(x, kernel, bias, strides, pads, dilation, groups):
    """Channels-last x (N, D, H, W, C) correlated with kernel (kd, kh, kw, C/groups, F), pads
    ((front, back), (top, bottom), (left, right)): conv2d over the kd depth taps folded into the channels."""
    n, c = x.shape[0], x.shape[4]
    kd, kh, kw, per_group, f = kernel.shape
    (sd, sh, sw), (dd, dh, dw) = strides, dilation
    x = _pad(x, 1, *pads[0])
    depth = (x.shape[1] - dd * (kd - 1) - 1) // sd + 1
    taps = np.arange(depth)[:, None] * sd + np.arange(kd)[None, :] * dd        # (depth, kd) input depths
    g = apply("getitem", x, index=(slice(None), taps))                         # (N, depth, kd, H, W, C)
    h, w = g.shape[3], g.shape[4]
    # channels ordered (group, tap, channel of the group), as conv2d's groups split them
    g = apply("reshape", g, shape=(n, depth, kd, h, w, groups, per_group))
    g = apply("reshape", apply("transpose", g, axes=(0, 1, 3, 4, 5, 2, 6)), shape=(n * depth, h, w, kd * c))
    k = apply("reshape", apply("transpose", kernel, axes=(1, 2, 0, 3, 4)), shape=(kh, kw, kd * per_group, f))
    y = apply("conv2d", g, k, bias, stride=(sh, sw), padding=tuple(pads[1:]), dilation=(dh, dw), groups=groups,
              layout="NHWC")
    return apply("reshape", y, shape=(n, depth) + tuple(y.shape[1:]))


def check_output_padding(output_padding, strides):
    """Keras 3.15's error for an output padding not below its stride."""
    for i, (p, s) in enumerate(zip(output_padding or (), strides)):
        if p >= s:
            raise ValueError(f"`output_padding` must be strictly less than `strides` for all dimensions. At "
                             f"dimension {i}, `output_padding` is {p} but `strides` is {s}. Received: "
                             f"output_padding={output_padding}, strides={strides}")


def _regularized_config(layer):
    """The regularizer and constraint entries Keras 3 writes in a convolution's config."""
    return {"kernel_regularizer": regularizers.serialize(layer.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(layer.bias_regularizer),
            "activity_regularizer": regularizers.serialize(layer.activity_regularizer),
            "kernel_constraint": constraints.serialize(layer.kernel_constraint),
            "bias_constraint": constraints.serialize(layer.bias_constraint)}


class _Conv3DBase(_BaseConv):
    """What Conv3D and Conv3DTranspose share: 3-tuples of sizes, strides and dilations; 5-D inputs."""

    def __init__(self, filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                 kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer, activity_regularizer,
                 kernel_constraint, bias_constraint, **kwargs):
        super().__init__(1, 1, padding, data_format, 1, activation, use_bias,
                         activity_regularizer=activity_regularizer, **kwargs)
        _check_filters(filters)
        self.kernel_size = standardize_tuple(kernel_size, 3, "kernel_size")
        self.strides = standardize_tuple(strides, 3, "strides")
        self.dilation_rate = standardize_tuple(dilation_rate, 3, "dilation_rate")
        self.filters = int(filters)
        self.input_spec = InputSpec(min_ndim=5)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def _check_strides_and_dilation(self):
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")

    def _channels(self, input_shape):
        last = self.data_format == "channels_last"
        channels = input_shape[-1] if last else input_shape[1]
        self.input_spec = InputSpec(min_ndim=5, axes={-1 if last else 1: channels})
        return channels

    def _spatial(self, shape):
        return tuple(shape[1:4]) if self.data_format == "channels_last" else tuple(shape[2:5])

    def _shaped(self, input_shape, spatial):
        if self.data_format == "channels_last":
            return (input_shape[0],) + tuple(spatial) + (self.filters,)
        return (input_shape[0], self.filters) + tuple(spatial)

    def call(self, inputs):
        last = self.data_format == "channels_last"
        y = self._forward(inputs if last else apply("transpose", inputs, axes=_TO_LAST))
        return self._activate(y if last else apply("transpose", y, axes=_TO_FIRST))

    def get_config(self):
        return {**self._config(), "filters": self.filters,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer), **_regularized_config(self)}


class Conv3D(_Conv3DBase):
    """3-D convolution over (batch, depth, rows, cols, channels): activation(conv(inputs, kernel) + bias),
    kernel (kd, kh, kw, in/groups, filters)."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1, 1), groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)
        if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"The number of groups must be a positive integer. Received: groups={groups}.")
        if self.filters % groups:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. "
                             f"Received: groups={groups}, filters={filters}.")
        self.groups = groups
        self._check_strides_and_dilation()

    def build(self, input_shape):
        per_group = self._grouped_channels(self._channels(input_shape), input_shape)
        self.compute_output_shape(input_shape)
        self._add_kernel_and_bias(self.kernel_size + (per_group, self.filters))

    def _forward(self, x):
        pads = [same_padding(n, k, s, d) if self.padding == "same" else (0, 0) for n, k, s, d in
                zip(x.shape[1:4], self.kernel_size, self.strides, self.dilation_rate)]
        return conv3d(x, self.kernel, self.bias, self.strides, pads, self.dilation_rate, self.groups)

    def compute_output_shape(self, input_shape):
        out = [output_size(n, k, s, self.padding, d) for n, k, s, d in
               zip(self._spatial(input_shape), self.kernel_size, self.strides, self.dilation_rate)]
        if any(o is not None and o <= 0 for o in out):
            raise ValueError(f"Computed output size would be zero or negative. Received `inputs shape="
                             f"{tuple(input_shape)}`, `kernel shape={self.kernel_size}`, `dilation_rate="
                             f"{self.dilation_rate}`, `strides={self.strides}`, `padding={self.padding}`.")
        return self._shaped(input_shape, out)

    def get_config(self):
        return {**super().get_config(), "groups": self.groups}


class Conv3DTranspose(_Conv3DBase):
    """Transposed 3-D convolution (the gradient of Conv3D with respect to its input), kernel
    (kd, kh, kw, filters, in); output_padding adds planes, rows and columns at the end."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 output_padding=None, dilation_rate=(1, 1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
                         activity_regularizer, kernel_constraint, bias_constraint, **kwargs)
        self.output_padding = None if output_padding is None else standardize_tuple(
            output_padding, 3, "output_padding", allow_zero=True)
        check_output_padding(self.output_padding, self.strides)
        self._check_strides_and_dilation()

    def build(self, input_shape):
        self._add_kernel_and_bias(self.kernel_size + (self.filters, self._channels(input_shape)))

    def _out_spatial(self, spatial):
        pads = self.output_padding or (None,) * 3
        return tuple(deconv_output_length(n, k, self.padding, p, s, d) for n, k, p, s, d in
                     zip(spatial, self.kernel_size, pads, self.strides, self.dilation_rate))

    def _forward(self, x):
        spatial = tuple(x.shape[1:4])
        pads = transpose_pads(spatial, self._out_spatial(spatial), self.kernel_size, self.strides,
                              self.dilation_rate, self.padding)
        w = apply("getitem", self.kernel, index=(slice(None, None, -1),) * 3)
        w = apply("transpose", w, axes=(0, 1, 2, 4, 3))
        return conv3d(spread(x, (1, 2, 3), self.strides), w, self.bias, (1, 1, 1), pads, self.dilation_rate, 1)

    def compute_output_shape(self, input_shape):
        return self._shaped(input_shape, self._out_spatial(self._spatial(input_shape)))

    def get_config(self):
        return {**super().get_config(), "output_padding": self.output_padding}


class Conv1DTranspose(Conv2DTranspose):
    """Transposed 1-D convolution over (batch, steps, channels), kernel (k, filters, in): Conv2DTranspose over a
    height of 1."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, 1, 1, padding, None, data_format, 1, activation, use_bias, kernel_initializer,
                         bias_initializer, activity_regularizer=activity_regularizer, **kwargs)
        self.kernel_size = standardize_tuple(kernel_size, 1, "kernel_size")
        self.strides = standardize_tuple(strides, 1, "strides")
        self.dilation_rate = standardize_tuple(dilation_rate, 1, "dilation_rate")
        self.output_padding = None if output_padding is None else standardize_tuple(
            output_padding, 1, "output_padding", allow_zero=True)
        check_output_padding(self.output_padding, self.strides)
        if self.strides[0] > 1 and self.dilation_rate[0] > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.input_spec = InputSpec(min_ndim=3)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def build(self, input_shape):
        last = self.data_format == "channels_last"
        channels = input_shape[-1] if last else input_shape[1]
        self.input_spec = InputSpec(min_ndim=3, axes={-1 if last else 1: channels})
        self._add_kernel_and_bias(self.kernel_size + (self.filters, channels))

    def _as_2d(self):
        """This layer's sizes as Conv2DTranspose's, a height of 1 in front."""
        pads = None if self.output_padding is None else (0,) + self.output_padding
        return (1,) + self.kernel_size, (1,) + self.strides, (1,) + self.dilation_rate, pads

    def _out_spatial(self, spatial):
        kernel, strides, dilation, pads = self._as_2d()
        pads = pads or (None, None)
        return tuple(deconv_output_length(n, k, self.padding, p, s, d) for n, k, p, s, d in
                     zip(spatial, kernel, pads, strides, dilation))

    def call(self, inputs):
        last = self.data_format == "channels_last"
        n, steps, c = inputs.shape[0], inputs.shape[1 if last else 2], inputs.shape[2 if last else 1]
        x = apply("reshape", inputs, shape=(n, 1, steps, c) if last else (n, c, 1, steps))
        kernel, strides, dilation, _ = self._as_2d()
        out = self._out_spatial((1, steps))
        pads = transpose_pads((1, steps), out, kernel, strides, dilation, self.padding)
        w = apply("getitem", self.kernel, index=(slice(None, None, -1),))        # (k, filters, in), flipped
        w = apply("reshape", apply("transpose", w, axes=(0, 2, 1)), shape=(1,) + self.kernel_size + (c, self.filters))
        x = spread(x, (1, 2) if last else (2, 3), strides)
        if last:
            y = apply("conv2d", x, w, self.bias, padding=pads, dilation=dilation, layout="NHWC")
            y = apply("reshape", y, shape=(n, y.shape[2], self.filters))
        else:
            y = apply("conv2d", x, apply("transpose", w, axes=(3, 2, 0, 1)), self.bias, padding=pads,
                      dilation=dilation)
            y = apply("reshape", y, shape=(n, self.filters, y.shape[3]))
        return self._activate(y)

    def compute_output_shape(self, input_shape):
        last = self.data_format == "channels_last"
        (steps,) = self._out_spatial((1, input_shape[1 if last else 2]))[1:]
        return (input_shape[0], steps, self.filters) if last else (input_shape[0], self.filters, steps)

    def get_config(self):
        return {**super().get_config(), **_regularized_config(self)}


Convolution3D, Convolution3DTranspose, Convolution1DTranspose = Conv3D, Conv3DTranspose, Conv1DTranspose

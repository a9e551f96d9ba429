"""Keras 3's Conv1D and Conv2DTranspose, composed over the engine's conv2d.

Conv1D is a conv2d over a height of 1 (kernel (k, in/groups, filters) read as (1, k, in/groups, filters));
"causal" pads dilation * (k - 1) zeros in front. Conv2DTranspose (kernel (kh, kw, filters, in)) is the
gradient of a convolution with respect to its input, written as a convolution: the input spread out with
stride - 1 zeros between its values, padded, correlated with the kernel flipped in both spatial axes. The output
size is Keras's (deconv_output_length) and the padding TensorFlow's for that size (conv2d_transpose), so the
values are TensorFlow's. As in Conv2D, the bias joins the float32 sum before the one rounding.
"""
from __future__ import annotations

import numbers

from ...engine import apply, array_module, made_like, storage
from .. import initializers
from .convolutional import _BaseConv, output_size, same_padding, standardize_tuple
from .layer import InputSpec

__all__ = ["Conv1D", "Convolution1D", "Conv2DTranspose", "Convolution2DTranspose"]


def _check_filters(filters):
    if filters is not None and (isinstance(filters, bool) or not isinstance(filters, numbers.Integral)
                                or filters <= 0):
        raise ValueError(f"Invalid value for argument `filters`. Expected a strictly positive value. "
                         f"Received filters={filters}.")


class Conv1D(_BaseConv):
    """1-D convolution over (batch, steps, channels): activation(conv(inputs, kernel) + bias), kernel
    (kernel_size, in/groups, filters); padding "valid", "same" or "causal"."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        causal = isinstance(padding, str) and padding.lower() == "causal"
        super().__init__(1, 1, "valid" if causal else padding, data_format, 1, activation, use_bias,
                         activity_regularizer=activity_regularizer, **kwargs)
        _check_filters(filters)
        if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups <= 0:
            raise ValueError(f"The number of groups must be a positive integer. Received: groups={groups}.")
        if filters % groups:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. "
                             f"Received: groups={groups}, filters={filters}.")
        self.kernel_size = standardize_tuple(kernel_size, 1, "kernel_size")
        self.strides = standardize_tuple(strides, 1, "strides")
        self.dilation_rate = standardize_tuple(dilation_rate, 1, "dilation_rate")
        if self.strides[0] > 1 and self.dilation_rate[0] > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.padding = "causal" if causal else self.padding
        self.filters, self.groups = int(filters), int(groups)
        self.input_spec = InputSpec(min_ndim=3)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape):
        last = self.data_format == "channels_last"
        channels = input_shape[-1] if last else input_shape[1]
        per_group = self._grouped_channels(channels, input_shape)
        self.input_spec = InputSpec(min_ndim=3, axes={-1 if last else 1: channels})
        self.compute_output_shape(input_shape)
        self._add_kernel_and_bias(self.kernel_size + (per_group, self.filters))

    def _pads(self, steps):
        (k,), (s,), (d,) = self.kernel_size, self.strides, self.dilation_rate
        if self.padding == "causal":
            return d * (k - 1), 0
        return same_padding(steps, k, s, d) if self.padding == "same" else (0, 0)

    def call(self, inputs):
        last = self.data_format == "channels_last"
        n, steps = inputs.shape[0], inputs.shape[1 if last else 2]
        k, cin, f = self.kernel.shape
        w = apply("reshape", self.kernel, shape=(1, k, cin, f))
        common = dict(stride=(1,) + self.strides, padding=((0, 0), self._pads(steps)),
                      dilation=(1,) + self.dilation_rate, groups=self.groups)
        if last:
            x = apply("reshape", inputs, shape=(n, 1, steps, inputs.shape[2]))
            y = apply("conv2d", x, w, self.bias, layout="NHWC", **common)
            y = apply("reshape", y, shape=(n, y.shape[2], f))
        else:
            x = apply("reshape", inputs, shape=(n, inputs.shape[1], 1, steps))
            y = apply("conv2d", x, apply("transpose", w, axes=(3, 2, 0, 1)), self.bias, **common)
            y = apply("reshape", y, shape=(n, f, y.shape[3]))
        return self._activate(y)

    def compute_output_shape(self, input_shape):
        last = self.data_format == "channels_last"
        steps = input_shape[1] if last else input_shape[2]
        padding = "same" if self.padding == "causal" else self.padding
        out = output_size(steps, self.kernel_size[0], self.strides[0], padding, self.dilation_rate[0])
        if out is not None and out <= 0:
            raise ValueError(f"Computed output size would be zero or negative. Received `inputs shape="
                             f"{tuple(input_shape)}`, `kernel shape={self.kernel_size}`, `dilation_rate="
                             f"{self.dilation_rate}`, `strides={self.strides}`, `padding={self.padding}`.")
        return (input_shape[0], out, self.filters) if last else (input_shape[0], self.filters, out)

    def get_config(self):
        return {**self._config(), "filters": self.filters, "groups": self.groups,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


def deconv_output_length(size, kernel, padding, output_padding, stride, dilation):
    """One spatial output size of a transposed convolution (Keras's deconv_output_length)."""
    if size is None:
        return None
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if output_padding is None:
        return size * stride + max(kernel - stride, 0) if padding == "valid" else size * stride
    pad = kernel // 2 if padding == "same" else 0
    return (size - 1) * stride + kernel - 2 * pad + output_padding


def spread(x, axes, strides):
    """x with stride - 1 zeros between its values along each of axes (a transposed convolution's input)."""
    if max(strides) == 1:
        return x
    shape, index = list(x.shape), [slice(None)] * x.ndim
    for a, s in zip(axes, strides):
        shape[a], index[a] = (x.shape[a] - 1) * s + 1, slice(None, None, s)
    zeros = made_like(x, array_module(storage(x)).zeros(shape, storage(x).dtype), x.fmt)
    return apply("setitem", zeros, x, index=tuple(index))


def transpose_pads(spatial, out, kernel_size, strides, dilation, padding):
    """((before, after), ...) for the spread input's correlation with the flipped kernel to give `out` sizes,
    placed as TensorFlow's conv_transpose places them."""
    pads = []
    for n, o, k, s, d in zip(spatial, out, kernel_size, strides, dilation):
        span = d * (k - 1)
        before = max((n - 1) * s + span + 1 - o, 0) // 2 if padding == "same" else 0
        pads.append((span - before, o + before - (n - 1) * s - 1))
    return tuple(pads)


class Conv2DTranspose(_BaseConv):
    """Transposed 2-D convolution (the gradient of Conv2D with respect to its input), kernel
    (kh, kw, filters, in); output_padding adds rows and columns at the end."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros", kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         activity_regularizer=activity_regularizer, **kwargs)
        _check_filters(filters)
        self.filters = int(filters)
        self.output_padding = None if output_padding is None else standardize_tuple(
            output_padding, 2, "output_padding", allow_zero=True)
        for p, s in zip(self.output_padding or (), self.strides):
            if p >= s:
                raise ValueError(f"Strides must be greater than output padding. Received strides={self.strides}, "
                                 f"output_padding={self.output_padding}.")
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape):
        self._add_kernel_and_bias(self.kernel_size + (self.filters, self._input_channels(input_shape)))

    def _out_spatial(self, spatial):
        pads = self.output_padding or (None, None)
        return tuple(deconv_output_length(n, k, self.padding, p, s, d) for n, k, p, s, d in
                     zip(spatial, self.kernel_size, pads, self.strides, self.dilation_rate))

    def call(self, inputs):
        last = self.data_format == "channels_last"
        axes = (1, 2) if last else (2, 3)
        spatial = tuple(inputs.shape[a] for a in axes)
        out = self._out_spatial(spatial)
        x = spread(inputs, axes, self.strides)
        pads = transpose_pads(spatial, out, self.kernel_size, self.strides, self.dilation_rate, self.padding)
        w = apply("getitem", self.kernel, index=(slice(None, None, -1), slice(None, None, -1)))
        if last:
            y = apply("conv2d", x, apply("transpose", w, axes=(0, 1, 3, 2)), self.bias, padding=pads,
                      dilation=self.dilation_rate, layout="NHWC")
        else:
            y = apply("conv2d", x, apply("transpose", w, axes=(2, 3, 0, 1)), self.bias, padding=pads,
                      dilation=self.dilation_rate)
        return self._activate(y)

    def compute_output_shape(self, input_shape):
        last = self.data_format == "channels_last"
        out = self._out_spatial(tuple(input_shape[1:3]) if last else tuple(input_shape[2:4]))
        return (input_shape[0],) + out + (self.filters,) if last else (input_shape[0], self.filters) + out

    def get_config(self):
        return {**self._config(), "filters": self.filters, "output_padding": self.output_padding,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


Convolution1D, Convolution2DTranspose = Conv1D, Conv2DTranspose

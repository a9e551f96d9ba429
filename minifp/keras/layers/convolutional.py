"""Keras 3's 2-D convolutions: Conv2D, DepthwiseConv2D, SeparableConv2D, over the engine's conv2d.

Kernels keep Keras's layouts ((kh, kw, in/groups, filters); depthwise (kh, kw, in, depth_multiplier));
channels_last inputs run through the engine's NHWC layout, so nothing is transposed. "same" padding is
TensorFlow's: the total padding max((out - 1) * stride + dilation * (k - 1) + 1 - size, 0) with the odd
one at the end (bottom, right). The bias is added to the float32 sum before the one rounding, as TensorFlow's
fused Conv2D + BiasAdd (cuDNN's conv-bias epilogue) does inside a compiled train step.
"""
from __future__ import annotations

import math
import numbers

from ...engine import apply
from .. import activations, backend, initializers
from .layer import InputSpec, Layer

__all__ = ["Conv2D", "DepthwiseConv2D", "SeparableConv2D", "Convolution2D"]


def standardize_tuple(value, n, name, allow_zero=False):
    """An int or n ints as a tuple of n ints (Keras's argument_validation.standardize_tuple, its errors)."""
    error = f"The `{name}` argument must be a tuple of {n} integers. Received {name}={value}"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError(error) from None
        if len(values) != n:
            raise ValueError(error)
        for v in values:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(f"{error}including element {v} of type {type(v)}")
        values = tuple(int(v) for v in values)
    bad = {v for v in values if (v < 0 if allow_zero else v <= 0)}
    if bad:
        need = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{error}, including values {bad} that do not satisfy `value {need}`")
    return values


def standardize_padding(value):
    """'valid' or 'same' (any case), Keras's error otherwise."""
    padding = value.lower() if isinstance(value, str) else value
    if padding not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be a list/tuple or one of {{'valid', 'same'}}. "
                         f"Received: {value}")
    return padding


def standardize_data_format(data_format):
    """None -> keras.backend.image_data_format(); else 'channels_last' or 'channels_first'."""
    if data_format is None:
        return backend.image_data_format()
    fmt = str(data_format).lower()
    if fmt not in ("channels_first", "channels_last"):
        raise ValueError("The `data_format` argument must be one of {'channels_first', 'channels_last'}. "
                         f"Received: data_format={data_format}")
    return fmt


def same_padding(size, kernel, stride, dilation=1):
    """TensorFlow's 'SAME' padding along one axis: (before, after), the odd one after."""
    total = max((math.ceil(size / stride) - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def spatial_padding(padding, spatial, kernel, strides, dilation=(1, 1)):
    """((top, bottom), (left, right)) for 'valid' or 'same' at these spatial sizes."""
    if padding == "valid":
        return (0, 0), (0, 0)
    return tuple(same_padding(n, k, s, d) for n, k, s, d in zip(spatial, kernel, strides, dilation))


def output_size(size, kernel, stride, padding, dilation=1):
    """One spatial output size (Keras's compute_conv_output_shape)."""
    if size is None:
        return None
    if padding == "same":
        return (size - 1) // stride + 1
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _spatial_of(shape, data_format):
    return tuple(shape[1:3]) if data_format == "channels_last" else tuple(shape[2:4])


def _channels_of(shape, data_format):
    return shape[-1] if data_format == "channels_last" else shape[1]


def _conv(x, kernel, bias, strides, padding, dilation, groups, data_format):
    """The engine's conv2d for a Keras (kh, kw, in/groups, out) kernel, in either data format."""
    pads = spatial_padding(padding, _spatial_of(x.shape, data_format), kernel.shape[:2], strides, dilation)
    if data_format == "channels_last":
        return apply("conv2d", x, kernel, bias, stride=strides, padding=pads, dilation=dilation, groups=groups,
                     layout="NHWC")
    w = apply("transpose", kernel, axes=(3, 2, 0, 1))       # (out, in/groups, kh, kw): a view
    return apply("conv2d", x, w, bias, stride=strides, padding=pads, dilation=dilation, groups=groups)


def _output_shape(input_shape, filters, kernel, strides, padding, dilation, data_format):
    spatial = _spatial_of(input_shape, data_format)
    out = tuple(output_size(n, k, s, padding, d) for n, k, s, d in zip(spatial, kernel, strides, dilation))
    if padding == "valid":
        for o in out:
            if o is not None and o <= 0:
                raise ValueError(f"Computed output size would be zero or negative. Received `inputs "
                                 f"shape={tuple(input_shape)}`, `kernel shape={kernel}`, `dilation_rate="
                                 f"{dilation}`, `strides={strides}`, `padding={padding}`.")
    if data_format == "channels_last":
        return (input_shape[0],) + out + (filters,)
    return (input_shape[0], filters) + out


class _BaseConv(Layer):
    """What the three convolutions share: argument checks, the activation, the output shape."""

    def __init__(self, kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias, **kwargs):
        super().__init__(**kwargs)
        self.kernel_size = standardize_tuple(kernel_size, 2, "kernel_size")
        self.strides = standardize_tuple(strides, 2, "strides")
        self.dilation_rate = standardize_tuple(dilation_rate, 2, "dilation_rate")
        self.padding = standardize_padding(padding)
        self.data_format = standardize_data_format(data_format)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.input_spec = InputSpec(min_ndim=4)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={self.strides} and dilation_rate={self.dilation_rate}")

    def _activate(self, x):
        return x if self.activation is activations.linear else self.activation(x)

    def _input_channels(self, input_shape):
        channels = _channels_of(input_shape, self.data_format)
        axis = -1 if self.data_format == "channels_last" else 1
        self.input_spec = InputSpec(min_ndim=4, axes={axis: channels})
        return channels

    def _grouped_channels(self, channels, input_shape):
        """The input's channels per group, after Keras's check that the groups divide them."""
        if channels % self.groups:
            raise ValueError(f"The number of input channels must be evenly divisible by the number of groups. "
                             f"Received groups={self.groups}, but the input has {channels} channels (full input "
                             f"shape is {tuple(input_shape)}).")
        return channels // self.groups

    def _add_kernel_and_bias(self, kernel_shape):
        """The layer's kernel (its initializer, regularizer and constraint) and a bias of `filters`, if used."""
        self.kernel = self.add_weight(name="kernel", shape=kernel_shape, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        self.bias = self.add_weight(name="bias", shape=(self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.built = True

    def _config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias}


class Conv2D(_BaseConv):
    """2-D convolution: activation(conv(inputs, kernel) + bias), kernel (kh, kw, in/groups, filters)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         activity_regularizer=activity_regularizer, **kwargs)
        if filters is not None and (isinstance(filters, bool) or not isinstance(filters, numbers.Integral)
                                    or filters <= 0):
            raise ValueError(f"Invalid value for argument `filters`. Expected a strictly positive value. "
                             f"Received filters={filters}.")
        if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups <= 0:
            raise ValueError(f"The number of groups must be a positive integer. Received: groups={groups}.")
        if filters % groups:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. "
                             f"Received: groups={groups}, filters={filters}.")
        self.filters, self.groups = int(filters), int(groups)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape):
        per_group = self._grouped_channels(self._input_channels(input_shape), input_shape)
        self.compute_output_shape(input_shape)
        self._add_kernel_and_bias(self.kernel_size + (per_group, self.filters))

    def call(self, inputs):
        return self._activate(_conv(inputs, self.kernel, self.bias, self.strides, self.padding, self.dilation_rate,
                                    self.groups, self.data_format))

    def compute_output_shape(self, input_shape):
        return _output_shape(input_shape, self.filters, self.kernel_size, self.strides, self.padding,
                             self.dilation_rate, self.data_format)

    def get_config(self):
        return {**self._config(), "filters": self.filters, "groups": self.groups,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


Convolution2D = Conv2D


def _depthwise(x, kernel, strides, padding, dilation, data_format, bias=None):
    """Each input channel convolved with its own depth_multiplier filters: a grouped conv (groups = channels),
    the (kh, kw, in, m) kernel read as (kh, kw, 1, in * m) (output channel c * m + j, TensorFlow's order)."""
    kh, kw, channels, mult = kernel.shape
    w = apply("reshape", kernel, shape=(kh, kw, 1, channels * mult))
    return _conv(x, w, bias, strides, padding, dilation, channels, data_format)


class DepthwiseConv2D(_BaseConv):
    """Depthwise 2-D convolution: kernel (kh, kw, in, depth_multiplier), in * depth_multiplier outputs."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         activity_regularizer=activity_regularizer, **kwargs)
        if depth_multiplier is not None and depth_multiplier <= 0:
            raise ValueError(f"Invalid value for argument `depth_multiplier`. Expected a strictly positive value. "
                             f"Received depth_multiplier={depth_multiplier}.")
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_regularizer, self.bias_regularizer = depthwise_regularizer, bias_regularizer
        self.depthwise_constraint, self.bias_constraint = depthwise_constraint, bias_constraint

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self.compute_output_shape(input_shape)
        # Keras 3 names this variable "kernel" (tf-keras: "depthwise_kernel", kept as an alias below).
        self.kernel = self.add_weight(name="kernel", shape=self.kernel_size + (channels, self.depth_multiplier),
                                      initializer=self.depthwise_initializer,
                                      regularizer=self.depthwise_regularizer, constraint=self.depthwise_constraint)
        self.bias = self.add_weight(name="bias", shape=(channels * self.depth_multiplier,),
                                    initializer=self.bias_initializer, regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.built = True

    depthwise_kernel = property(lambda self: self.kernel, doc="tf-keras's name for the kernel.")

    def call(self, inputs):
        return self._activate(_depthwise(inputs, self.kernel, self.strides, self.padding, self.dilation_rate,
                                         self.data_format, self.bias))

    def compute_output_shape(self, input_shape):
        channels = _channels_of(input_shape, self.data_format)
        return _output_shape(input_shape, None if channels is None else channels * self.depth_multiplier,
                             self.kernel_size, self.strides, self.padding, self.dilation_rate, self.data_format)

    def get_config(self):
        return {**self._config(), "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class SeparableConv2D(_BaseConv):
    """A depthwise convolution then a 1x1 pointwise one: depthwise_kernel (kh, kw, in, depth_multiplier),
    pointwise_kernel (1, 1, in * depth_multiplier, filters), bias (filters,)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation, use_bias,
                         activity_regularizer=activity_regularizer, **kwargs)
        if filters is not None and (isinstance(filters, bool) or not isinstance(filters, numbers.Integral)
                                    or filters <= 0):
            raise ValueError(f"Invalid value for argument `filters`. Expected a strictly positive value. "
                             f"Received filters={filters}.")
        if depth_multiplier is not None and depth_multiplier <= 0:
            raise ValueError(f"Invalid value for argument `depth_multiplier`. Expected a strictly positive value. "
                             f"Received depth_multiplier={depth_multiplier}.")
        self.filters, self.depth_multiplier = int(filters), int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_regularizer, self.pointwise_regularizer = depthwise_regularizer, pointwise_regularizer
        self.bias_regularizer = bias_regularizer
        self.depthwise_constraint, self.pointwise_constraint = depthwise_constraint, pointwise_constraint
        self.bias_constraint = bias_constraint

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self.compute_output_shape(input_shape)
        self.depthwise_kernel = self.add_weight(
            name="depthwise_kernel", shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            name="pointwise_kernel", shape=(1, 1, channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self.bias = self.add_weight(name="bias", shape=(self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.built = True

    def call(self, inputs):
        x = _depthwise(inputs, self.depthwise_kernel, self.strides, self.padding, self.dilation_rate,
                       self.data_format)
        x = _conv(x, self.pointwise_kernel, self.bias, (1, 1), "valid", (1, 1), 1, self.data_format)
        return self._activate(x)

    def compute_output_shape(self, input_shape):
        return _output_shape(input_shape, self.filters, self.kernel_size, self.strides, self.padding,
                             self.dilation_rate, self.data_format)

    def get_config(self):
        return {**self._config(), "filters": self.filters, "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}

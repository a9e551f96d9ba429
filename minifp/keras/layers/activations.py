"""Keras 3's activation layers: LeakyReLU, PReLU, ELU, ReLU, Softmax, each through the engine's ops.

Under a mixed policy they compute in the compute dtype (their inputs autocast); PReLU's alpha stays float32 and
is cast for the call, as Keras's autocast variables are.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...engine import apply
from .. import activations, initializers
from .._errors import check_axis
from .core import ReLU
from .layer import InputSpec, Layer

__all__ = ["LeakyReLU", "PReLU", "ELU", "ReLU", "Softmax"]


class LeakyReLU(Layer):
    """x where x > 0, else negative_slope * x (Keras 3's default slope 0.3; `alpha` is the old name)."""

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
            warnings.warn("Argument `alpha` is deprecated. Use `negative_slope` instead.", UserWarning, stacklevel=2)
        super().__init__(**kwargs)
        self.supports_masking = True        # a mask passes through, as Keras's activation layers let it
        if negative_slope is None or negative_slope < 0:
            raise ValueError(f"The negative_slope value of a Leaky ReLU layer cannot be None or negative value. "
                             f"Expected a float. Received: negative_slope={negative_slope}")
        self.negative_slope = negative_slope
        self.built = True

    def call(self, inputs):
        return activations.leaky_relu(inputs, negative_slope=self.negative_slope)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class PReLU(Layer):
    """relu(x) - alpha * relu(-x) with a learned alpha of the input's shape less the batch (1 on shared_axes)."""

    def __init__(self, alpha_initializer="Zeros", alpha_regularizer=None, alpha_constraint=None, shared_axes=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True        # a mask passes through, as Keras's activation layers let it
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer, self.alpha_constraint = alpha_regularizer, alpha_constraint
        if shared_axes is None:
            self.shared_axes = None
        else:
            self.shared_axes = list(shared_axes) if isinstance(shared_axes, (list, tuple)) else [shared_axes]

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or ():
            shape[axis - 1] = 1
        self.alpha = self.add_weight(name="alpha", shape=tuple(shape), initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer, constraint=self.alpha_constraint)
        axes = {i: input_shape[i] for i in range(1, len(input_shape)) if i not in (self.shared_axes or ())}
        self.input_spec = InputSpec(ndim=len(input_shape), axes=axes)
        self.built = True

    def call(self, inputs):
        # Keras's order of operations (each a rounding in half precision): pos + (-alpha * relu(-x)).
        return activations.relu(inputs) + (-self.alpha) * activations.relu(-inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": self.alpha_regularizer, "alpha_constraint": self.alpha_constraint,
                "shared_axes": self.shared_axes}


class ELU(Layer):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True        # a mask passes through, as Keras's activation layers let it
        self.alpha = alpha
        self.built = True

    def call(self, inputs):
        return activations.elu(inputs, alpha=self.alpha)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


def _large_negative(dtype):
    """What Keras puts at masked positions before the softmax (-3e4 fits float16; -1e9 otherwise)."""
    return -3e4 if str(dtype) == "float16" else -1e9


class Softmax(Layer):
    """softmax along `axis` (an int or a list of axes); where a mask is False the output is 0."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True        # a mask passes through, as Keras's activation layers let it
        self.axis = axis
        self.built = True

    def call(self, inputs, mask=None):
        ndim = inputs.ndim
        axes = self.axis if isinstance(self.axis, (list, tuple)) else [self.axis]
        for a in axes:
            check_axis(a, ndim)
        if mask is not None:
            mask = np.asarray(mask.numpy() if hasattr(mask, "numpy") else mask)
            if mask.dtype != bool:
                mask = mask > 0.5
            if mask.ndim > ndim or any(m != 1 and m != i for m, i in zip(mask.shape[::-1], inputs.shape[::-1])):
                raise ValueError(f"The `mask` must be broadcastable to `inputs`. Received: inputs.shape="
                                 f"{tuple(inputs.shape)}, mask.shape={mask.shape}")
            mask = np.broadcast_to(mask, inputs.shape)
            inputs = apply("where", mask, inputs, np.float32(_large_negative(inputs.dtype)))
        if len(axes) > 1:
            axis = tuple(a % ndim for a in axes)
            outputs = apply("exp", inputs - apply("logsumexp", inputs, axis=axis, keepdims=True))
        else:
            outputs = activations.softmax(inputs, axis=axes[0])
        if mask is not None:
            outputs = apply("where", mask, outputs, np.float32(0.0))
        return outputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}

"""Keras 3's SpatialDropout1D/2D/3D (Dropout that drops whole channels: one draw per sample and channel) and
ActivityRegularization (the identity that adds l1 * sum|x| + l2 * sum(x**2), over the batch size, to the
layer's losses). Both are the identity at inference."""
from __future__ import annotations

from .. import random, regularizers
from .convolutional import standardize_data_format
from .core import Dropout
from .layer import InputSpec, Layer

__all__ = ["SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization"]


class _SpatialDropout(Dropout):
    """Dropout with a noise shape of 1 along every axis but the batch's and the channels'."""

    _ndim = None

    def __init__(self, rate, data_format=None, seed=None, name=None, dtype=None):
        super().__init__(rate, seed=seed, name=name, dtype=dtype)
        self.data_format = standardize_data_format(data_format)
        if self.rate > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.input_spec = InputSpec(ndim=self._ndim)

    def _noise_shape(self, inputs):
        shape = [1] * inputs.ndim
        channels = -1 if self.data_format == "channels_last" else 1
        shape[0], shape[channels] = inputs.shape[0], inputs.shape[channels]
        return tuple(shape)

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            return random.dropout(inputs, self.rate, noise_shape=self._noise_shape(inputs), seed=self.seed_generator)
        return inputs

    def get_config(self):
        # (Keras writes these four, not the base layer's config)
        return {"rate": self.rate, "seed": self.seed, "name": self.name, "dtype": self.dtype}


class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of (batch, steps, channels) inputs while training."""

    _ndim = 3

    def __init__(self, rate, seed=None, name=None, dtype=None):
        super().__init__(rate, None, seed=seed, name=name, dtype=dtype)
        self.data_format = "channels_last"      # (Keras's 1-D form has no data_format)


class SpatialDropout2D(_SpatialDropout):
    """Drops whole feature maps of 4-D inputs while training."""

    _ndim = 4

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


class SpatialDropout3D(SpatialDropout2D):
    """Drops whole feature volumes of 5-D inputs while training."""

    _ndim = 5


class ActivityRegularization(Layer):
    """The identity; adds l1 * sum(|x|) + l2 * sum(x**2), over the batch size, to the layer's losses."""

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1, self.l2 = l1, l2
        self.built = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}

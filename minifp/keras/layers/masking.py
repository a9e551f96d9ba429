"""Keras 3's Masking layer: timesteps whose features all equal `mask_value` are masked (and zeroed)."""
from __future__ import annotations

from ...engine import apply, array_module, storage
from .._tensor import convert_to_tensor
from .layer import Layer, _with_mask

__all__ = ["Masking"]


def _keep(inputs, mask_value, keepdims):
    """Where any feature differs from mask_value: the timesteps that stay (a bool tensor)."""
    inputs = convert_to_tensor(inputs)
    values = inputs.float32() if inputs.fmt is not None else storage(inputs)
    xp = array_module(values)
    return convert_to_tensor(xp.any(values != mask_value, axis=-1, keepdims=keepdims))


class Masking(Layer):
    """Masks the timesteps (axis -2) whose features (axis -1) all equal mask_value, and sets them to 0."""

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True
        self.built = True

    def compute_mask(self, inputs, mask=None):
        return _keep(inputs, self.mask_value, keepdims=False)

    def call(self, inputs):
        keep = _keep(inputs, self.mask_value, keepdims=True)
        out = apply("where", keep, inputs, 0.0)
        return _with_mask(out, apply("reshape", keep, shape=tuple(keep.shape[:-1])))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}

"""tf.keras.layers: minifp.keras's layers, with tf.keras's BatchNormalization (its fused kernel's rules) and
InputLayer / Input (named input_1, input_2 ... as tf.keras names them) and LeakyReLU (its `alpha`)."""
from __future__ import annotations

import numpy as np

from ...keras import backend
from ...keras import layers as _layers
from ...keras.layers import *  # noqa: F401,F403  (every other layer is Keras 3's, the same class)
from ...keras.layers import __all__  # noqa: F401

_FUSED_MIN_EPSILON = 1.001e-5       # cuDNN's floor, which tf.keras applies to every fused batch norm


class BatchNormalization(_layers.BatchNormalization):
    """tf.keras's BatchNormalization: Keras 3's, but where tf.keras runs its fused kernel (4-D and 5-D inputs
    normalised over the channel axis, first or last, in float16, bfloat16 or float32) the moving variance
    follows the batch's unbiased (Bessel-corrected) variance and epsilon is at least 1.001e-5."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, *args, fused=None, virtual_batch_size=None,
                 adjustment=None, **kwargs):
        if virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError("BatchNormalization(virtual_batch_size=, adjustment=) is not supported by "
                                      "minifp.tf.keras")
        super().__init__(axis, momentum, epsilon, *args, **kwargs)
        if fused not in (None, True, False):
            raise ValueError(f"fused must be None, True or False, got {fused!r}")
        self.fused = fused

    def _fused(self, ndim):
        """Whether tf.keras would run the fused kernel on inputs of this rank (fused=None: wherever it can)."""
        can = ndim in (4, 5) and self.axis % ndim in (1, ndim - 1) and self.compute_dtype in (
            "float16", "bfloat16", "float32")
        if self.fused and not can:
            raise ValueError(f"Passing `fused=True` is only supported when axis is 1 or 3 for input rank = 4 or 1 "
                             f"or 4 for input rank = 5, in float16, bfloat16 or float32. Got axis {self.axis} for "
                             f"rank {ndim}, compute dtype {self.compute_dtype}")
        return can and self.fused is not False

    def _moving_variance_ddof(self, ndim):
        return 1 if self._fused(ndim) else 0

    def _epsilon_for(self, ndim):
        return max(self.epsilon, _FUSED_MIN_EPSILON) if self._fused(ndim) else self.epsilon

    def get_config(self):
        return {**super().get_config(), "fused": self.fused}


class InputLayer(_layers.InputLayer):
    """tf.keras's InputLayer: Keras 3's, named "input_<n>" (n = 1, 2 ... in the session) when not given a name."""

    def __init__(self, *args, name=None, **kwargs):
        super().__init__(*args, name=name or f"input_{backend.get_uid('input')}", **kwargs)
        self._name_prefix = None if name else "input"        # made up (for minifp.checkpoint's keys)


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None,
          optional=False):
    """A symbolic input of a functional model (minifp.keras's Input), its InputLayer named as tf.keras names it."""
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse, batch_shape=batch_shape,
                       name=name, input_tensor=tensor, optional=optional)
    return layer.output


def deserialize(config, custom_objects=None):
    """The layer a serialize() result describes, tf.keras's BatchNormalization / InputLayer for those names."""
    own = {"BatchNormalization": BatchNormalization, "InputLayer": InputLayer, "LeakyReLU": LeakyReLU}
    return _layers.deserialize(config, {**own, **(custom_objects or {})})


class LeakyReLU(_layers.LeakyReLU):
    """tf.keras's LeakyReLU: the slope is `alpha` (default 0.3, kept as a float32, any sign), and so is its
    config key."""

    def __init__(self, alpha=0.3, **kwargs):
        if alpha is None:
            raise ValueError(f"The alpha value of a Leaky ReLU layer cannot be None, needs a float. Got {alpha}")
        super().__init__(negative_slope=0.0, **kwargs)
        self.negative_slope = float(np.float32(alpha))

    alpha = property(lambda self: self.negative_slope, doc="The slope below zero (Keras 3's negative_slope).")

    def get_config(self):
        config = super().get_config()
        config["alpha"] = config.pop("negative_slope")
        return config


from ...keras._missing import missing as _missing  # noqa: E402

__getattr__ = _missing(__name__, "TensorFlow")

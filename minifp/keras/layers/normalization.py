"""Keras 3's BatchNormalization and GroupNormalization (below). BatchNormalization: momentum 0.99, epsilon 1e-3,
biased batch variance, statistics in float32.

As Keras 3 does, the inputs are normalised in float32 whatever the compute dtype (float16 and bfloat16 inputs
are widened first, exactly), gamma, beta and the moving statistics are read in their own dtype (never
autocast), the result is rounded once into the compute dtype, and in training the moving statistics become
moving * momentum + batch * (1 - momentum), computed in float32.
"""
from __future__ import annotations

import numpy as np

from ...engine import apply, update_running_stats
from .. import constraints, initializers, ops, regularizers
from .layer import InputSpec, Layer, check_axis

__all__ = ["BatchNormalization", "GroupNormalization"]


class BatchNormalization(Layer):
    """Normalise each feature along `axis` by the batch's statistics (training) or the moving ones."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, synchronized=False, **kwargs):
        super().__init__(**kwargs)
        if renorm:
            raise NotImplementedError("BatchNormalization(renorm=True) is not supported by minifp.keras")
        if synchronized:
            raise ValueError("Argument synchronized=True is only supported with the TensorFlow backend.")
        self.axis = int(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.renorm, self.synchronized = False, False
        self.supports_masking = True
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    def build(self, input_shape):
        ndim = len(input_shape)
        check_axis(self.axis, input_shape)
        shape = (input_shape[self.axis],)
        if self.scale:
            self.gamma = self.add_weight(shape=shape, name="gamma", initializer=self.gamma_initializer,
                                         regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                         autocast=False)
        if self.center:
            self.beta = self.add_weight(shape=shape, name="beta", initializer=self.beta_initializer,
                                        regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                        autocast=False)
        self.moving_mean = self.add_weight(shape=shape, name="moving_mean", initializer=self.moving_mean_initializer,
                                           trainable=False, autocast=False)
        self.moving_variance = self.add_weight(shape=shape, name="moving_variance",
                                               initializer=self.moving_variance_initializer, trainable=False,
                                               autocast=False)
        self.input_spec = InputSpec(ndim=ndim, axes={self.axis: input_shape[self.axis]})
        self.built = True

    def _channels_second(self, ndim):
        """The axes permutation that brings `axis` to position 1 (the engine's (N, C, ...) layout)."""
        axis = self.axis % ndim
        order = [0, axis] + [a for a in range(1, ndim) if a != axis]
        return None if axis == 1 else tuple(order)

    def call(self, inputs, training=None, mask=None):
        if mask is not None:
            raise NotImplementedError("BatchNormalization with a mask is not supported by minifp.keras")
        order = self._channels_second(inputs.ndim)
        x = inputs if order is None else apply("transpose", inputs, axes=order)
        stats = {}
        if training and self.trainable:
            self._update_moving_statistics(x)
        else:
            stats = {"mean": self.moving_mean.float32(), "var": self.moving_variance.float32()}
        # _out: computed in float32 from the exact inputs and float32 (never autocast) parameters, one rounding
        # into the compute dtype: what Keras's cast to float32, normalise, cast back gives.
        y = apply("batch_norm", x, self.gamma, self.beta, eps=self._epsilon_for(x.ndim), _out=self._format or x.fmt,
                  **stats)
        return y if order is None else apply("transpose", y, axes=tuple(np.argsort(order)))

    def _update_moving_statistics(self, x):
        """moving * momentum + batch * (1 - momentum) in float32 (the batch variance is the biased one)."""
        update_running_stats(self.moving_mean, self.moving_variance, x, self.momentum, 1.0 - self.momentum,
                             ddof=self._moving_variance_ddof(x.ndim))

    def _moving_variance_ddof(self, ndim):
        """0: the moving variance follows the biased batch variance (Keras 3; tf.keras's subclass may differ)."""
        return 0

    def _epsilon_for(self, ndim):
        return self.epsilon

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer": initializers.serialize(self.moving_variance_initializer),
                "synchronized": False, "renorm": False, "renorm_clipping": None, "renorm_momentum": 0.99}


class GroupNormalization(Layer):
    """Normalise each group of channels along `axis` by its own mean and variance, then gamma * x + beta: Keras's
    float32 steps (moments, rsqrt(variance + epsilon), x * inv + (beta - mean * inv)) as keras.ops, each rounded
    once, and the result cast to the compute dtype."""

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, **kwargs):
        if not isinstance(groups, int) or (groups <= 0 and groups != -1):
            raise ValueError("Received an invalid value for argument `groups`, expected a positive integer (or "
                             f"`-1` for instance normalization). Received: groups={groups}")
        super().__init__(**kwargs)
        self.supports_masking = True
        self.autocast = False
        self.groups, self.axis, self.epsilon, self.center, self.scale = groups, axis, epsilon, center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def build(self, input_shape):
        dim = input_shape[self.axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension but the layer "
                             f"received an input with shape {input_shape}.")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number of channels ({dim}).")
        if dim % self.groups != 0:
            raise ValueError(f"Number of groups ({self.groups}) must be a multiple of the number of channels "
                             f"({dim}).")
        self.input_spec = InputSpec(ndim=len(input_shape), axes={self.axis: dim})
        self.gamma = self.add_weight(shape=(dim,), name="gamma", initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
                                     autocast=False) if self.scale else None
        self.beta = self.add_weight(shape=(dim,), name="beta", initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer, constraint=self.beta_constraint,
                                    autocast=False) if self.center else None
        self.built = True

    def _group_shape(self, shape):
        """shape with the channel axis split into (groups, channels // groups)."""
        shape = list(shape)
        axis = self.axis % len(shape)
        return tuple(shape[:axis]) + (self.groups, shape[axis] // self.groups) + tuple(shape[axis + 1:])

    def call(self, inputs):
        shape = tuple(inputs.shape)
        x = ops.cast(ops.reshape(inputs, self._group_shape(shape)), "float32")
        axis = self.axis % len(shape)           # the groups' axis in x; every other but the batch is reduced
        mean, variance = ops.moments(x, axes=[a for a in range(1, x.ndim) if a != axis], keepdims=True)
        inv = ops.rsqrt(variance + self.epsilon)
        broadcast = self._group_shape([n if a == axis else 1 for a, n in enumerate(shape)])
        if self.scale:
            inv = inv * ops.cast(ops.reshape(self.gamma, broadcast), "float32")
        res = -mean * inv
        if self.center:
            res = res + ops.cast(ops.reshape(self.beta, broadcast), "float32")
        out = ops.cast(x * inv + res, inputs.dtype)
        return ops.cast(ops.reshape(out, shape), self.compute_dtype)

    def compute_output_shape(self, input_shape):
        if not -len(input_shape) <= self.axis < len(input_shape):
            raise ValueError(f"Axis {self.axis} is out of bounds for input shape {input_shape}. "
                             f"Received: axis={self.axis}")
        return input_shape

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


class UnitNormalization(Layer):
    """Each input divided by its L2 norm along axis (Keras's ops.normalize with epsilon 1e-12)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = list(axis)
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise TypeError(f"Invalid value for `axis` argument: expected an int or a list/tuple of ints. "
                            f"Received: axis={axis}")
        self.supports_masking = True
        self.built = True

    def _symbolic_call(self, args, kwargs):
        """Keras's error for an axis the symbolic input lacks (its shape with the batch unknown)."""
        if args:
            self.compute_output_shape(tuple(args[0].shape))
        return super()._symbolic_call(args, kwargs)

    def call(self, inputs):
        axis = tuple(self.axis) if isinstance(self.axis, list) else self.axis
        return ops.normalize(inputs, axis=axis, order=2, epsilon=1e-12)

    def compute_output_shape(self, input_shape):
        for axis in self.axis if isinstance(self.axis, list) else [self.axis]:
            if not -len(input_shape) <= axis < len(input_shape):
                raise ValueError(f"Axis {self.axis} is out of bounds for input shape {input_shape}.")
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


__all__ += ["UnitNormalization"]

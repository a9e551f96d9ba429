"""Keras 3's core layers: InputLayer/Input, Dense, Activation, Dropout, Flatten, Reshape, Embedding, ReLU,
LayerNormalization, Lambda (Add and Concatenate live in merging.py). Kernels keep Keras's layout ((in, out) for
Dense)."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ... import linear
from ...engine import apply, generator, storage
from .. import activations, backend, constraints, initializers, regularizers
from .._tensor import as_dtype, convert_to_tensor
from .convolutional import standardize_data_format
from .layer import InputSpec, KerasTensor, Layer, Node, check_axis
from .merging import Add, Concatenate  # noqa: F401  (their home is merging.py; kept importable here)

__all__ = ["InputLayer", "Input", "Dense", "Activation", "Dropout", "Flatten", "Reshape", "Embedding", "ReLU",
           "Add", "Concatenate", "LayerNormalization", "Lambda"]


def standardize_shape(shape):
    """shape as a tuple of sizes (None: unknown), refused as Keras refuses it: no sequence, a size that is no
    integer, a negative size."""
    if not isinstance(shape, tuple):
        if shape is None:
            raise ValueError("Undefined shapes are not supported.")
        if not hasattr(shape, "__iter__"):
            raise ValueError(f"Cannot convert '{shape}' to a shape.")
        shape = tuple(shape)
    for d in shape:
        if d is None:
            continue
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise ValueError(f"Cannot convert '{shape}' to a shape. Found invalid dimension '{d}' of type "
                             f"'{type(d)}'. ")     # (Keras's trailing space)
        if d < 0:
            raise ValueError(f"Cannot convert '{shape}' to a shape. Negative dimensions are not allowed.")
    return tuple(None if d is None else int(d) for d in shape)


class InputLayer(Layer):
    """The layer behind keras.Input: it holds the symbolic input tensor of a functional model."""

    def __init__(self, shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, input_tensor=None,
                 optional=False, name=None, **kwargs):
        super().__init__(name=name, **{k: v for k, v in kwargs.items() if k == "trainable"})
        if shape is not None and batch_shape is not None:
            raise ValueError("You cannot pass both `shape` and `batch_shape` at the same time.")
        if batch_size is not None and batch_shape is not None:
            raise ValueError("You cannot pass both `batch_size` and `batch_shape` at the same time.")
        if shape is None and batch_shape is None:
            raise ValueError("You must pass a `shape` argument.")
        if shape is not None:
            batch_shape = (batch_size,) + standardize_shape(shape)
        self._batch_shape = standardize_shape(batch_shape)
        self._dtype = as_dtype(dtype or backend.floatx())
        self.sparse, self.optional = bool(sparse), optional
        self.built = True
        tensor = KerasTensor(self._batch_shape, self._dtype, name=self.name)
        tensor._keras_history = (self, 0, 0)
        self._inbound_nodes.append(Node(self, (), {}, tensor))
        self._seen_output_shape = self._batch_shape

    batch_shape = property(lambda self: self._batch_shape)
    dtype = property(lambda self: self._dtype)

    def call(self):
        return

    def get_config(self):
        return {"batch_shape": self._batch_shape, "dtype": str(self._dtype), "sparse": self.sparse,
                "name": self.name}


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None,
          optional=False):
    """A symbolic input of a functional model: a KerasTensor of shape (batch_size, *shape)."""
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse, batch_shape=batch_shape,
                       name=name, input_tensor=tensor, optional=optional)
    return layer.output


class Dense(Layer):
    """activation(inputs @ kernel + bias), kernel of shape (input_dim, units); the bias is added to the
    product before its one rounding, as a GEMM epilogue does."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, lora_rank=None,
                 **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if isinstance(units, bool) or not isinstance(units, numbers.Integral) or units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. "
                             f"Received: units={units}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        input_dim = input_shape[-1]
        self.kernel = self.add_weight(name="kernel", shape=(input_dim, self.units),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint) \
            if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: input_dim})
        self.built = True

    def call(self, inputs, training=None):
        x = linear(inputs, self.kernel, self.bias, layout="io")      # Keras's (in, out) kernel as it is
        return self.activation(x) if self.activation is not activations.linear else x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "activation": activations.serialize(self.activation)
                if getattr(self.activation, "__name__", None) in activations.ALL_OBJECTS_DICT else None,
                "use_bias": self.use_bias, "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer)}


class Activation(Layer):
    """An activation function as a layer: Activation("softmax", dtype="float32", name="predictions")."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}


class Dropout(Layer):
    """Zeroes a fraction `rate` of the inputs while training and scales the rest by 1 / (1 - rate)."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, numbers.Real) or not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and "
                             f"1. Received: rate={rate}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed
        self.supports_masking = True
        self.built = True

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        shape = tuple(inputs.shape) if self.noise_shape is None else tuple(
            d if n is None else n for d, n in zip(inputs.shape, self.noise_shape))
        if self.rate == 1:
            return inputs * 0.0
        mask = generator(self.seed).random(shape) >= self.rate
        mask = np.broadcast_to(mask, inputs.shape)
        return apply("dropout", inputs, mask=mask, scale=np.float32(1.0 / (1.0 - self.rate)))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed}


class Flatten(Layer):
    """(batch, d1, d2, ...) -> (batch, d1 * d2 * ...)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.built = True

    def call(self, inputs):
        if self.data_format == "channels_first" and inputs.ndim > 2:
            inputs = inputs.transpose((0,) + tuple(range(2, inputs.ndim)) + (1,))
        return inputs.reshape((inputs.shape[0], -1))

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        return (input_shape[0], None if None in rest else math.prod(rest))


class Reshape(Layer):
    """(batch, ...) -> (batch, *target_shape); one -1 is inferred."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)
        if sum(1 for d in self.target_shape if d == -1) > 1:
            raise ValueError(f"There must be at most one unknown dimension (-1) in `target_shape`. Received: "
                             f"target_shape={self.target_shape}")
        self.built = True

    def call(self, inputs):
        return inputs.reshape((inputs.shape[0],) + self.target_shape)

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


class Embedding(Layer):
    """Rows of an (input_dim, output_dim) table picked by integer inputs."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, weights=None, lora_rank=None, **kwargs):
        super().__init__(**{k: v for k, v in kwargs.items() if k != "input_length"})
        for name, value in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value} (of type "
                                 f"{type(value).__name__}).")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.mask_zero = mask_zero
        self.supports_masking = mask_zero
        self._initial_weights = weights

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim), name="embeddings",
                                          initializer=self.embeddings_initializer)
        self.built = True
        if self._initial_weights is not None:
            self.set_weights(self._initial_weights)

    def _convert(self, x):
        # Indices are not cast to the compute dtype (Keras's Embedding takes integers as they are).
        return x if isinstance(x, KerasTensor) or not hasattr(x, "__array__") else convert_to_tensor(x)

    def compute_mask(self, inputs, mask=None):
        """Where the indices are not 0, with mask_zero=True (None otherwise)."""
        if not self.mask_zero:
            return None
        inputs = convert_to_tensor(inputs)
        return convert_to_tensor(storage(inputs) != 0 if inputs.fmt is None else inputs.float32() != 0)

    def call(self, inputs):
        indices = storage(inputs) if inputs.fmt is None else inputs.float32()
        indices = indices.astype(np.int64)
        return apply("embedding", self.embeddings, indices=indices)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim, "output_dim": self.output_dim,
                "mask_zero": self.mask_zero}


class ReLU(Layer):
    """relu with Keras's options: max_value (a cap), negative_slope, threshold."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(f"max_value of a ReLU layer cannot be a negative value. Received: {max_value}")
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError(f"negative_slope of a ReLU layer cannot be a negative value. Received: "
                             f"{negative_slope}")
        if threshold is None or threshold < 0.0:
            raise ValueError(f"threshold of a ReLU layer cannot be a negative value. Received: {threshold}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold
        self.supports_masking = True
        self.built = True

    def call(self, inputs):
        return activations.relu(inputs, negative_slope=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value, "negative_slope": self.negative_slope,
                "threshold": self.threshold}


class LayerNormalization(Layer):
    """Normalises over the last axes (Keras defaults: axis=-1, epsilon=1e-3), then gamma * x + beta; computed
    in float32 and rounded once into the compute dtype."""

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, rms_scaling=False,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None, gamma_regularizer=None,
                 beta_constraint=None, gamma_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axis, (list, tuple, int)):
            raise TypeError(f"Expected an int or a list/tuple of ints for the argument 'axis', but received: {axis!r}")
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.epsilon, self.center, self.scale, self.rms_scaling = epsilon, center, scale, rms_scaling
        if rms_scaling:
            raise NotImplementedError("LayerNormalization(rms_scaling=True) is not supported by minifp")
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.supports_masking = True

    def _axes(self, ndim):
        axes = sorted(a % ndim for a in (self.axis if isinstance(self.axis, list) else [self.axis]))
        if axes != list(range(ndim - len(axes), ndim)):
            raise ValueError(f"minifp's LayerNormalization normalises over trailing axes only; got axis={self.axis} "
                             f"for inputs of rank {ndim}")
        return axes

    def build(self, input_shape):
        check_axis(self.axis, input_shape)
        axes = self._axes(len(input_shape))
        shape = tuple(input_shape[a] for a in axes)
        self.gamma = self.add_weight(name="gamma", shape=shape, initializer=self.gamma_initializer) \
            if self.scale else None
        self.beta = self.add_weight(name="beta", shape=shape, initializer=self.beta_initializer) \
            if self.center else None
        self.built = True

    def call(self, inputs):
        n = len(self._axes(inputs.ndim))
        return apply("layer_norm", inputs, self.gamma, self.beta, normalized_ndim=n, eps=float(self.epsilon))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale}


class Lambda(Layer):
    """Any function of the inputs as a layer; output_shape (without the batch axis, or a function of the input
    shape) when its shape cannot be found by running it."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function, self._output_shape, self.arguments = function, output_shape, arguments or {}
        self.mask = mask
        self.built = True

    def call(self, inputs, mask=None, training=None):
        return self.function(inputs, **self.arguments)

    def compute_output_shape(self, input_shape):
        if callable(self._output_shape):
            return self._output_shape(input_shape)
        if self._output_shape is not None:
            batch = (input_shape[0] if isinstance(input_shape[0], (list, tuple)) else input_shape)[0]
            return (batch,) + tuple(self._output_shape)
        try:            # run the function on zeros of that shape (a probe, as the functional graph does)
            zeros = lambda s: convert_to_tensor(np.zeros([1 if d is None else d for d in s], np.float32))  # noqa: E731
            several = isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], (list, tuple))
            out = self.call([zeros(s) for s in input_shape] if several else zeros(input_shape))
            batch = (input_shape[0] if several else input_shape)[0]
        except Exception:  # noqa: BLE001 - any failure means the shape cannot be inferred, as in Keras
            raise NotImplementedError("We could not automatically infer the shape of the Lambda's output. Please "
                                      "specify the `output_shape` argument for this Lambda layer.") from None
        return (batch,) + tuple(out.shape[1:])

    def get_config(self):
        config = {**super().get_config(), "arguments": self.arguments}
        if self._output_shape is not None and not callable(self._output_shape):
            config["output_shape"] = self._output_shape
        return config

"""Keras 3's small layers: Identity, Permute, RepeatVector, ZeroPadding1D, Cropping1D, UpSampling1D (values
move, no arithmetic), the noise layers GaussianNoise and GaussianDropout (identity at inference) and
CategoryEncoding (a preprocessing layer; preprocessing.py's home for it is another engineer's to edit)."""
from __future__ import annotations

import math

from ...engine import apply
from .. import ops, random
from .convolutional import standardize_data_format, standardize_tuple
from .layer import InputSpec, Layer
from .reshaping import _pad, _repeat

__all__ = ["Identity", "Permute", "RepeatVector", "ZeroPadding1D", "Cropping1D", "UpSampling1D", "GaussianNoise",
           "GaussianDropout", "CategoryEncoding"]


def _positive_int(value, name):
    """value if a positive int, else Keras's TypeError or ValueError."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"Expected an integer value for `{name}`, got {type(value)}.")
    if value <= 0:
        raise ValueError(f"Argument `{name}` should be a positive integer. Received: {name}={value}")
    return value


class Identity(Layer):
    """Its input, unchanged (masks pass through)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.built = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


class Permute(Layer):
    """The non-batch axes reordered: dims a permutation of 1..n."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of indices in `dims` "
                             f"must be consecutive and start from 1. Received dims={dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)
        self.built = True

    def call(self, inputs):
        return apply("transpose", inputs, axes=(0,) + self.dims)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}


class RepeatVector(Layer):
    """(batch, features) -> (batch, n, features): the input repeated n times."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = _positive_int(n, "n")
        self.input_spec = InputSpec(ndim=2)
        self.built = True

    def call(self, inputs):
        x = apply("reshape", inputs, shape=(inputs.shape[0], 1, inputs.shape[1]))
        return _repeat(x, (1,), (self.n,))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self):
        return {**super().get_config(), "n": self.n}


class ZeroPadding1D(Layer):
    """Zeros added at the start and end of the steps axis: padding an int or (start, end)."""

    def __init__(self, padding=1, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = standardize_data_format(data_format)
        self.padding = standardize_tuple(padding, 2, "padding", allow_zero=True)
        self.input_spec = InputSpec(ndim=3)
        self.built = True

    def _axis(self):
        return 2 if self.data_format == "channels_first" else 1

    def call(self, inputs):
        return _pad(inputs, self._axis(), *self.padding)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        if shape[self._axis()] is not None:
            shape[self._axis()] += sum(self.padding)
        return tuple(shape)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


class Cropping1D(Layer):
    """Steps cut off the start and end of axis 1: cropping an int or (start, end)."""

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = standardize_tuple(cropping, 2, "cropping", allow_zero=True)
        self.input_spec = InputSpec(ndim=3)
        self.built = True

    def call(self, inputs):
        if sum(self.cropping) >= inputs.shape[1]:
            raise ValueError("`cropping` parameter of `Cropping1D` layer must be smaller than the input length. "
                             f"Received: inputs.shape={tuple(inputs.shape)}, cropping={self.cropping}")
        start, end = self.cropping
        return apply("getitem", inputs, index=(slice(None), slice(start, inputs.shape[1] - end)))

    def compute_output_shape(self, input_shape):
        length = input_shape[1]
        if length is not None:
            length -= sum(self.cropping)
            if length <= 0:
                raise ValueError("`cropping` parameter of `Cropping1D` layer must be smaller than the input "
                                 f"length. Received: input_shape={tuple(input_shape)}, cropping={self.cropping}")
        return (input_shape[0], length, input_shape[2])

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


class UpSampling1D(Layer):
    """Each step repeated size times along axis 1."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = _positive_int(size, "size")
        self.input_spec = InputSpec(ndim=3)
        self.built = True

    def call(self, inputs):
        return _repeat(inputs, (1,), (self.size,))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], None if input_shape[1] is None else input_shape[1] * self.size, input_shape[2])

    def get_config(self):
        return {**super().get_config(), "size": self.size}


class _Noise(Layer):
    """A layer that draws normal noise of its input's shape while training from its own seed generator."""

    _argument = None

    def __init__(self, value, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= value <= 1:
            raise ValueError(f"Invalid value received for argument `{self._argument}`. Expected a float value "
                             f"between 0 and 1. Received: {self._argument}={value}")
        setattr(self, self._argument, value)
        self.seed = seed
        if value > 0:
            self.seed_generator = random.SeedGenerator(seed)
        self.supports_masking = True
        self.built = True

    def _normal(self, inputs, mean, stddev):
        return random.normal(tuple(inputs.shape), mean=mean, stddev=stddev, dtype=self.compute_dtype,
                             seed=self.seed_generator)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), self._argument: getattr(self, self._argument), "seed": self.seed}


class GaussianNoise(_Noise):
    """Adds N(0, stddev**2) noise while training; the identity at inference."""

    _argument = "stddev"

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(stddev, seed, **kwargs)

    def call(self, inputs, training=False):
        if training and self.stddev > 0:
            return inputs + self._normal(inputs, 0.0, self.stddev)
        return inputs


class GaussianDropout(_Noise):
    """Multiplies by N(1, rate / (1 - rate)) noise while training; the identity at inference."""

    _argument = "rate"

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, seed, **kwargs)

    def call(self, inputs, training=False):
        if training and self.rate > 0:
            return inputs * self._normal(inputs, 1.0, math.sqrt(self.rate / (1.0 - self.rate)))
        return inputs


def encode_categorical(inputs, output_mode, depth, dtype, count_weights=None):
    """Integer indices as one-hot, multi-hot or count vectors of `depth` entries in `dtype` (Keras's
    encode_categorical_inputs, which CategoryEncoding, Discretization and the hashing layers share)."""
    x = ops.convert_to_tensor(inputs)
    x = ops.expand_dims(x, -1) if x.ndim == 0 else x       # a scalar is one sample
    if output_mode == "multi_hot":
        return ops.multi_hot(x, depth, dtype=dtype)
    if output_mode == "one_hot":
        if x.ndim > 1 and x.shape[-1] == 1:
            x = ops.reshape(x, tuple(x.shape[:-1]))
        return ops.one_hot(x, depth, dtype=dtype)
    weights_dtype = dtype if count_weights is None else ops.convert_to_tensor(count_weights).dtype
    codes = ops.one_hot(x, depth, dtype=weights_dtype)
    if count_weights is not None:
        codes = codes * ops.expand_dims(ops.convert_to_tensor(count_weights, dtype=dtype), -1)
    return ops.sum(codes, axis=1 if x.ndim > 1 else 0)     # (Keras's axis, not -2, for rank 3)


class CategoryEncoding(Layer):
    """Integer indices in [0, num_tokens) as one-hot, multi-hot or count vectors (Keras's composition of
    ops.one_hot, ops.multi_hot and a sum)."""

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        output_mode = "multi_hot" if output_mode == "binary" else output_mode
        if output_mode not in ("count", "one_hot", "multi_hot"):
            raise ValueError(f"Unknown arg for output_mode: {output_mode}")
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens is not known "
                             "beforehand, use the IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        if sparse:
            raise NotImplementedError("minifp's CategoryEncoding has no sparse tensors")
        self.num_tokens, self.output_mode, self.sparse = num_tokens, output_mode, sparse
        self.built = True

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != "count":
            raise ValueError("`count_weights` is not used when `output_mode` is not `'count'`. Received "
                             f"`count_weights={count_weights}`.")
        return encode_categorical(inputs, self.output_mode, self.num_tokens, self.compute_dtype, count_weights)

    def compute_output_shape(self, input_shape):
        if len(input_shape) == 0:
            return (self.num_tokens,)
        if self.output_mode == "one_hot" and len(input_shape) > 1 and input_shape[-1] == 1:
            return tuple(input_shape[:-1]) + (self.num_tokens,)
        if self.output_mode == "one_hot":
            return tuple(input_shape) + (self.num_tokens,)
        return tuple(input_shape[:-1]) + (self.num_tokens,)

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens, "output_mode": self.output_mode}

"""keras.random: Keras 3's random draws (normal, uniform, truncated_normal, randint, categorical, dropout, shuffle,
gamma, binomial, beta) and SeedGenerator, over the engine's seeded streams.

A draw's numbers are a function of its seed, as Keras's are. seed=None draws from minifp's generator (what
keras.utils.set_random_seed reseeds); an int seed gives the same numbers on every call; a SeedGenerator's state
[seed, counter] seeds the draw and then advances by one, so its draws differ from call to call and a fresh
SeedGenerator(same seed) repeats them. A state names the engine stream (first + second) mod 2**32, the seed Keras's
torch backend gives torch's generator, so the same draws coincide as they do there (SeedGenerator(42)'s first draw
is seed=42's, its second seed=43's); the numbers themselves are NumPy's PCG64's, not torch's.
"""
from __future__ import annotations

import operator
import random as python_random

import numpy as np

from ..engine import make, new_stream, rng, round_to, storage, values, Tensor as _EngineTensor
from . import backend, ops
from ._tensor import Tensor, as_dtype, format_of
from .layers.layer import PROBING, Variable

__all__ = ["SeedGenerator", "normal", "uniform", "truncated_normal", "randint", "categorical", "dropout", "shuffle",
           "gamma", "binomial", "beta"]

_INT32 = (-2 ** 31, 2 ** 31)        # the state's dtype is int32, Keras's torch backend's random_seed_dtype()


class SeedGenerator:
    """A seed state [seed, counter] (an int32 variable) that hands each random draw its own seed."""

    def __init__(self, seed=None, name=None, **kwargs):
        self.name = backend.auto_name(type(self).__name__) if name is None else name
        kwargs.pop("backend", None)         # Keras's hook for another backend: minifp has one
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments: {kwargs}")
        self._initial_seed = seed
        if seed is None:
            seed = python_random.randint(1, int(1e9))      # Keras's make_default_seed
        if not isinstance(seed, int):
            raise ValueError(f"Argument `seed` must be an integer. Received: seed={seed}")
        if not _INT32[0] <= seed < _INT32[1]:
            raise ValueError(f"Argument `seed` must fit the int32 seed state, in [{_INT32[0]}, {_INT32[1] - 1}]. "
                             f"Received: seed={seed}")
        self.state = Variable(np.array([seed, 0], np.int32), shape=(2,), dtype="int32", trainable=False,
                              name="seed_generator_state")
        self.state.path = f"{self.name}/seed_generator_state"

    _is_seed_generator = True       # (what a Layer tracks it by)

    def next(self, ordered=True):
        """The state now (this draw's seed, a copy) and advance it: the counter by one, or with ordered=False a
        jump to a near-unique pair below 933199 (the walk of Keras's global generator); not while a functional
        model works out its shapes."""
        now = storage(self.state).copy()
        if PROBING[0]:
            return make(Tensor, now, None)
        # int32 arithmetic, wrapping where torch's does
        self.state.assign(now + np.array([0, 1], np.int32) if ordered else (now + 1) * np.int32(5387) % 933199)
        return make(Tensor, now, None)

    def get_config(self):
        """The seed as given (None for a random one) and the name."""
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        """A new SeedGenerator from get_config()'s dict: the state starts again from the seed."""
        return cls(**config)


def _check_seed(seed):
    """Refuse a bad seed (each draw checks before it changes anything: a SeedGenerator advances as it draws)."""
    if seed is not None and not isinstance(seed, (int, SeedGenerator)):
        raise ValueError(f"Argument `seed` must be either an integer or an instance of `SeedGenerator`. "
                         f"Received: seed={seed} (of type {type(seed)})")


def _stream(seed):
    """The generator a draw takes its numbers from: minifp's own for None, else the stream of the seed's pair."""
    _check_seed(seed)
    if seed is None:
        return rng()
    first, second = (int(v) for v in storage(seed.next())) if isinstance(seed, SeedGenerator) else (seed, 0)
    return new_stream((first + second) & 0xFFFFFFFF)


def _shape(shape):
    """shape as a tuple of non-negative ints."""
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"Argument `shape` must be a tuple of ints. Received: shape={shape}")
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"Argument `shape` must be a tuple of ints. Received: shape={shape}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"Argument `shape` must not hold negative sizes. Received: shape={shape}")
    return dims


def _dtype(dtype):
    """The DType named (floatx for None), with Keras's error for an unknown name."""
    dtype = backend.floatx() if dtype is None else dtype
    try:
        return as_dtype(dtype)
    except ValueError:
        raise ValueError(f"Invalid dtype: {dtype}") from None


def _float_dtype(dtype, fn):
    """A floating dtype for keras.random.<fn> (floatx for None), refused with uniform's words otherwise."""
    name = _dtype(dtype)
    if format_of(name) is None:
        raise ValueError(f"`keras.random.{fn}` requires a floating point `dtype`. Received: dtype={dtype} ")
    return name


def _result(x, dtype, mode="nearest"):
    """float64 values as a Tensor of dtype: rounded once (mode) into a float format, truncated for integers."""
    fmt = format_of(dtype)
    if fmt is None:
        return make(Tensor, np.asarray(x).astype(str(dtype)), None)
    return make(Tensor, round_to(np.asarray(x, np.float64), fmt, mode), fmt)


def _array(x):
    """A number, array or tensor as float64 values."""
    return np.asarray(values(x) if isinstance(x, _EngineTensor) else x, np.float64)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Draws from a normal distribution of mean and stddev."""
    shape, dtype = _shape(shape), _float_dtype(dtype, "normal")
    _check_seed(seed)
    return _result(_array(mean) + _array(stddev) * _stream(seed).standard_normal(shape), dtype)


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Draws from the uniform distribution on [minval, maxval)."""
    if dtype and format_of(_dtype(dtype)) is None:
        raise ValueError(f"`keras.random.uniform` requires a floating point `dtype`. Received: dtype={dtype} ")
    shape, dtype = _shape(shape), _dtype(dtype)
    _check_seed(seed)
    low, high = _array(minval), _array(maxval)
    x = low + (high - low) * _stream(seed).random(shape)
    # Rounding toward minval gives each value of the format the probability of its gap, and never maxval; an empty
    # range gives minval rounded to nearest, as torch's rand() * 0 + minval does
    if np.all(high == low):
        return _result(x, dtype)
    return _result(x, dtype, "down" if np.all(high >= low) else "up")


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Draws from a normal distribution, those more than two standard deviations from the mean drawn again."""
    shape, dtype = _shape(shape), _float_dtype(dtype, "truncated_normal")
    _check_seed(seed)
    stream = _stream(seed)
    z = stream.standard_normal(shape)
    redraw = np.abs(z) >= 2
    while redraw.any():
        z[redraw] = stream.standard_normal(int(redraw.sum()))
        redraw = np.abs(z) >= 2
    return _result(_array(mean) + _array(stddev) * z, dtype)


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers drawn uniformly from [minval, maxval) (dtype=None: floatx, as Keras's torch backend gives)."""
    if dtype and not _dtype(dtype).is_integer:
        raise ValueError(f"`keras.random.randint` requires an integer `dtype`. Received: dtype={dtype} ")
    shape, dtype = _shape(shape), _dtype(dtype)
    try:
        low, high = operator.index(minval), operator.index(maxval)
    except TypeError:
        raise TypeError(f"`minval` and `maxval` must be integers. Received: minval={minval}, maxval={maxval}") \
            from None
    if low >= high:
        raise ValueError(f"`minval` must be less than `maxval`. Received: minval={minval}, maxval={maxval}")
    info = np.iinfo(str(dtype)) if dtype.is_integer else None
    if info is not None and not (info.min <= low and high - 1 <= info.max):
        raise ValueError(f"[minval, maxval) must lie within {dtype}'s range. Received: minval={minval}, "
                         f"maxval={maxval}")
    _check_seed(seed)
    return _result(_stream(seed).integers(low, high, size=shape), dtype)


def categorical(logits, num_samples, dtype="int32", seed=None):
    """num_samples class indices per row of logits (batch_size, num_classes), drawn by softmax(logits)."""
    shape = tuple(logits.shape) if hasattr(logits, "shape") else np.shape(logits)
    if len(shape) != 2:
        raise ValueError(f"`logits` should be a 2-D tensor with shape [batch_size, num_classes]. "
                         f"Received: logits={logits}")
    num_samples, dtype = operator.index(num_samples), _dtype(dtype)
    if num_samples <= 0:
        raise ValueError(f"Argument `num_samples` must be positive. Received: num_samples={num_samples}")
    _check_seed(seed)
    x = _array(logits)
    p = np.exp(x - x.max(axis=-1, keepdims=True))
    cdf = np.cumsum(p, axis=-1)
    cdf /= cdf[:, -1:]
    u = _stream(seed).random((shape[0], num_samples))
    # class k where cdf[k-1] <= u < cdf[k]: a class of probability 0 is never drawn
    draws = (u[:, :, None] >= cdf[:, None, :]).sum(axis=-1)
    return _result(np.minimum(draws, shape[1] - 1), dtype)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """inputs with each value zeroed with probability rate and the rest scaled by 1 / (1 - rate)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {rate}")
    x = inputs if isinstance(inputs, _EngineTensor) else ops.convert_to_tensor(inputs)
    if rate == 1:
        return ops.zeros_like(x)
    if rate == 0:
        return inputs
    _check_seed(seed)
    keep = 1.0 - rate
    shape = tuple(x.shape) if noise_shape is None else \
        tuple(d if n is None else n for d, n in zip(x.shape, noise_shape))
    # Keras's torch backend draws an unseeded SeedGenerator's dropout from the global generator, leaving it as it was
    unseeded = seed is None or isinstance(seed, SeedGenerator) and seed._initial_seed is None
    stream = rng() if unseeded and noise_shape is None else _stream(seed)
    mask = np.broadcast_to(stream.random(_shape(shape)) < keep, x.shape)
    return ops.where(mask, ops.divide(x, keep), ops.zeros_like(x))


def shuffle(x, axis=0, seed=None):
    """x with the entries along axis permuted at random (each slice before axis on a permutation of its own)."""
    x = x if isinstance(x, _EngineTensor) else ops.convert_to_tensor(x)
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], "
                         f"but got {axis})")
    axis %= x.ndim
    _check_seed(seed)
    order = np.broadcast_to(np.arange(x.shape[axis]), x.shape[:axis + 1])
    order = _stream(seed).permuted(order, axis=axis).reshape(order.shape + (1,) * (x.ndim - axis - 1))
    return ops.take_along_axis(x, np.broadcast_to(order, x.shape), axis=axis)


def _parameter(value, shape, name, valid, what):
    """A distribution's parameter broadcast to shape, refused (naming it) where not valid."""
    p = np.broadcast_to(_array(value), shape)
    if not np.all(valid(p)):
        raise ValueError(f"Argument `{name}` must be {what}. Received: {name}={value}")
    return p


def gamma(shape, alpha, dtype=None, seed=None):
    """Draws from the Gamma distribution of shape parameter alpha (rate 1)."""
    shape, dtype = _shape(shape), _dtype(dtype)
    alpha = _parameter(alpha, shape, "alpha", lambda a: a > 0, "positive")
    _check_seed(seed)
    return _result(_stream(seed).standard_gamma(alpha), dtype)


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Successes in `counts` trials of success probability `probabilities`."""
    shape, dtype = _shape(shape), _dtype(dtype)
    n = _parameter(counts, shape, "counts", lambda c: (c >= 0) & (c == np.floor(c)), "non-negative integers")
    p = _parameter(probabilities, shape, "probabilities", lambda q: (q >= 0) & (q <= 1), "in [0, 1]")
    _check_seed(seed)
    return _result(_stream(seed).binomial(n.astype(np.int64), p), dtype)


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Draws from the Beta distribution of parameters alpha and beta."""
    shape, dtype = _shape(shape), _dtype(dtype)
    a = _parameter(alpha, shape, "alpha", lambda v: v > 0, "positive")
    b = _parameter(beta, shape, "beta", lambda v: v > 0, "positive")
    _check_seed(seed)
    return _result(_stream(seed).beta(a, b), dtype)

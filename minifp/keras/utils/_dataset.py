"""The tf.data.Dataset that keras.utils returns (split_dataset, timeseries_dataset_from_array) and minifp.tf's
tf.data.Dataset builds on (its subclass converts elements as tf.constant does). Here because minifp.keras
imports nothing of minifp.tf. The part the guides use: from_tensor_slices, shuffle, batch, map, repeat, take,
prefetch, cache, iteration. Elements are minifp.keras Tensors (tuples and dicts of them, as given to
from_tensor_slices); inside, a dataset holds NumPy arrays and makes tensors only as it hands elements out.

Shuffling is TensorFlow's buffer algorithm (fill a buffer of `buffer_size` elements, emit a random one, put the
next in its place) on minifp's generator, so a buffer at least as large as the data is a uniform shuffle.
"""
from __future__ import annotations

import numpy as np

from ...engine import generator, storage, Tensor as _EngineTensor, to_numpy
from .._tensor import convert_to_tensor

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


def _map_structure(fn, x):
    if isinstance(x, tuple):
        return tuple(_map_structure(fn, v) for v in x)
    if isinstance(x, list):          # TensorFlow treats a list of arrays as one tensor, not a structure
        return fn(x)
    if isinstance(x, dict):
        return {k: _map_structure(fn, v) for k, v in x.items()}
    return fn(x)


def _leaves(x):
    if isinstance(x, tuple):
        return [v for item in x for v in _leaves(item)]
    if isinstance(x, dict):
        return [v for item in x.values() for v in _leaves(item)]
    return [x]


def _array(x):
    """A component as a host array (tensors' values in their storage dtype)."""
    return to_numpy(storage(x)) if isinstance(x, _EngineTensor) else np.asarray(x)


class Dataset:
    """A re-iterable sequence of elements built from a source and a chain of transformations."""

    _convert = staticmethod(convert_to_tensor)      # one element component -> Tensor (tf's: tf.constant's dtypes)

    def __init__(self, make, cardinality):
        self._make = make               # a function returning a fresh iterator of elements
        self._cardinality = cardinality

    @classmethod
    def from_tensor_slices(cls, tensors, name=None):
        """The slices of `tensors` (an array, or a tuple/dict of arrays of one first dimension) along axis 0."""
        arrays = _map_structure(_array, tensors)
        lengths = {a.shape[0] if a.ndim else None for a in _leaves(arrays)}
        if None in lengths:
            raise ValueError("from_tensor_slices: Unbatching a tensor is only supported for rank >= 1")
        if len(lengths) != 1:
            raise ValueError(f"from_tensor_slices: Dimensions {sorted(lengths)} in the components do not match: "
                             f"all components must have the same size in the first dimension")
        n = lengths.pop()
        return cls(lambda: (_map_structure(lambda a: a[i], arrays) for i in range(n)), n)

    @classmethod
    def from_tensors(cls, tensors, name=None):
        """A dataset of one element, `tensors`."""
        arrays = _map_structure(_array, tensors)
        return cls(lambda: iter([arrays]), 1)

    @classmethod
    def range(cls, *args, **kwargs):
        """The integers of Python's range, as int64 scalars."""
        values = range(*args)
        return cls(lambda: (np.int64(v) for v in values), len(values))

    def __iter__(self):
        return (self._tensors(e) for e in self._make())

    def __len__(self):
        if self._cardinality < 0:
            raise TypeError("The dataset is infinite." if self._cardinality == INFINITE_CARDINALITY
                            else "The dataset length is unknown.")
        return self._cardinality

    def cardinality(self):
        """The number of elements as an int64 scalar (-1 infinite, -2 unknown)."""
        return self._convert(np.int64(self._cardinality))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        """Elements in a random order drawn through a buffer of `buffer_size` (TensorFlow's algorithm)."""
        if int(buffer_size) < 1 and buffer_size != AUTOTUNE:
            raise ValueError(f"shuffle: buffer_size must be greater than zero, got {buffer_size}")
        size = self._cardinality if buffer_size == AUTOTUNE else int(buffer_size)
        fixed = None if reshuffle_each_iteration else np.random.default_rng(generator(seed).integers(2 ** 63))

        def make():
            rng = fixed if fixed is not None else generator(seed)
            state = rng.bit_generator.state if fixed is not None else None
            out = _buffer_shuffle(iter(self._make()), size, rng)
            if state is not None:       # the same order every pass
                out = list(out)
                rng.bit_generator.state = state
            return iter(out)
        return type(self)(make, self._cardinality)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        """Consecutive elements stacked into batches of `batch_size` (the last smaller unless drop_remainder)."""
        batch_size = int(batch_size)
        if batch_size < 1:
            raise ValueError(f"batch: batch_size must be greater than zero, got {batch_size}")

        def make():
            items = []
            for e in self._make():
                items.append(e)
                if len(items) == batch_size:
                    yield _stack(items)
                    items = []
            if items and not drop_remainder:
                yield _stack(items)
        n = self._cardinality
        card = n if n < 0 else n // batch_size if drop_remainder else -(-n // batch_size)
        return type(self)(make, card)

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        """map_func applied to each element (a tuple element is passed as separate arguments, as TensorFlow)."""
        def make():
            for e in self._make():
                t = self._tensors(e)
                yield _map_structure(_array, map_func(*t) if isinstance(t, tuple) else map_func(t))
        return type(self)(make, self._cardinality)

    def filter(self, predicate, name=None):
        """The elements for which `predicate` is true."""
        def keep(e):
            t = self._tensors(e)
            return bool(predicate(*t) if isinstance(t, tuple) else predicate(t))
        return type(self)(lambda: (e for e in self._make() if keep(e)), UNKNOWN_CARDINALITY)

    def repeat(self, count=None, name=None):
        """The dataset `count` times over (forever when None or -1)."""
        forever = count is None or count == -1

        def make():
            i = 0
            while forever or i < count:
                yield from self._make()
                i += 1
        n = self._cardinality
        return type(self)(make, INFINITE_CARDINALITY if forever and n != 0 else n if n < 0 else n * (0 if forever
                                                                                                  else count))

    def take(self, count, name=None):
        """The first `count` elements (all when -1)."""
        def make():
            for i, e in enumerate(self._make()):
                if count != -1 and i >= count:
                    return
                yield e
        n = self._cardinality
        card = n if count == -1 else count if n == INFINITE_CARDINALITY else min(n, count) if n >= 0 else n
        return type(self)(make, card)

    def skip(self, count, name=None):
        """All but the first `count` elements."""
        n = self._cardinality
        return type(self)(lambda: (e for i, e in enumerate(self._make()) if i >= count),
                       max(n - count, 0) if n >= 0 else n)

    def prefetch(self, buffer_size, name=None):
        """The same dataset (minifp reads eagerly; there is nothing to overlap)."""
        return self

    def cache(self, filename="", name=None):
        """The same dataset (its elements are already in memory)."""
        return self

    def _tensors(self, element):
        """An element (arrays, or tuples/dicts of them) as minifp.keras Tensors."""
        return _map_structure(self._convert, element)

    def as_numpy_iterator(self):
        """The elements with each tensor as a NumPy array."""
        return (_map_structure(lambda t: t.numpy(), self._tensors(e)) for e in self._make())


def _buffer_shuffle(it, size, rng):
    buffer = []
    for e in it:
        if len(buffer) < size:
            buffer.append(e)
            continue
        i = int(rng.integers(len(buffer)))
        yield buffer[i]
        buffer[i] = e
    while buffer:
        i = int(rng.integers(len(buffer)))
        buffer[i], buffer[-1] = buffer[-1], buffer[i]
        yield buffer.pop()


def _stack(items):
    """Elements (tensors, or tuples/dicts of them) stacked along a new first axis."""
    first = items[0]
    if isinstance(first, tuple):
        return tuple(_stack([e[i] for e in items]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack([e[k] for e in items]) for k in first}
    return np.stack(items)

"""`torch.utils.data`: datasets, samplers, PyTorch's default collate and the DataLoader.

minifp loads batches in the calling process: `num_workers`, `pin_memory`, `timeout`, `prefetch_factor` and
the other worker options are accepted (and checked as PyTorch checks them) so that tutorial code runs,
but they change nothing. Shuffling draws from `generator` (a torch.Generator, or a NumPy Generator) or, when it
is None, from a stream seeded by one draw of the global one (`minifp.torch.manual_seed`), as PyTorch's samplers
do, so runs repeat; the permutations are not PyTorch's. Samplers draw lazily, 32 indices or one permutation at a
time. `dataloader`, `dataset`, `sampler` and `distributed` are modules, as in PyTorch.
"""
from __future__ import annotations

import collections.abc
import copy
import math
import numbers
import re

import numpy as np

from ....engine import apply, new_stream, rng, Tensor
from ..._generator import Generator

__all__ = ["BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info", "random_split"]

_STRING_OR_OBJECT = re.compile(r"[SaUO]")         # NumPy dtype codes that collate leaves alone (or refuses)
_COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _torch():
    """The face package (imported late: minifp.torch imports this module)."""
    from .... import torch
    return torch


# -- datasets -------------------------------------------------------------------------------


class Dataset:
    """A map-style dataset: subclasses define __getitem__(index) and, for the DataLoader's samplers, __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define __iter__; the DataLoader batches what it yields, in order."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension: item i is (t[i] for t in tensors)."""

    def __init__(self, *tensors):
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset(): tensors[{i}] is a {type(t).__name__}, not a tensor "
                                f"(make one with minifp.torch.from_numpy or minifp.torch.tensor)")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset(): tensors[{i}] is 0-dimensional; each tensor needs a first "
                                 f"dimension to index samples by")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) > 1:
            raise ValueError(f"Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0] if self.tensors else 0

    def _rows(self, indices):
        """Rows `indices` of every tensor at once: what default_collate makes of those samples, in one op each."""
        index = np.asarray(indices, dtype=np.intp)
        return [apply("getitem", t, index=index) for t in self.tensors]


class ConcatDataset(Dataset):
    """Datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise ValueError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = [int(n) for n in np.cumsum([len(d) for d in self.datasets])]

    def __len__(self):
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = int(np.searchsorted(self.cumulative_sizes, index, side="right"))
        start = 0 if which == 0 else int(self.cumulative_sizes[which - 1])
        return self.datasets[which][index - start]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Disjoint random Subsets of the given lengths (integers summing to len(dataset), or fractions summing to 1)."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):               # PyTorch hands the remainder out round-robin
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _rng(generator, "random_split()").permutation(n).tolist()
    subsets, start = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[start:start + length]))
        start += length
    return subsets


# -- samplers -------------------------------------------------------------------------------


class Sampler:
    """Yields the indices (or lists of indices) a DataLoader fetches."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh permutation per pass (or draws with replacement), from `generator` or minifp's generator."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source, self.replacement, self._num_samples = data_source, replacement, num_samples
        self.generator = generator
        _rng(generator, "RandomSampler()")               # a bad generator fails here, not at the first batch
        if not _positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, rng = len(self.data_source), _pass_rng(self.generator, "RandomSampler()")
        if self.replacement:                              # 32 at a time: num_samples may be 1e10
            for _ in range(self.num_samples // 32):
                yield from rng.integers(0, n, size=32).tolist()
            yield from rng.integers(0, n, size=self.num_samples % 32).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`; the last one is short unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


class SubsetRandomSampler(Sampler):
    """The given indices in a fresh random order per pass."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator
        _rng(generator, "SubsetRandomSampler()")

    def __iter__(self):
        for i in _rng(self.generator, "SubsetRandomSampler()").permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to `weights` (torch.multinomial's rules)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = np.asarray(weights.tolist() if isinstance(weights, Tensor) else weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        _rng(generator, "WeightedRandomSampler()")
        self.weights = _torch().tensor(weights)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self):
        torch = _torch()
        yield from torch.multinomial(self.weights, self.num_samples, self.replacement,
                                     generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


def _positive_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > 0


def _rng(generator, where):
    """The NumPy Generator that shuffles: the torch.Generator's (or NumPy Generator) given, or minifp's global
    stream when it is None."""
    if generator is None:
        return rng()
    if isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, Generator):
        return generator.rng
    raise TypeError(f"{where}: generator must be None (the global stream, minifp.torch.manual_seed), a "
                    f"torch.Generator or a numpy.random.Generator, got {type(generator).__name__}")


def _pass_rng(generator, where):
    """The stream one pass of a sampler draws from: the generator's, or (as PyTorch does) a new stream seeded by
    one draw of the global one, so that the global stream moves once per pass however many indices are taken."""
    if generator is None:
        return new_stream(int(rng().integers(2 ** 63)))
    return _rng(generator, where)


def get_worker_info():
    """None: minifp loads every batch in the calling process, as PyTorch's main process does."""
    return None


# -- collate --------------------------------------------------------------------------------


def default_convert(data):
    """NumPy arrays and scalars inside `data` (also in dicts, lists, tuples) become tensors; the rest stays."""
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "bytes_", "string_"):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str):
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuilt_mapping(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuilt(data, [default_convert(d) for d in data])
    return data


def default_collate(batch):
    """PyTorch's default collate: tensors stacked on a new first dimension, NumPy arrays and numbers made
    tensors (Python ints int64; Python floats torch.float64, which is float32 in minifp), strings kept as a list,
    dicts, namedtuples and sequences collated per key or position (a tuple gives a list, as in PyTorch)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _torch().stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _STRING_OR_OBJECT.search(elem.dtype.str):
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return default_collate([_as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        return _as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        torch = _torch()
        return torch.tensor(batch, dtype=getattr(torch, "float64", torch.float32))
    if isinstance(elem, int):
        return _torch().tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuilt_mapping(elem, {k: default_collate([d[k] for d in batch]) for k in elem})
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        if isinstance(elem, tuple) and hasattr(elem, "_fields"):
            return type(elem)(*(default_collate(s) for s in zip(*batch)))
        columns = [default_collate(s) for s in zip(*batch)]     # (each a tuple: a column of strings stays one)
        if isinstance(elem, tuple):
            return columns                               # PyTorch returns a list here (backwards compatibility)
        return _rebuilt(elem, columns)
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def _rebuilt_mapping(like, values):
    """A mapping of `like`'s class (and extra attributes) holding `values` (a dict when it cannot be rebuilt)."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        return type(like)(values)
    except TypeError:
        return values


def _rebuilt(like, items):
    """A sequence of `like`'s class holding `items` (a plain list when that class cannot be rebuilt)."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(like)(items)
    except TypeError:
        return items


def _as_tensor(array):
    """A face tensor of a NumPy array or scalar, keeping its dtype (torch.as_tensor)."""
    torch = _torch()
    return torch.as_tensor(np.asarray(array)) if hasattr(torch, "as_tensor") else torch.from_numpy(np.asarray(array))


# -- the loader -----------------------------------------------------------------------------


class DataLoader:
    """Batches of a dataset: PyTorch's signature, checks, samplers and default collate, in this process."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        _check_workers(num_workers, timeout, prefetch_factor, persistent_workers)
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                                     f"{name}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif batch_size is not None and iterable:
            BatchSampler([], batch_size, drop_last)       # the same checks of batch_size and drop_last
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.prefetch_factor = num_workers, (2 if num_workers > 0 and prefetch_factor is None
                                                               else prefetch_factor)
        self.pin_memory, self.pin_memory_device, self.timeout = pin_memory, pin_memory_device, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.persistent_workers, self.in_order = persistent_workers, in_order
        self._batched = batch_size is not None or batch_sampler is not None
        self.collate_fn = collate_fn or (default_collate if self._batched else default_convert)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            return self._iterable()
        if not self._batched:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return (self._batch(indices) for indices in self.batch_sampler)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return len(self.batch_sampler if self._batched else self.sampler)

    def _batch(self, indices):
        """The collated samples at `indices`."""
        if type(self.dataset) is TensorDataset and self.collate_fn is default_collate:
            return self.dataset._rows(indices)            # what stacking the rows gives, without a stack per batch
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(indices) if getitems else [self.dataset[i] for i in indices]
        return self.collate_fn(samples)

    def _iterable(self):
        """An IterableDataset's samples in batches of batch_size (or one by one when batch_size is None)."""
        if self.batch_size is None:
            yield from (self.collate_fn(s) for s in self.dataset)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers):
    """PyTorch's checks of the worker options (which change nothing here: loading runs in this process)."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to "
                         "enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


from . import dataloader, dataset, distributed, sampler  # noqa: E402  (PyTorch's submodules; they import names above)
from .distributed import DistributedSampler  # noqa: E402

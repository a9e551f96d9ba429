"""keras.utils's data helpers: PyDataset (alias Sequence), split_dataset, timeseries_dataset_from_array.

The datasets returned are minifp.keras's Dataset (tf.data.Dataset's methods: batch, shuffle, take, iteration,
as_numpy_iterator), which fit(), evaluate(), predict() and a for-loop take.
"""
from __future__ import annotations

import itertools
import random
import warnings

import numpy as np

from ._dataset import Dataset

__all__ = ["PyDataset", "Sequence", "split_dataset", "timeseries_dataset_from_array"]


def _setting(attr, doc):
    """A PyDataset setting Keras keeps: reading it warns where the subclass skipped super().__init__()."""
    def get(self):
        self._warn_if_super_not_called()
        return getattr(self, attr)

    def set(self, value):
        setattr(self, attr, value)
    return property(get, set, doc=doc)


class PyDataset:
    """Keras 3's PyDataset: subclass it with `__len__` (or `num_batches`) and `__getitem__(index)` returning a
    batch (x,), (x, y) or (x, y, sample_weight); `on_epoch_begin` / `on_epoch_end` are called around each epoch.
    `workers`, `use_multiprocessing` and `max_queue_size` are accepted and kept; minifp reads batches in order,
    in the calling thread."""

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self._workers, self._use_multiprocessing, self._max_queue_size = workers, use_multiprocessing, max_queue_size

    def _warn_if_super_not_called(self):
        missing = False
        for attr, default in (("_workers", 1), ("_use_multiprocessing", False), ("_max_queue_size", 10)):
            if not hasattr(self, attr):
                setattr(self, attr, default)
                missing = True
        if missing:
            warnings.warn("Your `PyDataset` class should call `super().__init__(**kwargs)` in its constructor. "
                          "`**kwargs` can include `workers`, `use_multiprocessing`, `max_queue_size`. Do not pass "
                          "these arguments to `fit()`, as they will be ignored.", stacklevel=3)

    workers = _setting("_workers", "How many workers Keras would use (kept; minifp reads in the calling thread).")
    use_multiprocessing = _setting("_use_multiprocessing", "Whether Keras would use processes (kept; no effect in "
                                                          "minifp).")
    max_queue_size = _setting("_max_queue_size", "Keras's prefetch queue length (kept; no effect in minifp).")

    def __getitem__(self, index):
        """The batch at `index` (to be written by the subclass)."""
        raise NotImplementedError

    @property
    def num_batches(self):
        """The number of batches (len(self)), or None for an endless dataset."""
        if hasattr(self, "__len__"):
            return len(self)
        raise NotImplementedError("You need to implement the `num_batches` property:\n\n"
                                  "@property\ndef num_batches(self):\n  return ...")

    def __iter__(self):
        try:
            n = self.num_batches
        except NotImplementedError:
            n = None
        for index in itertools.count() if n is None else range(n):
            yield self[index]

    def on_epoch_begin(self):
        """Called at the start of every epoch."""

    def on_epoch_end(self):
        """Called at the end of every epoch."""


Sequence = PyDataset        # Keras 3's keras.utils.Sequence is PyDataset


def epochs_of(py_dataset, shuffle):
    """A re-iterable over a PyDataset's batches for fit/evaluate/predict: each pass is an epoch between
    on_epoch_begin and on_epoch_end, in an order shuffled by minifp's generator when `shuffle` (Keras's
    PyDatasetAdapter shuffles the batch order; an endless one is read in order, with Keras's warning)."""
    if shuffle and py_dataset.num_batches is None:
        warnings.warn("`shuffle=True` was passed, but will be ignored since the data `x` was provided as an infinite "
                      "PyDataset. The PyDataset is expected to already be shuffled.", stacklevel=4)
        shuffle = False
    return _Epochs(py_dataset, shuffle)


class _Epochs:
    def __init__(self, py_dataset, shuffle):
        self.py_dataset, self.shuffle = py_dataset, shuffle

    def __len__(self):
        n = self.py_dataset.num_batches
        if n is None:
            raise TypeError("endless PyDataset")
        return n

    def __iter__(self):
        from ...engine import rng
        ds = self.py_dataset
        n = ds.num_batches
        ds.on_epoch_begin()
        order = itertools.count() if n is None else rng().permutation(n) if self.shuffle else range(n)
        for index in order:
            yield ds[int(index)]
        ds.on_epoch_end()


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None, preferred_backend=None):
    """Two Datasets of a dataset's samples: the first `left_size`, the last `right_size` (an int counts samples,
    a float is a fraction; one may be None: the rest). `dataset` is an array, a tuple/list of arrays of one
    length, or a Dataset. With shuffle, Python's `random` seeded with `seed` shuffles them, as in Keras."""
    if isinstance(dataset, np.ndarray):
        samples = list(dataset)
    elif isinstance(dataset, (tuple, list)):
        samples = list(zip(*[np.asarray(a) for a in dataset]))
    elif isinstance(dataset, Dataset):
        samples = list(dataset._make())
    else:
        raise TypeError(f"Unsupported dataset type: {type(dataset)}")
    if left_size is None and right_size is None:
        raise ValueError("At least one of the `left_size` or `right_size` must be specified. Received: "
                         "left_size=None and right_size=None")
    if shuffle:
        random.seed(random.randint(0, int(1e6)) if seed is None else seed)
        random.shuffle(samples)
    left, right = _split_sizes(left_size, right_size, len(samples))
    return _from_samples(samples[:left]), _from_samples(samples[-right:])


def _from_samples(samples):
    """A Dataset of samples: tuples stacked component by component, arrays stacked."""
    if isinstance(samples[0], tuple):
        return Dataset.from_tensor_slices(tuple(np.array(c) for c in zip(*samples)))
    return Dataset.from_tensor_slices(np.array(samples))


def _split_sizes(left, right, total):
    """Keras's checks and rounding of split_dataset's sizes -> (left, right) sample counts."""
    lt, rt = type(left), type(right)
    if left is not None and lt not in (int, float) and right is not None and rt not in (int, float):
        raise TypeError(f"Invalid `left_size` and `right_size` Types. Expected: integer or float or None, "
                        f"Received: type(left_size)={lt} and type(right_size)={rt}")
    if left is not None and lt not in (int, float):
        raise TypeError(f"Invalid `left_size` Type. Expected: int or float or None, Received: type(left_size)={lt}.  ")
    if right is not None and rt not in (int, float):
        raise TypeError(f"Invalid `right_size` Type. Expected: int or float or None,Received: type(right_size)={rt}.")
    if left == 0 and right == 0:
        raise ValueError("Both `left_size` and `right_size` are zero. At least one of the split sizes must be "
                         "non-zero.")
    if (lt is int and not 0 < left < total) or (lt is float and not 0 < left < 1):
        raise ValueError(f"`left_size` should be either a positive integer smaller than {total}, or a float within "
                         f"the range `[0, 1]`. Received: left_size={left}")
    if (rt is int and not 0 < right < total) or (rt is float and not 0 < right < 1):
        raise ValueError(f"`right_size` should be either a positive integer and smaller than {total} or a float "
                         f"within the range `[0, 1]`. Received: right_size={right}")
    if lt is rt is float and left + right > 1:
        raise ValueError("The sum of `left_size` and `right_size` is greater than 1. It must be less than or equal "
                         "to 1.")
    left = round(left * total) if lt is float else None if left is None else float(left)
    right = round(right * total) if rt is float else None if right is None else float(right)
    left = total - right if left is None else left
    right = total - left if right is None else right
    if left + right > total:
        raise ValueError(f"The sum of `left_size` and `right_size` should be smaller than the {total}. Received: "
                         f"left_size + right_size = {left + right}and total_length = {total}")
    for split, side in ((left, "left"), (right, "right")):
        if split == 0:
            raise ValueError(f"With `dataset` of length={total}, `left_size`={left} and `right_size`={right}."
                             f"Resulting {side} side dataset split will be empty. Adjust any of the "
                             f"aforementioned parameters")
    return int(left), int(right)


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None,
                                  format="tf"):
    """A Dataset of sliding windows over `data` (rows start_index..end_index): each `sequence_length` steps
    `sampling_rate` apart, windows `sequence_stride` apart, with targets[start_index + window start] when
    targets is given, in batches of `batch_size` (None: single windows). Shuffled windows are in the order
    Keras's NumPy RandomState(seed) gives them; Keras then shuffles again in tf.data (minifp: its generator)."""
    n = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"`start_index` must be 0 or greater. Received: start_index={start_index}")
        if start_index >= n:
            raise ValueError(f"`start_index` must be lower than the length of the data. Received: "
                             f"start_index={start_index}, for data of length {n}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: start_index={start_index}, "
                             f"and end_index={end_index} ")
        if end_index >= n:
            raise ValueError(f"`end_index` must be lower than the length of the data. Received: "
                             f"end_index={end_index}, for data of length {n}")
        if end_index <= 0:
            raise ValueError(f"`end_index` must be higher than 0. Received: end_index={end_index}")
    for name, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if value <= 0:
            raise ValueError(f"`{name}` must be higher than 0. Received: {name}={value}")
        if value >= n:
            raise ValueError(f"`{name}` must be lower than the length of the data. Received: {name}={value}, "
                             f"for data of length {n}")
    if format not in ("tf", "grain"):
        raise ValueError(f'`format` should be either "tf" or "grain". Received: format={format}')
    start, end = start_index or 0, n if end_index is None else end_index
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    starts = np.arange(0, num_seqs, sequence_stride)
    if shuffle:
        np.random.RandomState(np.random.randint(1e6) if seed is None else seed).shuffle(starts)
    windows = starts[:, None] + np.arange(sequence_length) * sampling_rate
    x = np.asarray(data[start:end])[windows]
    dataset = Dataset.from_tensor_slices(x if targets is None else (x, np.asarray(targets[start:end])[starts]))
    if shuffle:
        dataset = dataset.shuffle(1024 if batch_size is None else batch_size * 8, seed=seed)
    return dataset if batch_size is None else dataset.batch(batch_size)

"""tf.data.Dataset: minifp.keras's dataset (the one keras.utils returns, minifp/keras/utils/_dataset.py) with
elements converted as tf.constant converts them."""
from __future__ import annotations

from ..keras.utils._dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset as _KerasDataset
from . import _ops

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]


class Dataset(_KerasDataset):
    """tf.data.Dataset: from_tensor_slices, shuffle, batch, map, repeat, take, prefetch, cache, iteration."""

    _convert = staticmethod(_ops.convert_to_tensor)

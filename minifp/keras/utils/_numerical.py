"""keras.utils's array helpers: to_categorical, normalize, pad_sequences, set_random_seed (NumPy, as Keras's)."""
from __future__ import annotations

import random

import numpy as np

from ...engine import Tensor as _EngineTensor, manual_seed
from .._tensor import convert_to_tensor

__all__ = ["to_categorical", "normalize", "pad_sequences", "set_random_seed"]


def to_categorical(x, num_classes=None):
    """Class indices -> one-hot float rows (a trailing axis of 1 is dropped); a tensor gives a float32 tensor."""
    if isinstance(x, _EngineTensor):
        return convert_to_tensor(to_categorical(np.asarray(x.numpy()), num_classes), "float32")
    x = np.array(x, dtype="int64")
    shape = x.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    x = x.reshape(-1)
    num_classes = num_classes or int(np.max(x)) + 1
    out = np.zeros((x.shape[0], num_classes))
    out[np.arange(x.shape[0]), x] = 1       # an index out of range raises NumPy's IndexError, as in Keras
    return out.reshape(shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    """x divided by its `order`-norm along `axis` (zero norms left as 1); an array stays an array of its dtype."""
    if not isinstance(x, np.ndarray):
        values = np.asarray(x.numpy() if isinstance(x, _EngineTensor) else x, dtype=np.float32)
        return convert_to_tensor(normalize(values, axis, order), getattr(x, "dtype", None) or "float32")
    norm = np.atleast_1d(np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / np.expand_dims(norm, axis or -1)     # axis 0 expands as -1, as Keras does


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0):
    """A list of sequences as one (num_samples, maxlen, ...) array: padded with `value` and truncated to
    `maxlen` ("pre": at the start, "post": at the end), in `dtype`."""
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    lengths, sample_shape = [], None
    for s in sequences:
        try:
            lengths.append(len(s))
        except TypeError as e:
            raise ValueError(f"`sequences` must be a list of iterables. Found non-iterable: {s}") from e
        if sample_shape is None and len(s):
            sample_shape = np.asarray(s).shape[1:]      # the first non-empty sequence sets each step's shape
    sample_shape = sample_shape or ()
    if maxlen is None:
        maxlen = np.max(lengths)
    is_str = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_)
    if isinstance(value, str) and dtype is not object and not is_str:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: {type(value)}\nYou should set "
                         f"`dtype=object` for variable length strings.")
    out = np.full((len(sequences), maxlen) + sample_shape, value, dtype=dtype)
    for i, s in enumerate(sequences):
        if not len(s):
            continue
        if truncating not in ("pre", "post"):
            raise ValueError(f'Truncating type "{truncating}" not understood')
        kept = np.asarray(s[-maxlen:] if truncating == "pre" else s[:maxlen], dtype=dtype)
        if kept.shape[1:] != sample_shape:
            raise ValueError(f"Shape of sample {kept.shape[1:]} of sequence at position {i} is different from "
                             f"expected shape {sample_shape}")
        if padding == "post":
            out[i, :len(kept)] = kept
        elif padding == "pre":
            out[i, -len(kept):] = kept
        else:
            raise ValueError(f'Padding type "{padding}" not understood')
    return out


def set_random_seed(seed):
    """Seed Python's `random`, NumPy's global generator and minifp's generator (weights, dropout, shuffling,
    keras.random), as keras.utils.set_random_seed seeds Python, NumPy and the backend."""
    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed} (of type {type(seed)})")
    random.seed(seed)
    np.random.seed(seed)
    manual_seed(seed)

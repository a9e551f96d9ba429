"""keras.datasets.cifar10: CIFAR-10 from Keras's cache (Python batches) or the binary version, or downloaded.

Keras's batches are Python pickles. minifp never unpickles them with pickle's full powers: its unpickler
resolves only the three NumPy names an array needs (numpy.ndarray, numpy.dtype, multiarray._reconstruct),
refuses the object dtype (whose elements would be unpickled in turn) and every other global, so a tampered
file cannot run code; the result is then checked to be a batch (uint8 data (n, 3072), labels 0-9). The binary
version (cifar-10-batches-bin, a plain byte format) is read with minifp.datasets.load_cifar_binary.
"""
from __future__ import annotations

import os
import pickle

import numpy as np

from ..backend import image_data_format

__all__ = ["load_data"]

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
_TARGET = "cifar-10-batches-py-target"             # Keras >= 3.6: datasets/<this>/cifar-10-batches-py/
_TRAIN = [f"data_batch_{i}" for i in range(1, 6)]
_TEST = "test_batch"


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images (n, 32, 32, 3) (channels_last) and labels (n, 1)."""
    from . import _datadir, _download
    datadir = _datadir()
    for folder in (os.path.join(datadir, _TARGET, "cifar-10-batches-py"),     # Keras 3.6 and later
                   os.path.join(datadir, "cifar-10-batches-py")):             # older Keras and tf.keras
        if os.path.isfile(os.path.join(folder, _TEST)):
            return _finish(*_read_python(folder))
    binary = os.path.join(datadir, "cifar-10-batches-bin")
    if os.path.isfile(os.path.join(binary, f"{_TEST}.bin")):
        return _finish(*_read_binary(binary))
    archive = os.path.join(datadir, f"{_TARGET}_archive")                     # where Keras downloads it
    if not os.path.exists(archive):
        _download(_ORIGIN, archive, _SHA256, "cifar10.load_data()")
    from ... import datasets
    datasets.extract_tar(archive, os.path.join(datadir, _TARGET))
    return _finish(*_read_python(os.path.join(datadir, _TARGET, "cifar-10-batches-py")))


def _finish(x_train, y_train, x_test, y_test):
    """Keras's shapes: labels (n, 1) uint8; images NHWC unless the image data format is channels_first."""
    if _image_data_format() == "channels_first":
        x_train, x_test = x_train.transpose(0, 3, 1, 2), x_test.transpose(0, 3, 1, 2)
    return ((np.ascontiguousarray(x_train), y_train.astype(np.uint8).reshape(-1, 1)),
            (np.ascontiguousarray(x_test), y_test.astype(np.uint8).reshape(-1, 1)))


def _image_data_format():
    return image_data_format()


def _read_python(folder):
    """The five training batches and the test batch of Keras's cifar-10-batches-py folder, as NHWC uint8."""
    train = [_load_batch(os.path.join(folder, name)) for name in _TRAIN]
    x_test, y_test = _load_batch(os.path.join(folder, _TEST))
    return (np.concatenate([x for x, _ in train]), np.concatenate([y for _, y in train]), x_test, y_test)


def _read_binary(folder):
    """The same from the binary version (data_batch_1.bin, ..., test_batch.bin)."""
    from ... import datasets
    train = [datasets.load_cifar_binary(os.path.join(folder, f"{name}.bin")) for name in _TRAIN]
    x_test, y_test = datasets.load_cifar_binary(os.path.join(folder, f"{_TEST}.bin"))
    return (np.concatenate([x for x, _ in train]), np.concatenate([y for _, y in train]), x_test, y_test)


# -- the Python batches, read without running code -----------------------------------------------------------------

_RECONSTRUCT = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct")}


def _reconstruct(subtype, shape, dtype):
    """numpy's array reconstructor, for plain ndarrays only (no subclass whose methods could run)."""
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError(f"refusing to rebuild an array of class {subtype!r}")
    return np.ndarray.__new__(np.ndarray, shape, dtype)


def _dtype(spec, *args):
    """numpy.dtype for numeric types only: an object dtype would unpickle its elements."""
    dtype = np.dtype(spec)
    if dtype.kind not in "biuf":
        raise pickle.UnpicklingError(f"refusing the dtype {spec!r} in a CIFAR batch (numbers only)")
    return np.dtype(spec, *args)


class _BatchUnpickler(pickle.Unpickler):
    """Resolves only the names a NumPy array needs; every other global is refused."""

    def find_class(self, module, name):
        if (module, name) in _RECONSTRUCT:
            return _reconstruct
        if (module, name) == ("numpy", "ndarray"):
            return np.ndarray
        if (module, name) == ("numpy", "dtype"):
            return _dtype
        raise pickle.UnpicklingError(f"Refusing to deserialize `{module}.{name}` while loading a Keras dataset. "
                                     f"The file may be corrupted or malicious.")


def _load_batch(path):
    """(images uint8 (n, 32, 32, 3), labels uint8 (n,)) from one Python batch, checked."""
    where = f"cifar10.load_data(): {path!r}"
    try:
        with open(path, "rb") as f:
            batch = _BatchUnpickler(f, encoding="bytes").load()
    except FileNotFoundError:
        raise FileNotFoundError(f"{where}: missing (a CIFAR-10 folder holds {', '.join(_TRAIN)} and "
                                f"{_TEST})") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(f"{where}: not a CIFAR-10 batch ({e})") from None
    if not isinstance(batch, dict):
        raise ValueError(f"{where}: not a CIFAR-10 batch (a {type(batch).__name__}, expected a dict)")
    batch = {k.decode("utf8") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    data, labels = batch.get("data"), batch.get("labels")
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{where}: 'data' must be a uint8 array (n, 3072)")
    labels = np.asarray(labels if labels is not None else [], dtype=np.int64)
    if labels.shape != (len(data),) or labels.min(initial=0) < 0 or labels.max(initial=0) > 9:
        raise ValueError(f"{where}: 'labels' must be {len(data)} integers 0-9")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return images, labels.astype(np.uint8)

"""Data that works offline: the bundled digits, IDX files a user has, and small synthetic sets."""
from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

__all__ = ["load_digits", "load_idx", "make_classification", "make_regression"]

# IDX type codes -> big-endian dtypes (the format of the MNIST files).
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def load_digits(test_size=360, seed=0):
    """scikit-learn's 8x8 digits as ((x_train, y_train), (x_test, y_test)); x float32 in [0, 1], shape (n, 8, 8).

    The split is fixed: a permutation drawn from `seed`, the last `test_size` images for testing
    (1,437 train and 360 test by default).
    """
    with resources.files("minifp").joinpath("data/digits.npz").open("rb") as f:
        data = np.load(f, allow_pickle=False)
        images, labels = data["images"], data["labels"].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    x = images[order].astype(np.float32) / np.float32(16)
    y = labels[order]
    cut = len(y) - test_size
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def load_idx(path):
    """An array from an IDX file (the MNIST format), gzip-compressed or not; checks its header and size."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path}: not an IDX file (it must start with two zero bytes, a type code and the "
                         f"number of dimensions)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"{path}: unknown IDX type code 0x{code:02x}; valid codes: "
                         f"{', '.join(f'0x{c:02x}' for c in _IDX_TYPES)}")
    if len(raw) < 4 + 4 * ndim:
        raise ValueError(f"{path}: truncated header: {ndim} dimensions need {4 + 4 * ndim} bytes, file has {len(raw)}")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    dtype = np.dtype(_IDX_TYPES[code])
    expected = int(np.prod(shape)) * dtype.itemsize
    body = raw[4 + 4 * ndim:]
    if len(body) != expected:
        raise ValueError(f"{path}: the header promises shape {shape} of {dtype.name} ({expected} bytes), but the "
                         f"file holds {len(body)} bytes of data ({'truncated' if len(body) < expected else 'extra'})")
    return np.frombuffer(body, dtype).reshape(shape).astype(dtype.newbyteorder("="))


def make_classification(n=512, features=10, classes=3, seed=0, separation=2.0):
    """Gaussian blobs, one per class: (x float32 (n, features), y int64 (n,))."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, features)) * separation
    y = rng.integers(0, classes, n)
    x = centers[y] + rng.standard_normal((n, features))
    return x.astype(np.float32), y.astype(np.int64)


def make_regression(n=512, features=10, noise=0.1, seed=0):
    """y = x @ w + noise: (x float32 (n, features), y float32 (n, 1))."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features))
    y = x @ rng.standard_normal((features, 1)) + noise * rng.standard_normal((n, 1))
    return x.astype(np.float32), y.astype(np.float32)

"""Data that works offline: the bundled digits, IDX files a user has, and small synthetic sets."""
from __future__ import annotations

import gzip
import hashlib
import math
import os
import shutil
import tarfile
import tempfile
import urllib.request
import zlib
from importlib import resources

import numpy as np

from . import _checks

__all__ = ["download", "extract_tar", "file_md5", "load_cifar_binary", "load_digits", "load_idx",
           "make_classification", "make_regression"]

# IDX type codes -> big-endian dtypes (the format of the MNIST files).
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_CHUNK = 1 << 20     # bytes read at a time from an IDX file


def load_digits(test_size=360, seed=0):
    """scikit-learn's 8x8 digits as ((x_train, y_train), (x_test, y_test)); x float32 in [0, 1], shape (n, 8, 8).

    The split is fixed: a permutation drawn from `seed`, the last `test_size` images for testing
    (1,437 train and 360 test by default).
    """
    with resources.files("minifp").joinpath("data/digits.npz").open("rb") as f:
        data = np.load(f, allow_pickle=False)
        images, labels = data["images"], data["labels"].astype(np.int64)
    _checks.integer("test_size", test_size, lo=0, hi=len(labels) - 1, where="load_digits(): ")   # keep a train set
    _checks.integer("seed", seed, lo=0, where="load_digits(): ")
    order = np.random.default_rng(seed).permutation(len(labels))
    x = images[order].astype(np.float32) / np.float32(16)
    y = labels[order]
    cut = len(y) - test_size
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def load_idx(path):
    """An array from an IDX file (the MNIST format), gzip-compressed or not; checks its header and size.

    The file is streamed: the header is checked first and then exactly the bytes it promises are read,
    so a bad or lying file is refused without decompressing all of it.
    """
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"load_idx(): path must be a file path (str or os.PathLike), got {type(path).__name__}")
    where = f"load_idx(path={os.fsdecode(path)!r})"
    try:
        f = open(path, "rb")
    except IsADirectoryError:
        raise IsADirectoryError(f"{where}: a directory, not an IDX file") from None
    except OSError as e:
        raise type(e)(f"{where}: cannot open the file: {e.strerror}") from None
    with f:
        gzipped = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        try:
            return _read_idx(gzip.GzipFile(fileobj=f) if gzipped else f, where)
        except (EOFError, OSError, zlib.error) as e:        # a truncated or corrupt gzip stream
            raise ValueError(f"{where}: the gzip stream is truncated or corrupt ({e})") from None


def _read_idx(stream, where):
    """The array in an IDX stream: header first, then exactly the promised data."""
    head = _read(stream, 4)
    if len(head) < 4 or head[0] != 0 or head[1] != 0:
        raise ValueError(f"{where}: not an IDX file (it must start with two zero bytes, a type code and the "
                         f"number of dimensions)")
    code, ndim = head[2], head[3]
    if code not in _IDX_TYPES:
        raise ValueError(f"{where}: unknown IDX type code 0x{code:02x}; valid codes: "
                         f"{', '.join(f'0x{c:02x}' for c in _IDX_TYPES)}")
    dims = _read(stream, 4 * ndim)
    if len(dims) < 4 * ndim:
        raise ValueError(f"{where}: truncated header: {ndim} dimensions need {4 + 4 * ndim} bytes, file has "
                         f"{4 + len(dims)}")
    shape = tuple(int.from_bytes(dims[i:i + 4], "big") for i in range(0, 4 * ndim, 4))
    dtype = np.dtype(_IDX_TYPES[code])
    count = math.prod(shape)                     # Python ints: a lying header cannot overflow the check
    if count > np.iinfo(np.intp).max // dtype.itemsize:
        raise ValueError(f"{where}: the header declares shape {shape}, {count} elements: more than an array can hold")
    expected = count * dtype.itemsize
    body = _read(stream, expected)
    if len(body) < expected:
        raise ValueError(f"{where}: the header promises shape {shape} of {dtype.name} ({expected} bytes), but the "
                         f"file holds {len(body)} bytes of data (truncated)")
    if stream.read(1):
        raise ValueError(f"{where}: the header promises shape {shape} of {dtype.name} ({expected} bytes), but the "
                         f"file holds more data (extra)")
    return np.frombuffer(body, dtype).reshape(shape).astype(dtype.newbyteorder("="))


def _read(stream, n):
    """Up to n bytes, in chunks: a header promising more than the file holds costs no memory."""
    parts = []
    while n > 0:
        part = stream.read(min(n, _CHUNK))
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def load_cifar_binary(path, image_shape=(3, 32, 32)):
    """(images uint8 (n, 32, 32, 3) HWC, labels int64 (n,)) from a CIFAR-10 binary batch (data_batch_1.bin, ...).

    The binary version (cifar-10-binary.tar.gz) is a plain byte format: records of one label byte, then the
    3,072 pixel bytes of one image (1,024 red, 1,024 green, 1,024 blue, each 32x32 row-major). minifp reads
    it instead of the Python version, whose batches are pickles (loading a pickle can run code).
    """
    where = f"load_cifar_binary(path={os.fsdecode(path)!r})"
    try:
        with open(path, "rb") as f:
            raw = np.frombuffer(f.read(), np.uint8)
    except OSError as e:
        raise type(e)(f"{where}: cannot read the file: {e.strerror}") from None
    record = 1 + math.prod(image_shape)
    if raw.size == 0 or raw.size % record:
        raise ValueError(f"{where}: {raw.size} bytes is not a whole number of {record}-byte records (one label "
                         f"byte and {record - 1} pixel bytes each); is this a CIFAR-10 binary batch?")
    rows = raw.reshape(-1, record)
    labels = rows[:, 0].astype(np.int64)
    if labels.max() > 9:
        raise ValueError(f"{where}: record {int(np.argmax(labels > 9))} has label {int(labels.max())}; CIFAR-10 "
                         f"labels are 0-9 (is this a CIFAR-100 file? its records hold two label bytes)")
    images = rows[:, 1:].reshape((-1,) + tuple(image_shape)).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def download(urls, path, md5=None, timeout=60):
    """Fetch the first of `urls` that answers into `path` (written atomically) and check its MD5 checksum.

    Each URL is tried in turn; the file appears at `path` only once it is complete and its checksum
    matches, so an interrupted or corrupted download never leaves a file that looks finished.
    """
    urls = [urls] if isinstance(urls, str) else list(urls)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    errors = []
    for url in urls:
        fd, tmp = tempfile.mkstemp(prefix=".download-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
                shutil.copyfileobj(response, out, _CHUNK)
            got = file_md5(tmp)
            if md5 is not None and got != md5:
                raise ValueError(f"checksum mismatch: MD5 {got}, expected {md5}")
            os.replace(tmp, path)
            return path
        except (OSError, ValueError) as e:       # URLError and timeouts are OSErrors: try the next mirror
            errors.append(f"{url}: {e}")
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    raise RuntimeError(f"download(): could not fetch {os.path.basename(path)}:\n  " + "\n  ".join(errors))


def file_md5(path):
    """The MD5 hex digest of a file, read in chunks."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def extract_tar(archive, folder):
    """Extract a .tar(.gz) into `folder`, refusing members that are not plain files or folders inside it."""
    folder = os.path.abspath(folder)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        for m in members:                  # checked before anything is written
            target = os.path.abspath(os.path.join(folder, m.name))
            if not (m.isfile() or m.isdir()) or os.path.commonpath([folder, target]) != folder:
                raise ValueError(f"extract_tar(): {os.fsdecode(archive)!r} holds {m.name!r}, which is not a plain "
                                 f"file or folder inside the archive; refusing to extract it")
        for m in members:
            target = os.path.join(folder, m.name)
            if m.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with tar.extractfile(m) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)


def make_classification(n=512, features=10, classes=3, seed=0, separation=2.0):
    """Gaussian blobs, one per class: (x float32 (n, features), y int64 (n,))."""
    _checks.sizes("make_classification(): ", n=n, features=features, classes=classes)
    _checks.integer("seed", seed, lo=0, where="make_classification(): ")
    _checks.number("separation", separation, lo=0, where="make_classification(): ")
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, features)) * separation
    y = rng.integers(0, classes, n)
    x = centers[y] + rng.standard_normal((n, features))
    return x.astype(np.float32), y.astype(np.int64)


def make_regression(n=512, features=10, noise=0.1, seed=0):
    """y = x @ w + noise: (x float32 (n, features), y float32 (n, 1))."""
    _checks.sizes("make_regression(): ", n=n, features=features)
    _checks.integer("seed", seed, lo=0, where="make_regression(): ")
    _checks.number("noise", noise, lo=0, where="make_regression(): ")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features))
    y = x @ rng.standard_normal((features, 1)) + noise * rng.standard_normal((n, 1))
    return x.astype(np.float32), y.astype(np.float32)

"""Keras's datasets (`keras.datasets.mnist`, `keras.datasets.cifar10`): Keras's cached files, or a download.

The loaders read the files Keras keeps in `$KERAS_HOME/datasets` (default `~/.keras/datasets`), so data that
real Keras downloaded once is reused, and download Keras's files when the network allows (checked against
Keras's SHA-256 hashes, written atomically). Nothing is unpickled with pickle's full powers: mnist.npz is read
with `allow_pickle=False`, CIFAR-10's Python batches with an unpickler that can only rebuild plain numeric NumPy
arrays (or the binary version of CIFAR-10 is read when that is what the cache holds).

Offline, with no cached file, the loaders raise an error that says where to put the file; minifp's own
offline dataset stays `minifp.datasets.load_digits()` (the bundled 8x8 digits), and the examples make
MNIST- or CIFAR-shaped data themselves when the real files are absent.
"""
from __future__ import annotations

import hashlib
import os

from . import cifar10, mnist

__all__ = ["cifar10", "mnist"]


def _keras_home():
    """Keras's home folder: $KERAS_HOME, else ~/.keras (/tmp/.keras when the home folder is read-only)."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    base = os.path.expanduser("~")
    return os.path.join(base if os.access(base, os.W_OK) else "/tmp", ".keras")


def _datadir():
    """The folder Keras caches datasets in (made if missing), as keras.utils.get_file chooses it."""
    base = os.path.expanduser(_keras_home())
    if not os.access(base, os.W_OK):
        base = os.path.join("/tmp", ".keras")
    folder = os.path.join(base, "datasets")
    os.makedirs(folder, exist_ok=True)
    return folder


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(origin, target, sha256, where):
    """Fetch origin into target (atomically), checked against Keras's SHA-256; a clear error when offline."""
    from ... import datasets
    partial = f"{target}.part"
    try:
        print(f"Downloading data from {origin}")
        datasets.download(origin, partial)
        got = _sha256(partial)
        if got != sha256:
            raise ValueError(f"Incomplete or corrupted file detected. The sha256 file hash does not match the "
                             f"provided value of {sha256} (got {got}).")
        os.replace(partial, target)
    except (RuntimeError, OSError, ValueError) as e:
        raise RuntimeError(f"{where}: no cached file at {target!r} and the download failed:\n{e}\n"
                           f"Put Keras's file there (or set KERAS_HOME to a folder holding datasets/), or use "
                           f"minifp.datasets.load_digits(), minifp's offline dataset.") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return target

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.datasets")

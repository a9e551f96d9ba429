"""The global switches and markers a training script sets: memory formats, torch.compile, threads, determinism,
print options. minifp's results depend on none of them but the threads (float32 GEMMs' low bits, as in PyTorch); the
others are kept so that a script's own reads of them give back what it set."""
from __future__ import annotations

import os
import sys

import numpy as np

from ..engine import set_threads, threads
from . import _tensor

__all__ = ["memory_format", "channels_last", "contiguous_format", "preserve_format", "channels_last_3d", "compile",
           "set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_printoptions", "set_flush_denormal"]


class memory_format:
    """torch.channels_last and the other memory formats: accepted by .to() and .contiguous(); minifp's arrays
    choose their own layout (convolutions already leave theirs channels-last), and values never depend on it."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


channels_last, contiguous_format, preserve_format, channels_last_3d = (
    memory_format(n) for n in ("channels_last", "contiguous_format", "preserve_format", "channels_last_3d"))


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """The model (or function) itself: minifp has no compiler and its values do not change under one. Also a
    decorator, with or without arguments."""
    return model if model is not None else (lambda fn: fn)


_settings = {"interop": None, "deterministic": False, "warn_only": False}


def _thread_count(fn, n):
    """n if it is a positive int (a bool is not; NumPy's integers are), else PyTorch's RuntimeError."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        kind = type(n).__name__ if type(n).__module__ == "builtins" else f"{type(n).__module__}.{type(n).__name__}"
        raise RuntimeError(f"{fn} expects an int, but got {kind}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return int(n)


def set_num_threads(n):
    """The threads minifp computes on, process-wide: its kernels' parts and NumPy's OpenBLAS (its float32 GEMMs'
    low bits follow their thread split, as MKL's do under PyTorch)."""
    set_threads(_thread_count("set_num_threads", n))


def get_num_threads():
    return threads()


def set_num_interop_threads(n):
    """Kept for get_num_interop_threads (minifp runs no ops concurrently); once, as in PyTorch."""
    n = _thread_count("set_num_interop_threads", n)
    if _settings["interop"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _settings["interop"] = n


def get_num_interop_threads():
    return _settings["interop"] or os.cpu_count() or 1


def use_deterministic_algorithms(mode, *, warn_only=False):
    """minifp is deterministic already: every run of the same code gives the same bits."""
    _settings["deterministic"], _settings["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _settings["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _settings["warn_only"]


_PROFILES = {"default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
             "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
             "full": {"precision": 4, "threshold": sys.maxsize, "edgeitems": 3, "linewidth": 80}}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """How tensors print: a profile ("default", "short", "full"), then any setting given; sci_mode None: automatic."""
    if profile is not None:
        _tensor.PRINT.update(_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth}
    _tensor.PRINT.update({k: v for k, v in given.items() if v is not None}, sci_mode=sci_mode)


def set_flush_denormal(mode):
    """False: minifp keeps subnormals (they are part of what it shows), as a GPU does."""
    return False



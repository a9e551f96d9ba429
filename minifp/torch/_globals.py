"""The global switches and markers a training script sets: memory formats, torch.compile, threads, determinism,
print options. minifp's results depend on none of them; they are kept so that a script's own reads of them give
back what it set."""
from __future__ import annotations

import os

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


_settings = {"threads": int(os.environ.get("OMP_NUM_THREADS", 0)) or (os.cpu_count() or 1), "interop": 1,
             "deterministic": False, "warn_only": False}


def set_num_threads(n):
    """Kept for get_num_threads (NumPy's BLAS threads are set by OMP_NUM_THREADS before start)."""
    _settings["threads"] = int(n)


def get_num_threads():
    return _settings["threads"]


def set_num_interop_threads(n):
    _settings["interop"] = int(n)


def get_num_interop_threads():
    return _settings["interop"]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """minifp is deterministic already: every run of the same code gives the same bits."""
    _settings["deterministic"], _settings["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _settings["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _settings["warn_only"]


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Accepted; tensors print as PyTorch's defaults do."""


def set_flush_denormal(mode):
    """False: minifp keeps subnormals (they are part of what it shows), as a GPU does."""
    return False



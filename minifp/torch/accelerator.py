"""torch.accelerator (PyTorch 2.6+): the one accelerator, "cuda" (a real GPU through CuPy, or emulated)."""
from __future__ import annotations

from . import cuda
from ._device import device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize", "device_index", "empty_cache", "memory_allocated", "max_memory_allocated",
           "reset_peak_memory_stats", "memory_reserved", "max_memory_reserved", "memory_stats"]


def is_available():
    return True


def current_accelerator(check_available=False):
    """torch.device("cuda")."""
    return device("cuda")


def device_count():
    return 1


def current_device_index():
    return 0


def set_device_index(device):
    cuda.set_device(device)


set_device_idx, current_device_idx = set_device_index, current_device_index


def synchronize(device=None):
    """Nothing to wait for: every op has finished when it returns."""


class device_index:
    """A block on accelerator `device` (there is one: 0)."""

    def __init__(self, device):
        cuda.set_device(device if device is not None else 0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


(empty_cache, memory_allocated, max_memory_allocated, reset_peak_memory_stats, memory_reserved,
 max_memory_reserved, memory_stats) = (cuda.empty_cache, cuda.memory_allocated, cuda.max_memory_allocated,
                                       cuda.reset_peak_memory_stats, cuda.memory_reserved, cuda.max_memory_reserved,
                                       cuda.memory_stats)

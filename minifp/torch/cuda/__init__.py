"""torch.cuda: always available; a real GPU through CuPy where there is one, else emulated on the host.

Device queries describe the H100 the emulated device models. Memory statistics count the bytes that minifp's
tensors on the cuda device hold (each array once, views with the array they view), from the first memory query on:
every storage a cuda tensor takes is counted when it appears and until it is freed, so the peak since
reset_peak_memory_stats is exact (minifp.engine.memory_held); minifp has no caching allocator, so reserved equals
allocated.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._device import is_emulated
from ...engine import (get_random_state, manual_seed, memory_held, memory_peak, reset_memory_peak, set_random_state)
from . import amp
from .._legacy import CUDA_TYPES

globals().update(CUDA_TYPES)     # torch.cuda.FloatTensor and its kin (legacy)

__all__ = ["amp", "is_available", "is_emulated", "device_count", "current_device", "set_device", "get_device_name",
           "get_device_properties", "get_device_capability", "is_bf16_supported", "is_initialized", "init",
           "synchronize", "empty_cache", "manual_seed", "manual_seed_all", "seed", "get_rng_state",
           "set_rng_state", "memory_allocated", "max_memory_allocated", "reset_max_memory_allocated",
           "reset_peak_memory_stats", "memory_reserved", "max_memory_reserved", "reset_max_memory_cached",
           "memory_stats", "memory_summary", "mem_get_info", "Event", "Stream", "current_stream", "stream",
           "device", "OutOfMemoryError"]

H100_MEMORY = 85_045_870_592            # bytes, as torch.cuda.get_device_properties reports an H100 80GB HBM3


class OutOfMemoryError(RuntimeError):
    """torch.cuda.OutOfMemoryError."""


@dataclass(frozen=True)
class _Properties:
    name: str
    major: int = 9
    minor: int = 0
    total_memory: int = H100_MEMORY
    multi_processor_count: int = 132
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    L2_cache_size: int = 52_428_800


def is_available():
    """True: tutorial code takes its CUDA path; is_emulated() says whether a real GPU runs it."""
    return True


def is_initialized():
    return True


def init():
    """Nothing to initialise."""


def device_count():
    return 1


def current_device():
    return 0


def set_device(device):
    """Only device 0 exists."""
    index = getattr(device, "index", device)
    if isinstance(index, str):
        index = int(index.partition(":")[2] or 0)
    if index not in (None, 0):
        raise RuntimeError(f"CUDA error: invalid device ordinal (minifp has one device, cuda:0; got {device!r})")


class device:
    """A block on cuda device `device` (there is one: 0)."""

    def __init__(self, device):
        set_device(device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def get_device_name(device=None):
    return "minifp emulated CUDA device (NVIDIA H100 80GB HBM3)" if is_emulated() else "CUDA device (CuPy)"


def get_device_properties(device=None):
    return _Properties(get_device_name(device))


def get_device_capability(device=None):
    return (9, 0)


def is_bf16_supported(including_emulation=True):
    return True


def synchronize(device=None):
    """Nothing to wait for: every op has finished when it returns."""


def empty_cache():
    """Nothing cached."""


manual_seed_all = manual_seed
get_rng_state, set_rng_state = get_random_state, set_random_state


def seed():
    manual_seed(int(np.random.SeedSequence().entropy % 2**63))


# -- memory ---------------------------------------------------------------------------------------------------

def memory_allocated(device=None):
    """The bytes the storages of the live cuda tensors hold (each array once)."""
    return memory_held("cuda")


def max_memory_allocated(device=None):
    """The most bytes they held since the first memory query or the last reset_peak_memory_stats."""
    return memory_peak("cuda")


def reset_peak_memory_stats(device=None):
    reset_memory_peak("cuda")


reset_max_memory_allocated = reset_max_memory_cached = reset_peak_memory_stats
memory_reserved, max_memory_reserved = memory_allocated, max_memory_allocated


def memory_stats(device=None):
    held, peak = memory_allocated(), max_memory_allocated()
    return {"allocated_bytes.all.current": held, "allocated_bytes.all.peak": peak,
            "reserved_bytes.all.current": held, "reserved_bytes.all.peak": peak}


def memory_summary(device=None, abbreviated=False):
    return (f"minifp CUDA memory: {memory_allocated() / 2**20:.1f} MiB held by tensors, peak "
            f"{max_memory_allocated() / 2**20:.1f} MiB "
            f"(no caching allocator: reserved = allocated)")


def mem_get_info(device=None):
    """(free, total) bytes of the modelled H100."""
    return H100_MEMORY - memory_allocated(), H100_MEMORY


# -- streams and events ------------------------------------------------------------------------------------------


class Event:
    """A point in time (every op has finished when it returns, so recording is reading the clock)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing, self.at = enable_timing, None

    def record(self, stream=None):
        self.at = time.perf_counter()

    def synchronize(self):
        """Nothing to wait for."""

    def wait(self, stream=None):
        """Nothing to wait for."""

    def query(self):
        return True

    def elapsed_time(self, end_event):
        """Milliseconds from this event to end_event."""
        if not self.enable_timing or not end_event.enable_timing:
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self.at is None or end_event.at is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event.at - self.at) * 1000.0


class Stream:
    """The one stream: work runs in order, at once."""

    def __init__(self, device=None, priority=0):
        self.device, self.priority = device, priority

    def synchronize(self):
        """Nothing to wait for."""

    def wait_stream(self, other):
        """Nothing to wait for."""

    def wait_event(self, event):
        """Nothing to wait for."""

    def record_event(self, event=None):
        event = event or Event()
        event.record()
        return event

    def query(self):
        return True


_stream = Stream()


def current_stream(device=None):
    return _stream


default_stream = current_stream


class stream:
    """A block on `stream` (work still runs in order)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False

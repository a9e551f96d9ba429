"""torch.cuda: always available; a real GPU through CuPy where there is one, else emulated on the host."""
from .._device import is_emulated
from ...engine import manual_seed
from . import amp

__all__ = ["amp", "is_available", "is_emulated", "device_count", "current_device", "get_device_name",
           "is_bf16_supported", "synchronize", "empty_cache", "manual_seed", "manual_seed_all"]


def is_available():
    """True: tutorial code takes its CUDA path; is_emulated() says whether a real GPU runs it."""
    return True


def device_count():
    return 1


def current_device():
    return 0


def get_device_name(device=None):
    return "minifp emulated CUDA device" if is_emulated() else "CUDA device (CuPy)"


def is_bf16_supported(including_emulation=True):
    return True


def synchronize(device=None):
    """Nothing to wait for: every op has finished when it returns."""


def empty_cache():
    """Nothing cached."""


manual_seed_all = manual_seed

"""torch.backends.cudnn: its flags; enabled (default True) makes emulated cuda's convolutions run as cuDNN's kernels
or, when False, as PyTorch's native ones (they differ in how a bias is added); allow_tf32 (default True, as PyTorch's) rounds float32 convolutions' factors to
tf32 on the cuda device. `benchmark` and `deterministic` are kept and change nothing (minifp's results do not
depend on them)."""
from __future__ import annotations

import sys
import types

from ...engine import device_numerics, float32_products, set_device_numerics, set_float32_products, tf32

__all__ = ["is_available", "version", "enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit",
           "is_acceptable"]

benchmark = False
deterministic = False
benchmark_limit = 10


def is_available():
    return True


def version():
    """The cuDNN of the H100 recordings the emulated device is checked against (9.19.0)."""
    return 91900


def is_acceptable(tensor):
    return True


class _Module(types.ModuleType):
    """The module with allow_tf32 as a property (PyTorch's torch.backends.cudnn is such a module too)."""

    @property
    def enabled(self):
        return device_numerics("cuda").cudnn

    @enabled.setter
    def enabled(self, value):
        set_device_numerics("cuda", device_numerics("cuda").with_cudnn(value))

    @property
    def allow_tf32(self):
        return float32_products("cuda", "conv") is not None

    @allow_tf32.setter
    def allow_tf32(self, value):
        set_float32_products("cuda", "conv", tf32 if value else None)


sys.modules[__name__].__class__ = _Module
sys.modules[__name__].allow_tf32 = True         # PyTorch's default

"""torch.nn.attention: SDPBackend and sdpa_kernel, the block that picks which attention kernels may run."""
from __future__ import annotations

import contextlib
import enum

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.Enum):
    """The scaled_dot_product_attention kernels (PyTorch's values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# each backend's switch in torch.backends.cuda
_SWITCHES = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
             SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Inside the block only `backends` (one SDPBackend or a list) may run scaled_dot_product_attention."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    before = dict(_cuda._sdp)
    _cuda._sdp.update({name: backend in chosen for backend, name in _SWITCHES.items()})
    try:
        yield {}
    finally:
        _cuda._sdp.update(before)

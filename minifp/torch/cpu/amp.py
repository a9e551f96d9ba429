"""torch.cpu.amp: the CPU spelling of autocast."""
from ..amp import autocast as _autocast

__all__ = ["autocast"]


class autocast(_autocast):
    """torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

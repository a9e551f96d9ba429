"""torch.cuda.amp: the CUDA spellings of autocast and GradScaler (deprecated in PyTorch 2.4, with its warning)."""
import warnings

from ..amp import autocast as _autocast
from ..amp.grad_scaler import CudaGradScaler as GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

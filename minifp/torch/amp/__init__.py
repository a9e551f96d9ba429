"""torch.amp: autocast and GradScaler."""
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype"]

try:
    from .grad_scaler import GradScaler  # noqa: F401  (the optim helper's module)
    __all__.append("GradScaler")
except ImportError:
    pass

"""torch.amp: autocast and GradScaler."""
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "GradScaler"]

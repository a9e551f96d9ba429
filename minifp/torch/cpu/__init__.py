"""torch.cpu."""
from . import amp

__all__ = ["amp"]

"""`torch.utils`: the data-loading utilities (`minifp.torch.utils.data`) and activation checkpointing."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]

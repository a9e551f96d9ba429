"""`torch.utils`: the data-loading utilities (`minifp.torch.utils.data`)."""
from . import data

__all__ = ["data"]

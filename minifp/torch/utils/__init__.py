"""`torch.utils`: the data-loading utilities (`minifp.torch.utils.data`) and activation checkpointing;
`minifp.torch.utils.tensorboard` (SummaryWriter) is imported only when asked for, as in PyTorch, since it needs the
`tensorboard` package."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]

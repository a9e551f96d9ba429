"""torch.optim.optimizer: PyTorch's import path of Optimizer and `required`."""
from . import Optimizer, required

__all__ = ["Optimizer", "required"]

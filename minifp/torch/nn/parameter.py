"""torch.nn.parameter: PyTorch's import path of Parameter."""
from .module import Parameter

__all__ = ["Parameter"]

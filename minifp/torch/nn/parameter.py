"""torch.nn.parameter: PyTorch's import path of Parameter, UninitializedParameter and UninitializedBuffer."""
from .lazy import UninitializedBuffer, UninitializedParameter
from .module import Parameter

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer"]

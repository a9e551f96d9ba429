"""torch.nn: Module, Parameter, the layers and losses, functional, init and utils, with PyTorch's names."""
from . import functional, init, utils
from .module import Module, Parameter
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules

__all__ = ["Module", "Parameter", "functional", "init", "utils"] + _modules

"""torch.nn: Module, Parameter, the layers and losses, functional, init and utils, with PyTorch's names."""
from . import functional, init, parallel, utils
from .module import Module, Parameter
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules

from .parallel import DataParallel, DistributedDataParallel

__all__ = ["Module", "Parameter", "functional", "init", "parallel", "utils", "DataParallel",
           "DistributedDataParallel"] + _modules


from .._missing import missing as _missing  # noqa: E402
__getattr__ = _missing("minifp.torch.nn")

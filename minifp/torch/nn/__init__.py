"""torch.nn: Module, Parameter, the layers and losses, functional, init and utils, with PyTorch's names."""
from . import attention, functional, init, parallel, utils
from .module import Module, Parameter
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules
from .transformer import *  # noqa: F401,F403
from .transformer import __all__ as _transformer
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers
from .rnn import *  # noqa: F401,F403
from .rnn import __all__ as _rnn
from .more import *  # noqa: F401,F403
from .more import __all__ as _more

from .parallel import DataParallel, DistributedDataParallel

__all__ = ["Module", "Parameter", "attention", "functional", "init", "parallel", "utils", "DataParallel",
           "DistributedDataParallel"] + _modules + _transformer + _layers + _rnn + _more


from .._missing import missing as _missing  # noqa: E402
__getattr__ = _missing("minifp.torch.nn")

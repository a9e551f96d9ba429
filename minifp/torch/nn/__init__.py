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
from .lazy import *  # noqa: F401,F403
from .lazy import __all__ as _lazy
from .lazy import UninitializedBuffer, UninitializedParameter
from . import parameter

from .parallel import DataParallel, DistributedDataParallel

__all__ = ["Module", "Parameter", "UninitializedParameter", "UninitializedBuffer", "attention", "functional", "init",
           "parallel", "parameter", "utils", "DataParallel", "DistributedDataParallel"] + _modules + _transformer + \
    _layers + _rnn + _more + _lazy


from .._missing import missing as _missing  # noqa: E402
__getattr__ = _missing("minifp.torch.nn")


def _paths():
    """PyTorch's import paths under torch.nn.modules (torch.nn.modules.batchnorm, .loss, .conv, ...) that scripts
    import from: each a module holding all of torch.nn, the layers' private bases and modules.utils's _pair."""
    import itertools
    import sys
    import types
    from . import layers, lazy, modules

    def ntuple(n):
        return lambda x: tuple(x) if isinstance(x, (list, tuple)) else tuple(itertools.repeat(x, n))
    names = {n: globals()[n] for n in __all__}
    names.update(_BatchNorm=modules._BatchNorm, _NormBase=modules._BatchNorm, _Loss=modules._Loss,
                 _WeightedLoss=modules._WeightedLoss, _ConvNd=layers._ConvNd, LazyModuleMixin=lazy.LazyModuleMixin,
                 _ntuple=ntuple, _single=ntuple(1),
                 _pair=ntuple(2), _triple=ntuple(3), _quadruple=ntuple(4))
    for path in ("activation", "batchnorm", "container", "conv", "dropout", "flatten", "linear", "loss", "module",
                 "lazy", "normalization", "padding", "pooling", "rnn", "sparse", "transformer", "upsampling", "utils"):
        module = types.ModuleType(f"{__name__}.modules.{path}", f"torch.nn.modules.{path} (all of torch.nn).")
        module.__dict__.update(names)
        sys.modules[module.__name__] = module
        setattr(modules, path, module)


_paths()

"""minifp.torch: PyTorch's names and semantics over minifp's exact engine.

`import minifp.torch as torch` runs PyTorch mixed-precision code; every value is what the GPU would hold.
"""
import sys as _sys

from ..engine import Format, install_names, is_grad_enabled, op_function, op_method, tf32
from ._device import device
from ._generator import (default_generator, Generator, get_rng_state, initial_seed, manual_seed, seed,
                         set_rng_state)
from ._tensor import (DTYPES as _DTYPES, Size, Tensor, arange, as_tensor, bfloat16, bool_ as bool, dtype, empty,
                      empty_like, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu,
                      float16, float32, from_numpy, full, full_like,
                      get_default_dtype, int8, int16, int32, int64, is_tensor, matmul, maximum, minimum, ones,
                      ones_like, bernoulli, multinomial, normal, rand, rand_like, randint, randint_like, randn,
                      randn_like, randperm, set_default_dtype, tensor, uint8, zeros, zeros_like)
from ._functions import *  # noqa: F401,F403  (cat, stack, where, exp, sum, ... with PyTorch's signatures)
from ._functions import __all__ as _function_names
from ._methods import *  # noqa: F401,F403  (split, topk, tril, var, cumsum, ...: Tensor methods as functions)
from ._methods import __all__ as _method_names, watch_views as _watch_views
from ._shapes import *  # noqa: F401,F403  (linspace, diagonal, roll, narrow, take, ...: shape and index ops)
from ._shapes import __all__ as _shape_names
from ._elementwise import *  # noqa: F401,F403  (atan2, fmax, bitwise_and, ...: the elementwise family)
from ._elementwise import __all__ as _elementwise_names
from ._reductions import *  # noqa: F401,F403  (prod, logsumexp, quantile, einsum, addmm, ...)
from ._reductions import __all__ as _reduction_names
from ._aliases import *  # noqa: F401,F403  (ravel, clone, isin, msort, slice_scatter, ...: other spellings)
from ._aliases import __all__ as _alias_names
from . import (accelerator, amp, autograd, backends, cpu, cuda, distributed, jit, linalg, multiprocessing, nn, optim,
               version)
from .nn.functional import (cdist, constant_pad_nd, dist, grid_sampler, grid_sampler_2d,  # noqa: E402
                            grid_sampler_3d)  # (torch.* names written beside F's)
from ._globals import *  # noqa: F401,F403  (channels_last, compile, set_num_threads, seed, ...)
from ._globals import __all__ as _global_names
from ._missing import explain_missing_methods as _explain_missing_methods, missing as _missing
from .version import __version__
from .autograd import enable_grad, inference_mode, is_inference_mode_enabled, no_grad, set_grad_enabled
from .amp import autocast, get_autocast_dtype, is_autocast_enabled
from .backends import get_float32_matmul_precision, set_float32_matmul_precision
from . import utils, vision  # noqa: E402  (utils.data, torchvision's models, datasets and transforms)
from . import random  # noqa: E402,F401  (torch.random: seeds, states, fork_rng)
from . import distributions  # noqa: E402  (torch.distributions: Normal, Categorical, kl_divergence, ...)
from . import func  # noqa: E402  (torch.func: grad, vmap, jacrev, functional_call, ...)
from .func import vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
from .serialization import load, save  # noqa: E402  (torch.save zip files, read without running code; safetensors)
from . import _names
from ._legacy import TYPES as _LEGACY_TYPES

globals().update(_LEGACY_TYPES)      # torch.FloatTensor, torch.LongTensor, ... (legacy constructors and types)

float, half, double, float64 = float32, float16, float32, float32     # minifp has no float64: see README
long, int, short = int64, int32, int16

__all__ = ["Tensor", "Size", "dtype", "device", "Format", "tf32", "tensor", "as_tensor", "from_numpy", "zeros",
           "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "rand", "randn", "randint",
           "arange", "manual_seed", "no_grad", "enable_grad", "is_grad_enabled", "is_tensor", "matmul", "maximum",
           "minimum", "autocast", "amp", "autograd", "inference_mode", "is_inference_mode_enabled", "backends", "cpu", "cuda", "get_default_dtype", "set_default_dtype",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "float", "half", "double", "long",
           "int", "short", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
           "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "load", "save", "utils",
           "random", "Generator", "default_generator", "seed", "initial_seed", "get_rng_state", "set_rng_state", "randperm",
           "multinomial", "rand_like", "randn_like", "randint_like", "bernoulli", "normal", "accelerator", "distributed", "jit",
           "linalg", "multiprocessing", "version", "__version__", "cdist", "dist", "constant_pad_nd",
           "grid_sampler", "grid_sampler_2d", "grid_sampler_3d"] + _function_names + _method_names + _shape_names + _elementwise_names + _reduction_names + _alias_names + _global_names
# Every name of the engine's ops that PyTorch has and this face does not write by hand: the op itself.
__all__ += [name[6:] for name in install_names(_names.NAMES, {"torch": _sys.modules[__name__], "Tensor": Tensor,
                                                               "F": nn.functional},
                                              lambda op, place: op_method(op) if place is Tensor else op_function(op))
            if name.startswith("torch.")]
__all__ += list(_LEGACY_TYPES) + ["get_autocast_dtype", "is_autocast_enabled", "distributions", "func", "vmap"]
del install_names, op_function, op_method
_watch_views(Tensor)      # (after the ops' own methods are in place)
__getattr__ = _missing("minifp.torch")
_explain_missing_methods(Tensor)

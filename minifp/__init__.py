"""minifp: a NumPy autodiff engine that emulates float16, bfloat16 and fp8 training bit-exactly."""
import importlib as _importlib

from ._accumulate import accumulate
from ._formats import (FORMATS, Fixed, Format, bfloat16, e8m0, finfo, float4_e2m1, float6_e2m3, float6_e3m2,
                       float8_e4m3, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float16, float32, int8,
                       promote as promote_types, tf32)
from ._rounding import MODES, MODES as ROUNDING_MODES, round_to
from ._fp8 import DelayedScaling, Fp8Format, fp8_autocast
from ._tensor import Tensor, tensor
from ._dispatch import apply
from ._public import enable_grad, functions as _functions, is_grad_enabled, no_grad
from . import _speed  # noqa: F401  (puts the speed module in the plain path's seams, unless MINIFP_SPEED=0)

__version__ = "0.1.0"

# One public function per op of the registry (minifp._ops): add, exp, matmul, sum, softmax, ...
_OPS = _functions()
globals().update(_OPS)

# The faces, imported on first use (`import minifp.torch as torch`, `from minifp import keras`, `minifp.tf`):
# importing minifp itself stays cheap and loads none of them.
_FACES = ("keras", "tf", "torch")

__all__ = ["checkpoint", "datasets", "keras", "mx", "numerics", "testing", "tf", "torch", "DelayedScaling",
           "Fixed", "Format", "FORMATS", "Fp8Format", "MODES", "ROUNDING_MODES", "Tensor", "accumulate", "apply",
           "bfloat16", "e8m0", "enable_grad", "finfo", "float16", "float32", "float4_e2m1", "float6_e2m3",
           "float6_e3m2", "float8_e4m3", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "fp8_autocast", "int8",
           "is_grad_enabled", "manual_seed", "no_grad", "promote_types", "round_to",
           "tensor", "tf32"] + sorted(_OPS)

from ._random import manual_seed  # noqa: E402
from . import checkpoint, datasets, mx, numerics, testing  # noqa: E402  (the tools build on the names above)


def __getattr__(name):
    if name in _FACES:
        return _importlib.import_module(f"{__name__}.{name}")     # also sets the attribute: loaded once
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_FACES))

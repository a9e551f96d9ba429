"""STUB of the lead's minifp.torch package (see _tensor.py); replaced by the lead's core when main is merged."""
from ._tensor import (DTYPES, Tensor, as_tensor, bfloat16, bool, dtype, float8_e4m3fn, float8_e5m2, float16,  # noqa: F401
                      float32, from_numpy, int8, int16, int32, int64, manual_seed, stack, tensor, uint8)
from .serialization import load, save  # noqa: E402,F401
from . import utils, vision  # noqa: E402,F401

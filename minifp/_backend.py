"""The array module (numpy or cupy) derived from the arrays themselves; CuPy is imported only when met."""
import functools
import sys

import numpy as np


def array_module(*arrays):
    """numpy, or cupy when any of `arrays` lives on a GPU."""
    for a in arrays:
        if type(a) is not np.ndarray and type(a).__module__.startswith("cupy"):    # NumPy's own: one test
            return sys.modules["cupy"]
    return np


def to_numpy(a):
    """A host NumPy array of `a`."""
    return a.get() if type(a).__module__.startswith("cupy") else np.asarray(a)


@functools.lru_cache(maxsize=None)
def holds(xp, dtype):
    """Whether arrays of module xp can hold `dtype` (CuPy has no fp8 dtypes, and bfloat16 only from CuPy 14)."""
    if xp is np:
        return True
    try:
        xp.zeros(1, np.float32).astype(dtype)
        return True
    except (TypeError, ValueError):
        return False

"""The array module (numpy or cupy) derived from the arrays themselves; CuPy is imported only when met."""
import sys

import numpy as np


def array_module(*arrays):
    """numpy, or cupy when any of `arrays` lives on a GPU."""
    for a in arrays:
        if type(a).__module__.startswith("cupy"):
            return sys.modules["cupy"]
    return np


def to_numpy(a):
    """A host NumPy array of `a`."""
    return a.get() if type(a).__module__.startswith("cupy") else np.asarray(a)

"""The named seams of the plain path, where minifp/_speed.py may put a faster function that gives the same bits.

A plain module marks such a function with @seam and its callers call it as SEAMS.<name>(...), so that the speed
module can replace it once, at import. With MINIFP_SPEED=0 in the environment (or without the JIT) it does not,
and everything runs the plain path; tests/test_bits.py trains with both and compares the bits.
"""
import types

__all__ = ["SEAMS", "seam", "PLAIN"]

SEAMS = types.SimpleNamespace()     # name -> the function the engine calls
PLAIN = types.SimpleNamespace()     # name -> the plain path's own function (what the speed module falls back to)


def seam(fn):
    """Make fn the plain path of the seam named after it."""
    setattr(SEAMS, fn.__name__, fn)
    setattr(PLAIN, fn.__name__, fn)
    return fn

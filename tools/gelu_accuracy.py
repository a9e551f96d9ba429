"""How far exact GELU's float32 values lie from the true x * Phi(x) rounded once to float32, by range of x: the share
of values off and the largest distance in float32 ulps. The reference is Python's math.erfc (libm, double).

Run by hand: PYTHONPATH=. python tools/gelu_accuracy.py [values per range, default 20000]
"""
import math
import sys

import numpy as np

from minifp import _ops

RANGES = [(-14, -6), (-6, -3), (-3, -1), (-1, 0), (0, 1), (1, 3), (3, 12)]


def main(n):
    rng = np.random.default_rng(0)
    print(f"{'x in':>12s} {'values':>7s} {'off':>7s} {'max ulps':>9s}")
    for lo, hi in RANGES:
        x = rng.uniform(lo, hi, n).astype(np.float32)
        with np.errstate(all="ignore"):
            got = _ops.gelu(np, x, "none")
        want = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)]).astype(np.float32)
        ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
        print(f"[{lo:3d}, {hi:3d}) {n:7d} {np.mean(ulps > 0):7.1%} {ulps.max():9d}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)

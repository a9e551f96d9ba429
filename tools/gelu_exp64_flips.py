"""How often exact GELU's float32 bits moved when its exp became minifp._ops.exp64 (issue 35): the forward and the
backward's float64 derivative through NumPy's own exp (the plain path before) and through exp64 (now), over every
`step`-th float32 bit pattern (NaNs left out: both paths give the positive quiet NaN now).

Run by hand: PYTHONPATH=. python tools/gelu_exp64_flips.py [step, default 61]. step 1 is all 2**32 inputs (hours).
NumPy's float64 exp is its AVX-512 code on CPUs with AVX-512F and libm's elsewhere, so the answer is the machine's.
The backward multiplies the derivative by g; where the derivative's float32 rounding agrees, g * d may still round
differently when the float64 derivatives differ (a chance of about 2**-29 for each such value).
"""
import math
import sys

import numpy as np

from minifp import _ops


def main(step):
    flips = derivative_flips = differ = total = 0
    c, root = math.sqrt(0.5), math.sqrt(2 * math.pi)
    with np.errstate(all="ignore"):
        for start in range(0, 1 << 32, 1 << 28):
            x = np.arange(start, min(start + (1 << 28), 1 << 32), step, dtype=np.uint64).astype(np.uint32)
            x = x.view(np.float32)
            x = x[~np.isnan(x)]
            before = (x * 0.5 * _ops._erfc(np, -x * c)).astype(np.float32)
            flips += int((before.view(np.int32) != _ops.gelu(np, x, "none").view(np.int32)).sum())
            x64 = x.astype(np.float64)
            old = 0.5 * _ops._erfc(np, -x * c) + x * np.exp(-0.5 * x64 ** 2) / root
            new = 0.5 * _ops._erfc(np, -x * c, _ops._exp(np)) + x * _ops.exp64(np, -0.5 * x64 ** 2) / root
            fine = np.isfinite(old)
            differ += int((old[fine].view(np.int64) != new[fine].view(np.int64)).sum())
            derivative_flips += int((old[fine].astype(np.float32).view(np.int32)
                                     != new[fine].astype(np.float32).view(np.int32)).sum())
            total += x.size
            print(f"{start >> 28:2d}/16: {total} inputs; forward bits moved {flips}; float64 derivative differs "
                  f"{differ}, its float32 rounding moved {derivative_flips}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 61)

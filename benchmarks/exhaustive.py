"""Round every one of the 2**32 float32 bit patterns with minifp and with the reference casts; print mismatches.

    python benchmarks/exhaustive.py [format ...]

Reference: numpy.float16 for float16, ml_dtypes for bfloat16 and the fp8 formats.
Bit-for-bit comparison; the one allowance is NaN payloads (every NaN must stay a NaN of the same sign).
"""
import sys
import time

import ml_dtypes
import numpy as np

import minifp as mf

NATIVE = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          "float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
CHUNK = 1 << 24


def mismatches(ours, theirs):
    """Positions whose bits differ, counting NaN == NaN of the same sign as equal."""
    u = f"u{ours.itemsize}"
    a, b = ours.view(u), theirs.view(u)
    differ = a != b
    if differ.any():
        nan_a, nan_b = np.isnan(ours[differ].astype(np.float32)), np.isnan(theirs[differ].astype(np.float32))
        same_sign = (a[differ] >> (8 * ours.itemsize - 1)) == (b[differ] >> (8 * ours.itemsize - 1))
        return int((~(nan_a & nan_b & same_sign)).sum())
    return 0


def main(names):
    np.seterr(all="ignore")
    for name in names:
        fmt, native = mf.FORMATS[name], NATIVE[name]
        start, bad = time.perf_counter(), 0
        for lo in range(0, 1 << 32, CHUNK):
            x = np.arange(lo, lo + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
            bad += mismatches(mf.round_to(x, fmt), x.astype(native))
        print(f"{name:12s} 2**32 float32 patterns, mismatches: {bad}   ({time.perf_counter() - start:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(NATIVE))

"""Round every one of the 2**32 float32 bit patterns with minifp and with a reference; print the wrong values.

    python benchmarks/exhaustive.py [--modes nearest,up,...] [--bits N] [--stride S] [--exact] [format ...]

Formats: any name of minifp.FORMATS, or fixedB_F for minifp.Fixed(B, F) (default: every named format stored
in 8 or 16 bits). Modes: any of minifp.ROUNDING_MODES (default: nearest). The reference: for nearest into a
format with a native type, that type's own cast (numpy.float16, ml_dtypes; --exact: the float64 reference
instead); for every other format and mode, minifp's float64 reference (round_reference), exact for float32
inputs: widening float32 to float64 is exact, the scaling by the quantum is a power of two, floor and the
fraction below it are exact, so the one rounding is the mode's own (no double rounding). The reference runs
here as a compiled copy of round_reference's steps, checked equal to round_reference itself on a sample
before each run. Stochastic rounding gives both the same random bits (a fixed seed; --bits N of them).
--stride S checks every S-th bit pattern only (S odd: all exponents, signs and mantissa residues still come
up), for machines where the full run takes too long.
Bit-for-bit comparison; the one allowance is NaN payloads (every NaN must stay a NaN of the same sign).
"""
import argparse
import math
import re
import time

import numba
import numpy as np

import minifp as mf
from minifp import _rounding as R
from minifp._accumulate import _bits64, _float64

CHUNK = 1 << 16     # small enough that the reference's float64 temporaries stay in the cache (1.7x faster than 2**22)
SEED = 0


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


@numba.njit(cache=True)
def _power(k):
    """2.0**k for float64's normal exponents, from its bits (ldexp is a library call)."""
    return _float64(np.int64(k + 1023) << 52)


@numba.njit(cache=True)
def _reference_kernel(x, rbits, out, mode, bits, emin, man_bits, low, big, over, saturate, nan_rule, one_zero,
                      smallest, signed):
    """round_reference (minifp/_rounding.py: _reference, _integer, _specials) step for step, one float32 value at a
    time in float64: the same exact steps, compiled, about 10x faster than its array form."""
    for i in range(x.size):
        v = np.float64(x[i])
        if v == 0:
            y = v                                             # keep the sign of zeros
        elif v != v or math.isinf(v):
            y = math.copysign(big if saturate else over, v)   # inf; NaN is replaced below
        else:
            e = ((_bits64(v) >> 52) & 0x7FF) - 1022             # frexp's: |v| = f * 2**e, f in [0.5, 1)
            qe = emin - low if e - 1 < emin else e - 1 - man_bits
            q = v * _power(-qe)                               # exact: a power of two
            a = abs(q)
            whole = math.floor(a)
            frac = a - whole
            odd = whole * 0.5 != math.floor(whole * 0.5)
            if mode == 0:
                up = frac > 0.5 or (frac == 0.5 and odd)      # nearest
            elif mode == 1:
                up = False                                    # toward_zero
            elif mode == 2:
                up = rbits[i] < math.floor(math.ldexp(frac, bits))    # stochastic
            elif mode == 3:
                up = frac > 0 and q > 0                       # up
            elif mode == 4:
                up = frac > 0 and q < 0                       # down
            elif mode == 5:
                up = frac >= 0.5                              # nearest_away
            else:
                up = frac > 0 and not odd                     # odd
            y = math.copysign(whole + up, q) * _power(qe)
            if abs(y) > big:                                  # past max: IEEE 754 7.4 per mode
                if mode == 1 or mode == 6 or (mode == 3 and v < 0) or (mode == 4 and v > 0):
                    y = math.copysign(big, v)
                else:
                    y = math.copysign(over, v)
        if v != v:
            y = (0.0 if v < 0 or math.copysign(1.0, v) < 0 else -0.0) if nan_rule == 0 else math.copysign(math.nan, v)
        if one_zero and y == 0:
            y = 0.0
        if man_bits == 0 and y == 0:
            y = smallest
        if not signed and (v <= 0 or math.isinf(v)):
            y = math.copysign(math.nan, v)
        out[i] = y


def compiled_reference(x, fmt, mode, rbits=None, bits=32):
    """_reference_kernel over a float32 array, stored in fmt's storage type as round_reference returns it."""
    out = np.empty(x.shape, np.float64)
    _reference_kernel(x, np.zeros(1, np.int64) if rbits is None else rbits.astype(np.int64), out,
                      R.MODES.index(mode), bits, fmt.emin, fmt.man_bits, fmt.man_bits if fmt.subnormals else 0,
                      float(fmt.decode(fmt.max_code)), float(fmt.decode(fmt.overflow_code)),
                      fmt.overflow == "saturate", 0 if fmt.nan is False else 1, fmt.signs == 1,
                      float(fmt.smallest), fmt.signed)
    return out.astype(fmt.storage)


def reference(fmt, mode, bits, exact=False):
    """x -> (minifp's rounding, the reference's) of a chunk of float32 values."""
    if mode == "nearest" and fmt.native and not exact:
        return lambda x: (mf.round_to(x, fmt), x.astype(fmt.storage))
    if mode != "stochastic":
        return lambda x: (mf.round_to(x, fmt, mode), compiled_reference(x, fmt, mode))

    def both(x):
        ours = mf.round_to(x, fmt, mode, rng=np.random.default_rng([SEED, int(x.view(np.uint32)[0])]), bits=bits)
        rbits = R._random_bits(np.random.default_rng([SEED, int(x.view(np.uint32)[0])]), x.shape, bits)
        return ours, compiled_reference(x, fmt, mode, rbits, bits)
    return both


def check_compiled(fmt, mode, bits):
    """The compiled reference equals round_reference itself on every 65537th float32 pattern (65538 values)."""
    x = (np.arange(65538, dtype=np.uint64) * np.uint64(65537)).astype(np.uint32).view(np.float32)
    rbits, bits = (R._random_bits(np.random.default_rng(SEED), x.shape, bits), bits) if mode == "stochastic" \
        else (None, None)
    wrong = mismatches(compiled_reference(x, fmt, mode, rbits, bits or 32), R.round_reference(x, fmt, mode, rbits, bits))
    if wrong:
        raise SystemExit(f"{fmt} {mode}: the compiled reference differs from round_reference on {wrong} values")


def named(name):
    """A format of minifp.FORMATS, or fixed point written fixedB_F (B bits, F of them fraction bits)."""
    if name.startswith("fixed"):
        return mf.Fixed(*map(int, name[5:].split("_")))
    return mf.FORMATS[name]


def run(name, mode, bits, stride, exact=False):
    """Wrong values over the bit patterns 0, stride, 2 * stride, ... below 2**32."""
    fmt = named(name)
    check_compiled(fmt, mode, bits)
    pair = reference(fmt, mode, bits, exact)
    start, bad, seen = time.perf_counter(), 0, 0
    for lo in range(0, -(-(1 << 32) // stride), CHUNK):
        k = np.arange(lo, min(lo + CHUNK, -(-(1 << 32) // stride)), dtype=np.uint64) * np.uint64(stride)
        x = k.astype(np.uint32).view(np.float32)
        bad += mismatches(*pair(x))
        seen += x.size
    what = "2**32" if stride == 1 else f"{seen} (every {stride}th)"
    label = mode if mode != "stochastic" else f"stochastic (bits={bits})"
    label += " (exact)" if exact and mode == "nearest" and fmt.native else ""
    print(f"{name:14s} {label:22s} {what} float32 patterns, wrong: {bad}   ({time.perf_counter() - start:.0f} s)",
          flush=True)
    return bad


def main(argv=None):
    coded = [name for name, f in mf.FORMATS.items() if np.dtype(f.storage).itemsize <= 2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("formats", nargs="*", metavar="format",
                        help=f"any of {', '.join(mf.FORMATS)}, or fixedB_F (fixed point, e.g. fixed16_8)")
    parser.add_argument("--modes", default="nearest", help="comma-separated, or 'all'")
    parser.add_argument("--bits", type=int, default=32, help="random bits of stochastic rounding (1..32)")
    parser.add_argument("--stride", type=int, default=1, help="check every S-th bit pattern (odd S)")
    parser.add_argument("--exact", action="store_true", help="nearest too against the float64 reference, not the native cast")
    args = parser.parse_args(argv)
    unknown = [name for name in args.formats if name not in mf.FORMATS and not re.fullmatch(r"fixed\d+_\d+", name)]
    if unknown:     # checked here: argparse's choices refuse an empty nargs="*" list on Python 3.11
        parser.error(f"format: unknown {', '.join(unknown)}; valid formats: {', '.join(mf.FORMATS)}, fixedB_F")
    modes = list(mf.ROUNDING_MODES) if args.modes == "all" else args.modes.split(",")
    np.seterr(all="ignore")
    return sum(run(name, mode, args.bits, args.stride, args.exact) for name in args.formats or coded for mode in modes)


if __name__ == "__main__":
    raise SystemExit(1 if main() else 0)

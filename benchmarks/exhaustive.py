"""Round every one of the 2**32 float32 bit patterns with minifp and with a reference; print the wrong values.

    python benchmarks/exhaustive.py [--modes nearest,up,...] [--bits N] [--stride S] [format ...]

Formats: any name of minifp.FORMATS or fixedB_F for minifp.Fixed(B, F) (default: every named format stored in 8 or 16 bits, those that other
branches add included). Modes: any of minifp.ROUNDING_MODES (default: nearest). The reference: for
nearest into a format with a native type, that type's own cast (numpy.float16, ml_dtypes); for every other
format and mode, minifp's float64 reference (round_reference), exact for float32 inputs: widening float32 to
float64 is exact, the scaling by the quantum is a power of two, floor and the fraction below it are exact,
so the one rounding is the mode's own (no double rounding). Stochastic rounding gives both the same random
bits (a fixed seed; --bits N of them). --stride S checks every S-th bit pattern only (S odd: all exponents,
signs and mantissa residues still come up), for machines where the full run takes too long.
Bit-for-bit comparison; the one allowance is NaN payloads (every NaN must stay a NaN of the same sign).
"""
import argparse
import re
import time

import numpy as np

import minifp as mf
from minifp import _rounding as R

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


def reference(fmt, mode, bits, exact=False):
    """x -> (minifp's rounding, the reference's) of a chunk of float32 values."""
    if mode == "nearest" and fmt.native and not exact:
        return lambda x: (mf.round_to(x, fmt), x.astype(fmt.storage))
    if mode != "stochastic":
        return lambda x: (mf.round_to(x, fmt, mode), R.round_reference(x, fmt, mode))

    def both(x):
        ours = mf.round_to(x, fmt, mode, rng=np.random.default_rng([SEED, int(x.view(np.uint32)[0])]), bits=bits)
        rbits = R._random_bits(np.random.default_rng([SEED, int(x.view(np.uint32)[0])]), x.shape, bits)
        return ours, R.round_reference(x, fmt, mode, rbits, bits)
    return both


def named(name):
    """A format of minifp.FORMATS, or fixed point written fixedB_F (B bits, F of them fraction bits)."""
    if name.startswith("fixed"):
        return mf.Fixed(*map(int, name[5:].split("_")))
    return mf.FORMATS[name]


def run(name, mode, bits, stride, exact=False):
    """Wrong values over the bit patterns 0, stride, 2 * stride, ... below 2**32."""
    fmt = named(name)
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

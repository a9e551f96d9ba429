"""Rounding throughput, side by side in one run: minifp's kernels vs numpy, ml_dtypes and a plain copy.

    python benchmarks/rounding.py [--n 16777216] [--repeat 7]

Prints Gelem/s (best of --repeat, each call allocating its output like astype does) and the ratios
that the targets are stated in: >= 10x numpy's float16 astype, >= 3x ml_dtypes' bfloat16 astype,
>= 0.7x the element rate of a float32 copy.
"""
import argparse
import time

import ml_dtypes
import numpy as np

import minifp as mf


def rate(fn, n, repeat):
    fn()
    best = min(_timed(fn) for _ in range(repeat))
    return n / best / 1e9


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n).astype(np.float32)
    h, b = x.astype(np.float16), x.astype(ml_dtypes.bfloat16)
    r = {
        "float32 copy": rate(lambda: x.copy(), args.n, args.repeat),
        "numpy astype(float16)": rate(lambda: x.astype(np.float16), args.n, args.repeat),
        "ml_dtypes astype(bfloat16)": rate(lambda: x.astype(ml_dtypes.bfloat16), args.n, args.repeat),
        "minifp round_to float16": rate(lambda: mf.round_to(x, mf.float16), args.n, args.repeat),
        "minifp round_to bfloat16": rate(lambda: mf.round_to(x, mf.bfloat16), args.n, args.repeat),
        "numpy float16 -> float32": rate(lambda: h.astype(np.float32), args.n, args.repeat),
        "minifp widen float16": rate(lambda: mf._rounding.widen(h), args.n, args.repeat),
        "ml_dtypes bfloat16 -> float32": rate(lambda: b.astype(np.float32), args.n, args.repeat),
        "minifp widen bfloat16": rate(lambda: mf._rounding.widen(b), args.n, args.repeat),
    }
    print(f"{args.n} float32 elements, best of {args.repeat}")
    for name, value in r.items():
        print(f"  {name:32s} {value:6.3f} Gelem/s")
    f16, bf16, copy = r["minifp round_to float16"], r["minifp round_to bfloat16"], r["float32 copy"]
    print("ratios (target):")
    print(f"  float16  vs numpy astype      {f16 / r['numpy astype(float16)']:6.2f}x   (>= 10x)")
    print(f"  bfloat16 vs ml_dtypes astype  {bf16 / r['ml_dtypes astype(bfloat16)']:6.2f}x   (>= 3x)")
    print(f"  float16  vs float32 copy      {f16 / copy:6.2f}x   (>= 0.7x)")
    print(f"  bfloat16 vs float32 copy      {bf16 / copy:6.2f}x   (>= 0.7x)")


if __name__ == "__main__":
    main()

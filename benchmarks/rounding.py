"""Rounding throughput, side by side in one run: minifp's kernels vs numpy, ml_dtypes and a plain copy.

    python benchmarks/rounding.py [--sizes 65536 262144 1048576 16777216] [--repeat 15]

For each array size: Gelem/s, the best of --repeat rounds that each time every contender once (so that
a stretch when the host slows this machine falls on all alike), every contender allocating a fresh
output as astype does (minifp's large ones start on a 2 MB boundary, which is cheaper to fault in);
then the ratios the targets are stated in: >= 10x numpy's float16 astype, >= 3x ml_dtypes' bfloat16
astype, >= 0.7x the element rate of a float32 copy. "bits only" moves the top 16 bits of each float32
into a fresh 16-bit array on minifp's threads without rounding anything: no float32 -> bfloat16 kernel
can beat it, so it shows the rate the machine's memory allows. "reused output" runs minifp's bfloat16
kernel into one array allocated once: the difference is what faulting in fresh memory costs; "numpy
placement" into a plain np.empty array, which may start mid-way through a 2 MB page. The targets
apply up to 2**20 elements: beyond the caches that fresh memory, not the kernel, sets every rate.

Then the same casts called one at a time between about 0.3 ms of matrix products, as in a training
step, where kernel threads may have gone to sleep and caches hold other data: median us per call.
"""
import argparse
import time

import ml_dtypes
import numba
import numpy as np

import minifp as mf
from minifp._rounding import _empty, _map, _nearest_kernel


@numba.njit(cache=True, nogil=True)
def _top_bits(bits, out):
    for i in range(bits.size):
        out[i] = np.right_shift(bits[i], np.int32(16))


def bits_only(x):
    out = _empty(x, np.dtype(np.uint16))
    _map(_top_bits, x.view(np.int32), out)
    return out


def reused_output(x, _reused={}):
    """minifp's bfloat16 kernel into one output array per size, allocated on first use."""
    if x.size not in _reused:
        _reused[x.size] = np.empty(x.shape, np.uint16)
    _map(_nearest_kernel(mf.bfloat16), x, _reused[x.size])
    return _reused[x.size]


def numpy_placement(x):
    """minifp's bfloat16 kernel into a plain np.empty array, which need not start on a 2 MB boundary."""
    out = np.empty(x.shape, np.uint16)
    _map(_nearest_kernel(mf.bfloat16), x, out)
    return out


def best_rates(fns, n, repeat):
    """Gelem/s of each fn, the best of `repeat` rounds; every round times every fn once, so that a
    stretch of time when the host slows this machine down falls on all of them alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            fn()            # untimed: whatever ran before (a single-threaded cast lets the pool's worker sleep)
            best[name] = min(best[name], _timed(fn))
    return {name: n / t / 1e9 for name, t in best.items()}


def _repeat(fn, times, *args):
    for _ in range(times):
        fn(*args)            # each result is dropped before the next call, as in a loop over batches


def between_matmuls(fn, calls=200, gap=3e-4):
    """Median seconds of one fn() called after about `gap` seconds of float32 matrix products."""
    a, times = np.ones((128, 128), np.float32), []
    for _ in range(calls):
        start = time.perf_counter()
        while time.perf_counter() - start < gap:
            a @ a
        times.append(_timed(fn))
    return float(np.median(times))


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


CONTENDERS = {
    "float32 copy": lambda x, h, b: x.copy(),
    "numpy astype(float16)": lambda x, h, b: x.astype(np.float16),
    "ml_dtypes astype(bfloat16)": lambda x, h, b: x.astype(ml_dtypes.bfloat16),
    "bits only (bound)": lambda x, h, b: bits_only(x),
    "minifp round_to float16": lambda x, h, b: mf.round_to(x, mf.float16),
    "minifp round_to bfloat16": lambda x, h, b: mf.round_to(x, mf.bfloat16),
    "minifp bfloat16, reused output": lambda x, h, b: reused_output(x),
    "minifp bfloat16, numpy placement": lambda x, h, b: numpy_placement(x),
    "numpy float16 -> float32": lambda x, h, b: h.astype(np.float32),
    "minifp widen float16": lambda x, h, b: mf._rounding.widen(h),
    "ml_dtypes bfloat16 -> float32": lambda x, h, b: b.astype(np.float32),
    "minifp widen bfloat16": lambda x, h, b: mf._rounding.widen(b),
}
CACHED = 1 << 20     # input and output (6 MB) fit a server's last-level cache; 2**24 (96 MB) does not
SPARSE = ["float32 copy", "numpy astype(float16)", "ml_dtypes astype(bfloat16)", "minifp round_to float16",
          "minifp round_to bfloat16"]
RATIOS = [("float16  vs numpy astype", "minifp round_to float16", "numpy astype(float16)", 10),
          ("bfloat16 vs ml_dtypes astype", "minifp round_to bfloat16", "ml_dtypes astype(bfloat16)", 3),
          ("float16  vs float32 copy", "minifp round_to float16", "float32 copy", 0.7),
          ("bfloat16 vs float32 copy", "minifp round_to bfloat16", "float32 copy", 0.7),
          ("bits only vs ml_dtypes astype", "bits only (bound)", "ml_dtypes astype(bfloat16)", None)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1 << 16, 1 << 18, 1 << 20, 1 << 24])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rates, sparse = {}, {}
    for n in args.sizes:
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        h, b = x.astype(np.float16), x.astype(ml_dtypes.bfloat16)
        # Small arrays are timed in batches, so that the clock's resolution does not count.
        batch = max(1, (1 << 22) // n)
        fns = {name: lambda fn=fn: _repeat(fn, batch, x, h, b) for name, fn in CONTENDERS.items()}
        for name, r in best_rates(fns, n, args.repeat).items():
            rates[name, n] = batch * r
        for name in SPARSE:
            sparse[name, n] = between_matmuls(lambda: CONTENDERS[name](x, h, b))
    print(f"Gelem/s, best of {args.repeat}; minifp's kernels on {mf._rounding.THREADS} threads from "
          f"{mf._rounding.MAP} elements")
    print(f"  {'elements':34s}" + "".join(f"{n:>11d}" for n in args.sizes))
    for name in CONTENDERS:
        print(f"  {name:34s}" + "".join(f"{rates[name, n]:11.3f}" for n in args.sizes))
    print("ratios (target):")
    for label, ours, theirs, target in RATIOS:
        cells = "".join(f"{rates[ours, n] / rates[theirs, n]:10.2f}x" for n in args.sizes)
        print(f"  {label:34s}{cells}   " + (f"(>= {target}x)" if target else ""))
    if max(args.sizes) > CACHED:
        print(f"  The targets apply up to {CACHED} elements, where the kernels set the pace. Beyond the caches "
              "every\n  contender writes fresh memory that the system must fault in and zero first: "
              "'bits only', which rounds\n  nothing, shows how far any kernel can get there.")
    print("between matrix products, us per call (median):")
    for name in SPARSE:
        cells = "".join(f"{1e6 * sparse[name, n]:11.1f}" for n in args.sizes)
        print(f"  {name:34s}{cells}")
    for label, ours, theirs, target in RATIOS[:4]:
        cells = "".join(f"{sparse[theirs, n] / sparse[ours, n]:10.2f}x" for n in args.sizes)
        print(f"  {label:34s}{cells}")


if __name__ == "__main__":
    main()

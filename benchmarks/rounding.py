"""Rounding throughput, side by side in one run: minifp's kernels vs numpy, ml_dtypes and a plain copy.

    python benchmarks/rounding.py [--sizes 65536 262144 1048576 16777216] [--repeat 15] [--against PATH]

For each array size: Gelem/s, the best of --repeat rounds that each time every contender once (so that
a stretch when the host slows this machine falls on all alike), every contender allocating a fresh
output as astype does; then the ratios the targets are stated in: >= 10x numpy's float16 astype, >= 3x
ml_dtypes' bfloat16 astype, >= 0.7x the element rate of a float32 copy. "bits only" moves the top 16
bits of each float32 into a fresh 16-bit array without rounding anything (one thread, like minifp's
kernels): no float32 -> bfloat16 kernel can beat it, so it shows the rate the machine's memory allows.
The targets apply up to 2**20 elements: beyond the caches, fresh memory, not the kernel, sets every rate.

Then the same casts called one at a time between about 0.3 ms of matrix products, as in a training
step, where caches hold other data: median us per call.

--against PATH also imports minifp from the checkout at PATH (as `minifp_against`) and times its
contenders in the same rounds, interleaved with this checkout's: a before/after comparison in one run.
"""
import argparse
import time

import ml_dtypes
import numba
import numpy as np

from _checkouts import checkouts


@numba.njit(cache=True, nogil=True)
def _top_bits(bits, out):
    for i in range(bits.size):
        out[i] = np.right_shift(bits[i], np.int32(16))


def bits_only(x):
    out = np.empty(x.shape, np.uint16)
    _top_bits(x.view(np.int32), out)
    return out


def best_rates(fns, n, repeat):
    """Gelem/s of each fn, the best of `repeat` rounds; every round times every fn once, so that a
    stretch of time when the host slows this machine down falls on all of them alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            fn()            # untimed: the call before is the same cast, as in a loop of them
            best[name] = min(best[name], _timed(fn))
    return {name: n / t / 1e9 for name, t in best.items()}


def _repeat(fn, times, *args):
    for _ in range(times):
        fn(*args)            # each result is dropped before the next call, as in a loop over batches


def between_matmuls(fns, calls=200, gap=3e-4):
    """Median seconds of each fn() called after about `gap` seconds of float32 matrix products; the
    contenders take turns, call by call."""
    a, times = np.ones((128, 128), np.float32), {name: [] for name in fns}
    for _ in range(calls):
        for name, fn in fns.items():
            start = time.perf_counter()
            while time.perf_counter() - start < gap:
                a @ a
            times[name].append(_timed(fn))
    return {name: float(np.median(t)) for name, t in times.items()}


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


BASELINES = {
    "float32 copy": lambda x, h, b: x.copy(),
    "numpy astype(float16)": lambda x, h, b: x.astype(np.float16),
    "ml_dtypes astype(bfloat16)": lambda x, h, b: x.astype(ml_dtypes.bfloat16),
    "bits only (bound)": lambda x, h, b: bits_only(x),
    "numpy float16 -> float32": lambda x, h, b: h.astype(np.float32),
    "ml_dtypes bfloat16 -> float32": lambda x, h, b: b.astype(np.float32),
}


def minifp_contenders(mf, label):
    """The contenders one checkout of minifp brings, named with its label."""
    widen = mf._rounding.widen
    return {f"round_to float16 ({label})": lambda x, h, b: mf.round_to(x, mf.float16),
            f"round_to bfloat16 ({label})": lambda x, h, b: mf.round_to(x, mf.bfloat16),
            f"widen float16 ({label})": lambda x, h, b: widen(h),
            f"widen bfloat16 ({label})": lambda x, h, b: widen(b)}


CACHED = 1 << 20     # input and output (6 MB) fit a server's last-level cache; 2**24 (96 MB) does not
SPARSE_BASELINES = ["float32 copy", "numpy astype(float16)", "ml_dtypes astype(bfloat16)"]


def ratios(label):
    """(what, ours, theirs, target) of the issue-2 targets for one checkout."""
    f16, bf16 = f"round_to float16 ({label})", f"round_to bfloat16 ({label})"
    return [(f"float16  vs numpy astype ({label})", f16, "numpy astype(float16)", 10),
            (f"bfloat16 vs ml_dtypes astype ({label})", bf16, "ml_dtypes astype(bfloat16)", 3),
            (f"float16  vs float32 copy ({label})", f16, "float32 copy", 0.7),
            (f"bfloat16 vs float32 copy ({label})", bf16, "float32 copy", 0.7)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1 << 16, 1 << 18, 1 << 20, 1 << 24])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", metavar="PATH", help="also time minifp from the checkout at PATH")
    args = parser.parse_args()
    trees = checkouts(args.against)
    contenders = dict(BASELINES)
    for label, (mf, _) in trees.items():
        contenders.update(minifp_contenders(mf, label))
    sparse_names = SPARSE_BASELINES + [n for n in contenders if n.startswith("round_to")]
    rates, sparse = {}, {}
    for n in args.sizes:
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        h, b = x.astype(np.float16), x.astype(ml_dtypes.bfloat16)
        # Small arrays are timed in batches, so that the clock's resolution does not count.
        batch = max(1, (1 << 22) // n)
        fns = {name: lambda fn=fn: _repeat(fn, batch, x, h, b) for name, fn in contenders.items()}
        for name, r in best_rates(fns, n, args.repeat).items():
            rates[name, n] = batch * r
        once = {name: lambda fn=contenders[name]: fn(x, h, b) for name in sparse_names}
        for name, t in between_matmuls(once).items():
            sparse[name, n] = t
    _report(args, trees, contenders, sparse_names, rates, sparse)


def _report(args, trees, contenders, sparse_names, rates, sparse):
    where = ", ".join(f"{label}: {mf.__file__.rsplit('/', 2)[0]}" for label, (mf, _) in trees.items())
    print(f"Gelem/s, best of {args.repeat} rounds ({where})")
    print(f"  {'elements':38s}" + "".join(f"{n:>11d}" for n in args.sizes))
    for name in contenders:
        print(f"  {name:38s}" + "".join(f"{rates[name, n]:11.3f}" for n in args.sizes))
    print("ratios (target):")
    for label in trees:
        for what, ours, theirs, target in ratios(label):
            cells = "".join(f"{rates[ours, n] / rates[theirs, n]:10.2f}x" for n in args.sizes)
            print(f"  {what:38s}{cells}   (>= {target}x)")
    if "against" in trees:
        print("this checkout vs the other, same rounds (> 1: this one is faster):")
        for name in contenders:
            if name.endswith("(this)"):
                other = name.replace("(this)", "(against)")
                cells = "".join(f"{rates[name, n] / rates[other, n]:10.2f}x" for n in args.sizes)
                print(f"  {name[:-7]:38s}{cells}")
    if max(args.sizes) > CACHED:
        print(f"  The targets apply up to {CACHED} elements, where the kernels set the pace. Beyond the caches "
              "every\n  contender writes fresh memory that the system must fault in and zero first: "
              "'bits only', which rounds\n  nothing, shows how far any kernel can get there.")
    print("between matrix products, us per call (median):")
    for name in sparse_names:
        print(f"  {name:38s}" + "".join(f"{1e6 * sparse[name, n]:11.1f}" for n in args.sizes))


if __name__ == "__main__":
    main()

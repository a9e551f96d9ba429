"""Low-precision accumulation throughput, side by side in one run: minifp's chain and pairwise kernels
against float32 sgemm (numpy's @, BLAS) and a NumPy loop that rounds after each addition.

    python benchmarks/accumulate.py [--size 512] [--repeat 5]

An (n, n) @ (n, n) product of float16 (or bfloat16) values, n**3 multiply-adds: for each contender the best
of --repeat rounds (each round times every contender once, so a stretch when other work slows the machine
falls on all alike), in emulated multiply-adds per second (GMAC/s), then the ratios to sgemm and to the
NumPy loop. The NumPy loop adds one rank-1 product per step in float64 and rounds the whole (n, n) sum
(numpy's float16 cast, ml_dtypes' bfloat16 one): the same numbers as the float16 chain, one vectorised
step per k. The target: >= 1e9 emulated multiply-adds per second for the float16 and bfloat16 chains.
The tensor-core models (minifp._tensorcore.matmul: block FMAs with truncated alignment, float32 output) run
on the same inputs for each device and its main formats (float16, bfloat16, float8_e4m3 where modelled);
their first rows are checked once against the per-element kernel, bit for bit.
Load matters on a shared machine: the load averages are printed before and after, and beside the wall-clock
rate the rate per CPU-second this process used (time.process_time over all its threads; OpenMP threads
that spin at a barrier count too, so it errs low): times the core count, what the kernels would do on
the same cores unshared.
"""
import argparse
import os
import time

import numba
import numpy as np

import minifp as mf
from minifp import _tensorcore as tc
from minifp._accumulate import matmul2d

TC_FORMATS = (mf.float16, mf.bfloat16, mf.float8_e4m3)     # per device, where modelled


def numpy_chain(a, b, dtype):
    """a @ b rounding the whole sum into dtype after each rank-1 step (float64 adds, then a cast)."""
    s = np.zeros((a.shape[0], b.shape[1]))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for k in range(a.shape[1]):
        s = (s + np.outer(a64[:, k], b64[k])).astype(dtype).astype(np.float64)
    return s


def contenders(n, rng):
    """name -> (function of no arguments, the result it should equal or None)."""
    out = {}
    for fmt in (mf.float16, mf.bfloat16):
        a = mf.round_to(rng.random((n, n)), fmt).astype(np.float32)
        b = mf.round_to(rng.random((n, n)), fmt).astype(np.float32)
        out[f"sgemm float32 ({fmt})"] = (lambda a=a, b=b: a @ b), None
        out[f"{fmt} chain"] = (lambda a=a, b=b, f=fmt: matmul2d(a, b, f, "sequential", f)), ("numpy", fmt)
        out[f"{fmt} pairwise"] = (lambda a=a, b=b, f=fmt: matmul2d(a, b, f, "pairwise", f)), None
        out[f"numpy loop {fmt}"] = (lambda a=a, b=b, f=fmt: numpy_chain(a, b, f.storage)), None
        ta, tb = mf.tensor(a, dtype=fmt), mf.tensor(b, dtype=fmt)

        def op(ta=ta, tb=tb, f=fmt):
            with mf.accumulate(f):
                return mf.matmul(ta, tb)
        out[f"mf.matmul under accumulate({fmt})"] = op, None
    for device in tc.DEVICES:
        for fmt in TC_FORMATS:
            if (device, fmt) in tc._MODELS:
                a, b = (np.asarray(mf.round_to(rng.random((n, n)), fmt), np.float64) for _ in range(2))
                out[f"tensor core {device} {fmt}"] = (lambda a=a, b=b, d=device, f=fmt: tc.matmul(a, b, d, f)), \
                    ("tc", a, b, device, fmt)
    a32, b32 = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    out["float16 chain of float32 inputs (round to odd)"] = (lambda: matmul2d(a32, b32, mf.float16)), None
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    n = args.size
    rng = np.random.default_rng(0)
    runs = contenders(n, rng)
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs, Numba threads "
          f"{numba.get_num_threads()} ({numba.threading_layer() if hasattr(numba, 'threading_layer') else ''})")
    results = {}
    for name, (fn, _) in runs.items():               # compile and check once
        results[name] = fn()
    for name, (_, check) in runs.items():
        if check and check[0] == "tc":
            _, a, b, device, fmt = check
            core = tc.model(device, fmt)
            ap, bp = tc._prepare(a[:16], b, core)     # B200 fp8: k padded and interleaved as matmul does
            want = tc._matmul(ap, np.ascontiguousarray(bp.T), *tc._params(core))
            print(f"{name} == per-element kernel (first 16 rows, bit for bit): "
                  f"{np.array_equal(results[name][:16].view(np.uint32), want.view(np.uint32))}")
    for fmt in (mf.float16, mf.bfloat16):
        same = np.array_equal(results[f"{fmt} chain"], results[f"numpy loop {fmt}"])
        print(f"{fmt} chain == NumPy loop rounding after each addition: {same}")
    best = {name: float("inf") for name in runs}
    cpu = dict(best)
    for _ in range(args.repeat):
        for name, (fn, _) in runs.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
            cpu[name] = min(cpu[name], time.process_time() - c)
    print(f"\n({n}, {n}) @ ({n}, {n}): {n**3 / 1e6:.0f}M multiply-adds; best of {args.repeat}")
    print(f"  {'contender':48s} {'ms':>9s} {'GMAC/s':>8s} {'/sgemm':>8s} {'/numpy loop':>12s} {'GMAC/cpu-s':>11s}")
    for name in runs:
        fmt = "bfloat16" if "bfloat16" in name else "float16"
        sgemm, loop = best[f"sgemm float32 ({fmt})"], best[f"numpy loop {fmt}"]
        t = best[name]
        print(f"  {name:48s} {t * 1e3:9.2f} {n**3 / t / 1e9:8.3f} {sgemm / t:8.4f} {loop / t:12.1f} "
              f"{n**3 / max(cpu[name], 1e-9) / 1e9:11.3f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

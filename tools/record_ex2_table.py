"""Measure the H100's ex2.approx.ftz.f32 (MUFU.EX2, the exp2 of cuDNN's flash attention) and write
minifp/data/h100_ex2.npz. Needs an NVIDIA GPU and CuPy; about 15 s on an H100.

    python tools/record_ex2_table.py [OUT.npz]

Measured 2026-11-28 on an H100 80GB HBM3 (driver 580.159.04, CUDA 13): ex2.approx(x) depends on x only through
floor(x) and idx = floor((1 - (x - floor(x))) * 2**23), as 2**(floor(x) + 1) * ex2.approx(-idx * 2**-23) (exact on
4M random x in each of [-16, -1], [-1, -2**-10], [-2**-10, 0]); so the 2**23 values ex2.approx(-j * 2**-23) define
it for every x < 0. They are stored as their distance in float32 ulps (-2..1, int8 `ulps`) from the correctly
rounded 2**(-j * 2**-23), which compresses to about 200 KB.
"""
import sys

import cupy as cp
import numpy as np

SRC = r'''extern "C" __global__ void ex2(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) { float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x[i])); y[i] = r; }
}'''
KERNEL = cp.RawKernel(SRC, "ex2")


def ex2(x):
    """ex2.approx.ftz.f32 of a float32 CuPy array, on the GPU."""
    x = cp.asarray(x, cp.float32)
    y = cp.empty_like(x)
    KERNEL(((x.size + 255) // 256,), (256,), (x, y, np.int64(x.size)))
    return y


def main(out="minifp/data/h100_ex2.npz"):
    j = np.arange(1 << 23)
    table = cp.asnumpy(ex2(cp.asarray((-j * 2.0 ** -23).astype(np.float32))))
    exact = np.exp2(-j * 2.0 ** -23).astype(np.float32)
    ulps = (table.view(np.int32) - exact.view(np.int32)).astype(np.int8)
    # the decomposition above, checked on random arguments
    t = cp.asarray(table)
    r = np.random.default_rng(0)
    for lo, hi in ((-16, -1), (-1, -2 ** -10), (-2 ** -10, 0)):
        x = cp.asarray(r.uniform(lo, hi, 4_000_000).astype(np.float32))
        fl = cp.floor(x.astype(cp.float64))
        idx = cp.floor((1 - (x - fl)) * 2 ** 23).astype(cp.int64)
        pred = cp.ldexp(t[cp.minimum(idx, (1 << 23) - 1)].astype(cp.float64), (fl + 1).astype(cp.int32))
        pred = cp.where(idx == 1 << 23, cp.ldexp(1.0, fl.astype(cp.int32)), pred).astype(cp.float32)
        print(f"[{lo}, {hi}]: decomposition identical in {float((pred == ex2(x)).mean()):.6f}")
    np.savez_compressed(out, ulps=ulps)
    print(out, np.unique(ulps, return_counts=True))


if __name__ == "__main__":
    main(*sys.argv[1:])

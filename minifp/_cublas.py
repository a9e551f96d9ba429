"""How cuBLAS (CUDA 13, PyTorch 2.11) splits K on an H100: slices per GEMM shape, fit to recordings.

cuBLAS's split-K GEMMs cut k into `slices` runs of whole k-tiles, chain each run on the tensor cores from 0 and add
the float32 partials in run order (_tensorcore.splitk_matmul). Nothing here is a documented rule: every number is
fit to an H100's outputs (../shared/gpu/h100/sweep.npz and gemm.npz; tools/fit_splitk.py, docs/h100_splitk.md),
with the kernel names an H200 recorded (tests/fixtures/h100/h200_kernels.json.gz) for which kernel runs.
"""
from __future__ import annotations

__all__ = ["cublas_slices"]

# float16 and bfloat16 (nvjet kernels, k-tile 64): {largest M = N of the row: {K: slices}}, fit to recordings of
# M = N in 16..256 at K = 1024..16384 (both formats give the same slices). K <= 2048 is never split there.
_HALF_TILE = 64
_HALF = {
    64: {3072: 2, 4096: 3, 6144: 4, 8192: 6, 16384: 12},     # M = N in 16, 32, 64: runs of 22-24 k-tiles
    128: {3072: 2, 4096: 3, 6144: 4, 8192: 6, 16384: 9},
    256: {3072: 2, 4096: 2, 6144: 2, 8192: 4, 16384: 4},
    512: {4096: 1, 8192: 2},                                  # gemm.npz: 2048 and 4096 whole, 8192 in 2
}

# tf32 (cutlass_80_tensorop_s1688gemm kernels, k-tile 16 or 32, every recorded shape up to M = N = 256 split, even
# at small K): {largest M = N of the row: {K: slices}}, fit to recordings of M = N in 16..256, K = 1024..16384.
_TF32_TILE = 16
_TF32 = {
    16: {1024: 16, 1536: 24, 2048: 22, 3072: 24, 4096: 22, 6144: 32, 8192: 52, 16384: 86},
    32: {1024: 16, 1536: 24, 2048: 32, 3072: 32, 4096: 32, 6144: 32, 8192: 52, 16384: 57},
    64: {1024: 16, 1536: 24, 2048: 32, 3072: 32, 4096: 32, 6144: 48, 8192: 52, 16384: 57},
    128: {1024: 16, 1536: 12, 2048: 22, 3072: 24, 4096: 22, 6144: 32, 8192: 32, 16384: 32},
    256: {1024: 8, 1536: 12, 2048: 16, 3072: 16, 4096: 12, 6144: 32, 8192: 32, 16384: 32},
    512: {2048: 4, 4096: 8},                # gemm.npz; 512x512x8192 fits no slicing tried (docs/h100_splitk.md)
}

# Recorded shapes that the square rows above do not cover: {(fmt, m, n, k): (slices, k-tile)}, fit to gemm.npz.
# 256x10x1024 runs CUTLASS's sm80 WMMA kernel (k-tile 128) with a splitKreduce: float16 fits runs of 128,
# bfloat16 runs of 64.
# Rows for the nn layout (torch.mm of two contiguous matrices); _LAYOUTS below holds the layouts that differ.
_SHAPES = {
    ("float16", 256, 10, 1024): (8, 128),
    ("bfloat16", 256, 10, 1024): (16, 64),
    ("tf32", 256, 10, 1024): (16, 16),
    ("tf32", 10, 1024, 256): (4, 16),
    ("tf32", 256, 784, 1024): (5, 32),       # s1688gemm_64x128_32x6: runs of whole 32-wide k-tiles
    ("tf32", 256, 1024, 1024): (4, 16),
    ("tf32", 256, 1024, 784): (1, 16),       # s1688gemm_64x64_32x6 without splitKreduce
    ("tf32", 1024, 784, 256): (1, 16),
    ("tf32", 1024, 1024, 256): (1, 16),
}


def _lookup(table, m, n, k):
    """The slices of the smallest recorded row holding max(m, n), at the largest recorded K <= k (fit, not a
    rule: shapes between the recorded ones take their neighbour's slices); 1 where none."""
    side = max(m, n)
    rows = [r for r in sorted(table) if r >= side]
    if not rows:
        return 1
    ks = [kk for kk in sorted(table[rows[0]]) if kk <= k]
    return table[rows[0]][ks[-1]] if ks else 1


# Other layouts where they run other kernels than nn (gemm.npz: "tn" = A transposed in memory, "nt" = B):
# {(fmt, m, n, k, layout): (slices, k-tile)}, fit to recordings.
_LAYOUTS = {
    ("float16", 256, 10, 1024, "tn"): (16, 64),     # WMMA kernels again: float16 runs of 64, bfloat16 of 128
    ("bfloat16", 256, 10, 1024, "tn"): (8, 128),
    ("tf32", 256, 784, 1024, "tn"): (5, 16),        # s1688gemm_64x128_32x6_nt
    ("tf32", 256, 784, 1024, "nt"): (1, 16),        # sm90_xmma kernels: unsplit, the chain
    ("tf32", 256, 1024, 1024, "nt"): (1, 16),
    ("tf32", 10, 1024, 256, "tn"): (1, 16),
}


def cublas_slices(m, n, k, fmt, layout="nn") -> tuple[int, int]:
    """(slices, k-tile) of cuBLAS's GEMM (m, k) @ (k, n) on an H100 for fmt "float16", "bfloat16" or "tf32"."""
    name = getattr(fmt, "name", fmt)
    if (name, m, n, k, layout) in _LAYOUTS:
        return _LAYOUTS[name, m, n, k, layout]
    if (name, m, n, k) in _SHAPES:
        return _SHAPES[name, m, n, k]
    if name in ("float16", "bfloat16"):
        return _lookup(_HALF, m, n, k), _HALF_TILE
    if name == "tf32":
        return _lookup(_TF32, m, n, k), _TF32_TILE
    raise ValueError(f"cublas_slices: fmt={name!r} is not one of float16, bfloat16, tf32")

"""Fit PyTorch 2.11's native CUDA batch-norm backward to the H100 recordings (issue 34): which model of the
weight and bias gradient reductions gives the recorded bits. Prints, per hypothesis, the share of identical values
of every recorded grad_weight / grad_bias (pin.npz's BatchNorm2d entries, ops.npz's batch_norm_train rows).

Run by hand: python tools/fit_bn_bf16.py [../shared/gpu/h100]. Needs only NumPy and ml_dtypes; the inputs are
rebuilt from the recorders' seeds (record_h100_pin.py: "bn_pin", record_h100.py: "batch_norm_train").

The kernel (Normalization.cuh, batch_norm_backward_kernel with reduce<Float2<input_scalar_t, float>>): each
thread sums its elements' (dy, dy * (x - mean)) in float32, each element first converted to the input's dtype by
Float2's (scalar_t, scalar_t) constructor; the warp shuffles of block_reduce.cuh's WarpReduce build the received
Float2 the same way, so every partial sum that crosses lanes is rounded to the input's dtype before it is added.
"""
import sys
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np

F32 = np.float32
LOW = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
HERE = Path(__file__).resolve().parents[1]


def rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def rnd(a, lt):
    """a rounded to dtype lt (nearest even), as float32."""
    return np.asarray(a, F32).astype(lt).astype(F32)


def threads(n):
    """Normalization.cuh's getNumThreads: the block's x size for n elements per (batch, channel) row."""
    return next((t for t in (32, 64, 128, 256) if n <= t), 512)


def warp_sum(v, lt):
    """Lane 0 of WarpReduce over the last axis (32 lanes), each received value rounded to lt (None: kept)."""
    v = v.copy()
    for off in (16, 8, 4, 2, 1):
        got = v[..., off:]
        v[..., :32 - off] = v[..., :32 - off] + (got if lt is None else rnd(got, lt))
    return v[..., 0]


def kernel_sum(a, lt):
    """Per channel sum of a (N, C, L) float32 as reduce() in batch_norm_backward_kernel: blocks of 512 threads
    (threads(L) x 512 / threads(L)), each summing its strided elements in float32, then two warp reductions."""
    n, c, length = a.shape
    tx = threads(length)
    ty = 512 // tx
    acc = np.zeros((c, ty, tx), F32)
    for b in range(n):
        for x0 in range(0, length, tx):
            part = a[b, :, x0:x0 + tx]
            acc[:, b % ty, :part.shape[1]] += part
    per_warp = warp_sum(acc.reshape(c, 16, 32), lt)
    lanes = np.zeros((c, 32), F32)
    lanes[:, :16] = per_warp
    return warp_sum(lanes, lt)


def welford(xl):
    """save_mean and the biased variance of (N, C, L) float32 as batch_norm_collect_statistics_kernel computes them
    (per-thread Welford, XOR-shuffle merges; its var_n update contracted to an FMA)."""
    n, c, length = xl.shape
    tx = threads(length)
    ty = 512 // tx
    avg, m2 = np.zeros((c, ty, tx), F32), np.zeros((c, ty, tx), F32)
    cnt = np.zeros((ty, tx), np.int64)
    for b in range(n):
        for x0 in range(0, length, tx):
            v = xl[b, :, x0:x0 + tx]
            k, t = v.shape[1], b % ty
            d1 = v - avg[:, t, :k]
            cnt[t, :k] += 1
            avg[:, t, :k] += d1 / cnt[t, :k].astype(F32)
            m2[:, t, :k] = (m2[:, t, :k] + d1.astype(np.float64) * (v - avg[:, t, :k])).astype(F32)

    def merge(avg, m2, cnt):
        for i in range(5):
            j = np.arange(32) ^ (1 << i)
            oa, om, on = avg[..., j], m2[..., j], cnt[..., j]
            fac = (1.0 / np.maximum(1.0, (cnt + on).astype(F32)).astype(np.float64)).astype(F32)
            d = avg - oa
            m2 = m2 + (om + d * d * cnt.astype(F32) * on.astype(F32) * fac)
            avg = (cnt.astype(F32) * avg + on.astype(F32) * oa) * fac
            cnt = cnt + on
        return avg, m2, cnt

    a, m, k = merge(avg.reshape(c, 16, 32), m2.reshape(c, 16, 32), np.broadcast_to(cnt.reshape(16, 32), (c, 16, 32)))
    a2, m22, k2 = np.zeros((c, 32), F32), np.zeros((c, 32), F32), np.zeros((c, 32), np.int64)
    a2[:, :16], m22[:, :16], k2[:, :16] = a[:, :, 0], m[:, :, 0], k[:, :, 0]
    a2, m22, _ = merge(a2, m22, k2)
    return a2[:, 0], m22[:, 0] / F32(n * length)


def cases(root):
    """(name, x (N,C,L) in its dtype as float32, dy likewise, dtype, {array: recorded float32 values or None})."""
    pin, ops = np.load(root / "pin.npz"), np.load(root / "ops.npz")

    def dec(z, k):
        a, dt = z[k], str(z[k + "_dtype"])
        return a.view(F32) if a.dtype == np.uint32 else a.view(LOW[dt]).astype(F32)

    r = rng("bn_pin")
    x = r.standard_normal((16, 32, 8, 8)).astype(F32)
    g = rng("bn_pin/g").standard_normal((16, 32, 8, 8)).astype(F32)
    for low in LOW:
        for key in sorted(k[:-3] for k in pin.files if k.startswith(f"bn/{low}/") and k.endswith("/gw")):
            cl = "/cl1/" in key
            yield key, rnd(x, LOW[low]).reshape(16, 32, 64), rnd(g, LOW[low]).reshape(16, 32, 64), low, cl, {
                "gw": dec(pin, key + "/gw"), "gb": dec(pin, key + "/gb")}
    r = rng("batch_norm_train")
    x = r.standard_normal((16, 32, 8, 8)).astype(F32)
    g = rng("batch_norm_train/g").standard_normal((16, 32, 8, 8)).astype(F32)
    for mode in ("autocast_float16", "autocast_bfloat16", "float16", "bfloat16"):
        low = mode.split("_")[-1]
        key = f"batch_norm_train/{mode}"
        yield key, rnd(x, LOW[low]).reshape(16, 32, 64), rnd(g, LOW[low]).reshape(16, 32, 64), low, False, {
            "gw": dec(ops, key + "/grad1"), "gb": dec(ops, key + "/grad2")}


def rsqrt(v):
    """1 / sqrt(v) correctly rounded to float32 (the GPU's rsqrtf is within 2 ulp of it)."""
    return (1 / np.sqrt(np.asarray(v, np.float64))).astype(F32)


def hypotheses(xl, gl, lt):
    """name -> (grad_weight, grad_bias) in float32 before the store."""
    x64, g64 = xl.astype(np.float64), gl.astype(np.float64)
    mean64, var64 = x64.mean((0, 2)), x64.var((0, 2))
    exact_inv = 1 / np.sqrt(var64 + 1e-5)
    xhat = (x64 - mean64[None, :, None]) * exact_inv[None, :, None]
    out = {"exact sums (minifp today)": ((g64 * xhat).sum((0, 2)), g64.sum((0, 2)))}
    wm, wv = welford(xl)
    inv = rsqrt(wv + F32(1e-5))
    dxmu = gl * (xl - wm[None, :, None])
    out["float32 kernel tree, no rounding"] = (kernel_sum(dxmu, None) * inv, kernel_sum(gl, None))
    s2 = kernel_sum(rnd(dxmu, lt), lt)
    out["partials rounded to the input dtype (Float2 + shuffles)"] = (s2 * inv, kernel_sum(gl, lt))
    m32, v32 = F32(mean64), F32(var64)
    s2e = kernel_sum(rnd(gl * (xl - m32[None, :, None]), lt), lt)
    out["  same, mean/var exact in float32 instead of Welford"] = (s2e * rsqrt(v32 + F32(1e-5)), kernel_sum(gl, lt))
    mb, ib = rnd(wm, lt), rnd(inv, lt)
    out["mean and invstd rounded to the input dtype"] = (
        kernel_sum(gl * (xl - mb[None, :, None]), None) * ib, kernel_sum(gl, None))
    out["grad_weight = sum_dy_xmu * invstd in the input dtype"] = (
        rnd(rnd(kernel_sum(dxmu, None), lt) * rnd(inv, lt), lt), kernel_sum(gl, None))
    out["whole sums rounded to the input dtype once"] = (
        rnd(kernel_sum(dxmu, None), lt) * inv, rnd(kernel_sum(gl, None), lt))
    return out


def main(root):
    root = Path(root)
    rows = {}
    for key, xl, gl, low, cl, rec in cases(root):
        lt = LOW[low]
        for name, (gw, gb) in hypotheses(xl, gl, lt).items():
            for arr, mine in (("gw", gw), ("gb", gb)):
                want = rec[arr]
                # grad_weight/bias are stored in the weight's dtype: float32 under autocast, else the input's
                f32 = "autocast1" in key or key.startswith("batch_norm_train/autocast")
                stored = np.asarray(mine, F32) if f32 else rnd(np.asarray(mine, F32), lt)
                same = float((stored.view(np.uint32) == want.view(np.uint32)).mean())
                rows.setdefault(name, []).append((f"{key}/{arr}" + (" (channels_last kernel)" if cl else ""), same))
    for name, items in rows.items():
        nchw = [s for k, s in items if "channels_last" not in k]
        print(f"\n== {name}: NCHW mean {100 * np.mean(nchw):.1f}%")
        for k, s in items:
            print(f"  {100 * s:6.1f}%  {k}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE.parent / "shared" / "gpu" / "h100")

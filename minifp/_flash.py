"""Flash attention as cuDNN 9.19 runs it on the H100 (PyTorch 2.11's default SDPA backend), in pure NumPy.

Fitted to the H100 recordings in ../shared/gpu/h100/sweep.npz (tools/fit_sdpa.py; docs/h100_sdpa.md):
  - every product (Q K^T, P V, and the backward's) runs on the H100 tensor-core model of minifp._tensorcore
    (16 exact products + the accumulator per block FMA, 25 fraction bits kept, truncation), with the running
    float32 accumulator as the block FMA's c; a plain float32 dot is measurably worse (fit);
  - the forward visits the keys in blocks of 128 (the kernel name's 64x128xD tile; blocks of 64 fit worse);
  - per block: running max m of the raw scores, p = exp2(s * c - m * c) with c = scale * log2(e) as one float32
    constant (FlashAttention-3's form; exp(scale * (s - m)) fits worse), the running sum l of the float32 p,
    exp2 being the GPU's ex2.approx.ftz.f32 (measured on an H100, tools/record_ex2_table.py: 1-2 ulps off the
    correctly rounded value in 60% of arguments; with NumPy's exp2 instead the forward is 99.4-100% identical),
    p rounded to the half type before P V, the accumulator and l rescaled by exp2(m_old * c - m_new * c);
  - the output is acc / l rounded once to the half type.
The backward follows FlashAttention-2's algorithm with the key-block size of cuDNN's bprop kernel (64x64xD).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["flash_forward", "flash_backward", "ex2_approx"]

LOG2E = np.float32(1.4426950408889634)
_EX2 = Path(__file__).parent / "data" / "h100_ex2.npz"
_ex2_table = None
_NONE = -10000          # exponent of a zero term: never the block's largest


def _exponents(x):
    return np.where(x == 0, _NONE, np.frexp(x)[1] - 1)


def tc_mma(a, b, c, block=16, frac=25, min_exp=-133):
    """c + a @ b on the H100 tensor-core model (a, b half values, c float32 of the output's shape): float32."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    ea, eb = _exponents(a).astype(np.int16), _exponents(b).astype(np.int16)
    for j in range(0, a.shape[-1], block):
        prod = a[..., :, j:j + block, None] * b[..., None, j:j + block, :]      # exact in float64
        e = (ea[..., :, j:j + block, None] + eb[..., None, j:j + block, :]).max(-2)   # unnormalised exponents
        e = np.maximum(np.maximum(e, _exponents(c)), min_exp)
        scale = np.ldexp(1.0, frac - e)                                          # a power of two: exact
        # each term truncated to the block exponent's grid, summed exactly, the sum truncated to float32
        prod *= scale[..., None, :]
        np.trunc(prod, out=prod)
        s = (prod.sum(-2) + np.trunc(c * scale)) / scale
        m, ex = np.frexp(s)
        c = np.ldexp(np.trunc(np.ldexp(m, 24)), ex - 24)
    return c.astype(np.float32)


def ex2_approx(x):
    """The H100's ex2.approx.ftz.f32 of float32 x <= 0, from its measured table (tools/record_ex2_table.py)."""
    global _ex2_table
    if _ex2_table is None:      # T[j] = ex2.approx(-j 2**-23): correctly rounded 2**(-j 2**-23) plus measured ulps
        exact = np.exp2(-np.arange(1 << 23) * 2.0 ** -23).astype(np.float32)
        _ex2_table = (exact.view(np.int32) + np.load(_EX2)["ulps"]).view(np.float32).astype(np.float64)
    xd = np.asarray(x, np.float32).astype(np.float64)
    finite = np.isfinite(xd)
    fl = np.floor(np.where(finite, xd, 0.0))
    idx = np.floor((1 - (np.where(finite, xd, 0.0) - fl)) * 2.0 ** 23).astype(np.int64)   # the fixed-point input
    y = np.ldexp(_ex2_table[np.minimum(idx, (1 << 23) - 1)], (fl + 1).astype(np.int64))
    y = np.where(idx == 1 << 23, np.ldexp(1.0, fl.astype(np.int64)), y)          # integer x: exact powers of two
    y = np.where(y < 2.0 ** -126, 0.0, y)                                         # ftz
    return np.where(finite, y, np.where(xd > 0, np.inf, 0.0)).astype(np.float32)


def _scores(q, k, causal):
    """S = Q K^T in float32 on the tensor cores, -inf above the diagonal when causal."""
    L, Lk = q.shape[-2], k.shape[-2]
    s = tc_mma(q, np.swapaxes(k, -1, -2), np.zeros(q.shape[:-2] + (L, Lk), np.float32))
    if causal:
        s = np.where(np.arange(L)[:, None] >= np.arange(Lk), s, np.float32(-np.inf))
    return s.astype(np.float32)


def _dot_do_o(do, o):
    """D = rowsum(dO * O) in float32 as cuDNN's compute_dot_do_o kernel sums it (fit: chunks of 8, then halving)."""
    x = do.astype(np.float32) * o.astype(np.float32)                 # exact: products of two half values
    lanes = 1 << max(0, (-(-x.shape[-1] // 8) - 1).bit_length())     # zero-padded to a power of two of lanes
    x = np.concatenate([x, np.zeros(x.shape[:-1] + (8 * lanes - x.shape[-1],), np.float32)], -1)
    x = x.reshape(x.shape[:-1] + (lanes, 8))                         # one thread per 8 contiguous values (fit)
    acc = np.zeros(x.shape[:-1], np.float32)
    for i in range(8):
        acc = acc + x[..., i]
    while acc.shape[-1] > 1:                                         # across threads, largest offset first (fit)
        h = acc.shape[-1] // 2
        acc = acc[..., :h] + acc[..., h:]
    return acc


def flash_forward(q, k, v, causal=False, scale=None, block=128):
    """Attention output (q's half dtype) and the log2-domain row statistics (m * c, l) cuDNN's flash forward keeps."""
    dt = q.dtype
    c = np.float32(np.float32(1.0 / np.sqrt(q.shape[-1]) if scale is None else scale) * LOG2E)
    s = _scores(q, k, causal)
    shape = q.shape[:-1] + (1,)
    m = np.full(shape, -np.inf, np.float32)
    l = np.zeros(shape, np.float32)
    acc = np.zeros(q.shape[:-1] + (v.shape[-1],), np.float32)
    for j in range(0, k.shape[-2], block):
        sj = s[..., j:j + block]
        m_new = np.maximum(m, sj.max(-1, keepdims=True))
        mc = m_new * c
        p = ex2_approx(sj * c - mc)
        alpha = np.where(np.isneginf(m), np.float32(0), ex2_approx(m * c - mc)).astype(np.float32)
        l = (alpha * l + p.sum(-1, keepdims=True, dtype=np.float32)).astype(np.float32)
        acc = tc_mma(p.astype(dt), v[..., j:j + block, :], alpha * acc)    # P rounded to half before P V (fit)
        m = m_new
    return (acc / l).astype(dt), m * c, l


def flash_backward(q, k, v, o, do, mc, l, causal=False, scale=None, block=64):
    """Gradients (dq, dk, dv) in q's half dtype, FlashAttention-2's backward with key blocks of `block`."""
    dt = q.dtype
    sc = np.float32(1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
    c = np.float32(sc * LOG2E)
    d_row = _dot_do_o(do, o)
    s = _scores(q, k, causal)
    # P recomputed as exp2(fma(s, c, -m c)) / l: fits the recorded dV better than a stored log-sum-exp (fit)
    p = (ex2_approx((s.astype(np.float64) * c - mc).astype(np.float32)) / l).astype(np.float32)
    dq = np.zeros(q.shape, np.float32)
    dk = np.zeros(k.shape, np.float32)
    dv = np.zeros(v.shape, np.float32)
    for j in range(0, k.shape[-2], block):
        pj = p[..., j:j + block]
        dv[..., j:j + block, :] = tc_mma(np.swapaxes(pj.astype(dt), -1, -2), do, dv[..., j:j + block, :])
        dp = tc_mma(do, np.swapaxes(v[..., j:j + block, :], -1, -2), np.zeros(pj.shape, np.float32))
        ds = (pj * (dp - d_row) * sc).astype(np.float32).astype(dt)           # scaled before rounding (fit)
        dk[..., j:j + block, :] = tc_mma(np.swapaxes(ds, -1, -2), q, dk[..., j:j + block, :])
        dq = tc_mma(ds, k[..., j:j + block, :], dq)
    return dq.astype(dt), dk.astype(dt), dv.astype(dt)

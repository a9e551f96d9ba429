"""Fit cuDNN/flash attention numerics (H100, torch 2.11) to ../shared/gpu/h100 recordings; prints identical fractions."""
import os
import sys
import zlib

import ml_dtypes
import numpy as np

SWEEP = "/work/shared/gpu/h100/sweep.npz"
LOW = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
ONLY = os.environ.get("ONLY", "")    # e.g. ONLY="/32/ 1024/": only the cases whose names contain one of these
LOG2E = np.float32(1.4426950408889634)


def rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def inputs(L, d, low):
    """q, k, v, dO of the sweep case, in the half type (as record_h100_sweep.py section 2 draws them)."""
    r = rng(f"sdpa_sweep/{L}/{d}")
    shape = (2, 4, L, d)
    q, k, v = (r.standard_normal(shape).astype(np.float32).astype(LOW[low]) for _ in range(3))
    g = rng(f"sdpa_sweep/{L}/{d}/g").standard_normal(shape).astype(np.float32).astype(LOW[low])
    return q, k, v, g


def f32(x):
    return np.asarray(x, np.float32)


def fwd(q, k, v, causal, low, bc=128, exp="exp2", scale_where="fold", final="div", mm="tc", q0=0):
    """Candidate flash forward; returns O (half) and the log-sum-exp stats (float32)."""
    dt = LOW[low]
    B, H, L, d = q.shape
    sc = np.float32(1.0 / np.sqrt(d))
    Lk = k.shape[2]
    kt = np.swapaxes(k.astype(np.float64), -1, -2)
    if mm == "tc":
        s = tc_mma(q.astype(np.float64), kt, np.zeros((B, H, L, Lk), np.float32))
    else:
        s = (q.astype(np.float64) @ kt).astype(np.float32)
    if causal:
        s = np.where(np.arange(L)[:, None] + q0 >= np.arange(Lk), s, -np.inf).astype(np.float32)
    m = np.full((B, H, L, 1), -np.inf, np.float32)
    l = np.zeros((B, H, L, 1), np.float32)
    acc = np.zeros((B, H, L, d), np.float32)
    vv = v.astype(np.float32)
    for j in range(0, Lk, bc):
        sj = s[..., j:j + bc]
        mj = np.maximum(m, sj.max(-1, keepdims=True))
        if exp == "exp2":
            c = mj * (sc * LOG2E)
            p = np.exp2(sj * (sc * LOG2E) - c)
            alpha = np.exp2(m * (sc * LOG2E) - c)
        elif exp == "ex2":      # the H100's ex2.approx.ftz.f32 (measured table, minifp._flash.ex2_approx)
            from minifp._flash import ex2_approx
            c = mj * (sc * LOG2E)
            p = ex2_approx(sj * (sc * LOG2E) - c)
            alpha = ex2_approx(m * (sc * LOG2E) - c)
        elif exp == "exp2_fma":  # fma(s, scale*log2e, -m*scale*log2e) in float64 then rounded
            c = (mj * (sc * LOG2E)).astype(np.float32)
            p = np.exp2((sj.astype(np.float64) * np.float64(sc * LOG2E) - c).astype(np.float32))
            alpha = np.exp2((m.astype(np.float64) * np.float64(sc * LOG2E) - c).astype(np.float32))
        elif exp == "pre2":    # scale first (t = s * scale in float32), then exp2 with log2(e)
            c = (mj * sc) * LOG2E
            p = np.exp2((sj * sc) * LOG2E - c)
            alpha = np.exp2((m * sc) * LOG2E - c)
        elif exp == "pre":
            p = np.exp(sj * sc - mj * sc)
            alpha = np.exp(m * sc - mj * sc)
        else:
            p = np.exp((sj - mj) * sc)
            alpha = np.exp((m - mj) * sc)
        alpha = np.where(np.isneginf(m), np.float32(0), alpha).astype(np.float32)
        p = p.astype(np.float32)
        l = (alpha * l + p.sum(-1, keepdims=True, dtype=np.float32)).astype(np.float32)
        ph = p.astype(dt).astype(np.float64)
        if mm == "tc":
            acc = tc_mma(ph, vv[..., j:j + bc, :], (alpha * acc).astype(np.float32))
        else:
            acc = (alpha * acc + (ph @ vv[..., j:j + bc, :].astype(np.float64)).astype(np.float32)).astype(np.float32)
        m = mj
    if final == "div":
        o = acc / l
    else:
        o = acc * (np.float32(1) / l)
    return o.astype(np.float32).astype(dt), m, l


def tc_mma(a, b, c, block=16, frac=25, min_exp=-133):
    """c + a @ b on the H100 tensor-core model (minifp._tensorcore's, with a matrix c): float32."""
    a, b, c = np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float32).astype(np.float64)
    ea = np.where(a == 0, -10000, np.frexp(a)[1] - 1)
    eb = np.where(b == 0, -10000, np.frexp(b)[1] - 1)
    for j in range(0, a.shape[-1], block):
        prod = a[..., :, j:j + block, None] * b[..., None, j:j + block, :]     # exact products
        e = ea[..., :, j:j + block, None] + eb[..., None, j:j + block, :]
        e = np.maximum(np.maximum(e.max(-2), np.where(c == 0, -10000, np.frexp(c)[1] - 1)), min_exp)
        unit = np.ldexp(1.0, e - frac)
        s = (np.trunc(prod / unit[..., None, :]).sum(-2) + np.trunc(c / unit)) * unit
        m, ex = np.frexp(s)
        c = np.ldexp(np.trunc(np.ldexp(m, 24)), ex - 24)                      # truncate to float32
    return c.astype(np.float32)


def ident(a, ref_bits):
    b = np.ascontiguousarray(a).view(np.uint16).reshape(-1)[:ref_bits.size]
    return float((b == ref_bits).mean())


def recorded_heads(x, L, d):
    """The heads (flattened over batch and head) that hold the first 8192 output values, as (1, n, L, d)."""
    n = min(8, -(-8192 // (L * d)))
    return x.reshape(1, 8, L, d)[:, :n]


def cases():
    for low in ("float16", "bfloat16"):
        for L in (16, 32, 64, 128, 256, 512, 1024):
            for d in (32, 64, 128):
                for causal in (0, 1):
                    yield low, L, d, causal


def main(variants):
    z = np.load(SWEEP)
    print("case", *variants, sep="\t")
    for low, L, d, causal in cases():
        name = f"sdpa/{low}/{L}/{d}/{causal}"
        if name + "/y" not in z.files or (ONLY and not any(o in name for o in ONLY.split())):
            continue
        q, k, v, g = inputs(L, d, low)
        q, k, v = (recorded_heads(x, L, d) for x in (q, k, v))
        q = q[..., :min(L, -(-8192 // d)), :]    # the recorded values: the first 8192 of the output
        row = []
        for var in variants:
            kw = dict(x.split("=") for x in var.split(",") if x)
            if "bc" in kw:
                kw["bc"] = int(kw["bc"])
            o, _, _ = fwd(q, k, v, causal, low, **kw)
            row.append(f"{ident(o, z[name + '/y']):.4f}")
        print(name, *row, sep="\t", flush=True)


def grads(bwd_block=64):
    """minifp._flash's forward and backward against every sweep case: identical fractions of y, gq, gk, gv."""
    from minifp._flash import flash_backward, flash_forward
    z = np.load(SWEEP)
    print("case", "y", "gq", "gk", "gv", sep="\t")
    for low, L, d, causal in cases():
        name = f"sdpa/{low}/{L}/{d}/{causal}"
        if name + "/y" not in z.files or (ONLY and not any(o in name for o in ONLY.split())):
            continue
        q, k, v, g = (recorded_heads(x, L, d) for x in inputs(L, d, low))
        o, mc, l = flash_forward(q, k, v, bool(causal))
        dq, dk, dv = flash_backward(q, k, v, o, g, mc, l, bool(causal), block=bwd_block)
        row = [ident(x, z[f"{name}/{key}"]) for x, key in ((o, "y"), (dq, "gq"), (dk, "gk"), (dv, "gv"))]
        print(name, *(f"{r:.4f}" for r in row), sep="\t", flush=True)


def pin():
    """minifp._flash against pin.npz's SDPA per backend (default, cudnn, flash, efficient, math)."""
    from minifp._flash import flash_backward, flash_forward
    z = np.load(SWEEP.replace("sweep", "pin"))
    print("case", "backend", "y", "gq", "gk", "gv", sep="\t")
    for shape in ((4, 4, 64, 32), (2, 8, 256, 64)):
        for low in ("float16", "bfloat16"):
            for causal in (False, True):
                r = rng(f"sdpa{shape}")
                q, k, v = (r.standard_normal(shape).astype(np.float32).astype(LOW[low]) for _ in range(3))
                g = rng(f"sdpa{shape}/g").standard_normal(shape).astype(np.float32).astype(LOW[low])
                o, mc, l = flash_forward(q, k, v, causal)
                got = (o, *flash_backward(q, k, v, o, g, mc, l, causal))
                for b in ("default", "cudnn", "flash", "efficient", "math"):
                    key = f"sdpa/{'x'.join(map(str, shape))}/{low}/{'causal' if causal else 'full'}/{b}"
                    row = [ident(x, z[f"{key}/{n}"]) for x, n in zip(got, ("y", "gq", "gk", "gv"))]
                    print(key.rsplit("/", 1)[0], b, *(f"{x:.4f}" for x in row), sep="\t", flush=True)


FIXTURE = "tests/fixtures/h100/sdpa.npz"
FIXTURE_CASES = [f"sdpa/{low}/{L}/{d}/{c}" for low in ("float16", "bfloat16")
                 for L, d, c in ((64, 64, 0), (64, 128, 1), (128, 32, 0), (256, 64, 1))]
FIXTURE_VALUES = 2048


def fixture():
    """Write the test fixture: the first 2048 recorded values of y, gq, gk, gv for FIXTURE_CASES (raw bits)."""
    z = np.load(SWEEP)
    out = {f"{n}/{key}": z[f"{n}/{key}"][:FIXTURE_VALUES] for n in FIXTURE_CASES for key in ("y", "gq", "gk", "gv")}
    np.savez_compressed(FIXTURE, **out)
    print(FIXTURE, os.path.getsize(FIXTURE), "bytes")


if __name__ == "__main__":
    if sys.argv[1:2] == ["fixture"]:
        fixture()
    elif sys.argv[1:2] == ["pin"]:
        pin()
    elif sys.argv[1:2] == ["grads"]:
        grads(*(int(a) for a in sys.argv[2:]))
    else:
        main(sys.argv[1:] or ["mm=tc,exp=ex2", "mm=tc", "mm=f64", "mm=tc,exp=exp", "mm=tc,bc=64"])

"""cuBLAS float32 SGEMM (TF32 off) on sm_90 (H100 / H200, PyTorch 2.11 + CUDA 13), bit for bit: a NumPy model.

    python3 tools/fit_cublas_sgemm.py [--h100 ../shared/gpu/h100]   # per recorded array: the share of
                                                                      # bit-identical values of this model

A fit, not yet built into the engine (2026-11-30): the slices are a table of the recorded shapes, with no rule yet
from shape to slices, and the H200's float32 MLP run needs CUDA's float32 cross-entropy too (below).

Every output's k-sum is built the same way, only the partition of k varies with the kernel (shape, layout):
  1. the k indices are cut into slices (SPEC below);
  2. each slice is one FMA chain in increasing k, starting from 0:  acc = fma(a[m,k], b[k,n], acc)
     (the first step is just round(a*b));
  3. the slice partials are added one after another in float32 (round to nearest even):
     ((p0 + p1) + p2) + ...   (10x1024x256/tn alone uses the order p0, p2, p3, p1);
  4. a bias (F.linear / addmm with a 1-D bias, the cublasLt bias epilogue) is added last: round(sum + bias[n]).
Slice kinds:  ("chain",)       one slice, k = 0..K-1
              ("contig", L)    [0,L), [L,2L), ... (the last one shorter)      -> split-K with a splitKreduce
              ("inter", T, S)  k-tiles of T consecutive k; slice s = tiles s, s+S, s+2S, ... (chained in k order)
Fit to: tests/fixtures/pytorch/cuda_training.json (H200, run mlp_f32_sgd) and ../shared/gpu/h100/gemm.npz (H100,
f32).
Also here: PyTorch's column-sum reduction (grad of a bias) and the float32 cross-entropy backward with CUDA's
expf/logf, needed to reproduce the MLP's gradients (see ce_grad).
"""
import argparse
import json
import zlib
from pathlib import Path

import numpy as np

f32 = np.float32
ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "tests" / "fixtures" / "pytorch" / "cuda_training.json"
GEMM = ROOT.parent / "shared" / "gpu" / "h100" / "gemm.npz"
EX2 = ROOT / "minifp" / "data" / "h100_ex2.npz"


# ------------------------------------------------------------------------------------------------ float32 FMA
def fma(a, b, c):
    """round(a*b + c) to float32, once (round-to-odd in float64)."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    s = p + c
    t = s - p
    err = (p - (s - t)) + (c - t)
    bits = s.view(np.int64)
    inexact = ((err > 0) | (err < 0)) & (bits & 1 == 0)
    return (bits + np.where((err > 0) == (s > 0), 1, -1) * inexact).view(np.float64).astype(f32)


# ------------------------------------------------------------------------------------------------ the SGEMM model
def slices(K, spec):
    kind = spec[0]
    if kind == "chain":
        return [np.arange(K)]
    if kind == "contig":
        L = spec[1]
        return [np.arange(s, min(K, s + L)) for s in range(0, K, L)]
    if kind == "inter":
        T, S = spec[1], spec[2]
        nt = -(-K // T)
        return [np.concatenate([np.arange(t * T, min(K, (t + 1) * T)) for t in range(s, nt, S)]) for s in range(S)]
    raise ValueError(spec)


def sgemm(A, B, spec=("chain",), bias=None, order=None):
    """A (M,K) @ B (K,N) as cuBLAS's float32 GEMM computes it (see the module doc); bias (N,) added last."""
    A = np.asarray(A, f32); B = np.asarray(B, f32)
    lists = slices(A.shape[1], spec)
    S, L = len(lists), max(len(l) for l in lists)
    M, N = A.shape[0], B.shape[1]
    Ap = np.zeros((S, L, M), f32); Bp = np.zeros((S, L, N), f32)
    for s, l in enumerate(lists):
        Ap[s, :len(l)] = A[:, l].T
        Bp[s, :len(l)] = B[l, :]
    acc = np.zeros((S, M, N), f32)
    for t in range(L):                       # all slices' chains advance together (padding products are 0)
        acc = fma(Ap[:, t, :, None], Bp[:, t, None, :], acc)
    out = None
    for s in (order or range(S)):
        out = acc[s].copy() if out is None else (out + acc[s]).astype(f32)
    return out if bias is None else (out + np.asarray(bias, f32)).astype(f32)


# (M, N, K, layout) of torch.mm(A, B) -> spec. layout: nn both contiguous, tn A = a transposed view (column-major
# A), nt B column-major. H100 gemm.npz (f32 = allow_tf32 False) and the H200 MLP step.
SPEC = {
    # plain chains
    **{(1024, 784, 256, l): ("chain",) for l in ("nn", "tn", "nt")},
    **{(1024, 1024, 256, l): ("chain",) for l in ("nn", "tn", "nt")},
    **{(256, 1024, 10, l): ("chain",) for l in ("nn", "tn", "nt")},
    (1024, 2048, 512, "nn"): ("chain",),
    (512, 2048, 1024, "nn"): ("chain",),
    # split-K, contiguous slices of L
    (256, 1024, 784, "tn"): ("contig", 100),      # 8 slices
    (256, 784, 1024, "tn"): ("contig", 104),      # 10 slices
    (256, 1024, 1024, "tn"): ("contig", 128),     # 8
    **{(256, 10, 1024, l): ("contig", 64) for l in ("nn", "tn", "nt")},   # 16
    (10, 1024, 256, "nn"): ("contig", 64),        # 4
    (1024, 512, 2048, "nn"): ("contig", 256),     # 8
    (64, 64, 2048, "nn"): ("contig", 128),        # 16
    (64, 64, 4096, "nn"): ("contig", 64),         # 64
    (64, 64, 8192, "nn"): ("contig", 64),         # 128
    (128, 128, 2048, "nn"): ("contig", 64),       # 32
    (128, 128, 4096, "nn"): ("contig", 128),      # 32
    (128, 128, 8192, "nn"): ("contig", 128),      # 64
    (256, 256, 2048, "nn"): ("contig", 64),       # 32
    (256, 256, 8192, "nn"): ("contig", 128),      # 64
    (512, 512, 2048, "nn"): ("contig", 128),      # 16
    (512, 512, 4096, "nn"): ("contig", 256),      # 16
    (512, 512, 8192, "nn"): ("contig", 512),      # 16
    # k-tiles of 8 dealt round-robin to S partial sums
    (256, 1024, 784, "nn"): ("inter", 8, 6),
    (256, 1024, 784, "nt"): ("inter", 8, 6),
    (256, 784, 1024, "nn"): ("inter", 8, 5),
    (256, 784, 1024, "nt"): ("inter", 8, 5),
    (256, 1024, 1024, "nn"): ("inter", 8, 4),
    (256, 1024, 1024, "nt"): ("inter", 8, 6),
    (256, 256, 4096, "nn"): ("inter", 8, 16),
    (10, 1024, 256, "tn"): ("inter", 8, 4),       # partials added in the order 0, 2, 3, 1
    (10, 1024, 256, "nt"): ("inter", 1, 16),      # k mod 16 (gemmSN-like)
    # the MLP's GEMMs (H200): forward addmm with bias, backward mm
    (32, 64, 64, "nt+bias"): ("contig", 16),      # x @ W1^T + b1: 4 slices of 16, bias last
    (32, 10, 64, "nt+bias"): ("contig", 16),      # h @ W2^T + b2
    # ops.npz (H100) F.linear(x 256x784, W 1024x784, b): forward addmm + bias, backward mm; torch.bmm: chains
    (256, 1024, 784, "nt+bias"): ("chain",),      # NOT the ("inter", 8, 6) of torch.mm at the same shape
    (8, 64, 128, "bmm"): ("chain",), (8, 128, 64, "bmm"): ("chain",), (8, 64, 64, "bmm"): ("chain",),
    (32, 64, 10, "nn"): ("contig", 4),            # grad_h = g @ W2: [0,4) [4,8) [8,10)
    (10, 64, 32, "tn"): ("chain",),               # grad_W2 = g^T @ h
    (64, 64, 32, "tn"): ("chain",),               # grad_W1 = gh^T @ x
}
ORDER = {(10, 1024, 256, "tn"): [0, 2, 3, 1]}


def mm(A, B, layout, bias=None, shape=None):
    """torch.mm / addmm of A (M,K) and B (K,N) in memory layout `layout`; shape = (M, N, K) of the whole product
    when A, B are only its top-left rows / columns (the kernel, hence the model, depends on the whole shape)."""
    key = (*(shape or (A.shape[0], B.shape[1], A.shape[1])), layout + ("" if bias is None else "+bias"))
    return sgemm(A, B, SPEC[key], bias, ORDER.get(key))


# ------------------------------------------------------------------------------------------------ other kernels
def colsum(X, vt0=4):
    """PyTorch's reduce_kernel for x.sum(0) of a contiguous (R, N) float32 tensor (ReduceConfig, Reduce.cuh):
    output_vec_size v = 4 halved until it divides N; max threads 512 / v; block_width = min(pow2 <= N/v, 32),
    block_height = min(pow2 <= R (cap 512/v), (512/v) / block_width). If R >= 16 * block_height (or >= 256) the rows
    are split across the block_height threads of a column (thread y: rows y, y+H, ...), else H = 1. Each thread:
    vt0 = 4 accumulators from 0, its j-th row into accumulator j % 4, then ((a0+a1)+a2)+a3; threads y combined by
    halving (t[y] += t[y+off], off = H/2 .. 1)."""
    R, N = X.shape
    v = 4
    while v > 1 and N % v:
        v //= 2
    mnt = 512 // v
    p2 = lambda n: mnt if n >= mnt else 1 << (int(n).bit_length() - 1)
    bw = min(p2(N // v), 32)
    bh = min(p2(R), mnt // bw)
    H = bh if (R >= bh * 16 or R >= 256) else 1
    parts = []
    for y in range(H):
        acc = [np.zeros(N, f32) for _ in range(vt0)]
        for j, r in enumerate(range(y, R, H)):
            acc[j % vt0] = (acc[j % vt0] + X[r]).astype(f32)
        out = acc[0]
        for a in acc[1:]:
            out = (out + a).astype(f32)
        parts.append(out)
    off = H // 2
    while off:
        for y in range(off):
            parts[y] = (parts[y] + parts[y + off]).astype(f32)
        off //= 2
    return parts[0]


_T = None


def ex2_approx(f):
    """MUFU.EX2 (ex2.approx.ftz.f32) from the H100's measured table T[j] = ex2(-j 2^-23) (minifp/data/h100_ex2.npz):
    x < 0: 2^(floor x + 1) T[floor((1 - frac x) 2^23)]; 0 <= x < 1: 1 at 0, else 2 T[2^23 - 1 - floor(x 2^23)]."""
    global _T
    if _T is None:
        exact = np.exp2(-np.arange(1 << 23) * 2.0 ** -23).astype(f32)
        _T = (exact.view(np.int32) + np.load(EX2)["ulps"]).view(f32).astype(np.float64)
    x = np.asarray(f, f32).astype(np.float64)
    fl = np.floor(x)
    idx_neg = np.minimum(np.floor((1 - (x - fl)) * 2.0 ** 23).astype(np.int64), (1 << 23) - 1)
    neg = np.where(x == fl, np.ldexp(1.0, fl.astype(np.int64)), np.ldexp(_T[idx_neg], (fl + 1).astype(np.int64)))
    m = np.floor(np.clip(x, 0, 1) * 2.0 ** 23).astype(np.int64)
    pos = np.where(x == 0, 1.0, 2 * _T[np.clip((1 << 23) - 1 - m, 0, (1 << 23) - 1)])
    return np.where(x >= 0, pos, neg).astype(f32)


def expf(x):
    """CUDA expf (nvcc 13, sm_90): FFMA.SAT / FFMA.RM range reduction, two-part log2(e), MUFU.EX2, scale."""
    x = np.asarray(x, f32)
    t = np.clip(fma(x, np.uint32(0x3bbb989d).view(f32), f32(0.5)), 0, 1).astype(f32)
    j = np.floor(t.astype(np.float64) * 252) - 126                 # fma.rm(t, 252, 12582913) - 12583039
    f = fma(x, f32(1.4426950216293334961), -j.astype(f32))
    f = fma(x, f32(1.925963033500011079e-08), f)
    return (ex2_approx(f).astype(np.float64) * 2.0 ** j).astype(f32)


_LOGC = [0.14084610342979431152, -0.12148627638816833496, 0.13980610668659210205, -0.16684235632419586182,
         0.20012299716472625732, -0.24999669194221496582, 0.33333182334899902344, -0.5]


def logf(x):
    """CUDA logf (sm_90 SASS) for positive finite x."""
    x = np.asarray(x, f32)
    sub = x < f32(1.175494350822287508e-38)
    x = np.where(sub, x * f32(8388608), x).astype(f32)
    xb = x.view(np.int32)
    e_bits = (xb - np.int32(0x3f2aaaab)) & np.int32(-8388608)
    f = ((xb - e_bits).view(f32) - f32(1)).astype(f32)
    p = fma(f, -np.uint32(0x3e055027).view(f32), f32(_LOGC[0]))
    for c in _LOGC[1:]:
        p = fma(f, p, f32(c))
    p = fma(f, (f * p).astype(f32), f)
    e = fma(e_bits.astype(f32), f32(1.1920928955078125e-07), np.where(sub, f32(-23), f32(0)).astype(f32))
    return fma(e, f32(0.69314718246459960938), p)


def warp_sum(v, W):
    """softmax_warp_*: lane l holds elements l, l+W, ... summed from 0, then a butterfly over W lanes."""
    R, D = v.shape
    it = -(-D // W)
    p = np.zeros((R, it * W), f32); p[:, :D] = v
    lanes = np.zeros((R, W), f32)
    for i in range(it):
        lanes = (lanes + p[:, i * W:(i + 1) * W]).astype(f32)
    off = W // 2
    while off:
        lanes = (lanes + lanes[:, np.arange(W) ^ off]).astype(f32)
        off //= 2
    return lanes[:, 0]


def ce(logits, y):
    """F.cross_entropy (mean) on CUDA, float32: (loss, d loss / d logits) as PyTorch 2.11's kernels compute them."""
    R, D = logits.shape
    W = min(32, 1 << (D - 1).bit_length())
    d = (logits - logits.max(1, keepdims=True)).astype(f32)
    out = (d - logf(warp_sum(expf(d), W))[:, None]).astype(f32)      # log_softmax
    picked = out[np.arange(R), y]
    sh = np.zeros(32, f32)                                            # nll forward: 32 threads, strided rows,
    for i in range(R):                                                # then a warp reduce (shfl_down 16..1)
        sh[i % 32] = f32(sh[i % 32] - picked[i])
    off = 16
    while off:
        sh = np.array([f32(sh[i] + sh[i + off]) if i + off < 32 else sh[i] for i in range(32)], f32)
        off //= 2
    tot = sh[0]
    loss = f32(tot / f32(R))
    gs = f32(-(f32(1) / f32(R)))
    gn = np.zeros_like(logits); gn[np.arange(R), y] = gs
    return loss, fma(-expf(out), gs, gn)                              # log_softmax backward: g - exp(out) * sum(g)


# ------------------------------------------------------------------------------------------------ the MLP run
def mlp_run(rec, steps=5, lr=f32(0.1), mom=f32(0.9)):
    rng = np.random.default_rng(11)
    P = []
    for s in [(64, 64), (64,), (10, 64), (10,)]:
        bound = 1 / np.sqrt(max(1, s[1] if len(s) > 1 else s[0]))
        P.append(rng.uniform(-bound, bound, s).astype(f32))
    bufs = None
    rows = []
    dec = lambda h: np.frombuffer(bytes.fromhex(h), "<u4").view(f32)
    share = lambda a, b: (np.asarray(a, f32).ravel().view(np.uint32) == dec(b).view(np.uint32)).mean()
    for step in range(steps):
        r = np.random.default_rng(100 + step)
        x, y = r.standard_normal((32, 64)).astype(f32), r.integers(0, 10, 32)
        W1, b1, W2, b2 = P
        h = mm(x, W1.T, "nt", b1)
        a = np.maximum(h, 0).astype(f32)
        logits = mm(a, W2.T, "nt", b2)
        loss, g = ce(logits, y)
        gW2 = mm(g.T, a, "tn"); gb2 = colsum(g)
        gh = np.where(h > 0, mm(g, W2, "nn"), 0).astype(f32)
        gW1 = mm(gh.T, x, "tn"); gb1 = colsum(gh)
        G = [gW1, gb1, gW2, gb2]
        if step == 0:
            rows.append(("logits (step 1)", share(logits, rec["logits"]), logits.size))
            for nm, gg, hx in zip(("grad W1", "grad b1", "grad W2", "grad b2"), G, rec["grads"]):
                rows.append((nm, share(gg, hx), gg.size))
        bufs = [gg.copy() for gg in G] if bufs is None else [(bb * mom + gg).astype(f32) for bb, gg in zip(bufs, G)]
        P = [fma(-lr, bb, p) for bb, p in zip(bufs, P)]
        rows.append((f"loss step {step + 1}", share(loss, rec["losses"][step]), 1))
    for nm, p, hx in zip(("W1", "b1", "W2", "b2"), P, rec["params"]):
        rows.append((f"{nm} after step {steps}", share(p, hx), p.size))
    return rows


def gemm_rows():
    z = np.load(GEMM)
    rows = []
    for key in z.files:
        if not key.endswith("/tf32/f32"):
            continue
        shp, layout = key.split("/")[:2]
        m, n, k = map(int, shp.split("x"))
        r = np.random.default_rng(zlib.crc32(f"{m}x{n}x{k}/{layout}".encode()))
        a = (r.uniform(1, 2, (m, k)) * 2.0 ** r.integers(-6, 6, (m, k)) * r.choice([-1, 1], (m, k))).astype(f32)
        b = (r.uniform(1, 2, (k, n)) * 2.0 ** r.integers(-6, 6, (k, n)) * r.choice([-1, 1], (k, n))).astype(f32)
        ref = z[key]
        c = mm(a[:ref.shape[0]], b[:, :ref.shape[1]], layout, shape=(m, n, k))     # the recorded top-left corner
        same = (c.view(np.uint32) == ref).mean()
        rows.append((f"gemm.npz {m}x{n}x{k}/{layout} {SPEC[(m, n, k, layout)]}", same, ref.size))
    return rows


def ops_rows():
    """ops.npz (H100): F.linear float32 forward / backward with an exact upstream gradient, and torch.bmm."""
    z = np.load(GEMM.parent / "ops.npz")
    rng = lambda n: np.random.default_rng(zlib.crc32(n.encode()))
    r = rng("linear")
    x, w, b = [r.standard_normal(s).astype(f32) for s in [(256, 784), (1024, 784), (1024,)]]
    g = rng("linear/g").standard_normal((256, 1024)).astype(f32)
    share = lambda c, key: ((np.asarray(c, f32).ravel()[:z[key].size].view(np.uint32) == z[key]).mean(), z[key].size)
    rows = [("ops linear y = addmm(b, x, W^T)   (chain + bias)",
             *share(mm(x[:16], w.T, "nt", b, (256, 1024, 784)), "linear/float32/y")),
            ("ops linear grad x = g @ W        (inter 8,5)",
             *share(mm(g[:21], w, "nn", None, (256, 784, 1024)), "linear/float32/grad0")),
            ("ops linear grad W = g^T @ x      (chain)",
             *share(mm(g.T[:21], x, "tn", None, (1024, 784, 256)), "linear/float32/grad1")),
            ("ops linear grad b = g.sum(0)     (colsum, 4 row-threads)", *share(colsum(g), "linear/float32/grad2"))]
    r = rng("bmm")
    a, bb = [r.standard_normal(s).astype(f32) for s in [(8, 64, 128), (8, 128, 64)]]
    gb = rng("bmm/g").standard_normal((8, 64, 64)).astype(f32)
    bm = lambda A, B: np.stack([sgemm(A[i], B[i], ("chain",)) for i in range(len(A))])
    rows += [("ops bmm y            (chain)", *share(bm(a[:4], bb[:4]), "bmm/float32/y")),
             ("ops bmm grad0 g @ b^T (chain)", *share(bm(gb[:2], np.swapaxes(bb, 1, 2)[:2]), "bmm/float32/grad0")),
             ("ops bmm grad1 a^T @ g (chain)", *share(bm(np.swapaxes(a, 1, 2)[:2], gb[:2]), "bmm/float32/grad1"))]
    return rows


def cnn_rows(rec):
    """cnn_f32_sgd (H200): only what needs no convolution: CE on the recorded logits (8x10), its bias gradient."""
    dec = lambda h: np.frombuffer(bytes.fromhex(h), "<u4").view(f32)
    r = np.random.default_rng(100)
    r.standard_normal((8, 3, 8, 8)); y = r.integers(0, 10, 8)
    loss, g = ce(dec(rec["logits"]).reshape(8, 10), y)
    bits = lambda v: np.asarray(v, f32).view(np.uint32)
    return [("cnn loss step 1 (CE of the recorded logits)", float(bits(loss) == bits(dec(rec["losses"][0]))[0]), 1),
            ("cnn grad of the Linear's bias (colsum of 8 rows)", (bits(colsum(g)) == bits(dec(rec["grads"][7]))).mean(),
             10)]


def main():
    global GEMM
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h100", type=Path, default=GEMM.parent)
    GEMM = parser.parse_args().h100 / "gemm.npz"
    runs = json.loads(TRAIN.read_text())["runs"]
    rec = runs["mlp_f32_sgd"]
    for title, rows in (("H200 mlp_f32_sgd (cuda_training.json)", mlp_run(rec)),
                        ("H200 cnn_f32_sgd", cnn_rows(runs["cnn_f32_sgd"])), ("H100 gemm.npz, f32", gemm_rows()),
                        ("H100 ops.npz, float32", ops_rows())):
        print(title)
        for nm, s, n in rows:
            print(f"  {nm:60s} {s:7.2%}  of {n}")


if __name__ == "__main__":
    main()

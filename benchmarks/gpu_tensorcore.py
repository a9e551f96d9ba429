"""minifp's tensor-core models against the GPU's own GEMMs; records the GPU's outputs as test fixtures.

    python benchmarks/gpu_tensorcore.py --record OUT.npz   # on an NVIDIA GPU with PyTorch: run the GEMMs, save
    python benchmarks/gpu_tensorcore.py --replay OUT.npz [--fixture FIXTURE.npz]   # anywhere: the models

The GPU's GEMMs: torch.mm(a, b, out_dtype=torch.float32) for float16 and bfloat16 inputs (cuBLAS, float32
output, no rounding after the accumulator), torch.mm of float32 with TF32 allowed, and torch._scaled_mm with
unit scales for fp8 (use_fast_accum False and True). Inputs: the papers' vectors (Fasi et al. 2021's tests B-D
and block-size probes, each in row i of A and column i of B, so D[i, i] is its dot product; c enters through
torch.addmm, added by cuBLAS) and random values spread over 12 binades with zeros, 128 x K @ K x 128 for
K = 16 ... 4096 (131072 dot products per format), and K = 4096 at 1024 x 1024 outputs for float16, bfloat16 and
tf32. Random inputs come from a seed: the recording keeps each matrix's CRC32, so a replay that draws other
numbers stops rather than compares.
"""
import argparse
import math
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minifp import _gpu, _tensorcore as tc      # noqa: E402
from minifp._rounding import round_to           # noqa: E402

FORMATS = ("float16", "bfloat16", "tf32", "float8_e4m3", "float8_e5m2")
KS = (16, 32, 48, 64, 128, 256, 1024, 4096)
SIDE = 128
BIG, BIG_SIDE = ("float16", "bfloat16", "tf32"), 1024
x = math.ldexp


def representable(v, fmt):
    v = np.asarray(v, np.float64)
    return np.array_equal(np.asarray(round_to(v, fmt), np.float64), v)


def paper_vectors(fmt):
    """[(a, b, c)]: Fasi et al. 2021 tests B-D (tests/test_tensorcore.py names each) and block-size probes,
    kept where every value is one of fmt's."""
    f = tc.model("H100", fmt).fmt
    t, u = f.man_bits + 1, x(1, -24)
    below1 = 1 - x(1, -t)
    out = [([below1] * 4, [below1] * 4, 0.0),                                   # B: products exact
           ([1.0] * 4, [u] * 4, 1.0), ([0.5] * 4, [u] * 4, 1.0),              # B: small products beside c
           ([1.0] * 4, [2.0, 3 * u, 0, 0], 0.0), ([1.0] * 4, [-2.0, -3 * u, 0, 0], 0.0),   # C: toward zero
           ([1.0], [1.0], -(1 - u)),                                            # D1: extra alignment bits
           ([1.0] * 4, [u] * 4, 1 - u),                                         # D2: no normalisation
           ([1.0, 1.0], [1.0, -u], -1 + u),                                     # D3
           ([1.0] * 4, [1.0, 1.5, 1.75, 1.875], 1.875),                         # D4: carry out
           ([1.0] * 4, [1.0] * 4, 1 + x(1, -22) + x(1, -23)),
           ([1.0] * 4, [-1.0] * 4, -1 - x(1, -22) - x(1, -23)),
           ([0.5] * 4, [u] * 3 + [3 * u], 1 - u), ([0.5] * 4, [u] * 3 + [3 * u], 1.0)]      # D5
    for j in range(4):                                                          # B: alignment to the largest
        b = [u] * 4
        b[j] = 1.0
        out += [([1.0] * 4, b, u), ([0.5] * 3 + [1.0] if j == 3 else [0.5] * j + [1.0] + [0.5] * (3 - j), b, u)]
        b = [1.0] * 4
        b[j] = x(1, -23)
        out.append(([1.0] * 4, b, 1 + x(1, -22) + x(1, -23)))
    for tiny in (x(1, -26), x(1, -16)):                                         # block size: n tiny products, 1
        root = math.sqrt(tiny)
        out += [([root] * n + [1.0], [root] * n + [1.0], 0.0) for n in range(97)]
    return [(a, b, c) for a, b, c in out if representable(a + b, f) and float(np.float32(c)) == c]


def random_pair(fmt, k, seed, side=SIDE):
    """A (side, k), B (k, side): fmt values over 12 binades (fewer for e4m3, whose top is 448), 10% zeros."""
    f = tc.model("H100", fmt).fmt
    rng = np.random.default_rng(seed)
    top = 4 if fmt == "float8_e4m3" else 6

    def values(shape):
        v = rng.uniform(1, 2, shape) * 2.0 ** rng.integers(-top, top, shape) * rng.choice([-1, 1], shape)
        v[rng.random(shape) < 0.1] = 0
        return np.asarray(round_to(v, f), np.float32)
    return values((side, k)), values((k, side))


def seed_of(fmt, k):
    return zlib.crc32(f"{fmt} {k}".encode())


def crc(a):
    return zlib.crc32(np.ascontiguousarray(a, np.float32).tobytes())


def stack(vectors):
    """The vectors as A (n, K) and B (K, n) with K a multiple of 32, and c (n,)."""
    n, k = len(vectors), 32 * -(-max(len(a) for a, _, _ in vectors) // 32)
    a, b = np.zeros((n, k), np.float32), np.zeros((k, n), np.float32)
    for i, (p, q, _) in enumerate(vectors):
        a[i, :len(p)], b[:len(q), i] = p, q
    return a, b, np.array([c for _, _, c in vectors], np.float32)


# -- the GPU side (PyTorch) -------------------------------------------------------------------

def gpu_gemms(fmt, a, b, c=None):
    """{variant: float32 D} for A @ B (+ diag(c)) as the GPU's GEMM computes it."""
    import torch
    dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16, "tf32": torch.float32,
             "float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[fmt]
    ta, tb = (torch.from_numpy(m).cuda().to(dtype) for m in (a, b))
    out = {}
    if fmt.startswith("float8"):
        if c is not None and c.any():
            return out
        one = torch.ones((), device="cuda")
        bt = tb.t().contiguous().t()                # _scaled_mm takes B column-major
        for fast in (False, True):
            try:
                out[f"scaled_mm_fast{int(fast)}"] = torch._scaled_mm(ta, bt, scale_a=one, scale_b=one,
                                                                     out_dtype=torch.float32, use_fast_accum=fast)
            except (RuntimeError, ValueError) as e:         # e5m2 x e5m2: "not supported" on H100
                print(f"  {fmt} _scaled_mm: {str(e).splitlines()[0]}")
                return out
    elif fmt == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        out["mm"] = torch.mm(ta, tb)
        if c is not None:
            out["addmm"] = torch.addmm(torch.diag(torch.from_numpy(c).cuda()), ta, tb)
    else:
        out["mm"] = torch.mm(ta, tb, out_dtype=torch.float32)
        out["mm_out16"] = torch.mm(ta, tb)          # the usual GEMM: the float32 accumulator rounded to fmt
        if c is not None:
            try:
                out["addmm"] = torch.addmm(torch.diag(torch.from_numpy(c).cuda()), ta, tb, out_dtype=torch.float32)
            except (RuntimeError, TypeError) as e:
                print(f"  {fmt} addmm with float32 c: {str(e).splitlines()[0]}")
    torch.cuda.synchronize()
    return {k: v.cpu().view(torch.int32 if v.element_size() == 4 else torch.int16).numpy().view(
        np.uint32 if v.element_size() == 4 else np.uint16) for k, v in out.items()}


def record(path):
    import torch
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    name = torch.cuda.get_device_name()
    saved = {"device": np.array(name), "torch": np.array(torch.__version__)}
    print(f"{name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    for fmt in FORMATS:
        a, b, c = stack(paper_vectors(fmt))
        for variant, d in gpu_gemms(fmt, a, b, c).items():
            saved[f"{fmt}/paper/{variant}"] = d
        saved[f"{fmt}/paper/a"], saved[f"{fmt}/paper/b"], saved[f"{fmt}/paper/c"] = a, b, c
        for k in KS:
            p, q = random_pair(fmt, k, seed_of(fmt, k))
            saved[f"{fmt}/{k}/crc"] = np.array([crc(p), crc(q)], np.uint32)
            for variant, d in gpu_gemms(fmt, p, q).items():
                saved[f"{fmt}/{k}/{variant}"] = d
        if fmt in BIG:          # the longest K at a larger output, where cuBLAS has more tiles than to split K for
            p, q = random_pair(fmt, KS[-1], seed_of(fmt, "big"), BIG_SIDE)
            saved[f"{fmt}/big/crc"] = np.array([crc(p), crc(q)], np.uint32)
            saved[f"{fmt}/big/mm"] = gpu_gemms(fmt, p, q)["mm"]
    np.savez_compressed(path, **saved)
    print(f"recorded {len(saved)} arrays in {path}")


# -- the comparison (anywhere) ------------------------------------------------------------------

def model_of(device_name):
    model = _gpu.model_of(device_name)
    if model is None:
        raise SystemExit(f"no tensor-core model for {device_name!r}")
    return model


PROMOTIONS = (None, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def model_d(device, fmt, a, b, promote, c=None, out16=False):
    """The model's D: the tensor cores with promotion every `promote` products, c added after in float32 (as
    cuBLAS's epilogue), rounded to fmt to nearest for a 16-bit output."""
    d = tc.matmul(a.astype(np.float64), b.astype(np.float64), device, fmt, promote=promote)
    if c is not None:
        d[np.arange(len(c)), np.arange(len(c))] += c
    return np.asarray(round_to(d, fmt)).view(np.uint16) if out16 else d.view(np.uint32)


def fit(device, fmt, a, b, d, c=None, rows=None):
    """(mismatches of the chained model, the first promotion interval with none: None for the chained model
    itself, "none fits" when no interval does), over the outputs `rows` picks (all by default)."""
    first = None
    for promote in PROMOTIONS:
        if promote is not None and promote >= a.shape[1]:
            break
        want = model_d(device, fmt, a, b, promote, c, d.dtype == np.uint16).reshape(-1)[rows if rows is not None
                                                                                       else slice(None)]
        got = d.reshape(-1)[rows if rows is not None else slice(None)]
        bad = int((want != got).sum())
        first = bad if promote is None else first
        if bad == 0:
            return first, promote
    return first, "none fits"


def cases(rec):
    """(fmt, case, variant, a, b, c, d, rows): every recorded GEMM, papers' vectors as their diagonal."""
    for fmt in FORMATS:
        a, b, c = rec[f"{fmt}/paper/a"], rec[f"{fmt}/paper/b"], rec[f"{fmt}/paper/c"]
        diag = np.arange(len(c)) * (len(c) + 1)
        for variant in sorted({k.split("/")[2] for k in rec.files if k.startswith(f"{fmt}/paper/")} - set("abc")):
            yield fmt, "paper", variant, a, b, c if variant == "addmm" else None, rec[f"{fmt}/paper/{variant}"], \
                diag if variant == "addmm" else diag[c == 0]
        for k in KS + ("big",):
            if f"{fmt}/{k}/crc" not in rec.files:
                continue
            p, q = random_pair(fmt, KS[-1], seed_of(fmt, k), BIG_SIDE) if k == "big" else \
                random_pair(fmt, k, seed_of(fmt, k))
            if [crc(p), crc(q)] != rec[f"{fmt}/{k}/crc"].tolist():
                raise SystemExit(f"{fmt} K={k}: this NumPy draws other random inputs than the recording's")
            for variant in sorted({f.split("/")[2] for f in rec.files if f.startswith(f"{fmt}/{k}/")} - {"crc"}):
                yield fmt, k, variant, p, q, None, rec[f"{fmt}/{k}/{variant}"], None


def replay(path, fixture=None):
    rec = np.load(path)
    name = str(rec["device"])
    device = model_of(name)
    print(f"recorded on {name} (torch {rec['torch']}); model: {device}. Per GEMM: outputs that differ from the "
          f"model chained over all of k, and the promotion interval (products per float32 addition outside the "
          f"tensor cores) with which none differ")
    keep = {}
    for fmt, case, variant, a, b, c, d, rows in cases(rec):
        bad, promote = fit(device, fmt, a, b, d, c, rows)
        n = d.size if rows is None else len(rows)
        print(f"{fmt:12} {'K=' + str(case) if case != 'paper' else 'papers':7} {variant:16} {bad:6} of {n:6} differ "
              f"chained; promotion: {promote}", flush=True)
        if fixture and promote != "none fits":
            if case == "paper":
                keep[f"{fmt}/paper/{variant}"] = (a, b, c, d, promote, rows)
            elif case != "big":     # a corner of the outputs: 8 x 8 for K < 256, 4 x 4 beyond
                m = 8 if case < 256 else 4
                keep[f"{fmt}/{case}/{variant}"] = (a[:m], b[:, :m], None, d.reshape(a.shape[0], -1)[:m, :m], promote,
                                                   None)
    if fixture:
        write_fixture(fixture, name, str(rec["torch"]), keep)


def write_fixture(path, name, torch_version, keep):
    """The GEMMs a model explains: each case's inputs once (papers' vectors whole, random ones a corner), each
    variant's outputs and promotion interval (0: chained)."""
    out = {"device": np.array(name), "torch": np.array(torch_version)}
    for key, (a, b, c, d, promote, rows) in keep.items():
        case = key.rsplit("/", 1)[0]
        out[case + "/a"], out[case + "/b"] = a.astype(np.float32), b.astype(np.float32)
        if c is not None:
            out[case + "/c"] = c
        out[key + "/d"], out[key + "/promote"] = d, np.array(0 if promote is None else promote)
        if rows is not None:
            out[key + "/rows"] = np.asarray(rows, np.int32)
    np.savez_compressed(path, **out)
    print(f"fixture: {len(keep)} GEMMs in {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", metavar="NPZ")
    g.add_argument("--replay", metavar="NPZ")
    p.add_argument("--fixture", metavar="NPZ", help="with --replay: keep what a model explains as a test fixture")
    args = p.parse_args()
    if args.record:
        record(args.record)     # replayed where it is brought back: the models run on the CPU alone
    else:
        replay(args.replay, args.fixture)


if __name__ == "__main__":
    main()

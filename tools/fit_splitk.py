"""Fit cuBLAS's split-K on the H100: replay the recorded GEMMs through candidate models, print identical fractions.

    PYTHONPATH=. python tools/fit_splitk.py [--h100 ../shared/gpu/h100] [--search] [--only SUBSTRING,...]
    PYTHONPATH=. python tools/fit_splitk.py --fixture tests/fixtures/h100/splitk.npz   # write the test fixture

Cases: sweep.npz's splitk/{m}x{m}x{k}/{fmt}/{out32,outlow} and gemm.npz's {m}x{n}x{k}/{layout}/{fmt}/{out32,outlow}
(float16, bfloat16; tf32 out32), inputs rebuilt from default_rng(crc32(name)) as the recorders draw them. Models,
each the fraction of the recorded values with identical bits:
  model     minifp._cublas.cublas_slices' slices, _tensorcore.splitk_matmul (runs chained from 0, float32 partials
            added in order); outlow: that float32 sum rounded once to the half type, nearest even
  pairwise  the same runs, partials added pairwise (a tree; equals `model` for up to 3 runs)
  reverse   the same runs, partials added last to first
  exact     the same runs, partials added exactly and rounded once
  chain     no split: one chain over the whole k
  S-1, S+1  one slice fewer / more
  half_adds (outlow) partials rounded to the half type and added in it
--search adds `best`: the slices in 1..128 (runs of whole k-tiles as splitk_matmul cuts them) that fit best.
"""
import argparse
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from minifp import _tensorcore as tc                 # noqa: E402
from minifp._cublas import cublas_slices             # noqa: E402
from minifp._formats import bfloat16, float16, tf32  # noqa: E402
from minifp._rounding import round_to                # noqa: E402

FMTS = {"float16": float16, "bfloat16": bfloat16, "tf32": tf32}
# sweep.npz shapes copied (top 16 rows of the 64x64 corner, every format and output) into the test fixture: split
# in 2 to 12 runs for the half types, 16 to 86 for tf32, and one unsplit half-type case
FIXTURE = ("16x16x3072", "16x16x16384", "64x64x2048", "64x64x4096", "64x64x8192", "128x128x16384", "256x256x6144",
           "256x256x16384")
FIXTURE_ROWS = 16
# gemm.npz cases copied too (float16/bfloat16 out32): other kernels by layout, and a 512x512 split
FIXTURE_GEMM = ("256x10x1024/nn", "256x10x1024/tn", "512x512x8192/nn")


def draw(name, m, n, k):
    """A (m, k), B (k, n) float32 as record_h100.py / record_h100_sweep.py draw them for case `name`."""
    r = np.random.default_rng(zlib.crc32(name.encode()))
    a = (r.uniform(1, 2, (m, k)) * 2.0 ** r.integers(-6, 6, (m, k)) * r.choice([-1, 1], (m, k))).astype(np.float32)
    b = (r.uniform(1, 2, (k, n)) * 2.0 ** r.integers(-6, 6, (k, n)) * r.choice([-1, 1], (k, n))).astype(np.float32)
    return a, b


def cases(h100):
    """(key, m, n, k, seed name, fmt, out, recorded bits as (rows, cols)) for every recorded GEMM output."""
    sweep, gemm = np.load(os.path.join(h100, "sweep.npz")), np.load(os.path.join(h100, "gemm.npz"))
    for key in sweep.files:
        if key.startswith("splitk/") and not key.endswith("/err"):
            _, shape, fmt, out = key.split("/")
            m, n, k = map(int, shape.split("x"))
            side = int(np.sqrt(sweep[key].size))            # 16x16 cases keep 256 values
            yield key, m, n, k, f"splitk/{shape}", fmt, out, sweep[key].reshape(side, side)
    for key in gemm.files:
        shape, layout, fmt, out = key.split("/")
        if out == "f32" or key.endswith("/err"):
            continue                                        # tf32 off: full float32, not tensor cores
        m, n, k = map(int, shape.split("x"))
        yield "gemm/" + key, m, n, k, f"{shape}/{layout}", fmt, out, gemm[key].reshape(min(m, 64), min(n, 64))


def partials(a, b, core, slices, tile):
    """The float32 partial of each run, as splitk_matmul cuts k."""
    k = a.shape[1]
    step = max(-(-(-(-k // tile)) // slices), 1) * tile
    return [tc._run(a[:, lo:lo + step], b[lo:lo + step], core) for lo in range(0, k, step)]


def sequential(ps):
    out = ps[0].copy()
    for p in ps[1:]:
        out += p
    return out


def pairwise(ps):
    while len(ps) > 1:
        ps = [ps[i] + ps[i + 1] if i + 1 < len(ps) else ps[i] for i in range(0, len(ps), 2)]
    return ps[0]


def half_bits(x, fmt):
    return np.asarray(round_to(np.asarray(x, np.float64), fmt)).view(np.uint16)


def evaluate(key, a, b, fmt, out, want, m, n, k, search):
    """{model name: identical fraction} for one recorded output."""
    core = tc.model("H100", FMTS[fmt])
    layout = key.split("/")[-3] if key.startswith("gemm/") else "nn"
    slices, tile = cublas_slices(m, n, k, fmt, layout)
    tiles = -(-k // tile)

    def score(x):
        got = half_bits(x, FMTS[fmt]) if out == "outlow" else np.asarray(x, np.float32).view(np.uint32)
        return float((got == want).mean())
    ps = partials(a, b, core, slices, tile)
    res = {"slices": slices, "model": score(sequential(ps)), "pairwise": score(pairwise(list(ps))),
           "reverse": score(sequential(ps[::-1])), "exact": score(np.float32(sum(p.astype(np.float64) for p in ps))),
           "chain": score(tc._run(a, b, core))}
    for name, s in (("S-1", slices - 1), ("S+1", slices + 1)):
        if 1 <= s <= tiles:
            res[name] = score(sequential(partials(a, b, core, s, tile)))
    if out == "outlow":
        h = [np.asarray(half_bits(p, FMTS[fmt]).view(np.float16 if fmt == "float16" else np.uint16)) for p in ps]
        if fmt == "float16":
            acc = h[0]
            for p in h[1:]:          # overflow past 65504 gives inf, as the half type would
                with np.errstate(over="ignore"):
                    acc = (acc + p).astype(np.float16)
            res["half_adds"] = float((acc.view(np.uint16) == want).mean())
    if search:
        best, seen = (0.0, 0), set()
        for s in range(1, min(128, tiles) + 1):
            step = -(-tiles // s)
            if step in seen:
                continue
            seen.add(step)
            f = score(sequential(partials(a, b, core, s, tile)))
            best = max(best, (f, -s))
            if f == 1.0:
                break
        res["best"] = f"{best[0]:.4f}@S={-best[1]}"
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--h100", default=os.path.join(here, "..", "..", "..", "shared", "gpu", "h100"))
    p.add_argument("--search", action="store_true")
    p.add_argument("--only", default="", help="comma-separated substrings a case's key must all hold")
    p.add_argument("--fixture", help="write the recorded bits of the split cases to this npz instead of fitting")
    args = p.parse_args()
    if not os.path.isdir(args.h100):
        args.h100 = "/work/shared/gpu/h100"
    if args.fixture:
        keep = {key: want[:FIXTURE_ROWS] for key, m, n, k, seed, fmt, out, want in cases(args.h100)
                if (key.startswith("splitk/") and key.split("/")[1] in FIXTURE)
                or (seed in FIXTURE_GEMM and fmt != "tf32" and out == "out32")}
        np.savez_compressed(args.fixture, **keep)
        print("wrote", len(keep), "arrays to", args.fixture, os.path.getsize(args.fixture), "bytes")
        return
    inputs = {}
    totals = {}
    for key, m, n, k, seed, fmt, out, want in cases(args.h100):
        if not all(part in key for part in args.only.split(",")):
            continue
        if seed not in inputs:
            inputs = {seed: draw(seed, m, n, k)}            # one case's inputs at a time
        a32, b32 = inputs[seed]
        rows, cols = want.shape
        rnd = lambda x: np.asarray(round_to(x.astype(np.float64), FMTS[fmt]), np.float64)   # noqa: E731 -- nearest
        a, b = rnd(a32[:rows]), rnd(b32[:, :cols])
        res = evaluate(key, a, b, fmt, out, want, m, n, k, args.search)
        totals.setdefault(fmt + "/" + out, []).append((res["model"], want.size))
        print(key, " ".join(f"{name}={v:.4f}" if isinstance(v, float) else f"{name}={v}" for name, v in res.items()),
              flush=True)
    for name, v in totals.items():
        f = sum(x * s for x, s in v) / sum(s for _, s in v)
        print(f"TOTAL {name}: model identical {f:.6f} over {sum(s for _, s in v)} values, "
              f"{sum(x == 1.0 for x, _ in v)}/{len(v)} cases at 1.0")


if __name__ == "__main__":
    main()

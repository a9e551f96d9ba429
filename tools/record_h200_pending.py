"""Record on a GPU what the fits of 2026-11-30 left open (docs/h100_batchnorm.md, docs/h100_float32.md):

    python3 tools/record_h200_pending.py OUT_DIR        # on a GPU machine (tools "device"), about a minute

Writes OUT_DIR/pending.npz (compressed), every part independent (a part that fails leaves its error as text):
- `rsqrt/ulps`: torch.rsqrt of every float32 in [1, 4), as int8 distances in ulps from the correctly rounded
  value: is cuDNN's batch-norm invstd CUDA's rsqrtf?
- `bn/M{m}/{mean,invstd}`: torch.ops.aten.cudnn_batch_norm in training, float16 input (N, 64, H, W) from
  rng("bn/{m}"), float32 weight, at M = N*H*W from 512 to 2**17: its saved mean and invstd.
- `sgemm/{m}x{n}x{k}/{layout}[+bias]`: float32 torch.mm / addmm with TF32 off for the shapes
  tools/fit_cublas_sgemm.py fits (inputs as it builds gemm.npz's; a bias from rng(".../bias")), the top-left
  64x64 corner, and under `sgemm_kernels` the CUDA kernels torch.profiler saw for each: which kernel gives which
  slicing.
- `halfsum/{n}x{c}x{h}x{w}`: the sum over (0, 2, 3) of a float16 NCHW tensor from rng("halfsum/{shape}") (a conv
  bias's gradient) at sizes where Reduce.cuh splits the work over warps and blocks.
The inputs are not stored: rng(name) rebuilds them.
"""
import json
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from fit_cublas_sgemm import SPEC  # noqa: E402


def rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def rsqrt(torch, out):
    x = (np.arange(1 << 24, dtype=np.int64) + np.float32(1).view(np.int32)).astype(np.int32).view(np.float32)
    got = torch.rsqrt(torch.from_numpy(x).cuda()).cpu().numpy()
    exact = (1 / np.sqrt(x.astype(np.float64))).astype(np.float32)
    out["rsqrt/ulps"] = (got.view(np.int32) - exact.view(np.int32)).astype(np.int8)


def batch_norm(torch, out):
    for n, h in ((8, 8), (16, 8), (4, 32), (32, 16), (128, 32)):
        m = n * h * h
        x = (rng(f"bn/{m}").standard_normal((n, 64, h, h)) * 2 + 0.5).astype(np.float16)
        w, b = (torch.ones(64, device="cuda"), torch.zeros(64, device="cuda"))
        rm, rv = torch.zeros(64, device="cuda"), torch.ones(64, device="cuda")
        _, mean, invstd, _ = torch.ops.aten.cudnn_batch_norm(torch.from_numpy(x).cuda(), w, b, rm, rv, True, 0.1,
                                                              1e-5)
        out[f"bn/M{m}/mean"] = mean.cpu().numpy().view(np.uint32)
        out[f"bn/M{m}/invstd"] = invstd.cpu().numpy().view(np.uint32)


def sgemm(torch, out):
    torch.backends.cuda.matmul.allow_tf32 = False
    kernels = {}
    for m, n, k, layout in sorted(key for key in SPEC if key[3].removesuffix("+bias") in ("nn", "tn", "nt")):
        r = rng(f"{m}x{n}x{k}/{layout.removesuffix('+bias')}")
        a = (r.uniform(1, 2, (m, k)) * 2.0 ** r.integers(-6, 6, (m, k)) * r.choice([-1, 1], (m, k))).astype(np.float32)
        b = (r.uniform(1, 2, (k, n)) * 2.0 ** r.integers(-6, 6, (k, n)) * r.choice([-1, 1], (k, n))).astype(np.float32)
        ta = torch.from_numpy(a.T.copy()).cuda().T if layout.startswith("t") else torch.from_numpy(a).cuda()
        tb = torch.from_numpy(b.T.copy()).cuda().T if layout[1] == "t" else torch.from_numpy(b).cuda()
        bias = torch.from_numpy(rng(f"{m}x{n}x{k}/bias").standard_normal(n).astype(np.float32)).cuda()
        with torch.profiler.profile() as prof:
            c = torch.addmm(bias, ta, tb) if layout.endswith("+bias") else torch.mm(ta, tb)
            torch.cuda.synchronize()
        key = f"{m}x{n}x{k}/{layout}"
        out[f"sgemm/{key}"] = c[:64, :64].cpu().numpy().view(np.uint32)
        kernels[key] = sorted({e.key for e in prof.key_averages()})       # (the ops and the kernels they ran)
    out["sgemm_kernels"] = np.array(json.dumps(kernels))


def half_sums(torch, out):
    for shape in ((8, 8, 8, 8), (64, 32, 32, 32), (256, 16, 16, 16), (32, 64, 56, 56)):
        name = "x".join(map(str, shape))
        x = rng(f"halfsum/{name}").standard_normal(shape).astype(np.float16)
        out[f"halfsum/{name}"] = torch.from_numpy(x).cuda().sum((0, 2, 3)).cpu().numpy().view(np.uint16)


def main():
    import torch
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out = {"torch": np.array(torch.__version__), "gpu": np.array(torch.cuda.get_device_name())}
    for part in (rsqrt, batch_norm, sgemm, half_sums):
        try:
            part(torch, out)
            print(part.__name__, "ok")
        except Exception as e:      # noqa: BLE001 - one part's failure leaves the others' records
            out[f"error/{part.__name__}"] = np.array(f"{type(e).__name__}: {e}")
            print(part.__name__, "failed:", e)
    np.savez_compressed(folder / "pending.npz", **out)
    print(folder / "pending.npz", (folder / "pending.npz").stat().st_size // 1024, "KB")


if __name__ == "__main__":
    main()

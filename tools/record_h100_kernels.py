"""Record which kernels PyTorch launches on the GPU, per shape, and probe cuBLAS's split-K (issue 34, point 6).

    python tools/record_h100_kernels.py OUTDIR     # OUTDIR/kernels.json, OUTDIR/splitk_probe.npz

kernels.json maps each case (GEMM shape x format x layout, cuDNN float32 conv shape, SDPA shape, BatchNorm,
cross_entropy) to the CUDA kernel names the profiler saw: the kernel names say when cuBLAS splits K (a
splitKreduce kernel follows), when cuDNN takes TF32 and which attention kernel and tile run.

splitk_probe.npz holds, per GEMM case, the diagonal of C = A @ B for inputs built so that C[i, i] is one
product of 2**24 (at position k_i = i * K // M) among K - 1 products of 1 (out32; for half outputs, 2**10
among products of 2**-2). Every other entry is exact. So C[i, i] tells how many of the ones were summed into
the same float32 chain after the big product (each is lost: 2**24 + 1 rounds to 2**24), which reveals the
split-K slice boundaries and the order in which slices are reduced. Needs only PyTorch and NumPy.
"""
import json
import os
import sys
import time
import zlib

import numpy as np
import torch
import torch.nn.functional as F

DEV = os.environ.get("DEV", "cuda")
KERNELS, PROBE = {}, {}
ACTIVITY = getattr(torch.profiler.ProfilerActivity, "CUDA" if DEV == "cuda" else "CPU")


def rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a)).to(DEV)


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def kernels(key, fn):
    """Run fn once to warm up, then once under the profiler; store the device kernels' names."""
    try:
        fn()
        sync()
        with torch.profiler.profile(activities=[ACTIVITY]) as prof:
            out = fn()
            sync()
        events = prof.events()
        names = [e.name for e in events if getattr(e.device_type, "name", "") == "CUDA"] or [e.name for e in events]
        KERNELS[key] = names
        return out
    except Exception as e:  # noqa: BLE001 -- one failing case must not lose the others
        KERNELS[key] = [f"error {type(e).__name__}: {str(e)[:200]}"]
        return None


# ------------------------------------------------------------------------------------------ 1. GEMMs and probes
def probe_inputs(m, n, k, big, unit):
    """A, B with C[i, i] = big * unit-products at k_i and unit products elsewhere on the diagonal."""
    pos = (np.arange(max(m, n)) * k) // max(m, n)
    a = np.full((m, k), unit, np.float32)
    b = np.full((k, n), unit, np.float32)
    a[np.arange(m), pos[:m]] = big
    b[pos[:n], np.arange(n)] = big
    return a, b


def gemm_case(m, n, k, layout):
    for fmt in ("float16", "bfloat16", "tf32"):
        dt = torch.float32 if fmt == "tf32" else getattr(torch, fmt)
        outs = ("out32",) if fmt == "tf32" else ("out32", "outlow")
        for out in outs:
            # out32: products 1 and 2**24 (= 2**12 * 2**12); half outputs: 2**-2 and 2**10 (fits float16)
            a, b = probe_inputs(m, n, k, 2.0 ** 12, 1.0) if out == "out32" else probe_inputs(m, n, k, 2.0 ** 5, 0.5)
            ta, tb = T(a).to(dt), T(b).to(dt)
            if layout[0] == "t":
                ta = ta.t().contiguous().t()
            if layout[1] == "t":
                tb = tb.t().contiguous().t()
            key = f"gemm/{m}x{n}x{k}/{layout}/{fmt}/{out}"
            torch.backends.cuda.matmul.allow_tf32 = fmt == "tf32"

            def run():
                if fmt == "float16" or fmt == "bfloat16":
                    return torch.mm(ta, tb, out_dtype=torch.float32) if out == "out32" else torch.mm(ta, tb)
                return torch.mm(ta, tb)
            c = kernels(key, run)
            torch.backends.cuda.matmul.allow_tf32 = False
            if c is not None:
                d = torch.diagonal(c).float().cpu().numpy()
                PROBE[key] = d


def record_gemms():
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    shapes = [(m, m, k) for m in (16, 32, 64, 128, 256, 512, 1024) for k in (256, 1024, 2048, 3072, 4096, 8192, 16384)]
    mlp = [(1024, 784, 256), (256, 1024, 784), (256, 784, 1024), (256, 1024, 10), (256, 10, 1024), (10, 1024, 256),
           (1024, 1024, 256), (256, 1024, 1024), (512, 2048, 1024), (1024, 2048, 512), (1024, 512, 2048),
           (2048, 768, 768), (2048, 3072, 768), (2048, 768, 3072), (768, 768, 2048), (768, 3072, 2048)]
    for s in shapes:
        gemm_case(*s, "nn")
    for s in mlp:
        for layout in ("nn", "tn", "nt"):
            gemm_case(*s, layout)


# ---------------------------------------------------------------------------------------------- 2. convs
def record_convs():
    for c in (3, 8, 16, 32, 64, 128, 256):
        for o in (16, 64, 256):
            for hw in (8, 32):
                for kk, s in ((1, 1), (3, 1), (3, 2), (5, 1), (7, 2)):
                    for g in (1, "dw"):
                        if g == "dw" and (c != o or c == 3):
                            continue
                        groups = c if g == "dw" else 1
                        r = rng(f"tf32conv/{c}_{o}_{hw}_{kk}_{s}_{g}")
                        x = T(r.standard_normal((8, c, hw, hw)).astype(np.float32)).requires_grad_()
                        w = T(r.standard_normal((o, c // groups, kk, kk)).astype(np.float32)).requires_grad_()
                        for mode in ("f32", "f16", "bf16"):
                            def run():
                                x.grad = w.grad = None
                                if mode == "f32":
                                    y = F.conv2d(x, w, padding=kk // 2, stride=s, groups=groups)
                                else:
                                    with torch.autocast("cuda", dtype=torch.float16 if mode == "f16" else torch.bfloat16):
                                        y = F.conv2d(x, w, padding=kk // 2, stride=s, groups=groups)
                                y.float().sum().backward()
                                return y
                            if mode != "f32" and (hw != 8 or s != 1):
                                continue  # half convs: one size is enough to see the kernels
                            kernels(f"conv/{c}_{o}_{hw}_{kk}_{s}_{g}/{mode}", run)


# ---------------------------------------------------------------------------------------------- 3. SDPA, BN, CE
def record_sdpa():
    for low in ("float16", "bfloat16"):
        dt = getattr(torch, low)
        for L in (16, 32, 64, 128, 256, 512, 1024, 2048):
            for d in (32, 64, 128):
                for causal in (False, True):
                    r = rng(f"sdpa_sweep/{L}/{d}")
                    q, k, v = (T(r.standard_normal((2, 4, L, d)).astype(np.float32)).to(dt).requires_grad_()
                               for _ in range(3))

                    def run():
                        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        y.float().sum().backward()
                        return y
                    kernels(f"sdpa/{low}/{L}/{d}/{int(causal)}", run)


def record_norms_losses():
    for low in ("float16", "bfloat16"):
        dt = getattr(torch, low)
        for cudnn in (True, False):
            torch.backends.cudnn.enabled = cudnn
            x = T(rng("bn").standard_normal((8, 16, 8, 8)).astype(np.float32)).to(dt).requires_grad_()
            bn = torch.nn.BatchNorm2d(16).to(DEV)

            def run():
                with torch.autocast("cuda", dtype=dt):
                    y = bn(x)
                y.float().sum().backward()
                return y
            kernels(f"bn/{low}/cudnn{int(cudnn)}", run)
        torch.backends.cudnn.enabled = True
        x = T(rng("ce").standard_normal((64, 10)).astype(np.float32)).requires_grad_()
        t = T(rng("ce_t").integers(0, 10, 64))
        for name, f in (("cross_entropy", lambda z: F.cross_entropy(z, t)),
                        ("log_softmax_nll", lambda z: F.nll_loss(F.log_softmax(z, 1), t))):
            def run(f=f):
                with torch.autocast("cuda", dtype=dt):
                    loss = f(x.to(dt) @ torch.eye(10, device=DEV, dtype=dt))
                loss.backward()
                return loss
            kernels(f"ce/{low}/{name}", run)


if __name__ == "__main__":
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for step in (record_gemms, record_sdpa, record_norms_losses, record_convs):
        t = time.time()
        step()
        print(step.__name__, f"{time.time() - t:.1f} s, {len(KERNELS)} cases so far", flush=True)
        with open(os.path.join(outdir, "kernels.json"), "w") as f:  # after each step: a timeout keeps the rest
            json.dump({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                       "gpu": torch.cuda.get_device_name() if DEV == "cuda" else DEV, "kernels": KERNELS}, f, indent=0)
        np.savez_compressed(os.path.join(outdir, "splitk_probe.npz"), **PROBE)
    errs = [k for k, v in KERNELS.items() if v and v[0].startswith("error")]
    print("cases", len(KERNELS), "probes", len(PROBE), "errors", len(errs), errs[:5])

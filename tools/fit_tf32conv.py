"""Fit when cuDNN 9.19 (PyTorch 2.11, allow_tf32 = True) computes a float32 conv2d in TF32, per pass.

Reads ../shared/gpu/h100/sweep.npz (forward: `same_as_notf32` is 1.0 where the H100 gave the TF32-off bits) and
tests/fixtures/h100/h200_kernels.json.gz (the kernels of forward and backward on an H200, same torch and cuDNN).
Prints whether the kernel names agree with the H100's forward measurements, the per-pass table, and how well
minifp._devices' rule fits it. `--write` rewrites tests/fixtures/h100/tf32conv.json; `--conv` also classifies each
pass of conv.npz's 10 other shapes by which rounding of the factors (none, tf32 nearest-even, nearest-away or
truncated) brings an exact product nearest to the H100's values. Run by hand:
    PYTHONPATH=. python tools/fit_tf32conv.py [--write] [--conv]
"""
import gzip
import json
import re
import sys
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT.parent.parent / "shared" / "gpu" / "h100" / "sweep.npz"
KERNELS = ROOT / "tests" / "fixtures" / "h100" / "h200_kernels.json.gz"
FIXTURE = ROOT / "tests" / "fixtures" / "h100" / "tf32conv.json"
PASSES = ("fprop", "dgrad", "wgrad")

# Launches that move, fill or reduce data around the convolution: no products.
_IGNORED = ("at::native::reduce_kernel", "FillFunctor", "direct_copy", "Memset", "nchwToNhwc", "nhwcToNchw",
            "init_device_workspace", "scalePackedTensor")


def kernel_tf32(name):
    """Whether a kernel multiplies in TF32: xmma's tf32 types, CUTLASS's s1688 tensor ops and tfloat32_t."""
    return "tf32" in name or "tfloat32" in name or "s1688" in name


def _pass_of(name):
    """The pass a kernel's name says it computes ("fprop", "dgrad", "wgrad"), or None (a GEMM, an FFT step)."""
    if re.search("fprop|Fprop|convolve_sgemm|winogradForward|conv_depthwise2d_forward", name):
        return "fprop"
    if re.search("dgrad|Dgrad|conv_depthwise2d_backward", name):
        return "dgrad"
    if re.search("wgrad|Wgrad|grad_weight", name):
        return "wgrad"
    return None


def passes(kernels):
    """{pass: uses TF32} from one shape's launches: forward before the loss's sum, then PyTorch's backward runs
    grad input, then grad weight. A kernel that names no pass (cuBLAS GEMMs of a 1x1 conv, FFT steps) belongs to
    the forward before the sum; after it, the first such kernel before any named one is the grad input's, every
    other one the grad weight's (a Winograd "forward" transform in the backward is a weight-gradient step)."""
    cut = next(i for i, n in enumerate(kernels) if "reduce_kernel" in n)
    tf32 = {p: False for p in PASSES}
    for n in kernels[:cut]:
        if not any(s in n for s in _IGNORED):
            tf32["fprop"] |= kernel_tf32(n)
    seen = False
    for n in kernels[cut:]:
        if any(s in n for s in _IGNORED):
            continue
        p = _pass_of(n)
        if p is None or p == "fprop" or seen and p is None:
            p = "wgrad" if seen else "dgrad"
        seen = True
        tf32[p] |= kernel_tf32(n)
    return tf32


def _tf32(a):
    """float32 values rounded to tf32 (nearest even), as float64."""
    b = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def h100_tf32_by_error(sweep, key):
    """Whether the H100's recorded forward (its first values) lies nearer the exact convolution of tf32-rounded
    inputs than of the float32 inputs: TF32 whatever kernel gave it (inputs rebuilt as record_h100_sweep.py does)."""
    x_shape, w_shape, params = shape_of(key)
    r = np.random.default_rng(zlib.crc32(f"tf32conv/{key}".encode()))
    x = r.standard_normal(x_shape).astype(np.float32)
    w = (r.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    y = sweep[f"tf32conv/{key}/y_default"].view(np.float32).astype(np.float64)
    errs = [np.abs(y - _conv64(xx, ww, params["stride"], params["padding"]).ravel()[:y.size]).max()
            for xx, ww in ((x.astype(np.float64), w.astype(np.float64)), (_tf32(x), _tf32(w)))]
    return errs[1] < errs[0]


def _conv64(x, w, s, p):
    """A dense conv2d in float64 (no groups)."""
    k, xp = w.shape[2], np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    ho, wo = (x.shape[2] + 2 * p - k) // s + 1, (x.shape[3] + 2 * p - k) // s + 1
    return sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + s * ho:s, j:j + s * wo:s], w[:, :, i, j])
               for i in range(k) for j in range(k))


def conv_npz_passes():
    """Per conv.npz case and pass: (the factors' rounding nearest to the H100, its relative error, the rule's
    answer). The product is minifp's ideal float32 conv (cpu) of rounded factors: float32 sums, 1e-7 apart."""
    import minifp.torch as torch
    import minifp.torch.nn.functional as F
    from minifp import tf32
    from minifp._devices import H100
    from minifp._rounding import round_to
    roundings = {"f32": lambda a: a, "tf32 nearest-even": lambda a: round_to(a, tf32).astype(np.float32),
                 "tf32 nearest-away": lambda a: round_to(a, tf32, "nearest_away").astype(np.float32),
                 "tf32 truncated": lambda a: (a.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)}
    conv = np.load(SWEEP.parent / "conv.npz")
    out = {}
    for case in sorted({f.split("/")[0] for f in conv.files}):      # conv + N_C_H_W_O_K_S_P_G, as record_conv
        n, c, h, w, o, k, s, p, g = map(int, case[4:].split("_"))
        r = np.random.default_rng(zlib.crc32(case.encode()))
        x = r.standard_normal((n, c, h, w)).astype(np.float32)
        wt = (r.standard_normal((o, c // g, k, k)) / np.sqrt(c // g * k * k)).astype(np.float32)
        b = r.standard_normal(o).astype(np.float32)
        ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        gy = np.random.default_rng(zlib.crc32((case + "/g").encode())).standard_normal((n, o, ho, wo))
        gy = gy.astype(np.float32)
        for t, pass_ in (("y", "fprop"), ("gx", "dgrad"), ("gw", "wgrad")):
            ref = conv[f"{case}/f32_default/{t}"].view(np.float32).astype(np.float64)
            errs = {}
            for name, f in roundings.items():     # the factors of this pass rounded, the other input not
                tx = torch.tensor(x if t == "gx" else f(x), requires_grad=True)
                tw = torch.tensor(wt if t == "gw" else f(wt), requires_grad=True)
                y = F.conv2d(tx, tw, torch.tensor(b), stride=s, padding=p, groups=g)
                y.backward(torch.tensor(gy if t == "y" else f(gy)))
                got = {"y": y, "gx": tx.grad, "gw": tw.grad}[t].detach().numpy().astype(np.float64).ravel()
                errs[name] = np.abs(got[:ref.size] - ref).max() / np.abs(ref).max()
            best = min(errs, key=errs.get)
            rule = H100.uses_tf32(pass_, (n, c, h, w), (o, c // g, k, k), {"stride": s, "padding": p, "groups": g})
            out[case, pass_] = best, errs[best], rule
    return out


def shape_of(key):
    """(x_shape, w_shape, params) of a sweep key c_o_hw_k_s_g (batch 8, padding k // 2)."""
    c, o, hw, k, s, g = key.split("_")
    c, o, hw, k, s = int(c), int(o), int(hw), int(k), int(s)
    groups = c if g == "dw" else int(g)
    return (8, c, hw, hw), (o, c // groups, k, k), {"stride": s, "padding": k // 2, "groups": groups}


def main():
    from minifp._devices import H100
    sweep = np.load(SWEEP)
    kernels = json.loads(gzip.open(KERNELS).read())["kernels"]
    keys = sorted({f.split("/")[1] for f in sweep.files if f.startswith("tf32conv/")},
                  key=lambda k: [int(v) if v.isdigit() else 0 for v in k.split("_")] + [k])
    table, wrong = {}, []
    for key in keys:
        table[key] = passes(kernels[f"conv/{key}/f32"])
        if table[key]["fprop"] != (float(sweep[f"tf32conv/{key}/same_as_notf32"]) < 1.0):
            wrong.append(key)
    print(f"kernel names vs H100 sweep.npz forward (TF32 = same_as_notf32 < 1): {len(keys) - len(wrong)}/{len(keys)}"
          f" agree; disagree: {wrong}")
    # Bits unlike TF32-off's can come from another float32 kernel too (a different order of the sums)
    fixed = [k for k in wrong if h100_tf32_by_error(sweep, k) == table[k]["fprop"]]
    print(f"  of those, the H100's values lie nearer the float32 (not the tf32) exact product as the names say: "
          f"{len(fixed)}/{len(wrong)}; agreement {len(keys) - len(wrong) + len(fixed)}/{len(keys)}")
    print(f"\n{'c_o_hw_k_s_g':<20}" + "".join(f"{p:>7}" for p in PASSES) + "   rule")
    fits = {p: 0 for p in PASSES}
    for key in keys:
        x, w, params = shape_of(key)
        rule = {p: H100.uses_tf32(p, x, w, params) for p in PASSES}
        for p in PASSES:
            fits[p] += rule[p] == table[key][p]
        miss = [p for p in PASSES if rule[p] != table[key][p]]
        print(f"{key:<20}" + "".join(f"{'tf32' if table[key][p] else 'f32':>7}" for p in PASSES)
              + ("   ok" if not miss else "   MISS " + ",".join(miss)))
    for p in PASSES:
        print(f"{p}: {sum(t[p] for t in table.values())}/{len(keys)} TF32; rule agrees {fits[p]}/{len(keys)}")
    if "--conv" in sys.argv:
        res = conv_npz_passes()
        print("\nconv.npz, f32_default: the rounding nearest to the H100 per pass, and the rule")
        for (case, pass_), (best, err, rule) in res.items():
            print(f"{case:<30}{pass_:<7}{best:<19}{err:8.1e}   rule {'tf32' if rule else 'f32'}"
                  + ("" if (best != "f32") == rule else "   MISS"))
        print(f"rule agrees on {sum((b != 'f32') == r for b, _, r in res.values())}/{len(res)} passes")
    if "--write" in sys.argv:
        rows = ",\n".join(f'  "{k}": {json.dumps([int(table[k][p]) for p in PASSES])}' for k in keys)
        FIXTURE.write_text('{"source": "cuDNN 9.19 float32 conv2d, allow_tf32: TF32 (1) per pass, from H200 kernel '
                           "names (fprop checked against the H100's sweep.npz); keys c_o_hw_k_s_g, batch 8, padding "
                           'k // 2, g: 1 or dw (depthwise)",\n "passes": ["fprop", "dgrad", "wgrad"],\n'
                           f' "shapes": {{\n{rows}\n}}}}\n')


if __name__ == "__main__":
    main()

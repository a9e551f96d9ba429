"""The cases recorded on a real H100 (shared/gpu/record_h100.py: ops, gemm, conv; record_h100_pin.py: pin.npz's
convolutions), rebuilt through minifp.torch's emulated cuda, and the comparison of their bits with the recording's.

The inputs come from numpy's default_rng seeded by crc32 of the case name, exactly as the recorder draws them, so
the recordings need to keep only outputs. A recorded array is a row-major prefix of at most 16384 values;
tests/fixtures/h100/recorded.npz keeps an evenly strided sample of each (`sample_index`), written by
tools/h100_fidelity.py --fixtures. tests/torch/test_h100_replay.py and tools/h100_fidelity.py both use this module.
"""
import functools
import math
import warnings
import zlib
from pathlib import Path

import numpy as np

import minifp.torch as torch
import minifp.torch.nn.functional as F

__all__ = ["FIXTURE", "KEEP", "sample_index", "load_fixture", "replay", "split", "family", "reason", "shares",
           "cudnn_takes", "conv_bias_as_h100"]

warnings.filterwarnings("ignore", message="minifp: no GPU here")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h100" / "recorded.npz"
KEEP = 1024                 # values kept per recorded array in the fixture
DEV = "cuda"
LOW = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def sample_index(n):
    """The positions (in a recorded prefix of n values) the fixture keeps: every ceil(n / KEEP)-th."""
    return np.arange(0, n, max(1, math.ceil(n / KEEP)))


def load_fixture(path=FIXTURE):
    """{file: {key: (recorded bits at sample_index(n), n, dtype name)}} from the compact fixture."""
    z = np.load(path)
    out = {}
    for k in z.files:
        if k.endswith(("#n", "#dtype")):
            continue
        file, key = k.split(":", 1)
        out.setdefault(file, {})[key] = (z[k], int(z[k + "#n"]), str(z[k + "#dtype"]))
    return out


def rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a)).to(DEV)


def bits(t):
    a = np.asarray(t.detach().cpu().numpy())
    return a.view(np.uint16) if a.dtype.itemsize == 2 else a.view(np.uint32) if a.dtype == np.float32 else a


# ------------------------------------------------------------------------------------------ ops (record_ops)
def op_cases():
    """name -> (shapes of float32 inputs, fn(*inputs) -> output, which inputs get gradients): the recorder's."""
    tgt = lambda n, c: T(rng(f"tgt{n}{c}").integers(0, c, n))  # noqa: E731
    emb_idx = T(rng("emb").integers(0, 1000, (16, 64)))
    return {
        "layer_norm": ([(64, 256), (256,), (256,)], lambda x, w, b: F.layer_norm(x, (256,), w, b), (0, 1, 2)),
        "group_norm": ([(16, 32, 8, 8), (32,), (32,)], lambda x, w, b: F.group_norm(x, 4, w, b), (0, 1, 2)),
        "batch_norm_train": ([(16, 32, 8, 8), (32,), (32,)],
                             lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (0, 1, 2)),
        "softmax": ([(64, 1000)], lambda x: F.softmax(x, dim=-1), (0,)),
        "log_softmax": ([(64, 1000)], lambda x: F.log_softmax(x, dim=-1), (0,)),
        "cross_entropy": ([(512, 100)], lambda x: F.cross_entropy(x, tgt(512, 100)), (0,)),
        "cross_entropy_ls": ([(512, 100)], lambda x: F.cross_entropy(x, tgt(512, 100), label_smoothing=0.1), (0,)),
        "mse_loss": ([(512, 64), (512, 64)], lambda x, y: F.mse_loss(x, y), (0,)),
        "l1_loss": ([(512, 64), (512, 64)], lambda x, y: F.l1_loss(x, y), (0,)),
        "bce_with_logits": ([(512, 64)], lambda x: F.binary_cross_entropy_with_logits(
            x, T((rng("bcet").random((512, 64)) > 0.5).astype(np.float32))), (0,)),
        "gelu": ([(64, 1024)], lambda x: F.gelu(x), (0,)),
        "gelu_tanh": ([(64, 1024)], lambda x: F.gelu(x, approximate="tanh"), (0,)),
        "silu": ([(64, 1024)], lambda x: F.silu(x), (0,)),
        "sigmoid": ([(64, 1024)], lambda x: torch.sigmoid(x), (0,)),
        "tanh": ([(64, 1024)], lambda x: torch.tanh(x), (0,)),
        "exp": ([(64, 1024)], lambda x: torch.exp(x), (0,)),
        "sum_dim": ([(64, 4096)], lambda x: x.sum(dim=-1), (0,)),
        "mean_dim": ([(64, 4096)], lambda x: x.mean(dim=-1), (0,)),
        "sum_all": ([(512, 512)], lambda x: x.sum(), (0,)),
        "var_dim": ([(64, 4096)], lambda x: x.var(dim=-1), (0,)),
        "norm": ([(64, 4096)], lambda x: torch.linalg.vector_norm(x, dim=-1), (0,)),
        "sdpa": ([(4, 4, 64, 32), (4, 4, 64, 32), (4, 4, 64, 32)],
                 lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (0, 1, 2)),
        "sdpa_causal": ([(4, 4, 64, 32), (4, 4, 64, 32), (4, 4, 64, 32)],
                        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (0, 1, 2)),
        "embedding": ([(1000, 64)], lambda w: F.embedding(emb_idx, w), (0,)),
        "linear": ([(256, 784), (1024, 784), (1024,)], lambda x, w, b: F.linear(x, w, b), (0, 1, 2)),
        "bmm": ([(8, 64, 128), (8, 128, 64)], lambda a, b: torch.bmm(a, b), (0, 1)),
        "adaptive_avg_pool2d": ([(16, 64, 7, 7)], lambda x: F.adaptive_avg_pool2d(x, 1), (0,)),
        "max_pool2d": ([(16, 32, 16, 16)], lambda x: F.max_pool2d(x, 2), (0,)),
        "avg_pool2d": ([(16, 32, 16, 16)], lambda x: F.avg_pool2d(x, 2), (0,)),
        "cumsum": ([(64, 1024)], lambda x: torch.cumsum(x, dim=-1), (0,)),
    }


def replay_op(case, mode):
    """{'y': bits, 'grad<i>': bits} of one op case in one mode, as the recorder computes it."""
    shapes, fn, grads = op_cases()[case]
    r = rng(case)
    xs = [r.standard_normal(s).astype(np.float32) for s in shapes]
    low = LOW.get(mode.split("_")[-1])
    ts = []
    for i, a in enumerate(xs):
        t = T(a)
        if low is not None and (mode.startswith(("float16", "bfloat16")) or i == 0):
            t = t.to(low)               # pure half: every input; autocast: the activation arrives low
        ts.append(t.detach().requires_grad_(i in grads))
    if mode.startswith("autocast"):
        with torch.autocast("cuda", dtype=low):
            y = fn(*ts)
    else:
        y = fn(*ts)
    g = torch.from_numpy(rng(case + "/g").standard_normal(tuple(y.shape)).astype(np.float32)).to(DEV)
    y.backward(g.to(y.dtype))
    out = {"y": bits(y).reshape(-1)}
    out.update({f"grad{i}": bits(ts[i].grad).reshape(-1) for i in grads})
    return out


# ------------------------------------------------------------------------------------------ gemm (record_gemm)
@functools.lru_cache(maxsize=1)          # the three formats of a case draw the same operands
def gemm_operands(case):
    """The float32 operands a (m x k) and b (k x n) of a GEMM case "MxNxK/layout"."""
    m, n, k = map(int, case.split("/")[0].split("x"))
    r = rng(case)
    a = (r.uniform(1, 2, (m, k)) * 2.0 ** r.integers(-6, 6, (m, k)) * r.choice([-1, 1], (m, k))).astype(np.float32)
    b = (r.uniform(1, 2, (k, n)) * 2.0 ** r.integers(-6, 6, (k, n)) * r.choice([-1, 1], (k, n))).astype(np.float32)
    return a, b


def replay_gemm(case, fmt):
    """The recorded top-left 64x64 corner of one GEMM case. Only the corner's rows and columns are multiplied (each
    output depends on its own row and column alone); the layouts nn/tn/nt hold the same values. minifp.torch has no
    `mm(..., out_dtype=float32)`: `out32` of half inputs is the float32 product of the widened inputs (exact
    products, float32 sums), TF32 off."""
    a, b = gemm_operands(case)
    a, b = a[:64], b[:, :64]
    matmul = torch.backends.cuda.matmul
    ta, tb = T(a).to(LOW.get(fmt, torch.float32)), T(b).to(LOW.get(fmt, torch.float32))
    if fmt == "tf32":
        matmul.allow_tf32 = True
        out = {"out32": bits(torch.mm(ta, tb))}
        matmul.allow_tf32 = False
        out["f32"] = bits(torch.mm(ta, tb))
        return out
    return {"outlow": bits(torch.mm(ta, tb)), "out32": bits(torch.mm(ta.float(), tb.float()))}


# ------------------------------------------------------------------------------------------ conv (record_conv)
def replay_conv(case, mode):
    """{'y', 'gx', 'gw'} of one conv case ("conv" + N_C_H_W_O_K_S_P_G) in one mode, as the recorder computes it."""
    n, c, h, w, o, kk, s, p, g = map(int, case[4:].split("_"))
    r = rng(case)
    x = r.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (r.standard_normal((o, c // g, kk, kk)) / np.sqrt(c // g * kk * kk)).astype(np.float32)
    bias = r.standard_normal(o).astype(np.float32)
    tx, tw, tb = (T(v).requires_grad_() for v in (x, wt, bias))
    cudnn = torch.backends.cudnn
    cudnn.allow_tf32 = mode != "f32_notf32"
    if mode.startswith("autocast"):
        with torch.autocast("cuda", dtype=LOW[mode.split("_")[1]]):
            y = F.conv2d(tx, tw, tb, stride=s, padding=p, groups=g)
    else:
        y = F.conv2d(tx, tw, tb, stride=s, padding=p, groups=g)
    cudnn.allow_tf32 = True
    gy = torch.from_numpy(rng(case + "/g").standard_normal(tuple(y.shape)).astype(np.float32)).to(DEV)
    y.backward(gy.to(y.dtype))
    return {"y": bits(y).reshape(-1), "gx": bits(tx.grad).reshape(-1), "gw": bits(tw.grad).reshape(-1)}


def replay_pin_conv(case, setting):
    """{'y', 'gx', 'gw'[, 'gb']} of one of pin.npz's convolutions ("conv/conv" + N_C_H_W_O_K_S_P_G) in one setting
    ("<mode>/cudnn<0|1>/bias<0|1>"), as record_h100_pin.py computes it, with torch.backends.cudnn.enabled as the
    setting says."""
    spec = case.split("/")[1]
    mode, cudnn, with_bias = setting.split("/")
    n, c, h, w, o, kk, s, p, g = map(int, spec[4:].split("_"))
    r = rng(spec)
    x = r.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (r.standard_normal((o, c // g, kk, kk)) / np.sqrt(c // g * kk * kk)).astype(np.float32)
    bias = r.standard_normal(o).astype(np.float32)
    torch.backends.cudnn.allow_tf32 = mode != "f32_notf32"
    torch.backends.cudnn.enabled = cudnn == "cudnn1"
    tx, tw, tb = (T(v).requires_grad_() for v in (x, wt, bias))
    tb_used = tb if with_bias == "bias1" else None
    if mode.startswith("autocast"):
        with torch.autocast("cuda", dtype=LOW[mode.split("_")[1]]):
            y = F.conv2d(tx, tw, tb_used, stride=s, padding=p, groups=g)
    else:
        y = F.conv2d(tx, tw, tb_used, stride=s, padding=p, groups=g)
    gy = T(rng(spec + "/g").standard_normal(tuple(y.shape)).astype(np.float32))
    y.backward(gy.to(y.dtype))
    torch.backends.cudnn.allow_tf32 = torch.backends.cudnn.enabled = True
    out = {"y": bits(y).reshape(-1), "gx": bits(tx.grad).reshape(-1), "gw": bits(tw.grad).reshape(-1)}
    if tb_used is not None:
        out["gb"] = bits(tb.grad).reshape(-1)
    return out


REPLAY = {"ops": replay_op, "gemm": replay_gemm, "conv": replay_conv, "pin": replay_pin_conv}


def split(file, key):
    """(case, setting, array) of a recorded key: ops "op/mode/array", conv "conv.../mode/array", gemm
    "MxNxK/layout/fmt/array", pin "conv/conv.../mode/cudnnC/biasB/array"."""
    parts = key.split("/")
    if file == "gemm":
        return "/".join(parts[:2]), parts[2], parts[3]
    if file == "pin":
        return "/".join(parts[:2]), "/".join(parts[2:5]), parts[5]
    return parts[0], parts[1], parts[2]


def replay(file, keys):
    """{key: minifp's bits} for the recorded `keys` of one file (ops, gemm, conv, or pin's convolutions)."""
    groups = {}
    for key in keys:
        case, setting, _ = split(file, key)
        groups.setdefault((case, setting), []).append(key)
    out = {}
    for (case, setting), ks in groups.items():
        arrays = REPLAY[file](case, setting)
        for k in ks:
            out[k] = arrays[split(file, k)[2]]
    return out


# ------------------------------------------------------------------------------------------ families
OP_FAMILY = {
    **dict.fromkeys(("gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp"), "elementwise"),
    **dict.fromkeys(("cross_entropy", "cross_entropy_ls"), "cross_entropy"),
    **dict.fromkeys(("mse_loss", "l1_loss", "bce_with_logits"), "losses"),
    **dict.fromkeys(("layer_norm", "group_norm"), "layer/group norm"),
    "batch_norm_train": "batch_norm",
    **dict.fromkeys(("softmax", "log_softmax"), "softmax"),
    **dict.fromkeys(("sum_dim", "mean_dim", "sum_all", "var_dim", "norm", "cumsum"), "reductions"),
    **dict.fromkeys(("sdpa", "sdpa_causal"), "attention"),
    **dict.fromkeys(("linear", "bmm"), "linear/bmm"),
    **dict.fromkeys(("embedding", "adaptive_avg_pool2d", "max_pool2d", "avg_pool2d"), "pooling/embedding"),
}


def family(file, key, dtype):
    """The family row a recorded array counts in: (family, setting), the issue's table's families by setting."""
    if file == "ops":
        case, mode = key.split("/")[:2]
        fam = OP_FAMILY[case]
        if dtype == "float32" and mode != "float32":
            fam = "float32 outputs of " + fam          # e.g. softmax / layer norm under autocast
        return fam, mode
    if file == "conv":
        mode, array = key.split("/")[1:]
        return ("conv2d with bias" if array == "y" else "conv2d gradients"), mode
    if file == "pin":
        _, setting, array = split(file, key)
        mode, cudnn, bias = setting.split("/")
        fam = ("conv2d with bias" if bias == "bias1" else "conv2d without bias") if array == "y" else \
            "conv2d gradients"
        return fam + (" (cuDNN off)" if cudnn == "cudnn0" else ""), mode
    fmt, out = key.split("/")[2:4]
    return f"gemm {fmt}", {"outlow": "half output", "out32": "float32 output", "f32": "tf32 off"}[out]


_LIBM = "CUDA's float32 libm (expf, logf) and its reduction order, at 1 float32 ulp"
_TC = "the tensor cores' accumulation order (and cuBLAS's split-K); emulated cuda sums in float32 BLAS order"
REASONS = {      # (family, setting) or family -> the known reason (the table); None: not analysed yet
    ("conv2d with bias", "autocast"): "the convolution's summation order before its rounding to half (emulated cuda "
                                      "adds the bias as the H100 does: after cuDNN's rounding, inside the native "
                                      "depthwise kernel's)",
    ("conv2d with bias", "f32_default"): "cuDNN uses TF32 for some shapes only (64+ channels, the 7x7 stem) and "
                                         "its own summation order; minifp rounds every input to tf32",
    ("conv2d with bias", "f32_notf32"): "cuDNN's float32 summation order",
    ("conv2d without bias", "autocast"): "cuDNN's summation order before the rounding to half",
    ("conv2d without bias", "f32"): "cuDNN's float32 summation order",
    ("conv2d gradients", "autocast"): "cuDNN's summation order before the rounding to half",
    ("conv2d gradients", "f32"): "cuDNN's float32 (or TF32) summation order",
    "attention": "emulated cuda runs cuDNN's flash attention as fit to the H100 (minifp/_flash.py, "
                 "docs/h100_sdpa.md); left: the backward's recomputed probabilities (the GPU's lg2.approx, not "
                 "modelled) and a few outputs",
    "batch_norm": "the native kernel's Welford mean and rsqrtf invstd (emulated cuda takes the mean and "
                  "1 / sqrt in float32; grad_weight stored in float32 shows it at 1-2 ulp); its sums are emulated "
                  "(docs/h100_batchnorm.md)",
    "gemm float16": _TC,
    "gemm bfloat16": _TC,
    ("gemm tf32", "float32 output"): "the tensor cores' tf32 sums",
    ("gemm tf32", "tf32 off"): "cuBLAS's float32 summation order",
    "linear/bmm": _TC,
    # the half kernels emulated cuda follows (docs/h100_halfops.md); what is left:
    "elementwise": "CUDA's float32 libm: erff (gelu's exact form) and expf put a few float16 values on the other "
                   "side of a rounding boundary (13 of gelu's 16384 outputs, 1-2 gradients)",
    "softmax": "CUDA's expf and the kernels' float32 row sums put 2-3 float16 values on the other side of a rounding "
               "boundary (emulated cuda rounds the backward's grad * output first, as the H100 does)",
    "layer/group norm": "the kernels' float32 statistics (Welford mean, rsqrtf) and sums put a few values on the other "
                        "side of a rounding boundary (emulated cuda keeps group norm's statistics in the half type "
                        "and sums layer norm's weight gradient as the kernels do)",
    "reductions": "emulated cuda follows cumsum's scan, var's formula and vector_norm's kernel (the float32 sum of "
                  "|x|**p, its root rounded once) and backward (PyTorch's norm_backward, each step a half tensor)",
}


def reason(fam, setting):
    """The known reason for the differences left in a family row (the issue's table), or 'not analysed yet'."""
    if fam.startswith("float32 outputs") or setting == "float32":
        return _LIBM
    if fam.endswith("(cuDNN off)"):
        return ("PyTorch's native kernels (cuDNN disabled; emulated cuda adds the bias as they do): their own "
                "summation order, and their weight gradients differ most")
    for key in ((fam, setting), (fam, setting.split("_")[0]), fam):
        if key in REASONS:
            return REASONS[key]
    return "not analysed yet"


def shares(recorded, mine, sample=True):
    """{(file, family, setting): [identical, compared]} and {(file, key): [identical, compared]} over the sample
    positions of each recorded array (`sample`), or over all of it."""
    fams, arrays = {}, {}
    for file, entries in recorded.items():
        for key, (want, n, dtype) in entries.items():
            got = np.asarray(mine[file][key]).reshape(-1)[:n]
            got = got[sample_index(n)] if sample else got
            same = int((got.astype(np.uint64) == want.reshape(-1).astype(np.uint64)).sum()) \
                if got.size == want.size else 0
            arrays[file, key] = [same, want.size]
            row = fams.setdefault((file,) + family(file, key, dtype), [0, 0])
            row[0] += same
            row[1] += want.size
    return fams, arrays


# ------------------------------------------------------------------------------------------ conv bias on the H100
def cudnn_takes(spec, low):
    """Whether PyTorch 2.11 on the H100 runs this NCHW convolution (N_C_H_W_O_K_S_P_G) in cuDNN rather than its native
    depthwise kernel: every dense one; a depthwise one only in float16, as Convolution.cpp's use_cudnn_depthwise and
    check_cudnn_depthwise_workload_with_filter decide (32+ channels, square 1/3/5 filter, width 7+, stride 1, or
    stride 2 with 256+ channels at width 28+ or 512+). conv.npz and pin.npz agree on all their 14 shapes."""
    n, c, h, w, o, kk, s, p, g = map(int, spec.split("_"))
    if g == 1 or not (g == c and o % c == 0):
        return True
    if low != "float16" or c < 32 or kk not in (1, 3, 5) or w < 7:
        return False
    if s == 1:
        return True
    return s == 2 and (n == 1 and (kk != 1 or w <= 28) or n > 1 and (kk == 1 and n <= 16 and c >= 128 and w <= 7 or
                                                                     kk != 1 and (c >= 512 or c >= 256 and w >= 28)))


def conv_bias_as_h100(case, mode):
    """conv.npz's forward y under autocast as the H100 computes it, composed with the face: where cuDNN runs it, the
    convolution rounded to the half type, then the bias added as a half op (two roundings); else fused (one)."""
    n, c, h, w, o, kk, s, p, g = map(int, case[4:].split("_"))
    r = rng(case)
    x = r.standard_normal((n, c, h, w)).astype(np.float32)
    wt = (r.standard_normal((o, c // g, kk, kk)) / np.sqrt(c // g * kk * kk)).astype(np.float32)
    bias = r.standard_normal(o).astype(np.float32)
    low = mode.split("_")[1]
    with torch.autocast("cuda", dtype=LOW[low]):
        if not cudnn_takes(case[4:], low):
            return bits(F.conv2d(T(x), T(wt), T(bias), stride=s, padding=p, groups=g)).reshape(-1)
        y = F.conv2d(T(x), T(wt), None, stride=s, padding=p, groups=g)
    return bits(y + T(bias).to(LOW[low]).reshape(1, -1, 1, 1)).reshape(-1)

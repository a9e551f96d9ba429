"""minifp's CPU emulation next to real GPU half arithmetic (PyTorch on CUDA); prints mismatch counts.

    python benchmarks/gpu_parity.py        # needs torch with a CUDA device

Unary ops run on every one of the 65536 float16 / bfloat16 values, binary ops and comparisons on 4M random
pairs of finite values, sum / mean / softmax on 4096 rows of 1024; results must agree bit for bit (any NaN
equals any NaN). Matmul is compared in ULPs of the output format: cuBLAS's tensor cores and the CPU BLAS sum
in different ways, so only the float32 sums differ. Then input gradients of unary ops, div and pow (minifp's
tensors on the emulated "cuda" device, whose backward follows CUDA's kernels). Last, float32 -> float16,
bfloat16 and fp8 casts of 4M random float32 bit patterns (minifp.round_to against PyTorch's .to(dtype) on the
GPU).
"""
import ml_dtypes
import numpy as np
import torch

import minifp as mf

FORMATS = {"float16": (np.float16, torch.float16), "bfloat16": (ml_dtypes.bfloat16, torch.bfloat16)}
UNARY = {"neg": lambda t: -t, "sqrt": lambda t: t.sqrt(), "exp": lambda t: t.exp(), "log": lambda t: t.log(),
         "tanh": lambda t: t.tanh(), "sigmoid": lambda t: t.sigmoid(), "relu": lambda t: t.relu(),
         "abs": lambda t: abs(t)}
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "maximum": lambda a, b: mf.maximum(a, b) if isinstance(a, mf.Tensor)
          else torch.maximum(a, b), "minimum": lambda a, b: mf.minimum(a, b) if isinstance(a, mf.Tensor)
          else torch.minimum(a, b)}
COMPARE = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "eq": lambda a, b: a == b,
           "ne": lambda a, b: a != b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}
CASTS = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float8_e4m3": torch.float8_e4m3fn,
         "float8_e5m2": torch.float8_e5m2}


def on_gpu(bits, torch_dtype):
    return torch.from_numpy(bits.view(np.int16)).cuda().view(torch_dtype)


def mismatches(ours, gpu):
    """Positions whose bits differ, NaN == NaN."""
    if ours.dtype == bool:
        return int((ours != gpu.cpu().numpy()).sum())
    bits = {1: (torch.uint8, np.uint8), 2: (torch.int16, np.uint16)}[ours.dtype.itemsize]
    theirs = gpu.view(bits[0]).cpu().numpy().view(ours.dtype)
    differ = ours.view(bits[1]) != theirs.view(bits[1])
    both_nan = np.isnan(ours.astype(np.float32)) & np.isnan(theirs.astype(np.float32))
    return int((differ & ~both_nan).sum())


def ulps(ours, gpu):
    """Largest distance in units of the last place between two arrays of finite values of one format."""
    theirs = gpu.view(torch.int16).cpu().numpy().astype(np.int32)
    a = ours.view(np.int16).astype(np.int32)
    order = lambda b: np.where(b < 0, -(b & 0x7FFF), b)      # sign-magnitude bits -> a monotone integer
    return int(np.abs(order(a) - order(theirs)).max())


def main():
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False  # fp32 sums, as minifp's
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    rng = np.random.default_rng(0)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for name, (storage, torch_dtype) in FORMATS.items():
        every = np.arange(1 << 16, dtype=np.uint16)
        for op, f in UNARY.items():
            ours = f(mf.tensor(every.view(storage))).numpy()
            print(f"{name:9} {op:8} {every.size:>8} values  mismatches {mismatches(ours, f(on_gpu(every, torch_dtype)))}")
        finite = every[np.isfinite(every.view(storage).astype(np.float32))]
        a, b = rng.choice(finite, 1 << 22), rng.choice(finite, 1 << 22)
        for op, f in BINARY.items():
            ours = f(mf.tensor(a.view(storage)), mf.tensor(b.view(storage))).numpy()
            theirs = f(on_gpu(a, torch_dtype), on_gpu(b, torch_dtype))
            print(f"{name:9} {op:8} {a.size:>8} pairs   mismatches {mismatches(ours, theirs)}")
        for op, f in COMPARE.items():
            ours = f(mf.tensor(a.view(storage)), mf.tensor(b.view(storage))).numpy()
            theirs = f(on_gpu(a, torch_dtype), on_gpu(b, torch_dtype))
            print(f"{name:9} {op:8} {a.size:>8} pairs   mismatches {mismatches(ours, theirs)}")
        rows = rng.standard_normal((4096, 1024)).astype(storage)
        for op in ("sum", "mean", "softmax"):
            ours = getattr(mf.tensor(rows), op)(axis=-1).numpy()
            theirs = getattr(on_gpu(rows.view(np.uint16), torch_dtype), op)(dim=-1)
            print(f"{name:9} {op:8} 4096 rows of 1024  mismatches {mismatches(ours.astype(storage), theirs.to(torch_dtype))}"
                  f" of {ours.size}, largest difference {ulps(ours.astype(storage), theirs.to(torch_dtype))} ulp")
        x = rng.standard_normal((512, 1024)).astype(storage)
        w = (rng.standard_normal((1024, 256)) / 32).astype(storage)
        ours = (mf.tensor(x) @ mf.tensor(w)).numpy()
        theirs = on_gpu(x.view(np.uint16), torch_dtype) @ on_gpu(w.view(np.uint16), torch_dtype)
        print(f"{name:9} matmul   512x1024x256  mismatches {mismatches(ours, theirs)} of {ours.size}, "
              f"largest difference {ulps(ours, theirs)} ulp")


GRADS = {"tanh": lambda t: t.tanh(), "sigmoid": lambda t: t.sigmoid(), "exp": lambda t: t.exp(),
         "log": lambda t: t.log(), "sqrt": lambda t: t.sqrt(), "relu": lambda t: t.relu()}


def gradients():
    """Input gradients of float16/bfloat16 ops (CUDA's backward kernels and autograd's formulas) against minifp's
    emulation of the "cuda" device: unary ops at every finite value, div and pow on 4M pairs, with random
    upstream gradients."""
    rng = np.random.default_rng(2)
    for name, (storage, torch_dtype) in FORMATS.items():
        every = np.arange(1 << 16, dtype=np.uint16)
        finite = every[np.isfinite(every.view(storage).astype(np.float32))]
        up = lambda n: rng.standard_normal(n).astype(storage).view(np.uint16)
        ours_of = lambda bits, grad=True: mf.Tensor(bits.view(storage), name, grad, device="cuda")
        theirs_of = lambda bits: on_gpu(bits, torch_dtype).requires_grad_()
        g = up(finite.size)
        for op, f in GRADS.items():
            ours, theirs = ours_of(finite), theirs_of(finite)
            f(ours).backward(ours_of(g, False))
            f(theirs).backward(on_gpu(g, torch_dtype))
            print(f"{name:9} {op:8} gradient at {finite.size} values  mismatches "
                  f"{mismatches(ours.grad.numpy(), theirs.grad)}")
        a, b, g = rng.choice(finite, 1 << 22), rng.choice(finite, 1 << 22), up(1 << 22)
        for op, f in {"div": lambda x, y: x / y, "pow": lambda x, y: abs(x) ** y}.items():
            ours, theirs = (ours_of(a), ours_of(b)), (theirs_of(a), theirs_of(b))
            f(*ours).backward(ours_of(g, False))
            f(*theirs).backward(on_gpu(g, torch_dtype))
            print(f"{name:9} {op:8} gradients at {a.size} pairs  mismatches "
                  f"{mismatches(ours[0].grad.numpy(), theirs[0].grad)} (x), "
                  f"{mismatches(ours[1].grad.numpy(), theirs[1].grad)} (y)")


def casts():
    """float32 -> each format: minifp.round_to against PyTorch's .to(dtype) on the GPU, 4M values over every
    float32 exponent (subnormals, infinities and NaN included)."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**32, 1 << 22, dtype=np.uint64).astype(np.uint32).view(np.float32)
    for name, torch_dtype in CASTS.items():
        ours = np.asarray(mf.round_to(x, name))
        theirs = torch.from_numpy(x).cuda().to(torch_dtype)
        print(f"cast float32 -> {name:12} {x.size} values  mismatches {mismatches(ours, theirs)}")


if __name__ == "__main__":
    main()
    gradients()
    casts()

"""Record real PyTorch's float16 and bfloat16 results of the elementwise family into
tests/fixtures/pytorch/elementwise_half.npz (read by tests/torch/test_elementwise_fixtures.py).

    /work/torchenv/bin/python tools/record_elementwise.py

Inputs are 2000 values of each format in [-8, 8] (stored beside the results). For these ops PyTorch's CPU
kernels widen halves to float32, compute and round once, as its CUDA kernels do, and div(rounding_mode="trunc")
truncates the quotient rounded into the format, on both. Left out: logit and xlogy, whose CPU kernels round
intermediate results into the half format where the CUDA kernels (minifp's model) compute in float32.
CI does not run this script.
"""
from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "pytorch" / "elementwise_half.npz"
UNARY = ("acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "tan", "log2", "log10", "exp2", "erf",
         "erfc", "erfinv", "sinc")
BINARY = ("atan2", "hypot", "logaddexp", "logaddexp2", "copysign", "fmod", "remainder", "floor_divide")


def inputs(dtype, n, seed):
    """n values of dtype spread over [-8, 8] (and some in (-1, 1)), deterministic."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-8, 8, n // 2), rng.uniform(-1, 1, n - n // 2)])
    return torch.tensor(x, dtype=torch.float32).to(dtype)


def main():
    arrays = {}
    for name, dtype in (("float16", torch.float16), ("bfloat16", torch.bfloat16)):
        x, y, z = (inputs(dtype, 2000, s) for s in (1, 2, 3))
        arrays[f"{name}/x"], arrays[f"{name}/y"], arrays[f"{name}/z"] = (t.float().numpy() for t in (x, y, z))
        for op in UNARY:
            arrays[f"{name}/{op}"] = getattr(torch, op)(x).float().numpy()
        for op in BINARY:
            arrays[f"{name}/{op}"] = getattr(torch, op)(x, y).float().numpy()
        arrays[f"{name}/lerp"] = torch.lerp(x, y, z).float().numpy()
        arrays[f"{name}/addcmul"] = torch.addcmul(x, y, z, value=0.3).float().numpy()
        arrays[f"{name}/addcdiv"] = torch.addcdiv(x, y, z, value=0.3).float().numpy()
        arrays[f"{name}/round3"] = torch.round(x, decimals=3).float().numpy()
        arrays[f"{name}/div_trunc"] = torch.div(x, y, rounding_mode="trunc").float().numpy()
    np.savez_compressed(OUT, **arrays)
    print(OUT, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()

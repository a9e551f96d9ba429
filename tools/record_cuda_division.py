"""Record how PyTorch divides on CUDA into tests/fixtures/pytorch/cuda_division.json (run on a GPU machine):

    python3 tools/record_cuda_division.py OUT.json               # real PyTorch on its GPU
    python3 tools/record_cuda_division.py --face minifp OUT.json  # minifp.torch on its "cuda" (CuPy or emulated)

CUDA's division kernel multiplies by the divisor's float32 reciprocal where the divisor is a scalar on the host (a
Python number, or a 0-d CPU tensor), and divides where it is a tensor on the GPU; `number / x` is reciprocal(x)
times the number. Each case keeps the quotient's codes as hex, for float32, float16 and bfloat16 dividends.
"""
import argparse
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "cuda_division.json"
DTYPES = ("float32", "float16", "bfloat16")
DIVISORS = (3.0, 7.0, 10.0, 0.1, 1e-3, 1.7, 255.0, 6.0e4, -0.3)


def dividends(n=256):
    """n float32 values: signed, magnitudes 10**-6 to 10**4, and a few of the formats' edges."""
    rng = np.random.default_rng(7)
    x = (rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-6, 4, n)).astype(np.float32)
    x[:8] = [0.0, -0.0, 1.0, 65504.0, 6.1e-5, 6e-8, np.inf, np.nan]
    return x


def codes(torch_module, t):
    """The codes of a tensor, little-endian hex (eight digits for float32, four for the 16-bit types)."""
    t = t.detach().cpu()
    wide = t.dtype == torch_module.float32
    return t.view(torch_module.int32 if wide else torch_module.int16).numpy().astype("<u4" if wide else "<u2") \
        .tobytes().hex()


def record(torch_module):
    """{dtype: {case: codes}}: x / number, x / 0-d CPU tensor, x / 0-d GPU tensor, x / full GPU tensor,
    x.div_(number), and number / x, for each divisor."""
    out = {}
    for dtype in DTYPES:
        dt = getattr(torch_module, dtype)
        x = torch_module.tensor(dividends(), device="cuda").to(dt)
        cases = {}
        for d in DIVISORS:
            cases[f"x/{d}"] = x / d
            cases[f"x/cpu0d({d})"] = x / torch_module.tensor(d, dtype=dt)
            cases[f"x/gpu0d({d})"] = x / torch_module.tensor(d, dtype=dt, device="cuda")
            cases[f"x/full({d})"] = x / torch_module.full_like(x, d)
            cases[f"x.div_({d})"] = x.clone().div_(d)
            cases[f"{d}/x"] = d / x
        out[dtype] = {k: codes(torch_module, v) for k, v in cases.items()}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--face", default="torch", choices=["torch", "minifp"])
    parser.add_argument("out", nargs="?", type=Path, default=OUT)
    args = parser.parse_args()
    if args.face == "minifp":
        import minifp.torch as torch
    else:
        import torch
    out = {"torch": torch.__version__, "face": args.face, "dividends": len(dividends()), "cases": record(torch)}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{args.out}: {sum(len(v) for v in out['cases'].values())} cases, {args.out.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()

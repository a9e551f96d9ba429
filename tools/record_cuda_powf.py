"""Record CUDA's float32 powf (through torch.pow on the GPU) into tests/fixtures/pytorch/cuda_powf.json:

    python3 tools/record_cuda_powf.py OUT.json      # on a GPU machine (tools "device")

Fused Adam computes its bias corrections 1 - beta**step with the device's powf, which is not correctly rounded.
For each beta and step 1..STEPS the fixture keeps the steps where powf differs from the correctly rounded power,
and every 997th step besides, with powf's float32 codes as hex.
"""
import argparse
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "cuda_powf.json"
BETAS, STEPS = (0.9, 0.999, 0.99, 0.95, 0.98, 0.8), 20000


def select(beta, codes):
    """{step: code hex} of the kept steps, from powf's float32 codes at steps 1..len(codes)."""
    steps = np.arange(1, len(codes) + 1)
    exact = (np.float64(np.float32(beta)) ** steps.astype(np.float64)).astype(np.float32).view(np.uint32)
    keep = (exact != codes) | (steps % 997 == 0)
    return {int(k): f"{int(c):08x}" for k, c in zip(steps[keep], codes[keep])}


def main():
    import torch
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=OUT)
    args = parser.parse_args()
    steps = torch.arange(1, STEPS + 1, device="cuda").float()
    cases = {str(b): select(b, torch.pow(torch.full_like(steps, b), steps).cpu().view(torch.int32).numpy()
                            .view(np.uint32)) for b in BETAS}
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "steps": STEPS, "powf": cases}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{args.out}: {sum(map(len, cases.values()))} values")


if __name__ == "__main__":
    main()

"""Record a state_dict saved by real PyTorch with safetensors, for tests/torch/test_serialization.py (not run by CI).

Run with a Python that has torch and safetensors:
    python tools/record_safetensors.py
It writes tests/fixtures/safetensors/torch_state_dict.safetensors (saved by safetensors.torch.save_file) and
torch_state_dict.json: each tensor's dtype, shape and raw bit patterns as PyTorch holds them, so the test can
check that minifp.torch.load reproduces every bit (NaN, infinities, -0.0 and subnormals included).
"""
import json
import os

import torch
from safetensors.torch import save_file

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "safetensors")
SPECIAL = [0.0, -0.0, 1.0, -2.5, float("inf"), float("-inf"), float("nan"), 1e-40, 3e38, 65504.0, 1e-7, 448.0]
BITS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def state_dict():
    """A small model's state_dict in every dtype a checkpoint holds, with special values mixed in."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    sd = {k: v.clone() for k, v in model.state_dict().items()}        # float32 weights, int64 num_batches_tracked
    sd["1.num_batches_tracked"] = torch.tensor(12345678901, dtype=torch.int64)
    special = torch.tensor(SPECIAL, dtype=torch.float64)
    for name in ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
        dtype = getattr(torch, name)
        sd[f"special.{name}"] = special.to(dtype)
        sd[f"random.{name}"] = (torch.randn(2, 3, 5, dtype=torch.float64) * 3).to(dtype)
    sd["ints.int32"] = torch.tensor([[-(2 ** 31), 2 ** 31 - 1]], dtype=torch.int32)
    sd["ints.uint8"] = torch.arange(250, 256, dtype=torch.uint8)
    sd["flags.bool"] = torch.tensor([True, False, True])
    return sd


def bits(t):
    """The raw bit patterns of a tensor as Python ints (two's complement for signed views)."""
    if t.dtype == torch.bool:
        return t.to(torch.uint8).reshape(-1).tolist()
    return t.contiguous().reshape(-1).view(BITS[t.element_size()]).tolist()


def main():
    os.makedirs(HERE, exist_ok=True)
    sd = state_dict()
    save_file(sd, os.path.join(HERE, "torch_state_dict.safetensors"), metadata={"format": "pt"})
    record = {"torch_version": torch.__version__,
              "tensors": {k: {"dtype": str(v.dtype), "shape": list(v.shape), "bits": bits(v)} for k, v in sd.items()}}
    with open(os.path.join(HERE, "torch_state_dict.json"), "w") as f:
        json.dump(record, f, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

"""float16/bfloat16 gradients where autograd's sums and roundings show, against real PyTorch
(tests/fixtures/pytorch/gradients.json, recorded by tools/record_pytorch.py gradients from gradient_programs.py):
each gradient is a tensor of its format before it is summed to an input's shape or added to another, and a
tensor's gradients are added in the order PyTorch's engine runs (latest op first)."""
import json
import pathlib

import numpy as np
import pytest

import minifp.torch as torch

from .gradient_programs import gradients

FIXTURE = json.loads((pathlib.Path(__file__).parent.parent / "fixtures" / "pytorch" / "gradients.json").read_text())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gradients_are_pytorchs_bit_for_bit(dtype):
    recorded = FIXTURE["bits"][f"torch.{dtype}"]
    got = gradients(torch, getattr(torch, dtype))
    assert sorted(got) == sorted(recorded)
    for case, grad in got.items():
        bits = grad.numpy().reshape(-1).view(np.uint16).tolist()
        assert bits == recorded[case], case


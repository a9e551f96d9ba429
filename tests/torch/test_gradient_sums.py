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



@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tanh_and_sigmoid_gradients_round_each_step_on_cuda(dtype):
    # PyTorch's CUDA kernels compute g * (1 - y*y) and g * (1 - y) * y in c10::Half / BFloat16 arithmetic, which
    # rounds every product and difference; minifp's "cpu" device keeps float32 between them (one rounding)
    storage = np.float16 if dtype == "float16" else torch.bfloat16.numpy
    r = lambda v: np.asarray(v, np.float32).astype(storage).astype(np.float32)
    rng = np.random.default_rng(0)
    x0, g0 = r(rng.standard_normal(4096) * 3), r(rng.standard_normal(4096))
    for device in ("cuda", "cpu"):
        for op in ("tanh", "sigmoid"):
            x = torch.tensor(x0).to(getattr(torch, dtype)).to(device).requires_grad_()
            y = getattr(x, op)()
            y.backward(torch.tensor(g0).to(getattr(torch, dtype)).to(device))
            yv = y.detach().float().numpy()
            if device == "cpu":
                want = r(g0 * (1 - yv * yv)) if op == "tanh" else r(g0 * yv * (1 - yv))
            else:
                want = r(g0 * r(1 - r(yv * yv))) if op == "tanh" else r(r(g0 * r(1 - yv)) * yv)
            assert np.array_equal(x.grad.float().numpy(), want), (device, op)

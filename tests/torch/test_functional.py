"""torch.autograd.functional against real PyTorch 2.13: tests/fixtures/pytorch/functional.json, recorded by
tools/record_torch_functional.py, whose run() calls jacobian, hessian, vjp, jvp, vhp and hvp here with minifp.torch:
the same structure of results, shapes, dtypes and requires_grad, and values within RTOL of each tensor's largest
magnitude (PyTorch's CPU exp, sin, tanh and softmax are its own vectorised approximations, not correctly rounded;
minifp's are NumPy's), or the same error."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_functional import run  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "functional.json").read_text())
RTOL = 2e-6


@pytest.mark.parametrize("case", FIX["cases"], ids=lambda c: f"{c['kind']}-{c['function']}")
def test_functional_matches_pytorch(case):
    arrays = [np.asarray(a, np.float32) for a in case["inputs"]]
    got = run(torch, case["kind"], case["function"], arrays)
    if "error" in case:
        assert got == {"error": case["error"]}
        return
    assert "error" not in got, got
    assert got["structure"] == case["structure"]
    for g, w in zip(got["tensors"], case["tensors"], strict=True):
        assert (g["shape"], g["dtype"], g["requires_grad"]) == (w["shape"], w["dtype"], w["requires_grad"])
        a, b = np.asarray(g["values"], np.float32), np.asarray(w["values"], np.float32)
        scale = max(float(np.abs(b).max()) if b.size else 0.0, 1e-30)
        assert np.all(np.abs(a - b) <= RTOL * scale), (a, b)


def test_polynomial_derivatives_are_exact():
    # x**3 summed: gradient 3x**2, Hessian diag(6x); at small integers every step is exact in float32
    x = torch.tensor([1.0, -2.0, 3.0])
    h = torch.autograd.functional.hessian(lambda x: (x ** 3).sum(), x)
    assert h.tolist() == [[6.0, 0.0, 0.0], [0.0, -12.0, 0.0], [0.0, 0.0, 18.0]]
    j = torch.autograd.functional.jacobian(lambda x: x ** 3, x)
    assert j.tolist() == [[3.0, 0.0, 0.0], [0.0, 12.0, 0.0], [0.0, 0.0, 27.0]]
    _, hv = torch.autograd.functional.hvp(lambda x: (x ** 3).sum(), x, torch.tensor([1.0, 1.0, 2.0]))
    assert hv.tolist() == [6.0, -12.0, 36.0]

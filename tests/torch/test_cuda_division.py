"""CUDA divides a tensor by a host scalar as a product with the scalar's reciprocal, in the forward and in
DivBackward0's gradient: a Python number's reciprocal taken in double and rounded to float32, a 0-d CPU tensor's
computed in float32 (PyTorch's div_true_kernel_cuda: `inv_b = opmath_t(1.0) / b`, then a multiply); the ideal
device ("cpu") divides. minifp's emulated cuda does as the H200 recorded in tests/fixtures/pytorch/
cuda_division.json (tools/record_cuda_division.py), where NaNs are compared as NaNs (the GPU writes every NaN as
0x7fff / 0x7fffffff)."""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch

warnings.filterwarnings("ignore", message="minifp: no GPU here")
RNG = np.random.default_rng(4)
X = RNG.standard_normal(4099).astype(np.float32)
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import record_cuda_division as recorder  # noqa: E402

FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "pytorch" / "cuda_division.json").read_text())["cases"]


@pytest.mark.parametrize("b", [3.0, 0.7, 10.0, 1e-3])
def test_cuda_multiplies_by_the_reciprocal_and_cpu_divides(b):
    f32 = np.float32
    cuda = (torch.tensor(X).cuda() / b).cpu().numpy()
    cpu = (torch.tensor(X) / b).numpy()
    np.testing.assert_array_equal(cuda, X * f32(1 / b))
    np.testing.assert_array_equal(cpu, X / f32(b))
    assert (cuda != cpu).any()          # the two rules differ on these values


def test_half_tensors_multiply_in_float32_then_round_once():
    x = torch.tensor(X).half().cuda()
    got = (x / 3.0).float().cpu().numpy()
    want = (x.float().cpu().numpy() * np.float32(1 / 3.0)).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_the_gradient_divides_as_the_forward_does():
    f32 = np.float32
    for device, rule in (("cuda", lambda g: g * f32(1 / 7.0)), ("cpu", lambda g: g / f32(7.0))):
        x = torch.tensor(X, device=device, requires_grad=True)
        g = torch.tensor(X[::-1].copy(), device=device)
        y = x / 7.0
        assert y.grad_fn.name() == "DivBackward0"
        y.backward(g)
        np.testing.assert_array_equal(x.grad.cpu().numpy(), rule(X[::-1].copy()))


def test_a_tensor_divisor_and_a_number_over_a_tensor_divide():
    x, y = torch.tensor(X).cuda(), torch.tensor(X[::-1].copy() + 3).cuda()
    np.testing.assert_array_equal((x / y).cpu().numpy(), X / (X[::-1] + np.float32(3)))
    got = (2.0 / y).cpu().numpy()       # Tensor.__rtruediv__: reciprocal(y) * 2, as PyTorch
    np.testing.assert_array_equal(got, (np.float32(1) / (X[::-1] + np.float32(3))) * np.float32(2))


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_a_0d_host_tensor_divisor_is_a_scalar_too(dtype):
    """A 0-d CPU tensor under a cuda tensor is PyTorch's CPU scalar: its reciprocal is taken in float32."""
    b = torch.tensor(7, dtype=getattr(torch, dtype))
    r = np.float32(1) / np.float32(7)
    got = (torch.tensor(X).cuda() / b).cpu().numpy()
    np.testing.assert_array_equal(got, X * r)
    np.testing.assert_array_equal(torch.div(torch.tensor(X).cuda(), b).cpu().numpy(), X * r)


def test_a_divisor_on_the_device_or_with_dimensions_divides():
    x = torch.tensor(X).cuda()
    np.testing.assert_array_equal((x / torch.tensor(7.0).cuda()).cpu().numpy(), X / np.float32(7))
    np.testing.assert_array_equal((torch.tensor(X) / torch.tensor(7.0)).numpy(), X / np.float32(7))


def test_a_host_scalar_divisors_gradient_multiplies_by_the_reciprocal_twice():
    """DivBackward0's divisor gradient -grad * ((x / b) / b): on cuda both divisions by the CPU scalar multiply."""
    f32 = np.float32
    x = torch.tensor(X[5], device="cuda", requires_grad=True)
    b = torch.tensor(0.7, requires_grad=True)
    y = x / b
    y.backward(torch.tensor(X[6], device="cuda"))
    r = f32(1) / f32(0.7)
    assert b.grad.numpy() == -X[6] * ((X[5] * r) * r)
    assert x.grad.cpu().numpy() == X[6] * r


@pytest.fixture(scope="module")
def got():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (no GPU: "cuda" is emulated, and says so)
        return recorder.record(torch)


def _codes(h, dtype):
    """The codes in hex h, every NaN as one code."""
    wide = dtype == "float32"
    codes = np.frombuffer(bytes.fromhex(h), "<u4" if wide else "<u2").copy()
    inf = {"float32": 0x7F800000, "float16": 0x7C00, "bfloat16": 0x7F80}[dtype]
    codes[(codes & (0x7FFFFFFF if wide else 0x7FFF)) > inf] = inf + 1
    return codes


CASES = [(dtype, case) for dtype in recorder.DTYPES for case in FIXTURE[dtype]]


@pytest.mark.parametrize("dtype,case", CASES, ids=[f"{d}-{c}" for d, c in CASES])
def test_division_on_cuda_is_the_gpus(got, dtype, case):
    want, mine = _codes(FIXTURE[dtype][case], dtype), _codes(got[dtype][case], dtype)
    bad = np.flatnonzero(want != mine)
    assert not bad.size, f"{bad.size} of {want.size} differ, first at {bad[0]}: {want[bad[0]]:#x} against {mine[bad[0]]:#x}"

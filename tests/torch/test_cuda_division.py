"""CUDA divides a tensor by a number as a product with the number's float32 reciprocal (PyTorch's
div_true_kernel_cuda: `inv_b = opmath_t(1.0) / b`, then a multiply), in the forward and in DivBackward0's
gradient; the ideal device ("cpu") divides. minifp's emulated cuda does as the H100."""
import warnings

import numpy as np
import pytest

import minifp.torch as torch

warnings.filterwarnings("ignore", message="minifp: no GPU here")
RNG = np.random.default_rng(4)
X = RNG.standard_normal(4099).astype(np.float32)


@pytest.mark.parametrize("b", [3.0, 0.7, 10.0, 1e-3])
def test_cuda_multiplies_by_the_reciprocal_and_cpu_divides(b):
    f32 = np.float32
    cuda = (torch.tensor(X).cuda() / b).cpu().numpy()
    cpu = (torch.tensor(X) / b).numpy()
    np.testing.assert_array_equal(cuda, X * (f32(1) / f32(b)))
    np.testing.assert_array_equal(cpu, X / f32(b))
    assert (cuda != cpu).any()          # the two rules differ on these values


def test_half_tensors_multiply_in_float32_then_round_once():
    x = torch.tensor(X).half().cuda()
    got = (x / 3.0).float().cpu().numpy()
    want = (x.float().cpu().numpy() * (np.float32(1) / np.float32(3.0))).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_the_gradient_divides_as_the_forward_does():
    f32 = np.float32
    for device, rule in (("cuda", lambda g: g * (f32(1) / f32(7.0))), ("cpu", lambda g: g / f32(7.0))):
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
    """A 0-d CPU tensor under a cuda tensor is PyTorch's CPU scalar: the same reciprocal as a number's."""
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

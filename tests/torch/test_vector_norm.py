"""vector_norm as one op (issue 34): the float32 sum of |x|**ord, its root rounded once, on every device; its
backward PyTorch's norm_backward, each step rounded into the half type on the H100 and once on the ideal device.
torch.linalg.vector_norm, torch.norm, Tensor.norm, F.normalize, clip_grad_norm_ and keras.ops.norm compute with it.

Recorded values: the H100's (tests/fixtures/h100/recorded.npz, replayed by tests/torch/h100_cases.py) and real
PyTorch's on CPU (tests/fixtures/pytorch/vector_norm_cpu.npz, tools/record_vector_norm.py), whose norm_backward is
the same formula of half tensors.
"""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

import minifp.keras as keras
import minifp.torch as torch
import minifp.torch.nn.functional as F
from minifp._ops import OPS
from minifp.engine import H100, IDEAL

sys.path.insert(0, str(Path(__file__).parent))
import h100_cases  # noqa: E402

CPU_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "vector_norm_cpu.npz"
STORAGE = {"float16": np.float16, "bfloat16": bfloat16}
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
ORDS = (2.0, 1.0, 3.0, 1.5, 0.5, math.inf, -math.inf, 0.0, 4.0, -1.0)


def _norm_f32(x, ord, axis):
    """The reference: |x|**ord summed in float32 by NumPy, the root in float32 (no rounding to the half type)."""
    a = np.abs(x.astype(np.float32))
    if ord == math.inf:
        return a.max(axis)
    if ord == -math.inf:
        return a.min(axis)
    if ord == 0:
        return (a != 0).astype(np.float32).sum(axis)
    if ord == 1:
        return a.sum(axis)
    if ord == 2:
        return np.sqrt((a * a).sum(axis))
    return (a ** np.float32(ord)).sum(axis) ** np.float32(1 / ord)


def test_the_norm_rounds_once_where_the_squares_would_round():
    """float16 [1.7529296875, 3.673828125, 6.15234375]: the exact norm 7.37707 rounds to 7.37890625; rounding the
    squares and their sum first (the old composition of half ops) gave 7.375."""
    x = np.array([1.7529296875, 3.673828125, 6.15234375], np.float16)
    squares = (x.astype(np.float32) ** 2).astype(np.float16).astype(np.float32)
    assert np.float16(np.sqrt(np.float16(squares.sum()).astype(np.float32))) == 7.375    # what one op avoids
    for device in ("cuda", "cpu"):
        t = torch.tensor(x, device=device)
        for y in (torch.linalg.vector_norm(t), torch.norm(t), t.norm(), torch.linalg.norm(t)):
            assert y.dtype == torch.float16 and y.item() == 7.37890625


@pytest.mark.parametrize("name", sorted(STORAGE))
@pytest.mark.parametrize("ord", ORDS)
def test_half_norms_are_the_float32_sum_rounded_once(name, ord):
    x = np.random.default_rng(1).standard_normal((6, 200)).astype(STORAGE[name])
    x[0, :7] = 0
    want = _norm_f32(x, ord, 1).astype(STORAGE[name])
    for device in ("cuda", "cpu"):
        got = torch.linalg.vector_norm(torch.tensor(x, device=device), ord, dim=1)
        assert got.dtype == DTYPES[name] and np.array_equal(got.cpu().numpy().view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("ord", (2.0, 3.0, 1.0))
def test_float32_norms_keep_numpys_sum(ord):
    """A float32 norm is NumPy's float32 sum of the powers and its root, bit for bit (the order it always had)."""
    x = np.random.default_rng(2).standard_normal((3, 4, 500)).astype(np.float32)
    got = torch.linalg.vector_norm(torch.tensor(x), ord, dim=(0, 2)).numpy()
    assert np.array_equal(got.view(np.uint32), _norm_f32(x, ord, (0, 2)).view(np.uint32))


def _grad(x, g, ord, device, dim=1):
    t = torch.tensor(x, device=device, requires_grad=True)
    torch.linalg.vector_norm(t, ord, dim=dim).backward(torch.tensor(g, device=device))
    return t.grad.cpu().numpy()


def test_the_h100_rounds_x_over_norm_before_the_product_and_the_ideal_device_once():
    """p = 2: the H100's grad * (x / norm), x / norm a float16 tensor first; the ideal device rounds the exact
    product once. Where the two differ, each is the one its rule gives."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 64)).astype(np.float16)
    g = rng.standard_normal(16).astype(np.float16)
    norm = np.float16(_norm_f32(x, 2, 1)).astype(np.float32)[:, None]
    xs, gs = x.astype(np.float32), g.astype(np.float32)[:, None]
    staged = (gs * (xs / norm).astype(np.float16).astype(np.float32)).astype(np.float16)
    once = (gs * (xs / norm)).astype(np.float16)
    h100, ideal = _grad(x, g, 2.0, "cuda"), _grad(x, g, 2.0, "cpu")
    assert same_bits(h100, staged) and same_bits(ideal, once)
    assert (h100 != ideal).sum() > 20


@pytest.fixture(scope="module")
def cpu_recorded():
    return np.load(CPU_FIXTURE)


def _half(z, key, name):
    return z[key].view(STORAGE[name])


def same_bits(a, b):
    """Bit for bit (a -0.0 is not a 0.0), a and b of one 16-bit storage type."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint16), b.view(np.uint16))


@pytest.mark.parametrize("name", sorted(STORAGE))
@pytest.mark.parametrize("ord", ORDS)
def test_norm_and_its_gradient_are_pytorchs(cpu_recorded, name, ord):
    """PyTorch's norm and norm_backward (CPU, the same formula of half tensors as CUDA): the H100's staged gradient
    gives its bits. Left out: bfloat16 at ord 4 and -1, whose steps |x|**(ord - 1) and norm**(ord - 1) have the
    exponents 3 and -2, which PyTorch's CPU pow computes as products each rounded to bfloat16."""
    z = cpu_recorded
    x, g = _half(z, f"{name}/x", name), _half(z, f"{name}/g", name)
    y = torch.linalg.vector_norm(torch.tensor(x, device="cuda"), ord, dim=1)
    assert same_bits(y.cpu().numpy(), _half(z, f"{name}/{ord}/y", name))
    if name == "bfloat16" and ord in (4.0, -1.0):
        return
    assert same_bits(_grad(x, g, ord, "cuda"), _half(z, f"{name}/{ord}/grad", name))


def test_zero_norms_have_zero_gradients():
    """PyTorch's masked_fill: a zero row's gradient is 0, not NaN, for every order."""
    x = np.zeros((2, 5), np.float16)
    x[1] = [1, -2, 0, 3, 0.5]
    for ord in ORDS:
        for device in ("cuda", "cpu"):
            grad = _grad(x, np.ones(2, np.float16), ord, device)
            assert np.array_equal(grad[0], np.zeros(5, np.float16)), (ord, device)
            assert np.isfinite(grad[1]).all() or ord < 1, (ord, device)


@pytest.mark.parametrize("ord", ORDS)
def test_the_gradient_by_finite_differences(ord):
    """The formula of every order on float64 (the registry's check takes ord 3)."""
    rng = np.random.default_rng(4)
    x, g = rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4)), rng.standard_normal(3)
    op = OPS["vector_norm"]
    analytic = op.grads[0](np, g, op.forward(np, x, ord=ord, axis=1), x, ord=ord, axis=1)
    numeric = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[j] += 1e-6
        lo[j] -= 1e-6
        numeric[j] = (g @ op.forward(np, hi, ord=ord, axis=1) - g @ op.forward(np, lo, ord=ord, axis=1)) / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_the_h100_replays_its_norms_bit_for_bit():
    """The recorded torch.linalg.vector_norm(x, dim=-1) on 64x4096: every half output and gradient, and under
    autocast every gradient, identical; the autocast norms are float32, in the kernel's own summation order."""
    recorded = {k: v for k, v in h100_cases.load_fixture()["ops"].items() if k.startswith("norm/")}
    mine = h100_cases.replay("ops", list(recorded))
    same = {k: float(np.mean(mine[k].reshape(-1)[:n][h100_cases.sample_index(n)] == want))
            for k, (want, n, _) in recorded.items()}
    assert {k for k, s in same.items() if s == 1.0} == {
        f"norm/{m}/{a}" for m in ("float16", "bfloat16") for a in ("y", "grad0")} | {
        f"norm/autocast_{m}/grad0" for m in ("float16", "bfloat16")}
    assert 0.75 <= min(same[f"norm/autocast_{m}/y"] for m in ("float16", "bfloat16"))


def test_under_autocast_the_norm_is_float32_and_its_gradient_rounds_once():
    """CUDA autocast's fp32_set_opt_dtype: the half input's norm in float32; its gradient x / norm * grad in float32,
    rounded once into the input's type."""
    x = np.random.default_rng(5).standard_normal((4, 100)).astype(np.float16)
    t = torch.tensor(x, device="cuda", requires_grad=True)
    with torch.autocast("cuda"):
        y = torch.linalg.vector_norm(t, dim=1)
    assert y.dtype == torch.float32 and np.array_equal(y.detach().cpu().numpy(), _norm_f32(x, 2, 1))
    g = np.float32([1.5, -2.0, 0.25, 3.0])
    y.backward(torch.tensor(g, device="cuda"))
    want = (g[:, None] * (x.astype(np.float32) / _norm_f32(x, 2, 1)[:, None])).astype(np.float16)
    assert t.grad.dtype == torch.float16 and np.array_equal(t.grad.cpu().numpy(), want)


def test_the_faces_norms_are_the_op():
    """torch.norm, Tensor.norm, linalg.norm, F.normalize's denominator and keras.ops.norm give the op's bits."""
    x = np.random.default_rng(6).standard_normal((5, 300)).astype(np.float16)
    t = torch.tensor(x)
    want = _norm_f32(x, 3.0, 1).astype(np.float16)
    for y in (torch.norm(t, 3, dim=1), t.norm(3, dim=1), torch.linalg.norm(t, 3, dim=1),
              keras.ops.norm(x, ord=3, axis=1)):
        assert np.array_equal(np.asarray(y.numpy()), want)
    n2 = _norm_f32(x, 2, 1).astype(np.float16).astype(np.float32)[:, None]
    assert np.array_equal(F.normalize(t, dim=1).numpy(), (x.astype(np.float32) / n2).astype(np.float16))
    fro = keras.ops.norm(x.reshape(5, 10, 30), axis=(1, 2))
    assert np.array_equal(np.asarray(fro.numpy()), _norm_f32(x, 2, 1).astype(np.float16))


@pytest.mark.parametrize("name", sorted(STORAGE))
def test_clip_grad_norm_is_pytorchs_for_half_gradients(cpu_recorded, name):
    """Each gradient's norm in its own type, the norm of those, max_norm / (total + 1e-6) clamped to 1, as PyTorch:
    the total is a 0-dim tensor of the gradients' type, and every clipped gradient is PyTorch's bits."""
    z = cpu_recorded
    grads = [_half(z, f"{name}/clip/in{i}", name) for i in range(2)]
    params = [torch.nn.Parameter(torch.zeros(g.shape, dtype=DTYPES[name])) for g in grads]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g)
    total = torch.nn.utils.clip_grad_norm_(params, 1.0)
    assert total.dtype == DTYPES[name] and total.dim() == 0
    assert total.numpy().view(np.uint16) == z[f"{name}/clip/total"].view(np.uint16)
    for i, p in enumerate(params):
        assert same_bits(p.grad.numpy(), _half(z, f"{name}/clip/out{i}", name))


def test_bad_input_is_pytorchs_error():
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        torch.linalg.vector_norm(torch.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        torch.linalg.vector_norm(torch.zeros(0), math.inf)
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on an empty tensor"):
        torch.linalg.vector_norm(torch.zeros(0), -1)
    with pytest.raises(TypeError, match="argument 'ord' \\(position 2\\) must be Number, not str"):
        torch.linalg.vector_norm(torch.zeros(3), "fro")
    assert torch.linalg.vector_norm(torch.zeros(2, 0), math.inf, dim=0).shape == (0,)
    assert torch.linalg.vector_norm(torch.zeros(0)).item() == 0.0


def test_the_h100_stages_norm_backward_and_the_ideal_device_does_not():
    assert H100.norm_backward == "cuda" and IDEAL.norm_backward == "exact"
    assert H100.stages("vector_norm") and not IDEAL.stages("vector_norm")

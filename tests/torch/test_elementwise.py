"""minifp.torch's elementwise family: PyTorch's integer promotion, argument errors and values (issue 32)."""
import math

import numpy as np
import pytest

import minifp.torch as torch


def test_integer_tensors_stay_integer_as_pytorch_promotes():
    a = torch.tensor([1, 2])
    assert (a + 10).dtype == torch.int64 and (a + 10).tolist() == [11, 12]
    i32 = torch.tensor([1, 2], dtype=torch.int32)
    assert (i32 + 3).dtype == torch.int32 and (3 * i32).dtype == torch.int32
    assert (i32 + torch.tensor(5)).dtype == torch.int32           # a 0-dim tensor does not widen
    assert (i32 + torch.tensor([5, 6])).dtype == torch.int64
    assert (a + 0.5).dtype == torch.float32 and (a + 0.5).tolist() == [1.5, 2.5]
    assert (a / torch.tensor([2, 4])).dtype == torch.float32 and (a / 2).tolist() == [0.5, 1.0]
    b = torch.tensor([True, False])
    assert (b + 1).dtype == torch.int64 and (b * b).dtype == torch.bool
    with pytest.raises(RuntimeError, match="Subtraction"):
        b - b
    assert torch.add(a, a, alpha=3).tolist() == [4, 8] and torch.rsub(a, 10).tolist() == [9, 8]
    assert torch.tensor([7, -7]).div(2, rounding_mode="trunc").tolist() == [3, -3]
    assert torch.tensor([7, -7]).div(2, rounding_mode="floor").tolist() == [3, -4]


def test_numbers_where_pytorch_wants_tensors_raise_type_error():
    t = torch.tensor([1, 2, 3])
    for fn, args in ((torch.eq, (2, t)), (torch.atan2, (t, 2)), (torch.gcd, (t, 2)), (torch.remainder, (2, 3)),
                     (torch.bitwise_and, (2, 3)), (torch.logical_and, (2, t))):
        with pytest.raises(TypeError):
            fn(*args)
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        torch.tensor([1.0, 2.0]).item()


def test_values():
    x, y = torch.tensor([3.0, -3.0, 0.0, float("nan")]), torch.tensor([2.0, 2.0, -1.0, 1.0])
    assert torch.fmod(x, y).tolist()[:3] == [1.0, -1.0, 0.0]
    assert torch.remainder(x, y).tolist()[:3] == [1.0, 1.0, 0.0]
    assert torch.fmax(x, y).tolist() == [3.0, 2.0, 0.0, 1.0]
    assert torch.copysign(y, x).tolist()[:3] == [2.0, -2.0, 1.0]
    assert torch.div(x, y, rounding_mode="floor").tolist()[:2] == [1.0, -2.0]
    assert torch.hypot(torch.tensor([3.0]), torch.tensor([4.0])).item() == 5.0
    assert torch.gcd(torch.tensor([12, 18]), torch.tensor([8, 12])).tolist() == [4, 6]
    assert torch.bitwise_left_shift(torch.tensor([1, 3]), torch.tensor([2, 1])).tolist() == [4, 6]
    assert torch.heaviside(torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([0.5])).tolist() == [0.0, 0.5, 1.0]
    assert torch.round(torch.tensor([1.2345, -2.5]), decimals=2).tolist() == pytest.approx([1.23, -2.5])
    assert torch.nan_to_num(torch.tensor([float("nan"), float("inf")], dtype=torch.float16)).tolist() == [0.0, 65504.0]
    assert torch.isclose(torch.tensor([1.0, 1.0]), torch.tensor([1.0 + 1e-6, 1.1])).tolist() == [True, False]
    assert torch.nextafter(torch.tensor([1.0], dtype=torch.float16), torch.tensor([2.0], dtype=torch.float16)).item() \
        == 1 + 2 ** -10


def test_half_results_round_once():
    """atan2 of float16 values: computed in float32 and rounded once, as PyTorch's CUDA kernel."""
    a, b = torch.tensor([1.0, 3.0], dtype=torch.float16), torch.tensor([7.0, -0.3], dtype=torch.float16)
    want = np.arctan2(a.numpy().astype(np.float32), b.numpy().astype(np.float32)).astype(np.float16)
    assert torch.atan2(a, b).dtype == torch.float16 and np.array_equal(torch.atan2(a, b).numpy(), want)


def test_clamp_min_gradient_goes_to_input_at_ties():
    x, m = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 3.0], requires_grad=True)
    torch.clamp_min(x, m).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0] and m.grad.tolist() == [0.0, 1.0]
    assert math.isnan(torch.clamp_min(torch.tensor([float("nan")]), 0.0).item())


def test_more_of_the_family():
    x = torch.tensor([-1.5, 0.0, 2.25, float("inf")])
    assert torch.frac(x).tolist()[:3] == [-0.5, 0.0, 0.25]
    assert torch.signbit(x).tolist() == [True, False, False, False]
    assert torch.isposinf(x).tolist() == [False, False, False, True]
    m, e = torch.frexp(torch.tensor([8.0, -0.375]))
    assert m.tolist() == [0.5, -0.75] and e.tolist() == [4, -1] and e.dtype == torch.int32
    assert torch.sinc(torch.tensor([0.0, 1.0])).tolist()[0] == 1.0
    assert torch.tensor([0.5, 0.0, float("nan")]).bool().tolist() == [True, False, True]
    assert (-torch.tensor([1, 2], dtype=torch.int32)).dtype == torch.int32
    with pytest.raises(RuntimeError, match="Negation"):
        -torch.tensor([True])
    with pytest.raises(TypeError):
        torch.maximum(torch.tensor([1, 2]), 2)


def test_integer_powers_and_in_place_arithmetic_keep_the_dtype():
    assert (torch.tensor([2, 3]) ** 2).tolist() == [4, 9] and (torch.tensor([2, 3]) ** 2).dtype == torch.int64
    assert (2 ** torch.tensor([1, 2])).tolist() == [2, 4]
    with pytest.raises(RuntimeError, match="negative integer powers"):
        torch.tensor([2]) ** -1
    a = torch.tensor([1, 2], dtype=torch.int32)
    a += torch.tensor([3, 4])
    assert a.dtype == torch.int32 and a.tolist() == [4, 6]
    with pytest.raises(RuntimeError, match="can't be cast"):
        a += 0.5
    assert a.tolist() == [4, 6]


def test_integer_comparisons_are_exact_past_float32():
    a = torch.tensor([2 ** 24 + 1])
    assert (a == 2 ** 24).tolist() == [False] and torch.gt(a, torch.tensor(2 ** 24)).tolist() == [True]
    assert (torch.tensor([1, 3]) != torch.tensor([1.0, 2.0])).tolist() == [False, True]


def test_integer_edge_cases_as_pytorch():
    assert (torch.tensor([0, 2, -1, 1]) ** torch.tensor([-1, -1, -3, -2])).tolist() == [0, 0, -1, 1]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.tensor([3]) // torch.tensor([0])
    with pytest.raises(RuntimeError, match="with a bool tensor"):
        torch.tensor([3]) - True
    with pytest.raises(NotImplementedError):
        torch.tensor([3.0]) & 1


def test_promotion_and_refusals_of_the_float_functions():
    i, h = torch.tensor([3, -7, 5]), torch.tensor([1.5, -2.0, 0.25], dtype=torch.float16)
    assert torch.atan2(i, i).dtype == torch.float32 and torch.atan2(h, i).dtype == torch.float16
    assert torch.ldexp(h, torch.tensor([1, 2, 3])).dtype == torch.float16
    assert torch.ldexp(h, torch.tensor([1, 2, 3])).tolist() == [3.0, -8.0, 2.0]
    for fn in (torch.hypot, torch.logaddexp, torch.nextafter):
        with pytest.raises(NotImplementedError):
            fn(i, i)
    with pytest.raises(RuntimeError, match="did not match"):
        torch.isclose(i, h)
    assert torch.nextafter(i, h).dtype == torch.float16 and torch.nextafter(i, h).tolist()[0] == 3 - 2 ** -9
    assert torch.nextafter(torch.tensor([1.0], dtype=torch.bfloat16),
                           torch.tensor([2.0], dtype=torch.bfloat16)).item() == 1 + 2 ** -7
    assert torch.tensor([1, 2]).float().numpy().dtype == np.float32    # stored as floats, not integers

"""minifp.torch's shape, creation and indexing ops (minifp/torch/_shapes.py): values as PyTorch 2.13 gives them
(recorded by hand from it), gradients through the engine's getitem/setitem, and the scatter_reduce, cumprod and
logcumsumexp engine ops."""
import math

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F


def test_pad_modes_give_pytorchs_values():
    x = torch.arange(6.0).reshape(1, 2, 3)
    assert F.pad(x, (2, 1), mode="reflect").tolist() == [[[2, 1, 0, 1, 2, 1], [5, 4, 3, 4, 5, 4]]]
    assert F.pad(x, (2, 1), mode="replicate").tolist() == [[[0, 0, 0, 1, 2, 2], [3, 3, 3, 4, 5, 5]]]
    assert F.pad(x, (2, 1), mode="circular").tolist() == [[[1, 2, 0, 1, 2, 0], [4, 5, 3, 4, 5, 3]]]
    assert F.pad(x, (1, -1, 0, 1), value=9.0).tolist() == [[[9, 0, 1], [9, 3, 4], [9, 9, 9]]]


def test_pad_gradient_sums_the_copies_and_keeps_the_dtype():
    x = torch.tensor([[[1.0, 2.0, 3.0]]], dtype=torch.float16, requires_grad=True)
    y = F.pad(x, (1, 1), mode="replicate")
    assert y.dtype == torch.float16
    y.sum().backward()
    assert x.grad.tolist() == [[[2.0, 1.0, 2.0]]]
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(x, (3, 0), mode="reflect")


def test_spaced_values():
    assert torch.linspace(0, 1, 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert torch.logspace(0, 2, 3).tolist() == [1.0, 10.0, 100.0]
    assert torch.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.linspace(0, 1, -1)


def test_diagonals_round_trip_with_gradients():
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    m = torch.diag_embed(v, offset=1)
    assert m.tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert torch.diagonal(m, 1).tolist() == [1.0, 2.0]
    (torch.diagonal(m, 1) * torch.tensor([3.0, 4.0])).sum().backward()
    assert v.grad.tolist() == [3.0, 4.0]


def test_rolls_rotations_and_meshgrid():
    a = torch.arange(6).reshape(2, 3)
    assert torch.roll(a, 1, 1).tolist() == [[2, 0, 1], [5, 3, 4]]
    assert torch.rot90(torch.arange(4).reshape(2, 2)).tolist() == [[1, 3], [0, 2]]
    gx, gy = torch.meshgrid(torch.arange(3.0), torch.arange(2.0), indexing="xy")
    assert gx.shape == (2, 3) and gy.tolist() == [[0, 0, 0], [1, 1, 1]]


@pytest.mark.parametrize("reduce, out, grad_self, grad_src", [
    ("sum", [14.0, 7.0], [1.0, 2.0], [1.0, 2.0, 1.0, 2.0]),
    ("prod", [30.0, 8.0], [3.0, 16.0], [30.0, 8.0, 10.0, 4.0]),
    ("mean", [14 / 3, 7 / 3], [1 / 3, 2 / 3], [1 / 3, 2 / 3, 1 / 3, 2 / 3]),
    ("amax", [10.0, 4.0], [1.0, 0.0], [0.0, 0.0, 0.0, 2.0]),
])
def test_scatter_reduce_values_and_gradients(reduce, out, grad_self, grad_src):
    base = torch.tensor([10.0, 1.0], requires_grad=True)
    src = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = base.scatter_reduce(0, torch.tensor([0, 1, 0, 1]), src, reduce)
    (y * torch.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_allclose(y.tolist(), out, rtol=1e-6)
    np.testing.assert_allclose(base.grad.tolist(), grad_self, rtol=1e-6)
    np.testing.assert_allclose(src.grad.tolist(), grad_src, rtol=1e-6)


def test_scatter_add_rounds_once_in_half_precision():
    # 2048 + 1 + 1 in float16: two roundings would give 2048 (ties to even), one gives 2050
    base = torch.tensor([2048.0], dtype=torch.float16)
    y = base.scatter_add(0, torch.tensor([0, 0]), torch.tensor([1.0, 1.0], dtype=torch.float16))
    assert y.dtype == torch.float16 and y.tolist() == [2050.0]


def test_index_add_and_index_copy():
    x = torch.zeros(3, 2)
    src = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.index_add(0, torch.tensor([2, 2]), src, alpha=2).tolist() == [[0, 0], [0, 0], [8, 12]]
    assert x.index_copy(0, torch.tensor([1, 0]), src).tolist() == [[3, 4], [1, 2], [0, 0]]


def test_order_statistics():
    k = torch.kthvalue(torch.tensor([3.0, 1.0, 2.0]), 2)
    assert k.values.item() == 2.0 and k.indices.item() == 2
    assert torch.median(torch.tensor([4.0, 1.0, 3.0, 2.0])).item() == 2.0
    c = torch.cummax(torch.tensor([1.0, 3.0, 3.0, 2.0, math.nan, 5.0]), 0)
    assert c.indices.tolist() == [0, 1, 2, 2, 4, 4] and math.isnan(c.values.tolist()[-1])


def test_cumprod_gradient_through_a_zero():
    x = torch.tensor([1.0, 0.0, 2.0], requires_grad=True)
    y = torch.cumprod(x, 0)
    y.sum().backward()
    assert y.tolist() == [1.0, 0.0, 0.0] and x.grad.tolist() == [1.0, 3.0, 0.0]


def test_logcumsumexp_values_and_gradient():
    x = torch.tensor([0.0, math.log(3.0)], requires_grad=True)
    y = torch.logcumsumexp(x, 0)
    y.sum().backward()
    np.testing.assert_allclose(y.tolist(), [0.0, math.log(4.0)], rtol=1e-6)
    np.testing.assert_allclose(x.grad.tolist(), [1.25, 0.75], rtol=1e-6)


def test_integer_results():
    assert torch.unique(torch.tensor([3, 1, 1, 2]), return_inverse=True, return_counts=True)[1].tolist() == \
        [2, 0, 0, 1]
    assert torch.bincount(torch.tensor([0, 2, 2])).tolist() == [1, 0, 2]
    assert torch.searchsorted(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0]), right=True).tolist() == [2]
    assert torch.tril_indices(3, 3, -1).tolist() == [[1, 2, 2], [0, 0, 1]]
    assert [t.tolist() for t in torch.unravel_index(torch.tensor([7]), (3, 4))] == [[1], [3]]
    assert F.one_hot(torch.tensor([1, 0]), 3).tolist() == [[0, 1, 0], [1, 0, 0]]


def test_empty_and_zero_dim_cases():
    a, b = torch.zeros(5, 0, requires_grad=True), torch.zeros(0, 10, requires_grad=True)
    assert torch.mm(a, b).tolist() == [[0.0] * 10] * 5
    assert torch.zeros(5, 0, 0).softmax(-1).shape == (5, 0, 0)
    assert torch.tensor(2.0).mean(0, keepdim=True).item() == 2.0
    assert torch.gather(torch.tensor(3.0), 0, torch.tensor([0, 0])).tolist() == [3.0, 3.0]


def test_in_place_scatters_keep_the_graph():
    w = torch.ones(3, requires_grad=True)
    y = w * 2
    y.scatter_(0, torch.tensor([1]), torch.tensor([5.0]))
    y.sum().backward()
    assert y.tolist() == [2.0, 5.0, 2.0] and w.grad.tolist() == [2.0, 0.0, 2.0]
    x = torch.zeros(3)
    assert x.index_put_((torch.tensor([0, 0]),), torch.tensor([1.0, 2.0]), accumulate=True) is x
    assert x.tolist() == [3.0, 0.0, 0.0]


def test_unfold_columns_are_the_patches():
    x = torch.arange(2 * 4 * 5.0).reshape(1, 2, 4, 5)
    cols = F.unfold(x, (2, 3), stride=(2, 1))           # 2 x 3 patches: 2 rows of 3 positions
    assert cols.shape == (1, 12, 6)
    patch = x.numpy()[0, :, 2:4, 1:4].reshape(-1)       # the patch at row 1, column 1
    assert cols.numpy()[0, :, 4].tolist() == patch.tolist()


def test_scatter_reduce_prod_through_a_zero_and_amin_ties_without_self():
    base = torch.tensor([3.0], requires_grad=True)
    src = torch.tensor([0.0, 2.0, 0.5], requires_grad=True)
    base.scatter_reduce(0, torch.tensor([0, 0, 0]), src, "prod").sum().backward()
    assert base.grad.tolist() == [0.0] and src.grad.tolist() == [3.0, 0.0, 0.0]
    base = torch.tensor([3.0, 7.0], requires_grad=True)
    src = torch.tensor([5.0, 5.0, 1.0], requires_grad=True)
    y = base.scatter_reduce(0, torch.tensor([0, 0, 1]), src, "amin", include_self=False)
    (y * torch.tensor([1.0, 2.0])).sum().backward()
    assert y.tolist() == [5.0, 1.0] and base.grad.tolist() == [0.0, 0.0] and src.grad.tolist() == [0.5, 0.5, 2.0]


def test_a_sizes_slices_sums_and_repeats_are_sizes():
    # What PyTorch 2.13 gives: a Size stays a Size through slicing, + (with a tuple either side) and *
    s = torch.zeros(2, 3, 4).shape
    cases = {"s[1:]": (3, 4), "s[::-1]": (4, 3, 2), "s + (5,)": (2, 3, 4, 5), "(5,) + s": (5, 2, 3, 4),
             "s * 2": (2, 3, 4) * 2, "2 * s": (2, 3, 4) * 2, "s + s": (2, 3, 4) * 2}
    for expr, want in cases.items():
        got = eval(expr)
        assert type(got) is torch.Size and got == want and repr(got) == f"torch.Size({list(want)})", expr
    assert type(s[0]) is int and s[-1] == 4 and hash(s) == hash((2, 3, 4))
    with pytest.raises(TypeError, match=r"can only concatenate tuple \(not list\) to torch.Size"):
        s + [5]

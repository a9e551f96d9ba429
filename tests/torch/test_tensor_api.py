"""The tensor methods and protocols real training scripts use, with PyTorch's values, shapes, errors and printing
(the values here are what PyTorch 2.13 gives for the same calls)."""
import numpy as np
import pytest

import minifp.torch as torch


def grid(*shape, requires_grad=False):
    return torch.arange(float(np.prod(shape))).reshape(shape).requires_grad_(requires_grad)


def test_setitem_keeps_the_graph_and_overwritten_values_get_no_gradient():
    x = grid(3, 4, requires_grad=True)
    y = x * 1
    y[0, 1] = 5.0
    y[1] = torch.tensor([9.0, 9.0, 9.0, 9.0])
    y[y > 10] = -1.0
    assert y.tolist() == [[0, 5, 2, 3], [9, 9, 9, 9], [8, 9, 10, -1]]
    (y * y).sum().backward()
    assert x.grad.tolist() == [[0, 0, 4, 6], [0, 0, 0, 0], [16, 18, 20, 0]]


def test_setitem_rounds_into_the_tensors_dtype_and_value_gradients_flow():
    x = torch.zeros(4, dtype=torch.float16)
    x[1:3] = torch.tensor([0.1, 70000.0])
    assert x.tolist() == [0.0, np.float16(0.1).item(), float("inf"), 0.0]
    v = torch.tensor([2.0], requires_grad=True)
    y = torch.zeros(3)
    y[::2] = v
    (y * torch.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert v.grad.tolist() == [101.0]


def test_in_place_ops_on_a_leaf_that_requires_grad_are_refused_outside_no_grad():
    p = torch.zeros(2, requires_grad=True)
    for call in (lambda: p.add_(1), lambda: p.mul_(2), lambda: p.__setitem__(0, 1.0), lambda: p.clamp_(0, 1)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            call()
    assert p.tolist() == [0.0, 0.0]
    with torch.no_grad():
        p.add_(torch.ones(2), alpha=0.5).mul_(4)
    assert p.tolist() == [2.0, 2.0] and p.requires_grad


def test_in_place_arithmetic_stays_in_the_tensors_dtype():
    h = torch.ones(2, dtype=torch.float16)
    h += torch.tensor([2.0 ** -11, 3.0])        # 1 + 2**-11 rounds to 1 in float16 (ties to even)
    assert h.dtype == torch.float16 and h.tolist() == [1.0, 4.0]
    i = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        i.add_(torch.tensor([0.5, 0.5]))
    assert i.tolist() == [1, 2]


def test_split_chunk_unbind():
    x = grid(5, 2)
    assert [t.shape[0] for t in x.split(2)] == [2, 2, 1]
    assert [t.shape[0] for t in torch.split(x, [1, 4])] == [1, 4]
    assert [t.shape[0] for t in x.chunk(3)] == [2, 2, 1] and [t.shape[1] for t in x.chunk(2, dim=1)] == [1, 1]
    assert [t.tolist() for t in x.unbind(1)] == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 5"):
        x.split([2, 2])


def test_topk_sort_gather():
    x = torch.tensor([[3.0, 1.0, 4.0, 1.5], [float("nan"), 2.0, -1.0, 0.0]], requires_grad=True)
    values, indices = x.topk(2)
    assert indices.tolist() == [[2, 0], [0, 1]] and values[0].tolist() == [4.0, 3.0]
    assert np.isnan(values[1, 0].item())
    s = torch.sort(x[0].detach(), descending=True)
    assert s.values.tolist() == [4.0, 3.0, 1.5, 1.0] and s.indices.tolist() == [2, 0, 3, 1]
    x[0].topk(1, largest=False).values.sum().backward()
    assert x.grad.tolist() == [[0, 1, 0, 0], [0, 0, 0, 0]]
    assert torch.gather(grid(2, 3), 1, torch.tensor([[2, 0], [1, 1]])).tolist() == [[2, 0], [4, 4]]
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(5)


def test_masks_triangles_flips():
    x = grid(3, 3)
    assert x.tril().tolist() == [[0, 0, 0], [3, 4, 0], [6, 7, 8]]
    assert torch.triu(x, 1).tolist() == [[0, 1, 2], [0, 0, 5], [0, 0, 0]]
    causal = torch.ones(3, 3).tril() == 0
    filled = x.masked_fill(causal, float("-inf"))
    assert filled.softmax(-1)[0].tolist() == [1.0, 0.0, 0.0]
    assert x.flip(0)[0].tolist() == [6, 7, 8] and torch.flip(x, [0, 1])[0].tolist() == [8, 7, 6]
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill(torch.tensor([1, 0, 0]), 0.0)


def test_expand_and_repeat_sum_their_gradients_back():
    b = torch.tensor([[1.0], [2.0]], requires_grad=True)
    e = b.expand(2, 3)
    assert e.tolist() == [[1, 1, 1], [2, 2, 2]] and b.expand(-1, 2).shape == (2, 2)
    r = b.repeat(2, 2)
    assert r.shape == (4, 2) and r[:, 1].tolist() == [1, 2, 1, 2]
    (e.sum() + r.sum()).backward()
    assert b.grad.tolist() == [[7.0], [7.0]]
    assert torch.tensor([[1, 2]]).expand_as(torch.zeros(3, 2)).tolist() == [[1, 2]] * 3


def test_var_std_cumsum():
    x = torch.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    assert x.var(1).tolist() == pytest.approx([7 / 3, 3.0], rel=1e-7)
    assert x.var(1, unbiased=False).tolist() == pytest.approx([14 / 9, 2.0], rel=1e-7)
    assert torch.var(x, correction=0).item() == pytest.approx(np.var([1, 2, 4, 0, 0, 3]), rel=1e-7)
    assert x.std(0, keepdim=True).shape == (1, 3)
    assert torch.tensor([5.0]).var().item() != torch.tensor([5.0]).var().item()    # NaN: no spread to estimate
    assert x.cumsum(1).tolist() == [[1, 3, 7], [0, 0, 3]] and torch.cumsum(torch.tensor([1, 2]), 0).tolist() == [1, 3]


def test_printing_and_zero_dim_protocols_as_pytorch():
    assert str(torch.tensor(17.0)) == "tensor(17.)" and f"{torch.tensor(17.0).item()}" == "17.0"
    assert repr(torch.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(torch.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(torch.tensor([1, 2])) == "tensor([1, 2])"
    assert f"{torch.tensor(3.14159):.3f}" == "3.142" and "%.1f" % torch.tensor(2.25) == "2.2"
    assert [10, 20, 30][torch.tensor(1)] == 20 and int(torch.tensor(2.7)) == 2
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        [1, 2][torch.tensor(1.0)]
    assert grid(2, 3).nelement() == 6


def test_grad_modes_are_context_managers_and_decorators():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad()
    def f():
        return x * 2

    @torch.no_grad
    def g():
        return x * 2

    @torch.inference_mode()
    def h():
        return x * 2, torch.is_inference_mode_enabled()
    assert not f().requires_grad and not g().requires_grad and h() [0].requires_grad is False and h()[1]
    assert (x * 2).requires_grad and not torch.is_inference_mode_enabled()
    torch.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    (gx,) = torch.autograd.grad((x * x).sum(), x)
    assert gx.tolist() == [2.0, 2.0] and x.grad is None


def test_randint_takes_pytorchs_overloads():
    torch.manual_seed(0)
    a = torch.randint(10, (3,))
    b = torch.randint(5, 10, (2, 2))
    c = torch.randint(high=4, size=(5,))
    assert a.shape == (3,) and a.dtype == torch.int64 and ((a >= 0) & (a < 10)).all()
    assert ((b >= 5) & (b < 10)).all() and ((c >= 0) & (c < 4)).all()
    with pytest.raises(TypeError, match="randint"):
        torch.randint(10)
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        torch.randint(5, 5, (2,))


def test_data_and_detach_are_aliases_whose_in_place_changes_reach_the_tensor():
    m = torch.nn.Linear(2, 2)
    m.weight.data.mul_(0).add_(torch.ones(2, 2))      # old scripts update parameters this way
    assert m.weight.tolist() == [[1.0, 1.0]] * 2 and m.weight.requires_grad
    m.weight.data.fill_(3.0)
    m.bias.data[0] = 7.0
    assert m.weight.tolist() == [[3.0, 3.0]] * 2 and m.bias.tolist()[0] == 7.0
    m.weight.data = torch.zeros(2, 2, dtype=torch.float16)
    assert m.weight.dtype == torch.float16 and isinstance(m.weight, torch.nn.Parameter)
    detached = m.weight.detach()
    detached.fill_(5.0)                                 # detach() shares the values too, as in PyTorch
    assert m.weight.tolist() == [[5.0, 5.0]] * 2 and not detached.requires_grad

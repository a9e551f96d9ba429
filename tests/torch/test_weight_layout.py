"""A PyTorch conv weight takes its gradient's memory order, (kh, kw, in, out), at its first update, so that later
forwards and input gradients read it without a copy; values and bits are those of C-order weights."""
import numpy as np
import pytest

import minifp.torch as torch
from minifp import _ops
from minifp._backend import to_numpy
from minifp.engine import storage


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3))


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_an_update_lays_the_weight_out_as_its_gradient(optimizer):
    net = _net()
    opt = getattr(torch.optim, optimizer)(net.parameters(), lr=0.01, **({"momentum": 0.9} if optimizer == "SGD" else {}))
    x = torch.randn(2, 3, 10, 10)
    w = net[2].weight
    assert storage(w).flags.c_contiguous
    net(x).square().mean().backward()
    assert storage(w.grad).transpose(2, 3, 1, 0).flags.c_contiguous and not w.grad.is_contiguous()
    opt.step()
    hwio = storage(w).transpose(2, 3, 1, 0)
    assert hwio.flags.c_contiguous and w.stride() == (1, 4, 3 * 8 * 4, 8 * 4)     # (out 4, in 8, 3, 3)
    assert np.shares_memory(_ops._kernel_rows(storage(w), "NCHW"), storage(w))     # the next forward: a view
    state = opt.state[w]["momentum_buffer" if optimizer == "SGD" else "exp_avg"]
    assert storage(state).strides == storage(w).strides


def conv_steps(device, force_c=False, scaler=None):
    """Three SGD-with-momentum steps of a small conv net on device (float16 autocast with a GradScaler where one is
    given; force_c: every weight and buffer copied into C order before each step): losses and C-order weights."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                              torch.nn.Conv2d(8, 4, 3, stride=2)).to(device)
    x = torch.randn(4, 3, 10, 10).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(3):
        if force_c:
            with torch.no_grad():
                for p in net.parameters():
                    p.data = p.data.contiguous()
            for st in opt.state.values():
                st["momentum_buffer"] = st["momentum_buffer"].contiguous()
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.float16, enabled=scaler is not None):
            loss = net(x).square().mean()
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        losses.append(loss.item())
    return losses, [to_numpy(storage(p.detach().contiguous())) for p in net.parameters()]


def test_the_bits_are_those_of_c_order_weights():
    """Three steps of SGD with momentum, then the same three steps with every weight and buffer copied into C
    order before each step: the same weights and losses, bit for bit."""
    (l1, w1), (l2, w2) = (conv_steps("cpu", force_c) for force_c in (False, True))
    assert l1 == l2 and all(np.array_equal(a.view(np.int32), b.view(np.int32)) for a, b in zip(w1, w2))


@pytest.mark.parametrize("bad", [None, np.inf, np.nan])
def test_unscale_multiplies_a_weight_gradient_in_its_memory_order_in_place(bad):
    net = _net()
    opt = torch.optim.SGD(net.parameters(), lr=0.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    scaler.scale(net(torch.randn(2, 3, 10, 10)).square().mean()).backward()
    g = storage(net[2].weight.grad)
    assert not g.flags.c_contiguous and g.transpose(2, 3, 1, 0).flags.c_contiguous
    if bad is not None:
        g[1, 2, 0, 1] = bad
    want = g * np.float32(2.0**-10)
    scaler.unscale_(opt)
    got = storage(net[2].weight.grad)
    assert got is g and np.array_equal(got.view(np.int32), want.view(np.int32))
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0**10 * (1 if bad is None else 0.5)     # (the step skipped, the scale backed off)



@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_the_cpu_tail_of_half_state_is_the_c_order_tail_in_either_layout(fmt):
    """An add with alpha under the CPU's half-precision state rounding: the last 252 mod 32 = 28 values in C order
    (PyTorch's parameter in memory) take the scalar code's two roundings, whether the arrays lie in C order or in
    a conv weight's updated order (out, in, kh, kw viewed over kh, kw, in, out)."""
    import minifp
    from minifp import _optim
    f = getattr(minifp, fmt)
    rng = np.random.default_rng(5)
    x, y = (_optim.widen(_optim.round_to(rng.standard_normal((7, 4, 3, 3)).astype(np.float32), f), f)
            for _ in range(2))
    token = _optim._KERNELS.set(_optim.UpdateKernels(f, "cpu"))
    try:
        c_order = _optim._add(x, y, 0.3)
        hwio = [np.ascontiguousarray(a.transpose(2, 3, 1, 0)).transpose(3, 2, 0, 1) for a in (x, y)]
        other = _optim._add(*hwio, 0.3)
        fused = _optim._op(_optim.SEAMS.fma(np, _optim._scalar(0.3), y, x))
    finally:
        _optim._KERNELS.reset(token)
    assert not other.flags.c_contiguous and np.array_equal(other.view(np.int32), c_order.view(np.int32))
    differ = np.flatnonzero((c_order != fused).reshape(-1))
    assert differ.size and differ.min() >= 252 - 28         # the scalar code's values, and only those, differ


@pytest.mark.parametrize("zeroing", ["optimizer", "module"])
def test_gradients_zeroed_in_place_keep_the_order(zeroing):
    """zero_grad(set_to_none=False) fills each gradient with zeros in its memory order, and the next backward adds
    into it in that order, so the weight stays laid out as its gradient (no copy back each step)."""
    net = _net()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(2, 3, 10, 10)
    for _ in range(3):
        (opt if zeroing == "optimizer" else net).zero_grad(set_to_none=False)
        net(x).square().mean().backward()
        opt.step()
        w, g = storage(net[2].weight), storage(net[2].weight.grad)
        assert w.transpose(2, 3, 1, 0).flags.c_contiguous and g.strides == w.strides


def test_contiguous_copies_a_weight_in_its_gradients_layout_into_c_order():
    """x.contiguous() is x itself where it is C-ordered, else a C-ordered copy of the same values (PyTorch's
    invariant x.contiguous().is_contiguous()), through which the gradient flows."""
    net = _net()
    net(torch.randn(2, 3, 10, 10)).square().mean().backward()
    torch.optim.SGD(net.parameters(), lr=0.01).step()
    w = net[2].weight
    assert not w.is_contiguous()
    c = w.contiguous()
    assert c.is_contiguous() and c is not w and np.array_equal(c.detach().numpy(), w.detach().numpy())
    assert c.contiguous() is c
    w.grad = None
    c.sum().backward()
    assert np.array_equal(w.grad.numpy(), np.ones(w.shape, np.float32))

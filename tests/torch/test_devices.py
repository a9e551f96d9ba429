"""Devices as values (issue 34): emulated cuda is the H100, whose conv2d adds a bias as cuDNN does; the ideal device
keeps one rounding per op; torch.backends.cudnn.enabled switches between cuDNN's and PyTorch's native kernels."""
import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F
from minifp import engine
from minifp.engine import H100, IDEAL


@pytest.fixture
def cuda_numerics():
    """Restores the cuda device's numerics (and cuDNN's switch) after the test."""
    before = engine.device_numerics("cuda")
    yield
    engine.set_device_numerics("cuda", before)


def _case(c=16, o=32, groups=1, seed=0):
    r = np.random.default_rng(seed)
    x = r.standard_normal((2, c, 9, 9)).astype(np.float32)
    w = (r.standard_normal((o, c // groups, 3, 3)) / 4).astype(np.float32)
    b = r.standard_normal(o).astype(np.float32)
    return x, w, b


def _conv(device, x, w, b, dtype=torch.float16, groups=1, grads=False):
    """y (and the gradients of x, w, b for a fixed output gradient) of a conv2d in `dtype` on `device`, as bits."""
    tx, tw, tb = (torch.from_numpy(v).to(device).to(dtype).requires_grad_() for v in (x, w, b))
    y = F.conv2d(tx, tw, tb, padding=1, groups=groups)
    out = [y]
    if grads:
        y.backward(torch.from_numpy(np.random.default_rng(7).standard_normal(tuple(y.shape)).astype(np.float32))
                   .to(device).to(dtype))
        out += [tx.grad, tw.grad, tb.grad]
    return [t.detach().cpu().numpy().view(np.uint16) for t in out]


def _two_roundings(x, w, b, dtype=torch.float16, groups=1):
    """The convolution rounded into dtype, then the bias added as a dtype op: cuDNN's two roundings."""
    tx, tw, tb = (torch.from_numpy(v).to(dtype) for v in (x, w, b))
    y = F.conv2d(tx, tw, None, padding=1, groups=groups) + tb.reshape(1, -1, 1, 1)
    return y.detach().numpy().view(np.uint16)


def test_cpu_is_ideal_and_cuda_is_the_h100_by_default():
    assert engine.device_numerics("cpu") == IDEAL and engine.device_numerics("ideal") == IDEAL
    assert engine.device_numerics("cuda") == H100 and H100.cudnn and torch.backends.cudnn.enabled


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_conv_rounds_before_its_bias_and_cpu_rounds_once(dtype):
    x, w, b = _case()
    (on_cpu,), (on_cuda,) = _conv("cpu", x, w, b, dtype), _conv("cuda", x, w, b, dtype)
    assert (on_cuda == _two_roundings(x, w, b, dtype)).all()
    assert (on_cpu != on_cuda).any(), "the case must tell one rounding from two"


def test_the_ideal_device_gives_the_old_values_bit_for_bit(cuda_numerics):
    """cuda set to IDEAL computes as before issue 34 (the bias in the float32 sum, one rounding) and as cpu does,
    forward and gradients."""
    x, w, b = _case()
    engine.set_device_numerics("cuda", IDEAL)
    ideal = _conv("cuda", x, w, b, grads=True)
    for got, want in zip(ideal, _conv("cpu", x, w, b, grads=True)):
        assert (got == want).all()
    tx, tw, tb = (torch.from_numpy(v).half() for v in (x, w, b))       # the float32 sum with the bias, rounded once
    wide = F.conv2d(tx.float(), tw.float(), tb.float(), padding=1)
    assert (ideal[0] == wide.half().numpy().view(np.uint16)).all()


def test_the_h100_changes_no_gradient(cuda_numerics):
    """Only the forward's rounding moves: the gradients of x, w and the bias (a sum) are the ideal device's."""
    x, w, b = _case()
    h100 = _conv("cuda", x, w, b, grads=True)
    engine.set_device_numerics("cuda", IDEAL)
    ideal = _conv("cuda", x, w, b, grads=True)
    assert (h100[0] != ideal[0]).any()
    for got, want in zip(h100[1:], ideal[1:]):
        assert (got == want).all()


def test_cudnn_enabled_picks_the_native_depthwise_kernel_that_fuses_the_bias(cuda_numerics):
    """A float16 depthwise conv of 32 channels: cuDNN's (two roundings); with cuDNN off PyTorch's native depthwise
    kernel (one). A dense one rounds twice either way (cuDNN, or the native im2col GEMM then a bias add)."""
    x, w, b = _case(c=32, o=32, groups=32)
    (fused,) = _conv("cpu", x, w, b, groups=32)
    assert (_conv("cuda", x, w, b, groups=32)[0] == _two_roundings(x, w, b, groups=32)).all()
    torch.backends.cudnn.enabled = False
    assert engine.device_numerics("cuda") == H100.with_cudnn(False) and not torch.backends.cudnn.enabled
    assert (_conv("cuda", x, w, b, groups=32)[0] == fused).all() and (fused != _two_roundings(x, w, b, groups=32)).any()
    xd, wd, bd = _case(seed=1)
    assert (_conv("cuda", xd, wd, bd)[0] == _two_roundings(xd, wd, bd)).all()
    torch.backends.cudnn.enabled = True
    assert engine.device_numerics("cuda") == H100


def test_rounds_before_bias_follows_pytorchs_dispatch():
    f16, bf16 = engine.float16, engine.bfloat16
    dense, depthwise = ((8, 16, 16, 16), (32, 16, 3, 3), {}), ((8, 32, 16, 16), (32, 1, 3, 3), {"groups": 32})
    assert H100.rounds_before_bias(*dense, bf16) and not IDEAL.rounds_before_bias(*dense, f16)
    assert H100.rounds_before_bias(*depthwise, f16) and not H100.rounds_before_bias(*depthwise, bf16)
    assert not H100.with_cudnn(False).rounds_before_bias(*depthwise, f16)
    assert H100.with_cudnn(False).rounds_before_bias(*dense, f16)
    assert not H100.rounds_before_bias((32, 96, 16, 16), (96, 1, 3, 3), {"groups": 96, "stride": 2}, f16)
    assert not H100.rounds_before_bias(*dense[:2], {"layout": "NHWC"}, f16)      # TensorFlow's layouts: not PyTorch's


def test_set_device_numerics_takes_only_a_device(cuda_numerics):
    with pytest.raises(TypeError, match="must be a Device"):
        engine.set_device_numerics("cuda", "H100")
    assert engine.device_numerics("cuda") == H100


def test_the_monitor_names_the_overflow_of_the_convolution_before_its_bias(cuda_numerics):
    """A float16 convolution of 70000 overflows before a bias of -10000 is added: inf on the H100 (two roundings),
    60000 on the ideal device; a watching monitor counts the overflow as conv2d's."""
    import minifp.numerics
    conv = torch.nn.Conv2d(1, 1, 1).to("cuda").half()
    with torch.no_grad():
        conv.weight.fill_(700.0)
        conv.bias.fill_(-10000.0)
    x = torch.full((1, 1, 2, 2), 100.0).to("cuda").half()
    with minifp.numerics.watch(conv) as report:
        y = conv(x)
    assert torch.isinf(y).all() and report.first_overflow.op == "conv2d" and report.first_overflow.count == 4
    engine.set_device_numerics("cuda", IDEAL)
    assert (conv(x) == 60000.0).all()

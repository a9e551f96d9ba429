"""minifp.torch's tensors, autocast, promotion, TF32 and errors against PyTorch (recorded fixtures and
PyTorch's source lists)."""
import json
import pathlib
import numpy as np
import pytest

import minifp as mf
import minifp.torch as torch
import minifp.torch.nn.functional as F

FIXTURES = pathlib.Path(__file__).parent.parent / "fixtures" / "pytorch"
AUTOCAST = json.loads((FIXTURES / "autocast_cpu.json").read_text())
pytestmark = pytest.mark.filterwarnings("ignore:minifp. no GPU here")
EXACT = float(np.float32(1 + 2**-12) * np.float32(1 + 2**-12))      # the float32 product, rounded once


def x32(*shape, device="cpu"):
    return torch.tensor(np.linspace(0.5, 2.0, int(np.prod(shape))).reshape(shape), device=device)


# The calls of the CPU fixture table that the core face has, by the fixture's names.
CALLS = {
    "matmul": lambda x, y: torch.matmul(x, y), "mm": lambda x, y: torch.mm(x, y),
    "bmm": lambda x, y: torch.bmm(x.unsqueeze(0), y.unsqueeze(0)),
    "add": lambda x, y: x + y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
    "2.0 / x": lambda x, y: 2.0 / x, "x * 2.0": lambda x, y: x * 2.0, "sum": lambda x, y: x.sum(),
    "mean": lambda x, y: x.mean(), "softmax": lambda x, y: torch.softmax(x, 1),
    "log_softmax": lambda x, y: torch.log_softmax(x, 1), "exp": lambda x, y: x.exp(), "log": lambda x, y: x.log(),
    "relu": lambda x, y: torch.relu(x), "cat(x, x)": lambda x, y: torch.cat([x, x]),
    "stack(x, x)": lambda x, y: torch.stack([x, x]), "max()": lambda x, y: x.max(),
    "max(dim=1).values": lambda x, y: x.max(dim=1).values, "argmax": lambda x, y: x.argmax(),
    "tanh": lambda x, y: x.tanh(), "sigmoid": lambda x, y: x.sigmoid(), "pow(x, 2.0)": lambda x, y: torch.pow(x, 2.0),
    "x ** 2": lambda x, y: x ** 2, "pow(x, y)": lambda x, y: x ** y, "sqrt": lambda x, y: x.sqrt(),
    "F.linear_bias": lambda x, y: F.linear(x, y, y[0].float()), "F.linear_no_bias": lambda x, y: F.linear(x, y),
    "nn.Linear(fp32 params)": lambda x, y: torch.nn.Linear(3, 2)(x),
    "nn.Conv2d(fp32 params)": lambda x, y: torch.nn.Conv2d(1, 2, 2)(x.reshape(1, 1, 3, 3)),
    "F.conv2d": lambda x, y: F.conv2d(x.reshape(1, 1, 3, 3), y[:2, :2].reshape(1, 1, 2, 2)),
    "gelu": lambda x, y: F.gelu(x), "layer_norm(fp32 weight, bias)": lambda x, y: torch.nn.LayerNorm(3)(x),
    "layer_norm(no affine)": lambda x, y: F.layer_norm(x, (3,)),
    "group_norm(fp32 weight, bias)": lambda x, y: torch.nn.GroupNorm(1, 3)(x),
    "batch_norm(eval, fp32 stats)": lambda x, y: torch.nn.BatchNorm1d(3).eval()(x),
    "batch_norm(train, fp32 stats)": lambda x, y: torch.nn.BatchNorm1d(3)(x),
    "cross_entropy": lambda x, y: F.cross_entropy(x, torch.tensor([0, 1, 2])),
    "mse_loss": lambda x, y: F.mse_loss(x, y),
    "scaled_dot_product_attention": lambda x, y: F.scaled_dot_product_attention(x[None], y[None], y[None]),
}


@pytest.mark.parametrize("inputs", ["float32_inputs", "lowp_inputs"])
@pytest.mark.parametrize("dtype", ["torch.bfloat16", "torch.float16"])
def test_cpu_autocast_output_dtypes_match_pytorch(dtype, inputs):
    table = AUTOCAST["autocast"][dtype][inputs]
    lowp = torch.bfloat16 if dtype == "torch.bfloat16" else torch.float16
    checked = 0
    for name, call in CALLS.items():
        x, y = x32(3, 3), x32(3, 3)
        if inputs == "lowp_inputs":
            x, y = x.to(lowp), y.to(lowp)
        with torch.autocast("cpu", dtype=lowp):
            got = call(x, y)
        assert repr(got.dtype) == table[name], name
        checked += 1
    assert checked == len(CALLS)


# CUDA's lists (autocast_mode.h): what comes out for float32 inputs and for inputs in the autocast dtype
# ("lp": the autocast dtype, "in": the input's dtype, "f32": float32).
CUDA = [("matmul", lambda x: x @ x, "lp", "lp"), ("exp", lambda x: x.exp(), "f32", "f32"),
        ("log", lambda x: x.log(), "f32", "f32"), ("pow", lambda x: x ** 2, "f32", "f32"),
        ("sum", lambda x: x.sum(), "f32", "f32"), ("softmax", lambda x: x.softmax(1), "f32", "f32"),
        ("log_softmax", lambda x: x.log_softmax(1), "f32", "f32"),
        ("mean", lambda x: x.mean(), "f32", "lp"), ("relu", lambda x: x.relu(), "f32", "lp"),
        ("tanh", lambda x: x.tanh(), "f32", "lp"), ("sqrt", lambda x: x.sqrt(), "f32", "lp"),
        ("2.0 / x", lambda x: 2.0 / x, "f32", "f32"),      # reciprocal(x) * 2.0: float32, as on the H100
        ("max", lambda x: x.max(), "f32", "lp"),
        ("cat", lambda x: torch.cat([x, x]), "f32", "lp"),
        ("Linear", lambda x: torch.nn.Linear(3, 2).cuda()(x), "lp", "lp"),
        ("Conv2d", lambda x: torch.nn.Conv2d(1, 2, 2).cuda()(x.reshape(1, 1, 3, 3)), "lp", "lp"),
        ("LayerNorm", lambda x: torch.nn.LayerNorm(3).cuda()(x), "f32", "f32"),
        ("GroupNorm", lambda x: torch.nn.GroupNorm(1, 3).cuda()(x), "f32", "f32"),
        ("BatchNorm1d", lambda x: torch.nn.BatchNorm1d(3).cuda()(x), "f32", "lp"),
        ("gelu", lambda x: F.gelu(x), "f32", "lp"), ("silu", lambda x: F.silu(x), "f32", "lp"),
        ("cross_entropy", lambda x: F.cross_entropy(x, torch.tensor([0, 1, 2]).cuda()), "f32", "f32"),
        ("nll_loss", lambda x: F.nll_loss(x, torch.tensor([0, 1, 2]).cuda()), "f32", "f32"),
        ("mse_loss", lambda x: F.mse_loss(x, x), "f32", "f32"),
        ("binary_cross_entropy_with_logits", lambda x: F.binary_cross_entropy_with_logits(x, x), "f32", "f32"),
        ("scaled_dot_product_attention", lambda x: F.scaled_dot_product_attention(x[None], x[None], x[None]),
         "lp", "lp")]


@pytest.mark.parametrize("lowp", ["float16", "bfloat16"])
@pytest.mark.parametrize("name, call, from32, fromlp", CUDA, ids=[c[0] for c in CUDA])
def test_cuda_autocast_output_dtypes_follow_cudas_lists(name, call, from32, fromlp, lowp):
    lp = getattr(torch, lowp)
    for inputs, expected in ((x32(3, 3, device="cuda"), from32), (x32(3, 3, device="cuda").to(lp), fromlp)):
        with torch.autocast(device_type="cuda", dtype=lp):
            assert call(inputs).dtype == (lp if expected == "lp" else torch.float32)


def test_binary_cross_entropy_is_banned_under_cuda_autocast():
    x = x32(3, 3, device="cuda") / 3
    with torch.autocast("cuda"), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(x, x)


def test_autocast_casts_only_tensors_on_its_device():
    w = x32(3, 3)
    with torch.autocast("cuda"):
        assert (w @ w).dtype == torch.float32                     # cpu tensors: CUDA autocast leaves them
        assert (w.cuda() @ w.cuda()).dtype == torch.float16
    with torch.autocast("cpu"):
        assert (w @ w).dtype == torch.bfloat16                    # the CPU's default dtype


def test_fused_bias_overflows_as_the_gpu_does():
    """cuBLAS adds the bias to the float32 product and rounds once: 60000 + 10000 is inf in float16."""
    x = torch.ones(1, 1, device="cuda")
    w = torch.tensor([[60000.0]], device="cuda", requires_grad=True)
    b = torch.tensor([10000.0], device="cuda", requires_grad=True)
    with torch.autocast(device_type="cuda", dtype=torch.float16):
        y = mf.apply("linear", x, w, b)
    assert y.dtype == torch.float16 and y.item() == np.inf


def test_autocast_region_disabled_inside_and_decorator():
    x = x32(2, 2, device="cuda")

    @torch.autocast("cuda")
    def f(a):
        with torch.autocast("cuda", enabled=False):
            inner = (a @ a).dtype
        return (a @ a).dtype, inner

    assert f(x) == (torch.float16, torch.float32)
    assert not torch.amp.is_autocast_enabled("cuda")


def test_autocast_rejects_what_pytorch_rejects():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        torch.autocast(torch.device("cuda"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        torch.autocast("tpu")
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        region = torch.autocast("cpu", dtype=torch.float32)
    with region:
        assert (x32(2, 2) @ x32(2, 2)).dtype == torch.float32


PROMOTION = {"float16 tensor * 2.5": lambda: torch.ones(2, dtype=torch.half) * 2.5,
             "float16 tensor + float32 0-dim tensor": lambda: torch.ones(2, dtype=torch.half) + torch.tensor(1.0),
             "float16 tensor + float32 1-dim tensor": lambda: torch.ones(2, dtype=torch.half) + torch.ones(2),
             "float16 0-dim tensor * float32 0-dim tensor":
                 lambda: torch.tensor(1.0, dtype=torch.half) * torch.tensor(2.0),
             "bfloat16 tensor + float16 tensor":
                 lambda: torch.ones(2, dtype=torch.bfloat16) + torch.ones(2, dtype=torch.half),
             "bfloat16 tensor + float32 0-dim tensor": lambda: torch.ones(2, dtype=torch.bfloat16) + torch.tensor(1.0),
             "int64 tensor + 1.5": lambda: torch.arange(2) + 1.5,
             "int64 tensor / int64 tensor": lambda: torch.arange(2) / torch.arange(1, 3),
             "bool tensor + 1.5": lambda: torch.tensor([True]) + 1.5}


@pytest.mark.parametrize("case", sorted(PROMOTION))
def test_promotion_matches_pytorch(case):
    assert repr(PROMOTION[case]().dtype) == AUTOCAST["promotion_outside_autocast"][case]


def test_weak_scalar_keeps_the_half_value_exact():
    """x * 0.1 in float16: the scalar is float32's 0.1 (CUDA's opmath), the product rounded once."""
    x = torch.tensor([3.0], dtype=torch.half)
    assert (x * 0.1).item() == float(np.float16(np.float32(3.0) * np.float32(0.1)))


ERRORS = {"matmul(float16 2-D, float32 2-D)": lambda: torch.matmul(torch.ones(2, 2, dtype=torch.half), torch.ones(2, 2)),
          "matmul(float32 2-D, bfloat16 2-D)":
              lambda: torch.matmul(torch.ones(2, 2), torch.ones(2, 2, dtype=torch.bfloat16)),
          "mm(float16, float32)": lambda: torch.mm(torch.ones(2, 2, dtype=torch.half), torch.ones(2, 2)),
          "backward twice through (x*x).sum()": "twice",
          "backward on a tensor without grad_fn": lambda: torch.ones(2).sum().backward(),
          "backward on a non-scalar without gradient": lambda: (torch.ones(2, requires_grad=True) * 2).backward()}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_carry_pytorchs_words(case):
    expected = AUTOCAST["errors"][case]["error"]
    call = ERRORS[case]
    if call == "twice":
        x = torch.ones(2, requires_grad=True)
        y = (x * x).sum()
        y.backward()
        call = y.backward
    with pytest.raises(getattr(__builtins__, expected["type"], RuntimeError)) as info:
        call()
    assert str(info.value).startswith(expected["message"])


def test_retain_graph_keeps_it_and_ops_without_saved_values_run_twice():
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 4.0]
    z = (x + 1).sum()                   # add saves nothing: PyTorch runs it twice too
    z.backward()
    z.backward()


def test_tf32_switches_round_the_factors_of_cuda_float32_products():
    a = torch.tensor([[1 + 2**-12]], device="cuda")
    assert not torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32   # PyTorch's defaults
    assert (a @ a).item() == EXACT and (a @ a).dtype == torch.float32
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        assert torch.get_float32_matmul_precision() == "high"
        assert (a @ a).item() == 1.0                        # 1 + 2**-12 has no tf32 neighbour but 1
        assert (a.cpu() @ a.cpu()).item() == EXACT      # the CPU has no TF32
        torch.set_float32_matmul_precision("medium")
        b = torch.tensor([[1 + 2**-9]], device="cuda")
        assert (b @ b).item() == 1.0                        # bfloat16 factors: 7 mantissa bits
    finally:
        torch.set_float32_matmul_precision("highest")
    assert (a @ a).item() == EXACT


def test_tf32_gradient_products_round_their_factors_and_the_bias_gradient_stays_float32():
    c = 1 + 2**-12                                          # no tf32 neighbour but 1
    x, w, b = (torch.tensor(v, device="cuda", requires_grad=True) for v in ([[c]], [[c]], [0.0]))
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        F.linear(x, w, b).backward(torch.tensor([[c]], device="cuda"))
    finally:
        torch.set_float32_matmul_precision("highest")
    assert x.grad.item() == 1.0 and w.grad.item() == 1.0   # g and the other factor rounded to tf32 first
    assert b.grad.item() == c                               # a sum of g: no product, no rounding
    x.grad = w.grad = None
    F.linear(x, w, b).backward(torch.tensor([[c]], device="cuda"))
    assert x.grad.item() == w.grad.item() == EXACT


def test_devices_and_moves():
    x = torch.ones(2, 3)
    assert x.device == "cpu" and x.cuda().device == "cuda" and x.to("cuda:0").is_cuda
    assert torch.cuda.is_available() and torch.cuda.is_emulated() is (type(x.cuda()._data) is np.ndarray)
    assert repr(torch.device("cuda")) == "device(type='cuda')" and str(torch.device("cuda")) == "cuda"
    assert repr(x.cuda().device) == "device(type='cuda', index=0)" and str(x.cuda().device) == "cuda:0"
    assert x.device.type == "cpu" and x.cuda().device.type == "cuda" and x.device.index is None
    assert isinstance(x.device, torch.device) and x.device == torch.device("cpu")
    assert repr(torch.device("cpu", 0)) == "device(type='cpu', index=0)"
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x.cuda() + x
    w = torch.ones(3, requires_grad=True)
    (w.cuda() * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0] and w.grad.device == "cpu"


def test_tensor_methods_with_pytorch_spellings():
    x = torch.arange(6.0).view(2, 3)
    assert x.shape == (2, 3) and repr(x.size()) == "torch.Size([2, 3])" and x.size(-1) == 3 and x.dim() == 2
    assert x.sum(dim=1, keepdim=True).shape == (2, 1) and x.mean(dim=0).tolist() == [1.5, 2.5, 3.5]
    values, indices = x.max(dim=1)
    assert values.tolist() == [2.0, 5.0] and indices.tolist() == [2, 2] and indices.dtype == torch.int64
    assert x.permute(1, 0).shape == (3, 2) and x.t().shape == (3, 2) and x.transpose(0, 1).shape == (3, 2)
    assert x.unsqueeze(0).shape == (1, 2, 3) and x.unsqueeze(0).squeeze().shape == (2, 3)
    assert x.flatten().shape == (6,) and x.reshape(-1, 2).shape == (3, 2) and x.numel() == 6
    assert x.half().dtype == torch.float16 and x.bfloat16().float().dtype == torch.float32
    assert x.clamp(1, 4).tolist() == [[1, 1, 2], [3, 4, 4]]
    assert repr(torch.float16) == "torch.float16" and torch.half is torch.float16
    assert torch.tensor([1, 2]).dtype == torch.int64 and torch.tensor([1.5]).dtype == torch.float32
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        torch.ones(1, requires_grad=True).numpy()
    assert torch.tensor([70000.0], dtype=torch.half).item() == np.inf
    assert torch.tensor([1.0], dtype=mf.tf32).dtype == mf.tf32          # minifp formats work as dtypes

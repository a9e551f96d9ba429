"""The PyTorch face's CUDA autocast table against a real H100's (torch 2.11): the dtype each recorded expression
gives under autocast, for float16 and bfloat16 (tests/fixtures/pytorch/autocast_cuda_h100.json, copied from
shared/gpu/h100/autocast_cuda.json)."""
import json
import warnings
from pathlib import Path

import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F
from minifp.torch import nn

warnings.filterwarnings("ignore", message="minifp: no GPU here")
RECORDED = json.loads((Path(__file__).parents[1] / "fixtures/pytorch/autocast_cuda_h100.json").read_text())


def _inputs(low):
    torch.manual_seed(0)
    f32 = torch.randn(4, 8, device="cuda")
    return f32, f32.to(low), torch.randn(2, 3, 6, 6, device="cuda")


def _off(fn):
    with torch.autocast("cuda", enabled=False):
        return fn()


# Each recorded expression, written with the face (f32: a float32 tensor, low: the autocast dtype's, img: NCHW)
EXPRESSIONS = {
    "torch.matmul(f32, f32)": lambda f32, low, img: torch.matmul(f32, f32.T),
    "f32 @ f32": lambda f32, low, img: f32 @ f32.T,
    "torch.matmul(low, f32)": lambda f32, low, img: torch.matmul(low, f32.T),
    "nn.Linear(f32)": lambda f32, low, img: nn.Linear(8, 3).cuda()(f32),
    "nn.Linear(low)": lambda f32, low, img: nn.Linear(8, 3).cuda()(low),
    "F.linear(f32, f32, f32)": lambda f32, low, img: F.linear(f32, f32, f32[0, :4]),
    "nn.Conv2d(f32)": lambda f32, low, img: nn.Conv2d(3, 2, 3).cuda()(img),
    "nn.Conv2d(low)": lambda f32, low, img: nn.Conv2d(3, 2, 3).cuda()(img.to(low.dtype)),
    "F.scaled_dot_product_attention(f32)": lambda f32, low, img: F.scaled_dot_product_attention(
        f32[None], f32[None], f32[None]),
    "torch.exp(f32)": lambda f32, low, img: torch.exp(f32),
    "torch.exp(low)": lambda f32, low, img: torch.exp(low),
    "torch.log(low)": lambda f32, low, img: torch.log(low.abs()),
    "torch.sum(f32)": lambda f32, low, img: torch.sum(f32),
    "torch.sum(low)": lambda f32, low, img: torch.sum(low),
    "torch.mean(f32)": lambda f32, low, img: torch.mean(f32),
    "torch.mean(low)": lambda f32, low, img: torch.mean(low),
    "torch.tanh(low)": lambda f32, low, img: torch.tanh(low),
    "F.softmax(low)": lambda f32, low, img: F.softmax(low, dim=-1),
    "F.log_softmax(low)": lambda f32, low, img: F.log_softmax(low, dim=-1),
    "F.relu(f32)": lambda f32, low, img: F.relu(f32),
    "F.relu(low)": lambda f32, low, img: F.relu(low),
    "F.gelu(low)": lambda f32, low, img: F.gelu(low),
    "low + f32": lambda f32, low, img: low + f32,
    "low + low": lambda f32, low, img: low + low,
    "low * 2.0": lambda f32, low, img: low * 2.0,
    "2.0 / low": lambda f32, low, img: 2.0 / low,
    "low ** 2": lambda f32, low, img: low ** 2,
    "torch.cat([low, f32])": lambda f32, low, img: torch.cat([low, f32]),
    "F.cross_entropy(low)": lambda f32, low, img: F.cross_entropy(low, torch.tensor([0, 1, 2, 3], device="cuda")),
    "nn.CrossEntropyLoss()(f32)": lambda f32, low, img: nn.CrossEntropyLoss()(
        f32, torch.tensor([0, 1, 2, 3], device="cuda")),
    "F.mse_loss(low, low)": lambda f32, low, img: F.mse_loss(low, low * 0.5),
    "F.binary_cross_entropy_with_logits(low, low)": lambda f32, low, img: F.binary_cross_entropy_with_logits(
        low, (low > 0).to(low.dtype)),
    "nn.LayerNorm(low)": lambda f32, low, img: nn.LayerNorm(8).cuda()(low),
    "nn.GroupNorm(low)": lambda f32, low, img: nn.GroupNorm(1, 3).cuda()(img.to(low.dtype)),
    "nn.BatchNorm2d(low)": lambda f32, low, img: nn.BatchNorm2d(3).cuda()(img.to(low.dtype)),
    "nn.MaxPool2d(low)": lambda f32, low, img: nn.MaxPool2d(2)(img.to(low.dtype)),
    "nn.AdaptiveAvgPool2d(low)": lambda f32, low, img: nn.AdaptiveAvgPool2d(1)(img.to(low.dtype)),
    "autocast(enabled=False) inside: torch.matmul(f32, f32)": lambda f32, low, img: _off(lambda: f32 @ f32.T),
    "autocast(enabled=False) inside: nn.Linear(f32)": lambda f32, low, img: _off(lambda: nn.Linear(8, 3).cuda()(f32)),
}
CASES = [(kind, expr) for kind in ("cuda_float16", "cuda_bfloat16") for expr in RECORDED[kind]]


def test_every_recorded_expression_is_written_here():
    assert {expr for _, expr in CASES} == set(EXPRESSIONS)


@pytest.mark.parametrize("kind, expr", CASES)
def test_autocast_gives_the_h100s_dtype(kind, expr):
    low = getattr(torch, kind.split("_")[1])
    f32, low_t, img = _inputs(low)
    with torch.autocast("cuda", dtype=low):
        got = EXPRESSIONS[expr](f32, low_t, img)
    assert str(got.dtype) == f"torch.{RECORDED[kind][expr]}", expr


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_an_explicit_dtype_overrides_autocasts_float32_rule(fn):
    """softmax and log_softmax are fp32_set_opt_dtype ops: float32 under autocast, unless a dtype is asked for."""
    f32, low, _ = _inputs(torch.float16)
    with torch.autocast("cuda", dtype=torch.float16):
        assert fn(low, -1).dtype == torch.float32
        assert fn(low, -1, dtype=torch.float16).dtype == torch.float16
        assert fn(f32, -1, dtype=torch.bfloat16).dtype == torch.bfloat16
    with torch.autocast("cuda", enabled=False):
        want = fn(low, -1)                      # the half kernel, as outside autocast
    with torch.autocast("cuda", dtype=torch.float16):
        got = fn(low, -1, dtype=torch.float16)
    assert torch.equal(got, want)


def test_cross_entropy_keeps_log_softmax_in_its_inputs_dtype_under_autocast():
    """LossNLL.cpp asks log_softmax for the input's dtype; only nll_loss then runs in float32."""
    _, low, _ = _inputs(torch.float16)
    target = torch.tensor([1, 0, 7, 3], device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        got = F.cross_entropy(low, target)
    with torch.autocast("cuda", enabled=False):
        want = F.nll_loss(F.log_softmax(low, 1).float(), target)
    assert got.dtype == torch.float32 and torch.equal(got, want)

"""Fused multiply-adds bit for bit with real PyTorch 2.13's CPU kernels: tests/fixtures/pytorch/fma.json, recorded by
tools/record_torch_fma.py, whose cases run here through minifp.torch. add/sub/rsub with alpha, lerp and addcmul
round their multiply-add once; the single-tensor optimizers built from them (SGD, Adam, AdamW, RMSprop, Adagrad,
Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop) then give PyTorch's weights and state to the bit."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
from minifp import engine

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_fma import OPS, OPTIMIZERS, digest, inputs, run_op, run_optimizer  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "fma.json").read_text())


@pytest.mark.parametrize("name", list(OPS))
def test_op_matches_pytorch_bit_for_bit(name):
    want = FIX["ops"][name]
    got = run_op(torch, name)
    assert got.dtype == np.float32 and got.shape == (want["size"],)
    assert got[:4].tolist() == want["head"]
    assert digest(got) == want["sha1"]


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_pytorch_bit_for_bit(name):
    want = FIX["optimizers"][name]
    w, state = run_optimizer(torch, name)
    assert w[:4].tolist() == want["head"]
    assert digest(w) == want["sha1"]
    assert {k: digest(v) for k, v in state.items()} == want["state"]


def test_the_recorded_cases_tell_one_rounding_from_two():
    # each op case that has a two-rounding formula in the recorder differs from it in some results
    counts = {k: v["two_roundings_differ"] for k, v in FIX["ops"].items() if v["two_roundings_differ"] is not None}
    assert counts and all(c > 0 for c in counts.values())


def test_fma_is_exact_on_ties_signed_zeros_infinities_and_nans():
    f32 = np.float32
    # (1 + 2**-23) + 2**-24 - 2**-70, just below a midpoint: rounded to float64 first it would be the midpoint,
    # and then go to even (up); rounded once, down
    a, b, c = f32(1 + 2.0**-23), f32(2.0**-24 - 2.0**-47), f32(1 + 2.0**-23)
    assert engine.fma(a, b, c) == f32(1 + 2.0**-23)
    assert engine.fma(f32(2.0**-24), f32(1.0), f32(1.0)) == f32(1.0)            # an exact tie: to even
    assert engine.fma(f32(3 * 2.0**-25), f32(1.0), f32(1.0)) == f32(1 + 2.0**-23)
    assert np.signbit(engine.fma(f32(-0.0), f32(1.0), f32(-0.0)))               # -0 + -0 is -0
    assert not np.signbit(engine.fma(f32(1.0), f32(-1.0), f32(1.0)))             # x - x is +0
    assert engine.fma(f32(np.inf), f32(1.0), f32(1.0)) == np.inf
    assert np.isnan(engine.fma(f32(np.inf), f32(0.0), f32(1.0)))
    assert np.isnan(engine.fma(f32(np.nan), f32(1.0), f32(1.0)))
    assert engine.fma(f32(3e38), f32(2.0), f32(0.0)) == np.inf                   # overflow
    assert engine.fma(f32(2.0**-100), f32(2.0**-49), f32(0.0)) == f32(2.0**-149)  # the smallest subnormal
    # against an exact rational reference on random inputs, the scalar tails included
    rng = np.random.default_rng(3)
    x, y, z = (rng.standard_normal(2001).astype(np.float32) for _ in range(3))
    from fractions import Fraction
    got = engine.fma(x, y, z)
    for i in range(0, 2001, 7):
        exact = Fraction(float(x[i])) * Fraction(float(y[i])) + Fraction(float(z[i]))
        nearest = np.float32(float(exact))
        lo, hi = np.nextafter(nearest, f32(-np.inf)), np.nextafter(nearest, f32(np.inf))
        best = min((nearest, lo, hi), key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.uint32)) & 1))
        assert got[i] == best, i


def test_add_with_alpha_keeps_its_gradients():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.tensor([3.0, -1.0], requires_grad=True)
    out = torch.sub(x, y, alpha=0.5)
    assert out.grad_fn.name() == "SubBackward0"
    assert [f.name() for f, _ in out.grad_fn.next_functions] == ["torch::autograd::AccumulateGrad"] * 2
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and y.grad.tolist() == [-0.5, -0.5]
    x.grad = y.grad = None
    (gx, gy) = torch.autograd.grad(torch.add(x, y, alpha=3.0).sum(), (x, y), create_graph=True)
    assert gx.tolist() == [1.0, 1.0] and gy.tolist() == [3.0, 3.0]


@pytest.mark.filterwarnings("ignore:minifp. no GPU here")
def test_half_tensors_fuse_in_float32_then_round_once():
    # float16 on CUDA: x + alpha * y as one float32 FMA, alpha in float32 (the opmath), then one rounding into
    # float16; on the CPU alpha is first rounded into float16 (the recorded add_alpha_half case)
    xs, ys = inputs("half", 2)
    x, y = torch.tensor(xs).half(), torch.tensor(ys).half()
    on_cuda = torch.add(x.cuda(), y.cuda(), alpha=0.3).float().cpu().numpy()
    on_cpu = torch.add(x, y, alpha=0.3).float().numpy()
    for alpha, got in ((np.float32(0.3), on_cuda), (np.float32(np.float16(0.3)), on_cpu)):
        want = engine.fma(alpha, y.float().numpy(), x.float().numpy()).astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(got, want)
    assert (on_cuda != on_cpu).any()
    # the gradient multiplies by alpha itself, as PyTorch's AddBackward0 (checked against PyTorch 2.13: for
    # float16 weights w of 4096 normals, y's gradient is w * float32(0.3) rounded, 934 of them other than with
    # alpha rounded first)
    w = y.flip(0)
    xg, yg = x.clone().requires_grad_(), y.clone().requires_grad_()
    (torch.add(xg, yg, alpha=0.3) * w).sum().backward()
    want = (w.float().numpy() * np.float32(0.3)).astype(np.float16).astype(np.float32)
    assert np.array_equal(yg.grad.float().numpy(), want)

"""The activations of issue 32 against real PyTorch 2.13 on the CPU (tests/fixtures/pytorch/activations.json,
recorded by tools/record_pytorch.py): float32 values, float16/bfloat16 bits, gradients, modules and errors."""
import json
import pathlib

import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch import nn
from minifp.torch.nn import functional as F

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "activations.json")
                     .read_text())
SPECS = FIXTURE["inputs"]
KWARGS = {"leaky_relu": {}, "leaky_relu(negative_slope=0.2)": {"negative_slope": 0.2}, "elu": {},
          "elu(alpha=0.5)": {"alpha": 0.5}, "selu": {}, "softplus": {},
          "softplus(beta=2.0, threshold=3.0)": {"beta": 2.0, "threshold": 3.0}, "mish": {}, "hardswish": {},
          "hardsigmoid": {}}
# CPU PyTorch computes these transcendentals with SLEEF's vector functions, NumPy with its own: a float32 result
# may differ in the last places (mish chains three), and (rarely) a half result that a float32 tie-break decides.
TRANSCENDENTAL = {"elu", "elu(alpha=0.5)", "selu", "softplus", "softplus(beta=2.0, threshold=3.0)", "mish"}
# minifp follows the CUDA kernel, min(max(x + 3, 0), 6) * float32(1/6); PyTorch's CPU kernel divides by 6 instead,
# which can differ in float32's last place (never in float16/bfloat16 here: test_half_bits is exact).
CPU_DIVIDES = {"hardsigmoid"}


def wave(spec, dtype=None, requires_grad=False):
    """The float32 tensor a wave() spec describes (the recorder's formula), optionally cast to dtype."""
    i = np.arange(int(np.prod(spec["shape"], dtype=np.int64)), dtype=np.int64)
    phase = spec["freq"] * i.astype(np.float64) + spec["k"] + spec["quad"] * ((i * i) % 10007).astype(np.float64)
    v = (spec["offset"] + spec["scale"] * np.sin(phase)).astype(np.float32).reshape(spec["shape"])
    t = torch.tensor(v)
    t = t if dtype is None else t.to(dtype)
    return t.requires_grad_(requires_grad)


def run(label, dtype):
    x = wave(SPECS["x"], dtype, requires_grad=True)
    y = getattr(F, label.split("(")[0])(x, **KWARGS[label])
    y.backward(wave(SPECS["g"], dtype))
    return y.detach(), x.grad


def test_every_recorded_activation_is_checked():
    assert set(FIXTURE["activations"]) >= set(KWARGS)


@pytest.mark.parametrize("label", KWARGS)
def test_float32_values_and_gradients(label):
    want = FIXTURE["activations"][label]["torch.float32"]
    y, g = run(label, torch.float32)
    for got, ref in ((y, want["output"]), (g, want["grad"])):
        if label in TRANSCENDENTAL:
            np.testing.assert_allclose(got.numpy(), np.float32(ref), rtol=2e-6, atol=1e-37)
        elif label in CPU_DIVIDES:
            np.testing.assert_array_max_ulp(got.numpy(), np.float32(ref), maxulp=1)
        else:
            assert got.numpy().tolist() == ref


def _ulps(got, bits, dtype):
    """How many half units in the last place apart each element is from the recorded bit pattern."""
    mine = got.numpy().view(np.uint16).astype(np.int32)
    theirs = np.array(bits, np.int32).reshape(mine.shape)
    signed = lambda b: np.where(b & 0x8000, -(b & 0x7FFF), b & 0x7FFF)      # noqa: E731 - ordered integers
    return np.abs(signed(mine) - signed(theirs))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("label", KWARGS)
def test_half_bits(label, dtype):
    """One rounding of the float32 result, as PyTorch's kernels: the same bits (transcendentals: within one
    unit, and most elements equal)."""
    want = FIXTURE["activations"][label][f"torch.{dtype}"]
    y, g = run(label, getattr(torch, dtype))
    assert y.dtype == getattr(torch, dtype) and g.dtype == getattr(torch, dtype)
    for got, bits in ((y, want["output"]), (g, want["grad"])):
        ulps = _ulps(got, bits, dtype)
        if label in TRANSCENDENTAL:
            assert ulps.max() <= 1 and (ulps == 0).mean() > 0.9
        else:
            assert ulps.max() == 0


def test_prelu_per_channel_and_shared():
    rec = FIXTURE["activations"]["PReLU(3)"]
    m = nn.PReLU(3)
    assert list(m.state_dict()) == rec["state_dict"] and m.weight.tolist() == [0.25] * 3
    m.load_state_dict({"weight": wave(SPECS["prelu.weight"])})
    x = wave(SPECS["x3"], requires_grad=True)
    y = m(x)
    y.backward(wave(SPECS["g3"]))
    assert y.detach().numpy().tolist() == rec["output"] and x.grad.numpy().tolist() == rec["grad"]
    np.testing.assert_allclose(m.weight.grad.numpy(), rec["weight_grad"], rtol=1e-6)
    shared = FIXTURE["activations"]["PReLU()"]
    x = wave(SPECS["x3"], requires_grad=True)
    y = nn.PReLU()(x)
    y.backward(wave(SPECS["g3"]))
    assert y.detach().numpy().tolist() == shared["output"] and x.grad.numpy().tolist() == shared["grad"]


def test_glu():
    rec = FIXTURE["activations"]["GLU(dim=1)"]
    x = wave(SPECS["x4"], requires_grad=True)
    y = nn.GLU(dim=1)(x)
    y.backward(wave(SPECS["g4"]))
    np.testing.assert_allclose(y.detach().numpy(), rec["output"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(x.grad.numpy(), rec["grad"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case, call", [("glu_odd", lambda: F.glu(wave(SPECS["x3"]), dim=1)),
                                        ("prelu_mismatch", lambda: F.prelu(wave(SPECS["x4"]), torch.ones(3)))])
def test_errors(case, call):
    err = FIXTURE["activations"][case]["error"]
    with pytest.raises(RuntimeError) as info:
        call()
    assert type(info.value).__name__ == err["type"] and str(info.value) == err["message"]


def test_module_reprs():
    modules = [nn.LeakyReLU(), nn.LeakyReLU(0.2, inplace=True), nn.ELU(), nn.ELU(alpha=0.5), nn.SELU(),
               nn.Softplus(), nn.Softplus(2.0, 3.0), nn.Mish(), nn.Hardswish(), nn.Hardsigmoid(), nn.PReLU(3),
               nn.GLU(), nn.Unflatten(1, (2, 2))]
    assert [repr(m) for m in modules] == FIXTURE["reprs"]


def test_modules_apply_their_functions():
    x = wave(SPECS["x"])
    for module, label in ((nn.LeakyReLU(0.2), "leaky_relu(negative_slope=0.2)"), (nn.ELU(0.5), "elu(alpha=0.5)"),
                          (nn.SELU(), "selu"), (nn.Softplus(2.0, 3.0), "softplus(beta=2.0, threshold=3.0)"),
                          (nn.Mish(), "mish"), (nn.Hardswish(), "hardswish"), (nn.Hardsigmoid(), "hardsigmoid")):
        assert module(x).numpy().tolist() == run(label, torch.float32)[0].numpy().tolist()
    assert nn.Unflatten(1, (2, 2))(torch.zeros(3, 4, 5)).shape == (3, 2, 2, 5)


def test_softplus_is_float32_under_cuda_autocast():
    x = wave(SPECS["x"]).to("cuda")
    with torch.autocast("cuda"):
        assert F.softplus(x.half()).dtype == torch.float32

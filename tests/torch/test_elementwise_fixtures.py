"""The elementwise family in float16 and bfloat16 against PyTorch 2.13's results (tools/record_elementwise.py):
widened to float32, computed, rounded once; div(rounding_mode="trunc") truncates the rounded quotient."""
import pathlib

import numpy as np
import pytest

import minifp.torch as torch

FIXTURE = np.load(pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "elementwise_half.npz")
UNARY = ("acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "tan", "log2", "log10", "exp2", "erf",
         "erfc", "erfinv", "sinc")
BINARY = ("atan2", "hypot", "logaddexp", "logaddexp2", "copysign", "fmod", "remainder", "floor_divide")
# float32 libraries differ by an ulp now and then (PyTorch's vectorised asin and sin, a fused multiply-add in
# addcmul): one value in 2000 lands on the other side of a half's rounding boundary
ONE_ULP = {("float16", "asin"), ("float16", "sinc"), ("float16", "addcmul")}


def _results(name):
    d = getattr(torch, name)
    x, y, z = (torch.tensor(FIXTURE[f"{name}/{k}"], dtype=d) for k in "xyz")
    out = {op: getattr(torch, op)(x) for op in UNARY}
    out.update({op: getattr(torch, op)(x, y) for op in BINARY})
    out.update(lerp=torch.lerp(x, y, z), addcmul=torch.addcmul(x, y, z, value=0.3),
               addcdiv=torch.addcdiv(x, y, z, value=0.3), round3=torch.round(x, decimals=3),
               div_trunc=torch.div(x, y, rounding_mode="trunc"))
    return out


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_results_equal_pytorchs(name):
    for op, t in _results(name).items():
        assert t.dtype == getattr(torch, name), op
        got, want = t.float().numpy(), FIXTURE[f"{name}/{op}"]
        differ = ~((got == want) | (np.isnan(got) & np.isnan(want)))
        if (name, op) in ONE_ULP:
            assert differ.sum() <= 1, op
            ulp = np.spacing(np.abs(want[differ]).astype(np.float16)).astype(np.float32)
            assert np.all(np.abs(got[differ] - want[differ]) <= ulp), op
        else:
            assert not differ.any(), (op, FIXTURE[f"{name}/x"][differ][:3], got[differ][:3], want[differ][:3])

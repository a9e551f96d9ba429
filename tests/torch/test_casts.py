"""Casts of float32 values into the low-precision dtypes against real PyTorch (tests/fixtures/pytorch/casts.json,
recorded by tools/record_pytorch.py casts): float8_e4m3fn saturates, as PyTorch 2.12 on does."""
import json
import pathlib

import numpy as np
import pytest

import minifp.torch as torch

FIXTURE = json.loads((pathlib.Path(__file__).parent.parent / "fixtures" / "pytorch" / "casts.json").read_text())
INPUTS = [float(v) for v in FIXTURE["inputs"]]


def _bits(t):
    data = t.numpy()
    return data.view(f"u{data.itemsize}").astype(np.int64).tolist()


@pytest.mark.parametrize("how", ["to", "tensor"])
@pytest.mark.parametrize("name", sorted(FIXTURE["bits"]))
def test_casts_give_pytorchs_bits(name, how):
    dtype = getattr(torch, name.split(".")[1])
    got = torch.tensor(INPUTS).to(dtype) if how == "to" else torch.tensor(INPUTS, dtype=dtype)
    want = FIXTURE["bits"][name][how]
    isnan = lambda codes: np.isnan(np.array(codes, np.uint16 if dtype.itemsize == 2 else np.uint8)
                                   .view(dtype.numpy).astype(np.float32))
    assert np.array_equal(isnan(_bits(got)), isnan(want))      # NaN is NaN: PyTorch's payloads vary by path
    keep = ~isnan(want)
    assert np.array_equal(np.array(_bits(got))[keep], np.array(want)[keep])


def test_a_saturated_cast_passes_its_gradient_through():
    w = torch.tensor([1000.0, 2.0], requires_grad=True)
    (w.to(torch.float8_e4m3fn).float() * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]

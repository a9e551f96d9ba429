"""Views under in-place changes against real PyTorch 2.13: tests/fixtures/pytorch/views.json, recorded by
tools/record_torch_views.py, whose programs run here with minifp.torch (x[0].fill_(1), x.t()[0].zero_(),
p.data[:, 0].mul_(2), nn.init on a slice, the NumPy bridge of the Tensors tutorial, clone against to, ...): the same
values and dtypes, or the same error."""
import json
import sys
from pathlib import Path

import pytest

import minifp.torch as torch
from minifp.torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_views import run  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "views.json").read_text())["cases"]


@pytest.mark.parametrize("name", sorted(FIX))
def test_in_place_changes_to_views_reach_their_tensor(name):
    case = FIX[name]
    got = run(torch, nn, case["code"])
    assert got == {k: v for k, v in case.items() if k != "code"}


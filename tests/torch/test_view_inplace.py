"""In-place changes to views under autograd against real PyTorch 2.13: tests/fixtures/pytorch/view_inplace.json,
recorded by tools/record_torch_view_inplace.py, whose programs run here with minifp.torch (y = x[:, :2]; y.mul_(2)
with x a result that requires grad; x[0].add_(w) with w requiring grad; chains of views, writes in a row, a base
written under a live view, fill_/zero_/copy_ nodes, and PyTorch's refusals): the same values and gradients, bit for
bit (each is one correctly rounded float32 or half-precision op, as in PyTorch), the same grad_fn names one level
down (CopySlices, AsStridedBackward0), or the same error. Not recorded: the grad_fn of a live view that shows none
of the elements written (PyTorch remakes it as AsStridedBackward0, minifp keeps its node: docs/ARCHITECTURE.md)."""
import sys
import json
from pathlib import Path

import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_view_inplace import run  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "view_inplace.json").read_text())
CASES = FIX["cases"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_view_written_in_place_under_autograd(name):
    case = CASES[name]
    got = run(torch, F, case["code"])
    assert got == {k: v for k, v in case.items() if k != "code"}


def test_the_refusals_change_nothing():
    # PyTorch refuses before anything changes: the base keeps its values and its node
    x = torch.arange(6.0).reshape(2, 3).requires_grad_() * 1
    a, b = x.split(1)
    with pytest.raises(RuntimeError, match="Output 1 of Split is a view"):
        b.mul_(2)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and x.grad_fn.name() == "MulBackward0"
    assert b.grad_fn.name() == "SliceBackward0"


def test_a_view_that_dies_still_reaches_its_base():
    # x[0] lives only for the one op: the base still takes the change and its gradient
    x0 = torch.ones(2, 2, requires_grad=True)
    x = x0 * 1
    x[0].mul_(3)
    x.sum().backward()
    assert x.tolist() == [[3.0, 3.0], [1.0, 1.0]] and x0.grad.tolist() == [[3.0, 3.0], [1.0, 1.0]]

"""t.grad_fn as PyTorch 2.13 shows it (tests/fixtures/pytorch/grad_fns.json, tools/record_torch_grad_fns.py)."""
import gc
import json
import sys
from pathlib import Path

import pytest

import minifp.torch as torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_grad_fns import grad_fns  # noqa: E402

FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "pytorch" / "grad_fns.json").read_text())["grad_fns"]
# Where minifp's graph is not PyTorch's: one op of the engine for two of PyTorch's nodes, or one engine op that
# PyTorch names after the function called
DIFFERENT = {
    "x.permute(1, 0)": "a 2-D permute is the engine's transpose, shown as x.t()'s TBackward0",
    "x.transpose(0, 1)": "likewise: TBackward0",
    "x.unsqueeze(0)": "unsqueeze is the engine's reshape: ViewBackward0",
}
MINIFP = grad_fns(torch)


@pytest.mark.parametrize("case", sorted(set(FIX) - set(DIFFERENT)))
def test_grad_fn_is_pytorchs(case):
    assert MINIFP[case] == FIX[case]


@pytest.mark.parametrize("case", sorted(DIFFERENT))
def test_listed_differences_are_still_different(case):
    assert MINIFP[case] != FIX[case]        # (one that starts to match leaves this list)


def test_nodes_are_one_per_tensor_and_leaves_are_not_kept_alive():
    x = torch.ones(2, requires_grad=True)
    y = (x * 2).sum()
    assert y.grad_fn is y.grad_fn and repr(y.grad_fn).startswith("<SumBackward0 object at 0x")
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    assert acc.variable is x and acc is (x + 1).grad_fn.next_functions[0][0]
    assert repr(acc).startswith("<AccumulateGrad object at") and x.grad_fn is None
    y.add_(1)       # an in-place op makes y anew
    assert y.grad_fn.name() == "AddBackward0"
    del x, y
    gc.collect()
    assert acc.variable is None

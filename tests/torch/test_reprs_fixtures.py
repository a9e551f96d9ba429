"""minifp.torch prints tensors as PyTorch 2.13 does (tests/fixtures/pytorch/reprs.json, tools/record_torch_reprs.py)."""
import json
import sys
from pathlib import Path

import pytest

import minifp.torch as torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_reprs import reprs  # noqa: E402

FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "pytorch" / "reprs.json").read_text())["reprs"]
MINIFP = reprs(torch)


@pytest.mark.parametrize("case", sorted(FIX))
def test_prints_what_pytorch_prints(case):
    assert MINIFP[case] == FIX[case]

"""minifp.torch raises what PyTorch raised for the snippets of tools/record_torch_errors.py (the exception's type
and the first line of its message, recorded in tests/fixtures/pytorch/errors_more.json), and runs those PyTorch
runs; and nothing changed where a refused in-place op was asked."""
import json
import sys
import warnings
from pathlib import Path

import pytest

import minifp.torch as torch
from minifp import _speed
import minifp.torch.nn as nn
import minifp.torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_torch_errors  # noqa: E402

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "errors_more.json").read_text())


@pytest.fixture(scope="module")
def got():
    threads, blas = _speed.THREADS, _speed.blas_threads()      # (the thread cases are refused: nothing changes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = record_torch_errors.run(torch, nn, F)
    assert (_speed.THREADS, _speed.blas_threads()) == (threads, blas)
    return out


@pytest.mark.parametrize("case", list(RECORDED["cases"]))
def test_raises_what_pytorch_raises(case, got):
    assert got[case] == RECORDED["cases"][case]


def test_every_case_is_recorded():
    assert list(RECORDED["cases"]) == record_torch_errors.CASES


def test_a_refused_in_place_op_changes_nothing():
    y = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        y += torch.ones(2, 3)
    assert y.shape == (3,) and y.tolist() == [1.0, 2.0, 3.0]

"""Lesson 09: the monitor names where float16 overflows in a tiny transformer, and the fixed block runs clean."""
import numpy as np
import pytest

import minifp.torch as torch
from minifp import _transformer as T
from minifp.numerics import watch

pytestmark = pytest.mark.filterwarnings("ignore:minifp. no GPU here")

# case -> (layer, op) of the first overflow of the naive block; all in the forward pass
FIRST = {"logits": ("attn.scores", "matmul"), "softmax": ("attn.softmax", "exp"), "variance": ("ln1", "mul")}
# every layer where something overflowed (after the first, the rest is inf and NaN, which do not count again)
OVERFLOWING = {"logits": {"attn.scores"}, "softmax": {"attn.softmax"}, "variance": {"ln1", "ln2"}}


@pytest.mark.parametrize("case", list(T.CASES))
def test_the_monitor_names_the_first_overflow(case):
    report, out = T.run_case(case, T.NAIVE)
    event = report.first_overflow
    assert (event.layer, event.op, event.direction) == (*FIRST[case], "forward") and event.count > 0
    assert set(report.layers("overflow")) == OVERFLOWING[case]


@pytest.mark.parametrize("case", list(T.CASES))
def test_the_fixed_block_is_clean(case):
    report, out = T.run_case(case, T.FIXED)
    assert report.total("overflow") == 0 and report.total("nan") == 0 and report.first_overflow is None
    assert bool(torch.isfinite(out).all())


def test_the_cases_overflow_for_the_reason_they_name():
    # (a) the unscaled logit of a token with itself passes 65504, the scaled one does not
    model, x = T.model_for("logits", T.NAIVE)
    with torch.no_grad():
        q = model.attn.q(model.ln1(model.embed(x))).view(4, 16, 2, 32).float32()
    self_logits = (q.astype(np.float64) ** 2).sum(-1)
    assert self_logits.max() > 65504 > self_logits.max() / np.sqrt(32)
    # (c) the naive layer norm zeroes the tokens whose squares overflowed: silent, no inf in its output
    model, x = T.model_for("variance", T.NAIVE)
    with torch.autocast("cuda", dtype=torch.float16), torch.no_grad():
        h = model.ln1(model.embed(x))
    assert bool(torch.isfinite(h).all()) and int((h.float().abs().sum(-1) == 0).sum()) > 0


def test_softmax_overflows_only_in_pure_float16():
    # autocast runs exp in float32 (PyTorch's list): the same logits of ~40 stay finite there
    model, x = T.model_for("softmax", T.NAIVE)
    model, x = model.float(), x.float()
    with watch(model) as report, torch.autocast("cuda", dtype=torch.float16), torch.no_grad():
        model(x)
    assert report.total("overflow") == 0


def test_bad_case():
    with pytest.raises(ValueError, match="case must be one of logits, softmax, variance, got 'nope'"):
        T.model_for("nope", T.NAIVE)

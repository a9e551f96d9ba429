"""CosineAnnealingWarmRestarts, SequentialLR, ChainedScheduler, PolynomialLR and CyclicLR against real PyTorch 2.13
(tests/fixtures/pytorch/schedulers_more.json): each run's key is its call's source, evaluated here the same way."""
import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp
from minifp.torch import optim

S = optim.lr_scheduler
FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "pytorch" / "schedulers_more.json").read_text())
NAMES = {n: getattr(S, n) for n in S.__all__}


def optimizer(kind):
    p = minifp.tensor(np.zeros(1, np.float32), requires_grad=True)
    return {"sgd": lambda: optim.SGD([p], lr=0.1), "sgd_momentum": lambda: optim.SGD([p], lr=0.1, momentum=0.9),
            "adam": lambda: optim.Adam([p], lr=0.1)}[kind]()


def make(source, o):
    return eval(source, dict(NAMES), {"o": o, "S": S})      # noqa: S307 - the fixture's keys are our calls


@pytest.mark.parametrize("source", FIX["runs"])
def test_learning_rates_identical_to_pytorch(source):
    ref = FIX["runs"][source]
    opt = optimizer(ref["optimizer"])
    rec = {"lr": [], "momentum": [], "betas": [], "last_lr": []}

    def snap(sched):
        g = opt.param_groups[0]
        rec["lr"].append(g["lr"])
        if ref["optimizer"] == "sgd_momentum":
            rec["momentum"].append(g["momentum"])
        if "betas" in g:
            rec["betas"].append(list(g["betas"]))
        rec["last_lr"].append(sched.get_last_lr()[0])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = make(source, opt)
        snap(sched)
        for _ in range(len(ref["lr"]) - 1):
            opt.step()
            sched.step()
            snap(sched)
    for key, got in rec.items():
        assert got == ref.get(key, []), key         # exact: the same double-precision operations in order
    assert [str(w.message) for w in caught] == [w["message"] for w in ref["warnings"]]


@pytest.mark.parametrize("source", FIX["errors"])
def test_errors_match_pytorch(source):
    ref = FIX["errors"][source]["error"]
    kind = "sgd_momentum" if "CyclicLR" in source and "(o, 0.01, 0.1)" not in source else "sgd"
    if ref is None:
        make(source, optimizer(kind))
        return
    with pytest.raises(Exception) as info:
        make(source, optimizer(kind))
    assert type(info.value).__name__ == ref["type"] and str(info.value) == ref["message"]


@pytest.mark.parametrize("source", FIX["state_dict_keys"])
def test_state_dict_keys_match_pytorch(source):
    o = optimizer("sgd_momentum")
    sched = make(source, o)
    o.step()
    sched.step()
    sd = sched.state_dict()
    assert sorted(sd) == FIX["state_dict_keys"][source]["keys"]
    assert sd["last_epoch"] == FIX["state_dict_keys"][source]["last_epoch"]
    pickle.dumps(sd)


@pytest.mark.parametrize("source", list(FIX["state_dict_keys"]))
def test_load_state_dict_resumes_the_schedule(source):
    o = optimizer("sgd_momentum")
    sched = make(source, o)
    for _ in range(3):
        o.step()
        sched.step()
    saved = pickle.loads(pickle.dumps(sched.state_dict()))
    want = []
    for _ in range(5):
        o.step()
        sched.step()
        want.append(o.param_groups[0]["lr"])
    o2 = optimizer("sgd_momentum")
    other = make(source, o2)
    other.load_state_dict(saved)
    o2.param_groups[0]["lr"] = saved["_last_lr"][0]
    got = []
    for _ in range(5):
        o2.step()
        other.step()
        got.append(o2.param_groups[0]["lr"])
    assert got == want


def test_warm_restarts_takes_a_fractional_epoch():
    o = optimizer("sgd")
    sched = S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2)
    sched.step(5.5)             # in the second cycle (length 8), 1.5 epochs in
    assert sched.T_i == 8 and sched.T_cur == 1.5 and sched.last_epoch == 5
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        sched.step(-1)

"""Adadelta, Adamax, NAdam and RAdam against real PyTorch 2.13 (tests/fixtures/pytorch/optimizers_more.json,
recorded by tools/record_pytorch.py the way optimizers.json is): trajectories, state_dicts, defaults, errors."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp
from minifp import engine
from minifp.torch import optim

FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "pytorch" / "optimizers_more.json").read_text())
RUNS = [(cls, cfg) for cls, cfgs in FIX["runs"].items() for cfg in cfgs]


def wave(spec):
    n = int(np.prod(spec["shape"]))
    v = spec["offset"] + spec["scale"] * np.sin(spec["freq"] * np.arange(n, dtype=np.float64) + spec["k"])
    return minifp.tensor(v.astype(np.float32).reshape(spec["shape"]), requires_grad=True)


def grad(t, k, shape):
    n = int(np.prod(shape))
    v = FIX["gscale"][k] * np.cos(0.5 * t + 0.3 * np.arange(n, dtype=np.float64) + k)
    return minifp.tensor(v.astype(np.float32).reshape(shape))


def kwargs(run):
    kw = dict(run["kwargs"])
    if "betas" in kw:
        kw["betas"] = tuple(kw["betas"])
    return kw


def trained(cls, cfg, steps=100):
    """(params, optimizer, max |difference| from PyTorch over the recorded steps)."""
    run = FIX["runs"][cls][cfg]
    params = [wave(s) for s in FIX["params"]]
    opt = getattr(optim, cls)(params, **kwargs(run))
    snaps = {s["step"]: s["params"] for s in run["after_steps"]}
    worst = 0.0
    for t in range(1, steps + 1):
        for k, p in enumerate(params):
            p.grad = grad(t, k, p.shape)
        opt.step()
        for p, ref in zip(params, snaps.get(t, ())):
            worst = max(worst, float(np.abs(p.float32() - np.asarray(ref, np.float32)).max()))
    return params, opt, worst


@pytest.mark.parametrize("cls, cfg", RUNS)
def test_trajectory_matches_pytorch_within_1e_6(cls, cfg):
    _, _, worst = trained(cls, cfg)
    # PyTorch's CPU kernels fuse x + a*y into one FMA where the CPU has one; minifp rounds twice.
    assert worst <= 1e-6


@pytest.mark.parametrize("cls, cfg", RUNS)
def test_state_dict_matches_pytorch(cls, cfg):
    _, opt, _ = trained(cls, cfg)
    ref = FIX["runs"][cls][cfg]["state_dict"]
    sd = opt.state_dict()
    assert list(sd) == ref["top_keys"] and list(sd["state"]) == [int(i) for i in ref["state"]]
    for i, slots in ref["state"].items():
        mine = sd["state"][int(i)]
        assert list(mine) == list(slots)
        for key, info in slots.items():
            assert list(mine[key].shape) == info["shape"] and mine[key].fmt == minifp.float32
            np.testing.assert_allclose(mine[key].float32(), np.asarray(info["values"], np.float32), rtol=1e-5,
                                       atol=1e-6 if key != "step" else 0)
    for group, info in zip(sd["param_groups"], ref["param_groups"]):
        assert {k: list(v) if isinstance(v, tuple) else v for k, v in group.items()} == info["values"]
        assert {k: type(v).__name__ for k, v in group.items()} == info["types"] and list(group) == list(info["types"])


@pytest.mark.parametrize("cls", FIX["bare_construction_defaults"])
def test_defaults_match_pytorch(cls):
    opt = getattr(optim, cls)([minifp.tensor(np.zeros(2, np.float32), requires_grad=True)])
    got = {k: list(v) if isinstance(v, tuple) else v for k, v in opt.defaults.items()}
    ref = FIX["bare_construction_defaults"][cls]
    assert got == ref and list(got) == list(ref)
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in ref.items()}


def p():
    return minifp.tensor(np.zeros(2, np.float32), requires_grad=True)


def misuse(cls, name):
    """Call what the fixture's error case `name` did."""
    c = getattr(optim, cls)
    q = p()
    cases = {
        "lr_-1": lambda: c([p()], lr=-1.0),
        "weight_decay_-1": lambda: c([p()], lr=0.1, weight_decay=-1.0),
        "empty_list": lambda: c([], lr=0.1),
        "bare_tensor": lambda: c(p(), lr=0.1),
        "set_of_params_top_level": lambda: c({p()}, lr=0.1),
        "set_of_params_in_group": lambda: c([{"params": {p()}}], lr=0.1),
        "python_float_param": lambda: c([1.0], lr=0.1),
        "non_leaf_param": lambda: c([p() * 2], lr=0.1),
        "param_in_two_groups": lambda: c([{"params": [q]}, {"params": [q]}], lr=0.1),
        "duplicate_param_in_group": lambda: c([q, q], lr=0.1),
        "eps_-1": lambda: c([p()], lr=0.1, eps=-1.0),
        "betas_1.0_0.9": lambda: c([p()], lr=0.1, betas=(1.0, 0.9)),
        "betas_0.9_1.0": lambda: c([p()], lr=0.1, betas=(0.9, 1.0)),
        "rho_1.5": lambda: c([p()], lr=0.1, rho=1.5),
        "momentum_decay_-1": lambda: c([p()], lr=0.1, momentum_decay=-1.0),
    }
    return cases[name]


ERRORS = [(cls, name) for cls, cases in FIX["errors"].items() for name in cases]


@pytest.mark.parametrize("cls, name", ERRORS)
def test_argument_errors_and_warnings_match_pytorch(cls, name):
    ref = FIX["errors"][cls][name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if ref["error"] is None:
            misuse(cls, name)()
        else:
            with pytest.raises(Exception) as info:
                misuse(cls, name)()
            assert type(info.value).__name__ == ref["error"]["type"]
            assert str(info.value) == ref["error"]["message"]
    assert [(w.category.__name__, str(w.message)) for w in caught] == \
        [(w["category"], w["message"]) for w in ref["warnings"]]


@pytest.mark.parametrize("cls", ["NAdam", "RAdam", "Adamax", "Adadelta"])
def test_load_state_dict_round_trip_continues_identically(cls):
    params, opt, _ = trained(cls, "combined" if cls != "NAdam" else "decoupled", steps=7)
    fresh = [minifp.tensor(q.float32(), requires_grad=True) for q in params]
    other = getattr(optim, cls)(fresh, lr=0.5)
    other.load_state_dict(opt.state_dict())
    for q in params + fresh:
        q.grad = minifp.tensor(np.full(q.shape, 0.3, np.float32))
    opt.step()
    other.step()
    for a, b in zip(params, fresh):
        assert a.float32().tolist() == b.float32().tolist()


def test_float16_parameter_keeps_float16_moments_and_float32_counts():
    w = minifp.tensor(np.ones(2, np.float32), dtype="float16", requires_grad=True)
    opt = optim.NAdam([w], lr=1e-4)
    w.grad = minifp.tensor(np.ones(2, np.float32), dtype="float16")     # a gradient of the weight's dtype, as PyTorch asks
    opt.step()
    assert w.fmt == minifp.float16 and opt.state[w]["exp_avg"].fmt == minifp.float16
    assert opt.state[w]["mu_product"].fmt == opt.state[w]["step"].fmt == minifp.float32
    assert opt.state[w]["mu_product"].shape == () and w.float32().tolist() == [1.0, 1.0]   # 1 - 1e-4 is 1 in fp16


def test_the_face_runs_the_engines_rules():
    assert optim.NAdam._rule is engine.nadam_update and optim.RAdam._rule is engine.radam_update
    assert optim.Adamax._rule is engine.adamax_update and optim.Adadelta._rule is engine.adadelta_update


@pytest.mark.parametrize("cls", ["Adadelta", "Adamax", "NAdam", "RAdam"])
def test_update_rounding_applies_to_the_new_optimizers(cls):
    """A bfloat16 weight: Kahan compensation keeps the updates that round-to-nearest swamps, in state_dict too."""
    runs = {}
    for rounding in ("nearest", "kahan"):
        w = minifp.tensor(np.full(4, 1.0, np.float32), dtype="bfloat16", requires_grad=True)
        opt = getattr(optim, cls)([w], lr=1e-3 if cls != "Adadelta" else 0.1, update_rounding=rounding)
        for _ in range(50):
            w.grad = minifp.tensor(np.full(4, 1.0, np.float32), dtype="bfloat16")
            opt.step()
        runs[rounding] = (w.float32()[0], opt.state_dict()["state"][0])
    assert runs["nearest"][0] == 1.0 and runs["kahan"][0] < 1.0         # each step is below half a bfloat16 ulp
    assert engine.KAHAN in runs["kahan"][1] and engine.KAHAN not in runs["nearest"][1]

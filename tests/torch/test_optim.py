"""minifp.torch.optim against real PyTorch 2.13 (tests/fixtures/pytorch/optimizers.json) and its semantics."""
import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp
from minifp import _optim as engine
from minifp.torch import optim

FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "pytorch" / "optimizers.json").read_text())
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


def trained(cls, cfg):
    """(params, optimizer, max |difference| from PyTorch over the recorded steps)."""
    run = FIX["runs"][cls][cfg]
    params = [wave(s) for s in FIX["params"]]
    opt = getattr(optim, cls)(params, **kwargs(run))
    snaps = {s["step"]: s["params"] for s in run["after_steps"]}
    worst = 0.0
    for t in range(1, 101):
        for k, p in enumerate(params):
            p.grad = grad(t, k, p.shape)
        opt.step()
        for p, ref in zip(params, snaps.get(t, ())):
            worst = max(worst, float(np.abs(p.float32() - np.asarray(ref, np.float32)).max()))
    return params, opt, worst


@pytest.mark.parametrize("cls, cfg", RUNS)
def test_trajectory_matches_pytorch_within_1e_6(cls, cfg):
    _, _, worst = trained(cls, cfg)
    # Bit-exact is out of reach: PyTorch's CPU kernels fuse x + a*y into one FMA; minifp rounds twice.
    assert worst <= 1e-6


@pytest.mark.parametrize("cls, cfg", RUNS)
def test_state_dict_structure_matches_pytorch(cls, cfg):
    _, opt, _ = trained(cls, cfg)
    ref = FIX["runs"][cls][cfg]["state_dict"]
    sd = opt.state_dict()
    assert list(sd) == ref["top_keys"]
    assert list(sd["state"]) == [int(i) for i in ref["state"]]
    for i, slots in ref["state"].items():
        mine = sd["state"][int(i)]
        assert list(mine) == list(slots)
        for key, info in slots.items():
            assert list(mine[key].shape) == info["shape"] and mine[key].fmt == minifp.float32
            np.testing.assert_allclose(mine[key].float32(), np.asarray(info["values"], np.float32), rtol=1e-5,
                                       atol=1e-6 if key != "step" else 0)
    for group, info in zip(sd["param_groups"], ref["param_groups"]):
        values = {k: list(v) if isinstance(v, tuple) else v for k, v in group.items()}
        assert values == info["values"]
        assert list(group) == list(info["types"])
        assert {k: type(v).__name__ for k, v in group.items()} == info["types"]


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
        "momentum_-1": lambda: c([p()], lr=0.1, momentum=-1.0),
        "eps_-1": lambda: c([p()], lr=0.1, eps=-1.0),
        "betas_1.0_0.9": lambda: c([p()], lr=0.1, betas=(1.0, 0.9)),
        "betas_0.9_1.0": lambda: c([p()], lr=0.1, betas=(0.9, 1.0)),
        "nesterov_momentum_0": lambda: c([p()], lr=0.1, nesterov=True),
        "nesterov_dampening_0.1": lambda: c([p()], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
        "alpha_-1": lambda: c([p()], lr=0.1, alpha=-1.0),
        "lr_decay_-1": lambda: c([p()], lr=0.1, lr_decay=-1.0),
        "initial_accumulator_value_-1": lambda: c([p()], lr=0.1, initial_accumulator_value=-1.0),
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


def test_non_number_hyperparameter_names_the_argument():
    with pytest.raises(TypeError, match="lr must be a real number, got '0.1'"):
        optim.SGD([p()], lr="0.1")


def test_fused_checks_as_pytorch():
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        optim.Adam([p()], fused=True, differentiable=True)
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together."):
        optim.SGD([p()], fused=True, foreach=True)


def test_group_hyperparameters_are_read_at_each_step():
    a, b = p(), p()
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0 and opt.param_groups[1]["params"] == [b]
    for t in (a, b):
        t.grad = minifp.tensor(np.ones(2, np.float32))
    opt.param_groups[0]["lr"] = 0.25
    opt.step()
    assert a.float32().tolist() == [-0.25, -0.25] and b.float32().tolist() == [-0.5, -0.5]


def test_add_param_group_and_its_checks():
    a, b = p(), p()
    opt = optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    assert len(opt.param_groups) == 2
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([a])


def test_required_hyperparameter_of_a_custom_optimizer():
    class Custom(optim.Optimizer):
        def __init__(self, params, lr=optim.required):
            super().__init__(params, {"lr": lr})

    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        Custom([p()])
    assert Custom([p()], lr=0.1).param_groups[0]["lr"] == 0.1


def test_state_is_keyed_by_parameter_and_empty_before_a_step():
    a, b = p(), p()
    opt = optim.Adam([a, b])
    assert len(opt.state) == 0
    a.grad = minifp.tensor(np.ones(2, np.float32))
    opt.step()                                     # b has no gradient: no state, no change
    assert list(opt.state) == [a] and list(opt.state[a]) == ["step", "exp_avg", "exp_avg_sq"]
    assert opt.state[a]["step"].item() == 1.0 and b.float32().tolist() == [0.0, 0.0]
    assert optim.SGD([a]).state_dict()["state"] == {}


def test_adagrad_state_exists_before_the_first_step():
    a = p()
    opt = optim.Adagrad([a], initial_accumulator_value=0.5)
    assert list(opt.state_dict()["state"]) == [0]
    assert opt.state[a]["sum"].float32().tolist() == [0.5, 0.5] and opt.state[a]["step"].item() == 0.0


def test_zero_grad():
    a = p()
    opt = optim.SGD([a])
    a.grad = minifp.tensor(np.ones(2, np.float32))
    g = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is g and g.float32().tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None


def test_closure_loss_is_returned():
    a = p()
    opt = optim.SGD([a], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = minifp.sum(a * a + a)
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0
    assert a.float32().tolist() == [np.float32(-0.1)] * 2


def test_float16_parameter_keeps_float16_state_as_pytorch():
    """(tests/torch/test_optim_half.py checks every optimizer's bits against PyTorch's.)"""
    w = minifp.tensor(np.ones(2, np.float32), dtype="float16", requires_grad=True)
    opt = optim.SGD([w], lr=1e-4, momentum=0.9)
    w.grad = minifp.tensor(np.ones(2, np.float32), dtype="float16")     # a gradient of the weight's dtype, as PyTorch asks
    opt.step()
    assert w.fmt == minifp.float16 and opt.state[w]["momentum_buffer"].fmt == minifp.float16
    assert w.float32().tolist() == [1.0, 1.0]      # 1 - 1e-4 rounds back to 1 in float16 (spacing 2**-10 near 1)
    w.grad = minifp.tensor(np.full(2, 1e-4, np.float32), dtype="float16")
    opt.step()          # the buffer 0.9 + 1e-4 rounds back to 0.9 in float16: float32 state would hold 0.9001
    assert opt.state[w]["momentum_buffer"].float32().tolist() == [np.float16(0.9)] * 2


def test_load_state_dict_round_trip_continues_identically():
    params, opt, _ = trained("Adam", "amsgrad")
    sd = opt.state_dict()
    fresh = [minifp.tensor(q.float32(), requires_grad=True) for q in params]
    other = optim.Adam(fresh, lr=0.5)
    other.load_state_dict(sd)
    assert other.param_groups[0]["lr"] == 0.01 and other.param_groups[0]["amsgrad"] is True
    assert other.param_groups[0]["params"] == fresh
    for q in params + fresh:
        q.grad = minifp.tensor(np.full(q.shape, 0.3, np.float32))
    opt.step()
    other.step()
    for a, b in zip(params, fresh):
        assert a.float32().tolist() == b.float32().tolist()


def test_load_state_dict_checks_before_changing_anything():
    a = p()
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    a.grad = minifp.tensor(np.ones(2, np.float32))
    opt.step()
    before = opt.state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [{**before["param_groups"][0], "params": [0, 1]}]})
    bad = {"state": {0: {"momentum_buffer": np.zeros(3, np.float32)}},
           "param_groups": [{**before["param_groups"][0], "lr": 7.0}]}
    with pytest.raises(ValueError, match=r"state 0\['momentum_buffer'\] has shape \(3,\)"):
        opt.load_state_dict(bad)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.state[a]["momentum_buffer"].float32().tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="must be a dict with keys 'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})


def test_load_state_dict_takes_numpy_arrays_as_float32_copies():
    a = p()
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    buf = np.array([2.0, 3.0])
    opt.load_state_dict({"state": {0: {"momentum_buffer": buf}}, "param_groups": [opt.state_dict()["param_groups"][0]]})
    t = opt.state[a]["momentum_buffer"]
    assert t.fmt == minifp.float32 and t.float32().tolist() == [2.0, 3.0]
    buf[0] = 9.0
    assert t.float32().tolist() == [2.0, 3.0]


def test_repr_lists_groups_like_pytorch():
    text = repr(optim.SGD([p()], lr=0.1))
    assert text.startswith("SGD (\nParameter Group 0\n    dampening: 0\n") and text.endswith("\n)")


def test_the_engine_and_the_face_share_one_rule():
    """The face's optimizers run the engine's update rules (minifp/_optim.py), the ones the Keras face's build on."""
    assert optim.SGD._rule is engine.sgd_update and optim.Adam._rule is engine.adam_update


def test_optimizer_pickles():
    a = p()
    opt = optim.Adam([a])
    a.grad = minifp.tensor(np.ones(2, np.float32))
    opt.step()
    assert pickle.loads(pickle.dumps(opt.state_dict()))["state"][0]["step"].item() == 1.0


def test_named_parameters_as_pytorch_2_takes_them():
    from minifp.torch import nn
    m = nn.Linear(3, 2)
    opt = optim.SGD(m.named_parameters(), lr=0.1, momentum=0.9)
    group = opt.param_groups[0]
    assert group["params"] == [m.weight, m.bias] and group["param_names"] == ["weight", "bias"]
    assert list(group)[:2] == ["params", "param_names"]       # PyTorch's key order: then the defaults
    m(minifp.torch.ones(1, 3)).sum().backward()
    opt.step()
    saved = opt.state_dict()
    assert saved["param_groups"][0]["param_names"] == ["weight", "bias"] and saved["param_groups"][0]["params"] == [0, 1]
    # A saved group without names keeps the optimizer's; one with names brings its own
    unnamed = {"state": saved["state"], "param_groups": [{k: v for k, v in saved["param_groups"][0].items()
                                                          if k != "param_names"}]}
    opt.load_state_dict(unnamed)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    renamed = {**saved, "param_groups": [{**saved["param_groups"][0], "param_names": ["w", "b"]}]}
    opt.load_state_dict(renamed)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    g = optim.Adam([{"params": m.named_parameters(), "lr": 0.2}])
    assert g.param_groups[0]["param_names"] == ["weight", "bias"] and g.param_groups[0]["lr"] == 0.2


def test_named_parameters_all_or_none_with_pytorchs_errors():
    a, b = p(), p()
    with pytest.raises(ValueError, match="all optimizer params should be with/without names. Some param names are "
                                         "missing"):
        optim.SGD([("a", a), b], lr=0.1)
    opt = optim.SGD([("a", a)], lr=0.1)
    with pytest.raises(ValueError, match="all optimizer param groups should be with/without names. cannot add param "
                                         "group without names to the optimizer"):
        opt.add_param_group({"params": [b]})
    opt = optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="cannot add param group with names to the optimizer"):
        opt.add_param_group({"params": [("b", b)]})
    assert len(opt.param_groups) == 1

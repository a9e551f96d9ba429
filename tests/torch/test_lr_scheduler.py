"""minifp.torch.optim.lr_scheduler against real PyTorch 2.13 (tests/fixtures/pytorch/schedulers.json)."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp
from minifp.torch import optim
from minifp.torch.amp.grad_scaler import GradScaler

S = optim.lr_scheduler
FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "pytorch" / "schedulers.json").read_text())

MAKERS = {
    "StepLR(step_size=5, gamma=0.5)": lambda o: S.StepLR(o, step_size=5, gamma=0.5),
    "MultiStepLR(milestones=[3, 10], gamma=0.1)": lambda o: S.MultiStepLR(o, [3, 10], 0.1),
    "ExponentialLR(gamma=0.9)": lambda o: S.ExponentialLR(o, 0.9),
    "CosineAnnealingLR(T_max=10, eta_min=0.001)": lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "LambdaLR(lambda e: 0.95**e)": lambda o: S.LambdaLR(o, lambda e: 0.95 ** e),
    "LinearLR(start_factor=0.25, total_iters=4)": lambda o: S.LinearLR(o, start_factor=0.25, total_iters=4),
    "ConstantLR(factor=0.5, total_iters=4)": lambda o: S.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR(total_iters=10, power=2.0)": lambda o: S.PolynomialLR(o, total_iters=10, power=2.0),
    "OneCycleLR(max_lr=1.0, total_steps=30), SGD momentum=0.9": lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=30),
    "OneCycleLR(max_lr=1.0, total_steps=30), Adam": lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=30),
    "OneCycleLR(max_lr=1.0, total_steps=30, anneal_strategy='linear', three_phase=True), SGD momentum=0.9":
        lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=30, anneal_strategy="linear", three_phase=True),
    "ReduceLROnPlateau(mode='min', factor=0.5, patience=2)":
        lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=2),
    ("ReduceLROnPlateau(mode='max', factor=0.3, patience=1, threshold=0.05, threshold_mode='abs', cooldown=2, "
     "min_lr=0.01)"):
        lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=1, threshold=0.05, threshold_mode="abs",
                                      cooldown=2, min_lr=0.01),
    "CosineAnnealingWarmRestarts(T_0=7, T_mult=2, eta_min=0.001)":
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=2, eta_min=0.001),
    "SequentialLR([LinearLR(start_factor=0.1, total_iters=5), CosineAnnealingLR(T_max=25)], milestones=[5])":
        lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=5), S.CosineAnnealingLR(o, T_max=25)],
                                 milestones=[5]),
}
NOT_BUILT = set()


def param():
    return minifp.tensor(np.zeros(1, np.float32), requires_grad=True)


def optimizer(kind, p=None):
    p = param() if p is None else p
    return {"sgd": lambda: optim.SGD([p], lr=0.1), "sgd_momentum": lambda: optim.SGD([p], lr=0.1, momentum=0.9),
            "adam": lambda: optim.Adam([p], lr=0.1)}[kind]()


def test_every_recorded_run_is_covered():
    assert set(FIX["runs"]) == set(MAKERS) | NOT_BUILT


@pytest.mark.parametrize("name", MAKERS)
def test_learning_rates_identical_to_pytorch(name):
    ref = FIX["runs"][name]
    opt = optimizer(ref["optimizer"])
    metrics = None
    if "Plateau" in name:
        metrics = FIX["metrics"]["min" if "'min'" in name else "max"]
    rec = {"lr": [], "momentum": [], "betas": [], "last_lr": [], "extra": []}

    def snap(sched):
        g = opt.param_groups[0]
        rec["lr"].append(g["lr"])
        if ref["optimizer"] == "sgd_momentum":
            rec["momentum"].append(g["momentum"])
        if "betas" in g:
            rec["betas"].append(list(g["betas"]))
        rec["last_lr"].append(sched.get_last_lr()[0])
        if metrics is not None:
            rec["extra"].append({"best": sched.best, "num_bad_epochs": sched.num_bad_epochs,
                                 "cooldown_counter": sched.cooldown_counter, "last_epoch": sched.last_epoch})

    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = MAKERS[name](opt)
        snap(sched)
        for i in range(len(ref["lr"]) - 1 if ref["error"] is None else ref["error"]["at_step"]):
            opt.step()
            try:
                sched.step(metrics[i]) if metrics is not None else sched.step()
            except ValueError as e:
                error = {"at_step": i + 1, "type": type(e).__name__, "message": str(e)}
                break
            snap(sched)
    assert error == ref["error"]
    for key in rec:
        want = ref.get(key, [])
        if key == "extra":
            want = [{**x, "best": float(x["best"]) if isinstance(x["best"], str) else x["best"]} for x in want]
        assert rec[key] == want, key            # exact: the same double-precision operations in the same order
    assert [str(w.message) for w in caught] == [w["message"] for w in ref["warnings"]]


def sgd(**kw):
    return optim.SGD([param()], lr=0.1, **kw)


def step_before_optimizer():
    S.StepLR(sgd(), step_size=5).step()


def state_dict_of(make):
    def f():
        o = sgd(momentum=0.9)
        sched = make(o)
        for _ in range(3):
            o.step()
            sched.step()
        return sched.state_dict()
    return f


ERRORS = {
    "scheduler_step_before_optimizer_step": step_before_optimizer,
    "StepLR_not_an_optimizer": lambda: S.StepLR(object(), step_size=5),
    "LinearLR_start_factor_0": lambda: S.LinearLR(sgd(), start_factor=0.0),
    "LinearLR_end_factor_2": lambda: S.LinearLR(sgd(), end_factor=2.0),
    "ConstantLR_factor_2": lambda: S.ConstantLR(sgd(), factor=2.0),
    "ReduceLROnPlateau_factor_1": lambda: S.ReduceLROnPlateau(sgd(), factor=1.0),
    "ReduceLROnPlateau_mode_avg": lambda: S.ReduceLROnPlateau(sgd(), mode="avg"),
    "ReduceLROnPlateau_threshold_mode_x": lambda: S.ReduceLROnPlateau(sgd(), threshold_mode="x"),
    "OneCycleLR_no_total_steps": lambda: S.OneCycleLR(sgd(momentum=0.9), max_lr=1.0),
    "OneCycleLR_total_steps_0": lambda: S.OneCycleLR(sgd(momentum=0.9), 1.0, total_steps=0),
    "OneCycleLR_pct_start_int_1": lambda: S.OneCycleLR(sgd(momentum=0.9), 1.0, 30, pct_start=1),
    "OneCycleLR_anneal_exp": lambda: S.OneCycleLR(sgd(momentum=0.9), 1.0, 30, anneal_strategy="exp"),
    "OneCycleLR_optimizer_without_momentum": lambda: S.OneCycleLR(optim.Adagrad([param()]), 1.0, 30),
    "StepLR_state_dict_after_3_steps": state_dict_of(lambda o: S.StepLR(o, step_size=2, gamma=0.5)),
    "OneCycleLR_state_dict_after_3_steps": state_dict_of(lambda o: S.OneCycleLR(o, 1.0, 30)),
}


@pytest.mark.parametrize("name", FIX["errors"])
def test_errors_warnings_and_state_dicts_match_pytorch(name):
    ref = FIX["errors"][name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if ref["error"] is None:
            result = ERRORS[name]()
            if "result" in ref:
                assert json.loads(json.dumps(result)) == ref["result"]
        else:
            with pytest.raises(Exception) as info:
                ERRORS[name]()
            assert (type(info.value).__name__, str(info.value)) == (ref["error"]["type"], ref["error"]["message"])
    assert [(w.category.__name__, str(w.message)) for w in caught] == \
        [(w["category"], w["message"]) for w in ref["warnings"]]


def test_a_skipped_first_step_warns_as_in_pytorch():
    """GradScaler skipping the first optimizer.step() makes the scheduler warn, exactly as PyTorch's does."""
    w = param()
    opt = optim.SGD([w], lr=0.1)
    sched = S.StepLR(opt, step_size=1)
    scaler = GradScaler("cpu")
    scaler.scale(minifp.sum(w * float("inf"))).backward()
    scaler.step(opt)
    scaler.update()
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()


def test_load_state_dict_resumes_the_schedule():
    o1, o2 = sgd(), sgd()
    a, b = S.CosineAnnealingLR(o1, T_max=10), S.CosineAnnealingLR(o2, T_max=10)
    for _ in range(4):
        o1.step()
        a.step()
    b.load_state_dict(a.state_dict())
    o2.param_groups[0]["lr"] = o1.param_groups[0]["lr"]
    o1.step()
    o2.step()
    a.step()
    b.step()
    assert a.get_last_lr() == b.get_last_lr() and b.last_epoch == 5


def test_get_lr_outside_step_warns():
    sched = S.ExponentialLR(sgd(), 0.5)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_explicit_epoch_uses_the_closed_form_and_warns():
    opt = sgd()
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(5)
    assert sched.get_last_lr() == [0.1 * 0.5 ** 2]


def test_lambda_lr_per_group_and_its_check():
    a, b = param(), param()
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    sched = S.LambdaLR(opt, [lambda e: 1.0, lambda e: 0.5 ** e])
    opt.step()
    sched.step()
    assert sched.get_last_lr() == [0.1, 0.5]
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.LambdaLR(opt, [lambda e: 1.0])


def test_resuming_without_initial_lr_raises_pytorchs_key_error():
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\] when resuming"):
        S.StepLR(sgd(), step_size=2, last_epoch=3)


def test_reduce_on_plateau_min_lr_list_length():
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        S.ReduceLROnPlateau(sgd(), min_lr=[0.1, 0.2])

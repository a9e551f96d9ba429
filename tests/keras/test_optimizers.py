"""keras.optimizers against trajectories recorded from Keras 3 (tests/fixtures/keras/optimizers.json)."""
import json
from pathlib import Path

import numpy as np
import pytest

import minifp
from minifp.keras import optimizers
from minifp.keras.optimizers import schedules

FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "keras" / "optimizers.json").read_text())
K3 = FIX["faces"]["keras3"]


def _f32(values):
    return np.array([np.nan if v == "nan" else float(v) for v in values], np.float32)


def wave(shape, k, scale=0.1, freq=0.37, offset=0.0):
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (offset + scale * np.sin(freq * i + k)).astype(np.float32).reshape(shape)


def grad(t, k, shape):
    n = int(np.prod(shape))
    return (0.1 * np.cos(0.5 * t + 0.3 * np.arange(n, dtype=np.float64) + k) + 0.02).astype(np.float32).reshape(shape)


def variables():
    return [minifp.tensor(wave(v["shape"], v["k"], v["scale"]), requires_grad=True) for v in FIX["variables"]]


def test_formulas_match_the_recorded_checks():
    for v, check in zip(FIX["variables"], FIX["init_check"]):
        assert np.array_equal(np.ravel(wave(v["shape"], v["k"], v["scale"])), np.ravel(np.array(check, np.float32)))
    for t, checks in FIX["grad_check"].items():
        for k, (v, check) in enumerate(zip(FIX["variables"], checks)):
            assert np.array_equal(np.ravel(grad(int(t), k, v["shape"])), np.ravel(np.array(check, np.float32)))


def run(case):
    kwargs = dict(case["kwargs"])
    if "schedule" in case:
        kwargs["learning_rate"] = getattr(schedules, case["schedule"]["class"])(**case["schedule"]["kwargs"])
    opt = getattr(optimizers, case["class"])(**kwargs)
    vs = variables()
    weights, lrs = [], []
    for t in range(FIX["steps"]):
        opt.apply_gradients([(minifp.tensor(grad(t, k, v["shape"])), var)
                             for k, (v, var) in enumerate(zip(FIX["variables"], vs))])
        weights.append(np.concatenate([np.ravel(var.numpy()) for var in vs]))
        lrs.append(np.float32(opt.learning_rate))
    return opt, np.array(weights), np.array(lrs)


@pytest.mark.parametrize("case", K3["cases"], ids=lambda c: f"{c['class']}-{c['kwargs']}-{'schedule' in c}")
def test_trajectory_matches_keras3(case):
    opt, weights, lrs = run(case)
    expected = np.array([_f32(w) for w in case["result"]["weights"]])
    assert np.abs(weights.astype(np.float64) - expected).max() <= 1e-6
    assert int(opt.iterations) == case["result"]["iterations"] == 50
    if "learning_rate_after" in case["result"]:
        assert np.array_equal(lrs, _f32(case["result"]["learning_rate_after"]))


@pytest.mark.parametrize("case", FIX["faces"]["tf_keras"]["cases"], ids=lambda c: f"{c['class']}-{c['kwargs']}")
def test_final_weights_match_tf_keras(case):
    _, weights, _ = run(case)
    assert np.abs(weights[-1].astype(np.float64) - _f32(case["result"]["final_weights"])).max() <= 1e-6


@pytest.mark.parametrize("cls", sorted(K3["defaults"]))
def test_defaults_and_config_match_keras3(cls):
    expected = dict(K3["defaults"][cls])
    config = getattr(optimizers, cls)().get_config()
    expected.pop("name"), config.pop("name")
    assert config == expected
    again = getattr(optimizers, cls).from_config(getattr(optimizers, cls)().get_config())
    assert type(again).__name__ == cls


@pytest.mark.parametrize("name", sorted(K3["get"]))
def test_get_by_name(name):
    assert type(optimizers.get(name)).__name__ == K3["get"][name]["result"]


@pytest.mark.parametrize("spec", K3["schedules"], ids=lambda s: f"{s['class']}-{s['kwargs']}")
def test_schedules_match_keras3(spec):
    s = getattr(schedules, spec["class"])(**spec["kwargs"])
    values = np.array([np.float32(s(step)) for step in range(len(spec["result"]["values"]))])
    assert np.abs(values.astype(np.float64) - _f32(spec["result"]["values"])).max() <= 1e-7
    assert s.get_config() == spec["result"]["config"]


def test_names_iterations_and_learning_rate_variable():
    opt = optimizers.Adam(name="my_adam")
    assert opt.name == "my_adam" and int(opt.iterations) == 0 and opt.iterations.numpy().dtype == np.int64
    assert opt.learning_rate.numpy() == np.float32(0.001) and opt.learning_rate.dtype == "float32"
    opt.learning_rate = 0.5
    assert float(opt.learning_rate) == 0.5
    assert [v.name for v in opt.variables] == ["iteration", "learning_rate"]
    w = minifp.tensor(np.ones(2, np.float32), requires_grad=True)
    opt.apply([minifp.tensor(np.ones(2, np.float32))], [w])
    assert [v.name.split("_")[-1] for v in opt.variables[2:]] == ["momentum", "velocity"]
    assert int(opt.iterations) == 1
    opt.apply([minifp.tensor(np.ones(2, np.float32))])      # the variables it was built with
    assert int(opt.iterations) == 2


def test_schedule_learning_rate_is_read_at_iterations_and_not_settable():
    opt = optimizers.SGD(schedules.PiecewiseConstantDecay([0], [1.0, 0.5]))
    assert opt.learning_rate == np.float32(1.0)
    w = minifp.tensor(np.float32(1.0), requires_grad=True)
    opt.apply_gradients([(minifp.tensor(np.float32(1.0)), w)])
    assert opt.learning_rate == np.float32(0.5) and w.numpy() == np.float32(0.0)
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.1
    assert opt.get_config()["learning_rate"]["class_name"] == "PiecewiseConstantDecay"
    assert isinstance(optimizers.SGD.from_config(opt.get_config())._learning_rate, schedules.PiecewiseConstantDecay)


def test_none_gradients_are_dropped_with_a_warning():
    a = minifp.tensor(np.float32(1.0), requires_grad=True)
    b = minifp.tensor(np.float32(1.0), requires_grad=True)
    opt = optimizers.SGD(0.5)
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        opt.apply_gradients([(minifp.tensor(np.float32(1.0)), a), (None, b)])
    assert a.numpy() == np.float32(0.5) and b.numpy() == np.float32(1.0)
    with pytest.raises(ValueError, match="No gradients provided"):
        opt.apply_gradients([(None, a)])


def test_float16_variable_is_rounded_once():
    w = minifp.tensor(np.float16(1.0), dtype="float16", requires_grad=True)
    optimizers.SGD(1e-4).apply_gradients([(minifp.tensor(np.float32(1.0)), w)])
    assert w.fmt == minifp.float16 and w.numpy() == np.float16(1.0)       # 1 - 1e-4 rounds back to 1 in float16


@pytest.mark.parametrize("make, match", [
    (lambda: optimizers.SGD(-0.1), "learning_rate"),
    (lambda: optimizers.Adam(1), "should be float"),
    (lambda: optimizers.SGD(0.1, clipnorm=1.0, global_clipnorm=1.0), "Only one of `clipnorm`"),
    (lambda: optimizers.SGD(momentum=2.0), "momentum"),
    (lambda: optimizers.AdamW(weight_decay=None), "weight_decay"),
    (lambda: optimizers.Adam(use_ema=True, ema_momentum=1.5), "ema_momentum"),
    (lambda: optimizers.SGD(gradient_accumulation_steps=1), "gradient_accumulation_steps"),
    (lambda: optimizers.Adam(foo=1), "not recognized"),
    (lambda: optimizers.get("adamx"), "adadelta, adafactor, adagrad, adam, adamax, adamw, ftrl, lion, "
                                      "multioptimizer, muon, nadam, rmsprop, schedulefreeadamw, sgd"),
    (lambda: optimizers.get(3), "Could not interpret"),
    (lambda: schedules.ExponentialDecay(0.1, 0, 0.5), "decay_steps"),
    (lambda: schedules.PiecewiseConstantDecay([1, 2], [0.1]), "boundaries"),
])
def test_bad_arguments(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_unknown_variable_and_missing_variables():
    opt = optimizers.SGD()
    with pytest.raises(ValueError, match="must already be built"):
        opt.apply([minifp.tensor(np.float32(1.0))])
    w = minifp.tensor(np.float32(1.0), requires_grad=True)
    opt.apply([minifp.tensor(np.float32(1.0))], [w])
    with pytest.raises(ValueError, match="Unknown variable"):
        opt.apply([minifp.tensor(np.float32(1.0))], [minifp.tensor(np.float32(1.0), requires_grad=True)])

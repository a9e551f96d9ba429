"""keras.optimizers' gradient_accumulation_steps and use_ema against real Keras 3 on torch
(tests/fixtures/keras/optimizer_options.json, recorded by tools/record_keras_optimizer_options.py).

Iterations, variable names, accumulators (float32 sums of the given gradients) and configs are compared exactly. The
weights, slots and averages go through the update rules, which match Keras's torch optimizers to 1e-6 (the tolerance
of tests/keras/test_optimizers.py: torch's fused foreach kernels may round a step differently by an ulp), so they are
compared to 1e-6; the EMA formula itself is checked bit for bit on Keras's own recorded values.
"""
import json
import pathlib

import numpy as np
import pytest

import minifp
from minifp import keras
from minifp.keras import optimizers

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "optimizer_options.json")
                     .read_text())
SHAPES = {"w": (3,), "b": (2, 2)}


def _f32(values, shape=None):
    a = np.array(values, np.float32)
    return a if shape is None else a.reshape(shape)


def _id(case):
    return f"{case['class']}-{json.dumps(case['kwargs'], sort_keys=True)}"


def _bits(a):
    return np.ravel(np.asarray(a, np.float32)).view(np.uint32).tolist()


def _close(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.ravel(g).astype(np.float64), _f32(w), rtol=0, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in FIXTURE["cases"] if c["kwargs"].get("use_ema")], ids=_id)
def test_ema_formula_reproduces_keras_bit_for_bit(case):
    """avg = m * avg + (1 - m) * w in float32, m = 0 while `iterations` (read before the call's increment) is 0."""
    momentum = np.float32(case["kwargs"].get("ema_momentum", 0.99))
    frequency = case["kwargs"].get("ema_overwrite_frequency")
    index = [case["names"].index(f"{k}_average") for k in ("w", "b")]
    averages, before, checked = [np.float32(0.0)] * 2, 0, 0
    for step in case["steps"]:
        got = [_f32(step["variables"][i]) for i in index]
        if not (frequency and (before + 1) % frequency == 0):   # else the recorded weights are already the averages
            m = np.float32(before != 0) * momentum
            for average, w, g in zip(averages, step["weights"], got):
                assert _bits(m * average + (np.float32(1) - m) * _f32(w)) == _bits(g)
            checked += 1
        averages, before = got, step["iterations"]
    assert checked >= 3


def _run(case):
    opt = getattr(optimizers, case["class"])(**case["kwargs"])
    vs = [keras.Variable(_f32(FIXTURE["init"][k], SHAPES[k]), name=k) for k in ("w", "b")]
    steps = []
    for g in FIXTURE["grads"]:
        opt.apply_gradients([(minifp.tensor(_f32(g[k], SHAPES[k])), v) for k, v in zip(("w", "b"), vs)])
        steps.append((int(opt.iterations), [np.array(v.numpy()) for v in vs], [np.array(v.numpy()) for v in opt.variables]))
    return opt, vs, steps


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=_id)
def test_steps_match_keras(case):
    opt, vs, steps = _run(case)
    assert [v.name for v in opt.variables] == case["names"]
    assert [v.path.split("/", 1)[1] for v in opt.variables] == [p.split("/", 1)[1] for p in case["paths"]]
    for t, ((iterations, weights, variables), want) in enumerate(zip(steps, case["steps"])):
        assert iterations == want["iterations"], t
        _close(weights, want["weights"])
        _close(variables, want["variables"])
        for name, got, expected in zip(case["names"], variables, want["variables"]):
            if name.endswith("_gradient_accumulator"):      # sums of the given gradients (-0.0 after a reset)
                assert _bits(got) == _bits(expected), (t, name)
    opt.finalize_variable_values(vs)
    _close([v.numpy() for v in vs], case["finalized"])
    if case["kwargs"].get("use_ema"):           # finalize copied the averages exactly
        averages = [v for v in opt.variables if v.name.endswith("_average")]
        assert [_bits(v.numpy()) for v in vs] == [_bits(a.numpy()) for a in averages]
    config = {k: v for k, v in opt.get_config().items() if k != "name"}
    assert json.loads(json.dumps(config)) == case["config"]


def test_accumulation_updates_only_every_nth_call():
    case = next(c for c in FIXTURE["cases"] if c["kwargs"].get("gradient_accumulation_steps") == 2
                and not c["kwargs"].get("use_ema") and c["class"] == "SGD")
    _, _, steps = _run(case)
    init = [_f32(FIXTURE["init"][k]) for k in ("w", "b")]
    # calls 1, 3, 5 only accumulate: the weights stay what the last update left
    assert [_bits(w) for w in steps[0][1]] == [_bits(w) for w in init]
    assert [_bits(w) for w in steps[2][1]] == [_bits(w) for w in steps[1][1]]
    assert [int(s[0]) for s in steps] == [0, 1, 1, 2, 2, 3]


def test_ema_overwrite_copies_the_averages_into_the_weights():
    case = next(c for c in FIXTURE["cases"] if c["kwargs"].get("ema_overwrite_frequency") == 2
                and not c["kwargs"].get("gradient_accumulation_steps"))
    opt, vs, steps = _run(case)
    names = [v.name for v in opt.variables]
    for t in (1, 3, 5):             # updates 2, 4, 6
        _, weights, variables = steps[t]
        assert _bits(weights[0]) == _bits(variables[names.index("w_average")])


@pytest.mark.parametrize("case", FIXTURE["errors"], ids=_id)
def test_bad_options_get_keras_errors(case):
    with pytest.raises(Exception) as info:
        getattr(optimizers, case["class"])(**case["kwargs"])
    assert type(info.value).__name__ == case["type"]
    assert str(info.value) == case["message"]


def test_fit_ends_with_the_averages_swapped_in():
    fit = FIXTURE["fit"]
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.set_weights([_f32(fit["kernel"], (3, 2)), _f32(fit["bias"])])
    name, kwargs = fit["optimizer"]
    model.compile(optimizer=getattr(optimizers, name)(**kwargs), loss="mse")
    model.fit(_f32(fit["x"], (8, 3)), _f32(fit["y"], (8, 2)), batch_size=fit["batch_size"], epochs=fit["epochs"],
              shuffle=False, verbose=0)
    averages = [v.numpy() for v in model.optimizer.variables if v.name.endswith("_average")]
    assert int(model.optimizer.iterations) == fit["iterations"]
    # the swap itself is exact: the weights are the optimizer's averages
    assert [_bits(w) for w in model.get_weights()] == [_bits(a) for a in averages]
    # the values go through matmuls and the mse gradient, whose float32 sums may round in another order than torch's
    for got, want in zip(model.get_weights(), fit["weights"]):
        np.testing.assert_allclose(np.ravel(got), _f32(want), rtol=1e-6, atol=1e-7)


def test_fit_without_ema_leaves_the_last_weights():
    fit = FIXTURE["fit"]
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.set_weights([_f32(fit["kernel"], (3, 2)), _f32(fit["bias"])])
    model.compile(optimizer=optimizers.SGD(0.1), loss="mse")
    model.fit(_f32(fit["x"], (8, 3)), _f32(fit["y"], (8, 2)), batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert not any(v.name.endswith("_average") for v in model.optimizer.variables)
    assert not np.allclose(model.get_weights()[0], _f32(fit["weights"][0], (3, 2)))

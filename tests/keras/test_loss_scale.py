"""Both LossScaleOptimizers against Keras 3's and tf-keras' recorded trajectories (loss_scale.json)."""
import json
from pathlib import Path

import numpy as np
import pytest

import minifp
from minifp.keras import optimizers
from minifp.keras.optimizers.loss_scale_optimizer import LossScaleOptimizer

FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "keras" / "loss_scale.json").read_text())


def arr(values):
    return np.array([float(v) for v in np.ravel(np.array(values, dtype=object))], np.float32).reshape(
        np.shape(values))


def ls_grad(t, k, n):
    return (0.5 * np.cos(0.9 * t + 0.7 * np.arange(n, dtype=np.float64) + k)).astype(np.float32)


def inner(case, mod):
    return mod.SGD(0.1) if case["inner"]["class"] == "SGD" else mod.Adam(0.01)


def variables():
    return [minifp.tensor(np.array(v["init"], np.float32), requires_grad=True) for v in FIX["variables"]]


def loss_of(vs, t):
    cs = [minifp.tensor(ls_grad(t, k, v.shape[0])) for k, v in enumerate(vs)]
    return minifp.sum(vs[0] * cs[0]) + minifp.sum(vs[1] * cs[1])


def check_step(step, vs, scale, iterations, counter):
    assert np.float32(scale) == arr(step["scale"]), step["t"]
    assert counter == step.get("step_counter", step.get("dynamic_counter")), step["t"]
    assert int(iterations) == step["iterations"], step["t"]
    for v, expected in zip(vs, step["weights"]):
        assert np.array_equal(v.numpy(), arr(expected)), step["t"]


@pytest.mark.parametrize("name", sorted(FIX["cases"]["keras3"]))
def test_keras3_trajectory(name):
    case = FIX["cases"]["keras3"][name]
    lso = LossScaleOptimizer(inner(case, optimizers), initial_scale=case["initial_scale"],
                             dynamic_growth_steps=case["dynamic_growth_steps"])
    vs = variables()
    for step in case["steps"]:
        scale_before = float(lso.dynamic_scale.numpy()) if lso.built else float(lso.initial_scale)
        assert scale_before == step["scale_before"]
        assert np.float32(lso.scale_loss(loss_of(vs, step["t"])).numpy()) == arr(step["scaled_loss"])
        before = [v.numpy().copy() for v in vs]
        lso.apply([minifp.tensor(arr(g)) for g in step["grads_in"]], vs)
        assert all(np.array_equal(a.numpy(), b) for a, b in zip(vs, before)) == step["skipped"]
        check_step(step, vs, lso.dynamic_scale.numpy(), lso.iterations, int(lso.step_counter.numpy()))
    config = {k: v for k, v in lso.get_config().items() if k not in ("inner_optimizer", "name")}
    assert config == {k: v for k, v in case["config"]["result"].items() if k != "name"}
    assert lso.get_config()["name"].startswith("loss_scale_optimizer")


def test_issue_example():
    w = minifp.tensor(np.float32(1.0), requires_grad=True)
    lso = LossScaleOptimizer(optimizers.SGD(0.1))
    lso.apply_gradients([(32768 * minifp.tensor(np.float32(0.5)), w)])
    expected = FIX["issue_example"]["keras3"]
    assert w.numpy() == np.float32(expected["w"]) == np.float32(0.95)
    assert lso.dynamic_scale.numpy() == expected["scale"] and int(lso.iterations) == expected["iterations"]


def test_keras3_attributes_and_errors():
    expected = FIX["attributes"]["keras3"]
    lso = LossScaleOptimizer(optimizers.SGD())
    assert lso.initial_scale == expected["initial_scale"] and lso.dynamic_growth_steps == 2000
    for attr, has in expected["has"].items():
        if attr != "dynamic_scale":          # Keras makes it in build(); minifp too (checked below)
            assert hasattr(lso, attr) == has, attr
    lso.build([minifp.tensor(np.float32(1.0), requires_grad=True)])
    assert all(hasattr(lso, a) for a in expected["has_after_build"])
    with pytest.raises(ValueError) as err:
        LossScaleOptimizer(optimizers.SGD(), dynamic=False)
    assert str(err.value) == expected["dynamic_false"]["message"]
    with pytest.raises(ValueError, match="does not support `clipnorm`"):
        LossScaleOptimizer(optimizers.SGD(), clipnorm=1.0)
    with pytest.raises(ValueError, match="initial_scale"):
        LossScaleOptimizer(optimizers.SGD(), initial_scale=-1.0)


def test_keras3_learning_rate_forwarding_and_optimizers_alias():
    sgd = optimizers.SGD(0.1)
    lso = optimizers.LossScaleOptimizer(sgd)
    lso.learning_rate = 0.25
    assert float(sgd.learning_rate) == 0.25 == float(lso.learning_rate)
    again = optimizers.deserialize({"class_name": "LossScaleOptimizer", "config": lso.get_config()})
    assert type(again.inner_optimizer) is optimizers.SGD and again.dynamic_growth_steps == 2000


# -- tf.keras (Keras 2) semantics ---------------------------------------------------------------------------------

from minifp.tf.keras import mixed_precision as tfmp  # noqa: E402


@pytest.mark.parametrize("name", sorted(FIX["cases"]["tf_keras"]))
def test_tf_keras_trajectory(name):
    case = FIX["cases"]["tf_keras"][name]
    lso = tfmp.LossScaleOptimizer(inner(case, optimizers), initial_scale=case["initial_scale"],
                                  dynamic_growth_steps=case["dynamic_growth_steps"])
    vs = variables()
    for step in case["steps"]:
        assert float(lso.loss_scale.numpy()) == step["scale_before"]
        scaled = lso.get_scaled_loss(loss_of(vs, step["t"]))
        assert np.float32(scaled.numpy()) == arr(step["scaled_loss"])
        scaled_grads = [minifp.tensor(arr(g)) for g in step["scaled_grads"]]
        grads = lso.get_unscaled_gradients(scaled_grads)
        injected = [arr(g) for g in step["grads_in"]]
        for g, expected in zip(grads, injected):
            same = np.isfinite(expected)
            assert np.array_equal(g.numpy()[same], expected[same])
        before = [v.numpy().copy() for v in vs]
        lso.apply_gradients(zip([minifp.tensor(g) for g in injected], vs))
        assert all(np.array_equal(a.numpy(), b) for a, b in zip(vs, before)) == step["skipped"]
        check_step(step, vs, lso.loss_scale.numpy(), lso.iterations, int(lso.dynamic_counter.numpy()))
    assert {k: v for k, v in lso.get_config().items() if k != "inner_optimizer"} == case["config"]["result"]


def test_tf_keras_issue_example_does_not_unscale():
    w = minifp.tensor(np.float32(1.0), requires_grad=True)
    lso = tfmp.LossScaleOptimizer(optimizers.SGD(0.1))
    with pytest.warns(UserWarning, match="get_scaled_loss"):
        lso.apply_gradients([(minifp.tensor(np.float32(32768 * 0.5)), w)])
    expected = FIX["issue_example"]["tf_keras"]
    assert w.numpy() == np.float32(expected["w"]) and float(lso.loss_scale.numpy()) == expected["scale"]
    assert int(lso.iterations) == expected["iterations"]


def test_tf_keras_attributes_policy_and_experimental():
    expected = FIX["attributes"]["tf_keras"]
    lso = tfmp.LossScaleOptimizer(optimizers.SGD())
    assert lso.initial_scale == expected["initial_scale"] and lso.dynamic_growth_steps == 2000 and lso.dynamic
    for attr, has in expected["has"].items():
        assert hasattr(lso, attr) == has, attr
    static = tfmp.LossScaleOptimizer(optimizers.SGD(), dynamic=False, initial_scale=128)
    assert float(static.loss_scale.numpy()) == expected["static"]["result"]
    with pytest.raises(ValueError, match="initial_scale"):
        tfmp.LossScaleOptimizer(optimizers.SGD(), dynamic=False)
    with pytest.raises(TypeError, match="must be a bool"):
        tfmp.LossScaleOptimizer(optimizers.SGD(), "static")
    assert tfmp.LossScaleOptimizer(optimizers.SGD(), "dynamic").dynamic       # TF 2.1-2.3's spelling
    policy = tfmp.Policy("mixed_float16")
    assert repr(policy) == '<Policy "mixed_float16">'
    assert (policy.compute_dtype, policy.variable_dtype) == ("float16", "float32")
    try:
        tfmp.experimental.set_policy("mixed_float16")
        assert repr(tfmp.global_policy()) == '<Policy "mixed_float16">'
        old = tfmp.experimental.LossScaleOptimizer(optimizers.SGD(), loss_scale="dynamic")
        assert old.dynamic and float(old.loss_scale.numpy()) == 32768.0
        assert not tfmp.experimental.LossScaleOptimizer(optimizers.SGD(), 256).dynamic
    finally:
        tfmp.set_global_policy("float32")
    with pytest.raises(TypeError, match="must be a string"):
        tfmp.Policy(16)

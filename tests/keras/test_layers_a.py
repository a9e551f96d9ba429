"""Issue 33's Keras 3 layers (activations, Conv1D / Conv2DTranspose / separable / depthwise convolutions,
pooling, reshaping, merging, Lambda) against what Keras 3 computed (tests/fixtures/keras/layers_a.json,
tools/record_keras_layers.py): outputs and the gradients of sum(out * cotangent) for the inputs and weights,
weights' names, shapes and order, get_config, output shapes; dtypes exact under the mixed policies."""
import json
import pathlib
import warnings

import numpy as np
import pytest

import minifp as mf
from minifp import keras
from minifp.keras import layers
from minifp.keras._errors import InvalidArgumentError
from minifp.keras._tensor import convert_to_tensor

DATA = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "layers_a.json").read_text())
FUNCTIONS = {"times_two_plus_one": lambda x: x * 2.0 + 1.0, "square": lambda x: x * x,
             "first_half": lambda x: x[..., :2]}
# Values within float32 rounding, or within a few steps of the compute dtype under a mixed policy.
TOLERANCE = {"float32": (1e-5, 1e-6), "mixed_float16": (4e-3, 4e-3), "mixed_bfloat16": (3e-2, 3e-2)}
# TensorFlow's CPU depthwise kernel accumulates float16 / bfloat16 in the half type (tools/record_keras_layers.py
# ran on a CPU); minifp sums in float32 and rounds once, as GPU kernels do, so a separable conv's depthwise stage
# (9 taps here, then the pointwise sum) drifts by a few more steps of the half type.
LOOSER = {("SeparableConv2D", "mixed_float16"): (2e-2, 2e-2), ("SeparableConv2D", "mixed_bfloat16"): (0.15, 0.15)}


@pytest.fixture(autouse=True)
def _fresh():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def _array(record):
    return np.asarray(record["values"], np.float32).reshape(record["shape"])


def _listify(x):
    """Tuples as lists (how JSON stores them)."""
    return json.loads(json.dumps(x))


def _case_id(case):
    return f"{case['class']}-{case['policy']}-{json.dumps(case['config'], sort_keys=True)}"


def _layer(case):
    config = dict(case["config"])
    if case["class"] == "Lambda":
        config["function"] = FUNCTIONS[config["function"]]
    return getattr(layers, case["class"])(**config)


def _shapes(case):
    shapes = [tuple(x["shape"]) for x in case["inputs"]]
    return shapes if len(shapes) > 1 else shapes[0]


@pytest.mark.parametrize("case", DATA["cases"], ids=_case_id)
def test_layer_matches_keras(case):
    keras.mixed_precision.set_global_policy(case["policy"])
    layer = _layer(case)
    layer.build(_shapes(case))
    assert [(w.name, tuple(w.shape), str(w.dtype)) for w in layer.weights] == [
        (w["name"], tuple(w["shape"]), w["dtype"]) for w in case["weights"]]
    if case["weights"]:
        layer.set_weights([_array(w) for w in case["weights"]])
    xs = [convert_to_tensor(_array(x)) for x in case["inputs"]]
    for x in xs:
        x.requires_grad = True
    kwargs = {} if case["mask"] is None else {"mask": np.asarray(case["mask"], bool)}
    out = layer(xs if len(xs) > 1 else xs[0], **kwargs)
    expected = case["output"]
    assert (tuple(out.shape), str(out.dtype)) == (tuple(expected["shape"]), expected["dtype"])
    rtol, atol = LOOSER.get((case["class"], case["policy"]), TOLERANCE[case["policy"]])
    np.testing.assert_allclose(out.numpy().astype(np.float32), _array(expected), rtol=rtol, atol=atol)
    out.backward(_array(case["cotangent"]))
    for got, want in zip(xs + list(layer.trainable_weights), case["grad_inputs"] + case["grad_weights"]):
        assert got.grad is not None and str(got.grad.dtype) == want["dtype"]
        np.testing.assert_allclose(got.grad.numpy().astype(np.float32), _array(want), rtol=rtol, atol=atol)
    assert _listify(layer.compute_output_shape(_shapes(case))) == case["compute_output_shape"]
    config = _listify(layer.get_config())
    for key, value in case["get_config"].items():
        if key.endswith("_initializer"):        # minifp's initializers serialize by class and seed only
            assert config[key]["class_name"] == value["class_name"], key
        elif not key.endswith(("_regularizer", "_constraint")) or value is not None:
            assert config.get(key) == value, key

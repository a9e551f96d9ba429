"""Issue 33's Keras 3 layers (activations, Conv1D / Conv2DTranspose / separable / depthwise convolutions,
pooling, reshaping, merging, Lambda) against what Keras 3 computed (tests/fixtures/keras/layers_a.json,
tools/record_keras_layers.py): outputs and the gradients of sum(out * cotangent) for the inputs and weights,
weights' names, shapes and order, get_config, output shapes; dtypes exact under the mixed policies."""
import json
import pathlib
import warnings

import numpy as np
import pytest

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


def _wave(shape, k, scale, freq):
    """The fixture's wave() formula: float32(scale * sin(freq * i + k)), i = 0, 1 ... in C order."""
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (scale * np.sin(freq * i + k)).astype(np.float32).reshape(shape)


def test_wave_formula_gives_the_stored_inputs():
    for case in DATA["cases"][:3]:
        x = case["inputs"][0]
        assert np.array_equal(_wave(x["shape"], 1, 2.0, 0.71), _array(x))


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
    out.backward(_wave(case["cotangent_shape"], 3, 1.0, 0.29))       # DATA["formulas"]["cotangent"]
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


ERRORS = DATA["errors"]
X3 = np.ones((2, 3, 4), np.float32)


@pytest.mark.parametrize("name, make", [
    ("concatenate_axis_3", lambda: layers.Concatenate(axis=3)([X3, X3])),
    ("concatenate_axis_-4", lambda: layers.Concatenate(axis=-4)([X3, X3])),
    ("concatenate_mismatch", lambda: layers.Concatenate(axis=1)([X3, np.ones((2, 3, 5), np.float32)])),
    ("concatenate_not_list", lambda: layers.Concatenate()(X3)),
    ("softmax_axis_3", lambda: layers.Softmax(axis=3)(X3)),
    ("softmax_axis_-4", lambda: layers.Softmax(axis=-4)(X3)),
    ("leaky_relu_negative", lambda: layers.LeakyReLU(negative_slope=-1.0)),
    ("add_shapes", lambda: layers.Add()([X3, np.ones((2, 3, 5), np.float32)])),
])
def test_bad_arguments_raise_what_keras_raises(name, make):
    """The type Keras raised (TensorFlow's InvalidArgumentError for an axis the op refuses), its message within
    the one Keras wrapped it in."""
    want = ERRORS[name]["error"]
    with pytest.raises(Exception) as info:
        make()
    assert type(info.value).__name__ == want["type"]
    assert str(info.value) in want["message"]


def test_invalid_argument_error_is_a_value_error():
    with pytest.raises(ValueError):
        layers.Softmax(axis=5)(X3)
    with pytest.raises(InvalidArgumentError):
        layers.Concatenate(axis=7)([X3, X3])


def test_leaky_relu_alpha_keras3_warns_tf_keras_keeps():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer = layers.LeakyReLU(alpha=0.2)
    assert [f"{w.category.__name__}: {w.message}" for w in caught] == ERRORS["keras3_leaky_relu_alpha"]["warnings"]
    assert layer.get_config()["negative_slope"] == ERRORS["keras3_leaky_relu_alpha"]["result"]["negative_slope"]
    from minifp.tf import keras as tf_keras
    old = tf_keras.layers.LeakyReLU()
    assert old.get_config()["alpha"] == ERRORS["tf_keras_leaky_relu"]["result"] and "negative_slope" not in \
        old.get_config()
    assert np.array_equal(tf_keras.layers.LeakyReLU(alpha=0.5)(np.array([-2.0, 3.0], np.float32)).numpy(),
                          np.array([-1.0, 3.0], np.float32))
    again = tf_keras.layers.deserialize(tf_keras.layers.serialize(tf_keras.layers.LeakyReLU(alpha=0.1)))
    assert type(again) is tf_keras.layers.LeakyReLU and again.alpha == np.float32(0.1)


def test_merges_in_a_functional_model_match_eager_calls():
    """Layers called on lists of KerasTensors record one node each; the model replays them."""
    a, b = keras.Input((4,)), keras.Input((4,))
    ha, hb = layers.Dense(3, name="da")(a), layers.Dense(3, name="db")(b)
    merged = layers.Concatenate()([layers.Add()([ha, hb]), layers.Multiply()([ha, hb, ha])])
    assert merged.shape == (None, 6)
    model = keras.Model([a, b], layers.Lambda(FUNCTIONS["square"])(merged))
    xa = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    xb = np.linspace(2, -1, 8, dtype=np.float32).reshape(2, 4)
    got = model([xa, xb]).numpy()
    pa, pb = model.get_layer("da")(xa).numpy(), model.get_layer("db")(xb).numpy()
    want = np.concatenate([pa + pb, pa * pb * pa], axis=-1) ** 2
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_lambda_output_shape_given_or_found():
    assert layers.Lambda(FUNCTIONS["first_half"]).compute_output_shape((None, 5, 3)) == (None, 5, 2)
    assert layers.Lambda(FUNCTIONS["first_half"], output_shape=(7,)).compute_output_shape((4, 5, 3)) == (4, 7)
    assert layers.Lambda(lambda x: x, output_shape=lambda s: s[:2]).compute_output_shape((4, 5, 3)) == (4, 5)


def test_transposed_conv_output_padding_and_channels_first_agree_with_channels_last():
    """Conv2DTranspose's output_padding rows and columns (bias only) and the channels_first layout."""
    x = np.linspace(-1, 1, 2 * 3 * 3 * 2, dtype=np.float32).reshape(2, 3, 3, 2)
    last = layers.Conv2DTranspose(2, 3, strides=2, padding="same", output_padding=1, bias_initializer="ones")
    y = last(x).numpy()
    assert y.shape == (2, 6, 6, 2) == last.compute_output_shape(x.shape)
    first = layers.Conv2DTranspose(2, 3, strides=2, padding="same", output_padding=1, data_format="channels_first")
    first.build((2, 2, 3, 3))
    first.set_weights(last.get_weights())
    z = first(x.transpose(0, 3, 1, 2)).numpy().transpose(0, 2, 3, 1)
    np.testing.assert_allclose(z, y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(layers.Conv1D(2, 3, data_format="channels_first", kernel_initializer="ones")(
        x[:, 0].transpose(0, 2, 1)).numpy().transpose(0, 2, 1),
        layers.Conv1D(2, 3, kernel_initializer="ones")(x[:, 0]).numpy(), rtol=1e-6)


@pytest.mark.parametrize("case", [c for c in DATA["cases"] if c["policy"] == "float32" and c["class"] != "Lambda"],
                         ids=_case_id)
def test_config_round_trips(case):
    """deserialize(serialize(layer)) rebuilds the same layer (tf.keras's layers list the same classes)."""
    from minifp.tf import keras as tf_keras
    layer = _layer(case)
    again = layers.deserialize(layers.serialize(layer))
    assert type(again) is type(layer)
    assert (getattr(tf_keras.layers, case["class"]) is type(layer)) == (case["class"] != "LeakyReLU")
    assert _listify({**again.get_config(), "name": None}) == _listify({**layer.get_config(), "name": None})


@pytest.mark.parametrize("case", [c for c in DATA["cases"] if c["policy"] == "float32"], ids=_case_id)
def test_symbolic_call_gives_keras_output_shape(case):
    """Called on Inputs (batch unknown), each layer's KerasTensor has Keras's output shape."""
    inputs = [keras.Input(tuple(x["shape"][1:])) for x in case["inputs"]]
    out = _layer(case)(inputs if len(inputs) > 1 else inputs[0])
    assert list(out.shape) == [None] + case["output"]["shape"][1:]

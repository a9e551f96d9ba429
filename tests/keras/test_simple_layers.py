"""Keras 3's small layers (Identity, Permute, RepeatVector, ZeroPadding1D, Cropping1D, UpSampling1D,
AveragePooling1D, MaxPooling1D, GroupNormalization, GaussianNoise, GaussianDropout, CategoryEncoding)
against real Keras on torch (tests/fixtures/keras/simple_layers.json, recorded by
tools/record_keras_simple_layers.py)."""
import json
import pathlib
import re

import numpy as np
import pytest

import minifp as mf
from minifp import keras
from minifp.keras import layers

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "simple_layers.json")
                     .read_text())


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def inputs(shape, k=0.37):
    """The recorder's inputs(): (i * k) mod 2 - 1 in float64, rounded once to float32."""
    return ((np.arange(int(np.prod(shape)), dtype=np.float64) * k) % 2 - 1).astype(np.float32).reshape(shape)


def _id(case):
    return f"{case['layer']}-{json.dumps(case['kwargs'], sort_keys=True)}"


def _same_bits(got, want):
    """Equal to the bit."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


def _atol(case, want, grad):
    """0 (the bits) wherever values only move or a maximum is taken, and for average pooling's outputs (one
    float32 sum and one division, as torch's). Otherwise:
    - the gradient of overlapping average-pooling windows: torch adds each input's share of up to three windows
      (cotangent / 3) in an order of its own; where they cancel the sum lands a few ulps of the small result
      apart, within one ulp (2**-25) of the shares themselves;
    - GroupNormalization: torch's CPU mean sums in a vectorised order of its own, the variance
      E[x**2] - E[x]**2 cancels, and its CPU rsqrt is not always correctly rounded: within 4 ulps of the
      largest value (measured: at most 3)."""
    if case["layer"] == "AveragePooling1D":
        return 2.0 ** -25 if grad else 0.0
    if case["layer"] == "GroupNormalization":
        return 4 * 2.0 ** -23 * float(np.abs(want).max())
    return 0.0


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=_id)
def test_layer_does_what_keras_does(case):
    layer = getattr(layers, case["layer"])(**case["kwargs"])
    x = keras.ops.convert_to_tensor(inputs(tuple(case["shape"])))
    x.requires_grad = True
    out = layer(x)
    want_out, want_grad = (np.asarray(case[k], np.float32) for k in ("out", "grad"))
    if _atol(case, want_out, False):
        np.testing.assert_allclose(out.float32(), want_out, rtol=0, atol=_atol(case, want_out, False))
    else:
        _same_bits(out.float32(), want_out)
    mf.sum(out * mf.tensor(inputs(out.shape, 0.29))).backward()
    np.testing.assert_allclose(x.grad.float32(), want_grad, rtol=0, atol=_atol(case, want_grad, True))
    assert [[w.name, list(w.shape)] for w in layer.weights] == case["weights"]
    config = json.loads(json.dumps({k: v for k, v in layer.get_config().items() if k not in ("dtype", "name")}))
    assert config == {k: _short(v) for k, v in case["config"].items() if k != "name"}
    symbolic = getattr(layers, case["layer"])(**case["kwargs"])(keras.Input(tuple(case["shape"][1:])))
    assert list(symbolic.shape) == case["symbolic_shape"]
    again = type(layer).from_config(layer.get_config())
    assert again.get_config() == layer.get_config()


@pytest.mark.parametrize("case", FIXTURE["encodings"], ids=lambda c: f"{c['kwargs']}-{c['inputs']}")
def test_category_encoding_does_what_keras_does(case):
    layer = layers.CategoryEncoding(**case["kwargs"])
    x = np.array(case["inputs"], "int32")
    weights = None if case["count_weights"] is None else np.array(case["count_weights"], "float32")
    out = layer(x) if weights is None else layer(x, count_weights=weights)
    assert str(out.dtype) == case["dtype"]
    _same_bits(np.asarray(out), case["out"])
    # (not for rank-1 inputs in a functional model: Keras reads (None,) as one sample and drops the batch axis,
    # (4,); minifp infers symbolic shapes from eager probes, which keep a batch axis: known difference)
    if x.ndim > 1 or case["kwargs"].get("output_mode") == "one_hot":
        symbolic = layers.CategoryEncoding(**case["kwargs"])(keras.Input(x.shape[1:], dtype="int32"))
        assert list(symbolic.shape) == case["symbolic_shape"]
    config = {k: v for k, v in layer.get_config().items() if k not in ("dtype", "name")}
    assert config == {k: v for k, v in case["config"].items() if k != "name"}


def test_category_encoding_count_weights_only_for_counts():
    with pytest.raises(ValueError, match="`count_weights` is not used when `output_mode` is not `'count'`"):
        layers.CategoryEncoding(3)(np.array([[0, 1]]), count_weights=np.array([[1.0, 2.0]], "float32"))


def _short(value):
    """A serialized initializer as minifp writes it: class_name and config (Keras adds module and
    registered_name)."""
    if isinstance(value, dict) and "class_name" in value:
        return {"class_name": value["class_name"], "config": value["config"]}
    return value


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return [type(info.value).__name__, str(info.value).splitlines()[0]]


@pytest.mark.parametrize("case", FIXTURE["errors"], ids=_id)
def test_bad_arguments_get_keras_errors(case):
    assert _error(lambda: getattr(layers, case["layer"])(**case["kwargs"])) == case["error"]


@pytest.mark.parametrize("case", FIXTURE["call_errors"], ids=_id)
def test_bad_inputs_get_keras_errors(case):
    layer = getattr(layers, case["layer"])(**case["kwargs"])
    kind, message = _error(lambda: layer(inputs(tuple(case["shape"]))))
    assert [kind, _plain(message)] == [case["error"][0], _plain(case["error"][1])]


def _plain(message):
    """A message without what differs by design: the layer's auto name (the order the tests run in) and
    torch's shape repr (torch.Size([2, 5, 3]) where minifp writes (2, 5, 3))."""
    message = re.sub(r"layer '\w+'", "layer", message)
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)", r"(\1)", message)


@pytest.mark.parametrize("make", [lambda: layers.GaussianNoise(0.5, seed=3),
                                  lambda: layers.GaussianDropout(0.25, seed=3)])
def test_noise_layers_draw_only_while_training(make):
    x = inputs((64, 50)) + np.float32(2)            # away from zero, so dropout's factor can be read back
    layer = make()
    assert np.array_equal(np.asarray(layer(x)), x)
    assert np.array_equal(np.asarray(layer(x, training=False)), x)
    first, second = np.asarray(layer(x, training=True)), np.asarray(layer(x, training=True))
    assert first.shape == x.shape and first.dtype == np.float32
    assert not np.array_equal(first, second)        # the seed generator advances
    if isinstance(layer, layers.GaussianNoise):
        noise = first.astype(np.float64) - x
        assert abs(noise.mean()) < 0.05 and abs(noise.std() - 0.5) < 0.03
    else:
        factor = first.astype(np.float64) / x
        assert abs(factor.mean() - 1) < 0.03 and abs(factor.std() - np.sqrt(0.25 / 0.75)) < 0.03


@pytest.mark.parametrize("cls, kwargs", [(layers.GaussianNoise, {"stddev": 0.3}),
                                         (layers.GaussianDropout, {"rate": 0.3})])
def test_noise_layers_repeat_under_set_random_seed(cls, kwargs):
    x = inputs((4, 5))
    keras.utils.set_random_seed(7)
    first = np.asarray(cls(**kwargs)(x, training=True))
    keras.utils.set_random_seed(7)
    assert np.array_equal(np.asarray(cls(**kwargs)(x, training=True)), first)
    seeded = [np.asarray(cls(**kwargs, seed=5)(x, training=True)) for _ in range(2)]
    assert np.array_equal(*seeded)


@pytest.mark.parametrize("cls, kwargs", [(layers.GaussianNoise, {"stddev": 0.3}),
                                         (layers.GaussianDropout, {"rate": 0.3})])
def test_noise_gradient_flows_through_the_draw(cls, kwargs):
    x = keras.ops.convert_to_tensor(inputs((3, 4)) + np.float32(2))
    x.requires_grad = True
    out = cls(**kwargs, seed=1)(x, training=True)
    mf.sum(out).backward()
    want = np.ones((3, 4), np.float32) if cls is layers.GaussianNoise else out.float32() / x.float32()
    np.testing.assert_allclose(x.grad.float32(), want, rtol=1e-6)


@pytest.mark.parametrize("make", [layers.Identity, lambda: layers.GaussianNoise(0.1),
                                  lambda: layers.GaussianDropout(0.1)])
def test_masks_pass_through(make):
    x = np.array([[[1.0], [0.0], [2.0]]], np.float32)
    model = keras.Sequential([keras.Input((3, 1)), layers.Masking(0.0), make()])
    assert np.array_equal(np.asarray(model.layers[-1].compute_mask(x, np.array([[True, False, True]]))),
                          [[True, False, True]])
    assert make().supports_masking

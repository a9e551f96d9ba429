"""Keras 3's Attention, AdditiveAttention, Dot, Conv1DTranspose, Conv3D, Conv3DTranspose, the 3-D pooling and
reshaping layers, UnitNormalization, SpatialDropout1D/2D/3D and ActivityRegularization against real Keras on
torch (tests/fixtures/keras/layers_c.json and tests/fixtures/keras/weights/layers_c_*.weights.h5, recorded by
tools/record_keras_layers_c.py, whose formulas and models these tests run)."""
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp as mf
from minifp import keras
from minifp.keras import layers

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_keras_layers_c import (MODELS, call_arguments, cotangent, input_values, layer_inputs,  # noqa: E402
                                   weight_values)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "keras"
FIXTURE = json.loads((FIXTURES / "layers_c.json").read_text(encoding="utf-8"))
LISTS = ("Attention", "AdditiveAttention", "Dot")


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _id(case):
    return f"{case['layer']}-{json.dumps(case['kwargs'], sort_keys=True)}-{json.dumps(case.get('call', {}))}" + \
        f"-{case.get('shapes', '')}"


def _same_bits(got, want):
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.int32), want.view(np.int32))


# Values only move (padding, cropping, repeats, maxima, channel drops at inference): the bits.
EXACT = ("MaxPooling3D", "GlobalMaxPooling3D", "UpSampling3D", "ZeroPadding3D", "Cropping3D", "SpatialDropout1D",
         "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization")


def _atol(case, want, grad=False):
    """0 where values only move (the gradients of repeats excepted: sums of cotangents in torch's order).
    Elsewhere torch's float32 kernels sum in orders of their own (conv3d, the transposed convolutions, bmm, the
    3-D average pooling and the global mean) and its CPU tanh and exp are not always correctly rounded: within 4
    float32 ulps of the largest magnitude recorded (measured: at most 2.4, a Conv3D gradient). Masked scores lose
    1e9, so their softmax weights are exactly 0 in both."""
    if case["layer"] in EXACT and not (grad and case["layer"] == "UpSampling3D"):
        return 0.0
    return 4 * 2.0 ** -23 * max(float(np.abs(want).max()), 1.0)


def _build(case):
    layer = getattr(layers, case["layer"])(**case["kwargs"])
    shapes = [tuple(s) for s in case["shapes"]]
    layer.build(shapes if case["layer"] in LISTS else shapes[0])
    for i, w in enumerate(layer.weights):
        w.assign(weight_values(w.shape, i))
    return layer


def _listed(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=_id)
def test_layer_does_what_keras_does(case):
    layer = _build(case)
    assert [[w.name, list(w.shape)] for w in layer.weights] == case["weights"]
    xs = [keras.ops.convert_to_tensor(v) for v in input_values(case["shapes"])]
    for x in xs:
        x.requires_grad = True
    outs = _listed(layer(layer_inputs(xs, case["layer"]), **call_arguments(case["call"])))
    assert len(outs) == len(case["outs"])
    for got, want in zip(outs, case["outs"]):
        want = np.asarray(want, np.float32)
        if _atol(case, want):
            assert got.shape == want.shape
            np.testing.assert_allclose(got.float32(), want, rtol=0, atol=_atol(case, want))
        else:
            _same_bits(got.float32(), want)
    loss = mf.sum(outs[0] * mf.tensor(cotangent(outs[0].shape, 0)))
    for j, o in enumerate(outs[1:], 1):
        loss = loss + mf.sum(o * mf.tensor(cotangent(o.shape, j)))
    loss.backward()
    assert len(xs) + len(layer.trainable_weights) == len(case["grads"])
    for got, want in zip(xs + list(layer.trainable_weights), case["grads"]):
        want = np.asarray(want, np.float32)
        np.testing.assert_allclose(got.grad.float32(), want, rtol=0, atol=_atol(case, want, grad=True))
    assert [float(v.float32()) for v in layer.losses] == pytest.approx(case["losses"], rel=1e-6)


def _short(value):
    """A serialized initializer as minifp writes it: class_name and seed (Keras adds module, registered_name and
    GlorotUniform's input_axes/output_axes, None here)."""
    if isinstance(value, dict) and "class_name" in value:
        return {"class_name": value["class_name"], "config": {k: v for k, v in value["config"].items()
                                                              if k not in ("input_axes", "output_axes")}}
    return value


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=_id)
def test_config_and_symbolic_shapes_are_keras(case):
    layer = getattr(layers, case["layer"])(**case["kwargs"])
    config = json.loads(json.dumps({k: v for k, v in layer.get_config().items() if k not in ("dtype", "name")}))
    assert config == {k: _short(v) for k, v in case["config"].items() if k != "name"}
    assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()
    inputs = [keras.Input(tuple(s[1:])) for s in case["shapes"]]
    call = {k: v for k, v in case["call"].items() if k != "mask"}
    symbolic = _listed(getattr(layers, case["layer"])(**case["kwargs"])(layer_inputs(inputs, case["layer"]), **call))
    assert [list(t.shape) for t in symbolic] == case["symbolic_shapes"]


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return [type(info.value).__name__, str(info.value).splitlines()[0]]


def _plain(message):
    """A message without what differs by design: the layer's auto name (the order the tests run in), torch's
    shape repr (torch.Size([2, 5, 3]) where minifp writes (2, 5, 3)) and tensors' reprs in a message."""
    message = re.sub(r"""layer ['"]\w+['"]""", "layer", message)
    message = re.sub(r"inputs=\[.*$", "inputs=[...]", message)
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)", r"(\1)", message)


@pytest.mark.parametrize("case", FIXTURE["errors"], ids=_id)
def test_bad_arguments_get_keras_errors(case):
    assert _error(lambda: getattr(layers, case["layer"])(**case["kwargs"])) == case["error"]


@pytest.mark.parametrize("case", FIXTURE["call_errors"], ids=_id)
def test_bad_inputs_get_keras_errors(case):
    layer = getattr(layers, case["layer"])(**case["kwargs"])
    values = [keras.ops.convert_to_tensor(v) for v in input_values(case["shapes"])]
    kind, message = _error(lambda: layer(layer_inputs(values, case["layer"]), **call_arguments(case["call"])))
    assert [kind, _plain(message)] == [case["error"][0], _plain(case["error"][1])]


@pytest.mark.parametrize("case", FIXTURE["symbolic_errors"], ids=_id)
def test_bad_symbolic_inputs_get_keras_errors(case):
    layer = getattr(layers, case["layer"])(**case["kwargs"])
    inputs = [keras.Input(tuple(s)) for s in case["shapes"]]
    kind, message = _error(lambda: layer(layer_inputs(inputs, case["layer"])))
    assert [kind, _plain(message)] == [case["error"][0], _plain(case["error"][1])]


def _printed(model):
    lines = []
    model.summary(line_length=88, print_fn=lines.append)
    return "\n".join(lines)


@pytest.mark.parametrize("name, build, shapes", MODELS, ids=[m[0] for m in MODELS])
def test_models_summary_and_keras_weights_files(name, build, shapes, tmp_path):
    want = FIXTURE["models"][name]
    model = build(keras)
    assert _printed(model).strip() == want["summary"].strip()
    assert [w.path for w in model.weights] == want["paths"]     # a Sequential's under its name: "sequential/..."
    model.load_weights(str(FIXTURES / "weights" / f"layers_c_{name}.weights.h5"))     # Keras wrote these
    for i, w in enumerate(model.weights):
        assert np.array_equal(w.numpy(), weight_values(w.shape, i))
    xs = input_values(shapes)
    got = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want["predict"], np.float32), rtol=0,
                               atol=1e-5)
    model.save_weights(str(tmp_path / "again.weights.h5"))     # and what minifp writes, Keras's layout, reads back
    keras.backend.clear_session()
    again = build(keras)
    again.load_weights(str(tmp_path / "again.weights.h5"))
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(again.weights, model.weights))


@pytest.mark.parametrize("make, shape, kept", [
    (lambda: layers.SpatialDropout1D(0.5, seed=1), (4, 30, 8), lambda m: m[:, :1]),
    (lambda: layers.SpatialDropout2D(0.5, seed=1), (4, 5, 6, 8), lambda m: m[:, :1, :1]),
    (lambda: layers.SpatialDropout2D(0.5, data_format="channels_first", seed=1), (4, 8, 5, 6),
     lambda m: m[:, :, :1, :1]),
    (lambda: layers.SpatialDropout3D(0.5, seed=1), (4, 2, 3, 4, 8), lambda m: m[:, :1, :1, :1])])
def test_spatial_dropout_drops_whole_channels_while_training(make, shape, kept):
    x = np.ones(shape, np.float32)
    layer = make()
    assert np.array_equal(np.asarray(layer(x)), x)          # the identity at inference
    out = np.asarray(layer(x, training=True))
    assert set(np.unique(out)) <= {0.0, 2.0}                 # kept values scaled by 1 / (1 - rate)
    assert np.array_equal(out, np.broadcast_to(kept(out), shape))      # one draw per sample and channel
    assert 0 < (out == 0).mean() < 1
    assert not np.array_equal(out, np.asarray(layer(x, training=True)))     # the seed generator advances


def test_attention_dropout_drops_weights_only_while_training():
    q, v = input_values([(2, 3, 4), (2, 5, 4)])
    layer = layers.Attention(dropout=0.5, seed=2)
    _, plain = layer([q, v], return_attention_scores=True)
    _, dropped = layer([q, v], return_attention_scores=True, training=True)
    plain, dropped = np.asarray(plain), np.asarray(dropped)
    kept = dropped != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(dropped[kept], plain[kept] * 2, rtol=1e-6)


def test_activity_regularization_adds_its_loss_to_fit():
    x = input_values([(4, 3)])[0]
    model = keras.Sequential([keras.Input((3,)), layers.ActivityRegularization(l1=0.5, l2=0.25)])
    model(x)
    want = (0.5 * np.abs(x).sum() + 0.25 * (x.astype(np.float64) ** 2).sum()) / 4
    assert [float(v.float32()) for v in model.losses] == pytest.approx([want], rel=1e-6)
    assert "activity_regularizer" not in layers.ActivityRegularization(0.1).get_config()


def test_attention_mask_propagates_from_masking_layers():
    q = np.array([[[1.0], [0.0], [2.0]]], np.float32)
    v = np.array([[[1.0], [3.0], [0.0], [0.0]]], np.float32)
    query, value = keras.Input((3, 1)), keras.Input((4, 1))
    out = layers.Attention()([layers.Masking(0.0)(query), layers.Masking(0.0)(value)])
    got = np.asarray(keras.Model([query, value], out).predict([q, v], verbose=0))
    scores = q[0] @ v[0].T                                  # value steps 2 and 3 are masked, query step 1 zeroed
    weights = np.exp(scores[:, :2] - scores[:, :2].max(-1, keepdims=True))
    want = (weights / weights.sum(-1, keepdims=True)) @ v[0, :2]
    want[1] = 0
    np.testing.assert_allclose(got[0], want, rtol=1e-6)


def test_dot_functional_form_and_cosine_proximity():
    a, b = input_values([(2, 4), (2, 4)])
    got = np.asarray(layers.dot([a, b], axes=1, normalize=True))
    want = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-6)


@pytest.mark.parametrize("make, shapes", [
    (lambda: layers.Attention(use_scale=True), [(2, 3, 4), (2, 5, 4)]),
    (lambda: layers.AdditiveAttention(), [(2, 3, 4), (2, 5, 4)]),
    (lambda: layers.Conv3D(2, 2, padding="same"), [(1, 3, 4, 4, 2)]),
    (lambda: layers.Conv3DTranspose(2, 2, strides=2), [(1, 2, 2, 2, 2)]),
    (lambda: layers.Conv1DTranspose(2, 3, strides=2), [(2, 5, 3)]),
    (lambda: layers.AveragePooling3D(2), [(1, 4, 4, 4, 2)]),
    (lambda: layers.UnitNormalization(), [(2, 3, 4)])])
def test_mixed_float16_computes_in_float16(make, shapes):
    """Under mixed_float16 the outputs are float16 and near the float32 layer's (same weights)."""
    values = input_values(shapes)
    wide = make()
    want = np.asarray(wide(values if len(values) > 1 else values[0]), np.float32)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        half = make()
        half.build([v.shape for v in values] if len(values) > 1 else values[0].shape)
        half.set_weights(wide.get_weights())
        got = half(values if len(values) > 1 else values[0])
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert str(got.dtype) == "float16"
    np.testing.assert_allclose(got.float32(), want, rtol=0, atol=2e-2 * max(1.0, float(np.abs(want).max())))


def test_functional_attention_model_trains():
    """fit reaches every weight through Attention, AdditiveAttention, Dot, Conv1DTranspose and SpatialDropout1D."""
    name, build, shapes = MODELS[1]
    model = build(keras)
    model.compile(optimizer="sgd", loss="mse")
    before = [w.numpy().copy() for w in model.trainable_weights]
    history = model.fit(input_values(shapes), np.ones((2, 2), np.float32), epochs=2, batch_size=2, verbose=0)
    assert all(np.isfinite(history.history["loss"]))
    assert all(not np.array_equal(b, w.numpy()) for b, w in zip(before, model.trainable_weights))

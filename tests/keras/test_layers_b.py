"""Keras 3's recurrent and preprocessing layers against real Keras (tests/fixtures/keras/layers_b.json, recorded by
tools/record_keras_layers_b.py): configs, weights, outputs, gradients, vocabularies; random layers' behaviour."""
import json
import pathlib

import numpy as np
import pytest

import minifp as mf
from minifp import keras
from minifp.keras import layers

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "layers_b.json")
                     .read_text())
# float32: 1e-5 relative, 1e-6 absolute; the mixed policies: within the half format's own tolerance
TOLERANCE = {"float32": (1e-5, 1e-6), "float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2)}


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def wave(shape, k, scale=0.1, freq=0.37, offset=0.0):
    """tools/record_keras.py's wave(): offset + scale * sin(freq * i + k), float64 rounded once to float32."""
    i = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.float64)
    return (offset + scale * np.sin(freq * i + k)).astype(np.float32).reshape(shape)


def _leaf(array):
    """A minifp.keras tensor that collects its gradient."""
    t = keras.ops.convert_to_tensor(array)
    t.requires_grad = True
    return t


def _array(values):
    return np.asarray(values, dtype=np.float32)


def _make(case):
    cls = getattr(layers, case["class"])
    if case["inner"] is None:
        return cls(**case["kwargs"])
    inner_cls, inner_kwargs = case["inner"]
    if inner_cls == "cells":            # RNN over stacked cells
        return cls([getattr(layers, c)(**k) for c, k in inner_kwargs], **case["kwargs"])
    return cls(getattr(layers, inner_cls)(**inner_kwargs), **case["kwargs"])


def _flat(x):
    return [y for item in x for y in _flat(item)] if isinstance(x, (list, tuple)) else [x]


def _config_subset(config):
    """The parts of a config that minifp writes as Keras does (not the serialized dtype / initializer objects)."""
    out = {}
    for k, v in config.items():
        if k in ("name", "dtype", "build_config") or k.endswith("initializer"):
            continue
        out[k] = _config_subset(v) if isinstance(v, dict) else [_config_subset(c) if isinstance(c, dict) else c
                                                                for c in v] if isinstance(v, list) else v
    return out


def _case_id(case):
    inner = f"({case['inner'][0]})" if case["inner"] else ""
    if case["inner"] and case["inner"][0] == "cells":
        inner = "(" + ",".join(c for c, _ in case["inner"][1]) + ")"
    return f"{case['class']}{inner}-" + "-".join(f"{k}={v}" for k, v in {**case["kwargs"], **case["call"]}.items()
                                                  if k != "mask") + ("-mask" if "mask" in case["call"] else "")


@pytest.mark.parametrize("case", FIXTURE["rnn"], ids=_case_id)
def test_recurrent_layers_match_keras(case):
    layer = _make(case)
    shape = tuple(case["shape"])
    x = _leaf(wave(shape, 1, 1.0, 0.53))
    call = {}
    if "mask" in case["call"]:
        call["mask"] = np.array(case["call"]["mask"])
    states = [_leaf(wave((shape[0], case["kwargs"]["units"]), 50 + j, 0.5, 0.37))
              for j in range(case["call"].get("initial_state", 0))]
    if states:
        call["initial_state"] = states
    layer(x, **call)
    assert [(w.shape) for w in layer.weights] == [tuple(w["shape"]) for w in case["weights"]]
    assert [w.path.split("/")[-1] for w in layer.weights] == [w["path"].split("/")[-1] for w in case["weights"]]
    layer.set_weights([wave(tuple(w.shape), 100 + i, 0.5, 0.71) for i, w in enumerate(layer.weights)])
    out = layer(x, **call)
    outs = _flat(out)
    assert len(outs) == len(case["outputs"])
    loss = None
    for j, (o, want) in enumerate(zip(outs, case["outputs"])):
        assert (str(o.dtype), o.shape) == (want["dtype"], tuple(want["shape"]))
        rtol, atol = TOLERANCE[want["dtype"]]
        np.testing.assert_allclose(o.float32(), _array(want["values"]), rtol=rtol, atol=atol)
        term = mf.sum(o.astype(mf.float32) * mf.tensor(wave(o.shape, 7 + j, 1.0, 0.29)))
        loss = term if loss is None else loss + term
    loss.backward()
    rtol, atol = TOLERANCE[case["outputs"][0]["dtype"]]
    np.testing.assert_allclose(x.grad.float32(), _array(case["grad_input"]), rtol=rtol, atol=atol * 10)
    for s, want in zip(states, case["grad_states"]):
        np.testing.assert_allclose(s.grad.float32(), _array(want), rtol=rtol, atol=atol * 10)
    for w, want in zip(layer.trainable_weights, case["grad_weights"]):
        np.testing.assert_allclose(w.grad.float32(), _array(want), rtol=rtol, atol=atol * 10, err_msg=w.path)
    config, want = layer.get_config(), case["config"]
    if case["class"] == "TimeDistributed":      # the wrapped Dense's config is Dense's business
        config, want = dict(config, layer=config["layer"]["class_name"]), dict(want, layer=want["layer"]["class_name"])
    assert _config_subset(config) == _config_subset(want)


def _image_id(case):
    return f"{case['class']}-" + "-".join(f"{k}={v}" for k, v in case["kwargs"].items()) + f"-{case['shape']}"


@pytest.mark.parametrize("case", FIXTURE["images"], ids=_image_id)
def test_image_layers_match_keras(case):
    layer = getattr(layers, case["class"])(**case["kwargs"])
    if case["call"].get("uint8"):
        x = np.round(wave(tuple(case["shape"]), 1, 127.5, 0.53, 127.5)).astype(np.uint8)
        out, want = layer(x), case["output"]
        assert (str(out.dtype), out.shape) == (want["dtype"], tuple(want["shape"]))
        np.testing.assert_allclose(out.numpy(), np.asarray(want["values"]), rtol=1e-7, atol=0)
        return
    x = _leaf(wave(tuple(case["shape"]), 1, 1.0, 0.53))
    out = layer(x, **case["call"])
    want = case["output"]
    assert (str(out.dtype), out.shape) == (want["dtype"], tuple(want["shape"]))
    rtol, atol = TOLERANCE[want["dtype"]]
    np.testing.assert_allclose(out.float32(), _array(want["values"]), rtol=rtol, atol=atol)
    mf.sum(out.astype(mf.float32) * mf.tensor(wave(out.shape, 7, 1.0, 0.29))).backward()
    if case["grad_input"] is not None:
        np.testing.assert_allclose(x.grad.float32(), _array(case["grad_input"]), rtol=rtol, atol=atol * 10)
    assert _config_subset(layer.get_config()) == _config_subset(
        {**case["config"], **({"factor": tuple(case["config"]["factor"])} if "factor" in case["config"] else {})})


def _text_id(case):
    return f"{case['class']}-" + "-".join(f"{k}={v}" for k, v in case["kwargs"].items() if k != "vocabulary") + (
        "-adapt" if case["adapt"] is not None else "-vocabulary")


@pytest.mark.parametrize("case", FIXTURE["text"], ids=_text_id)
def test_text_layers_match_keras(case):
    kwargs = {k: tuple(v) if k == "ngrams" and isinstance(v, list) else v for k, v in case["kwargs"].items()}
    layer = getattr(layers, case["class"])(**kwargs)
    if case["adapt"] is not None:
        layer.adapt(case["adapt"])
    assert layer.get_vocabulary() == case["vocabulary"]
    assert layer.vocabulary_size() == case["vocabulary_size"]
    for x, want in zip(case["inputs"], case["outputs"]):
        out = layer(np.array(x))
        if want["dtype"] == "string":
            assert isinstance(out, np.ndarray) and out.tolist() == want["values"]
        elif want["dtype"] == "float32":                  # tf_idf: count * weight, one float32 product
            assert str(out.dtype) == "float32"
            np.testing.assert_array_equal(out.numpy(), _array(want["values"]))
        else:
            assert str(out.dtype) == want["dtype"]
            assert out.numpy().tolist() == want["values"]
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in layer.get_config().items()}
    want = case["config"]
    assert {k: v for k, v in config.items() if k not in ("name", "dtype")} == {
        k: v for k, v in want.items() if k not in ("name", "dtype")}


# -- behaviour beyond the fixtures ------------------------------------------------------------


def _images(n=8):
    return (np.arange(n * 3 * 4 * 2, dtype=np.float32).reshape(n, 3, 4, 2) % 7) - 3.0


@pytest.mark.parametrize("mode, flip", [("horizontal", lambda x: x[:, :, ::-1]), ("vertical", lambda x: x[:, ::-1]),
                                        ("horizontal_and_vertical", lambda x: x[:, ::-1, ::-1])])
def test_random_flip_flips_exactly_some_images_while_training(mode, flip):
    x = _images(16)
    out = layers.RandomFlip(mode, seed=5)(x).numpy()
    flipped = [np.array_equal(o, f) for o, f in zip(out, flip(x))]
    kept = [np.array_equal(o, i) for o, i in zip(out, x)]
    assert all(a or b for a, b in zip(flipped, kept)) and any(flipped) and any(kept)


def test_random_layers_are_the_identity_at_inference():
    x = _images()
    for layer in (layers.RandomFlip(seed=1), layers.RandomRotation(0.3, seed=1)):
        out = layer(x, training=False)
        assert out.shape == x.shape and str(out.dtype) == "float32" and np.array_equal(out.numpy(), x)
    model = keras.Sequential([keras.Input((3, 4, 2)), layers.RandomFlip(seed=2), layers.RandomRotation(0.4)])
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)


def test_random_layers_with_a_seed_repeat_their_stream():
    x = _images()
    for make in (lambda: layers.RandomFlip(seed=7), lambda: layers.RandomRotation(0.2, seed=7)):
        a, b = make(), make()
        first, second = a(x).numpy(), a(x).numpy()
        assert np.array_equal(first, b(x).numpy()) and np.array_equal(second, b(x).numpy())
        assert not np.array_equal(first, second)            # the stream moves on between calls


def test_random_rotation_half_turn_is_both_flips_and_keeps_shapes():
    x = _images()
    out = layers.RandomRotation((0.5, 0.5))(x)
    np.testing.assert_allclose(out.numpy(), x[:, ::-1, ::-1], atol=1e-5)
    single = layers.RandomRotation(0.1, seed=3)(x[0])
    assert single.shape == x[0].shape
    assert layers.RandomRotation(0.2).factor == (-0.2, 0.2)
    with pytest.raises(ValueError, match="factor"):
        layers.RandomRotation(1.5)
    with pytest.raises(NotImplementedError, match="fill_mode"):
        layers.RandomRotation(0.1, fill_mode="mirror")


def test_random_flip_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="unknown mode argument"):
        layers.RandomFlip("diagonal")


def test_recurrent_dropout_only_while_training_and_fixed_over_time():
    x = wave((4, 6, 5), 1, 1.0, 0.53)
    plain, dropped = layers.LSTM(3, return_sequences=True), layers.LSTM(3, return_sequences=True, dropout=0.5,
                                                                          recurrent_dropout=0.3, seed=1)
    plain(x), dropped(x)
    dropped.set_weights(plain.get_weights())
    np.testing.assert_array_equal(dropped(x).numpy(), plain(x).numpy())          # inference: no dropout
    assert not np.allclose(dropped(x, training=True).numpy(), plain(x).numpy())
    assert layers.GRU(2, dropout=0.25).get_config()["dropout"] == 0.25


def test_recurrent_layers_in_a_model_train():
    mf.manual_seed(0)
    model = keras.Sequential([keras.Input((5, 4)), layers.Bidirectional(layers.GRU(3, return_sequences=True)),
                              layers.LSTM(2), layers.Dense(1)])
    assert model.output_shape == (None, 1)
    x, y = wave((8, 5, 4), 1, 1.0, 0.53), wave((8, 1), 2, 1.0, 0.3)
    model.compile(optimizer="sgd", loss="mse")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    assert [w.shape for w in model.layers[1].weights] == [(6, 8), (2, 8), (8,)]


def test_recurrent_layers_errors():
    with pytest.raises(ValueError, match="units"):
        layers.LSTM(0)
    with pytest.raises(ValueError, match="Invalid merge mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="expected ndim=3"):
        layers.GRU(2)(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="same value for attribute"):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2, go_backwards=True, return_sequences=True))


def test_text_vectorization_callables_get_numpy_strings():
    layer = layers.TextVectorization(standardize=lambda x: np.char.upper(x), split=lambda s: s.split("-"))
    layer.adapt(["a-b", "b-c", "b"])
    assert layer.get_vocabulary() == ["", "[UNK]", "B", "C", "A"]
    assert layer(["c-a", "b-z"]).numpy().tolist() == [[3, 4], [2, 1]]


def test_lookup_errors():
    with pytest.raises(ValueError, match="found OOV values"):
        layers.StringLookup(vocabulary=["a"], num_oov_indices=0)(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="must be `'int'` when `invert` is true"):
        layers.StringLookup(invert=True, output_mode="multi_hot")
    with pytest.raises(ValueError, match="repeated term"):
        layers.IntegerLookup(vocabulary=[1, 2, 1])
    with pytest.raises(ValueError, match="larger than the maximum vocab size"):
        layers.StringLookup(vocabulary=["a", "b", "c"], max_tokens=3)
    with pytest.raises(ValueError, match="Cannot adapt layer"):
        layers.StringLookup(vocabulary=["a"]).adapt(["a", "b"])
    with pytest.raises(ValueError, match="`idf_weights` argument must also be provided"):
        layers.StringLookup(vocabulary=["a"], output_mode="tf_idf")


def test_tf_keras_layers_are_the_same_classes():
    from minifp.tf.keras import layers as tf_layers
    for name in ("SimpleRNN", "LSTM", "GRU", "Bidirectional", "TimeDistributed", "Rescaling", "Resizing", "RandomFlip",
                 "RandomRotation", "TextVectorization", "StringLookup", "IntegerLookup"):
        assert getattr(tf_layers, name) is getattr(layers, name)


@pytest.mark.parametrize("make", [lambda: layers.LSTM(3, return_sequences=True, go_backwards=True),
                                  lambda: layers.GRU(2, reset_after=False, use_bias=False),
                                  lambda: layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode="sum"),
                                  lambda: layers.TimeDistributed(layers.Dense(2)),
                                  lambda: layers.Resizing(3, 4, crop_to_aspect_ratio=True),
                                  lambda: layers.StringLookup(vocabulary=["a", "b"], mask_token="")])
def test_configs_rebuild_the_layer(make):
    layer = make()
    again = layers.deserialize(layers.serialize(layer))
    assert type(again) is type(layer)
    assert _config_subset(again.get_config()) == _config_subset(layer.get_config())


@pytest.mark.parametrize("cls", [layers.SimpleRNN, layers.LSTM, layers.GRU])
def test_stateful_layers_carry_their_states_between_calls(cls):
    x = wave((2, 6, 3), 1, 1.0, 0.53)
    stateful, whole = cls(4, stateful=True), cls(4)
    stateful(x[:, :3]), whole(x)
    whole.set_weights(stateful.get_weights())
    stateful.reset_states()
    stateful(x[:, :3])
    np.testing.assert_allclose(stateful(x[:, 3:]).numpy(), whole(x).numpy(), rtol=1e-6, atol=1e-7)
    assert len(stateful.weights) == len(whole.weights) and all(not s.requires_grad for s in stateful.states)
    stateful.reset_states()
    assert all(np.array_equal(s.numpy(), np.zeros((2, 4), np.float32)) for s in stateful.states)
    with pytest.raises(ValueError, match="batch size must be static"):
        keras.Sequential([keras.Input((6, 3)), cls(4, stateful=True)])
    with pytest.raises(ValueError, match="Expected batch size: 2"):
        stateful(np.zeros((3, 6, 3), np.float32))


def test_rnn_runs_a_users_cell():
    class MinimalRNNCell(layers.Layer):
        """Keras's documentation example: output = inputs @ kernel + state @ recurrent_kernel."""

        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units, self.state_size = units, units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones", name="kernel")
            self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), initializer="identity",
                                                    name="recurrent_kernel")

        def call(self, inputs, states):
            output = keras.ops.matmul(inputs, self.kernel) + keras.ops.matmul(states[0], self.recurrent_kernel)
            return output, [output]

    x = np.ones((2, 4, 3), np.float32)
    out = layers.RNN(MinimalRNNCell(2), return_sequences=True)(x)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(3.0 * np.arange(1, 5)[None, :, None], (2, 4, 2)))


def test_recurrent_weights_load_from_a_keras_file_and_save_back(tmp_path):
    case = FIXTURE["rnn_model"]
    make = lambda: keras.Sequential([keras.Input((5, 4)), layers.LSTM(3, return_sequences=True),
                                     layers.Bidirectional(layers.GRU(2, return_sequences=True)),
                                     layers.TimeDistributed(layers.Dense(3)), layers.SimpleRNN(2)])
    model = make()
    model.load_weights(str(pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras" / case["file"]))
    x = wave((2, 5, 4), 1, 1.0, 0.53)
    np.testing.assert_allclose(model(x).numpy(), _array(case["predictions"]), rtol=1e-5, atol=1e-6)
    assert [w.shape for w in model.weights] == [tuple(w["shape"]) for w in case["weights"]]
    model.save_weights(str(tmp_path / "again.weights.h5"))
    again = make()
    again.load_weights(str(tmp_path / "again.weights.h5"))
    np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())

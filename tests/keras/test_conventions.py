"""Keras 3's calling conventions (training=, masks), added losses and weights, out-of-range axes and missing names,
against tests/fixtures/keras/conventions.json (tools/record_keras_conventions.py, real Keras 3.15)."""
import json
import pathlib

import numpy as np
import pytest

from minifp import keras
from minifp.keras import layers, ops

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras" /
                      "conventions.json").read_text())


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


class Seen(layers.Layer):
    """Records what its call receives."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.seen = []

    def call(self, x, training=None, mask=None):
        self.seen.append({"training": training, "mask": None if mask is None else np.asarray(mask).tolist()})
        return x


class Plain(keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(2, kernel_initializer="ones")

    def call(self, x):
        return self.dense(x)


class NoMask(layers.Layer):
    def call(self, x):
        return x


# -- training= ---------------------------------------------------------------------------------------------------


def test_training_dropped_for_a_call_without_it():
    x = np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(Plain()(x, training=True), FIXTURE["training"]["plain_model_training_true"])


def test_training_reaches_a_call_that_names_it():
    x = np.ones((1, 3), np.float32)
    seen = Seen()
    seen(x)
    seen(x, training=True)
    seen(x, training=False)
    assert [s["training"] for s in seen.seen] == FIXTURE["training"]["seen_training"]


def test_training_passes_through_a_call_without_it_to_inner_layers():
    class Outer(keras.Model):
        def __init__(self):
            super().__init__()
            self.inner = Seen()

        def call(self, x):
            return self.inner(x)

    model = Outer()
    model(np.ones((1, 2), np.float32), training=True)
    model(np.ones((1, 2), np.float32))
    assert [s["training"] for s in model.inner.seen] == [True, None]


def test_explicit_mask_to_a_call_without_mask_is_refused_before_building():
    want = FIXTURE["training"]["explicit_mask_to_call_without_mask"]
    layer = NoMask()
    with pytest.raises(TypeError, match=want["message"]):
        layer(np.ones((1, 3), np.float32), mask=np.ones((1,), bool))
    assert not layer.built


# -- masks -------------------------------------------------------------------------------------------------------


def _embedding():
    return layers.Embedding(6, 2, mask_zero=True, embeddings_initializer="ones")


def test_embedding_mask_travels_through_masking_layers():
    f = FIXTURE["masks"]
    ids = np.array(f["ids"], np.int32)
    emb, seen = _embedding(), Seen()
    np.testing.assert_array_equal(emb.compute_mask(ids), f["embedding_compute_mask"])
    x = ids
    for layer in (emb, layers.Dense(2, kernel_initializer="ones"), layers.Dropout(0.5), layers.Activation("relu"),
                  layers.ReLU(), layers.LayerNormalization(), seen):
        x = layer(x)
    assert seen.seen[-1]["mask"] == f["mask_after_chain"]


def test_a_layer_without_masking_support_drops_the_mask_with_keras_warning():
    ids = np.array(FIXTURE["masks"]["ids"], np.int32)
    seen = Seen()
    with pytest.warns(UserWarning, match="does not support masking and will therefore destroy the mask"):
        seen(layers.Flatten()(_embedding()(ids)))
    assert seen.seen[-1]["mask"] is FIXTURE["masks"]["mask_after_flatten"]


def test_masking_layer_zeroes_and_masks_timesteps():
    f = FIXTURE["masks"]
    seen = Seen()
    out = layers.Masking(mask_value=0.0)(np.array(f["masking_values"], np.float32))
    seen(out)
    np.testing.assert_array_equal(out, f["masking_output"])
    assert seen.seen[-1]["mask"] == f["masking_mask"]


def test_explicit_mask_wins_over_the_attached_one():
    f = FIXTURE["masks"]
    seen = Seen()
    seen(_embedding()(np.array(f["ids"], np.int32)), mask=np.array(f["explicit_mask_wins"]))
    assert seen.seen[-1]["mask"] == f["explicit_mask_wins"]


def test_no_mask_no_argument():
    seen = Seen()
    seen(np.ones((1, 2), np.float32))
    assert seen.seen[-1]["mask"] is None


@pytest.mark.parametrize("name", sorted(FIXTURE["masks"]["supports_masking"]))
def test_supports_masking_as_keras(name):
    kwargs = {"Dense": {"units": 2}, "Dropout": {"rate": 0.5}, "Activation": {"activation": "relu"},
              "Reshape": {"target_shape": (2,)}, "Embedding": {"input_dim": 3, "output_dim": 2},
              "Lambda": {"function": lambda t: t}, "Conv2D": {"filters": 1, "kernel_size": 1}}.get(name, {})
    assert getattr(layers, name)(**kwargs).supports_masking is FIXTURE["masks"]["supports_masking"][name]


def test_add_ors_masks_and_concatenate_joins_them():
    a = keras.convert_to_tensor(np.ones((2, 3, 1), np.float32))
    m1, m2 = np.array([[1, 0, 0], [0, 1, 0]], bool), np.array([[0, 0, 1], [0, 1, 0]], bool)
    np.testing.assert_array_equal(layers.Add().compute_mask([a, a], [m1, m2]), m1 | m2)
    assert layers.Add().compute_mask([a, a], [m1, None]) is None
    joined = layers.Concatenate(axis=1).compute_mask([a, a], [m1, None])
    np.testing.assert_array_equal(joined, np.concatenate([m1, np.ones_like(m1)], axis=1))


# -- add_loss, losses, regularizers ------------------------------------------------------------------------------


class AddsLoss(layers.Layer):
    def call(self, x):
        self.add_loss(ops.sum(x))
        return x * 2.0


class Outer(keras.Model):
    def __init__(self):
        super().__init__()
        self.inner = AddsLoss()
        self.dense = layers.Dense(2, kernel_initializer="ones", kernel_regularizer=keras.regularizers.L2(0.01),
                                  bias_regularizer=keras.regularizers.L1(0.5), bias_initializer="ones")

    def call(self, x):
        self.add_loss(ops.mean(x))
        return self.dense(self.inner(x))


def _floats(ts):
    return [float(np.float32(t)) for t in ts]


def test_layer_losses_start_afresh_each_call():
    f = FIXTURE["losses"]
    x = np.array(f["x"], np.float32)
    layer = AddsLoss()
    layer(x)
    assert _floats(layer.losses) == f["layer_losses_first"]
    layer(x * 10)
    assert _floats(layer.losses) == f["layer_losses_second"]


def test_model_losses_collect_sublayers_and_regularizers():
    f = FIXTURE["losses"]
    x = np.array(f["x"], np.float32)
    model = Outer()
    model(x)
    assert _floats(model.losses) == pytest.approx(f["model_losses"], rel=1e-6)
    model(x)
    assert _floats(model.losses) == pytest.approx(f["model_losses_again"], rel=1e-6)


def test_fit_adds_the_added_losses():
    f = FIXTURE["losses"]
    model = Outer()
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
    history = model.fit(np.array(f["x"], np.float32), np.zeros((1, 2), np.float32), epochs=1, batch_size=1,
                        verbose=0)
    assert history.history["loss"][0] == pytest.approx(f["fit_loss"], rel=1e-6)


def test_add_loss_refuses_a_number():
    want = FIXTURE["losses"]["add_loss_float"]
    with pytest.raises(ValueError, match=want["message"].replace("(", r"\(").replace(")", r"\)")):
        layers.Layer().add_loss(1.0)


def test_add_weight_takes_every_keras_argument():
    want = FIXTURE["losses"]["add_weight"]
    layer = layers.Layer()
    v = layer.add_weight(shape=(2,), initializer="ones", dtype="float32", trainable=False, autocast=False,
                         regularizer=keras.regularizers.L2(0.5), constraint=lambda t: t, aggregation="mean",
                         overwrite_with_gradient=False, name="w")
    assert (v.name, v.path.split("/")[1], v.trainable, v.autocast, v.aggregation, str(v.dtype)) == (
        want["name"], want["path"].split("/")[1], want["trainable"], want["autocast"], want["aggregation"],
        want["dtype"])
    assert layer.losses == want["losses"] == []          # a non-trainable weight's regularizer adds nothing
    layer.add_weight(shape=(2,), initializer="ones", regularizer=keras.regularizers.L2(0.5), name="t")
    assert _floats(layer.losses) == FIXTURE["losses"]["add_weight_trainable_losses"]
    assert v.overwrite_with_gradient is False


def test_add_weight_positional_and_refusals():
    layer = layers.Layer()
    v = layer.add_weight((3,), "zeros", "float16")
    assert (v.shape, str(v.dtype)) == ((3,), "float16")
    want = FIXTURE["losses"]["add_weight_bad_aggregation"]
    n = len(layer.weights)
    with pytest.raises(ValueError, match=want["message"].replace("(", r"\(")[:60]):
        layer.add_weight(shape=(1,), aggregation="max")
    with pytest.raises(ValueError, match="`name` must be passed as a keyword argument"):
        layer.add_weight("kernel")
    with pytest.raises(ValueError, match="`shape` was passed both positionally and as a keyword argument"):
        layer.add_weight((1,), shape=(1,))
    assert len(layer.weights) == n


def test_activity_regularizer_divides_by_the_batch():
    layer = layers.Dense(1, kernel_initializer="ones", activity_regularizer=keras.regularizers.L1(0.5))
    layer(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert _floats(layer.losses) == [0.5 * (3.0 + 7.0) / 2]


def test_regularizers_refuse_negative_factors():
    with pytest.raises(ValueError, match="Invalid value for argument l2: expected a non-negative float"):
        keras.regularizers.L2(-1.0)
    with pytest.raises(ValueError, match="Could not interpret regularizer identifier: l3"):
        keras.regularizers.get("l3")


# -- out-of-range axes -------------------------------------------------------------------------------------------


AXIS_CASES = {
    "LayerNormalization_axis5": lambda x: layers.LayerNormalization(axis=5),
    "LayerNormalization_axis2": lambda x: layers.LayerNormalization(axis=2),
    "LayerNormalization_axis-3": lambda x: layers.LayerNormalization(axis=-3),
    "BatchNormalization_axis5": lambda x: layers.BatchNormalization(axis=5),
    "BatchNormalization_axis-3": lambda x: layers.BatchNormalization(axis=-3),
}


@pytest.mark.parametrize("case", sorted(AXIS_CASES))
def test_out_of_range_axis_refused_at_build(case):
    x = np.ones((2, 3), np.float32)
    layer = AXIS_CASES[case](x)
    # Keras 3's eager build fails on an IndexError (its indexing); its symbolic call and tf.keras raise ValueError
    assert FIXTURE["axis"][case]["type"] == "IndexError"
    axis = layer.axis
    with pytest.raises(ValueError, match=rf"Axis {axis} is out of bounds for input shape \(2, 3\)"):
        layer(x)
    assert not layer.built and layer.weights == []
    with pytest.raises(ValueError, match=rf"Axis {axis} is out of bounds for input shape \(None, 3\)"):
        AXIS_CASES[case](x)(keras.Input((3,)))


def test_concatenate_axis_out_of_range():
    want = FIXTURE["axis"]["Concatenate_axis5"]["message"]
    x = np.ones((2, 3), np.float32)
    text = "Expected concatenating dimensions in the range [-2, 2), but got 5"
    assert text in want
    with pytest.raises(ValueError, match=text.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        layers.Concatenate(axis=5)([x, x])


# -- missing names -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["minifp.keras", "minifp.keras.layers", "minifp.keras.ops", "minifp.keras.losses",
                                    "minifp.keras.optimizers", "minifp.keras.activations", "minifp.keras.callbacks",
                                    "minifp.keras.metrics", "minifp.keras.models", "minifp.keras.regularizers"])
def test_missing_name_points_to_the_coverage(module):
    import importlib
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError, match=r"NoSuchThing is not part of minifp's Keras face yet .*"
                                             r"docs/keras_coverage.md"):
        getattr(mod, "NoSuchThing")
    assert not hasattr(mod, "NoSuchThing")
    with pytest.raises(ImportError, match="NoSuchThing is not part of minifp's Keras face yet"):
        exec(f"from {module} import NoSuchThing", {})
    with pytest.raises(AttributeError, match="has no attribute '__wrapped__'$"):
        getattr(mod, "__wrapped__")


def test_masks_in_functional_and_sequential_models():
    class MaskedMean(layers.Layer):
        def __init__(self):
            super().__init__()
            self.supports_masking = True

        def compute_mask(self, inputs, previous_mask):
            return None

        def call(self, x, mask=None):
            keep = np.asarray(mask, np.float32)[..., None]
            return keras.convert_to_tensor((np.asarray(x) * keep).sum(1) / keep.sum(1))

    ids = np.array([[3, 1, 0, 0]], np.int32)
    inp = keras.Input((4,), dtype="int32")
    emb = layers.Embedding(6, 2, mask_zero=True, embeddings_initializer="ones")
    assert emb(inp)._keras_mask.shape == (None, 4)
    dense = layers.Dense(1, kernel_initializer="ones")
    model = keras.Model(inp, MaskedMean()(dense(emb(inp))))
    embeddings = np.arange(12, dtype=np.float32).reshape(6, 2)
    emb.set_weights([embeddings])
    np.testing.assert_array_equal(model(ids), [[((6.0 + 7.0) + (2.0 + 3.0)) / 2]])   # rows 3 and 1, not 0
    seq = keras.Sequential([keras.Input((4,), dtype="int32"), emb, dense, MaskedMean()])
    np.testing.assert_array_equal(seq(ids), [[9.0]])


@pytest.mark.parametrize("name", ["non_neg", "max_norm", "unit_norm", "min_max_norm"])
def test_constraints_as_keras(name):
    f = FIXTURE["losses"]["constraints"]
    make = {"non_neg": lambda: keras.constraints.get("non_neg"), "max_norm": lambda: keras.constraints.MaxNorm(2.0),
            "unit_norm": lambda: keras.constraints.UnitNorm(axis=1),
            "min_max_norm": lambda: keras.constraints.MinMaxNorm(0.5, 1.0, rate=0.5)}[name]
    out = np.asarray(make()(np.array(f["w"], np.float32)), np.float32)
    np.testing.assert_allclose(out, np.array(f[name], np.float32), rtol=1e-6)


def test_a_constraint_by_name_applies_after_each_update():
    v = layers.Layer().add_weight(shape=(1,), constraint="non_neg")
    assert isinstance(v.constraint, keras.constraints.NonNeg)
    with pytest.raises(ValueError, match="Could not interpret constraint identifier: positive"):
        layers.Layer().add_weight(shape=(1,), constraint="positive")
    layer = layers.Dense(1, kernel_initializer="ones", use_bias=False, kernel_constraint="non_neg")
    model = keras.Sequential([keras.Input((1,)), layer])
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    model.fit(np.ones((1, 1), np.float32), np.full((1, 1), -5.0, np.float32), epochs=1, verbose=0)
    assert layer.kernel.numpy().tolist() == [[0.0]]            # 1 - 12 projected onto >= 0


def test_global_average_pooling_1d_averages_the_unmasked_steps_after_a_masking_activation():
    inp = keras.Input((4,))
    hidden = keras.layers.LeakyReLU()(keras.layers.Embedding(10, 3, mask_zero=True)(inp))
    model = keras.Model(inp, keras.layers.GlobalAveragePooling1D()(hidden))
    model.set_weights([np.arange(30, dtype="float32").reshape(10, 3) / 10 - 1])
    # rows 1 and 2 (then 3 alone) through LeakyReLU(0.3), the padding zeros left out of the mean (Keras 3.15's values)
    expected = np.float32([[-0.165, -0.135, -0.105], [-0.03, 0.0, 0.1]])
    np.testing.assert_allclose(np.asarray(model(np.array([[1, 2, 0, 0], [3, 0, 0, 0]]))), expected, rtol=1e-6)

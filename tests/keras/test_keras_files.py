"""Whole-model `.keras` files: Keras 3's files load in minifp with Keras's predictions, minifp's files round-trip,
ModelCheckpoint writes them, and loading refuses code and unknown classes with Keras's errors.

The fixtures were written by real Keras 3 (tools/record_keras_saved_models.py); that Keras loads minifp's files
is checked by hand with tools/check_keras_saved_models.py (it needs Keras, which the tests never import).
"""
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("h5py")

import minifp.keras as keras  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "keras" / "saved_models"
RECORD = json.loads((FIXTURES / "predictions.json").read_text())
# Keras (torch backend) and minifp both compute in float32 but sum in different orders: a few ulps of the
# outputs, which are at most about 1 here; 1e-6 leaves room for that and catches any wrong weight or layer.
ATOL = 1e-6
# cnn.keras was compiled but never trained: its optimizer saved 2 variables (step, rate) where the built one has
# 6, so loading it warns and skips the optimizer's state, as Keras does (test_optimizer_state below).
pytestmark = pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")


def _inputs(name):
    xs = [np.array(x, dtype="float32") for x in RECORD["models"][name]["inputs"]]
    return xs if len(xs) > 1 else xs[0]


def _predict(model, x):
    return np.asarray(model.predict(x, verbose=0))


@pytest.mark.parametrize("name", ["sequential", "two_inputs", "cnn"])
def test_keras_files_load_with_keras_predictions(name):
    model = keras.models.load_model(FIXTURES / f"{name}.keras")
    want = np.array(RECORD["models"][name]["predictions"], dtype="float32")
    np.testing.assert_allclose(_predict(model, _inputs(name)), want, rtol=0, atol=ATOL)


def test_compile_config_is_restored():
    seq = keras.saving.load_model(FIXTURES / "sequential.keras")
    assert isinstance(seq.optimizer, keras.optimizers.Adam)
    assert float(np.asarray(seq.optimizer.learning_rate)) == pytest.approx(1e-3)
    assert seq.loss == "sparse_categorical_crossentropy"
    two = keras.models.load_model(FIXTURES / "two_inputs.keras")
    assert isinstance(two.optimizer, keras.optimizers.SGD) and two.loss == "mse"
    cnn = keras.models.load_model(FIXTURES / "cnn.keras")
    assert isinstance(cnn.optimizer, keras.optimizers.RMSprop)
    logs = seq.evaluate(_inputs("sequential"), np.array([0, 1, 2, 0]), verbose=0, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    assert not keras.models.load_model(FIXTURES / "cnn.keras", compile=False).compiled


@pytest.mark.filterwarnings("error")
def test_optimizer_state_round_trips(tmp_path):
    model = keras.models.load_model(FIXTURES / "sequential.keras")   # Keras trained it 2 steps
    assert int(np.asarray(model.optimizer.iterations)) == 2
    model.fit(_inputs("sequential"), np.array([0, 1, 2, 0]), epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    again = keras.models.load_model(tmp_path / "m.keras")
    assert int(np.asarray(again.optimizer.iterations)) == 3
    for a, b in zip(again.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_unbuilt_optimizer_state_is_skipped_with_keras_warning():
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer 'rm_sprop', because it has 6 "
                                         "variables whereas the saved optimizer has 2 variables"):
        keras.models.load_model(FIXTURES / "cnn.keras")


def test_metrics_objects_and_functions_round_trip(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss=keras.losses.categorical_crossentropy,
                  metrics=[keras.metrics.MeanAbsoluteError(), "accuracy", keras.metrics.mean_squared_error])
    x, y = np.ones((4, 4), "float32"), np.eye(3, dtype="float32")[[0, 1, 2, 0]]
    model.fit(x, y, verbose=0)
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as zf:
        compile_config = json.loads(zf.read("config.json"))["compile_config"]
    assert compile_config["loss"] == "categorical_crossentropy"
    assert compile_config["metrics"][1:] == ["accuracy", "mean_squared_error"]
    assert compile_config["metrics"][0]["class_name"] == "MeanAbsoluteError"
    again = keras.models.load_model(tmp_path / "m.keras")
    assert again.evaluate(x, y, verbose=0, return_dict=True) == model.evaluate(x, y, verbose=0, return_dict=True)


def test_functional_graph_is_rebuilt():
    model = keras.models.load_model(FIXTURES / "two_inputs.keras")
    assert [t.name for t in model.inputs] == ["a", "b"]
    assert [l.name for l in model.layers][-2:] == ["concatenate", "head"]


@pytest.mark.parametrize("name", ["sequential", "two_inputs", "cnn"])
def test_minifp_files_round_trip_exactly(tmp_path, name):
    model = keras.models.load_model(FIXTURES / f"{name}.keras")
    path = tmp_path / "m.keras"
    model.save(path)
    again = keras.models.load_model(path)
    np.testing.assert_array_equal(_predict(again, _inputs(name)), _predict(model, _inputs(name)))
    assert again.get_config() == model.get_config()
    assert type(again.optimizer) is type(model.optimizer)
    assert keras.losses.serialize(again.loss) == keras.losses.serialize(model.loss)


def test_saved_archive_is_keras_layout(tmp_path):
    model = keras.models.load_model(FIXTURES / "two_inputs.keras")
    keras.saving.save_model(model, tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as zf:
        assert set(zf.namelist()) == {"metadata.json", "config.json", "model.weights.h5"}
        config = json.loads(zf.read("config.json"))
        assert json.loads(zf.read("metadata.json"))["keras_version"].startswith("3.")
    assert {"module", "class_name", "config", "registered_name", "build_config", "compile_config"} <= set(config)
    assert config["class_name"] == "Functional"
    assert config["config"]["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert config["config"]["output_layers"] == ["head", 0, 0]       # one output: one triple, as Keras writes
    concat = next(l for l in config["config"]["layers"] if l["class_name"] == "Concatenate")
    histories = [t["config"]["keras_history"] for t in concat["inbound_nodes"][0]["args"][0]]
    assert histories[1] == ["b", 0, 0]
    dense = next(l for l in config["config"]["layers"] if l["class_name"] == "Dense")
    assert dense["config"]["dtype"]["class_name"] == "DTypePolicy"
    assert dense["config"]["kernel_initializer"]["module"] == "keras.initializers"


def test_sequential_built_in_minifp_round_trips(tmp_path):
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(2, 3, activation="relu"),
                              keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dropout(0.5),
                              keras.layers.BatchNormalization(), keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss=keras.losses.CategoricalCrossentropy(),
                  metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(4, 8, 8, 1)).astype("float32")
    model.fit(x, np.eye(3, dtype="float32")[[0, 1, 2, 0]], epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    again = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(_predict(again, x), _predict(model, x))
    assert isinstance(again.loss, keras.losses.CategoricalCrossentropy)
    assert float(np.asarray(again.optimizer.learning_rate)) == pytest.approx(2e-3)
    assert keras.Sequential.from_config(model.get_config()).get_config() == model.get_config()


def test_nested_models_and_shared_layers_round_trip(tmp_path):
    inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    a = keras.Input((2,))
    block = keras.Model(a, keras.layers.Dense(3)(a))
    model = keras.Sequential([keras.Input((4,)), inner, block, keras.layers.Dense(1)])
    p, q = keras.Input((4,)), keras.Input((4,))
    shared = keras.layers.Dense(3)             # called twice: two inbound nodes
    twice = keras.Model([p, q], keras.layers.Add()([shared(p), shared(q)]))
    x = np.random.default_rng(2).normal(size=(3, 4)).astype("float32")
    for m, xs in ((model, x), (twice, [x, 2 * x])):
        m.save(tmp_path / "m.keras")
        again = keras.models.load_model(tmp_path / "m.keras")
        np.testing.assert_array_equal(_predict(again, xs), _predict(m, xs))
    config = twice.get_config()
    assert len(next(l for l in config["layers"] if l["name"] == shared.name)["inbound_nodes"]) == 2


def test_mixed_precision_model_round_trips(tmp_path):
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(1, dtype="float32")])
        model.compile(optimizer="adam", loss="mse")
        model.fit(np.ones((4, 4), "float32"), np.ones((4, 1), "float32"), verbose=0)
        model.save(tmp_path / "m.keras")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    again = keras.models.load_model(tmp_path / "m.keras")
    assert again.layers[0].dtype_policy.name == "mixed_float16" and again.layers[1].dtype_policy.name == "float32"
    assert isinstance(again.optimizer, keras.optimizers.LossScaleOptimizer)
    x = np.random.default_rng(3).normal(size=(3, 4)).astype("float32")
    np.testing.assert_array_equal(_predict(again, x), _predict(model, x))


def _rewrite(src, dst, edit):
    """A copy of the archive src with its config.json changed by edit(config)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "config.json":
                config = json.loads(data)
                edit(config)
                data = json.dumps(config)
            zout.writestr(name, data)
    return dst


def test_lambda_is_refused_whatever_safe_mode(tmp_path):
    lam = {"module": "keras.layers", "class_name": "Lambda", "registered_name": None,
           "config": {"name": "lam", "function": {"class_name": "__lambda__", "config": {"value": ["4wEA", None]}}}}
    path = _rewrite(FIXTURES / "sequential.keras", tmp_path / "lam.keras",
                    lambda c: c["config"]["layers"].insert(2, lam))
    with pytest.raises(ValueError, match="Requested the deserialization of a Python lambda"):
        keras.models.load_model(path)
    with pytest.raises(ValueError, match="minifp never runs code from a file"):
        keras.models.load_model(path, safe_mode=False)


def test_unknown_class_is_keras_error_and_custom_objects_load(tmp_path):
    class MyDense(keras.layers.Dense):
        pass

    model = keras.Sequential([keras.Input((3,)), MyDense(2)])
    model.save(tmp_path / "m.keras")
    with pytest.raises(TypeError, match="Could not locate class 'MyDense'. Make sure custom classes"):
        keras.models.load_model(tmp_path / "m.keras")
    again = keras.models.load_model(tmp_path / "m.keras", custom_objects={"MyDense": MyDense})
    assert isinstance(again.layers[0], MyDense)


def test_custom_loss_needs_custom_objects(tmp_path):
    def my_loss(y_true, y_pred):
        return keras.ops.mean(keras.ops.square(y_true - y_pred))

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=my_loss)
    model.save(tmp_path / "m.keras")
    with pytest.raises(TypeError, match="Could not locate function 'my_loss'"):
        keras.models.load_model(tmp_path / "m.keras")
    assert keras.models.load_model(tmp_path / "m.keras", custom_objects={"my_loss": my_loss}).loss is my_loss
    assert not keras.models.load_model(tmp_path / "m.keras", compile=False).compiled


def test_filenames_and_atomic_save(tmp_path, monkeypatch):
    model = keras.models.load_model(FIXTURES / "sequential.keras")
    with pytest.raises(ValueError, match="Invalid filepath extension for saving"):
        model.save(tmp_path / "m.h5")
    with pytest.raises(ValueError, match="File format not supported"):
        keras.models.load_model(tmp_path / "m.h5")
    path = tmp_path / "m.keras"
    model.save(path)
    before = path.read_bytes()
    from minifp.keras import _h5weights as saving

    def fail(model, fileobj, extra=()):
        fileobj.write(b"partial")
        raise OSError("disk full")
    monkeypatch.setattr(saving, "write_weights", fail)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["m.keras"]


def test_subclassed_model_is_refused(tmp_path):
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    net = Net()
    net(np.zeros((1, 3), dtype="float32"))
    with pytest.raises(ValueError, match="subclassed model"):
        net.save(tmp_path / "m.keras")
    assert not (tmp_path / "m.keras").exists()


def test_model_checkpoint_saves_best_whole_model(tmp_path):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 1)).astype("float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    path = tmp_path / "best.keras"
    model.fit(x, y, validation_split=0.25, epochs=3, verbose=0,
              callbacks=[keras.callbacks.ModelCheckpoint(str(path), save_best_only=True)])
    best = keras.models.load_model(path)
    assert best.loss == "mse" and isinstance(best.optimizer, keras.optimizers.SGD)
    assert best.evaluate(x[24:], y[24:], verbose=0) == pytest.approx(min(model.history.history["val_loss"]),
                                                                      rel=1e-5)

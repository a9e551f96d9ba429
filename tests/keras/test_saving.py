"""Weights files in Keras 3's `.weights.h5` layout: round trips, Keras's own file, atomic saves, errors."""
import json
import os

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from minifp import keras  # noqa: E402
from minifp.keras import _h5weights, saving  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, "fixtures", "keras", "weights")


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()


def _mlp(units=(3, 2), inputs=4, dtype=None, seed=0):
    """A small Sequential MLP, built, with weights drawn from `seed` (so two models differ)."""
    model = keras.Sequential([keras.Input((inputs,))] + [keras.layers.Dense(u, dtype=dtype) for u in units])
    rng = np.random.default_rng(seed)
    model.set_weights([rng.standard_normal(w.shape).astype(np.float32) for w in model.get_weights()])
    return model


def _values(model):
    return [np.array(w) for w in model.get_weights()]


def _same_bits(a, b):
    return all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a, b)) \
        and len(a) == len(b)


def test_round_trip_is_bit_exact(tmp_path):
    path = tmp_path / "m.weights.h5"
    saved = _mlp(seed=0)
    saving.save_weights(saved, path)
    loaded = _mlp(seed=1)
    assert not _same_bits(_values(saved), _values(loaded))
    saving.load_weights(loaded, path)
    assert _same_bits(_values(saved), _values(loaded))
    assert sorted(os.listdir(tmp_path)) == ["m.weights.h5"]         # exactly the path given, nothing beside it


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "mixed_float16"])
def test_round_trip_keeps_each_variable_dtype(tmp_path, dtype):
    path = tmp_path / "m.weights.h5"
    saved = _mlp(dtype=dtype, seed=2)
    saving.save_weights(saved, path)
    loaded = _mlp(dtype=dtype, seed=3)
    saving.load_weights(loaded, path)
    assert _same_bits(_values(saved), _values(loaded))
    variable_dtype = keras.mixed_precision.DTypePolicy(dtype).variable_dtype
    with h5py.File(path, "r") as f:
        kernel = f["layers/dense/vars/0"]
        if variable_dtype == "bfloat16":                    # Keras's way: 2-byte opaque values, tagged
            assert kernel.dtype.itemsize == 2 and kernel.attrs["dtype"] == "bfloat16"
        else:
            assert kernel.dtype == np.dtype(variable_dtype)


def test_layout_is_keras_3s(tmp_path):
    path = tmp_path / "m.weights.h5"
    model = _mlp(units=(3, 2))
    saving.save_weights(model, path)
    found = {}

    def visit(name, obj):                  # returns None: visititems stops at the first other value
        found[name] = (type(obj).__name__, getattr(obj, "shape", None), dict(obj.attrs))
    with h5py.File(path, "r") as f:
        f.visititems(visit)
    assert found == {
        "vars": ("Group", None, {"name": model.name}),
        "layers": ("Group", None, {}),
        "layers/dense": ("Group", None, {}),
        "layers/dense/vars": ("Group", None, {"name": model.layers[0].name}),
        "layers/dense/vars/0": ("Dataset", (4, 3), {}),
        "layers/dense/vars/1": ("Dataset", (3,), {}),
        "layers/dense_1": ("Group", None, {}),
        "layers/dense_1/vars": ("Group", None, {"name": model.layers[1].name}),
        "layers/dense_1/vars/0": ("Dataset", (3, 2), {}),
        "layers/dense_1/vars/1": ("Dataset", (2,), {}),
    }
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["layers/dense_1/vars/0"][()], model.layers[1].kernel.numpy())


def test_functional_and_subclassed_paths(tmp_path):
    inputs = keras.Input((4,))
    outputs = keras.layers.Dense(2, name="out")(keras.layers.Dense(3, name="hidden")(inputs))
    functional = keras.Model(inputs, outputs)
    saving.save_weights(functional, tmp_path / "f.weights.h5")
    with h5py.File(tmp_path / "f.weights.h5", "r") as f:
        assert f["layers/input_layer/vars"].attrs["name"] == functional.layers[0].name   # Keras writes it too
        assert len(f["layers/input_layer/vars"]) == 0
        assert f["layers/dense/vars"].attrs["name"] == "hidden" and f["layers/dense_1/vars"].attrs["name"] == "out"

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.head = keras.layers.Dense(2)
            self.blocks = [keras.layers.Dense(3), keras.layers.Dense(3)]

        def call(self, x):
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    net = Net()
    net(np.ones((1, 4), np.float32))
    saving.save_weights(net, tmp_path / "n.weights.h5")
    with h5py.File(tmp_path / "n.weights.h5", "r") as f:
        names = set()
        f.visit(names.add)
    assert {"blocks/dense/vars/0", "blocks/dense_1/vars/0", "head/vars/0", "head/vars/1"} <= names
    other = Net()
    other(np.ones((1, 4), np.float32))
    saving.load_weights(other, tmp_path / "n.weights.h5")
    assert _same_bits(_values(net), _values(other))


def test_model_methods_use_the_weights_file(tmp_path):
    path = tmp_path / "m.weights.h5"
    saved = _mlp(seed=4)
    saved.save_weights(str(path))
    loaded = _mlp(seed=5)
    loaded.load_weights(str(path))
    assert _same_bits(_values(saved), _values(loaded))


def test_failed_save_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "m.weights.h5"
    saving.save_weights(_mlp(seed=6), path)
    before = path.read_bytes()
    calls = []

    def failing(h5, group_path, name, arrays):
        calls.append(group_path)
        if len(calls) == 2:                                    # midway: one group written, then a failure
            raise OSError("disk full")
        write(h5, group_path, name, arrays)
    write = _h5weights._write_group
    monkeypatch.setattr(_h5weights, "_write_group", failing)
    with pytest.raises(OSError, match="disk full"):
        saving.save_weights(_mlp(seed=7), path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.weights.h5"]         # the temporary file is gone


def test_wrong_filename(tmp_path):
    model = _mlp()
    with pytest.raises(ValueError, match=r"The filename must end in `\.weights\.h5`\. Received: filepath=.*m\.h5$"):
        saving.save_weights(model, tmp_path / "m.h5")
    with pytest.raises(ValueError, match="File format not supported"):
        saving.load_weights(model, tmp_path / "m.npz")
    with pytest.raises(ValueError, match="`.weights.h5` files only"):
        saving.load_weights(model, tmp_path / "m.keras")
    assert os.listdir(tmp_path) == []


def test_overwrite_false_asks_as_keras(tmp_path, monkeypatch):
    path = tmp_path / "m.weights.h5"
    saving.save_weights(_mlp(seed=8), path)
    before = path.read_bytes()
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    saving.save_weights(_mlp(seed=9), path, overwrite=False)
    assert path.read_bytes() == before


def test_shape_mismatch_changes_nothing(tmp_path):
    path = tmp_path / "m.weights.h5"
    saving.save_weights(_mlp(units=(3, 2), seed=10), path)
    target = _mlp(units=(3, 5), seed=11)
    before = _values(target)
    with pytest.raises(ValueError, match=r"(?s)1 objects could not be loaded.*variable\.shape=\(3, 5\), "
                                         r"Received: value\.shape=\(3, 2\)"):
        saving.load_weights(target, path)
    assert _same_bits(before, _values(target))               # not even the first layer, which fitted


def test_missing_layers_change_nothing(tmp_path):
    path = tmp_path / "m.weights.h5"
    saving.save_weights(_mlp(units=(3, 2), seed=12), path)
    target = _mlp(units=(3, 2, 2), seed=13)
    before = _values(target)
    name = target.layers[2].name
    with pytest.raises(ValueError, match=rf"Layer '{name}' expected 2 variables, but received 0 variables during "
                                         rf"loading\. Expected: \['kernel', 'bias'\]"):
        saving.load_weights(target, path)
    assert _same_bits(before, _values(target))


def test_skip_mismatch_loads_the_rest(tmp_path):
    path = tmp_path / "m.weights.h5"
    saved = _mlp(units=(3, 2), seed=14)
    saving.save_weights(saved, path)
    target = _mlp(units=(3, 5), seed=15)
    before = _values(target)
    with pytest.warns(UserWarning, match="1 objects could not be loaded"):
        saving.load_weights(target, path, skip_mismatch=True)
    after = _values(target)
    assert _same_bits(after[:2], _values(saved)[:2]) and _same_bits(after[2:], before[2:])


def test_unsafe_or_bad_files_are_refused(tmp_path):
    path = tmp_path / "m.weights.h5"
    saving.save_weights(_mlp(seed=16), path)
    with h5py.File(path, "a") as f:
        del f["layers/dense/vars/0"]
        f["layers/dense/vars/0"] = h5py.SoftLink("/layers/dense_1/vars/0")
    target = _mlp(seed=17)
    before = _values(target)
    with pytest.raises(ValueError, match="Not allowed: H5 file with SoftLink"):
        saving.load_weights(target, path)
    (tmp_path / "x.weights.h5").write_bytes(b"not hdf5")
    with pytest.raises(ValueError, match="is not an HDF5 file"):
        saving.load_weights(target, tmp_path / "x.weights.h5")
    with pytest.raises(FileNotFoundError, match="no such file"):
        saving.load_weights(target, tmp_path / "absent.weights.h5")
    assert _same_bits(before, _values(target))


def test_unbuilt_model(tmp_path):
    model = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="has not yet been built"):
        saving.save_weights(model, tmp_path / "m.weights.h5")


def _fixture(name):
    path = os.path.join(FIXTURES, name)
    if not os.path.exists(path):
        pytest.fail(f"fixture {path} is missing: run tools/record_keras.py (branch keras-fixtures)")
    return path


def _recorded():
    with open(_fixture("weights.json")) as f:
        return json.load(f)


def _tiny(kind):
    """The fixture's models in minifp: Dense 3 relu -> BatchNormalization -> Dense 2 on 4 inputs."""
    keras.backend.clear_session()
    L = keras.layers
    if kind == "functional":
        inp = keras.Input((4,), name="x")
        h = L.BatchNormalization(name="bn")(L.Dense(3, activation="relu", name="hidden")(inp))
        return keras.Model(inp, L.Dense(2, name="out")(h), name="tiny")
    return keras.Sequential([keras.Input((4,)), L.Dense(3, activation="relu"), L.BatchNormalization(),
                             L.Dense(2)])


def _layout(path):
    """Every group and dataset (path, kind, shape, dtype, attributes), as the fixture script dumps it."""
    rows = []

    def visit(name, obj):
        attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in obj.attrs.items()}
        if isinstance(obj, h5py.Dataset):
            rows.append({"path": name, "kind": "dataset", "shape": list(obj.shape), "dtype": str(obj.dtype),
                         "attrs": attrs})
        else:
            rows.append({"path": name, "kind": "group", "attrs": attrs})
    with h5py.File(path, "r") as f:
        rows.append({"path": "/", "kind": "group", "attrs": dict(f.attrs)})
        f.visititems(visit)
    return rows


@pytest.mark.parametrize("kind", ["functional", "sequential"])
def test_keras_written_file_loads_and_predicts(kind):
    """tiny_*.weights.h5, written by real Keras 3, loads into the same model and predicts as Keras (float32)."""
    recorded = _recorded()
    case = recorded["models"][kind]
    model = _tiny(kind)
    model.load_weights(_fixture(case["file"]))
    for got, want in zip(model.get_weights(), recorded["weights"], strict=True):
        assert np.array_equal(got, np.asarray(want, np.float32))
    x = np.asarray(recorded["x"], np.float32)
    got = model(x, training=False).numpy()
    want = np.asarray(case["call_training_false"], np.float32)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    got = model.predict(x, verbose=0)
    want = np.asarray(case["predictions"], np.float32)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kind", ["functional", "sequential"])
def test_minifp_writes_what_keras_writes(tmp_path, kind):
    """The same model saved by minifp has Keras's file layout: groups, datasets, shapes, dtypes, attributes."""
    recorded = _recorded()
    model = _tiny(kind)
    model.set_weights([np.asarray(w, np.float32) for w in recorded["weights"]])
    path = tmp_path / "tiny.weights.h5"
    model.save_weights(str(path))
    assert _layout(path) == recorded["models"][kind]["h5_layout"]
    with h5py.File(path, "r") as mine, h5py.File(_fixture(recorded["models"][kind]["file"]), "r") as keras_file:
        for row in recorded["models"][kind]["h5_layout"]:
            if row["kind"] == "dataset":
                assert mine[row["path"]][()].tobytes() == keras_file[row["path"]][()].tobytes()

"""keras.utils against Keras 3.15.1 (tests/fixtures/keras/utils.json, recorded by tools/record_keras_utils.py):
every recorded call replayed through minifp.keras.utils gives Keras's values and dtypes, or its error type and
message; plus PyDataset in fit/evaluate/predict, get_file's cache, plot_model's error, versions, tf.keras.utils."""
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest

import minifp
import minifp.tf as tf
from minifp import keras
from minifp.keras import utils

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "keras" / "utils.json").read_text())
CASES = [pytest.param(c, id=f"{i}-{c['fn']}") for i, c in enumerate(FIXTURE["cases"])]


def _decode(x):
    if isinstance(x, dict) and "array" in x:
        return np.asarray(x["array"], dtype=x["dtype"])
    if isinstance(x, dict) and "tuple" in x:
        return tuple(_decode(v) for v in x["tuple"])
    if isinstance(x, list):
        return [_decode(v) for v in x]
    return x


def _encode(x):
    """A result in the recorder's JSON form (floats compared as the dtype's exact values)."""
    if hasattr(x, "as_numpy_iterator"):
        return {"dataset": [_encode(e) for e in x.as_numpy_iterator()]}
    if hasattr(x, "mode") and hasattr(x, "size"):
        return {"image": x.mode, "size": list(x.size), "array": _encode(np.asarray(x))}
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    if isinstance(x, (np.ndarray, np.generic)):
        x = np.asarray(x)
        return {"array": x.tolist(), "dtype": str(x.dtype), "shape": list(x.shape)}
    if isinstance(x, (tuple, list)):
        return [_encode(v) for v in x]
    return x


def _same(got, want):
    """Recorded arrays read back in their dtype (float32's shortest decimals give the exact bits)."""
    if isinstance(want, dict) and "dtype" in want:
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"])
        np.testing.assert_array_equal(np.asarray(got["array"], dtype=want["dtype"]),
                                      np.asarray(want["array"], dtype=want["dtype"]))
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _same(got[k], want[k])
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        assert got == want


@pytest.mark.parametrize("case", CASES)
def test_recorded_call(case, tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    fn = getattr(utils, case["fn"])
    args, kwargs = _decode(case["args"]), {k: _decode(v) for k, v in case["kwargs"].items()}
    if case["error"] is not None:
        with pytest.raises(Exception) as info:
            fn(*args, **kwargs)
        assert (type(info.value).__name__, str(info.value)) == (case["error"]["type"], case["error"]["message"])
    else:
        _same(_encode(fn(*args, **kwargs)), case["result"])


@pytest.mark.parametrize("case", FIXTURE["load_img"]["cases"], ids=lambda c: json.dumps(c["kwargs"]))
def test_load_img(case):
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(_decode(FIXTURE["load_img"]["png_pixels"]), "RGB").save(buf, format="png")
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in case["kwargs"].items()}
    if case["error"] is not None:
        with pytest.raises(ValueError) as info:
            utils.load_img(io.BytesIO(buf.getvalue()), **kwargs)
        assert str(info.value) == case["error"]["message"]
    else:
        _same(_encode(utils.load_img(io.BytesIO(buf.getvalue()), **kwargs)), case["result"])


def test_image_round_trip_and_missing_pillow(monkeypatch, tmp_path):
    x = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3) * 10
    np.testing.assert_array_equal(utils.img_to_array(utils.array_to_img(x, scale=False)), x)
    utils.save_img(tmp_path / "a.png", x, scale=False)
    np.testing.assert_array_equal(utils.img_to_array(utils.load_img(tmp_path / "a.png")), x)
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)
    with pytest.raises(ImportError, match=r"minifp\[vision\]"):
        utils.array_to_img(x)
    np.testing.assert_array_equal(utils.img_to_array(x), x)     # NumPy only


class Squares(utils.PyDataset):
    """Batches (x, 2x) of 3 samples; counts its epoch hooks."""

    def __init__(self, n_batches=4, **kwargs):
        super().__init__(**kwargs)
        self.n_batches, self.ends, self.seen = n_batches, 0, []

    def __len__(self):
        return self.n_batches

    def __getitem__(self, i):
        self.seen.append(i)
        x = np.arange(3 * i, 3 * i + 3, dtype=np.float32).reshape(3, 1) / 10
        return x, 2 * x

    def on_epoch_end(self):
        self.ends += 1


def _linear():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


def test_fit_on_a_py_dataset_equals_fit_on_its_batches():
    data = Squares(workers=4, use_multiprocessing=False, max_queue_size=3)
    assert (data.workers, data.use_multiprocessing, data.max_queue_size) == (4, False, 3)
    model = _linear()
    history = model.fit(data, epochs=3, shuffle=False, verbose=0)
    assert data.ends == 3 and data.seen == list(range(4)) * 3 and len(history.history["loss"]) == 3
    reference = _linear()
    for _ in range(3):
        for i in range(4):
            reference.train_on_batch(*Squares()[i])
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(a, b)
    loss = model.evaluate(data, verbose=0)
    assert loss == pytest.approx(reference.evaluate(np.arange(12, dtype=np.float32).reshape(12, 1) / 10,
                                                    np.arange(12, dtype=np.float32).reshape(12, 1) / 5, verbose=0))
    assert model.predict(data, verbose=0).shape == (12, 1)
    assert keras.utils.Sequence is keras.utils.PyDataset


def test_fit_shuffles_a_py_dataset_batch_order_and_refuses_y():
    data = Squares(6)
    _linear().fit(data, epochs=2, verbose=0)          # shuffle=True: each epoch's order is a permutation
    assert sorted(data.seen[:6]) == sorted(data.seen[6:]) == list(range(6)) and data.seen != list(range(6)) * 2
    with pytest.raises(ValueError, match="When providing `x` as a PyDataset, `y` should not be passed"):
        _linear().fit(data, np.zeros(3))


def test_fit_on_timeseries_and_split_datasets():
    windows = utils.timeseries_dataset_from_array(np.arange(20, dtype=np.float32) / 20, np.arange(20) / 20, 1,
                                                  batch_size=5)
    assert len(_linear().fit(windows, epochs=2, verbose=0).history["loss"]) == 2
    column = np.arange(10, dtype=np.float32).reshape(10, 1)
    left, right = utils.split_dataset((column, column), 0.8)
    assert len(_linear().fit(left.batch(4), epochs=1, verbose=0).history["loss"]) == 1
    assert [x.numpy().tolist() for x, _ in right] == [[8.0], [9.0]]


def test_get_file_cache_hit_miss_and_extract(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    with pytest.raises(FileNotFoundError, match="not in the cache and minifp does not download"):
        utils.get_file("data.bin", "https://example.invalid/data.bin")
    cached = tmp_path / "home" / "datasets" / "data.bin"
    cached.write_bytes(b"abc")
    assert utils.get_file("data.bin", "https://example.invalid/data.bin") == str(cached)
    assert utils.get_file(origin="https://example.invalid/data.bin") == str(cached)       # name from origin
    sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"             # sha256(b"abc")
    assert utils.get_file("data.bin", "u", file_hash=sha) == str(cached)
    with pytest.raises(ValueError, match="does not match"):
        utils.get_file("data.bin", "u", md5_hash="0" * 32)
    with pytest.raises(FileNotFoundError):
        utils.get_file("data.bin", "u", force_download=True)
    other = tmp_path / "mine"
    (other / "sub").mkdir(parents=True)
    (other / "sub" / "f.txt").write_text("x")
    assert utils.get_file("f.txt", "u", cache_dir=str(other), cache_subdir="sub") == str(other / "sub" / "f.txt")
    with tarfile.open(other / "sub" / "arch.tar.gz", "w:gz") as tar:
        tar.add(other / "sub" / "f.txt", arcname="f.txt")
    folder = utils.get_file("arch.tar.gz", "u", cache_dir=str(other), cache_subdir="sub", extract=True)
    assert folder == str(other / "sub" / "arch_extracted") and os.listdir(folder) == ["f.txt"]


def test_plot_model_says_what_to_install(monkeypatch):
    model = _linear()
    monkeypatch.setitem(__import__("sys").modules, "pydot", None)
    with pytest.raises(ImportError, match=r"You must install pydot \(`pip install pydot`\) for `plot_model`"):
        utils.plot_model(model)
    monkeypatch.setitem(__import__("sys").modules, "pydot", __import__("types").ModuleType("pydot"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ImportError, match="You must install graphviz"):
        utils.plot_model(model)


def test_set_random_seed_seeds_python_numpy_and_minifp():
    import random
    utils.set_random_seed(11)
    first = (random.random(), np.random.rand(), np.asarray(keras.initializers.RandomNormal()((2,))).tolist())
    utils.set_random_seed(11)
    assert (random.random(), np.random.rand(), np.asarray(keras.initializers.RandomNormal()((2,))).tolist()) == first


def test_to_categorical_and_normalize_on_tensors():
    t = utils.to_categorical(keras.ops.convert_to_tensor(np.array([[2], [0]])), 3)
    assert isinstance(t, keras.Tensor) and str(t.dtype) == "float32"
    np.testing.assert_array_equal(t.numpy(), [[0, 0, 1], [1, 0, 0]])
    n = utils.normalize(keras.ops.convert_to_tensor(np.array([[3.0, 4.0]], np.float32)))
    np.testing.assert_array_equal(n.numpy(), np.array([[0.6, 0.8]], np.float32))


def test_versions_and_tf_keras_utils():
    assert keras.__version__ == keras.version() == f"3.15.1+minifp.{minifp.__version__}"
    assert tf.__version__ == tf.version.VERSION == f"2.21.0+minifp.{minifp.__version__}"
    assert tf.keras.utils is utils
    from minifp.tf.keras.utils import Progbar, pad_sequences
    assert Progbar is keras.callbacks.Progbar and pad_sequences is utils.pad_sequences
    assert isinstance(utils.split_dataset(np.arange(4), 2)[0], type(tf.data.Dataset.range(1)).__mro__[1])


class Endless(utils.PyDataset):
    """An endless PyDataset (num_batches None): fit needs steps_per_epoch."""

    num_batches = None

    def __getitem__(self, i):
        x = np.full((2, 1), i % 3, dtype=np.float32)
        return x, x


def test_fit_on_an_endless_py_dataset_warns_about_shuffle():
    with pytest.warns(UserWarning, match="infinite PyDataset"):
        history = _linear().fit(Endless(), epochs=2, steps_per_epoch=3, verbose=0)
    assert len(history.history["loss"]) == 2


def test_py_dataset_as_validation_data_and_shuffled_timeseries():
    history = _linear().fit(Squares(2), validation_data=Squares(1), epochs=2, verbose=0)
    assert len(history.history["val_loss"]) == 2
    plain = utils.timeseries_dataset_from_array(np.arange(12), np.arange(12), 3, batch_size=None)
    mixed = utils.timeseries_dataset_from_array(np.arange(12), np.arange(12), 3, batch_size=None, shuffle=True,
                                                seed=1)
    pairs = sorted((tuple(x.tolist()), int(y)) for x, y in mixed.as_numpy_iterator())
    assert pairs == [(tuple(x.tolist()), int(y)) for x, y in plain.as_numpy_iterator()]
    assert pairs != [(tuple(x.tolist()), int(y)) for x, y in mixed.as_numpy_iterator()]    # an order, shuffled

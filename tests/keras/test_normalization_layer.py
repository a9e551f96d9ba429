"""layers.Normalization against what Keras 3 recorded for the same code (tools/record_keras_normalization.py ->
tests/fixtures/keras/normalization.json)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_keras_normalization as cases  # noqa: E402

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "normalization.json").read_text())


@pytest.fixture(scope="module")
def got():
    return json.loads(json.dumps(cases.run(keras)))         # (as the fixture holds it: tuples as lists)


@pytest.mark.parametrize("case", list(cases.CASES))
def test_normalization_does_what_keras_does(case, got):
    want, mine = RECORDED["cases"][case], got[case]
    if "out" not in want:
        assert mine == want                                 # errors, config, a model's predictions
        return
    assert mine["weights"] == want["weights"]               # the adapted mean and variance: NumPy's, both sides
    # PyTorch's CPU sqrt (Keras's torch backend) is not correctly rounded everywhere: up to 1 ulp apart
    a, b = np.array(want["out"], np.float32), np.array(mine["out"], np.float32)
    assert a.shape == b.shape and np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32)).max() <= 1


def test_adapted_values_are_one_rounding_of_each_step():
    layer = keras.layers.Normalization(axis=(1, 2))
    layer.adapt(cases.DATA)
    mean, var = np.mean(cases.DATA, axis=0), np.var(cases.DATA, axis=0)
    want = (cases.DATA[:2] - mean) / np.maximum(np.sqrt(var), np.float32(1e-7))     # float32 throughout
    assert np.array_equal(np.asarray(layer(cases.DATA[:2])), want)


def test_batches_combine_as_keras_combines_them():
    # Keras's running formula over batches (what a generator or a list of batches gives), in float32
    x = cases.DATA[:, 0]
    layer = keras.layers.Normalization()
    layer.adapt([x[:16], x[16:30], (x[30:], None)])
    mean = var = np.zeros(3, np.float32)
    count = 0
    for b in (x[:16], x[16:30], x[30:]):
        count += len(b)
        new, old = np.float32(len(b) / count), np.float32(1.0 - len(b) / count)
        m = mean * old + b.mean(0) * new
        var = (var + (mean - m) ** 2) * old + (b.var(0) + (b.mean(0) - m) ** 2) * new
        mean = m
    assert np.array_equal(np.asarray(layer.weights[0]), mean) and np.array_equal(np.asarray(layer.weights[1]), var)
    with pytest.raises(ValueError, match="adapt\\(\\) received an empty iterable"):
        keras.layers.Normalization().adapt([])


def test_an_adapted_layer_saves_and_loads_its_statistics(tmp_path):
    pytest.importorskip("h5py")
    x = cases.DATA[:, 0]
    model = keras.Sequential([keras.Input((3,)), keras.layers.Normalization(), keras.layers.Dense(1)])
    model.layers[0].adapt(x)
    model.save_weights(tmp_path / "n.weights.h5")
    other = keras.Sequential([keras.Input((3,)), keras.layers.Normalization(), keras.layers.Dense(1)])
    other.load_weights(tmp_path / "n.weights.h5")
    assert np.array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))


def test_the_mean_and_variance_read_as_keras_exposes_them():
    layer = keras.layers.Normalization(axis=-1)
    assert layer.mean is None                               # unbuilt, as in Keras
    layer.adapt(cases.DOC)
    assert np.asarray(layer.mean).tolist() == [[1.0, 8.0, 5.0]] and np.asarray(layer.variance).tolist() == [[1.0] * 3]
    given = keras.layers.Normalization(mean=3.0, variance=2.0)
    given.build((None, 2))
    assert np.asarray(given.mean).tolist() == [[3.0, 3.0]] and not given.weights

"""Ops on KerasTensors in functional models, against what Keras 3 recorded for the same code
(tools/record_keras_symbolic.py -> tests/fixtures/keras/symbolic_ops.json)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_keras_symbolic  # noqa: E402

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "symbolic_ops.json").read_text())


@pytest.fixture(scope="module")
def got():
    return record_keras_symbolic.run(keras)


@pytest.mark.parametrize("case", ["mixed", "dtypes", "shapes", "variable_length"])
def test_ops_on_keras_tensors_do_what_keras_does(case, got):
    assert got[case] == RECORDED["cases"][case]         # shapes, dtypes, layers, the summary text, predictions


def test_a_model_with_ops_trains_as_in_keras(got):
    # PyTorch's CPU tanh (Keras's torch backend) and NumPy's differ in the last bit: a few ulps apart after training
    want, mine = RECORDED["cases"]["fit"], got["fit"]
    assert np.allclose(mine["loss"], want["loss"], rtol=2e-6, atol=0)
    for w, m in zip(want["weights"], mine["weights"]):
        assert np.allclose(m, w, rtol=2e-6, atol=0)


def test_ops_on_keras_tensors_stay_out_of_model_layers_and_weights(got):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs * 2.0) - 1.0)
    assert [type(l).__name__ for l in model.layers] == ["InputLayer", "Dense"] and len(model.weights) == 2

"""keras.callbacks.TensorBoard against Keras 3.15 (torch backend, writing through TensorFlow 2.21's tf.summary):
tests/fixtures/keras/tensorboard.json, recorded by tools/record_tensorboard.py, whose fit/evaluate scripts run here
with minifp.keras into tmp_path. What tensorboard's EventAccumulator reads back must match: the run directories
(train/, validation/), event files, every event's step and tag in order, plugins, histogram buckets, images' pixels
and the outline of the model's JSON (class, names, layers and their wiring: minifp writes its `.keras`
config, which leaves out some of Keras's default-valued fields) exactly; metric values and trained weights'
histograms within RTOL of the array's largest magnitude (minifp's training is not Keras-on-torch's to the bit:
its float32 sums run in NumPy's order); steps-per-second values are timings and are not compared.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_tensorboard import error_of, keras_errors, keras_scripts, read_logdir  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "tensorboard.json").read_text())
RTOL = 1e-5
TIMINGS = ("batch_steps_per_second", "epoch_steps_per_second")
UNTRAINED = ("conv",)                   # learning rate 0: the weights' histograms are Keras's to the bit


def _model_outline(config):
    """What the model's JSON says of its structure: classes, names, layers and their wiring."""
    layers = config["config"]["layers"]
    return [config["class_name"], config["config"]["name"], config["config"].get("input_layers"),
            config["config"].get("output_layers"), [[layer["class_name"], layer["name"], layer["inbound_nodes"]]
                                                    for layer in layers]]


def _split_values(result):
    """result without the numbers of its scalars and histograms (returned apart, timings dropped), the model's
    JSON cut to its outline."""
    values = {}
    for run_name, run in result["runs"].items():
        for tag, events in run["tensors"].items():
            for i, (step, plugin, tensor) in enumerate(events):
                if plugin == "graph_keras_model":
                    events[i][2] = [_model_outline(c) for c in tensor]
                if plugin in ("scalars", "histograms"):
                    if tag not in TIMINGS:
                        values[(run_name, tag, i)] = tensor["values"]
                    tensor["values"] = None
    return result, values


@pytest.mark.parametrize("name", sorted(FIX["scripts"]))
def test_fit_logs_as_keras(name, tmp_path):
    keras_scripts()[name](keras, str(tmp_path / "logs"))
    got, got_values = _split_values(json.loads(json.dumps(read_logdir(tmp_path / "logs"))))
    expected, expected_values = _split_values(json.loads(json.dumps(FIX["scripts"][name])))
    assert got == expected
    assert got_values.keys() == expected_values.keys()
    for key, values in expected_values.items():
        if (name in UNTRAINED and key[1].endswith("/histogram")) or key[1] == "epoch_learning_rate":
            assert got_values[key] == values, key
        else:
            scale = np.max(np.abs(values))           # bucket edges cross zero: a bound on the whole array
            np.testing.assert_allclose(got_values[key], values, rtol=0, atol=RTOL * scale, err_msg=str(key))


@pytest.mark.parametrize("name", sorted(FIX["errors"]))
def test_bad_arguments_raise_keras_error(name):
    kind, message = FIX["errors"][name]
    backend = FIX["backend"]
    assert error_of(lambda: keras_errors()[name](keras)) == [kind, message.replace(f"the {backend} backend",
                                                                                     f"the {keras.backend.backend()}"
                                                                                     f" backend")]


def test_needs_tensorboard_only_when_writing(monkeypatch, tmp_path):
    """The callback is made without tensorboard; its first writer imports it (ModuleNotFoundError without it)."""
    board = keras.callbacks.TensorBoard(log_dir=str(tmp_path), write_graph=False)
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.event_file_writer", None)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    board.set_model(model)
    with pytest.raises(ModuleNotFoundError):
        board.on_train_begin()
        board.on_epoch_end(0, {"loss": 1.0})
    assert list(tmp_path.iterdir()) == []

"""keras.callbacks.BackupAndRestore against Keras 3 (tests/fixtures/keras/backup.json, recorded by
tools/record_keras_backup.py, whose run_case runs here with minifp.keras): the files in backup_dir and the training
metadata after an interrupted fit, the weights file's layout (the optimizer's variables included), the epochs and
losses of the resumed fit, the weights and optimizer variables, the folder deleted at the end; bad arguments.

Values within a tolerance relative to each array's largest magnitude: the same float32 steps, but torch's CPU
kernels sum the matmuls and the mean squared error's rows in orders of their own, so gradients differ in their last
bits. Weights and losses within RTOL (measured: at most 2.5e-7 after 12 Adam steps); the optimizer's moments within
RTOL_MOMENTS (measured: 1.9e-6), since the bias's gradients are sums that cancel (the error's mean over the batch),
where a last-bit difference of the terms is a larger share of the result. Within minifp the resumed fit is checked
to the bit against the uninterrupted one wherever the backup was taken at an epoch's end.
"""
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from minifp import keras
from minifp.keras import _h5weights

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_keras_backup import BATCH, EPOCHS, data, error, model, run_case  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "backup.json").read_text())
RTOL, RTOL_MOMENTS = 5e-7, 4e-6


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    yield


def _close(got, want, rtol=RTOL):
    """Each array within rtol of its largest magnitude, shapes equal."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=rtol * max(np.abs(w).max(initial=0), 1e-30))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each case run once with minifp.keras, in a folder of its own."""
    out = {}
    for name, case in FIX["cases"].items():
        keras.backend.clear_session()
        where = tuple(case["where"]) if case["where"] is not None else None
        out[name] = run_case(keras, str(tmp_path_factory.mktemp(name)), case["kwargs"], where, case["damage"])
    return out


@pytest.mark.parametrize("name", list(FIX["cases"]))
def test_interrupted_fit_leaves_keras_backup(runs, name):
    want, got = FIX["cases"][name], runs[name]
    assert got.get("raised") == want.get("raised")
    if "interrupted" not in want:
        assert "interrupted" not in got
        return
    w, g = want["interrupted"], got["interrupted"]
    assert (g["files"], g["metadata"], g["layout"]) == (w["files"], w["metadata"], w["layout"])
    _close(g["weights"], w["weights"])
    _close(g["optimizer"], w["optimizer"], RTOL_MOMENTS)


@pytest.mark.parametrize("name", list(FIX["cases"]))
def test_resumed_fit_continues_as_keras(runs, name):
    w, g = FIX["cases"][name]["resumed"], runs[name]["resumed"]
    assert (g["epoch"], g["files"], g["metadata"]) == (w["epoch"], w["files"], w["metadata"])
    _close([g["loss"]], [w["loss"]])
    _close(g["weights"], w["weights"])
    _close(g["optimizer"], w["optimizer"], RTOL_MOMENTS)
    w, g = FIX["cases"][name]["uninterrupted"], runs[name]["uninterrupted"]
    assert g["epoch"] == w["epoch"]
    _close([g["loss"]], [w["loss"]])
    _close(g["weights"], w["weights"])


@pytest.mark.parametrize("name", [n for n, c in FIX["cases"].items()
                                  if c["resumed"]["weights"] == c["uninterrupted"]["weights"]])
def test_resuming_at_an_epoch_end_repeats_the_uninterrupted_fit_bit_for_bit(runs, name):
    got = runs[name]
    resumed, plain = got["resumed"], got["uninterrupted"]
    assert resumed["loss"] == plain["loss"][-len(resumed["loss"]):]
    assert resumed["weights"] == plain["weights"]


@pytest.mark.parametrize("case", FIX["errors"], ids=lambda c: repr(c["kwargs"]))
def test_bad_arguments_raise_keras_errors(case):
    assert error(keras, case["backup_dir"], case["kwargs"]) == case["error"]


def test_tf_keras_lists_it():
    from minifp.tf import keras as tf_keras
    assert tf_keras.callbacks.BackupAndRestore is keras.callbacks.BackupAndRestore


def test_a_failed_save_keeps_the_previous_backup(tmp_path, monkeypatch):
    """Saving is atomic: a weights file whose writing fails midway leaves the last backup whole, and a later fit
    resumes from it as the uninterrupted fit goes on."""
    x, y = data()
    backup = tmp_path / "backup"
    write_group = _h5weights._write_group

    class DiskFull(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):     # before the backup's save of epoch 1: its second group fails
            if epoch == 1:
                groups = []

                def failing(*args):
                    groups.append(args)
                    if len(groups) == 2:
                        raise OSError("No space left on device")
                    write_group(*args)
                monkeypatch.setattr(_h5weights, "_write_group", failing)

    with pytest.raises(OSError, match="No space left"):
        model(keras, 0.37).fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
                               callbacks=[DiskFull(), keras.callbacks.BackupAndRestore(str(backup))])
    monkeypatch.setattr(_h5weights, "_write_group", write_group)
    assert sorted(os.listdir(backup)) == ["latest.weights.h5", "training_metadata.json"]
    assert json.loads((backup / "training_metadata.json").read_text()) == {"epoch": 1, "batch": 0}
    history = model(keras, 0.11).fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
                                     callbacks=[keras.callbacks.BackupAndRestore(str(backup))])
    plain = model(keras, 0.37)
    plain_history = plain.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    assert history.epoch == [1, 2, 3]
    assert history.history["loss"] == plain_history.history["loss"][1:]
    assert [w.tolist() for w in history.model.get_weights()] == [w.tolist() for w in plain.get_weights()]
    assert not backup.exists()


def test_damaged_metadata_is_keras_json_error(tmp_path):
    """A training_metadata.json that is not JSON is not taken for damaged weights: json's error, as in Keras."""
    x, y = data()
    backup = tmp_path / "b"
    backup.mkdir()
    (backup / "training_metadata.json").write_text("{epoch")
    (backup / "training_metadata.json.bkp").write_text('{"epoch": 1, "batch": 0}')
    m = model(keras, 0.37)
    m.optimizer.build(m.trainable_variables)
    m.save_weights(str(backup / "latest.weights.h5"))
    (backup / "latest.weights.h5.bkp").write_bytes((backup / "latest.weights.h5").read_bytes())
    with pytest.raises(json.JSONDecodeError):
        m.fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0,
              callbacks=[keras.callbacks.BackupAndRestore(str(backup), double_checkpoint=True)])


def test_save_weights_of_a_compiled_model_holds_its_optimizer_and_load_restores_it(tmp_path):
    """Keras 3's save_weights walks model.optimizer: a compiled model's file has optimizer/vars, loaded back."""
    x, y = data()
    trained = model(keras, 0.37)
    trained.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    trained.save_weights(str(tmp_path / "a.weights.h5"))
    fresh = model(keras, 0.11)
    fresh.optimizer.build(fresh.trainable_variables)
    fresh.load_weights(str(tmp_path / "a.weights.h5"))
    assert [v.numpy().tolist() for v in fresh.optimizer.variables] == \
        [v.numpy().tolist() for v in trained.optimizer.variables]
    unbuilt = model(keras, 0.11)                    # as Keras: its 2 variables against the file's 10
    with pytest.warns(UserWarning, match="Skipping variable loading for optimizer 'adam_2', because it has 2 "
                                         "variables whereas the saved optimizer has 10 variables."):
        unbuilt.load_weights(str(tmp_path / "a.weights.h5"))
    assert np.array_equal(unbuilt.get_weights()[0], trained.get_weights()[0])


def test_keras_docstring_example_with_an_unbuilt_sequential(tmp_path):
    """Keras's own example, without model.build (Keras on torch builds the model before on_train_begin; checked
    there): the second fit runs the 6 epochs left after the interruption at epoch 4."""
    class InterruptingCallback(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 4:
                raise RuntimeError("Interrupting!")

    callback = keras.callbacks.BackupAndRestore(backup_dir=str(tmp_path / "backup"))
    model = keras.models.Sequential([keras.layers.Dense(10)])
    model.compile(keras.optimizers.SGD(), loss="mse")
    x, y = np.arange(100).reshape(5, 20), np.zeros(5)
    with pytest.raises(RuntimeError, match="Interrupting!"):
        model.fit(x, y, epochs=10, batch_size=1, callbacks=[callback, InterruptingCallback()], verbose=0)
    history = model.fit(x, y, epochs=10, batch_size=1, callbacks=[callback], verbose=0)
    assert len(history.history["loss"]) == 6 and history.epoch == list(range(4, 10))

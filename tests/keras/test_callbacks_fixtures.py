"""EarlyStopping, ReduceLROnPlateau and ModelCheckpoint against Keras 3.15.1's decisions, and tf.keras's (tf-keras
2.21) through minifp.tf (tests/fixtures/keras/callbacks.json, checkpoint.json).

Each recorded case drives one callback by hand on a one-weight model compiled with SGD(0.1): per epoch e the
kernel is set to e and on_epoch_end(e) gets {'loss': v + 0.1, monitor: v}; the callback's decisions (when it
stops, the learning rate per epoch, which epoch's weights it restores or which epochs it saves, its best value)
must be Keras's.
"""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.tf as tf
from minifp import keras

FACES = json.loads((Path(__file__).parents[1] / "fixtures" / "keras" / "callbacks.json").read_text())["faces"]
DOORS = {"keras3": keras, "tf_keras": tf.keras}
KINDS = {"early_stopping": "EarlyStopping", "reduce_lr_on_plateau": "ReduceLROnPlateau"}
PARAMS = [pytest.param(face, kind, case, id=f"{face}-{kind}-{i}") for face in DOORS for kind in KINDS
          for i, case in enumerate(FACES[face][kind])]


def _model(door):
    keras.backend.clear_session()
    model = door.Sequential([door.Input((1,)), door.layers.Dense(1, use_bias=False)])
    model.compile(door.optimizers.SGD(learning_rate=0.1), "mse")
    return model


def _drive(callback, model, values, monitor):
    """The recording's protocol; returns what it recorded."""
    callback.set_model(model)
    callback.on_train_begin()
    rates, stops, first_logs = [], [], None
    kernel = model.layers[0].kernel
    key = "val_loss" if monitor == "missing" else monitor
    for epoch, v in enumerate(values):
        kernel.assign(np.full((1, 1), epoch, np.float32))
        callback.on_epoch_begin(epoch)
        logs = {"loss": v + 0.1, key: v}
        callback.on_epoch_end(epoch, logs)
        first_logs = logs if first_logs is None else first_logs
        rates.append(float(np.float32(model.optimizer.learning_rate)))
        stops.append(bool(model.stop_training))
        if model.stop_training:
            break
    callback.on_train_end()
    return rates, stops, float(kernel.numpy()[0, 0]), first_logs


@pytest.mark.parametrize("face, kind, case", PARAMS)
def test_callback_decides_as_keras(face, kind, case, capsys):
    door = DOORS[face]
    model = _model(door)
    make = lambda: getattr(door.callbacks, KINDS[kind])(**case["kwargs"])     # noqa: E731
    if case.get("error"):
        with pytest.raises(ValueError, match=case["error"]["message"][:60].replace("(", r"\(").replace(")", r"\)")):
            _drive(make(), model, case["values"], case["kwargs"].get("monitor"))
        return
    callback = make()
    rates, stops, kernel, first_logs = _drive(callback, model, case["values"], case["kwargs"].get("monitor"))
    want = case["result"]
    assert sorted(first_logs) == sorted(want["first_epoch_logs_after"])         # "learning_rate", or tf.keras's "lr"
    assert stops == want["stop_training"]
    np.testing.assert_allclose(rates, want["learning_rates"], rtol=1e-6)
    assert kernel == want["final_kernel"]
    best = want.get("best")
    if best is not None and np.isfinite(float(best)):       # JSON holds tf.keras's untouched +-inf as "inf"
        assert float(callback.best) == pytest.approx(float(best), rel=1e-6)


CHECKPOINT = json.loads((Path(__file__).parents[1] / "fixtures" / "keras" / "checkpoint.json").read_text())["faces"]
CKPT_PARAMS = [pytest.param(face, case, id=f"{face}-{i}-{case['kwargs']['filepath']}") for face in DOORS
               for i, case in enumerate(CHECKPOINT[face]["model_checkpoint"])]


def _h5_kernel(path):
    """The one (1, 1) dataset of a weights file: the kernel, i.e. the epoch whose weights it holds."""
    h5py = pytest.importorskip("h5py")
    found = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.append(obj[()]) if isinstance(obj, h5py.Dataset)
                     and obj.shape == (1, 1) else None)
    assert len(found) == 1
    return float(found[0][0, 0])


def _drive_checkpoint(door, kwargs, values):
    """checkpoint.json's protocol in the current (empty) directory; what it recorded."""
    model = _model(door)
    callback = door.callbacks.ModelCheckpoint(**kwargs)
    path, monitor = kwargs["filepath"], kwargs.get("monitor", "val_loss")
    key = "val_loss" if monitor == "missing" else monitor
    callback.set_model(model)
    callback.on_train_begin()
    kernels = []
    for epoch, v in enumerate(values):
        model.layers[0].kernel.assign(np.full((1, 1), epoch, np.float32))
        callback.on_epoch_begin(epoch)
        callback.on_epoch_end(epoch, {"loss": v + 0.1, key: v})
        kernels.append(_h5_kernel(path) if Path(path).exists() else None)
    callback.on_train_end()
    files = sorted(p.name for p in Path().iterdir())
    saved = [int(_h5_kernel(f)) for f in files] if "{" in path else [e for e, k in enumerate(kernels) if k == e]
    return {"files": files, "saved_epochs": saved, "kept_kernel": _h5_kernel(files[-1]) if files else None,
            "file_kernel_after_epoch": None if "{" in path else kernels, "best": callback.best}


@pytest.mark.parametrize("face, case", CKPT_PARAMS)
def test_model_checkpoint_saves_as_keras(face, case, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    door = DOORS[face]
    if case["error"]:
        with pytest.raises(ValueError, match=case["error"]["message"][:60]):
            _drive_checkpoint(door, case["kwargs"], case["values"])
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _drive_checkpoint(door, case["kwargs"], case["values"])
    want = case["result"]
    if face == "keras3":  # tf-keras logs its warnings (absl), which the recording does not see
        assert list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)) == case["warnings"]
    for key in ("files", "saved_epochs", "kept_kernel", "file_kernel_after_epoch"):
        assert got[key] == want[key], key
    best = want["best"]
    assert got["best"] is None if best is None else float(got["best"]) == pytest.approx(float(best), rel=1e-6)
    assert capsys.readouterr().out == want["printed"]

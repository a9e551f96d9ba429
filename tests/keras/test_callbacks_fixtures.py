"""EarlyStopping and ReduceLROnPlateau against Keras 3.15.1's decisions, and tf.keras's (tf-keras 2.21) through
minifp.tf (tests/fixtures/keras/callbacks.json).

Each recorded case drives one callback by hand on a one-weight model compiled with SGD(0.1): per epoch e the
kernel is set to e and on_epoch_end(e) gets {'loss': v + 0.1, monitor: v}; the callback's decisions (when it
stops, the learning rate per epoch, which epoch's weights it restores, its best value) must be Keras's.
"""
import json
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

"""Record what Keras 3's BackupAndRestore callback does into tests/fixtures/keras/backup.json: a fit interrupted by
a callback that raises, then a fresh model (other weights, a fresh optimizer) fit again with the same backup_dir,
which resumes; and the same fit run without interruption. tests/keras/test_backup.py runs these functions with
minifp.keras and compares.

Run by hand with a real Keras 3 on torch (not the project's environment):
    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_backup.py

Per case: the files in backup_dir and the training metadata after the interruption, the layout of the weights file
(dataset paths and shapes: the layers' and the optimizer's variables), the weights and optimizer variables then;
after the resumed fit its history (epochs, losses), weights, optimizer variables and the files left (None: the
folder was deleted); the uninterrupted fit's history and weights. Errors: type and message of bad arguments.
"""
import json
import os
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "backup.json"

EPOCHS, BATCH = 4, 2
# name, BackupAndRestore's keyword arguments, where the first fit is interrupted ((epoch,) at that epoch's begin,
# (epoch, batch) at that batch's begin), whether the latest weights file is then damaged
CASES = [
    ("epoch", {}, (2,), False),
    ("steps", {"save_freq": 3}, (1, 2), False),
    ("steps_resumed_mid_epoch", {"save_freq": 2}, (2, 1), False),
    ("double_checkpoint", {"double_checkpoint": True}, (3,), False),
    ("double_checkpoint_damaged", {"double_checkpoint": True}, (3,), True),
    ("keep", {"delete_checkpoint": False}, (1,), False),
    ("no_interruption", {}, None, False),
]
ERRORS = [("", {}), ("backup", {"save_freq": "batch"}), ("backup", {"save_freq": 1.5})]


def data():
    """x (8, 3) and y (8, 2): fixed values, (i * k) mod 2 - 1 rounded once to float32."""
    x = ((np.arange(24, dtype=np.float64) * 0.37) % 2 - 1).astype(np.float32).reshape(8, 3)
    y = ((np.arange(16, dtype=np.float64) * 0.61) % 2 - 1).astype(np.float32).reshape(8, 2)
    return x, y


def initial_weights(k):
    """The weights a model starts from: Dense(4) kernel and bias, Dense(2) kernel and bias."""
    shapes = [(3, 4), (4,), (4, 2), (2,)]
    return [((np.arange(int(np.prod(s)), dtype=np.float64) * k + 0.1) % 1 - 0.5).astype(np.float32).reshape(s)
            for s in shapes]


def model(keras, k):
    """A small model with fixed weights, compiled with a fresh Adam and mean squared error."""
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
    m.set_weights(initial_weights(k))
    m.compile(optimizer=keras.optimizers.Adam(learning_rate=0.05), loss="mse")
    return m


def interrupter(keras, where):
    """A callback that raises RuntimeError at the start of epoch where[0] (or of its batch where[1])."""
    class Interrupt(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epoch = None

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch
            if len(where) == 1 and epoch == where[0]:
                raise RuntimeError("Interrupting!")

        def on_train_batch_begin(self, batch, logs=None):
            if len(where) == 2 and (self.epoch, batch) == where:
                raise RuntimeError("Interrupting!")
    return Interrupt()


def _values(variables):
    return [np.asarray(v.numpy() if hasattr(v, "numpy") else v).tolist() for v in variables]


def _files(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else None


def _layout(path):
    """The weights file's datasets as [path, shape] (h5py: both frameworks' files read the same way)."""
    import h5py
    found = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.append([name, list(obj.shape)]) if isinstance(obj, h5py.Dataset)
                     else None)
    return found


def _metadata(folder):
    path = os.path.join(folder, "training_metadata.json")
    return json.loads(Path(path).read_text()) if os.path.exists(path) else None


def run_case(keras, folder, kwargs, where, damage):
    """One case in an empty folder: interrupted fit, (damage,) resumed fit, uninterrupted fit; what each left."""
    x, y = data()
    backup = os.path.join(folder, "backup")
    out = {}
    first = model(keras, 0.37)
    if where is not None:
        try:
            first.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
                      callbacks=[keras.callbacks.BackupAndRestore(backup, **kwargs), interrupter(keras, where)])
        except RuntimeError as e:
            out["raised"] = str(e)
        out["interrupted"] = {"files": _files(backup), "metadata": _metadata(backup),
                              "layout": _layout(os.path.join(backup, "latest.weights.h5")),
                              "weights": _values(first.get_weights()),
                              "optimizer": _values(first.optimizer.variables)}
    if damage:
        Path(backup, "latest.weights.h5").write_bytes(b"damaged")
    second = model(keras, 0.11)
    history = second.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0,
                         callbacks=[keras.callbacks.BackupAndRestore(backup, **kwargs)])
    out["resumed"] = {"epoch": history.epoch, "loss": history.history["loss"], "files": _files(backup),
                      "metadata": _metadata(backup), "weights": _values(second.get_weights()),
                      "optimizer": _values(second.optimizer.variables)}
    plain = model(keras, 0.37)
    history = plain.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    out["uninterrupted"] = {"epoch": history.epoch, "loss": history.history["loss"],
                            "weights": _values(plain.get_weights())}
    return out


def error(keras, backup_dir, kwargs):
    """[type name, message] of BackupAndRestore(backup_dir, **kwargs), or None."""
    try:
        keras.callbacks.BackupAndRestore(backup_dir, **kwargs)
    except Exception as e:  # noqa: BLE001  (recorded as they are)
        return [type(e).__name__, str(e)]
    return None


def main():
    import keras
    cases = {}
    for name, kwargs, where, damage in CASES:
        with tempfile.TemporaryDirectory() as folder:
            keras.utils.clear_session()
            cases[name] = {"kwargs": kwargs, "where": where, "damage": damage,
                           **run_case(keras, folder, kwargs, where, damage)}
    errors = [{"backup_dir": d, "kwargs": k, "error": error(keras, d, k)} for d, k in ERRORS]
    OUT.write_text(json.dumps({"keras": keras.__version__, "cases": cases, "errors": errors}) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

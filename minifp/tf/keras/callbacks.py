"""tf.keras.callbacks: minifp.keras's callbacks, with tf.keras's rules where the two differ: mode="auto" takes the
direction from the monitor's name ("acc" in it: higher is better) rather than from the compiled metrics,
ReduceLROnPlateau logs the rate as "lr", and ModelCheckpoint starts best at +-inf. BackupAndRestore is Keras 3's (its
`latest.weights.h5` and `training_metadata.json`, not tf-keras's TensorFlow checkpoint files)."""
from __future__ import annotations

import warnings

import numpy as np

from ...keras import callbacks as _callbacks
from ...keras.callbacks import *  # noqa: F401,F403  (the other callbacks are Keras 3's, the same classes)
from ...keras.callbacks import __all__  # noqa: F401


def _by_name(monitor):
    """tf.keras's guess for EarlyStopping and ModelCheckpoint: accuracies (and fmeasure) up, the rest down."""
    return np.greater if "acc" in monitor or monitor.startswith("fmeasure") else np.less


class EarlyStopping(_callbacks.EarlyStopping):
    """tf.keras's EarlyStopping: mode="auto" by the monitor's name."""

    def _auto_monitor_op(self):
        return _by_name(self.monitor)


class ModelCheckpoint(_callbacks.ModelCheckpoint):
    """tf.keras's ModelCheckpoint: mode="auto" by the monitor's name, best from +-inf, no save without the monitor."""

    _print_finished = False  # tf.keras prints only "saving model to ..."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # tf.keras picks the direction when the callback is made and starts best at +-inf (it prints "from inf")
        self._set_monitor_op()
        if self.best is None:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def _auto_monitor_op(self):
        return _by_name(self.monitor)

    def _should_save_model(self, epoch, logs, filepath):
        # tf.keras skips the save when the monitored value is missing (Keras 3 warns and saves)
        if self.save_best_only and (logs or {}).get(self.monitor) is None:
            warnings.warn(f"Can save best model only with {self.monitor} available, skipping.", stacklevel=2)
            return False
        return super()._should_save_model(epoch, logs, filepath)


class ReduceLROnPlateau(_callbacks.ReduceLROnPlateau):
    """tf.keras's ReduceLROnPlateau: mode="auto" lowers the rate unless "acc" is in the monitor's name; logs "lr"."""

    _rate_key = "lr"

    def _auto_monitor_op(self):
        return np.greater if "acc" in self.monitor else np.less

from ...keras._missing import missing as _missing  # noqa: E402

__getattr__ = _missing(__name__, "TensorFlow")

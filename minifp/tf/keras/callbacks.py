"""tf.keras.callbacks: minifp.keras's callbacks, with tf.keras's rules where the two differ: mode="auto" takes the
direction from the monitor's name ("acc" in it: higher is better) rather than from the compiled metrics, and
ReduceLROnPlateau logs the rate as "lr"."""
from __future__ import annotations

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
    """tf.keras's ModelCheckpoint: mode="auto" by the monitor's name."""

    def _auto_monitor_op(self):
        return _by_name(self.monitor)


class ReduceLROnPlateau(_callbacks.ReduceLROnPlateau):
    """tf.keras's ReduceLROnPlateau: mode="auto" lowers the rate unless "acc" is in the monitor's name; logs "lr"."""

    _rate_key = "lr"

    def _auto_monitor_op(self):
        return np.greater if "acc" in self.monitor else np.less

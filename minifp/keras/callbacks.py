"""Keras 3's callbacks: the hooks fit/evaluate/predict call, History, the progress bar and the usual monitors.

Decision rules (EarlyStopping, ReduceLROnPlateau, ModelCheckpoint's save_best_only) follow Keras 3's source
line for line, so the same losses stop, lower and save at the same epochs. Logs reach callbacks as Keras
sends them: a fresh dict per call, keys sorted, values Python floats.
"""
from __future__ import annotations

import collections
import csv
import json
import math
import os
import shutil
import sys
import time
import warnings

import numpy as np

from ..engine import atomic_file, Tensor as _EngineTensor
from ._callback import Callback, _is_default
from ._tensorboard import TensorBoard

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "Progbar", "EarlyStopping", "ModelCheckpoint",
           "BackupAndRestore", "LearningRateScheduler", "ReduceLROnPlateau", "CSVLogger", "TerminateOnNaN",
           "LambdaCallback", "TensorBoard"]


def _print(message, line_break=True):
    """Keras's io_utils.print_msg: straight to stdout."""
    sys.stdout.write(message + ("\n" if line_break else ""))
    sys.stdout.flush()


def _float(value):
    """A log value as a Python float where it converts (tensors, NumPy scalars), else unchanged."""
    try:
        if isinstance(value, _EngineTensor):
            return float(value.item())
        if hasattr(value, "numpy"):              # variables (an optimizer's learning_rate) and other tensors
            value = np.asarray(value.numpy())
        return float(value)
    except (TypeError, ValueError):
        return value


def pythonify_logs(logs):
    """Keras's pythonify_logs: nested dicts flattened, keys sorted, values floats where possible."""
    result = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            result.update(pythonify_logs(value))
        else:
            result[key] = _float(value)
    return result


class LambdaCallback(Callback):
    """A callback from plain functions: LambdaCallback(on_epoch_end=lambda epoch, logs: ...)."""

    def __init__(self, **hooks):
        super().__init__()
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}; valid hooks: "
                                 f"{', '.join(n for n in dir(Callback) if n.startswith('on_'))}")
            setattr(self, name, fn)


class CallbackList(Callback):
    """The callbacks of one fit/evaluate/predict, called together; adds History and ProgbarLogger as Keras does."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        super().__init__()
        callbacks = [] if callbacks is None else list(callbacks) if isinstance(callbacks, (list, tuple)) \
            else [callbacks]
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be keras.callbacks.Callback instances, got {cb!r} of type "
                                f"{type(cb).__name__}")
        self.callbacks = callbacks
        self._history = next((cb for cb in callbacks if isinstance(cb, History)), None)
        self._progbar = next((cb for cb in callbacks if isinstance(cb, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        self.set_model(model)
        self.set_params(params)
        self._batch_hooks = {}

    def set_params(self, params):
        self.params = params
        if params:
            for cb in self.callbacks:
                cb.set_params(params)

    def set_model(self, model):
        if not model:
            return
        super().set_model(model)
        if self._history:
            model.history = self._history
        for cb in self.callbacks:
            cb.set_model(model)

    def _hooked(self, name):
        """The callbacks whose hook `name` is not the empty default (per-batch calls skip the others)."""
        found = self._batch_hooks.get(name)
        if found is None:
            # Callback.on_train_batch_* forward to on_batch_*: overriding either one hooks the callback
            also = {"on_train_batch_begin": "on_batch_begin", "on_train_batch_end": "on_batch_end"}.get(name, name)
            found = self._batch_hooks[name] = [cb for cb in self.callbacks if not _is_default(getattr(cb, name))
                                               or not _is_default(getattr(cb, also))]
        return found

    def _call(self, name, *args):
        hooked = self._hooked(name)
        if not hooked:
            return
        logs = pythonify_logs(args[-1])
        for cb in hooked:
            getattr(cb, name)(*args[:-1], logs)

    def on_batch_begin(self, batch, logs=None):
        self._call("on_batch_begin", batch, logs)

    def on_batch_end(self, batch, logs=None):
        self._call("on_batch_end", batch, logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._call("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._call("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        # predict's logs hold the batch's outputs: passed as they are, as Keras's list does for non-numbers
        for cb in self._hooked("on_predict_batch_end"):
            cb.on_predict_batch_end(batch, logs)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs)

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", logs)


class History(Callback):
    """What fit() logged: history[key] is one value per epoch (loss, metrics, val_*); epoch lists the epochs.

    minifp adds `steps`: per-step lists ("time": seconds per step; under a LossScaleOptimizer also
    "loss_scale" (the scale after the step) and "skipped" (True where the step was skipped)), and
    `time_per_step`: seconds per step for each epoch. They stay out of `history`, whose lists keep
    Keras's shape (pandas.DataFrame(history.history) works).
    """

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []
        self.steps = {}
        self.time_per_step = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        self.model.history = self

    def __repr__(self):
        return f"<History epochs={len(self.epoch)} keys={list(self.history)}>"


class Progbar:
    """Keras's progress bar: `782/782 ━━━━━━━━━━━━━━━━━━━━ 16s 52ms/step - accuracy: 0.9012 - loss: 0.3301`."""

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None, unit_name="step"):
        self.target, self.width, self.verbose, self.interval, self.unit_name = target, width, verbose, interval, \
            unit_name
        self.stateful_metrics = set(stateful_metrics or ())
        # Keras tests for a dynamic display this way; "posix" is always imported on Linux and macOS
        self._dynamic_display = (hasattr(sys.stdout, "isatty") and sys.stdout.isatty()) or \
            "ipykernel" in sys.modules or "posix" in sys.modules or "PYCHARM_HOSTED" in os.environ
        self._seen_so_far = 0
        self._values = {}
        self._values_order = []
        self._start = time.time()
        self._last_update = 0
        self._time_after_first_step = None
        self._prev_total_width = 0

    def update(self, current, values=None, finalize=None):
        """Show step `current` with values [(name, value)] (shown as given: Keras's loggers pass results)."""
        if finalize is None:
            finalize = False if self.target is None else current >= self.target
        for k, v in values or []:
            if k not in self._values_order:
                self._values_order.append(k)
            self._values[k] = [v, 1]
        self._seen_so_far = current
        now = time.time()
        time_per_unit = self._estimate_step_duration(current, now)
        if self.verbose == 1:
            if now - self._last_update < self.interval and not finalize:
                return
            self._draw(current, now, time_per_unit, finalize)
        elif self.verbose == 2 and finalize and self.target:
            digits = int(math.log10(self.target)) + 1
            info = f"%{digits}d/%d" % (current, self.target) + f" - {now - self._start:.0f}s"
            info += f" -{self._format_time(time_per_unit)}"
            for k in self._values_order:
                info += f" - {k}: {self._number(self._values[k][0], signed=False)}"
            _print(info + "\n", line_break=False)
        self._last_update = now

    def add(self, n, values=None):
        self.update(self._seen_so_far + n, values)

    def _draw(self, current, now, time_per_unit, finalize):
        """One verbose=1 redraw, with Keras's colours and its count of invisible characters."""
        message = "\b" * self._prev_total_width + "\r" if self._dynamic_display else "\n"
        special = 0
        if self.target:
            digits = int(math.log10(self.target)) + 1
            bar = f"\x1b[1m{f'%{digits}d/%d' % (current, self.target)}\x1b[0m "
            special += 8
            filled = int(self.width * float(current) / self.target)
            if filled > 0:
                bar += f"\33[32m{'━' * filled}\x1b[0m"
                special += 9
            bar += f"\33[37m{'━' * (self.width - filled)}\x1b[0m"
            special += 9
        else:
            bar = "%7d/Unknown" % current
        if self.target and not finalize:
            eta = time_per_unit * (self.target - current)
            if eta > 3600:
                eta_format = "%d:%02d:%02d" % (eta // 3600, (eta % 3600) // 60, eta % 60)
            elif eta > 60:
                eta_format = "%d:%02d" % (eta // 60, eta % 60)
            else:
                eta_format = "%ds" % eta
            info = f" \x1b[1m{eta_format}\x1b[0m"
        else:
            info = f" \x1b[1m{now - self._start:.0f}s\x1b[0m"
        special += 8
        info += self._format_time(time_per_unit)
        for k in self._values_order:
            info += f" - {k}: {self._number(self._values[k][0])}"
        total_width = len(bar) + len(info) - special
        message += bar + info
        if self._prev_total_width > total_width:
            message += " " * (self._prev_total_width - total_width)
        if finalize:
            message += "\n"
        _print(message, line_break=False)
        self._prev_total_width = total_width

    @staticmethod
    def _number(value, signed=True):
        """Keras's number format: 4 decimals, or scientific for small values (verbose=2 tests avg > 1e-3)."""
        if not isinstance(value, (int, float, np.floating, np.integer)):
            return str(value)
        value = float(value)
        return f"{value:.4f}" if (abs(value) if signed else value) > 1e-3 else f"{value:.4e}"

    def _format_time(self, time_per_unit):
        if time_per_unit >= 1 or time_per_unit == 0:
            return f" {time_per_unit:.0f}s/{self.unit_name}"
        if time_per_unit >= 1e-3:
            return f" {time_per_unit * 1000.0:.0f}ms/{self.unit_name}"
        return f" {time_per_unit * 1000000.0:.0f}us/{self.unit_name}"

    def _estimate_step_duration(self, current, now):
        """Seconds per step, leaving out the first step once there are more (Keras's estimate)."""
        if not current:
            return 0
        if self._time_after_first_step is not None and current > 1:
            per = (now - self._time_after_first_step) / (current - 1)
        else:
            per = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per


class ProgbarLogger(Callback):
    """Prints Keras's progress bar (verbose=1) or one line per epoch (verbose=2) and the "Epoch i/n" headers."""

    def __init__(self):
        super().__init__()
        self.seen, self.progbar, self.target, self.verbose, self.epochs = 0, None, None, 1, 1
        self._called_in_fit = False

    def set_params(self, params):
        verbose = params["verbose"]
        self.verbose = 1 if verbose == "auto" else verbose
        self.epochs = params["epochs"]
        self.target = params["steps"]

    def on_train_begin(self, logs=None):
        self._called_in_fit = True          # fit's validation runs silently

    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._reset_progbar()
            self._maybe_init_progbar()

    def on_predict_begin(self, logs=None):
        self._reset_progbar()
        self._maybe_init_progbar()

    def on_epoch_begin(self, epoch, logs=None):
        self._reset_progbar()
        self._maybe_init_progbar()
        if self.verbose and self.epochs > 1:
            _print(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        self._update_progbar(batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._update_progbar(batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._update_progbar(batch, None)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize_progbar(logs)

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finalize_progbar(logs)

    def on_predict_end(self, logs=None):
        self._finalize_progbar(logs)

    def _reset_progbar(self):
        self.seen, self.progbar = 0, None

    def _maybe_init_progbar(self):
        if self.progbar is None:
            self.progbar = Progbar(target=self.target, verbose=self.verbose, unit_name="step")

    def _update_progbar(self, batch, logs=None):
        self._maybe_init_progbar()
        self.seen = batch + 1
        if self.verbose == 1:
            self.progbar.update(self.seen, list((logs or {}).items()), finalize=False)

    def _finalize_progbar(self, logs):
        if self.target is None:
            self.target = self.progbar.target = self.seen
        self.progbar.update(self.target, list((logs or {}).items()), finalize=True)


class MonitorCallback(Callback):
    """What EarlyStopping, ReduceLROnPlateau and ModelCheckpoint share: a monitored value and its direction."""

    def __init__(self, monitor="val_loss", mode="auto", baseline=None, min_delta=0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"{type(self).__name__} mode '{mode}' is unknown, fallback to auto mode.", stacklevel=3)
            mode = "auto"
        self.monitor, self.mode, self.best, self.min_delta, self.monitor_op = monitor, mode, baseline, \
            abs(min_delta), None

    def _set_monitor_op(self):
        """less or greater, from mode, or for "auto" from the metric's direction (loss: less), as Keras."""
        if self.mode == "min":
            self.monitor_op = np.less
        elif self.mode == "max":
            self.monitor_op = np.greater
        else:
            self.monitor_op = self._auto_monitor_op()
        if self.monitor_op is np.less:
            self.min_delta *= -1

    def _auto_monitor_op(self):
        """mode="auto": the direction of the compiled metric of that name (loss: less), or Keras 3's error."""
        name = self.monitor[4:] if self.monitor.startswith("val_") else self.monitor
        op = np.less if name == "loss" else None
        for m in _compiled_metrics(self.model):
            direction = getattr(m, "_direction", None) or _DIRECTIONS.get(type(m).__name__)
            if m.name == name and direction is not None:
                op = np.greater if direction == "up" else np.less
        if op is None:
            raise ValueError(f"{type(self).__name__} callback received monitor={self.monitor}, but Keras isn't "
                             f"able to automatically determine whether that metric should be maximized or "
                             f"minimized. Pass `mode='max'` in order to monitor based on the highest metric "
                             f"value, or pass `mode='min'` in order to use the lowest value.")
        return op

    def _is_improvement(self, monitor_value, reference_value):
        if reference_value is None:
            return True
        return bool(self.monitor_op(monitor_value - self.min_delta, reference_value))


# Keras's metric classes set `_direction`; these are its values, for metric objects that do not carry one.
_DIRECTIONS = {**dict.fromkeys(("Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy",
                                "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "AUC", "Precision",
                                "Recall"), "up"),
               **dict.fromkeys(("MeanSquaredError", "MeanAbsoluteError", "RootMeanSquaredError",
                                "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError"), "down")}


def _compiled_metrics(model):
    """The metric objects compile() made (Keras reads their `_direction`)."""
    getter = getattr(model, "_compiled_metric_objects", None)
    return list(getter()) if getter is not None else []


class EarlyStopping(MonitorCallback):
    """Stop training when the monitored value has not improved for `patience` epochs (Keras 3's rule)."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience, self.verbose, self.baseline = patience, verbose, baseline
        self.wait, self.stopped_epoch = 0, 0
        self.restore_best_weights, self.best_weights, self.start_from_epoch = restore_best_weights, None, \
            start_from_epoch

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best, self.best_weights, self.best_epoch = 0, 0, None, None, 0

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights, self.best_epoch = self.model.get_weights(), epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            _print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                _print(f"Restoring model weights from the end of the best epoch: {self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not available. "
                          f"Available metrics are: {','.join(logs)}", stacklevel=2)
        return value


class ReduceLROnPlateau(MonitorCallback):
    """Multiply the learning rate by `factor` when the monitored value plateaus (Keras 3's rule)."""

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0, **kwargs):
        super().__init__(monitor, mode, min_delta=min_delta)
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received factor={factor}")
        self.factor, self.min_lr, self.patience, self.verbose, self.cooldown = factor, min_lr, patience, verbose, \
            cooldown
        self.cooldown_counter, self.wait = 0, 0

    _rate_key = "learning_rate"             # the logs' name of the rate (tf.keras's: "lr")

    def _reset(self):
        self.best, self.cooldown_counter, self.wait = None, 0, 0

    def on_train_begin(self, logs=None):
        self._reset()

    def _reduce_lr(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _float(optimizer.learning_rate)
        if old_lr > np.float32(self.min_lr):
            new_lr = max(old_lr * self.factor, self.min_lr)
            optimizer.learning_rate = new_lr
            if self.verbose > 0:
                _print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.")
            return True
        return False

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        logs = logs if logs is not None else {}
        logs[self._rate_key] = _float(self.model.optimizer.learning_rate)     # History records it, as Keras's
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs)}.", stacklevel=2)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best, self.wait = current, 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience and self._reduce_lr(epoch):
                self.cooldown_counter, self.wait = self.cooldown, 0

    def in_cooldown(self):
        return self.cooldown_counter > 0


class LearningRateScheduler(Callback):
    """Set the learning rate at each epoch's start to schedule(epoch, lr) (or schedule(epoch))."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        if not hasattr(optimizer, "learning_rate"):
            raise ValueError('Optimizer must have a "learning_rate" attribute.')
        try:
            lr = self.schedule(epoch, _float(optimizer.learning_rate))
        except TypeError:                       # the old one-argument form
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, np.float32, np.float64)):
            raise ValueError(f"The output of the `schedule` function should be a float. Got: {lr}")
        optimizer.learning_rate = lr
        if self.verbose > 0:
            _print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _float(self.model.optimizer.learning_rate)


class ModelCheckpoint(MonitorCallback):
    """Save the weights after each epoch (or every save_freq batches), optionally only when the monitor improves.

    save_weights_only=True writes a `.weights.h5` file, otherwise the whole model goes to a `.keras` file (Keras's
    rules for the path; Keras's legacy whole-model `.h5` is refused when the callback is made).
    """

    _print_finished = True  # verbose: Keras 3 also says "finished saving model to ..." after each save

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__(monitor, mode, initial_value_threshold)
        self.verbose, self.filepath, self.save_best_only = verbose, os.fspath(filepath), save_best_only
        self.save_weights_only, self.save_freq = save_weights_only, save_freq
        self._batches_seen_since_last_saving, self._last_batch_seen, self._current_epoch = 0, None, 0
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {save_freq}. Expected save_freq are 'epoch' or integer "
                             f"values")
        if save_weights_only and not self.filepath.endswith(".weights.h5"):
            raise ValueError("When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided must "
                             f"end in `.weights.h5` (Keras weights format). Received: filepath={self.filepath}")
        if not save_weights_only and self.filepath.endswith(".h5"):
            # Keras accepts .h5 here for its legacy whole-model HDF5 format, which minifp does not write
            raise ValueError("ModelCheckpoint: minifp saves whole models in the `.keras` format only (not legacy "
                             f"`.h5`). Received: filepath={self.filepath}")
        if not save_weights_only and not self.filepath.endswith(".keras"):
            raise ValueError(f"The filepath provided must end in `.keras` (Keras model format). Received: "
                             f"filepath={self.filepath}")

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model(self._current_epoch, batch, logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        if self.save_freq == "epoch":
            self._save_model(epoch, None, logs)

    def _should_save_on_batch(self, batch):
        if self.save_freq == "epoch":
            return False
        added = batch + 1 if self._last_batch_seen is None or batch <= self._last_batch_seen \
            else batch - self._last_batch_seen
        self._batches_seen_since_last_saving += added
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _should_save_model(self, epoch, logs, filepath):
        logs = logs or {}
        if not self.save_best_only:
            if self.verbose > 0:
                _print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Can save best model only with {self.monitor} available.", stacklevel=2)
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                _print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} to {current:.5f}, saving model "
                       f"to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            _print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best}")
        return False

    def _save_model(self, epoch, batch, logs):
        logs = logs or {}
        filepath = self._get_file_path(epoch, batch, logs)
        if os.path.isdir(filepath):
            raise IOError(f"Please specify a non-directory filepath for ModelCheckpoint. Filepath used is an "
                          f"existing directory: {filepath}")
        if self._should_save_model(epoch, logs, filepath):
            dirname = os.path.dirname(filepath)
            if dirname:
                os.makedirs(dirname, exist_ok=True)
            if self.save_weights_only:
                self.model.save_weights(filepath)
            else:
                self.model.save(filepath, overwrite=True)
            if self.verbose > 0 and self._print_finished:
                _print(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")

    def _get_file_path(self, epoch, batch, logs):
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". Reason: {e}') from None


class BackupAndRestore(Callback):
    """Back up the weights, the optimizer's variables and the epoch into backup_dir during fit; a fit that starts
    with a backup there resumes from it, and a fit that ends deletes it (delete_checkpoint).

    Files (Keras 3's): `latest.weights.h5` (model.save_weights: the layers' and the optimizer's variables) and
    `training_metadata.json` ({"epoch", "batch"}), with double_checkpoint the previous pair as `*.bkp`, tried when
    the latest weights cannot be read. Every file is written atomically; loading reads only data.
    """

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False, delete_checkpoint=True):
        super().__init__()
        self.save_freq, self.double_checkpoint, self.delete_checkpoint = save_freq, double_checkpoint, \
            delete_checkpoint
        self._batches_seen_since_last_saving, self._last_batch_seen, self._current_epoch = 0, 0, 0
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        self.backup_dir = backup_dir
        self._weights_path = os.path.join(backup_dir, "latest.weights.h5")
        self._training_metadata_path = os.path.join(backup_dir, "training_metadata.json")
        self._prev_weights_path = f"{self._weights_path}.bkp"
        self._prev_training_metadata_path = f"{self._training_metadata_path}.bkp"
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Invalid value for argument `save_freq`. Received: save_freq={save_freq}. Expected "
                             f"either 'epoch' or an integer value.")

    def on_train_begin(self, logs=None):
        if not self.model.built:
            raise ValueError(f"To use the BackupAndRestore callback, you model must be built before you call "
                             f"`fit()`. Model {self.model} is unbuilt. You can build it beforehand by calling it "
                             f"on a batch of data.")
        try:
            self._load_model()
        except (OSError, ValueError) as e:
            # damaged weights (h5py's OSError in Keras, a ValueError from minifp's load_weights): the previous pair
            if isinstance(e, json.JSONDecodeError) or not os.path.exists(self._prev_weights_path):
                raise
            _copy(self._prev_weights_path, self._weights_path)
            if os.path.exists(self._prev_training_metadata_path):
                _copy(self._prev_training_metadata_path, self._training_metadata_path)
            elif os.path.exists(self._training_metadata_path):
                os.remove(self._training_metadata_path)
            self._load_model()

    def _load_model(self):
        """Restore the backup, if there is one: weights and optimizer variables, then the epoch fit starts at."""
        if os.path.exists(self._weights_path):
            optimizer = self.model.optimizer
            if optimizer is not None and not optimizer.built:
                optimizer.build(self.model.trainable_variables)     # its variables must exist to be loaded
            self.model.load_weights(self._weights_path)
        if os.path.exists(self._training_metadata_path):
            with open(self._training_metadata_path) as f:
                training_metadata = json.loads(f.read())
            self.model._initial_epoch = training_metadata["epoch"]

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch, self._last_batch_seen = epoch + 1, 0
        if self.save_freq == "epoch":
            self._save_model()

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model()

    def _save_model(self):
        """Write the backup (keeping the previous one as `*.bkp` with double_checkpoint)."""
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint and os.path.exists(self._weights_path):
            _copy(self._weights_path, self._prev_weights_path)
        if self.double_checkpoint and os.path.exists(self._training_metadata_path):
            _copy(self._training_metadata_path, self._prev_training_metadata_path)
        self.model.save_weights(self._weights_path, overwrite=True)
        metadata = {"epoch": self._current_epoch, "batch": self._last_batch_seen}
        with atomic_file(self._training_metadata_path) as f:
            f.write(json.dumps(metadata).encode())

    _should_save_on_batch = ModelCheckpoint._should_save_on_batch     # (Keras's two copies count alike)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and os.path.exists(self.backup_dir):
            shutil.rmtree(self.backup_dir)


def _copy(source, target):
    """Copy a file atomically: `target` is the old file or the whole new one, never a part."""
    with open(source, "rb") as f, atomic_file(target) as out:
        shutil.copyfileobj(f, out)


class CSVLogger(Callback):
    """Write each epoch's logs as a row of a CSV file (columns: epoch, then the sorted keys)."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep, self.filename, self.append = separator, os.fspath(filename), append
        self.writer, self.keys, self.append_header, self.csv_file = None, None, True, None

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="")
        self.writer, self.keys = None, None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}

        def handle_value(k):
            if isinstance(k, str):
                return k
            if isinstance(k, collections.abc.Iterable) and not (isinstance(k, np.ndarray) and k.ndim == 0):
                return f'"[{", ".join(map(str, k))}]"'
            return k

        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys.extend([f"val_{k}" for k in self.keys])
        if not self.writer:
            dialect = type("CustomDialect", (csv.excel,), {"delimiter": self.sep})
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys, dialect=dialect)
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, handle_value(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None


class TerminateOnNaN(Callback):
    """Stop training (or raise, with raise_error=True) when a batch's loss is NaN or inf."""

    def __init__(self, raise_error=False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and (np.isnan(loss) or np.isinf(loss)):
            if self.raise_error:
                raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: {loss}. Terminating "
                                   f"training immediately.")
            _print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True

from ._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.callbacks")

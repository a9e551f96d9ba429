"""keras.callbacks.Callback, the base every callback subclasses (its own module: callbacks.py and the TensorBoard
callback both build on it)."""
from __future__ import annotations

__all__ = ["Callback"]


def _is_default(method):
    """True when a hook is Callback's own (empty) one, so the list can skip it."""
    return getattr(method, "_is_default", False)


def _default(method):
    method._is_default = True
    return method


class Callback:
    """Base class of callbacks: every hook does nothing; `model` and `params` are set by fit/evaluate/predict."""

    def __init__(self):
        self.params = None
        self._model = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self._model = model

    @property
    def model(self):
        return self._model

    @_default
    def on_batch_begin(self, batch, logs=None):
        """A training batch begins (kept for backward compatibility, as Keras)."""

    @_default
    def on_batch_end(self, batch, logs=None):
        """A training batch ended (kept for backward compatibility, as Keras)."""

    @_default
    def on_epoch_begin(self, epoch, logs=None):
        """An epoch of fit begins."""

    @_default
    def on_epoch_end(self, epoch, logs=None):
        """An epoch of fit ended; logs hold the epoch's metrics and val_* ones."""

    @_default
    def on_train_batch_begin(self, batch, logs=None):
        """A training batch begins."""
        self.on_batch_begin(batch, logs=logs)

    @_default
    def on_train_batch_end(self, batch, logs=None):
        """A training batch ended; logs hold the running metrics."""
        self.on_batch_end(batch, logs=logs)

    @_default
    def on_test_batch_begin(self, batch, logs=None):
        """An evaluation batch begins."""

    @_default
    def on_test_batch_end(self, batch, logs=None):
        """An evaluation batch ended."""

    @_default
    def on_predict_batch_begin(self, batch, logs=None):
        """A prediction batch begins."""

    @_default
    def on_predict_batch_end(self, batch, logs=None):
        """A prediction batch ended."""

    @_default
    def on_train_begin(self, logs=None):
        """fit begins."""

    @_default
    def on_train_end(self, logs=None):
        """fit ended."""

    @_default
    def on_test_begin(self, logs=None):
        """evaluate (or fit's validation) begins."""

    @_default
    def on_test_end(self, logs=None):
        """evaluate (or fit's validation) ended."""

    @_default
    def on_predict_begin(self, logs=None):
        """predict begins."""

    @_default
    def on_predict_end(self, logs=None):
        """predict ended."""

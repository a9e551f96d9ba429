"""Keras's training API for modules: compile, fit, evaluate, predict, weights, summary."""
from __future__ import annotations

import time

import numpy as np

from . import _checks, checkpoint, optim
from . import losses as L
from ._formats import float16
from ._random import rng
from ._tensor import Tensor, no_grad, tensor
from .mixed_precision import LossScaleOptimizer

__all__ = ["Model", "History"]

METRICS = ("accuracy",)


class History:
    """What fit() measured: history[key] lists one value per epoch (per step for loss_scale)."""

    def __init__(self):
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def add(self, key, value):
        self.history.setdefault(key, []).append(value)

    def __repr__(self):
        return f"History({', '.join(self.history)})"


def _accuracy(y, out):
    pred = out.argmax(axis=-1)
    truth = y.argmax(axis=-1) if y.ndim == out.ndim else y.reshape(-1)
    return float(np.mean(pred == truth))


def _progress(total, desc, verbose):
    """A tqdm bar when tqdm is installed and verbose, else None."""
    if not verbose:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="step", leave=True)


class Model:
    """Mixin for Module subclasses: the Keras workflow (compile, fit, evaluate, predict, ...)."""

    optimizer = None

    def compile(self, optimizer="rmsprop", loss=None, metrics=None):
        """Choose optimizer and loss (names or objects); under mixed_float16, wrap in a LossScaleOptimizer."""
        # Everything is checked before the optimizer is wrapped: a failed compile() leaves it unmarked.
        if not isinstance(optimizer, (str, optim.Optimizer)):
            raise TypeError(f"compile(): optimizer must be a name ({', '.join(optim.OPTIMIZERS)}) or a "
                            f"minifp.optim.Optimizer, got {type(optimizer).__name__}")
        opt = optim.get(optimizer)
        if metrics is not None and not isinstance(metrics, (list, tuple)):
            raise TypeError(f"compile(): metrics must be a list of names ({', '.join(METRICS)}) or None, got "
                            f"{metrics!r}")
        unknown = [m for m in (metrics or []) if m not in METRICS]
        if unknown:
            raise ValueError(f"unknown metric(s) {unknown}; valid metrics: {', '.join(METRICS)}")
        if loss is None:
            raise ValueError(f"compile() needs a loss; valid names: {', '.join(L.LOSSES)}, or a callable")
        loss_fn = L.get(loss)
        if self.policy.compute_format == float16 and not isinstance(opt, LossScaleOptimizer):
            opt = LossScaleOptimizer(opt)       # as Keras does for mixed_float16
        self.optimizer, self.loss_fn, self.metrics = opt, loss_fn, list(metrics or [])

    def _compiled(self, caller):
        if self.optimizer is None:
            raise RuntimeError(f"call compile(optimizer, loss) before {caller}()")

    # -- one step -------------------------------------------------------------------------------
    def train_step(self, x, y):
        """Forward, loss, (scaled) backward, apply: returns (loss value, outputs as float32)."""
        out = self(tensor(x))
        loss = self.loss_fn(y, out)
        params = self.parameters()
        for p in params:
            p.grad = None
        opt = self.optimizer
        if isinstance(opt, LossScaleOptimizer):
            opt.get_scaled_loss(loss).backward()
            grads = opt.get_unscaled_gradients([p.grad for p in params])
        else:
            loss.backward()
            grads = [p.grad for p in params]
        opt.apply_gradients(zip(grads, params))
        return loss.item(), out.float32()

    # -- the loops ----------------------------------------------------------------------------------
    def fit(self, x, y, batch_size=32, epochs=1, verbose=1, validation_split=0.0, validation_data=None,
            shuffle=True):
        """Train for `epochs`; returns a History of loss, accuracy, val_*, time_per_step and loss_scale."""
        self._compiled("fit")
        x, y, batch_size, verbose, validation_data = _fit_arguments(x, y, batch_size, epochs, verbose,
                                                                    validation_split, validation_data, shuffle)
        history = History()
        steps = -(-len(x) // batch_size)
        for epoch in range(epochs):
            self.train()
            order = rng().permutation(len(x)) if shuffle else np.arange(len(x))
            bar = _progress(steps, f"Epoch {epoch + 1}/{epochs}", verbose == 1)     # 2: a line per epoch
            total, correct, skipped, start = 0.0, 0.0, 0, time.perf_counter()
            for b in range(steps):
                idx = order[b * batch_size:(b + 1) * batch_size]
                loss, out = self.train_step(x[idx], y[idx])
                total += loss * len(idx)
                correct += _accuracy(y[idx], out) * len(idx) if self.metrics else 0
                if isinstance(self.optimizer, LossScaleOptimizer):
                    history.add("loss_scale", self.optimizer.loss_scale)
                    skipped += self.optimizer.last_step_skipped
                if bar is not None:
                    bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
                    bar.update()
            per_step = (time.perf_counter() - start) / steps
            logs = {"loss": total / len(x)}
            if self.metrics:
                logs["accuracy"] = correct / len(x)
            if validation_data is not None:
                val = self.evaluate(*validation_data, batch_size=batch_size)
                logs["val_loss"] = val[0] if self.metrics else val
                if self.metrics:
                    logs["val_accuracy"] = val[1]
            logs["time_per_step"] = per_step
            if isinstance(self.optimizer, LossScaleOptimizer):
                logs["skipped_steps"] = skipped
            for k, v in logs.items():
                history.add(k, v)
            history.epoch.append(epoch)
            line = " - ".join(f"{k}: {v:.4g}" for k, v in logs.items() if k != "time_per_step")
            if bar is not None:
                bar.set_postfix_str(f"{per_step * 1e3:.1f} ms/step - {line}")
                bar.close()
            elif verbose:
                print(f"Epoch {epoch + 1}/{epochs} - {per_step * 1e3:.1f} ms/step - {line}")
        return history

    def evaluate(self, x, y, batch_size=32, verbose=0):
        """Loss (and accuracy, if compiled with it) over (x, y), in eval mode."""
        self._compiled("evaluate")
        x, y = _pair(x, y, "evaluate()")
        batch_size = _batch_size(batch_size, "evaluate()")
        _verbose(verbose, "evaluate()")
        out = self.predict(x, batch_size)
        with no_grad():
            loss = self.loss_fn(y, tensor(out)).item()
        return [loss, _accuracy(y, out)] if self.metrics else loss

    def predict(self, x, batch_size=32):
        """Outputs for x as a float32 array, in eval mode and without a graph; x must hold a sample (as in Keras)."""
        x = _samples(x, "x", "predict()")
        batch_size = _batch_size(batch_size, "predict()")
        was_training = self.training
        self.eval()
        try:
            with no_grad():
                outs = [self(tensor(x[i:i + batch_size])).float32() for i in range(0, len(x), batch_size)]
        finally:
            self.train(was_training)
        return np.concatenate(outs)

    # -- weights ----------------------------------------------------------------------------------------
    def get_weights(self):
        """Every variable's values (storage dtype), in order."""
        return [v.numpy().copy() for _, v in self.named_variables()]

    def set_weights(self, weights):
        """Set every variable from get_weights()-shaped arrays, rounded into its format; all checked first."""
        named = self.named_variables()
        if len(weights) != len(named):
            raise ValueError(f"set_weights() got {len(weights)} arrays for {len(named)} variables")
        for i, (w, (name, v)) in enumerate(zip(weights, named)):
            if np.shape(w) != v.shape:
                raise ValueError(f"weight {i} ({name}) has shape {v.shape}, got {np.shape(w)}")
        for v, values in checkpoint.checked_values(named, {k: w for (k, _), w in zip(named, weights)}):
            v.assign(values)

    def save_weights(self, path):
        """Write every variable, with its format, to exactly `path` (an .npz of raw bits and a JSON index; atomic)."""
        checkpoint.save_weights(path, self)

    def load_weights(self, path):
        """Read the variables that save_weights() or minifp.checkpoint.save() wrote; all checked before any is set."""
        checkpoint.load_weights(path, self)

    def summary(self, print_fn=print):
        """Layers, output shapes, parameter counts and dtype policies, as Keras prints them."""
        rows = [("Layer (type)", "Output Shape", "Param #", "Policy")]
        total = 0
        for i, layer in enumerate(getattr(self, "layers", [])):
            n = sum(v.size for _, v in layer.named_variables() if v.requires_grad)
            total += n
            shape = "?" if layer.output_shape is None else str((None,) + tuple(layer.output_shape[1:]))
            rows.append((f"{i} ({type(layer).__name__})", shape, str(n), layer.policy.name))
        widths = [max(len(r[j]) for r in rows) + 2 for j in range(4)]
        lines = [f'Model: "{type(self).__name__.lower()}"'] + ["".join(c.ljust(w) for c, w in zip(r, widths))
                                                              for r in rows]
        lines.append(f"Total params: {total}")
        print_fn("\n".join(lines))


def _samples(x, name, where):
    """x as an array of samples: numbers, at least one dimension and at least one sample."""
    if isinstance(x, Tensor):
        x = x.float32() if x.fmt is not None else x._data
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{where}: {name} must hold numbers, got an array of dtype {x.dtype}")
    if x.ndim == 0 or len(x) == 0:
        raise ValueError(f"{where}: {name} must hold at least one sample along its first axis, got shape {x.shape}")
    return x


def _pair(x, y, where):
    x, y = _samples(x, "x", where), _samples(y, "y", where)
    if len(x) != len(y):
        raise ValueError(f"x and y must have the same number of samples; got {len(x)} inputs and {len(y)} labels")
    return x, y


def _fit_arguments(x, y, batch_size, epochs, verbose, validation_split, validation_data, shuffle):
    """fit()'s arguments checked, all before training: x, y, batch_size, verbose and validation_data to use."""
    x, y = _pair(x, y, "fit()")
    batch_size = _batch_size(batch_size, "fit()")
    _checks.integer("epochs", epochs, lo=0, where="fit(): ")
    verbose = _verbose(verbose, "fit()")
    _checks.flag("shuffle", shuffle, where="fit(): ")
    _checks.number("validation_split", validation_split, lo=0, hi=1, hi_open=True, where="fit(): ")
    if validation_data is not None:
        if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
            raise TypeError(f"fit(): validation_data must be a pair (x_val, y_val), got "
                            f"{type(validation_data).__name__}")
        validation_data = _pair(*validation_data, "fit(): validation_data")
    elif validation_split:
        cut = int(len(x) * (1 - validation_split))          # Keras takes the last part, unshuffled
        if not 0 < cut < len(x):
            raise ValueError(f"fit(): validation_split={validation_split} of {len(x)} samples leaves {cut} for "
                             f"training and {len(x) - cut} for validation; each needs at least one")
        x, y, validation_data = x[:cut], y[:cut], (x[cut:], y[cut:])
    return x, y, batch_size, verbose, validation_data


def _batch_size(batch_size, where):
    """Keras's batch_size: an integer >= 1, None meaning 32."""
    return 32 if batch_size is None else _checks.integer("batch_size", batch_size, lo=1, where=where + ": ")


def _verbose(verbose, where):
    """Keras's verbose: 0 (silent), 1 (progress bar), 2 (one line per epoch) or "auto" (1)."""
    if isinstance(verbose, str) and verbose == "auto":
        return 1
    if not (isinstance(verbose, (bool, np.bool_)) or _checks.is_integer(verbose)) or verbose not in (0, 1, 2):
        raise ValueError(f"{where}: verbose must be 0, 1, 2 or 'auto', got {verbose!r}")
    return int(verbose)

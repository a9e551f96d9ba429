"""Keras 3's training API, the mixin keras.Model inherits: compile, fit, evaluate, predict and the *_on_batch calls.

The loops follow Keras 3's (its torch trainer's, which is eager as minifp is): batches of NumPy arrays become
tensors, `train_step(data)` (users may override it) returns the logs, callbacks see them sorted as floats,
History keeps one value per epoch. Gradients come from the engine's autograd (`loss.backward()`) and reach
`optimizer.apply(grads, trainable_variables)`; under a LossScaleOptimizer the loss is scaled first and
`apply` unscales and skips non-finite steps.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from ..engine import apply, checks, float32, no_grad, rng, storage, Tensor as _EngineTensor, tensor
from . import callbacks as callbacks_module
from .metrics import Mean

__all__ = ["Trainer", "unpack_x_y_sample_weight", "pack_x_y_sample_weight"]


# -- data ---------------------------------------------------------------------------------------------


def unpack_x_y_sample_weight(data):
    """(x,), (x, y) or (x, y, sample_weight) as (x, y, sample_weight), None where absent (Keras's utility)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or `(x, y, sample_weight)`, "
                     f"found: {data}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The tuple train_step receives: (x,), (x, y) or (x, y, sample_weight)."""
    if y is None:
        return (x,)
    if sample_weight is None:
        return x, y
    return x, y, sample_weight


def _map(fn, struct):
    """fn over the arrays of x or y: one array, a list/tuple of them or a dict of them (Keras's simple cases)."""
    if struct is None:
        return None
    if isinstance(struct, dict):
        return {k: _map(fn, v) for k, v in struct.items()}
    if isinstance(struct, (list, tuple)):
        return type(struct)(_map(fn, v) for v in struct)
    return fn(struct)


def _leaves(struct):
    if struct is None:
        return []
    if isinstance(struct, dict):
        return [leaf for v in struct.values() for leaf in _leaves(v)]
    if isinstance(struct, (list, tuple)):
        return [leaf for v in struct for leaf in _leaves(v)]
    return [struct]


def _as_array(x, name, where):
    """One input as a NumPy array of numbers (tensors give their values; float64 stays until it becomes a tensor)."""
    if isinstance(x, _EngineTensor):
        return x.float32() if x.fmt is not None else storage(x)
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: `{name}` must hold numbers, got an array of dtype {arr.dtype}")
    if arr.ndim == 0:
        raise ValueError(f"{where}: `{name}` must have a batch dimension, got a scalar {x!r}")
    return arr


def _arrays(x, name, where):
    """x as NumPy arrays in its structure: a list or tuple holding only arrays/tensors is several inputs."""
    if x is None:
        return None
    if isinstance(x, (list, tuple)) and not all(isinstance(v, (np.ndarray, _EngineTensor, dict, list, tuple))
                                                for v in x):
        return _as_array(x, name, where)            # a nested Python list of numbers: one array
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, (list, tuple)) for v in x) \
            and not any(isinstance(leaf, (np.ndarray, _EngineTensor)) for leaf in _leaves(x)):
        return _as_array(x, name, where)
    return _map(lambda a: _as_array(a, name, where), x)


def _num_samples(struct, where):
    """The common first dimension of every array of (x, y, sample_weight)."""
    sizes = {len(a) for a in _leaves(struct)}
    if len(sizes) > 1:
        shapes = [np.shape(a) for a in _leaves(struct)]
        raise ValueError(f"{where}: all arrays must contain the same number of samples (the first dimension). "
                         f"Received arrays of shapes {shapes}")
    if not sizes:
        raise ValueError(f"{where}: no data given (x is None)")
    return sizes.pop()


def _class_weight_to_sample_weight(y, class_weight):
    """Keras's class_weight rule: each sample weighs class_weight[its class] (argmax of one-hot labels), else 1."""
    if not hasattr(class_weight, "items") or not hasattr(class_weight, "get"):
        raise ValueError(f"`class_weight` must be a dict-like mapping of class indices to weights. Received: "
                         f"class_weight={class_weight} of type {type(class_weight)}.")
    cleaned = {}
    for key, value in class_weight.items():
        try:
            cleaned[int(key)] = value
        except (TypeError, ValueError):
            raise ValueError(f"`class_weight` must be a dictionary with integer keys representing class indices. "
                             f"Received an invalid key: {key!r} of type {type(key)}.") from None
    if isinstance(y, (dict, list, tuple)):
        raise ValueError("`class_weight` is only supported for Models with a single output.")
    y = np.asarray(y)
    if y.ndim > 1:
        y = np.argmax(y, axis=-1) if y.shape[-1] != 1 else np.squeeze(y, axis=-1)
    y = np.round(y).astype("int32")
    return np.array([cleaned.get(int(c), 1.0) for c in y], dtype=np.float32)


class _Batches:
    """Keras's epoch iterator over arrays: (begin_step, end_step, list of batches) per execution.

    With steps_per_epoch fewer than the data's batches, the next epoch continues where this one stopped
    (Keras's iterator does); when the data runs out first, Keras's warning and the epoch ends.
    """

    def __init__(self, data, batch_size, steps_per_epoch=None, shuffle=False, steps_per_execution=1):
        self.data, self.batch_size, self.steps_per_epoch = data, batch_size, steps_per_epoch
        self.shuffle, self.steps_per_execution = shuffle, steps_per_execution
        self.num_samples = _num_samples(data, "fit()")
        self.num_batches_in_data = -(-self.num_samples // batch_size)
        self._pending = None                     # batches left over from an epoch cut short by steps_per_epoch

    @property
    def num_batches(self):
        return self.steps_per_epoch or self.num_batches_in_data

    def _order(self):
        n, bs = self.num_samples, self.batch_size
        if self.shuffle == "batch":
            starts = rng().permutation(self.num_batches_in_data) * bs
            return [np.arange(s, min(s + bs, n)) for s in starts]
        order = rng().permutation(n) if self.shuffle else np.arange(n)
        return [order[i:i + bs] for i in range(0, n, bs)]

    def _slice(self, idx):
        if not self.shuffle:                # contiguous: views, no copy
            idx = slice(int(idx[0]), int(idx[-1]) + 1)
        return _map(lambda a: a[idx], self.data)

    def __iter__(self):
        steps = self.num_batches
        if self._pending is None or self.steps_per_epoch is None:
            self._pending = iter(self._order())
        step, taken = 0, 0
        while step < steps:
            buffer = []
            for _ in range(self.steps_per_execution):
                idx = next(self._pending, None)
                if idx is None:
                    break
                buffer.append(self._slice(np.sort(idx) if self.shuffle == "batch" else idx))
            if not buffer:
                if self.steps_per_epoch:
                    warnings.warn("Your input ran out of data; interrupting training. Make sure that your dataset "
                                  "or generator can generate at least `steps_per_epoch * epochs` batches. You may "
                                  "need to use the `.repeat()` function when building your dataset.", stacklevel=3)
                self._pending = None
                return
            yield step, step + self.steps_per_execution - 1, buffer
            step += self.steps_per_execution
            taken += len(buffer)
            if len(buffer) < self.steps_per_execution:
                break
        if self.steps_per_epoch is None or taken >= self.num_batches_in_data:
            self._pending = None


def is_iterable_data(x):
    """Whether x is a dataset, generator or other iterable of batches (Keras's data adapters for tf.data,
    generators and PyDatasets): it can be iterated and is not an array, a tensor or a structure of them."""
    return x is not None and hasattr(x, "__iter__") and not isinstance(
        x, (np.ndarray, _EngineTensor, list, tuple, dict, str, bytes))


def _known_length(data):
    """The number of batches of an iterable when it knows it (a finite dataset's len), else None."""
    try:
        n = len(data)
    except TypeError:                 # infinite, unknown, or a generator
        return None
    return n if n >= 0 else None


class _IterBatches:
    """Keras's epoch iterator over a dataset or generator of (x,), (x, y) or (x, y, sample_weight) batches.

    Without steps_per_epoch an epoch is one pass (a fresh iterator each epoch); with it, an epoch is that many
    batches and the next one continues the same iterator (an endless `.repeat()` dataset never runs out); when
    the data runs out first, Keras's warning and the epoch ends.
    """

    def __init__(self, data, steps_per_epoch=None, steps_per_execution=1, where="fit()", class_weight=None):
        self.data, self.steps_per_epoch, self.steps_per_execution = data, steps_per_epoch, steps_per_execution
        self.where, self.class_weight = where, class_weight
        self._iterator = None

    @property
    def num_batches(self):
        return self.steps_per_epoch or _known_length(self.data)

    def _batch(self, element):
        x, y, sample_weight = unpack_x_y_sample_weight(element)
        x, y, sample_weight = _data_arrays(x, y, sample_weight, self.where)
        if self.class_weight is not None and sample_weight is None and y is not None:
            sample_weight = _class_weight_to_sample_weight(y, self.class_weight)
        return pack_x_y_sample_weight(x, y, sample_weight)

    def __iter__(self):
        if self._iterator is None or self.steps_per_epoch is None:
            self._iterator = iter(self.data)
        steps, step = self.steps_per_epoch, 0
        while steps is None or step < steps:
            buffer = []
            for _ in range(self.steps_per_execution if steps is None
                           else min(self.steps_per_execution, steps - step)):
                element = next(self._iterator, _END)
                if element is _END:
                    break
                buffer.append(self._batch(element))
            if not buffer:
                if steps is not None:
                    warnings.warn("Your input ran out of data; interrupting training. Make sure that your dataset "
                                  "or generator can generate at least `steps_per_epoch * epochs` batches. You may "
                                  "need to use the `.repeat()` function when building your dataset.", stacklevel=3)
                self._iterator = None
                return
            yield step, step + len(buffer) - 1, buffer
            step += len(buffer)


_END = object()


def _tensors(struct):
    """NumPy arrays of a batch as minifp.keras tensors (as Keras's backends hand batches to train_step)."""
    from ._tensor import convert_to_tensor
    return _map(convert_to_tensor, struct)


def _to_numpy(t):
    """An output tensor as a NumPy array of its dtype (float16 stays float16, as Keras's convert_to_numpy)."""
    if isinstance(t, _EngineTensor):
        return np.asarray(t.numpy())
    return np.asarray(t)


# -- the mixin ------------------------------------------------------------------------------------------


class Trainer:
    """What keras.Model adds for training: compile, fit, evaluate, predict, train/test/predict_on_batch."""

    # Class-level defaults: the mixin works whatever the model's __init__ sets up.
    compiled = False
    optimizer = None
    loss = None
    stop_training = False
    stop_evaluating = False
    stop_predicting = False
    history = None
    steps_per_execution = 1
    _initial_epoch = None       # set by BackupAndRestore when it restores a backup: fit starts there
    _compile_loss = None
    _compile_metrics = None
    _tf_keras = False           # minifp.tf.keras's models set it: tf.keras's rules where they differ from Keras 3
    _loss_scale_optimizer = None    # the class compile() wraps a mixed_float16 optimizer in (None: Keras 3's)
    _loss_tracker = None

    # -- compile ------------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True):
        """Configure training: optimizer, loss and metrics (names or objects), as Keras 3's compile.

        Under the mixed_float16 policy (and auto_scale_loss) the optimizer is wrapped in a LossScaleOptimizer;
        a pure float16 policy is not. run_eagerly and jit_compile are accepted and change nothing (minifp
        always runs eagerly).
        """
        from . import optimizers as optimizers_module
        checks.integer("steps_per_execution", steps_per_execution, lo=1, where="compile(): ")
        if metrics is not None and not isinstance(metrics, (list, tuple, dict)):
            raise ValueError(f"Expected `metrics` argument to be a list, tuple, or dict. Received instead: "
                             f"metrics={metrics} of type {type(metrics)}")
        if weighted_metrics is not None and not isinstance(weighted_metrics, (list, tuple, dict)):
            raise ValueError(f"Expected `weighted_metrics` argument to be a list, tuple, or dict. Received instead: "
                             f"weighted_metrics={weighted_metrics} of type {type(weighted_metrics)}")
        output_names = getattr(self, "output_names", None)
        loss_fn = _CompileLoss(loss, loss_weights, output_names, self._tf_keras) if loss is not None else None
        compile_metrics = _CompileMetrics(metrics, weighted_metrics, output_names) if metrics is not None \
            or weighted_metrics is not None else None
        opt = optimizer if _is_tf_keras_lso(optimizer) else optimizers_module.get(optimizer)
        if auto_scale_loss and self._policy_name() == "mixed_float16" and opt is not None \
                and not _is_tf_keras_lso(opt):
            # Keras wraps for mixed_float16 only; tf.keras's models name their own LossScaleOptimizer
            LossScaleOptimizer = self._loss_scale_optimizer or optimizers_module.LossScaleOptimizer
            if not isinstance(opt, LossScaleOptimizer) and getattr(opt, "inner_optimizer", None) is None:
                opt = LossScaleOptimizer(opt, name="loss_scale_optimizer") if _takes_name(LossScaleOptimizer) \
                    else LossScaleOptimizer(opt)
        self.optimizer = opt
        self.loss = loss
        self._compile_loss = loss_fn
        self._compile_metrics = compile_metrics
        self._loss_tracker = Mean(name="loss")
        self.steps_per_execution = steps_per_execution
        self.run_eagerly, self.jit_compile = run_eagerly, jit_compile
        self.stop_training = False
        self.compiled = True

    def _policy_name(self):
        policy = getattr(self, "dtype_policy", None)
        if policy is None:
            from .mixed_precision import global_policy
            policy = global_policy()
        return getattr(policy, "name", policy)

    def _assert_compile_called(self, method_name):
        if not self.compiled:
            raise ValueError(f"You must call `compile()` before using the model. (`{method_name}()` was called "
                             f"on an uncompiled model.)")

    # -- metrics --------------------------------------------------------------------------------------
    def _compiled_metric_objects(self):
        """The metric objects compile() asked for (made at the first batch, as Keras builds them)."""
        return self._compile_metrics.metrics if self._compile_metrics is not None else []

    @property
    def metrics(self):
        """The loss tracker, compile()'s metrics as one "compile_metrics" entry, then each output's loss tracker
        (several outputs), as Keras 3 lists them."""
        found = [self._loss_tracker] if self.compiled and self._loss_tracker is not None else []
        found += [self._compile_metrics] if self._compile_metrics is not None else []
        return found + self._output_loss_trackers()

    def _output_loss_trackers(self):
        return list(getattr(self._compile_loss, "metrics", None) or [])

    @property
    def metrics_names(self):
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss of (y, y_pred) plus the model's added losses, as a float32 scalar tensor."""
        losses = []
        if self._compile_loss is not None:
            losses.append(self._compile_loss(y, y_pred, sample_weight))
        losses.extend(_scalar_loss(v) for v in (getattr(self, "losses", None) or []))
        if not losses:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        total = losses[0]
        for extra in losses[1:]:
            total = total + extra
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Update the compiled metrics with this batch and return every metric's result."""
        if self._compile_metrics is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        """{name: result} for every metric (results dicts merged in, as Keras)."""
        out = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[metric.name] = result
        return out

    # tf.keras's names, which tf.keras-era train_step overrides call (the Persian post's does)
    def compiled_loss(self, y, y_pred, sample_weight=None, regularization_losses=None):
        """tf.keras's compiled_loss: the loss, also added to the "loss" tracker (as tf.keras's does)."""
        loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
        if self._loss_tracker is not None:
            self._loss_tracker.update_state(loss, sample_weight=_batch_size_of(y_pred))
        return loss

    @property
    def compiled_metrics(self):
        """tf.keras's compiled_metrics: update_state(y, y_pred, sample_weight) updates the compiled metrics."""
        model = self

        class _CompiledMetrics:
            def update_state(self, y, y_pred, sample_weight=None):
                if model._compile_metrics is not None:
                    model._compile_metrics.update_state(y, y_pred, sample_weight)

            @property
            def metrics(self):
                return model._compiled_metric_objects()

        return _CompiledMetrics()

    # -- one step -------------------------------------------------------------------------------------
    def train_step(self, data):
        """Forward, loss, (scaled) backward, optimizer.apply; returns the logs (override it as in Keras)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=True)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size_of(x))
        variables = list(self.trainable_variables)
        if variables:
            self._minimize(loss, variables)
        else:
            warnings.warn("The model does not have any trainable weights.", stacklevel=2)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def _minimize(self, loss, variables):
        """Backward and update. Keras 3's LossScaleOptimizer: scale_loss, then apply (which unscales and skips
        non-finite steps); tf.keras's: get_scaled_loss, get_unscaled_gradients, apply_gradients (which skips
        non-finite steps), as tf.keras's optimizer.minimize does for it."""
        tf_lso = _is_tf_keras_lso(self.optimizer)
        if tf_lso:
            scaled = self.optimizer.get_scaled_loss(loss)
        else:
            scale = getattr(self.optimizer, "scale_loss", None)
            scaled = scale(loss) if scale is not None else loss
        for v in variables:
            v.grad = None
        scaled.backward()
        grads = [v.grad for v in variables]
        for v in variables:
            v.grad = None              # Keras keeps no .grad; the next step starts clean
        with no_grad():
            if tf_lso:
                grads = self.optimizer.get_unscaled_gradients(grads)
                self.optimizer.apply_gradients(zip(grads, variables))
            else:
                self.optimizer.apply(grads, variables)

    def test_step(self, data):
        """Forward and loss in inference mode; returns the logs."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size_of(x))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data):
        """The model's outputs for one batch, in inference mode."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    # -- the loops --------------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1):
        """Train for `epochs` epochs over (x, y); returns the History (Keras 3's fit)."""
        self._assert_compile_called("fit")
        where = "fit()"
        batch_size = _batch_size(batch_size, steps_per_epoch, where)
        checks.integer("epochs", epochs, lo=0, where="fit(): ")
        checks.integer("initial_epoch", initial_epoch, lo=0, where="fit(): ")
        verbose = _verbose(verbose, where)
        if steps_per_epoch is not None:
            checks.integer("steps_per_epoch", steps_per_epoch, lo=1, where="fit(): ")
        if not isinstance(validation_freq, (int, list)) or isinstance(validation_freq, bool):
            raise ValueError(f"Expected `validation_freq` to be a list or int. Received: "
                             f"validation_freq={validation_freq} of the type {type(validation_freq)}.")
        if shuffle not in (True, False, "batch"):
            raise ValueError(f"fit(): shuffle must be True, False or 'batch', got {shuffle!r}")
        checks.number("validation_split", validation_split, lo=0, hi=1, hi_open=True, where="fit(): ")
        if is_iterable_data(x):
            _refuse_with_dataset(x, where, y, sample_weight, class_weight, validation_split)
            x = _py_dataset_epochs(x, shuffle)
            if shuffle and _input_type(x) == "generator":
                warnings.warn("`shuffle=True` was passed, but will be ignored since the data `x` was provided as a "
                              "generator. The generator is expected to yield already-shuffled data.", stacklevel=2)
            if class_weight is not None:
                _class_weight_to_sample_weight(np.zeros(1), class_weight)     # its checks, before training
            batches = _IterBatches(x, steps_per_epoch, self.steps_per_execution, where, class_weight)
            x = y = sample_weight = None
        else:
            batches = None
            x, y, sample_weight = _data_arrays(x, y, sample_weight, where)
        if class_weight is not None and batches is None:
            if sample_weight is not None:
                raise ValueError(f"Arguments `sample_weight` and `class_weight` cannot be specified at the same "
                                 f"time. Received: sample_weight={sample_weight}, class_weight={class_weight}")
            if y is None:
                raise ValueError("fit(): class_weight needs targets y")
            sample_weight = _class_weight_to_sample_weight(y, class_weight)
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = _train_validation_split((x, y, sample_weight), validation_split)
        val = None
        val_batch_size = _batch_size(validation_batch_size or batch_size, validation_steps, where)
        if validation_data is not None and is_iterable_data(validation_data):
            val = (validation_data, None, None)
        elif validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or not 2 <= len(validation_data) <= 3:
                raise TypeError(f"fit(): `validation_data` must be a tuple (x_val, y_val) or (x_val, y_val, "
                                f"val_sample_weights), or a dataset of such batches; got "
                                f"{type(validation_data).__name__}"
                                + (f" of length {len(validation_data)}" if isinstance(validation_data, (tuple, list))
                                   else ""))
            vx, vy, vsw = unpack_x_y_sample_weight(validation_data)
            val = _data_arrays(vx, vy, vsw, "fit(): validation_data")
        if batches is None:
            batches = _Batches(pack_x_y_sample_weight(x, y, sample_weight), batch_size, steps_per_epoch, shuffle,
                               self.steps_per_execution)
        if not isinstance(callbacks, callbacks_module.CallbackList):
            callbacks = callbacks_module.CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                                                      verbose=verbose, epochs=epochs, steps=batches.num_batches,
                                                      model=self)
        history = callbacks._history
        steps_log = _StepLog(self.optimizer)
        self.stop_training = False
        training_logs = {}
        self._build_before_fit(x)
        callbacks.on_train_begin()
        initial_epoch = self._initial_epoch or initial_epoch        # (Keras's: never reset once set)
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callbacks.on_epoch_begin(epoch)
            logs, start, steps = {}, time.perf_counter(), 0
            for begin, end, data in batches:
                callbacks.on_train_batch_begin(begin)
                for batch in data:
                    logs = steps_log.step(self, _tensors(batch))
                steps += len(data)
                callbacks.on_train_batch_end(end, logs)
                if self.stop_training:
                    break
            if history is not None:
                history.time_per_step.append((time.perf_counter() - start) / max(steps, 1))
            epoch_logs = dict(self._get_metrics_result_or_logs(logs))
            if val is not None and _should_eval(epoch, validation_freq):
                val_logs = self.evaluate(val[0], val[1], sample_weight=val[2], batch_size=val_batch_size,
                                         steps=validation_steps,
                                         callbacks=callbacks, return_dict=True)
                epoch_logs.update({f"val_{name}": value for name, value in val_logs.items()})
            callbacks.on_epoch_end(epoch, epoch_logs)
            training_logs = epoch_logs
            if self.stop_training:
                break
        if history is not None:
            history.steps = steps_log.lists
        finalize = getattr(self.optimizer, "finalize_variable_values", None)
        if finalize is not None and epochs > 0:        # Keras's end of fit: EMA weights are swapped in here
            finalize(self.trainable_weights)
        callbacks.on_train_end(logs=training_logs)
        return self.history

    def _build_before_fit(self, x):
        """Where the model can be built from the inputs' shapes alone, build it before on_train_begin (Keras builds
        the model symbolically there, so callbacks such as BackupAndRestore find its weights); others build at
        their first call."""

    def _get_metrics_result_or_logs(self, logs):
        """The metrics' results when train_step returned their names (Keras's rule), else its own logs."""
        results = self.get_metrics_result()
        if isinstance(logs, dict) and set(logs) == set(results):
            return results
        return logs

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False):
        """Loss and metrics over (x, y): a scalar, a list in metrics_names order, or a dict (return_dict)."""
        self._assert_compile_called("evaluate")
        where = "evaluate()"
        batch_size = _batch_size(batch_size, steps, where)
        verbose = _verbose(verbose, where)
        if steps is not None:
            checks.integer("steps", steps, lo=1, where="evaluate(): ")
        if is_iterable_data(x):
            _refuse_with_dataset(x, where, y, sample_weight)
            batches = _IterBatches(_py_dataset_epochs(x, False), steps, self.steps_per_execution, where)
        else:
            x, y, sample_weight = _data_arrays(x, y, sample_weight, where)
            batches = _Batches(pack_x_y_sample_weight(x, y, sample_weight), batch_size, steps, False,
                               self.steps_per_execution)
        if not isinstance(callbacks, callbacks_module.CallbackList):
            callbacks = callbacks_module.CallbackList(callbacks, add_progbar=verbose != 0, verbose=verbose, epochs=1,
                                                      steps=batches.num_batches, model=self)
        self.stop_evaluating = False
        callbacks.on_test_begin()
        logs = {}
        self.reset_metrics()
        with no_grad():
            for begin, end, data in batches:
                callbacks.on_test_batch_begin(begin)
                for batch in data:
                    logs = self.test_step(_tensors(batch))
                callbacks.on_test_batch_end(end, logs)
                if self.stop_evaluating:
                    break
        logs = callbacks_module.pythonify_logs(self._get_metrics_result_or_logs(logs))
        callbacks.on_test_end(logs)
        return logs if return_dict else self._flatten_metrics_in_order(logs)

    def _flatten_metrics_in_order(self, logs):
        """logs as a list: the loss, compile()'s metrics in their order, other keys sorted; one value alone."""
        names = [m.name for m in [self._loss_tracker] + self._compiled_metric_objects()
                 + self._output_loss_trackers() if m is not None]
        results = [logs[n] for n in names if n in logs] + [logs[k] for k in sorted(logs) if k not in names]
        return results[0] if len(results) == 1 else results

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """The model's outputs for x as NumPy arrays of the output dtype (float16 outputs stay float16)."""
        where = "predict()"
        batch_size = _batch_size(batch_size, steps, where)
        verbose = _verbose(verbose, where)
        if steps is not None:
            checks.integer("steps", steps, lo=1, where="predict(): ")
        if is_iterable_data(x):
            batches = _IterBatches(_py_dataset_epochs(x, False), steps, self.steps_per_execution, where)
        else:
            x, _, _ = _data_arrays(x, None, None, where)
            batches = _Batches((x,), batch_size, steps, False, self.steps_per_execution)
        if not isinstance(callbacks, callbacks_module.CallbackList):
            callbacks = callbacks_module.CallbackList(callbacks, add_progbar=verbose != 0, verbose=verbose, epochs=1,
                                                      steps=batches.num_batches, model=self)
        self.stop_predicting = False
        callbacks.on_predict_begin()
        outputs = []
        with no_grad():
            for begin, end, data in batches:
                callbacks.on_predict_batch_begin(begin)
                batch_outputs = [self.predict_step(_tensors(batch)) for batch in data]
                outputs.extend(batch_outputs)
                callbacks.on_predict_batch_end(end, {"outputs": batch_outputs[-1]})
                if self.stop_predicting:
                    break
        callbacks.on_predict_end()
        return _concat([_map(_to_numpy, o) for o in outputs])

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One training step on one batch; the metrics are reset first (Keras 3)."""
        self._assert_compile_called("train_on_batch")
        x, y, sample_weight = _data_arrays(x, y, sample_weight, "train_on_batch()")
        if class_weight is not None:
            if sample_weight is not None:
                raise ValueError(f"Arguments `sample_weight` and `class_weight` cannot be specified at the same "
                                 f"time. Received: sample_weight={sample_weight}, class_weight={class_weight}")
            sample_weight = _class_weight_to_sample_weight(y, class_weight)
        self.reset_metrics()
        logs = callbacks_module.pythonify_logs(self.train_step(_tensors(pack_x_y_sample_weight(x, y,
                                                                                               sample_weight))))
        return logs if return_dict else self._flatten_metrics_in_order(logs)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Loss and metrics of one batch; the metrics are reset first (Keras 3)."""
        self._assert_compile_called("test_on_batch")
        x, y, sample_weight = _data_arrays(x, y, sample_weight, "test_on_batch()")
        self.reset_metrics()
        with no_grad():
            logs = self.test_step(_tensors(pack_x_y_sample_weight(x, y, sample_weight)))
        logs = callbacks_module.pythonify_logs(logs)
        return logs if return_dict else self._flatten_metrics_in_order(logs)

    def predict_on_batch(self, x):
        """The outputs for one batch as NumPy arrays."""
        x, _, _ = _data_arrays(x, None, None, "predict_on_batch()")
        with no_grad():
            return _map(_to_numpy, self.predict_step(_tensors((x,))))


# -- helpers of the loops -------------------------------------------------------------------------------------


class _StepLog:
    """Runs train_step and keeps minifp's per-step extras: seconds, and under a loss-scale optimizer the scale and
    whether the step was skipped (its iterations did not advance)."""

    def __init__(self, optimizer):
        self.scaled = (hasattr(optimizer, "scale_loss") or _is_tf_keras_lso(optimizer)) \
            and hasattr(optimizer, "inner_optimizer")
        self.optimizer = optimizer
        self.lists = {"time": []}
        if self.scaled:
            self.lists.update(loss_scale=[], skipped=[])

    def step(self, model, batch):
        start = time.perf_counter()
        if not self.scaled:
            logs = model.train_step(batch)
            self.lists["time"].append(time.perf_counter() - start)
            return logs
        before = _iterations(self.optimizer)
        logs = model.train_step(batch)
        self.lists["time"].append(time.perf_counter() - start)
        self.lists["loss_scale"].append(_loss_scale(self.optimizer))
        if _is_tf_keras_lso(self.optimizer):        # tf.keras counts a skipped step in iterations
            self.lists["skipped"].append(bool(self.optimizer._last_step_skipped))
        else:
            self.lists["skipped"].append(_iterations(self.optimizer) == before)
        return logs


def _is_tf_keras_lso(optimizer):
    """Whether optimizer is tf.keras's LossScaleOptimizer (get_scaled_loss / get_unscaled_gradients; not a Keras 3
    Optimizer, so keras.optimizers.get does not know it)."""
    return hasattr(type(optimizer), "get_scaled_loss") and hasattr(type(optimizer), "get_unscaled_gradients")


def _iterations(optimizer):
    it = optimizer.iterations
    return int(np.asarray(it.numpy() if hasattr(it, "numpy") else it))


def _loss_scale(optimizer):
    for name in ("dynamic_scale", "loss_scale"):
        value = getattr(optimizer, name, None)
        if value is not None and not callable(value):
            return float(np.asarray(value.numpy() if hasattr(value, "numpy") else value))
    return None


def _data_arrays(x, y, sample_weight, where):
    """(x, y, sample_weight) as NumPy arrays in their structures, with one common number of samples."""
    if x is None:
        raise ValueError(f"{where}: `x` is required (got None)")
    x, y = _arrays(x, "x", where), _arrays(y, "y", where)
    if sample_weight is not None:
        sample_weight = _as_array(sample_weight, "sample_weight", where)
    n = _num_samples((x, y, sample_weight), where)
    if n == 0:
        raise ValueError(f"{where}: `x` holds no samples (its first dimension is 0)")
    return x, y, sample_weight


def _py_dataset_epochs(x, shuffle):
    """A PyDataset as the epochs fit/evaluate/predict read (shuffled batch order, its epoch hooks); else x."""
    from .utils import _pydataset
    return _pydataset.epochs_of(x, shuffle) if isinstance(x, _pydataset.PyDataset) else x


def _input_type(x):
    """How Keras's errors name a dataset-like x."""
    import types

    from .utils import _dataset, _pydataset
    if isinstance(x, _dataset.Dataset):
        return "tf.data.Dataset"
    if isinstance(x, _pydataset.PyDataset):
        return "PyDataset"
    return "generator" if isinstance(x, types.GeneratorType) else "dataset or iterable"


def _refuse_with_dataset(x, where, y=None, sample_weight=None, class_weight=None, validation_split=None):
    """Keras's errors for what a dataset or generator must hold itself (data_adapters.get_data_adapter)."""
    kind = _input_type(x)
    if y is not None:
        raise ValueError(f"When providing `x` as a {kind}, `y` should not be passed. Instead, the targets should "
                         f"be included as part of the {kind}.")
    if sample_weight is not None:
        raise ValueError(f"When providing `x` as a {kind}, `sample_weights` should not be passed. Instead, the "
                         f"sample weights should be included as part of the {kind}.")
    if class_weight is not None and kind == "generator":
        raise ValueError(f"Argument `class_weight` is not supported for Python generator inputs. Received: "
                         f"class_weight={class_weight}")
    if validation_split:
        raise ValueError(f"Argument `validation_split` is only supported for tensors or NumPy arrays.Found "
                         f"incompatible type in the input: {[type(x)]}")


def _train_validation_split(arrays, validation_split):
    """The last `validation_split` of the samples, before any shuffling, becomes validation data (Keras)."""
    n = _num_samples(arrays, "fit()")
    split_at = int(np.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"Training data contains {n} samples, which is not sufficient to split it into a "
                         f"validation and training set as specified by `validation_split={validation_split}`. "
                         f"Either provide more data, or a different value for the `validation_split` argument.")
    train = tuple(_map(lambda a: a[:split_at], part) for part in arrays)
    val = tuple(_map(lambda a: a[split_at:], part) for part in arrays)
    return train, pack_x_y_sample_weight(*val)


def _should_eval(epoch, validation_freq):
    epoch = epoch + 1
    if isinstance(validation_freq, int):
        return epoch % validation_freq == 0
    return epoch in validation_freq


def _batch_size(batch_size, steps, where):
    """Keras's batch_size: an integer >= 1; None means 32 (or what `steps` batches need)."""
    if batch_size is None:
        return 32
    return checks.integer("batch_size", batch_size, lo=1, where=where + ": ")


def _verbose(verbose, where):
    """Keras's verbose: "auto" (1 here), 0 silent, 1 progress bar, 2 one line per epoch."""
    if isinstance(verbose, str):
        if verbose == "auto":
            return 1
    elif (isinstance(verbose, (bool, np.bool_)) or checks.is_integer(verbose)) and verbose in (0, 1, 2):
        return int(verbose)
    raise ValueError(f"{where}: verbose must be 0, 1, 2 or 'auto', got {verbose!r}")


def _batch_size_of(x):
    leaves = _leaves(x)
    return leaves[0].shape[0] if leaves else None


def _concat(outputs):
    """Per-batch outputs (arrays or structures of them) joined along the batch axis."""
    if not outputs:
        return []
    first = outputs[0]
    if isinstance(first, dict):
        return {k: np.concatenate([o[k] for o in outputs]) for k in first}
    if isinstance(first, (list, tuple)):
        return type(first)(np.concatenate([o[i] for o in outputs]) for i in range(len(first)))
    return np.concatenate(outputs)


def _scalar_loss(value):
    """An added loss (add_loss, regularisers) summed to a float32 scalar."""
    t = value if isinstance(value, _EngineTensor) else tensor(np.float32(value))
    if t.fmt is None or t.fmt != float32:
        t = apply("cast", t, _out=float32)
    return apply("sum", t) if t.ndim else t


def _takes_name(cls):
    import inspect
    try:
        return "name" in inspect.signature(cls).parameters or any(
            p.kind == p.VAR_KEYWORD for p in inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return False


# -- compile's identifiers ------------------------------------------------------------------------------------


class _WeightedLoss:
    """One output's loss: loss(y, y_pred, sample_weight) times its weight; the Loss object is made at the first
    batch (keras.losses.resolve: "crossentropy" needs the shapes)."""

    def __init__(self, identifier, weight=None, tf_keras=False):
        self.identifier, self.weight, self.fn, self.tf_keras = identifier, weight, None, tf_keras

    def unweighted(self, y, y_pred, sample_weight=None):
        """The loss before its weight, as a float32 scalar (Keras casts each output's loss to float32)."""
        if self.fn is None:
            from . import losses as losses_module
            self.fn = losses_module.resolve(self.identifier, y, y_pred, tf_keras=self.tf_keras)
        loss = self.fn(y, y_pred) if sample_weight is None else self.fn(y, y_pred, sample_weight=sample_weight)
        if isinstance(loss, _EngineTensor) and loss.fmt is not None and loss.fmt != float32:
            loss = apply("cast", loss, _out=float32)
        return loss

    def weighted(self, loss):
        return loss if self.weight is None else loss * float(self.weight)

    def __call__(self, y, y_pred, sample_weight=None):
        return self.weighted(self.unweighted(y, y_pred, sample_weight))


def _outputs(y_pred, output_names):
    """The model's outputs as (names, flat list): a dict by the model's output names when its keys are exactly
    them, else by its sorted keys (Keras's rule); a list or tuple in order; one tensor alone."""
    if isinstance(y_pred, dict):
        names = list(output_names) if output_names and set(output_names) == set(y_pred) else sorted(y_pred)
        return names, [y_pred[k] for k in names]
    if isinstance(y_pred, (list, tuple)):
        names = list(output_names) if output_names and len(output_names) == len(y_pred) else [None] * len(y_pred)
        return names, list(y_pred)
    return [None], [y_pred]


def _star(struct):
    """A structure with its leaves as '*' (how Keras's errors show y_true and y_pred)."""
    return _map(lambda _: "*", struct)


def _align_y(y, y_pred, names):
    """The targets as a flat list in the outputs' order: a dict by output name, a list or tuple by position."""
    if isinstance(y, dict) and all(n is not None for n in names) and set(y) == set(names):
        return [y[k] for k in names]
    if isinstance(y, (list, tuple)) and len(y) == len(names) and not isinstance(y_pred, dict):
        return list(y)
    raise ValueError(f"y_true and y_pred have different structures.\ny_true: {_star(y)}\n"
                     f"y_pred: {_star(y_pred)}\n")


class _CompileLoss:
    """Keras 3's CompileLoss: one loss per output (a dict by output name, a list by position, or one loss for
    every output), each reduced as its Loss reduces it, cast to float32, weighted, and summed in output order;
    with several losses, a Mean "<output>_loss" of each unweighted loss. Built at the first batch, as Keras's."""

    def __init__(self, loss, loss_weights, output_names=None, tf_keras=False):
        from . import losses as losses_module
        if loss_weights is not None and not isinstance(loss_weights, (list, tuple, dict)) \
                and not checks.is_number(loss_weights):
            raise ValueError(f"Expected `loss_weights` argument to be a float (single output case) or a list, tuple, "
                             f"or dict (multiple output case). Received instead: loss_weights={loss_weights} of "
                             f"type {type(loss_weights)}")
        for leaf in _leaves(loss):       # an unknown name fails in compile(), before anything changes
            if str(leaf).lower() not in ("crossentropy", "ce"):
                losses_module.get(leaf)
        self.loss, self.loss_weights, self.output_names, self.tf_keras = loss, loss_weights, output_names, tf_keras
        self.metrics, self._flat, self._names = [], None, None

    def _build(self, y_pred):
        names, preds = _outputs(y_pred, self.output_names)
        if len(preds) == 1:
            self._flat = [_single_loss(self.loss, self.loss_weights, self.tf_keras)]
        else:
            losses, weights = _per_output(self.loss, self.loss_weights, names)
            self._flat = [None if l is None else _WeightedLoss(l, w, self.tf_keras) for l, w in zip(losses, weights)]
        self._names = names
        named = [(i, names[i] or _loss_name(l.identifier)) for i, l in enumerate(self._flat) if l is not None]
        if len(named) > 1:
            self.metrics = [Mean(name=f"{name}_loss") for _, name in named]

    def __call__(self, y, y_pred, sample_weight=None):
        if self._flat is None:
            self._build(y_pred)
        if len(self._flat) == 1:
            unwrap = lambda s: s[0] if isinstance(s, (list, tuple)) and len(s) == 1 else s
            return self._flat[0](unwrap(y), unwrap(y_pred), sample_weight)
        _, preds = _outputs(y_pred, self._names)
        ys = _align_y(y, y_pred, self._names)
        trackers, values = iter(self.metrics), []       # no trackers when only one output has a loss
        for fn, y_t, y_p in zip(self._flat, ys, preds):
            if fn is None:
                continue
            value = fn.unweighted(y_t, y_p, sample_weight)
            tracker = next(trackers, None)
            if tracker is not None:
                tracker.update_state(value, sample_weight=y_p.shape[0])     # unweighted, as Keras records it
            values.append(fn.weighted(value))
        total = values[0]
        for value in values[1:]:
            total = total + value
        return total


def _single_loss(loss, loss_weights, tf_keras):
    """The loss of a single-output model (a list/dict of one is accepted, as are its weights)."""
    if isinstance(loss, (dict, list, tuple)):
        if len(loss) != 1:
            raise ValueError(f"`loss` must have one entry for a single-output model; got {len(loss)}: {loss!r}")
        loss = next(iter(loss.values())) if isinstance(loss, dict) else loss[0]
    weight = loss_weights
    if isinstance(weight, (dict, list, tuple)) and len(weight) == 1:
        weight = next(iter(weight.values())) if isinstance(weight, dict) else weight[0]
    if weight is not None and not checks.is_number(weight):
        raise ValueError(f"`loss_weights` must be a number (or a list/dict of one) for a single-output model, "
                         f"got {loss_weights!r}")
    return _WeightedLoss(loss, weight, tf_keras)


def _per_output(loss, loss_weights, names):
    """(losses, weights) as lists in output order, by Keras's CompileLoss.build rules."""
    n = len(names)
    if isinstance(loss, dict):
        if set(loss) != set(names):
            raise ValueError(f"Expected keys {names} in loss dict, but found loss.keys()={list(loss.keys())}")
        losses = [loss[k] for k in names]
        if isinstance(loss_weights, dict):
            loss_weights = [loss_weights[k] for k in names]
    elif isinstance(loss, (list, tuple)):
        if len(loss) > n:
            raise KeyError(f"The path: ({n},) in the `loss` argument, can't be found in either the model's output "
                           f"(`y_pred`) or in the labels (`y_true`).")
        losses = list(loss) + [None] * (n - len(loss))     # Keras leaves the outputs past a short list without one
    else:
        losses = [loss] * n
    return losses, _per_output_weights(loss, loss_weights, losses)


def _per_output_weights(loss, loss_weights, losses):
    if loss_weights is None:
        return [None] * len(losses)
    given = 1 if not isinstance(loss, (dict, list, tuple)) else len(loss)
    if not isinstance(loss_weights, (dict, list, tuple)):
        flat = [loss_weights]
    else:
        flat = [loss_weights[k] for k in sorted(loss_weights)] if isinstance(loss_weights, dict) \
            else list(loss_weights)
    if len(flat) != given:
        raise ValueError(f"`loss_weights` must match the number of losses, got {given} losses and "
                         f"{len(flat)} weights.")
    return flat * len(losses) if given == 1 else flat + [None] * (len(losses) - len(flat))


def _loss_name(identifier):
    """The name Keras gives a loss with no output name: its Loss object's name, else the function's."""
    return getattr(identifier, "name", None) or getattr(identifier, "__name__", None) or str(identifier)


class _CompileMetrics:
    """compile()'s metrics and weighted_metrics as Keras 3's one "compile_metrics" entry of model.metrics; the
    objects are made at the first batch, when y and y_pred show which accuracy is meant. With several outputs,
    metrics are a list per output or a dict by output name, and each result is named "<output>_<metric>"."""

    name = "compile_metrics"

    def __init__(self, metrics, weighted_metrics, output_names=None):
        self._user = (metrics, weighted_metrics)
        self.output_names = output_names
        self._built = None          # [(output name or None, metric, weighted, output index)]
        self._names = None

    @property
    def metrics(self):
        return [m for _, m, _, _ in self._built or []]

    def _build(self, y, y_pred):
        names, preds = _outputs(y_pred, self.output_names)
        self._names = names
        ys = [y] if len(preds) == 1 else _align_y(y, y_pred, names)
        built = []
        for spec, weighted, argument in ((self._user[0], False, "metrics"),
                                         (self._user[1], True, "weighted_metrics")):
            if len(preds) == 1:
                per_output = [_metric_specs(spec)]
            else:
                per_output = _metrics_per_output(spec, names, y_pred, self.output_names, argument)
            for i, specs in enumerate(per_output):
                name = names[i] if len(preds) > 1 else None
                built += [(name, _resolve_metric(s, ys[i], preds[i]), weighted, i) for s in specs]
        self._built = built

    def update_state(self, y, y_pred, sample_weight=None):
        if self._built is None:
            self._build(y, y_pred)
        if len(self._names) == 1:
            ys, preds = [y], [y_pred]
        else:
            preds, ys = _outputs(y_pred, self._names)[1], _align_y(y, y_pred, self._names)
        for _, metric, weighted, i in self._built:
            metric.update_state(ys[i], preds[i], sample_weight=sample_weight if weighted else None)

    def reset_state(self):
        for metric in self.metrics:
            metric.reset_state()

    def result(self):
        """{name: result}, "<output>_" before each name with several outputs; a name already given is numbered
        as Keras 3's CompileMetrics.result numbers it (auc, auc_1, ...; a weighted metric's becomes
        weighted_<name>, then weighted_<name>_1, ...)."""
        results, given = {}, {}
        for output, metric, weighted, _ in self._built or []:     # built in Keras's order: metrics, then weighted
            prefix = f"{output}_" if output else ""
            name = prefix + metric.name
            if name in given and weighted:
                name = f"{prefix}weighted_{metric.name}"
            if name in given:
                given[name] += 1
                name = f"{name}_{given[name] - 1}"
            else:
                given[name] = 1
            results[name] = metric.result()
        return results


def _metrics_per_output(metrics, names, y_pred, model_output_names, argument):
    """A multi-output model's metrics as one list of identifiers per output (Keras's CompileMetrics rules)."""
    if not metrics:
        return [[] for _ in names]
    if isinstance(metrics, (list, tuple)) and len(metrics) == len(names):
        flat = list(metrics)
    elif isinstance(metrics, dict) and all(n is not None for n in names) and set(metrics) <= set(names):
        flat = [metrics.get(n) for n in names]
    else:
        problem = f"Node arity mismatch; expected {len(names)}, but got {len(metrics)}." \
            if isinstance(metrics, (list, tuple)) else f"Invalid keys {sorted(metrics)} for outputs {names}."
        should = f"either be a dict or a list matching the output names of the functional model " \
            f"{model_output_names} or match" if model_output_names else "match"
        raise ValueError(f"{problem}\nInvalid `{argument}`. `{argument}` should contain metrics objects and "
                         f"{should} the output structure of the model: {_map(lambda _: 'X', y_pred)}.\n"
                         f"Received: {argument}={metrics}")
    return [[] if m is None else list(m) if isinstance(m, (list, tuple)) else [m] for m in flat]


def _metric_specs(metrics):
    """A single-output model's metrics as a flat list of identifiers (a dict of one output's is accepted)."""
    if metrics is None:
        return []
    if isinstance(metrics, dict):
        metrics = [m for v in metrics.values() for m in (v if isinstance(v, (list, tuple)) else [v])]
    specs = []
    for m in metrics:
        if m is None:
            raise ValueError("Expected metric, received `None`")
        specs.append(m)
    return specs


def _resolve_metric(identifier, y, y_pred):
    """A metric object for identifier: "accuracy"/"acc" chosen by the shapes of y and y_pred (Keras's get_metric:
    binary when y_pred has one column, sparse when y has a lower rank or one column, else categorical)."""
    from . import metrics as metrics_module
    if isinstance(y_pred, (list, tuple)) and len(y_pred) == 1:
        y_pred = y_pred[0]
    if isinstance(y, (list, tuple)) and len(y) == 1:
        y = y[0]
    if str(identifier).lower() in ("accuracy", "acc"):
        t_rank, p_rank = len(y.shape), len(y_pred.shape)
        is_binary = y_pred.shape[-1] == 1
        is_sparse = t_rank < p_rank or (y.shape[-1] == 1 and y_pred.shape[-1] > 1)
        cls = metrics_module.BinaryAccuracy if is_binary else metrics_module.SparseCategoricalAccuracy \
            if is_sparse else metrics_module.CategoricalAccuracy
        metric = cls(name=str(identifier))
    else:
        metric = metrics_module.get(identifier)
    if not hasattr(metric, "update_state"):           # a plain function: averaged over samples, as Keras wraps it
        metric = metrics_module.MeanMetricWrapper(metric, name=getattr(metric, "__name__", "metric"))
    if isinstance(identifier, str) and metric.name != identifier:
        metric.name = identifier
    return metric

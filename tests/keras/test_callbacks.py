"""keras.callbacks: Keras 3's decision rules driven with given losses, History, CSVLogger and the progress bar."""
import csv
import re

import numpy as np
import pytest

from minifp.keras import callbacks as C


class _Optimizer:
    def __init__(self, learning_rate=0.1):
        self.learning_rate = learning_rate


class _Model:
    """What callbacks read: stop_training, optimizer.learning_rate, get/set/save_weights."""

    def __init__(self):
        self.stop_training = False
        self.optimizer = _Optimizer()
        self.weights = [np.zeros(2, np.float32)]
        self.saved = []

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [w.copy() for w in weights]

    def save_weights(self, path):
        self.saved.append(path)


def _run(callbacks, val_losses, model=None, extra=None):
    """Epochs with the given val_loss (the model's weights hold the epoch): the epochs run and the History."""
    model = model or _Model()
    cbs = C.CallbackList(callbacks, add_history=True, model=model, verbose=0, epochs=len(val_losses), steps=1)
    cbs.on_train_begin()
    ran = []
    for epoch, v in enumerate(val_losses):
        cbs.on_epoch_begin(epoch)
        model.weights = [np.full(2, epoch, np.float32)]
        logs = {"loss": 1.0, "val_loss": v}
        logs.update(extra(epoch) if extra else {})
        cbs.on_epoch_end(epoch, logs)
        ran.append(epoch)
        if model.stop_training:
            break
    cbs.on_train_end()
    return ran, model


@pytest.mark.parametrize("losses, kwargs, last", [
    ([1.0, 0.9, 0.95, 0.96, 0.97], dict(patience=2), 3),
    ([1.0, 0.9, 0.8, 0.7, 0.6], dict(patience=1), 4),                   # always improving: never stops
    ([1.0, 0.95, 0.85, 0.8], dict(patience=1, min_delta=0.1), 1),       # 0.05 better is not enough
    ([1.0, 1.1], dict(patience=0), 1),                                  # patience 0: the first worse epoch
    ([1.0, 0.9, 0.95], dict(patience=2, baseline=0.5), 2),              # better than best, not than baseline
    ([1.0, 2.0, 3.0, 4.0, 5.0], dict(patience=1, start_from_epoch=2), 3),
])
def test_early_stopping_stops_where_keras_does(losses, kwargs, last):
    ran, _ = _run([C.EarlyStopping(**kwargs)], losses)
    assert ran[-1] == last


def test_early_stopping_restores_the_best_weights_and_reports(capsys):
    es = C.EarlyStopping(patience=1, restore_best_weights=True, verbose=1)
    ran, model = _run([es], [1.0, 0.5, 0.7, 0.8])
    assert ran == [0, 1, 2] and es.stopped_epoch == 2 and es.best_epoch == 1
    assert model.weights[0].tolist() == [1.0, 1.0]
    assert capsys.readouterr().out == ("Epoch 3: early stopping\n"
                                       "Restoring model weights from the end of the best epoch: 2.\n")


def test_early_stopping_on_an_absent_metric_warns_and_goes_on():
    with pytest.warns(UserWarning, match="which is not available. Available metrics are: loss,val_loss"):
        ran, _ = _run([C.EarlyStopping(monitor="val_auc", mode="max")], [1.0, 2.0, 3.0])
    assert ran == [0, 1, 2]


def test_auto_mode_of_an_unknown_metric_is_keras_error():
    with pytest.raises(ValueError, match="isn't able to automatically determine whether that metric should be"):
        _run([C.EarlyStopping(monitor="val_f1")], [1.0])


@pytest.mark.parametrize("kwargs, reduced_at, rates", [
    (dict(factor=0.5, patience=1), [1, 2, 3, 4], [0.1, 0.1, 0.05, 0.025, 0.0125]),
    (dict(factor=0.5, patience=1, cooldown=2), [1, 3], [0.1, 0.1, 0.05, 0.05, 0.025]),
    (dict(factor=0.5, patience=2, min_lr=0.04), [2, 4], [0.1, 0.1, 0.1, 0.05, 0.05]),
])
def test_reduce_lr_on_plateau_lowers_where_keras_does(kwargs, reduced_at, rates):
    model = _Model()
    seen = []

    class Watch(C.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(self.model.optimizer.learning_rate)

    _run([C.ReduceLROnPlateau(**kwargs), Watch()], [1.0] * 5, model)
    history = model.history.history
    assert history["learning_rate"] == pytest.approx(rates)       # logged before the epoch's reduction
    after = [0.1] + seen
    assert [e for e in range(5) if after[e + 1] < after[e]] == reduced_at
    if "min_lr" in kwargs:
        assert min(seen) == pytest.approx(kwargs["min_lr"])


def test_reduce_lr_on_plateau_refuses_a_factor_of_one():
    with pytest.raises(ValueError, match="ReduceLROnPlateau does not support a factor >= 1.0. Received factor=1"):
        C.ReduceLROnPlateau(factor=1)


def test_learning_rate_scheduler_sets_each_epoch_and_logs_it(capsys):
    model = _Model()
    _run([C.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else lr, verbose=1)], [1.0, 1.0, 1.0], model)
    assert model.history.history["learning_rate"] == [0.1, 0.05, 0.025]
    assert "\nEpoch 2: LearningRateScheduler setting learning rate to 0.05.\n" in capsys.readouterr().out
    with pytest.raises(ValueError, match="The output of the `schedule` function should be a float. Got: 1"):
        _run([C.LearningRateScheduler(lambda epoch: 1)], [1.0])


def test_model_checkpoint_saves_formatted_paths_only_on_improvement(tmp_path):
    path = str(tmp_path / "ckpt" / "w.{epoch:02d}-{val_loss:.2f}.weights.h5")
    model = _Model()
    _run([C.ModelCheckpoint(path, save_best_only=True, save_weights_only=True)], [1.0, 0.5, 0.7, 0.25], model)
    assert [p.rsplit("/", 1)[1] for p in model.saved] == ["w.01-1.00.weights.h5", "w.02-0.50.weights.h5",
                                                         "w.04-0.25.weights.h5"]
    assert (tmp_path / "ckpt").is_dir()
    every = _Model()
    _run([C.ModelCheckpoint(str(tmp_path / "last.weights.h5"), save_weights_only=True)], [1.0, 2.0], every)
    assert len(every.saved) == 2


def test_model_checkpoint_path_rules():
    C.ModelCheckpoint("m.keras")                 # a whole model (see tests/keras/test_keras_files.py)
    with pytest.raises(ValueError, match=r"The filepath provided must end in `.keras`"):
        C.ModelCheckpoint("m.weights")
    with pytest.raises(ValueError, match=r"`.keras` format only \(not legacy `.h5`\)"):
        C.ModelCheckpoint("m.h5")
    with pytest.raises(ValueError, match=r"the filepath provided must end in `.weights.h5`"):
        C.ModelCheckpoint("m.h5", save_weights_only=True)
    with pytest.raises(ValueError, match="Unrecognized save_freq: batch"):
        C.ModelCheckpoint("m.weights.h5", save_weights_only=True, save_freq="batch")


def test_csv_logger_writes_sorted_columns_with_val_ones(tmp_path):
    path = tmp_path / "log.csv"
    model = _Model()
    cbs = C.CallbackList([C.CSVLogger(path)], model=model)
    cbs.on_train_begin()
    cbs.on_epoch_end(0, {"loss": 0.5, "accuracy": 0.75})
    cbs.on_epoch_end(1, {"loss": 0.25, "accuracy": 0.875})
    cbs.on_train_end()
    rows = list(csv.reader(open(path)))
    assert rows == [["epoch", "accuracy", "loss", "val_accuracy", "val_loss"], ["0", "0.75", "0.5", "NA", "NA"],
                    ["1", "0.875", "0.25", "NA", "NA"]]
    cbs = C.CallbackList([C.CSVLogger(path, append=True, separator=";")], model=model)
    cbs.on_train_begin()
    cbs.on_epoch_end(0, {"loss": 0.125, "accuracy": 1.0})
    cbs.on_train_end()
    assert open(path).read().splitlines()[-1] == "0;1.0;0.125;NA;NA"


def test_terminate_on_nan_stops_after_the_bad_batch(capsys):
    model = _Model()
    cbs = C.CallbackList([C.TerminateOnNaN()], model=model)
    cbs.on_train_batch_end(0, {"loss": 1.0})
    assert not model.stop_training
    cbs.on_train_batch_end(1, {"loss": float("nan")})
    assert model.stop_training and capsys.readouterr().out == "Batch 1: Invalid loss, terminating training\n"
    with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 3"):
        C.CallbackList([C.TerminateOnNaN(raise_error=True)], model=model).on_train_batch_end(3, {"loss": np.inf})


def test_logs_reach_callbacks_sorted_as_floats_and_history_keeps_equal_lengths():
    got = []

    class Keep(C.Callback):
        def on_epoch_end(self, epoch, logs=None):
            got.append(logs)

    ran, model = _run([Keep()], [1.0, 0.5], extra=lambda e: {"accuracy": np.float32(0.5 + e / 4)})
    assert list(got[0]) == ["accuracy", "loss", "val_loss"] and type(got[1]["accuracy"]) is float
    history = model.history
    assert history.epoch == [0, 1] and {len(v) for v in history.history.values()} == {2}


def test_callbacks_must_be_callbacks():
    with pytest.raises(TypeError, match="callbacks must be keras.callbacks.Callback instances, got 3"):
        C.CallbackList([3])


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_progbar_lines_in_keras_layout(capsys):
    logger = C.ProgbarLogger()
    logger.set_params({"verbose": 2, "epochs": 2, "steps": 12})
    logger.on_train_begin()
    logger.on_epoch_begin(0)
    for b in range(12):
        logger.on_train_batch_end(b, {"accuracy": 0.5, "loss": 1.2})
    logger.on_epoch_end(0, {"accuracy": 0.5, "loss": 1.2, "val_loss": 0.00001})
    out = capsys.readouterr().out
    assert re.fullmatch(r"Epoch 1/2\n12/12 - \d+s - \d+(us|ms|s)/step - accuracy: 0\.5000 - loss: 1\.2000 - "
                        r"val_loss: 1\.0000e-05\n", out), out
    bar = C.Progbar(target=782, verbose=1)
    bar.update(782, [("accuracy", 0.9), ("loss", 1.62114)], finalize=True)
    drawn = _ANSI.sub("", capsys.readouterr().out).lstrip("\b\r")
    assert re.fullmatch(r"782/782 ━{20} \d+s \d+(us|ms|s)/step - accuracy: 0\.9000 - loss: 1\.6211\n", drawn), drawn
    half = C.Progbar(target=10, verbose=1)
    half.update(5, [("loss", 0.5)])
    drawn = _ANSI.sub("", capsys.readouterr().out).lstrip("\b\r")
    assert drawn.startswith(" 5/10 " + "━" * 20 + " ") and drawn.endswith(" - loss: 0.5000")


"""keras.Model's training API: compile, fit, evaluate, predict, History and callbacks on the bundled digits."""
import re

import numpy as np
import pytest

import minifp
from minifp import keras
from minifp.keras import callbacks as C
from minifp.keras import mixed_precision, optimizers

(X, Y), (XT, YT) = minifp.datasets.load_digits()


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    mixed_precision.set_global_policy("float32")


def _mlp(final_float32=True, hidden=64):
    """The CLI's digits MLP in Keras: Flatten, Dense 64 relu twice, Dense 10, softmax (float32 when asked)."""
    minifp.manual_seed(0)
    layers = [keras.Input(shape=(8, 8)), keras.layers.Flatten(), keras.layers.Dense(hidden, activation="relu"),
              keras.layers.Dense(hidden, activation="relu"), keras.layers.Dense(10)]
    layers.append(keras.layers.Activation("softmax", dtype="float32" if final_float32 else None))
    return keras.Sequential(layers)


def _compiled(**kw):
    m = _mlp()
    m.compile(optimizers.Adam(learning_rate=1e-3), "sparse_categorical_crossentropy", metrics=["accuracy"], **kw)
    return m


# -- training reaches the CLI's accuracy ----------------------------------------------------------------------


def test_fit_float32_reaches_the_cli_accuracy():
    m = _compiled()
    history = m.fit(X, Y, epochs=20, verbose=0)
    loss, accuracy = m.evaluate(XT, YT, verbose=0)
    assert accuracy >= 0.97 and history.history["loss"][-1] < history.history["loss"][0] / 10
    assert m.metrics_names == ["loss", "compile_metrics"]


def test_fit_mixed_float16_wraps_the_optimizer_and_reaches_the_cli_accuracy():
    mixed_precision.set_global_policy("mixed_float16")
    m = _compiled()
    assert isinstance(m.optimizer, optimizers.LossScaleOptimizer)
    history = m.fit(X, Y, epochs=20, verbose=0)
    assert m.evaluate(XT, YT, verbose=0)[1] >= 0.97
    steps = history.steps
    assert len(steps["time"]) == len(steps["loss_scale"]) == len(steps["skipped"]) == 20 * 45
    assert steps["loss_scale"][0] == 32768.0 and not any(steps["skipped"])
    mixed_precision.set_global_policy("float16")     # a pure float16 policy is not wrapped (Keras doesn't)
    pure = _mlp()
    pure.compile("sgd", "sparse_categorical_crossentropy")
    assert not isinstance(pure.optimizer, optimizers.LossScaleOptimizer)


# -- History ---------------------------------------------------------------------------------------------------


def test_history_has_keras_shape_and_minifp_extras():
    m = _compiled()
    history = m.fit(X, Y, batch_size=64, epochs=3, validation_data=(XT, YT), verbose=0)
    assert history is m.history and history.model is m and history.epoch == [0, 1, 2]
    assert list(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert {len(v) for v in history.history.values()} == {3}
    assert all(type(v) is float for values in history.history.values() for v in values)
    assert history.params == {"verbose": 0, "epochs": 3, "steps": 23}
    assert len(history.steps["time"]) == 3 * 23 and len(history.time_per_step) == 3
    assert history.history["val_loss"][-1] == pytest.approx(m.evaluate(XT, YT, verbose=0)[0], rel=1e-6)
    import pandas               # the test extra installs it: History must make a DataFrame, as Keras's does
    assert pandas.DataFrame(history.history).shape == (3, 4)


def test_validation_split_takes_the_last_samples_before_shuffling():
    m = _compiled()
    history = m.fit(X, Y, epochs=1, validation_split=0.25, verbose=0)
    cut = int(np.floor(len(X) * 0.75))
    assert history.params["steps"] == -(-cut // 32)
    val = m.evaluate(X[cut:], Y[cut:], return_dict=True, verbose=0)
    assert history.history["val_loss"][0] == val["loss"] and history.history["val_accuracy"][0] == val["accuracy"]


@pytest.mark.parametrize("n, split", [(1, 0.5), (2, 0.6), (10, 0.99)])
def test_validation_split_leaving_no_data_is_keras_error(n, split):
    m = _compiled()
    before = m.get_weights()
    with pytest.raises(ValueError, match=rf"Training data contains {n} samples, which is not sufficient to split it"):
        m.fit(X[:n], Y[:n], validation_split=split, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, m.get_weights()))


def test_validation_freq_and_steps_per_epoch():
    m = _compiled()
    history = m.fit(X, Y, epochs=4, steps_per_epoch=5, validation_data=(XT, YT), validation_freq=2, verbose=0)
    assert history.history["loss"].__len__() == 4 and len(history.history["val_loss"]) == 2    # as Keras
    assert len(history.steps["time"]) == 20 and m.optimizer.iterations.numpy() == 20


# -- evaluate, predict and the *_on_batch calls -------------------------------------------------------------


def test_evaluate_prints_by_default_and_returns_list_or_dict(capsys):
    m = _compiled()
    m.fit(X, Y, epochs=1, verbose=0)
    result = m.evaluate(XT, YT)
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert re.search(r"12/12 ━{20} \d+s \d+(us|ms)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4} *\n$", out), out
    as_dict = m.evaluate(XT, YT, verbose=0, return_dict=True)
    assert list(as_dict) == ["accuracy", "loss"] and result == [as_dict["loss"], as_dict["accuracy"]]
    assert capsys.readouterr().out == ""
    only_loss = _mlp()
    only_loss.compile("sgd", "sparse_categorical_crossentropy")
    assert isinstance(only_loss.evaluate(XT, YT, verbose=0), float)


def test_fit_verbose_1_and_2_draw_keras_lines(capsys):
    m = _compiled()
    m.fit(X, Y, batch_size=256, epochs=2, verbose=2)
    out = capsys.readouterr().out
    assert re.fullmatch(r"(Epoch [12]/2\n6/6 - \d+s - \d+(us|ms)/step - accuracy: \d\.\d{4} - loss: \d\.\d{4}\n){2}",
                        out), out
    m.fit(X, Y, batch_size=256, epochs=1)
    out = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)
    assert "Epoch" not in out and out.endswith("\n") and "6/6 " + "━" * 20 in out


def test_predict_returns_the_output_dtype():
    m = _compiled()
    p = m.predict(XT, batch_size=100, verbose=0)
    assert isinstance(p, np.ndarray) and p.shape == (360, 10) and p.dtype == np.float32
    assert np.allclose(p.sum(axis=1), 1, atol=1e-6)
    np.testing.assert_array_equal(m.predict_on_batch(XT[:100]), p[:100])   # the same batch, the same BLAS kernel
    mixed_precision.set_global_policy("mixed_float16")
    half = _mlp(final_float32=False)
    out = half.predict(XT[:5], verbose=0)
    assert out.dtype == np.float16 and out.shape == (5, 10)        # the last layer computes in float16


def test_train_and_test_on_batch():
    m = _compiled()
    before = m.test_on_batch(X[:32], Y[:32], return_dict=True)
    logs = m.train_on_batch(X[:32], Y[:32])
    assert isinstance(logs, list) and len(logs) == 2 and logs[0] == pytest.approx(before["loss"], rel=1e-6)
    assert m.optimizer.iterations.numpy() == 1
    assert m.test_on_batch(X[:32], Y[:32])[0] < before["loss"]


def test_sample_and_class_weights_weight_the_loss():
    m = _compiled()
    w = (Y[:64] == 3).astype(np.float32)
    weighted = m.test_on_batch(X[:64], Y[:64], sample_weight=w, return_dict=True)["loss"]
    only3 = m.test_on_batch(X[:64][Y[:64] == 3], Y[:64][Y[:64] == 3], return_dict=True)["loss"]
    assert weighted == pytest.approx(only3 * w.sum() / 64, rel=1e-5)       # Keras: sum over the whole batch
    via_class = m.train_on_batch(X[:64], Y[:64], class_weight={3: 1.0, **{c: 0.0 for c in range(10) if c != 3}},
                                 return_dict=True)["loss"]
    assert via_class == pytest.approx(weighted, rel=1e-6)
    with pytest.raises(ValueError, match="Arguments `sample_weight` and `class_weight` cannot be specified"):
        m.fit(X, Y, sample_weight=np.ones(len(Y)), class_weight={0: 1.0}, verbose=0)


# -- a train_step override, stop_training, errors ------------------------------------------------------------


def test_a_train_step_override_drives_fit():
    calls = []

    class Custom(keras.Sequential):
        def train_step(self, data):
            x, y = data
            calls.append(x.shape[0])
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            for v in self.trainable_variables:
                v.grad = None
            loss.backward()
            self.optimizer.apply([v.grad for v in self.trainable_variables], self.trainable_variables)
            return {"my_loss": loss}

    minifp.manual_seed(0)
    m = Custom([keras.Input(shape=(8, 8)), keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
    m.compile(optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    history = m.fit(X[:100], Y[:100], batch_size=50, epochs=3, verbose=0)
    assert calls == [50] * 6 and list(history.history) == ["my_loss"]
    assert history.history["my_loss"][2] < history.history["my_loss"][0]


def test_callbacks_on_digits_stop_lower_and_save_at_keras_epochs():
    m = _compiled()
    saved = []
    m.save_weights = lambda path: saved.append(path)        # the io helper's writer is tested on its own
    es = C.EarlyStopping(monitor="loss", min_delta=0.05, patience=1)
    rl = C.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1, min_delta=0.01)
    ck = C.ModelCheckpoint("ck/{epoch:02d}.weights.h5", monitor="val_accuracy", save_best_only=True,
                           save_weights_only=True)
    history = m.fit(X, Y, epochs=30, validation_split=0.2, callbacks=[es, rl, ck], verbose=0)
    h = history.history
    # The same rules by hand on the losses fit recorded: where Keras would stop, lower and save.
    best, wait, stop = None, 0, None
    for e, v in enumerate(h["loss"]):
        wait += 1
        if best is None or v + 0.05 < best:
            best, wait = v, 0
        elif wait >= 1 and e > 0:
            stop = e
            break
    assert stop is not None and history.epoch[-1] == stop and es.stopped_epoch == stop
    best, wait, lr, rates = None, 0, 1e-3, []
    for v in h["val_loss"]:
        rates.append(lr)
        if best is None or v + 0.01 < best:
            best, wait = v, 0
        else:
            wait += 1
            if wait >= 1:
                lr, wait = lr * 0.5, 0
    assert h["learning_rate"] == pytest.approx(rates, rel=1e-6)
    best, expected = None, []
    for e, v in enumerate(h["val_accuracy"]):
        if best is None or v > best:
            best = v
            expected.append(f"ck/{e + 1:02d}.weights.h5")
    assert saved == expected


def test_stop_training_from_a_callback_ends_the_epoch_loop():
    class StopAfterFirst(C.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                self.model.stop_training = True

    m = _compiled()
    history = m.fit(X, Y, epochs=5, callbacks=[StopAfterFirst()], verbose=0)
    assert history.epoch == [0] and len(history.steps["time"]) == 3


def test_misuse_gets_keras_errors_before_anything_changes():
    m = _mlp()
    with pytest.raises(ValueError, match=r"You must call `compile\(\)` before using the model"):
        m.fit(X, Y, verbose=0)
    with pytest.raises(ValueError, match="adamm"):
        m.compile("adamm", "mse")
    with pytest.raises(ValueError, match="crossentropyy"):
        m.compile("adam", "crossentropyy")
    assert not m.compiled
    m.compile("adam", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="verbose must be 0, 1, 2 or 'auto', got 3"):
        m.fit(X, Y, verbose=3)
    with pytest.raises(ValueError, match="all arrays must contain the same number of samples"):
        m.fit(X, Y[:10], verbose=0)
    with pytest.raises(ValueError, match="Expected `validation_freq` to be a list or int"):
        m.fit(X, Y, validation_freq="2", verbose=0)
    assert m.optimizer.iterations.numpy() == 0

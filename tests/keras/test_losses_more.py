"""Keras 3's other losses (tests/fixtures/keras/losses_more.json, recorded by tools/record_keras_losses_more.py from
Keras 3.15 on the torch backend): every class's values under each reduction with and without sample weights, its
config and round trip, the string identifiers keras.losses.get takes, and a model compiled with loss="kld".

Values agree to a few float32 ulps: Keras computes log and exp with PyTorch's CPU kernels here, minifp with
NumPy's (the same tolerance as tests/keras/test_metrics_more.py's for those functions)."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

HERE = Path(__file__).resolve().parents[1]
FIXTURE = json.loads((HERE / "fixtures" / "keras" / "losses_more.json").read_text())
_spec = importlib.util.spec_from_file_location("record_keras_losses_more",
                                               HERE.parent / "tools" / "record_keras_losses_more.py")
RECORDER = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(RECORDER)
GOT = json.loads(json.dumps(RECORDER.run(keras)))      # (as the recorder stored it: tuples as lists)
ULPS = 8 * float(np.finfo(np.float32).eps)


@pytest.mark.parametrize("case", FIXTURE["cases"])
def test_loss_matches_keras(case):
    got, want = GOT["cases"][case], FIXTURE["cases"][case]
    assert got["config"] == want["config"] and got["round_trip"] == want["round_trip"]
    for key in want:
        if key not in ("config", "round_trip"):
            np.testing.assert_allclose(np.float32(got[key]), np.float32(want[key]), rtol=ULPS, atol=0, err_msg=key)


def test_identifiers_and_compile_match_keras():
    assert GOT["identifiers"] == FIXTURE["identifiers"]
    assert GOT["fit_loss_name"] == FIXTURE["fit_loss_name"]
    assert GOT["fit_history_keys"] == FIXTURE["fit_history_keys"]


def test_metrics_share_the_loss_functions():
    """As in Keras 3, keras.metrics' per-sample functions are keras.losses'."""
    for name in ("kl_divergence", "hinge", "poisson", "log_cosh", "binary_focal_crossentropy"):
        assert getattr(keras.metrics, name) is getattr(keras.losses, name)


def test_top_level_base_classes_and_a_custom_loss():
    """keras.Loss, Metric, Optimizer, Initializer and Regularizer are the modules' classes (as in Keras 3.15, where
    each `is` holds); a keras.Loss subclass trains."""
    assert keras.Loss is keras.losses.Loss and keras.Metric is keras.metrics.Metric
    assert keras.Optimizer is keras.optimizers.Optimizer and keras.Initializer is keras.initializers.Initializer
    assert keras.Regularizer is keras.regularizers.Regularizer

    class Squared(keras.Loss):
        def call(self, y_true, y_pred):
            return keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1)

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=Squared())
    history = model.fit(np.ones((8, 3), np.float32), np.zeros((8, 1), np.float32), epochs=3, verbose=0).history
    assert history["loss"][2] < history["loss"][0]

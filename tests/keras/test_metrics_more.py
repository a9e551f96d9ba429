"""keras.metrics' regression, probabilistic, hinge, correlation and IoU metrics against Keras 3.15.1 (torch backend):
every case of tests/fixtures/keras/metrics_more.json (recorded by tools/record_keras_metrics_more.py) replayed
through minifp: results after each update_state (with and without sample weights), after reset_state, get_config,
the variables, the metric functions, Keras's errors for bad arguments, and a fit's history with them in compile.

Exact equality (float32 bits) where both sides do the same float32 operations in the same order: the IoU
metrics, R2Score's column sums, MAPE, the hinges, KL divergence, cosine similarity. The tolerances below are where
they do not (stated per group)."""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.keras as keras

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import record_keras_metrics_more as rec  # noqa: E402

RECORDED = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "metrics_more.json").read_text())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")         # the IoU metrics warn about float weights, as Keras does
    GOT = rec.run(keras)
EPS32 = float(np.finfo(np.float32).eps)

# Tolerances, in float32 epsilons relative to the value:
# - log, softplus, and exp (from_logits' sigmoid and softmax): torch's vectorised (SLEEF) functions and NumPy's
#   differ in the last bit or two for some inputs.
LOG_ULPS = 8
# - the correlations: torch's std and var reduce in their own order (Welford), NumPy's two-pass mean differs by a
#   rounding, which the division by a small variance or a covariance near 0 magnifies.
CORRELATION_ULPS = 32
# - R2Score on one output: torch sums a contiguous column of 5 with several partial sums, NumPy in index order.
SUM_ULPS = 8
CLASS_ULPS = {"PearsonCorrelation": CORRELATION_ULPS, "ConcordanceCorrelation": CORRELATION_ULPS}
FUNCTION_ULPS = {"mean_squared_logarithmic_error": LOG_ULPS, "log_cosh": LOG_ULPS, "poisson": LOG_ULPS,
                 "pearson_correlation": CORRELATION_ULPS}
# - fit: the Dense layer's forward pass sums its products in another order than torch's matmul (the loss agrees to
#   a rounding); the correlations of nearly uncorrelated outputs cancel, which makes that rounding relative 1e-5.
FIT_RTOL = {"pearson_correlation": 4e-5, "concordance_correlation": 4e-6}
FIT_DEFAULT_RTOL = 4e-7


def _close(got, want, ulps):
    got, want = np.array(got, np.float32), np.array(want, np.float32)
    assert got.shape == want.shape
    if ulps:
        np.testing.assert_allclose(got, want, rtol=ulps * EPS32, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def _case_ulps(name, kwargs):
    if name == "R2Score" and kwargs.get("num_regressors"):
        return SUM_ULPS                 # the one-output cases
    return CLASS_ULPS.get(name, 0)


def _ids(table):
    return [f"{i}-{row[0]}-{'-'.join(row[1]) or 'defaults'}" for i, row in enumerate(table)]


@pytest.mark.parametrize("i", range(len(rec.CASES)), ids=_ids(rec.CASES))
def test_metric_results_configs_and_state(i):
    name, kwargs, _ = rec.CASES[i]
    got, want = GOT["cases"][i], RECORDED["cases"][i]
    for g, w in zip(got["results"], want["results"], strict=True):
        _close(g, w, _case_ulps(name, kwargs))
    config, recorded = dict(got["config"]), dict(want["config"])
    assert config.pop("name").rsplit("_", 1)[0] == recorded.pop("name").rsplit("_", 1)[0] or \
        got["config"]["name"] == want["config"]["name"]            # the name counter is per process
    assert config == recorded
    assert got["after_reset"] == want["after_reset"]
    assert got["warnings"] == want["warnings"]
    if want["variables"][0][0] != "total":      # minifp's Mean keeps total and count unnamed
        assert got["variables"] == want["variables"]


@pytest.mark.parametrize("i", range(len(rec.FUNCTIONS)), ids=[f"{i}-{f[0]}" for i, f in enumerate(rec.FUNCTIONS)])
def test_metric_functions(i):
    name, kwargs, _, _ = rec.FUNCTIONS[i]
    ulps = LOG_ULPS if kwargs.get("from_logits") else FUNCTION_ULPS.get(name, 0)
    _close(GOT["functions"][i], RECORDED["functions"][i], ulps)


def test_bad_arguments_raise_kerass_errors():
    # Keras prints shapes as the backend's (torch.Size([6])); minifp as tuples
    want = json.loads(json.dumps(RECORDED["errors"]).replace("torch.Size([6])", "(6,)")
                      .replace("torch.Size([4, 3])", "(4, 3)"))
    assert GOT["errors"] == want


def test_fit_history_with_the_metrics_in_compile():
    got, want = GOT["fit"], RECORDED["fit"]
    assert sorted(got) == sorted(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=FIT_RTOL.get(key, FIT_DEFAULT_RTOL), atol=0,
                                   err_msg=key)


def test_every_keras_metrics_name_is_there():
    """keras.metrics' public names (Keras 3.15.1) all exist; cosine_similarity is not one of them (only the
    loss of that name, its negative, is)."""
    names = set(RECORDED["names"])
    assert {n for n in names if not hasattr(keras.metrics, n)} == set()
    assert "cosine_similarity" not in names and "cosine_similarity" not in keras.metrics.__all__


def test_names_resolve_as_in_keras():
    for name, cls in [("mape", "MeanAbsolutePercentageError"), ("MSLE", "MeanSquaredLogarithmicError"),
                      ("log_cosh_error", "LogCoshError"), ("kl_divergence", "KLDivergence"),
                      ("r2_score", "R2Score"), ("CosineSimilarity", "CosineSimilarity"), ("poisson", "Poisson")]:
        assert type(keras.metrics.get(name)).__name__ == cls
    metric = keras.metrics.deserialize(keras.metrics.serialize(keras.metrics.R2Score(class_aggregation=None)))
    assert type(metric).__name__ == "R2Score" and metric.class_aggregation is None


def test_iou_float_weights_warn_and_truncate():
    """Keras casts float weights to the int confusion matrix (truncating) and says so (values from Keras 3.15.1)."""
    metric = keras.metrics.MeanIoU(num_classes=2)
    with pytest.warns(UserWarning, match="passing weight as `float`"):
        metric.update_state([0, 1, 1], [0, 1, 0], sample_weight=np.array([1.9, 2.5, 0.7], np.float32))
    assert np.array_equal(np.asarray(metric.variables[0].numpy()), [[1, 0], [0, 2]])
    assert float(metric.result()) == 0.9999999403953552          # (1 / (1 + eps) + 2 / (2 + eps)) / (2 + eps)


def test_r2score_needs_two_dimensional_input_before_building():
    metric = keras.metrics.R2Score()
    with pytest.raises(ValueError, match="R2Score expects 2D inputs"):
        metric.update_state(np.ones(3, np.float32), np.ones(3, np.float32))
    assert [v.name for v in metric.variables] == ["num_samples"]


def test_float16_predictions_are_scored_in_float16():
    """Keras computes the metric functions in y_pred's dtype: each step rounded to float16 (1 + 1e-3 included)."""
    y_pred = keras.ops.convert_to_tensor(np.array([[1e-3, 2.0]], np.float32), dtype="float16")
    got = keras.metrics.mean_squared_logarithmic_error(np.zeros((1, 2), np.float32), y_pred)
    assert str(got.dtype) == "float16"
    h, f = np.float16, np.float32
    logs = [h(np.log(f(h(h(x) + h(1))))) for x in (1e-3, 2.0)]          # log(max(y_true, eps) + 1) is 0
    squares = [h(f(x) * f(x)) for x in logs]
    assert float(got.numpy()[0]) == float(h((f(squares[0]) + f(squares[1])) / f(2)))

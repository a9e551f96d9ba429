"""keras.metrics' confusion-matrix metrics (TruePositives ... FalseNegatives, Precision, Recall, AUC, the
sensitivity/specificity family, F1Score, FBetaScore) against Keras 3.15.1, torch backend: every case of
tests/fixtures/keras/metrics_confusion.json (recorded by tools/record_keras_metrics_confusion.py) replayed through
minifp: results after each update_state and after reset_state, the variables (names, paths, shapes, values),
get_config, thresholds, Keras's errors for bad arguments, metrics.get's names, and compile/fit's history keys.

Exact equality (float32 bits) but for the two tolerances below: the counts, divisions, maxima and element-wise
formulas are float32 operations that round the same in NumPy and in torch. Where Keras sums float32 values whose
partial sums round, the order of the additions is the backend's, not Keras's (torch's vectorised reductions and
its float64-accumulated cumsum, TensorFlow's and NumPy's own orders), and the last bits may differ."""
import json
import pathlib
import re

import numpy as np
import pytest

import minifp as mf
from minifp.keras import backend as kb
from minifp.keras import metrics as M

FIX = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" / "keras" / "metrics_confusion.json").read_text())
EPS32 = float(np.finfo(np.float32).eps)

# Rounding the backend decides (tolerances in float32 epsilons, relative and absolute):
AUC_ULPS = 4        # AUC's result: a float32 sum over the num_thresholds - 1 Riemann terms (recorded: 1 ulp at most
                    # where the counts are exact)
WEIGHT_ULPS = 8     # cases whose weights are not dyadic: their counts are float32 sums that round (recorded: tp and
                    # fp 1 ulp apart; tn = total - fp and fn = total - tp keep that absolute error, 8 ulps of a tn
                    # near 0.75; the AUC 3 ulps)
ROUNDED_WEIGHTS = {"auc_rounding_weights", "auc_pr_rounding_weights"}


def _array(entry):
    return np.array(entry["values"], dtype=entry["dtype"]).reshape(entry["shape"])


ARRAYS = {name: _array(entry) for name, entry in FIX["arrays"].items()}


def _values(x):
    """float32 values of a result or variable, as a NumPy array ("nan"/"inf" strings of the fixture too)."""
    if isinstance(x, mf.Tensor):
        return x.float32()
    return np.array(x, dtype=np.float32)


def _same(got, want, ulps=0):
    got, want = _values(got), _values(want)
    assert got.shape == want.shape
    if ulps == 0:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=ulps * EPS32, atol=ulps * EPS32)


def _update(metric, call):
    y, p, *w = call
    metric.update_state(ARRAYS[y], ARRAYS[p], **({"sample_weight": ARRAYS[w[0]]} if w else {}))


def _plain(config):
    """get_config() with tensors as float32 lists and NumPy scalars as Python numbers (the fixture's form)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, mf.Tensor):
            value = value.float32().tolist()
        elif isinstance(value, list):
            value = [v.item() if isinstance(v, np.generic) else v for v in value]
        out[key] = value
    return out


@pytest.mark.parametrize("name", sorted(FIX["cases"]))
def test_results_variables_and_config_match_keras(name):
    case = FIX["cases"][name]
    counts_ulps = WEIGHT_ULPS if name in ROUNDED_WEIGHTS else 0
    ulps = max(counts_ulps, AUC_ULPS if case["class"] == "AUC" else 0)
    kb.clear_session()
    metric = getattr(M, case["class"])(**case["kwargs"])
    for call, want in zip(case["updates"], case["results"]):
        _update(metric, call)
        result = metric.result()
        assert result.fmt == mf.float32
        _same(result, want, ulps)
    got = metric.variables
    assert [(v.name, v.path, list(v.shape)) for v in got] == \
        [(v["name"], v["path"], v["shape"]) for v in case["variables"]]
    for v, want in zip(got, case["variables"]):
        _same(v, want["values"], counts_ulps)
    assert _plain(metric.get_config()) == case["config"]
    assert _plain(type(metric).from_config(metric.get_config()).get_config()) == case["config"]
    want = case["thresholds"]
    if isinstance(want, dict):             # a long list: its length and six of them
        assert len(metric.thresholds) == want["n"]
        assert [float(metric.thresholds[i]) for i in want["index"]] == want["values"]
    elif want is not None:
        assert [float(t) for t in metric.thresholds] == want
    metric.reset_state()
    _same(metric.result(), case["reset_result"])
    assert all(not np.any(v.float32()) for v in metric.variables)


def _shapes_as_tuples(message):
    """torch.Size([16]) -> (16,): Keras prints the backend's shape; minifp's shapes are tuples, as TensorFlow's
    and NumPy's print."""
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)", lambda m: repr(tuple(int(d) for d in m.group(1).split(", ") if d)),
                  message)


PASSED_A_TUPLE = {"recall_thresholds_tuple"}     # JSON has no tuples: Keras was given (0.2, 0.4)


@pytest.mark.parametrize("name", sorted(FIX["errors"]))
def test_bad_arguments_raise_keras_errors(name):
    case = FIX["errors"][name]
    kwargs = dict(case["kwargs"])
    if name in PASSED_A_TUPLE:
        kwargs["thresholds"] = tuple(kwargs["thresholds"])
    with pytest.raises(Exception) as info:
        metric = getattr(M, case["class"])(*case["args"], **kwargs)
        for call in case["updates"]:
            _update(metric, call)
    assert type(info.value).__name__ == case["error"]["type"]
    assert str(info.value) == _shapes_as_tuples(case["error"]["message"])


@pytest.mark.parametrize("identifier", sorted(FIX["get"]))
def test_get_by_name(identifier):
    want = FIX["get"][identifier]
    kb.clear_session()
    if "error" in want:
        with pytest.raises(Exception) as info:
            M.get(identifier)
        assert type(info.value).__name__ == want["error"]["type"]
        if want["error"]["type"] == "TypeError":           # Python's own message
            assert str(info.value) == want["error"]["message"]
        else:                                              # Keras's, then minifp's list of valid names
            assert str(info.value).startswith(want["error"]["message"])
        return
    metric = M.get(identifier)
    assert (type(metric).__name__, metric.name) == (want["class"], want["name"])


def _metric_list(specs):
    """compile()'s metrics from the fixture: [class name, kwargs] makes an object, a string stays a string."""
    return None if specs is None else [s if isinstance(s, str) else getattr(M, s[0])(**s[1]) for s in specs]


@pytest.mark.parametrize("name", sorted(FIX["fit"]["cases"]))
def test_fit_history_keys_and_values(name):
    """compile(metrics=[AUC(), Precision(), "auc", ...]): Keras's history keys (auc, auc_1, precision_1, val_auc,
    weighted_auc, ...) and values. The losses agree to 1e-6 relative (torch's float32 kernels and minifp's round
    the last bits differently: 2 ulps recorded); the predictions stay on the same side of every threshold, so the
    counts agree exactly, and precision and recall to the bit, the AUCs to AUC_ULPS."""
    from minifp import keras
    case, inputs = FIX["fit"]["cases"][name], FIX["fit"]["inputs"]
    x, y = np.array(inputs["x"], np.float32), np.array(inputs["y"], np.float32)
    w = np.array(inputs["sample_weight"], np.float32)
    kb.clear_session()
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(
        1, activation="sigmoid", kernel_initializer=keras.initializers.Constant(0.5),
        bias_initializer=keras.initializers.Constant(-0.25))])
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy",
                  metrics=_metric_list(case["metrics"]), weighted_metrics=_metric_list(case["weighted_metrics"]))
    history = model.fit(x, y, sample_weight=w, batch_size=4, epochs=2, shuffle=False, verbose=0,
                        validation_data=(x[::-1], y[::-1]))
    assert sorted(history.history) == sorted(case["history"])
    for key, want in case["history"].items():
        if key.endswith("loss"):
            np.testing.assert_allclose(history.history[key], want, rtol=1e-6, err_msg=key)
        else:
            _same(history.history[key], want, AUC_ULPS if "auc" in key else 0)
    assert [m.name for m in model.metrics[-1].metrics] == case["compiled_names"]


def test_compile_resolves_the_metric_names():
    """"auc", "precision", "recall" in compile are AUC(), Precision(), Recall() named by the string."""
    y = np.array([[0.0], [1.0]], np.float32)
    for identifier, cls in [("auc", M.AUC), ("AUC", M.AUC), ("precision", M.Precision), ("recall", M.Recall),
                            ("f1_score", M.F1Score)]:
        metric = M.resolve(identifier, y_true=y, y_pred=y)
        assert type(metric) is cls and metric.name == identifier


def test_auc_thresholds_carry_epsilon_endpoints():
    """AUC's thresholds: -epsilon, the evenly spaced ones, 1 + epsilon (Keras's backend.epsilon())."""
    m = M.AUC(num_thresholds=5)
    assert m.thresholds == [0.0 - 1e-7, 0.25, 0.5, 0.75, 1.0 + 1e-7]
    lazy = M.AUC(multi_label=True)
    assert lazy.variables == []                          # made at the first update, when the labels are known
    lazy.update_state(ARRAYS["m_y"], ARRAYS["m_p"])
    assert [tuple(v.shape) for v in lazy.variables] == [(200, 3)] * 4


def test_float16_predictions_are_counted_as_their_float32_values():
    """Keras casts y_pred to the variables' float32 first: a float16 prediction counts as its exact value."""
    from minifp.keras import ops
    p = ops.cast(np.array([0.5, 0.5004, 0.7], np.float32), "float16")       # 0.5004 becomes 0.50048828125
    m = M.TruePositives(thresholds=[0.5, 0.5004])
    m.update_state(np.ones(3, np.float32), p)
    assert m.result().float32().tolist() == [2.0, 2.0]

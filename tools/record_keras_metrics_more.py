"""Record Keras 3's regression, probabilistic, hinge, correlation and IoU metrics (results after each
update_state, with and without sample weights, configs, variables, reset_state, the metric functions, errors for
bad arguments, and a fit's history with them as compile metrics) into tests/fixtures/keras/metrics_more.json.
tests/keras/test_metrics_more.py runs the same cases through minifp.keras.

Run by hand with a real Keras 3 (not the project's environment):
    KERAS_BACKEND=torch python tools/record_keras_metrics_more.py
"""
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "metrics_more.json"


def _wave(shape, k, scale=1.0, offset=0.0):
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (offset + scale * np.sin(0.61 * i + k)).astype(np.float32).reshape(shape)


def _softmax_rows(x):
    e = np.exp(x.astype(np.float64))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


# named inputs: float32 arrays (labels as float32 too, as a model's targets are)
DATA = {
    "reg_true": _wave((4, 3), 0, 1.5, 2.0),             # positive, for the logarithmic and Poisson metrics
    "reg_pred": _wave((4, 3), 1, 1.2, 1.8),
    "reg_true2": _wave((3, 3), 2, 0.8, -0.1),           # with negatives (MAPE's |y_true| floor, cosine signs)
    "reg_pred2": _wave((3, 3), 3, 0.9, 0.2),
    "prob_true": _softmax_rows(_wave((4, 3), 4, 2.0)),
    "prob_pred": _softmax_rows(_wave((4, 3), 5, 1.5)),
    "bin_true": (_wave((4, 3), 6) > 0).astype(np.float32),
    "signed_pred": _wave((4, 3), 7, 1.3),
    "col_true": _wave((5, 1), 8, 2.0, 1.0),             # one regression target (R2Score's 2-d input)
    "col_pred": _wave((5, 1), 9, 1.5, 1.0),
    "seg_true": np.array([[0, 1, 2, 2], [1, 1, 0, 3]], np.float32),     # 3 is out of range for 3 classes
    "seg_pred": np.array([[0, 2, 2, 1], [1, 0, 0, 2]], np.float32),
    "onehot_true": np.eye(3, dtype=np.float32)[[0, 1, 2, 2, 1]],
    "onehot_pred": _softmax_rows(_wave((5, 3), 10, 2.0)),
    "binary_true": np.array([0, 1, 1, 0, 1, 0], np.float32),
    "binary_prob": np.array([0.2, 0.7, 0.4, 0.5, 0.9, 0.55], np.float32),
    "w4": np.array([0.5, 1.0, 2.0, 0.0], np.float32),
    "w3": np.array([1.0, 0.25, 2.0], np.float32),
    "w5": np.array([1.0, 2.0, 0.5, 1.0, 3.0], np.float32),
    "w6": np.array([1, 2, 1, 3, 1, 2], np.float32),
    "w_seg": np.array([[1, 2, 1, 1], [3, 1, 2, 1]], np.float32),
}

# (class name, kwargs, calls: [(y_true, y_pred, sample_weight or None)]) -- names in DATA
REG = [("reg_true", "reg_pred", None), ("reg_true2", "reg_pred2", "w3"), ("reg_true", "reg_pred", "w4")]
CASES = [
    ("MeanAbsolutePercentageError", {}, REG),
    ("MeanSquaredLogarithmicError", {}, REG),
    ("CosineSimilarity", {}, REG),
    ("CosineSimilarity", {"axis": 0, "name": "cos0"}, [("reg_true", "reg_pred", None)]),
    ("LogCoshError", {}, REG),
    ("Poisson", {}, [("reg_true", "reg_pred", None), ("reg_true", "reg_pred", "w4")]),
    ("KLDivergence", {}, [("prob_true", "prob_pred", None), ("prob_true", "prob_pred", "w4")]),
    ("Hinge", {}, [("bin_true", "signed_pred", None), ("bin_true", "signed_pred", "w4")]),
    ("SquaredHinge", {}, [("bin_true", "signed_pred", None), ("bin_true", "signed_pred", "w4")]),
    ("CategoricalHinge", {}, [("prob_true", "signed_pred", None), ("bin_true", "signed_pred", "w4")]),
    ("PearsonCorrelation", {}, REG),
    ("PearsonCorrelation", {"axis": 0}, [("reg_true", "reg_pred", None)]),
    ("ConcordanceCorrelation", {}, REG),
    ("R2Score", {}, [("reg_true", "reg_pred", None), ("reg_true", "reg_pred", "w4")]),
    ("R2Score", {"class_aggregation": None}, [("reg_true", "reg_pred", None)]),
    ("R2Score", {"class_aggregation": "variance_weighted_average"}, [("reg_true", "reg_pred", "w4")]),
    ("R2Score", {"num_regressors": 2}, [("col_true", "col_pred", None), ("col_true", "col_pred", "w5")]),
    ("R2Score", {"num_regressors": 4}, [("col_true", "col_pred", None)]),      # n - 1 regressors: the warning
    ("IoU", {"num_classes": 3, "target_class_ids": [0, 2]}, [("seg_true", "seg_pred", None),
                                                            ("seg_true", "seg_pred", "w_seg")]),
    ("MeanIoU", {"num_classes": 3}, [("seg_true", "seg_pred", None), ("seg_true", "seg_pred", "w_seg")]),
    ("MeanIoU", {"num_classes": 3, "ignore_class": 1}, [("seg_true", "seg_pred", None)]),
    ("OneHotIoU", {"num_classes": 3, "target_class_ids": [1]}, [("onehot_true", "onehot_pred", None),
                                                               ("onehot_true", "onehot_pred", "w5")]),
    ("OneHotMeanIoU", {"num_classes": 3}, [("onehot_true", "onehot_pred", None)]),
    ("BinaryIoU", {}, [("binary_true", "binary_prob", None), ("binary_true", "binary_prob", "w6")]),
    ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.55}, [("binary_true", "binary_prob", None)]),
]

# the metric functions: (name, kwargs, y_true, y_pred)
FUNCTIONS = [
    ("mean_absolute_percentage_error", {}, "reg_true2", "reg_pred2"),
    ("mean_squared_logarithmic_error", {}, "reg_true", "reg_pred"),
    ("log_cosh", {}, "reg_true", "reg_pred"),
    ("poisson", {}, "reg_true", "reg_pred"),
    ("kl_divergence", {}, "prob_true", "prob_pred"),
    ("hinge", {}, "bin_true", "signed_pred"),
    ("squared_hinge", {}, "bin_true", "signed_pred"),
    ("categorical_hinge", {}, "prob_true", "signed_pred"),
    ("pearson_correlation", {}, "reg_true", "reg_pred"),
    ("concordance_correlation", {"axis": 0}, "reg_true", "reg_pred"),
    ("binary_focal_crossentropy", {}, "bin_true", "prob_pred"),
    ("binary_focal_crossentropy", {"apply_class_balancing": True, "alpha": 0.4, "gamma": 1.5,
                                   "label_smoothing": 0.1}, "bin_true", "prob_pred"),
    ("binary_focal_crossentropy", {"from_logits": True}, "bin_true", "signed_pred"),
    ("categorical_focal_crossentropy", {}, "prob_true", "prob_pred"),
    ("categorical_focal_crossentropy", {"alpha": 0.5, "gamma": 1.0, "label_smoothing": 0.2}, "onehot_true",
     "onehot_pred"),
    ("categorical_focal_crossentropy", {"from_logits": True}, "prob_true", "signed_pred"),
]

ERRORS = [
    ("R2Score", {"class_aggregation": "median"}),
    ("R2Score", {"num_regressors": -1}),
    ("IoU", {"num_classes": 2, "target_class_ids": [0, 2]}),
]
SHAPE_ERRORS = [("R2Score", {}, "reg_true", "binary_prob")]      # update_state with 1-d input

FIT_METRICS = ["MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "CosineSimilarity", "LogCoshError",
               "Poisson", "R2Score", "PearsonCorrelation", "ConcordanceCorrelation"]


def _values(x):
    return [float(v) for v in np.ravel(np.asarray(x, np.float32))]


def _variables(metric):
    return [[v.name, list(v.shape)] for v in metric.variables]


def run_case(keras, name, kwargs, calls):
    import warnings
    metric = getattr(keras.metrics, name)(**kwargs)
    results = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for y_true, y_pred, weight in calls:
            metric.update_state(DATA[y_true], DATA[y_pred], None if weight is None else DATA[weight])
            results.append(_values(metric.result()))
    messages = sorted({str(w.message) for w in caught if "More independent" in str(w.message)
                       or "Division by zero" in str(w.message)})
    variables = _variables(metric)
    metric.reset_state()
    return {"results": results, "config": metric.get_config(), "variables": variables,
            "after_reset": _values(metric.result()) if name != "R2Score" else None, "warnings": messages}


def _error(e):
    return {"error": [type(e).__name__, str(e).splitlines()[0]]}


def run(keras):
    out = {"cases": [], "functions": [], "errors": []}
    for name, kwargs, calls in CASES:
        try:
            out["cases"].append(run_case(keras, name, kwargs, calls))
        except Exception as e:      # noqa: BLE001 (every exception is what is recorded)
            out["cases"].append(_error(e))
    for name, kwargs, y_true, y_pred in FUNCTIONS:
        out["functions"].append(_values(getattr(keras.metrics, name)(DATA[y_true], DATA[y_pred], **kwargs)))
    for name, kwargs in ERRORS:
        try:
            getattr(keras.metrics, name)(**kwargs)
            out["errors"].append(None)
        except Exception as e:      # noqa: BLE001
            out["errors"].append(_error(e))
    for name, kwargs, y_true, y_pred in SHAPE_ERRORS:
        try:
            getattr(keras.metrics, name)(**kwargs).update_state(DATA[y_true], DATA[y_pred])
            out["errors"].append(None)
        except Exception as e:      # noqa: BLE001
            out["errors"].append(_error(e))
    out["fit"] = run_fit(keras)
    return out


def run_fit(keras):
    """A Dense(3) regression fitted two epochs with the metrics in compile: fit's history."""
    x = _wave((8, 4), 11, 1.0)
    y = _wave((8, 3), 12, 1.0, 2.0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.set_weights([_wave((4, 3), 13, 0.3), _wave((3,), 14, 0.1, 1.5)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse",
                  metrics=[getattr(keras.metrics, n)() for n in FIT_METRICS] + ["mape", "msle"])
    history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    return {k: [float(np.float32(v)) for v in vs] for k, vs in sorted(history.history.items())}


def main():
    import keras
    got = run(keras)
    got["names"] = sorted(n for n in dir(keras.metrics) if not n.startswith("_"))     # keras.metrics' public names
    OUT.write_text(json.dumps({"keras": keras.__version__, "backend": keras.backend.backend(), **got},
                              indent=1) + "\n")
    print(f"{OUT}: {len(got['cases'])} cases, {len(got['functions'])} functions", file=sys.stderr)


if __name__ == "__main__":
    main()

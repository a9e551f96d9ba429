"""Record Keras 3's confusion-matrix metrics (TruePositives ... FalseNegatives, Precision, Recall, AUC, the
sensitivity/specificity family, F1Score and FBetaScore) into tests/fixtures/keras/metrics_confusion.json, which
tests/keras/test_metrics_confusion.py replays through minifp.keras.metrics.

For each case of CASES: the class, its constructor arguments, the update_state calls (inputs named from ARRAYS,
which the file stores verbatim), and what Keras gives: result() after each call and after reset_state(), the
variables (name, path, shape, values), get_config(), the thresholds (of a long list: six of them); for ERRORS
the exception type and message (at construction or at the first update). GET records what keras.metrics.get
makes of each name; FIT records model.fit's history of a small deterministic model compiled with these metrics
(constant initializers, shuffle=False). keras.backend.clear_session() runs before every case, so automatic names
start afresh.

Run by hand with a real Keras 3 (the torch backend is what the fixture holds):
KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_metrics_confusion.py
"""
import json
import re
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "metrics_confusion.json"
F32 = np.float32


def _arrays():
    """The inputs: literal cases with ties, values exactly at thresholds, 0 and 1; seeded random batches."""
    rng = np.random.default_rng(2024)
    rp = rng.random(32).astype(F32)
    ry = (rng.random(32) < rp).astype(F32)          # labels that follow the scores, with mistakes
    a = {
        # binary: 0, 1, 0.5 ties, the thresholds of 3, 5 and 200 evenly spaced ones (1/199, 100/199 in float32)
        "b_y": np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0], F32),
        "b_p": np.array([0.0, 0.5, 0.5, 0.5, 1.0, 1.0, 0.3, 0.7, 0.2, 0.9, 0.25, 0.75, 1 / 199, 100 / 199, 0.6,
                         0.35], F32),
        "b_w": np.array([1, 0.5, 2, 0, 1.5, 1, 0.25, 3, 1, 0.75, 2, 0.5, 1, 4, 0.125, 1], F32),
        "b_y_int": np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0], np.int64),
        "r_y": ry, "r_p": rp,
        "r_w": (rng.integers(0, 8, 32) / 4).astype(F32),       # dyadic: every float32 sum of them is exact
        "q_w": rng.random(32).astype(F32),                     # not dyadic: sums round, in the backend's order
        # multi-label / multi-class: row ties (top_k boundaries), 0 and 1, values at 0.5
        "m_y": np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 1], [0, 0, 0], [1, 1, 1]],
                        F32),
        "m_p": np.array([[0.9, 0.1, 0.6], [0.2, 0.8, 0.5], [0.5, 0.4, 0.1], [0.3, 0.4, 0.7], [0.6, 0.2, 0.1],
                         [0.1, 0.7, 0.3], [0.4, 0.3, 0.5], [1.0, 0.0, 0.8]], F32),
        "m_w": np.array([1, 2, 0.5, 1, 0, 1.5, 1, 0.25], F32),
        "m_w2": np.array([[1, 0.5, 2], [0, 1, 1], [2, 2, 0.25], [1, 1, 1], [0.5, 0, 3], [1, 1.5, 1], [4, 1, 1],
                          [1, 0.75, 0.5]], F32),
        "m_p_ties": np.array([[0.5, 0.5, 0.1], [0.6, 0.2, 0.2], [0.3, 0.3, 0.3], [0.1, 0.9, 0.9]], F32),
        "m_y_ties": np.array([[0, 1, 0], [1, 0, 1], [0, 0, 1], [0, 1, 1]], F32),
        # logits (from_logits): sigmoid(0) = 0.5, saturated ends
        "l_y": np.array([0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0], F32),
        "l_p": np.array([-20, -2, -0.5, 0, 0, 0.3, 1.5, 4, 20, -100, 100, 0.7], F32),
        # Keras's docstring examples
        "s_y": np.array([0, 0, 0, 1, 1], F32), "s_p": np.array([0, 0.3, 0.8, 0.3, 0.8], F32),
        "s_w1": np.array([1, 1, 2, 2, 1], F32), "s_w2": np.array([1, 1, 2, 2, 2], F32),
        "s_w3": np.array([2, 2, 2, 1, 1], F32),
        "d_y": np.array([0, 0, 1, 1], F32), "d_p": np.array([0, 0.5, 0.3, 0.9], F32),
        "d_w": np.array([1, 0, 0, 1], F32),
        "z_p": np.zeros(6, F32), "z_y": np.array([0, 1, 0, 1, 1, 0], F32),
        # F-scores: a row of zeros, a row with a tied maximum
        "f_y": np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0], [1, 1, 0]], F32),
        "f_p": np.array([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2], [0, 0, 0], [0.6, 0.1, 0.3], [0.2, 0.5, 0.3],
                         [0.3, 0.3, 0.4]], F32),
        "f_w": np.array([1, 0.5, 2, 1.5, 0.25, 1], F32),
    }
    a["b_p_col"] = a["b_p"][:, None]
    a["two"] = np.array(2.0, F32)
    return a


ARRAYS = _arrays()


def u(y, p, w=None):
    """One update_state call, by array names."""
    return [y, p] if w is None else [y, p, w]


B, BW, R, RW, RQ = u("b_y", "b_p"), u("b_y", "b_p", "b_w"), u("r_y", "r_p"), u("r_y", "r_p", "r_w"), \
    u("r_y", "r_p", "q_w")
M, MW, MW2 = u("m_y", "m_p"), u("m_y", "m_p", "m_w"), u("m_y", "m_p", "m_w2")
MT = u("m_y_ties", "m_p_ties")
F, FW = u("f_y", "f_p"), u("f_y", "f_p", "f_w")

# name: (class, kwargs, updates)
CASES = {
    "tp": ("TruePositives", {}, [B, BW]),
    "tp_at_0.3": ("TruePositives", {"thresholds": 0.3}, [B]),
    "tp_int_labels": ("TruePositives", {"thresholds": [0.25, 0.5]}, [u("b_y_int", "b_p", "b_w")]),
    "fp_list": ("FalsePositives", {"thresholds": [0.15, 0.5, 0.85]}, [B, RW]),
    "fp_multi": ("FalsePositives", {}, [M, MW]),
    "tn_even3": ("TrueNegatives", {"thresholds": [0.0, 0.5, 1.0]}, [BW, R]),
    "tn_weights_2d": ("TrueNegatives", {"thresholds": [0.25, 0.5]}, [MW2]),
    "fn_even5": ("FalseNegatives", {"thresholds": [0.0, 0.25, 0.5, 0.75, 1.0]}, [B, BW]),
    "fn_scalar_weight": ("FalseNegatives", {}, [u("b_y", "b_p", "two")]),
    "precision": ("Precision", {}, [B, BW, R]),
    "precision_list": ("Precision", {"thresholds": [0.0, 0.3, 0.5, 0.7]}, [B, RW]),
    "precision_even3": ("Precision", {"thresholds": [0.0, 0.5, 1.0]}, [BW]),
    "precision_top_k1": ("Precision", {"top_k": 1}, [M, MW]),
    "precision_top_k2": ("Precision", {"top_k": 2}, [M]),
    "precision_top_k_ties": ("Precision", {"top_k": 1}, [MT]),
    "precision_class_id": ("Precision", {"class_id": 1}, [M, MW]),
    "precision_top_k_class_id": ("Precision", {"top_k": 2, "class_id": 0}, [M]),
    "precision_top_k_threshold": ("Precision", {"top_k": 2, "thresholds": 0.5}, [MW]),
    "precision_no_positives": ("Precision", {}, [u("z_y", "z_p")]),
    "precision_column": ("Precision", {}, [u("b_y", "b_p_col", "b_w")]),
    "recall": ("Recall", {}, [B, BW]),
    "recall_list": ("Recall", {"thresholds": [0.1, 0.5, 0.9]}, [RW]),
    "recall_top_k2": ("Recall", {"top_k": 2}, [M]),
    "recall_class_id": ("Recall", {"class_id": 2, "thresholds": [0.5, 0.7]}, [MW]),
    "recall_weights_2d": ("Recall", {}, [MW2]),
    "auc": ("AUC", {}, [B, BW, RW]),
    "auc_3": ("AUC", {"num_thresholds": 3}, [u("d_y", "d_p"), u("d_y", "d_p", "d_w")]),
    "auc_10": ("AUC", {"num_thresholds": 10}, [BW]),
    "auc_roc_minoring": ("AUC", {"summation_method": "minoring"}, [B, RW]),
    "auc_roc_majoring": ("AUC", {"summation_method": "Majoring"}, [BW]),
    "auc_pr": ("AUC", {"curve": "PR"}, [B, RW]),
    "auc_pr_minoring": ("AUC", {"curve": "pr", "summation_method": "minoring"}, [BW]),
    "auc_pr_majoring": ("AUC", {"curve": "PR", "summation_method": "majoring"}, [R]),
    "auc_prgain": ("AUC", {"curve": "PRGAIN"}, [B, RW]),
    "auc_thresholds_uneven": ("AUC", {"thresholds": [0.3, 0.1, 0.75]}, [B, BW]),
    "auc_thresholds_even": ("AUC", {"thresholds": [0.25, 0.5, 0.75]}, [BW]),
    "auc_thresholds_pr": ("AUC", {"thresholds": [0.2, 0.5, 0.55, 0.8], "curve": "PR"}, [RW]),
    "auc_flattened": ("AUC", {}, [M]),
    "auc_label_weights": ("AUC", {"label_weights": [1.0, 0.5, 2.0]}, [M, MW]),
    "auc_label_weights_uneven": ("AUC", {"label_weights": [1.0, 0.5, 2.0], "thresholds": [0.2, 0.45, 0.9]},
                                 [MW]),
    "auc_multi": ("AUC", {"multi_label": True}, [M, MW]),
    "auc_multi_num_labels": ("AUC", {"multi_label": True, "num_labels": 3}, [M]),
    "auc_multi_label_weights": ("AUC", {"multi_label": True, "label_weights": [1.0, 2.0, 0.5]}, [MW]),
    "auc_multi_pr": ("AUC", {"multi_label": True, "curve": "PR"}, [MW]),
    "auc_multi_uneven": ("AUC", {"multi_label": True, "thresholds": [0.2, 0.45, 0.9]}, [M]),
    "auc_multi_weights_2d": ("AUC", {"multi_label": True, "summation_method": "minoring"}, [MW2]),
    "auc_from_logits": ("AUC", {"from_logits": True}, [u("l_y", "l_p")]),
    "auc_from_logits_pr": ("AUC", {"from_logits": True, "curve": "PR", "num_thresholds": 50}, [u("l_y", "l_p")]),
    "auc_rounding_weights": ("AUC", {}, [RQ]),
    "auc_pr_rounding_weights": ("AUC", {"curve": "PR"}, [RQ]),
    "sensitivity_at_specificity": ("SensitivityAtSpecificity", {"specificity": 0.5}, [u("s_y", "s_p"),
                                                                                        u("s_y", "s_p", "s_w1")]),
    "sensitivity_at_specificity_1": ("SensitivityAtSpecificity", {"specificity": 0.4, "num_thresholds": 1}, [B]),
    "sensitivity_at_specificity_r": ("SensitivityAtSpecificity", {"specificity": 0.8}, [RW]),
    "specificity_at_sensitivity": ("SpecificityAtSensitivity", {"sensitivity": 0.5}, [u("s_y", "s_p"),
                                                                                       u("s_y", "s_p", "s_w2")]),
    "specificity_at_sensitivity_class": ("SpecificityAtSensitivity",
                                         {"sensitivity": 0.6, "class_id": 1, "num_thresholds": 7}, [MW]),
    "precision_at_recall": ("PrecisionAtRecall", {"recall": 0.5}, [u("s_y", "s_p"), u("s_y", "s_p", "s_w3")]),
    "precision_at_recall_r": ("PrecisionAtRecall", {"recall": 0.75}, [RW, B]),
    "recall_at_precision": ("RecallAtPrecision", {"precision": 0.8}, [u("d_y", "d_p"), u("d_y", "d_p", "d_w")]),
    "recall_at_precision_r": ("RecallAtPrecision", {"precision": 0.6, "num_thresholds": 20}, [R, BW]),
    "f1": ("F1Score", {}, [F, FW]),
    "f1_micro": ("F1Score", {"average": "micro"}, [FW]),
    "f1_macro": ("F1Score", {"average": "macro", "threshold": 0.5}, [F]),
    "f1_weighted": ("F1Score", {"average": "weighted"}, [FW, M]),
    "fbeta_half": ("FBetaScore", {"beta": 0.5, "average": "macro"}, [FW]),
    "fbeta_2": ("FBetaScore", {"beta": 2.0, "threshold": 0.3}, [F]),
    "fbeta_0.3": ("FBetaScore", {"beta": 0.3, "average": "weighted", "threshold": 0.6}, [FW]),
}

# name: (class, args, kwargs, updates): the refusals, at construction or at the first update
ERRORS = {
    "precision_threshold_1.5": ("Precision", [], {"thresholds": 1.5}, []),
    "precision_thresholds_negative": ("Precision", [], {"thresholds": [0.2, -0.1]}, []),
    "precision_threshold_none": ("Precision", [], {"thresholds": [0.5, None]}, []),
    "true_positives_threshold_2": ("TruePositives", [], {"thresholds": 2}, []),
    "recall_thresholds_tuple": ("Recall", [], {"thresholds": (0.2, 0.4)}, []),
    "auc_num_thresholds_1": ("AUC", [], {"num_thresholds": 1}, []),
    "auc_curve": ("AUC", [], {"curve": "xyz"}, []),
    "auc_summation_method": ("AUC", [], {"summation_method": "avg"}, []),
    "auc_num_labels_without_multi_label": ("AUC", [], {"num_labels": 3}, []),
    "auc_multi_label_rank_1": ("AUC", [], {"multi_label": True}, [B]),
    "precision_class_id_rank_1": ("Precision", [], {"class_id": 1}, [B]),
    "sensitivity_1.5": ("SensitivityAtSpecificity", [1.5], {}, []),
    "specificity_negative": ("SpecificityAtSensitivity", [-0.1], {}, []),
    "recall_2": ("PrecisionAtRecall", [2], {}, []),
    "precision_negative": ("RecallAtPrecision", [-1.0], {}, []),
    "num_thresholds_0": ("SensitivityAtSpecificity", [0.5], {"num_thresholds": 0}, []),
    "fbeta_average": ("FBetaScore", [], {"average": "avg"}, []),
    "fbeta_int_beta": ("FBetaScore", [], {"beta": 1}, []),
    "fbeta_negative_beta": ("FBetaScore", [], {"beta": -1.0}, []),
    "f1_int_threshold": ("F1Score", [], {"threshold": 1}, []),
    "f1_threshold_1.5": ("F1Score", [], {"threshold": 1.5}, []),
    "f1_threshold_0": ("F1Score", [], {"threshold": 0.0}, []),
    "f1_rank_1": ("F1Score", [], {}, [B]),
}

GET = ["auc", "AUC", "precision", "Precision", "recall", "Recall", "true_positives", "TruePositives",
       "false_positives", "true_negatives", "false_negatives", "FalseNegatives", "f1_score", "F1Score",
       "f_beta_score", "FBetaScore", "fbeta_score", "precision_at_recall", "SensitivityAtSpecificity"]


def f32(x):
    """A float32 value (or nested list of them) as JSON: the shortest decimal that reads back as the float32."""
    if isinstance(x, (list, tuple)):
        return [f32(v) for v in x]
    v = F32(x)
    return float(str(v)) if np.isfinite(v) else str(v)


def plain(x):
    """A config value as JSON: tensors and arrays as float32 lists, NumPy scalars as Python numbers."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic):
        return f32(np.asarray(x, F32).tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x


def encode(name):
    a = ARRAYS[name]
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "values": f32(a.reshape(-1).tolist()) if a.dtype == F32 else a.reshape(-1).tolist()}


def value(keras, t):
    return f32(np.asarray(keras.ops.convert_to_numpy(t), F32).tolist())


def update(metric, call):
    y, p, *w = call
    metric.update_state(ARRAYS[y], ARRAYS[p], **({"sample_weight": ARRAYS[w[0]]} if w else {}))


def thresholds(metric):
    """The thresholds attribute; of a long list (200 by default) its length and six of them."""
    listed = plain(getattr(metric, "thresholds", None))
    if listed is None or len(listed) <= 12:
        return listed
    n = len(listed)
    index = [0, 1, 2, n // 2, n - 2, n - 1]
    return {"n": n, "index": index, "values": [listed[i] for i in index]}


def record_case(keras, cls, kwargs, updates):
    keras.backend.clear_session()
    metric = getattr(keras.metrics, cls)(**kwargs)
    results = []
    for call in updates:
        update(metric, call)
        results.append(value(keras, metric.result()))
    out = {"class": cls, "kwargs": kwargs, "updates": updates, "results": results,
           "variables": [{"name": v.name, "path": v.path, "shape": list(v.shape), "values": value(keras, v)}
                         for v in metric.variables],
           "config": plain(metric.get_config()), "thresholds": thresholds(metric)}
    metric.reset_state()
    out["reset_result"] = value(keras, metric.result())
    return out


def record_error(keras, cls, args, kwargs, updates):
    keras.backend.clear_session()
    try:
        metric = getattr(keras.metrics, cls)(*args, **kwargs)
        for call in updates:
            update(metric, call)
    except Exception as e:          # noqa: BLE001 (the exception is what is recorded)
        return {"class": cls, "args": args, "kwargs": kwargs, "updates": updates,
                "error": {"type": type(e).__name__, "message": str(e)}}
    raise AssertionError(f"{cls}({args}, {kwargs}) raised nothing")


def record_get(keras, name):
    keras.backend.clear_session()
    try:
        metric = keras.metrics.get(name)
    except Exception as e:          # noqa: BLE001
        return {"error": {"type": type(e).__name__, "message": str(e)}}
    return {"class": type(metric).__name__, "name": metric.name}


def fit_data():
    x = np.stack([np.linspace(-1, 1, 16), np.cos(np.arange(16))], axis=1).astype(F32)
    y = np.array([0, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1], F32)[:, None]
    w = np.array([1, 2, 1, 0.5, 1, 1, 2, 1, 1, 1, 0.5, 1, 2, 1, 1, 1], F32)
    return x, y, w


FIT_CASES = {
    # second instances: "auc" and "precision" given twice (auc_1, precision_1), weighted_metrics' auc (weighted_auc)
    "repeated_names": ([["AUC", {}], ["Precision", {}], "auc", "precision", "recall"], ["auc"]),
    # automatic names of second instances: auc, auc_1 (the PR curve), recall, recall_1. (Not TruePositives & co.
    # here: under the torch backend their result() is a view of the variable, so with validation_data the
    # history's training value is overwritten by evaluate's; TensorFlow's backend copies.)
    "auto_names": ([["AUC", {}], ["AUC", {"curve": "PR"}], ["Recall", {}], ["Recall", {"thresholds": 0.3}]], None),
}


def metric_list(module, specs):
    """compile()'s metrics from a case's specs: [class name, kwargs] makes an object, a string stays a string."""
    return None if specs is None else [s if isinstance(s, str) else getattr(module, s[0])(**s[1]) for s in specs]


def record_fit(keras, metrics, weighted):
    keras.backend.clear_session()
    x, y, w = fit_data()
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(
        1, activation="sigmoid", kernel_initializer=keras.initializers.Constant(0.5),
        bias_initializer=keras.initializers.Constant(-0.25))])
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy",
                  metrics=metric_list(keras.metrics, metrics), weighted_metrics=metric_list(keras.metrics, weighted))
    history = model.fit(x, y, sample_weight=w, batch_size=4, epochs=2, shuffle=False, verbose=0,
                        validation_data=(x[::-1], y[::-1]))
    return {"metrics": metrics, "weighted_metrics": weighted,
            "history": {k: f32(v) for k, v in history.history.items()},
            "compiled_names": [m.name for m in model.metrics[-1].metrics]}


def dump(out):
    """JSON with one line per list of numbers (threshold and count vectors stay readable and small)."""
    text = json.dumps(out, indent=1)
    text = re.sub(r"\[\n\s*([-+\d.e\"naif, \n]*?)\n\s*\]", lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]",
                  text)
    assert json.loads(text) == json.loads(json.dumps(out))
    return text + "\n"


def main():
    import warnings

    import keras
    import torch
    warnings.simplefilter("ignore")
    x, y, w = fit_data()
    out = {
        "versions": {"keras": keras.__version__, "backend": keras.backend.backend(), "numpy": np.__version__,
                     "torch": torch.__version__},
        "arrays": {name: encode(name) for name in ARRAYS},
        "cases": {name: record_case(keras, *case) for name, case in CASES.items()},
        "errors": {name: record_error(keras, *case) for name, case in ERRORS.items()},
        "get": {name: record_get(keras, name) for name in GET},
        "fit": {"inputs": {"x": f32(x.tolist()), "y": f32(y.tolist()), "sample_weight": f32(w.tolist())},
                "cases": {name: record_fit(keras, *case) for name, case in FIT_CASES.items()}},
    }
    OUT.write_text(dump(out))
    print(f"{OUT}: {len(out['cases'])} cases, {len(out['errors'])} errors, {len(out['get'])} names, "
          f"{len(FIT_CASES)} fits", file=sys.stderr)


if __name__ == "__main__":
    main()

"""keras.metrics against Keras 3.15.1 (TensorFlow 2.21): results, state and configs recorded from it; how compile's
"accuracy" is chosen (the binary case); Mean/Sum semantics; get/resolve and bad identifiers."""
import json
import pathlib

import numpy as np
import pytest

import minifp as mf
from minifp.keras import metrics as M

rng = np.random.default_rng(7)      # the inputs of the recorded cases (as in test_losses.py)
P = rng.random((6, 4)).astype(np.float32)
P[0] = [0, 1, 0, 0]
P[1, 2] = 0
Y = np.array([1, 2, 0, 3, 3, 1])
OH = np.eye(4, dtype=np.float32)[Y]
L = (rng.standard_normal((6, 4)) * 3).astype(np.float32)
L[0] = [30, 0, -30, 1]
SW = np.array([1, 0.5, 0, 2, 1, 3], np.float32)
B = rng.random((6, 1)).astype(np.float32)
B[0, 0], B[1, 0] = 1.0, 0.0
BY = np.array([1, 0, 1, 0, 1, 1], np.float32)
_ = rng.standard_normal((6, 1))
R = rng.standard_normal((6, 3)).astype(np.float32)
RT = rng.standard_normal((6, 3)).astype(np.float32)


def cases():
    """name -> (metric, batches); each batch is (y_true, y_pred[, sample_weight])."""
    return {
        "binary_accuracy": (M.BinaryAccuracy(), [(BY, B), (BY[:, None], B, SW)]),
        "binary_accuracy_t": (M.BinaryAccuracy(threshold=0.3), [(BY, B)]),
        "accuracy": (M.Accuracy(), [([1, 2, 3, 4], [0, 2, 3, 4]), ([[1], [2]], [[1], [0]], [1, 3])]),
        "categorical_accuracy": (M.CategoricalAccuracy(), [(OH, P), (OH, L, SW)]),
        "sparse_categorical_accuracy": (M.SparseCategoricalAccuracy(), [(Y, P), (Y[:, None], L, SW)]),
        "top_k": (M.TopKCategoricalAccuracy(k=2), [(OH, P)]),
        "sparse_top_k": (M.SparseTopKCategoricalAccuracy(k=2), [(Y, L, SW)]),
        "mse": (M.MeanSquaredError(), [(RT, R), (RT[:3], R[:3] * 2, SW[:3])]),
        "mae": (M.MeanAbsoluteError(), [(RT, R, SW)]),
        "rmse": (M.RootMeanSquaredError(), [(RT, R)]),
        "scce_metric": (M.SparseCategoricalCrossentropy(), [(Y, P)]),
        "bce_metric": (M.BinaryCrossentropy(), [(BY[:, None], B)]),
    }


# Recorded from Keras 3.15.1: result() and get_config().
RECORDED = {
    "binary_accuracy": (0.5555555820465088, {"name": "binary_accuracy", "dtype": "float32", "threshold": 0.5}),
    "binary_accuracy_t": (1.0, {"name": "binary_accuracy", "dtype": "float32", "threshold": 0.3}),
    "accuracy": (0.5, {"name": "accuracy", "dtype": "float32"}),
    "categorical_accuracy": (0.2222222238779068, {"name": "categorical_accuracy", "dtype": "float32"}),
    "sparse_categorical_accuracy": (0.2222222238779068, {"name": "sparse_categorical_accuracy", "dtype": "float32"}),
    "top_k": (0.6666666865348816, {"name": "top_k_categorical_accuracy", "dtype": "float32", "k": 2}),
    "sparse_top_k": (0.13333334028720856, {"name": "sparse_top_k_categorical_accuracy", "dtype": "float32",
                                           "k": 2}),
    "mse": (1.6101250648498535, {"name": "mean_squared_error", "dtype": "float32"}),
    "mae": (0.8303791284561157, {"name": "mean_absolute_error", "dtype": "float32"}),
    "rmse": (1.2019683122634888, {"name": "root_mean_squared_error", "dtype": "float32"}),
    "scce_metric": (3.6503164768218994, {"name": "sparse_categorical_crossentropy", "dtype": "float32",
                                         "from_logits": False, "ignore_class": None, "axis": -1}),
    "bce_metric": (0.44210442900657654, {"name": "binary_crossentropy", "dtype": "float32", "from_logits": False,
                                         "label_smoothing": 0}),
}


def run(metric, batches):
    for b in batches:
        metric.update_state(*b[:2], **({"sample_weight": b[2]} if len(b) > 2 else {}))
    return metric.result()


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_results_and_configs_match_keras(name):
    metric, batches = cases()[name]
    result = run(metric, batches)
    assert result.shape == () and result.fmt == mf.float32
    value, config = RECORDED[name]
    assert abs(result.item() - value) <= 1e-6 * max(1, abs(value))
    assert metric.get_config() == config


def test_state_is_keras_total_and_count():
    m = M.SparseCategoricalAccuracy()
    m.update_state(Y, P)
    m.update_state(Y[:, None], L, sample_weight=SW)
    total, count = (v.item() for v in m.variables)
    assert (total, count) == (3.0, 13.5)        # Keras 3.15.1's variables: count 6 + sum(SW)
    m.reset_state()
    assert [v.item() for v in m.variables] == [0.0, 0.0] and m.result().item() == 0.0


def test_mean_and_sum():
    m = M.Mean()
    m.update_state([1, 3, 5, 7], sample_weight=[1, 1, 0, 0])
    assert m.result().item() == 2.0
    m.update_state(R, sample_weight=SW)
    assert m.result().item() == pytest.approx(0.25553813576698303, rel=1e-6)       # Keras 3.15.1
    s = M.Sum()
    s.update_state(R, sample_weight=SW)
    assert s.result().item() == pytest.approx(-4.7171630859375, rel=1e-6)          # Keras 3.15.1 (sums rows)
    assert M.Mean()(np.float32(3)).item() == 3.0                                  # __call__: update, then result


def test_binary_output_accuracy_is_binary_as_keras_compile():
    """The issue's case: a sigmoid output under metrics=["accuracy"]. Keras 3.15.1 evaluates this model
    (Dense(1, sigmoid), these weights, loss binary_crossentropy) to accuracy 0.51, loss 0.9726758."""
    rs = np.random.default_rng(0)
    x = rs.standard_normal((100, 3)).astype(np.float32)
    y = (rs.random(100) > 0.5).astype(np.float32)
    w = np.array([[-0.5903275012969971], [0.8878101110458374], [1.0738579034805298]], np.float32)
    z = x @ w
    pred = (1 / (1 + np.exp(-z.astype(np.float64)))).astype(np.float32)
    metric = M.resolve("accuracy", "binary_crossentropy", (None, 1))
    assert isinstance(metric, M.BinaryAccuracy) and metric.name == "accuracy"
    for i in range(0, 100, 32):                   # evaluate's batches
        metric.update_state(y[i:i + 32], pred[i:i + 32])
    assert metric.result().item() == pytest.approx(0.51, abs=1e-6)
    wrong = M.CategoricalAccuracy()           # what an argmax over one column gives: always "right"
    wrong.update_state(y[:, None], pred)
    assert wrong.result().item() == 1.0


@pytest.mark.parametrize("y_true, y_pred, cls", [
    ((8, 1), (8, 1), M.BinaryAccuracy), ((8,), (8, 1), M.BinaryAccuracy),
    ((8,), (8, 10), M.SparseCategoricalAccuracy), ((8, 1), (8, 10), M.SparseCategoricalAccuracy),
    ((8, 10), (8, 10), M.CategoricalAccuracy), ((8, 5), (8, 5, 10), M.SparseCategoricalAccuracy),
])
def test_resolve_accuracy_by_shapes_as_keras(y_true, y_pred, cls):
    for ident in ("accuracy", "acc", "Accuracy"):
        m = M.resolve(ident, y_true=np.zeros(y_true), y_pred=np.zeros(y_pred))
        assert type(m) is cls and m.name == ident


def test_resolve_without_y_true_uses_the_loss():
    assert type(M.resolve("acc", "sparse_categorical_crossentropy", (None, 10))) is M.SparseCategoricalAccuracy
    from minifp.keras import losses
    assert type(M.resolve("acc", losses.SparseCategoricalCrossentropy(from_logits=True), (None, 10))) is \
        M.SparseCategoricalAccuracy
    assert type(M.resolve("acc", "categorical_crossentropy", (None, 10))) is M.CategoricalAccuracy
    assert type(M.resolve("accuracy", "mse", (None, 1))) is M.BinaryAccuracy
    with pytest.raises(ValueError, match="output_shape"):
        M.resolve("accuracy")


def test_resolve_other_identifiers():
    m = M.resolve("mse")
    assert type(m) is M.MeanSquaredError and m.name == "mse"       # compile names it by the string
    m = M.resolve(M.mean_absolute_error)
    assert type(m) is M.MeanMetricWrapper and m.name == "mean_absolute_error"
    m.update_state(RT, R, sample_weight=SW)
    assert m.result().item() == pytest.approx(0.8303791284561157, rel=1e-6)
    inst = M.BinaryAccuracy(threshold=0.7)
    assert M.resolve(inst) is inst and inst.name == "binary_accuracy"
    with pytest.raises(ValueError, match="Expected metric, received `None`"):
        M.resolve(None)


def test_get():
    assert type(M.get("accuracy")) is M.Accuracy
    assert type(M.get("mse")) is M.MeanSquaredError and type(M.get("MAE")) is M.MeanAbsoluteError
    assert type(M.get("sparse_categorical_accuracy")) is M.SparseCategoricalAccuracy
    assert type(M.get("BinaryAccuracy")) is M.BinaryAccuracy
    assert M.get({"class_name": "BinaryAccuracy", "config": {"threshold": 0.2}}).threshold == 0.2
    assert M.get(None) is None and M.get(M.binary_accuracy) is M.binary_accuracy
    with pytest.raises(ValueError, match=r"Could not interpret metric identifier: acuracy\. Valid names:.*"
                                         r"binary_accuracy.*sparse_categorical_accuracy"):
        M.get("acuracy")
    with pytest.raises(TypeError, match="unexpected keyword"):
        M.BinaryAccuracy(treshold=0.5)


def test_float16_predictions_and_tensor_inputs():
    p16 = mf.tensor(P, "float16")
    m = M.SparseCategoricalAccuracy()
    m.update_state(mf.tensor(Y), p16)
    assert m.result().fmt == mf.float32
    assert m.result().item() == pytest.approx(np.mean(np.argmax(P, -1) == Y), abs=1e-7)
    v = mf.tensor(R, requires_grad=True)
    m = M.MeanSquaredError()
    m.update_state(RT, v)                   # no graph is recorded for metrics
    assert m.result().item() == pytest.approx(float(np.mean((RT - R) ** 2)), rel=1e-6)


def test_functions_per_sample():
    # (N,) labels against (N, 1) outputs: Keras expands the labels, the values keep shape (N, 1).
    np.testing.assert_array_equal(M.binary_accuracy(BY, B).float32(), (B > 0.5) == BY[:, None])
    np.testing.assert_array_equal(M.sparse_categorical_accuracy(Y[:, None], P).float32(), np.argmax(P, -1) == Y)
    np.testing.assert_array_equal(M.categorical_accuracy(OH, P).float32(), np.argmax(P, -1) == Y)
    # in_top_k: ties at the boundary count as in (row 0 of P: 1 then three 0s, k=2 takes every class)
    assert M.top_k_categorical_accuracy(np.eye(4)[[3]], P[:1], k=2).item() == 1.0


# -- the fixtures recorded from Keras 3.15.1 by tools/record_keras.py (branch keras-fixtures) --------------------

FIXTURE = pathlib.Path(__file__).parents[1] / "fixtures" / "keras" / "metrics.json"


def _fixture(face="keras3"):
    data = json.loads(FIXTURE.read_text())
    x = {k: np.asarray(v, np.int64 if k == "sparse_true" else np.float32) for k, v in data["inputs"].items()}
    return data["faces"][face], x


def _within(got, expected):
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("recorded", ["keras3", "tf_keras"])
def test_fixture_losses(recorded):
    """The values of Keras 3 and of tf.keras (through minifp.tf, the same losses); names are Keras 3's (tf.keras
    calls the reduction "auto")."""
    import minifp.tf as tf
    from minifp import keras
    K = (tf.keras if recorded == "tf_keras" else keras).losses
    face, x = _fixture(recorded)
    for case in face["losses"]:
        loss = getattr(K, case["class"])(**case["kwargs"])
        rec = case["result"]
        _within(loss(x[case["y_true"]], x[case["y_pred"]]).float32(), rec["value"])
        _within(loss(x[case["y_true"]], x[case["y_pred"]], sample_weight=x[case["sample_weight"]]).float32(),
                rec["weighted"])
        if recorded == "keras3":
            assert (loss.name, str(loss.reduction)) == (rec["name"], rec["reduction"])
    for case in face["loss_functions"]:
        _within(K.get(case["name"])(x[case["y_true"]], x[case["y_pred"]]).float32(), case["result"])


@pytest.mark.parametrize("recorded", ["keras3", "tf_keras"])
def test_fixture_metrics(recorded):
    face, x = _fixture(recorded)
    for case in face["metrics"]:
        rec = case["result"]
        if case["class"] == "Mean":
            m = M.Mean()
            m.update_state([1.0, 2.0, 4.0])
            _within(m.result().float32(), rec["after_one"])
            m.update_state(np.array([3.0, 5.0], np.float32), sample_weight=np.array([0.5, 2.0], np.float32))
            _within(m.result().float32(), rec["after_two"])
            continue
        yt, yp, sw = x[case["y_true"]], x[case["y_pred"]], x[case["sample_weight"]]
        m = getattr(M, case["class"])(**case["kwargs"])
        m.update_state(yt, yp)
        _within(m.result().float32(), rec["after_one"])
        m.update_state(yt, yp, sample_weight=sw)
        _within(m.result().float32(), rec["after_two_second_weighted"])
        m.reset_state()
        m.update_state(yt, yp, sample_weight=sw)
        _within(m.result().float32(), rec["weighted_only"])
        assert m.name == rec["name"]
    for name, rec in face["metrics_get"].items() if recorded == "keras3" else ():    # tf.keras's get gives functions
        if rec["error"]:
            with pytest.raises(ValueError, match=rec["error"]["message"]):
                M.get(name)
        else:
            assert type(M.get(name)).__name__ == rec["result"]


def _wave(shape, k, scale=0.1, freq=0.37, offset=0.0):
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (offset + scale * np.sin(freq * i + k)).astype(np.float32).reshape(shape)


def test_fixture_compile_accuracy_choice():
    """compile(metrics=["accuracy"]) on Dense(units, activation): resolve picks the class whose value Keras's
    evaluate reported, and that class on these predictions gives it."""
    face, _ = _fixture()
    rec = face["compile_accuracy"]
    x = np.asarray(rec["x"], np.float32)
    for case in rec["cases"]:
        units, act = case["units"], case["activation"]
        y = np.asarray(rec["y"][case["y"]], np.int64 if case["y"] == "sparse" else np.float32)
        z = (x @ _wave((3, units), 1.0, scale=0.8) + _wave((units,), 2.0, scale=0.3)).astype(np.float64)
        pred = 1 / (1 + np.exp(-z)) if act == "sigmoid" else np.exp(z) / np.exp(z).sum(-1, keepdims=True)
        metric = M.resolve(case["metric"], case["loss"], (None, units), y_true=y)
        evaluated = case["result"]["evaluate"][case["metric"]]
        assert metric.name == case["metric"]
        assert case["result"]["candidates"][type(metric).__name__] == evaluated
        metric.update_state(y, pred.astype(np.float32))
        _within(metric.result().float32(), evaluated)
        # Without y_true, the loss decides (what a trainer knows before the first batch).
        assert type(M.resolve(case["metric"], case["loss"], (None, units))) is type(metric)


class FaceTensor(mf.Tensor):
    """A face's Tensor subclass: it can carry the _keras_mask that ignore_class sets."""


def test_ignore_class_masks_only_given_weights_as_keras():
    yi = np.array([1, 2, 0, 3, 9, 1])
    pn = FaceTensor._wrap((P / P.sum(-1, keepdims=True)).astype(np.float32), mf.float32)
    expected = {None: 3.329435110092163, "sw": 2.455178737640381}      # Keras 3.15.1
    for key, sw in ((None, None), ("sw", SW)):
        m = M.SparseCategoricalCrossentropy(ignore_class=9)
        m.update_state(yi, pn, sample_weight=sw)
        assert m.result().item() == pytest.approx(expected[key], rel=1e-6)

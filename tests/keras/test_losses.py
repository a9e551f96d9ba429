"""keras.losses against Keras 3.15.1 (TensorFlow 2.21 backend): values and gradients recorded from it, float64
finite differences, reductions, the logits behind softmax outputs, get/resolve and bad input."""
import math

import numpy as np
import pytest

import minifp as mf
from minifp.keras import losses as K
from minifp.keras._tensor import Tensor as KerasTensor

# The inputs of the recorded cases (NumPy's PCG64 streams are stable across versions).
rng = np.random.default_rng(7)
P = rng.random((6, 4)).astype(np.float32)
P[0] = [0, 1, 0, 0]
P[1, 2] = 0
PN = P / P.sum(-1, keepdims=True)
Y = np.array([1, 2, 0, 3, 3, 1])
OH = np.eye(4, dtype=np.float32)[Y]
L = (rng.standard_normal((6, 4)) * 3).astype(np.float32)
L[0] = [30, 0, -30, 1]
SW = np.array([1, 0.5, 0, 2, 1, 3], np.float32)
B = rng.random((6, 1)).astype(np.float32)
B[0, 0], B[1, 0] = 1.0, 0.0
BY = np.array([1, 0, 1, 0, 1, 1], np.float32)
BL = (rng.standard_normal((6, 1)) * 4).astype(np.float32)
R = rng.standard_normal((6, 3)).astype(np.float32)
RT = rng.standard_normal((6, 3)).astype(np.float32)
YI = np.array([1, 2, 0, 3, 9, 1])


class FaceTensor(mf.Tensor):
    """A face's Tensor subclass (has a __dict__, so it can carry _keras_logits as Keras's tensors do)."""


def cases():
    return {
        "scce": (K.SparseCategoricalCrossentropy(), Y, P, {}),
        "scce_sw": (K.SparseCategoricalCrossentropy(), Y, P, {"sample_weight": SW}),
        "scce_sum": (K.SparseCategoricalCrossentropy(reduction="sum"), Y, P, {}),
        "scce_none": (K.SparseCategoricalCrossentropy(reduction=None), Y[:, None], P, {}),
        "scce_mws": (K.SparseCategoricalCrossentropy(reduction="mean_with_sample_weight"), Y, P, {"sample_weight": SW}),
        "scce_logits": (K.SparseCategoricalCrossentropy(from_logits=True), Y, L, {}),
        "scce_ignore": (K.SparseCategoricalCrossentropy(ignore_class=9), YI, PN, {}),
        "cce": (K.CategoricalCrossentropy(), OH, P, {}),
        "cce_ls": (K.CategoricalCrossentropy(label_smoothing=0.1), OH, P, {}),
        "cce_logits": (K.CategoricalCrossentropy(from_logits=True), OH, L, {"sample_weight": SW}),
        "bce": (K.BinaryCrossentropy(), BY, B, {}),
        "bce_ls": (K.BinaryCrossentropy(label_smoothing=0.2), BY[:, None], B, {}),
        "bce_logits": (K.BinaryCrossentropy(from_logits=True), BY, BL, {"sample_weight": SW}),
        "bce_multi": (K.BinaryCrossentropy(), (P > 0.5).astype(np.float32), P, {}),
        "mse": (K.MeanSquaredError(), RT, R, {}),
        "mse_sw": (K.MeanSquaredError(reduction="sum"), RT, R, {"sample_weight": SW[:, None]}),
        "mae": (K.MeanAbsoluteError(), RT, R, {}),
        "huber": (K.Huber(delta=0.5), RT, R, {}),
        "huber1": (K.Huber(), RT, R * 2, {"sample_weight": SW}),
    }


# Recorded from Keras 3.15.1 on TensorFlow 2.21 (float32).
LOSS_VALUES = {
    "scce": 3.6503165, "scce_sw": 2.9231071, "scce_sum": 21.9019,
    "scce_none": [3.576278118089249e-07, 16.808713912963867, 0.8400850892066956, 1.1556702852249146,
                  1.2346712350845337, 1.8627581596374512],
    "scce_mws": 2.3384857, "scce_logits": 9.136224, "scce_ignore": 3.995322, "cce": 3.5352135, "cce_ls": 3.566797,
    "cce_logits": 11.153134, "bce": 0.44210443, "bce_ls": 1.0092067, "bce_logits": 2.7192485,
    "bce_multi": 0.25281456, "mse": 1.4447279, "mse_sw": 8.941648, "mae": 0.97263914, "huber": 0.36851227,
    "huber1": 1.0932384,
}
GRADS = {
    "scce": [0.0, 0.0, 0.0, 0.0, 0.08354435116052628, 0.08354435116052628, 0.0, 0.08354435116052628,
             -0.11883662641048431, 0.09026268869638443, 0.09026268869638443, 0.09026268869638443,
             0.09480516612529755, 0.09480515122413635, 0.09480515867471695, -0.20631039142608643,
             0.04902968183159828, 0.04902968555688858, 0.04902968928217888, -0.11949750781059265,
             0.16149833798408508, -0.8787897229194641, 0.16149835288524628, 0.1614983230829239],
    "cce": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.11883661895990372, 0.09026270359754562, 0.09026270359754562,
            0.09026270359754562, 0.09480515867471695, 0.09480515867471695, 0.09480515867471695, -0.2063104212284088,
            0.04902967810630798, 0.04902967810630798, 0.04902967810630798, -0.11949750781059265,
            0.16149836778640747, -0.8787897229194641, 0.16149836778640747, 0.16149836778640747],
    "bce": [0.0, 0.0, -0.2786210775375366, 0.17716392874717712, -0.42996129393577576, -0.5159378051757812],
    "scce_ignore": [0.0, 0.0, 0.0, 0.0, 0.19999998807907104, 0.19999998807907104, 0.0, 0.20000000298023224,
                    -0.26331284642219543, 0.19999998807907104, 0.20000001788139343, 0.20000000298023224,
                    0.20000001788139343, 0.20000001788139343, 0.20000001788139343, -0.43523040413856506, 0.0, 0.0,
                    0.0, 0.0, 0.20000001788139343, -1.088295817375183, 0.20000001788139343, 0.20000003278255463],
}
FUNCTIONS = {
    "sparse_categorical_crossentropy": (lambda: K.sparse_categorical_crossentropy(Y, P), [
        3.576278118089249e-07, 16.808713912963867, 0.8400850892066956, 1.1556702852249146, 1.2346712350845337,
        1.8627581596374512]),
    "categorical_crossentropy": (lambda: K.categorical_crossentropy(OH, P), [
        1.1920930376163597e-07, 16.11809539794922, 0.8400850892066956, 1.1556702852249146, 1.2346712350845337,
        1.8627580404281616]),
    "binary_crossentropy": (lambda: K.binary_crossentropy(BY[:, None], B), [
        1.1920928955078125e-07, 1.1920928955078125e-07, 0.5138567686080933, 0.06107962131500244,
        0.9476993680000305, 1.1299904584884644]),
    "mean_squared_error": (lambda: K.mse(RT, R), [
        1.4871279001235962, 0.551568865776062, 2.675689935684204, 2.463850736618042, 1.1096771955490112,
        0.38045212626457214]),
    "mean_absolute_error": (lambda: K.mae(RT, R), [
        0.9984881281852722, 0.6302767992019653, 1.5557812452316284, 1.171931266784668, 0.9338595867156982,
        0.5454981923103333]),
    "huber": (lambda: K.huber(RT, R), [
        0.581256091594696, 0.275784432888031, 1.0557812452316284, 0.7806424498558044, 0.49546006321907043,
        0.19022606313228607]),
    # The functions keep y_pred's format: float16 computes in float16 (1 - 1e-7 rounds to 1, so log(0) * 0).
    "scce_f16": (lambda: K.sparse_categorical_crossentropy(Y, mf.tensor(P, "float16")), [
        3.5762786865234375e-07, 16.640625, 0.83984375, 1.1552734375, 1.234375, 1.86328125]),
    "bce_f16": (lambda: K.binary_crossentropy(BY[:, None], mf.tensor(B, "float16")), [
        math.nan, -0.0, 0.51416015625, 0.0609130859375, 0.94775390625, 1.1298828125]),
}


def close(got, expected, rtol=1e-6):
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-7)


def value_and_grad(loss, y_true, y_pred, **kw):
    v = mf.tensor(y_pred, requires_grad=True)
    out = loss(y_true, v, **kw)
    out.backward(None if out.ndim == 0 else np.ones(out.shape, np.float32))
    return out, v.grad.float32()


@pytest.mark.parametrize("name", sorted(LOSS_VALUES))
def test_loss_values_match_keras(name):
    loss, y_true, y_pred, kw = cases()[name]
    out, _ = value_and_grad(loss, y_true, y_pred, **kw)
    assert out.fmt == mf.float32
    close(out.float32(), LOSS_VALUES[name])


@pytest.mark.parametrize("name", sorted(GRADS))
def test_loss_gradients_match_keras(name):
    loss, y_true, y_pred, kw = cases()[name]
    _, grad = value_and_grad(loss, y_true, y_pred, **kw)
    # Clipping passes no gradient outside [1e-7, 1 - 1e-7] (row 0 here); elsewhere within float32 rounding.
    np.testing.assert_allclose(grad.reshape(-1), GRADS[name], rtol=2e-6, atol=3e-7)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_functions_give_per_sample_values_as_keras(name):
    fn, expected = FUNCTIONS[name]
    got = fn().float32()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    ok = ~np.isnan(expected)
    close(got[ok], np.asarray(expected)[ok], rtol=1e-6)


def test_keras_doc_examples():
    assert K.MeanSquaredError()([1.0, 0.0, 1.0], [0.9, 0.1, 0.8]).item() == pytest.approx(0.02, abs=1e-7)
    assert K.huber([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]]).float32().mean() == pytest.approx(0.155, abs=1e-7)
    close(K.binary_crossentropy([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]]).float32(), [0.9162907, 0.7135582])


# -- float64 finite differences ------------------------------------------------------------------------------

def _clip64(p):
    return np.clip(p, 1e-7, 1 - 1e-7)


REF64 = {   # per-sample float64 formulas of Keras's losses, reduced by the mean (sum_over_batch_size)
    "scce": (lambda t, p: -np.log(_clip64(p)[np.arange(len(t)), t]) + np.log(_clip64(p).sum(-1)),
             K.SparseCategoricalCrossentropy(), Y, PN * 0.9 + 0.02),     # inside the clip range
    "scce_logits": (lambda t, x: -(x - x.max(-1, keepdims=True))[np.arange(len(t)), t]
                    + np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1)),
                    K.SparseCategoricalCrossentropy(from_logits=True), Y, L / 3),
    "cce": (lambda t, p: -(t * np.log(_clip64(p / p.sum(-1, keepdims=True)))).sum(-1),
            K.CategoricalCrossentropy(), OH, PN * 0.9 + 0.02),
    "cce_logits": (lambda t, x: -(t * (x - np.log(np.exp(x).sum(-1, keepdims=True)))).sum(-1),
                   K.CategoricalCrossentropy(from_logits=True), OH, L / 3),
    "bce": (lambda t, p: -(t * np.log(p) + (1 - t) * np.log(1 - p)).mean(-1),
            K.BinaryCrossentropy(), BY[:, None], np.clip(B, 0.05, 0.95)),
    "bce_logits": (lambda t, x: (np.maximum(x, 0) - x * t + np.log1p(np.exp(-abs(x)))).mean(-1),
                   K.BinaryCrossentropy(from_logits=True), BY[:, None], BL),
    "mse": (lambda t, p: ((t - p) ** 2).mean(-1), K.MeanSquaredError(), RT, R),
    "mae": (lambda t, p: abs(t - p).mean(-1), K.MeanAbsoluteError(), RT, R),
    "huber": (lambda t, p: np.where(abs(p - t) <= 0.5, 0.5 * (p - t) ** 2, 0.5 * abs(p - t) - 0.125).mean(-1),
              K.Huber(delta=0.5), RT, R),
}


@pytest.mark.parametrize("name", sorted(REF64))
def test_gradients_match_float64_finite_differences(name):
    ref, loss, y_true, y_pred = REF64[name]
    t = np.asarray(y_true, np.float64)
    t = t.astype(np.int64) if name.startswith("scce") else t
    x = np.asarray(y_pred, np.float64)
    f = lambda z: ref(t, z).mean()
    out, grad = value_and_grad(loss, y_true, x.astype(np.float32))
    assert out.item() == pytest.approx(f(x.astype(np.float32).astype(np.float64)), rel=2e-6)
    h, numeric = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        numeric[i] = (f(x + e) - f(x - e)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=2e-6)


# -- softmax / sigmoid outputs -------------------------------------------------------------------------------

def _face(a):
    return FaceTensor._wrap(np.asarray(a, np.float32), mf.float32)


def test_softmax_output_is_scored_from_its_logits_as_keras_tensorflow_backend():
    logits = _face(L)
    s = mf.apply("softmax", logits)
    s._keras_logits = logits
    # Keras 3.15.1: 9.136224 from the logits (row 0's clipped probability would give only 16.1 of its 60).
    assert K.SparseCategoricalCrossentropy()(Y, s).item() == pytest.approx(9.136224, rel=1e-6)
    assert K.CategoricalCrossentropy()(OH, s).item() == pytest.approx(9.136224, rel=1e-6)
    assert K.SparseCategoricalCrossentropy()(Y, s.numpy()).item() == pytest.approx(6.822572, rel=1e-6)
    # A float16 softmax is cast to float32 by the Loss: a new tensor, without the logits.
    l16 = logits.astype(mf.float16)
    s16 = mf.apply("softmax", l16)
    s16._keras_logits = l16
    assert K.SparseCategoricalCrossentropy()(Y, s16).item() == pytest.approx(6.822727, rel=1e-6)


def test_sigmoid_output_gradient_flows_to_logits():
    logits = FaceTensor._wrap(BL.copy(), mf.float32, requires_grad=True)
    s = mf.apply("sigmoid", logits)
    s._keras_logits = logits
    out = K.BinaryCrossentropy()(BY, s)
    assert out.item() == pytest.approx(1.7127982, rel=1e-6)
    out.backward()
    sig = 1 / (1 + np.exp(-BL[:, 0].astype(np.float64)))
    np.testing.assert_allclose(logits.grad.float32()[:, 0], (sig - BY) / 6, rtol=1e-5, atol=1e-7)


# -- reductions, classes, dtypes -----------------------------------------------------------------------------

def test_reductions():
    per = K.mse(RT, R).float32()
    assert K.MeanSquaredError(reduction="sum")(RT, R).item() == pytest.approx(per.sum(dtype=np.float32), rel=1e-6)
    for r in ("sum_over_batch_size", "mean"):
        assert K.MeanSquaredError(reduction=r)(RT, R).item() == pytest.approx(per.mean(), rel=1e-6)
    for r in (None, "none"):
        close(K.MeanSquaredError(reduction=r)(RT, R, sample_weight=SW).float32(), per * SW)
    got = K.MeanSquaredError(reduction="mean_with_sample_weight")(RT, R, sample_weight=SW).item()
    assert got == pytest.approx((per * SW).sum() / SW.sum(), rel=1e-6)
    # sum_over_batch_size divides by the count of values, not by the weights (Keras's rule).
    got = K.MeanSquaredError()(RT, R, sample_weight=SW).item()
    assert got == pytest.approx((per * SW).sum() / 6, rel=1e-6)
    assert K.MeanSquaredError(reduction="mean_with_sample_weight")(RT, R, sample_weight=np.zeros(6)).item() == 0.0
    assert K.MeanSquaredError()(np.zeros((0, 3)), np.zeros((0, 3))).shape == (0,)


def test_bad_reduction_names_the_choices():
    with pytest.raises(ValueError, match=r"Invalid value for argument `reduction`.*'sum_over_batch_size'.*"
                                         r"Received: reduction=avg"):
        K.MeanSquaredError(reduction="avg")


def test_result_is_float32_0d_of_y_preds_class():
    pred = FaceTensor._wrap(PN.astype(np.float32), mf.float32).astype(mf.float16)
    out = K.SparseCategoricalCrossentropy()(Y, pred)
    assert type(out) is FaceTensor and out.shape == () and out.fmt == mf.float32
    out = K.SparseCategoricalCrossentropy()(mf.tensor(Y), pred)    # labels of another class join y_pred's
    assert type(out) is FaceTensor
    assert type(K.mse(RT, R)) in (mf.Tensor, KerasTensor)    # numpy inputs: the face's tensors
    # The Loss casts to float32 first; the function keeps float16.
    assert K.sparse_categorical_crossentropy(Y, pred).fmt == mf.float16
    assert K.SparseCategoricalCrossentropy(dtype="float16")(Y, pred).fmt == mf.float16


def test_sequence_labels_and_label_shapes():
    p3 = np.stack([PN, PN[::-1]], 1)                 # (6, 2, 4)
    y2 = np.stack([Y, Y[::-1]], 1)                   # (6, 2)
    per = K.sparse_categorical_crossentropy(y2, p3).float32()
    assert per.shape == (6, 2)
    close(K.SparseCategoricalCrossentropy()(y2, p3).float32(), per.mean())
    # (N,) labels against (N, 1) outputs: Keras expands y_true.
    close(K.BinaryCrossentropy()(BY, B).float32(), K.BinaryCrossentropy()(BY[:, None], B).float32())


def test_configs_and_names():
    assert K.SparseCategoricalCrossentropy(from_logits=True).get_config() == {
        "name": "sparse_categorical_crossentropy", "reduction": "sum_over_batch_size", "from_logits": True,
        "ignore_class": None, "axis": -1}
    assert K.BinaryCrossentropy().get_config() == {"name": "binary_crossentropy",
                                                   "reduction": "sum_over_batch_size", "from_logits": False,
                                                   "label_smoothing": 0.0, "axis": -1}
    assert K.Huber().get_config() == {"name": "huber_loss", "reduction": "sum_over_batch_size", "delta": 1.0}
    assert K.MeanAbsoluteError().get_config() == {"name": "mean_absolute_error", "reduction": "sum_over_batch_size"}
    assert K.MeanSquaredError().dtype == "float32"


# -- lookup --------------------------------------------------------------------------------------------------

def test_get():
    assert K.get("categorical_crossentropy") is K.categorical_crossentropy     # Keras: the function
    assert K.get("mse") is K.mean_squared_error and K.get("MAE") is K.mean_absolute_error
    assert isinstance(K.get("CategoricalCrossentropy"), K.CategoricalCrossentropy)
    assert K.get({"class_name": "CategoricalCrossentropy", "config": {"from_logits": True}}).from_logits is True
    loss = K.Huber()
    assert K.get(loss) is loss and K.get(None) is None
    fn = lambda y, p: p       # noqa: E731
    assert K.get(fn) is fn
    with pytest.raises(ValueError, match=r"Could not interpret loss identifier: cross_entropy_loss\. Valid names:.*"
                                         r"sparse_categorical_crossentropy"):
        K.get("cross_entropy_loss")
    with pytest.raises(ValueError, match="Could not interpret loss identifier: 3"):
        K.get(3)


def test_resolve_as_compile():
    loss = K.resolve("sparse_categorical_crossentropy")
    assert isinstance(loss, K.LossFunctionWrapper) and loss.name == "sparse_categorical_crossentropy"
    assert loss(Y, P).item() == pytest.approx(LOSS_VALUES["scce"], rel=1e-6)
    assert K.resolve(None) is None
    inst = K.BinaryCrossentropy()
    assert K.resolve(inst) is inst
    assert K.resolve("ce", np.zeros((4, 1)), np.zeros((4, 1))).fn is K.binary_crossentropy
    assert K.resolve("crossentropy", np.zeros(4), (None, 3)).fn is K.sparse_categorical_crossentropy
    assert K.resolve("CE", np.zeros((4, 1)), (None, 3)).fn is K.sparse_categorical_crossentropy
    assert K.resolve("ce", np.zeros((4, 3)), (None, 3)).fn is K.categorical_crossentropy


def test_bad_labels_and_shapes():
    with pytest.raises(ValueError, match=r"label value of 4 which is outside the valid range of \[0, 4\)"):
        K.sparse_categorical_crossentropy([1, 4, 0, 0, 0, 0], P)
    with pytest.raises(ValueError, match=r"must have the same shape. Received: target.shape=\(6, 3\)"):
        K.categorical_crossentropy(OH[:, :3], P)
    with pytest.raises(ValueError, match=r"rank \(ndim\) `target.ndim - 1`"):
        K.sparse_categorical_crossentropy(OH, P)
    with pytest.raises(ValueError, match="`axis` must be of type `int`"):
        K.categorical_crossentropy(OH, P, axis=True)


def test_unknown_names_start_with_keras_recorded_text():
    import json
    import pathlib
    from minifp.keras import metrics as M
    path = pathlib.Path(__file__).parents[1] / "fixtures" / "keras" / "errors.json"
    face = json.loads(path.read_text())["faces"]["keras3"]
    for key, get, name in (("losses_get_unknown", K.get, "foo_loss"), ("metrics_get_unknown", M.get, "foo_metric")):
        with pytest.raises(ValueError) as info:
            get(name)
        assert str(info.value).startswith(face[key]["error"]["message"] + ". Valid names: ")

"""Layers, losses, models and training on the digits: the TensorFlow guide's workflow."""
import gzip
import struct

import numpy as np
import pytest

import minifp as mf
from minifp import cli, nn
from minifp.amp import autocast
from minifp.losses import (binary_cross_entropy_with_logits, categorical_crossentropy, cross_entropy,
                           mean_squared_error, sparse_categorical_crossentropy)
from minifp.mixed_precision import LossScaleOptimizer, set_global_policy
from minifp.models import digits_cnn, digits_mlp
from minifp.testing import check_grads


@pytest.fixture
def digits():
    return mf.datasets.load_digits()


@pytest.fixture(autouse=True)
def reset_policy():
    yield
    set_global_policy("float32")


def test_the_guides_model_under_mixed_float16():
    set_global_policy("mixed_float16")
    dense1, dense2, dense3 = nn.Dense(64, activation="relu"), nn.Dense(64, activation="relu"), nn.Dense(10)
    softmax = nn.Activation("softmax", dtype="float32")
    model = nn.Sequential(dense1, dense2, dense3, softmax)
    out = model(np.random.default_rng(0).standard_normal((5, 784)))
    for layer in (dense1, dense2, dense3):
        assert layer.policy.name == "mixed_float16"
        assert layer.kernel.dtype == mf.float32
    assert dense1.output_shape == (5, 64)
    assert dense1(mf.tensor(np.ones((2, 784)))).dtype == mf.float16
    assert out.dtype == mf.float32 and softmax.policy.name == "float32"
    assert isinstance(model.optimizer, type(None))
    model.compile("adam", "sparse_categorical_crossentropy")
    assert isinstance(model.optimizer, LossScaleOptimizer)


def test_compare_reaches_95_percent_under_every_policy():
    rows = [cli.train(p, verbose=0) for p in cli.COMPARED]
    accuracies = [r["accuracy"] for r in rows]
    assert min(accuracies) >= 0.95, accuracies
    assert max(accuracies) - min(accuracies) <= 0.015
    assert rows[1]["loss_scale"] is not None and rows[0]["loss_scale"] is None
    table = cli.report_table(rows)
    assert "mixed_float16" in table and "mixed_bfloat16" in table


def test_cnn_under_mixed_float16(digits):
    assert cli.train("mixed_float16", model="cnn", verbose=0)["accuracy"] >= 0.95


def test_custom_loop_matches_fit(digits):
    (x, y), (xt, yt) = digits
    mf.manual_seed(0)
    model = digits_mlp("mixed_float16")
    opt = LossScaleOptimizer(mf.optim.Adam(lr=1e-3))
    order_rng = np.random.default_rng(1)
    for _ in range(20):
        order = order_rng.permutation(len(x))
        for b in range(0, len(x), 32):
            idx = order[b:b + 32]
            with autocast(mf.float16):            # harmless beside the policy: layers already cast
                probs = model(x[idx])
                loss = sparse_categorical_crossentropy(y[idx], probs)
            params = model.parameters()
            for p in params:
                p.grad = None
            opt.get_scaled_loss(loss).backward()
            grads = opt.get_unscaled_gradients([p.grad for p in params])
            opt.apply_gradients(zip(grads, params))
    custom = float(np.mean(model.predict(xt).argmax(-1) == yt))
    fitted = cli.train("mixed_float16", verbose=0)["accuracy"]
    assert custom >= 0.95 and abs(custom - fitted) <= 0.015


# -- gradients of every layer -----------------------------------------------------------------


LAYERS = [
    (lambda: nn.Linear(5, 3), (4, 5)),
    (lambda: nn.Dense(3, activation="tanh"), (4, 5)),
    (lambda: nn.Conv2d(2, 3, 3, stride=1, padding=1), (2, 2, 4, 4)),
    (lambda: nn.MaxPool2d(2), (2, 2, 4, 4)),
    (lambda: nn.AvgPool2d(2), (2, 2, 4, 4)),
    (lambda: nn.GlobalAvgPool2d(), (2, 3, 4, 4)),
    (lambda: nn.BatchNorm1d(4), (6, 4)),
    (lambda: nn.BatchNorm2d(3), (4, 3, 2, 2)),
    (lambda: nn.LayerNorm(5), (3, 5)),
    (lambda: nn.Flatten(), (2, 3, 4)),
    (lambda: nn.Reshape((4, 3)), (2, 12)),
    (lambda: nn.Activation("sigmoid"), (3, 4)),
    (lambda: nn.ReLU(), (3, 4)),
    (lambda: nn.Softmax(), (3, 4)),
    (lambda: nn.Dropout(0.0), (3, 4)),
]


@pytest.mark.parametrize("make, shape", LAYERS, ids=lambda v: v().__class__.__name__ if callable(v) else "")
def test_layer_gradients(make, shape):
    mf.manual_seed(0)
    layer = make()
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    layer(mf.tensor(x))                               # build lazy layers
    check_grads(layer, x, params=layer.parameters())


def test_dropout_trains_and_evaluates():
    layer = nn.Dropout(0.5)
    y = layer(mf.tensor(np.ones((200, 50))))
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.5) < 0.02 and np.all(y.numpy()[kept] == 2.0)
    assert np.all(layer.eval()(mf.tensor(np.ones((3, 3)))).numpy() == 1.0)


def test_batchnorm_statistics_in_float32_and_running_stats():
    set_global_policy("mixed_float16")
    bn = nn.BatchNorm1d(3)
    x = np.random.default_rng(0).standard_normal((64, 3)) * 300 + 1000     # float16 variance would overflow
    y = bn(mf.tensor(x))
    assert y.dtype == mf.float16 and np.isfinite(y.float32()).all()
    np.testing.assert_allclose(y.float32().mean(axis=0), 0, atol=2e-2)
    assert bn.running_mean.dtype == mf.float32
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mf.tensor(x, dtype="float16").float32().mean(0),
                               rtol=1e-3)


# -- weights and checkpoints ------------------------------------------------------------------


def test_weights_round_trip_bit_for_bit(digits, tmp_path):
    (x, y), (xt, _) = digits
    mf.manual_seed(0)
    model = digits_cnn("mixed_bfloat16")
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(x[:128], y[:128], epochs=1, verbose=0)
    expected = model.predict(xt)
    mf.manual_seed(5)
    other = digits_cnn("mixed_bfloat16")
    other(xt[:1])
    assert not np.array_equal(other.predict(xt), expected)
    other.load_state_dict(model.state_dict())
    assert np.array_equal(other.predict(xt), expected)
    third = digits_cnn("mixed_bfloat16")
    third(xt[:1])
    third.set_weights(model.get_weights())
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(third.get_weights(), model.get_weights()))
    assert np.array_equal(third.predict(xt), expected)
    model.save_weights(tmp_path / "w.npz")
    fourth = digits_cnn("mixed_bfloat16")
    fourth(xt[:1])
    fourth.load_weights(tmp_path / "w.npz")
    assert np.array_equal(fourth.predict(xt), expected)


def test_half_weights_are_stored_in_their_format(tmp_path):
    model = nn.Sequential(nn.Dense(4, dtype="bfloat16"))
    model(np.ones((1, 3)))
    model.save_weights(tmp_path / "h.npz")
    before = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in before])
    model.load_weights(tmp_path / "h.npz")
    assert all(np.array_equal(a, b) and str(a.dtype) == "bfloat16" for a, b in zip(model.get_weights(), before))


def test_bad_state_is_refused_whole():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    before = model.get_weights()
    bad = model.state_dict()
    bad["1.kernel"] = np.zeros((5, 5), np.float32)
    with pytest.raises(ValueError, match=r"'1.kernel' has shape \(5, 5\)"):
        model.load_state_dict(bad)
    with pytest.raises(ValueError, match=r"weight 2 \(1.kernel\) has shape \(2, 1\), got \(3,\)"):
        model.set_weights(before[:2] + [np.zeros(3)] + before[3:])
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), before))
    with pytest.raises(KeyError, match=r"missing \['0.bias'\]"):
        model.load_state_dict({k: v for k, v in model.state_dict().items() if k != "0.bias"})


# -- losses ------------------------------------------------------------------------------------


def test_losses_in_float32_and_against_numpy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    labels = np.array([0, 1, 2, 3, 0, 1])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    expected = -logp[np.arange(6), labels].mean()
    for value in (cross_entropy(logits, labels), sparse_categorical_crossentropy(labels, logits, from_logits=True),
                  categorical_crossentropy(np.eye(4)[labels], logits, from_logits=True),
                  sparse_categorical_crossentropy(labels, np.exp(logp))):
        assert value.dtype == mf.float32
        np.testing.assert_allclose(value.item(), expected, rtol=1e-5)
    half = mf.tensor(logits, dtype="float16")
    assert cross_entropy(half, labels).dtype == mf.float32
    np.testing.assert_allclose(mean_squared_error(np.ones(3), np.array([1.0, 2.0, 4.0])).item(), 10 / 3, rtol=1e-6)
    x, t = rng.standard_normal(5), (rng.random(5) > 0.5).astype(float)
    bce = np.mean(np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0) - x * t)
    np.testing.assert_allclose(binary_cross_entropy_with_logits(x, t).item(), bce, rtol=1e-5)


# -- data --------------------------------------------------------------------------------------


def test_digits_split_is_fixed(digits):
    (x, y), (xt, yt) = digits
    assert x.shape == (1437, 8, 8) and xt.shape == (360, 8, 8) and x.dtype == np.float32
    assert x.max() == 1.0 and x.min() == 0.0 and set(np.unique(y)) == set(range(10))
    (x2, _), _ = mf.datasets.load_digits()
    assert np.array_equal(x, x2)


def idx_bytes(array, code):
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


@pytest.mark.parametrize("compress", [False, True])
def test_load_idx(tmp_path, compress):
    images = np.random.default_rng(0).integers(0, 256, (7, 4, 5)).astype(np.uint8)
    labels = np.arange(7, dtype=np.uint8)
    floats = np.linspace(-1, 1, 6).astype(np.float32).reshape(2, 3)
    for name, array, code in (("img", images, 0x08), ("lab", labels, 0x08), ("f", floats, 0x0D)):
        data = idx_bytes(array, code)
        path = tmp_path / (name + (".gz" if compress else ""))
        path.write_bytes(gzip.compress(data) if compress else data)
        loaded = mf.datasets.load_idx(path)
        assert np.array_equal(loaded, array) and loaded.dtype == array.dtype


def test_load_idx_rejects_bad_files(tmp_path):
    good = idx_bytes(np.zeros((3, 2), np.uint8), 0x08)
    cases = {"truncated": (good[:-1], r"holds 5 bytes of data \(truncated\)"),
             "short_header": (good[:6], "truncated header"),
             "magic": (b"\x01" + good[1:], "not an IDX file"),
             "type": (good[:2] + b"\x07" + good[3:], "unknown IDX type code 0x07")}
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=message):
            mf.datasets.load_idx(tmp_path / name)


# -- clear errors ------------------------------------------------------------------------------


def test_training_errors():
    model = nn.Sequential(nn.Dense(3), nn.Activation("softmax"))
    model.compile("sgd", "sparse_categorical_crossentropy", ["accuracy"])
    with pytest.raises(ValueError, match="x and y must have the same number of samples; got 10 inputs and 9 labels"):
        model.fit(np.ones((10, 4)), np.zeros(9, int), verbose=0)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\] for 3 classes; got labels from 0 to 7"):
        model.fit(np.ones((10, 4)), np.arange(10) % 8, verbose=0)
    with pytest.raises(ValueError, match="Dense expects inputs whose last dimension is 4, got shape"):
        model(np.ones((2, 5)))
    with pytest.raises(ValueError, match="Conv2d expects NCHW inputs with 2 channels, got shape"):
        nn.Conv2d(2, 4, 3)(np.ones((1, 3, 5, 5)))
    with pytest.raises(ValueError, match="unknown optimizer 'adamax'; valid names: sgd, adam"):
        model.compile("adamax", "mse")
    with pytest.raises(ValueError, match="unknown loss 'hinge'; valid names: sparse_categorical_crossentropy"):
        model.compile("sgd", "hinge")
    with pytest.raises(ValueError, match="unknown activation .swishy.; valid activations: linear, .*relu"):
        nn.Dense(3, activation="swishy")


def test_fit_history_and_silence(capsys, digits):
    (x, y), (xt, yt) = digits
    model = digits_mlp("mixed_float16")
    model.compile("adam", "sparse_categorical_crossentropy", ["accuracy"])
    h = model.fit(x[:256], y[:256], epochs=2, verbose=0, validation_split=0.25)
    assert capsys.readouterr().out == ""
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy", "time_per_step", "skipped_steps",
                              "loss_scale"}
    assert len(h.history["loss"]) == 2 and len(h.history["loss_scale"]) == 2 * 6    # 192 samples / 32 per step
    model.fit(x[:64], y[:64], epochs=1, verbose=1)
    captured = capsys.readouterr()
    assert "Epoch 1/1" in captured.out + captured.err     # a tqdm bar on stderr, or a plain line without tqdm

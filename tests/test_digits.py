"""The digits tools on the faces: `minifp train` (the Keras face's compile/fit/evaluate), the TensorFlow guide's
custom loop on minifp.tf, gradient checks of the PyTorch face's layers, and the digits data.

Layers, losses, policies, weights and fit's History of each face are tested in tests/keras and tests/torch."""
import gzip
import struct

import numpy as np
import pytest

import minifp as mf
import minifp.torch as torch
from minifp import cli
from minifp._digits import digits_mlp
from minifp.testing import check_grads


@pytest.fixture
def digits():
    return mf.datasets.load_digits()


@pytest.mark.endtoend
def test_compare_reaches_95_percent_under_every_policy():
    rows = [cli.train(p, verbose=0) for p in cli.COMPARED]
    accuracies = [r["accuracy"] for r in rows]
    assert min(accuracies) >= 0.95, accuracies
    assert max(accuracies) - min(accuracies) <= 0.015
    assert rows[1]["loss_scale"] is not None and rows[0]["loss_scale"] is None
    assert rows[1]["skipped"] is not None and rows[0]["skipped"] is None
    table = cli.report_table(rows)
    assert "mixed_float16" in table and "mixed_bfloat16" in table


@pytest.mark.endtoend
def test_cnn_under_mixed_float16():
    assert cli.train("mixed_float16", model="cnn", verbose=0)["accuracy"] >= 0.95


@pytest.mark.endtoend
def test_the_guides_custom_loop_matches_fit(digits):
    """The TensorFlow guide's custom training step (GradientTape, get_scaled_loss, get_unscaled_gradients)."""
    from minifp import tf
    from minifp.tf import keras
    (x, y), (xt, yt) = digits
    mf.manual_seed(0)
    model = digits_mlp("mixed_float16")
    optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam())
    loss_object = keras.losses.SparseCategoricalCrossentropy()

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_object(yb, model(xb, training=True))
            scaled_loss = optimizer.get_scaled_loss(loss)
        scaled_gradients = tape.gradient(scaled_loss, model.trainable_variables)
        gradients = optimizer.get_unscaled_gradients(scaled_gradients)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss

    order_rng = np.random.default_rng(1)
    for _ in range(20):
        order = order_rng.permutation(len(x))
        for b in range(0, len(x), 32):
            idx = order[b:b + 32]
            train_step(x[idx], y[idx])
    custom = float(np.mean(model.predict(xt, verbose=0).argmax(-1) == yt))
    fitted = cli.train("mixed_float16", verbose=0)["accuracy"]
    assert custom >= 0.95 and abs(custom - fitted) <= 0.015


# -- gradients of the PyTorch face's layers, by minifp.testing.check_grads ---------------------------------------


nn = torch.nn
LAYERS = [
    (lambda: nn.Linear(5, 3), (4, 5)),
    (lambda: nn.Conv2d(2, 3, 3, stride=1, padding=1), (2, 2, 4, 4)),
    (lambda: nn.MaxPool2d(2), (2, 2, 4, 4)),
    (lambda: nn.AvgPool2d(2), (2, 2, 4, 4)),
    (lambda: nn.AdaptiveAvgPool2d(1), (2, 3, 4, 4)),
    (lambda: nn.BatchNorm1d(4), (6, 4)),
    (lambda: nn.BatchNorm2d(3), (4, 3, 2, 2)),
    (lambda: nn.LayerNorm(5), (3, 5)),
    (lambda: nn.Flatten(), (2, 3, 4)),
    (lambda: nn.Sigmoid(), (3, 4)),
    (lambda: nn.ReLU(), (3, 4)),
    (lambda: nn.Softmax(dim=-1), (3, 4)),
    (lambda: nn.Dropout(0.0), (3, 4)),
]


@pytest.mark.parametrize("make, shape", LAYERS, ids=lambda v: v().__class__.__name__ if callable(v) else "")
def test_layer_gradients(make, shape):
    mf.manual_seed(0)
    layer = make()
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    check_grads(layer, x, params=list(layer.parameters()))


def test_dropout_trains_and_evaluates():
    layer = nn.Dropout(0.5)
    y = layer(torch.ones((200, 50)))
    kept = y.numpy() != 0
    assert abs(kept.mean() - 0.5) < 0.02 and np.all(y.numpy()[kept] == 2.0)
    assert np.all(layer.eval()(torch.ones((3, 3))).numpy() == 1.0)


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

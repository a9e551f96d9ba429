"""Keras 3's convolution, pooling, normalisation, padding and attention layers: shapes, names, values."""
import json
import pathlib

import numpy as np
import pytest

import minifp as mf
from minifp import keras
from minifp.keras import layers

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras"


@pytest.fixture(autouse=True)
def _fresh_names():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def _conv_ref(x, k, stride, pads, groups=1):
    """NHWC convolution by loops over taps (float64), x (N, H, W, C), k (kh, kw, C/groups, O)."""
    x = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    kh, kw, cg, o = k.shape
    ho, wo = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], ho, wo, o))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = x[:, i:i + stride * ho:stride, j:j + stride * wo:stride, g * cg:(g + 1) * cg]
                out[..., g * og:(g + 1) * og] += patch @ k[i, j, :, g * og:(g + 1) * og]
    return out


@pytest.mark.parametrize("size, stride, pads", [(7, 2, ((1, 1), (1, 1))), (8, 2, ((0, 1), (0, 1))),
                                                 (8, 1, ((1, 1), (1, 1)))])
def test_conv2d_same_padding_is_tensorflows(size, stride, pads):
    """'same' with stride 2 on an even size pads only at the end (TensorFlow's rule)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, size, size, 3)).astype(np.float32)
    conv = layers.Conv2D(4, 3, strides=stride, padding="same", bias_initializer="ones")
    y = conv(x)
    assert conv.kernel.shape == (3, 3, 3, 4) and conv.bias.shape == (4,)
    assert y.shape == (2, -(-size // stride), -(-size // stride), 4)
    want = _conv_ref(x, conv.kernel.numpy(), stride, pads) + 1
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)


def test_conv2d_names_defaults_and_channels_first():
    conv = layers.Conv2D(filters=6, kernel_size=(3, 2), groups=2, activation="relu")
    assert conv.name == "conv2d" and layers.Conv2D(1, 1).name == "conv2d_1"
    x = np.random.default_rng(1).standard_normal((2, 5, 6, 4)).astype(np.float32)
    y = conv(x)
    assert [v.path for v in conv.weights] == ["conv2d/kernel", "conv2d/bias"]
    assert conv.kernel.shape == (3, 2, 2, 6) and y.shape == (2, 3, 5, 6)
    np.testing.assert_allclose(y.numpy(), np.maximum(_conv_ref(x, conv.kernel.numpy(), 1, ((0, 0), (0, 0)),
                                                               groups=2), 0), rtol=1e-5, atol=1e-5)
    first = layers.Conv2D(6, (3, 2), groups=2, data_format="channels_first", activation="relu")
    first.build((2, 4, 5, 6))
    first.set_weights(conv.get_weights())
    np.testing.assert_allclose(first(x.transpose(0, 3, 1, 2)).numpy(), y.numpy().transpose(0, 3, 1, 2),
                               rtol=1e-6, atol=1e-6)


def test_conv2d_errors_are_keras():
    with pytest.raises(ValueError, match="The `padding` argument must be a list/tuple or one of"):
        layers.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="Received filters=0"):
        layers.Conv2D(0, 3)
    with pytest.raises(ValueError, match="evenly divisible by the number of groups"):
        layers.Conv2D(3, 3, groups=2)
    with pytest.raises(ValueError, match=r"The `kernel_size` argument must be a tuple of 2 integers"):
        layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="`strides > 1` not supported in conjunction with `dilation_rate > 1`"):
        layers.Conv2D(2, 3, strides=2, dilation_rate=2)


def test_depthwise_and_separable():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    dw = layers.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2)
    y = dw(x)
    assert [(v.path, v.shape) for v in dw.weights] == [("depthwise_conv2d/kernel", (3, 3, 3, 2)),
                                                       ("depthwise_conv2d/bias", (6,))]
    k = dw.kernel.numpy().reshape(3, 3, 1, 6)        # output channel c * 2 + j, TensorFlow's order
    np.testing.assert_allclose(y.numpy(), _conv_ref(x, k, 2, ((0, 1), (0, 1)), groups=3), rtol=1e-5, atol=1e-5)
    sep = layers.SeparableConv2D(5, 3, depth_multiplier=2, use_bias=False)
    z = sep(x)
    assert [v.shape for v in sep.weights] == [(3, 3, 3, 2), (1, 1, 6, 5)] and z.shape == (2, 4, 4, 5)
    mid = _conv_ref(x, sep.depthwise_kernel.numpy().reshape(3, 3, 1, 6), 1, ((0, 0), (0, 0)), groups=3)
    np.testing.assert_allclose(z.numpy(), mid @ sep.pointwise_kernel.numpy()[0, 0], rtol=1e-5, atol=1e-5)


def test_conv2d_gradients_reach_the_kernel():
    conv = layers.Conv2D(2, 3, padding="same")
    x = np.random.default_rng(3).standard_normal((1, 4, 4, 2)).astype(np.float32)
    mf.sum(conv(x)).backward()
    assert conv.kernel.grad.shape == (3, 3, 2, 2) and np.allclose(conv.bias.grad.numpy(), 16.0)


def test_pooling():
    x = np.arange(2 * 5 * 5 * 2, dtype=np.float32).reshape(2, 5, 5, 2)
    y = layers.MaxPooling2D()(x)
    assert y.shape == (2, 2, 2, 2) and y.numpy()[0, 0, 0, 0] == x[0, 1, 1, 0]
    same = layers.MaxPooling2D(padding="same")(x)
    assert same.shape == (2, 3, 3, 2) and same.numpy()[0, 2, 2, 1] == x[0, 4, 4, 1]
    avg = layers.AveragePooling2D(pool_size=2, strides=2, padding="same")(x)
    # the last window holds one input value: TensorFlow divides by 1, not by the 4 window positions
    assert avg.numpy()[0, 2, 2, 0] == x[0, 4, 4, 0]
    np.testing.assert_allclose(avg.numpy()[0, 0, 0], x[0, :2, :2].mean(axis=(0, 1)))
    g = layers.GlobalAveragePooling2D()(x)
    assert g.shape == (2, 2) and np.allclose(g.numpy(), x.mean(axis=(1, 2)))
    assert layers.GlobalAveragePooling2D(keepdims=True)(x).shape == (2, 1, 1, 2)
    assert layers.GlobalMaxPooling2D()(x).numpy().tolist() == x.max(axis=(1, 2)).tolist()


def test_zero_padding():
    x = np.ones((1, 2, 3, 1), np.float32)
    y = layers.ZeroPadding2D(((1, 0), (0, 2)))(x)
    assert y.shape == (1, 3, 5, 1) and y.numpy()[0, :, :, 0].tolist() == [[0] * 5, [1, 1, 1, 0, 0], [1, 1, 1, 0, 0]]
    assert layers.ZeroPadding2D(1)(x).shape == (1, 4, 5, 1)
    assert layers.ZeroPadding2D((1, 2)).padding == ((1, 1), (2, 2))
    with pytest.raises(ValueError, match="`padding` should have two elements"):
        layers.ZeroPadding2D((1, 2, 3))


def _wave(shape, k, scale=2.0, freq=0.37, offset=0.0):
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (offset + scale * np.sin(freq * i + k)).astype(np.float32).reshape(shape)


def test_batch_normalization_defaults_and_update():
    bn = layers.BatchNormalization()
    assert (bn.momentum, bn.epsilon, bn.axis) == (0.99, 1e-3, -1)
    x = _wave((6, 4), 0.0, offset=0.5)
    y = bn(x, training=True)
    mean, var = x.mean(axis=0), x.var(axis=0)               # the biased variance
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * mean, rtol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.99 + 0.01 * var, rtol=1e-6)
    assert [v.path for v in bn.weights] == ["batch_normalization/gamma", "batch_normalization/beta",
                                            "batch_normalization/moving_mean", "batch_normalization/moving_variance"]
    assert [v.trainable for v in bn.weights] == [True, True, False, False]
    np.testing.assert_allclose(bn(x).numpy(), (x - bn.moving_mean.numpy()) / np.sqrt(bn.moving_variance.numpy()
                                                                                     + 1e-3), rtol=1e-5)


def test_batch_normalization_under_mixed_float16():
    """Statistics in float32 from the float16 inputs; float32 variables; a float16 result."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    bn = layers.BatchNormalization()
    x = (_wave((8, 3), 0.0) * 300).astype(np.float16)       # squares overflow float16, not float32
    y = bn(x, training=True)
    assert y.dtype == "float16" and bn.gamma.dtype == "float32" and bn.moving_variance.dtype == "float32"
    x32 = x.astype(np.float32)
    want = ((x32 - x32.mean(0)) / np.sqrt(x32.var(0) + 1e-3)).astype(np.float16)
    np.testing.assert_allclose(y.numpy().astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.99 + 0.01 * x32.var(0), rtol=1e-5)


BN_FACES = json.loads((FIXTURES / "batchnorm.json").read_text())["faces"]


@pytest.mark.parametrize("face, name", [(face, name) for face in ("keras3", "tf_keras") for name in sorted(BN_FACES[face])])
def test_batch_normalization_matches_keras_fixtures(face, name):
    """Keras 3's BatchNormalization, and tf.keras's through minifp.tf (its fused kernel on 4-D inputs keeps the
    unbiased batch variance in the moving variance)."""
    from minifp.tf.keras import layers as tf_layers
    case = BN_FACES[face][name]
    bn = (layers if face == "keras3" else tf_layers).BatchNormalization(**case["kwargs"])
    shape = tuple(case["shape"])
    bn.build(shape)
    if case["weights_in"] is not None:
        bn.set_weights([np.asarray(w, np.float32) for w in case["weights_in"]])
    for call in case["training_calls"]:
        y = bn(_wave(shape, call["k"], offset=0.5 + call["k"]), training=True)
        np.testing.assert_allclose(y.numpy(), call["output"], atol=1e-6, rtol=0)
        np.testing.assert_allclose(bn.moving_mean.numpy(), call["moving_mean"], atol=1e-6, rtol=0)
        np.testing.assert_allclose(bn.moving_variance.numpy(), call["moving_variance"], atol=1e-6, rtol=0)
    k0 = case["training_calls"][0]["k"]
    np.testing.assert_allclose(bn(_wave(shape, k0, offset=0.5 + k0), training=False).numpy(),
                               case["inference_output"], atol=1e-6, rtol=0)
    if face == "keras3":                    # tf.keras names its weights "gamma:0": its paths are not Keras 3's
        assert [v.path for v in bn.weights] == case["weight_names"]


def test_multi_head_attention_weights_and_values():
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3)
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 4, 5)).astype(np.float32)
    v = rng.standard_normal((2, 6, 7)).astype(np.float32)
    out, scores = mha(q, v, return_attention_scores=True)
    assert out.shape == (2, 4, 5) and scores.shape == (2, 2, 4, 6)
    assert [(w.path, w.shape) for w in mha.weights] == [(f"{mha.name}/{p}", shape) for p, shape in (
        ("query/kernel", (5, 2, 3)), ("query/bias", (2, 3)), ("key/kernel", (7, 2, 3)), ("key/bias", (2, 3)),
        ("value/kernel", (7, 2, 3)), ("value/bias", (2, 3)), ("attention_output/kernel", (2, 3, 5)),
        ("attention_output/bias", (5,)))]       # the sublayers' variables under the layer's name scope, as Keras's
    w = {p.path.split("/", 1)[1]: p.numpy().astype(np.float64) for p in mha.weights}
    qp = np.einsum("btd,dnh->btnh", q, w["query/kernel"]) + w["query/bias"]
    kp = np.einsum("bsd,dnh->bsnh", v, w["key/kernel"]) + w["key/bias"]
    vp = np.einsum("bsd,dnh->bsnh", v, w["value/kernel"]) + w["value/bias"]
    s = np.einsum("btnh,bsnh->bnts", qp / np.sqrt(3), kp)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    want = np.einsum("bnts,bsnh,nho->bto", s, vp, w["attention_output/kernel"]) + w["attention_output/bias"]
    np.testing.assert_allclose(scores.numpy(), s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    causal = mha(q, q[:, :, :5] @ np.ones((5, 7), np.float32)[:5], use_causal_mask=True,
                 return_attention_scores=True)[1].numpy()
    assert np.all(causal[:, :, 0, 1:] == 0)
    with pytest.raises(ValueError, match="invalid value for argument `num_heads`"):
        layers.MultiHeadAttention(num_heads=0, key_dim=2)


def test_small_cnn_matches_keras_summary_fixture():
    """Names, classes, output shapes and counts of the recorded small CNN (Conv2D, MaxPooling2D, BN)."""
    want = json.loads((FIXTURES / "summary.json").read_text())["faces"]["keras3"]["small_cnn"]
    model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(8, 3, activation="relu"), layers.MaxPooling2D(),
                              layers.Conv2D(filters=16, kernel_size=3, strides=2, padding="same"),
                              layers.BatchNormalization(), layers.Flatten(), layers.Dropout(0.5),
                              layers.Dense(10, activation="softmax")])
    assert model.count_params() == want["counts"]["total"]
    assert [[lay.name, type(lay).__name__, list(lay.output.shape)] for lay in model.layers] == \
        [row[:3] for row in want["layers"]]

"""keras.ops' nn, core and math parts beyond the recorded cases (tests/fixtures/keras/ops_nn.json.gz): control flow
that takes Python functions, gradients (the engine's and minifp.tf's GradientTape), and identities between ops."""
import numpy as np
import pytest

import minifp.tf as tf
from minifp.keras import ops
from minifp.keras._tensor import Tensor


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- control flow, run eagerly ---------------------------------------------------------------------------------

def test_cond_runs_only_the_branch_taken():
    ran = []
    out = ops.cond(ops.convert_to_tensor(False), lambda: ran.append("t") or 1, lambda: ran.append("f") or 2)
    assert out == 2 and ran == ["f"]


def test_fori_and_while_loops():
    assert ops.fori_loop(2, 5, lambda i, v: v * 10 + i, 1) == 1234
    assert ops.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0)) == (4, 6)
    assert ops.while_loop(lambda i: i < 100, lambda i: i + 1, 0, maximum_iterations=7) == 7
    assert ops.while_loop(lambda i, s: i < 3, lambda i, s: [i + 1, s * 2], [0, 1]) == (3, 8)


def test_scan_carries_and_stacks():
    xs = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    carry, ys = ops.scan(lambda c, x: (c + x, c * x), 0.0, ops.convert_to_tensor(xs))
    assert float(np.asarray(carry)) == 10.0
    np.testing.assert_array_equal(np.asarray(ys), [0.0, 2.0, 9.0, 24.0])
    carry, ys = ops.scan(lambda c, x: (c + x, c), 0.0, ops.convert_to_tensor(xs), reverse=True)
    np.testing.assert_array_equal(np.asarray(ys), [9.0, 7.0, 4.0, 0.0])
    carry, ys = ops.scan(lambda c, _: (c * 2, None), 1, length=5)
    assert carry == 32 and ys is None
    with pytest.raises(ValueError):
        ops.scan(lambda c, x: (c, x), 0.0)


def test_map_switch_unstack():
    x = ops.convert_to_tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(ops.map(lambda r: r * 2.0, x)), np.arange(6).reshape(3, 2) * 2)
    np.testing.assert_array_equal(np.asarray(ops.vectorized_map(lambda r: ops.sum(r), x)), [1.0, 5.0, 9.0])
    branches = [lambda a: a + 1, lambda a: a * 10]
    assert [ops.switch(i, branches, 3) for i in (-4, 0, 1, 9)] == [4, 4, 30, 30]    # index clamped
    parts = ops.unstack(x, axis=1)
    assert len(parts) == 2 and isinstance(parts[0], Tensor)
    np.testing.assert_array_equal(np.asarray(parts[1]), [1.0, 3.0, 5.0])


def test_shape_dtype_is_tensor():
    x = ops.convert_to_tensor(np.zeros((2, 3), np.float16))
    assert ops.shape(x) == (2, 3) and ops.dtype(x) == "float16" and ops.is_tensor(x)
    assert not ops.is_tensor(np.zeros(2)) and ops.dtype(ops.convert_to_tensor([1, 2])) == "int32"


# -- dtypes ----------------------------------------------------------------------------------------------------

def test_dtypes_as_keras():
    h = ops.convert_to_tensor(f32(2, 5), "float16")
    assert ops.softmax(h).dtype == "float16" and ops.layer_normalization(h).dtype == "float16"
    assert ops.one_hot(np.array([0, 2]), 3).dtype == "float32"
    assert ops.relu(np.array([-1, 2], np.int32)).dtype == "int32"
    m, v = ops.moments(h, axes=[1])
    assert m.dtype == v.dtype == "float16"


def test_refusals():
    with pytest.raises(ValueError, match="divisible by 2"):
        ops.glu(f32(3, 5))
    with pytest.raises(TypeError):
        ops.sigmoid(np.array([1, 2], np.int32))
    with pytest.raises(ValueError, match="padding"):
        ops.max_pool(f32(1, 4, 4, 1), 2, padding="full")


# -- gradients -------------------------------------------------------------------------------------------------

def test_gradient_tape_through_keras_ops():
    x = tf.Variable(f32(2, 4))
    w = f32(2, 4, seed=1)
    with tf.GradientTape() as tape:
        y = ops.sum(ops.softmax(x) * w)
    g = tape.gradient(y, x)
    s = np.exp(x.numpy()) / np.exp(x.numpy()).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g.numpy(), s * (w - (s * w).sum(axis=1, keepdims=True)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size,strides,padding", [((7, 6), 1, "valid"), ((8, 6), 2, "same"), ((7, 7), 2, "valid"),
                                                  ((9, 6), 3, "same"), ((6, 5), 1, "same")])
def test_conv_transpose_is_the_adjoint_of_conv(size, strides, padding):
    """<conv_transpose(y, k), x> == <y, conv(x, k)>: TensorFlow's conv_transpose is conv's input gradient."""
    x, k = f32(1, *size, 3), f32(3, 3, 3, 2, seed=1)
    y = ops.conv(x, k, strides=strides, padding=padding)
    t = ops.conv_transpose(y, k, strides=strides, padding=padding)
    assert t.shape == x.shape
    yv = np.asarray(y).astype(np.float64)
    lhs = (np.asarray(t).astype(np.float64) * x).sum()
    np.testing.assert_allclose(lhs, (yv * yv).sum(), rtol=1e-5)


def test_conv_gradient_is_conv_transpose():
    x = tf.Variable(f32(1, 6, 6, 2))
    k = f32(3, 3, 2, 4, seed=2)
    g_out = f32(1, 3, 3, 4, seed=3)
    with tf.GradientTape() as tape:
        y = ops.sum(ops.conv(x, k, strides=2, padding="same") * g_out)
    g = tape.gradient(y, x)
    want = np.asarray(ops.conv_transpose(g_out, k, strides=2, padding="same"))
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-5, atol=1e-5)


def test_segment_sum_and_top_k_are_differentiable():
    data = tf.Variable(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    with tf.GradientTape() as tape:
        s = ops.segment_sum(data, np.array([0, 1, 0, 1]), num_segments=2)
        v, _ = ops.top_k(data, 2)
        y = ops.sum(s * np.array([1.0, 10.0], np.float32)) + ops.sum(v)
    np.testing.assert_array_equal(tape.gradient(y, data).numpy(), [1.0, 10.0, 2.0, 11.0])


def test_kinks_take_tensorflows_gradients():
    """At 0, selu's gradient is scale and celu's is 2 (both of TensorFlow's maximum and minimum pass it); a zero row
    of normalize gets 1 / epsilon, not NaN."""
    x = tf.Variable(np.zeros(3, np.float32))
    with tf.GradientTape(persistent=True) as tape:
        ys = [ops.sum(ops.selu(x)), ops.sum(ops.celu(x)), ops.sum(ops.normalize(x[None]))]
    grads = [tape.gradient(y, x).numpy().tolist() for y in ys]
    assert grads == [[np.float32(1.0507009873554805)] * 3, [2.0] * 3, [np.float32(1e7)] * 3]


def test_scatter_and_slice_update():
    out = ops.scatter(np.array([[0, 1], [2, 0], [0, 1]]), np.array([1.0, 2.0, 3.0], np.float32), (3, 2))
    np.testing.assert_array_equal(np.asarray(out), [[0, 4], [0, 0], [2, 0]])
    x = ops.convert_to_tensor(np.zeros((3, 3), np.float32))
    y = ops.slice_update(x, (1, 1), np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(np.asarray(y), [[0, 0, 0], [0, 1, 1], [0, 1, 1]])
    np.testing.assert_array_equal(np.asarray(ops.slice(y, (0, 1), (2, 2))), [[0, 0], [1, 1]])


K = f32(3, 3, 2, 3, seed=4)                 # (kh, kw, in, out); conv_transpose reads it as (kh, kw, out, in)
DEPTHWISE, POINTWISE = f32(3, 3, 2, 2, seed=8), f32(1, 1, 4, 3, seed=9)
DIFFERENTIABLE = {
    "conv": lambda x: ops.conv(x, K, strides=2, padding="same"),
    "depthwise_conv": lambda x: ops.depthwise_conv(x, DEPTHWISE, padding="same"),
    "separable_conv": lambda x: ops.separable_conv(x, DEPTHWISE, POINTWISE, strides=2),
    "conv_transpose": lambda x: ops.conv_transpose(x, K.transpose(0, 1, 3, 2), strides=2, padding="same"),
    "max_pool": lambda x: ops.max_pool(x, 2, padding="same"),
    "average_pool": lambda x: ops.average_pool(x, 3, strides=2, padding="same"),
    "layer_normalization": lambda x: ops.layer_normalization(x, axis=(1, 2)),
    "rms_normalization": lambda x: ops.rms_normalization(x),
    "normalize": lambda x: ops.normalize(x, axis=1),
    "glu": lambda x: ops.glu(x),
    "softmax": lambda x: ops.softmax(x, axis=(1, 2)),
    "dot_product_attention": lambda x: ops.dot_product_attention(x, x, x, is_causal=True),
    "logsumexp": lambda x: ops.logsumexp(x, axis=-1),
    "norm": lambda x: ops.norm(x, ord=3, axis=1),
    "nuclear norm": lambda x: ops.norm(x, ord="nuc", axis=(1, 2)),
    "spectral norm": lambda x: ops.norm(x, ord=2, axis=(2, 1), keepdims=True),
    "soft_shrink": lambda x: ops.soft_shrink(x, 0.3),
    "squareplus": lambda x: ops.squareplus(x),
    "depth_to_space": lambda x: ops.depth_to_space(ops.reshape(x, (2, 2, 2, 8)), 2),
    "adaptive_average_pool": lambda x: ops.adaptive_average_pool(x, (3, 2)),
    "adaptive_max_pool": lambda x: ops.adaptive_max_pool(x, 3),
    "psnr": lambda x: ops.psnr(x, x * 0.5 + 0.1, 2.0),
    "categorical_crossentropy": lambda x: ops.categorical_crossentropy(ops.softmax(x), x * 0.5, from_logits=True),
    "extract_sequences": lambda x: ops.extract_sequences(x, 2, 1),
    "celu": lambda x: ops.celu(x, alpha=0.7),
    "selu": lambda x: ops.selu(x),
    "segment_max": lambda x: ops.segment_max(x, np.array([1, 0, 1, 1, 0, 0])[:x.shape[0]], num_segments=2),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradients_match_finite_differences(name):
    """<grad, v> against the central difference of sum(f(x) * r) along v (float32, a step of 1e-2)."""
    f = DIFFERENTIABLE[name]
    x0, v = f32(2, 4, 4, 2, seed=5), f32(2, 4, 4, 2, seed=6)
    r = np.asarray(f(x0)).shape
    r = f32(*r, seed=7)
    x = tf.Variable(x0)
    with tf.GradientTape() as tape:
        y = ops.sum(f(x) * r)
    g = tape.gradient(y, x).numpy().astype(np.float64)
    t = 1e-2
    fd = (float(np.asarray(ops.sum(f(x0 + t * v) * r))) - float(np.asarray(ops.sum(f(x0 - t * v) * r)))) / (2 * t)
    np.testing.assert_allclose((g * v).sum(), fd, rtol=2e-2, atol=2e-3)

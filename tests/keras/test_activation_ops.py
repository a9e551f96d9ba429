"""Keras's and tf's names for the activation ops of issue 32: each is the engine's op (one rounding), with
Keras's defaults."""
import numpy as np

import minifp
import minifp.keras as keras
import minifp.tf as tf

X = np.array([-4.0, -3.0, -1.5, -0.25, 0.0, 0.5, 2.0, 3.0, 25.0], np.float32)


def test_keras_activations_are_the_ops():
    a = keras.activations
    assert a.leaky_relu(X).numpy().tolist() == np.where(X > 0, X, X * np.float32(0.2)).tolist()   # Keras's 0.2
    assert a.hard_sigmoid(X).numpy().tolist() == (np.clip(X + 3, 0, 6) * np.float32(1 / 6)).tolist()
    assert a.hard_silu(X).numpy().tolist() == (X * np.clip(X + 3, 0, 6) / 6).tolist()
    for name, op in (("elu", "elu"), ("selu", "selu"), ("softplus", "softplus"), ("mish", "mish")):
        assert getattr(a, name)(X).numpy().tolist() == getattr(minifp, op)(minifp.tensor(X)).float32().tolist()
    assert a.softplus(X).numpy()[-1] == 25.0 and a.elu(X, alpha=0.5).numpy()[0] == np.float32(0.5 * np.expm1(-4.0))


def test_half_activations_round_once():
    """float16 in, float16 out: the float32 result rounded once (a composition would round its steps)."""
    h = keras.ops.cast(X, "float16")
    got = keras.activations.mish(h)
    x64 = X.astype(np.float16).astype(np.float64)
    want = (x64 * np.tanh(np.log1p(np.exp(x64)))).astype(np.float16)
    assert got.dtype == "float16" and np.abs(got.numpy().astype(np.float32) - want.astype(np.float32)).max() <= \
        np.abs(want.astype(np.float32)).max() * 2.0**-10


def test_ops_and_tf_names():
    assert keras.ops.elu(X).numpy().tolist() == keras.activations.elu(X).numpy().tolist()
    assert keras.ops.hard_swish(X).numpy().tolist() == keras.activations.hard_silu(X).numpy().tolist()
    assert keras.ops.hard_sigmoid(X).numpy().tolist() == keras.activations.hard_sigmoid(X).numpy().tolist()
    assert tf.nn.selu(tf.constant(X)).numpy().tolist() == keras.activations.selu(X).numpy().tolist()
    assert tf.math.softplus(tf.constant(X)).numpy().tolist() == keras.ops.softplus(X).numpy().tolist()


def test_hand_written_names_take_the_frameworks_arguments():
    want = np.where(X > 0, X, X * np.float32(0.2)).tolist()
    assert keras.ops.leaky_relu(X).numpy().tolist() == want                       # Keras's default 0.2
    assert tf.nn.leaky_relu(tf.constant(X)).numpy().tolist() == want               # TensorFlow's alpha=0.2
    assert tf.nn.leaky_relu(tf.constant(X), alpha=0.5, name="l").numpy()[0] == -2.0
    assert keras.ops.elu(X, 0.5).numpy().tolist() == keras.activations.elu(X, alpha=0.5).numpy().tolist()

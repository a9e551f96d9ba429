"""The reductions helper's engine ops under the Keras and tf.keras faces' names (keras.ops.prod, .logsumexp;
tf.math.reduce_prod, .reduce_logsumexp): the engine op with the framework's axis and keepdims."""
import math

import numpy as np

import minifp.keras as keras
import minifp.tf as tf


def test_keras_ops_prod_and_logsumexp():
    x = keras.ops.convert_to_tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert keras.ops.prod(x, axis=1).numpy().tolist() == [2.0, 12.0]
    assert keras.ops.prod(x, axis=(0, 1), keepdims=True).numpy().tolist() == [[24.0]]
    got = float(keras.ops.logsumexp(x, axis=(0, 1)).numpy())
    assert math.isclose(got, math.log(sum(math.exp(v) for v in (1, 2, 3, 4))), rel_tol=1e-6)


def test_tf_math_reduce_prod_and_logsumexp():
    x = tf.constant(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert tf.math.reduce_prod(x, axis=0).numpy().tolist() == [3.0, 8.0]
    assert math.isclose(float(tf.math.reduce_logsumexp(x, axis=1).numpy()[0]), math.log(math.e + math.e ** 2),
                        rel_tol=1e-6)

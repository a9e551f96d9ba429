"""Nested tf.GradientTapes, persistent tapes, jacobian and batch_jacobian as the TensorFlow guide "Advanced automatic
differentiation" uses them, with expected values derived by hand (polynomials and products of small integers: exact
in float32; tests/tf/test_tapes_recorded.py replays recordings of real TensorFlow), and TensorFlow's documented
rules: a gradient taken while a tape records is recorded by it (an outer tape's block, a persistent tape's own); one
taken outside every recording tape is a plain value; a non-persistent tape stops recording once its gradient is
taken inside its own block; jacobian is target.shape + source.shape, batch_jacobian target.shape +
source.shape[1:].
"""
import numpy as np
import pytest

import minifp.tf as tf


def _x(values):
    return tf.constant(np.asarray(values, np.float32))


def test_guide_second_derivative_of_a_variable():
    x = tf.Variable(1.0)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)          # 3 x**2, recorded by t2
    d2y_dx2 = t2.gradient(dy_dx, x)        # 6 x
    assert (dy_dx.numpy(), d2y_dx2.numpy()) == (3.0, 6.0)
    assert dy_dx.dtype == d2y_dx2.dtype == "float32"


@pytest.mark.parametrize("x0", [2.0, -1.5, 0.25])
def test_watched_constants_at_every_order(x0):
    """d/dx x**4 = 4 x**3, then 12 x**2, then 24 x; each tape watches x, in any order."""
    x = tf.constant(x0)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            with tf.GradientTape() as t1:
                t1.watch(x)
                t2.watch(x)                # watched by an inner tape first: t1 lets go of it, t2 keeps it
                y = x * x * x * x
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    assert (d1.numpy(), d2.numpy(), d3.numpy()) == (4 * x0 ** 3, 12 * x0 ** 2, 24 * x0)
    assert not x.requires_grad             # every tape let go of it


def test_persistent_tape_differentiates_its_own_gradient():
    x = tf.constant([1.0, 2.0, -3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x * x)
        g = tape.gradient(y, x)            # inside its block: recorded on itself
    h = tape.gradient(g, x)                # d/dx sum(3 x**2) = 6 x
    np.testing.assert_array_equal(g.numpy(), [3.0, 12.0, 27.0])
    np.testing.assert_array_equal(h.numpy(), [6.0, 12.0, -18.0])


def test_gradients_taken_while_no_tape_records_are_values():
    x = tf.Variable(3.0)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = x * x * x
    dy = t1.gradient(y, x)                 # after t2's block: t2 did not see it
    assert dy.numpy() == 27.0 and t2.gradient(dy, x) is None
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = x * x * x
        with t2.stop_recording():
            dy = t1.gradient(y, x)
    assert t2.gradient(dy, x) is None


def test_non_persistent_tape_stops_recording_when_its_gradient_is_taken_inside():
    x = tf.Variable(2.0)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = x * x
            dy = t1.gradient(y, x)         # t1 stops; t2 records it
            z = dy * dy                    # (2 x)**2, whose derivative is 8 x
        with pytest.raises(RuntimeError, match="can only be used to compute one set of gradients"):
            t1.gradient(y, x)
    assert t2.gradient(z, x).numpy() == 16.0


def test_outer_tape_that_does_not_watch_gets_no_gradient():
    x = tf.Variable(2.0)
    with tf.GradientTape(watch_accessed_variables=False) as t2:
        with tf.GradientTape() as t1:
            y = x * x * x
        dy = t1.gradient(y, x)
    assert dy.numpy() == 12.0 and t2.gradient(dy, x) is None


def test_guide_input_gradient_regularization_with_watch_accessed_variables_false():
    """out = (x W)**2; g1 = d out/dx = 2 y W^T; |g1|**2 = 4 y**2 |W|**2, whose gradient in W is
    8 y |W|**2 x^T + 8 y**2 W: with x = [1, 2], W = [3, 4]^T, y = 11: [5104, 8272]."""
    x = _x([[1.0, 2.0]])
    w = tf.Variable(np.array([[3.0], [4.0]], np.float32))
    with tf.GradientTape() as t2:
        with tf.GradientTape(watch_accessed_variables=False) as t1:
            t1.watch(x)
            out = tf.reduce_sum(tf.matmul(x, w) ** 2)
        g1, gw = t1.gradient(out, [x, w])   # w is not watched by t1
        g1_sq = tf.reduce_sum(g1 * g1)
    assert gw is None
    np.testing.assert_array_equal(g1.numpy(), [[66.0, 88.0]])
    assert g1_sq.numpy() == 12100.0
    np.testing.assert_array_equal(t2.gradient(g1_sq, w).numpy(), [[5104.0], [8272.0]])


def test_jacobian_of_a_product_is_the_matrix():
    w = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], np.float32)
    x = tf.Variable(np.array([0.5, 1.0, 2.0], np.float32))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.constant(w) * x, axis=1)
    j = tape.jacobian(y, x)
    assert j.shape == (2, 3) and j.dtype == "float32"
    np.testing.assert_array_equal(j.numpy(), w)
    with pytest.raises(RuntimeError, match="can only be used to compute one set of gradients \\(or jacobians\\)"):
        tape.jacobian(y, x)


def test_guide_jacobian_shapes_and_unconnected_sources():
    x = tf.random.normal([7, 5])
    layer = tf.keras.layers.Dense(10, activation=tf.nn.relu)
    unused = tf.Variable(np.ones((2, 3), np.float32))
    with tf.GradientTape(persistent=True) as tape:
        y = layer(x)
    j = tape.jacobian(y, layer.kernel)
    assert j.shape == (7, 10, 5, 10)
    # summed over the target it is the gradient of sum(y), to the bit (one nonzero term per element and row)
    np.testing.assert_array_equal(tf.reduce_sum(j, axis=[0, 1]).numpy(), tape.gradient(y, layer.kernel).numpy())
    got = tape.jacobian(y, {"k": layer.kernel, "u": unused})
    assert got["u"] is None and got["k"].shape == (7, 10, 5, 10)
    zeros = tape.jacobian(y, unused, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert zeros.shape == (7, 10, 2, 3) and not zeros.numpy().any()


def test_guide_batch_jacobian():
    x = tf.random.normal([7, 5])
    layer1 = tf.keras.layers.Dense(8, activation=tf.nn.elu)
    layer2 = tf.keras.layers.Dense(6, activation=tf.nn.elu)
    with tf.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer2(layer1(x))
    j = tape.jacobian(y, x)
    jb = tape.batch_jacobian(y, x)
    assert (j.shape, jb.shape) == ((7, 6, 7, 5), (7, 6, 5))
    # the examples are independent: the full jacobian's diagonal blocks, the rest zeros
    blocks = np.stack([j.numpy()[b, :, b, :] for b in range(7)])
    np.testing.assert_array_equal(jb.numpy(), blocks)
    assert tf.reduce_sum(j, axis=2).numpy().tolist() == jb.numpy().tolist()


def test_batch_jacobian_of_squares_is_diagonal():
    x = _x([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    jb = tape.batch_jacobian(y, x)
    np.testing.assert_array_equal(jb.numpy(), [np.diag([2.0, 4.0, 6.0]), np.diag([-2.0, 1.0, 8.0])])


def test_batch_jacobian_refuses_what_tensorflow_refuses():
    x = _x([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
        v = tf.reduce_sum(x, axis=1)
        z = tf.concat([y, y, y], axis=0)
    with pytest.raises(ValueError, match=r"^Shape \(2,\) must have rank at least 2$"):
        tape.batch_jacobian(v, x)
    # TensorFlow formats the TensorShapes, "(6, 2)", into "(%s)": the parentheses come doubled
    with pytest.raises(ValueError, match=r"^Need first dimension of target shape \(\(6, 2\)\) and source shape "
                                         r"\(\(2, 2\)\) to match.$"):
        tape.batch_jacobian(z, x)


def test_guide_hessian_as_the_jacobian_of_a_gradient():
    """f = sum(x**3) / 3 + sum(x) ** 2: gradient x**2 + 2 s, Hessian diag(2 x) + 2 (s = sum(x))."""
    x = tf.Variable(np.array([1.0, -2.0, 0.5], np.float32))
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            s = tf.reduce_sum(x)
            f = tf.reduce_sum(x * x * x) / 3.0 + s * s
        g = t1.gradient(f, x)
    h = t2.jacobian(g, x)
    np.testing.assert_array_equal(g.numpy(), [0.0, 3.0, -0.75])           # x**2 + 2 (-0.5)
    np.testing.assert_array_equal(h.numpy(), np.diag([2.0, -4.0, 1.0]) + 2.0)


def test_guide_hessian_of_a_layer_has_the_kernel_shape_twice():
    x = tf.random.normal([2, 5])
    layer1 = tf.keras.layers.Dense(8, activation=tf.nn.relu)
    layer2 = tf.keras.layers.Dense(6, activation=tf.nn.relu)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            loss = tf.reduce_mean(layer2(layer1(x)) ** 2)
        g = t1.gradient(loss, layer1.kernel)
    h = t2.jacobian(g, layer1.kernel)
    assert g.shape == (5, 8) and h.shape == (5, 8, 5, 8)
    flat = h.numpy().reshape(40, 40)
    np.testing.assert_allclose(flat, flat.T, rtol=0, atol=1e-6 * np.abs(flat).max())     # a Hessian is symmetric


def test_float16_second_derivatives_stay_float16():
    x = tf.constant([1.5, -2.0], dtype=tf.float16)
    with tf.GradientTape() as t2:
        t2.watch(x)
        with tf.GradientTape() as t1:
            t1.watch(x)
            y = tf.reduce_sum(x * x * x)
        g = t1.gradient(y, x)
    h = t2.gradient(g, x)
    assert g.dtype == h.dtype == "float16"
    assert (g.numpy().tolist(), h.numpy().tolist()) == ([6.75, 12.0], [9.0, -12.0])      # 3 x**2, 6 x

"""minifp.tf refuses mixed-dtype ops as TensorFlow 2.21 does (tests/fixtures/keras/conventions.json, "tf"), while
tf.keras layers still read their variables in the compute dtype under mixed precision; missing tf names."""
import json
import pathlib

import numpy as np
import pytest

import minifp.tf as tf

FIXTURE = json.loads((pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras" /
                      "conventions.json").read_text())["tf"]


def _h():
    return tf.ones(2, dtype=tf.float16)


CASES = {
    "add_f16_f32": lambda: tf.add(_h(), tf.ones(2)),
    "plus_f16_f32": lambda: _h() + tf.ones(2),
    "mul_f32_f16": lambda: tf.multiply(tf.ones(2), _h()),
    "sub_op_f32_f16": lambda: tf.ones(2) - _h(),
    "matmul_i32_f32": lambda: tf.matmul(tf.ones((2, 2), dtype=tf.int32), tf.ones((2, 2))),
    "matmul_f32_i32_op": lambda: tf.ones((2, 2)) @ tf.ones((2, 2), dtype=tf.int32),
    "add_f32_python_float": lambda: tf.add(tf.ones(2), 1.5),
    "add_f16_python_float": lambda: tf.add(_h(), 1.5),
    "add_i32_python_float": lambda: tf.add(tf.ones(2, tf.int32), 1.5),
    "add_i32_python_int": lambda: tf.add(tf.ones(2, tf.int32), 2),
    "add_f32_python_int": lambda: tf.add(tf.ones(2), 2),
    "equal_f16_f32": lambda: tf.equal(_h(), tf.ones(2)),
    "maximum_f16_f32": lambda: tf.maximum(_h(), tf.ones(2)),
    "minimum_f16_f32": lambda: tf.minimum(_h(), tf.ones(2)),
    "less_f16_f32": lambda: tf.less(_h(), tf.ones(2)),
    "less_op_f16_f32": lambda: _h() < tf.ones(2),
    "concat_f16_f32": lambda: tf.concat([_h(), tf.ones(2)], 0),
    "stack_f16_f32": lambda: tf.stack([_h(), tf.ones(2)]),
    "subtract_f16_f32": lambda: tf.subtract(_h(), tf.ones(2)),
    "divide_f16_f32": lambda: tf.divide(_h(), tf.ones(2)),
    "truediv_op_f16_f32": lambda: _h() / tf.ones(2),
    "pow_f16_f32": lambda: tf.pow(_h(), tf.ones(2)),
    "pow_op_f16_f32": lambda: _h() ** tf.ones(2),
    "where_f16_f32": lambda: tf.where(tf.ones(2, tf.bool), _h(), tf.ones(2)),
    "mul_op_i32_python_float": lambda: tf.ones(2, tf.int32) * 0.5,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mixed_dtypes_as_tensorflow(case):
    want = FIXTURE[case]
    if isinstance(want, dict):
        kind = {"InvalidArgumentError": tf.errors.InvalidArgumentError, "TypeError": TypeError}[want["type"]]
        with pytest.raises(kind) as caught:
            CASES[case]()
        assert type(caught.value).__name__ == want["type"] and str(caught.value).strip() == want["message"]
    else:
        out = CASES[case]()
        if want is not None:
            np.testing.assert_array_equal(out.numpy(), want)


def test_invalid_argument_error_is_an_op_error():
    assert issubclass(tf.errors.InvalidArgumentError, tf.errors.OpError)
    assert not issubclass(tf.errors.InvalidArgumentError, ValueError)        # as TensorFlow's


def test_variables_and_keras_tensors_are_strict_too():
    v = tf.Variable(1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a float tensor but is a half tensor"):
        v + _h()
    assert isinstance(v * 2.0, tf.Tensor) and isinstance(tf.keras.layers.Dense(1)(tf.ones((1, 2))), tf.Tensor)
    with pytest.raises(tf.errors.InvalidArgumentError, match="input #1.*expected to be a float tensor but is a half"):
        tf.keras.layers.Dense(1)(tf.ones((1, 2))) + _h()          # a Keras output on the left, tf's __radd__


def test_layers_still_autocast_under_mixed_precision():
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        class Scale(tf.keras.layers.Layer):
            def build(self, input_shape):
                self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

            def call(self, x):
                return x * self.w + tf.ones(x.shape[-1], dtype=tf.float16)   # w read as float16, as tf.keras's

        layer = Scale()
        out = layer(tf.ones((1, 2)))                 # a tf.Tensor, cast to float16 by the layer
        assert out.dtype == tf.float16
        np.testing.assert_array_equal(out.numpy(), [[2.0, 2.0]])
        with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a half tensor but is a float"):
            tf.ones(2, dtype=tf.float16) * layer.w   # outside a layer call the variable is float32
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")


def test_same_dtypes_still_compute():
    np.testing.assert_array_equal((_h() + _h()).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(tf.matmul(tf.ones((1, 2), tf.int32), tf.ones((2, 1), tf.int32)).numpy(), [[2]])
    assert (_h() * 2).dtype == tf.float16


@pytest.mark.parametrize("where", ["tf", "tf.math", "tf.nn", "tf.keras", "tf.keras.layers", "tf.keras.models",
                                   "tf.random", "tf.errors"])
def test_missing_tf_names_point_to_the_coverage(where):
    module = eval(where, {"tf": tf})
    with pytest.raises(AttributeError, match=r"no_such_thing is not part of minifp's TensorFlow face yet "
                                             r"\(what the face covers: docs/keras_coverage.md"):
        getattr(module, "no_such_thing")
    with pytest.raises(ImportError, match="no_such_thing is not part of minifp's TensorFlow face yet"):
        exec(f"from {module.__name__} import no_such_thing", {})

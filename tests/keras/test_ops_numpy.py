"""keras.ops's numpy part beyond the recorded cases: Keras 3's promotion table, and variables read in the compute
dtype inside a layer call under a mixed policy (Keras's autocast), with their gradients."""
import numpy as np
import pytest

from minifp import keras
from minifp.engine import gradients
from minifp.keras import ops


@pytest.mark.parametrize("dtypes, want", [
    (("int32", "float16"), "float16"), (("bfloat16", int), "bfloat16"), (("float16", "bfloat16"), "float32"),
    (("int8", "uint8"), "int16"), (("uint8", int), "uint8"), (("int32", float), "float32"), ((int, float), "float32"),
    ((int,), "int32"), (("bool", "bool"), "bool"), (("int64", "float16"), "float16"), (("uint32", "int8"), "int64"),
    (("uint64", "int8"), "float32"), (("float16", float), "float16"), ((), "float32"),
])
def test_result_type_is_keras_lattice(dtypes, want):
    assert ops.result_type(*dtypes) == want


class Scale(keras.layers.Layer):
    """x @ w + b, times mean(w): every op reads a variable."""

    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], 2), initializer="ones")
        self.b = self.add_weight(shape=(2,), initializer="zeros")

    def call(self, x):
        return ops.multiply(ops.add(ops.matmul(x, self.w), self.b), ops.mean(self.w))


def test_layer_call_reads_variables_in_the_compute_dtype():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = Scale()
        x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
        out = layer(x)
        assert out.dtype == "float16" and layer.w.dtype == "float32"
        np.testing.assert_array_equal(out.numpy(), (x @ np.ones((3, 2))).astype(np.float16))
        found = gradients([out], [layer.w, layer.b])
        assert set(found) == {id(layer.w), id(layer.b)}
        np.testing.assert_allclose(found[id(layer.b)], [2.0, 2.0])
        assert ops.mean(layer.w).dtype == "float32"     # outside a layer call a variable is read as it is
    finally:
        keras.mixed_precision.set_global_policy("float32")

"""Keras guide idioms: a custom Metric with add_variable state (a Variable with assign_add, read by result(), zeroed by
reset_state) through fit's history; a one-element output list unpacked as Keras unpacks it."""
import numpy as np

import minifp.torch as torch
from minifp import keras
from minifp.keras import layers, ops


class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(ops.cast(y_true, "int32") == ops.cast(y_pred, "int32"), "float32")
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives


def test_the_guides_custom_metric_counts_through_fit():
    # Both logits equal (kernel of ones): argmax 0 everywhere, and 3 of the 8 labels are 0. Keras 3.15 (torch
    # backend) prints {'categorical_true_positives': [3.0, 3.0], 'loss': [0.6931, 0.6931]} for this script.
    x = np.arange(16, dtype="float32").reshape(8, 2) / 10
    y = np.array([[0], [1], [0], [1], [1], [1], [0], [1]])
    model = keras.Sequential([keras.Input((2,)), layers.Dense(2, kernel_initializer="ones")])
    metric = CategoricalTruePositives()
    model.compile(optimizer=keras.optimizers.SGD(0.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=[metric])
    h = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert h.history["categorical_true_positives"] == [3.0, 3.0]
    assert [round(v, 4) for v in h.history["loss"]] == [0.6931, 0.6931]


def test_added_variables_are_listed_and_reset():
    m = keras.metrics.Metric(name="m")
    v = m.add_variable(shape=(2,), name="acc", initializer="ones")
    v.assign_add(np.array([1.0, 2.0], "float32"))
    assert np.asarray(v).tolist() == [2.0, 3.0] and any(w is v for w in m.variables)
    m.reset_state()
    assert np.asarray(v).tolist() == [0.0, 0.0]


def test_a_one_element_output_list_is_unpacked():
    # Keras's Functional.call ends with unpack_singleton: Model(inp, [out]) predicts an array, calls give a tensor
    inp = keras.Input((3,))
    model = keras.Model(inp, [layers.Dense(2, kernel_initializer="ones")(inp)])
    p = model.predict(np.ones((4, 3), "float32"), verbose=0)
    assert isinstance(p, np.ndarray) and p.shape == (4, 2) and p.tolist() == [[3.0, 3.0]] * 4
    assert tuple(model(np.ones((1, 3), "float32")).shape) == (1, 2)


def test_merge_layers_and_their_functional_forms():
    # The functional-API guide's layers.concatenate / add / ...: one layer each, folded left to right
    a, b = keras.Input((3,)), keras.Input((3,))
    x, y = np.array([[1., -2., 3.]], "float32"), np.array([[0.5, 4., -1.]], "float32")
    want = {"add": [[1.5, 2.0, 2.0]], "multiply": [[0.5, -8.0, -3.0]], "subtract": [[0.5, -6.0, 4.0]],
            "average": [[0.75, 1.0, 1.0]], "maximum": [[1.0, 4.0, 3.0]], "minimum": [[0.5, -2.0, -1.0]],
            "concatenate": [[1.0, -2.0, 3.0, 0.5, 4.0, -1.0]]}
    for name, values in want.items():
        model = keras.Model([a, b], getattr(layers, name)([a, b]))
        assert model.predict([x, y], verbose=0).tolist() == values, name
    with np.testing.assert_raises_regex(ValueError, "A `Subtract` layer should be called on exactly 2 inputs"):
        layers.Subtract()([a, b, a])


def test_keras_config_is_the_global_settings():
    assert keras.config.floatx() == "float32" and keras.config.epsilon() == 1e-7
    assert keras.config.image_data_format() == "channels_last" and keras.config.dtype_policy().name == "float32"
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        assert keras.mixed_precision.global_policy().name == "mixed_bfloat16"
        assert layers.Dense(2).compute_dtype == "bfloat16"
    finally:
        keras.config.set_dtype_policy("float32")


def test_the_torch_guides_train_step_with_zero_grad():
    # Keras's "Customizing fit() with PyTorch" guide: zero_grad, backward, optimizer.apply on v.value.grad
    class CustomModel(keras.Model):
        def train_step(self, data):
            x, y = data
            self.zero_grad()
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            loss.backward()
            weights = list(self.trainable_weights)
            with torch.no_grad():
                self.optimizer.apply([v.value.grad for v in weights], weights)
            for metric in self.metrics:
                metric.update_state(loss) if metric.name == "loss" else metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    def history(model_class):
        inputs = keras.Input(shape=(4,))
        model = model_class(inputs, layers.Dense(1, kernel_initializer="ones")(inputs))
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
        x = np.linspace(-1, 1, 32, dtype="float32").reshape(8, 4)
        # (unshuffled: a shuffle draws from the global stream, and the batch's order changes the float32 sums' last bit)
        return model.fit(x, x.sum(1, keepdims=True) * 0.5, epochs=3, batch_size=8, shuffle=False, verbose=0).history

    # Without zero_grad the gradients would pile up across steps and the losses part from fit's own train_step's.
    custom, builtin = history(CustomModel), history(keras.Model)
    assert custom["loss"] == builtin["loss"] and custom["mae"] == builtin["mae"]
    model = keras.Sequential([keras.Input((2,)), layers.Dense(1)])
    model(np.ones((1, 2), "float32")).sum().backward()
    assert all(v.grad is not None for v in model.trainable_weights)
    model.zero_grad()
    assert all(v.grad is None for v in model.trainable_weights)


def test_floor_division_and_remainder_keep_keras_dtypes():
    i = keras.ops.convert_to_tensor(np.array([1, 2, 7], "int32"))
    f = keras.ops.convert_to_tensor(np.array([1.0, 2.0, 7.5], "float32"))
    assert (i // 2).dtype == "int32" and (i // 2).numpy().tolist() == [0, 1, 3]
    assert (7 // i).numpy().tolist() == [7, 3, 1] and (f % 2).numpy().tolist() == [1.0, 0.0, 1.5]


def test_utils_clear_session_restarts_the_names():
    keras.layers.Dense(2), keras.layers.Dense(2)
    keras.utils.clear_session()
    assert keras.layers.Dense(2).name == "dense"

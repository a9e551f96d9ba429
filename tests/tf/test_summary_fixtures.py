"""minifp.tf.keras's model.summary() against the text tf-keras 2.21 printed for the same models
(tests/fixtures/keras/summary.json, faces -> tf_keras), and its arguments as tf-keras takes them."""
import json
from pathlib import Path

import numpy as np
import pytest

import minifp.tf as tf

keras = tf.keras
layers = tf.keras.layers
SUMMARY = json.loads((Path(__file__).parents[1] / "fixtures" / "keras" / "summary.json").read_text())
RECORDED = SUMMARY["faces"]["tf_keras"]


def _printed(model, **kwargs):
    lines = []
    model.summary(print_fn=lines.append, **kwargs)
    return "\n".join(lines)


def _guide_model(units):
    """The TensorFlow mixed-precision guide's model, as tools/record_keras.py built it (compiled)."""
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        inputs = keras.Input(shape=(784,), name="digits")
        x = layers.Dense(units, activation="relu", name="dense_1")(inputs)
        x = layers.Dense(units, activation="relu", name="dense_2")(x)
        x = layers.Dense(10, name="dense_logits")(x)
        outputs = layers.Activation("softmax", dtype="float32", name="predictions")(x)
        model = keras.Model(inputs=inputs, outputs=outputs)
        model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.RMSprop(),
                      metrics=["accuracy"])
        return model
    finally:
        keras.mixed_precision.set_global_policy("float32")


def _small_cnn():
    keras.backend.clear_session()
    return keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(8, 3, activation="relu"), layers.MaxPooling2D(),
                             layers.Conv2D(filters=16, kernel_size=3, strides=2, padding="same"),
                             layers.BatchNormalization(), layers.Flatten(), layers.Dropout(0.5),
                             layers.Dense(10, activation="softmax")])


@pytest.mark.parametrize("units", [4096, 64])
def test_guide_model_summary_is_tf_keras_text(units):
    assert _printed(_guide_model(units)) == RECORDED[f"guide_{units}"]["summary"]


def test_small_cnn_summary_is_tf_keras_text():
    assert _printed(_small_cnn()) == RECORDED["small_cnn"]["summary"]


def test_default_print_fn_prints_the_same_lines(capsys):
    model = _small_cnn()
    model.summary()
    assert capsys.readouterr().out == RECORDED["small_cnn"]["summary"] + "\n"


def _cells(text, ends):
    """Each layer's cells in a printed table, the pieces of each cell's lines joined (spaces dropped)."""
    lines = text.split("\n")
    body = lines[lines.index("=" * ends[-1]) + 1:]
    body = body[:body.index("=" * ends[-1])]
    rows, current = [], []
    for line in body + [" " * ends[-1]]:
        if not line.strip():
            if current:
                rows.append(["".join(piece).replace(" ", "") for piece in zip(*current)])
            current = []
            continue
        current.append([line[start:end] for start, end in zip([0] + ends[:-1], ends)])
    return rows


@pytest.mark.parametrize("key", ["mobilenetv2_notop", "mobilenetv2_top10"])
def test_mobilenetv2_summary_rows_are_tf_keras_layers(key):
    """tf-keras's rows for MobileNetV2 (recorded as [name, class, output shape]) in the layout of a graph that is
    not a chain: 98 characters, columns ending at 29, 58, 68, 98, "Connected to" lists."""
    record = RECORDED[key]
    keras.backend.clear_session()
    model = keras.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None, **record["kwargs"])
    text = _printed(model)
    lines = text.split("\n")
    assert lines[:4] == [f'Model: "{record["name"]}"', "_" * 98,
                         " Layer (type)                Output Shape                 Param #   Connected to"
                         + " " * 18, "=" * 98]
    assert all(len(line) == 98 for line in lines[1:-4])
    rows = _cells(text, [29, 58, 68, 98])
    expected = []
    for name, cls, shape in record["layers"]:
        shape = tuple(shape)
        expected.append([f"{name}({cls})", str([shape] if cls == "InputLayer" else shape).replace(" ", "")])
    assert [row[:2] for row in rows] == expected
    assert sum(int(row[2]) for row in rows) == record["counts"]["total"]
    assert rows[0][3] == "[]" and rows[1][3] == "['input_1[0][0]']"
    counts = record["counts"]
    mb = 4 / 1024 ** 2
    assert lines[-4:] == [f"Total params: {counts['total']} ({counts['total'] * mb:.2f} MB)",
                          f"Trainable params: {counts['trainable']} ({counts['trainable'] * mb:.2f} MB)",
                          f"Non-trainable params: {counts['non_trainable']} (133.25 KB)", "_" * 98]


def test_models_are_named_as_tf_keras_names_them():
    keras.backend.clear_session()
    inputs = keras.Input((3,))
    outputs = layers.Dense(2)(inputs)
    assert [keras.Model(inputs, outputs).name, keras.Model(inputs, outputs).name] == ["model", "model_1"]
    assert [keras.Sequential().name, keras.Sequential().name] == ["sequential", "sequential_1"]
    assert inputs._keras_history[0].name == "input_1" and keras.Input((3,))._keras_history[0].name == "input_2"
    assert _guide_model(64).name == "model"


def test_show_trainable_line_length_and_positions():
    model = _small_cnn()
    model.layers[0].trainable = False
    lines = _printed(model, show_trainable=True).split("\n")
    assert lines[1] == "_" * 76
    assert lines[2] == " Layer (type)                Output Shape              Param #   Trainable  "
    assert lines[4] == " conv2d (Conv2D)             (None, 26, 26, 8)         80        N          "
    assert lines[6:8] == [" max_pooling2d (MaxPooling2  (None, 13, 13, 8)         0         Y          ",
                          " D)" + " " * 73]
    lines = _printed(model, line_length=40, positions=[20, 32, 40]).split("\n")
    assert lines[2:7] == [" Layer (type)       Output Sh   Param # ", " " * 20 + "ape" + " " * 17, "=" * 40,
                          " conv2d (Conv2D)    (None, 26   80      ", " " * 20 + ", 26, 8)" + " " * 12]
    assert _printed(model, line_length=40, positions=[0.5, 0.8, 1.0]) == _printed(model, line_length=40,
                                                                                 positions=[20, 32, 40])


def test_layer_range_and_connections_of_a_branching_graph():
    keras.backend.clear_session()
    a, b = keras.Input((3,)), keras.Input((4,), name="b")
    x = layers.Concatenate()([a, b])
    model = keras.Model([a, b], [layers.Dense(2, name="y1")(x), layers.Dense(5, name="y2")(x)])
    lines = _printed(model).split("\n")
    assert lines[2] == " Layer (type)                Output Shape                 Param #   Connected to" + " " * 18
    assert lines[8:10] == [" concatenate (Concatenate)   (None, 7)                    0         ['input_1[0][0]',"
                           + " " * 13, " " * 69 + "'b[0][0]']" + " " * 19]
    assert lines[11].startswith(" y1 (Dense)                  (None, 2)                    16        "
                                "['concatenate[0][0]']")
    ranged = _printed(model, layer_range=["conc", "y1"]).split("\n")
    assert [line.split()[0] for line in ranged[4:-6] if line.strip()] == ["concatenate", "'b[0][0]']", "y1"]
    assert _printed(model, layer_range=["y1", "conc"]) == _printed(model, layer_range=["conc", "y1"])


def test_subclassed_model_shows_multiple_and_unused_layers():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden, self.out, self.spare = layers.Dense(4), layers.Dense(2), layers.Dense(3)

        def call(self, x):
            return self.out(self.hidden(x))

    keras.backend.clear_session()
    model = Net()
    with pytest.raises(ValueError, match="This model has not yet been built"):
        model.summary()
    model(np.zeros((2, 3), np.float32))
    lines = _printed(model).split("\n")
    assert lines[0] == 'Model: "net"'
    assert lines[4] == " dense (Dense)               multiple                  16        "
    assert lines[8] == " dense_2 (Dense)             multiple                  0 (unused)"


def test_expand_nested_draws_the_inner_model():
    keras.backend.clear_session()
    inner = keras.Sequential([keras.Input((3,)), layers.Dense(4), layers.Dense(2)], name="inner")
    model = keras.Sequential([keras.Input((3,)), inner, layers.Dense(1)])
    lines = _printed(model, expand_nested=True).split("\n")
    assert lines[4:11] == [" inner (Sequential)          (None, 2)                 26        ",
                           "|" + "¯" * 63 + "|",
                           "| dense (Dense)              (None, 4)                 16       |",
                           "|" + " " * 63 + "|",
                           "| dense_1 (Dense)            (None, 2)                 10       |",
                           "¯" * 65,
                           " " * 65]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"line_length": 0}, ValueError, "line_length must be a positive integer"),
    ({"line_length": "wide"}, ValueError, "line_length must be a positive integer"),
    ({"positions": [0.5, 1.0]}, ValueError, "one entry per column"),
    ({"positions": "0.5"}, ValueError, "positions must be a list of numbers"),
    ({"line_length": 8}, ValueError, "Insufficient line_length"),
    ({"positions": [30, 29, 65]}, ValueError, "Insufficient line_length"),
    ({"layer_range": ["conv2d"]}, ValueError, "layer_range must be a list or tuple of length 2"),
    ({"layer_range": ["conv2d", 3]}, ValueError, "layer_range should contain string type only"),
    ({"layer_range": ["conv2d", "nothing"]}, ValueError, "Passed layer_names do not match"),
    ({"print_fn": "stdout"}, TypeError, "print_fn must be callable"),
])
def test_bad_arguments_raise_clear_errors(kwargs, error, match):
    model = _small_cnn()
    with pytest.raises(error, match=match):
        model.summary(**kwargs)


def test_unbuilt_sequential_raises_as_tf_keras():
    with pytest.raises(ValueError, match=r"This model has not yet been built\. Build the model first by calling "
                                         r"`build\(\)` or by calling the model on a batch of data\."):
        keras.Sequential([layers.Dense(2)]).summary()

"""Record what Keras 3 does with ops on KerasTensors in functional models (`inputs / 255.0`, ops.mean(x, axis=1),
x[:, 0], activations on symbolic tensors) and with inputs of unknown lengths into tests/fixtures/keras/symbolic_ops.json: the outputs' shapes and
dtypes, model.layers, the summary, predictions and a short fit's losses. tests/keras/test_symbolic_ops.py runs the
same CASES through minifp.keras.

Run by hand with a real Keras 3 on the torch backend (not the project's environment):
    KERAS_BACKEND=torch python tools/record_keras_symbolic.py
"""
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ["COLUMNS"] = "200"       # Keras 3's summary narrows its table to the terminal
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "symbolic_ops.json"


def summary_text(model):
    lines = []
    model.summary(print_fn=lambda *a, **k: lines.append(a[0] if a else ""))
    return "\n".join(lines)


def values(x):
    """float32 values as lists (float32 printed shortest, which round-trips)."""
    return np.asarray(x, np.float32).tolist()


def mixed(keras):
    """Arithmetic, keras.ops and an activation on symbolic tensors around a Dense layer; two outputs."""
    ops, layers = keras.ops, keras.layers
    inputs = keras.Input(shape=(5, 4))
    x = inputs / 255.0
    x = ops.mean(x, axis=1) * 2.0 + 1.0
    y = ops.concatenate([x, ops.max(inputs, axis=1)], axis=-1)
    z = layers.Dense(3, kernel_initializer="ones", bias_initializer="zeros")(y)
    first = z[:, 0]
    z2 = keras.activations.relu(first - 150.0)
    model = keras.Model(inputs, [first, z2])
    data = (np.arange(40, dtype="float32").reshape(2, 5, 4) * 0.37) ** 1.5
    return {"shapes": [list(t.shape) for t in (x, y, z, first, z2)], "layers": [l.name for l in model.layers],
            "summary": summary_text(model), "predict": [values(p) for p in model.predict(data, verbose=0)]}


def dtypes(keras):
    """Keras's dtype rules on symbolic uint8 and int32 inputs."""
    ops = keras.ops
    a, b = keras.Input((3,), dtype="uint8"), keras.Input((3,), dtype="int32")
    found = {"a / 255": a / 255, "a + 1": a + 1, "-a": -a, "abs(a)": abs(a), "2 * a": 2 * a, "a > 3": a > 3,
             "a * 1.5": a * 1.5, "b // 2": b // 2, "b % 2": b % 2, "b ** 2": b ** 2, "a + b": a + b,
             "ops.cast(a, 'float16')": ops.cast(a, "float16"), "ops.sqrt(b)": ops.sqrt(b)}
    model = keras.Model(a, a / 255)
    return {"found": {k: [str(v.dtype), list(v.shape)] for k, v in found.items()},
            "call": values(model(np.array([[255, 0, 51]], "uint8")))}


def shapes(keras):
    """Reshapes, slices and reductions on symbolic tensors with an unknown batch."""
    ops = keras.ops
    t = keras.Input(shape=(5, 4))
    found = {"ops.reshape(t, (-1, 20))": ops.reshape(t, (-1, 20)), "ops.expand_dims(t, -1)": ops.expand_dims(t, -1),
             "t[:, 1:3]": t[:, 1:3], "t[..., 0]": t[..., 0], "ops.sum(t, axis=(1, 2))": ops.sum(t, axis=(1, 2)),
             "ops.transpose(t, (0, 2, 1))": ops.transpose(t, (0, 2, 1)), "ops.softmax(t)": ops.softmax(t),
             "ops.mean(t, axis=0)": ops.mean(t, axis=0)}
    return {"found": {k: list(v.shape) for k, v in found.items()}, "ops.shape(t)": list(ops.shape(t))}


def fit(keras):
    """A model scaling its input by an op, trained three epochs with SGD: the ops carry the gradient."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    x = keras.ops.tanh(inputs * 0.5 - 0.25)
    out = keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")(x)
    model = keras.Model(inputs, out + 1.0)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    data = np.linspace(-1, 1, 32, dtype="float32").reshape(8, 4)
    target = data.sum(axis=1, keepdims=True) * 0.5
    history = model.fit(data, target, epochs=3, batch_size=4, shuffle=False, verbose=0)
    return {"loss": values(history.history["loss"]), "weights": [values(w) for w in model.get_weights()]}


def variable_length(keras):
    """Inputs with unknown lengths or sides: embeddings with masks into recurrent layers, convolutions, pooling,
    attention (the "text classification from scratch" and "masking and padding" guides' models)."""
    layers = keras.layers
    tokens = keras.Input(shape=(None,), dtype="int32")
    embedded = layers.Embedding(input_dim=50, output_dim=16, mask_zero=True)(tokens)
    last = layers.LSTM(8)(embedded)
    masked = keras.Model(tokens, last)
    images = keras.Input((None, None, 3))
    conv = layers.Conv2D(8, 3)(images)
    text = keras.Input((None,), dtype="int64")
    x = layers.Conv1D(16, 7, strides=3, padding="valid")(layers.Embedding(100, 16)(text))
    x = layers.GlobalMaxPooling1D()(layers.Conv1D(16, 7, strides=3)(x))
    classifier = keras.Model(text, layers.Dense(1)(x))
    seq = keras.Input((None, 4))
    recurrent = layers.LSTM(5, return_sequences=True)(seq)
    found = {"embedded": embedded, "last": last, "conv": conv, "pooled": layers.MaxPooling2D()(conv),
             "global": layers.GlobalAveragePooling2D()(conv), "text": x, "recurrent": recurrent,
             "bidirectional": layers.Bidirectional(layers.GRU(3))(recurrent),
             "attention": layers.MultiHeadAttention(2, 4)(seq, seq), "dense": layers.Dense(3)(seq)}
    return {"shapes": {k: list(v.shape) for k, v in found.items()},
            "predict": [list(masked.predict(np.array([[1, 2, 0, 0]]), verbose=0).shape),
                        list(classifier.predict(np.ones((2, 50), "int64"), verbose=0).shape)]}


CASES = {"mixed": mixed, "dtypes": dtypes, "shapes": shapes, "fit": fit, "variable_length": variable_length}


def run(keras):
    """{case: what it gives, or {"error": [type, message]}} under the given Keras module."""
    out = {}
    for name, case in CASES.items():
        keras.backend.clear_session()
        try:
            out[name] = case(keras)
        except Exception as e:      # noqa: BLE001 (every exception is what is recorded)
            out[name] = {"error": [type(e).__name__, str(e).splitlines()[0]]}
    return out


def main():
    import keras
    got = run(keras)
    OUT.write_text(json.dumps({"keras": keras.__version__, "backend": keras.backend.backend(), "cases": got},
                              indent=1) + "\n")
    print(f"{OUT}: {len(got)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()

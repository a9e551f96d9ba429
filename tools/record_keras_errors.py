"""Record what Keras 3 raises for bad input that tutorial scripts commonly hit (Input shapes, Embedding sizes,
pooling windows and strides, layers called on what is no tensor, compile's metrics, functional models whose
outputs miss their inputs), into tests/fixtures/keras/errors_more.json: {snippet: [exception type, message] or
["ok", null]}, the message the first line of the error (inside Keras's "Exception encountered when calling"
wrapper, which minifp does not add). tests/keras/test_errors_more.py runs the same snippets through minifp.keras.

Run by hand with a real Keras 3 (any backend: these refusals are Keras's own; torch's is enough):
KERAS_BACKEND=torch python tools/record_keras_errors.py
"""
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "errors_more.json"
MODEL = "m = keras.Sequential([keras.Input((4,)), layers.Dense(2)]); "
TWO = "a = keras.Input((4,)); b = keras.Input((4,)); "

# Every snippet sees keras, layers and np.
CASES = [
    "keras.Input(shape=4)", "keras.Input(shape=(-1,))", "keras.Input(shape=(2.5,))", "keras.Input(shape=('a',))",
    "keras.Input(batch_shape=(None, -2))", "assert keras.Input([3, None]).shape == (None, 3, None)",
    "layers.Embedding(0, 4)", "layers.Embedding(10, 0)", "layers.Embedding(10, -1)", "layers.Embedding(2.5, 4)",
    "layers.Embedding('10', 4)",
    "layers.MaxPooling2D(pool_size=5)(keras.Input((3, 3, 1)))",
    "layers.MaxPooling2D(strides=0)(np.zeros((1, 4, 4, 1), 'float32'))", "layers.AveragePooling2D()",
    "assert layers.AveragePooling2D(2)(keras.Input((4, 4, 1))).shape == (None, 2, 2, 1)",
    "layers.Flatten(data_format='foo')", "layers.LayerNormalization(axis='a')",
    "keras.Sequential([layers.Dense(2)], name='s').count_params()",
    "layers.Dense(4)('abc')", "layers.Dense(2)([[1.0, 2.0]])", "layers.Dense(2, name='d')(None)", "layers.Dense(2)()",
    "layers.Conv2D(2, 3)('abc')", "assert layers.Dense(2)(inputs=np.zeros((1, 3), 'float32')).shape == (1, 2)",
    "assert layers.Flatten()(inputs=np.zeros((1, 2, 3), 'float32'), training=True).shape == (1, 6)",
    "assert layers.MaxPooling2D(2)(keras.Input((None, None, 3))).shape == (None, None, None, 3)",
    "i = keras.Input((4,)); x = i\nfor _ in range(400): x = layers.Dense(4)(x)\nkeras.Model(i, x)",
    MODEL + "m.compile(optimizer='adam', loss='mse', metrics='accuracy')",
    MODEL + "m.compile(optimizer='adam', loss='mse', weighted_metrics='mae')",
    TWO + "keras.Model(inputs=a, outputs=layers.Dense(2)(b))",
    TWO + "keras.Model(inputs=a, outputs=[layers.Dense(2)(a), layers.Dense(2)(b)])",
    TWO + "keras.Model(inputs=a, outputs={'x': layers.Dense(2)(b)})",
    TWO + "keras.Model(inputs=a, outputs=layers.Add()([layers.Dense(4)(a), b]))",
    TWO + "keras.Model(inputs=a, outputs=[layers.Dense(2)(a), {'y': layers.Dense(2)(b)}])",
]


def first_line(error):
    """The error's first line, or the bold one inside Keras's call() wrapper."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("Exception encountered when calling") and len(lines) > 1:
        return lines[1]
    return lines[0] if lines else ""


def run(keras, layers, np):
    """{snippet: [type name, first message line] or ["ok", None]} under the given modules."""
    out = {}
    for case in CASES:
        try:
            exec(case, {"keras": keras, "layers": layers, "np": np})
            out[case] = ["ok", None]
        except Exception as e:      # noqa: BLE001 (every exception is what is recorded)
            out[case] = [type(e).__name__, first_line(e)]
    return out


def main():
    import warnings

    import keras
    import numpy as np
    warnings.simplefilter("ignore")
    got = run(keras, keras.layers, np)
    OUT.write_text(json.dumps({"keras": keras.__version__, "backend": keras.backend.backend(), "cases": got},
                              indent=1) + "\n")
    print(f"{OUT}: {len(got)} cases ({sum(v[0] != 'ok' for v in got.values())} raise)", file=sys.stderr)


if __name__ == "__main__":
    main()

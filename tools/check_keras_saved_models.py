"""Check that `.keras` files minifp writes load in real Keras 3 with the same predictions.

Run by hand from the repository root, first with minifp's venv, then with a Keras 3 venv (torch backend):

    .venv/bin/python tools/check_keras_saved_models.py write /tmp/minifp_keras
    KERAS_BACKEND=torch /work/torchenv/bin/python tools/check_keras_saved_models.py check /tmp/minifp_keras

`write` builds a few models in minifp (Sequential Dense/BatchNormalization/Dropout, a two-input functional
model with Concatenate, a Conv2D CNN, models nested in a Sequential), trains each a step so weights and moving statistics move, saves them
with model.save and records minifp's predictions; `check` loads each with keras.models.load_model (compile=True)
and prints the largest difference from minifp's predictions (float32 on both sides: a few ulps at most).
"""
import json
import os
import sys

import numpy as np

TOLERANCE = 1e-5        # float32 both sides; sums in different orders differ by a few ulps


def build(keras):
    """name -> (model, inputs, targets)."""
    rng = np.random.default_rng(0)
    keras.utils.set_random_seed(4)
    seq = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                            keras.layers.BatchNormalization(), keras.layers.Dropout(0.25),
                            keras.layers.Dense(3, activation="softmax")], name="seq")
    seq.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                metrics=["accuracy"])
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    x = keras.layers.Concatenate()([keras.layers.Dense(5, activation="tanh")(a), b])
    two = keras.Model([a, b], keras.layers.Dense(2, name="head")(x), name="two_inputs")
    two.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    cnn = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3, activation="relu"),
                            keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dense(2)])
    cnn.compile(optimizer="rmsprop", loss=keras.losses.CategoricalCrossentropy(from_logits=True))
    inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    p = keras.Input((2,))
    nested = keras.Sequential([keras.Input((4,)), inner, keras.Model(p, keras.layers.Dense(3)(p)),
                               keras.layers.Dense(1)])
    nested.compile(optimizer="adam", loss="mae")
    f32 = lambda *s: rng.normal(size=s).astype("float32")       # noqa: E731
    return {"sequential": (seq, [f32(8, 6)], np.arange(8) % 3),
            "two_inputs": (two, [f32(4, 4), f32(4, 3)], f32(4, 2)),
            "cnn": (cnn, [f32(2, 8, 8, 1)], np.eye(2, dtype="float32")),
            "nested": (nested, [f32(3, 4)], f32(3, 1))}


def one(xs):
    return xs if len(xs) > 1 else xs[0]


def write(folder):
    import minifp.keras as keras
    os.makedirs(folder, exist_ok=True)
    record = {}
    for name, (model, xs, y) in build(keras).items():
        model.fit(one(xs), y, epochs=1, verbose=0)
        model.save(os.path.join(folder, f"{name}.keras"))
        record[name] = {"inputs": [x.tolist() for x in xs],
                        "predictions": np.asarray(model.predict(one(xs), verbose=0)).tolist()}
    with open(os.path.join(folder, "predictions.json"), "w") as f:
        json.dump(record, f)


def check(folder):
    import keras
    with open(os.path.join(folder, "predictions.json")) as f:
        record = json.load(f)
    worst = 0.0
    for name, r in record.items():
        model = keras.models.load_model(os.path.join(folder, f"{name}.keras"))
        xs = [np.array(x, dtype="float32") for x in r["inputs"]]
        diff = float(np.abs(np.asarray(model.predict(one(xs), verbose=0)) - np.array(r["predictions"])).max())
        print(f"{name}: {type(model).__name__}, optimizer {type(model.optimizer).__name__}, loss {model.loss!r}, "
              f"max |keras - minifp| = {diff:.3g}")
        worst = max(worst, diff)
    print("OK" if worst <= TOLERANCE else f"FAIL: {worst} > {TOLERANCE}")
    return worst <= TOLERANCE


if __name__ == "__main__":
    mode, folder = sys.argv[1], sys.argv[2]
    if mode == "write":
        write(folder)
    else:
        sys.exit(0 if check(folder) else 1)

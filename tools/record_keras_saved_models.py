"""Record small `.keras` files written by real Keras 3 into tests/fixtures/keras/saved_models/, with inputs and
Keras's predictions in predictions.json, for tests/keras/test_keras_files.py.

Run by hand from the repository root with a Keras 3 venv (the torch backend is enough; no TensorFlow needed):

    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_saved_models.py
"""
import json
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")
import keras  # noqa: E402
import numpy as np  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "keras" / "saved_models"


def sequential():
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.BatchNormalization(), keras.layers.Dropout(0.25),
                              keras.layers.Dense(3, activation="softmax")], name="seq")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(16, 6)).astype("float32")
    model.fit(x, np.arange(16) % 3, epochs=1, batch_size=8, verbose=0)   # moving stats away from 0/1
    return model, [x[:4]]


def two_inputs():
    keras.utils.set_random_seed(2)
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    x = keras.layers.Concatenate()([keras.layers.Dense(5, activation="tanh")(a), b])
    out = keras.layers.Dense(2, name="head")(x)
    model = keras.Model([a, b], out, name="two_inputs")
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    rng = np.random.default_rng(1)
    return model, [rng.normal(size=(3, 4)).astype("float32"), rng.normal(size=(3, 3)).astype("float32")]


def cnn():
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3, activation="relu"),
                              keras.layers.MaxPooling2D(2), keras.layers.Flatten(),
                              keras.layers.Dense(2)], name="cnn")
    model.compile(optimizer="rmsprop", loss=keras.losses.CategoricalCrossentropy(from_logits=True))
    return model, [np.random.default_rng(2).normal(size=(2, 8, 8, 1)).astype("float32")]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    record = {"keras_version": keras.__version__, "backend": keras.backend.backend(), "models": {}}
    for make in (sequential, two_inputs, cnn):
        model, inputs = make()
        model.save(OUT / f"{make.__name__}.keras")
        pred = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
        record["models"][make.__name__] = {"inputs": [x.tolist() for x in inputs],
                                           "predictions": np.asarray(pred).tolist()}
    (OUT / "predictions.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()

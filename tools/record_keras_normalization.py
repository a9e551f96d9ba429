"""Record what Keras 3's layers.Normalization does (adapt over arrays and batches, given mean and variance, invert,
the kept axes, its weights and config, its errors) into tests/fixtures/keras/normalization.json.
tests/keras/test_normalization_layer.py runs the same CASES through minifp.keras.

Run by hand with a real Keras 3 (not the project's environment):
    KERAS_BACKEND=torch python tools/record_keras_normalization.py
"""
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "normalization.json"

_rng = np.random.default_rng(0)
DATA = (_rng.normal(3, 2, (40, 4, 3)) ** 2).astype("float32")     # uneven features, three axes
DOC = np.array([[0., 7., 4.], [2., 9., 6.], [0., 7., 4.], [2., 9., 6.]], "float32")


def adapted(keras, data, call, **kwargs):
    layer = keras.layers.Normalization(**kwargs)
    layer.adapt(data)
    return layer, np.asarray(layer(call))


def result(layer, out):
    """The output, and every weight's name, shape and values (float32 values as lists)."""
    return {"out": np.asarray(out, np.float32).tolist(),
            "weights": [[w.name, list(w.shape), np.asarray(w).tolist()] for w in layer.weights]}


CASES = {
    "doc_axis_none": lambda k: result(*adapted(k, np.array([1., 2., 3., 4., 5.], "float32"),
                                                np.array([1., 2., 3.], "float32"), axis=None)),
    "doc_last_axis": lambda k: result(*adapted(k, DOC, DOC[:1])),
    "doc_invert": lambda k: result(*adapted(k, DOC, np.array([[1., 2., 3.]], "float32"), invert=True)),
    "given_scalar": lambda k: result(k.layers.Normalization(mean=3., variance=2.),
                                     k.layers.Normalization(mean=3., variance=2.)(np.array([[1.], [2.], [3.]],
                                                                                             "float32"))),
    "given_vector": lambda k: (lambda l: result(l, l(DATA[:2])))(
        k.layers.Normalization(mean=[1., 2., 3.], variance=[4., 0., 9.])),
    "given_invert_axis1": lambda k: (lambda l: result(l, l(DATA[:2])))(
        k.layers.Normalization(axis=1, mean=[1., 2., 3., 4.], variance=[1., 4., 9., 16.], invert=True)),
    "adapt_3d_last": lambda k: result(*adapted(k, DATA, DATA[:2])),
    "adapt_3d_axis1": lambda k: result(*adapted(k, DATA, DATA[:2], axis=1)),
    "adapt_3d_axes12": lambda k: result(*adapted(k, DATA, DATA[:2], axis=(1, 2))),
    "adapt_3d_none": lambda k: result(*adapted(k, DATA, DATA[:2], axis=None)),
    "adapt_float64": lambda k: result(*adapted(k, DATA.astype("float64"), DATA[:2])),
    "config": lambda k: {key: v for key, v in k.layers.Normalization(axis=(1, 2), mean=1., variance=2.,
                                                                      name="norm").get_config().items()
                         if key != "dtype"},
    "in_a_model": lambda k: (lambda l: (lambda m: {"predict": m.predict(DATA[:3, 0], verbose=0).tolist(),
                                                   "count_params": m.count_params()})(
        k.Sequential([k.Input((3,)), l, k.layers.Dense(1, kernel_initializer="ones")])))(
        adapted(k, DATA[:, 0], DATA[:1, 0])[0]),
    "error_mean_only": lambda k: k.layers.Normalization(mean=1.0),
    "error_shapes": lambda k: k.layers.Normalization(mean=[1., 2.], variance=1.0),
    "error_rank": lambda k: k.layers.Normalization(mean=[[1.]], variance=[[1.]]),
    "error_axis": lambda k: k.layers.Normalization(axis=3).adapt(DATA),
    "error_unknown_kept_axis": lambda k: k.layers.Normalization(axis=1).build((None, None)),
    "error_adapt_other_shape": lambda k: adapted(k, DATA, DATA[:2])[0].adapt(DATA[:, :, :2]),
}


def run(keras):
    """{case: what it gives, or {"error": [type, message]}} under the given Keras module."""
    out = {}
    for name, case in CASES.items():
        try:
            got = case(keras)
            out[name] = got if isinstance(got, dict) else {"ok": True}
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

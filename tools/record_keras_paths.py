"""Record real Keras 3's variable paths (the name scopes they were made under) into tests/fixtures/keras/paths.json.

    KERAS_BACKEND=torch python tools/record_keras_paths.py      # in an environment with Keras 3 (not minifp's)

Each case builds models with a fresh session and lists the paths of their variables (and of an optimizer's);
tests/keras/test_paths.py runs the same cases through minifp.keras.
"""
import json
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), os.pardir, "tests", "fixtures", "keras", "paths.json")


def _zeros(*shape):
    return np.zeros(shape, "float32")


def _paths(*holders):
    return [v.path for h in holders for v in h.weights]


def sequential_built(keras):
    m = keras.Sequential([keras.layers.Dense(2), keras.layers.Dense(1)])
    m.build((None, 3))
    return _paths(m) + [m.layers[0].path]


def sequential_with_input(keras):
    return _paths(keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]))


def sequential_called(keras):
    m = keras.Sequential([keras.layers.Dense(2)])
    m(_zeros(1, 3))
    return _paths(m)


def functional(keras):
    i = keras.Input((3,))
    return _paths(keras.Model(i, keras.layers.Dense(2)(i)))


def subclassed(keras):
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(2)

        def call(self, x):
            return self.d(x)
    m = Net()
    m(_zeros(1, 3))
    return _paths(m)


def custom_layer_in_sequential(keras):
    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.d = keras.layers.Dense(2)

        def build(self, shape):
            self.w = self.add_weight(shape=(2,), name="w")

        def call(self, x):
            return self.d(x) + self.w
    m = keras.Sequential([Block()])
    m(_zeros(1, 3))
    return _paths(m) + [m.layers[0].d.path]


def recurrent(keras):
    lstm = keras.layers.LSTM(4)
    lstm(_zeros(2, 3, 5))
    bidi = keras.layers.Bidirectional(keras.layers.GRU(2))
    bidi(_zeros(2, 3, 5))
    return _paths(lstm, bidi)


def attention_and_wrappers(keras):
    mha = keras.layers.MultiHeadAttention(2, 4)
    mha(_zeros(2, 3, 8), _zeros(2, 3, 8))
    td = keras.layers.TimeDistributed(keras.layers.Dense(2))
    td(_zeros(2, 3, 5))
    return _paths(mha, td)


def nested_and_shared(keras):
    inner = keras.Sequential([keras.layers.Dense(3)])
    outer = keras.Sequential([inner, keras.layers.Dense(1)])
    outer.build((None, 4))
    shared = keras.layers.Dense(2)
    first = keras.Sequential([shared])
    first.build((None, 3))
    second = keras.Sequential([shared, keras.layers.Dense(1)])
    second.build((None, 3))         # the shared layer keeps the path it was first built under
    return _paths(outer, second)


def functional_inside_sequential(keras):
    i = keras.Input((3,))
    f = keras.Model(i, keras.layers.Dense(2)(i))
    m = keras.Sequential([f, keras.layers.Dense(1)])
    m.build((None, 3))
    return _paths(m)


def optimizer_slots_after_fit(keras):
    m = keras.Sequential([keras.layers.Dense(2), keras.layers.BatchNormalization()])
    m.compile("adam", "mse")
    m.fit(_zeros(4, 3), _zeros(4, 2), verbose=0)
    return _paths(m) + [v.path for v in m.optimizer.variables]


def name_scopes(keras):
    with keras.name_scope("outer"):
        v = keras.Variable(_zeros(2), name="v")
        with keras.name_scope("inner"):
            w = keras.Variable(_zeros(2), name="w")
        d = keras.layers.Dense(2)
        d.build((None, 3))
    free = keras.Variable(_zeros(2), name="free")
    return [v.path, w.path, free.path] + _paths(d)


CASES = {f.__name__: f for f in (sequential_built, sequential_with_input, sequential_called, functional, subclassed,
                                 custom_layer_in_sequential, recurrent, attention_and_wrappers, nested_and_shared,
                                 functional_inside_sequential, optimizer_slots_after_fit, name_scopes)}


def run(keras):
    """{case: its paths}, each case in a fresh session (the layers' made-up names counted from zero)."""
    out = {}
    for name, case in CASES.items():
        keras.backend.clear_session()
        out[name] = case(keras)
    return out


def main():
    import keras
    result = {"versions": {"keras": keras.__version__, "backend": keras.backend.backend()}, "cases": run(keras)}
    errors = {}
    for bad in ("a/b", 3):
        try:
            keras.name_scope(bad)
        except Exception as e:  # noqa: BLE001 (recorded as Keras raises it)
            errors[repr(bad)] = [type(e).__name__, str(e)]
    result["errors"] = errors
    with open(OUT, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {OUT}: {len(result['cases'])} cases", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Record real Keras 3's multi-output training into tests/fixtures/keras/multi_output.json.

Run by hand (the tests never run it):
    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_multi_output.py

Each case builds a small functional model with two outputs, sets its weights from the fixture's arrays (so both
sides start equal), compiles it with losses, loss_weights and metrics given as a dict, a list or one for every
output, fits with SGD and shuffle=False, and records the history, evaluate's dict and list, and the errors Keras
gives for structures that do not match the outputs. `build` and `compile_args` take the keras module, so
tests/keras/test_multi_output.py replays the very same cases through minifp.keras.
"""
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests/fixtures/keras/multi_output.json"

CASES = {
    # the keras.io functional-API guide's shape: two named inputs, two named outputs, a dict of everything
    "guide_dicts": dict(model="tickets", loss={"priority": {"BinaryCrossentropy": {"from_logits": True}},
                                               "department": {"CategoricalCrossentropy": {"from_logits": True}}},
                        loss_weights={"priority": 1.0, "department": 0.2}, x="dict", y="dict"),
    "guide_lists": dict(model="tickets", loss=[{"BinaryCrossentropy": {"from_logits": True}},
                                               {"CategoricalCrossentropy": {"from_logits": True}}],
                        loss_weights=[1.0, 0.2], metrics=[["accuracy"], ["accuracy"]], x="list", y="list"),
    "dict_metrics": dict(model="heads", loss={"cls": "binary_crossentropy", "reg": "mse"},
                         loss_weights={"cls": 1.0, "reg": 0.5}, metrics={"cls": ["accuracy"], "reg": ["mae"]},
                         y="dict", validation=True),
    "list_losses": dict(model="heads", loss=["mse", "mae"], metrics=[["mae"], ["accuracy"]], y="list",
                        validation=True),
    "one_loss_each": dict(model="heads", loss="mse", y="tuple"),
    "flat_metrics": dict(model="heads", loss=["binary_crossentropy", "mse"], metrics=["mae"], y="list"),
    "partial_metrics": dict(model="heads", loss={"cls": "binary_crossentropy", "reg": "mse"},
                            metrics={"reg": ["mae", "mse"]}, y="dict"),
    "loss_weights_list": dict(model="heads", loss={"cls": "binary_crossentropy", "reg": "mse"},
                              loss_weights=[0.25, 4.0], y="dict"),
    "weighted_metrics": dict(model="heads", loss=["binary_crossentropy", "mse"], metrics=[["accuracy"], ["mae"]],
                             weighted_metrics=[["accuracy"], ["mae"]], y="list", sample_weight=True),
    "one_loss_one_weight": dict(model="heads", loss="mse", loss_weights=0.5, metrics=[["mse"], ["mse"]], y="dict"),
    "list_losses_dict_y": dict(model="heads", loss=["binary_crossentropy", "mse"], y="dict"),
    "no_loss_for_one_output": dict(model="heads", loss=[None, "mse"], y="list"),
    "short_loss_list": dict(model="heads", loss=["binary_crossentropy"], y="list"),
    # structures that do not match the outputs: Keras's errors
    "error_loss_list_long": dict(model="heads", loss=["binary_crossentropy", "mse", "mae"], y="list"),
    "error_metrics_list_long": dict(model="heads", loss="mse", metrics=[["mae"], ["mae"], ["mae"]], y="list"),
    "error_loss_keys": dict(model="heads", loss={"cls": "binary_crossentropy", "other": "mse"}, y="dict"),
    "error_y_length": dict(model="heads", loss=["binary_crossentropy", "mse"], y="list3"),
    "error_loss_weights_length": dict(model="heads", loss=["binary_crossentropy", "mse"],
                                      loss_weights=[1.0, 2.0, 3.0], y="list"),
}


DATA = ("x", "title", "body", "y_cls", "y_reg", "y_priority", "y_department", "sample_weight")


def _arrays(seed):
    """The cases' data and weights, made by NumPy from a fixed seed (stored in the fixture as values)."""
    g = np.random.default_rng(seed)
    n = 24
    f = lambda *s: g.standard_normal(s).astype(np.float32).round(3)
    return {
        "x": f(n, 4), "title": f(n, 5), "body": f(n, 3),
        "y_cls": (g.random((n, 1)) > 0.5).astype(np.float32), "y_reg": f(n, 2),
        "y_priority": g.random((n, 1)).astype(np.float32).round(3),
        "y_department": np.eye(3, dtype=np.float32)[g.integers(0, 3, n)],
        "sample_weight": g.random(n).astype(np.float32).round(2) + 0.5,
        "hidden": [f(4, 6) * 0.5, f(6) * 0.1], "cls": [f(6, 1) * 0.5, f(1) * 0.1], "reg": [f(6, 2) * 0.5, f(2) * 0.1],
        "features": [f(8, 6) * 0.5, f(6) * 0.1], "priority": [f(6, 1) * 0.5, f(1) * 0.1],
        "department": [f(6, 3) * 0.5, f(3) * 0.1],
    }


def build(keras, name, arrays):
    """One of the cases' models with the fixture's weights."""
    layers = keras.layers
    if name == "heads":
        x = keras.Input((4,), name="x")
        h = layers.Dense(6, activation="tanh", name="hidden")(x)
        outputs = [layers.Dense(1, activation="sigmoid", name="cls")(h), layers.Dense(2, name="reg")(h)]
        model = keras.Model(x, outputs)
        owned = ["hidden", "cls", "reg"]
    else:
        title, body = keras.Input((5,), name="title"), keras.Input((3,), name="body")
        h = layers.Dense(6, activation="relu", name="features")(layers.concatenate([title, body]))
        outputs = [layers.Dense(1, name="priority")(h), layers.Dense(3, name="department")(h)]
        model = keras.Model([title, body], outputs)
        owned = ["features", "priority", "department"]
    for layer in owned:
        model.get_layer(layer).set_weights([np.asarray(w, np.float32) for w in arrays[layer]])
    return model


def _loss(keras, spec):
    if isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in dir(keras.losses):
        (cls, kwargs), = spec.items()
        return getattr(keras.losses, cls)(**kwargs)
    if isinstance(spec, dict):
        return {k: _loss(keras, v) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_loss(keras, v) for v in spec]
    return spec


def compile_args(keras, case):
    """compile()'s keyword arguments for a case."""
    args = dict(optimizer=keras.optimizers.SGD(0.1), loss=_loss(keras, case["loss"]))
    for key in ("loss_weights", "metrics", "weighted_metrics"):
        if key in case:
            args[key] = case[key]
    return args


def data(case, arrays):
    """(x, y, sample_weight) of a case in the structures it names."""
    a = {k: np.asarray(arrays[k], np.float32) for k in DATA}
    if case["model"] == "heads":
        x, names = a["x"], ("cls", "reg")
    else:
        x = {"title": a["title"], "body": a["body"]} if case.get("x") == "dict" else [a["title"], a["body"]]
        names = ("priority", "department")
    ys = [a[f"y_{n}"] for n in names]
    y = {"dict": dict(zip(names, ys)), "list": ys, "tuple": tuple(ys), "list3": ys + [ys[0]]}[case["y"]]
    return x, y, (a["sample_weight"] if case.get("sample_weight") else None)


def run_case(keras, case, arrays):
    """What the case records: history and evaluate's results, or the error."""
    model = build(keras, case["model"], arrays)
    try:
        model.compile(**compile_args(keras, case))
        x, y, sw = data(case, arrays)
        val = (x, y) if case.get("validation") else None
        history = model.fit(x, y, sample_weight=sw, batch_size=8, epochs=2, shuffle=False, verbose=0,
                            validation_data=val)
        as_dict = model.evaluate(x, y, sample_weight=sw, batch_size=8, verbose=0, return_dict=True)
        as_list = model.evaluate(x, y, sample_weight=sw, batch_size=8, verbose=0)
    except Exception as e:                 # noqa: BLE001 - the error is what the case records
        return {"error": {"type": type(e).__name__, "message": str(e)}}
    return {"history": {k: [float(v) for v in vs] for k, vs in history.history.items()},
            "evaluate_dict": {k: float(v) for k, v in as_dict.items()},
            "evaluate_list": [float(v) for v in np.atleast_1d(as_list)],
            "metrics_names": model.metrics_names}


def main():
    import keras
    arrays = {k: (np.asarray(v).tolist() if not isinstance(v, list) else [np.asarray(w).tolist() for w in v])
              for k, v in _arrays(20261129).items()}
    results = {name: run_case(keras, case, arrays) for name, case in CASES.items()}
    OUT.write_text(json.dumps({"keras": keras.__version__, "backend": keras.backend.backend(), "arrays": arrays,
                               "cases": CASES, "results": results}, indent=1) + "\n")
    for name, result in results.items():
        print(name, json.dumps(result)[:300])


if __name__ == "__main__":
    main()

"""Record what Keras 3's optimizer options gradient_accumulation_steps and use_ema (ema_momentum,
ema_overwrite_frequency, finalize_variable_values, the swap at the end of fit) do, into
tests/fixtures/keras/optimizer_options.json. tests/keras/test_optimizer_options.py runs the same cases through
minifp.keras (the fixture holds them all: initial weights, gradients, data).

Run by hand with a real Keras 3 on torch (not the project's environment):
    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_optimizer_options.py

Per step case: two float32 variables "w" (3,) and "b" (2, 2), STEPS gradient steps; after each step the weights,
`iterations` and every optimizer variable; then the weights after finalize_variable_values, the optimizer variables'
names and get_config. The fit case: a Dense model fitted with use_ema; its weights after fit (the averages swapped in).
"""
import json
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "optimizer_options.json"
STEPS = 6

CASES = [
    ("SGD", {"learning_rate": 0.1, "gradient_accumulation_steps": 2}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "gradient_accumulation_steps": 3}),
    ("Adam", {"learning_rate": 0.01, "gradient_accumulation_steps": 2}),
    ("Adam", {"learning_rate": 0.01, "gradient_accumulation_steps": 3, "global_clipnorm": 0.05}),
    ("SGD", {"learning_rate": 0.1, "use_ema": True}),
    ("Adam", {"learning_rate": 0.01, "use_ema": True, "ema_momentum": 0.9}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.5, "use_ema": True, "ema_momentum": 0.8,
             "ema_overwrite_frequency": 2}),
    ("Adam", {"learning_rate": 0.01, "use_ema": True, "ema_momentum": 0.7, "ema_overwrite_frequency": 3}),
    ("SGD", {"learning_rate": 0.1, "use_ema": True, "ema_momentum": 0.5, "ema_overwrite_frequency": 2,
             "gradient_accumulation_steps": 2}),
]

ERRORS = [
    ("SGD", {"gradient_accumulation_steps": 1}),
    ("Adam", {"gradient_accumulation_steps": 0.5}),
    ("SGD", {"use_ema": True, "ema_momentum": 1.5}),
    ("SGD", {"use_ema": True, "ema_momentum": -0.1}),
    ("Adam", {"use_ema": True, "ema_overwrite_frequency": 2.0}),
    ("Adam", {"use_ema": True, "ema_overwrite_frequency": -1}),
]

FIT = {"optimizer": ("SGD", {"learning_rate": 0.1, "use_ema": True, "ema_momentum": 0.9}), "epochs": 2,
       "batch_size": 4}


def _list(a):
    return np.asarray(a, np.float32).ravel().tolist()


def initial():
    rng = np.random.default_rng(7)
    return {"w": rng.standard_normal(3).astype(np.float32), "b": rng.standard_normal((2, 2)).astype(np.float32)}


def gradients():
    rng = np.random.default_rng(11)
    return [{"w": rng.standard_normal(3).astype(np.float32), "b": rng.standard_normal((2, 2)).astype(np.float32)}
            for _ in range(STEPS)]


def record_case(keras, name, kwargs, init, grads):
    opt = getattr(keras.optimizers, name)(**kwargs)
    vs = [keras.Variable(init[k], name=k) for k in ("w", "b")]
    steps = []
    for g in grads:
        opt.apply_gradients([(keras.ops.convert_to_tensor(g[k]), v) for k, v in zip(("w", "b"), vs)])
        steps.append({"weights": [_list(v.numpy()) for v in vs], "iterations": int(opt.iterations),
                      "variables": [_list(v.numpy()) for v in opt.variables]})
    opt.finalize_variable_values(vs)
    config = {k: v for k, v in opt.get_config().items() if k != "name"}
    return {"class": name, "kwargs": kwargs, "steps": steps, "names": [v.name for v in opt.variables],
            "paths": [v.path for v in opt.variables], "finalized": [_list(v.numpy()) for v in vs],
            "config": config}


def record_error(keras, name, kwargs):
    try:
        getattr(keras.optimizers, name)(**kwargs)
    except Exception as e:          # the recorded type and message are what the test compares
        return {"class": name, "kwargs": kwargs, "type": type(e).__name__, "message": str(e)}
    raise AssertionError(f"{name}({kwargs}) raised nothing")


def record_fit(keras):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    kernel = rng.standard_normal((3, 2)).astype(np.float32)
    bias = rng.standard_normal(2).astype(np.float32)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.set_weights([kernel, bias])
    name, kwargs = FIT["optimizer"]
    model.compile(optimizer=getattr(keras.optimizers, name)(**kwargs), loss="mse")
    model.fit(x, y, batch_size=FIT["batch_size"], epochs=FIT["epochs"], shuffle=False, verbose=0)
    return dict(FIT, x=_list(x), y=_list(y), kernel=_list(kernel), bias=_list(bias),
                weights=[_list(w) for w in model.get_weights()],
                averages=[_list(v.numpy()) for v in model.optimizer.variables if v.name.endswith("_average")],
                iterations=int(model.optimizer.iterations))


def main():
    import keras
    init, grads = initial(), gradients()
    fixture = {"keras": keras.__version__, "steps": STEPS,
               "init": {k: _list(v) for k, v in init.items()},
               "grads": [{k: _list(v) for k, v in g.items()} for g in grads],
               "cases": [record_case(keras, n, kw, init, grads) for n, kw in CASES],
               "errors": [record_error(keras, n, kw) for n, kw in ERRORS],
               "fit": record_fit(keras)}
    OUT.write_text(json.dumps(fixture) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

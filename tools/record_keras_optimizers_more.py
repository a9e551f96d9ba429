"""Record Keras 3's Lion, Adamax, Adadelta, Ftrl, Adafactor, Lamb, ScheduleFreeAdamW, Muon and MultiOptimizer (four
update steps on float32 variables, configs, variable names, errors for bad arguments) into
tests/fixtures/keras/optimizers_more.json.
tests/keras/test_optimizers_more.py runs the same CASES through minifp.keras.

Run by hand with a real Keras 3 (not the project's environment):
    KERAS_BACKEND=torch python tools/record_keras_optimizers_more.py
"""
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "optimizers_more.json"

SHAPES = [(2, 3), (3,), (2, 2, 2)]      # a matrix, a vector, a 3-d kernel (Adafactor factors the last two axes)
STEPS = 4

# (class name, constructor kwargs)
CASES = [
    ("Lion", {}),
    ("Lion", {"learning_rate": 0.01, "beta_1": 0.5, "beta_2": 0.9}),
    ("Lion", {"learning_rate": 0.01, "weight_decay": 0.1}),
    ("Adamax", {}),
    ("Adamax", {"learning_rate": 0.02, "beta_1": 0.8, "beta_2": 0.9, "epsilon": 1e-3, "clipnorm": 0.1}),
    ("Adadelta", {}),
    ("Adadelta", {"learning_rate": 1.0, "rho": 0.9, "epsilon": 1e-6, "weight_decay": 0.01}),
    ("Ftrl", {}),
    ("Ftrl", {"learning_rate": 0.1, "learning_rate_power": -0.5, "initial_accumulator_value": 0.2,
              "l1_regularization_strength": 0.001, "l2_regularization_strength": 0.01,
              "l2_shrinkage_regularization_strength": 0.02, "beta": 0.5}),
    ("Ftrl", {"learning_rate": 0.05, "learning_rate_power": -0.7}),
    ("Adafactor", {}),
    ("Adafactor", {"learning_rate": 0.1, "relative_step": False, "clip_threshold": 0.5, "epsilon_2": 1e-2}),
    ("Adafactor", {"learning_rate": 0.01, "beta_2_decay": -0.5, "global_clipnorm": 0.2}),
    ("Lamb", {}),
    ("Lamb", {"learning_rate": 0.01, "beta_1": 0.8, "epsilon": 1e-4, "clipvalue": 0.05}),
    ("ScheduleFreeAdamW", {}),
    ("ScheduleFreeAdamW", {"learning_rate": 0.01, "beta_1": 0.8, "warmup_steps": 3}),
    ("Muon", {}),       # v0 (2-d) by Newton-Schulz; v1, v2 by AdamW
    ("Muon", {"learning_rate": 0.02, "nesterov": False, "ns_steps": 3, "rms_rate": None, "weight_decay": 0.1,
              "adam_lr_ratio": 0.5, "exclude_layers": ["v2"]}),
    ("Muon", {"exclude_layers": ["v0"], "adam_weight_decay": None}),
    # bad arguments: the error type and message
    ("Lion", {"beta_1": 0.0}),
    ("Lion", {"beta_1": 1.5}),
    ("Ftrl", {"initial_accumulator_value": -1.0}),
    ("Ftrl", {"learning_rate_power": 0.5}),
    ("Ftrl", {"l1_regularization_strength": -0.1}),
    ("Ftrl", {"l2_regularization_strength": -0.1}),
    ("Ftrl", {"l2_shrinkage_regularization_strength": -0.1}),
]


def initial(k, shape):
    """The k-th variable's starting value (float32, exact in JSON)."""
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (0.3 * np.sin(0.37 * i + k) + 0.05).astype(np.float32).reshape(shape)


def gradient(t, k, shape):
    """The k-th variable's gradient at step t."""
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    return (0.1 * np.cos(0.5 * t + 0.3 * i + k) + 0.02).astype(np.float32).reshape(shape)


def run_case(keras, name, kwargs):
    """{"weights": each step's flattened float32 weights, "config", "variables": [[name, shape] ...]}."""
    opt = getattr(keras.optimizers, name)(**kwargs)
    variables = [keras.Variable(initial(k, s), name=f"v{k}") for k, s in enumerate(SHAPES)]
    weights = []
    for t in range(STEPS):
        grads = [keras.ops.convert_to_tensor(gradient(t, k, s)) for k, s in enumerate(SHAPES)]
        opt.apply(grads, variables)
        weights.append([float(x) for v in variables for x in np.ravel(np.asarray(v.numpy(), np.float32))])
    return {"weights": weights, "config": opt.get_config(), "iterations": int(opt.iterations.numpy()),
            "variables": [[v.name, list(v.shape)] for v in opt.variables]}


def run_multi(keras):
    """MultiOptimizer over an OptimizerMap (v0: Adam, v2 by the pattern "v[2-9]": Lion, v1: the default SGD):
    the steps, each optimizer's iterations, the variables' paths, the config, the learning_rate error."""
    om = keras.optimizers.OptimizerMap(keras.optimizers.SGD(0.1, name="sgd_m"),
                                       {"v0": keras.optimizers.Adam(0.01, name="adam_m"),
                                        "v[2-9]": keras.optimizers.Lion(0.001, name="lion_m")})
    opt = keras.optimizers.MultiOptimizer(om, name="multi")
    variables = [keras.Variable(initial(k, s), name=f"v{k}") for k, s in enumerate(SHAPES)]
    weights = []
    for t in range(STEPS):
        opt.apply([keras.ops.convert_to_tensor(gradient(t, k, s)) for k, s in enumerate(SHAPES)], variables)
        weights.append([float(x) for v in variables for x in np.ravel(np.asarray(v.numpy(), np.float32))])
    try:
        opt.learning_rate
        error = None
    except AttributeError as e:
        error = str(e)
    config = opt.get_config()
    inner = config["optimizer_map"]["config"]
    return {"weights": weights, "iterations": [int(o.iterations.numpy()) for o in [opt] + opt.optimizers],
            "optimizers": [o.name for o in opt.optimizers], "paths": [v.path for v in opt.variables],
            "default": inner["default_optimizer"]["config"],
            "map": {k: [c["class_name"], c["config"]] for k, c in inner["optimizer_map"].items()},
            "learning_rate_error": error}


def run(keras):
    """One result per case, or {"error": [type, first line of the message]}."""
    out = []
    for name, kwargs in CASES:
        try:
            out.append(run_case(keras, name, kwargs))
        except Exception as e:      # noqa: BLE001 (every exception is what is recorded)
            out.append({"error": [type(e).__name__, str(e).splitlines()[0]]})
    return out


def main():
    import keras
    got = run(keras)
    names = sorted(n for n in dir(keras.optimizers) if not n.startswith("_"))    # keras.optimizers' public names
    OUT.write_text(json.dumps({"keras": keras.__version__, "backend": keras.backend.backend(), "names": names,
                               "cases": got, "multi": run_multi(keras)},
                              indent=1) + "\n")
    print(f"{OUT}: {len(got)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Record real Keras 3 and tf-keras behaviour into tests/fixtures/keras/, the parity fixtures of minifp.keras / minifp.tf.

Run by hand from the repository root, in a virtual environment of its own (never /work/venv: minifp does not
depend on TensorFlow or Keras):

    python3.11 -m venv /work/tfenv
    /work/tfenv/bin/pip install tensorflow-cpu==2.21.0 tf-keras==2.21.0 keras==3.15.1 h5py numpy
    /work/tfenv/bin/python tools/record_keras.py            # all files
    /work/tfenv/bin/python tools/record_keras.py loss_scale optimizers   # some of them

CI does not run this script; the tests read only the committed files. Keras 3 runs on its TensorFlow backend.
The output is deterministic: one CPU thread, oneDNN off, no random numbers (every input and weight is stored
beside the values, or comes from the formula in the file's "formulas" entry). Floats are float32 written as
the shortest decimal that parses back to the same float32 (parse, then cast to float32 for the exact bits);
float64 values (Python floats, configs) are written as Python's repr. Non-finite floats are the strings
"inf", "-inf" and "nan".
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["COLUMNS"] = "200"  # Keras 3's summary narrows its table to the terminal; 200 keeps its own default

import io
import json
import math
import re
import sys
import tempfile
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import h5py
import numpy as np
import tensorflow as tf

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import keras  # noqa: E402  (Keras 3)
import tf_keras  # noqa: E402  (Keras 2, what tf.keras was up to TF 2.15)

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "keras"
FACES = {"keras3": keras, "tf_keras": tf_keras}

WAVE = ("wave(shape, k, scale, freq, offset) = float32(offset + scale*sin(freq*i + k)) with i = arange(n) as "
        "float64, n = prod(shape), computed in float64, rounded once to float32, reshaped (C order) to shape")


def wave(shape, k, scale=0.1, freq=0.37, offset=0.0):
    """The float32 array that the wave() formula gives."""
    i = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.float64)
    return (offset + scale * np.sin(freq * i + k)).astype(np.float32).reshape(shape)


def f32(x):
    """One float32 as the shortest decimal that round-trips (a JSON number), or "inf"/"-inf"/"nan"."""
    x = np.float32(x)
    if not np.isfinite(x):
        return str(float(x))
    return float(str(x))  # numpy prints the shortest decimal that reads back as the same float32


def clean(x):
    """A JSON-ready copy: arrays/tensors to nested lists (float32 kept short), non-finite floats to strings."""
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    if isinstance(x, np.ndarray):
        if x.dtype == np.float32 or x.dtype == np.float16:
            if x.ndim == 0:
                return f32(x)
            return [clean(v) for v in x]
        if x.dtype.kind == "f":
            x = x.astype(np.float64)
        return clean(x.tolist())
    if isinstance(x, (np.float32, np.float16)):
        return f32(x)
    if isinstance(x, np.generic):
        return clean(x.item())
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if hasattr(x, "name") and type(x).__name__ in ("DType", "DTypePolicy", "Policy"):
        return str(x.name)
    return repr(x)


def watch_warnings():
    """Record every warning except NumPy 2's __array__(copy=) notice that TensorFlow variables trigger (noise)."""
    warnings.simplefilter("always")
    warnings.filterwarnings("ignore", message="__array__ implementation")


def unique(messages):
    """Distinct messages in first-seen order."""
    return list(dict.fromkeys(messages))


def short(message):
    """tf-keras' graph errors ("in user code: ..." with a traceback of this machine's paths): the last line."""
    if message.startswith("in user code:"):
        return "in user code: ... " + [line.strip() for line in message.splitlines() if line.strip()][-1]
    return message


def outcome(fn):
    """Run fn; {"error": {type, message} or None, "warnings": [...], "result": ...}."""
    with warnings.catch_warnings(record=True) as caught:
        watch_warnings()
        try:
            result, error = fn(), None
        except Exception as e:  # noqa: BLE001 - recording whatever Keras raises is the point
            result, error = None, {"type": type(e).__name__, "message": short(str(e))}
    d = {"error": error, "warnings": unique(f"{w.category.__name__}: {w.message}" for w in caught)}
    if result is not None:
        d["result"] = clean(result)
    return d


def flatten_list(match):
    """One innermost JSON list on one line."""
    text = re.sub(r"\[\s*\n\s*", "[", match.group(0))
    text = re.sub(r"\s*\n\s*\]", "]", text)
    return re.sub(r"\s*\n\s*", " ", text)


def dumps(data):
    """Indented JSON with every innermost list kept on one line."""
    return re.sub(r"\[[^\[\]{}]*\]", flatten_list, json.dumps(data, indent=1, allow_nan=False)) + "\n"


def versions():
    """The versions that produced the file."""
    return {"keras": keras.__version__, "keras_backend": keras.backend.backend(), "tf_keras": tf_keras.__version__,
            "tensorflow": tf.__version__, "numpy": np.__version__, "h5py": h5py.__version__}


def write(name, data):
    """Write one fixture file, versions first."""
    path = OUT / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps({"versions": versions(), **data}))
    print(f"{path.relative_to(OUT.parent.parent.parent)}: {path.stat().st_size} bytes")


def var_values(variables):
    """float32 values of a list of variables."""
    return [clean(np.asarray(v.numpy(), dtype=np.float32)) for v in variables]


# --------------------------------------------------------------------------------------------
# loss_scale.json

MULT = {"finite": 1.0, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}
# Which steps get a non-finite gradient (all of variable 0's first element).
PATTERN_MAIN = ["finite"] * 2 + ["inf"] + ["finite"] * 4 + ["nan", "finite", "-inf"] + ["finite"] * 7
PATTERN_FLOOR = ["nan"] * 6 + ["finite"] * 4 + ["inf"] + ["finite"] * 3
LS_VARS = [{"name": "w", "init": [1.0, -0.5, 0.25]}, {"name": "b", "init": [0.5, 0.125]}]
LS_GRAD = ("the gradient of the unscaled loss at step t (t = 0..): c_t = float32(0.5*cos(0.9*t + 0.7*arange(n) + k)), "
           "k = variable index, n = its size; the step's loss is sum(w*c_t) + sum(b*c_t), so tape.gradient of the "
           "scaled loss gives scale*c_t; the pattern entry for step t then replaces element 0 of variable 0's "
           "gradient by inf, -inf or nan (after unscaling for tf-keras, where the user unscales; before "
           "apply for Keras 3)")


def ls_grad(t, k, n):
    """c_t of variable k (see LS_GRAD)."""
    return (0.5 * np.cos(0.9 * t + 0.7 * np.arange(n, dtype=np.float64) + k)).astype(np.float32)


def ls_keras3(pattern, initial_scale, growth, inner="sgd"):
    """A Keras 3 custom loop: scale_loss, tape.gradient, inject, apply (which unscales and may skip)."""
    opt_in = keras.optimizers.SGD(0.1) if inner == "sgd" else keras.optimizers.Adam(0.01)
    lso = keras.mixed_precision.LossScaleOptimizer(opt_in, initial_scale=initial_scale, dynamic_growth_steps=growth)
    vs = [keras.Variable(np.array(v["init"], np.float32), name=v["name"]) for v in LS_VARS]
    steps = []
    for t, kind in enumerate(pattern):
        cs = [tf.constant(ls_grad(t, k, len(v["init"]))) for k, v in enumerate(LS_VARS)]
        scale_before = float(lso.dynamic_scale.numpy()) if lso.built else float(initial_scale)
        with tf.GradientTape() as tape:
            loss = sum(tf.reduce_sum(v.value * c) for v, c in zip(vs, cs))
            scaled = lso.scale_loss(loss)
        grads = tape.gradient(scaled, [v.value for v in vs])
        grads = [g.numpy() for g in grads]
        if kind != "finite":
            grads[0][0] = np.float32(MULT[kind])
        before = [v.numpy().copy() for v in vs]
        lso.apply([tf.constant(g) for g in grads], vs)
        after = [v.numpy() for v in vs]
        steps.append({"t": t, "kind": kind, "scale_before": scale_before, "scaled_loss": clean(scaled),
                      "grads_in": clean(grads), "skipped": all(np.array_equal(a, b) for a, b in zip(after, before)),
                      "scale": clean(lso.dynamic_scale.numpy()), "step_counter": int(lso.step_counter.numpy()),
                      "iterations": int(lso.iterations.numpy()), "inner_iterations": int(opt_in.iterations.numpy()),
                      "weights": var_values(vs)})
    return {"inner": {"class": type(opt_in).__name__, "config": clean(opt_in.get_config())},
            "initial_scale": initial_scale, "dynamic_growth_steps": growth, "pattern": pattern,
            "config": outcome(lambda: {k: v for k, v in lso.get_config().items() if k != "inner_optimizer"}),
            "steps": steps}


def ls_tf_keras(pattern, initial_scale, growth, inner="sgd"):
    """The TF guide's custom loop: get_scaled_loss, tape.gradient, get_unscaled_gradients, inject, apply_gradients."""
    opt_in = tf_keras.optimizers.SGD(0.1) if inner == "sgd" else tf_keras.optimizers.Adam(0.01)
    lso = tf_keras.mixed_precision.LossScaleOptimizer(opt_in, initial_scale=initial_scale,
                                                      dynamic_growth_steps=growth)
    vs = [tf.Variable(np.array(v["init"], np.float32), name=v["name"]) for v in LS_VARS]
    steps = []
    for t, kind in enumerate(pattern):
        cs = [tf.constant(ls_grad(t, k, len(v["init"]))) for k, v in enumerate(LS_VARS)]
        scale_before = float(lso.loss_scale.numpy())
        with tf.GradientTape() as tape:
            loss = sum(tf.reduce_sum(v * c) for v, c in zip(vs, cs))
            scaled = lso.get_scaled_loss(loss)
        scaled_grads = tape.gradient(scaled, vs)
        grads = [g.numpy() for g in lso.get_unscaled_gradients(scaled_grads)]
        if kind != "finite":
            grads[0][0] = np.float32(MULT[kind])
        before = [v.numpy().copy() for v in vs]
        lso.apply_gradients(zip([tf.constant(g) for g in grads], vs))
        after = [v.numpy() for v in vs]
        steps.append({"t": t, "kind": kind, "scale_before": scale_before, "scaled_loss": clean(scaled),
                      "scaled_grads": clean([g.numpy() for g in scaled_grads]), "grads_in": clean(grads),
                      "skipped": all(np.array_equal(a, b) for a, b in zip(after, before)),
                      "scale": clean(lso.loss_scale.numpy()), "dynamic_counter": int(lso.dynamic_counter.numpy()),
                      "iterations": int(lso.iterations.numpy()), "inner_iterations": int(opt_in.iterations.numpy()),
                      "weights": var_values(vs)})
    return {"inner": {"class": type(opt_in).__name__, "config": clean(opt_in.get_config())},
            "initial_scale": initial_scale, "dynamic_growth_steps": growth, "pattern": pattern,
            "lso_class": type(lso).__name__,
            "config": outcome(lambda: {k: v for k, v in lso.get_config().items() if k != "inner_optimizer"}),
            "steps": steps}


def ls_issue_example():
    """The issue's example: LossScaleOptimizer(SGD(0.1)).apply_gradients([(32768 * g, w)]) with w = 1, g = 0.5."""
    out = {}
    w = keras.Variable(np.float32(1.0), name="w")
    lso = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1))
    lso.apply_gradients([(tf.constant(np.float32(32768 * 0.5)), w)])
    out["keras3"] = {"w": clean(w.numpy()), "scale": clean(lso.dynamic_scale.numpy()),
                     "iterations": int(lso.iterations.numpy())}
    w2 = tf.Variable(np.float32(1.0), name="w")
    lso2 = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD(0.1))
    lso2.apply_gradients([(tf.constant(np.float32(32768 * 0.5)), w2)])
    out["tf_keras"] = {"w": clean(w2.numpy()), "scale": clean(lso2.loss_scale.numpy()),
                       "iterations": int(lso2.iterations.numpy()), "note": "apply_gradients does not unscale"}
    return out


def ls_attributes():
    """Defaults and attribute names of both LossScaleOptimizers, and tf-keras' TF 2.1-2.3 spelling."""
    k3 = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD())
    tk = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD())
    k3.build([keras.Variable(np.float32(1.0))])
    k3_built = {a: hasattr(k3, a) for a in ("dynamic_scale", "step_counter", "iterations")}
    old = outcome(lambda: type(tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD(), "dynamic")).__name__)
    return {
        "keras3": {"initial_scale": k3.initial_scale, "dynamic_growth_steps": k3.dynamic_growth_steps,
                   "class": type(k3).__name__, "name": k3.name,
                   "config": clean({k: v for k, v in k3.get_config().items() if k != "inner_optimizer"}),
                   "has": {a: hasattr(k3, a) for a in ("scale_loss", "get_scaled_loss", "get_unscaled_gradients",
                                                       "loss_scale", "dynamic_scale", "inner_optimizer")},
                   "has_after_build": k3_built,
                   "dynamic_false": outcome(lambda: keras.mixed_precision.LossScaleOptimizer(
                       keras.optimizers.SGD(), dynamic=False))["error"]},
        "tf_keras": {"initial_scale": tk.initial_scale, "dynamic_growth_steps": tk.dynamic_growth_steps,
                     "dynamic": tk.dynamic, "class": type(tk).__name__, "loss_scale": clean(tk.loss_scale),
                     "config": clean({k: v for k, v in tk.get_config().items() if k != "inner_optimizer"}),
                     "has": {a: hasattr(tk, a) for a in ("scale_loss", "get_scaled_loss", "get_unscaled_gradients",
                                                         "loss_scale", "dynamic_scale", "inner_optimizer")},
                     "positional_dynamic": old,
                     "has_experimental_module": hasattr(tf_keras.mixed_precision, "experimental"),
                     "static": outcome(lambda: clean(tf_keras.mixed_precision.LossScaleOptimizer(
                         tf_keras.optimizers.SGD(), dynamic=False, initial_scale=128).loss_scale))},
    }


def record_loss_scale():
    cases = {}
    for face, fn in (("keras3", ls_keras3), ("tf_keras", ls_tf_keras)):
        cases[face] = {
            "main_sgd": fn(PATTERN_MAIN, 2.0 ** 15, 3),
            "main_adam": fn(PATTERN_MAIN, 1024.0, 3, inner="adam"),
            "floor": fn(PATTERN_FLOOR, 4.0, 2),
        }
    write("loss_scale.json", {
        "formulas": {"grad": LS_GRAD},
        "variables": LS_VARS,
        "notes": ("scale_before: the scale in force when the step's loss was scaled; scale: after apply. "
                  "skipped: every weight bitwise unchanged. Keras 3: iterations is the LSO's (= inner's). "
                  "The 'floor' case: tf-keras floors the scale at 1, Keras 3 keeps halving."),
        "cases": cases,
        "issue_example": ls_issue_example(),
        "attributes": ls_attributes(),
    })


# --------------------------------------------------------------------------------------------
# optimizers.json

OPT_VARS = [{"name": "v0", "shape": [3], "k": 0.0, "scale": 0.5}, {"name": "v1", "shape": [2, 1], "k": 1.0,
                                                                   "scale": 0.8}]
OPT_GRAD = ("gradient of variable k at step t (t = 0..49) = float32(gscale*cos(0.5*t + 0.3*arange(n) + k) + "
            "goffset) with gscale = 0.1, goffset = 0.02, computed in float64, reshaped to the variable's shape "
            "(grad_check holds them at steps 0 and 49)")
OPT_STEPS = 50


def opt_grad(t, k, shape, gscale=0.1, goffset=0.02):
    """The OPT_GRAD gradient."""
    n = int(np.prod(shape))
    return (gscale * np.cos(0.5 * t + 0.3 * np.arange(n, dtype=np.float64) + k) + goffset).astype(
        np.float32).reshape(shape)


def opt_init(v):
    """A variable's initial value (wave formula with freq 0.37)."""
    return wave(v["shape"], v["k"], v["scale"])


OPT_CASES = [
    ("SGD", {}), ("SGD", {"momentum": 0.9}), ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "clipnorm": 0.05}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "clipvalue": 0.02}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "global_clipnorm": 0.05}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "weight_decay": 0.1}),
    ("Adam", {}), ("Adam", {"amsgrad": True}), ("Adam", {"learning_rate": 0.01, "weight_decay": 0.1}),
    ("Adam", {"learning_rate": 0.01, "clipnorm": 0.05}),
    ("AdamW", {}), ("AdamW", {"learning_rate": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    ("RMSprop", {}), ("RMSprop", {"centered": True}), ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"momentum": 0.9, "centered": True}),
    ("Adagrad", {}), ("Adagrad", {"learning_rate": 0.1}), ("Nadam", {}), ("Nadam", {"learning_rate": 0.01}),
]
OPT_CLASSES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam"]


def opt_trajectory(mod, cls, kwargs, variable, schedule=None):
    """50 steps of mod.optimizers.cls(**kwargs) under the OPT_GRAD gradients; weights after each step."""
    if schedule is not None:
        kwargs = dict(kwargs, learning_rate=schedule)
    opt = getattr(mod.optimizers, cls)(**kwargs)
    vs = [variable(opt_init(v), v["name"]) for v in OPT_VARS]
    traj, lrs = [], []
    for t in range(OPT_STEPS):
        grads = [tf.constant(opt_grad(t, k, v["shape"])) for k, v in enumerate(OPT_VARS)]
        opt.apply_gradients(zip(grads, vs))
        traj.append(clean(np.concatenate([np.ravel(v.numpy()) for v in vs]).astype(np.float32)))
        lrs.append(clean(np.float32(opt.learning_rate.numpy() if hasattr(opt.learning_rate, "numpy")
                                    else opt.learning_rate)))
    out = {"weights": traj, "iterations": int(opt.iterations.numpy())}
    if schedule is not None:
        out["learning_rate_after"] = lrs
    return out


def max_diff(a, b):
    """Largest absolute difference between two recorded trajectories (float64)."""
    return float(np.abs(np.array(a["weights"], np.float64) - np.array(b["weights"], np.float64)).max())


def schedule_values(mod, steps=31):
    """Learning rates of the schedules at steps 0..steps-1."""
    S = mod.optimizers.schedules
    specs = [
        ("ExponentialDecay", {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5}),
        ("ExponentialDecay", {"initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5, "staircase": True}),
        ("ExponentialDecay", {"initial_learning_rate": 0.01, "decay_steps": 7, "decay_rate": 0.96,
                              "staircase": True}),
        ("CosineDecay", {"initial_learning_rate": 0.1, "decay_steps": 20}),
        ("CosineDecay", {"initial_learning_rate": 0.1, "decay_steps": 20, "alpha": 0.1}),
        ("CosineDecay", {"initial_learning_rate": 0.0, "decay_steps": 20, "alpha": 0.1, "warmup_target": 0.2,
                         "warmup_steps": 5}),
        ("CosineDecay", {"initial_learning_rate": 0.05, "decay_steps": 15, "warmup_target": 0.1,
                         "warmup_steps": 4}),
        ("PiecewiseConstantDecay", {"boundaries": [5, 10], "values": [0.1, 0.05, 0.01]}),
    ]
    out = []
    for name, kw in specs:
        def run():
            s = getattr(S, name)(**kw)
            return {"values": [clean(np.float32(s(step).numpy())) for step in range(steps)],
                    "config": clean(s.get_config())}
        out.append({"class": name, "kwargs": kw, **outcome(run)})
    return out


def record_optimizers():
    faces = {}
    k3_var = lambda value, name: keras.Variable(value, name=name)  # noqa: E731
    tk_var = lambda value, name: tf.Variable(value, name=name)  # noqa: E731
    for face, mod, variable in (("keras3", keras, k3_var), ("tf_keras", tf_keras, tk_var)):
        cases = []
        for cls, kw in OPT_CASES:
            cases.append({"class": cls, "kwargs": kw, **outcome(lambda: opt_trajectory(mod, cls, kw, variable))})
        sched = mod.optimizers.schedules.ExponentialDecay(0.01, decay_steps=10, decay_rate=0.5, staircase=True)
        cases.append({"class": "Adam", "kwargs": {}, "schedule": {"class": "ExponentialDecay", "kwargs": {
            "initial_learning_rate": 0.01, "decay_steps": 10, "decay_rate": 0.5, "staircase": True}},
            **outcome(lambda: opt_trajectory(mod, "Adam", {}, variable, schedule=sched))})
        defaults = {c: clean(getattr(mod.optimizers, c)().get_config()) for c in OPT_CLASSES}
        by_name = {n: outcome(lambda: type(mod.optimizers.get(n)).__name__)
                   for n in ("sgd", "adam", "adamw", "rmsprop", "adagrad", "nadam", "Adam", "SGD")}
        if face == "tf_keras":  # tf-keras: the largest difference from Keras 3 and the final weights only
            for c, k3 in zip(cases, faces["keras3"]["cases"]):
                if c.get("result") and k3.get("result"):
                    c["result"] = {"max_abs_diff_vs_keras3": max_diff(c["result"], k3["result"]),
                                   "final_weights": c["result"]["weights"][-1],
                                   **{k: v for k, v in c["result"].items() if k != "weights"}}
        faces[face] = {"cases": cases, "defaults": defaults, "get": by_name, "schedules": schedule_values(mod)}
    write("optimizers.json", {
        "formulas": {"init": WAVE + "; variable init = wave(shape, k, scale, freq=0.37)", "grad": OPT_GRAD},
        "variables": OPT_VARS, "steps": OPT_STEPS,
        "init_check": [clean(opt_init(v)) for v in OPT_VARS],
        "grad_check": {str(t): [clean(opt_grad(t, k, v["shape"])) for k, v in enumerate(OPT_VARS)] for t in (0, 49)},
        "notes": ("weights[t] = the variables after apply_gradients of step t's gradients (float32), all variables "
                  "flattened (C order) and concatenated in the order of 'variables'. "
                  "learning_rate_after[t] = optimizer.learning_rate read after step t. "
                  "tf_keras uses the new (non-legacy) optimizers, tf.Variable variables; only its largest "
                  "difference from Keras 3 over the 50 steps and its final weights are kept. learning_rate in "
                  "Keras 3's get_config() is the float32 variable's value as a float64."),
        "faces": faces,
    })


# --------------------------------------------------------------------------------------------
# batchnorm.json

BN_INPUTS = {"2d": [(6, 4), [0.0, 1.0, 2.0]], "4d": [(2, 3, 3, 4), [0.5, 1.5, 2.5]]}  # shape, k of each call


def bn_input(shape, k):
    """A BatchNormalization input: wave(shape, k, scale=2.0, freq=0.37, offset=0.5 + k)."""
    return wave(shape, k, scale=2.0, offset=0.5 + k)


def bn_case(mod, shape, ks, weights=None, **kwargs):
    """Training calls on inputs ks (outputs, moving stats after each), then inference on the first input."""
    mod.backend.clear_session()
    layer = mod.layers.BatchNormalization(**kwargs)
    layer.build(shape)
    if weights is not None:
        layer.set_weights([np.asarray(w, np.float32) for w in weights])
    calls = []
    for k in ks:
        y = layer(tf.constant(bn_input(shape, k)), training=True)
        calls.append({"k": k, "output": clean(np.asarray(y, np.float32)),
                      "moving_mean": clean(layer.moving_mean.numpy()),
                      "moving_variance": clean(layer.moving_variance.numpy())})
    infer = layer(tf.constant(bn_input(shape, ks[0])), training=False)
    default = layer(tf.constant(bn_input(shape, ks[0])))
    return {"shape": list(shape), "kwargs": kwargs, "weights_in": weights, "training_calls": calls,
            "inference_output": clean(np.asarray(infer, np.float32)),
            "no_training_arg_output_equals_inference": bool(np.array_equal(np.asarray(default), np.asarray(infer))),
            "weight_names": [getattr(v, "path", v.name) for v in layer.weights],
            "trainable": [bool(v.trainable) for v in layer.weights],
            "config": clean({k: v for k, v in layer.get_config().items()
                             if k in ("axis", "momentum", "epsilon", "center", "scale")})}


def record_batchnorm():
    faces = {}
    gb = [[1.5, 0.5, -1.0, 2.0], [0.1, -0.2, 0.3, 0.0], [0.2, -0.1, 0.0, 0.3], [1.0, 0.5, 2.0, 1.5]]
    for face, mod in FACES.items():
        faces[face] = {
            "2d": bn_case(mod, *BN_INPUTS["2d"]),
            "4d": bn_case(mod, *BN_INPUTS["4d"]),
            "2d_set_weights": bn_case(mod, *BN_INPUTS["2d"], weights=gb),
            "4d_momentum_0.9_eps_1e-5": bn_case(mod, *BN_INPUTS["4d"], momentum=0.9, epsilon=1e-5),
        }
    write("batchnorm.json", {
        "formulas": {"input": WAVE + "; call input = wave(shape, k, scale=2.0, freq=0.37, offset=0.5 + k)"},
        "input_check": {n: clean(bn_input(shape, ks[0]).ravel()[:6]) for n, (shape, ks) in BN_INPUTS.items()},
        "notes": ("Each case: a fresh BatchNormalization (channels_last, axis=-1) built on shape; weights_in "
                  "(gamma, beta, moving_mean, moving_variance) set when given; called with training=True on each "
                  "k's input in turn (moving stats read after each call), then training=False on the first "
                  "input. tf_keras uses its fused kernel for 4D inputs."),
        "faces": faces,
    })


# --------------------------------------------------------------------------------------------
# metrics.json

def metric_inputs():
    """The fixed inputs of metrics.json (stored verbatim)."""
    logits_b = np.array([[2.0], [-1.0], [0.3], [-0.2], [1.5], [-2.5], [0.1], [0.9]], np.float32)
    probs_b = (1.0 / (1.0 + np.exp(-logits_b.astype(np.float64)))).astype(np.float32)
    logits_c = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 0.3], [-1.0, 3.0, 0.0], [0.5, 0.5, 2.5],
                         [1.0, -2.0, 0.5], [0.0, 1.0, 1.5]], np.float32)
    e = np.exp(logits_c.astype(np.float64) - logits_c.max(1, keepdims=True))
    probs_c = (e / e.sum(1, keepdims=True)).astype(np.float32)
    sparse = np.array([0, 2, 1, 2, 1, 0], np.int64)
    return {
        "binary_true": np.array([[1], [0], [0], [1], [0], [1], [1], [0]], np.float32),
        "binary_logits": logits_b, "binary_probs": probs_b,
        "binary_weights": np.array([1.0, 0.5, 2.0, 1.0, 0.0, 1.0, 3.0, 0.25], np.float32),
        "sparse_true": sparse, "onehot_true": np.eye(3, dtype=np.float32)[sparse],
        "class_logits": logits_c, "class_probs": probs_c,
        "class_weights": np.array([1.0, 2.0, 0.5, 0.0, 1.0, 1.5], np.float32),
        "reg_true": np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5], [3.0, 0.0], [-2.0, 1.5]], np.float32),
        "reg_pred": np.array([[0.1, 0.8], [1.0, -1.5], [0.5, 2.5], [2.0, 0.2], [-0.5, 1.0]], np.float32),
        "reg_weights": np.array([1.0, 0.0, 2.0, 0.5, 1.0], np.float32),
    }


LOSS_CASES = [  # (class, kwargs, y_true key, y_pred key, sample_weight key)
    ("SparseCategoricalCrossentropy", {}, "sparse_true", "class_probs", "class_weights"),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, "sparse_true", "class_logits", "class_weights"),
    ("CategoricalCrossentropy", {}, "onehot_true", "class_probs", "class_weights"),
    ("CategoricalCrossentropy", {"from_logits": True}, "onehot_true", "class_logits", "class_weights"),
    ("CategoricalCrossentropy", {"label_smoothing": 0.1}, "onehot_true", "class_probs", "class_weights"),
    ("BinaryCrossentropy", {}, "binary_true", "binary_probs", "binary_weights"),
    ("BinaryCrossentropy", {"from_logits": True}, "binary_true", "binary_logits", "binary_weights"),
    ("MeanSquaredError", {}, "reg_true", "reg_pred", "reg_weights"),
    ("MeanAbsoluteError", {}, "reg_true", "reg_pred", "reg_weights"),
    ("Huber", {}, "reg_true", "reg_pred", "reg_weights"),
    ("Huber", {"delta": 0.5}, "reg_true", "reg_pred", "reg_weights"),
]
LOSS_FUNCS = [("sparse_categorical_crossentropy", "sparse_true", "class_probs"),
              ("categorical_crossentropy", "onehot_true", "class_probs"),
              ("binary_crossentropy", "binary_true", "binary_probs"), ("mse", "reg_true", "reg_pred"),
              ("mae", "reg_true", "reg_pred"), ("huber", "reg_true", "reg_pred")]
METRIC_CASES = [  # (class, kwargs, y_true, y_pred, sample_weight)
    ("BinaryAccuracy", {}, "binary_true", "binary_probs", "binary_weights"),
    ("BinaryAccuracy", {"threshold": 0.3}, "binary_true", "binary_probs", "binary_weights"),
    ("CategoricalAccuracy", {}, "onehot_true", "class_probs", "class_weights"),
    ("SparseCategoricalAccuracy", {}, "sparse_true", "class_probs", "class_weights"),
    ("Accuracy", {}, "binary_true", "binary_true", "binary_weights"),
    ("MeanAbsoluteError", {}, "reg_true", "reg_pred", "reg_weights"),
    ("MeanSquaredError", {}, "reg_true", "reg_pred", "reg_weights"),
]


def loss_values(mod, x):
    """Each loss class on the fixed inputs, with and without sample_weight; loss functions by name per sample."""
    out = []
    for cls, kw, yt, yp, sw in LOSS_CASES:
        def run():
            loss = getattr(mod.losses, cls)(**kw)
            return {"value": np.float32(loss(x[yt], x[yp])),
                    "weighted": np.float32(loss(x[yt], x[yp], sample_weight=x[sw])),
                    "name": loss.name, "reduction": str(loss.reduction)}
        out.append({"class": cls, "kwargs": kw, "y_true": yt, "y_pred": yp, "sample_weight": sw, **outcome(run)})
    funcs = []
    for name, yt, yp in LOSS_FUNCS:
        funcs.append({"name": name, "y_true": yt, "y_pred": yp,
                      **outcome(lambda: np.asarray(mod.losses.get(name)(x[yt], x[yp]), np.float32))})
    return out, funcs


def metric_values(mod, x):
    """Each metric class: result after one update, after a second (weighted) update, and the weighted alone."""
    out = []
    for cls, kw, yt, yp, sw in METRIC_CASES:
        def run():
            m = getattr(mod.metrics, cls)(**kw)
            m.update_state(x[yt], x[yp])
            first = np.float32(m.result())
            m.update_state(x[yt], x[yp], sample_weight=x[sw])
            second = np.float32(m.result())
            m.reset_state()
            m.update_state(x[yt], x[yp], sample_weight=x[sw])
            return {"after_one": first, "after_two_second_weighted": second, "weighted_only": np.float32(m.result()),
                    "name": m.name}
        out.append({"class": cls, "kwargs": kw, "y_true": yt, "y_pred": yp, "sample_weight": sw, **outcome(run)})

    def mean():
        m = mod.metrics.Mean()
        m.update_state([1.0, 2.0, 4.0])
        a = np.float32(m.result())
        m.update_state(np.array([3.0, 5.0], np.float32), sample_weight=np.array([0.5, 2.0], np.float32))
        return {"after_one": a, "after_two": np.float32(m.result()), "name": m.name}
    out.append({"class": "Mean", "inputs": "[1,2,4] then [3,5] with sample_weight [0.5,2]", **outcome(mean)})
    by_name = {n: outcome(lambda: type(mod.metrics.get(n)).__name__ if not callable(mod.metrics.get(n)) or
                          isinstance(mod.metrics.get(n), type) else getattr(mod.metrics.get(n), "__name__",
                                                                             type(mod.metrics.get(n)).__name__))
               for n in ("accuracy", "acc", "mae", "mse", "binary_accuracy", "sparse_categorical_accuracy")}
    return out, by_name


COMPILE_CASES = [  # (loss, output units, activation, y key)
    ("binary_crossentropy", 1, "sigmoid", "binary"), ("sparse_categorical_crossentropy", 3, "softmax", "sparse"),
    ("categorical_crossentropy", 3, "softmax", "onehot"), ("mse", 1, "sigmoid", "binary"),
    ("mse", 3, "softmax", "onehot"),
]


def compile_accuracy(mod):
    """compile(metrics=["accuracy"]) + evaluate(return_dict=True) on a tiny model with set weights."""
    x_in = wave((13, 3), 0.0, scale=1.5, freq=0.9)
    ys = {"binary": np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1], np.float32).reshape(13, 1),
          "sparse": (np.arange(13) * 7 % 3).astype(np.int64)}
    ys["onehot"] = np.eye(3, dtype=np.float32)[ys["sparse"]]
    out = []
    for loss, units, act, ykey in COMPILE_CASES:
        for metric in ("accuracy", "acc"):
            def run():
                mod.backend.clear_session()
                model = mod.Sequential([mod.Input((3,)), mod.layers.Dense(units, activation=act)])
                model.set_weights([wave((3, units), 1.0, scale=0.8), wave((units,), 2.0, scale=0.3)])
                model.compile(optimizer="sgd", loss=loss, metrics=[metric])
                res = model.evaluate(x_in, ys[ykey], batch_size=13, return_dict=True, verbose=0)
                pred = model.predict(x_in, verbose=0)
                cands = {}
                for cls in ("BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy", "Accuracy"):
                    try:
                        m = getattr(mod.metrics, cls)()
                        m.update_state(ys[ykey], pred)
                        cands[cls] = np.float32(m.result())
                    except Exception as e:  # noqa: BLE001
                        cands[cls] = f"{type(e).__name__}: {e}"
                return {"evaluate": {k: np.float32(v) for k, v in res.items()}, "keys": list(res),
                        "metrics_names": list(model.metrics_names), "candidates": cands}
            out.append({"loss": loss, "units": units, "activation": act, "y": ykey, "metric": metric,
                        **outcome(run)})
    return {"x": clean(x_in), "y": {k: clean(v) for k, v in ys.items()},
            "weights": "kernel = wave((3, units), 1.0, scale=0.8), bias = wave((units,), 2.0, scale=0.3)",
            "cases": out}


def record_metrics():
    x = metric_inputs()
    faces = {}
    for face, mod in FACES.items():
        losses, funcs = loss_values(mod, x)
        metrics, by_name = metric_values(mod, x)
        faces[face] = {"losses": losses, "loss_functions": funcs, "metrics": metrics, "metrics_get": by_name,
                       "compile_accuracy": compile_accuracy(mod)}
    write("metrics.json", {"inputs": {k: clean(v) for k, v in x.items()},
                           "formulas": {"compile_inputs": WAVE},
                           "notes": ("Loss classes: value = loss(y_true, y_pred), weighted = with sample_weight "
                                     "(reduction sum_over_batch_size). loss_functions: keras.losses.get(name) per "
                                     "sample. compile_accuracy: which accuracy compile picks, by matching "
                                     "evaluate's value against the candidates."),
                           "faces": faces})


# --------------------------------------------------------------------------------------------
# summary.json

def summary_text(model):
    """model.summary() as printed."""
    lines = []
    model.summary(print_fn=lambda *a, **k: lines.append(a[0] if a else ""))
    return "\n".join(lines)


def counts(model):
    """Total, trainable and non-trainable parameter counts."""
    tr = int(sum(np.prod(v.shape) for v in model.trainable_weights))
    nt = int(sum(np.prod(v.shape) for v in model.non_trainable_weights))
    return {"total": int(model.count_params()), "trainable": tr, "non_trainable": nt}


def guide_model(mod, units):
    """The TF mixed-precision guide's model under mixed_float16, with the values the guide prints."""
    mod.backend.clear_session()
    mp = mod.mixed_precision
    mp.set_global_policy("mixed_float16")
    try:
        inputs = mod.Input(shape=(784,), name="digits")
        dense1 = mod.layers.Dense(units, activation="relu", name="dense_1")
        x = dense1(inputs)
        dense2 = mod.layers.Dense(units, activation="relu", name="dense_2")
        x = dense2(x)
        prints = {"dense1.dtype_policy": repr(dense1.dtype_policy), "str(dense1.dtype_policy)": str(dense1.dtype_policy),
                  "x.dtype": repr(x.dtype), "x.dtype.name": outcome(lambda: x.dtype.name),
                  "dense1.kernel.dtype": repr(dense1.kernel.dtype),
                  "dense1.kernel.dtype.name": outcome(lambda: dense1.kernel.dtype.name),
                  "dense1.compute_dtype": dense1.compute_dtype, "dense1.variable_dtype": dense1.variable_dtype,
                  "dense1.dtype": repr(dense1.dtype)}
        x = mod.layers.Dense(10, name="dense_logits")(x)
        prints["logits.dtype"] = repr(x.dtype)
        outputs = mod.layers.Activation("softmax", dtype="float32", name="predictions")(x)
        prints["outputs.dtype"] = repr(outputs.dtype)
        prints["outputs.dtype.name"] = outcome(lambda: outputs.dtype.name)
        model = mod.Model(inputs=inputs, outputs=outputs)
        model.compile(loss="sparse_categorical_crossentropy", optimizer=mod.optimizers.RMSprop(), metrics=["accuracy"])
        prints["model.optimizer class"] = type(model.optimizer).__name__
        prints["global_policy"] = repr(mp.global_policy())
        return {"units": units, "prints": prints, "counts": counts(model), "summary": summary_text(model),
                "layers": [[l.name, type(l).__name__, repr(l.dtype_policy)] for l in model.layers]}
    finally:
        mp.set_global_policy("float32")


def small_cnn(mod):
    """A small Sequential CNN (float32)."""
    mod.backend.clear_session()
    L = mod.layers
    model = mod.Sequential([mod.Input((28, 28, 1)), L.Conv2D(8, 3, activation="relu"), L.MaxPooling2D(),
                            L.Conv2D(filters=16, kernel_size=3, strides=2, padding="same"), L.BatchNormalization(),
                            L.Flatten(), L.Dropout(0.5), L.Dense(10, activation="softmax")])
    return {"code": ("Sequential([Input((28, 28, 1)), Conv2D(8, 3, activation='relu'), MaxPooling2D(), "
                     "Conv2D(filters=16, kernel_size=3, strides=2, padding='same'), BatchNormalization(), Flatten(), "
                     "Dropout(0.5), Dense(10, activation='softmax')])"),
            "counts": counts(model), "summary": summary_text(model), "layers": layer_table(model)}


def layer_table(model, weights=True):
    """[name, class, output shape, [[weight path, shape, trainable], ...]] per layer."""
    rows = []
    for l in model.layers:
        try:
            shape = list(l.output.shape)
        except Exception:  # noqa: BLE001
            shape = None
        row = [l.name, type(l).__name__, shape]
        if weights:
            row.append([[getattr(v, "path", v.name), list(v.shape), bool(v.trainable)] for v in l.weights])
        rows.append(row)
    return rows


def mobilenet(mod, top, detail):
    """MobileNetV2(weights=None) on 32x32x3, without top or with a 10-class top."""
    mod.backend.clear_session()
    kw = {"include_top": True, "classes": 10} if top else {"include_top": False}
    model = mod.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None, **kw)
    return {"kwargs": kw, "name": model.name, "counts": counts(model), "n_layers": len(model.layers),
            "output_shape": list(model.output.shape), "layers": layer_table(model, weights=detail)}


def policies(mod):
    """repr/str/attributes of each policy name, and the Policy class names."""
    out = {}
    for name in ("float32", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"):
        def run():
            p = mod.mixed_precision.Policy(name)
            return {"repr": repr(p), "str": str(p), "name": p.name, "compute_dtype": p.compute_dtype,
                    "variable_dtype": p.variable_dtype, "class": type(p).__name__}
        out[name] = outcome(run)
    out["global_policy_default"] = repr(mod.mixed_precision.global_policy())
    for name in ("float16", "mixed_float16", "mixed_bfloat16"):
        def wrapped():
            mod.backend.clear_session()
            mod.mixed_precision.set_global_policy(name)
            try:
                m = mod.Sequential([mod.Input((3,)), mod.layers.Dense(2)])
                m.compile(optimizer="sgd", loss="mse")
                return type(m.optimizer).__name__
            finally:
                mod.mixed_precision.set_global_policy("float32")
        out[f"compile_optimizer_class_under_{name}"] = outcome(wrapped)
    out["has_DTypePolicy"] = hasattr(mod.mixed_precision, "DTypePolicy")
    out["has_experimental"] = hasattr(mod.mixed_precision, "experimental")
    return out


def record_summary():
    faces = {}
    for face, mod in FACES.items():
        faces[face] = {"guide_4096": guide_model(mod, 4096), "guide_64": guide_model(mod, 64),
                       "small_cnn": small_cnn(mod),
                       "mobilenetv2_notop": mobilenet(mod, False, face == "keras3"),
                       "mobilenetv2_top10": mobilenet(mod, True, face == "keras3"),
                       "policies": policies(mod)}
    write("summary.json", {
        "notes": ("summary: model.summary(print_fn=...) lines joined by newlines (Keras 3 hands the whole rich "
                  "table in one call; COLUMNS=200 so the width is Keras's default). layers rows: [name, class, "
                  "output shape, [[weight path, shape, trainable], ...]] (weights only for keras3 MobileNetV2)."),
        "faces": faces})


# --------------------------------------------------------------------------------------------
# weights/: tiny.weights.h5 files written by Keras 3, and weights.json

def h5_layout(path):
    """Every group and dataset in an h5 file: path, kind, shape, dtype, attributes."""
    rows = []

    def visit(name, obj):
        attrs = {k: clean(v.decode() if isinstance(v, bytes) else v) for k, v in obj.attrs.items()}
        if isinstance(obj, h5py.Dataset):
            rows.append({"path": name, "kind": "dataset", "shape": list(obj.shape), "dtype": str(obj.dtype),
                         "attrs": attrs})
        else:
            rows.append({"path": name, "kind": "group", "attrs": attrs})
    with h5py.File(path, "r") as f:
        rows.append({"path": "/", "kind": "group",
                     "attrs": {k: clean(v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}})
        f.visititems(visit)
    return rows


def tiny_models():
    """The two tiny Keras 3 models (functional and Sequential): Dense 3 relu -> BatchNormalization -> Dense 2."""
    L = keras.layers
    keras.backend.clear_session()
    inp = keras.Input((4,), name="x")
    h = L.Dense(3, activation="relu", name="hidden")(inp)
    h = L.BatchNormalization(name="bn")(h)
    functional = keras.Model(inp, L.Dense(2, name="out")(h), name="tiny")
    keras.backend.clear_session()
    sequential = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="relu"), L.BatchNormalization(),
                                   L.Dense(2)])
    return {"functional": functional, "sequential": sequential}


def tiny_weights():
    """The set weights, in get_weights() order: wave(shape, i, scale=0.6, freq=0.37, offset) per weight."""
    shapes = [(4, 3), (3,), (3,), (3,), (3,), (3,), (3, 2), (2,)]
    offsets = [0.0, 0.1, 1.0, 0.0, 0.2, 1.0, 0.0, -0.1]  # gamma and moving_variance around 1
    return [wave(s, float(i), scale=0.6 if i not in (2, 5) else 0.3, offset=o)
            for i, (s, o) in enumerate(zip(shapes, offsets))]


def record_weights():
    x = wave((5, 4), 3.0, scale=1.5, freq=0.7)
    ws = tiny_weights()
    out = {}
    for kind, model in tiny_models().items():
        model.set_weights(ws)
        path = OUT / "weights" / f"tiny_{kind}.weights.h5"
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        model.save_weights(str(path))
        pred = model.predict(x, verbose=0)
        direct = model(x, training=False)
        out[kind] = {"file": path.name, "bytes": path.stat().st_size, "model_name": model.name,
                     "layers": layer_table(model), "predictions": clean(np.asarray(pred, np.float32)),
                     "call_training_false": clean(np.asarray(direct, np.float32)), "h5_layout": h5_layout(path)}
    write("weights/weights.json", {
        "notes": ("Keras 3 model.save_weights of two tiny models: functional (Input 'x' (4,) -> Dense(3, relu, "
                  "name='hidden') -> BatchNormalization(name='bn') -> Dense(2, name='out'), model name 'tiny') "
                  "and Sequential([Input((4,)), Dense(3, relu), BatchNormalization(), Dense(2)]), both with the "
                  "weights below set by set_weights (gamma, beta, moving_mean, moving_variance for bn). "
                  "predictions = model.predict(x) in float32."),
        "weights": [clean(w) for w in ws], "weight_shapes": [list(w.shape) for w in ws],
        "x": clean(x), "models": out})


# --------------------------------------------------------------------------------------------
# callbacks.json

ES_MONITORED = [1.0, 0.8, 0.85, 0.79, 0.81, 0.82, 0.83, 0.7, 0.69, 0.71, 0.72, 0.73]
ACC_MONITORED = [0.3, 0.45, 0.5, 0.55, 0.54, 0.56, 0.53, 0.52, 0.6, 0.58, 0.57, 0.56]
ES_CASES = [
    ({"monitor": "val_loss", "patience": 2}, ES_MONITORED),
    ({"monitor": "val_loss", "patience": 2, "min_delta": 0.05}, ES_MONITORED),
    ({"monitor": "val_loss", "patience": 2, "min_delta": 0.05, "restore_best_weights": True}, ES_MONITORED),
    ({"monitor": "val_loss", "patience": 20, "restore_best_weights": True}, ES_MONITORED),
    ({"monitor": "val_loss", "patience": 0}, ES_MONITORED),
    ({"monitor": "val_accuracy", "patience": 1}, ACC_MONITORED),
    ({"monitor": "val_accuracy", "patience": 2, "mode": "max", "baseline": 0.58}, ACC_MONITORED),
    ({"monitor": "val_loss", "patience": 1, "start_from_epoch": 3}, ES_MONITORED),
    ({"monitor": "val_loss", "patience": 2, "verbose": 1, "restore_best_weights": True}, ES_MONITORED),
    ({"monitor": "missing", "patience": 1}, ES_MONITORED),
    ({"monitor": "missing", "patience": 1, "mode": "min"}, ES_MONITORED),
    ({"monitor": "val_acc", "patience": 1}, ACC_MONITORED),
]
RLR_MONITORED = [1.0, 0.9, 0.91, 0.92, 0.93, 0.85, 0.86, 0.87, 0.88, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95]
RLR_CASES = [
    {"monitor": "val_loss", "factor": 0.5, "patience": 2},
    {"monitor": "val_loss", "factor": 0.5, "patience": 2, "cooldown": 1},
    {"monitor": "val_loss", "factor": 0.5, "patience": 1, "cooldown": 2, "min_lr": 0.02},
    {"monitor": "val_loss", "factor": 0.1, "patience": 2, "min_delta": 0.05},
    {"monitor": "val_loss", "factor": 0.5, "patience": 1, "cooldown": 3},
    {"monitor": "val_loss", "factor": 0.5, "patience": 2, "verbose": 1},
    {"monitor": "val_accuracy", "factor": 0.5, "patience": 1},
]


def callback_model(mod):
    """A one-weight model compiled with SGD(0.1); its kernel is set to the epoch number before each epoch's end."""
    mod.backend.clear_session()
    model = mod.Sequential([mod.Input((1,)), mod.layers.Dense(1, use_bias=False)])
    model.compile(optimizer=mod.optimizers.SGD(learning_rate=0.1), loss="mse")
    return model


def drive(mod, cb, key, values):
    """Run the callback's hooks over the monitored values; per-epoch records and the printed text."""
    model = callback_model(mod)
    cb.set_model(model)
    model.stop_training = False
    buf = io.StringIO()
    lrs, stops, first_logs, stop = [], [], None, None
    with redirect_stdout(buf), warnings.catch_warnings(record=True) as caught:
        watch_warnings()
        cb.on_train_begin()
        for epoch, v in enumerate(values):
            model.set_weights([np.array([[float(epoch)]], np.float32)])
            cb.on_epoch_begin(epoch)
            logs = {"loss": float(v) + 0.1, key: float(v)}
            cb.on_epoch_end(epoch, logs)
            lrs.append(clean(np.float32(model.optimizer.learning_rate.numpy())))
            stops.append(bool(model.stop_training))
            if first_logs is None:
                first_logs = clean({k: x if isinstance(x, (int, float)) else np.float32(x) for k, x in logs.items()})
            if model.stop_training:
                stop = epoch
                break
        cb.on_train_end()
    return model, {"epochs_run": len(lrs), "learning_rates": lrs, "stop_training": stops, "stopped_at_epoch": stop,
                   "first_epoch_logs_after": first_logs, "printed": buf.getvalue(),
                   "warnings": unique(str(w.message) for w in caught),
                   "final_kernel": clean(np.float32(model.get_weights()[0][0, 0]))}


def record_callbacks():
    faces = {}
    for face, mod in FACES.items():
        es = []
        for kw, values in ES_CASES:
            def run():
                cb = mod.callbacks.EarlyStopping(**kw)
                _, rec = drive(mod, cb, kw["monitor"] if kw["monitor"] != "missing" else "val_loss", values)
                rec.update({"stopped_epoch_attr": cb.stopped_epoch, "wait": cb.wait, "best": clean(cb.best),
                            "best_epoch": getattr(cb, "best_epoch", None)})
                return rec
            es.append({"kwargs": kw, "values": values, **outcome(run)})
        rlr = []
        for kw in RLR_CASES:
            def run():
                cb = mod.callbacks.ReduceLROnPlateau(**kw)
                _, rec = drive(mod, cb, kw["monitor"], RLR_MONITORED if "loss" in kw["monitor"] else ACC_MONITORED)
                rec.update({"wait": cb.wait, "cooldown_counter": cb.cooldown_counter, "best": clean(cb.best)})
                return rec
            rlr.append({"kwargs": kw, "values": RLR_MONITORED if "loss" in kw["monitor"] else ACC_MONITORED,
                        **outcome(run)})
        defaults = {"EarlyStopping": outcome(lambda: {k: clean(getattr(mod.callbacks.EarlyStopping(), k, None))
                                                       for k in ("monitor", "min_delta", "patience", "verbose",
                                                                 "mode", "baseline", "restore_best_weights",
                                                                 "start_from_epoch")}),
                    "ReduceLROnPlateau": outcome(lambda: {k: clean(getattr(mod.callbacks.ReduceLROnPlateau(), k,
                                                                            None))
                                                          for k in ("monitor", "factor", "patience", "verbose",
                                                                    "mode", "min_delta", "cooldown", "min_lr")})}
        faces[face] = {"early_stopping": es, "reduce_lr_on_plateau": rlr, "defaults": defaults}
    write("callbacks.json", {
        "notes": ("Each case drives one callback by hand: set_model(a one-weight model compiled with "
                  "SGD(learning_rate=0.1)), on_train_begin, then per epoch e: kernel set to e, on_epoch_begin(e), "
                  "on_epoch_end(e, logs={'loss': v + 0.1, monitor: v}) (monitor 'missing': the key is 'val_loss'); "
                  "stops after the epoch where model.stop_training became True; on_train_end. learning_rates[e] "
                  "and stop_training[e] are read after on_epoch_end(e); first_epoch_logs_after: logs after "
                  "epoch 0's on_epoch_end (ReduceLROnPlateau adds the rate); "
                  "final_kernel after on_train_end tells which epoch's weights were restored. printed: stdout."),
        "faces": faces})


# --------------------------------------------------------------------------------------------
# checkpoint.json

CKPT_LOSS = [1.0, 0.8, 0.8, 0.85, 0.79, 1.2, 0.7, 0.7, 0.75, 0.69]  # ties: a strict improvement is needed
CKPT_PATHS = ["ckpt-{epoch:02d}.weights.h5", "ckpt.weights.h5"]  # a file per save; one file, overwritten
CKPT_CASES = [
    ({}, CKPT_LOSS),
    ({"save_best_only": True}, CKPT_LOSS),
    ({"save_best_only": True, "mode": "min"}, CKPT_LOSS),
    ({"save_best_only": True, "mode": "max"}, CKPT_LOSS),
    ({"monitor": "val_accuracy", "save_best_only": True}, ACC_MONITORED),
    ({"monitor": "val_accuracy", "save_best_only": True, "mode": "max"}, ACC_MONITORED),
    ({"save_best_only": True, "initial_value_threshold": 0.8}, CKPT_LOSS),
    ({"save_best_only": True, "initial_value_threshold": 0.8, "verbose": 1}, CKPT_LOSS),
    ({"save_best_only": True, "verbose": 1}, CKPT_LOSS),
    ({"verbose": 1}, CKPT_LOSS),
    ({"monitor": "missing", "save_best_only": True, "mode": "min"}, CKPT_LOSS),
]


def h5_kernel(path):
    """The one (1, 1) dataset of a weights file: the kernel, i.e. the epoch whose weights it holds."""
    found = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: found.append(obj[()]) if isinstance(obj, h5py.Dataset)
                     and obj.shape == (1, 1) else None)
    assert len(found) == 1, path
    return clean(np.float32(found[0][0, 0]))


def drive_checkpoint(mod, kw, filepath, values):
    """drive()'s protocol for ModelCheckpoint in an empty working directory; what each epoch left on disk."""
    model = callback_model(mod)
    key = "val_loss" if kw.get("monitor") == "missing" else kw.get("monitor", "val_loss")
    cb = mod.callbacks.ModelCheckpoint(filepath, save_weights_only=True, **kw)
    cb.set_model(model)
    buf, kernels = io.StringIO(), []
    with redirect_stdout(buf):
        cb.on_train_begin()
        for epoch, v in enumerate(values):
            model.set_weights([np.array([[float(epoch)]], np.float32)])
            cb.on_epoch_begin(epoch)
            cb.on_epoch_end(epoch, {"loss": float(v) + 0.1, key: float(v)})
            kernels.append(h5_kernel(filepath) if os.path.exists(filepath) else None)
        cb.on_train_end()
    files = sorted(os.listdir("."))
    saved = [int(h5_kernel(name)) for name in files] if "{" in filepath else \
        [e for e, k in enumerate(kernels) if k == e]
    return {"files": files, "saved_epochs": saved,
            "kept_kernel": h5_kernel(files[-1]) if files else None,  # ckpt-10 sorts last: the last one written
            "file_kernel_after_epoch": None if "{" in filepath else kernels,
            "best": clean(cb.best), "printed": buf.getvalue()}


def record_checkpoint():
    faces = {}
    for face, mod in FACES.items():
        cases = []
        for kw, values in CKPT_CASES:
            for filepath in CKPT_PATHS:
                with tempfile.TemporaryDirectory() as tmp:
                    cwd = os.getcwd()
                    os.chdir(tmp)
                    try:
                        rec = outcome(lambda: drive_checkpoint(mod, kw, filepath, values))
                    finally:
                        os.chdir(cwd)
                cases.append({"kwargs": {"filepath": filepath, "save_weights_only": True, **kw}, "values": values,
                              **rec})
        faces[face] = {"model_checkpoint": cases}
    write("checkpoint.json", {
        "notes": ("Each case drives ModelCheckpoint(**kwargs) by hand as callbacks.json does, in an empty working "
                  "directory (filepath is relative): set_model(a one-weight model compiled with "
                  "SGD(learning_rate=0.1)), on_train_begin, then per epoch e: kernel set to e, on_epoch_begin(e), "
                  "on_epoch_end(e, logs={'loss': v + 0.1, monitor: v}) (monitor 'missing': the key is 'val_loss'); "
                  "on_train_end. files: what the directory holds at the end; saved_epochs: the epochs (0-based) "
                  "whose weights were written, read back from the files (the kernel is the epoch); kept_kernel: "
                  "the kernel in the last file written; file_kernel_after_epoch (fixed filepath): the kernel in the "
                  "file after each epoch (null: no file yet); best: the callback's best after training; printed: "
                  "stdout. A Keras 3 error (mode 'auto' on a metric it cannot place) is the outcome's error."),
        "faces": faces})


# --------------------------------------------------------------------------------------------
# errors.json

def error_cases(mod):
    """Keras's error (or warning) for each misuse."""
    L = mod.layers

    def built_dense():
        mod.backend.clear_session()
        d = L.Dense(3, name="dense")
        d.build((None, 4))
        return d

    def model_4():
        mod.backend.clear_session()
        m = mod.Sequential([mod.Input((4,)), L.Dense(3, name="dense"), L.Dense(2, name="dense_1")])
        m.compile(optimizer="sgd", loss="mse")
        return m

    def fit_split():
        m = model_4()
        return m.fit(np.zeros((10, 4), np.float32), np.zeros((10, 2), np.float32), validation_split=1.0,
                     epochs=1, verbose=0).history

    def compile_metric():
        m = model_4()
        m.compile(optimizer="sgd", loss="mse", metrics=["foo_metric"])
        return m.evaluate(np.zeros((2, 4), np.float32), np.zeros((2, 2), np.float32), verbose=0)

    def compile_loss():
        m = model_4()
        m.compile(optimizer="sgd", loss="foo_loss")
        return m.evaluate(np.zeros((2, 4), np.float32), np.zeros((2, 2), np.float32), verbose=0)

    cases = {
        "layer_activation_unknown": lambda: L.Dense(3, activation="relux"),
        "activations_get_unknown": lambda: mod.activations.get("relux"),
        "layer_deserialize_unknown": lambda: L.deserialize({"class_name": "FooLayer", "config": {}}),
        "losses_get_unknown": lambda: mod.losses.get("foo_loss"),
        "compile_loss_unknown": compile_loss,
        "metrics_get_unknown": lambda: mod.metrics.get("foo_metric"),
        "compile_metric_unknown": compile_metric,
        "optimizers_get_unknown": lambda: mod.optimizers.get("foo_opt"),
        "compile_optimizer_unknown": lambda: model_4().compile(optimizer="foo_opt", loss="mse"),
        "policy_unknown": lambda: mod.mixed_precision.Policy("mixed_float17"),
        "set_global_policy_unknown": lambda: mod.mixed_precision.set_global_policy("foo"),
        "initializer_unknown": lambda: L.Dense(3, kernel_initializer="foo_init"),
        "set_weights_wrong_shape": lambda: built_dense().set_weights([np.zeros((5, 3), np.float32),
                                                                      np.zeros(3, np.float32)]),
        "set_weights_wrong_count": lambda: built_dense().set_weights([np.zeros((4, 3), np.float32)]),
        "model_set_weights_wrong_shape": lambda: model_4().set_weights(
            [np.zeros((4, 3), np.float32), np.zeros(3, np.float32), np.zeros((3, 5), np.float32),
             np.zeros(2, np.float32)]),
        "dense_wrong_last_dim_after_build": lambda: built_dense()(np.zeros((2, 5), np.float32)),
        "model_predict_wrong_last_dim": lambda: model_4().predict(np.zeros((2, 5), np.float32), verbose=0),
        "model_call_wrong_last_dim": lambda: model_4()(np.zeros((2, 5), np.float32)),
        "validation_split_1.0": fit_split,
        "dropout_rate_out_of_range": lambda: L.Dropout(1.5),
    }
    return {name: outcome(fn) for name, fn in cases.items()}


def record_errors():
    faces = {face: error_cases(mod) for face, mod in FACES.items()}
    for mod in FACES.values():
        mod.mixed_precision.set_global_policy("float32")
    write("errors.json", {"notes": "outcome of each misuse: error type and message (Keras's own text), warnings",
                          "faces": faces})


RECORDERS = {"loss_scale": record_loss_scale, "optimizers": record_optimizers, "batchnorm": record_batchnorm,
             "metrics": record_metrics, "summary": record_summary, "weights": record_weights,
             "callbacks": record_callbacks, "checkpoint": record_checkpoint, "errors": record_errors}


def main(argv):
    names = argv or list(RECORDERS)
    for name in names:
        RECORDERS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])

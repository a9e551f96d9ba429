"""Record what Keras 3's attention, Dot, 3-D and transposed convolution, 3-D pooling and reshaping,
UnitNormalization, SpatialDropout and ActivityRegularization layers do into tests/fixtures/keras/layers_c.json
(and two models' weights into tests/fixtures/keras/weights/layers_c_*.weights.h5). tests/keras/test_layers_c.py
runs the same cases through minifp.keras (it imports CASES, MODELS and the formulas from here).

Run by hand with a real Keras 3 on torch (not the project's environment):
    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_layers_c.py

Per case: the layer built on inputs(shape, k) for each input, its weights set to weight_values(shape, i) in
Keras's order, called with the case's call arguments (masks as bool lists); stored are the outputs, the
gradients of sum(out * cotangent) (one cotangent per output) w.r.t. the inputs and the weights, the weights'
names and shapes, layer.losses, get_config without its dtype, and the output shapes of a symbolic call.
"""
import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ["COLUMNS"] = "200"   # Keras 3's summary narrows its table to the terminal; 200 keeps line_length's width
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "keras" / "layers_c.json"
WEIGHTS = ROOT / "tests" / "fixtures" / "keras" / "weights"

QV = [(2, 3, 4), (2, 5, 4)]
QMASK, VMASK = [[True, True, False], [True, False, False]], [[True, True, True, False, False], [True] * 5]

# (class name, kwargs, input shapes (a list: the layer takes a list), call kwargs)
CASES = [
    ("Attention", {}, QV, {}),
    ("Attention", {"use_scale": True}, QV + [(2, 5, 4)], {"return_attention_scores": True}),
    ("Attention", {"score_mode": "concat"}, QV, {"return_attention_scores": True}),
    ("Attention", {"use_scale": True, "score_mode": "concat"}, [(2, 4, 4), (2, 4, 4)], {"use_causal_mask": True}),
    ("Attention", {}, QV, {"mask": [QMASK, VMASK], "return_attention_scores": True}),
    ("Attention", {}, [(2, 4, 3), (2, 4, 3)], {"mask": [None, [[True, True, False, True]] * 2],
                                               "use_causal_mask": True}),
    ("Attention", {"dropout": 0.3, "seed": 1}, QV, {}),
    ("AdditiveAttention", {}, QV, {}),
    ("AdditiveAttention", {"use_scale": False}, QV, {"mask": [QMASK, VMASK], "return_attention_scores": True}),
    ("AdditiveAttention", {}, [(2, 4, 3), (2, 4, 3), (2, 4, 3)], {"use_causal_mask": True}),
    ("Dot", {"axes": -1}, [(2, 4), (2, 4)], {}),
    ("Dot", {"axes": 1, "normalize": True}, [(2, 4), (2, 4)], {}),
    ("Dot", {"axes": [2, 2]}, QV, {}),
    ("Dot", {"axes": [1, 2]}, [(2, 4, 3), (2, 5, 4)], {}),
    ("Dot", {"axes": 2, "normalize": True}, QV, {}),
    ("Dot", {"axes": [1, 1]}, [(2, 3, 4, 2), (2, 3, 5)], {}),
    ("Dot", {"axes": [2, 1]}, [(2, 3, 4), (2, 4)], {}),
    ("Conv1DTranspose", {"filters": 2, "kernel_size": 3}, [(2, 5, 3)], {}),
    ("Conv1DTranspose", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"}, [(2, 5, 3)], {}),
    ("Conv1DTranspose", {"filters": 3, "kernel_size": 2, "strides": 3, "output_padding": 1, "use_bias": False,
                         "activation": "tanh"}, [(2, 4, 3)], {}),
    ("Conv1DTranspose", {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "data_format": "channels_first"},
     [(2, 3, 5)], {}),
    ("Conv3D", {"filters": 2, "kernel_size": 2}, [(1, 3, 3, 4, 3)], {}),
    ("Conv3D", {"filters": 4, "kernel_size": 3, "strides": 2, "padding": "same", "groups": 2, "activation": "relu"},
     [(1, 5, 4, 3, 2)], {}),
    ("Conv3D", {"filters": 2, "kernel_size": [2, 3, 1], "dilation_rate": [2, 1, 1], "use_bias": False,
                "data_format": "channels_first"}, [(1, 3, 5, 3, 2)], {}),
    ("Conv3D", {"filters": 3, "kernel_size": 2, "strides": [1, 2, 1], "padding": "same"}, [(1, 3, 4, 3, 2)], {}),
    ("Conv3DTranspose", {"filters": 2, "kernel_size": 2}, [(1, 2, 3, 3, 3)], {}),
    ("Conv3DTranspose", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"}, [(1, 2, 2, 2, 2)], {}),
    ("Conv3DTranspose", {"filters": 3, "kernel_size": [2, 2, 3], "strides": [2, 1, 2], "output_padding": [1, 0, 1],
                         "data_format": "channels_first"}, [(1, 2, 2, 2, 2)], {}),
    ("MaxPooling3D", {}, [(1, 4, 4, 4, 2)], {}),
    ("MaxPooling3D", {"pool_size": 3, "strides": 2, "padding": "same"}, [(1, 5, 4, 3, 2)], {}),
    ("MaxPooling3D", {"pool_size": [2, 1, 2], "strides": 1, "data_format": "channels_first"}, [(1, 2, 3, 4, 3)], {}),
    ("AveragePooling3D", {"pool_size": 2}, [(1, 4, 4, 4, 1)], {}),
    ("AveragePooling3D", {"pool_size": 3, "strides": 2, "padding": "same"}, [(1, 5, 5, 3, 2)], {}),
    ("AveragePooling3D", {"pool_size": [1, 2, 2], "strides": [1, 1, 2], "data_format": "channels_first"},
     [(1, 2, 3, 4, 4)], {}),
    ("AveragePooling3D", {"pool_size": 2, "strides": 1, "padding": "same"}, [(1, 3, 3, 3, 1)], {}),
    ("GlobalMaxPooling3D", {}, [(2, 3, 2, 4, 2)], {}),
    ("GlobalMaxPooling3D", {"keepdims": True, "data_format": "channels_first"}, [(2, 3, 2, 4, 2)], {}),
    ("GlobalAveragePooling3D", {}, [(2, 3, 2, 4, 2)], {}),
    ("GlobalAveragePooling3D", {"keepdims": True}, [(2, 3, 2, 4, 2)], {}),
    ("UpSampling3D", {}, [(1, 2, 3, 2, 2)], {}),
    ("UpSampling3D", {"size": [1, 2, 3], "data_format": "channels_first"}, [(1, 2, 3, 2, 2)], {}),
    ("ZeroPadding3D", {}, [(1, 2, 3, 2, 2)], {}),
    ("ZeroPadding3D", {"padding": [1, 0, 2]}, [(1, 2, 3, 2, 2)], {}),
    ("ZeroPadding3D", {"padding": [[0, 1], [2, 0], [1, 1]], "data_format": "channels_first"}, [(1, 2, 3, 2, 2)], {}),
    ("Cropping3D", {}, [(1, 4, 5, 4, 2)], {}),
    ("Cropping3D", {"cropping": [1, 0, 2]}, [(1, 4, 5, 5, 2)], {}),
    ("Cropping3D", {"cropping": [[0, 1], [2, 0], [1, 1]], "data_format": "channels_first"}, [(1, 2, 4, 5, 4)], {}),
    ("UnitNormalization", {}, [(2, 3, 4)], {}),
    ("UnitNormalization", {"axis": [1, 2]}, [(2, 3, 4)], {}),
    ("UnitNormalization", {"axis": 1}, [(2, 3, 4)], {}),
    ("SpatialDropout1D", {"rate": 0.5}, [(2, 3, 4)], {}),
    ("SpatialDropout2D", {"rate": 0.5, "data_format": "channels_first"}, [(2, 3, 4, 2)], {}),
    ("SpatialDropout3D", {"rate": 0.25, "seed": 4}, [(1, 2, 3, 2, 2)], {}),
    ("ActivityRegularization", {"l1": 0.01, "l2": 0.02}, [(2, 3, 4)], {}),
    ("ActivityRegularization", {}, [(2, 3)], {}),
]

ERRORS = [
    ("Attention", {"score_mode": "general"}),
    ("Dot", {"axes": "x"}),
    ("Dot", {"axes": [1, 2, 3]}),
    ("Dot", {"axes": [1.0, 2]}),
    ("Conv3D", {"filters": 0, "kernel_size": 2}),
    ("Conv3D", {"filters": 2, "kernel_size": [2, 2]}),
    ("Conv3D", {"filters": 2, "kernel_size": 2, "strides": 2, "dilation_rate": 2}),
    ("Conv3D", {"filters": 4, "kernel_size": 2, "groups": 3}),
    ("Conv3DTranspose", {"filters": 2, "kernel_size": 2, "strides": 2, "output_padding": 2}),
    ("Conv1DTranspose", {"filters": -1, "kernel_size": 2}),
    ("Conv1DTranspose", {"filters": 2, "kernel_size": 0}),
    ("Conv1DTranspose", {"filters": 2, "kernel_size": 2, "strides": 2, "output_padding": 3}),
    ("MaxPooling3D", {"pool_size": [2, 2]}),
    ("GlobalMaxPooling3D", {"data_format": "channels_middle"}),
    ("UpSampling3D", {"size": 0}),
    ("ZeroPadding3D", {"padding": [1, 2]}),
    ("ZeroPadding3D", {"padding": 1.5}),
    ("ZeroPadding3D", {"padding": [1, 2, -1]}),
    ("Cropping3D", {"cropping": -1}),
    ("Cropping3D", {"cropping": [[1, 1], [1], [0, 0]]}),
    ("UnitNormalization", {"axis": "a"}),
    ("SpatialDropout2D", {"rate": 1.5}),
    ("SpatialDropout3D", {"rate": 0.5, "data_format": "bad"}),
    ("SpatialDropout1D", {"rate": 0.5, "trainable": False}),
]

# a layer called on inputs it cannot take: (class, kwargs, input shapes, call kwargs)
CALL_ERRORS = [
    ("Attention", {}, [(2, 3, 4)], {}),
    ("Attention", {}, QV, {"mask": [QMASK]}),
    ("Dot", {"axes": -1}, [(2, 3), (2, 4)], {}),
    ("Dot", {"axes": 0}, [(2, 3), (2, 3)], {}),
    ("Dot", {"axes": 1}, [(2, 3), (2, 3), (2, 3)], {}),
    ("Conv3D", {"filters": 2, "kernel_size": 2}, [(2, 3, 4, 5)], {}),
    ("Cropping3D", {"cropping": 2}, [(1, 3, 5, 5, 2)], {}),
    ("SpatialDropout1D", {"rate": 0.5}, [(2, 3)], {}),
    ("GlobalAveragePooling3D", {}, [(2, 3, 4, 5)], {}),
]

# the same, called on symbolic inputs (shapes without the batch): Keras's errors at graph building
SYMBOLIC_ERRORS = [
    ("UnitNormalization", {"axis": 3}, [(3, 4)]),
    ("UnitNormalization", {"axis": [1, -4]}, [(3, 4)]),
    ("Dot", {"axes": [1, 2]}, [(3, 4), (5, 4)]),
    ("Conv3D", {"filters": 2, "kernel_size": 2}, [(3, 4, 5)]),
    ("Cropping3D", {"cropping": [1, 2, 1]}, [(3, 4, 5, 2)]),
]


def inputs(shape, k=0.37):
    """Deterministic float32 values in [-1, 1): (i * k) mod 2 - 1, row-major (the tests compute the same)."""
    return ((np.arange(int(np.prod(shape)), dtype=np.float64) * k) % 2 - 1).astype(np.float32).reshape(shape)


def input_values(shapes):
    """The case's inputs: inputs(shape, 0.37 + 0.11 * j) for input j."""
    return [inputs(tuple(s), 0.37 + 0.11 * j) for j, s in enumerate(shapes)]


def weight_values(shape, i):
    """The i-th weight's values: half of inputs(shape, 0.23 + 0.07 * i), so every weight differs."""
    return inputs(tuple(shape), 0.23 + 0.07 * i) * np.float32(0.5)


def cotangent(shape, j):
    """The cotangent of output j."""
    return inputs(tuple(shape), 0.29 + 0.04 * j)


def call_arguments(call):
    """The call kwargs as arrays (masks as bool arrays; None stays None)."""
    out = dict(call)
    if "mask" in out:
        out["mask"] = [None if m is None else np.array(m, bool) for m in out["mask"]]
    return out


def layer_inputs(values, name):
    """What the layer is called on: the list itself for the layers that take lists, else its one input."""
    return values if name in ("Attention", "AdditiveAttention", "Dot") else values[0]


# models for the summary and the weights files: (name, builder(keras) -> model, input shapes of one batch)
def sequential_3d(keras):
    L = keras.layers
    return keras.Sequential([keras.Input((4, 6, 6, 2)), L.Conv3D(4, 3, padding="same", activation="relu"),
                             L.MaxPooling3D(2), L.SpatialDropout3D(0.2), L.Conv3DTranspose(3, 2, strides=2),
                             L.ZeroPadding3D(1), L.Cropping3D(((1, 1), (0, 2), (2, 0))), L.UpSampling3D((1, 2, 1)),
                             L.AveragePooling3D(2), L.GlobalMaxPooling3D(), L.UnitNormalization(),
                             L.ActivityRegularization(l2=0.01), L.Dense(3)])


def functional_attention(keras):
    L = keras.layers
    query, value = keras.Input((5, 8), name="query"), keras.Input((7, 8), name="value")
    a = L.Attention(use_scale=True)([query, value])
    b = L.AdditiveAttention()([query, value])
    c = L.Dot(axes=2)([a, b])
    d = L.Conv1DTranspose(4, 3, strides=2)(c)
    e = L.SpatialDropout1D(0.1)(d)
    f = L.GlobalAveragePooling1D()(e)
    return keras.Model(inputs=[query, value], outputs=L.Dense(2)(f))


MODELS = [("sequential_3d", sequential_3d, [(2, 4, 6, 6, 2)]),
          ("functional_attention", functional_attention, [(2, 5, 8), (2, 7, 8)])]


def error(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001  (recording whatever Keras raises)
        lines = [re.sub(r"\x1b\[\d+m", "", line) for line in str(e).splitlines() if line.strip()]
        return [type(e).__name__, lines[1] if lines[0].startswith("Exception encountered") else lines[0]]
    return None


def floats(a):
    """A float32 array as nested lists of the shortest decimals that round back to it (a smaller fixture)."""
    a = np.asarray(a, np.float32)
    return np.array([float(str(v)) for v in a.ravel()], np.float64).reshape(a.shape).tolist()


def _listed(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def record_case(keras, torch, name, kwargs, shapes, call):
    layer = getattr(keras.layers, name)(**kwargs)
    xs = [torch.tensor(v, requires_grad=True) for v in input_values(shapes)]
    arguments = call_arguments(call)
    layer.build([tuple(s) for s in shapes] if name in ("Attention", "AdditiveAttention", "Dot") else tuple(shapes[0]))
    for i, w in enumerate(layer.weights):
        w.assign(weight_values(w.shape, i))
    outs = _listed(layer(layer_inputs(xs, name), **arguments))
    loss = sum((o * torch.tensor(cotangent(tuple(o.shape), j))).sum() for j, o in enumerate(outs))
    grads = torch.autograd.grad(loss, xs + [w.value for w in layer.trainable_weights])
    config = {k: v for k, v in layer.get_config().items() if k != "dtype"}
    symbolic_inputs = [keras.Input(tuple(s[1:])) for s in shapes]
    symbolic = _listed(getattr(keras.layers, name)(**kwargs)(layer_inputs(symbolic_inputs, name),
                                                              **{k: v for k, v in call.items() if k != "mask"}))
    return {"layer": name, "kwargs": kwargs, "shapes": [list(s) for s in shapes], "call": call,
            "config": json.loads(json.dumps(config)),
            "outs": [floats(o.detach().numpy()) for o in outs],
            "grads": [floats(g.numpy()) for g in grads],
            "weights": [[w.name, list(w.shape)] for w in layer.weights],
            "losses": [float(v.detach()) for v in layer.losses],
            "symbolic_shapes": [list(t.shape) for t in symbolic]}


def record_model(keras, name, build, shapes):
    keras.backend.clear_session()
    model = build(keras)
    for i, w in enumerate(model.weights):
        w.assign(weight_values(w.shape, i))
    lines = []
    model.summary(line_length=88, print_fn=lines.append)
    xs = input_values(shapes)
    out = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
    path = WEIGHTS / f"layers_c_{name}.weights.h5"
    with tempfile.TemporaryDirectory() as tmp:      # saved elsewhere first: Keras writes in place
        model.save_weights(f"{tmp}/w.weights.h5")
        path.write_bytes(Path(f"{tmp}/w.weights.h5").read_bytes())
    return {"summary": "\n".join(lines), "paths": [w.path for w in model.weights],
            "predict": floats(out)}


def main():
    import keras
    import torch
    WEIGHTS.mkdir(parents=True, exist_ok=True)
    data = {"versions": {"keras": keras.__version__, "torch": torch.__version__},
            "cases": [record_case(keras, torch, *c) for c in CASES],
            "errors": [{"layer": n, "kwargs": kw, "error": error(lambda: getattr(keras.layers, n)(**kw))}
                       for n, kw in ERRORS],
            "call_errors": [{"layer": n, "kwargs": kw, "shapes": [list(s) for s in shapes], "call": call,
                             "error": error(lambda: getattr(keras.layers, n)(**kw)(
                                 layer_inputs(input_values(shapes), n), **call_arguments(call)))}
                            for n, kw, shapes, call in CALL_ERRORS],
            "symbolic_errors": [{"layer": n, "kwargs": kw, "shapes": [list(s) for s in shapes],
                                 "error": error(lambda: getattr(keras.layers, n)(**kw)(
                                     layer_inputs([keras.Input(s) for s in shapes], n)))}
                                for n, kw, shapes in SYMBOLIC_ERRORS],
            "models": {name: record_model(keras, name, build, shapes) for name, build, shapes in MODELS}}
    OUT.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()

"""Record what Keras 3's small layers do (Identity, Permute, RepeatVector, ZeroPadding1D, Cropping1D, UpSampling1D,
AveragePooling1D, MaxPooling1D, GroupNormalization, GaussianNoise, GaussianDropout, CategoryEncoding) into
tests/fixtures/keras/simple_layers.json. tests/keras/test_simple_layers.py runs the same cases through
minifp.keras (the fixture holds them all).

Run by hand with a real Keras 3 on torch (not the project's environment):
    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_simple_layers.py

Per case: the output for inputs(shape), its shape for a symbolic input (None batch), the weights' names and shapes,
get_config without its dtype, and the gradient of sum(output * cotangent(output shape)) w.r.t. the input.
The noise layers are recorded at inference only (their training draws come from each framework's own stream).
"""
import json
import os
import re
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "simple_layers.json"

# (class name, kwargs, input shape); the tests import nothing from here: the fixture holds them all
CASES = [
    ("Identity", {}, (2, 3, 4)),
    ("Permute", {"dims": [2, 1]}, (2, 3, 4)),
    ("Permute", {"dims": [3, 1, 2]}, (2, 3, 4, 2)),
    ("RepeatVector", {"n": 3}, (2, 4)),
    ("ZeroPadding1D", {}, (2, 3, 4)),
    ("ZeroPadding1D", {"padding": [2, 0]}, (2, 3, 4)),
    ("ZeroPadding1D", {"padding": 1, "data_format": "channels_first"}, (2, 3, 4)),
    ("Cropping1D", {}, (2, 5, 3)),
    ("Cropping1D", {"cropping": [2, 0]}, (2, 5, 3)),
    ("Cropping1D", {"cropping": 1}, (2, 5, 3)),
    ("UpSampling1D", {}, (2, 3, 4)),
    ("UpSampling1D", {"size": 3}, (2, 3, 2)),
    ("AveragePooling1D", {"pool_size": 2}, (2, 6, 3)),
    ("AveragePooling1D", {"pool_size": 3, "strides": 1}, (2, 6, 3)),
    ("AveragePooling1D", {"pool_size": 2, "padding": "same"}, (2, 5, 3)),
    ("AveragePooling1D", {"pool_size": 3, "strides": 2, "padding": "same", "data_format": "channels_first"},
     (2, 3, 7)),
    ("MaxPooling1D", {"pool_size": 2}, (2, 6, 3)),
    ("MaxPooling1D", {"pool_size": 3, "strides": 2, "padding": "same"}, (2, 7, 3)),
    ("GroupNormalization", {"groups": 3}, (2, 4, 6)),
    ("GroupNormalization", {"groups": -1, "epsilon": 0.01}, (2, 3, 4)),
    ("GroupNormalization", {"groups": 2, "axis": 1, "center": False}, (2, 4, 3)),
    ("GroupNormalization", {"groups": 1, "scale": False}, (2, 5, 2)),
    ("GaussianNoise", {"stddev": 0.5, "seed": 3}, (2, 3, 4)),
    ("GaussianDropout", {"rate": 0.25, "seed": 3}, (2, 3, 4)),
]

ERRORS = [
    ("Permute", {"dims": [1, 3]}),
    ("Permute", {"dims": [0, 1]}),
    ("RepeatVector", {"n": 0}),
    ("RepeatVector", {"n": 2.0}),
    ("UpSampling1D", {"size": 0}),
    ("UpSampling1D", {"size": "2"}),
    ("ZeroPadding1D", {"padding": [1, 2, 3]}),
    ("ZeroPadding1D", {"padding": -1}),
    ("Cropping1D", {"cropping": [1, -1]}),
    ("GaussianNoise", {"stddev": 1.5}),
    ("GaussianNoise", {"stddev": -0.1}),
    ("GaussianDropout", {"rate": 2}),
    ("AveragePooling1D", {"pool_size": 0}),
    ("ZeroPadding1D", {"data_format": "channels_middle"}),
    ("GroupNormalization", {"groups": 0}),
    ("GroupNormalization", {"groups": 2.5}),
    ("CategoryEncoding", {}),
    ("CategoryEncoding", {"num_tokens": 0}),
    ("CategoryEncoding", {"num_tokens": 3, "output_mode": "tf_idf"}),
]

# CategoryEncoding: (kwargs, integer inputs, count_weights or None): the output and its symbolic shape
ENCODINGS = [
    ({"num_tokens": 4}, [[0, 1], [3, 3]], None),
    ({"num_tokens": 4, "output_mode": "binary"}, [0, 2, 2], None),
    ({"num_tokens": 4, "output_mode": "one_hot"}, [[0], [2], [3]], None),
    ({"num_tokens": 4, "output_mode": "one_hot"}, [[0, 1], [3, 3]], None),
    ({"num_tokens": 4, "output_mode": "one_hot"}, [1, 3], None),
    ({"num_tokens": 5, "output_mode": "count"}, [[0, 1, 1], [4, 4, 4]], None),
    ({"num_tokens": 5, "output_mode": "count"}, [[0, 1, 1], [4, 2, 4]], [[0.5, 0.25, 0.125], [1.0, 2.0, 3.0]]),
    ({"num_tokens": 3, "output_mode": "count"}, [[[0, 1], [1, 2]], [[2, 2], [0, 0]]], None),
]

# a layer built, then called on an input it cannot take: (class, kwargs, input shape)
CALL_ERRORS = [
    ("Cropping1D", {"cropping": [2, 3]}, (2, 5, 3)),
    ("RepeatVector", {"n": 2}, (2, 3, 4)),
    ("Permute", {"dims": [2, 1]}, (2, 3)),
    ("GroupNormalization", {"groups": 4}, (2, 3, 6)),
    ("GroupNormalization", {"groups": 8}, (2, 3, 6)),
]


def inputs(shape, k=0.37):
    """Deterministic float32 values in [-1, 1): (i * k) mod 2 - 1, row-major (the tests compute the same)."""
    return ((np.arange(int(np.prod(shape)), dtype=np.float64) * k) % 2 - 1).astype(np.float32).reshape(shape)


def error(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001  (recording whatever Keras raises)
        # the message itself, not the "Exception encountered when calling ..." wrapper nor its terminal colours
        lines = [re.sub(r"\x1b\[\d+m", "", line) for line in str(e).splitlines() if line.strip()]
        return [type(e).__name__, lines[1] if lines[0].startswith("Exception encountered") else lines[0]]
    return None


def record_case(keras, torch, name, kwargs, shape):
    layer = getattr(keras.layers, name)(**kwargs)
    x = torch.tensor(inputs(shape), requires_grad=True)
    out = layer(x)
    cot = torch.tensor(inputs(tuple(out.shape), 0.29))
    (out * cot).sum().backward()
    config = {k: v for k, v in layer.get_config().items() if k != "dtype"}
    symbolic = getattr(keras.layers, name)(**kwargs)(keras.Input(shape[1:]))
    return {"layer": name, "kwargs": kwargs, "shape": list(shape), "config": json.loads(json.dumps(config)),
            "out": out.detach().numpy().astype(np.float32).tolist(),
            "symbolic_shape": list(symbolic.shape),
            "weights": [[w.name, list(w.shape)] for w in layer.weights],
            "grad": x.grad.numpy().astype(np.float32).tolist()}


def record_encoding(keras, kwargs, values, weights):
    layer = keras.layers.CategoryEncoding(**kwargs)
    x = np.array(values, "int32")
    out = layer(x) if weights is None else layer(x, count_weights=np.array(weights, "float32"))
    symbolic = keras.layers.CategoryEncoding(**kwargs)(keras.Input(x.shape[1:], dtype="int32"))
    config = {k: v for k, v in layer.get_config().items() if k != "dtype"}
    return {"kwargs": kwargs, "inputs": values, "count_weights": weights, "config": config,
            "out": np.asarray(out.cpu(), np.float32).tolist(), "dtype": str(out.dtype).replace("torch.", ""),
            "symbolic_shape": list(symbolic.shape)}


def main():
    import keras
    import torch
    data = {"versions": {"keras": keras.__version__, "torch": torch.__version__},
            "cases": [record_case(keras, torch, *c) for c in CASES],
            "encodings": [record_encoding(keras, *c) for c in ENCODINGS],
            "errors": [{"layer": n, "kwargs": kw, "error": error(lambda: getattr(keras.layers, n)(**kw))}
                       for n, kw in ERRORS],
            "call_errors": [{"layer": n, "kwargs": kw, "shape": list(s),
                             "error": error(lambda: getattr(keras.layers, n)(**kw)(inputs(s)))}
                            for n, kw, s in CALL_ERRORS]}
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{OUT}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()

"""Record what Keras 3's further preprocessing layers and image ops do on the torch backend (CenterCrop,
Discretization, RandomBrightness, RandomContrast, RandomZoom, RandomTranslation, keras.ops.image.resize and
affine_transform) into tests/fixtures/keras/preprocessing_more.json. tests/keras/test_preprocessing_more.py
imports the case tables from here and runs them through minifp.keras.

Run by hand with a real Keras 3 on torch (not the project's environment):
    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_preprocessing_more.py

The random layers are recorded where their result does not depend on torch's stream: outside training, with a
transformation handed to transform_images, and with a degenerate factor range (lo == hi). Hashing and
HashedCrossing need TensorFlow in Keras 3.15, which this environment lacks: the recorder notes the ImportError and
the tests check the buckets Keras's own docstrings and tests publish.
"""
import json
import os
import re
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "keras" / "preprocessing_more.json"


def images(shape, kind="float32", k=0.37):
    """Deterministic images: (i * k) mod 2 in [0, 2) times 4 (float32; "whole": those rounded to integers, still
    float32), or i * 7 mod 256 as uint8."""
    n = int(np.prod(shape))
    if kind == "uint8":
        return (np.arange(n) * 7 % 256).astype(np.uint8).reshape(shape)
    if kind == "whole":
        return np.round(images(shape)).astype(np.float32)
    return ((np.arange(n, dtype=np.float64) * k) % 2 * 4).astype(kind).reshape(shape)


# keras.ops.image.resize: (images shape, input kind, size, kwargs)
RESIZES = [
    ((1, 5, 7, 2), "float32", (3, 4), {}),
    ((1, 5, 7, 2), "float32", (8, 11), {}),
    ((1, 5, 7, 2), "float32", (5, 3), {"interpolation": "nearest"}),
    ((1, 5, 7, 2), "float32", (9, 12), {"interpolation": "nearest"}),
    ((1, 5, 7, 2), "float32", (3, 4), {"interpolation": "bicubic"}),
    ((1, 5, 7, 2), "float32", (9, 10), {"interpolation": "bicubic"}),
    ((1, 9, 8, 2), "float32", (3, 4), {"antialias": True}),
    ((1, 9, 8, 2), "float32", (4, 3), {"interpolation": "bicubic", "antialias": True}),
    ((1, 4, 5, 2), "float32", (7, 9), {"antialias": True}),
    ((1, 9, 8, 2), "float32", (3, 4), {"interpolation": "nearest", "antialias": True}),
    ((1, 5, 7, 2), "float32", (4, 4), {"crop_to_aspect_ratio": True}),
    ((1, 5, 7, 2), "float32", (3, 6), {"crop_to_aspect_ratio": True, "interpolation": "nearest"}),
    ((1, 5, 7, 2), "float32", (4, 4), {"pad_to_aspect_ratio": True, "fill_value": 0.5}),
    ((1, 5, 7, 2), "float32", (3, 8), {"pad_to_aspect_ratio": True}),
    ((2, 3, 5, 7), "float32", (3, 4), {"data_format": "channels_first"}),
    ((5, 7, 3), "float32", (6, 4), {}),
    ((2, 5, 7, 3), "float16", (3, 4), {}),
    ((2, 5, 7, 3), "uint8", (3, 4), {}),
    ((2, 5, 7, 3), "uint8", (8, 9), {"interpolation": "bicubic"}),
]

# keras.ops.image.affine_transform: (images shape, input kind, transform, kwargs)
_T = [[1.1, 0.2, -0.7, -0.1, 0.9, 1.3, 0.0, 0.0], [0.8, -0.3, 2.1, 0.4, 1.2, -2.2, 0.0, 0.0]]
AFFINES = [((2, 5, 6, 2), "float32", _T, {"fill_mode": mode, "interpolation": interp, "fill_value": 0.5})
           for mode in ("constant", "nearest", "wrap", "mirror", "reflect") for interp in ("bilinear", "nearest")] + [
    ((2, 3, 5, 6), "float32", _T, {"data_format": "channels_first"}),
    ((5, 6, 3), "float32", _T[0], {}),
    ((2, 5, 6, 3), "uint8", _T, {}),
    ((2, 5, 6, 3), "float16", _T, {"fill_mode": "reflect"}),
]

# layers: (class, kwargs, images shape, input kind, how): how is "call" (called directly: training), "infer"
# (training=False), or a transformation dict (float lists) handed to transform_images
LAYERS = [
    ("CenterCrop", {"height": 3, "width": 4}, (2, 5, 7, 3), "float32", "call"),
    ("CenterCrop", {"height": 4, "width": 4}, (2, 6, 9, 2), "uint8", "call"),
    ("CenterCrop", {"height": 2, "width": 3, "data_format": "channels_first"}, (2, 3, 5, 6), "float32", "call"),
    ("CenterCrop", {"height": 3, "width": 2}, (5, 7, 3), "float32", "call"),
    ("CenterCrop", {"height": 8, "width": 6}, (2, 5, 7, 3), "float32", "call"),
    ("CenterCrop", {"height": 4, "width": 9}, (5, 7, 3), "float32", "call"),
    ("RandomBrightness", {"factor": 0.3, "seed": 1}, (2, 4, 5, 2), "float32", "infer"),
    ("RandomBrightness", {"factor": (0.25, 0.25)}, (2, 4, 5, 2), "float32", "call"),
    ("RandomBrightness", {"factor": (0.1, 0.1), "value_range": (0, 2)}, (2, 4, 5, 2), "float32", "call"),
    ("RandomBrightness", {"factor": (-0.5, -0.5), "value_range": [0, 6]}, (4, 5, 3), "float32", "call"),
    ("RandomBrightness", {"factor": 0.3, "value_range": (0, 4)}, (2, 4, 5, 2), "float32",
     {"rgb_delta": [[[[0.375]]], [[[-1.25]]]]}),
    ("RandomBrightness", {"factor": 0.3}, (2, 4, 5, 3), "uint8", "infer"),
    ("RandomContrast", {"factor": 0.5, "seed": 1}, (2, 4, 5, 2), "float32", "infer"),
    ("RandomContrast", {"factor": (0, 0), "value_range": (0, 8)}, (2, 4, 4, 3), "float32", "call"),
    ("RandomContrast", {"factor": 0.5, "value_range": (0, 8)}, (2, 4, 4, 3), "whole",
     {"contrast_factor": [[[[1.5]]], [[[0.625]]]]}),
    ("RandomContrast", {"factor": 0.5, "value_range": (0, 3)}, (2, 4, 5, 2), "float32",
     {"contrast_factor": [[[[1.5]]], [[[0.7]]]]}),
    ("RandomContrast", {"factor": 0.5, "value_range": (0, 3), "data_format": "channels_first"}, (2, 3, 4, 5),
     "float32", {"contrast_factor": [[[[1.5]]], [[[0.7]]]]}),
    ("RandomZoom", {"height_factor": 0.3, "seed": 2}, (2, 5, 6, 1), "float32", "infer"),
    ("RandomZoom", {"height_factor": (0.5, 0.5)}, (2, 5, 6, 1), "float32", "call"),
    ("RandomZoom", {"height_factor": (-0.3, -0.3), "width_factor": (0.2, 0.2), "fill_mode": "constant",
                    "fill_value": 0.5}, (2, 5, 6, 1), "float32", "call"),
    ("RandomZoom", {"height_factor": 0.3, "fill_mode": "wrap", "interpolation": "nearest"}, (2, 5, 6, 1), "float32",
     {"height_zoom": [[0.8], [1.25]], "width_zoom": [[1.1], [0.7]]}),
    ("RandomZoom", {"height_factor": 0.3, "fill_mode": "nearest", "data_format": "channels_first"}, (2, 3, 5, 6),
     "float32", {"height_zoom": [[0.8], [1.25]], "width_zoom": [[1.1], [0.7]]}),
    ("RandomZoom", {"height_factor": (0.4, 0.4)}, (5, 6, 3), "float32", "call"),
    ("RandomTranslation", {"height_factor": 0.2, "width_factor": 0.3, "seed": 3}, (2, 5, 6, 1), "float32", "infer"),
    ("RandomTranslation", {"height_factor": (0.2, 0.2), "width_factor": (-0.5, -0.5)}, (2, 5, 6, 1), "float32",
     "call"),
    ("RandomTranslation", {"height_factor": 0.2, "width_factor": 0.3, "fill_mode": "constant", "fill_value": 1.5},
     (2, 5, 6, 1), "float32", {"translations": [[1.3, -0.6], [-2.0, 1.75]]}),
    ("RandomTranslation", {"height_factor": 0.2, "width_factor": 0.3, "interpolation": "nearest",
                           "fill_mode": "wrap"}, (2, 5, 6, 1), "float32", {"translations": [[1.3, -0.6], [-2.5, 1.5]]}),
    ("RandomTranslation", {"height_factor": (0.4, 0.4), "width_factor": (0.1, 0.1)}, (5, 6, 3), "float32", "call"),
]

# Discretization: (kwargs, inputs, adapt data or None)
DISCRETIZATIONS = [
    ({"bin_boundaries": [0.0, 1.0, 2.5]}, [[-1.5, 1.0, 0.999], [2.5, 3.0, 0.0]], None),
    ({"bin_boundaries": [0.1, 0.2]}, [0.1, 0.2, 0.15, 0.0999999], None),
    ({"bin_boundaries": [0.0, 1.0, 2.5], "output_mode": "one_hot"}, [[-1.5], [1.0], [3.0]], None),
    ({"bin_boundaries": [0.0, 1.0, 2.5], "output_mode": "multi_hot"}, [[-1.5, 1.0], [3.0, 3.0]], None),
    ({"bin_boundaries": [0.0, 1.0, 2.5], "output_mode": "count"}, [[-1.5, 1.0, 1.5], [3.0, 3.0, 0.5]], None),
    ({"num_bins": 4}, [[0.1, 0.5, 0.8], [2.0, 3.5, 9.0]], "array"),
    ({"num_bins": 3, "epsilon": 0.1}, [[0.1, 0.5, 0.8], [2.0, 3.5, 9.0]], "batches"),
    ({"num_bins": 5, "epsilon": 0.001}, [[0.1, 0.5, 0.8], [2.0, 3.5, 9.0]], "array"),
]


def adapt_data(how):
    """The data adapt() learns from: one array of 101 values, or three batches of different sizes."""
    values = ((np.arange(101, dtype=np.float64) * 0.61) % 7).astype(np.float32)
    return values.reshape(-1, 1) if how == "array" else [values[:40], values[40:90], values[90:]]


ERRORS = [
    ("CenterCrop", {"height": 3, "width": 4}, (2, 3)),
    ("RandomBrightness", {"factor": 1.5}, None),
    ("RandomBrightness", {"factor": (0.1, 0.2, 0.3)}, None),
    ("RandomBrightness", {"factor": "0.2"}, None),
    ("RandomBrightness", {"factor": 0.2, "value_range": 255}, None),
    ("RandomBrightness", {"factor": 0.2, "value_range": (0, 1, 2)}, None),
    ("RandomBrightness", {"factor": 0.2}, (4, 5)),
    ("RandomContrast", {"factor": -0.5}, None),
    ("RandomContrast", {"factor": (1.5, 2.0)}, None),
    ("RandomZoom", {"height_factor": -1.0}, None),
    ("RandomZoom", {"height_factor": (0.1, 1.5)}, None),
    ("RandomZoom", {"height_factor": "x"}, None),
    ("RandomZoom", {"height_factor": 0.2, "width_factor": [0.1]}, None),
    ("RandomZoom", {"height_factor": 0.2, "fill_mode": "mirror"}, None),
    ("RandomZoom", {"height_factor": 0.2, "interpolation": "bicubic"}, None),
    ("RandomTranslation", {"height_factor": 1.5, "width_factor": 0.1}, None),
    ("RandomTranslation", {"height_factor": 0.1, "width_factor": (0.1, 0.2, 0.3)}, None),
    ("RandomTranslation", {"height_factor": 0.1, "width_factor": 0.1, "fill_mode": "mirror"}, None),
    ("Discretization", {}, None),
    ("Discretization", {"num_bins": -1}, None),
    ("Discretization", {"num_bins": 3, "bin_boundaries": [0.0]}, None),
    ("Discretization", {"num_bins": 3, "output_mode": "tf_idf"}, None),
    ("Discretization", {"num_bins": 3}, (2, 2)),
    ("Hashing", {"num_bins": 3}, None),
    ("HashedCrossing", {"num_bins": 3}, None),
]

# keras.ops.image errors: (op, kwargs), called on images of shape (2, 5, 6, 3) unless kwargs give "shape"
OP_ERRORS = [
    ("resize", {"size": (3, 4), "interpolation": "lanczos3"}),
    ("resize", {"size": (3, 4), "interpolation": "area"}),
    ("resize", {"size": (3, 4), "fill_mode": "reflect"}),
    ("resize", {"size": (3, 4), "crop_to_aspect_ratio": True, "pad_to_aspect_ratio": True}),
    ("resize", {"size": (3, 4, 5)}),
    ("affine_transform", {"transform": _T, "interpolation": "bicubic"}),
    ("affine_transform", {"transform": [[_T]]}),
    ("affine_transform", {"transform": _T, "fill_mode": "mirror", "shape": (2, 5, 6, 1)}),
]


def error(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001  (recording whatever Keras raises)
        lines = [re.sub(r"\x1b\[\d+m", "", line) for line in str(e).splitlines() if line.strip()]
        return [type(e).__name__, lines[1] if lines[0].startswith("Exception encountered") else lines[0]]
    return None


def _out(x):
    """A result: its values flat, each float32 written as its shortest repr (which reads back to the same bits),
    its dtype and shape."""
    x = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)
    values = [float(str(v)) for v in x.astype(np.float32).reshape(-1)]
    return {"values": [int(v) if v.is_integer() else v for v in values], "dtype": str(x.dtype),
            "shape": list(x.shape)}


def record_layer(keras, name, kwargs, shape, kind, how):
    layer = getattr(keras.layers, name)(**kwargs)
    x = images(shape, kind)
    if how == "call":
        out = layer(x)
    elif how == "infer":
        out = layer(x, training=False)
    else:
        out = layer.transform_images(keras.ops.convert_to_tensor(x),
                                     {k: keras.ops.convert_to_tensor(np.array(v, np.float32)) for k, v in how.items()})
    config = {k: v for k, v in layer.get_config().items() if k != "dtype"}
    return {"layer": name, "kwargs": kwargs, "shape": list(shape), "kind": kind, "how": how,
            "config": json.loads(json.dumps(config)), "out": _out(out)}


def record_discretization(keras, kwargs, values, adapt):
    layer = keras.layers.Discretization(**kwargs)
    if adapt is not None:
        # adapt()'s own loop: Keras 3.15's adapt() first asks whether data is a tf.data.Dataset, which needs
        # TensorFlow (absent here); for arrays and lists of batches it then does exactly this
        data = adapt_data(adapt)
        layer.reset_state()
        for batch in ([data] if isinstance(data, np.ndarray) else data):
            layer.update_state(batch)
        layer.finalize_state()
    out = layer(np.array(values, np.float32))
    config = {k: v for k, v in layer.get_config().items() if k != "dtype"}
    return {"kwargs": kwargs, "inputs": values, "adapt": adapt, "config": json.loads(json.dumps(config)),
            "out": _out(out)}


def layer_error(keras, name, kwargs, shape):
    if shape is None:
        return error(lambda: getattr(keras.layers, name)(**kwargs))
    return error(lambda: getattr(keras.layers, name)(**kwargs)(images(shape)))


def op_error(keras, op, kwargs):
    kwargs = dict(kwargs)
    shape = kwargs.pop("shape", (2, 5, 6, 3))
    return error(lambda: getattr(keras.ops.image, op)(images(shape), **kwargs))


def main():
    import keras
    import torch
    ops = keras.ops
    data = {"versions": {"keras": keras.__version__, "torch": torch.__version__},
            "resize": [_out(ops.image.resize(images(s, k), size, **kw)) for s, k, size, kw in RESIZES],
            "affine": [_out(ops.image.affine_transform(images(s, k), np.array(t, np.float32), **kw))
                       for s, k, t, kw in AFFINES],
            "layers": [record_layer(keras, *c) for c in LAYERS],
            "discretization": [record_discretization(keras, *c) for c in DISCRETIZATIONS],
            "errors": [layer_error(keras, *c) for c in ERRORS],
            "op_errors": [op_error(keras, *c) for c in OP_ERRORS]}
    OUT.write_text(json.dumps(data) + "\n")
    print(f"{OUT}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()

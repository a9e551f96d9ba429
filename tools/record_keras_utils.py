"""Record real keras.utils behaviour into tests/fixtures/keras/utils.json, the parity table of minifp.keras.utils.

Run by hand from the repository root with the recording venv (see tools/record_keras.py):

    /work/tfenv/bin/python tools/record_keras_utils.py

Each case is a call `utils.<fn>(*args, **kwargs)` with JSON-encoded arguments and its outcome: the result
(arrays as {"array", "dtype"}, PIL images as {"image": mode, "size", "array"}, datasets as the list of their
elements from as_numpy_iterator, tuples as lists) or the error {type, message}. tests/keras/test_utils.py replays
every case through minifp.keras.utils. Arrays in arguments are {"array": nested list, "dtype": name}; float32
values are written as the shortest decimal that reads back as the same float32.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import io  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import PIL  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

import keras  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "keras" / "utils.json"


def arr(values, dtype):
    """An array argument."""
    return {"array": np.asarray(values, dtype=dtype).tolist(), "dtype": dtype}


def decode(x):
    """An argument from its JSON form."""
    if isinstance(x, dict) and "array" in x:
        return np.asarray(x["array"], dtype=x["dtype"])
    if isinstance(x, dict) and "tuple" in x:
        return tuple(decode(v) for v in x["tuple"])
    if isinstance(x, list):
        return [decode(v) for v in x]
    return x


def encode(x):
    """A result in its JSON form."""
    if hasattr(x, "as_numpy_iterator"):
        return {"dataset": [encode(e) for e in x.as_numpy_iterator()]}
    if hasattr(x, "mode") and hasattr(x, "size"):
        return {"image": x.mode, "size": list(x.size), "array": encode(np.asarray(x))}
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()
    if isinstance(x, (np.ndarray, np.generic)):
        x = np.asarray(x)
        values = [float(str(v)) for v in x.ravel()] if x.dtype == np.float32 else x.ravel().tolist()
        return {"array": np.asarray(values, dtype=object).reshape(x.shape).tolist() if x.ndim else values[0],
                "dtype": str(x.dtype), "shape": list(x.shape)}
    if isinstance(x, (tuple, list)):
        return [encode(v) for v in x]
    return x


def run(fn, args=(), kwargs=None):
    """One case: the call and its outcome."""
    kwargs = kwargs or {}
    case = {"fn": fn, "args": list(args), "kwargs": kwargs}
    try:
        case["result"] = encode(getattr(keras.utils, fn)(*decode(list(args)), **{k: decode(v)
                                                                              for k, v in kwargs.items()}))
        case["error"] = None
    except Exception as e:     # noqa: BLE001  (every error is a recorded outcome)
        case["error"] = {"type": type(e).__name__, "message": str(e)}
    return case


def cases():
    """Every recorded call."""
    out = []
    # to_categorical: shapes, a trailing axis of 1, num_classes, an index out of range
    for x, kw in (([0, 2, 1, 2], {}), ([[1], [0], [3]], {}), ([[0, 1], [2, 0]], {}), ([1, 0], {"num_classes": 4}),
                  (arr([[2], [1]], "int64"), {"num_classes": 3}), ([0, 5], {"num_classes": 3}),
                  ([0.0, 1.7, 2.2], {})):
        out.append(run("to_categorical", [x], kw))
    # pad_sequences: every option combination that changes the result
    seqs = [[1], [2, 3], [4, 5, 6, 7], []]
    for maxlen in (None, 2, 3, 5):
        for padding in ("pre", "post"):
            for truncating in ("pre", "post"):
                out.append(run("pad_sequences", [seqs], {"maxlen": maxlen, "padding": padding,
                                                         "truncating": truncating}))
    for kw in ({"value": -1}, {"value": 0.5, "dtype": "float32"}, {"value": 0.5}, {"dtype": "int64", "maxlen": 2},
               {"value": 9, "dtype": "float16", "padding": "post"}, {"dtype": "object", "value": "x"},
               {"value": "x"}, {"padding": "middle"}, {"truncating": "middle", "maxlen": 2},
               {"truncating": "middle", "maxlen": 9}, {"maxlen": 0}):
        out.append(run("pad_sequences", [seqs], kw))
    out.append(run("pad_sequences", [[["a", "b"], ["c"]]], {"dtype": "object", "value": "<pad>"}))
    out.append(run("pad_sequences", [[[[1, 2], [3, 4]], [[5, 6]], []]], {"maxlen": 3}))
    out.append(run("pad_sequences", [[[[1, 2], [3, 4]], [[5, 6, 7]]]]))
    out.append(run("pad_sequences", [[[1, 2], 3]]))
    out.append(run("pad_sequences", [[arr([1.5, 2.5], "float32"), arr([3.25], "float32")]], {"dtype": "float32"}))
    # normalize: orders, axes, dtypes, a zero row
    x64 = arr([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 2.0]], "float64")
    x32 = arr([[0.1, 0.2, 0.3], [-1.5, 2.5, 0.0]], "float32")
    for x in (x64, x32):
        for axis in (-1, 0, 1):
            for order in (1, 2, 3):
                out.append(run("normalize", [x], {"axis": axis, "order": order}))
    # split_dataset: sizes, inputs, shuffling with a seed, errors
    data = arr(np.arange(10).reshape(10, 1) * 1.5, "float32")
    pair = {"tuple": [arr(np.arange(10), "int64"), arr(np.arange(10) * 2, "int64")]}
    for left, right in ((0.8, None), (None, 0.3), (3, None), (None, 4), (2, 5), (0.25, 0.5), (0.5, 0.5), (7, 3),
                        (0.33, None), (None, None), (0, 0), (10, None), (0.8, 0.4), (8, 5), ("a", None),
                        (None, [1]), (1.5, None), (0.01, None)):
        out.append(run("split_dataset", [data], {"left_size": left, "right_size": right}))
    out.append(run("split_dataset", [pair], {"left_size": 0.6}))
    out.append(run("split_dataset", [[arr(np.arange(6), "int64"), arr(np.arange(6) * 3, "float32")]],
                   {"right_size": 2}))
    out.append(run("split_dataset", [pair], {"left_size": 0.7, "shuffle": True, "seed": 7}))
    out.append(run("split_dataset", [data], {"left_size": 4, "shuffle": True, "seed": 123}))
    out.append(run("split_dataset", [5], {"left_size": 0.5}))
    # timeseries_dataset_from_array
    series = arr(np.arange(20), "int64")
    table = arr(np.arange(30).reshape(15, 2) * 0.5, "float32")
    for kw in ({}, {"sequence_stride": 3}, {"sampling_rate": 2}, {"batch_size": 4}, {"batch_size": None},
               {"start_index": 3, "end_index": 15, "batch_size": 5}, {"sequence_stride": 2, "sampling_rate": 3,
                                                                      "batch_size": 2}):
        out.append(run("timeseries_dataset_from_array", [series, None, 5], kw))
        out.append(run("timeseries_dataset_from_array", [series, series, 5], kw))
    out.append(run("timeseries_dataset_from_array", [table, arr(np.arange(15) * 10, "int64"), 4],
                   {"batch_size": 3}))
    out.append(run("timeseries_dataset_from_array", [series, arr(np.arange(6), "int64"), 5], {"batch_size": 4}))
    for kw in ({"start_index": -1}, {"start_index": 20}, {"start_index": 5, "end_index": 5}, {"end_index": 20},
               {"end_index": -2}, {"sampling_rate": 0}, {"sampling_rate": 20}, {"sequence_stride": 0},
               {"sequence_stride": 25}, {"format": "torch"}):
        out.append(run("timeseries_dataset_from_array", [series, None, 5], kw))
    # img_to_array / array_to_img
    rgb = arr(np.arange(2 * 3 * 3).reshape(2, 3, 3) * 7.5 - 10, "float32")
    gray = arr(np.arange(6).reshape(2, 3, 1) * 100, "float32")
    for x in (rgb, gray, arr(np.arange(2 * 2 * 4).reshape(2, 2, 4) * 8, "float32"), arr(np.zeros((2, 2, 3)),
                                                                                       "float32")):
        for kw in ({}, {"scale": False}):
            out.append(run("array_to_img", [x], kw))
    out.append(run("array_to_img", [arr(np.arange(12).reshape(3, 2, 2) * 20, "float32")],
                   {"data_format": "channels_first"}))
    out.append(run("array_to_img", [arr(np.arange(6).reshape(2, 3, 1) * 100, "float32")], {"scale": False}))
    out.append(run("array_to_img", [arr(np.zeros((2, 3)), "float32")]))
    out.append(run("array_to_img", [arr(np.zeros((2, 3, 2)), "float32")]))
    for x, kw in ((rgb, {}), (rgb, {"data_format": "channels_first"}), (arr(np.ones((2, 3)), "uint8"), {}),
                  (arr(np.ones((2, 3)), "uint8"), {"data_format": "channels_first"}), (rgb, {"dtype": "uint8"}),
                  (arr(np.ones(4), "float32"), {}), (rgb, {"data_format": "channels_middle"})):
        out.append(run("img_to_array", [x], kw))
    # set_random_seed, get_file: argument errors
    out.append(run("set_random_seed", ["7"]))
    out.append(run("set_random_seed", [1.5]))
    out.append(run("get_file", ["x.npz"]))
    out.append(run("get_file", ["a/x.npz", "https://example.invalid/x.npz"]))
    out.append(run("get_file", [None, "https://example.invalid/"]))
    return out


def load_img_cases():
    """load_img of a PNG written by Pillow: color modes, resizing, keeping the aspect ratio."""
    from PIL import Image
    pixels = (np.arange(6 * 8 * 3).reshape(6, 8, 3) * 5 % 256).astype("uint8")
    buf = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buf, format="png")
    png = buf.getvalue()
    out = []
    for kw in ({}, {"color_mode": "grayscale"}, {"color_mode": "rgba"}, {"target_size": (3, 4)},
               {"target_size": (4, 4), "interpolation": "bilinear"}, {"target_size": (4, 4), "keep_aspect_ratio": True},
               {"target_size": (2, 6), "keep_aspect_ratio": True, "interpolation": "bicubic"},
               {"color_mode": "cmyk"}, {"target_size": (3, 3), "interpolation": "fancy"}):
        case = {"kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()}}
        try:
            case["result"], case["error"] = encode(keras.utils.load_img(io.BytesIO(png), **kw)), None
        except Exception as e:    # noqa: BLE001
            case["error"] = {"type": type(e).__name__, "message": str(e)}
        out.append(case)
    return {"png_pixels": encode(pixels), "cases": out}


def main():
    record = {"versions": {"keras": keras.__version__, "tensorflow": tf.__version__, "numpy": np.__version__,
                           "pillow": PIL.__version__},
              "cases": cases(), "load_img": load_img_cases()}
    OUT.write_text(json.dumps(record, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(record['cases'])} cases)")


if __name__ == "__main__":
    main()

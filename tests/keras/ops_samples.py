"""keras.ops conformance cases: the array spec the case modules write, the fixtures' encoding, and the check.

Case modules (tools/keras_ops_cases_*.py) list `(name, args, kwargs[, options])` (options: "halves",
"shape_only", "atol", "rtol"; see tools/record_keras_ops.py) with arrays written as `A(shape, dtype,
kind)` or `A.of(nested list, dtype)`; tools/record_keras_ops.py turns each spec into values (`A.values`, a fixed
formula, no randomness), runs real keras.ops.<name> on them and stores inputs and outputs in
tests/fixtures/keras/ops_<family>.json.gz. This module never imports Keras: tests/keras/test_ops_conformance.py and
tools/keras_ops_report.py read the fixtures through it and run the stored inputs through minifp.keras.ops.
"""
from __future__ import annotations

import gzip
import json
import math
import pathlib

import numpy as np

__all__ = ["A", "FIXTURES", "HALF", "TOLERANCE", "encode", "decode", "load", "names", "check", "check_gradient",
           "run", "ids"]

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "keras"
HALF = ("float16", "bfloat16")      # the mixed policies' compute dtypes: float cases are also recorded in them
# Keras's own test tolerance (keras/src/testing/test_case.py assertAllClose) for float32; a half-precision result
# may differ from TensorFlow's CPU kernels (minifp: float32 math rounded once) by about an ulp.
TOLERANCE = {"float32": (1e-6, 1e-6), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}


class A:
    """An array argument of a case: its shape, dtype and kind of values ("normal", "positive", "int", "bool",
    "unit" (in (-1, 1)), "index" (in [0, shape[0])), "arange"), or literal values (A.of)."""

    def __init__(self, shape, dtype="float32", kind=None, literal=None):
        self.shape, self.dtype, self.literal = tuple(shape), str(dtype), literal
        self.kind = kind or ("bool" if dtype == "bool" else "int" if "int" in str(dtype) else "normal")

    @classmethod
    def of(cls, values, dtype="float32"):
        """An array of the given (nested list) values."""
        return cls(np.shape(values), dtype, "literal", values)

    def with_dtype(self, dtype):
        """The same spec in another dtype."""
        return A(self.shape, dtype, self.kind, self.literal)

    def values(self, salt=0):
        """The spec's values as a NumPy array (float32 for float dtypes; deterministic: a fixed formula)."""
        n = math.prod(self.shape)
        i = np.arange(n, dtype=np.float64) + 1 + 7 * salt
        u = np.sin(i * 12.9898 + salt) * 43758.5453
        u = u - np.floor(u)                                     # in [0, 1), well spread
        if self.kind == "literal":
            v = np.asarray(self.literal, dtype=np.float64)
        elif self.kind == "arange":
            v = np.arange(n, dtype=np.float64)
        elif self.kind == "bool":
            v = u > 0.5
        elif self.kind == "int":
            v = np.floor(u * 11) - 5
        elif self.kind == "index":
            v = np.floor(u * max(self.shape[0] if self.shape else 1, 1))
        elif self.kind == "positive":
            v = 0.25 + 2 * u
        elif self.kind == "unit":
            v = 1.8 * u - 0.9
        else:
            v = np.round((u - 0.5) * 6, 3)
        v = np.asarray(v).reshape(self.shape)
        if self.dtype == "bool":
            return v.astype(bool)
        if self.dtype.startswith(("int", "uint")):
            return v.astype(self.dtype)
        v = v.astype(np.float32)
        if self.dtype in HALF:      # values the half dtype holds, so both sides start from the same inputs
            v = _round_half(v, self.dtype)
        return v

    def __repr__(self):
        return f"A({self.shape}, {self.dtype!r}, {self.kind!r})"


def _round_half(v, dtype):
    if dtype == "float16":
        return v.astype(np.float16).astype(np.float32)
    bits = v.view(np.uint32).astype(np.uint64)         # bfloat16: round to nearest even on the top 16 bits
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def _num(x):
    """A number for JSON: float32 as its shortest repr, non-finite values as strings."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    x = float(x)
    return x if math.isfinite(x) else str(x)


def encode_array(arr, dtype):
    """{"dtype", "shape", "data"} of an array (values as float32 shortest reprs for float dtypes)."""
    arr = np.asarray(arr)
    if dtype in ("float32", "float64") or dtype in HALF:
        data = [float(str(np.float32(x))) if math.isfinite(x) else str(float(x))
                for x in arr.astype(np.float32).ravel()]
    else:
        data = [_num(x) for x in arr.ravel()]
    return {"dtype": dtype, "shape": list(arr.shape), "data": data}


def decode_array(d):
    """The NumPy array of an encoded array (float dtypes as float32 values)."""
    if d["dtype"] == "bool":
        return np.array(d["data"], dtype=bool).reshape(d["shape"])
    if d["dtype"].startswith(("int", "uint")):
        return np.array(d["data"], dtype=d["dtype"]).reshape(d["shape"])
    return np.array([float(x) for x in d["data"]], dtype=np.float32).reshape(d["shape"])


def encode(v, arrays):
    """A case argument for JSON: arrays (given as (array, dtype)) -> {"array": i} into `arrays`; tuples and
    non-finite floats, slices and Ellipsis tagged."""
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], np.ndarray):
        arrays.append(encode_array(*v))
        return {"array": len(arrays) - 1}
    if isinstance(v, tuple):
        return {"tuple": [encode(x, arrays) for x in v]}
    if isinstance(v, list):
        return [encode(x, arrays) for x in v]
    if isinstance(v, dict):
        return {"dict": {k: encode(x, arrays) for k, x in v.items()}}
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": str(v)}
    if isinstance(v, slice):
        return {"slice": [v.start, v.stop, v.step]}
    if v is Ellipsis:
        return {"ellipsis": True}
    return v


def decode(v, arrays, make):
    """A case argument back from JSON, arrays made by make(np.ndarray, dtype name)."""
    if isinstance(v, list):
        return [decode(x, arrays, make) for x in v]
    if isinstance(v, dict):
        if "array" in v:
            a = arrays[v["array"]]
            return make(decode_array(a), a["dtype"])
        if "tuple" in v:
            return tuple(decode(x, arrays, make) for x in v["tuple"])
        if "float" in v:
            return float(v["float"])
        if "slice" in v:
            return slice(*v["slice"])
        if "ellipsis" in v:
            return Ellipsis
        return {k: decode(x, arrays, make) for k, x in v["dict"].items()}
    return v


def load(family=None):
    """{case id: case record} of every fixture tests/fixtures/keras/ops_<family>.json.gz (or of one family)."""
    out = {}
    for path in sorted(FIXTURES.glob(f"ops_{family or '*'}.json.gz")):
        for rec in json.loads(gzip.decompress(path.read_bytes()))["cases"]:
            out[rec["id"]] = rec
    return out


def names():
    """The recorded Keras version and keras.ops's public names (tests/fixtures/keras/ops_names.json)."""
    return json.loads((FIXTURES / "ops_names.json").read_text())


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


GRAD_TOLERANCE = (1e-5, 1e-5)     # gradients sum more products, in an order TensorFlow's kernels choose


def check_gradient(rec, ops, gradients):
    """The problems of case `rec`'s gradients: those of sum(out * cotangent) with respect to its float32 inputs,
    by `gradients` (minifp.engine.gradients), against TensorFlow's."""
    made = []

    def make(arr, dtype):
        t = ops.convert_to_tensor(arr, dtype)
        if dtype == "float32":
            t.requires_grad = True
        made.append(t)
        return t
    args = decode(rec["args"], rec["arrays"], make)
    kwargs = {k: decode(v, rec["arrays"], make) for k, v in rec["kwargs"].items()}
    try:
        out = getattr(ops, rec["name"])(*args, **kwargs)
        found = gradients([out], made, seeds=[decode_array(rec["cotangent"])])
    except Exception as e:      # noqa: BLE001
        return [f"raised {type(e).__name__}: {str(e)[:160]}"]
    problems = []
    for i, want in rec["grads"].items():
        t = made[int(i)]
        got = np.asarray(found.get(id(t), np.zeros(t.shape, np.float32)), np.float32)
        ref = decode_array(want)
        if got.shape != ref.shape or not np.allclose(got, ref, atol=GRAD_TOLERANCE[0], rtol=GRAD_TOLERANCE[1],
                                                     equal_nan=True):
            problems.append(f"gradient of input {i} differs")
    return problems


def check(rec, ops):
    """The problems (a list of strings; empty: passes) of running case record `rec` through namespace `ops`
    (minifp.keras.ops)."""
    fn = getattr(ops, rec["name"], None)
    if fn is None:
        return [f"ops.{rec['name']} is missing"]
    arrays = rec["arrays"]
    make = lambda arr, dtype: ops.convert_to_tensor(arr, dtype)     # noqa: E731
    args = decode(rec["args"], arrays, make)
    kwargs = {k: decode(v, arrays, make) for k, v in rec["kwargs"].items()}
    try:
        out = fn(*args, **kwargs)
    except Exception as e:      # noqa: BLE001 -- any exception is an answer to compare
        return [] if "raises" in rec else [f"raised {type(e).__name__}: {str(e)[:160]}"]
    if "raises" in rec:
        return [f"did not raise ({rec['raises']} expected)"]
    want = rec["out"]
    got = _outputs(out)
    if (isinstance(want, list)) != isinstance(out, (tuple, list)) or (isinstance(want, list) and len(want) != len(got)):
        return [f"returned {type(out).__name__} of {len(got)}, expected {len(_outputs(want))} outputs"]
    problems = []
    for k, (w, g) in enumerate(zip(_outputs(want), got)):
        garr = np.asarray(g)
        gdtype = str(getattr(g, "dtype", None))
        if gdtype != w["dtype"] and not w.get("python"):    # a Python number Keras gave: compared by value
            problems.append(f"output {k}: dtype {gdtype}, expected {w['dtype']}")
        if list(garr.shape) != w["shape"]:
            problems.append(f"output {k}: shape {list(garr.shape)}, expected {w['shape']}")
            continue
        if rec.get("shape_only"):
            continue
        ref = decode_array(w)
        if ref.dtype.kind == "f":
            atol, rtol = TOLERANCE.get(w["dtype"], TOLERANCE["float32"])
            if w["dtype"] == "float32":
                atol, rtol = rec.get("atol", atol), rec.get("rtol", rtol)
            ok = np.allclose(garr.astype(np.float32), ref, atol=atol, rtol=rtol, equal_nan=True)
        else:
            ok = garr.shape == ref.shape and np.array_equal(garr.astype(ref.dtype), ref)
        if not ok:
            problems.append(f"output {k}: values differ (max |diff| "
                            f"{np.nanmax(np.abs(garr.astype(np.float64) - ref)) if ref.size else 0})")
    return problems


def run(cid, cases, ops, gradients):
    """The problems of one id: a case's, or of "<case id>/grad" its gradients'."""
    if cid.endswith("/grad"):
        return check_gradient(cases[cid[:-5]], ops, gradients)
    return check(cases[cid], ops)


def ids(cases):
    """Every id of the recorded cases: each case's, and "<case id>/grad" where gradients were recorded."""
    return [k for cid, rec in cases.items() for k in ([cid, cid + "/grad"] if "grads" in rec else [cid])]

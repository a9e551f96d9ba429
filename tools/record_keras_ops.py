"""Record real keras.ops (Keras 3, TensorFlow backend) on the cases of tools/keras_ops_cases_*.py.

Run by hand from the repository root with the Keras environment (never the project's venv):

    /work/tfenv/bin/python tools/record_keras_ops.py            # every case module
    /work/tfenv/bin/python tools/record_keras_ops.py numpy      # one family (tools/keras_ops_cases_numpy.py)

For each case module it writes tests/fixtures/keras/ops_<family>.json.gz (gzipped JSON): every case's stored
inputs, then the output values, dtypes and shapes (a list where keras.ops returns several), or the name of the
exception Keras raised; for a float32 case with one float32 output, the gradient of sum(output * a fixed
cotangent) with respect to each float32 input (`grads`, keyed by the input's array number). A name's first two
float32 cases that Keras accepts are recorded again with their float32 arrays in float16 and in bfloat16 (the
mixed policies' compute dtypes); a case's options {"halves": True/False} override. It also writes
tests/fixtures/keras/ops_names.json: the Keras version and every public keras.ops function name (the report's
scope). tests/keras/ops_samples.py reads them.
"""
import gzip
import importlib.util
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)

import keras  # noqa: E402

from tests.keras.ops_samples import A, FIXTURES, HALF, encode, encode_array  # noqa: E402


def materialize(v, dtype_over, counter):
    """The case argument with each A spec made a (NumPy values, dtype) pair (float32 specs in dtype_over)."""
    if isinstance(v, A):
        spec = v.with_dtype(dtype_over) if dtype_over and v.dtype == "float32" else v
        counter[0] += 1
        return (spec.values(salt=counter[0]), spec.dtype)
    if isinstance(v, tuple):
        return tuple(materialize(x, dtype_over, counter) for x in v)
    if isinstance(v, list):
        return [materialize(x, dtype_over, counter) for x in v]
    if isinstance(v, dict):
        return {k: materialize(x, dtype_over, counter) for k, x in v.items()}
    return v


def to_keras(v, made):
    """(values, dtype) pairs as Keras tensors (appended to `made`, in the order encode numbers them), everything
    else as given."""
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], np.ndarray):
        made.append(keras.ops.convert_to_tensor(v[0], dtype=v[1]))
        return made[-1]
    if isinstance(v, tuple):
        return tuple(to_keras(x, made) for x in v)
    if isinstance(v, list):
        return [to_keras(x, made) for x in v]
    if isinstance(v, dict):
        return {k: to_keras(x, made) for k, x in v.items()}
    return v


def has_float32(v):
    """Whether a case argument holds a float32 A spec."""
    if isinstance(v, A):
        return v.dtype == "float32"
    if isinstance(v, (tuple, list)):
        return any(has_float32(x) for x in v)
    if isinstance(v, dict):
        return any(has_float32(x) for x in v.values())
    return False


def output(t):
    """An output of keras.ops as an encoded array ("python": a Python number, compared by value only)."""
    if not hasattr(t, "dtype"):
        return dict(encode_array(np.asarray(t), np.asarray(t).dtype.name), python=True)
    dtype = keras.backend.standardize_dtype(t.dtype)
    arr = np.asarray(tf.cast(t, tf.float32) if dtype in ("bfloat16", "float16", "float64") else t)
    return encode_array(arr, dtype)


def record_case(cid, name, args, kwargs, dtype_over):
    """One case's record: stored inputs, then outputs or the exception raised."""
    counter = [0]
    args, kwargs = materialize(tuple(args), dtype_over, counter), materialize(dict(kwargs), dtype_over, counter)
    arrays = []
    rec = {"id": cid, "name": name, "args": encode(list(args), arrays)}
    rec["kwargs"] = {k: encode(v, arrays) for k, v in kwargs.items()}
    rec["arrays"] = arrays
    made = []
    k_args = to_keras(args, made)
    k_kwargs = to_keras(kwargs, made)
    floats = [i for i, t in enumerate(made) if t.dtype == tf.float32]
    try:
        with tf.GradientTape(persistent=True) as tape:
            for i in floats:
                tape.watch(made[i])
            out = getattr(keras.ops, name)(*k_args, **k_kwargs)
    except Exception as e:      # noqa: BLE001 -- the exception is the recorded answer
        rec["raises"] = type(e).__name__
        return rec
    rec["out"] = [output(t) for t in out] if isinstance(out, (tuple, list)) else output(out)
    if dtype_over is None and floats and tf.is_tensor(out) and out.dtype == tf.float32:
        # The gradient of sum(out * cotangent) with respect to each float32 input (zeros where unconnected).
        cot = A(tuple(out.shape)).values(salt=99)
        try:
            grads = tape.gradient(out, [made[i] for i in floats], output_gradients=tf.constant(cot))
        except LookupError:     # an op TensorFlow cannot differentiate (bincount's weights)
            return rec
        rec["cotangent"] = encode_array(cot, "float32")
        rec["grads"] = {str(i): encode_array(np.zeros(made[i].shape, np.float32) if g is None
                                             else np.asarray(tf.convert_to_tensor(g)), "float32")
                        for i, g in zip(floats, grads)}
    return rec


def checks(opts):
    """The case options the check reads: "shape_only" (random values: dtypes, shapes and raises only), "atol" and
    "rtol" (a float32 tolerance of the op's own)."""
    return {k: opts[k] for k in ("shape_only", "atol", "rtol") if k in opts}


def record_module(path):
    """Every case of one case module, with its half-precision variants."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    family = path.stem.removeprefix("keras_ops_cases_")
    counts, halved, cases = {}, {}, []
    for case in mod.CASES:
        name, args, kwargs = case[:3]
        opts = case[3] if len(case) > 3 else {}
        counts[name] = counts.get(name, -1) + 1
        cid = f"{family}/{name}/{counts[name]}"
        cases.append(dict(record_case(cid, name, args, kwargs, None), **checks(opts)))
        # The half variants of a name's first two float32 cases that Keras accepts (keep the fixtures small).
        halves = halved.get(name, 0) < 2 and "raises" not in cases[-1]
        if opts.get("halves", halves) and has_float32((args, kwargs)):
            halved[name] = halved.get(name, 0) + 1
            for half in HALF:
                cases.append(dict(record_case(f"{cid}@{half}", name, args, kwargs, half), **checks(opts)))
    out = FIXTURES / f"ops_{family}.json.gz"
    text = json.dumps({"keras_version": keras.__version__, "family": family, "cases": cases}, separators=(",", ":"))
    out.write_bytes(gzip.compress(text.encode() + b"\n", 9, mtime=0))     # mtime 0: the same cases, the same bytes
    print(f"{out.relative_to(ROOT)}: {len(cases)} cases, {sum('raises' in c for c in cases)} raise, "
          f"{out.stat().st_size // 1024} KB")


def main():
    want = set(sys.argv[1:])
    for path in sorted((ROOT / "tools").glob("keras_ops_cases_*.py")):
        if not want or path.stem.removeprefix("keras_ops_cases_") in want:
            record_module(path)
    public = sorted(n for n in dir(keras.ops) if not n.startswith("_") and callable(getattr(keras.ops, n)))
    (FIXTURES / "ops_names.json").write_text(json.dumps({"keras_version": keras.__version__, "ops": public},
                                                        indent=0) + "\n")


if __name__ == "__main__":
    main()

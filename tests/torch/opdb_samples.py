"""PyTorch's op database as recorded samples, run through any torch-like namespace: one source for
tools/record_opdb.py (real PyTorch), tests/torch/test_opdb.py and tools/opdb_report.py (minifp.torch).

A sample's call is {"kind": "function" | "method" | "attribute", "name": ..., "args": [...], "kwargs": {...}}:
a function is a dotted name from the namespace ("torch.nn.functional.relu"), a method or attribute is looked up
on args[0]. Values are JSON with tagged objects: {"t": [buffer, offset, shape], "dtype": name, "rg": bool} a
tensor whose values sit in the .npz buffer named `buffer` (float32 tensors in "float32", ...), {"tuple": [...]},
{"float": "inf"}, {"attr": "float32"} (an attribute of the torch module: dtypes, memory formats),
{"slice": [start, stop, step]} and {"ellipsis": 0}.
"""
import builtins
import json
import math
import pathlib

import numpy as np

__all__ = ["FIXTURES", "load", "Sample", "invoke", "has_name", "run_forward", "run_gradient"]

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "opdb"


def load(directory=FIXTURES):
    """(metadata dict, {buffer name: flat array}) of the recorded op database."""
    meta = json.loads((directory / "samples.json").read_text())
    with np.load(directory / "samples.npz") as z:
        buffers = {k: z[k] for k in z.files}
    return meta, buffers


class Sample:
    """One recorded sample: rebuilds its arguments in a namespace and checks what the namespace computes."""

    def __init__(self, record, op, buffers):
        self.record, self.op, self.buffers = record, op, buffers
        self.id = record["id"]

    def array(self, ref):
        """The stored values of one tensor reference, as a NumPy array of the buffer's dtype."""
        buf, off, shape = ref["t"]
        n = int(np.prod(shape, dtype=np.int64))
        return self.buffers[buf][off:off + n].reshape(shape)

    def decode(self, v, ns, made):
        """A recorded value as an object of namespace `ns` (tensors made once per reference, kept in `made`)."""
        if isinstance(v, list):
            return [self.decode(x, ns, made) for x in v]
        if not isinstance(v, dict):
            return v
        if "t" in v:
            key = _key(v["t"][:2], v["t"][2])
            if key not in made:
                made[key] = ns.tensor(self.array(v), dtype=getattr(ns, v["dtype"]), requires_grad=v.get("rg", False))
            return made[key]
        if "tuple" in v:
            return tuple(self.decode(x, ns, made) for x in v["tuple"])
        if "float" in v:
            return float(v["float"])
        if "attr" in v:
            return getattr(ns, v["attr"])
        if "slice" in v:
            return slice(*(self.decode(x, ns, made) for x in v["slice"]))
        if "ellipsis" in v:
            return Ellipsis
        return {k: self.decode(x, ns, made) for k, x in v["dict"].items()}

    def call(self, ns, made):
        """The recorded call's result in namespace `ns` (the tensors it rebuilds are left in `made`)."""
        c = self.record["call"]
        return invoke(ns, c, self.decode(c["args"], ns, made),
                      {k: self.decode(v, ns, made) for k, v in c["kwargs"].items()})


def invoke(ns, call, args, kwargs):
    """call's function of namespace ns, or Tensor method or attribute of args[0], applied to args and kwargs."""
    if call["kind"] == "function":
        fn = ns
        for part in call["name"].split(".")[1:]:
            fn = getattr(fn, part)
        return fn(*args, **kwargs)
    if call["kind"] == "method":      # Tensor.X(self, ...), as op_db calls it: self may be a number
        if isinstance(args[0], ns.Tensor):
            return getattr(args[0], call["name"])(*args[1:], **kwargs)
        return getattr(ns.Tensor, call["name"])(*args, **kwargs)
    return getattr(args[0], call["name"])


def _values(ns, t):
    """A tensor's values as float64 (floating) or its own NumPy dtype."""
    t = t.detach()
    a = np.asarray(t.numpy() if not t.is_floating_point() else t.float().numpy())
    return a.astype(np.float64) if a.dtype.kind == "f" or t.is_floating_point() else a


def _compare(sample, ns, got, want, where, tol, values=True):
    """Problems (strings) found comparing one result with its record."""
    if isinstance(want, dict) and "t" in want:
        if not isinstance(got, ns.Tensor):
            return [f"{where}: a {type(got).__name__}, not a tensor"]
        if list(got.shape) != list(want["t"][2]):
            return [f"{where}: shape {list(got.shape)}, PyTorch {want['t'][2]}"]
        problems = [] if got.dtype == getattr(ns, want["dtype"], None) else [
            f"{where}: dtype {got.dtype}, PyTorch torch.{want['dtype']}"]
        if values:
            a, b = _values(ns, got), sample.array(want)
            ok = (np.allclose(a, b.astype(np.float64), rtol=tol[1], atol=tol[0], equal_nan=True)
                  if b.dtype.kind == "f" else np.array_equal(a, b))
            if not ok:
                problems.append(f"{where}: values differ (max abs diff "
                                f"{np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0):.3g})")
        return problems
    if isinstance(want, dict) and "tuple" in want or isinstance(want, list):
        items = want["tuple"] if isinstance(want, dict) else want
        if not isinstance(got, (tuple, list)) or len(got) != len(items):
            return [f"{where}: {type(got).__name__}, PyTorch a sequence of {len(items)}"]
        return [p for i, (g, w) in enumerate(zip(got, items))
                for p in _compare(sample, ns, g, w, f"{where}[{i}]", tol, values)]
    w = sample.decode(want, ns, {})
    if isinstance(got, ns.Tensor) or type(got) is not type(w) and not (
            isinstance(w, float) and isinstance(got, (int, float)) and not isinstance(got, bool)):
        return [f"{where}: {type(got).__name__}, PyTorch {type(w).__name__}"]
    if values and isinstance(w, float):
        ok = math.isclose(got, w, rel_tol=tol[1], abs_tol=tol[0]) or (math.isnan(got) and math.isnan(w))
        return [] if ok else [f"{where}: {got!r}, PyTorch {w!r}"]
    return [] if not values or got == w else [f"{where}: {got!r}, PyTorch {w!r}"]


def has_name(ns, call):
    """Whether namespace ns has the function, Tensor method or attribute a recorded call names."""
    if call["kind"] != "function":
        return hasattr(ns.Tensor, call["name"])
    obj = ns
    for part in call["name"].split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return True


def run_forward(sample, ns):
    """Problems of the forward call: values (unless the op is random), dtypes, shapes, raises where PyTorch does."""
    rec, tol = sample.record, (sample.op["atol"], sample.op["rtol"])
    if not has_name(ns, rec["call"]):       # no pass by the AttributeError of a missing name
        return [f"raised AttributeError: no attribute '{rec['call']['name']}'"]
    try:
        got = sample.call(ns, {})
    except Exception as e:  # noqa: BLE001 - comparing what either side raises is the point
        if rec.get("raises"):
            base = getattr(builtins, rec["raises"]["base"])
            # minifp's "not supported" (NotImplementedError, a RuntimeError) is no match for PyTorch's refusal
            ok = isinstance(e, base) and (base is NotImplementedError or not isinstance(e, NotImplementedError))
            return [] if ok else [f"raised {type(e).__name__}, PyTorch {rec['raises']['type']}"]
        return [f"raised {type(e).__name__}: {str(e)[:200]}"]
    if rec.get("raises"):
        return [f"returned, PyTorch raised {rec['raises']['type']}"]
    return _compare(sample, ns, got, rec["out"], "out", tol, values=sample.op["values"] and not rec.get("random"))


def _float_tensors(ns, x):
    """The floating tensors of a result, in order."""
    if isinstance(x, ns.Tensor):
        return [x] if x.is_floating_point() else []
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _float_tensors(ns, v)]
    return []


def _key(place, shape):
    """A recorded tensor's identity: its place in a buffer, and its shape when it is empty (an empty tensor's
    offset is also the next tensor's)."""
    return tuple(place) + ((tuple(shape),) if 0 in shape else ())


def run_gradient(sample, ns):
    """Problems of the gradients of sum(out * cotangent) with respect to the recorded inputs."""
    rec, tol = sample.record, (sample.op["atol"], sample.op["rtol"])
    made = {}
    try:
        outs = [t for t in _float_tensors(ns, sample.call(ns, made)) if t.requires_grad]
        if len(outs) != len(rec["cotangents"]):
            return [f"{len(outs)} differentiable outputs, PyTorch {len(rec['cotangents'])}"]
        loss = sum((o * ns.tensor(sample.array(c))).sum() for o, c in zip(outs, rec["cotangents"]))
        loss.backward()
    except Exception as e:  # noqa: BLE001
        return [f"raised {type(e).__name__}: {str(e)[:200]}"]
    problems = []
    for i, (ref, want) in enumerate(zip(rec["grad_inputs"], rec["grads"])):
        x = made.get(_key(ref["t"][:2], want["t"][2] if want is not None else [1]))
        g = None if x is None else x.grad
        if want is None:
            if g is not None and np.any(_values(ns, g) != 0):
                problems.append(f"grad[{i}]: nonzero, PyTorch none")
        elif g is None:
            problems.append(f"grad[{i}]: none, PyTorch has one")
        else:
            problems += _compare(sample, ns, g, want, f"grad[{i}]", tol)
    return problems


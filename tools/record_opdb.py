"""Record PyTorch's own op database (op_db) into tests/fixtures/pytorch/opdb/, the samples of tests/torch/test_opdb.py.

Run by hand from the repository root with real PyTorch (see tools/record_pytorch.py for the environment):

    /work/torchenv/bin/python tools/record_opdb.py

Every OpInfo is in scope unless tools/opdb_exclusions.json excludes it (by name or name prefix, with a reason).
For each in-scope op: up to MAX_SAMPLES float32 samples of op.sample_inputs(device="cpu", dtype=torch.float32,
requires_grad=op.supports_autograd) (int64 samples for ops PyTorch runs on integers only) and up to MAX_ERRORS
of op.error_inputs("cpu"), drawn under fixed seeds, of at most MAX_ELEMENTS tensor elements (an op with none
such keeps its smallest sample under MAX_LARGE).
Each sample keeps its call (resolved to a public name: a torch function, a Tensor method or attribute, checked
to give what op_db's own callable gives), its arguments, its output(s) or the exception PyTorch
raised, and, for ops op_db marks differentiable, the gradients of sum(out_i * cotangent_i) over the floating
outputs with respect to every input that requires grad (cotangents drawn under a fixed seed and stored).
Samples whose arguments cannot be stored (complex numbers, generators, callables, ...) are listed as
"unrecordable". The call is run through tests/torch/opdb_samples.py's Sample.call on the stored arguments,
the same code the test runs on minifp.torch, so a stored call reproduces PyTorch's result by construction.
CI does not run this script; the test reads only the committed samples.json and samples.npz.
"""
import importlib.util
import inspect
import linecache
import json
import math
import os
import random
import re
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch.testing._internal.common_device_type import toleranceOverride
from torch.testing._internal.common_methods_invocations import op_db

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "pytorch" / "opdb"
EXCLUSIONS = json.loads((ROOT / "tools" / "opdb_exclusions.json").read_text())
MAX_SAMPLES, MIN_SAMPLES, MAX_ERRORS, MAX_ELEMENTS, MAX_LARGE, SEED = 8, 1, 4, 512, 20000, 0
DEFAULT_TOL = (1e-5, 1.3e-6)    # torch.testing.assert_close's float32 (atol, rtol)
# The test classes whose float32 tolerance overrides compare two implementations of an op, as we do.
TOL_CLASSES = ("TestCommon", "TestConsistency")

_spec = importlib.util.spec_from_file_location("opdb_samples", ROOT / "tests" / "torch" / "opdb_samples.py")
opdb_samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(opdb_samples)


class Unrecordable(Exception):
    """An argument the fixture format cannot hold."""


def excluded(name):
    """(category, reason) of the exclusion that covers op `name`, or None when the op is in scope."""
    for rule in EXCLUSIONS["exclusions"]:
        if any(name == p or p.endswith(".") and name.startswith(p) for p in rule["ops"]):
            return rule["category"], rule["reason"]
    return None


def shape_only(name):
    """Whether op `name` is compared by shape, dtype and raises only (random or uninitialised values)."""
    return any(name in rule["ops"] for rule in EXCLUSIONS["shape_only"])


def tolerance(op):
    """(atol, rtol) for float32: the largest override op_db gives for a comparing test class, else the default."""
    atol, rtol = DEFAULT_TOL
    for info in op.decorators:
        if getattr(info, "cls_name", None) not in TOL_CLASSES or "mps" in (info.test_name or ""):
            continue
        for dec in info.decorators:
            if isinstance(dec, toleranceOverride) and torch.float32 in dec.d:
                atol, rtol = max(atol, dec.d[torch.float32].atol), max(rtol, dec.d[torch.float32].rtol)
    return atol, rtol


MODULES = (("torch", torch), ("torch.nn.functional", torch.nn.functional), ("torch.linalg", torch.linalg),
           ("torch.special", torch.special), ("torch.fft", torch.fft))
# Lambdas of op_db that call something other than their first argument's method or a seeded function.
SPECIAL = {"where": ("function", "torch.where", lambda a: [a[1], a[0], a[2]]),
           "einsum": ("function", "torch.einsum", lambda a: [a[1], *a[0]]),
           "nn.functional.embedding": ("function", "torch.nn.functional.embedding", lambda a: [a[1], a[0]]),
           "nn.functional.embedding_bag": ("function", "torch.nn.functional.embedding_bag", lambda a: [a[1], a[0]]),
           "T": ("attribute", "T", None), "H": ("attribute", "H", None), "mT": ("attribute", "mT", None),
           "mH": ("attribute", "mH", None), "zero_": ("method", "zero_", None)}


def chain(name):
    """The object a dotted name under torch names, or None."""
    obj = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj


def resolve(op):
    """(kind, name, argument reorder or None) of the public call that op.op makes, or None."""
    if op.name in SPECIAL:
        return SPECIAL[op.name]
    fn, name = op.op, getattr(op.op, "__name__", None)
    public = chain(f"torch.{op.name}")
    # op_db's builtins are often torch._C's (linalg_norm, log_sigmoid, torch.conv1d): call them by op_db's name.
    if callable(public) and not isinstance(public, type) and (public is fn or not inspect.isfunction(fn)):
        return "function", f"torch.{op.name}", None
    for qual, module in MODULES:
        if name and getattr(module, name, None) is fn:
            return "function", f"{qual}.{name}", None
    if name and getattr(torch.Tensor, name, None) is fn:
        return "method", name, None
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    # A lambda's own source is one line; its body may continue on the next two.
    src = " ".join(linecache.getline(code.co_filename, code.co_firstlineno + i).strip() for i in range(3))
    seeded = re.search(r"wrapper_set_seed\(\s*torch\.([\w.]+),", src)
    if seeded:
        qual = seeded.group(1)
        return ("method", qual[7:], None) if qual.startswith("Tensor.") else ("function", f"torch.{qual}", None)
    meth = re.search(r"lambda (\w+)[^:]*:\s*\1\.(\w+)\(", src)
    if meth:
        return "method", meth.group(2), None
    return None


class Store:
    """Flat buffers, one per NumPy dtype, that every stored array is appended to."""

    def __init__(self):
        self.parts, self.sizes = {}, {}

    def put(self, t):
        """A {"t": [buffer, offset, shape], "dtype": ...} reference to a copy of tensor t's values."""
        if t.is_complex() or t.layout != torch.strided or t.is_quantized or t.device.type != "cpu":
            raise Unrecordable(f"a {t.dtype} {t.layout} tensor on {t.device}")
        try:
            a = t.detach().float().numpy() if t.is_floating_point() else t.detach().numpy()
        except (TypeError, ValueError, RuntimeError) as e:
            raise Unrecordable(f"a tensor NumPy cannot hold ({e})") from None
        buf = str(a.dtype)
        off = self.sizes.get(buf, 0)
        self.parts.setdefault(buf, []).append(a.ravel().copy())
        self.sizes[buf] = off + a.size
        return {"t": [buf, off, list(a.shape)], "dtype": str(t.dtype)[6:]}

    def arrays(self):
        return {k: np.concatenate(v) for k, v in self.parts.items()}


def encode(v, store, seen, inputs=True):
    """A JSON-ready value (tensors appended to store once per object, tracked in `seen`; inputs marked "rg"
    when they require grad)."""
    if isinstance(v, torch.Tensor):
        if id(v) not in seen:
            ref = store.put(v)
            if inputs and v.requires_grad:
                ref["rg"] = True
            seen[id(v)] = (ref, v)
        return seen[id(v)][0]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": str(v)}
    if isinstance(v, (torch.dtype, torch.memory_format, torch.layout)):
        return {"attr": str(v)[6:]}
    if isinstance(v, torch.device):
        return str(v)
    if isinstance(v, slice):
        return {"slice": [encode(x, store, seen) for x in (v.start, v.stop, v.step)]}
    if v is Ellipsis:
        return {"ellipsis": 0}
    if isinstance(v, list):
        return [encode(x, store, seen, inputs) for x in v]
    if isinstance(v, tuple):
        return {"tuple": [encode(x, store, seen, inputs) for x in v]}
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {"dict": {k: encode(x, store, seen, inputs) for k, x in v.items()}}
    raise Unrecordable(type(v).__name__)


def numel(v):
    """How many tensor elements a (nested) argument holds."""
    if isinstance(v, torch.Tensor):
        return v.numel()
    if isinstance(v, (list, tuple)):
        return sum(numel(x) for x in v)
    if isinstance(v, dict):
        return sum(numel(x) for x in v.values())
    return 0


def base_exception(e):
    """The first built-in exception class of e's type (torch's own errors subclass RuntimeError)."""
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")


def leaves(v, memo):
    """v with every tensor that requires grad replaced by a fresh leaf copy (one per original, kept in memo)."""
    if isinstance(v, torch.Tensor):
        if v.requires_grad and id(v) not in memo:
            memo[id(v)] = v.detach().clone().requires_grad_(True)
        return memo.get(id(v), v)
    if isinstance(v, (list, tuple)):
        return type(v)(leaves(x, memo) for x in v) if not hasattr(v, "_fields") else v
    if isinstance(v, dict):
        return {k: leaves(x, memo) for k, x in v.items()}
    return v


def zeroed(v):
    """v with every tensor's values replaced by zeros (random or uninitialised outputs: shape and dtype stay)."""
    if isinstance(v, torch.Tensor):
        return torch.zeros_like(v.detach())
    return type(v)(zeroed(x) for x in v) if isinstance(v, (list, tuple)) and not hasattr(v, "_fields") else v


def reference(op, sample):
    """What op_db's own callable gives for the sample (the recorded call must agree), or the exception."""
    torch.manual_seed(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return op.op(sample.input, *sample.args, **sample.kwargs)
        except Exception as e:  # noqa: BLE001
            return e


def record_sample(op, sid, resolved, sample, store, grads, error=None, values=True):
    """One sample's record: its call, stored arguments and what PyTorch returns or raises; raises Unrecordable."""
    kind, name, reorder = resolved
    memo = {}
    args = leaves([sample.input, *sample.args], memo)
    kwargs = leaves(dict(sample.kwargs), memo)
    if reorder:
        args = reorder(args)
    seen = {}
    call = {"kind": kind, "name": name, "args": encode(args, store, seen),
            "kwargs": encode(kwargs, store, seen)["dict"]}
    rec = {"id": sid, "call": call}
    torch.manual_seed(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = opdb_samples.invoke(torch, call, args, kwargs)
        except Exception as e:  # noqa: BLE001 - recording what PyTorch raises is the point
            rec["raises"] = {"type": type(e).__name__, "base": base_exception(e)}
            return rec
    if error is not None:
        raise Unrecordable(f"error input did not raise {error.__name__}")
    if values and is_random(call, args, kwargs, out):
        rec["random"], values = True, False
    if values and not same(out, reference(op, sample)):
        raise Unrecordable(f"{name} does not give what op_db's own callable gives")
    rec["out"] = encode(out if values else zeroed(out), store, {}, inputs=False)
    if grads and values:
        add_gradients(rec, out, [ref_t for ref_t in seen.values() if ref_t[1].requires_grad], store)
    return rec


def same(a, b):
    """Whether two results are equal, NaNs included."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a.detach().nan_to_num(), b.detach().nan_to_num())
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b or a != a and b != b


def is_random(call, args, kwargs, out):
    """Whether the call gives another result under another seed (dropout_p > 0 in attention, ...)."""
    torch.manual_seed(SEED + 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return not same(out, opdb_samples.invoke(torch, call, args, kwargs))


def float_outputs(out):
    """The floating tensors of a result that require grad, in order."""
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() and out.requires_grad else []
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in float_outputs(v)]
    return []


def add_gradients(rec, out, inputs, store):
    """The gradients of sum(out_i * cotangent_i) with respect to inputs, [(reference, tensor)] that require grad."""
    outs = float_outputs(out)
    if not outs or not inputs:
        return
    gen = torch.Generator().manual_seed(SEED + 1)
    cots = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in outs]
    try:
        grads = torch.autograd.grad(outs, [t for _, t in inputs], cots, allow_unused=True)
    except Exception as e:  # noqa: BLE001
        rec["grad_raises"] = type(e).__name__
        return
    rec["cotangents"] = [store.put(c) for c in cots]
    rec["grad_inputs"] = [{"t": ref["t"][:2]} for ref, _ in inputs]
    rec["grads"] = [None if g is None else store.put(g) for g in grads]


def sample_dtype(op):
    """float32, or int64 for ops PyTorch runs on integers only (one_hot, bitwise_and, ...), or None."""
    supported = op.supported_dtypes("cpu")
    return next((d for d in (torch.float32, torch.int64) if d in supported), None)


def samples_of(op):
    """The op's samples of sample_dtype (requires_grad where op_db says it is differentiable), then its error
    inputs."""
    torch.manual_seed(SEED)     # sample_inputs draw from all three generators
    random.seed(SEED)
    np.random.seed(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            dtype = sample_dtype(op)
            grad = op.supports_autograd and dtype.is_floating_point
            regular = list(op.sample_inputs("cpu", dtype, requires_grad=grad))
        except Exception as e:  # noqa: BLE001
            print(f"  {op.name}: sample_inputs raised {type(e).__name__}: {e}", file=sys.stderr)
            regular = []
        try:
            errors, again = list(op.error_inputs("cpu")), list(op.error_inputs("cpu"))
        except Exception:  # noqa: BLE001 - some ops have no error inputs for float32 on the CPU
            errors, again = [], []
    for e, f in zip(errors, again):     # torch.empty inputs: uninitialised values, zeroed so that runs agree
        for a, b in zip(tensors(e.sample_input), tensors(f.sample_input)):
            if (a.device.type == "cpu" and a.shape == b.shape and a.dtype == b.dtype and not a.is_complex()
                    and not torch.equal(a.detach().nan_to_num(), b.detach().nan_to_num())):
                with torch.no_grad():
                    a.zero_()
    return regular, errors


def tensors(sample):
    """The tensors of a sample's input, args and kwargs, in order."""
    flat = torch.utils._pytree.tree_leaves([sample.input, sample.args, sample.kwargs])
    return [t for t in flat if isinstance(t, torch.Tensor)]


def record_op(op, store, meta):
    """Append the op's samples (and its unrecordable ones) to meta."""
    opname = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    resolved = resolve(op)
    atol, rtol = tolerance(op)
    entry = {"name": opname, "dtype": str(sample_dtype(op))[6:], "atol": atol, "rtol": rtol,
             "values": not shape_only(op.name),
             "autograd": bool(op.supports_autograd),
             "call": None if resolved is None else (resolved[1] if resolved[0] == "function"
                                                    else f"Tensor.{resolved[1]}")}
    meta["ops"].append(entry)
    regular, errors = samples_of(op)
    if resolved is None:
        meta["unrecordable"].append({"op": opname, "samples": "all",
                                     "why": "op_db calls it through a private callable"})
        return
    sizes = [numel([s.input, s.args, s.kwargs]) for s in regular + [e.sample_input for e in errors]]
    small = [k for k in range(len(regular)) if sizes[k] <= MAX_ELEMENTS]
    # An op whose samples are all large keeps its MIN_SAMPLES smallest (under MAX_LARGE elements).
    large = sorted((k for k in range(len(regular)) if MAX_ELEMENTS < sizes[k] <= MAX_LARGE), key=sizes.__getitem__)
    errs = [k for k in range(len(regular), len(sizes)) if sizes[k] <= MAX_LARGE][:MAX_ERRORS]
    kept = 0
    for k in small + large + errs:
        s, is_error = (regular + [e.sample_input for e in errors])[k], k >= len(regular)
        if not is_error and (kept >= MAX_SAMPLES or k in large and kept >= MIN_SAMPLES):
            continue
        sid = f"{opname}#{'e' if is_error else ''}{k - len(regular) if is_error else k}"
        try:
            rec = record_sample(op, sid, resolved, s, store, entry["dtype"] == "float32" and op.supports_autograd
                                and not is_error,
                                error=errors[k - len(regular)].error_type if is_error else None,
                                values=entry["values"])
        except Unrecordable as e:
            if meta["unrecordable"] and meta["unrecordable"][-1]["op"] == opname:
                meta["unrecordable"][-1]["samples"] += 1
            else:
                meta["unrecordable"].append({"op": opname, "samples": 1, "why": str(e)})
            continue
        rec["op"] = len(meta["ops"]) - 1
        meta["samples"].append(rec)
        kept += not is_error


def save_npz(path, arrays):
    """np.savez_compressed with fixed timestamps, so that the same samples give the same bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, a in sorted(arrays.items()):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with z.open(info, "w") as f:
                np.lib.format.write_array(f, a, allow_pickle=False)


def main():
    if os.environ.get("PYTHONHASHSEED") != "0":     # some sample_inputs iterate over sets of strings
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    torch.set_num_threads(1)
    meta = {"torch_version": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "max_samples": MAX_SAMPLES, "max_errors": MAX_ERRORS, "max_elements": MAX_ELEMENTS,
            "min_samples": MIN_SAMPLES, "max_large": MAX_LARGE,
            "ops": [], "excluded": [], "samples": [], "unrecordable": []}
    store = Store()
    for op in op_db:
        opname = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        why = excluded(op.name)
        if why is None and sample_dtype(op) is None:
            why = ("no float32", "PyTorch has no float32 or int64 kernel for it on the CPU")
        if why:
            meta["excluded"].append({"op": opname, "category": why[0], "reason": why[1]})
            continue
        record_op(op, store, meta)
    OUT.mkdir(parents=True, exist_ok=True)
    save_npz(OUT / "samples.npz", store.arrays())
    (OUT / "samples.json").write_text(json.dumps(meta, separators=(",", ":")) + "\n")
    for f in ("samples.json", "samples.npz"):
        print(f"{(OUT / f).relative_to(ROOT)}: {(OUT / f).stat().st_size} bytes")
    print(f"{len(meta['ops'])} ops in scope, {len(meta['excluded'])} excluded, {len(meta['samples'])} samples, "
          f"{len(meta['unrecordable'])} unrecordable")


if __name__ == "__main__":
    main()

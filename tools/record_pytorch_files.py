"""Record torch.save files written by real PyTorch, and check minifp's in real PyTorch (not run by CI).

Run by hand from the repository root with the PyTorch environment (see tools/record_pytorch.py):

    /work/torchenv/bin/python tools/record_pytorch_files.py [--minifp-python /work/main/.venv/bin/python]

It writes tests/fixtures/pytorch/files/*.pt (torch.save's zip format: a tiny model's state_dict, a checkpoint
dict with Adam's state, every dtype minifp holds plus float64, non-contiguous views, storages shared between
tensors, nested containers of primitives) and expected.json, their values: every tensor's dtype, shape and raw
bit patterns, every container and primitive with its exact type. Then it runs minifp (the given Python with this
checkout first on PYTHONPATH) to load every fixture and save it again, and to save checkpoints of its own (SGD
momentum and Adam state, float8, views); it loads each file minifp wrote with torch.load(f, weights_only=True),
compares it with what it should hold, prints a report and records in expected.json that it passed, and with
which torch. The tests read only the committed files.
"""
import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "pytorch" / "files"
SPECIAL = [0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, math.nan, 1e-40, 3e38, 65504.0, 1e-7, 448.0, 0.1]
DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
          "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
UINT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def encode(obj):
    """obj as JSON that keeps every type: tensors by bits, tuples, dicts with their key types and class."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        flat = t.to(torch.uint8) if t.dtype == torch.bool else t.contiguous().view(UINT[t.element_size()])
        bits = flat.reshape(-1).tolist()
        if t.element_size() > 1:                              # signed views: two's complement -> unsigned
            bits = [b % (1 << (8 * t.element_size())) for b in bits]
        return {"__tensor__": {"dtype": str(t.dtype).split(".")[1], "shape": list(t.shape), "bits": bits,
                               "requires_grad": obj.requires_grad,
                               "parameter": isinstance(obj, torch.nn.Parameter)}}
    if isinstance(obj, dict):
        return {"__dict__": [[encode(k), encode(v)] for k, v in obj.items()],
                "ordered": isinstance(obj, collections.OrderedDict)}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(v) for v in obj]}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"__float__": repr(obj)}
    if isinstance(obj, (torch.dtype, torch.device)):
        return {"__" + type(obj).__name__ + "__": str(obj)}
    return obj


def fixtures():
    """name -> the object real PyTorch saves."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randn(5, 4)).square().mean().backward()
        opt.step()
    special = torch.tensor(SPECIAL, dtype=torch.float64)
    dtypes = {}
    for name in DTYPES:
        dtype = getattr(torch, name)
        if dtype.is_floating_point:
            dtypes[name] = special.to(dtype)
        elif dtype == torch.bool:
            dtypes[name] = torch.tensor([True, False, True, True])
        else:
            info = torch.iinfo(dtype)
            dtypes[name] = torch.tensor([info.min, -1 if info.min else 7, 0, 1, info.max], dtype=dtype)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 8
    shared = torch.arange(10, dtype=torch.int64)
    return {
        "tiny_model": model.state_dict(),
        "checkpoint": {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "best_acc": 0.91},
        "dtypes": dtypes,
        "views": {"base": base, "transposed": base.t(), "strided": base[1:, ::2], "column": base[:, 3],
                  "expanded": torch.tensor([1.5, -2.0], dtype=torch.bfloat16).expand(3, 2),
                  "scalar": base[2, 5], "empty": base[:0]},
        "shared": [shared, shared[2:7], shared.view(2, 5), shared],
        "nested": {"ints": [0, 255, 256, 65535, 65536, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 40, -2 ** 70],
                   "floats": (0.5, -0.0, 1e300, math.inf, math.nan), "text": "héllo ✓", "none": None,
                   "flags": [True, False], 7: {(1, "a"): "tuple key", 2.5: "float key", None: "none key"},
                   "od": collections.OrderedDict([("b", 1), ("a", [])]), "empty": ((), [], {}),
                   "param": torch.nn.Parameter(torch.tensor([1.0, 2.0])), "dtype": torch.bfloat16,
                   "device": torch.device("cpu"), "size": torch.Size([2, 3])},
    }


MINIFP = r"""
import collections, json, math, sys, warnings
import numpy as np
import minifp.torch as torch

src, dst = sys.argv[1], sys.argv[2]
warnings.filterwarnings("ignore", "load.*float64")
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

def encode(obj):
    if isinstance(obj, torch.Tensor):
        arr = np.ascontiguousarray(obj.detach().cpu().numpy())
        bits = arr.astype(np.uint8) if arr.dtype == np.bool_ else arr.view(UINT[arr.dtype.itemsize])
        return {"__tensor__": {"dtype": repr(obj.dtype).split(".")[1], "shape": list(obj.shape),
                               "bits": bits.reshape(-1).tolist(), "requires_grad": obj.requires_grad,
                               # minifp writes a Parameter that does not require grad (Adam's step)
                               # as the plain tensor PyTorch has there
                               "parameter": isinstance(obj, torch.nn.Parameter) and obj.requires_grad}}
    if isinstance(obj, dict):
        return {"__dict__": [[encode(k), encode(v)] for k, v in obj.items()],
                "ordered": isinstance(obj, collections.OrderedDict)}
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(v) for v in obj]}
    if isinstance(obj, list):
        return [encode(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"__float__": repr(obj)}
    if isinstance(obj, (torch.dtype, torch.device)):
        return {"__" + type(obj).__name__ + "__": str(obj) if isinstance(obj, torch.device) else repr(obj)}
    return obj

expected = {}
for name in json.load(open(f"{src}/expected.json"))["files"]:          # real PyTorch's files, saved again
    obj = torch.load(f"{src}/{name}.pt", map_location="cpu")
    torch.save(obj, f"{dst}/resaved_{name}.pt")
    expected[f"resaved_{name}"] = encode(obj)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
adam = torch.optim.Adam(model.parameters(), lr=1e-2)
for opt in (sgd, adam):
    opt.zero_grad()
    (model(torch.randn(5, 4)) ** 2).mean().backward()
    opt.step()
base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
own = {"model": model.state_dict(), "sgd": sgd.state_dict(), "adam": adam.state_dict(), "epoch": 3,
       "best_acc": 0.91, "fp8": torch.tensor([1.0, -448.0, 0.125], dtype=torch.float8_e4m3fn),
       "e5m2": torch.tensor([57344.0, -1.5], dtype=torch.float8_e5m2),
       "half": torch.tensor([[65504.0, -0.0]], dtype=torch.float16), "bf16": torch.tensor([1e38], dtype=torch.bfloat16),
       "view": base.t(), "base": base, "slice": base[1:, ::2],
       "broadcast": torch.from_numpy(np.broadcast_to(np.float32([1, 2]), (3, 2))),
       "flipped": torch.from_numpy(np.arange(4, dtype=np.int32)[::-1]), "tuple": (1, 2.5, None, True, "x"),
       "flags": torch.tensor([True, False])}
torch.save(own, f"{dst}/minifp_checkpoint.pt")
expected["minifp_checkpoint"] = encode(own)
json.dump(expected, open(f"{dst}/expected.json", "w"))
"""


def same(got, want, where="obj"):
    """Raise unless torch's object `got` is exactly the encoded `want` (types, keys, dtypes, bits)."""
    _compare(encode(got), want, where)


def _compare(got, want, where):
    """Raise at the first place two encodings differ, naming it."""
    if type(got) is not type(want) or isinstance(got, (list, dict)) and len(got) != len(want):
        raise AssertionError(f"{where}: got {json.dumps(got)[:300]}, want {json.dumps(want)[:300]}")
    if isinstance(got, dict):
        for key in got:
            _compare(got[key], want.get(key), f"{where}.{key}")
    elif isinstance(got, list):
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]")
    elif got != want:
        raise AssertionError(f"{where}: got {got!r}, want {want!r}")


def check_minifp(python, report):
    """Run minifp on the fixtures and check every file it wrote in torch.load(weights_only=True)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        subprocess.run([python, "-c", MINIFP, str(OUT), tmp], check=True, env=env, cwd=tmp)
        expected = json.load(open(os.path.join(tmp, "expected.json")))
        for name, want in expected.items():
            for mmap in (False, True):                         # mmap=True needs the records' 64-byte alignment
                got = torch.load(os.path.join(tmp, f"{name}.pt"), weights_only=True, mmap=mmap)
                same(got, want, name)
            report.append(f"  torch.load({name}.pt, weights_only=True[, mmap=True]): equal values, dtypes and types")
        got = torch.load(os.path.join(tmp, "minifp_checkpoint.pt"), weights_only=True)
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
        model.load_state_dict(got["model"])
        for opt, key in ((torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), "sgd"),
                         (torch.optim.Adam(model.parameters(), lr=1e-2), "adam")):
            opt.load_state_dict(got[key])
            opt.step()                                          # resumes in PyTorch from minifp's state
        report.append("  PyTorch's model, SGD and Adam load_state_dict of minifp's checkpoint and step from it")
        return sorted(expected)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minifp-python", default="/work/main/.venv/bin/python")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    objects = fixtures()
    record = {"torch_version": torch.__version__, "files": {}}
    for name, obj in objects.items():
        torch.save(obj, OUT / f"{name}.pt")
        back = torch.load(OUT / f"{name}.pt", weights_only=True)
        record["files"][name] = encode(back)
    with open(OUT / "expected.json", "w") as f:
        json.dump(record, f, sort_keys=True)
    report = [f"torch {torch.__version__}: wrote {', '.join(f'{n}.pt' for n in objects)} into {OUT}"]
    checked = check_minifp(args.minifp_python, report)
    record["minifp_files_checked"] = {"passed": True, "torch_version": torch.__version__, "files": checked}
    with open(OUT / "expected.json", "w") as f:
        json.dump(record, f, sort_keys=True)
        f.write("\n")
    print("\n".join(report + ["passed"]))


if __name__ == "__main__":
    sys.exit(main())

"""Record real PyTorch's torch.autograd.functional into tests/fixtures/pytorch/functional.json;
tests/torch/test_functional.py runs the same cases with minifp.torch and compares.

    /work/torchenv/bin/python tools/record_torch_functional.py

Each case calls jacobian, hessian, vjp, jvp, vhp or hvp on a small function of float32 inputs drawn here (stored in
the fixture); recorded: every returned tensor's values, shape, dtype and requires_grad, or the error's type and
message.
"""
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "functional.json"

FUNCTIONS = {
    "cube_sum": lambda torch: lambda x: (x ** 3).sum(),
    "tanh_mlp": lambda torch: lambda x: torch.tanh(x @ torch.tensor([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])).sum(),
    "elementwise": lambda torch: lambda x: torch.exp(x) * torch.sin(x),
    "two_inputs": lambda torch: lambda x, y: (x * y.sum() + y[1:].sum() * y ** 2, (x - y).sum()),
    "unused_input": lambda torch: lambda x, y: (x ** 2).sum(),
    "softmax": lambda torch: lambda x: torch.softmax(x, 0),
    "rosenbrock": lambda torch: lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2,
}

CASES = [
    ("jacobian", "elementwise", 1), ("jacobian", "softmax", 1), ("jacobian", "two_inputs", 2),
    ("jacobian", "unused_input", 2), ("jacobian", "cube_sum", 1),
    ("hessian", "cube_sum", 1), ("hessian", "tanh_mlp", 1), ("hessian", "rosenbrock", 1),
    ("hessian", "unused_input", 2),
    ("vjp", "elementwise", 1), ("vjp", "cube_sum", 1), ("vjp", "two_inputs", 2),
    ("jvp", "elementwise", 1), ("jvp", "softmax", 1), ("jvp", "two_inputs", 2),
    ("vhp", "tanh_mlp", 1), ("vhp", "rosenbrock", 1), ("hvp", "tanh_mlp", 1), ("hvp", "rosenbrock", 1),
    ("jacobian_create_graph", "elementwise", 1), ("vjp_no_v", "elementwise", 1),
    ("hessian", "elementwise", 1), ("vjp_missing_v", "elementwise", 1),
]


def _inputs(name, n):
    rng = np.random.default_rng(len(name))
    shape = (2,) if name == "rosenbrock" else (3,)
    return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(n)]


def _vectors(torch, kind, fn, xs):
    """The v argument: shaped like the outputs (vjp) or the inputs (jvp, vhp, hvp)."""
    rng = np.random.default_rng(7)
    if kind == "vjp":
        outs = fn(*xs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        vs = [torch.tensor(rng.uniform(-1, 1, tuple(o.shape)).astype(np.float32)) for o in outs]
    else:
        vs = [torch.tensor(rng.uniform(-1, 1, tuple(x.shape)).astype(np.float32)) for x in xs]
    return vs[0] if len(vs) == 1 else tuple(vs)


def _flat(result):
    """Every tensor of a nested result, in order."""
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in _flat(r)]
    return [result]


def run(torch, kind, fname, arrays):
    """The recorded summary of one case: the tensors returned, or the error."""
    F = torch.autograd.functional
    fn = FUNCTIONS[fname](torch)
    xs = [torch.tensor(a) for a in arrays]
    inputs = xs[0] if len(xs) == 1 else tuple(xs)
    try:
        if kind == "jacobian_create_graph":
            x = xs[0].clone().requires_grad_(True)
            got = F.jacobian(fn, x, create_graph=True)
            got = (got, torch.autograd.grad(got.sum(), x)[0])
        elif kind == "vjp_no_v":
            got = F.vjp(lambda x: fn(x).sum(), inputs)
        elif kind == "vjp_missing_v":
            got = F.vjp(fn, inputs)
        elif kind in ("jacobian", "hessian"):
            got = getattr(F, kind)(fn, inputs)
        else:
            got = getattr(F, kind)(fn, inputs, _vectors(torch, kind, fn, xs))
    except Exception as e:      # (recorded: the face must raise the same)
        return {"error": [type(e).__name__, str(e)]}
    return {"structure": repr(_structure(got)),
            "tensors": [{"values": t.detach().float().tolist(), "shape": list(t.shape), "dtype": str(t.dtype),
                         "requires_grad": t.requires_grad} for t in _flat(got)]}


def _structure(result):
    if isinstance(result, (tuple, list)):
        return tuple(_structure(r) for r in result)
    return "T"


def main():
    import torch
    cases = []
    for kind, fname, n in CASES:
        arrays = _inputs(fname, n)
        cases.append({"kind": kind, "function": fname, "inputs": [a.tolist() for a in arrays],
                      **run(torch, kind, fname, arrays)})
    OUT.write_text(json.dumps({"torch": torch.__version__, "cases": cases}) + "\n")
    print(f"wrote {len(cases)} cases to {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

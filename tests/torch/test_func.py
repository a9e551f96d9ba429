"""torch.func against real PyTorch 2.13: tests/fixtures/pytorch/func.json, recorded by tools/record_torch_func.py,
whose programs run here with minifp.torch: per-sample gradients of an MLP and a CNN, an ensemble of 3 MLPs, the
Jacobians tutorial's jacrev, jacfwd and hessian, an empirical NTK, vjp, jvp, linearize, a Hessian-vector product,
grad with has_aux and argnums, vmap's in_dims and out_dims, functional_call with tied weights; every tensor's
dtype, shape and requires_grad and the error messages compared exactly.

Values equal where both compute the same float32 operations in the same order (EXACT; a zero's sign is not
compared: PyTorch's forward mode gives -0.0 where a zero tangent meets a negative factor, minifp's jacfwd columns
+0.0), elsewhere within RTOL of the array's largest magnitude. There the low bits differ for reasons outside
torch.func: PyTorch's CPU exp, tanh, sin and log_softmax are its own vectorised approximations where minifp's are
NumPy's, its BLAS sums products in another order, its vmap runs batched kernels (one GEMM for the batch) where
minifp's loop runs one product per sample, and its jacfwd and jvp carry tangents forward where minifp's
differentiate a reverse sweep (the same products, summed in another order). The largest difference recorded is
2.0e-7 of the array's scale (a CNN's per-sample gradient of its linear layer).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_func import ERRORS, PROGRAMS, _record, error  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "func.json").read_text())
RTOL = 5e-7
ALL = ("",)
# The paths (top-level keys, or deeper) whose values are bit for bit PyTorch's: the polynomials and edges programs
# whole, and elsewhere what no exp, tanh, sin, cos, pow, log_softmax, batch norm's variance or longer sum reaches.
EXACT = {"polynomials": ALL, "edges": ALL,
         "modules": ("tied", "untied", "kwargs", "kept", "given/running_mean", "given/num_batches_tracked", "own",
                     "bn"),
         "ensemble": ("params", "buffers", "keys"),
         "jacobians": ("dict_output/s", "dict_output/c/1", "aux"),
         "products": ("out/1", "first/0", "vjp_dict", "out_dict", "jvp/1", "hvp", "with_aux", "grad_and_value/0",
                      "grad_of_grad"),
         "vmap_semantics": ("negative", "none", "nested", "tuple_out", "out_dims_tuple", "kwargs", "nested_vmap",
                            "same_equal", "torch_vmap")}


def _compare(path, got, want, exact):
    """got == want (recursively), tensors bit for bit where exact(path), else within RTOL of the array's largest
    magnitude."""
    if isinstance(want, dict) and "values" in want:
        assert (got["dtype"], got["shape"], got["requires_grad"]) == \
            (want["dtype"], want["shape"], want["requires_grad"]), (path, got, want)
        g, w = np.asarray(got["values"], np.float32), np.asarray(want["values"], np.float32)
        if exact(path):
            assert np.array_equal(g, w, equal_nan=True), (path, g, w)
            return
        scale = np.abs(w).max(initial=0)
        assert np.abs(g - w).max(initial=0) <= RTOL * scale, (path, g, w, np.abs(g - w).max() / scale)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), (path, got, want)
        for key in want:
            _compare(f"{path}/{key}", got[key], want[key], exact)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (a, b) in enumerate(zip(got, want)):
            _compare(f"{path}/{i}", a, b, exact)
    else:
        assert got == want, (path, got, want)


def _plain(path):
    """A recorded path without its container tags: "products/dict/jvp/tuple/1" -> "jvp/1"."""
    return "/".join(p for p in path.split("/")[1:] if p not in ("dict", "tuple", "list"))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_compute_what_pytorch_computes(name):
    got = _record(PROGRAMS[name](torch))
    _compare(name, got, FIX["programs"][name],
             lambda path: any((_plain(path) + "/").startswith(p + "/") or p == "" for p in EXACT.get(name, ())))


@pytest.mark.parametrize("snippet", ERRORS)
def test_errors_are_pytorchs(snippet):
    assert error(torch, snippet) == FIX["errors"][snippet]


def test_per_sample_gradients_are_each_samples_own_backward_bit_for_bit():
    nn, F, func = torch.nn, torch.nn.functional, torch.func
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    data, targets = torch.randn(4, 5), torch.tensor([0, 2, 1, 2])
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(params, x, t):
        return F.cross_entropy(func.functional_call(model, params, (x.unsqueeze(0),)), t.unsqueeze(0))

    grads = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, data, targets)
    for i in range(4):
        model.zero_grad()
        F.cross_entropy(model(data[i:i + 1]), targets[i:i + 1]).backward()
        for k, p in model.named_parameters():
            assert not grads[k].requires_grad and np.array_equal(grads[k][i].numpy(), p.grad.numpy()), (i, k)


def test_functional_call_puts_the_modules_own_tensors_back_even_when_forward_raises():
    model = torch.nn.Linear(3, 2)
    weight, bias = model.weight, model.bias
    with pytest.raises(RuntimeError):
        torch.func.functional_call(model, {"weight": torch.ones(2, 4)}, torch.ones(1, 3))
    assert model.weight is weight and model.bias is bias and list(model.state_dict()) == ["weight", "bias"]
    out = torch.func.functional_call(model, {"weight": torch.ones(2, 3), "bias": torch.zeros(2)}, torch.ones(1, 3))
    assert out.tolist() == [[3.0, 3.0]] and model.weight is weight


def test_vmap_randomness():
    draw = lambda x: x + torch.rand(2)      # noqa: E731
    torch.manual_seed(1)
    state = torch.get_rng_state()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        torch.func.vmap(draw)(torch.zeros(3, 2))
    assert torch.equal(torch.get_rng_state(), state)       # the refused call drew nothing
    different = torch.func.vmap(draw, randomness="different")(torch.zeros(3, 2))
    same = torch.func.vmap(draw, randomness="same")(torch.zeros(3, 2))
    assert not torch.equal(different[0], different[1]) and torch.equal(same[0], same[2])


def test_transforms_compute_under_no_grad_and_return_no_graph():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        g = torch.func.grad(lambda w: (w * w * w).sum())(w)
    assert g.tolist() == [3.0, 12.0] and not g.requires_grad


def test_a_missing_name_says_where_coverage_is_listed():
    with pytest.raises(AttributeError, match="torch_coverage.md"):
        torch.func.functionalize

"""Higher-order gradients (create_graph=True) against real PyTorch 2.13: tests/fixtures/pytorch/higher_order.json,
recorded by tools/record_torch_higher_order.py, whose functions run here with minifp.torch: grad of grad of each
covered op, a WGAN-GP gradient penalty (of an MLP critic and of one with LayerNorm), a tanh PINN (third order), a
Hessian-vector product, backward twice, a MAML step (of a linear model and through BatchNorm in training mode) and
a gradient penalty through an embedding; dtypes, shapes, requires_grad and error messages compared exactly.

Values bit for bit where both compute the same correctly rounded float32 operations in the same order (EXACT:
+ - * /, comparisons and selections, indexing, a cast to bfloat16, sums of up to 4 terms; log's and log1p's
gradients are divisions, whose own gradient both write as -g * ((x / y) / y)). Elsewhere within RTOL of the
array's largest magnitude: PyTorch's CPU exp, tanh, sigmoid, log, sqrt and pow are its own vectorised
approximations where minifp's are NumPy's, its BLAS sums products in another order, and its double-backward
formulas are written differently (tanh's is -2 * y * g * grad, minifp's the product rule through
g * (1 - y * y)), so the low bits differ. The largest difference recorded is 8.5e-7 of the array's scale (a summed
Huber loss's gradient, times y: the two sum the loss in their own orders).
"""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch._tensor as tensor_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_higher_order import PROGRAMS, error, second  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "higher_order.json").read_text())
RTOL = 2e-6
ALL = ("value", "grad", "grad2")
EXACT = {"abs": ALL, "neg_square": ALL, "cube_div": ALL, "clamp": ALL, "mul_div": ALL, "maximum": ALL,
         "minimum": ALL, "where": ALL, "broadcast": ALL, "layout": ALL, "index": ALL, "mse_loss": ALL, "dtype": ALL,
         "hardtanh": ALL, "vector_norm": ("grad",), "sum_mean": ("value", "grad"), "log": ("grad",),
         "log1p": ("grad", "grad2"), "pow_number": ("grad",), "avg_pool2d": ("grad", "grad2"),
         "cumsum": ("grad", "grad2"), "embedding": ("grad", "grad2"), "embedding_padding": ("grad", "grad2"),
         "bce_logits_weighted": ("value",), "l1_loss": ("grad2",), "var": ("value",), "var_all": ("value",),
         "max": ("value", "grad2"), "max_ties": ALL, "logsumexp": ("value",), "hardswish": ALL, "max_pool2d": ALL,
         "max_pool2d_tiles": ALL}


def _compare(path, got, want, exact):
    """got == want (recursively), float arrays bit for bit where exact(path), else within RTOL of the array's
    largest finite magnitude, with NaN and infinities in the same places."""
    if isinstance(want, dict) and "values" in want:
        assert (got["dtype"], got["shape"], got["requires_grad"]) == \
            (want["dtype"], want["shape"], want["requires_grad"]), (path, got, want)
        g, w = np.asarray(got["values"], np.float32), np.asarray(want["values"], np.float32)
        if exact(path):
            assert np.array_equal(g, w, equal_nan=True), (path, g, w)
            return
        assert np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(np.isinf(g), np.isinf(w)), path
        finite = np.isfinite(w)
        scale = np.abs(w[finite]).max(initial=0)
        assert np.abs(g[finite] - w[finite]).max(initial=0) <= RTOL * scale, (path, g, w)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (path, got, want)
        for key in want:
            _compare(f"{path}/{key}".lstrip("/"), got[key], want[key], exact)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for i, (a, b) in enumerate(zip(got, want)):
            _compare(f"{path}/{i}", a, b, exact)
    else:
        assert got == want, (path, got, want)


@pytest.mark.parametrize("name", sorted(FIX["cases"]))
def test_grad_of_grad_is_pytorchs(name):
    case = FIX["cases"][name]
    got = second(torch, case["expression"], case["params"])
    _compare("", got, case["expected"], lambda path: path.split("/")[0] in EXACT.get(name, ()))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_compute_what_pytorch_computes(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)        # backward(create_graph=True)'s (tested below)
        got = PROGRAMS[name](torch)
    _compare("", got, FIX["programs"][name], lambda path: False)


@pytest.mark.parametrize("snippet", sorted(FIX["errors"]))
def test_errors_are_pytorchs(snippet):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert error(torch, snippet) == FIX["errors"][snippet]


def test_backward_with_create_graph_warns_once_as_pytorch(monkeypatch):
    monkeypatch.setattr(tensor_module, "_CYCLE_WARNED", [])
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"^Using backward\(\) with create_graph=True will create a reference "
                                         r"cycle between the parameter and its gradient"):
        (x * x).sum().backward(create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * x).sum().backward(create_graph=True)
    assert x.grad.tolist() == [4.0, 8.0] and x.grad.requires_grad and x.grad.grad_fn.name() == "AddBackward0"


def test_retain_graph_defaults_to_create_graph():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = torch.exp(x).sum()
    g, = torch.autograd.grad(y, x, create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        y.backward(create_graph=True)
    y.backward()                            # the graph was kept
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    assert g.requires_grad and g.grad_fn.name() == "MulBackward0"


def test_a_custom_functions_backward_is_differentiated_through():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x * x

    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    g, = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    h, = torch.autograd.grad(g.sum(), x)
    assert g.tolist() == [3.0, 12.0, 0.75] and h.tolist() == [6.0, -12.0, 3.0]


def test_an_uncovered_op_is_refused_before_any_grad_changes():
    # (PyTorch differentiates prod twice; minifp's graph gradients do not cover it yet)
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = (x * x).prod()
    with pytest.raises(NotImplementedError, match=r"^derivative for prod_backward is not implemented"):
        torch.autograd.grad(y, x, create_graph=True)
    with pytest.raises(NotImplementedError, match="'prod'"):
        y.backward(create_graph=True)
    assert x.grad is None
    y.backward()
    assert x.grad.tolist() == [[1152.0, 576.0], [384.0, 288.0]]


def test_hooks_and_retained_gradients_see_graph_tensors():
    # the values and flags real PyTorch 2.13 gives for this program
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append((g.tolist(), g.requires_grad)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (y * y).sum().backward(create_graph=True)
    assert seen == [([2.0, 8.0], True)] and y.grad.tolist() == [2.0, 8.0] and y.grad.requires_grad
    assert x.grad.tolist() == [4.0, 32.0] and x.grad.requires_grad
    x.grad.sum().backward()
    assert x.grad.tolist() == [16.0, 80.0] and x.grad.requires_grad and y.grad.tolist() == [6.0, 16.0]


def test_printing_a_gradient_names_its_node():
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    g, = torch.autograd.grad(torch.nn.functional.gelu(x).sum(), x, create_graph=True)
    assert repr(g).endswith("grad_fn=<GeluBackwardBackward0>)")       # PyTorch's name for it
    h, = torch.autograd.grad(torch.tanh(x).sum(), x, create_graph=True)
    assert h.grad_fn.name() == "MulBackward0"       # (PyTorch's: TanhBackwardBackward0; minifp's is made of ops)

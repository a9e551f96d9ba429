"""torch.nn.utils.parametrize, parametrizations.weight_norm / spectral_norm, the older weight_norm / spectral_norm
hooks and torch.nn.utils.prune against real PyTorch 2.13: tests/fixtures/pytorch/parametrize.json, recorded by
tools/record_torch_parametrize.py, whose scenario and error functions run here with minifp.torch (class names,
reprs, state_dict keys, parameter and buffer names, forward values, gradients, three SGD steps, what removal leaves,
warnings, and the errors of bad input).

Values: bit for bit where PyTorch's CPU kernels and minifp do the same correctly rounded operations in the same
order (EXACT below: masks, pruned weights, originals set by right_inverse; the float16 weight_norm's weight and
forward, which follow PyTorch's fused kernel: norm and factor in float32, one rounding of the product; the
bfloat16 spectral norm's forward and gradients). Elsewhere float32 arrays agree within RTOL of the array's largest
magnitude: Linear's and Conv2d's products, the norms and spectral normalisation's matrix-vector and dot products
are sums PyTorch's BLAS, mkldnn and vectorised kernels add in another order than NumPy (largest difference
recorded: 6.7e-7 of the array's scale, in a gradient through the older spectral_norm's power iteration).
16-bit arrays agree within one ulp of the array's largest magnitude: PyTorch's fused weight_norm backward computes
grad_v as a * grad_w - b * v in float32 and rounds once, minifp differentiates the composition in float32 and rounds
once, and where the two float32 results fall on either side of a float16 rounding boundary the float16 gradients
differ by one ulp; three SGD steps carry such differences (and the bfloat16 spectral norm's power iteration's).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn as nn
import minifp.torch.nn.utils.prune as prune
from minifp.torch.nn.utils import parametrize as P

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_parametrize import error, gram, scenario, symmetric  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "parametrize.json").read_text())
DATA = {k: np.asarray(v["values"], np.float32).reshape(v["shape"]) for k, v in FIX["inputs"].items()}
RTOL = 1e-6
EXACT = ("/mask", "/original", "pruned/weight", "other/weight", "buffer/", "weight_norm_half/weight_before_forward",
         "weight_norm_half/forward", "spectral_norm_bfloat16/forward", "spectral_norm_bfloat16/grads")
EPS = {"torch.float16": 2.0 ** -10, "torch.bfloat16": 2.0 ** -7}        # one ulp of 1.0


def _compare(path, got, want):
    """got == want (recursively); float arrays bit for bit where the path holds one of EXACT, else within RTOL of
    the array's largest magnitude (16-bit arrays: within one ulp there, EPS)."""
    if isinstance(want, dict) and "values" in want:
        assert (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), path
        g, w = np.asarray(got["values"], np.float32), np.asarray(want["values"], np.float32)
        if any(part in path for part in EXACT):
            assert np.array_equal(g, w), (path, g, w)
        else:
            rtol = EPS.get(want["dtype"], RTOL)
            assert np.abs(g - w).max(initial=0) <= rtol * np.abs(w).max(initial=0), (path, g, w)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (path, sorted(got), sorted(want))
        for key in want:
            _compare(f"{path}/{key}", got[key], want[key])
    else:
        assert got == want, (path, got, want)


@pytest.mark.parametrize("name", sorted(FIX["scenarios"]))
def test_a_scenario_gives_what_pytorch_gives(name):
    want = dict(FIX["scenarios"][name])
    start = want.pop("start", None)             # PyTorch's random u, v for spectral norm: loaded, not compared
    _compare(name, scenario(torch, name, DATA, start=start), want)


@pytest.mark.parametrize("expression", sorted(FIX["errors"]))
def test_errors_are_pytorchs(expression):
    got = error(torch, expression)
    # (a class in a message prints its module: minifp.torch.nn.utils.prune for torch.nn.utils.prune)
    assert [got[0], got[1].replace("minifp.torch.", "torch.")] == FIX["errors"][expression]


def test_a_failed_registration_changes_nothing():
    m = nn.Linear(3, 4)
    weight = m.weight
    with pytest.raises(ValueError):
        P.register_parametrization(m, "weight", gram(torch))
    assert type(m) is nn.Linear and m.weight is weight and list(m.state_dict()) == ["weight", "bias"]
    with pytest.raises(ValueError, match="amount=20 should be smaller than the number of parameters to prune=12"):
        prune.l1_unstructured(m, "weight", amount=20)
    # PyTorch puts the parameter back by registering it again: it moves after bias, as here
    assert m.weight is weight and list(m.state_dict()) == ["bias", "weight"] and not prune.is_pruned(m)
    assert not m._forward_pre_hooks


def test_the_optimizer_keeps_the_parameter_it_was_given():
    m = nn.Linear(4, 4)
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    weight = m.weight
    P.register_parametrization(m, "weight", symmetric(torch))
    assert m.parametrizations.weight.original is weight          # set_ in place: the optimizer still holds it
    m(torch.ones(1, 4)).sum().backward()
    before = weight.detach().clone()
    opt.step()
    assert not torch.equal(weight, before)
    assert torch.equal(m.weight, m.weight.t())


def test_the_import_paths_of_pytorch():
    from minifp.torch.nn.utils import parametrizations, remove_spectral_norm, remove_weight_norm
    from minifp.torch.nn.utils.parametrize import cached, register_parametrization
    from minifp.torch.nn.utils.prune import L1Unstructured
    assert parametrizations is torch.nn.utils.parametrizations and cached is P.cached
    assert register_parametrization is torch.nn.utils.parametrize.register_parametrization
    assert remove_weight_norm is torch.nn.utils.remove_weight_norm
    assert remove_spectral_norm is torch.nn.utils.remove_spectral_norm
    assert issubclass(L1Unstructured, prune.BasePruningMethod)
    assert torch.nn.utils.weight_norm.__module__ == "minifp.torch.nn.utils.weight_norm"
    with pytest.raises(AttributeError, match="orthogonal is not part of minifp's PyTorch face yet"):
        torch.nn.utils.parametrizations.orthogonal


def test_the_old_weight_norm_warns_as_pytorch_does():
    with pytest.warns(FutureWarning, match=r"`torch.nn.utils.weight_norm` is deprecated in favor of "
                                           r"`torch.nn.utils.parametrizations.weight_norm`."):
        torch.nn.utils.weight_norm(nn.Linear(2, 2))


def test_a_pruned_tensor_is_recomputed_before_each_forward():
    m = nn.Linear(5, 6)
    prune.l1_unstructured(m, "weight", amount=0.5)
    with torch.no_grad():
        m.weight_orig.fill_(1.0)
    m(torch.ones(1, 5))
    assert m.weight.sum().item() == 15.0 and m.weight_mask.sum().item() == 15.0


def test_random_pruning_repeats_under_manual_seed():
    masks = []
    for seed in (3, 3, 4):
        torch.manual_seed(seed)
        m = nn.Linear(8, 8)
        prune.random_unstructured(m, "weight", amount=0.5)
        prune.random_structured(m, "weight", amount=2, dim=0)
        masks.append(m.weight_mask.tolist())
    assert masks[0] == masks[1] and masks[0] != masks[2]
    assert sum(row == [0.0] * 8 for row in masks[0]) >= 2


def test_a_custom_pruning_method_writes_its_mask_through_a_view():
    # the pruning tutorial's FooBarPruningMethod: mask.view(-1)[::2] = 0 (PyTorch 2.13 gives bias_mask [0, 1, 0, 1])
    from minifp.torch.nn.utils import prune

    class FooBar(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask

    m = torch.nn.Linear(3, 4)
    FooBar.apply(m, "bias")
    assert m.bias_mask.tolist() == [0.0, 1.0, 0.0, 1.0]
    assert (m.bias == m.bias_orig * m.bias_mask).all()

"""A backward that would read a tensor changed in place after its op kept it raises PyTorch's RuntimeError (saved
tensors and version counters); where PyTorch's backward keeps nothing that changed, the gradients are PyTorch's.
Recorded from PyTorch 2.13 by tools/record_torch_inplace.py: every op's result and inputs changed in place, under
no_grad and under autograd, with each combination of the inputs requiring a gradient."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_inplace import MODULES, SCRIPTS, cases, module_versions, run, run_script  # noqa: E402

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "inplace.json").read_text())
# Known: a division's or a max pool's result changed under no_grad. PyTorch's backward recomputes x / y for the
# divisor's gradient, and keeps the max pool's indices; minifp's reads the result, which now holds the changed values
# (under autograd it reads the values as they were).
KNOWN = {"div/out/11/no_grad", "div/out/01/no_grad", "max_pool2d/out/1/no_grad"}
CASES = [c for c in cases() if c[0] not in KNOWN]


def test_the_known_differences_are_still_there():
    for key, name, target, grads, mode in cases():
        if key in KNOWN:
            got = run(torch, name, target, grads, mode)
            assert got[0] == "ok" and got[1] != FIXTURE["cases"][key][1], key


@pytest.mark.parametrize("key, name, target, grads, mode", CASES, ids=[c[0] for c in CASES])
def test_a_change_after_the_forward_as_pytorch(key, name, target, grads, mode):
    want, got = FIXTURE["cases"][key], run(torch, name, target, grads, mode)
    assert got[0] == want[0], got
    if want[0] == "error":
        assert got[1] == want[1]
    else:
        for g, w in zip(got[1], want[1]):
            assert (g is None) == (w is None)
            if w is not None:
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=2e-6)     # (norms: sums near 0)
        assert got[2] == want[2]                        # the versions


def test_the_optimizer_step_before_the_backward_is_refused_and_changes_nothing():
    """GAN training's classic mistake: a step between a forward and its backward."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.ones(4, 3, requires_grad=True)
    loss = model(x).sum()
    model.weight.grad = torch.ones(2, 3)
    opt.step()
    before = model.weight.detach().clone()
    # (a new Linear's weight is at version 1: its initialisation is in place, as PyTorch's)
    with pytest.raises(RuntimeError, match=r"\[torch.FloatTensor \[3, 2\]\], which is output 0 of AsStrided, is at "
                                           r"version 2; expected version 1 instead"):
        loss.backward()
    assert x.grad is None and torch.equal(model.weight.detach(), before)


def test_a_detached_alias_shares_the_version():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a.sigmoid()
    c = out.detach()
    c.zero_()
    assert (out._version, c._version) == (1, 1)
    with pytest.raises(RuntimeError, match="which is output 0 of Sigmoid, is at version 1; expected version 0"):
        out.sum().backward()


def test_autograd_grad_checks_too_and_a_long_history_stays_bounded():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.exp()
    for _ in range(300):
        with torch.no_grad():
            z.mul_(1.0)
    assert z._version == 300
    with pytest.raises(RuntimeError, match="which is output 0 of Exp, is at version 300; expected version 0"):
        torch.autograd.grad(z.sum(), x)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_training_code_with_in_place_ops_as_pytorch(name):
    """ReLU(inplace=True), residual +=, in-place dropout and EMA updates run; an optimizer step between a forward and
    its backward (a GAN's discriminator stepped first), and a kept result changed, raise PyTorch's words."""
    assert run_script(torch, name) == FIXTURE["cases"][f"script/{name}"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_new_modules_parameters_are_at_pytorchs_versions(name):
    """PyTorch initialises them in place (init.kaiming_uniform_, ones_, zero_): version 1 (out_proj.bias 2)."""
    assert module_versions(torch, name) == FIXTURE["cases"][f"module/{name}"]

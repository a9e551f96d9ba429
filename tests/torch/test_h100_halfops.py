"""The H100's half-precision reductions, norms, softmax, embedding and loss kernels (issue 34): emulated cuda rounds
their intermediates where PyTorch 2.11's CUDA path stores them, bit for bit on the recordings; the ideal device
rounds once, as before.

The recorded values come from tests/fixtures/h100/recorded.npz (a sample of shared/gpu/h100/ops.npz), replayed
through tests/torch/h100_cases.py; docs/h100_halfops.md says what each kernel does.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F
from minifp.engine import H100, IDEAL

sys.path.insert(0, str(Path(__file__).parent))
import h100_cases  # noqa: E402

HALF = ("float16", "bfloat16")


@pytest.fixture(scope="module")
def recorded():
    return h100_cases.load_fixture()["ops"]


def differing(recorded, case, mode):
    """{array: how many sampled values differ from the H100's} for one recorded op case in one mode."""
    mine = h100_cases.replay_op(case, mode)
    out = {}
    for key, (want, n, _) in recorded.items():
        c, m, array = key.split("/")
        if (c, m) == (case, mode):
            got = mine[array].reshape(-1)[:n][h100_cases.sample_index(n)]
            out[array] = int((got != want).sum())
    return out


@pytest.mark.parametrize("mode", ["float16", "bfloat16", "autocast_float16", "autocast_bfloat16", "float32"])
def test_cumsum_is_the_cuda_scan_bit_for_bit(recorded, mode):
    """cumsum over (64, 1024): the Sklansky scan in blocks of 128 with every add rounded (in float32 under
    autocast), its gradient the same scan of the gradient cast to the input's format: every recorded value."""
    assert differing(recorded, "cumsum", mode) == {"y": 0, "grad0": 0}


def test_cumsum_rounds_every_add_on_cuda_and_once_on_the_ideal_device():
    """2048 + 1 in float16 rounds back to 2048 (ties to even): the H100's scan of [2048, 1, 1, 1] adds pairs first
    (1 + 1 = 2 survives), the ideal device rounds each exact running sum (2049, 2050, 2051) once."""
    x = np.array([[2048, 1, 1, 1], [0, 0, 0, 0]], np.float32)
    cuda = torch.cumsum(torch.from_numpy(x).to("cuda").half(), dim=1)
    ideal = torch.cumsum(torch.from_numpy(x).half(), dim=1)
    assert cuda[0].tolist() == [2048, 2048, 2048, 2050]
    assert ideal[0].tolist() == [2048, 2048, 2050, 2052]


@pytest.mark.parametrize("mode", HALF + ("autocast_float16",))
def test_var_gradient_is_pytorchs_formula_step_by_step(recorded, mode):
    """(2 / dof * grad) * (x - x.mean()), each factor a half tensor: every recorded gradient value."""
    assert differing(recorded, "var_dim", mode) == {"y": 0, "grad0": 0}


def test_softmax_backward_rounds_grad_times_output_first(recorded):
    """The half softmax backward: grad * output rounded to the half type, then gy - output * sum(gy)."""
    assert differing(recorded, "softmax", "bfloat16") == {"y": 0, "grad0": 0}
    assert differing(recorded, "softmax", "float16")["grad0"] <= 1     # where the forward's expf differs


@pytest.mark.parametrize("mode", HALF)
def test_group_norm_keeps_its_statistics_in_the_input_format(recorded, mode):
    """Mean and rstd stored in the half type, y = x * (rstd * w) + (b - rstd * w * mean) as one fma, the backward
    from the stored statistics: y and the weight and bias gradients exactly, the input's gradient but for one
    value (the kernel's float32 sums)."""
    got = differing(recorded, "group_norm", mode)
    assert got["grad0"] <= 1 and dict(got, grad0=0) == {"y": 0, "grad0": 0, "grad1": 0, "grad2": 0}


@pytest.mark.parametrize("mode", HALF)
def test_layer_norm_weight_gradient_is_summed_by_the_kernel(recorded, mode):
    """The half layer norm's weight gradient: dy * xhat summed over the rows in float32, rounded once (the ideal
    device rounds each product into the half type first, as a broadcast gradient)."""
    assert differing(recorded, "layer_norm", mode)["grad1"] == 0


@pytest.mark.parametrize("mode", HALF + ("autocast_float16",))
def test_embedding_backward_adds_chunks_of_32_indices_in_the_weight_format(recorded, mode):
    """embedding_backward_feature_kernel: each chunk of 32 indices summed in float32 per row, then added into the
    half gradient (rows hit three or more times differ from one rounding)."""
    assert differing(recorded, "embedding", mode) == {"y": 0, "grad0": 0}


@pytest.mark.parametrize("mode", HALF + ("autocast_float16", "autocast_bfloat16"))
def test_bce_with_logits_follows_pytorchs_half_formulas(recorded, mode):
    """A half input with a float32 target: log_sigmoid(x) a half tensor in the forward; the backward
    sigmoid(x).sub_(t).mul_(grad).div_(n) in place in the half type. Under autocast (x cast to float32 first)
    one rounding."""
    assert differing(recorded, "bce_with_logits", mode) == {"y": 0, "grad0": 0}


def test_bce_backward_rounds_the_upstream_gradient_into_the_input_format():
    """x = 2, target 0, a loss gradient of 1/3: the H100's in-place half backward gives
    float16(float16(sigmoid(2)) * float16(1/3)) = 0.29345703125, the ideal device float16(sigmoid(2) / 3)."""
    grads = []
    for device in ("cuda", "cpu"):
        x = torch.full((1,), 2.0, dtype=torch.float16, device=device, requires_grad=True)
        loss = F.binary_cross_entropy_with_logits(x, torch.zeros(1, device=device), reduction="sum")
        (loss / 3).backward()
        grads.append(x.grad.item())
    assert grads == [0.29345703125, 0.293701171875]


def test_the_ideal_device_computes_each_op_exactly_and_the_h100_as_its_kernels():
    """Every half-kernel field: 'exact' on the ideal device, 'cuda' on the H100."""
    fields = ("scan", "softmax_backward", "group_norm", "layer_norm", "embedding_backward", "var_backward",
              "bce_backward")
    assert {getattr(IDEAL, f) for f in fields} == {"exact"} and {getattr(H100, f) for f in fields} == {"cuda"}
    assert H100.stages("softmax") and not IDEAL.stages("softmax") and not H100.stages("add")

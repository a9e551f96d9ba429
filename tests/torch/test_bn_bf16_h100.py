"""The H100's native batch-norm backward (issue 34): PyTorch's kernel rounds every summand and every partial sum a
warp shuffle passes into the input's format, so emulated cuda gives those sums, bit for bit as recorded; the ideal
device keeps the exact sums. docs/h100_batchnorm.md says what the kernel does; tools/fit_bn_bf16.py fits it."""
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F
from minifp import engine
from minifp.engine import H100, IDEAL

sys.path.insert(0, str(Path(__file__).parent))
import h100_cases  # noqa: E402


@pytest.fixture
def cuda_numerics():
    """Restores the cuda device's numerics (and cuDNN's switch) after the test."""
    before = engine.device_numerics("cuda")
    yield
    engine.set_device_numerics("cuda", before)


def _bias_grad(device, dy, dtype=torch.bfloat16, weight_dtype=torch.float32):
    """grad_bias of a training batch norm over a (1, 1, 8, 8) input in dtype, for the upstream gradient dy."""
    x = torch.from_numpy(np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 1, 8, 8)).to(device).to(dtype)
    w = torch.ones(1).to(device).to(weight_dtype).requires_grad_()
    b = torch.zeros(1).to(device).to(weight_dtype).requires_grad_()
    y = F.batch_norm(x, None, None, w, b, training=True)
    y.backward(torch.from_numpy(dy.reshape(1, 1, 8, 8)).to(device).to(dtype))
    return float(b.grad.float().cpu().numpy()[0])


def _dy(small):
    """1 at lane 8 and `small` at lane 24 of the first warp (one thread per element here)."""
    dy = np.zeros(64, np.float32)
    dy[8], dy[24] = 1.0, small
    return dy


def test_a_shuffled_partial_sum_rounds_to_bfloat16_on_cuda_only():
    """Lanes 8 and 24 of the first warp meet at the first shuffle (offset 16): 1 + 2**-9 stays float32 there, but
    crossing to lane 0 at offset 8 it becomes the bfloat16 1.0; the ideal device's sum keeps the 2**-9."""
    assert _bias_grad("cpu", _dy(2.0 ** -9)) == 1 + 2.0 ** -9
    assert _bias_grad("cuda", _dy(2.0 ** -9)) == 1.0


def test_a_lane_keeps_its_own_partial_sum_in_float32():
    """Lane 0 adds what it receives to its own float32 value: 2**-9 at lane 0 survives the sum."""
    dy = np.zeros(64, np.float32)
    dy[0], dy[16] = 2.0 ** -9, 1.0
    assert _bias_grad("cuda", dy) == 1 + 2.0 ** -9


def test_which_backward_runs_the_native_kernel(cuda_numerics):
    """bfloat16 always; float16 only where cuDNN would not take it (cuDNN off, or a weight that is not float32)."""
    assert H100.batch_norm == "native" and IDEAL.batch_norm == "exact"
    small, f16 = 2.0 ** -12, torch.float16
    assert _bias_grad("cuda", _dy(2.0 ** -9), weight_dtype=torch.bfloat16) == 1.0
    assert _bias_grad("cuda", _dy(small), f16) == 1 + small             # cuDNN's float32 sum
    assert _bias_grad("cuda", _dy(small), f16, weight_dtype=f16) == 1.0
    torch.backends.cudnn.enabled = False
    assert _bias_grad("cuda", _dy(small), f16) == 1.0
    assert _bias_grad("cuda", _dy(2.0 ** -9)) == 1.0


def test_cudnn_takes_float16_only_with_a_float32_weight_a_bias_and_3_dimensions():
    """PyTorch 2.11's _select_batch_norm_backend: BatchNorm1d's (N, C) input, or no bias, leaves float16 with a
    float32 weight to the native kernel too."""
    w, b = engine.tensor(np.ones(4, np.float32)), engine.tensor(np.zeros(4, np.float32))
    f16 = engine.FORMATS["float16"]
    assert not H100.native_batch_norm(f16, w, b, 4) and not H100.native_batch_norm(f16, w, b, 3)
    assert H100.native_batch_norm(f16, w, b, 2) and H100.native_batch_norm(f16, w, None, 4)
    assert not IDEAL.native_batch_norm(f16, w, b, 2)


def _replayed(mode):
    return h100_cases.replay_op("batch_norm_train", mode)


@pytest.mark.parametrize("mode", ["bfloat16", "float16", "autocast_bfloat16"])
def test_recorded_bias_and_input_gradients_replay_bit_for_bit(mode):
    """ops.npz's batch_norm_train on the H100: grad_bias (grad2) identical everywhere the native kernel ran, and the
    input's gradient in bfloat16 (its two sums are the kernel's)."""
    rec = h100_cases.load_fixture()["ops"]
    mine = _replayed(mode)
    bits, n, _ = rec[f"batch_norm_train/{mode}/grad2"]
    assert (mine["grad2"][h100_cases.sample_index(n)] == bits).all()
    if mode != "float16":
        bits, n, _ = rec[f"batch_norm_train/{mode}/grad0"]
        assert (mine["grad0"][h100_cases.sample_index(n)] == bits).all()


@pytest.mark.parametrize("mode", ["bfloat16", "float16"])
def test_recorded_half_weight_gradients_replay_bit_for_bit(mode):
    """Stored in the half type, the native kernel's grad_weight (its float32 invstd's last bit hidden) is identical."""
    bits, n, _ = h100_cases.load_fixture()["ops"][f"batch_norm_train/{mode}/grad1"]
    assert (_replayed(mode)["grad1"][h100_cases.sample_index(n)] == bits).all()


def test_the_ideal_device_keeps_the_exact_sums(cuda_numerics):
    """On the ideal device the same replay gives the correctly rounded exact sums, not the H100's."""
    engine.set_device_numerics("cuda", IDEAL)
    bits, n, _ = h100_cases.load_fixture()["ops"]["batch_norm_train/bfloat16/grad2"]
    assert (_replayed("bfloat16")["grad2"][h100_cases.sample_index(n)] != bits).any()

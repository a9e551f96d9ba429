"""Replay of a real H100's recordings (shared/gpu/h100: ops.npz, conv.npz, gemm.npz, pin.npz's convolutions)
through minifp.torch's emulated cuda: per family and setting, the share of values bit-identical to the H100 may only
rise.

The fixture (tests/fixtures/h100/recorded.npz) keeps an evenly strided sample of every recorded array, outputs only:
tests/torch/h100_cases.py rebuilds the inputs from the recorder's seeds. tools/h100_fidelity.py --ratchet prints the
table below from today's code; docs/h100_fidelity.md has the same shares per op over every recorded value.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import h100_cases  # noqa: E402

# (file, family, setting) -> percent of the sampled values identical to the H100, measured 2026-11-28 (issue 34).
# Raise an entry when a change makes emulated cuda closer to the H100; never lower one without saying why.
RATCHET = {
    ('conv', 'conv2d gradients', 'autocast_bfloat16'): 99.9,
    ('conv', 'conv2d gradients', 'autocast_float16'): 99.6,
    ('conv', 'conv2d gradients', 'f32_default'): 25.5,
    ('conv', 'conv2d gradients', 'f32_notf32'): 25.5,
    ('conv', 'conv2d with bias', 'autocast_bfloat16'): 100.0,
    ('conv', 'conv2d with bias', 'autocast_float16'): 99.9,
    ('conv', 'conv2d with bias', 'f32_default'): 18.9,
    ('conv', 'conv2d with bias', 'f32_notf32'): 33.6,
    ('gemm', 'gemm bfloat16', 'float32 output'): 7.0,
    ('gemm', 'gemm bfloat16', 'half output'): 99.9,
    ('gemm', 'gemm float16', 'float32 output'): 6.1,
    ('gemm', 'gemm float16', 'half output'): 99.4,
    ('gemm', 'gemm tf32', 'float32 output'): 6.4,
    ('gemm', 'gemm tf32', 'tf32 off'): 24.0,
    ('ops', 'attention', 'autocast_bfloat16'): 100.0,
    ('ops', 'attention', 'autocast_float16'): 99.7,
    ('ops', 'attention', 'bfloat16'): 100.0,
    ('ops', 'attention', 'float16'): 99.6,
    ('ops', 'attention', 'float32'): 4.0,
    ('ops', 'batch_norm', 'autocast_bfloat16'): 100.0,
    ('ops', 'batch_norm', 'autocast_float16'): 100.0,
    ('ops', 'batch_norm', 'bfloat16'): 100.0,
    ('ops', 'batch_norm', 'float16'): 100.0,
    ('ops', 'batch_norm', 'float32'): 41.8,
    ('ops', 'cross_entropy', 'autocast_bfloat16'): 100.0,
    ('ops', 'cross_entropy', 'autocast_float16'): 100.0,
    ('ops', 'cross_entropy', 'bfloat16'): 100.0,
    ('ops', 'cross_entropy', 'float16'): 100.0,
    ('ops', 'cross_entropy', 'float32'): 24.8,
    ('ops', 'elementwise', 'autocast_bfloat16'): 100.0,
    ('ops', 'elementwise', 'autocast_float16'): 99.9,
    ('ops', 'elementwise', 'bfloat16'): 100.0,
    ('ops', 'elementwise', 'float16'): 99.9,
    ('ops', 'elementwise', 'float32'): 62.5,
    ('ops', 'float32 outputs of attention', 'autocast_bfloat16'): 100.0,
    ('ops', 'float32 outputs of attention', 'autocast_float16'): 99.6,
    ('ops', 'float32 outputs of batch_norm', 'autocast_bfloat16'): 82.8,
    ('ops', 'float32 outputs of batch_norm', 'autocast_float16'): 48.4,
    ('ops', 'float32 outputs of cross_entropy', 'autocast_bfloat16'): 100.0,
    ('ops', 'float32 outputs of cross_entropy', 'autocast_float16'): 100.0,
    ('ops', 'float32 outputs of elementwise', 'autocast_bfloat16'): 51.6,
    ('ops', 'float32 outputs of elementwise', 'autocast_float16'): 51.3,
    ('ops', 'float32 outputs of layer/group norm', 'autocast_bfloat16'): 50.7,
    ('ops', 'float32 outputs of layer/group norm', 'autocast_float16'): 50.4,
    ('ops', 'float32 outputs of linear/bmm', 'autocast_bfloat16'): 99.9,
    ('ops', 'float32 outputs of linear/bmm', 'autocast_float16'): 99.9,
    ('ops', 'float32 outputs of losses', 'autocast_bfloat16'): 100.0,
    ('ops', 'float32 outputs of losses', 'autocast_float16'): 100.0,
    ('ops', 'float32 outputs of losses', 'bfloat16'): 100.0,
    ('ops', 'float32 outputs of losses', 'float16'): 100.0,
    ('ops', 'float32 outputs of reductions', 'autocast_bfloat16'): 97.9,
    ('ops', 'float32 outputs of reductions', 'autocast_float16'): 96.1,
    ('ops', 'float32 outputs of softmax', 'autocast_bfloat16'): 59.1,
    ('ops', 'float32 outputs of softmax', 'autocast_float16'): 69.0,
    ('ops', 'layer/group norm', 'autocast_bfloat16'): 100.0,
    ('ops', 'layer/group norm', 'autocast_float16'): 100.0,
    ('ops', 'layer/group norm', 'bfloat16'): 99.9,
    ('ops', 'layer/group norm', 'float16'): 99.9,
    ('ops', 'layer/group norm', 'float32'): 40.4,
    ('ops', 'linear/bmm', 'autocast_bfloat16'): 99.9,
    ('ops', 'linear/bmm', 'autocast_float16'): 99.8,
    ('ops', 'linear/bmm', 'bfloat16'): 99.9,
    ('ops', 'linear/bmm', 'float16'): 99.8,
    ('ops', 'linear/bmm', 'float32'): 46.7,
    ('ops', 'losses', 'autocast_bfloat16'): 100.0,
    ('ops', 'losses', 'autocast_float16'): 100.0,
    ('ops', 'losses', 'bfloat16'): 100.0,
    ('ops', 'losses', 'float16'): 100.0,
    ('ops', 'losses', 'float32'): 83.0,
    ('ops', 'pooling/embedding', 'autocast_bfloat16'): 100.0,
    ('ops', 'pooling/embedding', 'autocast_float16'): 100.0,
    ('ops', 'pooling/embedding', 'bfloat16'): 100.0,
    ('ops', 'pooling/embedding', 'float16'): 100.0,
    ('ops', 'pooling/embedding', 'float32'): 83.3,
    ('ops', 'reductions', 'autocast_bfloat16'): 100.0,
    ('ops', 'reductions', 'autocast_float16'): 100.0,
    ('ops', 'reductions', 'bfloat16'): 100.0,
    ('ops', 'reductions', 'float16'): 100.0,
    ('ops', 'reductions', 'float32'): 86.1,
    ('ops', 'softmax', 'autocast_bfloat16'): 100.0,
    ('ops', 'softmax', 'autocast_float16'): 100.0,
    ('ops', 'softmax', 'bfloat16'): 100.0,
    ('ops', 'softmax', 'float16'): 99.9,
    ('ops', 'softmax', 'float32'): 62.6,
    ('pin', 'conv2d gradients', 'autocast_bfloat16'): 99.9,
    ('pin', 'conv2d gradients', 'autocast_float16'): 99.6,
    ('pin', 'conv2d gradients', 'f32_notf32'): 33.8,
    ('pin', 'conv2d gradients (cuDNN off)', 'autocast_bfloat16'): 64.4,
    ('pin', 'conv2d gradients (cuDNN off)', 'autocast_float16'): 66.1,
    ('pin', 'conv2d gradients (cuDNN off)', 'f32_notf32'): 33.7,
    ('pin', 'conv2d with bias', 'autocast_bfloat16'): 100.0,
    ('pin', 'conv2d with bias', 'autocast_float16'): 99.9,
    ('pin', 'conv2d with bias', 'f32_notf32'): 43.2,
    ('pin', 'conv2d with bias (cuDNN off)', 'autocast_bfloat16'): 99.9,
    ('pin', 'conv2d with bias (cuDNN off)', 'autocast_float16'): 99.9,
    ('pin', 'conv2d with bias (cuDNN off)', 'f32_notf32'): 45.2,
    ('pin', 'conv2d without bias', 'autocast_bfloat16'): 100.0,
    ('pin', 'conv2d without bias', 'autocast_float16'): 99.9,
    ('pin', 'conv2d without bias', 'f32_notf32'): 41.3,
    ('pin', 'conv2d without bias (cuDNN off)', 'autocast_bfloat16'): 99.9,
    ('pin', 'conv2d without bias (cuDNN off)', 'autocast_float16'): 99.8,
    ('pin', 'conv2d without bias (cuDNN off)', 'f32_notf32'): 42.6,
}

# Float32 sums (BLAS's and NumPy's) are added in an order that depends on the host (the BLAS, its threads, the CPU):
# which float32 values happen to equal the H100's moves with it (from 46.7% to 54.4% between 1 and 2 OpenBLAS
# threads for float32 linear/bmm), and half outputs fed by BLAS move by a tenth of a point. Those rows keep a margin
# until emulated cuda sums in the H100's own order (issue 34, point 2); every other row is held exactly.
FLOAT32_SETTINGS = ("float32", "f32_default", "f32_notf32", "float32 output", "tf32 off")
BLAS_FAMILIES = ("gemm", "linear/bmm", "attention", "conv2d")


def margin(fam, setting):
    """Points below the measured share a host may land on, by how much of the row depends on the host's sums."""
    if setting in FLOAT32_SETTINGS or fam.startswith("float32 outputs"):
        return 10.0
    return 0.5 if fam.startswith(BLAS_FAMILIES) else 0.0


@pytest.fixture(scope="module")
def recorded():
    return h100_cases.load_fixture()


@pytest.mark.parametrize("file", ["ops", "conv", "gemm", "pin"])
def test_identical_share_per_family_holds(recorded, file):
    """Every family row of the file replays at least as close to the H100 as the ratchet says."""
    mine = {file: h100_cases.replay(file, list(recorded[file]))}
    fams, _ = h100_cases.shares({file: recorded[file]}, mine)
    assert {k for k in RATCHET if k[0] == file} == set(fams), "a family row without a ratchet entry, or gone"
    low = {k: (round(100 * same / total, 2), RATCHET[k]) for k, (same, total) in fams.items()
           if 100 * same / total < RATCHET[k] - margin(*k[1:]) - 1e-9}
    assert not low, f"identical shares fell below the ratchet: {low}"


def test_fixture_keeps_outputs_of_every_recorded_array(recorded):
    """The fixture holds every array of ops, conv and gemm.npz and pin.npz's convolutions (sampled), with its
    recorded length and format."""
    counts = {file: len(entries) for file, entries in recorded.items()}
    assert counts == {"ops": 365, "conv": 120, "gemm": 234, "pin": 168}
    for entries in recorded.values():
        for bits, n, dtype in entries.values():
            assert bits.size == h100_cases.sample_index(n).size and dtype in ("float16", "bfloat16", "float32")
            assert bits.dtype.itemsize == (4 if dtype == "float32" else 2)


def test_replay_is_exact_where_the_h100_agrees_everywhere(recorded):
    """silu, sigmoid and tanh with half outputs, which the H100 computes as minifp does, replay bit for bit."""
    keys = [k for k in recorded["ops"] if k.split("/")[0] in ("silu", "sigmoid", "tanh") and "float32" not in k]
    mine = h100_cases.replay("ops", keys)
    for k in keys:
        want, n, _ = recorded["ops"][k]
        assert (mine[k].reshape(-1)[:n][h100_cases.sample_index(n)] == want).all(), k


def test_conv_bias_added_as_cudnn_does_matches_the_h100(recorded):
    """The target of emulated cuda's conv bias (issue 34): composed with the face, cuDNN's two roundings where PyTorch
    runs cuDNN and the native kernel's one where it does not give 99.99% of conv.npz's autocast outputs (the engine's
    fused bias gave 75%; emulated cuda's H100 device now adds it so itself); what is left is the summation order."""
    same = total = 0
    for key, (want, n, _) in recorded["conv"].items():
        case, mode, array = h100_cases.split("conv", key)
        if array == "y" and mode.startswith("autocast"):
            got = h100_cases.conv_bias_as_h100(case, mode)[:n][h100_cases.sample_index(n)]
            same, total = same + int((got == want).sum()), total + want.size
    assert same >= total - 2, (same, total)


def test_cudnn_takes_dense_convolutions_and_only_float16_depthwise_ones():
    """PyTorch's choice between cuDNN and its native depthwise kernel, as the recordings show it."""
    assert h100_cases.cudnn_takes("8_16_16_16_32_3_1_1_1", "bfloat16")
    assert h100_cases.cudnn_takes("8_32_16_16_32_3_1_1_32", "float16")
    assert not h100_cases.cudnn_takes("8_32_16_16_32_3_1_1_32", "bfloat16")
    assert not h100_cases.cudnn_takes("32_96_16_16_96_3_2_1_96", "float16")     # stride 2, fewer than 256 channels

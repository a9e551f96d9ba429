"""Whole training steps on "cuda" against an H200's (tests/fixtures/pytorch/cuda_training.json, recorded by
tools/record_cuda_training.py): an MLP and a small CNN, five steps each, from the same NumPy-drawn weights and data.

Under bfloat16 autocast the MLP's run (AdamW, PyTorch's foreach code on CUDA) is the GPU's bit for bit: logits,
loss and gradients at the first step, every loss, the last weights. The float16 runs are in every loss, but a
few values are not yet: one of the MLP's 320 first logits (a cancelling sum with its bias) and a few of its
gradients; the CNN's first layers' gradients (conv1's bias, the batch norm's weight and bias). In float32 the GEMMs are cuBLAS's SGEMM, whose order of sums
minifp does not model: those runs agree to float32's last bits only."""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import record_cuda_training as recorder  # noqa: E402

FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "pytorch" / "cuda_training.json").read_text())["runs"]


def _values(h):
    return np.frombuffer(bytes.fromhex(h), "<u4")


@pytest.fixture(scope="module")
def runs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (no GPU: "cuda" is emulated, and says so)
        return {name: recorder.run(torch, name) for name in FIXTURE}


def test_bfloat16_mlp_steps_are_the_gpus_bit_for_bit(runs):
    want, got = FIXTURE["mlp_bf16_amp_adamw"], runs["mlp_bf16_amp_adamw"]
    assert got["logits"] == want["logits"] and got["losses"] == want["losses"]
    assert got["grads"] == want["grads"] and got["params"] == want["params"]


def test_float16_mlp_and_cnn_losses_are_the_gpus(runs):
    """The float16 runs' every loss, and all but one of the MLP's logits (a sum that cancels to 2% of its terms:
    one float16 ulp off), the CNN's logits and its last three gradients, bit for bit."""
    mlp, cnn = FIXTURE["mlp_f16_amp_adam"], FIXTURE["cnn_f16_amp_sgd"]
    assert runs["mlp_f16_amp_adam"]["losses"] == mlp["losses"] and runs["cnn_f16_amp_sgd"]["losses"] == cnn["losses"]
    assert np.count_nonzero(_values(runs["mlp_f16_amp_adam"]["logits"]) != _values(mlp["logits"])) <= 1
    got = runs["cnn_f16_amp_sgd"]
    assert got["logits"] == cnn["logits"] and got["grads"][5:] == cnn["grads"][5:]


@pytest.mark.parametrize("name", ["mlp_f32_sgd", "cnn_f32_sgd"])
def test_float32_steps_agree_to_the_last_bits(runs, name):
    want, got = FIXTURE[name], runs[name]
    f32 = lambda h: _values(h).view(np.float32)
    np.testing.assert_allclose(f32("".join(got["losses"])), f32("".join(want["losses"])), rtol=1e-6)
    for a, b in zip(got["params"], want["params"]):
        np.testing.assert_allclose(f32(a), f32(b), rtol=1e-4, atol=1e-6)

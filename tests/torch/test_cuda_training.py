"""Whole training steps on "cuda" against an H200's (tests/fixtures/pytorch/cuda_training.json, recorded by
tools/record_cuda_training.py): an MLP and a small CNN, five steps each, from the same NumPy-drawn weights and data.

With cuBLAS's GEMMs (engine.H100.with_gemm(engine.CUBLAS): the tensor cores' chained sums, minifp's opt-in) the
MLP's float16 and bfloat16 autocast runs (Adam and AdamW, PyTorch's foreach code on CUDA) are the GPU's bit for
bit: logits, loss and gradients at the first step, every loss, the last weights. The CNN's float16 run is in its
logits, its losses and its last three gradients; its first layers' gradients (conv1's bias, the batch norm's
weight and bias, a few of conv1's and conv2's weights) are not yet the GPU's sums (docs/h100_batchnorm.md). In
float32 the GEMMs are cuBLAS's SGEMM, whose order of sums minifp does not model: those runs agree to float32's
last bits only."""
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
from minifp.engine import CUBLAS, H100, device_numerics, set_device_numerics

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import record_cuda_training as recorder  # noqa: E402

FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "pytorch" / "cuda_training.json").read_text())["runs"]


def _values(h):
    return np.frombuffer(bytes.fromhex(h), "<u4")


@pytest.fixture(scope="module")
def runs():
    before = device_numerics("cuda")
    try:
        set_device_numerics("cuda", H100.with_gemm(CUBLAS))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # (no GPU: "cuda" is emulated, and says so)
            return {name: recorder.run(torch, name) for name in FIXTURE}
    finally:
        set_device_numerics("cuda", before)


@pytest.mark.parametrize("name", ["mlp_f16_amp_adam", "mlp_bf16_amp_adamw"])
def test_mixed_precision_mlp_steps_are_the_gpus_bit_for_bit(runs, name):
    want, got = FIXTURE[name], runs[name]
    assert got["logits"] == want["logits"] and got["losses"] == want["losses"]
    assert got["grads"] == want["grads"] and got["params"] == want["params"]


def test_mixed_precision_cnn_forward_losses_and_last_gradients_are_the_gpus(runs):
    want, got = FIXTURE["cnn_f16_amp_sgd"], runs["cnn_f16_amp_sgd"]
    assert got["logits"] == want["logits"] and got["losses"] == want["losses"]
    assert got["grads"][5:] == want["grads"][5:]      # conv2's bias and the linear layer's


@pytest.mark.parametrize("name", ["mlp_f32_sgd", "cnn_f32_sgd"])
def test_float32_steps_agree_to_the_last_bits(runs, name):
    want, got = FIXTURE[name], runs[name]
    f32 = lambda h: _values(h).view(np.float32)
    np.testing.assert_allclose(f32("".join(got["losses"])), f32("".join(want["losses"])), rtol=1e-6)
    for a, b in zip(got["params"], want["params"]):
        np.testing.assert_allclose(f32(a), f32(b), rtol=1e-4, atol=1e-6)

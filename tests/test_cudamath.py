"""CUDA's powf, which fused Adam's bias corrections use: every step of tests/fixtures/pytorch/cuda_powf.json
(recorded on an H200 by tools/record_cuda_powf.py: the steps where powf is an ulp off the correctly rounded
power, and every 997th), bit for bit."""
import json
from pathlib import Path

import numpy as np
import pytest

from minifp._cudamath import powf

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "pytorch" / "cuda_powf.json").read_text())["powf"]


@pytest.mark.parametrize("beta", sorted(FIXTURE))
def test_powf_is_the_gpus(beta):
    b = np.float32(float(beta))
    steps = FIXTURE[beta]
    got = {k: f"{int(np.float32(powf(b, np.float32(int(k)))).view(np.uint32)):08x}" for k in steps}
    bad = [k for k in steps if got[k] != steps[k]]
    assert not bad, f"{len(bad)} of {len(steps)} differ, first at step {bad[0]}: {steps[bad[0]]} (GPU), {got[bad[0]]}"
    off = sum(int(v, 16) != int(np.float32(np.float64(b) ** int(k)).view(np.uint32)) for k, v in steps.items())
    assert off > len(steps) // 2      # (most kept steps are where powf is not the correctly rounded power)


def test_powf_edges():
    assert powf(1.0, 12.5) == 1 and powf(0.3, 0.0) == 1
    assert powf(0.5, 3.0) == np.float32(0.125) and powf(2.0, 10.0) == 1024
    assert powf(1e-30, 10.0) == 0 and powf(1e30, 10.0) == np.inf

"""minifp._flash against cuDNN's flash attention on an H100 (torch 2.11, cuDNN 9.19; ../shared/gpu/h100/sweep.npz).

The fixture holds the first 2048 recorded values of the output and the three gradients per case (raw bits);
the inputs are regenerated from their seeds exactly as record_h100_sweep.py section 2 draws them.
"""
import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from minifp._flash import flash_backward, flash_forward

FIXTURE = Path(__file__).parent / "fixtures" / "h100" / "sdpa.npz"
LOW = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
VALUES = 2048
# Measured share of identical values (y, gq, gk, gv) per case, minus a margin of 0.002 for libm differences of
# NumPy's float32 exp2 between machines; docs/h100_sdpa.md has the full sweep.
FLOORS = {
    "float16/64/64/0": (0.998, 0.998, 0.998, 0.998),          # measured 1.0 1.0 1.0 1.0
    "float16/64/128/1": (0.998, 0.998, 0.9926, 0.998),        # measured 1.0 1.0 0.9946 1.0
    "float16/128/32/0": (0.9975, 0.9970, 0.9965, 0.9926),     # measured 0.9995 0.9990 0.9985 0.9946
    "float16/256/64/1": (0.9975, 0.9892, 0.9697, 0.998),      # measured 0.9995 0.9912 0.9717 1.0
    "bfloat16/64/64/0": (0.998, 0.9838, 0.998, 0.998),        # measured 1.0 0.9858 1.0 1.0
    "bfloat16/64/128/1": (0.998, 0.998, 0.998, 0.998),        # measured 1.0 1.0 1.0 1.0
    "bfloat16/128/32/0": (0.9975, 0.9960, 0.9877, 0.9965),    # measured 0.9995 0.9980 0.9897 0.9985
    "bfloat16/256/64/1": (0.998, 0.998, 0.9907, 0.998),       # measured 1.0 1.0 0.9927 1.0
}


def inputs(low, L, d):
    """q, k, v and the upstream gradient of a sweep case, in the half type."""
    r = np.random.default_rng(zlib.crc32(f"sdpa_sweep/{L}/{d}".encode()))
    shape = (2, 4, L, d)
    q, k, v = (r.standard_normal(shape).astype(np.float32).astype(LOW[low]) for _ in range(3))
    g = np.random.default_rng(zlib.crc32(f"sdpa_sweep/{L}/{d}/g".encode())).standard_normal(shape)
    return q, k, v, g.astype(np.float32).astype(LOW[low])


@pytest.mark.parametrize("case", sorted(FLOORS))
def test_flash_matches_h100(case):
    low, L, d, causal = case.split("/")
    L, d, causal = int(L), int(d), bool(int(causal))
    heads = -(-VALUES // (L * d))               # the heads that hold the recorded values
    q, k, v, g = (x.reshape(1, 8, L, d)[:, :heads] for x in inputs(low, L, d))
    o, mc, l = flash_forward(q, k, v, causal)
    grads = flash_backward(q, k, v, o, g, mc, l, causal)
    rec = np.load(FIXTURE)
    got = [float((np.ascontiguousarray(x).view(np.uint16).reshape(-1)[:VALUES] == rec[f"sdpa/{case}/{key}"]).mean())
           for x, key in zip((o, *grads), ("y", "gq", "gk", "gv"))]
    assert all(np.array(got) >= np.array(FLOORS[case])), (case, got)
    assert got[0] >= 0.997                       # the forward: at most 3 values in 1000 differ


def test_flash_shapes_and_dtypes():
    q, k, v, g = (x[:1, :2, :16] for x in inputs("bfloat16", 16, 32))
    o, mc, l = flash_forward(q, k, v, block=8)
    assert o.dtype == q.dtype and o.shape == q.shape and mc.shape == l.shape == (1, 2, 16, 1)
    dq, dk, dv = flash_backward(q, k, v, o, g, mc, l)
    assert all(x.dtype == q.dtype and x.shape == q.shape for x in (dq, dk, dv))
    # the output is a convex combination of v's rows (up to rounding)
    vf = v.astype(np.float32)
    assert np.all(o.astype(np.float32) <= vf.max(-2, keepdims=True) + 1e-2)

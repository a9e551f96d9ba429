"""TF32 in cuDNN's float32 convolutions on the emulated H100: the fitted shape rule against the recorded table
(tests/fixtures/h100/tf32conv.json, from tools/fit_tf32conv.py), and the emulation following it per pass."""
import json
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F
from minifp._devices import H100, IDEAL

TABLE = json.loads((Path(__file__).parent / "fixtures" / "h100" / "tf32conv.json").read_text())
PASSES = TABLE["passes"]


def _shape(key):
    c, o, hw, k, s, g = key.split("_")
    c, o, hw, k, s = int(c), int(o), int(hw), int(k), int(s)
    groups = c if g == "dw" else 1
    return (8, c, hw, hw), (o, c // groups, k, k), {"stride": s, "padding": k // 2, "groups": groups}


def _misses():
    out = {p: [] for p in PASSES}
    for key, row in TABLE["shapes"].items():
        for p, recorded in zip(PASSES, row):
            if H100.uses_tf32(p, *_shape(key)) != bool(recorded):
                out[p].append(key)
    return out


def test_the_rule_agrees_with_the_recorded_table_as_fitted():
    misses = _misses()
    assert len(TABLE["shapes"]) == 240
    assert {p: 240 - len(m) for p, m in misses.items()} == {"fprop": 239, "dgrad": 233, "wgrad": 221}
    assert misses["fprop"] == ["256_16_8_1_1_1"]       # cuBLAS's small-N kernel in float32, among TF32 neighbours


def test_depthwise_never_and_the_ideal_device_always():
    depthwise = [k for k in TABLE["shapes"] if k.endswith("_dw")]
    assert len(depthwise) == 30 and all(TABLE["shapes"][k] == [0, 0, 0] for k in depthwise)
    assert not any(H100.uses_tf32(p, *_shape(k)) for k in depthwise for p in PASSES)
    assert all(IDEAL.uses_tf32(p, *_shape(k)) for k in TABLE["shapes"] for p in PASSES)
    assert not H100.with_cudnn(False).uses_tf32("fprop", *_shape("256_256_32_3_1_1"))


def _tf32(a):
    """float32 values rounded to tf32 (nearest even)."""
    b = a.view(np.uint32).astype(np.uint64)
    return ((b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)).astype(np.uint32).view(np.float32)


def _conv(x, w, device, padding):
    """y and the gradients of x and w for y.sum(), on device."""
    tx, tw = (torch.tensor(a, device=device, requires_grad=True) for a in (x, w))
    y = F.conv2d(tx, tw, padding=padding)
    y.sum().backward()
    return [t.detach().cpu().numpy() for t in (y, tx.grad, tw.grad)]


@pytest.mark.parametrize("c, o, hw, k, passes", [
    (64, 64, 8, 3, (True, False, False)),      # recorded: 64_64_8_3_1_1 fprop only
    (64, 64, 32, 1, (True, True, True)),       # 64_64_32_1_1_1: all three
    (16, 16, 8, 3, (False, False, False)),     # 16_16_8_3_1_1: none
])
def test_emulated_cuda_rounds_to_tf32_exactly_where_the_rule_says(c, o, hw, k, passes):
    rng = np.random.default_rng(34)
    x = rng.standard_normal((2, c, hw, hw)).astype(np.float32)
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)
    assert torch.backends.cudnn.allow_tf32                  # PyTorch's default
    assert tuple(H100.uses_tf32(p, x.shape, w.shape, {"padding": k // 2}) for p in PASSES) == passes
    got = _conv(x, w, "cuda", k // 2)
    full = _conv(x, w, "cpu", k // 2)                       # the ideal device: no TF32
    # y.sum()'s gradient is ones (exact in tf32): a TF32 dgrad reads tf32(w), a TF32 wgrad tf32(x)
    rounded = [_conv(_tf32(x), _tf32(w), "cpu", k // 2)[0], _conv(x, _tf32(w), "cpu", k // 2)[1],
               _conv(_tf32(x), w, "cpu", k // 2)[2]]
    for i, tf32 in enumerate(passes):
        assert np.array_equal(got[i], (rounded if tf32 else full)[i])
        assert not np.array_equal(rounded[i], full[i])     # the two differ: the test can tell them apart

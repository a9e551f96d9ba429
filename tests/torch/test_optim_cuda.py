"""PyTorch's optimizers on "cuda" as an H200 runs them (tests/fixtures/pytorch/optim_cuda.json, recorded by
tools/record_torch_half_optim.py --device cuda): each case in float16, bfloat16 and float32, in PyTorch's three
implementations there (foreach, its default; the single-tensor code, foreach=False; the fused kernels,
fused=True), the parameters' bits after every step and the state's at the end. NaNs are compared as NaNs (the GPU
writes every NaN as 0x7fff / 0x7fffffff)."""
import builtins
import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import record_torch_half_optim as recorder  # noqa: E402

FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "pytorch" / "optim_cuda.json").read_text())["cases"]
CASES = [(name, impl, dtype) for name, case in FIXTURE.items() for impl in recorder.IMPLEMENTATIONS if impl in case
         for dtype in case[impl]]
INF = {"float32": 0x7F800000, "float16": 0x7C00, "bfloat16": 0x7F80}


def _codes(h, dtype):
    """The codes in hex h, every NaN as one code."""
    wide = dtype == "float32"
    codes = np.frombuffer(bytes.fromhex(h), "<u4" if wide else "<u2").copy()
    codes[(codes & (0x7FFFFFFF if wide else 0x7FFF)) > INF[dtype]] = INF[dtype] + 1
    return codes


def _state(run, dtype):
    return [{k: (d, _codes(v, d).tolist() if isinstance(v, str) else v) for k, (d, v) in st.items()}
            for st in run["state"]]


@pytest.mark.parametrize("name,impl,dtype", CASES, ids=["-".join(c) for c in CASES])
def test_steps_and_state_are_the_gpus(name, impl, dtype):
    want = FIXTURE[name][impl][dtype]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (no GPU: "cuda" is emulated, and says so)
        if "error" in want:
            kind, message = want["error"].split(": ", 1)
            with pytest.raises(getattr(builtins, kind), match=re.escape(message)):
                recorder.run(torch, name, dtype, "cuda", **recorder.IMPLEMENTATIONS[impl])
            return
        got = recorder.run(torch, name, dtype, "cuda", **recorder.IMPLEMENTATIONS[impl])
    for step, (ws, gs) in enumerate(zip(want["params"], got["params"]), 1):
        for i, (w, g) in enumerate(zip(ws, gs)):
            a, b = _codes(w, dtype), _codes(g, dtype)
            bad = np.flatnonzero(a != b)
            assert not bad.size, (f"step {step}, parameter {i}: {bad.size} of {a.size} differ, first at {bad[0]}: "
                                  f"{a[bad[0]]:#x} (PyTorch) against {b[bad[0]]:#x}")
    assert _state(got, dtype) == _state(want, dtype)

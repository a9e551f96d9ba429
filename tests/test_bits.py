"""Bits unchanged: short runs of every benchmark training step hash to what they did before the engine's redesign.

tests/bits_runs.py runs them in a fresh process, with OpenBLAS and NumPy pinned to their AVX2 kernels (a float32
matrix product's low bits, and some of NumPy's SIMD functions', depend on the CPU's kernels; every x86-64 CPU
with AVX2 then computes the same bits), with the speed module on and off.
"""
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PINNED = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1",
          "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the recorded bits pin OpenBLAS's and NumPy's x86 AVX2 kernels")
@pytest.mark.endtoend      # (whole training runs: without the JIT, over a minute of the plain path's kernels as Python)
@pytest.mark.parametrize("speed", ["1", "0"])
def test_training_bits_match_the_recording(speed):
    if speed == "1" and os.environ.get("NUMBA_DISABLE_JIT") == "1":
        pytest.skip("without the JIT the speed module stays off: the speed=0 case runs the same path")
    env = {**os.environ, **PINNED, "MINIFP_SPEED": speed}
    out = subprocess.run([sys.executable, str(HERE / "bits_runs.py")], env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    want = json.loads((HERE / "fixtures" / "bits.json").read_text())
    assert got.keys() == want.keys()
    changed = [name for name in want if got[name] != want[name]]
    assert not changed, f"these runs' bits changed: {changed}"

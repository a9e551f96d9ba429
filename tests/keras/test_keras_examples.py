"""examples/keras's Keras 3 and tf.keras scripts run unchanged on minifp (`python -m minifp.keras script.py`,
`python -m minifp.tf script.py`); their losses equal real Keras 3.15's and tf-keras 2.21's (tests/fixtures/keras/
examples.json, recorded by tools/record_keras_examples.py with the same data, noise and weights) within 1e-5
relative in float32, and within 3e-3 under mixed_float16, where the frameworks' CPU float16 kernels round otherwise
than the H100 minifp emulates. The Transformer classifier is recorded on Keras's PyTorch backend (see the
recorder: the TensorFlow backend's Adam squares an Embedding gradient's slices before summing duplicate rows)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.endtoend      # whole scripts: CI's JIT-off pass leaves them out

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "tests/fixtures/keras/examples.json").read_text())
TOLERANCE = {"float32": 1e-5, "mixed_float16": 3e-3}


def test_the_examples_import_the_framework_and_not_minifp():
    for name, run in RECORDED["runs"].items():
        source = (ROOT / "examples/keras" / f"{name}.py").read_text()
        framework = "import keras" if run["door"] == "minifp.keras" else "import tensorflow as tf"
        assert framework in source and "minifp" not in source.split('"""', 2)[2], name


@pytest.mark.parametrize("policy", sorted(TOLERANCE))
@pytest.mark.parametrize("name", sorted(RECORDED["runs"]))
def test_losses_equal_the_real_frameworks(name, policy, tmp_path):
    run = RECORDED["runs"][name]
    done = subprocess.run([sys.executable, "-W", "ignore", "-m", run["door"],
                           str(ROOT / "examples/keras" / f"{name}.py"), *run["args"], f"--policy={policy}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = [float(x) for x in re.findall(run["pattern"], done.stdout, re.M)]
    assert got == pytest.approx(run["losses"][policy], rel=TOLERANCE[policy])

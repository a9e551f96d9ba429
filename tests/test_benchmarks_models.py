"""benchmarks/models.py runs minifp alone (no PyTorch in the test environment): its rows, ratios and summary."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "models.py"), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch installed: it would run beside")
def test_quick_runs_minifp_alone_on_one_model():
    done = run("--quick", "--models", "digits_mlp")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "1 thread:" in out and "PyTorch not installed" in out and "torch f32" not in out
    rows = re.findall(r"minifp (f32|f16|bf16) +1 +([\d.]+) +([\d.]+) +([\d.]+)", out)
    assert [p for p, *_ in rows] == ["f32", "f16", "bf16"]
    assert all(0 < float(lo) <= float(med) <= float(hi) for _, lo, med, hi in rows)
    assert re.search(r"f16/f32 +[\d.]+x \([\d.]+x\)", out) and re.search(r"bf16/f32 +[\d.]+x \([\d.]+x\)", out)
    assert re.search(r"^digits_mlp +- \[1\.05\] +[\d.]+ \[1\.15\] +[\d.]+ \[1\.1\]$", out, re.M)


def test_an_unknown_model_is_refused_before_anything_runs(capsys):
    spec = importlib.util.spec_from_file_location("benchmarks_models", ROOT / "benchmarks" / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    with pytest.raises(SystemExit) as e:
        models.main(["--models", "digits_mlp,vgg"])
    assert e.value.code == 2 and "unknown vgg" in capsys.readouterr().err

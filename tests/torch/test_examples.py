"""examples/pytorch: training scripts written for PyTorch run unchanged on minifp (`python -m minifp.torch
script.py`); in float32 their losses equal PyTorch 2.13's within 1e-5 relative (tests/fixtures/pytorch/
examples.json, recorded by tools/record_examples.py with the same weights and data), and their mixed-precision,
checkpoint and resume paths run."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.endtoend      # whole scripts: CI's JIT-off pass leaves them out

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "tests/fixtures/pytorch/examples.json").read_text())
FOLDER = ROOT / "tests/fixtures/pytorch/imagefolder"


def run(name, *args, cwd):
    """The example's output under minifp (it fails the test if the script fails)."""
    done = subprocess.run([sys.executable, "-W", "ignore", "-m", "minifp.torch",
                           str(ROOT / "examples/pytorch" / f"{name}.py"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_examples_import_torch_and_not_minifp():
    for script in (ROOT / "examples/pytorch").glob("*.py"):
        source = script.read_text()
        if script.stem in RECORDED["runs"]:
            assert "import torch" in source and "minifp" not in source.split('"""', 2)[2], script.name


@pytest.mark.parametrize("name", sorted(RECORDED["runs"]))
def test_float32_losses_equal_pytorchs(name, tmp_path):
    pytest.importorskip("PIL") if name == "imagenet_style" else None
    run_ = RECORDED["runs"][name]
    args = [a.format(imagefolder=FOLDER) for a in run_["args"]]
    got = [float(m.group(1)) for m in re.finditer(run_["pattern"], run(name, *args, cwd=tmp_path), re.M)]
    assert len(got) == len(run_["losses"])
    assert got == pytest.approx(run_["losses"], rel=1e-5)


def test_gpt_trains_under_autocast_and_resumes_from_its_checkpoint(tmp_path):
    common = ["--max_iters=4", "--eval_interval=2", "--eval_iters=1", "--batch_size=4"]
    first = run("gpt_train", *common, "--dtype=float16", cwd=tmp_path)
    assert "step 2: train loss" in first and (tmp_path / "out-gpt/ckpt.pt").exists()
    resumed = run("gpt_train", "--init_from=resume", "--max_iters=6", "--eval_interval=2", "--eval_iters=1",
                  "--batch_size=4", "--dtype=bfloat16", cwd=tmp_path)
    iters = [int(i) for i in re.findall(r"^iter (\d+):", resumed, re.M)]
    assert iters[0] == 4 and iters[-1] == 6 and "sample:" in resumed


def test_amp_recipe_times_both_loops_and_resumes_the_scaler(tmp_path):
    out = run("amp_recipe", "--epochs=1", "--num_batches=3", cwd=tmp_path)
    assert out.count("Max memory used by tensors = ") == 2
    peak = int(re.search(r"Max memory used by tensors = (\d+)", out).group(1))
    assert peak >= 3 * 256 * 256 * 4            # at least the three weight matrices
    assert re.search(r"resumed: scale 65536.0", out) and "output dtype torch.float16" in out


def test_cifar_and_imagenet_trainers_save_and_resume(tmp_path):
    run("cifar_resnet", "--epochs=1", "--train-size=16", "--width=4", cwd=tmp_path)
    out = run("cifar_resnet", "--epochs=1", "--train-size=16", "--width=4", "--resume", cwd=tmp_path)
    assert "Resuming from checkpoint" in out and "Epoch: 1" in out
    out = run("imagenet_style", "--dummy", "--image-size=32", "-b", "16", "-a", "mobilenet_v2", cwd=tmp_path)
    acc1 = float(re.search(r" \*   Acc@1 ([0-9.]+) Acc@5", out).group(1))
    assert (tmp_path / "checkpoint.pth.tar").exists()
    assert (tmp_path / "model_best.pth.tar").exists() == (acc1 > 0)     # is_best = acc1 > best_acc1 (0 at first)
    out = run("imagenet_style", "--dummy", "--image-size=32", "-b", "16", "-a", "mobilenet_v2", "--resume",
              "checkpoint.pth.tar", "--evaluate", cwd=tmp_path)
    assert "loading checkpoint" in out and " *   Acc@1" in out

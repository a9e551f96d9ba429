"""The PyTorch-style custom loop trains the digits MLP under float32, cuda float16 with GradScaler, cuda
bfloat16 and cpu bfloat16; the two tutorials in examples/pytorch run with only their imports changed."""
import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import minifp.torch as torch
from minifp.datasets import load_digits

pytestmark = pytest.mark.filterwarnings("ignore:minifp. no GPU here")
EXAMPLES = pathlib.Path(__file__).parent.parent.parent / "examples" / "pytorch"


def train_digits(device, dtype, scaled, epochs=4):
    """The usual PyTorch loop; returns (test accuracy, steps the scaler skipped)."""
    torch.manual_seed(0)
    (x, y), (xt, yt) = load_digits()
    x, xt = x.reshape(len(x), -1), xt.reshape(len(xt), -1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device, enabled=scaled)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                         batch_size=32, shuffle=True)
    skipped = 0
    for _ in range(epochs):
        for data, label in loader:
            data, label = data.to(device), label.to(device)
            optimizer.zero_grad()
            with torch.autocast(device_type=device, dtype=dtype, enabled=dtype is not None):
                loss = loss_fn(model(data), label)
            scaler.scale(loss).backward()
            before = scaler.get_scale()
            scaler.step(optimizer)
            scaler.update()
            skipped += scaler.get_scale() < before
    with torch.no_grad():
        predicted = model(torch.tensor(xt).to(device)).argmax(dim=1).numpy()
    return float((predicted == yt).mean()), skipped


@pytest.mark.parametrize("device, dtype, scaled", [("cpu", None, False), ("cuda", torch.float16, True),
                                                   ("cuda", torch.bfloat16, False), ("cpu", torch.bfloat16, False)],
                         ids=["float32", "cuda-float16-scaler", "cuda-bfloat16", "cpu-bfloat16"])
def test_custom_loop_trains_the_digits_mlp(device, dtype, scaled):
    accuracy, _ = train_digits(device, dtype, scaled)
    assert accuracy >= 0.95


def test_float16_loop_really_runs_in_float16():
    """The same loop's forward under cuda autocast: Linear outputs are float16, the loss float32."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 8), torch.nn.ReLU(), torch.nn.Linear(8, 10)).cuda()
    with torch.autocast("cuda", dtype=torch.float16):
        out = model(torch.ones(2, 64).cuda())
        loss = torch.nn.CrossEntropyLoss()(out, torch.tensor([1, 2]).cuda())
    assert out.dtype == torch.float16 and loss.dtype == torch.float32


@pytest.mark.endtoend
def test_chinese_post_loop_runs_and_learns():
    out = subprocess.run([sys.executable, str(EXAMPLES / "amp_tf32.py")], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    accuracy = float(out.stdout.split("test accuracy ")[1].split(",")[0])
    assert accuracy >= 0.9


@pytest.mark.endtoend
def test_persian_post_loop_runs_on_cifar_shaped_data(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MINIFP_EXAMPLE_BATCHES", "1")
    monkeypatch.chdir(tmp_path)
    namespace = runpy.run_path(str(EXAMPLES / "mobilenet_cifar_amp.py"), run_name="example")
    loss = namespace["train"](fp16=True)
    assert np.isfinite(loss) and "[0, 1] loss:" in capsys.readouterr().out

"""torch.utils.tensorboard against real PyTorch 2.13: tests/fixtures/pytorch/tensorboard.json, recorded by
tools/record_tensorboard.py, whose scripts run here with minifp.torch into tmp_path; what tensorboard's
EventAccumulator reads back (tags, steps, events in order, scalars, histograms, images, text, hparams, pr curves,
custom-scalar layouts, the projector's files; wall times left out) must equal the recording, and bad calls raise
PyTorch's errors.

Everything is compared exactly: scalars are the same float32 values, histograms the same NumPy float64 statistics
and buckets of the same values, images the same pixels. Two things are not compared: the pixels of matplotlib
figures (the drawing depends on matplotlib's version; their sizes are compared), and add_graph, which in minifp
writes nothing (PyTorch writes a TorchScript trace; minifp has no tracer).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import minifp.torch as torch
from minifp.torch.utils.tensorboard import SummaryWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_tensorboard import error_of, read_logdir, run_torch_script, torch_errors, torch_scripts  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "tensorboard.json").read_text())


def _without_figure_pixels(result):
    for run in result["runs"].values():
        for events in run["images"].values():
            for event in events:
                event[3].pop("sha256")
    return result


@pytest.mark.parametrize("name", sorted(FIX["scripts"]))
def test_script_reads_back_as_recorded(name, tmp_path):
    got = run_torch_script(torch_scripts()[name], torch, SummaryWriter, tmp_path / "logs")
    expected = FIX["scripts"][name]
    if name == "figure":
        got, expected = _without_figure_pixels(got), _without_figure_pixels(json.loads(json.dumps(expected)))
    assert json.loads(json.dumps(got)) == expected


@pytest.mark.parametrize("name", sorted(FIX["errors"]))
def test_bad_call_raises_pytorchs_error(name, tmp_path):
    with SummaryWriter(tmp_path) as writer:
        assert error_of(lambda: torch_errors()[name](torch, writer, str(tmp_path))) == FIX["errors"][name]


def test_default_log_dir_and_attributes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_x", max_queue=3, flush_secs=7, filename_suffix=".s")
    writer.close()
    run = Path(writer.get_logdir())
    assert run.parent == Path("runs") and run.name.endswith("_x") and (tmp_path / run).is_dir()
    assert (writer.max_queue, writer.flush_secs, writer.filename_suffix) == (3, 7, ".s")
    assert [p.suffix for p in (tmp_path / run).iterdir()] == [".s"]


def test_add_graph_writes_nothing(tmp_path):
    model = torch.nn.Linear(3, 2)
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, torch.ones(1, 3))
    assert read_logdir(tmp_path)["runs"]["."]["events"] == [[[0, "file_version", "brain.Event:2"]]]


def test_imports_without_tensorboard():
    """minifp and both faces import without tensorboard; the module itself raises PyTorch's ModuleNotFoundError."""
    code = ("import sys; sys.modules['tensorboard'] = None\n"
            "import minifp.torch, minifp.keras, minifp.torch.utils, minifp.keras.callbacks\n"
            "try:\n    from minifp.torch.utils.tensorboard import SummaryWriter\n"
            "except ModuleNotFoundError as e:\n    print(e.name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout == "tensorboard\n"

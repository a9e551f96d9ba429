"""Lazy modules as PyTorch 2.13 runs them (tests/fixtures/pytorch/lazy.json, recorded by tools/record_torch_lazy.py):
Dive into Deep Learning's deferred initialisation, LeNet with lazy convolutions and batch norms, every lazy
convolution's shapes, loading a state dict into a lazy module, an optimizer made before the dry run, and the
uninitialized parameter's and buffer's own behaviour. Each scenario's snippet runs through minifp.torch; every
note (a repr, or an exception's type and message) must be PyTorch's."""
import importlib.util
import json
import pathlib

import pytest

import minifp.torch as torch

HERE = pathlib.Path(__file__).resolve().parents[1]
FIXTURE = json.loads((HERE / "fixtures" / "pytorch" / "lazy.json").read_text())
_spec = importlib.util.spec_from_file_location("record_torch_lazy", HERE.parent / "tools" / "record_torch_lazy.py")
RECORDER = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(RECORDER)          # (its run(): the recorder's own way of running a snippet)


@pytest.mark.parametrize("name", FIXTURE["cases"])
def test_scenario_matches_pytorch(name):
    case = FIXTURE["cases"][name]
    assert case["source"] == RECORDER.SCENARIOS[name]
    got = RECORDER.run(torch, case["source"])
    assert len(got) == len(case["notes"])
    for i, (g, want) in enumerate(zip(got, case["notes"])):
        assert g == want, f"note {i}"


def test_materialized_parameters_train():
    """After the dry run the parameters are ordinary ones: the optimizer made before updates them in place."""
    net = torch.nn.Sequential(torch.nn.LazyLinear(4), torch.nn.ReLU(), torch.nn.LazyLinear(1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.ones(8, 3), torch.zeros(8, 1)
    before = None
    for _ in range(3):
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        assert before is None or loss.item() < before
        before = loss.item()
    assert type(net[0]) is torch.nn.Linear and net[0].weight.shape == (4, 3)


def test_loading_floats_into_an_integer_buffer_truncates():
    """load_state_dict copies as PyTorch's copy_: a float value into num_batches_tracked truncates toward zero
    (PyTorch 2.13 gives 2 and -1 for 2.7 and -1.5)."""
    m = torch.nn.BatchNorm2d(2)
    for value, want in ((2.7, 2), (-1.5, -1)):
        state = m.state_dict()
        state["num_batches_tracked"] = torch.tensor(value)
        m.load_state_dict(state)
        assert m.num_batches_tracked.dtype == torch.int64 and m.num_batches_tracked.item() == want

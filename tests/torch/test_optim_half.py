"""PyTorch's optimizers on float16 and bfloat16 parameters (tests/fixtures/pytorch/optim_half.json, recorded by
tools/record_torch_half_optim.py from PyTorch's CPU single-tensor kernels): the parameter's bits after every step
and the state's (kept in the parameter's dtype, each op rounded into it) at the end."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
from minifp import _intrinsics

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import record_torch_half_optim as recorder  # noqa: E402

FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "pytorch" / "optim_half.json").read_text())
CASES = [(name, dtype) for name in FIXTURE["cases"] for dtype in recorder.DTYPES]


def _quiet(run, dtype):
    """run with every NaN code the quiet NaN of its sign: without the JIT the plain rounding is the reference's,
    which keeps no payload (the kernels keep the CPU's)."""
    nan, quiet = (0x7C00, 0x7E00) if dtype == "float16" else (0x7F80, 0x7FC0)

    def fix(h):
        c = np.frombuffer(bytes.fromhex(h), "<u2").copy()
        is_nan = ((c & nan) == nan) & ((c & ~np.uint16(nan | 0x8000)) != 0)
        c[is_nan] = (c[is_nan] & 0x8000) | quiet
        return c.astype("<u2").tobytes().hex()
    return {"params": [[fix(h) for h in step] for step in run["params"]],
            "state": [{k: [d, fix(v) if isinstance(v, str) else v] for k, (d, v) in st.items()} for st in run["state"]]}


@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_steps_and_state_are_pytorchs(name, dtype):
    want, got = FIXTURE["cases"][name][dtype], recorder.run(torch, name, dtype)
    if not _intrinsics.JIT:
        want, got = _quiet(want, dtype), _quiet(got, dtype)
    for step, (ws, gs) in enumerate(zip(want["params"], got["params"]), 1):
        for i, (w, g) in enumerate(zip(ws, gs)):
            if w != g:
                a, b = (np.frombuffer(bytes.fromhex(h), "<u2") for h in (w, g))
                bad = np.flatnonzero(a != b)
                pytest.fail(f"step {step}, parameter {i}: {bad.size} of {a.size} differ, first at {bad[0]}: "
                            f"{a[bad[0]]:#06x} (PyTorch) against {b[bad[0]]:#06x}")
    assert got["state"] == want["state"]


def test_float16_adam_fails_as_pytorchs_does():
    """The recorded float16 Adam run goes to inf and NaN (its second moment and eps flush to zero), and minifp's
    with it; a larger eps keeps it finite."""
    def final(name):
        codes = np.frombuffer(bytes.fromhex(recorder.run(torch, name, "float16")["params"][-1][0]), "<u2")
        return codes.view(np.float16)
    assert not np.isfinite(final("adam")).all() and np.isfinite(final("adam_eps")).all()


@pytest.mark.parametrize("name", ["adam_wd_amsgrad", "adagrad", "rprop"])
def test_a_state_dict_carries_the_half_state_on(name):
    """Three steps, the state dict into a fresh optimizer (its floating state cast to the parameter's dtype, as
    PyTorch casts it), three more: the recorded run's bits."""
    cls, kwargs = recorder.CASES[name]
    want = FIXTURE["cases"][name]["bfloat16"]["params"]
    p = torch.tensor(recorder.values(name, 0), dtype=torch.bfloat16).requires_grad_(True)
    opt = getattr(torch.optim, cls)([p], **kwargs)
    for step in range(1, recorder.STEPS + 1):
        if step == 4:
            saved = {"state": {0: {k: v.float() if v.dim() else v for k, v in opt.state[p].items()}},
                     "param_groups": opt.state_dict()["param_groups"]}
            opt = getattr(torch.optim, cls)([p], **kwargs)
            opt.load_state_dict(saved)
            assert all(v.dtype == (torch.bfloat16 if v.dim() else torch.float32) for v in opt.state[p].values())
        p.grad = torch.tensor(recorder.values(name, step), dtype=torch.bfloat16)
        opt.step()
        assert recorder.codes(torch, p) == want[step - 1][0]


def test_cuda_state_is_half_with_float32_numbers():
    """On CUDA the state is the parameter's dtype too, but an add's number operand stays float32 as CUDA's kernels
    keep it: RMSprop's eps (1e-8) then moves one bfloat16 element of the recorded case the other way from the
    CPU's (sqrt(v) + eps just below a tie: 0xbdda, the CPU's 0xbdd9), as an H200 computes it
    (tests/torch/test_optim_cuda.py holds the recorded runs)."""
    import warnings
    name = "rmsprop"
    cls, kwargs = recorder.CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = torch.tensor(recorder.values(name, 0), dtype=torch.bfloat16, device="cuda").requires_grad_(True)
        opt = getattr(torch.optim, cls)([p], **kwargs)
        p.grad = torch.tensor(recorder.values(name, 1), dtype=torch.bfloat16, device="cuda")
        opt.step()
    assert opt.state[p]["square_avg"].dtype == torch.bfloat16
    got = np.frombuffer(bytes.fromhex(recorder.codes(torch, p.cpu())), "<u2")
    cpu = np.frombuffer(bytes.fromhex(FIXTURE["cases"][name]["bfloat16"]["params"][0][0]), "<u2")
    assert np.flatnonzero(got != cpu).tolist() == [31] and (cpu[31], got[31]) == (0xBDD9, 0xBDDA)


CPU_FOREACH = json.loads((ROOT / "tests" / "fixtures" / "pytorch" / "optim_cpu_foreach.json").read_text())["cases"]


@pytest.mark.parametrize("name", sorted(CPU_FOREACH))
def test_cpu_foreach_float32_steps_are_pytorchs(name):
    """foreach=True on the CPU: the foreach code's order of ops (NAdam's, RAdam's, ASGD's and Adagrad's differ from
    the single-tensor code's), float32, recorded with a correctly rounded sqrt (tools/record_torch_fma.py)."""
    assert recorder.run(torch, name, "float32", foreach=True) == CPU_FOREACH[name]

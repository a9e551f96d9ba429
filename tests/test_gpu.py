"""The CuPy path: the same numbers on a GPU. Skipped where CuPy or a GPU is missing (CI has none)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minifp as mf
from minifp._backend import holds, to_numpy

cupy = pytest.importorskip("cupy")
try:
    cupy.cuda.runtime.getDeviceCount()
except Exception:  # noqa: BLE001 - any CUDA failure means no usable GPU
    pytest.skip("no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.gpu
HELD = [name for name, f in mf.FORMATS.items() if holds(cupy, f.storage)]


def bits(a):
    a = to_numpy(a)
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("fmt", ["float16", "bfloat16", "tf32", mf.Format(5, 4, overflow="saturate")], ids=str)
@pytest.mark.parametrize("mode", mf.ROUNDING_MODES)
def test_round_to_on_gpu_matches_cpu_bit_for_bit(fmt, mode):
    if isinstance(fmt, str) and fmt not in HELD:
        pytest.skip(f"CuPy {cupy.__version__} has no {fmt} dtype (bfloat16 needs CuPy >= 14)")
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(1 << 20) * 2.0 ** rng.integers(-30, 20, 1 << 20),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 65504, 65520, 2.0**-25]]).astype(np.float32)
    x = np.concatenate([x, np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    on_gpu = mf.round_to(cupy.asarray(x), fmt, mode, rng=np.random.default_rng(7))
    assert isinstance(on_gpu, cupy.ndarray)
    on_cpu = mf.round_to(x, fmt, mode, rng=np.random.default_rng(7))
    nan = np.isnan(x)                   # NaN stays NaN of its sign; CuPy writes another payload (0x7fff)
    np.testing.assert_array_equal(bits(on_gpu)[~nan], bits(on_cpu)[~nan])
    assert np.isnan(to_numpy(on_gpu).astype(np.float32)[nan]).all()


@pytest.mark.parametrize("fmt", ["float8_e4m3", "float8_e5m2"])
def test_a_format_cupy_cannot_hold_is_a_clear_error(fmt):
    if fmt in HELD:
        pytest.skip(f"CuPy {cupy.__version__} holds {fmt}")
    with pytest.raises(TypeError, match=f"{fmt} values cannot live on the GPU.*formats it can hold: float32, tf32"):
        mf.tensor(cupy.ones(3, cupy.float32), dtype=fmt)


@pytest.mark.parametrize("fmt", [f for f in ("float16", "bfloat16") if f in HELD])
def test_ops_and_gradients_on_gpu_match_cpu(fmt):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 32)), rng.standard_normal((32, 16))
    results = []
    for xp in (np, cupy):
        x = mf.tensor(xp.asarray(a, dtype=xp.float32), dtype=fmt, requires_grad=True)
        w = mf.tensor(xp.asarray(b, dtype=xp.float32), requires_grad=True)
        loss = (x @ w.astype(fmt)).relu().sum()
        loss.backward()
        assert all(isinstance(t.data, xp.ndarray) for t in (loss, x.grad, w.grad))
        results.append([to_numpy(t.data).astype(np.float32) for t in (loss, x.grad, w.grad)])
    # Only the matmul's float32 sums differ (cuBLAS and the CPU BLAS add in different orders).
    cpu, gpu = results
    for c, g in zip(cpu, gpu):
        np.testing.assert_allclose(c, g, rtol=2**-7, atol=2**-7)


def test_elementwise_ops_on_gpu_are_bit_exact():
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(1 << 16).astype(np.float16) for _ in range(2))
    for f in (lambda x, y: x * y + x / y - y, lambda x, y: (x.abs().sqrt() + y.exp()).tanh()):
        cpu = f(mf.tensor(a), mf.tensor(b)).numpy()
        gpu = f(mf.tensor(cupy.asarray(a)), mf.tensor(cupy.asarray(b)))
        assert gpu.dtype == mf.float16
        np.testing.assert_array_equal(bits(gpu.data), bits(cpu))


# -- models on the GPU --------------------------------------------------------------------------

def _train_digits():
    """tests/torch/test_training.py's loop (cuda float16 with GradScaler), loaded from its file."""
    spec = importlib.util.spec_from_file_location("torch_training", Path(__file__).parent / "torch" / "test_training.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.train_digits


def test_torch_face_trains_the_digits_mlp_on_the_gpu_as_the_emulation_does():
    import minifp.torch as torch
    assert not torch.cuda.is_emulated()
    accuracy, skipped = _train_digits()("cuda", torch.float16, True)
    code = ("import sys; sys.path.insert(0, 'tests/torch'); import minifp.torch as torch; "
            "from test_training import train_digits; print(train_digits('cuda', torch.float16, True))")
    emulated = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "MINIFP_EMULATE_CUDA": "1"}, cwd=Path(__file__).parent.parent)
    cpu_accuracy, cpu_skipped = eval(emulated.stdout.strip().splitlines()[-1])     # noqa: S307 - our own print
    print(f"digits MLP, cuda float16 with GradScaler: GPU {accuracy:.4f} ({skipped} skipped), "
          f"emulated on the CPU {cpu_accuracy:.4f} ({cpu_skipped} skipped)")
    assert accuracy >= 0.95 and abs(accuracy - cpu_accuracy) <= 0.01


def test_models_move_to_the_gpu_and_back_exactly():
    import minifp.torch as torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    model.cuda()
    assert all(isinstance(p._data, cupy.ndarray) for p in model.parameters())
    assert all(p.device == "cuda" for p in model.parameters())
    model.cpu()
    after = {k: v.numpy() for k, v in model.state_dict().items()}
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_a_checkpoint_written_on_the_gpu_loads_on_the_cpu(tmp_path):
    pytest.importorskip("safetensors")
    import minifp.torch as torch
    torch.manual_seed(0)
    make = lambda: torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    model = make().cuda().half()
    torch.save(model.state_dict(), tmp_path / "m.safetensors")
    loaded = make().half()
    loaded.load_state_dict(torch.load(tmp_path / "m.safetensors"))
    for (k, v), w in zip(model.state_dict().items(), loaded.state_dict().values()):
        assert isinstance(v._data, cupy.ndarray) and isinstance(w._data, np.ndarray), k
        np.testing.assert_array_equal(bits(v._data), bits(w._data))


@pytest.mark.parametrize("fmt", [f for f in ("float16", "bfloat16") if f in HELD])
def test_half_products_run_on_the_tensor_cores_as_their_model_says(fmt):
    # K <= 1024 at 128 x 128 outputs: shapes where cuBLAS's GEMM equals the model (benchmarks/gpu_tensorcore.py)
    from minifp import _gpu, _tensorcore as tc
    from minifp._rounding import widen
    device = _gpu.model_of(_gpu.device_name())
    if device is None:
        pytest.skip(f"no tensor-core model for {_gpu.device_name()}")
    rng = np.random.default_rng(3)
    a, b = (mf.round_to(rng.standard_normal(s) * 2.0 ** rng.integers(-6, 6, s), fmt) for s in ((128, 256), (256, 128)))
    got = mf.tensor(cupy.asarray(a)) @ mf.tensor(cupy.asarray(b))
    want = mf.round_to(tc.matmul(widen(a, fmt), widen(b, fmt), device, fmt), fmt)
    np.testing.assert_array_equal(bits(got.data), bits(want))


def test_accumulate_emulates_the_gpu_in_use_exactly_on_gpu_tensors():
    # tensor_core="gpu": the model of this GPU, run on the host for GPU tensors (the exact model, not cuBLAS's
    # GEMM), the result back on the GPU; the same bits as on host tensors.
    from minifp import _gpu
    if _gpu.model_of(_gpu.device_name()) is None:
        pytest.skip(f"no tensor-core model for {_gpu.device_name()}")
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((16, 300)).astype(np.float16), rng.standard_normal((300, 8)).astype(np.float16)
    with mf.accumulate(tensor_core="gpu"):
        gpu = mf.tensor(cupy.asarray(a)) @ mf.tensor(cupy.asarray(b))
        cpu = mf.tensor(a) @ mf.tensor(b)
    assert isinstance(gpu.data, cupy.ndarray)
    np.testing.assert_array_equal(bits(gpu.data), bits(cpu.data))


def test_the_monitor_counts_overflow_on_the_gpu():
    import minifp.torch as torch
    from minifp.numerics import watch
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)).cuda()
    with torch.no_grad():
        model[0].weight.fill_(1.0)
        model[2].weight.fill_(4e4)
    with watch(model) as report, torch.autocast("cuda", dtype=torch.float16):
        out = model(torch.ones((5, 6), device="cuda"))
    assert isinstance(out._data, cupy.ndarray)
    event = report.first_overflow
    assert event.layer.endswith("2") and (event.op, event.direction, event.count) == ("linear", "forward", 15)


def _conv_steps(*args):
    """tests/torch/test_weight_layout.py's conv_steps, loaded from its file."""
    spec = importlib.util.spec_from_file_location("torch_weight_layout",
                                                  Path(__file__).parent / "torch" / "test_weight_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.conv_steps(*args)


@pytest.mark.parametrize("half", [False, True], ids=["float32", "float16-gradscaler"])
def test_conv_weights_in_their_gradients_layout_train_on_the_gpu_as_in_c_order(half):
    """A conv weight on the GPU takes its gradient's memory order at its first update, as on the host: the same
    bits as C-order weights on the GPU, and the host's values up to cuBLAS's summation order."""
    import minifp.torch as torch
    scaler = (lambda device: torch.amp.GradScaler(device, init_scale=2.0**8)) if half else (lambda device: None)
    (l1, w1), (l2, w2) = (_conv_steps("cuda", force_c, scaler("cuda")) for force_c in (False, True))
    assert l1 == l2 and all(np.array_equal(bits(a), bits(b)) for a, b in zip(w1, w2))
    lc, wc = _conv_steps("cpu", False, scaler("cpu"))
    np.testing.assert_allclose(l1, lc, rtol=1e-2 if half else 1e-4)
    for a, b in zip(w1, wc):
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), rtol=1e-2, atol=1e-3 if half else 1e-5)

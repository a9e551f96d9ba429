"""The CuPy path: the same numbers on a GPU. Skipped where CuPy or a GPU is missing (CI has none)."""
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

"""The CuPy path: the same numbers on a GPU. Skipped where CuPy or a GPU is missing (CI has none)."""
import numpy as np
import pytest

import minifp as mf

cupy = pytest.importorskip("cupy")
try:
    cupy.cuda.runtime.getDeviceCount()
except Exception:  # noqa: BLE001 - any CUDA failure means no usable GPU
    pytest.skip("no CUDA device", allow_module_level=True)

pytestmark = pytest.mark.gpu


# CuPy has no bfloat16 or fp8 dtypes; those formats need a uint container on the GPU (not built yet).
@pytest.mark.parametrize("fmt", ["float16", "tf32"])
def test_round_to_on_gpu_matches_cpu(fmt):
    x = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32) * 100
    on_gpu = mf.round_to(cupy.asarray(x), fmt)
    assert isinstance(on_gpu, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(on_gpu).astype(np.float32), mf.round_to(x, fmt).astype(np.float32))


def test_ops_and_gradients_on_gpu_match_cpu():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 32)), rng.standard_normal((32, 16))
    results = []
    for xp in (np, cupy):
        x = mf.tensor(xp.asarray(a, dtype=xp.float32), dtype="float16", requires_grad=True)
        w = mf.tensor(xp.asarray(b, dtype=xp.float32), requires_grad=True)
        loss = (x @ w.astype("float16")).relu().sum()
        loss.backward()
        results.append([mf._backend.to_numpy(t).astype(np.float32) for t in (loss.data, x.grad.data, w.grad.data)])
    # cuBLAS and OpenBLAS sum in different orders: float32 results agree to rounding, not bit for bit.
    for cpu, gpu in zip(*results):
        np.testing.assert_allclose(cpu, gpu, rtol=2**-9, atol=1e-3)

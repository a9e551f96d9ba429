"""cuBLAS's split-K GEMMs on the H100, replayed from recordings (docs/h100_splitk.md, tools/fit_splitk.py).

The fixture holds the H100's output bits (top 16 rows of the recorded 64x64 corner) of ../shared/gpu/h100/sweep.npz's
`splitk/{m}x{m}x{k}/{fmt}/{out32,outlow}` and of three gemm.npz cases (`gemm/...`); the inputs are drawn again from
default_rng(crc32(name)) as record_h100_sweep.py and record_h100.py draw them (tools/fit_splitk.py --fixture).
"""
import zlib
from pathlib import Path

import numba
import numpy as np
import pytest

from minifp import _tensorcore as tc
from minifp._cublas import cublas_slices
from minifp._formats import bfloat16, float16, tf32
from minifp._rounding import round_to

# The replays sum millions of products through the tensor-core kernels: the JIT's work (CI's first run); with the
# JIT off, test_tensorcore.py runs the kernels' Python on small cases.
pytestmark = pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the replays run with the JIT (CI's first run)")

FIXTURE = np.load(Path(__file__).parent / "fixtures" / "h100" / "splitk.npz")
FMTS = {"float16": float16, "bfloat16": bfloat16, "tf32": tf32}


def recorded(key):
    """(a, b, fmt, out, (m, n, k, layout), want): the case's inputs rounded to fmt, cut to the recorded corner."""
    if key.startswith("splitk/"):           # sweep.npz: splitk/{m}x{m}x{k}/{fmt}/{out}, seed "splitk/{shape}"
        _, shape, fmt, out = key.split("/")
        seed, layout = f"splitk/{shape}", "nn"
    else:                                   # gemm.npz: gemm/{m}x{n}x{k}/{layout}/{fmt}/{out}, seed "{shape}/{layout}"
        _, shape, layout, fmt, out = key.split("/")
        seed = f"{shape}/{layout}"
    m, n, k = map(int, shape.split("x"))
    r = np.random.default_rng(zlib.crc32(seed.encode()))
    a = (r.uniform(1, 2, (m, k)) * 2.0 ** r.integers(-6, 6, (m, k)) * r.choice([-1, 1], (m, k))).astype(np.float32)
    b = (r.uniform(1, 2, (k, n)) * 2.0 ** r.integers(-6, 6, (k, n)) * r.choice([-1, 1], (k, n))).astype(np.float32)
    want = FIXTURE[key]
    rnd = lambda x: np.asarray(round_to(x.astype(np.float64), FMTS[fmt]), np.float64)    # noqa: E731 -- nearest even
    return rnd(a[:want.shape[0]]), rnd(b[:, :want.shape[1]]), fmt, out, (m, n, k, layout), want


def emulate(a, b, fmt, out, case):
    slices, tile = cublas_slices(*case[:3], fmt, case[3])
    d = tc.splitk_matmul(a, b, tc.model("H100", FMTS[fmt]), slices, tile)
    if out == "outlow":         # splitKreduce rounds its float32 sum once into the half type
        return np.asarray(round_to(d.astype(np.float64), FMTS[fmt])).view(np.uint16)
    return d.view(np.uint32)


@pytest.mark.parametrize("key", sorted(FIXTURE.files))
def test_recorded_h100_gemm_identical(key):
    a, b, fmt, out, case, want = recorded(key)
    got = emulate(a, b, fmt, out, case)
    assert got.shape == want.shape
    assert float((got == want).mean()) == 1.0


def test_split_changes_the_bits():
    # the recorded split case is not the unsplit chain: the fixture tells the two apart
    a, b, fmt, out, case, want = recorded("splitk/64x64x8192/float16/out32")
    chain = tc._run(a, b, tc.model("H100", float16)).view(np.uint32)
    assert float((chain == want).mean()) < 0.05
    assert cublas_slices(64, 64, 8192, "float16") == (6, 64)


def test_one_slice_is_the_chain():
    a, b, *_ = recorded("splitk/64x64x2048/bfloat16/out32")
    core = tc.model("H100", bfloat16)
    assert np.array_equal(tc.splitk_matmul(a, b, core, 1), tc._run(a, b, core))


def test_slices_cut_whole_k_tiles_in_order():
    # 4096 = 64 k-tiles in 3 slices: runs of 22, 22 and 20 tiles, added left to right in float32
    a, b, *_ = recorded("splitk/64x64x4096/float16/out32")
    core = tc.model("H100", float16)
    parts = [tc._run(a[:, lo:hi], b[lo:hi], core) for lo, hi in ((0, 1408), (1408, 2816), (2816, 4096))]
    assert np.array_equal(tc.splitk_matmul(a, b, core, 3), (parts[0] + parts[1]) + parts[2])


def test_cublas_slices_rule():
    assert cublas_slices(1024, 1024, 4096, "float16") == (1, 64)      # README: not split on the H100
    assert cublas_slices(128, 128, 4096, float16) == (3, 64)
    assert cublas_slices(256, 256, 2048, "bfloat16") == (1, 64)
    assert cublas_slices(16, 16, 1024, "tf32") == (16, 16)
    assert cublas_slices(256, 10, 1024, "float16", "tn") == (16, 64)      # the layout picks another kernel
    with pytest.raises(ValueError, match="fmt='float8_e4m3'"):
        cublas_slices(64, 64, 4096, "float8_e4m3")


def test_emulated_cuda_with_cublas_gemms_gives_the_h100s_bits():
    """A device value with gemm=CUBLAS: the PyTorch face's torch.mm on cuda is the recorded split-K GEMM, bit for
    bit (outlow: the half output), and the default H100 device keeps float32 BLAS's one rounding."""
    import warnings

    import minifp.torch as torch
    from minifp.engine import CUBLAS, H100, device_numerics, set_device_numerics, storage
    warnings.filterwarnings("ignore", message="minifp: no GPU here")
    key = "splitk/64x64x4096/float16/outlow"
    r = np.random.default_rng(zlib.crc32(b"splitk/64x64x4096"))
    a = (r.uniform(1, 2, (64, 4096)) * 2.0 ** r.integers(-6, 6, (64, 4096)) * r.choice([-1, 1], (64, 4096)))
    b = (r.uniform(1, 2, (4096, 64)) * 2.0 ** r.integers(-6, 6, (4096, 64)) * r.choice([-1, 1], (4096, 64)))
    ta, tb = (torch.tensor(x.astype(np.float32), device="cuda").half() for x in (a, b))
    want = FIXTURE[key]
    before = device_numerics("cuda")
    try:
        set_device_numerics("cuda", H100.with_gemm(CUBLAS))
        got = np.asarray(storage(torch.mm(ta, tb)))[:want.shape[0], :want.shape[1]].view(np.uint16)
        assert np.array_equal(got, want)
        set_device_numerics("cuda", H100)
        plain = np.asarray(storage(torch.mm(ta, tb)))[:want.shape[0], :want.shape[1]].view(np.uint16)
        assert not np.array_equal(plain, want)      # one rounding of the exact sum: not what cuBLAS gives
    finally:
        set_device_numerics("cuda", before)

"""Rounding is exact: kernels against numpy/ml_dtypes casts and against the float64 reference."""
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numba
import numpy as np
import pytest

import minifp as mf
from minifp import _rounding as R
from minifp import _threads as T
from minifp._threads import Pool

JIT = not numba.config.DISABLE_JIT
NATIVE = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
          "float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}


def edge_sample(fmt, n_random=2**22 if JIT else 2**12, seed=0):
    """float32 values around every value of `fmt`: each one, the midpoints to its neighbours, and one
    float32 ulp either side of them; every float32 exponent; random bit patterns; inf, NaN, zeros."""
    rng = np.random.default_rng(seed)
    np.seterr(all="ignore")
    pos = mf.Format.decode(fmt, np.arange(1 << (fmt.bits - 1)))
    pos = np.unique(pos[np.isfinite(pos)])
    pos = np.append(pos, 2 * pos[-1] - pos[-2])                    # one step past max: the overflow boundary
    mids = ((pos[1:] + pos[:-1]) / 2).astype(np.float32)          # exact: at most p+1 bits
    around = np.concatenate([pos.astype(np.float32), mids, np.nextafter(mids, np.float32(np.inf)),
                             np.nextafter(mids, np.float32(0))])
    every_exponent = (np.arange(256, dtype=np.uint32)[:, None] << 23 |
                      rng.integers(0, 1 << 23, (256, 64), dtype=np.uint32)).view(np.float32).ravel()
    random_bits = rng.integers(0, 2**32, n_random, dtype=np.uint32).view(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], np.float32)
    x = np.concatenate([around, -around, every_exponent, random_bits, special])
    return x if JIT else x[:: max(1, x.size // 50_000)]


def same_bits(a, b):
    """Equal bit patterns, any NaN equal to any NaN of the same sign."""
    a, b = np.asarray(a), np.asarray(b)
    ai, bi = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
    nan_a, nan_b = np.isnan(a.astype(np.float32)), np.isnan(b.astype(np.float32))
    sign = ai >> (8 * a.itemsize - 1)
    ok = np.where(nan_a & nan_b, sign == bi >> (8 * b.itemsize - 1), ai == bi)
    return int((~ok).sum())


@pytest.mark.parametrize("name", NATIVE)
def test_kernel_matches_native_casts(name):
    fmt = mf.FORMATS[name]
    x = edge_sample(fmt)
    with np.errstate(all="ignore"):
        expected = x.astype(NATIVE[name])
    assert same_bits(R.round_kernel(x, fmt), expected) == 0
    assert same_bits(R.round_reference(x, fmt), expected) == 0


def test_float16_bit_kernel_matches_numpy_too(monkeypatch):
    # round_kernel takes the CPU's own float16 conversion where there is one (R.HARDWARE_HALF); the bit
    # kernel, which counted rounding and other CPUs use, must agree as well.
    monkeypatch.setattr(R, "HARDWARE_HALF", False)
    x = edge_sample(mf.float16)
    with np.errstate(all="ignore"):
        assert same_bits(R.round_kernel(x, mf.float16), x.astype(np.float16)) == 0


@pytest.mark.parametrize("name", NATIVE)
def test_float64_sources_round_once(name):
    # Values just off a float16 tie in float64 would be tied after a float32 step: no double rounding.
    fmt = mf.FORMATS[name]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(20_000) * np.exp2(rng.integers(-30, 20, 20_000)) + 2.0**-60
    assert same_bits(R.round_kernel(x, fmt), R.round_reference(x, fmt)) == 0


CUSTOM = [mf.Format(3, 4), mf.Format(6, 12, subnormals=False), mf.Format(8, 23), mf.tf32, mf.Format(2, 1),
          mf.Format(4, 3, overflow="saturate"), mf.Format(7, 20, infinities=False), mf.Format(5, 2, subnormals=False),
          mf.Format(8, 7, overflow="saturate"), mf.Format(5, 10, overflow="saturate"),
          mf.Format(8, 23, overflow="saturate"), mf.Format(8, 23, subnormals=False)]


@pytest.mark.parametrize("fmt", CUSTOM, ids=str)
@pytest.mark.parametrize("mode", ["nearest", "toward_zero", "stochastic"])
@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_kernel_matches_float64_reference(fmt, mode, src):
    rng = np.random.default_rng(2)
    n = 100_000 if JIT else 3_000
    with np.errstate(all="ignore"):
        x = (rng.standard_normal(n) * np.exp2(rng.integers(-150, 130, n))).astype(src)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0**-149]
    rbits = R._random_bits(np.random.default_rng(7), n) if mode == "stochastic" else None
    with np.errstate(all="ignore"):
        got = R.round_kernel(x, fmt, mode, rng=np.random.default_rng(7))
        assert same_bits(got, R.round_reference(x, fmt, mode, rbits)) == 0


@pytest.mark.parametrize("x, expected", [(65519.99, 65504.0), (65520.0, np.inf), (-65520.0, -np.inf),
                                         (2.0**-25, 0.0), (2.0**-25 * (1 + 2**-10), 2.0**-24),
                                         (1 + 2**-11, 1.0), (1 + 3 * 2**-11, 1 + 2**-9)])
def test_float16_edges(x, expected):
    assert mf.round_to(np.array([x], np.float32), "float16")[0] == np.float16(expected)


def test_signed_zero_and_nan_survive():
    out = mf.round_to(np.array([-0.0, np.nan, -1e-30], np.float32), "float16")
    assert np.signbit(out[0]) and out[0] == 0
    assert np.isnan(out[1])
    assert np.signbit(out[2]) and out[2] == 0


@pytest.mark.parametrize("x, default, saturate", [(448.0, 448.0, 448.0), (464.0, 448.0, 448.0),
                                                   (464.01, np.nan, 448.0), (1e6, np.nan, 448.0),
                                                   (-500.0, np.nan, -448.0), (np.inf, np.nan, 448.0)])
def test_e4m3_overflow(x, default, saturate):
    sat = mf.Format(4, 3, infinities=False, overflow="saturate")
    got = mf.round_to(np.array([x], np.float32), "float8_e4m3").astype(np.float32)[0]
    assert got == default or (np.isnan(default) and np.isnan(got))
    assert mf.round_to(np.array([x], np.float32), sat).astype(np.float32)[0] == saturate


@pytest.mark.parametrize("mode", R.MODES)
@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", [mf.Format(8, 7, overflow="saturate"), mf.Format(8, 23, overflow="saturate")], ids=str)
def test_saturating_formats_with_float32_exponents_saturate(fmt, src, mode):
    # bfloat16's shortcut in the hot kernel carried past max onto inf; float32's widths were taken for float32.
    big = mf.finfo(fmt).max
    x = np.array([np.float32(3.4e38), np.inf, -np.inf, np.float32(-3.4e38), 1.0] +
                 ([1e39, -1e300] if src == np.float64 else []), src)    # 3.4e38 passes bfloat16's max, not e8m23's
    expected = np.clip(x.astype(np.float64), -big, big)
    assert mf.round_to(x, fmt, mode, rng=0).astype(np.float64).tolist() == expected.tolist()


def test_float32_widths_without_subnormals_are_not_float32():
    fmt = mf.Format(8, 23, subnormals=False)
    x = np.array([1e-40, -1e-40, 2.0**-126, 1.0], np.float32)
    assert mf.round_to(x, fmt).tolist() == [0.0, 0.0, 2.0**-126, 1.0]


def test_toward_zero_truncates_and_never_overflows():
    x = np.array([1 + 2**-10 - 2**-20, -(1 + 2**-10 - 2**-20), 70000.0, np.inf], np.float32)
    out = mf.round_to(x, "float16", mode="toward_zero").astype(np.float32)
    assert out.tolist() == [1.0, -1.0, 65504.0, np.inf]


def test_stochastic_rounding_is_unbiased_reproducible_and_lands_on_neighbours():
    x = np.full(200_000, 1 + 2**-12, np.float32)             # a quarter of the way from 1 to 1 + 2**-10
    a = mf.round_to(x, "float16", mode="stochastic", rng=np.random.default_rng(3)).astype(np.float64)
    b = mf.round_to(x, "float16", mode="stochastic", rng=np.random.default_rng(3)).astype(np.float64)
    assert np.array_equal(a, b)                              # the same generator state draws the same bits
    assert set(np.unique(a)) == {1.0, 1 + 2**-10}
    share_up = (a > 1).mean()
    assert abs(share_up - 0.25) < 4 * np.sqrt(0.25 * 0.75 / x.size)
    assert abs(a.mean() - (1 + 2**-12)) < 1e-5
    exact = np.array([1.5, -2.0], np.float32)                # representable values never move
    assert mf.round_to(exact, "float16", mode="stochastic", rng=0).tolist() == [1.5, -2.0]


def test_storage_dtypes():
    x = np.ones(4, np.float32)
    assert mf.round_to(x, "float16").dtype == np.float16
    assert mf.round_to(x, "bfloat16").dtype == ml_dtypes.bfloat16
    assert mf.round_to(x, "float8_e4m3").dtype == ml_dtypes.float8_e4m3fn
    assert mf.round_to(x, "float8_e5m2").dtype == ml_dtypes.float8_e5m2
    assert mf.round_to(x, "tf32").dtype == np.float32
    assert mf.round_to(x, mf.Format(3, 4)).dtype == np.float32


def test_tf32_keeps_ten_mantissa_bits():
    x = np.array([1 + 2**-10, 1 + 2**-11, 1 + 3 * 2**-11, 2.0**-130], np.float32)
    assert mf.round_to(x, "tf32").tolist() == [1 + 2**-10, 1.0, 1 + 2**-9, 2.0**-130]


@pytest.mark.parametrize("hardware", sorted({False, R.HARDWARE_HALF}))   # the gather, and the CPU's own
def test_widen_is_exact_for_every_code(hardware, monkeypatch):
    monkeypatch.setattr(R, "HARDWARE_HALF", hardware)
    for name, native in NATIVE.items():
        codes = np.arange(1 << mf.FORMATS[name].bits, dtype=np.uint16 if mf.FORMATS[name].bits == 16 else np.uint8)
        stored = np.tile(codes, 2 * R.SMALL // codes.size + 1).view(native)      # past the native-cast size
        assert same_bits(R.widen(stored), stored.astype(np.float32)) == 0


def test_unknown_mode_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown rounding mode 'up'.*nearest, toward_zero, stochastic"):
        mf.round_to(np.ones(3, np.float32), "float16", mode="up")


@numba.njit(nogil=True)
def _double(src, dst):
    for i in range(src.size):
        dst[i] = 2 * src[i]


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the pool runs compiled kernels only")
def test_pool_runs_every_part_once_from_many_threads(monkeypatch):
    """Parts land where they belong, each once, while four Python threads launch jobs at the same time."""
    monkeypatch.setattr(R, "THREADS", 2)
    x = np.arange(3 * R.MAP + 7, dtype=np.float32)

    def launch(k):
        for _ in range(50):
            out = np.zeros_like(x)
            R._map(_double, x + k, out)
            assert (out == 2 * (x + k)).all()

    with ThreadPoolExecutor(4) as threads:
        list(threads.map(launch, range(4)))


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the pool runs compiled kernels only")
def test_pool_starts_its_workers_once_when_many_threads_rouse_it():
    """Python may switch threads between counting the workers and starting one: the count is locked."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):
            pool, start = Pool(2), threading.Barrier(8)
            with ThreadPoolExecutor(8) as threads:
                list(threads.map(lambda _: (start.wait(), pool._rouse()), range(8)))
            assert len(pool.workers) == 1
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the pool runs compiled kernels only")
def test_pool_of_four_covers_every_element_once():
    """More threads than this machine may have cores, and arrays shorter than the number of parts."""
    pool, part = Pool(4), R._part_of(_double, np.dtype(np.float32), np.dtype(np.float32))
    for n in (0, 1, 3, 1000, (1 << 18) + 3):
        x = np.arange(n, dtype=np.float32)
        for _ in range(20):
            out = np.full(n + 1, -1, np.float32)
            assert pool.run(part, x, out[:n])
            assert (out[:n] == 2 * x).all() and out[n] == -1          # and nothing past the end


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="the pool runs compiled kernels only")
def test_pool_wakes_its_worker_for_bursts_and_long_jobs_only():
    """Calls far apart run alone (waking a thread costs more than a short kernel); back-to-back calls
    and a job of WAKE elements start the worker."""
    part = R._part_of(_double, np.dtype(np.float32), np.dtype(np.float32))
    x = np.arange(1000, dtype=np.float32)
    apart = Pool(2)
    for _ in range(5):
        time.sleep(0.01)
        assert apart.run(part, x, np.empty_like(x))
    assert apart.workers == []
    burst = Pool(2)
    for _ in range(5):
        burst.run(part, x, np.empty_like(x))
    assert len(burst.workers) == 1
    big, x = Pool(2), np.arange(T.WAKE, dtype=np.float32)
    out = np.empty_like(x)
    assert big.run(part, x, out) and len(big.workers) == 1 and (out == 2 * x).all()


@pytest.mark.skipif(not hasattr(os, "fork") or numba.config.DISABLE_JIT, reason="needs os.fork and the JIT")
def test_kernel_threads_work_in_a_forked_child(monkeypatch):
    """A forked child has none of the parent's kernel threads; large kernels must still run there."""
    monkeypatch.setattr(R, "THREADS", 2)
    x = np.arange(R.PARALLEL, dtype=np.float32)
    out, out2 = np.zeros_like(x), np.zeros_like(x)

    def both():
        R._map(_double, x, out)
        R._run(_double, x.size, (x, out2))
        return (out == 2 * x).all() and (out2 == 2 * x).all()

    assert both()                                        # the parent's threads exist from here on
    out[:] = out2[:] = 0
    pid = os.fork()
    if pid == 0:                                         # the child: a hang is killed by the alarm
        signal.alarm(30)
        os._exit(0 if both() else 1)
    assert os.waitpid(pid, 0)[1] == 0


def test_large_outputs_start_on_a_huge_page_and_small_ones_are_plain():
    """Large kernel outputs start on a 2 MB boundary (whole huge pages fault in faster); small ones are
    plain np.empty arrays."""
    big = R._empty(np.empty((R.ALIGNED // 4, 3), np.float32), np.dtype(np.uint16))
    assert big.shape == (R.ALIGNED // 4, 3) and big.dtype == np.uint16 and big.flags.c_contiguous
    assert big.ctypes.data % R.HUGE_PAGE == 0 and big.flags.writeable
    small = R._empty(np.empty(10), np.dtype(np.uint16))
    assert small.shape == (10,) and small.flags.owndata


@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="without the JIT round_to takes the reference path")
def test_large_rounded_arrays_are_aligned_and_exact():
    """round_to's large results take the aligned outputs and still equal the reference casts bit for bit."""
    x = np.random.default_rng(3).standard_normal((R.ALIGNED // 2, 3)).astype(np.float32)
    for fmt, ref in ((mf.float16, np.float16), (mf.bfloat16, ml_dtypes.bfloat16)):
        y = mf.round_to(x, fmt)
        assert y.shape == x.shape and y.ctypes.data % R.HUGE_PAGE == 0
        assert same_bits(y, x.astype(ref)) == 0


def test_an_integer_seed_is_a_stream_that_advances():
    w = np.float32([1.0] * 64)
    with_seed = [mf.round_to(w + np.float32(1e-3), "bfloat16", mode="stochastic", rng=5) for _ in range(2)]
    assert not np.array_equal(with_seed[0], with_seed[1])    # a loop passing rng=5 does not repeat its bits
    mf.manual_seed(0)                                        # restarts the streams: the first draw comes again
    again = mf.round_to(w + np.float32(1e-3), "bfloat16", mode="stochastic", rng=5)
    assert np.array_equal(again, with_seed[0])
    stream = np.random.default_rng(5)                        # the stream of 5 is default_rng(5), advancing
    first = mf.round_to(w + np.float32(1e-3), "bfloat16", mode="stochastic", rng=stream)
    assert np.array_equal(first, with_seed[0])

"""Fixtures the test modules share."""
import contextlib
import importlib.metadata
import os
import platform
import sys
import threading
from pathlib import Path


def _pin_avx2_kernels():
    """Have OpenBLAS and NumPy run their AVX2 kernels, in this process and the workers and scripts it starts.

    The recorded values (PyTorch's and Keras's fixtures, tests/fixtures/bits.json) are those of these kernels. On
    a CPU with AVX-512 the others give other low bits: OpenBLAS's SkylakeX kernels other float32 sums and NaN
    payloads, NumPy's expm1, power and others an ulp apart. Every x86-64 CPU with AVX2 computes the recorded bits
    with these two set, which must happen before NumPy loads (minifp itself uses whatever kernels the host's
    NumPy and OpenBLAS pick)."""
    if "numpy" in sys.modules or platform.machine().lower() not in ("x86_64", "amd64"):
        return
    try:
        avx2 = " avx2 " in Path("/proc/cpuinfo").read_text().replace("\n", " ")
    except OSError:             # (no Linux cpuinfo: leave the kernels to the host)
        return
    if avx2:
        os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
        if tuple(int(p) for p in importlib.metadata.version("numpy").split(".")[:2]) >= (2, 4):   # (its names)
            os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512_ICL AVX512_SPR")


_pin_avx2_kernels()

import pytest  # noqa: E402  (after the pin: NumPy must not have loaded)

from minifp import _speed  # noqa: E402
from minifp._seams import PLAIN, SEAMS  # noqa: E402


def pytest_configure(config):
    """With xdist's workers (one per core), each worker's OpenBLAS (and the processes it starts) runs one thread: a
    GEMM cut in two otherwise waits for its second thread behind the other worker (lesson 06: 39 -> 13 s, the
    suite 5:00 -> 4:24 on 2 cores). Set before the workers start, so that their OpenBLAS reads it as it loads."""
    if getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@contextlib.contextmanager
def _plain_path():
    saved = dict(vars(SEAMS))
    vars(SEAMS).update(vars(PLAIN))
    try:
        yield
    finally:
        vars(SEAMS).update(saved)


@pytest.fixture
def plain_path():
    """A context manager: every seam on the plain path inside its block (what MINIFP_SPEED=0 gives a fresh
    process)."""
    return _plain_path


@pytest.fixture
def parts(monkeypatch):
    """Spy on the speed module's in_parts: `cut(threads, split_min)` sets the pool and the size from which calls
    are cut; `cut.seen`: the (lo, hi, thread name) of every part run since; `cut.split()`: whether a call was cut."""
    seen = []
    whole = _speed.in_parts

    def spy(part, n, work):
        def watched(lo, hi):
            seen.append((lo, hi, threading.current_thread().name))
            return part(lo, hi)
        return whole(watched, n, work)
    monkeypatch.setattr(_speed, "in_parts", spy)

    def cut(threads, split_min):
        monkeypatch.setattr(_speed, "THREADS", threads)
        monkeypatch.setattr(_speed, "SPLIT_MIN", split_min)
        seen.clear()
    cut.seen = seen
    cut.split = lambda: any(lo > 0 for lo, *_ in seen)
    return cut

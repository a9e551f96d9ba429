"""Fixtures the test modules share."""
import contextlib
import os
import threading

import pytest

from minifp import _speed
from minifp._seams import PLAIN, SEAMS


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

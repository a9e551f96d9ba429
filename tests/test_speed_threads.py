"""The speed module's kernels cut into parts on worker threads (minifp/_speed.py's in_parts) against the same
kernels whole on one thread and against the plain path: bit for bit, on ties, signed zeros, subnormals,
infinities and NaNs, above and below the size from which a call is cut; and the pool's threads asleep between
calls. The speed module's functions are called directly, so these run without the JIT too (small arrays; the
kernels then run as Python loops and the parts one after another in effect, the bits the same)."""
import itertools
import os
import threading
import time

import numpy as np
import pytest

from minifp import _ops, _speed
from minifp._formats import bfloat16, float16
from minifp._rounding import widen
from minifp._seams import PLAIN


def _awkward(rng, shape):
    """float32 values with ties (zeros of both signs, small integers), subnormals, infinities and NaNs."""
    x = rng.integers(-3, 4, shape).astype(np.float32)
    x[rng.random(shape) < 0.15] = -0.0
    for value, share in ((np.inf, 0.03), (-np.inf, 0.03), (np.nan, 0.03), (1e-45, 0.02), (-1e-40, 0.02)):
        x[rng.random(shape) < share] = value
    spread = rng.random(shape) < 0.4
    x[spread] = (rng.standard_normal(int(spread.sum())) * 2.0 ** rng.integers(-20, 20, int(spread.sum())))
    return x


def _bits(a, nan_as_one=False):
    """float32 bits (every NaN as one where the plain path's NumPy loops may pick another NaN's sign or payload)."""
    a = np.asarray(a, np.float32)
    return (np.where(np.isnan(a), np.float32(np.nan), a) if nan_as_one else a).view(np.int32)


def _masked(rng):
    g = _awkward(rng, (5, 16, 16, 32))              # from 2**15 elements the kernel serves
    keep = rng.random(g.shape) < 0.5
    return lambda speed: speed.masked(np, keep, g)


def _col2im(rng):
    gcols = _awkward(rng, (5, 4, 3, 3, 2, 3))
    return lambda speed: speed.col2im(gcols, np.zeros((5, 6, 6, 3), np.float32), 1, 2, 1, 1)


def _max_pool(rng):
    x = _awkward(rng, (5, 6, 8, 4)).transpose(0, 3, 1, 2)     # NCHW view of channels-last memory
    x[0, 0, :2, :2] = np.nan
    g = np.ascontiguousarray(_awkward(rng, (5, 4, 3, 4)))
    tiles = _ops._tiles(np, x, 2, 2, 0, 1, False, "NCHW")

    def run(speed):
        top = speed.tiles_max(np, x, tiles, "NCHW")
        return top, speed.tiles_max_grad(np, g, top, x, tiles, "NCHW")
    return run


def _depthwise(rng):
    x, w, g = _awkward(rng, (5, 7, 6, 3)), _awkward(rng, (3, 3, 3, 1)), _awkward(rng, (5, 4, 3, 3, 1))
    pads, steps = ((1, 1), (1, 1)), (2, 2, 1, 1)
    return lambda speed: (speed.depthwise(np, x, w, pads, 4, 3, *steps),
                          speed.depthwise_grad_x(np, g, w, 7, 6, pads, *steps))


def _gelu(rng):
    x, g = _awkward(rng, (7, 301)), _awkward(rng, (7, 301))
    x[0, :6] = [38.0, -38.0, 1e4, -1e4, 3.4e38, -3.4e38]
    return lambda speed: (speed.gelu(np, x, "none"), speed.gelu_grad(np, g, x, "none"))


def _layer_norm(rng):
    x, g = _awkward(rng, (3, 5, 131)), _awkward(rng, (3, 5, 131))
    x[0, 0] = 3.0                                   # a row of one value: variance 0
    x[0, 1] = rng.standard_normal(131).astype(np.float32)
    w, b = rng.standard_normal(131).astype(np.float32), rng.standard_normal(131).astype(np.float32)
    return lambda speed: (speed.layer_norm(np, x, w, b, 1, 1e-5), speed.layer_norm_grad(np, g, x, w, 1, 1e-5),
                          speed.layer_norm_grad_w(np, g, x, 1, 1e-5), speed.layer_norm(np, x, None, None, 1, 0.0))


def _stacked_matmul(rng):
    x, y = _awkward(rng, (5, 3, 6, 7)), _awkward(rng, (5, 3, 8, 7))
    return lambda speed: (speed.stacked_matmul(np, x, np.swapaxes(y, -1, -2)),
                          speed.stacked_matmul(np, np.swapaxes(x, -1, -2), x))


def _rounding(rng):
    """Results and gradients rounded into float16 and bfloat16 with their values kept (into new arrays, and in
    place): elementwise passes."""
    x = _awkward(rng, (5, 16, 16, 32))

    def run(speed):
        out = []
        for fmt, inplace in itertools.product((float16, bfloat16), (False, True)):
            codes, values = speed.round_result(x.copy() if inplace else x, fmt, False, True, inplace)
            storage, grad = speed.round_gradient(x.copy() if inplace else x, fmt, False, inplace)
            out += [codes, widen(codes) if values is None else values, widen(storage) if grad is None else grad]
        return tuple(out)
    return run


# op: (its arrays -> a run of it on the speed module or the plain path, whether NaNs may differ in sign or payload
# from the plain path's, as the serial kernels' tests allow)
CASES = {"masked": (_masked, False), "col2im": (_col2im, False), "max_pool": (_max_pool, False),
         "depthwise": (_depthwise, True), "gelu": (_gelu, False), "layer_norm": (_layer_norm, False),
         "stacked_matmul": (_stacked_matmul, False)}
if _speed.JIT:      # (without it the plain path rounds: the kernels write codes into storage arrays)
    CASES["rounding"] = (_rounding, False)


def _flat(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("op", CASES)
@pytest.mark.parametrize("threads", [2, 3])
def test_parts_on_threads_are_the_serial_kernels_and_the_plain_path(op, threads, parts):
    """Every kernel cut in parts: the same bits as the kernel whole (NaNs included) and as the plain path."""
    make, nan_free = CASES[op]
    run = make(np.random.default_rng(len(op) + threads))
    with np.errstate(all="ignore"):
        parts(1, 0)
        serial = _flat(run(_speed))
        assert parts.seen and all(name == threading.current_thread().name for *_, name in parts.seen)
        parts(threads, 0)
        split = _flat(run(_speed))
        plain = _flat(run(PLAIN))
    assert len(parts.seen) >= 2 * len(serial)      # every call (one per result) cut in parts
    for got, whole, want in zip(split, serial, plain):
        assert got.shape == whole.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(_bits(got), _bits(whole))
        assert np.array_equal(_bits(got, nan_free), _bits(want, nan_free))


@pytest.mark.parametrize("op", CASES)
def test_below_the_size_from_which_calls_are_cut_one_thread_runs(op, parts):
    """Under SPLIT_MIN every kernel runs whole on the calling thread, with the same bits (the rounding passes,
    on every op, call their machine code directly then)."""
    make, _ = CASES[op]
    run = make(np.random.default_rng(len(op)))
    with np.errstate(all="ignore"):
        parts(2, 0)
        split = _flat(run(_speed))
        parts(2, 1 << 40)
        whole = _flat(run(_speed))
    assert parts.seen if op != "rounding" else not parts.seen
    assert all(lo == 0 and name == threading.current_thread().name for lo, _, name in parts.seen)
    for a, b in zip(split, whole):
        assert np.array_equal(_bits(a), _bits(b))


@pytest.mark.skipif(not _speed.JIT, reason="2**17 elements through the Python loop: slow without the JIT")
def test_the_real_threshold(parts):
    """At SPLIT_MIN's own value: a masked gradient of SPLIT_MIN elements is cut, one a row shorter is not."""
    rng = np.random.default_rng(1)
    for size, cut in ((_speed.SPLIT_MIN, True), (_speed.SPLIT_MIN - 64, False)):
        g = _awkward(rng, (size // 64, 64))
        keep = rng.random(g.shape) < 0.5
        parts(2, _speed.SPLIT_MIN)
        got = _speed.masked(np, keep, g)
        assert (len(parts.seen) > 1) == cut
        assert np.array_equal(_bits(got), _bits(PLAIN.masked(np, keep, g)))


def test_the_pools_threads_sleep_between_calls(parts):
    """After a call cut in parts, the pool's threads wait on its queue: the process takes next to no CPU time
    while this thread sleeps for 0.2 s (a thread spinning in wait would take about 0.2 s of it)."""
    parts(2, 0)
    x = np.ones((8, 64), np.float32)
    _speed.layer_norm(np, x, None, None, 1, 1e-5)
    assert any(t.name.startswith("minifp-speed") and t.is_alive() for t in threading.enumerate())
    time.sleep(0.5)         # (OpenBLAS's threads spin for about 0.1 s after earlier tests' products)
    start = time.process_time()
    time.sleep(0.2)
    assert time.process_time() - start < 0.05


@pytest.mark.parametrize("threads", [2, 3])
def test_the_pool_takes_parts_while_this_thread_works(threads, monkeypatch):
    """Parts that take a while (here: sleep, as a nogil kernel lets the GIL go): the pool's threads take some, two
    ranges per thread in all, each range once, and the call returns when all have ended."""
    monkeypatch.setattr(_speed, "THREADS", threads)
    ran = []

    def part(lo, hi):
        time.sleep(0.02)
        ran.append((lo, hi, threading.current_thread().name))
    _speed.in_parts(part, 12, 1 << 40)
    cuts = [12 * i // (2 * threads) for i in range(2 * threads + 1)]
    assert sorted(r[:2] for r in ran) == list(zip(cuts, cuts[1:]))
    assert any(name.startswith("minifp-speed") for *_, name in ran)
    assert any(name == threading.current_thread().name for *_, name in ran)


def test_a_failing_part_raises_in_the_caller_after_every_part_is_done(monkeypatch):
    """An exception in a part on the pool reaches the caller, which returns only when all parts have ended."""
    monkeypatch.setattr(_speed, "THREADS", 2)
    ended = []

    def part(lo, hi):
        if lo == 0:
            raise ValueError("part 0")
        time.sleep(0.2 if lo == 1 else 0.02)    # (part 1 on the pool, long after part 0 has failed there)
        ended.append(hi)
    with pytest.raises(ValueError, match="part 0"):
        _speed.in_parts(part, 4, 1 << 40)
    assert sorted(ended) == [2, 3, 4]


def test_the_threads_allowed_follow_numba_and_openmp(monkeypatch):
    """THREADS: the smaller of NUMBA_NUM_THREADS and OMP_NUM_THREADS where set, else Numba's count."""
    for numba_threads, omp, want in (("2", "1", 1), ("1", "4", 1), ("3", None, 3), (None, "2", 2), ("x", "0", None)):
        for name, value in (("NUMBA_NUM_THREADS", numba_threads), ("OMP_NUM_THREADS", omp)):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        assert _speed._allowed_threads() == (want or _speed.numba.config.NUMBA_NUM_THREADS)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_makes_a_pool_of_its_own(parts):
    """The pool's threads do not survive a fork: the child forgets the pool and makes its own on first use."""
    parts(2, 0)
    _speed.layer_norm(np, np.ones((8, 64), np.float32), None, None, 1, 1e-5)
    assert _speed._POOL
    pid = os.fork()
    if pid == 0:        # the child: exit at once, its answer in the status
        try:
            fresh = not _speed._POOL
            out = _speed.layer_norm(np, np.ones((8, 64), np.float32), None, None, 1, 1e-5)
            os._exit(0 if fresh and _speed._POOL and not out.any() else 1)
        finally:
            os._exit(2)
    assert os.waitpid(pid, 0)[1] == 0


def test_stacks_of_products_openblas_would_split_stay_whole(parts):
    """Items above ONE_THREAD_GEMM run on OpenBLAS's own threads (whose split sets their low bits): never cut."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((4, 80, 80), dtype=np.float32), rng.standard_normal((4, 80, 80), dtype=np.float32)
    parts(2, 0)
    got = _speed.stacked_matmul(np, x, y)
    assert not parts.seen
    assert np.array_equal(_bits(got), _bits(np.matmul(x, y)))
    _speed.stacked_matmul(np, x[:, :40], y[:, :, :40])         # 40 * 40 * 80 items: cut
    assert len({lo for lo, *_ in parts.seen}) >= 2


_CALM = """
import os, sys, threading
import numpy as np
from minifp import _speed
a = np.random.default_rng(0).random((300, 300)).astype(np.float32)
before = a @ a
if sys.argv[1] == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait).start()
_speed.THREADS, _speed.SPLIT_MIN = 2, 1
_speed.in_parts(lambda lo, hi: None, 4, 1)          # the pool made: OpenBLAS told to spin less first
print(os.environ.get("OPENBLAS_THREAD_TIMEOUT"), np.array_equal(a @ a, before))
if sys.argv[1] == "thread":
    stop.set()
"""


@pytest.mark.parametrize("case, want", [("alone", "16 True"), ("set", "28 True"), ("thread", "None True")])
def test_openblas_is_told_to_spin_less_when_the_pool_starts(case, want):
    """The pool's first use has OpenBLAS's idle threads sleep after 2**16 cycles (OPENBLAS_THREAD_TIMEOUT, read
    again): not where the user set it, nor with another Python thread alive (its GEMM could be under way); GEMMs
    give the same bits after it."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env.update({"OPENBLAS_NUM_THREADS": "2"}, **({"OPENBLAS_THREAD_TIMEOUT": "28"} if case == "set" else {}))
    out = subprocess.run([sys.executable, "-c", _CALM, case], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == want.split()


_SET = """
import numpy as np
import minifp.torch as torch
from minifp import _speed
x = np.random.default_rng(0).standard_normal((64, 2048)).astype(np.float32)
_speed.SPLIT_MIN = 1 << 16
out = []
for n in (1, 3, 2):
    torch.set_num_threads(n)
    cut = []
    whole = _speed.in_parts
    _speed.in_parts = lambda part, m, work: whole(lambda lo, hi: cut.append(lo) or part(lo, hi), m, work)
    y = _speed.relu(np, x)
    _speed.in_parts = whole
    pool = _speed._POOL[0]._max_workers if _speed._POOL else 0
    out.append((torch.get_num_threads(), _speed.blas_threads(), len(cut), pool, y.tobytes() == out[0][4] if out else y.tobytes()))
print([o[:4] for o in out], all(o[4] is True for o in out[1:]))
"""


def test_set_num_threads_moves_the_parts_and_openblas():
    """torch.set_num_threads(n): the kernels' parts on n threads (a pool of n - 1, made again), OpenBLAS's threads
    n where its call is found (None elsewhere), the bits the same at every count."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _SET], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "2"})
    assert out.returncode == 0, out.stderr[-2000:]
    counts, same = out.stdout.rsplit(" ", 1)
    blas = None if _speed.blas_threads() is None else True
    want = [(1, blas and 1, 1, 0), (3, blas and 3, 6, 2), (2, blas and 2, 4, 1)]
    assert counts == str(want) and same.strip() == "True"

"""Grad mode, autocast and its cast cache, the monitor and the layer scope belong to one thread each."""
import sys
import threading

import numpy as np
import pytest

import minifp as mf
import minifp.torch as torch
from minifp import numerics
from minifp._state import STATE


def in_other_thread(hold, body):
    """Run `hold(entered, release)` in a second thread; once it has entered its block, run body() here."""
    entered, release, errors = threading.Event(), threading.Event(), []

    def run():
        try:
            hold(entered, release)
        except BaseException as e:      # noqa: BLE001  (reported below, in the main thread)
            errors.append(e)
            entered.set()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert entered.wait(10), "the other thread never entered its block"
        return body()
    finally:
        release.set()
        thread.join(10)
        assert not errors, errors


def test_no_grad_in_one_thread_leaves_another_recording():
    def hold(entered, release):
        with mf.no_grad():
            entered.set()
            release.wait(10)
            assert not (mf.tensor([1.0], requires_grad=True) * 2).requires_grad

    def body():
        w = mf.tensor([3.0], requires_grad=True)
        (w * w).sum().backward()
        return w.grad.item()

    assert in_other_thread(hold, body) == 6.0


def test_autocast_and_its_cache_stay_in_their_thread():
    w = torch.ones((4, 4), device="cuda", requires_grad=True)
    x = torch.full((2, 4), 1 + 2**-12, device="cuda")

    def hold(entered, release):
        with torch.autocast("cuda", dtype=torch.float16):
            y = x @ w
            entered.set()
            release.wait(10)
            assert y.dtype == torch.float16 and len(STATE.cast_cache) == 1

    def body():
        y = x @ w                       # float32 here, whatever the other thread has entered
        return y.dtype, y.detach().numpy()[0, 0], len(STATE.cast_cache), STATE.autocast

    dtype, value, cached, active = in_other_thread(hold, body)
    assert dtype == torch.float32 and value == np.float32(4 * (1 + 2**-12)) and cached == 0 and active is None


def test_a_monitor_counts_only_its_own_threads_ops():
    def hold(entered, release):
        with numerics.watch() as report:
            entered.set()
            release.wait(10)
        assert report.total("overflow") == 0 and not report.counts

    def body():
        return (mf.tensor([300.0], dtype="float16") ** 2).item()     # overflows, in this thread only

    assert in_other_thread(hold, body) == np.inf


def test_the_layer_scope_stays_in_its_thread():
    seen = {}

    class Blocking(torch.nn.Module):
        def forward(self, x):
            entered.set()
            release.wait(10)
            return x * 2

    entered, release = threading.Event(), threading.Event()
    layer = Blocking()
    thread = threading.Thread(target=lambda: seen.setdefault("out", layer(torch.tensor([1.0]))))
    thread.start()
    try:
        assert entered.wait(10)
        with numerics.watch() as report:
            (mf.tensor([1e-8], dtype="float16") * 1e-3).item()
        seen["layers"] = {key[0] for key in report.counts}
        seen["here"] = STATE.layer
    finally:
        release.set()
        thread.join(10)
    assert seen["layers"] == {None} and seen["here"] is None and seen["out"].item() == 2.0


def test_state_lives_in_one_object_changed_only_by_context_managers():
    assert (STATE.grad_enabled, STATE.autocast, STATE.monitors, STATE.layer) == (True, None, (), None)
    with mf.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), numerics.watch() as report:
        assert (STATE.grad_enabled, STATE.autocast.fmt, STATE.monitors) == (False, mf.bfloat16, (report,))
        with mf.enable_grad():
            assert mf.is_grad_enabled()
    assert (STATE.grad_enabled, STATE.autocast, STATE.monitors, STATE.layer) == (True, None, (), None)


def together(n, body):
    """body() in n threads let go at once (a barrier); their results, in thread order."""
    barrier, results, errors = threading.Barrier(n), [None] * n, []

    def run(i):
        try:
            barrier.wait(10)
            results[i] = body()
        except BaseException as e:      # noqa: BLE001  (reported below, in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return results


@pytest.fixture
def switch_often():
    """Threads switch every microsecond, not every 5 ms: races show in every run, not one in three."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def test_threads_first_calling_a_layer_build_it_once(switch_often):
    from minifp import keras
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    for _ in range(20):
        layer = keras.layers.Dense(8)
        outs = together(6, lambda: layer(x).numpy())
        assert len(layer.weights) == 2 and layer.kernel.shape == (4, 8)
        assert all(np.array_equal(out, outs[0]) for out in outs)
        assert np.array_equal(layer(x).numpy(), outs[0])


def test_threads_first_calling_attention_build_it_once(switch_often):
    from minifp import keras
    q = np.linspace(-1, 1, 24, dtype=np.float32).reshape(1, 3, 8)
    for _ in range(10):
        layer = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)      # builds inside call()
        outs = together(6, lambda: layer(q, q).numpy())
        assert len(layer.weights) == 8
        assert all(np.array_equal(out, outs[0]) for out in outs)


def test_threads_first_naming_one_integer_seed_share_its_stream(switch_often):
    x = np.float32(1 + np.arange(1, 257) * 2**-16)          # between bfloat16 neighbours: each draw decides
    for seed in range(1000, 1040):                          # streams not yet started
        one = np.random.default_rng(seed)                   # one thread drawing twice from that stream
        expected = {mf.round_to(x, mf.bfloat16, mode="stochastic", rng=one).tobytes() for _ in range(2)}
        got = together(2, lambda: mf.round_to(x, mf.bfloat16, mode="stochastic", rng=seed).tobytes())
        assert len(expected) == 2 and set(got) == expected

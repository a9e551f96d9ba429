"""The fp8 recipe (minifp.fp8_autocast, minifp.DelayedScaling): Transformer Engine's defaults and update rule on
hand-computed cases, quantisation bit for bit, GEMMs and their gradients against a NumPy reference of the same
quantisation, the monitor's records, errors, and a short training run in which scaling wins."""
import re

import numpy as np
import pytest

import minifp as mf
from minifp import _fp8, _speed
from minifp._seams import PLAIN
from minifp._fp8 import E4M3, E5M2, update_scaling
from minifp._rounding import round_to, widen

F32 = np.float32


def q(v, fmt):
    """NumPy reference: float32 v rounded (nearest-even, saturating) into fmt, as float32 values."""
    return widen(round_to(np.asarray(v, F32), fmt), fmt)


# -- the recipe as a value -----------------------------------------------------------------------------------


def test_defaults_are_transformer_engines():
    r = mf.DelayedScaling()         # transformer_engine/common/recipe/__init__.py, DelayedScaling
    assert (r.margin, r.fp8_format, r.amax_history_len, r.amax_compute_algo, r.scaling_factor_compute_algo,
            r.reduce_amax) == (0, mf.Fp8Format.HYBRID, 1024, "max", None, True)
    assert (mf.Fp8Format.HYBRID.max_fwd, mf.Fp8Format.HYBRID.max_bwd) == (448, 57344)
    assert (mf.Fp8Format.E4M3.max_fwd, mf.Fp8Format.E4M3.max_bwd) == (448, 448)
    assert mf.Fp8Format.HYBRID.forward == mf.float8_e4m3.__class__(4, 3, infinities=False, overflow="saturate")
    assert mf.finfo(E4M3).max == 448 and mf.finfo(E5M2).max == 57344
    assert mf.DelayedScaling(margin=1) == mf.DelayedScaling(margin=1) != mf.DelayedScaling()
    with pytest.raises(Exception):
        mf.DelayedScaling().margin = 1          # frozen: a value


@pytest.mark.parametrize("kwargs, message", [
    ({"margin": 0.5}, "margin must be an integer, got 0.5"),
    ({"margin": -1}, "margin must be an integer >= 0 (scales are divided by 2**margin"),
    ({"amax_history_len": 0}, "amax_history_len must be an integer >= 1, got 0"),
    ({"amax_compute_algo": "mean"}, "amax_compute_algo must be 'max', 'most_recent' or a function"),
    ({"fp8_format": "E5M2"}, "fp8_format must be Fp8Format.HYBRID or Fp8Format.E4M3, got 'E5M2'"),
    ({"fp8_format": mf.Fp8Format.E5M2}, "fp8_format must be Fp8Format.HYBRID or Fp8Format.E4M3, got "
                                        "Fp8Format.E5M2 (pure E5M2 training is not supported"),
    ({"scaling_factor_compute_algo": 2}, "scaling_factor_compute_algo must be None or a function"),
    ({"reduce_amax": 1}, "reduce_amax must be True or False, got 1"),
])
def test_recipe_errors_name_the_argument(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=re.escape(message)):
        mf.DelayedScaling(**kwargs)


def test_autocast_errors():
    with pytest.raises(TypeError, match="enabled must be True or False, got 1"):
        mf.fp8_autocast(enabled=1)
    with pytest.raises(TypeError, match="pass the recipe once"):
        mf.fp8_autocast(fp8_recipe=mf.DelayedScaling(), recipe=mf.DelayedScaling())
    with pytest.raises(TypeError, match="must be a minifp.DelayedScaling, got str"):
        mf.fp8_autocast(recipe="hybrid")


# -- the update rule (TE's delayed_scaling.cu), hand-computed ------------------------------------------------


def test_update_max_rolls_and_scales():
    h, s = update_scaling([0.5, 1, 2, 4], 1.0, 448, mf.DelayedScaling(amax_history_len=4))
    assert h.tolist() == [0, 2, 4, 0.5]         # roll by -1 (the oldest, h[1], drops out), then h[0] = 0
    assert s == 112 and s.dtype == F32          # 448 / max(history)


def test_update_most_recent_and_margin():
    r = mf.DelayedScaling(amax_history_len=4, amax_compute_algo="most_recent", margin=2)
    h, s = update_scaling([0.5, 1, 2, 4], 1.0, 448, r)
    assert s == 448 / 0.5 / 4 and h.tolist() == [0, 2, 4, 0.5]


def test_update_keeps_scale_for_zero_and_nonfinite_amax():
    r = mf.DelayedScaling(amax_history_len=2)
    assert update_scaling([0, 0], 3.0, 448, r)[1] == 3
    assert update_scaling([np.inf, 1], 3.0, 448, r)[1] == 3
    assert update_scaling([np.nan, 2], 3.0, 448, r)[1] == 224          # fmaxf skips the NaN
    assert update_scaling([1e-40, 0], 3.0, 448, r)[1] == np.finfo(F32).max     # 448 / 1e-40 overflows float32


def test_update_is_float32_division():
    h, s = update_scaling([3.0], 1.0, 57344, mf.DelayedScaling(amax_history_len=1))
    assert h.tolist() == [0] and s == F32(57344) / F32(3)
    for amax in np.random.default_rng(0).uniform(1e-30, 1e30, 1000).astype(F32):
        assert update_scaling([amax], 1.0, 448, mf.DelayedScaling(amax_history_len=1, margin=3))[1] == \
            F32(448 * 2.0**-3) / amax


def test_update_with_functions():
    r = mf.DelayedScaling(amax_history_len=3, amax_compute_algo=lambda h: h.min(),
                          scaling_factor_compute_algo=lambda amax, scale, fp8_max, recipe: scale * 2)
    h, s = update_scaling([1, 2, 3], 1.5, 448, r)
    assert s == 3 and h.tolist() == [0, 3, 1]


# -- quantisation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [E4M3, E5M2])
def test_quantise_bit_for_bit(fmt):
    rng = np.random.default_rng(1)
    n = 200_000
    bits = (rng.integers(0, 2, n, dtype=np.uint32) << 31) | (rng.integers(0, 255, n, dtype=np.uint32) << 23) \
        | rng.integers(0, 1 << 23, n, dtype=np.uint32)
    ties = np.arange(-5000, 5000, dtype=F32) * F32(2.0**-12)        # halfway cases of every small binade
    v = np.concatenate([bits.view(F32), ties, F32([np.inf, -np.inf, np.nan, 0, -0.0, 448, 464, 465, 5e4, 6.2e4])])
    want = q(v, fmt)
    same = lambda a: ((a.view(np.uint32) == want.view(np.uint32)) | (np.isnan(a) & np.isnan(want))).all()
    assert same(_fp8._fp8_values(v.copy(), fmt))
    out = np.empty_like(v)
    _speed._quantize_kernel(v, F32(1), *_fp8.CONSTANTS[fmt], out)
    assert same(out)
    assert same(_speed.quantized(np, v, F32(1), fmt)) and same(PLAIN.quantized(np, v, F32(1), fmt))
    assert _fp8._amax(np, F32([1, -3, np.nan, 2])) == 3 and _fp8._amax(np, F32([np.nan])) == 0


def test_saturates_and_flushes():
    assert q([1000, -1000, np.inf], E4M3).tolist() == [448, -448, 448]
    assert q([1e5, 2.0**-18], E5M2).tolist() == [57344, 0]


# -- GEMMs against a NumPy reference of the same quantisation ------------------------------------------------


def _reference_linear(x, w, b, sx, sw):
    qx, qw = q(x * sx, E4M3), q(w * sw, E4M3)
    return (qx @ qw.T) * (F32(1) / sx * (F32(1) / sw)) + b, qx, qw


def test_linear_forward_and_backward_match_reference():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 5)).astype(F32)
    w = mf.tensor(rng.standard_normal((4, 5)).astype(F32) * 0.1, requires_grad=True)
    b = mf.tensor(rng.standard_normal(4).astype(F32), requires_grad=True)
    xt = mf.tensor(x, requires_grad=True)
    g = rng.standard_normal((6, 4)).astype(F32) * 1e-3
    recipe = mf.DelayedScaling(amax_history_len=2)
    for step in range(3):
        state = _fp8.scaling_state(w)
        sx, sw, sg = (F32(1), F32(1), F32(1)) if state is None else \
            (F32(state["input"][1]), F32(state["weight"][1]), F32(state["grad_output"][1]))
        with mf.fp8_autocast(fp8_recipe=recipe):
            y = mf.linear(xt, w, b)
        want, qx, qw = _reference_linear(x, w.float32(), b.float32(), sx, sw)
        assert y.fmt == mf.float32 and np.array_equal(y.float32(), want.astype(F32))
        xt.grad = w.grad = b.grad = None
        y.backward(g)
        qg = q(g * sg, E5M2)
        assert np.array_equal(xt.grad.float32(), (qg @ qw) * (F32(1) / sg * (F32(1) / sw)))
        assert np.array_equal(w.grad.float32(), (qg.T @ qx) * (F32(1) / sg * (F32(1) / sx)))
        assert np.array_equal(b.grad.float32(), g.sum(0))              # from the unquantised gradient
        if step == 0:       # the first step used scale 1; then each role's scale is fp8_max / its amax
            state = _fp8.scaling_state(w)
            assert state["input"][1] == F32(448) / np.abs(x).max()
            assert state["weight"][1] == F32(448) / np.abs(w.float32()).max()
            assert state["grad_output"][1] == F32(57344) / np.abs(g).max()
            assert state["input"][0].tolist() == [0, np.abs(x).max()]


def test_output_in_compute_dtype_and_conv_and_matmul():
    rng = np.random.default_rng(3)
    x = mf.tensor(rng.standard_normal((2, 3, 5, 5)), dtype="bfloat16")
    w = mf.tensor(rng.standard_normal((4, 3, 3, 3)) * 0.2, dtype="bfloat16", requires_grad=True)
    b = mf.tensor(rng.standard_normal(4), dtype="bfloat16", requires_grad=True)
    with mf.fp8_autocast():
        y = mf.conv2d(x, w, b, padding=1)
    assert y.fmt == mf.bfloat16
    qx, qw = q(x.float32(), E4M3), q(w.float32(), E4M3)        # first step: scale 1
    with mf.no_grad():
        ref = mf.conv2d(mf.tensor(qx), mf.tensor(qw), None, padding=1).float32() + b.float32()[:, None, None]
    assert np.array_equal(y.float32(), widen(round_to(ref, mf.bfloat16), mf.bfloat16))
    y.sum().backward()
    assert w.grad is not None and b.grad is not None
    a, c = mf.tensor(rng.standard_normal((3, 4))), mf.tensor(rng.standard_normal((4, 2)))
    with mf.fp8_autocast(enabled=False):
        assert np.array_equal(mf.matmul(a, c).float32(), a.float32() @ c.float32())
    with mf.fp8_autocast():
        assert np.array_equal(mf.matmul(a, c).float32(), q(a.float32(), E4M3) @ q(c.float32(), E4M3))


def test_forward_scales_update_at_exit_only_in_grad_mode():
    w = mf.tensor(np.full((2, 2), 2.0, F32), requires_grad=True)
    x = mf.tensor(np.full((1, 2), 4.0, F32))
    with mf.no_grad(), mf.fp8_autocast():
        mf.linear(x, w)
    assert _fp8.scaling_state(w)["weight"][1] == 1       # evaluation changes no scale
    with mf.fp8_autocast():
        mf.linear(x, w)
        assert _fp8.scaling_state(w)["weight"][1] == 1   # delayed: not before the block ends
    assert _fp8.scaling_state(w)["weight"][1] == 224 and _fp8.scaling_state(w)["input"][1] == 112


def test_monitor_sees_scales_and_flushes():
    w = mf.tensor(np.full((3, 4), 0.5, F32), requires_grad=True)
    x = mf.tensor(np.full((2, 4), 2.0**-12, F32))     # below e4m3's smallest subnormal 2**-9: flushes at scale 1
    with mf.numerics.watch() as report, mf.fp8_autocast():
        y = mf.linear(x, w)
    stat = report.fp8[(None, "input")]
    assert (stat.underflow, stat.total, stat.scale) == (8, 8, 1.0) and stat.amax == 2.0**-12
    assert report.total("underflow", "forward") == 8 and np.all(y.float32() == 0)
    assert "input" in report.fp8_summary()
    with mf.numerics.watch() as report, mf.fp8_autocast():
        mf.linear(x, w)                                 # the scale is now 448 / 2**-12: nothing flushes
    assert report.fp8[(None, "input")].underflow == 0


# -- training -----------------------------------------------------------------------------------------------------


def test_scaled_training_beats_unscaled():
    """70 steps of batch 256 (the demo's MLP, PyTorch face): with e4m3 gradients at scale 1 training fails, with
    delayed scaling it learns; the monitor saw the unscaled run flush gradients."""
    from minifp import demos
    scaled, _, seen = demos.fp8_training("fp8 E4M3, delayed scaling", epochs=10)
    unscaled, _, lost = demos.fp8_training("fp8 E4M3, scale 1", epochs=10)
    assert scaled > 0.9 and unscaled < 0.5, (scaled, unscaled)
    flushed = lambda r: sum(s.underflow for (_, role), s in r.fp8.items() if role == "grad_output")
    assert flushed(lost) > 1000 and flushed(seen) < flushed(lost) / 10
    assert "fp8" in demos.DEMOS


def test_cli_trains_under_the_recipe():
    from minifp import cli
    row = cli.train("mixed_bfloat16", epochs=1, verbose=0, fp8=True)
    assert row["policy"] == "mixed_bfloat16 + fp8" and row["accuracy"] > 0.3
    assert "mixed_bfloat16 + fp8" in cli.report_table([row])
    with pytest.raises(TypeError, match="fp8 must be True or False"):
        cli.train("mixed_bfloat16", epochs=1, fp8="yes")

"""The numerics monitor on the faces' layers, the testing helpers and the literature's underflow result."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifp as mf
from minifp import keras
from minifp._digits import under_policy
from minifp.demos import activation_grad_histogram, beam_regression
from minifp.numerics import watch
from minifp.testing import assert_no_overflow, assert_no_underflow, values



@pytest.mark.endtoend
@pytest.mark.parametrize("seed", [0, 1])
def test_an_mse_loss_underflows_in_float16_by_itself_and_grad_scaler_cures_it(seed):
    import minifp.torch as torch
    rmse32, _, report32 = beam_regression(None, seed=seed)
    rmse16, _, report16 = beam_regression(torch.float16, seed=seed)
    rmse_scaled, scales, _ = beam_regression(torch.float16, scaled=True, seed=seed)
    rmse_bf16, _, report_bf16 = beam_regression(torch.bfloat16, seed=seed)
    assert rmse32[-1] < 1.05e-5                            # down to the gauges' 10 um noise
    assert rmse16[-1] > 5 * rmse32[-1]                     # float16 without scaling stalls (~64 um)...
    assert abs(rmse16[5] / rmse32[5] - 1) < 0.01           # ...after following float32 while the errors were large,
    assert max(rmse16[-5:]) < 1.01 * min(rmse16[-5:])      # and stays there: a stall, not a divergence
    assert rmse_scaled[-1] < 1.01 * rmse32[-1] and rmse_bf16[-1] < 1.1 * rmse32[-1]
    assert scales[-1] == 2.0**16                           # GradScaler's default start, never an inf to halve it
    # In the last step every output gradient dL/dy = 2 (y - t) / (256 * 64) flushed to zero in float16, at the cast
    # back from the float32 loss; float32's own gradients there are all below 2**-25, and times 2**16 almost none are.
    assert report16.total("underflow", "backward") == 256 * 64 and report16.layers("underflow", "backward") == ["MSELoss"]
    assert report32.total("underflow") == 0 and report_bf16.total("underflow", "backward") == 0
    h = activation_grad_histogram(report32, "Linear")      # the model's output
    assert h.total == 256 * 64 and h.share_flushed(mf.float16) == 1.0 and h.share_flushed(mf.float16, 2**16) < 1e-3


def test_first_overflow_names_the_layer():
    with under_policy("mixed_float16"):
        model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="relu", name="d0"),
                                  keras.layers.Dense(3, name="d1"),
                                  keras.layers.Activation("softmax", dtype="float32", name="out")], name="m")
    x = np.ones((5, 6), np.float32)
    d0, d1 = model.layers[0], model.layers[1]
    d1.kernel.assign(np.full(d1.kernel.shape, 4e4, np.float32))
    d0.kernel.assign(np.abs(d0.kernel.numpy()) + 1)
    with watch(model) as report:
        model(x)
    event = report.first_overflow
    assert (event.layer, event.op, event.direction) == ("m.d1", "linear", "forward")
    assert event.count == 15                               # every one of the 5 x 3 outputs
    assert report.total("overflow", "forward", layer="m.d1") == 15
    assert "first overflow: linear in layer m.d1, forward: 15 values" in report.summary()


def test_the_monitor_names_a_torch_modules_layers():
    import minifp.torch as torch
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3)).cuda()
    with torch.no_grad():
        model[0].weight.fill_(1.0)                         # hidden units ~6 whatever the init (and the seed)
        model[2].weight.fill_(4e4)
    x = torch.ones((5, 6), device="cuda")
    with watch(model) as report, torch.autocast("cuda", dtype=torch.float16):
        model(x)
    assert report.first_overflow.layer.endswith("2") and report.first_overflow.direction == "forward"


def test_counts_fused_and_array_paths_agree():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10_000) * np.exp2(rng.integers(-30, 20, 10_000))).astype(np.float32)
    x[:3] = [np.nan, 70000.0, 1e-9]
    for fmt in (mf.float16, mf.bfloat16, mf.float8_e4m3, mf.Format(4, 3, infinities=False, overflow="saturate")):
        fused, other = np.zeros(4, np.int64), np.zeros(4, np.int64)
        a = mf.round_to(x, fmt, counts=fused)
        b = mf.round_to(x, fmt)
        other += mf.numerics.count_rounding(x, b, fmt)
        assert np.array_equal(fused, other) and fused[3] == 1
        assert np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
    with np.errstate(all="ignore"):
        wide = np.abs(x.astype(np.float64))
        h = mf.float16
        expected = [(np.isfinite(wide) & (wide >= 65520)).sum(), ((wide != 0) & (wide <= 2.0**-25)).sum()]
    counts = np.zeros(4, np.int64)
    mf.round_to(x, h, counts=counts)
    assert counts[:2].tolist() == expected


def test_histograms_and_shares():
    x = mf.tensor(np.exp2(np.arange(-30, 0, dtype=np.float32)))      # one value per exponent -30..-1
    with watch(histograms=True) as report:
        layer = keras.layers.Activation("linear")
        layer(x)
    h = report.histogram("Activation", "activation")
    assert h.total == 30 and h.counts[h.exponents == -30].item() == 1
    # float16 flushes values up to 2**-25 (the tie goes to 0): exponents -30..-25, 6 of 30; a loss scale of
    # 2**3 saves 3 of them.
    assert h.share_flushed(mf.float16) == 6 / 30 and h.share_flushed(mf.float16, scale=8) == 3 / 30
    assert h.share_flushed(mf.bfloat16) == 0.0
    # The largest value is 2**-1: times 2**16 it is 2**15 (fits), times 2**17 it is 2**16 > 65504.
    assert h.share_overflow(mf.float16, scale=2.0**16) == 0 and h.share_overflow(mf.float16, scale=2.0**17) == 1 / 30


def test_monitor_off_counts_nothing():
    assert not mf._state.STATE.monitors
    with watch() as report:
        pass
    (mf.tensor([256.0], dtype="float16") ** 2).item()
    assert report.counts == {}


def test_assert_helpers():
    assert_no_overflow(lambda x: x * 2, np.array([1000.0]), dtype="float16")
    with pytest.raises(AssertionError, match=r"1 values overflowed: mul \(forward, layer -\): 1"):
        assert_no_overflow(lambda x: x * 100, np.array([1000.0]), dtype="float16")
    with pytest.raises(AssertionError, match="underflowed to zero"):
        assert_no_underflow(lambda x: x * 1e-5, np.array([1e-4]), dtype="float16")
    with pytest.raises(AssertionError, match=r"backward"):
        assert_no_underflow(lambda x: (x * 1e-4).sum() * 1e-4, np.array([1.0, 2.0]), dtype="float16",
                            backward=True)
    assert_no_underflow(lambda x: x * 1e-5, np.array([1e-4]), dtype="bfloat16")


@settings(max_examples=200, deadline=None)
@given(values(mf.float16))
def test_values_are_representable_and_round_trip(v):
    assert np.isfinite(v) and float(np.float16(v)) == v
    assert mf.tensor([v], dtype="float16").item() == v


CUSTOM = [mf.Format(3, 4), mf.Format(4, 3, subnormals=False), mf.Format(5, 0, subnormals=False, infinities=False, signed=False),
          mf.Format(4, 3, infinities=False, nan="negzero", subnormals=False), mf.Fixed(8, 10), mf.Fixed(6, -2)]


@pytest.mark.parametrize("fmt", list(mf.FORMATS.values()) + CUSTOM, ids=str)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_values_draws_only_values_of_the_format(fmt, data):
    v = data.draw(values(fmt, allow_nan=True, allow_infinity=True))
    back = float(mf.round_to(np.float32([v]), fmt).astype(np.float64)[0])
    assert (np.isnan(v) and np.isnan(back)) or (back == v and np.signbit(back) == np.signbit(v)), (v, back)


@pytest.mark.parametrize("fmt", [f for f in list(mf.FORMATS.values()) + CUSTOM if f.bits <= 8], ids=str)
def test_values_edges_are_checked_against_every_code(fmt):
    from minifp.testing import _holds
    decoded = fmt.decode(np.arange(1 << fmt.bits))
    held = {(v, np.signbit(v)) for v in decoded.tolist() if not np.isnan(v)}
    if fmt.nan == "negzero":        # no -0 (decode gives it to a flushed subnormal's code when subnormals=False)
        held.discard((0.0, True))
    finite = np.unique(np.abs(decoded[np.isfinite(decoded)]))
    candidates = np.concatenate([finite, (finite[1:] + finite[:-1]) / 2, [0.0, 1.0, np.inf]])
    for v in np.concatenate([candidates, -candidates]).tolist():
        assert _holds(fmt, v) == ((v, np.signbit(v)) in held), v


@settings(max_examples=100, deadline=None)
@given(values(mf.float8_e4m3, allow_nan=True))
def test_e4m3_values_have_no_infinities(v):
    assert not np.isinf(v) and (np.isnan(v) or abs(v) <= 448)

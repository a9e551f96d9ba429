"""Mixed precision through the faces: the engine's loss-scale state machine, GradScaler (minifp.torch) and
tf.keras's LossScaleOptimizer (minifp.tf) on the same training, the engine's autocast and its cast cache.

What each face does on its own (PyTorch's GradScaler scenarios and messages, Keras 3 / tf.keras LossScaleOptimizer
trajectories, autocast dtype lists, policies) is tested in tests/torch and tests/keras against recorded fixtures.
"""
import numpy as np
import pytest

import minifp as mf
import minifp.torch as torch
from minifp import _speed
from minifp._loss_scale import DynamicLossScale, all_finite
from minifp._seams import PLAIN
from minifp.tf import keras as tf_keras


def param(values, dtype=torch.float32):
    """A parameter on the emulated cuda device (torch.autocast("cuda") casts only cuda tensors)."""
    return torch.nn.Parameter(torch.tensor(np.asarray(values, np.float32), device="cuda").to(dtype))


def finite_step(scaler, opt, p, grad=1.0):
    scaler.scale(torch.ones(1))              # as PyTorch, a scaler scales before it unscales
    p.grad = torch.full(tuple(p.shape), grad * scaler.get_scale(), device="cuda")
    scaler.step(opt)
    scaler.update()


# -- the engine's state machine -----------------------------------------------------------------------------


def test_dynamic_loss_scale_is_data():
    s = DynamicLossScale(8.0, period=2)
    s1 = s.adjust(True)
    assert (s.loss_scale, s.counter) == (8.0, 0) and (s1.loss_scale, s1.counter) == (8.0, 1)
    s2 = s1.adjust(True)
    assert (s2.loss_scale, s2.counter) == (16.0, 0)
    assert s2.adjust(False).loss_scale == 8.0
    assert DynamicLossScale(1.0, min_loss_scale=1.0).adjust(False).loss_scale == 1.0
    assert all_finite([mf.tensor([1.0]), None, np.ones(3)]) and not all_finite([np.array([np.nan])])


@pytest.mark.parametrize("divide", [False, True])
@pytest.mark.parametrize("factor", [2.0**-16, 3.0, 0.1, 2.0**126, 0.0, np.inf])
@pytest.mark.parametrize("bad", [None, np.inf, -np.inf, np.nan])
def test_unscaled_is_numpys_product_or_quotient_and_finite_check(divide, factor, bad):
    rng = np.random.default_rng(7)
    values = (rng.standard_normal(1000) * 2.0 ** rng.integers(-140, 120, 1000)).astype(np.float32)
    values[:4] = [0.0, -0.0, np.float32(2**-149), np.finfo(np.float32).max]
    if bad is not None:
        values[500] = bad
    f = np.float32(factor)
    with np.errstate(all="ignore"):
        expected = values / f if divide else values * f
    results = {"the plain path": PLAIN.unscaled(values, factor, divide), "the kernel": _speed.unscaled(values, factor, divide),
               "strided (NumPy's path)": _speed.unscaled(np.repeat(values, 2)[::2], factor, divide)}
    if not divide:
        results["in place (unscale_'s loop)"] = _in_place(values, f)
    for name, (out, finite) in results.items():
        assert out.dtype == np.float32 and np.array_equal(out.view(np.uint32), expected.view(np.uint32)), name
        assert finite is (bad is None), name


def _in_place(values, factor):
    out = values.reshape(10, -1).copy()
    with np.errstate(all="ignore"):
        return out.reshape(-1), bool(_speed.times_in_place(out, factor))


# -- GradScaler (minifp.torch) --------------------------------------------------------------------------------


@pytest.mark.parametrize("view", ["plain", "transposed", "sliced"])
@pytest.mark.parametrize("bad", [None, np.inf, np.nan])
def test_unscale_finds_inf_and_nan(view, bad):
    g = np.full((20, 20), 4.0, np.float32)
    if bad is not None:
        g[2, 2] = bad
    big = np.full((40, 40), 4.0, np.float32)
    big[4, 4] = g[2, 2]
    grad = {"plain": g, "transposed": g.T, "sliced": big[::2, ::2]}[view]
    p = param(np.zeros((20, 20)))
    p.grad = torch.tensor(grad, device="cuda")
    opt = torch.optim.SGD([p], lr=0.0)
    s = torch.amp.GradScaler("cuda", init_scale=4.0)
    s.scale(torch.ones(1))
    s.unscale_(opt)
    s.step(opt)
    s.update()
    if bad is None:
        assert not s.last_step_skipped and np.array_equal(p.grad.numpy(), np.ones((20, 20), np.float32))
    else:
        assert s.last_step_skipped and s.first_nonfinite == "param_groups[0]['params'][0] of shape (20, 20)"


def test_skipped_step_matches_float32_run_without_it():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(5).astype(np.float32) for _ in range(4)]
    w0 = rng.standard_normal(5)

    p = param(w0)
    opt = torch.optim.Adam([p], lr=0.1)
    s = torch.amp.GradScaler("cuda", init_scale=128.0, growth_factor=2.0, growth_interval=1)
    for i, g in enumerate(grads):
        scaled = g * np.float32(s.get_scale())
        if i == 1:
            scaled[3] = np.inf
        s.scale(torch.ones(1))
        p.grad = torch.tensor(scaled, device="cuda")
        s.step(opt)
        s.update()
    assert s.get_scale() == 512.0
    assert [h["skipped"] for h in s.history] == [False, True, False, False]

    q = param(w0)
    ref = torch.optim.Adam([q], lr=0.1)
    for i, g in enumerate(grads):
        if i != 1:
            q.grad = torch.tensor(g, device="cuda")
            ref.step()
    assert np.array_equal(p.detach().numpy(), q.detach().numpy())
    for a, b in zip(opt.state_dict()["state"].values(), ref.state_dict()["state"].values()):
        assert all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def test_growth_refused_when_not_finite():
    p = param([1.0])
    s = torch.amp.GradScaler("cuda", init_scale=1e38, growth_factor=16.0, growth_interval=1)
    finite_step(s, torch.optim.SGD([p], lr=0.0), p, grad=0.0)
    assert s.get_scale() == float(np.float32(1e38))


def test_float16_gradients_refused_by_gradscaler_accepted_by_tf_keras_lso():
    p = param([1.0], torch.float16)
    p.grad = torch.tensor([2.0], dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler = torch.amp.GradScaler("cuda")
        scaler.scale(torch.ones(1))
        scaler.unscale_(torch.optim.SGD([p]))
    lso = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.SGD(1.0), dynamic=False, initial_scale=2)
    (g,) = lso.get_unscaled_gradients([mf.tensor([4.0], dtype="float16")])
    assert g.dtype == mf.float16 and g.item() == 2.0


def test_half_weights_show_swamping():
    # w = 1 with update 2**-12: a float32 weight moves, a float16 weight cannot.
    for dtype, moved in ((torch.float32, True), (torch.float16, False)):
        p = param([1.0], dtype)
        opt = torch.optim.SGD([p], lr=2.0**-12)
        for _ in range(10):
            p.grad = torch.tensor([1.0], dtype=dtype, device="cuda")
            opt.step()
        assert (p.item() < 1.0) == moved and p.dtype == dtype


# -- the engine's autocast, through torch.autocast ----------------------------------------------------------


def test_autocast_categories_bit_for_bit():
    rng = np.random.default_rng(2)
    a, b = (torch.tensor(rng.standard_normal(s).astype(np.float32), device="cuda") for s in ((8, 16), (16, 4)))
    h = torch.tensor(rng.standard_normal((8, 16)).astype(np.float32), device="cuda").half()
    with torch.autocast("cuda", dtype=torch.float16):
        mm, ex, sm, add = a @ b, h.exp(), h.softmax(-1), a + h
    assert (mm.dtype, ex.dtype, sm.dtype, add.dtype) == (torch.float16, torch.float32, torch.float32, torch.float32)
    assert np.array_equal(mm.numpy(), (a.half() @ b.half()).numpy())
    assert np.array_equal(ex.numpy(), h.float().exp().numpy())
    assert np.array_equal(sm.numpy(), h.float().softmax(-1).numpy())
    assert np.array_equal(add.numpy(), (a + h.float()).numpy())


def test_autocast_caches_parameter_casts_and_grads_reach_float32():
    w = param(np.ones((3, 3)))
    x = torch.ones((2, 3), device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        y = (x @ w) @ w
        assert len(mf._state.STATE.cast_cache) == 1
    assert not mf._state.STATE.cast_cache
    y.float().sum().backward()
    assert w.grad.dtype == torch.float32 and tuple(w.grad.shape) == (3, 3)


def test_autocast_copies_hold_values_and_give_what_explicit_casts_give():
    """Autocast's float16 copies of an op's inputs hold their values (float32 storage), which only that op reads:
    outputs and gradients are those of explicit .half() casts, bit for bit (a weight used twice, a bias, a
    convolution's 4-d weight)."""
    rng = np.random.default_rng(5)
    w, b, k = (param(rng.standard_normal(s) * 3) for s in ((16, 16), (16,), (4, 2, 3, 3)))
    x, img = (torch.tensor(rng.standard_normal(s).astype(np.float32) * 3, device="cuda") for s in ((8, 16), (2, 2, 6, 6)))

    def run(autocast):
        for p in (w, b, k):
            p.grad = None
        with torch.autocast("cuda", dtype=torch.float16, enabled=autocast):
            cast = (lambda t: t) if autocast else (lambda t: t.half())
            wh = cast(w)
            y = torch.nn.functional.linear(torch.nn.functional.linear(cast(x), wh, cast(b)), wh)
            z = torch.nn.functional.conv2d(cast(img), cast(k))
            copies = [a for a in y._node.inputs if a is not None and a._node is not None and a._node.op.name == "cast"]
        (y.float().sum() + z.float().sum()).backward()
        return copies, [t.detach().numpy() for t in (y, z, w.grad, b.grad, k.grad)]

    copies, values = run(True)
    _, expected = run(False)
    assert copies and all(c.dtype == torch.float16 and mf.engine.storage(c).dtype == np.float16 for c in copies)
    for got, want in zip(values, expected):
        assert got.dtype == want.dtype and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


# -- end to end: float32, GradScaler and tf.keras's LossScaleOptimizer on one problem ----------------------------


def mlp_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64)
    return x, y


def train(mode, steps=150, init_scale=2.0**16):
    from minifp import tf
    rng = np.random.default_rng(3)
    w1, w2 = param(rng.standard_normal((10, 32)) * 0.3), param(rng.standard_normal((32, 2)) * 0.3)
    x, y = mlp_data()
    x, y = torch.tensor(x, device="cuda"), torch.tensor(y, device="cuda")
    opt = torch.optim.Adam([w1, w2], lr=0.01)
    scaler = torch.amp.GradScaler("cuda", init_scale=init_scale) if mode == "gradscaler" else None
    lso = tf_keras.mixed_precision.LossScaleOptimizer(tf_keras.optimizers.Adam(0.01, epsilon=1e-8),
                                                      initial_scale=init_scale) if mode == "lso" else None
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            with torch.autocast("cuda", dtype=torch.float16, enabled=mode != "float32"):
                logits = torch.relu(x @ w1) @ w2
                loss = torch.nn.functional.cross_entropy(logits, y)
            target = lso.get_scaled_loss(loss) if lso else loss
        losses.append(loss.item())
        if scaler:
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        elif lso:
            grads = lso.get_unscaled_gradients(tape.gradient(target, [w1, w2]))
            lso.apply_gradients(zip(grads, [w1, w2]))
        else:
            opt.zero_grad()
            loss.backward()
            opt.step()
    return losses, scaler or lso


def test_mixed_precision_training_matches_float32():
    ref, _ = train("float32")
    for mode in ("gradscaler", "lso"):
        losses, _ = train(mode)
        assert losses[-1] < 0.5 * losses[0]
        assert abs(losses[-1] - ref[-1]) <= 0.02 * ref[-1] + 1e-3, (mode, losses[-1], ref[-1])


def test_huge_initial_scale_shows_skips_and_halving():
    _, scaler = train("gradscaler", steps=40, init_scale=2.0**32)
    skipped = [h for h in scaler.history if h["skipped"]]
    assert skipped and skipped[0]["scale"] == 2.0**32
    scales = [h["scale"] for h in scaler.history]
    assert all(b == a / 2 for a, b, h in zip(scales, scales[1:], scaler.history) if h["skipped"])
    assert scaler.history[-1]["skipped"] is False

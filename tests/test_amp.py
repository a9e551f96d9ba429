"""Mixed precision: GradScaler and LossScaleOptimizer with the anchors' semantics, policies, autocast."""
import numpy as np
import pytest

import minifp as mf
from minifp.amp import DynamicLossScale, GradScaler, all_finite, autocast
from minifp.mixed_precision import LossScaleOptimizer, Policy, global_policy, set_global_policy
from minifp.optim import SGD, Adam, AdamW, RMSprop, clip_grad_norm_, clip_grad_value_


def param(values, dtype="float32"):
    return mf.tensor(np.asarray(values, np.float64), dtype=dtype, requires_grad=True)


def finite_step(scaler, opt, p, grad=1.0):
    p.grad = mf.tensor(np.full(p.shape, grad * scaler.get_scale()))
    scaler.step(opt)
    scaler.update()


# -- GradScaler --------------------------------------------------------------------------------


def test_scale_grows_then_backs_off():
    p = param([1.0])
    opt = SGD([p], lr=0.0)
    s = GradScaler(init_scale=4.0, growth_factor=2.0, backoff_factor=0.25, growth_interval=2)
    finite_step(s, opt, p)
    assert (s.get_scale(), s.state_dict()["_growth_tracker"]) == (4.0, 1)
    finite_step(s, opt, p)
    assert (s.get_scale(), s.state_dict()["_growth_tracker"]) == (8.0, 0)
    finite_step(s, opt, p, grad=np.inf)
    assert s.get_scale() == 2.0 and s.last_step_skipped


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
    p.grad = mf.tensor(grad)
    opt = SGD([p], lr=0.0)
    s = GradScaler(init_scale=4.0)
    s.unscale_(opt)
    found = s._per_optimizer[id(opt)]["found_inf"]
    if bad is None:
        assert not found and np.array_equal(p.grad.numpy(), np.ones((20, 20), np.float32))
    else:
        assert found and s.first_nonfinite == "parameter 0 of shape (20, 20)"


def test_skipped_step_matches_float32_run_without_it():
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(5).astype(np.float32) for _ in range(4)]
    w0 = rng.standard_normal(5)

    p = param(w0)
    opt = Adam([p], lr=0.1)
    s = GradScaler(init_scale=128.0, growth_factor=2.0, growth_interval=1)
    for i, g in enumerate(grads):
        scaled = g * np.float32(s.get_scale())
        if i == 1:
            scaled[3] = np.inf
        p.grad = mf.tensor(scaled)
        s.step(opt)
        s.update()
    assert s.get_scale() == 512.0
    assert [h["skipped"] for h in s.history] == [False, True, False, False]

    q = param(w0)
    ref = Adam([q], lr=0.1)
    for i, g in enumerate(grads):
        if i != 1:
            q.grad = mf.tensor(g)
            ref.step()
    assert np.array_equal(p.numpy(), q.numpy())
    for a, b in zip(opt.state_dict()["state"], ref.state_dict()["state"]):
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_growth_refused_when_not_finite():
    p = param([1.0])
    s = GradScaler(init_scale=1e38, growth_factor=16.0, growth_interval=1)
    finite_step(s, SGD([p], lr=0.0), p, grad=0.0)
    assert s.get_scale() == float(np.float32(1e38))


def test_state_dict_round_trip():
    expected = {"scale": 3.0, "growth_factor": 4.0, "backoff_factor": 0.5, "growth_interval": 2, "_growth_tracker": 0}
    s = GradScaler(init_scale=3.0, growth_factor=4.0, backoff_factor=0.5, growth_interval=2)
    for used in (False, True):
        fresh = GradScaler()
        if used:                                   # a scaler that has scaled, stepped and updated once
            p = param([1.0])
            fresh.scale(mf.tensor([1.0]))
            finite_step(fresh, SGD([p], lr=0.0), p)
            assert fresh.state_dict()["_growth_tracker"] == 1
        fresh.load_state_dict(s.state_dict())
        assert fresh.state_dict() == expected
        assert (fresh.get_scale(), fresh.get_growth_factor(), fresh.get_backoff_factor(),
                fresh.get_growth_interval()) == (3.0, 4.0, 0.5, 2)
    off = GradScaler(enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        GradScaler().load_state_dict({})


def test_stage_errors_have_pytorchs_messages():
    p = param([1.0])
    opt = SGD([p], lr=0.1)
    s = GradScaler()
    p.grad = mf.tensor([1.0])
    s.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)\."):
        s.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)\."):
        s.step(opt)
    s.update()
    with pytest.raises(RuntimeError, match=r"No inf checks were recorded prior to update\."):
        s.update()
    p.grad = None
    with pytest.raises(RuntimeError, match="No inf checks were recorded for this optimizer."):
        s.step(opt)


def test_float16_gradients_refused_by_gradscaler_accepted_by_lso():
    p = param([1.0], "float16")
    p.grad = mf.tensor([2.0], dtype="float16")
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        GradScaler().unscale_(SGD([p]))
    lso = LossScaleOptimizer(SGD(lr=1.0), dynamic=False, initial_scale=2)
    (g,) = lso.get_unscaled_gradients([mf.tensor([4.0], dtype="float16")])
    assert g.dtype == mf.float16 and g.item() == 2.0


@pytest.mark.parametrize("kwargs, message", [({"growth_factor": 1.0}, "The growth factor must be > 1.0"),
                                             ({"backoff_factor": 1.0}, "The backoff factor must be < 1.0")])
def test_gradscaler_bad_factors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GradScaler(**kwargs)


# -- LossScaleOptimizer -------------------------------------------------------------------------


def test_loss_scale_optimizer_keras_semantics():
    var = param([1.0, 2.0])
    opt = LossScaleOptimizer(SGD(lr=1.0), initial_scale=2, dynamic_growth_steps=1)
    loss = opt.get_scaled_loss((2 * var).sum())
    loss.backward()
    opt.apply_gradients(zip(opt.get_unscaled_gradients([var.grad]), [var]))
    assert var.numpy().tolist() == [-1.0, 0.0] and opt.loss_scale == 4.0
    opt.apply_gradients([(mf.tensor([np.nan, 1.0]), var)])
    assert var.numpy().tolist() == [-1.0, 0.0] and opt.loss_scale == 2.0 and opt.last_step_skipped
    scaled = LossScaleOptimizer(SGD(lr=1.0), initial_scale=2)
    assert scaled.get_scaled_loss(5).item() == 10.0
    out = scaled.get_unscaled_gradients([3.0, None, np.float16(-4)])
    assert out[0].item() == 1.5 and out[1] is None and out[2].item() == -2.0 and out[2].dtype == mf.float16


def test_loss_scale_never_below_one():
    var = param([1.0])
    opt = LossScaleOptimizer(SGD(lr=1.0), initial_scale=2)
    for _ in range(3):
        opt.apply_gradients([(mf.tensor([np.inf]), var)])
    assert opt.loss_scale == 1.0 and opt.dynamic_counter == 0


def test_loss_scale_optimizer_defaults():
    opt = LossScaleOptimizer(SGD())
    assert opt.loss_scale == 2.0**15 and opt.dynamic_growth_steps == 2000 and opt.dynamic
    assert isinstance(opt.inner_optimizer, SGD)


def test_loss_scale_optimizer_errors():
    inner = SGD()
    lso = LossScaleOptimizer(inner)
    with pytest.raises(TypeError, match="LossScaleOptimizer cannot wrap another LossScaleOptimizer"):
        LossScaleOptimizer(lso)
    with pytest.raises(ValueError, match='"inner_optimizer" is already wrapped by a LossScaleOptimizer'):
        LossScaleOptimizer(inner)
    with pytest.raises(ValueError, match='"initial_scale" must be specified if "dynamic" is False'):
        LossScaleOptimizer(SGD(), dynamic=False)


def test_dynamic_loss_scale_is_data():
    s = DynamicLossScale(8.0, period=2)
    s1 = s.adjust(True)
    assert (s.loss_scale, s.counter) == (8.0, 0) and (s1.loss_scale, s1.counter) == (8.0, 1)
    s2 = s1.adjust(True)
    assert (s2.loss_scale, s2.counter) == (16.0, 0)
    assert s2.adjust(False).loss_scale == 8.0
    assert DynamicLossScale(1.0).adjust(False).loss_scale == 1.0
    assert all_finite([mf.tensor([1.0]), None, np.ones(3)]) and not all_finite([np.array([np.nan])])


# -- optimizers --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls, kwargs", [(SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
                                         (Adam, {"lr": 0.01}), (AdamW, {}), (RMSprop, {"momentum": 0.5})])
def test_both_faces_agree_and_state_round_trips(cls, kwargs):
    rng = np.random.default_rng(1)
    w0, grads = rng.standard_normal(6), [rng.standard_normal(6).astype(np.float32) for _ in range(3)]
    a, b = param(w0), param(w0)
    torch_style, keras_style = cls([a], **kwargs), cls(**kwargs)
    for g in grads:
        a.grad = mf.tensor(g)
        torch_style.step()
        keras_style.apply_gradients([(mf.tensor(g), b)])
    assert np.array_equal(a.numpy(), b.numpy())
    c = param(a.numpy())
    restored = cls([c], **kwargs)
    restored.load_state_dict(torch_style.state_dict())
    for opt, p in ((torch_style, a), (restored, c)):
        p.grad = mf.tensor(grads[0])
        opt.step()
    assert np.array_equal(a.numpy(), c.numpy())
    assert all(v.dtype == np.float32 for s in torch_style.state for v in s.values())


def test_sgd_matches_hand_computation():
    p = param([1.0, -2.0])
    opt = SGD([p], lr=0.5, momentum=0.9)
    for _ in range(2):
        p.grad = mf.tensor([1.0, 1.0])
        opt.step()
    # buf = 1, then 0.9 + 1 = 1.9: w = 1 - 0.5 - 0.95
    assert p.numpy().tolist() == [np.float32(1 - 0.5 - 0.95), np.float32(-2 - 0.5 - 0.95)]


def test_rmsprop_keras_defaults():
    assert RMSprop().hyper["rho"] == 0.9 and RMSprop().hyper["epsilon"] == 1e-7


def test_half_weights_show_swamping():
    # w = 1 with update 2**-12: float32 master weight moves, a float16 weight cannot.
    for dtype, moved in (("float32", True), ("float16", False)):
        p = param([1.0], dtype)
        opt = SGD([p], lr=2.0**-12)
        for _ in range(10):
            p.grad = mf.tensor([1.0], dtype=dtype)
            opt.step()
        assert (p.item() < 1.0) == moved and p.dtype == mf.FORMATS[dtype]


def test_clipping():
    p, q = param([0.0, 0.0]), param([0.0])
    p.grad, q.grad = mf.tensor([3.0, 0.0]), mf.tensor([4.0])
    assert clip_grad_norm_([p, q], 1.0) == 5.0
    np.testing.assert_allclose(np.concatenate([p.grad.numpy(), q.grad.numpy()]), [0.6, 0, 0.8], rtol=1e-5)
    p.grad = mf.tensor([3.0, -7.0])
    clip_grad_value_([p], 2.0)
    assert p.grad.numpy().tolist() == [2.0, -2.0]


def test_optimizer_errors():
    with pytest.raises(ValueError, match="SGD got an empty parameter list"):
        SGD([])
    p = param([1.0])
    with pytest.raises(ValueError, match=r"appears more than once"):
        Adam([p, p])
    with pytest.raises(TypeError, match=r"SGD got unknown argument\(s\) 'lrr'; valid arguments: lr, momentum"):
        SGD(lrr=0.1)
    with pytest.raises(ValueError, match="unknown optimizer 'adagrad'; valid names: sgd, adam, adamw, rmsprop"):
        mf.optim.get("adagrad")


# -- policies and autocast ---------------------------------------------------------------------------


def test_policies():
    p = Policy("mixed_float16")
    assert (p.compute_dtype, p.variable_dtype, p.name, repr(p)) == ("float16", "float32", "mixed_float16",
                                                                   '<Policy "mixed_float16">')
    assert Policy("mixed_bfloat16").compute_dtype == "bfloat16"
    jmp = Policy("params=float32,compute=float16,output=float32")
    assert (jmp.variable_dtype, jmp.compute_dtype, jmp.output_dtype) == ("float32", "float16", "float32")
    short = Policy("p=f32,c=bf16,o=f16")
    assert (short.variable_dtype, short.compute_dtype, short.output_dtype) == ("float32", "bfloat16", "float16")
    with pytest.raises(ValueError, match="Valid policies are: float32, float16, bfloat16, mixed_float16, "
                                         "mixed_bfloat16"):
        Policy("abc")


def test_a_policy_is_a_frozen_value_of_formats():
    import dataclasses
    p = Policy("mixed_float16")
    assert (p.variable_format, p.compute_format, p.output_format) == (mf.float32, mf.float16, mf.float16)
    assert p == Policy("params=float32,compute=float16") and hash(p) == hash(Policy("p=f32,c=f16"))
    assert p != Policy("mixed_bfloat16") and Policy("float16") != Policy("mixed_float16")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.compute_format = mf.bfloat16


def test_global_policy():
    assert global_policy().name == "float32"
    set_global_policy("mixed_bfloat16")
    try:
        assert global_policy() == Policy("mixed_bfloat16")
    finally:
        set_global_policy("float32")


def test_autocast_categories_bit_for_bit():
    rng = np.random.default_rng(2)
    a, b = mf.tensor(rng.standard_normal((8, 16))), mf.tensor(rng.standard_normal((16, 4)))
    h = mf.tensor(rng.standard_normal((8, 16)), dtype="float16")
    with autocast(mf.float16):
        mm, ex, sm, add = a @ b, h.exp(), h.softmax(), a + h
    assert (mm.dtype, ex.dtype, sm.dtype, add.dtype) == (mf.float16, mf.float32, mf.float32, mf.float32)
    assert np.array_equal(mm.numpy(), (a.astype("float16") @ b.astype("float16")).numpy())
    assert np.array_equal(ex.numpy(), h.astype("float32").exp().numpy())
    assert np.array_equal(sm.numpy(), h.astype("float32").softmax().numpy())
    assert np.array_equal(add.numpy(), (a + h.astype("float32")).numpy())


def test_autocast_nests_and_decorates():
    a = mf.tensor(np.ones((2, 2)))

    @autocast(mf.bfloat16)
    def f(x):
        with autocast(enabled=False):
            inner = x @ x
        return x @ x, inner

    outer, inner = f(a)
    assert outer.dtype == mf.bfloat16 and inner.dtype == mf.float32
    assert (a @ a).dtype == mf.float32


def test_autocast_caches_parameter_casts_and_grads_reach_float32():
    w = param(np.ones((3, 3)))
    x = mf.tensor(np.ones((2, 3)))
    with autocast():
        y = (x @ w) @ w
        assert len(mf._state.STATE.cast_cache) == 1
    assert not mf._state.STATE.cast_cache
    y.sum().backward()
    assert w.grad.dtype == mf.float32 and w.grad.shape == (3, 3)


# -- end to end --------------------------------------------------------------------------------


def mlp_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 10)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.int64)
    return x, y


def train(mode, steps=150, init_scale=2.0**16):
    rng = np.random.default_rng(3)
    w1, w2 = param(rng.standard_normal((10, 32)) * 0.3), param(rng.standard_normal((32, 2)) * 0.3)
    x, y = mlp_data()
    onehot = mf.tensor(np.eye(2)[y])
    opt = Adam([w1, w2], lr=0.01)
    scaler = GradScaler(init_scale=init_scale) if mode == "gradscaler" else None
    lso = LossScaleOptimizer(Adam(lr=0.01), initial_scale=init_scale) if mode == "lso" else None
    losses = []
    for _ in range(steps):
        with autocast(mf.float16, enabled=mode != "float32"):
            logits = (mf.tensor(x) @ w1).relu() @ w2
            loss = -(logits.log_softmax() * onehot).sum(axis=1).mean()
        losses.append(loss.item())
        if scaler:
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        elif lso:
            w1.grad = w2.grad = None
            lso.get_scaled_loss(loss).backward()
            lso.apply_gradients(zip(lso.get_unscaled_gradients([w1.grad, w2.grad]), [w1, w2]))
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

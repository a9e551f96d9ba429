"""minifp.torch.amp.GradScaler against real PyTorch 2.13 (tests/fixtures/pytorch/gradscaler.json)."""
import json
import math
import pickle
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp
import minifp.torch as torch
from minifp._loss_scale import DynamicLossScale
from minifp.torch.amp.grad_scaler import CudaGradScaler, GradScaler
from minifp.torch.optim import SGD

FIX = json.loads((Path(__file__).parent.parent / "fixtures" / "pytorch" / "gradscaler.json").read_text())
MULT = {"finite": 1.0, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def value(x):
    return float(x) if isinstance(x, str) else x


def same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def coef(i):
    return minifp.tensor(np.float32(0.5 + 0.25 * math.sin(0.7 * i)))


@pytest.mark.parametrize("name", FIX["scenarios"])
def test_scenario_matches_pytorch_step_by_step(name):
    sc = FIX["scenarios"][name]
    w = minifp.tensor([1.0], requires_grad=True)
    opt = SGD([w], lr=0.1)
    scaler = GradScaler("cpu", **sc["kwargs"])
    for row in sc["steps"]:
        opt.zero_grad()
        scaled = scaler.scale(minifp.sum(w * coef(row["step"])) * MULT[row["kind"]])
        scaled.backward()
        got = {"scaled_loss": scaled.item(), "scaled_grad": w.grad.item()}
        if sc["unscale_before_step"]:
            scaler.unscale_(opt)
            got["grad_after_unscale"] = w.grad.item()
        before = w.float32().copy()
        scaler.step(opt)
        got["param_bits_unchanged"] = bool((before.view(np.int32) == w.float32().view(np.int32)).all())
        got["grad_after_step"] = w.grad.item()
        scaler.update()
        got.update(scale=scaler.get_scale(), growth_tracker=scaler._get_growth_tracker(), param=w.item())
        for key, mine in got.items():
            assert same(mine, value(row[key])), (row["step"], key, mine, row[key])
        if scaler.is_enabled():
            assert scaler.last_step_skipped == row["found_inf"]
    sd = scaler.state_dict()
    assert sd == {k: value(v) for k, v in sc["state_dict"].items()}
    assert {k: type(v).__name__ for k, v in sd.items()} == sc["state_dict_types"]


def fresh(**kw):
    w = minifp.tensor([1.0], requires_grad=True)
    return w, SGD([w], lr=0.1), GradScaler("cpu", **kw)


def with_grad(w, s):
    s.scale(minifp.sum(w * 2.0)).backward()


def step_without_scale():
    w, opt, s = fresh()
    w.grad = minifp.tensor([1.0])
    s.step(opt)


def unscale_without_scale():
    w, opt, s = fresh()
    w.grad = minifp.tensor([1.0])
    s.unscale_(opt)


def update_without_inf_checks():
    w, opt, s = fresh()
    with_grad(w, s)
    s.update()


def then(*calls):
    def f():
        w, opt, s = fresh()
        with_grad(w, s)
        for c in calls:
            c(w, opt, s)
    return f


def step_with_no_grads():
    w, opt, s = fresh()
    s.scale(minifp.sum(w * 2.0))
    s.step(opt)


def unscale_fp16_grads():
    w = minifp.tensor([1.0], dtype="float16", requires_grad=True)
    opt, s = SGD([w], lr=0.1), GradScaler("cpu")
    s.scale(minifp.sum(w * 2.0)).backward()
    s.unscale_(opt)


def update_new_scale(v):
    def f():
        w, opt, s = fresh()
        with_grad(w, s)
        s.step(opt)
        s.update(v() if callable(v) else v)
        return s.get_scale()
    return f


def load(sd):
    def f():
        s = fresh()[2]
        s.load_state_dict(sd)
        return s.state_dict()
    return f


MISUSE = {
    "step_without_scale": step_without_scale,
    "unscale_without_scale": unscale_without_scale,
    "update_without_scale": lambda: fresh()[2].update(),
    "update_without_inf_checks": update_without_inf_checks,
    "unscale_twice_before_update": then(lambda w, o, s: s.unscale_(o), lambda w, o, s: s.unscale_(o)),
    "unscale_after_step": then(lambda w, o, s: s.step(o), lambda w, o, s: s.unscale_(o)),
    "step_twice_without_update": then(lambda w, o, s: s.step(o), lambda w, o, s: s.step(o)),
    "step_with_closure_kwarg": then(lambda w, o, s: s.step(o, closure=lambda: None)),
    "step_with_no_grads": step_with_no_grads,
    "unscale_fp16_grads": unscale_fp16_grads,
    "scale_python_float": lambda: fresh()[2].scale(3.0),
    "growth_factor_1": lambda: GradScaler("cpu", growth_factor=1.0),
    "backoff_factor_1": lambda: GradScaler("cpu", backoff_factor=1.0),
    "load_empty_state_dict": load({}),
    "load_state_dict_missing_keys": load({"scale": 8.0}),
    "load_full_state_dict": load({"scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 7,
                                  "_growth_tracker": 2}),
    "pickle_between_step_and_update": then(lambda w, o, s: s.step(o), lambda w, o, s: pickle.dumps(s)),
    "update_new_scale_float_8": update_new_scale(8.0),
    "update_new_scale_int_8": update_new_scale(8),
    "update_new_scale_tensor_8": update_new_scale(lambda: minifp.tensor(8.0)),
    "update_new_scale_tensor_2_elements": update_new_scale(lambda: minifp.tensor([8.0, 9.0])),
}


@pytest.mark.parametrize("name", FIX["misuse"])
def test_misuse_raises_pytorchs_error(name):
    ref = FIX["misuse"][name]
    if name == "cuda_scaler_without_cuda":
        # PyTorch without CUDA disables the scaler; minifp's "cuda" always exists (a GPU or emulated on the host).
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert GradScaler("cuda").is_enabled()
        return
    if ref["error"] is None:
        result = MISUSE[name]()
        if "result" in ref:
            assert result == ref["result"]
        return
    with pytest.raises(Exception) as info:
        MISUSE[name]()
    assert type(info.value).__name__ == ref["error"]["type"]
    assert str(info.value) == ref["error"]["message"]


def test_misuse_leaves_the_state_unchanged():
    w, opt, s = fresh(init_scale=4.0)
    with pytest.raises(KeyError):
        s.load_state_dict({"scale": 8.0, "growth_factor": 3.0})
    assert s.state_dict() == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                              "_growth_tracker": 0}


def test_getters_match_pytorch():
    ref = FIX["getters"]
    s = GradScaler("cpu")
    assert {"get_scale": s.get_scale(), "growth_tracker": s._get_growth_tracker(),
            "get_growth_factor": s.get_growth_factor(), "get_backoff_factor": s.get_backoff_factor(),
            "get_growth_interval": s.get_growth_interval(), "is_enabled": s.is_enabled(),
            "state_dict_before_scale": s.state_dict()} == ref["fresh"]
    loss = minifp.tensor(3.0)
    d = GradScaler("cpu", enabled=False)
    assert {"get_scale": d.get_scale(), "growth_tracker": d._get_growth_tracker(), "is_enabled": d.is_enabled(),
            "state_dict": d.state_dict(), "scale_returns_same_object": d.scale(loss) is loss} == ref["disabled"]


def test_setters():
    s = GradScaler("cpu", growth_interval=1)
    s.set_growth_factor(3.0)
    s.set_backoff_factor(0.25)
    s.set_growth_interval(2)
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (3.0, 0.25, 2)
    w, opt, _ = fresh()
    for expected in (65536.0, 196608.0):
        opt.zero_grad()
        with_grad(w, s)
        s.step(opt)
        s.update()
        assert s.get_scale() == expected


def test_scale_containers_match_pytorch():
    s = GradScaler("cpu")
    one, two = minifp.tensor(1.0), minifp.tensor(2.0)
    kinds = {"list": type(s.scale([one, two])).__name__, "tuple": type(s.scale((one,))).__name__,
             "generator": type(s.scale(t for t in [one])).__name__}
    assert kinds == FIX["scale_container_types"]
    assert [t.item() for t in s.scale([one, (two,)])[:1]] == [65536.0]


@pytest.mark.parametrize("name", FIX["scale_output"])
def test_scale_output_dtype_and_values_match_pytorch(name):
    """A 0-dim float16 loss comes back float32; a float16 batch stays float16 and overflows, as in PyTorch."""
    torch = pytest.importorskip("minifp.torch")
    ref = FIX["scale_output"][name]
    dtype = getattr(torch, ref["input_dtype"].split(".")[1], None)
    if dtype is None or str(dtype) != ref["input_dtype"]:
        pytest.skip(f"minifp.torch has no {ref['input_dtype']} (its float64 is float32)")
    out = GradScaler("cpu").scale(torch.full(ref["output"]["shape"], 2.0, dtype=dtype))
    assert str(out.dtype) == ref["output"]["dtype"] and list(out.shape) == ref["output"]["shape"]
    want = ref["output"]["values"]
    assert np.array_equal(out.float32(), np.array(want if not isinstance(want, list) else [value(v) for v in want],
                                                  np.float32))


def test_scale_is_differentiable():
    w = minifp.tensor([3.0], requires_grad=True)
    GradScaler("cpu", init_scale=8.0).scale(minifp.sum(w * 2.0)).backward()
    assert w.grad.item() == 16.0


def test_step_returns_the_optimizers_value_or_none_when_skipped():
    w, opt, s = fresh()
    opt.step = lambda *a, **k: ("stepped", a, k)
    with_grad(w, s)
    assert s.step(opt, 1, x=2) == ("stepped", (1,), {"x": 2})
    s.update()
    opt.zero_grad()
    s.scale(minifp.sum(w * math.inf)).backward()
    assert s.step(opt) is None and s.last_step_skipped


def test_disabled_scaler_is_a_pass_through():
    w, opt, _ = fresh()
    s = GradScaler("cpu", enabled=False)
    w.grad = minifp.tensor([1.0])
    s.unscale_(opt)
    assert w.grad.item() == 1.0
    s.step(opt)
    s.update()
    assert w.item() == pytest.approx(0.9) and s.get_scale() == 1.0


def test_extras_name_the_first_nonfinite_gradient():
    a = minifp.tensor([1.0], requires_grad=True)
    b = minifp.tensor([1.0, 2.0], requires_grad=True)
    b.name = "fc.weight"
    opt = SGD([a, b], lr=0.1)
    s = GradScaler("cpu")
    s.scale(minifp.sum(a) + minifp.sum(b * math.inf)).backward()
    s.step(opt)
    assert s.first_nonfinite == "fc.weight" and s.last_step_skipped
    s.update()
    assert list(s.history) == [{"scale": 65536.0, "skipped": True}] and s.get_scale() == 32768.0
    opt.zero_grad()
    s.scale(minifp.sum(a * 0.0 * math.inf)).backward()     # nan in a's gradient
    s.unscale_(opt)
    assert s.first_nonfinite == "param_groups[0]['params'][0] of shape (1,)"


def test_history_keeps_the_latest_thousand_updates_in_flat_memory():
    w, opt, s = fresh(init_scale=4.0)           # grows to 8.0 at the 2,000th update
    w.grad = minifp.tensor([1.0])
    s.scale(w)

    def updates(n):
        for _ in range(n):
            s.unscale_(opt)
            s.update()

    tracemalloc.start()         # before the first 1,000: entries made untraced and dropped later would not count
    try:
        updates(1000)
        before = tracemalloc.get_traced_memory()[0]
        updates(2000)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000           # unbounded, the 2,000 more updates kept about 430 kB
    assert len(s.history) == 1000 and {h["scale"] for h in s.history} == {8.0}      # the latest 1,000


def test_inf_checks_are_per_device_and_the_extras_name_a_later_group():
    warnings.filterwarnings("ignore", message="minifp: no GPU here")
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0], device="cuda", requires_grad=True)
    opt = SGD([{"params": [b]}, {"params": [a]}], lr=0.1)
    s = GradScaler("cuda", init_scale=4.0)
    s.scale(b.sum()).backward()
    s.scale((a * math.inf).sum()).backward()
    s.unscale_(opt)
    state = s._per_optimizer_states[id(opt)]
    assert state["found_inf_per_device"] == {"cuda": False, "cpu": True}
    assert s.first_nonfinite == "param_groups[1]['params'][0] of shape (2,)"
    assert b.grad.tolist() == [1.0] and a.grad.tolist() == [math.inf, math.inf]     # unscaled all the same
    assert s.step(opt) is None and b.tolist() == [3.0] and s.last_step_skipped


def test_pickle_at_the_start_of_an_iteration_keeps_the_scale():
    w, opt, s = fresh(init_scale=4.0, growth_interval=1)
    with_grad(w, s)
    s.step(opt)
    s.update()
    copy = pickle.loads(pickle.dumps(s))
    assert copy.get_scale() == 8.0 and copy.state_dict() == s.state_dict()


def test_cuda_amp_spelling_warns_as_pytorch_and_is_a_cuda_scaler():
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.GradScaler\(args...\)` is deprecated. Please use "
                                           r"`torch.amp.GradScaler\('cuda', args...\)` instead."):
        s = CudaGradScaler(init_scale=1024.0, growth_interval=5)
    assert isinstance(s, GradScaler) and s._device == "cuda" and s.state_dict()["scale"] == 1024.0


def test_bad_device_names_the_choices():
    with pytest.raises(ValueError, match="device must be 'cuda' or 'cpu'"):
        GradScaler("tpu")


def test_engine_state_machine_is_pytorchs_rule():
    """The engine value the Keras face also uses: double products, no growth past a shortened interval."""
    m = DynamicLossScale(1000.0, period=2, factor=1.7, backoff=0.3, min_loss_scale=0.0)
    m = m.adjust(True).adjust(True)
    assert m.loss_scale == np.float32(np.float64(np.float32(1000.0)) * 1.7) and m.counter == 0
    m = m.adjust(False)
    assert m.loss_scale == np.float32(np.float64(np.float32(1700.0)) * 0.3)
    stuck = DynamicLossScale(8.0, counter=5, period=3)
    assert stuck.adjust(True).counter == 6 and stuck.adjust(True).loss_scale == 8.0


def test_unscale_is_in_place_and_each_gradient_is_unscaled_once():
    # add hands one gradient array to both inputs, reshape a view of it to a third: each .grad still owns its array
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    c = torch.tensor([[5.0, 6.0]], requires_grad=True)
    scaler = GradScaler("cpu", init_scale=4.0)
    opt = SGD([a, b, c], lr=0.0)
    scaler.scale((a + b + c.reshape(2)) * torch.tensor([1.0, 3.0])).sum().backward()
    held = a.grad.numpy()       # PyTorch's unscale_ writes into the gradient's memory: a holder sees it
    scaler.unscale_(opt)
    assert a.grad.tolist() == b.grad.tolist() == [1.0, 3.0] and c.grad.tolist() == [[1.0, 3.0]]
    assert held.tolist() == [1.0, 3.0]


def test_a_backward_seed_never_becomes_a_gradient():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    seed = np.array([4.0, 8.0], np.float32)
    scaler = GradScaler("cpu", init_scale=2.0)
    scaler.scale(torch.tensor(1.0))
    (x + 0.0).backward(seed)                # add passes the seed straight on to x
    assert x.grad.tolist() == [4.0, 8.0] and not np.shares_memory(x.grad.numpy(), seed)
    scaler.unscale_(SGD([x], lr=0.0))
    assert seed.tolist() == [4.0, 8.0] and x.grad.tolist() == [2.0, 4.0]

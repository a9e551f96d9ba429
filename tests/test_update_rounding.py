"""update_rounding= on both faces' optimizers: exact single updates, unbiased stochastic rounding, the Kahan
buffer in the optimizer's state, bad values refused, and pure bfloat16 training rescued (issue 16, point 4)."""
import pickle

import numpy as np
import pytest

import minifp
from minifp import _optim, demos
from minifp import torch
from minifp.keras import optimizers as koptim
from minifp.torch import optim

ULP_1 = 2.0**-7                 # bfloat16's spacing in [1, 2): half an ulp is 2**-8
D = 2.0**-10                    # an update of a quarter of half an ulp: nearest rounding loses it every time

# The paper's arithmetic (Zamirai et al. 2020, Algorithm 2), every operation rounded to nearest-even bfloat16,
# w = 1 and an update of D per step. In units of D: c takes 1, 2, 3, 4; at 4 (a tie, 1 + 2**-8) w stays at the
# even 1; at 5, w moves one ulp (8 units) and c keeps 5 - 8 = -3; at step 12 the tie 1 + 2**-7 + 2**-8 rounds
# up to the even 1 + 2**-6 and c becomes 4 - 8 = -4. On average w moves D per step, as in float32.
KAHAN_W = [1, 1, 1, 1, 1 + ULP_1, 1 + ULP_1, 1 + ULP_1, 1 + ULP_1, 1 + ULP_1, 1 + ULP_1, 1 + ULP_1, 1 + 2 * ULP_1]
KAHAN_C = [1, 2, 3, 4, -3, -2, -1, 0, 1, 2, 3, -4]


def bf16(values):
    return minifp.tensor(np.asarray(values, np.float32), dtype="bfloat16")


def engine_steps(rounding, steps, w0=1.0, d=D):
    """w (a bfloat16 tensor) and its state after `steps` SGD updates of +d, through the engine."""
    w, state = bf16([w0]), {}
    history = []
    for _ in range(steps):
        _optim.apply_rule(_optim.sgd_update, w, np.array([-d], np.float32), state, rounding, lr=1.0)
        c = state.get(_optim.KAHAN)
        history.append((w.item(), None if c is None else float(c.astype(np.float32)[0])))
    return w, state, history


# -- exact single updates -----------------------------------------------------------------------------------


def test_nearest_loses_updates_below_half_an_ulp():
    w, state, history = engine_steps("nearest", 12)
    assert [h[0] for h in history] == [1.0] * 12 and state == {}


def test_kahan_follows_the_papers_arithmetic_step_by_step():
    w, state, history = engine_steps("kahan", 12)
    assert [h[0] for h in history] == KAHAN_W
    assert [h[1] / D for h in history] == KAHAN_C
    assert state[_optim.KAHAN].dtype == w.data.dtype          # the buffer is in the weight's format


def test_kahan_keeps_what_float32_would_over_many_steps():
    w, _, history = engine_steps("kahan", 800)
    c = history[-1][1]
    assert w.item() + c == 1 + 800 * D                        # w + c is the exact sum of the updates


def test_one_stochastic_update_lands_on_a_neighbour_and_repeats_under_the_seed():
    minifp.manual_seed(7)
    w, _, _ = engine_steps("stochastic", 1, w0=1.0, d=3 * D)
    minifp.manual_seed(7)
    again, _, _ = engine_steps("stochastic", 1, w0=1.0, d=3 * D)
    assert w.item() in (1.0, 1 + ULP_1) and w.item() == again.item()


def test_stochastic_rounding_is_unbiased_in_mean():
    n = 200_000
    minifp.manual_seed(0)
    for d in (D, 3 * D, -3 * D):
        w = bf16(np.ones(n))
        _optim.apply_rule(_optim.sgd_update, w, np.full(n, -d, np.float32), {}, "stochastic", lr=1.0)
        moved = w.float32().astype(np.float64) - 1.0
        spacing = ULP_1 if d > 0 else ULP_1 / 2                # below 1 the spacing halves
        p = abs(d) / spacing
        assert set(np.unique(moved)) <= {0.0, np.sign(d) * spacing}
        assert abs(np.mean(moved) - d) <= 5 * spacing * np.sqrt(p * (1 - p) / n)


def test_stochastic_training_of_one_weight_tracks_the_exact_sum():
    minifp.manual_seed(1)
    w, _, _ = engine_steps("stochastic", 1000)
    # The exact sum is 1.977 (nearest stays at 1); one standard deviation of the walk is 0.082.
    assert abs(w.item() - (1 + 1000 * D)) < 0.33


@pytest.mark.parametrize("rounding", _optim.UPDATE_ROUNDINGS)
def test_float32_weights_change_nothing(rounding):
    w, state = minifp.tensor(np.array([1.0, -3.0], np.float32)), {}
    g = np.array([-D, 0.125], np.float32)
    _optim.apply_rule(_optim.sgd_update, w, g, state, rounding, lr=1e-3)
    assert w.float32().tolist() == (np.array([1.0, -3.0], np.float32) - np.float32(1e-3) * g).tolist()
    assert state == {}


def test_float16_weights_take_kahan_too():
    w, state = minifp.tensor(np.array([1.0], np.float32), dtype="float16"), {}
    for _ in range(16):
        _optim.apply_rule(_optim.sgd_update, w, np.array([-2.0**-13], np.float32), state, "kahan", lr=1.0)
    # float16's half ulp at 1 is 2**-11, four updates: the same walk as bfloat16's above, in units of 2**-13.
    assert w.item() == 1 + 2.0**-9 and float(state[_optim.KAHAN][0]) == 0.0


# -- the faces ------------------------------------------------------------------------------------------------


def torch_param(values=(1.0,)):
    return torch.tensor(list(values), dtype=torch.bfloat16, requires_grad=True)


def torch_steps(opt, p, steps, g=-1.0):
    for _ in range(steps):
        p.grad = torch.tensor([g] * p.shape[0], dtype=torch.bfloat16)
        opt.step()


@pytest.mark.parametrize("make", [lambda ps, r: optim.SGD(ps, lr=D, update_rounding=r),
                                  lambda ps, r: optim.SGD(ps, lr=D, momentum=0.0, weight_decay=0.0,
                                                          update_rounding=r)])
def test_torch_sgd_kahan_gives_the_papers_values(make):
    p = torch_param()
    opt = make([p], "kahan")
    ws, cs = [], []
    for _ in range(12):
        torch_steps(opt, p, 1)
        ws.append(p.item())
        cs.append(opt.state[p]["kahan_comp"].item() / D)
    assert ws == KAHAN_W and cs == KAHAN_C
    assert opt.state[p]["kahan_comp"].fmt == minifp.bfloat16


def test_keras_sgd_kahan_gives_the_papers_values():
    w = bf16([1.0])
    opt = koptim.SGD(learning_rate=D, update_rounding="kahan")
    ws = []
    for _ in range(12):
        opt.apply_gradients([(np.array([-1.0], np.float32), w)])
        ws.append(w.item())
    assert ws == KAHAN_W
    slot = [v for v in opt.variables if v.name.endswith("_kahan_comp")]
    assert len(slot) == 1 and slot[0].dtype == "bfloat16" and float(slot[0].numpy()[0]) == -4 * D


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_torch_default_is_nearest_bit_for_bit(cls):
    runs = []
    for kwargs in ({}, {"update_rounding": "nearest"}):
        p = torch.tensor([0.3, -1.7, 2.5], dtype=torch.bfloat16, requires_grad=True)
        opt = getattr(optim, cls)([p], lr=0.01, **kwargs)
        for k in range(5):
            p.grad = torch.tensor([0.1 * k, -0.2, 0.05], dtype=torch.bfloat16)
            opt.step()
        runs.append(p.float32().tobytes())              # bfloat16 -> float32 is exact: the same bits
    assert runs[0] == runs[1]


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam"])
def test_keras_default_is_nearest_and_config_stays_keras(cls):
    runs = []
    for kwargs in ({}, {"update_rounding": "nearest"}):
        w = bf16([0.3, -1.7, 2.5])
        opt = getattr(koptim, cls)(**kwargs)
        for k in range(5):
            opt.apply_gradients([(np.array([0.1 * k, -0.2, 0.05], np.float32), w)])
        runs.append(w.data.tobytes())
        assert "update_rounding" not in opt.get_config()
        assert not any(v.name.endswith("kahan_comp") for v in opt.variables)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
@pytest.mark.parametrize("rounding", ["stochastic", "kahan"])
def test_every_torch_optimizer_takes_it(cls, rounding):
    p = torch_param([0.3, -1.7])
    opt = getattr(optim, cls)([p], lr=1e-3, update_rounding=rounding)
    torch_steps(opt, p, 3, g=0.5)
    assert opt.update_rounding == rounding and np.isfinite(p.float32()).all()
    assert ("kahan_comp" in opt.state[p]) == (rounding == "kahan")
    assert "update_rounding" not in opt.defaults and "update_rounding" not in opt.param_groups[0]


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam"])
@pytest.mark.parametrize("rounding", ["stochastic", "kahan"])
def test_every_keras_optimizer_takes_it_and_its_config_keeps_it(cls, rounding):
    w, w32 = bf16([0.3, -1.7]), minifp.tensor(np.array([0.5], np.float32))
    opt = getattr(koptim, cls)(update_rounding=rounding)
    opt.apply_gradients([(np.array([0.5, 0.5], np.float32), w), (np.array([0.5], np.float32), w32)])
    kahan = [v for v in opt.variables if v.name.endswith("kahan_comp")]
    assert len(kahan) == (1 if rounding == "kahan" else 0)        # none for the float32 variable
    assert opt.get_config()["update_rounding"] == rounding
    assert type(opt).from_config(opt.get_config()).update_rounding == rounding


def test_torch_state_dict_round_trips_the_kahan_buffer():
    def make():
        p = torch_param([1.0, 2.0])
        return p, optim.SGD([p], lr=D, momentum=0.5, update_rounding="kahan")
    p, opt = make()
    torch_steps(opt, p, 3)
    sd = opt.state_dict()
    assert sd["state"][0]["kahan_comp"].fmt == minifp.bfloat16
    assert any(v != 0 for v in sd["state"][0]["kahan_comp"].float32().tolist())
    for saved in (sd, pickle.loads(pickle.dumps(sd))):
        q, other = make()
        other.load_state_dict(saved)
        assert other.state[q]["kahan_comp"].fmt == minifp.bfloat16
        assert other.state[q]["kahan_comp"].float32().tolist() == opt.state[p]["kahan_comp"].float32().tolist()
    q, other = make()
    other.load_state_dict(pickle.loads(pickle.dumps(sd)))
    with torch.no_grad():
        q.copy_(p)
    torch_steps(opt, p, 5)
    torch_steps(other, q, 5)
    assert q.float32().tolist() == p.float32().tolist()
    assert other.state[q]["kahan_comp"].float32().tolist() == opt.state[p]["kahan_comp"].float32().tolist()


def test_keras_kahan_slot_is_saved_and_loaded_with_the_variables():
    w = bf16([1.0, 2.0])
    opt = koptim.SGD(learning_rate=D, update_rounding="kahan")
    for _ in range(3):
        opt.apply_gradients([(np.array([-1.0, -1.0], np.float32), w)])
    store = {}
    opt.save_own_variables(store)
    other = koptim.SGD(learning_rate=D, update_rounding="kahan")
    other.build([bf16([1.0, 2.0])])
    other.load_own_variables(store)
    mine = [v.numpy().tobytes() for v in opt.variables]
    assert [v.numpy().tobytes() for v in other.variables] == mine


def test_keras_weight_decay_goes_through_the_update_rounding():
    def decayed(rounding):
        w = bf16([1.0])
        opt = koptim.SGD(learning_rate=1.0, weight_decay=D, update_rounding=rounding)
        for _ in range(8):
            opt.apply_gradients([(np.array([0.0], np.float32), w)])
        return w.item()
    assert decayed("nearest") == 1.0                          # each decay of 2**-10 is below half an ulp
    assert decayed("kahan") == 1 - ULP_1                      # eight of them make 2**-7: two ulps below 1


# -- bad values -------------------------------------------------------------------------------------------


BAD = ["up", "Kahan", None, 1, True]


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_torch_rejects_bad_values(cls, bad):
    with pytest.raises(ValueError, match=r"update_rounding: got .*valid choices: 'nearest', 'stochastic', 'kahan'"):
        getattr(optim, cls)([torch_param()], lr=0.1, update_rounding=bad)


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam"])
def test_keras_rejects_bad_values(cls, bad):
    with pytest.raises(ValueError, match=r"update_rounding: got .*valid choices: 'nearest', 'stochastic', 'kahan'"):
        getattr(koptim, cls)(update_rounding=bad)


def test_the_engine_rejects_a_bad_value_before_anything_changes():
    w, state = bf16([1.0]), {"momentum_buffer": np.array([0.5], np.float32)}
    with pytest.raises(ValueError, match=r"got 'odd'"):
        _optim.apply_rule(_optim.sgd_update, w, np.array([1.0], np.float32), state, "odd", lr=1.0, momentum=0.9)
    assert w.item() == 1.0 and state["momentum_buffer"].tolist() == [0.5] and list(state) == ["momentum_buffer"]


# -- acceptance 4: the master-weights demo ---------------------------------------------------------------


def test_stochastic_and_kahan_reach_master_weights_where_nearest_stalls():
    """Issue 16, acceptance 4: the master-weights demo's run (SGD lr 3e-4, 5 epochs, digits MLP)."""
    change = {}
    for name, policy, rounding in demos.PURE_BF16:
        loss = demos.digits_sgd(policy, rounding, epochs=5, lr=3e-4)
        change[rounding if policy == "bfloat16" else "master"] = loss[-1] - loss[0]
    master = change["master"]
    assert master < -0.01
    assert abs(change["stochastic"] - master) <= 0.1 * abs(master)
    assert abs(change["kahan"] - master) <= 0.1 * abs(master)
    assert abs(change["nearest"]) < 0.25 * abs(master)                # stalls


def test_checkpoints_keep_the_kahan_buffer(tmp_path):
    """minifp.checkpoint saves and restores it for both faces (bfloat16 arrays in the file)."""
    from minifp import checkpoint, keras
    from minifp._digits import digits_mlp
    from minifp.torch import nn
    x = torch.ones(4, 3, dtype=torch.bfloat16)
    models = []
    for _ in range(2):
        m = nn.Linear(3, 2).to(torch.bfloat16)
        models.append((m, optim.SGD(m.parameters(), lr=1e-3, update_rounding="kahan")))
    (m, opt), (m2, opt2) = models
    for _ in range(3):
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()
    checkpoint.save(tmp_path / "t", m, opt)
    checkpoint.load(tmp_path / "t", m2, opt2)
    for p, q in zip(m.parameters(), m2.parameters()):
        assert opt2.state[q]["kahan_comp"].fmt == minifp.bfloat16
        assert opt2.state[q]["kahan_comp"].float32().tolist() == opt.state[p]["kahan_comp"].float32().tolist()
    (xd, yd), _ = minifp.datasets.load_digits()
    ks = []
    for _ in range(2):
        km = digits_mlp("bfloat16")
        km.compile(keras.optimizers.SGD(learning_rate=3e-3, update_rounding="kahan"), "sparse_categorical_crossentropy")
        km.optimizer.build(km.trainable_variables)
        ks.append(km)
    ks[0].fit(xd[:64], yd[:64], batch_size=32, epochs=1, verbose=0)
    checkpoint.save(tmp_path / "k", ks[0], ks[0].optimizer)
    checkpoint.load(tmp_path / "k", ks[1], ks[1].optimizer)
    saved, loaded = ks[0].optimizer.variables, ks[1].optimizer.variables
    assert sum(v.name.endswith("kahan_comp") for v in loaded) == len(ks[1].trainable_variables)
    assert [(v.dtype, v.numpy().tobytes()) for v in loaded] == [(v.dtype, v.numpy().tobytes()) for v in saved]


def test_pure_bf16_demo_prints_each_run():
    from minifp import cli
    assert cli.DEMOS["pure-bf16"] is demos.pure_bf16
    text, figure = demos.pure_bf16(epochs=2)
    rows = [line.split() for line in text.splitlines()[2:6]]
    assert [" ".join(r[:-4]) for r in rows] == [name for name, _, _ in demos.PURE_BF16]
    assert rows[0][-1] == "100.0%" and callable(figure)

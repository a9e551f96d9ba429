"""Checkpoints: saved atomically at exactly the path asked, with every variable's format; resuming in a fresh
process is bit-exact; state dicts are checked whole before anything changes."""
import copy
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import minifp as mf
from minifp import nn
from minifp._random import get_state, rng
from minifp.amp import GradScaler, autocast
from minifp.datasets import load_digits
from minifp.losses import cross_entropy
from minifp.mixed_precision import LossScaleOptimizer
from minifp.models import digits_mlp
from minifp.optim import SGD, Adam
from minifp.training import Model

ROOT = Path(__file__).resolve().parents[1]


def ckpt():
    """minifp.checkpoint, imported here so that each test fails on its own where the module is missing."""
    from minifp import checkpoint
    return checkpoint


def bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def same(a, b):
    return a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


class Holder(nn.Module, Model):
    """A model with one variable of any format."""

    def __init__(self, values, fmt):
        super().__init__()
        self.w = mf.tensor(values, dtype=fmt)


def linear(seed=0):
    mf.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))


# -- the file: where, atomic, formats ---------------------------------------------------------------


def test_saves_exactly_at_the_path_asked(tmp_path):
    model, other = linear(0), linear(1)
    model.save_weights(tmp_path / "w.ckpt")
    assert os.listdir(tmp_path) == ["w.ckpt"]
    other.load_weights(str(tmp_path / "w.ckpt"))
    assert all(same(a, b) for a, b in zip(other.get_weights(), model.get_weights()))


def test_a_folder_or_a_missing_folder_is_refused(tmp_path):
    model = linear()
    with pytest.raises(IsADirectoryError, match="is a folder; give a file name"):
        model.save_weights(tmp_path)
    with pytest.raises(FileNotFoundError, match="folder .* does not exist"):
        model.save_weights(tmp_path / "missing" / "w.npz")
    with pytest.raises(TypeError, match="path must be a str or os.PathLike, got int"):
        model.save_weights(3)
    assert os.listdir(tmp_path) == []


def fail_on_second_array(monkeypatch):
    write, calls = np.lib.format.write_array, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return write(*args, **kwargs)
    monkeypatch.setattr(np.lib.format, "write_array", flaky)


@pytest.mark.parametrize("how", ["save_weights", "checkpoint.save"])
def test_an_interrupted_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch, how):
    model = linear()
    path = tmp_path / "w.npz"
    save = model.save_weights if how == "save_weights" else lambda p: ckpt().save(p, model)
    save(path)
    before, weights = path.read_bytes(), model.get_weights()
    model.set_weights([w + 1 for w in weights])
    with monkeypatch.context() as m:
        fail_on_second_array(m)
        with pytest.raises(OSError, match="disk full"):
            save(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["w.npz"]     # no temporary file left
    model.load_weights(path)
    assert all(same(a, b) for a, b in zip(model.get_weights(), weights))


FORMATS = [mf.float32, mf.tf32, mf.float16, mf.bfloat16, mf.float8_e4m3, mf.float8_e5m2,
           mf.Format(5, 10, subnormals=False),
           mf.Format(4, 3, overflow="saturate", infinities=False)]


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_every_format_round_trips_bit_for_bit_and_is_recorded(tmp_path, fmt):
    values = np.random.default_rng(0).standard_normal((3, 5)) * 8
    model = Holder(values, fmt)
    model.save_weights(tmp_path / "w")
    fresh = Holder(np.zeros((3, 5)), fmt)
    fresh.load_weights(tmp_path / "w")
    assert same(fresh.w.numpy(), model.w.numpy())
    recorded = ckpt().read(tmp_path / "w")["variables"]["w"]
    assert recorded.fmt == fmt and same(recorded.numpy(), model.w.numpy())


def test_another_format_is_rounded_into_the_variable(tmp_path):
    values = np.float32([1 + 2**-20, 3e-41, -7.123456])          # not tf32 values
    Holder(values, mf.float32).save_weights(tmp_path / "w32")
    tf32 = Holder(np.zeros(3), mf.tf32)
    tf32.load_weights(tmp_path / "w32")
    assert same(tf32.w.numpy(), mf.round_to(values, mf.tf32))
    half = Holder(np.zeros(3), mf.float16)
    half.load_weights(tmp_path / "w32")
    assert same(half.w.numpy(), values.astype(np.float16))
    tf32.load_state_dict({"w": values})                           # a dict of float32 arrays rounds the same way
    assert same(tf32.w.numpy(), mf.round_to(values, mf.tf32))


def test_a_recorded_format_is_checked(tmp_path):
    Holder(np.float32([1 + 2**-20]), mf.float32).save_weights(tmp_path / "w")
    rewrite(tmp_path / "w", lambda index: index["variables"][0]["format"].update(man_bits=10))   # claims tf32
    with pytest.raises(ValueError, match="variable 'w'.* cannot represent"):
        Holder(np.zeros(1), mf.tf32).load_weights(tmp_path / "w")


def rewrite(path, edit_index=lambda index: None, edit_array=lambda a: a):
    """Rewrite a checkpoint through numpy.savez, editing its index and arrays."""
    with zipfile.ZipFile(path) as zf:
        members = {n[:-4]: np.lib.format.read_array(zf.open(n)) for n in zf.namelist()}
    index = json.loads(bytes(members.pop("__index__")).decode())
    edit_index(index)
    with open(path, "wb") as f:
        np.savez(f, __index__=np.frombuffer(json.dumps(index).encode(), np.uint8),
                 **{k: edit_array(a) for k, a in members.items()})


def test_big_endian_arrays_are_read_as_numbers(tmp_path):
    model, other = linear(0), linear(1)
    big = {k: v.astype(v.dtype.newbyteorder(">")) for k, v in model.state_dict().items()}
    other.load_state_dict(big)
    assert all(same(a, b) for a, b in zip(other.get_weights(), model.get_weights()))
    half, half_other = Holder(np.arange(4.0) / 3, mf.float16), Holder(np.zeros(4), mf.float16)
    half_other.load_state_dict({"w": half.w.numpy().astype(">f2")})
    assert same(half_other.w.numpy(), half.w.numpy())
    model.save_weights(tmp_path / "w")
    rewrite(tmp_path / "w", edit_array=lambda a: a.astype(a.dtype.newbyteorder(">")))
    third = linear(2)
    third.load_weights(tmp_path / "w")
    assert all(same(a, b) for a, b in zip(third.get_weights(), model.get_weights()))


def test_loading_runs_no_code_and_refuses_other_files(tmp_path):
    model = linear()
    model.save_weights(tmp_path / "w")
    rewrite(tmp_path / "w", edit_array=lambda a: np.array([print], dtype=object))
    before = model.get_weights()
    with pytest.raises(ValueError, match="cannot read .* as a minifp checkpoint: .*allow_pickle"):
        model.load_weights(tmp_path / "w")
    (tmp_path / "x").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="cannot read .* as a minifp checkpoint"):
        model.load_weights(tmp_path / "x")
    assert all(same(a, b) for a, b in zip(model.get_weights(), before))


# -- optimizers and scalers check the whole state dict before changing anything ---------------------------


def stepped_adam(lr=0.1):
    p = mf.tensor(np.arange(5.0), requires_grad=True)
    opt = Adam([p], lr=lr)
    p.grad = mf.tensor(np.ones(5))
    opt.step()
    return opt


def sgd_state():
    p = mf.tensor(np.arange(5.0), requires_grad=True)
    opt = SGD([p], lr=0.1, momentum=0.9)
    p.grad = mf.tensor(np.ones(5))
    opt.step()
    return opt.state_dict()


def unchanged(before, after):
    if isinstance(before, dict):
        return before.keys() == after.keys() and all(unchanged(before[k], after[k]) for k in before)
    if isinstance(before, list):
        return len(before) == len(after) and all(unchanged(a, b) for a, b in zip(before, after))
    return same(np.asarray(before), np.asarray(after)) if isinstance(before, np.ndarray) else before == after


def edited(state_dict, **paths):
    out = copy.deepcopy(state_dict)
    for path, value in paths.items():
        *keys, last = path.split("__")
        target = out
        for k in keys:
            target = target[int(k)] if k.isdigit() else target[k]
        if value is DELETE:
            del target[last]
        else:
            target[last] = value
    return out


DELETE = object()
OPTIMIZER_CASES = {        # edit of a good Adam state dict -> what the error must say
    "new hyper and bad iterations": ({"hyper__lr": 0.5, "iterations": "many"}, r"'iterations' must be an integer >= 0, got 'many'"),
    "a (1,) state for a (5,) parameter": ({"state__0__exp_avg": np.zeros(1, np.float32)},
                                          r"'exp_avg' is an array of shape \(1,\).* needs float32 of shape \(5,\)"),
    "a missing state key": ({"state__0__exp_avg_sq": DELETE}, r"has \['exp_avg', 'step'\].* keeps \['exp_avg', 'e"),
    "a missing key": ({"state": DELETE}, r"missing keys \['state'\]"),
    "a bad learning rate": ({"hyper__lr": -1.0}, r"'hyper' holds values that Adam\(\) refuses.*learning rate"),
    "state for two parameters": ({"state": [{}, {}]}, r"'state' holds state for 2 parameters; this optimizer has 1"),
}


@pytest.mark.parametrize("case", OPTIMIZER_CASES)
def test_a_bad_optimizer_state_changes_nothing(case):
    opt = stepped_adam()
    before = opt.state_dict()
    edits, message = OPTIMIZER_CASES[case]
    with pytest.raises((TypeError, ValueError), match=message):
        opt.load_state_dict(edited(before, **edits))
    assert unchanged(before, opt.state_dict())


def test_an_sgd_state_does_not_load_into_adam():
    opt = stepped_adam()
    before = opt.state_dict()
    with pytest.raises(ValueError, match=r"'hyper' \(another optimizer's state\?\) does not match: missing keys \["
                                         r"'betas', 'eps'\], unexpected keys \['dampening', 'momentum', 'nesterov'\]"):
        opt.load_state_dict(sgd_state())
    assert unchanged(before, opt.state_dict())


LSO_CASES = {
    "bad loss scale after a good inner state": ({"inner__hyper__lr": 0.5, "loss_scale": "big"},
                                                r"'loss_scale' must be a finite number > 0, got 'big'"),
    "negative counter": ({"counter": -1}, r"'counter' must be an integer in \[0, 1999\], got -1"),
    "static state into a dynamic optimizer": ({"dynamic": False}, r"'dynamic' is False; this LossScaleOptimizer is d"),
    "inner SGD state": ({"inner": sgd_state()}, r"'hyper' \(another optimizer's state\?\) does not match"),
}


@pytest.mark.parametrize("case", LSO_CASES)
def test_a_bad_loss_scale_optimizer_state_changes_nothing(case):
    opt = LossScaleOptimizer(stepped_adam())
    before = opt.state_dict()
    edits, message = LSO_CASES[case]
    with pytest.raises((TypeError, ValueError), match=message):
        opt.load_state_dict(edited(before, **edits))
    assert unchanged(before, opt.state_dict()) and opt.inner_optimizer.hyper["lr"] == 0.1


SCALER_CASES = {
    "growth_interval 0": ({"growth_interval": 0}, r"'growth_interval' must be an integer >= 1, got 0"),
    "tracker past the interval": ({"_growth_tracker": 5}, r"'_growth_tracker' must be an integer in \[0, 2\], got 5"),
    "missing scale": ({"scale": DELETE}, r"missing keys \['scale'\]"),
    "NaN scale": ({"scale": float("nan")}, r"'scale' must be a finite number > 0, got nan"),
    "backoff above 1": ({"backoff_factor": 1.5}, r"'backoff_factor' must be a number in \(0, 1\), got 1.5"),
}


@pytest.mark.parametrize("case", SCALER_CASES)
def test_a_bad_grad_scaler_state_changes_nothing(case):
    scaler = GradScaler(init_scale=8.0, growth_interval=3)
    before = scaler.state_dict()
    edits, message = SCALER_CASES[case]
    with pytest.raises((TypeError, ValueError), match=message):
        scaler.load_state_dict(edited(before, **edits))
    assert scaler.state_dict() == before


def test_a_keras_optimizer_gets_its_parameters_before_the_first_step():
    saved = stepped_adam()
    p = mf.tensor(saved.params[0].numpy(), requires_grad=True)
    fresh = Adam(lr=0.1)
    with pytest.raises(ValueError, match=r"holds state for 1 parameters; this optimizer has 0 .*build\(params\)"):
        fresh.load_state_dict(saved.state_dict())
    wrapped = LossScaleOptimizer(fresh)
    wrapped.build([p])
    fresh.build([p])                                  # again with the same ones: nothing changes
    with pytest.raises(ValueError, match="already built with 1 parameters"):
        fresh.build([p, mf.tensor([1.0])])
    fresh.load_state_dict(saved.state_dict())
    assert fresh.params == [p] and unchanged(saved.state_dict(), fresh.state_dict())
    q = saved.params[0]
    for opt, w in ((saved, q), (fresh, p)):
        opt.apply_gradients([(mf.tensor(np.full(5, 0.5)), w)])
    assert same(p.numpy(), q.numpy())


# -- one call saves, one restores ---------------------------------------------------------------------------


def test_load_checks_every_part_before_changing_any(tmp_path):
    model = linear(0)
    ckpt().save(tmp_path / "c", model, SGD(model.parameters(), lr=0.1))
    other = linear(1)
    weights, random_state = other.get_weights(), get_state()
    with pytest.raises(ValueError, match="optimizer of class SGD; optimizer is of class Adam"):
        ckpt().load(tmp_path / "c", other, Adam(other.parameters()))
    with pytest.raises(ValueError, match="holds no loss scaler state; pass scaler=None"):
        ckpt().load(tmp_path / "c", other, scaler=GradScaler())
    with pytest.raises(ValueError, match="optimizer updates \\['1.kernel', '1.bias'\\]; the checkpoint's"):
        ckpt().load(tmp_path / "c", other, SGD(other[1].parameters()))
    model.save_weights(tmp_path / "w")
    with pytest.raises(ValueError, match="holds no optimizer state"):
        ckpt().load(tmp_path / "w", other, SGD(other.parameters()))
    with pytest.raises(TypeError, match="scaler must be a minifp.amp.GradScaler or None"):
        ckpt().load(tmp_path / "c", other, scaler=LossScaleOptimizer(Adam()))
    assert all(same(a, b) for a, b in zip(other.get_weights(), weights)) and get_state() == random_state


def digits():
    (x, y), _ = load_digits()
    return x[:320], y[:320]


def torch_parts():
    """A PyTorch-style setup: Dropout, Adam, a GradScaler whose scale moves within a few steps."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.25), nn.Linear(64, 10))
    return model, Adam(model.parameters(), lr=1e-2), GradScaler(init_scale=2.0**16, growth_interval=3)


def torch_train(parts, steps):
    model, opt, scaler = parts
    x, y = digits()
    for _ in range(steps):
        idx = rng().permutation(len(x))[:32]          # shuffled batches from minifp's generator
        opt.zero_grad()
        with autocast(mf.float16):
            loss = cross_entropy(model(x[idx]), y[idx])
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


def fit_parts():
    """The TensorFlow guide's setup: mixed_float16, compile("adam") (a LossScaleOptimizer), fit."""
    model = digits_mlp("mixed_float16")
    model.compile("adam", "sparse_categorical_crossentropy")
    model(digits()[0][:1])                            # Dense layers make their variables on the first call
    return model, None, None


def fit_train(parts, epochs):
    parts[0].fit(*digits(), batch_size=32, epochs=epochs, verbose=0)


STYLES = {"pytorch loop": (torch_parts, torch_train, 6), "fit": (fit_parts, fit_train, 1)}


def outcome(parts):
    model, _, scaler = parts
    if scaler is not None:
        scale, counter = scaler.get_scale(), scaler.state_dict()["_growth_tracker"]
    else:
        scale, counter = model.optimizer.loss_scale, model.optimizer.dynamic_counter
    return {"scale": np.float64(scale), "counter": np.int64(counter),
            **{k: v.numpy() for k, v in model.named_variables()}}


def resume(style, path, out):
    """In a fresh process: build the setup, restore it from path, train on, and write the outcome to out."""
    make, train, n = STYLES[style]
    parts = make()
    ckpt().load(path, *parts)
    train(parts, n)
    np.savez(out, **outcome(parts))


@pytest.mark.parametrize("style", STYLES)
def test_resuming_in_a_fresh_process_is_bit_exact(tmp_path, style):
    make, train, n = STYLES[style]
    mf.manual_seed(3)
    parts = make()
    train(parts, n)
    ckpt().save(tmp_path / "c", *parts)
    saved = outcome(parts)
    train(parts, n)
    expected = outcome(parts)
    code = f"import sys; sys.path.insert(0, 'tests'); import test_checkpoint as t; t.resume(*sys.argv[1:])"
    subprocess.run([sys.executable, "-c", code, style, str(tmp_path / "c"), str(tmp_path / "out.npz")],
                   cwd=ROOT, check=True, timeout=300)
    with np.load(tmp_path / "out.npz") as got:
        assert sorted(got.files) == sorted(expected)
        assert all(same(got[k], expected[k]) for k in expected)
    assert not all(same(saved[k], expected[k]) for k in expected if k not in ("scale", "counter"))
    if style == "pytorch loop":
        assert len({h["scale"] for h in parts[2].history}) > 1          # the loss scale moved, and was restored

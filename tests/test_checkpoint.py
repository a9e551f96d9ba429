"""Checkpoints of either face: saved atomically at exactly the path asked, with every variable's format; matched
by name; every part checked before anything changes; resuming in a fresh process is bit-exact for a PyTorch-style
loop with GradScaler, for a Keras fit under mixed_float16, and for both with their GEMMs under fp8_autocast."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import minifp as mf
import minifp.torch as torch
from minifp import checkpoint
from minifp._digits import digits_mlp
from minifp._fp8 import get_scaling, scaling_state
from minifp._random import get_state, rng
from minifp.datasets import load_digits

ROOT = Path(__file__).resolve().parents[1]


def bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def same(a, b):
    return a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


class Holder:
    """A layer of no face but the engine's protocol (minifp/_layers.py), holding one variable of any format."""

    def __init__(self, values, fmt):
        self.w = mf.tensor(values, dtype=fmt)

    def _engine_layers(self):
        yield "holder", self

    def _engine_variables(self):
        yield "w", self.w


def linear(seed=0):
    mf.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))


def weights(model):
    return [mf.Tensor.numpy(v).copy() for _, v in model._engine_variables()]


def set_weights(model, values):
    for (_, v), a in zip(model._engine_variables(), values):
        v.assign(a)


def fp8_step(model, recipe=None):
    """One forward and backward of the model under fp8_autocast: its GEMMs get scaling states."""
    x = mf.tensor(np.random.default_rng(0).standard_normal((4, 2)), dtype=mf.float32)
    with mf.fp8_autocast(recipe=recipe or mf.DelayedScaling(amax_history_len=8)):
        out = model(x)
    mf.sum(out * out).backward()


def fp8_states(model):
    """Each variable's and layer's fp8 scaling state as comparable data (bits of histories and scales)."""
    owners = list(model._engine_variables()) + list(model._engine_layers())
    return [None if (s := get_scaling(o)) is None else
            (s[0], {r: (h.tobytes(), np.float32(v).tobytes()) for r, (h, v) in s[1].items()}) for _, o in owners]


# -- the file: where, atomic, formats ---------------------------------------------------------------


def test_saves_exactly_at_the_path_asked(tmp_path):
    model, other = linear(0), linear(1)
    checkpoint.save_weights(tmp_path / "w.ckpt", model)
    assert os.listdir(tmp_path) == ["w.ckpt"]
    checkpoint.load_weights(str(tmp_path / "w.ckpt"), other)
    assert all(same(a, b) for a, b in zip(weights(other), weights(model)))


def test_a_folder_or_a_missing_folder_is_refused(tmp_path):
    model = linear()
    with pytest.raises(IsADirectoryError, match="is a folder; give a file name"):
        checkpoint.save(tmp_path, model)
    with pytest.raises(FileNotFoundError, match="folder .* does not exist"):
        checkpoint.save(tmp_path / "missing" / "w.npz", model)
    with pytest.raises(TypeError, match="path must be a str or os.PathLike, got int"):
        checkpoint.save(3, model)
    assert os.listdir(tmp_path) == []


def fail_on_second_array(monkeypatch):
    write, calls = np.lib.format.write_array, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return write(*args, **kwargs)
    monkeypatch.setattr(np.lib.format, "write_array", flaky)


@pytest.mark.parametrize("how", ["save_weights", "save"])
def test_an_interrupted_save_leaves_the_previous_checkpoint(tmp_path, monkeypatch, how):
    model = linear()
    path = tmp_path / "w.npz"
    save = getattr(checkpoint, how)
    save(path, model)
    before, values = path.read_bytes(), weights(model)
    set_weights(model, [w + 1 for w in values])
    with monkeypatch.context() as m:
        fail_on_second_array(m)
        with pytest.raises(OSError, match="disk full"):
            save(path, model)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["w.npz"]     # no temporary file left
    checkpoint.load_weights(path, model)
    assert all(same(a, b) for a, b in zip(weights(model), values))


FORMATS = [mf.float32, mf.tf32, mf.float16, mf.bfloat16, mf.float8_e4m3, mf.float8_e5m2,
           mf.Format(5, 10, subnormals=False),
           mf.Format(4, 3, overflow="saturate", infinities=False)]


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_every_format_round_trips_bit_for_bit_and_is_recorded(tmp_path, fmt):
    values = np.random.default_rng(0).standard_normal((3, 5)) * 8
    model = Holder(values, fmt)
    checkpoint.save_weights(tmp_path / "w", model)
    fresh = Holder(np.zeros((3, 5)), fmt)
    checkpoint.load_weights(tmp_path / "w", fresh)
    assert same(fresh.w.numpy(), model.w.numpy())
    recorded = checkpoint.read(tmp_path / "w")["variables"]["w"]
    assert recorded.fmt == fmt and same(recorded.numpy(), model.w.numpy())


def test_another_format_is_rounded_into_the_variable(tmp_path):
    values = np.float32([1 + 2**-20, 3e-41, -7.123456])          # not tf32 values
    checkpoint.save_weights(tmp_path / "w32", Holder(values, mf.float32))
    tf32 = Holder(np.zeros(3), mf.tf32)
    checkpoint.load_weights(tmp_path / "w32", tf32)
    assert same(tf32.w.numpy(), mf.round_to(values, mf.tf32))
    half = Holder(np.zeros(3), mf.float16)
    checkpoint.load_weights(tmp_path / "w32", half)
    assert same(half.w.numpy(), values.astype(np.float16))


def test_a_recorded_format_is_checked(tmp_path):
    checkpoint.save_weights(tmp_path / "w", Holder(np.float32([1 + 2**-20]), mf.float32))
    rewrite(tmp_path / "w", lambda index: index["variables"][0]["format"].update(man_bits=10))   # claims tf32
    with pytest.raises(ValueError, match="variable 'w'.* cannot represent"):
        checkpoint.load_weights(tmp_path / "w", Holder(np.zeros(1), mf.tf32))


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
    model = linear(0)
    checkpoint.save_weights(tmp_path / "w", model)
    rewrite(tmp_path / "w", edit_array=lambda a: a.astype(a.dtype.newbyteorder(">")))
    third = linear(2)
    checkpoint.load_weights(tmp_path / "w", third)
    assert all(same(a, b) for a, b in zip(weights(third), weights(model)))
    half, half_other = Holder(np.arange(4.0) / 3, mf.float16), Holder(np.zeros(4), mf.float16)
    checkpoint.save_weights(tmp_path / "h", half)
    rewrite(tmp_path / "h", edit_array=lambda a: a.astype(a.dtype.newbyteorder(">")))
    checkpoint.load_weights(tmp_path / "h", half_other)
    assert same(half_other.w.numpy(), half.w.numpy())


def test_loading_runs_no_code_and_refuses_other_files(tmp_path):
    model = linear()
    checkpoint.save_weights(tmp_path / "w", model)
    rewrite(tmp_path / "w", edit_array=lambda a: np.array([print], dtype=object))
    before = weights(model)
    with pytest.raises(ValueError, match="cannot read .* as a minifp checkpoint: .*allow_pickle"):
        checkpoint.load_weights(tmp_path / "w", model)
    (tmp_path / "x").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="cannot read .* as a minifp checkpoint"):
        checkpoint.load_weights(tmp_path / "x", model)
    assert all(same(a, b) for a, b in zip(weights(model), before))


# -- every part is checked before any changes -----------------------------------------------------------------


def stepped(model, opt):
    for p in model.parameters():
        p.grad = torch.ones(tuple(p.shape))
    opt.step()
    return opt


def test_load_checks_every_part_before_changing_any(tmp_path):
    model = linear(0)
    checkpoint.save(tmp_path / "c", model, stepped(model, torch.optim.SGD(model.parameters(), lr=0.1,
                                                                          momentum=0.9)))
    other = linear(1)
    values, random_state = weights(other), get_state()
    with pytest.raises(ValueError, match="optimizer of class SGD; optimizer is of class Adam"):
        checkpoint.load(tmp_path / "c", other, torch.optim.Adam(other.parameters()))
    with pytest.raises(ValueError, match="holds no loss scaler state; pass scaler=None"):
        checkpoint.load(tmp_path / "c", other, scaler=torch.amp.GradScaler("cuda"))
    with pytest.raises(ValueError, match="optimizer updates \\['1.weight', '1.bias'\\]; the checkpoint's"):
        checkpoint.load(tmp_path / "c", other, torch.optim.SGD(other[1].parameters()))
    checkpoint.save_weights(tmp_path / "w", model)
    with pytest.raises(ValueError, match="holds no optimizer state"):
        checkpoint.load(tmp_path / "w", other, torch.optim.SGD(other.parameters()))
    from minifp import keras
    with pytest.raises(TypeError, match="scaler must be a minifp.torch GradScaler or None"):
        checkpoint.load(tmp_path / "c", other, scaler=keras.mixed_precision.LossScaleOptimizer(
            keras.optimizers.Adam()))
    with pytest.raises(TypeError, match="model must be a layer or model of a minifp face"):
        checkpoint.load(tmp_path / "c", object())
    assert all(same(a, b) for a, b in zip(weights(other), values)) and get_state() == random_state


def test_a_bad_torch_optimizer_state_in_the_file_changes_nothing(tmp_path):
    model = linear(0)
    checkpoint.save(tmp_path / "c", model, stepped(model, torch.optim.Adam(model.parameters(), lr=0.1)))
    rewrite(tmp_path / "c", lambda index: index["optimizer"]["state"]["param_groups"].append(
        index["optimizer"]["state"]["param_groups"][0]))
    other = linear(1)
    opt = torch.optim.Adam(other.parameters(), lr=0.5)
    values = weights(other)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        checkpoint.load(tmp_path / "c", other, opt)
    assert all(same(a, b) for a, b in zip(weights(other), values)) and opt.param_groups[0]["lr"] == 0.5
    assert not opt.state


def test_a_bad_scaler_state_in_the_file_changes_nothing(tmp_path):
    model = linear(0)
    checkpoint.save(tmp_path / "c", model, scaler=torch.amp.GradScaler("cuda", init_scale=8.0))
    rewrite(tmp_path / "c", lambda index: index["scaler"]["state"].update(scale="big"))
    scaler = torch.amp.GradScaler("cuda", init_scale=4.0)
    with pytest.raises(ValueError, match="the scaler's state does not fit scaler GradScaler: its 'scale' must be a finite number, got 'big'"):
        checkpoint.load(tmp_path / "c", linear(1), scaler=scaler)
    assert scaler.get_scale() == 4.0


def keras_model(policy="mixed_float16"):
    model = digits_mlp(policy)
    model.compile("adam", "sparse_categorical_crossentropy")
    return model


def test_a_keras_optimizer_is_built_on_load_and_checked_first(tmp_path):
    (x, y), _ = load_digits()
    model = keras_model()
    model.fit(x[:64], y[:64], batch_size=32, epochs=1, verbose=0)
    checkpoint.save(tmp_path / "c", model)
    fresh = keras_model()
    assert not fresh.optimizer.built
    checkpoint.load(tmp_path / "c", fresh)
    assert fresh.optimizer.built and int(fresh.optimizer.iterations.numpy()) == 2
    assert all(same(np.asarray(a.numpy()), np.asarray(b.numpy()))
               for a, b in zip(model.optimizer.variables, fresh.optimizer.variables))
    plain = digits_mlp("float32")
    plain.compile("adam", "sparse_categorical_crossentropy")          # Adam, not a LossScaleOptimizer
    values = weights(plain)
    with pytest.raises(ValueError, match="optimizer of class LossScaleOptimizer; optimizer is of class Adam"):
        checkpoint.load(tmp_path / "c", plain)
    rewrite(tmp_path / "c", lambda index: index["optimizer"]["state"]["variables"].pop())
    with pytest.raises(ValueError, match="the optimizer's state does not fit optimizer .*: the saved variables have shapes and dtypes"):
        checkpoint.load(tmp_path / "c", keras_model())
    assert all(same(a, b) for a, b in zip(weights(plain), values))


def test_tf_keras_loss_scale_optimizer_keeps_its_scale(tmp_path):
    from minifp.tf import keras
    model = digits_mlp("mixed_float16")
    opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=64.0,
                                                   dynamic_growth_steps=3)
    variables = model.trainable_variables
    opt.apply_gradients([(mf.tensor(np.full(v.shape, np.inf, np.float32)), v) for v in variables])   # halves
    opt.apply_gradients([(mf.tensor(np.zeros(v.shape, np.float32)), v) for v in variables])          # counts
    checkpoint.save(tmp_path / "c", model, opt)
    fresh = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=64.0,
                                                     dynamic_growth_steps=3)
    checkpoint.load(tmp_path / "c", digits_mlp("mixed_float16"), fresh)
    assert float(fresh.loss_scale.numpy()) == 32.0 and int(fresh.dynamic_counter.numpy()) == 1
    assert int(fresh.iterations.numpy()) == int(opt.iterations.numpy())


# -- variables are matched by name ---------------------------------------------------------------------------------


def dense_model(*layers):
    from minifp import keras
    return keras.Sequential([keras.Input((2,)), *layers])


def test_a_model_that_does_not_match_by_name_is_refused_and_unchanged(tmp_path):
    """Another face (same count, shapes that fit transposed), renamed layers, other shapes: refused, naming the
    first mismatch, before the model, its fp8 states or the random state change."""
    from minifp.keras.layers import Dense
    checkpoint.save(tmp_path / "torch", torch.nn.Linear(2, 2))
    checkpoint.save(tmp_path / "keras", dense_model(Dense(2, name="encoder")))
    cases = [("torch", lambda: dense_model(Dense(2)),
              "the model's variable 'dense/kernel' is not in it, which holds 'weight' in its place"),
             ("keras", lambda: torch.nn.Linear(2, 2),
              "the model's variable 'weight' is not in it, which holds 'encoder/kernel' in its place"),
             ("keras", lambda: dense_model(Dense(2, name="decoder")), "the model's variable 'decoder/kernel'"),
             ("keras", lambda: dense_model(Dense(2, name="encoder"), Dense(2)),
              "the model's variable 'dense/kernel' is not in it \\(the model has 4 variables; 2 are saved\\)"),
             ("keras", lambda: dense_model(Dense(3, name="encoder")), "entry 'encoder/kernel' has shape \\(2, 2\\)")]
    for file, make, message in cases:
        model = make()
        fp8_step(model)
        values, scales, random_state = weights(model), fp8_states(model), get_state()
        assert any(scales)
        with pytest.raises(ValueError, match=message):
            checkpoint.load(tmp_path / file, model)
        assert all(same(a, b) for a, b in zip(weights(model), values))
        assert fp8_states(model) == scales and get_state() == random_state


def test_identically_built_keras_models_match_by_name(tmp_path):
    """Automatic names count what the process built before (dense_3 ...): the file keys them by their place."""
    (x, y), _ = load_digits()
    first, second = keras_model(), keras_model()
    assert [n for n, _ in first._engine_variables()] != [n for n, _ in second._engine_variables()]
    first.fit(x[:64], y[:64], batch_size=32, epochs=1, verbose=0)
    checkpoint.save(tmp_path / "c", first)
    assert list(checkpoint.read(tmp_path / "c")["variables"]) == [
        f"{layer}/{v}" for layer in ("dense", "dense_1", "dense_2") for v in ("kernel", "bias")]
    checkpoint.load(tmp_path / "c", second)
    assert all(same(a, b) for a, b in zip(weights(second), weights(first)))
    assert all(same(np.asarray(a.numpy()), np.asarray(b.numpy()))
               for a, b in zip(first.optimizer.variables, second.optimizer.variables))


def test_given_names_stay_and_made_up_ones_are_numbered_in_the_model(tmp_path):
    from minifp import keras
    from minifp.keras.layers import Dense

    def nested():
        inner = keras.Sequential([keras.Input((2,)), Dense(2, name="dense"), Dense(2)])
        inputs = keras.Input((2,))
        return keras.Model(inputs, Dense(2, name="head")(Dense(2, name="dense_1")(inner(Dense(2)(inputs)))))
    model, other = nested(), nested()
    checkpoint.save(tmp_path / "c", model)
    assert [k.rsplit("/", 1)[0] for k in checkpoint.read(tmp_path / "c")["variables"]][::2] == [
        "dense", "sequential/dense", "sequential/dense_1", "dense_1", "head"]
    checkpoint.load(tmp_path / "c", other)
    assert all(same(a, b) for a, b in zip(weights(other), weights(model)))


def test_tf_keras_made_up_names_are_numbered_in_the_model(tmp_path):
    """tf.keras names its functional models model_<n> and inputs input_<n> in the process: numbered in the model."""
    from minifp.tf import keras

    def nested():
        inputs = keras.Input((2,))
        inner = keras.Model(inputs, keras.layers.Dense(2)(inputs))
        outer_inputs = keras.Input((2,))
        return keras.Model(outer_inputs, keras.layers.Dense(2)(inner(outer_inputs)))
    model, other = nested(), nested()
    checkpoint.save(tmp_path / "c", model)
    assert list(checkpoint.read(tmp_path / "c")["variables"]) == [
        "model/dense/kernel", "model/dense/bias", "dense/kernel", "dense/bias"]
    checkpoint.load(tmp_path / "c", other)
    assert all(same(a, b) for a, b in zip(weights(other), weights(model)))


# -- fp8: each GEMM's scaling state ------------------------------------------------------------------------------


def fp8_model(seed):
    """A frozen Linear (its GEMM's state is its layer's) before a trainable one (its weight's)."""
    mf.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    model[0].weight.requires_grad_(False)
    return model


def test_fp8_states_of_weights_and_layers_are_restored(tmp_path):
    model = fp8_model(0)
    fp8_step(model)
    fp8_step(model)
    checkpoint.save(tmp_path / "c", model)
    entries = checkpoint.read(tmp_path / "c")["fp8"]
    assert [(e["owner"], e["name"]) for e in entries] == [("variable", "2.weight"), ("layer", "0")]
    other = fp8_model(1)
    fp8_step(other, mf.DelayedScaling(amax_history_len=3, margin=1))      # states of another recipe: replaced
    checkpoint.load(tmp_path / "c", other)
    assert fp8_states(other) == fp8_states(model) and any(fp8_states(other))
    fresh = fp8_model(2)
    fp8_step(fresh)
    checkpoint.save(tmp_path / "none", fp8_model(3))                       # saved before any fp8 step
    checkpoint.load(tmp_path / "none", fresh)
    assert not any(fp8_states(fresh))                                      # forgotten, as in the saved run


def test_a_file_without_fp8_states_loads(tmp_path):
    """A file written before fp8 states were saved (no "fp8" in its index): the model loads, its GEMMs start
    afresh."""
    model, other = fp8_model(0), fp8_model(1)
    fp8_step(model)
    fp8_step(other)
    checkpoint.save(tmp_path / "c", model, torch.optim.SGD(model.parameters(), lr=0.1))
    rewrite(tmp_path / "c", lambda index: index.pop("fp8"))
    assert checkpoint.read(tmp_path / "c")["fp8"] is None
    checkpoint.load(tmp_path / "c", other, torch.optim.SGD(other.parameters(), lr=0.1))
    assert all(same(a, b) for a, b in zip(weights(other), weights(model))) and not any(fp8_states(other))


def fp8_edit(edit):
    return lambda index: edit(index["fp8"][0])


@pytest.mark.parametrize("edit, message", [
    (lambda e: e.update(name="1.weight"), "fp8 scaling state of variable '1.weight', which the model does not have"),
    (lambda e: e.update(owner="module"), "fp8 scaling state of module '2.weight'"),
    (lambda e: e["recipe"].update(fp8_format="E5M2"), "fp8_format must be one of \\['HYBRID', 'E4M3'\\]"),
    (lambda e: e["recipe"].update(amax_history_len=9), "the input amax history must be float32 of shape \\(9,\\)"),
    (lambda e: e["recipe"].update(margin=-1), "margin must be an integer >= 0"),
    (lambda e: e["roles"].pop("grad_output"), "missing keys \\['grad_output'\\]"),
    (lambda e: e["roles"]["weight"].update(scale=2.0), "the weight scale must be a float32 number, got 2.0"),
])
def test_an_fp8_state_in_the_file_is_checked_before_anything_changes(tmp_path, edit, message):
    model = fp8_model(0)
    fp8_step(model)
    checkpoint.save(tmp_path / "c", model)
    rewrite(tmp_path / "c", fp8_edit(edit))
    other = fp8_model(1)
    fp8_step(other, mf.DelayedScaling(amax_history_len=3))
    values, scales, random_state = weights(other), fp8_states(other), get_state()
    with pytest.raises(ValueError, match=message):
        checkpoint.load(tmp_path / "c", other)
    assert all(same(a, b) for a, b in zip(weights(other), values))
    assert fp8_states(other) == scales and get_state() == random_state


def test_a_recipe_of_functions_is_not_saved(tmp_path):
    model = fp8_model(0)
    fp8_step(model, mf.DelayedScaling(amax_history_len=8, amax_compute_algo=lambda h: h.max()))
    with pytest.raises(TypeError, match="fp8 scaling state of '2.weight': its recipe's amax_compute_algo is a "
                                        "function .*checkpoint holds data only"):
        checkpoint.save(tmp_path / "c", model)
    assert os.listdir(tmp_path) == []


# -- resuming in a fresh process ----------------------------------------------------------------------------------


def digits():
    (x, y), _ = load_digits()
    return x[:320], y[:320]


def torch_parts():
    """A PyTorch-style setup: Dropout, Adam, a GradScaler whose scale moves within a few steps."""
    nn = torch.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.25), nn.Linear(64, 10)).cuda()
    return model, torch.optim.Adam(model.parameters(), lr=1e-2), \
        torch.amp.GradScaler("cuda", init_scale=2.0**16, growth_interval=3)


def torch_train(parts, steps, fp8=False):
    """steps of a PyTorch-style loop on shuffled batches (from minifp's generator); the losses. fp8: the model
    under fp8_autocast with Transformer Engine's default recipe (and no autocast or scaler)."""
    model, opt, scaler = parts
    x, y = digits()
    losses = []
    for _ in range(steps):
        idx = rng().permutation(len(x))[:32]
        opt.zero_grad()
        region = mf.fp8_autocast(recipe=mf.DelayedScaling()) if fp8 else torch.autocast("cuda", dtype=torch.float16)
        with region:
            loss = torch.nn.functional.cross_entropy(model(torch.tensor(x[idx], device="cuda")),
                                                     torch.tensor(y[idx], device="cuda"))
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        losses.append(loss.item())
    return losses


def fp8_torch_parts():
    """Linear(64, 64)-ReLU-Linear(64, 10), SGD with momentum, its GEMMs in fp8."""
    nn = torch.nn
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).cuda()
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), None


def fit_parts():
    """The TensorFlow guide's setup: mixed_float16, compile("adam") (a LossScaleOptimizer), fit."""
    return keras_model(), None, None


def fit_train(parts, epochs, fp8=False):
    """fit for some epochs; the losses. fp8: the whole fit inside one fp8_autocast, as `minifp train --fp8`."""
    region = mf.fp8_autocast(recipe=mf.DelayedScaling()) if fp8 else mf.fp8_autocast(enabled=False)
    with region:
        return parts[0].fit(*digits(), batch_size=32, epochs=epochs, verbose=0).history["loss"]


def fp8_fit_parts():
    from minifp import keras
    model = digits_mlp("mixed_float16")
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "sparse_categorical_crossentropy")
    return model, None, None


STYLES = {"pytorch loop": (torch_parts, torch_train, 6), "fit": (fit_parts, fit_train, 1),
          "fp8 pytorch loop": (fp8_torch_parts, lambda p, n: torch_train(p, n, fp8=True), 4),
          "fp8 fit": (fp8_fit_parts, lambda p, n: fit_train(p, n, fp8=True), 1)}


def outcome(parts, losses):
    """Every number the run leaves: weights, losses, the loss scale and each GEMM's fp8 scales and histories."""
    model, _, scaler = parts
    out = {"losses": np.float64(losses), **{f"v{i}": w for i, w in enumerate(weights(model))}}
    if scaler is not None:
        out["scale"], out["counter"] = np.float64(scaler.get_scale()), np.int64(scaler.state_dict()["_growth_tracker"])
    elif hasattr(getattr(model, "optimizer", None), "dynamic_scale"):
        out["scale"], out["counter"] = model.optimizer.dynamic_scale.numpy(), model.optimizer.step_counter.numpy()
    for i, (_, v) in enumerate(model._engine_variables()):
        for role, (history, scale) in (scaling_state(v) or {}).items():
            out[f"fp8 {i} {role} history"], out[f"fp8 {i} {role} scale"] = history, np.float32(scale)
    return out


def resume(style, path, out):
    """In a fresh process: build the setup, restore it from path, train on, and write the outcome to out."""
    import warnings
    warnings.simplefilter("ignore")
    make, train, n = STYLES[style]
    parts = make()
    checkpoint.load(path, *parts)
    np.savez(out, **outcome(parts, train(parts, n)))


@pytest.mark.parametrize("style", STYLES)
def test_resuming_in_a_fresh_process_is_bit_exact(tmp_path, style):
    make, train, n = STYLES[style]
    mf.manual_seed(3)
    parts = make()
    saved = outcome(parts, train(parts, n))
    checkpoint.save(tmp_path / "c", *parts)
    expected = outcome(parts, train(parts, n))
    code = "import sys; sys.path.insert(0, 'tests'); import test_checkpoint as t; t.resume(*sys.argv[1:])"
    subprocess.run([sys.executable, "-c", code, style, str(tmp_path / "c"), str(tmp_path / "out.npz")],
                   cwd=ROOT, check=True, timeout=300)
    with np.load(tmp_path / "out.npz") as got:
        assert sorted(got.files) == sorted(expected)
        assert all(same(got[k], expected[k]) for k in expected)
    assert not any(same(saved[k], expected[k]) for k in expected if k.startswith("v"))
    if style == "pytorch loop":
        assert len({h["scale"] for h in parts[2].history}) > 1          # the loss scale moved, and was restored
    if style.startswith("fp8"):                 # every GEMM's three roles, their scales moved off 1
        assert sum(k.endswith("scale") for k in expected if k.startswith("fp8")) == 3 * (2 if "pytorch" in style else 3)
        assert all(expected[k] != 1 for k in expected if k.startswith("fp8") and k.endswith("scale"))

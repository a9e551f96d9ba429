"""keras.random against Keras 3.15.1 on torch (tests/fixtures/keras/random.json, recorded by
tools/record_keras_random.py): every recorded call gives Keras's dtype and shape, or its error (Keras's own words
where Keras refused; an error of minifp's where torch did); the same draws repeat as in Keras; SeedGenerator's state,
counter and walk are Keras's to the value. Then minifp's own guarantees: exact reproducibility under int seeds,
SeedGenerators and set_random_seed, values where the distributions put them, and the VAE guide's Sampling layer
training inside functional and subclassed models."""
import json
from pathlib import Path

import numpy as np
import pytest

from minifp import keras
from minifp.keras import layers, ops, random

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "keras" / "random.json").read_text())
FNS = ("normal", "uniform", "truncated_normal", "randint", "categorical", "dropout", "shuffle", "gamma", "binomial",
       "beta")


def _decode(x):
    """An argument from the recorder's JSON form, as minifp.keras values."""
    if isinstance(x, dict) and "array" in x:
        return ops.convert_to_tensor(np.asarray(x["array"], dtype=x["dtype"]))
    if isinstance(x, dict) and "tuple" in x:
        return tuple(_decode(v) for v in x["tuple"])
    if isinstance(x, dict) and "seed_generator" in x:
        return random.SeedGenerator(x["seed_generator"])
    if isinstance(x, dict) and "np_int" in x:
        return np.int64(x["np_int"])
    if isinstance(x, list):
        return [_decode(v) for v in x]
    return x


@pytest.mark.parametrize("case", FIXTURE["calls"], ids=lambda c: f"{c['fn']}-{json.dumps([c['args'], c['kwargs']])}")
def test_recorded_call(case):
    fn = getattr(keras.random, case["fn"])
    args, kwargs = _decode(case["args"]), {k: _decode(v) for k, v in case["kwargs"].items()}
    error = case["error"]
    if error is None:
        out = fn(*args, **kwargs)
        assert isinstance(out, keras.Tensor)
        assert (str(out.dtype), list(out.shape)) == (case["result"]["dtype"], case["result"]["shape"])
    elif error["keras"]:
        with pytest.raises(Exception) as info:
            fn(*args, **kwargs)
        assert (type(info.value).__name__, str(info.value)) == (error["type"], error["message"])
    else:
        # torch refused (its RuntimeErrors, its words): minifp refuses with an error that names the argument
        with pytest.raises((ValueError, TypeError, IndexError)):
            fn(*args, **kwargs)


# -- which draws repeat (the recorder's `repeats` and `advances`, run through minifp) ----------------------------

def _draw(fn, seed="none"):
    x = ops.convert_to_tensor(np.arange(1, 61, dtype="float32").reshape(6, 10))
    args = {"normal": ((2, 3),), "uniform": ((2, 3),), "truncated_normal": ((2, 3),), "randint": ((2, 3), 0, 100),
            "categorical": (np.zeros((3, 5), "float32"), 4), "dropout": (x, 0.5), "shuffle": (x,),
            "gamma": ((2, 3), 2.0), "binomial": ((2, 3), 10, 0.5), "beta": ((2, 3), 2.0, 3.0)}[fn]
    kwargs = {} if seed == "none" else {"seed": seed}
    return getattr(keras.random, fn)(*args, **kwargs).numpy()


def _same(a, b):
    return bool(np.array_equal(a, b))


@pytest.mark.parametrize("fn", FNS)
def test_the_same_draws_repeat_as_in_keras(fn):
    sg = random.SeedGenerator(42)
    first, second = _draw(fn, sg), _draw(fn, sg)
    fresh = random.SeedGenerator(42)
    got = {"int_seed_repeats": _same(_draw(fn, 42), _draw(fn, 42)),
           "int_seeds_differ": not _same(_draw(fn, 42), _draw(fn, 7)),
           "seed_generator_draws_differ": not _same(first, second),
           "fresh_seed_generator_repeats": _same(_draw(fn, fresh), first) and _same(_draw(fn, fresh), second),
           "first_draw_is_int_seed": _same(first, _draw(fn, 42)),
           "second_draw_is_int_seed_plus_one": _same(second, _draw(fn, 43)),
           "unseeded_draws_differ": not _same(_draw(fn), _draw(fn))}
    keras.utils.set_random_seed(3)
    a, b = _draw(fn), _draw(fn)
    keras.utils.set_random_seed(3)
    got["set_random_seed_repeats"] = _same(_draw(fn), a) and _same(_draw(fn), b)
    got["set_random_seed_draws_differ"] = not _same(a, b)
    assert got == FIXTURE["repeats"][fn]


def test_int_seeds_wrap_as_keras_torch_seeds_do():
    got = _same(_draw("normal", -1), _draw("normal", 2 ** 32 - 1)) and \
        _same(_draw("normal", 5), _draw("normal", 2 ** 32 + 5))
    assert got == FIXTURE["repeats"]["seed_wraps_mod_2_32"]


def test_set_random_seed_repeats_an_unseeded_seed_generator():
    keras.utils.set_random_seed(3)
    a = random.SeedGenerator().state.numpy().tolist()
    keras.utils.set_random_seed(3)
    got = a == random.SeedGenerator().state.numpy().tolist()
    assert got == FIXTURE["repeats"]["set_random_seed_repeats_unseeded_seed_generator"]


@pytest.mark.parametrize("fn", FNS)
def test_one_draw_advances_a_seed_generator_as_in_keras(fn):
    seeded, unseeded = random.SeedGenerator(5), random.SeedGenerator()
    before = unseeded.state.numpy().tolist()
    _draw(fn, seeded)
    _draw(fn, unseeded)
    after = unseeded.state.numpy().tolist()
    got = {"seeded": seeded.state.numpy().tolist(), "unseeded": [after[0] - before[0], after[1] - before[1]]}
    assert got == FIXTURE["advances"][fn]


# -- SeedGenerator ---------------------------------------------------------------------------------------------

SG = FIXTURE["seed_generator"]


def test_seed_generator_state_and_config():
    keras.backend.clear_session()
    sg = random.SeedGenerator(42)
    other = random.SeedGenerator(7, name="mine")
    state = sg.state
    assert (sg.name, other.name) == (SG["name"], SG["other_name"])
    assert isinstance(state, keras.Variable)
    assert {"dtype": str(state.dtype), "shape": list(state.shape), "name": state.name, "path": state.path,
            "trainable": state.trainable, "value": state.numpy().tolist()} == SG["state"]
    assert other.state.path == SG["other_path"]
    assert sg.get_config() == SG["config"]
    assert random.SeedGenerator().get_config()["seed"] == SG["unseeded_config_seed"]
    back = random.SeedGenerator.from_config(sg.get_config())
    assert {"config": back.get_config(), "state": back.state.numpy().tolist()} == SG["from_config"]
    assert random.SeedGenerator(True).state.numpy().tolist() == SG["bool_seed_state"]
    assert random.SeedGenerator(-5).state.numpy().tolist() == SG["negative_seed_state"]


def test_next_counts_and_the_unordered_walk_wraps_as_int32():
    sg = random.SeedGenerator(42)
    assert [[sg.next().numpy().tolist(), sg.state.numpy().tolist()] for _ in range(3)] == SG["next"]
    assert str(sg.next().dtype) == SG["next_dtype"]
    walk = random.SeedGenerator(2 ** 31 - 2)
    assert [[walk.next(ordered=False).numpy().tolist(), walk.state.numpy().tolist()] for _ in range(4)] == \
        SG["unordered"]


@pytest.mark.parametrize("kwargs", list(SG["errors"]))
def test_seed_generator_refusals(kwargs):
    error = SG["errors"][kwargs]
    with pytest.raises(Exception) as info:
        random.SeedGenerator(**eval(kwargs))        # noqa: S307  (the recorder's repr of a dict of literals)
    if error["keras"]:
        assert (type(info.value).__name__, str(info.value)) == (error["type"], error["message"])
    else:       # torch's overflow converting to int32: minifp says which seeds fit
        assert isinstance(info.value, ValueError) and "int32" in str(info.value)


def test_import_paths():
    from minifp.keras.random import SeedGenerator, normal
    assert keras.random is random and SeedGenerator is keras.random.SeedGenerator and normal is random.normal
    assert set(random.__all__) == set(FNS) | {"SeedGenerator"}


# -- the VAE guide's Sampling layer ----------------------------------------------------------------------------

class Sampling(layers.Layer):
    """The VAE guide's layer: z = z_mean + exp(z_log_var / 2) * epsilon."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class Encoder(keras.Model):
    def __init__(self):
        super().__init__()
        self.mean, self.log_var, self.sampling = layers.Dense(2), layers.Dense(2), Sampling()

    def call(self, x):
        return self.sampling([self.mean(x), self.log_var(x)])


X = np.linspace(-1, 1, 32, dtype="float32").reshape(8, 4)
Y = np.zeros((8, 2), "float32")
SAMPLING = FIXTURE["sampling"]


def _counter(layer):
    return int(layer.seed_generator.state.numpy()[1])


def _functional():
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    layer = Sampling()
    z = layer([layers.Dense(2)(inputs), layers.Dense(2)(inputs)])
    return keras.Model(inputs, z), layer, z


def test_sampling_in_a_functional_model_predicts_and_fits_as_in_keras():
    model, layer, z = _functional()
    want = SAMPLING["functional"]
    assert list(z.shape) == want["output_shape"]
    built = _counter(layer)
    p1, p2 = model.predict(X, batch_size=4, verbose=0), model.predict(X, batch_size=4, verbose=0)
    assert _counter(layer) - built == want["after_two_predicts_of_two_batches"] - want["after_build"]
    assert (not _same(p1, p2)) == want["predicts_differ"]
    model.compile(optimizer="sgd", loss="mse")
    before = _counter(layer)
    history = model.fit(X, Y, batch_size=4, epochs=1, verbose=0)
    assert _counter(layer) - before == want["fit_two_steps_advance"]
    assert np.isfinite(history.history["loss"][0])
    assert [v.path for v in layer.weights] == want["layer_weights"]


def test_sampling_seed_state_is_layer_state_untouched_by_building():
    model, layer, _ = _functional()
    want = SAMPLING["functional"]
    assert [v.path for v in layer.variables] == want["layer_variables"]
    assert [v.path for v in layer.non_trainable_variables] == want["layer_non_trainable_variables"]
    assert _counter(layer) == want["after_build"]


def test_sampling_in_a_subclassed_model_as_in_keras():
    keras.utils.set_random_seed(0)
    enc = Encoder()
    a, b = enc(X), enc(X)
    want = SAMPLING["subclassed"]
    assert ((not _same(a.numpy(), b.numpy())), _counter(enc.sampling), list(a.shape)) == \
        (want["calls_differ"], want["after_two_calls"], want["shape"])
    enc.compile(optimizer="sgd", loss="mse")
    before = _counter(enc.sampling)
    enc.fit(X, Y, batch_size=4, epochs=1, verbose=0)
    assert _counter(enc.sampling) - before == want["fit_two_steps_advance"]


def _vae_run():
    """The encoder trained to put its samples at 0 (it learns a small variance): the weights and the losses."""
    model, _, _ = _functional()
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    x = np.linspace(-1, 1, 256, dtype="float32").reshape(64, 4)
    history = model.fit(x, np.zeros((64, 2), "float32"), batch_size=16, epochs=10, verbose=0)
    return [w.numpy() for w in model.weights], history.history["loss"]


def test_sampling_training_is_reproducible_to_the_bit():
    (w1, l1), (w2, l2) = _vae_run(), _vae_run()
    assert l1 == l2 and all(np.array_equal(a, b) for a, b in zip(w1, w2))
    assert l1[-1] < 0.5 * l1[0]


# -- minifp's own guarantees -----------------------------------------------------------------------------------

def test_pinned_values():
    """The numbers are a function of the seed alone (engine stream (seed + counter) mod 2**32, NumPy's PCG64)."""
    np.testing.assert_array_equal(random.normal((3,), seed=0).numpy(),
                                  np.float32(np.random.default_rng(0).standard_normal(3)))
    np.testing.assert_array_equal(random.randint((4,), 0, 100, seed=7).numpy(),
                                  np.random.default_rng(7).integers(0, 100, 4).astype(np.int32))
    sg = random.SeedGenerator(10)
    random.normal((3,), seed=sg)
    np.testing.assert_array_equal(random.uniform((3,), seed=sg).numpy(), random.uniform((3,), seed=11).numpy())


def test_float64_draws_are_float32():
    """minifp has no float64 format: Keras's float64 draws come as float32 (what convert_to_tensor does too)."""
    assert str(random.normal((2,), dtype="float64", seed=1).dtype) == "float32"


def test_seed_none_follows_set_random_seed_and_int_seeds_ignore_it():
    keras.utils.set_random_seed(123)
    a = random.normal((4,)).numpy()
    s = random.normal((4,), seed=5).numpy()
    keras.utils.set_random_seed(123)
    assert _same(random.normal((4,)).numpy(), a)
    keras.utils.set_random_seed(9)
    assert _same(random.normal((4,), seed=5).numpy(), s)


def test_a_refused_call_leaves_the_seed_generator_as_it_was():
    sg = random.SeedGenerator(3)
    for bad in (lambda: random.uniform((2,), dtype="int32", seed=sg), lambda: random.randint((2,), 5, 3, seed=sg),
                lambda: random.gamma((2,), -1.0, seed=sg), lambda: random.normal(3, seed=sg)):
        with pytest.raises((ValueError, TypeError)):
            bad()
    assert sg.state.numpy().tolist() == [3, 0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_normal_and_truncated_normal_statistics(dtype):
    x = random.normal((20000,), mean=2.0, stddev=3.0, dtype=dtype, seed=1).numpy().astype(np.float64)
    assert abs(x.mean() - 2.0) < 0.1 and abs(x.std() - 3.0) < 0.1
    t = random.truncated_normal((20000,), mean=1.0, stddev=0.5, dtype=dtype, seed=1).numpy().astype(np.float64)
    assert t.min() >= 0.0 and t.max() <= 2.0            # within two standard deviations (rounding may reach them)
    assert abs(t.mean() - 1.0) < 0.02 and abs(t.std() - 0.5 * 0.8796) < 0.02     # the truncated normal's std
    again = random.truncated_normal((20000,), mean=1.0, stddev=0.5, dtype=dtype, seed=1).numpy()
    assert str(again.dtype) == dtype and _same(again.astype(np.float64), t)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_uniform_never_reaches_maxval(dtype):
    x = random.uniform((50000,), minval=2.0, maxval=3.0, dtype=dtype, seed=2).numpy().astype(np.float64)
    assert x.min() >= 2.0 and x.max() < 3.0 and abs(x.mean() - 2.5) < 0.01
    y = random.uniform((50000,), minval=-1.0, maxval=1.0, dtype=dtype, seed=2).numpy().astype(np.float64)
    assert y.min() >= -1.0 and y.max() < 1.0 and abs(y.mean()) < 0.02


def test_randint_categorical_and_shuffle():
    r = random.randint((10000,), -3, 4, seed=0).numpy()
    assert set(np.unique(r)) == set(range(-3, 4))
    logits = np.array([[np.log(0.2), np.log(0.8), -np.inf], [0.5, 0.5, 0.5]], "float32")
    c = random.categorical(logits, 20000, seed=0).numpy()
    assert not (c[0] == 2).any()                               # a class of probability 0 is never drawn
    np.testing.assert_allclose(np.bincount(c[0], minlength=3) / 20000, [0.2, 0.8, 0.0], atol=0.02)
    np.testing.assert_allclose(np.bincount(c[1], minlength=3) / 20000, [1 / 3] * 3, atol=0.02)
    x = np.arange(24).reshape(4, 6)
    s = random.shuffle(x, seed=0).numpy()
    assert sorted(map(tuple, s)) == sorted(map(tuple, x)) and not _same(s, x)
    s1 = random.shuffle(x, axis=-1, seed=0).numpy()                 # each row on a permutation of its own
    assert all(sorted(row) == sorted(orig) for row, orig in zip(s1, x))
    assert len({tuple(np.argsort(row)) for row in s1}) > 1


def test_dropout_keeps_scaled_values_and_passes_gradients():
    x = ops.convert_to_tensor(np.full((100, 100), 3.0, "float16"))
    y = random.dropout(x, 0.25, seed=4).numpy().astype(np.float64)
    assert set(np.unique(y)) == {0.0, 4.0} and abs((y == 0).mean() - 0.25) < 0.02
    rows = random.dropout(x, 0.5, noise_shape=(None, 1), seed=4).numpy()
    assert all(len(set(row)) == 1 for row in rows)               # one draw per row, broadcast along it
    assert random.dropout(x, 0.0) is x
    w = keras.Variable(np.ones((4, 4), "float32"))
    out = random.dropout(w * 2.0, 0.5, seed=1)
    out.sum().backward()
    kept = out.numpy() != 0
    np.testing.assert_array_equal(w.grad.numpy(), np.where(kept, 4.0, 0.0))


def test_gamma_binomial_beta_statistics():
    g = random.gamma((20000,), 3.0, seed=0).numpy()
    assert abs(g.mean() - 3.0) < 0.05 and g.min() > 0
    b = random.binomial((20000,), 10, 0.3, seed=0).numpy()
    assert abs(b.mean() - 3.0) < 0.05 and set(np.unique(b)) <= set(range(11))
    e = random.beta((20000,), 2.0, 6.0, seed=0).numpy()
    assert abs(e.mean() - 0.25) < 0.01 and 0 <= e.min() and e.max() <= 1
    per_column = random.gamma((20000, 2), np.array([1.0, 10.0]), seed=0).numpy().mean(axis=0)
    np.testing.assert_allclose(per_column, [1.0, 10.0], rtol=0.03)

"""Record what Keras 3's keras.random does that minifp can match, into tests/fixtures/keras/random.json.

Run by hand from the repository root with a real Keras 3 on torch (CI never runs it):

    KERAS_BACKEND=torch /work/torchenv/bin/python tools/record_keras_random.py

The numbers themselves are torch's generator's and are not recorded (minifp draws from its own streams). What is:
`calls`, each keras.random call (`fn`, `args`, `kwargs`; arrays as {"array", "dtype"}, backend tensors in the
call; {"seed_generator": s} a fresh SeedGenerator(s); {"np_int": n} a NumPy int64) with its result's `dtype` and
`shape` or its `error` {type, message, keras}: keras is true where Keras's own code refused (its words are
matched), false where the torch backend did (minifp raises its own error there); `repeats`: which draws give the
same numbers (int seeds, SeedGenerators, the global state under set_random_seed); `advances`: how far one draw
moves a SeedGenerator's counter, per function (seeded and unseeded); `seed_generator`: the state variable, the
counter and the global generator's unordered walk, get_config, the errors; `sampling`: the VAE guide's Sampling
layer in a functional and a subclassed model (the counter after building, predict and fit; the layer's variables).
"""
import json
import os
import random
import sys
import traceback
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers, ops  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "keras" / "random.json"
FNS = ("normal", "uniform", "truncated_normal", "randint", "categorical", "dropout", "shuffle", "gamma", "binomial",
       "beta")


def arr(values, dtype):
    """An array argument (a backend tensor in the call)."""
    return {"array": np.asarray(values, dtype=dtype).tolist(), "dtype": dtype}


def tup(*items):
    return {"tuple": list(items)}


def decode(x):
    """An argument from its JSON form."""
    if isinstance(x, dict) and "array" in x:
        return ops.convert_to_tensor(np.asarray(x["array"], dtype=x["dtype"]))
    if isinstance(x, dict) and "tuple" in x:
        return tuple(decode(v) for v in x["tuple"])
    if isinstance(x, dict) and "seed_generator" in x:
        return keras.random.SeedGenerator(x["seed_generator"])
    if isinstance(x, dict) and "np_int" in x:
        return np.int64(x["np_int"])
    if isinstance(x, list):
        return [decode(v) for v in x]
    return x


def keras_refused(error):
    """Whether Keras's own code raised (not torch, nor the torch backend's glue)."""
    frames = traceback.extract_tb(error.__traceback__)
    last = frames[-1].filename.replace(os.sep, "/")
    return "/keras/src/" in last and "/keras/src/backend/torch/" not in last


def call(fn, *args, **kwargs):
    """One case: the call and its outcome."""
    case = {"fn": fn, "args": list(args), "kwargs": kwargs, "result": None, "error": None}
    try:
        out = getattr(keras.random, fn)(*decode(list(args)), **{k: decode(v) for k, v in kwargs.items()})
        case["result"] = {"dtype": keras.backend.standardize_dtype(out.dtype), "shape": list(out.shape)}
    except Exception as e:     # noqa: BLE001  (every error is a recorded outcome)
        case["error"] = {"type": type(e).__name__, "message": str(e).split("\n")[0], "keras": keras_refused(e)}
    return case


X = arr(np.arange(6).reshape(2, 3) + 1, "float32")
CALLS = [
    ("normal", [tup(2, 3)], {"seed": 1}), ("normal", [[2, 3]], {"seed": 1}), ("normal", [tup()], {"seed": 1}),
    ("normal", [tup(2, 3)], {"mean": 3.0, "stddev": 0.5, "seed": 1}), ("normal", [tup(4)], {}),
    *[("normal", [tup(2, 3)], {"dtype": d, "seed": 1}) for d in ("float16", "bfloat16", "float32", "int32", "foo")],
    ("normal", [3], {"seed": 1}), ("normal", [None], {"seed": 1}),
    ("normal", [tup(2)], {"seed": 1.5}), ("normal", [tup(2)], {"seed": "a"}),
    ("normal", [tup(2)], {"seed": {"np_int": 3}}),
    ("normal", [tup(2)], {"seed": {"seed_generator": 3}}), ("normal", [tup(2)], {"seed": -1}),
    ("normal", [tup(2)], {"seed": 2 ** 40 + 7}),
    ("uniform", [tup(2, 3)], {"seed": 1}), ("uniform", [tup()], {"seed": 1}),
    ("uniform", [tup(4)], {"minval": 3.0, "maxval": 1.0, "seed": 1}),
    *[("uniform", [tup(2)], {"dtype": d, "seed": 1}) for d in ("float16", "bfloat16", "int32", "bool", "foo")],
    ("uniform", [tup(2)], {"seed": 2.0}),
    ("truncated_normal", [tup(2, 3)], {"seed": 1}), ("truncated_normal", [tup(2)], {"dtype": "float16", "seed": 1}),
    ("truncated_normal", [tup(2)], {"dtype": "int32", "seed": 1}),
    ("randint", [tup(2, 3), 0, 10], {"seed": 1}), ("randint", [tup(2), 0, 3], {"dtype": None, "seed": 1}),
    *[("randint", [tup(2), 0, 3], {"dtype": d, "seed": 1}) for d in ("uint8", "int8", "int16", "int64", "float32",
                                                                      "bool", "foo")],
    ("randint", [tup(2), 5, 3], {"seed": 1}), ("randint", [tup(2), 2, 2], {"seed": 1}),
    ("randint", [tup(2), 0.5, 3.5], {"seed": 1}), ("randint", [tup(2), 0, 300], {"dtype": "uint8", "seed": 1}),
    ("randint", [tup(2), 0, 3], {"seed": [1]}),
    ("categorical", [arr([[1, 2, 3], [0, 0, 0]], "float32"), 4], {"seed": 1}),
    ("categorical", [arr([[1, 2, 3]], "float16"), 2], {"dtype": "int64", "seed": 1}),
    ("categorical", [arr([[1, 2, 3]], "float32"), 2], {"dtype": "float32", "seed": 1}),
    ("categorical", [[1.0, 2.0], 3], {"seed": 1}), ("categorical", [arr([[1, 2]], "float32"), 0], {"seed": 1}),
    ("dropout", [X, 0.5], {"seed": 1}), ("dropout", [X, 0.5], {}),
    ("dropout", [arr(np.ones((2, 3)), "float16"), 0.5], {"seed": 1}),
    ("dropout", [X, 0.5], {"noise_shape": tup(None, 1), "seed": 1}), ("dropout", [X, 0.0], {"seed": 1}),
    ("dropout", [X, 1.0], {"seed": 1}), ("dropout", [X, 1.5], {}), ("dropout", [X, 1.5], {"seed": 1}),
    ("dropout", [X, 0.5], {"seed": "a"}),
    ("shuffle", [arr(np.arange(6), "int64")], {"seed": 1}), ("shuffle", [[1, 2, 3]], {"seed": 1}),
    ("shuffle", [arr(np.ones((2, 3)), "float16")], {"axis": 1, "seed": 1}),
    ("shuffle", [arr(np.ones((2, 3)), "float32")], {"axis": 2, "seed": 1}),
    ("gamma", [tup(2, 3), 2.0], {"seed": 1}), ("gamma", [tup(2, 3), arr([1, 2, 3], "float32")], {"seed": 1}),
    ("gamma", [tup(2), 2.0], {"dtype": "float16", "seed": 1}), ("gamma", [tup(2), 2.0], {"dtype": "int32", "seed": 1}),
    ("gamma", [tup(2), -1.0], {"seed": 1}), ("gamma", [tup(2, 3), arr([1, 2], "float32")], {"seed": 1}),
    ("binomial", [tup(2, 3), 5, 0.5], {"seed": 1}), ("binomial", [tup(2), 5, 0.5], {"dtype": "int32", "seed": 1}),
    ("binomial", [tup(2), 5, 1.5], {"seed": 1}), ("binomial", [tup(2), -1, 0.5], {"seed": 1}),
    ("binomial", [tup(2), 5.5, 0.5], {"seed": 1}),
    ("beta", [tup(2, 3), 2.0, 3.0], {"seed": 1}), ("beta", [tup(2), 2.0, 3.0], {"dtype": "bfloat16", "seed": 1}),
    ("beta", [tup(2), 2.0, -3.0], {"seed": 1}),
]

# One valid call per function: (args, kwargs) without the seed.
DRAWS = {"normal": ((2, 3), {}), "uniform": ((2, 3), {}), "truncated_normal": ((2, 3), {}),
         "randint": ((2, 3, 0, 100), {}), "categorical": (("logits", 4), {}), "dropout": (("x", 0.5), {}),
         "shuffle": (("x",), {}), "gamma": ((2, 3, 2.0), {}), "binomial": ((2, 3, 10, 0.5), {}),
         "beta": ((2, 3, 2.0, 3.0), {})}


def draw(fn, seed="none"):
    """fn's usual call as NumPy values (seed "none": the argument left out)."""
    args, kwargs = DRAWS[fn]
    x = ops.convert_to_tensor(np.arange(1, 61, dtype="float32").reshape(6, 10))
    logits = ops.convert_to_tensor(np.zeros((3, 5), "float32"))
    args = [x if a == "x" else logits if a == "logits" else a for a in args]
    if fn in ("normal", "uniform", "truncated_normal", "randint", "gamma", "binomial", "beta"):
        args = [tuple(args[:2])] + args[2:]
    if seed != "none":
        kwargs = {**kwargs, "seed": seed}
    return ops.convert_to_numpy(getattr(keras.random, fn)(*args, **kwargs))


def same(a, b):
    return bool(np.array_equal(a, b))


def repeats():
    """Which draws repeat: int seeds, SeedGenerators, the global state under set_random_seed."""
    out = {}
    for fn in FNS:
        sg = keras.random.SeedGenerator(42)
        first, second = draw(fn, sg), draw(fn, sg)
        fresh = keras.random.SeedGenerator(42)
        out[fn] = {"int_seed_repeats": same(draw(fn, 42), draw(fn, 42)),
                   "int_seeds_differ": not same(draw(fn, 42), draw(fn, 7)),
                   "seed_generator_draws_differ": not same(first, second),
                   "fresh_seed_generator_repeats": same(draw(fn, fresh), first) and same(draw(fn, fresh), second),
                   "first_draw_is_int_seed": same(first, draw(fn, 42)),
                   "second_draw_is_int_seed_plus_one": same(second, draw(fn, 43)),
                   "unseeded_draws_differ": not same(draw(fn), draw(fn))}
        keras.utils.set_random_seed(3)
        a, b = draw(fn), draw(fn)
        keras.utils.set_random_seed(3)
        out[fn]["set_random_seed_repeats"] = same(draw(fn), a) and same(draw(fn), b)
        out[fn]["set_random_seed_draws_differ"] = not same(a, b)
    out["seed_wraps_mod_2_32"] = same(draw("normal", -1), draw("normal", 2 ** 32 - 1)) and \
        same(draw("normal", 5), draw("normal", 2 ** 32 + 5))
    keras.utils.set_random_seed(3)
    a = keras.random.SeedGenerator().state.numpy().tolist()
    keras.utils.set_random_seed(3)
    out["set_random_seed_repeats_unseeded_seed_generator"] = a == keras.random.SeedGenerator().state.numpy().tolist()
    return out


def advances():
    """How far one draw moves a SeedGenerator's counter: seeded (SeedGenerator(5)) and unseeded (SeedGenerator())."""
    out = {}
    for fn in FNS:
        seeded, unseeded = keras.random.SeedGenerator(5), keras.random.SeedGenerator()
        before = unseeded.state.numpy().tolist()
        draw(fn, seeded)
        draw(fn, unseeded)
        after = unseeded.state.numpy().tolist()
        out[fn] = {"seeded": seeded.state.numpy().tolist(),
                   "unseeded": [after[0] - before[0], after[1] - before[1]]}
    return out


def error(fn):
    try:
        fn()
    except Exception as e:     # noqa: BLE001
        return {"type": type(e).__name__, "message": str(e).split("\n")[0], "keras": keras_refused(e)}
    return None


def seed_generators():
    """The state variable, next() and next(ordered=False), get_config, from_config and the refusals."""
    keras.backend.clear_session()
    sg = keras.random.SeedGenerator(42)
    other = keras.random.SeedGenerator(7, name="mine")
    state = sg.state
    out = {"name": sg.name, "other_name": other.name,
           "state": {"dtype": keras.backend.standardize_dtype(state.dtype), "shape": list(state.shape),
                     "name": state.name, "path": state.path, "trainable": state.trainable,
                     "value": state.numpy().tolist()},
           "other_path": other.state.path, "config": sg.get_config(),
           "unseeded_config_seed": keras.random.SeedGenerator().get_config()["seed"]}
    out["next"] = [[ops.convert_to_numpy(sg.next()).tolist(), sg.state.numpy().tolist()] for _ in range(3)]
    walk = keras.random.SeedGenerator(2 ** 31 - 2)
    out["unordered"] = [[ops.convert_to_numpy(walk.next(ordered=False)).tolist(), walk.state.numpy().tolist()]
                        for _ in range(4)]
    out["next_dtype"] = keras.backend.standardize_dtype(sg.next().dtype)
    back = keras.random.SeedGenerator.from_config(sg.get_config())
    out["from_config"] = {"config": back.get_config(), "state": back.state.numpy().tolist()}
    out["bool_seed_state"] = keras.random.SeedGenerator(True).state.numpy().tolist()
    out["negative_seed_state"] = keras.random.SeedGenerator(-5).state.numpy().tolist()
    out["errors"] = {repr(kw): error(lambda kw=kw: keras.random.SeedGenerator(**kw))
                     for kw in ({"seed": 1.5}, {"seed": "a"}, {"seed": 2 ** 31}, {"seed": -2 ** 31 - 1},
                                {"seed": 1, "foo": 2})}
    return out


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


def counter(layer):
    return int(layer.seed_generator.state.numpy()[1])


def sampling():
    """Sampling inside a functional and a subclassed model: the counter as they build, predict and fit."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    x = np.linspace(-1, 1, 32, dtype="float32").reshape(8, 4)
    y = np.zeros((8, 2), "float32")
    inputs = keras.Input((4,))
    layer = Sampling()
    z = layer([layers.Dense(2)(inputs), layers.Dense(2)(inputs)])
    model = keras.Model(inputs, z)
    out = {"functional": {"after_build": counter(layer), "output_shape": list(z.shape)}}
    p1, p2 = model.predict(x, batch_size=4, verbose=0), model.predict(x, batch_size=4, verbose=0)
    out["functional"]["after_two_predicts_of_two_batches"] = counter(layer)
    out["functional"]["predicts_differ"] = not same(p1, p2)
    model.compile(optimizer="sgd", loss="mse")
    before = counter(layer)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    out["functional"]["fit_two_steps_advance"] = counter(layer) - before
    out["functional"]["layer_variables"] = [v.path for v in layer.variables]
    out["functional"]["layer_non_trainable_variables"] = [v.path for v in layer.non_trainable_variables]
    out["functional"]["layer_weights"] = [v.path for v in layer.weights]
    enc = Encoder()
    a, b = enc(x), enc(x)
    out["subclassed"] = {"calls_differ": not same(ops.convert_to_numpy(a), ops.convert_to_numpy(b)),
                         "after_two_calls": counter(enc.sampling), "shape": list(a.shape)}
    enc.compile(optimizer="sgd", loss="mse")
    before = counter(enc.sampling)
    enc.fit(x, y, batch_size=4, epochs=1, verbose=0)
    out["subclassed"]["fit_two_steps_advance"] = counter(enc.sampling) - before
    return out


def main():
    if keras.backend.backend() != "torch":
        sys.exit("record with KERAS_BACKEND=torch")
    random.seed(0)
    record = {"versions": {"keras": keras.__version__, "backend": keras.backend.backend(),
                           "torch": __import__("torch").__version__, "numpy": np.__version__},
              "calls": [call(fn, *args, **kwargs) for fn, args, kwargs in CALLS],
              "repeats": repeats(), "advances": advances(), "seed_generator": seed_generators(),
              "sampling": sampling()}
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

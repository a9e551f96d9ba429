"""Fixed short runs of every benchmark training step, each reduced to one hash of its bits.

    python tests/bits_runs.py [--out FILE]

Prints (or writes) {run: sha256 of its weights, losses and loss scales}. tests/test_bits.py runs this in a fresh
process with OpenBLAS and NumPy pinned to their AVX2 kernels (the low bits of a float32 matrix product or of
NumPy's SIMD functions depend on the CPU's kernels) and compares with tests/fixtures/bits.json, recorded at the
start of the engine's redesign (issue 31): a change of structure must not change one bit, with or without the
speed module.
"""
import argparse
import hashlib
import json
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore", message="minifp: no GPU here")
STEPS = 3
TORCH_CASES = {   # benchmarks/torch_face.py's models: (maker, input shape, batch)
    "mlp": (lambda t: t.nn.Sequential(t.nn.Linear(784, 1024), t.nn.ReLU(), t.nn.Linear(1024, 1024), t.nn.ReLU(),
                                      t.nn.Linear(1024, 10)), (784,), 256),
    "cnn": (lambda t: t.nn.Sequential(t.nn.Conv2d(1, 16, 3, padding=1), t.nn.ReLU(), t.nn.MaxPool2d(2),
                                      t.nn.Conv2d(16, 32, 3, padding=1), t.nn.ReLU(), t.nn.MaxPool2d(2),
                                      t.nn.Flatten(), t.nn.Linear(32 * 7 * 7, 10)), (1, 28, 28), 64),
    "digits": (lambda t: t.nn.Sequential(t.nn.Linear(64, 64), t.nn.ReLU(), t.nn.Linear(64, 10)), (64,), 32),
}


class Digest:
    """A sha256 over arrays and numbers, fed in order."""

    def __init__(self):
        self.h = hashlib.sha256()

    def add(self, *values):
        for v in values:
            v = v.detach() if hasattr(v, "detach") else v
            a = np.ascontiguousarray(v.numpy() if hasattr(v, "numpy") else np.asarray(v))
            self.h.update(f"{a.dtype.str}{a.shape}".encode())
            self.h.update(a.tobytes())

    def hex(self):
        return self.h.hexdigest()[:24]


def torch_run(name, dtype=None, scaled=True, context=None, weights=None, update_rounding="nearest"):
    """STEPS SGD steps of a torch-face model (cuda autocast in `dtype`, with GradScaler when `scaled`; weights
    of the format `weights` with `update_rounding` instead of float32 ones)."""
    import contextlib
    import minifp.torch as torch
    make, shape, batch = TORCH_CASES[name]
    device = "cpu" if dtype is None else "cuda"
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.random((batch,) + shape, dtype=np.float32)).to(device)
    y = torch.tensor(rng.integers(0, 10, batch)).to(device)
    model = make(torch).to(device)
    if weights is not None:
        model = model.to(weights)
        x = x.to(weights)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, update_rounding=update_rounding)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device, enabled=dtype is not None and scaled)
    d = Digest()
    for _ in range(STEPS):
        opt.zero_grad()
        with context() if context else contextlib.nullcontext():
            with torch.autocast(device, dtype=dtype, enabled=dtype is not None):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        d.add(loss, scaler.get_scale())
    d.add(*[p for p in model.state_dict().values()])
    d.add(*[v for s in opt.state_dict()["state"].values() for v in s.values()])
    return d.hex()


def keras_run(model, policy):
    """One epoch of Keras fit (digits, 320 images, batch 32) under `policy`."""
    import minifp as mf
    from minifp import _digits
    (x, y), _ = mf.datasets.load_digits()
    mf.manual_seed(0)
    net = _digits.MODELS[model](policy)
    net.compile("adam", "sparse_categorical_crossentropy")
    history = net.fit(x[:320], y[:320], batch_size=32, epochs=1, verbose=0, shuffle=False)
    d = Digest()
    d.add(history.history["loss"], *net.get_weights())
    scale = getattr(net.optimizer, "dynamic_scale", None)
    d.add(float(scale) if scale is not None else 0.0)
    return d.hex()


def tf_tape_run():
    """The tf guide's custom loop: GradientTape, LossScaleOptimizer(RMSprop), mixed_float16, three batches."""
    import minifp as mf
    import minifp.tf as tf
    from minifp.tf import keras
    from minifp.tf.keras import layers, mixed_precision
    (x, y), _ = mf.datasets.load_digits()
    x = x.reshape(len(x), 64)[:96]
    mf.manual_seed(0)
    previous = mixed_precision.global_policy()
    mixed_precision.set_global_policy("mixed_float16")
    try:
        inputs = keras.Input(shape=(64,))
        h = layers.Dense(32, activation="relu")(inputs)
        h = layers.Dense(10)(h)
        model = keras.Model(inputs=inputs, outputs=layers.Activation("softmax", dtype="float32")(h))
    finally:
        mixed_precision.set_global_policy(previous)
    optimizer = mixed_precision.LossScaleOptimizer(keras.optimizers.RMSprop())
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy()
    d = Digest()
    for i in range(0, 96, 32):
        with tf.GradientTape() as tape:
            loss = loss_object(y[i:i + 32], model(x[i:i + 32]))
            scaled = optimizer.get_scaled_loss(loss)
        grads = optimizer.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        d.add(loss, float(optimizer.loss_scale))
    d.add(*model.get_weights())
    return d.hex()


def runs():
    """{name: function} of every run."""
    import minifp as mf
    import minifp.torch as torch
    table = {}
    for name in TORCH_CASES:
        table[f"torch {name} float32"] = lambda name=name: torch_run(name)
        table[f"torch {name} cuda float16 GradScaler"] = lambda name=name: torch_run(name, torch.float16)
        table[f"torch {name} cuda bfloat16"] = lambda name=name: torch_run(name, torch.bfloat16)
    for model in ("mlp", "cnn"):
        for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
            table[f"keras {model} fit {policy}"] = lambda m=model, p=policy: keras_run(m, p)
    table["tf guide GradientTape mixed_float16"] = tf_tape_run
    table["torch digits fp8 DelayedScaling"] = lambda: torch_run(
        "digits", context=lambda: mf.fp8_autocast(recipe=mf.DelayedScaling()))
    table["torch digits accumulate float16"] = lambda: torch_run("digits", context=lambda: mf.accumulate("float16"))
    table["torch digits accumulate float16 pairwise"] = lambda: torch_run(
        "digits", torch.float16, context=lambda: mf.accumulate("float16", order="pairwise"))
    table["torch digits tensor_core H100 float16"] = lambda: torch_run(
        "digits", torch.float16, context=lambda: mf.accumulate(tensor_core="H100"))
    table["torch digits tensor_core H100 bfloat16"] = lambda: torch_run(
        "digits", torch.bfloat16, context=lambda: mf.accumulate(tensor_core="H100"))
    table["torch digits bfloat16 weights SGD kahan"] = lambda: torch_run(
        "digits", weights=torch.bfloat16, update_rounding="kahan")
    table["torch digits bfloat16 weights SGD stochastic"] = lambda: torch_run(
        "digits", weights=torch.bfloat16, update_rounding="stochastic")
    table["torch cnn cuda float16 GradScaler watched"] = watched_run
    return table


def watched_run():
    """The CNN under cuda float16 with GradScaler, watched by the numerics monitor: its counts hashed too."""
    import minifp.torch as torch
    from minifp import numerics
    make, shape, batch = TORCH_CASES["cnn"]
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.random((batch,) + shape, dtype=np.float32) * 3e3).to("cuda")
    y = torch.tensor(rng.integers(0, 10, batch)).to("cuda")
    model = make(torch).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**24)
    d = Digest()
    for _ in range(STEPS):
        opt.zero_grad()
        with numerics.watch(model, histograms=True) as report:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        d.add(loss, scaler.get_scale(), np.array([r[3:] for r in sorted(report.rows())]))
        d.add(*[h.counts for _, h in sorted(report.histograms.items())])
    d.add(*[p for p in model.state_dict().values()])
    return d.hex()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", help="write the JSON here instead of printing it")
    parser.add_argument("--only", help="only the runs whose name contains this")
    args = parser.parse_args(argv)
    hashes = {name: run() for name, run in runs().items() if not args.only or args.only in name}
    text = json.dumps(hashes, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    sys.exit(main())

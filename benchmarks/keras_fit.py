"""minifp.keras fit() on the digits MLP: time per step under mixed_float16 against float32 (issue 15, acceptance 6).

    python benchmarks/keras_fit.py [--rounds 7] [--epochs 1] [--against PATH]

Each round fits a fresh float32 model and a fresh mixed_float16 model for --epochs epochs (45 steps of 32
per epoch), which goes first alternating, in one process; a stretch when the host slows the machine falls
on both alike. Per step: fit's wall time divided by its steps (everything fit does: batching, callbacks,
progress logic with verbose=0, metrics) and the time train_step itself took (History.steps["time"]).
The ratio is the median over rounds of mixed_float16 / float32; the target is <= 1.3. --against PATH also fits
with minifp.keras from the checkout at PATH in the same rounds (each round both checkouts in turn, which goes first
alternating) and prints the median over rounds of this checkout's time per step / the other's, per policy.
"""
import argparse
import statistics
import time

from _checkouts import checkouts


def digits_mlp(keras):
    """Flatten, Dense 64 relu twice, Dense 10, softmax in float32: the CLI's digits MLP."""
    return keras.Sequential([keras.Input(shape=(8, 8)), keras.layers.Flatten(),
                             keras.layers.Dense(64, activation="relu"), keras.layers.Dense(64, activation="relu"),
                             keras.layers.Dense(10), keras.layers.Activation("softmax", dtype="float32")])


def fit_once(minifp, policy, x, y, epochs):
    """(ms per step of the whole fit, ms per train_step) for a fresh model of `minifp`'s Keras under `policy`."""
    keras = minifp.keras
    keras.mixed_precision.set_global_policy(policy)
    try:
        minifp.manual_seed(0)
        model = digits_mlp(keras)
        model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
        model.train_on_batch(x[:32], y[:32])           # build, warm kernels
        start = time.perf_counter()
        history = model.fit(x, y, batch_size=32, epochs=epochs, verbose=0)
        wall = time.perf_counter() - start
    finally:
        keras.mixed_precision.set_global_policy("float32")
    steps = history.steps["time"]
    return 1e3 * wall / len(steps), 1e3 * sum(steps) / len(steps)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--against", metavar="PATH", help="also fit with minifp.keras from the checkout at PATH")
    args = parser.parse_args()
    trees = {label: mf for label, (mf, _) in checkouts(args.against).items()}
    (x, y), _ = trees["this"].datasets.load_digits()
    times = {(label, policy): [] for label in trees for policy in ("float32", "mixed_float16")}
    for r in range(args.rounds):
        for label, policy in list(times)[::1 - 2 * (r % 2)]:
            times[label, policy].append(fit_once(trees[label], policy, x, y, args.epochs))
    print(f"minifp.keras fit() on the digits MLP, {args.rounds} rounds of {args.epochs} epoch(s), batch 32; "
          f"this checkout: {trees['this'].__file__.rsplit('/', 2)[0]}" + (f", against: {args.against}" if args.against
                                                                        else ""))
    print(f"{'checkout':10s}{'policy':15s}{'fit ms/step':>13s}{'train_step ms':>15s}   (medians)")
    for (label, policy), runs in times.items():
        print(f"{label:10s}{policy:15s}{statistics.median(r[0] for r in runs):13.3f}"
              f"{statistics.median(r[1] for r in runs):15.3f}")
    for label in trees:
        mixed, single = times[label, "mixed_float16"], times[label, "float32"]
        print(f"{label}: mixed_float16 / float32 per step: fit {statistics.median(m[0] / f[0] for m, f in zip(mixed, single)):.2f}x, "
              f"train_step {statistics.median(m[1] / f[1] for m, f in zip(mixed, single)):.2f}x (target <= 1.3x)")
    if args.against:
        for policy in ("float32", "mixed_float16"):
            this, other = times["this", policy], times["against", policy]
            print(f"this / against, {policy}: fit {statistics.median(t[0] / o[0] for t, o in zip(this, other)):.3f}, "
                  f"train_step {statistics.median(t[1] / o[1] for t, o in zip(this, other)):.3f} (target <= 1.03)")


if __name__ == "__main__":
    main()

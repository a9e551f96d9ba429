"""Time per training step of the digits models under each policy, side by side in one run.

    python benchmarks/training.py [--steps 20] [--min-ms 60] [--rounds 15] [--against PATH]

For each model and policy: ms per step, the best of --rounds rounds of --steps steps or more, enough for a round to
last --min-ms (batch 32), and the
ratio to float32. --against PATH also imports minifp from the checkout at PATH (as `minifp_against`) and
trains the same model there, the two checkouts taking turns round by round (which goes first alternates),
so that a stretch when the host slows this machine falls on both alike; "this / against" is the median
over rounds of the two step times' ratio (< 1: this checkout is faster).
"""
import argparse
import time

import numpy as np
from _checkouts import checkouts, train_step

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")


def trainer(mf, models, model, policy, batch_size=32):
    """A function that runs `steps` training steps of a fresh model and returns ms per step."""
    (x, y), _ = mf.datasets.load_digits()
    mf.manual_seed(0)
    net = models.MODELS[model](policy)
    net.compile("adam", "sparse_categorical_crossentropy")
    one_step = train_step(net)
    one_step(x[:batch_size], y[:batch_size])                # compile kernels, build layers
    step = [0]

    def run(steps):
        start = time.perf_counter()
        for _ in range(steps):
            j = (step[0] * batch_size) % (len(x) - batch_size)
            one_step(x[j:j + batch_size], y[j:j + batch_size])
            step[0] += 1
        return 1e3 * (time.perf_counter() - start) / steps
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--min-ms", type=float, default=60.0, help="steps enough for each round to last this long "
                                                                  "(default 60 ms; at least --steps)")
    parser.add_argument("--against", metavar="PATH", help="also time minifp from the checkout at PATH")
    args = parser.parse_args()
    trees = checkouts(args.against)
    labels = list(trees)
    print(f"ms per step, best of {args.rounds} rounds of {args.steps} steps or more (at least {args.min_ms:g} ms); "
          + ", ".join(f"{label}: {mf.__file__.rsplit('/', 2)[0]}" for label, (mf, _) in trees.items()))
    print(f"{'model':5s} {'policy':15s}" + "".join(f"{label:>10s} {'vs f32':>7s}" for label in labels)
          + ("   this / against" if "against" in trees else ""))
    for model in trees["this"][1].MODELS:
        base = {}
        for policy in POLICIES:
            runs = {label: trainer(mf, models, model, policy) for label, (mf, models) in trees.items()}
            # each timed run lasts at least --min-ms: a run of a few ms is at the mercy of one scheduler tick
            steps = max(args.steps, int(np.ceil(args.min_ms / runs["this"](args.steps))))
            times = {label: [] for label in labels}
            for r in range(args.rounds):
                for label in labels[::1 - 2 * (r % 2)]:
                    times[label].append(runs[label](steps))
            best = {label: min(t) for label, t in times.items()}
            row = ""
            for label in labels:
                base.setdefault(label, best[label])
                row += f"{best[label]:10.2f} {best[label] / base[label]:6.2f}x"
            if "against" in trees:
                row += f"   {np.median(np.divide(times['this'], times['against'])):10.3f}"
            print(f"{model:5s} {policy:15s}{row}", flush=True)


if __name__ == "__main__":
    main()

"""Time per training step of the digits models under each policy, side by side in one run.

    python benchmarks/training.py [--steps 90]
"""
import argparse
import time

import minifp as mf
from minifp.models import MODELS


def ms_per_step(model, policy, steps, batch_size=32):
    (x, y), _ = mf.datasets.load_digits()
    mf.manual_seed(0)
    net = MODELS[model](policy)
    net.compile("adam", "sparse_categorical_crossentropy")
    net.train_step(x[:batch_size], y[:batch_size])          # compile kernels, build layers
    start = time.perf_counter()
    for i in range(steps):
        j = (i * batch_size) % (len(x) - batch_size)
        net.train_step(x[j:j + batch_size], y[j:j + batch_size])
    return 1e3 * (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=90)
    args = parser.parse_args()
    for model in MODELS:
        base = None
        for policy in ("float32", "mixed_float16", "mixed_bfloat16"):
            ms = ms_per_step(model, policy, args.steps)
            base = base or ms
            print(f"{model:4s} {policy:15s} {ms:7.2f} ms/step   {ms / base:5.2f}x float32")


if __name__ == "__main__":
    main()

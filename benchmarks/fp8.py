"""Cost of an fp8-recipe training step against a mixed_bfloat16 step of the same model, side by side in one run.

    python benchmarks/fp8.py [--steps 20] [--rounds 15]

For each digits model (Keras face, batch 32): ms per step under mixed_bfloat16, and under mixed_bfloat16 inside
minifp.fp8_autocast(recipe=DelayedScaling()) (every Dense and Conv2D quantised to e4m3 / e5m2 with delayed
per-tensor scaling), the best of --rounds rounds of --steps steps, the two taking turns round by round; and
their ratio (the issue's target: <= 1.3). Wall-clock time, and the process's CPU time (all its threads), which a
busy shared machine disturbs less.
"""
import argparse
import contextlib
import time

import minifp as mf
from minifp._digits import MODELS


def trainer(model, fp8):
    """A function that runs `steps` training steps of a fresh model and returns ms per step."""
    (x, y), _ = mf.datasets.load_digits()
    mf.manual_seed(0)
    net = MODELS[model]("mixed_bfloat16")
    net.compile("adam", "sparse_categorical_crossentropy")
    recipe = mf.DelayedScaling()                    # made once, as Transformer Engine's examples do
    region = (lambda: mf.fp8_autocast(recipe=recipe)) if fp8 else contextlib.nullcontext
    with region():
        net.train_on_batch(x[:32], y[:32])          # compile kernels, build layers
    step = [0]

    def run(steps):
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            j = (step[0] * 32) % (len(x) - 32)
            with region():                          # one region per step, as a PyTorch loop has it
                net.train_on_batch(x[j:j + 32], y[j:j + 32])
            step[0] += 1
        return 1e3 * (time.perf_counter() - start) / steps, 1e3 * (time.process_time() - cpu) / steps
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(f"ms per step (batch 32), best of {args.rounds} rounds of {args.steps} steps")
    print(f"{'model':6s}{'clock':>6s}{'mixed_bfloat16':>16s}{'fp8 recipe':>12s}{'ratio':>8s}")
    for model in MODELS:
        runs = {fp8: trainer(model, fp8) for fp8 in (False, True)}
        times = {False: [], True: []}
        for r in range(args.rounds):
            for fp8 in ((False, True) if r % 2 == 0 else (True, False)):
                times[fp8].append(runs[fp8](args.steps))
        for i, clock in enumerate(("wall", "cpu")):
            bf16, fp8 = min(t[i] for t in times[False]), min(t[i] for t in times[True])
            print(f"{model:6s}{clock:>6s}{bf16:16.2f}{fp8:12.2f}{fp8 / bf16:8.2f}")


if __name__ == "__main__":
    main()

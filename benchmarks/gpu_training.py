"""minifp on a GPU against torch.amp on the same GPU: ms per training step, interleaved in one run.

    python benchmarks/gpu_training.py [--steps 10] [--rounds 5] [--batch 8192]   # needs CuPy, PyTorch, a GPU

The same PyTorch code (an MLP 784-4096-4096-10, SGD with momentum, CrossEntropyLoss, autocast and GradScaler)
runs with `import torch` and with `import minifp.torch as torch`, both on "cuda", in float16 (with GradScaler)
and bfloat16. Target: minifp's float16 step <= 1.5x torch.amp's. Each round times every contender in turn;
each figure is the best round.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch as real_torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import minifp.torch as mf_torch     # noqa: E402


def make(nn):
    return nn.Sequential(nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))


def sync(torch):
    if torch is real_torch:
        real_torch.cuda.synchronize()
    else:
        import cupy
        cupy.cuda.Device().synchronize()


def stepper(torch, batch, dtype):
    """A function running `steps` steps on the GPU; returns ms per step (and the last loss)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.random((batch, 784), dtype=np.float32)).to("cuda")
    y = torch.tensor(rng.integers(0, 10, batch)).to("cuda")
    model = make(torch.nn).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
    last = []

    def run(steps):
        sync(torch)
        start = time.perf_counter()
        for _ in range(steps):
            opt.zero_grad()
            with torch.autocast("cuda", dtype=dtype):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        sync(torch)
        last[:] = [float(loss.item())]
        return 1e3 * (time.perf_counter() - start) / steps
    run(2)
    return run, last


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8192)
    args = parser.parse_args()
    print(f"{real_torch.cuda.get_device_name()}, torch {real_torch.__version__}; ms per step, best of "
          f"{args.rounds} rounds of {args.steps} steps, MLP 784-4096-4096-10, batch {args.batch}")
    runs = {}
    for name in ("float16", "bfloat16"):
        for label, torch in (("torch.amp", real_torch), ("minifp", mf_torch)):
            runs[label, name] = stepper(torch, args.batch, getattr(torch, name))
    times = {k: [] for k in runs}
    for r in range(args.rounds):
        for k in list(runs)[::1 - 2 * (r % 2)]:
            times[k].append(runs[k][0](args.steps))
    for name in ("float16", "bfloat16"):
        t, m = min(times["torch.amp", name]), min(times["minifp", name])
        print(f"{name:9s} torch.amp {t:8.2f} ms   minifp {m:8.2f} ms   minifp/torch {m / t:6.2f}x   "
              f"last loss torch {runs['torch.amp', name][1][0]:.4f} minifp {runs['minifp', name][1][0]:.4f}",
              flush=True)


if __name__ == "__main__":
    main()

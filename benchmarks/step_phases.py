"""Where minifp.torch's digits-MLP training step spends its time: us per phase, float32 against emulated cuda halves.

    python benchmarks/step_phases.py [--rounds 9] [--steps 180] [--batch 32] [--against PATH]

The loop of benchmarks/torch_face.py (Linear 64-64-10, batch 32 or --batch, SGD with momentum, CrossEntropyLoss), with
scaler.unscale_ called on its own so that it is timed apart from step. Columns: the phases of one step (zero_grad,
the forward under autocast, scale, backward, unscale_, step, update); rows: float32 (autocast and scaler
disabled), cuda float16 with GradScaler, cuda float16 without it, and cuda bfloat16 (no scaler, as in
benchmarks/models.py). Each figure is the best round's mean over its steps (the first 20 steps of a round not
counted); the rows take turns within each round. --against PATH adds the same rows for minifp.torch from the
checkout at PATH, timed in the same rounds.
"""
import argparse
import importlib
import time
import warnings

import numpy as np
from _checkouts import checkouts

warnings.filterwarnings("ignore", message="minifp: no GPU here")
PHASES = ("zero_grad", "forward", "scale", "backward", "unscale_", "step", "update")


def setup(torch, device, dtype, scaled, batch=32):
    """run(steps): the mean us per phase over those steps, for the face module `torch`."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.random((batch, 64), dtype=np.float32)).to(device)
    y = torch.tensor(rng.integers(0, 10, batch)).to(device)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device, enabled=dtype is not None and scaled)

    def run(steps, warm=20):
        total = np.zeros(len(PHASES))
        for i in range(warm + steps):
            t = [time.perf_counter()]
            opt.zero_grad()
            t.append(time.perf_counter())
            with torch.autocast(device, dtype=dtype, enabled=dtype is not None):
                loss = loss_fn(model(x), y)
            t.append(time.perf_counter())
            scaled = scaler.scale(loss)
            t.append(time.perf_counter())
            scaled.backward()
            t.append(time.perf_counter())
            scaler.unscale_(opt)
            t.append(time.perf_counter())
            scaler.step(opt)
            t.append(time.perf_counter())
            scaler.update()
            t.append(time.perf_counter())
            if i >= warm:
                total += np.diff(t)
        return 1e6 * total / steps
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=180)
    parser.add_argument("--batch", type=int, default=32, help="the batch size (default 32)")
    parser.add_argument("--against", metavar="PATH", help="also time minifp.torch from the checkout at PATH")
    args = parser.parse_args()
    rows = {}
    for label, (mf, _) in checkouts(args.against).items():
        torch = importlib.import_module(f"{mf.__name__}.torch")
        suffix = "" if label == "this" else f" ({label})"
        rows.update({"float32" + suffix: setup(torch, "cpu", None, False, args.batch),
                     "cuda float16" + suffix: setup(torch, "cuda", torch.float16, True, args.batch),
                     "  no scaler" + suffix: setup(torch, "cuda", torch.float16, False, args.batch),
                     "cuda bfloat16" + suffix: setup(torch, "cuda", torch.bfloat16, False, args.batch)})
    best = {name: None for name in rows}
    for r in range(args.rounds):
        for name in list(rows)[::1 - 2 * (r % 2)]:
            us = rows[name](args.steps)
            best[name] = us if best[name] is None or us.sum() < best[name].sum() else best[name]
    print(f"us per phase of the digits MLP's step (batch {args.batch}), best of {args.rounds} rounds of "
          f"{args.steps} steps")
    print(f"{'':24s}" + "".join(f"{p:>10s}" for p in PHASES) + f"{'total':>10s}{'/f32':>7s}")
    for name, us in best.items():
        f32 = best["float32" + name[name.find(" ("):] if " (" in name else "float32"].sum()
        print(f"{name:24s}" + "".join(f"{v:10.1f}" for v in us) + f"{us.sum():10.1f}{us.sum() / f32:6.2f}x")


if __name__ == "__main__":
    main()

"""minifp.torch against real PyTorch on the CPU: ms per training step, interleaved in one run.

    python benchmarks/torch_face.py [--steps 5] [--min-ms 60] [--rounds 7] [--warm 2] [--against PATH] [--vision]
                                    [--no-scaler]

The same PyTorch code (Linear/Conv2d models, SGD, CrossEntropyLoss) runs once with `import torch` and once
with `import minifp.torch as torch`. Rows: minifp float32 against PyTorch float32 (target <= 1.3x), and
minifp's emulated cuda float16 step with GradScaler against its own float32 step (target <= 1.15x on the
big MLP and the CNN, <= 1.3x on the digits MLP at batch 32). Without PyTorch installed, its columns are
skipped. Each round times every contender in turn (the order alternates), so a slow stretch of a shared
machine falls on all alike; each figure is the best round. Before each timed run a contender takes --warm
untimed steps (default 2): the first steps after another contender's run pay to bring their code and data back
into the caches it evicted, which a training loop running its own steps does not (--warm 0 counts them; on the
digits MLP it adds about 0.02 to the float16 / float32 ratio). --against PATH also times minifp.torch from the
checkout at PATH in the same rounds (its rows marked "against", with the median over rounds of this checkout's
step time over that one's). --vision adds torchvision's mobilenet_v2 and
resnet18 (10 classes, batch 16 of 3x32x32; PyTorch's column needs torchvision). --no-scaler adds minifp's cuda
float16 step without GradScaler (enabled=False), to see what the scaler costs.
"""
import argparse
import importlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _checkouts import checkouts

try:
    import torch as real_torch
    real_torch.set_num_threads(2)
except ImportError:
    real_torch = None

warnings.filterwarnings("ignore", message="minifp: no GPU here")
# (name, model maker (the face's torch module -> model), input shape, batch)
CASES = [("mlp 784-1024-1024-10", lambda t: t.nn.Sequential(t.nn.Linear(784, 1024), t.nn.ReLU(),
                                                            t.nn.Linear(1024, 1024), t.nn.ReLU(),
                                                            t.nn.Linear(1024, 10)), (784,), 256),
         ("cnn 1x28x28", lambda t: t.nn.Sequential(t.nn.Conv2d(1, 16, 3, padding=1), t.nn.ReLU(), t.nn.MaxPool2d(2),
                                                   t.nn.Conv2d(16, 32, 3, padding=1), t.nn.ReLU(), t.nn.MaxPool2d(2),
                                                   t.nn.Flatten(), t.nn.Linear(32 * 7 * 7, 10)), (1, 28, 28), 64),
         ("digits mlp 64-64-10", lambda t: t.nn.Sequential(t.nn.Linear(64, 64), t.nn.ReLU(), t.nn.Linear(64, 10)),
          (64,), 32)]
VISION = [(name, lambda t, name=name: getattr(vision_of(t).models, name)(num_classes=10), (3, 32, 32), 16)
          for name in ("mobilenet_v2", "resnet18")]


def vision_of(torch):
    """minifp.torch.vision for a minifp face; torchvision (or None, without it) for PyTorch."""
    if torch is not real_torch:
        return importlib.import_module(f"{torch.__name__}.vision")
    tools = str(Path(__file__).resolve().parents[1] / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    from record_pytorch import import_torchvision      # with its shim for a CUDA torchvision wheel on CPU torch
    return import_torchvision()


def stepper(torch, make, shape, batch, device="cpu", dtype=None, scaled=True):
    """A function running `steps` SGD steps of a fresh model; returns ms per step."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.random((batch,) + shape, dtype=np.float32)).to(device)
    y = torch.tensor(rng.integers(0, 10, batch)).to(device)
    model = make(torch).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device, enabled=dtype is not None and scaled)

    def step():
        opt.zero_grad()
        with torch.autocast(device, dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    def run(steps, warm=0):
        for _ in range(warm):
            step()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return 1e3 * (time.perf_counter() - start) / steps
    run(1)
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", metavar="PATH", help="also time minifp.torch from the checkout at PATH")
    parser.add_argument("--vision", action="store_true", help="also mobilenet_v2 and resnet18 (batch 16, 3x32x32)")
    parser.add_argument("--no-scaler", action="store_true", help="also the cuda float16 step without GradScaler")
    parser.add_argument("--warm", type=int, default=2, help="untimed steps before each timed run (default 2)")
    parser.add_argument("--min-ms", type=float, default=60.0, help="steps enough for each timed run to last this long "
                                                                  "(default 60 ms; at least --steps)")
    args = parser.parse_args()
    faces = {label: importlib.import_module(f"{mf.__name__}.torch") for label, (mf, _) in checkouts(args.against).items()}
    print(f"ms per step, best of {args.rounds} rounds of {args.steps} steps or more (each round at least "
          f"{args.min_ms:g} ms); PyTorch: "
          f"{real_torch.__version__ if real_torch else 'not installed (its columns skipped)'}")
    print(f"{'model':22s} {'torch f32':>10s} {'minifp f32':>11s} {'minifp cuda f16':>16s} "
          f"{'f32/torch':>10s} {'f16/f32':>8s}" + (f" {'f16 no scaler':>14s} {'/f32':>6s}" if args.no_scaler else "")
          + ("   this / against: f32, f16 (median of the rounds' ratios)" if args.against else ""))
    for name, make, shape, batch in CASES + (VISION if args.vision else []):
        runs = {}
        for label, face in faces.items():
            runs[label, "f32"] = stepper(face, make, shape, batch)
            runs[label, "f16"] = stepper(face, make, shape, batch, "cuda", face.float16)
            if args.no_scaler:
                runs[label, "f16 unscaled"] = stepper(face, make, shape, batch, "cuda", face.float16, scaled=False)
        if real_torch is not None and (name not in [v[0] for v in VISION] or vision_of(real_torch) is not None):
            runs["torch", "f32"] = stepper(real_torch, make, shape, batch)
        # Each timed run lasts at least --min-ms: a run of a few ms is at the mercy of one scheduler tick
        first = runs["this", "f32"](args.steps, args.warm) * 1e-3
        steps = max(args.steps, int(np.ceil(args.min_ms * 1e-3 / max(first, 1e-6))))
        times = {k: [] for k in runs}
        for r in range(args.rounds):
            for k in list(runs)[::1 - 2 * (r % 2)]:
                times[k].append(runs[k](steps, args.warm))
        best = {k: min(v) for k, v in times.items()}
        torch32 = best.get(("torch", "f32"), float("nan"))
        for label in faces:
            f32, f16 = best[label, "f32"], best[label, "f16"]
            row = name if label == "this" else f"  ({label})"
            bare = best.get((label, "f16 unscaled"))
            ratios = ""
            if label == "against":      # rounds of both checkouts taken in turn: a slow stretch falls on both
                ratios = "   " + ", ".join(f"{np.median(np.divide(times['this', k], times['against', k])):.3f}"
                                           for k in ("f32", "f16"))
            print(f"{row:22s} {torch32:10.2f} {f32:11.2f} {f16:16.2f} {f32 / torch32:9.2f}x {f16 / f32:7.2f}x"
                  + (f" {bare:14.2f} {bare / f32:5.2f}x" if bare else "") + ratios, flush=True)


if __name__ == "__main__":
    main()

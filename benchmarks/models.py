"""Issue 35's models: minifp.torch against real PyTorch on the CPU, ms per training step at one and two threads.

    PYTHONPATH=. python benchmarks/models.py [--models mobilenet_v2,resnet18,...] [--threads 1,2] [--rounds 5]
                                             [--steps 2] [--min-ms 100] [--warm 1] [--against PATH] [--quick]
                                             [--profile MODEL [--profile-precision f32|f16|bf16]]

The same PyTorch code runs with `torch` = real PyTorch (when installed) and `torch` = minifp.torch (and, with
--against, the minifp.torch of another checkout), through torch_face.py's stepper: SGD with momentum,
CrossEntropyLoss, a fixed batch. Contenders per model: PyTorch float32, minifp float32, minifp's emulated cuda
float16 step with GradScaler, and its cuda bfloat16 autocast step (no scaler). Each round times every contender
in turn (the order alternates), so a slow stretch of a shared machine falls on all alike; the table gives each
contender's min / median / max ms per step over the rounds, and each ratio as the median of the rounds' ratios
(with the ratio of the minima beside it). Targets (issue 35): f32/torch <= 1.2x (<= 1.05x for the MLPs),
f16/f32 <= 1.15x, bf16/f32 <= 1.10x.

Each --threads setting runs in a subprocess of its own with OMP_NUM_THREADS / OPENBLAS_NUM_THREADS /
NUMBA_NUM_THREADS set (what OpenBLAS and Numba read when they load, the most threads Numba will use), and both
PyTorch and minifp.torch get set_num_threads too.

--quick: 2 rounds of 1 step, no warm-up, one thread (unless --threads is given): does it run. --profile MODEL:
cProfile of minifp's step (float32 unless --profile-precision), the top 25 functions by cumulative and by own
time; the first --threads setting.
"""
import argparse
import cProfile
import importlib
import json
import os
import pstats
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def mobilenet_v2(t):
    """torchvision's mobilenet_v2, 10 classes."""
    return vision(t).models.mobilenet_v2(num_classes=10)


def resnet18(t):
    """torchvision's resnet18, 10 classes (the model of torch_face.py --vision)."""
    return vision(t).models.resnet18(num_classes=10)


def transformer(t):
    """A pre-norm transformer block (d 256, 4 heads, GELU MLP of width 1024), mean over positions, 10 logits."""
    nn = t.nn

    class Block(nn.Module):
        def __init__(self, d=256, heads=4):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            h = self.norm1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            x = x + self.mlp(self.norm2(x))
            return self.head(x.mean(dim=1))
    return Block()


def cnn(t):
    """The small CNN: conv 3->32, 32->64 (3x3, padded), each with ReLU and 2x2 max-pool, then 10 logits."""
    nn = t.nn
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 8 * 8, 10))


def mlp(t):
    """torch_face.py's big MLP 784-1024-1024-10."""
    nn = t.nn
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def digits_mlp(t):
    """torch_face.py's digits MLP 64-64-10."""
    nn = t.nn
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


# name: (model maker (a torch module -> model), input shape, batch)
MODELS = {"mobilenet_v2": (mobilenet_v2, (3, 32, 32), 32),
          "resnet18": (resnet18, (3, 32, 32), 16),
          "transformer": (transformer, (64, 256), 16),
          "cnn": (cnn, (3, 32, 32), 64),
          "mlp": (mlp, (784,), 256),
          "digits_mlp": (digits_mlp, (64,), 32)}
PRECISIONS = {"f32": ("cpu", None), "f16": ("cuda", "float16"), "bf16": ("cuda", "bfloat16")}
# (ratio's name, numerator, denominator), each side a (checkout, precision)
RATIOS = [("f32/torch", ("this", "f32"), ("torch", "f32")), ("f16/f32", ("this", "f16"), ("this", "f32")),
          ("bf16/f32", ("this", "bf16"), ("this", "f32"))] + [
    (f"this/against {p}", ("this", p), ("against", p)) for p in PRECISIONS]
TARGETS = {"f32/torch": 1.2, "f16/f32": 1.15, "bf16/f32": 1.10}
MLPS = ("mlp", "digits_mlp")


def vision(t):
    """torchvision-style models for a torch module: torch_face.py's vision_of (torchvision through its shim)."""
    import torch_face
    return torch_face.vision_of(t)


def steppers(faces, real_torch, name):
    """{(checkout, precision): run(steps, warm) -> ms per step} for one model; PyTorch's float32 when it can run."""
    from torch_face import stepper
    make, shape, batch = MODELS[name]
    runs = {}
    if real_torch is not None and (make not in (mobilenet_v2, resnet18) or vision(real_torch) is not None):
        runs["torch", "f32"] = stepper(real_torch, make, shape, batch)
    for label, face in faces.items():
        for precision, (device, dtype) in PRECISIONS.items():
            runs[label, precision] = stepper(face, make, shape, batch, device, dtype and getattr(face, dtype),
                                             scaled=precision == "f16")
    return runs


def measure(runs, args):
    """{contender: [ms per step, one per round]}; rounds interleave the contenders, alternating their order."""
    steps = {}
    for k, run in runs.items():      # each timed run lasts at least --min-ms: a few ms is one scheduler tick
        first = run(1, args.warm)
        steps[k] = max(args.steps, int(np.ceil(args.min_ms / max(first, 1e-3))))
    times = {k: [] for k in runs}
    for r in range(args.rounds):
        for k in list(runs)[::1 - 2 * (r % 2)]:
            times[k].append(runs[k](steps[k], args.warm))
    return times, steps


def ratios(times):
    """{ratio name: (median of the rounds' ratios, ratio of the minima)} for the RATIOS both sides of have run."""
    out = {}
    for name, num, den in RATIOS:
        if num in times and den in times:
            out[name] = (float(np.median(np.divide(times[num], times[den]))), min(times[num]) / min(times[den]))
    return out


def child(args, threads):
    """Time (or profile) the models in this process, its thread counts set by the parent's environment."""
    sys.path.insert(0, str(HERE))
    from _checkouts import checkouts
    warnings.filterwarnings("ignore", message="minifp: no GPU here")
    import torch_face
    real_torch = torch_face.real_torch
    if real_torch is not None:
        real_torch.set_num_threads(threads)
    faces = {label: importlib.import_module(f"{mf.__name__}.torch")
             for label, (mf, _) in checkouts(args.against).items()}
    for face in faces.values():
        face.set_num_threads(threads)
    if args.profile:
        return profile(faces["this"], args)
    print(f"\n{threads} thread{'s' * (threads > 1)}: ms per step, min / median / max of {args.rounds} rounds; "
          f"PyTorch {real_torch.__version__ if real_torch else 'not installed (its column skipped)'}", flush=True)
    print(f"{'model':14s} {'contender':18s} {'steps':>5s} {'min':>9s} {'median':>9s} {'max':>9s}   "
          f"ratio: median of rounds (of minima)")
    results = {}
    for name in args.models:
        times, steps = measure(steppers(faces, real_torch, name), args)
        results[name] = {"ms": {f"{c} {p}": times[c, p] for c, p in times}, "ratios": ratios(times)}
        for i, (k, ts) in enumerate(times.items()):
            label = "torch" if k[0] == "torch" else "minifp" if k[0] == "this" else k[0]
            print(f"{name if i == 0 else '':14s} {label + ' ' + k[1]:18s} {steps[k]:5d} {min(ts):9.2f} "
                  f"{np.median(ts):9.2f} {max(ts):9.2f}", flush=True)
        for r, (med, best) in results[name]["ratios"].items():
            print(f"{'':14s} {r:18s} {'':5s} {'':29s}   {med:.2f}x ({best:.2f}x)", flush=True)
    return results


def profile(face, args):
    """Print cProfile's top 25 functions of minifp's training step, by cumulative time and by own time."""
    from torch_face import stepper
    make, shape, batch = MODELS[args.profile]
    device, dtype = PRECISIONS[args.profile_precision]
    run = stepper(face, make, shape, batch, device, dtype and getattr(face, dtype),
                  scaled=args.profile_precision == "f16")
    run(1, max(args.warm, 1))
    steps = max(args.steps, 1)
    profiler = cProfile.Profile()
    profiler.enable()
    ms = run(steps)
    profiler.disable()
    print(f"{args.profile} {args.profile_precision}: {steps} steps, {ms:.1f} ms per step under the profiler")
    for key in ("cumulative", "tottime"):
        print(f"\n-- top 25 by {key} --")
        pstats.Stats(profiler, stream=sys.stdout).strip_dirs().sort_stats(key).print_stats(25)
    return {}


def summary(results, threads, against):
    """One line per model: each ratio at each thread count, against its target."""
    names = [r[0] for r in RATIOS if against or "against" not in r[0]]
    print("\nsummary: median of the rounds' ratios at " + ", ".join(f"{n} thread{'s' * (n > 1)}" for n in threads)
          + "; target in brackets")
    print(f"{'model':14s}" + "".join(f" {n:>22s}" for n in names))
    for model in next(iter(results.values())):
        cells = []
        for n in names:
            got = [results[t][model]["ratios"].get(n) for t in threads]
            target = 1.05 if n == "f32/torch" and model in MLPS else TARGETS.get(n)
            text = ", ".join("-" if g is None else f"{g[0]:.2f}" for g in got) + (f" [{target}]" if target else "")
            cells.append(f" {text:>22s}")
        print(f"{model:14s}" + "".join(cells))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--threads", help="comma-separated thread counts, one subprocess each (default 1,2)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="at least this many steps per timed run")
    parser.add_argument("--min-ms", type=float, default=100.0, help="steps enough for a timed run to last this long")
    parser.add_argument("--warm", type=int, default=1, help="untimed steps before each timed run")
    parser.add_argument("--against", metavar="PATH", help="also time minifp.torch from the checkout at PATH")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 1 step, no warm-up, one thread")
    parser.add_argument("--profile", metavar="MODEL", choices=list(MODELS), help="cProfile minifp's step instead")
    parser.add_argument("--profile-precision", choices=list(PRECISIONS), default="f32")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)       # run here, at this many threads
    parser.add_argument("--json", help=argparse.SUPPRESS)                  # where a child writes its results
    args = parser.parse_args(argv)
    args.models = args.models.split(",")
    unknown = set(args.models) - set(MODELS)
    if unknown:
        parser.error(f"--models: unknown {', '.join(sorted(unknown))} (known: {', '.join(MODELS)})")
    if args.quick:
        args.rounds, args.steps, args.min_ms, args.warm = 2, 1, 0.0, 0
    if args.child is not None:
        results = child(args, args.child)
        if args.json:
            Path(args.json).write_text(json.dumps(results))
        return results
    threads = [int(n) for n in (args.threads or ("1" if args.quick else "1,2")).split(",")]
    if args.profile:
        threads = threads[:1]
    results = {}
    for n in threads:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            env = dict(os.environ, **{v: str(n) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                          "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")})
            cmd = [sys.executable, __file__] + (argv if argv is not None else sys.argv[1:])
            subprocess.run(cmd + ["--child", str(n), "--json", out.name], env=env, check=True)
            results[n] = json.loads(Path(out.name).read_text() or "{}")
    if not args.profile:
        summary(results, threads, args.against)
    return results


if __name__ == "__main__":
    main()

"""Single ops of issue 35, forward + backward: minifp.torch against real PyTorch on the CPU, interleaved rounds.

    PYTHONPATH=. python benchmarks/ops.py [--ops depthwise,gelu,...] [--threads 1] [--rounds 9] [--min-ms 50]
                                          [--against PATH]

Each case is the same PyTorch code run with `torch` = real PyTorch (when installed) and `torch` = minifp.torch
(and, with --against, the minifp.torch of another checkout): the op on fixed float32 inputs that require
gradients, then backward with a fixed output gradient. Each round times every contender in turn (the order
alternates); the table gives min / median ms per call and the median over rounds of minifp / PyTorch (or of this
checkout / --against). Targets (issue 35): a depthwise conv step <= 2x PyTorch's, exact GELU forward+backward
<= 1.5x. Thread counts are read when the libraries load: --threads sets OMP_NUM_THREADS and its kin first.
"""
import argparse
import importlib
import os
import sys
import time
import warnings

# (name, input shapes, the call on the face's torch module and its inputs)
CASES = {
    "depthwise": ([(32, 96, 16, 16), (96, 1, 3, 3)],
                  lambda t, x, w: t.nn.functional.conv2d(x, w, padding=1, groups=96)),
    "depthwise_s2": ([(32, 144, 16, 16), (144, 1, 3, 3)],
                     lambda t, x, w: t.nn.functional.conv2d(x, w, stride=2, padding=1, groups=144)),
    "conv3x3": ([(32, 64, 16, 16), (64, 64, 3, 3)], lambda t, x, w: t.nn.functional.conv2d(x, w, padding=1)),
    "conv1x1": ([(32, 96, 16, 16), (192, 96, 1, 1)], lambda t, x, w: t.nn.functional.conv2d(x, w)),
    "gelu": ([(1024, 1024)], lambda t, x: t.nn.functional.gelu(x)),
    "gelu_tanh": ([(1024, 1024)], lambda t, x: t.nn.functional.gelu(x, approximate="tanh")),
    "layer_norm": ([(1024, 256), (256,), (256,)], lambda t, x, w, b: t.nn.functional.layer_norm(x, (256,), w, b)),
    "softmax": ([(1024, 256)], lambda t, x: t.nn.functional.softmax(x, dim=-1)),
    # training batch norm (running statistics updated) of channels-last data, as a convolution leaves it (NCHW
    # views of NHWC arrays, the gradient too)
    "batch_norm": ([(32, 16, 16, 96), (96,), (96,)],
                   lambda t, x, w, b: t.nn.functional.batch_norm(x.permute(0, 3, 1, 2), t.zeros(96), t.ones(96), w, b,
                                                                 training=True).permute(0, 2, 3, 1)),
    "embedding": ([(1000, 256)], lambda t, w: t.nn.functional.embedding(indices(t), w)),
}
_INDICES = {}


def indices(torch):
    """The embedding case's (16, 64) indices into 1000 rows, one tensor per framework, made once."""
    if torch not in _INDICES:
        import numpy as np
        _INDICES[torch] = torch.tensor(np.random.default_rng(1).integers(0, 1000, (16, 64)))
    return _INDICES[torch]


def runner(torch, shapes, call):
    """run(n): ms per forward + backward of the case over n calls, on fresh inputs made once."""
    import numpy as np
    rng = np.random.default_rng(0)
    xs = [torch.tensor(rng.standard_normal(s, dtype=np.float32), requires_grad=True) for s in shapes]
    g = torch.tensor(rng.standard_normal(tuple(call(torch, *xs).shape), dtype=np.float32))

    def run(n):
        start = time.perf_counter()
        for _ in range(n):
            for x in xs:
                x.grad = None
            call(torch, *xs).backward(g)
        return 1e3 * (time.perf_counter() - start) / n
    run(1)
    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--min-ms", type=float, default=50.0, help="calls enough for each timed run to last this")
    parser.add_argument("--against", metavar="PATH", help="also time minifp.torch from the checkout at PATH")
    args = parser.parse_args()
    unknown = [o for o in args.ops.split(",") if o not in CASES]
    if unknown:
        parser.error(f"--ops: unknown {unknown}; choose from {list(CASES)}")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np
    from _checkouts import checkouts
    warnings.filterwarnings("ignore", message="minifp: no GPU here")
    faces = {label: importlib.import_module(f"{mf.__name__}.torch")
             for label, (mf, _) in checkouts(args.against).items()}
    try:
        import torch as real_torch
        real_torch.set_num_threads(args.threads)
        faces = {"pytorch": real_torch, **faces}
    except ImportError:
        pass
    labels = list(faces)
    base = "pytorch" if "pytorch" in faces else labels[-1]
    print(f"ms per forward + backward, {args.threads} thread(s), {args.rounds} rounds; ratios: median over rounds "
          f"of contender / {base}")
    print(f"{'op':14s}" + "".join(f"{label:>22s}" for label in labels) + "".join(
        f"{label + '/' + base:>22s}" for label in labels if label != base))
    for name in args.ops.split(","):
        shapes, call = CASES[name]
        runs = {label: runner(face, shapes, call) for label, face in faces.items()}
        n = {label: max(1, int(args.min_ms / max(run(1), 1e-3))) for label, run in runs.items()}
        times = {label: [] for label in labels}
        for r in range(args.rounds):
            for label in (labels if r % 2 == 0 else labels[::-1]):
                times[label].append(runs[label](n[label]))
        cells = "".join(f"{min(times[l]):10.3f} /{np.median(times[l]):9.3f}" for l in labels)
        ratio = "".join(f"{np.median(np.array(times[l]) / np.array(times[base])):22.2f}" for l in labels if l != base)
        print(f"{name:14s}{cells}{ratio}", flush=True)


if __name__ == "__main__":
    sys.exit(main())

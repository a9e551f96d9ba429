"""Per-op timings of GELU (exact and tanh), LayerNorm and embedding's gradient, forward and backward, float32:
minifp's ops (the speed module's kernels; MINIFP_SPEED=0: the plain path) and, where PyTorch imports, its ops on
one thread.

    PYTHONPATH=. python benchmarks/speed_norm.py                  # minifp, speed module
    MINIFP_SPEED=0 PYTHONPATH=. python benchmarks/speed_norm.py   # minifp, plain path
    /path/to/torch/python benchmarks/speed_norm.py                # PyTorch (minifp too, if it imports there)

Each figure is the best of --repeat calls in CPU seconds of the calling thread (time.thread_time), which a
shared machine's other work disturbs less than the wall clock; every op here runs on one thread.
"""
import argparse
import time

import numpy as np

SHAPES = {"gelu": (1024, 1024), "layer_norm": (1024, 256), "embedding": ((1000, 256), (16, 64))}


def best(fn, repeat):
    """The least thread CPU time of `repeat` calls of fn, in ms."""
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return 1e3 * min(times)


def minifp_rows(rng, repeat):
    """(name, forward ms, backward ms) of minifp's ops, called as the dispatcher calls them."""
    from minifp import _ops
    ops, rows = _ops.OPS, []
    x, g = (rng.standard_normal(SHAPES["gelu"]).astype(np.float32) for _ in range(2))
    for form in ("none", "tanh"):
        forward, backward = ops["gelu"].forward, ops["gelu"].grads[0]
        rows.append((f"gelu {form} {SHAPES['gelu']}", best(lambda: forward(np, x, approximate=form), repeat),
                     best(lambda: backward(np, g, None, x, approximate=form), repeat)))
    x, g = (rng.standard_normal(SHAPES["layer_norm"]).astype(np.float32) for _ in range(2))
    w, b = (rng.standard_normal(SHAPES["layer_norm"][-1]).astype(np.float32) for _ in range(2))
    ln, p = ops["layer_norm"], dict(normalized_ndim=1, eps=1e-5)
    rows.append((f"layer_norm {SHAPES['layer_norm']} (grads of x and w)",
                 best(lambda: ln.forward(np, x, w, b, **p), repeat),
                 best(lambda: ln.grads[0](np, g, None, x, w, b, **p), repeat)
                 + best(lambda: ln.grads[1](np, g, None, x, w, b, **p), repeat)))
    (vocab, dim), batch = SHAPES["embedding"]
    w, idx = np.zeros((vocab, dim), np.float32), rng.integers(0, vocab, batch)
    g = rng.standard_normal(batch + (dim,)).astype(np.float32)
    rows.append((f"embedding {(vocab, dim)} <- {batch}", best(lambda: w[idx], repeat),
                 best(lambda: ops["embedding"].grads[0](np, g, None, w, indices=idx), repeat)))
    return rows


def torch_rows(torch, repeat):
    """The same ops in PyTorch, one thread: forward without autograd, backward as (forward + backward) - forward."""
    torch.set_num_threads(1)
    F, rows = torch.nn.functional, []

    def timed(name, forward, leaves, g):
        def step():
            forward().backward(g)
            for t in leaves:
                t.grad = None
        with torch.no_grad():
            fwd = best(forward, repeat)
        rows.append((name, fwd, best(step, repeat) - fwd))
    x, g = torch.randn(SHAPES["gelu"], requires_grad=True), torch.randn(SHAPES["gelu"])
    for form in ("none", "tanh"):
        timed(f"gelu {form} {SHAPES['gelu']}", lambda: F.gelu(x, approximate=form), [x], g)
    x, g = torch.randn(SHAPES["layer_norm"], requires_grad=True), torch.randn(SHAPES["layer_norm"])
    ln = torch.nn.LayerNorm(SHAPES["layer_norm"][-1])
    timed(f"layer_norm {SHAPES['layer_norm']} (grads of x, w, b)", lambda: ln(x), [x, ln.weight, ln.bias], g)
    (vocab, dim), batch = SHAPES["embedding"]
    emb, idx = torch.nn.Embedding(vocab, dim), torch.randint(0, vocab, batch)
    timed(f"embedding {(vocab, dim)} <- {batch}", lambda: emb(idx), [emb.weight], torch.randn(batch + (dim,)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for label, rows in (("minifp", _try(lambda: minifp_rows(rng, args.repeat))),
                        ("pytorch", _try(lambda: torch_rows(__import__("torch"), args.repeat)))):
        for name, fwd, bwd in rows or ():
            print(f"{label:8s} {name:46s} fwd {fwd:8.3f}  bwd {bwd:8.3f}  both {fwd + bwd:8.3f} ms")


def _try(fn):
    """fn(), or None where its library does not import here."""
    try:
        return fn()
    except ImportError:
        return None


if __name__ == "__main__":
    main()

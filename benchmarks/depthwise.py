"""A depthwise 3x3 convolution's training step (forward, input and weight gradients) on one thread: ms per shape.

    python benchmarks/depthwise.py minifp|torch [--nchw] [--repeat 9]

MobileNetV2's depthwise shapes at batch 32 (channels x size, stride). The same code runs with `import torch` (real
PyTorch, in its own environment: run the script once per face, alternating, on a shared machine) or with
`import minifp.torch as torch`. By default x and the output's gradient are channels-last in memory, as a network's
layers hand them over (the gradient through (y * gy).sum()); --nchw: contiguous NCHW x and backward(gy).
Prints the median of --repeat steps per shape, after two untimed ones.
"""
import argparse
import statistics
import time

import numpy as np

SHAPES = [(96, 16, 1), (144, 16, 2), (192, 8, 1), (384, 8, 1), (384, 16, 1)]     # (channels, height = width, stride)


def step_ms(torch, c, h, s, nchw, repeat, rng):
    """The median ms of one shape's step."""
    if nchw:
        x = torch.tensor(rng.standard_normal((32, c, h, h)).astype(np.float32)).requires_grad_(True)
    else:
        x = torch.tensor(rng.standard_normal((32, h, h, c)).astype(np.float32)).requires_grad_(True).permute(0, 3, 1, 2)
    conv = torch.nn.Conv2d(c, c, 3, stride=s, padding=1, groups=c, bias=False)
    ho = (h - 1) // s + 1
    gy = torch.tensor(rng.standard_normal((32, ho, ho, c)).astype(np.float32)).permute(0, 3, 1, 2)

    def step():
        if nchw:
            conv(x).backward(gy.contiguous())
        else:
            (conv(x) * gy).sum().backward()

    for _ in range(2):
        step()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("face", choices=["minifp", "torch"])
    parser.add_argument("--nchw", action="store_true")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    if args.face == "torch":
        import torch
    else:
        import minifp.torch as torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    figures = [f"{c}x{h}x{h}/{s}: {step_ms(torch, c, h, s, args.nchw, args.repeat, rng):.2f}" for c, h, s in SHAPES]
    print(f"{args.face:7s}", "  ".join(figures), "ms")


if __name__ == "__main__":
    main()

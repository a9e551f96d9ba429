"""Small programs whose float16/bfloat16 gradients depend on how autograd sums and rounds them (and on the steps
PyTorch's kernels round in): one source for
tools/record_pytorch.py (real PyTorch) and tests/torch/test_gradient_sums.py (minifp.torch)."""
import numpy as np


def wave(shape, k, scale=3.0):
    """float32(scale * sin(0.37 i + k + 0.1 (i*i % 10007))) over i = 0..n-1, reshaped: inputs both sides rebuild."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    return (scale * np.sin(0.37 * i + k + 0.1 * ((i * i) % 10007).astype(np.float64))).astype(np.float32).reshape(shape)


def gradients(torch, dtype):
    """{case: the gradient of one input (or a loss's values)}, every input and seed gradient of `dtype` unless the
    case says."""
    def t(shape, k, requires_grad=False, scale=3.0):
        return torch.tensor(wave(shape, k, scale)).to(dtype).requires_grad_(requires_grad)

    g, out = t((4, 32), 9), {}
    x, y = t((1, 32), 1, True), t((4, 32), 2, True)
    (x * y).backward(g)             # x's gradient: 8 rows of products, each rounded, then summed
    out["broadcast mul"] = x.grad
    x = t((4, 32), 3, True)
    (x * t((4, 32), 4) + x * t((4, 32), 5) + x * t((4, 32), 6)).backward(g)      # three gradients, summed in order
    out["three uses"] = x.grad
    x = t((4, 32), 3, True)
    z = x * t((4, 32), 7)
    (z * t((4, 32), 4) + z.exp()).backward(g)       # an intermediate tensor used twice
    out["intermediate used twice"] = x.grad
    x = t((1, 32), 1, True)
    (x * torch.tensor(wave((4, 32), 2))).backward(g.float())    # a float32 product: summed in float32, rounded once
    out["mixed broadcast"] = x.grad
    w, x = t((16, 16), 11, True, scale=0.5), t((8, 16), 3)
    ((x @ w) @ w).backward(t((8, 16), 9))     # one weight in two products
    out["weight used twice"] = w.grad
    x, y = t((4, 32), 3, True), t((4, 32), 2, True, scale=1.0)
    (x / (y + 1.5)).backward(g)      # the divisor's gradient: -grad * ((x / y) / y), three roundings
    out["divisor"] = y.grad
    x, y = t((4, 32), 3, True), t((4, 32), 2, True, scale=1.5)
    (x.abs() ** y).backward(g)      # grad * (y * x ** (y - 1)) and grad * (x ** y * log(x)), rounded in stages
    out["pow base"], out["pow exponent"] = x.grad, y.grad
    x = t((4, 32), 5, True)
    (x.abs() ** 1.5).backward(g)    # a Python exponent: y - 1 is a number, the rest is rounded in stages
    out["pow by a number"] = x.grad
    F = torch.nn.functional
    x, y = t((6, 20), 3, True, scale=60.0), t((6, 20), 4, True, scale=60.0)
    loss = F.mse_loss(x, y, reduction="none")    # (x - y) rounded, then squared and rounded: past 255.9, inf
    loss.backward(t((6, 20), 9))
    out["mse values"], out["mse input"], out["mse target"] = loss.detach(), x.grad, y.grad
    x = t((6, 20), 3, True, scale=60.0)
    F.mse_loss(x, t((6, 20), 4, scale=60.0)).backward(t((), 9))     # norm = 2 / 120, rounded first
    out["mse mean"] = x.grad
    x = t((6, 20), 3, True, scale=60.0)
    F.l1_loss(x, t((6, 20), 4, scale=60.0)).backward(t((), 9))
    out["l1 mean"] = x.grad
    return out

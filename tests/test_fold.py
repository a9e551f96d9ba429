"""A batch of rows against one matrix is one GEMM (as PyTorch folds it): the same bits as the 2-D product."""
import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch.nn import functional as F

RNG = np.random.default_rng(7)


def _pair(*shape):
    """A leaf of `shape` and a leaf of the same values folded to (rows, last)."""
    x = RNG.standard_normal(shape, dtype=np.float32)
    return (torch.tensor(x, requires_grad=True),
            torch.tensor(x.reshape(-1, shape[-1]), requires_grad=True))


def _bits(t):
    return t.detach().numpy().view(np.uint32)


@pytest.mark.parametrize("shape", [(16, 64, 96), (2, 3, 40, 72), (0, 5, 96)])
@pytest.mark.parametrize("op", ["linear", "matmul"])
def test_batched_rows_give_the_folded_products_bits(op, shape):
    x3, x2 = _pair(*shape)
    w3, w2 = _pair(80, shape[-1])     # one weight, two leaves: their gradients compare
    prod = (lambda x, w: F.linear(x, w)) if op == "linear" else (lambda x, w: x @ w.T)
    y3, y2 = prod(x3, w3), prod(x2, w2)
    assert y3.shape == (*shape[:-1], 80)
    np.testing.assert_array_equal(_bits(y3).reshape(-1, 80), _bits(y2))
    g = torch.tensor(RNG.standard_normal(y3.shape, dtype=np.float32))
    y3.backward(g)
    y2.backward(g.reshape(-1, 80))
    np.testing.assert_array_equal(_bits(x3.grad).reshape(-1, shape[-1]), _bits(x2.grad))
    np.testing.assert_array_equal(_bits(w3.grad), _bits(w2.grad))

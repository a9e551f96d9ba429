"""getitem's gradient: basic indices write the view in place, advanced ones sum repeats; add.at's bits either way."""
import numpy as np
import pytest

import minifp.torch as torch

G = np.array([-0.0, 0.0, np.nan, -np.inf, np.inf, 1e-45, -3.5, 2.0 ** -126], np.float32)


@pytest.mark.parametrize("index", [(Ellipsis, slice(2, 6)), (1, slice(None, None, 2)), (None, 0, 2),
                                   ([0, 0, 1],), (slice(None), slice(None), [3, 3, 3])])
def test_getitem_gradient_is_add_at_on_zeros(index):
    x = torch.zeros(2, 3, 8, requires_grad=True)
    y = x[index]
    g = np.resize(G, y.shape).astype(np.float32)
    y.backward(torch.tensor(g))
    want = np.zeros((2, 3, 8), np.float32)
    np.add.at(want, index, g)
    np.testing.assert_array_equal(x.grad.numpy().view(np.uint32), want.view(np.uint32))

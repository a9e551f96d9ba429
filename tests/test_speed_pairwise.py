"""The speed module's pairwise sum (minifp/_speed.py's _pairwise: nested up to three levels of splits, a stack
beyond) against NumPy's float32 add.reduce, bit for bit, at every length around the levels' ends (1 to 2100:
a right half of 129 appears from n = 250 on, so the levels do not follow the powers of 2)."""
import numpy as np

from minifp import _intrinsics, _speed

LENGTHS = range(1, 2101) if _intrinsics.JIT else [1, 8, 128, 129, 249, 250, 256, 257, 489, 490, 969, 970, 1025]


def test_pairwise_is_numpys_at_every_length():
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(2200) * 10.0 ** rng.integers(-4, 5, 2200)).astype(np.float32)
    stacks = _speed._stacks()
    for n in LENGTHS:
        for lo in (0, 3):
            got = np.float32(0) + _speed._pairwise(a, lo, n, *stacks)
            assert got.view(np.int32) == np.add.reduce(a[lo:lo + n]).view(np.int32), (n, lo)

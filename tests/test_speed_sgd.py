"""SGD's momentum step in one pass (minifp/_speed.py's sgd_momentum) against the plain path's NumPy expressions,
bit for bit: random values, signed zeros, infinities, NaNs of both signs and with payloads (as NumPy's loops pass
them), with and without Nesterov and dampening, in one part and cut into parts on threads. Where both operands of
an addition are NaN, NumPy itself passes the first's or the second's depending on where the element falls in its
SIMD loop (the first in a loop of up to 16 elements, the second in the vector body after that), so there the
kernel must give a NaN and the bits are not compared."""
import numpy as np
import pytest

import minifp.torch as torch
from minifp import _speed
from minifp._seams import PLAIN, SEAMS

NAN_BITS = (0x7FC00000, 0xFFC00000, 0x7F801234, 0xFFA00001)      # quiet and signalling, both signs, payloads


def _values(rng, n, special):
    x = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(np.float32)
    if special:
        specials = np.array([0.0, -0.0, np.inf, -np.inf, *np.array(NAN_BITS, np.uint32).view(np.float32)], np.float32)
        pick = rng.random(n) < 0.3
        x[pick] = rng.choice(specials, pick.sum())
    return x


@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("nesterov,dampening", [(False, 0.0), (True, 0.0), (False, 0.25)])
@pytest.mark.parametrize("parts,shape", [(1, (4099,)), (3, (4099,)), (1, (7, 3)), (1, (37, 11, 3, 3)),
                                         (3, (37, 11, 3, 3))])
def test_one_pass_equals_the_plain_expressions(special, nesterov, dampening, parts, shape, monkeypatch):
    """(The 4-D cases: (out, in, 3, 3) views of (3, 3, in, out) memory, a PyTorch conv weight's after an
    update.)"""
    monkeypatch.setattr(_speed, "THREADS", parts)
    monkeypatch.setattr(_speed, "SPLIT_MIN", 1 if parts > 1 else _speed.SPLIT_MIN)
    rng = np.random.default_rng(7)
    n = int(np.prod(shape))
    layout = (lambda v: v.reshape(3, 3, 11, 37).transpose(3, 2, 0, 1)) if len(shape) == 4 else \
        (lambda v: v.reshape(shape))
    w, g, buf = (layout(_values(rng, n, special)) for _ in range(3))
    args = (np.float32(0.1), np.float32(0.9), np.float32(1 - dampening), nesterov)
    with np.errstate(all="ignore"):
        want = PLAIN.sgd_momentum(w, g, buf, *args)
        got = _speed.sgd_momentum(w, g, buf, *args)
    both = np.isnan(g) & (np.isnan(buf) | np.isnan(w))      # where two NaNs may meet in an addition
    for a, b in zip(got, want):
        assert a.dtype == np.float32 and a.shape == shape and (special or a.strides == w.strides)
        differ = a.view(np.uint32) != b.view(np.uint32)
        assert not (differ & ~both).any()
        assert np.isnan(a[differ]).all() and np.isnan(b[differ]).all()
    assert special == both.any()


def test_other_arrays_take_the_plain_path():
    w = np.arange(8192, dtype=np.float32).reshape(64, 128)
    strided = np.ones((128, 64), np.float32).T        # not C-contiguous
    got = _speed.sgd_momentum(w, strided, w, np.float32(0.5), np.float32(0.9), np.float32(1), False)
    assert np.array_equal(got[1], w * np.float32(0.9) + np.float32(1))
    assert np.array_equal(got[0], w + np.float32(-0.5) * got[1])


@pytest.mark.skipif(not _speed.ENABLED, reason="the speed module is off without the JIT")
def test_the_optimizer_steps_through_the_seam():
    assert SEAMS.sgd_momentum is _speed.sgd_momentum
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    opt = torch.optim.SGD([p], lr=0.5, momentum=0.9)
    for grad in ([1.0, 1.0, 1.0], [0.5, -0.25, 2.0]):
        p.grad = torch.tensor(grad)
        opt.step()
    # buf = [1, 1, 1] then 0.9 * buf + g = [1.4, 0.65, 2.9]; p = [0.5, -2.5, 2.5] - 0.5 * buf
    assert p.detach().numpy().tolist() == np.array([0.5 - np.float32(0.5) * np.float32(1.4),
                                                     -2.5 - np.float32(0.5) * np.float32(0.65),
                                                     2.5 - np.float32(0.5) * np.float32(2.9)], np.float32).tolist()

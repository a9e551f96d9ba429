"""The speed module's half-precision fast paths (minifp/_speed.py) against the plain path they stand in for, bit for
bit: the H100's native bfloat16 batch-norm backward (its staged channel sums, every summand and every value a warp
shuffle passes rounded to bfloat16, and its input gradient) on random, special (signed zeros, infinities, NaNs of
both signs) and padded grid shapes, NCHW and channels-last memory; bfloat16 results and gradients kept as float32
values. The speed module's functions are called directly, so most of these run without the JIT too (small
arrays)."""
import dataclasses
import inspect

import numpy as np
import pytest

import minifp as mf
import minifp.torch as torch
from minifp import _compute, _intrinsics, _ops, _speed
from minifp._formats import bfloat16, float16, float32
from minifp._seams import PLAIN, SEAMS

NEG_NAN = np.uint32(0xFFC00000).view(np.float32)       # x86's default NaN (inf - inf), sign set
# (N, C, ...) shapes: every thread-grid width (32 .. 512), rows and columns of the grid padded, BatchNorm1d's 2-D
# and 3-D inputs, one element per channel, one position per channel (a global-pooled head)
SHAPES = [(32, 16, 8, 8), (5, 3, 7, 9), (3, 4), (70, 2, 300), (2, 3, 33, 33), (17, 5, 1, 1), (33, 96, 1, 1),
          (1, 1, 600), (40, 2, 65), (3, 2, 130), (2, 1, 257)]
if not _intrinsics.JIT:         # the kernel as Python loops
    SHAPES = [s for s in SHAPES if np.prod(s) <= 4000]


def _values(rng, shape, special):
    """Normal draws; with `special`, zeros of both signs, infinities, NaNs of both signs and a payload too."""
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    if special:
        for value, share in ((-0.0, 0.1), (0.0, 0.1), (np.inf, 0.01), (-np.inf, 0.01), (np.nan, 0.01),
                             (NEG_NAN, 0.01), (np.uint32(0x7F801234).view(np.float32), 0.005)):
            x[rng.random(shape) < share] = value
    return x


def _pair(rng, shape, special, channels_last):
    """g and x of shape (N, C, ...), C-contiguous or NCHW views of channels-last memory (as convolutions leave)."""
    if channels_last:
        order = (0, *range(2, len(shape)), 1)
        back = tuple(np.argsort(order))
        return [np.ascontiguousarray(_values(rng, tuple(shape[i] for i in order), special)).transpose(back)
                for _ in range(2)]
    return [_values(rng, shape, special) for _ in range(2)]


def _sums(xp, *args):
    with np.errstate(all="ignore"):
        return PLAIN.kernel_channel_sums(xp, *args), _speed.kernel_channel_sums(xp, *args)


def _same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype == np.float32
    assert np.array_equal(a.view(np.int32), b.view(np.int32))


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_bfloat16_batch_norm_sums_are_the_plain_paths(shape, special, channels_last):
    """The channel sums of dy and of dy * (x - mean), staged in bfloat16: the same bits as the NumPy emulation."""
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    g, x = _pair(rng, shape, special, channels_last and len(shape) > 2)
    with np.errstate(all="ignore"):
        mu = np.mean(x, axis=(0,) + tuple(range(2, x.ndim)), keepdims=True)
    xp = _compute.Staged(np, bfloat16, object())
    _same(*_sums(xp, g))
    _same(*_sums(xp, g, x, mu))


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_bfloat16_batch_norm_input_gradient_is_the_plain_paths(shape, special, channels_last):
    """(g - (x - mu) * proj - grad_mean) * grad_scale in one pass: the same bits (NaNs of both signs meeting in an
    operation included) and shape as NumPy's four passes."""
    rng = np.random.default_rng(len(shape) * 10 + shape[-1])
    g, x = _pair(rng, shape, special, channels_last and len(shape) > 2)
    c = shape[1]
    factors = [_values(rng, (1, c) + (1,) * (len(shape) - 2), special) for _ in range(4)]
    with np.errstate(all="ignore"):
        want = PLAIN.kernel_input_grad(g, x, *factors)
        got = _speed.kernel_input_grad(g, x, *factors)
    _same(got, want)


def test_the_input_gradient_of_other_dtypes_takes_the_plain_path():
    """float64 factors (or inputs) give NumPy's float64 arithmetic, as before."""
    rng = np.random.default_rng(4)
    g, x = _pair(rng, (3, 2, 4), False, False)
    factors = [rng.standard_normal((1, 2, 1)) for _ in range(4)]
    got = _speed.kernel_input_grad(g, x, *factors)
    assert got.dtype == np.float64 and np.array_equal(got, PLAIN.kernel_input_grad(g, x, *factors))


@pytest.mark.parametrize("first", [np.nan, NEG_NAN])
@pytest.mark.parametrize("lanes", [(112, 120), (5, 40), (5, 299), (0, 16), (300, 3)])
def test_two_nans_keep_numpys_first(lanes, first):
    """Two NaNs of opposite signs meeting in a sum (a thread's, a warp shuffle's, the warps'): NumPy keeps the
    first operand's, and so does the kernel (LLVM may swap an addition's operands)."""
    g = np.zeros((70, 2, 310), np.float32)
    g[3, 0, lanes[0]], g[5, 0, lanes[1]] = first, -first
    g[4, 1, lanes[0]], g[4, 1, lanes[1]] = -first, first        # the same thread, one row
    xp = _compute.Staged(np, bfloat16, object())
    _same(*_sums(xp, g))
    x = np.zeros_like(g)
    x[3, 0, lanes[0]] = -first          # both factors NaN: g's kept
    _same(*_sums(xp, g, x, np.zeros((1, 2, 1), np.float32)))


def test_the_staging_is_bfloat16s_rounding():
    """_bf16_value against the plain rounding (round and widen) on float32 patterns of every exponent: ties, the
    largest finite values and overflow, subnormals, NaN payloads of both signs."""
    rng = np.random.default_rng(1)
    bits = np.concatenate([rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32),
                           np.arange(0, 1 << 32, (1 << 32) // 4099, dtype=np.uint64).astype(np.uint32),
                           np.array([0x7F7F8000, 0x7F7FFFFF, 0xFF7F8000, 0x00008000, 0x80018000, 0x7F800001,
                                     0xFF800001, 0x7FBFFFFF, 0x3F808000, 0x3F818000], np.uint32)])
    x = bits.view(np.float32)
    want = PLAIN.widened(PLAIN.rounded(x, bfloat16), bfloat16)
    got = np.array([_speed._bf16_value(v) for v in x], np.float32) if not _intrinsics.JIT else _stage_all(x)
    if not _intrinsics.JIT:     # the plain rounding is then the reference's, whose NaNs are the quiet NaN of their sign
        keep = ~np.isnan(x)
        got, want = got[keep], want[keep]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def _stage_all(x):
    """_bf16_value over x through a compiled loop (quicker than 30000 calls from Python)."""
    import numba

    @numba.njit
    def run(x, out):
        for i in range(x.size):
            out[i] = _speed._bf16_value(x[i])
    out = np.empty_like(x)
    run(x, out)
    return out


def test_other_formats_monitors_and_odd_inputs_take_the_plain_path(monkeypatch):
    """float16 staging, a watching monitor (it counts each staged rounding), float64 inputs and a mean of another
    dtype go to the plain path, which gives its own bits."""
    rng = np.random.default_rng(2)
    g, x = _pair(rng, (4, 3, 5, 5), False, False)
    mu = x.mean(axis=(0, 2, 3), keepdims=True)
    calls = []
    monkeypatch.setattr(PLAIN, "kernel_channel_sums", lambda *a: calls.append(a) or "plain")
    assert _speed.kernel_channel_sums(_compute.Staged(np, float16, object()), g) == "plain"
    xp = _compute.Staged(np, bfloat16, object())
    assert _speed.kernel_channel_sums(xp, g.astype(np.float64)) == "plain"
    assert _speed.kernel_channel_sums(xp, g, x, mu.astype(np.float64)) == "plain"
    assert _speed.kernel_channel_sums(np, g) == "plain"
    assert len(calls) == 4
    assert isinstance(_speed.kernel_channel_sums(xp, g), np.ndarray)     # the kernel itself


@pytest.mark.parametrize("size", [10, 1])
def test_a_bfloat16_batch_norm_step_is_the_plain_paths(plain_path, size):
    """A training batch norm under cuda bfloat16 autocast (the native backward), on channels-last conv output (of
    one position per channel too, as after global pooling): the same weight, bias and input gradients, and the
    same statistics, with and without the speed module."""
    def grads():
        torch.manual_seed(0)
        conv, bn = torch.nn.Conv2d(3, 8, 3, padding=1).to("cuda"), torch.nn.BatchNorm2d(8).to("cuda")
        x = torch.randn(6, 3, size, size).to("cuda").requires_grad_()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = bn(conv(x))
        (y.float() ** 2).sum().backward()
        return [t.grad.float().cpu().numpy() for t in (bn.weight, bn.bias, conv.weight, x)] + [
            t.cpu().numpy() for t in (bn.running_mean, bn.running_var)]
    fast = grads()
    with plain_path():
        plain = grads()
    for a, b in zip(fast, plain):
        assert np.array_equal(a.view(np.int32), b.view(np.int32))


def _bfloat16_patterns(rng, n):
    """float32 patterns of every exponent: random bits, ties at bfloat16's last bit, the largest finite values and
    overflow, subnormals, zeros of both signs, infinities, NaNs of both signs and payloads."""
    edges = np.array([0x00000000, 0x80000000, 0x7F7F8000, 0x7F7F7FFF, 0x7F7FFFFF, 0xFF7F8000, 0x00008000, 0x80018000,
                      0x00000001, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F801234, 0xFFBFFFFF,
                      0x3F808000, 0x3F818000, 0xBF808000], np.uint32)
    x = np.concatenate([edges, rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)]).view(np.float32)
    x[-n // 4:] = (rng.integers(-512, 512, n // 4) / np.float32(256)).astype(np.float32)     # ties
    return x


@pytest.mark.skipif(not _intrinsics.JIT, reason="bfloat16 kept values are the JIT's (codes written into storage)")
@pytest.mark.parametrize("layout", ["C", "transposed", "strided"])
def test_bfloat16_results_and_gradients_keep_the_plain_values(layout):
    """An op's bfloat16 result rounded with its float32 values kept, and a gradient kept as values: the plain
    rounding's codes and their widened values, bit for bit (C order, a permuted view, a view no kernel takes)."""
    x = _bfloat16_patterns(np.random.default_rng(3), 40_000).reshape(-1, 2)
    x = {"C": x, "transposed": np.ascontiguousarray(x.T).T, "strided": x[::2]}[layout]
    want = PLAIN.rounded(x, bfloat16)
    values = PLAIN.widened(want, bfloat16)
    for keep in (False, True):
        codes, kept = _speed.round_result(x, bfloat16, keep=keep)
        assert codes.dtype == bfloat16.storage and np.array_equal(codes.view(np.uint16), want.view(np.uint16))
        assert kept is None if not keep or layout == "strided" else np.array_equal(kept.view(np.int32),
                                                                                   values.view(np.int32))
    exact = PLAIN.widened(want, bfloat16)       # values of the format already: kept as they are
    assert _speed.round_result(exact, bfloat16, exact=True, keep=True)[1] is exact
    data, kept = _speed.round_gradient(x, bfloat16)
    got = kept if data is None else PLAIN.widened(data, bfloat16)
    assert np.array_equal(got.view(np.int32), values.view(np.int32))
    inplace = x.copy()
    data, kept = _speed.round_gradient(inplace, bfloat16, inplace=True)
    assert data is None and kept is inplace and np.array_equal(kept.view(np.int32), values.view(np.int32))


def test_a_bfloat16_autocast_step_is_the_plain_paths(plain_path):
    """A Linear-ReLU-Linear step under cuda bfloat16 autocast (kept values forward, gradients as values backward):
    the same gradients and loss with and without the speed module."""
    def step():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to("cuda")
        x = torch.randn(8, 16).to("cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), torch.tensor([0, 1, 2, 3] * 2).to("cuda"))
        loss.backward()
        return [loss.detach().float().cpu().numpy()] + [p.grad.float().cpu().numpy() for p in model.parameters()]
    fast = step()
    with plain_path():
        plain = step()
    for a, b in zip(fast, plain):
        assert np.array_equal(a.view(np.int32), b.view(np.int32))


@pytest.mark.parametrize("fmt", [float16, bfloat16])
def test_float32_reads_the_values_kept_beside_the_storage(fmt):
    """A half op's result keeps its float32 values beside its storage (the speed module's rounding): float32()
    returns them, with no widening pass, and they are the storage's values."""
    import minifp as mf
    x = mf.tensor(np.linspace(-3, 3, 4096, dtype=np.float32).reshape(64, 64), dtype=fmt.name, requires_grad=True)
    y = x * mf.tensor(np.float32(1.37), dtype=fmt.name)
    if y._float32 is None:
        pytest.skip("the plain path keeps no values")
    assert y.float32() is y._float32
    assert np.array_equal(y.float32().view(np.int32), mf.tensor(y.float32(), dtype=fmt.name).float32().view(np.int32))
    assert np.array_equal(y.float32(), y.numpy().astype(np.float32))


def _half_ties():
    """Every finite float16 value and the midpoint to its neighbour (a tie), both signs, as float32."""
    pos = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(np.float32)
    return np.concatenate([pos, (pos[1:] + pos[:-1]) / 2, np.float32(65520.0)[None]]) * np.float32([[1], [-1]])


@pytest.mark.skipif(not _intrinsics.JIT, reason="kept values are the JIT's (codes written into storage)")
@pytest.mark.parametrize("layout", ["C", "transposed", "strided"])
@pytest.mark.parametrize("fmt", [float16, bfloat16])
def test_rounding_in_place_is_the_plain_rounding(fmt, layout):
    """A result rounded with its values written into it (inplace: no one else holds it), and a gradient rounded
    into itself: the codes and values of the rounding into new arrays, bit for bit, on ties, signed zeros,
    infinities and NaNs (C order, a permuted view, a view no kernel takes); those are the plain rounding's, a
    float16 NaN's payload aside (the CPU's conversion keeps its top bits)."""
    x = np.concatenate([_bfloat16_patterns(np.random.default_rng(5), 40_000), _half_ties().ravel()])
    x = x[: x.size // 2 * 2].reshape(-1, 2)

    def laid(a):
        return {"C": a, "transposed": np.ascontiguousarray(a.T).T, "strided": a[::2]}[layout]
    codes, values = _speed.round_result(laid(x), fmt, keep=True)
    values = PLAIN.widened(codes, fmt) if values is None else values
    plain = PLAIN.widened(PLAIN.rounded(laid(x), fmt), fmt)
    nan = np.isnan(plain)
    assert np.array_equal(np.isnan(values), nan) and np.array_equal(values[~nan].view(np.int32),
                                                                     plain[~nan].view(np.int32))
    result, grad = laid(x.copy()), laid(x.copy())
    got_codes, kept = _speed.round_result(result, fmt, keep=True, inplace=True)
    assert got_codes.dtype == fmt.storage and np.array_equal(got_codes.view(np.uint16), codes.view(np.uint16))
    data, kept_grad = _speed.round_gradient(grad, fmt, inplace=True)
    got = kept_grad if data is None else PLAIN.widened(data, fmt)
    assert np.array_equal(got.view(np.int32), values.view(np.int32))
    if layout == "strided":         # the plain path's: x left as it was
        assert kept is None and np.array_equal(result.view(np.int32), laid(x).view(np.int32))
    else:                           # the values, written into x
        for into, out in ((result, kept), (grad, kept_grad)):
            assert np.shares_memory(out, into) and np.array_equal(into.view(np.int32), values.view(np.int32))


def test_a_body_owns_only_the_arrays_it_made():
    """owned: a new array of OWNED_MIN elements or more, made by the plain compute (or a staged op's namespace over
    NumPy), sharing memory with none of the body's arrays or params, nor with the sums a staged namespace shares."""
    x = np.ones((2, _compute.OWNED_MIN), np.float32)
    plain = _compute.ON_NUMPY
    assert _compute.owned(x + 1, plain, [x, None, 2.0], {}) and _compute.owned((x + 1).T, plain, [x], {"axis": 1})
    for view in (x, x.T, x[:, ::2], x.reshape(-1)):
        assert not _compute.owned(view, plain, [None, x], {})
    assert not _compute.owned(x, plain, [], {"index": x[0]})        # (memory shared with a param's array)
    assert not _compute.owned(np.ones(_compute.OWNED_MIN - 1, np.float32), plain, [x], {})     # (small: in the cache)
    staged = _compute.Compute(_compute.Staged(np, bfloat16, None))
    assert _compute.owned(x + 1, staged, [x], {})
    staged.xp.shared["sums"] = (np.ones(3), x)          # (a gradient that is a shared sum is held: not its own)
    assert not _compute.owned(x[0], staged, [], {})
    assert not _compute.owned(x + 1, _compute.Compute(_compute.Staged(_compute.Staged(np, bfloat16, None),
                                                                     bfloat16, None)), [], {})     # (not over NumPy)
    assert not _compute.owned(x + 1, _compute.Tf32(np, float32), [x], {})     # (a compute that rounds its factors)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rounding_writes_only_into_what_the_bodies_made(plain_path, monkeypatch, dtype):
    """A convolution, batch norm, ReLU6 and residual step under cuda autocast, on arrays past OWNED_MIN: results and
    gradients are rounded in place, the input and the parameters keep their values, and the loss and gradients are
    the plain path's, bit for bit."""
    flags = []
    for name in ("round_result", "round_gradient"):
        def spy(*args, f=getattr(SEAMS, name), **kw):
            flags.append(inspect.signature(f).bind(*args, **kw).arguments.get("inplace", False))
            return f(*args, **kw)
        monkeypatch.setattr(SEAMS, name, spy)

    def step():
        torch.manual_seed(0)
        conv, bn = torch.nn.Conv2d(8, 8, 3, padding=1).to("cuda"), torch.nn.BatchNorm2d(8).to("cuda")
        x = torch.randn(4, 8, 32, 32).to("cuda")
        before = [t.detach().cpu().numpy().copy() for t in (x, *conv.parameters(), *bn.parameters())]
        with torch.autocast("cuda", dtype=getattr(torch, dtype)):
            h = torch.nn.functional.relu6(bn(conv(x)))
            loss = (h + conv(h)).float().square().mean()
        loss.backward()
        after = [t.detach().cpu().numpy() for t in (x, *conv.parameters(), *bn.parameters())]
        assert all(np.array_equal(a.view(np.int32), b.view(np.int32)) for a, b in zip(before, after))
        return [loss.detach().cpu().numpy()] + [p.grad.cpu().numpy() for p in (*conv.parameters(),
                                                                              *bn.parameters())]
    fast = step()
    assert any(flags) or not _intrinsics.JIT        # (without the JIT the speed module is off)
    with plain_path():
        plain = step()
    for a, b in zip(fast, plain):
        assert np.array_equal(a.view(np.int32), b.view(np.int32))


@pytest.mark.skipif(not _intrinsics.JIT, reason="the speed module is off without the JIT")
def test_a_staged_op_rounds_its_own_arrays_in_place(monkeypatch):
    """Under cuda bfloat16 a convolution's result (its bias added after a staged rounding) and batch norm's input
    gradient (the native kernel's staged backward) are the staged namespace's own arrays: rounded in place."""
    calls = []
    for name in ("round_result", "round_gradient"):
        def spy(x, *args, f=getattr(SEAMS, name), name=name, **kw):
            calls.append((name, x.shape, inspect.signature(f).bind(x, *args, **kw).arguments.get("inplace", False)))
            return f(x, *args, **kw)
        monkeypatch.setattr(SEAMS, name, spy)
    torch.manual_seed(0)
    conv, bn = torch.nn.Conv2d(8, 8, 3, padding=1).to("cuda"), torch.nn.BatchNorm2d(8).to("cuda")
    x = torch.randn(4, 8, 32, 32).to("cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = bn(conv(x))
    out.float().sum().backward()
    results = [c for c in calls if c[0] == "round_result" and c[1] == (4, 8, 32, 32)]
    assert [c[2] for c in results] == [False, True, True]       # x's cast; the convolution's and batch norm's results
    backward = calls[calls.index(results[-1]) + 1:]
    assert ("round_gradient", (4, 8, 32, 32), True) in backward           # batch norm's input gradient


@pytest.mark.parametrize("view", [lambda x: x, lambda x: x.T.T, lambda x: x.reshape(-1).reshape(x.shape)])
def test_a_body_that_returns_its_operand_is_not_written_into(monkeypatch, view):
    """A result that is an operand's array (or a view of it) is rounded into new arrays: the operand keeps its
    values."""
    monkeypatch.setitem(_ops.OPS, "relu", dataclasses.replace(_ops.OPS["relu"], forward=lambda xp, x: view(x),
                                                               selects=False, masks=False))
    x = mf.tensor(np.random.default_rng(0).standard_normal((4, _compute.OWNED_MIN)) / 3)
    before = x.numpy().copy()
    y = mf.apply("relu", x, _out=float16)
    assert np.array_equal(x.numpy().view(np.int32), before.view(np.int32))
    assert np.array_equal(y.numpy().view(np.uint16), before.astype(np.float16).view(np.uint16))

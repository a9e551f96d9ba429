"""minifp.torch's reductions and products (minifp/torch/_reductions.py): values, shapes, dtypes, gradients and
errors as PyTorch 2.13 gives them (the op database's samples check the rest: tests/torch/test_opdb.py)."""
import math

import numpy as np
import pytest

import minifp.torch as torch


def _x(values, dtype=torch.float32, grad=False):
    return torch.tensor(values, dtype=dtype, requires_grad=grad)


def test_prod_gradient_is_exact_at_zeros():
    x = _x([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]], grad=True)
    torch.prod(x, 1).sum().backward()
    assert torch.prod(x, 1).tolist() == [0.0, 0.0]
    assert x.grad.tolist() == [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]]
    y = _x([1.0, 2.0, 3.0, 4.0], grad=True)
    torch.prod(y).backward()
    assert y.grad.tolist() == [24.0, 12.0, 8.0, 6.0]


def test_prod_rounds_once_in_half():
    # 1.5 ** 4 = 5.0625 needs 5 significant bits in float16 (exact); 1.001 ** 3 rounds only at the end
    x = _x([1.0009765625, 1.0009765625, 1.0009765625], torch.float16)
    assert torch.prod(x).dtype == torch.float16
    assert torch.prod(x).item() == float(np.float16(1.0009765625 ** 3))


def test_logsumexp_is_shifted_and_keeps_infinities():
    x = _x([[1000.0, 1000.0], [-math.inf, -math.inf]])
    out = torch.logsumexp(x, 1)
    assert out[0].item() == pytest.approx(1000.0 + math.log(2.0))
    assert out[1].item() == -math.inf
    assert torch.logsumexp(x, (0, 1), keepdim=True).shape == (1, 1)


def test_all_any_dims_and_keepdim():
    x = _x([[1.0, 0.0], [2.0, 3.0]])
    assert torch.all(x, 1).tolist() == [False, True]
    assert torch.any(x, dim=0, keepdim=True).tolist() == [[True, True]]
    assert torch.all(x).dtype == torch.bool and torch.all(_x(2.0), 0, keepdim=True).shape == ()


def test_sum_mean_over_empty_dim_lists_and_0_dim_tensors():
    x = _x([[1.0, 2.0], [3.0, 4.0]])
    assert torch.sum(x, ()).item() == 10.0 and torch.mean(x, []).item() == 2.5
    assert torch.mean(_x(3.0), 0, keepdim=True).shape == ()
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point"):
        torch.mean(x, dtype=torch.int64)


def test_nansum_nanmean_and_their_gradients():
    x = _x([1.0, math.nan, 3.0], grad=True)
    assert torch.nansum(x).item() == 4.0 and torch.nanmean(x).item() == 2.0
    torch.nanmean(x).backward()
    assert x.grad.tolist() == [0.5, 0.0, 0.5]


def test_var_mean_std_mean_aminmax():
    x = _x([[1.0, 2.0, 3.0], [4.0, 6.0, 8.0]])
    v, m = torch.var_mean(x, 1)
    assert v.tolist() == [1.0, 4.0] and m.tolist() == [2.0, 6.0]
    s, _ = torch.std_mean(x, 1, correction=0, keepdim=True)
    assert s.shape == (2, 1)
    r = torch.aminmax(x, dim=0)
    assert r.min.tolist() == [1.0, 2.0, 3.0] and r.max.tolist() == [4.0, 6.0, 8.0]
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        torch.aminmax(torch.zeros(2, 0))


def test_amax_checks_as_pytorch():
    with pytest.raises(RuntimeError, match="Expected reduction dim 1 to have non-zero size"):
        torch.amax(torch.zeros(2, 0))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        torch.amax(torch.zeros(2, 2), (0, 0))
    x = _x(2.0, grad=True)
    torch.amax(x, 0).backward()
    assert x.grad.item() == 1.0


def test_max_with_dim_on_a_0_dim_tensor():
    x = _x(2.0, grad=True)
    out = torch.max(x, 0, True)
    out.values.backward()
    assert out.values.shape == () and out.indices.item() == 0 and x.grad.item() == 1.0
    assert torch.argmax(_x([[1.0, 5.0], [7.0, 0.0]]), keepdim=True).shape == (1, 1)


@pytest.mark.parametrize("interpolation, want", [("linear", 2.5), ("lower", 2.0), ("higher", 3.0),
                                                 ("midpoint", 2.5), ("nearest", 3.0)])
def test_quantile_interpolations(interpolation, want):
    # rank 0.5 * 3 = 1.5: "nearest" rounds half to even, to rank 2, as PyTorch
    x = _x([4.0, 1.0, 3.0, 2.0])
    assert torch.quantile(x, 0.5, interpolation=interpolation).item() == want


def test_quantile_nan_and_q_tensor():
    x = _x([[1.0, math.nan, 3.0], [1.0, 2.0, 3.0]])
    assert np.isnan(torch.quantile(x, 0.5, dim=1)[0].item())
    assert torch.nanquantile(x, 0.5, dim=1).tolist() == [2.0, 2.0]
    assert torch.quantile(x[1], _x([0.0, 1.0])).tolist() == [1.0, 3.0]
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.5"):
        torch.quantile(x, 1.5)


def test_median_kthvalue_mode():
    x = _x([[3.0, 1.0, 2.0, 2.0], [5.0, math.nan, 4.0, 0.0]], grad=True)
    assert torch.median(x[0]).item() == 2.0
    r = torch.kthvalue(x[0], 1)
    assert r.values.item() == 1.0 and r.indices.item() == 1
    assert torch.nanmedian(x, 1).values.tolist() == [2.0, 4.0]
    assert np.isnan(torch.median(x, 1).values[1].item())
    m = torch.mode(_x([3.0, 1.0, 2.0, 2.0, 1.0]))
    assert m.values.item() == 1.0 and m.indices.item() == 4         # the smallest of the commonest, last seen
    torch.kthvalue(x, 4, 1).values.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]


def test_cov_and_corrcoef_against_numpy():
    a = np.array([[1.0, 2.0, 4.0, 7.0], [2.0, 1.0, 0.0, 3.0]], np.float32)
    fw = np.array([1, 2, 1, 3])
    aw = np.array([0.5, 1.0, 2.0, 1.0], np.float32)
    got = torch.cov(_x(a), fweights=torch.tensor(fw), aweights=_x(aw)).numpy()
    np.testing.assert_allclose(got, np.cov(a, fweights=fw, aweights=aw), rtol=1e-6)
    np.testing.assert_allclose(torch.corrcoef(_x(a)).numpy(), np.corrcoef(a), rtol=1e-6)
    with pytest.raises(RuntimeError, match="fweights to have integral dtype"):
        torch.cov(_x(a), fweights=_x(aw))


def test_histc_and_histogram():
    x = _x([0.0, 1.0, 1.0, 2.5, 4.0, 9.0])
    assert torch.histc(x, bins=4, min=0, max=4).tolist() == [1.0, 2.0, 1.0, 1.0]
    h = torch.histogram(x, 3)
    assert h.hist.tolist() == [4.0, 1.0, 1.0] and h.bin_edges.tolist() == [0.0, 3.0, 6.0, 9.0]
    assert torch.histogram(_x(3.0), 1).bin_edges.tolist() == [2.5, 3.5]


def test_trapezoids():
    y = _x([1.0, 2.0, 4.0])
    assert torch.trapezoid(y).item() == 4.5
    assert torch.trapezoid(y, _x([0.0, 1.0, 3.0])).item() == 7.5
    assert torch.cumulative_trapezoid(y, dx=2.0).tolist() == [3.0, 9.0]


def test_renorm_scales_only_the_large_slices():
    x = _x([[3.0, 4.0], [0.3, 0.4]])
    out = torch.renorm(x, 2, 0, 1.0)
    np.testing.assert_allclose(out.numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)
    with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions"):
        torch.renorm(_x(1.0), 2, 0, 1.0)


def test_products_through_matmul():
    a, b = _x([[1.0, 2.0], [3.0, 4.0]]), _x([[5.0, 6.0], [7.0, 8.0]])
    v = _x([1.0, -1.0])
    assert torch.dot(v, v).item() == 2.0 and torch.mv(a, v).tolist() == [-1.0, -1.0]
    assert torch.addmm(a, a, b, beta=0.5, alpha=2).tolist() == [[38.5, 45.0], [87.5, 102.0]]
    assert torch.addmm(_x([[math.nan]]), a, b, beta=0).tolist() == [[19.0, 22.0], [43.0, 50.0]]
    assert torch.outer(v, _x([1.0, 2.0, 3.0])).shape == (2, 3)
    assert torch.baddbmm(a, a.unsqueeze(0), b.unsqueeze(0)).tolist() == [[[20.0, 24.0], [46.0, 54.0]]]
    assert torch.addbmm(a, torch.stack([a, a]), torch.stack([b, b])).tolist() == [[39.0, 46.0], [89.0, 104.0]]
    assert torch.trace(a).item() == 5.0 and torch.inner(a, b).tolist() == [[17.0, 23.0], [39.0, 53.0]]
    assert torch.kron(a, _x([[1.0, 10.0]])).tolist() == [[1.0, 10.0, 2.0, 20.0], [3.0, 30.0, 4.0, 40.0]]
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        torch.dot(a, v)
    with pytest.raises(RuntimeError, match="trace: expected a matrix"):
        torch.trace(a.unsqueeze(0))


def test_einsum_and_tensordot_match_numpy():
    rng = np.random.default_rng(0)
    p, q = rng.integers(-3, 4, (2, 3, 4)).astype(np.float32), rng.integers(-3, 4, (4, 3)).astype(np.float32)
    for eq, ops in (("bij,jk->bik", (p, q)), ("bij,kj->bik", (p, q.T.copy())), ("ii->i", (q[:3],)),
                    ("bij->j", (p,)), ("ij,jk", (q, q.T.copy())), ("i,j->ij", (q[:, 0].copy(), q[0].copy()))):
        got = torch.einsum(eq, *(_x(o) for o in ops)).numpy()
        np.testing.assert_array_equal(got, np.einsum(eq, *ops), err_msg=eq)
    got = torch.tensordot(_x(p), _x(q), ([2, 1], [0, 1]))
    np.testing.assert_array_equal(got.numpy(), np.tensordot(p, q, ([2, 1], [0, 1])))


def test_linalg_cross_vecdot_multi_dot():
    x, y = _x([[1.0, 0.0, 0.0]]), _x([[0.0, 1.0, 0.0]])
    assert torch.linalg.cross(x, y).tolist() == [[0.0, 0.0, 1.0]] and torch.cross(x, y).tolist() == [[0.0, 0.0, 1.0]]
    assert torch.linalg.vecdot(x, y + x).tolist() == [1.0]
    a = _x([[1.0, 2.0]])
    assert torch.linalg.multi_dot([a, a.t(), a]).tolist() == [[5.0, 10.0]]
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3"):
        torch.linalg.cross(_x([[1.0, 2.0]]), _x([[1.0, 2.0]]))


def test_vector_norm_subgradient_at_zero():
    x = torch.zeros(3, requires_grad=True)
    torch.linalg.vector_norm(x).backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    y = _x([3.0, 0.0, 4.0], grad=True)
    torch.linalg.vector_norm(y, 0).backward()
    assert y.grad.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(NotImplementedError):
        torch.norm(_x([[1.0]]), "nuc")


def test_sum_to_size():
    x = _x([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum_to_size(1, 2).tolist() == [[4.0, 6.0]] and x.sum_to_size(()).item() == 10.0
    with pytest.raises(RuntimeError, match="is not expandable to size"):
        x.sum_to_size(3)


def test_cumprod_gradient_is_exact_at_zeros():
    x = _x([2.0, 0.0, 3.0, 4.0], grad=True)
    assert torch.cumprod(x, 0).tolist() == [2.0, 0.0, 0.0, 0.0]
    torch.cumprod(x, 0).sum().backward()
    # d/dx1 of 2 + 2*x1 + 2*x1*3 + 2*x1*3*4 = 2 + 6 + 24; the others see only x1 = 0 terms past their own
    assert x.grad.tolist() == [1.0, 32.0, 0.0, 0.0]


def test_logcumsumexp_keeps_small_prefixes():
    x = _x([-200.0, 0.0, 200.0])
    out = torch.logcumsumexp(x, 0).tolist()
    assert out[0] == -200.0 and out[1] == 0.0 and out[2] == 200.0


def test_histogramdd_and_cdist():
    pts = _x([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    h = torch.histogramdd(pts, [2, 2])
    assert h.hist.tolist() == [[1.0, 0.0], [1.0, 2.0]] and h.bin_edges[0].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match="The size of bins must be equal to the innermost dimension"):
        torch.histogramdd(pts, [2, 2, 2])
    d = torch.cdist(_x([[0.0, 0.0], [3.0, 4.0]]), _x([[0.0, 0.0]]))
    assert d.tolist() == [[0.0], [5.0]]
    with pytest.raises(RuntimeError, match="same number of columns"):
        torch.cdist(pts, _x([[1.0]]))


def test_bincount_and_matrix_norms():
    assert torch.bincount(torch.tensor([0, 2, 2]), minlength=5).tolist() == [1, 0, 2, 0, 0]
    w = torch.bincount(torch.tensor([0, 2, 2]), torch.tensor([1.0, 2.0, 3.0]))
    assert w.tolist() == [1.0, 0.0, 5.0] and w.dtype == torch.float32
    with pytest.raises(RuntimeError, match="1-d non-negative integral inputs"):
        torch.bincount(torch.tensor([-1, 2]))
    A = _x([[1.0, -2.0], [3.0, 4.0]])
    assert [torch.linalg.matrix_norm(A, o).item() for o in (1, -1, math.inf, -math.inf)] == [6.0, 4.0, 7.0, 3.0]
    assert torch.linalg.norm(A, 1).item() == 6.0 and torch.linalg.norm(A).item() == pytest.approx(30 ** 0.5)
    with pytest.raises(NotImplementedError):
        torch.linalg.matrix_norm(A, 2)


def test_cummax_cummin_take_the_latest_tie_and_keep_nan():
    r = torch.cummax(_x([1.0, 3.0, 2.0, 3.0, math.nan, 5.0]), 0)
    assert r.indices.tolist() == [0, 1, 1, 3, 4, 4] and r.values.tolist()[:4] == [1.0, 3.0, 3.0, 3.0]
    assert np.isnan(r.values[5].item())
    assert torch.cummin(_x([[2.0, 1.0, 1.0]]), 1).indices.tolist() == [[0, 1, 2]]


def test_normalize_cosine_similarity_pairwise_distance():
    F = torch.nn.functional
    assert F.normalize(_x([[3.0, 4.0]]), dim=1).tolist() == [[0.6000000238418579, 0.800000011920929]]
    assert F.cosine_similarity(_x([[1.0, 0.0]]), _x([[0.0, 2.0], [3.0, 0.0]])).tolist() == [0.0, 1.0]
    assert F.pairwise_distance(_x([[3.0, 0.0]]), _x([[0.0, 4.0]]), eps=0.0).tolist() == [5.0]


def test_addmm_rounds_once_in_half():
    # 2048 + 1 + 0.5: rounded after the product (2049 -> 2048 in float16) and again after the add would lose
    # the half; one rounding of the float32 sum 2049.5 gives 2050
    a = _x([[2048.0, 1.0]], torch.float16)
    b = _x([[1.0], [1.0]], torch.float16)
    c = _x([[0.5]], torch.float16)
    out = torch.addmm(c, a, b)
    assert out.dtype == torch.float16 and out.item() == 2050.0


def test_softmax_dtype_and_empty_input():
    x = _x([1.0, 2.0], torch.float16)
    assert torch.softmax(x, 0, dtype=torch.float32).dtype == torch.float32
    assert x.log_softmax(0, dtype=torch.float32).dtype == torch.float32
    assert torch.softmax(torch.zeros(5, 0, 0), 1).shape == (5, 0, 0)


def test_max_with_dim_gives_the_gradient_to_its_index_amax_shares_it():
    x = _x([1.0, 3.0, 3.0], grad=True)
    r = torch.max(x, 0)
    r.values.backward()
    assert r.indices.item() == 1 and x.grad.tolist() == [0.0, 1.0, 0.0]
    y = _x([[1.0, 3.0, 3.0]], grad=True)
    torch.amax(y, 1).sum().backward()
    assert y.grad.tolist() == [[0.0, 0.5, 0.5]]
    m = torch.min(_x([[2.0, math.nan, 1.0]]), 1, keepdim=True)
    assert m.values.shape == (1, 1) and np.isnan(m.values.item()) and m.indices.tolist() == [[1]]
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 1 to have non-zero size"):
        torch.max(torch.zeros(2, 0), 1)


@pytest.mark.parametrize("eq, shapes", [("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
                                        ("b...d,b...d->b...", [(2, 3, 4), (2, 1, 4)]),
                                        ("...ii->...i", [(2, 3, 3)]), ("i...->...", [(3, 2, 2)]),
                                        ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
                                        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)])])
def test_einsum_ellipses_and_chains_match_numpy(eq, shapes):
    rng = np.random.default_rng(1)
    ops = [rng.integers(-3, 4, s).astype(np.float32) for s in shapes]
    np.testing.assert_array_equal(torch.einsum(eq, *(_x(o) for o in ops)).numpy(), np.einsum(eq, *ops))

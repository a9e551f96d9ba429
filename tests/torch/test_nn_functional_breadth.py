"""Issue 32's nn.functional breadth: values PyTorch 2.13 gives (recorded by hand from it, small enough to read), and
minifp's numerics where a composition must stay exact (selections) or round once (one engine op)."""
import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.nn.functional as F


def test_max_pool1d_indices_and_unpool_round_trip():
    x = torch.tensor([[[3.0, 1, 4, 1, 5, 9, 2, 6]]])
    v, i = F.max_pool1d(x, 3, 2, padding=1, return_indices=True)
    assert v.tolist() == [[[3.0, 4.0, 9.0, 9.0]]] and i.tolist() == [[[0, 2, 5, 5]]] and i.dtype == torch.int64
    assert F.max_unpool1d(v, i, 3, 2, padding=1).tolist() == [[[3.0, 0.0, 4.0, 0.0, 0.0, 9.0, 0.0]]]


def test_max_pool3d_selects_each_window_first_maximum_and_its_gradient():
    x = torch.tensor(np.arange(2 * 4 * 4 * 4, dtype=np.float32).reshape(1, 2, 4, 4, 4) % 7, requires_grad=True)
    v, i = F.max_pool3d(x, 2, return_indices=True)
    flat = x.detach().numpy().reshape(1, 2, -1)
    assert np.array_equal(np.take_along_axis(flat, i.numpy().reshape(1, 2, -1), 2).reshape(v.shape), v.detach().numpy())
    v.sum().backward()
    assert x.grad.sum().item() == 16 and set(np.unique(x.grad.numpy())) <= {0.0, 1.0}


def test_adaptive_max_pool2d_values_and_indices():
    v, i = F.adaptive_max_pool2d(torch.tensor([[[1.0, 5, 2], [7, 0, 3]]]), (1, 2), return_indices=True)
    assert v.tolist() == [[[7.0, 5.0]]] and i.tolist() == [[[3, 1]]]


@pytest.mark.parametrize("mode, pad, want", [
    ("reflect", (2, 1), [[2.0, 1, 0, 1, 2, 3, 2], [6, 5, 4, 5, 6, 7, 6], [10, 9, 8, 9, 10, 11, 10]]),
    ("replicate", (1, -2, 0, 1), [[0.0, 0, 1], [4, 4, 5], [8, 8, 9], [8, 8, 9]]),
    ("circular", (-1, 2), [[1.0, 2, 3, 1, 2], [5, 6, 7, 5, 6], [9, 10, 11, 9, 10]]),
    ("constant", (1, -3), [[-1.0, 0], [-1, 4], [-1, 8]]),
])
def test_pad_modes(mode, pad, want):
    y = torch.arange(12.0).reshape(1, 3, 4)
    got = F.pad(y, pad, mode=mode, value=-1.0) if mode == "constant" else F.pad(y, pad, mode=mode)
    assert got.tolist() == [want]


def test_pad_refuses_what_pytorch_refuses():
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        F.pad(torch.zeros(1, 1, 3, 4), (2, 1), mode="reflect")


def test_interpolate_nearest_exact_and_area():
    x = torch.arange(5.0).reshape(1, 1, 5)
    assert F.interpolate(x, size=3, mode="nearest-exact").tolist() == [[[0.0, 2.0, 4.0]]]
    assert F.interpolate(x, size=3, mode="area").tolist() == [[[0.5, 2.0, 3.5]]]


def test_shrinks_and_threshold_keep_pytorchs_zeros():
    a = torch.tensor([-3.0, -0.5, 0.2, 4.0])
    soft = F.softshrink(a, 1.0).numpy()
    assert soft.tolist() == [-2.0, 0.0, 0.0, 3.0] and np.signbit(soft).tolist() == [True, True, False, False]
    assert F.hardshrink(a, 1.0).tolist() == [-3.0, 0.0, 0.0, 4.0]
    assert F.threshold(a, 0.1, 7.0).tolist() == [7.0, 7.0, np.float32(0.2), 4.0]


def test_margin_losses_match_pytorch():
    x = torch.tensor([[0.1, 0.2, 0.4, 0.8]])
    assert F.multi_margin_loss(x, torch.tensor([3])).item() == np.float32(0.32499998807907104)
    assert F.multilabel_margin_loss(x, torch.tensor([[3, 0, -1, 1]])).item() == np.float32(0.8500000238418579)


def test_channel_shuffle():
    assert F.channel_shuffle(torch.arange(6.0).reshape(1, 6, 1, 1), 2).flatten().tolist() == [0.0, 3, 1, 4, 2, 5]


def test_huber_loss_in_float16_rounds_once():
    """One op: 0.5 * d * d for |d| < delta computed in float32 and rounded once (1000 - 0.5 is exact here)."""
    h = torch.tensor([1000.0, -0.1, 3.0], dtype=torch.float16)
    got = F.huber_loss(h, torch.zeros(3, dtype=torch.float16), reduction="none")
    d = h.float().numpy()
    want = np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5).astype(np.float16)
    assert got.dtype == torch.float16 and got.numpy().tolist() == want.tolist()


def test_conv3d_is_one_rounding_of_the_float32_convolution():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 4, 5, 5)).astype(np.float16)
    w = rng.standard_normal((3, 2, 2, 3, 3)).astype(np.float16)
    got = F.conv3d(torch.tensor(x), torch.tensor(w), stride=(2, 1, 1), padding=1).numpy()
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1), (1, 1)))
    want = np.zeros((1, 3, 3, 5, 5))
    for o in range(3):
        for d in range(3):
            for i in range(5):
                for j in range(5):
                    want[0, o, d, i, j] = np.sum(xp[0, :, 2 * d:2 * d + 2, i:i + 3, j:j + 3] * w[o])
    # float32 accumulation of float16 products, then one rounding: equal to the exact sum rounded, but for ties
    assert np.mean(got == want.astype(np.float16)) > 0.99
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2 ** -10, atol=1e-3)


def test_conv3d_groups_stride_padding_dilation_match_pytorch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 3, 4, 4)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2, 2)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    y = F.conv3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=(1, 2, 1), padding=(1, 0, 1),
                 dilation=(1, 1, 2), groups=2)
    assert tuple(y.shape) == (2, 6, 3, 2, 4)
    np.testing.assert_allclose(y.flatten()[::37].numpy(), [-2.8672971725463867, 2.293046712875366, -0.1476268172264099,
                                                        -8.069948196411133, -7.015933513641357, 0.41293907165527344,
                                                        1.8617180585861206, -2.517158031463623], rtol=1e-5)


def test_fractional_max_pool_windows_follow_pytorchs_samples():
    """Given the same random samples, the windows (and so the indices) are PyTorch's."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    s = rng.random((2, 3, 2)).astype(np.float32)
    x3 = rng.standard_normal((1, 2, 6, 5, 7)).astype(np.float32)
    s3 = rng.random((1, 2, 3)).astype(np.float32)
    v, i = F.fractional_max_pool2d(torch.tensor(x), (3, 2), output_size=(4, 3), return_indices=True,
                                   _random_samples=torch.tensor(s))
    assert i.flatten().tolist()[:20] == [7, 10, 5, 14, 30, 26, 35, 45, 41, 56, 45, 47, 14, 10, 5, 14, 16, 27, 42, 45]
    assert np.array_equal(v.numpy(), np.take_along_axis(x.reshape(2, 3, -1), i.numpy().reshape(2, 3, -1), 2)
                          .reshape(2, 3, 4, 3))
    v, i = F.fractional_max_pool3d(torch.tensor(x3), 2, output_size=(3, 2, 3), return_indices=True,
                                   _random_samples=torch.tensor(s3))
    assert i.flatten().tolist()[:20] == [8, 2, 47, 28, 30, 61, 71, 80, 82, 127, 135, 103, 183, 184, 180, 162, 205,
                                         208, 43, 10]


def test_conv_transpose3d_matches_pytorch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3, 4, 3)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 3, 2)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    y = F.conv_transpose3d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=(2, 1, 2), padding=(0, 1, 1),
                           output_padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)
    assert tuple(y.shape) == (2, 6, 7, 6, 5)
    np.testing.assert_allclose(y.flatten()[::41].numpy()[:8], [0.4031921625137329, 0.1543217897415161,
                                                            0.0969994068145752, -1.4386252164840698,
                                                            -1.280277132987976, -1.3290657997131348,
                                                            1.6669225692749023, 0.9450400471687317], rtol=1e-5)


def test_grid_sample_matches_pytorch_values_and_grid_gradients():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    g = rng.uniform(-1.6, 1.6, (2, 3, 2, 2)).astype(np.float32)
    x3 = rng.standard_normal((1, 2, 3, 4, 5)).astype(np.float32)
    g3 = rng.uniform(-1.3, 1.3, (1, 2, 2, 3, 3)).astype(np.float32)
    gt = torch.tensor(g, requires_grad=True)
    y = F.grid_sample(torch.tensor(x), gt, mode="bilinear", padding_mode="reflection", align_corners=False)
    y.sum().backward()
    np.testing.assert_allclose(y.detach().flatten()[::5].numpy(), [
        -0.09377579391002655, -1.0734020471572876, 0.42007991671562195, -0.22609193623065948, 0.1163448914885521,
        0.7614758610725403, 0.5196719765663147, 1.1582927703857422], rtol=1e-5)
    np.testing.assert_allclose(gt.grad.flatten()[:6].numpy(), [7.150895595550537, -0.7472891807556152,
                                                             -7.831892013549805, -0.10685396194458008,
                                                             14.866353034973145, -7.13966703414917], rtol=1e-5)
    near = F.grid_sample(torch.tensor(x), torch.tensor(g), mode="nearest", padding_mode="border", align_corners=True)
    assert near.flatten()[::5].tolist() == [np.float32(v) for v in (
        0.5105466842651367, -1.64139723777771, 0.21017292141914368, 0.1694164276123047, -0.01961335353553295,
        -1.0318629741668701, 0.36591795086860657, 1.3472706079483032)]
    tri = F.grid_sample(torch.tensor(x3), torch.tensor(g3), mode="bilinear", padding_mode="zeros", align_corners=True)
    np.testing.assert_allclose(tri.flatten()[::4].numpy(), [-0.6500120162963867, 0.31833627820014954,
                                                           0.08216612786054611, 0.0756315067410469,
                                                           -0.7536041736602783, 0.36784547567367554], rtol=1e-5)


def test_new_layers_call_their_functional_with_their_settings():
    nn = torch.nn
    x = torch.tensor(np.arange(16, dtype=np.float32).reshape(1, 2, 8) % 5)
    assert nn.MaxPool1d(2)(x).tolist() == F.max_pool1d(x, 2).tolist()
    assert nn.ConstantPad2d((1, 2, 0, 1), 3.5)(torch.zeros(1, 2, 2)).tolist() == [
        [[3.5, 0, 0, 3.5, 3.5], [3.5, 0, 0, 3.5, 3.5], [3.5, 3.5, 3.5, 3.5, 3.5]]]
    assert nn.ReflectionPad1d(2)(x).tolist() == F.pad(x, (2, 2), mode="reflect").tolist()
    assert repr(nn.Softshrink(0.25)) == "Softshrink(lambd=0.25)"
    assert nn.HuberLoss(delta=0.5)(x, x * 0).item() == F.huber_loss(x, x * 0, delta=0.5).item()
    drop = nn.AlphaDropout(0.3)
    drop.eval()
    assert drop(x) is x
    conv = nn.Conv3d(3, 4, 2, bias=False)
    assert sorted(conv.state_dict()) == ["weight"] and tuple(conv.weight.shape) == (4, 3, 2, 2, 2)
    assert tuple(nn.Bilinear(3, 4, 5)(torch.zeros(2, 3), torch.zeros(2, 4)).shape) == (2, 5)
    pooled, idx = nn.MaxPool2d(2, return_indices=True)(torch.tensor([[[[1.0, 2], [4, 3]]]]))
    assert nn.MaxUnpool2d(2)(pooled, idx).tolist() == [[[[0.0, 0], [4, 0]]]]


def test_cpu_autocast_gives_pytorchs_dtypes():
    """CPU PyTorch 2.13 under torch.autocast('cpu') with bfloat16 inputs: the losses, cdist and the 3-d pools are on
    its float32 list (composed functions cast once), cosine_similarity, dist and softmin are not."""
    x, y = torch.rand(2, 6, 4, 4).bfloat16(), torch.rand(2, 6, 4, 4).bfloat16()
    with torch.autocast("cpu"):
        assert F.kl_div(x, y, reduction="batchmean").dtype == torch.float32
        assert F.huber_loss(x, y).dtype == torch.float32
        assert torch.cdist(x, y).dtype == torch.float32
        assert F.max_pool3d(x, 2).dtype == torch.float32
        assert F.cosine_similarity(x, y).dtype == torch.bfloat16
        assert torch.dist(x, y).dtype == torch.bfloat16
        assert F.softmin(x, 1).dtype == torch.bfloat16


def test_ctc_loss_and_its_gradient_through_log_softmax_match_pytorch():
    """The op's gradient is the derivative; PyTorch's adds exp(log_probs), which log_softmax's backward cancels, so
    the gradient of the logits is PyTorch's."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 3, 5)).astype(np.float32)
    targets = torch.tensor(np.array([[1, 2, 2], [3, 0, 0], [4, 1, 0]]))
    logits = torch.tensor(x, requires_grad=True)
    lsm = F.log_softmax(logits, 2)
    loss = F.ctc_loss(lsm, targets, [6, 5, 4], [3, 1, 2])
    loss.backward()
    np.testing.assert_allclose(loss.item(), 3.5830681324005127, rtol=1e-6)
    np.testing.assert_allclose(logits.grad.flatten()[::7].numpy(), [
        -0.04976813867688179, 0.016194751486182213, -0.09960995614528656, 0.11086554080247879, 0.0139645179733634,
        -0.060090236365795135, 0.0032059221994131804, 0.022752806544303894, -0.12417372316122055,
        0.010377911850810051, 0.0, -0.08888180553913116, 0.0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(F.ctc_loss(lsm, targets, [6, 5, 4], [3, 1, 2], reduction="none").tolist(),
                               [9.107738494873047, 5.861078262329102, 3.70442795753479], rtol=1e-6)

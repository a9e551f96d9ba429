"""minifp.torch.nn: Module bookkeeping, state dicts, casting, layers' PyTorch rules, autocast numerics, init, clipping."""
import math
from collections import OrderedDict

import numpy as np
import pytest

import minifp.torch as torch
from minifp.torch import nn
from minifp.torch.nn import functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 5 * 5, 2))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)

    def forward(self, x):
        return self.head(F.relu(self.bn(self.conv(x))))


def test_state_dict_keys_order_and_types():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                        "bn.num_batches_tracked", "head.1.weight", "head.1.bias"]
    assert sd["bn.num_batches_tracked"].dtype == torch.int64
    assert not sd["conv.weight"].requires_grad and type(sd["conv.weight"]) is torch.Tensor
    assert [n for n, _ in net.named_parameters()] == ["conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                                      "head.1.weight", "head.1.bias"]
    assert [n for n, _ in net.named_buffers()] == ["scratch", "bn.running_mean", "bn.running_var",
                                                   "bn.num_batches_tracked"]       # this module's own first
    assert [n for n, _ in net.named_modules()] == ["", "conv", "bn", "head", "head.0", "head.1"]
    assert [n for n, _ in net.named_children()] == ["conv", "bn", "head"]
    assert net.head[1].weight.shape == (2, 100) and net.conv.weight.shape == (4, 3, 3, 3)


def test_load_state_dict_checks_everything_first_with_pytorchs_text():
    net, other = Net(), Net()
    before = net.conv.weight.float32().copy()
    sd = other.state_dict()
    del sd["conv.bias"]
    sd["extra"] = torch.zeros(1)
    sd["bn.weight"] = torch.zeros(5)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == (
        'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "conv.bias". \n\t'
        'Unexpected key(s) in state_dict: "extra". \n\tsize mismatch for bn.weight: copying a param with shape '
        'torch.Size([5]) from checkpoint, the shape in current model is torch.Size([4]).')
    assert np.array_equal(net.conv.weight.float32(), before)        # nothing changed
    sd["bn.weight"] = torch.ones(4)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["conv.bias"] and result.unexpected_keys == ["extra"]
    assert np.array_equal(net.conv.weight.float32(), other.conv.weight.float32())
    assert repr(net.load_state_dict(other.state_dict())) == "<All keys matched successfully>"
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])


def test_load_state_dict_takes_numpy_and_fills_an_old_batchnorm_counter():
    net = Net()
    arrays = {k: v.numpy() for k, v in Net().state_dict().items() if k != "bn.num_batches_tracked"}
    net.bn.num_batches_tracked.assign(np.array(7))
    net.load_state_dict(arrays)
    assert net.bn.num_batches_tracked.item() == 0
    assert np.array_equal(net.conv.weight.detach().numpy(), arrays["conv.weight"])


def test_casting_is_in_place_and_skips_integer_buffers():
    net = Net()
    w = net.conv.weight
    x = torch.randn(2, 3, 5, 5)
    net(x).sum().backward()
    assert net.half() is net
    assert net.conv.weight is w and w.dtype == torch.float16 and w.grad.dtype == torch.float16
    assert net.bn.running_mean.dtype == torch.float16 and net.bn.num_batches_tracked.dtype == torch.int64
    assert net(x.half()).dtype == torch.float16
    net.to(torch.bfloat16)
    assert w.dtype == torch.bfloat16
    net.float()
    assert w.dtype == torch.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got "
                                        "desired dtype=torch.int64"):
        net.to(torch.int64)
    net.to("cuda")
    assert w.device == "cuda" and net.bn.num_batches_tracked.device == "cuda"


def test_registration_modes_grads_and_repr():
    net = Net()
    assert all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.train()
    net(torch.randn(2, 3, 5, 5)).sum().backward()
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    with pytest.raises(TypeError, match="cannot assign 'torch.Tensor' as parameter 'weight'"):
        net.conv.weight = torch.zeros(4, 3, 3, 3)
    y = net.conv.weight * 2
    assert type(y) is torch.Tensor          # ops on parameters give tensors, as PyTorch's
    assert repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU())) == (
        "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()\n)")
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen[0] == "Conv2d"


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    seq.append(nn.Linear(2, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and isinstance(seq[:2], nn.Sequential)
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.append(nn.Linear(1, 2))
    assert len(ml) == 2 and len(list(ml.parameters())) == 4
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md and list(md.state_dict()) == ["a.weight", "a.bias"]
    named = nn.Sequential(OrderedDict(fc=nn.Linear(1, 1)))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"]


def test_linear_init_bounds_and_module_shapes():
    torch.manual_seed(0)
    lin = nn.Linear(400, 3)
    assert np.abs(lin.weight.float32()).max() <= 1 / 20 and np.abs(lin.bias.float32()).max() <= 1 / 20
    assert np.abs(lin.weight.float32()).max() > 0.045
    mha = nn.MultiheadAttention(8, 2)
    assert list(mha.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert mha.in_proj_weight.shape == (24, 8) and np.all(mha.in_proj_bias.float32() == 0)
    emb = nn.Embedding(5, 3, padding_idx=-1)
    assert emb.padding_idx == 4 and np.all(emb.weight.float32()[4] == 0)
    assert list(nn.LayerNorm([2, 3]).state_dict()) == ["weight", "bias"]
    assert nn.GroupNorm(2, 4).weight.shape == (4,)


def test_layers_pytorch_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.BatchNorm2d(3)(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(torch.zeros(1, 3))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        nn.Linear(4, 5)(torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match="expected input.* to have 3 channels, but got 2 channels instead"):
        nn.Conv2d(3, 4, 3)(torch.zeros(1, 2, 5, 5))
    with pytest.raises(IndexError, match="index out of range in self"):
        nn.Embedding(3, 2)(torch.tensor([3]))
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        nn.MaxPool2d(2, padding=2)(torch.zeros(1, 1, 4, 4))


def _engine_autocast(fmt, device):
    """The engine's own autocast, with no face: products in fmt, the rest by promotion."""
    from minifp.engine import Autocast, autocast_scope
    return autocast_scope(Autocast(fmt, frozenset({"matmul", "linear", "conv2d"}), frozenset(), device))


def test_linear_adds_its_bias_before_the_one_rounding_under_autocast():
    lin = nn.Linear(1, 1).cuda()
    lin.weight.assign(np.array([[60000.0]]))
    lin.bias.assign(np.array([10000.0]))
    x = torch.ones(1, 1, device="cuda")
    with torch.autocast("cuda", dtype=torch.float16):
        y = lin(x)
    assert y.dtype == torch.float16 and math.isinf(y.item())
    import minifp
    with _engine_autocast(minifp.float16, "cuda"):
        assert math.isinf(lin(x).item())
    assert lin(x).item() == 70000.0             # float32 outside autocast


def test_conv_bias_fused_and_outputs_lower_precision_under_autocast():
    conv = nn.Conv2d(1, 1, 1).cuda()
    conv.weight.assign(np.full((1, 1, 1, 1), 60000.0))
    conv.bias.assign(np.array([10000.0]))
    with torch.autocast("cuda", dtype=torch.float16):
        y = conv(torch.ones(1, 1, 2, 2, device="cuda"))
        ln = nn.LayerNorm(2).cuda()(torch.ones(2, 2, device="cuda").half())
    assert y.dtype == torch.float16 and np.all(np.isinf(y.float32()))
    assert ln.dtype == torch.float32                # layer_norm is in CUDA's float32 list
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = nn.LayerNorm(2)(nn.Linear(2, 2)(torch.ones(2, 2)))
    assert z.dtype == torch.bfloat16                # CPU runs layer_norm in its input's dtype


def test_norms_and_losses_round_once():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]]).half()
    ln = F.layer_norm(x, (4,))
    expected = (np.array([1, 2, 3, 4.0]) - 2.5) / np.sqrt(1.25 + 1e-5)
    assert ln.dtype == torch.float16 and np.array_equal(ln.numpy()[0], expected.astype(np.float16))
    bce = F.binary_cross_entropy_with_logits(torch.tensor([100.0]), torch.tensor([0.0]))
    assert bce.item() == 100.0


def test_dropout_scales_survivors_and_is_identity_in_eval():
    torch.manual_seed(1)
    d = nn.Dropout(0.25)
    y = d(torch.ones(1000))
    kept = y.float32()[y.float32() != 0]
    assert np.all(kept == np.float32(1 / 0.75)) and 650 < kept.size < 850
    assert d.eval()(torch.ones(3)).float32().tolist() == [1.0, 1.0, 1.0]
    assert np.all(F.dropout(torch.ones(4), 1.0).float32() == 0)


def test_init_fans_and_gains():
    w = torch.empty(64, 32, 3, 3)
    fan_in, fan_out = nn.init._calculate_fan_in_and_fan_out(w)
    assert (fan_in, fan_out) == (32 * 9, 64 * 9)
    nn.init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu")
    bound = math.sqrt(3) * math.sqrt(2) / math.sqrt(64 * 9)
    assert np.abs(w.float32()).max() <= bound and np.abs(w.float32()).max() > 0.95 * bound
    assert nn.init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert nn.init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        nn.init.calculate_gain("foo")
    t = nn.init.trunc_normal_(torch.empty(1000), std=3.0, a=-1.0, b=1.0)
    assert np.abs(t.float32()).max() <= 1.0
    assert np.all(nn.init.constant_(torch.empty(3), 0.5).float32() == 0.5)


def test_clip_grad_norm_and_value():
    a, b = nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(1))
    a.grad, b.grad = torch.tensor([3.0, 0.0]), torch.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == 5.0 and total.dim() == 0
    coef = np.float32(1) / (np.float32(5) + np.float32(1e-6))
    assert a.grad.float32().tolist() == [np.float32(3) * coef, 0.0]
    b.grad = torch.tensor([np.inf])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        nn.utils.clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
    b.grad = torch.tensor([-9.0])
    nn.utils.clip_grad_value_([a, b], 0.5)
    assert b.grad.item() == -0.5
    with pytest.warns(UserWarning, match="empty generator"):
        assert nn.utils.clip_grad_norm_([], 1.0).item() == 0.0


def test_modules_train_a_step():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding="same"), nn.GroupNorm(2, 4), nn.GELU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(16, 3))
    x, t = torch.randn(5, 1, 4, 4), torch.tensor([0, 1, 2, 1, 0])
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    first = loss_fn(net(x), t)
    for _ in range(30):
        net.zero_grad()
        loss = loss_fn(net(x), t)
        loss.backward()
        with torch.no_grad():
            for p in net.parameters():
                p.assign(p.float32() - 0.1 * p.grad.float32())
    assert loss.item() < first.item()


def test_deepcopy_of_a_model_with_gradients():
    """copy.deepcopy after a backward (a best-model snapshot): PyTorch copies the gradients too, each its own."""
    import copy
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    m(torch.randn(5, 3)).sum().backward()
    m2 = copy.deepcopy(m)
    for a, b in zip(m.parameters(), m2.parameters()):
        assert type(b) is type(a) and b.requires_grad and b.grad is not a.grad
        assert np.array_equal(a.grad.numpy(), b.grad.numpy()) and np.array_equal(a.detach().numpy(), b.detach().numpy())
    with torch.no_grad():
        m2[0].weight.grad.add_(1.0)
    assert not np.array_equal(m[0].weight.grad.numpy(), m2[0].weight.grad.numpy())

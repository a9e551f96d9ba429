"""Record what PyTorch raises for bad input that training scripts commonly hit (shapes that do not broadcast or
multiply, cat and stack, in-place results of another shape, gradients of the wrong shape, scalars of many
elements, negative sizes, pooling strides, dropout probabilities, recurrent layers' initial states, indices out of range, Python numbers out of an integer dtype's
range), into tests/fixtures/pytorch/errors_more.json:
{snippet: [exception type, first line of its message] or ["ok", null]}. tests/torch/test_errors_fixtures.py runs
the same snippets through minifp.torch.

Run by hand with a real PyTorch (not the project's environment): python tools/record_torch_errors.py
"""
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "errors_more.json"

# A custom autograd function some snippets build on
FN = ("class Scale(torch.autograd.Function):\n @staticmethod\n def forward(ctx, a, k=2.0):\n"
      "  ctx.save_for_backward(a); ctx.k = k; return a * k\n"
      " @staticmethod\n def backward(ctx, g):\n  a, = ctx.saved_tensors; return g * ctx.k, None\n")

# Every snippet sees torch, nn, F, x = zeros(2, 3), p = zeros(2, requires_grad=True), Z = torch.zeros.
CASES = [
    # broadcasting
    "x + Z(3, 2)", "x * Z(4)", "Z(2, 1, 3) - Z(4, 2)", "torch.where(x > 0, x, Z(4))",
    "x.masked_fill(Z(3, 2, dtype=torch.bool), 0)", "torch.normal(Z(2), torch.ones(3))",
    "F.cosine_similarity(Z(2, 3), Z(2, 4))",
    "F.mse_loss(Z(2, 3), Z(2, 4))", "x.masked_select(Z(3, 2, dtype=torch.bool))",
    "torch.maximum(x, Z(3))",
    # products
    "Z(2, 3) @ Z(2, 3)", "torch.mm(Z(2, 3), Z(4, 5))", "Z(2, 3) @ Z(4)", "Z(3) @ Z(4, 5)", "Z(3) @ Z(4)",
    "torch.matmul(torch.tensor(1.), Z(3))", "Z(2, 3, 4) @ Z(3, 5, 6)",
    "Z(2, 3, 4) @ Z(2, 5, 6)", "Z(2, 3, 4) @ Z(5, 6)",
    "Z(3, 4) @ Z(2, 5, 6)", "Z(2, 2, 3, 4) @ Z(5, 4, 2)", "Z(2, 3, 4) @ Z(5)", "Z(5) @ Z(2, 4, 3)",
    "torch.bmm(Z(2, 3, 4), Z(3, 4, 5))", "torch.bmm(Z(2, 3, 4), Z(2, 5, 6))", "torch.bmm(Z(3, 4), Z(4, 5))",
    "torch.mm(Z(2, 3, 4), Z(4, 5))", "torch.mv(Z(2, 3), Z(2))", "torch.dot(Z(3), Z(4))", "x.mm(Z(2, 3))",
    "F.linear(Z(2, 3), Z(4, 5))", "nn.Linear(3, 2)(torch.tensor(1.))",
    # cat and stack
    "torch.cat([Z(2, 3), Z(2, 4)])", "torch.cat([Z(2, 3), Z(3, 3)], dim=1)", "torch.cat([Z(2, 3), Z(3)])",
    "torch.cat([x, 1])", "torch.cat(x)", "torch.cat([])", "torch.cat([torch.tensor(1.), torch.tensor(2.)])",
    "torch.cat([Z(0), Z(2, 3)]).shape", "torch.stack([Z(2), Z(3)])", "torch.stack([Z(2, 3), Z(2, 3), Z(3, 3)])",
    "torch.stack(x)", "torch.stack([])", "torch.hstack([Z(2, 3), Z(3, 3)])", "torch.vstack([Z(2, 3), Z(2, 4)])",
    # in place
    "y = Z(3); y += Z(2, 3)", "Z(3).add_(Z(2, 3))", "Z(3).mul_(Z(2, 1))", "Z(3).clamp_(Z(2, 3))",
    "Z(3).masked_fill_(Z(2, 3, dtype=torch.bool), 1)",
    # gradients
    "torch.autograd.grad(p * 2, p)", "(p * 2).backward()", "(p * 2).backward(torch.ones(3))",
    "(p * 2).sum().backward(gradient=torch.ones(2))", "torch.autograd.grad(p * 2, p, grad_outputs=torch.ones(3))",
    "(p * 2).sum().backward(inputs=[])", "q = torch.ones(2, requires_grad=True); (p * q).sum().backward(inputs=[p]); "
    "assert q.grad is None and p.grad.tolist() == [1.0, 1.0]", "Z(2).retain_grad()",
    "w = nn.Parameter(Z(2)); w.grad = Z(3)", "w = nn.Parameter(Z(2)); w.grad = Z(2, dtype=torch.float16)",
    "w = nn.Parameter(Z(2)); w.grad = 5",
    # scalars
    "int(Z(2))", "float(Z(2))", "bool(Z(2))", "bool(Z(0))", "Z(2).item()", "iter(torch.tensor(1.))",
    "len(torch.tensor(1.))",
    # sizes, layers
    "torch.zeros(2, -1)", "torch.ones(2, -1)", "torch.empty(2, -3)", "torch.randn(-2)", "torch.rand(2, -1)",
    "torch.full((2, -1), 1.0)", "torch.randint(0, 3, (2, -1))", "x.new_zeros(-1)", "x.flatten(1, 0)",
    "nn.Dropout2d(2.0)", "nn.Dropout1d(-0.1)", "nn.AlphaDropout(1.5)", "nn.Dropout(1.5)",
    "nn.MaxPool2d(0)(Z(1, 1, 4, 4))",
    "nn.AvgPool2d(2, stride=0)(Z(1, 1, 4, 4))", "nn.MaxPool2d(2, stride=-1)(Z(1, 1, 4, 4))",
    "nn.MaxPool2d(5)(Z(1, 1, 4, 4))",
    # threads
    "torch.set_num_threads(0)", "torch.set_num_threads(2.0)", "torch.set_num_threads(True)",
    # what older scripts call
    "assert x.type() == 'torch.FloatTensor' and x.type(torch.int64).type() == 'torch.LongTensor'", "x.type('foo')",
    "assert x.type('torch.HalfTensor').dtype == torch.float16", "assert x.mm(Z(3, 2)).shape == (2, 2)",
    "e = nn.Embedding.from_pretrained(torch.tensor([[1., 2.], [3., 4.]])); "
    "assert not e.weight.requires_grad and e(torch.tensor([1])).tolist() == [[3.0, 4.0]]",
    "nn.Embedding.from_pretrained(Z(3))", "w = torch.empty(3, 5); nn.init.orthogonal_(w); "
    "assert torch.allclose(w @ w.T, torch.eye(3), atol=1e-5)", "nn.init.orthogonal_(Z(3))",
    "nn.init.normal_(Z(3), std=-1)",
    # targets, conditions, attention inputs
    "F.cross_entropy(Z(4, 3), torch.tensor([0., 1., 2., 1.]))",
    "F.cross_entropy(Z(4, 3), torch.tensor([0, 1, 2, 1]).int())",
    "assert abs(F.cross_entropy(Z(4, 3), torch.tensor([0, 1, 2, 1]).to(torch.uint8)).item() - 1.0986) < 1e-4",
    "F.cross_entropy(Z(4, 3), Z(4, 3, dtype=torch.long))", "F.cross_entropy(Z(4, 3), Z(4, 2))",
    "F.cross_entropy(Z(4, 3), Z(4, 1, dtype=torch.long))", "F.cross_entropy(Z(4, 3), Z(5, dtype=torch.long))",
    "F.cross_entropy(Z(4, 3), torch.tensor([0, 1, 3, 1]))", "F.nll_loss(Z(4, 3), Z(4, dtype=torch.float16))",
    "F.cross_entropy(Z(2, 3, 4, 4), Z(2, 4, 5, dtype=torch.long))", "F.cross_entropy(Z(2, 3, 4, 4), Z(2, 4, 4))",
    "F.cross_entropy(Z(2, 3, 4), Z(2, 5, dtype=torch.long))", "F.cross_entropy(Z(3), torch.tensor(1.))",
    "torch.where(Z(2, 3), Z(2, 3), Z(2, 3))", "torch.where(Z(2, 3, dtype=torch.long), Z(2, 3), Z(2, 3))",
    "assert [t.tolist() for t in torch.where(torch.tensor([[0., 1.], [2., 0.]]))] == [[0, 1], [1, 0]]",
    "nn.MultiheadAttention(8, 2)(Z(3, 1, 6), Z(3, 1, 6), Z(3, 1, 6))",
    "nn.MultiheadAttention(8, 2, batch_first=True)(Z(2, 3, 8), Z(2, 4, 8), Z(2, 5, 8))",
    "nn.MultiheadAttention(8, 2, kdim=4)(Z(3, 1, 8), Z(3, 1, 8), Z(3, 1, 8))",
    "nn.MultiheadAttention(8, 2)(Z(3, 8), Z(3, 1, 8), Z(3, 1, 8))",
    "nn.MultiheadAttention(8, 2)(Z(1, 3, 1, 8), Z(3, 1, 8), Z(3, 1, 8))",
    "nn.MultiheadAttention(8, 2, kdim=4, vdim=6)(Z(3, 1, 8), Z(5, 1, 4), Z(4, 1, 6))",
    # backward(inputs=), cat's empty tensors, more targets
    "p.grad = None; (p * 2).sum().backward(inputs=[p, p]); assert p.grad.tolist() == [2.0, 2.0]",
    "(p * Z(2)).sum().backward(inputs=[Z(2)])", "q = torch.ones(2, requires_grad=True); (p * 2).sum().backward("
    "inputs=[q]); assert q.grad is None", "h = p * 2; (h * 3).sum().backward(inputs=[h]); "
    "assert h.grad.tolist() == [3.0, 3.0] and p.grad is None",
    "l = p.exp().sum(); l.backward(inputs=[p]); l.backward(inputs=[p])",
    "assert torch.cat([Z(0), torch.ones(2, 3, dtype=torch.long)]).dtype == torch.float32",
    "assert torch.cat([Z(0), Z(0)], dim=1).shape == (0,)",
    "a = torch.zeros(0, requires_grad=True); torch.cat([a, torch.ones(2, 3)]).sum().backward(); "
    "assert a.grad.shape == (0,)",
    "F.cross_entropy(Z(2, 3, 4), Z(2, 4, dtype=torch.uint8))",
    "F.cross_entropy(Z(2, 3, 4, 4), Z(2, 4, 4, dtype=torch.uint8))",
    "F.cross_entropy(Z(3), torch.tensor([1, 2]))", "F.cross_entropy(Z(2, 3, 4, 4), Z(2, 4, dtype=torch.long))",
    # the memory keywords scripts pass
    "assert torch.zeros(2, layout=torch.strided, pin_memory=False).tolist() == [0.0, 0.0]",
    "assert x.clone(memory_format=torch.contiguous_format).shape == (2, 3)",
    "assert torch.ones_like(x, memory_format=torch.preserve_format).shape == (2, 3)",
    # recurrent layers' initial states, as their forward reads them (hx[0], hx[1] for an LSTM)
    "nn.LSTM(4, 8)(Z(5, 1, 4), Z(1, 1, 8))", "nn.LSTM(4, 8)(Z(5, 1, 4), Z(2, 1, 8))",
    "nn.LSTM(4, 8)(Z(5, 1, 4), (Z(1, 1, 8),))",
    "assert nn.LSTM(4, 8)(Z(5, 1, 4), [Z(1, 1, 8), Z(1, 1, 8)])[1][1].shape == (1, 1, 8)",
    "nn.LSTM(4, 8)(Z(5, 1, 4), (Z(1, 8), Z(1, 8)))", "nn.LSTM(4, 8)(Z(5, 4), (Z(1, 1, 8), Z(1, 1, 8)))",
    "nn.LSTM(4, 8)(Z(5, 1, 4), (Z(2, 1, 8), Z(1, 1, 8)))", "nn.LSTM(4, 8)(Z(5, 1, 4), (Z(1, 1, 8), Z(1, 2, 8)))",
    "nn.LSTM(4, 8, proj_size=3)(Z(5, 1, 4), (Z(1, 1, 8), Z(1, 1, 8)))",
    "assert nn.LSTM(4, 8)(Z(5, 4), (Z(1, 8), Z(1, 8)))[1][0].shape == (1, 8)",
    "nn.GRU(4, 8)(Z(5, 1, 4), Z(2, 1, 8))", "nn.GRU(4, 8)(Z(5, 1, 4), Z(1, 8))", "nn.RNN(4, 8)(Z(5, 4), Z(1, 1, 8))",
    "nn.GRU(4, 8)(Z(5, 1, 4), (Z(1, 1, 8),))",
    # indices out of range
    "x[5]", "x[:, 7]", "x[-3]", "x[torch.tensor([0, 4])]", "x[1, 2, 3]", "x[2] = 1.0",
    # Python numbers out of an integer dtype's range; x.new_*'s keywords
    "torch.tensor(300, dtype=torch.uint8)", "torch.tensor([255, 256.0], dtype=torch.uint8)",
    "torch.tensor(-0.5, dtype=torch.uint8)", "torch.tensor([-129], dtype=torch.int8)",
    "torch.tensor(float('nan'), dtype=torch.int32)", "torch.tensor([1e10], dtype=torch.int32)",
    "assert torch.tensor([1.7, -2.5], dtype=torch.int64).tolist() == [1, -2]",
    "assert torch.tensor([True, 2], dtype=torch.bool).tolist() == [True, True]",
    "assert x.new_zeros(2, pin_memory=False).tolist() == [0.0, 0.0]",
    "assert x.new_ones((2,), layout=torch.strided, requires_grad=True).requires_grad",
    "assert x.new_full((2,), 3., pin_memory=False).tolist() == [3.0, 3.0]",
    "assert x.new_empty(2, dtype=torch.int64).dtype == torch.int64", "x.new_tensor([1, 2], pin_memory=False)",
    # legacy constructors and tensor types
    "assert torch.Tensor(2, 3).shape == (2, 3) and torch.Tensor(2, 3).dtype == torch.float32",
    "assert torch.Tensor([1, 2]).tolist() == [1.0, 2.0] and torch.Tensor().shape == (0,)",
    "assert torch.Tensor(torch.Size([2, 1])).shape == (2, 1)", "assert torch.LongTensor([1.7, 2]).tolist() == [1, 2]",
    "assert isinstance(x, torch.FloatTensor) and not isinstance(x, torch.LongTensor)",
    "assert x.type(torch.LongTensor).dtype == torch.int64", "torch.Tensor(2.5)", "torch.FloatTensor(torch.tensor([1, 2]))",
    "assert torch.Tensor(torch.tensor([1, 2])).dtype == torch.int64",
    "assert repr(torch.cuda.HalfTensor) == \"<class 'torch.cuda.HalfTensor'>\"",
    "assert torch.BoolTensor([1, 0]).tolist() == [True, False] and torch.ByteTensor([1]).dtype == torch.uint8",
    # PyTorch's import paths; parameter containers; a replaced parameter or layer keeps its place
    "m = __import__('importlib').import_module(torch.__name__ + '.nn.modules.batchnorm'); "
    "assert isinstance(nn.BatchNorm2d(3), m._BatchNorm)",
    "m = __import__('importlib').import_module(torch.__name__ + '.nn.modules.loss'); "
    "assert issubclass(nn.MSELoss, m._Loss) and m.CrossEntropyLoss is nn.CrossEntropyLoss",
    "m = __import__('importlib').import_module(torch.__name__ + '.nn.modules.utils'); assert m._pair(3) == (3, 3)",
    "m = __import__('importlib').import_module(torch.__name__ + '.nn.modules.conv'); "
    "assert isinstance(nn.Conv1d(1, 1, 1), m._ConvNd)",
    "m = __import__('importlib').import_module(torch.__name__ + '.nn.modules.module'); assert m.Module is nn.Module",
    "m = __import__('importlib').import_module(torch.__name__ + '.nn.parameter'); assert m.Parameter is nn.Parameter",
    "m = __import__('importlib').import_module(torch.__name__ + '.optim.optimizer'); "
    "assert m.Optimizer is torch.optim.Optimizer",
    "pl = nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(3)]); pl.append(torch.ones(4)); "
    "assert len(pl) == 3 and [n for n, _ in pl.named_parameters()] == ['0', '1', '2'] and "
    "type(pl[1]) is nn.Parameter and pl[-1].shape == (4,)",
    "pd = nn.ParameterDict({'a': torch.ones(2), 'b': nn.Parameter(torch.zeros(1))}); "
    "assert list(pd) == ['a', 'b'] and [n for n, _ in pd.named_parameters()] == ['a', 'b'] and 'a' in pd",
    "l = nn.Linear(2, 3); l.weight = nn.Parameter(torch.zeros(3, 2)); "
    "assert [n for n, _ in l.named_parameters()] == ['weight', 'bias']",
    "s = nn.Sequential(nn.Linear(1, 1), nn.ReLU()); s[0] = nn.Linear(1, 2); "
    "assert list(s.state_dict()) == ['0.weight', '0.bias']",
    "pl = nn.ParameterList([nn.Parameter(torch.ones(1))]); pl[3]",
    # nn.utils.rnn
    "p = nn.utils.rnn.pad_sequence([torch.ones(2, 3), Z(4, 3)]); assert p.shape == (4, 2, 3) and p[3, 0, 0] == 0",
    "p = nn.utils.rnn.pad_sequence([torch.tensor([1, 2]), torch.tensor([3])], batch_first=True, padding_value=-1, "
    "padding_side='left'); assert p.tolist() == [[1, 2], [-1, 3]] and p.dtype == torch.int64",
    "nn.utils.rnn.pad_sequence([])", "nn.utils.rnn.pad_sequence([torch.ones(2, 3), torch.ones(2, 4)])",
    "nn.utils.rnn.pad_sequence([x], padding_side='middle')",
    "s = nn.utils.rnn.unpad_sequence(nn.utils.rnn.pad_sequence([torch.ones(2), Z(3)]), torch.tensor([2, 3])); "
    "assert [t.shape[0] for t in s] == [2, 3]",
    # tensor hooks and retain_grad
    "w = torch.ones(3, requires_grad=True); h = w.register_hook(lambda g: g * 10); (w * 2).sum().backward(); "
    "assert w.grad.tolist() == [20.0] * 3; h.remove(); w.grad = None; (w * 2).sum().backward(); "
    "assert w.grad.tolist() == [2.0] * 3",
    "w = torch.ones(2, requires_grad=True); y = w * 3; y.retain_grad(); (y * y).sum().backward(); "
    "assert y.grad.tolist() == [6.0, 6.0] and y.retains_grad and not w.retains_grad",
    "w = torch.ones(2, requires_grad=True); y = w * 3; y.register_hook(lambda g: g + 1); y.retain_grad(); "
    "y.register_hook(lambda g: g * 2); y.sum().backward(); assert y.grad.tolist() == [4.0, 4.0]",
    "w = torch.ones(2, requires_grad=True); y = w * 3; y.retain_grad(); y.sum().backward(retain_graph=True); "
    "y.sum().backward(); assert y.grad.tolist() == [2.0, 2.0] and w.grad.tolist() == [6.0, 6.0]",
    "Z(2).register_hook(lambda g: g)",
    "w = torch.ones(2, requires_grad=True); y = w * 2; y.register_hook(lambda g: torch.ones(3)); y.sum().backward()",
    # module hooks
    "m = nn.Linear(3, 2); seen = []; h = m.register_forward_hook(lambda mod, i, o: seen.append(tuple(o.shape))); "
    "m(Z(4, 3)); h.remove(); m(Z(4, 3)); assert seen == [(4, 2)]",
    "m = nn.Linear(3, 2); m.register_forward_hook(lambda mod, i, o: o * 0); assert m(torch.ones(1, 3)).tolist() == "
    "[[0.0, 0.0]]",
    "m = nn.Identity(); m.register_forward_pre_hook(lambda mod, a: a[0] * 2); assert m(torch.ones(2)).tolist() == "
    "[2.0, 2.0]",
    "m = nn.Identity(); m.register_forward_pre_hook(lambda mod, a, k: ((a[0] + 1,), k), with_kwargs=True); "
    "assert m(torch.ones(2)).tolist() == [2.0, 2.0]",
    "m = nn.Linear(2, 2); nn.init.ones_(m.weight); nn.init.zeros_(m.bias); seen = []; "
    "m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi[0].tolist(), go[0].tolist()))); "
    "m(torch.ones(1, 2, requires_grad=True)).sum().backward(); assert seen == [([[2.0, 2.0]], [[1.0, 1.0]])]",
    "m = nn.Linear(2, 2); seen = []; m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi)); "
    "m(torch.ones(1, 2)).sum().backward(); assert seen == [(None,)]",
    "a = torch.ones(1, 2, requires_grad=True); m = nn.Linear(2, 2); "
    "m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,)); m(a).sum().backward(); "
    "assert a.grad.tolist() == [[0.0, 0.0]]",
    # in-place activations
    "t = torch.tensor([-1.5, 2.0]); y = F.relu(t, inplace=True); assert y is t and t.tolist() == [0.0, 2.0]",
    "t = torch.tensor([-1.5, 2.0]); nn.LeakyReLU(0.5, inplace=True)(t); assert t.tolist() == [-0.75, 2.0]",
    "t = torch.tensor([-1.5, 2.0]); F.relu_(t); nn.Hardtanh(inplace=True)(t); assert t.tolist() == [0.0, 1.0]",
    "F.relu(torch.ones(2, requires_grad=True), inplace=True)",
    "w = torch.tensor([-1.0, 2.0], requires_grad=True); F.relu(w * 1, inplace=True).sum().backward(); "
    "assert w.grad.tolist() == [0.0, 1.0]",
    # methods and functions scripts reach for
    "assert x.is_contiguous() and not x.t().is_contiguous() and x.stride() == (3, 1) and x.itemsize == 4",
    "assert torch.arange(6.).reshape(2, 3).sum(axis=0).tolist() == [3.0, 5.0, 7.0] and x.mean(axis=1).shape == (2,)",
    "assert torch.tensor([[1, 2]]).tile(2, 1).shape == (2, 2) and x.view(torch.int32).dtype == torch.int32",
    "assert torch.tensor([1.0]).view(torch.int32).tolist() == [1065353216]",
    "t = torch.ones(2, 1); t.squeeze_(); t.unsqueeze_(0); assert t.shape == (1, 2); t.t_(); assert t.shape == (2, 1)",
    "assert torch.ones(2).lerp_(Z(2), 0.5).tolist() == [0.5, 0.5] and torch.ones(2, 2).fill_diagonal_(0).tolist() "
    "== [[0.0, 1.0], [1.0, 0.0]]",
    "assert torch.tensor([3., 1., 2.]).msort().tolist() == [1.0, 2.0, 3.0] and x.new(2, 3).shape == (2, 3)",
    "assert torch.iinfo(torch.int32).max == 2147483647 and torch.iinfo(torch.uint8).bits == 8",
    "torch.iinfo(torch.float32)", "assert torch.is_floating_point(x) and not torch.is_autocast_enabled()",
    "assert torch.get_autocast_dtype('cuda') == torch.float16 and torch.is_nonzero(torch.tensor([2.]))",
    "torch.is_nonzero(Z(2))",
    "assert nn.Linear(2, 3).get_parameter('weight').shape == (3, 2)", "nn.Linear(2, 3).get_parameter('nope')",
    "m = nn.Linear(2, 3); v = nn.utils.parameters_to_vector(m.parameters()); assert v.shape == (9,); "
    "nn.utils.vector_to_parameters(torch.arange(9.), m.parameters()); assert m.bias.tolist() == [6.0, 7.0, 8.0]",
    "o = torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0); s = torch.optim.lr_scheduler.MultiplicativeLR(o, "
    "lambda e: 0.5); o.step(); s.step(); o.step(); s.step(); assert s.get_last_lr() == [0.25]",
    "c = nn.LSTMCell(3, 4); h, cc = c(torch.ones(2, 3)); assert h.shape == cc.shape == (2, 4)",
    "assert nn.GRUCell(3, 4)(torch.ones(3)).shape == (4,) and nn.RNNCell(3, 4)(torch.ones(2, 3)).shape == (2, 4)",
    "nn.GRUCell(3, 4)(torch.ones(2, 3), Z(2, 5))", "nn.RNNCell(3, 4)(torch.ones(2, 2))",
    "assert [n for n, _ in nn.LSTMCell(3, 4).named_parameters()] == ['weight_ih', 'weight_hh', 'bias_ih', 'bias_hh']",
    "assert nn.UpsamplingNearest2d(scale_factor=2)(torch.ones(1, 1, 2, 2)).shape == (1, 1, 4, 4)",
    "assert F.gumbel_softmax(Z(2, 3), hard=True).sum(1).tolist() == [1.0, 1.0]",
    "cp = __import__('importlib').import_module(torch.__name__ + '.utils.checkpoint'); "
    "assert cp.checkpoint(lambda a: a * 2, torch.ones(2), use_reentrant=False).tolist() == [2.0, 2.0]",
    # custom autograd functions
    FN + "w = torch.ones(2, requires_grad=True); y = Scale.apply(w, 3.0); y.sum().backward(); "
    "assert w.grad.tolist() == [3.0, 3.0] and y.grad_fn.name() == 'ScaleBackward' and "
    "type(y.grad_fn).__name__ == 'ScaleBackward' and len(y.grad_fn.next_functions) == 1",
    FN + "w = torch.ones(2, requires_grad=True); y = Scale.apply(w, k=0.5); y.sum().backward(); "
    "assert w.grad.tolist() == [0.5, 0.5]",
    FN + "y = Scale.apply(torch.ones(2)); assert not y.requires_grad and y.grad_fn is None",
    FN + "w = torch.ones(2, requires_grad=True)\nwith torch.no_grad(): y = Scale.apply(w)\nassert not y.requires_grad",
    FN + "Scale()(torch.ones(2))",
    FN + "class Wrong(Scale):\n @staticmethod\n def backward(ctx, g): return g, g, g\n"
    "Wrong.apply(torch.ones(2, requires_grad=True), 2.0).sum().backward()",
    FN + "class Wrong(Scale):\n @staticmethod\n def backward(ctx, g): return torch.ones(3), None\n"
    "Wrong.apply(torch.ones(2, requires_grad=True), 2.0).sum().backward()",
    FN + "class Wrong(Scale):\n @staticmethod\n def backward(ctx, g): return g, g\n"
    "Wrong.apply(torch.ones(2, requires_grad=True), 2.0).sum().backward()",
    FN + "class Wide(Scale):\n @staticmethod\n def backward(ctx, g): return torch.ones(3, 2), None, None\n"
    "w = torch.ones(2, requires_grad=True); Wide.apply(w, 2.0).sum().backward(); assert w.grad.tolist() == [3.0, 3.0]",
    "class Two(torch.autograd.Function):\n @staticmethod\n def forward(ctx, a):\n"
    "  ctx.set_materialize_grads(False); return a * 2, a.argmax()\n"
    " @staticmethod\n def backward(ctx, g, gi):\n  assert gi is None; return g * 2\n"
    "w = torch.ones(2, requires_grad=True); u, i = Two.apply(w); assert u.requires_grad and not i.requires_grad; "
    "u.sum().backward(); assert w.grad.tolist() == [2.0, 2.0]",
    "class Two(torch.autograd.Function):\n @staticmethod\n def forward(ctx, a):\n  return a * 2, a * 3\n"
    " @staticmethod\n def backward(ctx, g1, g2):\n  return g1 + 10 * g2\n"
    "w = torch.ones(2, requires_grad=True); u, v = Two.apply(w); assert u.grad_fn is v.grad_fn; "
    "(u.sum() + (v * v).sum()).backward(); assert w.grad.tolist() == [61.0, 61.0]",
    "class Same(torch.autograd.Function):\n @staticmethod\n def forward(ctx, a): return a\n"
    " @staticmethod\n def backward(ctx, g): return g * 2\n"
    "w = torch.ones(2, requires_grad=True); y = Same.apply(w); assert y is not w and w.grad_fn is None; "
    "y.sum().backward(); assert w.grad.tolist() == [2.0, 2.0]",
    "class New(torch.autograd.Function):\n @staticmethod\n def forward(a, k): return a * k\n"
    " @staticmethod\n def setup_context(ctx, inputs, output): ctx.k = inputs[1]\n"
    " @staticmethod\n def backward(ctx, g): return g * ctx.k, None\n"
    "w = torch.ones(2, requires_grad=True); New.apply(w, 5.0).sum().backward(); assert w.grad.tolist() == [5.0, 5.0]",
    "class H(torch.autograd.Function):\n @staticmethod\n def forward(ctx, a): return a.half() * 3\n"
    " @staticmethod\n def backward(ctx, g):\n  assert g.dtype == torch.float16; return g.half() / 3\n"
    "w = torch.ones(2, requires_grad=True); H.apply(w).float().sum().backward(); "
    "assert w.grad.dtype == torch.float32 and w.grad.tolist() == [0.333251953125] * 2",
    "m = __import__('importlib').import_module(torch.__name__ + '.autograd.function'); "
    "assert m.Function is torch.autograd.Function and m.once_differentiable and m.FunctionCtx",
]


def run(torch, nn, F):
    """{snippet: [type name, first message line] or ["ok", None]} under the given modules."""
    out = {}
    for case in CASES:
        env = {"torch": torch, "nn": nn, "F": F, "Z": torch.zeros, "x": torch.zeros(2, 3),
               "p": torch.zeros(2, requires_grad=True)}
        try:
            exec(case, env)
            out[case] = ["ok", None]
        except Exception as e:      # noqa: BLE001 (every exception is what is recorded)
            out[case] = [type(e).__name__, (str(e).splitlines() or [""])[0]]
    return out


def main():
    import warnings

    import torch
    warnings.simplefilter("ignore")
    got = run(torch, torch.nn, torch.nn.functional)
    OUT.write_text(json.dumps({"torch": torch.__version__, "cases": got}, indent=1) + "\n")
    print(f"{OUT}: {len(got)} cases ({sum(v[0] != 'ok' for v in got.values())} raise)", file=sys.stderr)


if __name__ == "__main__":
    main()

"""The engine's create_graph sweep (minifp._vjp): first-order gradients bit for bit the plain sweep's in float32,
for every VJP entry, on inputs with ties, signed zeros and infinities; half formats rounding each step; gradients
of gradients (second and third order) against closed forms; an op without a graph VJP refused before anything
changes."""
import math

import numpy as np
import pytest

import minifp
from minifp import engine
from minifp._ops import OPS
from minifp._vjp import VJP

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 2.0, 0.5, 1e-30, -3.0, 20.0, -20.0], np.float32)


def _random(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _unary(name, **params):
    return lambda rng: ([np.concatenate([SPECIAL, _random(rng, 20)])], params)


def _positive(name):
    return lambda rng: ([np.concatenate([np.float32([0.0, np.inf, 1.0, 4.0, 1e-30]),
                                         np.abs(_random(rng, 20)) + np.float32(0.1)])], {})


def _binary(a, b, **params):
    return lambda rng: ([_random(rng, *a), _random(rng, *b)], params)


def _ties(rng):
    x = np.float32([1.0, 2.0, -0.0, 0.0, np.inf, -np.inf, 3.0, 5.0])
    return [x, np.float32([1.0, 3.0, 0.0, -0.0, np.inf, 1.0, 3.0, -5.0])], {}


# name -> rng -> ([input arrays], params): every VJP entry, on values that exercise its branches
CASES = {
    "add": _binary((3, 4), (4,)), "sub": _binary((3, 4), (3, 1)), "mul": _binary((3, 4), (1, 4)),
    "div": lambda rng: ([np.concatenate([SPECIAL, _random(rng, 4)]),
                         np.concatenate([np.float32([1, 2, 0, -0.0, np.inf, 3, 1, -2, 4, 0.5, 1, 1]),
                                         _random(rng, 4)])], {}),
    "neg": _unary("neg"), "exp": _unary("exp"), "log": _positive("log"), "sqrt": _positive("sqrt"),
    "rsqrt": _positive("rsqrt"), "reciprocal": _unary("reciprocal"), "sin": _unary("sin"), "cos": _unary("cos"),
    "tanh": _unary("tanh"), "sigmoid": _unary("sigmoid"), "relu": _unary("relu"),
    "leaky_relu": _unary("leaky_relu", negative_slope=0.2), "elu": _unary("elu", alpha=0.7),
    "softplus": _unary("softplus", beta=2.0, threshold=5.0), "silu": _unary("silu"), "gelu": _unary("gelu"),
    "abs": _unary("abs"), "maximum": _ties, "minimum": _ties,
    "pow": lambda rng: ([np.abs(_random(rng, 3, 4)) + np.float32(0.1), _random(rng, 3, 4)], {}),
    "where": lambda rng: ([rng.random((3, 4)) > 0.5, _random(rng, 3, 4), _random(rng, 4)], {}),
    "clamp": lambda rng: ([np.concatenate([SPECIAL, np.float32([0.9, 1.7])])], {"min": 0.9, "max": 1.7}),
    "sum": lambda rng: ([_random(rng, 3, 4, 5)], {"axis": (0, 2)}),
    "mean": lambda rng: ([_random(rng, 3, 4)], {"axis": 0, "keepdims": True}),
    "reshape": lambda rng: ([_random(rng, 3, 4)], {"shape": (2, 6)}),
    "transpose": lambda rng: ([_random(rng, 2, 3, 4)], {"axes": (-2, 2, 0)}),
    "broadcast_to": lambda rng: ([_random(rng, 3, 1)], {"shape": (2, 3, 4)}),
    "getitem": lambda rng: ([_random(rng, 4, 5)], {"index": (slice(1, 3), [0, 2, 2])}),
    "setitem": lambda rng: ([_random(rng, 4, 5), _random(rng, 2, 1)], {"index": (slice(1, 3), [0, 2, 4])}),
    "concatenate": lambda rng: ([_random(rng, 2, 3), _random(rng, 4, 3), _random(rng, 1, 3)], {"axis": 0}),
    "matmul": lambda rng: ([_random(rng, 2, 3, 4), _random(rng, 4, 5)], {}),
    "linear": lambda rng: ([_random(rng, 2, 3, 4), _random(rng, 5, 4), _random(rng, 5)], {}),
    "mse_loss": lambda rng: ([_random(rng, 3, 4), _random(rng, 3, 4)], {"reduction": "mean"}),
    "vector_norm": lambda rng: ([np.concatenate([_random(rng, 2, 4), np.zeros((1, 4), np.float32)])],
                                {"ord": 2, "axis": 1}),
    "softmax": lambda rng: ([_random(rng, 3, 5)], {"axis": 1}),
    "log_softmax": lambda rng: ([_random(rng, 3, 5)], {"axis": -1}),
    "cast": lambda rng: ([_random(rng, 6)], {}),
    "selu": _unary("selu"), "hardtanh": lambda rng: ([np.concatenate([SPECIAL, np.float32([0.5, -0.5])])],
                                                     {"min_val": -1.0, "max_val": 2.0}),
    "log1p": _positive("log1p"), "expm1": _unary("expm1"),
    "avg_pool2d": lambda rng: ([_random(rng, 2, 3, 6, 7)], {"kernel_size": 3, "stride": (2, 3), "padding": 1}),
    "cumsum": lambda rng: ([_random(rng, 3, 4)], {"axis": 1}),
    "dropout": lambda rng: ([_random(rng, 3, 4)], {"mask": rng.random((3, 4)) > 0.3, "scale": 1 / 0.7}),
    "nll_loss": lambda rng: ([_random(rng, 4, 3, 2)], {"target": np.array([[0, 2], [1, -100], [2, 2], [0, 1]]),
                                                      "weight": np.float32([0.3, 1.0, 2.0])}),
    "conv2d": lambda rng: ([_random(rng, 2, 4, 5, 6), _random(rng, 6, 2, 3, 2), _random(rng, 6)],
                           {"stride": (2, 1), "padding": ((1, 2), (0, 1)), "dilation": (1, 2), "groups": 2}),
    "l1_loss": lambda rng: ([_ties(rng)[0][0], _ties(rng)[0][1]], {"reduction": "mean"}),
    "huber_loss": lambda rng: ([_random(rng, 3, 4) * 2, _random(rng, 3, 4)], {"delta": 0.5, "reduction": "sum"}),
    "smooth_l1_loss": lambda rng: ([_random(rng, 3, 4) * 2, _random(rng, 4)], {"beta": 0.5}),
    "binary_cross_entropy_with_logits": lambda rng: ([np.concatenate([SPECIAL, _random(rng, 4)]),
                                                      rng.random(16).astype(np.float32)], {}),
    "log_sigmoid": _unary("log_sigmoid"),
    "var": lambda rng: ([_random(rng, 3, 4)], {"axis": 1}),
    "max": lambda rng: ([np.float32([[1, 3, 3, -np.inf], [2, 0, -0.0, 2], [5, 1, 4, 2]])], {"axis": 1}),
    "embedding": lambda rng: ([_random(rng, 5, 3)], {"indices": np.array([[0, 2, 2], [4, 0, 1]])}),
    "layer_norm": lambda rng: ([_random(rng, 3, 2, 4), _random(rng, 2, 4), _random(rng, 2, 4)],
                               {"normalized_ndim": 2}),
    "batch_norm": lambda rng: ([_random(rng, 4, 3, 2, 5), _random(rng, 3), _random(rng, 3)], {"eps": 1e-3}),
    "logsumexp": lambda rng: ([np.float32([[1, 2, -np.inf, 0], [-np.inf, -np.inf, -np.inf, -np.inf],
                                           [3, -1, 0.5, 2]])], {"axis": 1}),
    "hardswish": lambda rng: ([np.concatenate([SPECIAL, np.float32([3, -3, 2.5, -2.5])])], {}),
    "attention": lambda rng: ([_random(rng, 2, 3, 4), _random(rng, 2, 5, 4), _random(rng, 2, 5, 3)], {}),
    "max_pool2d": lambda rng: ([np.round(_random(rng, 2, 3, 6, 7))], {"kernel_size": (3, 2), "stride": 2,
                                                                      "padding": 1, "dilation": (1, 2),
                                                                      "ceil_mode": True}),
}
# More forms of the ops whose gradients branch on their inputs' kinds
MORE = {
    "gelu_tanh": ("gelu", _unary("gelu", approximate="tanh")),
    "pow_number": ("pow", lambda rng: ([np.abs(_random(rng, 6)) + np.float32(0.1), 2.5], {})),
    "pow_zero": ("pow", lambda rng: ([_random(rng, 6), 0], {})),
    "number_pow": ("pow", lambda rng: ([2.0, _random(rng, 6)], {})),
    "zero_pow": ("pow", lambda rng: ([0.0, _random(rng, 6)], {})),
    "matmul_vector": ("matmul", lambda rng: ([_random(rng, 3, 4), _random(rng, 4)], {})),
    "vector_matmul": ("matmul", lambda rng: ([_random(rng, 4), _random(rng, 2, 4, 3)], {})),
    "matmul_batches": ("matmul", lambda rng: ([_random(rng, 2, 3, 4), _random(rng, 1, 4, 2)], {})),
    "linear_io": ("linear", lambda rng: ([_random(rng, 3, 4), _random(rng, 4, 5), None], {"layout": "io"})),
    "mse_sum": ("mse_loss", lambda rng: ([_random(rng, 3, 4), _random(rng, 4)], {"reduction": "sum"})),
    "mse_none": ("mse_loss", lambda rng: ([_random(rng, 3, 4), _random(rng, 3, 4)], {"reduction": "none"})),
    "norm_1": ("vector_norm", lambda rng: ([_random(rng, 3, 4)], {"ord": 1})),
    "sum_all": ("sum", lambda rng: ([_random(rng, 3, 4)], {})),
    "conv2d_padded": ("conv2d", lambda rng: ([_random(rng, 2, 3, 6, 6), _random(rng, 4, 3, 3, 3), None],
                                             {"padding": 1})),
    "conv2d_nhwc": ("conv2d", lambda rng: ([_random(rng, 2, 5, 5, 3), _random(rng, 3, 3, 3, 4), _random(rng, 4)],
                                           {"layout": "NHWC"})),
    "conv2d_depthwise": ("conv2d", lambda rng: ([_random(rng, 1, 3, 5, 5), _random(rng, 3, 1, 3, 3), None],
                                                {"groups": 3, "padding": 1})),
    "l1_sum_zero": ("l1_loss", lambda rng: ([np.float32([0, -0.0, 1, 2]), np.float32([0, 0, 1, -1])],
                                             {"reduction": "sum"})),
    "huber_none": ("huber_loss", lambda rng: ([_random(rng, 3, 4) * 2, _random(rng, 3, 4)], {"reduction": "none"})),
    "smooth_l1_beta_0": ("smooth_l1_loss", lambda rng: ([_random(rng, 3, 4), _random(rng, 3, 4)], {"beta": 0.0})),
    "bce_logits_weighted": ("binary_cross_entropy_with_logits",
                            lambda rng: ([_random(rng, 3, 4) * 3, rng.random((3, 4)).astype(np.float32)],
                                         {"weight": rng.uniform(0.5, 2, 4).astype(np.float32),
                                          "pos_weight": rng.uniform(0.5, 2, 4).astype(np.float32),
                                          "reduction": "sum"})),
    "var_all_biased": ("var", lambda rng: ([_random(rng, 3, 4)], {"correction": 0})),
    "max_all_ties": ("max", lambda rng: ([np.float32([[1, 3], [3, 0]])], {})),
    "max_keepdims": ("max", lambda rng: ([_random(rng, 2, 3, 4)], {"axis": (0, 2), "keepdims": True})),
    "embedding_padding": ("embedding", lambda rng: ([_random(rng, 5, 3)], {"indices": np.array([1, 3, 1, 0]),
                                                                           "padding_idx": 1})),
    "layer_norm_plain": ("layer_norm", lambda rng: ([_random(rng, 3, 5)], {})),
    "batch_norm_eval": ("batch_norm", lambda rng: ([_random(rng, 4, 3, 2), _random(rng, 3), _random(rng, 3)],
                                                   {"mean": _random(rng, 3), "var": rng.uniform(0.5, 2, 3)
                                                    .astype(np.float32), "eps": 1e-5})),
    "batch_norm_2d_no_affine": ("batch_norm", lambda rng: ([_random(rng, 6, 3)], {})),
    "max_pool2d_tiles": ("max_pool2d", lambda rng: ([np.round(_random(rng, 1, 2, 4, 5))],
                                                    {"kernel_size": 2, "stride": 2})),
    "max_pool2d_nhwc": ("max_pool2d", lambda rng: ([_random(rng, 2, 5, 5, 3)], {"kernel_size": 3, "stride": 1,
                                                                                "layout": "NHWC"})),
    "attention_causal": ("attention", lambda rng: ([_random(rng, 1, 2, 4, 4), _random(rng, 1, 2, 4, 4),
                                                    _random(rng, 1, 2, 4, 3)], {"causal": True, "scale": 0.3})),
    "logsumexp_all": ("logsumexp", lambda rng: ([_random(rng, 3, 4)], {})),
    "getitem_basic": ("getitem", lambda rng: ([_random(rng, 4, 5)], {"index": (slice(None, None, 2), 1)})),
}
TABLE = {**{name: (name, make) for name, make in CASES.items()}, **MORE}


def _inputs(name, make, fmt=minifp.float32):
    arrays, params = make(np.random.default_rng(sum(map(ord, name))))
    inputs = [a if not isinstance(a, np.ndarray) or a.dtype == bool else engine.tensor(a, fmt, requires_grad=True)
              for a in arrays]
    return inputs, params


def _run(op, inputs, params, create_graph):
    """{index of a float input: its gradient's storage} of sum(seed * op(*inputs))."""
    out = engine.apply(op, *inputs, **params) if op != "cast" else inputs[0].astype(minifp.float32)
    seed = np.random.default_rng(5).standard_normal(out.shape).astype(np.float32)
    sources = [a for a in inputs if isinstance(a, engine.Tensor) and a.requires_grad]
    found = engine.gradients([out], sources, [seed], create_graph=create_graph)
    return {i: (engine.storage(found[id(a)]) if create_graph else found[id(a)]) for i, a in enumerate(sources)}


def _bits(a):
    """The float32 bits, every NaN as one (which NaN an operation passes on is the CPU's business)."""
    a = np.asarray(a, np.float32)
    return np.where(np.isnan(a), np.float32(np.nan), a).view(np.uint32)


def test_every_vjp_entry_is_an_op_with_one_function_per_input():
    for name, fns in VJP.items():
        op = OPS[name]
        assert len(fns) == (1 if op.variadic else len(op.grads)), name
    assert set(CASES) == set(VJP)


@pytest.mark.parametrize("case", sorted(TABLE))
def test_first_order_gradients_are_the_plain_sweeps_bit_for_bit(case):
    op, make = TABLE[case]
    inputs, params = _inputs(case, make)
    plain = _run(op, inputs, params, create_graph=False)
    graph = _run(op, inputs, params, create_graph=True)
    assert plain.keys() == graph.keys() and plain
    for i in plain:
        assert graph[i].shape == plain[i].shape, (case, i)
        assert np.array_equal(_bits(graph[i]), _bits(plain[i])), (case, i, graph[i], plain[i])


def test_gradients_are_graph_tensors_where_they_depend_on_an_input():
    x = engine.tensor(np.float32([0.5, -1.0, 2.0]), requires_grad=True)
    y = engine.apply("tanh", x)
    g = engine.gradients([y], [x], create_graph=True)[id(x)]
    assert isinstance(g, engine.Tensor) and g.requires_grad and engine.made_by(g) == "mul"
    z = engine.apply("add", x, 1.0)         # a gradient that is the seed itself depends on nothing
    assert not engine.gradients([z], [x], create_graph=True)[id(x)].requires_grad


def _nth(f, x, n):
    """The n-th derivative of sum(f(x)) at x, each by a create_graph sweep."""
    y = engine.apply("sum", f(x))
    for _ in range(n):
        y = engine.apply("sum", engine.gradients([y], [x], create_graph=True)[id(x)])
    return engine.gradients([y], [x], create_graph=True)[id(x)]


def test_higher_orders_of_a_polynomial_are_exact():
    x = engine.tensor(np.float32([-2.0, -0.5, 0.0, 1.0, 3.0]), requires_grad=True)

    def f(t):
        return engine.apply("mul", engine.apply("pow", t, 4), 0.5)
    v = x.float32()
    assert np.array_equal(_nth(f, x, 0).float32(), 2 * v ** 3)
    assert np.array_equal(_nth(f, x, 1).float32(), 6 * v ** 2)
    assert np.array_equal(_nth(f, x, 2).float32(), 12 * v)
    assert np.array_equal(_nth(f, x, 3).float32(), np.full(5, 12, np.float32))


@pytest.mark.parametrize("name, second, third", [
    ("tanh", lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
     lambda x: (6 * np.tanh(x) ** 2 - 2) * (1 - np.tanh(x) ** 2)),
    ("sigmoid", lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s),
     lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 6 * s + 6 * s * s)),
    ("exp", np.exp, np.exp), ("sin", lambda x: -np.sin(x), lambda x: -np.cos(x)),
    ("gelu", lambda x: np.exp(-x * x / 2) / math.sqrt(2 * math.pi) * (2 - x * x),
     lambda x: np.exp(-x * x / 2) / math.sqrt(2 * math.pi) * (x ** 3 - 4 * x)),
])
def test_second_and_third_derivatives_match_closed_forms(name, second, third):
    v = np.float32([-2.0, -0.7, 0.0, 0.3, 1.5])
    x = engine.tensor(v, requires_grad=True)
    w = v.astype(np.float64)
    for n, want in ((1, second(w)), (2, third(w))):
        got = _nth(lambda t: engine.apply(name, t), x, n).float32()
        assert np.allclose(got, want, rtol=2e-6, atol=2e-6), (name, n, got, want)


def test_half_formats_round_every_step_of_a_gradient():
    # tanh's gradient g * (1 - y * y): the plain sweep computes it in float32 and rounds once into float16; the
    # create_graph sweep's ops each round into float16, as PyTorch's ops on float16 tensors do
    v = np.float32([0.1, 0.3337, 0.77, 1.3, -2.2, 0.0123])
    x = engine.tensor(v, minifp.float16, requires_grad=True)
    y = engine.apply("tanh", x)
    g = engine.gradients([y], [x], create_graph=True)[id(x)]
    yy = y.float32()
    stepwise = (1 - (yy * yy).astype(np.float16).astype(np.float32)).astype(np.float16)
    assert g.fmt == minifp.float16 and np.array_equal(engine.storage(g), stepwise)
    once = engine.gradients([y], [x])[id(x)]
    assert np.array_equal(once, (1 - yy * yy).astype(np.float16))
    assert not np.array_equal(once, stepwise)       # these inputs show the difference


def test_a_gradient_is_cast_into_its_tensors_format():
    x = engine.tensor(np.float32([0.1, 0.2, 3.0]), minifp.bfloat16, requires_grad=True)
    y = engine.apply("mul", x.astype(minifp.float32), engine.tensor(np.float32([1 / 3, 3.0, 0.7])))
    g = engine.gradients([y], [x], create_graph=True)[id(x)]
    assert g.fmt == minifp.bfloat16 and engine.made_by(g) is None
    h = engine.gradients([y], [x])[id(x)]
    assert np.array_equal(engine.storage(g), h)


def test_backward_accumulates_graph_gradients_with_add():
    x = engine.tensor(np.float32([1.0, 2.0]), requires_grad=True)
    for _ in range(2):
        engine.backward(engine.apply("sum", engine.apply("pow", x, 3)), retain_graph=True, create_graph=True)
    assert engine.made_by(x.grad) == "add" and x.grad.float32().tolist() == [6.0, 24.0]
    engine.backward(engine.apply("sum", x.grad))        # 2 * 6x added into .grad, which keeps its graph
    assert x.grad.float32().tolist() == [18.0, 48.0] and x.grad.requires_grad


def test_an_op_without_a_graph_vjp_is_refused_before_anything_changes():
    x = engine.tensor(np.float32([1.0, 2.0, 3.0]), requires_grad=True)
    y = engine.apply("prod", engine.apply("mul", x, x))
    with pytest.raises(NotImplementedError, match=r"derivative for prod_backward is not implemented"):
        engine.backward(y, create_graph=True)
    assert x.grad is None
    engine.backward(y)      # nothing was freed: the plain sweep still runs
    assert x.grad.float32().tolist() == [72.0, 36.0, 24.0]


def test_only_the_ops_on_the_way_to_the_sources_need_a_vjp():
    x = engine.tensor(np.float32([1.0, 2.0]), requires_grad=True)
    w = engine.tensor(np.float32([3.0, 4.0]), requires_grad=True)
    y = engine.apply("sum", engine.apply("mul", engine.apply("cumprod", w, axis=0), x))
    g = engine.gradients([y], [x], create_graph=True)[id(x)]
    assert g.float32().tolist() == [3.0, 12.0] and g.requires_grad


def test_convolution_gradients_of_gradients_are_the_convolutions_themselves():
    # sum(conv(x, w)) is linear in each: the gradient with respect to w of (d/dx . v) is the weight gradient of
    # (v, ones): checked against the plain sweep of the same quantity written as a convolution
    rng = np.random.default_rng(3)
    x = engine.tensor(rng.standard_normal((1, 2, 4, 4)).astype(np.float32), requires_grad=True)
    w = engine.tensor(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), requires_grad=True)
    v = engine.tensor(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    y = engine.apply("sum", engine.apply("conv2d", x, w, padding=1))
    gx = engine.gradients([y], [x], create_graph=True)[id(x)]
    hv = engine.gradients([engine.apply("sum", engine.apply("mul", gx, v))], [w])[id(w)]
    direct = engine.gradients([engine.apply("sum", engine.apply("conv2d", v, w, padding=1))], [w])[id(w)]
    assert np.array_equal(hv, direct)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_gradients_of_gradients_are_those_of_its_math(causal):
    # the fused op's Hessian-vector products (every input, through each of its three gradients) against the same
    # written as matmul, softmax and matmul: float64 first-order values against float32 ones, so within 1e-5
    rng = np.random.default_rng(4)
    q, k, v = (engine.tensor(_random(rng, 2, 4, 3), requires_grad=True) for _ in range(3))
    seed, dirs = _random(rng, 2, 4, 3), [_random(rng, 2, 4, 3) for _ in range(3)]

    def hessian_vector(out):
        grads = engine.gradients([out], [q, k, v], [seed], create_graph=True)
        dot = engine.apply("sum", engine.apply("add", engine.apply("add", *[
            engine.apply("sum", engine.apply("mul", grads[id(a)], d)) for a, d in zip((q, k, v), dirs[:2])]),
            engine.apply("sum", engine.apply("mul", grads[id(v)], dirs[2]))))
        found = engine.gradients([dot], [q, k, v])
        return [engine.storage(grads[id(a)]) for a in (q, k, v)], [found[id(a)] for a in (q, k, v)]

    scores = engine.apply("mul", engine.apply("matmul", q, engine.apply("transpose", k, axes=(0, 2, 1))), 0.5)
    if causal:
        scores = engine.apply("where", np.tril(np.ones((4, 4), bool)), scores, -np.inf)
    math_path = engine.apply("matmul", engine.apply("softmax", scores, axis=-1), v)
    fused = hessian_vector(engine.apply("attention", q, k, v, causal=causal, scale=0.5))
    written = hessian_vector(math_path)
    for got, want in zip(fused[0] + fused[1], written[0] + written[1]):
        assert np.allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max()), (got, want)
    assert np.abs(fused[1][0]).max() > 0.1 and np.abs(fused[1][2]).max() > 0.1     # (not trivially zero)


def test_products_under_an_accumulation_model_are_refused():
    x = engine.tensor(np.float32([[1.0, 2.0]]), requires_grad=True)
    w = engine.tensor(np.float32([[3.0], [4.0]]))
    with minifp.accumulate(minifp.float16):
        p = engine.apply("matmul", x, w)
    y = engine.apply("sum", engine.apply("tanh", p))
    with pytest.raises(NotImplementedError, match=r"create_graph=True through 'matmul' computed under "
                                                  r"minifp.accumulate"):
        engine.gradients([y], [x], create_graph=True)
    with minifp.accumulate(minifp.float16):     # elementwise ops under it are no accumulation
        t = engine.apply("tanh", x)
    z = engine.apply("sum", t)
    assert engine.gradients([z], [x], create_graph=True)[id(x)].requires_grad

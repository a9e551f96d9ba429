"""torch.distributions against real PyTorch 2.13: tests/fixtures/pytorch/distributions.json, recorded by
tools/record_torch_distributions.py, whose measure, kl and error functions run here with minifp.torch (reprs,
shapes, errors, every quantity and the gradients of log_prob, entropy, cdf and kl_divergence). Then what a fixture
cannot hold: samples repeat under manual_seed and have the right statistics, and rsample's gradients.

Compared bit for bit where both compute the same correctly rounded float32 operations in the same order (EXACT:
+ - * /, comparisons, sums of up to 4 terms; PyTorch's CPU sum of a row of 5 adds its terms in another order).
Everything else within RTOL of the array's largest magnitude: PyTorch's CPU log, exp, log1p, sigmoid, softplus,
erf, erfinv and even sqrt are its own vectorised approximations, not correctly rounded (its float32 sqrt is one ulp
off in 15% of inputs on the recording AVX2 machine), minifp's are NumPy's; a one-ulp difference in sigmoid(x) or
softmax(x) feeds cancellations such as sigmoid(x) - target in the gradients, so the bound is relative to the array
rather than to each element. MultivariateNormal's Cholesky factor and triangular solves are minifp's own loops
where PyTorch's LAPACK sums in its own order. The largest difference recorded is 7.2e-7 of the array's scale (the
perplexity of a sum of 24 Bernoulli entropies).
"""
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import minifp.torch as torch
import minifp.torch.distributions as D

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from record_torch_distributions import error, kl, measure  # noqa: E402

FIX = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "pytorch" / "distributions.json").read_text())
RTOL = 2e-6

# The recorded quantities (path prefixes) each case computes with correctly rounded operations only.
NORMAL = ("mean", "mode", "variance", "stddev", "expand", "log_prob+grad/grads", "entropy+grad/grads")
UNIFORM = ("mean", "mode", "variance", "stddev", "expand", "cdf+grad", "icdf", "log_prob+grad/grads",
           "entropy+grad/grads")
PROBS = ("mean", "mode", "variance", "expand", "probs", "enumerate_support")        # probs / probs.sum(-1)
NAN_AND_ARGMAX = ("mean", "mode", "variance", "stddev", "expand")
MVN_TRIL = ("mean", "mode", "variance", "expand", "entropy+grad/grads")
MVN_FACTORED = ("mean", "mode", "expand")                                           # the rest via the factor
EXACT = {
    "normal": NORMAL, "normal_broadcast": NORMAL, "normal_numbers": NORMAL, "normal_mixed": NORMAL,
    "uniform": UNIFORM, "uniform_outside": UNIFORM, "uniform_numbers": UNIFORM,
    "bernoulli_probs": PROBS, "bernoulli_number": PROBS, "bernoulli_logits": ("mode", "logits", "enumerate_support"),
    "categorical_zero": PROBS + ("stddev",), "categorical_1d": PROBS + ("stddev",),
    "categorical_probs": NAN_AND_ARGMAX, "categorical_logits": NAN_AND_ARGMAX,     # (5 events: see the docstring)
    "onehot": PROBS, "onehot_logits": ("mode", "enumerate_support"),
    "independent_normal": NORMAL, "independent_bernoulli": ("mode",),
    "mvn_tril": MVN_TRIL, "mvn_batch_tril": MVN_TRIL,
    "mvn_cov": MVN_FACTORED, "mvn_diag_cov": MVN_FACTORED, "mvn_precision": MVN_FACTORED,
}
EXACT_KL = {"normal": ("grads",), "normal_vae": ("grads",), "independent": ("grads",), "uniform": ("grads",),
            "uniform_normal": ("grads",), "normal_uniform": ("value",)}

def _flags(values):
    a = np.asarray(values, np.float64)
    return np.isnan(a), np.where(np.isinf(a), a, 0)


def _compare(path, got, want, exact):
    """got == want (recursively), floating arrays bit for bit where exact(path), else within RTOL of the array's
    largest finite magnitude with NaN and infinities in the same places."""
    if isinstance(want, dict) and "values" in want:
        assert isinstance(got, dict) and (got["dtype"], got["shape"]) == (want["dtype"], want["shape"]), path
        g, w = np.asarray(got["values"], np.float64), np.asarray(want["values"], np.float64)
        if exact(path) or not want["dtype"].startswith("torch.float"):
            assert np.array_equal(g, w, equal_nan=True), (path, g, w)
            return
        assert all(np.array_equal(a, b) for a, b in zip(_flags(g), _flags(w))), (path, g, w)
        finite = np.isfinite(w)
        scale = np.abs(w[finite]).max(initial=0)
        assert np.abs(g[finite] - w[finite]).max(initial=0) <= RTOL * scale, (path, g, w)
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (path, got, want)
        for key in want:
            _compare(f"{path}/{key}".lstrip("/"), got[key], want[key], exact)
    else:
        assert got == want, (path, got, want)


@pytest.mark.parametrize("name", sorted(FIX["cases"]))
def test_a_distribution_computes_what_pytorch_computes(name):
    case = FIX["cases"][name]
    got = measure(torch, case["expression"], case["params"], case["value"], case["probs"])
    _compare("", got, case["expected"], lambda path: path.startswith(EXACT[name]))


@pytest.mark.parametrize("name", sorted(FIX["kl"]))
def test_kl_divergence_computes_what_pytorch_computes(name):
    case = FIX["kl"][name]
    got = kl(torch, case["expression"], case["params"])
    _compare("", got, case["expected"], lambda path: path.startswith(EXACT_KL.get(name, ("-",))))


@pytest.mark.parametrize("expression", sorted(FIX["errors"]))
def test_errors_are_pytorchs(expression):
    assert error(torch, expression) == FIX["errors"][expression]


def test_the_import_paths_of_pytorch():
    from minifp.torch.distributions import Normal, kl_divergence
    from minifp.torch.distributions.kl import register_kl
    from minifp.torch.distributions.normal import Normal as NormalToo
    assert torch.distributions is D and Normal is NormalToo is D.Normal is torch.distributions.normal.Normal
    assert kl_divergence is torch.distributions.kl.kl_divergence and register_kl is D.register_kl
    assert D.constraints.positive.check(torch.tensor([1.0, 0.0])).tolist() == [True, False]
    assert issubclass(D.Normal, D.ExponentialFamily) and issubclass(D.Categorical, D.Distribution)
    with pytest.raises(AttributeError, match="Gamma is not part of minifp's PyTorch face yet"):
        D.Gamma


def test_validation_can_be_switched_off_as_in_pytorch():
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Categorical(torch.tensor([-1.0, 3.0])).probs.tolist() == [-0.5, 1.5]
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args(2)


def test_register_kl_picks_the_most_specific_pair():
    class Wide(D.Normal):
        pass

    @D.register_kl(Wide, D.Normal)
    def wide_normal(p, q):
        return torch.tensor(1.0)

    try:
        assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 1.0       # not Normal-Normal's
        assert D.kl_divergence(D.Normal(0.0, 1.0), Wide(0.0, 1.0)).item() == 0.0
        D.register_kl(D.Normal, Wide)(lambda p, q: torch.tensor(2.0))
        with pytest.warns(RuntimeWarning, match=r"Ambiguous kl_divergence\(Wide, Wide\). Please register_kl\("
                                                r"Wide, Wide\)"):
            assert D.kl_divergence(Wide(0.0, 1.0), Wide(0.0, 1.0)).item() == 1.0
    finally:
        for pair in [(Wide, D.Normal), (D.Normal, Wide)]:
            D.kl._KL_REGISTRY.pop(pair, None)
        D.kl._KL_MEMOIZE.clear()


# ---- samples: minifp's stream, not PyTorch's: shapes and dtypes are in the fixture; here determinism and statistics

SAMPLED = {
    "normal": lambda: D.Normal(torch.tensor([-1.0, 0.0, 2.0]), torch.tensor([0.5, 1.0, 3.0])),
    "uniform": lambda: D.Uniform(torch.tensor([-1.0, 2.0]), torch.tensor([1.0, 5.0])),
    "bernoulli": lambda: D.Bernoulli(torch.tensor([0.1, 0.5, 0.9])),
    "bernoulli_logits": lambda: D.Bernoulli(logits=torch.tensor([-2.0, 0.0, 2.0])),
    "categorical": lambda: D.Categorical(torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])),
    "categorical_logits": lambda: D.Categorical(logits=torch.tensor([0.0, 1.0, 2.0])),
    "onehot": lambda: D.OneHotCategorical(torch.tensor([0.25, 0.25, 0.5])),
    "independent": lambda: D.Independent(D.Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1),
    "mvn": lambda: D.MultivariateNormal(torch.zeros(2), scale_tril=torch.tensor([[1.0, 0.0], [0.5, 2.0]])),
    "mvn_cov": lambda: D.MultivariateNormal(torch.zeros(2), torch.tensor([[1.0, 0.5], [0.5, 4.25]])),
}


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_samples_repeat_under_manual_seed(name):
    d = SAMPLED[name]()
    draws = []
    for seed in (5, 5, 6):
        torch.manual_seed(seed)
        draws.append(d.sample((4,)).tolist() + ([d.rsample((2,)).tolist()] if d.has_rsample else []))
    assert draws[0] == draws[1] and draws[0] != draws[2]
    assert not d.sample().requires_grad


def _draws(name, n=20000, seed=1234):
    torch.manual_seed(seed)
    return SAMPLED[name]().sample((n,)).numpy().astype(np.float64)


def test_normal_and_uniform_draws_have_their_moments():
    x = _draws("normal")
    assert np.all(np.abs(x.mean(0) - [-1.0, 0.0, 2.0]) < 4 * np.array([0.5, 1.0, 3.0]) / math.sqrt(len(x)))
    assert np.all(np.abs(x.std(0) / [0.5, 1.0, 3.0] - 1) < 0.03)
    u = _draws("uniform")
    assert np.all(u.min(0) >= [-1.0, 2.0]) and np.all(u.max(0) < [1.0, 5.0])
    assert np.all(np.abs(u.mean(0) - [0.0, 3.5]) < 4 * np.array([2.0, 3.0]) / math.sqrt(12 * len(u)))
    assert np.array_equal(x, _draws("normal"))          # the same statistics again: the seed fixes every draw


@pytest.mark.parametrize("name, p", [("bernoulli", [0.1, 0.5, 0.9]),
                                     ("bernoulli_logits", [1 / (1 + math.e ** 2), 0.5, 1 / (1 + math.e ** -2)])])
def test_bernoulli_draws_are_ones_with_probability_probs(name, p):
    x = _draws(name)
    assert set(np.unique(x)) <= {0.0, 1.0}
    p = np.array(p)
    assert np.all(np.abs(x.mean(0) - p) < 4 * np.sqrt(p * (1 - p) / len(x)))


def test_categorical_draws_have_the_normalised_frequencies():
    torch.manual_seed(1234)
    x = SAMPLED["categorical"]().sample((20000,))
    assert x.dtype == torch.int64 and x.shape == (20000, 2)
    for row, p in enumerate(([0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1])):
        freq = np.bincount(x.numpy()[:, row], minlength=4) / 20000
        assert np.all(np.abs(freq - p) < 4 * np.sqrt(np.array(p) * (1 - np.array(p)) / 20000))
    freq = np.bincount(_draws("categorical_logits").astype(int), minlength=3) / 20000
    assert np.all(np.abs(freq - np.exp([0, 1, 2]) / np.exp([0, 1, 2]).sum()) < 0.015)
    onehot = _draws("onehot")
    assert np.all(onehot.sum(-1) == 1) and np.all(np.abs(onehot.mean(0) - [0.25, 0.25, 0.5]) < 0.015)


@pytest.mark.parametrize("name", ["mvn", "mvn_cov"])
def test_multivariate_normal_draws_have_the_covariance(name):
    x = _draws(name)
    assert np.all(np.abs(x.mean(0)) < 0.05)
    assert np.allclose(np.cov(x.T), [[1.0, 0.5], [0.5, 4.25]], atol=0.15)


def test_rsample_is_loc_plus_noise_times_scale_and_differentiable():
    loc = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    scale = torch.tensor([1.0, 0.5, 2.0], requires_grad=True)
    torch.manual_seed(3)
    x = D.Normal(loc, scale).rsample()
    torch.manual_seed(3)
    eps = torch.empty(3).normal_()                      # the noise rsample drew (PyTorch's _standard_normal)
    assert x.tolist() == (loc.detach() + eps * scale.detach()).tolist()
    x.sum().backward()
    assert loc.grad.tolist() == [1.0, 1.0, 1.0] and scale.grad.tolist() == eps.tolist()


def test_uniform_and_multivariate_rsample_gradients():
    low, high = torch.tensor([0.0, -2.0], requires_grad=True), torch.tensor([1.0, 3.0], requires_grad=True)
    torch.manual_seed(4)
    D.Uniform(low, high).rsample().sum().backward()
    torch.manual_seed(4)
    u = torch.rand(2)
    assert high.grad.tolist() == u.tolist() and low.grad.tolist() == (1 - u).tolist()
    loc = torch.zeros(2, requires_grad=True)
    tril = torch.tensor([[1.0, 0.0], [0.5, 2.0]], requires_grad=True)
    torch.manual_seed(5)
    D.MultivariateNormal(loc, scale_tril=tril).rsample().sum().backward()
    torch.manual_seed(5)
    eps = torch.empty(2).normal_()
    assert loc.grad.tolist() == [1.0, 1.0] and tril.grad.tolist() == [eps.tolist(), eps.tolist()]


def test_half_parameters_keep_their_dtype():
    d = D.Normal(torch.zeros(3, dtype=torch.float16), torch.ones(3, dtype=torch.float16))
    assert d.log_prob(torch.zeros(3, dtype=torch.float16)).dtype == torch.float16
    assert d.rsample((2,)).dtype == torch.float16 and d.entropy().dtype == torch.float16

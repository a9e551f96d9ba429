"""Record real PyTorch's torch.distributions on a table of cases into tests/fixtures/pytorch/distributions.json;
tests/torch/test_distributions.py runs the same measurements (measure, kl, error) with minifp.torch and compares.

    /work/torchenv/bin/python tools/record_torch_distributions.py

Each case is a constructor expression over named float32 parameters (drawn here once, stored in the fixture), a
value to score and probabilities for icdf. Recorded per case: repr, batch and event shapes, mean, mode, variance,
stddev, entropy, perplexity, probs and logits (where both exist), log_prob, cdf, icdf, enumerate_support, expand,
the shapes and dtypes of samples (minifp's generator is not PyTorch's: sample values are never compared), and the
gradients of the sums of log_prob, entropy and cdf with respect to every floating parameter. KL cases:
kl_divergence and its gradients. Error cases: the exception's type and message.
"""
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "pytorch" / "distributions.json"
QUANTITIES = ("mean", "mode", "variance", "stddev", "entropy", "perplexity")


def _f32(a):
    return np.asarray(a, np.float32)


def _tril(rng, *shape):
    """Lower-triangular factors with a positive diagonal (0.5 .. 1.5)."""
    t = np.tril(rng.standard_normal(shape) * 0.5)
    n = shape[-1]
    t[..., range(n), range(n)] = rng.uniform(0.5, 1.5, shape[:-1])
    return _f32(t)


def _spd(rng, n):
    a = rng.standard_normal((n, n))
    return _f32(a @ a.T + n * np.eye(n))


def _one_hot(rng, rows, k):
    return _f32(np.eye(k)[rng.integers(0, k, rows)])


def cases():
    """{name: (expression, {parameter: float32 array}, value to score or None, icdf probabilities or None)}."""
    rng = np.random.default_rng(2024)
    n, u = rng.standard_normal, rng.uniform
    probs_edges = _f32(np.concatenate([u(0.05, 0.95, 12), [0.0, 1.0, 0.5, 0.5]]))
    low = _f32(n(16))
    high = _f32(low + np.exp(n(16)))
    zero_probs = _f32([[0.0, 0.3, 0.7], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    return {
        "normal": ("D.Normal(loc, scale)", {"loc": _f32(n(64) * 2), "scale": _f32(np.exp(n(64)))},
                   _f32(n(64) * 3), _f32(u(0.001, 0.999, 64))),
        "normal_broadcast": ("D.Normal(loc, scale)", {"loc": _f32(n((3, 1))), "scale": _f32(u(0.5, 2, (1, 4)))},
                             _f32(n((2, 3, 4))), _f32(u(0.01, 0.99, (3, 4)))),
        "normal_numbers": ("D.Normal(0.5, 2.0)", {}, _f32(n(5)), _f32(u(0.01, 0.99, 5))),
        "normal_mixed": ("D.Normal(loc, 1.0)", {"loc": _f32(n(4))}, _f32(n(4)), None),
        "uniform": ("D.Uniform(low, high)", {"low": low, "high": high}, _f32(low + (high - low) * u(0, 0.99, 16)),
                    _f32(u(0, 1, 16))),
        "uniform_outside": ("D.Uniform(low, high, validate_args=False)", {"low": _f32([0, 1, -2, 0.5]),
                            "high": _f32([1, 3, 2, 0.75])}, _f32([-0.5, 3.0, 0.0, 0.7]), None),
        "uniform_numbers": ("D.Uniform(0.0, 2.0)", {}, _f32([0.0, 0.5, 1.999]), _f32([0.1, 0.5, 0.9])),
        "bernoulli_probs": ("D.Bernoulli(probs)", {"probs": probs_edges}, _f32(rng.integers(0, 2, 16)), None),
        "bernoulli_logits": ("D.Bernoulli(logits=logits)", {"logits": _f32(n(16) * 3)},
                             _f32(rng.integers(0, 2, 16)), None),
        "bernoulli_number": ("D.Bernoulli(0.3)", {}, _f32([0.0, 1.0]), None),
        "categorical_probs": ("D.Categorical(probs)", {"probs": _f32(u(0.1, 2, (6, 5)))},
                              rng.integers(0, 5, (3, 6)), None),
        "categorical_logits": ("D.Categorical(logits=logits)", {"logits": _f32(n((6, 5)) * 2)},
                               rng.integers(0, 5, (4, 6)), None),
        "categorical_zero": ("D.Categorical(probs)", {"probs": zero_probs}, np.array([1, 0, 0, 2]), None),
        "categorical_1d": ("D.Categorical(probs)", {"probs": _f32([0.1, 0.2, 0.3, 0.4])},
                           rng.integers(0, 4, 7), None),
        "onehot": ("D.OneHotCategorical(probs)", {"probs": _f32(u(0.1, 2, (3, 4)))}, _one_hot(rng, 3, 4), None),
        "onehot_logits": ("D.OneHotCategorical(logits=logits)", {"logits": _f32(n((2, 5)))},
                          _one_hot(rng, 2, 5), None),
        "independent_normal": ("D.Independent(D.Normal(loc, scale), 1)", {"loc": _f32(n((4, 3))),
                               "scale": _f32(u(0.5, 2, (4, 3)))}, _f32(n((2, 4, 3))), None),
        "independent_bernoulli": ("D.Independent(D.Bernoulli(logits=logits), 2)", {"logits": _f32(n((2, 3, 4)))},
                                  _f32(rng.integers(0, 2, (2, 3, 4))), None),
        "mvn_tril": ("D.MultivariateNormal(loc, scale_tril=tril)", {"loc": _f32(n(3)), "tril": _tril(rng, 3, 3)},
                     _f32(n((5, 3))), None),
        "mvn_batch_tril": ("D.MultivariateNormal(loc, scale_tril=tril)", {"loc": _f32(n((2, 3))),
                           "tril": _tril(rng, 2, 3, 3)}, _f32(n((4, 2, 3))), None),
        "mvn_cov": ("D.MultivariateNormal(loc, cov)", {"loc": _f32(n(3)), "cov": _spd(rng, 3)}, _f32(n((5, 3))),
                    None),
        "mvn_diag_cov": ("D.MultivariateNormal(loc, torch.diag(var))", {"loc": _f32(n((2, 4))),
                         "var": _f32(u(0.1, 1, 4))}, _f32(n((2, 4))), None),
        "mvn_precision": ("D.MultivariateNormal(loc, precision_matrix=prec)", {"loc": _f32(n(3)),
                          "prec": _spd(rng, 3)}, _f32(n((5, 3))), None),
    }


def kl_cases():
    """{name: (expression of kl_divergence, {parameter: float32 array})}."""
    rng = np.random.default_rng(7)
    n, u = rng.standard_normal, rng.uniform
    low = _f32(n(8))
    return {
        "normal": ("D.kl_divergence(D.Normal(l1, s1), D.Normal(l2, s2))", {"l1": _f32(n(32)),
                   "s1": _f32(np.exp(n(32))), "l2": _f32(n(32)), "s2": _f32(np.exp(n(32)))}),
        "normal_vae": ("D.kl_divergence(D.Normal(mu, std), D.Normal(torch.zeros_like(mu), torch.ones_like(mu)))",
                       {"mu": _f32(n((4, 8))), "std": _f32(np.exp(n((4, 8)) * 0.5))}),
        "categorical_probs": ("D.kl_divergence(D.Categorical(p), D.Categorical(q))",
                              {"p": _f32(u(0.1, 2, (6, 5))), "q": _f32(u(0.1, 2, (6, 5)))}),
        "categorical_logits": ("D.kl_divergence(D.Categorical(logits=p), D.Categorical(logits=q))",
                               {"p": _f32(n((6, 5)) * 2), "q": _f32(n((6, 5)) * 2)}),
        "categorical_zero": ("D.kl_divergence(D.Categorical(p), D.Categorical(q))",
                             {"p": _f32([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.5, 0.5, 0.0]]),
                              "q": _f32([[0.3, 0.3, 0.4], [0.0, 0.5, 0.5], [0.0, 1.0, 0.0]])}),
        "bernoulli": ("D.kl_divergence(D.Bernoulli(p), D.Bernoulli(q))", {"p": _f32(u(0.05, 0.95, 16)),
                      "q": _f32(u(0.05, 0.95, 16))}),
        "bernoulli_logits": ("D.kl_divergence(D.Bernoulli(logits=p), D.Bernoulli(logits=q))",
                             {"p": _f32(n(16) * 3), "q": _f32(n(16) * 3)}),
        "bernoulli_edges": ("D.kl_divergence(D.Bernoulli(p), D.Bernoulli(q))",
                            {"p": _f32([0.0, 1.0, 0.3, 0.3, 0.0, 1.0]), "q": _f32([0.4, 0.6, 0.0, 1.0, 0.0, 1.0])}),
        "independent": ("D.kl_divergence(D.Independent(D.Normal(l1, s1), 1), D.Independent(D.Normal(l2, s2), 1))",
                        {"l1": _f32(n((4, 3))), "s1": _f32(u(0.5, 2, (4, 3))), "l2": _f32(n((4, 3))),
                         "s2": _f32(u(0.5, 2, (4, 3)))}),
        "onehot": ("D.kl_divergence(D.OneHotCategorical(p), D.OneHotCategorical(q))",
                   {"p": _f32(u(0.1, 2, (3, 4))), "q": _f32(u(0.1, 2, (3, 4)))}),
        "uniform": ("D.kl_divergence(D.Uniform(l1, h1), D.Uniform(l2, h2))",
                    {"l1": low, "h1": _f32(low + 1), "l2": _f32(low - u(-0.5, 1, 8)), "h2": _f32(low + 2)}),
        "uniform_normal": ("D.kl_divergence(D.Uniform(l1, h1), D.Normal(l2, s2))", {"l1": low, "h1": _f32(low + 1),
                           "l2": _f32(n(8)), "s2": _f32(u(0.5, 2, 8))}),
        "normal_uniform": ("D.kl_divergence(D.Normal(l1, s1), D.Uniform(l2, h2))", {"l1": _f32(n(3)),
                           "s1": _f32([1, 2, 3]), "l2": _f32([0, 0, 0]), "h2": _f32([1, 1, 1])}),
        "mvn": ("D.kl_divergence(D.MultivariateNormal(l1, scale_tril=t1), D.MultivariateNormal(l2, scale_tril=t2))",
                {"l1": _f32(n((2, 3))), "t1": _tril(rng, 2, 3, 3), "l2": _f32(n(3)), "t2": _tril(rng, 3, 3)}),
        "mvn_cov": ("D.kl_divergence(D.MultivariateNormal(l1, c1), D.MultivariateNormal(l2, c2))",
                    {"l1": _f32(n(3)), "c1": _spd(rng, 3), "l2": _f32(n(3)), "c2": _spd(rng, 3)}),
    }


# Expressions that raise (validate_args is on by default, as in PyTorch).
ERRORS = [
    "D.Normal(torch.tensor([0.]), torch.tensor([-1.]))", "D.Normal(0., -1.)", "D.Normal(0., 0.)",
    "D.Normal(torch.tensor([float('nan')]), torch.tensor([1.]))", "D.Normal('a', 1.)",
    "D.Normal(torch.zeros(2), torch.ones(3))",
    "D.Normal(torch.zeros(2), torch.ones(2)).log_prob(torch.zeros(3))",
    "D.Normal(0., 1.).log_prob(0.5)",
    "D.Categorical(torch.tensor([-0.1, 1.1]))", "D.Categorical(torch.tensor([0.5, float('nan')]))",
    "D.Categorical()", "D.Categorical(torch.ones(2), torch.ones(2))", "D.Categorical(torch.tensor(1.))",
    "D.Categorical(logits=torch.tensor(1.))",
    "D.Categorical(torch.tensor([0.5, 0.5])).log_prob(torch.tensor(2))",
    "D.Categorical(torch.tensor([0.5, 0.5])).log_prob(torch.tensor([0.5]))",
    "D.Bernoulli(torch.tensor([1.5]))", "D.Bernoulli(-0.5)", "D.Bernoulli()", "D.Bernoulli(0.3, 0.1)",
    "D.Bernoulli(torch.tensor([0.5])).log_prob(torch.tensor([0.5]))",
    "D.Uniform(torch.tensor([1.]), torch.tensor([0.]))", "D.Uniform(0., 0.)",
    "D.Uniform(0., 1.).log_prob(torch.tensor(2.))",
    "D.Independent(D.Normal(0., 1.), 1)",
    "D.OneHotCategorical(torch.ones(3)).log_prob(torch.tensor([1., 1., 0.]))",
    "D.MultivariateNormal(torch.zeros(2))", "D.MultivariateNormal(torch.tensor(0.), torch.eye(2))",
    "D.MultivariateNormal(torch.zeros(2), torch.ones(2))",
    "D.MultivariateNormal(torch.zeros(2), scale_tril=torch.ones(2))",
    "D.MultivariateNormal(torch.zeros(2), scale_tril=torch.ones(2, 2))",
    "D.MultivariateNormal(torch.zeros(2), torch.tensor([[1., 2.], [2., 1.]]))",
    "D.MultivariateNormal(torch.zeros(2), torch.tensor([[1., 0.5], [0., 1.]]))",
    "D.MultivariateNormal(torch.zeros(2), torch.eye(2)).log_prob(torch.zeros(3))",
    "D.kl_divergence(D.Normal(0., 1.), D.Categorical(torch.ones(2)))",
    "D.kl_divergence(D.Normal(0., 1.), D.Bernoulli(0.5))",
    "D.kl_divergence(D.MultivariateNormal(torch.zeros(2), torch.eye(2)), "
    "D.MultivariateNormal(torch.zeros(3), torch.eye(3)))",
    "D.Normal(0., 1.).sample(3)",
]


def _array(t):
    """A tensor as JSON: dtype, shape and its values flattened (float32 values are exact as Python floats)."""
    return {"dtype": str(t.dtype), "shape": list(t.shape), "values": t.detach().reshape(-1).tolist()}


def _tensors(torch, params):
    """Fresh leaf tensors for the parameters (floating ones require grad)."""
    return {k: torch.tensor(np.asarray(v).tolist(), requires_grad=np.asarray(v).dtype.kind == "f")
            for k, v in params.items()}


def _build(torch, expression, params):
    leaves = _tensors(torch, params)
    return eval(expression, {"torch": torch, "D": torch.distributions, **leaves}), leaves


def _value(torch, v):
    return torch.tensor(np.asarray(v).tolist())


def _with_gradients(torch, expression, params, compute):
    """compute(distribution) and the gradients of its sum with respect to each parameter (None: none reached it)."""
    d, leaves = _build(torch, expression, params)
    out = compute(d)
    result = {"value": _array(out)}
    if out.requires_grad:
        out.sum().backward()
        result["grads"] = {k: None if t.grad is None else _array(t.grad) for k, t in leaves.items()}
    return result


def _maybe(fn):
    """fn() as JSON, or the name of the exception it raised."""
    try:
        return _array(fn())
    except Exception as e:          # noqa: BLE001  (NotImplementedError for what a distribution lacks)
        return {"raises": type(e).__name__}


def measure(torch, expression, params, value, probs):
    """Everything recorded about one distribution case, under the torch module given."""
    d, _ = _build(torch, expression, params)
    out = {"repr": repr(d), "batch_shape": list(d.batch_shape), "event_shape": list(d.event_shape),
           "has_rsample": d.has_rsample}
    for name in QUANTITIES:
        out[name] = _maybe(lambda: getattr(d, name) if name not in ("entropy", "perplexity") else getattr(d, name)())
    if "logits" in d.arg_constraints:           # both parameterisations, normalised as PyTorch normalises them
        out["probs"], out["logits"] = _array(d.probs), _array(d.logits)
    for name in ("entropy",) + (("log_prob", "cdf") if value is not None else ()):
        try:
            out[f"{name}+grad"] = _with_gradients(torch, expression, params, lambda dd: (
                dd.entropy() if name == "entropy" else getattr(dd, name)(_value(torch, value))))
        except NotImplementedError:
            out[f"{name}+grad"] = {"raises": "NotImplementedError"}
    if probs is not None:
        out["icdf"] = _maybe(lambda: d.icdf(_value(torch, probs)))
    if d.has_enumerate_support:
        out["enumerate_support"] = _array(d.enumerate_support())
        out["enumerate_support_unexpanded"] = _array(d.enumerate_support(expand=False))
    wide = d.expand((2,) + tuple(d.batch_shape))
    out["expand"] = {"repr": repr(wide), "batch_shape": list(wide.batch_shape), "mean": _maybe(lambda: wide.mean)}
    with torch.no_grad():
        samples = [d.sample(), d.sample((2, 3))] + ([d.rsample((4,))] if d.has_rsample else [])
        out["samples"] = [[str(s.dtype), list(s.shape)] for s in samples]
        out["log_prob_of_samples"] = list(d.log_prob(samples[1]).shape)
    return out


def kl(torch, expression, params):
    """kl_divergence and its gradients for one KL case."""
    return _with_gradients(torch, expression, params, lambda d: d)


def error(torch, expression):
    """[exception type name, message] of an expression that raises (None if it does not)."""
    try:
        eval(expression, {"torch": torch, "D": torch.distributions})
    except Exception as e:          # noqa: BLE001
        return [type(e).__name__, str(e)]
    return None


def _jsonable(params):
    return {k: np.asarray(v).tolist() for k, v in params.items()}


def main():
    import torch
    torch.manual_seed(0)
    out = {"torch": torch.__version__, "cases": {}, "kl": {}, "errors": {}}
    for name, (expression, params, value, probs) in cases().items():
        out["cases"][name] = {"expression": expression, "params": _jsonable(params),
                              "value": None if value is None else np.asarray(value).tolist(),
                              "probs": None if probs is None else np.asarray(probs).tolist(),
                              "expected": measure(torch, expression, params, value, probs)}
    for name, (expression, params) in kl_cases().items():
        out["kl"][name] = {"expression": expression, "params": _jsonable(params),
                           "expected": kl(torch, expression, params)}
    for expression in ERRORS:
        out["errors"][expression] = error(torch, expression)
    OUT.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(out['cases'])} cases, {len(out['kl'])} KL cases, {len(out['errors'])} errors "
          f"({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()

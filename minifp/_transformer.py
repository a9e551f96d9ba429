"""A tiny transformer on the PyTorch face, with three places where float16 overflows in real models (lesson 09,
`minifp demo transformer-overflow`).

Each place comes as a naive piece and its fix, passed to the model as classes:

    scores   NaiveScores (q k^T, then / sqrt(d))   Scores (q / sqrt(d), then k^T: the product stays in range)
    softmax  NaiveSoftmax (exp(x) / sum: exp        nn.Softmax (subtracts the max first, as PyTorch's does)
             overflows float16 above log(65504) = 11.09)
    norm     NaiveLayerNorm (mean of squares in     nn.LayerNorm (statistics in float32: autocast lists
             the input's dtype: overflows once      layer_norm among its float32 ops)
             |x - mean| > sqrt(65504) = 256)

`CASES` sets the weights at scales where one of them goes wrong the way it does in large models.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

__all__ = ["NaiveScores", "Scores", "NaiveSoftmax", "NaiveLayerNorm", "TinyTransformer", "CASES", "NAIVE",
           "FIXED", "model_for", "run_case", "layer_maxima"]

from .torch import nn                        # noqa: E402  (the face: this module is loaded only when asked)
from . import torch                          # noqa: E402


class NaiveScores(nn.Module):
    """Attention logits as often written: q @ k^T in the compute dtype, scaled afterwards."""

    def forward(self, q, k):
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


class Scores(nn.Module):
    """Attention logits scaled before the product, so that q @ k^T never holds the unscaled sum."""

    def forward(self, q, k):
        return (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)


class NaiveSoftmax(nn.Module):
    """softmax written from its definition: exp(x) / sum(exp(x)), no max subtracted."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        e = x.exp()
        return e / e.sum(self.dim, keepdim=True)


class NaiveLayerNorm(nn.Module):
    """Layer norm written by hand: its mean of squares is computed in the input's dtype."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x):
        d = x - x.mean(-1, keepdim=True)
        var = (d * d).mean(-1, keepdim=True)
        return d / (var + self.eps).sqrt() * self.weight + self.bias


class Attention(nn.Module):
    """Multi-head self-attention from nn.Linear projections and the given scores and softmax modules."""

    def __init__(self, d_model, heads, scores, softmax):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.out = (nn.Linear(d_model, d_model) for _ in range(4))
        self.scores, self.softmax = scores(), softmax(dim=-1)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (p(x).view(b, t, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        y = self.softmax(self.scores(q, k)) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class TinyTransformer(nn.Module):
    """features -> nn.Linear embedding -> one pre-norm block (attention, GELU MLP) -> the token states."""

    def __init__(self, features=16, d_model=64, heads=2, scores=Scores, softmax=nn.Softmax, norm=nn.LayerNorm):
        super().__init__()
        self.embed = nn.Linear(features, d_model)
        self.ln1, self.ln2 = norm(d_model), norm(d_model)
        self.attn = Attention(d_model, heads, scores, softmax)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        h = self.embed(x)
        h = h + self.attn(self.ln1(h))
        return h + self.mlp(self.ln2(h))


NAIVE = dict(scores=NaiveScores, softmax=NaiveSoftmax, norm=NaiveLayerNorm)
FIXED = dict(scores=Scores, softmax=nn.Softmax, norm=nn.LayerNorm)


def _aligned_qk(model, std):
    """Queries and keys from one weight matrix of the given std: each token's logit with itself is |q|^2."""
    w = torch.randn(model.attn.q.weight.shape) * std
    with torch.no_grad():
        model.attn.q.weight.copy_(w)
        model.attn.k.weight.copy_(w)


def _outlier_channels(model, std, channels=2):
    """A few embedding channels of large magnitude (the 'massive activations' of large models' residuals)."""
    w = model.embed.weight.detach().numpy().copy()
    w[:channels] = torch.randn((channels, w.shape[1])).numpy() * std
    with torch.no_grad():
        model.embed.weight.copy_(torch.tensor(w))


# case -> (how the weights are set, the dtype the block runs in: "autocast" float16 or pure "half", and what it shows)
CASES = {
    "logits": (lambda m: _aligned_qk(m, 8.0), "autocast",
               "q.k over a head of 32 reaches ~1.3e5: the float16 matmul overflows before the 1/sqrt(d) scaling"),
    "softmax": (lambda m: _aligned_qk(m, 0.35), "half",
                "scaled logits ~40: exp overflows float16 above 11.09 (autocast would run exp in float32)"),
    "variance": (lambda m: _outlier_channels(m, 100.0), "autocast",
                 "residual channels of ~400: their squares pass 65504 in a float16 mean of squares"),
}


def model_for(case, pieces, seed=0):
    """The tiny transformer built from `pieces` (NAIVE or FIXED), its weights set for `case`, and its input."""
    if case not in CASES:
        raise ValueError(f"case must be one of {', '.join(CASES)}, got {case!r}")
    torch.manual_seed(seed)
    model = TinyTransformer(**pieces)
    CASES[case][0](model)
    x = torch.randn((4, 16, 16))
    model, x = model.cuda(), x.cuda()
    if CASES[case][1] == "half":
        model, x = model.half(), x.half()
    return model, x


def run_case(case, pieces, histograms=True, seed=0):
    """One forward pass of `case` with `pieces` under the numerics monitor: (report, output)."""
    from .numerics import watch
    model, x = model_for(case, pieces, seed)
    context = (torch.autocast("cuda", dtype=torch.float16) if CASES[case][1] == "autocast"
               else contextlib.nullcontext())
    with watch(model, histograms=histograms) as report, context, torch.no_grad():
        out = model(x)
    return report, out


def layer_maxima(report):
    """[(layer, log2 of the largest power of two <= max |output|, or inf)] in the order the layers ran."""
    rows = []
    for (layer, kind), h in report.histograms.items():
        if kind == "activation":
            used = np.nonzero(h.counts)[0]
            rows.append((layer, np.inf if h.nonfinite else float(h.exponents[used[-1]]) if used.size else -np.inf))
    return rows

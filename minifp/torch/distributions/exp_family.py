"""torch.distributions.ExponentialFamily: the base class of Normal and Bernoulli (their natural parameters and log
normalizer). PyTorch's generic entropy and KL divergence of a family by Bregman divergences need second-order
gradients, which minifp does not have: the families here compute both in closed form."""
from __future__ import annotations

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution whose density is exp(<t(x), theta> - F(theta) + k(x))."""

    @property
    def _natural_params(self):
        """The natural parameters theta."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log normalizer F(theta)."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """The expected carrier measure E[k(x)]."""
        raise NotImplementedError

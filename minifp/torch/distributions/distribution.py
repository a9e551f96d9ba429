"""torch.distributions.Distribution: shapes, argument and sample validation, and the interface every
distribution fills in, as PyTorch has them."""
from __future__ import annotations

import warnings

import minifp.torch as torch
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """The base class of probability distributions: batch_shape, event_shape and validate_args."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__       # on, as Python's assert is, unless python -O

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument and sample validation on or off for distributions made without validate_args=."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=torch.Size(), event_shape=torch.Size(), validate_args=None):
        self._batch_shape, self._event_shape = torch.Size(batch_shape), torch.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()
        super().__init__()

    def _check_parameters(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                          f"or initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                continue            # the other parameterisation (probs of a logits-made Categorical): not made yet
            value = getattr(self, param)
            if not constraint.check(value).all():
                raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                                 f"but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """A distribution whose parameters are expanded to batch_shape (no checks repeated)."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one sample."""
        return self._event_shape

    @property
    def arg_constraints(self):
        """{parameter name: Constraint} the parameters must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint samples lie in."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean."""
        raise NotImplementedError

    @property
    def mode(self):
        """The mode."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation."""
        return self.variance.sqrt()

    def sample(self, sample_shape=torch.Size()):
        """A sample of shape sample_shape + batch_shape + event_shape, outside the graph."""
        with torch.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=torch.Size()):
        """A reparameterised sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        """n samples (deprecated in PyTorch: sample((n,)))."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(torch.Size((n,)))

    def log_prob(self, value):
        """The log of the density (mass) at value."""
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at value."""
        raise NotImplementedError

    def icdf(self, value):
        """The inverse of the cumulative distribution function at value."""
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """All values of a discrete distribution's support, along dim 0."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, of shape batch_shape."""
        raise NotImplementedError

    def perplexity(self):
        """exp(entropy)."""
        return torch.exp(self.entropy())

    def _extended_shape(self, sample_shape=torch.Size()):
        """sample_shape + batch_shape + event_shape."""
        return torch.Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    def _validate_sample(self, value):
        """PyTorch's checks of a value given to log_prob, cdf or icdf: a tensor, of matching shape, in the support."""
        if not torch.is_tensor(value):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual_shape, expected_shape = value.size(), torch.Size(self._batch_shape + self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual_shape} vs "
                                 f"{expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          f"initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not support.check(value).all():
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        """A bare instance for expand (a subclass with its own __init__ must write its own expand)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      f"__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        shown = [k for k in self.arg_constraints if k in self.__dict__]
        return self.__class__.__name__ + "(" + ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in shown) + ")"

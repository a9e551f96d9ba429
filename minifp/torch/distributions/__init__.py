"""torch.distributions: the distributions RL policies, VAEs and tutorials use (Normal, Categorical, Bernoulli,
Uniform, Independent, MultivariateNormal, OneHotCategorical), kl_divergence and register_kl, with PyTorch's names,
shapes, checks and formulas. Written with the face's own tensor ops, so gradients flow through log_prob and
rsample; samples come from minifp's seeded stream (torch.manual_seed repeats them; they are not PyTorch's values)."""
from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .uniform import Uniform
from .._missing import missing as _missing

__all__ = ["Bernoulli", "Categorical", "Distribution", "ExponentialFamily", "Independent", "MultivariateNormal",
           "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Uniform", "constraints",
           "kl_divergence", "register_kl"]
__getattr__ = _missing("minifp.torch.distributions")

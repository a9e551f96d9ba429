"""keras.mixed_precision: dtype policies and LossScaleOptimizer."""
from .policy import (DTypePolicy, FloatDTypePolicy, Policy, dtype_policy, global_policy, set_dtype_policy,
                     set_global_policy)
from ..optimizers.loss_scale_optimizer import LossScaleOptimizer

__all__ = ["DTypePolicy", "FloatDTypePolicy", "LossScaleOptimizer", "Policy", "dtype_policy", "global_policy", "set_dtype_policy",
           "set_global_policy"]

from .._missing import missing as _missing  # noqa: E402

__getattr__ = _missing("minifp.keras.mixed_precision")

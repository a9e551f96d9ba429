"""torch.optim.swa_utils: stochastic weight averaging and EMA models (AveragedModel and its averaging functions),
the SWALR schedule, and update_bn, which recomputes BatchNorm statistics for averaged weights.

The averages are this face's tensor operations in PyTorch's order: on the CPU PyTorch's default running mean is
avg + (new - avg) / (n + 1) per tensor (bit for bit the same here), on CUDA a foreach lerp; the EMA and
get_swa_multi_avg_fn are one lerp_ per tensor, which PyTorch's CPU kernel computes with an FMA (an ulp apart).
"""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

from ... import engine
from .. import _tensor
from .._elementwise import addcdiv
from ..nn.module import Module
from ..nn.modules import _BatchNorm
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _copy(dst, src):
    """dst.copy_(src) with PyTorch's cast of src to dst's dtype (a float average into an integer buffer such as
    num_batches_tracked truncates)."""
    dst.copy_(src.to(dst.dtype))


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place exponential moving average of lists of tensors: ema.lerp_(current, 1 - decay)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with engine.no_grad():
            if ema_param_list[0].is_floating_point():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    _copy(p_ema, p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean of lists of tensors over num_averaged + 1 models."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with engine.no_grad():
            if averaged_param_list[0].is_floating_point():
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, float(1 / (num_averaged + 1)))
            elif isinstance(num_averaged, _tensor.Tensor):       # (PyTorch's addcdiv refuses integers)
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    _copy(p_avg, addcdiv(p_avg, p_model - p_avg, num_averaged + 1))
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.add_(p_model - p_avg, alpha=1.0 / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """The exponential moving average of one tensor: decay * ema + (1 - decay) * current (a new tensor)."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with engine.no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean of one tensor over num_averaged + 1 models (a new tensor)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with engine.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of model whose parameters (and, with use_buffers, buffers) are the average of the models given to
    update_parameters: the running mean by default, or what avg_fn (per tensor) or multi_avg_fn (per list) says."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor.tensor(0, dtype=_tensor.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """The averaged module's forward."""
        return self.module(*args, **kwargs)

    def _averaged(self, module):
        """The tensors averaged: parameters (and buffers with use_buffers)."""
        if self.use_buffers:
            return list(itertools.chain(module.parameters(), module.buffers()))
        return list(module.parameters())

    def update_parameters(self, model):
        """Fold model's current parameters into the average (the first call copies them)."""
        mine = [p.detach() for p in self._averaged(self.module)]
        theirs = [p.detach().to(a.device) for a, p in zip(mine, self._averaged(model))]
        first = int(self.n_averaged.item()) == 0
        with engine.no_grad():
            if first:
                for a, p in zip(mine, theirs):
                    a.copy_(p)
            else:
                self._fold(mine, theirs)
            if not self.use_buffers:        # buffers (BatchNorm's statistics) are copied, not averaged
                for b_avg, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged += 1

    def _fold(self, mine, theirs):
        """One averaging step of every tensor (PyTorch groups them by device and dtype for multi_avg_fn)."""
        if self.avg_fn is not None:
            for a, p in zip(mine, theirs):
                _copy(a, self.avg_fn(a, p, self.n_averaged.to(a.device)))
            return
        groups = {}
        for a, p in zip(mine, theirs):
            pair = groups.setdefault((a.device.type, a.dtype), ([], []))
            pair[0].append(a)
            pair[1].append(p)
        for averaged, current in groups.values():
            n_averaged = self.n_averaged.to(averaged[0].device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged, current, n_averaged)
            elif averaged[0].device.type == "cuda":      # PyTorch's foreach kernels: a lerp
                get_swa_multi_avg_fn()(averaged, current, n_averaged)
            else:                                       # the CPU's: avg + (new - avg) / (n + 1), tensor by tensor
                for a, p in zip(averaged, current):
                    _copy(a, get_swa_avg_fn()(a, p, n_averaged))


def update_bn(loader, model, device=None):
    """Recompute every BatchNorm's running statistics as the plain mean over one pass of loader (inputs, or
    (input, ...) batches) through model in training mode; momentum and training mode are restored after."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None          # a cumulative average over the batches
    with engine.no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to swa_lr over anneal_epochs steps ("cos" or "linear"), then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for value, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the schedule started from, given the current lr reached at anneal fraction alpha."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """The learning rates for this step: from the previous step's, recursively, as PyTorch computes them."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        starts = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha) for group in groups]
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(groups, starts)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """Every attribute but the optimizer and the anneal function (named by _anneal_strategy)."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore what state_dict() gave."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

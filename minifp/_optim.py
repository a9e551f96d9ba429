"""The engine's optimizer update rules, shared by every face: float32 math on arrays, one rounding per update.

A rule maps a float32 weight and gradient (NumPy or CuPy arrays) and the parameter's state dict to the new
weight; apply_rule() widens, runs it and rounds the new weight once into the parameter's own format, so a
float32 master weight keeps every small update and a float16 weight shows the ones float16 swamps. For the torch
face, a float16 or bfloat16 parameter's state is kept in its format with each op rounded (UpdateKernels), as
PyTorch keeps it. The rules follow PyTorch's CPU kernels, or with `kernels` (UpdateKernels) its CUDA ones, in
its single-tensor, foreach or fused implementation.
"""
from __future__ import annotations

import contextvars
import dataclasses
import math

import numpy as np

from . import _memory
from ._backend import array_module
from ._cudamath import powf
from ._rounding import _memory_order, round_to, widen
from ._seams import SEAMS, seam
from ._formats import float32
from ._tensor import Tensor, take

__all__ = ["UpdateKernels", "state_format", "sgd_update", "adam_update", "rmsprop_update", "adagrad_update", "adagrad_state",
           "adadelta_update", "adamax_update", "nadam_update", "radam_update", "rprop_update", "asgd_update",
           "keras_rmsprop_update", "keras_sgd_update", "keras_adam_update", "keras_nadam_update", "keras_nadam_u",
           "keras_adagrad_update",
           "keras_adamax_update", "keras_adadelta_update", "keras_ftrl_update", "keras_lion_update",
           "keras_lamb_update", "keras_adafactor_update", "keras_schedule_free_adamw_update", "keras_muon_update",
           "keras_clip_gradients",
           "update", "apply_rule", "update_weight", "check_update_rounding", "UPDATE_ROUNDINGS", "KAHAN"]


# -- update rules (shared by every face) ------------------------------------------------------
# One function per algorithm: weight w and gradient g are float32 arrays (NumPy or CuPy), `state` a dict of
# float32 arrays that the rule fills on its first call and replaces (never mutates) afterwards. The operations
# follow PyTorch's single-tensor kernels in float32, in their order (x.add(y, alpha=a) is one FMA of a*y + x,
# addcmul(t1, t2, value=v) one of (v*t1)*t2 + x, lerp PyTorch's two-branch form with one FMA each, addcdiv
# (v*t1)/t2 + x rounded three times), with every
# Python-double hyperparameter cast to float32 where the kernel casts it; bias corrections stay in double.
# Where CUDA's kernels or the foreach implementation compute otherwise, the op helpers below (and a branch where
# the foreach code orders its ops otherwise) follow them: recorded on an H200, tests/fixtures/pytorch/optim_cuda.json.
# A face calls them through apply_rule(), which widens, runs the rule and rounds the new weight once.


def _f32(x):
    return np.float32(x)


def _xp(a):
    return array_module(a)


@dataclasses.dataclass(frozen=True)
class UpdateKernels:
    """Which of PyTorch's optimizer kernels a torch rule follows: the device's ("cpu" or "cuda"), the
    implementation ("single": the single-tensor code; "foreach"; "fused") and the state's format.

    A float16 or bfloat16 fmt keeps the state in that format, each op computing in float32 and rounding its result
    into it, as PyTorch keeps a half parameter's state. On the CPU an add's alpha or number operand is then rounded
    into fmt first, and the last n mod 32 of n values go through the kernels' scalar code (AVX2's loops take two
    vectors of 16 a step), which rounds alpha * y into fmt before the add and gives maximum's NaNs another sign.
    CUDA's kernels keep numbers in float32, contract addcmul and addcdiv otherwise, and divide by a Python number
    as a product with its reciprocal (the single-tensor code) or truly (foreach)."""
    fmt: object = float32
    device: str = "cpu"
    impl: str = "single"


def state_format(kernels, update_rounding="nearest"):
    """The format of a parameter's state arrays (all but its 0-dim counts) under `kernels`, an UpdateKernels or
    None: its fmt where the weight rounds to nearest, else float32 (minifp's stochastic and Kahan update
    roundings keep float32 state)."""
    return kernels.fmt if kernels is not None and update_rounding == "nearest" else float32


# While a torch rule runs under UpdateKernels other than the CPU's single-tensor float32 ones, _KERNELS holds
# them and the op helpers below follow them; None: the rule's float32 arithmetic as it is.
_KERNELS = contextvars.ContextVar("minifp_update_kernels", default=None)


def _op(x):
    """x, one op's float32 result, rounded into the half-precision state's format (as values) where there is one."""
    kernels = _KERNELS.get()
    return x if kernels is None or kernels.fmt.is_float32 else widen(round_to(x, kernels.fmt), kernels.fmt)


def _float32_state():
    kernels = _KERNELS.get()
    return kernels is None or kernels.fmt.is_float32


def _half_on_cpu():
    kernels = _KERNELS.get()
    return kernels is not None and kernels.device == "cpu" and not kernels.fmt.is_float32


def _on_cuda(impl=None):
    """Whether the rule follows CUDA's kernels (in implementation impl, where given)."""
    kernels = _KERNELS.get()
    return kernels is not None and kernels.device == "cuda" and impl in (None, kernels.impl)


def _foreach():
    kernels = _KERNELS.get()
    return kernels is not None and kernels.impl == "foreach"


def _scalar(x):
    """An add's alpha or Python-number operand as float32, rounded into the state's format where the kernels round
    it (PyTorch's CPU kernels take it in a half tensor's dtype)."""
    return _op(np.asarray(x, np.float32))[()] if _half_on_cpu() else _f32(x)


def _state_number(x):
    """A 0-dim float32 state tensor's value as an operand of a half tensor's op: CUDA casts the device tensor into
    the tensor's dtype first; the CPU's kernels take the host scalar in float32."""
    return _f32(x) if not _on_cuda() else _op(np.asarray(x, np.float32))[()]


def _tail(a):
    """The index of a's last values in C order (PyTorch's parameter in memory), which the CPU kernels' scalar code
    computes (a computed in one piece: below PyTorch's 32768-element grain, or one thread); None off the CPU's half
    state or where there are none."""
    n = a.size % 32 if _half_on_cpu() else 0
    return _xp(a).unravel_index(np.arange(a.size - n, a.size), a.shape) if n else None


def _plus(x, number):
    """x.add(number)."""
    return _op(x + _scalar(number))


def _lerp(start, end, weight):
    """start.lerp(end, weight) as ATen computes it: the small-weight branch from start, else from end, each one
    FMA."""
    w, d = _f32(weight), end - start
    if abs(w) < 0.5:
        return _op(SEAMS.fma(_xp(d), w, d, start))
    return _op(SEAMS.fma(_xp(d), -d, _f32(1) - w, end))


def _add(x, y, alpha):
    """x.add(y, alpha=alpha): one FMA, alpha in float32 (the CPU's half-precision scalar code: alpha * y rounded
    into the format, then the sum)."""
    a = _scalar(alpha)
    out = _op(SEAMS.fma(_xp(y), a, y, x))
    tail = _tail(out)
    if tail is not None:
        out[tail] = _op(x[tail] + _op(a * y[tail]))
    return out


def _addcmul(x, a, b, value):
    """x.addcmul(a, b, value=value): value * a, then one FMA; CUDA's kernels: one FMA of a * b where value is 1,
    else of value and the rounded product a * b."""
    v = _f32(value)
    if _on_cuda():
        return _op(SEAMS.fma(_xp(x), a, b, x) if v == 1 else SEAMS.fma(_xp(x), v, a * b, x))
    return _op(SEAMS.fma(_xp(x), v * a, b, x))


def _addcdiv(x, a, b, value):
    """x.addcdiv(a, b, value=value): value * a over b, added (each rounded); CUDA's kernels: one FMA of value and
    the quotient."""
    v = _f32(value)
    return _op(SEAMS.fma(_xp(x), v, a / b, x) if _on_cuda() else x + v * a / b)


def _div(x, number):
    """x / number: true division, but CUDA's single-tensor code multiplies by the reciprocal of the number (a CPU
    scalar), taken in double and rounded to float32."""
    return _op(x * _f32(np.divide(1.0, number)) if _on_cuda("single") else x / _f32(number))


def _maximum(a, b):
    """torch.maximum as PyTorch's vectorised CPU kernel computes it: a NaN comes out with every bit set (the CPU's
    half-precision scalar code: the positive quiet NaN)."""
    xp = _xp(a)
    top = xp.maximum(a, b)
    top = xp.where(top != top, np.uint32(0xFFFFFFFF).view(np.float32), top)
    tail = _tail(top)
    if tail is not None:
        top[tail] = xp.where(top[tail] != top[tail], np.float32(np.nan), top[tail])
    return top


def _step(state):
    """Count one more step in state['step'] (a float32 0-dim array, as PyTorch keeps it); the count as a float."""
    step = state.get("step", np.zeros((), np.float32)) + np.float32(1)
    state["step"] = np.asarray(step, np.float32)
    return float(step)


def sgd_update(w, g, state, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False,
               grad_scale=None):
    """SGD with momentum (buffer seeded by the first gradient), dampening, Nesterov and L2 weight decay
    (grad_scale: a fused step's GradScaler scale, which the gradient is divided by first)."""
    if _on_cuda("fused"):
        return _fused_sgd(w, g, state, lr, momentum, dampening, nesterov, weight_decay, maximize, grad_scale)
    g = _unscaled(g, grad_scale)
    if maximize:
        g = -g
    if weight_decay:
        g = _add(g, w, weight_decay)
    if momentum:
        if "momentum_buffer" in state:
            # the speed module's kernel computes in float32, which CUDA's unfused SGD kernels do too
            step = SEAMS.sgd_momentum if _float32_state() else sgd_momentum
            w, state["momentum_buffer"] = step(w, g, state["momentum_buffer"], _f32(lr),
                                                             _f32(momentum), _f32(1 - dampening), nesterov)
            return w
        buf = state["momentum_buffer"] = g.copy(order="K")
        g = _add(g, buf, momentum) if nesterov else buf
    return _add(w, g, -lr)


@seam
def sgd_momentum(w, g, buf, lr, momentum, damped, nesterov):
    """(the new weight, the new momentum buffer) of an SGD step from an existing buffer; damped = 1 - dampening."""
    buf = _add(_op(buf * momentum), g, damped)
    step = _add(g, buf, momentum) if nesterov else buf
    return _add(w, step, -lr), buf


def adam_update(w, g, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
                decoupled=False, grad_scale=None):
    """Adam (L2 weight decay added to the gradient) or, decoupled, AdamW (the weight shrunk by 1 - lr*wd);
    grad_scale as sgd_update's."""
    xp = _xp(w)
    beta1, beta2 = betas
    if _on_cuda("fused"):
        return _fused_adam(w, g, state, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled, grad_scale)
    g = _unscaled(g, grad_scale)
    if maximize:
        g = -g
    if "exp_avg" not in state:
        state["step"] = np.zeros((), np.float32)
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_avg_sq"] = xp.zeros_like(w)
        if amsgrad:
            state["max_exp_avg_sq"] = xp.zeros_like(w)
    step = _step(state)
    if decoupled:
        w = _op(w * _f32(1 - lr * weight_decay))
    elif weight_decay:
        g = _add(g, w, weight_decay)
    state["exp_avg"] = _lerp(state["exp_avg"], g, 1 - beta1)
    state["exp_avg_sq"] = _addcmul(_op(state["exp_avg_sq"] * _f32(beta2)), g, g, 1 - beta2)
    step_size = lr / (1 - beta1**step)
    bc2_sqrt = math.sqrt(1 - beta2**step)
    second = state["exp_avg_sq"]
    if amsgrad:
        second = state["max_exp_avg_sq"] = _maximum(state["max_exp_avg_sq"], second)
    denom = _plus(_div(_op(xp.sqrt(second)), bc2_sqrt), eps)
    return _addcdiv(w, state["exp_avg"], denom, -step_size)


# CUDA's fused kernels (fused=True) load each value, compute the whole update in float32 with the hyperparameters
# cast to float32, and store the weight and the state once each, rounded into their dtype; nvcc contracts most
# a * b + c into one FMA, but not in every lane of the unrolled loops (_lanes).

def _unscaled(g, grad_scale):
    """g over a fused step's GradScaler scale (a division, as the fused kernels unscale), or g."""
    return g if grad_scale is None else g / _f32(grad_scale)


def _lanes(w):
    """Each value's lane in CUDA's multi-tensor kernels, which take 4 values a thread: its index (C order, as
    PyTorch lays a parameter out) mod 4 in the vectorised loop (n a multiple of 4), else which of the four blocks
    of 512 in 2048 it falls in."""
    index = _xp(w).arange(w.size).reshape(w.shape)
    return index % 4 if w.size % 4 == 0 else index % 2048 // 512


def _fused_sgd(w, g, state, lr, momentum, dampening, nesterov, weight_decay, maximize, grad_scale):
    """PyTorch's fused SGD on CUDA: the buffer a copy of the gradient at the first step, without dampening. With a
    GradScaler's scale, float32's vectorised loop updates lanes 0 to 2 unfused."""
    xp, fma = _xp(w), SEAMS.fma
    mom = _f32(momentum)
    g = _unscaled(g, grad_scale)
    if maximize:
        g = -g
    if weight_decay:
        g = fma(xp, _f32(weight_decay), w, g)
    if momentum:
        buf = state.get("momentum_buffer")
        buf = g.copy() if buf is None else fma(xp, _f32(1) - _f32(dampening), g, mom * buf)
        state["momentum_buffer"] = _op(buf)
        g = fma(xp, mom, buf, g) if nesterov else buf
    new = fma(xp, -_f32(lr), g, w)
    if grad_scale is not None and _float32_state() and w.size % 4 == 0:
        new = xp.where(_lanes(w) < 3, w - _f32(lr) * g, new)
    return new


def _fused_adam(w, g, state, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled, grad_scale):
    """PyTorch's fused Adam and AdamW on CUDA: the bias corrections from the device's powf, the moments as
    FMAs, the update a product, a quotient and a difference. Without amsgrad or a GradScaler's scale, nvcc
    computes Adam's L2 term unfused in lane 0."""
    xp, fma = _xp(w), SEAMS.fma
    lr, beta1, beta2, wd, eps = (_f32(v) for v in (lr, *betas, weight_decay, eps))
    if "exp_avg" not in state:
        state.update(step=np.zeros((), np.float32), exp_avg=xp.zeros_like(w), exp_avg_sq=xp.zeros_like(w))
        if amsgrad:
            state["max_exp_avg_sq"] = xp.zeros_like(w)
    step = _f32(_step(state))
    step_size = lr / (_f32(1) - powf(beta1, step))
    bc2_sqrt = np.sqrt(_f32(1) - powf(beta2, step))
    g = _unscaled(g, grad_scale)
    if maximize:
        g = -g
    if weight_decay and decoupled:
        w = fma(xp, -(lr * wd), w, w)
    elif weight_decay:
        fused = fma(xp, w, wd, g)
        g = fused if amsgrad or grad_scale is not None else xp.where(_lanes(w) == 0, g + w * wd, fused)
    m = fma(xp, beta1, state["exp_avg"], fma(xp, -beta1, g, g))
    g2 = g * g
    v = second = fma(xp, beta2, state["exp_avg_sq"], fma(xp, -beta2, g2, g2))
    if amsgrad:
        top = state["max_exp_avg_sq"]
        second = xp.where(top < v, v, top)              # std::max: a NaN maximum stays
        state["max_exp_avg_sq"] = _op(second)
    state["exp_avg"], state["exp_avg_sq"] = _op(m), _op(v)
    return w - (step_size * m) / (xp.sqrt(second) / bc2_sqrt + eps)


def rmsprop_update(w, g, state, *, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                   maximize=False):
    """RMSprop as PyTorch (and Hinton's lecture) define it: eps added after the square root, momentum on g/avg."""
    xp = _xp(w)
    if maximize:
        g = -g
    if "square_avg" not in state:
        state["step"] = np.zeros((), np.float32)
        state["square_avg"] = xp.zeros_like(w)
        if momentum > 0:
            state["momentum_buffer"] = xp.zeros_like(w)
        if centered:
            state["grad_avg"] = xp.zeros_like(w)
    _step(state)
    if weight_decay:
        g = _add(g, w, weight_decay)
    square_avg = state["square_avg"] = _addcmul(_op(state["square_avg"] * _f32(alpha)), g, g, 1 - alpha)
    if centered:
        grad_avg = state["grad_avg"] = _lerp(state["grad_avg"], g, 1 - alpha)
        avg = _op(xp.sqrt(_addcmul(square_avg, grad_avg, grad_avg, -1)))
    else:
        avg = _op(xp.sqrt(square_avg))
    avg = _plus(avg, eps)
    if momentum > 0:
        buf = state["momentum_buffer"] = _addcdiv(_op(state["momentum_buffer"] * _f32(momentum)), g, avg, 1)
        return _add(w, buf, -lr)
    return _addcdiv(w, g, avg, -lr)


def adagrad_state(w, initial_accumulator_value=0.0):
    """Adagrad's state before its first step (PyTorch makes it when the optimizer is made)."""
    xp = _xp(w)
    return {"step": np.zeros((), np.float32), "sum": xp.full(w.shape, _f32(initial_accumulator_value), np.float32)}


def adagrad_update(w, g, state, *, lr, lr_decay=0.0, weight_decay=0.0, eps=1e-10, initial_accumulator_value=0.0,
                   maximize=False, grad_scale=None):
    """Adagrad: the step lr / (1 + (step - 1)*lr_decay) over the root of the summed squared gradients; grad_scale
    as sgd_update's."""
    g = _unscaled(g, grad_scale)
    if "sum" not in state:
        state.update(adagrad_state(w, initial_accumulator_value))
    step = _step(state)
    if maximize:
        g = -g
    if weight_decay:
        g = _add(g, w, weight_decay)
    clr = lr / (1 + (step - 1) * lr_decay)
    state["sum"] = _addcmul(state["sum"], g, g, 1)
    std = _plus(_op(_xp(w).sqrt(state["sum"])), eps)
    if _foreach():          # the gradient times -clr first, then an addcdiv of value 1
        return _addcdiv(w, _op(g * _f32(-clr)), std, 1)
    return _addcdiv(w, g, std, -clr)


def adadelta_update(w, g, state, *, lr, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    """Adadelta: the step sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g, both averages decayed by rho."""
    xp = _xp(w)
    if "square_avg" not in state:
        state["step"] = np.zeros((), np.float32)
        state["square_avg"] = xp.zeros_like(w)
        state["acc_delta"] = xp.zeros_like(w)
    _step(state)
    if maximize:
        g = -g
    if weight_decay:
        g = _add(g, w, weight_decay)
    square_avg = state["square_avg"] = _addcmul(_op(state["square_avg"] * _f32(rho)), g, g, 1 - rho)
    std = _op(xp.sqrt(_plus(square_avg, eps)))
    delta = _op(_op(_op(xp.sqrt(_plus(state["acc_delta"], eps))) / std) * g)
    state["acc_delta"] = _addcmul(_op(state["acc_delta"] * _f32(rho)), delta, delta, 1 - rho)
    return _add(w, delta, -lr)


def adamax_update(w, g, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    """Adamax: the first moment over an exponentially weighted infinity norm max(beta2 * u, |g| + eps)."""
    xp = _xp(w)
    beta1, beta2 = betas
    if maximize:
        g = -g
    if "exp_avg" not in state:
        state["step"] = np.zeros((), np.float32)
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_inf"] = xp.zeros_like(w)
    step = _step(state)
    if weight_decay:
        g = _add(g, w, weight_decay)
    state["exp_avg"] = _lerp(state["exp_avg"], g, 1 - beta1)
    state["exp_inf"] = _maximum(_op(state["exp_inf"] * _f32(beta2)), _plus(xp.abs(g), eps))
    clr = lr / (1 - beta1**step)
    return _addcdiv(w, state["exp_avg"], state["exp_inf"], -clr)


def nadam_update(w, g, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, maximize=False):
    """NAdam (Dozat): Adam with Nesterov momentum on the schedule mu_t = beta1 * (1 - 0.5 * 0.96^(t * psi)), whose
    running product is the state 'mu_product' (float32, as PyTorch keeps it)."""
    xp = _xp(w)
    beta1, beta2 = betas
    if maximize:
        g = -g
    if "exp_avg" not in state:
        state["step"] = np.zeros((), np.float32)
        state["mu_product"] = np.ones((), np.float32)
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_avg_sq"] = xp.zeros_like(w)
    step = _step(state)
    bias_correction2 = 1 - beta2**step
    if weight_decay:
        if decoupled_weight_decay:
            w = _op(w * _f32(1 - lr * weight_decay))
        else:
            g = _add(g, w, weight_decay)
    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
    mu_product = state["mu_product"] = np.asarray(state["mu_product"] * _f32(mu), np.float32)
    state["exp_avg"] = _lerp(state["exp_avg"], g, 1 - beta1)
    state["exp_avg_sq"] = _addcmul(_op(state["exp_avg_sq"] * _f32(beta2)), g, g, 1 - beta2)
    if _foreach():          # the root first, then over the root of the bias correction
        denom = _plus(_div(_op(xp.sqrt(state["exp_avg_sq"])), bias_correction2**0.5), eps)
    else:
        denom = _plus(_op(xp.sqrt(_div(state["exp_avg_sq"], bias_correction2))), eps)
    mu_product_next = float(mu_product) * mu_next
    w = _addcdiv(w, g, denom, -lr * (1.0 - mu) / (1.0 - float(mu_product)))
    return _addcdiv(w, state["exp_avg"], denom, (-lr * mu_next) / (1.0 - mu_product_next))


def radam_update(w, g, state, *, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False,
                 maximize=False):
    """RAdam (Liu et al.): Adam's step times the variance rectification r_t once the SMA length rho_t passes 5,
    plain bias-corrected momentum before that."""
    xp = _xp(w)
    beta1, beta2 = betas
    if maximize:
        g = -g
    if "exp_avg" not in state:
        state["step"] = np.zeros((), np.float32)
        state["exp_avg"] = xp.zeros_like(w)
        state["exp_avg_sq"] = xp.zeros_like(w)
    step = _step(state)
    if weight_decay:
        if decoupled_weight_decay:
            w = _op(w * _f32(1 - lr * weight_decay))
        else:
            g = _add(g, w, weight_decay)
    state["exp_avg"] = _lerp(state["exp_avg"], g, 1 - beta1)
    state["exp_avg_sq"] = _addcmul(_op(state["exp_avg_sq"] * _f32(beta2)), g, g, 1 - beta2)
    bias_correction1, bias_correction2 = 1 - beta1**step, 1 - beta2**step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5 \
        if rho_t > 5.0 else 0.0
    if _foreach():
        # one buffer for both cases: 1 / ((sqrt(v) + eps) / (sqrt(bc2) * -lr * rect / bc1)) - lr * unrect / bc1
        # (rect 0: over -0.0, so the first term is -0.0), then one FMA of exp_avg and it
        unrect = 0.0 if rect > 0 else 1.0
        scale = bias_correction2**0.5 * (lr * rect / bias_correction1) * -1
        buf = _div(_plus(_op(xp.sqrt(state["exp_avg_sq"])), eps), scale)
        buf = _plus(_op(_f32(1) / buf), (lr * unrect / bias_correction1) * -1)
        return _addcmul(w, state["exp_avg"], buf, 1)
    corrected = _div(state["exp_avg"], bias_correction1)
    if rho_t <= 5.0:
        return _op(w - _op(corrected * _f32(lr)))
    # PyTorch's `scalar / tensor` is tensor.reciprocal() * scalar.
    adaptive = _op(_op(_f32(1) / _plus(_op(xp.sqrt(state["exp_avg_sq"])), eps)) * _f32(bias_correction2**0.5))
    return _op(w - _op(_op(_op(corrected * _f32(lr)) * adaptive) * _f32(rect)))


def rprop_update(w, g, state, *, lr, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    """Rprop: a per-weight step size grown by etaplus while the gradient keeps its sign and shrunk by etaminus
    (that step skipped) when it flips; the weight moves by the step size against the gradient's sign."""
    xp = _xp(w)
    if maximize:
        g = -g
    if "prev" not in state:
        state["step"] = np.zeros((), np.float32)
        state["prev"] = xp.zeros_like(w)
        state["step_size"] = _op(xp.full(w.shape, _f32(lr), np.float32))
    _step(state)
    etaminus, etaplus = (_op(np.asarray(eta, np.float32))[()] for eta in etas)    # (held in the sign tensor)
    sign = xp.sign(_op(g * state["prev"]))
    factor = sign.copy()                    # PyTorch overwrites the signs in place: a NaN stays NaN
    factor[sign > 0] = etaplus
    factor[sign < 0] = etaminus
    factor[sign == 0] = _f32(1)
    step_size = _op(xp.minimum(xp.maximum(_op(state["step_size"] * factor), _f32(step_sizes[0])),
                               _f32(step_sizes[1])))
    state["step_size"] = step_size
    g = g.copy()
    g[factor == etaminus] = 0
    state["prev"] = g
    return _op(w - xp.sign(g) * step_size)


def asgd_update(w, g, state, *, lr, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False):
    """ASGD: SGD with the step eta = lr / (1 + lambd*lr*t)^alpha and the weight decayed by 1 - lambd*eta, and the
    average 'ax' of the weights since step t0 (with weight 'mu' = 1 / max(1, t - t0))."""
    xp = _xp(w)
    if maximize:
        g = -g
    if "ax" not in state:
        state["step"] = np.zeros((), np.float32)
        state["eta"] = np.asarray(lr, np.float32)
        state["mu"] = np.ones((), np.float32)
        state["ax"] = xp.zeros_like(w)
    step = _step(state)
    if weight_decay:
        g = _add(g, w, weight_decay)
    if _foreach():
        # lambd * w added to the gradient, the step times the state's eta, and eta anew in float32 ops
        g = _add(g, w, lambd)
        w = _addcmul(w, g, _state_number(state["eta"]), -1)
        state["ax"] = _addcmul(state["ax"], _op(w - state["ax"]), _state_number(state["mu"]), 1)
        x = _f32(_f32(1) + state["step"] * _f32(lambd * lr))
        state["eta"] = np.asarray((_f32(1) / _f32(np.float64(x) ** np.float64(_f32(alpha)))) * _f32(lr), np.float32)
    else:
        eta = float(state["eta"])
        w = _op(w * _f32(1 - lambd * eta))
        w = _add(w, g, -eta)
        mu = state["mu"]
        state["ax"] = _op(state["ax"] + _op(_op(w - state["ax"]) * _state_number(mu))) if float(mu) != 1 else w.copy()
        state["eta"] = np.asarray(lr / ((1 + lambd * lr * step) ** alpha), np.float32)
    state["mu"] = np.asarray(1 / max(1, step - t0), np.float32)
    return w


def keras_rmsprop_update(w, g, state, *, lr, rho=0.9, epsilon=1e-7, momentum=0.0, centered=False):
    """RMSprop as Keras defines it (a different rule from PyTorch's): epsilon inside the root, momentum on lr*g/root."""
    xp = _xp(w)
    ms = state["velocity"] = _f32(rho) * state.get("velocity", xp.zeros_like(w)) + _f32(1 - rho) * g * g
    if centered:
        avg = state["average_gradient"] = (_f32(rho) * state.get("average_gradient", xp.zeros_like(w))
                                           + _f32(1 - rho) * g)
        denominator = ms - avg * avg + _f32(epsilon)       # Keras's order: velocity - square(avg) + epsilon
    else:
        denominator = ms + _f32(epsilon)
    increment = _f32(lr) * g / xp.sqrt(denominator)
    if momentum:
        increment = state["momentum"] = _f32(momentum) * state.get("momentum", xp.zeros_like(w)) + increment
    return w - increment


# -- Keras 3's rules (keras/src/optimizers/*.py): float32 ops in Keras's order. A Python-double hyperparameter
# meets a float32 tensor as float32 (so 1 - beta_1 is rounded after the subtraction in double); `step` is the
# optimizer's iterations + 1, which Keras shares across variables (a skipped tf.keras step still counts).


def keras_sgd_update(w, g, state, *, lr, momentum=0.0, nesterov=False):
    """Keras's SGD: m = momentum*m - lr*g; w += m (Nesterov: w += momentum*m - lr*g); plain: w -= lr*g."""
    lr = _f32(lr)
    if not momentum:
        return w - g * lr
    m = state["momentum"] = state.get("momentum", _xp(w).zeros_like(w)) * _f32(momentum) - g * lr
    if nesterov:
        return w + (m * _f32(momentum) - g * lr)
    return w + m


def keras_adam_update(w, g, state, *, lr, step, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    """Keras's Adam: bias corrections folded into alpha = lr*sqrt(1 - beta_2^t)/(1 - beta_1^t), epsilon outside."""
    xp = _xp(w)
    t = _f32(step)
    beta_1_power = _f32(beta_1) ** t
    beta_2_power = _f32(beta_2) ** t
    alpha = _f32(lr) * np.sqrt(_f32(1) - beta_2_power) / (_f32(1) - beta_1_power)
    m = state.get("momentum", xp.zeros_like(w))
    v = state.get("velocity", xp.zeros_like(w))
    m = state["momentum"] = m + (g - m) * _f32(1 - beta_1)
    v = state["velocity"] = v + (g * g - v) * _f32(1 - beta_2)
    if amsgrad:
        v = state["velocity_hat"] = xp.maximum(state.get("velocity_hat", xp.zeros_like(w)), v)
    return w - (m * alpha) / (xp.sqrt(v) + _f32(epsilon))


def keras_nadam_update(w, g, state, *, lr, step, u_product, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """Keras's Nadam; u_product is the optimizer's running product of the momentum schedule, this step included."""
    xp = _xp(w)
    b1, b2, decay = _f32(beta_1), _f32(beta_2), _f32(0.96)
    u_t = b1 * (_f32(1) - _f32(0.5) * decay ** _f32(step))
    u_t_1 = b1 * (_f32(1) - _f32(0.5) * decay ** _f32(step + 1))
    u_product_t = _f32(u_product)
    u_product_t_1 = u_product_t * u_t_1
    beta_2_power = b2 ** _f32(step)
    m = state.get("momentum", xp.zeros_like(w))
    v = state.get("velocity", xp.zeros_like(w))
    m = state["momentum"] = m + (g - m) * (_f32(1) - b1)          # here beta_1 is already a float32 tensor
    v = state["velocity"] = v + (g * g - v) * (_f32(1) - b2)
    m_hat = u_t_1 * m / (_f32(1) - u_product_t_1) + (_f32(1) - u_t) * g / (_f32(1) - u_product_t)
    v_hat = v / (_f32(1) - beta_2_power)
    return w - (m_hat * _f32(lr)) / (xp.sqrt(v_hat) + _f32(epsilon))


def keras_nadam_u(u_product, step, beta_1=0.9):
    """Nadam's running product after this step: u_product * beta_1 * (1 - 0.5 * 0.96^step), in float32."""
    return _f32(u_product) * _f32(beta_1) * (_f32(1) - _f32(0.5) * _f32(0.96) ** _f32(step))


def keras_adagrad_update(w, g, state, *, lr, initial_accumulator_value=0.1, epsilon=1e-7):
    """Keras's Adagrad: the accumulator starts at initial_accumulator_value; epsilon inside the root."""
    xp = _xp(w)
    acc = state.get("accumulator")
    if acc is None:
        acc = xp.full(w.shape, _f32(initial_accumulator_value), np.float32)
    acc = state["accumulator"] = acc + g * g
    return w - (_f32(lr) * g) / xp.sqrt(acc + _f32(epsilon))


def keras_adamax_update(w, g, state, *, lr, step, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """Keras's Adamax: m += (g - m)(1 - beta_1); u = max(beta_2 u, |g|); w -= lr m / ((1 - beta_1^t)(u + eps))."""
    xp = _xp(w)
    beta_1_power = _f32(beta_1) ** _f32(step)
    m = state.get("momentum", xp.zeros_like(w))
    m = state["momentum"] = m + (g - m) * _f32(1 - beta_1)
    u = state["norm"] = xp.maximum(_f32(beta_2) * state.get("norm", xp.zeros_like(w)), xp.abs(g))
    return w - (_f32(lr) * m) / ((_f32(1) - beta_1_power) * (u + _f32(epsilon)))


def keras_adadelta_update(w, g, state, *, lr, rho=0.95, epsilon=1e-7):
    """Keras's Adadelta: delta = -sqrt(E[dw^2] + eps) g / sqrt(E[g^2] + eps); w += lr * delta."""
    xp = _xp(w)
    rho_, one_minus_rho, eps = _f32(rho), _f32(1 - rho), _f32(epsilon)
    acc_g = state["accumulated_grad"] = (rho_ * state.get("accumulated_grad", xp.zeros_like(w))
                                         + one_minus_rho * (g * g))
    acc_d = state.get("accumulated_delta_var", xp.zeros_like(w))
    delta = -((xp.sqrt(acc_d + eps) * g) / xp.sqrt(acc_g + eps))
    state["accumulated_delta_var"] = rho_ * acc_d + one_minus_rho * (delta * delta)
    return w + _f32(lr) * delta


def _torch_pow(x, exponent):
    """x ** exponent for a Python-float exponent as PyTorch's CPU pow computes it (0.5, 2, -0.5, -1 and -2 by
    sqrt, a product or a reciprocal; others by powf)."""
    xp = _xp(x)
    special = {0.5: xp.sqrt, 2.0: lambda a: a * a, -0.5: lambda a: _f32(1) / xp.sqrt(a),
               -1.0: lambda a: _f32(1) / a, -2.0: lambda a: _f32(1) / (a * a)}
    if float(exponent) in special:
        return special[float(exponent)](x)
    return xp.power(x, _f32(exponent))


def keras_ftrl_update(w, g, state, *, lr, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                      l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                      l2_shrinkage_regularization_strength=0.0, beta=0.0):
    """Keras's FTRL-proximal: the accumulator (from initial_accumulator_value) and the linear term; the new
    weight is (clip(linear, -l1, l1) - linear) / (accum^-p / lr + 2 l2), with l2 += beta / (2 lr)."""
    xp = _xp(w)
    lr, p = _f32(lr), -learning_rate_power
    l2 = _f32(l2_regularization_strength) + _f32(beta) / (_f32(2) * lr)
    accum = state.get("accumulator")
    if accum is None:
        accum = xp.full(w.shape, _f32(initial_accumulator_value), np.float32)
    grad_to_use = g + _f32(2 * l2_shrinkage_regularization_strength) * w
    new_accum = accum + g * g
    linear = state.get("linear", xp.zeros_like(w))
    linear = state["linear"] = linear + (grad_to_use - (_torch_pow(new_accum, p) - _torch_pow(accum, p)) / lr * w)
    quadratic = _torch_pow(new_accum, p) / lr + _f32(2) * l2
    l1 = _f32(l1_regularization_strength)
    state["accumulator"] = new_accum
    return (xp.clip(linear, -l1, l1) - linear) / quadratic


def keras_lion_update(w, g, state, *, lr, beta_1=0.9, beta_2=0.99):
    """Keras's Lion: w -= lr * sign(beta_1 m + (1 - beta_1) g); m = beta_2 m + (1 - beta_2) g."""
    xp = _xp(w)
    b1, b2 = _f32(beta_1), _f32(beta_2)           # cast first: 1 - beta is a float32 subtraction here
    m = state.get("momentum", xp.zeros_like(w))
    new = w - _f32(lr) * xp.sign(m * b1 + g * (_f32(1) - b1))
    state["momentum"] = m * b2 + g * (_f32(1) - b2)
    return new


def keras_lamb_update(w, g, state, *, lr, step, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """Keras's Lamb: Adam's bias-corrected step scaled by the trust ratio ||w|| / ||step|| (1 if either is 0)."""
    xp = _xp(w)
    t = _f32(step)
    beta_1_power, beta_2_power = _f32(beta_1) ** t, _f32(beta_2) ** t
    m = state.get("momentum", xp.zeros_like(w))
    v = state.get("velocity", xp.zeros_like(w))
    m = state["momentum"] = m + (g - m) * _f32(1 - beta_1)
    v = state["velocity"] = v + (g * g - v) * _f32(1 - beta_2)
    step_ = (m / (_f32(1) - beta_1_power)) / (xp.sqrt(v / (_f32(1) - beta_2_power)) + _f32(epsilon))
    w_norm = xp.sqrt(xp.sum(w * w, dtype=np.float32))
    g_norm = xp.sqrt(xp.sum(step_ * step_, dtype=np.float32))
    ratio = w_norm / g_norm if w_norm > 0 and g_norm > 0 else _f32(1)
    return w - ratio * _f32(lr) * step_


def _rms(x):
    return np.sqrt(_xp(x).mean(x * x, dtype=np.float32))


def keras_adafactor_update(w, g, state, *, lr, step, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                           clip_threshold=1.0):
    """Keras's Adafactor: the second moment factored into row and column means (state "r", "c") for weights of
    two or more axes, kept whole ("velocity") otherwise; the step is min(lr, 1/sqrt(t)) * max(epsilon_2, rms(w))
    (Keras's relative_step caps lr at 1/sqrt(t) too, which this minimum already does)."""
    xp = _xp(w)
    t, one = _f32(step), _f32(1)
    rho_t = min(_f32(lr), one / np.sqrt(t))
    alpha_t = max(_f32(epsilon_2), _rms(w)) * rho_t
    regulated = g * g + _f32(epsilon_1)
    beta_2_t = one - t ** _f32(beta_2_decay)
    if w.ndim >= 2:
        r = state["r"] = beta_2_t * state["r"] + (one - beta_2_t) * xp.mean(regulated, axis=-1, dtype=np.float32)
        c = state["c"] = beta_2_t * state["c"] + (one - beta_2_t) * xp.mean(regulated, axis=-2, dtype=np.float32)
        v = (r / xp.mean(r, axis=-1, keepdims=True, dtype=np.float32))[..., None] * c[..., None, :]
    else:
        v = beta_2_t * state.get("velocity", xp.zeros_like(w)) + (one - beta_2_t) * regulated
    state["velocity"] = v
    u = g / xp.sqrt(v)
    u_hat = u / max(one, _rms(u) / _f32(clip_threshold))
    return w - alpha_t * u_hat


def keras_schedule_free_adamw_update(w, g, state, *, lr, step, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                                     warmup_steps=0):
    """Keras's ScheduleFreeAdamW (Defazio et al. 2024): z ("momentum", which starts as a copy of w) takes Adam-scaled
    steps, and the weight y moves to (1 - beta_1) z + beta_1 x, x the running average of the z's. x is recovered
    from y and z as Keras's torch backend does it: with z already stepped (its momentum.value is updated in place)."""
    t, one = _f32(step), _f32(1)
    b1, b2 = _f32(beta_1), _f32(beta_2)
    lr = _f32(lr)
    if warmup_steps > 0:
        lr = lr * min(t / _f32(warmup_steps), one)
    v = state.get("velocity", _xp(w).zeros_like(w))
    v = state["velocity"] = v + (g * g - v) * (one - b2)
    denom = _xp(w).sqrt(v / (one - b2 ** t)) + _f32(epsilon)
    z = state["momentum"] = state["momentum"] - (lr * g) / denom
    weight = one / t
    x_old = (w - (one - b1) * z) / b1
    x_new = (one - weight) * x_old + weight * z
    return (one - b1) * z + b1 * x_new


def keras_muon_update(w, g, state, *, lr, momentum=0.95, nesterov=True, ns_steps=5, muon_a=3.4445, muon_b=-4.7750,
                      muon_c=2.0315, rms_rate=0.2):
    """Keras's Muon step for a matrix: the momentum (Nesterov: g + momentum * m) orthogonalised by ns_steps
    Newton-Schulz iterations, scaled by sqrt(max(rows, cols)) * rms_rate."""
    m = state.get("momentum", _xp(w).zeros_like(w))
    m = state["momentum"] = m + (g + m * _f32(momentum - 1))
    direction = g + _f32(momentum) * m if nesterov else m
    update = _f32(lr) * _newton_schulz5(direction, ns_steps, _f32(muon_a), _f32(muon_b), _f32(muon_c))
    if rms_rate is not None:
        update = update * np.sqrt(_f32(max(w.shape[0], w.shape[1]))) * _f32(rms_rate)
    return w - update


def _newton_schulz5(x, steps, a, b, c):
    """Keras's zeropower_via_newtonschulz5 on a float32 matrix: x / (||x||_F + 1e-7), then
    x = a x + (b A + (c A) A) x with A = x x^T, on the wide orientation."""
    xp = _xp(x)
    tall = x.shape[-2] > x.shape[-1]
    if tall:
        x = xp.swapaxes(x, -1, -2)
    x = x / (xp.sqrt(xp.sum(x * x, axis=(-2, -1), keepdims=True, dtype=np.float32)) + _f32(1e-7))
    for _ in range(steps):
        gram = x @ xp.swapaxes(x, -1, -2)
        x = a * x + (b * gram + (c * gram) @ gram) @ x
    return xp.swapaxes(x, -1, -2) if tall else x


def keras_clip_gradients(grads, *, clipnorm=None, clipvalue=None, global_clipnorm=None):
    """Keras's _clip_gradients on float32 arrays (None kept): per-tensor norm, else global norm, else value."""
    if clipnorm and clipnorm > 0:
        return [None if g is None else _clip_by_norm(g, _f32(clipnorm)) for g in grads]
    if global_clipnorm and global_clipnorm > 0:
        present = [g for g in grads if g is not None]
        norm = np.sqrt(np.sum(np.stack([_f32(_xp(g).sum(g * g)) for g in present])), dtype=np.float32)
        clip = _f32(global_clipnorm)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = clip * np.minimum(_f32(1) / norm, _f32(1) / clip) + (norm - norm)   # NaN norm -> NaN scale
        return [None if g is None else g * scale for g in grads]
    if clipvalue and clipvalue > 0:
        v = _f32(clipvalue)
        return [None if g is None else _xp(g).clip(g, -v, v) for g in grads]
    return list(grads)


def _clip_by_norm(g, clipnorm):
    """g * clipnorm / max(||g||, clipnorm), Keras's _clip_by_norm (an all-zero g stays zero)."""
    xp = _xp(g)
    l2sum = xp.sum(g * g, dtype=np.float32)
    l2norm = xp.sqrt(l2sum) if l2sum > 0 else l2sum
    return (g * clipnorm) / xp.maximum(l2norm, clipnorm)


def update(rule, p, grad, slots, update_rounding="nearest", new_slot=None, kernels=None, **hyper):
    """One optimizer update of parameter p from grad by `rule`, with p's optimizer state `slots` (name -> tensor:
    float32, and the Kahan compensation in p's format) read and written in place: the rule's new arrays are handed
    to the slots' tensors without a copy, and a slot the rule adds is made by new_slot(name, array, fmt). Every
    face's optimizer keeps its state this way, so that it lives in one place: the slots' tensors.

    kernels (an UpdateKernels), for a torch rule: the PyTorch kernels to follow. A float16 or bfloat16 fmt there
    keeps the state's arrays (all but 0-dim counts) in it, each op of the rule rounding its result into it, as
    PyTorch's ops on a half parameter's state do; minifp's own update roundings ("stochastic", "kahan") keep
    float32 state: they round the weight only."""
    if kernels is not None and update_rounding != "nearest":
        kernels = dataclasses.replace(kernels, fmt=float32)
    arrays = {name: t.float32() if name != KAHAN and not t.fmt.is_float32 else t._data for name, t in slots.items()}
    apply_rule(rule, p, grad, arrays, update_rounding, kernels, **hyper)
    for name, a in arrays.items():
        t = slots.get(name)
        if t is None:
            fmt = p.fmt if name == KAHAN else state_format(kernels) if a.ndim else float32
            slots[name] = new_slot(name, a if name == KAHAN or fmt is float32 else round_to(a, fmt), fmt)
        elif name != KAHAN and not t.fmt.is_float32:
            take(t, a)              # (values of its format: exact)
        elif t._data is not a:      # a rule's new array is its slot's storage (float32; the compensation p's)
            t._data, t._float32 = a, None
            if _memory.WATCHED and t.device in _memory.WATCHED:
                _memory.note(a, t.device)


def apply_rule(rule, p, grad, state, update_rounding="nearest", kernels=None, **hyper):
    """Update parameter p in place by rule from grad: computed in float32, rounded once into p's format.

    grad is a tensor or an array; state is the parameter's dict of float32 arrays (filled and replaced by the
    rule). The master copy a face keeps in float32 therefore takes every small update; a float16 weight shows
    the ones float16 swamps, unless update_rounding ("stochastic" or "kahan", see update_weight) rescues them.
    With kernels (see update) the rule follows those PyTorch kernels, and where they keep half-precision state
    each of its ops rounds its result.
    """
    check_update_rounding(update_rounding)
    g32 = grad.float32() if isinstance(grad, Tensor) else np.asarray(grad, np.float32)
    w32 = _in_order_of(p.float32(), g32)
    cpu_single = kernels is None or kernels.device == "cpu" and kernels.impl == "single" and kernels.fmt.is_float32
    token = None if cpu_single else _KERNELS.set(kernels)
    try:
        with SEAMS.quiet():
            new = rule(w32, g32, state, **hyper)
    finally:
        if token is not None:
            _KERNELS.reset(token)
    # Rules return a new array (they never mutate their inputs or state), except that one may return w or g
    # itself, or a state array: then p gets a copy.
    fresh = not (new is w32 or new is g32 or any(new is v for v in state.values()))
    update_weight(p, new, state, update_rounding, fresh=fresh)


def _in_order_of(w, g):
    """w laid out in memory as g is (a copy where they differ and g is dense in some order of its axes), so that
    the rule's arrays share one order and the new weight takes the gradient's: a convolution's weight gradient
    comes taps first, channels last, and the next forward reads a kernel so laid out without a copy."""
    if w.strides == g.strides or w.shape != g.shape or g.flags.c_contiguous or _memory_order(g)[0] is None:
        return w
    out = _xp(g).empty_like(g)
    out[...] = w
    return out


# -- writing the new weight ----------------------------------------------------------------------------------

UPDATE_ROUNDINGS = ("nearest", "stochastic", "kahan")
KAHAN = "kahan_comp"        # the state key of the Kahan compensation (optimi's name for it)


def check_update_rounding(update_rounding):
    """update_rounding if it is one of UPDATE_ROUNDINGS, else a ValueError naming it and the valid choices."""
    if not isinstance(update_rounding, str) or update_rounding not in UPDATE_ROUNDINGS:
        raise ValueError(f"update_rounding: got {update_rounding!r}; valid choices: "
                         f"{', '.join(map(repr, UPDATE_ROUNDINGS))}")
    return update_rounding


def update_weight(p, new, state, update_rounding="nearest", fresh=False):
    """Write the updated weight `new` (a float32 array) into p, rounded into p's format by update_rounding.

    "nearest" (the default, today's): round to nearest even, so an update below half an ulp of w is lost.
    "stochastic": round up or down at random with the probabilities that make the result unbiased (round_to's
    stochastic mode on minifp's seeded generator: runs repeat under minifp.manual_seed, torch.manual_seed and
    tf.random.set_seed). `new` is the rule's float32 result, so its own rounding (2**-24 relative) comes first.
    "kahan": compensated summation (Zamirai et al. 2020, "Revisiting BFloat16 Training", Algorithm 2, in
    optimi's order): what p's format could not take is kept in state["kahan_comp"], an array in p's format
    that starts at zero, and added to the next update. With d = new - w, every operation rounded once into p's
    format:  u = c + d;  w' = w + u;  c' = u - (w' - w).
    A float32 weight (a master copy) takes `new` as it is whatever update_rounding says; fresh=True lets it
    take the array itself (no copy).
    """
    fmt = p.fmt
    if update_rounding == "nearest" or fmt is None or fmt.is_float32:
        if fresh:
            take(p, new)
        else:
            p.assign(new)
    elif update_rounding == "stochastic":
        p.assign(round_to(new, fmt, mode="stochastic"))
    else:
        p.assign(_kahan(p, new, state))


def _kahan(p, new, state):
    """The new weight's storage; state[KAHAN] replaced by the new compensation (both in p's format).

    The sums are formed in float64 and rounded once into p's format: float64 holds a sum of a float32 and a
    value of a format of at most 24 bits exactly unless their exponents are more than 29 apart.
    """
    fmt = p.fmt
    w = p.float32().astype(np.float64)
    c = state.get(KAHAN)
    c = _xp(w).zeros_like(w) if c is None else _as64(c, fmt)
    with np.errstate(all="ignore"):                   # inf and NaN updates go through as they would unrounded
        u = _as64(round_to(c + (new.astype(np.float64) - w), fmt), fmt)
        w_new = round_to(w + u, fmt)
        moved = _as64(round_to(_as64(w_new, fmt) - w, fmt), fmt)
        state[KAHAN] = round_to(u - moved, fmt)
    return w_new


def _as64(a, fmt):
    """Values of fmt (its storage, or float32 values) as float64."""
    a32 = a if a.dtype == np.float32 else widen(a, fmt)
    return a32.astype(np.float64)

"""torch.optim.LBFGS: limited-memory BFGS with PyTorch's step(closure), its optional strong-Wolfe line search, its
stopping rules and its state (func_evals, n_iter, the direction, the history).

The algorithm is written with this face's tensor operations on the flattened gradient, in PyTorch's order: the
curvature products (dot), the step t and the line search's interpolation mix 0-dim float32 tensors with Python
floats exactly where PyTorch's do, so every comparison and rounding happens in the same type. The parameters move
by p.add_(direction, alpha=t) in their own format, as PyTorch's do (LBFGS keeps no float32 master copy).
"""
from __future__ import annotations

import copy

from .._functions import cat
from ...engine import enable_grad, no_grad, Tensor
from . import Optimizer, _number

__all__ = ["LBFGS"]

_HISTORY = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to bounds (default [x1, x2]);
    the middle of the bounds when the cubic has no minimum."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if not d2_square >= 0:
        return (low + high) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, low), high)


class _Point:
    """One trial of the line search: step t, loss f, flat gradient g and slope gtd = g . d."""

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """(loss, flat gradient, step, evaluations) at a step satisfying the strong Wolfe conditions (Nocedal and
    Wright, algorithms 3.5 and 3.6): bracket a good step by extrapolation, then zoom in by cubic interpolation.
    (Each evaluation's gradient is a new tensor that nothing changes later, so points share them uncopied.)"""
    d_norm = d.abs().max()
    start = previous = _Point(0, f, g, gtd)
    new = _Point(t, *evaluate(t))
    evals, ls_iter = 1, 0
    while ls_iter < max_ls:
        if new.f > (f + c1 * new.t * gtd) or (ls_iter > 1 and new.f >= previous.f):
            return _zoom(evaluate, [previous, new], d_norm, f, gtd, c1, c2, tolerance_change, max_ls, ls_iter,
                         evals)
        if abs(new.gtd) <= -c2 * gtd:
            return new.f, new.g, new.t, evals
        if new.gtd >= 0:
            return _zoom(evaluate, [previous, new], d_norm, f, gtd, c1, c2, tolerance_change, max_ls, ls_iter,
                         evals)
        t = _cubic_minimum(previous.t, previous.f, previous.gtd, new.t, new.f, new.gtd,
                           bounds=(new.t + 0.01 * (new.t - previous.t), new.t * 10))
        previous, new = new, _Point(t, *evaluate(t))
        evals += 1
        ls_iter += 1
    # Out of evaluations: the better of the start and the last trial.
    return _zoom(evaluate, [start, new], d_norm, f, gtd, c1, c2, tolerance_change, max_ls, ls_iter, evals)


def _zoom(evaluate, bracket, d_norm, f, gtd, c1, c2, tolerance_change, max_ls, ls_iter, evals):
    """(loss, flat gradient, step, evaluations) at the bracket's better end once it is shrunk by cubic
    interpolation (each trial kept away from the ends) until a point satisfies the strong Wolfe conditions,
    the bracket is too short to matter or the evaluations run out."""
    insufficient = False
    low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
    while ls_iter < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        t, insufficient = _away_from_ends(t, max(a.t, b.t), min(a.t, b.t), insufficient)
        new = _Point(t, *evaluate(t))
        evals += 1
        ls_iter += 1
        if new.f > (f + c1 * t * gtd) or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
            continue
        if abs(new.gtd) <= -c2 * gtd:
            bracket[low] = new
            break
        if new.gtd * (bracket[high].t - bracket[low].t) >= 0:
            bracket[high] = bracket[low]
        bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evals


def _away_from_ends(t, top, bottom, insufficient):
    """(t, insufficient): a trial within a tenth of the bracket of an end is moved that far inside once the
    previous trial also made too little progress, or when it lies outside the bracket."""
    eps = 0.1 * (top - bottom)
    if not min(top - t, t - bottom) < eps:
        return t, False
    if insufficient or t >= top or t <= bottom:
        return (top - eps if abs(t - top) < abs(t - bottom) else bottom + eps), False
    return t, True


class LBFGS(Optimizer):
    """torch.optim.LBFGS: one parameter group; step(closure) runs up to max_iter iterations (max_eval closure
    calls), with a fixed step lr or line_search_fn="strong_wolfe"; it returns the closure's first loss."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        if not 0.0 <= _number("lr", lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _load_value(self, p, name, value, key):
        """LBFGS's state is counts, flat vectors over all parameters and lists of them: loaded as copies."""
        return copy.deepcopy(value)

    def _flat_grad(self):
        """Every parameter's gradient flattened into one vector (zeros for a parameter without one)."""
        return cat([p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1) for p in self._params], 0)

    def _move(self, t, d):
        """Each parameter += t * its slice of d (one add_ per parameter, as PyTorch)."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(d[offset:offset + n].view_as(p), alpha=float(t) if isinstance(t, Tensor) else t)
            offset += n

    def _evaluate_at(self, closure, x, d):
        """The line search's objective: (loss, flat gradient, slope) at x + t*d, the parameters then put back."""
        def evaluate(t):
            self._move(t, d)
            loss = float(closure())
            flat_grad = self._flat_grad()
            for p, saved in zip(self._params, x):
                p.copy_(saved)
            return loss, flat_grad, flat_grad.dot(d)
        return evaluate

    def step(self, closure):
        """Run the iterations; closure() (evaluated with gradients on) returns the loss after its backward()."""
        self._opt_called = True

        def with_grad():
            with enable_grad():
                return closure()
        with no_grad():
            return self._step(with_grad)

    def _step(self, closure):
        """One step's iterations; the loss of the closure's first call."""
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= group["tolerance_grad"]:
            return orig_loss
        # The history lives in `mem` during the step and goes back into the state at its end, in PyTorch's order.
        mem = {key: state.get(key) for key in _HISTORY}
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            mem["d"] = d = self._direction(state, mem, flat_grad, group["history_size"])
            if mem["prev_flat_grad"] is None:
                mem["prev_flat_grad"] = flat_grad.clone()
            else:
                mem["prev_flat_grad"].copy_(flat_grad)
            prev_loss = mem["prev_loss"] = loss
            mem["t"] = t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -group["tolerance_change"]:
                break
            loss, flat_grad, t, evals, opt_cond = self._advance(closure, group, d, t, loss, flat_grad, gtd,
                                                                max_eval - current_evals, n_iter != max_iter)
            mem["t"] = t
            current_evals += evals
            state["func_evals"] += evals
            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or d.mul(t).abs().max() <= group["tolerance_change"]
                    or abs(loss - prev_loss) < group["tolerance_change"]):
                break
        state.update(mem)
        return orig_loss

    def _advance(self, closure, group, d, t, loss, flat_grad, gtd, evals_left, evaluate_after):
        """Move the parameters along d: (loss, flat gradient, step, closure calls, whether the gradient is small).
        Without a line search the step is t and the closure runs again unless this is the last iteration."""
        search = group["line_search_fn"]
        evals, opt_cond = 0, False
        if search is not None:
            if search != "strong_wolfe":
                raise RuntimeError("only 'strong_wolfe' is supported")
            x = [p.clone() for p in self._params]
            loss, flat_grad, t, evals = _strong_wolfe(self._evaluate_at(closure, x, d), t, d, loss, flat_grad, gtd,
                                                      max_ls=evals_left)
            self._move(t, d)
            opt_cond = bool(flat_grad.abs().max() <= group["tolerance_grad"])
        else:
            self._move(t, d)
            if evaluate_after:
                loss = float(closure())
                flat_grad = self._flat_grad()
                opt_cond = bool(flat_grad.abs().max() <= group["tolerance_grad"])
                evals = 1
        return loss, flat_grad, t, evals, opt_cond

    def _direction(self, state, mem, flat_grad, history_size):
        """The next search direction: -gradient at the first iteration, else the two-loop recursion over the
        history of steps s and gradient changes y (a pair kept only when y.s > 1e-10)."""
        if state["n_iter"] == 1:
            mem.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return flat_grad.neg()
        old_dirs, old_stps, ro = mem["old_dirs"], mem["old_stps"], mem["ro"]
        y = flat_grad.sub(mem["prev_flat_grad"])
        s = mem["d"].mul(mem["t"])
        ys = y.dot(s)
        if ys > 1e-10:
            if len(old_dirs) == history_size:
                for kept in (old_dirs, old_stps, ro):
                    kept.pop(0)
            old_dirs.append(y)
            old_stps.append(s)
            ro.append(1.0 / ys)
            mem["H_diag"] = ys / y.dot(y)
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-float(al[i]))
        r = q.mul(mem["H_diag"])
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=float(al[i] - be_i))
        return r

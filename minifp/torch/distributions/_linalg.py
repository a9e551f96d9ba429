"""The two pieces of linear algebra MultivariateNormal needs, composed of the face's tensor ops so that gradients
flow through them: a Cholesky factor and a lower-triangular solve. The face has no LAPACK (torch.linalg keeps to
the norms); these loops over the n dims of an event are for the small n of policies and tutorials. PyTorch's
LAPACK sums in its own order, so results agree to float32 rounding, not bit for bit."""
from __future__ import annotations

import minifp.torch as torch

__all__ = ["cholesky", "solve_lower", "solve_lower_matrix"]


def cholesky(A):
    """The lower-triangular L with L @ L.mT = A, column by column; NaN on the diagonal where A is not positive
    definite (as LAPACK's failed factorisation, whose info the constraint reads)."""
    # Factor the symmetric part: A itself for a symmetric A (only validate_args=False lets another through, which
    # LAPACK would read by its lower triangle), and the gradient comes out symmetric, as PyTorch's cholesky_backward
    # makes it.
    A = (A + A.mT) / 2
    n = A.shape[-1]
    rows = torch.arange(n, device=A.device)
    columns = []
    for j in range(n):
        a = A[..., :, j]
        if columns:
            done = torch.stack(columns, -1)                     # L[..., :, :j]
            a = a - (done * done[..., j:j + 1, :]).sum(-1)      # A[:, j] - L[:, :j] @ L[j, :j]
        d = a[..., j:j + 1].sqrt()
        columns.append(torch.where(rows == j, d, torch.where(rows > j, a / d, torch.zeros_like(a))))
    return torch.stack(columns, -1)


def solve_lower(L, x):
    """y with L @ y = x for lower-triangular L (..., n, n) and vectors x (..., n), by forward substitution (the
    batch dims broadcast)."""
    ys = []
    for i in range(x.shape[-1]):
        r = x[..., i]
        if ys:
            r = r - (L[..., i, :i] * torch.stack(ys, -1)).sum(-1)
        ys.append(r / L[..., i, i])
    return torch.stack(ys, -1)


def solve_lower_matrix(L, B):
    """Y with L @ Y = B for lower-triangular L (..., n, n) and matrices B (..., n, m)."""
    return solve_lower(L.unsqueeze(-3), B.mT).mT

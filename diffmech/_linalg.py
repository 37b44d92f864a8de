"""Small dense linear algebra that vectorises well under `jax.vmap`.

The closure core solves many small square systems (4 unknowns for a four-bar, a
few dozen for a spatial linkage). Batched LAPACK calls on the CPU loop over the
batch one matrix at a time; an unrolled Gaussian elimination written in array
operations is instead one fused, SIMD-friendly kernel over the whole batch. Above
`_UNROLL_MAX` unknowns the unrolled code grows too large and we call
`jnp.linalg.solve`.
"""

import jax.numpy as jnp
from jaxtyping import Array, Float

_UNROLL_MAX = 4


def solve(A: Float[Array, "n n"], b: Float[Array, "n *k"]) -> Float[Array, "n *k"]:
    """Solve `A x = b` for a small square `A`.

    Gaussian elimination with partial pivoting, unrolled over the (static) size `n`;
    row exchanges are written as one-hot arithmetic so that the whole solve is
    element-wise work under `vmap`. A singular `A` gives non-finite entries, which
    the callers turn into a status.

    **Arguments:** `A` of shape `(n, n)`; `b` of shape `(n,)` or `(n, k)`.

    **Returns:** `x` with the shape of `b`.
    """
    n = A.shape[-1]
    if n > _UNROLL_MAX:
        return jnp.linalg.solve(A, b) if b.ndim == 2 else jnp.linalg.solve(A, b[:, None])[:, 0]
    vector = b.ndim == 1
    B = b[:, None] if vector else b
    B = B.astype(A.dtype)
    k_rhs = B.shape[1]
    width = n + k_rhs
    # every entry is its own array (a scalar, or a batch lane under vmap): the
    # elimination is then pure element-wise work that XLA fuses into a few kernels
    R = [[A[i, j] for j in range(n)] + [B[i, c] for c in range(k_rhs)] for i in range(n)]
    R, _ = _forward(R, n, width)
    X = [[None] * k_rhs for _ in range(n)]
    for i in reversed(range(n)):
        inv = 1.0 / R[i][i]
        for c in range(k_rhs):
            acc = R[i][n + c]
            for j in range(i + 1, n):
                acc = acc - R[i][j] * X[j][c]
            X[i][c] = acc * inv
    out = jnp.stack([jnp.stack(row) for row in X])
    return out[:, 0] if vector else out


def _pivot(R, k, n, width):
    """Partial pivoting on the rows-of-scalars matrix `R`: move the first row among
    k..n-1 with the largest |entry| in column k to row k, chosen by comparisons and
    `where` (no gathers, no reductions). Returns `(R, swapped)`."""
    mags = [jnp.abs(R[i][k]) for i in range(k, n)]
    biggest = mags[0]
    for m in mags[1:]:
        biggest = jnp.maximum(biggest, m)
    found = mags[0] == biggest
    picks = []
    for m in mags[1:]:
        pick = (m == biggest) & ~found
        found = found | pick
        picks.append(pick)
    R = list(R)
    old_k = R[k]
    new_k = list(old_k)
    for pick, i in zip(picks, range(k + 1, n)):
        new_k = [jnp.where(pick, R[i][c], new_k[c]) for c in range(width)]
        R[i] = [jnp.where(pick, old_k[c], R[i][c]) for c in range(width)]
    R[k] = new_k
    swapped = ~(mags[0] == biggest)
    return R, swapped


def _forward(R, n, width):
    """Forward elimination with partial pivoting on the rows-of-scalars matrix `R`
    (`n` rows, `width` columns): returns the upper-triangular rows and the sign of
    the row permutation."""
    sign = jnp.ones((), R[0][0].dtype)
    for k in range(n):
        R, swapped = _pivot(R, k, n, width)
        sign = jnp.where(swapped, -sign, sign)
        inv = 1.0 / R[k][k]
        for i in range(k + 1, n):
            f = R[i][k] * inv
            R[i] = [R[i][c] - f * R[k][c] if c > k else R[i][c] for c in range(width)]
    return R, sign


def det(A: Float[Array, "n n"]) -> Float[Array, ""]:
    """The determinant of a small square `A` (the same unrolled elimination as
    `solve`; LAPACK above `_UNROLL_MAX`). Its sign is a branch invariant of a
    closure: it changes only through a singular configuration."""
    n = A.shape[-1]
    if n > _UNROLL_MAX:
        return jnp.linalg.det(A)
    R, sign = _forward([[A[i, j] for j in range(n)] for i in range(n)], n, n)
    d = sign
    for k in range(n):
        d = d * R[k][k]
    return d


def condition_1(A: Float[Array, "n n"]) -> Float[Array, ""]:
    """The 1-norm condition number ‖A‖₁‖A⁻¹‖₁ (inf where `A` is singular)."""
    n = A.shape[-1]
    inv = solve(A, jnp.eye(n, dtype=A.dtype))
    c = jnp.max(jnp.sum(jnp.abs(A), axis=0)) * jnp.max(jnp.sum(jnp.abs(inv), axis=0))
    return jnp.where(jnp.isfinite(c), c, jnp.inf)

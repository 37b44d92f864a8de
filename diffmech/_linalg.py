"""Small dense linear algebra that vectorises well under `jax.vmap`.

The closure core solves many small square systems (4 unknowns for a four-bar, a
few dozen for a spatial linkage). Batched LAPACK calls on the CPU loop over the
batch one matrix at a time; an unrolled Gaussian elimination written in array
operations is instead one fused, SIMD-friendly kernel over the whole batch. Above
`UNROLL_MAX` unknowns the unrolled code grows too large: one system is solved by
LAPACK, a batch (under `vmap`) by Gaussian elimination in a loop over the columns,
each step one array operation over the whole batch (above 16 unknowns, one LAPACK
call per system in a loop, which is faster there).

**No batched LAPACK call.** jaxlib 0.10.x on the CPU runs a batched LAPACK kernel by
splitting the batch over XLA's intra-op thread pool and blocking a pool thread until
the pieces are done; two such kernels that run at the same time (independent
solves in one program, as in every parallel-mechanism step) can occupy every
thread of a 2-thread pool and wait for each other forever. Measured: the suite hung
in `parallel.inverse_kinematics` and `identify.payload`, with both pool threads in
`LuDecomposition::Kernel → ParallelBatchMap → BlockingCounter::Wait`. Batches are
therefore never handed to LAPACK here, only single systems (`tests/test_runtime.py`
runs those programs).
"""

from typing import Any

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

UNROLL_MAX = 4
_UNROLL_LOOP_MAX = (
    16  # batched: elimination (a loop over the columns) up to this size, one LAPACK call per system above
)


def solve(A: Float[Array, "n n"], b: Float[Array, "n ..."]) -> Float[Array, "n ..."]:
    """Solve `A x = b` for a small square `A`.

    Gaussian elimination with partial pivoting, unrolled over the (static) size `n`;
    row exchanges are written as one-hot arithmetic so that the whole solve is
    element-wise work under `vmap`. A singular `A` gives non-finite entries, which
    the callers turn into a status.

    **Arguments:** `A` of shape `(n, n)`; `b` of shape `(n,)` or `(n, k)`.

    **Returns:** `x` with the shape of `b`.
    """
    n = A.shape[-1]
    if n == 0:  # the empty system (a linkage its inputs place whole)
        return b
    if n > UNROLL_MAX:
        return _solve_large(A, b)
    vector = b.ndim == 1
    out, _ = _solve_unrolled(A, b[:, None] if vector else b)
    return out[:, 0] if vector else out


def step(A: Float[Array, "n n"], b: Float[Array, "n ..."]) -> Float[Array, "n ..."]:
    """`solve(A, b)` for a Newton step, whose result is read several times (the
    update, its size, the singular-step check): an unrolled solve (≤ `UNROLL_MAX`
    unknowns) is element-wise code that XLA:CPU fuses into each of those readers and
    so recomputes in each. Its result is routed through a product with the identity
    (exact for finite values; a non-finite entry stays non-finite), which XLA runs as
    its own kernel: the solve is computed once (3.7× faster: the benchmarks page,
    "Measurements behind the code").
    Larger systems are solved in a loop, whose result is already computed once.

    **Arguments:** `A` `(n, n)`; `b` `(n,)` or `(n, k)`. **Returns:** `x` like `b`.
    """
    x = solve(A, b)
    if A.shape[-1] > UNROLL_MAX:
        return x
    eye = jnp.eye(x.shape[0], dtype=x.dtype)
    return eye @ x


def _solve_unrolled(A, B):
    n = A.shape[-1]
    B = B.astype(A.dtype)
    k_rhs = B.shape[1]
    width = n + k_rhs
    # every entry is its own array (a scalar, or a batch lane under vmap): the
    # elimination is then pure element-wise work that XLA fuses into a few kernels
    R = [[A[i, j] for j in range(n)] + [B[i, c] for c in range(k_rhs)] for i in range(n)]
    R, sign = _forward(R, n, width)
    X: list[list[Any]] = [[None] * k_rhs for _ in range(n)]
    for i in reversed(range(n)):
        inv = 1.0 / R[i][i]
        for c in range(k_rhs):
            acc = R[i][n + c]
            for j in range(i + 1, n):
                acc = acc - R[i][j] * X[j][c]
            X[i][c] = acc * inv
    d = sign
    for k in range(n):
        d = d * R[k][k]
    return jnp.stack([jnp.stack(row) for row in X]), d


def solve_det(A: Float[Array, "n n"], B: Float[Array, "n k"]) -> tuple[Float[Array, "n k"], Float[Array, ""]]:
    """`(A⁻¹B, det A)` from one elimination (the pivots of `solve` and `det`, so the
    same values); no derivatives (a diagnostic: a sweep's Newton step, branch
    invariant and conditioning from one factorisation of its last Jacobian)."""
    A, B = jax.lax.stop_gradient((A, B.astype(A.dtype)))
    if A.shape[-1] == 0:  # nothing to solve (a linkage its inputs place whole)
        return B, jnp.ones((), A.dtype)
    if A.shape[-1] <= UNROLL_MAX:
        return _solve_unrolled(A, B)
    return _lu_solve_det(A, B)


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
    `solve`; LAPACK above `UNROLL_MAX`). Its sign is a branch invariant of a
    closure: it changes only through a singular configuration."""
    n = A.shape[-1]
    if n > UNROLL_MAX:
        return _det_large(A)
    R, sign = _forward([[A[i, j] for j in range(n)] for i in range(n)], n, n)
    d = sign
    for k in range(n):
        d = d * R[k][k]
    return d


def condition_1(A: Float[Array, "n n"]) -> Float[Array, ""]:
    """The 1-norm condition number ‖A‖₁‖A⁻¹‖₁ (inf where `A` is singular)."""
    return condition_from_inverse(A, solve(A, jnp.eye(A.shape[-1], dtype=A.dtype)))


def condition_from_inverse(A: Float[Array, "n n"], inv: Float[Array, "n n"], columns=None) -> Float[Array, ""]:
    """`condition_1(A)` given `A⁻¹` (inf where it is not finite); with a boolean mask
    `columns`, of the block of those columns of a block-diagonal `A` (its other block
    bordering it)."""
    if A.shape[-1] == 0:  # the empty system (a linkage its inputs place whole) is perfectly conditioned
        return jnp.ones((), A.dtype)
    a, b = jnp.sum(jnp.abs(A), axis=0), jnp.sum(jnp.abs(inv), axis=0)
    if columns is not None:
        a, b = jnp.where(columns, a, 0), jnp.where(columns, b, 0)
    c = jnp.max(a) * jnp.max(b)
    return jnp.where(jnp.isfinite(c), c, jnp.inf)


# --------------------------------------------------------------------------- larger systems


def _eliminate(A, B):
    """Gaussian elimination with partial pivoting of `[A | B]`, batched over leading
    axes, as a loop over the columns (each step a few array operations on the whole
    batch). Returns `(X, det)` with `A X = B`. The loops are not unrolled: unrolled,
    each column's step is compiled anew (Stephenson-II sweep: XLA 4.3 s → 2.3 s rolled,
    run time within noise, benchmarks/bench_compile.py)."""
    n = A.shape[-1]
    M = jnp.concatenate([A, B], axis=-1)
    rows = jnp.arange(n)

    def forward(k, carry):
        M, det = carry
        col = M[..., :, k]
        p = jnp.argmax(jnp.where(rows >= k, jnp.abs(col), -1.0), axis=-1)
        row_k = M[..., k, :]
        row_p = jnp.take_along_axis(M, p[..., None, None], axis=-2)[..., 0, :]
        at_k = (rows == k)[:, None]
        at_p = (rows[:, None] == p[..., None, None]) & ~at_k
        M = jnp.where(at_k, row_p[..., None, :], jnp.where(at_p, row_k[..., None, :], M))
        pivot = row_p[..., k]
        f = jnp.where(rows > k, M[..., :, k] / pivot[..., None], 0.0)
        M = M - f[..., :, None] * row_p[..., None, :]
        det = det * jnp.where(p == k, pivot, -pivot)
        return M, det

    M, det = jax.lax.fori_loop(0, n, forward, (M, jnp.ones(A.shape[:-2], A.dtype)), unroll=False)
    U, Y = M[..., :n], M[..., n:]

    def back(i, X):
        r = n - 1 - i
        u = U[..., r, :]
        s = Y[..., r, :] - jnp.sum(jnp.where(rows > r, u, 0.0)[..., :, None] * X, axis=-2)
        return jnp.where((rows == r)[:, None], (s / u[..., r, None])[..., None, :], X)

    X = jax.lax.fori_loop(0, n, back, jnp.zeros_like(Y), unroll=False)
    return X, det


def _broadcast_batched(axis_size, in_batched, *args):
    return [a if b else jnp.broadcast_to(a, (axis_size,) + a.shape) for a, b in zip(args, in_batched)]


@jax.custom_batching.custom_vmap
def _lu_solve(A, B):
    return jnp.linalg.solve(A, B)  # one system: LAPACK


@_lu_solve.def_vmap
def _lu_solve_batched(axis_size, in_batched, A, B):
    A, B = _broadcast_batched(axis_size, in_batched, A, B)
    if A.shape[-1] > _UNROLL_LOOP_MAX:
        # large systems: one LAPACK call per system, in a loop (a batch of one is not
        # split over the thread pool); 4x faster than the elimination at 42 unknowns
        return jax.lax.map(lambda ab: _lu_solve(*ab), (A, B)), True
    return _eliminate(A, B)[0], True


@jax.custom_batching.custom_vmap
def _lu_det(A):
    return jnp.linalg.det(A)


@_lu_det.def_vmap
def _lu_det_batched(axis_size, in_batched, A):
    (A,) = _broadcast_batched(axis_size, in_batched, A)
    if A.shape[-1] > _UNROLL_LOOP_MAX:
        return jax.lax.map(_lu_det, A), True
    return _eliminate(A, jnp.zeros(A.shape[:-1] + (0,), A.dtype))[1], True


@jax.custom_batching.custom_vmap
def _lu_solve_det(A, B):
    return jnp.linalg.solve(A, B), jnp.linalg.det(A)  # one system: LAPACK


@_lu_solve_det.def_vmap
def _lu_solve_det_batched(axis_size, in_batched, A, B):
    A, B = _broadcast_batched(axis_size, in_batched, A, B)
    if A.shape[-1] > _UNROLL_LOOP_MAX:
        return jax.lax.map(lambda ab: _lu_solve_det(*ab), (A, B)), (True, True)
    return _eliminate(A, B), (True, True)


def _solve_large(A, b):
    vector = b.ndim == 1
    B = (b[:, None] if vector else b).astype(A.dtype)
    # a linear solve JAX can differentiate and transpose (derivatives are solves too)
    X = jax.lax.custom_linear_solve(
        lambda x: A @ x, B, solve=lambda _, rhs: _lu_solve(A, rhs), transpose_solve=lambda _, rhs: _lu_solve(A.T, rhs)
    )
    return X[:, 0] if vector else X


@jax.custom_jvp
def _det_large(A):
    return _lu_det(A)


@_det_large.defjvp
def _det_large_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    d = _det_large(A)
    # d det = det · tr(A⁻¹ dA)
    return d, d * jnp.trace(_solve_large(A, dA))

"""Change points along a motion: where `[J_x J_u]` loses rank, two assembly branches
meet and the motion may go on along either. The augmented systems that locate a
singular configuration (shared with `linkage.singularities`), the screen and the
certificate that `linkage.sweep` applies to every motion, and the two branches'
tangents at a change point (to pass it on the branch the caller names).

With the closure `Φ(x, u) = 0`, a change point `z* = (x*, u*)` is located by
Gauss–Newton on the consistent over-determined system `Φ = 0`, `[J_x J_u]ᵀ w = 0`,
`wᵀw = 1`; the branches through it have tangents `t = N α` in the null space `N` of
`[J_x J_u]` with `wᵀ Φ''(t, t) = 0` (the algebraic bifurcation equation: two real
roots at a simple change point).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import _cache
from .._result import RESULTS, code
from .._xla import filter_jit
from ._model import Linkage, joint_coords, prepare, prepared_residual

RANK = 1e-7  # σ_min/σ_max of [J_x J_u] below this at a located singular point: a change point


def turn_rate(lk, C, Cdot, g, o):
    """The output's angular rate about its ground pivot, times |r|² (its sign and zeros)."""
    if lk.geometry == "planar":
        r, rd = C[o, :2] - C[g, :2], Cdot[o, :2]
        return r[0] * rd[1] - r[1] * rd[0]
    return jnp.dot(C[g], jnp.cross(C[o], Cdot[o]))


def arm2(lk, C, g, o):
    """The squared distance of the output's point from its pivot's axis."""
    if lk.geometry == "planar":
        return jnp.sum((C[o, :2] - C[g, :2]) ** 2)
    return jnp.sum(jnp.cross(C[g], C[o]) ** 2)


def _systems(kind, pivot):
    """The augmented system of one kind: z ↦ G(z) (traceable), z = (x, u, aux)."""

    def G(z, prep, n, c):
        x, u, w = z[:n], z[n], z[n + 1 :]
        F = prepared_residual(x, u, prep)
        Jx = jax.jacfwd(prepared_residual)(x, u, prep)
        Ju = jax.jacfwd(prepared_residual, argnums=1)(x, u, prep)
        if kind == "input":
            return jnp.concatenate([F, Jx @ w, jnp.dot(c, w)[None] - 1.0])
        if kind == "output":
            g, o = pivot
            C, Cd = jax.jvp(lambda x_, u_: joint_coords(x_, u_, prep), (x, u), (w, jnp.ones_like(u)))
            return jnp.concatenate([F, Jx @ w + Ju, turn_rate(prep.lk, C, Cd, g, o)[None]])
        M = jnp.concatenate([Jx, Ju[:, None]], axis=1)
        return jnp.concatenate([F, M.T @ w, (jnp.dot(w, w) - 1.0)[None]])

    return G


@_cache.kept()
def at_configuration(lk: Linkage, x, u):
    """At one configuration: the residual, `[J_x J_u]` and every joint's coordinates."""
    prep = prepare(lk)
    Jx = jax.jacfwd(prepared_residual)(x, u, prep)
    Ju = jax.jacfwd(prepared_residual, argnums=1)(x, u, prep)
    return prepared_residual(x, u, prep), jnp.concatenate([Jx, Ju[:, None]], axis=1), joint_coords(x, u, prep)


@_cache.kept()
def _newton_parts(z, lk, c, pivot, kind):
    # `pivot`: the output's (ground pivot, point) joint rows as data, so that every
    # output link of a linkage shares one program
    prep = prepare(lk)
    n = lk.x0().shape[0]
    G = _systems(kind, pivot)
    return G(z, prep, n, c), jax.jacfwd(G)(z, prep, n, c)


def locate(kind, pivot, lk, z, c, n, iterations=40):
    """Newton (Gauss–Newton for a change point) on the host; (z, residual, last |Δu|, ok)."""
    du = np.inf
    z = np.asarray(z, dtype=float)
    rows = np.asarray(pivot if pivot else (0, 0), dtype=np.int32)
    for _ in range(iterations):
        G, J = (np.asarray(a) for a in _newton_parts(z, lk, np.asarray(c, float), rows, kind))
        if not (np.all(np.isfinite(G)) and np.all(np.isfinite(J))):
            return z, np.inf, np.inf, False
        dz = np.linalg.lstsq(J, -G, rcond=None)[0]
        z = z + dz
        du = abs(dz[n])
        if du <= 1e-15 * max(1.0, abs(z[n])) and np.max(np.abs(dz)) <= 1e-13 * max(1.0, np.max(np.abs(z))):
            break
    res = float(np.max(np.abs(np.asarray(at_configuration(lk, z[:n], z[n])[0]))))
    return z, res, du, bool(res <= 1e-10 and du <= 1e-12)


# the screen: an interval of a motion is searched for a change point when the relative
# smallest singular value of J_x (the inverse of its condition number) falls linearly
# into it from both sides and the two straight lines reach zero inside it at nearly
# one input (a V to zero, as at a singular point), or at a sample where it is below
# `_TINY` (a sample on the singular point itself)
INSIDE = 0.25  # the zeros may lie this fraction of the interval outside it
_AGREE = 0.5  # and this fraction of it apart
_TINY = 1e-7


def screen(t: np.ndarray, r: np.ndarray, ok: np.ndarray) -> list[int]:
    """The candidate intervals `(i, i + 1)` of one side of a motion, by `i`: `t` the
    distance along the side's path (increasing), `r` each sample's relative margin
    (1 / the closure Jacobian's condition number), `ok` its converged mask."""
    if t.shape[0] < 2:
        return []
    r = np.where(ok, r, np.nan)
    h = np.diff(t)
    both = ok[:-1] & ok[1:] & (h > 0)
    tiny = both & ((r[:-1] <= _TINY) | (r[1:] <= _TINY))
    # slopes of the margin into each interval (from its left neighbour) and out of it (to its right one)
    pad = lambda a: np.concatenate([[np.nan], a, [np.nan]])  # noqa: E731
    with np.errstate(all="ignore"):
        slope = np.diff(r) / h  # per interval
        sl, sr = pad(slope)[:-2], pad(slope)[2:]
        zl = r[:-1] / -sl / h
        zr = 1 - r[1:] / sr / h
        inside = lambda z: (z >= -INSIDE) & (z <= 1 + INSIDE)  # noqa: E731
        v = both & (sl < 0) & (sr > 0) & inside(zl) & inside(zr) & (np.abs(zl - zr) <= _AGREE)
    return [int(i) for i in np.flatnonzero(tiny | v)]


def suspect(inputs, converged, condition, codes, switch, limit):
    """Inside the eager program: whether the host should search the motion for a
    change point (the same tests as `screen` and `_first_change`): some converged
    sample's relative margin is below `_TINY`, an interval of either side of the path
    passes `screen`'s V test, or a side's first failure is a branch switch (`codes ==
    switch`) or a motion limit (`codes == limit`) approached linearly
    (`linear_approach`). The path's rows are as `sweep` orders them: 0, the
    negative inputs descending, then the others ascending (the first positive row
    follows row 0 along its side); `inputs` `(N,)`."""
    t = jnp.abs(inputs)
    N = t.shape[0]
    r = jnp.where(converged, 1.0 / condition, jnp.nan)
    idx = jnp.arange(N)
    n_neg = jnp.sum(inputs < 0)
    first_pos = n_neg + 1
    # along each side: a row's predecessor and successor (-1 / N where there is none)
    prev = jnp.where((idx == first_pos) & (n_neg > 0), 0, idx - 1)
    nxt = jnp.where((idx == n_neg) & (n_neg > 0), N, idx + 1)
    take = lambda a, i: jnp.where((i >= 0) & (i < N), a[jnp.clip(i, 0, N - 1)], jnp.nan)  # noqa: E731
    a = prev  # the interval (a, b) into each row b ≥ 1 (b the row itself)
    aa, bb = jnp.where(a >= 0, prev[jnp.clip(a, 0, N - 1)], -1), nxt
    ta, tb, taa, tbb = take(t, a), t, take(t, aa), take(t, bb)
    ra, rb, raa, rbb = take(r, a), r, take(r, aa), take(r, bb)
    h = tb - ta
    sl, sr = (ra - raa) / (ta - taa), (rbb - rb) / (tbb - tb)
    zl, zr = ra / -sl / h, 1 - rb / sr / h
    inside = lambda z: (z >= -INSIDE) & (z <= 1 + INSIDE)  # noqa: E731
    v = (idx >= 1) & (h > 0) & (sl < 0) & (sr > 0) & inside(zl) & inside(zr) & (jnp.abs(zl - zr) <= _AGREE)
    # a side's first failure b (its predecessor a converged), and the approach to it
    first = ~converged & (a >= 0) & take(converged.astype(t.dtype), a).astype(bool)
    aaa = jnp.where(aa >= 0, prev[jnp.clip(aa, 0, N - 1)], -1)
    t0, t1, t2 = take(t, aaa), taa, ta
    r0, r1, r2 = take(r, aaa), raa, ra
    s1, s2 = (r1 - r0) / (t1 - t0), (r2 - r1) / (t2 - t1)
    q1, q2 = (r1**2 - r0**2) / (t1 - t0), (r2**2 - r1**2) / (t2 - t1)
    bend = jnp.abs(s2 - s1) / jnp.maximum(jnp.abs(s2), 1e-300)
    bend2 = jnp.abs(q2 - q1) / jnp.maximum(jnp.abs(q2), 1e-300)
    zero = t2 + r2 * (t2 - t1) / (r1 - r2)
    falling = (t0 < t1) & (t1 < t2) & (r0 > r1) & (r1 > r2) & (r2 > 0)
    linear = falling & (bend < bend2) & (zero <= t2 + 1.5 * (t2 - t1))
    stopped = first & ((codes == switch) | ((codes == limit) & linear))
    return jnp.any(converged & (r <= _TINY)) | jnp.any(v) | jnp.any(stopped)


def suspect_motion(motion):
    """`suspect` of a `Motion` (its rows in the path's order)."""
    switch, limit = code(RESULTS.branch_switch), code(RESULTS.motion_limit)
    return suspect(motion.inputs, motion.converged, motion.condition, code(motion.status), switch, limit)


def linear_approach(t: np.ndarray, r: np.ndarray) -> bool:
    """Whether a motion that stopped (at the sample after the last of `t`) approached
    its stop the way it approaches a change point, its relative margin `r` falling
    linearly to zero, rather than as at a motion limit (a fold), where `r` falls as
    the square root of the distance (`r²` linear): over the last three samples, `r`'s
    second difference relative to its first is smaller than `r²`'s; and the straight
    line through the last two reaches zero within a step and a half."""
    if t.shape[0] < 3 or not np.all(np.isfinite(r[-3:])):
        return False
    (t0, t1, t2), (r0, r1, r2) = t[-3:], r[-3:]
    if not (t0 < t1 < t2 and r0 > r1 > r2 > 0):
        return False

    def bend(v):  # the second difference over the first, on the (possibly uneven) samples
        s1, s2 = (v[1] - v[0]) / (t1 - t0), (v[2] - v[1]) / (t2 - t1)
        return abs(s2 - s1) / max(abs(s2), 1e-300)

    zero = t2 + r2 * (t2 - t1) / (r1 - r2)
    return bend((r0, r1, r2)) < bend((r0**2, r1**2, r2**2)) and zero <= t2 + 1.5 * (t2 - t1)


def locate_change(lk: Linkage, x: np.ndarray, u: float):
    """A change point near the configuration `(x, u)`: Gauss–Newton on its system from
    the left singular vector of `[J_x J_u]`'s smallest singular value. Returns
    `(x*, u*, w)` where it converges to a rank drop of `[J_x J_u]` (relative smallest
    singular value below `RANK`), else None."""
    n = x.shape[0]
    M = np.asarray(at_configuration(lk, np.asarray(x, float), np.asarray(u, float))[1])
    w = np.linalg.svd(M)[0][:, -1]
    z, _, _, good = locate("change", (), lk, np.concatenate([x, [u], w]), w, n)
    if not good:
        return None
    sv = np.linalg.svd(np.asarray(at_configuration(lk, z[:n], z[n])[1]), compute_uv=False)
    if not sv[-1] <= RANK * sv[0]:
        return None
    return z[:n], float(z[n]), z[n + 1 :]


@filter_jit
def _curvature(lk: Linkage, x, u, w, d):
    """`wᵀ Φ''(d, d)` at `(x, u)`: the closure's second derivative along `d = (dx, du)`."""
    prep = prepare(lk)
    n = x.shape[0]

    def phi(s):
        return jnp.dot(w, prepared_residual(x + s * d[:n], u + s * d[n], prep))

    zero = jnp.zeros((), x.dtype)
    return jax.jvp(lambda s: jax.jvp(phi, (s,), (jnp.ones_like(s),))[1], (zero,), (jnp.ones_like(zero),))[1]


def branch_tangents(lk: Linkage, x: np.ndarray, u: float, w: np.ndarray):
    """The two branches' unit tangents `(n + 1,)` in `(x, u)` at a change point (the
    roots of the algebraic bifurcation equation), or None where they are not two real
    ones (a change point of higher order)."""
    M = np.asarray(at_configuration(lk, np.asarray(x, float), np.asarray(u, float))[1])
    N = np.linalg.svd(M)[2][-2:].T  # the null space of [J_x J_u]: two columns at a change point
    q = lambda d: float(_curvature(lk, jnp.asarray(x), jnp.asarray(u), jnp.asarray(w), jnp.asarray(d)))  # noqa: E731
    a11, a22 = q(N[:, 0]), q(N[:, 1])
    a12 = 0.5 * (q(N[:, 0] + N[:, 1]) - a11 - a22)
    disc = a12 * a12 - a11 * a22
    if not disc > 0:
        return None
    # roots of a11 α² + 2 a12 α β + a22 β² = 0, as directions (α, β)
    if abs(a11) >= abs(a22):
        roots = [np.array([-a12 + s * np.sqrt(disc), a11]) for s in (1, -1)]
    else:
        roots = [np.array([a22, -a12 + s * np.sqrt(disc)]) for s in (1, -1)]
    return [N @ (r / np.linalg.norm(r)) for r in roots]

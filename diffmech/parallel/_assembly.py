"""Forward kinematics of the Gough–Stewart platform: every real assembly for given
leg lengths.

A 6-6 platform's six distance equations `|R c_i + d − a_i| = l_i` (base joint centres
`a_i`, platform joint centres `c_i` at home, displacement `(R, d)` from home) have up to
40 complex solutions; how many are real depends on the leg lengths (Dietmaier found a
platform with all 40 real). The method is batched many-start Newton on the group: a
fixed set of starts (orientations uniform on SO(3), positions spread over the legs'
reach), each iterated by damped Newton steps `R ← exp(ω̂) R`, `d ← d + δ` on the
length residuals (the Jacobian row of leg `i` is `[(R c_i) × p_i, p_i] / l_i` with
`p_i` the leg vector: closed form, a 6×6 solve), all starts in one vectorised program;
then the converged starts are certified and merged. A polynomial homotopy would be
complete by construction but tracks 40 paths with adaptive steps, serial work that
vectorises poorly; many-start Newton is one fused batch whose completeness is checked
in the tests (platforms built with several known assemblies: each is found) and whose
failure mode (a missed assembly) shrinks with the number of starts, which the caller
sets.

A pose is certified when its leg-length residual is at round-off (≤ 1e-10 times the
longest leg) and its Jacobian is regular (a simple root: Newton's limit is then unique
in a neighbourhood, so two certified starts within `1e-6` of each other are the same
assembly); the poses returned are pairwise distinct by more than that.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .. import _cache, _linalg, _screw
from .._result import RESULTS, as_results, code
from .._validate import as_floats, is_traced
from .._xla import eager_program, filter_jit
from ._model import AbstractParallelMechanism, StewartPlatform

MAX_ASSEMBLIES = 40  # a general 6-6 platform's complex solutions (Raghavan; Wampler)
# damped steps from each start (then 3 full steps). On eight platforms built with four
# known assemblies, 15, 30 and 60 steps from 1024 starts found the same assemblies (all
# the known ones; 4096 starts no more); from 256 starts 15 steps lost one more than 30:
# twice that margin
_ITERATIONS = 30
_TURN, _REACH = 0.4, 0.4  # the largest damped step: radians, and a fraction of the mean leg
_SAME = 1e-6  # certified poses this close (rotation entries, position / mean leg) are one


class Assemblies(eqx.Module):
    """Every real assembly found for each leg-length vector (leading batch axes of the
    leg lengths first).

    - `leg_lengths` `(…, 6)`: as given;
    - `rotations` `(…, 40, 3, 3)`, `translations` `(…, 40, 3)`: each assembly's
      displacement from home (a platform point `x` at home is at `R x + d`);
      `positions` `(…, 40, 3)`: the platform's reference point there. Slots beyond
      `count` are NaN;
    - `valid` `(…, 40)`: the slots holding an assembly; `count` `(…,)` their number;
    - `residual` `(…, 40)`: each assembly's largest leg-length error (length units);
    - `condition` `(…, 40)`: the 1-norm condition number of its leg-length Jacobian
      (large near a singularity of the platform);
    - `separation` `(…,)`: the smallest distance between two returned assemblies
      (rotation entries and position over the mean leg; inf for fewer than two);
    - `status` (a `RESULTS`): `successful`; `motion_limit` where no start converged
      (no real assembly: leg lengths the platform cannot take); `singular_configuration`
      where more than 40 distinct poses were certified (the assemblies are not
      isolated; the first 40 are returned). A platform whose leg Jacobian is singular
      at every pose (platform joints on one line) gets no Newton step and no assembly.

    A pose whose Jacobian's condition number exceeds 1e12 (an assembly at a
    singularity, a multiple root) is not certified and not returned.

    Assemblies are sorted by the reference point's height, highest first.
    """

    leg_lengths: Float[Array, "*batch 6"]
    rotations: Float[Array, "*batch K 3 3"]
    translations: Float[Array, "*batch K 3"]
    positions: Float[Array, "*batch K 3"]
    valid: Bool[Array, "*batch K"]
    count: Int[Array, " *batch"]
    residual: Float[Array, "*batch K"]
    condition: Float[Array, "*batch K"]
    separation: Float[Array, " *batch"]
    status: RESULTS


@eager_program  # eagerly one program, not op by op
def anchors(mech: AbstractParallelMechanism) -> tuple[Array, Array]:
    """The six base joint centres `a_i` and platform joint centres `c_i` (at home) of
    a Gough–Stewart platform: each leg's first joint point and its attachment."""
    return (
        jnp.stack([ch.points[0] for ch in mech.chains]),
        jnp.stack([ch.attach for ch in mech.chains]),
    )


@eager_program  # eagerly one program, not op by op
def leg_lengths(mech: AbstractParallelMechanism, R, d) -> Array:
    """The six joint-centre distances `|R c_i + d − a_i|` of a Gough–Stewart platform.

    **Arguments:** `mech`: the platform; `R` `(…, 3, 3)`, `d` `(…, 3)`: the platform's
    displacement from home (a point `x` at home is at `R x + d`).

    **Returns:** the leg lengths `(…, 6)`.
    """
    a, c = anchors(mech)
    return jnp.linalg.norm(jnp.einsum("...ij,kj->...ki", R, c) + d[..., None, :] - a, axis=-1)


def _residual_jacobian(R, d, a, c, lengths):
    rc = c @ R.T
    p = rc + d - a
    f = (jnp.sum(p * p, axis=-1) - lengths**2) / (2 * lengths)  # ≈ |p| − l, exact zero set
    J = jnp.concatenate([jnp.cross(rc, p), p], axis=-1) / lengths[:, None]
    return f, J


def _newton(R, d, a, c, lengths, scale, damped: bool):
    """One Newton step on the group; damped: the step capped (`_TURN` rad, `_REACH`
    mean legs) and backtracked to the largest of 1, 1/2, …, 1/128 of it that lowers
    the squared residual (the smallest if none does)."""
    f, J = _residual_jacobian(R, d, a, c, lengths)
    s = -_linalg.solve(J, f)
    ok = jnp.all(jnp.isfinite(s))
    s = jnp.where(ok, s, 0.0)
    w, t = s[:3], s[3:]
    if not damped:
        return _screw.rotation_vector(w) @ R, d + t
    k = jnp.minimum(
        1.0, jnp.minimum(_TURN / (jnp.linalg.norm(w) + 1e-300), _REACH * scale / (jnp.linalg.norm(t) + 1e-300))
    )
    alphas = k * 0.5 ** jnp.arange(8, dtype=f.dtype)
    Rs = _screw.rotation_vector(alphas[:, None] * w) @ R
    ds = d + alphas[:, None] * t
    merit = jax.vmap(lambda R_, d_: jnp.sum(_residual_jacobian(R_, d_, a, c, lengths)[0] ** 2))(Rs, ds)
    better = merit < jnp.sum(f * f)
    i = jnp.where(jnp.any(better), jnp.argmax(better), alphas.shape[0] - 1)
    return Rs[i], ds[i]


def _quaternion_rotation(q):
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


@eager_program  # eagerly one program, not op by op
def _starts(key, n):
    """`n` orientations uniform on SO(3) (normalised Gaussian quaternions) and `n`
    standard normal offsets for the positions."""
    kq, kd = jax.random.split(key)
    q = jax.random.normal(kq, (n, 4), dtype=float)
    return _quaternion_rotation(q / jnp.linalg.norm(q, axis=-1, keepdims=True)), jax.random.normal(
        kd, (n, 3), dtype=float
    )


def _position_for(R, a, c, lengths):
    """The position that best closes the legs at orientation `R`: the differences of
    the squared-length equations are linear in `d` (5 equations, 3 unknowns), solved
    by least squares through their 3×3 normal equations."""
    b = c @ R.T - a
    e = jnp.sum(b * b, axis=-1) - lengths**2
    M = 2.0 * (b[1:] - b[0])
    rhs = e[0] - e[1:]
    return _linalg.solve(M.T @ M, M.T @ rhs)


def _one(lengths, a, c, reference, starts):
    """All certified assemblies for one leg-length vector (traceable)."""
    scale = jnp.mean(lengths)
    R0, xi = starts
    d0 = jax.vmap(lambda R, x: _position_for(R, a, c, lengths) + 0.1 * scale * x)(R0, xi)

    def solve(R, d):
        def body(_, rd):
            return _newton(rd[0], rd[1], a, c, lengths, scale, True)

        R, d = jax.lax.fori_loop(0, _ITERATIONS, body, (R, d))
        for _ in range(3):
            R, d = _newton(R, d, a, c, lengths, scale, False)
        f, J = _residual_jacobian(R, d, a, c, lengths)
        res = jnp.max(jnp.abs(jnp.linalg.norm(c @ R.T + d - a, axis=-1) - lengths))
        inv = _linalg.solve(J, jnp.eye(6, dtype=J.dtype))
        cond = _linalg.condition_from_inverse(J, inv)
        return R, d, res, cond

    R, d, res, cond = jax.vmap(solve)(R0, d0)
    tol = 1e-10 * jnp.max(lengths)
    good = (res <= tol) & jnp.isfinite(cond) & (cond < 1e12)
    # merge: a certified start is kept unless an earlier certified one is the same pose
    key = jnp.concatenate([R.reshape(-1, 9), d / scale], axis=-1)
    dist = jnp.max(jnp.abs(key[:, None, :] - key[None, :, :]), axis=-1)
    n = key.shape[0]
    earlier = jnp.arange(n)[None, :] < jnp.arange(n)[:, None]
    duplicate = jnp.any(earlier & good[None, :] & (dist < _SAME), axis=1)
    keep = good & ~duplicate
    height = jnp.einsum("nij,j->ni", R, reference)[:, 2] + d[:, 2]
    order = jnp.argsort(jnp.where(keep, -height, jnp.inf))[:MAX_ASSEMBLIES]
    valid = keep[order]
    count = jnp.sum(keep)
    nan = jnp.nan

    def pick(x):
        x = x[order]
        return jnp.where(valid.reshape(valid.shape + (1,) * (x.ndim - 1)), x, nan)

    R_k, d_k = pick(R), pick(d)
    sub = dist[order][:, order]
    both = valid[:, None] & valid[None, :] & ~jnp.eye(order.shape[0], dtype=bool)
    separation = jnp.min(jnp.where(both, sub, jnp.inf))
    return dict(
        rotations=R_k,
        translations=d_k,
        positions=jnp.einsum("kij,j->ki", R_k, reference) + d_k,
        valid=valid,
        count=jnp.minimum(count, MAX_ASSEMBLIES),
        found=count,
        residual=pick(res),
        condition=pick(cond),
        separation=separation,
    )


@filter_jit
def _solve(lengths, a, c, reference, starts):
    flat = lengths.reshape(-1, 6)
    out = jax.vmap(lambda l_: _one(l_, a, c, reference, starts))(flat)
    out = jax.tree.map(lambda x: x.reshape(lengths.shape[:-1] + x.shape[1:]), out)
    found = out.pop("found")
    # more distinct certified poses than a 6-6 platform can have: its assemblies are not
    # isolated (an architecturally singular platform)
    status = jnp.where(found > MAX_ASSEMBLIES, code(RESULTS.singular_configuration), code(RESULTS.successful))
    status = as_results(jnp.where(found > 0, status, code(RESULTS.motion_limit)))
    return Assemblies(leg_lengths=lengths, status=status, **out)


def forward_kinematics(
    mech: AbstractParallelMechanism, leg_lengths, *, starts: int = 1024, seed: int = 0
) -> Assemblies:
    """Every real assembly of a Gough–Stewart platform for given leg lengths (see the
    module's notes for the method and its certificate).

    **Arguments:**

    - `mech`: a `StewartPlatform` (six legs; a leg's length is the distance between
      its base joint centre and its platform joint centre, `chain.points[0]` and
      `chain.attach`: its P joint's label plus the fixed part, `|C − A|` at home minus
      the P joint's home label).
    - `leg_lengths`: `(6,)` or `(…, 6)` positive lengths; a batch is solved in one
      program.
    - `starts`: Newton starts per leg-length vector (more: fewer missed assemblies,
      proportionally more work).
    - `seed`: the starts' random key.

    **Returns:** an `Assemblies` (no real assembly: `count` 0, `status`
    `motion_limit`, not an error).
    """
    owner = "parallel.forward_kinematics"
    if not isinstance(mech, StewartPlatform) and not (
        isinstance(mech, AbstractParallelMechanism) and len(mech.chains) == 6 and mech.task_dim == 6
    ):
        raise ValueError(
            f"{owner}: `mech` must be a six-legged platform (a StewartPlatform); got {type(mech).__name__}"
        )
    if isinstance(starts, bool) or not isinstance(starts, (int, np.integer)) or starts < 1:
        raise ValueError(f"{owner}: `starts` must be a positive integer; got {starts!r}")
    if not is_traced(leg_lengths):
        v = as_floats(owner, "leg_lengths", leg_lengths)
        if v.ndim < 1 or v.shape[-1] != 6:
            raise ValueError(f"{owner}: `leg_lengths` must have shape (6,) or (..., 6); got {v.shape}")
        if not np.all(np.isfinite(v)) or not np.all(v > 0):
            bad = tuple(int(i) for i in np.argwhere(~(np.isfinite(v) & (v > 0)))[0])
            raise ValueError(f"{owner}: `leg_lengths` must be finite and positive; entry {bad} is {v[bad]}")
    lengths = leg_lengths if is_traced(leg_lengths) else np.asarray(leg_lengths, dtype=float)
    return _assemblies(
        lengths, mech, np.asarray(seed, dtype=np.int64 if lengths.dtype == np.float64 else np.int32), int(starts)
    )


@_cache.kept()
def _assemblies(lengths, mech, seed, starts):
    # one program, kept compiled (`diffmech.cache`): the anchors, the starts, the solve
    a, c = anchors(mech)
    return _solve(lengths, a, c, mech.reference, _starts(jax.random.key(seed), starts))

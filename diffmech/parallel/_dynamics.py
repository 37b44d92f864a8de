"""Inverse dynamics: the wrench through every joint and the actuator forces along a
trajectory, from the Newton–Euler equations of every body or from the momentum-screw
theorem `d$M/dt = $F` (seed 004, Eqs. 28–39).

For one body with mass m, centre of mass c, inertia J (about c, space axes), twist
(ω; v) and its time derivative (β; a):

- momentum screw (about the origin) `$M = (m v_c; c × m v_c + J ω)`, `v_c = v + ω × c`;
- Method A (`"momentum"`): `d$M/dt` by `jax.jvp` along the trajectory (exact mode) or
  by a backward difference (one-step mode);
- Method B (`"newton_euler"`): `(m a_c; c × m a_c + J β + ω × J ω)`,
  `a_c = a + β × c + ω × v_c`.

Wrench solve. `w_j` is the wrench (f; τ about the origin) that the link before joint
`j` exerts through it on the link after. A body's balance
`w_in − w_out + (gravity) = d$M/dt` gives, down each chain,
`w_j = w_end + H_j` with `H_j` the sum of `h_b = d$M_b/dt − (m g; c × m g)` over the
massive links after joint `j`, and `w_end` the chain's wrench on the platform. The
unknowns are the chains' `w_end`; the equations are `ξ_jᵀ N w_j = 0` for every passive
joint (no power through a free joint) and the platform's balance
`Σ w_end = d$M_P/dt − (m_P g; c_P × m_P g) − w_ext`. The actuator force of an actuated
joint is `ξ_jᵀ N w_j` (e·f for a P joint). The printed `(CCᵀ)⁻¹` of seed 002 Eqs. (25)
and (41) is dimensionally inconsistent; we solve the square system by LU, and an
underdetermined one (redundant actuation, as the 3UPS–UPU–S) for the solution of least
Σ‖w_end‖², with its condition number and the null-space dimension reported.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .. import _cache, _linalg, _screw
from .._result import RESULTS, AbstractResult, SingularError
from .._validate import check_array, check_shape, is_traced
from . import _kinematics as _kin
from ._kinematics import Kinematics
from ._model import AbstractParallelMechanism, Chain

METHODS = ("newton_euler", "momentum")


def _cross(a, b):
    return jnp.cross(a, b)


def body_state(mass, com0, J0, R, p, V):
    """Centre of mass, inertia (space) and momentum screw of a body displaced by
    `(R, p)` from home with space twist `V = (ω; v)`."""
    c = _screw.matvec(R, com0) + p
    J = _screw.matmul(_screw.matmul(R, J0), jnp.swapaxes(R, -1, -2))
    w, v = V[..., :3], V[..., 3:]
    vc = v + _cross(w, c)
    lin = mass[..., None] * vc
    M = jnp.concatenate([lin, _cross(c, lin) + _screw.matvec(J, w)], -1)
    return c, J, M


def newton_euler(mass, c, J, V, A):
    """`d$M/dt` of a body from its twist `V = (ω; v)` and its derivative `A = (β; a)`."""
    w, v, b, a = V[..., :3], V[..., 3:], A[..., :3], A[..., 3:]
    vc = v + _cross(w, c)
    ac = a + _cross(b, c) + _cross(w, vc)
    lin = mass[..., None] * ac
    return jnp.concatenate([lin, _cross(c, lin) + _screw.matvec(J, b) + _cross(w, _screw.matvec(J, w))], -1)


def gravity_wrench(mass, c, g):
    f = jnp.broadcast_to(mass[..., None] * g, c.shape)
    return jnp.concatenate([f, _cross(c, f)], -1)


def _chain_bodies(ch: Chain, th, thd):
    """Screw matrix, and for each massive link: mass, centre of mass, inertia, twist,
    momentum screw."""
    Rs, ps = _kin.chain_poses(ch, th)
    S = _kin.chain_screws(ch, th, (Rs, ps))
    cum = jnp.cumsum(S * thd[None, :], axis=1)
    idx = jnp.asarray(ch.body_after, dtype=int)
    V = cum[:, idx].T
    c, J, M = body_state(ch.masses, ch.coms, ch.inertias, Rs[idx], ps[idx], V)
    return S, c, J, V, M


class Dynamics(AbstractResult):
    """Joint wrenches and actuator forces along a trajectory (leading axis `N`; the
    contract of every result: `diffmech._result.AbstractResult`, `masked()` masks
    `actuator_forces`).

    **Fields:**

    - `times`; `actuator_forces` `(N, n_act)` (N or N·m; order `mechanism.actuated`;
      positive when the link before the joint pushes the link after along its axis);
    - `joint_wrenches` `(N, n_joints, 6)`: `(f; τ about the origin)` through every
      joint, from the link before onto the link after (chain order, as
      `mechanism.joint_names()`); the wrenches of the chains' first joints are the
      base supports, those of their last joints act on the platform;
    - `converged` `(N,)`, `status` (per sample), `result` (the first failure);
      `condition` `(N,)` (of the matrix solved);
      `residual` `(N,)` (relative residual of the linear system);
    - `null_dim` (static): unknowns minus equations (2 for the redundantly actuated
      3UPS–UPU–S: the minimum-norm solution is reported); `method` (static).
    """

    times: Float[Array, " N"]
    actuator_forces: Float[Array, "N a"]
    joint_wrenches: Float[Array, "N n 6"]
    converged: Bool[Array, " N"]
    status: RESULTS
    condition: Float[Array, " N"]
    residual: Float[Array, " N"]
    null_dim: int = eqx.field(static=True)
    method: str = eqx.field(static=True)

    _values: ClassVar[str] = "actuator_forces"
    _inputs: ClassVar[str] = "times"


def _platform_requirement(mech, R, d, V, Mdot, f_ext):
    c, _, _ = body_state(mech.mass, mech.com, mech.inertia, R, d, V)
    ref = _screw.matvec(R, mech.reference) + d
    w_ext = jnp.concatenate([f_ext[..., :3], _cross(ref, f_ext[..., :3]) + f_ext[..., 3:]], -1)
    return Mdot - gravity_wrench(mech.mass, c, mech.gravity) - w_ext


def _solve(mech: AbstractParallelMechanism, Ss, Hs, hP):
    """One time step: chain screw matrices `Ss`, downstream requirements `Hs` (per
    joint), platform requirement `hP` → joint wrenches, actuator forces, condition,
    residual."""
    C = len(mech.chains)
    rows, rhs = [], []
    for c, (ch, S, H) in enumerate(zip(mech.chains, Ss, Hs)):
        for j in range(ch.n):
            if ch.actuated[j]:
                continue
            r = jnp.zeros(6 * C, dtype=hP.dtype).at[6 * c : 6 * c + 6].set(jnp.concatenate([S[3:, j], S[:3, j]]))
            rows.append(r)
            rhs.append(-_screw.reciprocal(S[:, j], H[j]))
    A = jnp.concatenate([jnp.stack(rows), jnp.tile(jnp.eye(6, dtype=hP.dtype), (1, C))])
    b = jnp.concatenate([jnp.stack(rhs), hP])
    m, n = A.shape
    # the solution and the inverse (for the condition number) from one solve with
    # `[b | I]`: one factorisation instead of two (Stewart, 10,000 steps: see
    # docs/benchmarks.md)
    if m == n:
        M, rhs = A, b
    elif m < n:  # underdetermined (redundant actuation): the least-norm solution
        M, rhs = A @ A.T, b
    else:
        M, rhs = A.T @ A, A.T @ b
    X = _linalg.solve(M, jnp.concatenate([rhs[:, None], jnp.eye(M.shape[0], dtype=M.dtype)], axis=1))
    cond = _linalg.condition_from_inverse(M, X[:, 1:])
    W = X[:, 0]
    if m != n:
        cond = jnp.sqrt(cond)
    if m < n:
        W = A.T @ W
    res = jnp.max(jnp.abs(A @ W - b)) / (jnp.max(jnp.abs(b)) + jnp.max(jnp.abs(A)) * jnp.max(jnp.abs(W)) + 1e-300)
    W = W.reshape(C, 6)
    wrenches, forces = [], []
    for c, (ch, S, H) in enumerate(zip(mech.chains, Ss, Hs)):
        wj = W[c][None, :] + H
        wrenches.append(wj)
        forces += [_screw.reciprocal(S[:, j], wj[j]) for j in range(ch.n) if ch.actuated[j]]
    return jnp.concatenate(wrenches), jnp.stack(forces), cond, res


def _suffix(ch: Chain, h):
    """`H_j = Σ_{b: body_after[b] ≥ j} h_b` for every joint `j` of the chain."""
    rows = []
    for j in range(ch.n):
        sel = [b for b, a in enumerate(ch.body_after) if a >= j]
        rows.append(sum((h[b] for b in sel), jnp.zeros(6, dtype=h.dtype)) if sel else jnp.zeros(6, dtype=h.dtype))
    return jnp.stack(rows)


def _null_dim(mech):
    passive = sum(1 for ch in mech.chains for a in ch.actuated if not a)
    return max(0, 6 * len(mech.chains) - passive - 6)


def solve_dynamics(mech: AbstractParallelMechanism, kin: Kinematics, f_ext, method: str) -> Dynamics:
    theta = kin.labels - mech.home_labels()

    def chain_terms(th, thd):  # each group of identical chains under one `vmap`
        return _kin.map_chains(mech, _chain_bodies, (_kin.split_joints(mech, th), _kin.split_joints(mech, thd)))

    if kin.method == "exact":

        def per_step(x, xd, xdd, fe):
            th, thd, thdd = (v[: mech.n_joints] for v in (x, xd, xdd))

            def kinem(th_, thd_, x_, xd_):
                terms = chain_terms(th_, thd_)
                z, zd = _kin.split(mech, x_)[1:], _kin.split(mech, xd_)[1:]
                R, d, V = _kin.platform_state(z[0], z[1], zd[0], zd[1])
                _, _, MP = body_state(mech.mass, mech.com, mech.inertia, R, d, V)
                return terms, (R, d, V, MP)

            (terms, plat), (dterms, dplat) = jax.jvp(kinem, (th, thd, x, xd), (thd, thdd, xd, xdd))
            Ss, hs = [], []
            for ch, (S, c, J, V, M), (_, _, _, A, Md) in zip(mech.chains, terms, dterms):
                Mdot = Md if method == "momentum" else newton_euler(ch.masses, c, J, V, A)
                Ss.append(S)
                hs.append(_suffix(ch, Mdot - gravity_wrench(ch.masses, c, mech.gravity)))
            R, d, V, MP = plat
            if method == "momentum":
                MPdot = dplat[3]
            else:
                cP, JP, _ = body_state(mech.mass, mech.com, mech.inertia, R, d, V)
                MPdot = newton_euler(mech.mass, cP, JP, V, dplat[2])
            return _solve(mech, Ss, hs, _platform_requirement(mech, R, d, V, MPdot, fe))

        out = jax.vmap(per_step)(kin.state, kin.state_rate, kin.state_accel, f_ext)
    else:
        dt = kin.times[1] - kin.times[0]
        terms = jax.vmap(chain_terms)(theta, kin.rates)
        R, d, V, A = kin.platform_R, kin.platform_d, kin.platform_twist, kin.platform_accel

        def back(a):  # backward difference along time, first sample = second (seed 002 Eq. 17)
            diff = (a[1:] - a[:-1]) / dt
            return jnp.concatenate([diff[:1], diff])

        Ss, hs = [], []
        for ch, (S, c, J, Vb, M) in zip(mech.chains, terms):
            Mdot = back(M) if method == "momentum" else newton_euler(ch.masses, c, J, Vb, back(Vb))
            Ss.append(S)
            hs.append(jax.vmap(lambda h, ch=ch: _suffix(ch, h))(Mdot - gravity_wrench(ch.masses, c, mech.gravity)))
        cP, JP, MP = body_state(mech.mass, mech.com, mech.inertia, R, d, V)
        MPdot = back(MP) if method == "momentum" else newton_euler(mech.mass, cP, JP, V, A)
        hP = _platform_requirement(mech, R, d, V, MPdot, f_ext)
        out = jax.vmap(lambda S_, H_, hp: _solve(mech, S_, H_, hp))(Ss, hs, hP)
    wrenches, forces, cond, res = out
    ok = kin.converged & jnp.isfinite(res) & (res < 1e-8) & (cond < _kin.COND_LIMIT)
    status = jax.vmap(
        lambda o, k, st: RESULTS.where(o, RESULTS.successful, RESULTS.where(k, RESULTS.singular_configuration, st))
    )(ok, kin.converged, kin.status)
    return Dynamics(
        times=kin.times,
        actuator_forces=forces,
        joint_wrenches=wrenches,
        converged=ok,
        status=status,
        condition=cond,
        residual=res,
        null_dim=_null_dim(mech),
        method=method,
    )


_dynamics_jit = _cache.kept()(solve_dynamics)


def inverse_dynamics(
    mechanism: AbstractParallelMechanism,
    trajectory,
    external_wrench=None,
    *,
    method: Literal["newton_euler", "momentum"] = "newton_euler",
    kinematics: Kinematics | None = None,
    ik_method: Literal["exact", "one_step"] = "exact",
    throw: bool = True,
) -> Dynamics:
    """Actuator forces and the wrench through every joint along a trajectory.

    **Arguments:**

    - `mechanism`, `trajectory`: as `inverse_kinematics` (pass `kinematics` to reuse
      a solution computed already; `ik_method` otherwise picks its mode).
    - `external_wrench`: `(6,)` or `(N, 6)`, `(force; moment)` applied to the platform
      at its reference point (seed 002: the platform centre P; seed 004: E). Default 0.
    - `method`: `"newton_euler"` (Method B) or `"momentum"` (Method A, seed 004).
    - `throw`: raise at the first failed sample (as `inverse_kinematics`; a singular
      wrench system raises `diffmech.SingularError` eagerly).

    **Returns:** a `Dynamics`.
    """
    if method not in METHODS:
        raise ValueError(f"parallel.inverse_dynamics: `method` must be one of {METHODS}; got {method!r}")
    _kin.check_kinematics_arguments(
        "parallel.inverse_dynamics", mechanism, trajectory=trajectory, kinematics=kinematics
    )
    kin = (
        kinematics
        if kinematics is not None
        else _kin.inverse_kinematics(mechanism, trajectory, method=ik_method, throw=False)
    )
    N = kin.times.shape[0]
    fe = (
        np.zeros(6, dtype=kin.times.dtype)
        if external_wrench is None
        else external_wrench
        if is_traced(external_wrench)
        else np.asarray(external_wrench, dtype=kin.times.dtype)
    )
    eager = not is_traced(mechanism, kin, fe)
    if eager:
        check_array("inverse_dynamics", "external_wrench", fe, (6,))
        if fe.ndim not in (1, 2) or (fe.ndim == 2 and fe.shape[0] != N):
            raise ValueError(f"inverse_dynamics: `external_wrench` must have shape (6,) or ({N}, 6); got {fe.shape}")
    fe = (jnp if is_traced(fe) else np).broadcast_to(fe, (N, 6))
    dyn = (_dynamics_jit if eager else solve_dynamics)(mechanism, kin, fe, method)
    if throw and eager:
        conv = np.asarray(dyn.converged)
        if not conv.all():
            k = int(np.argmin(conv))
            _kin.raise_failure(mechanism, kin)
            rank = wrench_rank(mechanism, kin.labels[k])
            raise SingularError(
                f"{type(mechanism).__name__}: the wrench system is singular at sample {k} "
                f"(t = {float(kin.times[k]):.6g} s): rank {rank[0]} of {rank[1]} equations, condition number "
                f"{float(dyn.condition[k]):.3g}, relative residual {float(dyn.residual[k]):.3e}",
                status="singular configuration",
                index=(k,),
                residual=float(dyn.residual[k]),
            )
    return dyn.error_if_failed() if throw and not eager else dyn


def wrench_rank(mech: AbstractParallelMechanism, labels, rtol: float = 1e-10) -> tuple[int, int]:
    """Eager: numerical rank of the wrench system's matrix of the mechanism `mech` at
    joint labels `labels` `(n_joints,)` (rad for R joints, metres for P joints;
    singular values below `rtol` times the largest count as zero), and its number of
    equations: `(rank, equations)`."""
    _kin.check_kinematics_arguments("parallel.wrench_rank", mech)
    check_shape("parallel.wrench_rank", "labels", labels, (mech.n_joints,))
    theta = np.asarray(labels) - np.asarray(mech.home_labels())
    rows = []
    C = len(mech.chains)
    for c, (ch, th) in enumerate(zip(mech.chains, _kin.split_joints(mech, jnp.asarray(theta)))):
        S = np.asarray(_kin.chain_screws(ch, th))
        for j in range(ch.n):
            if not ch.actuated[j]:
                r = np.zeros(6 * C)
                r[6 * c : 6 * c + 6] = np.concatenate([S[3:, j], S[:3, j]])
                rows.append(r)
    A = np.vstack([np.array(rows), np.tile(np.eye(6), (1, C))])
    s = np.linalg.svd(A, compute_uv=False)
    return int(np.sum(s > rtol * s[0])), A.shape[0]


def body_motion(mechanism: AbstractParallelMechanism, kinematics: Kinematics) -> dict:
    """Absolute motion of every massive chain link of `mechanism` along `kinematics`
    (its exact-mode `Kinematics`): arrays `(N, B, 3)` `omega`, `alpha` (angular
    velocity and acceleration, rad/s and rad/s²), `com`, `com_velocity`,
    `com_acceleration` (m, m/s, m/s²); links in chain order (`names` gives them).
    Samples where `kinematics` did not converge are NaN (as the `Kinematics`' own
    `masked()`)."""
    mech = mechanism
    _kin.check_kinematics_arguments("parallel.body_motion", mechanism, kinematics=kinematics)
    if kinematics.method != "exact":
        raise ValueError(
            "parallel.body_motion: `kinematics` must come from the exact mode (inverse_kinematics(..., "
            f"method='exact')): the {kinematics.method!r} mode carries no state rates"
        )

    def links(th, thd):
        terms = _kin.map_chains(mech, _chain_bodies, (_kin.split_joints(mech, th), _kin.split_joints(mech, thd)))
        out = [t[1:4] for ch, t in zip(mech.chains, terms) if ch.body_after]
        return [jnp.concatenate(v) for v in zip(*out)]

    n = mech.n_joints
    (c, _, V), (cd, _, A) = jax.vmap(lambda x, xd, xdd: jax.jvp(links, (x[:n], xd[:n]), (xd[:n], xdd[:n])))(
        kinematics.state, kinematics.state_rate, kinematics.state_accel
    )
    vc = V[..., 3:] + jnp.cross(V[..., :3], c)
    ac = A[..., 3:] + jnp.cross(A[..., :3], c) + jnp.cross(V[..., :3], vc)
    names = [f"{ch.name}.link{j + 1}" for ch in mech.chains for j in ch.body_after]
    ok = kinematics.converged[:, None, None]
    out = dict(omega=V[..., :3], alpha=A[..., :3], com=c, com_velocity=vc, com_acceleration=ac)
    return {k: jnp.where(ok, v, jnp.nan) for k, v in out.items()} | {"names": names}

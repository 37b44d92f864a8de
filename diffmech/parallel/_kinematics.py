"""Inverse kinematics of parallel mechanisms along a platform trajectory.

Two modes:

- `"exact"`: positions by the closure core (`diffmech.closure.sweep`: Newton,
  warm-started and continued along the trajectory) on one square system — every
  chain's joint displacements and the platform's displacement, with the chains'
  loop closures and the trajectory's prescribed coordinates as equations; velocities
  and accelerations by the implicit function theorem (`diffmech.closure.rates`, jvp).
  Joint rates also follow by least squares on each chain's screw matrix
  (`screw_rates`, Eq. 14 of seed 002); the two agree to round-off.
- `"one_step"`: the seeds' scheme, reproduced faithfully (seed 002 Eqs. 14–17, seed
  004 Eqs. 7–9): joint rates by the pseudo-inverse of each chain's screw matrix at the
  integrated configuration, positions by an explicit Euler step, accelerations by
  backward differences. It drifts off the constraints at O(Δt).

The unknown vector is `x = (θ_1, …, θ_C, φ, d)`: the chains' joint displacements from
home, the platform's rotation vector and its translation (displacement from home).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .. import _cache, _closure, _linalg, _screw
from .._result import RESULTS, AbstractResult, MotionLimitError, SingularError, code
from .._validate import check_scalar, check_shape, check_type, is_traced
from .._xla import eager_program, jit
from . import _trajectory
from ._model import AbstractParallelMechanism, Chain, StewartPlatform, ThreeUPSUPUS


@eager_program  # eagerly one program (its `lax.scan` would be traced and compiled again at every call)
def chain_poses(chain: Chain, theta: Float[Array, " n"]):
    """Displacements from home of the links after every joint of `chain` at joint
    displacements `theta` `(n,)` (rad for R joints, metres for P joints; product of
    exponentials): `(R (n, 3, 3), p (n, 3))`; entry `j` is the link after joint `j`.

    One `lax.scan` over the joints (R and P joints share the step, selected by a mask),
    so the compiled program does not grow with the number of joints.
    """

    def step(g, inp):
        g = _screw.compose(g, _joint_displacement(*inp))
        return g, g

    _, (Rs, ps) = jax.lax.scan(step, _identity(theta.dtype), _joint_inputs(chain, theta))
    return Rs, ps


def _joint_inputs(chain: Chain, theta):
    return chain.screws(), theta, jnp.asarray([k == "P" for k in chain.kinds])


def _identity(dtype):
    return jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype=dtype)


def _joint_displacement(s, th, is_p):
    """One joint's displacement by `th` (R and P joints share it, selected by `is_p`)."""
    Rj, tj = _screw.exp(s, th, False)
    return jnp.where(is_p, jnp.eye(3, dtype=th.dtype), Rj), jnp.where(is_p, th * s[3:], tj)


def chain_screws(chain: Chain, theta: Float[Array, " n"], poses=None) -> Float[Array, "6 n"]:
    """The `chain`'s screw matrix `S = [ξ'_1 … ξ'_n]` at displacement `theta`: each unit
    joint twist moved by the displacement of the links before it (Eqs. 6–7 of seed 002).
    `poses`: `chain_poses(chain, theta)` if already computed (else one scan computes
    the displacements and the columns together, `_end_and_screws`)."""
    if poses is None:
        return _end_and_screws(chain, theta)[1]
    xi = chain.screws()
    Rs, ps = poses
    cols = [xi[0]] + [_screw.transform(Rs[j - 1], ps[j - 1], xi[j]) for j in range(1, chain.n)]
    return jnp.stack(cols, axis=1)


def split(mech: AbstractParallelMechanism, x):
    """`x → ([θ_c], φ, d)`."""
    n = mech.n_joints
    return split_joints(mech, x[..., :n]), x[..., n : n + 3], x[..., n + 3 : n + 6]


def groups(mech: AbstractParallelMechanism) -> tuple[tuple[int, ...], ...]:
    """Indices of chains with identical joint kinds and bodies (static): each group is
    evaluated under one `vmap`, which keeps the compiled program small."""
    keys: dict = {}
    for c, ch in enumerate(mech.chains):
        keys.setdefault((ch.kinds, ch.body_after), []).append(c)
    return tuple(tuple(v) for v in keys.values())


def stacked(mech: AbstractParallelMechanism, group: tuple[int, ...]) -> Chain:
    """The chains of `group` stacked into one `Chain` with a leading axis."""
    leaves = [jax.tree.leaves(mech.chains[c]) for c in group]
    return jax.tree.unflatten(jax.tree.structure(mech.chains[group[0]]), [jnp.stack(ls) for ls in zip(*leaves)])


def map_chains(mech: AbstractParallelMechanism, fn, per_chain=(), shared=()) -> list:
    """`[fn(chain, *(a[c] for a in per_chain), *shared) for every chain c]`, each group
    of identical chains (`groups`) under one `vmap`: one copy of `fn` per group in the
    compiled program, not one per chain (the six legs of a Gough–Stewart platform are
    one group). `per_chain`: sequences indexed by chain (e.g. `split_joints`'s)."""
    out: list = [None] * len(mech.chains)
    for g in groups(mech):
        args = [jnp.stack([a[c] for c in g]) for a in per_chain]
        axes = (0,) * (1 + len(per_chain)) + (None,) * len(shared)
        res = jax.vmap(fn, in_axes=axes)(stacked(mech, g), *args, *shared)
        for k, c in enumerate(g):
            out[c] = jax.tree.map(lambda a, k=k: a[k], res)
    return out


def _closure_rows(ch: Chain, th, R, d, scale):
    Rs, ps = chain_poses(ch, th)
    Rc, pc = Rs[-1], ps[-1]
    return jnp.concatenate([_screw.vee(_screw.matmul(Rc, R.T)), (_screw.matvec(Rc - R, ch.attach) + pc - d) / scale])


@jit  # traced once per signature, not at every use in a program (Stewart exact IK: tracing 2.3 s → 1.1 s)
def residual(x, u, mech: AbstractParallelMechanism):
    """Closure of every chain on the platform, then the prescribed coordinates.

    Chain rows: the orientation error `vee(R_c R_Pᵀ)` and the position error of the
    chain's platform-side joint centre (divided by `length_scale`), chains grouped as
    in `groups`. `x` holds the unknowns (every chain's joint labels, then the platform's
    rotation vector and position: `split`), `u = (R_t, d_t)` is the trajectory's
    displacement at this time (`u` the pair), `mech` the mechanism.
    """
    thetas, phi, d = split(mech, x)
    R = _screw.rotation_vector(phi)
    rows = []
    for g in groups(mech):
        th = jnp.stack([thetas[c] for c in g])
        rows.append(
            jax.vmap(_closure_rows, (0, 0, None, None, None))(stacked(mech, g), th, R, d, mech.length_scale).reshape(-1)
        )
    rows.append(mech.task(R, d, *u))
    return jnp.concatenate(rows)


def _end_and_screws(chain: Chain, theta):
    """The chain's end displacement `(R, p)` and its screw matrix `(6, n)` in one scan
    over the joints: each joint's twist moved by the displacement of the links before
    it (`chain_screws`)."""

    def step(g, inp):
        return _screw.compose(g, _joint_displacement(*inp)), _screw.transform(g[0], g[1], inp[0])

    end, cols = jax.lax.scan(step, _identity(theta.dtype), _joint_inputs(chain, theta))
    return end, cols.T


def _chain_block(ch: Chain, th, R, Ws, scale):
    """One chain's closure rows differentiated in closed form: `∂rows/∂θ_c (6, n_c)`
    and `∂rows/∂(φ, d) (6, 6)`.

    With the chain's space Jacobian `S` (its screw matrix, `chain_screws`), joint
    rates `θ̇` move the chain's end by the space twist `(ω; v) = S θ̇`, so `Ṙ_c = ω̂ R_c`
    and a point `q` fixed to the end moves at `v + ω × q`; the platform turns at
    `ω_P = W φ̇` (`W = Ws`, the rotation vector's space Jacobian) and moves at `ḋ`.
    With `M = R_c Rᵀ`, `vee(ω̂ M) = ½ (tr M · I − M) ω` and `vee(M ω̂) = ½ (tr M · I − Mᵀ) ω`,
    so the orientation rows move by `½ (tr M · I − M) ω − ½ (tr M · I − Mᵀ) ω_P` and the
    position rows by `(v − q̂ ω + (R a)^ ω_P − ḋ) / scale`, `q = R_c a + p_c`.
    """
    (Rc, pc), S = _end_and_screws(ch, th)
    M = _screw.matmul(Rc, R.T)
    eye = jnp.eye(3, dtype=M.dtype)
    q = _screw.matvec(Rc, ch.attach) + pc
    w, v = S[:3], S[3:]
    d_theta = jnp.concatenate([0.5 * (jnp.trace(M) * eye - M) @ w, (v - _screw.skew(q) @ w) / scale])
    d_phi = jnp.concatenate(
        [-0.5 * (jnp.trace(M) * eye - M.T) @ Ws, _screw.skew(_screw.matvec(R, ch.attach)) @ Ws / scale]
    )
    d_d = jnp.concatenate([jnp.zeros((3, 3), M.dtype), -eye / scale])
    return d_theta, jnp.concatenate([d_phi, d_d], axis=1)


@jit
def jacobian(x, u, mech: AbstractParallelMechanism):
    """`∂residual/∂x` in closed form from the chains' screw matrices (`_chain_block`),
    assembled in `residual`'s row order; the task rows by forward mode in `(φ, d)`.
    Equal to `jax.jacfwd(residual)` to round-off (tested), at a fraction of its cost:
    one pass through each chain instead of one per unknown."""
    thetas, phi, d = split(mech, x)
    n = mech.n_joints
    offsets = np.cumsum((0,) + mech.sizes)
    R = _screw.rotation_vector(phi)
    # the platform's space angular velocity per unit rate of each rotation-vector component
    Ws = jnp.stack(
        [_screw.vee(_screw.matmul(dRi, R.T)) for dRi in jax.jacfwd(_screw.rotation_vector)(phi).transpose(2, 0, 1)], 1
    )
    blocks = []
    for g in groups(mech):
        th = jnp.stack([thetas[c] for c in g])
        d_th, d_pl = jax.vmap(_chain_block, (0, 0, None, None, None))(stacked(mech, g), th, R, Ws, mech.length_scale)
        # each chain's joint columns placed at its offset by a static 0/1 matrix: one
        # contraction instead of a concatenation per chain (less for XLA to compile)
        place = np.zeros((len(g), mech.sizes[g[0]], n))
        for k, c in enumerate(g):
            place[k, :, offsets[c] : offsets[c + 1]] = np.eye(mech.sizes[c])
        d_th = jnp.einsum("kij,kjm->kim", d_th, jnp.asarray(place, x.dtype))
        blocks.append(jnp.concatenate([d_th, d_pl], axis=2).reshape(6 * len(g), n + 6))
    task = jax.jacfwd(lambda z: mech.task(_screw.rotation_vector(z[:3]), z[3:], *u))(jnp.concatenate([phi, d]))
    blocks.append(jnp.concatenate([jnp.zeros((task.shape[0], n), x.dtype), task], axis=1))
    return jnp.concatenate(blocks, axis=0)


residual.jacobian = jacobian  # pyright: ignore[reportAttributeAccessIssue]  # the closure core uses it for every Newton step and rate (`closure.jacobian`)


def platform_state(phi, d, phid, dd):
    """Platform displacement `(R, d)` and space twist from `(φ, d)` and their rates."""
    R, Rd = jax.jvp(_screw.rotation_vector, (phi,), (phid,))
    return R, d, _screw.twist_of(R, d, Rd, dd)


def screw_rates(mech: AbstractParallelMechanism, theta, platform_twist) -> Float[Array, " n"]:
    """Joint rates of the mechanism `mech` (displacement `theta` `(n_joints,)`) by least
    squares on every chain's screw matrix, `θ̇_c = (S_cᵀ S_c)⁻¹ S_cᵀ V` (Eq. 14 of seed
    002, Eq. 7 of seed 004), where `V` is `platform_twist`, the platform's space twist
    `(6,)` (ω in rad/s, then v in m/s; the chain's last link is the platform).
    Returns `(n_joints,)` rates (rad/s or m/s)."""
    check_kinematics_arguments("parallel.screw_rates", mech)
    check_shape("parallel.screw_rates", "theta", theta, (mech.n_joints,))
    check_shape("parallel.screw_rates", "platform_twist", platform_twist, (6,))

    def rates(ch, th, V):
        S = chain_screws(ch, th)
        return _linalg.solve(S.T @ S, S.T @ V)

    return jnp.concatenate(map_chains(mech, rates, (split_joints(mech, theta),), (platform_twist,)))


def split_joints(mech, theta):
    out, k = [], 0
    for n in mech.sizes:
        out.append(theta[..., k : k + n])
        k += n
    return out


class Kinematics(AbstractResult):
    """Inverse kinematics along a trajectory (every array has leading axis `N`, the
    time samples; the contract of every result: `diffmech._result.AbstractResult`,
    `masked()` masks `labels`).

    **Fields:**

    - `times`; `labels`, `rates`, `accelerations` `(N, n_joints)`: joint values (home
      label + displacement; rad or m) and their first and second time derivatives, in
      chain order (`mechanism.joint_names()`).
    - `platform_R` `(N, 3, 3)`, `platform_d` `(N, 3)`: the platform displacement from
      home; `platform_twist`, `platform_accel` `(N, 6)`: its space twist and its time
      derivative.
    - `state`, `state_rate`, `state_accel` `(N, n_joints + 6)`: the unknown vector
      `(θ, φ, d)` and its derivatives (exact mode; used by the dynamics' jvps).
    - `converged` `(N,)`, `status` (a `RESULTS` per sample), `result` (the first
      failure), `residual` `(N,)` (closure max-norm), `condition` `(N,)` (1-norm
      condition number of the closure Jacobian).
    - `method`: `"exact"` or `"one_step"` (static).
    """

    times: Float[Array, " N"]
    labels: Float[Array, "N n"]
    rates: Float[Array, "N n"]
    accelerations: Float[Array, "N n"]
    platform_R: Float[Array, "N 3 3"]
    platform_d: Float[Array, "N 3"]
    platform_twist: Float[Array, "N 6"]
    platform_accel: Float[Array, "N 6"]
    state: Float[Array, "N m"]
    state_rate: Float[Array, "N m"]
    state_accel: Float[Array, "N m"]
    converged: Bool[Array, " N"]
    status: RESULTS
    residual: Float[Array, " N"]
    condition: Float[Array, " N"]
    method: str = eqx.field(static=True)

    _values: ClassVar[str] = "labels"
    _inputs: ClassVar[str] = "times"

    def chain(self, mech: AbstractParallelMechanism, c: int, field: str = "labels") -> Float[Array, "N k"]:
        """The columns of `field` that belong to chain `c`."""
        k = sum(mech.sizes[:c])
        return getattr(self, field)[..., k : k + mech.sizes[c]]


def _closure_errors(mech, theta, R, d):
    """Per-sample max-norm of the chains' closure errors (unscaled) at displacements
    `theta` against the platform displacement `(R, d)` (the one-step drift)."""

    def one(th, R_, d_):
        rows = map_chains(mech, _closure_rows, (split_joints(mech, th),), (R_, d_, 1.0))
        return jnp.max(jnp.abs(jnp.concatenate(rows)))

    return jax.vmap(one)(theta, R, d)


def _limits_ok(mech, labels):
    lo = jnp.concatenate([c.lower for c in mech.chains])
    hi = jnp.concatenate([c.upper for c in mech.chains])
    return jnp.all((labels >= lo) & (labels <= hi), axis=-1)


COND_LIMIT = 1e12
# the largest `task_error` of a sample whose platform realises the trajectory (solved
# poses meet it to round-off; an unreachable one misses by the pose's own size)
TASK_TOL = 1e-8


# exact mode, Newton from the interpolant: stop after an update of at most `_FINE_XTOL`
# (relative: the sweep corrector's `certify`, whose reasoning it shares), else at
# `_FINE_MAX_STEPS` steps
_FINE_XTOL, _FINE_MAX_STEPS = _closure.Newton().certify, 8


# --------------------------------------------------------------------------- closed-form legs
#
# Every chain of the bundled parallel mechanisms is R R [R] P R R [R] (a U or an S at
# the base point A, a P along the leg, a U or an S at the platform point C) or an S
# alone (three R joints through one point). With the platform's pose (R, d) given,
# each chain's joint displacements are in closed form (Paden–Kahan subproblems): the
# P from |ℓ| (ℓ = R C₀ + d − A), the first two turns from the leg's direction
# (subproblem 2 taking the P's axis to ℓ/|ℓ|; any third base turn is about the leg),
# and the rest from the rotation left (`_wrist`). Each two-solution subproblem takes
# the sign of the home configuration, so the legs are those continuation from home
# reaches (away from a leg's singular configurations); angles are unwrapped along the
# trajectory. Where the pose is prescribed only in part (the 3UPS–UPU–S: the normal),
# the free turn is solved first from the one chain that fixes it (`_upu_torsion`).


def _subproblem1(w, p, q):
    """The turn about the unit axis `w` taking `p` to `q` (their parts normal to `w`)."""
    pp, qq = p - jnp.dot(w, p) * w, q - jnp.dot(w, q) * w
    return jnp.arctan2(jnp.dot(w, jnp.cross(pp, qq)), jnp.dot(pp, qq))


def _subproblem2(w1, w2, p, q):
    """The turns (θ1, θ2) with exp(w1 θ1) exp(w2 θ2) p = q (axes through one point),
    on the branch of θ = 0 when q = p."""
    g = jnp.dot(w1, w2)
    n = jnp.cross(w1, w2)
    nn = jnp.dot(n, n)
    al = (g * jnp.dot(w2, p) - jnp.dot(w1, q)) / (g**2 - 1)
    be = (g * jnp.dot(w1, q) - jnp.dot(w2, p)) / (g**2 - 1)
    g2 = (jnp.dot(p, p) - al**2 - be**2 - 2 * al * be * g) / nn
    home = jnp.where(jnp.dot(p, n) < 0, -1.0, 1.0)
    z = al * w1 + be * w2 + home * jnp.sqrt(jnp.maximum(g2, 0.0)) * n
    return _subproblem1(w1, z, q), _subproblem1(w2, p, z), g2 >= 0


def _turns(axes, angles):
    out = _screw.rotation(axes[0], angles[0])
    for a, t in zip(axes[1:], angles[1:]):
        out = _screw.matmul(out, _screw.rotation(a, t))
    return out


def _wrist(axes, Q):
    """The turns about two or three axes through one point whose product of
    exponentials is `Q` (a U: exact only where `Q` keeps the axes' angle, which the
    closure check tells), and whether they exist."""
    a = list(axes)
    if len(a) == 3:
        t0, t1, ok = _subproblem2(a[0], a[1], a[2], _screw.matvec(Q, a[2]))
        rest = _screw.matmul(_turns(a[:2], (t0, t1)).T, Q)
        return [t0, t1, _subproblem1(a[2], a[1], _screw.matvec(rest, a[1]))], ok
    t0 = _subproblem1(a[0], a[1], _screw.matvec(Q, a[1]))
    rest = _screw.matmul(_screw.rotation(a[0], t0).T, Q)
    return [t0, _subproblem1(a[1], a[0], _screw.matvec(rest, a[0]))], jnp.array(True)


def _chain_closed_form(ch: Chain, R, d):
    """One chain's joint displacements `(n,)` at the platform pose `(R, d)`, and
    whether it assembles (see the section's comment for the chains it takes)."""
    w = ch.axes
    if "P" not in ch.kinds:  # an S alone: the platform's rotation
        theta, ok = _wrist(w, R)
        return jnp.stack(theta), ok
    p = ch.kinds.index("P")
    A, C0 = ch.points[0], ch.attach
    ell = _screw.matvec(R, C0) + d - A
    length = jnp.sqrt(jnp.dot(ell, ell))
    t0, t1, ok1 = _subproblem2(w[0], w[1], w[p], ell / length)
    Q = _screw.matmul(_turns([w[0], w[1]], (t0, t1)).T, R)
    rest, ok2 = _wrist([w[j] for j in range(2, ch.n) if j != p], Q)
    slide = length - jnp.sqrt(jnp.dot(C0 - A, C0 - A))
    theta = [t0, t1, *rest]
    theta.insert(p, slide)
    return jnp.stack(theta), ok1 & ok2


def _upu_torsion(ch: Chain, R_t, steps: int = 8):
    """The platform rotation `exp(n ψ) R_t` (n = R_t ẑ, the prescribed normal) that the
    U-P-U chain `ch` admits: its platform U closes where the leg's second axis and the
    platform's last one stay at right angles, `(R t)·(R_leg w) = 0`, one equation in ψ,
    solved by Newton from ψ = 0 (`steps` fixed steps, quadratic near the root; the
    closure check certifies it)."""
    w = ch.axes
    A, C0 = ch.points[0], ch.attach
    n = R_t[:, 2]

    def f(psi):
        R = _screw.matmul(_screw.rotation(n, psi), R_t)
        ell = _screw.matvec(R, C0) - A
        t0, t1, _ = _subproblem2(w[0], w[1], w[2], ell / jnp.sqrt(jnp.dot(ell, ell)))
        leg = _turns([w[0], w[1]], (t0, t1))
        return jnp.dot(_screw.matvec(R, w[4]), _screw.matvec(leg, w[3]))

    psi = jnp.zeros((), R_t.dtype)
    for _ in range(steps):
        v, dv = jax.jvp(f, (psi,), (jnp.ones_like(psi),))
        psi = psi - v / dv
    return _screw.matmul(_screw.rotation(n, psi), R_t)


def _rotation_log(R):
    """The rotation vector φ of `R` (|φ| ≤ π), smooth at the identity; past a quarter
    turn the axis from `R`'s symmetric part (`vee` alone loses it near a half turn)."""
    v = _screw.vee(R - R.T) / 2  # sin|φ| φ/|φ|
    s = jnp.sqrt(jnp.dot(v, v))
    c = (jnp.trace(R) - 1) / 2
    angle = jnp.arctan2(s, c)
    small = s < 1e-8
    near = v * jnp.where(small, 1.0 + s**2 / 6, angle / jnp.where(small, 1.0, s))
    B = (R + R.T) / 2 - c * jnp.eye(3, dtype=R.dtype)  # (1 − c) a aᵀ
    col = B[jnp.argmax(jnp.diagonal(B))]
    axis = col / jnp.sqrt(jnp.dot(col, col))
    axis = jnp.where(jnp.dot(axis, v) < 0, -axis, axis)
    return jnp.where(c < 0, angle * axis, near)


def closed_form_legs(mech: AbstractParallelMechanism) -> bool:
    """Whether `mech`'s inverse kinematics has the closed form of `_closed_form_state`:
    a Gough–Stewart platform of S-P-U legs, its pose prescribed, or the 3UPS–UPU–S
    (U-P-S legs, a U-P-U fixing the turn about the prescribed normal, an S at O)."""
    if isinstance(mech, StewartPlatform):
        return all(ch.kinds == tuple("RRRPRR") for ch in mech.chains)
    if isinstance(mech, ThreeUPSUPUS):
        kinds = [ch.kinds for ch in mech.chains]
        return kinds[0] == tuple("RRPRR") and all(k in (tuple("RRPRRR"), tuple("RRR")) for k in kinds[1:])
    return False


def _closed_form_state(mech: AbstractParallelMechanism, R_t, d_t):
    """The closure state `(N, n + 6)` of every sample in closed form (each leg's joints,
    the platform's rotation vector and displacement), and whether each assembles."""

    def one(R, d):
        if isinstance(mech, ThreeUPSUPUS):
            # the normal is prescribed; the turn about it is the U-P-U's, the
            # displacement the S's (the platform turns about its centre: where the
            # trajectory moves it elsewhere, the task check masks the sample)
            R = _upu_torsion(mech.chains[0], R)
            S = mech.chains[-1]
            d = S.points[0] - _screw.matvec(R, S.attach)
        # (a Python loop over the six legs made this four tenths of the exact inverse
        # kinematics' program)
        legs = map_chains(mech, _chain_closed_form, shared=(R, d))
        ok = jnp.all(jnp.stack([o for _, o in legs]))
        return jnp.concatenate([*(t for t, _ in legs), _rotation_log(R), d]), ok

    x, ok = jax.vmap(one)(R_t, d_t)
    revolute = np.array([k == "R" for ch in mech.chains for k in ch.kinds] + [False] * 6)
    x = jnp.where(revolute, jnp.unwrap(x, axis=0), x)  # angles continue along the trajectory
    return x, ok & jnp.all(jnp.isfinite(x), axis=1)


def _exact_guess(mech: AbstractParallelMechanism, t, u, ud, stride: int):
    """`_exact`'s guess at every sample: sequential continuation (the closure core's)
    through every `stride`-th sample and the last one, then the cubic Hermite
    interpolant of its positions and of their rates from the trajectory's own
    (analytic) rates; or, where each leg has a closed form (`stride` 0), every sample
    at once in closed form. Also the node of each sample's interval on either side
    (`i`, `j`), the nodes' reach and status, and their condition numbers (None for
    stride 0 and 1: `_exact` takes them from its own Jacobians)."""
    (R_t, d_t), (Rd_t, dd_t) = u, ud
    N = t.shape[0]
    closed = stride == 0
    if closed:
        stride = 1
    idx = np.asarray(sorted(set(range(0, N, stride)) | {N - 1}))
    take = lambda a: a[idx]  # noqa: E731
    if closed:
        xc, reached_c = _closed_form_state(jax.lax.stop_gradient(mech), R_t, d_t)
        xc = jax.lax.stop_gradient(xc)
        status_c = jax.vmap(lambda o: RESULTS.where(o, RESULTS.successful, RESULTS.motion_limit))(reached_c)
    else:
        # (positions only, a warm start: Newton to convergence at each sample, no derivatives)
        cont = _closure.continuation(
            residual,
            jnp.zeros(mech.n_joints + 6, dtype=t.dtype),
            (take(R_t), take(d_t)),
            jax.lax.stop_gradient(mech),
            condition=False,
        )
        xc, reached_c, status_c = cont.value, cont.converged, cont.status
    if stride == 1:
        i = jnp.arange(N)
        return xc, i, i, reached_c, status_c, None
    # the closure Jacobian's condition number at the continuation samples (after the scan, batched)
    cond_c = jax.vmap(lambda x_, u_: _closure.condition(residual, x_, u_, jax.lax.stop_gradient(mech)))(
        xc, (take(R_t), take(d_t))
    )
    i = jnp.clip(jnp.searchsorted(jnp.asarray(idx), jnp.arange(N), side="right") - 1, 0, idx.shape[0] - 2)

    def velocity(x_, u_, ud_):
        return _closure.rates(residual, x_, u_, jax.lax.stop_gradient(mech), ud_)[0]

    xdc = jax.vmap(velocity)(xc, (take(R_t), take(d_t)), (take(Rd_t), take(dd_t)))
    tc = take(t)
    h = tc[i + 1] - tc[i]
    frac = (t - tc[i]) / h
    guess = jax.vmap(_closure.hermite)(xc[i], xc[i + 1], xdc[i], xdc[i + 1], h, frac)
    return guess, i, i + 1, reached_c, status_c, cond_c


def _exact(mech: AbstractParallelMechanism, traj: _trajectory.Trajectory, stride: int) -> Kinematics:
    (R_t, d_t), (Rd_t, dd_t), (Rdd_t, ddd_t) = traj.displacement(mech.reference)
    guess, i, j, reached_c, status_c, cond_c = _exact_guess(mech, traj.times, (R_t, d_t), (Rd_t, dd_t), stride)
    stride = 1 if stride == 0 else stride
    # (stride 1: the continuation has already converged every sample, so `root` adds no
    # step, only its check and the implicit derivative.) Else Newton from the
    # interpolant until the update is at most `_FINE_XTOL` (relative: the error left
    # is about its square, round-off), at least one step and at most
    # `_FINE_MAX_STEPS`. Under `vmap` a further step runs on every sample when one
    # needs it; on the seeds' trajectories at the default stride the first update is
    # at most 2.1e-10, so one step is taken, while a coarse stride gets the steps it
    # needs (two fixed steps were slower, and not enough at a coarse stride;
    # docs/benchmarks.md, "Measurements behind the code").
    n_fine = 0 if stride == 1 else 1
    fine = jax.vmap(
        lambda g, u: _closure.root(
            residual,
            g,
            u,
            mech,
            min_steps=n_fine,
            max_steps=n_fine * _FINE_MAX_STEPS,
            xtol=_FINE_XTOL,
            robust=False,
            throw=False,  # a failed sample is a status here (`throw` is applied to the whole result)
        )
    )(guess, (R_t, d_t))
    x, res, fine_ok = fine.value, fine.residual, fine.converged
    # one closure Jacobian per sample for the rates; with stride 1 the samples are the
    # continuation's (Newton took no step), so it also gives their condition numbers
    J = jax.vmap(lambda x_, u: jacobian(x_, u, mech))(x, (R_t, d_t))
    xd, xdd = jax.vmap(lambda x_, u, ud, udd, J_: _closure.rates(residual, x_, u, mech, ud, udd, jac=J_))(
        x, (R_t, d_t), (Rd_t, dd_t), (Rdd_t, ddd_t), J
    )
    if cond_c is None:  # stride 1
        cond_c = jax.vmap(_linalg.condition_1)(jax.lax.stop_gradient(J))

    def pstate(z, zd):
        return platform_state(z[0], z[1], zd[0], zd[1])

    z, zd, zdd = (split(mech, v)[1:] for v in (x, xd, xdd))
    (R, d_, V), (_, _, A) = jax.vmap(lambda a, b, c: jax.jvp(pstate, (a, b), (b, c)))(z, zd, zdd)
    theta = x[:, : mech.n_joints]
    labels = theta + mech.home_labels()
    # a sample is good if the continuation reached both ends of its interval and its own Newton converged
    reached = reached_c[i] & reached_c[j]
    condition = jnp.maximum(cond_c[i], cond_c[j])
    status = jax.tree.map(lambda s_: s_[jnp.where(reached_c[i], j, i)], status_c)
    ok = reached & fine_ok
    status = jax.vmap(lambda o, st: RESULTS.where(o, RESULTS.successful, st))(
        ok, jax.vmap(lambda r_, st: RESULTS.where(r_, RESULTS.motion_limit, st))(reached, status)
    )
    converged, result = _closure.mask_after(ok, status, ~_limits_ok(mech, labels), RESULTS.motion_limit)
    converged, result = _closure.mask_after(
        converged, result, ~(condition < COND_LIMIT) & converged, RESULTS.singular_configuration
    )
    # the task, not only the residual: a solved closure whose platform is not where the
    # trajectory puts it (a pose out of reach; a spurious zero of the task residual)
    miss = ~(jax.vmap(mech.task_error)(R, d_, R_t, d_t) <= TASK_TOL)
    converged, result = _closure.mask_after(converged, result, miss & converged, RESULTS.unreachable_pose)
    return Kinematics(
        times=traj.times,
        labels=labels,
        rates=xd[:, : mech.n_joints],
        accelerations=xdd[:, : mech.n_joints],
        platform_R=R,
        platform_d=d_,
        platform_twist=V,
        platform_accel=A,
        state=x,
        state_rate=xd,
        state_accel=xdd,
        converged=converged,
        status=result,
        residual=res,
        condition=condition,
        method="exact",
    )


def _one_step(mech: AbstractParallelMechanism, traj: _trajectory.Trajectory) -> Kinematics:
    times = traj.times
    dt = times[1] - times[0]
    V = traj.twist
    (R_t, d_t), _, _ = traj.displacement(mech.reference)

    def step(theta, Vk):
        rates = screw_rates(mech, theta, Vk)
        return theta + dt * rates, (theta, rates)

    _, (theta, rates) = jax.lax.scan(step, jnp.zeros(mech.n_joints, dtype=times.dtype), V)
    acc = jnp.concatenate([(rates[1:2] - rates[:1]), rates[1:] - rates[:-1]]) / dt
    Vacc = jnp.concatenate([(V[1:2] - V[:1]), V[1:] - V[:-1]]) / dt
    err = _closure_errors(mech, theta, R_t, d_t)
    labels = theta + mech.home_labels()
    ok = jnp.isfinite(err) & _limits_ok(mech, labels)
    status = jax.vmap(lambda o: RESULTS.where(o, RESULTS.successful, RESULTS.motion_limit))(ok)
    converged, result = _closure.mask_after(ok, status, ~ok, RESULTS.motion_limit)
    nanm = jnp.full((times.shape[0], mech.n_joints + 6), jnp.nan, dtype=times.dtype)
    return Kinematics(
        times=times,
        labels=labels,
        rates=rates,
        accelerations=acc,
        platform_R=R_t,
        platform_d=d_t,
        platform_twist=V,
        platform_accel=Vacc,
        state=nanm,
        state_rate=nanm,
        state_accel=nanm,
        converged=converged,
        status=result,
        residual=err,
        condition=jnp.full_like(err, jnp.nan),
        method="one_step",
    )


_exact_jit = jit(_exact, static_argnums=2, top_level=True)  # stride is static
_one_step_jit = jit(_one_step, top_level=True)


def check_kinematics_arguments(owner, mechanism, *, trajectory=None, kinematics=None) -> None:
    """Eager: the argument kinds of the parallel entry points, named where wrong, and a
    `Kinematics` that belongs to `mechanism` (and to `trajectory`'s samples)."""
    check_type(owner, "mechanism", mechanism, AbstractParallelMechanism, "a parallel mechanism (StewartPlatform(), …)")
    if trajectory is not None:
        check_type(owner, "trajectory", trajectory, _trajectory.Trajectory, "a Trajectory (parallel.trajectory)")
    if kinematics is None:
        return
    check_type(owner, "kinematics", kinematics, Kinematics, "a Kinematics (parallel.inverse_kinematics)")
    n = mechanism.n_joints
    if kinematics.labels.shape[-1] != n:
        raise ValueError(
            f"{owner}: `kinematics` has {kinematics.labels.shape[-1]} joints, {type(mechanism).__name__} has {n}: "
            "it is another mechanism's"
        )
    if trajectory is not None and not is_traced(kinematics.times, trajectory.times):
        a, b = np.asarray(kinematics.times), np.asarray(trajectory.times)
        if a.shape != b.shape or not np.array_equal(a, b):
            raise ValueError(
                f"{owner}: `kinematics` was computed at other times than `trajectory`'s ({a.shape[0]} samples "
                f"against {b.shape[0]}): pass the kinematics of this trajectory"
            )


def inverse_kinematics(
    mechanism: AbstractParallelMechanism,
    trajectory: _trajectory.Trajectory,
    *,
    method: Literal["exact", "one_step"] = "exact",
    stride: int | None = None,
    throw: bool = True,
) -> Kinematics:
    """Joint positions, rates and accelerations along a platform trajectory.

    **Arguments:**

    - `mechanism`: a parallel mechanism (`StewartPlatform`, `ThreeUPSUPUS`, …).
    - `trajectory`: a `Trajectory` (see `diffmech.parallel.trajectory`).
    - `method`: `"exact"` (closure by Newton, rates by the implicit function theorem)
      or `"one_step"` (the seeds' explicit scheme; needs uniform time steps).
    - `stride`: exact mode: the continuation runs sequentially through every
      `stride`-th sample (default: `max(1, N // 400)`); all samples are then solved in parallel by Newton from the
      cubic Hermite interpolant (positions and IFT rates) of the continuation, until
      the update is at most 1e-9 (relative; one step at least, eight at most), so that
      any stride gives the same solutions to round-off. The condition number reported
      for a sample is the larger of its two continuation samples'. By default the
      bundled mechanisms' legs are solved in closed form instead (each U/S-P-U/S
      leg's joints from the platform pose, the assembly of the home configuration;
      for the 3UPS–UPU–S the turn about the prescribed normal first, from its U-P-U
      leg), every sample at once, Newton only certifying; each sample's own
      condition number is reported. An explicit `stride` keeps the continuation.
    - `throw`: raise at the first sample that failed: eagerly a
      `diffmech.MotionLimitError` (a joint limit, naming the joint; or a leg that
      cannot reach the pose) or `diffmech.SingularError`, naming the sample, its
      time and the residual; under `jit`/`vmap` Equinox's run-time error (see
      `diffmech._result`). With `throw=False`, read `converged`, `status`, `result`.

    **Returns:** a `Kinematics`.
    """
    if method not in ("exact", "one_step"):
        raise ValueError(f"parallel.inverse_kinematics: `method` must be 'exact' or 'one_step'; got {method!r}")
    check_kinematics_arguments("parallel.inverse_kinematics", mechanism, trajectory=trajectory)
    eager = not is_traced(mechanism, trajectory)
    if eager:
        _trajectory.check(trajectory, uniform=method == "one_step")
    if stride is None:  # 0: every sample at once from the legs' closed form, where they have one
        stride = 0 if closed_form_legs(mechanism) else max(1, trajectory.times.shape[-1] // 400)
    elif isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f"parallel.inverse_kinematics: `stride` must be an integer ≥ 1 or None; got {stride!r}")
    if method == "exact":
        args = (mechanism, trajectory)
        kin = _cache.program("exact", _exact, _exact_jit, args, (stride,)) if eager else _exact(*args, stride)
    else:
        kin = (_one_step_jit if eager else _one_step)(mechanism, trajectory)
    if throw and eager:
        raise_failure(mechanism, kin)
    return kin.error_if_failed() if throw and not eager else kin


def raise_failure(mech: AbstractParallelMechanism, kin: Kinematics) -> None:
    """Eager: raise the first failed sample, if any, as a `diffmech.ClosureError`
    subclass naming the sample, its time, the cause and the residual."""
    conv = np.asarray(kin.converged)
    if conv.all():
        return
    k = int(np.argmin(conv))
    t = float(kin.times[k])
    labels = np.asarray(kin.labels[k])
    lo = np.concatenate([np.asarray(c.lower) for c in mech.chains])
    hi = np.concatenate([np.asarray(c.upper) for c in mech.chains])
    names = mech.joint_names()
    out = [
        f"{names[i]} = {labels[i]:.6g} outside [{lo[i]:.6g}, {hi[i]:.6g}]"
        for i in range(len(names))
        if not (lo[i] <= labels[i] <= hi[i])
    ]
    name = type(mech).__name__
    res = float(kin.residual[k])
    if out:
        raise MotionLimitError(
            f"{name}: the trajectory leaves the joint limits at sample {k} (t = {t:.6g} s): "
            + "; ".join(out)
            + f"; closure residual {res:.3e}",
            status="joint limit",
            index=(k,),
            residual=res,
        )
    if np.isfinite(kin.condition[k]) and kin.condition[k] >= COND_LIMIT:
        ranks = chain_ranks(mech, kin.labels[k])
        raise SingularError(
            f"{name}: singular configuration at sample {k} (t = {t:.6g} s): closure Jacobian condition number "
            f"{float(kin.condition[k]):.3g}; chain screw-matrix ranks {ranks}; closure residual {res:.3e}",
            status="singular configuration",
            index=(k,),
            residual=res,
        )
    if int(np.asarray(code(kin.status)).reshape(-1)[k]) == int(code(RESULTS.unreachable_pose)):
        d = np.asarray(kin.platform_d[k])
        raise MotionLimitError(
            f"{name}: the pose at sample {k} (t = {t:.6g} s) is out of reach: the closure is solved (residual "
            f"{res:.3e}) but the platform is not where the trajectory puts it (solved displacement d = "
            f"{np.array2string(d, precision=4)}); the mechanism's {mech.task_dim} degrees of freedom cannot follow "
            "this trajectory",
            status="unreachable pose",
            index=(k,),
            residual=res,
        )
    raise MotionLimitError(
        f"{name}: no closed configuration at sample {k} (t = {t:.6g} s): a leg cannot reach the platform pose "
        f"(closure residual {res:.3e})",
        status="motion limit",
        index=(k,),
        residual=res,
    )


def chain_ranks(mech: AbstractParallelMechanism, labels, rtol: float = 1e-9) -> dict[str, int]:
    """Numerical rank of every chain's screw matrix of `mech` at joint labels `labels`
    (eager; singular values below `rtol` times the largest count as zero): a dict
    from chain name to rank."""
    check_kinematics_arguments("parallel.chain_ranks", mech)
    check_shape("parallel.chain_ranks", "labels", labels, (mech.n_joints,))
    theta = jnp.asarray(labels) - mech.home_labels()
    out = {}
    for ch, th in zip(mech.chains, split_joints(mech, theta)):
        s = np.linalg.svd(np.asarray(chain_screws(ch, th)), compute_uv=False)
        out[ch.name] = int(np.sum(s > rtol * max(s[0], 1e-300)))
    return out


@dataclasses.dataclass(frozen=True)
class Mobility:
    """Mobility of a parallel mechanism at one configuration, by reciprocal screws
    (seed 004, Eqs. 10–18). Plain NumPy values (an eager analysis).

    **Fields:**

    - `dof`: `6 − rank` of the constraint wrenches (the platform's instantaneous
      degrees of freedom with the actuators free).
    - `free_twists` `(dof, 6)`: an orthonormal basis of the platform twists reciprocal
      to every constraint wrench.
    - `constraint_wrenches` `(k, 6)`: per chain, a basis of the wrenches reciprocal to
      all its joint screws, stacked; `constraint_rank` their rank.
    - `chain_ranks`: rank of each chain's screw matrix (a chain whose rank is below its
      number of joints has a redundant or singular screw system).
    - `actuated_rank`: rank of the constraint and actuation wrenches together (6: the
      locked actuators hold the platform; below 6: an actuation singularity).
    - `redundancy`: number of actuators beyond those needed (`n_act − (actuated_rank −
      constraint_rank)`).
    """

    dof: int
    free_twists: np.ndarray
    constraint_wrenches: np.ndarray
    constraint_rank: int
    chain_ranks: dict
    actuated_rank: int
    redundancy: int


def _null(M, rtol):
    """Orthonormal basis (rows) of the null space of `M` (rows × 6), and its rank."""
    if M.shape[0] == 0:
        return np.eye(M.shape[1]), 0
    _, s, vt = np.linalg.svd(M)
    r = int(np.sum(s > rtol * max(s[0], 1e-300)))
    return vt[r:], r


@_cache.kept()
def _pose_screws(mechanism, R, pos):
    """Close the chains at the pose (R, pos) from home by Newton, one compiled program;
    returns (converged, residual, screw matrix of every chain, the platform's pose
    reached `(R, position)`: the task may prescribe only part of the pose)."""
    sol = _closure.root(
        residual,
        jnp.zeros(mechanism.n_joints + 6),
        (R, pos - R @ mechanism.reference),
        mechanism,
        throw=False,  # `mobility` names a pose the chains cannot reach
    )
    th, phi, d = split(mechanism, sol.value)
    R_at = _screw.rotation_vector(phi)
    reached = (R_at, R_at @ mechanism.reference + d)
    return sol.converged, sol.residual, map_chains(mechanism, chain_screws, (th,)), reached


def mobility(mechanism: AbstractParallelMechanism, pose=None, *, rtol: float = 1e-9) -> Mobility:
    """Degrees of freedom, free twists and constraint wrenches at a platform pose.

    **Arguments:** `mechanism`: the parallel mechanism; `pose`: `None` (home) or
    `(R, position)` of the platform's reference
    point, where the chains are closed by Newton from home first (`ValueError` if they
    cannot be, or if the pose they close at is not this one: a mechanism whose
    trajectory prescribes only part of the pose, as the 3UPS–UPU–S's platform normal,
    takes the rest from its closure); `rtol`: relative singular-value threshold for
    ranks.
    """
    N6 = np.asarray(_screw.N_MATRIX)
    check_kinematics_arguments("parallel.mobility", mechanism)
    check_scalar("parallel.mobility", "rtol", rtol, positive=True)
    # the pose on the host (NumPy): an eager `jnp` operation is a small program to compile
    if pose is None:
        R, pos = np.eye(3), np.asarray(mechanism.reference, dtype=float)
    else:
        if not isinstance(pose, (tuple, list)) or len(pose) != 2:
            raise ValueError(
                f"parallel.mobility: `pose` must be a pair (R (3, 3), position (3,)) or None; got {pose!r:.80}"
            )
        check_shape("parallel.mobility", "pose[0] (R)", pose[0], (3, 3))
        check_shape("parallel.mobility", "pose[1] (position)", pose[1], (3,))
        R, pos = (np.asarray(v, dtype=float) for v in pose)
    converged, res, screws, (R_at, pos_at) = _pose_screws(mechanism, R, pos)
    if not bool(converged):
        raise ValueError(
            f"parallel.mobility: the chains of {type(mechanism).__name__} cannot reach this pose "
            f"(closure residual {float(res):.3g})"
        )
    # the task may prescribe only part of the pose (the 3UPS–UPU–S: the platform normal);
    # the rest is what the closure gives, and must be the pose asked for
    dR = float(np.max(np.abs(np.asarray(R_at) - R)))
    dp = float(np.max(np.abs(np.asarray(pos_at) - pos)))
    if dR > 1e-9 or dp > 1e-9 * (1.0 + float(np.max(np.abs(pos)))):
        raise ValueError(
            f"parallel.mobility: {type(mechanism).__name__} cannot take this pose: with the coordinates its "
            f"trajectory prescribes it closes at position {np.round(np.asarray(pos_at), 9).tolist()} "
            f"(asked {np.round(np.asarray(pos), 9).tolist()}; orientation differs by {dR:.3g})"
        )
    cons, act, ranks = [], [], {}
    for ch, S in zip(mechanism.chains, screws):
        S = np.asarray(S)
        w, r = _null(S.T @ N6, rtol)
        ranks[ch.name] = r
        cons.append(w)
        passive = S[:, [j for j in range(ch.n) if not ch.actuated[j]]]
        act.append(_null(passive.T @ N6, rtol)[0])
    W = np.vstack(cons) if cons else np.zeros((0, 6))
    free, rc = _null(W @ N6, rtol)
    _, ra = _null(np.vstack(cons + act), rtol)
    n_act = len(mechanism.actuated)
    return Mobility(
        dof=6 - rc,
        free_twists=free,
        constraint_wrenches=W,
        constraint_rank=rc,
        chain_ranks=ranks,
        actuated_rank=ra,
        redundancy=n_act - (ra - rc),
    )

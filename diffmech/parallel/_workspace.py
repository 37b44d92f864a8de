"""Workspaces and singularity sections of leg-driven parallel mechanisms: the
Gough–Stewart platform (six legs in space) and the planar 3-RPR (three legs in the
plane).

Both are legs of variable length between base joint centres `a_i` and platform joint
centres `b_i` (platform frame, about the platform's reference point): at a pose
(reference point `p`, orientation `R`) leg `i` is `B_i − a_i` with `B_i = p + R b_i`,
its length `ρ_i` and unit direction `u_i`. A pose is in the constant-orientation
workspace when every leg length is within its limits and every leg's direction is
within `joint_angle` of its home direction at both of its joints (the base joint in
the base frame, the platform joint in the platform frame: the passive joints' range).

The leg rates are `ρ̇ = J (ω; ṗ)` with rows `[(B_i − p) × u_i, u_i]` (planar: the
moment's z component): a type-II (parallel, Gosselin–Angeles) singularity is where
`J` is singular and the platform gains a motion with the legs locked. `det J` is
evaluated with each row multiplied by its leg's length and lengths divided by the
platform's size (a polynomial in the pose, without the false sign change a unit
direction makes through a leg of zero length); its zero set in a plane section is
traced as contour lines (`contourpy`, matplotlib's) and every vertex then moved onto
`det J = 0` by Newton along the gradient in the plane.
"""

from __future__ import annotations

import contourpy
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .. import _cache, _linalg
from .._validate import as_floats, check_array
from .._xla import eager_program
from ._model import AbstractParallelMechanism


class ThreeRPR(eqx.Module):
    """Planar 3-RPR parallel manipulator: three legs, each a revolute joint on the
    base, an actuated prismatic joint and a revolute joint on the platform; the
    platform's pose is its reference point `(x, y)` and its angle `φ` (3 degrees of
    freedom).

    **Fields:** `base` `(3, 2)`: the base joint centres; `platform` `(3, 2)`: the
    platform joint centres in the platform frame (about its reference point, at `φ =
    0`); `home` `(2,)`: the reference point's home position (at `φ = 0`; the legs'
    home directions, from which the passive joints' angles are measured, are there);
    `lower`, `upper`: the legs' length limits (the prismatic joints' stroke); `name`
    (static).
    """

    base: Float[Array, "3 2"]
    platform: Float[Array, "3 2"]
    home: Float[Array, " 2"]
    lower: Float[Array, ""]
    upper: Float[Array, ""]
    name: str = eqx.field(static=True, default="3-RPR")

    def __check_init__(self):
        owner = f"ThreeRPR {self.name}"
        check_array(owner, "base", self.base, (3, 2))
        check_array(owner, "platform", self.platform, (3, 2))
        check_array(owner, "home", self.home, (2,))
        check_array(owner, "lower", self.lower, (), positive=True)
        check_array(owner, "upper", self.upper, (), positive=True)
        if not float(self.lower) < float(self.upper):
            raise ValueError(f"{owner}: leg limits must be lower < upper; got {float(self.lower)}, {float(self.upper)}")

    def leg_lengths(self, x, y, phi) -> Float[Array, "... 3"]:
        """The three leg lengths at pose `(x, y, φ)` (broadcast)."""
        B = _planar_joints(self.platform, jnp.asarray(phi, dtype=float), jnp.stack(jnp.broadcast_arrays(x, y), -1))
        return jnp.linalg.norm(B - self.base, axis=-1)


def _planar_joints(b, phi, p):
    c, s = jnp.cos(phi)[..., None], jnp.sin(phi)[..., None]
    return p[..., None, :] + jnp.stack([c * b[:, 0] - s * b[:, 1], s * b[:, 0] + c * b[:, 1]], axis=-1)


class Workspace(eqx.Module):
    """A constant-orientation workspace on a grid and the type-II singularity locus in
    one plane section.

    - `axes`: the grid's axes (`x`, `y`, and `z` for the Stewart platform);
    - `inside` `(nx, ny[, nz])`: poses where every leg and joint is within its limits;
      `reason` (same shape): 0 inside, 1 a leg too short, 2 too long, 3 a joint past
      `joint_angle` (the first that applies);
    - `lengths` `(…, k)`: the leg lengths at every grid point;
    - `det` `(…)`: `det J` with each row scaled by its leg's length (lengths over the
      platform's size: a polynomial in the position), whose sign changes across a
      type-II singularity;
    - `size`: the workspace's volume (area) by cells (`inside` count × cell);
    - `section`: the plane of the locus (`z` for the Stewart platform, NaN planar);
      `locus` `(M, d)`: points on `det J = 0` in that plane (contour lines, NaN rows
      between lines), each refined to round-off; `locus_det` `(M,)`: `det J` there.
    """

    axes: tuple[Array, ...]
    inside: Bool[Array, ...]
    reason: Array
    lengths: Float[Array, "... k"]
    det: Float[Array, ...]
    size: float = eqx.field(static=True)
    section: float = eqx.field(static=True)
    locus: Float[Array, "M d"]
    locus_det: Float[Array, " M"]


def _legs(mech):
    """(base points a (k, d), platform points b (k, d) about the reference point, length
    limits (k,) ×2, scale): from a `StewartPlatform`'s chains or a `ThreeRPR`."""
    if isinstance(mech, ThreeRPR):
        k = 3
        scale = jnp.mean(jnp.linalg.norm(mech.platform, axis=-1))
        return mech.base, mech.platform, jnp.full(k, mech.lower), jnp.full(k, mech.upper), scale
    a = jnp.stack([ch.points[0] for ch in mech.chains])
    c = jnp.stack([ch.attach for ch in mech.chains])
    offset = jnp.linalg.norm(c - a, axis=-1) - jnp.stack([ch.home[3] for ch in mech.chains])
    lo = jnp.stack([ch.lower[3] for ch in mech.chains]) + offset
    hi = jnp.stack([ch.upper[3] for ch in mech.chains]) + offset
    b = c - mech.reference
    return a, b, lo, hi, jnp.mean(jnp.linalg.norm(b, axis=-1))


def _moment(r, u):
    if r.shape[-1] == 2:
        return (r[..., 0] * u[..., 1] - r[..., 1] * u[..., 0])[..., None]
    return jnp.cross(r, u)


def _joints_at(b, R, p):
    if b.shape[-1] == 2:
        return _planar_joints(b, R, p)
    return p[..., None, :] + jnp.einsum("ij,kj->ki", R, b)


def _jacobian_det(p, R, a, b, scale):
    """det J with each row scaled by its leg's length over `scale` (rows `[(B − p) ×
    v, v] / scale²`, `v` the leg vector): the same zero set, but polynomial in the pose
    (a unit direction flips through a leg of zero length, which would draw a false
    sign change)."""
    B = _joints_at(b, R, p)
    v = (B - a) / scale
    return _linalg.det(jnp.concatenate([_moment((B - p[..., None, :]) / scale, v), v], axis=-1))


@_cache.kept()
def _grid(points, R, a, b, lo, hi, home_u, joint_angle, scale):
    # at home the platform frame is the base frame: the legs' home directions serve both ends
    home_w = home_u

    def one(p):
        B = _joints_at(b, R, p)
        v = B - a
        rho = jnp.linalg.norm(v, axis=-1)
        u = v / rho[:, None]
        if b.shape[-1] == 3:  # the leg's direction in the platform frame
            w = u @ R
        else:
            c, s = jnp.cos(R), jnp.sin(R)
            w = jnp.stack([c * u[:, 0] + s * u[:, 1], -s * u[:, 0] + c * u[:, 1]], axis=-1)
        cos_base = jnp.sum(u * home_u, axis=-1)
        cos_top = jnp.sum(w * home_w, axis=-1)
        bent = (cos_base < jnp.cos(joint_angle)) | (cos_top < jnp.cos(joint_angle))
        reason = jnp.where(jnp.any(rho < lo), 1, jnp.where(jnp.any(rho > hi), 2, jnp.where(jnp.any(bent), 3, 0)))
        return rho, reason, _jacobian_det(p, R, a, b, scale)

    return jax.vmap(one)(points)


@_cache.kept()
def _refine(points, normal_plane, R, a, b, scale):
    """Newton along the in-plane gradient of det J onto its zero set."""

    def one(p):
        f = lambda q: _jacobian_det(q, R, a, b, scale)  # noqa: E731

        def body(_, q):
            g = jax.grad(f)(q) * normal_plane
            return q - f(q) * g / jnp.sum(g * g)

        q = jax.lax.fori_loop(0, 8, body, p)
        return q, f(q)

    return jax.vmap(one)(points)


def _axis(owner, name, v):
    arr = as_floats(owner, name, v)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{owner}: `{name}` must be a non-empty 1-D grid axis; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{owner}: `{name}` must be finite; entry {int(np.argwhere(~np.isfinite(arr))[0][0])} is not")
    d = np.diff(arr)
    # the size counts cells: the axis is evenly spaced, ascending or descending
    if d.size and (not (np.all(d > 0) or np.all(d < 0)) or np.ptp(d) > 1e-9 * np.max(np.abs(d))):
        raise ValueError(f"{owner}: `{name}` must be an evenly spaced, strictly monotone grid axis (np.linspace)")
    return arr


def workspace(
    mech, x, y, z=None, *, orientation=None, joint_angle: float = np.pi / 2, section: float | None = None
) -> Workspace:
    """The constant-orientation workspace of a Gough–Stewart platform or a planar
    3-RPR on a grid, and its type-II singularity locus in a plane section (see the
    module notes).

    **Arguments:**

    - `mech`: a `StewartPlatform` (leg limits: its P joints' stroke) or a `ThreeRPR`;
    - `x`, `y` (and `z` for the Stewart platform): 1-D grid axes for the reference
      point's position (m);
    - `orientation`: the platform's constant orientation: a `(3, 3)` rotation (Stewart,
      default: home) or an angle `φ` (3-RPR, default 0);
    - `joint_angle`: the passive joints' range, the largest angle between a leg and
      its home direction at either end (rad; default π/2);
    - `section`: the Stewart platform's plane `z = section` for the singularity locus
      (default: the middle of `z`).

    **Returns:** a `Workspace`.
    """
    owner = "parallel.workspace"
    planar = isinstance(mech, ThreeRPR)
    if not planar and not (isinstance(mech, AbstractParallelMechanism) and len(mech.chains) == 6):
        raise ValueError(f"{owner}: `mech` must be a StewartPlatform or a ThreeRPR; got {type(mech).__name__}")
    axes = [_axis(owner, "x", x), _axis(owner, "y", y)]
    if planar and z is not None:
        raise ValueError(f"{owner}: a ThreeRPR is planar: give `x` and `y` only")
    if not planar:
        if z is None:
            raise ValueError(f"{owner}: the Stewart platform's grid needs `z` too")
        axes.append(_axis(owner, "z", z))
    ja = as_floats(owner, "joint_angle", joint_angle)
    if ja.shape != () or not 0 < float(ja) <= np.pi:
        raise ValueError(f"{owner}: `joint_angle` must be a number in (0, π]; got {joint_angle!r}")
    if planar:
        R = jnp.asarray(0.0 if orientation is None else as_floats(owner, "orientation", orientation), dtype=float)
        if R.shape != () or not np.isfinite(float(R)):
            raise ValueError(f"{owner}: a ThreeRPR's `orientation` is one finite angle (rad); got {orientation!r}")
    else:
        R = jnp.eye(3) if orientation is None else jnp.asarray(as_floats(owner, "orientation", orientation))
        Rn = np.asarray(R)
        if Rn.shape != (3, 3) or not np.allclose(Rn @ Rn.T, np.eye(3), atol=1e-9) or np.linalg.det(Rn) < 0:
            raise ValueError(f"{owner}: `orientation` must be a (3, 3) rotation matrix; got {Rn.tolist()!r:.120}")
    a, b, lo, hi, scale, home_u = _setup(mech, planar)
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    shape = mesh.shape[:-1]
    rho, reason, det = _grid(mesh.reshape(-1, len(axes)), R, a, b, lo, hi, home_u, np.asarray(ja, float), scale)
    reason = np.asarray(reason).reshape(shape)
    det = np.asarray(det).reshape(shape)
    cell = float(np.prod([abs(ax[1] - ax[0]) if ax.size > 1 else 0.0 for ax in axes]))
    if planar:
        plane, level = det, float("nan")
    else:
        level = float(axes[2][len(axes[2]) // 2]) if section is None else float(section)
        if not np.isfinite(level):
            raise ValueError(f"{owner}: `section` must be finite; got {section!r}")
        pts = np.stack(np.meshgrid(axes[0], axes[1], [level], indexing="ij"), axis=-1)[:, :, 0]
        plane = np.asarray(_grid(pts.reshape(-1, 3), R, a, b, lo, hi, home_u, np.asarray(ja, float), scale)[2])
        plane = plane.reshape(pts.shape[:2])
    locus, locus_det = _locus(axes, plane, level, R, a, b, scale, planar)
    return Workspace(
        axes=tuple(jnp.asarray(ax) for ax in axes),
        inside=jnp.asarray(reason == 0),
        reason=jnp.asarray(reason),
        lengths=jax.device_put(np.asarray(rho).reshape(shape + (-1,))),
        det=jnp.asarray(det),
        size=float(np.sum(reason == 0)) * cell,
        section=level,
        locus=locus,
        locus_det=locus_det,
    )


@eager_program  # eagerly one program, not op by op
def _setup(mech, planar):
    """The legs (`_legs`) and their unit directions at home."""
    a, b, lo, hi, scale = _legs(mech)
    home = _joints_at(b, jnp.asarray(0.0) if planar else jnp.eye(3), jnp.zeros(b.shape[-1]) + _home_point(mech))
    return a, b, lo, hi, scale, (home - a) / jnp.linalg.norm(home - a, axis=-1, keepdims=True)


def _home_point(mech):
    return mech.home if isinstance(mech, ThreeRPR) else mech.reference


def _locus(axes, plane, level, R, a, b, scale, planar):
    d = 2 if planar else 3
    if plane.shape[0] < 2 or plane.shape[1] < 2:
        return jnp.zeros((0, d)), jnp.zeros((0,))
    gen = contourpy.contour_generator(np.asarray(axes[0]), np.asarray(axes[1]), plane.T)
    lines = [ln for ln in gen.lines(0.0) if len(ln)]
    if not lines:
        return jnp.zeros((0, d)), jnp.zeros((0,))
    rows, ends = [], []
    for ln in lines:
        rows.append(ln)
        ends.append(len(ln))
    P = np.concatenate(rows)
    if not planar:
        P = np.concatenate([P, np.full((P.shape[0], 1), level)], axis=1)
    mask = np.ones(d)
    if not planar:
        mask[2] = 0.0  # stay in the section
    q, f = (np.asarray(v) for v in _refine(P, mask, R, a, b, scale))
    out, vals, k = [], [], 0
    for n in ends:
        out += [q[k : k + n], np.full((1, d), np.nan)]
        vals += [f[k : k + n], [np.nan]]
        k += n
    return jax.device_put(np.concatenate(out)[:-1]), jax.device_put(np.concatenate(vals)[:-1])


class Transmissibility(eqx.Module):
    """Motion/force transmissibility and conditioning of a leg-driven parallel
    mechanism along its poses (the output transmission index of Wang, Liu, Wang 2010,
    *Mech. Mach. Theory* 45, normalised by the joint's velocity: no characteristic
    length).

    - `index` `(N,)`: the local transmission index, the smallest over the legs of
      their output transmission indices (the input ones are 1: each leg's force acts
      along its own prismatic joint); 0 at a type-II singularity, 1 at best;
    - `legs` `(N, k)`: each leg's output transmission index in its pressure-angle
      form, `|u_i · v_i| / |v_i|`: the cosine of the angle between the leg's force
      (along the leg) and the velocity `v_i` of its platform joint in the motion that
      leg alone drives (the others locked, `W T = I`); 1 when the force pushes the
      joint along its path, 0 when the platform could move with every leg locked;
    - `condition` `(N,)`: the 2-norm condition number of the kinematic Jacobian (leg
      rates from the platform twist, moments over `arm`, the largest distance of a
      platform joint from the reference point); inf at a singularity.
    """

    index: Float[Array, " N"]
    legs: Float[Array, "N k"]
    condition: Float[Array, " N"]
    arm: float = eqx.field(static=True)


def _poses(owner, mech, poses):
    """(positions (N, d), orientations (N, 3, 3) or angles (N,)) of the reference point."""
    from ._kinematics import Kinematics
    from ._trajectory import Trajectory

    if isinstance(mech, ThreeRPR):
        P = as_floats(owner, "poses", poses)
        if P.ndim != 2 or P.shape[1] != 3 or not np.all(np.isfinite(P)):
            raise ValueError(f"{owner}: a ThreeRPR's `poses` are finite (N, 3) rows (x, y, φ); got shape {P.shape}")
        return P[:, :2], P[:, 2]
    if isinstance(poses, Kinematics):
        R, d = np.asarray(poses.platform_R), np.asarray(poses.platform_d)
        return np.einsum("nij,j->ni", R, np.asarray(mech.reference)) + d, R
    if isinstance(poses, Trajectory):
        return np.asarray(poses.position), np.asarray(poses.R)
    raise ValueError(f"{owner}: `poses` must be a parallel.Kinematics or a Trajectory; got {type(poses).__name__}")


def transmissibility(mech, poses) -> Transmissibility:
    """The local transmission index, each leg's output transmission index and the
    kinematic Jacobian's condition number along a trajectory (see
    `Transmissibility`).

    **Arguments:** `mech`: a `StewartPlatform` or a `ThreeRPR`; `poses`: for the
    Stewart platform a `Kinematics` (`parallel.inverse_kinematics`) or a `Trajectory`,
    for the 3-RPR `(N, 3)` rows `(x, y, φ)`.

    **Returns:** a `Transmissibility`.
    """
    owner = "parallel.transmissibility"
    planar = isinstance(mech, ThreeRPR)
    if not planar and not (isinstance(mech, AbstractParallelMechanism) and len(mech.chains) == 6):
        raise ValueError(f"{owner}: `mech` must be a StewartPlatform or a ThreeRPR; got {type(mech).__name__}")
    p, R = _poses(owner, mech, poses)
    a, b, _, _, _ = (np.asarray(v) for v in _legs(mech))
    arm = float(np.max(np.linalg.norm(b, axis=-1)))
    B = np.asarray(_joints_at_many(b, R, p))
    u = B - a
    u = u / np.linalg.norm(u, axis=-1, keepdims=True)
    r = B - p[:, None, :]
    m = np.asarray(_moment(jnp.asarray(r), jnp.asarray(u)))  # leg forces' moments about the reference point
    W = np.concatenate([m, u], axis=-1)  # rows (moment; force): the Jacobian's, J (ω; v) = ρ̇
    s = np.linalg.svd(np.concatenate([m / arm, u], axis=-1), compute_uv=False)
    with np.errstate(all="ignore"):
        condition = np.where(s[:, -1] > 0, s[:, 0] / s[:, -1], np.inf)
    regular = np.isfinite(condition) & (condition < 1e15)  # exactly singular: no twist, index 0
    eye = np.broadcast_to(np.eye(W.shape[-1]), W.shape)
    # column i: the platform twist (ω; v) leg i alone drives (W T = I)
    T = np.where(regular[:, None, None], np.linalg.solve(np.where(regular[:, None, None], W, eye), eye), 0.0)
    k = u.shape[1]
    dw = 1 if planar else 3
    legs = np.zeros((p.shape[0], k))
    for i in range(k):
        w, v = T[:, :dw, i], T[:, dw:, i]
        ri = r[:, i]
        spin = w * np.stack([-ri[:, 1], ri[:, 0]], axis=-1) if planar else np.cross(w, ri)
        vel = v + spin  # leg i's platform joint in the motion leg i alone drives
        with np.errstate(all="ignore"):
            cos = np.abs(np.sum(u[:, i] * vel, axis=-1)) / np.linalg.norm(vel, axis=-1)
        legs[:, i] = np.where(regular & np.isfinite(cos), cos, 0.0)
    return Transmissibility(
        index=jnp.asarray(legs.min(axis=1)), legs=jnp.asarray(legs), condition=jnp.asarray(condition), arm=arm
    )


def _joints_at_many(b, R, p):
    if b.shape[-1] == 2:
        return _planar_joints(jnp.asarray(b), jnp.asarray(R), jnp.asarray(p))
    return p[:, None, :] + np.einsum("nij,kj->nki", R, b)

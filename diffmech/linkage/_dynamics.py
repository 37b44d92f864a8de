"""Dynamics of a planar, spherical or spatial linkage on the closure core.

The linkage has one degree of freedom, its input `u`. Every joint's position is an
exact function of `u` (the closure, solved by Newton), and so are the pose of every
link and its derivatives (the implicit function theorem). With `c_k(u)` the centre of
mass and `φ_k(u)` the angle of link `k`, the kinetic energy is `½ M(u) u̇²` with the
generalised inertia

    M(u) = Σ_k m_k |c_k′(u)|² + I_k φ_k′(u)²,

the potential `V(u) = −Σ_k m_k g · c_k(u)`, and Lagrange's equation for the one
coordinate is the reduced equation

    M(u) ü + ½ M′(u) u̇² + V′(u) = Q(t, u, u̇),

`Q` the generalised force of the drive (a torque on a revolute input, a force on a
prismatic one or an actuator). `c′`, `φ′` come from one `jax.jvp` of the link poses
along the closure's tangent `(x′(u), 1)` (`closure.rates`), `M′` from a `jvp` of `M`
along the same tangent. No multiplier, no constraint drift: the loop is closed by
Newton wherever a configuration is needed. On the sphere and in space a link's
rotational term is `ω_k′ᵀ I_k ω_k′`, with `ω` the vector of `Ṙ Rᵀ` of the link's
frame `R` (two of its elements on the sphere, three of its joints in space) and `I`
its inertia tensor (carried by the frame). A spatial link of two joints (an S–S rod)
has no frame: its spin about its own axis is not fixed by the joints. It is taken
as a slender rod with no axial inertia (its centre of mass on the axis, its
transverse moment `I_t`), so the idle spin carries neither energy nor a moment and
its rotational term is `I_t |ω⊥′|²`, `ω⊥ = e × ė / |e|²` (`e` the rod's axis).

With `k` inputs `u` `(k,)` the same holds with the tangents `∂x/∂u` `(n, k)`: the
kinetic energy is `½ u̇ᵀ M(u) u̇`, `M = Σ_k m_k J_cᵀ J_c + J_ωᵀ I_k J_ω` `(k, k)`, and
Lagrange's equations `M ü + Ṁ u̇ − ½ ∇(u̇ᵀ M u̇) + ∇V = Q` (`∂M/∂uᵢ` by a jvp along
each tangent).

Applied loads (springs, dampers, constant forces and couples) act in every geometry.
"""

import functools
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, Unpack

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Bool, Float

from .. import _cache, _closure, _linalg
from .._drives import as_affine
from .._geometry import cross, dot, perp, unit
from .._integrator import Integrator, IntegratorFields, Resolved, as_integrator
from .._result import RESULTS, AbstractResult, as_results, code, finish, save_status
from .._screw import vee
from .._validate import (
    UnknownNameError,
    array_module,
    as_floats,
    check_finite,
    check_integration,
    check_scalar,
    check_shape,
    is_traced,
)
from .._xla import eager_program, filter_jit, host_array, pad_rows, size_class
from . import _gears, _schema
from ._equations import normals, orthonormal
from ._joints import KINDS, REACTION_UNKNOWNS
from ._model import Linkage, joint_coords, prepare, prepared_residual
from ._simulate import Motion, check_motion, joint_path, sweep_functional, widths


def rod_mass_properties(
    lk: Linkage, density: float = 1.0, block_mass: float = 0.05, block_inertia: float = 1e-5
) -> Linkage:
    """`lk` with the mass properties of uniform slender rods of `density` (kg/m)
    along the edges of every moving link's polygon of points (its revolute or
    spherical joints, in the order listed; one rod for a binary link, a closed
    polygon of rods for a link of three or more points), at the initial
    configuration. A rod of mass `m` and length `L` has the moment `m L²/12` about
    its centre across its axis and none along it (in space, the tensor
    `m L²/12 (1 − e eᵀ)`; a polygon's tensor adds the parallel-axis terms). A planar
    link with a single point (a slider block on a line) is a block of `block_mass`
    (kg) and `block_inertia` (kg m²) centred on that point. The ground carries none.
    Planar and spatial linkages."""
    if lk.geometry == "spherical":
        raise ValueError(f"rod_mass_properties: planar and spatial linkages only; {lk.name!r} is spherical")
    check_scalar("linkage.rod_mass_properties", "density", density, positive=True)
    check_scalar("linkage.rod_mass_properties", "block_mass", block_mass, nonnegative=True)
    check_scalar("linkage.rod_mass_properties", "block_inertia", block_inertia, nonnegative=True)
    planar = lk.geometry == "planar"
    dim = 2 if planar else 3
    C = np.asarray(lk.coords)
    zero_inertia = 0.0 if planar else np.zeros((3, 3))
    masses, coms, inertias = [], [], []
    for li, members in enumerate(lk.links):
        pts = [C[j, :dim] for j in members if lk.types[j] in ("R", "S")]
        if li == lk.ground or not pts:
            masses.append(0.0)
            coms.append(np.zeros(3))
            inertias.append(zero_inertia)
            continue
        if len(pts) == 1:
            masses.append(block_mass)
            coms.append(np.r_[pts[0], 0.0])
            inertias.append(block_inertia)
            continue
        edges = list(zip(pts, pts[1:])) + ([(pts[-1], pts[0])] if len(pts) > 2 else [])
        m_e = [density * np.linalg.norm(b - a) for a, b in edges]
        c_e = [(a + b) / 2 for a, b in edges]
        m = float(sum(m_e))
        c = sum(mi * ci for mi, ci in zip(m_e, c_e)) / m
        if planar:
            inertia = float(
                sum(
                    mi * (np.linalg.norm(b - a) ** 2 / 12 + np.sum((ci - c) ** 2))
                    for mi, ci, (a, b) in zip(m_e, c_e, edges)
                )
            )
        else:
            eye = np.eye(3)
            inertia = sum(
                mi * np.linalg.norm(b - a) ** 2 / 12 * (eye - np.outer(b - a, b - a) / np.sum((b - a) ** 2))
                + mi * (np.sum((ci - c) ** 2) * eye - np.outer(ci - c, ci - c))
                for mi, ci, (a, b) in zip(m_e, c_e, edges)
            )
        masses.append(m)
        coms.append(np.r_[c, np.zeros(3 - dim)])
        inertias.append(inertia)
    return eqx.tree_at(
        lambda k: (k.masses, k.coms, k.inertias),
        lk,
        (jax.device_put(np.asarray(masses)), jax.device_put(np.stack(coms)), jax.device_put(np.stack(inertias))),
        is_leaf=lambda x: x is None,
    )


# --------------------------------------------------------------------------- link poses


def _bodies(lk: Linkage) -> tuple[np.ndarray, tuple]:
    """The moving links (indices, static) and their frames (in space a link of two
    joints is an S–S rod, `("rod", a, b)`; the rigid ones come first)."""
    if lk.masses is None or lk.inertias is None or lk.coms is None or lk.gravity is None:
        raise ValueError(f"linkage {lk.name!r}: no mass properties (give links mass, com, inertia in the description)")
    rows, rods = [], []
    for k, frame in enumerate(lk.plan.frames):
        if k == lk.ground:
            continue
        if frame is None and lk.geometry == "spatial" and len(lk.links[k]) == 2:
            rods.append(k)
            continue
        if frame is None:
            if not is_traced(lk.masses, lk.inertias) and (float(lk.masses[k]) or np.any(np.asarray(lk.inertias[k]))):
                raise ValueError(
                    f"links.{lk.link_names[k]}: a link with mass needs a frame (two points, or a point and a line)"
                )
            continue
        rows.append(k)
    frames = tuple(lk.plan.frames[k] for k in rows) + tuple(("rod", *lk.links[k]) for k in rods)
    return np.asarray(rows + rods, dtype=int), frames


def _frame_vectors(X, frames):
    """Per body: its frame's origin and direction at coordinates `X` (`pp`: point a,
    b − a; `pl`: the point, the line's normal; `rod`: joint a, b − a). Gathered for
    every body at once (one set of operations, not one per body)."""
    kind = [f[0] for f in frames]
    a, b = (np.asarray([f[i] for f in frames], dtype=np.int64) for i in (1, 2))
    d = 3 if "rod" in kind else 2
    o, tip = X[a, :d], X[b, :d]
    line = np.asarray([k == "pl" for k in kind], dtype=bool)  # a point and a line (a x + b y + c = 0, normal (a, b))
    if not line.any():
        return o, tip - o
    if line.all():
        return o, tip
    return o, jnp.where(line[:, None], tip, tip - o)


def _rotations(X, frames):
    """Per body (spherical, spatial rigid): its frame's origin (the centre of the
    sphere; the first joint in space) and the rotation whose columns are its
    orthonormal axes (`e1` along its first element (from the first joint to the
    second, in space), `e2` in the plane of its first two (three)). Gathered for every
    body at once."""
    three = np.asarray([f[0] == "ppp" for f in frames], dtype=bool)
    a, b = (np.asarray([f[i] for f in frames], dtype=np.int64) for i in (1, 2))
    c = np.asarray([f[3] if f[0] == "ppp" else f[1] for f in frames], dtype=np.int64)
    Xa, Xb, Xc = X[a], X[b], X[c]
    if three.all():
        u, v, origins = Xb - Xa, Xc - Xa, Xa
    elif not three.any():
        u, v, origins = Xa, Xb, jnp.zeros_like(Xa)
    else:
        t = three[:, None]
        u, v, origins = jnp.where(t, Xb - Xa, Xa), jnp.where(t, Xc - Xa, Xb), jnp.where(t, Xa, 0.0)
    e1, e2, e3 = orthonormal(u, v)
    return origins, jnp.stack([e1, e2, e3], axis=-1)


class _Inertial(eqx.Module):
    """The bodies' constants, read from the initial configuration: masses; in the
    plane, the inertias and the centres of mass in their frames (`c = o + α e + β S e`,
    `local` = (α, β)); on the sphere and for rigid links in space, the centres of
    mass and the inertia tensors in the bodies' frames (`c = o + R local`,
    `I = R inertia Rᵀ`); for the S–S rods that close the list in space, `local` =
    (α, 0, 0) (`c = a + α (b − a)`) and the transverse moment on the inertia's
    diagonal."""

    idx: tuple[int, ...] = eqx.field(static=True)
    frames: tuple = eqx.field(static=True)
    geometry: str = eqx.field(static=True)
    n_rods: int = eqx.field(static=True)
    mass: Array
    inertia: Array
    local: Array
    gravity: Array

    @property
    def solid(self) -> bool:
        """Rigid bodies in three dimensions (spherical, spatial)."""
        return self.geometry != "planar"


@eager_program  # eagerly one program (op by op: 24 small ones for the Jansen leg)
def _inertial(lk: Linkage) -> _Inertial:
    rows, frames = _bodies(lk)
    assert lk.masses is not None and lk.inertias is not None and lk.coms is not None  # checked by _bodies
    assert lk.gravity is not None
    idx = np.asarray(rows, dtype=int)
    ids = tuple(int(i) for i in rows)
    n_rods = sum(f[0] == "rod" for f in frames)
    n_rigid = len(frames) - n_rods
    if lk.geometry != "planar":
        C0 = lk.initial()
        parts_local, parts_inertia = [], []
        if n_rigid:
            o0, R0 = _rotations(C0, frames[:n_rigid])
            ri = idx[:n_rigid]
            parts_local.append(jnp.einsum("kji,kj->ki", R0, lk.coms[ri] - o0))
            parts_inertia.append(jnp.einsum("kji,kjl,klm->kim", R0, lk.inertias[ri], R0))
        if n_rods:
            o0, e0 = _frame_vectors(C0, frames[n_rigid:])
            ro = idx[n_rigid:]
            alpha = dot(lk.coms[ro] - o0, e0) / dot(e0, e0)
            parts_local.append(jnp.stack([alpha, jnp.zeros_like(alpha), jnp.zeros_like(alpha)], axis=-1))
            transverse = 0.5 * jnp.trace(lk.inertias[ro], axis1=-2, axis2=-1)
            parts_inertia.append(transverse[:, None, None] * jnp.eye(3, dtype=C0.dtype))
        return _Inertial(
            idx=ids,
            frames=frames,
            geometry=lk.geometry,
            n_rods=n_rods,
            mass=lk.masses[idx],
            inertia=jnp.concatenate(parts_inertia),
            local=jnp.concatenate(parts_local),
            gravity=lk.gravity,
        )
    o, e = _frame_vectors(lk.initial(), frames)
    d = lk.coms[idx, :2] - o
    r2 = dot(e, e)
    local = jnp.stack([dot(d, e) / r2, dot(d, perp(e)) / r2], axis=-1)
    return _Inertial(
        idx=ids,
        frames=frames,
        geometry="planar",
        n_rods=0,
        mass=lk.masses[idx],
        inertia=lk.inertias[idx],
        local=local,
        gravity=lk.gravity[:2],
    )


def _poses(X, body: _Inertial):
    """Centres of mass `(K, dim)` and frames: directions `(K, 2)` in the plane,
    rotations `(K, 3, 3)` on the sphere; in space the rigid links' rotations and the
    rods' directions `(b − a)`."""
    if not body.solid:
        o, e = _frame_vectors(X, body.frames)
        return o + body.local[:, :1] * e + body.local[:, 1:] * perp(e), e
    n_rigid = len(body.frames) - body.n_rods
    cs, R, e = [], None, None
    if n_rigid:
        o, R = _rotations(X, body.frames[:n_rigid])
        cs.append(o + jnp.einsum("kij,kj->ki", R, body.local[:n_rigid]))
    if body.n_rods:
        o, e = _frame_vectors(X, body.frames[n_rigid:])
        cs.append(o + body.local[n_rigid:, :1] * e)
    return jnp.concatenate(cs), (R, e)


def _rotational(f, df, body: _Inertial):
    """`Σ ω′ᵀ I ω′` (per unit input rate) and the bodies' angular rates (in the
    plane a number each; else vectors `(K, 3)`, a rod's the one normal to its axis,
    `e × ė / |e|²`: its spin about the axis is idle and carries no inertia)."""
    if not body.solid:
        dphi = cross(f, df) / dot(f, f)
        return jnp.sum(body.inertia * dphi**2), dphi
    R = f[0]
    n_rigid = len(body.frames) - body.n_rods
    w = _omegas(f, df, body)
    total = jnp.zeros((), body.mass.dtype)
    if n_rigid:
        wb = jnp.einsum("kji,kj->ki", R, w[:n_rigid])  # in the bodies' frames
        total = total + jnp.sum(jnp.einsum("ki,kij,kj->k", wb, body.inertia[:n_rigid], wb))
    if body.n_rods:
        total = total + jnp.sum(body.inertia[n_rigid:, 0, 0] * dot(w[n_rigid:], w[n_rigid:]))
    return total, w


def _omegas(f, df, body: _Inertial):
    """The bodies' angular velocities `(K, 3)` (per unit input) from their frames `f`
    moving at `df` (three dimensions): a rigid link's the vector of `Ṙ Rᵀ`, a rod's
    the one normal to its axis, `e × ė / |e|²`."""
    (R, e), (dR, de) = f, df
    ws = []
    if len(body.frames) > body.n_rods:
        ws.append(vee(jnp.einsum("kij,klj->kil", dR, R)))
    if body.n_rods:
        ws.append(jnp.cross(e, de) / dot(e, e)[:, None])
    return jnp.concatenate(ws)


# --------------------------------------------------------------------------- the reduced equation


class Drive(eqx.Module):
    """What acts on the input besides gravity: `torque(t, u, udot)` (N m on a
    revolute input, N on a prismatic input or an actuator), or None; `damping`, a
    viscous coefficient `c` on the input (a generalised force `−c u̇`).

    `torque` is a function, or a drive law whose numbers are data (`ConstantTorque`,
    `AffineTorque`, `ServoTorque`, `TorqueSeries`): a law with other numbers runs the
    same compiled program, while each new function object (a `lambda` written again in
    a loop) compiles again; define a function once and reuse it, or use a law. No
    torque, a `ConstantTorque` and an `AffineTorque` run one program (all three are
    `τ = a − b u̇` to the compiler), for any damping.

    **Fields:** `torque`, `damping` as above.
    """

    # not static: a drive law (`AffineTorque`, ...: an Equinox module) is traced, its
    # numbers arrays; a plain function, not an array, stays static to `eqx.filter_jit`
    torque: Callable | None = None
    damping: Float[Array, ""] | np.ndarray | float = 0.0

    def __check_init__(self):
        if self.torque is not None and not callable(self.torque):
            raise ValueError(
                f"linkage.Drive: `torque` must be a function torque(t, u, udot) or None; got {self.torque!r}"
            )
        check_scalar("linkage.Drive", "damping", self.damping, nonnegative=True)


def _tangent(x, u, prep):
    """`x′(u)`: the closure's tangent (implicit function theorem)."""
    return _closure.velocity(prepared_residual, x, u, prep, jnp.ones_like(u))


def _angular_rate(X, dX, frame):
    """The angular velocity of a link (per unit input) from its frame at `X` moving
    at `dX`: a number in the plane, a vector `(3,)` on the sphere and in space."""
    if frame[0] in ("pp", "pl"):
        (_, e), (_, de) = _frame_vectors(X, (frame,)), _frame_vectors(dX, (frame,))
        return cross(e[0], de[0]) / dot(e[0], e[0])
    R, dR = jax.jvp(lambda X_: _rotations(X_, (frame,))[1][0], (X,), (dX,))
    return vee(dR @ R.T)


def _link_direction(X, lk: Linkage, link: int):
    """A planar link's direction at `X` (its frame's; the ground's fixed one)."""
    frame = lk.plan.frames[link]
    if frame is None:
        return jnp.asarray([1.0, 0.0], X.dtype)
    return _frame_vectors(X, (frame,))[1][0]


def _joint_turn(X, dX, lk: Linkage, la: int, lb: int):
    """The turn `φ` of link `lb` relative to link `la` from the description's
    configuration, in (−π, π], and its rate `φ′` along `dX` (planar)."""

    def relative(Y):
        ea, eb = _link_direction(Y, lk, la), _link_direction(Y, lk, lb)
        return jnp.stack([dot(ea, eb), cross(ea, eb)])

    def rate(link):
        return jnp.zeros((), X.dtype) if link == lk.ground else _angular_rate(X, dX, lk.plan.frames[link])

    z, z0 = relative(X), relative(lk.coords.astype(X.dtype))
    return jnp.arctan2(cross(z0, z), dot(z0, z)), rate(lb) - rate(la)


def _joint_slide(X, dX, lk: Linkage, j: int, la: int, lb: int):
    """The slide `s` of link `lb` relative to link `la` along the planar prismatic joint
    `j` (its line's direction `(b, −a)` at the description's configuration, measured
    from there), and its rate `s′` along `dX`: a point of `lb` seen from `la`'s frame
    turned back to its initial orientation."""
    frame_b = lk.plan.frames[lb]
    pb = frame_b[1] if frame_b is not None else j  # (a link with a slide has a point: its frame's first)
    C0 = lk.coords.astype(X.dtype)
    line = C0[j]
    d0 = jnp.stack([line[1], -line[0]]) / jnp.sqrt(dot(line[:2], line[:2]))

    def slide(Y):
        if la == lk.ground:
            return dot(Y[pb, :2] - C0[pb, :2], d0)
        frame_a = lk.plan.frames[la]
        oa = frame_a[1]
        e, e0 = _link_direction(Y, lk, la), _link_direction(C0, lk, la)
        c, sn = dot(e0, e), cross(e0, e)
        r = Y[pb, :2] - Y[oa, :2]
        back = jnp.stack([c * r[0] + sn * r[1], -sn * r[0] + c * r[1]]) / jnp.sqrt(dot(e, e) * dot(e0, e0))
        return dot(back - (C0[pb, :2] - C0[oa, :2]), d0)

    return jax.jvp(slide, (X,), (dX,))


def _joint_coordinate(X, dX, lk: Linkage, j: int, la: int, lb: int):
    """A planar joint's own coordinate across it, and its rate along `dX`: the turn of
    `lb` relative to `la` across a revolute joint (`_joint_turn`), the slide along a
    prismatic one (`_joint_slide`)."""
    if lk.types[j] == "P":
        return _joint_slide(X, dX, lk, j, la, lb)
    return _joint_turn(X, dX, lk, la, lb)


def _joint_load(kind, p, phi, dphi):
    """A load across a joint (`_schema._joint_load`) on its coordinate `q` (a turn or a
    slide) moving at `q′` per unit input: its energy, its slope and its damping
    coefficient `c q′²` (friction: none of them, `_friction`)."""
    zero = jnp.zeros((), phi.dtype)
    if kind in _schema.SPRING_LOADS:
        return 0.5 * p[0] * (phi - p[1]) ** 2, p[0] * (phi - p[1]) * dphi, zero
    if kind == "stop":
        over, under = jax.nn.relu(phi - p[2]), jax.nn.relu(p[1] - phi)
        return 0.5 * p[0] * (over**2 + under**2), p[0] * (over - under) * dphi, zero
    if kind in _schema.DAMPER_LOADS:
        return zero, zero, p[0] * dphi**2
    return zero, zero, zero


def _friction(X, dX, lk: Linkage, udot):
    """Coulomb's friction across joints at coordinates `X`, their rates per unit of each
    input `dX` `(k, J, 3)`, at input rates `udot` `(k,)`: the generalised force `(k,)`,
    `−Σ T tanh(φ̇ / ω_s) φ′` (`φ̇ = φ′ · u̇`)."""
    Q = jnp.zeros_like(udot)
    assert lk.load_params is not None
    for kind, (j, la, _, lb), p in zip(lk.load_kinds, lk.load_index, lk.load_params):
        if kind == "friction":
            dphi = jax.vmap(lambda d: _joint_coordinate(X, d, lk, j, la, lb)[1])(dX)
            Q = Q - p[0] * jnp.tanh(dot(dphi, udot) / p[1]) * dphi
    return Q


def _loads(X, dX, lk: Linkage):
    """The applied loads at coordinates `X` moving at `dX` per unit input: spring
    energy and its slope, the generalised force of the constant forces and couples,
    the dampers' coefficient `Σ c d′²` (their generalised force is `−` it `· u̇`)."""
    zero = jnp.zeros((), X.dtype)
    Vs, dVs, Qa, Cd = zero, zero, zero, zero
    if not lk.load_kinds:
        return Vs, dVs, Qa, Cd
    assert lk.load_params is not None
    n = lk.dim
    for kind, (ja, la, jb, lb), p in zip(lk.load_kinds, lk.load_index, lk.load_params):
        if kind in _schema.JOINT_LOADS:
            v, dv, c = _joint_load(kind, p, *_joint_coordinate(X, dX, lk, ja, la, lb))
            Vs, dVs, Cd = Vs + v, dVs + dv, Cd + c
        elif kind in ("spring", "damper"):
            r, dr = X[jb, :n] - X[ja, :n], dX[jb, :n] - dX[ja, :n]
            d = jnp.sqrt(dot(r, r))
            dd = dot(r, dr) / d
            if kind == "spring":
                Vs, dVs = Vs + 0.5 * p[0] * (d - p[1]) ** 2, dVs + p[0] * (d - p[1]) * dd
            else:
                Cd = Cd + p[0] * dd**2
        elif kind == "force":
            Qa = Qa + dot(p[:n], dX[ja, :n])
        elif la != lk.ground:  # a couple on a moving link: its angle's rate
            w = _angular_rate(X, dX, lk.plan.frames[la])
            Qa = Qa + (p[0] * w if n == 2 else dot(p, w))
    return Vs, dVs, Qa, Cd


def _terms(x, u, prep, body: _Inertial, tan=None):
    """`M(u)`, `V(u)`, `V′(u)` (gravity and springs), the applied loads' generalised
    force, the dampers' coefficient, and the tangent, for `x` on the closure at `u`
    (`tan`: the tangent, if known)."""
    tan = _tangent(x, u, prep) if tan is None else tan

    def pose(x_, u_):
        X = joint_coords(x_, u_, prep)  # loads may act at tracer points
        return X, _poses(X, body)

    (X, (c, f)), (dX, (dc, df)) = jax.jvp(pose, (x, u), (tan, jnp.ones_like(u)))
    rot, _ = _rotational(f, df, body)
    M = jnp.sum(body.mass * dot(dc, dc)) + rot
    g = body.gravity[None, :]
    Vs, dVs, Qa, Cd = _loads(X, dX, prep.lk)
    V = -jnp.sum(body.mass * dot(c, g)) + Vs
    dV = -jnp.sum(body.mass * dot(dc, g)) + dVs
    return M, V, dV, tan, Qa, Cd


def _tangents(x, u, prep):
    """`∂x/∂u` `(n, k)` for `k` inputs: the closure's tangent along each."""
    eye = jnp.eye(u.shape[0], dtype=u.dtype)
    return jax.vmap(lambda e: _closure.velocity(prepared_residual, x, u, prep, e), out_axes=1)(eye)


def _rotational_matrix(f, dfs, body: _Inertial):
    """`Σ ω′ᵢᵀ I ω′ⱼ` `(k, k)` over the bodies, `ω′ᵢ` their angular rates per unit rate
    of input `i` (frames `f` moving at `dfs`, leading axis `k`; a rod's the rate
    normal to its axis, as `_rotational`)."""
    if not body.solid:
        dphi = jax.vmap(lambda df: cross(f, df) / dot(f, f))(dfs)  # (k, K)
        return jnp.einsum("ib,b,jb->ij", dphi, body.inertia, dphi)
    w = jax.vmap(lambda df: _omegas(f, df, body))(dfs)  # (k, K, 3)
    n_rigid = len(body.frames) - body.n_rods
    total = jnp.zeros((w.shape[0], w.shape[0]), body.mass.dtype)
    if n_rigid:
        R = f[0]
        wb = jnp.einsum("bji,kbj->kbi", R, w[:, :n_rigid])  # in the bodies' frames
        total = total + jnp.einsum("ibm,bmn,jbn->ij", wb, body.inertia[:n_rigid], wb)
    if body.n_rods:
        total = total + jnp.einsum("ibm,b,jbm->ij", w[:, n_rigid:], body.inertia[n_rigid:, 0, 0], w[:, n_rigid:])
    return total


def _terms_k(x, u, prep, body: _Inertial, T=None):
    """Several inputs `u` `(k,)`: `M(u)` `(k, k)` (kinetic energy `½ u̇ᵀ M u̇`), `V(u)`,
    `∇V` `(k,)` (gravity and springs), the applied loads' generalised force `(k,)`,
    the dampers' matrix `(k, k)` (their force `−C u̇`) and the tangents `(n, k)` (`T`:
    the tangents, if known)."""
    T = _tangents(x, u, prep) if T is None else T
    k = u.shape[0]

    def pose(x_, u_):
        X = joint_coords(x_, u_, prep)
        return X, _poses(X, body)

    X, (c, f) = pose(x, u)
    dX, (dc, df) = jax.vmap(lambda t, e: jax.jvp(pose, (x, u), (t, e))[1], in_axes=(1, 0))(T, jnp.eye(k, dtype=u.dtype))
    M = jnp.einsum("ibd,b,jbd->ij", dc, body.mass, dc) + _rotational_matrix(f, df, body)
    g = body.gravity[None, :]
    Vs, dVs, Qa, _ = jax.vmap(lambda d: _loads(X, d, prep.lk))(dX)
    V = -jnp.sum(body.mass * dot(c, g)) + Vs[0]
    dV = -jnp.einsum("b,ibd,d->i", body.mass, dc, body.gravity) + dVs
    # the dampers' bilinear form by polarisation: C_ij = (D(dᵢ + dⱼ) − D(dᵢ − dⱼ)) / 4
    pairs = jnp.concatenate([(dX[:, None] + dX[None, :]), (dX[:, None] - dX[None, :])]).reshape((2 * k * k,) + X.shape)
    D = jax.vmap(lambda d: _loads(X, d, prep.lk)[3])(pairs).reshape(2, k, k)
    return M, V, dV, T, Qa, (D[0] - D[1]) / 4


def _tangents_and_curvatures(x, u, prep):
    """Several inputs: the tangents `T = ∂x/∂u` `(n, k)` and their slopes `∂T/∂u_l`
    `(k, n, k)` (leading `l`): `J_x T = −Φ_u`, and `J_x ∂²x/∂u_i∂u_l = −D²Φ[v_i, v_l]`,
    `v_i = (T e_i, e_i)` (`closure.rates`' second derivative, for each pair of inputs)."""
    eye = jnp.eye(u.shape[0], dtype=u.dtype)
    J = _closure.jacobian(prepared_residual)(x, u, prep)
    phi_u = jax.vmap(lambda e: jax.jvp(lambda u_: prepared_residual(x, u_, prep), (u,), (e,))[1], out_axes=1)(eye)
    T = _linalg.solve(J, -phi_u)

    def second(ti, ei, tl, el):
        def along(x_, u_):
            return jax.jvp(lambda a, b: prepared_residual(a, b, prep), (x_, u_), (ti, ei))[1]

        return jax.jvp(along, (x, u), (tl, el))[1]

    pairs = jax.vmap(lambda tl, el: jax.vmap(second, in_axes=(1, 0, None, None), out_axes=1)(T, eye, tl, el))
    curve = pairs(T.T, eye)  # (k, n, k): [l, :, i]
    return T, jax.vmap(lambda c: _linalg.solve(J, -c))(curve)


def _terms_and_slopes(x, u, prep, body):
    """Several inputs: `_terms_k` and `∂M/∂uᵢ` `(k, k, k)` (leading `i`), the jvps of `M`
    along each closure tangent, from one pass (the terms are the jvps' primal, computed
    once under the `vmap` over the tangents; the tangents' own slopes from
    `_tangents_and_curvatures`)."""
    T, dT = _tangents_and_curvatures(x, u, prep)

    def along(t, e, dt):
        terms, slopes = jax.jvp(lambda x_, u_, T_: _terms_k(x_, u_, prep, body, T_), (x, u, T), (t, e, dt))
        return terms, slopes[0]

    return jax.vmap(along, in_axes=(1, 0, 0), out_axes=(None, 0))(T, jnp.eye(u.shape[0], dtype=u.dtype), dT)


def _terms_and_slope(x, u, prep, body):
    """`_terms` and `M′(u)`, the jvp of `M` along the closure's tangent `(x′(u), 1)`, from
    one pass (the terms are the jvp's primal; the tangent's own slope is `x″`, from
    `J_x x″ = −D²Φ[v, v]`, `v = (x′, 1)`: the closure core's rates at `u̇ = 1`, `ü = 0`)."""
    tan, curve = _closure.rates(prepared_residual, x, u, prep, jnp.ones_like(u))
    terms, slopes = jax.jvp(
        lambda x_, u_, t_: _terms(x_, u_, prep, body, t_), (x, u, tan), (tan, jnp.ones_like(u), curve)
    )
    return terms, slopes[0]


def generalised_inertia(lk: Linkage, x: Float[Array, " n"], u) -> tuple[Array, Array]:
    """`M(u)` and `M′(u)` of the reduced equation at a converged state `x` (at input
    `u`): the kinetic energy is `½ M u̇²`; with `k` inputs `u` `(k,)`, `M` `(k, k)`
    (`½ u̇ᵀ M u̇`) and `∂M/∂u` `(k, k, k)`, its slope along input `i` first. One
    compiled program per linkage topology; jittable, differentiable.

    **Arguments:** `lk`: the linkage; `x` `(n,)`: a state converged at input `u`.
    **Returns:** `(M, M′)` (kg·m² for a revolute input, kg for a prismatic one).
    """
    _bodies(lk)  # the mass properties, checked eagerly where they are concrete
    check_shape("linkage.generalised_inertia", "x", x, lk.x0().shape)
    _check_input("linkage.generalised_inertia", lk, u)
    out = _generalised_inertia(lk, jnp.asarray(x), jnp.asarray(u, lk.coords.dtype))
    return _finite_at_state("linkage.generalised_inertia", out, x, u)


def potential(lk: Linkage, x: Float[Array, " n"], u) -> tuple[Array, Array]:
    """The potential energy `V(u) = −Σ m g · c` (gravity) plus the springs' energy,
    and `V′(u)`, at a converged state `x` (at input `u`). One compiled program per
    linkage topology; jittable, differentiable.

    **Arguments:** `lk`: the linkage; `x` `(n,)`: a state converged at input `u`.
    **Returns:** `(V, V′)` (J and J per unit input; `∇V` `(k,)` for `k` inputs).
    """
    _bodies(lk)
    check_shape("linkage.potential", "x", x, lk.x0().shape)
    _check_input("linkage.potential", lk, u)
    out = _potential(lk, jnp.asarray(x), jnp.asarray(u, lk.coords.dtype))
    return _finite_at_state("linkage.potential", out, x, u)


def _check_input(owner, lk, u):
    """`u`: a number for one input, `(k,)` for `k`."""
    if lk.n_inputs == 1:
        check_scalar(owner, "u", u)
    else:
        check_shape(owner, "u", u, (lk.n_inputs,))
        check_finite(owner, {"u": u})


def _finite_at_state(owner, out, x, u):
    """An eager result that is not finite names `x`: not a configuration converged at
    `u` (or a singular one, where the tangent is undetermined)."""
    if not is_traced(out) and not all(np.all(np.isfinite(np.asarray(v))) for v in out):
        raise ValueError(
            f"{owner}: `x` must be a state converged at `u` away from a singular configuration (e.g. a motion's "
            f"row or linkage.solve); the result is not finite at x = {np.asarray(x).round(6).tolist()}"
        )
    return out


# compiled: run op by op, the nested jvps through the closure compile hundreds of
# small programs (8 s for the 5-SS against 1.4 s as one)
@filter_jit
def _generalised_inertia(lk, x, u):
    prep, body = prepare(lk), _inertial(lk)
    terms, dM = (_terms_and_slopes if lk.n_inputs > 1 else _terms_and_slope)(x, u, prep, body)
    return terms[0], dM


@filter_jit
def _potential(lk, x, u):
    prep, body = prepare(lk), _inertial(lk)
    _, V, dV, _, _, _ = (_terms_k if lk.n_inputs > 1 else _terms)(x, u, prep, body)
    return V, dV


def _acceleration_k(t, x, u, udot, prep, body, drive):
    """Several inputs: `ü` `(k,)` from Lagrange's equations
    `M ü + Ṁ u̇ − ½ ∇(u̇ᵀ M u̇) + ∇V = τ + Q − C u̇`, the tangents `(n, k)`, the power
    in and the power dissipated (as `_acceleration`)."""
    (M, _, dV, T, Qa, Cd), dM = _terms_and_slopes(x, u, prep, body)
    h = jnp.einsum("i,ijl,l->j", udot, dM, udot) - 0.5 * jnp.einsum("j,ijl,l->i", udot, dM, udot)
    tau = jnp.zeros_like(u) if drive.torque is None else jnp.broadcast_to(drive.torque(t, u, udot), u.shape)
    C = jnp.diag(jnp.broadcast_to(drive.damping, u.shape)) + Cd
    Qf = _friction_at(x, u, T, udot, prep)
    a = _linalg.solve(M, tau + Qa + Qf - C @ udot - h - dV)
    return a, T, dot(tau + Qa, udot), udot @ C @ udot - dot(Qf, udot)


def _friction_at(x, u, T, udot, prep):
    """Coulomb's friction's generalised force `(k,)` (`_friction`) at the state `x`,
    input `u` `(k,)` with the closure's tangents `T` `(n, k)` (one input: a number,
    its tangent `(n,)`), moving at `udot` (zeros, traced nothing, where the linkage
    has no friction)."""
    if "friction" not in prep.lk.load_kinds:
        return jnp.zeros_like(udot)
    pose = lambda x_, u_: joint_coords(x_, u_, prep)  # noqa: E731
    if jnp.ndim(u) == 0:  # one input: `T` its tangent `(n,)`
        X, dX = jax.jvp(pose, (x, u), (T, jnp.ones_like(u)))
        return _friction(X, dX[None], prep.lk, udot[None])[0]
    eye = jnp.eye(u.shape[0], dtype=u.dtype)
    X = pose(x, u)
    dX = jax.vmap(lambda t, e: jax.jvp(pose, (x, u), (t, e))[1], in_axes=(1, 0))(T, eye)
    return _friction(X, dX, prep.lk, udot)


def _acceleration(t, x, u, udot, prep, body, drive):
    """`ü` from the reduced equation, the tangent, the power of the drive's torque
    and of the applied loads, and the power dissipated by the dampers."""
    (M, _, dV, tan, Qa, Cd), dM = _terms_and_slope(x, u, prep, body)
    tau = jnp.zeros_like(u) if drive.torque is None else drive.torque(t, u, udot)
    c = drive.damping + Cd
    Qf = _friction_at(x, u, tan, udot, prep)
    a = (tau + Qa + Qf - c * udot - 0.5 * dM * udot**2 - dV) / M
    return a, tan, (tau + Qa) * udot, c * udot**2 - Qf * udot


# fixed Newton steps in the right-hand side: the state carries the closure's solution
# (integrated along its tangent), so two quadratic steps take it to round-off
_NEWTON_STEPS = 2


# the integration stops (`singular_configuration`) where the closure Jacobian's
# Hadamard ratio |det J_x| / ∏ |rows| falls below this: near a singular configuration
# the reduced coordinates fold (a free five-bar with its distal links in line), the
# tangent grows as 1/distance and the step size collapses (max_steps after minutes)
_SINGULAR_RATIO = 1e-6


def _near_singular(t, y, args, **kwargs):
    """Diffrax's event: the configuration is (numerically) singular."""
    prep = args[0]
    u, _, _, _, x = _split(y, prep.lk.n_inputs)
    J = _closure.jacobian(prepared_residual)(x, u, prep)
    _, det = _linalg.solve_det(J, jnp.zeros((J.shape[0], 1), J.dtype))
    return jnp.abs(det) < _SINGULAR_RATIO * jnp.prod(jnp.linalg.norm(J, axis=1))


def _stop_margin(t, y, args, **kwargs):
    """Diffrax's event, as a number that crosses zero: the least margin of the event
    stops (`stop` loads with `event`), `min(q − q_min, q_max − q)` of each joint's
    coordinate; its root is located in time by Newton."""
    prep = args[0]
    lk = prep.lk
    u, _, _, _, x = _split(y, lk.n_inputs)
    X = joint_coords(x, u, prep)
    zero = jnp.zeros_like(X)
    margin = jnp.asarray(jnp.inf, X.dtype)
    assert lk.load_params is not None
    for kind, (j, la, _, lb), p in zip(lk.load_kinds, lk.load_index, lk.load_params):
        if kind == "stop_event":
            q = _joint_coordinate(X, zero, lk, j, la, lb)[0]
            margin = jnp.minimum(margin, jnp.minimum(q - p[1], p[2] - q))
    return margin


def _split(y, k):
    """The ODE state `(u, u̇, work, dissipated, x)`: scalars `u`, `u̇` for one input,
    `(k,)` for several."""
    u, udot = (y[0], y[1]) if k == 1 else (y[:k], y[k : 2 * k])
    return u, udot, y[2 * k], y[2 * k + 1], y[2 * k + 2 :]


@filter_jit
def _rhs(t, y, args):
    # jitted (a drive's own function static, by identity): Diffrax traces the vector
    # field five times in a solve; jitted, it is traced once per signature (see the
    # benchmarks page, First answer)
    prep, body, drive = args
    k = prep.lk.n_inputs
    u, udot, _, _, x = _split(y, k)
    sol = _closure.root(
        prepared_residual, x, u, prep, min_steps=_NEWTON_STEPS, max_steps=_NEWTON_STEPS, robust=False, throw=False
    )
    if k == 1:
        a, tan, power_in, power_lost = _acceleration(t, sol.value, u, udot, prep, body, drive)
        return jnp.concatenate([jnp.stack([udot, a, power_in, power_lost]), tan * udot])
    a, T, power_in, power_lost = _acceleration_k(t, sol.value, u, udot, prep, body, drive)
    return jnp.concatenate([udot, a, jnp.stack([power_in, power_lost]), T @ udot])


class Simulation(AbstractResult):
    """A linkage's motion under its drive and gravity, saved at `ts` (the contract of
    every result: `diffmech._result.AbstractResult`, one sample per save; `masked()`
    masks `coords`).

    - `ts`; `u`, `udot`: the input and its rate (`(T, k)` for `k` inputs);
    - `coords` `(T, J, 3)`: every joint and tracer, closed by Newton to round-off at
      every save (`residual`: the closure's max-norm there);
    - `energy`: kinetic + potential `½ M(u) u̇² + V(u)`; `work`: the drive's work
      `∫ τ u̇ dt`; `dissipated`: `∫ c u̇² dt`; `energy_error`: max over the saves of
      `|E(t) − E(0) − work + dissipated|` relative to the largest kinetic energy (the
      integration error of the balance; 0 for an exact solution);
    - `converged`, `status` per save (`motion_limit` where the loop cannot close,
      an integrator's cause from the first save it did not reach), `result`;
      `solver_result` (Diffrax's), `num_steps`; `names`, `widths` (static) as
      `Motion`'s.
    """

    ts: Float[Array, " T"]
    u: Float[Array, " T *k"]
    udot: Float[Array, " T *k"]
    coords: Float[Array, "T J 3"]
    energy: Float[Array, " T"]
    work: Float[Array, " T"]
    dissipated: Float[Array, " T"]
    energy_error: Float[Array, ""]
    residual: Float[Array, " T"]
    converged: Bool[Array, " T"]
    status: RESULTS
    solver_result: diffrax.RESULTS
    num_steps: Array
    names: tuple[str, ...] = eqx.field(static=True)
    widths: tuple[int, ...] = eqx.field(static=True)

    _values: ClassVar[str] = "coords"
    _inputs: ClassVar[str] = "ts"

    def __getitem__(self, name: str) -> Array:
        return joint_path(self, name)


def simulate_dynamics(
    lk: Linkage,
    *state,
    u0=None,
    udot0=None,
    t1=None,
    saveat=None,
    drive: Drive | None = None,
    integrator: Integrator | None = None,
    throw: bool = False,
    **separate: Unpack[IntegratorFields],
) -> Simulation:
    """The motion of a linkage (planar, spherical or spatial) released at input
    `u0` with input rate `udot0`, under gravity (`lk.gravity`) and `drive`,
    from t = 0 to `t1` (saved at `saveat`, default 201 times): the reduced equation
    `M(u) ü + ½ M′(u) u̇² + V′(u) = Q(t, u, u̇)` (see the module; with `k` inputs
    Lagrange's `k` equations, `u0`, `udot0` of shape `(k,)`, the drive's torque `(k,)`,
    `u`, `udot` saved as `(T, k)`) integrated with
    Diffrax (`integrator`: an `Integrator`, default Dopri8 with a PID controller at
    `rtol=1e-10`, `atol=1e-12`; its fields may be given as separate keywords instead,
    `solver`, `rtol`, `atol`, `max_steps`, `adjoint`).

    The state is `(u, u̇)`, plus the closure's solution `x` carried along its tangent
    as a warm start: two Newton steps close the loop at every evaluation, so the
    equation integrated is the exact reduced one. Every saved configuration is
    closed to round-off. Works under `jax.jit`, `jax.vmap` (designs, initial rates)
    and `jax.grad` (with respect to coordinates, masses, inertias, centres of mass,
    gravity; the integrator's `adjoint`, default recursive checkpointing). `throw`: raise at the
    first save not reached or not closed (default False: read `converged`).

    **Returns:** a `Simulation`.

    `lk`: the linkage (with masses); `state`: positionally `(u0, udot0, t1)`, or the
    shorthand `(udot0, t1)` that starts at the file's configuration (`u0 = 0`); `u0`,
    `udot0`, `t1` may be given by keyword instead (defaults 0, 0 and 1 s). The
    configuration at `u0` is the one the closure core reaches from the file's along
    the input (substeps of at most 15° or 15 default steps; where it cannot be
    assembled, every save is `motion_limit`). Called eagerly, the save times are padded to a size class (the last
    repeated; the padding is cut off the result): another number of saves in the
    class, like other numbers of a drive law, compiles nothing.
    """
    owner = "linkage.simulate_dynamics"
    if len(state) > 3:
        raise ValueError(f"{owner}: at most three positional arguments (u0, udot0, t1); got {len(state)}")
    names: tuple[str, ...] = ("u0", "udot0", "t1") if len(state) == 3 else ("udot0", "t1")
    given: dict[str, Any] = dict(zip(names, state))
    for name, v in (("u0", u0), ("udot0", udot0), ("t1", t1)):
        if v is not None:
            if name in given:
                raise ValueError(f"{owner}: `{name}` is given twice (positionally and by keyword)")
            given[name] = v
    u0, udot0, t1 = given.get("u0", 0.0), given.get("udot0", 0.0), given.get("t1", 1.0)
    drive = Drive() if drive is None else drive
    integ = as_integrator(owner, integrator, dict(separate))
    check_integration("linkage.simulate_dynamics", {"udot0": udot0, "u0": u0}, 0.0, t1, saveat, integ.max_steps)
    if not is_traced(t1) and not float(t1) > 0:
        raise ValueError(f"linkage.simulate_dynamics: `t1` must be > 0; got {t1}")
    k = lk.n_inputs
    if k == 1:  # one value per input, as with k inputs: `(1,)` is a scalar here
        u0, udot0 = (jnp.reshape(v, ()) if np.shape(v) == (1,) else v for v in (u0, udot0))
    for name, v in (("udot0", udot0), ("u0", u0)):
        if k == 1:
            check_scalar("linkage.simulate_dynamics", name, v)
        elif not is_traced(v) and np.shape(v) not in ((), (k,)):
            raise ValueError(
                f"linkage.simulate_dynamics: `{name}` must be a scalar or one value per input ({k},) for "
                f"{lk.name!r}; got shape {np.shape(v)}"
            )
    check_scalar("linkage.simulate_dynamics", "rtol", integ.rtol, positive=True)
    check_scalar("linkage.simulate_dynamics", "atol", integ.atol, nonnegative=True)
    if not isinstance(drive, Drive):
        raise ValueError(f"linkage.simulate_dynamics: `drive` must be a linkage.Drive or None; got {drive!r:.80}")
    _bodies(lk)  # the mass properties, checked eagerly where they are concrete
    moving = [k for k in range(len(lk.links)) if k != lk.ground]
    if not is_traced(lk.masses, lk.inertias) and not (
        np.any(np.asarray(lk.masses)[moving]) or np.any(np.asarray(lk.inertias)[moving])
    ):
        raise ValueError(
            f"linkage {lk.name!r}: no mass properties on any moving link (give links mass, com, inertia in the "
            "description, or use rod_mass_properties): the motion would have no inertia"
        )
    dt = lk.coords.dtype
    xp = array_module(u0, udot0, t1, saveat, integ.rtol, integ.atol)
    integ = integ.resolved(owner, dt, xp)
    ts = xp.linspace(0.0, t1, 201, dtype=dt) if saveat is None else xp.asarray(saveat, dtype=dt)
    n_saves = ts.shape[0]
    # eagerly (a traced linkage or drive with concrete times is not: its result is traced),
    # the save times padded to a size class (the last repeated): one program per class
    eager = xp is np and not is_traced(lk, drive)
    if eager:
        ts = pad_rows(np.asarray(ts), size_class(n_saves, _SAVES))
    shape = () if k == 1 else (k,)
    # free motion, a constant and an affine torque as one law, the damping an array:
    # one compiled program for all of them and for any of their numbers
    drive = Drive(torque=as_affine(drive.torque), damping=host_array(drive.damping, dt))
    out = _simulate_dynamics(
        lk,
        xp.broadcast_to(xp.asarray(u0, dt), shape),
        xp.broadcast_to(xp.asarray(udot0, dt), shape),
        xp.asarray(t1, dt),
        ts,
        drive,
        integ,
        released=is_traced(u0) or bool(np.any(np.asarray(u0) != 0.0)),
    )
    if eager and ts.shape[0] > n_saves:  # the saves asked for (the padding repeats the last: the same integration),
        # cut on the host (a slice on the device is a program per length)
        leaves, treedef = jax.tree.flatten(out)
        cut = [jax.device_put(np.asarray(a)[:n_saves]) if a.ndim and a.shape[0] == ts.shape[0] else a for a in leaves]
        out = jax.tree.unflatten(treedef, cut)
    return finish(out, throw, f"linkage {lk.name!r}: simulate_dynamics")


# the save times' size classes (eager calls): a default run's 201 saves is one of them
_SAVES = (2, 4, 8, 16, 32, 64, 128, 201, 256, 512, 1024, 2048)


def _events(lk: Linkage) -> diffrax.Event:
    """The integration's events: a singular configuration; with event stops, their
    margin too, its zero located in time (Newton to round-off)."""
    if "stop_event" not in lk.load_kinds:
        return diffrax.Event(_near_singular)
    return diffrax.Event((_near_singular, _stop_margin), root_finder=optx.Newton(rtol=1e-12, atol=1e-12))


@filter_jit
def _simulate_dynamics(lk, u0, udot0, t1, ts, drive, integ: Resolved, released=True):
    prep, body = prepare(lk), _inertial(lk)
    if released:
        # the configuration at the release input u0: continuation from the file's (input 0)
        start = sweep_functional(lk, u0[None], condition=False)
        x0, assembled = lk.state(start.coords[0]), start.converged[0]
    else:  # u0 = 0 (a concrete zero): the file's configuration, no continuation compiled
        x0, assembled = lk.x0(), jnp.asarray(True)
    zero = jnp.zeros((1,), x0.dtype)
    y0 = jnp.concatenate([jnp.atleast_1d(u0), jnp.atleast_1d(udot0), zero, zero, x0])
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_rhs),
        integ.solver,
        zero[0],
        t1,
        None,
        y0,
        args=(prep, body, drive),
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=integ.controller(),
        max_steps=integ.max_steps,
        adjoint=integ.adjoint,
        event=_events(lk),
        throw=False,
    )
    ys = sol.ys
    assert ys is not None
    u, udot, work, dissipated, xs = jax.vmap(lambda y: _split(y, lk.n_inputs))(ys)

    def close(x, u_):
        s = _closure.root(prepared_residual, x, u_, prep, throw=False)
        return s.value, s.converged, s.residual

    x, closed, residual = jax.vmap(close)(xs, u)
    closed = closed & assembled
    coords = jax.vmap(lambda x_, u_: joint_coords(x_, u_, prep))(x, u)
    if lk.n_inputs == 1:
        M, V, _, _, _, _ = jax.vmap(lambda x_, u_: _terms(x_, u_, prep, body))(x, u)
        kinetic = 0.5 * M * udot**2
    else:
        M, V, _, _, _, _ = jax.vmap(lambda x_, u_: _terms_k(x_, u_, prep, body))(x, u)
        kinetic = 0.5 * jnp.einsum("ti,tij,tj->t", udot, M, udot)
    energy = kinetic + V
    balance = energy - energy[0] - work + dissipated
    # the integration stopped at a singular configuration (`_near_singular`) or an end stop (`_stop_margin`)
    event = RESULTS.singular_configuration
    if "stop_event" in lk.load_kinds:
        assert sol.event_mask is not None
        event = RESULTS.where(sol.event_mask[1], RESULTS.end_stop, event)
    stopped = RESULTS.where(sol.result == diffrax.RESULTS.event_occurred, event, RESULTS.promote(sol.result))
    ok, status = save_status(stopped, ys, closed)
    finite = jnp.where(ok, balance, 0.0)
    return Simulation(
        ts=ts,
        u=u,
        udot=udot,
        coords=coords,
        energy=energy,
        work=work,
        dissipated=dissipated,
        energy_error=jnp.max(jnp.abs(finite)) / jnp.max(jnp.where(ok, kinetic, 0.0)),
        residual=residual,
        converged=ok,
        status=status,
        solver_result=sol.result,
        num_steps=sol.stats["num_accepted_steps"],
        names=lk.names,
        widths=widths(lk),
    )


# --------------------------------------------------------------------------- joint forces


class _Reactions(eqx.Module):
    """The static plan of a linkage's kinetostatic system: the unknowns and where
    each acts.

    - `pins`: per joint at a point (R; S, U in space; every joint on the sphere),
      `(joint, (l0, l1, …), reaction)` (the links that hold it, in description
      order, and the unit wrenches its kind's reaction stands for,
      `_joints.JointKind.reaction`): the pin's wrench on each of `l1, …` is
      `unknowns` unknowns (a force: 2 in the plane, 3 in space; on the sphere,
      where every joint, a prismatic one included, turns about an axis through the
      centre, the force through the centre and the moment normal to the axis, 5; a
      spatial R joint's force and the moments normal to its axis, 5; a U joint's
      force and the moment along its axes' normal, 4), its wrench on `l0`
      the actuator's force on the pin (if one acts there) minus their sum (a pin
      carries no mass);
    - `prisms`: per spatial prismatic or cylindrical joint, `(joint, carrier,
      slider, slider's point, axis point, m)`: on the slider the forces along the
      axis's two normals through its point, the couples about them, and for a P
      joint (m = 5) the couple about the axis; the carrier (side A) the opposite;
    - `slides`: per planar prismatic joint, `(joint, carrier, slider)`: the force along
      the line's normal on `slider` and the couple on it are unknowns, the carrier
      gets the opposite wrench (the carrier is the ground when the ground holds the
      line, else the first link that lists it);
    - `motor`: per input, where its effort acts, `(joint, link)` per end: `(-1,
      input link)` for a revolute or prismatic input; an actuator's two joints and
      the first link holding each;
    - `pairs`: every `(joint, link)` the output reports, ground included;
    - `width`: a wrench's size (3 in the plane: `Fx, Fy, Mz`; 6 in space: force and
      moment about the origin);
    - `n_equations`: the independent balances (`width` per body, less one per S–S
      rod: its moment along its own axis is `0 = 0`)."""

    bodies: tuple[int, ...] = eqx.field(static=True)
    pins: tuple = eqx.field(static=True)
    slides: tuple = eqx.field(static=True)
    motor: tuple = eqx.field(static=True)
    pairs: tuple = eqx.field(static=True)
    width: int = eqx.field(static=True)
    n_equations: int = eqx.field(static=True)
    sphere: bool = eqx.field(static=True, default=False)
    axes: tuple = eqx.field(static=True, default=())  # (spatial R joint, its axis point)
    crosses: tuple = eqx.field(static=True, default=())  # (U joint, its two axis points)
    # spatial P and C joints: (joint, side A, side B, B's point, A's axis point, 4 or 5 unknowns)
    prisms: tuple = eqx.field(static=True, default=())
    meshes: tuple = eqx.field(static=True, default=())  # per gear pair its two links: its tooth force, last

    @property
    def n_unknowns(self) -> int:
        """The reaction unknowns, the inputs' efforts and the gear pairs' tooth forces
        (the system's columns)."""
        return len(_columns(self).units) + len(self.motor) + len(self.meshes)

    @property
    def redundancy(self) -> int:
        """How many unknowns the balances leave free."""
        return self.n_unknowns - self.n_equations


def _reaction_plan(lk: Linkage, body: _Inertial) -> _Reactions:
    bodies = body.idx
    width = 3 if lk.geometry == "planar" else 6
    pins, slides, pairs = [], [], []
    sphere = lk.geometry == "spherical"
    # (each joint's reaction and its unknowns per extra link: `_joints`)
    axes, crosses, prisms = [], [], []
    for j, t in enumerate(lk.types):
        K = KINDS[t]
        if not K.joint:
            continue
        holders = tuple(k for k, members in enumerate(lk.links) if j in members)
        reaction = K.reaction(lk.geometry)
        if reaction == "axis":
            axes.append((j, lk.names.index(lk.names[j] + _schema.AXIS_SUFFIX)))
        if reaction == "cross":
            crosses.append(
                (j, *(lk.names.index(f"{lk.names[j]}{_schema.AXIS_SUFFIX}.{lk.link_names[k]}") for k in holders))
            )
        if reaction in ("prism", "cyl"):
            carrier, slider, _, axis, point = _joint_sides(lk, j)
            prisms.append((j, carrier, slider, point, axis, K.unknowns(lk.geometry)))
            pairs += [(j, carrier), (j, slider)]
        elif reaction == "slide":
            carrier = lk.ground if lk.ground in holders else holders[0]
            (slider,) = [k for k in holders if k != carrier]
            slides.append((j, carrier, slider))
            pairs += [(j, carrier), (j, slider)]
        else:  # a pin: every link that holds it
            pins.append((j, holders, reaction))
            pairs += [(j, k) for k in holders]
    motor = tuple(
        tuple((j, next(k for k, m in enumerate(lk.links) if j in m)) for j in joints)
        if kind == "actuator"
        # a joint's own turn or slide: its effort on side B, the opposite on side A
        else tuple((-1, k) for k in _joint_sides(lk, joints[0])[1::-1])
        if link < 0
        else ((-1, link),)
        for kind, link, joints in lk.topology.inputs
    )
    return _Reactions(
        bodies=bodies,
        pins=tuple(pins),
        slides=tuple(slides),
        motor=motor,
        pairs=tuple(pairs),
        width=width,
        n_equations=width * len(bodies) - body.n_rods,
        sphere=sphere,
        axes=tuple(axes),
        crosses=tuple(crosses),
        prisms=tuple(prisms),
        meshes=tuple((la, lb) for _, la, _, lb, *_ in lk.gears.pairs) if lk.gears else (),
    )


def _wrench(point, force):
    """The wrench of `force` through `point`: `(Fx, Fy, Mz)` in the plane, `(F, M)`
    in space, the moment about the origin."""
    if force.shape[-1] == 2:
        return jnp.stack([force[..., 0], force[..., 1], cross(point, force)], axis=-1)
    return jnp.concatenate([force, jnp.cross(point, force)], axis=-1)


def _forces_through(p):
    """The wrenches of unit forces along the coordinate axes through the points `p`
    `(k, dim)`: `(k, dim, W)`."""
    eye = jnp.eye(p.shape[-1], dtype=p.dtype)
    return jnp.stack([_wrench(p, jnp.broadcast_to(f, p.shape)) for f in eye], axis=1)


def _couples(t):
    """The wrenches of unit couples `t` `(k, m, 3)` in space: `(k, m, 6)`."""
    return jnp.concatenate([jnp.zeros_like(t), t], axis=-1)


def _unit_wrenches(X, kind, joints, plan: "_Reactions"):
    """The unit wrenches `(k, m, W)` of `k` pins of one kind: unit forces through the
    joint (in the plane and in space); on the sphere unit forces through the centre
    and unit couples normal to the joint's axis; a spatial R joint's forces and the
    couples normal to its axis; a universal joint's forces and the couple along its
    axes' normal. Batched over the pins: one set of operations per kind, not per pin
    (the system's size in the program, and its compile time, no longer grow with
    the joints)."""
    j = np.asarray(joints)
    if kind == "plane":
        return _forces_through(X[j, :2])
    p = X[j, :3]
    if kind == "point":
        return _forces_through(p)
    if kind == "sphere":
        forces = jnp.concatenate(
            [jnp.broadcast_to(jnp.eye(3, dtype=X.dtype), (len(j), 3, 3)), jnp.zeros((len(j), 3, 3), X.dtype)], axis=-1
        )
        return jnp.concatenate([forces, _couples(jax.vmap(normals)(p))], axis=1)
    if kind == "axis":
        q = X[np.asarray([dict(plan.axes)[i] for i in joints]), :3]
        return jnp.concatenate([_forces_through(p), _couples(jax.vmap(normals)(q - p))], axis=1)
    ends = {c: (a, b) for c, a, b in plan.crosses}
    a, b = (X[np.asarray([ends[i][s] for i in joints]), :3] - p for s in (0, 1))
    return jnp.concatenate([_forces_through(p), _couples(unit(jnp.cross(a, b))[:, None])], axis=1)


def _prism_wrenches(X, prisms):
    """The unit wrenches `(k, m, 6)` of `k` spatial P or C joints with `m` unknowns
    each: forces along the axis's two normals through the slider's point, couples
    about them, and for a P joint (m = 5) the couple about the axis."""
    j, point, axis = (np.asarray([p[i] for p in prisms]) for i in (0, 3, 4))
    m = prisms[0][-1]
    a = unit(X[axis, :3] - X[j, :3])
    t = jax.vmap(normals)(a)
    forces = jnp.stack([_wrench(X[point, :3], t[:, i]) for i in range(2)], axis=1)
    return jnp.concatenate([forces, _couples(jnp.concatenate([t, a[:, None]], axis=1)[:, : m - 2])], axis=1)


class _Columns(NamedTuple):
    """Where the kinetostatic system's columns come from (static, from a `_Reactions`
    plan), so that its matrix is one scatter of batched unit wrenches:

    - `groups`: per group of like unknowns, `(what, members)`: pins of one kind, the
      spatial P or C joints with one count of unknowns, or the planar slides; their
      unit wrenches `(k, m, W)` flattened in that order are the rows `units` reads;
    - per non-motor column `c` (the unknowns in `_Reactions`' order): `units[c]` its
      unit wrench's row; `joint[c]`, `plus[c]` and `minus[c]` the joint and the two
      links (`plus` gets the wrench, `minus` its opposite: the pin's first holder or
      the slider's carrier)."""

    groups: tuple
    units: np.ndarray
    joint: np.ndarray
    plus: np.ndarray
    minus: np.ndarray


@functools.lru_cache(maxsize=64)
def _columns(plan: "_Reactions") -> _Columns:
    groups, start = [], {}
    kinds = {}
    for j, _, reaction in plan.pins:
        kinds.setdefault(("pin", reaction), []).append(j)

    offset = 0
    for (_, kind), members in kinds.items():
        groups.append((("pin", kind), tuple(members)))
        for i, j in enumerate(members):
            start[("pin", j)] = offset + i * REACTION_UNKNOWNS[kind]
        offset += len(members) * REACTION_UNKNOWNS[kind]
    by_m = {}
    for prism in plan.prisms:
        by_m.setdefault(prism[-1], []).append(prism)
    for m, members in by_m.items():
        groups.append((("prism", m), tuple(members)))
        for i, prism in enumerate(members):
            start[("prism", prism[0])] = offset + i * m
        offset += len(members) * m
    if plan.slides:
        groups.append((("slide", 2), plan.slides))
        for i, (j, _, _) in enumerate(plan.slides):
            start[("slide", j)] = offset + 2 * i
    units, joint, plus, minus = [], [], [], []
    for j, holders, reaction in plan.pins:
        m = REACTION_UNKNOWNS[reaction]
        for k in holders[1:]:
            units += [start[("pin", j)] + i for i in range(m)]
            joint += [j] * m
            plus += [k] * m
            minus += [holders[0]] * m
    for j, carrier, slider in plan.slides:
        units += [start[("slide", j)], start[("slide", j)] + 1]
        joint += [j, j]
        plus += [slider, slider]
        minus += [carrier, carrier]
    for j, carrier, slider, *_, m in plan.prisms:
        units += [start[("prism", j)] + i for i in range(m)]
        joint += [j] * m
        plus += [slider] * m
        minus += [carrier] * m
    arrays = (np.asarray(v, dtype=np.int64) for v in (units, joint, plus, minus))
    return _Columns(tuple(groups), *arrays)


def _column_wrenches(X, plan: "_Reactions"):
    """Every non-motor unknown's unit wrench `(n, W)`, in the columns' order."""
    cols = _columns(plan)
    parts = []
    one = jnp.ones((), X.dtype)
    for (what, kind), members in cols.groups:
        if what == "pin":
            parts.append(_unit_wrenches(X, kind, members, plan))
        elif what == "prism":
            parts.append(_prism_wrenches(X, members))
        else:
            # the normal force through the foot of the perpendicular from the origin, −c n
            # (on the line), has no moment about the origin; the couple unknown carries
            # where along the line it really acts
            nv = X[np.asarray([j for j, _, _ in members]), :2]
            normal = jnp.stack([nv[:, 0], nv[:, 1], jnp.zeros_like(nv[:, 0])], axis=1)
            couple = jnp.broadcast_to(_couple(one, 3), normal.shape)
            parts.append(jnp.stack([normal, couple], axis=1))
    if not parts:
        return jnp.zeros((0, plan.width), X.dtype)
    rows = jnp.concatenate([p.reshape(-1, plan.width) for p in parts])
    return rows[cols.units]


def _couple(moment, width):
    """The wrench of a couple (a number in the plane, a vector in space)."""
    zero = jnp.zeros((), moment.dtype)
    return jnp.stack([zero, zero, moment]) if width == 3 else jnp.concatenate([jnp.zeros(3, moment.dtype), moment])


def _applied(X, V, lk: Linkage):
    """The applied loads as `(link, wrench about the origin)` entries, at coordinates
    `X` moving at velocities `V` (a spring's or a damper's tension pulls its two
    points together: `k (d − L0)`, `c ḋ`)."""
    out = []
    if not lk.load_kinds:
        return out
    assert lk.load_params is not None
    n = lk.dim
    for kind, (ja, la, jb, lb), p in zip(lk.load_kinds, lk.load_index, lk.load_params):
        if kind in _schema.JOINT_LOADS and lk.types[ja] == "P":  # a force along the line on its second link
            f = _joint_couple(kind, p, *_joint_slide(X, V, lk, ja, la, lb))
            frame_b = lk.plan.frames[lb]
            at = X[frame_b[1] if frame_b is not None else ja, :2]
            line = X[ja, :2]
            d = jnp.stack([line[1], -line[0]]) / jnp.sqrt(dot(line, line))
            out += [(lb, _wrench(at, f * d)), (la, _wrench(at, -f * d))]
        elif kind in _schema.JOINT_LOADS:  # a couple on its second link, the opposite on its first
            tau = _joint_couple(kind, p, *_joint_turn(X, V, lk, la, lb))
            out += [(lb, _couple(tau, 3)), (la, _couple(-tau, 3))]
        elif kind in ("spring", "damper"):
            pa, pb = X[ja, :n], X[jb, :n]
            d = jnp.sqrt(dot(pb - pa, pb - pa))
            e = (pb - pa) / d
            tension = p[0] * (d - p[1]) if kind == "spring" else p[0] * dot(e, V[jb, :n] - V[ja, :n])
            out += [(la, _wrench(pa, tension * e)), (lb, _wrench(pb, -tension * e))]
        elif kind == "force":
            out.append((la, _wrench(X[ja, :n], p[:n])))
        else:
            out.append((la, _couple(p[0] if n == 2 else p, 3 if n == 2 else 6)))
    return out


def _joint_couple(kind, p, phi, rate):
    """The couple a load across a joint (`_schema._joint_load`) puts on its second link
    at the turn `φ` moving at `φ̇` (the opposite on its first): `−V′(φ) − c φ̇` from
    `_joint_load` at unit rate, Coulomb's friction its own."""
    if kind == "friction":
        return -p[0] * jnp.tanh(rate / p[1])
    _, slope, damping = _joint_load(kind, p, phi, jnp.ones_like(phi))
    return -slope - damping * rate


def _joint_sides(lk: Linkage, j: int):
    return _schema.joint_sides(lk.names, lk.types, lk.links, lk.link_names, j)


def _motors(X, lk: Linkage, plan: _Reactions):
    """Per input, the wrenches of its unit effort, one per `plan.motor` entry (see
    `_motor`)."""
    return [_motor(X, lk, plan, kind, joints) for kind, _, joints in lk.topology.inputs]


def _motor(X, lk: Linkage, plan: _Reactions, kind, joints):
    """The wrenches of an input's unit effort, one per `plan.motor` entry: a unit couple
    on the input link for a revolute input; for a prismatic one, a unit force along
    the slide direction `(b, −a)` of the ground line, through the line's point
    nearest the origin; for an actuator, a unit push along its axis on its two
    joints (`+e` at the second, `−e` at the first: its effort does work `f u̇`)."""
    one = jnp.ones((), X.dtype)
    if kind in ("turn", "slide"):  # a joint's own coordinate: on side B, the opposite on side A
        _, _, p, q, pb = _joint_sides(lk, joints[0])
        a = unit(X[q] - X[p])
        wr = _couple(a, 6) if kind == "turn" else _wrench(X[pb], a)
        return [wr, -wr]
    if kind == "revolute" and plan.sphere:  # a unit couple about the input joint's axis
        return [_couple(unit(X[joints[0], :3]), 6)]
    if kind == "revolute" and plan.axes:  # in space: about the R joint's axis
        (s,) = joints
        return [_couple(unit(X[dict(plan.axes)[s], :3] - X[s, :3]), 6)]
    if kind == "revolute":
        return [_couple(one, plan.width)]
    if kind == "prismatic" and lk.geometry == "spatial":  # a unit force along the P joint's axis
        (s,) = joints
        a = X[lk.names.index(lk.names[s] + _schema.AXIS_SUFFIX)] - X[s]
        return [_wrench(X[s], unit(a))]
    if kind == "prismatic":
        (s,) = joints
        n = X[s, :2]
        return [_wrench(-X[s, 2] * n, jnp.stack([n[1], -n[0]]))]
    a, b = joints
    d = X[b, : lk.dim] - X[a, : lk.dim]
    e = d / jnp.sqrt(dot(d, d))
    return [_wrench(X[a, : lk.dim], -e), _wrench(X[b, : lk.dim], e)]


def _kinetostatics(X, V, accel, spin, c, body: _Inertial, plan: _Reactions, lk: Linkage, units, motors, teeth=None):
    """The Newton–Euler balances of every moving link as one linear system
    `A z = b` in the reaction unknowns `z` (and the motor's effort, last): per link
    `Σ F = m (a − g)` and `Σ M = spin + c × m (a − g)` about the origin, `spin` the
    rate of the link's angular momentum about its centre of mass (`I α` in the
    plane). `units`: the unknowns' unit wrenches (`_column_wrenches`), `motors` the
    inputs' (`_motors`), `teeth` the gear pairs' unit tooth forces' on their second
    gears `(G, W)`. `A` is one scatter of them (each unknown's wrench on the link it
    acts on, its opposite on the other; the ground has no rows)."""
    w = plan.width
    row = {k: w * i for i, k in enumerate(plan.bodies)}
    n_rows = w * len(plan.bodies)
    cols = _columns(plan)
    values, rows, columns = [], [], []
    for sign, links in ((1.0, cols.plus), (-1.0, cols.minus)):
        keep = np.asarray([k in row for k in links], dtype=bool)
        if keep.any():
            values.append(sign * units[np.flatnonzero(keep)])
            rows += [row[k] for k in links[keep]]
            columns += np.flatnonzero(keep).tolist()
    # the inputs' efforts
    for i, (ends, wrenches) in enumerate(zip(plan.motor, motors)):
        for (_, k), wr in zip(ends, wrenches):
            if k in row:
                values.append(wr[None])
                rows.append(row[k])
                columns.append(len(cols.units) + i)
    for i, (la, lb) in enumerate(plan.meshes):  # a tooth force on the second gear, its opposite on the first
        assert teeth is not None
        for k, sign in ((lb, 1.0), (la, -1.0)):
            if k in row:
                values.append(sign * teeth[i][None])
                rows.append(row[k])
                columns.append(len(cols.units) + len(plan.motor) + i)
    r = np.asarray(rows)[:, None] + np.arange(w)
    q = np.broadcast_to(np.asarray(columns)[:, None], r.shape)
    A = jnp.zeros((n_rows, plan.n_unknowns), X.dtype).at[r, q].add(jnp.concatenate(values))
    b = jnp.zeros(n_rows, X.dtype)
    for k, wr in _applied(X, V, lk):
        if k in row:
            b = b.at[row[k] : row[k] + w].add(wr)
    f = body.mass[:, None] * (accel - body.gravity[None, :])
    if w == 3:
        m = spin + cross(c, f)
        rhs = jnp.stack([f[:, 0], f[:, 1], m], axis=1)
    else:
        rhs = jnp.concatenate([f, spin + jnp.cross(c, f)], axis=1)
    return A, rhs.reshape(-1) - b


def _system(X, V, accel, spin, c, body: _Inertial, plan: _Reactions, lk: Linkage, units, motors):
    """The Newton–Euler system `A, b` (`_kinetostatics`) and the gear pairs' pitch
    points and tooth-force directions `(P, d)` `(G, 2)` each. A tooth force acts along
    the line of action, which leans by the pressure angle `α` from the pitch
    circles' tangent `t` towards the separating direction `e` for the flank in
    contact, the one the tangential force's sign picks: a first solve along `t`
    gives that sign, the second along `d = t + sign(F_t) tan α e`."""
    if not plan.meshes:
        A, b = _kinetostatics(X, V, accel, spin, c, body, plan, lk, units, motors)
        empty = jnp.zeros((0, 2), X.dtype)
        return A, b, (empty, empty)
    P, t, e = _gears.pitch(X, lk)
    assert lk.gear_params is not None
    A, b = _kinetostatics(X, V, accel, spin, c, body, plan, lk, units, motors, _wrench(P, t))
    Ft = _linalg.solve(A, b)[A.shape[1] - len(plan.meshes) :]
    d = t + (jnp.sign(Ft) * jnp.tan(lk.gear_params[:, 2]))[:, None] * e
    A, b = _kinetostatics(X, V, accel, spin, c, body, plan, lk, units, motors, _wrench(P, d))
    return A, b, (P, d)


def _reactions_from(z, plan: _Reactions, units, motors):
    """Every `(joint, link)` wrench about the origin from the unknowns, and the
    inputs' efforts `(k,)`: each unknown's wrench on the link it acts on and its
    opposite on the other (a pin's first holder: the actuator's push on the pin, if
    one acts there, less the others' share; a pin carries no mass), as one scatter."""
    cols = _columns(plan)
    n = len(cols.units)
    tau = z[n : n + len(plan.motor)]
    pair = {p: i for i, p in enumerate(plan.pairs)}
    first = {j: holders[0] for j, holders, _ in plan.pins}
    load = z[:n, None] * units
    values = [load, -load]
    where = [pair[j, k] for j, k in zip(cols.joint, cols.plus)] + [pair[j, k] for j, k in zip(cols.joint, cols.minus)]
    for t, ends, wrenches in zip(tau, plan.motor, motors):
        for (j, _), wr in zip(ends, wrenches):
            if j in first:  # an actuator's push on the pin of its joint
                values.append((t * wr)[None])
                where.append(pair[j, first[j]])
    out = jnp.zeros((len(plan.pairs), plan.width), z.dtype)
    return out.at[np.asarray(where)].add(jnp.concatenate(values)), tau


class JointForces(AbstractResult):
    """Kinetostatics along a prescribed input motion (leading axis `N`; the contract
    of every result: `diffmech._result.AbstractResult`, `masked()` masks `torque`).
    `W` is a wrench's size: 3 in the plane (`Fx, Fy, Mz`), 6 in space (`F`, `M`).

    - `u`, `udot`, `uddot`: the motion (`(N, k)` each for `k` inputs);
    - `torque` `(N,)` (`(N, k)` for `k` inputs): each input's effort: a torque
      (N m) on the input link for a revolute input, a force along the slide for a
      prismatic one (N), the actuator's push along its axis (N, positive extending
      it); the ground takes the opposite (an actuator's acts on the pins of its two
      joints);
    - `reactions` `(N, P, W)`: for every `(joint, link)` of `pairs` (static, names),
      the wrench the joint applies to that link, its moment about the origin (a
      prismatic joint's includes its couple); the ground's included; `local(joint,
      link)` gives it in the joint's own frame;
    - `frames` `(N, P, D, D)`, `origins` `(N, P, D)`: each pair's joint frame (its
      columns the frame's axes in world coordinates: in space `z` along an R, P or C
      joint's axis, along a U joint's cross axes' normal, the world's axes at an S
      joint; on the sphere `z` along the joint's axis through the centre; in the
      plane the world's axes at a pin, `x` along a slider's line) and its origin
      (the joint's point; a planar line's point nearest the world origin);
    - `shaking_force` `(N, 2|3)`, `shaking_moment` `(N,)` in the plane, `(N, 3)` in
      space: the total wrench on the ground (its joints' reactions, the motor's
      reaction and the teeth of a gear it is), moment about the origin;
    - `teeth` `(N, G, 2)`: per gear pair (the description's `gears`), the force its
      first gear's teeth put on the second's at the pitch point (the rack's, for a
      rack and pinion), along the line of action: the tangential part transmits the
      torque, the separating part `|F_t| tan α` pushes the two apart (`(N, 0, 2)`
      without gears);
    - `condition` `(N,)`: the 1-norm condition number of the Newton–Euler system
      (in space without each S–S rod's moment along its own axis, `0 = 0` for its
      idle spin; on the sphere the square root of `A Aᵀ`'s); `converged`,
      `status` (`motion_limit` where the loop cannot close,
      `singular_configuration` where the system is rank-deficient), `residual`
      (the closure's);
    - `redundancy` (static): how many reactions the balances leave undetermined (0
      in the plane and in space; on the sphere the over-constrained links' count,
      and `reactions` are then the least-norm ones).
    """

    u: Float[Array, " N *k"]
    udot: Float[Array, " N *k"]
    uddot: Float[Array, " N *k"]
    torque: Float[Array, " N *k"]
    reactions: Float[Array, "N P W"]
    frames: Float[Array, "N P D D"]
    origins: Float[Array, "N P D"]
    shaking_force: Float[Array, "N D"]
    shaking_moment: Float[Array, " N *M"]
    teeth: Float[Array, "N G 2"]
    condition: Float[Array, " N"]
    residual: Float[Array, " N"]
    converged: Bool[Array, " N"]
    status: RESULTS
    pairs: tuple[tuple[str, str], ...] = eqx.field(static=True)
    redundancy: int = eqx.field(static=True, default=0)

    _values: ClassVar[str] = "torque"
    _inputs: ClassVar[str] = "u"

    def reaction(self, joint: str, link: str) -> Array:
        """The `(N, W)` wrench of `joint` on `link`."""
        if (joint, link) not in self.pairs:
            raise UnknownNameError(f"no reaction of joint {joint!r} on link {link!r}; pairs are {list(self.pairs)}")
        return self.reactions[:, self.pairs.index((joint, link))]

    def local(self, joint: str, link: str) -> Array:
        """The `(N, W)` wrench of `joint` on `link` in the joint's frame (`frames`):
        the force's components along the frame's axes, then the moment about the
        joint's point (`origins`) along them. An R joint's moment about its axis
        (`z`) is zero, a P joint's force along it, a C joint's both, an S joint's
        whole moment, a U joint's moment along its two axes."""
        w = self.reaction(joint, link)
        k = self.pairs.index((joint, link))
        R, o = self.frames[:, k], self.origins[:, k]
        d = o.shape[-1]
        F = w[:, :d]
        M = w[:, d:] - (cross(o, F)[:, None] if d == 2 else jnp.cross(o, F))
        Fl = jnp.einsum("nji,nj->ni", R, F)
        Ml = M if d == 2 else jnp.einsum("nji,nj->ni", R, M)
        return jnp.concatenate([Fl, Ml], axis=-1)


# a system this ill-conditioned is reported singular
_COND_LIMIT = 1e12


def joint_forces(lk: Linkage, u, udot=0.0, uddot=0.0, *, throw: bool = True) -> JointForces:
    """Inverse dynamics of a linkage (planar, spherical or spatial): the motor's
    effort (a torque on a revolute input, a force on a prismatic input or an
    actuator) and the force (and couple) in every joint along a prescribed input
    motion `u(t)`, `u̇`, `ü` (arrays `(N,)`, broadcast), from every moving link's
    Newton–Euler balance (gravity, inertia, the applied loads) solved as one linear
    system per configuration. The configurations come from the closure core (a
    sweep through `u` from the initial configuration) or, for a `Motion`, are its
    own; the links' accelerations come from the implicit-function-theorem rates. Jittable, vmappable over designs,
    differentiable (lengths, masses, inertias). `throw` as every solve's (default
    True: a prescribed motion the linkage cannot follow raises).

    - In the plane and in space the system is square (in space each S–S rod's
      moment along its own axis, `0 = 0` for its idle spin, is dropped).
    - On the sphere the links are over-constrained in space (a spherical
      four-bar's Kutzbach count is −2 for a mobility of 1): the reactions are
      statically indeterminate (they depend on the parts' compliance) and the
      least-norm ones are returned, `redundancy` saying how many are free; the
      motor torque is determinate.
    - A rank-deficient system (a dead point of the drive) is reported
      `singular_configuration`, by its condition number.

    **Returns:** a `JointForces`.

    **Arguments:** `lk`: the linkage; `u`, `udot`, `uddot`: the input's value, rate and
    acceleration (`(N,)` arrays or scalars, in the input's units; for `k` inputs `u`
    `(N, k)`, the rates scalars, `(k,)` or `(N, k)`); `u` may be a `Motion` of `lk` from
    `sweep`: the forces along it, at its configurations (the branch it took, a
    change point it passed), without sweeping again; they are the motion's, held
    fixed: for a gradient with respect to the design, pass the inputs (or a motion
    from `sweep_functional` of the same design); `throw`: raise if the closure fails at an input.
    """
    motion = None
    if isinstance(u, Motion):  # a motion from sweep: its configurations, not a second sweep
        motion, u = check_motion("linkage.joint_forces", lk, u, "u"), u.inputs
    dt = lk.coords.dtype
    k = lk.n_inputs
    path = "(N,)" if k == 1 else f"(N, {k})"
    for name, v in (("u", u), ("udot", udot), ("uddot", uddot)):
        if is_traced(v):
            continue
        a = as_floats("linkage.joint_forces", name, v)
        shape_ok = (a.ndim == 1 and a.size >= 1) if k == 1 else (a.ndim == 2 and a.shape[0] >= 1 and a.shape[1] == k)
        if name != "u":  # a rate: a scalar, one per input, or one per row
            shape_ok = a.ndim == 0 or (a.shape == np.shape(u)) or (k > 1 and a.shape == (k,))
        if not shape_ok or not np.all(np.isfinite(a)):
            raise ValueError(
                f"linkage.joint_forces: `{name}` must be a finite "
                + (
                    f"non-empty {path} array of inputs"
                    if name == "u"
                    else "scalar" + (f", ({k},)" if k > 1 else "") + f" or an array of `u`'s shape {np.shape(u)}"
                )
                + f"; got shape {a.shape}"
                + ("" if a.size == 0 or np.all(np.isfinite(a)) else f" with non-finite {a[~np.isfinite(a)][0]}")
            )
    u = jnp.asarray(u, dt)
    udot, uddot = (jnp.broadcast_to(jnp.asarray(v, dt), u.shape) for v in (udot, uddot))
    body = _inertial(lk)
    plan = _reaction_plan(lk, body)
    if plan.redundancy < 0 or (plan.redundancy > 0 and not (plan.sphere or lk.over_constrained)):
        raise ValueError(
            f"joint_forces: {plan.n_unknowns} unknowns for {plan.n_equations} independent equations in {lk.name!r}: a "
            "planar or spatial linkage whose joints all carry load has as many"
        )
    args = (lk, u if motion is None else motion, udot, uddot, body, plan)
    out = _cache.program("joint_forces", _joint_forces_program, _joint_forces, args, ())
    return finish(out, throw, f"linkage {lk.name!r}: joint_forces")


def _angular_momentum(f, df, body: _Inertial):
    """Per body, its angular momentum about its centre of mass per unit input rate
    (in space: `R I Rᵀ ω` for a rigid link, `I_t ω⊥` for a rod)."""
    R = f[0]
    n_rigid = len(body.frames) - body.n_rods
    w = _omegas(f, df, body)
    hs = []
    if n_rigid:
        hs.append(jnp.einsum("kij,kjl,kml,km->ki", R, body.inertia[:n_rigid], R, w[:n_rigid]))
    if body.n_rods:
        hs.append(body.inertia[n_rigid:, 0, 0, None] * w[n_rigid:])
    return jnp.concatenate(hs)


def _joint_frames(X, plan: _Reactions):
    """The frames `(R, origin)`, `(k, d, d)` and `(k, d)`, of the joints of the
    plan's pairs at coordinates `X` (see `JointForces.frames`), batched by kind: a
    planar P joint's x axis along the slide direction `(b, −a)` and its origin the
    line's point nearest the origin; on the sphere z along the joint's axis; in space
    z along an R, P or C joint's axis or a U joint's axes' normal (the axis points the
    plan holds); the coordinate axes at the joint otherwise."""
    joints = [j for j, _ in plan.pairs]
    j = np.asarray(joints, dtype=np.int64)
    d = 2 if plan.width == 3 else 3
    origin = X[j, :d]
    R = jnp.broadcast_to(jnp.eye(d, dtype=X.dtype), (len(j), d, d))
    if plan.width == 3:
        line = np.isin(j, [s for s, _, _ in plan.slides])
        if line.any():
            n = X[j, :2]
            slide = jnp.stack([jnp.stack([n[:, 1], -n[:, 0]], axis=1), n], axis=2)
            R = jnp.where(line[:, None, None], slide, R)
            origin = jnp.where(line[:, None], -X[j, 2:3] * n, origin)
        return R, origin
    if plan.sphere:
        axis, framed = X[j, :3], np.ones(len(j), dtype=bool)
    else:
        tips = dict(plan.axes) | {p[0]: p[4] for p in plan.prisms}
        ends = {c: (a, b) for c, a, b in plan.crosses}
        axis = X[np.asarray([tips.get(i, i) for i in joints]), :3] - X[j, :3]
        crossed = np.flatnonzero([i in ends for i in joints])
        if crossed.size:
            at = j[crossed]
            e = np.asarray([ends[i] for i in at.tolist()])
            axis = axis.at[crossed].set(jnp.cross(X[e[:, 0], :3] - X[at, :3], X[e[:, 1], :3] - X[at, :3]))
        framed = np.asarray([i in tips or i in ends for i in joints], dtype=bool)
        # an unframed joint's axis is a placeholder (its frame is the coordinate axes'),
        # kept finite so that no NaN enters the derivatives through the selection
        axis = jnp.where(framed[:, None], axis, jnp.asarray([0.0, 0.0, 1.0], X.dtype))
    t = jax.vmap(normals)(axis)
    own = jnp.stack([t[:, 0], t[:, 1], unit(axis)], axis=2)
    return jnp.where(framed[:, None, None], own, R), origin


def _drop_idle_spins(e, body: _Inertial):
    """The rows that keep a spatial system's independent equations: every rigid
    link's six; per S–S rod (the last `n_rods` bodies, axis `e`) its three force
    rows and its moment along two directions `t1`, `t2` normal to its axis. Along
    the axis the moment about the centre of mass is `0 = 0` (the idle spin), so
    there the moment about the origin is a combination of the force rows. The
    solution does not depend on the choice of `t1`, `t2` (here `t1 ∝ e × h`, `h`
    the coordinate axis least aligned with `e`)."""
    n_rigid = len(body.frames) - body.n_rods
    blocks = [jnp.eye(6 * n_rigid, dtype=e.dtype)] if n_rigid else []
    for k in range(body.n_rods):
        blocks.append(jax.scipy.linalg.block_diag(jnp.eye(3, dtype=e.dtype), normals(e[k])))
    return jax.scipy.linalg.block_diag(*blocks)


def _joint_forces_program(lk, u, udot, uddot, body, plan):
    """The joint forces along `u`: a `Motion` of `lk` (its configurations), or inputs,
    whose configurations come from a sweep from the initial one (input 0:
    `sweep_functional` starts there)."""
    prep = prepare(lk)
    motion = u if isinstance(u, Motion) else sweep_functional(lk, u, condition=False)
    u = motion.inputs
    planar = plan.width == 3

    def one(C, u_, ud, udd):
        x = lk.state(C)
        xd, xdd = _closure.rates(prepared_residual, x, u_, prep, ud, udd)

        def path(s):  # the motion to second order in time about this configuration
            X = joint_coords(x + s * xd + 0.5 * s**2 * xdd, u_ + s * ud + 0.5 * s**2 * udd, prep)
            return X, _poses(X, body)

        zero, unit_ = jnp.zeros((), x.dtype), jnp.ones((), x.dtype)
        # the pose, its rate and its acceleration from one second-order pass (a jvp of
        # the jvp: the first derivative is the outer pass's primal, the second its tangent)
        (pose, rate), (_, acceleration) = jax.jvp(lambda s: jax.jvp(path, (s,), (unit_,)), (zero,), (unit_,))
        (X, (c, f)), (V, (_, df)), (_, (ddc, ddf)) = pose, rate, acceleration
        if planar:
            r2 = dot(f, f)
            spin = body.inertia * (cross(f, ddf) / r2 - 2 * dot(f, df) * cross(f, df) / r2**2)
        else:
            # the rate of the angular momentum about the centres of mass along the motion,
            # h(f(s), f'(s)) differentiated at s = 0: from the frames' first and second rates
            _, spin = jax.jvp(lambda F, dF: _angular_momentum(F, dF, body), (f, df), (df, ddf))
        motors = _motors(X, lk, plan)
        units = _column_wrenches(X, plan)
        A, b, (P, d) = _system(X, V, ddc, spin, c, body, plan, lk, units, motors)
        if not planar and body.n_rods:
            P = _drop_idle_spins(f[1], body)
            A, b = P @ A, P @ b
        if A.shape[0] == A.shape[1]:
            z, cond = _linalg.solve(A, b), _linalg.condition_1(A)
        else:  # redundant (the sphere): the least-norm solution, z = Aᵀ (A Aᵀ)⁻¹ b
            AAt = A @ A.T
            z, cond = A.T @ _linalg.solve(AAt, b), jnp.sqrt(_linalg.condition_1(AAt))
        reactions, tau = _reactions_from(z, plan, units, motors)
        ground = jnp.asarray([k == lk.ground for _, k in plan.pairs])
        # the ground's joints' reactions, and the motor's reaction on the ground
        # (a couple or force for a revolute or prismatic input; an actuator's push
        # at a tracer of the ground, which no pin carries)
        total = jnp.sum(jnp.where(ground[:, None], reactions, 0.0), axis=0)
        teeth = z[A.shape[1] - len(plan.meshes) :, None] * d  # each pair's tooth force on its second gear
        for i, (la, lb) in enumerate(plan.meshes):  # the teeth of a gear the ground is (a fixed ring)
            if lk.ground in (la, lb):
                total = total + (1.0 if lb == lk.ground else -1.0) * _wrench(P[i], teeth[i])
        pins = {j for j, _, _ in plan.pins}
        for (kind, _, _), t, ends, wrenches in zip(lk.topology.inputs, tau, plan.motor, motors):
            if kind in ("revolute", "prismatic"):
                total = total - t * wrenches[0]
            else:
                for (j, k), wr in zip(ends, wrenches):
                    if k == lk.ground and j not in pins:
                        total = total + t * wr
        n = lk.dim
        tau = tau[0] if lk.n_inputs == 1 else tau
        R, o = _joint_frames(X, plan)
        return tau, reactions, total[:n], (total[2] if planar else total[3:]), cond, R, o, teeth

    tau, reactions, F, Mz, cond, R, o, teeth = jax.vmap(one)(motion.coords, u, udot, uddot)
    singular = ~(cond < _COND_LIMIT)
    ok = motion.converged & ~singular
    codes = jnp.where(motion.converged & singular, code(RESULTS.singular_configuration), code(motion.status))
    return JointForces(
        u=u,
        udot=udot,
        uddot=uddot,
        torque=tau,
        reactions=reactions,
        frames=R,
        origins=o,
        shaking_force=F,
        shaking_moment=Mz,
        teeth=teeth,
        condition=cond,
        residual=motion.residual,
        converged=ok,
        status=as_results(codes),
        pairs=tuple((lk.names[j], lk.link_names[k]) for j, k in plan.pairs),
        redundancy=plan.redundancy,
    )


_joint_forces = filter_jit(_joint_forces_program)

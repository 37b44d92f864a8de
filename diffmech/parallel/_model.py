"""Parallel mechanisms as Equinox modules: serial chains of R and P joints from a
fixed base to one moving platform.

Every geometric and inertial number is an array leaf (differentiable, vmappable);
joint kinds, which joints are actuated and after which joints the massive bodies sit
are static. Geometry is given in the *home* configuration, in space coordinates; a
joint's reported value (its *label*) is its home label plus its displacement from
home. The models of seeds 002 and 004 (and what was reconstructed) are documented in
`docs/parallel_models.md`.
"""

from __future__ import annotations

import abc
import math
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import _screw
from .._validate import as_floats, check_array, is_traced
from .._xla import eager_program

_KINDS = ("R", "P")


def _unit(v):
    v = jnp.asarray(v, dtype=float)
    return v / jnp.linalg.norm(v, axis=-1, keepdims=True)


class Chain(eqx.Module):
    """A serial chain of revolute (`"R"`) and prismatic (`"P"`) joints from the base
    to the platform; U and S joints are two and three R joints with intersecting axes.

    **Fields:**

    - `kinds`: static tuple of `"R"`/`"P"`, base to platform.
    - `axes`: `(n, 3)` unit joint axes at home (space frame).
    - `points`: `(n, 3)` a point on each axis at home (ignored for P joints).
    - `home`: `(n,)` the joint labels at home (rad or m).
    - `actuated`: static tuple of bools.
    - `lower`, `upper`: `(n,)` joint limits on the labels (±inf: none).
    - `body_after`: static tuple, the joint index after which each massive link sits
      (links between joints of one U or S are massless and not listed; the link after
      the last joint is the platform).
    - `masses` `(b,)`, `coms` `(b, 3)` (centres of mass at home), `inertias`
      `(b, 3, 3)` (about the centre of mass, space axes, at home).
    - `attach`: `(3,)` the chain's platform-side joint centre at home (the point whose
      position closes the loop).
    - `name`: static label for messages and plots.
    """

    kinds: tuple[str, ...] = eqx.field(static=True)
    axes: Float[Array, "n 3"]
    points: Float[Array, "n 3"]
    home: Float[Array, " n"]
    actuated: tuple[bool, ...] = eqx.field(static=True)
    lower: Float[Array, " n"]
    upper: Float[Array, " n"]
    body_after: tuple[int, ...] = eqx.field(static=True)
    masses: Float[Array, " b"]
    coms: Float[Array, "b 3"]
    inertias: Float[Array, "b 3 3"]
    attach: Float[Array, " 3"]
    name: str = eqx.field(static=True)

    def __check_init__(self):
        n = len(self.kinds)
        if any(k not in _KINDS for k in self.kinds):
            raise ValueError(f"Chain {self.name}: joint kinds must be 'R' or 'P'; got {self.kinds}")
        if len(self.actuated) != n:
            raise ValueError(f"Chain {self.name}: `actuated` has {len(self.actuated)} entries for {n} joints")
        if any(not (0 <= j < n - 1) for j in self.body_after) or len(set(self.body_after)) != len(self.body_after):
            raise ValueError(
                f"Chain {self.name}: `body_after` must list distinct joint indices in 0..{n - 2}; got {self.body_after}"
            )
        owner = f"Chain {self.name}"
        check_array(owner, "axes", self.axes, (n, 3))
        check_array(owner, "points", self.points, (n, 3))
        check_array(owner, "home", self.home, (n,))
        check_array(owner, "masses", self.masses, (len(self.body_after),), positive=len(self.body_after) > 0)
        check_array(owner, "coms", self.coms, (len(self.body_after), 3))
        check_array(owner, "inertias", self.inertias, (len(self.body_after), 3, 3))
        check_array(owner, "attach", self.attach, (3,))
        if not is_traced(self.axes):
            norms = np.linalg.norm(np.asarray(self.axes), axis=-1)
            if not np.allclose(norms, 1.0, atol=1e-12):
                raise ValueError(f"Chain {self.name}: joint axes must be unit vectors; norms {norms.tolist()}")
        if not is_traced(self.inertias) and len(self.body_after):
            J = np.asarray(self.inertias)
            if not np.allclose(J, np.swapaxes(J, -1, -2)) or np.any(np.linalg.eigvalsh(J) < -1e-12):
                raise ValueError(
                    f"Chain {self.name}: inertias must be symmetric positive semi-definite; got {J.tolist()}"
                )

    @property
    def n(self) -> int:
        return len(self.kinds)

    def screws(self) -> Float[Array, "n 6"]:
        """The unit joint twists at home."""
        return jnp.stack(
            [
                _screw.prismatic(self.axes[j]) if k == "P" else _screw.revolute(self.axes[j], self.points[j])
                for j, k in enumerate(self.kinds)
            ]
        )


def chain(kinds: str, axes, points, home, *, actuated=None, bodies=(), attach, name, lower=None, upper=None) -> Chain:
    """Build a `Chain` from a kind string such as `"RRPRR"`; `bodies` lists
    `(after_joint, mass, com, inertia)` tuples.

    **Arguments** (the fields of `Chain`, which says more): `kinds`: one letter per
    joint (`R` or `P`), base to platform; `axes` `(n, 3)`, `points` `(n, 3)`: each
    joint's unit axis and a point on it at home (m); `home` `(n,)`: the joint labels at
    home (rad or m); `actuated`: which joints are driven (default: the P joints);
    `bodies`: the massive links; `attach` `(3,)`: the chain's platform-side joint
    centre at home; `name`: a label; `lower`, `upper` `(n,)`: limits on the labels
    (default: none).
    """
    n = len(kinds)
    actuated = tuple(k == "P" for k in kinds) if actuated is None else tuple(bool(a) for a in actuated)
    masses = jnp.asarray([b[1] for b in bodies], dtype=float).reshape(len(bodies))
    coms = jnp.asarray([b[2] for b in bodies], dtype=float).reshape(len(bodies), 3)
    inertias = jnp.asarray([b[3] for b in bodies], dtype=float).reshape(len(bodies), 3, 3)
    inf = jnp.full((n,), jnp.inf)
    return Chain(
        kinds=tuple(kinds),
        axes=jnp.asarray(axes, dtype=float),
        points=jnp.asarray(points, dtype=float),
        home=jnp.asarray(home, dtype=float),
        actuated=actuated,
        lower=-inf if lower is None else jnp.asarray(lower, dtype=float),
        upper=inf if upper is None else jnp.asarray(upper, dtype=float),
        body_after=tuple(int(b[0]) for b in bodies),
        masses=masses,
        coms=coms,
        inertias=inertias,
        attach=jnp.asarray(attach, dtype=float),
        name=name,
    )


def cylinder_inertia(mass, length, radius, axis):
    """Inertia tensor `(3, 3)` (kg m²) of a solid cylinder of `mass` (kg), `length` and
    `radius` (m) about its centre of mass, symmetry axis `axis` (any length)."""
    for name, v in (("mass", mass), ("length", length), ("radius", radius)):
        check_array("parallel.cylinder_inertia", name, v, ())
        if not is_traced(v) and float(v) < 0:
            raise ValueError(f"parallel.cylinder_inertia: `{name}` must be ≥ 0; got {v!r}")
    check_array("parallel.cylinder_inertia", "axis", axis, (3,))
    if not is_traced(axis) and not np.any(np.asarray(axis)):
        raise ValueError(f"parallel.cylinder_inertia: `axis` must be a non-zero direction; got {axis!r}")
    axis = _unit(axis)
    across = mass * (3 * radius**2 + length**2) / 12
    along = mass * radius**2 / 2
    P = jnp.outer(axis, axis)
    return across * (jnp.eye(3) - P) + along * P


def frame_inertia(principal, frame):
    """Inertia `F diag(principal) Fᵀ` from principal moments in the columns of `frame`."""
    F = jnp.asarray(frame, dtype=float)
    return F @ jnp.diag(jnp.asarray(principal, dtype=float)) @ F.T


class AbstractParallelMechanism(eqx.Module):
    """A base, a platform and chains joining them. Subclasses fix the chains and what
    the trajectory prescribes (`task`).

    **Fields:** `chains`; the platform's `mass`, `com` (home), `inertia` (about the
    centre of mass, home, space axes); `reference` (the platform point the trajectory
    moves, at home); `gravity`; `length_scale` (static, scales the position residuals).

    `task_dim`: the platform's degrees of freedom (6 for the Gough–Stewart platform, 3
    for the 3UPS–UPU–S).
    """

    chains: eqx.AbstractVar[tuple[Chain, ...]]
    mass: eqx.AbstractVar[Float[Array, ""]]
    com: eqx.AbstractVar[Float[Array, " 3"]]
    inertia: eqx.AbstractVar[Float[Array, "3 3"]]
    reference: eqx.AbstractVar[Float[Array, " 3"]]
    gravity: eqx.AbstractVar[Float[Array, " 3"]]
    length_scale: eqx.AbstractClassVar[float]
    task_dim: eqx.AbstractClassVar[int]

    @abc.abstractmethod
    def task(self, R, d, R_target, d_target) -> Float[Array, " m"]:
        """Residual of the prescribed coordinates: zero when the platform displacement
        `(R, d)` realises the trajectory's displacement `(R_target, d_target)`."""

    def task_error(self, R, d, R_target, d_target) -> Float[Array, ""]:
        """How far the solved displacement `(R, d)` is from what the trajectory asks
        `(R_target, d_target)`, in every coordinate the mechanism is to realise (the
        largest entry of `R − R_target` and of `(d − d_target)/length_scale`): checked
        after the closure is solved, since `task` can vanish where the pose is not met
        (`vee` of the relative rotation at a half turn; coordinates the mechanism
        cannot move, which its `task` leaves out)."""
        return jnp.maximum(jnp.max(jnp.abs(R - R_target)), jnp.max(jnp.abs(d - d_target)) / self.length_scale)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(c.n for c in self.chains)

    @property
    def n_joints(self) -> int:
        return sum(self.sizes)

    @property
    def actuated(self) -> tuple[tuple[int, int], ...]:
        """`(chain, joint)` of every actuated joint, in order."""
        return tuple((c, j) for c, ch in enumerate(self.chains) for j, a in enumerate(ch.actuated) if a)

    def home_labels(self) -> Float[Array, " n"]:
        return jnp.concatenate([c.home for c in self.chains])

    def joint_names(self) -> tuple[str, ...]:
        return tuple(f"{c.name}.{k}{j + 1}" for c in self.chains for j, k in enumerate(c.kinds))


def _check_platform(owner, mass, com, inertia, reference, gravity):
    check_array(owner, "mass", mass, (), positive=True)
    check_array(owner, "com", com, (3,))
    check_array(owner, "inertia", inertia, (3, 3))
    check_array(owner, "reference", reference, (3,))
    check_array(owner, "gravity", gravity, (3,))


@eager_program
def _seed_legs(Rb, rp, L, tilt, fixed_leg, moving_leg, fixed_mass, moving_mass, platform_mass, leg_radius, stroke):
    """The seed platform's six chains and its platform's mass, centre of mass and
    inertia (one program when built eagerly: op by op, 58 small ones)."""
    Rb, rp, L, tilt = (jnp.asarray(v, dtype=float) for v in (Rb, rp, L, tilt))
    run = L * jnp.sin(tilt)  # horizontal run of a leg
    cos_delta = (Rb**2 + rp**2 - run**2) / (2 * Rb * rp)
    delta = jnp.arccos(jnp.clip(cos_delta, -1.0, 1.0))
    h0 = L * jnp.cos(tilt)
    z = jnp.array([0.0, 0.0, 1.0])
    chains = []
    for p in range(6):
        phi = p * jnp.pi / 3
        s = 1.0 if p % 2 == 0 else -1.0
        A = Rb * jnp.array([jnp.cos(phi), jnp.sin(phi), 0.0])
        C = jnp.array([rp * jnp.cos(phi + s * delta), rp * jnp.sin(phi + s * delta), h0])
        u = (C - A) / jnp.linalg.norm(C - A)
        h = _unit((C - A).at[2].set(0.0))
        x_l = -h
        y_l = jnp.cross(z, x_l)
        x_t = jnp.cos(tilt) * x_l + jnp.sin(tilt) * z
        J_leg = lambda m, ell: cylinder_inertia(m, ell, leg_radius, u)  # noqa: E731
        chains.append(
            chain(
                "RRRPRR",
                axes=[y_l, x_t, u, u, x_t, y_l],
                points=[A, A, A, A, C, C],
                home=[-tilt, 0.0, 0.0, L - fixed_leg, 0.0, tilt],
                bodies=[
                    (2, fixed_mass, A + 0.5 * fixed_leg * u, J_leg(fixed_mass, fixed_leg)),
                    (3, moving_mass, C - 0.5 * moving_leg * u, J_leg(moving_mass, moving_leg)),
                ],
                attach=C,
                name=f"leg{p + 1}",
                lower=jnp.array([-jnp.inf] * 3 + [stroke[0]] + [-jnp.inf] * 2),
                upper=jnp.array([jnp.inf] * 3 + [stroke[1]] + [jnp.inf] * 2),
            )
        )
    com = jnp.array([0.0, 0.0, 1.0]) * h0
    inertia = jnp.diag(jnp.array([0.25, 0.25, 0.5]) * platform_mass * rp**2)
    return tuple(chains), jnp.asarray(platform_mass, dtype=float), com, inertia


@eager_program
def _three_ups_upu_s_chains(height, base_radius, platform_radius, limb_mass, limb_inertia):
    """The 3UPS–UPU–S's five chains and its platform's centre `(0, 0, height)` (one
    program when built eagerly)."""
    H, Rb, rp = (jnp.asarray(v, dtype=float) for v in (height, base_radius, platform_radius))
    z = jnp.array([0.0, 0.0, 1.0])
    O = jnp.zeros(3)
    chains = []
    for i, deg in enumerate((180.0, 270.0, 0.0, 90.0)):
        phi = math.radians(deg)
        rho = jnp.array([math.cos(phi), math.sin(phi), 0.0])
        t = jnp.array([-math.sin(phi), math.cos(phi), 0.0])
        A, C = Rb * rho, rp * rho + H * z
        L = jnp.linalg.norm(C - A)
        u = (C - A) / L
        w = jnp.cross(t, u)
        tilt = jnp.arctan2(Rb - rp, H)
        J = frame_inertia(limb_inertia, jnp.stack([u, t, jnp.cross(u, t)], axis=1))
        bodies = [(1, limb_mass, A + 0.25 * L * u, J), (2, limb_mass, C - 0.25 * L * u, J)]
        if i == 0:
            chains.append(
                chain(
                    "RRPRR",
                    axes=[rho, t, u, w, t],
                    points=[A, A, A, C, C],
                    home=[0.0, -tilt, 0.5 * L, 0.0, tilt],
                    bodies=bodies,
                    attach=C,
                    name="UPU1",
                )
            )
        else:
            chains.append(
                chain(
                    "RRPRRR",
                    axes=[rho, t, u, w, t, u],
                    points=[A, A, A, C, C, C],
                    home=[0.0, -tilt, 0.5 * L, 0.0, tilt, 0.0],
                    bodies=bodies,
                    attach=C,
                    name=f"UPS{i + 1}",
                )
            )
    chains.append(chain("RRR", axes=jnp.eye(3), points=[O, O, O], home=[0.0, 0.0, 0.0], attach=O, name="S5"))
    return tuple(chains), H * z


def _pose_task(R, d, R_target, d_target, reference, scale):
    """Full-pose residual: orientation error and the reference point's position error."""
    rot = _screw.vee(_screw.matmul(R, R_target.T))
    pos = _screw.matvec(R - R_target, reference) + d - d_target
    return jnp.concatenate([rot, pos / scale])


class StewartPlatform(AbstractParallelMechanism):
    """Gough–Stewart platform of seed 002 (Zhao, Wei, Sun 2023): six S-P-U chains.

    The geometry follows the paper's data where it is consistent and the
    reconstruction of `docs/parallel_models.md` where it is not (six legs over 360°,
    platform joints on radius `platform_radius`, legs `tilt` from the vertical at home).
    The trajectory prescribes the full pose of the platform centre.

    **Arguments** (SI): `base_radius` R, `platform_radius` r, `leg_length` L_AC,
    `fixed_leg` L_AB, `moving_leg` L_BC, `tilt`, `fixed_mass`, `moving_mass`,
    `platform_mass`, `leg_radius` (cylinder inertia of the legs), `stroke` (limits on
    the P labels), `gravity`.
    """

    chains: tuple[Chain, ...]
    mass: Float[Array, ""]
    com: Float[Array, " 3"]
    inertia: Float[Array, "3 3"]
    reference: Float[Array, " 3"]
    gravity: Float[Array, " 3"]
    length_scale: ClassVar[float] = 0.1
    task_dim: ClassVar[int] = 6

    def __init__(
        self,
        base_radius=0.05,
        platform_radius=0.02,
        leg_length=0.1,
        fixed_leg=0.05,
        moving_leg=0.05,
        tilt=math.pi / 6,
        fixed_mass=3.0,
        moving_mass=1.0,
        platform_mass=10.0,
        leg_radius=0.005,
        stroke=(0.0, 0.1),
        gravity=(0.0, 0.0, -9.81),
    ):
        owner = "StewartPlatform"
        for name, v in [
            ("base_radius", base_radius),
            ("platform_radius", platform_radius),
            ("leg_length", leg_length),
            ("fixed_leg", fixed_leg),
            ("moving_leg", moving_leg),
            ("fixed_mass", fixed_mass),
            ("moving_mass", moving_mass),
            ("platform_mass", platform_mass),
            ("leg_radius", leg_radius),
        ]:
            check_array(owner, name, v, (), positive=True)
        check_array(owner, "tilt", tilt, ())
        check_array(owner, "stroke", stroke, (2,))
        if not is_traced(stroke) and not float(stroke[0]) < float(stroke[1]):
            raise ValueError(f"{owner}: `stroke` must be (lower, upper) with lower < upper; got {tuple(stroke)}")
        if not is_traced(base_radius, platform_radius, leg_length, tilt):
            Rb, rp, L, t = (float(v) for v in (base_radius, platform_radius, leg_length, tilt))
            run = L * math.sin(t)  # horizontal run of a leg
            if not abs((Rb**2 + rp**2 - run**2) / (2 * Rb * rp)) <= 1 + 1e-12:
                raise ValueError(
                    f"{owner}: a leg of length {L} at tilt {t} rad runs {run} horizontally, "
                    f"which cannot join base radius {Rb} to platform radius {rp}"
                )
        self.chains, self.mass, self.com, self.inertia = _seed_legs(
            base_radius,
            platform_radius,
            leg_length,
            tilt,
            fixed_leg,
            moving_leg,
            fixed_mass,
            moving_mass,
            platform_mass,
            leg_radius,
            stroke,
        )
        self.reference = self.com
        self.gravity = jnp.asarray(gravity, dtype=float)
        _check_platform(owner, self.mass, self.com, self.inertia, self.reference, self.gravity)

    def task(self, R, d, R_target, d_target):
        return _pose_task(R, d, R_target, d_target, self.reference, self.length_scale)

    @classmethod
    def from_anchors(
        cls,
        base,
        platform,
        *,
        reference=None,
        fixed_leg=None,
        moving_leg=None,
        stroke=None,
        fixed_mass=3.0,
        moving_mass=1.0,
        platform_mass=10.0,
        com=None,
        inertia=None,
        leg_radius=0.005,
        gravity=(0.0, 0.0, -9.81),
    ) -> StewartPlatform:
        """Any 6-6 Gough–Stewart platform from its joint centres: leg `i` joins the base
        joint `base[i]` (a spherical joint, three R joints) to the platform joint
        `platform[i]` (a universal joint) through a prismatic joint along the leg.

        **Arguments** (SI): `base`, `platform` `(6, 3)`: the joint centres at home
        (world frame; the home pose is the identity rotation, the platform's reference
        point at `reference`, default the platform joints' centroid); `fixed_leg`,
        `moving_leg`: the lengths of each leg's cylinder and piston (default: half
        the shortest leg each); `stroke`: limits `(lower, upper)` on every P joint's
        label, the leg length minus `fixed_leg` (default: 0 to twice its longest
        home value); `fixed_mass`, `moving_mass`, `leg_radius`: the legs' solid
        cylinders; `platform_mass`, `com` (default `reference`), `inertia` (default:
        a uniform disc through the platform joints, `diag(¼, ¼, ½) m r²`, `r` their
        root-mean-square distance from `com`); `gravity`.

        **Returns:** a `StewartPlatform` (its inverse and forward kinematics,
        dynamics and workspace as the seed's).
        """
        owner = "StewartPlatform.from_anchors"
        A = np.asarray(as_floats(owner, "base", base), dtype=float)
        C = np.asarray(as_floats(owner, "platform", platform), dtype=float)
        for name, v in (("base", A), ("platform", C)):
            if v.shape != (6, 3) or not np.all(np.isfinite(v)):
                raise ValueError(f"{owner}: `{name}` must be six finite joint centres, shape (6, 3); got {v.shape}")
        legs = np.linalg.norm(C - A, axis=1)
        if not np.all(legs > 1e-9 * max(1.0, float(np.max(np.abs(C))))):
            raise ValueError(f"{owner}: leg {int(np.argmin(legs)) + 1} has zero length (its two joints coincide)")
        ref = C.mean(axis=0) if reference is None else np.asarray(as_floats(owner, "reference", reference))
        fixed = 0.5 * legs.min() if fixed_leg is None else fixed_leg
        moving = 0.5 * legs.min() if moving_leg is None else moving_leg
        for name, v in (("fixed_leg", fixed), ("moving_leg", moving), ("fixed_mass", fixed_mass)):
            check_array(owner, name, v, (), positive=True)
        for name, v in (("moving_mass", moving_mass), ("platform_mass", platform_mass), ("leg_radius", leg_radius)):
            check_array(owner, name, v, (), positive=True)
        label = legs - float(fixed)
        lo, hi = (0.0, 2.0 * float(label.max())) if stroke is None else tuple(float(v) for v in stroke)
        if not lo < hi or not np.all((label >= lo) & (label <= hi)):
            raise ValueError(
                f"{owner}: `stroke` must be (lower, upper), lower < upper, holding every leg's home label "
                f"(leg length − fixed_leg: {np.round(label, 6).tolist()}); got {(lo, hi)}"
            )
        c = ref if com is None else np.asarray(as_floats(owner, "com", com))
        r2 = float(np.mean(np.sum((C - c) ** 2, axis=1)))
        J = np.diag([0.25, 0.25, 0.5]) * float(platform_mass) * r2 if inertia is None else inertia
        chains = []
        for i in range(6):
            u = (C[i] - A[i]) / legs[i]
            # the joints' axes: two across the leg (the universal joints), the base's third along it
            helper = np.array([0.0, 0.0, 1.0]) if abs(u[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
            e1 = np.cross(helper, u)
            e1 /= np.linalg.norm(e1)
            e2 = np.cross(u, e1)
            J_leg = lambda m, ell: cylinder_inertia(m, ell, leg_radius, u)  # noqa: E731
            chains.append(
                chain(
                    "RRRPRR",
                    axes=[e1, e2, u, u, e2, e1],
                    points=[A[i], A[i], A[i], A[i], C[i], C[i]],
                    home=[0.0, 0.0, 0.0, label[i], 0.0, 0.0],
                    bodies=[
                        (2, fixed_mass, A[i] + 0.5 * float(fixed) * u, J_leg(fixed_mass, fixed)),
                        (3, moving_mass, C[i] - 0.5 * float(moving) * u, J_leg(moving_mass, moving)),
                    ],
                    attach=C[i],
                    name=f"leg{i + 1}",
                    lower=jnp.array([-jnp.inf] * 3 + [lo] + [-jnp.inf] * 2),
                    upper=jnp.array([jnp.inf] * 3 + [hi] + [jnp.inf] * 2),
                )
            )
        fields = (
            tuple(chains),
            jnp.asarray(platform_mass, dtype=float),
            jnp.asarray(c, dtype=float),
            jnp.asarray(J, dtype=float),
            jnp.asarray(ref, dtype=float),
            jnp.asarray(gravity, dtype=float),
        )
        _check_platform(owner, *fields[1:])
        return eqx.tree_at(lambda m: (m.chains, m.mass, m.com, m.inertia, m.reference, m.gravity), cls(), fields)


class ThreeUPSUPUS(AbstractParallelMechanism):
    """3UPS–UPU–S two-rotation parallel mechanism of seed 004 (Zhao, Sun, Wei 2023).

    A spherical joint at the base centre O carries the platform; one UPU chain removes
    the rotation about the platform normal; three UPS chains add stiffness and
    actuation (four actuated P joints for two degrees of freedom: redundant). The
    trajectory prescribes the direction of the platform normal `R ẑ` (two coordinates);
    the rotation about it is whatever the closure gives. Data: Tables 1–3 of the paper,
    layout and reading in `docs/parallel_models.md`.

    **Arguments** (SI): `height` H, `base_radius` R, `platform_radius` r, `limb_mass`,
    `limb_inertia` (principal moments, limb frame: along the limb first),
    `platform_mass`, `platform_inertia` (principal, platform frame), `gravity`.
    """

    chains: tuple[Chain, ...]
    mass: Float[Array, ""]
    com: Float[Array, " 3"]
    inertia: Float[Array, "3 3"]
    reference: Float[Array, " 3"]
    gravity: Float[Array, " 3"]
    length_scale: ClassVar[float] = 0.6
    task_dim: ClassVar[int] = 2

    def __init__(
        self,
        height=3 * math.sqrt(3) / 10,
        base_radius=0.8,
        platform_radius=0.5,
        limb_mass=1.42,
        limb_inertia=(0.0556, 1.14, 1.16),
        platform_mass=2.87,
        platform_inertia=(68.7, 68.7, 92.1),
        gravity=(0.0, 0.0, -9.81),
    ):
        owner = "ThreeUPSUPUS"
        for name, v in [
            ("height", height),
            ("base_radius", base_radius),
            ("platform_radius", platform_radius),
            ("limb_mass", limb_mass),
            ("platform_mass", platform_mass),
        ]:
            check_array(owner, name, v, (), positive=True)
        check_array(owner, "limb_inertia", limb_inertia, (3,))
        check_array(owner, "platform_inertia", platform_inertia, (3,))
        self.chains, self.com = _three_ups_upu_s_chains(height, base_radius, platform_radius, limb_mass, limb_inertia)
        self.mass = jnp.asarray(platform_mass, dtype=float)
        self.inertia = jnp.diag(jnp.asarray(platform_inertia, dtype=float))
        self.reference = self.com
        self.gravity = jnp.asarray(gravity, dtype=float)
        _check_platform(owner, self.mass, self.com, self.inertia, self.reference, self.gravity)

    def task(self, R, d, R_target, d_target):
        # the direction of the platform normal (two coordinates; valid below 90° of tilt)
        return R[:2, 2] - R_target[:2, 2]

    def task_error(self, R, d, R_target, d_target):
        # the platform normal (all three coordinates: the sign of the third is not in
        # `task`) and the displacement (the platform turns about O: a trajectory that
        # moves the reference point elsewhere is out of reach); the rotation about the
        # normal is the closure's, not prescribed
        normal = jnp.max(jnp.abs(R[:, 2] - R_target[:, 2]))
        return jnp.maximum(normal, jnp.max(jnp.abs(d - d_target)) / self.length_scale)

"""Disc cams with translating followers: the cam's profile from a follower motion law,
the follower's motion from the profile by the contact equation, the pressure angle,
the profile's radius of curvature, and the contact force of a spring-loaded follower.

Conventions: the cam turns anticlockwise about the origin by `θ`; the follower
translates along the world's +y axis, its axis at `x = e` (the offset; flat-faced: 0).
The follower's lift `s(θ)` (a `Law`, periodic in one turn) is measured from its
lowest position, where a roller's centre sits `s₀ = √((R_b + ρ)² − e²)` above the
cam's centre (`R_b` the base circle's radius, `ρ` the roller's) and a flat face at
`R_b`. The profile is a curve of the cam's frame parametrised by the cam angle at
which each of its points touches the follower (`profile`); `follow` solves the
contact equation on any such curve, so the law comes back from its own profile to
round-off. Everything is a pure function of arrays: jittable, vmappable,
differentiable (a law's lifts and angles, the radii, the offset)."""

import functools
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from ._geometry import cross, dot, perp, rotation
from ._validate import is_traced
from ._xla import filter_jit

_TWO_PI = 2 * jnp.pi


def _jitted(fn):
    """`fn` compiled (the library's `filter_jit`: one program per static structure),
    kept a plain function for the reference's and the audit's eyes."""
    program = filter_jit(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return program(*args, **kwargs)

    return call


class Law(eqx.Module):
    """A follower motion law over one turn: `s(θ)` through the `lifts` (m) at the cam
    `angles` (rad; the first 0, increasing, the last segment closing the turn back to
    the first lift), each segment a `kind` transition (`"cycloidal"`: `x − sin 2πx / 2π`;
    `"polynomial345"`: `10x³ − 15x⁴ + 6x⁵`; both have zero rate and acceleration at
    their ends, so a rise, a dwell (equal lifts) and a return join smoothly)."""

    angles: Float[Array, " K"]
    lifts: Float[Array, " K"]
    kind: str = eqx.field(static=True, default="cycloidal")
    kinds: ClassVar[tuple[str, ...]] = ("cycloidal", "polynomial345")

    def __check_init__(self):
        if self.kind not in self.kinds:
            raise ValueError(f"cam.Law: `kind` is one of {self.kinds}; got {self.kind!r}")
        if is_traced(self.angles, self.lifts):
            return
        a, s = np.asarray(self.angles), np.asarray(self.lifts)
        if a.ndim != 1 or s.shape != a.shape or a.shape[0] < 2:
            raise ValueError(
                f"cam.Law: `angles` and `lifts` are two 1-D arrays of one length ≥ 2; got {a.shape}, {s.shape}"
            )
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(s))):
            raise ValueError("cam.Law: `angles` and `lifts` must be finite")
        if a[0] != 0 or np.any(np.diff(a) <= 0) or a[-1] >= 2 * np.pi:
            raise ValueError(
                f"cam.Law: `angles` must start at 0 and increase within one turn [0, 2π); got {a.tolist()}"
            )

    def __call__(self, theta) -> Array:
        """The lift at the cam angle(s) `theta` (any angle: taken modulo one turn)."""
        a = jnp.concatenate([self.angles, jnp.full((1,), _TWO_PI, self.angles.dtype)])
        s = jnp.concatenate([self.lifts, self.lifts[:1]])
        t = jnp.mod(jnp.asarray(theta, a.dtype), _TWO_PI)
        i = jnp.clip(jnp.searchsorted(a, t, side="right") - 1, 0, a.shape[0] - 2)
        x = (t - a[i]) / (a[i + 1] - a[i])
        f = x - jnp.sin(_TWO_PI * x) / _TWO_PI if self.kind == "cycloidal" else x**3 * (10 - 15 * x + 6 * x**2)
        return s[i] + (s[i + 1] - s[i]) * f


def _derivatives(law, theta):
    """`s`, `s′`, `s″` at one cam angle."""
    d1 = jax.grad(law)
    return law(theta), d1(theta), jax.grad(d1)(theta)


class Follower(eqx.Module):
    """A translating follower: a roller of radius `roller` (0: a knife edge) on an axis
    offset by `offset` from the cam's centre, or a flat face (`flat=True`, no
    offset: its face is normal to its axis; `flat`); `base` the cam's base-circle
    radius (m)."""

    base: Float[Array, ""]
    roller: Float[Array, ""] = eqx.field(default_factory=lambda: jnp.zeros(()))
    offset: Float[Array, ""] = eqx.field(default_factory=lambda: jnp.zeros(()))
    flat: bool = eqx.field(static=True, default=False)

    def __check_init__(self):
        if is_traced(self.base, self.roller, self.offset):
            return
        b, r, e = (float(np.asarray(v)) for v in (self.base, self.roller, self.offset))
        if not (np.isfinite(b) and b > 0 and np.isfinite(r) and r >= 0 and np.isfinite(e)):
            raise ValueError(f"cam.Follower: `base` > 0, `roller` ≥ 0 and `offset` finite; got {b}, {r}, {e}")
        if self.flat and (r or e):
            raise ValueError(
                "cam.Follower: a flat face has no `roller` and no `offset` here (its face is normal to its axis)"
            )
        if abs(e) >= b + r:
            raise ValueError(
                f"cam.Follower: the offset |{e}| must be less than the base circle's radius plus the roller's, {b + r}"
            )

    def rest(self):
        """The follower's reference height above the cam's centre at zero lift: the
        roller's centre `√((R_b + ρ)² − e²)`, the flat face `R_b`."""
        return self.base if self.flat else jnp.sqrt((self.base + self.roller) ** 2 - self.offset**2)


def _contact_world(law: Law, f: Follower, theta):
    """The follower's reference point (the roller's centre, the flat face's point on
    its axis) at cam angle `theta`, in the world, and, for a flat face, the contact
    point's distance along the face (`s′`)."""
    s, ds, _ = _derivatives(law, theta)
    return jnp.stack([f.offset, f.rest() + s]), ds


def _outward(c, tangent):
    """The unit normal of a closed curve about the origin at its point `c` moving along
    `tangent`, pointing away from the origin whichever way the curve runs (the cam's
    frame sees its contact point turn clockwise as the cam turns anticlockwise)."""
    return -jnp.sign(cross(c, tangent)) * perp(tangent) / jnp.sqrt(dot(tangent, tangent))


@_jitted
def profile(law: Law, f: Follower, theta) -> Float[Array, "*n 2"]:
    """The cam's profile in its own frame, at the points touching the follower at cam
    angle(s) `theta`: a roller's pitch point (its centre, carried back by `R(−θ)`)
    less `ρ` along the pitch curve's outward normal; a flat face's contact point
    `R(−θ) (s′, R_b + s)`. `law`: the motion law; `f`: the follower."""

    def one(th):
        if f.flat:
            w, ds = _contact_world(law, f, th)
            return rotation(-th) @ jnp.stack([ds, w[1]])
        p, tangent = jax.jvp(_pitch(law, f), (th,), (jnp.ones_like(th),))
        return p - f.roller * _outward(p, tangent)

    return jnp.vectorize(one, signature="()->(k)")(jnp.asarray(theta, law.lifts.dtype))


@_jitted
def pressure_angle(law: Law, f: Follower, theta) -> Array:
    """The pressure angle at cam angle(s) `theta` (rad): between the follower's axis
    and the common normal at the contact, in closed form `atan((s′ − e) / (s₀ + s))`
    for a roller or a knife edge; 0 for a flat face (its normal is its axis). `law`:
    the motion law; `f`: the follower."""

    return jnp.vectorize(lambda th: _pressure(law, f, th))(jnp.asarray(theta, law.lifts.dtype))


def _pressure(law, f, th):
    """The pressure angle at one cam angle (`pressure_angle`)."""
    s, ds, _ = _derivatives(law, th)
    return jnp.zeros_like(s) if f.flat else jnp.arctan2(ds - f.offset, f.rest() + s)


def _radius(c, th, ref=None):
    """The signed radius of curvature of the curve `c(t)` at `th`: its speed along the
    unit direction `ref` (default: its own tangent) cubed over its turning, positive
    where it is convex (it runs clockwise, as a profile does in the cam's frame). Along
    `ref`, a profile that loops back on itself (an undercut, a cusp) has a negative
    speed there, and so a negative radius."""
    d1 = jax.jacfwd(c)(th)
    d2 = jax.jacfwd(jax.jacfwd(c))(th)
    speed = jnp.sqrt(dot(d1, d1)) if ref is None else dot(d1, ref)
    return -(speed**3) / cross(d1, d2)


def _pitch(law, f):
    return lambda t: rotation(-t) @ _contact_world(law, f, t)[0]


@_jitted
def curvature_radius(law: Law, f: Follower, theta) -> Array:
    """The profile's signed radius of curvature at the point touching the follower at
    cam angle(s) `theta`, from the profile curve's derivatives: positive where it is
    convex, negative where concave or where it loops back on itself (an undercut:
    measured along the roller's pitch curve, or for a flat face along its face, where
    its closed form is `R_b + s + s″`). `law`: the motion law; `f`: the follower."""

    def one(th):
        if f.flat:
            ref = rotation(-th) @ jnp.stack([jnp.ones_like(th), jnp.zeros_like(th)])
        else:
            tangent = jax.jvp(_pitch(law, f), (th,), (jnp.ones_like(th),))[1]
            ref = tangent / jnp.sqrt(dot(tangent, tangent))
        return _radius(lambda t: profile(law, f, t), th, ref)

    return jnp.vectorize(one)(jnp.asarray(theta, law.lifts.dtype))


@_jitted
def pitch_radius(law: Law, f: Follower, theta) -> Array:
    """The radius of curvature of a roller's pitch curve (its centre's path in the
    cam's frame) at cam angle(s) `theta`: the profile's plus the roller's where the
    profile is not undercut. `law`: the motion law; `f`: the follower."""
    return jnp.vectorize(lambda th: _radius(_pitch(law, f), th))(jnp.asarray(theta, law.lifts.dtype))


class CamCheck(eqx.Module):
    """`check`'s report on a cam over one turn: the largest pressure angle (rad,
    `max_pressure`), the smallest radius of curvature (`min_radius`) of the profile (a
    flat face's) or of the roller's pitch curve (its convex stretches), and
    `undercut`: a convex stretch of the pitch curve sharper than the roller (its radius
    in `(0, ρ]`: the profile that would carry the roller loops back on itself), or a
    flat face's profile with a radius `≤ 0` (a cusp); the pressure angle past
    `max_pressure` flags `steep`."""

    max_pressure: Float[Array, ""]
    min_radius: Float[Array, ""]
    undercut: Bool[Array, ""]
    steep: Bool[Array, ""]


@_jitted
def check(law: Law, f: Follower, samples: int = 720, max_pressure: float = jnp.pi / 6) -> CamCheck:
    """The pressure angle and the profile's radius of curvature over one turn at
    `samples` cam angles, with the statuses of `CamCheck` (`max_pressure`: the limit on
    the pressure angle, the classic 30° by default). `law`: the motion law; `f`: the
    follower."""
    theta = jnp.linspace(0.0, _TWO_PI, samples, endpoint=False, dtype=law.lifts.dtype)
    mp = jnp.max(jnp.abs(pressure_angle(law, f, theta)))
    if f.flat:
        rc = curvature_radius(law, f, theta)
        return CamCheck(max_pressure=mp, min_radius=jnp.min(rc), undercut=jnp.any(rc <= 0), steep=mp > max_pressure)
    rp = pitch_radius(law, f, theta)
    undercut = jnp.any((rp > 0) & (rp <= f.roller))
    convex = jnp.min(jnp.where(rp > 0, rp, jnp.inf))
    return CamCheck(max_pressure=mp, min_radius=convex, undercut=undercut, steep=mp > max_pressure)


@_jitted
def follow(curve, f: Follower, theta, *, grid: int = 720, newton: int = 5) -> Array:
    """The follower's lift at cam angle(s) `theta` by the contact equation, on a cam
    profile given as a closed curve of its own frame, `curve(t)` `(2,)` for
    `t ∈ [0, 2π)` (e.g. `lambda t: profile(law, f, t)`, or any periodic curve): a flat
    face rests on the profile's highest point, `max_t (R(θ) C(t))_y`; a roller's centre
    on the offset curve `C + ρ n` where it crosses the axis `x = e` highest. Each from
    the best of `grid` samples by `newton` Newton steps on the contact equation
    (jittable; differentiable through the Newton steps, which end at the contact).
    `curve`: the profile; `f`: the follower."""
    ts = jnp.linspace(0.0, _TWO_PI, grid, endpoint=False)

    def offset_point(t, th):
        c, tangent = jax.jvp(curve, (t,), (jnp.ones_like(t),))
        return rotation(th) @ (c + (0.0 if f.flat else f.roller) * _outward(c, tangent))

    def one(th):
        if f.flat:
            height = lambda t: (rotation(th) @ curve(t))[1]  # noqa: E731
            t = ts[jnp.argmax(jax.vmap(height)(ts))]
            g, dg = jax.grad(height), jax.grad(jax.grad(height))
            for _ in range(newton):
                t = t - g(t) / dg(t)
            return height(t) - f.rest()
        # the axis crossings: where x − e changes sign between samples, the highest
        pts = jax.vmap(lambda t: offset_point(t, th))(ts)
        x = pts[:, 0] - f.offset
        crossing = (x * jnp.roll(x, -1) <= 0) & (pts[:, 1] > 0)
        t = ts[jnp.argmax(jnp.where(crossing, pts[:, 1], -jnp.inf))]
        gx = lambda t: offset_point(t, th)[0] - f.offset  # noqa: E731
        for _ in range(newton):
            t = t - gx(t) / jax.grad(gx)(t)
        return offset_point(t, th)[1] - f.rest()

    return jnp.vectorize(one)(jnp.asarray(theta))


class ContactForce(eqx.Module):
    """`contact_force`'s result per cam angle: the follower's `axial` force the cam must
    supply (`m (ω² s″ + g) + k s + preload`, N), the contact force along the common
    `normal` (the axial one over the pressure angle's cosine), the cam's driving
    `torque` (N·m), and
    `lost`: where the cam would have to pull (the spring cannot keep the contact)."""

    axial: Float[Array, " n"]
    normal: Float[Array, " n"]
    torque: Float[Array, " n"]
    lost: Bool[Array, " n"]


@_jitted
def contact_force(law: Law, f: Follower, theta, *, speed, mass, stiffness, preload=0.0, gravity=9.81):
    """The contact of a follower of `mass` held on the cam by a spring of `stiffness`
    (compressed by `preload` / `stiffness` at zero lift) against gravity (along −y),
    the cam turning at the constant `speed` (rad/s), at cam angle(s) `theta`. The
    torque is the contact force's moment about the cam's axis (from the contact
    point and the normal), which the power balance `T ω = F_axial ṡ` checks. `law`:
    the motion law; `f`: the follower; `gravity` (m/s²)."""

    def one(th):
        s, _, dds = _derivatives(law, th)
        axial = mass * (speed**2 * dds + gravity) + stiffness * s + preload
        phi = _pressure(law, f, th)
        normal = axial / jnp.cos(phi)
        # the force on the follower along the common normal, pushing it up and towards
        # the side the profile leans; its reaction on the cam at the contact point
        n = jnp.stack([-jnp.sin(phi), jnp.cos(phi)])
        point = rotation(th) @ profile(law, f, th)
        return axial, normal, cross(point, -normal * n)

    axial, normal, torque = jnp.vectorize(one, signature="()->(),(),()")(jnp.asarray(theta, law.lifts.dtype))
    return ContactForce(axial=axial, normal=normal, torque=-torque, lost=axial < 0)

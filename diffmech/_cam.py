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
from typing import Any, ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jaxtyping import Array, Bool, Float

from ._geometry import cross, dot, perp, rotation
from ._integrator import Integrator
from ._result import RESULTS, AbstractResult, save_status
from ._validate import is_traced
from ._xla import filter_jit

_TWO_PI = 2 * jnp.pi


def _data(*numbers: str):
    """`_jitted` with the keyword arguments named in `numbers` as data."""
    return lambda fn: _jitted(fn, numbers)


def _jitted(fn, numbers: tuple[str, ...] = ()):
    """`fn` compiled (the library's `filter_jit`: one program per static structure),
    kept a plain function for the reference's and the audit's eyes. The keyword
    arguments named in `numbers` are data: a Python number there is passed as an array
    (traced), so another speed or stiffness runs the same program."""
    program = filter_jit(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for k in numbers:
            v = kwargs.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                kwargs[k] = np.asarray(v, dtype=float)
        return program(*args, **kwargs)

    return call


class Law(eqx.Module):
    """A follower motion law over one turn: `s(θ)` through the `lifts` (m; rad for an
    oscillating follower's arm) at the cam `angles` (rad; the first 0, increasing, the
    last segment closing the turn back to the first lift), each segment a `kind`
    transition (`"cycloidal"`: `x − sin 2πx / 2π`; `"polynomial345"`: `10x³ − 15x⁴ +
    6x⁵`; both have zero rate and acceleration at their ends, so a rise, a dwell
    (equal lifts) and a return join smoothly), or `"spline"`: the periodic cubic spline
    through the samples `(angles, lifts)` (three or more; rate and acceleration
    continuous, across the turn too): a law measured or designed point by point."""

    angles: Float[Array, " K"]
    lifts: Float[Array, " K"]
    kind: str = eqx.field(static=True, default="cycloidal")
    kinds: ClassVar[tuple[str, ...]] = ("cycloidal", "polynomial345", "spline")

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
        if self.kind == "spline" and a.shape[0] < 3:
            raise ValueError(f"cam.Law: a spline law needs three samples or more; got {a.shape[0]}")

    def __call__(self, theta) -> Array:
        """The lift at the cam angle(s) `theta` (any angle: taken modulo one turn)."""
        a = jnp.concatenate([self.angles, jnp.full((1,), _TWO_PI, self.angles.dtype)])
        s = jnp.concatenate([self.lifts, self.lifts[:1]])
        t = jnp.mod(jnp.asarray(theta, a.dtype), _TWO_PI)
        i = jnp.clip(jnp.searchsorted(a, t, side="right") - 1, 0, a.shape[0] - 2)
        if self.kind == "spline":
            return _spline(a, s, i, t)
        x = (t - a[i]) / (a[i + 1] - a[i])
        f = x - jnp.sin(_TWO_PI * x) / _TWO_PI if self.kind == "cycloidal" else x**3 * (10 - 15 * x + 6 * x**2)
        return s[i] + (s[i + 1] - s[i]) * f


def _spline(a, s, i, t):
    """The periodic cubic spline through `(a_k, s_k)` (`a`, `s` closed by the first
    sample one turn on) at `t` in interval `i`: its second derivatives `M` solve the
    cyclic system `h₋ M₋ + 2 (h₋ + h) M + h M₊ = 6 (Δs / h − Δs₋ / h₋)`."""
    h = jnp.diff(a)
    slope = jnp.diff(s) / h
    n = h.shape[0]
    hp = jnp.roll(h, 1)  # the interval before each knot (the last one before the first)
    A = jnp.diag(2 * (hp + h)) + jnp.diag(h[:-1], 1) + jnp.diag(hp[1:], -1)
    A = A.at[0, n - 1].add(hp[0]).at[n - 1, 0].add(h[n - 1])
    M = jnp.linalg.solve(A, 6 * (slope - jnp.roll(slope, 1)))
    M = jnp.concatenate([M, M[:1]])
    hi, left, right = h[i], a[i + 1] - t, t - a[i]
    return (
        M[i] * left**3 / (6 * hi)
        + M[i + 1] * right**3 / (6 * hi)
        + (s[i] - M[i] * hi**2 / 6) * left / hi
        + (s[i + 1] - M[i + 1] * hi**2 / 6) * right / hi
    )


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


class Arm(eqx.Module):
    """An oscillating roller follower: an arm pivoted at `pivot` `(2,)` (m, from the
    cam's centre), its roller's centre `length` from the pivot, the roller of radius
    `roller` (0: a knife edge); `base` the cam's base-circle radius. The law's lift is
    the arm's turn (rad) from its rest angle `ψ₀` (`rest()`), where the roller touches
    the base circle on the branch along which a lift (anticlockwise) moves the roller
    away from the cam's centre."""

    base: Float[Array, ""]
    pivot: Float[Array, " 2"]
    length: Float[Array, ""]
    roller: Float[Array, ""] = eqx.field(default_factory=lambda: jnp.zeros(()))
    flat: ClassVar[bool] = False

    def __check_init__(self):
        if is_traced(self.base, self.pivot, self.length, self.roller):
            return
        b, r, L = (float(np.asarray(v)) for v in (self.base, self.roller, self.length))
        a = np.asarray(self.pivot, dtype=float)
        if a.shape != (2,) or not np.all(np.isfinite(a)):
            raise ValueError(f"cam.Arm: `pivot` is a point (x, y); got {np.asarray(self.pivot)!r}")
        if not (np.isfinite(b) and b > 0 and np.isfinite(r) and r >= 0 and np.isfinite(L) and L > 0):
            raise ValueError(f"cam.Arm: `base` > 0, `roller` ≥ 0 and `length` > 0; got {b}, {r}, {L}")
        d = float(np.hypot(*a))
        if not abs(d - L) < b + r < d + L:
            raise ValueError(
                f"cam.Arm: the roller cannot touch the base circle: its centre's circle (radius {L} about a pivot "
                f"{d} from the cam's centre) must cross the circle of radius base + roller = {b + r}"
            )

    def rest(self):
        """The arm's angle `ψ₀` at zero lift: `|A + L u(ψ₀)| = R_b + ρ`, `sin(ψ₀ − α) < 0`
        (`α` the pivot's direction)."""
        d = jnp.sqrt(dot(self.pivot, self.pivot))
        c = ((self.base + self.roller) ** 2 - d**2 - self.length**2) / (2 * d * self.length)
        return jnp.arctan2(self.pivot[1], self.pivot[0]) - jnp.arccos(c)


class FlatArm(eqx.Module):
    """An oscillating flat-faced follower: an arm pivoted at `pivot` `(2,)` (m, from the
    cam's centre) whose flat face runs along the arm at `offset` from the pivot's line
    (towards the cam); `base` the cam's base-circle radius. With `u(ψ)` the arm's
    direction and `ν(ψ)` its normal `(−sin ψ, cos ψ)`, the face is the line `x·ν = A·ν −
    e`, touching the cam from the side of `ν`. The law's lift is the arm's turn (rad)
    from its rest angle `ψ₀` (`rest()`), where the face touches the base circle on the
    branch along which a lift (anticlockwise) moves the face away from the cam's
    centre."""

    base: Float[Array, ""]
    pivot: Float[Array, " 2"]
    offset: Float[Array, ""] = eqx.field(default_factory=lambda: jnp.zeros(()))
    flat: ClassVar[bool] = False  # (not the translating flat face: functions dispatch on the class)

    def __check_init__(self):
        if is_traced(self.base, self.pivot, self.offset):
            return
        b, e = float(np.asarray(self.base)), float(np.asarray(self.offset))
        a = np.asarray(self.pivot, dtype=float)
        if a.shape != (2,) or not np.all(np.isfinite(a)) or not (np.isfinite(b) and b > 0 and np.isfinite(e)):
            raise ValueError(f"cam.FlatArm: `base` > 0, `pivot` a point (x, y), `offset` finite; got {b}, {a}, {e}")
        if not abs(b + e) < float(np.hypot(*a)):
            raise ValueError(
                f"cam.FlatArm: the face cannot touch the base circle: base + offset = {b + e} must be less than the "
                f"pivot's distance from the cam's centre, {float(np.hypot(*a))}"
            )

    def rest(self):
        """The arm's angle `ψ₀` at zero lift: `A·ν(ψ₀) − e = R_b` (`A·ν = d sin(α − ψ)`),
        `cos(α − ψ₀) < 0`."""
        d = jnp.sqrt(dot(self.pivot, self.pivot))
        return jnp.arctan2(self.pivot[1], self.pivot[0]) - jnp.pi + jnp.arcsin((self.base + self.offset) / d)


def _flat_arm(law: Law, f: FlatArm, th):
    """A flat arm at cam angle `th`, in the world: the contact point `P` (the envelope of
    the face lines `x·m(θ) = c(θ)` in the cam's frame, `m = R(−θ) ν`: `P = c ν + (A·u) ψ′
    / (ψ′ − 1) u`), the face's normal `ν` and the arm's direction `u`."""
    s, ds, _ = _derivatives(law, th)
    psi = f.rest() + s
    u = jnp.stack([jnp.cos(psi), jnp.sin(psi)])
    nu = perp(u)
    c = dot(f.pivot, nu) - f.offset
    return c * nu + dot(f.pivot, u) * ds / (ds - 1) * u, nu, u


def _contact_world(law: Law, f, theta):
    """The follower's reference point (the roller's centre, the flat face's point on
    its axis) at cam angle `theta`, in the world, and, for a flat face, the contact
    point's distance along the face (`s′`)."""
    s, ds, _ = _derivatives(law, theta)
    if isinstance(f, Arm):
        psi = f.rest() + s
        return f.pivot + f.length * jnp.stack([jnp.cos(psi), jnp.sin(psi)]), ds
    return jnp.stack([f.offset, f.rest() + s]), ds


def _outward(c, tangent):
    """The unit normal of a closed curve about the origin at its point `c` moving along
    `tangent`, pointing away from the origin whichever way the curve runs (the cam's
    frame sees its contact point turn clockwise as the cam turns anticlockwise)."""
    return -jnp.sign(cross(c, tangent)) * perp(tangent) / jnp.sqrt(dot(tangent, tangent))


@_jitted
def profile(law: Law, f: "Follower | Arm | FlatArm", theta) -> Float[Array, "*n 2"]:
    """The cam's profile in its own frame, at the points touching the follower at cam
    angle(s) `theta`: a roller's pitch point (its centre, carried back by `R(−θ)`)
    less `ρ` along the pitch curve's outward normal; a flat face's contact point
    `R(−θ) (s′, R_b + s)`. `law`: the motion law; `f`: the follower."""

    def one(th):
        if isinstance(f, FlatArm):
            return rotation(-th) @ _flat_arm(law, f, th)[0]
        if f.flat:
            w, ds = _contact_world(law, f, th)
            return rotation(-th) @ jnp.stack([ds, w[1]])
        p, tangent = jax.jvp(_pitch(law, f), (th,), (jnp.ones_like(th),))
        return p - f.roller * _outward(p, tangent)

    return jnp.vectorize(one, signature="()->(k)")(jnp.asarray(theta, law.lifts.dtype))


@_jitted
def pressure_angle(law: Law, f: "Follower | Arm | FlatArm", theta) -> Array:
    """The pressure angle at cam angle(s) `theta` (rad): between the follower's axis
    and the common normal at the contact, in closed form `atan((s′ − e) / (s₀ + s))`
    for a roller or a knife edge; 0 for a flat face (its normal is its axis); for an
    `Arm`, from the roller's direction of motion to the common normal (`_pressure`).
    `law`: the motion law; `f`: the follower."""

    return jnp.vectorize(lambda th: _pressure(law, f, th))(jnp.asarray(theta, law.lifts.dtype))


def _pressure(law, f, th):
    """The pressure angle at one cam angle (`pressure_angle`): for an arm, from the
    roller's direction of motion (normal to the arm) to the common normal, `atan((L (ψ′
    − 1) − A·u) / −(A × u))` (`A` the pivot, `u` the arm's direction, `ψ′` the arm's
    rate per cam turn)."""
    if isinstance(f, FlatArm):  # from the contact point's motion, normal to P − A, to the face's normal
        P, nu, _ = _flat_arm(law, f, th)
        m = perp(P - f.pivot)
        return jnp.arctan2(cross(m, nu), dot(m, nu))
    s, ds, _ = _derivatives(law, th)
    if isinstance(f, Arm):
        psi = f.rest() + s
        u = jnp.stack([jnp.cos(psi), jnp.sin(psi)])
        return jnp.arctan2(f.length * (ds - 1) - dot(f.pivot, u), -cross(f.pivot, u))
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
def curvature_radius(law: Law, f: "Follower | Arm | FlatArm", theta) -> Array:
    """The profile's signed radius of curvature at the point touching the follower at
    cam angle(s) `theta`, from the profile curve's derivatives: positive where it is
    convex, negative where concave or where it loops back on itself (an undercut:
    measured along the roller's pitch curve, or for a flat face along its face, where
    its closed form is `R_b + s + s″`). `law`: the motion law; `f`: the follower."""

    def one(th):
        if isinstance(f, FlatArm):  # along the face, the way the contact runs over it as the cam turns
            ref = rotation(-th) @ _flat_arm(law, f, th)[2]
        elif f.flat:
            ref = rotation(-th) @ jnp.stack([jnp.ones_like(th), jnp.zeros_like(th)])
        else:
            tangent = jax.jvp(_pitch(law, f), (th,), (jnp.ones_like(th),))[1]
            ref = tangent / jnp.sqrt(dot(tangent, tangent))
        return _radius(lambda t: profile(law, f, t), th, ref)

    return jnp.vectorize(one)(jnp.asarray(theta, law.lifts.dtype))


@_jitted
def pitch_radius(law: Law, f: "Follower | Arm | FlatArm", theta) -> Array:
    """The radius of curvature of a roller's pitch curve (its centre's path in the
    cam's frame) at cam angle(s) `theta`: the profile's plus the roller's where the
    profile is not undercut. `law`: the motion law; `f`: the follower (a roller's)."""
    if f.flat or isinstance(f, FlatArm):
        raise ValueError("cam.pitch_radius: a flat face has no pitch curve; see curvature_radius")
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
def check(law: Law, f: "Follower | Arm | FlatArm", samples: int = 720, max_pressure: float = jnp.pi / 6) -> CamCheck:
    """The pressure angle and the profile's radius of curvature over one turn at
    `samples` cam angles, with the statuses of `CamCheck` (`max_pressure`: the limit on
    the pressure angle, the classic 30° by default). `law`: the motion law; `f`: the
    follower."""
    theta = jnp.linspace(0.0, _TWO_PI, samples, endpoint=False, dtype=law.lifts.dtype)
    mp = jnp.max(jnp.abs(pressure_angle(law, f, theta)))
    if f.flat or isinstance(f, FlatArm):
        rc = curvature_radius(law, f, theta)
        return CamCheck(max_pressure=mp, min_radius=jnp.min(rc), undercut=jnp.any(rc <= 0), steep=mp > max_pressure)
    rp = pitch_radius(law, f, theta)
    undercut = jnp.any((rp > 0) & (rp <= f.roller))
    convex = jnp.min(jnp.where(rp > 0, rp, jnp.inf))
    return CamCheck(max_pressure=mp, min_radius=convex, undercut=undercut, steep=mp > max_pressure)


@_jitted
def follow(curve, f: "Follower | Arm | FlatArm", theta, *, grid: int = 720, newton: int = 5) -> Array:
    """The follower's lift at cam angle(s) `theta` by the contact equation, on a cam
    profile given as a closed curve of its own frame, `curve(t)` `(2,)` for
    `t ∈ [0, 2π)` (e.g. `lambda t: profile(law, f, t)`, or any periodic curve): a flat
    face rests on the profile's highest point, `max_t (R(θ) C(t))_y`; a roller's centre
    on the offset curve `C + ρ n` where it crosses the axis `x = e` highest. Each from
    the best of `grid` samples by `newton` Newton steps on the contact equation
    (jittable; differentiable through the Newton steps, which end at the contact). For
    an `Arm`, the arm's turn from its rest angle where the offset curve crosses the
    circle of the roller's centre about the pivot, on the arm's branch; for a
    `FlatArm`, the turn at which the face's line is the turned profile's support line
    (Newton on the turn from the rest angle, the support point refined by Newton). `curve`: the
    profile; `f`: the follower."""
    ts = jnp.linspace(0.0, _TWO_PI, grid, endpoint=False)

    def offset_point(t, th):
        c, tangent = jax.jvp(curve, (t,), (jnp.ones_like(t),))
        roller = 0.0 if f.flat or isinstance(f, FlatArm) else f.roller
        return rotation(th) @ (c + roller * _outward(c, tangent))

    def on_arm(th):  # the roller's centre where the offset curve crosses the arm's circle, on its branch
        arm = f
        assert isinstance(arm, Arm)
        pts = jax.vmap(lambda t: offset_point(t, th))(ts)
        g = jnp.sum((pts - arm.pivot) ** 2, axis=1) - arm.length**2
        side = jax.vmap(lambda q: cross(arm.pivot, q - arm.pivot))(pts) < 0
        crossing = (g * jnp.roll(g, -1) <= 0) & side
        t = ts[jnp.argmax(crossing)]
        gt = lambda t: dot(offset_point(t, th) - arm.pivot, offset_point(t, th) - arm.pivot) - arm.length**2  # noqa: E731
        for _ in range(newton):
            t = t - gt(t) / jax.grad(gt)(t)
        q = offset_point(t, th) - arm.pivot
        return jnp.mod(jnp.arctan2(q[1], q[0]) - arm.rest() + jnp.pi, _TWO_PI) - jnp.pi

    def on_flat_arm(th):  # the arm's turn where the face's line is the turned profile's support line
        arm = f
        assert isinstance(arm, FlatArm)
        turned = lambda t: rotation(th) @ curve(t)  # noqa: E731
        pts = jax.vmap(turned)(ts)
        psi = arm.rest()
        for _ in range(newton + 3):
            u = jnp.stack([jnp.cos(psi), jnp.sin(psi)])
            nu = perp(u)
            height = lambda t: dot(turned(t), nu)  # noqa: E731
            t = ts[jnp.argmax(pts @ nu)]
            for _ in range(3):
                t = t - jax.grad(height)(t) / jax.grad(jax.grad(height))(t)
            p = turned(t)
            # the support point's height less the face's, and its slope −(P − A)·u
            psi = psi - (dot(p, nu) - dot(arm.pivot, nu) + arm.offset) / (-dot(p - arm.pivot, u))
        return jnp.mod(psi - arm.rest() + jnp.pi, _TWO_PI) - jnp.pi

    def one(th):
        if isinstance(f, FlatArm):
            return on_flat_arm(th)
        if isinstance(f, Arm):
            return on_arm(th)
        if f.flat:
            height = lambda t: (rotation(th) @ curve(t))[1]  # noqa: E731
            t = ts[jnp.argmax(jax.vmap(height)(ts))]
            g, dg = jax.grad(height), jax.grad(jax.grad(height))
            for _ in range(newton):
                t = t - g(t) / dg(t)
            return height(t) - f.rest()
        # the axis crossings: where x − e changes sign between samples, the highest
        assert isinstance(f, Follower)
        pts = jax.vmap(lambda t: offset_point(t, th))(ts)
        x = pts[:, 0] - f.offset
        crossing = (x * jnp.roll(x, -1) <= 0) & (pts[:, 1] > 0)
        t = ts[jnp.argmax(jnp.where(crossing, pts[:, 1], -jnp.inf))]
        e = f.offset
        gx = lambda t: offset_point(t, th)[0] - e  # noqa: E731
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


@_data("speed", "mass", "stiffness", "preload", "gravity")
def contact_force(law: Law, f: "Follower | Arm | FlatArm", theta, *, speed, mass, stiffness, preload=0.0, gravity=9.81):
    """The contact of a follower of `mass` held on the cam by a spring of `stiffness`
    (compressed by `preload` / `stiffness` at zero lift) against gravity (along −y),
    the cam turning at the constant `speed` (rad/s), at cam angle(s) `theta`. The
    torque is the contact force's moment about the cam's axis (from the contact
    point and the normal), which the power balance `T ω = F_axial ṡ` checks. For an
    `Arm` or a `FlatArm`: `mass` is the arm's moment of inertia about its pivot (kg m²), `stiffness`
    a torsion spring's (N m/rad), `preload` a torque, and `axial` the torque the cam
    must put on the arm (no gravity: the arm's centre of mass is not modelled).
    `law`: the motion law; `f`: the follower; `gravity` (m/s²)."""

    def arm(th):  # the arm's torque, the normal force (its lever L cos φ), its reaction's moment on the cam
        assert isinstance(f, Arm)
        s, _, dds = _derivatives(law, th)
        effort = mass * speed**2 * dds + stiffness * s + preload
        normal = effort / (f.length * jnp.cos(_pressure(law, f, th)))
        p, tangent = jax.jvp(_pitch(law, f), (th,), (jnp.ones_like(th),))
        n = rotation(th) @ _outward(p, tangent)
        point = rotation(th) @ profile(law, f, th)
        return effort, normal, cross(point, -normal * n)

    def flat_arm(th):  # the arm's torque, the normal force (its moment arm (P − A) × ν), its reaction on the cam
        assert isinstance(f, FlatArm)
        s, _, dds = _derivatives(law, th)
        effort = mass * speed**2 * dds + stiffness * s + preload
        P, nu, _ = _flat_arm(law, f, th)
        normal = effort / cross(P - f.pivot, nu)
        return effort, normal, cross(P, -normal * nu)

    def one(th):
        if isinstance(f, FlatArm):
            return flat_arm(th)
        if isinstance(f, Arm):
            return arm(th)
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


# --------------------------------------------------------------------------- dynamics


class CamMotion(AbstractResult):
    """`simulate`'s motion of a cam and its follower, saved at `ts` (the contract of
    every result: `diffmech._result.AbstractResult`):

    - `theta`, `speed`: the cam's angle and speed; `lift`: the follower's (m, or the
      arm's turn in rad);
    - `force`: the contact's effort along the follower's motion (the axial force the
      cam puts on a translating follower, the torque on an arm): positive while in
      contact;
    - `energy` (kinetic and potential), `work` (the drive's), `energy_error` (the
      largest `|E − E₀ − W|` over the largest kinetic energy, on the saves reached);
    - `converged`, `status` (`contact_lost` from the save after the follower would
      leave the cam: the integration ends where the contact force reaches zero, its
      time located by Newton), `residual` (zero: no closure).
    """

    ts: Float[Array, " T"]
    theta: Float[Array, " T"]
    speed: Float[Array, " T"]
    lift: Float[Array, " T"]
    force: Float[Array, " T"]
    energy: Float[Array, " T"]
    work: Float[Array, " T"]
    energy_error: Float[Array, ""]
    converged: Bool[Array, " T"]
    status: RESULTS
    residual: Float[Array, " T"]

    _values: ClassVar[str] = "theta"
    _inputs: ClassVar[str] = "ts"


class _CamSystem(eqx.Module):
    """The one-degree system of `simulate`: the cam's angle `θ`, the follower's
    coordinate `q(θ)` (the law), their inertias and the spring."""

    law: Law
    f: Any
    inertia: Float[Array, ""]
    mass: Float[Array, ""]
    stiffness: Float[Array, ""]
    preload: Float[Array, ""]
    gravity: Float[Array, ""]
    torque: Any

    def spring(self, q):
        """The spring's and gravity's effort along `q` and their energy."""
        g = jnp.zeros_like(self.gravity) if isinstance(self.f, (Arm, FlatArm)) else self.gravity
        push = self.stiffness * q + self.preload + self.mass * g
        return push, 0.5 * self.stiffness * q**2 + (self.preload + self.mass * g) * q

    def accel(self, t, y):
        """`θ̈` from Lagrange's equation `J θ̈ + m q′ q″ θ̇² + q′ F(q) = τ`, `J = I + m q′²`,
        the contact's effort `m (q″ θ̇² + q′ θ̈) + F(q)` and the drive's torque."""
        th, w = y[0], y[1]
        q, dq, ddq = _derivatives(self.law, th)
        tau = jnp.zeros_like(w) if self.torque is None else self.torque(t, th, w)
        push, _ = self.spring(q)
        a = (tau - self.mass * dq * ddq * w**2 - dq * push) / (self.inertia + self.mass * dq**2)
        return a, self.mass * (ddq * w**2 + dq * a) + push, tau


def _cam_rhs(t, y, sys: _CamSystem):
    a, _, tau = sys.accel(t, y)
    return jnp.stack([y[1], a, tau * y[1]])


def _contact(t, y, args: _CamSystem, **kwargs):
    """Diffrax's event: the contact's effort, whose zero ends the motion."""
    return args.accel(t, y)[1]


@_data("inertia", "speed0", "t1", "mass", "stiffness", "preload", "gravity")
def simulate(
    law: Law,
    f,
    *,
    inertia,
    speed0,
    t1,
    mass,
    stiffness,
    preload=0.0,
    gravity=9.81,
    torque=None,
    saveat=None,
    integrator: Integrator | None = None,
) -> CamMotion:
    """The motion of a cam of `inertia` (kg m² about its axis) starting at angle 0 with
    speed `speed0` (rad/s), driven by `torque(t, θ, θ̇)` (None: free; a drive law such
    as `linkage.ConstantTorque` or any function), its follower held on it by a
    spring (`mass`, `stiffness`, `preload`, `gravity` as in `contact_force`; an
    `Arm`'s `mass` its moment of inertia about its pivot), integrated with Diffrax
    (`integrator`: an `Integrator`, default Dopri8 with PID control at rtol 1e-10,
    atol 1e-12, as a linkage's dynamics) from 0 to `t1` (saved at `saveat`, default
    201 times) while the follower keeps contact: where the contact's effort reaches
    zero the motion ends, `contact_lost` (see `CamMotion`). `law`: the motion law;
    `f`: the follower (`Follower`, translating, or `Arm`). Jitted, differentiable
    (the law, the inertias, the spring, the drive's numbers). `torque` as above; `law`,
    `f`, `inertia`, `speed0`, `t1`, `mass`, `stiffness`, `preload`, `gravity`, `saveat`,
    `integrator` as above."""
    dt = law.lifts.dtype
    ts = jnp.linspace(0.0, t1, 201, dtype=dt) if saveat is None else jnp.asarray(saveat, dt)
    sys = _CamSystem(law, f, *(jnp.asarray(v, dt) for v in (inertia, mass, stiffness, preload, gravity)), torque=torque)
    y0 = jnp.stack([jnp.zeros((), dt), jnp.asarray(speed0, dt), jnp.zeros((), dt)])
    integ = (Integrator() if integrator is None else integrator).resolved("cam.simulate", dt, jnp)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_cam_rhs),
        integ.solver,
        jnp.zeros((), dt),
        jnp.asarray(t1, dt),
        None,
        y0,
        args=sys,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=integ.controller(),
        max_steps=integ.max_steps,
        adjoint=integ.adjoint,
        event=diffrax.Event(_contact, root_finder=optx.Newton(rtol=1e-12, atol=1e-12)),
        throw=False,
    )
    ys = sol.ys
    assert ys is not None
    th, w, work = ys[:, 0], ys[:, 1], ys[:, 2]
    q, dq, _ = jax.vmap(lambda t: _derivatives(law, t))(th)
    _, force, _ = jax.vmap(sys.accel)(ts, ys)
    kinetic = 0.5 * (sys.inertia + sys.mass * dq**2) * w**2
    energy = kinetic + jax.vmap(lambda v: sys.spring(v)[1])(q)
    stopped = RESULTS.where(
        sol.result == diffrax.RESULTS.event_occurred, RESULTS.contact_lost, RESULTS.promote(sol.result)
    )
    ok, status = save_status(stopped, ys, jnp.ones(ts.shape, bool))
    balance = jnp.where(ok, energy - energy[0] - work, 0.0)
    return CamMotion(
        ts=ts,
        theta=th,
        speed=w,
        lift=q,
        force=force,
        energy=energy,
        work=work,
        energy_error=jnp.max(jnp.abs(balance)) / jnp.max(jnp.where(ok, kinetic, 0.0)),
        converged=ok,
        status=status,
        residual=jnp.zeros(ts.shape, dt),
    )

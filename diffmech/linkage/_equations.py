"""The rigidity equations of a linkage, one class per kind (see `_model`'s docstring
for the forms and why they keep full rank).

Each kind says, in one place, how many joints an instance involves (`width`), how
many residual rows it gives (`rows`), the constants it reads from the initial
coordinates (`constants`, differentiably: they carry the design gradient) and its
rows at the current coordinates (`residual`). `EQUATIONS` lists them in the order of
the residual's rows; the topology compiler (`_model.compile_equations`) decides which
instances a linkage has. Tracers (points carried by a link, never solved for) are
kinds too, one per kind of link frame (`TRACERS`): their constants and the map from
the frame to the point.

Adding an equation kind is one class here and the rule in `compile_equations` that emits it.
The arguments: `C0`/`X` `(J, 3)` all coordinates, `idx` `(k, width)` the instances'
joint indices (static), `sl` the point columns (2 planar, 3 otherwise), `u` the
input.
"""

from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from .. import _linalg
from .._geometry import cross, dot, perp, unit


def _frame_coeffs_pp(C0, a, b, c):
    # (α, β) with c = a + α e + β S e, e = b − a
    e = C0[b, :2] - C0[a, :2]
    d = C0[c, :2] - C0[a, :2]
    r2 = dot(e, e)
    return dot(d, e) / r2, dot(d, perp(e)) / r2


def _frame_coeffs_3(C0, a, b, c, d):
    # (α, β, γ) with d = a + α (b − a) + β (c − a) + γ (b − a) × (c − a)
    e1, e2 = C0[b] - C0[a], C0[c] - C0[a]
    M = jnp.stack([e1, e2, jnp.cross(e1, e2)], axis=-1)  # (k, 3, 3) columns
    return jax.vmap(_linalg.solve)(M, C0[d] - C0[a])


def _frame_coeffs_s(C0, u, v, w):
    # (α, β, γ) with w = α u + β v + γ u × v
    M = jnp.stack([C0[u], C0[v], jnp.cross(C0[u], C0[v])], axis=-1)
    return jax.vmap(_linalg.solve)(M, C0[w])


def orthonormal(u, v):
    """Rows (k, 3): e1 = u/|u|, e2 ⟂ e1 in span(u, v), e3 = e1 × e2."""
    e1 = unit(u)
    e2 = unit(v - dot(v, e1)[..., None] * e1)
    return e1, e2, jnp.cross(e1, e2)


class Equation:
    """One kind of rigidity equation (a namespace: never instantiated)."""

    width: ClassVar[int]
    rows: ClassVar[int]

    @staticmethod
    def constants(C0, idx, sl) -> Any:
        raise NotImplementedError

    @staticmethod
    def residual(X, idx, k, u, sl) -> jax.Array:
        raise NotImplementedError


def _distance0(C0, a, b, sl):
    e = C0[b, sl] - C0[a, sl]
    return jnp.sqrt(dot(e, e))


class Distance(Equation):
    """Two points of a link: `(|b − a|² − r²)/(2r)`."""

    width, rows = 2, 1

    @staticmethod
    def constants(C0, idx, sl):
        return _distance0(C0, idx[:, 0], idx[:, 1], sl)

    @staticmethod
    def residual(X, idx, r0, u, sl):
        a, b = idx.T
        e = X[b, sl] - X[a, sl]
        return (dot(e, e) - r0**2) / (2 * r0)


class PointCarried(Equation):
    """Planar: a third point of a link, `c = a + α e + β S e` (e = b − a)."""

    width, rows = 3, 2

    @staticmethod
    def constants(C0, idx, sl):
        return _frame_coeffs_pp(C0, *idx.T)

    @staticmethod
    def residual(X, idx, k, u, sl):
        a, b, c = idx.T
        al, be = k
        e = X[b, :2] - X[a, :2]
        return (X[c, :2] - X[a, :2] - al[:, None] * e - be[:, None] * perp(e)).reshape(-1)


def _line_constants(C0, idx):
    a, b, ln = idx.T
    e0 = C0[b, :2] - C0[a, :2]
    r0 = jnp.sqrt(dot(e0, e0))
    return (dot(C0[ln, :2], e0) / r0, dot(C0[ln, :2], perp(e0)) / r0, r0, dot(C0[ln, :2], C0[a, :2]) + C0[ln, 2])


def _line_in_frame(X, idx, k):
    a, b, ln = idx.T
    ga, de, r0, d0 = k
    e = (X[b, :2] - X[a, :2]) / r0[:, None]
    n = ga[:, None] * e + de[:, None] * perp(e)
    return n, dot(X[ln, :2], X[a, :2]) + X[ln, 2] - d0


class LineCarried(Equation):
    """Planar: a line a two-point link carries, `n = γ ê + δ S ê` and `n·a + c = d`."""

    width, rows = 3, 3

    @staticmethod
    def constants(C0, idx, sl):
        return _line_constants(C0, idx)

    @staticmethod
    def residual(X, idx, k, u, sl):
        n, offset = _line_in_frame(X, idx, k)
        return jnp.concatenate([(X[idx[:, 2], :2] - n).reshape(-1), offset])


class LineSliding(Equation):
    """Planar: a line that another link carries and this one slides along (the
    other side of a slider): `n × (γ ê + δ S ê) = 0` and `n·a + c = d`."""

    width, rows = 3, 2

    @staticmethod
    def constants(C0, idx, sl):
        return _line_constants(C0, idx)

    @staticmethod
    def residual(X, idx, k, u, sl):
        n, offset = _line_in_frame(X, idx, k)
        return jnp.concatenate([cross(X[idx[:, 2], :2], n), offset])


class Offset(Equation):
    """Planar, a link of one point and lines: `n·p + c = d` (Eq. (5))."""

    width, rows = 2, 1

    @staticmethod
    def constants(C0, idx, sl):
        p, ln = idx.T
        return dot(C0[ln, :2], C0[p, :2]) + C0[ln, 2]

    @staticmethod
    def residual(X, idx, d0, u, sl):
        p, ln = idx.T
        return dot(X[ln, :2], X[p, :2]) + X[ln, 2] - d0


class Angle(Equation):
    """Planar: the angle between two lines of a link, `n₂ × R(φ) n₁ = 0` (Eq. (7))."""

    width, rows = 2, 1

    @staticmethod
    def constants(C0, idx, sl):
        l1, l2 = idx.T
        return dot(C0[l1, :2], C0[l2, :2]), cross(C0[l1, :2], C0[l2, :2])

    @staticmethod
    def residual(X, idx, k, u, sl):
        l1, l2 = idx.T
        c, s = k
        return cross(X[l2, :2], c[:, None] * X[l1, :2] + s[:, None] * perp(X[l1, :2]))


class Unit(Equation):
    """An element no link carries keeps unit length: `(|w|² − 1)/2` (Eqs. (8), (9))."""

    width, rows = 1, 1

    @staticmethod
    def constants(C0, idx, sl):
        return None

    @staticmethod
    def residual(X, idx, k, u, sl):
        (j,) = idx.T
        return (dot(X[j, sl], X[j, sl]) - 1) / 2


class SphereFrame(Equation):
    """Spherical: a link's frame `u, v`, `(u·v − k)/|u₀ × v₀|`."""

    width, rows = 2, 1

    @staticmethod
    def constants(C0, idx, sl):
        a, b = idx.T
        cr = jnp.cross(C0[a], C0[b])
        return dot(C0[a], C0[b]), jnp.sqrt(dot(cr, cr))

    @staticmethod
    def residual(X, idx, k, u, sl):
        a, b = idx.T
        c0, s0 = k
        return (dot(X[a], X[b]) - c0) / s0


class SphereCarried(Equation):
    """Spherical: an element a link carries, `w = α u + β v + γ u × v` (three linear
    equations, which also fix `|w| = 1`)."""

    width, rows = 3, 3

    @staticmethod
    def constants(C0, idx, sl):
        return _frame_coeffs_s(C0, *idx.T)

    @staticmethod
    def residual(X, idx, kk, u, sl):
        a, b, w = idx.T
        return (X[w] - kk[:, :1] * X[a] - kk[:, 1:2] * X[b] - kk[:, 2:] * jnp.cross(X[a], X[b])).reshape(-1)


class SphereShared(Equation):
    """Spherical: an element another link already carries keeps two dot products
    with this link's orthonormal frame, those along the axes where it is smallest
    (their projections on its tangent plane are then well conditioned)."""

    width, rows = 3, 2

    @staticmethod
    def constants(C0, idx, sl):
        a, b, w = idx.T
        c = jnp.stack([dot(C0[w], e) for e in orthonormal(C0[a], C0[b])], axis=-1)
        ac = jax.lax.stop_gradient(jnp.abs(c))
        biggest = (ac >= jnp.max(ac, axis=-1, keepdims=True)).astype(c.dtype)
        keep = 1.0 - biggest / jnp.sum(biggest, axis=-1, keepdims=True)  # drop the largest axis
        return c, keep

    @staticmethod
    def residual(X, idx, k, u, sl):
        a, b, w = idx.T
        c, keep = k
        r = jnp.stack([dot(X[w], e) for e in orthonormal(X[a], X[b])], axis=-1) - c  # (k, 3)
        # the two kept axes, in order (a static selection would need concrete data)
        first = jnp.sum(keep * r * (jnp.cumsum(keep, axis=-1) == 1), axis=-1)
        second = jnp.sum(keep * r * (jnp.cumsum(keep, axis=-1) == 2), axis=-1)
        return jnp.stack([first, second], axis=-1).reshape(-1)


class SpaceCarried(Equation):
    """Spatial: a fourth point of a link, `d = a + α(b − a) + β(c − a) + γ (b − a) × (c − a)`."""

    width, rows = 4, 3

    @staticmethod
    def constants(C0, idx, sl):
        return _frame_coeffs_3(C0, *idx.T)

    @staticmethod
    def residual(X, idx, kk, u, sl):
        a, b, c, d = idx.T
        e1, e2 = X[b] - X[a], X[c] - X[a]
        return (X[d] - X[a] - kk[:, :1] * e1 - kk[:, 1:2] * e2 - kk[:, 2:] * jnp.cross(e1, e2)).reshape(-1)


class Perpendicular(Equation):
    """Spatial: a universal joint's two axes stay perpendicular, `(a − c)·(b − c)/ℓ` with
    `c` the joint and `a`, `b` its axis points (one in each link), `ℓ` their distance."""

    width, rows = 3, 1

    @staticmethod
    def constants(C0, idx, sl):
        c, a, b = idx.T
        return jnp.sqrt(_distance0(C0, c, a, sl) * _distance0(C0, c, b, sl))

    @staticmethod
    def residual(X, idx, ell, u, sl):
        c, a, b = idx.T
        return dot(X[a] - X[c], X[b] - X[c]) / ell


def _frame_basis(X, a, b, c):
    """A spatial frame's basis `(k, 3, 3)`: rows `b − a`, `c − a`, their cross product."""
    e1, e2 = X[b] - X[a], X[c] - X[a]
    return jnp.stack([e1, e2, jnp.cross(e1, e2)], axis=1)


def _in_frame(C0, frame, vectors):
    """The coefficients `(k, m, 3)` of `vectors` `(k, m, 3)` in the frame's basis, so
    that `vectors = coefficients @ basis` wherever the frame moves rigidly."""
    B = _frame_basis(C0, *frame)
    return jax.vmap(lambda Bk, v: jax.vmap(lambda w: _linalg.solve(Bk.T, w))(v))(B, vectors)


def normals(a):
    """Two orthonormal directions `(2, 3)` normal to the axis `a` (`t1 ∝ a × h`, `h` the
    coordinate axis least aligned with `a`; `t2 = â × t1`): an axis's normals in the
    joint equations, and any pair that gives the same wrenches in the joint forces."""
    a = unit(a)
    h = jax.nn.one_hot(jnp.argmin(jnp.abs(a)), 3, dtype=a.dtype)
    t1 = unit(jnp.cross(a, h))
    return jnp.stack([t1, jnp.cross(a, t1)])


def _axis_normals(C0, p, q):
    """The two unit normals `(k, 2, 3)` of each axis `q − p` (`normals`), and the axis
    length `(k,)`."""
    d = C0[q] - C0[p]
    return jax.vmap(normals)(d), jnp.sqrt(dot(d, d))


class Cylindrical(Equation):
    """Spatial: a cylindrical joint. Side B's point `p'` and axis point `q'` stay on
    side A's axis line `(p, q)`: `(p' − p)·tᵢ` and `(q' − p')·tᵢ`, `tᵢ` the axis's two
    normals, fixed in side A's frame `(a, b, c)` (4 rows: it leaves the turn about the
    axis and the slide along it)."""

    width, rows = 7, 4

    @staticmethod
    def constants(C0, idx, sl):
        a, b, c, p, q = idx[:, :5].T
        t, _ = _axis_normals(C0, p, q)
        return _in_frame(C0, (a, b, c), t)

    @staticmethod
    def residual(X, idx, k, u, sl):
        return _slide_rows(X, idx, k).reshape(-1)


def _slide_rows(X, idx, k):
    a, b, c, p, q, p2, q2 = idx[:, :7].T
    t = jnp.einsum("kmi,kij->kmj", k, _frame_basis(X, a, b, c))  # (k, 2, 3)
    d, e = X[p2] - X[p], X[q2] - X[p2]
    return jnp.stack([dot(d, t[:, 0]), dot(d, t[:, 1]), dot(e, t[:, 0]), dot(e, t[:, 1])], axis=-1)


class Prismatic(Equation):
    """Spatial: a prismatic joint, a cylindrical joint (`Cylindrical`'s 4 rows) whose
    turn about the axis is locked: side A's first normal `t1`, carried by side B's
    frame `(d, e, f)` as `t1'`, stays normal to A's second, `ℓ t1'·t2` (5 rows)."""

    width, rows = 10, 5

    @staticmethod
    def constants(C0, idx, sl):
        a, b, c, p, q, _, _, d, e, f = idx.T
        t, ell = _axis_normals(C0, p, q)
        return _in_frame(C0, (a, b, c), t), _in_frame(C0, (d, e, f), t[:, :1]), ell

    @staticmethod
    def residual(X, idx, k, u, sl):
        ka, kb, ell = k
        d, e, f = idx[:, 7:].T
        t = jnp.einsum("kmi,kij->kmj", ka, _frame_basis(X, *idx[:, :3].T))
        t1b = jnp.einsum("ki,kij->kj", kb[:, 0], _frame_basis(X, d, e, f))
        lock = ell * dot(t1b, t[:, 1])
        return jnp.concatenate([_slide_rows(X, idx, ka), lock[:, None]], axis=1).reshape(-1)


class Actuator(Equation):
    """The input actuator: the distance between its joints grows by `u` (Section 4.6)."""

    width, rows = 2, 1

    @staticmethod
    def constants(C0, idx, sl):
        return _distance0(C0, idx[:, 0], idx[:, 1], sl)

    @staticmethod
    def residual(X, idx, r0, u, sl):
        a, b = idx.T
        r = r0 + u
        e = X[b, sl] - X[a, sl]
        return (dot(e, e) - r**2) / (2 * r)


class JointTurn(Equation):
    """Spatial: an input that turns an R (or C) joint's side B relative to its side A
    by `u` about the axis `(p, q)`. The axis's first normal `t1` is carried by each
    side's frame (`tA`, `tB`); the turn `θ` from `tA` to `tB` about `â` gives
    `sin(θ − u) = â·(tA × tB) cos u − (tA·tB) sin u` (1 row, slope 1 in `θ`)."""

    width, rows = 8, 1

    @staticmethod
    def constants(C0, idx, sl):
        p, q = idx[:, 6], idx[:, 7]
        t1 = _axis_normals(C0, p, q)[0][:, :1]
        return _in_frame(C0, tuple(idx[:, :3].T), t1), _in_frame(C0, tuple(idx[:, 3:6].T), t1)

    @staticmethod
    def residual(X, idx, k, u, sl):
        ka, kb = k
        ta = jnp.einsum("ki,kij->kj", ka[:, 0], _frame_basis(X, *idx[:, :3].T))
        tb = jnp.einsum("ki,kij->kj", kb[:, 0], _frame_basis(X, *idx[:, 3:6].T))
        a = unit(X[idx[:, 7]] - X[idx[:, 6]])
        return dot(a, jnp.cross(ta, tb)) * jnp.cos(u) - dot(ta, tb) * jnp.sin(u)


class JointSlide(Equation):
    """Spatial: an input that slides a P (or C) joint's side B along side A's axis
    `(p, q)` by `u`: `(p_B − p)·(q − p)/ℓ − u` (1 row), `ℓ = |q − p|`."""

    width, rows = 3, 1

    @staticmethod
    def constants(C0, idx, sl):
        return _distance0(C0, idx[:, 0], idx[:, 1], sl)

    @staticmethod
    def residual(X, idx, ell, u, sl):
        p, q, pb = idx.T
        return dot(X[pb] - X[p], X[q] - X[p]) / ell - u


# the residual's rows, in this order
EQUATIONS: dict[str, type[Equation]] = {
    "dist": Distance,
    "pcarry": PointCarried,
    "lcarry": LineCarried,
    "lslide": LineSliding,
    "offset": Offset,
    "angle": Angle,
    "sdot": SphereFrame,
    "scarry": SphereCarried,
    "scarry2": SphereShared,
    "tcarry": SpaceCarried,
    "perp": Perpendicular,
    "cyl": Cylindrical,
    "prism": Prismatic,
    "unit": Unit,
    "act": Actuator,
    "turn": JointTurn,
    "slide": JointSlide,
}


# --------------------------------------------------------------------------- tracers


class Tracer:
    """A kind of tracer, by its link's frame (a namespace). `idx` rows:
    `(tracer, frame elements...)`."""

    width: ClassVar[int]

    @staticmethod
    def constants(C0, idx) -> Any:
        raise NotImplementedError

    @staticmethod
    def carry(X, idx, k) -> jax.Array:
        """The tracers' coordinates `(k, 2 or 3)` from the frame's."""
        raise NotImplementedError


class TracerPP(Tracer):
    """Planar, frame of two points `a, b`: `t = a + α e + β S e`."""

    width = 3

    @staticmethod
    def constants(C0, idx):
        j, a, b = idx.T
        return _frame_coeffs_pp(C0, a, b, j)

    @staticmethod
    def carry(X, idx, k):
        _, a, b = idx.T
        al, be = k
        e = X[b, :2] - X[a, :2]
        return X[a, :2] + al[:, None] * e + be[:, None] * perp(e)


class TracerPL(Tracer):
    """Planar, frame of a point `p` and a line `n`: `t = p + α n + β S n`."""

    width = 3

    @staticmethod
    def constants(C0, idx):
        j, p, ln = idx.T
        d, n0 = C0[j, :2] - C0[p, :2], C0[ln, :2]
        return dot(d, n0), dot(d, perp(n0))

    @staticmethod
    def carry(X, idx, k):
        _, p, ln = idx.T
        al, be = k
        n = X[ln, :2]
        return X[p, :2] + al[:, None] * n + be[:, None] * perp(n)


class TracerSS(Tracer):
    """Spherical, frame `u, v`: `t = α u + β v + γ u × v`."""

    width = 3

    @staticmethod
    def constants(C0, idx):
        j, u, v = idx.T
        return _frame_coeffs_s(C0, u, v, j)

    @staticmethod
    def carry(X, idx, kk):
        _, u, v = idx.T
        return kk[:, :1] * X[u] + kk[:, 1:2] * X[v] + kk[:, 2:] * jnp.cross(X[u], X[v])


class TracerPPP(Tracer):
    """Spatial, frame of three points: as `SpaceCarried`."""

    width = 4

    @staticmethod
    def constants(C0, idx):
        j, a, b, c = idx.T
        return _frame_coeffs_3(C0, a, b, c, j)

    @staticmethod
    def carry(X, idx, kk):
        _, a, b, c = idx.T
        e1, e2 = X[b] - X[a], X[c] - X[a]
        return X[a] + kk[:, :1] * e1 + kk[:, 1:2] * e2 + kk[:, 2:] * jnp.cross(e1, e2)


# by the kind of the link's frame (`_model._frame_of`)
TRACERS: dict[str, type[Tracer]] = {"pp": TracerPP, "pl": TracerPL, "ss": TracerSS, "ppp": TracerPPP}

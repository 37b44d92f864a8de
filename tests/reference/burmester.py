"""Independent NumPy reference for classical Burmester theory (planar rigid-body guidance).

Conventions
-----------
* A *pose* is ``(x, y, phi)``: the world position ``p = (x, y)`` of the body frame's
  origin and the frame's orientation ``phi`` (radians, anticlockwise).
* A body point ``m`` (body coordinates) is at the world position ``w = p + R(phi) m``.
* A *dyad* is a pair ``(m, c)``: moving pivot ``m`` (body frame) and fixed pivot ``c``
  (world frame) such that ``|p_i + R_i m - c|`` is the same for every pose ``i``.

Equations
---------
With ``w_i(m) = p_i + R_i m`` and a reference pose ``r``, the dyad conditions are

    E_i(m, c) = |w_i - c|^2 - |w_r - c|^2
              = (|w_i|^2 - |w_r|^2) - 2 (w_i - w_r) . c = 0,         i != r.

``|m|^2`` and ``|c|^2`` cancel, so every row ``[2 (w_i - w_r), |w_i|^2 - |w_r|^2]``
is *affine* in ``m`` and the equations are *linear* in ``c``.  A fixed pivot exists
iff the stacked ``(k-1) x 3`` matrix of these rows has rank <= 2 (its kernel is
``(c, -1)``).  For 4 poses the single 3x3 determinant is the (circular) cubic
circle-point curve; for 5 poses two such cubics (rows ``{a, k, l}`` and
``{a, k, l'}``) must vanish simultaneously.

Method used by :func:`burmester_pairs` (pencil of lines through a pole)
-----------------------------------------------------------------------
Both cubics pass through the poles ``P_ra``, ``P_rk``, ``P_ak`` (body frame) and
through the two circular points, so of their 9 intersections at most 4 are
Burmester points.  Lines are drawn through the pole ``m0 = P_ra`` (where
``w_a = w_r``, so row ``a`` vanishes *identically* at ``m0``):
``m = m0 + t u``.  Row ``a`` is then exactly ``t * z(u)`` with ``z`` linear in ``u``,
so each cubic is ``t * q(t)`` with ``q`` a quadratic in ``t`` whose coefficients are
homogeneous of degree 1, 2, 3 in ``u``.  The resultant (in ``t``) of the two
quadratics is a binary form of degree 8 in ``u``; with ``u = u0 + s u1`` it is a
degree-8 polynomial in ``s``, built exactly by multilinear expansion of the 3x3
determinants (no interpolation).  Its roots are: the circular-point pair
``s = +-i`` (a factor ``1 + s^2``), the directions of the poles ``P_rk`` and
``P_ak`` (spurious), and the directions of the (up to 4) Burmester circle points.
For every (nearly) real root ``s`` the candidate ``t`` values are the roots of the
two quadratics; ``c`` follows by linear least squares; every candidate is then
polished by Newton's method on the full square 4x4 system ``E_i(m, c) = 0``
(unknowns ``m``, ``c``), kept only if it converges to round-off, and duplicates are
merged (within 1e-7 relative, or within ten times the round-off uncertainty
``eps * |E| / sigma_min(J)`` when the pair is ill-conditioned).  For robustness the whole elimination is run for
two different base poles
(the two pose pairs with the largest relative rotation, each with its own ``u0``),
and the union is taken.  All the work is done in normalised coordinates (world
translated to the mean position and scaled by the RMS spread of the positions).
Spurious candidates (poles, circular points) cannot survive: at the poles the
linear system for ``c`` is inconsistent, and every returned pair is checked
against every equation (``RuntimeError`` if the relative residual exceeds 1e-9).

Other functions: :func:`center_point` (circumcentre of the three world positions of
``m``), :func:`circle_point` (kinematic inversion: circumcentre of the three
positions of ``c`` seen in the body frame), :func:`center_point_curve` (the same
pencil of lines, for 4 poses: one quadratic per line, then Newton on the 3x3
system in ``(t, c)``), :func:`dyad_residual`.

Only numpy is used; this module is deliberately independent of the library under
test.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import polynomial as npoly

__all__ = [
    "rotation",
    "world_points",
    "center_point",
    "circle_point",
    "burmester_pairs",
    "center_point_curve",
    "dyad_residual",
]

# relative tolerance for accepting a Newton-polished dyad (normalised coordinates)
_ACCEPT_TOL = 1e-10
# relative tolerance of the final verification of every returned dyad
_VERIFY_TOL = 1e-9


# --------------------------------------------------------------------------- basics
def rotation(phi):
    """2x2 rotation matrix R(phi) (anticlockwise)."""
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]], dtype=np.float64)


def _as_poses(poses, count=None):
    arr = np.asarray(poses, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"poses must have shape (k, 3), got {arr.shape}")
    if count is not None and arr.shape[0] != count:
        raise ValueError(f"exactly {count} poses are required, got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("poses must be finite")
    return arr


def _vec2(v, name):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    if v.shape != (2,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be a finite 2-vector")
    return v


def world_points(poses, m):
    """World positions ``p_i + R(phi_i) m`` of the body point ``m``; shape (k, 2)."""
    poses = _as_poses(poses)
    m = _vec2(m, "m")
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    return np.stack([poses[:, 0] + c * m[0] - s * m[1], poses[:, 1] + s * m[0] + c * m[1]], axis=1)


def _body_points(poses, c):
    """Positions ``R_i^T (c - p_i)`` of the world point ``c`` seen in the body frame."""
    d = _vec2(c, "c")[None, :] - poses[:, :2]
    co, si = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    return np.stack([co * d[:, 0] + si * d[:, 1], -si * d[:, 0] + co * d[:, 1]], axis=1)


def _circumcentre(pts):
    """Circumcentre of three 2-D points; ValueError if (numerically) collinear."""
    a = pts[0]
    d1 = pts[1] - a
    d2 = pts[2] - a
    n1 = d1 @ d1
    n2 = d2 @ d2
    cross = d1[0] * d2[1] - d1[1] * d2[0]
    scale = np.sqrt(n1 * n2)
    if not np.isfinite(cross) or scale == 0.0 or abs(cross) <= 1e-12 * scale:
        raise ValueError("the three points are collinear (or coincident): no unique circle")
    ox = (n1 * d2[1] - n2 * d1[1]) / (2.0 * cross)
    oy = (n2 * d1[0] - n1 * d2[0]) / (2.0 * cross)
    return a + np.array([ox, oy])


def dyad_residual(poses, m, c):
    """``max_i | |p_i + R_i m - c| - |p_1 + R_1 m - c| |`` (absolute, same units as poses)."""
    w = world_points(poses, m)
    d = np.hypot(w[:, 0] - c[0], w[:, 1] - c[1])
    return float(np.max(np.abs(d - d[0])))


# ------------------------------------------------------------------ 3-pose problems
def center_point(poses, m):
    """Fixed pivot ``c`` for the moving pivot ``m`` and exactly 3 poses.

    ``c`` is the circumcentre of the three world positions of ``m``.  Raises
    ``ValueError`` if those positions are collinear or coincident.
    """
    poses = _as_poses(poses, 3)
    return _circumcentre(world_points(poses, m))


def circle_point(poses, c):
    """Moving pivot ``m`` (body frame) for the fixed pivot ``c`` and exactly 3 poses.

    Kinematic inversion: ``m`` is the circumcentre of the three positions
    ``R_i^T (c - p_i)`` of ``c`` seen from the body frame (since
    ``|p_i + R_i m - c| = |m - R_i^T (c - p_i)|``).  Raises ``ValueError`` if those
    positions are collinear or coincident.
    """
    poses = _as_poses(poses, 3)
    return _circumcentre(_body_points(poses, c))


# ------------------------------------------------------------- normalised problem
class _Normalised:
    """Poses translated to their mean position and scaled by their RMS spread."""

    def __init__(self, poses):
        xy = poses[:, :2]
        self.centre = xy.mean(axis=0)
        spread = np.sqrt(np.mean(np.sum((xy - self.centre) ** 2, axis=1)))
        self.scale = float(spread) if spread > 1e-300 else 1.0
        self.p = (xy - self.centre) / self.scale
        self.phi = poses[:, 2].copy()
        self.R = np.array([rotation(f) for f in self.phi])
        self.k = poses.shape[0]

    def to_world(self, m, c):
        return m * self.scale, c * self.scale + self.centre

    # affine rows: row_i(m) = r0_i + L_i m, row = [2 (w_i - w_r), |w_i|^2 - |w_r|^2]
    def row_affine(self, i, r):
        p, R = self.p, self.R
        r0 = np.array([2 * (p[i, 0] - p[r, 0]), 2 * (p[i, 1] - p[r, 1]), p[i] @ p[i] - p[r] @ p[r]])
        L = np.zeros((3, 2))
        L[:2] = 2 * (R[i] - R[r])
        L[2] = 2 * (R[i].T @ p[i] - R[r].T @ p[r])
        return r0, L

    def pole(self, i, j):
        """Body-frame pole of poses i, j (the body point with equal world positions)."""
        return np.linalg.solve(self.R[i] - self.R[j], self.p[j] - self.p[i])

    def rel_rotation(self, i, j):
        return abs(np.sin(0.5 * (self.phi[i] - self.phi[j])))

    # ---- residuals and Newton on E_i(m, c) = |w_i - c|^2 - |w_r - c|^2, i != r
    def world(self, m):
        return self.p + np.einsum("kab,b->ka", self.R, m)

    def rel_residual(self, m, c, idx):
        w = self.world(m)[idx]
        d = np.hypot(w[:, 0] - c[0], w[:, 1] - c[1])
        return float(np.max(np.abs(d - d[0])) / max(1.0, d[0]))

    def eqs_and_jac(self, m, c, idx):
        """E and dE/d(m, c) for poses idx (idx[0] is the reference)."""
        r = idx[0]
        w = self.world(m)
        er = w[r] - c
        E = np.empty(len(idx) - 1)
        J = np.empty((len(idx) - 1, 4))
        for row, i in enumerate(idx[1:]):
            ei = w[i] - c
            E[row] = ei @ ei - er @ er
            J[row, :2] = 2 * (self.R[i].T @ ei - self.R[r].T @ er)
            J[row, 2:] = -2 * (w[i] - w[r])
        return E, J

    def c_least_squares(self, m, idx):
        r = idx[0]
        A, b = [], []
        for i in idx[1:]:
            r0, L = self.row_affine(i, r)
            row = r0 + L @ m
            A.append(row[:2])
            b.append(row[2])
        return np.linalg.lstsq(np.array(A), np.array(b), rcond=None)[0]


def _newton(fun, x0, maxit=40):
    """Plain (least-squares) Newton iteration; returns the last finite iterate."""
    x = np.array(x0, dtype=np.float64)
    for _ in range(maxit):
        E, J = fun(x)
        if not np.all(np.isfinite(E)) or not np.all(np.isfinite(J)):
            break
        dx = np.linalg.lstsq(J, -E, rcond=None)[0]
        if not np.all(np.isfinite(dx)):
            break
        x = x + dx
        if np.linalg.norm(dx) <= 4e-16 * (1.0 + np.linalg.norm(x)):
            break
        if np.linalg.norm(x) > 1e12:
            break
    return x


# ------------------------------------------------------- polynomial helpers (in s)
def _det3_poly(A, B, C):
    """det[a(s), b(s), c(s)] for vector polynomials given as (deg+1, 3) coefficient arrays."""
    out = np.zeros(len(A) + len(B) + len(C) - 2)
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            for k, c in enumerate(C):
                out[i + j + k] += np.linalg.det(np.array([a, b, c]))
    return out


def _quadratic_coeffs(z, x_k, y_k, x_l, y_l):
    """Coefficients (q1, q2, q3) of det(z, x_k + t y_k, x_l + t y_l) = t^0 q1 + t q2 + t^2 q3.

    Arguments are vector polynomials in s ((deg+1, 3) arrays); results are polynomials in s.
    """
    q1 = _det3_poly(z, x_k, x_l)
    q2 = npoly.polyadd(_det3_poly(z, y_k, x_l), _det3_poly(z, x_k, y_l))
    q3 = _det3_poly(z, y_k, y_l)
    return q1, q2, q3


def _real_quadratic_roots(q1, q2, q3):
    """Real parts of the roots of q3 t^2 + q2 t + q1 (handles degenerate leading terms)."""
    coef = np.array([q1, q2, q3], dtype=np.float64)
    mx = np.max(np.abs(coef))
    if mx == 0.0:
        return np.array([])
    coef = coef / mx
    while len(coef) > 1 and abs(coef[-1]) <= 1e-14:
        coef = coef[:-1]
    if len(coef) <= 1:
        return np.array([])
    return npoly.polyroots(coef)


def _pencil(nrm, r, a, k, l, theta0):
    """Set up the pencil of lines m = m0 + t u through the pole P_ra.

    Returns m0, u0, u1 and, for a given list of 'other' poses, the vector polynomials.
    """
    m0 = nrm.pole(r, a)
    u0 = np.array([np.cos(theta0), np.sin(theta0)])
    u1 = np.array([-np.sin(theta0), np.cos(theta0)])
    _, La = nrm.row_affine(a, r)
    z = np.array([La @ u0, La @ u1])  # row_a(m0 + t u) == t * z(u), exactly

    def xy(i):
        r0, L = nrm.row_affine(i, r)
        return np.array([r0 + L @ m0]), np.array([L @ u0, L @ u1])

    return m0, u0, u1, z, xy


# ------------------------------------------------------------- 5-pose Burmester pairs
def _burmester_candidates(nrm, r, a, others, theta0):
    k, l, l2 = others
    m0, u0, u1, z, xy = _pencil(nrm, r, a, k, l, theta0)
    xk, yk = xy(k)
    xl, yl = xy(l)
    xl2, yl2 = xy(l2)
    a1, a2, a3 = _quadratic_coeffs(z, xk, yk, xl, yl)
    b1, b2, b3 = _quadratic_coeffs(z, xk, yk, xl2, yl2)
    res = npoly.polysub(
        npoly.polymul(
            npoly.polysub(npoly.polymul(a3, b1), npoly.polymul(a1, b3)),
            npoly.polysub(npoly.polymul(a3, b1), npoly.polymul(a1, b3)),
        ),
        npoly.polymul(
            npoly.polysub(npoly.polymul(a3, b2), npoly.polymul(a2, b3)),
            npoly.polysub(npoly.polymul(a2, b1), npoly.polymul(a1, b2)),
        ),
    )
    res = np.asarray(res, dtype=np.float64)
    mx = np.max(np.abs(res))
    if mx == 0.0:
        raise ValueError("degenerate pose set: the Burmester resultant vanishes identically")
    res = res / mx
    while len(res) > 1 and abs(res[-1]) <= 1e-14:
        res = res[:-1]
    roots = npoly.polyroots(res) if len(res) > 1 else np.array([])
    idx = [r, a, k, l, l2]
    cands = []
    for s in roots:
        # keep real roots; nearly real ones (near-double roots) are tried too,
        # only genuine solutions survive the Newton polish + residual check.
        if abs(s.imag) > 1e-4 * (1.0 + abs(s)):
            continue
        s = s.real
        u = (u0 + s * u1) / np.hypot(1.0, s)
        # numeric quadratics along this line
        zz = z[0] + s * z[1]
        zz = zz / np.hypot(1.0, s)
        ts = []
        for (xa, ya), (xb, yb) in (((xk, yk), (xl, yl)), ((xk, yk), (xl2, yl2))):
            ya_ = (ya[0] + s * ya[1]) / np.hypot(1.0, s)
            yb_ = (yb[0] + s * yb[1]) / np.hypot(1.0, s)
            q1 = np.linalg.det(np.array([zz, xa[0], xb[0]]))
            q2 = np.linalg.det(np.array([zz, ya_, xb[0]])) + np.linalg.det(np.array([zz, xa[0], yb_]))
            q3 = np.linalg.det(np.array([zz, ya_, yb_]))
            ts.extend(_real_quadratic_roots(q1, q2, q3).real.tolist())
        for t in ts:
            m = m0 + t * u
            c = nrm.c_least_squares(m, idx)
            cands.append((m, c))
    return cands, idx


def _uncertainty(nrm, m, c, idx):
    """Round-off uncertainty of a polished dyad: (eps-level error of E) / sigma_min(J)."""
    E, J = nrm.eqs_and_jac(m, c, idx)
    w = nrm.world(m)[idx[0]]
    d0 = np.linalg.norm(w - c)
    e_scale = (1.0 + d0) * (1.0 + d0 + np.linalg.norm(w) + np.linalg.norm(c))
    smin = np.linalg.svd(J, compute_uv=False)[-1]
    if smin <= 0.0 or not np.isfinite(smin):
        return np.inf
    return 16.0 * np.finfo(float).eps * e_scale / smin


def _dedupe(pairs, tol=1e-7):
    """Merge pairs closer than max(tol * size, 10 * (their round-off uncertainties))."""
    out = []
    for m, c, unc in pairs:
        sc = 1.0 + np.linalg.norm(m) + np.linalg.norm(c)
        if any(
            np.linalg.norm(m - m2) + np.linalg.norm(c - c2) <= max(tol * sc, 10.0 * (unc + u2)) for m2, c2, u2 in out
        ):
            continue
        out.append((m, c, unc))
    return [(m, c) for m, c, _ in out]


def burmester_pairs(poses):
    """All real Burmester dyads ``(m, c)`` for exactly 5 poses.

    Returns a list of ``(m, c)`` tuples of float64 2-vectors (``m`` body frame, ``c``
    world frame), sorted by ``(m_x, m_y, c_x, c_y)``.  Generically 0, 2 or 4 pairs.
    See the module docstring for the method (pencil of lines through a pole,
    degree-8 resultant, Newton polish on the 4x4 system, verification).

    Raises ``ValueError`` for degenerate input (e.g. (near) pure translations), and
    ``RuntimeError`` if a returned pair fails the final residual check.
    """
    poses = _as_poses(poses, 5)
    nrm = _Normalised(poses)
    pairs_ij = sorted(
        ((i, j) for i in range(5) for j in range(i + 1, 5)),
        key=lambda ij: (-nrm.rel_rotation(*ij), ij),
    )
    if nrm.rel_rotation(*pairs_ij[0]) < 1e-8:
        raise ValueError("degenerate pose set: the poses (almost) do not rotate relative to each other")

    raw = []
    for base, theta0 in ((pairs_ij[0], 0.3716), (pairs_ij[1], 1.1293)):
        r, a = base
        if nrm.rel_rotation(r, a) < 1e-8:
            continue
        others = [i for i in range(5) if i not in (r, a)]
        cands, idx = _burmester_candidates(nrm, r, a, others, theta0)
        for m, c in cands:
            fun = lambda x, idx=idx: nrm.eqs_and_jac(x[:2], x[2:], idx)  # noqa: E731
            x = _newton(fun, np.concatenate([m, c]))
            if not np.all(np.isfinite(x)):
                continue
            mm, cc = x[:2], x[2:]
            if nrm.rel_residual(mm, cc, list(range(5))) <= _ACCEPT_TOL:
                raw.append((mm, cc, _uncertainty(nrm, mm, cc, idx)))

    found = _dedupe(raw)
    result = []
    for m, c in found:
        mw, cw = nrm.to_world(m, c)
        d0 = np.linalg.norm(world_points(poses[:1], mw)[0] - cw)
        res = dyad_residual(poses, mw, cw)
        if not res <= _VERIFY_TOL * max(nrm.scale, d0):
            raise RuntimeError(f"Burmester pair fails verification: residual {res:.3e}")
        result.append((mw, cw))
    result.sort(key=lambda mc: (mc[0][0], mc[0][1], mc[1][0], mc[1][1]))
    return result


# ------------------------------------------------------------- 4-pose Burmester curve
def center_point_curve(poses4, n, t_max=50.0):
    """``n`` sample dyads ``(m, c)`` on the 4-pose Burmester curve pair.

    Returns ``(ms, cs)``: two float64 arrays of shape ``(n, 2)`` (circle points in the
    body frame, matching centre points in the world frame).  Each sample satisfies the
    three dyad equations to round-off (Newton-polished).

    Method: lines ``m = m0 + t u`` through the pole ``m0 = P_ra`` of the two poses with
    the largest relative rotation; on each line the circle-point cubic is ``t * q(t)``
    with ``q`` quadratic, whose real roots give curve points; ``c`` by least squares,
    then Newton on the square system in ``(t, c)`` (``u`` fixed).  Line directions are
    uniformly spaced; only points with ``|t| <= t_max`` (in units of the RMS spread of
    the pose positions) are kept, then ``n`` of them are taken at evenly spaced
    indices of the list ordered by (direction, t).  The pole ``m0`` itself is omitted.
    """
    poses4 = _as_poses(poses4, 4)
    n = int(n)
    if n < 1:
        raise ValueError("n must be >= 1")
    nrm = _Normalised(poses4)
    pairs_ij = sorted(
        ((i, j) for i in range(4) for j in range(i + 1, 4)),
        key=lambda ij: (-nrm.rel_rotation(*ij), ij),
    )
    r, a = pairs_ij[0]
    if nrm.rel_rotation(r, a) < 1e-8:
        raise ValueError("degenerate pose set: the poses (almost) do not rotate relative to each other")
    k, l = [i for i in range(4) if i not in (r, a)]
    idx = [r, a, k, l]
    m0 = nrm.pole(r, a)
    _, La = nrm.row_affine(a, r)
    rk0, Lk = nrm.row_affine(k, r)
    rl0, Ll = nrm.row_affine(l, r)
    xk, xl = rk0 + Lk @ m0, rl0 + Ll @ m0

    ndir = max(16, 4 * n)
    while True:
        pts = []
        for th in np.pi * (np.arange(ndir) + 0.5) / ndir:
            u = np.array([np.cos(th), np.sin(th)])
            z, yk, yl = La @ u, Lk @ u, Ll @ u
            q1 = np.linalg.det(np.array([z, xk, xl]))
            q2 = np.linalg.det(np.array([z, yk, xl])) + np.linalg.det(np.array([z, xk, yl]))
            q3 = np.linalg.det(np.array([z, yk, yl]))
            roots = _real_quadratic_roots(q1, q2, q3)
            for t in sorted(rt.real for rt in roots if abs(rt.imag) <= 1e-12 * (1 + abs(rt))):
                if abs(t) > t_max or abs(t) < 1e-9:
                    continue
                c = nrm.c_least_squares(m0 + t * u, idx)

                def fun(x, u=u):
                    E, J = nrm.eqs_and_jac(m0 + x[0] * u, x[1:], idx)
                    return E, np.column_stack([J[:, :2] @ u, J[:, 2:]])

                x = _newton(fun, np.concatenate([[t], c]))
                mm, cc = m0 + x[0] * u, x[1:]
                if np.all(np.isfinite(x)) and nrm.rel_residual(mm, cc, idx) <= _ACCEPT_TOL:
                    pts.append((mm, cc))
        if len(pts) >= n:
            break
        if ndir > 2**16:
            raise ValueError("could not sample the requested number of curve points")
        ndir *= 4
    sel = np.unique(np.round(np.linspace(0, len(pts) - 1, n)).astype(int))
    ms = np.empty((n, 2))
    cs = np.empty((n, 2))
    for row, j in enumerate(sel):
        ms[row], cs[row] = nrm.to_world(*pts[j])
    for j in range(n):
        res = dyad_residual(poses4, ms[j], cs[j])
        d0 = np.linalg.norm(world_points(poses4[:1], ms[j])[0] - cs[j])
        if not res <= _VERIFY_TOL * max(nrm.scale, d0):
            raise RuntimeError(f"curve sample fails verification: residual {res:.3e}")
    return ms, cs


# ------------------------------------------------------------------------ self-check
def _fourbar_poses(A, D, crank, coupler, rocker, thetas, branch, mB, phi_off):
    """Coupler-body poses of a hand-built four-bar (closed-form circle intersection)."""
    A, D = np.asarray(A, float), np.asarray(D, float)
    poses, Cs = [], []
    for th in thetas:
        B = A + crank * np.array([np.cos(th), np.sin(th)])
        dv = D - B
        dist = np.hypot(*dv)
        e = dv / dist
        x = (dist**2 + coupler**2 - rocker**2) / (2 * dist)
        h2 = coupler**2 - x**2
        assert h2 > 0, "linkage cannot be assembled at this crank angle"
        C = B + x * e + branch * np.sqrt(h2) * np.array([-e[1], e[0]])
        phi = np.arctan2(C[1] - B[1], C[0] - B[0]) + phi_off
        p = B - rotation(phi) @ mB
        poses.append([p[0], p[1], phi])
        Cs.append(C)
    poses = np.array(poses)
    mC = rotation(poses[0, 2]).T @ (Cs[0] - poses[0, :2])
    for pz, C in zip(poses, Cs):
        assert np.allclose(pz[:2] + rotation(pz[2]) @ mC, C, atol=1e-12, rtol=0)
    return poses, mC


def _match(pairs, m, c):
    if not pairs:
        return np.inf
    return min(np.linalg.norm(m - mm) + np.linalg.norm(c - cc) for mm, cc in pairs)


def _selfcheck(verbose=True):
    out = print if verbose else (lambda *a, **k: None)
    rng = np.random.default_rng(20240611)

    # 1. hand-built four-bar linkages -> both dyads must be recovered
    configs = [
        dict(
            A=(0.0, 0.0),
            D=(4.0, 0.5),
            crank=1.2,
            coupler=3.5,
            rocker=2.8,
            thetas=[0.3, 0.7, 1.2, 1.9, 2.6],
            branch=1,
            mB=(0.7, -0.3),
            phi_off=0.4,
        ),
        dict(
            A=(1.0, -2.0),
            D=(3.5, 1.0),
            crank=1.0,
            coupler=3.0,
            rocker=2.5,
            thetas=[-0.5, 0.4, 1.5, 2.7, 3.9],
            branch=-1,
            mB=(-1.1, 0.6),
            phi_off=-1.3,
        ),
        dict(
            A=(10.0, 20.0),
            D=(13.0, 19.0),
            crank=0.8,
            coupler=2.9,
            rocker=2.2,
            thetas=[0.0, 0.5, 1.0, 1.5, 2.0],
            branch=1,
            mB=(0.2, 1.5),
            phi_off=2.0,
        ),
    ]
    for ci, cfg in enumerate(configs):
        poses, mC = _fourbar_poses(**cfg)
        mB, A, D = np.array(cfg["mB"]), np.array(cfg["A"]), np.array(cfg["D"])
        assert dyad_residual(poses, mB, A) < 1e-12 and dyad_residual(poses, mC, D) < 1e-12
        pairs = burmester_pairs(poses)
        eA, eD = _match(pairs, mB, A), _match(pairs, mC, D)
        res = [dyad_residual(poses, m, c) for m, c in pairs]
        out(f"four-bar {ci}: {len(pairs)} pairs; match(A,B)={eA:.2e} match(D,C)={eD:.2e}; max residual={max(res):.2e}")
        assert eA < 1e-8 and eD < 1e-8, (eA, eD)
        assert max(res) < 1e-10 * (1 + max(np.linalg.norm(c) for _, c in pairs)), res
        assert len(pairs) % 2 == 0
        # each pair: centre point of the first 3 poses agrees, circle point inverse agrees
        for m, c in pairs:
            assert np.allclose(center_point(poses[:3], m), c, atol=1e-8 * (1 + np.linalg.norm(c)))
            assert np.allclose(circle_point(poses[2:], c), m, atol=1e-8 * (1 + np.linalg.norm(m)))
        # rigid change of world frame: m unchanged, c transformed
        g, gt = 0.83, np.array([-3.0, 7.5])
        Rg = rotation(g)
        moved = np.column_stack([(poses[:, :2] @ Rg.T) + gt, poses[:, 2] + g])
        pairs2 = burmester_pairs(moved)
        assert len(pairs2) == len(pairs)
        for m, c in pairs:
            # relative: a circle point far from the poses is less well conditioned
            assert _match(pairs2, m, Rg @ c + gt) < 1e-10 * (1 + np.linalg.norm(m) + np.linalg.norm(c))
        # 4-pose curve: samples satisfy the equations; the linkage dyads lie on it
        ms, cs = center_point_curve(poses[:4], 40)
        cres = max(dyad_residual(poses[:4], m, c) for m, c in zip(ms, cs))
        out(f"  center_point_curve(4 poses, 40): max residual={cres:.2e}")
        assert ms.shape == (40, 2) and cs.shape == (40, 2)
        assert cres < 1e-10 * (1 + np.max(np.abs(cs)))
        for m, c in zip(ms, cs):
            assert np.allclose(center_point(poses[:3], m), c, atol=1e-7 * (1 + np.linalg.norm(c)))

    # 2. center_point / circle_point round trip
    poses3 = np.array([[0.1, 0.2, 0.0], [1.0, 0.5, 0.4], [1.6, 1.4, 1.1]])
    worst = 0.0
    for _ in range(20):
        m = rng.normal(size=2) * 2
        c = center_point(poses3, m)
        m2 = circle_point(poses3, c)
        worst = max(worst, np.linalg.norm(m2 - m) / (1 + np.linalg.norm(m)))
        w = world_points(poses3, m)
        assert np.ptp(np.hypot(*(w - c).T)) < 1e-12 * (1 + np.linalg.norm(c))
    out(f"center_point/circle_point round trip: max rel error={worst:.2e}")
    assert worst < 1e-10
    try:  # collinear positions: pure translation along a line
        center_point(np.array([[0, 0, 0.3], [1, 0, 0.3], [2.5, 0, 0.3]]), np.array([0.4, -0.2]))
    except ValueError:
        pass
    else:
        raise AssertionError("collinear positions must raise ValueError")

    # 3. random 5-pose sets: every pair verified; brute-force multistart Newton
    #    must not find any dyad that burmester_pairs missed.
    counts = {}
    worst_res = 0.0
    for trial in range(12):
        poses = np.column_stack([rng.normal(size=(5, 2)), rng.uniform(-1.5, 1.5, size=5)])
        pairs = burmester_pairs(poses)
        counts[len(pairs)] = counts.get(len(pairs), 0) + 1
        for m, c in pairs:
            worst_res = max(worst_res, dyad_residual(poses, m, c) / max(1.0, np.linalg.norm(c)))
        nrm = _Normalised(poses)
        idx = list(range(5))
        for _ in range(60):
            m = rng.normal(size=2) * 3
            c = nrm.c_least_squares(m, idx)
            x = _newton(lambda x: nrm.eqs_and_jac(x[:2], x[2:], idx), np.concatenate([m, c]))
            if np.all(np.isfinite(x)) and nrm.rel_residual(x[:2], x[2:], idx) <= 1e-11:
                mw, cw = nrm.to_world(x[:2], x[2:])
                err = _match(pairs, mw, cw) / (1 + np.linalg.norm(mw) + np.linalg.norm(cw))
                assert err < 1e-7, f"multistart found a dyad missed by burmester_pairs (trial {trial})"
    out(
        f"random 5-pose sets: pair-count histogram {dict(sorted(counts.items()))}, "
        f"max relative residual={worst_res:.2e}; multistart Newton found nothing missed"
    )
    assert worst_res < 1e-10
    out("burmester reference self-check passed")
    return True

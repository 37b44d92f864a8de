"""Independent reference kinematics for the Sharma & Purwar (2020) example linkages.

Formulation: REFERENCE-POINT / RIGID-BODY POSE coordinates
----------------------------------------------------------
This is written to cross-check the library's point/line/plane solver, so it uses a
different formulation on purpose.  It uses only numpy and scipy and imports nothing
from the library under test.

* Every moving link is a rigid body with a pose.  The body frame of every link is the
  world frame at input 0, so a body-fixed point's local coordinates are its initial
  world coordinates.  At input 0 every pose is therefore the identity.

  - planar:    pose (x, y, phi),  p = R(phi) p0 + (x, y)
  - spherical: rotation about the sphere centre, R = exp([v]x) R_prev, where v is a
               rotation vector composed on the orientation reached at the previous
               step (at step 0 that is the initial orientation, I)
  - spatial:   R = exp([v]x) R_prev and a translation t,  p = R p0 + t

* Joint constraints are written between bodies in terms of their poses:
  - revolute (planar or spherical) / spherical S joint: the joint point, mapped through
    both bodies' poses, is the same point.
  - planar prismatic between bodies A (carries the line) and B (slides): phi_A = phi_B,
    and a point of B keeps its initial signed distance to A's line.  With equal angles,
    every point of B then keeps its distance.
  - spherical prismatic (a plane through the centre with unit normal n0) between
    bodies A and B: R_A n0 = R_B n0, so the plane is fixed in both bodies except for a
    rotation about its own normal.
  - ground = identity pose; input link = a prescribed pose.

* Each step is solved with scipy.optimize.least_squares (Levenberg-Marquardt,
  xtol = ftol = gtol = 1e-14, 3-point finite-difference Jacobian), followed by a few
  Gauss-Newton polishing steps.  Each step starts from the previous step's solution.
  A step whose max |residual| is above 1e-10 is taken as a motion limit: that row and
  every row after it are NaN.

Public functions (each accepts a 1-D input array whose first entry is 0):
    rotation_about(axis, angle) -> (3,3)
    stephenson2(thetas)     -> {"J2","J4","J5","J6","J8": (N,2), "J3": (N,3) line}
    theo_jansen(thetas)     -> {"J2","J4","J6","J7","J8": (N,2)}
    spherical_rrpr(thetas)  -> {"J2","J5": (N,3), "J3": (N,3) plane normal}
    spherical_watt1(phis)   -> {"J2","J3","J4","J5","J7","J8": (N,3)}
    ss5(ss)                 -> {"J6",...,"J11": (N,3)}
Each function also accepts ``return_info=True``. It then returns (dict, info), where
info["residual"] is the per-step max |residual| (NaN after a failure) and
info["failed_at"] is the index of the first failed step, or None.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

__all__ = [
    "rotation_about",
    "stephenson2",
    "theo_jansen",
    "spherical_rrpr",
    "spherical_watt1",
    "ss5",
]

SOLVE_TOL = 1e-12  # target residual
FAIL_TOL = 1e-10  # residual above which a step counts as failed (motion limit)


# --------------------------------------------------------------------------- helpers
def rotation_about(axis, angle):
    """Rodrigues: right-handed rotation by `angle` (rad) about `axis` (normalised here)."""
    k = np.asarray(axis, dtype=np.float64)
    k = k / np.linalg.norm(k)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def _expmap(v):
    """Rotation matrix of a rotation vector v (smooth at v = 0)."""
    v = np.asarray(v, dtype=np.float64)
    t = np.sqrt(v @ v)
    K = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    a = np.sinc(t / np.pi)  # sin t / t
    b = 0.5 * np.sinc(t / (2.0 * np.pi)) ** 2  # (1 - cos t) / t^2
    return np.eye(3) + a * K + b * (K @ K)


def _rot2(phi):
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def _line(abc):
    """Line (a,b,c) scaled so that a^2 + b^2 = 1. Returns (n, c)."""
    abc = np.asarray(abc, dtype=np.float64)
    s = np.hypot(abc[0], abc[1])
    return abc[:2] / s, abc[2] / s


def _solve(fun, x0):
    """Solve fun(x) = 0 from x0. Returns (x, max|residual|)."""
    x0 = np.asarray(x0, dtype=np.float64)
    r0 = fun(x0)
    if np.max(np.abs(r0)) <= 1e-15:
        return x0, float(np.max(np.abs(r0)))
    sol = least_squares(fun, x0, method="lm", jac="3-point", xtol=1e-14, ftol=1e-14, gtol=1e-14, max_nfev=20000)
    x = sol.x
    # Gauss-Newton polish (central-difference Jacobian) to get down to round-off
    for _ in range(6):
        r = fun(x)
        if np.max(np.abs(r)) <= 1e-14:
            break
        h = 1e-7 * np.maximum(1.0, np.abs(x))
        J = np.empty((r.size, x.size))
        for j in range(x.size):
            e = np.zeros_like(x)
            e[j] = h[j]
            J[:, j] = (fun(x + e) - fun(x - e)) / (2 * h[j])
        dx = np.linalg.lstsq(J, -r, rcond=None)[0]
        xn = x + dx
        if np.max(np.abs(fun(xn))) < np.max(np.abs(r)):
            x = xn
        else:
            break
    return x, float(np.max(np.abs(fun(x))))


def _march(inputs, x0, residual, post, return_info, state_update=None):
    """Generic continuation driver.

    residual(x, u, state) -> residual vector
    post(x, u, state)     -> dict name -> 1-D array (output points at this step)
    state_update(x, state) -> new state (for incremental rotation parametrisations);
                             it also returns the warm start for the next step.
    """
    inputs = np.asarray(inputs, dtype=np.float64).ravel()
    n = inputs.size
    out = None
    res = np.full(n, np.nan)
    failed_at = None
    x = np.asarray(x0, dtype=np.float64).copy()
    state = None if state_update is None else state_update(None, None)[1]
    for i, u in enumerate(inputs):
        xs, r = _solve(lambda z: residual(z, u, state), x)
        if not np.isfinite(r) or r > FAIL_TOL:
            failed_at = i
            break
        res[i] = r
        vals = post(xs, u, state)
        if out is None:
            out = {k: np.full((n, np.size(v)), np.nan) for k, v in vals.items()}
        for k, v in vals.items():
            out[k][i] = v
        if state_update is None:
            x = xs
        else:
            x, state = state_update(xs, state)
    if out is None:  # failed at the first step: build NaN arrays with the right shape
        vals = post(np.asarray(x0, dtype=np.float64), inputs[0] if n else 0.0, state)
        out = {k: np.full((n, np.size(v)), np.nan) for k, v in vals.items()}
    if return_info:
        return out, {"residual": res, "failed_at": failed_at}
    return out


# ----------------------------------------------------------------- planar machinery
class _Planar:
    """Bodies with pose (x, y, phi); a body's local coordinates are its initial world
    coordinates. Fixed poses: ground (identity) and input (prescribed)."""

    def __init__(self, moving):
        self.moving = list(moving)
        self.idx = {b: k for k, b in enumerate(self.moving)}

    def poses(self, x, fixed):
        P = dict(fixed)
        for b, k in self.idx.items():
            P[b] = (x[3 * k : 3 * k + 2], x[3 * k + 2])
        return P

    @staticmethod
    def pt(P, body, p0):
        t, phi = P[body]
        return _rot2(phi) @ p0 + t

    @staticmethod
    def revolute(P, A, B, p0):
        return _Planar.pt(P, A, p0) - _Planar.pt(P, B, p0)

    @staticmethod
    def line_world(P, body, n0, c0):
        t, phi = P[body]
        n = _rot2(phi) @ n0
        return n, c0 - n @ t

    @staticmethod
    def prismatic(P, carrier, slider, n0, c0, q0):
        """carrier carries the line (n0, c0); slider slides on it (same angle); q0 is a
        point of the slider that keeps its initial signed distance to the line."""
        n, c = _Planar.line_world(P, carrier, n0, c0)
        d0 = n0 @ q0 + c0
        q = _Planar.pt(P, slider, q0)
        return np.array([P[carrier][1] - P[slider][1], n @ q + c - d0])


def _input_pose(pivot, theta):
    """Pose of a link turning anticlockwise by theta about the fixed point `pivot`."""
    R = _rot2(theta)
    return (pivot - R @ pivot, theta)


_GROUND2 = (np.zeros(2), 0.0)


# ----------------------------------------------------------------- 1. Stephenson-II
def stephenson2(thetas, return_info=False):
    """Planar Stephenson-II six-bar (Table 1). Input: L1 turns anticlockwise by theta
    about J1. Returns J2, J4, J5, J6, J8 as (N,2) and the line J3 as (N,3), scaled so
    that a^2 + b^2 = 1 with the sign carried on from the initial line."""
    J1 = np.array([0.0, -1.0])
    J2 = np.array([1.0, 0.5])
    J4 = np.array([3.25, 1.4])
    J5 = np.array([7.72, 1.44])
    J6 = np.array([11.66, 4.17])
    J8 = np.array([6.0, -2.0])
    n3, c3 = _line([-0.17, 0.98, -4.28])
    n7, c7 = _line([0.0, 1.0, 1.24])
    M = _Planar(["L2", "L3", "L4", "L5"])

    def fixed(u):
        return {"L6": _GROUND2, "L1": _input_pose(J1, u)}

    def residual(x, u, _s):
        P = M.poses(x, fixed(u))
        return np.concatenate(
            [
                M.revolute(P, "L1", "L2", J2),
                M.prismatic(P, "L2", "L3", n3, c3, J6),  # J3: L3 slides on L2's line
                M.revolute(P, "L2", "L4", J4),
                M.revolute(P, "L4", "L5", J5),
                M.revolute(P, "L3", "L5", J6),
                M.prismatic(P, "L6", "L5", n7, c7, J5),  # J7: L5 slides on the ground line
            ]
        )

    def post(x, u, _s):
        P = M.poses(x, fixed(u))
        n, c = M.line_world(P, "L2", n3, c3)
        return {
            "J2": M.pt(P, "L1", J2),
            "J4": M.pt(P, "L2", J4),
            "J5": M.pt(P, "L4", J5),
            "J6": M.pt(P, "L3", J6),
            "J8": M.pt(P, "L4", J8),
            "J3": np.array([n[0], n[1], c]),
        }

    return _march(thetas, np.zeros(12), residual, post, return_info)


# ----------------------------------------------------------- 2. modified Theo Jansen
def theo_jansen(thetas, return_info=False):
    """Modified Theo Jansen linkage. Input: L1 turns anticlockwise by theta about J1.
    Returns J2, J4, J6, J7, J8 as (N,2)."""
    J1 = np.array([2.77, 2.31])
    J2 = np.array([2.17, 3.33])
    J4 = np.array([0.66, -1.3])
    J5 = np.array([-0.22, 1.72])
    J6 = np.array([-3.17, 0.66])
    J7 = np.array([-2.08, -2.24])
    J8 = np.array([2.54, -4.64])
    n3, c3 = _line([-0.50, 0.87, -4.80])
    M = _Planar(["L2", "L3", "L4", "L5", "L6", "L7"])

    def fixed(u):
        return {"L8": _GROUND2, "L1": _input_pose(J1, u)}

    def residual(x, u, _s):
        P = M.poses(x, fixed(u))
        return np.concatenate(
            [
                M.revolute(P, "L1", "L2", J2),
                M.revolute(P, "L1", "L3", J2),
                M.prismatic(P, "L4", "L2", n3, c3, J2),  # J3: L2 slides on L4's line
                M.revolute(P, "L3", "L5", J4),
                M.revolute(P, "L3", "L7", J4),
                M.revolute(P, "L4", "L8", J5),
                M.revolute(P, "L5", "L8", J5),
                M.revolute(P, "L4", "L6", J6),
                M.revolute(P, "L6", "L7", J7),
            ]
        )

    def post(x, u, _s):
        P = M.poses(x, fixed(u))
        return {
            "J2": M.pt(P, "L1", J2),
            "J4": M.pt(P, "L3", J4),
            "J6": M.pt(P, "L4", J6),
            "J7": M.pt(P, "L6", J7),
            "J8": M.pt(P, "L7", J8),
        }

    return _march(thetas, np.zeros(18), residual, post, return_info)


# -------------------------------------------------------------- spherical machinery
def _rot_state_update(nbodies, extra=0):
    """Incremental rotation parametrisation: x = [v_1..v_nb, extra...];
    R_i = exp(v_i) R_prev_i. After a step, fold v into R_prev and reset v to 0."""

    def update(xs, state):
        if xs is None:
            return None, [np.eye(3) for _ in range(nbodies)]
        newR = [_expmap(xs[3 * k : 3 * k + 3]) @ state[k] for k in range(nbodies)]
        x_next = np.concatenate([np.zeros(3 * nbodies), xs[3 * nbodies : 3 * nbodies + extra]])
        return x_next, newR

    return update


def _rots(x, state, n):
    return [_expmap(x[3 * k : 3 * k + 3]) @ state[k] for k in range(n)]


# ------------------------------------------------------------- 3. spherical RRPR
def spherical_rrpr(thetas, return_info=False):
    """Spherical RRPR four-bar on the unit sphere (Table 2; vectors normalised here).
    Input: L1 turns right-handedly by theta about the axis through J1. Returns J2, J5
    and the unit normal of the prismatic plane J3 (carried by L2), all (N,3)."""
    J1 = _unit([0.94, 0.24, 0.24])
    J2 = _unit([0.80, 0.27, 0.53])
    J4 = _unit([-0.38, 0.76, 0.53])
    J5 = _unit([0.50, -0.21, 0.84])
    n0 = _unit([0.68, -0.68, 0.26])

    def residual(x, u, state):
        R2, R3 = _rots(x, state, 2)
        R1 = rotation_about(J1, u)
        return np.concatenate(
            [
                R1 @ J2 - R2 @ J2,  # revolute J2 (L1-L2)
                R2 @ n0 - R3 @ n0,  # prismatic plane J3 (L2-L3)
                R3 @ J4 - J4,  # revolute J4 (L3-ground)
            ]
        )

    def post(x, u, state):
        R2, R3 = _rots(x, state, 2)
        return {"J2": R2 @ J2, "J5": R2 @ J5, "J3": R2 @ n0}

    return _march(thetas, np.zeros(6), residual, post, return_info, _rot_state_update(2))


# ---------------------------------------------------------- 4. spherical Watt-I
def spherical_watt1(phis, return_info=False):
    """Spherical Watt-I six-bar on the unit sphere (vectors normalised here). J1 is the
    prismatic plane z = 0 between ground and L1, so L1 turns right-handedly about +z by
    phi. Returns J2, J3, J4, J5, J7, J8 as (N,3)."""
    ez = np.array([0.0, 0.0, 1.0])
    J2 = _unit([0.93, 0, 0.37])
    J3 = _unit([0.85, -0.17, 0.51])
    J4 = _unit([0.70, 0.70, 0.14])
    J5 = _unit([0.73, 0.49, 0.49])
    J6 = _unit([0.81, 0.41, -0.41])
    J7 = _unit([0.48, -0.10, 0.87])
    J8 = _unit([0.49, 0.49, 0.73])

    def residual(x, u, state):
        R2, R3, R4, R5 = _rots(x, state, 4)  # bodies L2, L3, L4, L5
        R1 = rotation_about(ez, u)
        return np.concatenate(
            [
                R1 @ J2 - R2 @ J2,  # J2: L1-L2
                R1 @ J3 - R4 @ J3,  # J3: L1-L4
                R2 @ J4 - R3 @ J4,  # J4: L2-L3
                R2 @ J5 - R5 @ J5,  # J5: L2-L5
                R3 @ J6 - J6,  # J6: L3-ground
                R4 @ J7 - R5 @ J7,  # J7: L4-L5
            ]
        )

    def post(x, u, state):
        R2, R3, R4, R5 = _rots(x, state, 4)
        R1 = rotation_about(ez, u)
        return {"J2": R1 @ J2, "J3": R1 @ J3, "J4": R2 @ J4, "J5": R2 @ J5, "J7": R4 @ J7, "J8": R5 @ J8}

    return _march(phis, np.zeros(12), residual, post, return_info, _rot_state_update(4))


# ----------------------------------------------------------------- 5. spatial 5-SS
def ss5(ss, return_info=False):
    """Spatial 5-SS platform. Ground points J1..J5, coupler points J6..J10 (+ tracer
    J11), legs Jk-J(k+5) of fixed length. Input: linear actuator ground J1 to coupler J7,
    |J7 - J1| = |J7_0 - J1_0| + s. Unknowns: coupler pose (rotation vector composed on
    the previous orientation, translation). Returns J6..J11 as (N,3)."""
    G = np.array(
        [[-7.2, -5.29, 7.87], [5.72, -0.71, -8.26], [-8.75, -4.60, 5.49], [-10.00, -8.72, 6.09], [-3.88, 6.61, 8.91]]
    )
    C = np.array(
        [
            [-6.61, -9.99, 3.93],
            [8.19, -9.05, 6.07],
            [7.84, -5.73, -0.62],
            [4.15, -0.48, -2.04],
            [-0.97, -9.04, 1.92],
            [2.20, -7.17, 5.36],
        ]
    )
    Lg = np.linalg.norm(C[:5] - G, axis=1)
    d0 = np.linalg.norm(C[1] - G[0])

    def points(x, state):
        R = _expmap(x[:3]) @ state[0]
        return C @ R.T + x[3:6]

    def residual(x, u, state):
        P = points(x, state)
        legs = np.linalg.norm(P[:5] - G, axis=1) - Lg
        act = np.linalg.norm(P[1] - G[0]) - (d0 + u)
        return np.concatenate([legs, [act]])

    def post(x, u, state):
        P = points(x, state)
        return {f"J{6 + k}": P[k] for k in range(6)}

    return _march(ss, np.zeros(6), residual, post, return_info, _rot_state_update(1, extra=3))


# ------------------------------------------------------------------------- demo
_CASES = [
    ("stephenson2", stephenson2, "J8", "theta", np.deg2rad(2.0)),
    ("theo_jansen", theo_jansen, "J8", "theta", np.deg2rad(2.0)),
    ("spherical_rrpr", spherical_rrpr, "J5", "theta", np.deg2rad(2.0)),
    ("spherical_watt1", spherical_watt1, "J8", "phi", np.deg2rad(2.0)),
    ("ss5", ss5, "J11", "s", 0.01),
]

if __name__ == "__main__":
    np.set_printoptions(precision=12, suppress=False)
    for name, fn, tracer, _var, step in _CASES:
        u = np.arange(20) * step
        out, info = fn(u, return_info=True)
        print(
            f"{name:16s} 20 steps: max residual = {np.nanmax(info['residual']):.3e}, "
            f"failed_at = {info['failed_at']}, last {tracer} = {out[tracer][-1]}"
        )
    print()
    for name, fn, tracer, _var, step in _CASES:
        u = np.arange(181) * step  # 180 steps beyond the initial configuration
        out, info = fn(u, return_info=True)
        fa = info["failed_at"]
        jumps = max(np.nanmax(np.linalg.norm(np.diff(v, axis=0), axis=1)) for v in out.values())
        print(
            f"{name:16s} 180 steps: failed_at = {fa}"
            + (f" (input {u[fa]:.6g}; last good {tracer} = {out[tracer][fa - 1]})" if fa else "")
            + f", max residual = {np.nanmax(info['residual']):.3e}, max per-step move = {jumps:.3g}"
        )

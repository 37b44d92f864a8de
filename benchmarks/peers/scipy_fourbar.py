"""Peer baseline: plain NumPy/SciPy minimal-coordinate four-bar dynamics.

An independent, "typical engineer" implementation (no diffmech, no JAX) of the
planar four-bar forward dynamics, used as a baseline in the benchmarks.

Mechanism (x-y plane)
---------------------
Lengths (l1, l2, l3, l4): crank A->B, coupler B->C, rocker D->C, ground A->D.
A = (0, 0), D = (l4, 0).  B = l1 u(thA), C = B + l2 u(thB) = D + l3 u(thD),
u(t) = (cos t, sin t), n(t) = perp u(t) = (-sin t, cos t).
Branch +1 means sign(l4 - l1) * cross(uB, uD) > 0.

Per moving link i (crank, coupler, rocker): mass m_i, inertia J_i about the
COM, COM offset rho_i in the link frame (origin at the first joint A, B, D;
x-axis along the link).  Potential V = -sum m_i g . r_i.

Model
-----
One generalized coordinate thA, state y = (thA, wA).  At every RHS call:

* closed-form loop closure (circle-circle intersection).  With e the unit
  vector B->D, d = |D - B|, a = (l2^2 - l3^2 + d^2) / (2 d), h = sqrt(l2^2 - a^2),
  C = B + a e + s h perp(e) and cross(C - B, C - D) = s h d, so the branch
  sign is simply s = branch * sign(l4 - l1);
* velocity ratios kB = dthB/dthA, kD = dthD/dthA from the linear velocity
  equation l1 nA + l2 kB nB - l3 kD nD = 0;
* their derivatives kB', kD' from the acceleration equation
  l2 kB' nB - l3 kD' nD = l1 uA + l2 kB^2 uB - l3 kD^2 uD;
* COM Jacobians Jr_i = dr_i/dthA and their derivatives (exact),
  M = sum m_i |Jr_i|^2 + J_i k_i^2, M' = 2 sum m_i Jr_i.Jr_i' + J_i k_i k_i',
  dV/dthA = -sum m_i g . Jr_i;
* M thA'' + 1/2 M' wA^2 + dV/dthA = 0.

No finite differences are used in the RHS.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from scipy.integrate import solve_ivp


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


def closed_form_angles(lengths, theta_A, branch=1):
    """Closed-form coupler and rocker angles (theta_B, theta_D) for crank angle(s)
    theta_A on the given branch.  Works on scalars or arrays."""
    l1, l2, l3, l4 = (float(v) for v in lengths)
    th = np.asarray(theta_A, dtype=float)
    bx, by = l1 * np.cos(th), l1 * np.sin(th)
    dx, dy = l4 - bx, -by
    d2 = dx * dx + dy * dy
    d = np.sqrt(d2)
    a = (l2 * l2 - l3 * l3 + d2) / (2.0 * d)
    h2 = l2 * l2 - a * a
    if np.any(h2 < -1e-12 * l2 * l2):
        raise ValueError("four-bar cannot be assembled at this crank angle")
    h = np.sqrt(np.maximum(h2, 0.0))
    s = float(branch) * (1.0 if l4 - l1 >= 0.0 else -1.0)
    ex, ey = dx / d, dy / d
    cx = bx + a * ex - s * h * ey
    cy = by + a * ey + s * h * ex
    theta_B = np.arctan2(cy - by, cx - bx)
    theta_D = np.arctan2(cy, cx - l4)
    return theta_B, theta_D


def _rot(t, rho):
    c, s = np.cos(t), np.sin(t)
    return np.array([c * rho[0] - s * rho[1], s * rho[0] + c * rho[1]])


def _perp(v):
    return np.array([-v[1], v[0]])


class _FourBar:
    def __init__(self, lengths, masses, inertias, com, gravity, branch):
        self.l = tuple(float(v) for v in lengths)
        self.m = np.asarray(masses, dtype=float)
        self.J = np.asarray(inertias, dtype=float)
        self.rho = np.asarray(com, dtype=float).reshape(3, 2)
        self.g = np.asarray(gravity, dtype=float)
        self.branch = branch

    def kinematics(self, thA):
        """Return M, M', dV/dthA, V at crank angle thA (scalar)."""
        l1, l2, l3, l4 = self.l
        thB, thD = closed_form_angles(self.l, thA, self.branch)
        thB, thD = float(thB), float(thD)
        uA = np.array([np.cos(thA), np.sin(thA)])
        uB = np.array([np.cos(thB), np.sin(thB)])
        uD = np.array([np.cos(thD), np.sin(thD)])
        nA = _perp(uA)
        cBD = _cross(uB, uD)
        # velocity ratios: l2 kB nB - l3 kD nD = -l1 nA
        kB = -l1 * _cross(uA, uD) / (l2 * cBD)
        kD = -l1 * _cross(uA, uB) / (l3 * cBD)
        # second-order: l2 kB' nB - l3 kD' nD = R
        R = l1 * uA + l2 * kB * kB * uB - l3 * kD * kD * uD
        kBp = np.dot(R, uD) / (l2 * cBD)
        kDp = np.dot(R, uB) / (l3 * cBD)

        q1 = _rot(thA, self.rho[0])
        q2 = _rot(thB, self.rho[1])
        q3 = _rot(thD, self.rho[2])
        r = (q1, l1 * uA + q2, np.array([l4, 0.0]) + q3)
        Jr = (_perp(q1), l1 * nA + kB * _perp(q2), kD * _perp(q3))
        Jrp = (-q1, -l1 * uA + kBp * _perp(q2) - kB * kB * q2, kDp * _perp(q3) - kD * kD * q3)
        k = (1.0, kB, kD)
        kp = (0.0, kBp, kDp)

        M = 0.0
        Mp = 0.0
        dV = 0.0
        V = 0.0
        for i in range(3):
            M += self.m[i] * np.dot(Jr[i], Jr[i]) + self.J[i] * k[i] ** 2
            Mp += 2.0 * (self.m[i] * np.dot(Jr[i], Jrp[i]) + self.J[i] * k[i] * kp[i])
            dV -= self.m[i] * np.dot(self.g, Jr[i])
            V -= self.m[i] * np.dot(self.g, r[i])
        return M, Mp, dV, V

    def rhs(self, t, y):
        thA, w = y
        M, Mp, dV, _ = self.kinematics(thA)
        return np.array([w, -(0.5 * Mp * w * w + dV) / M])

    def energy(self, thA, w):
        M, _, _, V = self.kinematics(thA)
        T = 0.5 * M * w * w
        return T + V, T


def simulate(
    lengths,
    masses,
    inertias,
    com,
    gravity,
    theta0,
    omega0,
    t_eval,
    *,
    branch=1,
    rtol=1e-10,
    atol=1e-12,
    method="DOP853",
    repeats=3,
):
    """Integrate the four-bar from (theta0, omega0) with scipy's solve_ivp.

    ``wall_s`` is the median wall time of ``repeats`` full solve_ivp calls
    (including t_eval handling)."""
    model = _FourBar(lengths, masses, inertias, com, gravity, branch)
    t_eval = np.asarray(t_eval, dtype=float)
    y0 = np.array([float(theta0), float(omega0)])
    span = (float(t_eval[0]), float(t_eval[-1]))

    times = []
    sol = None
    for _ in range(max(1, int(repeats))):
        t0 = time.perf_counter()
        sol = solve_ivp(model.rhs, span, y0, method=method, t_eval=t_eval, rtol=rtol, atol=atol)
        times.append(time.perf_counter() - t0)

    th, w = sol.y
    ET = np.array([model.energy(a, b) for a, b in zip(th, w)])
    E, T = ET[:, 0], ET[:, 1]
    E0, _ = model.energy(y0[0], y0[1])
    Tmax = float(np.max(T))
    drift = float(np.max(np.abs(E - E0)) / Tmax) if Tmax > 0 else float("nan")
    return {
        "ts": sol.t,
        "theta_A": th,
        "omega_A": w,
        "energy": E,
        "energy_drift": drift,
        "wall_s": float(statistics.median(times)),
        "nfev": int(sol.nfev),
        "success": bool(sol.success),
    }


def _check_mass_matrix(lengths, masses, inertias, com, gravity, branch=1):
    """Debug aid: compare M(thA) with a finite-difference kinetic energy and
    M', dV with finite differences of M, V.  Returns max relative errors."""
    model = _FourBar(lengths, masses, inertias, com, gravity, branch)
    l1, l2, l3, l4 = model.l
    eps = 1e-6
    errs = [0.0, 0.0, 0.0]

    def positions(thA):
        thB, thD = (float(v) for v in closed_form_angles(model.l, thA, branch))
        uA = np.array([np.cos(thA), np.sin(thA)])
        return (
            [_rot(thA, model.rho[0]), l1 * uA + _rot(thB, model.rho[1]), np.array([l4, 0.0]) + _rot(thD, model.rho[2])],
            [thA, thB, thD],
        )

    for thA in np.linspace(-np.pi, np.pi, 37):
        rp, ap = positions(thA + eps)
        rm, am = positions(thA - eps)
        T2 = 0.0  # 2T for unit crank speed
        for i in range(3):
            v = (rp[i] - rm[i]) / (2 * eps)
            dang = np.angle(np.exp(1j * (ap[i] - am[i]))) / (2 * eps)
            T2 += model.m[i] * v @ v + model.J[i] * dang**2
        M, Mp, dV, _ = model.kinematics(thA)
        Mpp, _, _, Vp = model.kinematics(thA + eps)
        Mmm, _, _, Vm = model.kinematics(thA - eps)
        errs[0] = max(errs[0], abs(M - T2) / abs(M))
        errs[1] = max(errs[1], abs(Mp - (Mpp - Mmm) / (2 * eps)) / abs(M))
        errs[2] = max(
            errs[2], abs(dV - (Vp - Vm) / (2 * eps)) / max(1e-12, np.abs(model.m[:, None] * model.g).sum() * l1)
        )
    return errs


if __name__ == "__main__":
    L = (0.12, 0.25, 0.26, 0.30)
    masses = (0.1, 0.25, 0.18)
    inertias = (0.001, 0.016, 0.006)
    t_eval = np.linspace(0.0, 5.0, 501)
    cases = [
        (
            "midpoint COM, g=(0,-9.81)",
            dict(com=((L[0] / 2, 0.0), (L[1] / 2, 0.0), (L[2] / 2, 0.0)), gravity=(0.0, -9.81), theta0=0.0, omega0=0.0),
            -2.05364755891,
        ),
        (
            "off-axis COM, g=(3,-9)",
            dict(com=((0.05, 0.01), (0.1, -0.02), (0.13, 0.015)), gravity=(3.0, -9.0), theta0=0.3, omega0=1.5),
            0.215441332200,
        ),
    ]
    thB0, thD0 = closed_form_angles(L, 0.0, 1)
    C0 = np.array([L[0], 0.0]) + L[1] * np.array([np.cos(thB0), np.sin(thB0)])
    print(f"C at thetaA=0, branch +1: ({C0[0]:.6f}, {C0[1]:.6f})")
    for name, kw, ref in cases:
        e = _check_mass_matrix(L, masses, inertias, kw["com"], kw["gravity"])
        print(f"\n{name}: FD check  M vs 2T: {e[0]:.1e}  M': {e[1]:.1e}  dV: {e[2]:.1e}")
        print(f"{'rtol':>7} {'|thA(5)-ref|':>13} {'E drift':>10} {'wall_s':>9} {'nfev':>6}")
        for rtol in (1e-6, 1e-8, 1e-10, 1e-12):
            out = simulate(L, masses, inertias, t_eval=t_eval, rtol=rtol, atol=rtol / 100, **kw)
            err = abs(out["theta_A"][-1] - ref)
            print(
                f"{rtol:7.0e} {err:13.3e} {out['energy_drift']:10.2e} "
                f"{out['wall_s']:9.4f} {out['nfev']:6d}" + ("" if out["success"] else "  FAILED")
            )

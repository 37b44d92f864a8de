"""Independent reference model of planar four-bar dynamics in ABSOLUTE coordinates.

Formulation
-----------
Three rigid bodies (1 = crank AB, 2 = coupler BC, 3 = rocker DC), each described by
the position of its centre of mass and its attitude angle:
    q = [x1, y1, phi1, x2, y2, phi2, x3, y3, phi3]      (9 coordinates)
phi1 = theta_A (angle of qA), phi2 = angle of qB, phi3 = angle of qD.
Four revolute joints A, B, C, D give 8 holonomic constraints Phi(q) = 0.

Equations of motion (index-1 DAE, Lagrange multipliers):
    [ M    Phi_q^T ] [ qdd    ]   [ Q     ]
    [ Phi_q   0    ] [ lambda ] = [ gamma ],   gamma = -(Phi_q qd)_q qd,
integrated with scipy's DOP853.  The integration is done segment by segment
(segments end at every output time, and are at most ``max_segment`` long); at the
end of every segment the state is projected back onto the position manifold
(mass-weighted Newton / least-squares projection) and onto the velocity manifold
(mass-weighted linear projection).  Because the projection only removes the
constraint drift, whose size is of the order of the local integration error, it
does not degrade the accuracy of the integrator, while it keeps the constraint
violation at round-off level for arbitrarily long runs (no Baumgarte parameters
to tune, no artificial dynamics).  The nearest-point projection also keeps the
solution on its current assembly mode (important for the parallelogram, whose
Jacobian is singular at its change points).

The work done by the crank torque and by the joint dampers is integrated as an
extra state, so that energy(t) - energy(0) = work(t).

Only numpy / scipy are used; this module is deliberately independent of the
library under test.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import DOP853

__all__ = ["assemble", "simulate"]


def _perp(v):
    """perp(v) = (-v_y, v_x); works on (..., 2) arrays."""
    v = np.asarray(v, dtype=float)
    return np.stack([-v[..., 1], v[..., 0]], axis=-1)


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


def _rot(phi):
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def assemble(lengths, theta_A, branch=1):
    """Attitude vectors (qA, qB, qD) as a (6,) array by circle intersection.

    branch = +1 means sign(l4 - l1) * (qB x qD) > 0.
    """
    l1, l2, l3, l4 = (float(x) for x in lengths)
    qA = np.array([np.cos(theta_A), np.sin(theta_A)])
    B = l1 * qA
    D = np.array([l4, 0.0])
    BD = D - B
    d = float(np.hypot(BD[0], BD[1]))
    if d == 0.0:
        raise ValueError("B coincides with D: assembly undefined")
    a = (l2 * l2 - l3 * l3 + d * d) / (2.0 * d)
    h2 = l2 * l2 - a * a
    if h2 < -1e-12 * max(l2 * l2, 1.0):
        raise ValueError(f"linkage cannot be assembled at theta_A={theta_A!r}")
    h = np.sqrt(max(h2, 0.0))
    u = BD / d
    P = B + a * u
    s_l = np.sign(l4 - l1)
    if s_l == 0:
        s_l = 1.0
    best = None
    for sgn in (1.0, -1.0):
        C = P + sgn * h * _perp(u)
        qB = (C - B) / l2
        qD = (C - D) / l3
        val = s_l * _cross(qB, qD) * branch
        if best is None or val > best[0]:
            best = (val, qB, qD)
    _, qB, qD = best
    return np.concatenate([qA, qB, qD])


class _Model:
    def __init__(self, lengths, masses, inertias, com, gravity, torque, damping):
        self.mode_phi2 = None  # if set: extra (redundant) constraint phi2 = mode_phi2
        self.l = np.asarray(lengths, dtype=float).reshape(4)
        self.m = np.asarray(masses, dtype=float).reshape(3)
        self.J = np.asarray(inertias, dtype=float).reshape(3)
        self.com = np.asarray(com, dtype=float).reshape(3, 2)
        self.g = np.asarray(gravity, dtype=float).reshape(2)
        self.torque = torque
        self.c = np.asarray(damping, dtype=float).reshape(4)
        l1, l2, l3, l4 = self.l
        c = self.com
        # joints: (body_i, s_i, body_j, s_j, ground_point); body index -1 = ground.
        # s = local vector from the body's COM to the joint (in the link frame).
        self.joints = [
            (0, np.array([0.0, 0.0]) - c[0], -1, None, np.array([0.0, 0.0])),  # A
            (0, np.array([l1, 0.0]) - c[0], 1, np.array([0.0, 0.0]) - c[1], None),  # B
            (1, np.array([l2, 0.0]) - c[1], 2, np.array([l3, 0.0]) - c[2], None),  # C
            (2, np.array([0.0, 0.0]) - c[2], -1, None, np.array([l4, 0.0])),  # D
        ]
        self.Mdiag = np.array(
            [self.m[0], self.m[0], self.J[0], self.m[1], self.m[1], self.J[1], self.m[2], self.m[2], self.J[2]]
        )
        self.M = np.diag(self.Mdiag)

    # ---- constraints -------------------------------------------------------
    @property
    def nc(self):
        return 8 if self.mode_phi2 is None else 9

    def phi(self, q):
        out = np.empty(self.nc)
        if self.mode_phi2 is not None:
            out[8] = q[5] - self.mode_phi2
        for k, (i, si, j, sj, gp) in enumerate(self.joints):
            ri = q[3 * i : 3 * i + 2] + _rot(q[3 * i + 2]) @ si
            if j >= 0:
                rj = q[3 * j : 3 * j + 2] + _rot(q[3 * j + 2]) @ sj
            else:
                rj = gp
            out[2 * k : 2 * k + 2] = ri - rj
        return out

    def jac_gamma(self, q, qd):
        """Phi_q (nc x 9) and gamma = -(Phi_q qd)_q qd (nc,)."""
        Jm = np.zeros((self.nc, 9))
        gam = np.zeros(self.nc)
        if self.mode_phi2 is not None:
            Jm[8, 5] = 1.0
        for k, (i, si, j, sj, gp) in enumerate(self.joints):
            rows = slice(2 * k, 2 * k + 2)
            Rs = _rot(q[3 * i + 2]) @ si
            Jm[rows, 3 * i : 3 * i + 2] = np.eye(2)
            Jm[rows, 3 * i + 2] = _perp(Rs)
            gam[rows] += qd[3 * i + 2] ** 2 * Rs
            if j >= 0:
                Rs = _rot(q[3 * j + 2]) @ sj
                Jm[rows, 3 * j : 3 * j + 2] = -np.eye(2)
                Jm[rows, 3 * j + 2] = -_perp(Rs)
                gam[rows] -= qd[3 * j + 2] ** 2 * Rs
        return Jm, gam

    # ---- forces / energy ---------------------------------------------------
    def forces(self, t, q, qd):
        """Generalised forces Q (9,) and power of torque+dampers."""
        Q = np.zeros(9)
        for b in range(3):
            Q[3 * b : 3 * b + 2] = self.m[b] * self.g
        w1, w2, w3 = qd[2], qd[5], qd[8]
        tau = 0.0 if self.torque is None else float(self.torque(t, q[2], w1))
        cA, cB, cC, cD = self.c
        rB = w2 - w1
        rC = w3 - w2
        Q[2] += tau - cA * w1 + cB * rB
        Q[5] += -cB * rB + cC * rC
        Q[8] += -cC * rC - cD * w3
        power = tau * w1 - cA * w1**2 - cB * rB**2 - cC * rC**2 - cD * w3**2
        return Q, power

    def energy(self, q, qd):
        T = 0.5 * float(np.sum(self.Mdiag * qd * qd))
        V = 0.0
        for b in range(3):
            V -= self.m[b] * float(self.g @ q[3 * b : 3 * b + 2])
        return T + V

    # ---- DAE right-hand side ------------------------------------------------
    def rhs(self, t, y):
        q, qd = y[:9], y[9:18]
        Jm, gam = self.jac_gamma(q, qd)
        Q, power = self.forces(t, q, qd)
        sol = self._kkt_solve(Jm, Q, gam)
        return np.concatenate([qd, sol[:9], [power]])

    # ---- projections ---------------------------------------------------------
    def _kkt_solve(self, Jm, top, bottom):
        n = 9 + Jm.shape[0]
        K = np.zeros((n, n))
        K[:9, :9] = self.M
        K[:9, 9:] = Jm.T
        K[9:, :9] = Jm
        rhs = np.concatenate([top, bottom])
        if self.mode_phi2 is not None:
            # 9 constraints of rank 8 (one redundant): the acceleration part of the
            # minimum-norm least-squares solution is unique, the multipliers are not.
            return np.linalg.lstsq(K, rhs, rcond=1e-12)[0]
        return np.linalg.solve(K, rhs)

    def _min_M_norm_correction(self, Jm, r):
        """dq minimising dq^T M dq subject to Jm dq = r."""
        return self._kkt_solve(Jm, np.zeros(9), r)[:9]

    def project(self, y):
        q = y[:9].copy()
        qd = y[9:18].copy()
        scale = float(np.max(self.l))
        prev = np.inf
        for _ in range(20):
            f = self.phi(q)
            nf = float(np.max(np.abs(f)))
            if nf <= 4e-16 * scale or nf >= prev:
                break
            prev = nf
            Jm, _ = self.jac_gamma(q, qd)
            q = q + self._min_M_norm_correction(Jm, -f)
        for _ in range(2):
            Jm, _ = self.jac_gamma(q, qd)
            qd = qd + self._min_M_norm_correction(Jm, -(Jm @ qd))
        out = y.copy()
        out[:9] = q
        out[9:18] = qd
        return out

    # ---- initial state -------------------------------------------------------
    def initial_state(self, theta0, omega0, branch, mode="auto"):
        att = assemble(self.l, theta0, branch)
        qA, qB, qD = att[0:2], att[2:4], att[4:6]
        l1, l2, l3, l4 = self.l
        phis = [float(theta0), np.arctan2(qB[1], qB[0]), np.arctan2(qD[1], qD[0])]
        tol = 1e-12 * float(np.max(self.l))
        is_para_geom = abs(l1 - l3) <= tol and abs(l2 - l4) <= tol
        in_para_mode = is_para_geom and qB[0] > 0 and abs(qB[1]) <= 1e-9
        if mode == "parallelogram" and not in_para_mode:
            raise ValueError("initial configuration is not in the parallelogram mode")
        if mode == "parallelogram" or (mode == "auto" and in_para_mode):
            self.mode_phi2 = 0.0
            phis[1] = 0.0
            phis[2] = float(theta0)
        elif mode not in ("auto", "none"):
            raise ValueError("mode must be 'auto', 'none' or 'parallelogram'")
        origins = [np.zeros(2), l1 * qA, np.array([l4, 0.0])]
        q = np.zeros(9)
        for b in range(3):
            q[3 * b : 3 * b + 2] = origins[b] + _rot(phis[b]) @ self.com[b]
            q[3 * b + 2] = phis[b]
        y = np.zeros(19)
        y[:9] = q
        y = self.project(y)  # polish position to round-off
        q = y[:9]
        Jm, _ = self.jac_gamma(q, np.zeros(9))
        A = np.vstack([Jm, np.eye(9)[2]])
        b = np.zeros(A.shape[0])
        b[-1] = float(omega0)
        qd = np.linalg.lstsq(A, b, rcond=1e-12)[0]
        y[9:18] = qd
        y[18] = 0.0
        return y


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
    torque=None,
    damping=(0, 0, 0, 0),
    rtol=1e-12,
    atol=None,
    max_segment=0.02,
    mode="auto",
):
    """Simulate the four-bar from t = 0 and report at the (increasing, >= 0) times t_eval.

    mode: "auto" (default) adds, for a parallelogram linkage (l1 == l3, l2 == l4)
    assembled in its parallelogram mode (qB = e1), the mode constraint phi2 = 0
    (coupler does not rotate).  Without it the DAE is ill-posed at the change points
    theta_A = 0, pi (Phi_q loses rank, both the parallelogram and the
    anti-parallelogram motions solve it) and the numerical solution may switch
    mode there.  "none" never adds it; "parallelogram" requires it.

    Returns dict with keys
      t, theta_A (unwrapped), omega_A, q ((n,6): qA, qB, qD), energy, work,
      max_constraint_violation (max over outputs of |joint position residual| and
      |l1 qA + l2 qB - l3 qD - l4 e1|, metres; plus |phi2| in rad in parallelogram
      mode), max_velocity_violation,
      max_drift_before_projection (largest position residual removed by a projection),
      coords ((n,9) absolute coordinates), coords_dot ((n,9)).
    """
    model = _Model(lengths, masses, inertias, com, gravity, torque, damping)
    t_eval = np.asarray(t_eval, dtype=float).reshape(-1)
    if t_eval.size and (t_eval[0] < 0 or np.any(np.diff(t_eval) < 0)):
        raise ValueError("t_eval must be non-decreasing and >= 0")
    if atol is None:
        atol = rtol
    y = model.initial_state(theta0, omega0, branch, mode)
    n = t_eval.size
    Y = np.zeros((n, 19))
    t = 0.0
    step = None
    drift = 0.0
    for k, te in enumerate(t_eval):
        while t < te:
            t1 = min(te, t + max_segment)
            if te - t1 < 1e-12 * max(1.0, te):
                t1 = te
            kw = {} if step is None else {"first_step": min(step, t1 - t)}
            solver = DOP853(model.rhs, t, y, t1, rtol=rtol, atol=atol, **kw)
            while solver.status == "running":
                msg = solver.step()
                if solver.status == "failed":
                    raise RuntimeError(f"integration failed at t={solver.t:g}: {msg}")
                if solver.step_size is not None and solver.t < t1:
                    step = solver.step_size
            y_new = solver.y
            drift = max(drift, float(np.max(np.abs(model.phi(y_new[:9])))))
            y = model.project(y_new)
            t = t1
        Y[k] = y

    coords = Y[:, :9]
    vel = Y[:, 9:18]
    l1, l2, l3, l4 = model.l
    qs = np.zeros((n, 6))
    energy = np.zeros(n)
    viol = 0.0
    vviol = 0.0
    for k in range(n):
        ph = coords[k, 2::3]
        att = np.stack([np.cos(ph), np.sin(ph)], axis=1)
        qs[k] = att.reshape(-1)
        loop = l1 * att[0] + l2 * att[1] - l3 * att[2] - np.array([l4, 0.0])
        viol = max(viol, float(np.max(np.abs(model.phi(coords[k])))), float(np.max(np.abs(loop))))
        Jm, _ = model.jac_gamma(coords[k], vel[k])
        vviol = max(vviol, float(np.max(np.abs(Jm @ vel[k]))))
        energy[k] = model.energy(coords[k], vel[k])
    y0 = model.initial_state(theta0, omega0, branch, mode)
    e0 = model.energy(y0[:9], y0[9:18])
    return {
        "t": t_eval,
        "theta_A": coords[:, 2].copy(),
        "omega_A": vel[:, 2].copy(),
        "q": qs,
        "energy": energy,
        "energy0": e0,
        "work": Y[:, 18].copy(),
        "max_constraint_violation": viol,
        "max_velocity_violation": vviol,
        "max_drift_before_projection": drift,
        "coords": coords.copy(),
        "coords_dot": vel.copy(),
    }

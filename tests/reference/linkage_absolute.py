"""Independent reference model of planar linkage dynamics in ABSOLUTE coordinates.

Written only from the linkage JSON format (``diffmech/linkage/data/*.json``);
it shares no code with the library under test and uses only NumPy / SciPy.

Formulation
-----------
Every moving link k (all links except the ground) is a rigid body with pose
``q_k = (x_k, y_k, phi_k)``: the world position of its centre of mass and its
rotation angle (rad, anticlockwise) from the initial configuration given in the
file.  A material point whose world position in the initial configuration is
``P0`` is at ``r_k + R(phi_k) (P0 - c0_k)`` (``c0_k``: the link's ``com``).
The ground is treated as a fixed body with pose (0, 0, 0) and reference point
at the world origin; its coordinates are kept out of the dynamics but its
Jacobian columns give the wrenches the joints apply to it.

Joints (holonomic constraints ``Phi(q) = 0``):

* ``R`` joint listed in links l0, l1, ..., lk: the point P0 attached to l0
  coincides with the point P0 attached to each other link:
  ``Phi = P_lm - P_l0`` (2 rows per pair).  A pin shared by three links is one
  pin (2 (k) rows, every pair coincides).
* ``P`` joint (line ``a x + b y + c = 0`` normalised by hypot(a, b)) between
  links i and j (i = the ground if it is one of them, else the first link that
  lists it): the line is fixed in both bodies and is the same line in both:
  ``Phi1 = n_i . (p_j - p_i)``, ``Phi2 = phi_j - phi_i`` where ``n_i`` is the
  line's unit normal carried by body i and ``p_i``, ``p_j`` the same point of
  the line attached to each body.  It allows only relative translation along
  the line.  On the constraint manifold the line's offset ``c`` (and the choice
  of the point p) is immaterial -- only its direction matters -- and the
  reaction wrench (force + couple) is unique.
* ``tracer`` points are ignored.

Equations of motion (index-1 DAE, Lagrange multipliers)::

    [ M      Phi_q^T ] [ qdd    ]   [ Q     ]        Q = gravity + tau e_phiL
    [ Phi_q  0       ] [ lambda ] = [ gamma ],   gamma = -(Phi_q qd)_q qd

``M = diag(m, m, I)`` per body, ``Q`` = weights ``m g`` on the centres of mass
and the motor torque ``tau`` on the input link's angle (reaction ``-tau`` on
the ground).  Integrated with ``scipy.integrate.solve_ivp(method="DOP853")``
segment by segment (segments end at every output time); at the end of every
segment the position and velocity are projected onto the constraint manifold
(mass-weighted Newton projection / mass-weighted linear projection), so the
constraint residual at every output is at round-off.  The work of the motor
``W = int tau udot dt`` is an extra state.

Reactions / conventions
-----------------------
* Units: SI (m, kg, s, N, N m, rad).  Angles anticlockwise positive.
* ``u`` = rotation of the input link from its initial orientation (= phi of
  that body, continuous so already unwrapped).  ``tau`` acts on the input link
  (+tau) and on the ground (-tau).
* ``reactions[(joint, link)]`` = (Fx, Fy, Mz): the wrench applied TO ``link``
  BY ``joint`` (constraint force part only, i.e. ``-Phi_{q_link}^T lambda``
  restricted to that joint's rows), with Mz about the WORLD ORIGIN.  For an R
  joint Mz = x_J Fy - y_J Fx; for a P joint Mz includes the reaction couple.
  Entries exist for every link listing the joint, ground included.  The motor
  torque is NOT part of any joint reaction; it enters the shaking moment:
  ``shaking_force``/``shaking_moment`` = sum over the ground's joints of the
  wrench applied to the ground (moment about the origin) plus (0, 0, -tau).
  (Equivalently sum_k m_k (g - a_k) and sum_k [c_k x m_k (g - a_k) - I_k phidd_k].)
* ``energy`` = T + V, ``T = 1/2 qd^T M qd``, ``V = -sum m g . c``.
* ``residual`` = max(|Phi(q)|_inf, |Phi_q qd|_inf) at each output.

API
---
``load(path) -> Model``;
``forward(model, t_eval, *, udot0=0.0, torque=None, rtol=1e-12, atol=1e-12)``
-> dict(t, u, udot, uddot, q, qdot, qddot, lam, torque, energy, work,
residual, residual_pos, residual_vel, multipliers, shaking_force,
shaking_moment, min_sv);
``inverse(model, t, u, udot, uddot)`` -> dict(torque, reactions,
shaking_force, shaking_moment, q, qdot, qddot, lam, residual).
``run_checks()`` prints the figures below.

Data
----
For the three files the initial configuration satisfies every constraint
exactly (|Phi(0)| = 0, by construction of the absolute coordinates: every R
joint is one point, every P line is the same line in both bodies).  The P
lines of stephenson2 / theo_jansen (coefficients rounded to 2 decimals) pass
through none of the joint points (distances 0.6 .. 5.6 m) -- that is allowed:
their offsets do not enter the dynamics and their rounded directions are used
as given (normalised), so no consistency re-solve was needed.  Mass data
check: stephenson2 / theo_jansen masses, centres of mass and inertias agree
with 1 kg/m slender rods between each moving link's two R joints (to round-off, <= 2e-15)
and the 0.05 kg / 1e-5 kg m^2 slider blocks; fourbar lengths are 0.12, 0.25,
0.26, 0.30 m and the centres of mass the links' midpoints.

Check figures (run_checks(), NumPy 2.4 / SciPy 1.17, DOP853 rtol = atol = 1e-12,
outputs every 0.1 s, free release from rest unless said otherwise)
--------------------------------------------------------------------------
* Initial residual |Phi(q0)|: fourbar 0, stephenson2 2.2e-16, theo_jansen 2.2e-16
  (no consistency step needed; P-line distances of the joint points are printed).
* fourbar free release: u(1, 2, 5 s) = -0.321629136619, -1.939341192102,
  -2.053647558962 rad (u swings in [-3.7071, 0]); max|E - E0| = 1.1e-12 J
  (E0 = 0.5024440909 J; 2.4e-12 of the max kinetic energy); max residual
  1.2e-14; |u(5) at rtol 1e-12 - at 1e-13| = 5.2e-11 rad.  Agrees with
  fourbar_absolute.simulate (a separate four-bar-only model) to 3.8e-11 rad.
* stephenson2 free release: u(1, 2, 5 s) = -1.461588078183, -4.486164199523,
  -0.471850432512 rad (u in [-5.1067, 0]); max|E - E0| = 7.1e-11 J (E0 =
  214.3784349 J, 4.5e-13 of max KE); residual 4.8e-14; rtol 1e-12 vs 1e-13:
  2.4e-12 rad.  No singular / locked configuration (min sigma(Phi_q) ratio 0.016).
* theo_jansen free release: u(1, 2, 5 s) = 0.572168528285, 0.530249764250,
  0.482217358056 rad (u in [0, 0.6797]); max|E - E0| = 6.2e-12 J (E0 =
  51.6279302 J, 4.3e-13 of max KE); residual 1.7e-14; rtol 1e-12 vs 1e-13:
  6.4e-14 rad.  No singular configuration (min sigma ratio 0.037).
* theo_jansen driven, tau = 50 - 5 udot: u(1, 2, 5 s) = 0.801052995641,
  0.715235527639, 0.587608491129 rad (the crank does not turn over: u in
  [0, 0.9208]); W(5) = 18.6438201130 J; max|E - E0 - W| = 1.1e-11 J (2.5e-13 of
  max|W|); residual 1.9e-14; inverse of that motion returns tau to 7e-12.
* theo_jansen inverse, u = 2 pi t, 50 samples: tau(t = 0, 0.24, 0.5, 0.74) =
  1004.092233, -489.219083, -209.443325, -132.344498 N m; min -6388.4643 (near
  u = 1.18 rad, where [Phi_q; e_u] is worst conditioned, sigma ratio 0.014;
  the continuous peak is about -6764 N m), max 3779.4477; the torque equals
  the power balance qd.(M qdd - Q_g)/udot to 2e-12; the shaking wrench equals
  sum m (g - a) to 8e-12; the wrenches of each joint sum to zero to 6e-12.
* fourbar free release -> inverse(u, udot, uddot): max|tau| = 4.4e-14 N m,
  reactions = forward multipliers to 1.5e-13 (relative to each entry's max);
  stephenson2 (P joints): 2.2e-12 N m and 2.1e-14.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

__all__ = ["Model", "load", "forward", "inverse", "run_checks"]


# --------------------------------------------------------------------------- model


@dataclass
class Body:
    name: str
    mass: float
    inertia: float
    com0: np.ndarray


@dataclass
class Joint:
    name: str
    type: str  # "R" or "P"
    links: list  # link names (for P: [i, j], i carries the normal)
    point: np.ndarray = None  # R: the pin's initial position
    normal: np.ndarray = None  # P: unit normal of the line (initial config.)
    offset: float = 0.0  # P: normalised c  (n . x + c = 0)
    ref: np.ndarray = None  # P: the reference point p on the line
    rows: slice = None


@dataclass
class Model:
    name: str
    bodies: list
    ground: str
    joints: list
    gravity: np.ndarray
    input_link: str
    input_joint: str
    index: dict = field(default_factory=dict)  # link name -> body index (ground: nb)
    m: int = 0  # number of constraint rows
    raw: dict = None

    @property
    def nb(self):
        return len(self.bodies)

    @property
    def n(self):
        return 3 * len(self.bodies)

    @property
    def iu(self):
        """Index of the input coordinate (phi of the input link) in q."""
        return 3 * self.index[self.input_link] + 2

    def q0(self):
        """Initial configuration: centres of mass as given, all angles 0."""
        return np.concatenate([[b.com0[0], b.com0[1], 0.0] for b in self.bodies])

    def mass_vector(self):
        return np.concatenate([[b.mass, b.mass, b.inertia] for b in self.bodies])

    def com0_ext(self):
        """(nb + 1, 2): initial centres of mass, ground (reference = origin) last."""
        return np.vstack([b.com0 for b in self.bodies] + [np.zeros(2)])


def load(path) -> Model:
    """Parse a planar linkage JSON file."""
    with open(path) as fh:
        raw = json.load(fh)
    if raw.get("geometry", "planar") != "planar":
        raise ValueError("only planar linkages are supported")
    ground = raw["ground"]
    jdata = raw["joints"]
    links = {}
    bodies = []
    for lname, ldata in raw["links"].items():
        if isinstance(ldata, dict):
            jl = list(ldata["joints"])
            if lname != ground:
                if "mass" not in ldata:
                    raise ValueError(f"moving link {lname} has no mass data")
                bodies.append(
                    Body(lname, float(ldata["mass"]), float(ldata["inertia"]), np.asarray(ldata["com"], dtype=float))
                )
        else:
            jl = list(ldata)
            if lname != ground:
                raise ValueError(f"moving link {lname} has no mass data")
        links[lname] = jl
    index = {b.name: k for k, b in enumerate(bodies)}
    index[ground] = len(bodies)

    joints = []
    row = 0
    for jname, jd in jdata.items():
        typ = jd["type"]
        if typ == "tracer":
            continue
        holders = [ln for ln, jl in links.items() if jname in jl]
        if typ == "R":
            if len(holders) < 2:
                raise ValueError(f"R joint {jname} held by {holders}")
            # put the ground first when present (only a cosmetic choice)
            holders.sort(key=lambda ln: 0 if ln == ground else 1)
            J = Joint(jname, "R", holders, point=np.asarray(jd["coords"], dtype=float))
            nr = 2 * (len(holders) - 1)
        elif typ == "P":
            if len(holders) != 2:
                raise ValueError(f"P joint {jname} must be held by exactly two links")
            holders.sort(key=lambda ln: 0 if ln == ground else 1)
            a, b, c = (float(v) for v in jd["coords"])
            h = math.hypot(a, b)
            nrm = np.array([a, b]) / h
            off = c / h
            # reference point: foot on the line of the centroid of both links' R points
            pts = [
                np.asarray(jdata[p]["coords"], dtype=float)
                for ln in holders
                for p in links[ln]
                if jdata[p]["type"] == "R"
            ]
            X = np.mean(pts, axis=0) if pts else np.zeros(2)
            ref = X - (nrm @ X + off) * nrm
            J = Joint(jname, "P", holders, normal=nrm, offset=off, ref=ref)
            nr = 2
        else:
            raise ValueError(f"unknown joint type {typ!r}")
        J.rows = slice(row, row + nr)
        row += nr
        joints.append(J)

    inp = raw["input"]
    if inp.get("type", "revolute") != "revolute":
        raise ValueError("only revolute inputs are supported")
    model = Model(
        raw.get("name", str(path)),
        bodies,
        ground,
        joints,
        np.asarray(raw.get("gravity", [0.0, -9.81]), dtype=float),
        inp["link"],
        inp["joint"],
        index=index,
        m=row,
        raw=raw,
    )
    jin = next(j for j in joints if j.name == inp["joint"])
    if jin.type != "R" or ground not in jin.links or inp["link"] not in jin.links:
        raise ValueError("input joint must be a revolute joint between the input link and the ground")
    return model


# --------------------------------------------------------------------------- kinematics


def _perp(v):
    return np.array([-v[1], v[0]])


def _rot(phi):
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[c, -s], [s, c]])


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


def _ext(model, q):
    return np.concatenate([np.asarray(q, dtype=float), np.zeros(3)])


def constraints(model, q, qd=None):
    """Phi (m,), extended Jacobian (m, n + 3) (ground columns last), gamma (m,)."""
    qe = _ext(model, q)
    qde = _ext(model, qd) if qd is not None else np.zeros_like(qe)
    c0 = model.com0_ext()
    m, ne = model.m, model.n + 3
    phi = np.zeros(m)
    jac = np.zeros((m, ne))
    gam = np.zeros(m)
    Rs = [_rot(qe[3 * k + 2]) for k in range(model.nb + 1)]

    def attached(k, P0):
        """world vector from body k's reference point to the material point P0."""
        return Rs[k] @ (P0 - c0[k])

    for J in model.joints:
        r0 = J.rows.start
        if J.type == "R":
            a = model.index[J.links[0]]
            va = attached(a, J.point)
            Pa = qe[3 * a : 3 * a + 2] + va
            wa = qde[3 * a + 2]
            for t, ln in enumerate(J.links[1:]):
                b = model.index[ln]
                vb = attached(b, J.point)
                Pb = qe[3 * b : 3 * b + 2] + vb
                wb = qde[3 * b + 2]
                rr = slice(r0 + 2 * t, r0 + 2 * t + 2)
                phi[rr] = Pb - Pa
                jac[rr, 3 * a : 3 * a + 2] -= np.eye(2)
                jac[rr, 3 * a + 2] -= _perp(va)
                jac[rr, 3 * b : 3 * b + 2] += np.eye(2)
                jac[rr, 3 * b + 2] += _perp(vb)
                gam[rr] = wb * wb * vb - wa * wa * va
        else:  # P
            i = model.index[J.links[0]]
            j = model.index[J.links[1]]
            vi = attached(i, J.ref)
            vj = attached(j, J.ref)
            pi = qe[3 * i : 3 * i + 2] + vi
            pj = qe[3 * j : 3 * j + 2] + vj
            n = Rs[i] @ J.normal
            d = pj - pi
            wi, wj = qde[3 * i + 2], qde[3 * j + 2]
            dd = (qde[3 * j : 3 * j + 2] + wj * _perp(vj)) - (qde[3 * i : 3 * i + 2] + wi * _perp(vi))
            phi[r0] = n @ d
            phi[r0 + 1] = qe[3 * j + 2] - qe[3 * i + 2]
            jac[r0, 3 * i : 3 * i + 2] -= n
            jac[r0, 3 * j : 3 * j + 2] += n
            jac[r0, 3 * i + 2] += _perp(n) @ d - n @ _perp(vi)
            jac[r0, 3 * j + 2] += n @ _perp(vj)
            jac[r0 + 1, 3 * j + 2] = 1.0
            jac[r0 + 1, 3 * i + 2] = -1.0
            gam[r0] = -(-wi * wi * (n @ d) + 2.0 * wi * (_perp(n) @ dd) + n @ (-wj * wj * vj + wi * wi * vi))
            gam[r0 + 1] = 0.0
    return phi, jac, gam


def _jdyn(model, jac_ext):
    return jac_ext[:, : model.n]


def _gravity_forces(model):
    Q = np.zeros(model.n)
    for k, b in enumerate(model.bodies):
        Q[3 * k : 3 * k + 2] = b.mass * model.gravity
    return Q


def energy(model, q, qd):
    Mv = model.mass_vector()
    T = 0.5 * np.sum(Mv * qd * qd)
    V = 0.0
    for k, b in enumerate(model.bodies):
        V -= b.mass * (model.gravity @ q[3 * k : 3 * k + 2])
    return T + V


def _kkt(model, q, qd, tau):
    """Solve the DAE for (qdd, lambda)."""
    phi, jac, gam = constraints(model, q, qd)
    Jd = _jdyn(model, jac)
    n, m = model.n, model.m
    K = np.zeros((n + m, n + m))
    K[:n, :n] = np.diag(model.mass_vector())
    K[:n, n:] = Jd.T
    K[n:, :n] = Jd
    Q = _gravity_forces(model)
    Q[model.iu] += tau
    sol = np.linalg.solve(K, np.concatenate([Q, gam]))
    return sol[:n], sol[n:]


def _project(model, q, qd, tol=1e-15, maxit=30):
    """Mass-weighted projection onto Phi = 0 and Phi_q qd = 0."""
    Minv = 1.0 / model.mass_vector()
    q = np.array(q, dtype=float)
    scale = 1.0 + np.max(np.abs(q[:]))
    for _ in range(maxit):
        phi, jac, _ = constraints(model, q)
        Jd = _jdyn(model, jac)
        if np.max(np.abs(phi)) <= tol * scale * 4:
            break
        A = (Jd * Minv) @ Jd.T
        q = q - Minv * (Jd.T @ np.linalg.solve(A, phi))
    phi, jac, _ = constraints(model, q)
    Jd = _jdyn(model, jac)
    A = (Jd * Minv) @ Jd.T
    qd = np.array(qd, dtype=float)
    for _ in range(2):
        qd = qd - Minv * (Jd.T @ np.linalg.solve(A, Jd @ qd))
    return q, qd


def _residuals(model, q, qd):
    phi, jac, _ = constraints(model, q, qd)
    return np.max(np.abs(phi), initial=0.0), np.max(np.abs(_jdyn(model, jac) @ qd), initial=0.0)


def _input_system(model, q):
    """[Phi_q; e_u] (n x n) for the kinematics with u prescribed."""
    _, jac, _ = constraints(model, q)
    A = np.zeros((model.n, model.n))
    A[: model.m] = _jdyn(model, jac)
    A[model.m, model.iu] = 1.0
    return A


def consistent_velocity(model, q, udot):
    A = _input_system(model, q)
    b = np.zeros(model.n)
    b[model.m] = udot
    return np.linalg.solve(A, b)


def reactions_from_lambda(model, q, lam):
    """dict (joint, link) -> (Fx, Fy, Mz about the origin) applied TO link BY joint."""
    _, jac, _ = constraints(model, q)
    qe = _ext(model, q)
    out = {}
    for J in model.joints:
        lr = lam[J.rows]
        for ln in J.links:
            k = model.index[ln]
            g = -jac[J.rows, 3 * k : 3 * k + 3].T @ lr
            r = qe[3 * k : 3 * k + 2]
            out[(J.name, ln)] = np.array([g[0], g[1], g[2] + _cross(r, g[:2])])
    return out


def _shaking(model, reac, tau):
    F = np.zeros(2)
    Mz = -tau
    for (jn, ln), w in reac.items():
        if ln == model.ground:
            F += w[:2]
            Mz += w[2]
    return F, Mz


def _stack_dicts(dicts):
    keys = dicts[0].keys()
    return {k: np.array([d[k] for d in dicts]) for k in keys}


# --------------------------------------------------------------------------- forward


def forward(model, t_eval, *, udot0=0.0, torque=None, rtol=1e-12, atol=1e-12, max_segment=None):
    """Forward dynamics from the initial configuration (u = 0) at t_eval[0]."""
    t_eval = np.asarray(t_eval, dtype=float)
    n, iu = model.n, model.iu
    tq = (lambda t, u, w: 0.0) if torque is None else torque

    def rhs(t, y):
        q, qd = y[:n], y[n : 2 * n]
        tau = float(tq(t, q[iu], qd[iu]))
        qdd, _ = _kkt(model, q, qd, tau)
        return np.concatenate([qd, qdd, [tau * qd[iu]]])

    q = model.q0()
    qd = consistent_velocity(model, q, udot0)
    q, qd = _project(model, q, qd)
    W = 0.0
    recs = []

    def record(t, q, qd, W):
        tau = float(tq(t, q[iu], qd[iu]))
        qdd, lam = _kkt(model, q, qd, tau)
        rp, rv = _residuals(model, q, qd)
        reac = reactions_from_lambda(model, q, lam)
        F, Mz = _shaking(model, reac, tau)
        _, jac, _ = constraints(model, q)
        Jd = _jdyn(model, jac)
        sv = np.linalg.svd(Jd, compute_uv=False)
        recs.append(
            dict(
                t=t,
                q=q.copy(),
                qd=qd.copy(),
                qdd=qdd,
                lam=lam,
                tau=tau,
                W=W,
                E=energy(model, q, qd),
                rp=rp,
                rv=rv,
                reac=reac,
                F=F,
                Mz=Mz,
                sv=sv[-1] / sv[0],
            )
        )

    record(t_eval[0], q, qd, W)
    t = t_eval[0]
    for t_next in t_eval[1:]:
        nseg = 1 if max_segment is None else max(1, int(math.ceil((t_next - t) / max_segment)))
        edges = np.linspace(t, t_next, nseg + 1)
        for a, b in zip(edges[:-1], edges[1:]):
            sol = solve_ivp(rhs, (a, b), np.concatenate([q, qd, [W]]), method="DOP853", rtol=rtol, atol=atol)
            if not sol.success:
                raise RuntimeError(f"integration failed at t={a}: {sol.message}")
            y = sol.y[:, -1]
            q, qd = _project(model, y[:n], y[n : 2 * n])
            W = y[-1]
        t = t_next
        record(t, q, qd, W)

    Q = np.array([r["q"] for r in recs])
    QD = np.array([r["qd"] for r in recs])
    QDD = np.array([r["qdd"] for r in recs])
    rp = np.array([r["rp"] for r in recs])
    rv = np.array([r["rv"] for r in recs])
    return dict(
        t=t_eval,
        u=Q[:, iu],
        udot=QD[:, iu],
        uddot=QDD[:, iu],
        q=Q,
        qdot=QD,
        qddot=QDD,
        lam=np.array([r["lam"] for r in recs]),
        torque=np.array([r["tau"] for r in recs]),
        energy=np.array([r["E"] for r in recs]),
        work=np.array([r["W"] for r in recs]),
        residual=np.maximum(rp, rv),
        residual_pos=rp,
        residual_vel=rv,
        multipliers=_stack_dicts([r["reac"] for r in recs]),
        shaking_force=np.array([r["F"] for r in recs]),
        shaking_moment=np.array([r["Mz"] for r in recs]),
        min_sv=np.array([r["sv"] for r in recs]),
    )


# --------------------------------------------------------------------------- inverse


def _solve_position(model, q, u, tol=1e-15, maxit=50):
    """Newton on [Phi(q); q_u - u] = 0 starting from q."""
    q = np.array(q, dtype=float)
    iu = model.iu
    for it in range(maxit):
        phi, jac, _ = constraints(model, q)
        F = np.concatenate([phi, [q[iu] - u]])
        A = np.zeros((model.n, model.n))
        A[: model.m] = _jdyn(model, jac)
        A[model.m, iu] = 1.0
        dq = np.linalg.solve(A, F)
        q = q - dq
        if np.max(np.abs(dq)) <= tol * (1.0 + np.max(np.abs(q))):
            break
    else:
        raise RuntimeError(f"position Newton did not converge at u={u}")
    return q


def _continue_to(model, q, u_from, u_to, dmax=0.02):
    """Tangent-predictor / Newton-corrector continuation in u."""
    nsub = max(1, int(math.ceil(abs(u_to - u_from) / dmax)))
    us = np.linspace(u_from, u_to, nsub + 1)
    for ua, ub in zip(us[:-1], us[1:]):
        v = consistent_velocity(model, q, 1.0)
        q = _solve_position(model, q + v * (ub - ua), ub)
    return q


def inverse(model, t, u, udot, uddot):
    """Inverse dynamics for prescribed input motion samples."""
    u = np.atleast_1d(np.asarray(u, dtype=float))
    udot = np.broadcast_to(np.asarray(udot, dtype=float), u.shape)
    uddot = np.broadcast_to(np.asarray(uddot, dtype=float), u.shape)
    n, m, iu = model.n, model.m, model.iu
    Mv = model.mass_vector()
    Qg = _gravity_forces(model)
    q = model.q0()
    uprev = 0.0
    out = dict(q=[], qdot=[], qddot=[], lam=[], torque=[], reac=[], F=[], Mz=[], res=[])
    for k in range(u.size):
        q = _continue_to(model, q, uprev, u[k])
        uprev = u[k]
        phi, jac, gam = constraints(model, q)
        A = np.zeros((n, n))
        A[:m] = _jdyn(model, jac)
        A[m, iu] = 1.0
        qd = np.linalg.solve(A, np.concatenate([np.zeros(m), [udot[k]]]))
        phi, jac, gam = constraints(model, q, qd)
        qdd = np.linalg.solve(A, np.concatenate([gam, [uddot[k]]]))
        # Newton-Euler of all bodies: M qdd + Jd^T lam - tau e_u = Qg
        B = np.zeros((n, n))
        B[:, :m] = _jdyn(model, jac).T
        B[iu, m] = -1.0
        x = np.linalg.solve(B, Qg - Mv * qdd)
        lam, tau = x[:m], x[m]
        reac = reactions_from_lambda(model, q, lam)
        F, Mz = _shaking(model, reac, tau)
        rp, rv = _residuals(model, q, qd)
        for key, val in (
            ("q", q),
            ("qdot", qd),
            ("qddot", qdd),
            ("lam", lam),
            ("torque", tau),
            ("reac", reac),
            ("F", F),
            ("Mz", Mz),
            ("res", max(rp, rv)),
        ):
            out[key].append(val)
    return dict(
        t=np.asarray(t, dtype=float),
        torque=np.array(out["torque"]),
        reactions=_stack_dicts(out["reac"]),
        shaking_force=np.array(out["F"]),
        shaking_moment=np.array(out["Mz"]),
        q=np.array(out["q"]),
        qdot=np.array(out["qdot"]),
        qddot=np.array(out["qddot"]),
        lam=np.array(out["lam"]),
        residual=np.array(out["res"]),
    )


# --------------------------------------------------------------------------- checks


def _data_path(name):
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "diffmech", "linkage", "data", name + ".json")


def _line_distances(model):
    """Signed distances (m) of every R point of the two links from each P line."""
    out = {}
    jd = model.raw["joints"]
    for J in model.joints:
        if J.type != "P":
            continue
        for ln in J.links:
            ldata = model.raw["links"][ln]
            names = ldata["joints"] if isinstance(ldata, dict) else ldata
            for p in names:
                if jd[p]["type"] == "R":
                    x = np.asarray(jd[p]["coords"], dtype=float)
                    out[(J.name, ln, p)] = float(J.normal @ x + J.offset)
    return out


def run_checks(verbose=True):
    """Run the cross-check figures quoted in the module docstring; returns them."""
    import warnings

    pr = print if verbose else (lambda *a, **k: None)
    fig = {}
    models = {nm: load(_data_path(nm)) for nm in ("fourbar", "stephenson2", "theo_jansen")}
    T = np.round(np.arange(0.0, 5.0 + 1e-9, 0.1), 10)
    free = {}
    for nm, mo in models.items():
        phi0, _, _ = constraints(mo, mo.q0())
        fig[nm, "phi0"] = float(np.max(np.abs(phi0)))
        pr(f"[{nm}] initial constraint residual |Phi(q0)|_inf = {fig[nm, 'phi0']:.3e}")
        for key, dist in _line_distances(mo).items():
            pr(f"[{nm}]   P line {key[0]}: distance of {key[2]} ({key[1]}) = {dist:+.4f} m")
        fw = forward(mo, T)
        free[nm] = fw
        E = fw["energy"]
        V = np.array([energy(mo, q, np.zeros(mo.n)) for q in fw["q"]])
        fig[nm, "u125"] = fw["u"][[10, 20, 50]]
        fig[nm, "drift"] = float(np.max(np.abs(E - E[0])))
        fig[nm, "drift_rel"] = fig[nm, "drift"] / float(np.max(E - V))
        fig[nm, "res"] = float(fw["residual"].max())
        pr(f"[{nm}] free release: u(1, 2, 5 s) = {np.array2string(fw['u'][[10, 20, 50]], precision=12)}")
        pr(
            f"[{nm}]   u range [{fw['u'].min():.6f}, {fw['u'].max():.6f}] rad, E0 = {E[0]:.10g} J, "
            f"max|E-E0| = {fig[nm, 'drift']:.2e} J ({fig[nm, 'drift_rel']:.1e} of max KE), "
            f"max residual = {fig[nm, 'res']:.2e}, min sv(Phi_q)/max = {fw['min_sv'].min():.3f}"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fw13 = forward(mo, T, rtol=1e-13, atol=1e-13)
        fig[nm, "conv"] = float(abs(fw13["u"][-1] - fw["u"][-1]))
        pr(
            f"[{nm}]   |u(5) rtol 1e-12 - u(5) rtol 1e-13| = {fig[nm, 'conv']:.2e} rad "
            f"(max over outputs {np.max(np.abs(fw13['u'] - fw['u'])):.2e})"
        )

    # driven Theo Jansen
    mo = models["theo_jansen"]

    def tq(t, u, w):
        return 50.0 - 5.0 * w

    fw = forward(mo, T, torque=tq)
    E, W = fw["energy"], fw["work"]
    err = np.max(np.abs(E - E[0] - W))
    fig["tj_driven", "u125"] = fw["u"][[10, 20, 50]]
    fig["tj_driven", "err"] = err
    fig["tj_driven", "err_rel"] = err / np.max(np.abs(W))
    pr(
        f"[theo_jansen driven 50 - 5 w] u(1, 2, 5 s) = {np.array2string(fw['u'][[10, 20, 50]], precision=12)}, "
        f"u range [{fw['u'].min():.4f}, {fw['u'].max():.4f}], W(5) = {W[-1]:.10f} J"
    )
    pr(
        f"[theo_jansen driven]   max|E-E0-W| = {err:.2e} J ({fig['tj_driven', 'err_rel']:.1e} of max|W|), "
        f"max residual = {fw['residual'].max():.2e}"
    )
    iv = inverse(mo, T, fw["u"], fw["udot"], fw["uddot"])
    pr(f"[theo_jansen driven]   inverse: max|tau - tau_fwd| = {np.max(np.abs(iv['torque'] - fw['torque'])):.2e}")

    # inverse, one turn per second
    t = np.arange(50) / 50.0
    iv = inverse(mo, t, 2 * np.pi * t, 2 * np.pi * np.ones(50), np.zeros(50))
    Mv, Qg = mo.mass_vector(), _gravity_forces(mo)
    pw = np.array([iv["qdot"][k] @ (Mv * iv["qddot"][k] - Qg) for k in range(50)]) / (2 * np.pi)
    sh = _shaking_check(mo, iv["q"], iv["qddot"], iv["shaking_force"], iv["shaking_moment"])
    fig["tj_inverse", "torque"] = iv["torque"]
    pr(
        f"[theo_jansen inverse u = 2 pi t, 50 samples] tau(t=0, .24, .5, .74) = "
        f"{np.array2string(iv['torque'][[0, 12, 25, 37]], precision=6)} N m; min {iv['torque'].min():.4f}, "
        f"max {iv['torque'].max():.4f}; residual {iv['residual'].max():.1e}"
    )
    pr(
        f"[theo_jansen inverse]   power check |tau - qd.(M qdd - Qg)/udot| = {np.max(np.abs(pw - iv['torque'])):.1e}, "
        f"shaking vs sum m(g - a) = {sh:.1e}, joint wrench sums = {_joint_sum(mo, iv['reactions']):.1e}"
    )
    fig["tj_inverse", "reactions"] = iv["reactions"]

    # forward / inverse consistency
    for nm in ("fourbar", "stephenson2"):
        mo, fw = models[nm], free[nm]
        iv = inverse(mo, T, fw["u"], fw["udot"], fw["uddot"])
        rel = max(
            np.max(np.abs(fw["multipliers"][k] - iv["reactions"][k])) / np.max(np.abs(fw["multipliers"][k]))
            for k in fw["multipliers"]
        )
        fig[nm, "inv_tau"] = float(np.max(np.abs(iv["torque"])))
        fig[nm, "inv_rel"] = float(rel)
        pr(
            f"[{nm} free release -> inverse] max|tau| = {fig[nm, 'inv_tau']:.1e} N m, "
            f"max rel. reaction difference = {rel:.1e}, "
            f"shaking diff = {np.max(np.abs(fw['shaking_force'] - iv['shaking_force'])):.1e}"
        )
    return fig


def _shaking_check(model, Q, QDD, F, Mz):
    err = 0.0
    for q, qdd, f, mz in zip(Q, QDD, F, Mz):
        Fs, Ms = np.zeros(2), 0.0
        for k, b in enumerate(model.bodies):
            fk = b.mass * (model.gravity - qdd[3 * k : 3 * k + 2])
            Fs += fk
            Ms += _cross(q[3 * k : 3 * k + 2], fk) - b.inertia * qdd[3 * k + 2]
        err = max(err, float(np.max(np.abs(Fs - f))), abs(Ms - mz))
    return err


def _joint_sum(model, reac):
    return max(float(np.max(np.abs(sum(reac[(J.name, ln)] for ln in J.links)))) for J in model.joints)


if __name__ == "__main__":
    run_checks()

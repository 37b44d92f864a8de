"""Peer benchmark: MuJoCo forward dynamics of a planar four-bar linkage.

Mechanism (SI units, all motion in the x-y plane, hinge axes along z)
--------------------------------------------------------------------
Lengths ``l = (l1, l2, l3, l4)``: l1 crank A->B, l2 coupler B->C, l3 rocker
D->C, l4 ground A->D, with A = (0, 0) and D = (l4, 0).  Attitude angles:
theta_A (crank, B = l1 e(theta_A)), theta_B (coupler, C = B + l2 e(theta_B)),
theta_D (rocker, C = D + l3 e(theta_D)), e(t) = (cos t, sin t).  Per moving
link (crank, coupler, rocker): mass m_i, COM inertia J_i (about z), COM offset
rho_i = (rho_x, rho_y) in the link frame from the link's first joint (A, B,
D), x along the link, y = x rotated +90 deg.

How this maps onto MuJoCo: diffmech's export (``mujoco_export.py``)
-------------------------------------------------------------------
* The four-bar at ``angles0`` is written as a diffmech linkage description
  (pins A, B, C, D; links crank, coupler, rocker with their masses, centres of
  mass and inertias; the crank the input) and exported by
  ``diffmech.linkage.to_mjcf``: a hinge tree (the input's hinge first), the
  loop cut at one pin by an ``<equality><connect>`` between a site on each side
  (its z row is identically satisfied), every body frame world-aligned at
  ``angles0``, so ``qpos = 0`` IS that configuration. The initial rates set each
  tree hinge's ``qvel`` to its child link's rate less its parent's.
  ``<inertial>``: mass, pos = COM, ``diaginertia = (J/2, J/2, J)`` (only the z
  entry enters planar motion). No geoms collide (contact is disabled), no
  damping / armature / friction. ``opt.gravity = (gx, gy, 0)``. (Until
  2026-11-27 this peer wrote its own MJCF, crank and coupler hung from A and the
  rocker from D, cut at C: the runs agree.)
* The link angles and rates are read back from MuJoCo's body orientations
  (``xmat``) and angular velocities (``cvel``): theta_i = angles0_i + the body's
  rotation about z.
* "default" constraint: MuJoCo's default solref (0.02, 1) and solimp
  (0.9, 0.95, 0.001, 0.5, 2); "stiff": solref (0.002, 1) and solimp
  (0.9999, 0.9999, 0.001, 0.5, 2) set on the compiled model.  MuJoCo's
  ``refsafe`` clamps solref[0] to >= 2*dt; at dt = 1e-3 the stiff value
  sits exactly at that bound, so it is not altered for dt <= 1e-3.
* Integrators "Euler" (MuJoCo's semi-implicit Euler: velocity first, then
  position with the new velocity; its implicit-damping part is inert here
  because there is no damping) and "RK4".  The constraint is *soft*
  (a spring-damper in constraint space), so the loop-closure residual and
  energy are not conserved exactly; both are measured independently of
  MuJoCo's bookkeeping from the link angles and rates with the geometry above.

Only numpy and mujoco are used, besides diffmech's export.
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np

try:
    from . import mujoco_export
except ImportError:  # run as a script from benchmarks/peers
    import mujoco_export

_HAVE_MUJOCO, mujoco = mujoco_export._HAVE_MUJOCO, mujoco_export.mujoco


STIFF_SOLREF = (0.002, 1.0)
STIFF_SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)


def available() -> bool:
    """True when the ``mujoco`` Python package can be imported."""
    return _HAVE_MUJOCO


LINKS = ("crank", "coupler", "rocker")


def _description(lengths, masses, inertias, com, gravity, angles0) -> dict:
    """The four-bar at ``angles0`` as a diffmech linkage description."""
    l1, l2, l3, l4 = (float(v) for v in lengths)
    rho = np.asarray(com, dtype=float).reshape(3, 2)
    e = lambda t: np.array([math.cos(t), math.sin(t)])  # noqa: E731
    tA, tB, tD = (float(v) for v in angles0)
    A, D = np.zeros(2), np.array([l4, 0.0])
    B = A + l1 * e(tA)
    C = B + l2 * e(tB)
    origins = (A, B, D)  # each link's first joint
    links = {}
    for i, (name, joints) in enumerate(zip(LINKS, (["A", "B"], ["B", "C"], ["D", "C"]))):
        t = (tA, tB, tD)[i]
        R = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
        links[name] = {
            "joints": joints,
            "mass": float(masses[i]),
            "com": (origins[i] + R @ rho[i]).tolist(),
            "inertia": float(inertias[i]),
        }
    links["ground"] = ["A", "D"]
    return {
        "name": "fourbar",
        "geometry": "planar",
        "joints": {n: {"type": "R", "coords": p.tolist()} for n, p in zip("ABCD", (A, B, C, D))},
        "links": links,
        "ground": "ground",
        "input": {"type": "revolute", "link": "crank", "joint": "A"},
        "gravity": [float(g) for g in gravity],
    }


class _Fourbar:
    """Model + data + initial state for one parameter set."""

    def __init__(self, lengths, masses, inertias, com, gravity, angles0, rates0, dt, integrator, stiff):
        if not _HAVE_MUJOCO:
            raise RuntimeError("mujoco is not installed")
        from diffmech.linkage import Linkage

        self.lengths = np.asarray(lengths, dtype=float)
        self.masses = np.asarray(masses, dtype=float)
        self.inertias = np.asarray(inertias, dtype=float)
        self.com = np.asarray(com, dtype=float).reshape(3, 2)
        self.gravity = np.asarray(gravity, dtype=float)
        self.angles0 = np.asarray(angles0, dtype=float)
        lk = Linkage.from_dict(_description(lengths, masses, inertias, com, gravity, angles0))
        self.model, self.xml = mujoco_export.compile_linkage(
            lk,
            timestep=dt,
            integrator=integrator,
            solref=STIFF_SOLREF if stiff else None,
            solimp=STIFF_SOLIMP if stiff else None,
        )
        m = self.model
        self.data = mujoco.MjData(m)
        self.bodies = np.array([mujoco_export.body_id(m, n) for n in LINKS])
        rate = dict(zip(self.bodies.tolist(), (float(v) for v in rates0)))
        self.qpos0 = np.zeros(m.nq)  # the exported configuration is angles0
        self.qvel0 = np.zeros(m.nv)
        for j in range(m.njnt):  # a tree hinge turns its body relative to its parent
            b = int(m.jnt_bodyid[j])
            self.qvel0[m.jnt_dofadr[j]] = rate.get(b, 0.0) - rate.get(int(m.body_parentid[b]), 0.0)

    def reset(self):
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = self.qpos0
        self.data.qvel[:] = self.qvel0
        mujoco.mj_forward(self.model, self.data)

    # --- independent (non-MuJoCo) post-processing ------------------------
    def absolute(self, qpos, qvel):
        """Link angles and rates (crank, coupler, rocker) from MuJoCo's bodies at each
        recorded state: angles0 + the body's rotation about z, and its angular velocity."""
        m, d = self.model, mujoco.MjData(self.model)
        th = np.empty((len(qpos), 3))
        om = np.empty((len(qpos), 3))
        for k, (q, v) in enumerate(zip(np.asarray(qpos), np.asarray(qvel))):
            d.qpos[:], d.qvel[:] = q, v
            mujoco_export.refresh(m, d)
            R = d.xmat[self.bodies].reshape(-1, 3, 3)
            th[k] = self.angles0 + np.arctan2(R[:, 1, 0], R[:, 0, 0])
            om[k] = d.cvel[self.bodies, 2]
        th = self.angles0 + np.unwrap(th - self.angles0, axis=0)
        return th, om

    def closure(self, qpos, qvel):
        l1, l2, l3, l4 = self.lengths
        th, _ = self.absolute(qpos, qvel)
        cx1 = l1 * np.cos(th[:, 0]) + l2 * np.cos(th[:, 1])
        cy1 = l1 * np.sin(th[:, 0]) + l2 * np.sin(th[:, 1])
        cx2 = l4 + l3 * np.cos(th[:, 2])
        cy2 = l3 * np.sin(th[:, 2])
        return np.hypot(cx1 - cx2, cy1 - cy2)

    def energies(self, qpos, qvel):
        """(kinetic, total mechanical) energy arrays from joint state."""
        l1, l2, l3, l4 = self.lengths
        th, om = self.absolute(qpos, qvel)
        g = self.gravity
        T = np.zeros(th.shape[0])
        V = np.zeros(th.shape[0])
        # origin of each link frame and its velocity
        ox = [np.zeros_like(th[:, 0]), l1 * np.cos(th[:, 0]), np.full_like(th[:, 0], l4)]
        oy = [np.zeros_like(th[:, 0]), l1 * np.sin(th[:, 0]), np.zeros_like(th[:, 0])]
        vox = [np.zeros_like(th[:, 0]), -l1 * np.sin(th[:, 0]) * om[:, 0], np.zeros_like(th[:, 0])]
        voy = [np.zeros_like(th[:, 0]), l1 * np.cos(th[:, 0]) * om[:, 0], np.zeros_like(th[:, 0])]
        for i in range(3):
            c, s = np.cos(th[:, i]), np.sin(th[:, i])
            px, py = self.com[i]
            dx = c * px - s * py  # rotated COM offset
            dy = s * px + c * py
            rx, ry = ox[i] + dx, oy[i] + dy
            vx = vox[i] - om[:, i] * dy
            vy = voy[i] + om[:, i] * dx
            T += 0.5 * self.masses[i] * (vx * vx + vy * vy) + 0.5 * self.inertias[i] * om[:, i] ** 2
            V += -self.masses[i] * (g[0] * rx + g[1] * ry)
        return T, T + V


def _bare_loop(model, data, n_steps):
    step = mujoco.mj_step
    t0 = time.perf_counter()
    for _ in range(n_steps):
        step(model, data)
    return time.perf_counter() - t0


def simulate(
    lengths,
    masses,
    inertias,
    com,
    gravity,
    angles0,
    rates0,
    t1,
    dt,
    *,
    integrator="RK4",
    stiff=False,
    n_out=501,
    repeats=3,
) -> dict:
    """Integrate the four-bar with MuJoCo from (angles0, rates0) to t1.

    Returns trajectory samples at n_out (nearest-step) times plus timings;
    see module docstring for conventions.
    """
    fb = _Fourbar(lengths, masses, inertias, com, gravity, angles0, rates0, dt, integrator, stiff)
    model, data = fb.model, fb.data
    n_steps = int(round(t1 / dt))
    rec_idx = np.rint(np.linspace(0.0, n_steps, n_out)).astype(np.int64)
    qpos_rec = np.empty((n_out, model.nq))
    qvel_rec = np.empty((n_out, model.nv))
    step = mujoco.mj_step

    walls = []
    for _ in range(max(1, repeats)):
        fb.reset()
        qpos, qvel = data.qpos, data.qvel
        j = 0
        while j < n_out and rec_idx[j] == 0:
            qpos_rec[j] = qpos
            qvel_rec[j] = qvel
            j += 1
        nxt = rec_idx[j] if j < n_out else -1
        t0 = time.perf_counter()
        for i in range(1, n_steps + 1):
            step(model, data)
            if i == nxt:
                while j < n_out and rec_idx[j] == i:
                    qpos_rec[j] = qpos
                    qvel_rec[j] = qvel
                    j += 1
                nxt = rec_idx[j] if j < n_out else -1
        walls.append(time.perf_counter() - t0)

    bare = []
    for _ in range(max(1, repeats)):
        fb.reset()
        bare.append(_bare_loop(model, data, n_steps))

    wall_s = statistics.median(walls)
    wall_s_bare = statistics.median(bare)
    closure = fb.closure(qpos_rec, qvel_rec)
    T, E = fb.energies(qpos_rec, qvel_rec)
    tmax = float(np.max(T))
    drift = float(np.max(np.abs(E - E[0])) / tmax) if tmax > 0 else float("nan")
    return {
        "ts": rec_idx.astype(float) * dt,
        "theta_A": fb.absolute(qpos_rec, qvel_rec)[0][:, 0],
        "closure_residual": closure,
        "energy": E,
        "kinetic_energy": T,
        "energy_drift": drift,
        "max_closure": float(np.max(closure)),
        "wall_s": wall_s,
        "wall_s_bare": wall_s_bare,
        "steps": n_steps,
        "sim_per_wall": (n_steps * dt) / wall_s_bare if wall_s_bare > 0 else float("inf"),
        "mujoco_version": mujoco.__version__,
        "integrator": integrator,
        "stiff": bool(stiff),
        "dt": float(dt),
    }


def throughput(
    lengths, masses, inertias, com, gravity, angles0, rates0, dt, *, integrator="RK4", stiff=False, sim_time=1.0
) -> float:
    """Simulated seconds per wall second, single MjData, no recording (median of 3)."""
    fb = _Fourbar(lengths, masses, inertias, com, gravity, angles0, rates0, dt, integrator, stiff)
    n_steps = max(1, int(round(sim_time / dt)))
    walls = []
    for _ in range(3):
        fb.reset()
        walls.append(_bare_loop(fb.model, fb.data, n_steps))
    return (n_steps * dt) / statistics.median(walls)


# ----------------------------------------------------------------------------
# self-check
# ----------------------------------------------------------------------------
REF_THETA_A_5S = -2.05364755891


def _assemble(lengths, theta_a):
    """(theta_A, theta_B, theta_D) with C above the ground line (C_y > 0)."""
    l1, l2, l3, l4 = lengths
    B = np.array([l1 * math.cos(theta_a), l1 * math.sin(theta_a)])
    D = np.array([l4, 0.0])
    d = float(np.linalg.norm(D - B))
    a = (l2**2 - l3**2 + d**2) / (2 * d)
    h = math.sqrt(l2**2 - a**2)
    u = (D - B) / d
    n = np.array([-u[1], u[0]])
    cands = [B + a * u + h * n, B + a * u - h * n]
    C = max(cands, key=lambda c: c[1])
    tB = math.atan2(C[1] - B[1], C[0] - B[0])
    tD = math.atan2(C[1] - D[1], C[0] - D[0])
    return (theta_a, tB, tD), C


def _main():
    lengths = (0.12, 0.25, 0.26, 0.30)
    masses = (0.1, 0.25, 0.18)
    inertias = (0.001, 0.016, 0.006)
    com = [(lengths[0] / 2, 0.0), (lengths[1] / 2, 0.0), (lengths[2] / 2, 0.0)]
    gravity = (0.0, -9.81)
    angles0, C = _assemble(lengths, 0.0)
    rates0 = (0.0, 0.0, 0.0)
    print(
        f"mujoco {mujoco.__version__}; C(0) = ({C[0]:.6f}, {C[1]:.6f}); angles0 = {tuple(round(a, 6) for a in angles0)}"
    )
    print(f"reference theta_A(5 s) = {REF_THETA_A_5S:.11f}")
    hdr = (
        f"{'integ':6s} {'dt':>7s} {'solref':7s} {'max_closure[m]':>14s} "
        f"{'E_drift':>9s} {'wall_s':>8s} {'bare_s':>8s} {'sim/wall':>9s} "
        f"{'thA(0.5s)':>10s} {'thA(5s)':>13s} {'err':>10s}"
    )
    print(hdr)
    print("-" * len(hdr))
    for integ in ("Euler", "RK4"):
        for dt in (1e-3, 1e-4):
            for stiff in (False, True):
                r = simulate(
                    lengths, masses, inertias, com, gravity, angles0, rates0, 5.0, dt, integrator=integ, stiff=stiff
                )
                th5 = r["theta_A"][-1]
                k05 = int(np.argmin(np.abs(r["ts"] - 0.5)))
                print(
                    f"{integ:6s} {dt:7.0e} {'stiff' if stiff else 'default':7s} "
                    f"{r['max_closure']:14.3e} {r['energy_drift']:9.2e} "
                    f"{r['wall_s']:8.3f} {r['wall_s_bare']:8.3f} {r['sim_per_wall']:9.1f} "
                    f"{r['theta_A'][k05]:10.5f} {th5:13.8f} {th5 - REF_THETA_A_5S:10.2e}"
                )


if __name__ == "__main__":
    _main()

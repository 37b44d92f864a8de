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

How this maps onto MuJoCo
-------------------------
* A hinge tree: world -> crank (hinge at A) -> coupler (hinge at B, at
  (l1, 0, 0) in the crank frame); world -> rocker (hinge at D = (l4, 0, 0)).
  At qpos = 0 every link lies along +x, so the joint coordinates are
  qpos = (theta_A, theta_B - theta_A, theta_D) and
  qvel = (omega_A, omega_B - omega_A, omega_D).
* The loop is closed by an ``<equality><connect site1=... site2=.../>``
  between a site at (l2, 0, 0) on the coupler and one at (l3, 0, 0) on the
  rocker (the site form of ``connect`` asks the two sites to coincide; the
  body/anchor form would instead take qpos0 -- an open, straight configuration
  -- as the satisfied one, which is wrong here).
* Explicit ``<inertial>`` per body: mass, pos = COM, diaginertia = (J, J, J)
  (only the z entry matters for planar motion).  No geoms collide (contact is
  disabled), no damping / armature / friction.  ``opt.gravity = (gx, gy, 0)``.
* "default" constraint: MuJoCo's default solref (0.02, 1) and solimp
  (0.9, 0.95, 0.001, 0.5, 2); "stiff": solref (0.002, 1) and solimp
  (0.9999, 0.9999, 0.001, 0.5, 2) set on the connect element.  MuJoCo's
  ``refsafe`` clamps solref[0] to >= 2*dt; at dt = 1e-3 the stiff value
  sits exactly at that bound, so it is not altered for dt <= 1e-3.
* Integrators "Euler" (MuJoCo's semi-implicit Euler: velocity first, then
  position with the new velocity; its implicit-damping part is inert here
  because there is no damping) and "RK4".  The constraint is *soft*
  (a spring-damper in constraint space), so the loop-closure residual and
  energy are not conserved exactly; both are measured independently of
  MuJoCo from qpos/qvel with the geometry above.

Only numpy and mujoco are used.
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np

try:  # pragma: no cover - depends on the environment
    import mujoco

    _HAVE_MUJOCO = True
except Exception:  # pragma: no cover
    mujoco = None
    _HAVE_MUJOCO = False


STIFF_SOLREF = (0.002, 1.0)
STIFF_SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)


def available() -> bool:
    """True when the ``mujoco`` Python package can be imported."""
    return _HAVE_MUJOCO


def _f(x) -> str:
    return repr(float(x))


def _vec(*xs) -> str:
    return " ".join(_f(x) for x in xs)


def _build_xml(lengths, masses, inertias, com, gravity, dt, integrator, stiff):
    l1, l2, l3, l4 = (float(v) for v in lengths)
    m = [float(v) for v in masses]
    J = [float(v) for v in inertias]
    rho = np.asarray(com, dtype=float).reshape(3, 2)
    gx, gy = (float(v) for v in gravity)
    if integrator not in ("Euler", "RK4"):
        raise ValueError(f"integrator must be 'Euler' or 'RK4', got {integrator!r}")
    eq_extra = ""
    if stiff:
        eq_extra = f' solref="{_vec(*STIFF_SOLREF)}" solimp="{_vec(*STIFF_SOLIMP)}"'

    def inertial(i):
        return (
            f'<inertial pos="{_vec(rho[i, 0], rho[i, 1], 0.0)}" mass="{_f(m[i])}" '
            f'diaginertia="{_vec(J[i], J[i], J[i])}"/>'
        )

    return f"""
<mujoco model="fourbar">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="{_f(dt)}" integrator="{integrator}" gravity="{_vec(gx, gy, 0.0)}">
    <flag contact="disable"/>
  </option>
  <worldbody>
    <body name="crank" pos="0 0 0">
      <joint name="jA" type="hinge" axis="0 0 1" pos="0 0 0"/>
      {inertial(0)}
      <body name="coupler" pos="{_vec(l1, 0.0, 0.0)}">
        <joint name="jB" type="hinge" axis="0 0 1" pos="0 0 0"/>
        {inertial(1)}
        <site name="C_coupler" pos="{_vec(l2, 0.0, 0.0)}"/>
      </body>
    </body>
    <body name="rocker" pos="{_vec(l4, 0.0, 0.0)}">
      <joint name="jD" type="hinge" axis="0 0 1" pos="0 0 0"/>
      {inertial(2)}
      <site name="C_rocker" pos="{_vec(l3, 0.0, 0.0)}"/>
    </body>
  </worldbody>
  <equality>
    <connect site1="C_coupler" site2="C_rocker"{eq_extra}/>
  </equality>
</mujoco>
"""


class _Fourbar:
    """Model + data + initial state for one parameter set."""

    def __init__(self, lengths, masses, inertias, com, gravity, angles0, rates0, dt, integrator, stiff):
        if not _HAVE_MUJOCO:
            raise RuntimeError("mujoco is not installed")
        self.lengths = np.asarray(lengths, dtype=float)
        self.masses = np.asarray(masses, dtype=float)
        self.inertias = np.asarray(inertias, dtype=float)
        self.com = np.asarray(com, dtype=float).reshape(3, 2)
        self.gravity = np.asarray(gravity, dtype=float)
        xml = _build_xml(lengths, masses, inertias, com, gravity, dt, integrator, stiff)
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        tA, tB, tD = (float(v) for v in angles0)
        wA, wB, wD = (float(v) for v in rates0)
        self.qpos0 = np.array([tA, tB - tA, tD])
        self.qvel0 = np.array([wA, wB - wA, wD])

    def reset(self):
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = self.qpos0
        self.data.qvel[:] = self.qvel0
        mujoco.mj_forward(self.model, self.data)

    # --- independent (non-MuJoCo) post-processing ------------------------
    def absolute(self, qpos, qvel):
        qpos = np.asarray(qpos)
        qvel = np.asarray(qvel)
        th = np.stack([qpos[:, 0], qpos[:, 0] + qpos[:, 1], qpos[:, 2]], axis=1)
        om = np.stack([qvel[:, 0], qvel[:, 0] + qvel[:, 1], qvel[:, 2]], axis=1)
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
    qpos_rec = np.empty((n_out, 3))
    qvel_rec = np.empty((n_out, 3))
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
        "theta_A": np.unwrap(qpos_rec[:, 0]),
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

"""Peer benchmark: MuJoCo forward dynamics of a planar linkage read from JSON.

Written for ``diffmech/linkage/data/theo_jansen.json`` (works for any planar
file of the same format whose prismatic joints can be made tree edges).

JSON semantics used
-------------------
* ``"R"`` joint: a pin at ``coords`` (initial configuration), shared by two or
  more links (a pin listed by k links makes all k coincide there).
* ``"P"`` joint: a line ``a x + b y + c = 0`` shared by exactly two links; the
  links keep their relative orientation and translate relative to each other
  along the line direction ``(b, -a) / hypot(a, b)`` (the offset ``c`` does not
  enter the dynamics).
* ``"tracer"``: a drawing point, ignored here.
* links: ``mass``, ``com`` (world, initial configuration), ``inertia`` (z, about
  the com); the ``ground`` link has no mass.  ``gravity`` (gx, gy).
* input: link ``L_in`` turns about joint ``J_in`` relative to the ground; ``u``
  is its rotation from the initial configuration (anticlockwise); the motor
  torque acts on ``L_in`` (and ``-tau`` on the ground).

How this maps onto MuJoCo: diffmech's export (``mujoco_export.py``)
-------------------------------------------------------------------
* The file read as a diffmech linkage and written by ``diffmech.linkage.to_mjcf``:
  every link a body whose frame has the world orientation at the initial
  configuration (``qpos = 0`` IS that configuration), a spanning tree grown from
  the ground taking the input's hinge first and every P joint (a ``slide`` along
  its line: MuJoCo has no equality that closes a prismatic pair), the other
  joints hinges about z; every cut R joint a ``connect`` between a site on each
  side at the pin (in the plane one connect leaves the cut joint its turn; its z
  row is identically satisfied). ``<inertial>``: mass, com, ``diaginertia =
  (I/2, I/2, I)`` (the x/y entries do not enter planar dynamics; MuJoCo needs
  A + B >= C). No geoms, contact disabled, no damping/armature/friction, gravity
  (gx, gy, 0). (Until 2026-11-27 this peer wrote its own MJCF by a spanning tree
  of its own: the runs agree.)
* Constraint softness: "default" = MuJoCo's defaults (solref (0.02, 1), solimp
  (0.9, 0.95, 0.001, 0.5, 2)); "stiff" = solref (2 dt, 1) -- exactly MuJoCo's
  ``refsafe`` lower bound on the time constant, so it is not altered -- and
  solimp (0.9999, 0.9999, 0.001, 0.5, 2), set on the compiled model.
  Integrators "Euler" (semi-implicit) and "RK4".
* Motor torque ``tau = tau0 + c * udot`` through the exported ``motor`` on the
  input hinge, given an affine bias (0, 0, c) on the compiled model, ctrl = tau0: MuJoCo evaluates it
  at every RK4 stage, so no Python is needed in the stepping loop.  Only this
  affine form is supported (``torque`` = None, a number, or ``(tau0, c)``).

Post-processing (independent of MuJoCo's energy / constraint bookkeeping)
-------------------------------------------------------------------------
At each save, ``mj_kinematics``/``mj_comPos``/``mj_comVel`` refresh the
position-dependent arrays for the current state (after ``mj_step`` they belong
to the state at the start of the step).  Then

* loop gap = max over connects of |site1 - site2| (``data.site_xpos``);
* E = T + V with, per moving body, the com velocity
  ``v = cvel_lin + w x (xipos - subtree_com[rootid])``, ``w = cvel_rot``,
  ``T = 1/2 m |v|^2 + 1/2 I w_z^2``, ``V = -m g . xipos``;
* W = int tau udot dt = tau0 (u - u0) + c int udot^2 dt, the last integral by
  composite Simpson over the per-step ``udot`` of the recorded run;
* energy_drift = max |E - E0 - W| / max T (over saves).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np

# the import guard, the stiff softness and the timing helper are the four-bar peer's
try:
    from . import mujoco_export
    from .mujoco_fourbar import _HAVE_MUJOCO, STIFF_SOLIMP, _bare_loop, available, mujoco
except ImportError:  # run as a script from benchmarks/peers
    import mujoco_export
    from mujoco_fourbar import _HAVE_MUJOCO, STIFF_SOLIMP, _bare_loop, available, mujoco

__all__ = ["available", "simulate", "throughput", "build"]

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "diffmech" / "linkage" / "data" / "theo_jansen.json"


# --------------------------------------------------------------------------- topology


def _read(path):
    with open(path) as fh:
        spec = json.load(fh)
    if spec.get("geometry", "planar") != "planar":
        raise ValueError("only planar linkages are supported")
    ground = spec["ground"]
    links = {}
    for name, v in spec["links"].items():
        if name == ground:
            jl = v if isinstance(v, list) else v["joints"]
            links[name] = dict(joints=list(jl), mass=0.0, inertia=0.0, com=(0.0, 0.0))
        else:
            links[name] = dict(
                joints=list(v["joints"]), mass=float(v["mass"]), inertia=float(v["inertia"]), com=tuple(v["com"])
            )
    joints = {n: dict(type=j["type"], coords=tuple(float(c) for c in j["coords"])) for n, j in spec["joints"].items()}
    g = tuple(float(x) for x in spec.get("gravity", (0.0, -9.81)))
    inp = spec["input"]
    if inp.get("type", "revolute") != "revolute":
        raise ValueError("only a revolute input is supported")
    return spec, ground, links, joints, g, inp["link"], inp["joint"]


class Linkage:
    """The exported MJCF model of one linkage file + bookkeeping for post-processing."""

    def __init__(self, path, dt=1e-3, integrator="RK4", stiff=False, torque=None, mass_scale=None):
        if not _HAVE_MUJOCO:
            raise RuntimeError("mujoco is not installed")
        from diffmech.linkage import Linkage as _Description

        spec, ground, links, joints, g, in_link, in_joint = _read(path)
        self.ground, self.links, self.joints, self.gravity = ground, links, joints, g
        self.in_link, self.in_joint = in_link, in_joint
        if torque is None:
            self.tau0, self.c = 0.0, 0.0
        elif np.isscalar(torque):
            self.tau0, self.c = float(torque), 0.0
        else:
            self.tau0, self.c = (float(x) for x in torque)
        self.driven = torque is not None
        self.dt = float(dt)
        self.model, self.xml = mujoco_export.compile_linkage(
            _Description.load(path),
            timestep=self.dt,
            integrator=integrator,
            solref=(2.0 * self.dt, 1.0) if stiff else None,
            solimp=STIFF_SOLIMP if stiff else None,
        )
        m = self.model
        self.moving = [l for l in links if l != ground]
        self.body_ids = np.array([mujoco_export.body_id(m, l) for l in self.moving])
        for l, sc in (mass_scale or {}).items():
            b = mujoco_export.body_id(m, l)
            m.body_mass[b] *= sc
            m.body_inertia[b] *= sc
        # the motor: tau = ctrl + c * udot (MuJoCo evaluates the affine bias at every stage)
        qpos_adr, dof_adr = mujoco_export.input_joints(m)
        self.iu_qpos, self.iu_qvel = int(qpos_adr[0]), int(dof_adr[0])
        m.actuator_biastype[0] = mujoco.mjtBias.mjBIAS_AFFINE
        m.actuator_biasprm[0, :3] = (0.0, 0.0, self.c)
        self.data = mujoco.MjData(m)
        mujoco.mj_setConst(m, self.data)
        self.site_pairs = mujoco_export.connect_sites(m)

    # ---------------------------------------------------------------- state
    def reset(self):
        mujoco.mj_resetData(self.model, self.data)  # qpos0 = 0 = initial configuration, qvel = 0
        self.data.ctrl[0] = self.tau0 if self.driven else 0.0

    def refresh(self):
        """Position/velocity-dependent arrays for the CURRENT qpos/qvel (no solver)."""
        mujoco_export.refresh(self.model, self.data)

    def loop_gap(self):
        return mujoco_export.loop_gap(self.data, self.site_pairs)

    def energies(self):
        """(T, V) from body poses and velocities (call refresh() first)."""
        return mujoco_export.kinetic_potential(self.model, self.data, self.gravity, self.body_ids)


def build(path=DEFAULT_DATA, **kw) -> Linkage:
    """The MJCF model object (``.xml``, ``.model``, ``.data``, ``.tree``, ``.closures``)."""
    return Linkage(path, **kw)


def _simpson_cum(y, dt, idx):
    """int_0^{t_idx[k]} y dt at the indices idx (composite Simpson per segment,
    trapezoid on a segment with an odd number of steps)."""
    out = np.zeros(len(idx))
    acc, prev = 0.0, 0
    for k, i in enumerate(idx):
        n = i - prev
        if n > 0:
            seg = y[prev : i + 1]
            if n % 2 == 0:
                acc += dt / 3.0 * (seg[0] + seg[-1] + 4.0 * seg[1:-1:2].sum() + 2.0 * seg[2:-1:2].sum())
            else:
                acc += dt * (0.5 * (seg[0] + seg[-1]) + seg[1:-1].sum())
        out[k] = acc
        prev = i
    return out


# --------------------------------------------------------------------------- API


def simulate(path=DEFAULT_DATA, t1=5.0, dt=1e-3, integrator="RK4", stiff=False, torque=None, save_every_s=0.1) -> dict:
    """Integrate the linkage from rest at its initial configuration to t1.

    ``torque``: None (free motion), a number tau0, or a pair (tau0, c) for
    tau = tau0 + c * udot on the input link.
    """
    lk = Linkage(path, dt=dt, integrator=integrator, stiff=stiff, torque=torque)
    model, data = lk.model, lk.data
    n_steps = int(round(t1 / dt))
    every = max(1, int(round(save_every_s / dt)))
    idx = list(range(0, n_steps + 1, every))
    if idx[-1] != n_steps:
        idx.append(n_steps)
    idx = np.array(idx)

    # recorded run (not timed)
    lk.reset()
    t_rec0 = time.perf_counter()
    ud = np.empty(n_steps + 1)
    qvel = data.qvel
    iu = lk.iu_qvel
    ud[0] = qvel[iu]
    u = np.empty(len(idx))
    udot = np.empty(len(idx))
    T = np.empty(len(idx))
    V = np.empty(len(idx))
    gap = np.empty(len(idx))
    step = mujoco.mj_step
    nxt = 0
    for i in range(n_steps + 1):
        if i > 0:
            step(model, data)
            ud[i] = qvel[iu]
        if i == idx[nxt]:
            lk.refresh()
            u[nxt] = data.qpos[lk.iu_qpos]
            udot[nxt] = qvel[iu]
            T[nxt], V[nxt] = lk.energies()
            gap[nxt] = lk.loop_gap()
            nxt += 1
    wall_recorded = time.perf_counter() - t_rec0
    finite = bool(np.all(np.isfinite(data.qpos)) and np.all(np.isfinite(data.qvel)))

    # bare stepping loop, median of 3
    bare = []
    for _ in range(3):
        lk.reset()
        bare.append(_bare_loop(model, data, n_steps))
    wall_s_bare = statistics.median(bare)

    W = lk.tau0 * (u - u[0]) + lk.c * _simpson_cum(ud * ud, dt, idx)
    E = T + V
    tmax = float(np.max(T))
    err = np.abs(E - E[0] - W)
    return {
        "t": idx * dt,
        "u": u - u[0],  # hinge qpos is continuous (already unwrapped), 0 at start
        "udot": udot,
        "wall_s_bare": wall_s_bare,
        "wall_s_runs": bare,
        "wall_s_recorded": wall_recorded,
        "max_loop_gap": float(np.nanmax(gap)) if finite else float("nan"),
        "loop_gap": gap,
        "energy": E,
        "kinetic": T,
        "work": W,
        "energy_drift": float(np.max(err) / tmax) if (tmax > 0 and finite) else float("nan"),
        "n_steps": n_steps,
        "sim_per_wall": n_steps * dt / wall_s_bare if wall_s_bare > 0 else float("inf"),
        "finite": finite,
        "integrator": integrator,
        "stiff": bool(stiff),
        "dt": float(dt),
        "mujoco_version": mujoco.__version__,
    }


def throughput(path=DEFAULT_DATA, n_runs=64, t1=1.0, dt=1e-3, integrator="RK4", stiff=False, seed=0) -> dict:
    """Simulated seconds per wall second, one thread, ``n_runs`` sequential free-release
    runs of designs whose moving-link masses (and, consistently, z inertias: a
    density change) are scaled by independent factors ~ U[0.9, 1.1].  The model
    is edited in place (``body_mass``/``body_inertia`` + ``mj_setConst``, not
    timed); only the stepping loops are timed."""
    lk = Linkage(path, dt=dt, integrator=integrator, stiff=stiff)
    m, d = lk.model, lk.data
    b = lk.body_ids
    mass0 = m.body_mass[b].copy()
    inert0 = m.body_inertia[b].copy()
    rng = np.random.default_rng(seed)
    n_steps = max(1, int(round(t1 / dt)))
    total = 0.0
    u_end = np.empty(n_runs)
    for r in range(n_runs):
        f = rng.uniform(0.9, 1.1, size=len(b))
        m.body_mass[b] = mass0 * f
        m.body_inertia[b] = inert0 * f[:, None]
        mujoco.mj_setConst(m, d)
        lk.reset()
        total += _bare_loop(m, d, n_steps)
        u_end[r] = d.qpos[lk.iu_qpos]
    m.body_mass[b] = mass0
    m.body_inertia[b] = inert0
    mujoco.mj_setConst(m, d)
    sim = n_runs * n_steps * dt
    return {
        "sim_per_wall": sim / total,
        "wall_s": total,
        "sim_s": sim,
        "n_runs": n_runs,
        "n_steps": n_steps,
        "u_end": u_end,
        "integrator": integrator,
        "stiff": bool(stiff),
        "dt": float(dt),
    }


# --------------------------------------------------------------------------- table


def _main():
    import sys

    path = DEFAULT_DATA
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "tests" / "reference"))
    import linkage_absolute as ref

    t1 = 5.0
    lk = Linkage(path)
    print(f"mujoco {mujoco.__version__}; file {path.name}")
    print("connects:", len(lk.site_pairs))
    mo = ref.load(path)
    t_eval = np.round(np.arange(0.0, t1 + 1e-9, 0.1), 12)
    cases = {"free": None, "driven 50-5w": (50.0, -5.0)}
    refs = {}
    for name, tq in cases.items():
        fn = None if tq is None else (lambda t, u, w, a=tq[0], c=tq[1]: a + c * w)
        t0 = time.perf_counter()
        fw = ref.forward(mo, t_eval, torque=fn, rtol=1e-12, atol=1e-12)
        refs[name] = fw["u"][-1]
        print(f"reference {name}: u(5) = {fw['u'][-1]:.12f} rad  ({time.perf_counter() - t0:.1f} s)")
    hdr = (
        f"{'case':13s} {'integ':5s} {'dt':>6s} {'soft':7s} {'bare_s':>8s} {'sim/wall':>9s} {'call_s':>7s} "
        f"{'max_gap[m]':>10s} {'E_drift':>9s} {'u(5)':>13s} {'|u-uref|':>9s}"
    )
    print(hdr)
    print("-" * len(hdr))
    for name, tq in cases.items():
        for integ in ("Euler", "RK4"):
            for dt in (1e-3, 1e-4):
                for stiff in (False, True):
                    t0 = time.perf_counter()
                    r = simulate(path, t1=t1, dt=dt, integrator=integ, stiff=stiff, torque=tq)
                    call = time.perf_counter() - t0
                    u5 = r["u"][-1]
                    print(
                        f"{name:13s} {integ:5s} {dt:6.0e} {'stiff' if stiff else 'default':7s} "
                        f"{r['wall_s_bare']:8.3f} {r['sim_per_wall']:9.1f} {call:7.2f} "
                        f"{r['max_loop_gap']:10.2e} {r['energy_drift']:9.2e} {u5:13.9f} {abs(u5 - refs[name]):9.2e}",
                        flush=True,
                    )
    for integ in ("Euler", "RK4"):
        th = throughput(path, integrator=integ)
        print(
            f"throughput {integ} dt=1e-3 default, 64 runs x 1 s, masses x U[0.9,1.1]: "
            f"{th['sim_per_wall']:.1f} sim-s/wall-s ({th['wall_s']:.2f} s)"
        )


if __name__ == "__main__":
    _main()

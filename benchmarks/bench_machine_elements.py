"""Machine elements: loads across joints and cams, each against a baseline measured in
the same run.

- Loads across joints: the parallelogram four-bar of `tests/test_joint_loads.py` with a
  torsion spring and a torsion damper, released from 0.3 rad for 3 s: diffmech's
  `simulate_dynamics` (as the README calls it: eager, default integrator) against
  MuJoCo's run of the model `to_mjcf` writes (the hinge's stiffness and damping; RK4 at
  its stiff default timestep). Reported: wall time (median of repeats, compilation
  apart), the error against the closed-form damped oscillation, and the loop gap.
- Loads across sliding joints: the double slider of `tests/test_joint_loads.py` (a
  linear spring across one block's slide, a linear damper across the other's) released
  0.2 from the spring's free position for 3 s, against MuJoCo's run of the export (the
  slides' stiffness, springref and damping) and the closed-form damped oscillator.
- Gears: the planetary train of `tests/test_gears.py` (ring fixed, the sun the input)
  under a constant torque on the sun for 2 s from rest: `simulate_dynamics` (eager,
  default integrator) against MuJoCo's run of the export (each pair a fixed tendon
  held at its length; RK4 at its stiff default timestep). Reported: wall time, the
  error against the closed form `u = τ t² / (2 M)`.
- A cam in motion: the roller cam of the cam row, its follower on a spring, released at
  20 rad/s for 1 s (`cam.simulate`, eager, default integrator) against SciPy's DOP853 on
  the same one-degree equation (NumPy, the law in closed form) at rtol 1e-10. Reported:
  wall time (median), compilation apart, and their largest difference in the cam's
  angle.
- Cams: the follower's lift by the contact equation at 360 cam angles on a roller
  cam's profile (`cam.follow`), against SciPy's `brentq` per angle on the same contact
  equation (NumPy, the profile from the same law). Reported: wall time (median),
  compilation apart, and each one's error against the law.

    python benchmarks/bench_machine_elements.py [--repeats 5]

Every time is `_timing.timed`'s (the compile time the first call less the warm median).
Writes benchmarks/results/machine_elements.json. Run it alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks._timing import timed, write_results  # noqa: E402
from diffmech import cam, linkage as L  # noqa: E402


def _mujoco_run(model, ts, start, read):
    """MuJoCo's run of `model` from the state `start(d)` sets, `read(d)` at each save."""
    import mujoco

    d = mujoco.MjData(model)
    start(d)
    out = []
    for t in ts:
        while d.time < t - 1e-12:
            mujoco.mj_step(model, d)
        out.append(read(d))
    return np.asarray(out)


def _versus_mujoco(model, ts, start, read, exact, ours, repeats, **extra):
    """The rows of a one-degree motion against its closed form `exact`: diffmech's
    (`ours`: what `timed` gave, the simulation, its compile time and its median) and
    MuJoCo's run of the export (`start`, `read` as in `_mujoco_run`), timed alike."""
    sim, first, median = ours
    theirs, _, mj = timed(lambda: _mujoco_run(model, ts, start, read), repeats=repeats)
    return dict(
        diffmech_s=median,
        diffmech_compile_s=first,
        diffmech_error=float(np.max(np.abs(np.asarray(sim.u) - exact))),
        mujoco_s=mj,
        mujoco_error=float(np.max(np.abs(theirs - exact))),
        **extra,
    )


def joint_loads(repeats):
    import mujoco
    from test_joint_loads import M, parallelogram

    k, c, t1 = 2.0, 0.05, 3.0
    lk = parallelogram(spring=k, damping=c)
    ts = np.linspace(0.0, t1, 31)
    w = np.sqrt(k / M)
    z = c / (2 * np.sqrt(k * M))
    wd = w * np.sqrt(1 - z**2)
    exact = 0.3 * np.exp(-z * w * ts) * (np.cos(wd * ts) + z * w / wd * np.sin(wd * ts))
    saves = jnp.asarray(ts)
    sim, first, ours = timed(lambda: L.simulate_dynamics(lk, u0=0.3, udot0=0.0, t1=t1, saveat=saves), repeats=repeats)
    path = L.to_mjcf(lk, os.path.join(tempfile.mkdtemp(), "p.xml"), softness="stiff")
    model = mujoco.MjModel.from_xml_path(str(path))
    jid = {n: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in "ACD"}
    model.dof_frictionloss[:] = 0.0  # (the linkage's friction is 0: none exported; its stop inactive)
    model.jnt_limited[:] = 0

    def start(d):
        for n, q in (("A", 0.3), ("D", 0.3), ("C", -0.3)):
            d.qpos[model.jnt_qposadr[jid[n]]] = q

    def read(d):  # the crank's angle and the loop gap (the equality rows' largest residual)
        rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        return d.qpos[model.jnt_qposadr[jid["A"]]], float(np.max(np.abs(d.efc_pos[rows]))) if np.any(rows) else 0.0

    def run():
        out = _mujoco_run(model, ts, start, read)
        return out[:, 0], float(np.max(out[:, 1]))

    (theirs, gap), _, mj = timed(run, repeats=repeats)
    return dict(
        diffmech_s=ours,
        diffmech_compile_s=first,
        diffmech_error=float(np.max(np.abs(np.asarray(sim.u) - exact))),
        diffmech_energy_error=float(sim.energy_error),
        diffmech_residual=float(np.max(np.asarray(sim.residual))),
        mujoco_s=mj,
        mujoco_error=float(np.max(np.abs(theirs - exact))),
        mujoco_loop_gap=gap,
        mujoco_timestep=float(model.opt.timestep),
    )


def linear_loads(repeats):
    import mujoco
    from test_joint_loads import SLIDE_MASSES, double_slider

    m, k, c, t1 = sum(SLIDE_MASSES), 3.0, 0.2, 3.0
    ts = np.linspace(0.0, t1, 31)
    w, z = np.sqrt(k / m), c / (2 * np.sqrt(k * m))
    wd = w * np.sqrt(1 - z**2)
    exact = 0.05 + 0.2 * np.exp(-z * w * ts) * (np.cos(wd * ts) + z * w / wd * np.sin(wd * ts))
    lk, saves = double_slider(spring=k, damping=c), jnp.asarray(ts)
    ours = timed(lambda: L.simulate_dynamics(lk, u0=0.25, udot0=0.0, t1=t1, saveat=saves), repeats=repeats)
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(lk, os.path.join(tempfile.mkdtemp(), "s.xml"))))
    model.jnt_limited[:] = 0  # (the linkage's stop, at ±1, never reached)
    adr = {n: model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in ("P1", "P2")}

    def start(d):
        for a in adr.values():
            d.qpos[a] = 0.25

    return _versus_mujoco(model, ts, start, lambda d: d.qpos[adr["P2"]], exact, ours, repeats)


def gears(repeats):
    import mujoco
    from test_gears import M, planetary

    tau, t1 = 0.05, 2.0
    lk = planetary()
    ts = np.linspace(0.0, t1, 21)
    exact = tau * ts**2 / (2 * M)
    saves, drive = jnp.asarray(ts), L.Drive(torque=L.ConstantTorque(tau))
    ours = timed(lambda: L.simulate_dynamics(lk, u0=0.0, udot0=0.0, t1=t1, saveat=saves, drive=drive), repeats=repeats)
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(lk, os.path.join(tempfile.mkdtemp(), "g.xml"))))
    sun = model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "O")]

    def start(d):
        d.ctrl[0] = tau

    return _versus_mujoco(
        model,
        ts,
        start,
        lambda d: d.qpos[sun],
        exact,
        ours,
        repeats,
        mujoco_timestep=float(model.opt.timestep),
        turns=float(exact[-1] / (2 * np.pi)),
    )


def cams(repeats):
    from scipy.optimize import brentq

    law = cam.Law(angles=jnp.array([0.0, np.pi / 2, 2.0, 2.0 + 2 * np.pi / 3]), lifts=jnp.array([0.0, 0.02, 0.02, 0.0]))
    rb, rr, e = 0.05, 0.01, 0.008
    f = cam.Follower(base=jnp.asarray(rb), roller=jnp.asarray(rr), offset=jnp.asarray(e))
    theta = jnp.linspace(0.0, 2 * np.pi, 361)[:-1]
    s_law = np.asarray(law(theta))

    def curve(t):
        return cam.profile(law, f, t)

    lift, first, ours = timed(lambda: np.asarray(cam.follow(curve, f, theta)), repeats=repeats)
    # the baseline: the roller's pitch curve (the profile offset by the roller) tabulated
    # on a fine grid in NumPy, and per cam angle brentq on its crossing of the axis x = e
    grid = np.linspace(0.0, 2 * np.pi, 4096, endpoint=False)
    C = np.asarray(cam.profile(law, f, jnp.asarray(grid)))
    dC = np.roll(C, -1, axis=0) - np.roll(C, 1, axis=0)  # periodic central differences
    n = np.c_[-dC[:, 1], dC[:, 0]] / np.linalg.norm(dC, axis=1)[:, None]  # outward: the profile runs clockwise
    P = np.vstack([C + rr * n, (C + rr * n)[:1]])  # closed: the first point again at 2π
    grid = np.r_[grid, 2 * np.pi]
    s0 = np.sqrt((rb + rr) ** 2 - e**2)

    def baseline():
        out = []
        for th in np.asarray(theta):
            c, s = np.cos(th), np.sin(th)
            x = c * P[:, 0] - s * P[:, 1] - e
            y = s * P[:, 0] + c * P[:, 1]
            i = int(np.argmax(np.where((x[:-1] * x[1:] <= 0) & (y[:-1] > 0), y[:-1], -np.inf)))

            def fx(t, i=i):
                p = np.array([np.interp(t, grid, P[:, 0]), np.interp(t, grid, P[:, 1])])
                return c * p[0] - s * p[1] - e

            t = brentq(fx, grid[i], grid[i + 1], xtol=1e-15)
            out.append(s * np.interp(t, grid, P[:, 0]) + c * np.interp(t, grid, P[:, 1]) - s0)
        return np.asarray(out)

    theirs, _, base = timed(baseline, repeats=repeats)
    return dict(
        diffmech_s=ours,
        diffmech_compile_s=first,
        diffmech_error=float(np.max(np.abs(lift - s_law))),
        baseline_s=base,
        baseline_error=float(np.max(np.abs(theirs - s_law))),
        angles=int(theta.shape[0]),
    )


def cam_motion(repeats):
    from scipy.integrate import solve_ivp
    from test_cam import LAW, ROLLER, _law_derivatives

    ts = np.linspace(0.0, 1.0, 21)
    kw = dict(inertia=1e-3, mass=0.3, stiffness=300.0, preload=5.0, t1=1.0, saveat=jnp.asarray(ts))
    m, first, ours = timed(lambda: cam.simulate(LAW, ROLLER, speed0=20.0, **kw), repeats=repeats)

    def rhs(t, y):
        s, ds, dds = (float(v[0]) for v in _law_derivatives(LAW, np.asarray([y[0]])))
        a = -ds * (0.3 * dds * y[1] ** 2 + 300.0 * s + 5.0 + 0.3 * 9.81) / (1e-3 + 0.3 * ds**2)
        return [y[1], a]

    ref, _, base = timed(
        lambda: solve_ivp(rhs, (0.0, 1.0), [0.0, 20.0], "DOP853", t_eval=ts, rtol=1e-10, atol=1e-12), repeats=repeats
    )
    return dict(
        diffmech_s=ours,
        diffmech_compile_s=first,
        diffmech_energy_error=float(m.energy_error),
        scipy_s=base,
        difference=float(np.max(np.abs(np.asarray(m.theta) - ref.y[0]))),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rows = {
        "joint_loads": joint_loads(args.repeats),
        "linear_loads": linear_loads(args.repeats),
        "gears": gears(args.repeats),
        "cam_follow": cams(args.repeats),
        "cam_motion": cam_motion(args.repeats),
    }
    for k, v in rows.items():
        print(k, {a: (f"{b:.3g}" if isinstance(b, float) else b) for a, b in v.items()}, flush=True)
    write_results(os.path.join(ROOT, "benchmarks", "results", "machine_elements.json"), rows)


if __name__ == "__main__":
    main()

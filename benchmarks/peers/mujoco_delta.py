"""Peer benchmark: MuJoCo forward dynamics of the delta robot read from JSON.

Written for ``diffmech/linkage/data/delta.json`` (read at run time; no number
of the mechanism is hard-coded here).

JSON semantics used (SI units)
------------------------------
* ``A1..A3``: revolute hinges of the three arms on the base, axis ``axis``
  (right-handed); arm angle ``q_i`` is 0 in the file's configuration.
* ``U{i}a/b``: ball joints at the lower end of arm i (top of the two
  parallelogram rods); ``P{i}a/b``: ball joints where rods ``rod{i}a/b`` meet
  the platform; ``T``: tracer (platform centre), not a joint.
* Every moving link has ``mass``, ``com`` (world coordinates, file
  configuration) and ``inertia``: a 3x3 tensor about the com in WORLD axes for
  arms and platform; for a rod one number, its transverse moment about its com.

The MuJoCo model: diffmech's export (``linkage.to_mjcf``, see ``mujoco_export.py``)
----------------------------------------------------------------------------------------
* The linkage read from the file and written by ``diffmech.linkage.to_mjcf``: every
  link a body whose frame has the world orientation in the file's configuration
  (``qpos0`` IS that configuration), a spanning tree grown from the ground taking
  the arm hinges first, the cut ball joints as ``connect`` equalities between a
  site on each side, ``<inertial>`` from the file (``fullinertia`` about the com;
  a rod ``I_t (1 - n n^T)`` plus a ``1e-9 I_t n n^T`` axial moment, which MuJoCo
  needs positive definite: nothing exerts a torque about a rod's axis, so its spin
  stays 0 from rest), no geoms, contact disabled, no damping, armature, friction or
  joint limits, ``gravity`` from the file. (Until 2026-11-27 this peer wrote its
  own MJCF, the platform a free body tied to the six rods: the runs agree.)
* Motor torques: three ``<motor>`` actuators (gear 1, unlimited) on the arm
  hinges, ``ctrl = tau`` held constant.
* Softness of the connects (``softness``):
    - ``"default"``: MuJoCo's defaults, solref (0.02, 1), solimp
      (0.9, 0.95, 0.001, 0.5, 2); default timestep 2e-3 (MuJoCo's default).
    - ``"stiff"``: solref (STIFF_TIMECONST = 1e-3, 1) -- a 20x shorter time
      constant -- and solimp (0.9999, 0.9999, 0.001, 0.5, 2) (the four-bar and
      Jansen peers' stiff impedance); default timestep 5e-4.  MuJoCo's
      ``refsafe`` silently clamps timeconst to >= 2 dt, so 5e-4 is the largest
      timestep that keeps the stated time constant (``run`` reports the
      effective one as ``solref_timeconst``).
  With RK4 both settings are converged in the timestep at these defaults:
  halving dt changes q by < 1e-10 rad over 5 s; what remains is the
  softness.  The loop gap, the energy drift and the deviation from the exact solution all scale
  as timeconst^2 (stiff, 0.5 s: timeconst 2e-3 / 1e-3 / 5e-4 -> gap 4.2e-9 /
  1.0e-9 / 2.6e-10 m, drift 2.2e-5 / 5.4e-6 / 1.3e-6), i.e. they measure the
  constraint's sag, not the integrator.
* Integrator: RK4.  Nothing here is velocity-dependent except the constraint
  damping, so ``implicitfast`` would reduce to semi-implicit Euler (first
  order); RK4 is 4th order on the smooth (arm-scale) motion, which is what is
  compared with the exact reference (and it conserves E of the open tree to
  dt^4, see the checks below).  Newton solver, MuJoCo's default tolerance
  (1e-8) and iteration cap (100).

Results (``python benchmarks/peers/mujoco_delta.py``, t1 = 5 s, mujoco 4.0.0,
2026-11-27, the exported model), against diffmech's exact arm angles at
t = 0, 0.5, ..., 5 s (``delta_case.py``):
  default: loop gap 3.5e-4 m, energy drift 1.48 (the constraint sags under
  gravity; its stored energy is of the order of the peak kinetic energy),
  max |q - q_ref| 2.8e-3 rad;  stiff: loop gap 9.2e-10 m, energy drift 3.8e-6,
  max |q - q_ref| 7.4e-9 rad.  (The hand-written model before it: 3.9e-4 m,
  1.93, 2.5e-3 rad and 1.1e-9 m, 5.0e-6, 6.9e-9 rad.)

Post-processing (independent of MuJoCo's own energy bookkeeping)
----------------------------------------------------------------
After every step ``mj_kinematics``/``mj_comPos``/``mj_comVel`` refresh the
position/velocity-dependent arrays for the CURRENT qpos/qvel (after
``mj_step`` they belong to an earlier evaluation).  Then

* loop gap = max over the 6 connects of |site on rod - site on platform|;
* per moving body, com velocity ``v = cvel_lin + w x (xipos - subtree_com[root])``
  and ``w = cvel_rot``; ``T = sum 1/2 m |v|^2 + 1/2 w^T R diag(I) R^T w`` with
  R = ``ximat`` and diag(I) = ``body_inertia`` (principal), ``V = -sum m g.xipos``,
  ``E = T + V - tau.q``;
* energy_drift = max over steps |E - E(0)| / max over steps T.

Checks made: T and V agree with MuJoCo's own ``mjENBL_ENERGY`` values to
machine precision; with the equality constraints disabled (an open tree,
where E is exactly conserved) the RK4 drift falls as dt^4 (dt 4e-3 / 2e-3 /
1e-3 -> 1.6e-9 / 1.0e-10 / 6.5e-12 over 0.5 s) and the gap grows to metres.

The timed loop (``wall_s``) is a separate pass of bare ``mj_step(m, d, nstep)``
calls between the save times (recording q only); the diagnostics pass repeats
the same deterministic steps in Python and is not timed.

``batched`` is a plain loop over the designs on ONE model/data (one thread):
per design the platform mass is set (``body_mass``; the platform's inertia is
left alone -- the platform only translates, so it does not enter the dynamics)
and ``mj_setConst`` is called (untimed), then ``mj_step(m, d, nstep)`` (timed).
``mujoco.rollout`` was not used: it stores every state of every rollout
(1024 designs x 2500-10000 steps x ~60 doubles: 1-5 GB).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

try:
    from . import mujoco_export
except ImportError:  # run as a script from benchmarks/peers
    import mujoco_export

_HAVE_MUJOCO, mujoco = mujoco_export._HAVE_MUJOCO, mujoco_export.mujoco

__all__ = ["available", "load", "build", "run", "batched"]

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "diffmech" / "linkage" / "data" / "delta.json"

INTEGRATOR = "RK4"
STIFF_TIMECONST = 1e-3
STIFF_SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)
DEFAULT_TIMESTEP = {"default": 2e-3, "stiff": 5e-4}


def available() -> bool:
    """True when the ``mujoco`` Python package can be imported."""
    return _HAVE_MUJOCO


def load(path=DEFAULT_DATA) -> dict:
    with open(path) as fh:
        return json.load(fh)


# --------------------------------------------------------------------------- model


def _structure(spec):
    """Arms (with their hinge and ball joints), rods (top, bottom) and platform name."""
    joints, links = spec["joints"], spec["links"]
    ground = spec["ground"]
    hinge_of = {inp["link"]: inp["joint"] for inp in spec["inputs"]}
    arms = [inp["link"] for inp in spec["inputs"]]
    rods, platform = [], None
    for name, lk in links.items():
        if name == ground:
            continue
        if name in hinge_of:
            continue
        if not isinstance(lk["inertia"], list):  # slender rod: [top, bottom]
            rods.append(name)
        else:
            if platform is not None:
                raise ValueError("more than one platform-like link")
            platform = name
    # rod top = the joint it shares with an arm
    rod_arm = {}
    for r in rods:
        a, b = links[r]["joints"]
        for arm in arms:
            if a in links[arm]["joints"]:
                rod_arm[r] = (arm, a, b)
            elif b in links[arm]["joints"]:
                rod_arm[r] = (arm, b, a)
        if r not in rod_arm:
            raise ValueError(f"rod {r} is not attached to an arm")
        if rod_arm[r][2] not in links[platform]["joints"]:
            raise ValueError(f"rod {r} is not attached to the platform")
    tracer = [j for j in links[platform]["joints"] if joints[j]["type"] == "tracer"]
    return arms, hinge_of, rods, rod_arm, platform, (tracer[0] if tracer else None)


def build(spec: dict, softness: str = "default", timestep: float | None = None):
    """(model, extra): the exported linkage compiled by MuJoCo and the bookkeeping
    ``run`` needs (``xml``, the arm hinges' qpos addresses, the moving bodies, the
    connects' site pairs, ...)."""
    if not _HAVE_MUJOCO:
        raise RuntimeError("mujoco is not installed")
    if softness not in DEFAULT_TIMESTEP:
        raise ValueError(f"softness must be 'default' or 'stiff', got {softness!r}")
    from diffmech.linkage import Linkage

    dt = float(DEFAULT_TIMESTEP[softness] if timestep is None else timestep)
    stiff = softness == "stiff"
    model, xml = mujoco_export.compile_linkage(
        Linkage.from_dict(spec),
        timestep=dt,
        integrator=INTEGRATOR,
        solref=(STIFF_TIMECONST, 1.0) if stiff else None,
        solimp=STIFF_SOLIMP if stiff else None,
    )
    arms, _, rods, _, platform, _ = _structure(spec)
    q_adr, _ = mujoco_export.input_joints(model)
    extra = {
        "xml": xml,
        "timestep": dt,
        "softness": softness,
        "integrator": INTEGRATOR,
        "arms": arms,
        "rods": rods,
        "platform": platform,
        "q_adr": q_adr,
        "bodies": np.arange(1, model.nbody),  # every moving body
        "platform_id": mujoco_export.body_id(model, platform),
        "site_pairs": mujoco_export.connect_sites(model),
        "gravity": np.asarray(spec["gravity"], dtype=float),
    }
    return model, extra


# --------------------------------------------------------------------------- diagnostics


def _refresh(model, data):
    mujoco_export.refresh(model, data)


def _loop_gap(data, extra) -> float:
    return mujoco_export.loop_gap(data, extra["site_pairs"])


def _kinetic_potential(model, data, extra):
    """(T, V_gravity) from body poses and velocities (call _refresh first)."""
    return mujoco_export.kinetic_potential(model, data, extra["gravity"], extra["bodies"])


def _save_steps(saves, dt):
    k = np.rint(np.asarray(saves, dtype=float) / dt).astype(int)
    if np.any(np.diff(k) < 0) or k[0] < 0:
        raise ValueError("save times must be non-negative and increasing")
    if np.max(np.abs(k * dt - np.asarray(saves))) > 1e-9 * max(1.0, float(np.max(saves))):
        raise ValueError("save times must be multiples of the timestep")
    return k


# --------------------------------------------------------------------------- API


def run(spec: dict, tau, t1: float = 5.0, saves=None, softness: str = "default", timestep: float | None = None) -> dict:
    """Simulate from rest at the file's configuration with constant hinge torques ``tau``."""
    model, extra = build(spec, softness=softness, timestep=timestep)
    data = mujoco.MjData(model)
    dt = extra["timestep"]
    tau = np.asarray(tau, dtype=float)
    saves = np.linspace(0.0, t1, 11) if saves is None else np.asarray(saves, dtype=float)
    ks = _save_steps(saves, dt)
    n_steps = int(np.rint(t1 / dt))
    qa = extra["q_adr"]

    # --- timed pass: bare stepping between the save times
    mujoco.mj_resetData(model, data)
    data.ctrl[:] = tau
    q = np.empty((len(ks), 3))
    done, wall = 0, 0.0
    for i, k in enumerate(ks):
        t0 = time.perf_counter()
        if k > done:
            mujoco.mj_step(model, data, nstep=int(k - done))
        wall += time.perf_counter() - t0
        done = max(done, int(k))
        q[i] = data.qpos[qa]
    if n_steps > done:
        t0 = time.perf_counter()
        mujoco.mj_step(model, data, nstep=n_steps - done)
        wall += time.perf_counter() - t0

    # --- diagnostics pass (same steps, not timed): loop gap and energy after every step
    mujoco.mj_resetData(model, data)
    data.ctrl[:] = tau
    gap = np.empty(n_steps + 1)
    E = np.empty(n_steps + 1)
    T = np.empty(n_steps + 1)
    for i in range(n_steps + 1):
        if i:
            mujoco.mj_step(model, data)
        _refresh(model, data)
        gap[i] = _loop_gap(data, extra)
        T[i], V = _kinetic_potential(model, data, extra)
        E[i] = T[i] + V - float(tau @ data.qpos[qa])
    finite = bool(np.all(np.isfinite(E)) and np.all(np.isfinite(q)))
    tmax = float(np.max(T))
    return {
        "wall_s": wall,
        "q": q,
        "t": ks * dt,
        "loop_gap": float(np.max(gap)) if finite else float("nan"),
        "energy_drift": float(np.max(np.abs(E - E[0])) / tmax) if (finite and tmax > 0) else float("nan"),
        "max_kinetic": tmax,
        "timestep": dt,
        "steps": n_steps,
        "integrator": INTEGRATOR,
        "softness": softness,
        "solref_timeconst": max(float(model.eq_solref[0, 0]), 2.0 * dt),  # after MuJoCo's refsafe clamp
        "finite": finite,
        "mujoco_version": mujoco.__version__,
    }


def batched(
    spec: dict, tau, n: int = 1024, t1: float = 5.0, softness: str = "default", timestep: float | None = None
) -> dict:
    """``n`` designs (platform mass x (1 + 0.1 i / n)), each simulated for ``t1``
    from rest, one after the other on ONE thread (plain loop of ``mj_step``)."""
    model, extra = build(spec, softness=softness, timestep=timestep)
    data = mujoco.MjData(model)
    dt = extra["timestep"]
    n_steps = int(np.rint(t1 / dt))
    pid = extra["platform_id"]
    m0 = float(model.body_mass[pid])
    tau = np.asarray(tau, dtype=float)
    q_end = np.empty((n, 3))
    wall = 0.0
    for i in range(n):
        model.body_mass[pid] = m0 * (1.0 + 0.1 * i / n)
        mujoco.mj_setConst(model, data)
        mujoco.mj_resetData(model, data)
        data.ctrl[:] = tau
        t0 = time.perf_counter()
        mujoco.mj_step(model, data, nstep=n_steps)
        wall += time.perf_counter() - t0
        q_end[i] = data.qpos[extra["q_adr"]]
    return {
        "wall_s": wall,
        "sim_seconds_per_second": n * t1 / wall,
        "n": n,
        "steps": n_steps,
        "timestep": dt,
        "integrator": INTEGRATOR,
        "softness": softness,
        "q_end": q_end,
    }


# --------------------------------------------------------------------------- script


def _main():
    import delta_case  # the shared case (run as a script: its folder is on the path)

    spec = load()
    print(f"mujoco {mujoco.__version__}; file {DEFAULT_DATA.name}")
    np.set_printoptions(precision=6, suppress=True, linewidth=120)
    for softness in ("default", "stiff"):
        r = run(spec, delta_case.TAU, t1=5.0, softness=softness)
        dev = np.abs(r["q"] - delta_case.REFERENCE_Q)
        for key, val in r.items():
            print(f"  {key}: {val}" if key != "q" else f"  q:\n{val}")
        print(f"  max |q - q_ref| = {dev.max():.3e} rad (at t = {r['t'][np.argmax(dev.max(axis=1))]:.1f} s)\n")


if __name__ == "__main__":
    _main()

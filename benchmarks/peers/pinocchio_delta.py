"""Peer benchmark: Pinocchio constrained forward dynamics of the delta robot.

An independent model (no diffmech, no JAX) of ``diffmech/linkage/data/delta.json``
built with Pinocchio's model API (``pip install pin``, written against
Pinocchio 4.1.0) and simulated with Pinocchio's own loop-constraint solver.
The JSON is read at run time; none of its numbers are hard-coded.

JSON semantics used
-------------------
* ``joints``: ``coords`` = position in the file's configuration; ``A1..A3`` are
  revolute hinges (``axis``, right-handed) of the arms on the base; ``U{i}a``,
  ``U{i}b`` ball joints at the lower end of arm i; ``P{i}a``, ``P{i}b`` ball joints
  where rods ``rod{i}a``, ``rod{i}b`` meet the platform; ``T`` (tracer) ignored.
* ``links``: ``base`` is the ground; every other link has ``mass``, ``com`` (world,
  file configuration) and ``inertia``: a 3x3 tensor about the com in world axes
  for the arms and the platform, a single number (transverse moment about the
  com) for the two-ball rods.  ``gravity`` is a 3-vector.
* Inputs: arm i turns about A_i's axis; q_i = 0 in the file's configuration,
  right-handed about the JSON axis; the motor torque tau_i acts about that axis.

Pinocchio model (kinematic tree + loop constraints)
---------------------------------------------------
Every joint frame is placed at its joint's position with WORLD orientation, so
the neutral configuration (q = 0, identity quaternions) IS the file's
configuration and every local coordinate is "world coordinate minus joint
position".  Tree (24 velocity DOFs, nq = 31)::

    universe -> arm_i       JointModelRevoluteUnaligned(axis of A_i) at A_i   (i = 1..3)
    arm_i    -> rod_ia/b    JointModelSpherical at U_ia / U_ib  (top ball joints)
    rod1a    -> platform    JointModelSpherical at P1a  (the platform hangs from rod1a)

The five remaining rod-bottom / platform pairs (P1b, P2a, P2b, P3a, P3b) are
closed by ``RigidConstraintModel(ContactType.CONTACT_3D, ...)`` between the rod's
joint (placement P - U) and the platform's joint (placement P - P1a), reference
frame LOCAL: 15 scalar constraints, 24 - 15 = 9 DOFs = 3 arm DOFs + 6 idle rod
spins about their own axes.  The joints are added DEPTH-FIRST (A1, rod1a,
platform, rod1b, A2, ...): Pinocchio's CRBA and the constraint Cholesky assume
every subtree occupies a contiguous block of v; adding the platform last (after
rod3b) silently gave a wrong mass matrix (0.5 v^T M v != computeKineticEnergy)
and a 0.3 % energy drift that did not shrink with dt.

Inertias (``pin.Inertia(m, c, I)``, c and I in the joint frame = world axes at
q = 0): arms and platform take the JSON tensor as is.  A rod, a 1-D body in the
JSON, gets ``I = I_t (1 - a a^T) + I_a a a^T`` with a its unit axis (U -> P),
I_t the JSON number and the axial moment ``I_a = ROD_AXIAL_RATIO * I_t`` with
``ROD_AXIAL_RATIO = 1e-9`` (the spin about the rod's own axis is an idle DOF
that no force excites: the com lies on the axis and both ends are balls).
``mass_scale`` multiplies the platform's mass AND its inertia tensor (uniformly
denser platform of the same shape).

Solver
------
``pin.constraintDynamics`` (Pinocchio's proximal / KKT loop-constraint forward
dynamics, still present in Pinocchio 4.1 next to its new ADMM/PGS solvers, which
target frictional contact), initialised once with ``pin.initConstraintDynamics``,
with ``pin.ProximalSettings(accuracy=1e-12, mu=PROX_MU, max_iter=PROX_ITERS)``
and Baumgarte position/velocity correction on every constraint,
``Kp = BAUMGARTE_W**2``, ``Kd = 2 * BAUMGARTE_W`` (critically damped drift
stabilisation, ``BAUMGARTE_W`` in 1/s).

Integrator
----------
Runge-Kutta-Munthe-Kaas RK4 (classical RK4 tableau on the Lie group of q, fixed
step ``DEFAULT_DT`` = 1e-3 s).  With K_1 = v and, for stage k = 2, 3, 4,
``theta_k = c_k dt K_{k-1}``, ``q_k = pin.integrate(q, theta_k)``,
``v_k = v + c_k dt a_{k-1}``, ``a_k = constraintDynamics(q_k, v_k)``,
``K_k = dIntegrate(q, theta_k, ARG1)^-1 v_k`` (the stage velocity pulled back to
the tangent space at q), the update is
``q_next = pin.integrate(q, dt (K_1 + 2 K_2 + 2 K_3 + K_4) / 6)``,
``v_next = v + dt (a_1 + 2 a_2 + 2 a_3 + a_4) / 6``.
(The naive variant that adds the raw stage velocities v_k is only second order on
the spherical joints: it gave 4x smaller errors per halving of dt, this one 16x.)
The torques are constant, so every stage sees the same tau.

Diagnostics (computed from the stored states AFTER the timed loop)
------------------------------------------------------------------
* ``loop_gap``: max over all steps and all five closures of the world distance
  between the rod's bottom point and the platform's point (``data.oMi``);
* ``energy_drift``: max over all steps of ``|E - E(0)| / max T`` with
  ``E = T (computeKineticEnergy) + V_gravity (computePotentialEnergy) - tau . q_arms``
  (T checked against 1/2 v^T M v with M from crba).

Checks (Pinocchio 4.1.0, the run of ``__main__``: tau = delta_case.TAU, 5 s from rest)
-------------------------------------------------------------------------------
dt = 4e-3 / 2e-3 / 1e-3 / 5e-4: energy_drift 3.9e-8 / 2.4e-9 / 1.5e-10 / 1.0e-11
(fourth order), loop_gap <= 8e-11 / 5e-12 / 3e-13 / 2e-14, and max |q - table|
8.8e-10 / 2.5e-10 / 2.2e-10 / 2.2e-10 rad (the plateau is the shared floor of the
two solutions, e.g. the 12-decimal JSON data, not this integrator).  Baumgarte
off (W = 0) changes nothing measurable here (the loops stay closed to 1e-14);
started with a 5e-4 m gap, W = 20 closes it as (1 + W t) exp(-W t).

Interface used by the maintainer's benchmark: ``build``, ``run``, ``batched``.
Timings are NOT claimed here.  ``batched`` is a plain Python loop over designs on
one thread; for n = 1024 it is slow -- call it with a smaller ``n`` (and/or ``t1``)
and extrapolate linearly (the cost per design is independent of n).
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pinocchio as pin

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "diffmech", "linkage", "data", "delta.json")

DEFAULT_DT = 1e-3  # s, RK4 step
ROD_AXIAL_RATIO = 1e-9  # axial / transverse moment of a rod
BAUMGARTE_W = 20.0  # 1/s: Kp = W^2, Kd = 2 W
PROX_MU = 0.0  # proximal regularisation (0 = plain KKT solve; the 15 closure rows are independent)
PROX_ITERS = 3
PROX_ACC = 1e-12


def load(path: str = DATA) -> dict:
    with open(path) as f:
        return json.load(f)


# --------------------------------------------------------------------------- model
def _link(spec, name):
    lk = spec["links"][name]
    return lk if isinstance(lk, dict) else {"joints": lk}


def _xyz(spec, joint):
    return np.asarray(spec["joints"][joint]["coords"], dtype=float)


def _inertia(lk, origin, axis=None, scale=1.0):
    """pin.Inertia of a JSON link, in a world-aligned frame at ``origin``."""
    m = float(lk["mass"]) * scale
    c = np.asarray(lk["com"], dtype=float) - origin
    if axis is None:  # 3x3 tensor about the com, world axes
        I = np.asarray(lk["inertia"], dtype=float) * scale
    else:  # slender rod: transverse moment, tiny axial moment
        It = float(lk["inertia"]) * scale
        aa = np.outer(axis, axis)
        I = It * (np.eye(3) - aa) + ROD_AXIAL_RATIO * It * aa
    return pin.Inertia(m, c, I)


def _spherical(model, parent, name, at, parent_origin):
    return model.addJoint(parent, pin.JointModelSpherical(), pin.SE3(np.eye(3), at - parent_origin), name)


def build(spec: dict, mass_scale: float = 1.0):
    """Pinocchio model of the delta robot.  Returns ``(model, extra)``; ``extra`` holds
    the loop-constraint models, the arm joint indices / q indices, the closure points."""
    model = pin.Model()
    model.gravity = pin.Motion(np.asarray(spec["gravity"], dtype=float), np.zeros(3))
    joints = spec["joints"]
    inputs = spec["inputs"]

    ground = spec.get("ground", "base")
    arm_names = [inp["link"] for inp in inputs]
    # rods: two-joint links with a scalar inertia; the platform: the remaining moving link
    rod_names = [
        n
        for n, lk in spec["links"].items()
        if n != ground and isinstance(lk, dict) and len(lk["joints"]) == 2 and not np.ndim(lk["inertia"])
    ]
    plat = next(
        n for n, lk in spec["links"].items() if n not in (ground, *arm_names, *rod_names) and isinstance(lk, dict)
    )
    plat_joints = set(_link(spec, plat)["joints"])

    # Joints must be added depth-first (Pinocchio's CRBA / constraint Cholesky assume that
    # every subtree occupies a contiguous block of v), so the platform is added right
    # after the rod it hangs from.
    arm_jid, arm_idx_q, arm_idx_v, origin = [], [], [], {}
    rods = []  # (rod name, rod joint id, top joint, bottom joint)
    pj = None
    for inp in inputs:
        arm, hinge = inp["link"], inp["joint"]
        A = _xyz(spec, hinge)
        axis = np.asarray(joints[hinge]["axis"], dtype=float)
        axis /= np.linalg.norm(axis)
        jid = model.addJoint(0, pin.JointModelRevoluteUnaligned(axis), pin.SE3(np.eye(3), A), hinge)
        model.appendBodyToJoint(jid, _inertia(_link(spec, arm), A), pin.SE3.Identity())
        origin[jid] = A
        arm_jid.append(jid)
        arm_idx_q.append(model.joints[jid].idx_q)
        arm_idx_v.append(model.joints[jid].idx_v)
        arm_joints = set(_link(spec, arm)["joints"])
        for name in rod_names:  # rods hanging from this arm (top ball joint on the arm)
            lk = spec["links"][name]
            top, bot = lk["joints"]
            if top not in arm_joints:
                continue
            assert bot in plat_joints
            U, P = _xyz(spec, top), _xyz(spec, bot)
            rj = _spherical(model, jid, name, U, A)
            model.appendBodyToJoint(rj, _inertia(lk, U, axis=(P - U) / np.linalg.norm(P - U)), pin.SE3.Identity())
            origin[rj] = U
            rods.append((name, rj, top, bot))
            if pj is None:  # the platform hangs from the first rod by a ball joint at its bottom
                pj = _spherical(model, rj, plat, P, U)
                model.appendBodyToJoint(pj, _inertia(_link(spec, plat), P, scale=mass_scale), pin.SE3.Identity())
                origin[pj] = P
    hang = rods[0]
    assert len(rods) == len(rod_names), "every rod must hang from an arm"

    # loop closures: every other rod bottom == its platform point
    cmodels = pin.StdVec_RigidConstraintModel()
    closures = []
    for name, rj, top, bot in rods[1:]:
        P = _xyz(spec, bot)
        p1, p2 = P - origin[rj], P - origin[pj]
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_3D,
            model,
            rj,
            pin.SE3(np.eye(3), p1),
            pj,
            pin.SE3(np.eye(3), p2),
            pin.ReferenceFrame.LOCAL,
        )
        cm.name = f"{name}-{plat}@{bot}"
        bp = cm.m_baumgarte_parameters
        bp.Kp, bp.Kd = BAUMGARTE_W**2, 2.0 * BAUMGARTE_W
        cm.setBaumgarteCorrectorParameters(bp)
        cmodels.append(cm)
        closures.append((rj, p1, pj, p2))

    extra = {
        "cmodels": cmodels,
        "arm_jid": arm_jid,
        "arm_idx_q": np.array(arm_idx_q),
        "arm_idx_v": np.array(arm_idx_v),
        "closures": closures,
        "platform": plat,
        "tree": (
            f"arms on RevoluteUnaligned, rods on Spherical from arms, platform on Spherical from {hang[0]} at {hang[3]}"
        ),
    }
    return model, extra


# --------------------------------------------------------------------------- simulation
def _stepper(model, extra, tau_full):
    data = model.createData()
    cmodels = extra["cmodels"]
    cdatas = pin.StdVec_RigidConstraintData()
    for cm in cmodels:
        cdatas.append(cm.createData())
    pin.initConstraintDynamics(model, data, cmodels, cdatas)
    prox = pin.ProximalSettings(PROX_ACC, PROX_MU, PROX_ITERS)

    def acc(q, v):
        return pin.constraintDynamics(model, data, q, v, tau_full, cmodels, cdatas, prox).copy()

    arg1 = pin.ArgumentPosition.ARG1

    def tangent(q, theta, v):
        # Runge-Kutta-Munthe-Kaas: the stage velocity v at integrate(q, theta), pulled back
        # to the tangent space at q through the Jacobian of theta -> integrate(q, theta)
        return np.linalg.solve(pin.dIntegrate(model, q, theta, arg1), v)

    def rkmk4(q, v, dt):
        a1 = acc(q, v)
        th2, v2 = 0.5 * dt * v, v + 0.5 * dt * a1
        a2 = acc(pin.integrate(model, q, th2), v2)
        k2 = tangent(q, th2, v2)
        th3, v3 = 0.5 * dt * k2, v + 0.5 * dt * a2
        a3 = acc(pin.integrate(model, q, th3), v3)
        k3 = tangent(q, th3, v3)
        th4, v4 = dt * k3, v + dt * a3
        a4 = acc(pin.integrate(model, q, th4), v4)
        k4 = tangent(q, th4, v4)
        q = pin.integrate(model, q, dt / 6.0 * (v + 2.0 * k2 + 2.0 * k3 + k4))
        v = v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        return q, v

    return rkmk4


def _tau_full(model, extra, tau):
    tau_full = np.zeros(model.nv)
    tau_full[extra["arm_idx_v"]] = np.asarray(tau, dtype=float)
    return tau_full


def _simulate(model, extra, tau, t1, timestep, record):
    dt = DEFAULT_DT if timestep is None else float(timestep)
    steps = int(round(t1 / dt))
    step = _stepper(model, extra, _tau_full(model, extra, tau))
    q, v = pin.neutral(model), np.zeros(model.nv)
    Q = np.empty((steps + 1, model.nq)) if record else None
    V = np.empty((steps + 1, model.nv)) if record else None
    t0 = time.perf_counter()
    if record:
        Q[0], V[0] = q, v
        for k in range(steps):
            q, v = step(q, v, dt)
            Q[k + 1], V[k + 1] = q, v
    else:
        for k in range(steps):
            q, v = step(q, v, dt)
    wall = time.perf_counter() - t0
    return dt, steps, wall, Q, V, q


def _diagnostics(model, extra, tau, Q, V):
    data = model.createData()
    tau = np.asarray(tau, dtype=float)
    iq = extra["arm_idx_q"]
    gap, E, T = 0.0, np.empty(len(Q)), np.empty(len(Q))
    for k, (q, v) in enumerate(zip(Q, V)):
        pin.forwardKinematics(model, data, q)
        for j1, p1, j2, p2 in extra["closures"]:
            gap = max(gap, np.linalg.norm(data.oMi[j1].act(p1) - data.oMi[j2].act(p2)))
        T[k] = pin.computeKineticEnergy(model, data, q, v)
        E[k] = T[k] + pin.computePotentialEnergy(model, data, q) - tau @ q[iq]
    drift = float(np.max(np.abs(E - E[0])) / max(np.max(T), 1e-300))
    return gap, drift


def run(spec: dict, tau, t1: float = 5.0, saves=None, timestep: float | None = None) -> dict:
    """Simulate from rest at the file's configuration with constant arm torques ``tau``.

    ``wall_s`` times the stepping loop only (model build and the post-hoc diagnostics
    excluded; the loop stores every state for those diagnostics).  ``q`` are the arm
    angles at ``saves`` (default ``np.linspace(0, t1, 11)``), linearly interpolated
    between steps when a save time is not a multiple of the timestep."""
    model, extra = build(spec)
    saves = np.linspace(0.0, t1, 11) if saves is None else np.asarray(saves, dtype=float)
    dt, steps, wall, Q, V, _ = _simulate(model, extra, tau, t1, timestep, record=True)
    t = np.arange(steps + 1) * dt
    qa = Q[:, extra["arm_idx_q"]]
    q_saves = np.stack([np.interp(saves, t, qa[:, i]) for i in range(qa.shape[1])], axis=1)
    gap, drift = _diagnostics(model, extra, tau, Q, V)
    return {
        "wall_s": wall,
        "q": q_saves,
        "loop_gap": gap,
        "energy_drift": drift,
        "timestep": dt,
        "steps": steps,
        "integrator": "RK4 Munthe-Kaas on the Lie group (pin.integrate / pin.dIntegrate), fixed step",
        "solver": (
            f"pin.constraintDynamics, 5 CONTACT_3D RigidConstraintModels (LOCAL), "
            f"ProximalSettings(acc={PROX_ACC:g}, mu={PROX_MU:g}, max_iter={PROX_ITERS}), "
            f"Baumgarte Kp={BAUMGARTE_W**2:g}, Kd={2 * BAUMGARTE_W:g}"
        ),
        "tree": extra["tree"],
    }


def batched(spec: dict, tau, n: int = 1024, t1: float = 5.0, timestep: float | None = None) -> dict:
    """n designs (platform mass and inertia scaled by 1 + 0.1 i / n), each simulated for
    t1 from rest, one after the other on ONE thread (plain Python loop; no states stored,
    no diagnostics).  Model building is excluded from ``wall_s``.  For n = 1024, t1 = 5 this
    takes long: run a smaller n (or t1) and extrapolate linearly."""
    models = [build(spec, mass_scale=1.0 + 0.1 * i / n) for i in range(n)]
    wall = 0.0
    for model, extra in models:
        wall += _simulate(model, extra, tau, t1, timestep, record=False)[2]
    return {"wall_s": wall, "sim_seconds_per_second": n * t1 / wall, "n": n}


if __name__ == "__main__":
    import sys

    import delta_case  # the shared case (run as a script: its folder is on the path)

    # usage: python pinocchio_delta.py [t1 [timestep]]
    t1 = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    dt = float(sys.argv[2]) if len(sys.argv) > 2 else None
    saves = np.arange(0.0, t1 + 1e-9, 0.5)  # the table's save times up to t1
    res = run(load(), delta_case.TAU, t1=t1, saves=saves, timestep=dt)
    np.set_printoptions(precision=12, suppress=True)
    for key, val in res.items():
        print(f"{key}: {val}")
    dev = np.abs(res["q"] - delta_case.REFERENCE_Q[: len(saves)])
    print("max |q - q_ref| per save:", dev.max(axis=1))
    print(f"max deviation from the diffmech table (t <= {t1:g} s): {dev.max():.3e} rad")

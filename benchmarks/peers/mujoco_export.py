"""The MuJoCo peers' models, made by diffmech's own export (`diffmech.linkage.to_mjcf`).

The four-bar, Jansen-leg and delta peers simulate the linkage that `to_mjcf` writes
(a spanning tree of the links, the cut joints as `connect` equalities between two
sites, a `motor` per input, `qpos0` the exactly closed configuration), compiled by
MuJoCo; each peer then sets what its benchmark asks of MuJoCo on the compiled model
(integrator, the equalities' softness, masses, an affine motor law). What the peers
measure (loop gap, energy) comes from MuJoCo's state alone: the distance between
the two sites of every `connect`, and each body's kinetic and potential energy from
MuJoCo's body poses and velocities, never from diffmech's own formulas.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)  # diffmech's float64, for a peer run as a script too

try:  # pragma: no cover - depends on the environment
    import mujoco

    _HAVE_MUJOCO = True
except Exception:  # pragma: no cover
    mujoco = None
    _HAVE_MUJOCO = False

INTEGRATORS = ("Euler", "RK4")


def available() -> bool:
    """True when the ``mujoco`` Python package can be imported."""
    return _HAVE_MUJOCO


def compile_linkage(lk, *, timestep: float, integrator: str = "RK4", solref=None, solimp=None):
    """``(model, xml)``: the MJCF that `to_mjcf` writes for ``lk``, compiled by MuJoCo,
    with ``integrator`` and, where given, every equality's ``solref`` and ``solimp``
    (``None``: MuJoCo's defaults, as exported with ``softness="default"``)."""
    if not _HAVE_MUJOCO:
        raise RuntimeError("mujoco is not installed")
    if integrator not in INTEGRATORS:
        raise ValueError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
    from diffmech import linkage

    with tempfile.TemporaryDirectory() as d:
        path = linkage.to_mjcf(lk, Path(d) / "model.xml", softness="default", timestep=float(timestep))
        xml = path.read_text()
    model = mujoco.MjModel.from_xml_string(xml)
    model.opt.integrator = {"Euler": mujoco.mjtIntegrator.mjINT_EULER, "RK4": mujoco.mjtIntegrator.mjINT_RK4}[
        integrator
    ]
    if solref is not None:
        model.eq_solref[:] = np.asarray(solref, dtype=float)
    if solimp is not None:
        model.eq_solimp[:] = np.asarray(solimp, dtype=float)
    return model, xml


def connect_sites(model) -> np.ndarray:
    """(n, 2) site ids of every site-form ``connect``."""
    connect, site = mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtObj.mjOBJ_SITE
    rows = [
        (model.eq_obj1id[e], model.eq_obj2id[e])
        for e in range(model.neq)
        if model.eq_type[e] == connect and model.eq_objtype[e] == site
    ]
    return np.asarray(rows, dtype=int).reshape(-1, 2)


def loop_gap(data, pairs) -> float:
    """The largest distance between the two sites of a ``connect`` (0 without any)."""
    if len(pairs) == 0:
        return 0.0
    x = data.site_xpos
    return float(np.max(np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)))


def input_joints(model) -> tuple[np.ndarray, np.ndarray]:
    """(qpos addresses, dof addresses) of the joints the actuators drive, in order."""
    if np.any(model.actuator_trntype != mujoco.mjtTrn.mjTRN_JOINT):
        raise ValueError("an actuator that does not drive a joint")
    j = model.actuator_trnid[:, 0]
    return model.jnt_qposadr[j].copy(), model.jnt_dofadr[j].copy()


def body_id(model, name: str) -> int:
    i = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    if i < 0:
        raise ValueError(f"no body {name!r} in the exported model")
    return int(i)


def refresh(model, data) -> None:
    """Position/velocity-dependent arrays for the CURRENT qpos/qvel (after ``mj_step``
    they belong to the state at the start of the step); no constraint solve."""
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    mujoco.mj_comVel(model, data)


def kinetic_potential(model, data, gravity, bodies=None) -> tuple[float, float]:
    """(T, V): the moving bodies' kinetic energy (centre-of-mass velocity
    ``cvel_lin + w x (xipos - subtree_com[root])``, ``w = cvel_rot``, the principal
    moments ``body_inertia`` in the frame ``ximat``) and gravity's potential
    ``-sum m g.xipos``; call `refresh` first."""
    b = np.arange(1, model.nbody) if bodies is None else np.asarray(bodies)
    m = model.body_mass[b]
    w = data.cvel[b, :3]
    v = data.cvel[b, 3:] + np.cross(w, data.xipos[b] - data.subtree_com[model.body_rootid[b]])
    wl = np.einsum("bji,bj->bi", data.ximat[b].reshape(-1, 3, 3), w)
    T = 0.5 * float(np.sum(m * np.sum(v * v, axis=1))) + 0.5 * float(np.sum(model.body_inertia[b] * wl * wl))
    g = np.zeros(3)
    g[: len(gravity)] = np.asarray(gravity, dtype=float)
    V = -float(np.sum(m * (data.xipos[b] @ g)))
    return T, V

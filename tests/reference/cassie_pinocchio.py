"""Independent Pinocchio reference: closed-loop kinematics of one Cassie leg (SDF file).

What it models
--------------
The Cassie biped of ``tests/data/cassie/cassie_v2.sdf`` (SDF 1.6, example-robot-data
6.0.0): a kinematic tree rooted at the link ``pelvis`` (the fixed base: it stays at
its file pose, no free flyer) plus loop-closing ball joints.  The tree is found by a
breadth-first search from ``pelvis`` along parent -> child; a joint whose child has
already been reached closes a loop.  In this file these are ``{side}-pitch-rod-joint``
(achilles rod -> hip-pitch) and ``{side}-plantar-foot-joint`` (plantar rod -> foot),
all of type ``ball``.

For one leg (``side`` = "left" or "right"), with the knee motor ``{side}-knee-op`` at
the angle ``knee`` and every other actuated joint (``roll/yaw/pitch/foot-op``) and the
two stiff springs (``knee-shin-joint``, ``tarsus-spring-joint``) held at their file
value 0, the passive joints ``shin-tarsus-joint``, ``achilles-spring-joint``,
``tarsus-crank-joint`` and ``crank-rod-joint`` are solved so that both loops close.

Conventions (SDF 1.6)
---------------------
* ``<link><pose>`` = link frame in the MODEL frame (= world, the model has no pose);
  ``x y z roll pitch yaw`` with fixed-axis RPY, R = Rz(yaw) Ry(pitch) Rx(roll).
* ``<joint><pose>`` = joint frame in the CHILD link's frame (identity when absent).
* ``<axis><xyz>`` is expressed in the joint frame, unless
  ``<axis><use_parent_model_frame>`` is true, then in the model frame (both handled;
  this file never sets it, so every axis is in its joint frame).
* The file configuration is q = 0 for every joint (Pinocchio's neutral
  configuration).  A revolute angle turns the child right-handedly about its axis
  relative to the parent.
* A ball joint's point is the origin of its joint frame.  "As carried by the child"
  it is X_W_child(q) * p_joint; "as carried by the parent" it is the same material
  point fixed in the parent link at the file configuration:
  X_W_parent(q) * X_W_parent(0)^-1 * X_W_child(0) * p_joint.  Hence at q = 0 both
  sides coincide by construction (up to round-off) -- SDF 1.6 gives no independent
  parent-side attachment, so the file cannot *fail* to close at q = 0.

Implementation
--------------
Pinocchio's pip wheel (pin 4.1.0, ``cmeel``) is built WITHOUT the SDF parser
(``pin.buildModelFromSdf`` does not exist), so the SDF is parsed here by hand with
``xml.etree`` and the ``pin.Model`` is built with ``model.addJoint``:
every tree revolute joint becomes a ``pin.JointModelRevoluteUnaligned(axis)`` whose
Pinocchio joint frame IS the SDF joint frame at the file configuration, so q = 0 is
the file's configuration.  Frames are added at every joint origin (carried by the
child link) and at each ball point on both sides.

Solver: natural-parameter continuation from knee = 0 to the requested knee in steps
of at most 0.05 rad (keeps the file's assembly branch); at each step Gauss-Newton on
the passive joints with the 6 stacked loop-gap rows (p_parent_side - p_child_side
of the two ball joints, world frame), using ``pin.computeJointJacobians`` /
``pin.getFrameJacobian(..., LOCAL_WORLD_ALIGNED)`` and ``numpy.linalg.lstsq``
(minimum-norm least squares, 3 rows per loop).  Stopping: the largest loop gap
(Euclidean, metres) falls below ``tol`` (default 1e-13); or, when the
over-determined system has no exact solution, at the least-squares minimum, detected
as a Gauss-Newton step below 1e-11 rad (max 200 iterations per continuation step).
The residual reached is always returned.

IMPORTANT property of this file: with the springs locked, the achilles loop
(``knee-op``, ``shin-tarsus-joint``, ``achilles-spring-joint`` revolutes + the
``pitch-rod-joint`` ball) has Kutzbach mobility 0 (3 bodies, 18 - 3*5 - 3 = 0), and it
is not planar: the ``achilles-spring-joint`` axis (= the heel-spring's z axis) is
tilted 0.078 rad from the knee axis.  So for knee != 0 the loop cannot close; the
default result (``achilles="revolute"``, the SDF as written) is the least-squares
compromise with a gap of ~1 mm per 0.05 rad of knee.  ``achilles="ball"`` models
the achilles rod as ball-ball (spherical joint at the achilles-spring point; the rod's
idle spin is removed by the minimum-norm step and moves no joint origin), and then
both loops close to ``tol``.  The plantar loop (tarsus-crank, crank-rod, foot-op
axes parallel to 1.4e-5 rad) does not depend on the knee and stays at q = 0.
Joint limits are not enforced (the SDF's knee-op range is [-2.07694, 0.13963], so
knee = 0.2 is slightly beyond it).

Only ``numpy`` and ``pinocchio`` are used; the module is independent of ``diffmech``.
Run ``python tests/reference/cassie_pinocchio.py`` for the self-checks.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path

import numpy as np
import pinocchio as pin

__all__ = [
    "closed_configuration",
    "parse_sdf",
    "file_joint_positions",
    "build_model",
    "DEFAULT_SDF",
]

DEFAULT_SDF = Path(__file__).resolve().parents[1] / "data" / "cassie" / "cassie_v2.sdf"

LOCKED = ("knee-shin-joint", "tarsus-spring-joint")
HELD = ("roll-op", "yaw-op", "pitch-op", "foot-op")
DRIVEN = "knee-op"
PASSIVE = ("shin-tarsus-joint", "tarsus-crank-joint", "crank-rod-joint", "achilles-spring-joint")

STEP = 0.05  # continuation step (rad)
MAX_ITER_PER_STEP = 200
STAGNATION_DQ = 1e-11  # rad; round-off noise of a GN step at a ~mm least-squares gap is ~1e-13


# ---- SDF parsing -------------------------------------------------------------------


def _rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Fixed-axis RPY: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _pose(elem) -> np.ndarray:
    """4x4 homogeneous transform of a ``<pose>`` child of ``elem`` (identity if none)."""
    T = np.eye(4)
    p = elem.find("pose")
    if p is None:
        return T
    if p.get("frame") not in (None, ""):
        raise NotImplementedError(f"pose relative to frame {p.get('frame')!r}")
    v = [float(s) for s in p.text.split()]
    if len(v) != 6:
        raise ValueError(f"bad pose {p.text!r}")
    T[:3, :3] = _rpy(*v[3:])
    T[:3, 3] = v[:3]
    return T


def _inv(T: np.ndarray) -> np.ndarray:
    Ti = np.eye(4)
    Ti[:3, :3] = T[:3, :3].T
    Ti[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return Ti


def parse_sdf(sdf_path=DEFAULT_SDF, root: str = "pelvis") -> dict:
    """Parse the SDF 1.6 model.

    Returns a dict with
      ``links``: {name: X_W_link (4x4) at the file configuration},
      ``joints``: {name: dict(type, parent, child, X_C_J (4x4, joint frame in child
      frame), X_W_J (4x4, joint frame in world at file configuration), axis_J (unit
      axis in the joint frame, or None))},
      ``tree``: tree joint names in BFS order from ``root``,
      ``loops``: loop-closing joint names,
      ``parent_joint``: {link: tree joint whose child it is}.
    """
    sdf = ET.parse(str(sdf_path)).getroot()
    if sdf.tag != "sdf" or not sdf.get("version", "").startswith("1.6"):
        raise ValueError(f"expected SDF 1.6, got {sdf.tag} {sdf.get('version')}")
    model = sdf.find("model")
    if model.find("pose") is not None and np.any(_pose(model) != np.eye(4)):
        raise NotImplementedError("model pose")
    links = {ln.get("name"): _pose(ln) for ln in model.findall("link")}
    joints = {}
    for jt in model.findall("joint"):
        name = jt.get("name")
        child = jt.find("child").text.strip()
        parent = jt.find("parent").text.strip()
        X_C_J = _pose(jt)
        X_W_J = links[child] @ X_C_J
        axis_J = None
        ax = jt.find("axis")
        if ax is not None and ax.find("xyz") is not None:
            a = np.array([float(s) for s in ax.find("xyz").text.split()])
            upm = ax.find("use_parent_model_frame")
            if upm is not None and upm.text.strip().lower() in ("1", "true"):
                a = X_W_J[:3, :3].T @ a  # model frame -> joint frame
            axis_J = a / np.linalg.norm(a)
        joints[name] = dict(type=jt.get("type"), parent=parent, child=child, X_C_J=X_C_J, X_W_J=X_W_J, axis_J=axis_J)
    # BFS tree from root
    children = {}
    for name, j in joints.items():
        children.setdefault(j["parent"], []).append(name)
    parent_joint, tree, seen = {}, [], {root}
    queue = deque([root])
    while queue:
        link = queue.popleft()
        for name in children.get(link, []):
            c = joints[name]["child"]
            if c in seen:
                continue
            seen.add(c)
            parent_joint[c] = name
            tree.append(name)
            queue.append(c)
    loops = [n for n in joints if n not in tree]
    return dict(links=links, joints=joints, tree=tree, loops=loops, parent_joint=parent_joint)


def file_joint_positions(sdf_path=DEFAULT_SDF) -> dict:
    """World position of every joint frame origin at the file configuration (numpy
    only, no Pinocchio): X_W_child * p_joint."""
    d = parse_sdf(sdf_path)
    return {n: j["X_W_J"][:3, 3].copy() for n, j in d["joints"].items()}


# ---- Pinocchio model ---------------------------------------------------------------


def _se3(T: np.ndarray) -> pin.SE3:
    return pin.SE3(np.array(T[:3, :3]), np.array(T[:3, 3]))


def build_model(sdf_path=DEFAULT_SDF, spherical=()):
    """Build the fixed-base ``pin.Model`` of the whole tree (both legs).

    Tree joints named in ``spherical`` are modelled as ``pin.JointModelSpherical``
    (same joint frame) instead of revolute joints (used by ``achilles="ball"``).

    Returns (model, info) where info holds the parsed SDF (``sdf``), ``jid``
    {sdf joint name: pin joint id}, ``origin_frame`` {sdf joint name: frame id at the
    joint origin carried by the child link} and ``ball_frames`` {loop joint name:
    (frame id parent side, frame id child side)}.
    """
    d = parse_sdf(sdf_path)
    links, joints = d["links"], d["joints"]
    model = pin.Model()
    model.name = "cassie"
    # link -> (pin joint id, X_joint_link); pin joint frame == SDF joint frame (q = 0)
    root = "pelvis"
    attach = {root: (0, links[root])}  # universe joint frame = world
    jid = {}
    for name in d["tree"]:
        j = joints[name]
        if name in spherical or j["type"] == "ball":
            jm = pin.JointModelSpherical()
        elif j["type"] == "revolute":
            jm = pin.JointModelRevoluteUnaligned(np.array(j["axis_J"]))
        else:
            raise NotImplementedError(f"tree joint {name} of type {j['type']}")
        pj, X_pj_P = attach[j["parent"]]
        X_pjframe_W = _inv(links[j["parent"]] @ _inv(X_pj_P))  # world -> parent joint frame
        placement = X_pjframe_W @ j["X_W_J"]
        jid[name] = model.addJoint(pj, jm, _se3(placement), name)
        attach[j["child"]] = (jid[name], _inv(j["X_C_J"]))  # X_J_C
    for link, (pj, X) in attach.items():
        model.addFrame(pin.Frame(link, pj, _se3(X), pin.FrameType.BODY))
    origin_frame, ball_frames = {}, {}
    for name, j in joints.items():
        pc, X_pc_C = attach[j["child"]]
        X_child_side = X_pc_C @ j["X_C_J"]
        origin_frame[name] = model.addFrame(pin.Frame(name + "@child", pc, _se3(X_child_side), pin.FrameType.OP_FRAME))
        if name in d["loops"]:
            pp, X_pp_P = attach[j["parent"]]
            X_parent_side = X_pp_P @ _inv(links[j["parent"]]) @ j["X_W_J"]
            fp = model.addFrame(pin.Frame(name + "@parent", pp, _se3(X_parent_side), pin.FrameType.OP_FRAME))
            ball_frames[name] = (fp, origin_frame[name])
    return model, dict(sdf=d, jid=jid, origin_frame=origin_frame, ball_frames=ball_frames)


# ---- loop-closure solver -----------------------------------------------------------


def _gaps(model, data, q, ball_frames, loops):
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    return [data.oMf[ball_frames[n][0]].translation - data.oMf[ball_frames[n][1]].translation for n in loops]


def _solve(sdf_path, side, knee, tol=1e-13, achilles="revolute", step=STEP, trace=False):
    if side not in ("left", "right"):
        raise ValueError("side must be 'left' or 'right'")
    if achilles not in ("revolute", "ball"):
        raise ValueError("achilles must be 'revolute' or 'ball'")
    ach = f"{side}-achilles-spring-joint"
    model, info = build_model(sdf_path, spherical=(ach,) if achilles == "ball" else ())
    data = model.createData()
    d = info["sdf"]
    loops = [n for n in d["loops"] if n.startswith(side + "-")]
    leg = [n for n in d["joints"] if n.startswith(side + "-")]
    q = pin.neutral(model)  # = file configuration (all angles 0, identity quaternions)

    def jnt(n):
        return model.joints[info["jid"][n]]

    passive = [f"{side}-{p}" for p in PASSIVE]
    pv = np.concatenate([np.arange(jnt(n).idx_v, jnt(n).idx_v + jnt(n).nv) for n in passive])
    kq = jnt(f"{side}-{DRIVEN}").idx_q

    def gaps(q):
        r = _gaps(model, data, q, info["ball_frames"], loops)
        return r, max(float(np.linalg.norm(x)) for x in r)

    n_steps = int(math.ceil(abs(knee) / step - 1e-9)) if knee != 0 else 0
    targets = list(np.linspace(0.0, knee, n_steps + 1)[1:]) if n_steps else [0.0]
    total_iter, converged = 0, True
    for kt in targets:
        q[kq] = kt
        r, gap = gaps(q)
        it = 0
        while gap >= tol:
            if it == MAX_ITER_PER_STEP:
                converged = False
                break
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            J = np.vstack(
                [
                    (
                        pin.getFrameJacobian(model, data, info["ball_frames"][n][0], pin.LOCAL_WORLD_ALIGNED)
                        - pin.getFrameJacobian(model, data, info["ball_frames"][n][1], pin.LOCAL_WORLD_ALIGNED)
                    )[:3, pv]
                    for n in loops
                ]
            )
            dq = np.linalg.lstsq(J, -np.concatenate(r), rcond=None)[0]
            dv = np.zeros(model.nv)
            dv[pv] = dq
            q = pin.integrate(model, q, dv)
            q[kq] = kt
            it += 1
            r, gap = gaps(q)
            if trace:
                print(f"    knee={kt:+.4f} it={it:3d} |dq|={np.max(np.abs(dq)):.3e} gap={gap:.6e}")
            if np.max(np.abs(dq)) < STAGNATION_DQ:  # least-squares minimum with gap >= tol
                converged = False
                break
        total_iter += it
    r, gap = gaps(q)
    gaps_d = {n: x.copy() for n, x in zip(loops, r)}
    pos = {n: data.oMf[info["origin_frame"][n]].translation.copy() for n in leg}
    angles = {n: float(q[jnt(n).idx_q]) for n in d["tree"] if n.startswith(side + "-") and jnt(n).nq == 1}
    return dict(
        model=model,
        data=data,
        info=info,
        q=q,
        positions=pos,
        gaps=gaps_d,
        residual=gap,
        iterations=total_iter,
        converged=converged and gap < tol,
        angles=angles,
    )


def closed_configuration(sdf_path, side, knee, tol=1e-13, achilles="revolute") -> dict:
    """Closed configuration of one Cassie leg for a knee-motor angle.

    Pelvis fixed at its file pose; ``{side}-knee-op`` at ``knee`` (rad, from the file
    pose, child ``{side}-knee`` turning right-handedly about the SDF axis relative to
    ``{side}-hip-pitch``); ``roll/yaw/pitch/foot-op`` and the springs
    ``knee-shin-joint``/``tarsus-spring-joint`` at 0; the passive joints
    ``shin-tarsus``, ``tarsus-crank``, ``crank-rod``, ``achilles-spring`` solved (from
    knee = 0, continuation steps <= 0.05 rad, Gauss-Newton with lstsq) so that the two
    ball-joint loops close; stop when the largest gap < ``tol`` or, if the
    over-determined system has no exact solution, at the least-squares minimum
    (Gauss-Newton step < 1e-11 rad).

    ``achilles="revolute"`` (default) is the SDF as written.  With the springs locked
    the achilles loop (knee, shin-tarsus, achilles-spring revolutes + ball) is then
    rigid (its achilles-spring axis is tilted ~0.078 rad out of the leg plane), so for
    knee != 0 only a least-squares compromise exists and ``_residual`` is of the
    order of millimetres.  ``achilles="ball"`` replaces ``{side}-achilles-spring-joint``
    by a spherical joint at the same point (ball-ball achilles rod, a distance
    constraint); the loops then close to ``tol``.

    Returns {joint name: world position (3,) of the joint frame origin carried by the
    joint's CHILD link} for every ``{side}-*`` joint of the SDF (ball joints
    included), plus ``"_residual"`` (float: largest ball-joint gap in metres) and
    ``"_iterations"`` (int: total Gauss-Newton iterations over all continuation
    steps).
    """
    s = _solve(sdf_path, side, knee, tol, achilles=achilles)
    out = dict(s["positions"])
    out["_residual"] = s["residual"]
    out["_iterations"] = s["iterations"]
    return out


# ---- self-checks -------------------------------------------------------------------


def _axis_world(s, name):
    d = s["info"]["sdf"]
    return d["joints"][name]["X_W_J"][:3, :3] @ d["joints"][name]["axis_J"]


def main():
    np.set_printoptions(precision=10, suppress=False, linewidth=120)
    sdf = DEFAULT_SDF
    d = parse_sdf(sdf)
    print(f"tree joints: {len(d['tree'])}; loop-closing joints: {d['loops']}")
    file_pos = file_joint_positions(sdf)
    for side in ("left", "right"):
        print(f"\n=== {side} ===")
        s0 = _solve(sdf, side, 0.0, tol=np.inf)  # the file configuration q = 0, no solve
        for n, g in s0["gaps"].items():
            print(f"file gap at q=0 (knee 0)  {n:26s} |gap| = {np.linalg.norm(g):.3e} m")
        a_k = _axis_world(s0, f"{side}-knee-op")
        for p in (
            "shin-tarsus-joint",
            "achilles-spring-joint",
            "tarsus-spring-joint",
            "tarsus-crank-joint",
            "crank-rod-joint",
            "foot-op",
        ):
            a = _axis_world(s0, f"{side}-{p}")
            ang = math.atan2(np.linalg.norm(np.cross(a, a_k)), float(a @ a_k))
            print(f"  angle between axes of {side}-knee-op and {side}-{p:22s} {ang:.3e} rad")
        for achilles in ("revolute", "ball"):
            print(f"-- achilles={achilles!r}" + (" (SDF as written, default)" if achilles == "revolute" else ""))
            for knee in (-0.3, 0.0, 0.2):
                s = _solve(sdf, side, knee, achilles=achilles)
                out = closed_configuration(sdf, side, knee, achilles=achilles)
                print(
                    f"knee = {knee:+.2f}: residual = {out['_residual']:.3e} m, iterations = {out['_iterations']}"
                    f"  [check (2): {'closed to tol 1e-13' if out['_residual'] < 1e-13 else 'NOT closed to tol'}]"
                )
                for n in s["gaps"]:
                    print(f"  {n:26s} pos (child side) = {out[n]}  gap = {np.linalg.norm(s['gaps'][n]):.3e}")
                ang = s["angles"]
                print(
                    "  passive angles: "
                    + ", ".join(f"{p}={ang[f'{side}-{p}']:+.10f}" for p in PASSIVE if f"{side}-{p}" in ang)
                )
                if knee == 0.0:
                    err = max(np.max(np.abs(out[n] - file_pos[n])) for n in file_pos if n.startswith(side + "-"))
                    print(f"  check (1): max |p(knee=0) - p_file| over the {side} joints = {err:.3e} m")
                else:
                    tq = f"{side}-shin-tarsus-joint"
                    rot = pin.log3(
                        s["data"].oMf[s["model"].getFrameId(f"{side}-tarsus")].rotation
                        @ s0["data"].oMf[s0["model"].getFrameId(f"{side}-tarsus")].rotation.T
                    )
                    print(
                        f"  check (3): {tq} angle change = {ang[tq]:+.10f} rad; tarsus link rotated "
                        f"{np.linalg.norm(rot):.6f} rad in world; tarsus joint origin moved "
                        f"{np.linalg.norm(out[tq] - file_pos[tq]):.6f} m"
                    )


def _json(side, knee, achilles):
    """`--json SIDE KNEE ACHILLES`: `closed_configuration` as JSON on stdout, so that a
    test runs Pinocchio in its own process (its bundled libraries are kept out of the
    test workers' JAX processes)."""
    import json

    out = closed_configuration(DEFAULT_SDF, side, float(knee), achilles=achilles)
    print(json.dumps({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()}))


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 5 and sys.argv[1] == "--json":
        _json(*sys.argv[2:])
    else:
        main()

"""SDF in: the Cassie biped's SDF (example-robot-data 6.0.0, tests/data/cassie) read as
a linkage, its leg loops closed and swept against an independent Pinocchio model
(tests/reference/cassie_pinocchio.py: its own SDF reading, Pinocchio's kinematics and
Jacobians, Gauss–Newton on the loop gaps), its joint forces against virtual work."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diffmech import linkage as L
from diffmech.linkage import _sdf

REFERENCE = Path(__file__).parent / "reference" / "cassie_pinocchio.py"


def pinocchio_leg(side, knee):
    """The independent model's closed leg, run in its own process: Pinocchio's bundled
    libraries loaded beside jaxlib in a test worker crashed later tests there (an abort
    and a segmentation fault in JAX programs, in CI)."""
    out = subprocess.run(
        [sys.executable, str(REFERENCE), "--json", side, repr(knee), "ball"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in json.loads(out.stdout).items()}


CASSIE = Path(__file__).parent / "data" / "cassie" / "cassie_v2.sdf"
SIDES = ("left", "right")
# the actuated joints of both legs; the two springs of each leg held (stiff in the robot);
# the achilles rod's heel end read as a ball, as the robot's rod swivels there: with the
# file's revolute the loop is rigid once the springs are held (3 rotations against a
# ball's 3 rows, axes 0.078 rad apart) and near-singular with the heel spring free
INPUTS = [f"{s}-{j}" for s in SIDES for j in ("roll-op", "yaw-op", "pitch-op", "knee-op", "foot-op")]
LOCK = [f"{s}-{j}" for s in SIDES for j in ("knee-shin-joint", "tarsus-spring-joint")]
BALLS = [f"{s}-achilles-spring-joint" for s in SIDES]


@pytest.mark.skipif(importlib.util.find_spec("pinocchio") is None, reason="needs pin (the test extra)")
def test_cassies_leg_loops_close_and_sweep_with_the_knee_as_pinocchio_says():
    # both legs' achilles and plantar loops closed at the file's pose; both knees swept
    # to −0.3 rad (a full leg flexion): every joint of each leg where the independent
    # Pinocchio model puts it (it stops at 1e-13 m); then, with the left foot pushed up
    # by 300 N (no gravity), the achilles rod is a two-force member and the knee's
    # torque is the virtual work of the push
    spec = _sdf.sdf_spec(CASSIE, inputs=INPUTS, lock=LOCK, balls=BALLS)
    spec["gravity"] = [0.0, 0.0, 0.0]
    push = np.array([0.0, 0.0, 300.0])
    spec["loads"] = [{"type": "force", "joint": "left-plantar-foot-joint", "link": "left-foot", "force": push.tolist()}]
    lk = L.Linkage.from_dict(spec)
    assert lk.n_inputs == 10 and L.mobility(lk).dof == 10
    assert float(np.max(np.abs(L.residual(lk.x0(), lk.zero_input(), lk)))) <= 1e-14
    knee = np.linspace(0.0, -0.3, 61)  # continuation steps of 0.005 rad
    U = np.zeros((len(knee), 10))
    U[:, 3] = U[:, 8] = knee
    m = L.sweep(lk, inputs=U)
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-12
    C = np.asarray(m.coords)
    for side in SIDES:
        ref = pinocchio_leg(side, -0.3)
        assert ref["_residual"] <= 1e-12
        points = {n: v for n, v in ref.items() if n in lk.names}
        assert len(points) >= 9, sorted(points)
        for n, v in points.items():
            np.testing.assert_allclose(C[60, lk.joint(n)], v, atol=1e-9, err_msg=n)
    tarsus = lk.joint("left-shin-tarsus-joint")
    assert np.linalg.norm(C[60, tarsus] - C[0, tarsus]) > 0.1  # the knee moved the leg
    jf = L.joint_forces(lk, m)  # along the same continuation (steps of 0.005 rad)
    i = 30  # knee −0.15
    assert bool(jf.converged[i])
    rod = np.asarray(jf.reaction("left-pitch-rod-joint", "left-achilles-rod")[i, :3])
    ends = C[i, lk.joint("left-pitch-rod-joint")] - C[i, lk.joint("left-achilles-spring-joint")]
    e = ends / np.linalg.norm(ends)
    assert np.linalg.norm(np.cross(rod, e)) <= 1e-9 * np.linalg.norm(rod)  # along the rod
    assert abs(rod @ e) > 100.0  # the push loads the achilles rod (N)
    foot, h = lk.joint("left-plantar-foot-joint"), -0.005
    slope = (8 * (C[i + 1, foot] - C[i - 1, foot]) - (C[i + 2, foot] - C[i - 2, foot])) / (12 * h)
    assert abs(float(jf.torque[i, 3]) + push @ slope) <= 1e-6 * abs(push @ slope), (float(jf.torque[i, 3]), slope)


def test_bad_sdf_files_and_names_are_named(tmp_path):
    text = CASSIE.read_text()
    with pytest.raises(L.LinkageError, match=r"nothing\.sdf: no such file"):
        L.from_sdf(tmp_path / "nothing.sdf", inputs=INPUTS)
    (tmp_path / "cut.sdf").write_text(text[: len(text) // 2])
    with pytest.raises(L.LinkageError, match=r"cut\.sdf: not valid XML at line \d+"):
        L.from_sdf(tmp_path / "cut.sdf", inputs=INPUTS)
    with pytest.raises(L.LinkageError, match=r"no model 'atlas'; the file has \['cassie'\]"):
        L.from_sdf(CASSIE, "atlas", inputs=INPUTS)
    screw = text.replace('<joint name="left-foot-op" type="revolute">', '<joint name="left-foot-op" type="screw">')
    assert screw != text
    (tmp_path / "screw.sdf").write_text(screw)
    with pytest.raises(L.LinkageError, match=r"joint left-foot-op: type 'screw' is not a linkage joint"):
        L.from_sdf(tmp_path / "screw.sdf", inputs=INPUTS)
    auto = text.replace("<inertial>", '<inertial auto="true">', 1)
    (tmp_path / "auto.sdf").write_text(auto)
    with pytest.raises(L.LinkageError, match=r"link pelvis/inertial: computed from its collision meshes \(auto\)"):
        L.from_sdf(tmp_path / "auto.sdf", inputs=INPUTS)
    with pytest.raises(L.LinkageError, match=r"lock names joint 'left-knee', which the model does not have"):
        L.from_sdf(CASSIE, inputs=INPUTS, lock=["left-knee"])
    with pytest.raises(L.LinkageError, match=r"input 'left-pitch-rod-joint' is not a revolute or prismatic joint"):
        L.from_sdf(CASSIE, inputs=["left-pitch-rod-joint"])
    assert json.dumps(_sdf.sdf_spec(CASSIE, inputs=INPUTS, lock=LOCK, balls=BALLS))  # a plain description

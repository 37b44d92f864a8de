"""Workspaces and singularity sections (`parallel.workspace`). Expected values come
from independent formulations: the Stewart platform's joint solution by its chains'
inverse kinematics (P-joint labels against their stroke), a Monte Carlo of the 3-RPR's
reachable area in NumPy, and the singularity condition written as line geometry from
the base points (the 3-RPR's legs concurrent; the six legs' Plücker lines dependent)."""

import jax.numpy as jnp
import numpy as np
import pytest

from diffmech import examples, parallel as par, screw

pytestmark = pytest.mark.xdist_group("parallel")


def test_three_rpr_area_and_concurrent_legs_on_the_locus():
    m = examples.three_rpr()
    x, y = np.linspace(-0.1, 1.1, 121), np.linspace(-0.2, 1.0, 121)
    phi = 0.3
    w = par.workspace(m, x, y, orientation=phi, joint_angle=np.pi)
    a, b = np.asarray(m.base), np.asarray(m.platform)
    Rb = b @ np.array([[np.cos(phi), np.sin(phi)], [-np.sin(phi), np.cos(phi)]])
    # the area against a Monte Carlo written here: legs from the base corners to p + R b
    rng = np.random.default_rng(0)
    p = rng.uniform([x[0], y[0]], [x[-1], y[-1]], size=(400_000, 2))
    rho = np.linalg.norm(p[:, None, :] + Rb - a, axis=-1)
    inside = np.all((rho >= float(m.lower)) & (rho <= float(m.upper)), axis=1)
    area = inside.mean() * (x[-1] - x[0]) * (y[-1] - y[0])
    assert w.size == pytest.approx(area, rel=0.02)  # cells of 1 cm on an area of ~0.5 m²
    P = np.stack(np.meshgrid(x, y, indexing="ij"), axis=-1)
    np.testing.assert_allclose(np.asarray(w.lengths), np.linalg.norm(P[..., None, :] + Rb - a, axis=-1), atol=1e-14)
    # on the locus the three legs' lines meet in a point (or are parallel): n·q = n·a for every leg
    L = np.asarray(w.locus)
    L = L[np.isfinite(L[:, 0])]
    assert L.shape[0] > 50
    B = L[:, None, :] + Rb
    u = (B - a) / np.linalg.norm(B - a, axis=-1, keepdims=True)
    n = np.stack([-u[..., 1], u[..., 0]], axis=-1)
    lines = np.concatenate([n, -np.sum(n * a, axis=-1)[..., None]], axis=-1)
    assert np.max(np.abs(np.linalg.det(lines))) < 1e-13
    assert np.nanmax(np.abs(np.asarray(w.locus_det))) < 1e-12
    # the joint-angle limit shrinks it
    assert par.workspace(m, x, y, orientation=phi, joint_angle=0.5).size < w.size


def test_stewart_workspace_agrees_with_inverse_kinematics_and_its_locus_is_singular():
    m = par.StewartPlatform()
    R = np.asarray(screw.rotation_vector(jnp.array([0.5, 0.2, 0.0])))
    x, z = np.linspace(-0.08, 0.08, 17), np.linspace(0.02, 0.16, 15)
    w = par.workspace(m, x, x, z, orientation=R, joint_angle=np.pi, section=0.04)
    assert w.section == 0.04
    # every grid pose through the chains' closed-form inverse kinematics: the P joints within their stroke
    P = np.stack(np.meshgrid(x, x, z, indexing="ij"), axis=-1).reshape(-1, 3)
    n = P.shape[0]
    z3, z33 = jnp.zeros((n, 3)), jnp.zeros((n, 3, 3))
    traj = par.Trajectory(
        jnp.arange(n, dtype=float), jnp.broadcast_to(jnp.asarray(R), (n, 3, 3)), z33, z33, jnp.asarray(P), z3, z3
    )
    labels = np.asarray(par.inverse_kinematics(m, traj, throw=False).labels)[:, [6 * i + 3 for i in range(6)]]
    lo, hi = (np.array([float(ch.lower[3]) for ch in m.chains]), np.array([float(ch.upper[3]) for ch in m.chains]))
    ik_inside = np.all((labels >= lo) & (labels <= hi), axis=1)
    inside = np.asarray(w.inside).reshape(-1)
    assert 0 < inside.sum() < n
    np.testing.assert_array_equal(inside, ik_inside)
    # on the section's locus the six legs, as lines through the base points, are dependent
    L = np.asarray(w.locus)
    L = L[np.isfinite(L[:, 0])]
    assert L.shape[0] > 10 and np.all(L[:, 2] == 0.04)
    a = np.array([np.asarray(ch.points[0]) for ch in m.chains])
    b = np.array([np.asarray(ch.attach - m.reference) for ch in m.chains])
    worst = 0.0
    for q in L:
        u = q + b @ R.T - a
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        s = np.linalg.svd(np.concatenate([u, np.cross(a / 0.05, u)], axis=1), compute_uv=False)
        worst = max(worst, s[-1] / s[0])
    assert worst < 1e-11


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(x=[]), "`x` must be a non-empty 1-D grid axis"),
        (dict(y=[0.0, np.nan]), "`y` must be finite; entry 1"),
        (dict(z=[0.1]), "planar: give `x` and `y` only"),
        (dict(orientation=np.eye(3)), "one finite angle"),
        (dict(joint_angle=-1.0), "`joint_angle`"),
    ],
)
def test_bad_grids_are_named(kw, match):
    args = dict(x=[0.0, 0.5], y=[0.0, 0.5]) | kw
    with pytest.raises(ValueError, match=match):
        par.workspace(examples.three_rpr(), **args)


def test_stewart_grid_needs_z_and_a_rotation():
    m = par.StewartPlatform()
    with pytest.raises(ValueError, match="needs `z`"):
        par.workspace(m, [0.0], [0.0])
    with pytest.raises(ValueError, match="rotation matrix"):
        par.workspace(m, [0.0], [0.0], [0.1], orientation=2 * np.eye(3))


def _rpr_forward(m, lengths, pose):
    """The 3-RPR's pose for given leg lengths by Newton from `pose` (written here)."""
    a, b = np.asarray(m.base), np.asarray(m.platform)
    q = np.array(pose, dtype=float)
    for _ in range(30):
        c, s = np.cos(q[2]), np.sin(q[2])
        Rb = b @ np.array([[c, s], [-s, c]])
        v = q[:2] + Rb - a
        f = np.sum(v * v, axis=1) - lengths**2
        J = np.stack([2 * v[:, 0], 2 * v[:, 1], 2 * (v[:, 1] * Rb[:, 0] - v[:, 0] * Rb[:, 1])], axis=1)
        q -= np.linalg.solve(J, f)
    return q


def test_three_rpr_transmission_index_against_the_motion_one_leg_drives():
    m = examples.three_rpr()
    pose = np.array([0.55, 0.35, 0.2])
    t = par.transmissibility(m, pose[None])
    a, b = np.asarray(m.base), np.asarray(m.platform)
    c, s = np.cos(pose[2]), np.sin(pose[2])
    r = b @ np.array([[c, s], [-s, c]])  # platform joints about the reference point
    rho = np.linalg.norm(pose[:2] + r - a, axis=1)
    for i in range(3):  # lengthen leg i alone: the platform's twist by central differences of the FK
        e = 1e-6 * np.eye(3)[i]
        dq = (_rpr_forward(m, rho + e, pose) - _rpr_forward(m, rho - e, pose)) / 2e-6
        v, w = dq[:2], dq[2]
        u = (pose[:2] + r[i] - a[i]) / rho[i]
        vel = v + w * np.array([-r[i, 1], r[i, 0]])  # leg i's platform joint
        assert float(t.legs[0, i]) == pytest.approx(abs(u @ vel) / np.linalg.norm(vel), rel=1e-6)
    assert float(t.index[0]) == pytest.approx(float(np.min(t.legs[0])))
    # on the singularity locus the index vanishes and the Jacobian's condition number blows up
    w_ = par.workspace(m, np.linspace(0.2, 0.8, 31), np.linspace(0.0, 0.6, 31), orientation=0.2)
    L = np.asarray(w_.locus)
    L = L[np.isfinite(L[:, 0])][:5]
    at = par.transmissibility(m, np.concatenate([L, np.full((len(L), 1), 0.2)], axis=1))
    assert np.max(np.asarray(at.index)) < 1e-8 and np.min(np.asarray(at.condition)) > 1e8


def test_stewart_transmission_along_the_seed_spiral():
    m = par.StewartPlatform()
    kin = par.inverse_kinematics(m, par.stewart_spiral(m, jnp.linspace(0.0, 6.0, 7)))
    t = par.transmissibility(m, kin)
    idx, cond = np.asarray(t.index), np.asarray(t.condition)
    assert idx.shape == (7,) and np.all((idx > 0.05) & (idx <= 1.0)) and np.all(np.isfinite(cond) & (cond >= 1))
    # the condition number is the Jacobian's: the leg rates from the platform twist, against the IK's leg rates
    J_rates = np.asarray(kin.rates)[:, [6 * i + 3 for i in range(6)]]
    assert np.all(np.linalg.norm(J_rates, axis=1) > 0)

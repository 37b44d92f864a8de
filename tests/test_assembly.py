"""Forward kinematics of the Gough–Stewart platform: every real assembly. Expected
values come from construction (platforms built so that several chosen poses share
their leg lengths: each base joint centre equidistant from its platform joint's
positions in those poses), algebra (non-real assemblies of a real system come in
conjugate pairs: a general 6-6 platform's real count is even) and the inverse
kinematics (a round trip through the chains' own joint solution)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from diffmech import parallel as par, screw
from diffmech._result import code
from diffmech.closure import RESULTS

pytestmark = pytest.mark.xdist_group("parallel")


def _rotation(v):
    return np.asarray(screw.rotation_vector(jnp.asarray(v, dtype=float)))


def _built(rng, k=4):
    """A 6-6 platform (random platform joints) whose base joints make `k` = 4 chosen
    poses assemblies for one set of leg lengths: base joint `i` solves the three linear
    equations `|a − q_j|² = |a − q_0|²` (`q_j` its platform joint in pose `j`)."""
    c = rng.normal(size=(6, 3)) * 0.5
    poses = [(_rotation(rng.normal(size=3) * 0.6), rng.normal(size=3) * 0.3 + [0.0, 0.0, 1.0]) for _ in range(k)]
    a = []
    for i in range(6):
        q = [R @ c[i] + d for R, d in poses]
        M = np.array([2 * (q[j] - q[0]) for j in range(1, k)])
        a.append(np.linalg.solve(M, [q[j] @ q[j] - q[0] @ q[0] for j in range(1, k)]))
    a = np.array(a)
    m = par.StewartPlatform.from_anchors(a, c)  # the public constructor of any 6-6 platform
    lengths = np.linalg.norm(c @ poses[0][0].T + poses[0][1] - a, axis=1)
    for R, d in poses:  # the construction: every chosen pose has these leg lengths
        np.testing.assert_allclose(np.linalg.norm(c @ R.T + d - a, axis=1), lengths, rtol=1e-12)
    return m, lengths, poses


def _distance(result, R, d):
    """The distance from a pose to the nearest assembly found (rotation entries, position)."""
    Rs, ds = np.asarray(result.rotations), np.asarray(result.translations)
    return np.nanmin(np.max(np.abs(Rs - R), axis=(-1, -2)) + np.max(np.abs(ds - d), axis=-1))


@pytest.mark.parametrize("seed", [1, 3])
def test_every_chosen_assembly_is_found_certified_and_distinct(seed):
    m, lengths, poses = _built(np.random.default_rng(seed))
    r = par.forward_kinematics(m, lengths)
    count = int(r.count)
    assert r.status == RESULTS.successful
    for R, d in poses:
        assert _distance(r, R, d) < 1e-9
    v = np.asarray(r.valid)
    assert v.sum() == count >= len(poses) and v[:count].all() and not v[count:].any()
    assert count % 2 == 0  # the non-real solutions of the real system pair off
    assert np.max(np.asarray(r.residual)[v]) <= 1e-10 * lengths.max()
    assert float(r.separation) > 1e-6
    # each assembly closes every leg (checked here from its pose, not the solver's residual)
    a = np.array([np.asarray(ch.points[0]) for ch in m.chains])
    c = np.array([np.asarray(ch.attach) for ch in m.chains])
    for R, d in zip(np.asarray(r.rotations)[v], np.asarray(r.translations)[v]):
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-13)
        np.testing.assert_allclose(np.linalg.norm(c @ R.T + d - a, axis=1), lengths, rtol=0, atol=1e-12)
    # more starts find nothing more (the assemblies found are all there are, as far as 8× the work sees)
    assert int(par.forward_kinematics(m, lengths, starts=8192, seed=7).count) == count


def test_from_anchors_legs_are_the_anchor_distances_along_a_trajectory():
    """A platform built from its joint centres: inverse kinematics along the seed's
    spiral gives each leg's P label = |R c + d − a| − fixed_leg (the pose applied to the
    anchors by hand, not by the chains), and bad anchors are named."""
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.normal(size=(6, 2)) * 0.4, np.zeros((6, 1))], axis=1)
    c = np.concatenate([rng.normal(size=(6, 2)) * 0.2, np.full((6, 1), 0.9)], axis=1)
    m = par.StewartPlatform.from_anchors(a, c, fixed_leg=0.3)
    traj = par.stewart_spiral(m, jnp.linspace(0.0, 2.0, 3))
    k = par.inverse_kinematics(m, traj)
    R, d = np.asarray(traj.R), np.asarray(traj.position)
    ref = c.mean(axis=0)
    for i in range(3):
        X = (c - ref) @ R[i].T + d[i]  # the platform joints at this pose (reference at the centroid)
        legs = np.linalg.norm(X - a, axis=1) - 0.3
        P = np.asarray(k.labels[i]).reshape(6, 6)[:, 3]  # each leg's P joint
        np.testing.assert_allclose(P, legs, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="`platform` must be six"):
        par.StewartPlatform.from_anchors(a, c[:5])
    with pytest.raises(ValueError, match="zero length"):
        par.StewartPlatform.from_anchors(a, a)
    with pytest.raises(ValueError, match="`stroke`"):
        par.StewartPlatform.from_anchors(a, c, stroke=(0.0, 0.01))


def test_seed_platform_round_trip_with_inverse_kinematics_batched():
    m = par.StewartPlatform()
    traj = par.stewart_spiral(m, jnp.linspace(0.0, 6.0, 4))
    kin = par.inverse_kinematics(m, traj)
    offsets = np.array([float(jnp.linalg.norm(ch.attach - ch.points[0]) - ch.home[3]) for ch in m.chains])
    p_joints = [6 * i + 3 for i in range(6)]
    lengths = np.asarray(kin.labels)[:, p_joints] + offsets  # the P joints' labels from the chains' IK
    r = par.forward_kinematics(m, jnp.asarray(lengths))  # one program for the batch
    assert r.count.shape == (4,) and r.rotations.shape == (4, 40, 3, 3)
    for k in range(4):  # IK then FK: the trajectory's pose is among the assemblies
        assert (
            _distance(jax.tree.map(lambda x: x[k], r), np.asarray(kin.platform_R[k]), np.asarray(kin.platform_d[k]))
            < 1e-10
        )
    # FK then IK: every assembly of the first leg lengths, through the chains' closed-form IK, gives them back
    v = np.asarray(r.valid[0])
    Rs, ps = np.asarray(r.rotations[0])[v], np.asarray(r.positions[0])[v]
    n = Rs.shape[0]
    zeros = jnp.zeros((n, 3))
    back = par.Trajectory(
        jnp.arange(n, dtype=float),
        jnp.asarray(Rs),
        jnp.zeros((n, 3, 3)),
        jnp.zeros((n, 3, 3)),
        jnp.asarray(ps),
        zeros,
        zeros,
    )
    ik = par.inverse_kinematics(m, back, throw=False)
    legs = np.asarray(ik.labels)[:, p_joints] + offsets
    done = np.asarray(ik.converged) | (np.asarray(ik.residual) < 1e-12)
    assert done.sum() >= 1
    np.testing.assert_allclose(legs[done], np.broadcast_to(lengths[0], legs[done].shape), rtol=0, atol=1e-12)


def test_no_real_assembly_is_an_empty_result_not_an_error():
    m = par.StewartPlatform()
    # legs of 1 mm cannot join a 5 cm base hexagon to a 2 cm platform one; the second vector can
    ok = np.asarray(par.leg_lengths(m, jnp.eye(3), jnp.zeros(3)))
    r = par.forward_kinematics(m, jnp.stack([jnp.full(6, 1e-3), jnp.asarray(ok)]))
    assert np.asarray(r.count).tolist()[0] == 0 and int(r.count[1]) >= 1
    assert not np.asarray(r.valid[0]).any() and np.isnan(np.asarray(r.rotations[0])).all()
    codes = np.asarray(code(r.status))
    assert codes[0] == int(code(RESULTS.motion_limit)) and codes[1] == int(code(RESULTS.successful))


@pytest.mark.parametrize(
    "lengths, match",
    [
        (np.full(5, 0.1), r"shape \(6,\)"),
        (np.array([0.1, 0.1, -0.1, 0.1, 0.1, 0.1]), r"leg_lengths.*finite and positive.*\(2,\)"),
        (np.array([0.1, 0.1, 0.1, np.nan, 0.1, 0.1]), r"leg_lengths.*finite and positive.*\(3,\)"),
    ],
)
def test_bad_leg_lengths_are_named(lengths, match):
    with pytest.raises(ValueError, match=match):
        par.forward_kinematics(par.StewartPlatform(), lengths)


def test_a_platform_without_six_legs_is_refused():
    with pytest.raises(ValueError, match="six-legged"):
        par.forward_kinematics(par.ThreeUPSUPUS(), np.full(6, 0.1))

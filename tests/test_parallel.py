"""Parallel mechanisms (seeds 002 and 004): screw algebra, closure, mobility, wrench
solves. Expected values come from physics (invariance of the reciprocal product,
power balance), an independent formulation (tests/reference/stewart_dasgupta.py:
closed-form leg kinematics and per-leg Newton–Euler in the manner of Dasgupta), the
papers (Eqs. 13 and 18 of seed 004) and finite differences."""

import functools
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from diffmech import MotionLimitError, _screw, parallel as par, screw
from diffmech.closure import RESULTS
from diffmech.parallel import _dynamics

# the sizes used here are also those of the notebooks under DIFFMECH_SMALL (shared compiled programs)
DT, DURATION = 0.01, 2.0
STEWART_LOAD = jnp.array([0.0, 0.0, 10.0, 10.0, 0.0, 0.0])
UPU_LOAD = jnp.array([0.0, 0.0, 1000.0, 1000.0, 0.0, 0.0])


def test_reciprocal_product_is_invariant_and_joint_screws_are_reciprocal():
    rng = np.random.default_rng(0)
    R = screw.rotation_vector(jnp.asarray(rng.normal(size=3)))
    p = jnp.asarray(rng.normal(size=3))
    V, W = jnp.asarray(rng.normal(size=6)), jnp.asarray(rng.normal(size=6))
    Ad = screw.adjoint(R, p)
    assert abs(float(screw.reciprocal(Ad @ V, Ad @ W) - screw.reciprocal(V, W))) < 1e-12
    assert np.allclose(screw.transform(R, p, V), Ad @ V, atol=1e-14)
    # a force through a revolute axis, or parallel to it, does no work on its rotation
    e, r = jnp.array([0.0, 0.6, 0.8]), jnp.array([0.3, -0.2, 0.5])
    xi = screw.revolute(e, r)
    assert abs(float(screw.reciprocal(xi, screw.wrench(jnp.array([1.0, 2.0, -1.0]), r)))) < 1e-15
    assert abs(float(screw.reciprocal(xi, screw.wrench(e, jnp.array([2.0, 0.0, 1.0]))))) < 1e-15
    # a prismatic joint transmits any couple and any force across its axis
    assert abs(float(screw.reciprocal(screw.prismatic(e), jnp.concatenate([jnp.cross(e, r), jnp.ones(3)])))) < 1e-15
    # exp of a revolute screw fixes its axis; twist_of recovers the screw from the motion
    Rr, pr = screw.exp(xi, jnp.asarray(0.7), False)
    assert np.allclose(Rr @ r + pr, r, atol=1e-15)
    f = lambda t: screw.exp(xi, t, False)  # noqa: E731
    (Rt, pt), (Rd, pd) = jax.jvp(f, (jnp.asarray(0.7),), (jnp.asarray(1.0),))
    assert np.allclose(screw.twist_of(Rt, pt, Rd, pd), xi, atol=1e-14)


def test_screw_matrix_is_the_velocity_jacobian():
    mech = par.ThreeUPSUPUS()
    rng = np.random.default_rng(1)
    for ch in mech.chains:
        th, thd = jnp.asarray(rng.normal(size=ch.n) * 0.3), jnp.asarray(rng.normal(size=ch.n))
        (Rs, ps), (Rd, pd) = jax.jvp(lambda t: par.chain_poses(ch, t), (th,), (thd,))
        V = screw.twist_of(Rs[-1], ps[-1], Rd[-1], pd[-1])
        assert np.allclose(par.chain_screws(ch, th) @ thd, V, atol=1e-13)


@pytest.mark.parametrize("mech", [par.StewartPlatform(), par.ThreeUPSUPUS()], ids=["stewart", "3ups_upu_s"])
def test_closed_form_closure_jacobian_equals_forward_mode(mech):
    # the Jacobian the core's Newton steps and rates use (screw matrices) against
    # forward-mode differentiation of the residual itself, away from any solution
    from diffmech.parallel import _kinematics as kin

    rng = np.random.default_rng(3)
    for _ in range(3):
        x = jnp.asarray(rng.normal(size=mech.n_joints + 6) * 0.2)
        u = (screw.rotation_vector(jnp.asarray(rng.normal(size=3) * 0.3)), jnp.asarray(rng.normal(size=3) * 0.05))
        J = kin.residual.jacobian(x, u, mech)
        J_fwd = jax.jacfwd(kin.residual)(x, u, mech)
        assert J.shape == J_fwd.shape == (mech.n_joints + 6,) * 2
        np.testing.assert_allclose(J, J_fwd, rtol=0, atol=1e-13)


def test_mobility_of_3ups_upu_s_matches_eqs_13_and_18():
    mech = par.ThreeUPSUPUS()
    mob = par.mobility(mech)
    assert mob.dof == 2 and mob.redundancy == 2 and mob.actuated_rank == 6
    # Eq. 18: the free twists are the rotations about x and y through O
    assert np.allclose(mob.free_twists.T @ mob.free_twists, np.diag([1.0, 1, 0, 0, 0, 0]), atol=1e-12)
    # Eq. 13: the UPU chain's constraint is a force along y through (−R + L/sin θ, y, 0) = (0.4, y, 0)
    k = mob.chain_ranks["UPU1"]
    assert k == 5
    w = mob.constraint_wrenches[0]
    w = w / w[1]
    assert np.allclose(w, [0.0, 1.0, 0.0, 0.0, 0.0, 0.4], atol=1e-12)
    stewart = par.mobility(par.StewartPlatform())
    assert (stewart.dof, stewart.actuated_rank, stewart.redundancy) == (6, 6, 0)


def test_singular_architecture_is_reported_with_its_rank():
    # legs in vertical planes through the axis (platform joints at the base joints'
    # azimuths): the locked actuators cannot stop a rotation about z
    run = 0.05 - 0.02
    radial = par.StewartPlatform(tilt=float(np.arcsin(run / 0.1)))
    mob = par.mobility(radial)
    assert mob.dof == 6 and mob.actuated_rank < 6
    # the wrench system at home has the same rank deficiency (6 − actuated rank)
    assert par.wrench_rank(radial, radial.home_labels()) == (30 + mob.actuated_rank, 36)
    regular = par.StewartPlatform()
    assert par.wrench_rank(regular, regular.home_labels()) == (36, 36)


def test_bad_input_is_named():
    mech = par.StewartPlatform()
    times = jnp.arange(0.0, DURATION, DT)
    traj = par.stewart_spiral(mech, times)
    bad = jax.tree.map(lambda a: a, traj)
    bad = eqx_set(bad, "position", traj.position.at[7, 1].set(jnp.nan))
    with pytest.raises(ValueError, match=r"`position` is not finite at sample 7"):
        par.inverse_kinematics(mech, bad)
    with pytest.raises(ValueError, match="cannot join base radius"):
        par.StewartPlatform(platform_radius=0.2)
    with pytest.raises(ValueError, match="`platform_mass` must be positive"):
        par.StewartPlatform(platform_mass=-1.0)
    with pytest.raises(ValueError, match="method"):
        par.inverse_kinematics(mech, traj, method="euler")
    # a spiral ten times wider than the legs can follow: the stroke limit is named
    wide = par.stewart_spiral(mech, times, radius=0.05)
    with pytest.raises(ValueError, match=r"leaves the joint limits at sample \d+ .*leg\d\.P4"):
        par.inverse_kinematics(mech, wide)
    kin = par.inverse_kinematics(mech, wide, throw=False)
    assert not bool(kin.converged.all())


def test_mobility_names_a_pose_the_mechanism_cannot_take():
    """`mobility` at a pose: a pose the chains cannot close is named (not an error from
    inside the compiled solve), and so is one the closure reaches only in part (the
    3UPS–UPU–S's trajectory prescribes the platform normal; its S joint fixes the
    position), instead of the mobility of another pose."""
    from diffmech import _screw

    stewart = par.StewartPlatform()
    tilted = np.asarray(_screw.rotation_vector(jnp.array([2.0, 0.0, 0.0])))
    with pytest.raises(ValueError, match="cannot reach this pose"):
        par.mobility(stewart, (tilted, np.asarray(stewart.reference)))
    ups = par.ThreeUPSUPUS()
    assert par.mobility(ups, (np.eye(3), np.asarray(ups.reference))).dof == 2
    with pytest.raises(ValueError, match=r"cannot take this pose.*closes at position"):
        par.mobility(ups, (np.eye(3), np.asarray(ups.reference) + np.array([0.3, 0.0, 0.3])))


def eqx_set(tree, name, value):
    import equinox as eqx

    return eqx.tree_at(lambda t: getattr(t, name), tree, value)


@functools.lru_cache
def _stewart():
    mech = par.StewartPlatform()
    traj = par.stewart_spiral(mech, jnp.arange(0.0, DURATION, DT))
    kin = par.inverse_kinematics(mech, traj)
    dyn = {m: par.inverse_dynamics(mech, traj, STEWART_LOAD, kinematics=kin, method=m) for m in _dynamics.METHODS}
    return mech, traj, kin, dyn


def test_stewart_against_dasgupta_newton_euler():
    from reference import stewart_dasgupta as ref

    mech, traj, kin, dyn = _stewart()
    assert bool(kin.converged.all()) and float(kin.residual.max()) <= 1e-10
    # leg lengths: closure against the closed form
    legs = np.asarray(kin.labels[:, 3::6]) + 0.05
    assert np.abs(legs - ref.leg_lengths(np.asarray(traj.times))).max() < 1e-12
    # joint rates: least squares on the screw matrices = implicit function theorem
    sr = jax.jit(jax.vmap(lambda th, V: par.screw_rates(mech, th, V)))(
        kin.labels - mech.home_labels(), kin.platform_twist
    )
    assert np.abs(sr - kin.rates).max() <= 1e-10 * np.abs(kin.rates).max()
    # accelerations (jvp) against a central difference of the rates
    fd = (kin.rates[2:] - kin.rates[:-2]) / (2 * DT)
    assert np.abs(fd - kin.accelerations[1:-1]).max() < 1e-3 * np.abs(kin.accelerations).max()
    F = np.asarray(ref.actuator_forces(np.asarray(traj.times), F_ext=(0.0, 0.0, 10.0), M_ext=(10.0, 0.0, 0.0)))
    for method, d in dyn.items():
        assert bool(d.converged.all()), method
        assert np.abs(np.asarray(d.actuator_forces) - F).max() <= 1e-8 * np.abs(F).max(), method


def test_exact_mode_from_a_coarse_interpolant_reaches_round_off():
    """Exact mode at a stride (continuation through every stride-th sample, Newton on
    all samples from the cubic Hermite interpolant) equals the legs' closed form (the
    default) to round-off, however coarse the stride: Newton takes the steps the interpolant needs (one at a
    fine stride, more at a coarse one)."""
    mech, traj, kin, _ = _stewart()
    # the fixture's own run solves the legs in closed form (the default): the reference
    scale = float(jnp.abs(kin.state).max())
    for stride in (25, 150):
        k = par.inverse_kinematics(mech, traj, stride=stride, throw=False)
        assert bool(k.converged.all()), stride
        assert float(k.residual.max()) <= 2e-15, stride
        assert float(jnp.abs(k.state - kin.state).max()) <= 4e-15 * scale, stride
        assert float(jnp.abs(k.state_rate - kin.state_rate).max()) <= 1e-13 * float(jnp.abs(kin.state_rate).max())


@pytest.mark.parametrize("mech", [par.StewartPlatform(), par.ThreeUPSUPUS()], ids=["stewart", "3ups_upu_s"])
def test_wrench_solve_and_its_condition_number_against_numpy(mech):
    """One step's wrench system, restated in NumPy from the equations of
    `diffmech.parallel._dynamics` (a row `ξ_jᵀ N w_end` per passive joint, the
    platform's balance `Σ w_end`), with random screws and requirements: the solution
    satisfies it (least norm where it is underdetermined) and the condition number is
    NumPy's (`cond(A, 1)`; `sqrt(cond(A Aᵀ, 1))` for redundant actuation)."""
    rng = np.random.default_rng(3)
    Ss = [jnp.asarray(rng.normal(size=(6, ch.n))) for ch in mech.chains]
    Hs = [jnp.asarray(rng.normal(size=(ch.n, 6))) for ch in mech.chains]
    hP = jnp.asarray(rng.normal(size=6))
    wrenches, _, cond, res = eqx.filter_jit(_dynamics._solve)(mech, Ss, Hs, hP)  # one program, not ~80
    C = len(mech.chains)
    rows, rhs = [], []
    for c, (ch, S, H) in enumerate(zip(mech.chains, Ss, Hs)):
        S, H = np.asarray(S), np.asarray(H)
        for j in range(ch.n):
            if not ch.actuated[j]:
                row = np.zeros(6 * C)
                row[6 * c : 6 * c + 6] = np.concatenate([S[3:, j], S[:3, j]])  # ξ_jᵀ N
                rows.append(row)
                rhs.append(-(S[3:, j] @ H[j, :3] + S[:3, j] @ H[j, 3:]))
    A = np.vstack([np.array(rows), np.tile(np.eye(6), (1, C))])
    b = np.concatenate([rhs, np.asarray(hP)])
    ends = np.concatenate(
        [
            np.asarray(w)[-1] - np.asarray(H)[-1]
            for w, H in zip(np.split(np.asarray(wrenches), np.cumsum([ch.n for ch in mech.chains])[:-1]), Hs)
        ]
    )
    assert np.abs(A @ ends - b).max() <= 1e-12 * np.abs(b).max()
    if A.shape[0] == A.shape[1]:
        expected = np.linalg.cond(A, 1)
    else:
        assert A.shape[0] < A.shape[1]
        expected = np.sqrt(np.linalg.cond(A @ A.T, 1))
        assert np.abs(ends - np.linalg.pinv(A) @ b).max() <= 1e-12 * np.abs(ends).max()  # the least-norm solution
    assert float(cond) == pytest.approx(expected, rel=1e-10)
    assert float(res) <= 1e-14


# each one program (op by op, an eager vmap compiles each primitive: ~30 and ~100 small programs)
_rotations = jax.jit(jax.vmap(_screw.rotation_vector))
_screw_rates = eqx.filter_jit(lambda mech, th, V: jax.vmap(lambda t, v: par.screw_rates(mech, t, v))(th, V))


def _energy_power_residual(mech, kin, dyn, load):
    """Σ actuator power + external power − d(kinetic + potential energy)/dt, with the
    energy's rate taken by jvp of an energy function of the closure state (no wrenches).
    (One compiled program: op by op, the eager vmaps compiled ~130 small ones.)"""
    return float(_power_balance(mech, kin, dyn, jnp.asarray(load)))


@eqx.filter_jit
def _power_balance(mech, kin, dyn, load):

    def energy(x, xd):
        th, thd = x[: mech.n_joints], xd[: mech.n_joints]
        E = 0.0
        for ch, t, td in zip(
            mech.chains, par._kinematics.split_joints(mech, th), par._kinematics.split_joints(mech, thd)
        ):
            if not ch.body_after:
                continue
            _, c, J, V, _ = _dynamics._chain_bodies(ch, t, td)
            w, v = V[:, :3], V[:, 3:]
            vc = v + jnp.cross(w, c)
            E += jnp.sum(
                0.5 * ch.masses * jnp.sum(vc * vc, 1)
                + 0.5 * jnp.einsum("bi,bij,bj->b", w, J, w)
                - ch.masses * (c @ mech.gravity)
            )
        z, zd = par._kinematics.split(mech, x)[1:], par._kinematics.split(mech, xd)[1:]
        R, d, V = par._kinematics.platform_state(z[0], z[1], zd[0], zd[1])
        c, J, _ = _dynamics.body_state(mech.mass, mech.com, mech.inertia, R, d, V)
        vc = V[3:] + jnp.cross(V[:3], c)
        return E + 0.5 * mech.mass * vc @ vc + 0.5 * V[:3] @ J @ V[:3] - mech.mass * (c @ mech.gravity)

    dE = jax.vmap(lambda x, xd, xdd: jax.jvp(energy, (x, xd), (xd, xdd))[1])(kin.state, kin.state_rate, kin.state_accel)
    idx = jnp.asarray([sum(mech.sizes[:c]) + j for c, j in mech.actuated])
    p_act = jnp.sum(dyn.actuator_forces * kin.rates[:, idx], axis=1)
    ref = jax.vmap(lambda R, d: R @ mech.reference + d)(kin.platform_R, kin.platform_d)
    V = kin.platform_twist
    v_ref = V[:, 3:] + jnp.cross(V[:, :3], ref)
    p_ext = v_ref @ load[:3] + V[:, :3] @ load[3:]
    scale = jnp.abs(p_act).max() + jnp.abs(p_ext).max() + jnp.abs(dE).max()
    return jnp.abs(p_act + p_ext - dE).max() / scale


def test_stewart_power_balance():
    mech, traj, kin, dyn = _stewart()
    assert _energy_power_residual(mech, kin, dyn["newton_euler"], STEWART_LOAD) < 1e-10


def test_3ups_upu_s_momentum_screw_equals_newton_euler_and_power_balance():
    mech = par.ThreeUPSUPUS()
    traj = par.tilt_circle(mech, jnp.arange(0.0, DURATION, DT))
    kin = par.inverse_kinematics(mech, traj)
    assert bool(kin.converged.all()) and float(kin.residual.max()) <= 1e-10
    sr = jax.jit(jax.vmap(lambda th, V: par.screw_rates(mech, th, V)))(
        kin.labels - mech.home_labels(), kin.platform_twist
    )
    assert np.abs(sr - kin.rates).max() <= 1e-10 * np.abs(kin.rates).max()
    # the platform pivots about O, its normal follows the prescribed tilt
    E = np.einsum("nij,j->ni", kin.platform_R, mech.reference) + np.asarray(kin.platform_d)  # on the host
    assert np.abs(E - traj.position).max() < 1e-12
    A = par.inverse_dynamics(mech, traj, UPU_LOAD, kinematics=kin, method="momentum")
    B = par.inverse_dynamics(mech, traj, UPU_LOAD, kinematics=kin, method="newton_euler")
    assert A.null_dim == 2 and bool(A.converged.all()) and bool(B.converged.all())
    rel = np.abs(np.asarray(A.actuator_forces - B.actuator_forces)).max() / np.abs(np.asarray(B.actuator_forces)).max()
    assert rel <= 1e-8
    assert (
        np.abs(np.asarray(A.joint_wrenches - B.joint_wrenches)).max()
        <= 1e-8 * np.abs(np.asarray(B.joint_wrenches)).max()
    )
    assert _energy_power_residual(mech, kin, A, UPU_LOAD) < 1e-10
    # two free rotations along the path, as at home
    k = traj.times.shape[0] // 2
    assert par.mobility(mech, (traj.R[k], traj.position[k])).dof == 2


def test_a_pose_out_of_reach_is_never_converged():
    """The 3UPS–UPU–S turns about O: a trajectory whose reference point leaves the
    sphere it moves on is out of reach from the sample where it does, though its task
    residual (the normal's direction) is solved to zero there; before, every such
    sample came back converged, at residual 0, at another pose. The same for a
    Gough–Stewart pose a half turn from home, where the orientation residual
    vee(R R_tᵀ) vanishes at the home pose."""
    mech = par.ThreeUPSUPUS()
    circle = par.tilt_circle(mech, jnp.arange(0.0, DURATION, DT))
    k = 120
    shift = jnp.where(jnp.arange(circle.times.shape[0])[:, None] >= k, jnp.array([0.05, 0.0, 0.0]), 0.0)
    moved = eqx_set(circle, "position", circle.position + shift)
    kin = par.inverse_kinematics(mech, moved, throw=False)
    ok = np.asarray(kin.converged)
    assert ok[:k].all() and not ok[k:].any()
    assert kin.result == RESULTS.unreachable_pose
    assert np.asarray(kin.residual)[k] <= 1e-10  # the residual alone would have passed it
    with pytest.raises(MotionLimitError, match=rf"pose at sample {k} .* is out of reach"):
        par.inverse_kinematics(mech, moved)
    stewart = par.StewartPlatform()
    spiral = par.stewart_spiral(stewart, jnp.arange(0.0, DURATION, DT))
    half = jnp.diag(jnp.array([-1.0, -1.0, 1.0]))  # a half turn about the vertical
    turned = eqx_set(spiral, "R", jnp.einsum("ij,njk->nik", half, spiral.R))
    # Newton from home (the continuation, an explicit stride) stops at home, where the
    # orientation residual vanishes too: never converged
    assert not bool(par.inverse_kinematics(stewart, turned, stride=25, throw=False).converged.any())
    # the legs' closed form assembles the turned platform itself (each leg within its
    # stroke): converged, and the platform where the trajectory puts it
    kin = par.inverse_kinematics(stewart, turned)
    assert bool(kin.converged.all()) and float(kin.residual.max()) <= 1e-10
    assert float(jnp.abs(kin.platform_R - turned.R).max()) <= 1e-12


@pytest.mark.slow  # 2 min of compilation on 2 cores; the payload regressor (tests/test_identify.py) keeps
# forward-mode Jacobians of the wrench solve in the default suite
def test_actuator_forces_differentiate_wrt_design_and_vmap_over_designs():
    """One compiled program, vmapped over three designs (base radius, platform mass),
    returns the actuator forces along the spiral and their forward-mode Jacobian
    (closure by the implicit function theorem, rates and accelerations by jvp). Each
    lane equals the eager single-design solve, and the Jacobian equals central
    differences of the eager solve."""
    from helpers import central_diff, rel_err

    mech0, traj, _, dyn0 = _stewart()

    def forces(p):
        mech = par.StewartPlatform(base_radius=p[0], platform_mass=p[1])
        return par.inverse_dynamics(mech, traj, STEWART_LOAD).actuator_forces

    def eager(p):
        return np.asarray(forces(jnp.asarray(p)))

    designs = jnp.array([[0.05, 10.0], [0.051, 12.0], [0.049, 8.0]])
    J, F = jax.jit(jax.vmap(jax.jacfwd(lambda p: (forces(p),) * 2, has_aux=True)))(designs)
    assert F.shape == (3, traj.times.shape[0], 6) and J.shape == (3, traj.times.shape[0], 6, 2)
    # lane 0 is the default design, solved eagerly in _stewart()
    assert (
        np.abs(np.asarray(F[0]) - np.asarray(dyn0["newton_euler"].actuator_forces)).max() <= 1e-10 * np.abs(F[0]).max()
    )
    single = eager(designs[2])
    assert np.abs(np.asarray(F[2]) - single).max() <= 1e-10 * np.abs(single).max()
    fd = central_diff(eager, np.asarray(designs[1]), h=1e-6)
    assert rel_err(J[1], fd) < 1e-6


def test_one_step_forces_converge_to_exact_at_first_order():
    """The seeds' one-step scheme (explicit in Δt) with its backward-difference
    accelerations: its actuator forces approach the exact mode's at first order.
    Both grids have 200 samples (Δt = 10 ms over 2 s, 5 ms over 1 s): the compiled
    programs are shared; errors are compared on the common times."""
    mech, traj, _, dyn = _stewart()
    errs = []
    for dt, tr, exact in ((DT, traj, dyn["newton_euler"].actuator_forces), (DT / 2, None, None)):
        if tr is None:
            tr = par.stewart_spiral(mech, jnp.arange(traj.times.shape[0], dtype=float) * dt)
            exact = par.inverse_dynamics(mech, tr, STEWART_LOAD).actuator_forces
        one = par.inverse_dynamics(mech, tr, STEWART_LOAD, ik_method="one_step")
        assert bool(one.converged.all())
        k = int(round(1.0 / dt))  # samples in [0, 1) s
        e = np.abs(np.asarray(one.actuator_forces - exact)[: k : int(round(DT / dt))])
        errs.append(e.max() / np.abs(np.asarray(exact)).max())
    assert errs[0] < 1e-2
    assert 1.6 < errs[0] / errs[1] < 2.5, errs


def test_stewart_legs_in_closed_form_close_every_chain_at_random_poses():
    """Each S-P-U leg's joints from the platform pose (Paden–Kahan subproblems) close the
    chain's product of exponentials (`residual`, independent of the subproblems) to
    round-off at random poses, up to a half turn; the rotation vector's log is the
    inverse of `rotation_vector` there too."""
    from diffmech.parallel import _kinematics as K

    mech = par.StewartPlatform()
    rng = np.random.default_rng(7)
    axes = rng.normal(size=(64, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    angles = np.concatenate([[0.0], rng.uniform(0, 0.6, 59), [np.pi / 2, 3.0, np.pi - 1e-9, np.pi]])
    phi = jnp.asarray(axes * angles[:, None])
    R = _rotations(phi)
    d = jnp.asarray(rng.uniform(-0.01, 0.01, size=(64, 3))).at[0].set(0.0)
    x, ok = jax.jit(K._closed_form_state)(mech, R, d)
    assert bool(ok.all())
    # the assembly of home: home itself at the home pose, and small joint turns near it
    # (the other solution of each subproblem also closes the chains)
    assert float(jnp.abs(x[0]).max()) <= 1e-15
    assert float(jnp.abs(x[1:60, : mech.n_joints]).max()) < 1.5
    r = jax.jit(jax.vmap(lambda x_, R_, d_: K.residual(x_, (R_, d_), mech)))(x, R, d)
    assert float(jnp.abs(r).max()) <= 1e-14
    back = _rotations(jax.jit(jax.vmap(K._rotation_log))(R))
    assert float(jnp.abs(back - R).max()) <= 1e-14
    # the leg lengths against the pose directly
    legs = np.asarray(x[:, 3 : mech.n_joints : 6]) + np.asarray(
        [np.linalg.norm(ch.attach - ch.points[0]) for ch in mech.chains]
    )
    C = np.einsum("nij,cj->nci", np.asarray(R), np.asarray([ch.attach for ch in mech.chains])) + np.asarray(d)[:, None]
    A = np.asarray([ch.points[0] for ch in mech.chains])
    assert np.abs(legs - np.linalg.norm(C - A, axis=2)).max() <= 1e-15


def test_3ups_upu_s_legs_in_closed_form_close_every_chain_and_fix_the_free_turn():
    """The 3UPS–UPU–S's closed form (the turn about the prescribed normal from the U-P-U,
    then every leg by Paden–Kahan subproblems) closes every chain's product of
    exponentials (`residual`, independent of the subproblems) to round-off at random
    normals up to 0.35 rad of tilt; keeps the normal; does not depend on the target's own
    turn about it (which the task leaves free; within 0.15 rad here: near 0.45 rad of
    tilt the U-P-U admits three turns within 0.2 rad of each other, and a target turned
    far from the mechanism's can start Newton nearer another); and is the solution
    Newton reaches from home on the full closure system."""
    from diffmech import _closure, _screw
    from diffmech.parallel import _kinematics as K

    mech = par.ThreeUPSUPUS()
    rng = np.random.default_rng(11)
    n = 16
    az, tilt = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 0.35, n)
    phi = np.stack([np.cos(az), np.sin(az), np.zeros(n)], axis=1) * tilt[:, None]
    R = _rotations(jnp.asarray(phi))
    normal = R[:, :, 2]
    spin = jax.vmap(_screw.rotation)(normal, jnp.asarray(rng.uniform(-0.15, 0.15, n)))
    R2 = jnp.einsum("nij,njk->nik", spin, R)  # the same normals, another turn about them
    d = jnp.zeros((n, 3))
    state = jax.jit(K._closed_form_state)
    x, ok = state(mech, R, d)
    x2, ok2 = state(mech, R2, d)
    assert bool(ok.all()) and bool(ok2.all())
    r = jax.jit(jax.vmap(lambda x_, R_, d_: K.residual(x_, (R_, d_), mech)))(x, R, d)
    assert float(jnp.abs(r).max()) <= 1e-14
    Rs = _rotations(x[:, -6:-3])
    assert float(jnp.abs(Rs[:, :, 2] - normal).max()) <= 1e-14
    assert float(jnp.abs(x2 - x).max()) <= 1e-13
    newton = jax.jit(
        jax.vmap(lambda R_, d_: _closure.root(K.residual, jnp.zeros_like(x[0]), (R_, d_), mech, throw=False).value)
    )(R, d)
    assert float(jnp.abs(newton - x).max()) <= 1e-12


def test_a_parallel_mechanism_without_its_task_is_refused_at_construction():
    # `task` is abstract: a mechanism class that does not say what its trajectory
    # prescribes cannot be made (the fields are the Stewart platform's)
    st = par.StewartPlatform()

    class NoTask(par.AbstractParallelMechanism):
        chains: tuple
        mass: jax.Array
        com: jax.Array
        inertia: jax.Array
        reference: jax.Array
        gravity: jax.Array
        length_scale: ClassVar[float] = 1.0
        task_dim: ClassVar[int] = 6

    with pytest.raises(TypeError, match="task"):
        NoTask(st.chains, st.mass, st.com, st.inertia, st.reference, st.gravity)

"""Reduced Hamiltonian dynamics (Bai et al. Sections 4-7): invariants, an independent
kinetic energy, and the two integration modes against each other. The cross-check
against the absolute-coordinate Lagrange-multiplier model is in
test_fourbar_dynamics_reference.py."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import fourbar as fbk
from helpers import central_diff, rel_err

SEED = dm.FourBar.seed_crank_rocker()
OFF_AXIS = dm.FourBar.seed_crank_rocker(com=((0.05, 0.01), (0.1, -0.02), (0.12, 0.015)), gravity=(1.5, -9.5))


@pytest.mark.parametrize("fb", [SEED, OFF_AXIS], ids=["seed", "off-axis"])
@pytest.mark.parametrize("theta", [0.0, 1.0, 3.5])
def test_sigma_is_twice_kinetic_energy_by_finite_differences(fb, theta):
    """Σ(q) = 2T/ωA², with T from finite-difference velocities of an assembled path."""
    h = 1e-6
    qp, q0, qm = (np.asarray(fbk.assemble(fb, theta + d)) for d in (h, 0.0, -h))
    r = lambda q: np.asarray(fbk.com_positions(fb, jnp.asarray(q)))  # noqa: E731
    v = (r(qp) - r(qm)) / (2 * h)
    ang = lambda q: np.array([np.arctan2(q[i + 1], q[i]) for i in (0, 2, 4)])  # noqa: E731
    w = (np.unwrap(np.stack([ang(qm), ang(qp)]), axis=0)[1] - np.unwrap(np.stack([ang(qm), ang(qp)]), axis=0)[0]) / (2 * h)
    T2 = np.sum(np.asarray(fb.inertias) * w**2) + np.sum(np.asarray(fb.masses) * np.sum(v**2, axis=1))
    assert float(fbk.sigma(fb, jnp.asarray(q0))) == pytest.approx(T2, rel=1e-8)


def test_tangent_is_the_derivative_along_the_constraint():
    q = fbk.assemble(SEED, 0.8)
    dq = jax.jacfwd(lambda th: fbk.assemble(SEED, th))(jnp.asarray(0.8))
    np.testing.assert_allclose(fbk.tangent(SEED, q), dq, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("mode", ["minimal", "paper"])
def test_seed_crank_rocker_conserves_energy_and_closure(mode):
    tr = fbk.simulate(SEED, [1, 0, 0.3044, 0.9534, -0.3996, 0.9167], 0.0, 5.0, mode=mode, rtol=1e-11, atol=1e-13,
                      saveat=jnp.linspace(0, 5, 101))
    assert tr.result == diffrax.RESULTS.successful
    E = np.asarray(tr.energy)
    scale = float(np.max(np.abs(np.asarray(tr.Pi)))) ** 2 / (2 * float(fbk.sigma(SEED, tr.q[0])))
    assert np.max(np.abs(E - E[0])) / scale < 1e-8
    closure = float(jnp.max(tr.closure_residual))
    if mode == "minimal":
        assert closure <= 2e-16 * 5
    else:
        assert closure < 1e-8  # the paper's ODE drifts off the constraint at the integrator's tolerance
    # pendulum-like: the motion is periodic and the momentum changes sign
    assert float(tr.Pi.min()) < 0 < float(tr.Pi.max())


def test_modes_agree():
    kw = dict(saveat=jnp.linspace(0, 5, 51), rtol=1e-12, atol=1e-14)
    a = fbk.simulate(OFF_AXIS, fbk.assemble(OFF_AXIS, 0.4), fbk.momentum(OFF_AXIS, fbk.assemble(OFF_AXIS, 0.4), 3.0), 5.0, mode="minimal", **kw)
    b = fbk.simulate(OFF_AXIS, fbk.assemble(OFF_AXIS, 0.4), fbk.momentum(OFF_AXIS, fbk.assemble(OFF_AXIS, 0.4), 3.0), 5.0, mode="paper", **kw)
    assert float(jnp.max(jnp.abs(a.theta_A - b.theta_A))) < 1e-9


def test_energy_balance_with_torque_and_damping():
    """With a crank torque and joint damping, E(t) − E(0) equals the work done,
    integrated independently from the saved states (Simpson's rule)."""
    drive = fbk.Drive(torque=lambda t, th, w: 0.02 * jnp.sin(3 * t), damping=jnp.array([1e-3, 2e-3, 1e-3, 5e-4]))
    ts = jnp.linspace(0, 2.0, 2001)
    tr = fbk.simulate(SEED, fbk.assemble(SEED, 0.0), 0.0, 2.0, saveat=ts, drive=drive, rtol=1e-12, atol=1e-14)
    P = jax.vmap(lambda t, th, w, q: drive.power(SEED, t, th, w, q))(ts, tr.theta_A, tr.omega_A, tr.q)
    P, t = np.asarray(P), np.asarray(ts)
    h = t[1] - t[0]
    W = h / 3 * (P[0] + P[-1] + 4 * P[1:-1:2].sum() + 2 * P[2:-1:2].sum())
    dE = float(tr.energy[-1] - tr.energy[0])
    assert abs(W) > 1e-3 * abs(float(tr.energy[0]))  # the drive does work
    assert dE == pytest.approx(W, rel=1e-7)


def test_gravity_sign_paper_convention_mirrors_the_motion():
    """Bai et al.'s V = −g e2ᵀΣmᵢlᵢ is gravity along +y: the same start falls the other way."""
    q0 = fbk.assemble(SEED, 0.0)
    down = fbk.simulate(SEED, q0, 0.0, 0.2, saveat=jnp.array([0.0, 0.2]))
    up = fbk.simulate(dm.FourBar.seed_crank_rocker(gravity=(0.0, 9.81)), q0, 0.0, 0.2, saveat=jnp.array([0.0, 0.2]))
    assert float(down.Pi[-1]) * float(up.Pi[-1]) < 0


def test_gradient_of_trajectory_loss_matches_finite_differences():
    ts = jnp.linspace(0, 1.0, 11)

    def loss(lengths, masses):
        fb = dm.FourBar(lengths=lengths, masses=masses, inertias=(0.001, 0.016, 0.006))
        q0 = jnp.array([jnp.cos(0.3), jnp.sin(0.3), 0.0, 1.0, 0.0, 1.0])  # projected onto the closure by simulate
        tr = fbk.simulate(fb, q0, 0.0, 1.0, saveat=ts, rtol=1e-12, atol=1e-14)
        return jnp.sum(tr.theta_A**2)

    L = jnp.array([0.12, 0.25, 0.26, 0.30])
    m = jnp.array([0.1, 0.25, 0.18])
    gL, gm = jax.jit(jax.grad(loss, argnums=(0, 1)))(L, m)
    loss_j = jax.jit(loss)
    fdL = central_diff(lambda l: float(loss_j(jnp.asarray(l), m)), np.asarray(L), h=1e-6)
    fdm = central_diff(lambda mm: float(loss_j(L, jnp.asarray(mm))), np.asarray(m), h=1e-6)
    assert rel_err(gL, fdL) < 1e-5
    assert rel_err(gm, fdm) < 1e-5

"""Identification: the four-bar's base inertial parameters (their count against the
rank of the equation of motion's Jacobian, designs with equal base parameters moving
identically, recovery from θA(t) with a known torque, noise-free and noisy) and a
Gough–Stewart payload's inertial parameters from actuator forces."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import _identify, fourbar as fbk, identify

# one xdist group with tests/test_fit.py and notebook 06 (shared programs; see conftest)
pytestmark = pytest.mark.xdist_group("fit")

# a crank-rocker with off-axis centres of mass and oblique gravity (nothing symmetric)
TRUE = dm.FourBar(
    lengths=(0.12, 0.25, 0.26, 0.30),
    masses=(0.1, 0.25, 0.18),
    inertias=(0.001, 0.016, 0.006),
    com=((0.05, 0.01), (0.1, -0.02), (0.12, 0.015)),
    gravity=(1.5, -9.5),
)


def _physical(fb):
    return jnp.concatenate([fb.masses, fb.inertias, fb.com.reshape(-1)])


def _with(fb, p):
    return eqx.tree_at(lambda f: (f.masses, f.inertias, f.com), fb, (p[:3], p[3:6], p[6:].reshape(3, 2)))


def _samples(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return (
        jnp.asarray(rng.uniform(-np.pi, np.pi, n)),
        jnp.asarray(rng.uniform(-6, 6, n)),
        jnp.asarray(rng.uniform(-30, 30, n)),
    )


def test_eight_base_parameters_span_exactly_what_the_dynamics_depend_on():
    """The Jacobian of the crank torque (over random states) with respect to the 12
    physical parameters (masses, inertias, COM offsets) has rank 8, and stacking the
    Jacobian of the 8 base parameters on it leaves the rank at 8: the dynamics see
    these 8 combinations and nothing else. The regressor reproduces the torque and the
    representative design has the given base parameters."""
    th, w, a = _samples()
    p0 = _physical(TRUE)
    Jt = jax.jit(jax.jacfwd(lambda p: fbk.crank_torque(_with(TRUE, p), th, w, a)))(p0)
    Jb = jax.jit(jax.jacfwd(lambda p: identify.fourbar_base_parameters(_with(TRUE, p))))(p0)

    def rank(M):
        s = np.linalg.svd(np.asarray(M), compute_uv=False)
        return int(np.sum(s > 1e-9 * s[0]))

    assert rank(Jt) == 8 and rank(Jb) == 8
    assert rank(jnp.concatenate([Jt / jnp.abs(Jt).max(), Jb / jnp.abs(Jb).max()])) == 8
    beta = identify.fourbar_base_parameters(TRUE)
    Y = identify.fourbar_regressor(TRUE, th, w, a)
    tau = fbk.crank_torque(TRUE, th, w, a)
    assert float(jnp.max(jnp.abs(Y @ beta - tau))) <= 1e-12 * float(jnp.max(jnp.abs(tau)))
    np.testing.assert_allclose(
        identify.fourbar_base_parameters(identify.fourbar_from_base(TRUE, beta)), beta, rtol=0, atol=1e-15
    )


def test_crank_torque_is_the_torque_that_drove_the_simulation():
    """Inverse dynamics against the forward model: simulate under a known torque, then
    the crank torque at the simulated (θA, ωA, αA), αA by the five-point central
    difference of ωA (truncation O(h⁴)), equals the applied one."""
    tau = lambda t, th, w: 0.05 * jnp.tanh(2 * t) + 0.02 * jnp.sin(5 * t)  # noqa: E731
    drive = fbk.Drive(torque=tau)
    q0 = fbk.assemble(TRUE, 0.3)
    h = 3e-4
    tc = np.array([0.2, 0.5, 0.8])
    ts = jnp.asarray((tc[:, None] + h * np.arange(-2, 3)).reshape(-1))
    tr = fbk.simulate_dynamics(
        TRUE, q0, fbk.momentum(TRUE, q0, 2.0), 1.0, saveat=ts, drive=drive, rtol=1e-12, atol=1e-14
    )
    w = np.asarray(tr.omega_A).reshape(3, 5)
    alpha = (w[:, 0] - 8 * w[:, 1] + 8 * w[:, 3] - w[:, 4]) / (12 * h)
    got = fbk.crank_torque(TRUE, np.asarray(tr.theta_A).reshape(3, 5)[:, 2], w[:, 2], alpha)
    np.testing.assert_allclose(got, tau(tc, 0, 0), rtol=0, atol=1e-8)


def test_equal_base_parameters_move_identically_and_free_motion_hides_the_scale():
    """Two physically different designs with the same base parameters (coupler mass
    moved to the crank pin B, a point mass at C moved from the coupler to the rocker)
    follow the same θA(t); scaling every mass and inertia by 3 does too in free motion,
    and does not under a known torque."""
    d, c = 0.05, 0.04  # kg moved to B; kg at C moved from the coupler to the rocker
    l1, l2, l3 = 0.12, 0.25, 0.26
    m, J, rho = np.asarray(TRUE.masses), np.asarray(TRUE.inertias), np.asarray(TRUE.com)
    # crank gains d at B (distance l1 along qA); coupler loses d at B and gains c at C
    m1 = m[0] + d
    r1 = (m[0] * rho[0] + d * np.array([l1, 0.0])) / m1
    J1 = J[0] + m[0] * np.sum((rho[0] - r1) ** 2) + d * np.sum((np.array([l1, 0.0]) - r1) ** 2)
    m2 = m[1] - d + c
    r2 = (m[1] * rho[1] - d * np.zeros(2) + c * np.array([l2, 0.0])) / m2
    J2 = J[1] + m[1] * np.sum((rho[1] - r2) ** 2) - d * np.sum(r2**2) + c * np.sum((np.array([l2, 0.0]) - r2) ** 2)
    m3 = m[2] - c
    r3 = (m[2] * rho[2] - c * np.array([l3, 0.0])) / m3
    J3 = J[2] + m[2] * np.sum((rho[2] - r3) ** 2) - c * np.sum((np.array([l3, 0.0]) - r3) ** 2)
    other = dm.FourBar(
        lengths=TRUE.lengths, masses=(m1, m2, m3), inertias=(J1, J2, J3), com=(r1, r2, r3), gravity=TRUE.gravity
    )
    assert np.all(np.asarray(other.inertias) > 0) and np.abs(np.asarray(other.masses - TRUE.masses)).max() > 0.01
    np.testing.assert_allclose(
        identify.fourbar_base_parameters(other), identify.fourbar_base_parameters(TRUE), rtol=1e-13
    )
    scaled = dm.FourBar(
        lengths=TRUE.lengths, masses=3 * TRUE.masses, inertias=3 * TRUE.inertias, com=TRUE.com, gravity=TRUE.gravity
    )
    ts = jnp.linspace(0, 1.0, 11)
    q0 = fbk.assemble(TRUE, 0.3)

    def run(fb, drive=None):
        return np.asarray(
            fbk.simulate_dynamics(
                fb, q0, fbk.momentum(fb, q0, 2.0), 1.0, saveat=ts, drive=drive, rtol=1e-12, atol=1e-14
            ).theta_A
        )

    ref = run(TRUE)
    assert np.abs(run(other) - ref).max() <= 1e-9
    assert np.abs(run(scaled) - ref).max() <= 1e-9
    drive = fbk.Drive(torque=lambda t, th, w: 0.05 * jnp.ones_like(t))
    assert np.abs(run(scaled, drive) - run(TRUE, drive)).max() > 1e-3


def _measurement(sigma, n=321, t1=1.6, seed=0, free=False):
    """θA(t) of TRUE under a known torque (or free, under gravity alone), sampled at
    200 Hz, plus white noise σ."""
    drive = fbk.Drive() if free else fbk.Drive(torque=lambda t, th, w: 0.06 * jnp.tanh(2 * t) + 0.03 * jnp.sin(7 * t))
    ts = jnp.linspace(0.0, t1, n)
    q0 = fbk.assemble(TRUE, 0.3)
    tr = fbk.simulate_dynamics(
        TRUE, q0, fbk.momentum(TRUE, q0, 2.0), t1, saveat=ts, drive=drive, rtol=1e-12, atol=1e-14
    )
    z = np.random.default_rng(seed).normal(size=n)
    return ts, np.asarray(tr.theta_A) + sigma * z, drive


# the ground length (distance between the fixed pivots) is known: a crank-angle history
# cannot fix the common scale of the lengths (see `fourbar_dynamics`)
NOMINAL = dm.FourBar(lengths=(0.121, 0.249, 0.262, 0.30), gravity=TRUE.gravity)
TRUE_BASE = np.asarray(identify.fourbar_base_parameters(TRUE))


def _base_error(r):
    return np.abs(np.asarray(r.base) - TRUE_BASE).max() / np.abs(TRUE_BASE).max()


@pytest.mark.slow  # 1 min of compilation (Jacobian over 15 parameters through the ODE solve)
def test_crank_angles_cannot_fix_the_length_scale():
    """At the truth, the output-error Jacobian over (base parameters, all four lengths,
    θA0, ωA0) has exactly one null direction, and its length part is the uniform
    scaling of the lengths; without l4 the Jacobian has full rank."""
    ts, th, drive = _measurement(0.0, n=161, t1=0.8)
    tt, meas = jnp.asarray(ts[5:-5]), jnp.asarray(th[5:-5])
    q0 = fbk.assemble(TRUE, 0.3)
    tr = fbk.simulate_dynamics(
        TRUE, q0, fbk.momentum(TRUE, q0, 2.0), 0.8, saveat=tt[:1], drive=drive, rtol=1e-12, atol=1e-14
    )
    nscale = jnp.asarray(np.abs(TRUE_BASE))

    def residual(p):  # p: base / |base|, the four lengths, θA and ωA at tt[0]
        with_l4 = eqx.tree_at(lambda f: f.lengths, TRUE, p[8:12])  # l4 enters through the template
        return _identify._oe_residual(
            jnp.concatenate([p[:11], p[12:]]), with_l4, drive, None, nscale, tt, meas, 1e-10, True
        )[0]

    p = jnp.concatenate([jnp.sign(jnp.asarray(TRUE_BASE)), TRUE.lengths, tr.theta_A[:1], tr.omega_A[:1]])
    J = np.asarray(jax.jacfwd(residual)(p))
    norms = np.linalg.norm(J, axis=0)
    s, V = np.linalg.svd(J / norms)[1:]
    assert s[-1] < 1e-10 * s[0] < s[-2] * 1e-4, s
    null = V[-1] / norms  # back from the column-normalised coordinates
    null_lengths = null[8:12] / np.linalg.norm(null[8:12])
    np.testing.assert_allclose(
        np.abs(null_lengths @ np.asarray(TRUE.lengths)) / np.linalg.norm(TRUE.lengths), 1.0, atol=1e-8
    )


def test_dynamic_identification_noise_free():
    """From θA(t) under a known torque (0.8 s at 200 Hz, lengths known), the base
    parameters are recovered to ≤ 1e-7 relative from the equation-error estimate and
    the fit reaches residuals at the simulation's accuracy."""
    ts, th, drive = _measurement(0.0, n=161, t1=0.8)
    r = identify.fourbar_dynamics(
        ts, th, eqx.tree_at(lambda f: f.lengths, NOMINAL, TRUE.lengths), drive=drive, fit_lengths=False
    )
    assert r.converged and r.rms < 1e-8 and _base_error(r) <= 1e-7, (r.rms, _base_error(r), r.iterations)
    with pytest.raises(ValueError, match="uniformly"):
        identify.fourbar_dynamics(ts.at[3].add(1e-3), th, NOMINAL, drive=drive)


def test_free_motion_identifies_the_base_parameters_up_to_their_scale():
    """Free motion under gravity (0.8 s at 200 Hz, lengths known): the fit with `Z_A`
    fixed to twice its true value returns twice the true base parameters (≤ 1e-7
    relative) and reproduces θA(t) to the simulation's accuracy — the motion cannot
    tell them apart, and every ratio is identified."""
    ts, th, _ = _measurement(0.0, n=161, t1=0.8, free=True)
    r = identify.fourbar_dynamics(
        ts,
        th,
        eqx.tree_at(lambda f: f.lengths, NOMINAL, TRUE.lengths),
        scale=2 * float(TRUE_BASE[0]),
        fit_lengths=False,
    )
    err = np.abs(np.asarray(r.base) - 2 * TRUE_BASE).max() / np.abs(2 * TRUE_BASE).max()
    assert r.converged and r.rms < 1e-8 and err <= 1e-7, (r.rms, err, r.iterations)
    with pytest.raises(ValueError, match="scale"):
        identify.fourbar_dynamics(ts, th, NOMINAL, drive=fbk.Drive(torque=lambda t, th_, w: 0.1), scale=1.0)


@pytest.mark.slow  # ~3 min on 2 cores: three fits of 13 parameters, Jacobians through the ODE solve
def test_dynamic_identification_with_lengths_and_noise():
    """From θA(t) under a known torque (1.6 s at 200 Hz) and a nominal design 1 % off
    (ground length known): noise-free, base parameters ≤ 1e-6 relative and lengths
    ≤ 1e-8 m; with noise σ the error is first order in σ (the same noise pattern at
    10σ gives 10× the error) and the residual rms is σ√((N − p)/N)."""
    results = {}
    for sigma in (0.0, 1e-5, 1e-4):
        ts, th, drive = _measurement(sigma)
        r = identify.fourbar_dynamics(ts, th, NOMINAL, drive=drive)
        results[sigma] = (_base_error(r), np.abs(np.asarray(r.lengths - TRUE.lengths)).max(), r)
        assert r.converged, (sigma, r.iterations)
    err0, lerr0, r0 = results[0.0]
    assert err0 <= 1e-6 and lerr0 <= 1e-8, (err0, lerr0)
    e1, e2 = results[1e-5][0], results[1e-4][0]
    assert 7 < e2 / e1 < 13, (e1, e2)
    n_used = ts.shape[0] - 2 * 5  # the default smoothing half-window
    p = 13  # 8 base parameters, 3 lengths (l4 known), θA and ωA at t0
    expected = 1e-4 * np.sqrt((n_used - p) / n_used)
    assert 0.8 * expected < results[1e-4][2].rms < 1.2 * expected


# --- Gough–Stewart payload ----------------------------------------------------------

LOAD = jnp.array([5.0, -3.0, 20.0, 0.5, -0.2, 0.1])  # known external wrench on the platform


def exciting_motion(mech):
    """An identification trajectory: the platform turns about three axes and moves
    along three at different frequencies (the seed's spiral turns at 1 rad/s, too
    slowly to weigh the inertia against 1e-3 N of force noise)."""
    from diffmech import screw

    def rot(t):
        return (
            screw.rotation(jnp.array([0.0, 0.0, 1.0]), 0.1 * jnp.sin(3 * t))
            @ screw.rotation(jnp.array([0.0, 1.0, 0.0]), 0.1 * jnp.sin(5 * t))
            @ screw.rotation(jnp.array([1.0, 0.0, 0.0]), 0.1 * jnp.sin(4 * t))
        )

    def pos(t):
        return mech.reference + 0.005 * jnp.stack([jnp.sin(2 * t), jnp.cos(3 * t) - 1, jnp.sin(4 * t)])

    return rot, pos


def _payload_case(n=60):
    from diffmech import parallel as par

    nominal = par.StewartPlatform()  # 10 kg platform, COM at its centre
    J = jnp.array([[0.09, 0.004, -0.002], [0.004, 0.11, 0.003], [-0.002, 0.003, 0.16]])
    true = eqx.tree_at(
        lambda M: (M.mass, M.com, M.inertia),
        nominal,
        (jnp.asarray(12.5), nominal.com + jnp.array([0.004, -0.003, 0.012]), J),
    )
    traj = par.trajectory(*exciting_motion(nominal), jnp.linspace(0.0, 2 * np.pi, n, endpoint=False))
    kin = par.inverse_kinematics(nominal, traj)
    return par, nominal, true, traj, kin


def test_stewart_payload_from_actuator_forces():
    """The actuator forces of the wrench solve are affine in the 10 payload parameters
    (exactly: the regressor at the nominal platform reproduces the true platform's
    forces); noise-free forces give the payload's mass, COM and inertia to 1e-8
    relative; with white force noise σ the estimates are consistent with the reported
    covariance (mean of eᵀ(YᵀY)e/σ² over 100 noise draws is 10 ± 4 standard errors,
    χ²(10)); a translation without rotation is refused."""
    par, nominal, true, traj, kin = _payload_case()
    f = np.asarray(par.inverse_dynamics(true, traj, LOAD, kinematics=kin).actuator_forces)
    p_true = np.asarray(identify.payload_parameters(true))
    Y, f0 = identify.payload_regressor(nominal, traj, LOAD, kinematics=kin)
    np.testing.assert_allclose(np.asarray(Y @ p_true + f0), f, rtol=0, atol=1e-10 * np.abs(f).max())
    fit = identify.payload(nominal, traj, f, LOAD, kinematics=kin)
    assert fit.rank == 10
    np.testing.assert_allclose(fit.params, p_true, rtol=1e-8)
    np.testing.assert_allclose(fit.mass, true.mass, rtol=1e-10)
    np.testing.assert_allclose(fit.com, true.com, rtol=0, atol=1e-10)
    np.testing.assert_allclose(fit.inertia, true.inertia, rtol=0, atol=1e-8 * 0.16)
    sigma = 0.05  # N
    A = np.asarray(Y).reshape(-1, 10)
    rng = np.random.default_rng(1)
    chi2, ratio = [], []
    for _ in range(100):  # recordings along one trajectory share its regressor
        noisy = identify.payload(nominal, traj, f + sigma * rng.normal(size=f.shape), regressor=(Y, f0))
        e = np.asarray(noisy.params) - p_true
        chi2.append(e @ (A.T @ A) @ e / sigma**2)
        ratio.append(noisy.rms / sigma)
    assert abs(np.mean(chi2) - 10) < 4 * np.sqrt(20 / 100), np.mean(chi2)
    n_obs = A.shape[0]
    assert abs(np.mean(ratio) - np.sqrt((n_obs - 10) / n_obs)) < 0.02, np.mean(ratio)
    still = par.trajectory(
        lambda t: jnp.eye(3),
        lambda t: nominal.reference + jnp.stack([0.004 * jnp.sin(t), 0.003 * jnp.cos(t), 0.002 * jnp.sin(2 * t)]),
        traj.times,
    )  # same shapes: no compile
    with pytest.raises(ValueError, match="excites only"):
        identify.payload(nominal, still, f, LOAD)
    with pytest.raises(ValueError, match="actuator_forces"):
        identify.payload(nominal, traj, f[:, :5], LOAD, kinematics=kin)
    with pytest.raises(ValueError, match="regressor"):
        identify.payload(nominal, traj, f, regressor=(Y[:-1], f0[:-1]))
    # the regressor given is the one computed: the same fit
    np.testing.assert_array_equal(np.asarray(identify.payload(nominal, traj, f, regressor=(Y, f0)).params), fit.params)


# --- Stephenson-II six-bar from noisy tracer positions -----------------------------

SIX_INPUTS = np.linspace(0.0, 2 * np.pi, 48, endpoint=False)  # a full turn of the input


def _six_case():
    lk = dm.examples.stephenson2()
    path = np.asarray(dm.linkage.sweep(lk, inputs=SIX_INPUTS, condition=False)["J8"])[:, :2]
    rng = np.random.default_rng(3)  # a nominal design measured to 0.1 %
    start = eqx.tree_at(lambda k: k.coords, lk, lk.coords * (1 + 1e-3 * rng.normal(size=lk.coords.shape)))
    return lk, path, start


def _tracer_jacobian_fd(lk, h=1e-6):
    """Central differences of the tracer positions in the geometry parameters (an
    independent count of what the measurement sees: no forward mode, no fit)."""

    def pts(p):
        m = dm.linkage.sweep(identify.linkage_from_params(lk, p), inputs=SIX_INPUTS, condition=False)
        return np.asarray(m["J8"])[:, :2].reshape(-1)

    p0 = identify.linkage_params(lk)
    return np.stack([(pts(p0.at[i].add(h)) - pts(p0.at[i].add(-h))) / (2 * h) for i in range(p0.size)], axis=1)


def test_stephenson2_geometry_from_noisy_tracer_positions():
    """A Stephenson-II six-bar (seed 003) identified from its tracer J8 at 48 inputs
    over a full turn, from a nominal design 0.1 % off. The identifiable combinations
    are the row space of the positions' Jacobian: their count agrees with a
    central-difference Jacobian's rank. Noise-free: rms at round-off, identifiable
    parameters at round-off, the path between the measured inputs reproduced. With
    noise σ = 1e-3 (12 draws, the directions below 1e-3 of the largest singular
    value kept nominal): E[rms²] = σ²(2N − rank)/N, and the error of the fitted
    directions is χ²(rank)-distributed under the reported covariance (means within 4
    standard errors)."""
    lk, path, start = _six_case()
    fit0 = identify.linkage_tracer(SIX_INPUTS, path, start, "J8")
    _, sv, Vt = np.linalg.svd(_tracer_jacobian_fd(lk))
    # central differences resolve singular values down to ~ε/h = 1e-10 of the largest
    assert fit0.rank == int(np.sum(sv > sv[0] * 1e-9)), (fit0.rank, sv / sv[0])
    assert float(fit0.singular_values[fit0.rank]) < 1e-12 * float(fit0.singular_values[0])
    assert 0 < fit0.rank < fit0.params.size  # some combinations are invisible to J8
    P = Vt[: fit0.rank]  # identifiable directions at the truth
    truth = np.asarray(identify.linkage_params(lk))
    err = P @ (np.asarray(fit0.params) - truth)
    # positions up to 11.7: rms ≤ 1e-13 of them (1.04e-12 seen on one CPU, below 1e-12 on another)
    scale = float(np.max(np.abs(np.asarray(lk.coords))))
    assert fit0.converged and fit0.rms < 1e-13 * scale, (fit0.rms, fit0.iterations)
    # every identifiable direction is found to round-off in the positions it moves (the
    # weakest, singular value 7e-8 of the largest, to 1e-6 in the parameters), the
    # well-seen ones (≥ 1e-3 of the largest) to 1e-10 in the parameters
    seen = sv[: fit0.rank]
    assert np.abs(err * seen).max() < 1e-11 and np.abs(err[seen >= 1e-3 * sv[0]]).max() < 1e-10, err
    between = SIX_INPUTS + np.pi / SIX_INPUTS.size  # half-way between the samples (notebook 06: the same)
    true_b = np.asarray(dm.linkage.sweep(lk, inputs=between, condition=False)["J8"])[:, :2]
    fit_b = np.asarray(dm.linkage.sweep(fit0.linkage, inputs=between, condition=False)["J8"])[:, :2]
    np.testing.assert_allclose(fit_b, true_b, atol=1e-10)

    sigma, n, draws = 1e-3, SIX_INPUTS.size, 12
    rng = np.random.default_rng(11)
    ratio, chi2 = [], []
    for _ in range(draws):
        fit = identify.linkage_tracer(SIX_INPUTS, path + sigma * rng.normal(size=path.shape), start, "J8", rcond=1e-3)
        assert fit.converged, fit.iterations
        r = fit.rank
        ratio.append(fit.rms**2 / (sigma**2 * (2 * n - r) / n))
        e = np.asarray(fit.params) - truth
        s2 = fit.rms**2 * n / (2 * n - r)  # the fit's own noise estimate; the χ² uses the known σ
        C = np.asarray(fit.covariance) * (sigma**2 / s2)
        chi2.append(float(e @ np.linalg.pinv(C, rcond=1e-10, hermitian=True) @ e))
    assert abs(np.mean(ratio) - 1) < 4 * np.sqrt(2 / (2 * n - r) / draws), np.mean(ratio)
    assert abs(np.mean(chi2) - r) < 4 * np.sqrt(2 * r / draws), (np.mean(chi2), r)
    with pytest.raises(ValueError, match="tracer"):
        identify.linkage_tracer(SIX_INPUTS, path, start, "J99")
    with pytest.raises(ValueError, match="at least"):
        identify.linkage_tracer(SIX_INPUTS[:3], path[:3], start, "J8")

"""Disc cams with translating followers, each result against a formulation it does not
share code with: the motion law back from its own profile by the contact equation, the
pressure angle from the profile's normal, the pitch curve's curvature from its polar
closed form, the flat face's from `R_b + s + s″`, the cam torque from the power
balance, gradients from central differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import cam
from diffmech._geometry import perp, rotation

# the linkage worker: notebook 09's cam runs after these tests, on their programs
pytestmark = pytest.mark.xdist_group("linkage")

# rise 20 mm over 90°, dwell, return over 120°, dwell
LAW = cam.Law(angles=jnp.array([0.0, np.pi / 2, 2.0, 2.0 + 2 * np.pi / 3]), lifts=jnp.array([0.0, 0.02, 0.02, 0.0]))
TH = jnp.linspace(0.0, 2 * np.pi, 181)[:-1]
ROLLER = cam.Follower(base=jnp.asarray(0.05), roller=jnp.asarray(0.01), offset=jnp.asarray(0.008))
FLAT = cam.Follower(base=jnp.asarray(0.05), flat=True)


def _law_derivatives(law, th):
    """s, s′, s″ of the law in closed form (not by autodiff)."""
    a = np.r_[np.asarray(law.angles), 2 * np.pi]
    lifts = np.r_[np.asarray(law.lifts), np.asarray(law.lifts)[0]]
    th = np.mod(np.asarray(th), 2 * np.pi)
    i = np.clip(np.searchsorted(a, th, side="right") - 1, 0, len(a) - 2)
    beta, h = a[i + 1] - a[i], lifts[i + 1] - lifts[i]
    x = (th - a[i]) / beta
    if law.kind == "cycloidal":
        f, f1, f2 = (
            x - np.sin(2 * np.pi * x) / (2 * np.pi),
            1 - np.cos(2 * np.pi * x),
            2 * np.pi * np.sin(2 * np.pi * x),
        )
    else:
        f, f1, f2 = (
            10 * x**3 - 15 * x**4 + 6 * x**5,
            30 * x**2 - 60 * x**3 + 30 * x**4,
            60 * x - 180 * x**2 + 120 * x**3,
        )
    return lifts[i] + h * f, h * f1 / beta, h * f2 / beta**2


@pytest.mark.parametrize("kind", ["cycloidal", "polynomial345"])
def test_the_law_comes_back_from_its_own_profile_by_the_contact_equation(kind):
    law = cam.Law(angles=LAW.angles, lifts=LAW.lifts, kind=kind)
    s = _law_derivatives(law, TH)[0]
    np.testing.assert_allclose(np.asarray(law(TH)), s, rtol=0, atol=1e-15)
    knife = cam.Follower(base=jnp.asarray(0.05), offset=jnp.asarray(-0.01))
    # (the 3-4-5 law with the roller only: each follower compiles its own contact program)
    for f in (ROLLER, FLAT, knife) if kind == "cycloidal" else (ROLLER,):
        # the contact equation on the profile as a curve (from the best of its samples)
        got = cam.follow(lambda t, f=f: cam.profile(law, f, t), f, TH)
        np.testing.assert_allclose(np.asarray(got), s, rtol=0, atol=1e-12)
    # the profile's base circle: at a dwell at zero lift, every point is R_b from the centre
    dwell = jnp.linspace(2.0 + 2 * np.pi / 3 + 0.1, 2 * np.pi - 0.1, 7)
    for f in (ROLLER, FLAT, knife):
        np.testing.assert_allclose(np.linalg.norm(np.asarray(cam.profile(law, f, dwell)), axis=1), 0.05, atol=1e-15)


def test_the_pressure_angle_matches_the_profile_normal_and_the_curvature_its_closed_forms():
    # the pressure angle: the angle between the follower's axis and the profile's normal
    # at the contact (from the profile's tangent, turned into the world)
    def geometric(f, t):
        c, tangent = jax.jvp(lambda u: cam.profile(LAW, f, u), (t,), (1.0,))
        n = rotation(t) @ (perp(tangent) / jnp.linalg.norm(tangent))  # outward: the profile runs clockwise
        return jnp.arctan2(-n[0], n[1])

    for f in (ROLLER, FLAT):
        np.testing.assert_allclose(
            np.asarray(jax.vmap(lambda t: geometric(f, t))(TH)),
            np.asarray(cam.pressure_angle(LAW, f, TH)),
            rtol=0,
            atol=1e-12,
        )
    s, ds, dds = _law_derivatives(LAW, TH)
    s0 = np.sqrt(0.06**2 - 0.008**2)
    np.testing.assert_allclose(
        np.asarray(cam.pressure_angle(LAW, ROLLER, TH)), np.arctan((ds - 0.008) / (s0 + s)), atol=1e-14
    )
    assert float(np.max(np.abs(np.asarray(cam.pressure_angle(LAW, ROLLER, TH))))) > 0.2  # it is not trivially 0
    # a flat face: R_b + s + s″
    np.testing.assert_allclose(np.asarray(cam.curvature_radius(LAW, FLAT, TH)), 0.05 + s + dds, rtol=0, atol=1e-13)
    # a radial roller's pitch curve in polar form: r(ψ) = R_b + ρ + s, ψ = π/2 − θ, so
    # r′ = −s′, r″ = s″ and ρ_p = (r² + r′²)^{3/2} / (r² + 2r′² − r r″); the profile's is ρ_p − ρ
    radial = cam.Follower(base=jnp.asarray(0.05), roller=jnp.asarray(0.01))
    r = 0.06 + s
    polar = (r**2 + ds**2) ** 1.5 / (r**2 + 2 * ds**2 - r * dds)
    np.testing.assert_allclose(np.asarray(cam.pitch_radius(LAW, radial, TH)), polar, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(cam.curvature_radius(LAW, radial, TH)), polar - 0.01, rtol=0, atol=1e-12)


def test_undercut_and_steep_cams_are_flagged_as_their_closed_forms_say():
    fast = cam.Law(angles=jnp.array([0.0, 0.6, 1.2, 1.8]), lifts=jnp.array([0.0, 0.05, 0.05, 0.0]))
    th = jnp.linspace(0.0, 2 * np.pi, 721)[:-1]
    s, ds, dds = _law_derivatives(fast, th)
    for rb in (0.2, 1.0):  # a flat face is undercut (a cusp) where R_b + s + s″ ≤ 0
        c = cam.check(fast, cam.Follower(base=jnp.asarray(rb), flat=True))
        assert bool(c.undercut) == bool(np.min(rb + s + dds) <= 0), rb
        assert float(c.min_radius) == pytest.approx(np.min(rb + s + dds), abs=1e-12)
    assert bool(cam.check(fast, cam.Follower(base=jnp.asarray(0.2), flat=True)).undercut)
    for rb, rr in ((0.01, 0.02), (0.03, 0.01)):  # a roller: a convex pitch radius below its own
        r = rb + rr + s
        polar = (r**2 + ds**2) ** 1.5 / (r**2 + 2 * ds**2 - r * dds)
        c = cam.check(fast, cam.Follower(base=jnp.asarray(rb), roller=jnp.asarray(rr)))
        assert bool(c.undercut) == bool(np.any((polar > 0) & (polar <= rr))), (rb, rr)
    assert bool(cam.check(fast, cam.Follower(base=jnp.asarray(0.01), roller=jnp.asarray(0.02))).undercut)
    assert not bool(cam.check(fast, cam.Follower(base=jnp.asarray(0.03), roller=jnp.asarray(0.01))).undercut)
    steep = cam.check(fast, cam.Follower(base=jnp.asarray(0.03), roller=jnp.asarray(0.01)))
    assert bool(steep.steep) and not bool(
        cam.check(LAW, cam.Follower(base=jnp.asarray(0.1), roller=jnp.asarray(0.01))).steep
    )


def test_the_cam_torque_balances_the_followers_power_and_contact_loss_is_flagged():
    for f in (ROLLER, FLAT):
        slow = cam.contact_force(LAW, f, TH, speed=5.0, mass=0.3, stiffness=300.0, preload=5.0)
        _, ds, dds = _law_derivatives(LAW, TH)
        # the torque from the contact point and the normal force equals F ṡ / ω (power)
        np.testing.assert_allclose(np.asarray(slow.torque), np.asarray(slow.axial) * ds, rtol=0, atol=1e-12)
        assert not bool(jnp.any(slow.lost))
        # at speed the follower's inertia on the rise's far side exceeds the spring: lost
        fast = cam.contact_force(LAW, f, TH, speed=60.0, mass=0.3, stiffness=300.0, preload=5.0)
        expected = 0.3 * (60.0**2 * dds + 9.81) + 300.0 * _law_derivatives(LAW, TH)[0] + 5.0 < 0
        np.testing.assert_array_equal(np.asarray(fast.lost), expected)
        assert expected.any()


def test_cam_gradients_match_central_differences():
    # the lift at a cam angle by the contact equation (through its Newton steps) and the
    # largest pressure angle, with respect to the law's rise and the roller's radius
    th = jnp.asarray(1.1)

    @jax.jit
    def lift(p):
        law = cam.Law(angles=LAW.angles, lifts=LAW.lifts.at[1:3].set(p[0]))
        f = cam.Follower(base=jnp.asarray(0.05), roller=p[1], offset=jnp.asarray(0.008))
        return cam.follow(lambda t: cam.profile(law, f, t), f, th), cam.pressure_angle(law, f, th)

    p0 = jnp.array([0.02, 0.01])
    J = np.asarray(jax.jacfwd(lambda p: jnp.stack(lift(p)))(p0))
    h = 1e-7
    for k in range(2):
        e = jnp.zeros(2).at[k].set(h)
        fd = (np.asarray(jnp.stack(lift(p0 + e))) - np.asarray(jnp.stack(lift(p0 - e)))) / (2 * h)
        np.testing.assert_allclose(J[:, k], fd, rtol=1e-6, atol=1e-9)
    assert abs(J[0, 0]) > 0.1  # the lift follows the rise


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: cam.Law(angles=jnp.array([0.0, 1.0]), lifts=jnp.array([0.0, 1.0]), kind="harmonic"), "`kind`"),
        (lambda: cam.Law(angles=jnp.array([0.5, 1.0]), lifts=jnp.array([0.0, 1.0])), "start at 0"),
        (lambda: cam.Law(angles=jnp.array([0.0, 7.0]), lifts=jnp.array([0.0, 1.0])), "within"),
        (lambda: cam.Law(angles=jnp.array([0.0, 1.0]), lifts=jnp.array([0.0, 1.0, 2.0])), "one length"),
        (lambda: cam.Follower(base=jnp.asarray(-1.0)), "`base` > 0"),
        (lambda: cam.Follower(base=jnp.asarray(0.05), roller=jnp.asarray(0.01), offset=jnp.asarray(0.1)), "offset"),
        (lambda: cam.Follower(base=jnp.asarray(0.05), roller=jnp.asarray(0.01), flat=True), "flat face"),
    ],
)
def test_bad_cams_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_spline_law_is_scipys_periodic_spline_and_comes_back_from_its_profile():
    from scipy.interpolate import CubicSpline

    angles = np.linspace(0.0, 2 * np.pi, 13)[:-1] + np.r_[0.0, 0.05 * np.sin(np.arange(1, 12))]
    lifts = 0.01 * (1 - np.cos(angles)) + 0.002 * np.sin(3 * angles)
    law = cam.Law(angles=jnp.asarray(angles), lifts=jnp.asarray(lifts), kind="spline")
    ref = CubicSpline(np.r_[angles, 2 * np.pi], np.r_[lifts, lifts[0]], bc_type="periodic")
    th = np.linspace(0.0, 2 * np.pi, 97)
    for k in range(3):  # the lift, its rate and acceleration: SciPy's, across the turn too
        mine = jax.vmap(jax.grad(jax.grad(law)) if k == 2 else jax.grad(law) if k == 1 else law)(jnp.asarray(th))
        np.testing.assert_allclose(np.asarray(mine), ref(th, k), rtol=0, atol=1e-13 * 10**k)
    lift = cam.follow(lambda t: cam.profile(law, ROLLER, t), ROLLER, TH)
    np.testing.assert_allclose(np.asarray(lift), np.asarray(law(TH)), rtol=0, atol=1e-12)


ARM = cam.Arm(
    base=jnp.asarray(0.05), pivot=jnp.asarray([0.12, 0.03]), length=jnp.asarray(0.09), roller=jnp.asarray(0.01)
)
SWING = cam.Law(angles=LAW.angles, lifts=jnp.array([0.0, 0.25, 0.25, 0.0]))  # the arm swings 0.25 rad


def test_an_oscillating_follower_follows_its_law_with_its_pressure_angle_and_torque():
    # rest: the roller touches the base circle
    psi0 = float(ARM.rest())
    w0 = np.array([0.12, 0.03]) + 0.09 * np.array([np.cos(psi0), np.sin(psi0)])
    assert abs(np.hypot(*w0) - 0.06) <= 1e-15
    lift = cam.follow(lambda t: cam.profile(SWING, ARM, t), ARM, TH)
    np.testing.assert_allclose(np.asarray(lift), np.asarray(SWING(TH)), rtol=0, atol=1e-12)

    # the pressure angle: from the roller's direction of motion (normal to the arm) to the
    # profile's normal at the contact, from the profile's own tangent turned into the world
    def geometric(t):
        c, tangent = jax.jvp(lambda v: cam.profile(SWING, ARM, v), (t,), (1.0,))
        n = rotation(t) @ (perp(tangent) / jnp.linalg.norm(tangent))
        psi = ARM.rest() + SWING(t)
        m = jnp.stack([-jnp.sin(psi), jnp.cos(psi)])
        return jnp.arctan2(m[0] * n[1] - m[1] * n[0], m @ n)

    phi = np.asarray(cam.pressure_angle(SWING, ARM, TH))
    np.testing.assert_allclose(np.asarray(jax.vmap(geometric)(TH)), phi, rtol=0, atol=1e-12)
    assert np.max(np.abs(phi)) > 0.2
    # the cam's torque equals the arm's power over the cam's speed: T = M ψ′
    cf = cam.contact_force(SWING, ARM, TH, speed=5.0, mass=2e-4, stiffness=0.5, preload=0.2)
    dpsi = np.asarray(jax.vmap(jax.grad(SWING))(TH))
    np.testing.assert_allclose(np.asarray(cf.torque), np.asarray(cf.axial) * dpsi, rtol=0, atol=1e-12)
    assert not bool(jnp.any(cf.lost)) and float(jnp.max(jnp.abs(cf.torque))) > 1e-3


def _newton_euler(law, f_mass, k, preload, inertia, tau, y0, t_eval, event=None):
    """The cam and its translating follower by SciPy: the follower's balance
    `F = m ÿ + k s + p + m g` (y = s(θ)) and the cam's `I θ̈ = τ − F s′`, solved for θ̈."""
    from scipy.integrate import solve_ivp

    def parts(th, w):
        s, ds, dds = (float(v[0]) for v in _law_derivatives(law, np.asarray([th])))
        a = (tau - ds * (f_mass * dds * w**2 + k * s + preload + f_mass * 9.81)) / (inertia + f_mass * ds**2)
        return a, f_mass * (dds * w**2 + ds * a) + k * s + preload + f_mass * 9.81

    rhs = lambda t, y: [y[1], parts(y[0], y[1])[0]]  # noqa: E731
    ev = None
    if event:
        ev = lambda t, y: parts(y[0], y[1])[1]  # noqa: E731
        ev.terminal = True
    return solve_ivp(rhs, (0.0, float(t_eval[-1])), y0, "DOP853", t_eval=t_eval, rtol=1e-12, atol=1e-14, events=ev)


def test_a_cam_and_its_follower_move_as_newton_euler_says_until_the_contact_is_lost():
    ts = np.linspace(0.0, 1.0, 21)
    kw = dict(
        inertia=1e-3,
        mass=0.3,
        stiffness=300.0,
        preload=5.0,
        t1=1.0,
        saveat=jnp.asarray(ts),
        integrator=dm.linkage.Integrator(rtol=1e-12, atol=1e-14),
    )
    slow = cam.simulate(LAW, ROLLER, speed0=20.0, **kw)
    ref = _newton_euler(LAW, 0.3, 300.0, 5.0, 1e-3, 0.0, [0.0, 20.0], ts)
    assert bool(jnp.all(slow.converged)) and float(slow.energy_error) <= 1e-8
    np.testing.assert_allclose(np.asarray(slow.theta), ref.y[0], rtol=0, atol=1e-8)
    # faster, driven: the follower leaves the cam where the contact force reaches zero
    drive = lambda t, th, w: 0.02 + 0.0 * w  # noqa: E731
    ts = np.linspace(0.0, 0.05, 26)
    fast = cam.simulate(LAW, ROLLER, speed0=60.0, torque=drive, **{**kw, "t1": 0.05, "saveat": jnp.asarray(ts)})
    ref = _newton_euler(LAW, 0.3, 300.0, 5.0, 1e-3, 0.02, [0.0, 60.0], ts, event=True)
    (t_lost,) = ref.t_events[0]
    ok = np.asarray(fast.converged)
    assert 0.01 < t_lost < 0.04, t_lost
    np.testing.assert_array_equal(ok, ts < t_lost)
    assert dm.RESULTS.name(fast.status)[int(np.argmin(ok))] == "contact_lost"
    np.testing.assert_allclose(np.asarray(fast.theta)[ok], ref.y[0], rtol=0, atol=1e-8)
    assert float(fast.energy_error) <= 1e-8


FLAT_ARM = cam.FlatArm(base=jnp.asarray(0.05), pivot=jnp.asarray([0.1, 0.08]), offset=jnp.asarray(0.01))
FLAT_SWING = cam.Law(angles=LAW.angles, lifts=jnp.array([0.0, 0.15, 0.15, 0.0]))


def test_an_oscillating_flat_face_touches_its_profile_as_the_law_says():
    psi0 = float(FLAT_ARM.rest())
    nu0 = np.array([-np.sin(psi0), np.cos(psi0)])
    assert abs(np.array([0.1, 0.08]) @ nu0 - 0.01 - 0.05) <= 1e-15  # the face touches the base circle
    C = np.asarray(cam.profile(FLAT_SWING, FLAT_ARM, TH))
    dwell = np.asarray(FLAT_SWING(TH)) == 0.0
    np.testing.assert_allclose(np.hypot(C[dwell, 0], C[dwell, 1]), 0.05, rtol=0, atol=1e-15)
    lift = cam.follow(lambda t: cam.profile(FLAT_SWING, FLAT_ARM, t), FLAT_ARM, TH)
    np.testing.assert_allclose(np.asarray(lift), np.asarray(FLAT_SWING(TH)), rtol=0, atol=1e-12)

    # the pressure angle: from the contact point's motion (normal to P − A) to the profile's own normal
    def geometric(t):
        c, tangent = jax.jvp(lambda v: cam.profile(FLAT_SWING, FLAT_ARM, v), (t,), (1.0,))
        n = rotation(t) @ (perp(tangent) / jnp.linalg.norm(tangent))
        m = perp(rotation(t) @ c - jnp.array([0.1, 0.08]))
        return jnp.arctan2(m[0] * n[1] - m[1] * n[0], m @ n)

    phi = np.asarray(cam.pressure_angle(FLAT_SWING, FLAT_ARM, TH))
    np.testing.assert_allclose(np.asarray(jax.vmap(geometric)(TH)), phi, rtol=0, atol=1e-12)
    assert np.ptp(phi) > 0.01  # (it varies along the turn)
    rc = np.asarray(cam.curvature_radius(FLAT_SWING, FLAT_ARM, TH))
    np.testing.assert_allclose(rc[dwell], 0.05, rtol=1e-12)  # the base circle's, convex
    cf = cam.contact_force(FLAT_SWING, FLAT_ARM, TH, speed=5.0, mass=2e-4, stiffness=0.5, preload=0.2)
    dpsi = np.asarray(jax.vmap(jax.grad(FLAT_SWING))(TH))
    np.testing.assert_allclose(np.asarray(cf.torque), np.asarray(cf.axial) * dpsi, rtol=0, atol=1e-12)
    assert not bool(cam.check(FLAT_SWING, FLAT_ARM).undercut)

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import central_diff, rel_err
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import diffmech as dm
from diffmech import fourbar as fbk

SEED = dm.FourBar.seed_crank_rocker()


def _perp(v):
    return np.array([-v[1], v[0]])


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


# ----------------------------------------------------------------- closure at round-off

lengths_st = st.tuples(*[st.floats(0.05, 1.0) for _ in range(4)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lengths=lengths_st, t=st.floats(0.03, 0.97), sign=st.sampled_from([-1.0, 1.0]), branch=st.sampled_from([1, -1]))
def test_assemble_closes_to_round_off_on_random_designs(lengths, t, sign, branch):
    """Grashof and non-Grashof designs, any angle inside the crank range."""
    fb = dm.FourBar(lengths=lengths, branch=branch)
    rng = fbk.crank_limits(fb)
    lo, hi = float(rng.theta_min), float(rng.theta_max)
    assume(hi - lo >= 1e-3)  # assemblable on more than a point (a draw that is not is discarded, not passed)
    theta = sign * (lo + t * (hi - lo))
    q = np.asarray(fbk.assemble(fb, theta))
    assert float(fbk.closure_residual(fb, jnp.asarray(q))) <= 1e-14 * max(lengths) / 0.1
    for i in (0, 2, 4):
        assert abs(np.linalg.norm(q[i : i + 2]) - 1) <= 4e-16
    np.testing.assert_allclose(q[0:2], [math.cos(theta), math.sin(theta)], atol=1e-15)
    # on the requested branch: sign(l4 - l1) * (qB x qD) = branch (unless at a dead
    # point); on change-point designs the modes swap that sign at θA = 0, π, so the
    # branch is sign(l4 - l1) * (qB x qD) * sign(sin θA) there
    c = _cross(q[2:4], q[4:6])
    s = sorted(lengths)
    change_point = abs(s[0] + s[3] - s[1] - s[2]) <= 1e-12 * sum(lengths)
    if abs(c) > 1e-9:
        got = np.sign(c) * np.sign(lengths[3] - lengths[0] or 1.0) * (np.sign(math.sin(theta)) if change_point else 1.0)
        assert got == branch


def test_seed_configuration_at_zero_and_printed_q0():
    q = np.asarray(fbk.assemble(SEED, 0.0))
    # C above AD at θA = 0 (the seed's branch) ...
    C = fbk.joint_positions(SEED, jnp.asarray(q))["C"]
    assert float(C[1]) > 0
    # ... and the printed q0 of Section 7.2 is within its printed precision (1e-3)
    printed = np.array([1, 0, 0.3044, 0.9534, -0.3996, 0.9167])
    assert np.max(np.abs(q - printed)) < 2e-3
    assert abs(np.linalg.norm(printed[2:4]) - 1) > 5e-4  # the printed one is off the constraint
    # independent check: law of cosines for the angle at D in triangle B C D
    l1, l2, l3, l4 = 0.12, 0.25, 0.26, 0.30
    d = l4 - l1
    cos_D = (d**2 + l3**2 - l2**2) / (2 * d * l3)  # angle between D->B (= -x) and D->C
    qD_ref = np.array([-cos_D, math.sqrt(1 - cos_D**2)])
    np.testing.assert_allclose(q[4:6], qD_ref, atol=1e-15)


@pytest.mark.parametrize("h", [0.01, 0.03, 0.05])
def test_section_7_1_errors_are_round_off_for_every_step(h):
    """Bai et al. Section 7.1: crank at 2π rad/s sampled every h seconds over one
    revolution; the paper's ‖q‖ − 1 grows with h and peaks at θA = 0. Ours: round-off."""
    t = np.arange(0.0, 1.0 + h / 2, h)
    s = fbk.sweep(SEED, 2 * np.pi * t)
    assert bool(jnp.all(s.converged))
    err = np.abs(np.linalg.norm(np.asarray(s.q).reshape(-1, 3, 2), axis=-1) - 1)
    assert err.max() <= 1e-15  # a few ulp
    assert err[0].max() <= 2.3e-16  # crank angle 0 included
    assert float(jnp.max(fbk.closure_residual(SEED, s.q))) <= 2e-15
    # independent of the step: the same angle gives the same attitudes
    q_direct = np.asarray(fbk.assemble(SEED, 2 * np.pi * t))
    np.testing.assert_allclose(s.q, q_direct, atol=2e-15)


def test_sweep_keeps_branch_and_mirror_branch():
    th = jnp.linspace(0, 2 * jnp.pi, 181)
    up = fbk.sweep(SEED, th)
    down = fbk.sweep(dm.FourBar.seed_crank_rocker(branch=-1), th)
    assert bool(jnp.all(up.converged)) and bool(jnp.all(down.converged))
    cu = np.asarray(jax.vmap(lambda q: q[2] * q[5] - q[3] * q[4])(up.q))
    cd = np.asarray(jax.vmap(lambda q: q[2] * q[5] - q[3] * q[4])(down.q))
    assert (cu > 0).all() and (cd < 0).all()
    # the mirror branch is the reflection of C across the line BD
    P = fbk.joint_positions(SEED, up.q)
    Pm = fbk.joint_positions(SEED, down.q)
    B, C, D, Cm = (np.asarray(v) for v in (P["B"], P["C"], P["D"], Pm["C"]))
    u = (D - B) / np.linalg.norm(D - B, axis=-1, keepdims=True)
    w = C - B
    refl = B + 2 * np.sum(w * u, -1, keepdims=True) * u - w
    np.testing.assert_allclose(Cm, refl, atol=1e-14)


def test_non_grashof_sweep_stops_at_the_crank_limit():
    fb = dm.FourBar(lengths=(0.3, 0.3, 0.3, 0.5))  # s + l = 0.8 > 0.6: triple-rocker
    assert fbk.grashof(fb) == "triple-rocker"
    lim = fbk.crank_limits(fb)
    assert not bool(lim.full_rotation)
    th = jnp.linspace(0, 2 * jnp.pi, 721)
    s = fbk.sweep(fb, th)
    ok = np.asarray(s.converged)
    k = int(np.argmin(ok))
    assert ok[:k].all() and not ok[k:].any()
    step = float(th[1])
    assert float(th[k - 1]) <= float(lim.theta_max) < float(th[k]) + step  # stops at the limit
    assert s.result == dm.closure.RESULTS.motion_limit or s.result == dm.closure.RESULTS.branch_switch
    assert float(jnp.max(fbk.closure_residual(fb, s.q[:k]))) <= 1e-15
    # the sweep's conditioning (in closed form) is the core's: J by differentiation, inverted
    want = jax.jit(jax.vmap(lambda x, t: dm.closure.condition(fbk.residual, x, t, fb)))(s.q[:k, 2:], th[:k])
    np.testing.assert_allclose(np.asarray(s.condition[:k]), np.asarray(want), rtol=1e-12)
    assert bool(jnp.all(jnp.isnan(s.condition[k:])))  # none past the limit
    # and off the closure, at any (qB, qD), every column of J⁻¹ in turn the largest (l2 ≠ l3)
    xs = jnp.asarray(np.random.default_rng(3).normal(size=(64, 4)))
    other = dm.FourBar(lengths=(0.3, 0.8, 0.4, 0.9))
    want = jax.jit(jax.vmap(lambda x: dm.closure.condition(fbk.residual, x, 0.0, other)))(xs)
    np.testing.assert_allclose(np.asarray(fbk.condition_number(xs, other)), np.asarray(want), rtol=1e-12)
    # the closure Jacobian becomes ill-conditioned at the limit (B, C, D collinear)
    near = fbk.solve(fb, lim.theta_max - 1e-8, condition=True, throw=False)
    assert near.converged and float(near.condition) > 1e3 * float(s.condition[0])
    # just inside / just outside the limit through the eager API
    fbk.assemble(fb, float(lim.theta_max) - 1e-6)
    with pytest.raises(fbk.AssemblyError, match="theta_A"):
        fbk.assemble(fb, float(lim.theta_max) + 1e-6)


def test_parallelogram_sweeps_through_change_points():
    fb = dm.FourBar.seed_parallelogram()
    assert bool(fbk.is_change_point(fb))
    s = fbk.sweep(fb, jnp.linspace(0, 4 * jnp.pi, 721))
    assert bool(jnp.all(s.converged))
    assert float(jnp.max(fbk.closure_residual(fb, s.q))) <= 1e-15
    # parallelogram mode kept: coupler parallel to the ground, qA = qD. At the change
    # points the Jacobian is singular, so the attitude is fixed only to ~sqrt(eps) there.
    q = np.asarray(s.q)
    assert np.max(np.abs(q[:, 2:4] - [1, 0])) < 1e-7
    assert np.max(np.abs(q[:, 0:2] - q[:, 4:6])) < 1e-7
    away = np.abs(np.sin(np.asarray(s.theta_A))) > 0.1
    assert np.max(np.abs(q[away, 2:4] - [1, 0])) < 1e-14


# ----------------------------------------------------------------- rates


def _state(theta):
    return np.asarray(fbk.assemble(SEED, theta))


@pytest.mark.parametrize("theta", [0.0, 0.7, 2.5, 4.0])
def test_velocity_ratios_eq35_match_autodiff_and_finite_differences(theta):
    q = jnp.asarray(_state(theta))
    K = np.asarray(fbk.velocity_ratios(SEED, q))
    qdot, _ = fbk.rates(SEED, q, theta, 1.0)
    w = np.asarray(fbk.angular_velocities(q, qdot))
    assert w[0] == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(w[1:], K, rtol=1e-12)
    h = 1e-6
    ang = lambda t: np.array([math.atan2(*_state(t)[[3, 2]]), math.atan2(*_state(t)[[5, 4]])])  # noqa: E731
    K_fd = (
        np.unwrap(np.stack([ang(theta - h), ang(theta + h)]), axis=0)[1]
        - np.unwrap(np.stack([ang(theta - h), ang(theta + h)]), axis=0)[0]
    ) / (2 * h)
    np.testing.assert_allclose(K, K_fd, rtol=1e-7)


@pytest.mark.parametrize("theta,omega,alpha", [(0.0, 2 * np.pi, 0.0), (1.1, -3.0, 5.0), (3.7, 0.5, -2.0)])
def test_accelerations_eq29_corrected_match_autodiff_and_fd(theta, omega, alpha):
    q = jnp.asarray(_state(theta))
    qdot, qddot = fbk.rates(SEED, q, theta, omega, alpha)
    # angular accelerations from attitude accelerations: q̈ = α S1 q − ω² q ⇒ α = q × q̈
    alpha_ad = np.array([_cross(np.asarray(q)[i : i + 2], np.asarray(qddot)[i : i + 2]) for i in (2, 4)])
    alpha_eq = np.asarray(fbk.angular_accelerations(SEED, q, omega, alpha))
    np.testing.assert_allclose(alpha_eq, alpha_ad, rtol=1e-11, atol=1e-11)
    # finite differences along θA(t) = θ + ω t + α t²/2
    h = 1e-4
    path = lambda t: _state(theta + omega * t + 0.5 * alpha * t**2)  # noqa: E731
    qdd_fd = (path(h) - 2 * path(0.0) + path(-h)) / h**2
    assert rel_err(qddot, qdd_fd) < 1e-6


def test_printed_eq29_sign_is_wrong():
    """Eq. (29) (and Eq. (23)) print −ωA² l1 qA; differentiating Eq. (26) gives +ωA² l1 qA."""
    theta, omega = 0.9, 2 * np.pi
    q = np.asarray(_state(theta))
    qA, qB, qD = q[0:2], q[2:4], q[4:6]
    l1, l2, l3 = 0.12, 0.25, 0.26
    wB, wD = np.asarray(fbk.velocity_ratios(SEED, jnp.asarray(q))) * omega
    M = np.stack([l2 * _perp(qB), -l3 * _perp(qD)], axis=1)
    printed = np.linalg.solve(M, wB**2 * l2 * qB - omega**2 * l1 * qA - wD**2 * l3 * qD)
    _, qddot = fbk.rates(SEED, jnp.asarray(q), theta, omega, 0.0)
    truth = np.array([_cross(q[i : i + 2], np.asarray(qddot)[i : i + 2]) for i in (2, 4)])
    assert rel_err(printed, truth) > 0.1
    assert rel_err(fbk.angular_accelerations(SEED, jnp.asarray(q), omega, 0.0), truth) < 1e-11


# ----------------------------------------------------------------- gradients


def _qBD(lengths, theta):
    return fbk.solve(dm.FourBar(lengths=lengths), theta, condition=False).value


# each one program for every angle (op by op, a Jacobian compiled ~60 small programs)
_qBD_jacrev, _qBD_jacfwd = jax.jit(jax.jacrev(_qBD)), jax.jit(jax.jacfwd(_qBD))


@pytest.mark.parametrize("theta", [0.0, 1.3, 4.4])
def test_implicit_gradients_wrt_lengths_match_central_differences(theta):
    L, th = jnp.array([0.12, 0.25, 0.26, 0.30]), jnp.asarray(theta)
    J = np.asarray(_qBD_jacrev(L, th))
    J_fwd = np.asarray(_qBD_jacfwd(L, th))
    J_fd = central_diff(lambda l: np.asarray(_qBD(jnp.asarray(l), th)), np.asarray(L), h=1e-6)
    for j in range(4):  # per length
        assert rel_err(J[:, j], J_fd[:, j]) <= 1e-6, j
    np.testing.assert_allclose(J, J_fwd, rtol=1e-12, atol=1e-14)


def test_gradient_of_coupler_curve_through_sweep():
    th = jnp.linspace(0, 2 * jnp.pi, 73)

    def area(lengths):  # signed area enclosed by the coupler curve of the midpoint of BC
        s = fbk.sweep_functional(dm.FourBar(lengths=lengths), th, condition=False)
        P = fbk.coupler_point(dm.FourBar(lengths=lengths), s.q, jnp.array([0.125, 0.05]))
        x, y = P[:-1, 0], P[:-1, 1]
        return 0.5 * jnp.sum(x * jnp.roll(y, -1) - jnp.roll(x, -1) * y)

    L = jnp.array([0.12, 0.25, 0.26, 0.30])
    g = np.asarray(jax.jit(jax.grad(area))(L))
    area_j = jax.jit(area)
    g_fd = central_diff(lambda l: float(area_j(jnp.asarray(l))), np.asarray(L), h=1e-6)
    assert rel_err(g, g_fd) <= 1e-6


# ----------------------------------------------------------------- batches


def test_batched_sweep_masks_bad_designs_only():
    L = np.array([[0.12, 0.25, 0.26, 0.30], [0.3, 0.3, 0.3, 0.5], [0.10, 0.11, 0.12, 0.9], [0.11, 0.24, 0.27, 0.31]])
    fb = dm.FourBar(lengths=L)
    th = jnp.linspace(0, 2 * jnp.pi, 91)
    s = fbk.sweep(fb, th)
    assert s.q.shape == (4, 91, 6) and s.converged.shape == (4, 91)
    conv = np.asarray(s.converged)
    assert conv[0].all() and conv[3].all()
    assert 0 < conv[1].sum() < 91  # stops at its crank limit
    assert not conv[2].any()  # 0.10 + 0.11 + 0.12 < 0.9: never assembles
    for i in range(4):
        single = fbk.sweep(dm.FourBar(lengths=L[i]), th)
        np.testing.assert_array_equal(single.converged, conv[i])
        np.testing.assert_allclose(single.q[conv[i]], s.q[i][conv[i]], atol=1e-15)
    assert float(jnp.max(jnp.where(s.converged, fbk.closure_residual(fb, s.q), 0.0))) <= 2e-15


def test_batched_sweep_in_chunks_equals_each_design_alone(monkeypatch):
    # a batch is solved in chunks of designs (padded to a multiple of the chunk): with
    # 3 designs a chunk, 7 designs (one proper, one stopping at its crank limit, one
    # never assembling, four perturbed) make three chunks and two padded lanes. Every
    # design's result must equal its own unbatched sweep, in its own place
    from diffmech import _closure
    from diffmech._result import code
    from diffmech.fourbar import _kinematics as impl

    th = jnp.linspace(0, 2 * jnp.pi, 41)
    monkeypatch.setattr(impl, "_SWEEP_CHUNK", 3 * th.shape[0])
    chunks = []
    real = _closure.vmap_chunked

    def spy(fn, xs, chunk):
        chunks.append(chunk)
        return real(fn, xs, chunk)

    monkeypatch.setattr(_closure, "vmap_chunked", spy)
    rng = np.random.default_rng(5)
    L = np.concatenate(
        [
            [[0.12, 0.25, 0.26, 0.30], [0.3, 0.3, 0.3, 0.5], [0.10, 0.11, 0.12, 0.9]],
            np.array([0.12, 0.25, 0.26, 0.30]) * (1 + 0.05 * rng.uniform(-1, 1, (4, 4))),
        ]
    ).reshape(7, 4)
    batched = jax.jit(lambda le: fbk.sweep(dm.FourBar(lengths=le), th))(jnp.asarray(L))
    assert batched.q.shape == (7, 41, 6)
    assert chunks == [3]  # 7 designs in chunks of 3 (on the CPU, where the suite runs)
    conv = np.asarray(batched.converged)
    assert conv[0].all() and 0 < conv[1].sum() < 41 and not conv[2].any()
    for i in range(7):
        single = fbk.sweep(dm.FourBar(lengths=L[i]), th)
        np.testing.assert_array_equal(np.asarray(single.converged), conv[i])
        np.testing.assert_array_equal(np.asarray(code(single.status)), np.asarray(code(batched.status))[i])
        np.testing.assert_allclose(np.asarray(batched.q[i]), np.asarray(single.q), rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.asarray(batched.condition[i]), np.asarray(single.condition), rtol=1e-12)

    # derivatives through the chunks (the implicit function theorem in each), against
    # central differences of the lengths of every design
    def f(le):
        s = fbk.sweep(dm.FourBar(lengths=le), th, condition=False)
        return jnp.sum(jnp.where(s.converged, s.q[..., 4] + 2 * s.q[..., 3], 0.0))

    ok = L[[0, 3, 4, 5, 6]]  # the designs that turn fully (no mask boundary to move)
    g = np.asarray(jax.jit(jax.grad(f))(jnp.asarray(ok)))
    fd = central_diff(lambda le: float(f(jnp.asarray(le))), ok, 1e-6)
    assert rel_err(g, fd) <= 1e-6


def test_jit_vmap_assemble_on_many_designs():
    rng = np.random.default_rng(3)
    L = np.array([0.12, 0.25, 0.26, 0.30]) * (1 + 0.05 * rng.uniform(-1, 1, (500, 4)))
    fb = dm.FourBar(lengths=L)
    q = fbk.assemble(fb, 0.3)
    assert q.shape == (500, 6)
    assert float(jnp.max(fbk.closure_residual(fb, q))) <= 1e-15


# ----------------------------------------------------------------- Grashof


@pytest.mark.parametrize(
    "lengths,cls,full",
    [
        ((0.12, 0.25, 0.26, 0.30), "crank-rocker", True),
        ((0.26, 0.25, 0.12, 0.30), "rocker-crank", False),  # the rocker is the short link: it turns fully
        ((0.25, 0.30, 0.26, 0.12), "double-crank", True),
        ((0.25, 0.12, 0.26, 0.30), "double-rocker", False),
        ((0.30, 0.30, 0.30, 0.50), "triple-rocker", False),
        ((0.10, 0.20, 0.15, 0.25), "change-point", True),
        ((0.10, 0.25, 0.10, 0.25), "parallelogram", True),
    ],
)
def test_grashof_classes(lengths, cls, full):
    fb = dm.FourBar(lengths=lengths)
    assert fbk.grashof(fb) == cls
    assert bool(fbk.crank_limits(fb).full_rotation) == full


@settings(max_examples=60, deadline=None)
@given(lengths=lengths_st)
def test_grashof_class_names_which_ground_link_turns_fully(lengths):
    # independent of the class rules: whether the input link (at A) turns fully is the
    # closed-form crank range; whether the output link (at D) does is the same range of
    # the four-bar seen from D (crank and rocker swapped); Grashof is s + l vs p + q
    fb = dm.FourBar(lengths=lengths)
    s = np.sort(np.asarray(lengths, float))
    assume(abs(s[0] + s[3] - s[1] - s[2]) > 1e-6 * s.sum())  # not a change point
    l1, l2, l3, l4 = lengths
    inp = bool(fbk.crank_limits(fb).full_rotation)
    out = bool(fbk.crank_limits(dm.FourBar(lengths=(l3, l2, l1, l4))).full_rotation)
    grashof = s[0] + s[3] < s[1] + s[2]
    expected = {
        (True, False): "crank-rocker",
        (False, True): "rocker-crank",
        (True, True): "double-crank",
        (False, False): "double-rocker" if grashof else "triple-rocker",
    }[(inp, out)]
    assert fbk.grashof(fb) == expected


@settings(max_examples=40, deadline=None)
@given(lengths=lengths_st, theta=st.floats(-math.pi, math.pi))
def test_crank_limits_agree_with_assemblability(lengths, theta):
    fb = dm.FourBar(lengths=lengths)
    x, gap = fbk.closed_form(fb, jnp.asarray(theta))
    inside = bool(fbk.crank_limits(fb).contains(theta))
    if abs(float(gap)) > 1e-9:
        assert inside == (float(gap) < 0)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(lengths=(0.12, -0.25, 0.26, 0.30)), "lengths"),
        (dict(lengths=(0.12, 0.0, 0.26, 0.30)), "lengths"),
        (dict(lengths=(0.12, float("nan"), 0.26, 0.30)), "lengths"),
        (dict(lengths=(0.12, 0.25, 0.26)), "lengths"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), masses=(0.1, -1.0, 0.1)), "masses"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), masses=(0.1, 0.1)), "masses"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), inertias=(0.1, 0.0, 0.1)), "inertias"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), inertias=(0.1, float("inf"), 0.1)), "inertias"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), com=((0.0, 0.0), (0.1, 0.0))), "com"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), com=((0.0, 0.0), (0.1, float("nan")), (0.0, 0.0))), "com"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), gravity=(0.0, float("inf"))), "gravity"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), gravity=(0.0, 0.0, -9.81)), "gravity"),
        (dict(lengths=(0.12, 0.25, 0.26, 0.3), branch=0), "branch"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"`{field}`"):
        dm.FourBar(**kwargs)


def test_unassemblable_angle_error_names_angle_design_residual():
    fb = dm.FourBar(lengths=(0.3, 0.3, 0.3, 0.5))
    with pytest.raises(fbk.AssemblyError) as e:
        fbk.assemble(fb, 3.0)
    msg = str(e.value)
    assert "theta_A = 3 rad" in msg and "lengths=(0.3, 0.3, 0.3, 0.5)" in msg and "residual" in msg
    # batched eager call names the design index
    with pytest.raises(fbk.AssemblyError, match=r"design index \(1,\)"):
        fbk.assemble(dm.FourBar(lengths=[(0.12, 0.25, 0.26, 0.30), (0.3, 0.3, 0.3, 0.5)]), 3.0)
    # inside jit: masked by the functional API ...
    sol = jax.jit(lambda f, t: fbk.solve(f, t, throw=False))(fb, jnp.asarray(3.0))
    assert sol.result != dm.closure.RESULTS.successful
    # ... and a runtime error from the throwing one
    with pytest.raises(Exception, match="cannot be assembled"):
        jax.block_until_ready(jax.jit(fbk.assemble)(fb, jnp.asarray(3.0)))


def test_sweep_rejects_bad_angles():
    with pytest.raises(ValueError, match="theta_A_values"):
        fbk.sweep(SEED, [0.0, float("nan")])
    with pytest.raises(ValueError, match="theta_A_values"):
        fbk.sweep(SEED, [[0.0, 1.0]])


def test_batched_sweep_certifies_the_closed_form_without_the_fallback():
    # a closed form at round-off must be certified on every design whose crank angles
    # it reaches; a design sent to the sequential fallback costs ~100 designs' time.
    # (with an absolute 2ε test, 3 of these 2048 random designs were sent there.) A
    # `Deferred` fallback marks the inputs the fallback would have run (the core's same
    # test of need) `deferred`, without compiling the fallback itself.
    from diffmech import _closure
    from diffmech.fourbar import _kinematics as fbkin

    rng = np.random.default_rng(0)
    n = 2048
    L = np.column_stack(
        [rng.uniform(0.05, 0.2, n), rng.uniform(0.2, 0.4, n), rng.uniform(0.2, 0.4, n), rng.uniform(0.25, 0.35, n)]
    )
    th = jnp.asarray(2 * np.pi * np.arange(360) / 360)

    def one(le):
        s = fbkin.sweep_functional(dm.FourBar(lengths=le), th, condition=False, fallback=_closure.Deferred())
        return s.converged, _closure.has_deferred(s.status)

    conv, need = jax.jit(jax.vmap(one))(jnp.asarray(L))
    need = np.asarray(need)
    assert need.shape == (n,) and not need.any(), np.nonzero(need)[0]
    assert 0.5 < float(np.mean(conv)) < 1.0  # motion limits occur, and are proven by the closed form


def test_eager_sweep_runs_the_full_program_when_an_angle_was_deferred(monkeypatch):
    # The eager sweep runs the program without the sequential fallback first and reads
    # back one flag; a four-bar's circle intersection certifies every angle, so the flag
    # is never raised by a real design. Raise it (and spoil that program's answer): the
    # eager layer must then return the full program's result, closed to round-off.
    from diffmech.fourbar import _kinematics as impl

    real = impl._sweep_jit
    calls = []

    def spy(lengths, theta, condition, deferred, branch):
        out, flag = real(lengths, theta, condition, deferred, branch)
        calls.append(deferred)
        assert int(flag) == 0  # the real flags: nothing deferred, every angle finite
        if deferred:
            return type(out)(
                theta_A=out.theta_A,
                q=jnp.full_like(out.q, jnp.nan),
                converged=out.converged,
                status=out.status,
                residual=out.residual,
                condition=out.condition,
            ), jnp.asarray(1, jnp.int32)
        return out, flag

    monkeypatch.setattr(impl, "_sweep_jit", spy)
    fb = dm.FourBar.seed_crank_rocker()
    s = fbk.sweep(fb, np.linspace(0.0, 2 * np.pi, 37))
    assert calls == [True, False]
    assert bool(jnp.all(s.converged))
    assert float(jnp.max(fbk.closure_residual(fb, s.q))) <= 1e-14


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_eager_sweep_rejects_non_finite_angles(bad):
    # checked inside the compiled program and read back with its other flag
    fb = dm.FourBar.seed_crank_rocker()
    with pytest.raises(ValueError, match="must be finite"):
        fbk.sweep(fb, np.array([0.0, 0.5, bad, 1.0]))
    with pytest.raises(ValueError, match="must be finite"):
        fbk.sweep(dm.FourBar(lengths=jnp.array([[0.12, 0.25, 0.26, 0.30], [0.3, 0.3, 0.3, 0.5]])), [bad])


def test_eager_sweep_of_a_design_first_seen_concrete_still_differentiates():
    # the eager layer remembers designs it has seen concrete; a traced copy of the
    # same design (a new object) must take the traced path and give the gradient
    L0 = jnp.array([0.12, 0.25, 0.26, 0.30])
    th = np.linspace(0.0, 2 * np.pi, 19)
    fbk.sweep(dm.FourBar(lengths=L0), th)

    def f(L):
        return jnp.sum(fbk.sweep(dm.FourBar(lengths=L), th, condition=False).q[:, 4])

    g = jax.jit(jax.grad(f))(L0)  # traced (a new object), as under any transformation
    fd = central_diff(f, L0, 1e-6)
    assert float(jnp.max(jnp.abs(g - fd))) <= 1e-7 * max(1.0, float(jnp.max(jnp.abs(fd))))

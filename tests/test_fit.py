"""The fitting layer: recovery against closed forms (linear least squares), start 0 of a
multi-start batch against the single run, masking of failed solves."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import fit as F, fourbar as fbk


class Decay(eqx.Module):
    amplitude: jax.Array
    offset: jax.Array


T = jnp.linspace(0.0, 3.0, 40)


def _data(noise, seed=0):
    rng = np.random.default_rng(seed)
    return 2.5 * jnp.exp(-T) - 0.7 + noise * jnp.asarray(rng.normal(size=T.shape))


def _loss(m, y):
    return jnp.mean((m.amplitude * jnp.exp(-T) + m.offset - y) ** 2)


def test_lbfgs_reaches_the_least_squares_solution_and_keeps_positive_fields_positive():
    y = _data(0.05)
    ref, *_ = np.linalg.lstsq(np.stack([np.exp(-np.asarray(T)), np.ones(T.shape[0])], 1), np.asarray(y), rcond=None)
    m0 = Decay(jnp.asarray(0.1), jnp.asarray(0.0))
    r = F.fit(_loss, m0, y, trainable=lambda m: m.amplitude, positive=True, steps=5)
    # only the amplitude moves
    assert float(r.model.offset) == 0.0
    r = F.fit(_loss, m0, y, positive=lambda m: m.amplitude, steps=100, gtol=1e-12)
    assert bool(r.converged) and int(r.steps) < 100
    np.testing.assert_allclose([float(r.model.amplitude), float(r.model.offset)], ref, rtol=1e-8)
    h = np.asarray(r.history.loss)[np.asarray(r.history.active)]
    assert np.all(np.diff(h) <= 1e-15)  # the line search never accepts an increase
    with pytest.raises(ValueError, match="non-positive"):
        F.fit(_loss, Decay(jnp.asarray(-1.0), jnp.asarray(0.0)), y, positive=True)
    with pytest.raises(ValueError, match="optimizer"):
        F.fit(_loss, m0, y, optimizer="sgd")


def test_multistart_start_zero_equals_the_single_run_and_adam_moves_downhill():
    y = _data(0.0)
    m0 = Decay(jnp.asarray(1.0), jnp.asarray(0.3))
    single = F.fit(_loss, m0, y, positive=lambda m: m.amplitude, steps=30, chunk=10)
    multi = F.fit(_loss, m0, y, positive=lambda m: m.amplitude, steps=30, chunk=10, starts=4, spread=0.3, seed=1)
    assert multi.loss.shape == (4,) and multi.history.loss.shape[0] == 4 and multi.history.loss.shape[1] <= 30
    np.testing.assert_allclose(multi.params.amplitude[0], single.model.amplitude, rtol=1e-12)
    assert float(multi.loss[multi.best]) == float(jnp.min(multi.loss))
    again = F.fit(_loss, m0, y, positive=lambda m: m.amplitude, steps=30, chunk=10, starts=4, spread=0.3, seed=1)
    np.testing.assert_array_equal(again.params.amplitude, multi.params.amplitude)  # reproducible
    ad = F.fit(_loss, m0, y, optimizer="adam", learning_rate=0.05, steps=50)
    assert float(ad.loss) < 0.1 * float(_loss(m0, y))


def test_masked_mean_hides_failed_samples_from_the_gradient():
    # a failed closure solve returns its (finite) guess: a wrong value that must not count
    r = jnp.array([1.0, 7.0, 3.0])
    ok = jnp.array([True, False, True])
    g = jax.grad(lambda s: F.masked_mean(s * r, ok, penalty=0.0))(2.0)
    assert float(g) == pytest.approx(2 * 2.0 * (1 + 9) / 2)  # d/ds of s²(1² + 3²)/2
    assert float(F.masked_mean(r, ok, penalty=10.0)) == pytest.approx(5.0 + 10.0 / 3)
    # a NaN in a failed sample does not reach the value
    assert float(F.masked_mean(jnp.array([1.0, jnp.nan, 3.0]), ok, penalty=0.0)) == pytest.approx(5.0)


def test_fourbar_tracer_identification_exact_without_noise_and_statistically_consistent_with_noise():
    from diffmech import identify

    theta = jnp.linspace(0.0, 2 * jnp.pi, 25)[:-1]
    true = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30))
    point = jnp.array([0.1, 0.05])
    clean = fbk.coupler_point(true, fbk.sweep(true, theta).q, point)
    start = dm.FourBar(lengths=(0.125, 0.24, 0.27, 0.29))
    r = identify.fourbar_tracer(theta, clean, start, (0.09, 0.06))
    np.testing.assert_allclose(r.fourbar.lengths, true.lengths, atol=1e-8)
    np.testing.assert_allclose(r.point, point, atol=1e-8)
    # noise σ on both coordinates: a least-squares fit of p = 6 parameters to 2N = 48
    # residuals leaves E[Σ r²] = σ² (2N − p); `rms` is the rms *distance* over the N
    # points (two coordinates each): E[rms²] = 2σ² (2N − p) / 2N (same compiled program)
    sigma = 1e-4
    noisy = clean + sigma * jnp.asarray(np.random.default_rng(0).normal(size=clean.shape))
    rn = identify.fourbar_tracer(theta, noisy, start, (0.09, 0.06))
    expected = sigma * np.sqrt(2 * (48 - 6) / 48)
    assert 0.75 * expected < rn.rms < 1.25 * expected  # one draw: rms has a relative sd of 1/√84 ≈ 0.11
    assert np.max(np.abs(np.asarray(rn.fourbar.lengths - true.lengths))) < 30 * sigma
    with pytest.raises(ValueError, match="must match"):
        identify.fourbar_tracer(theta, clean[:5], start, (0.09, 0.06))


class _TwoLosses(eqx.Module):
    x: jax.Array
    kinked: jax.Array


def test_a_stalled_start_stops_unconverged_and_no_start_pays_for_a_stopped_one():
    # A kinked loss (|x − 1| + |y − 1| + a quadratic) stalls L-BFGS near its kink: its
    # line search fails at every step there, and a step that does not lower the loss
    # stops the start, reported not converged. Rosenbrock's function converges by gtol.
    # Under `vmap` every start's line search runs as long as the slowest one's, so a
    # stopped start must cost nothing: the batch {kinked, Rosenbrock} evaluates the loss
    # at most as often as the batches {Rosenbrock, Rosenbrock} and {kinked, kinked}
    # together (counted on the host, once per batched evaluation).
    calls = []

    def loss(m):
        jax.debug.callback(lambda: calls.append(1))
        x, y = m.x[0], m.x[1]
        kink = jnp.abs(x - 1.0) + jnp.abs(y - 1.0) + 0.1 * ((x - 1.0) ** 2 + (y - 1.0) ** 2)
        return jnp.where(m.kinked, kink, (1 - x) ** 2 + 100.0 * (y - x * x) ** 2)

    def run(kinked):
        calls.clear()
        m = _TwoLosses(x=jnp.array([[-1.2, 1.0]] * 2), kinked=jnp.array(kinked))
        r = F.fit(loss, m, trainable=lambda m: m.x, batch=True, steps=200, gtol=1e-10)
        return len(calls), r

    n_mixed, r = run([True, False])
    n_rosen, r_rosen = run([False, False])
    n_kink, _ = run([True, True])
    assert not bool(r.converged[0]) and int(r.steps[0]) < 200 and float(r.loss[0]) < 1e-6
    assert bool(r.converged[1]) and float(r.loss[1]) < 1e-20
    np.testing.assert_allclose(np.asarray(r.params.x[1]), np.asarray(r_rosen.params.x[1]), rtol=1e-12)
    assert n_mixed <= n_rosen + n_kink, (n_mixed, n_rosen, n_kink)


def test_options_objects_equal_the_separate_keywords_and_refuse_both():
    # `Convergence` and `Starts` are the separate keywords' fields: the same run bit for
    # bit; a non-default value takes effect (a 3-step budget stops short of the 30-step fit)
    y = _data(0.0)
    m0 = Decay(jnp.asarray(1.0), jnp.asarray(0.3))
    kw = dict(positive=lambda m: m.amplitude, chunk=10)
    old = F.fit(_loss, m0, y, steps=3, gtol=1e-9, starts=3, spread=0.2, seed=2, **kw)
    new = F.fit(
        _loss, m0, y, convergence=F.Convergence(steps=3, gtol=1e-9), starts=F.Starts(count=3, spread=0.2, seed=2), **kw
    )
    np.testing.assert_array_equal(old.params.amplitude, new.params.amplitude)
    np.testing.assert_array_equal(old.history.loss, new.history.loss)
    assert int(np.max(np.asarray(new.steps))) == 3 and not bool(np.any(np.asarray(new.converged)))
    longer = F.fit(
        _loss, m0, y, convergence=F.Convergence(steps=30), starts=F.Starts(count=3, spread=0.2, seed=2), **kw
    )
    assert float(jnp.min(longer.loss)) < float(jnp.min(new.loss))
    with pytest.raises(dm.ArgumentTypeError, match="give `convergence=` or its fields"):
        F.fit(_loss, m0, y, convergence=F.Convergence(), steps=3)
    with pytest.raises(dm.ArgumentTypeError, match="give `starts=` or its fields"):
        F.fit(_loss, m0, y, starts=F.Starts(count=2), seed=3)
    with pytest.raises(dm.ArgumentTypeError, match="unexpected keyword argument 'stepz'"):
        F.fit(_loss, m0, y, stepz=3)  # pyright: ignore[reportCallIssue]


def test_geodesic_levenberg_marquardt_steps_by_half_the_acceleration_and_follows_a_curved_valley():
    """With `geodesic=True` a step is the damped Gauss–Newton step `δ` plus half the
    geodesic acceleration `a` (the damped system solved for the residual's second
    derivative along `δ`), both from closed forms here; and on Rosenbrock's curved
    valley it reaches the zero at (1, 1)."""
    from diffmech import _fit

    def r(v):
        x, y = v[0], v[1]
        return jnp.stack([x**2 + y - 1.0, x - y**2, x * y])

    v0 = np.array([0.6, 0.5])
    x, y = v0
    J = np.array([[2 * x, 1.0], [1.0, -2 * y], [y, x]])
    H, g = J.T @ J, J.T @ np.asarray(r(jnp.asarray(v0)))
    damped = H + 1e-3 * np.diag(np.diag(H))  # (the first step's damping)
    delta = np.linalg.solve(damped, -g)
    dx, dy = delta
    a = np.linalg.solve(damped, -J.T @ np.array([2 * dx**2, -2 * dy**2, 2 * dx * dy]))
    assert 2 * np.linalg.norm(a) <= 0.75 * np.linalg.norm(delta)  # (the acceleration is added: its bound holds)
    plain, _, _ = _fit.levenberg_marquardt(r, jnp.asarray(v0), 1)
    geodesic, _, _ = _fit.levenberg_marquardt(r, jnp.asarray(v0), 1, geodesic=True)
    np.testing.assert_allclose(np.asarray(plain), v0 + delta, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(geodesic), v0 + delta + a / 2, rtol=0, atol=1e-14)
    assert np.linalg.norm(a) > 1e-2  # (the two differ measurably)

    def rosenbrock(v):
        return jnp.stack([10.0 * (v[1] - v[0] ** 2), 1.0 - v[0]])

    v, losses, _ = _fit.levenberg_marquardt(rosenbrock, jnp.asarray([-1.2, 1.0]), 60, geodesic=True)
    assert float(losses[-1]) < 1e-24
    np.testing.assert_allclose(np.asarray(v), [1.0, 1.0], rtol=0, atol=1e-12)


def test_projected_levenberg_marquardt_reaches_an_optimum_that_leans_on_a_bound():
    """With `bounds`, a coordinate at a bound that the descent would take out of the box
    is held and the step is Gauss–Newton's on the others: on Rosenbrock's valley with
    x ≤ 1/2 the optimum is (1/2, 1/4) (on the bound, y = x² there; closed form), reached
    to round-off in a few steps from either side; the bounds are never left; a bound
    the optimum does not touch changes nothing; and on a linear least-squares problem
    with box bounds it agrees with SciPy's bounded solver (`lsq_linear`, an independent
    active-set method)."""
    from scipy.optimize import lsq_linear

    from diffmech import _fit

    def rosenbrock(v):
        return jnp.stack([10.0 * (v[1] - v[0] ** 2), 1.0 - v[0]])

    inf = jnp.inf
    for v0, geodesic in (([-1.2, 1.0], False), ([0.4, 0.9], True), ([0.5, 0.0], True)):
        box = (jnp.asarray([-inf, -inf]), jnp.asarray([0.5, inf]))
        v, losses, grads = _fit.levenberg_marquardt(rosenbrock, jnp.asarray(v0), 30, geodesic, box)
        # (y to √(ε f / 100): a step is taken only where it lowers the sum, which is flat
        # to round-off within that of the optimum; x exactly on its bound)
        np.testing.assert_allclose(np.asarray(v), [0.5, 0.25], rtol=0, atol=1e-9)
        np.testing.assert_allclose(float(losses[-1]), 0.25, rtol=1e-14)
        assert float(grads[-1]) < 1e-7  # (the projected gradient: x's part held)
    free, _, _ = _fit.levenberg_marquardt(rosenbrock, jnp.asarray([-1.2, 1.0]), 60, True)
    loose, _, _ = _fit.levenberg_marquardt(
        rosenbrock, jnp.asarray([-1.2, 1.0]), 60, True, (jnp.asarray([-5.0, -inf]), jnp.asarray([5.0, inf]))
    )
    np.testing.assert_array_equal(np.asarray(loose), np.asarray(free))

    rng = np.random.default_rng(3)
    A, b = rng.normal(size=(12, 5)), rng.normal(size=12)
    lo, hi = np.array([-0.1, -np.inf, 0.0, -0.2, -1.0]), np.array([0.1, 0.05, np.inf, 0.2, 1.0])
    ref = lsq_linear(A, b, bounds=(lo, hi), tol=1e-15, method="bvls")
    assert np.sum((ref.x <= lo + 1e-12) | (ref.x >= hi - 1e-12)) >= 2  # (bounds are active)
    v, _, _ = _fit.levenberg_marquardt(lambda x: jnp.asarray(A) @ x - jnp.asarray(b), jnp.zeros(5), 40, False, (lo, hi))
    assert np.all(np.asarray(v) >= lo) and np.all(np.asarray(v) <= hi)
    np.testing.assert_allclose(np.asarray(v), ref.x, rtol=0, atol=1e-11)

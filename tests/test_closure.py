"""The closure core on a problem with a closed form: a circle x² + y² = r² cut by the
line y = a x + u. The '+' intersection is x = (−a u + √(r²(1 + a²) − u²)) / (1 + a²);
it exists while |u| ≤ r √(1 + a²) (the motion limit, where the two branches meet)."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_round_off_equal, central_diff, rel_err

import diffmech as dm
from diffmech import _closure, closure


def residual(x, u, p):
    r, a = p["r"], p["a"]
    return jnp.stack([(x[0] ** 2 + x[1] ** 2 - r**2) / (2 * r), x[1] - a * x[0] - u])


def branch(x, u, p):  # position along the line relative to the foot of the perpendicular
    a = p["a"]
    foot = jnp.stack([-a * u, u]) / (1 + a**2)
    return (x[0] - foot[0]) + a * (x[1] - foot[1])


def exact(u, p):
    r, a = p["r"], p["a"]
    x = (-a * u + jnp.sqrt(r**2 * (1 + a**2) - u**2)) / (1 + a**2)
    return jnp.stack([x, a * x + u])


P = {"r": jnp.asarray(1.3), "a": jnp.asarray(0.4)}


def test_root_reaches_round_off_from_a_rough_guess():
    sol = closure.root(residual, jnp.array([1.0, 0.0]), jnp.asarray(0.3), P, condition=True)
    assert sol.result == closure.RESULTS.successful
    assert float(sol.residual) <= 1e-15
    np.testing.assert_allclose(sol.value, exact(0.3, P), rtol=0, atol=1e-15)
    assert 1 <= float(sol.condition) < 10


def test_implicit_gradients_match_closed_form_and_finite_differences():
    def f(theta):  # theta = (u, r, a)
        p = {"r": theta[1], "a": theta[2]}
        return closure.root(residual, jnp.array([1.0, 0.5]), theta[0], p).value

    theta = jnp.array([0.3, 1.3, 0.4])
    J_impl = jax.jit(jax.jacrev(f))(theta)  # each one program (op by op: ~40 small ones)
    J_fwd = jax.jit(jax.jacfwd(f))(theta)
    J_exact = jax.jit(jax.jacfwd(lambda t: exact(t[0], {"r": t[1], "a": t[2]})))(theta)
    J_fd = central_diff(lambda t: f(jnp.asarray(t)), theta)
    assert rel_err(J_impl, J_exact) < 1e-12
    assert rel_err(J_fwd, J_exact) < 1e-12
    assert rel_err(J_impl, J_fd) < 1e-8


def test_gradient_does_not_differentiate_iterations():
    # the derivative must not depend on the warm start (it would if the iterations were unrolled)
    g = [
        jax.grad(lambda u: closure.root(residual, x0, u, P).value[0])(0.3)
        for x0 in (jnp.array([1.0, 0.5]), jnp.array([2.0, 1.0]))
    ]
    assert float(g[0]) == pytest.approx(float(g[1]), rel=1e-13)


def test_a_residual_may_carry_its_own_jacobian():
    # the core's Newton steps, rates and condition numbers use `fn.jacobian` when the
    # residual has one: the exact one changes nothing; a wrong one (twice the true
    # Jacobian: Newton degrades to a linearly converging chord) is visibly used
    def with_jacobian(scale):
        def fn(x, u, p):
            return residual(x, u, p)

        fn.jacobian = lambda x, u, p: scale * jax.jacfwd(residual)(x, u, p)
        return fn

    u, x0 = jnp.asarray(0.3), jnp.array([1.0, 0.0])
    ref = closure.root(residual, x0, u, P, condition=True)
    own = closure.root(with_jacobian(1.0), x0, u, P, condition=True)
    assert own.result == closure.RESULTS.successful
    np.testing.assert_allclose(own.value, ref.value, rtol=0, atol=1e-15)
    assert int(own.steps) == int(ref.steps)
    assert float(own.condition) == pytest.approx(float(ref.condition), rel=1e-12)
    xd, xdd = closure.rates(with_jacobian(1.0), ref.value, u, P, jnp.asarray(1.0))
    xd_ref, xdd_ref = closure.rates(residual, ref.value, u, P, jnp.asarray(1.0))
    np.testing.assert_allclose(xd, xd_ref, rtol=1e-13)
    np.testing.assert_allclose(xdd, xdd_ref, rtol=1e-13)
    wrong = closure.root(with_jacobian(2.0), x0, u, P, throw=False)
    assert int(wrong.steps) > int(ref.steps) + 5
    assert float(closure.condition(with_jacobian(2.0), ref.value, u, P)) == pytest.approx(
        float(ref.condition), rel=1e-12
    )
    xd_wrong, _ = closure.rates(with_jacobian(2.0), ref.value, u, P, jnp.asarray(1.0))
    np.testing.assert_allclose(xd_wrong, xd_ref / 2, rtol=1e-13)


def test_failure_is_a_status_not_garbage():
    u_bad = jnp.asarray(2.0)  # > r √(1 + a²) = 1.4
    guess = jnp.array([0.5, 1.0])
    sol = jax.jit(lambda u: closure.root(residual, guess, u, P, throw=False))(u_bad)
    # beyond the motion limit Newton wanders (no root to converge to) without ever halving
    # the residual: the core names the motion limit, not the step count
    assert sol.result == closure.RESULTS.motion_limit
    np.testing.assert_array_equal(sol.value, guess)  # the guess, finite
    # the residual reported is the one at the value returned: the guess's
    assert float(sol.residual) == pytest.approx(float(jnp.max(jnp.abs(residual(guess, u_bad, P)))), rel=1e-15)
    # throw=True (the default of a single solve): eagerly a MotionLimitError naming
    # the input and the residual; under jit Equinox's run-time error, same message
    with pytest.raises(dm.MotionLimitError, match=r"No closed configuration.*At input 2: closure residual 1\.2"):
        closure.root(residual, guess, u_bad, P)
    with pytest.raises(Exception, match="No closed configuration"):
        jax.block_until_ready(jax.jit(lambda u: closure.root(residual, guess, u, P).value)(u_bad))


def test_root_reports_the_real_cause_of_a_failure():
    u = jnp.asarray(0.3)
    # a NaN parameter: non-finite, whatever the guess
    nan = closure.root(residual, jnp.array([1.0, 0.0]), u, {"r": jnp.asarray(jnp.nan), "a": P["a"]}, throw=False)
    assert nan.result == closure.RESULTS.nonfinite
    # a guess where the Jacobian [[x/r, y/r], [−a, 1]] is singular (x = −a y, e.g. 0):
    # plain Newton stops there (`singular_configuration`); the damped step of `robust` goes on
    at = jnp.array([0.0, 0.0])
    assert closure.root(residual, at, u, P, robust=False, throw=False).result == closure.RESULTS.singular_configuration
    with pytest.raises(dm.SingularError):
        closure.root(residual, at, u, P, robust=False)
    ok = closure.root(residual, at, u, P)
    np.testing.assert_allclose(ok.value, exact(0.3, P), rtol=0, atol=1e-15)
    # too few steps from a rough guess: out of steps, not a motion limit
    short = closure.root(residual, jnp.array([5.0, -4.0]), u, P, max_steps=2, throw=False)
    assert short.result == closure.RESULTS.nonlinear_max_steps_reached
    assert closure.root(residual, jnp.array([5.0, -4.0]), u, P).converged


def test_masked_loss_of_failed_solve_has_finite_gradient():
    def loss(u):
        sol = closure.root(residual, jnp.array([0.5, 1.0]), u, P, throw=False)
        return jnp.where(sol.converged, sol.value[0], 0.0)

    assert float(jax.grad(loss)(jnp.asarray(2.0))) == 0.0  # masked out, finite
    # where the solve converges the mask passes the closed form's derivative through
    dx = jax.grad(lambda u: exact(u, P)[0])(jnp.asarray(0.3))
    assert float(jax.grad(loss)(jnp.asarray(0.3))) == pytest.approx(float(dx), rel=1e-12)


def test_sweep_stops_at_motion_limit_and_masks_the_rest():
    limit = float(P["r"] * jnp.sqrt(1 + P["a"] ** 2))
    us = jnp.linspace(-1.0, 1.8, 57)
    s = jax.jit(lambda us: closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, branch=branch))(us)
    ok = np.asarray(s.converged)
    inside = np.asarray(us) < limit
    # converged exactly on a prefix, and never beyond the limit
    first_bad = int(np.argmin(ok))
    assert not ok[first_bad:].any() and ok[:first_bad].all()
    assert not (ok & ~inside).any()
    assert first_bad >= int(np.argmax(~inside)) - 2  # stops within two steps of the true limit
    np.testing.assert_allclose(s.value[ok], jax.vmap(exact, (0, None))(us[ok], P), atol=1e-14)
    assert float(jnp.max(s.residual[ok])) <= 1e-14
    status = s.status._value
    assert int(status[first_bad]) != int(closure.RESULTS.not_reached._value)
    assert np.all(np.asarray(status[first_bad + 1 :]) == int(closure.RESULTS.not_reached._value))
    assert s.result != closure.RESULTS.successful
    assert np.isnan(np.asarray(s.masked())[~ok]).all()
    # the condition number grows towards the limit, where the branches meet
    c = np.asarray(s.condition)[ok]
    assert c[-1] > 5 * c[0]


def test_sweep_detects_branch_switch():
    us = jnp.linspace(0.0, 0.5, 11)
    s = closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, branch=branch, branch_sign=-1.0)
    assert not bool(s.converged[0])
    assert s.result == closure.RESULTS.branch_switch


def test_sweep_vmaps_over_designs_and_differentiates():
    us = jnp.linspace(0.0, 0.8, 21)
    rs = jnp.array([1.1, 1.3, 1.6])

    def path_sum(r):
        s = closure.sweep(residual, jnp.array([1.0, 0.0]), us, {"r": r, "a": P["a"]}, branch=branch)
        return jnp.sum(jnp.where(s.converged[:, None], s.value, 0.0))

    vals = jax.jit(jax.vmap(path_sum))(rs)  # one program (eagerly, vmap runs op by op)
    ref = [float(jnp.sum(jax.vmap(exact, (0, None))(us, {"r": r, "a": P["a"]}))) for r in rs]
    np.testing.assert_allclose(vals, ref, rtol=1e-13)
    g = jax.jit(jax.grad(path_sum))(rs[1])
    g_ref = jax.grad(lambda r: jnp.sum(jax.vmap(exact, (0, None))(us, {"r": r, "a": P["a"]})))(rs[1])
    assert rel_err(g, g_ref) < 1e-12


def test_rates_match_closed_form_and_finite_differences():
    u, udot, uddot = 0.3, 0.7, -0.4
    x = exact(u, P)
    xdot, xddot = closure.rates(residual, x, jnp.asarray(u), P, jnp.asarray(udot), jnp.asarray(uddot))

    def path(t):
        return exact(u + udot * t + 0.5 * uddot * t**2, P)

    v_ref = jax.jacfwd(path)(0.0)
    a_ref = jax.jacfwd(jax.jacfwd(path))(0.0)
    assert rel_err(xdot, v_ref) < 1e-13
    assert rel_err(xddot, a_ref) < 1e-12
    h = 1e-4
    a_fd = (np.asarray(path(h)) - 2 * np.asarray(path(0.0)) + np.asarray(path(-h))) / h**2
    assert rel_err(xddot, a_fd) < 1e-6


# --------------------------------------------------------------------------- sweep strategies


def _closed_form(u, p):  # the '+' intersection and whether it exists (a family's closed form)
    r, a = p["r"], p["a"]
    disc = r**2 * (1 + a**2) - u**2
    x = (-a * u + jnp.sqrt(jnp.maximum(disc, 0.0))) / (1 + a**2)
    return jnp.stack([x, a * x + u]), disc >= 0


@pytest.mark.parametrize("predictor", ["coarse", "closed_form"])
def test_parallel_sweep_equals_sequential_continuation(predictor):
    # every strategy must give what a step-by-step continuation gives: the same mask,
    # the same statuses (the motion limit at the same input), the same solutions
    us = jnp.linspace(-1.0, 1.8, 57)
    pred = closure.Coarse(stride=5) if predictor == "coarse" else closure.ClosedForm(_closed_form)
    s = jax.jit(lambda us: closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, branch=branch, predictor=pred))(us)
    c = jax.jit(lambda us: closure.continuation(residual, jnp.array([1.2, 0.0]), us, P, branch=branch))(us)
    np.testing.assert_array_equal(s.converged, c.converged)
    np.testing.assert_array_equal(s.status._value, c.status._value)
    ok = np.asarray(c.converged)
    assert 0 < ok.sum() < ok.size
    # equal, and equal to the closed form, to the round-off the conditioning allows (it
    # grows towards the motion limit, where the closed form's square root loses digits)
    tol = 4e-16 * np.maximum(np.asarray(c.condition[ok]), 1.0)
    for ref in (c.value[ok], jax.vmap(exact, (0, None))(us[ok], P)):
        err = np.max(np.abs(np.asarray(s.value[ok]) - np.asarray(ref)), axis=1)
        assert np.all(err <= tol), (err, tol)


def test_fallback_redoes_the_sweep_from_the_first_uncertified_input():
    # a closed form that is wrong (10 % off) on a stretch of inputs: the corrector's
    # single step cannot certify those, and the fallback's continuation must solve
    # them from the last certified input, to round-off
    def rough(u, p):
        x, ok = _closed_form(u, p)
        return jnp.where((u > 0.2) & (u < 0.5), 1.1 * x, x), ok

    us = jnp.linspace(0.0, 0.8, 33)
    s = closure.sweep(
        residual,
        jnp.array([1.2, 0.0]),
        us,
        P,
        branch=branch,
        predictor=closure.ClosedForm(rough),
        corrector=closure.Newton(1),
    )
    assert bool(jnp.all(s.converged))
    np.testing.assert_allclose(s.value, jax.vmap(exact, (0, None))(us, P), rtol=0, atol=1e-15)
    fixed = (np.asarray(us) > 0.2) & (np.asarray(us) < 0.5)
    assert np.all(np.asarray(s.steps)[fixed] > 1)  # solved by the fallback's Newton, not the single step


def test_fallback_runs_only_on_the_lanes_that_need_it():
    # under vmap, lanes that need the fallback are gathered in chunks: count the chunks run
    calls = []

    def run(o):
        jax.debug.callback(lambda v: calls.append(np.shape(v)), o["rows"])
        return o["rows"] + 1.0

    def one(need, v):
        return _closure.when_needed(need, {"rows": v}, run, chunk=16)

    v = jnp.arange(37.0)
    for needed in ([], [3], [0, 5, 17, 36], list(range(20))):
        calls.clear()
        need = jnp.zeros(37, bool).at[jnp.asarray(needed, int)].set(True)
        out = jax.jit(jax.vmap(one))(need, v)
        jax.block_until_ready(out)
        np.testing.assert_array_equal(out, np.asarray(v) + np.asarray(need))
        # (under vmap the callback is called once per lane of a chunk)
        assert len(calls) == 16 * -(-len(needed) // 16), (needed, len(calls))
    # unbatched: skipped when not needed, run when needed
    calls.clear()
    assert float(one(jnp.asarray(False), jnp.asarray(2.0))) == 2.0 and not calls
    assert float(one(jnp.asarray(True), jnp.asarray(2.0))) == 3.0 and len(calls) == 1


def test_batched_sweep_with_fallback_equals_single_sweeps():
    us = jnp.linspace(-1.0, 1.8, 41)
    rs = jnp.array([1.1, 1.3, 1.6, 2.5])

    def one(r):
        return closure.sweep(
            residual,
            jnp.array([1.0, 0.0]),
            us,
            {"r": r, "a": P["a"]},
            branch=branch,
            predictor=closure.Coarse(stride=8),
        )

    batch = jax.jit(jax.vmap(one))(rs)
    for i, r in enumerate(rs):
        single = one(r)
        np.testing.assert_array_equal(batch.converged[i], single.converged)
        np.testing.assert_array_equal(batch.status._value[i], single.status._value)
        ok = np.asarray(single.converged)
        np.testing.assert_allclose(batch.value[i][ok], single.value[ok], rtol=0, atol=1e-15)
    assert not bool(batch.converged[:3].all()) and bool(batch.converged[3].all())


def test_corrector_certifies_a_guess_at_round_off_and_only_that():
    # the exact intersection, moved by a few ulps (a closed form's round-off), is a
    # solution: Newton(0) certifies it without a step; moved by 1e-12 it is not
    u = jnp.asarray(0.37)
    x = exact(u, P)
    corr = closure.Newton(0)
    for k, want in ((0, True), (3, True), (6, True), (1e4, False)):
        guess = x + k * jnp.finfo(x.dtype).eps * jnp.array([1.0, -1.0])
        _, res, _, is_exact = corr.correct(residual, guess, u, P)
        assert bool(is_exact) == want, (k, float(res) / float(jnp.finfo(x.dtype).eps))
    _, res, _, _ = corr.correct(residual, x + 6 * jnp.finfo(x.dtype).eps * jnp.array([1.0, -1.0]), u, P)
    assert float(res) > 2 * float(jnp.finfo(x.dtype).eps)  # beyond the old absolute 2ε


@pytest.mark.parametrize("predictor", ["coarse", "closed_form"])
def test_deferred_fallback_leaves_the_rest_for_the_full_program(predictor):
    # Deferred(): the program without the sequential engine. Where the fallback would
    # run, every input from the first uncertified one is `deferred` (unconverged), the
    # certified prefix is the full sweep's; a proven motion limit is final as it is
    us = jnp.linspace(-1.0, 1.8, 57)
    x0 = jnp.array([1.2, 0.0])
    pred = closure.Coarse(stride=5) if predictor == "coarse" else closure.ClosedForm(_closed_form)
    full = closure.sweep(residual, x0, us, P, branch=branch, predictor=pred)
    part = closure.sweep(residual, x0, us, P, branch=branch, predictor=pred, fallback=closure.Deferred())
    code = np.asarray(part.status._value)
    deferred = code == int(_closure._code(closure.RESULTS.deferred))
    ok = np.asarray(part.converged)
    assert bool(closure.has_deferred(part.status)) == deferred.any()
    if predictor == "closed_form":  # the closed form proves the limit: nothing deferred, identical result
        assert not deferred.any()
        np.testing.assert_array_equal(code, np.asarray(full.status._value))
    else:  # the coarse continuation stops at its limit node: the rest is deferred
        assert deferred.any() and not ok[deferred].any()
        first = int(np.argmax(deferred))
        assert np.all(deferred[first:]) and np.all(ok[:first])
    np.testing.assert_array_equal(ok, np.asarray(full.converged) & ok)
    assert_round_off_equal(part.value[ok], full.value[ok], full.condition[ok], "certified prefix")
    # under vmap: only the lanes that need the fallback are deferred
    rs = jnp.array([1.1, 2.5])
    batch = jax.jit(
        jax.vmap(
            lambda r: closure.sweep(
                residual,
                jnp.array([1.0, 0.0]),
                us,
                {"r": r, "a": P["a"]},
                branch=branch,
                predictor=pred,
                fallback=closure.Deferred(),
            )
        )
    )(rs)
    lanes = np.any(np.asarray(batch.status._value) == int(_closure._code(closure.RESULTS.deferred)), axis=1)
    assert lanes[1] == False and lanes[0] == (predictor == "coarse")  # noqa: E712


def test_coarse_predictor_is_the_hermite_interpolant_of_the_exact_solution():
    # `Coarse` interpolates between continuation nodes 6 inputs apart with cubic
    # Hermite polynomials whose slopes are the implicit function theorem's tangents
    # (taken from each node's last Newton step): its guesses must equal that
    # interpolant built here from the closed form and its derivative (to the accuracy
    # of a tangent at Newton's last iterate), an O(h⁴) predictor
    us = jnp.linspace(-1.0, 1.0, 41)
    opts = _closure._Options(fn=residual, branch=None, atol=1e-10, xtol=1e-10, max_steps=24)
    pred = jax.jit(lambda x0: closure.Coarse(stride=6).predict(opts, x0, us, P))(jnp.array([1.2, 0.0]))
    assert bool(jnp.all(pred.reached))
    u = np.asarray(us)
    x = np.asarray(jax.jit(jax.vmap(exact, (0, None)))(us, P))
    dx = np.asarray(jax.jit(jax.vmap(jax.jacfwd(exact), (0, None)))(us, P))
    nodes = list(range(0, 41, 6)) + [40]
    want = np.empty_like(x)
    for a, b in zip(nodes[:-1], nodes[1:]):
        h = u[b] - u[a]
        for k in range(a, b + 1):
            t = (u[k] - u[a]) / h
            h00, h10, h01, h11 = 2 * t**3 - 3 * t**2 + 1, t**3 - 2 * t**2 + t, -2 * t**3 + 3 * t**2, t**3 - t**2
            want[k] = h00 * x[a] + h10 * h * dx[a] + h01 * x[b] + h11 * h * dx[b]
    np.testing.assert_allclose(np.asarray(pred.guess), want, rtol=0, atol=1e-11)
    assert 1e-6 < np.abs(want - x).max() < 1e-3  # an interpolant, not the solution


def test_det_branch_and_conditioning_come_from_the_corrector_jacobian():
    # branch="det": the closure Jacobian's determinant, here (x + a y) / r, positive on
    # the '+' intersection and zero only at the motion limit, so the sweep stops where
    # the explicit invariant stops it; its conditioning equals the 1-norm condition
    # number computed apart at each solution (NaN where nothing converged)
    us = jnp.linspace(-1.0, 1.8, 57)
    for predictor in (closure.Coarse(stride=5), closure.ClosedForm(_closed_form)):
        d = closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, branch="det", predictor=predictor)
        c = closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, branch=branch, predictor=predictor)
        np.testing.assert_array_equal(d.converged, c.converged)
        np.testing.assert_array_equal(d.status._value, c.status._value)
        ok = np.asarray(d.converged)
        assert 0 < ok.sum() < ok.size
        ref = [float(closure.condition(residual, x, u, P)) for x, u in zip(d.value[ok], us[ok])]
        np.testing.assert_allclose(np.asarray(d.condition)[ok], ref, rtol=1e-13)
        assert np.all(np.isnan(np.asarray(d.condition)[~ok]))
    with pytest.raises(ValueError, match="branch must be a callable, 'det' or None"):
        closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, branch="determinant")


@pytest.mark.parametrize("invariant", [branch, "det"])
def test_resumed_deferred_sweep_equals_the_one_program_sweep(invariant):
    # the eager entry points finish a `Deferred()` sweep with the fallback alone, from
    # its first deferred input: the same mask, statuses, solutions and conditioning as
    # the sweep with the sequential fallback in one program
    us = jnp.linspace(-1.0, 1.8, 57)
    kw = dict(branch=invariant, predictor=closure.Coarse(stride=5))
    part = closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, fallback=closure.Deferred(), **kw)
    assert bool(closure.has_deferred(part.status))
    done = _closure.resume(residual, part, P, branch=closure.Branch(invariant))
    full = closure.sweep(residual, jnp.array([1.2, 0.0]), us, P, **kw)
    np.testing.assert_array_equal(done.converged, full.converged)
    np.testing.assert_array_equal(done.status._value, full.status._value)
    ok = np.asarray(full.converged)
    assert 0 < ok.sum() < ok.size
    assert_round_off_equal(done.value[ok], full.value[ok], full.condition[ok], "resumed")
    # the condition number of solutions a round-off apart: relatively within about ε·cond² of each other
    c = np.asarray(full.condition[ok])
    assert np.all(np.abs(np.asarray(done.condition[ok]) - c) <= 8 * np.finfo(float).eps * np.maximum(c, 1) ** 2 * c)
    np.testing.assert_array_equal(done.steps, full.steps)  # the corrector's rows kept, not redone


def test_vmap_chunked_equals_vmap_with_an_overlapping_last_chunk():
    # 10 elements in chunks of 4: chunks at 0, 4 and 6 (the last overlaps the second)
    rng = np.random.default_rng(7)
    xs = {"a": jnp.asarray(rng.normal(size=(10, 3))), "b": jnp.asarray(rng.normal(size=(10,)))}

    def fn(x):
        return jnp.sin(x["a"]) * x["b"], jnp.sum(x["a"] ** 2) + x["b"]

    ref = jax.vmap(fn)(xs)
    for chunk in (1, 3, 4, 10, None):
        out = closure.vmap_chunked(fn, xs, chunk)
        for o, r in zip(out, ref, strict=True):
            assert o.shape == r.shape
            np.testing.assert_array_equal(np.asarray(o), np.asarray(r))

    # reverse mode through the chunks, against central differences
    def loss(a):
        y, z = closure.vmap_chunked(fn, {"a": a, "b": xs["b"]}, 4)
        return jnp.sum(y**2) + jnp.sum(jnp.cos(z))

    g = np.asarray(jax.grad(loss)(xs["a"]))
    fd = central_diff(lambda a: float(loss(jnp.asarray(a))), np.asarray(xs["a"]), 1e-6)
    assert rel_err(g, fd) <= 1e-7


def test_an_eager_sweep_is_one_program_and_a_new_float_compiles_nothing():
    # called eagerly, the core compiles one program (JAX would otherwise run it op by op,
    # compiling ~200 programs for this sweep); a new Python float among the parameters is
    # an argument of that program, not a reason to compile another
    lowered, listening = [], [True]

    def listen(event, duration, **kwargs):
        if listening[0] and event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            lowered.append(duration)

    us = jnp.linspace(0.0, 0.8, 17)  # a length no other test sweeps
    x = jax.vmap(exact, (0, None))(us, {"r": jnp.asarray(1.25), "a": jnp.asarray(0.4)})  # the reference, first
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        s = closure.sweep(residual, jnp.array([1.0, 0.0]), us, {"r": 1.3, "a": 0.4})
        assert bool(s.converged.all()) and len(lowered) <= 3, len(lowered)
        lowered.clear()
        s = closure.sweep(residual, jnp.array([1.0, 0.0]), us, {"r": 1.25, "a": 0.4})
        assert lowered == [], len(lowered)
        np.testing.assert_allclose(s.value, x, rtol=0, atol=1e-14)
    finally:
        listening[0] = False


def test_a_predictor_without_its_method_is_refused_at_construction():
    # the abstract classes are abstract (Equinox's abstract/final rule): a subclass that
    # forgets `predict` cannot be made, and a closed form of one's own is a final class
    class Forgetful(closure.AbstractPredictor):
        stride: int = 2

    with pytest.raises(TypeError, match="predict"):
        Forgetful()

    class Own(closure.AbstractClosedForm):
        solution: Callable = eqx.field(static=True)

    pred = Own(lambda u, p: (jnp.stack([jnp.cos(u), jnp.sin(u)]), u < 1.0))
    out = pred.predict(None, jnp.zeros(2), jnp.array([0.0, 0.5, 2.0]), None)
    np.testing.assert_array_equal(np.asarray(out.reached), [True, True, False])
    np.testing.assert_allclose(np.asarray(out.guess)[1], [np.cos(0.5), np.sin(0.5)], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="must be a function"):
        Own(3.0)


def test_branch_and_convergence_objects_equal_the_separate_keywords():
    # `Branch` (invariant, sign, max_step) and `Convergence` (atol, xtol, max_steps) are
    # the separate keywords' fields: the same sweep; the sign taken effect (the other
    # sign is the other assembly: every input a branch switch or beyond)
    us = jnp.linspace(-1.0, 1.8, 57)
    x0 = jnp.array([1.2, 0.0])
    old = closure.sweep(residual, x0, us, P, branch=branch, branch_sign=1.0, max_step=0.1, atol=1e-11, max_steps=12)
    new = closure.sweep(
        residual,
        x0,
        us,
        P,
        branch=closure.Branch(branch, 1.0, 0.1),
        convergence=closure.Convergence(atol=1e-11, max_steps=12),
    )
    np.testing.assert_array_equal(old.value, new.value)
    np.testing.assert_array_equal(old.status._value, new.status._value)
    assert bool(new.converged[0])
    other = closure.sweep(residual, x0, us, P, branch=closure.Branch(branch, -1.0, 0.1))
    assert not bool(other.converged[0])
    cont = closure.continuation(residual, x0, us, P, branch=closure.Branch(branch, 1.0, 0.1))
    np.testing.assert_array_equal(
        cont.status._value,
        closure.continuation(residual, x0, us, P, branch=branch, branch_sign=1.0, max_step=0.1).status._value,
    )
    with pytest.raises(dm.ArgumentTypeError, match="give `branch=Branch"):
        closure.sweep(residual, x0, us, P, branch=closure.Branch(branch), branch_sign=1.0)
    with pytest.raises(dm.ArgumentTypeError, match="give `convergence=` or its fields"):
        closure.sweep(residual, x0, us, P, convergence=closure.Convergence(), atol=1e-9)

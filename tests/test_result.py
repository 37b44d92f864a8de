"""The result contract (`diffmech._result`), one parametrised module for every family:
a failure is a status and a mask, never garbage; `throw=True` raises the failure's
`ClosureError` subclass eagerly, naming the sample, its input and the residual, and
Equinox's run-time error with the same status under `jit`; a batch equals its
singles (`vmap`); gradients of masked losses equal central differences.

Each case is a family's entry point on an input range it cannot finish, with the
sample where it must stop known independently of the solver (a closed form).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_round_off_equal

import diffmech as dm
from diffmech import closure, fourbar, linkage, parallel as par
from diffmech._result import AbstractResult

# the circle x² + y² = r² cut by the line y = a x + u: no intersection beyond
# |u| = r √(1 + a²) (as in test_closure)
P = {"r": jnp.asarray(1.3), "a": jnp.asarray(0.4)}


def _circle(x, u, p):
    r, a = p["r"], p["a"]
    return jnp.stack([(x[0] ** 2 + x[1] ** 2 - r**2) / (2 * r), x[1] - a * x[0] - u])


US = jnp.linspace(0.0, 1.8, 37)


def _closure_sweep(p, throw=False):
    return closure.sweep(_circle, jnp.array([1.2, 0.5]), US, p, throw=throw)


def _closure_case(throw=False, p=P):
    limit = float(p["r"] * jnp.sqrt(1 + p["a"] ** 2))
    return _closure_sweep(p, throw), int(np.argmax(np.asarray(US) > limit))


# a crank-rocker's crank turned past its limit: lengths (crank, coupler, rocker,
# ground) with |BD| = |l1 e^{iθ} − l4| > l2 + l3 beyond θ_max (law of cosines)
FB = dm.FourBar(lengths=(1.0, 1.2, 1.0, 2.0))


def _fourbar_limit(fb):
    l1, l2, l3, l4 = (float(v) for v in fb.lengths)
    return math.acos((l1**2 + l4**2 - (l2 + l3) ** 2) / (2 * l1 * l4))


def _fourbar_case(throw=False):
    th = jnp.linspace(0.0, 3.0, 31)
    return fourbar.sweep(FB, th, throw=throw), int(np.argmax(np.asarray(th) > _fourbar_limit(FB)))


def _linkage_case(throw=False):
    # the spherical Watt-I of seed 003 stops at a motion limit after 49 of its 180 steps
    # (located independently of the core by test_linkage's reference)
    lk = dm.examples.spherical_watt1()
    m = linkage.sweep(lk, throw=throw)
    return m, 49


def _parallel_case(throw=False):
    # a spiral ten times wider than the legs can follow: the first sample where a leg's
    # stroke leaves its limits, read from the one-step labels (no Newton)
    mech = par.StewartPlatform()
    wide = par.stewart_spiral(mech, jnp.arange(0.0, 2.0, 0.025), radius=0.05)
    one = par.inverse_kinematics(mech, wide, method="one_step", throw=False)
    lo = np.concatenate([np.asarray(c.lower) for c in mech.chains])
    hi = np.concatenate([np.asarray(c.upper) for c in mech.chains])
    lab = np.asarray(one.labels)
    first = int(np.argmax(~np.all((lab >= lo) & (lab <= hi), axis=1)))
    return par.inverse_kinematics(mech, wide, throw=throw), first


CASES = {"closure": _closure_case, "fourbar": _fourbar_case, "linkage": _linkage_case, "parallel": _parallel_case}
ERRORS = {
    "closure": dm.MotionLimitError,
    "fourbar": dm.MotionLimitError,
    "linkage": dm.AssemblyError,
    "parallel": dm.MotionLimitError,
}


@pytest.mark.parametrize("family", list(CASES))
def test_a_failure_is_a_status_and_a_mask_and_throw_names_it(family):
    res, k = CASES[family]()
    assert isinstance(res, AbstractResult)
    ok = np.asarray(res.converged)
    codes = np.asarray(jax.tree.leaves(res.status)[0])
    success = int(jax.tree.leaves(closure.RESULTS.successful)[0])
    assert 0 < k < ok.size and ok[:k].all() and not ok[k:].any(), (k, ok)
    assert (codes[:k] == success).all() and codes[k] != success
    assert res.result == jax.tree.map(lambda c: c[k], res.status)  # the first failure
    assert res.result != closure.RESULTS.successful and int(res.n_converged) == k
    masked = np.asarray(res.masked())
    assert np.isfinite(masked[:k]).all() and np.isnan(masked[k:]).all()
    assert np.isfinite(np.asarray(res.residual)[:k]).all()
    with pytest.raises(ERRORS[family], match=rf"sample {k}\b.*residual") as e:
        CASES[family](throw=True)
    assert e.value.index[-1] == k and e.value.residual is not None


def test_throw_means_the_same_under_jit():
    # the eager error's status, as Equinox's run-time error of the compiled program
    th = jnp.linspace(0.0, 3.0, 31)
    with pytest.raises(Exception, match="No closed configuration"):
        jax.block_until_ready(jax.jit(lambda f: fourbar.sweep(f, th, throw=True).q)(FB))
    ok = jax.jit(lambda f: fourbar.sweep(f, th, throw=True).q)(dm.FourBar(lengths=(0.5, 1.2, 1.0, 1.4)))
    assert np.isfinite(np.asarray(ok)).all()  # a crank that turns: no error
    # and for a single solve (throw=True is its default): beyond the motion limit, as eagerly
    with pytest.raises(Exception, match="No closed configuration"):
        jax.block_until_ready(jax.jit(lambda u: closure.root(_circle, jnp.array([0.5, 1.0]), u, P).value)(2.0))


def test_a_batch_equals_its_singles():
    r = jnp.asarray([1.3, 1.1])
    batched = jax.jit(jax.vmap(lambda r_: _closure_sweep({"r": r_, "a": P["a"]})))(r)  # one program (eagerly: op by op)
    for i in range(2):
        one, k = _closure_case(p={"r": r[i], "a": P["a"]})
        np.testing.assert_array_equal(np.asarray(batched.converged[i]), np.asarray(one.converged))
        assert_round_off_equal(batched.value[i], one.value, one.condition, f"lane {i}")
        assert jax.tree.map(lambda c: c[i], batched.result) == one.result
    fbs = dm.FourBar(lengths=[(1.0, 1.2, 1.0, 2.0), (0.5, 1.2, 1.0, 1.4)])
    th = jnp.linspace(0.0, 3.0, 31)
    both = fourbar.sweep(fbs, th)
    for i, lengths in enumerate(np.asarray(fbs.lengths)):
        one = fourbar.sweep(dm.FourBar(lengths=tuple(lengths)), th)
        np.testing.assert_array_equal(np.asarray(both.converged[i]), np.asarray(one.converged))
        np.testing.assert_allclose(np.asarray(both.masked()[i]), np.asarray(one.masked()), rtol=0, atol=1e-15)


def test_gradients_of_masked_losses_equal_central_differences():
    def closure_loss(r):
        s = _closure_sweep({"r": r, "a": P["a"]})
        return jnp.sum(jnp.where(s.converged, s.value[:, 0] * jnp.arange(37.0), 0.0))

    def fourbar_loss(l2):
        s = fourbar.sweep(dm.FourBar(lengths=jnp.stack([1.0, l2, 1.0, 2.0])), jnp.linspace(0.0, 1.5, 16))
        return jnp.sum(jnp.where(s.converged, s.q[:, 2] * jnp.arange(16.0), 0.0))

    n = _closure_case()[1]  # the inputs up to the motion limit u = r √(1 + a²)

    def closed_form_loss(r):  # the '+' intersection where it exists (the same mask)
        a, us = P["a"], US[:n]
        x = (-a * us + jnp.sqrt(r**2 * (1 + a**2) - us**2)) / (1 + a**2)
        return jnp.sum(x * jnp.arange(float(n)))

    # each loss and its gradient compiled once (eagerly, every primitive of the sweep
    # would be compiled on its own at each of the three evaluations)
    grads = {}
    for loss, x, h, rel in ((closure_loss, 1.3, 1e-7, 1e-6), (fourbar_loss, 1.2, 1e-5, 1e-7)):
        value, grads[loss] = jax.jit(loss), jax.jit(jax.grad(loss))
        g = float(grads[loss](jnp.asarray(x)))
        fd = (float(value(jnp.asarray(x + h))) - float(value(jnp.asarray(x - h)))) / (2 * h)
        assert g == pytest.approx(fd, rel=rel), (loss.__name__, g, fd)
    exact = float(jax.grad(closed_form_loss)(jnp.asarray(1.3)))
    assert float(grads[closure_loss](jnp.asarray(1.3))) == pytest.approx(exact, rel=1e-12)

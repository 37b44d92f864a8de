"""Sensitivity and tolerance analysis (`linkage.sensitivity`, `linkage.tolerance`):
exact Jacobians against central differences of the eager API, the first-order
covariance against `J Σ Jᵀ` from those differences, the Monte Carlo against the
first order (small tolerances: sampling error only) and its mean shift against the
second-order term `½ Σ σ_k² ∂²p/∂d_k²` from second differences (large tolerances)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import central_diff

import diffmech as dm
from diffmech import fourbar, linkage as L

LENGTHS = np.array([0.5, 1.9, 1.5, 2.0])  # a crank-rocker (Grashof)
POINT = np.array([0.6, 0.4])
THETA = np.linspace(0.0, 2 * np.pi, 37)
# with the linkage tests (the README's tolerance call reuses this module's programs)
pytestmark = pytest.mark.xdist_group("linkage")


def _coupler(d):
    """The coupler point's path for the dimensions `LENGTHS, POINT` shifted by `d`
    (6,), through the eager `fourbar.sweep` (independent of the analysis' program)."""
    fb = dm.FourBar(lengths=LENGTHS + d[:4])
    s = fourbar.sweep(fb, THETA, condition=False)
    assert bool(np.all(s.converged))
    return np.asarray(fourbar.coupler_point(fb, s.q, POINT + d[4:]))


def test_fourbar_sensitivity_and_tolerance_against_differences_to_second_order():
    fb = dm.FourBar(lengths=LENGTHS)
    s = L.sensitivity(fb, THETA, point=POINT)
    assert s.dimensions == ("l1", "l2", "l3", "l4", "px", "py") and s.outputs == ("P",)
    fd = np.stack([central_diff(lambda v, k=k: _coupler(np.eye(6)[k] * v[0]), np.zeros(1))[..., 0] for k in range(6)])
    fd = np.moveaxis(fd, 0, -1)
    assert np.max(np.abs(np.asarray(s.d("P")) - fd)) <= 1e-7 * np.max(np.abs(fd))
    # pylinkage's coefficient (mean displacement per unit change), from the differences
    assert np.allclose(s.coefficients("P"), np.mean(np.linalg.norm(fd, axis=1), axis=0), rtol=1e-7)
    assert s.ranking("P")[0][1] >= s.ranking("P")[-1][1]

    sigma = np.array([1e-4, 2e-4, 1e-4, 3e-4, 1e-4, 2e-4])
    small = L.tolerance(fb, THETA, sigma, samples=32768, point=POINT, seed=1)
    lin = np.einsum("nmd,d,nkd->nmk", fd, sigma**2, fd)
    assert np.max(np.abs(np.asarray(small.linear) - lin)) <= 1e-6 * np.max(np.abs(lin))
    assert small.samples == 32768 and np.all(np.asarray(small.valid) == 32768)
    # the covariance's sampling error is about 2 / sqrt(n) = 1.1 % an input; the second-order
    # term is 1e-4 of it here
    assert small.agreement("P") <= 0.03

    # larger tolerances: the mean moves by the second-order term; its prediction from
    # second central differences of the eager sweep, dimension by dimension
    big = 20 * sigma
    t = L.tolerance(fb, THETA, big, samples=32768, point=POINT, seed=2)
    h = 1e-3
    p0 = _coupler(np.zeros(6))
    second = sum(
        big[k] ** 2 * (_coupler(h * np.eye(6)[k]) - 2 * p0 + _coupler(-h * np.eye(6)[k])) / h**2 for k in range(6)
    )
    shift = np.asarray(t.mean_shift)
    assert np.max(np.abs(shift - 0.5 * second)) <= 0.05 * np.max(np.abs(0.5 * second))
    assert np.max(np.abs(0.5 * second)) > 1e-6  # a term the check can see (the std is ~1e-2)
    assert t.agreement("P") <= 0.05


def test_linkage_sensitivity_matches_central_differences_and_its_tolerance_the_first_order():
    lk = dm.examples.theo_jansen()
    inputs = np.asarray(L.default_inputs(lk))  # the README's motion: 180 steps of 2°
    motion = L.sweep(lk, inputs=inputs, condition=False)
    s = L.sensitivity(lk, motion)
    assert s.outputs == ("J8",) and s.jacobian.shape == (180, 2, len(s.dimensions))
    rows = [lk.joint(name.rsplit(".", 1)[0]) for name in s.dimensions]
    cols = ["xyzabc".index(name.rsplit(".", 1)[1]) % 3 for name in s.dimensions]

    def path(k, v):
        C = lk.coords.at[rows[k], cols[k]].add(v[0])
        m = L.sweep(eqx.tree_at(lambda l: l.coords, lk, C), inputs=inputs, condition=False)
        return np.asarray(m["J8"])

    fd = np.stack([central_diff(lambda v, k=k: path(k, v), np.zeros(1))[..., 0] for k in range(len(rows))], -1)
    assert np.max(np.abs(np.asarray(s.d("J8")) - fd)) <= 1e-6 * np.max(np.abs(fd))
    assert np.max(np.abs(fd)) > 0.5

    t = L.tolerance(lk, motion, {"J1": 1e-4, "J2.y": 2e-4, "J5": 5e-5}, samples=4096)
    sigma = np.asarray(t.sigma)
    assert sigma[s.dimensions.index("J1.x")] == 1e-4 and sigma[s.dimensions.index("J2.x")] == 0.0
    lin = np.einsum("nmd,d,nkd->nmk", fd, sigma**2, fd)
    assert np.max(np.abs(np.asarray(t.linear) - lin)) <= 1e-5 * np.max(np.abs(lin))
    assert np.all(np.asarray(t.valid) == 4096)
    assert t.agreement("J8") <= 0.1  # 4096 samples: about 3 % an input, 180 inputs


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(sigma=-1e-3), "finite and ≥ 0"),
        (dict(sigma=np.nan), "finite and ≥ 0"),
        (dict(sigma={"J9": 1e-3}), "neither a joint nor a dimension"),
        (dict(sigma={"J1": -1.0}), "≥ 0"),
        (dict(sigma=np.ones(3)), r"an array \(17,\)"),
        (dict(sigma=1e-3, outputs=("J99",)), "no output 'J99'"),
        (dict(sigma=1e-3, outputs=()), "empty"),
        (dict(sigma=1e-3, samples=-1), "samples"),
        (dict(sigma=1e-3, motion=np.full(3, np.nan)), "finite inputs"),
    ],
)
def test_tolerance_names_bad_input(kw, match):
    lk = dm.examples.theo_jansen()
    args = dict(motion=np.linspace(0, 1, 4)) | kw
    with pytest.raises((ValueError, KeyError), match=match):
        L.tolerance(lk, **args)


def test_fourbar_analysis_names_bad_input():
    fb = dm.FourBar(lengths=LENGTHS)
    with pytest.raises(ValueError, match="point"):
        L.sensitivity(fb, THETA, point=(1.0, np.inf))
    with pytest.raises(KeyError, match="no output 'P'"):
        L.sensitivity(fb, THETA, outputs="P")  # no coupler point given
    with pytest.raises(ValueError, match="Linkage or a FourBar"):
        L.sensitivity("fourbar", THETA)
    with pytest.raises(ValueError, match="coupler point"):
        L.sensitivity(dm.examples.fourbar(), THETA, point=(0.1, 0.2))
    assert jnp.all(jnp.isfinite(L.tolerance(fb, THETA, 0.0, samples=0).linear))


def test_monte_carlo_halves_run_side_by_side_add_up_to_one_pass_over_every_chunk():
    # the public call splits the chunks into parts run from their own threads: its
    # statistics are those of one program over all the chunks in order (each part
    # draws its own chunks, none twice, none left out)
    from diffmech.linkage import _analysis as A

    fb = dm.FourBar(lengths=LENGTHS)
    sigma = np.array([1e-3, 2e-3, 1e-3, 3e-3, 1e-3, 2e-3])
    t = L.tolerance(fb, THETA, sigma, samples=3000, point=POINT, seed=3)
    chunks = t.samples // A._CHUNK["fourbar"]
    assert t.samples >= 3000 and chunks % A._PARTS == 0
    prob, _ = A._problem("test", fb, THETA, None, POINT)
    nominal = A._sensitivity_program(prob)[0]  # the values the public call passes
    sums = A._monte_carlo_sums(
        prob, nominal, jnp.asarray(sigma), jax.random.key(3), jnp.asarray(0), jnp.asarray(chunks)
    )
    mean, cov = A._monte_carlo_statistics(*sums)
    assert np.array_equal(np.asarray(t.valid), np.asarray(sums[0]))
    assert np.allclose(np.asarray(t.mean_shift), np.asarray(mean), rtol=1e-12, atol=1e-15)
    assert np.allclose(np.asarray(t.covariance), np.asarray(cov), rtol=1e-10, atol=1e-18)


def test_monte_carlo_takes_the_closed_form_where_the_sweep_would_and_the_sweep_elsewhere():
    # a linkage of dyads: the Monte Carlo solves a sample by the sweep's first pass (the
    # closed form, certified) when that pass certifies every input, else by the whole
    # sweep; large tolerances, so that many samples meet a motion limit
    from diffmech.linkage import _analysis as A

    lk = dm.examples.fourbar()
    prob, _ = A._problem("test", lk, L.sweep(lk, condition=False), None, None)
    assert A._closed_form_only(lk)
    sigma = jnp.full((len(prob.dimensions),), 0.1)
    key = jax.random.key(5)
    z = jax.random.normal(jax.random.fold_in(key, 0), (A._CHUNK["linkage"] // 2, sigma.shape[0]))
    d = jnp.concatenate([z, -z]) * sigma  # chunk 0's samples, as the program draws them
    # each one compiled program (op by op, the eager vmaps compiled ~200 small ones)
    values, ok = jax.jit(jax.vmap(prob.evaluate))(d)  # the whole sweep, every sample
    fast, good = jax.jit(jax.vmap(lambda dd: A._closed_form_values(prob, dd)))(d)
    values, ok, fast, good = map(np.asarray, (values, ok, fast, good))
    assert 0 < good.sum() < good.size
    assert np.array_equal(good, np.all(ok, axis=1))
    # to round-off (two programs, fused differently: they may round differently)
    np.testing.assert_allclose(fast[good], values[good], rtol=0, atol=2e-15)
    nominal = np.asarray(prob.evaluate(jnp.zeros_like(sigma))[0])
    count, total, _ = A._monte_carlo_sums(prob, jnp.asarray(nominal), sigma, key, jnp.asarray(0), jnp.asarray(1))
    assert np.array_equal(np.asarray(count), ok.sum(axis=0))
    shift = np.where(ok[..., None], values - nominal, 0.0)
    assert np.allclose(np.asarray(total), shift.sum(axis=0), rtol=1e-12, atol=1e-14)

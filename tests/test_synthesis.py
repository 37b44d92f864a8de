"""Path generation: targets traced by known four-bars are recovered to round-off, the
reported design is checked by the closure core and by the independent linkage model
(the exported JSON), the free-timing gradient matches central differences."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import _synthesis as S_, fourbar as fbk, synthesis as S

# a crank-rocker placed off the origin, its coupler point off the coupler line
TRUE = S.PlacedFourBar(lengths=jnp.array([0.12, 0.25, 0.26, 0.30]), point=jnp.array([0.1, 0.05]),
                       origin=jnp.array([0.3, -0.2]), angle=jnp.array(0.4), branch=1)
THETA = np.linspace(0.0, 2 * np.pi, 13)[:-1] + 0.3


def _targets():
    pts, ok = TRUE.path(THETA)
    assert bool(jnp.all(ok))
    return np.asarray(pts)


def _scale(t):
    return float(np.sqrt(np.mean(np.sum((t - t.mean(0)) ** 2, 1))))


def test_prescribed_timing_recovers_a_known_path_checked_by_core_and_linkage_model(tmp_path):
    t = _targets()
    r = S.path_generation(t, "prescribed", crank_angles=THETA - THETA[0], starts=32, steps=300, seed=0)
    assert r.relative_error <= 1e-10
    assert 0 < r.success_rate <= 1 and bool(jnp.any(r.valid))
    # the closure core retraces the targets at the returned crank angles, in the order of motion
    pts, ok = r.design.path(r.inputs)
    assert bool(jnp.all(ok))
    assert np.max(np.abs(np.asarray(pts) - t)) <= 1e-10 * _scale(t)
    # prescribed timing: the crank turns by the prescribed increments
    np.testing.assert_allclose(np.asarray(r.inputs - r.inputs[0]), THETA - THETA[0], atol=1e-12)
    # the design as a linkage description (JSON), loaded and simulated by the point-line
    # model (an independent formulation): the tracer passes through the targets
    path = tmp_path / "design.json"
    S.save_design(r, path)
    lk = dm.linkage.load(path)
    m = dm.linkage.simulate(lk, inputs=np.asarray(r.inputs - r.inputs[0]))
    assert bool(jnp.all(m.converged))
    assert np.max(np.abs(np.asarray(m["P"])[:, :2] - t)) <= 1e-10 * _scale(t)
    # the loss history of the best start decreases to round-off
    h = np.asarray(r.history.loss)[np.asarray(r.history.active)]
    assert h[-1] <= 1e-20 and np.all(np.diff(h) <= 1e-12 * h[:-1] + 1e-30)


def _candidate(design, t):
    # the normalised-frame candidate of a placed four-bar (targets t set the frame)
    centre, scale = t.mean(0), _scale(t)
    z = jnp.asarray(0.0)
    return S_._Candidate(lengths=design.lengths / scale, point=design.point / scale, origin=(design.origin - centre) / scale,
                         angle=design.angle, phase=z, gamma=z, gaps=jnp.zeros(len(t)), sigma=jnp.asarray(1.0), sense=z + 1)


def _problem(tn):
    # free-timing path generation of normalised targets `tn` (no bounds, no constraints)
    return S_._Problem(targets=tn, angles=jnp.zeros(len(tn)), lo={}, hi={}, task="path", timing="free", grashof=False,
                       full_rotation=False, transmission=None, margin=0.02, window=True)


def test_free_timing_inner_solve_finds_the_crank_angles_of_points_on_the_curve():
    # variable projection: for targets on the curve the inner Newton solve must return
    # the crank angles that drew them (to round-off), whatever their order
    t = _targets()
    perm = np.random.default_rng(1).permutation(len(t))
    c = _candidate(TRUE, t)
    tn = jnp.asarray((t[perm] - t.mean(0)) / _scale(t))
    prob = _problem(tn)
    theta = jax.jit(S_._nearest)(c, prob)
    d = np.angle(np.exp(1j * (np.asarray(theta) - THETA[perm])))
    assert np.max(np.abs(d)) <= 1e-10
    assert float(jax.jit(S_._loss)(c, prob)) <= 1e-28


@pytest.mark.slow
def test_free_timing_full_rotation_recovers_shuffled_targets():
    # ~1 min on 2 CPU cores (16 starts × 300 L-BFGS steps of the variable-projection loss)
    t = _targets()
    perm = np.random.default_rng(1).permutation(len(t))
    r = S.path_generation(t[perm], "free", full_rotation=True, starts=16, steps=300, seed=0)
    assert r.relative_error <= 1e-10
    assert bool(fbk.crank_limits(r.design.fourbar).full_rotation)
    # each target is hit at its own crank angle; the points lie on one closed curve
    # traced by the core through a full revolution
    fine = np.linspace(0.0, 2 * np.pi, 721)
    curve, ok = r.design.path(fine)
    assert bool(jnp.all(ok))
    P = np.asarray(r.design.to_world(fbk.coupler_point(r.design.fourbar, fbk.assemble(r.design.fourbar, r.inputs), r.design.point)))
    assert np.max(np.abs(P - t[perm])) <= 1e-10 * _scale(t)
    # every target within the sampling distance of the traced curve
    d = np.min(np.linalg.norm(np.asarray(curve)[None] - t[:, None], axis=-1), axis=1)
    assert np.max(d) <= 2 * np.max(np.linalg.norm(np.diff(np.asarray(curve), axis=0), axis=1))


def test_free_timing_gradient_matches_central_differences():
    # the crank angle at each target is eliminated by an inner Newton solve under
    # stop_gradient: the envelope theorem makes the gradient at fixed θ* the total one
    t = jnp.asarray(_targets())
    t = (t - t.mean(0)) / _scale(np.asarray(t))
    prob = _problem(t)
    c = S_._random_starts(1, 12, np.random.default_rng(4), jnp.float64)
    c = jax.tree.map(lambda a: a[0], S_._seed_batch(c, prob, (), jnp.ones(1), jnp.zeros(1)))
    flat, unravel = jax.flatten_util.ravel_pytree((c.lengths, c.point, c.origin, c.angle))

    @jax.jit
    def loss(v):
        m = eqx.tree_at(lambda m: (m.lengths, m.point, m.origin, m.angle), c, unravel(v))
        return S_._loss(m, prob)

    g = jax.grad(loss)(flat)
    h = 1e-6
    fd = np.array([(loss(flat.at[i].add(h)) - loss(flat.at[i].add(-h))) / (2 * h) for i in range(flat.size)])
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kwargs,match", [
    (dict(target_points=np.zeros((2, 2))), "target_points"),
    (dict(target_points=np.array([[0, 0], [1, np.nan], [0, 1.0]])), "finite"),
    (dict(target_points=np.ones((5, 2))), "coincide"),
    (dict(target_points=np.eye(3)[:, :2], timing="any"), "timing"),
    (dict(target_points=np.eye(3)[:, :2], timing="prescribed", crank_angles=[0.0, 1.0]), "crank_angles"),
    (dict(target_points=np.eye(3)[:, :2], crank_angles=[0.0, 1.0, 2.0]), "prescribed"),
    (dict(target_points=np.eye(3)[:, :2], timing="prescribed", crank_angles=[0.0, 2.0, 1.0]), "monotonic"),
    (dict(target_points=np.eye(3)[:, :2], mechanism="stephenson2"), "Linkage"),
])
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        S.path_generation(**kwargs)


def test_cli_synthesize_writes_a_loadable_design_and_a_plot(tmp_path, capsys):
    from diffmech._cli import main

    t = _targets()
    csv = tmp_path / "target.csv"
    np.savetxt(csv, np.c_[t, THETA - THETA[0]], delimiter=",", header="x,y,crank angle")
    out = tmp_path / "out"
    # the same problem as the prescribed-timing test above (one compiled program)
    assert main(["synthesize", str(csv), "--starts", "32", "--steps", "300", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "timing prescribed" in text and "design.json" in text
    assert (out / "synthesis.png").stat().st_size > 0
    lk = dm.linkage.load(out / "design.json")
    assert lk.names == ("A", "B", "C", "D", "P")
    m = dm.linkage.simulate(lk, inputs=THETA - THETA[0])
    assert bool(jnp.all(m.converged))
    assert np.max(np.abs(np.asarray(m["P"])[:, :2] - t)) <= 1e-10 * _scale(t)
    # bad input: a file with one column is refused with the reason, no traceback
    bad = tmp_path / "bad.csv"
    bad.write_text("1\n2\n3\n")
    assert main(["synthesize", str(bad), "--out", str(out)]) == 2
    assert "columns" in capsys.readouterr().err


@pytest.mark.slow
def test_six_bar_synthesis_through_the_linkage_model():
    # a Stephenson-II (seed 003) with its joint coordinates perturbed by 1 %: the tracer
    # J8 is brought back onto the original's path at ten prescribed inputs (two starts);
    # ~2 min of compilation on 2 CPU cores, hence outside the default suite
    import equinox as eqx

    lk = dm.examples.stephenson2()
    u = np.linspace(0.0, 0.6, 10)
    t = np.asarray(dm.linkage.simulate(lk, inputs=u, condition=False)["J8"])[:, :2]
    rng = np.random.default_rng(3)
    lk0 = eqx.tree_at(lambda k: k.coords, lk, lk.coords * (1 + 0.01 * rng.normal(size=lk.coords.shape)))
    before = np.mean(np.linalg.norm(np.asarray(dm.linkage.simulate(lk0, inputs=u, condition=False)["J8"])[:, :2] - t, axis=1))
    r = S.path_generation(t, "prescribed", crank_angles=u, mechanism=lk0, tracer="J8", starts=2, steps=100)
    assert isinstance(r.design, dm.Linkage)
    m = dm.linkage.simulate(r.design, inputs=u)
    assert bool(jnp.all(m.converged))
    after = np.mean(np.linalg.norm(np.asarray(m["J8"])[:, :2] - t, axis=1))
    assert after == pytest.approx(r.error, rel=1e-6, abs=1e-12)
    assert after < 1e-3 * before

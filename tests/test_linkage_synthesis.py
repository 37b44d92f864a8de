"""Path synthesis of any planar linkage with one input (`_linkage_synthesis`): the
tracer the search fits is the closure core's, a similarity of the coordinates moves
the curve by it, the search's Jacobian matches central differences, and planted
six-bars are found with free, cyclic and prescribed timing, each result checked by
the closure core's own sweep."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import _linkage_synthesis as ls, synthesis as S

TURN = np.linspace(0.0, 2 * np.pi, 24, endpoint=False) + 0.1


def _problem(lk, n=8, timing="free", **kw):
    t = np.zeros((n, 2))
    opts = dict(full_rotation=False, transmission=None, margin=0.02) | kw
    return ls.problem(lk, lk.names.index("P"), t, timing, None, **opts)


def _core(lk, u, joint="P"):
    m = dm.linkage.sweep(lk, inputs=np.asarray(u), condition=False)
    assert bool(np.all(np.asarray(m.converged)))
    return np.asarray(m[joint])[:, :2], m


@pytest.mark.parametrize("kind", dm.examples.SIX_BARS)
def test_the_searchs_tracer_is_the_closure_cores_on_every_six_bar(kind):
    # the five types: the dyads' closed form (or, Stephenson II, the group's search and a
    # Newton solve from it) against the closure core's continuation sweep over a full turn;
    # each dyad's transmission cosine against the angle between its links in the core's
    # configuration
    lk = dm.examples.six_bar(kind)
    want, m = _core(lk, TURN)
    for turning in (True, False):  # (a group's search: along the whole turn, or a turn each way)
        P, ok, cos = ls.curve(lk.coords, _problem(lk, full_rotation=turning), jnp.asarray(TURN - np.pi))
        assert bool(np.all(np.asarray(ok)))
        np.testing.assert_allclose(np.asarray(P), _core(lk, TURN - np.pi)[0], rtol=0, atol=1e-10)
    P, ok, cos = ls.curve(lk.coords, _problem(lk), jnp.asarray(TURN))
    np.testing.assert_allclose(np.asarray(P), want, rtol=0, atol=1e-10)
    X = np.asarray(m.coords)[..., :2]
    for i, (a, c, b) in enumerate(ls.revolute_dyads(lk)):
        e1, e2 = X[:, a] - X[:, c], X[:, b] - X[:, c]
        measured = np.sum(e1 * e2, -1) / np.linalg.norm(e1, axis=-1) / np.linalg.norm(e2, axis=-1)
        np.testing.assert_allclose(np.asarray(cos)[:, i], measured, rtol=0, atol=1e-10)
    assert len(ls.revolute_dyads(lk)) == (0 if kind == "stephenson2" else 2)


# a Stephenson II whose input turns back at about -1.2225 rad, 8e-4 rad past the group
# search's sample at -7·2π/36 (normalised units: a design the search once returned)
_TURNS_BACK = [
    [0.589821, -0.121618],
    [-0.602606, -0.178072],
    [-1.069399, -0.192153],
    [-0.266007, -0.903246],
    [-0.185889, -3.795943],
    [-0.877303, -0.896165],
    [-0.62166, -0.0936],
    [0.485802, -0.08522],
]


def test_a_groups_search_keeps_the_assembly_mode_up_to_where_the_motion_turns_back():
    # between a sample and a limit just past the next one, a Newton solve from the nearest
    # sample (the near-toggle configuration at the limit) reached the other assembly mode
    # (0.89 away); continued from the sample on the way from 0, the tracer is the closure
    # core's continuation sweep to the limit
    ref = dm.examples.six_bar("stephenson2")
    c = np.zeros(ref.coords.shape)
    c[:, :2] = _TURNS_BACK
    lk = eqx.tree_at(lambda m: m.coords, ref, jnp.asarray(c))
    u = np.linspace(0.0, -1.222, 400)
    want, _ = _core(lk, u)
    beyond = dm.linkage.sweep(lk, inputs=np.linspace(0.0, -1.224, 400), condition=False)
    assert not bool(np.all(np.asarray(beyond.converged)))  # (the motion's limit lies between)
    P, ok, _ = ls.curve(lk.coords, _problem(lk), jnp.asarray(u))
    assert bool(np.all(np.asarray(ok)))
    np.testing.assert_allclose(np.asarray(P), want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["stephenson2", "theo_jansen"])
def test_a_similarity_of_the_coordinates_moves_the_curve_by_it(name):
    # the seed's linkages with prismatic joints (lines): scaled by 1.3, turned by 0.7 rad
    # and moved, every point and line of the description, the tracer's path is the old
    # one under the same similarity (closure core on both)
    lk = dm.examples.load(name)
    tracer = next(n for n, t in zip(lk.names, lk.types) if t == "tracer")
    u = np.linspace(0.0, 0.3, 6) if lk.name == "stephenson2" else np.linspace(0.0, 2.0, 6)
    before, _ = _core(lk, u, tracer)
    a, b = 1.3 * np.exp(0.7j), 0.4 - 0.2j
    coords = ls._similar(lk.coords, jnp.asarray(a), jnp.asarray(b), lk)
    moved = eqx.tree_at(lambda m: m.coords, lk, coords)
    after, _ = _core(moved, u, tracer)
    z = a * (before[:, 0] + 1j * before[:, 1]) + b
    np.testing.assert_allclose(after, np.c_[z.real, z.imag], rtol=0, atol=1e-10)
    # each line's offset (a gauge of the kinematics, which read it relative to the points):
    # the moved line passes through the image of a point of the old one
    C, M = np.asarray(lk.coords), np.asarray(coords)
    for j in np.flatnonzero(np.array(lk.types) == "P"):
        n, c = C[j, :2], C[j, 2]
        p = -c * n / (n @ n)  # on n·p + c = 0
        w = a * (p[0] + 1j * p[1]) + b
        assert abs(M[j, :2] @ [w.real, w.imag] + M[j, 2]) <= 1e-12 * np.linalg.norm(M[j, :2])


def _planted(kind, n, seed, *, deform=0.05):
    """A six-bar of type `kind` (the reference design with its joints moved by a seeded
    random `deform`, kept only if its input turns fully: checked by the closure core),
    its tracer at `n` random inputs over the turn, the points moved by a similarity.
    (Near the reference, which the screen includes: the search's global reach is the
    planted benchmark's to measure, `benchmarks/bench_planted_six_bars.py`.)"""
    rng = np.random.default_rng(seed)
    ref = dm.examples.six_bar(kind)
    while True:
        c = np.asarray(ref.coords).copy()
        c[:, :2] += deform * rng.normal(size=(c.shape[0], 2))
        lk = eqx.tree_at(lambda m: m.coords, ref, jnp.asarray(c))
        m = dm.linkage.sweep(lk, inputs=np.linspace(0, 2 * np.pi, 181), condition=False)
        if bool(np.all(np.asarray(m.converged))):
            break
    u = np.sort(rng.uniform(0.0, 2 * np.pi, n))
    P = _core(lk, u)[0]
    z = 0.8 * np.exp(0.6j) * (P[:, 0] + 1j * P[:, 1]) + (2.0 - 1.0j)
    return np.c_[z.real, z.imag], u, lk


def _checked(r, t, tol):
    """The returned design through the closure core: its tracer at the returned inputs
    (swept in the order of motion) is on the targets within `tol` of their size, and is
    the result's `points`."""
    scale = np.sqrt(np.mean(np.sum((t - t.mean(0)) ** 2, 1)))
    u = np.asarray(r.inputs)
    order = np.argsort(u)
    P = np.empty_like(t)
    P[order] = _core(r.design, u[order])[0]
    np.testing.assert_allclose(P, np.asarray(r.points), rtol=0, atol=1e-9 * scale)
    assert np.mean(np.linalg.norm(P - t, axis=1)) <= tol * scale
    assert r.relative_error <= tol


@pytest.mark.slow
def test_free_timing_finds_a_planted_watt_six_bar_and_type_synthesis_lists_each_types_best():
    # (~55 s on 2 cores, two topologies compiled: outside the default suite, where
    # notebook 07's Stephenson III runs the same search end to end)
    # 18 points of a Watt I's coupler curve at unknown inputs: the default search on the
    # Watt I topology meets them to 1e-6 of their size (checked by the closure core);
    # given a list of topologies, the best design of each, in the list's order
    t, _, _ = _planted("watt1", 18, 0)
    watt, four = S.synthesize(S.Path(t, mechanism=[dm.examples.six_bar("watt1"), dm.examples.fourbar()]))
    assert watt.design.name == "six_bar_watt1" and four.design.name == dm.examples.fourbar().name
    _checked(watt, t, 1e-6)
    assert four.relative_error > 1e3 * watt.relative_error  # (a four-bar's curve is not this one)


@pytest.mark.slow
def test_cyclic_timing_meets_the_targets_in_their_order_in_one_turn():
    # (~45 s on 2 cores: outside the default suite)
    t, _, _ = _planted("stephenson3", 14, 1)
    shuffled = np.random.default_rng(5).permutation(len(t))
    r = S.path_generation(t, cyclic_order=True, mechanism=dm.examples.six_bar("stephenson3"))
    _checked(r, t, 1e-6)
    turns = np.mod(np.diff(np.r_[np.asarray(r.inputs), r.inputs[0]]) * np.sign(np.diff(r.inputs)[0]), 2 * np.pi)
    assert np.sum(turns) == pytest.approx(2 * np.pi, abs=1e-9)  # in order, one revolution
    # out of order, the targets cannot all be met in one revolution
    bad = S.path_generation(t[shuffled], cyclic_order=True, mechanism=dm.examples.six_bar("stephenson3"))
    assert bad.relative_error > 1e-3


@pytest.mark.parametrize("kind", ["watt1", "stephenson2"])
def test_the_searchs_jacobian_matches_central_differences(kind):
    # what Levenberg–Marquardt differentiates (forward mode): the residuals of every
    # joint coordinate and input, through the dyads' closed form (Watt I) or the Newton
    # solve's implicit derivatives (Stephenson II), with the constraints' hinges active
    lk = dm.examples.six_bar(kind)
    u = np.linspace(0.3, 5.5, 6)
    P = _core(lk, u)[0] + 0.05  # targets off the curve
    # a box that the initial design's first two joints leave by 0.1 (its hinge active)
    lo, hi = np.full((lk.coords.shape[0], 2), -np.inf), np.full((lk.coords.shape[0], 2), np.inf)
    lo[:2] = np.asarray(lk.coords)[:2, :2] + 0.1
    prob = ls.problem(lk, lk.names.index("P"), P, "free", None, False, (1.5, 1.6), 0.02, (lo, hi))
    d = ls.Design(lk.coords, jnp.asarray(u), jnp.ones(()))  # (6 targets: a size class)
    free = np.flatnonzero(ls.free_mask(lk))
    flat = lk.coords.ravel()

    def r(v):
        coords = flat.at[free].set(v[: free.size]).reshape(lk.coords.shape)
        return ls.residuals(ls.Design(coords, v[free.size :], d.sense), prob)[0]

    v = jnp.concatenate([flat[free], d.timing])
    J = np.asarray(jax.jit(jax.jacfwd(r))(v))
    r = jax.jit(r)
    nj, nd = lk.coords.shape[0], len(ls.revolute_dyads(lk))
    box = 2 * 6 + 6 * nd + (ls._GRID + 1) * nd + 2 * nd + 2 * nj  # (the box's hinges after the targets' and dyads')
    assert np.count_nonzero(np.asarray(r(v))[box : box + 4 * nj]) == 4  # x and y of the two joints left
    if kind == "watt1":  # (Stephenson II has no dyad, so no dyad's hinge)
        rest = np.asarray(r(v))
        assert np.count_nonzero(np.r_[rest[2 * 6 : box], rest[box + 4 * nj :]]) > 0  # a dyad's hinge is active
    h = 1e-6
    fd = np.stack(
        [(np.asarray(r(v.at[i].add(h))) - np.asarray(r(v.at[i].add(-h)))) / (2 * h) for i in range(v.size)], 1
    )
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(mechanism=dm.examples.rssr()), "planar"),
        (dict(mechanism=dm.examples.five_bar()), "one revolute input"),
        (dict(mechanism=dm.examples.six_bar("watt1"), tracer="Q"), "`tracer` must name a joint"),
        (dict(mechanism=dm.examples.six_bar("watt1"), bounds={"lengths": (1, 2)}), "not a point joint"),
        (dict(mechanism=dm.examples.six_bar("watt1"), bounds={"A0": (0, 1)}), r"`bounds\['A0'\]` must be"),
        (dict(mechanism=dm.examples.six_bar("watt1"), bounds={"joints": ((1, 1), (0, 2))}), "min ≤ max"),
        (dict(mechanism=dm.examples.six_bar("watt1"), frame={"angle": 0.0}), "`frame` places a four-bar"),
        (
            dict(
                mechanism=dm.examples.six_bar("watt1"),
                timing="prescribed",
                crank_angles=[0, 1, 2],
                quick=True,
                transmission=(0.5, 2.5),
            ),
            "without constraints",
        ),
        (dict(mechanism=dm.examples.six_bar("watt1"), grashof=True), "`grashof` is a four-bar's"),
        (dict(mechanism=dm.examples.six_bar("watt1"), hops=2), "`hops`"),
        (dict(mechanism=dm.examples.six_bar("watt1"), timing="prescribed"), "needs `crank_angles`"),
        (dict(mechanism=[]), "empty list"),
    ],
)
def test_bad_input_is_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        S.path_generation(np.eye(3)[:, :2] + 0.1, **kwargs)


@pytest.mark.slow
def test_prescribed_timing_and_quick_starts_on_a_six_bar():
    # prescribed timing (the inputs given, the planted design's own): the screen's best
    # laid onto the targets by the similarity at the given inputs, then
    # Levenberg–Marquardt on the coordinates alone; `quick=True` with free timing: starts
    # perturbed from the given design
    t, u, lk = _planted("stephenson1", 12, 2)
    r = S.path_generation(t, "prescribed", crank_angles=u, mechanism=dm.examples.six_bar("stephenson1"))
    _checked(r, t, 1e-5)  # (measured 1.7e-6: the polish creeps; the benchmarks page)
    np.testing.assert_allclose(np.asarray(r.inputs), u, rtol=0, atol=0)
    q = S.path_generation(t, mechanism=lk, quick=True, seed=3)  # from copies of the planted design itself
    _checked(q, t, 1e-6)


@pytest.mark.slow
def test_bounds_keep_the_joints_in_their_boxes():
    # the ground pivots boxed about the planted design's (feasible: found as without a
    # box, inside it); then a box that excludes the planted pivots: every joint inside
    # it, the targets met less well
    t, u, lk = _planted("stephenson3", 12, 3)
    ref = dm.examples.six_bar("stephenson3")
    ground = [n for n in ("A0", "B0", "D0", "C0") if n in ref.names]
    sim = lambda x: 0.8 * np.exp(0.6j) * complex(*x) + (2.0 - 1.0j)  # noqa: E731  (`_planted`'s similarity)
    at = {
        n: np.array([sim(x).real, sim(x).imag]) for n in ground for x in [np.asarray(lk.coords)[lk.names.index(n), :2]]
    }
    box = {n: (x - 0.2, x + 0.2) for n, x in at.items()}
    r = S.path_generation(t, "prescribed", crank_angles=u, mechanism=ref, bounds=box)
    _checked(r, t, 1e-5)
    for n, (lo, hi) in box.items():
        x = np.asarray(r.design.coords)[r.design.names.index(n), :2]
        assert np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12)
    first = ground[0]
    away = {first: (at[first] + 0.5, at[first] + 1.0)}
    q = S.path_generation(t, "prescribed", crank_angles=u, mechanism=ref, bounds=away)
    x = np.asarray(q.design.coords)[q.design.names.index(first), :2]
    assert np.all(x >= away[first][0] - 1e-12) and np.all(x <= away[first][1] + 1e-12)
    assert q.relative_error > r.relative_error

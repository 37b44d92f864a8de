"""Structural analysis (Assur groups) and the dyads' closed-form predictor: the groups
of the bundled linkages and of linkages built for each dyad kind, as a textbook reads
them; every closed-form sweep against sequential continuation (an independent path:
Newton from the last solution, the closure Jacobian's determinant as branch check) on
random designs; design gradients against central differences."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import central_diff

import diffmech as dm
from diffmech import closure, linkage as L
from diffmech._validate import Recent
from diffmech.linkage import _model, _simulate, _structure


def _lk(name, geometry, joints, links, **kw):
    spec = {"name": name, "geometry": geometry, "joints": joints, "links": links, "ground": "ground"}
    spec.update({"input": "crank"} | kw)
    return L.Linkage.from_dict(spec)


def R(*xy):
    return {"type": "R", "coords": list(xy)}


def P(a, b, c):
    return {"type": "P", "coords": [a, b, c]}


def T(*xy):
    return {"type": "tracer", "coords": list(xy)}


def slider_crank():  # RRP: crank AB, coupler BC, a slider at C on the ground line y = −0.05
    return _lk(
        "slider_crank",
        "planar",
        {"A": R(0, 0), "B": R(0.1, 0), "C": R(0.38, -0.05), "G": P(0, 1, 0.05), "P": T(0.2, 0.1)},
        {"ground": ["A", "G"], "crank": ["A", "B"], "coupler": ["B", "C", "P"], "slider": ["C", "G"]},
    )


def slotted_crank():  # PRP: C slides in the crank's slot H and along the ground line G
    return _lk(
        "slotted",
        "planar",
        {"A": R(0, 0), "H": P(-0.3, 0.954, -0.01), "C": R(0.4, 0.1), "G": P(0.1, 1, -0.14), "P": T(0.45, 0.2)},
        {"ground": ["A", "G"], "crank": ["A", "H"], "s1": ["H", "C", "P"], "s2": ["C", "G"]},
    )


def scotch_yoke():  # RPP: a block pinned to the crank at B slides in the yoke's slot K; the yoke slides on G
    return _lk(
        "yoke",
        "planar",
        {"A": R(0, 0), "B": R(0.1, 0), "K": P(1, 0.2, -0.12), "G": P(0, 1, 0.3), "P": T(0.5, -0.3)},
        {"ground": ["A", "G"], "crank": ["A", "B"], "block": ["B", "K", "P"], "yoke": ["K", "G"]},
    )


def triad():  # class III: a ternary link T held by three binary links, one of them driven by the crank
    return _lk(
        "triad",
        "planar",
        {
            **{"A": R(0, 0), "B": R(0.2, 0.1), "T1": R(0.6, 0.9), "T2": R(1.2, 1.1), "T3": R(1.0, 0.5)},
            **{"G2": R(1.6, 1.8), "G3": R(1.3, -0.2)},
        },
        {
            **{"ground": ["A", "G2", "G3"], "crank": ["A", "B"], "b1": ["B", "T1"], "b2": ["G2", "T2"]},
            **{"b3": ["G3", "T3"], "T": ["T1", "T2", "T3"]},
        },
    )


# each linkage's groups as its drawing reads: (kind, links, outer joints, inner joints)
EXPECTED = {
    "fourbar": [("RRR", {"coupler", "rocker"}, {"B", "D"}, {"C"})],
    "theo_jansen": [
        ("RPR", {"L2", "L4"}, {"J2", "J5"}, {"J3"}),  # the slider J3 between the crank's link and the ground's
        ("RRR", {"L3", "L5"}, {"J2", "J5"}, {"J4"}),
        ("RRR", {"L6", "L7"}, {"J4", "J6"}, {"J7"}),
    ],
    # four links in a closed contour L2–L3–L5–L4 with two outer pairs: Assur class IV, order 2
    "stephenson2": [("class IV order 2", {"L2", "L3", "L4", "L5"}, {"J2", "J7"}, {"J3", "J4", "J5", "J6"})],
    "five_bar": [("RRR", {"left", "right"}, {"B", "D"}, {"C"})],
    "spherical_rrpr": [("RPR", {"L2", "L3"}, {"J2", "J4"}, {"J3"})],
    "spherical_watt1": [("RRR", {"L2", "L3"}, {"J2", "J6"}, {"J4"}), ("RRR", {"L4", "L5"}, {"J3", "J5"}, {"J7"})],
    "slider_crank": [("RRP", {"coupler", "slider"}, {"B", "G"}, {"C"})],
    "slotted": [("PRP", {"s1", "s2"}, {"H", "G"}, {"C"})],
    "yoke": [("RPP", {"block", "yoke"}, {"B", "G"}, {"K"})],
    # one ternary link and three binary links, three outer pairs: Assur class III, order 3
    "triad": [("class III order 3", {"b1", "b2", "b3", "T"}, {"B", "G2", "G3"}, {"T1", "T2", "T3"})],
}
BUILT = {"slider_crank": slider_crank, "slotted": slotted_crank, "yoke": scotch_yoke, "triad": triad}


def linkage(name):
    return BUILT[name]() if name in BUILT else getattr(dm.examples, name)()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_assur_groups_as_the_drawing_reads(name):
    s = L.structure(linkage(name))
    got = [(g.kind, set(g.links), set(g.outer), set(g.inner)) for g in s.groups]
    assert got == EXPECTED[name]
    assert not s.unassigned and s.closed_form  # every group solved: dyads in closed form, larger ones by search
    assert s.irreducible == tuple(g for g in s.groups if not g.is_dyad)
    text = str(s)
    assert all(g.kind in text for g in s.groups) and ("generic predictor" in text) == (not s.closed_form)


def test_structure_is_drawn_with_one_colour_per_group_and_rejects_spatial_linkages():
    import matplotlib

    matplotlib.use("Agg")
    ax = L.structure(dm.examples.theo_jansen()).plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["input", "1. RPR", "2. RRR", "3. RRR", "ground"] or sorted(labels) == sorted(
        ["ground", "input", "1. RPR", "2. RRR", "3. RRR"]
    )
    colours = {
        tuple(line.get_color()) if not isinstance(line.get_color(), str) else line.get_color()
        for line in ax.get_lines()
    }
    assert len(colours) == 5  # ground, input and three groups
    with pytest.raises(L.LinkageError, match="spatial"):
        L.structure(dm.examples.rssr())


def test_the_structure_predictor_is_chosen_only_where_every_group_is_solved():
    for name in EXPECTED:
        lk = linkage(name)
        assert (_structure.predictor(lk) is not None) == L.structure(lk).closed_form
    # spatial: points held by three distances to known ones by trilateration (the
    # RSSR's coupler joint, the double wishbone's two ball joints), a body held by
    # three parallelograms as a translation (the delta's platform); any other equation
    # (a cylindrical or universal joint, the Bennett's over-constraint, the 5-SS's
    # coupled points) keeps the generic predictor
    for name in ("rssr", "double_wishbone", "delta"):
        assert isinstance(_structure.predictor(getattr(dm.examples, name)()), closure.AbstractClosedForm), name
    assert isinstance(_structure.predictor(dm.examples.delta()), _structure.TranslationClosedForm)
    for name in ("rscr", "cardan", "bennett", "ss5"):
        assert _structure.predictor(getattr(dm.examples, name)()) is None, name
    spec = dm.examples.fourbar().to_dict()
    spec["input"] = {"type": "actuator", "joints": ["A", "C"]}  # a linear actuator: the generic path
    s = L.structure(L.Linkage.from_dict(spec))
    assert not s.closed_form and s.inputs == ("actuator A–C",)
    assert _structure.predictor(L.Linkage.from_dict(spec)) is None


def _five_bar_path():
    t = np.linspace(0.0, 1.0, 40)
    return np.stack([t, -0.5 * t], axis=1)


@pytest.mark.parametrize(
    "name", ["theo_jansen", "slider_crank", "slotted", "yoke", "five_bar", "spherical_rrpr", "spherical_watt1"]
)
def test_a_plans_simulation_equals_the_topologys_own_program(name, monkeypatch):
    """Topology as data (`linkage._plan`): the eager simulation of a planar or spherical
    linkage in dyads runs on its plan (padded index arrays, the dyads' closed forms by
    `lax.switch` over a schedule); it gives the per-topology program's motion (every
    planar dyad kind: Jansen's RRR and RPR, the slider-crank's RRP, the slotted crank's
    PRP, the Scotch yoke's RPP; the five-bar's two inputs; the spherical RRPR and Watt
    I, a prismatic input) to round-off, status for status."""
    from diffmech.linkage import _plan

    lk = linkage(name)
    assert _plan.eligible(lk)
    path = _five_bar_path() if lk.n_inputs > 1 else None
    got = L.sweep(lk, inputs=path)
    monkeypatch.setattr(_plan, "eligible", lambda lk: False)  # the topology's own programs
    monkeypatch.setattr(_plan, "_ARGUMENTS", Recent())  # (a linkage's plan is remembered with it)
    assert _plan.arguments(lk) is None  # so `simulate` takes the per-topology program
    own = L.sweep(lk, inputs=path)
    assert got.names == own.names and got.coords.shape == own.coords.shape
    np.testing.assert_array_equal(np.asarray(got.converged), np.asarray(own.converged))
    np.testing.assert_array_equal(np.asarray(_simulate.code(got.status)), np.asarray(_simulate.code(own.status)))
    ok = np.asarray(own.converged)
    assert ok.sum() >= 10
    np.testing.assert_allclose(np.asarray(got.coords)[ok], np.asarray(own.coords)[ok], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got.condition)[ok], np.asarray(own.condition)[ok], rtol=1e-9)
    assert np.max(np.asarray(got.residual)[ok]) <= 1e-10


def test_a_plans_deferred_inputs_are_finished_by_the_fallback_alone():
    """The plan's resume program (`_simulate._plan_resume`): the inputs a sweep left
    deferred, from the 60th on, continued by the sequential fallback from the last
    solved one, give the motion the closed form gave them."""
    from diffmech._result import as_results
    from diffmech.linkage import _plan

    lk = dm.examples.theo_jansen()
    p, C, max_step = _plan.arguments(lk)
    path = jnp.linspace(0.0, 2 * math.pi, 121)
    motion, _, _, sol = _simulate._plan_jit(p, C, path, max_step, True, True, True)
    deferred = np.arange(121) >= 60
    codes = np.where(deferred, int(closure.RESULTS.deferred._value), np.asarray(_simulate.code(sol.status)))
    cut = eqx.tree_at(
        lambda s: (s.status, s.converged, s.value),
        sol,
        (
            as_results(jnp.asarray(codes, jnp.int32)),
            sol.converged & ~deferred,
            jnp.where(deferred[:, None], sol.value[59], sol.value),
        ),
    )
    done = _simulate._plan_resume_jit(p, C, cut, max_step, True, True)
    assert bool(motion.converged.all()) and bool(done.converged.all())
    np.testing.assert_allclose(np.asarray(done.coords), np.asarray(motion.coords), rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.asarray(done.condition), np.asarray(motion.condition), rtol=1e-6)


def test_a_padded_state_keeps_the_linkages_own_equations_and_conditioning(monkeypatch):
    """Classes padded beyond a linkage's own sizes (the state to 12, every form and the
    schedule to a power of two): the padding slots are an identity block that keeps
    its unknowns at 0, and the condition number is the linkage's own block's."""
    from diffmech import _linalg
    from diffmech.linkage import _plan

    # the padding's identity block changes the 1-norm condition number of a block of its
    # own below 1 (4 I: 1 · 1; padded: 4 · 1); the linkage's columns alone keep it
    A = jax.scipy.linalg.block_diag(4 * jnp.eye(2), jnp.eye(3))
    own = jnp.arange(5) < 2
    assert float(_linalg.condition_from_inverse(A, jnp.linalg.inv(A), own)) == 1.0
    assert float(_linalg.condition_from_inverse(A, jnp.linalg.inv(A))) == 4.0
    lk = dm.examples.theo_jansen()
    exact = L.sweep(lk, steps=30)
    monkeypatch.setattr(_plan, "_N", (2, 4, 8, 12, 16))
    monkeypatch.setattr(_plan, "_EXACT", False)
    monkeypatch.setattr(_plan, "_ARGUMENTS", Recent())
    _plan._plan.cache_clear()
    try:
        p = _plan.plan(lk)
        assert p.shape("slot") == (12,) and p.shape("g_dist") == (8, 2) and p.shape("steps") == (4, 8)
        padded = L.sweep(lk, steps=30)
        # every form's rows in the linkage's own order (each dyad kind's forms: lines
        # carried, offsets, angles, units; the sphere's frames and carried elements),
        # the padding slots x itself
        # the two residuals of each linkage in one program (op by op: ~25 small ones each)
        residuals = eqx.filter_jit(
            lambda p, C, x, other: (
                _plan.residual(x, 0.3, _plan.prepare(p, C)),
                _model.residual(x[: other.n_unknowns], 0.3, other),
            )
        )
        for other in (lk, *(linkage(name) for name in ("slider_crank", "slotted", "yoke", "spherical_watt1"))):
            n, n_pad = other.n_unknowns, _plan.plan(other).shape("slot")[0]
            x = np.concatenate([np.asarray(other.x0()) + 0.01, np.full((n_pad - n,), 0.25)])
            r, want = residuals(_plan.plan(other), np.asarray(_plan.coords(other)), x, other)
            np.testing.assert_allclose(np.asarray(r[:n]), np.asarray(want), rtol=0, atol=1e-14)
            np.testing.assert_array_equal(np.asarray(r[n:]), 0.25)
    finally:
        _plan._plan.cache_clear()
    np.testing.assert_array_equal(np.asarray(padded.converged), np.asarray(exact.converged))
    np.testing.assert_allclose(np.asarray(padded.coords), np.asarray(exact.coords), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(padded.condition), np.asarray(exact.condition), rtol=1e-9)


def _sequential(lk, inputs):
    """The reference: sequential continuation (Newton from the last solutions), its
    branch checked by the closure Jacobian's determinant, no closed form."""

    def det(x, u, prep):
        return jnp.linalg.det(jax.jacfwd(_model.prepared_residual)(x, u, prep))

    return closure.continuation(
        _model.prepared_residual,
        lk.x0(),
        inputs,
        _model.prepare(lk),
        condition=False,
        **_simulate._sweep_options(lk, det),
    )


def _designs(lk, n, rel, seed):
    rng = np.random.default_rng(seed)
    size = float(jnp.max(jnp.abs(lk.coords)))
    move = np.array([[1.0, 1.0, 0.0] if t != "P" else [0.1, 0.1, 1.0] for t in lk.types])
    if lk.geometry != "planar":
        move = np.ones(lk.coords.shape)
    return lk.coords[None] + jnp.asarray(rel * size * rng.normal(size=(n,) + lk.coords.shape) * move)


CLOSED = ["theo_jansen", "spherical_watt1", "slider_crank", "slotted", "yoke", "stephenson2", "triad", "rssr"]


@pytest.mark.parametrize("name", CLOSED)
def test_masks_statuses_and_solutions_equal_sequential_continuation_on_random_designs(name):
    lk = linkage(name)
    assert _structure.predictor(lk) is not None
    ok, _ = _equal_to_sequential(lk, L.default_inputs(lk), _designs(lk, 48, 0.06, seed=len(name)))
    assert 0 < ok.mean() < 1 or name == "yoke"  # some designs meet a limit (the yoke's crank always turns)


def _equal_to_sequential(lk, inputs, batch):
    """Simulate every design of `batch` (coordinates) by `simulate_functional` and by
    `_sequential`, check the same masks and statuses, states to 1e-9 and residuals to
    1e-10, and return the mask."""

    def design(C):
        return eqx.tree_at(lambda l: l.coords, lk, C)

    @jax.jit
    def both(b):
        fast = jax.vmap(lambda C: L.sweep_functional(design(C), inputs, condition=False))(b)
        slow = jax.vmap(lambda C: _sequential(design(C), inputs))(b)
        states = jax.vmap(jax.vmap(lambda C, lk_: lk_.state(C), in_axes=(0, None)))(fast.coords, jax.vmap(design)(b))
        return fast, slow, states

    fast, slow, states = both(jnp.asarray(batch))
    ok, ok_ref = np.asarray(fast.converged), np.asarray(slow.converged)
    assert np.array_equal(ok, ok_ref), np.argwhere(ok != ok_ref)[:5]
    assert np.array_equal(np.asarray(fast.status._value), np.asarray(slow.status._value))
    assert np.max(np.abs(np.asarray(states)[ok] - np.asarray(slow.value)[ok])) <= 1e-9
    assert np.max(np.asarray(fast.residual)[ok]) <= 1e-10
    return ok, fast


def _delta_translations(lk, C, inputs):
    """An independent reference for a delta design with exact parallelograms: the
    platform's translation `t` at each input row and whether it exists. Arm ends
    turned by Rodrigues' formula; `|U_i(u) − P_i0 − t| = L_i` for three rods: two
    differences of the sphere equations are planes, met by a line, which meets a
    sphere by a quadratic; the root nearest the last row's (from t = 0) continues the
    motion, up to the first input where the line misses the sphere."""
    t, out, ok = np.zeros(3), [], True
    for u in np.asarray(inputs):
        c, r = [], []
        for n in (1, 2, 3):
            A, B = C[lk.joint(f"A{n}")], C[lk.joint(f"A{n}.axis")]
            k = (B - A) / np.linalg.norm(B - A)
            K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
            Rm = np.eye(3) + np.sin(u[n - 1]) * K + (1 - np.cos(u[n - 1])) * K @ K
            U0, P0 = C[lk.joint(f"U{n}a")], C[lk.joint(f"P{n}a")]
            c.append(A + Rm @ (U0 - A) - P0)
            r.append(np.linalg.norm(P0 - U0))
        # |t − c_i|² = r_i²: subtracting the first gives 2 (c_i − c_1)·t = |c_i|² − |c_1|² − r_i² + r_1²
        M = 2 * np.array([c[1] - c[0], c[2] - c[0]])
        rhs = np.array([c[i] @ c[i] - c[0] @ c[0] - r[i] ** 2 + r[0] ** 2 for i in (1, 2)])
        direction = np.cross(M[0], M[1])
        base = np.linalg.lstsq(M, rhs, rcond=None)[0]  # the line's point nearest the origin
        w = base - c[0]
        qa, qb, qc = direction @ direction, 2 * direction @ w, w @ w - r[0] ** 2
        disc = qb * qb - 4 * qa * qc
        ok = ok and disc >= 0
        if ok:
            q = -0.5 * (qb + np.copysign(np.sqrt(disc), qb))  # the two roots without cancellation
            roots = [base + s_ * direction for s_ in (q / qa, qc / q)]
            t = min(roots, key=lambda q: np.linalg.norm(q - t))
        out.append((t.copy(), ok))
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


def test_delta_platform_predicted_as_a_translation_on_random_designs():
    # designs that keep the parallelograms exact: each arm's two rod ends moved by one
    # random vector, each platform pair by another (rod lengths, arm ends and platform
    # points all change; the rods stay equal and parallel, along the arm's axis),
    # checked against the three spheres in NumPy; and designs that break one (a
    # platform point moved alone): no translation, so the prediction is not certified
    # and the fallback solves them, checked against sequential continuation
    lk = dm.examples.delta()
    rng = np.random.default_rng(7)
    pairs = [("U1a", "U1b"), ("U2a", "U2b"), ("U3a", "U3b"), ("P1a", "P1b"), ("P2a", "P2b"), ("P3a", "P3b")]
    batch = []
    for k in range(20):
        C = np.asarray(lk.coords).copy()
        for a, b in pairs:
            move = 0.03 * rng.normal(size=3)
            C[lk.joint(a)] += move
            C[lk.joint(b)] += move
        for n in (1, 2, 3):  # exact to round-off (the bundled ones are to their 12 digits)
            A, B = C[lk.joint(f"A{n}")], C[lk.joint(f"A{n}.axis")]
            w = 0.06 * (B - A) / np.linalg.norm(B - A)
            C[lk.joint(f"U{n}b")], C[lk.joint(f"P{n}b")] = C[lk.joint(f"U{n}a")] + w, C[lk.joint(f"P{n}a")] + w
        if k >= 16:
            C[lk.joint("P2b")] += 0.01 * rng.normal(size=3)
        batch.append(C)
    batch = np.array(batch)
    inputs = jnp.linspace(0.0, 1.0, 21)[:, None] * jnp.array([2.6, -1.56, 1.17])  # past some workspaces' edge

    ok, fast = _equal_to_sequential(lk, inputs, batch)
    assert 0 < ok[:16].mean() < 1 and 0 < ok[16:].mean()  # some designs meet the edge of their workspace
    p = lk.joint("P1a")
    for k in range(16):  # a translation, to round-off, wherever the spheres meet (the motion may stop
        # sooner: at a constraint singularity, where the closure Jacobian's determinant changes sign)
        t, exists = _delta_translations(lk, batch[k], inputs)
        assert np.all(exists[ok[k]]), k
        assert np.max(np.abs(np.asarray(fast.coords[k, :, p]) - (batch[k, p] + t))[ok[k]]) <= 1e-12, k
    # the prediction itself closes a parallelogram design (no fallback solves it)
    lk0 = eqx.tree_at(lambda l: l.coords, lk, jnp.asarray(batch[0]))
    prep = _model.prepare(lk0)
    x, meet = jax.vmap(_structure.predictor(lk0).solution, in_axes=(0, None))(inputs, prep)
    r = jax.vmap(_model.prepared_residual, in_axes=(0, 0, None))(x, inputs, prep)
    assert np.max(np.abs(np.asarray(r))[ok[0]]) <= 1e-13 and np.all(np.asarray(meet)[ok[0]])


@pytest.mark.parametrize("name,tracer", [("theo_jansen", "J8"), ("slider_crank", "P"), ("rssr", "C")])
def test_closed_form_design_gradients_match_central_differences(name, tracer):
    lk = linkage(name)
    j = lk.joint(tracer)
    inputs = jnp.arange(0.0, 2 * math.pi, 2 * math.pi / 16)

    @jax.jit
    def loss(coords):
        m = L.sweep_functional(eqx.tree_at(lambda l: l.coords, lk, coords), inputs, condition=False)
        return jnp.sum(jnp.where(m.converged[:, None], m.coords[:, j, :2] * jnp.array([1.0, 2.0]), 0.0))

    C = lk.coords
    g = np.asarray(jax.grad(loss)(C))
    flat = [(a, c) for a in range(lk.coords.shape[0]) for c in range(2) if lk.types[a] != "P"]

    def f(v):
        Cp = C
        for (a, c), val in zip(flat, v):
            Cp = Cp.at[a, c].set(val)
        return float(loss(Cp))

    fd = central_diff(f, np.array([float(C[a, c]) for a, c in flat]), h=1e-6)
    got = np.array([g[a, c] for a, c in flat])
    assert np.max(np.abs(got - fd)) <= 1e-6 * max(1.0, np.max(np.abs(fd))), (got, fd)
    assert np.max(np.abs(fd)) > 1e-2

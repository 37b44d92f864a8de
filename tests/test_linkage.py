"""Linkages of points, lines and planes (seed 003): every example against invariants
computed here from the coordinates alone (pairwise rigidity metrics, Eqs. (1)–(9)),
the four-bar module, an independent rigid-body-pose model (tests/reference), closed
forms, and central finite differences."""

import json
import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import DOUBLE_ROCKER, central_diff
from reference import linkage_absolute as absolute, linkage_reference as ref

import diffmech as dm
from diffmech import linkage as L
from diffmech.closure import RESULTS

EXAMPLES = dm.examples.NAMES


class _Motions:
    """Each example simulated over its seed range once per worker, on first use."""

    _cache: dict = {}

    def __getitem__(self, name):
        if name not in self._cache:
            lk = getattr(dm.examples, name)()
            self._cache[name] = (lk, L.sweep(lk))
        return self._cache[name]


@pytest.fixture(scope="session")
def motions():
    return _Motions()


# ------------------------------------------------------------------ independent metrics


def pair_metrics(lk, C):
    """Every pairwise rigidity metric of every link (tracers included), from the
    coordinates `C` (J, 3) alone: planar distances, point-line offsets (Eq. (5)), line
    angles as (cos, sin) (Eq. (7)); spherical dot products (Eqs. (1), (4), (6)); spatial
    distances (Eq. (1))."""
    out = []
    for link in lk.links:
        for i, a in enumerate(link):
            for b in link[i + 1 :]:
                ta, tb = lk.types[a], lk.types[b]
                if lk.geometry == "spherical":
                    out.append(C[a] @ C[b])
                elif lk.geometry == "spatial":
                    out.append(np.linalg.norm(C[a] - C[b]))
                elif ta != "P" and tb != "P":
                    out.append(np.linalg.norm(C[a, :2] - C[b, :2]))
                elif ta == "P" and tb == "P":
                    out += [C[a, :2] @ C[b, :2], C[a, 0] * C[b, 1] - C[a, 1] * C[b, 0]]
                else:
                    p, ln = (a, b) if tb == "P" else (b, a)
                    out.append(C[ln, :2] @ C[p, :2] + C[ln, 2])
    return np.array(out)


def unit_norms(lk, C):
    """|p| for spherical points and planes, |(a, b)| for planar lines (Eqs. (8), (9))."""
    if lk.geometry == "spherical":
        return np.linalg.norm(C, axis=1)
    lines = [j for j, t in enumerate(lk.types) if t == "P"]
    return np.linalg.norm(C[lines, :2], axis=1)


def test_counts_match_the_paper():
    # Sec. 4: 11 unknowns for Stephenson-II and Theo Jansen, 6 for the spherical RRPR,
    # 12 for Watt-I, 18 for the 5-SS (the paper's state holds the tracer too)
    want = dict(stephenson2=11, theo_jansen=11, spherical_rrpr=6, spherical_watt1=12, ss5=18)
    for name, n in want.items():
        lk = getattr(dm.examples, name)()
        c = lk.counts()
        assert c["paper_unknowns"] == n, (name, c)
        assert c["equations"] == c["unknowns"]
        m = L.mobility(lk)
        assert m.dof == 1 and m.rank_x == c["unknowns"], (name, m)


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_rigidity_metric_is_kept(motions, name):
    lk, m = motions[name]
    C = np.asarray(m.coords)
    ok = np.asarray(m.converged)
    assert ok[0] and ok.sum() >= 40, (name, ok.sum())
    C0 = np.asarray(lk.initial())
    m0 = pair_metrics(lk, C0)
    assert np.max(np.abs(C[0] - C0)) <= 1e-14 * max(1.0, np.max(np.abs(C0)))
    worst = max(np.max(np.abs(pair_metrics(lk, C[k]) - m0)) for k in np.flatnonzero(ok))
    assert worst <= 1e-10, (name, worst)
    if lk.geometry != "spatial" and (lk.geometry == "spherical" or "P" in lk.types):
        worst_norm = max(np.max(np.abs(unit_norms(lk, C[k]) - 1)) for k in np.flatnonzero(ok))
        assert worst_norm <= 1e-12, (name, worst_norm)
    # the closure residual is at round-off at every converged step
    assert float(np.max(np.asarray(m.residual)[ok])) <= 1e-12
    # masked rows repeat the last converged configuration: finite
    assert np.all(np.isfinite(C))


@pytest.mark.parametrize("name", EXAMPLES)
def test_input_is_applied_exactly(motions, name):
    """The input link moves by the exact rotation/translation of Sec. 3.1, and an
    actuator's length grows by the input."""
    lk, m = motions[name]
    C = np.asarray(m.coords)
    ok = np.flatnonzero(np.asarray(m.converged))
    u = np.asarray(m.inputs)[ok]
    C0 = np.asarray(lk.initial())
    if lk.input_kind == "actuator":
        a, b = lk.input_joints
        r0 = np.linalg.norm(C0[b] - C0[a])
        assert np.max(np.abs(np.linalg.norm(C[ok, b] - C[ok, a], axis=1) - (r0 + u))) <= 1e-10
        return
    (s,) = lk.input_joints
    moving = [j for j in lk.links[lk.input_link] if j not in lk.links[lk.ground] and lk.types[j] != "P"]
    for j in moving:
        if lk.geometry == "planar" and lk.input_kind == "revolute":
            d = C0[j, :2] - C0[s, :2]
            want = C0[s, :2] + np.stack([np.cos(u) * d[0] - np.sin(u) * d[1], np.sin(u) * d[0] + np.cos(u) * d[1]], 1)
            got = C[ok, j, :2]
        else:  # spherical: right-handed rotation about the pivot / the slider plane's pole
            k = C0[s]
            p = C0[j]
            want = p * np.cos(u)[:, None] + np.cross(k, p) * np.sin(u)[:, None] + np.outer(1 - np.cos(u), k) * (k @ p)
            got = C[ok, j]
        assert np.max(np.abs(got - want)) <= 1e-13, (name, lk.names[j])


def test_fourbar_matches_the_fourbar_module():
    lk = dm.examples.fourbar()
    m = L.sweep(lk, steps=180)
    fb = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30))
    s = dm.fourbar.sweep(fb, m.inputs)
    assert bool(jnp.all(m.converged)) and bool(jnp.all(s.converged))
    q = np.asarray(s.q)
    C = np.array([0.3, 0.0]) + 0.26 * q[:, 4:6]
    B = 0.12 * q[:, 0:2]
    P = B + 0.5 * 0.25 * q[:, 2:4]
    assert np.max(np.abs(np.asarray(m["C"]) - C)) <= 1e-14
    assert np.max(np.abs(np.asarray(m["P"]) - P)) <= 1e-14
    assert np.max(np.abs(np.asarray(m["B"]) - B)) <= 1e-15


# ------------------------------------------------------------------ independent reference model


REF_CASES = {
    "stephenson2": ("stephenson2", "J8", 2 * math.pi / 180),
    "theo_jansen": ("theo_jansen", "J8", 2 * math.pi / 180),
    "spherical_rrpr": ("spherical_rrpr", "J5", 2 * math.pi / 180),
    "spherical_watt1": ("spherical_watt1", "J8", 2 * math.pi / 180),
    "ss5": ("ss5", "J11", 0.01),
}


@pytest.mark.parametrize("name", sorted(REF_CASES))
def test_against_independent_pose_model(motions, name):
    """Tracer paths against the rigid-body pose model of tests/reference (written
    independently of diffmech), over the first 30 steps of the seed's range."""
    fn, tracer, step = REF_CASES[name]
    lk, m = motions[name]
    n = 30
    u = np.arange(n) * step
    want = np.asarray(getattr(ref, fn)(u)[tracer])
    got = np.asarray(m[tracer])[:n]
    assert np.all(np.asarray(m.converged)[:n])
    assert np.max(np.abs(got - want)) <= 1e-9 * max(1.0, np.max(np.abs(want))), (name, np.max(np.abs(got - want)))


# ------------------------------------------------------------------ derivatives


@pytest.mark.parametrize("name", ["stephenson2", "spherical_watt1", "ss5"])
def test_velocities_and_accelerations_against_finite_differences(motions, name):
    lk, m = motions[name]
    k, h = 10, 1e-4
    u = m.inputs[k]
    x = lk.state(m.coords[k])

    @jax.jit
    def everything(lk, x, u):
        vel, acc = L.rates(lk, x, u, 1.0, 0.0)
        at = [L.solve(lk, u + d, guess=x) for d in (h, 0.0, -h)]
        return vel, acc, [lk.full(s.value, u + d) for s, d in zip(at, (h, 0.0, -h))], [s.converged for s in at]

    vel, acc, (cp, c0, cm), ok = everything(lk, x, u)
    assert all(bool(o) for o in ok)
    cp, c0, cm = (np.asarray(c) for c in (cp, c0, cm))
    fd_v = (cp - cm) / (2 * h)
    fd_a = (cp - 2 * c0 + cm) / h**2
    assert np.max(np.abs(np.asarray(vel) - fd_v)) <= 1e-7 * max(1.0, np.max(np.abs(fd_v)))
    assert np.max(np.abs(np.asarray(acc) - fd_a)) <= 1e-4 * max(1.0, np.max(np.abs(fd_a)))
    # velocities are tangent to every rigidity metric (Eqs. (1)–(9) differentiated)
    C, dC, eps = c0, np.asarray(vel), 1e-7
    dm_ = (pair_metrics(lk, C + eps * dC) - pair_metrics(lk, C - eps * dC)) / (2 * eps)
    assert np.max(np.abs(dm_)) <= 1e-6 * max(1.0, np.max(np.abs(dC)))


def test_motion_rates_along_a_whole_motion(motions):
    """`motion_rates` (vmapped over the steps) equals finite differences of the motion
    itself (a central difference of positions two steps apart)."""
    lk, m = motions["spherical_rrpr"]
    V, A = L.motion_rates(lk, m)
    C, du = np.asarray(m.coords), float(m.inputs[1] - m.inputs[0])
    fd = (C[2:] - C[:-2]) / (2 * du)
    # the central difference has an O(du²) truncation error at du = 2°: the bound is
    # that truncation, the IFT values themselves are exact (see the test above)
    err = np.max(np.abs(np.asarray(V)[1:-1] - fd))
    assert err <= 5e-3 * np.max(np.abs(fd))
    fd2 = (C[2:] - 2 * C[1:-1] + C[:-2]) / du**2
    assert np.max(np.abs(np.asarray(A)[1:-1] - fd2)) <= 1e-2 * np.max(np.abs(fd2))
    assert np.all(np.isfinite(np.asarray(V)))


@pytest.mark.parametrize("name,tracer", [("spherical_rrpr", "J5")])  # Stephenson-II: notebook 03
def test_gradient_of_tracer_path_wrt_initial_coordinates(name, tracer):
    """The design gradient of synthesis: d(tracer path)/d(initial joint coordinates)
    through the whole continuation (implicit differentiation at every step), against
    central differences of re-run simulations."""
    lk = getattr(dm.examples, name)()
    j = lk.joint(tracer)
    inputs = jnp.arange(12.0) * (2 * math.pi / 180)

    @jax.jit
    def loss(coords):
        m = L.sweep_functional(eqx.tree_at(lambda l: l.coords, lk, coords), inputs, branch=False, condition=False)
        p = m.coords[:, j, : lk.dim]
        return jnp.sum(jnp.where(m.converged[:, None], p * jnp.arange(1.0, lk.dim + 1.0), 0.0))

    C = lk.coords
    g = np.asarray(jax.grad(loss)(C))
    # the design variables that move: every coordinate of two joints that are solved
    # or driven, plus the tracer's own
    sel = [lk.joint(n) for n in lk.names if n != tracer][1:3] + [j]
    flat = [(a, c) for a in sel for c in range(lk.dim)]

    def f(v):
        Cp = C
        for (a, c), val in zip(flat, v):
            Cp = Cp.at[a, c].set(val)
        return float(loss(Cp))

    v0 = np.array([float(C[a, c]) for a, c in flat])
    fd = central_diff(f, v0, h=1e-6)
    got = np.array([g[a, c] for a, c in flat])
    assert np.max(np.abs(got - fd)) <= 1e-6 * max(1.0, np.max(np.abs(fd))), (got, fd)
    assert np.max(np.abs(fd)) > 1e-3  # the check can fail


def test_vmap_over_designs_equals_single_runs():
    lk = dm.examples.theo_jansen()
    rng = np.random.default_rng(0)
    batch = lk.coords[None] + 0.02 * jnp.asarray(rng.normal(size=(4,) + lk.coords.shape)) * jnp.asarray(
        [[1.0, 1.0, 0.0] if t != "P" else [0.0, 0.0, 1.0] for t in lk.types]
    )
    inputs = L.default_inputs(lk, steps=40)
    f = eqx.filter_jit(
        eqx.filter_vmap(lambda c: L.sweep_functional(eqx.tree_at(lambda l: l.coords, lk, c), inputs, condition=False))
    )
    mb = f(batch)
    for i in (0, 3):
        mi = L.sweep(eqx.tree_at(lambda l: l.coords, lk, batch[i]), inputs=inputs, condition=False)
        np.testing.assert_allclose(np.asarray(mb.coords[i]), np.asarray(mi.coords), atol=1e-12)
        assert bool(jnp.all(mb.converged[i] == mi.converged))


# ------------------------------------------------------------------ inputs, limits, branch


def cross2(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def slider_crank_spec(offset=0.0):
    # an inverted slider-crank: B slides along the ground line y = offset (prismatic
    # input, Eq. (13)), coupler BC, rocker CD about D = (0.1, 0.3)
    return {
        "name": "slider",
        "geometry": "planar",
        "joints": {
            "G": {"type": "P", "coords": [0.0, 1.0, -offset]},
            "B": {"type": "R", "coords": [0.0, offset]},
            "C": {"type": "R", "coords": [0.2, 0.25]},
            "D": {"type": "R", "coords": [0.1, 0.3]},
        },
        "links": {"slider": ["G", "B"], "coupler": ["B", "C"], "rocker": ["C", "D"], "ground": ["G", "D"]},
        "ground": "ground",
        "input": {"type": "prismatic", "link": "slider", "joint": "G"},
    }


def test_planar_prismatic_input_against_circle_intersection():
    lk = L.Linkage.from_dict(slider_crank_spec(0.05))
    m = L.sweep(lk, steps=60, step=0.004)
    s = np.asarray(m.inputs)
    B = np.stack([s, np.full_like(s, 0.05)], 1)  # along (b, −a) = (1, 0)
    D = np.array([0.1, 0.3])
    C0 = np.array([0.2, 0.25])
    r1, r2 = np.linalg.norm(C0 - np.array([0.0, 0.05])), np.linalg.norm(C0 - D)
    d = np.linalg.norm(D - B, axis=1)
    a = (r1**2 - r2**2 + d**2) / (2 * d)
    h = np.sqrt(r1**2 - a**2)
    e = (D - B) / d[:, None]
    side = np.sign(cross2(D - np.array([0.0, 0.05]), C0 - np.array([0.0, 0.05])))
    C = B + a[:, None] * e + side * h[:, None] * np.stack([-e[:, 1], e[:, 0]], 1)
    ok = np.asarray(m.converged)
    assert ok.all()
    assert np.max(np.abs(np.asarray(m["C"]) - C)) <= 1e-13
    assert np.max(np.abs(np.asarray(m["B"]) - B)) <= 1e-15


def test_motion_limit_is_reported_and_the_branch_kept():
    # a double rocker (non-Grashof): the crank cannot turn fully; the open curve stops
    lk = L.Linkage.from_dict(DOUBLE_ROCKER)
    m = L.sweep(lk)
    ok = np.asarray(m.converged)
    n = int(ok.sum())
    assert 0 < n < 180 and ok[:n].all() and not ok[n:].any()
    assert m.result in (RESULTS.motion_limit, RESULTS.branch_switch)
    assert np.isnan(np.asarray(m.path("P"))[n:]).all() and np.isfinite(np.asarray(m.path("P"))[:n]).all()
    # the branch (C on one side of BD) never flips on converged steps
    C, B, D = (np.asarray(m[k])[:n] for k in "CBD")
    side = np.sign(cross2(D - B, C - B))
    assert np.all(side == side[0])
    # the crank limit of this design, from the triangle inequality: |BD| ≤ l2 + l3
    l1, l4 = 0.3, 0.5
    l2, l3 = np.hypot(0.25, 0.2), np.hypot(0.05, 0.2)
    th_max = np.arccos((l1**2 + l4**2 - (l2 + l3) ** 2) / (2 * l1 * l4))
    u = np.asarray(m.inputs)
    assert u[n - 1] <= th_max + 1e-12 < u[n]


@pytest.mark.parametrize("name", EXAMPLES)
def test_inputs_in_any_order_are_solved_on_the_initial_assembly(motions, name):
    """Inputs out of order (drawn from the seed range, shuffled) land where sequential
    continuation in order from the initial configuration lands (the seed-range motion,
    itself checked against the independent pose model above), or are marked: eagerly
    (`simulate` sorts them), and inside `jax.jit` in the order given (the path is
    followed, its long steps in substeps) for the six-bars whose two dyads can flip
    together without changing the determinant's sign. Before, the Jansen leg's inputs
    [0, 1.6, 0.4, 2.6] came back up to 4.7 units off, marked converged."""
    lk, ref_m = motions[name]
    ok = np.asarray(ref_m.converged)
    rng = np.random.default_rng(7)
    rows = rng.choice(np.flatnonzero(ok), 10, replace=False)
    beyond = np.flatnonzero(~ok)[:1]  # a motion limit inside the seed range: an input past it must stay marked
    rows = rng.permutation(np.concatenate([rows, beyond]))
    u = np.asarray(ref_m.inputs)[rows]
    C = np.asarray(ref_m.coords)[rows]
    scale = float(np.abs(np.asarray(ref_m.coords)[ok]).max())

    def agrees(m, must_converge):
        conv = np.asarray(m.converged)
        assert not conv[~ok[rows]].any()  # never a solution where continuation found none
        if must_converge:
            assert conv[ok[rows]].all()
        err = np.abs(np.asarray(m.coords) - C)[conv]
        assert err.size == 0 or np.nanmax(err) <= 1e-9 * scale

    agrees(L.sweep(lk, inputs=u), must_converge=True)
    if name in ("theo_jansen", "stephenson2"):
        # in the order given: a motion limit met on the way masks what follows (marked, not wrong)
        agrees(jax.jit(L.sweep_functional)(lk, jnp.asarray(u)), must_converge=not beyond.size)
    if name == "theo_jansen":
        v = np.array([0.0, 1.6, 0.4, 2.6])
        m = L.sweep(lk, inputs=v)
        inorder = L.sweep(lk, inputs=np.sort(v))
        assert bool(m.converged.all())
        expected = np.asarray(inorder.coords)[[0, 2, 1, 3]]
        np.testing.assert_allclose(np.asarray(m.coords), expected, rtol=0, atol=1e-9 * scale)


def test_eager_simulate_compiles_the_fallback_only_when_needed():
    # the eager entry runs the program without the sequential fallback first; it compiles
    # and runs the fallback (alone, from the first deferred input) only where an input
    # was left deferred (a motion limit the coarse predictor cannot prove: the class-III
    # triad's, after 44 steps; the spherical Watt-I's, after 49 steps, is proved by its
    # dyads' closed form). Its result is the one-program result (simulate_functional,
    # default fallback)
    from test_structure import triad

    from diffmech.linkage import _simulate as S

    for name, needed in (("spherical_rrpr", False), ("spherical_watt1", False), ("triad", True)):
        lk = triad() if name == "triad" else getattr(dm.examples, name)()
        steps = {"spherical_watt1": 71, "spherical_rrpr": 73, "triad": 75}[name]  # lengths no other test compiles
        # (the spherical linkages run on their plans' programs: `linkage._plan`)
        eager = lambda: S._simulate_jit._cache_size() + S._plan_jit._cache_size()  # noqa: E731
        resume = lambda: S._resume_jit._cache_size() + S._plan_resume_jit._cache_size()  # noqa: E731
        before = eager(), resume()
        m = L.sweep(lk, steps=steps)
        assert eager() - before[0] == 1, name
        assert resume() - before[1] == (1 if needed else 0), name
        one = jax.jit(lambda lk_, u: L.sweep_functional(lk_, u))(lk, m.inputs)
        np.testing.assert_array_equal(m.converged, one.converged)
        np.testing.assert_array_equal(m.status._value, one.status._value)
        ok = np.asarray(one.converged)
        assert ok.all() == (name == "spherical_rrpr")
        assert not np.any(np.asarray(m.status._value) == int(RESULTS.deferred._value))
        np.testing.assert_allclose(m.coords[ok], one.coords[ok], rtol=0, atol=1e-13)


def test_simulate_names_a_bad_range():
    lk = dm.examples.fourbar()
    with pytest.raises(ValueError, match=r"`steps` must be an integer ≥ 1; got 0"):
        L.sweep(lk, steps=0)
    with pytest.raises(ValueError, match="`step` must be one finite number; got nan"):
        L.sweep(lk, steps=3, step=float("nan"))
    with pytest.raises(ValueError, match=r"inputs must be a finite 1-D array; got shape \(2, 2\)"):
        L.sweep(lk, inputs=np.zeros((2, 2)))


# ------------------------------------------------------------------ files


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_file_round_trip(tmp_path, suffix):
    for name in EXAMPLES:
        lk = getattr(dm.examples, name)()
        p = tmp_path / f"{name}{suffix}"
        lk.save(p)
        back = L.load(p)
        assert back.names == lk.names and back.types == lk.types and back.links == lk.links
        assert back.input_kind == lk.input_kind and back.input_joints == lk.input_joints
        assert back.geometry == lk.geometry and back.steps == lk.steps and back.step == lk.step
        np.testing.assert_allclose(np.asarray(back.coords), np.asarray(lk.coords), rtol=0, atol=1e-15)
        for field in ("masses", "coms", "inertias", "gravity"):  # mass properties survive the file too
            np.testing.assert_array_equal(np.asarray(getattr(back, field)), np.asarray(getattr(lk, field)))


def base_spec():
    return json.loads(dm.examples.path("stephenson2").read_text())


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda s: s["links"]["L2"]["joints"].append("J99"), "links.L2: unknown joint 'J99'"),
        (lambda s: s["links"]["L2"].update(mass=-1.0), r"links.L2.mass: must be ≥ 0"),
        (lambda s: s["links"]["L2"].update(com="J6"), "links.L2.com: 'J6' is not a joint of this link"),
        (lambda s: s["links"]["L2"].update(inertia="big"), "links.L2.inertia: a finite number"),
        (lambda s: s["links"]["L2"].update(colour="red"), "links.L2: unknown key 'colour'"),
        (lambda s: s.update(gravity=[0.0, -9.81, 0.0]), r"gravity: 2 finite numbers"),
        (lambda s: s["links"].update(L9=["J4"]), "links.L9: a link needs two or more joints"),
        (lambda s: s["joints"]["J4"].update(coords=[1, 2, 3]), "joints.J4.coords: a point"),
        (lambda s: s["joints"]["J3"].update(coords=[0, 0, 1]), "joints.J3.coords: the line .* cannot be normalised"),
        (lambda s: s["joints"]["J3"].update(coords=[0, "x", 1]), "joints.J3.coords"),
        (lambda s: s["joints"]["J5"].update(type="Q"), "joints.J5.type"),
        (lambda s: s.update(ground="L9"), "ground: unknown link 'L9'"),
        (lambda s: s.update(input="L9"), "input.link: unknown link 'L9'"),
        (lambda s: s.update(colour="red"), "unknown key 'colour'"),
        (lambda s: s["links"].pop("L3"), "joints.J3: a joint connects two or more links"),
        (lambda s: s["links"].update(L3=["J3", "J6", "J5"]), "rigidity equations for .* unknown coordinates"),
    ],
)
def test_bad_descriptions_name_the_item(edit, match):
    spec = base_spec()
    edit(spec)
    with pytest.raises(L.LinkageError, match=match):
        L.Linkage.from_dict(spec)


def test_bad_file_names_the_file(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text("{not json")
    with pytest.raises(L.LinkageError, match="broken.json: not valid JSON"):
        L.load(p)
    spec = base_spec()
    spec["links"]["L2"]["joints"][0] = "J42"
    p.write_text(json.dumps(spec))
    with pytest.raises(L.LinkageError, match="broken.json: links.L2: unknown joint 'J42'"):
        L.load(p)


def test_spherical_point_off_the_sphere_is_an_error():
    spec = json.loads(dm.examples.path("spherical_rrpr").read_text())
    spec["joints"]["J2"]["coords"] = [0.8, 0.27, 0.9]
    with pytest.raises(L.LinkageError, match="joints.J2.coords: a spherical point must lie on the unit sphere"):
        L.Linkage.from_dict(spec)


def test_undetermined_configuration_is_an_error_with_its_rank():
    # a four-bar assembled in a toggle (coupler and rocker collinear): the closure
    # Jacobian loses rank at the initial configuration
    spec = {
        "geometry": "planar",
        "joints": {
            "A": {"type": "R", "coords": [0, 0]},
            "B": {"type": "R", "coords": [0.1, 0]},
            "C": {"type": "R", "coords": [0.3, 0.0]},
            "D": {"type": "R", "coords": [0.4, 0]},
        },
        "links": {"crank": ["A", "B"], "coupler": ["B", "C"], "rocker": ["C", "D"], "ground": ["A", "D"]},
        "ground": "ground",
        "input": "crank",
    }
    lk = L.Linkage.from_dict(spec)
    with pytest.raises(L.LinkageError, match="closure Jacobian rank 1 of 2"):
        L.sweep(lk)


# ------------------------------------------------------------------ dynamics (issue 23)
#
# The bundled four-bar carries Bai et al.'s masses and inertias with the centres of mass
# at the links' midpoints: exactly `dm.FourBar.seed_crank_rocker()`, whose reduced
# Hamiltonian model (`fourbar.simulate_dynamics`, tested against an absolute-coordinate model)
# is the independent reference here.

FB_SEED = dm.FourBar.seed_crank_rocker()
T5 = jnp.linspace(0.0, 5.0, 51)


def test_generic_generalised_inertia_equals_the_fourbar_closed_form():
    lk = dm.examples.fourbar()
    for th in (0.3, 1.7, 4.0):
        M, dM = L.generalised_inertia(lk, L.solve(lk, th).value, th)
        sig = dm.fourbar.sigma(FB_SEED, dm.fourbar.assemble(FB_SEED, th))
        assert float(M) == pytest.approx(float(sig), rel=1e-13)
        h = 1e-5
        fd = (
            float(dm.fourbar.sigma(FB_SEED, dm.fourbar.assemble(FB_SEED, th + h)))
            - float(dm.fourbar.sigma(FB_SEED, dm.fourbar.assemble(FB_SEED, th - h)))
        ) / (2 * h)
        assert float(dM) == pytest.approx(fd, rel=1e-8)


@pytest.mark.parametrize("driven", [False, True])
def test_generic_dynamics_equals_the_fourbar_model_over_five_seconds(driven):
    lk = dm.examples.fourbar()

    def torque(t, u, w):
        return 0.05 * jnp.sin(3.0 * t) + 0.02

    drive = L.Drive(torque=torque, damping=0.002) if driven else None
    fdrive = dm.fourbar.Drive(torque=torque, damping=jnp.array([0.002, 0.0, 0.0, 0.0])) if driven else None
    sim = L.simulate_dynamics(lk, 0.0, 5.0, saveat=T5, drive=drive, rtol=1e-12, atol=1e-14)
    q0 = dm.fourbar.assemble(FB_SEED, 0.0)
    ref_ = dm.fourbar.simulate_dynamics(FB_SEED, q0, 0.0, 5.0, saveat=T5, drive=fdrive, rtol=1e-12, atol=1e-14)
    assert bool(jnp.all(sim.converged)) and sim.result == RESULTS.successful
    assert float(jnp.max(jnp.abs(sim.u - ref_.theta_A))) <= 1e-9
    # every saved configuration closed to round-off; the joints where the four-bar puts them
    assert float(jnp.max(sim.residual)) <= 1e-14
    P = dm.fourbar.joint_positions(FB_SEED, ref_.q)
    assert float(jnp.max(jnp.abs(sim["C"] - P["C"]))) <= 1e-9
    # the work balance E(t) − E(0) = work − dissipated
    assert float(sim.energy_error) <= 1e-9
    if driven:
        assert float(sim.dissipated[-1]) > 0 and float(jnp.max(jnp.abs(sim.work))) > 1e-3


def _dynamics_loss(adjoint):
    lk = dm.examples.fourbar()

    def loss(p):  # the crank angle after 0.5 s of free motion, against masses and inertias
        m = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (p[:4], p[4:]))
        sim = L.simulate_dynamics(m, 0.0, 0.5, saveat=jnp.array([0.0, 0.5]), rtol=1e-11, atol=1e-13, adjoint=adjoint)
        return sim.u[-1]

    return loss, jnp.concatenate([lk.masses, lk.inertias])


def _check_against_central_differences(loss, p, g):
    for i in range(3):
        for k, h in ((i, 1e-6), (4 + i, 1e-8)):  # a mass, an inertia
            e = jnp.zeros(8).at[k].set(h)
            fd = (float(loss(p + e)) - float(loss(p - e))) / (2 * h)
            assert float(g[k]) == pytest.approx(fd, rel=1e-6), (k, float(g[k]), fd)
    assert float(g[3]) == 0.0 and float(g[7]) == 0.0  # the ground's mass and inertia move nothing


def test_dynamics_gradients_match_central_differences():
    # forward mode through the solve (Diffrax's ForwardMode): all eight at once
    loss, p = _dynamics_loss(diffrax.ForwardMode())
    _check_against_central_differences(loss, p, jax.jit(jax.jacfwd(loss))(p))


@pytest.mark.slow
def test_dynamics_reverse_mode_gradients_match_central_differences():
    # reverse mode (the default adjoint, recursive checkpointing): 15 s of compilation
    loss, p = _dynamics_loss(None)
    _check_against_central_differences(loss, p, jax.jit(jax.grad(loss))(p))


def test_dynamics_needs_mass_properties_and_old_files_still_load():
    lk = dm.examples.ss5()  # no mass properties in its file
    assert float(jnp.sum(lk.masses)) == 0.0
    with pytest.raises(ValueError, match="'ss5': no mass properties on any moving link"):
        L.simulate_dynamics(lk, 0.0, 1.0)
    spec = dm.examples.fourbar().to_dict()
    spec["links"]["crank"] = {"joints": ["A", "B"], "mass": 1.0}
    with pytest.raises(L.LinkageError, match=r"links.crank.com: a link with mass needs its centre of mass"):
        L.Linkage.from_dict(spec)
    spec["links"]["crank"] = ["A", "B"]  # the old form, no mass: loads
    assert float(L.Linkage.from_dict(spec).masses[0]) == 0.0


@pytest.mark.parametrize("name", ["stephenson2", "theo_jansen"])
def test_dynamics_agree_with_an_absolute_coordinate_multiplier_model(name):
    """The Stephenson-II and the Theo Jansen leg with their bundled mass properties
    (rods of 1 kg/m, slider blocks), released under gravity and driven by a damped
    motor, against an independent model (`tests/reference/linkage_absolute.py`:
    every link's pose as unknowns, joint constraints, Lagrange multipliers, DOP853
    with projection; written without diffmech's code): u(t) to 1e-8 over 5 s."""
    lk = getattr(dm.examples, name)()
    model = absolute.load(absolute._data_path(name))

    def torque(t, u, w):
        return 50.0 - 5.0 * w

    # the motor as the law τ = 50 − 5 u̇ (free motion and the law: one compiled program)
    for drive, tq in ((None, None), (L.Drive(torque=L.AffineTorque(50.0, 5.0)), torque)):
        sim = L.simulate_dynamics(lk, 0.0, 5.0, saveat=T5, drive=drive, rtol=1e-12, atol=1e-14)
        ref_ = absolute.forward(model, np.asarray(T5), torque=tq)
        assert bool(jnp.all(sim.converged))
        assert np.max(np.abs(np.asarray(sim.u) - ref_["u"])) <= 1e-8
        assert np.max(np.abs(np.asarray(sim.udot) - ref_["udot"])) <= 1e-7
        assert float(sim.energy_error) <= 1e-9 and float(jnp.max(sim.residual)) <= 1e-13
        if tq is not None:  # the work of the motor, integrated by both
            np.testing.assert_allclose(np.asarray(sim.work), ref_["work"], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["theo_jansen", "stephenson2"])
def test_joint_forces_agree_with_the_multiplier_model_and_the_reduced_equation(name):
    """The motor torque and every joint's wrench along one turn at constant speed
    (50 samples) against the absolute-coordinate model's multipliers; the torque
    against the reduced equation τ = M ü + ½ M′ u̇² + V′ (Lagrange's, from the
    generalised inertia: another formulation than the Newton–Euler balances)."""
    lk = getattr(dm.examples, name)()
    t = np.arange(50) / 50.0
    u, ud, udd = 2 * np.pi * t, np.full(50, 2 * np.pi), 3.0 * np.sin(2 * np.pi * t)
    m = L.sweep(lk, inputs=u)
    jf = L.joint_forces(lk, m, ud, udd)  # along the motion: its configurations
    assert bool(jnp.all(jf.converged))
    ref_ = absolute.inverse(absolute.load(absolute._data_path(name)), t, u, ud, udd)
    scale = float(np.abs(ref_["torque"]).max())
    assert np.max(np.abs(np.asarray(jf.torque) - ref_["torque"])) <= 1e-9 * scale
    assert set(jf.pairs) == set(ref_["reactions"])
    for j, link in jf.pairs:
        r = ref_["reactions"][j, link]
        assert np.max(np.abs(np.asarray(jf.reaction(j, link)) - r)) <= 1e-9 * max(1.0, float(np.abs(r).max()))
    np.testing.assert_allclose(np.asarray(jf.shaking_force), ref_["shaking_force"], atol=1e-9 * scale)
    np.testing.assert_allclose(np.asarray(jf.shaking_moment), ref_["shaking_moment"], atol=1e-9 * scale)
    # Lagrange's reduced equation at the same configurations
    for k in (0, 17, 33):
        x = lk.state(m.coords[k])
        M, dM = L.generalised_inertia(lk, x, u[k])
        _, dV = L.potential(lk, x, u[k])
        tau = float(M * udd[k] + 0.5 * dM * ud[k] ** 2 + dV)
        assert float(jf.torque[k]) == pytest.approx(tau, rel=1e-10, abs=1e-10 * scale)


def test_joint_force_gradients_match_central_differences():
    lk = dm.examples.fourbar()
    u = jnp.linspace(0.0, 2 * np.pi, 24, endpoint=False)

    def peak(coords, masses):  # a smooth stand-in for the peak bearing load at B on the coupler
        m = eqx.tree_at(lambda k: (k.coords, k.masses), lk, (coords, masses))
        f = L.joint_forces(m, u, 2 * np.pi, 0.0).reaction("B", "coupler")[:, :2]
        return jnp.log(jnp.sum(jnp.exp(10.0 * jnp.sum(f**2, axis=1)))) / 10.0

    gc, gm = jax.jit(jax.grad(peak, argnums=(0, 1)))(lk.coords, lk.masses)
    h = 1e-6
    for idx in ((1, 0), (2, 1), (3, 0)):  # B.x, C.y, D.x
        e = jnp.zeros_like(lk.coords).at[idx].set(h)
        fd = (float(peak(lk.coords + e, lk.masses)) - float(peak(lk.coords - e, lk.masses))) / (2 * h)
        assert float(gc[idx]) == pytest.approx(fd, rel=1e-6)
    for i in range(3):
        e = jnp.zeros(4).at[i].set(h)
        fd = (float(peak(lk.coords, lk.masses + e)) - float(peak(lk.coords, lk.masses - e))) / (2 * h)
        assert float(gm[i]) == pytest.approx(fd, rel=1e-6)


def _loaded_fourbar(damper=False, stiffness=40.0, force=(3.0, -5.0), damping=0.3):
    spec = dm.examples.fourbar().to_dict()
    spec["loads"] = [
        {"type": "force", "joint": "C", "link": "rocker", "force": list(force)},
        {"type": "torque", "link": "coupler", "torque": 0.7},
        {"type": "spring", "joints": ["B", "D"], "links": ["coupler", "rocker"], "stiffness": stiffness, "length": 0.2},
        {"type": "force", "joint": "P", "link": "coupler", "force": [-1.0, 2.0]},  # at the tracer
    ]
    if damper:
        spec["loads"].append({"type": "damper", "joints": ["A", "C"], "links": ["crank", "rocker"], "damping": damping})
    return L.Linkage.from_dict(spec)


def test_static_loads_on_a_massless_linkage_equal_virtual_work():
    """A massless four-bar held by its motor against a force at C, a force at the
    coupler point P (a tracer), a couple on the coupler and a spring B–D: the motor
    torque from the joint-force solve equals the virtual work
    τ = −(F · dC/du + F_P · dP/du + T dφ/du − dE_spring/du), the derivatives taken by
    central differences of the configurations (no implicit function theorem)."""
    lk = _loaded_fourbar()
    massless = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (0 * lk.masses, 0 * lk.inertias))
    u = np.linspace(0.2, 5.5, 9)
    jf = L.joint_forces(massless, u, 0.0, 0.0)

    def conf(v):
        return np.asarray(L.sweep(lk, inputs=np.concatenate([[0.0], v]), condition=False).coords[1:])

    h = 1e-6
    Xp, Xm = conf(u + h), conf(u - h)
    iB, iC, iD, iP = (lk.names.index(n) for n in "BCDP")
    dC = (Xp[:, iC, :2] - Xm[:, iC, :2]) / (2 * h)
    dP = (Xp[:, iP, :2] - Xm[:, iP, :2]) / (2 * h)

    def angle(X):
        return np.unwrap(np.arctan2(X[:, iC, 1] - X[:, iB, 1], X[:, iC, 0] - X[:, iB, 0]))

    def spring(X):
        return 0.5 * 40.0 * (np.linalg.norm(X[:, iD, :2] - X[:, iB, :2], axis=1) - 0.2) ** 2

    tau = -(
        dC @ np.array([3.0, -5.0])
        + dP @ np.array([-1.0, 2.0])
        + 0.7 * (angle(Xp) - angle(Xm)) / (2 * h)
        - (spring(Xp) - spring(Xm)) / (2 * h)
    )
    np.testing.assert_allclose(np.asarray(jf.torque), tau, rtol=0, atol=1e-8)


def test_springs_dampers_and_forces_keep_the_work_balance():
    from test_first_call import compilations

    lk = _loaded_fourbar(damper=True)
    kw = dict(saveat=jnp.linspace(0.0, 3.0, 31), rtol=1e-12, atol=1e-14)
    sim = L.simulate_dynamics(lk, 1.0, 3.0, **kw)
    # the loads are data: other numbers (a new linkage from its description) run the same program
    other = _loaded_fourbar(damper=True, stiffness=60.0, force=(1.0, -2.0), damping=0.5)
    with compilations() as seen:
        again = L.simulate_dynamics(other, 1.0, 3.0, **kw)
    assert seen == [], len(seen)
    for s in (sim, again):
        assert bool(jnp.all(s.converged))
        assert float(s.dissipated[-1]) > 0.1 and float(jnp.max(jnp.abs(s.work))) > 0.1
        assert float(s.energy_error) <= 1e-9  # E(t) − E(0) = work − dissipated
    assert abs(float(again.u[-1] - sim.u[-1])) > 1e-3  # the new numbers act
    back = L.Linkage.from_dict(lk.to_dict())  # the loads survive the description
    assert back.load_kinds == lk.load_kinds and bool(jnp.all(back.load_params == lk.load_params))
    bad = lk.to_dict()
    bad["loads"][0]["joint"] = "A"
    with pytest.raises(L.LinkageError, match=r"loads\[0\]: joint 'A' is not on link 'rocker'"):
        L.Linkage.from_dict(bad)
    bad["loads"][0] = {"type": "gravity"}
    with pytest.raises(L.LinkageError, match=r"loads\[0\].type: one of"):
        L.Linkage.from_dict(bad)


def test_prismatic_input_joint_forces_equal_virtual_work_and_lagrange():
    """The inverted slider-crank driven along its ground line: massless under a force
    at C, the motor's force equals the virtual work (central differences of the
    configurations); with rod masses, the motor's force along a prescribed motion
    equals Lagrange's reduced equation M ü + ½ M′ u̇² + V′ plus that static force."""
    spec = slider_crank_spec(0.05)
    spec["loads"] = [{"type": "force", "joint": "C", "link": "rocker", "force": [2.0, -3.0]}]
    lk = L.rod_mass_properties(L.Linkage.from_dict(spec), block_mass=0.3, block_inertia=1e-3)
    u = np.linspace(0.0, 0.2, 6)
    massless = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (0 * lk.masses, 0 * lk.inertias))
    f = np.asarray(L.joint_forces(massless, u, 0.0, 0.0).torque)
    h, iC = 1e-7, lk.names.index("C")

    def conf(v):
        return np.asarray(L.sweep(lk, inputs=np.concatenate([[0.0], v]), condition=False).coords[1:, iC, :2])

    dC = (conf(u + h) - conf(u - h)) / (2 * h)
    np.testing.assert_allclose(f, -(dC @ np.array([2.0, -3.0])), rtol=0, atol=1e-7)
    ud, udd = np.full(6, 0.4), np.linspace(-1.0, 1.0, 6)
    jf = L.joint_forces(lk, u, ud, udd)
    motion = L.sweep(lk, inputs=u, condition=False)
    for k in range(6):
        x = lk.state(motion.coords[k])
        M, dM = L.generalised_inertia(lk, x, u[k])
        _, dV = L.potential(lk, x, u[k])
        # the applied force's share is the static force found above (its virtual work)
        lagrange = float(M * udd[k] + 0.5 * dM * ud[k] ** 2 + dV) + f[k]
        assert float(jf.torque[k]) == pytest.approx(lagrange, abs=1e-7)


def test_planar_actuator_joint_forces_equal_virtual_work_and_lagrange():
    """The bundled four-bar driven by a linear actuator between the crank's ground
    pivot A and the rocker pin C (its push acts on the two pins): massless under a
    force at C, the actuator's force equals the virtual work; with the paper's
    masses, it equals Lagrange's reduced equation plus that static force."""
    spec = dm.examples.fourbar().to_dict()
    spec["input"] = {"type": "actuator", "joints": ["A", "C"]}
    spec["loads"] = [{"type": "force", "joint": "C", "link": "rocker", "force": [2.0, -3.0]}]
    lk = L.Linkage.from_dict(spec)
    u, ud, udd = np.linspace(-0.05, 0.05, 5), np.full(5, 0.3), np.linspace(-1.0, 1.0, 5)
    massless = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (0 * lk.masses, 0 * lk.inertias))
    static = np.asarray(L.joint_forces(massless, u, 0.0, 0.0).torque)
    h, iC = 1e-6, lk.names.index("C")

    def conf(v):
        return np.asarray(L.sweep(lk, inputs=np.concatenate([[0.0], v]), condition=False).coords[1:])

    dC = (conf(u + h)[:, iC, :2] - conf(u - h)[:, iC, :2]) / (2 * h)
    np.testing.assert_allclose(static, -(dC @ np.array([2.0, -3.0])), rtol=1e-7)
    jf = L.joint_forces(lk, u, ud, udd)
    X = conf(u)
    for k in range(5):
        x = lk.state(jnp.asarray(X[k]))
        M, dM = L.generalised_inertia(lk, x, u[k])
        _, dV = L.potential(lk, x, u[k])
        lagrange = float(M * udd[k] + 0.5 * dM * ud[k] ** 2 + dV) + static[k]
        assert float(jf.torque[k]) == pytest.approx(lagrange, rel=1e-10)
    # each pin is massless: the wrenches it puts on the links that hold it add up to
    # the actuator's push on it (its force f along A → C at C, the opposite at A)
    e = X[:, iC, :2] - X[:, lk.names.index("A"), :2]
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    for pin, sign in (("C", 1.0), ("A", -1.0)):
        total = sum(np.asarray(jf.reaction(j, k)) for j, k in jf.pairs if j == pin)
        push = sign * np.asarray(jf.torque)[:, None] * e
        at = X[:, lk.names.index(pin), :2]
        moment = at[:, 0] * push[:, 1] - at[:, 1] * push[:, 0]
        scale = np.max(np.abs(push))
        np.testing.assert_allclose(total, np.c_[push, moment], atol=1e-10 * scale, err_msg=pin)


def test_joint_forces_vmap_over_designs_equals_single_runs():
    lk = dm.examples.fourbar()
    u = jnp.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    scale = jnp.asarray([0.5, 1.0, 2.0])

    def peak_torque(s):
        m = eqx.tree_at(lambda k: k.masses, lk, lk.masses * s)
        return L.joint_forces(m, u, 2 * np.pi, 0.0, throw=False).torque

    batched = jax.jit(jax.vmap(peak_torque))(scale)
    for i in (0, 2):
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(peak_torque(scale[i])), rtol=1e-13, atol=1e-13)


def _massive_spherical_rrpr():
    spec = dm.examples.spherical_rrpr().to_dict()
    inertia = [[0.02, 0.001, 0.0], [0.001, 0.03, 0.002], [0.0, 0.002, 0.025]]
    spec["links"]["L1"] = {"joints": spec["links"]["L1"], "mass": 1.0, "com": [0.9, 0.25, 0.2], "inertia": inertia}
    spec["links"]["L2"] = {"joints": spec["links"]["L2"], "mass": 2.0, "com": "J5", "inertia": 0.05}
    spec["links"]["L3"] = {"joints": spec["links"]["L3"], "mass": 0.5, "com": "J4", "inertia": 0.01}
    # loads on the sphere: a spring and a damper between the crank and the ground,
    # a constant force on the coupler, a couple on the crank
    spec["loads"] = [
        {"type": "spring", "joints": ["J2", "J4"], "links": ["L1", "L4"], "stiffness": 0.8, "length": 0.9},
        {"type": "damper", "joints": ["J5", "J4"], "links": ["L2", "L4"], "damping": 0.05},
        {"type": "force", "joint": "J5", "link": "L2", "force": [0.3, -0.2, 0.1]},
        {"type": "torque", "link": "L1", "torque": [0.02, 0.0, -0.05]},
    ]
    return spec


def test_spherical_dynamics_keep_the_energy_and_match_a_finite_difference_kinetic_energy():
    """The seed's spherical RRPR with mass properties (a full inertia tensor on the
    crank) and loads (spring, damper, force, couple): released under gravity, the
    energy balance (kinetic + potential − work of the force and couple + dissipated)
    holds and every save is closed; the
    generalised inertia M(u) (implicit function theorem, jvps) equals twice the
    kinetic energy at u̇ = 1 computed from central differences of the configurations
    (each link's frame from two of its joints, its centre of mass carried by it,
    ω from Ṙ Rᵀ)."""
    spec = _massive_spherical_rrpr()
    lk = L.Linkage.from_dict(spec)
    sim = L.simulate_dynamics(lk, 0.0, 2.0, saveat=jnp.linspace(0.0, 2.0, 21), rtol=1e-12, atol=1e-14)
    assert bool(jnp.all(sim.converged)) and float(jnp.max(jnp.abs(sim.u))) > 1.0  # it swings
    assert float(sim.energy_error) <= 1e-9 and float(jnp.max(sim.residual)) <= 1e-13
    u0, h = 0.3, 1e-6
    X = np.asarray(L.sweep(lk, inputs=np.array([0.0, 0.15, u0 - h, u0, u0 + h]), condition=False).coords)
    M, _ = L.generalised_inertia(lk, lk.state(jnp.asarray(X[3])), u0)
    C0 = np.asarray(lk.initial())

    def frame(P, a, b):
        e1 = P[a] / np.linalg.norm(P[a])
        e2 = P[b] - (P[b] @ e1) * e1
        e2 = e2 / np.linalg.norm(e2)
        return np.stack([e1, e2, np.cross(e1, e2)], axis=-1)

    two_t = 0.0
    for name, (a, b) in {"L1": (0, 1), "L2": (1, 2), "L3": (3, 2)}.items():
        k = lk.link_names.index(name)
        R0, Rm, R, Rp = frame(C0, a, b), frame(X[2], a, b), frame(X[3], a, b), frame(X[4], a, b)
        cb = R0.T @ np.asarray(lk.coms)[k]
        cdot = (Rp @ cb - Rm @ cb) / (2 * h)
        W = (Rp - Rm) / (2 * h) @ R.T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        two_t += float(lk.masses[k]) * cdot @ cdot + w @ (R @ R0.T @ np.asarray(lk.inertias)[k] @ R0 @ R.T) @ w
    assert float(M) == pytest.approx(two_t, rel=1e-8)
    spec["links"]["L1"]["inertia"] = [[0.02, 0.5, 0.0], [0.0, 0.03, 0.0], [0.0, 0.0, 0.025]]
    with pytest.raises(L.LinkageError, match="links.L1.inertia: must be symmetric positive semi-definite"):
        L.Linkage.from_dict(spec)


def test_spatial_dynamics_keep_the_energy_and_match_the_rods_kinetic_energy():
    """The seed's spatial 5-SS (Table 5) made of uniform rods (five S–S legs, a
    pentagon of rods for the platform; `rod_mass_properties`) with a spring, a
    damper, a force and a couple, released under gravity with its actuator free:
    the energy balance holds and every save is closed. The generalised inertia M(u)
    (frames, inertia tensors, the legs' transverse moments) equals twice the
    kinetic energy at u̇ = 1 of the rods as continua, `Σ m/3 (|ȧ|² + ȧ·ḃ + |ḃ|²)`
    over every rod's end velocities (central differences of the configurations),
    and V(u) their potential `−Σ m g·(a + b)/2`: no frame, centre of mass or
    tensor enters these."""
    lk = L.rod_mass_properties(dm.examples.ss5())
    spec = lk.to_dict()
    spec["loads"] = [
        {"type": "spring", "joints": ["J1", "J11"], "links": ["L7", "L6"], "stiffness": 3.0},
        {"type": "damper", "joints": ["J4", "J10"], "links": ["L7", "L6"], "damping": 0.5},
        {"type": "force", "joint": "J11", "link": "L6", "force": [1.0, -2.0, 3.0]},
        {"type": "torque", "link": "L6", "torque": [0.5, -1.0, 2.0]},
    ]
    loaded = L.Linkage.from_dict(spec)
    # saves at 0, δ, 2δ give the initial acceleration (below), then every 1/8 s
    ts = jnp.concatenate([jnp.asarray([0.0, 1e-3, 2e-3]), jnp.linspace(0.125, 1.0, 8)])
    sim = L.simulate_dynamics(loaded, 0.0, 1.0, saveat=ts, rtol=1e-13, atol=1e-15)
    assert bool(jnp.all(sim.converged)) and float(sim.u[-1]) > 0.1  # it moves
    assert float(sim.dissipated[-1]) > 1e-3 and abs(float(sim.work[-1])) > 1e-3  # the loads act
    assert float(sim.energy_error) <= 1e-9 and float(jnp.max(sim.residual)) <= 1e-12

    h = 1e-5
    C0, g = np.asarray(lk.coords), np.asarray(lk.gravity)
    rods = []  # (mass, a, b) of every rod (density 1)
    for li, members in enumerate(lk.links):
        pts = [j for j in members if lk.types[j] == "S"] if li != lk.ground else []
        for a, b in list(zip(pts, pts[1:])) + ([(pts[-1], pts[0])] if len(pts) > 2 else []):
            rods.append((np.linalg.norm(C0[b] - C0[a]), a, b))

    def rods_and_loads(X, Vel):
        """2T at u̇ = 1, gravity's and the spring's potential, the force's and the
        couple's generalised force (virtual work, the platform's ω from its frame)."""
        Xm, X0, Xp = X
        two_t = sum(m / 3 * (Vel[a] @ Vel[a] + Vel[a] @ Vel[b] + Vel[b] @ Vel[b]) for m, a, b in rods)
        gravity = -sum(m * g @ (X0[a] + X0[b]) / 2 for m, a, b in rods)
        i1, i11, i6, i7, i8 = (lk.names.index(n) for n in ("J1", "J11", "J6", "J7", "J8"))
        spring = 1.5 * (np.linalg.norm(X0[i11] - X0[i1]) - np.linalg.norm(C0[i11] - C0[i1])) ** 2

        def frame(P):
            e1 = (P[i7] - P[i6]) / np.linalg.norm(P[i7] - P[i6])
            e2 = P[i8] - P[i6] - ((P[i8] - P[i6]) @ e1) * e1
            e2 = e2 / np.linalg.norm(e2)
            return np.stack([e1, e2, np.cross(e1, e2)], axis=-1)

        W = (frame(Xp) - frame(Xm)) / (2 * h) @ frame(X0).T
        omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
        applied = np.array([1.0, -2.0, 3.0]) @ Vel[i11] + np.array([0.5, -1.0, 2.0]) @ omega
        return two_t, gravity, spring, applied

    def at(u0):
        X = np.asarray(L.sweep(lk, inputs=np.array([0.0, u0 / 2, u0 - h, u0, u0 + h]), condition=False).coords)
        return X[2:], (X[4] - X[2]) / (2 * h)

    # M(u) and V(u) at u = 0.05
    X, Vel = at(0.05)
    x = lk.state(jnp.asarray(X[1]))
    M, _ = L.generalised_inertia(lk, x, 0.05)
    V, _ = L.potential(lk, x, 0.05)
    two_t, gravity, _, _ = rods_and_loads(X, Vel)
    assert float(M) == pytest.approx(two_t, rel=1e-8)
    assert float(V) == pytest.approx(gravity, rel=1e-12)
    # from rest, M(0) ü(0) = Q(0) − V′(0): the applied loads by virtual work, V′ by
    # central differences of gravity's and the spring's potential
    X, Vel = at(0.0)
    two_t, _, _, applied = rods_and_loads(X, Vel)
    Xm, Xp = (at(s)[0] for s in (-h, h))
    slope = (sum(rods_and_loads(Xp, Vel)[1:3]) - sum(rods_and_loads(Xm, Vel)[1:3])) / (2 * h)
    uddot0 = (8 * float(sim.u[1]) - float(sim.u[2])) / (2 * 1e-3**2)  # u(δ), u(2δ): O(δ²)
    assert uddot0 == pytest.approx((applied - slope) / two_t, rel=1e-5)


def test_spherical_joint_forces_least_norm_with_three_redundant_constraints():
    """The spherical RRPR with mass properties, a spring, a damper, a force and a
    couple, its crank following a prescribed motion. In space its links are
    over-constrained (Kutzbach: 6·3 − 5·4 = −2 for a mobility of 1: three redundant
    constraints), so the reactions are the least-norm solution and `redundancy` is
    3; the motor torque is determinate and equals Lagrange's reduced equation of the
    unloaded linkage plus the loads' static share plus the damper's `c d′² u̇` (d′
    by central differences); massless and static, every link's reported reactions
    balance the loads on it (their wrenches computed here)."""
    spec = _massive_spherical_rrpr()
    lk = L.Linkage.from_dict(spec)
    bare = L.Linkage.from_dict({k: v for k, v in spec.items() if k != "loads"})
    u, ud, udd = np.linspace(0.0, 0.5, 6), np.full(6, 0.7), np.linspace(-1.0, 1.0, 6)
    jf = L.joint_forces(lk, u, ud, udd)
    assert bool(jnp.all(jf.converged)) and jf.redundancy == 3 and jf.reactions.shape == (6, 8, 6)
    massless = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (0 * lk.masses, 0 * lk.inertias))
    static = L.joint_forces(massless, u, 0.0, 0.0)

    h = 1e-6

    def conf(v):
        return np.asarray(L.sweep(lk, inputs=np.concatenate([[0.0], v]), condition=False).coords[1:])

    Xm, X0, Xp = conf(u - h), conf(u), conf(u + h)
    i = {n: lk.names.index(n) for n in ("J1", "J2", "J4", "J5")}

    def dist(X, a, b):
        return np.linalg.norm(X[:, i[b]] - X[:, i[a]], axis=1)

    d_prime = (dist(Xp, "J5", "J4") - dist(Xm, "J5", "J4")) / (2 * h)
    for k in range(6):
        x = bare.state(jnp.asarray(X0[k]))
        M, dM = L.generalised_inertia(bare, x, u[k])
        _, dV = L.potential(bare, x, u[k])
        expected = (
            float(M * udd[k] + 0.5 * dM * ud[k] ** 2 + dV) + float(static.torque[k]) + 0.05 * d_prime[k] ** 2 * ud[k]
        )
        assert float(jf.torque[k]) == pytest.approx(expected, rel=1e-9)

    # the static reactions balance each link's loads (spring along J2–J4, the force
    # at J5, the couple on L1, the motor's couple about J1's axis on L1)
    r = np.asarray(static.reactions)
    tension = 0.8 * (dist(X0, "J2", "J4") - 0.9)
    e = (X0[:, i["J4"]] - X0[:, i["J2"]]) / dist(X0, "J2", "J4")[:, None]
    loads = {"L1": np.zeros((6, 6)), "L2": np.zeros((6, 6)), "L3": np.zeros((6, 6))}
    loads["L1"] += np.c_[tension[:, None] * e, np.cross(X0[:, i["J2"]], tension[:, None] * e)]
    force = np.array([0.3, -0.2, 0.1])
    loads["L2"] += np.c_[np.tile(force, (6, 1)), np.cross(X0[:, i["J5"]], force)]
    loads["L1"][:, 3:] += np.array([0.02, 0.0, -0.05]) + np.asarray(static.torque)[:, None] * X0[:, i["J1"]]
    for link, w in loads.items():
        total = w + sum(r[:, p] for p, (_, lk_) in enumerate(static.pairs) if lk_ == link)
        assert np.abs(total).max() <= 1e-12 * max(1.0, np.abs(w).max()), link


def _rods(lk):
    """(mass, a, b) of every rod of `rod_mass_properties` (density 1)."""
    C0, out = np.asarray(lk.coords), []
    for li, members in enumerate(lk.links):
        pts = [j for j in members if lk.types[j] == "S"] if li != lk.ground else []
        for a, b in list(zip(pts, pts[1:])) + ([(pts[-1], pts[0])] if len(pts) > 2 else []):
            out.append((np.linalg.norm(C0[b] - C0[a]), a, b))
    return out


def test_spatial_joint_forces_match_the_rods_and_lagrange():
    """The 5-SS of rods with a force and a couple on its platform, its actuator
    following a prescribed motion (each leg's moment along its own axis dropped:
    its idle spin). Checked against what the joint-force solve does not use:

    - massless, every leg is a two-force member (its end forces opposite and along
      its axis), and the actuator's force equals the loads' virtual work (central
      differences of the configurations, the platform's ω from three of its joints);
    - with mass, the actuator's force equals Lagrange's reduced equation
      `M ü + ½ M′ u̇² + V′` plus that static force;
    - the shaking force and moment equal the whole linkage's momentum balance with
      its rods as continua: `F − Σ m (a_c − g)` and `r × F + T − Σ (d/dt ∫ p × ṗ dm
      − c × m g)`, the joints' accelerations by central differences."""
    lk = L.rod_mass_properties(dm.examples.ss5())
    spec = lk.to_dict()
    F, T = np.array([1.0, -2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    spec["loads"] = [
        {"type": "force", "joint": "J11", "link": "L6", "force": F.tolist()},
        {"type": "torque", "link": "L6", "torque": T.tolist()},
    ]
    lk = L.Linkage.from_dict(spec)
    u, ud, udd = np.linspace(0.0, 0.3, 6), np.full(6, 0.7), np.linspace(-1.0, 1.0, 6)
    m = L.sweep(lk, inputs=u, condition=False)  # the program of conf below
    jf = L.joint_forces(lk, m, ud, udd)  # along the motion: its configurations
    massless = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (0 * lk.masses, 0 * lk.inertias))
    static = L.joint_forces(massless, m, 0.0, 0.0)
    assert bool(jnp.all(jf.converged)) and jf.reactions.shape == (6, 20, 6)

    h = 1e-4

    def conf(v):
        return np.asarray(L.sweep(lk, inputs=np.concatenate([[0.0], v]), condition=False).coords[1:])

    Xm, X0, Xp = conf(u - h), conf(u), conf(u + h)
    i = {n: lk.names.index(n) for n in ("J6", "J7", "J8", "J11")}
    for leg in ("L1", "L2", "L3", "L4", "L5"):
        a, b = (lk.names[j] for j in lk.links[lk.link_names.index(leg)])
        fa, fb = (np.asarray(static.reaction(n, leg))[:, :3] for n in (a, b))
        axis = X0[:, lk.names.index(b)] - X0[:, lk.names.index(a)]
        scale = np.abs(fa).max()
        assert scale > 0.1
        assert np.abs(fa + fb).max() <= 1e-12 * scale and np.abs(np.cross(fa, axis)).max() <= 1e-11 * scale

    def frame(P):
        e1 = (P[:, i["J7"]] - P[:, i["J6"]]) / np.linalg.norm(P[:, i["J7"]] - P[:, i["J6"]], axis=1)[:, None]
        e2 = P[:, i["J8"]] - P[:, i["J6"]]
        e2 = e2 - np.sum(e2 * e1, axis=1)[:, None] * e1
        e2 = e2 / np.linalg.norm(e2, axis=1)[:, None]
        return np.stack([e1, e2, np.cross(e1, e2)], axis=-1)

    W = np.einsum("nij,nkj->nik", (frame(Xp) - frame(Xm)) / (2 * h), frame(X0))
    omega = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=1)
    virtual = -((Xp[:, i["J11"]] - Xm[:, i["J11"]]) / (2 * h) @ F + omega @ T)
    np.testing.assert_allclose(np.asarray(static.torque), virtual, rtol=1e-7)

    for k in range(6):
        x = lk.state(jnp.asarray(X0[k]))
        M, dM = L.generalised_inertia(lk, x, u[k])
        _, dV = L.potential(lk, x, u[k])
        lagrange = float(M * udd[k] + 0.5 * dM * ud[k] ** 2 + dV) + float(static.torque[k])
        assert float(jf.torque[k]) == pytest.approx(lagrange, rel=1e-10)

    acc = (Xp - 2 * X0 + Xm) / h**2 * ud[:, None, None] ** 2 + (Xp - Xm) / (2 * h) * udd[:, None, None]
    g = np.asarray(lk.gravity)
    force, moment = np.zeros((6, 3)), np.zeros((6, 3))
    for m, a, b in _rods(lk):
        pa, d, aa, dda = X0[:, a], X0[:, b] - X0[:, a], acc[:, a], acc[:, b] - acc[:, a]
        force += m * (aa + dda / 2 - g)
        moment += m * (np.cross(pa, aa) + (np.cross(pa, dda) + np.cross(d, aa)) / 2 + np.cross(d, dda) / 3)
        moment -= m * np.cross(pa + d / 2, g)
    np.testing.assert_allclose(np.asarray(jf.shaking_force), F - force, rtol=0, atol=1e-6 * np.abs(force).max())
    applied = np.cross(X0[:, i["J11"]], F) + T
    np.testing.assert_allclose(
        np.asarray(jf.shaking_moment), applied - moment, rtol=0, atol=1e-6 * np.abs(moment).max()
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda s: s["links"]["L1"].update(inertia=np.diag([1.0, 2.0, 3.0]).tolist()),
            "links.L1.inertia: a binary S–S",
        ),
        (lambda s: s["links"]["L1"].update(com=[0.0, 0.0, 0.0]), "links.L1.com: a binary S–S link's centre of mass"),
        (
            lambda s: s.update(loads=[{"type": "torque", "link": "L2", "torque": [0.0, 0.0, 1.0]}]),
            "loads\\[0\\].link: L2 is an S–S rod",
        ),
        (
            lambda s: s.update(
                loads=[{"type": "spring", "joints": ["J6", "J7"], "links": ["L6", "L6"], "stiffness": 1.0}]
            ),
            "loads\\[0\\]: a spring between two joints of the same link",
        ),
        (
            lambda s: s.update(loads=[{"type": "force", "joint": "J7", "link": "L6", "force": [1.0, 2.0]}]),
            "loads\\[0\\].force: 3 finite numbers",
        ),
    ],
)
def test_spatial_mass_properties_and_loads_bad_input_names_the_item(change, message):
    spec = L.rod_mass_properties(dm.examples.ss5()).to_dict()
    change(spec)
    with pytest.raises(L.LinkageError, match=message):
        L.Linkage.from_dict(spec)


def test_former_names_warn_and_answer_as_the_new_ones(motions):
    """For one version `linkage.simulate`, `simulate_functional` and a mobility read as a
    dict still answer, each with a DeprecationWarning naming what replaces it."""
    lk, m = motions["fourbar"]
    with pytest.warns(DeprecationWarning, match=r"linkage\.simulate is now linkage\.sweep"):
        old = L.simulate(lk)
    np.testing.assert_array_equal(np.asarray(old.coords), np.asarray(m.coords))
    assert L.simulate_functional.__doc__ and "linkage.sweep_functional" in L.simulate_functional.__doc__
    mob = L.mobility(lk)
    assert isinstance(mob, L.Mobility) and mob.dof == 1 and mob.redundant == 0
    with pytest.warns(DeprecationWarning, match=r"read m\.dof"):
        assert mob["mobility"] == 1
    with pytest.raises(KeyError):
        mob["nonsense"]

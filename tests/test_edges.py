"""True answers at the edges: change points along a motion (located, stopped at or
passed on the branch asked for), each side of a path on its own, the first failure
along the path, and the edges of the other families (workspace axes, a released
five-bar, status names, output paths, fit data, identification windows).

Expected values come from closed forms: the Peaucellier–Lipkin inversor's straight
line and its reach, a parallelogram four-bar's collinear positions, the located
change points of `linkage.singularities`."""

import math
import warnings

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech
from diffmech import RESULTS, examples, linkage, parallel

pytestmark = pytest.mark.xdist_group("linkage")  # the linkage worker: its programs (Jansen, Stephenson-II) compile once


def _peaucellier(side=1.5, crank=1.5, arm=3.0):
    """A Peaucellier–Lipkin inversor: fixed pivots O (origin) and the crank's at
    (crank, 0), so Q's circle passes through O and P (the inverse of Q in the circle of
    radius √(arm² − side²)) runs on the line x = (arm² − side²) / (2 crank)."""
    q = 2 * crank
    p = (arm**2 - side**2) / q
    a = (arm**2 - side**2 + q**2) / (2 * q)
    b = math.sqrt(arm**2 - a**2)
    return diffmech.Linkage.from_dict(
        {
            "name": "peaucellier",
            "geometry": "planar",
            "joints": {
                "O": {"type": "R", "coords": [0.0, 0.0]},
                "C": {"type": "R", "coords": [crank, 0.0]},
                "Q": {"type": "R", "coords": [q, 0.0]},
                "P": {"type": "R", "coords": [p, 0.0]},
                "A": {"type": "R", "coords": [a, b]},
                "B": {"type": "R", "coords": [a, -b]},
            },
            "links": {
                "ground": ["O", "C"],
                "crank": ["C", "Q"],
                "armA": ["O", "A"],
                "armB": ["O", "B"],
                "QA": ["Q", "A"],
                "QB": ["Q", "B"],
                "PA": ["P", "A"],
                "PB": ["P", "B"],
            },
            "ground": "ground",
            "input": {"type": "revolute", "link": "crank", "joint": "C"},
        }
    )


def _fourbar(a, b, c, d, theta):
    """A four-bar as a linkage: crank AB = a at `theta`, coupler BC = b, rocker CD = c,
    ground AD = d, C above the line BD's left side (the closed form's + branch)."""
    B = np.array([a * math.cos(theta), a * math.sin(theta)])
    D = np.array([d, 0.0])
    e = D - B
    L = np.linalg.norm(e)
    x = (b * b - c * c + L * L) / (2 * L)
    C = B + x * e / L + math.sqrt(b * b - x * x) * np.array([-e[1], e[0]]) / L
    return diffmech.Linkage.from_dict(
        {
            "name": "fourbar_lk",
            "geometry": "planar",
            "joints": {
                "A": {"type": "R", "coords": [0.0, 0.0]},
                "B": {"type": "R", "coords": B.tolist()},
                "C": {"type": "R", "coords": C.tolist()},
                "D": {"type": "R", "coords": D.tolist()},
            },
            "links": {"ground": ["A", "D"], "crank": ["A", "B"], "coupler": ["B", "C"], "rocker": ["C", "D"]},
            "ground": "ground",
            "input": {"type": "revolute", "link": "crank", "joint": "A"},
        }
    )


def _names(status):
    return list(np.atleast_1d(RESULTS.name(status)))


# --------------------------------------------------------------------------- change points


def test_inversor_stops_at_its_change_point_and_passes_it_on_the_branch_asked_for():
    lk = _peaucellier()
    u = np.linspace(0.0, -1.6, 81)
    star = -math.pi / 3  # the rhombus is flat: Q on the circle of inversion, P = Q
    stop = linkage.sweep(lk, inputs=u)
    ok = np.asarray(stop.converged)
    np.testing.assert_array_equal(ok, u >= star)
    first = int(np.argmin(ok))
    assert _names(stop.status)[first] == "change_point" and str(stop.result) == "change_point"
    assert set(_names(stop.status)[first + 1 :]) == {"not_reached"}
    P = np.asarray(stop["P"])[ok]
    np.testing.assert_allclose(P[:, 0], 2.25, atol=1e-12)  # on the line up to the change point
    with pytest.raises(diffmech.BranchSwitchError, match="change point"):
        linkage.sweep(lk, inputs=u, throw=True)

    on = linkage.sweep(lk, inputs=u, at_change="continue")  # the analytic branch: the straight line
    assert bool(np.all(on.converged))
    P, Q = np.asarray(on["P"]), np.asarray(on["Q"])
    np.testing.assert_allclose(P[:, 0], 2.25, atol=1e-12)
    # P is Q's inverse: |OP| |OQ| = arm² − side², on the ray through Q
    np.testing.assert_allclose(np.linalg.norm(P, axis=1) * np.linalg.norm(Q, axis=1), 6.75, rtol=1e-12)
    assert float(np.max(np.abs(np.asarray(on.residual)))) <= 1e-10

    turn = linkage.sweep(lk, inputs=u, at_change="turn")  # the folded branch: P rides on Q
    assert bool(np.all(turn.converged))
    beyond = u < star - 1e-9
    P, Q = np.asarray(turn["P"]), np.asarray(turn["Q"])
    np.testing.assert_allclose(P[beyond], Q[beyond], atol=1e-9)
    np.testing.assert_allclose(P[~beyond][:, 0], 2.25, atol=1e-12)


def test_each_side_of_the_path_is_continued_on_its_own_and_the_cause_named():
    # rhombus side 1, crank 1.25: |OQ| = 2.5 cos(u/2) must stay ≥ arm − side = 2
    lk = _peaucellier(side=1.0, crank=1.25)
    u = np.round(np.arange(-14, 15) * 0.1, 12)
    m = linkage.sweep(lk, inputs=u)
    reach = 2.5 * np.cos(u / 2) >= 2.0
    np.testing.assert_array_equal(np.asarray(m.converged), reach)
    assert str(m.result) == "motion_limit"  # the first failure along the path, not a row `not_reached`
    names = _names(m.status)
    assert names[list(u).index(-1.3)] == "motion_limit" and names[list(u).index(1.3)] == "motion_limit"
    P = np.asarray(m["P"])[reach]
    np.testing.assert_allclose(P[:, 0], 8.0 / 2.5, atol=1e-12)  # (arm² − side²) / (2 crank)
    # the same rows as each side alone, from the initial configuration
    for side in (u[u <= 0][::-1], u[u >= 0]):
        alone = linkage.sweep(lk, inputs=side)
        rows = [list(u).index(v) for v in side]
        np.testing.assert_array_equal(np.asarray(alone.converged), np.asarray(m.converged)[rows])


def test_parallelogram_change_points_stop_continue_and_turn():
    lk = _fourbar(1.0, 2.0, 1.0, 2.0, math.pi / 3)
    u = np.linspace(0.0, 2 * math.pi, 181)
    crank = math.pi / 3 + u  # the change points: every link on the ground line, crank at π and 2π
    stop = linkage.sweep(lk, inputs=u)
    ok = np.asarray(stop.converged)
    np.testing.assert_array_equal(ok, crank <= math.pi + 1e-9)
    assert str(stop.result) == "change_point"
    sing = linkage.singularities(lk, stop)
    assert [k for k, _, _ in sing.events()] == ["change"]
    assert abs(sing.events()[0][2] - 2 * math.pi / 3) <= 1e-12

    def coupler_slope(m):
        B, C = np.asarray(m["B"]), np.asarray(m["C"])
        return np.abs(C[:, 1] - B[:, 1])

    on = linkage.sweep(lk, inputs=u, at_change="continue")  # stays a parallelogram: BC ∥ AD
    assert bool(np.all(on.converged))
    assert float(np.max(coupler_slope(on))) <= 1e-7  # √ε at the change points themselves
    turn = linkage.sweep(lk, inputs=u, at_change="turn")  # anti-parallelogram, then back at 2π
    assert bool(np.all(turn.converged))
    anti = (crank > math.pi + 0.05) & (crank < 2 * math.pi - 0.05)
    assert float(np.min(coupler_slope(turn)[anti])) > 0.05
    assert float(np.max(coupler_slope(turn)[crank > 2 * math.pi + 1e-9])) <= 1e-7
    # anti-parallelogram: the crossed diagonals, |AC| = |BD| ... and |BC| = 2 throughout
    B, C = np.asarray(turn["B"]), np.asarray(turn["C"])
    np.testing.assert_allclose(np.linalg.norm(C - B, axis=1), 2.0, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_change_point_linkages_stop_where_singularities_locates(seed):
    """Random parallelograms and kites (a = b, c = d: a change point when the crank
    lines up with the ground) stop at the first change point that
    `linkage.singularities` locates on the whole motion passed on the analytic branch."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 1.5)
    d = a + rng.uniform(0.3, 1.5)
    dims = (a, d, a, d) if seed != 1 else (a, a, d, d)  # a parallelogram; a kite (deltoid)
    start = rng.uniform(0.3, 2.5)
    lk = _fourbar(*dims, start)
    u = np.linspace(0.0, 2 * math.pi, 121)
    stop = linkage.sweep(lk, inputs=u)
    through = linkage.sweep(lk, inputs=u, at_change="continue")
    events = [e for e in linkage.singularities(lk, through).events("change")]
    assert events, "a change point lies on the turn"
    star = events[0][2]
    ok = np.asarray(stop.converged)
    np.testing.assert_array_equal(ok, u <= star + 1e-9)
    assert str(stop.result) == "change_point"
    # the crank lies on the ground line there (both kinds of linkage)
    assert min(abs(math.sin(start + star)), 1.0) <= 1e-9


@pytest.mark.parametrize("seed", [3, 4])
def test_the_programs_screen_flags_every_motion_the_hosts_search_would_look_at(seed):
    """The eager program's flag (`_change.suspect`, in jnp on the path's rows) is a
    superset of the host's candidates (`_change.screen` per side, the first failure
    a switch or a limit approached linearly): checked on two-sided paths of random
    parallelograms and kites, and on the bundled linkages' motions, where it is off."""
    from diffmech._result import code
    from diffmech.linkage import _change, _simulate

    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 1.5)
    d = a + rng.uniform(0.3, 1.5)
    lk = _fourbar(*((a, d, a, d) if seed % 2 else (a, a, d, d)), rng.uniform(0.3, 2.5))
    u = np.sort(rng.uniform(-2 * math.pi, 2 * math.pi, 90))
    path, _, n_neg = _simulate.path_rows(np.asarray(u))
    flagged = 0
    for motion in (linkage.sweep_functional(lk, path), linkage.sweep_functional(examples.fourbar(), path)):
        flag = bool(_change.suspect_motion(motion))
        ok = np.asarray(motion.converged)
        r = 1.0 / np.asarray(motion.condition)
        codes = np.asarray(code(motion.status))
        host = False
        for side in (np.arange(n_neg + 1), np.r_[0, n_neg + 1 : len(path)]):
            t = np.abs(np.asarray(path)[side])
            host |= bool(_change.screen(t, r[side], ok[side]))
            bad = np.flatnonzero(~ok[side])
            if bad.size and bad[0] > 0:
                f = bad[0]
                host |= codes[side][f] == code(RESULTS.branch_switch)
                host |= codes[side][f] == code(RESULTS.motion_limit) and _change.linear_approach(t[:f], r[side][:f])
        assert not host or flag
        flagged += flag
    assert flagged == 1  # the change-point linkage, not the crank-rocker


def test_ordinary_motions_are_not_cut():
    """No change point on ordinary motions, near-singular ones included: a crank-rocker
    near its Grashof boundary (a slim margin, far from a change point), the Jansen leg
    and the Stephenson-II; every input still converges."""
    near = _fourbar(1.0, 3.0, 2.5, 3.45, 0.4)  # s + ℓ = 4.45 < p + q = 5.5 ... crank turns fully
    m = linkage.sweep(near, inputs=np.linspace(0.0, 2 * math.pi, 181))
    assert bool(np.all(m.converged)) and str(m.result) == "successful"
    for lk in (examples.theo_jansen(), examples.stephenson2()):
        m = linkage.sweep(lk)
        assert bool(np.all(m.converged)) and str(m.result) == "successful"


# --------------------------------------------------------------------------- the other edges


def test_first_failure_is_along_the_path_not_the_first_row():
    from diffmech._result import as_results, code, first_failure

    ok = jnp.array([[False, True, False], [True, True, True]])
    codes = jnp.array([[code(RESULTS.not_reached), 0, code(RESULTS.motion_limit)], [0, 0, 0]])
    r = first_failure(ok, as_results(codes))
    assert _names(r) == ["motion_limit", "successful"]


def test_status_names():
    assert diffmech.RESULTS is diffmech.closure.RESULTS
    assert str(RESULTS.successful) == "successful" and str(RESULTS.change_point) == "change_point"
    assert RESULTS.name(RESULTS.motion_limit) == "motion_limit"
    assert "assembled" in repr(RESULTS.motion_limit)  # the message stays in repr


def test_workspace_area_does_not_depend_on_the_axes_direction():
    x = np.linspace(-0.6, 0.6, 31)
    y = np.linspace(-0.6, 0.6, 31)
    a = parallel.workspace(examples.three_rpr(), x, y)
    for b in (
        parallel.workspace(examples.three_rpr(), x[::-1], y),
        parallel.workspace(examples.three_rpr(), x, y[::-1]),
    ):
        assert a.size > 0 and b.size == pytest.approx(a.size, rel=1e-12)
    with pytest.raises(ValueError, match="evenly spaced"):
        parallel.workspace(examples.three_rpr(), np.r_[x[:5], x[6:]], y)


def test_a_released_five_bar_stops_at_its_singular_configuration():
    """The free five-bar falls until its distal links come into line (C's two
    circles tangent): the integration stops there as `singular_configuration`, at
    once, not after max_steps."""
    lk = linkage.rod_mass_properties(examples.five_bar())
    s = linkage.simulate_dynamics(lk, 0.0, 0.0, 0.6, saveat=np.linspace(0.0, 0.6, 121))
    assert str(s.result) == "singular_configuration"
    ok = np.asarray(s.converged)
    assert 0 < ok.sum() < ok.size and bool(np.all(ok[: ok.sum()]))
    X = np.asarray(s.coords)[ok][:, [lk.names.index(n) for n in "BCD"], :2]
    e, f = X[:, 1] - X[:, 0], X[:, 2] - X[:, 1]
    sine = np.abs(e[:, 0] * f[:, 1] - e[:, 1] * f[:, 0]) / (np.linalg.norm(e, axis=1) * np.linalg.norm(f, axis=1))
    # B–C and C–D come into line: the sine of their angle falls to zero within a save of the stop
    assert sine[0] > 0.9 and bool(np.all(np.diff(sine[-5:]) < 0))
    assert sine[-1] - (sine[-2] - sine[-1]) < 0
    # a (1,) input is one value per input, as (k,) is for k inputs
    one = linkage.rod_mass_properties(examples.fourbar())
    a = linkage.simulate_dynamics(one, np.zeros(1), np.ones(1), 0.05, saveat=np.linspace(0, 0.05, 3))
    b = linkage.simulate_dynamics(one, 0.0, 1.0, 0.05, saveat=np.linspace(0, 0.05, 3))
    np.testing.assert_array_equal(np.asarray(a.u), np.asarray(b.u))


def test_outputs_into_a_missing_folder_or_a_file_are_named(tmp_path, capsys):
    lk = examples.fourbar()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        linkage.to_dxf(lk, tmp_path / "missing" / "a.dxf")
    plain = tmp_path / "plain"
    plain.write_text("")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        lk.save(plain / "a.json")
    from diffmech._cli import main

    assert main(["atlas", "build", "--size", "8", "--out", str(plain / "atlas.npz")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_fit_refuses_empty_or_non_finite_data():
    from diffmech import fit

    def loss(m, xs):
        return jnp.mean((m * xs - 1.0) ** 2)

    with pytest.raises(ValueError, match=r"`args\[0\]` is empty"):
        fit.fit(loss, jnp.asarray(1.0), jnp.zeros((0,)), steps=2)
    with pytest.raises(ValueError, match="holds a NaN"):
        fit.fit(loss, jnp.asarray(1.0), jnp.array([1.0, jnp.nan]), steps=2)


def test_few_samples_narrow_the_default_window():
    from diffmech import fourbar, identify

    fb = fourbar.FourBar(jnp.array([0.12, 0.25, 0.26, 0.30]))
    t = np.linspace(0.0, 0.1, 9)
    with pytest.raises(ValueError, match="at least 5"):
        identify.fourbar_dynamics(t[:4], np.zeros(4), fb)
    with pytest.raises(ValueError, match="at most window = 3"):
        identify.fourbar_dynamics(t, np.zeros(9), fb, window=5)


def test_documentation_edges():
    assert "4 for the Bennett 4R" in " ".join(linkage.Mobility.__doc__.split())
    assert linkage.mobility(examples.bennett()).redundant == 4
    page = (__import__("pathlib").Path(__file__).parent.parent / "docs" / "linkages.md").read_text()
    assert "One of them carries it, rigidly: the ground" in page and "need not lie on the line" in page


def test_bounds_that_cannot_fit_the_targets_are_named():
    from diffmech import synthesis

    T = np.array([[0.0, 0.0], [1.0, 0.2], [1.5, 1.0], [0.5, 1.5]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            synthesis.path_generation(T, "prescribed", bounds={"lengths": (0.001, 0.002)}, starts=4, steps=30)
        except synthesis.InfeasibleError:
            pass
    pinned = [w for w in caught if "pinned at its bounds" in str(w.message)]
    assert pinned and pinned[0].filename == __file__  # the warning names the caller's line, not the library's


def test_joint_forces_along_a_motion_are_at_its_own_configurations_past_a_change_point():
    # the parallelogram turned at its change points (onto the anti-parallelogram and
    # back): the joint forces of that motion are at its own rows (a sweep from its
    # inputs fails past the second, crank at 2π). Massless, a force F at C held by the motor: τ = −F · dC/du,
    # dC/du by a five-point stencil on the motion's own rows (no implicit function theorem)
    spec = _fourbar(1.0, 2.0, 1.0, 2.0, math.pi / 3).to_dict()
    for name in ("crank", "coupler", "rocker"):
        spec["links"][name] = {"joints": spec["links"][name], "mass": 1.0, "inertia": 0.1, "com": [0.0, 0.0]}
    spec["gravity"], F = [0.0, 0.0], np.array([3.0, -5.0])
    spec["loads"] = [{"type": "force", "joint": "C", "link": "rocker", "force": F.tolist()}]
    lk = diffmech.Linkage.from_dict(spec)
    massless = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (0 * lk.masses, 0 * lk.inertias))
    u = np.linspace(0.0, 2 * math.pi, 181)  # the parallelogram test's path and program
    turn = linkage.sweep(lk, inputs=u, at_change="turn")
    assert bool(np.all(turn.converged))
    jf = linkage.joint_forces(massless, turn, 0.0, 0.0, throw=False)
    crank = math.pi / 3 + u
    C, h = np.asarray(turn["C"]), u[1] - u[0]
    i = np.arange(4, len(u) - 4)

    def stencil(k):  # five points k rows apart: error O((k h)⁴)
        return (8 * (C[i + k] - C[i - k]) - (C[i + 2 * k] - C[i - 2 * k])) / (12 * k * h)

    slope = stencil(1) + (stencil(1) - stencil(2)) / 15  # Richardson: O(h⁶)
    away = (np.abs(crank[i] - math.pi) > 0.2) & (np.abs(crank[i] - 2 * math.pi) > 0.2)  # smooth rows
    assert bool(np.all(np.asarray(jf.converged)[i[away]]))
    np.testing.assert_allclose(np.asarray(jf.torque)[i[away]], -(slope @ F)[away], rtol=1e-5, atol=1e-6)

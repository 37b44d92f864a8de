"""Singular points along a motion (`linkage.singularities`), located against closed
forms: the four-bar's limit positions are where crank and coupler line up (the
coupler joint at distance coupler ± crank from the crank pivot, law of cosines), a
parallelogram's change points where all its links are in line."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from diffmech import examples, linkage

pytestmark = pytest.mark.xdist_group("linkage")

A, D = np.array([0.0, 0.0]), np.array([0.3, 0.0])
CRANK, COUPLER, ROCKER = 0.12, 0.25, 0.26


def _limit_positions():
    """The coupler joint C at the rocker's two extremes (crank and coupler extended,
    then folded) and the crank's angle there, C above the ground line."""
    out = []
    for rho, extended in ((COUPLER + CRANK, True), (COUPLER - CRANK, False)):
        alpha = np.arccos((rho**2 + 0.3**2 - ROCKER**2) / (2 * rho * 0.3))
        C = rho * np.array([np.cos(alpha), np.sin(alpha)])
        out.append((C, alpha if extended else alpha + np.pi))
    return out


def _spec(**changes):
    spec = json.loads(examples.path("fourbar").read_text())
    spec.update(changes)
    return spec


def test_crank_rocker_toggles_are_the_limit_positions():
    lk = examples.fourbar()
    s = linkage.singularities(lk, linkage.sweep(lk))
    assert s.outputs == ("rocker",)
    assert s.kinds == ("output", "output") and s.links == ("rocker", "rocker")
    expected = sorted(theta % (2 * np.pi) for _, theta in _limit_positions())
    np.testing.assert_allclose(np.asarray(s.at), expected, rtol=0, atol=1e-12)
    assert np.all(np.asarray(s.residual) <= 1e-12) and np.all(np.asarray(s.step) <= 1e-12)
    C = np.asarray(s.coords)[:, lk.names.index("C"), :2]  # the rocker at rest there: C on the crank's line
    B = np.asarray(s.coords)[:, lk.names.index("B"), :2]
    cross = (B - A)[:, 0] * (C - A)[:, 1] - (B - A)[:, 1] * (C - A)[:, 0]
    np.testing.assert_allclose(cross, 0.0, atol=1e-13)
    assert np.nanmin(np.asarray(s.margin)) > 0.05  # a crank-rocker driven by its crank: no dead centre


@pytest.mark.parametrize("end", [1.5, -1.5])
def test_rocker_driven_four_bar_stops_at_its_dead_centres(end):
    spec = _spec(input={"type": "revolute", "link": "rocker", "joint": "D"})
    lk = linkage.Linkage.from_dict(spec)
    C0 = np.asarray(spec["joints"]["C"]["coords"])
    phi0 = np.arctan2(C0[1], C0[0] - D[0])
    dead = sorted(np.arctan2(C[1], C[0] - D[0]) - phi0 for C, _ in _limit_positions())
    motion = linkage.sweep(lk, inputs=jnp.linspace(0.0, end, 61), throw=False)
    assert not bool(motion.converged[-1])  # the sweep passes the rocker's reach: it stops
    s = linkage.singularities(lk, motion)
    assert s.events("input") == [("input", "", pytest.approx(dead[1] if end > 0 else dead[0], abs=1e-12))]
    assert s.events("change") == []


def test_parallelogram_change_point_where_all_links_line_up():
    joints = _spec()["joints"]
    joints["B"]["coords"], joints["C"]["coords"], joints["P"]["coords"] = [0.0, 0.1], [0.3, 0.1], [0.15, 0.1]
    links = {k: (v["joints"] if isinstance(v, dict) else v) for k, v in _spec()["links"].items()}
    lk = linkage.Linkage.from_dict(_spec(joints=joints, links=links))
    s = linkage.singularities(lk, linkage.sweep(lk, inputs=jnp.linspace(0.0, 3.0, 91)))
    # crank 0.1 at 90° to start: its links are in line at crank angle 180°, input π/2
    assert s.events() == [("change", "", pytest.approx(np.pi / 2, abs=1e-12))]


def test_bad_outputs_are_named():
    lk = examples.fourbar()
    with pytest.raises(ValueError, match="no link 'rockr'"):
        linkage.singularities(lk, jnp.linspace(0.0, 1.0, 5), outputs="rockr")
    with pytest.raises(ValueError, match="'coupler' must be a moving link hinged to the ground"):
        linkage.singularities(lk, jnp.linspace(0.0, 1.0, 5), outputs=["coupler"])
    with pytest.raises(ValueError, match="`near`"):
        linkage.singularities(lk, jnp.linspace(0.0, 1.0, 5), near=2.0)

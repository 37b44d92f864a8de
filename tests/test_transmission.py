"""Transmission angles (`linkage.transmission`) against the law of cosines: the
planar four-bar's angle between coupler and rocker, and the spherical Watt-I's angle
between two great-circle arcs by the spherical law of cosines."""

import numpy as np
import pytest

import diffmech as dm
from diffmech import linkage as L

pytestmark = pytest.mark.xdist_group("linkage")


def test_fourbar_transmission_angle_is_the_law_of_cosines():
    lk = dm.examples.fourbar()
    m = L.sweep(lk, condition=False)
    t = L.transmission(lk, m)
    assert t.groups == ("1. RRR at C",)
    C0 = np.asarray(lk.coords)
    A, B, Cj, D = (C0[lk.joint(n), :2] for n in "ABCD")
    l1, l2, l3, l4 = (np.linalg.norm(p - q) for p, q in ((B, A), (Cj, B), (Cj, D), (D, A)))
    theta = np.arctan2(*(B - A)[::-1]) - np.arctan2(*(D - A)[::-1]) + np.asarray(m.inputs)  # crank from AD
    bd2 = l1**2 + l4**2 - 2 * l1 * l4 * np.cos(theta)
    mu = np.arccos((l2**2 + l3**2 - bd2) / (2 * l2 * l3))
    assert np.max(np.abs(np.asarray(t.angle[:, 0]) - mu)) <= 1e-12
    # the pressure angle at the rocker's pivot C: the coupler's force (along BC) against C's velocity (normal to DC)
    X = np.asarray(m.coords)
    f = X[:, lk.joint("C"), :2] - X[:, lk.joint("B"), :2]
    r = X[:, lk.joint("C"), :2] - D
    vel = np.stack([-r[:, 1], r[:, 0]], axis=1)
    alpha = np.arctan2(np.abs(f[:, 0] * vel[:, 1] - f[:, 1] * vel[:, 0]), np.abs(np.sum(f * vel, axis=1)))
    assert np.max(np.abs(np.asarray(t.pressure()[:, 0]) - alpha)) <= 1e-12
    worst, at = t.minimum()
    k = np.argmin(np.minimum(mu, np.pi - mu))
    assert abs(worst[0] - min(mu[k], np.pi - mu[k])) <= 1e-12 and at[0] == m.inputs[k]


def test_spherical_and_jansen_dyads_and_bad_input():
    lk = dm.examples.spherical_watt1()
    m = L.sweep(lk, condition=False)
    t = L.transmission(lk, m)
    assert t.groups == ("1. RRR at J4", "2. RRR at J7")
    X = np.asarray(m.coords)
    ok = np.asarray(m.converged)
    for g, (a, c, b) in enumerate((("J2", "J4", "J6"), ("J3", "J7", "J5"))):
        pa, pc, pb = (X[:, lk.joint(n)] for n in (a, c, b))
        arc = lambda p, q: np.arccos(np.clip(np.sum(p * q, axis=1), -1, 1))  # noqa: E731
        ab, ac, bc = arc(pa, pb), arc(pa, pc), arc(pb, pc)
        mu = np.arccos((np.cos(ab) - np.cos(ac) * np.cos(bc)) / (np.sin(ac) * np.sin(bc)))
        assert np.max(np.abs(np.asarray(t.angle[:, g]) - mu)[ok]) <= 1e-9
    assert np.all(np.isnan(np.asarray(t.angle))[~ok])
    jansen = dm.examples.theo_jansen()
    tj = L.transmission(jansen, np.linspace(0, 2 * np.pi, 12, endpoint=False))  # inputs: simulated first
    assert tj.groups == ("2. RRR at J4", "3. RRR at J7")  # the RPR dyad (a slider's line) has no such angle
    assert np.all(np.isfinite(np.asarray(tj.angle)))
    with pytest.raises(ValueError, match="spatial"):
        L.transmission(dm.examples.rssr(), np.zeros(3))
    with pytest.raises(ValueError, match="not a motion of"):
        L.transmission(jansen, m)  # the Watt-I's
    with pytest.raises(ValueError, match="not a motion of"):
        L.transmission(jansen, L.sweep(dm.examples.fourbar(), steps=4))

"""Linkages with several inputs: the planar five-bar driven by both cranks against the
circle–circle intersection written here without diffmech, its rates against central
differences of that closed form, and the errors of inputs of the wrong width."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import linkage as L

SPEC = json.loads(dm.examples.path("five_bar").read_text())


def five_bar_closed_form(U):
    """C for crank turns `U` (N, 2): B and D turned about A and E, C the intersection
    of the circles about B and D (radii |BC|, |DC|) on the side C starts on."""
    P = {k: np.array(v["coords"], float) for k, v in SPEC["joints"].items()}
    r1, r2 = np.linalg.norm(P["C"] - P["B"]), np.linalg.norm(P["C"] - P["D"])

    def turn(p, centre, t):
        c, s = np.cos(t), np.sin(t)
        d = p - centre
        return centre + np.stack([c * d[0] - s * d[1], s * d[0] + c * d[1]], axis=-1)

    def side(b, d, c):
        e, f = d - b, c - b
        return np.sign(e[..., 0] * f[..., 1] - e[..., 1] * f[..., 0])

    B, D = turn(P["B"], P["A"], U[:, 0]), turn(P["D"], P["E"], U[:, 1])
    e = D - B
    dist = np.linalg.norm(e, axis=1)
    a = (r1**2 - r2**2 + dist**2) / (2 * dist)
    h = np.sqrt(r1**2 - a**2)
    n = np.stack([-e[:, 1], e[:, 0]], axis=1) / dist[:, None]
    base = B + (a / dist)[:, None] * e
    return base + (side(P["B"], P["D"], P["C"]) * h)[:, None] * n


def test_five_bar_driven_by_both_cranks_follows_the_circle_intersection():
    lk = dm.examples.five_bar()
    assert lk.n_inputs == 2 and L.mobility(lk)["mobility"] == 2
    t = np.linspace(0.0, 2 * np.pi, 61)
    U = np.c_[0.4 * np.sin(t), -0.3 * np.sin(2 * t)]  # both cranks, from the file's configuration
    m = L.simulate(lk, inputs=U)
    assert m.inputs.shape == (61, 2) and bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    C = np.asarray(m.coords)[:, lk.joint("C"), :2]
    assert np.max(np.abs(C - five_bar_closed_form(U))) <= 1e-10
    # the velocity of C for each crank's rate alone, against central differences
    i, h = 17, 1e-6
    x = lk.state(m.coords[i])
    for k in range(2):
        udot = np.eye(2)[k]
        vel, _ = L.rates(lk, x, m.inputs[i], jnp.asarray(udot))
        fd = (five_bar_closed_form(U[i : i + 1] + h * udot) - five_bar_closed_form(U[i : i + 1] - h * udot)) / (2 * h)
        assert np.max(np.abs(np.asarray(vel)[lk.joint("C"), :2] - fd[0])) <= 1e-8, k
    # one configuration by Newton from the file's, the inputs as a vector
    sol = L.solve(lk, U[1])
    assert np.max(np.abs(np.asarray(lk.full(sol.value, jnp.asarray(U[1])))[lk.joint("C"), :2] - C[1])) <= 1e-12
    with pytest.raises(ValueError, match=r"`u` must be 2 finite input values, one per input"):
        L.solve(lk, 0.1)
    # the description keeps its inputs through a round trip
    back = L.Linkage.from_dict(lk.to_dict())
    assert back.topology.inputs == lk.topology.inputs


def test_several_inputs_are_named_when_missing_or_of_the_wrong_width():
    lk = dm.examples.five_bar()
    with pytest.raises(ValueError, match=r"has 2 inputs: give `inputs`, a path of shape \(N, 2\)"):
        L.simulate(lk)
    with pytest.raises(ValueError, match=r"inputs must be a finite array of shape \(N, 2\).*got shape \(5, 3\)"):
        L.simulate(lk, inputs=np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"has 2 input\(s\): `inputs` must be of shape \(N, 2\); got \(4,\)"):
        jax.jit(lambda v: L.simulate_functional(lk, v))(jnp.zeros(4))  # inside a program too
    with pytest.raises(ValueError, match=r"`udot` must be a scalar or one value per input, shape \(2,\)"):
        L.rates(lk, lk.x0(), jnp.zeros(2), jnp.ones(3))
    with pytest.raises(ValueError, match=r"has 2 inputs; the dynamics and joint forces take one-input"):
        L.simulate_dynamics(lk, 0.0, 1.0)
    spec = json.loads(json.dumps(SPEC))
    spec["inputs"][1] = {"type": "revolute", "link": "crank1", "joint": "A"}
    with pytest.raises(L.LinkageError, match=r"inputs\[1\]: drives the same link crank1 as inputs\[0\]"):
        L.Linkage.from_dict(spec)
    spec = json.loads(json.dumps(SPEC))
    spec["input"] = spec["inputs"][0]
    with pytest.raises(L.LinkageError, match=r"give 'input' \(one\) or 'inputs' \(a list\), not both"):
        L.Linkage.from_dict(spec)


def delta_closed_form(U):
    """The delta robot's platform centre for arm turns `U` (N, 3): each arm's end E_i
    turned about its axis; the platform translates, so its centre p lies on the sphere
    of radius L (the rods) about E_i − r e_i for every arm: three spheres, intersected
    by trilateration (the solution below the base)."""
    spec = json.loads(dm.examples.path("delta").read_text())
    J = {k: np.array(v["coords"], float) for k, v in spec["joints"].items()}
    axes = {k: np.array(v["axis"], float) for k, v in spec["joints"].items() if "axis" in v}
    L_rod = np.linalg.norm(J["P1a"] - J["U1a"])
    out = []
    for u in U:
        centres = []
        for n in (1, 2, 3):
            A, t = J[f"A{n}"], axes[f"A{n}"] / np.linalg.norm(axes[f"A{n}"])
            K = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
            Rm = np.eye(3) + np.sin(u[n - 1]) * K + (1 - np.cos(u[n - 1])) * K @ K
            E0 = (J[f"U{n}a"] + J[f"U{n}b"]) / 2
            P0 = (J[f"P{n}a"] + J[f"P{n}b"]) / 2
            centres.append(A + Rm @ (E0 - A) - (P0 - J["T"]))  # E_i(u) less the platform offset
        c1, c2, c3 = centres
        ex = (c2 - c1) / np.linalg.norm(c2 - c1)
        i = ex @ (c3 - c1)
        ey = (c3 - c1 - i * ex) / np.linalg.norm(c3 - c1 - i * ex)
        ez = np.cross(ex, ey)
        d, j = np.linalg.norm(c2 - c1), ey @ (c3 - c1)
        x = d / 2  # equal radii
        y = (i**2 + j**2 - 2 * i * x) / (2 * j)
        z = np.sqrt(L_rod**2 - x**2 - y**2)
        sols = [c1 + x * ex + y * ey + s * z * ez for s in (1, -1)]
        out.append(min(sols, key=lambda q: q[2]))
    return np.array(out)


def test_delta_robot_forward_kinematics_meets_the_three_spheres():
    lk = dm.examples.delta()
    assert lk.n_inputs == 3 and L.mobility(lk)["mobility"] == 3
    t = np.linspace(0.0, 2 * np.pi, 41)
    U = np.c_[0.3 * np.sin(t), 0.3 * np.sin(t + 2.0), 0.3 * np.sin(2 * t)]  # three arms at once
    m = L.simulate(lk, inputs=U)
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    C = np.asarray(m.coords)
    assert np.max(np.abs(C[:, lk.joint("T")] - delta_closed_form(U))) <= 1e-10
    # the platform translates: its edges keep their initial directions
    edge = C[:, lk.joint("P1a")] - C[:, lk.joint("P2b")]
    assert np.max(np.abs(edge - edge[0])) <= 1e-10


def test_link_pose_carries_every_point_of_the_link_and_the_delta_platform_only_translates():
    # the pose from the link's frame maps every initial point of the link (joints and
    # tracers) onto the motion: the knuckle's (a wheel carrier) along bump and steering
    sus = dm.examples.double_wishbone()
    U = np.c_[np.linspace(0.0, 0.25, 21), np.linspace(0.0, 0.1, 21)]  # the suspension test's path
    m = L.simulate(sus, inputs=U)
    R, p = L.link_pose(sus, m, "knuckle")
    X0, X = np.asarray(sus.initial()), np.asarray(m.coords)
    for name in ("LB", "UB", "TO", "W", "WS"):
        j = sus.joint(name)
        assert np.max(np.abs(np.einsum("nij,j->ni", R, X0[j]) + p - X[:, j])) <= 1e-12, name
    assert np.max(np.abs(np.einsum("nji,njk->nik", R, R) - np.eye(3))) <= 1e-12
    # the delta's parallelograms keep the platform's orientation: R = I along any path
    delta = dm.examples.delta()
    t = np.linspace(0.0, 2 * np.pi, 41)
    md = L.simulate(delta, inputs=np.c_[0.3 * np.sin(t), 0.3 * np.sin(t + 2.0), 0.3 * np.sin(2 * t)])
    Rd, pd = L.link_pose(delta, md, "platform")
    assert np.max(np.abs(np.asarray(Rd) - np.eye(3))) <= 1e-10
    T0 = np.asarray(delta.initial())[delta.joint("T")]  # the platform's centre: p is its displacement
    assert np.max(np.abs(np.asarray(pd) - (np.asarray(md.coords)[:, delta.joint("T")] - T0))) <= 1e-11
    with pytest.raises(ValueError, match=r"link 'rod1a' has no frame"):
        L.link_pose(delta, md, "rod1a")

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
    assert lk.n_inputs == 2 and L.mobility(lk).dof == 2
    t = np.linspace(0.0, 2 * np.pi, 61)
    U = np.c_[0.4 * np.sin(t), -0.3 * np.sin(2 * t)]  # both cranks, from the file's configuration
    m = L.sweep(lk, inputs=U)
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
        L.sweep(lk)
    with pytest.raises(ValueError, match=r"inputs must be a finite array of shape \(N, 2\).*got shape \(5, 3\)"):
        L.sweep(lk, inputs=np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"has 2 input\(s\): `inputs` must be of shape \(N, 2\); got \(4,\)"):
        jax.jit(lambda v: L.sweep_functional(lk, v))(jnp.zeros(4))  # inside a program too
    with pytest.raises(ValueError, match=r"`udot` must be a scalar or one value per input, shape \(2,\)"):
        L.rates(lk, lk.x0(), jnp.zeros(2), jnp.ones(3))
    with pytest.raises(
        ValueError, match=r"`u0` must be a scalar or one value per input \(2,\) for 'five_bar'; got shape \(3,\)"
    ):
        L.simulate_dynamics(lk, np.zeros(3), np.zeros(2), 1.0)
    with pytest.raises(
        ValueError, match=r"`u` must be a finite non-empty \(N, 2\) array of inputs; got shape \(4, 3\)"
    ):
        L.joint_forces(lk, np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"`udot` must be a finite scalar, \(2,\) or an array of `u`'s shape"):
        L.joint_forces(lk, np.zeros((4, 2)), np.ones(3))
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
    assert lk.n_inputs == 3 and L.mobility(lk).dof == 3
    t = np.linspace(0.0, 2 * np.pi, 41)
    U = np.c_[0.3 * np.sin(t), 0.3 * np.sin(t + 2.0), 0.3 * np.sin(2 * t)]  # three arms at once
    m = L.sweep(lk, inputs=U)
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
    U = np.c_[np.linspace(0.0, 0.25, 21), np.linspace(0.0, 0.02, 21)]  # the suspension test's path
    m = L.sweep(sus, inputs=U)
    R, p = L.link_pose(sus, m, "knuckle")
    X0, X = np.asarray(sus.initial()), np.asarray(m.coords)
    for name in ("LB", "UB", "TO", "W", "WS"):
        j = sus.joint(name)
        assert np.max(np.abs(np.einsum("nij,j->ni", R, X0[j]) + p - X[:, j])) <= 1e-12, name
    assert np.max(np.abs(np.einsum("nji,njk->nik", R, R) - np.eye(3))) <= 1e-12
    # the delta's parallelograms keep the platform's orientation: R = I along any path
    delta = dm.examples.delta()
    t = np.linspace(0.0, 2 * np.pi, 41)
    md = L.sweep(delta, inputs=np.c_[0.3 * np.sin(t), 0.3 * np.sin(t + 2.0), 0.3 * np.sin(2 * t)])
    Rd, pd = L.link_pose(delta, md, "platform")
    assert np.max(np.abs(np.asarray(Rd) - np.eye(3))) <= 1e-10
    T0 = np.asarray(delta.initial())[delta.joint("T")]  # the platform's centre: p is its displacement
    assert np.max(np.abs(np.asarray(pd) - (np.asarray(md.coords)[:, delta.joint("T")] - T0))) <= 1e-11
    with pytest.raises(ValueError, match=r"link 'rod1a' has no frame"):
        L.link_pose(delta, md, "rod1a")


# --------------------------------------------------------------------------- dynamics with several inputs


def _slope(f, x, h):
    """`∂f/∂x` `(…, k)` by fourth-order central differences along each input."""
    cols = []
    for e in np.eye(len(x)):
        cols.append((8 * (f(x + h * e) - f(x - h * e)) - (f(x + 2 * h * e) - f(x - 2 * h * e))) / (12 * h))
    return np.stack(cols, axis=-1)


def five_bar_bodies(u):
    """Each moving link's centre of mass and angle at crank turns `u` (2,), from the
    circle intersection: uniform rods, centres at the middles of their joints."""
    P = {k: np.array(v["coords"], float) for k, v in SPEC["joints"].items()}

    def turn(p, centre, t):
        d = p - centre
        return centre + np.array([np.cos(t) * d[0] - np.sin(t) * d[1], np.sin(t) * d[0] + np.cos(t) * d[1]])

    B, D, C = turn(P["B"], P["A"], u[0]), turn(P["D"], P["E"], u[1]), five_bar_closed_form(u[None])[0]
    ends = {"crank1": (P["A"], B), "left": (B, C), "right": (C, D), "crank2": (D, P["E"])}
    return {k: ((a + b) / 2, np.arctan2(b[1] - a[1], b[0] - a[0])) for k, (a, b) in ends.items()}


def five_bar_lagrangian_torques(u, udot, uddot):
    """τ = M(u) ü + Ṁ u̇ − ½ ∇(u̇ᵀ M u̇) + ∇V of the five-bar from `five_bar_bodies`
    (M = Σ m J_cᵀ J_c + I J_φᵀ J_φ, every derivative by central differences)."""
    links, g = SPEC["links"], np.array(SPEC["gravity"])

    def inertia(q):
        M = np.zeros((2, 2))
        for k in ("crank1", "left", "right", "crank2"):
            Jc = _slope(lambda s: five_bar_bodies(s)[k][0], q, 1e-4)
            Jp = _slope(lambda s: np.atleast_1d(five_bar_bodies(s)[k][1]), q, 1e-4)
            M += links[k]["mass"] * Jc.T @ Jc + links[k]["inertia"] * Jp.T @ Jp
        return M

    def potential(q):
        return np.atleast_1d(-sum(links[k]["mass"] * g @ c for k, (c, _) in five_bar_bodies(q).items()))

    dM = _slope(inertia, u, 1e-3)  # dM[j, l, i] = ∂M_jl/∂u_i
    h = np.einsum("jli,i,l->j", dM, udot, udot) - 0.5 * np.einsum("jli,j,l->i", dM, udot, udot)
    return inertia(u) @ uddot + h + _slope(potential, u, 1e-3)[0]


def test_five_bar_drive_torques_and_free_motion_with_two_inputs():
    # the two motor torques from the Newton–Euler balances against Lagrange's equations
    # written from the circle intersection; the free fall of the five-bar released with
    # both cranks turning keeps its energy, and the kinetostatics of its motion need no
    # torque (the reduced k×k equations and the balances agree)
    lk = dm.examples.five_bar()
    U = np.array([[0.0, 0.0], [0.2, -0.1], [-0.15, 0.25]])
    udot, uddot = np.array([[1.0, -0.5], [0.3, 0.8], [-1.2, 0.4]]), np.array([[0.3, 0.2], [-1.0, 0.5], [0.0, 2.0]])
    jf = L.joint_forces(lk, U, udot, uddot)
    assert jf.torque.shape == (3, 2) and bool(np.all(jf.converged))
    for i in range(3):
        want = five_bar_lagrangian_torques(U[i], udot[i], uddot[i])
        np.testing.assert_allclose(np.asarray(jf.torque[i]), want, rtol=1e-6, atol=1e-7, err_msg=str(i))
    # one run, saved at the notebook's six times' shapes (one program for both): three
    # saves around t = 0.05 s give the accelerations there by differences of the rates
    h = 1e-5
    ts = np.array([0.0, 0.02, 0.05 - h, 0.05, 0.05 + h, 0.1])
    sim = L.simulate_dynamics(lk, np.zeros(2), np.array([1.0, -0.5]), 0.1, saveat=ts)
    assert sim.u.shape == (6, 2) and bool(np.all(sim.converged)) and float(np.max(sim.residual)) <= 1e-10
    assert float(sim.energy_error) <= 1e-8
    acc = (np.asarray(sim.udot[4]) - np.asarray(sim.udot[2])) / (2 * h)
    free = L.joint_forces(lk, sim.u[2:5], sim.udot[2:5], np.stack([acc] * 3))  # three rows: the program above
    assert float(np.max(np.abs(np.asarray(free.torque[1])))) <= 1e-5


def delta_potential(u):
    """The delta robot's potential energy at arm turns `u` (3,) from the three-sphere
    closed form: the arms turn about their axes, the platform translates, each rod's
    centre at the middle of its ends."""
    spec = json.loads(dm.examples.path("delta").read_text())
    J = {k: np.array(v["coords"], float) for k, v in spec["joints"].items()}
    links, g = spec["links"], np.array(spec["gravity"])
    p = delta_closed_form(u[None])[0]
    V = -links["platform"]["mass"] * g @ (p + np.array(links["platform"]["com"]) - J["T"])
    for n in (1, 2, 3):
        A, t = J[f"A{n}"], np.array(spec["joints"][f"A{n}"]["axis"], float)
        t = t / np.linalg.norm(t)
        K = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
        R = np.eye(3) + np.sin(u[n - 1]) * K + (1 - np.cos(u[n - 1])) * K @ K
        V -= links[f"arm{n}"]["mass"] * g @ (A + R @ (np.array(links[f"arm{n}"]["com"]) - A))
        for s in "ab":
            top, bottom = A + R @ (J[f"U{n}{s}"] - A), p + J[f"P{n}{s}"] - J["T"]
            V -= links[f"rod{n}{s}"]["mass"] * g @ (top + bottom) / 2
    return np.atleast_1d(V)


def test_delta_holding_torques_are_the_potentials_slope():
    # three inputs in space: the torques that hold the delta robot still are ∇V, V from
    # the three-sphere closed form
    lk = dm.examples.delta()
    U = np.array([[0.0, 0.0, 0.0], [0.2, -0.1, 0.05], [-0.1, 0.3, 0.2]])
    jf = L.joint_forces(lk, U)
    assert jf.torque.shape == (3, 3) and bool(np.all(jf.converged))
    for i in range(3):
        want = _slope(delta_potential, U[i], 1e-3)[0]
        np.testing.assert_allclose(np.asarray(jf.torque[i]), want, rtol=1e-7, atol=1e-9, err_msg=str(i))


def test_motion_rates_and_joint_forces_take_a_motion_with_several_inputs():
    # a motion's rates for both cranks turning (k,) against the closed form's central
    # differences; joint_forces takes the motion (its configurations)
    lk = dm.examples.five_bar()
    U = np.array([[0.0, 0.0], [0.2, -0.1], [-0.15, 0.25]])
    m = L.sweep(lk, inputs=U)
    w = np.array([0.7, -1.3])
    vel, _ = L.motion_rates(lk, m, w)
    h = 1e-6
    fd = (five_bar_closed_form(U + h * w) - five_bar_closed_form(U - h * w)) / (2 * h)
    assert np.max(np.abs(np.asarray(vel)[:, lk.joint("C"), :2] - fd)) <= 1e-8
    # joint_forces at the motion's own configurations, and from its inputs by a sweep: the same to round-off
    along, swept = (np.asarray(L.joint_forces(lk, v).torque) for v in (m, U))
    np.testing.assert_allclose(along, swept, rtol=1e-12, atol=1e-12 * np.max(np.abs(swept)))

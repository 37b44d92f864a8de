"""Spatial linkages with revolute (R) joints: the RSSR four-bar against its closed-form
input–output equation (written here from the description file, without diffmech), its
design gradient against central differences of that closed form and its generalised
inertia against the closed-form kinetic energy; the over-constrained Bennett 4R against
Bennett's closed-form relation between its joint angles (and its implicit derivative);
the energy balance of free motion; the errors of bad descriptions and the status of a
Bennett design that has lost its special geometry."""

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import linkage as L

SPEC = json.loads(dm.examples.path("rssr").read_text())


def _rot(axis, t):
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(t) * K + (1 - np.cos(t)) * K @ K


def rssr_closed_form(thetas, C0=None, D=None):
    """The rocker's angle φ(θ) of the RSSR from |C(φ) − B(θ)|² = L², written as
    P cos φ + Q sin φ = S (Freudenstein's form for the RSSR): the root through φ = 0 at
    θ = 0, followed by continuity. Also returns C(θ)."""
    j = SPEC["joints"]
    A, B0 = np.array(j["A"]["coords"]), np.array(j["B"]["coords"])
    C0 = np.array(j["C"]["coords"]) if C0 is None else C0
    D = np.array(j["D"]["coords"]) if D is None else D
    a = np.array(j["A"]["axis"]) / np.linalg.norm(j["A"]["axis"])
    d = np.array(j["D"]["axis"]) / np.linalg.norm(j["D"]["axis"])
    L2 = np.sum((C0 - B0) ** 2)
    r = C0 - D
    par = (r @ d) * d
    perp = r - par
    e = np.cross(d, perp)
    phis, Cs, prev = [], [], 0.0
    for th in thetas:
        B = A + _rot(a, th) @ (B0 - A)
        w = D + par - B
        P, Q, S = 2 * w @ perp, 2 * w @ e, L2 - w @ w - perp @ perp
        base, half = np.arctan2(Q, P), np.arccos(np.clip(S / np.hypot(P, Q), -1, 1))
        roots = np.array([base + half, base - half])
        k = np.argmin(np.abs(np.angle(np.exp(1j * (roots - prev)))))
        prev = prev + np.angle(np.exp(1j * (roots[k] - prev)))
        phis.append(prev)
        Cs.append(D + par + np.cos(prev) * perp + np.sin(prev) * e)
    return np.array(phis), np.array(Cs)


def test_rssr_rocker_follows_the_closed_form_input_output_equation():
    lk = dm.examples.rssr()
    m = L.sweep(lk)  # the default: a full crank turn in 2° steps
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    _, C = rssr_closed_form(np.asarray(m.inputs))
    got = np.asarray(m.coords)[:, lk.joint("C")]
    assert np.max(np.abs(got - C)) <= 1e-10
    # the crank point turns about A's axis at the input angle
    B = np.asarray(m.coords)[:, lk.joint("B")]
    th = np.asarray(m.inputs)
    assert np.max(np.abs(B - np.c_[np.cos(th), np.sin(th), np.zeros_like(th)])) <= 1e-12
    # the mobility from the Jacobian's rank, and the round trip through the description
    assert L.mobility(lk).dof == 1
    back = L.Linkage.from_dict(lk.to_dict())
    assert back.names == lk.names and np.allclose(back.coords, lk.coords, atol=1e-15)


def test_rssr_design_gradient_matches_central_differences_of_the_closed_form():
    # the design: the coupler's end C (3) and the rocker's pivot D moved with its axis (3)
    lk = dm.examples.rssr()
    iC, iD, iDa = lk.joint("C"), lk.joint("D"), lk.joint("D.axis")
    u = jnp.linspace(0.0, 1.0, 11)  # to θ = 1 rad from the described configuration
    d = jnp.asarray(SPEC["joints"]["D"]["axis"], float)

    def phi_end(p):
        c = lk.coords.at[iC].add(p[:3]).at[jnp.array([iD, iDa])].add(p[3:])
        m = L.sweep_functional(eqx.tree_at(lambda k: k.coords, lk, c), u)
        r0, r = c[iC] - c[iD], m.coords[-1, iC] - c[iD]
        perp = r0 - (r0 @ d) * d
        return jnp.arctan2(jnp.cross(d, perp) @ r, perp @ r)

    g = np.asarray(jax.grad(phi_end)(jnp.zeros(6)))
    j = SPEC["joints"]
    C0, D0 = np.array(j["C"]["coords"]), np.array(j["D"]["coords"])
    h = 1e-6
    for k in range(6):
        s = np.eye(6)[k] * h
        plus = rssr_closed_form(np.asarray(u), C0 + s[:3], D0 + s[3:])[0][-1]
        minus = rssr_closed_form(np.asarray(u), C0 - s[:3], D0 - s[3:])[0][-1]
        fd = (plus - minus) / (2 * h)
        assert abs(g[k] - fd) <= 1e-7 * max(1.0, abs(fd)), (k, g[k], fd)


def rssr_inertia(theta):
    """The RSSR's generalised inertia M(θ) (kinetic energy ½ M θ̇²) from the closed form
    and the description's mass properties: the crank and rocker turning about their
    axes (the rocker at φ′ = (C − B)·v_B / ((C − B)·(d × (C − D))), from differentiating
    |C − B|² = L²), the coupler a rod whose centre of mass moves with its ends."""
    j, links = SPEC["joints"], SPEC["links"]
    A, B0, D = (np.array(j[n]["coords"]) for n in "ABD")
    a, d = (np.array(j[n]["axis"]) / np.linalg.norm(j[n]["axis"]) for n in "AD")
    phi, C = rssr_closed_form(np.linspace(0.0, theta, 200))
    phi, C = phi[-1], C[-1]
    B = A + _rot(a, theta) @ (B0 - A)
    vB = np.cross(a, B - A)
    dphi = (C - B) @ vB / ((C - B) @ np.cross(d, C - D))
    vC = dphi * np.cross(d, C - D)
    M = 0.0
    for name, pivot, axis, angle, rate in (("crank", A, a, theta, 1.0), ("rocker", D, d, phi, dphi)):
        m, com, inertia = (np.array(links[name][k], float) for k in ("mass", "com", "inertia"))
        v = rate * np.cross(axis, pivot + _rot(axis, angle) @ (com - pivot) - pivot)
        M += m * v @ v + rate**2 * axis @ inertia @ axis  # a fixed axis: Rᵀ a = a
    rod = links["coupler"]
    length = np.linalg.norm(C - B)
    s = np.linalg.norm(np.array(rod["com"]) - B0) / np.linalg.norm(np.array(j["C"]["coords"]) - B0)
    v = (1 - s) * vB + s * vC
    w = np.cross((C - B) / length, vC - vB) / length  # the rod's transverse angular velocity
    return M + rod["mass"] * v @ v + rod["inertia"] * w @ w


def test_rssr_generalised_inertia_matches_the_closed_form_kinetic_energy():
    lk = dm.examples.rssr()
    u = jnp.linspace(0.0, 2 * np.pi, 7)[:-1]
    m = L.sweep(lk, inputs=u)
    for i, th in enumerate(np.asarray(u)):
        M, _ = L.generalised_inertia(lk, lk.state(m.coords[i]), th)
        want = rssr_inertia(th)
        assert abs(float(M) - want) <= 1e-10 * want, (th, float(M), want)


def test_free_over_constrained_motion_keeps_its_energy_balance():
    lk = dm.examples.bennett()
    sim = L.simulate_dynamics(lk, 1.0, 2.0, saveat=jnp.linspace(0.0, 2.0, 21), rtol=1e-11, atol=1e-13)
    assert bool(np.all(sim.converged))
    assert float(sim.energy_error) <= 1e-9
    assert float(np.max(sim.residual)) <= 1e-10


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s["joints"]["A"].update(axis=[0.0, 0.0, 0.0]), r"joints\.A\.axis: the axis .* has zero length"),
        (lambda s: s["joints"]["A"].pop("axis"), r"joints\.A\.axis: a spatial R, P or C joint needs its axis"),
        (lambda s: s["joints"]["B"].update(axis=[1.0, 0.0, 0.0]), r"joints\.B\.axis: only a spatial revolute"),
        (lambda s: s["joints"]["A"].update(axis=[0.0, "z", 1.0]), r"joints\.A\.axis: 3 finite numbers"),
        (
            lambda s: s["joints"].update({"X.axis": s["joints"].pop("B")}),
            r"joints\.X\.axis: a joint name may not end in '\.axis'",
        ),
        (
            lambda s: (
                s["links"].update(ground=["A", "D", "B"]),
                s.update(input={"type": "revolute", "link": "coupler", "joint": "B"}),
            ),
            r"input: a spatial linkage is driven by an actuator .* B is a joint of type S",
        ),
    ],
)
def test_bad_spatial_revolute_descriptions_name_the_item(change, message):
    spec = json.loads(json.dumps(SPEC))
    change(spec)
    with pytest.raises(L.LinkageError, match=message):
        L.Linkage.from_dict(spec)


# --------------------------------------------------------------------------- Bennett


BENNETT_K = np.sin(np.deg2rad(45.0)) / np.sin(np.deg2rad(15.0))  # sin((β+α)/2) / sin((β−α)/2), α 30°, β 60°


def bennett_relation_holds(lk, coords, th1):
    """Bennett's closed form at every configuration `coords` `(N, J, 3)` with crank
    angle `th1` `(N,)`: opposite joint angles opposite, tan(θ1/2) tan(θ2/2) = K."""
    C = np.asarray(coords)
    p = [C[:, lk.joint(f"J{i}")] for i in range(1, 5)]
    z = [C[:, lk.joint(f"J{i}.axis")] - p[i - 1] for i in range(1, 5)]
    z = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in z]

    def joint_angle(i):  # about joint i's axis, from the normal arriving to the one leaving
        x_in = p[i] - p[i - 1]
        x_out = p[(i + 1) % 4] - p[i]
        return np.arctan2(np.einsum("ij,ij->i", np.cross(x_in, x_out), z[i]), np.einsum("ij,ij->i", x_in, x_out))

    th2 = joint_angle(1)
    wrap = lambda a: np.angle(np.exp(1j * a))  # noqa: E731
    assert np.max(np.abs(wrap(th2 - 2 * np.arctan(BENNETT_K / np.tan(th1 / 2))))) <= 1e-10
    assert np.max(np.abs(wrap(joint_angle(2) + th1))) <= 1e-10
    assert np.max(np.abs(wrap(joint_angle(3) + th2))) <= 1e-10
    assert np.max(np.abs(wrap(joint_angle(0) - th1))) <= 1e-10


def test_bennett_moves_as_bennetts_closed_form_says_though_kutzbach_counts_minus_two():
    lk = dm.examples.bennett()
    mob = L.mobility(lk)
    # the moving joint J3 and its axis point (6 unknowns); each moving link's 5 equations
    # (two fixed points: one freedom each); 3 redundant by Kutzbach's count, 1 because both
    # links hold J3's axis point at its distance
    assert (mob.dof, mob.redundant, lk.counts()["equations"], lk.counts()["unknowns"]) == (1, 4, 10, 6)
    m = L.sweep(lk)  # a full turn of the crank
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    bennett_relation_holds(lk, m.coords, 1.2 + np.asarray(m.inputs))  # the file's crank angle plus the input
    # the implicit derivative through the over-constrained closure: dθ2/du against
    # central differences of Bennett's relation
    i1, i2, i3, a2 = (lk.joint(n) for n in ("J2", "J1", "J3", "J2.axis"))

    def theta2(u):
        X = L.sweep_functional(lk, jnp.linspace(0.0, u, 8)).coords[-1]
        x_in, x_out, zz = X[i1] - X[i2], X[i3] - X[i1], X[a2] - X[i1]
        return jnp.arctan2(jnp.cross(x_in, x_out) @ zz / jnp.linalg.norm(zz), x_in @ x_out)

    closed = lambda t: 2 * np.arctan(BENNETT_K / np.tan((1.2 + t) / 2))  # noqa: E731
    h = 1e-6
    for u0 in (0.7, 2.5):
        fd = (closed(u0 + h) - closed(u0 - h)) / (2 * h)
        assert abs(float(jax.grad(theta2)(u0)) - fd) <= 1e-7 * max(1.0, abs(fd)), (u0, fd)


def test_bennett_driven_at_a_joint_between_two_moving_links_keeps_bennetts_relation():
    # J3 joins the coupler and the follower: its own turn is the input (the follower's
    # relative to the coupler, one equation of the closure), so θ3 = −1.2 + u and θ1 =
    # −θ3 = 1.2 − u; the couple holding it still against gravity is, by virtual work,
    # the slope of the potential, the links' centres carried rigidly by their own
    # points (a least-squares fit of each link's four points to the file's)
    spec = json.loads(dm.examples.path("bennett").read_text())
    spec["input"] = {"type": "revolute", "joint": "J3"}
    lk = L.Linkage.from_dict(spec)
    assert lk.to_dict()["input"] == spec["input"]
    # J2's and J3's axis points are each held by both their links: two redundant rows more
    assert (L.mobility(lk).dof, L.mobility(lk).redundant) == (1, 5)
    h = 1e-4
    # 11 inputs, as notebook 10's path (its programs): five about 0.5 for the stencil
    u = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5 - 2 * h, 0.5 - h, 0.5, 0.5 + h, 0.5 + 2 * h, 1.0])
    m = L.sweep(lk, inputs=u)
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    bennett_relation_holds(lk, m.coords, 1.2 - u)
    links, g = spec["links"], np.array(spec["gravity"])
    C0, C = np.asarray(lk.coords), np.asarray(m.coords)

    def potential(X):
        V = 0.0
        for name in ("crank", "coupler", "follower"):
            idx = [lk.joint(n) for j in links[name]["joints"] for n in (j, j + ".axis")]
            a, b = C0[idx] - C0[idx].mean(0), X[idx] - X[idx].mean(0)
            U, _, Wt = np.linalg.svd(b.T @ a)
            R = U @ np.diag([1, 1, np.linalg.det(U @ Wt)]) @ Wt
            com = X[idx].mean(0) + R @ (np.array(links[name]["com"]) - C0[idx].mean(0))
            V -= links[name]["mass"] * g @ com
        return V

    V = [potential(X) for X in C[5:10]]
    want = (8 * (V[3] - V[1]) - (V[4] - V[0])) / (12 * h)
    jf = L.joint_forces(lk, m)  # along the motion: its configurations (u = 0.5 in row 7)
    assert bool(jf.converged[7])
    assert abs(float(jf.torque[7]) - want) <= 1e-7 * abs(want), (float(jf.torque[7]), want)


def test_a_bennett_design_off_its_condition_is_rigid_by_name_and_by_status():
    spec = json.loads(dm.examples.path("bennett").read_text())
    spec["joints"]["J3"]["axis"] = [a + 0.01 for a in spec["joints"]["J3"]["axis"]]  # the geometry lost
    with pytest.raises(L.LinkageError, match=r"over-constrained and rigid: the input cannot move it"):
        L.Linkage.from_dict(spec)
    # a design changed as an array (inside a program, say) is not checked as a description:
    # the same change is a status (the closure test's program, its default inputs)
    lk = dm.examples.bennett()
    a3 = lk.joint("J3.axis")
    bent = eqx.tree_at(lambda k: k.coords, lk, lk.coords.at[a3].add(0.01 * lk.coords[a3]))
    m = L.sweep(bent, check=False)
    assert bool(np.asarray(m.converged)[0]) and not bool(np.asarray(m.converged)[1])
    assert bool(m.result == dm.closure.RESULTS.redundancy_lost), m.result


def test_released_at_another_input_the_motion_continues_the_one_released_at_zero():
    # the free RSSR is autonomous: released at (u(τ), u̇(τ)) of a motion from u = 0, it
    # follows that motion from τ on (same configuration, same input and rate)
    lk = dm.examples.rssr()
    tau, t1 = 0.7, 2.0
    a = L.simulate_dynamics(lk, 1.0, t1, saveat=jnp.array([0.0, tau, t1]), rtol=1e-11, atol=1e-13)
    b = L.simulate_dynamics(lk, a.u[1], a.udot[1], t1 - tau, saveat=jnp.array([0.0, t1 - tau]), rtol=1e-11, atol=1e-13)
    assert bool(np.all(a.converged)) and bool(np.all(b.converged))
    assert float(a.energy_error) <= 1e-9 and float(b.energy_error) <= 1e-9  # the energy balance
    assert float(np.max(a.residual)) <= 1e-10 and float(np.max(b.residual)) <= 1e-10
    assert float(a.u[1]) > 0.5  # released well away from the file's configuration (~40°)
    assert np.max(np.abs(np.asarray(b.coords[0]) - np.asarray(a.coords[1]))) <= 1e-12
    assert abs(float(b.u[-1] - a.u[-1])) <= 1e-8 and abs(float(b.udot[-1] - a.udot[-1])) <= 1e-8
    with pytest.raises(ValueError, match="`u0` is given twice"):
        L.simulate_dynamics(lk, 0.1, 0.0, 1.0, u0=0.2)


def rssr_potential(theta):
    """The RSSR's potential energy under the file's gravity, from the closed form."""
    j, links = SPEC["joints"], SPEC["links"]
    A, B0, D = (np.array(j[n]["coords"]) for n in "ABD")
    a, d = (np.array(j[n]["axis"]) / np.linalg.norm(j[n]["axis"]) for n in "AD")
    g = np.array(SPEC["gravity"])
    phi, C = rssr_closed_form(np.linspace(0.0, theta, 200))
    B = A + _rot(a, theta) @ (B0 - A)
    coms = [
        A + _rot(a, theta) @ (np.array(links["crank"]["com"]) - A),
        D + _rot(d, phi[-1]) @ (np.array(links["rocker"]["com"]) - D),
    ]
    s = np.linalg.norm(np.array(links["coupler"]["com"]) - B0) / np.linalg.norm(np.array(j["C"]["coords"]) - B0)
    coms.append(B + s * (C[-1] - B))
    return -sum(links[k]["mass"] * g @ c for k, c in zip(("crank", "rocker", "coupler"), coms))


def test_spatial_joint_forces_drive_torque_is_the_closed_form_lagrangians():
    # the motor torque from every link's Newton–Euler balance (reactions at the R and S
    # joints solved for) against the reduced equation written from the closed form:
    # τ = M(θ) θ̈ + ½ M′(θ) θ̇² + V′(θ)
    lk = dm.examples.rssr()
    u = jnp.linspace(0.0, 2 * np.pi, 7)[:-1]
    w, alpha = 2.0, 0.5
    jf = L.joint_forces(lk, u, w, alpha)
    h = 1e-5
    for th, tau in zip(np.asarray(u), np.asarray(jf.torque)):
        dM = (rssr_inertia(th + h) - rssr_inertia(th - h)) / (2 * h)
        dV = (rssr_potential(th + h) - rssr_potential(th - h)) / (2 * h)
        want = rssr_inertia(th) * alpha + 0.5 * dM * w**2 + dV
        assert abs(tau - want) <= 1e-7 * max(1.0, abs(want)), (th, tau, want)
    # the over-constrained Bennett linkage: its reactions are indeterminate (least norm,
    # three free), its motor torque is not: the reduced equation's, from M(u) and V(u)
    ben = dm.examples.bennett()
    m = L.sweep(ben)  # the closure test's program: 180 inputs of 2°, every 30th checked
    jb = L.joint_forces(ben, m, w, alpha)  # along the motion: its configurations
    assert jb.redundancy == 3
    for i in range(0, 180, 30):
        th, x = m.inputs[i], ben.state(m.coords[i])
        (M, dM), (_, dV) = L.generalised_inertia(ben, x, th), L.potential(ben, x, th)
        want = float(M * alpha + 0.5 * dM * w**2 + dV)
        assert abs(float(jb.torque[i]) - want) <= 1e-9 * max(1.0, abs(want)), (th, float(jb.torque[i]), want)


# --------------------------------------------------------------------------- suspension


def test_double_wishbone_against_an_independent_absolute_coordinate_model():
    # tests/reference/suspension_absolute.py: the knuckle's pose and the upper arm's angle
    # solved in absolute coordinates from the file alone (written without diffmech's code)
    from reference import suspension_absolute as ref

    lk = dm.examples.double_wishbone()
    spec = json.loads(dm.examples.path("double_wishbone").read_text())
    assert L.mobility(lk).dof == 2
    n = 21
    U = np.c_[np.linspace(0.0, 0.25, n), np.linspace(0.0, 0.02, n)]  # bump and rack travel together
    m = L.sweep(lk, inputs=U)
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    want = ref.path(spec, U)
    for name in ("LB", "UB", "TO", "W", "WS"):
        got = np.asarray(m.coords)[:, lk.joint(name)]
        assert np.max(np.abs(got - want[name])) <= 1e-10, name
    # bump steer's gradient with respect to the inner tie-rod point's height, against
    # central differences of the reference model
    ti = lk.joint("TI")
    path = jnp.asarray(U[:5, :1] * np.array([[1.0, 0.0]]))  # wheel travel alone, steering held

    def toe(dz):
        k = eqx.tree_at(lambda k_: k_.coords, lk, lk.coords.at[ti, 2].add(dz))
        X = L.sweep_functional(k, path).coords[-1]
        a = X[lk.joint("WS")] - X[lk.joint("W")]
        return jnp.arctan2(a[0], a[1])

    def toe_ref(dz):
        s = json.loads(json.dumps(spec))
        s["joints"]["TI"]["coords"][2] += dz
        P = ref.path(s, np.asarray(path))
        a = P["WS"][-1] - P["W"][-1]
        return np.arctan2(a[0], a[1])

    h = 1e-6
    fd = (toe_ref(h) - toe_ref(-h)) / (2 * h)
    assert abs(float(jax.grad(toe)(0.0)) - fd) <= 1e-6 * abs(fd), (float(jax.grad(toe)(0.0)), fd)


# --------------------------------------------------------------------------- universal joint


def test_cardan_joint_output_follows_hookes_law():
    # the output yoke's axis stays perpendicular to the input's and to the output shaft:
    # e2 ∝ z2 × e1(φ1); its angle about z2 obeys tan φ2 = tan φ1 / cos β (Hooke)
    lk = dm.examples.cardan()
    assert L.mobility(lk).dof == 1
    m = L.sweep(lk)  # a full turn of the input shaft, 2° steps
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    X = np.asarray(m.coords)
    beta = np.radians(30.0)
    z2 = np.array([np.sin(beta), 0.0, np.cos(beta)])
    phi1 = np.asarray(m.inputs)
    e1 = np.c_[np.cos(phi1), np.sin(phi1), np.zeros_like(phi1)]
    e2 = np.cross(z2, e1)
    e2 /= np.linalg.norm(e2, axis=1, keepdims=True)
    got = X[:, lk.joint("C.axis.output")] - X[:, lk.joint("C")]
    got /= np.linalg.norm(got, axis=1, keepdims=True)
    assert np.max(np.abs(got - e2)) <= 1e-10
    phi2 = np.arctan2(got @ np.cross(z2, [0.0, 1.0, 0.0]), got @ np.array([0.0, 1.0, 0.0]))
    away = np.abs(np.cos(phi1)) > 0.1  # where tan φ1 is finite
    assert np.max(np.abs(np.tan(phi2[away]) - np.tan(phi1[away]) / np.cos(beta))) <= 1e-9
    back = L.Linkage.from_dict(lk.to_dict())
    assert np.allclose(back.coords, lk.coords, atol=1e-15)


def test_universal_joint_axes_must_be_perpendicular_and_name_their_links():
    spec = json.loads(dm.examples.path("cardan").read_text())
    spec["joints"]["C"]["axes"]["output"] = [0.1, 1.0, 0.0]
    with pytest.raises(L.LinkageError, match=r"joints\.C\.axes: a universal joint's two axes must be perpendicular"):
        L.Linkage.from_dict(spec)
    spec = json.loads(dm.examples.path("cardan").read_text())
    spec["joints"]["C"]["axes"] = {"input": [1.0, 0.0, 0.0], "ground": [0.0, 1.0, 0.0]}
    with pytest.raises(L.LinkageError, match=r"joints\.C: a universal joint joins exactly the two links its 'axes'"):
        L.Linkage.from_dict(spec)


def test_cardan_joint_forces_drive_torque_is_the_reduced_equations():
    # the universal joint transmits a force and the couple along its axes' normal; the
    # input torque from every shaft's Newton–Euler balance against M(u), V(u) (Lagrange)
    lk = dm.examples.cardan()
    m = L.sweep(lk)  # the Hooke test's program; every 30th input checked
    w, alpha = 2.0, 0.5
    jf = L.joint_forces(lk, m, w, alpha)  # along the motion: its configurations
    assert bool(np.all(jf.converged)) and jf.redundancy == 3
    for i in range(0, 180, 30):
        th, x = m.inputs[i], lk.state(m.coords[i])
        (M, dM), (_, dV) = L.generalised_inertia(lk, x, th), L.potential(lk, x, th)
        want = float(M * alpha + 0.5 * dM * w**2 + dV)
        assert abs(float(jf.torque[i]) - want) <= 1e-9 * max(1.0, abs(want)), (th, float(jf.torque[i]), want)
    # in the cross's frame (z along the normal of its two axes) the couple it carries
    # has no part about either axis: the shafts turn freely about them
    for link in ("input", "output"):
        local = np.asarray(jf.local("C", link))
        assert np.max(np.abs(local[:, 3:5])) <= 1e-12 * np.max(np.abs(local)), link
        assert np.max(np.abs(local[:, 5])) > 1e-6 * np.max(np.abs(local)), link  # it carries one along the normal


def _link_twists(lk, V, X):
    """Each link's twist `(v_O, ω)` (`(L, 6)`, the velocity of the body point at the
    origin and the angular velocity) from its points' velocities `V` at `X`, by least
    squares over `v_p = v_O + ω × p` (an S–S rod's idle spin: the least-norm one, which
    moves its points as they move)."""
    out = []
    for members in lk.links:
        rows, rhs = [], []
        for j in members:
            p = X[j]
            skew = np.array([[0.0, p[2], -p[1]], [-p[2], 0.0, p[0]], [p[1], -p[0], 0.0]])  # ω × p = skew @ ω
            rows.append(np.hstack([np.eye(3), skew]))
            rhs.append(V[j])
        t = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)[0]
        assert np.allclose(np.vstack(rows) @ t, np.concatenate(rhs), atol=1e-9), "a link moves rigidly"
        out.append(t)
    return np.array(out)


@pytest.mark.parametrize("name", ["cardan", "rscr"])
def test_every_joints_reactions_do_no_work_on_the_motions_it_allows(name):
    # an ideal joint's wrenches on the links it joins, (F, M about the origin) each, do no
    # net work on their twists (v_O, ω): Σ_links F·v_O + M·ω = 0, whatever the joint's
    # kind allows (the U joint's two turns, the C joint's turn and slide, the R's turn, the
    # S's three): a reaction unknown along a motion the joint allows would do work. The
    # twists from the closure's rates (implicit differentiation), independent of the
    # Newton–Euler system the reactions come from.
    lk = getattr(dm.examples, name)()
    m = L.sweep(lk)
    w, alpha = 2.0, 0.5
    jf = L.joint_forces(lk, m, w, alpha)  # the drive-torque test's program
    assert bool(np.all(jf.converged))
    reactions = np.asarray(jf.reactions)
    for i in range(0, 180, 45):
        X = np.asarray(m.coords[i])
        V = np.asarray(L.rates(lk, lk.state(m.coords[i]), m.inputs[i], w, alpha)[0])
        twists = _link_twists(lk, V, X)
        size = np.max(np.abs(reactions[i])) * np.max(np.abs(twists))
        for joint in sorted({j for j, _ in jf.pairs}):
            power = sum(
                reactions[i, k] @ twists[lk.link_names.index(link)]
                for k, (j, link) in enumerate(jf.pairs)
                if j == joint
            )
            assert abs(power) <= 1e-10 * size, (name, i, joint, power, size)


# --------------------------------------------------------------------------- P and C joints

RSCR = json.loads(dm.examples.path("rscr").read_text())


def _newton(g, x, tol=1e-15):
    """A scalar root of `g` near `x` (secant steps)."""
    for _ in range(60):
        h = 1e-7
        step = g(x) * 2 * h / (g(x + h) - g(x - h))
        x -= step
        if abs(step) < tol:
            break
    return x


def rscr_poses(theta, phi=None):
    """The RSCR's links' poses `{link: (R, com)}` (R from the description's
    configuration) at crank angle θ, from its closure condition alone: the crank's
    point B at the constant distance h from the rocker's C axis line (the coupler turns
    about and slides along that line, so that is all the C joint asks), solved for the
    rocker angle φ by continuation from θ = 0 (or from `phi`); the coupler's pose from
    that line and B. Returns the poses and φ."""
    j, links = RSCR["joints"], RSCR["links"]
    A, B0, C0, D = (np.array(j[n]["coords"]) for n in "ABCD")
    a, c, d = (np.array(j[n]["axis"]) / np.linalg.norm(j[n]["axis"]) for n in "ACD")

    def line(p):  # the rocker's C axis: a point and its direction
        return D + _rot(d, p) @ (C0 - D), _rot(d, p) @ c

    def crank(t):
        return A + _rot(a, t) @ (B0 - A)

    h = np.linalg.norm(np.cross(B0 - C0, c))

    def gap(t, p):
        P, e = line(p)
        return np.linalg.norm(np.cross(crank(t) - P, e)) - h

    if phi is None:
        phi = 0.0
        for t in np.linspace(0.0, theta, 60)[1:]:
            phi = _newton(lambda p: gap(t, p), phi)
    phi = _newton(lambda p: gap(theta, p), phi)

    def coupler_frame(t, p):  # the foot F of B on the line, and the frame (line, to B, their normal)
        P, e = line(p)
        B = crank(t)
        F = P + ((B - P) @ e) * e
        n = (B - F) / np.linalg.norm(B - F)
        return F, np.stack([e, n, np.cross(e, n)], axis=1)

    F0, R0 = coupler_frame(0.0, 0.0)
    F, R = coupler_frame(theta, phi)
    Rc = R @ R0.T
    com = {k: np.array(links[k]["com"]) for k in ("crank", "coupler", "rocker")}
    return {
        "crank": (_rot(a, theta), A + _rot(a, theta) @ (com["crank"] - A)),
        "coupler": (Rc, F + Rc @ (com["coupler"] - F0)),
        "rocker": (_rot(d, phi), D + _rot(d, phi) @ (com["rocker"] - D)),
    }, phi


def rscr_energy_terms(theta):
    """M(θ), M′(θ), V′(θ) of the RSCR from `rscr_poses` by central differences: the
    kinetic energy ½ M θ̇² with M = Σ m |ċ|² + ωᵀ R I Rᵀ ω per unit θ̇."""
    links, g = RSCR["links"], np.array(RSCR["gravity"])
    _, phi = rscr_poses(theta)

    def slope(f, t, h):  # the fourth-order central difference
        return (8 * (f(t + h) - f(t - h)) - (f(t + 2 * h) - f(t - 2 * h))) / (12 * h)

    def inertia(t):
        here, _ = rscr_poses(t, phi)
        M = 0.0
        for k, (R, _) in here.items():
            W = slope(lambda s: rscr_poses(s, phi)[0][k][0], t, 1e-4) @ R.T
            w = np.array([W[2, 1], W[0, 2], W[1, 0]])
            v = slope(lambda s: rscr_poses(s, phi)[0][k][1], t, 1e-4)
            M += links[k]["mass"] * v @ v + w @ R @ np.array(links[k]["inertia"]) @ R.T @ w
        return M

    def potential(t):
        return -sum(links[k]["mass"] * g @ c for k, (_, c) in rscr_poses(t, phi)[0].items())

    return inertia(theta), slope(inertia, theta, 1e-3), slope(potential, theta, 1e-3)


def test_rscr_follows_its_closure_condition_and_its_drive_torque_is_the_lagrangians():
    # the cylindrical joint: the rocker's angle against the closure condition written
    # from the file (B at its distance from the rocker's C axis), every link's pose
    # against the closed form; the motor torque from the Newton–Euler balances (the C
    # joint's reactions: no force along its axis, no couple about it) against the
    # reduced equation τ = M θ̈ + ½ M′ θ̇² + V′ of that closed form
    lk = dm.examples.rscr()
    assert L.mobility(lk).dof == 1 and not lk.over_constrained
    m = L.sweep(lk)  # a full crank turn
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    for i in range(0, 180, 30):
        th = float(m.inputs[i])
        want, _ = rscr_poses(th)
        for link in ("crank", "coupler", "rocker"):
            R, p = L.link_pose(lk, m, link)
            np.testing.assert_allclose(np.asarray(R[i]), want[link][0], atol=1e-10, err_msg=(th, link))
    w, alpha = 2.0, 0.5
    jf = L.joint_forces(lk, m, w, alpha)  # along the motion (the notebook's program)
    for th, tau in zip(np.asarray(m.inputs[::90]), np.asarray(jf.torque[::90])):
        M, dM, dV = rscr_energy_terms(th)
        want = M * alpha + 0.5 * dM * w**2 + dV
        assert abs(tau - want) <= 1e-6 * max(1.0, abs(want)), (th, tau, want)
    # each reaction in its joint's frame: the cylinder's on the coupler has no force along
    # its axis and no moment about it; the R joints' no moment about their axes; the S
    # joint's no moment about its centre; the frame maps the local force back to the world
    zero = {("C", "coupler"): [2, 5], ("A", "crank"): [5], ("D", "rocker"): [5], ("B", "coupler"): [3, 4, 5]}
    for (joint, link), rows in zero.items():
        local = np.asarray(jf.local(joint, link))
        scale = np.max(np.abs(local))
        assert np.max(np.abs(local[:, rows])) <= 1e-12 * scale, (joint, link)
        i = jf.pairs.index((joint, link))
        np.testing.assert_allclose(
            np.einsum("nij,nj->ni", np.asarray(jf.frames[:, i]), local[:, :3]),
            np.asarray(jf.reaction(joint, link))[:, :3],
            atol=1e-12 * scale,
        )
    e = np.asarray(m.coords[:, lk.names.index("C.axis")] - m.coords[:, lk.names.index("C")])
    np.testing.assert_allclose(
        np.asarray(jf.frames[:, jf.pairs.index(("C", "coupler")), :, 2]),
        e / np.linalg.norm(e, axis=1, keepdims=True),
        atol=1e-14,
    )


def rscr_joint_coordinates(theta, phi):
    """The C joint's own coordinates at crank angle θ (rocker angle φ near `phi`) from
    the closed form `rscr_poses`: the slide of the rocker's point on the axis from the
    coupler's, along the axis, and the rocker's turn relative to the coupler about it
    (`R_cᵀ R_r` is a turn about the file's axis); the poses; φ."""
    poses, phi = rscr_poses(theta, phi)
    (Rc, cc), (Rr, cr) = poses["coupler"], poses["rocker"]
    com = {k: np.array(RSCR["links"][k]["com"]) for k in ("coupler", "rocker")}
    C0 = np.array(RSCR["joints"]["C"]["coords"])
    c = np.array(RSCR["joints"]["C"]["axis"]) / np.linalg.norm(RSCR["joints"]["C"]["axis"])
    on_coupler, on_rocker = cc + Rc @ (C0 - com["coupler"]), cr + Rr @ (C0 - com["rocker"])
    slide = (on_rocker - on_coupler) @ (Rc @ c)
    Rrel = Rc.T @ Rr
    turn = np.arctan2(
        np.array([Rrel[2, 1] - Rrel[1, 2], Rrel[0, 2] - Rrel[2, 0], Rrel[1, 0] - Rrel[0, 1]]) @ c / 2,
        (np.trace(Rrel) - 1) / 2,
    )
    return (slide, turn), poses, phi


def test_rscr_driven_by_its_cylindrical_joints_slide_or_turn_follows_the_closed_form():
    # a joint between two moving links as the input: the C joint's slide (then its turn),
    # held by one equation of the closure; the crank angle read from the motion, the
    # closed form's slide (turn) there is the input and every link's pose is its
    links, g = RSCR["links"], np.array(RSCR["gravity"])
    for kind, which, top in (("prismatic", 0, 0.3), ("revolute", 1, 0.2)):
        spec = json.loads(json.dumps(RSCR))
        spec["input"] = {"type": kind, "joint": "C"}
        lk = L.Linkage.from_dict(spec)
        assert L.Linkage.from_dict(lk.to_dict()).topology == lk.topology
        u = np.linspace(0.0, top, 4)
        m = L.sweep(lk, inputs=u)
        assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
        B = np.asarray(m.coords[:, lk.names.index("B")])
        theta = np.arctan2(B[:, 1], B[:, 0])
        phi = 0.0
        for i in range(len(u)):
            coords, poses, phi = rscr_joint_coordinates(theta[i], phi)
            assert abs(coords[which] - u[i]) <= 1e-10, (kind, u[i], coords)
            for link in ("crank", "coupler", "rocker"):
                R, _ = L.link_pose(lk, m, link)
                np.testing.assert_allclose(np.asarray(R[i]), poses[link][0], atol=1e-10, err_msg=(kind, link))
        if kind != "prismatic":
            continue

        # virtual work: the force along the joint that holds the linkage still is the slope
        # of the closed form's potential along the slide, dV/dθ / (ds/dθ)
        def slope(f, t, h=1e-4):
            return (8 * (f(t + h) - f(t - h)) - (f(t + 2 * h) - f(t - 2 * h))) / (12 * h)

        def potential(t):
            return -sum(links[k]["mass"] * g @ c for k, (_, c) in rscr_poses(t, phi)[0].items())

        jf = L.joint_forces(lk, u[1:3])
        assert bool(np.all(jf.converged))
        for t, force in zip(theta[1:3], np.asarray(jf.torque)):
            want = slope(potential, t) / slope(lambda s: rscr_joint_coordinates(s, phi)[0][0], t)
            assert abs(force - want) <= 1e-7 * max(1.0, abs(want)), (t, force, want)


def slider_crank_spec(joint="P", driven="crank"):
    """A spatial slider-crank: a crank about z (radius 1), an S–S rod of length 2.5, a
    slider on a P (or C) joint along a skew axis through `P`, the rod's joint `C` off
    that axis; masses (kg) and gravity along −z."""
    e = np.array([1.0, 0.3, 0.2]) / np.linalg.norm([1.0, 0.3, 0.2])
    B = np.array([1.0, 0.0, 0.0])
    P = np.array([2.0, 0.5, 0.8])
    off = np.array([0.0, 0.3, -0.2])
    t = 2.5**2 - np.sum((P + off - B) ** 2)  # place C at distance 2.5 from B along the axis
    b = (P + off - B) @ e
    C = P + off + (-b + np.sqrt(b * b + t)) * e
    inp = {"type": "revolute", "link": "crank", "joint": "A"}
    if driven == "slider":
        inp = {"type": "prismatic", "link": "slider", "joint": "P"}
    return (
        {
            "name": "rssp",
            "geometry": "spatial",
            "joints": {
                "A": {"type": "R", "coords": [0.0, 0.0, 0.0], "axis": [0.0, 0.0, 1.0]},
                "B": {"type": "S", "coords": B.tolist()},
                "C": {"type": "S", "coords": C.tolist()},
                "P": {"type": joint, "coords": P.tolist(), "axis": e.tolist()},
            },
            "links": {
                "ground": ["A", "P"],
                "crank": {
                    "joints": ["A", "B"],
                    "mass": 0.5,
                    "com": [0.5, 0.0, 0.0],
                    "inertia": np.diag([1e-3, 0.04, 0.04]).tolist(),
                },
                "rod": {"joints": ["B", "C"], "mass": 0.7, "com": ((B + C) / 2).tolist(), "inertia": 0.36},
                "slider": {
                    "joints": ["P", "C"],
                    "mass": 1.5,
                    "com": (P + 0.5 * off).tolist(),
                    "inertia": np.diag([0.01, 0.02, 0.03]).tolist(),
                },
            },
            "ground": "ground",
            "input": inp,
            "gravity": [0.0, 0.0, -9.81],
        },
        e,
        C,
    )


def test_spatial_prismatic_joint_slides_without_turning_and_drives_by_its_force():
    # crank-driven: the slider translates along its axis, by the root of |C + s e − B(θ)| = 2.5
    spec, e, C0 = slider_crank_spec()
    lk = L.Linkage.from_dict(spec)
    assert L.mobility(lk).dof == 1
    m = L.sweep(lk)
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    th = np.asarray(m.inputs)
    B = np.stack([np.cos(th), np.sin(th), 0 * th], axis=1)
    w = C0 - B
    s = -(w @ e) + np.sqrt((w @ e) ** 2 - np.sum(w * w, axis=1) + 2.5**2)  # the root through s = 0
    R, p = L.link_pose(lk, m, "slider")
    np.testing.assert_allclose(np.asarray(R), np.broadcast_to(np.eye(3), R.shape), atol=1e-10)  # it never turns
    np.testing.assert_allclose(np.asarray(m.coords[:, lk.names.index("C")]), C0 + s[:, None] * e, atol=1e-10)
    # the design gradient of the slider's travel with respect to its axis's direction (the
    # axis point's height: side B's copy follows it), against central differences of that root
    ax = lk.names.index("P.axis")
    ell = float(np.linalg.norm(np.asarray(lk.coords[ax] - lk.coords[lk.names.index("P")])))
    path = jnp.linspace(0.0, 1.0, 6)

    def travel(dz):
        k = eqx.tree_at(lambda k_: k_.coords, lk, lk.coords.at[ax, 2].add(dz))
        return L.sweep_functional(k, path).coords[-1, lk.names.index("C"), 0]

    def travel_ref(dz):
        e2 = ell * e + np.array([0.0, 0.0, dz])
        e2 /= np.linalg.norm(e2)
        w = C0 - np.array([np.cos(1.0), np.sin(1.0), 0.0])
        return C0[0] + (-(w @ e2) + np.sqrt((w @ e2) ** 2 - w @ w + 2.5**2)) * e2[0]

    fd = (travel_ref(1e-6) - travel_ref(-1e-6)) / 2e-6
    assert abs(float(jax.grad(travel)(0.0)) - fd) <= 1e-7 * max(1.0, abs(fd)), (float(jax.grad(travel)(0.0)), fd)
    # the same loop with a cylindrical joint: the slider may also turn, one equation short
    with pytest.raises(L.LinkageError, match="8 rigidity equations for 9 unknown coordinates"):
        L.Linkage.from_dict(slider_crank_spec("C")[0])
    # slider-driven: the crank angle from Freudenstein's form of the same equation, and the
    # input force holding it still the potential's slope along the slide (independent of
    # the crank: only the rod's and the slider's centres rise, by e_z/2 and e_z per unit s)
    spec, e, C0 = slider_crank_spec(driven="slider")
    lk = L.Linkage.from_dict(spec)
    u = np.linspace(0.0, -0.6, 7)
    m = L.sweep(lk, inputs=u)
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    th = np.unwrap(np.arctan2(m.coords[:, lk.names.index("B"), 1], m.coords[:, lk.names.index("B"), 0]))
    Cs = C0 + u[:, None] * e
    lhs = Cs[:, 0] * np.cos(th) + Cs[:, 1] * np.sin(th)
    np.testing.assert_allclose(lhs, (np.sum(Cs * Cs, axis=1) + 1 - 2.5**2) / 2, atol=1e-10)
    jf = L.joint_forces(lk, m)  # along the motion: its configurations
    want = 9.81 * e[2] * (0.7 / 2 + 1.5)
    np.testing.assert_allclose(np.asarray(jf.torque), want, rtol=1e-10)
    # the P joint's reaction on the slider, in its frame: no force along its axis (the
    # input's own force is the motor's), a moment about it (the turn is locked)
    local = np.asarray(jf.local("P", "slider"))
    assert float(np.max(np.abs(local[:, 2]))) <= 1e-12 * np.max(np.abs(local))
    assert float(np.min(np.abs(local[:, 5]))) > 1e-6


def test_a_cylindrical_slider_turned_by_its_own_joint_is_a_second_input():
    # the slider on a C joint with the ground: free to turn, so its turn is a second
    # input beside the crank's (an equation of the closure, the crank a prescribed link);
    # the slide from the rod's length: C = P + s e + Rot(e, u2)(C0 − P) at |C − B(u1)| = 2.5
    spec, e, C0 = slider_crank_spec("C")
    spec["input"] = [spec["input"], {"type": "revolute", "joint": "P"}]
    lk = L.Linkage.from_dict(spec)
    assert lk.n_inputs == 2 and L.mobility(lk).dof == 2
    U = np.stack([np.linspace(0.0, 0.8, 5), np.linspace(0.0, -0.6, 5)], axis=1)
    m = L.sweep(lk, inputs=U)
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    P = np.array(spec["joints"]["P"]["coords"])
    for (u1, u2), X in zip(U, np.asarray(m.coords)):
        B = np.array([np.cos(u1), np.sin(u1), 0.0])
        w = P + _rot(e, u2) @ (C0 - P) - B  # C − B = w + s e
        s = -(w @ e) + np.sqrt((w @ e) ** 2 - w @ w + 2.5**2)
        np.testing.assert_allclose(X[lk.names.index("C")], w + s * e + B, atol=1e-10)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda s: s["joints"]["P"].pop("axis"), r"joints\.P\.axis: a spatial R, P or C joint needs its axis"),
        (lambda s: s["links"]["crank"]["joints"].append("P"), r"joints\.P: a prismatic joint joins exactly two links"),
        (
            lambda s: (
                s["links"]["slider"].update(joints=["P", "Q"])
                or s["joints"].update(Q={"type": "S", "coords": s["joints"]["P"]["coords"]})
            ),
            r"link slider slides along a prismatic joint but has no three non-collinear points",
        ),
        (
            lambda s: s["joints"]["P"].update(type="C") or s.update(input={"link": "slider", "joint": "P"}),
            r"input: a spatial linkage is driven by .* P is a joint of type C \(its turn or its slide alone",
        ),
        (
            lambda s: s["joints"]["P"].update(type="C") or s.update(input={"joint": "P"}),
            r"input\.type: joint P is cylindrical: say which of its coordinates",
        ),
        (lambda s: s.update(input={"type": "revolute", "joint": "P"}), r"'revolute' does not match joint P of type P"),
        (lambda s: s.update(input={"type": "prismatic", "joint": "A"}), r"'prismatic' does not match joint A"),
        (lambda s: s.update(input={"joint": "Z"}), r"input\.joint: 'Z' is not a joint of this linkage"),
        (lambda s: s.update(input={"joint": "B"}), r"input\.joint: .* B is a joint of type S between moving links"),
    ],
)
def test_bad_prismatic_and_cylindrical_descriptions_name_the_item(change, message):
    spec = slider_crank_spec()[0]
    change(spec)
    with pytest.raises(L.LinkageError, match=message):
        L.Linkage.from_dict(spec)


def test_prismatic_and_cylindrical_linkages_round_trip_through_their_description():
    for lk in (dm.examples.rscr(), L.Linkage.from_dict(slider_crank_spec(driven="slider")[0])):
        back = L.Linkage.from_dict(lk.to_dict())
        assert back.names == lk.names and back.links == lk.links and back.topology == lk.topology
        # an axis point is written as a direction from its joint and read back as joint + direction: to an ulp
        # (bitwise on one CPU, an ulp off on another: where XLA contracts the product into an FMA)
        scale = float(np.max(np.abs(np.asarray(lk.coords))))
        np.testing.assert_allclose(
            np.asarray(back.coords), np.asarray(lk.coords), rtol=0, atol=2 * np.finfo(float).eps * scale
        )

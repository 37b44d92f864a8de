"""Loads across a joint: torsion springs, torsion dampers, Coulomb friction and end
stops. Each is checked against a model that does not share its code: a parallelogram
four-bar (its coupler translates, so its generalised inertia is a constant and every
joint turns by ±u) reduces to a one-degree oscillator, solved in closed form or by
SciPy; the static motor torque against the virtual work of an energy computed from
the configurations alone; gradients against central differences."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import diffmech as dm
from diffmech import linkage as L

A, B = 0.5, 1.0  # the parallelogram's crank (= rocker) and coupler (= ground)
MASS, INERTIA = (0.3, 0.7, 0.4), (0.01, 0.05, 0.02)
# the generalised inertia: the crank and the rocker turn about their pivots, the coupler translates
M = INERTIA[0] + MASS[0] * (A / 2) ** 2 + INERTIA[2] + MASS[2] * (A / 2) ** 2 + MASS[1] * A**2
TS = jnp.linspace(0.0, 3.0, 31)
TIGHT = dict(rtol=1e-12, atol=1e-14)


def parallelogram(spring=2.0, damping=0.0, friction=0.0, speed=0.01, stop=(-np.pi, np.pi), stop_k=1.0):
    """The parallelogram with a torsion spring across the crank's pivot A, a damper
    across the rocker's pivot D, friction across the coupler–rocker pin C (from the
    rocker's side: its turn is −u) and a stop across A: every kind in one linkage, so
    one compiled program serves each case (their numbers are data)."""
    spec = {
        "name": "parallelogram",
        "joints": {
            "A": {"type": "R", "coords": [0.0, 0.0]},
            "B": {"type": "R", "coords": [0.0, A]},
            "C": {"type": "R", "coords": [B, A]},
            "D": {"type": "R", "coords": [B, 0.0]},
        },
        "links": {
            "crank": {"joints": ["A", "B"], "mass": MASS[0], "inertia": INERTIA[0], "com": [0.0, A / 2]},
            "coupler": {"joints": ["B", "C"], "mass": MASS[1], "inertia": INERTIA[1], "com": [B / 2, A]},
            "rocker": {"joints": ["C", "D"], "mass": MASS[2], "inertia": INERTIA[2], "com": [B, A / 2]},
            "ground": ["A", "D"],
        },
        "ground": "ground",
        "input": {"type": "revolute", "link": "crank", "joint": "A"},
        "gravity": [0.0, 0.0],
        "loads": [
            {"type": "torsion_spring", "joint": "A", "stiffness": spring},
            {"type": "torsion_damper", "joint": "D", "damping": damping},
            {"type": "friction", "joint": "C", "links": ["rocker", "coupler"], "torque": friction, "speed": speed},
            {"type": "stop", "joint": "A", "range": list(stop), "stiffness": stop_k},
        ],
    }
    return L.Linkage.from_dict(spec)


def _oscillator(force, u0, v0):
    """The one-degree model `M ü = force(u, u̇)` by SciPy's DOP853 at the saves."""
    sol = solve_ivp(
        lambda t, y: [y[1], force(y[0], y[1]) / M],
        (0.0, float(TS[-1])),
        [u0, v0],
        method="DOP853",
        t_eval=np.asarray(TS),
        rtol=1e-13,
        atol=1e-15,
    )
    return sol.y[0]


def test_joint_loads_on_a_parallelogram_match_the_one_degree_oscillator():
    k, c = 2.0, 0.05
    t = np.asarray(TS)
    w = np.sqrt(k / M)
    runs = {}
    # a torsion spring: u = u₀ cos ωt, ω = √(k/M)
    runs["spring"] = (parallelogram(spring=k), 0.3, 0.0, 0.3 * np.cos(w * t))
    # with a damper: the damped oscillator's closed form
    z = c / (2 * np.sqrt(k * M))
    wd = w * np.sqrt(1 - z**2)
    damped = 0.3 * np.exp(-z * w * t) * (np.cos(wd * t) + z * w / wd * np.sin(wd * t))
    runs["damper"] = (parallelogram(spring=k, damping=c), 0.3, 0.0, damped)
    # Coulomb's friction smoothed over 0.05 rad/s, and a stop at ±0.2 rad (no spring)
    fr = lambda u, v: -k * u - 0.02 * np.tanh(v / 0.05)  # noqa: E731
    runs["friction"] = (parallelogram(spring=k, friction=0.02, speed=0.05), 0.3, 0.0, _oscillator(fr, 0.3, 0.0))
    st = lambda u, v: -400.0 * (max(u - 0.2, 0.0) - max(-0.25 - u, 0.0))  # noqa: E731
    stop = parallelogram(spring=0.0, stop=(-0.25, 0.2), stop_k=400.0)
    runs["stop"] = (stop, 0.0, 1.0, _oscillator(st, 0.0, 1.0))
    for name, (lk, u0, v0, expected) in runs.items():
        sim = L.simulate_dynamics(lk, u0=u0, udot0=v0, t1=float(TS[-1]), saveat=TS, **TIGHT)
        assert bool(jnp.all(sim.converged)), name
        np.testing.assert_allclose(np.asarray(sim.u), expected, rtol=0, atol=1e-9, err_msg=name)
        # the energy balance: E(t) − E(0) = −(the damper's and the friction's dissipation)
        assert float(sim.energy_error) <= 1e-8, (name, float(sim.energy_error))
    assert float(np.max(np.asarray(runs["stop"][3]))) > 0.2 and float(np.min(runs["stop"][3])) < -0.25  # it hit both
    lost = L.simulate_dynamics(runs["friction"][0], u0=0.3, udot0=0.0, t1=3.0, saveat=TS, **TIGHT).dissipated
    # the friction's work, from the independent model's path: ∫ T tanh(u̇/ω) u̇ dt
    sol = solve_ivp(
        lambda t, y: [y[1], fr(y[0], y[1]) / M, 0.02 * np.tanh(y[1] / 0.05) * y[1]],
        (0.0, 3.0),
        [0.3, 0.0, 0.0],
        method="DOP853",
        rtol=1e-13,
        atol=1e-15,
    )
    assert float(lost[-1]) == pytest.approx(sol.y[2, -1], rel=0, abs=1e-9)


def test_joint_load_gradients_match_central_differences():
    # d u(t)/d(stiffness, damping, friction) through the integration (forward mode: its
    # program compiles in a third of reverse mode's time), against central differences
    # of the whole simulation (the eager call's program, shared with the oscillator test)
    lk = parallelogram(spring=2.0, damping=0.05, friction=0.02, speed=0.05)
    kw = dict(u0=0.3, udot0=0.0, t1=float(TS[-1]), saveat=TS, **TIGHT)

    def path(params):
        return L.simulate_dynamics(eqx.tree_at(lambda k: k.load_params, lk, params), **kw).u

    p0 = lk.load_params
    J = np.asarray(
        jax.jit(
            jax.jacfwd(
                lambda p: (
                    L.simulate_dynamics(
                        eqx.tree_at(lambda k: k.load_params, lk, p), adjoint=diffrax.ForwardMode(), **kw
                    ).u
                )
            )
        )(p0)
    )
    h = 1e-5
    for row in range(3):  # the spring's, the damper's and the friction's first parameter
        e = jnp.zeros_like(p0).at[row, 0].set(h)
        fd = (np.asarray(path(p0 + e)) - np.asarray(path(p0 - e))) / (2 * h)
        np.testing.assert_allclose(J[:, row, 0], fd, rtol=0, atol=1e-6 * np.max(np.abs(fd)), err_msg=str(row))
        assert np.max(np.abs(fd)) > 1e-2


def _turn(X, a, b, c, d):
    """The turn of the line c→d relative to the line a→b (numpy, from coordinates)."""
    ea, eb = X[b, :2] - X[a, :2], X[d, :2] - X[c, :2]
    return np.arctan2(ea[0] * eb[1] - ea[1] * eb[0], ea @ eb)


def test_static_joint_loads_equal_virtual_work_and_their_couples_balance():
    # the bundled four-bar, massless, held by its motor against a torsion spring across C
    # (rocker relative to coupler), a stop across D engaged, and friction across B moving:
    # the motor torque from the joint-force solve is the slope of the energy computed from
    # the configurations alone (central differences), plus the friction's virtual work
    spec = dm.examples.fourbar().to_dict()
    spec["loads"] = [
        {"type": "torsion_spring", "joint": "C", "links": ["coupler", "rocker"], "stiffness": 3.0, "angle": 0.1},
        {"type": "stop", "joint": "D", "links": ["ground", "rocker"], "range": [-0.3, 0.05], "stiffness": 50.0},
    ]
    lk = L.Linkage.from_dict(spec)
    massless = eqx.tree_at(lambda k: (k.masses, k.inertias), lk, (0 * lk.masses, 0 * lk.inertias))
    u = np.linspace(0.2, 2.5, 7)
    tau = np.asarray(L.joint_forces(massless, u, 0.0, 0.0).torque)
    i = {n: lk.names.index(n) for n in "ABCD"}
    X0 = np.asarray(lk.initial())

    def energy(v):
        X = np.asarray(L.sweep(lk, inputs=np.concatenate([[0.0], v]), condition=False).coords[1:])
        out = []
        for Xk in X:
            phi = _turn(Xk, i["B"], i["C"], i["C"], i["D"]) - _turn(X0, i["B"], i["C"], i["C"], i["D"])
            psi = _turn(Xk, i["A"], i["D"], i["D"], i["C"]) - _turn(X0, i["A"], i["D"], i["D"], i["C"])
            out.append(1.5 * (phi - 0.1) ** 2 + 25.0 * (max(psi - 0.05, 0) ** 2 + max(-0.3 - psi, 0) ** 2))
        return np.asarray(out)

    h = 1e-6
    dE = (energy(u + h) - energy(u - h)) / (2 * h)
    np.testing.assert_allclose(tau, dE, rtol=0, atol=1e-6)
    assert np.ptp(dE) > 0.1  # the loads act, the stop among them
    # the description keeps them
    back = L.Linkage.from_dict(lk.to_dict())
    assert back.load_kinds == lk.load_kinds and bool(jnp.all(back.load_params == lk.load_params))
    # moving at u̇ against Coulomb's friction across B alone: the motor supplies
    # T tanh(φ′ u̇ / ω) φ′, φ′ the coupler's turn relative to the crank per unit input
    spec["loads"] = [{"type": "friction", "joint": "B", "torque": 0.4, "speed": 0.3}]
    rubbing = L.Linkage.from_dict(spec)
    rubbing = eqx.tree_at(lambda k: (k.masses, k.inertias), rubbing, (0 * lk.masses, 0 * lk.inertias))
    ud = 0.2
    tau = np.asarray(L.joint_forces(rubbing, u, ud, 0.0).torque)

    def turn(v):
        X = np.asarray(L.sweep(lk, inputs=np.concatenate([[0.0], v]), condition=False).coords[1:])
        return np.asarray([_turn(Xk, i["A"], i["B"], i["B"], i["C"]) for Xk in X])

    dphi = (turn(u + h) - turn(u - h)) / (2 * h)
    np.testing.assert_allclose(tau, 0.4 * np.tanh(dphi * ud / 0.3) * dphi, rtol=0, atol=1e-7)
    assert np.min(np.abs(tau)) > 1e-3


def test_joint_loads_keep_the_energy_balance_with_two_inputs():
    # the five-bar (two inputs, Lagrange's two equations) released with a torsion spring,
    # friction and a stop across its distal pin C, a damper across the second crank's pivot:
    # E(t) − E(0) = −(dissipated), the friction's share included
    spec = dm.examples.five_bar().to_dict()
    spec["loads"] = [
        {"type": "torsion_spring", "joint": "C", "stiffness": 4.0},
        {"type": "friction", "joint": "C", "torque": 0.05, "speed": 0.1},
        {"type": "stop", "joint": "C", "range": [-0.1, 0.1], "stiffness": 200.0},
        {"type": "torsion_damper", "joint": "E", "damping": 0.02},
    ]
    lk = L.Linkage.from_dict(spec)
    kw = dict(u0=jnp.zeros(2), udot0=jnp.asarray([0.5, -0.3]), t1=0.3, saveat=jnp.linspace(0.0, 0.3, 31), **TIGHT)
    sim = L.simulate_dynamics(lk, **kw)
    assert bool(jnp.all(sim.converged))
    assert float(sim.energy_error) <= 1e-8, float(sim.energy_error)
    assert float(sim.dissipated[-1]) > 1e-3  # the friction and the damper dissipate


@pytest.mark.parametrize(
    "load, match",
    [
        ({"type": "torsion_spring", "joint": "Q", "stiffness": 1.0}, r"loads\[0\].joint: a torsion_spring acts across"),
        ({"type": "torsion_spring", "joint": "P", "stiffness": 1.0}, r"loads\[0\].joint: a torsion_spring acts across"),
        ({"type": "torsion_spring", "joint": "A", "stiffness": -1.0}, r"loads\[0\].stiffness: must be ≥ 0"),
        ({"type": "torsion_spring", "joint": "A", "stiffness": 1.0, "angle": 4.0}, r"loads\[0\].angle: in \(−π, π\]"),
        ({"type": "torsion_damper", "joint": "A", "links": ["crank", "rocker"], "damping": 1.0}, r"not on both"),
        ({"type": "torsion_damper", "joint": "A", "links": ["crank", "crank"], "damping": 1.0}, r"two different"),
        ({"type": "friction", "joint": "A", "torque": 1.0, "speed": 0.0}, r"loads\[0\].speed: .* > 0"),
        ({"type": "stop", "joint": "A", "range": [0.2, 0.1], "stiffness": 1.0}, r"loads\[0\].range"),
        ({"type": "stop", "joint": "A", "range": [-0.2, 0.1]}, r"loads\[0\].stiffness: a finite number"),
        ({"type": "stop", "joint": "A", "range": [-0.2, 0.1], "stiffness": 0.0}, r"stiffness must be > 0"),
    ],
)
def test_bad_joint_loads_are_named(load, match):
    spec = dm.examples.fourbar().to_dict()
    spec["loads"] = [load]
    with pytest.raises(L.LinkageError, match=match):
        L.Linkage.from_dict(spec)


def test_a_joint_load_on_the_sphere_is_named():
    spec = dm.examples.load("spherical_rrpr").to_dict()
    j = next(n for n, v in spec["joints"].items() if v["type"] == "R")
    spec["loads"] = [{"type": "torsion_spring", "joint": j, "stiffness": 1.0}]
    with pytest.raises(L.LinkageError, match="acts across a planar joint; this linkage is spherical"):
        L.Linkage.from_dict(spec)


def test_joint_loads_export_to_mujoco_and_it_follows_the_same_motion(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    # the tree takes the loaded joints (A, D, C), the unloaded pin B closes the loop
    lk = parallelogram(spring=2.0, damping=0.05, friction=0.02, speed=0.05, stop=(-0.25, 0.2), stop_k=400.0)
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(lk, tmp_path / "p.xml", softness="stiff")))
    # read back, the loads are named as not carried over (a spatial linkage has none)
    note = L.from_mjcf(tmp_path / "p.xml").description
    for part in ("stiffness of A", "damping of D", "frictionloss of C", "range of A"):
        assert part in note, note
    assert "not read" not in L.from_mjcf(L.to_mjcf(dm.examples.fourbar(), tmp_path / "q.xml")).description
    jid = {n: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in "ACD"}
    assert min(jid.values()) >= 0 and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "B") < 0
    dof = {n: model.jnt_dofadr[j] for n, j in jid.items()}
    assert model.jnt_stiffness[jid["A"]] == 2.0 and model.dof_damping[dof["D"]] == 0.05
    assert model.dof_frictionloss[dof["C"]] == 0.02 and bool(model.jnt_limited[jid["A"]])
    np.testing.assert_array_equal(model.jnt_range[jid["A"]], [-0.25, 0.2])
    # the spring and the damper as MuJoCo applies them (its friction and limit off): the
    # same motion as diffmech's, to the stiff model's sag
    model.dof_frictionloss[dof["C"]] = 0.0
    model.jnt_limited[jid["A"]] = 0
    d = mujoco.MjData(model)
    d.qpos[model.jnt_qposadr[jid["A"]]] = 0.3
    d.qpos[model.jnt_qposadr[jid["D"]]] = 0.3
    d.qpos[model.jnt_qposadr[jid["C"]]] = -0.3  # the coupler keeps its heading
    sim = L.simulate_dynamics(parallelogram(spring=2.0, damping=0.05), u0=0.3, udot0=0.0, t1=3.0, saveat=TS, **TIGHT)
    got = []
    for t in np.asarray(TS):
        while d.time < t - 1e-12:
            mujoco.mj_step(model, d)
        got.append(d.qpos[model.jnt_qposadr[jid["A"]]])
    err = np.max(np.abs(np.asarray(got) - np.asarray(sim.u)))
    assert err <= 1e-4 and float(np.ptp(np.asarray(sim.u))) > 0.3, err
    # a loop must cut one of its joints: a load across every joint cannot be exported
    spec = lk.to_dict()
    spec["loads"].append({"type": "torsion_damper", "joint": "B", "damping": 1.0})
    with pytest.raises(L.LinkageError, match="closes a loop, and MuJoCo.s joint elements act on"):
        L.to_mjcf(L.Linkage.from_dict(spec), tmp_path / "cut.xml")


SLIDE_MASSES = (0.4, 0.3, 0.5)  # the input block, the coupler, the second block: all translate together


def double_slider(spring=3.0, damping=0.0, friction=0.0, stop=(-1.0, 1.0), stop_k=1.0):
    """Two blocks on parallel lines joined by a coupler: every link translates with the
    input block, so the generalised inertia is the total mass and the loads across the
    prismatic joints make a one-degree oscillator: a spring across the second block's
    slide and a damper, friction and a stop across the input's."""
    m1, mc, m2 = SLIDE_MASSES
    return L.Linkage.from_dict(
        {
            "name": "double slider",
            "joints": {
                "P1": {"type": "P", "coords": [0.0, 1.0, 0.0]},  # y = 0, sliding along +x
                "P2": {"type": "P", "coords": [0.0, 1.0, -0.5]},  # y = 0.5
                "B1": {"type": "R", "coords": [0.0, 0.0]},
                "B2": {"type": "R", "coords": [0.3, 0.5]},
            },
            "links": {
                "ground": ["P1", "P2"],
                "block1": {"joints": ["P1", "B1"], "mass": m1, "com": "B1", "inertia": 0.01},
                "coupler": {"joints": ["B1", "B2"], "mass": mc, "com": [0.15, 0.25], "inertia": 0.02},
                "block2": {"joints": ["P2", "B2"], "mass": m2, "com": "B2", "inertia": 0.01},
            },
            "ground": "ground",
            "input": "block1",
            "gravity": [0.0, 0.0],
            "loads": [
                {"type": "linear_spring", "joint": "P2", "stiffness": spring, "position": 0.05},
                {"type": "linear_damper", "joint": "P1", "damping": damping},
                {"type": "friction", "joint": "P1", "torque": friction, "speed": 0.05},
                {"type": "stop", "joint": "P1", "range": list(stop), "stiffness": stop_k},
            ],
        }
    )


def test_linear_loads_across_prismatic_joints_match_the_one_degree_oscillator(tmp_path):
    m, k, c = sum(SLIDE_MASSES), 3.0, 0.2
    t = np.asarray(TS)
    w, z = np.sqrt(k / m), c / (2 * np.sqrt(k * m))
    wd = w * np.sqrt(1 - z**2)
    # released 0.2 from the spring's free position 0.05: the damped oscillator's closed form
    exact = 0.05 + 0.2 * np.exp(-z * w * t) * (np.cos(wd * t) + z * w / wd * np.sin(wd * t))
    lk = double_slider(spring=k, damping=c)
    sim = L.simulate_dynamics(lk, u0=0.25, udot0=0.0, t1=float(TS[-1]), saveat=TS, **TIGHT)
    np.testing.assert_allclose(np.asarray(sim.u), exact, rtol=0, atol=1e-9)
    assert float(sim.energy_error) <= 1e-8
    # friction and a stop, against SciPy's integration of the one-degree model
    f = lambda u, v: -k * (u - 0.05) - 0.3 * np.tanh(v / 0.05) - 300.0 * max(u - 0.3, 0.0)  # noqa: E731
    sol = solve_ivp(
        lambda _, y: [y[1], f(y[0], y[1]) / m], (0.0, 3.0), [0.0, 1.2], "DOP853", t_eval=t, rtol=1e-13, atol=1e-15
    )
    hit = L.simulate_dynamics(
        double_slider(spring=k, friction=0.3, stop=(-1.0, 0.3), stop_k=300.0),
        u0=0.0,
        udot0=1.2,
        t1=3.0,
        saveat=TS,
        **TIGHT,
    )
    np.testing.assert_allclose(np.asarray(hit.u), sol.y[0], rtol=0, atol=1e-9)
    assert float(np.max(sol.y[0])) > 0.3 and float(hit.energy_error) <= 1e-8
    # held still at u, the input's force is the spring's, k (u − 0.05): virtual work
    u = jnp.asarray([-0.1, 0.0, 0.2])
    np.testing.assert_allclose(L.joint_forces(lk, u).torque, k * (np.asarray(u) - 0.05), rtol=1e-12, atol=1e-15)
    again = L.Linkage.from_dict(lk.to_dict())
    assert again.load_kinds == lk.load_kinds and np.array_equal(
        np.asarray(again.load_params), np.asarray(lk.load_params)
    )
    # MuJoCo's run of the export: the slide's stiffness, springref and damping
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(double_slider(spring=k, damping=c), tmp_path / "s.xml")))
    p2 = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "P2")
    assert model.jnt_stiffness[p2] == k and model.jnt_type[p2] == mujoco.mjtJoint.mjJNT_SLIDE
    d = mujoco.MjData(model)
    for name in ("P1", "P2"):
        d.qpos[model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)]] = 0.25
    got = []
    for ti in t:
        while d.time < ti - 1e-12:
            mujoco.mj_step(model, d)
        got.append(d.qpos[model.jnt_qposadr[p2]])
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-4)  # the stiff model's softness


def test_an_event_stop_ends_the_motion_where_the_closed_form_reaches_it():
    m, k = sum(SLIDE_MASSES), 3.0
    spec = double_slider(spring=k).to_dict()
    spec["loads"][3] = {"type": "stop", "joint": "P1", "range": [-1.0, 0.3], "event": True}
    lk = L.Linkage.from_dict(spec)
    assert lk.to_dict()["loads"][3] == {**spec["loads"][3], "links": ["ground", "block1"]}
    sim = L.simulate_dynamics(lk, u0=0.0, udot0=1.2, t1=3.0, saveat=TS, **TIGHT)
    # undamped about 0.05: u = 0.05 − 0.05 cos ωt + (1.2/ω) sin ωt reaches 0.3 first at t*
    w = np.sqrt(k / m)
    t = np.asarray(TS)
    exact = 0.05 - 0.05 * np.cos(w * t) + 1.2 / w * np.sin(w * t)
    t_star = float(t[np.argmax(exact > 0.3)])  # the first save past the stop
    ok = np.asarray(sim.converged)
    assert ok[t < t_star].all() and not ok[t >= t_star].any()
    np.testing.assert_allclose(np.asarray(sim.u)[ok], exact[ok], rtol=0, atol=1e-9)
    assert dm.RESULTS.name(sim.status)[int(np.argmin(ok))] == "end_stop"
    with pytest.raises(L.LinkageError, match=r"loads\[3\]\.stiffness: a stop that is an event has no stiffness"):
        L.Linkage.from_dict({**spec, "loads": spec["loads"][:3] + [{**spec["loads"][3], "stiffness": 1.0}]})


def test_springs_and_dampers_between_points_export_as_mujoco_tendons_and_it_follows(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    spec = parallelogram(spring=0.0).to_dict()
    spec["loads"] = [
        {"type": "spring", "joints": ["A", "C"], "links": ["ground", "rocker"], "stiffness": 3.0, "length": 0.9},
        {"type": "damper", "joints": ["B", "D"], "links": ["crank", "ground"], "damping": 0.05},
        {"type": "force", "joint": "B", "link": "crank", "force": [0.0, 0.0]},
    ]
    lk = L.Linkage.from_dict(spec)
    path = L.to_mjcf(lk, tmp_path / "t.xml")
    assert "not exported: the constant force on link crank" in path.read_text()
    model = mujoco.MjModel.from_xml_path(str(path))
    assert model.ntendon == 2
    np.testing.assert_array_equal(model.tendon_stiffness, [3.0, 0.0])
    np.testing.assert_array_equal(model.tendon_damping, [0.0, 0.05])
    assert model.tendon_lengthspring[0, 0] == 0.9
    # released at the description's configuration (MuJoCo's qpos0), the spring 0.22 longer
    # than its rest length: the same motion as diffmech's, to the stiff model's sag
    a = model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "A")]
    d = mujoco.MjData(model)
    sim = L.simulate_dynamics(lk, udot0=0.0, t1=3.0, saveat=TS, **TIGHT)
    got = []
    for t in np.asarray(TS):
        while d.time < t - 1e-12:
            mujoco.mj_step(model, d)
        got.append(d.qpos[a])
    assert float(np.ptp(np.asarray(sim.u))) > 0.3
    np.testing.assert_allclose(got, np.asarray(sim.u), rtol=0, atol=1e-4)

"""Gear pairs and racks in a planar linkage. Each is checked against a formulation
that does not share its code: the turns against Willis' formula and the radii's
ratio, the links a gear drives against the intersection of two circles, the rack's
slide against the pinion's arc length, the effort and the tooth forces against the
closed-form inertia of a planetary train and its sun's balance, the dynamics against
the work of a constant torque, and gradients against central differences."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import central_diff

# the linkage worker: notebook 09's planetary train runs after these tests, on their programs
pytestmark = pytest.mark.xdist_group("linkage")

from diffmech import examples, linkage as L
from diffmech.linkage import LinkageError


def _circles(p, q, rp, rq, near):
    """The intersection of the circles (p, rp) and (q, rq) nearer `near` (`(N, 2)`)."""
    d = q - p
    dd = np.linalg.norm(d, axis=-1, keepdims=True)
    a = (rp**2 - rq**2 + dd**2) / (2 * dd)
    h = np.sqrt(rp**2 - a**2)
    base = p + a * d / dd
    n = np.stack([-d[:, 1], d[:, 0]], axis=1) / dd
    both = np.stack([base + h * n, base - h * n])
    pick = np.argmin(np.linalg.norm(both - near, axis=-1), axis=0)
    return both[pick, np.arange(len(p))]


def five_bar(ra=0.1, rb=0.15):
    """A geared five-bar: cranks about A and B geared together (|AB| = |ra + rb|), two
    couplers joined at E; the first crank is the input."""
    return L.Linkage.from_dict(
        {
            "name": "geared five-bar",
            "joints": {
                "A": {"type": "R", "coords": [0.0, 0.0]},
                "B": {"type": "R", "coords": [0.25, 0.0]},
                "C": {"type": "R", "coords": [0.0, 0.1]},
                "D": {"type": "R", "coords": [0.25, 0.12]},
                "E": {"type": "R", "coords": [0.15, 0.35]},
            },
            "links": {"ground": ["A", "B"], "c1": ["A", "C"], "c2": ["B", "D"], "u1": ["C", "E"], "u2": ["D", "E"]},
            "ground": "ground",
            "input": "c1",
            "gears": [{"links": ["c1", "c2"], "joints": ["A", "B"], "radii": [ra, rb]}],
        }
    )


@pytest.mark.parametrize("ra, rb", [(0.1, 0.15), (-0.35, 0.1)], ids=["external", "internal"])
def test_geared_five_bar_follows_the_ratio_and_closes_as_two_circles_say(ra, rb):
    lk = five_bar(ra, rb)
    u = np.linspace(0.0, 4 * np.pi, 9)  # two turns: a ratio of 3/2 or 7/2 is no function of the points
    m = L.sweep(lk, inputs=jnp.asarray(u))
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    X, n = np.asarray(m.coords)[:, :, :2], lk.names
    X0 = np.asarray(lk.coords)[:, :2]
    turn = -(ra / rb) * u  # rolling without slip: ra φa + rb φb = 0
    D0 = X0[n.index("D")] - X0[n.index("B")]
    D = X0[n.index("B")] + np.stack(
        [np.cos(turn) * D0[0] - np.sin(turn) * D0[1], np.sin(turn) * D0[0] + np.cos(turn) * D0[1]], axis=1
    )
    np.testing.assert_allclose(X[:, n.index("D")], D, rtol=0, atol=1e-12)
    lengths = [np.linalg.norm(X0[n.index(a)] - X0[n.index("E")]) for a in ("C", "D")]
    E = _circles(X[:, n.index("C")], X[:, n.index("D")], *lengths, near=X[:, n.index("E")])
    np.testing.assert_allclose(X[:, n.index("E")], E, rtol=0, atol=1e-12)
    again = L.Linkage.from_dict(lk.to_dict())
    assert again.gears == lk.gears and np.array_equal(np.asarray(again.gear_params), np.asarray(lk.gear_params))


def test_a_gear_ratio_is_differentiable_and_batched():
    lk = five_bar()

    def ex(p):  # E's x at u = 1 for gear parameters p (the ratio -ra/rb moves the second crank)
        design = eqx.tree_at(lambda k: k.gear_params, lk, p)
        return L.sweep_functional(design, jnp.asarray([1.0]), condition=False).coords[0, lk.names.index("E"), 0]

    p0 = lk.gear_params
    g = jax.grad(ex)(p0)
    fd = central_diff(lambda r: ex(p0.at[0, 0].set(r)), p0[0, 0])
    np.testing.assert_allclose(g[0, 0], fd, rtol=1e-6)
    assert float(jnp.abs(g[0, 2])) == 0.0  # the pressure angle moves nothing
    batch = jnp.stack([p0, p0.at[0, 0].set(0.12), p0.at[0, 0].set(0.08)])
    np.testing.assert_allclose(jax.vmap(ex)(batch), [ex(b) for b in batch], rtol=0, atol=1e-13)


RS, RP, RR = 0.1, 0.05, -0.2  # sun, planet, ring (internal) pitch radii
IS, IA, IP, MP = 2e-3, 5e-3, 1e-3, 0.4  # sun, arm, planet inertias; the planet's mass


def planetary(ring_fixed=True):
    """A planetary train: the sun and the arm turn about O, the planet about P on the
    arm, the ring about O. The ring is the ground (the sun the input), or free (the
    sun and the arm the inputs) and turning a four-bar's crank O–R (rocker S–Q)."""
    joints = {"O": {"type": "R", "coords": [0.0, 0.0]}, "P": {"type": "R", "coords": [RS + RP, 0.0]}}
    links = {
        "ground": ["O"],
        "sun": {"joints": ["O"], "mass": 1.0, "com": "O", "inertia": IS},
        "arm": {"joints": ["O", "P"], "mass": 0.5, "com": "O", "inertia": IA},
        "planet": {"joints": ["P"], "mass": MP, "com": "P", "inertia": IP},
    }
    ring = "ground"
    if not ring_fixed:
        ring = "ring"
        joints |= {k: {"type": "R", "coords": c} for k, c in (("R", [0.0, 0.3]), ("S", [0.5, 0.45]), ("Q", [0.6, 0.0]))}
        links |= {"ground": ["O", "Q"], "ring": ["O", "R"], "coupler": ["R", "S"], "rocker": ["S", "Q"]}
    spec = {
        "name": "planetary reducer",
        "joints": joints,
        "links": links,
        "ground": "ground",
        "inputs": ["sun"] if ring_fixed else ["sun", "arm"],
        "gravity": [0.0, 0.0],
        "gears": [
            {"links": ["sun", "planet"], "joints": ["O", "P"], "radii": [RS, RP]},
            {"links": ["planet", ring], "joints": ["P", "O"], "radii": [RP, RR]},
        ],
    }
    return L.Linkage.from_dict(spec)


def _turn(X, lk, link, a, b):
    """The turn of a link from the description's configuration: its segment a→b."""
    n = lk.names
    d, d0 = X[:, n.index(b)] - X[:, n.index(a)], np.asarray(lk.coords)[n.index(b)] - np.asarray(lk.coords)[n.index(a)]
    return np.angle(np.exp(1j * (np.arctan2(d[:, 1], d[:, 0]) - np.arctan2(d0[1], d0[0]))))


def test_planetary_trains_turn_as_willis_formula_says():
    lk = planetary()
    u = np.linspace(0.0, 4 * np.pi, 49)  # (notebook 09's sweep: one program)
    X = np.asarray(L.sweep(lk, inputs=jnp.asarray(u)).coords)[:, :, :2]
    arm = u * RS / (RS + abs(RR))  # Willis with the ring fixed: (0 − ωa) / (ωs − ωa) = −Ns / Nr
    planet = arm - (RS / RP) * (u - arm)  # (ωp − ωa) / (ωs − ωa) = −Ns / Np
    wrap = lambda a: np.angle(np.exp(1j * a))  # noqa: E731
    np.testing.assert_allclose(wrap(_turn(X, lk, "arm", "O", "P") - arm), 0.0, atol=1e-12)
    np.testing.assert_allclose(wrap(_turn(X, lk, "planet", "P", "planet.mark") - planet), 0.0, atol=1e-12)

    lk2 = planetary(ring_fixed=False)  # a differential: sun and arm in, the ring turns a four-bar
    us = np.stack([np.linspace(0.0, 3.0, 5), np.linspace(0.0, -1.0, 5)], axis=1)
    m = L.sweep(lk2, inputs=jnp.asarray(us))
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    X = np.asarray(m.coords)[:, :, :2]
    ring = us[:, 1] - (RS / abs(RR)) * (us[:, 0] - us[:, 1])  # (ωr − ωa) / (ωs − ωa) = −Ns / Nr
    np.testing.assert_allclose(wrap(_turn(X, lk2, "ring", "O", "R") - ring), 0.0, atol=1e-12)
    n, X0 = lk2.names, np.asarray(lk2.coords)[:, :2]
    lengths = [np.linalg.norm(X0[n.index(a)] - X0[n.index("S")]) for a in ("R", "Q")]
    S = _circles(X[:, n.index("R")], X[:, n.index("Q")], *lengths, near=X[:, n.index("S")])
    np.testing.assert_allclose(X[:, n.index("S")], S, rtol=0, atol=1e-12)


KA = RS / (RS + abs(RR))  # the arm's turn per sun turn
KP = KA - (RS / RP) * (1 - KA)  # the planet's
D = RS + RP  # the planet's centre from O
M = IS + IA * KA**2 + IP * KP**2 + MP * (D * KA) ** 2  # the train's inertia at the sun


def test_planetary_effort_and_tooth_forces_match_its_closed_form_inertia():
    lk = planetary()
    acc = 1.3
    m = L.sweep(lk, inputs=jnp.linspace(0.0, 4 * np.pi, 49))  # (notebook 09's motion and joint forces)
    jf = L.joint_forces(lk, m, 0.7, acc)
    np.testing.assert_allclose(jf.torque, M * acc, rtol=1e-12)
    # the sun's balance about O: the motor's torque less the planet's teeth's moment turns the sun
    X = np.asarray(m.coords)[:, :, :2]
    e = X[:, lk.names.index("P")] / D
    pitch = RS * e
    F = np.asarray(jf.teeth[:, 0])  # the sun's teeth on the planet's
    moment_on_sun = -(pitch[:, 0] * F[:, 1] - pitch[:, 1] * F[:, 0])
    np.testing.assert_allclose(np.asarray(jf.torque) + moment_on_sun, IS * acc, rtol=1e-12)
    tangential = np.abs(e[:, 0] * F[:, 1] - e[:, 1] * F[:, 0])
    np.testing.assert_allclose(np.abs(np.sum(e * F, axis=1)), np.tan(np.radians(20)) * tangential, rtol=1e-12)
    assert np.all(np.sum(e * F, axis=1) > 0)  # it pushes the planet outwards, away from the sun
    # the ground is the ring: its teeth's reaction is part of the shaking moment, −dH/dt about O
    dH = acc * (IS + IA * KA + IP * KP + MP * D**2 * KA)
    np.testing.assert_allclose(jf.shaking_moment, -dH, rtol=1e-12)


def test_planetary_dynamics_under_a_constant_torque_is_the_closed_form():
    lk = planetary()
    tau, ts = 0.05, jnp.linspace(0.0, 2.0, 5)
    sim = L.simulate_dynamics(lk, u0=0.0, udot0=0.0, t1=2.0, saveat=ts, drive=L.Drive(torque=L.ConstantTorque(tau)))
    np.testing.assert_allclose(sim.u, tau * ts**2 / (2 * M), rtol=1e-9, atol=1e-14)


R_PINION = 0.02


def steering():
    """A rack and pinion turning a steering arm N–K through a tie rod T–K."""
    return L.Linkage.from_dict(
        {
            "name": "rack and pinion steering",
            "joints": {
                "O": {"type": "R", "coords": [0.0, 0.0]},
                "S": {"type": "P", "coords": [0.0, 1.0, 0.05]},  # the rack's line y = −0.05, slide along +x
                "T": {"type": "R", "coords": [0.2, -0.05]},
                "K": {"type": "R", "coords": [0.3, 0.05]},
                "N": {"type": "R", "coords": [0.4, 0.05]},
            },
            "links": {
                "ground": ["O", "S", "N"],
                "pinion": {"joints": ["O"], "mass": 0.1, "com": "O", "inertia": 1e-4},
                "rack": {"joints": ["S", "T"], "mass": 0.5, "com": "T", "inertia": 1e-3},
                "tie": ["T", "K"],
                "arm": ["K", "N"],
            },
            "ground": "ground",
            "input": "pinion",
            "gravity": [0.0, 0.0],
            "gears": [{"type": "rack", "links": ["pinion", "rack"], "joints": ["O", "S"], "radii": [R_PINION]}],
        }
    )


def test_rack_and_pinion_steering_slides_the_rack_by_the_pinions_arc():
    r, lk = R_PINION, steering()
    u = np.linspace(-0.5, 2.5, 7)
    m = L.sweep(lk, inputs=jnp.asarray(u))
    assert bool(np.all(m.converged)) and float(np.max(m.residual)) <= 1e-10
    X, n = np.asarray(m.coords)[:, :, :2], lk.names
    # the rack lies below the pinion: turning anticlockwise carries its pitch line to +x by r u
    np.testing.assert_allclose(X[:, n.index("T")], np.stack([0.2 + r * u, np.full_like(u, -0.05)], 1), atol=1e-14)
    X0 = np.asarray(lk.coords)[:, :2]
    lengths = [np.linalg.norm(X0[n.index(a)] - X0[n.index("K")]) for a in ("T", "N")]
    K = _circles(X[:, n.index("T")], X[:, n.index("N")], *lengths, near=X[:, n.index("K")])
    np.testing.assert_allclose(X[:, n.index("K")], K, rtol=0, atol=1e-12)


def test_gears_export_to_mujoco_as_tendons_and_it_runs_the_same_train(tmp_path):
    mujoco = pytest.importorskip("mujoco")
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(planetary(), tmp_path / "p.xml", softness="stiff")))
    assert model.ntendon == 2 and model.neq == 2
    d = mujoco.MjData(model)
    sun = model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "O")]
    tau, got, ts = 0.05, [], np.linspace(0.0, 2.0, 5)
    for t in ts:
        while d.time < t - 1e-12:
            d.ctrl[0] = tau
            mujoco.mj_step(model, d)
        got.append(d.qpos[sun])
    np.testing.assert_allclose(got, tau * ts**2 / (2 * M), rtol=1e-6, atol=1e-9)  # MuJoCo's stiff constraint
    # a rack: its slide is its P joint's coordinate, the pinion's turn its hinge's
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(steering(), tmp_path / "s.xml", softness="stiff")))
    d = mujoco.MjData(model)
    qa = {n: model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in ("O", "S")}
    while d.time < 0.2:
        d.ctrl[0] = 2e-3
        mujoco.mj_step(model, d)
    assert abs(d.qpos[qa["O"]]) > 0.1
    np.testing.assert_allclose(d.qpos[qa["S"]], R_PINION * d.qpos[qa["O"]], rtol=1e-6)


def _with(spec, **gear):
    return {**spec, "gears": [{**spec["gears"][0], **gear}] + spec["gears"][1:]}


def test_bad_gears_are_named():
    base = five_bar().to_dict()
    with pytest.raises(LinkageError, match=r"gears\[0\]\.radii: meshing pitch circles .* 0\.3 apart"):
        L.Linkage.from_dict(_with(base, radii=[0.1, 0.2]))
    with pytest.raises(LinkageError, match=r"gears\[0\]\.radii: two internal gears"):
        L.Linkage.from_dict(_with(base, radii=[-0.1, -0.15]))
    with pytest.raises(LinkageError, match=r"gears\[0\]: joints A and C must both be on one other link"):
        L.Linkage.from_dict(_with(base, links=["c1", "u1"], joints=["A", "C"]))
    with pytest.raises(LinkageError, match=r"gears\[0\]\.joints: C is not on link c2"):
        L.Linkage.from_dict(_with(base, joints=["A", "C"]))
    with pytest.raises(LinkageError, match=r"gears\[0\]\.pressure_angle"):
        L.Linkage.from_dict(_with(base, pressure_angle=2.0))
    # both cranks inputs: the pair would lock them
    with pytest.raises(LinkageError, match=r"over-constrain"):
        L.Linkage.from_dict({**base, "input": ["c1", "c2"]})
    # gears on the couplers, about the joint they share with the cranks: the closure solves them
    coupler = _with(base, links=["u1", "u2"], joints=["E", "E"])
    with pytest.raises(LinkageError, match=r"must both be on one other link|turn on no link"):
        L.Linkage.from_dict(coupler)
    with pytest.raises(LinkageError, match=r"gears: gears and racks are planar"):
        L.Linkage.from_dict({**examples.spherical_rrpr().to_dict(), "gears": base["gears"]})

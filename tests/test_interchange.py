"""Interchange: a linkage exported to MuJoCo (MJCF) and read back through MuJoCo's own
compiler. MuJoCo checks the export (its constraint violation at qpos0, its own
dynamics of the exported model against diffmech's), the round trip checks the import."""

import re

import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import linkage as L

mujoco = pytest.importorskip("mujoco")


def _equality_violation(model):
    d = mujoco.MjData(model)
    mujoco.mj_forward(model, d)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    return int(np.sum(rows)), float(np.max(np.abs(d.efc_pos[rows]))) if np.any(rows) else 0.0


def _same_linkage(a, b):
    """Two linkages alike by name: joints, their coordinates, links, inputs, inertials. A
    P or C joint's side B copies (`<joint>.<link>`) are compared as the joint's points:
    which of its two links carries the axis depends on the links' order, not on the
    mechanism."""
    slides = {n for n, t in zip(a.names, a.types) if t in ("P", "C")}

    def norm(n):
        for j in slides:
            if n.startswith(j + ".axis."):
                return j + ".axis"
            if n.startswith(j + ".") and n != j + ".axis":
                return j
        return n

    assert {norm(n) for n in a.names} == {norm(n) for n in b.names}
    ca, cb = np.asarray(a.initial()), np.asarray(b.initial())
    for n in b.names:
        np.testing.assert_allclose(cb[b.names.index(n)], ca[a.names.index(norm(n))], atol=1e-12, err_msg=n)
    links = lambda lk: {frozenset(norm(lk.names[j]) for j in m) for m in lk.links}  # noqa: E731
    assert links(a) == links(b)
    assert [a.to_dict().get(k) for k in ("input", "inputs")] == [b.to_dict().get(k) for k in ("input", "inputs")]
    for k, m in enumerate(a.links):
        (kb,) = [i for i, mm in enumerate(b.links) if {norm(b.names[j]) for j in mm} == {norm(a.names[j]) for j in m}]
        np.testing.assert_allclose(float(b.masses[kb]), float(a.masses[k]), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(b.coms[kb]), np.asarray(a.coms[k]), atol=1e-12)
        np.testing.assert_allclose(np.asarray(b.inertias[kb]), np.asarray(a.inertias[k]), atol=1e-12)


@pytest.mark.parametrize("name", ["delta", "bennett", "rscr", "cardan"])
def test_an_exported_linkage_is_closed_at_qpos0_and_reads_back_the_same(name, tmp_path):
    # MuJoCo compiles the export; at qpos0 (the linkage's initial configuration) every
    # cut joint's connect holds to round-off; MuJoCo's compiler reads it back to the
    # same linkage (an R joint cut as two connects on its axis comes back an R joint)
    lk = dm.examples.load(name)
    path = L.to_mjcf(lk, tmp_path / f"{name}.xml")
    model = mujoco.MjModel.from_xml_path(str(path))
    rows, violation = _equality_violation(model)
    cut = {"delta": 5 * 3, "bennett": 2 * 3, "rscr": 3, "cardan": 2 * 3}[name]
    assert rows == cut and violation <= 1e-14, (rows, violation)
    assert model.nu == lk.n_inputs
    _same_linkage(lk, L.from_mjcf(path))


def _tracer_velocities(model, d, lk, udot):
    """MuJoCo's velocities of the tracers' sites when the input joints move at `udot`
    and every equality holds to first order: the joint rates solve `J_eq q̇ = 0` with
    the inputs' rates fixed (least squares: redundant rows, idle spins at their
    least norm)."""
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    J = np.asarray(d.efc_J).reshape(-1, model.nv)[rows]
    dofs = [int(model.jnt_dofadr[model.actuator_trnid[a, 0]]) for a in range(model.nu)]
    free = [i for i in range(model.nv) if i not in dofs]
    qdot = np.zeros(model.nv)
    qdot[dofs] = udot
    qdot[free] = np.linalg.lstsq(J[:, free], -J[:, dofs] @ np.asarray(udot), rcond=None)[0]
    out = {}
    for j, t in enumerate(lk.types):
        if t == "tracer":
            jacp = np.zeros((3, model.nv))
            mujoco.mj_jacSite(model, d, jacp, None, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, lk.names[j]))
            out[lk.names[j]] = jacp @ qdot
    return out


@pytest.mark.parametrize("name, cut", [("fourbar", 3), ("theo_jansen", 9), ("stephenson2", 6), ("delta", 15)])
def test_an_exported_linkage_moves_as_diffmech_says_at_qpos0(name, cut, tmp_path):
    # MuJoCo's model of the export, closed at qpos0, moves its tracers as diffmech's
    # closure does: MuJoCo's equality Jacobian against diffmech's implicit rates (in the
    # plane z = 0, hinges about z, a P joint a slide along its line, a cut R joint one
    # connect, its z row idle)
    lk = dm.examples.load(name)
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(lk, tmp_path / f"{name}.xml")))
    rows, violation = _equality_violation(model)
    assert rows == cut and violation <= 1e-14, (rows, violation)
    if "P" not in lk.types:  # (a P joint joins the tree first, wherever it is)
        # the tree is breadth first: each link hangs at its distance from the ground
        near, level, d = {lk.ground: 0}, {lk.ground}, 0
        while level:
            d += 1
            level = {
                k
                for k, m in enumerate(lk.links)
                if k not in near and any(lk.types[j] != "tracer" and j in lk.links[g] for g in level for j in m)
            }
            near |= dict.fromkeys(level, d)
        for k, n in enumerate(lk.link_names):
            b, depth = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n), 0
            while k != lk.ground and b > 0:
                b, depth = model.body_parentid[b], depth + 1
            assert depth == near[k], (n, depth, near[k])
    d = mujoco.MjData(model)
    mujoco.mj_forward(model, d)
    udot = np.linspace(1.0, 2.0, lk.n_inputs)
    theirs = _tracer_velocities(model, d, lk, udot)
    v, _ = L.rates(lk, lk.x0(), lk.zero_input(), udot if lk.n_inputs > 1 else float(udot[0]))
    assert theirs
    for n, w in theirs.items():
        np.testing.assert_allclose(w[: lk.dim], np.asarray(v[lk.names.index(n), : lk.dim]), atol=1e-12, err_msg=n)


@pytest.mark.parametrize("name", ["rssr", "fourbar"])
def test_mujoco_follows_diffmechs_motion_of_an_exported_linkage(name, tmp_path):
    # released from rest under gravity: MuJoCo's stiff model of the export and diffmech's
    # exact one; the crank angles agree to the stiff model's sag
    lk = dm.examples.load(name)
    model = mujoco.MjModel.from_xml_path(str(L.to_mjcf(lk, tmp_path / f"{name}.xml", softness="stiff")))
    d = mujoco.MjData(model)
    ts = np.linspace(0.0, 0.5, 6)
    sim = L.simulate_dynamics(lk, 0.0, 0.0, 0.5, saveat=jnp.asarray(ts))
    crank = model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, "A")]
    got, gap = [], 0.0
    for t in ts:
        while d.time < t - 1e-12:
            mujoco.mj_step(model, d)
            gap = max(gap, _equality_violation_of(model, d))
        got.append(d.qpos[crank])
    assert float(np.max(sim.residual)) <= 1e-10 and gap <= 1e-6, gap
    np.testing.assert_allclose(got, np.asarray(sim.u), atol=1e-5)
    assert float(np.max(np.abs(np.asarray(sim.u)))) > 0.1  # it moved


def _equality_violation_of(model, d):
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    return float(np.max(np.abs(d.efc_pos[rows]))) if np.any(rows) else 0.0


def test_bad_mjcf_files_are_named(tmp_path):
    with pytest.raises(L.LinkageError, match=r"nothing\.xml: no such file"):
        L.from_mjcf(tmp_path / "nothing.xml")
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body name='a'></worldbody></mujoco>")
    with pytest.raises(L.LinkageError, match=r"bad\.xml: MuJoCo cannot compile it: .*Line number=1"):
        L.from_mjcf(bad)
    text = L.to_mjcf(dm.examples.bennett(), tmp_path / "bennett.xml").read_text()
    # a loop that does not close at qpos0: one connect's site moved by 1 mm
    site = re.search(r'<site name="(J\d@\w+)" pos="([^"]+)"/>', text)
    moved = " ".join(repr(float(v) + 1e-3) for v in site.group(2).split())
    (tmp_path / "open.xml").write_text(text.replace(site.group(0), f'<site name="{site.group(1)}" pos="{moved}"/>'))
    with pytest.raises(L.LinkageError, match=r"open\.xml: equality J\d.*does not close at qpos0 \(its anchors are 0\."):
        L.from_mjcf(tmp_path / "open.xml")
    # close=True: read at the closed configuration nearest qpos0 (the delta: a platform
    # point 1 mm off; the arms, rods and platform move to meet it), closed to round-off
    delta = dm.examples.delta()
    delta_text = L.to_mjcf(delta, tmp_path / "delta.xml").read_text()
    site = re.search(r'<site name="(P\d\w@platform)" pos="([^"]+)"/>', delta_text)
    moved = " ".join(repr(float(v) + 1e-3) for v in site.group(2).split())
    shifted = delta_text.replace(site.group(0), f'<site name="{site.group(1)}" pos="{moved}"/>')
    (tmp_path / "open_delta.xml").write_text(shifted)
    with pytest.raises(L.LinkageError, match=r"does not close at qpos0 .* close=True reads the file"):
        L.from_mjcf(tmp_path / "open_delta.xml")
    near = L.from_mjcf(tmp_path / "open_delta.xml", close=True)
    X, X0 = np.asarray(near.initial()), np.asarray(delta.initial())
    off = float(np.max(np.abs(X - X0[[delta.names.index(n) for n in near.names]])))
    assert 1e-5 < off < 3e-3, off
    assert float(np.max(np.abs(L.residual(near.x0(), near.zero_input(), near)))) <= 1e-12
    # a free joint inside a loop: a floating body tied to a crank
    (tmp_path / "free.xml").write_text(
        """<mujoco><worldbody>
        <body name="crank"><joint name="A" type="hinge" axis="0 0 1"/><geom size="0.1"/>
          <site name="a" pos="1 0 0"/></body>
        <body name="float" pos="1 0 0"><freejoint/><geom size="0.1"/><site name="b"/></body>
        </worldbody><equality><connect name="tie" site1="a" site2="b"/></equality>
        <actuator><motor joint="A"/></actuator></mujoco>"""
    )
    with pytest.raises(L.LinkageError, match=r"free\.xml: equality tie: closes a loop through the free joint of body"):
        L.from_mjcf(tmp_path / "free.xml")
    # an element diffmech does not model: a tendon actuator
    fixed = '<tendon><fixed name="t"><joint joint="J1" coef="1"/></fixed></tendon>'
    tendon = text.replace("<actuator>", fixed + "\n<actuator>")
    tendon = tendon.replace('joint="J1" gear="1"/>', 'tendon="t" gear="1"/>')
    (tmp_path / "tendon.xml").write_text(tendon)
    with pytest.raises(L.LinkageError, match=r"tendon\.xml: actuator input0: only joint actuators are inputs"):
        L.from_mjcf(tmp_path / "tendon.xml")


def test_convert_between_the_formats_from_the_command_line(tmp_path, capsys):
    # description -> MJCF -> description: the same linkage; a planar one drawn and its
    # default motion written; an unknown suffix and a broken file named, exit status 2
    from diffmech._cli import main

    src = dm.examples.path("bennett")
    assert main(["convert", str(src), str(tmp_path / "b.xml")]) == 0
    assert main(["convert", str(tmp_path / "b.xml"), str(tmp_path / "b.json")]) == 0
    _same_linkage(dm.examples.bennett(), L.load(tmp_path / "b.json"))
    four = dm.examples.path("fourbar")
    for out in ("f.dxf", "f.svg", "f.csv", "f.toml"):
        assert main(["convert", str(four), str(tmp_path / out)]) == 0 and (tmp_path / out).stat().st_size > 0
    assert len((tmp_path / "f.csv").read_text().splitlines()) == 1 + dm.examples.fourbar().steps
    capsys.readouterr()
    assert main(["convert", str(four), str(tmp_path / "f.step")]) == 2
    assert "f.step: writes" in capsys.readouterr().err
    (tmp_path / "broken.json").write_text("{")
    assert main(["convert", str(tmp_path / "broken.json"), str(tmp_path / "x.xml")]) == 2
    assert "broken.json: not valid JSON" in capsys.readouterr().err

"""SDF in: a robot's SDFormat model as a linkage, its loops closed where a joint's
child already hangs from the tree (SDFormat states loops natively).

No well-kept Python reader of SDFormat is on the package index (libsdformat's
bindings ship with Gazebo, Pinocchio's pip wheel is built without its SDF parser), so
the file is read here with the standard library's XML parser, for the subset a
linkage needs: `<link>` poses and inertials, `<joint>` poses, types and axes. Frames
follow SDFormat 1.4–1.6 (and 1.7+ files that use no other frames): a link's `<pose>`
is in the model frame, a joint's `<pose>` in its child link's frame, a joint's
`<axis><xyz>` in the joint's frame (the model's with `use_parent_model_frame` or
`expressed_in="__model__"`); poses are `x y z roll pitch yaw`, `R = Rz Ry Rx`.

Links are the model's links; a `fixed` joint, a joint listed in `lock`, or a joint
to `world` joins its links into one; the ground is the named link (default: the
root of the tree, a floating base held fixed). `revolute` and `continuous` joints
are R joints, `prismatic` P joints and `ball` S joints, each at its frame's origin;
every other type is named and refused; a joint whose two links are already one (a
loop of locked joints) is idle and dropped. Inertials are summed per link in world axes
at the file's pose. The inputs are joints named by the caller: a joint between the
ground and a link turns (slides) that link, any other its own coordinate.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ._joints import KINDS
from ._mjcf import Groups, link_mass_properties, note_moved_coms
from ._schema import LinkageError

_TYPES = {name: K.letter for K in KINDS.values() for name in K.sdf}  # SDF joint type -> ours
_MOMENTS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")


def _rotation(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = (f(a) for a in (roll, pitch, yaw) for f in (math.cos, math.sin))
    rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    return rz @ ry @ rx


def _numbers(where, text, n):
    try:
        v = [float(x) for x in (text or "").split()]
    except ValueError:
        v = []
    if len(v) != n or not all(math.isfinite(x) for x in v):
        raise LinkageError(f"{where}: {n} finite numbers; got {text!r}")
    return np.array(v)


def _pose(where, el):
    """`(R, p)` of an element's `<pose>` (identity when absent)."""
    pose = el.find("pose")
    if pose is None or not (pose.text or "").strip():
        return np.eye(3), np.zeros(3)
    frame = pose.get("relative_to") or pose.get("frame")
    if frame:
        raise LinkageError(f"{where}/pose: frames relative to {frame!r} are not read; give poses in the default frames")
    v = _numbers(f"{where}/pose", pose.text, 6)
    return _rotation(*v[3:]), v[:3]


def _model_element(path: Path, model):
    """The file's root, the model's element (the first, or the one named `model`) and
    where it is (for messages)."""
    if not path.is_file():
        raise LinkageError(f"{path}: no such file")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        line, col = e.position
        raise LinkageError(f"{path}: not valid XML at line {line}, column {col}") from None
    models = root.findall("model") if root.tag == "sdf" else []
    if not models:
        raise LinkageError(f"{path}: no <sdf><model> element")
    names = [m.get("name") for m in models]
    if model is None:
        el = models[0]
    elif model in names:
        el = models[names.index(model)]
    else:
        raise LinkageError(f"{path}: no model {model!r}; the file has {names}")
    where = f"{path}: model {el.get('name')}"
    for tag in ("include", "model", "frame"):
        if el.find(tag) is not None:
            raise LinkageError(f"{where}: <{tag}> elements are not read (nested models and frames)")
    return root, el, where


def _body(where: str, n, ln, pose):
    """A link's mass, centre of mass and inertia about it (world axes) at its pose."""
    inertial = ln.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    at = f"{where}/link {n}/inertial"
    if inertial.get("auto") in ("true", "1"):
        raise LinkageError(f"{at}: computed from its collision meshes (auto); give its mass and inertia")
    R, p = pose
    Ri, pi = _pose(at, inertial)
    mass = float(_numbers(f"{at}/mass", inertial.findtext("mass", "0"), 1)[0])
    tensor = inertial.find("inertia")
    tensor_ = np.zeros((3, 3))
    if tensor is not None:
        i = {k: float(_numbers(f"{at}/inertia/{k}", tensor.findtext(k, "0"), 1)[0]) for k in _MOMENTS}
        tensor_ = np.array(
            [[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]]
        )
    Rw = R @ Ri
    return mass, p + R @ pi, Rw @ tensor_ @ Rw.T


def _joint_spec(where: str, j, jn, kind: str, child_pose) -> dict:
    """A moving joint's description: its type, its point in the model frame and (not
    a ball) its axis."""
    Rc, pc = child_pose
    Rj, pj = _pose(f"{where}/joint {jn}", j)
    point = pc + Rc @ pj
    spec = {"type": _TYPES[kind], "coords": point.tolist()}
    if kind != "ball":
        axis = j.find("axis")
        xyz = axis.find("xyz") if axis is not None else None
        if xyz is None:
            raise LinkageError(f"{where}/joint {jn}: a {kind} joint needs <axis><xyz>")
        v = _numbers(f"{where}/joint {jn}/axis/xyz", xyz.text, 3)
        assert axis is not None
        in_model = (axis.findtext("use_parent_model_frame", "0").strip() in ("1", "true")) or (
            xyz.get("expressed_in") == "__model__"
        )
        if xyz.get("expressed_in") not in (None, "", "__model__"):
            raise LinkageError(f"{where}/joint {jn}/axis/xyz: expressed in {xyz.get('expressed_in')!r}, not read")
        spec["axis"] = (v if in_model else Rc @ Rj @ v).tolist()
    return spec


def sdf_spec(path, *, model=None, ground=None, inputs=None, lock=(), balls=()) -> dict:
    """The linkage description of an SDFormat file (see the module docstring)."""
    path = Path(path)
    root, el, where = _model_element(path, model)
    link_els = el.findall("link")
    link_names = [ln.get("name") for ln in link_els]
    poses = {n: _pose(f"{where}/link {n}", ln) for n, ln in zip(link_names, link_els)}
    bodies = [_body(where, n, ln, poses[n]) for n, ln in zip(link_names, link_els)]
    index = {n: i for i, n in enumerate(link_names)}
    groups = Groups(len(link_names) + 1)  # the last entry: the world
    world = len(link_names)
    joint_els = el.findall("joint")
    lock, balls = set(lock), set(balls)
    found = {j.get("name") for j in joint_els}
    for what, given in (("lock", lock), ("balls", balls)):
        for n in sorted(given - found):
            raise LinkageError(f"{where}: {what} names joint {n!r}, which the model does not have")
    has_parent = set()
    for j in joint_els:
        jn = j.get("name")
        parent, child = j.findtext("parent", "").strip(), j.findtext("child", "").strip()
        for role, ln in (("parent", parent), ("child", child)):
            if ln != "world" and ln not in index:
                raise LinkageError(f"{where}/joint {jn}: its {role} {ln!r} is not a link of the model")
        has_parent.add(child)
        a, b = (world if parent == "world" else index[parent]), index[child]
        kind = j.get("type")
        if kind == "fixed" or jn in lock or parent == "world":
            if parent == "world" and kind not in ("fixed",) and jn not in lock:
                raise LinkageError(
                    f"{where}/joint {jn}: a {kind} joint to the world; name its link the ground or lock it"
                )
            groups.join(a, b)
        elif kind not in _TYPES:
            raise LinkageError(
                f"{where}/joint {jn}: type {kind!r} is not a linkage joint (revolute, continuous, prismatic, ball, "
                "fixed)"
            )
    if ground is None:
        roots = [n for n in link_names if n not in has_parent]
        if not roots:
            raise LinkageError(f"{where}: every link hangs from another; name the ground link")
        ground = roots[0]  # a floating base, held fixed
    elif ground not in index:
        raise LinkageError(f"{where}: ground {ground!r} is not a link; links are {link_names}")
    groups.join(world, index[ground])
    joints, members = {}, {}
    made = {}
    for j in joint_els:
        jn, kind = j.get("name"), j.get("type")
        parent, child = j.findtext("parent", "").strip(), j.findtext("child", "").strip()
        if kind == "fixed" or jn in lock or parent == "world":
            continue
        kind = "ball" if jn in balls else str(kind)
        a, b = groups.find(world if parent == "world" else index[parent]), groups.find(index[child])
        if a == b:  # within one rigid link (fixed or locked joints around it): idle at the file's pose
            continue
        spec = _joint_spec(where, j, jn, kind, poses[child])
        joints[jn] = spec
        made[jn] = spec["type"]
        for k in (a, b):
            members.setdefault(k, []).append(jn)
    out_inputs = []
    if not inputs:
        raise LinkageError(f"{where}: name the inputs (joints), e.g. inputs=['left-knee-op']")
    for n in [inputs] if isinstance(inputs, str) else list(inputs):
        if n not in made or not KINDS[made[n]].coordinates:
            raise LinkageError(f"{where}: input {n!r} is not a revolute or prismatic joint of the model")
        out_inputs.append({"type": KINDS[made[n]].coordinates[0], "joint": n})
    links = {}
    for k in sorted({groups.find(i) for i in range(len(link_names) + 1)}):
        parts = [i for i in range(len(link_names)) if groups.find(i) == k]
        name = "ground" if k == groups.find(world) else link_names[min(parts)]
        entry = {"joints": members.get(k, [])}
        if name != "ground":
            entry |= link_mass_properties([bodies[i] for i in parts], [joints[n] for n in entry["joints"]])
        links[name] = entry
    return {
        "name": el.get("name") or path.stem,
        "geometry": "spatial",
        "description": f"read from {path.name} (SDFormat {root.get('version', '?')}); ground {ground} held fixed; "
        f"locked: {sorted(lock)}; read as balls: {sorted(balls)}" + note_moved_coms(links),
        "joints": joints,
        "links": links,
        "ground": "ground",
        "input": out_inputs[0] if len(out_inputs) == 1 else out_inputs,
        "gravity": [0.0, 0.0, -9.81],
    }


def from_sdf(path, model=None, *, ground=None, inputs=None, lock=(), balls=(), **kw):
    """A linkage from an SDFormat file: its links (a `fixed` or locked joint joins two
    into one), revolute, continuous, prismatic and ball joints as R, P and S joints,
    loops closed where a joint's child already hangs from the tree, inertials in world
    axes at the file's pose (see `diffmech.linkage._sdf`).

    **Arguments:** `path`: the `.sdf` file; `model`: the model's name (default: the
    first); `ground`: the link held fixed (default: the tree's root, a floating base);
    `inputs`: the driven joints' names (a joint with the ground turns its link, any
    other its own coordinate); `lock`: joints held at the file's pose (a stiff
    spring, say); `balls`: revolute joints read as ball joints at their frame's
    origin (a rod whose end the file pins but the mechanism lets swivel); `kw`:
    keyword arguments for `Linkage.from_dict`.

    **Returns:** a spatial `Linkage`. A missing or malformed file (the line named), a
    joint type or frame it does not read, a model or link not found: a
    `LinkageError` naming it.
    """
    from ._model import Linkage

    spec = sdf_spec(path, model=model, ground=ground, inputs=inputs, lock=lock, balls=balls)
    return Linkage.from_dict(spec, **kw)

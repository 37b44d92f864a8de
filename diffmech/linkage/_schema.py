"""The linkage description (the JSON/TOML file's schema): reading, validating and
writing it. Every error names the path in the description and the reason
(`LinkageError`); the equations it leads to are `_model`'s and `_equations`'."""

import json
import math
import tomllib
from pathlib import Path

import jax
import numpy as np

from . import _gears
from ._errors import LinkageError as LinkageError
from ._joints import GEOMETRIES as GEOMETRIES, KINDS, AxisPoint, SidePoint, allowed

KEYS = (
    "name",
    "geometry",
    "description",
    "joints",
    "links",
    "ground",
    "input",
    "inputs",
    "simulation",
    "gravity",
    "loads",
    "gears",
)
LOADS = (
    "spring",
    "damper",
    "force",
    "torque",
    "torsion_spring",
    "torsion_damper",
    "linear_spring",
    "linear_damper",
    "friction",
    "stop",
)
# loads across a planar joint, on its own coordinate: the turn of its second link relative
# to its first across a revolute joint (from the description's configuration, in (−π, π]),
# the slide along a prismatic joint's line (from the description's configuration, along
# (b, −a)); torsion kinds across an R joint, linear kinds across a P joint, friction and
# stops across either
JOINT_LOADS = ("torsion_spring", "torsion_damper", "linear_spring", "linear_damper", "friction", "stop", "stop_event")
# (a stop with `"event": true` is read as `stop_event`: no force; `simulate_dynamics` ends there)
SPRING_LOADS, DAMPER_LOADS = ("torsion_spring", "linear_spring"), ("torsion_damper", "linear_damper")
LINK_KEYS = ("joints", "mass", "com", "inertia")
INPUTS = ("revolute", "prismatic", "actuator")
# A spatial revolute joint is a point and an axis (natural coordinates: a point and a unit
# vector shared by its two links). The axis is held as a second point on it, `AXIS_SUFFIX`
# appended to the joint's name, of type "axis", one `axis_length` along the unit axis
# (the description's size, so that a link's frame is well proportioned): every equation
# of a spatial link then reads points alone (distances and the frame form).
AXIS_SUFFIX = ".axis"
AXIS = AxisPoint.letter
# A spatial prismatic (P) or cylindrical (C) joint is an axis line of one of its links
# (side A: the ground if it holds the joint, else a link with a frame) along which the
# other (side B) slides: side A holds the joint's point and axis point under the joint's
# name, side B its own copies, named `<joint>.<link B>` (type `SIDE`) and
# `<joint>.axis.<link B>`, at the same place in the description's configuration.
SIDE = SidePoint.letter


def axis_length(points: np.ndarray) -> float:
    """The distance at which a spatial R joint's axis point sits from the joint: the
    largest distance of a joint from the joints' centroid (1 for a single point)."""
    size = float(np.max(np.linalg.norm(points - points.mean(axis=0), axis=1))) if len(points) else 0.0
    return size if size > 0 else 1.0


def parse(spec: dict, *, sphere_tol: float = 1e-2) -> dict:
    """The fields of a `Linkage` from a description (see `Linkage.from_dict`)."""
    spec = _checked_keys(spec)
    geometry = spec.get("geometry", "planar")
    if geometry not in GEOMETRIES:
        raise LinkageError(f"geometry: must be one of {GEOMETRIES}; got {geometry!r}")
    joints, links = spec["joints"], spec["links"]
    if not isinstance(joints, dict) or not joints:
        raise LinkageError("joints: a non-empty mapping of joint name -> {type, coords}")
    if not isinstance(links, dict) or not links:
        raise LinkageError("links: a non-empty mapping of link name -> [joint names]")
    names, types, rows, axes, u_axes = _parse_joints(joints, geometry, sphere_tol)
    # a spatial P or C joint: its side B's copies of the point and the axis point
    side_b = _slide_sides(spec, links, names, types, rows) if geometry == "spatial" else {}
    for name, link in side_b.items():
        for src, copy, kind in (
            (name, f"{name}.{link}", SIDE),
            (name + AXIS_SUFFIX, f"{name}{AXIS_SUFFIX}.{link}", AXIS),
        ):
            if copy in names:
                raise LinkageError(f"joints.{copy}: the name of joint {name}'s point on link {link}; rename it")
            names.append(copy)
            types.append(kind)
            rows.append(rows[names.index(src)])
    links = _gears.add_marks(spec.get("gears"), geometry, links, names, types, rows)
    index = {n: i for i, n in enumerate(names)}
    link_names, link_tuples, inertial = _parse_links(links, geometry, names, types, rows, index, axes, u_axes, side_b)
    ground = spec["ground"]
    if ground not in link_names:
        raise LinkageError(f"ground: unknown link {ground!r}; links are {link_names}")
    g = link_names.index(ground)
    for j, kind in enumerate(types):  # (an axis or side point the reader added: no rule)
        holders = [link_names[k] for k, lk in enumerate(link_tuples) if j in lk]
        KINDS[kind].check_holders(names[j], holders, geometry)
        if KINDS[kind].has_cross and (len(holders) != 2 or set(holders) != set(u_axes[names[j]])):
            raise LinkageError(
                f"joints.{names[j]}: a universal joint joins exactly the two links its 'axes' name "
                f"({sorted(u_axes[names[j]])}); it is in {holders}"
            )
    inputs = _parse_inputs(spec["input"], geometry, names, types, link_names, link_tuples, g)
    if geometry == "spatial":  # each link's frame first, through the most points the ground and inputs place
        known = set(link_tuples[g]).union(*(link_tuples[li] for _, li, _ in inputs if li >= 0))
        link_tuples = [_frame_first(idx, types, rows, known) for idx in link_tuples]
    (in_kind, in_link, in_joints), more = inputs[0], tuple(inputs[1:])
    steps, step = _simulation(spec)
    gears = _gears.parse(spec.get("gears"), names, types, rows, link_names, link_tuples, g, inputs)
    if gears["gear_params"] is not None:
        gears["gear_params"] = jax.device_put(gears["gear_params"])
    return dict(
        coords=jax.device_put(np.stack(rows)),  # (an eager `jnp.asarray` compiles a small program)
        names=tuple(names),
        types=tuple(types),
        links=tuple(link_tuples),
        link_names=tuple(link_names),
        ground=g,
        input_kind=in_kind,
        input_link=in_link,
        input_joints=in_joints,
        more_inputs=more,
        geometry=geometry,
        name=str(spec.get("name", "linkage")),
        steps=steps,
        step=step,
        description=str(spec.get("description", "")),
        masses=jax.device_put(np.asarray([m for m, _, _ in inertial], dtype=float)),
        coms=jax.device_put(np.asarray(np.stack([c for _, c, _ in inertial]), dtype=float)),
        inertias=jax.device_put(np.stack([np.asarray(i, dtype=float) for _, _, i in inertial])),
        gravity=jax.device_put(np.asarray(_gravity(spec.get("gravity"), geometry), dtype=float)),
        **_loads(spec.get("loads", []), geometry, names, types, index, link_names, link_tuples, rows, g),
        **gears,
    )


def _checked_keys(spec) -> dict:
    """A description's top-level keys checked (`inputs` read as `input`)."""
    if not isinstance(spec, dict):
        raise LinkageError(f"linkage: a description is a mapping; got {type(spec).__name__}")
    extra = sorted(set(spec) - set(KEYS))
    if extra:
        raise LinkageError(f"linkage: unknown key {extra[0]!r} (allowed: {KEYS})")
    if "inputs" in spec and "input" in spec:
        raise LinkageError("linkage: give 'input' (one) or 'inputs' (a list), not both")
    if "inputs" in spec:
        spec = {k: v for k, v in spec.items() if k != "inputs"} | {"input": spec["inputs"]}
    for key in ("joints", "links", "ground", "input"):
        if key not in spec:
            raise LinkageError(f"linkage: missing key {key!r} (need 'joints', 'links', 'ground', 'input')")
    return spec


def _parse_joints(joints: dict, geometry: str, sphere_tol: float):
    """The joints' names, types and coordinate rows (with each spatial R, P or C
    joint's axis point and a U joint's two after them), their axes and U axes."""
    kinds = allowed(geometry)
    names, types, rows = [], [], []
    axes = {}  # spatial R, P and C joints -> the axis direction
    u_axes = {}  # universal joints -> {link: the axis fixed in that link}
    for name, j in joints.items():
        kind = j.get("type") if isinstance(j, dict) else None
        if kind not in kinds:
            raise LinkageError(f"joints.{name}.type: a {geometry} joint is one of {kinds}; got {kind!r}")
        extra = sorted(set(j) - {"type", "coords", "axis", "axes"})
        if extra:
            raise LinkageError(
                f"joints.{name}: unknown key {extra[0]!r} (allowed: 'type', 'coords', 'axis' for a spatial R, P "
                "or C, 'axes' for a U)"
            )
        if str(name).endswith(AXIS_SUFFIX):
            raise LinkageError(
                f"joints.{name}: a joint name may not end in {AXIS_SUFFIX!r} (the name of an R joint's axis)"
            )
        K = KINDS[kind]
        if K.has_cross:
            u_axes[str(name)] = _universal_axes(name, j.get("axes"))
        elif "axes" in j:
            raise LinkageError(f"joints.{name}.axes: only a spatial universal (U) joint has axes; this is a {kind}")
        if K.has_axis(geometry):
            axes[str(name)] = _axis(name, j.get("axis"))
        elif "axis" in j:
            raise LinkageError(
                f"joints.{name}.axis: only a spatial revolute (R), prismatic (P) or cylindrical (C) joint has an "
                f"axis; this is a {geometry} {kind}"
            )
        c = K.coords(name, j.get("coords"), geometry, sphere_tol)
        names.append(str(name))
        types.append(kind)
        rows.append(c)
    if axes or u_axes:
        # each spatial R joint's axis point, after every joint, in the joints' order; a U
        # joint's two (one in each of its links, named after the link)
        length = axis_length(np.array([r for r, t in zip(rows, types) if t != "tracer"]))
        for name, a in axes.items():
            names.append(name + AXIS_SUFFIX)
            types.append(AXIS)
            rows.append(rows[names.index(name)] + length * a)
        for name, per_link in u_axes.items():
            for link, a in per_link.items():
                names.append(f"{name}{AXIS_SUFFIX}.{link}")
                types.append(AXIS)
                rows.append(rows[names.index(name)] + length * a)
    return names, types, rows, axes, u_axes


def _universal_axes(name, raw_axes) -> dict:
    """A universal joint's two perpendicular axes, by link."""
    if not (isinstance(raw_axes, dict) and len(raw_axes) == 2):
        raise LinkageError(
            f"joints.{name}.axes: a universal joint needs {{LINK: [ax, ay, az], LINK: [...]}}, the axis fixed "
            f"in each of its two links; got {raw_axes!r}"
        )
    out = {str(k): _axis(f"{name}.axes.{k}", v) for k, v in raw_axes.items()}
    e1, e2 = out.values()
    if abs(float(e1 @ e2)) > 1e-9:
        raise LinkageError(
            f"joints.{name}.axes: a universal joint's two axes must be perpendicular; they are "
            f"{np.degrees(np.arccos(np.clip(e1 @ e2, -1, 1))):.6g}° apart"
        )
    return out


def _parse_links(links: dict, geometry, names, types, rows, index, axes, u_axes, side_b):
    """The links' names, their rows' indices (with the axis and side points they
    carry) and their mass properties."""
    link_names, link_tuples, inertial = [], [], []
    for lname, members in links.items():
        mass_props = None
        if isinstance(members, dict):  # {joints, mass, com, inertia}
            mass_props = members
            extra = sorted(set(members) - set(LINK_KEYS))
            if extra:
                raise LinkageError(f"links.{lname}: unknown key {extra[0]!r} (allowed: {LINK_KEYS})")
            if "joints" not in members:
                raise LinkageError(f"links.{lname}: a link given as a mapping needs 'joints'")
            members = members["joints"]
        if not isinstance(members, (list, tuple)):
            raise LinkageError(f"links.{lname}: a list of joint names; got {members!r}")
        unknown = [m for m in members if m not in index]
        if unknown:
            raise LinkageError(f"links.{lname}: unknown joint {unknown[0]!r}; joints are {names}")
        if len(set(members)) != len(members):
            raise LinkageError(f"links.{lname}: a joint is listed twice: {list(members)}")
        on_b = {m for m in members if side_b.get(m) == lname}  # this link is the joint's side B
        idx = tuple(index[f"{m}.{lname}" if m in on_b else m] for m in members)
        idx += tuple(index[f"{m}{AXIS_SUFFIX}.{lname}" if m in on_b else m + AXIS_SUFFIX] for m in members if m in axes)
        idx += tuple(index[f"{m}{AXIS_SUFFIX}.{lname}"] for m in members if lname in u_axes.get(m, {}))
        if sum(types[i] not in ("tracer", AXIS) for i in idx) < 2:
            raise LinkageError(
                f"links.{lname}: a link needs two or more joints (tracers not counted); got {list(members)}"
            )
        link_names.append(str(lname))
        link_tuples.append(idx)
        inertial.append(_mass_properties(lname, mass_props, geometry, index, rows, idx))
    return link_names, link_tuples, inertial


def _simulation(spec: dict) -> tuple[int, float | None]:
    """The description's default range: `(steps, step)`."""
    sim = spec.get("simulation", {}) or {}
    if not isinstance(sim, dict) or set(sim) - {"steps", "step"}:
        raise LinkageError(f"simulation: a mapping with 'steps' and/or 'step'; got {sim!r}")
    steps = sim.get("steps", 180)
    step = sim.get("step")
    if not (isinstance(steps, int) and steps >= 1):
        raise LinkageError(f"simulation.steps: a positive integer; got {steps!r}")
    if step is not None and not (isinstance(step, (int, float)) and math.isfinite(step) and step != 0):
        raise LinkageError(f"simulation.step: a finite non-zero number; got {step!r}")
    return steps, None if step is None else float(step)


def _loads(loads, geometry, names, types, index, link_names, link_tuples, rows, ground: int) -> dict:
    """The applied loads: `{"type": "spring", "joints": [A, B], "links": [LA, LB],
    "stiffness": k, "length": L0 (default: the initial distance)}`, `{"type":
    "damper", "joints": [A, B], "links": [LA, LB], "damping": c}` (both act along the
    line AB between joint A of link LA and joint B of link LB, two different links),
    `{"type": "force", "joint": J, "link": L, "force": [Fx, Fy]}` (a constant force
    at a point of link L; `[Fx, Fy, Fz]` on the sphere and in space), `{"type":
    "torque", "link": L, "torque": τ}` (a couple on link L; a vector `[Mx, My, Mz]`
    on the sphere and in space, not on an S–S rod); across a planar revolute joint
    (`_joint_load`) a `torsion_spring`, a `torsion_damper`, `friction` and a `stop`; across a
    planar prismatic joint a `linear_spring`, a `linear_damper`, `friction` and a `stop`."""
    if not isinstance(loads, list):
        raise LinkageError(f"loads: a list of {{type, ...}}; got {loads!r}")
    kinds, idx, params = [], [], []
    dim = 2 if geometry == "planar" else 3
    axes = ["Fx", "Fy", "Fz"][:dim]

    def joint_of_link(path, j, ln):
        if j not in index:
            raise LinkageError(f"{path}: unknown joint {j!r}")
        if ln not in link_names:
            raise LinkageError(f"{path}: unknown link {ln!r}")
        li = link_names.index(ln)
        if index[j] not in link_tuples[li]:
            raise LinkageError(f"{path}: joint {j!r} is not on link {ln!r}")
        if types[index[j]] == "P":
            raise LinkageError(f"{path}: joint {j!r} is a line (a prismatic joint); a load acts at a point")
        return index[j], li

    for k, load in enumerate(loads):
        path = f"loads[{k}]"
        kind = load.get("type") if isinstance(load, dict) else None
        if kind not in LOADS:
            raise LinkageError(f"{path}.type: one of {LOADS}; got {kind!r}")
        if kind in JOINT_LOADS:
            i, p, kind = _joint_load(path, load, kind, geometry, names, types, index, link_names, link_tuples, ground)
            kinds.append(kind)
            idx.append(i)
            params.append(p)
        elif kind in ("spring", "damper"):
            js, ls = load.get("joints"), load.get("links")
            if not (isinstance(js, list) and isinstance(ls, list) and len(js) == 2 and len(ls) == 2):
                raise LinkageError(f"{path}: a {kind} needs 'joints': [A, B] and 'links': [LA, LB]")
            (ja, la), (jb, lb) = joint_of_link(path, js[0], ls[0]), joint_of_link(path, js[1], ls[1])
            if la == lb:
                raise LinkageError(f"{path}: a {kind} between two joints of the same link ({ls[0]}) does nothing")
            d0 = float(np.linalg.norm(np.asarray(rows[ja]) - np.asarray(rows[jb])))
            if not d0 > 0:
                raise LinkageError(f"{path}: a {kind} between coincident joints ({js[0]}, {js[1]}) has no direction")
            if kind == "spring":
                p = (
                    _number(f"{path}.stiffness", load.get("stiffness")),
                    _number(f"{path}.length", load.get("length", d0)),
                )
            else:
                p = (_number(f"{path}.damping", load.get("damping")), 0.0)
            kinds.append(kind)
            idx.append((ja, la, jb, lb))
            params.append((*p, 0.0))
        elif kind == "force":
            j, li = joint_of_link(path, load.get("joint"), load.get("link"))
            try:
                f = np.asarray(load.get("force"), dtype=float)
            except (TypeError, ValueError):
                f = np.zeros(0)
            if f.shape != (dim,) or not np.all(np.isfinite(f)):
                raise LinkageError(f"{path}.force: {dim} finite numbers [{', '.join(axes)}]; got {load.get('force')!r}")
            kinds.append(kind)
            idx.append((j, li, -1, -1))
            params.append(tuple(np.r_[f, np.zeros(3 - dim)]))
        else:
            ln = load.get("link")
            if ln not in link_names:
                raise LinkageError(f"{path}.link: unknown link {ln!r}")
            li = link_names.index(ln)
            if dim == 2:
                tau = (_number(f"{path}.torque", load.get("torque"), positive_or_zero=False), 0.0, 0.0)
            else:
                try:
                    t = np.asarray(load.get("torque"), dtype=float)
                except (TypeError, ValueError):
                    t = np.zeros(0)
                if t.shape != (3,) or not np.all(np.isfinite(t)):
                    raise LinkageError(f"{path}.torque: 3 finite numbers [Mx, My, Mz]; got {load.get('torque')!r}")
                if geometry == "spatial" and len(link_tuples[li]) == 2:
                    raise LinkageError(
                        f"{path}.link: {ln} is an S–S rod, whose spin about its axis is idle: a couple on it "
                        "is not defined (put it on a link of three or more joints)"
                    )
                tau = tuple(t)
            kinds.append(kind)
            idx.append((-1, li, -1, -1))
            params.append(tau)
    return dict(
        load_kinds=tuple(kinds),
        load_index=tuple(idx),
        load_params=jax.device_put(np.asarray(params, dtype=float).reshape(-1, 3)),
    )


def _frame_first(idx, types, rows, known: set | frozenset = frozenset()):
    """A spatial link's joints with three non-collinear points first (its frame): of
    the non-collinear triples, one with the most `known` points (placed by the ground
    or an input: a point off the frame is carried by three equations, skipped only
    when it and the frame are all known; a rocker's frame through its two pivot points
    leaves it one equation short of rigid, as it must be, where a frame through an
    unknown point would hold it by one equation too many), the description's order
    among equals (a shaft's joints may all lie on its axis: then a U joint's cross
    axis point comes forward)."""
    pts = [i for i in idx if types[i] != "tracer"]
    triples = _non_collinear([rows[i] for i in pts])
    if not triples:
        return idx
    best = max(triples, key=lambda t: sum(pts[i] in known for i in t))  # the first of the best
    if best == (0, 1, 2):
        return idx  # the description's order
    first = tuple(pts[i] for i in best)
    return first + tuple(i for i in idx if i not in first)


def _non_collinear(points, first=False):
    """The triples `(a, b, c)` of indices of non-collinear points, in order (only the
    first with `first`)."""
    out = []
    for a in range(len(points)):
        for b in range(a + 1, len(points)):
            for c in range(b + 1, len(points)):
                p, q, r = (np.asarray(points[k], float) for k in (a, b, c))
                size = max(np.linalg.norm(q - p) * np.linalg.norm(r - p), 1e-300)
                if np.linalg.norm(np.cross(q - p, r - p)) > 1e-9 * size:
                    out.append((a, b, c))
                    if first:
                        return out
    return out


def _slide_sides(spec, links, names, types, rows) -> dict:
    """Each spatial P or C joint's side B (`{joint: link}`): it joins exactly two links;
    side A, which carries the axis the other slides along, is the ground when the
    ground holds the joint, else the first of its links with three non-collinear
    points (its frame: the axis's normals are read from it); a P joint's side B needs
    one too (it locks the turn about the axis)."""
    listed = {ln: (m.get("joints") if isinstance(m, dict) else m) for ln, m in links.items()}
    out = {}
    for name, kind in zip(names, types):
        if kind not in KINDS or not KINDS[kind].slides("spatial"):
            continue
        holders = [ln for ln, m in listed.items() if isinstance(m, (list, tuple)) and name in m]
        if len(holders) != 2:
            raise LinkageError(
                f"joints.{name}: a {KINDS[kind].title} joint joins exactly two links; it is in {holders}"
            )

        def framed(ln):
            members = listed[ln] or []
            pts = [rows[names.index(m)] for m in members if m in names and types[names.index(m)] != "tracer"]
            pts += [rows[names.index(m + AXIS_SUFFIX)] for m in members if m + AXIS_SUFFIX in names]
            return bool(_non_collinear(pts, first=True))

        if spec.get("ground") in holders:
            a = spec["ground"]
        else:
            a = next((ln for ln in holders if framed(ln)), None)
            if a is None:
                raise LinkageError(
                    f"joints.{name}: neither of its links ({holders}) has three non-collinear points (the joint's, its "
                    "axis point and the link's other joints): one needs a frame to carry the axis"
                )
        (b,) = [ln for ln in holders if ln != a]
        if not KINDS[kind].turns and not framed(b):
            raise LinkageError(
                f"joints.{name}: link {b} slides along a prismatic joint but has no three non-collinear points (a "
                "frame to lock its turn about the axis); add a joint off the axis or make it a cylindrical (C) joint"
            )
        out[name] = b
    return out


def _axis(name, raw) -> np.ndarray:
    """A spatial R joint's unit axis from the description's direction."""
    if raw is None:
        raise LinkageError(f"joints.{name}.axis: a spatial R, P or C joint needs its axis direction [ax, ay, az]")
    try:
        a = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise LinkageError(f"joints.{name}.axis: 3 finite numbers [ax, ay, az]; got {raw!r}")
    n = float(np.linalg.norm(a))
    if not n > 1e-12:
        raise LinkageError(f"joints.{name}.axis: the axis {a.tolist()} has zero length")
    return a / n


def _joint_load(path, load, kind, geometry, names, types, index, link_names, link_tuples, ground):
    """A load across a planar joint `J` on its own coordinate `q`: across a revolute joint
    the turn of its second link relative to its first (`"links": [LA, LB]`, optional
    where `J` joins two: then the ground first if it is one of them, else in the
    description's order), from the description's configuration in (−π, π]; across a
    prismatic joint the slide of LB relative to LA along the line, direction `(b, −a)`,
    from the description's configuration. `{"type": "torsion_spring", "joint": J,
    "stiffness": k, "angle": q0 (default 0)}` across an R joint, `{"type":
    "linear_spring", "joint": J, "stiffness": k, "position": q0 (default 0)}` across
    a P joint (a force or couple `−k (q − q0)` on LB, the opposite on LA);
    `torsion_damper` and `linear_damper` with `"damping": c` (`−c q̇`: viscous
    friction); `{"type": "friction", "joint": J, "torque": T, "speed": v_s (default
    0.01)}` (Coulomb's `−T tanh(q̇ / v_s)`, smoothed over `v_s`; `T` a force across a
    P joint) and `{"type": "stop", "joint": J, "range": [q_min, q_max], "stiffness":
    k}` (end stops: a stiff one-sided spring `k` outside the range; with `"event":
    true` and no stiffness, an event: `simulate_dynamics` ends where the coordinate
    reaches the range, status `end_stop`) across either. Returns its index `(J, LA,
    J, LB)`, its three parameters and its kind (`stop_event` for an event)."""
    j = load.get("joint")
    want = {"torsion_spring": "R", "torsion_damper": "R", "linear_spring": "P", "linear_damper": "P"}.get(kind, "RP")
    if j not in index or types[index[j]] not in want:
        what = {"R": "a revolute (R) joint", "P": "a prismatic (P) joint"}.get(want, "an R or P joint")
        raise LinkageError(f"{path}.joint: a {kind} acts across {what}; got {j!r}")
    if geometry != "planar":
        raise LinkageError(f"{path}: a {kind} acts across a planar joint; this linkage is {geometry}")
    slide = types[index[j]] == "P"
    holders = [k for k, m in enumerate(link_tuples) if index[j] in m]
    ls = load.get("links")
    if ls is None:
        if len(holders) != 2:
            raise LinkageError(f"{path}: joint {j} joins {len(holders)} links; name the two in 'links': [LA, LB]")
        la, lb = sorted(holders, key=lambda k: k != ground)
    else:
        if not (isinstance(ls, list) and len(ls) == 2 and all(n in link_names for n in ls) and ls[0] != ls[1]):
            raise LinkageError(f"{path}.links: two different links of joint {j}; got {ls!r}")
        la, lb = (link_names.index(n) for n in ls)
        if la not in holders or lb not in holders:
            raise LinkageError(f"{path}.links: joint {j} is not on both of {ls}")
    if kind in SPRING_LOADS:
        key = "position" if slide else "angle"
        q0 = _number(f"{path}.{key}", load.get(key, 0.0), positive_or_zero=False)
        if not slide and not -math.pi < q0 <= math.pi:
            raise LinkageError(f"{path}.angle: in (−π, π]; got {q0!r}")
        p = (_number(f"{path}.stiffness", load.get("stiffness")), q0, 0.0)
    elif kind in DAMPER_LOADS:
        p = (_number(f"{path}.damping", load.get("damping")), 0.0, 0.0)
    elif kind == "friction":
        speed = _number(f"{path}.speed", load.get("speed", 0.01))
        if not speed > 0:
            raise LinkageError(f"{path}.speed: the speed Coulomb friction is smoothed over must be > 0; got {speed!r}")
        p = (_number(f"{path}.torque", load.get("torque")), speed, 0.0)
    else:
        r = load.get("range")
        lo, hi = (
            (_number(f"{path}.range", v, positive_or_zero=False) for v in r)
            if isinstance(r, list) and len(r) == 2
            else (math.nan, math.nan)
        )
        bound = math.inf if slide else math.pi
        event = load.get("event", False)
        if not isinstance(event, bool):
            raise LinkageError(f"{path}.event: true (the motion ends at the stop) or false; got {event!r}")
        if not -bound <= lo < hi <= bound:
            raise LinkageError(
                f"{path}.range: [q_min, q_max] with q_min < q_max"
                + ("" if slide else " within [−π, π]")
                + f"; got {r!r}"
            )
        if event:  # an event: the motion ends where the coordinate leaves the range
            if "stiffness" in load:
                raise LinkageError(f"{path}.stiffness: a stop that is an event has no stiffness")
            return (index[j], la, index[j], lb), (0.0, lo, hi), "stop_event"
        stiffness = _number(f"{path}.stiffness", load.get("stiffness"))
        if not stiffness > 0:
            raise LinkageError(f"{path}.stiffness: a stop's stiffness must be > 0; got {stiffness!r}")
        p = (stiffness, lo, hi)
    return (index[j], la, index[j], lb), p, kind


def _number(path, v, *, positive_or_zero=True) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise LinkageError(f"{path}: a finite number; got {v!r}")
    if positive_or_zero and v < 0:
        raise LinkageError(f"{path}: must be ≥ 0; got {v!r}")
    return float(v)


def _mass_properties(lname, props, geometry, index, rows, idx):
    """(mass, centre of mass (3,), inertia about it) of a link: zeros where not given.
    The centre of mass is a point of the link at the initial configuration, in the
    description's coordinates (`[x, y]` in the plane, `[x, y, z]` on the sphere), or
    the name of one of its joints. The inertia is a number in the plane (about the
    z axis); on the sphere and in space a 3×3 tensor in the description's axes at
    the initial configuration (a number: isotropic), symmetric positive
    semi-definite. A spatial link of two joints (an S–S rod) has an idle spin about
    its axis: its centre of mass lies on the axis, its inertia is a number, the
    transverse moment `I_t`, stored as `I_t (1 − e eᵀ)` (no axial inertia)."""
    planar = geometry == "planar"
    zero_inertia = 0.0 if planar else np.zeros((3, 3))
    if props is None or not any(k in props for k in ("mass", "com", "inertia")):
        return 0.0, np.zeros(3), zero_inertia
    # a spatial link of two joints is a rod: its first joint, unit axis and length
    a, b = (np.asarray(rows[i], dtype=float) for i in idx[:2])
    length = float(np.linalg.norm(b - a))
    e = (b - a) / length if length > 0 else b - a
    rod = geometry == "spatial" and len(idx) == 2
    mass = _number(f"links.{lname}.mass", props.get("mass", 0.0))
    raw = props.get("inertia", 0.0)
    if planar or isinstance(raw, (int, float)):
        inertia = _number(f"links.{lname}.inertia", raw)
        inertia = inertia if planar else inertia * np.eye(3)
    else:
        try:
            inertia = np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            inertia = np.zeros(0)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise LinkageError(f"links.{lname}.inertia: a number or a 3×3 tensor; got {raw!r}")
        if not np.allclose(inertia, inertia.T) or np.linalg.eigvalsh(inertia).min() < -1e-12 * np.abs(inertia).max():
            raise LinkageError(f"links.{lname}.inertia: must be symmetric positive semi-definite; got {raw!r}")
    if rod:
        # a binary S–S link is a rod: its spin about its own axis is not fixed by the
        # joints (idle), so it carries no axial inertia and a transverse moment I_t
        transverse = np.eye(3) - np.outer(e, e)
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            inertia = float(raw) * transverse
        elif not np.allclose(
            inertia, 0.5 * np.trace(inertia) * transverse, atol=1e-12 * max(1.0, np.abs(inertia).max())
        ):
            raise LinkageError(
                f"links.{lname}.inertia: a binary S–S link is a rod whose spin about its axis is idle; give its "
                f"transverse moment about the centre of mass as a number (or the tensor I_t (1 − e eᵀ)); got {raw!r}"
            )
    com = props.get("com")
    want = 2 if planar else 3
    if com is None:
        if mass > 0:
            raise LinkageError(
                f"links.{lname}.com: a link with mass needs its centre of mass (a point or a joint name)"
            )
        return mass, np.zeros(3), inertia
    if isinstance(com, str):
        if com not in index or index[com] not in idx:
            raise LinkageError(f"links.{lname}.com: {com!r} is not a joint of this link")
        return mass, np.asarray(rows[index[com]], dtype=float), inertia
    try:
        c = np.asarray(com, dtype=float)
    except (TypeError, ValueError):
        raise LinkageError(f"links.{lname}.com: need {want} numbers or a joint name; got {com!r}") from None
    if c.shape != (want,) or not np.all(np.isfinite(c)):
        raise LinkageError(f"links.{lname}.com: need {want} finite numbers; got {com!r}")
    if rod:
        off = (c - a) - ((c - a) @ e) * e
        if np.linalg.norm(off) > 1e-9 * length:
            ends = "–".join(n for n, i in index.items() if i in idx)
            raise LinkageError(
                f"links.{lname}.com: a binary S–S link's centre of mass must lie on its axis "
                f"{ends}; {com!r} is {np.linalg.norm(off):.3g} off it"
            )
    return mass, np.concatenate([c, np.zeros(3 - want)]), inertia


def _gravity(g, geometry):
    if g is None:
        return np.array([0.0, -9.81, 0.0]) if geometry == "planar" else np.array([0.0, 0.0, -9.81])
    want = 2 if geometry == "planar" else 3
    try:
        a = np.asarray(g, dtype=float)
    except (TypeError, ValueError):
        raise LinkageError(f"gravity: {want} numbers; got {g!r}") from None
    if a.shape != (want,) or not np.all(np.isfinite(a)):
        raise LinkageError(f"gravity: {want} finite numbers; got {g!r}")
    return np.concatenate([a, np.zeros(3 - want)])


def read(path: Path) -> dict:
    """A description from a JSON (`.json`) or TOML (`.toml`) file."""
    try:
        text = path.read_text()
    except OSError as e:
        raise LinkageError(f"{path}: cannot read ({e})") from None
    try:
        return tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        raise LinkageError(f"{path}: not valid {'TOML' if path.suffix.lower() == '.toml' else 'JSON'} ({e})") from None


def _parse_inputs(inp, geometry, names, types, link_names, link_tuples, g):
    """One input, or a list of several: `(kind, link, joints)` each. Several inputs
    drive distinct links (each turning about or sliding along its own joint with the
    ground) or actuators between distinct pairs of joints."""
    if not isinstance(inp, list):
        return [parse_input(inp, geometry, names, types, link_names, link_tuples, g)]
    if not inp:
        raise LinkageError("inputs: a non-empty list of inputs")
    out = []
    for i, one in enumerate(inp):
        try:
            out.append(parse_input(one, geometry, names, types, link_names, link_tuples, g))
        except LinkageError as e:
            raise LinkageError(f"inputs[{i}]: {e}") from None
    for i, (kind, link, joints) in enumerate(out):
        for k, (kind2, link2, joints2) in enumerate(out[:i]):
            if (link >= 0 and link == link2) or (link < 0 and kind == kind2 and set(joints) == set(joints2)):
                what = f"link {link_names[link]}" if link >= 0 else f"joints {[names[j] for j in joints]}"
                raise LinkageError(f"inputs[{i}]: drives the same {what} as inputs[{k}]")
            if link >= 0 and link2 >= 0:
                common = set(link_tuples[link]) & set(link_tuples[link2]) - set(link_tuples[g])
                if common:
                    raise LinkageError(
                        f"inputs[{i}]: its link {link_names[link]} and the link {link_names[link2]} of inputs[{k}] "
                        f"share joint {names[min(common)]}, which both would place"
                    )
    return out


def parse_input(inp, geometry, names, types, link_names, link_tuples, g):
    if isinstance(inp, str):
        inp = {"link": inp}
    if not isinstance(inp, dict):
        raise LinkageError(
            f"input: a link name or a mapping {{type, link, joint}} / {{type: actuator, joints}}; got {inp!r}"
        )
    kind = inp.get("type")
    if kind is not None and kind not in INPUTS:
        raise LinkageError(f"input.type: one of {INPUTS}; got {kind!r}")
    if kind == "actuator":
        js = inp.get("joints")
        if not (isinstance(js, (list, tuple)) and len(js) == 2):
            raise LinkageError(f"input.joints: an actuator acts between two joints; got {js!r}")
        for n in js:
            if n not in names or types[names.index(n)] in ("P", AXIS):
                raise LinkageError(f"input.joints: {n!r} is not a point joint of this linkage")
        a, b = names.index(js[0]), names.index(js[1])
        if a == b:
            raise LinkageError("input.joints: an actuator needs two different joints")
        if any(a in lk and b in lk for lk in link_tuples):
            raise LinkageError(f"input.joints: {js[0]} and {js[1]} are on the same link; the actuator would be rigid")
        return "actuator", -1, (a, b)
    if "link" not in inp and "joint" in inp:  # a joint's coordinate: its turn or its slide
        return _joint_input(inp, kind, geometry, names, types, link_names, link_tuples, g)
    link = inp.get("link")
    if link not in link_names:
        raise LinkageError(f"input.link: unknown link {link!r}; links are {link_names}")
    li = link_names.index(link)
    if li == g:
        raise LinkageError("input.link: the input link cannot be the ground")
    shared = [j for j in link_tuples[li] if j in link_tuples[g] and types[j] not in ("tracer", AXIS)]
    # a spatial P or C joint with the ground: the ground holds it, the link its side B copy
    cut = len(str(link)) + 1
    shared += [
        names.index(names[j][:-cut])
        for j in link_tuples[li]
        if types[j] == SIDE and names.index(names[j][:-cut]) in link_tuples[g]
    ]
    if "joint" in inp:
        if inp["joint"] not in names or names.index(inp["joint"]) not in shared:
            raise LinkageError(f"input.joint: {inp['joint']!r} is not a joint between {link!r} and the ground")
        shared = [names.index(inp["joint"])]
    if len(shared) != 1:
        raise LinkageError(
            f"input: link {link!r} must share exactly one joint with the ground; it shares {[names[j] for j in shared]}"
        )
    (s,) = shared
    K = KINDS[types[s]]
    if geometry == "spatial" and len(K.coordinates) != 1:
        raise LinkageError(
            f'input: a spatial linkage is driven by an actuator ({{"type": "actuator", "joints": [A, B]}}), '
            f"turned about a revolute (R) joint with the ground or slid along a prismatic (P) one; {names[s]} is a "
            f"joint of type {types[s]}"
            + (
                " (its turn or its slide alone would leave the other free: drive one of them by the joint alone, "
                f'{{"type": "revolute" | "prismatic", "joint": "{names[s]}"}})'
                if len(K.coordinates) > 1
                else ""
            )
        )
    inferred = K.coordinates[0]
    if kind is not None and kind != inferred:
        raise LinkageError(
            f"input.type: {kind!r} does not match joint {names[s]} of type {types[s]} "
            f"(a revolute input turns about a point, a prismatic one slides along a line or plane)"
        )
    return inferred, li, (s,)


def joint_sides(names, types, link_tuples, link_names, s):
    """A spatial R, P or C joint's two sides `(A, B, p, q, pB)`: the links it joins
    (an R joint's in the description's link order; a P or C joint's side A carries its
    axis, side B slides along it), the axis's point and axis point (side A's), and
    side B's point on the axis (the joint itself for an R joint)."""
    q = names.index(names[s] + AXIS_SUFFIX)
    if not KINDS[types[s]].slides("spatial"):
        holders = [k for k, m in enumerate(link_tuples) if s in m]
        if len(holders) != 2:
            raise LinkageError(
                f"input.joint: joint {names[s]} joins {len(holders)} links; its turn is an input only between two"
            )
        return holders[0], holders[1], s, q, s
    (a,) = [k for k, m in enumerate(link_tuples) if s in m]
    (b,) = [k for k, n in enumerate(link_names) if f"{names[s]}.{n}" in names and k != a]
    return a, b, s, q, names.index(f"{names[s]}.{link_names[b]}")


def _joint_input(inp, kind, geometry, names, types, link_names, link_tuples, g):
    """`{"type": "revolute" | "prismatic", "joint": NAME}` without a link: the joint's
    own coordinate, the turn (`turn`) or slide (`slide`) of its side B relative to its
    side A (`joint_sides`), held by one equation of the closure (as an actuator's
    length is); a joint with the ground whose type allows it is the classic input
    that prescribes the whole link."""
    name = inp["joint"]
    if name not in names or types[names.index(name)] in ("tracer", AXIS, SIDE):
        raise LinkageError(f"input.joint: {name!r} is not a joint of this linkage")
    s = names.index(name)
    t = types[s]
    K = KINDS[t]
    if len(K.coordinates) <= 1:  # a joint with the ground: the classic input, which prescribes the whole link
        if geometry == "spatial" and K.coordinates:
            sides = joint_sides(names, types, link_tuples, link_names, s)[:2]
        else:
            sides = tuple(k for k, m in enumerate(link_tuples) if s in m)
        if g in sides and len(sides) == 2:
            (link,) = [k for k in sides if k != g]
            out = {"link": link_names[link], "joint": name} | ({"type": kind} if kind is not None else {})
            return parse_input(out, geometry, names, types, link_names, link_tuples, g)
    if geometry != "spatial" or not K.coordinates:
        raise LinkageError(
            f"input.joint: a joint's own coordinate drives a spatial R, P or C joint, or a joint with the ground; "
            f"{name} is a joint of type {t} between moving links of a {geometry} linkage"
        )
    if kind is None and len(K.coordinates) > 1:
        raise LinkageError(
            f"input.type: joint {name} is cylindrical: say which of its coordinates drives it, 'revolute' (its "
            "turn) or 'prismatic' (its slide)"
        )
    if kind is None:
        kind = K.coordinates[0]
    if kind not in K.coordinates:
        raise LinkageError(
            f"input.type: {kind!r} is not a coordinate of joint {name} of type {t} (an R joint turns, a P joint "
            "slides, a C joint does both)"
        )
    return ("turn" if kind == "revolute" else "slide"), -1, (s,)


# --------------------------------------------------------------------------- TOML writer (our schema only)


def _toml_value(v):
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(e) for e in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(e)}" for k, e in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(d: dict) -> str:
    lines = []
    for key, val in d.items():
        if not isinstance(val, dict) or key == "input":
            lines.append(f"{key} = {_toml_value(val)}")
    for key, val in d.items():
        if isinstance(val, dict) and key != "input":
            lines.append(f"\n[{key}]")
            for k2, v2 in val.items():
                lines.append(f"{json.dumps(k2)} = {_toml_value(v2)}")
    return "\n".join(lines) + "\n"

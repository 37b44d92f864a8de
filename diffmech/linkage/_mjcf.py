"""MJCF out and in: a linkage as a MuJoCo model (a spanning tree of its links, the
joints it cuts as equality constraints) and a MuJoCo model as a linkage.

Out (`to_mjcf`). Every link is a body whose frame has the world's orientation at the
initial configuration and its origin at the joint that hangs it from its parent, so
`qpos0` (hinges and slides 0, balls the identity) is the linkage's exactly closed
configuration and every local vector is a world vector less the body's origin. The
spanning tree is grown from the ground, breadth first, taking the inputs' joints
first, then P, C and U joints (no equality constraint states them), then R and S
joints; every joint left out is cut: an S joint becomes a `connect` between a site on
each side, an R joint two `connect`s, at its point and at its axis point (together
they leave the turn about the axis free). Inertials are the links' mass properties
(`fullinertia`, about the centre of mass); an S–S rod's idle spin gets a small axial
moment (MuJoCo needs a positive-definite tensor; nothing drives that spin) and a
massless link a small mass (`<compiler boundmass boundinertia>`). Inputs become
`motor`s on their joints (an actuator's, on a spatial tendon between its joints).

In (`from_mjcf`). The model is compiled by MuJoCo itself (`mujoco.MjModel`), so
defaults, classes and frames resolve as MuJoCo resolves them, and read at `qpos0`
(`mj_kinematics`): every body with its joints to its parent is a link (a body
without joints belongs to its parent's link), hinge, slide and ball joints become R,
P and S joints at their world anchors, two hinges of one body meeting at a point
with perpendicular axes a U joint, a hinge and a slide on one axis a C joint;
`connect` equalities close loops (an S joint at the anchor; two between the same
bodies, an R joint through their anchors), `weld` equalities join their bodies into
one link; joint actuators are the inputs. Inertials come from the compiled model
(centre of mass and the tensor in world axes at `qpos0`).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import output_path
from . import _schema
from ._joints import KINDS
from ._schema import LinkageError

ROD_AXIAL = 1e-9  # an S–S rod's axial moment, relative to its transverse one
MIN_MASS = 1e-9  # kg, for a massless link (MuJoCo refuses a massless moving body)


def _vec(*xs) -> str:
    return " ".join(repr(float(x)) for x in np.ravel(xs))


def _full(inertia) -> str:
    """MJCF `fullinertia` order: Ixx Iyy Izz Ixy Ixz Iyz."""
    i = np.asarray(inertia, dtype=float)
    return _vec(i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2])


def _edges(lk):
    """Every joint between two links: `(joint, link A, link B, kind)` (a P or C joint's
    side A first; a joint of k links gives k − 1 edges)."""
    out = []
    for j, t in enumerate(lk.types):
        if not KINDS[t].joint:
            continue
        if KINDS[t].slides(lk.geometry):
            a, b = _schema.joint_sides(lk.names, lk.types, lk.links, lk.link_names, j)[:2]
            out.append((j, a, b, t))
        else:
            holders = [k for k, m in enumerate(lk.links) if j in m]
            for b in holders[1:]:
                out.append((j, holders[0], b, t))
    return out


def _tree(lk, edges):
    """The spanning tree: `{child: (parent, edge)}` grown from the ground by Prim's
    rule, the next edge the best by (an input's joint first, then by `_ORDER`, then
    the parent nearest the ground: breadth first, the tree kept shallow, then the
    file's order); and the edges left out (cut)."""
    driven = {joints[0] for kind, _, joints in lk.topology.inputs if kind != "actuator"}
    # a joint with a load across it joins the tree next (MuJoCo's joint elements act on its joints)
    loaded = {ja for kind, (ja, *_) in zip(lk.load_kinds, lk.load_index) if kind in _schema.JOINT_LOADS}
    parent: dict[int, tuple[int, int] | None] = {lk.ground: None}
    depth = {lk.ground: 0}
    used = set()
    while True:
        best = None
        for e, (j, a, b, t) in enumerate(edges):
            if e in used or (a in parent) == (b in parent):
                continue
            child, par = (b, a) if a in parent else (a, b)
            key = (j not in driven, j not in loaded, KINDS[t].mjcf_order, depth[par], e)
            if best is None or key < best[0]:
                best = (key, e, child, par)
        if best is None:
            break
        _, e, child, par = best
        parent[child], depth[child] = (par, e), depth[par] + 1
        used.add(e)
    missing = [lk.link_names[k] for k in range(len(lk.links)) if k not in parent]
    if missing:
        raise LinkageError(f"to_mjcf: links {missing} are not joined to the ground")
    return parent, [e for e in range(len(edges)) if e not in used]


def mjcf_string(lk, *, softness: str = "stiff", timestep: float | None = None) -> str:
    """The MJCF text of a spatial linkage (see the module docstring)."""
    if lk.geometry == "spherical":
        raise LinkageError(
            "to_mjcf: a spherical linkage; describe it in space (geometry 'spatial', R joints with their axes through "
            "the centre) to export it"
        )
    if softness not in ("default", "stiff"):
        raise LinkageError(f"to_mjcf: softness is 'default' or 'stiff'; got {softness!r}")
    if timestep is None:
        timestep = 2e-3 if softness == "default" else 5e-4
    w = _Writer(lk)
    opts = "" if softness == "default" else f' solref="{_vec(2 * timestep, 1.0)}" solimp="0.9999 0.9999 0.001 0.5 2"'
    w.loops(opts)
    w.inputs()
    w.point_loads()
    w.gears(opts)
    gravity = np.zeros(3)
    gravity[: lk.dim] = np.asarray(lk.gravity, dtype=float)[: lk.dim]
    world = [f'    <site name="{s}" pos="{_vec(p)}"/>' for s, p in w.sites[lk.ground]] + w.body(
        lk.ground, np.zeros(3), 2
    )
    nl = "\n"
    sections = [
        f'<mujoco model="{lk.name}">',
        '  <compiler angle="radian" autolimits="true" boundmass="1e-12" boundinertia="1e-15"/>',
        f'  <option timestep="{timestep!r}" integrator="RK4" gravity="{_vec(gravity)}">',
        '    <flag contact="disable"/>',
        "  </option>",
        "  <worldbody>",
        nl.join(world),
        "  </worldbody>",
    ]
    for tag, lines in (("tendon", w.tendons), ("equality", w.eqs), ("actuator", w.acts)):
        if lines:
            sections += [f"  <{tag}>", nl.join(lines), f"  </{tag}>"]
    sections.append("</mujoco>")
    return nl.join(sections) + nl


class _Writer:
    """The parts of a linkage's MJCF: its kinematic tree (bodies, joints, inertias),
    the sites, the loops' equality constraints, the inputs' motors and tendons."""

    def __init__(self, lk):
        self.lk = lk
        self.planar = planar = lk.geometry == "planar"
        X = np.asarray(lk.initial(), dtype=float)
        if planar:  # points in the plane z = 0; a line a x + b y + c = 0 keeps its row
            is_line = np.asarray([not KINDS[t].is_point("planar") for t in lk.types])[:, None]
            X = np.where(is_line, X, X * [1.0, 1.0, 0.0])
        self.X = X
        self.names, self.link_names = lk.names, lk.link_names
        self.edges = edges = _edges(lk)
        self.parent, self.cut = _tree(lk, edges)
        self.children = collections.defaultdict(list)
        for child, (par, e) in ((c, v) for c, v in self.parent.items() if v is not None):
            self.children[par].append((child, e))
        self.masses, self.coms, self.inertias = (np.asarray(a, dtype=float) for a in (lk.masses, lk.coms, lk.inertias))
        first = {self.input_edge(link, joints[0]) for kind, link, joints in lk.topology.inputs if kind != "actuator"}
        # MuJoCo's joint names: the joint's, or for a joint of three links or more
        # `<joint>.<child>` beyond the first (an input's edge first)
        tree_edges = sorted((v[1] for v in self.parent.values() if v is not None), key=lambda e: (e not in first, e))
        self.edge_name, seen = {}, set()
        for e in tree_edges:
            j = edges[e][0]
            self.edge_name[e] = self.names[j] if j not in seen else f"{self.names[j]}.{self.link_names[edges[e][2]]}"
            seen.add(j)
        self.sites = collections.defaultdict(list)  # link: [(site name, point)]
        self.eqs, self.acts, self.tendons = [], [], []

    def input_edge(self, link, j):
        """The tree edge an input drives: its joint, with its link when it has one."""
        for v in self.parent.values():
            if v is not None and self.edges[v[1]][0] == j and (link < 0 or link in self.edges[v[1]][1:3]):
                return v[1]
        raise LinkageError(f"to_mjcf: input joint {self.names[j]} is not in the tree")  # the tree takes inputs first

    def line_point(self, j):
        """A planar line's point nearest the origin, and its direction (b, −a)."""
        a, b, c = self.X[j]
        n2 = a * a + b * b
        return np.array([-c * a / n2, -c * b / n2, 0.0]), np.array([b, -a, 0.0]) / np.sqrt(n2)

    def origin_of(self, j):
        return self.line_point(j)[0] if not KINDS[self.lk.types[j]].is_point(self.lk.geometry) else self.X[j]

    def axis_of(self, j, link=None):
        lk, names = self.lk, self.names
        if self.planar:
            return self.line_point(j)[1] if not KINDS[lk.types[j]].is_point("planar") else np.array([0.0, 0.0, 1.0])
        q = names.index(names[j] + _schema.AXIS_SUFFIX if link is None else f"{names[j]}{_schema.AXIS_SUFFIX}.{link}")
        d = self.X[q] - self.X[j]
        return d / np.linalg.norm(d)

    def joint_xml(self, e, child, pad):
        j, a, b, t = self.edges[e]
        n = self.edge_name[e]
        K = KINDS[t]
        if K.has_cross:  # the parent's cross axis, then the child's
            par = a if b == child else b
            return [
                f'{pad}<joint name="{n}.{self.link_names[k]}" type="{kind}" pos="0 0 0" '
                f'axis="{_vec(self.axis_of(j, self.link_names[k]))}"/>'
                for kind, k in zip(K.mjcf, (par, child))
            ]
        # a ball; a hinge or a slide along the joint's axis (a planar P's line); a C joint's slide, then its turn
        return [
            f'{pad}<joint name="{n}{".turn" if i else ""}" type="{kind}" pos="0 0 0"'
            + ("" if kind == "ball" else f' axis="{_vec(self.axis_of(j))}"')
            + (self.joint_loads(e, child) if kind in ("hinge", "slide") and self.planar else "")
            + "/>"
            for i, kind in enumerate(K.mjcf)
        ]

    def joint_loads(self, e, child) -> str:
        """The loads across a tree joint as its hinge's (a planar P joint's slide's)
        attributes: a spring's `stiffness` and `springref`, a damper's `damping`,
        Coulomb friction's `frictionloss` (MuJoCo's is dry friction, not smoothed) and a
        stop's `range` (MuJoCo's soft limit, its own stiffness); the joint moves the
        child relative to its parent, the load its second link relative to its first."""
        j, a, b = self.edges[e][:3]
        parent = a if b == child else b
        k = ref = c = fric = 0.0
        stops = []
        for kind, (ja, la, _, lb), p in zip(self.lk.load_kinds, self.lk.load_index, np.asarray(self.lk.load_params)):
            if kind not in _schema.JOINT_LOADS or ja != j or {la, lb} != {parent, child}:
                continue
            sign = 1.0 if (la, lb) == (parent, child) else -1.0
            if kind in _schema.SPRING_LOADS:
                k, ref = k + p[0], ref + p[0] * sign * p[1]
            elif kind in _schema.DAMPER_LOADS:
                c += p[0]
            elif kind == "friction":
                fric += p[0]
            else:
                stops.append(sorted((sign * p[1], sign * p[2])))
        if len(stops) > 1:
            raise LinkageError(f"to_mjcf: joint {self.names[j]} has {len(stops)} stops; MuJoCo's hinge has one range")
        out = f' stiffness="{_vec(k)}" springref="{_vec(ref / k)}"' if k > 0 else ""
        out += f' damping="{_vec(c)}"' if c > 0 else ""
        out += f' frictionloss="{_vec(fric)}"' if fric > 0 else ""
        return out + (f' limited="true" range="{_vec(*stops[0])}"' if stops else "")

    def inertial(self, k, origin, pad):
        lk = self.lk
        m, c, inertia = self.masses[k], self.coms[k], self.inertias[k]
        if self.planar and m > 0:  # about z; MuJoCo needs A + B ≥ C: the x and y moments half of it
            c = np.array([c[0], c[1], 0.0])
            big = max(float(inertia), MIN_MASS)
            diag = _vec(big / 2, big / 2, big)
            return f'{pad}<inertial pos="{_vec(c - origin)}" mass="{float(m)!r}" diaginertia="{diag}"/>'
        pts = [j for j in lk.links[k] if not KINDS[lk.types[j]].carried]
        if len(pts) == 2 and m > 0:  # an S–S rod: a small axial moment for its idle spin
            e = self.X[pts[1]] - self.X[pts[0]]
            e = e / np.linalg.norm(e)
            inertia = inertia + ROD_AXIAL * 0.5 * np.trace(inertia) * np.outer(e, e)
        if m <= 0:
            small = _vec(MIN_MASS, MIN_MASS, MIN_MASS)
            return f'{pad}<inertial pos="0 0 0" mass="{MIN_MASS!r}" diaginertia="{small}"/>'
        return f'{pad}<inertial pos="{_vec(c - origin)}" mass="{float(m)!r}" fullinertia="{_full(inertia)}"/>'

    def loops(self, opts):
        """The cut joints' equality constraints (and their sites)."""
        lk, names, link_names, X = self.lk, self.names, self.link_names, self.X
        for e in self.cut:
            j, a, b, t = self.edges[e]
            for kind, (ja, la, _, lb) in zip(lk.load_kinds, lk.load_index):
                if kind in _schema.JOINT_LOADS and ja == j and {la, lb} == {a, b}:
                    raise LinkageError(
                        f"to_mjcf: the {kind} across joint {names[j]} ({link_names[a]}–{link_names[b]}): the joint "
                        "closes a loop, and MuJoCo's joint elements act on the joints of its tree"
                    )
            if not KINDS[t].mjcf_connect:
                raise LinkageError(
                    f"to_mjcf: joint {names[j]} ({t}) closes a loop, and MuJoCo's equality constraints state only "
                    "points (connect) and rigid joins (weld); make it part of the tree or describe it by R and S joints"
                )
            # in the plane every hinge turns about z: one connect leaves the cut joint its turn
            points = [j] + ([names.index(names[j] + _schema.AXIS_SUFFIX)] if KINDS[t].has_axis(lk.geometry) else [])
            for i, p in enumerate(points):
                tag = names[j] + ("" if i == 0 else ".axis")
                if any(f'connect name="{tag}"' in q for q in self.eqs):  # a joint of three links or more
                    tag = f"{tag}.{link_names[b]}"
                s1, s2 = f"{tag}@{link_names[a]}", f"{tag}@{link_names[b]}"
                self.sites[a].append((s1, X[p]))
                self.sites[b].append((s2, X[p]))
                self.eqs.append(f'    <connect name="{tag}" site1="{s1}" site2="{s2}"{opts}/>')

    def inputs(self):
        """The inputs' motors (an actuator's along its tendon) and the carried points' sites."""
        lk, names, X = self.lk, self.names, self.X
        for i, (kind, link, joints) in enumerate(lk.topology.inputs):
            name = f"input{i}"
            if kind == "actuator":
                pa, pb = joints
                la, lb = (next(k for k, m in enumerate(lk.links) if p in m) for p in (pa, pb))
                self.sites[la].append((f"{name}@{names[pa]}", X[pa]))
                self.sites[lb].append((f"{name}@{names[pb]}", X[pb]))
                self.tendons.append(
                    f'    <spatial name="{name}"><site site="{name}@{names[pa]}"/><site site="{name}@{names[pb]}"/>'
                    "</spatial>"
                )
                self.acts.append(f'    <motor name="{name}" tendon="{name}" gear="1"/>')
                continue
            turn = kind == "turn" and len(KINDS[lk.types[joints[0]]].mjcf) > 1  # a C joint's: its second MuJoCo joint
            n = self.edge_name[self.input_edge(link, joints[0])] + (".turn" if turn else "")
            self.acts.append(f'    <motor name="{name}" joint="{n}" gear="1"/>')
        for j, t in enumerate(lk.types):
            if KINDS[t].carried:
                (k,) = [k for k, m in enumerate(lk.links) if j in m]
                self.sites[k].append((names[j], X[j]))

    def point_loads(self):
        """Each spring or damper between two points as a spatial tendon between sites at
        its joints (MuJoCo's tendon `stiffness` with its `springlength`, its `damping`);
        each constant force or couple, which MuJoCo has no model element for
        (`xfrc_applied` is data), as a comment naming it."""
        lk, X = self.lk, self.X
        if not lk.load_kinds:
            return
        for i, (kind, (ja, la, jb, lb), p) in enumerate(zip(lk.load_kinds, lk.load_index, np.asarray(lk.load_params))):
            if kind in ("spring", "damper"):
                name = f"{kind}{i}"
                self.sites[la].append((f"{name}@{self.names[ja]}", X[ja]))
                self.sites[lb].append((f"{name}@{self.names[jb]}", X[jb]))
                law = (
                    f'stiffness="{_vec(p[0])}" springlength="{_vec(p[1])}"'
                    if kind == "spring"
                    else f'damping="{_vec(p[0])}"'
                )
                self.tendons.append(
                    f'    <spatial name="{name}" {law}><site site="{name}@{self.names[ja]}"/>'
                    f'<site site="{name}@{self.names[jb]}"/></spatial>'
                )
            elif kind in ("force", "torque"):
                self.tendons.append(
                    f"    <!-- not exported: the constant {kind} on link {self.link_names[la]} (loads[{i}]); "
                    "MuJoCo applies one as data (MjData.xfrc_applied), not as a model element -->"
                )

    def gears(self, opts):
        """Each gear pair as a fixed tendon pinned at its reference length (MuJoCo's
        gear coupling): its equation `r1 (ψ1 − ψc) + r2 (ψ2 − ψc) = 0` in the links'
        turns, each the sum of the hinges on its path from the world (every planar
        hinge turns about z); a rack's slide is its P joint's own coordinate."""
        lk = self.lk
        if not lk.gears:
            return
        for i, ((kind, la, ja, lb, jb, c, sign), p) in enumerate(zip(lk.gears.pairs, np.asarray(lk.gear_params))):
            coef: dict[str, float] = collections.defaultdict(float)
            terms = (
                [(la, p[0]), (lb, p[1]), (c, -p[0] - p[1])]
                if kind == "gear"
                else [(la, -sign * p[0]), (c, sign * p[0])]
            )
            for link, k in terms:
                for e in self.path(link):
                    if KINDS[self.edges[e][3]].mjcf == ("hinge",):
                        coef[self.edge_name[e]] += k
            if kind == "rack":
                (e,) = [v[1] for v in self.parent.values() if v is not None and self.edges[v[1]][0] == jb] or [None]
                if e is None or {self.edges[e][1], self.edges[e][2]} != {lb, c}:
                    raise LinkageError(f"to_mjcf: rack {self.link_names[lb]} slides on no joint of the tree")
                coef[self.edge_name[e]] += 1.0 if self.parent[lb] == (c, e) else -1.0
            name = f"gear{i}"
            body = "".join(f'<joint joint="{n}" coef="{float(k)!r}"/>' for n, k in coef.items() if k != 0.0)
            self.tendons.append(f'    <fixed name="{name}">{body}</fixed>')
            self.eqs.append(f'    <tendon name="{name}" tendon1="{name}"{opts}/>')

    def path(self, link):
        """The tree edges from the world to `link`."""
        out = []
        while (up := self.parent[link]) is not None:
            link, e = up
            out.append(e)
        return out

    def body(self, k, origin, depth):
        """The bodies below link `k` (at `origin`), nested."""
        pad = "  " * depth
        out = []
        for child, e in self.children[k]:
            o = self.origin_of(self.edges[e][0])
            out.append(f'{pad}<body name="{self.link_names[child]}" pos="{_vec(o - origin)}">')
            out += self.joint_xml(e, child, pad + "  ")
            out.append(self.inertial(child, o, pad + "  "))
            out += [f'{pad}  <site name="{s}" pos="{_vec(p - o)}"/>' for s, p in self.sites[child]]
            out += self.body(child, o, depth + 1)
            out.append(f"{pad}</body>")
        return out


def to_mjcf(lk, path, *, softness: str = "stiff", timestep: float | None = None) -> Path:
    """Write a spatial linkage as a MuJoCo model (MJCF): a spanning tree of its links,
    the joints it cuts as `connect` equalities (an R joint as two, on its axis),
    inertials from its mass properties, a `motor` on each input, `qpos0` its exactly
    closed initial configuration (see `diffmech.linkage._mjcf`); its loads where
    MuJoCo has the element: a spring or damper between two points as a spatial tendon
    (`stiffness`, `springlength`, `damping`), a load across a joint as the joint's
    attributes, a gear pair as a fixed tendon held at its length (a constant force or
    couple, which MuJoCo applies as data, is a comment in the file).

    **Arguments:** `lk`: a spatial linkage; `path`: the file to write; `softness`:
    `"stiff"` (the equalities' time constant twice the timestep, impedance 0.9999)
    or `"default"` (MuJoCo's); `timestep`: the model's timestep (default 5e-4 s stiff,
    2e-3 s default).

    **Returns:** the path written.
    """
    path = output_path("linkage.to_mjcf", path)
    path.write_text(mjcf_string(lk, softness=softness, timestep=timestep))
    return path


# --------------------------------------------------------------------------- in


def _mujoco() -> Any:
    try:
        import mujoco
    except ImportError:  # pragma: no cover - the extra is named
        raise LinkageError("from_mjcf: needs the `mujoco` package (pip install 'diffmech[formats]')") from None
    return mujoco


class Groups:
    """Union–find over `n` items: the bodies (or links) that make one rigid link."""

    def __init__(self, n: int):
        self.root = list(range(n))

    def find(self, b: int) -> int:
        while self.root[b] != b:
            self.root[b] = self.root[self.root[b]]
            b = self.root[b]
        return b

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.root[max(ra, rb)] = min(ra, rb)


def link_mass_properties(bodies, joints) -> dict:
    """A link's `mass`, `com` and `inertia` (about the centre of mass, world axes) from
    its bodies `(mass, com (3,), inertia about that com in world axes)`; an S–S rod
    (two joints, both S) gets its transverse moment, a number (its axial one is
    idle). Empty for a massless link."""
    mass = float(sum(m for m, _, _ in bodies))
    if mass <= 0:
        return {}
    com = np.sum([m * np.asarray(c) for m, c, _ in bodies], axis=0) / mass
    inertia = np.zeros((3, 3))
    for m, c, tensor in bodies:
        r = np.asarray(c) - com
        inertia += np.asarray(tensor) + m * (r @ r * np.eye(3) - np.outer(r, r))
    out: dict = {"mass": mass, "com": com.tolist(), "inertia": inertia.tolist()}
    points = [j for j in joints if j["type"] != "tracer"]
    if len(points) == 2 and all(j["type"] == "S" for j in points):
        a = np.asarray(points[0]["coords"])
        e = np.asarray(points[1]["coords"]) - a
        e = e / np.linalg.norm(e)
        out["inertia"] = float(0.5 * (np.trace(inertia) - e @ inertia @ e))
        on_axis = a + ((com - a) @ e) * e  # a rod's spin is idle: its centre of mass on its axis
        out["com"] = on_axis.tolist()
        out["com_moved"] = float(np.linalg.norm(com - on_axis))
    return out


def note_moved_coms(links: dict) -> str:
    """The description's note of the S–S rods whose centre of mass was moved onto
    their axis (removing the entries' `com_moved`)."""
    moved = {n: e.pop("com_moved") for n, e in links.items() if "com_moved" in e}
    moved = {n: d for n, d in moved.items() if d > 0}
    if not moved:
        return ""
    return "; S–S rods' centres of mass moved onto their axes: " + ", ".join(f"{n} {d:.3g}" for n, d in moved.items())


def _note_unread(m, joint_names) -> str:
    """The description's note of the joints' own properties the reader does not carry
    over (a spatial linkage has no loads across joints): springs (`stiffness`), damping,
    friction loss, armature and limits, each with the joints that have them."""
    props = {
        "stiffness": m.jnt_stiffness,
        "damping": m.dof_damping[m.jnt_dofadr],
        "frictionloss": m.dof_frictionloss[m.jnt_dofadr],
        "armature": m.dof_armature[m.jnt_dofadr],
        "range": m.jnt_limited,
    }
    found = [(k, [joint_names[j] for j in np.flatnonzero(np.asarray(v) != 0)]) for k, v in props.items()]
    found = [(k, names) for k, names in found if names]
    if not found:
        return ""
    return "; not read (a spatial linkage has no loads across joints): " + "; ".join(
        f"{k} of {', '.join(names)}" for k, names in found
    )


def _close(m, d, mujoco, steps: int = 50) -> float:
    """Project `d.qpos` onto the equality constraints, in place: Gauss–Newton steps of
    least norm on MuJoCo's own equality residual and Jacobian (`efc_pos`, `efc_J`),
    positions integrated on the joints' manifolds (`mj_integratePos`). Returns the
    largest equality residual left."""
    left = np.inf
    for _ in range(steps):
        mujoco.mj_forward(m, d)
        rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        if not np.any(rows):
            return 0.0
        r = np.asarray(d.efc_pos)[rows]
        left = float(np.max(np.abs(r)))
        if left <= 1e-14:
            break
        J = np.asarray(d.efc_J).reshape(-1, m.nv)[rows]
        dq = -np.linalg.lstsq(J, r, rcond=None)[0]
        mujoco.mj_integratePos(m, d.qpos, dq, 1.0)
    mujoco.mj_kinematics(m, d)
    return left


def mjcf_spec(path, *, tol: float = 1e-9, close: bool = False) -> dict:
    """The linkage description of a MuJoCo model file (see the module docstring)."""
    mujoco = _mujoco()
    path = Path(path)
    if not path.is_file():
        raise LinkageError(f"{path}: no such file")
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as e:  # MuJoCo's message names the element and its line
        why = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
        raise LinkageError(f"{path}: MuJoCo cannot compile it: {why}") from None
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    if close and _close(m, d, mujoco) > 1e-12:
        raise LinkageError(f"{path}: close=True: the loops cannot be closed near qpos0 (the equalities disagree)")
    r = _Reader(mujoco, m, d, path, tol)
    r.body_joints()
    r.connects()
    r.tracers()
    inputs = r.inputs()
    links = r.links()
    return {
        "name": path.stem,
        "geometry": "spatial",
        "description": f"read from {path.name} by MuJoCo's compiler (mujoco {mujoco.__version__})"
        + note_moved_coms(links)
        + _note_unread(m, r.joint_names),
        "joints": r.joints,
        "links": links,
        "ground": r.body_names[0],
        "input": inputs[0] if len(inputs) == 1 else inputs,
        "gravity": np.array(m.opt.gravity).tolist(),
    }


class _Reader:
    """A compiled MuJoCo model (`m`, its data `d` at qpos0) read as a linkage: its
    links (bodies joined by welds or without joints), its joints by kind, its loops'
    joints from the connect equalities, its tracers and inputs."""

    def __init__(self, mujoco, m, d, path, tol):
        self.mujoco, self.m, self.d, self.path, self.tol = mujoco, m, d, path, tol
        self.obj = obj = mujoco.mjtObj
        self.body_names = [self.name(obj.mjOBJ_BODY, b, f"body{b}") for b in range(m.nbody)]
        self.joint_names = [self.name(obj.mjOBJ_JOINT, j, f"joint{j}") for j in range(m.njnt)]
        self.scale = max(1.0, float(np.max(np.abs(d.xpos)))) if m.nbody else 1.0
        # links: a body without joints (or with a free joint: a floating base held fixed)
        # belongs to its parent's link; welds join their bodies
        self.groups = groups = Groups(m.nbody)
        self.free = []
        for b in range(1, m.nbody):
            types = [int(m.jnt_type[j]) for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])]
            if not types or types == [int(mujoco.mjtJoint.mjJNT_FREE)]:
                if types:
                    self.free.append(b)
                groups.join(b, int(m.body_parentid[b]))
        for e in range(m.neq):
            if int(m.eq_type[e]) == int(mujoco.mjtEq.mjEQ_WELD):
                b1, b2 = _eq_bodies(m, e, mujoco)
                groups.join(b1, b2)
            elif int(m.eq_type[e]) != int(mujoco.mjtEq.mjEQ_CONNECT):
                what = self.name(obj.mjOBJ_EQUALITY, e, f"equality {e}")
                raise LinkageError(f"{path}: equality {what}: only connect and weld equalities close loops")
        self.joints, self.members = {}, collections.defaultdict(list)
        self.made = {}  # MuJoCo joint id -> (diffmech joint name, its kind)

    def name(self, kind, i, fallback):
        n = self.mujoco.mj_id2name(self.m, kind, i)
        return n if n else fallback

    def add(self, jname, spec, *links):
        if jname in self.joints:
            jname = f"{jname}_{len(self.joints)}"
        self.joints[jname] = spec
        for k in links:
            self.members[self.groups.find(k)].append(jname)
        return jname

    def body_joints(self):
        """Each body's joints to its parent as one linkage joint."""
        mujoco, m, d, tol, path, jn = self.mujoco, self.m, self.d, self.tol, self.path, self.joint_names
        find, add, made = self.groups.find, self.add, self.made
        H, S, B = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE), int(mujoco.mjtJoint.mjJNT_BALL))
        for b in range(1, m.nbody):
            adr, num = int(m.body_jntadr[b]), int(m.body_jntnum[b])
            ids = list(range(adr, adr + num))
            types = [int(m.jnt_type[j]) for j in ids]
            if not ids or types == [int(mujoco.mjtJoint.mjJNT_FREE)]:
                continue
            here = f"body {self.body_names[b]}"
            if int(mujoco.mjtJoint.mjJNT_FREE) in types:
                raise LinkageError(f"{path}: {here}: a free joint beside others is not a linkage joint")
            a, c = find(int(m.body_parentid[b])), find(b)
            p = np.array(d.xanchor[ids[0]])
            axes = [np.array(d.xaxis[j]) for j in ids]
            if types == [H]:
                n = add(jn[ids[0]], {"type": "R", "coords": p.tolist(), "axis": axes[0].tolist()}, a, c)
                made[ids[0]] = (n, "revolute")
            elif types == [S]:
                n = add(jn[ids[0]], {"type": "P", "coords": p.tolist(), "axis": axes[0].tolist()}, a, c)
                made[ids[0]] = (n, "prismatic")
            elif types == [B]:
                add(jn[ids[0]], {"type": "S", "coords": p.tolist()}, a, c)
            elif sorted(types) == [S, H] and np.linalg.norm(np.cross(axes[0], axes[1])) <= tol:
                p = np.array(d.xanchor[ids[types.index(S)]])
                off = np.array(d.xanchor[ids[types.index(H)]]) - p
                if np.linalg.norm(np.cross(off, axes[0])) > tol * self.scale:
                    raise LinkageError(f"{path}: {here}: its hinge and slide are parallel but not on one axis")
                n = _common(jn[ids[0]], jn[ids[1]])
                n = add(n, {"type": "C", "coords": p.tolist(), "axis": axes[types.index(S)].tolist()}, a, c)
                made[ids[types.index(S)]], made[ids[types.index(H)]] = (n, "prismatic"), (n, "revolute")
            elif (
                types == [H, H]
                and np.linalg.norm(d.xanchor[ids[1]] - p) <= tol * self.scale
                and (abs(axes[0] @ axes[1]) <= tol)
            ):
                n = _common(jn[ids[0]], jn[ids[1]])
                axes_ = {self.body_names[a]: axes[0].tolist(), self.body_names[c]: axes[1].tolist()}
                add(n, {"type": "U", "coords": p.tolist(), "axes": axes_}, a, c)
            else:
                kinds = [jn[j] + ":" + ("free", "ball", "slide", "hinge")[t] for j, t in zip(ids, types)]
                raise LinkageError(
                    f"{path}: {here}: joints {kinds} are not one linkage joint (one hinge, slide or ball; a hinge and "
                    "a slide on one axis; two hinges meeting at right angles)"
                )

    def connects(self):
        """The connect equalities: an S joint at the anchor; two between the same links, an R joint."""
        mujoco, m, d, path, find = self.mujoco, self.m, self.d, self.path, self.groups.find
        pairs = collections.defaultdict(list)
        for e in range(m.neq):
            if int(m.eq_type[e]) != int(mujoco.mjtEq.mjEQ_CONNECT):
                continue
            what = self.name(self.obj.mjOBJ_EQUALITY, e, f"connect{e}")
            p1, p2, b1, b2 = _connect_points(m, d, e, mujoco)
            gap = float(np.linalg.norm(p1 - p2))
            if gap > self.tol * self.scale:
                raise LinkageError(
                    f"{path}: equality {what}: the loop does not close at qpos0 (its anchors are {gap:.3g} apart); "
                    "close=True reads the file at the nearest closed configuration"
                )
            if find(b1) == find(b2):
                raise LinkageError(f"{path}: equality {what}: joins a link to itself")
            if _floating(m, b1, self.free) != _floating(m, b2, self.free):  # held fixed, it would lock the loop
                body = self.body_names[next(iter(_floating(m, b1, self.free) ^ _floating(m, b2, self.free)))]
                raise LinkageError(f"{path}: equality {what}: closes a loop through the free joint of body {body}")
            pairs[tuple(sorted((find(b1), find(b2))))].append((what, 0.5 * (p1 + p2)))
        for (a, c), found in pairs.items():
            if len(found) == 1:
                self.add(found[0][0], {"type": "S", "coords": found[0][1].tolist()}, a, c)
            elif len(found) == 2:
                (n, p), (_, q) = found
                self.add(n, {"type": "R", "coords": p.tolist(), "axis": (q - p).tolist()}, a, c)
            else:
                raise LinkageError(
                    f"{path}: equalities {[n for n, _ in found]} join bodies {self.body_names[a]} and "
                    f"{self.body_names[c]} at three or more points: a rigid join (use a weld)"
                )

    def tracers(self):
        """Named sites not used by an equality: tracers."""
        m, obj = self.m, self.obj
        used = set()
        for e in range(m.neq):
            if int(m.eq_objtype[e]) == int(obj.mjOBJ_SITE):
                used |= {int(m.eq_obj1id[e]), int(m.eq_obj2id[e])}
        for s in range(m.nsite):
            n = self.mujoco.mj_id2name(m, obj.mjOBJ_SITE, s)
            if n and s not in used and "@" not in n:
                self.add(n, {"type": "tracer", "coords": np.array(self.d.site_xpos[s]).tolist()}, int(m.site_bodyid[s]))

    def inputs(self) -> list:
        """The inputs: joint actuators on a hinge or a slide."""
        m, path = self.m, self.path
        inputs = []
        for u in range(m.nu):
            what = self.name(self.obj.mjOBJ_ACTUATOR, u, f"actuator{u}")
            if int(m.actuator_trntype[u]) != int(self.mujoco.mjtTrn.mjTRN_JOINT):
                raise LinkageError(f"{path}: actuator {what}: only joint actuators are inputs")
            j = int(m.actuator_trnid[u, 0])
            if j not in self.made:
                raise LinkageError(
                    f"{path}: actuator {what}: its joint {self.joint_names[j]} is not a hinge or a slide"
                )
            n, kind = self.made[j]
            inputs.append({"type": kind, "joint": n})
        if not inputs:
            raise LinkageError(f"{path}: no actuator: a linkage needs an input (a motor on a hinge or a slide)")
        return inputs

    def links(self) -> dict:
        """The links and their mass properties (bodies of one link summed, in world axes at qpos0)."""
        m, d, find = self.m, self.d, self.groups.find
        links = {}
        for k in sorted(set(find(b) for b in range(m.nbody))):
            bodies = [b for b in range(m.nbody) if find(b) == k]
            entry: dict = {"joints": self.members[k]}
            if k != 0:
                parts = []
                for b in bodies:
                    R = np.array(d.ximat[b]).reshape(3, 3)
                    parts.append((float(m.body_mass[b]), np.array(d.xipos[b]), R @ np.diag(m.body_inertia[b]) @ R.T))
                entry |= link_mass_properties(parts, [self.joints[n] for n in self.members[k]])
            links[self.body_names[k]] = entry
        return links


def _floating(m, b, free) -> set:
    """The bodies with a free joint among `b` and its ancestors."""
    out = set()
    while b > 0:
        if b in free:
            out.add(b)
        b = int(m.body_parentid[b])
    return out


def _common(a: str, b: str) -> str:
    """Two MuJoCo joints read as one (a C or U joint): their names' common part before a dot."""
    head = a.split(".")[0]
    return head if b.split(".")[0] == head else a


def _eq_bodies(m, e, mujoco):
    o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    if int(m.eq_objtype[e]) == int(mujoco.mjtObj.mjOBJ_SITE):
        return int(m.site_bodyid[o1]), int(m.site_bodyid[o2])
    return o1, o2


def _connect_points(m, d, e, mujoco):
    """A connect equality's two anchors in the world at qpos0 and their bodies."""
    o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    if int(m.eq_objtype[e]) == int(mujoco.mjtObj.mjOBJ_SITE):
        return np.array(d.site_xpos[o1]), np.array(d.site_xpos[o2]), int(m.site_bodyid[o1]), int(m.site_bodyid[o2])
    data = np.array(m.eq_data[e])
    R1, R2 = (np.array(d.xmat[b]).reshape(3, 3) for b in (o1, o2))
    p1 = np.array(d.xpos[o1]) + R1 @ data[:3]
    p2 = np.array(d.xpos[o2]) + R2 @ data[3:6]
    return p1, p2, o1, o2


def from_mjcf(path, *, close: bool = False, **kw):
    """A linkage from a MuJoCo model file (MJCF), compiled by MuJoCo itself so that its
    defaults, classes and frames resolve as MuJoCo resolves them, read at `qpos0`:
    bodies are links (a body without joints, or a floating base, belongs to its
    parent's), hinge, slide and ball joints R, P and S joints (a hinge and a slide on
    one axis a C, two hinges at right angles through one point a U), `connect`
    equalities loop closures (two between the same links an R joint through their
    anchors), `weld`s rigid joins, joint actuators the inputs, named free sites
    tracers; inertials from the compiled model. The joints' springs, damping, friction
    loss, armature and limits are not carried over (a spatial linkage has no loads
    across joints): the description names the joints that had them.

    **Arguments:** `path`: the `.xml` file; `close`: read the model at the closed
    configuration nearest `qpos0` (least-norm Gauss–Newton steps on MuJoCo's own
    equality residual and Jacobian) when its loops are open there; `kw`: keyword
    arguments for `Linkage.from_dict`.

    **Returns:** a spatial `Linkage`. A loop that does not close at `qpos0`, a joint
    or equality diffmech does not model, a missing or malformed file: a
    `LinkageError` naming it.
    """
    from ._model import Linkage

    return Linkage.from_dict(mjcf_spec(path, close=close), **kw)

"""Linkages of points, lines and planes (Sharma & Purwar, seed 003): the description
and its rigidity equations, planar, spherical and spatial.

Elements. A revolute joint is a **point**: `(x, y)` in the plane, a unit vector
`(x, y, z)` on the unit sphere (Eq. (9)). A prismatic joint is a **line**
`a x + b y + c = 0` in the plane (normalised to `a² + b² = 1`, Eq. (8)) or a **plane**
through the sphere's centre, given by its unit normal (its pole). A spatial joint is
a spherical (S) joint, a point `(x, y, z)`, or a revolute (R) joint, a point and its
axis (natural coordinates: a point and a unit vector shared by its two links; the
vector is held as a second point on the axis, type `axis`, so that every spatial
equation reads points); a universal (U) joint, a point and one axis point in each of
its links; a prismatic (P) or cylindrical (C) joint, an axis line of one of its links
(side A) and the other's copies of its point and axis point (type `side`, and `axis`),
which slide on it. A **tracer** is a point carried by one
link, computed from the link's pose, never solved for (a tracer collinear with two
joints of its link would make distance equations rank-deficient).

Rigidity. A link is a set of elements. The seed writes its rigidity pairwise
(Eqs. (1)–(7): distances, point-line/plane distances, angles). Pairwise equations
lose rank in ordinary configurations: two distances do not fix a point collinear
with their centres, and two point-line offsets do not fix a line perpendicular to
the segment joining the points. We write the same rigidity in a **frame form**
whose Jacobian keeps full rank wherever the link's frame is non-degenerate:

- *planar*, a link with two points `a, b` (its frame, `e = b − a`): one distance
  `(|e|² − r²)/(2r)`; every other point `c = a + α e + β S e` (two *linear*
  equations); a line it carries `n = γ ê + δ S ê` (`ê = e/r`) and `n·a + c = d`;
  a line it shares with a link that already carries it (the other side of a slider)
  keeps its angle, `n × (γ ê + δ S ê) = 0`, and offset, `n·a + c = d`;
- *planar*, a link with one point `p` and lines: offsets `n·p + c = d` (Eq. (5)) and
  angles between consecutive lines `n₂ × R(φ) n₁ = 0` (Eq. (7));
- *spherical*: every element is a unit vector and every metric is a dot product
  (Eqs. (1), (4), (6) on the unit sphere). A link's frame is its first two elements
  `u, v` (points first): `(u·v − k)/|u₀ × v₀|`; every other element
  `w = α u + β v + γ u × v` (three linear equations, which also fix `|w| = 1`); an
  element that a link already carries keeps two dot products with another link's
  orthonormal frame (the two best conditioned); elements carried by no link get
  `(|w|² − 1)/2 = 0` (Eqs. (8), (9));
- *spatial*: a link with three points `a, b, c` (its frame): three distances, every
  other point `d = a + α(b − a) + β(c − a) + γ (b − a) × (c − a)` (the frame taken
  through the points the ground and inputs place, where it can be); a binary S–S link:
  its distance (Eq. (1)); its spin about its axis is idle and not represented. A U
  joint's two axes stay perpendicular (one dot product); a C joint's side B points
  keep zero offsets along the two normals of side A's axis, carried in A's frame (4
  equations), a P joint's also a normal carried by B normal to A's other (5).

Every constant (r, α, β, γ, δ, d, k) comes from the initial coordinates, which are
the only array leaf of `Linkage`: the gradient of any result with respect to them is
the design gradient of synthesis. Topology (geometry, joint types, links, ground,
input) is static.

Inputs. `revolute`: the input link turns about its joint with the ground (Eqs.
(10)–(12) in the plane, anticlockwise positive; Eqs. (15)–(20) on the sphere,
right-handed about the joint's axis). `prismatic`: the input link slides along its
line with the ground (Eq. (13), along `(b, −a)`), on the sphere turns about the
pole of its plane (Eq. (21), right-handed; arc length = angle on the unit sphere),
in space slides along its P joint's axis.
`actuator`: the distance between two joints grows by the input (Section 4.6).
`turn`, `slide` (written `{"type": "revolute" | "prismatic", "joint": NAME}`): a
spatial R, P or C joint's own coordinate, side B's turn about (slide along) the axis
relative to side A; like an actuator, an equation of the closure (`JointTurn`,
`JointSlide`), no link prescribed.
"""

import dataclasses
import functools
import json
import os
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import _closure, _screw
from .._geometry import dot, rotation, unit
from .._validate import Recent, output_path
from .._xla import eager_program, filter_jit, jit
from . import _gears, _schema
from ._equations import EQUATIONS, TRACERS
from ._joints import KINDS
from ._schema import LinkageError

# --------------------------------------------------------------------------- topology (static)


@dataclasses.dataclass(frozen=True)
class _Topology:
    geometry: str
    types: tuple[str, ...]
    links: tuple[tuple[int, ...], ...]
    ground: int
    input_kind: str
    input_link: int  # -1 for an actuator
    input_joints: tuple[int, ...]  # (pivot or slider joint,) or the actuator's (a, b)
    more_inputs: tuple = ()  # the second, third, ... input: (kind, link, joints) each
    gears: _gears.Train = _gears.Train()  # the gear pairs and racks and the links they place

    @property
    def inputs(self) -> tuple:
        """Every input: `(kind, link, joints)` each, in the order of the input vector."""
        return ((self.input_kind, self.input_link, self.input_joints),) + tuple(self.more_inputs)

    @property
    def input_links(self) -> tuple[int, ...]:
        return tuple(link for _, link, _ in self.inputs if link >= 0)

    @property
    def placed_links(self) -> tuple[int, ...]:
        """The links placed without the closure: the input links, then the gears the
        gear pairs place (`_gears`)."""
        return self.input_links + _gears.driven_links(self.gears)

    def width(self, j):
        return KINDS[self.types[j]].width(self.geometry)

    @property
    def known(self) -> tuple[bool, ...]:
        fixed = set(self.links[self.ground])
        for link in self.placed_links:
            fixed |= set(self.links[link])
        return tuple(j in fixed or KINDS[t].carried for j, t in enumerate(self.types))

    def members(self, link):
        """(points, lines) of a link, tracers excluded, points first."""
        kinds = [KINDS[self.types[j]] for j in self.links[link]]
        pts = [j for j, K in zip(self.links[link], kinds) if K.is_point(self.geometry) and not K.carried]
        lns = [j for j, K in zip(self.links[link], kinds) if not K.is_point(self.geometry)]
        return pts, lns


@dataclasses.dataclass(frozen=True)
class _Plan:
    """The rigidity equations as static index arrays, one group per form (the
    residual is then a handful of vectorised operations)."""

    groups: dict
    n_equations: int
    unknowns: tuple  # (joint, offset, width)
    n_unknowns: int
    frames: tuple  # per link: ("pp", a, b) | ("pl", p, ln) | ("ss", u, v) | ("ppp", a, b, c) | None
    tracers: tuple  # (tracer joint, link)


def _frame_of(topo: _Topology, link: int):
    pts, lns = topo.members(link)
    if topo.geometry == "planar":
        if len(pts) >= 2:
            return ("pp", pts[0], pts[1])
        if len(pts) == 1 and lns:
            return ("pl", pts[0], lns[0])
        return None
    if topo.geometry == "spherical":
        el = pts + lns
        return ("ss", el[0], el[1]) if len(el) >= 2 else None
    return ("ppp", pts[0], pts[1], pts[2]) if len(pts) >= 3 else None


def _holders(topo: _Topology, j: int) -> list[int]:
    return [k for k, members in enumerate(topo.links) if j in members]


@functools.lru_cache(maxsize=256)
def _side_copies(names: tuple, types: tuple, links: tuple, link_names: tuple) -> tuple[tuple, tuple]:
    """The rows of each spatial P or C joint's side B copies (its point `<joint>.<link>`
    and axis point `<joint>.axis.<link>`) and of the rows they copy: `(sources, copies)`."""
    src, dst = [], []
    for j, t in enumerate(types):
        if not KINDS[t].slides("spatial") or names[j] + _schema.AXIS_SUFFIX not in names:
            continue
        for link, members in zip(link_names, links):
            for copy, source in (
                (f"{names[j]}.{link}", names[j]),
                (f"{names[j]}{_schema.AXIS_SUFFIX}.{link}", names[j] + _schema.AXIS_SUFFIX),
            ):
                if copy in names and names.index(copy) in members:
                    src.append(names.index(source))
                    dst.append(names.index(copy))
    return tuple(src), tuple(dst)


def _slide_rows(topo: _Topology, names: tuple, link_names: tuple, frames: list):
    """Each spatial P or C joint's equation: `(kind, row)`, the row side A's frame,
    its point and axis point, side B's, and for a P joint side B's frame."""
    if topo.geometry != "spatial":
        return []
    out = []
    for j, t in enumerate(topo.types):
        K = KINDS[t]
        if not K.slides(topo.geometry):
            continue
        a, b, _, q, pb = _schema.joint_sides(names, topo.types, topo.links, link_names, j)
        qb = names.index(f"{names[j]}{_schema.AXIS_SUFFIX}.{link_names[b]}")
        for k in (a,) if K.turns else (a, b):
            if frames[k] is None:
                raise LinkageError(
                    f"links.{link_names[k]}: carries joint {names[j]}'s {'axis' if k == a else 'slide'} but has no "
                    "three non-collinear points (a frame)"
                )
        row = tuple(frames[a][1:]) + (j, q, pb, qb)
        if not K.turns:  # side B's frame locks its turn
            row += tuple(frames[b][1:])
        out.append((row, K.slide_equation))
    return out


def raise_if_open(lk, r, tol: float = 1e-10) -> None:
    """Raise `LinkageError` unless the residual `r` of `lk`'s initial configuration is
    within `tol` (the closure's tolerance for the precision in use: float32 cannot
    reach 1e-10), naming float32 where that is the precision."""
    r = np.asarray(r)
    dtype = np.asarray(lk.coords).dtype
    tol = _closure.tolerance(tol, dtype)
    if r.size and not np.all(np.abs(r) <= tol):
        raise LinkageError(
            f"linkage {lk.name!r}: the initial configuration violates its own constraints "
            f"(max residual {np.abs(r).max():.2e} > {tol:g})"
            + (
                ""
                if dtype == np.float64
                else f"; it is in {dtype}: enable float64 with `jax.config.update('jax_enable_x64', True)` before "
                "making it"
            )
        )


def _rigid_link(geometry: str, pts, lns, known, carried: set, eq: dict, lname: str) -> None:
    """The equations that keep one moving link rigid (its points `pts` and lines or
    vectors `lns`), those of known elements only left out, added to `eq`; an element
    with a gauge the link carries first is added to `carried`."""
    if geometry == "planar":
        if len(pts) >= 2:
            a, b = pts[0], pts[1]
            if not (known[a] and known[b]):
                eq["dist"].append((a, b))
            for c in pts[2:]:
                if not (known[a] and known[b] and known[c]):
                    eq["pcarry"].append((a, b, c))
            for ln in lns:
                if not known[ln] and ln not in carried:
                    carried.add(ln)
                    eq["lcarry"].append((a, b, ln))
                elif not (known[a] and known[b] and known[ln]):
                    eq["lslide"].append((a, b, ln))
        elif len(pts) == 1:
            for ln in lns:
                if not (known[pts[0]] and known[ln]):
                    eq["offset"].append((pts[0], ln))
            for l1, l2 in zip(lns[:-1], lns[1:]):
                if not (known[l1] and known[l2]):
                    eq["angle"].append((l1, l2))
        else:
            if len(lns) > 2:
                raise LinkageError(f"links.{lname}: a planar link of three or more lines and no point is not supported")
            if len(lns) == 2 and not (known[lns[0]] and known[lns[1]]):
                eq["angle"].append((lns[0], lns[1]))
    elif geometry == "spherical":
        el = pts + lns
        u, v = el[0], el[1]
        if not (known[u] and known[v]):
            eq["sdot"].append((u, v))
        for w in el[2:]:
            if known[u] and known[v] and known[w]:
                continue
            if w not in carried and not known[w]:
                carried.add(w)
                eq["scarry"].append((u, v, w))
            else:
                eq["scarry2"].append((u, v, w))
    else:  # spatial
        if len(pts) == 2:
            if not (known[pts[0]] and known[pts[1]]):
                eq["dist"].append((pts[0], pts[1]))
        else:
            a, b, c = pts[:3]
            for p, q in ((a, b), (a, c), (b, c)):
                if not (known[p] and known[q]):
                    eq["dist"].append((p, q))
            for d in pts[3:]:
                if not (known[a] and known[b] and known[c] and known[d]):
                    eq["tcarry"].append((a, b, c, d))


def _input_equations(topo: _Topology, names, link_names, frames, eq: dict) -> None:
    """The equations that hold the inputs other than a link's (an actuator's length, a
    joint's own slide or turn), added to `eq`."""
    for kind, _, joints in topo.inputs:
        if kind == "actuator":
            eq["act"].append(joints)
        elif kind == "slide":
            eq["slide"].append(_schema.joint_sides(names, topo.types, topo.links, link_names, joints[0])[2:])
        elif kind == "turn":
            a, b, p, q, _ = _schema.joint_sides(names, topo.types, topo.links, link_names, joints[0])
            for k in (a, b):
                if frames[k] is None:
                    raise LinkageError(
                        f"links.{link_names[k]}: turns about joint {names[joints[0]]} (the input) but has no three "
                        "non-collinear points (a frame to measure the turn)"
                    )
            eq["turn"].append(tuple(frames[a][1:]) + tuple(frames[b][1:]) + (p, q))


def _tracers(topo: _Topology, names, link_names, frames) -> list:
    """Each tracer (a carried point) and its link, whose frame places it."""
    tracers = []
    for j, t in enumerate(topo.types):
        if not KINDS[t].carried:
            continue
        (li,) = [k for k, m in enumerate(topo.links) if j in m]
        if frames[li] is None:
            need = {
                "planar": "two points, or a point and a line",
                "spherical": "two joints",
                "spatial": "three non-collinear joints",
            }[topo.geometry]
            raise LinkageError(f"joints.{names[j]}: a tracer's link ({link_names[li]}) needs a frame: {need}")
        tracers.append((j, li))
    return tracers


@functools.lru_cache(maxsize=256)
def compile_equations(topo: _Topology, names: tuple, link_names: tuple) -> _Plan:
    known = topo.known
    eq: dict[str, list] = {k: [] for k in EQUATIONS}
    carried = set()  # elements with a gauge (planar lines, spherical vectors) already carried by a link
    frames = []
    for li in range(len(topo.links)):
        frame = _frame_of(topo, li)
        frames.append(frame)
        if li == topo.ground or li in topo.placed_links:
            continue
        pts, lns = topo.members(li)
        lname = link_names[li]
        moved = {j for link in topo.placed_links for j in topo.links[link]} - set(topo.links[topo.ground])
        members = set(topo.links[li])
        if members and all(known[j] for j in members) and members & moved:
            # every joint is placed by the ground or the input: no unknown can keep this
            # link rigid, so its equation would be dropped; the input is locked against it
            raise LinkageError(
                f"links.{lname}: its joints ({', '.join(names[j] for j in sorted(members))}) are all placed by the "
                "ground and the input link: it would hold the input against the ground (locked, or over-"
                "constrained); remove it or join it to a moving link"
            )
        _rigid_link(topo.geometry, pts, lns, known, carried, eq, lname)
    if topo.geometry in ("planar", "spherical"):
        for j, t in enumerate(topo.types):
            if KINDS[t].gauged(topo.geometry) and not known[j] and j not in carried:
                eq["unit"].append((j,))
    for j, t in enumerate(topo.types):  # a universal joint's axes stay perpendicular
        if KINDS[t].has_cross:
            a, b = (names.index(f"{names[j]}{_schema.AXIS_SUFFIX}.{link_names[k]}") for k in _holders(topo, j))
            if not (known[j] and known[a] and known[b]):
                eq["perp"].append((j, a, b))
    _input_equations(topo, names, link_names, frames, eq)
    for row, kind in _slide_rows(topo, names, link_names, frames):
        if not all(known[j] for j in row):
            eq[kind].append(row)

    rows_per = {k: E.rows for k, E in EQUATIONS.items()}
    width = {k: E.width for k, E in EQUATIONS.items()}
    groups = {k: np.array(v, dtype=int).reshape(-1, width[k]) for k, v in eq.items()}
    n_eq = sum(rows_per[k] * len(v) for k, v in eq.items())
    unknowns, off = [], 0
    for j, t in enumerate(topo.types):
        if not known[j]:
            w = topo.width(j)
            unknowns.append((j, off, w))
            off += w
    tracers = _tracers(topo, names, link_names, frames)
    return _Plan(
        groups=groups,
        n_equations=n_eq,
        unknowns=tuple(unknowns),
        n_unknowns=off,
        frames=tuple(frames),
        tracers=tuple(tracers),
    )


# --------------------------------------------------------------------------- the module


@eager_program  # eagerly one program (op by op: the equations' constants and each joint's placement)
def _full(lk, x, u) -> Float[Array, "J 3"]:
    """`Linkage.full`."""
    return joint_coords(x, u, prepare(lk))


@eager_program  # eagerly one program (op by op: a slice per solved joint and their concatenation)
def _x0(lk) -> Float[Array, " n"]:
    """`Linkage.x0`."""
    return lk.state(_initial(lk))


@eager_program  # eagerly one program (op by op: a dozen small ones for a drawing or a file)
def _initial(lk) -> Float[Array, "J 3"]:
    """`Linkage.initial`."""
    C = lk.coords
    if lk.geometry == "planar":
        lines = np.array([j for j, t in enumerate(lk.types) if not KINDS[t].is_point("planar")], dtype=int)
        if lines.size:
            n = jnp.sqrt(dot(C[lines, :2], C[lines, :2]))
            C = C.at[lines].set(C[lines] / n[:, None])
        return C
    if lk.geometry == "spherical":
        return unit(C)
    src, dst = _side_copies(lk.names, lk.types, lk.links, lk.link_names)
    if dst:  # a P or C joint's side B copies follow its point and axis point (the design)
        C = C.at[np.array(dst)].set(C[np.array(src)])
    return C


class Linkage(eqx.Module):
    """A linkage of points, lines and planes (Sharma & Purwar): planar, spherical or
    spatial, with one input or several (each a revolute or prismatic joint on the
    ground, or a linear actuator between two joints).

    **Fields:**

    - `coords`: `(J, 3)` initial coordinates, the one array leaf (the design
      variables). Planar points use the first two columns (the third is 0); planar
      lines are `(a, b, c)`, `a x + b y + c = 0`; spherical points and planes are unit
      vectors (point; plane normal); spatial points are `(x, y, z)`;
    - `names`, `types` (static): joint names and types (`"R"`, `"P"`, `"S"`, `"tracer"`;
      a spatial R joint's axis point, `"<name>.axis"`, is of type `"axis"`, after
      the joints);
    - `links`, `link_names` (static): the joints of each link (indices), the names;
    - `ground` (static): index of the ground link;
    - `input_kind` (static): `"revolute"`, `"prismatic"`, `"actuator"`, `"turn"` or
      `"slide"` (a joint's own coordinate);
      `input_link` (static, −1 for an actuator), `input_joints` (static: the pivot or
      slider joint with the ground, or the actuator's two joints): the first input;
    - `more_inputs` (static): the second, third, … inputs, `(kind, link, joints)`
      each (`n_inputs` counts them all; `sweep` then takes `(N, k)` inputs);
    - `geometry`, `name` (static); `steps`, `step` (static): the default range of
      `sweep` (the seed's: 180 steps of 2°, or 0.01 length units).

    Build one with `Linkage.from_dict`, load a JSON or TOML file (`load`), or take a
    bundled example (`diffmech.examples`). Construction validates the description and
    raises `LinkageError` naming the item; `check()` verifies the initial configuration
    (its residual and its mobility from the Jacobian's rank).

    Built by `Linkage.from_dict` or `diffmech.linkage.load`, not by hand; its other
    fields are derived there: `description` (the parsed description), `masses`, `coms`,
    `inertias` (per link: kg, a joint or point, kg·m² about the centre of mass),
    `gravity` (m/s²), the loads' `load_kinds`, `load_index` and `load_params`, and the
    gears' `gears` (static: the pairs and the links they place, `_gears.Train`) and
    `gear_params` (per pair its pitch radii and pressure angle: a leaf).
    """

    coords: Float[Array, "J 3"]
    names: tuple[str, ...] = eqx.field(static=True)
    types: tuple[str, ...] = eqx.field(static=True)
    links: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    link_names: tuple[str, ...] = eqx.field(static=True)
    ground: int = eqx.field(static=True)
    input_kind: str = eqx.field(static=True)
    input_link: int = eqx.field(static=True)
    input_joints: tuple[int, ...] = eqx.field(static=True)
    more_inputs: tuple[tuple[str, int, tuple[int, ...]], ...] = eqx.field(static=True, default=())
    geometry: str = eqx.field(static=True, default="planar")
    name: str = eqx.field(static=True, default="linkage")
    steps: int = eqx.field(static=True, default=180)
    step: float | None = eqx.field(static=True, default=None)
    description: str = eqx.field(static=True, default="")
    masses: Float[Array, " L"] | None = None
    coms: Float[Array, "L 3"] | None = None
    inertias: Float[Array, " L"] | None = None
    gravity: Float[Array, "3"] | None = None
    load_kinds: tuple[str, ...] = eqx.field(static=True, default=())
    load_index: tuple[tuple[int, int, int, int], ...] = eqx.field(static=True, default=())
    load_params: Float[Array, "K 3"] | None = None
    gears: _gears.Train = eqx.field(static=True, default=_gears.Train())
    gear_params: Float[Array, "G 3"] | None = None

    # ------------------------------------------------------------------ building

    @classmethod
    def from_dict(cls, spec: dict, *, sphere_tol: float = 1e-2) -> "Linkage":
        """Build from a description (the JSON/TOML file's content):

        ```
        {"name": "...", "geometry": "planar" | "spherical" | "spatial",
         "joints": {NAME: {"type": "R" | "P" | "S" | "tracer", "coords": [...]}, ...},
                   (a spatial R also has "axis": [ax, ay, az])
         "links": {LINK: [joint names], ...},
         "ground": LINK,
         "input": LINK  (revolute or prismatic about/along its joint with the ground)
                | {"type": "revolute" | "prismatic", "link": LINK, "joint": NAME}
                | {"type": "revolute" | "prismatic", "joint": NAME}  (the joint's own turn or slide)
                | {"type": "actuator", "joints": [NAME, NAME]},
         (or "inputs": [one of those, ...] for several inputs)
         "gears": [{"links": [L1, L2], "joints": [J1, J2], "radii": [r1, r2]}, ...]  (planar, optional;
                  {"type": "rack", ..., "radii": [r]} for a rack and pinion: see `_gears`)
         "simulation": {"steps": 180, "step": 0.0349}}   (optional)
        ```

        Spherical points and plane normals are directions from the sphere's centre:
        they are normalised, and a point farther than `sphere_tol` from the unit
        sphere is an error (the seed's tables print two decimals). Errors name the
        path in the description and the reason (`LinkageError`).
        """
        lk = cls(**_schema.parse(spec, sphere_tol=sphere_tol))
        lk._validate_frames()
        plan = lk.plan
        if plan.n_equations > plan.n_unknowns:
            lk._check_redundant()
            return lk
        if plan.n_equations != plan.n_unknowns:
            raise LinkageError(
                f"linkage {lk.name!r}: {plan.n_equations} rigidity equations for {plan.n_unknowns} unknown "
                "coordinates; "
                "a one-input linkage needs them equal (too few: the constraints do not determine it; too many: "
                "it is locked or over-constrained). Check the links' joints, the ground and the input."
            )
        return lk

    @property
    def over_constrained(self) -> bool:
        """More rigidity equations than unknowns (the Bennett 4R, a planar loop
        described in space): the closure core then solves their least-squares normal
        equations `JᵀΦ = 0` (see `prepared_residual`), and every equation is checked at each
        solution (`redundancy_lost` where the redundant ones fail)."""
        return self.plan.n_equations > self.plan.n_unknowns

    def _check_redundant(self) -> None:
        """An over-constrained description must close at its initial configuration,
        its input must determine it (`∂Φ/∂x` of full column rank) and move it (the
        rank of `[∂Φ/∂x, ∂Φ/∂u]` no more than the unknowns: mobility 1)."""
        r, Jx, Ju = map(np.asarray, _redundancy_values(kinematic(self)))
        m, n = Jx.shape
        raise_if_open(self, r)
        info = rank_info(Jx, Ju, _closure.tolerance(1e-9, r.dtype))  # float32: its own round-off
        rank_x, rank = info["rank_x"], info["rank"]
        if rank_x < n or rank > n:
            what = (
                "rigid: the input cannot move it (mobility 0); its special geometry (Bennett's, parallel axes) "
                "is not met"
                if rank > n
                else f"not determined by its input (mobility {info['mobility']})"
            )
            raise LinkageError(
                f"linkage {self.name!r}: {m} rigidity equations for {n} unknown coordinates, of rank {rank_x} "
                f"({rank} with the input's column): over-constrained and {what}. Check the links' joints, the "
                "ground, the input and the joints' axes."
            )

    def _validate_frames(self):
        """Frames must be non-degenerate: distinct points, non-parallel vectors,
        non-collinear spatial triples."""
        C = np.asarray(self.coords)
        for li, frame in enumerate(self.plan.frames):
            if frame is None:
                continue
            kind, *el = frame
            ln = self.link_names[li]
            nm = [self.names[e] for e in el]
            if kind == "pp" and np.linalg.norm(C[el[1], :2] - C[el[0], :2]) < 1e-12:
                raise LinkageError(f"links.{ln}: joints {nm[0]} and {nm[1]} coincide")
            if kind == "ss" and np.linalg.norm(np.cross(C[el[0]], C[el[1]])) < 1e-9:
                raise LinkageError(f"links.{ln}: joints {nm[0]} and {nm[1]} are parallel (or antipodal) on the sphere")
            if kind == "ppp":
                a, b, c = C[el[0]], C[el[1]], C[el[2]]
                if np.linalg.norm(np.cross(b - a, c - a)) < 1e-9 * max(
                    1.0, np.linalg.norm(b - a) * np.linalg.norm(c - a)
                ):
                    raise LinkageError(
                        f"links.{ln}: joints {nm} are collinear (a spatial link needs a non-degenerate frame)"
                    )

    @classmethod
    def load(cls, path, **kw) -> "Linkage":
        """Load a description from a JSON (`.json`) or TOML (`.toml`) file (see
        `from_dict`); errors name the file."""
        if not isinstance(path, (str, os.PathLike)):
            raise LinkageError(f"linkage.load: `path` must be a file name or path; got {path!r:.80}")
        path = Path(path)
        spec = _schema.read(path)
        try:
            return cls.from_dict(spec, **kw)
        except LinkageError as e:
            raise LinkageError(f"{path}: {e}") from None

    def to_dict(self) -> dict:
        """The description (`from_dict(lk.to_dict())` rebuilds the same linkage)."""
        C = np.asarray(self.coords)
        joints = {}
        index = {n: i for i, n in enumerate(self.names)}
        for n, t, row in zip(self.names, self.types, C):
            if t in (_schema.AXIS, _schema.SIDE, _gears.MARK):
                continue
            K = KINDS[t]
            joints[n] = {"type": t, "coords": [float(v) for v in row[: K.width(self.geometry)]]}
            if K.has_axis(self.geometry):
                joints[n]["axis"] = [float(v) for v in C[index[n + _schema.AXIS_SUFFIX]] - row]
            if K.has_cross:
                held = [self.link_names[k] for k in _holders(self.topology, index[n])]
                axis_row = {ln: C[index[f"{n}{_schema.AXIS_SUFFIX}.{ln}"]] for ln in held}
                joints[n]["axes"] = {ln: [float(v) for v in axis_row[ln] - row] for ln in held}

        def one(kind, link, joints):
            if kind == "actuator":
                return {"type": "actuator", "joints": [self.names[j] for j in joints]}
            if link < 0:  # a joint's own turn or slide
                return {"type": "revolute" if kind == "turn" else "prismatic", "joint": self.names[joints[0]]}
            return {"type": kind, "link": self.link_names[link], "joint": self.names[joints[0]]}

        specs = [one(*spec) for spec in self.topology.inputs]
        inp = specs[0] if len(specs) == 1 else specs
        sim: dict[str, int | float] = {"steps": self.steps}
        if self.step is not None:
            sim["step"] = self.step
        return {
            "name": self.name,
            "geometry": self.geometry,
            "description": self.description,
            "joints": joints,
            "links": self._links_dict(),
            "ground": self.link_names[self.ground],
            ("input" if self.n_inputs == 1 else "inputs"): inp,
            "simulation": sim,
            **({} if self.gravity is None else {"gravity": [float(v) for v in np.asarray(self.gravity)[: self.dim]]}),
            **({"loads": self._loads_list()} if self.load_kinds else {}),
            **({"gears": self._gears_list()} if self.gears else {}),
        }

    def _gears_list(self) -> list:
        out = []
        for (kind, la, ja, lb, jb, *_), p in zip(self.gears.pairs, np.asarray(self.gear_params)):
            out.append(
                {
                    "type": kind,
                    "links": [self.link_names[la], self.link_names[lb]],
                    "joints": [self.names[ja], self.names[jb]],
                    "radii": [float(p[0]), float(p[1])] if kind == "gear" else [float(p[0])],
                    "pressure_angle": float(p[2]),
                }
            )
        return out

    def _loads_list(self) -> list:
        out = []
        P = np.asarray(self.load_params)
        for kind, (ja, la, jb, lb), p in zip(self.load_kinds, self.load_index, P):
            n, ln = self.names, self.link_names
            if kind in _schema.JOINT_LOADS:
                kind_ = "stop" if kind == "stop_event" else kind
                out.append({"type": kind_, "joint": n[ja], "links": [ln[la], ln[lb]], **_joint_load_fields(kind, p)})
            elif kind == "spring":
                out.append(
                    {
                        "type": kind,
                        "joints": [n[ja], n[jb]],
                        "links": [ln[la], ln[lb]],
                        "stiffness": float(p[0]),
                        "length": float(p[1]),
                    }
                )
            elif kind == "damper":
                out.append({"type": kind, "joints": [n[ja], n[jb]], "links": [ln[la], ln[lb]], "damping": float(p[0])})
            elif kind == "force":
                out.append({"type": kind, "joint": n[ja], "link": ln[la], "force": [float(v) for v in p[: self.dim]]})
            else:
                torque = float(p[0]) if self.dim == 2 else [float(v) for v in p]
                out.append({"type": kind, "link": ln[la], "torque": torque})
        return out

    def _links_dict(self) -> dict:
        out = {}
        for li, (ln, members) in enumerate(zip(self.link_names, self.links)):
            joints = [
                self.names[j][: -len(ln) - 1] if self.types[j] == _schema.SIDE else self.names[j]
                for j in members
                if self.types[j] not in (_schema.AXIS, _gears.MARK)
            ]
            m = 0.0 if self.masses is None else float(self.masses[li])
            inertia = np.zeros(()) if self.inertias is None else np.asarray(self.inertias)[li]
            if m == 0.0 and not np.any(inertia):
                out[ln] = joints
            else:
                out[ln] = {"joints": joints, "mass": m, "inertia": inertia.tolist()}
                if self.coms is not None:
                    out[ln]["com"] = [float(v) for v in np.asarray(self.coms)[li, : self.dim]]
        return out

    def save(self, path) -> None:
        """Write the description as JSON (`.json`) or TOML (`.toml`)."""
        path = output_path("Linkage.save", path)
        d = self.to_dict()
        path.write_text(_schema.to_toml(d) if path.suffix.lower() == ".toml" else json.dumps(d, indent=1))

    # ------------------------------------------------------------------ topology

    @property
    def topology(self) -> _Topology:
        return _Topology(
            self.geometry,
            self.types,
            self.links,
            self.ground,
            self.input_kind,
            self.input_link,
            self.input_joints,
            self.more_inputs,
            self.gears,
        )

    def zero_input(self) -> Array:
        """The inputs at the initial configuration: 0, or `(k,)` zeros for `k` inputs."""
        return jnp.zeros(() if self.n_inputs == 1 else (self.n_inputs,), self.coords.dtype)

    @property
    def n_inputs(self) -> int:
        """How many inputs drive the linkage (`k`: `sweep` takes `(N, k)` inputs when
        it is more than one)."""
        return 1 + len(self.more_inputs)

    @property
    def plan(self) -> _Plan:
        return compile_equations(self.topology, self.names, self.link_names)

    @property
    def n_unknowns(self) -> int:
        return self.plan.n_unknowns

    @property
    def dim(self) -> int:
        """2 for planar points, 3 otherwise."""
        return 2 if self.geometry == "planar" else 3

    def counts(self) -> dict:
        """Sizes: `unknowns` and `equations` as solved here (tracers are carried, not
        solved), and `paper_unknowns` as the seed counts its state (tracer
        coordinates included, with their rigidity and unit-sphere equations)."""
        p = self.plan
        n_tr = sum(self.dim for t in self.types if t == "tracer")
        return dict(
            unknowns=p.n_unknowns, equations=p.n_equations, tracer_coordinates=n_tr, paper_unknowns=p.n_unknowns + n_tr
        )

    def joint(self, name: str) -> int:
        """Index of a joint by name (a clear error for an unknown name)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise LinkageError(f"linkage {self.name!r}: no joint {name!r}; joints are {list(self.names)}") from None

    # ------------------------------------------------------------------ configuration

    def initial(self) -> Float[Array, "J 3"]:
        """The initial coordinates with every gauge fixed (planar lines with unit
        normal, spherical vectors of unit length): the constants of every rigidity
        equation are read from these, differentiably."""
        return _initial(self)

    def driven(self, u) -> Float[Array, "J 3"]:
        """All coordinates with the input applied to the input link (Eqs. (10)–(22));
        solved joints keep their initial values, tracers are not updated."""
        return assemble_coords(None, u, prepare(self))

    def full(self, x: Float[Array, " n"], u) -> Float[Array, "J 3"]:
        """All coordinates (tracers included) from the solved state `x` at input `u`."""
        return _full(self, x, u)

    def state(self, C: Float[Array, "J 3"]) -> Float[Array, " n"]:
        """The solved state `x` read from all coordinates `C` (e.g. a row of
        `Motion.coords`): the coordinates of the solved joints, in order."""
        parts = [C[j, :w] for j, _, w in self.plan.unknowns]
        return jnp.concatenate(parts) if parts else jnp.zeros((0,), C.dtype)

    def x0(self) -> Float[Array, " n"]:
        """The initial state: the initial coordinates of the solved joints."""
        return _x0(self)


# --------------------------------------------------------------------------- frames, tracers, residual


class _Prepared(eqx.Module):
    """A linkage with the constants of its rigidity equations computed once from its
    initial coordinates (differentiably): the closure core's `params`, so that the
    Newton iterations do not recompute them."""

    lk: Linkage
    C0: Float[Array, "J 3"]
    k: dict


def tracer_rows(plan, kind):
    rows = [(j,) + tuple(plan.frames[li][1:]) for j, li in plan.tracers if plan.frames[li][0] == kind]
    return np.array(rows, dtype=int).reshape(-1, TRACERS[kind].width)


@eager_program  # eagerly one program (op by op: each equation kind's constants, a dozen small ones)
def prepare(lk: Linkage) -> _Prepared:
    """The constants of every equation and tracer, from the initial coordinates."""
    C0 = lk.initial()
    sl = slice(0, lk.dim)
    k = {kind: E.constants(C0, lk.plan.groups[kind], sl) for kind, E in EQUATIONS.items() if lk.plan.groups[kind].size}
    for kind, T in TRACERS.items():
        rows = tracer_rows(lk.plan, kind)
        if rows.size:
            k["t_" + kind] = T.constants(C0, rows)
    return _Prepared(lk=lk, C0=C0, k=k)


def _input_values(lk: Linkage, u):
    """Each input's value: `u` itself for one input, its entries for several."""
    return [u] if lk.n_inputs == 1 else [u[i] for i in range(lk.n_inputs)]


def _moved(prep: _Prepared, u):
    """Every input link's moving elements after the inputs `u`: [(indices, rows)]."""
    lk = prep.lk
    out = []
    for (kind, link, joints), ui in zip(lk.topology.inputs, _input_values(lk, u)):
        if link >= 0:
            moving, rows = _moved_one(prep, kind, link, joints, ui)
            if moving is not None:
                out.append((moving, rows))
    if lk.gears:
        C = prep.C0
        for (link, steps), moving in zip(
            _gears.motions(lk.topology, lk.gear_params, _input_values(lk, u)), _gear_rows(lk.topology)
        ):
            if moving.size:
                M = C[moving]
                line = np.array([not KINDS[lk.types[j]].is_point(lk.geometry) for j in moving])
                for kind, s, amount in steps:
                    M = moved_planar(C, s, M, line, amount, kind)
                out.append((moving, M))
    return out


@functools.lru_cache(maxsize=64)
def _gear_rows(topo: _Topology) -> tuple[np.ndarray, ...]:
    """Per gear the gear pairs place, the rows it moves: its joints that neither the
    ground nor a link placed before it holds."""
    held = set(topo.links[topo.ground]).union(*(topo.links[k] for k in topo.input_links))
    out = []
    for link in _gears.driven_links(topo.gears):
        out.append(np.array([j for j in topo.links[link] if j not in held], dtype=int))
        held |= set(topo.links[link])
    return tuple(out)


def _moved_one(prep: _Prepared, kind, link, joints, u):
    """One input link's moving elements after its input `u`: (indices, rows)."""
    lk, C = prep.lk, prep.C0
    moving = np.array([j for j in lk.links[link] if j not in lk.links[lk.ground]], dtype=int)
    if moving.size == 0:
        return None, None
    (s,) = joints
    M = C[moving]
    line = np.array([not KINDS[lk.types[j]].is_point(lk.geometry) for j in moving])
    if lk.geometry == "planar":
        return moving, moved_planar(C, s, M, line, u, kind)
    if lk.geometry == "spatial":  # a turn about the R joint's axis (its point and axis point), a slide along the P's
        a = lk.names.index(lk.names[s] + _schema.AXIS_SUFFIX)
        P = C[s]
        if kind == "prismatic":
            return moving, M + u * unit(C[a] - P)
        return moving, P + (M - P) @ _screw.rotation(unit(C[a] - P), u).T
    # spherical: a rotation about the pivot's axis or the slider plane's pole, Eqs. (15)–(22)
    return moving, M @ _screw.rotation(C[s], u).T


def moved_planar(C, s, M, line, u, kind: str):
    """Planar rows `M` (points, or lines where `line`) moved with an input link by its
    input `u`: turned about the pivot `C[s]` (`kind` "revolute", Eqs. (10)–(12)) or slid
    along the ground line `C[s]`, direction `(b, −a)` ("prismatic", Eqs. (13)–(14))."""
    if kind == "revolute":
        P = C[s, :2]
        R = rotation(u)
        pts = P + (M[:, :2] - P) @ R.T
        n = M[:, :2] @ R.T
        c = M[:, 2] + dot(M[:, :2] - n, P)
        return jnp.where(
            line[:, None], jnp.concatenate([n, c[:, None]], axis=1), jnp.concatenate([pts, M[:, 2:]], axis=1)
        )
    t = u * jnp.stack([C[s, 1], -C[s, 0]])
    return jnp.where(line[:, None], M.at[:, 2].add(-(M[:, :2] @ t)), M.at[:, :2].add(t))


def assemble_coords(x, u, prep: _Prepared) -> Float[Array, "J 3"]:
    """All joint coordinates (tracers at their initial values) from the state `x`
    (None: the initial values) at input `u`: the initial coordinates, the input links'
    moved rows and the unknowns' rows side by side, each joint's row picked from them
    with static indices (`_rows`: a slice per run of consecutive rows). Not scatters
    into the initial coordinates: XLA:CPU runs a batched scatter element by element
    (3.4× slower: the benchmarks page, "Measurements behind the code")."""
    lk, C = prep.lk, prep.C0
    parts, pick, size = [C], np.arange(C.shape[0]), C.shape[0]
    for moving, moved in _moved(prep, u):
        parts.append(moved)
        pick[moving] = size + np.arange(len(moving))
        size += len(moving)
    if x is not None and lk.plan.unknowns:
        n = x.shape[0]
        rows = np.array([j for j, _, _ in lk.plan.unknowns], dtype=int)
        # a planar point or line keeps 2 (or 3) state components; index n is a zero
        src = np.array([[o, o + 1, o + 2 if w == 3 else n] for _, o, w in lk.plan.unknowns], dtype=int)
        xz = jnp.concatenate([x, jnp.zeros((1,), x.dtype)])
        parts.append(jnp.stack([xz[src[:, c]] for c in range(3)], axis=1).astype(C.dtype))
        pick[rows] = size + np.arange(len(rows))
    return _rows(jnp.concatenate(parts), pick) if len(parts) > 1 else C


def _rows(A, pick):
    """`A[pick]` for static indices, as slices of their runs of consecutive rows put
    side by side: under `vmap` a gather of rows becomes a batched gather that XLA:CPU
    writes out in another layout and copies back at each use (measured on the
    benchmarks page, "Measurements behind the code")."""
    starts = [0] + [i for i in range(1, len(pick)) if pick[i] != pick[i - 1] + 1]
    ends = starts[1:] + [len(pick)]
    return jnp.concatenate([A[pick[a] : pick[a] + (b - a)] for a, b in zip(starts, ends)])


def joint_coords(x, u, prep: _Prepared) -> Float[Array, "J 3"]:
    """Every joint's coordinates, tracers carried by their links, from the state `x`
    at input `u` (`assemble_coords` leaves the tracers at their initial values)."""
    return carry_tracers(prep, assemble_coords(x, u, prep))


def carry_tracers(prep: _Prepared, X):
    """`X` with the tracers' rows carried by their links' poses in it: picked like
    `assemble_coords`'s rows, not scattered (see `_rows`)."""
    parts, pick, size = [X], np.arange(X.shape[0]), X.shape[0]
    for kind, T in TRACERS.items():
        if "t_" + kind in prep.k:
            rows = tracer_rows(prep.lk.plan, kind)
            new = T.carry(X, rows, prep.k["t_" + kind])
            parts.append(jnp.concatenate([new.astype(X.dtype), X[rows[:, 0], new.shape[1] :]], axis=1))
            pick[rows[:, 0]] = size + np.arange(len(rows))
            size += len(rows)
    return _rows(jnp.concatenate(parts), pick) if len(parts) > 1 else X


# Jitted so that it is traced once per signature: a sweep's program evaluates and
# differentiates the residual in a dozen places (Newton, rates, the branch invariant,
# the conditioning), and each would otherwise trace it anew (Stephenson-II sweep:
# tracing 1.35 s → 0.78 s; XLA inlines the call, run time unchanged).
@jit
def prepared_residual(x: Float[Array, " n"], u, prep: _Prepared) -> Float[Array, " n"]:
    """The rigidity equations of a prepared linkage (the closure core's residual,
    square). An over-constrained linkage's `m > n` equations Φ enter as their
    least-squares normal equations `J(x)ᵀ Φ(x) = 0` (`J = ∂Φ/∂x`): at a closed
    configuration their Jacobian is `JᵀJ`, of full rank wherever the input determines
    the linkage, whichever equations are redundant there (a fixed choice of `n`
    independent rows loses rank along a Bennett linkage's turn where the whole system
    does not); the implicit derivative `−(JᵀJ)⁻¹ Jᵀ ∂Φ/∂u` is then exact. A zero of
    `JᵀΦ` that is not a zero of Φ is caught by the check of every equation
    (`redundancy_lost`)."""
    if not prep.lk.over_constrained:
        return full_residual(x, u, prep)
    r, J = full_residual(x, u, prep), jax.jacfwd(full_residual)(x, u, prep)
    return J.T @ r


@jit
def full_residual(x: Float[Array, " n"], u, prep: _Prepared) -> Float[Array, " m"]:
    """Every rigidity equation of a prepared linkage (more than the unknowns for an
    over-constrained one)."""
    return rigidity_rows(assemble_coords(x, u, prep), u, prep)


def rigidity_rows(X: Float[Array, "J 3"], u, prep: _Prepared) -> Float[Array, " m"]:
    """`full_residual` from the joint coordinates `X` it assembles from the state."""
    lk, k = prep.lk, prep.k
    sl = slice(0, lk.dim)
    rows = [
        E.residual(X, lk.plan.groups[kind], k.get(kind), _equation_inputs(lk, u, kind), sl)
        for kind, E in EQUATIONS.items()
        if lk.plan.groups[kind].size
    ]
    return jnp.concatenate(rows) if rows else jnp.zeros((0,), X.dtype)  # (a gear train the gears place whole)


# the inputs held by an equation of the closure (not by a prescribed link): their kind's equation
_INPUT_EQUATIONS = {"actuator": "act", "turn": "turn", "slide": "slide"}


def _equation_inputs(lk: Linkage, u, kind):
    """The inputs an equation kind reads, in the order of its rows (the inputs'
    order): `u` itself for one input."""
    if lk.n_inputs == 1:
        return u
    mine = [ui for (k, _, _), ui in zip(lk.topology.inputs, _input_values(lk, u)) if _INPUT_EQUATIONS.get(k) == kind]
    return jnp.stack(mine) if mine else u


def residual(x: Float[Array, " n"], u, lk: Linkage) -> Float[Array, " n"]:
    """The rigidity equations at input `u` (square; each form has an O(1), full-rank
    Jacobian; see the module docstring). For an over-constrained linkage (more
    equations Φ than unknowns), their least-squares normal equations `J(x)ᵀ Φ(x)`, which
    the closure core solves (see `prepared_residual`).

    **Arguments:** `x` `(n,)`: the state (the unknown coordinates, `lk.x0()` at the
    initial configuration); `u`: the input (`(k,)` for `k` inputs); `lk`: the linkage.

    **Returns:** the residual `(n,)`, zero on a closed configuration.
    """
    return prepared_residual(x, u, prepare(lk))


def _joint_load_fields(kind: str, p) -> dict:
    """A load across a joint's own fields in its description (`_schema._joint_load`)."""
    if kind in _schema.SPRING_LOADS:
        return {"stiffness": float(p[0]), ("angle" if kind == "torsion_spring" else "position"): float(p[1])}
    if kind in _schema.DAMPER_LOADS:
        return {"damping": float(p[0])}
    if kind == "friction":
        return {"torque": float(p[0]), "speed": float(p[1])}
    if kind == "stop_event":
        return {"range": [float(p[1]), float(p[2])], "event": True}
    return {"range": [float(p[1]), float(p[2])], "stiffness": float(p[0])}


def kinematic(lk: "Linkage") -> "Linkage":
    """`lk` without its loads, the static fields its motion does not read (eager): the
    programs of its motion, its closure check and its Jacobians are then shared by
    every linkage that differs from it only in its loads (a force or a spring added
    compiles none of them again). `lk` itself when it has none; remembered for the
    last 16 linkages."""
    if not lk.load_kinds:
        return lk
    # (the description's reader gives a linkage without loads an empty `(0, 3)` array)
    return _KINEMATIC.value(
        lk, lambda k: dataclasses.replace(k, load_kinds=(), load_index=(), load_params=jax.device_put(np.zeros((0, 3))))
    )


_KINEMATIC = Recent()


@filter_jit
def jacobians(x, u, lk):
    """`(∂Φ/∂x, ∂Φ/∂u)` of every equation at `(x, u)` (an over-constrained linkage's
    redundant ones too): one program per linkage and shapes."""
    prep = prepare(lk)
    Jx = jax.jacfwd(full_residual)(x, u, prep)
    Ju = jax.jacfwd(full_residual, argnums=1)(x, u, prep)
    return Jx, Ju


@filter_jit
def _redundancy_values(lk):
    """The residual of every equation and `(∂Φ/∂x, ∂Φ/∂u)` at the initial
    configuration: one program (op by op, an over-constrained linkage's check compiled
    dozens of small ones: Bennett's construction 2.4 s)."""
    x, u = lk.x0(), lk.zero_input()
    return (full_residual(x, u, prepare(lk)),) + jacobians(x, u, lk)


def rank_info(Jx, Ju, rtol):
    """The ranks behind the mobility, on the host: of `[Jx Ju]` and of `Jx` relative to
    `[Jx Ju]`'s largest singular value (`rtol`), the mobility, the redundant equations
    and `Jx`'s singular values."""
    Jx, Ju = np.asarray(Jx), np.asarray(Ju)
    n = Jx.shape[1]
    Ju = Ju.reshape(Jx.shape[0], -1)  # one column per input
    s_full = np.linalg.svd(np.concatenate([Jx, Ju], axis=1), compute_uv=False)
    s_x = np.linalg.svd(Jx, compute_uv=False)
    scale = max(s_full[0], 1e-300)
    rank = int(np.sum(s_full > rtol * scale))
    rank_x = int(np.sum(s_x > rtol * scale))
    return dict(
        mobility=n + Ju.shape[1] - rank, rank=rank, rank_x=rank_x, n_unknowns=n, redundant=Jx.shape[0] - rank, sv_x=s_x
    )

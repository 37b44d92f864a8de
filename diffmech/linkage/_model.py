"""Linkages of points, lines and planes (Sharma & Purwar, seed 003): the description
and its rigidity equations, planar, spherical and spatial.

Elements. A revolute joint is a **point**: `(x, y)` in the plane, a unit vector
`(x, y, z)` on the unit sphere (Eq. (9)). A prismatic joint is a **line**
`a x + b y + c = 0` in the plane (normalised to `a² + b² = 1`, Eq. (8)) or a **plane**
through the sphere's centre, given by its unit normal (its pole). A spatial joint is
a spherical (S) joint, a point `(x, y, z)`. A **tracer** is a point carried by one
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
  other point `d = a + α(b − a) + β(c − a) + γ (b − a) × (c − a)`; a binary S–S link:
  its distance (Eq. (1)); its spin about its axis is idle and not represented.

Every constant (r, α, β, γ, δ, d, k) comes from the initial coordinates, which are
the only array leaf of `Linkage`: the gradient of any result with respect to them is
the design gradient of synthesis. Topology (geometry, joint types, links, ground,
input) is static.

Inputs. `revolute`: the input link turns about its joint with the ground (Eqs.
(10)–(12) in the plane, anticlockwise positive; Eqs. (15)–(20) on the sphere,
right-handed about the joint's axis). `prismatic`: the input link slides along its
line with the ground (Eq. (13), along `(b, −a)`) or, on the sphere, turns about the
pole of its plane (Eq. (21), right-handed; arc length = angle on the unit sphere).
`actuator`: the distance between two joints grows by the input (Section 4.6).
"""

import dataclasses
import functools
import json
import math
import tomllib
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .. import _linalg
from .._geometry import rotation

GEOMETRIES = ("planar", "spherical", "spatial")
_KEYS = ("name", "geometry", "description", "joints", "links", "ground", "input", "simulation")
INPUTS = ("revolute", "prismatic", "actuator")
JOINT_TYPES = {"planar": ("R", "P", "tracer"), "spherical": ("R", "P", "tracer"), "spatial": ("S", "tracer")}


class LinkageError(ValueError):
    """A linkage description or configuration is invalid; the message names the
    joint, link or path in the file, and the reason."""


# --------------------------------------------------------------------------- small vector helpers


def _perp(v):
    return jnp.stack([-v[..., 1], v[..., 0]], axis=-1)


def _dot(u, v):
    return jnp.sum(u * v, axis=-1)


def _cross2(u, v):
    return u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]


def _unit(v):
    return v / jnp.sqrt(_dot(v, v))[..., None]


def _rodrigues(axis, angle):
    """Rotation matrix about the unit `axis` by `angle` (right-handed)."""
    k = axis
    z = jnp.zeros_like(k[0])
    K = jnp.stack([jnp.stack([z, -k[2], k[1]]), jnp.stack([k[2], z, -k[0]]), jnp.stack([-k[1], k[0], z])])
    return jnp.eye(3, dtype=axis.dtype) + jnp.sin(angle) * K + (1 - jnp.cos(angle)) * (K @ K)


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

    def width(self, j):
        return 2 if (self.geometry == "planar" and self.types[j] != "P") else 3

    @property
    def known(self) -> tuple[bool, ...]:
        fixed = set(self.links[self.ground])
        if self.input_link >= 0:
            fixed |= set(self.links[self.input_link])
        return tuple(j in fixed or t == "tracer" for j, t in enumerate(self.types))

    def members(self, link):
        """(points, lines) of a link, tracers excluded, points first."""
        pts = [j for j in self.links[link] if self.types[j] in ("R", "S")]
        lns = [j for j in self.links[link] if self.types[j] == "P"]
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


@functools.lru_cache(maxsize=256)
def _compile(topo: _Topology, names: tuple, link_names: tuple) -> _Plan:
    known = topo.known
    eq: dict[str, list] = {k: [] for k in (
        "dist", "pcarry", "lcarry", "lslide", "offset", "angle", "unit",
        "sdot", "scarry", "scarry2", "tcarry", "act")}
    carried = set()  # elements with a gauge (planar lines, spherical vectors) already carried by a link
    frames = []
    for li in range(len(topo.links)):
        frame = _frame_of(topo, li)
        frames.append(frame)
        if li == topo.ground or li == topo.input_link:
            continue
        pts, lns = topo.members(li)
        lname = link_names[li]
        if topo.geometry == "planar":
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
        elif topo.geometry == "spherical":
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
    if topo.geometry in ("planar", "spherical"):
        for j, t in enumerate(topo.types):
            gauge = t == "P" or topo.geometry == "spherical"
            if gauge and t != "tracer" and not known[j] and j not in carried:
                eq["unit"].append((j,))
    if topo.input_kind == "actuator":
        eq["act"].append(topo.input_joints)

    rows_per = {"dist": 1, "pcarry": 2, "lcarry": 3, "lslide": 2, "offset": 1, "angle": 1, "unit": 1,
                "sdot": 1, "scarry": 3, "scarry2": 2, "tcarry": 3, "act": 1}
    width = {"dist": 2, "pcarry": 3, "lcarry": 3, "lslide": 3, "offset": 2, "angle": 2, "unit": 1,
             "sdot": 2, "scarry": 3, "scarry2": 3, "tcarry": 4, "act": 2}
    groups = {k: np.array(v, dtype=int).reshape(-1, width[k]) for k, v in eq.items()}
    n_eq = sum(rows_per[k] * len(v) for k, v in eq.items())
    unknowns, off = [], 0
    for j, t in enumerate(topo.types):
        if not known[j]:
            w = topo.width(j)
            unknowns.append((j, off, w))
            off += w
    tracers = []
    for j, t in enumerate(topo.types):
        if t != "tracer":
            continue
        (li,) = [k for k, m in enumerate(topo.links) if j in m]
        if frames[li] is None:
            need = {"planar": "two points, or a point and a line", "spherical": "two joints",
                    "spatial": "three non-collinear joints"}[topo.geometry]
            raise LinkageError(f"joints.{names[j]}: a tracer's link ({link_names[li]}) needs a frame: {need}")
        tracers.append((j, li))
    return _Plan(groups=groups, n_equations=n_eq, unknowns=tuple(unknowns), n_unknowns=off,
                 frames=tuple(frames), tracers=tuple(tracers))


# --------------------------------------------------------------------------- the module


class Linkage(eqx.Module):
    """A linkage of points, lines and planes (Sharma & Purwar): planar, spherical or
    spatial, with one input (a revolute or prismatic joint on the ground, or a linear
    actuator between two joints).

    **Fields:**

    - `coords`: `(J, 3)` initial coordinates, the one array leaf (the design
      variables). Planar points use the first two columns (the third is 0); planar
      lines are `(a, b, c)`, `a x + b y + c = 0`; spherical points and planes are unit
      vectors (point; plane normal); spatial points are `(x, y, z)`;
    - `names`, `types` (static): joint names and types (`"R"`, `"P"`, `"S"`, `"tracer"`);
    - `links`, `link_names` (static): the joints of each link (indices), the names;
    - `ground` (static): index of the ground link;
    - `input_kind` (static): `"revolute"`, `"prismatic"` or `"actuator"`;
      `input_link` (static, −1 for an actuator), `input_joints` (static: the pivot or
      slider joint with the ground, or the actuator's two joints);
    - `geometry`, `name` (static); `steps`, `step` (static): the default range of
      `simulate` (the seed's: 180 steps of 2°, or 0.01 length units).

    Build one with `Linkage.from_dict`, load a JSON or TOML file (`load`), or take a
    bundled example (`diffmech.examples`). Construction validates the description and
    raises `LinkageError` naming the item; `check()` verifies the initial configuration
    (its residual and its mobility from the Jacobian's rank).
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
    geometry: str = eqx.field(static=True, default="planar")
    name: str = eqx.field(static=True, default="linkage")
    steps: int = eqx.field(static=True, default=180)
    step: float | None = eqx.field(static=True, default=None)
    description: str = eqx.field(static=True, default="")

    # ------------------------------------------------------------------ building

    @classmethod
    def from_dict(cls, spec: dict, *, sphere_tol: float = 1e-2) -> "Linkage":
        """Build from a description (the JSON/TOML file's content):

        ```
        {"name": "...", "geometry": "planar" | "spherical" | "spatial",
         "joints": {NAME: {"type": "R" | "P" | "S" | "tracer", "coords": [...]}, ...},
         "links": {LINK: [joint names], ...},
         "ground": LINK,
         "input": LINK  (revolute or prismatic about/along its joint with the ground)
                | {"type": "revolute" | "prismatic", "link": LINK, "joint": NAME}
                | {"type": "actuator", "joints": [NAME, NAME]},
         "simulation": {"steps": 180, "step": 0.0349}}   (optional)
        ```

        Spherical points and plane normals are directions from the sphere's centre:
        they are normalised, and a point farther than `sphere_tol` from the unit
        sphere is an error (the seed's tables print two decimals). Errors name the
        path in the description and the reason (`LinkageError`).
        """
        if not isinstance(spec, dict):
            raise LinkageError(f"linkage: a description is a mapping; got {type(spec).__name__}")
        extra = sorted(set(spec) - set(_KEYS))
        if extra:
            raise LinkageError(f"linkage: unknown key {extra[0]!r} (allowed: {_KEYS})")
        for key in ("joints", "links", "ground", "input"):
            if key not in spec:
                raise LinkageError(f"linkage: missing key {key!r} (need 'joints', 'links', 'ground', 'input')")
        geometry = spec.get("geometry", "planar")
        if geometry not in GEOMETRIES:
            raise LinkageError(f"geometry: must be one of {GEOMETRIES}; got {geometry!r}")
        joints, links = spec["joints"], spec["links"]
        if not isinstance(joints, dict) or not joints:
            raise LinkageError("joints: a non-empty mapping of joint name -> {type, coords}")
        if not isinstance(links, dict) or not links:
            raise LinkageError("links: a non-empty mapping of link name -> [joint names]")
        allowed = JOINT_TYPES[geometry]
        names, types, rows = [], [], []
        for name, j in joints.items():
            kind = j.get("type") if isinstance(j, dict) else None
            if kind not in allowed:
                raise LinkageError(f"joints.{name}.type: a {geometry} joint is one of {allowed}; got {kind!r}")
            raw = j.get("coords")
            try:
                c = np.asarray(raw, dtype=float)
            except (TypeError, ValueError):
                raise LinkageError(f"joints.{name}.coords: need numbers; got {raw!r}") from None
            want = 2 if (geometry == "planar" and kind != "P") else 3
            what = {"planar": "a point (x, y)" if kind != "P" else "a line (a, b, c), a x + b y + c = 0",
                    "spherical": "a point (x, y, z) on the unit sphere" if kind != "P" else
                    "a plane through the centre, its normal (a, b, c)",
                    "spatial": "a point (x, y, z)"}[geometry]
            if c.shape != (want,):
                raise LinkageError(f"joints.{name}.coords: {what} needs {want} numbers; got {raw!r}")
            if not np.all(np.isfinite(c)):
                raise LinkageError(f"joints.{name}.coords: must be finite; got {raw!r}")
            if geometry == "planar" and kind == "P":
                nn = math.hypot(c[0], c[1])
                if not nn > 1e-12 * max(1.0, abs(c[2])):
                    raise LinkageError(f"joints.{name}.coords: the line {c.tolist()} cannot be normalised ((a, b) = 0)")
                c = c / nn
            elif geometry == "spherical":
                nn = float(np.linalg.norm(c))
                if kind == "P":
                    if not nn > 1e-12:
                        raise LinkageError(f"joints.{name}.coords: the plane normal {c.tolist()} cannot be normalised")
                elif abs(nn - 1) > sphere_tol:
                    raise LinkageError(
                        f"joints.{name}.coords: a spherical point must lie on the unit sphere (Eq. (9)); "
                        f"{c.tolist()} has norm {nn:.6g} (tolerance {sphere_tol})")
                c = c / nn
            else:
                c = np.concatenate([c, np.zeros(3 - c.size)])
            names.append(str(name))
            types.append(kind)
            rows.append(c)
        index = {n: i for i, n in enumerate(names)}
        link_names, link_tuples = [], []
        for lname, members in links.items():
            if not isinstance(members, (list, tuple)):
                raise LinkageError(f"links.{lname}: a list of joint names; got {members!r}")
            unknown = [m for m in members if m not in index]
            if unknown:
                raise LinkageError(f"links.{lname}: unknown joint {unknown[0]!r}; joints are {names}")
            idx = tuple(index[m] for m in members)
            if len(set(idx)) != len(idx):
                raise LinkageError(f"links.{lname}: a joint is listed twice: {list(members)}")
            if sum(types[i] != "tracer" for i in idx) < 2:
                raise LinkageError(f"links.{lname}: a link needs two or more joints (tracers not counted); got {list(members)}")
            link_names.append(str(lname))
            link_tuples.append(idx)
        ground = spec["ground"]
        if ground not in link_names:
            raise LinkageError(f"ground: unknown link {ground!r}; links are {link_names}")
        g = link_names.index(ground)
        for j, kind in enumerate(types):
            holders = [link_names[k] for k, lk in enumerate(link_tuples) if j in lk]
            if kind == "tracer" and len(holders) != 1:
                raise LinkageError(f"joints.{names[j]}: a tracer belongs to exactly one link; it is in {holders}")
            if kind != "tracer" and len(holders) < 2:
                raise LinkageError(f"joints.{names[j]}: a joint connects two or more links; it is in {holders}")
        in_kind, in_link, in_joints = _parse_input(spec["input"], geometry, names, types, link_names, link_tuples, g)
        sim = spec.get("simulation", {}) or {}
        if not isinstance(sim, dict) or set(sim) - {"steps", "step"}:
            raise LinkageError(f"simulation: a mapping with 'steps' and/or 'step'; got {sim!r}")
        steps = sim.get("steps", 180)
        step = sim.get("step")
        if not (isinstance(steps, int) and steps >= 1):
            raise LinkageError(f"simulation.steps: a positive integer; got {steps!r}")
        if step is not None and not (isinstance(step, (int, float)) and math.isfinite(step) and step != 0):
            raise LinkageError(f"simulation.step: a finite non-zero number; got {step!r}")
        lk = cls(coords=jnp.asarray(np.stack(rows)), names=tuple(names), types=tuple(types),
                 links=tuple(link_tuples), link_names=tuple(link_names), ground=g, input_kind=in_kind,
                 input_link=in_link, input_joints=in_joints, geometry=geometry,
                 name=str(spec.get("name", "linkage")), steps=steps, step=None if step is None else float(step),
                 description=str(spec.get("description", "")))
        lk._validate_frames()
        plan = lk.plan
        if plan.n_equations != plan.n_unknowns:
            raise LinkageError(
                f"linkage {lk.name!r}: {plan.n_equations} rigidity equations for {plan.n_unknowns} unknown coordinates; "
                "a one-input linkage needs them equal (too few: the constraints do not determine it; too many: "
                "it is locked or over-constrained). Check the links' joints, the ground and the input.")
        return lk

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
                if np.linalg.norm(np.cross(b - a, c - a)) < 1e-9 * max(1.0, np.linalg.norm(b - a) * np.linalg.norm(c - a)):
                    raise LinkageError(f"links.{ln}: joints {nm} are collinear (a spatial link needs a non-degenerate frame)")

    @classmethod
    def load(cls, path, **kw) -> "Linkage":
        """Load a description from a JSON (`.json`) or TOML (`.toml`) file (see
        `from_dict`); errors name the file."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise LinkageError(f"{path}: cannot read ({e})") from None
        try:
            spec = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
            raise LinkageError(f"{path}: not valid {'TOML' if path.suffix.lower() == '.toml' else 'JSON'} ({e})") from None
        try:
            return cls.from_dict(spec, **kw)
        except LinkageError as e:
            raise LinkageError(f"{path}: {e}") from None

    def to_dict(self) -> dict:
        """The description (`from_dict(lk.to_dict())` rebuilds the same linkage)."""
        C = np.asarray(self.coords)
        joints = {}
        for n, t, row in zip(self.names, self.types, C):
            w = 2 if (self.geometry == "planar" and t != "P") else 3
            joints[n] = {"type": t, "coords": [float(v) for v in row[:w]]}
        if self.input_kind == "actuator":
            inp = {"type": "actuator", "joints": [self.names[j] for j in self.input_joints]}
        else:
            inp = {"type": self.input_kind, "link": self.link_names[self.input_link],
                   "joint": self.names[self.input_joints[0]]}
        sim = {"steps": self.steps}
        if self.step is not None:
            sim["step"] = self.step
        return {"name": self.name, "geometry": self.geometry, "description": self.description, "joints": joints,
                "links": {ln: [self.names[j] for j in lk] for ln, lk in zip(self.link_names, self.links)},
                "ground": self.link_names[self.ground], "input": inp, "simulation": sim}

    def save(self, path) -> None:
        """Write the description as JSON (`.json`) or TOML (`.toml`)."""
        path = Path(path)
        d = self.to_dict()
        path.write_text(_to_toml(d) if path.suffix.lower() == ".toml" else json.dumps(d, indent=1))

    # ------------------------------------------------------------------ topology

    @property
    def topology(self) -> _Topology:
        return _Topology(self.geometry, self.types, self.links, self.ground, self.input_kind, self.input_link,
                         self.input_joints)

    @property
    def plan(self) -> _Plan:
        return _compile(self.topology, self.names, self.link_names)

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
        return dict(unknowns=p.n_unknowns, equations=p.n_equations, tracer_coordinates=n_tr,
                    paper_unknowns=p.n_unknowns + n_tr)

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
        C = self.coords
        if self.geometry == "planar":
            lines = np.array([j for j, t in enumerate(self.types) if t == "P"], dtype=int)
            if lines.size:
                n = jnp.sqrt(_dot(C[lines, :2], C[lines, :2]))
                C = C.at[lines].set(C[lines] / n[:, None])
            return C
        if self.geometry == "spherical":
            return _unit(C)
        return C

    def driven(self, u) -> Float[Array, "J 3"]:
        """All coordinates with the input applied to the input link (Eqs. (10)–(22));
        solved joints keep their initial values, tracers are not updated."""
        return _assemble(None, u, _prepare(self))

    def full(self, x: Float[Array, " n"], u) -> Float[Array, "J 3"]:
        """All coordinates (tracers included) from the solved state `x` at input `u`."""
        prep = _prepare(self)
        return _carry_tracers(prep, _assemble(x, u, prep))

    def state(self, C: Float[Array, "J 3"]) -> Float[Array, " n"]:
        """The solved state `x` read from all coordinates `C` (e.g. a row of
        `Motion.coords`): the coordinates of the solved joints, in order."""
        parts = [C[j, :w] for j, _, w in self.plan.unknowns]
        return jnp.concatenate(parts) if parts else jnp.zeros((0,), C.dtype)

    def x0(self) -> Float[Array, " n"]:
        """The initial state: the initial coordinates of the solved joints."""
        return self.state(self.initial())


def _parse_input(inp, geometry, names, types, link_names, link_tuples, g):
    if isinstance(inp, str):
        inp = {"link": inp}
    if not isinstance(inp, dict):
        raise LinkageError(f"input: a link name or a mapping {{type, link, joint}} / {{type: actuator, joints}}; got {inp!r}")
    kind = inp.get("type")
    if kind is not None and kind not in INPUTS:
        raise LinkageError(f"input.type: one of {INPUTS}; got {kind!r}")
    if kind == "actuator":
        js = inp.get("joints")
        if not (isinstance(js, (list, tuple)) and len(js) == 2):
            raise LinkageError(f"input.joints: an actuator acts between two joints; got {js!r}")
        for n in js:
            if n not in names or types[names.index(n)] == "P":
                raise LinkageError(f"input.joints: {n!r} is not a point joint of this linkage")
        a, b = names.index(js[0]), names.index(js[1])
        if a == b:
            raise LinkageError("input.joints: an actuator needs two different joints")
        if any(a in lk and b in lk for lk in link_tuples):
            raise LinkageError(f"input.joints: {js[0]} and {js[1]} are on the same link; the actuator would be rigid")
        return "actuator", -1, (a, b)
    if geometry == "spatial":
        raise LinkageError("input: a spatial linkage is driven by an actuator ({\"type\": \"actuator\", \"joints\": [A, B]})")
    link = inp.get("link")
    if link not in link_names:
        raise LinkageError(f"input.link: unknown link {link!r}; links are {link_names}")
    li = link_names.index(link)
    if li == g:
        raise LinkageError("input.link: the input link cannot be the ground")
    shared = [j for j in link_tuples[li] if j in link_tuples[g] and types[j] != "tracer"]
    if "joint" in inp:
        if inp["joint"] not in names or names.index(inp["joint"]) not in shared:
            raise LinkageError(f"input.joint: {inp['joint']!r} is not a joint between {link!r} and the ground")
        shared = [names.index(inp["joint"])]
    if len(shared) != 1:
        raise LinkageError(f"input: link {link!r} must share exactly one joint with the ground; it shares "
                           f"{[names[j] for j in shared]}")
    (s,) = shared
    inferred = "prismatic" if types[s] == "P" else "revolute"
    if kind is not None and kind != inferred:
        raise LinkageError(f"input.type: {kind!r} does not match joint {names[s]} of type {types[s]} "
                           f"(a revolute input turns about a point, a prismatic one slides along a line or plane)")
    return inferred, li, (s,)


# --------------------------------------------------------------------------- frames, tracers, residual


def _frame_coeffs_pp(C0, a, b, c):
    # (α, β) with c = a + α e + β S e, e = b − a
    e = C0[b, :2] - C0[a, :2]
    d = C0[c, :2] - C0[a, :2]
    r2 = _dot(e, e)
    return _dot(d, e) / r2, _dot(d, _perp(e)) / r2


def _frame_coeffs_3(C0, a, b, c, d):
    # (α, β, γ) with d = a + α (b − a) + β (c − a) + γ (b − a) × (c − a)
    e1, e2 = C0[b] - C0[a], C0[c] - C0[a]
    M = jnp.stack([e1, e2, jnp.cross(e1, e2)], axis=-1)  # (k, 3, 3) columns
    return jax.vmap(_linalg.solve)(M, C0[d] - C0[a])


def _frame_coeffs_s(C0, u, v, w):
    # (α, β, γ) with w = α u + β v + γ u × v
    M = jnp.stack([C0[u], C0[v], jnp.cross(C0[u], C0[v])], axis=-1)
    return jax.vmap(_linalg.solve)(M, C0[w])


def _orthonormal(u, v):
    # rows (k, 3): e1 = u/|u|, e2 ⟂ e1 in span(u, v), e3 = e1 × e2
    e1 = _unit(u)
    e2 = _unit(v - _dot(v, e1)[..., None] * e1)
    return e1, e2, jnp.cross(e1, e2)


class _Prepared(eqx.Module):
    """A linkage with the constants of its rigidity equations computed once from its
    initial coordinates (differentiably): the closure core's `params`, so that the
    Newton iterations do not recompute them."""

    lk: Linkage
    C0: Float[Array, "J 3"]
    k: dict


def _tracer_rows(plan, kind):
    rows = [(j,) + tuple(plan.frames[li][1:]) for j, li in plan.tracers if plan.frames[li][0] == kind]
    return np.array(rows, dtype=int).reshape(-1, {"pp": 3, "pl": 3, "ss": 3, "ppp": 4}[kind])


def _prepare(lk: Linkage) -> _Prepared:
    C0 = lk.initial()
    g = lk.plan.groups
    k = {}

    def dist0(a, b, sl):
        return jnp.sqrt(_dot(C0[b, sl] - C0[a, sl], C0[b, sl] - C0[a, sl]))

    sl = slice(0, 2) if lk.geometry == "planar" else slice(0, 3)
    if g["dist"].size:
        k["dist"] = dist0(*g["dist"].T, sl)
    if g["act"].size:
        k["act"] = dist0(*g["act"].T, sl)
    if g["pcarry"].size:
        k["pcarry"] = _frame_coeffs_pp(C0, *g["pcarry"].T)
    for kind in ("lcarry", "lslide"):
        if g[kind].size:
            a, b, ln = g[kind].T
            e0 = C0[b, :2] - C0[a, :2]
            r0 = jnp.sqrt(_dot(e0, e0))
            k[kind] = (_dot(C0[ln, :2], e0) / r0, _dot(C0[ln, :2], _perp(e0)) / r0, r0,
                       _dot(C0[ln, :2], C0[a, :2]) + C0[ln, 2])
    if g["offset"].size:
        p, ln = g["offset"].T
        k["offset"] = _dot(C0[ln, :2], C0[p, :2]) + C0[ln, 2]
    if g["angle"].size:
        l1, l2 = g["angle"].T
        k["angle"] = (_dot(C0[l1, :2], C0[l2, :2]), _cross2(C0[l1, :2], C0[l2, :2]))
    if g["sdot"].size:
        a, b = g["sdot"].T
        cr = jnp.cross(C0[a], C0[b])
        k["sdot"] = (_dot(C0[a], C0[b]), jnp.sqrt(_dot(cr, cr)))
    if g["scarry"].size:
        k["scarry"] = _frame_coeffs_s(C0, *g["scarry"].T)
    if g["scarry2"].size:
        # an element another link already carries: two of its coordinates in this
        # link's orthonormal frame, those along the axes where it is smallest (their
        # projections on its tangent plane are then well conditioned)
        a, b, w = g["scarry2"].T
        c = jnp.stack([_dot(C0[w], e) for e in _orthonormal(C0[a], C0[b])], axis=-1)
        ac = jax.lax.stop_gradient(jnp.abs(c))
        biggest = (ac >= jnp.max(ac, axis=-1, keepdims=True)).astype(c.dtype)
        keep = 1.0 - biggest / jnp.sum(biggest, axis=-1, keepdims=True)  # drop the largest axis
        k["scarry2"] = (c, keep)
    if g["tcarry"].size:
        k["tcarry"] = _frame_coeffs_3(C0, *g["tcarry"].T)
    plan = lk.plan
    if plan.tracers:
        R = _tracer_rows(plan, "pp")
        if R.size:
            k["t_pp"] = _frame_coeffs_pp(C0, R[:, 1], R[:, 2], R[:, 0])
        R = _tracer_rows(plan, "pl")
        if R.size:
            j, p, ln = R.T
            d, n0 = C0[j, :2] - C0[p, :2], C0[ln, :2]
            k["t_pl"] = (_dot(d, n0), _dot(d, _perp(n0)))
        R = _tracer_rows(plan, "ss")
        if R.size:
            k["t_ss"] = _frame_coeffs_s(C0, R[:, 1], R[:, 2], R[:, 0])
        R = _tracer_rows(plan, "ppp")
        if R.size:
            k["t_ppp"] = _frame_coeffs_3(C0, R[:, 1], R[:, 2], R[:, 3], R[:, 0])
    return _Prepared(lk=lk, C0=C0, k=k)


def _moved(prep: _Prepared, u):
    """The input link's moving elements after the input `u`: (indices, rows)."""
    lk, C = prep.lk, prep.C0
    if lk.input_kind == "actuator":
        return None, None
    moving = np.array([j for j in lk.links[lk.input_link] if j not in lk.links[lk.ground]], dtype=int)
    if moving.size == 0:
        return None, None
    (s,) = lk.input_joints
    M = C[moving]
    line = np.array([lk.types[j] == "P" for j in moving])
    if lk.geometry == "planar":
        if lk.input_kind == "revolute":  # Eqs. (10)–(12)
            P = C[s, :2]
            R = rotation(u)
            pts = P + (M[:, :2] - P) @ R.T
            n = M[:, :2] @ R.T
            c = M[:, 2] + _dot(M[:, :2] - n, P)
            rows = jnp.where(line[:, None], jnp.concatenate([n, c[:, None]], axis=1),
                             jnp.concatenate([pts, M[:, 2:]], axis=1))
        else:  # slide along the ground line, direction (b, −a): Eqs. (13)–(14)
            t = u * jnp.stack([C[s, 1], -C[s, 0]])
            rows = jnp.where(line[:, None], M.at[:, 2].add(-(M[:, :2] @ t)), M.at[:, :2].add(t))
        return moving, rows
    # spherical: a rotation about the pivot's axis or the slider plane's pole, Eqs. (15)–(22)
    return moving, M @ _rodrigues(C[s], u).T


def _assemble(x, u, prep: _Prepared) -> Float[Array, "J 3"]:
    """All joint coordinates (tracers at their initial values) from the state `x`
    (None: the initial values) at input `u`: two scatters with static indices (one op
    each, whatever the number of joints: tracing cost matters on first calls)."""
    lk, X = prep.lk, prep.C0
    moving, moved = _moved(prep, u)
    if moving is not None:
        X = X.at[moving].set(moved)
    if x is not None and lk.plan.unknowns:
        n = x.shape[0]
        rows = np.array([j for j, _, _ in lk.plan.unknowns], dtype=int)
        # a planar point or line keeps 2 (or 3) state components; index n is a zero
        src = np.array([[o, o + 1, o + 2 if w == 3 else n] for _, o, w in lk.plan.unknowns], dtype=int)
        X = X.at[rows].set(jnp.concatenate([x, jnp.zeros((1,), x.dtype)])[src])
    return X


def _carry_tracers(prep: _Prepared, X):
    plan = prep.lk.plan
    k = prep.k
    if "t_pp" in k:
        j, a, b = _tracer_rows(plan, "pp").T
        al, be = k["t_pp"]
        e = X[b, :2] - X[a, :2]
        X = X.at[j, :2].set(X[a, :2] + al[:, None] * e + be[:, None] * _perp(e))
    if "t_pl" in k:
        j, p, ln = _tracer_rows(plan, "pl").T
        al, be = k["t_pl"]
        n = X[ln, :2]
        X = X.at[j, :2].set(X[p, :2] + al[:, None] * n + be[:, None] * _perp(n))
    if "t_ss" in k:
        j, u, v = _tracer_rows(plan, "ss").T
        kk = k["t_ss"]
        X = X.at[j].set(kk[:, :1] * X[u] + kk[:, 1:2] * X[v] + kk[:, 2:] * jnp.cross(X[u], X[v]))
    if "t_ppp" in k:
        j, a, b, c = _tracer_rows(plan, "ppp").T
        kk = k["t_ppp"]
        e1, e2 = X[b] - X[a], X[c] - X[a]
        X = X.at[j].set(X[a] + kk[:, :1] * e1 + kk[:, 1:2] * e2 + kk[:, 2:] * jnp.cross(e1, e2))
    return X


# Jitted so that it is traced once per signature: a sweep's program evaluates and
# differentiates the residual in a dozen places (Newton, rates, the branch invariant,
# the conditioning), and each would otherwise trace it anew (Stephenson-II sweep:
# tracing 1.35 s → 0.78 s; XLA inlines the call, run time unchanged).
@jax.jit
def _residual(x: Float[Array, " n"], u, prep: _Prepared) -> Float[Array, " n"]:
    """The rigidity equations of a prepared linkage (the closure core's residual)."""
    lk, k = prep.lk, prep.k
    X = _assemble(x, u, prep)
    g = lk.plan.groups
    out = []
    sl = slice(0, 2) if lk.geometry == "planar" else slice(0, 3)
    if g["dist"].size:
        a, b = g["dist"].T
        r0 = k["dist"]
        e = X[b, sl] - X[a, sl]
        out.append((_dot(e, e) - r0**2) / (2 * r0))
    if g["pcarry"].size:
        a, b, c = g["pcarry"].T
        al, be = k["pcarry"]
        e = X[b, :2] - X[a, :2]
        out.append((X[c, :2] - X[a, :2] - al[:, None] * e - be[:, None] * _perp(e)).reshape(-1))
    for kind in ("lcarry", "lslide"):
        if g[kind].size:
            a, b, ln = g[kind].T
            ga, de, r0, d0 = k[kind]
            e = (X[b, :2] - X[a, :2]) / r0[:, None]
            n = ga[:, None] * e + de[:, None] * _perp(e)
            # carried: n equals where the frame puts it; sliding: parallel to it
            out.append((X[ln, :2] - n).reshape(-1) if kind == "lcarry" else _cross2(X[ln, :2], n))
            out.append(_dot(X[ln, :2], X[a, :2]) + X[ln, 2] - d0)
    if g["offset"].size:
        p, ln = g["offset"].T
        out.append(_dot(X[ln, :2], X[p, :2]) + X[ln, 2] - k["offset"])
    if g["angle"].size:
        l1, l2 = g["angle"].T
        c, s = k["angle"]
        out.append(_cross2(X[l2, :2], c[:, None] * X[l1, :2] + s[:, None] * _perp(X[l1, :2])))
    if g["sdot"].size:
        a, b = g["sdot"].T
        c0, s0 = k["sdot"]
        out.append((_dot(X[a], X[b]) - c0) / s0)
    if g["scarry"].size:
        a, b, w = g["scarry"].T
        kk = k["scarry"]
        out.append((X[w] - kk[:, :1] * X[a] - kk[:, 1:2] * X[b] - kk[:, 2:] * jnp.cross(X[a], X[b])).reshape(-1))
    if g["scarry2"].size:
        a, b, w = g["scarry2"].T
        c, keep = k["scarry2"]
        r = jnp.stack([_dot(X[w], e) for e in _orthonormal(X[a], X[b])], axis=-1) - c  # (k, 3)
        # the two kept axes, in order (a static selection would need concrete data)
        first = jnp.sum(keep * r * (jnp.cumsum(keep, axis=-1) == 1), axis=-1)
        second = jnp.sum(keep * r * (jnp.cumsum(keep, axis=-1) == 2), axis=-1)
        out.append(jnp.stack([first, second], axis=-1).reshape(-1))
    if g["tcarry"].size:
        a, b, c, d = g["tcarry"].T
        kk = k["tcarry"]
        e1, e2 = X[b] - X[a], X[c] - X[a]
        out.append((X[d] - X[a] - kk[:, :1] * e1 - kk[:, 1:2] * e2 - kk[:, 2:] * jnp.cross(e1, e2)).reshape(-1))
    if g["unit"].size:
        (j,) = g["unit"].T
        out.append((_dot(X[j, sl], X[j, sl]) - 1) / 2)
    if g["act"].size:
        a, b = g["act"].T
        r = k["act"] + u
        e = X[b, sl] - X[a, sl]
        out.append((_dot(e, e) - r**2) / (2 * r))
    return jnp.concatenate(out)


def residual(x: Float[Array, " n"], u, lk: Linkage) -> Float[Array, " n"]:
    """The rigidity equations at input `u` (square; each form has an O(1), full-rank
    Jacobian; see the module docstring)."""
    return _residual(x, u, _prepare(lk))


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


def _to_toml(d: dict) -> str:
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

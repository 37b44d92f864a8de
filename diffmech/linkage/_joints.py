"""The joint kinds of a linkage description, one class per kind.

Each kind says in one place what the rest of the library needs to know of it:

- **its description**: `letter` (the joint's `"type"`), the geometries it exists in,
  what its `"coords"` are (`is_point`: a point, or else a planar line
  `a x + b y + c = 0` or a spherical plane's normal; read and normalised by
  `coords`) with their width in the solver (`width`), and its `"axis"` (`has_axis`)
  or `"axes"` (`has_cross`);
- **its elements and equations**: whether it joins links at all (`joint`: not a
  tracer, `carried` by one link, nor an axis or side point the reader adds), whether
  its element is a unit vector of the closure (`gauged`: the `unit` equation),
  whether it carries an axis point (`has_axis`: a spatial R, P or C joint), one per
  link (`has_cross`: a universal joint, whose two axes stay perpendicular), and
  whether it slides (`slides`: side A carries the axis line and side B its own copies
  of the point and the axis point; `slide_equation` names the `_equations` kind that
  holds them, and side B's frame locks its turn unless it `turns`);
- **how many links it joins** (`check_holders`);
- **its own coordinates as an input** (`coordinates`: `"revolute"`, `"prismatic"`);
- **its joint forces** (`reaction`: which unit wrenches its reaction unknowns stand
  for, and `unknowns`: how many, per link it joins beyond the first; the freedoms
  it leaves are the rest, `3 − unknowns` in the plane, `6 − unknowns` on the sphere
  and in space);
- **its MuJoCo and SDF forms**: the MuJoCo joints of one tree edge (`mjcf`), whether
  MuJoCo's `connect` equality can close a loop at it (`mjcf_connect`), and the SDF
  joint types read as it (`sdf`).

The modules that read a description (`_schema`), compile its equations (`_model`),
solve its joint forces (`_dynamics`) and write or read MJCF and SDF (`_mjcf`, `_sdf`)
ask the kind (`KINDS[letter]`), and the letter stays the description's `"type"`
(static, so a linkage's programs are keyed by it exactly as before). A new joint kind
is one class here (registered in `KINDS`), its equation in `_equations` if the
elements it declares do not already express it, its unit wrenches in `_dynamics` if
its reaction is a new one, and its tests.
"""

import math
from typing import ClassVar

import numpy as np

from ._errors import LinkageError

GEOMETRIES = ("planar", "spherical", "spatial")


class JointKind:
    """One kind of joint (a namespace: never instantiated; see the module docstring).
    A kind declares class attributes; the methods read them."""

    letter: ClassVar[str]
    title: ClassVar[str]
    geometries: ClassVar[tuple[str, ...]] = GEOMETRIES
    line_in: ClassVar[tuple[str, ...]] = ()  # where its coordinates are a line or a plane's normal, not a point
    axis_in: ClassVar[tuple[str, ...]] = ()  # where it carries an axis point shared by its links (`<joint>.axis`)
    slides_in: ClassVar[tuple[str, ...]] = ()  # where it is an axis line of side A along which side B slides
    joint: ClassVar[bool] = True  # joins links (not a tracer, nor an axis or side point)
    carried: ClassVar[bool] = False  # a point carried by one link, never solved for (a tracer)
    has_cross: ClassVar[bool] = False  # an axis point per link, kept perpendicular (a universal joint)
    slide_equation: ClassVar[str] = ""  # the `_equations` kind of a sliding joint
    turns: ClassVar[bool] = True  # side B of a sliding joint turns about the axis (else its frame locks the turn)
    coordinates: ClassVar[tuple[str, ...]] = ()  # its own coordinates an input may drive
    reactions: ClassVar[dict[str, str]] = {}  # per geometry, the unit wrenches of its reaction unknowns
    mjcf: ClassVar[tuple[str, ...]] = ()  # the MuJoCo joints of one tree edge
    mjcf_order: ClassVar[int] = 9  # the MJCF tree's preference among joints (lower first), after the inputs
    mjcf_connect: ClassVar[bool] = False  # MuJoCo's `connect` equalities (points) can close a loop at it
    sdf: ClassVar[tuple[str, ...]] = ()  # the SDF joint types read as it

    @classmethod
    def is_point(cls, geometry: str) -> bool:
        """Whether its coordinates are a point (else a planar line or a spherical
        plane's normal)."""
        return geometry not in cls.line_in

    @classmethod
    def has_axis(cls, geometry: str) -> bool:
        """Whether it carries an axis point shared by its links (`<joint>.axis`)."""
        return geometry in cls.axis_in

    @classmethod
    def slides(cls, geometry: str) -> bool:
        """Whether it is an axis line of side A along which side B slides."""
        return geometry in cls.slides_in

    @classmethod
    def width(cls, geometry: str) -> int:
        """The width of its coordinates in the solver (2 for a planar point)."""
        return 2 if (geometry == "planar" and cls.is_point(geometry)) else 3

    @classmethod
    def gauged(cls, geometry: str) -> bool:
        """Whether its element is a unit vector the closure keeps unit (spherical
        elements, planar lines): one `unit` equation unless a link carries it."""
        return not cls.carried and (geometry == "spherical" or not cls.is_point(geometry))

    @classmethod
    def coords_help(cls, geometry: str) -> str:
        """What its `"coords"` are, for an error message."""
        if geometry == "planar":
            return "a point (x, y)" if cls.is_point(geometry) else "a line (a, b, c), a x + b y + c = 0"
        if geometry == "spherical":
            return (
                "a point (x, y, z) on the unit sphere"
                if cls.is_point(geometry)
                else "a plane through the centre, its normal (a, b, c)"
            )
        return "a point (x, y, z)"

    @classmethod
    def coords(cls, name, raw, geometry: str, sphere_tol: float) -> np.ndarray:
        """Its row of the configuration `(3,)` from the description's `"coords"`
        (a planar line and a spherical element normalised, a planar point padded)."""
        try:
            c = np.asarray(raw, dtype=float)
        except (TypeError, ValueError):
            raise LinkageError(f"joints.{name}.coords: need numbers; got {raw!r}") from None
        want = cls.width(geometry)
        if c.shape != (want,):
            raise LinkageError(f"joints.{name}.coords: {cls.coords_help(geometry)} needs {want} numbers; got {raw!r}")
        if not np.all(np.isfinite(c)):
            raise LinkageError(f"joints.{name}.coords: must be finite; got {raw!r}")
        if geometry == "planar" and not cls.is_point(geometry):
            nn = math.hypot(c[0], c[1])
            if not nn > 1e-12 * max(1.0, abs(c[2])):
                raise LinkageError(f"joints.{name}.coords: the line {c.tolist()} cannot be normalised ((a, b) = 0)")
            return c / nn
        if geometry == "spherical":
            nn = float(np.linalg.norm(c))
            if not cls.is_point(geometry):
                if not nn > 1e-12:
                    raise LinkageError(f"joints.{name}.coords: the plane normal {c.tolist()} cannot be normalised")
            elif abs(nn - 1) > sphere_tol:
                raise LinkageError(
                    f"joints.{name}.coords: a spherical point must lie on the unit sphere (Eq. (9)); "
                    f"{c.tolist()} has norm {nn:.6g} (tolerance {sphere_tol})"
                )
            return c / nn
        return np.concatenate([c, np.zeros(3 - c.size)])

    @classmethod
    def check_holders(cls, name: str, holders: list[str], geometry: str) -> None:
        """Raise unless the links that hold it are as many as it joins (a tracer one;
        a sliding joint's two sides are `_schema`'s to find)."""
        if cls.carried and len(holders) != 1:
            raise LinkageError(f"joints.{name}: a tracer belongs to exactly one link; it is in {holders}")
        if cls.joint and not cls.slides(geometry) and len(holders) < 2:
            raise LinkageError(f"joints.{name}: a joint connects two or more links; it is in {holders}")

    @classmethod
    def reaction(cls, geometry: str) -> str:
        """Which unit wrenches its reaction unknowns stand for (`_dynamics`)."""
        if geometry not in cls.reactions:
            raise LinkageError(f"a {cls.title} joint has no reaction in a {geometry} linkage")
        return cls.reactions[geometry]

    @classmethod
    def unknowns(cls, geometry: str) -> int:
        """Its reaction unknowns per link it joins beyond the first (the freedoms it
        leaves are the rest: 3 in the plane, 6 on the sphere and in space)."""
        return REACTION_UNKNOWNS[cls.reaction(geometry)]


# a joint's reaction unknowns, by the unit wrenches they stand for: a force (2 in the
# plane, 3 in space); on the sphere the force through the centre and the couples normal
# to the joint's axis (5); a spatial R joint's force and the couples normal to its axis
# (5); a universal joint's force and the couple along the normal of its axes (4); a
# planar slide's normal force and couple (2); a spatial P joint's forces normal to its
# axis and its three couples (5), a C joint's without the couple about the axis (4)
REACTION_UNKNOWNS = {"plane": 2, "point": 3, "sphere": 5, "axis": 5, "cross": 4, "slide": 2, "prism": 5, "cyl": 4}


class Revolute(JointKind):
    """R: a pin (a point in the plane and on the sphere, a point and an axis in space)."""

    letter, title = "R", "revolute"
    axis_in = ("spatial",)
    coordinates = ("revolute",)
    reactions = {"planar": "plane", "spherical": "sphere", "spatial": "axis"}
    mjcf, mjcf_order, mjcf_connect = ("hinge",), 2, True
    sdf = ("revolute", "continuous")


class Prismatic(JointKind):
    """P: a slider (a line in the plane, a plane through the centre on the sphere, an
    axis line of one link in space along which the other slides without turning)."""

    letter, title = "P", "prismatic"
    line_in = ("planar", "spherical")
    axis_in = slides_in = ("spatial",)
    slide_equation, turns = "prism", False
    coordinates = ("prismatic",)
    reactions = {"planar": "slide", "spherical": "sphere", "spatial": "prism"}
    mjcf, mjcf_order = ("slide",), 1
    sdf = ("prismatic",)


class Cylindrical(JointKind):
    """C (space only): an axis line of one link along which the other slides and turns."""

    letter, title = "C", "cylindrical"
    geometries = axis_in = slides_in = ("spatial",)
    slide_equation = "cyl"
    coordinates = ("revolute", "prismatic")
    reactions = {"spatial": "cyl"}
    mjcf, mjcf_order = ("slide", "hinge"), 1  # the second named `<joint>.turn`


class Universal(JointKind):
    """U (space only): a point and two perpendicular axes, one fixed in each of its two
    links (a Cardan joint)."""

    letter, title = "U", "universal"
    geometries = ("spatial",)
    has_cross = True
    reactions = {"spatial": "cross"}
    mjcf, mjcf_order = ("hinge", "hinge"), 1  # the parent's axis, then the child's, named `<joint>.<link>`


class Spherical(JointKind):
    """S (space only): a ball joint, a point shared by its links."""

    letter, title = "S", "spherical"
    geometries = ("spatial",)
    reactions = {"spatial": "point"}
    mjcf, mjcf_order, mjcf_connect = ("ball",), 3, True
    sdf = ("ball",)


class Tracer(JointKind):
    """A point carried by one link (a coupler point): it joins nothing and is never
    solved for (the link's frame places it)."""

    letter, title = "tracer", "tracer"
    joint, carried = False, True


class AxisPoint(JointKind):
    """Not in a description: a spatial R, P or C joint's axis point (`<joint>.axis`), a
    U joint's in each of its links (`<joint>.axis.<link>`), which `_schema` adds so that
    every equation of a spatial link reads points alone."""

    letter, title = "axis", "axis point"
    geometries = ()
    joint = False


class SidePoint(JointKind):
    """Not in a description: side B's copy of a spatial P or C joint's point
    (`<joint>.<link>`), which `_schema` adds."""

    letter, title = "side", "side point"
    geometries = ()
    joint = False


class GearMark(JointKind):
    """Not in a description: a point on a planar gear or rack that has a single joint
    (`<link>.mark`, one pitch radius from its pivot along x), which `_gears` adds so
    that the link has a frame (its turn, its inertia in the dynamics)."""

    letter, title = "mark", "gear mark"
    geometries = ()
    joint = False


KINDS: dict[str, type[JointKind]] = {
    k.letter: k
    for k in (Revolute, Spherical, Universal, Prismatic, Cylindrical, Tracer, AxisPoint, SidePoint, GearMark)
}


def allowed(geometry: str) -> tuple[str, ...]:
    """The joint types of a `geometry`'s description."""
    return tuple(t for t, k in KINDS.items() if geometry in k.geometries)

"""Bundled linkages: the seed's (Sharma & Purwar, seed 003; `NAMES`), joints named as
in its tables (J1, J2, …; the four-bar's A, B, C, D and tracer P), spatial linkages
engineers build (`SPATIAL`) and linkages with several inputs (`SEVERAL_INPUTS`). Each
function returns a fresh `diffmech.Linkage`; the data files are in
`diffmech/linkage/data/` (`path(name)`), and each says where its numbers come from."""

from pathlib import Path

from .linkage._model import Linkage

_DATA = Path(__file__).parent / "linkage" / "data"
NAMES = ("fourbar", "stephenson2", "theo_jansen", "spherical_rrpr", "spherical_watt1", "ss5")
SPATIAL = ("rssr", "rscr", "bennett", "cardan")
SEVERAL_INPUTS = ("five_bar", "delta", "double_wishbone")


def path(name: str) -> Path:
    """The bundled description file of an example.

    **Arguments:** `name`: one of `NAMES`, `SPATIAL` or `SEVERAL_INPUTS`. **Returns:** the file's path
    (`ValueError` naming the available examples otherwise).
    """
    if name not in NAMES + SPATIAL + SEVERAL_INPUTS:
        raise ValueError(f"diffmech.examples: unknown example {name!r}; available: {NAMES + SPATIAL + SEVERAL_INPUTS}")
    return _DATA / f"{name}.json"


def load(name: str) -> Linkage:
    """An example by name (one of `NAMES`, `SPATIAL` or `SEVERAL_INPUTS`).

    **Arguments:** `name`: one of `NAMES`, `SPATIAL` or `SEVERAL_INPUTS`. **Returns:** a `Linkage`.
    """
    return Linkage.load(path(name))


def fourbar() -> Linkage:
    """Planar crank-rocker (Sec. 4.1 gives no numbers: Bai et al.'s l = 0.12, 0.25,
    0.26, 0.30 m), A = (0, 0), D = (0.3, 0), C above AD, tracer P mid-BC."""
    return load("fourbar")


def stephenson2() -> Linkage:
    """Planar Stephenson-II six-bar with two prismatic joints (Table 1, Fig. 2)."""
    return load("stephenson2")


def theo_jansen() -> Linkage:
    """Modified Theo Jansen linkage with a floating prismatic joint (Table 3, Fig. 6)."""
    return load("theo_jansen")


def spherical_rrpr() -> Linkage:
    """Spherical RRPR four-bar (Table 2, Fig. 3)."""
    return load("spherical_rrpr")


def spherical_watt1() -> Linkage:
    """Spherical Watt-I six-bar with a prismatic input (Table 4, Fig. 7)."""
    return load("spherical_watt1")


def ss5() -> Linkage:
    """Spatial 5-SS platform linkage driven by an actuator J1–J7 (Table 5, Fig. 8)."""
    return load("ss5")


def rssr() -> Linkage:
    """Spatial RSSR four-bar: a crank turning about the z axis through A, an S–S
    coupler B–C, and a rocker turning about a y-parallel axis through D, the two
    axes skew; driven at the crank (a full turn), with mass properties and gravity."""
    return load("rssr")


def rscr() -> Linkage:
    """Spatial RSCR four-bar: the RSSR's crank, a coupler that turns about and slides
    along an axis carried by the rocker (a cylindrical joint), and a rocker turning
    about a y-parallel axis; driven at the crank (a full turn), with mass properties
    and gravity."""
    return load("rscr")


def bennett() -> Linkage:
    """Bennett's over-constrained 4R linkage (lengths 1, √3, 1, √3, twists 30°, 60°,
    30°, 60°: Bennett's condition sin α / a = sin β / b), built from its
    Denavit–Hartenberg chain; Kutzbach counts −2, yet it moves, driven at the crank."""
    return load("bennett")


def five_bar() -> Linkage:
    """Planar five-bar with two inputs: cranks about A = (0, 0) and E = (1, 0) and two
    links meeting at C; `linkage.sweep` takes inputs of shape (N, 2)."""
    return load("five_bar")


def delta() -> Linkage:
    """Delta robot (Clavel): three arms turning about horizontal axes on the base, each
    carrying a parallelogram of two S–S rods to a platform that translates (tracer T
    at its centre); three inputs, one per arm: `linkage.sweep` takes inputs of shape (N, 3)."""
    return load("delta")


def double_wishbone() -> Linkage:
    """Left front double-wishbone suspension with rack steering (m; x forward, y
    outboard, z up): control arms turning about their chassis axes, the knuckle on
    two ball joints, a tie rod from the steering rack (a prismatic joint across the
    car); wheel centre `W` and a point `WS` along the spin axis as tracers. Two
    inputs: the lower arm's turn (wheel travel, positive up) and the rack's travel
    (steering, m)."""
    return load("double_wishbone")


def cardan() -> Linkage:
    """Cardan (Hooke's) joint: an input shaft about the z axis and an output shaft
    tilted 30° from it, joined by a universal joint at the axes' intersection (the
    output turns as `tan φ2 = tan φ1 / cos β`); driven at the input shaft."""
    return load("cardan")


def three_rpr():
    """Planar 3-RPR parallel manipulator (a symmetric design, not a paper's): base
    joints at the corners of an equilateral triangle of side 1 m, platform joints on a
    circle of radius 0.2 m about the reference point, each facing its base corner at
    `φ = 0`; legs from 0.1 to 0.9 m; home at the base's centroid. Its workspace and
    singularities: `diffmech.parallel.workspace`."""
    import jax
    import numpy as np

    from .parallel import ThreeRPR

    # NumPy: numbers known here, no JAX operation to compile
    corners = np.deg2rad(np.array([210.0, 330.0, 90.0]))
    centroid = np.array([0.5, 3**0.5 / 6])
    base = centroid + (1 / 3**0.5) * np.stack([np.cos(corners), np.sin(corners)], axis=-1)
    platform = 0.2 * np.stack([np.cos(corners), np.sin(corners)], axis=-1)
    # (put on the device as they are: an eager `jnp.asarray` of NumPy's compiles a program)
    return ThreeRPR(
        base=jax.device_put(base),
        platform=jax.device_put(platform),
        home=jax.device_put(centroid),
        lower=jax.device_put(np.float64(0.1)),
        upper=jax.device_put(np.float64(0.9)),
    )


# The five one-degree-of-freedom six-bars of revolute joints (the inversions of Watt's
# and Stephenson's chains): per type, the links (the ground "G" first; the tracer P on
# the link named last in the tuple's third entry), the input link and pivot, and a
# reference design (found by a random search for a fully turning input with every
# dyad's transmission angle within 20°…160°, whose tracer's curve over a turn a four-bar
# meets to no better than 1.8 %, 2.0 % and 4.6 % of its size (Watt I, Stephenson I and III,
# 20 points, the four-bar search's default call); Watt II's tracer, on its second
# four-bar's coupler, traces that four-bar's coupler curve whatever the design).
_SIX_BARS = {
    "watt1": (
        "Watt I: Watt's chain on a binary ground; a four-bar whose crank and coupler are ternary, "
        "and a dyad joining their third joints",
        dict(G=("A0", "B0"), T1=("A0", "A", "E"), T2=("A", "B", "F"), L3=("B0", "B"), L4=("E", "D"), L5=("D", "F")),
        ("T1", "A0", "L4"),
        dict(
            A0=(1.173, -0.911),
            A=(-0.927, 1.182),
            E=(-0.488, 0.097),
            B=(0.53, -1.212),
            B0=(0.815, 0.224),
            F=(-0.432, -1.139),
            D=(0.606, 0.871),
            P=(0.311, -0.609),
        ),
    ),
    "watt2": (
        "Watt II: Watt's chain on a ternary ground; two four-bars in series, the first's rocker the second's crank",
        dict(G=("A0", "B0", "C0"), L1=("A0", "A"), L2=("A", "B"), T=("B0", "B", "C"), L4=("C", "D"), L5=("D", "C0")),
        ("L1", "A0", "L4"),
        dict(
            A0=(0.68, 0.34),
            A=(-0.09, 0.45),
            B=(1.26, 1.03),
            B0=(2.56, -1.06),
            C=(2.14, 1.39),
            D=(3.21, 1.78),
            C0=(2.89, 0.82),
            P=(2.54, 3.0),
        ),
    ),
    "stephenson1": (
        "Stephenson I: Stephenson's chain on the binary link that joins the two ternaries' pivots; "
        "a four-bar of ternary crank and rocker, and a dyad joining their third joints",
        dict(G=("A0", "B0"), T1=("A0", "A", "E"), L2=("A", "B"), T2=("B0", "B", "F"), L4=("E", "D"), L5=("D", "F")),
        ("T1", "A0", "L4"),
        dict(
            A0=(-0.278, 1.265),
            A=(0.118, 0.948),
            E=(-0.818, 1.283),
            B=(-1.324, -0.183),
            B0=(0.305, 0.077),
            F=(-1.426, 1.142),
            D=(-0.518, 0.031),
            P=(-0.969, -1.101),
        ),
    ),
    "stephenson2": (
        "Stephenson II: Stephenson's chain on a binary link of its two-binary chain; from the ternary "
        "crank, a triad (a class-III group: the second ternary held by three binaries) solved by a search",
        dict(G=("A0", "D0"), T1=("A0", "A", "E"), L2=("A", "B"), L3=("E", "F"), T2=("B", "F", "D"), L5=("D", "D0")),
        ("T1", "A0", "T2"),
        dict(
            A0=(-0.4, 0.06),
            A=(0.71, -0.01),
            E=(-0.1, 0.05),
            B=(1.65, 1.16),
            F=(1.57, 2.11),
            D=(3.01, 1.23),
            D0=(0.68, 0.37),
            P=(2.11, 2.21),
        ),
    ),
    "stephenson3": (
        "Stephenson III: Stephenson's chain on a ternary ground; a four-bar whose ternary coupler is "
        "joined to the ground by a dyad",
        dict(G=("A0", "B0", "D0"), L1=("A0", "A"), L2=("A", "B", "C"), L3=("B0", "B"), L4=("C", "D"), L5=("D", "D0")),
        ("L1", "A0", "L4"),
        dict(
            A0=(-1.061, 0.337),
            A=(1.423, -0.863),
            B=(-0.674, 1.339),
            B0=(-1.378, -0.961),
            C=(-1.3, -1.002),
            D=(-0.958, 0.712),
            D0=(0.438, 0.26),
            P=(0.628, -1.288),
        ),
    ),
}
SIX_BARS = tuple(_SIX_BARS)


def six_bar(kind: str) -> Linkage:
    """A six-bar of revolute joints of one of the five one-degree-of-freedom types
    (`SIX_BARS`: `"watt1"`, `"watt2"`, `"stephenson1"`, `"stephenson2"`,
    `"stephenson3"`), with a tracer `P` on the link whose path only a six-bar traces,
    the ground `G` and an input that turns fully. The design is a reference (the
    search's starting topology, not a paper's); its description says how the type is
    built. Watt I, Watt II, Stephenson I and III decompose into two dyads (solved in
    closed form), Stephenson II into a triad.

    **Arguments:** `kind`: one of `SIX_BARS`. **Returns:** a `Linkage`.
    """
    if kind not in _SIX_BARS:
        raise ValueError(f"diffmech.examples.six_bar: unknown type {kind!r}; available: {SIX_BARS}")
    about, links, (link, pivot, carrier), coords = _SIX_BARS[kind]
    joints = {j: {"type": "tracer" if j == "P" else "R", "coords": list(xy)} for j, xy in coords.items()}
    spec = {
        "name": f"six_bar_{kind}",
        "geometry": "planar",
        "description": about + ".",
        "joints": joints,
        "links": {k: list(v) + (["P"] if k == carrier else []) for k, v in links.items()},
        "ground": "G",
        "input": {"type": "revolute", "link": link, "joint": pivot},
    }
    return Linkage.from_dict(spec)

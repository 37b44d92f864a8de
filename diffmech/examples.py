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

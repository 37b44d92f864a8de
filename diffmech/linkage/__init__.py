"""Linkages of points, lines and planes (Sharma & Purwar, seed 003): planar,
spherical and spatial n-bars with revolute, prismatic and spherical joints (in space
also cylindrical and universal ones), one input or several (revolute, prismatic, a
joint's own turn or slide, or a linear actuator), simulated on the closure core."""

from .._drives import (
    AffineTorque as AffineTorque,
    ConstantTorque as ConstantTorque,
    ServoTorque as ServoTorque,
    TorqueSeries as TorqueSeries,
)
from .._integrator import Integrator as Integrator
from ._analysis import (
    Sensitivity as Sensitivity,
    Tolerance as Tolerance,
    Transmission as Transmission,
    sensitivity as sensitivity,
    tolerance as tolerance,
    transmission as transmission,
)
from ._drawing import to_csv as to_csv, to_dxf as to_dxf, to_svg as to_svg
from ._dynamics import (
    Drive as Drive,
    JointForces as JointForces,
    Simulation as Simulation,
    generalised_inertia as generalised_inertia,
    joint_forces as joint_forces,
    potential as potential,
    rod_mass_properties as rod_mass_properties,
    simulate_dynamics as simulate_dynamics,
)
from ._mjcf import from_mjcf as from_mjcf, to_mjcf as to_mjcf
from ._model import Linkage as Linkage, residual as residual
from ._schema import GEOMETRIES as GEOMETRIES, LinkageError as LinkageError
from ._sdf import from_sdf as from_sdf
from ._simulate import (
    Mobility as Mobility,
    Motion as Motion,
    check_initial as check_initial,
    default_inputs as default_inputs,
    link_pose as link_pose,
    mobility as mobility,
    motion_rates as motion_rates,
    rates as rates,
    simulate as simulate,
    simulate_functional as simulate_functional,
    solve as solve,
    sweep as sweep,
    sweep_functional as sweep_functional,
)
from ._singular import Singularities as Singularities, singularities as singularities
from ._structure import Group as Group, Structure as Structure, structure as structure


def load(path, **kw) -> Linkage:
    """Load a linkage description from a JSON or TOML file (see `Linkage.from_dict`
    for the format); errors name the file, the item and the reason.

    **Arguments:** `path`: the file (`.json` or `.toml`); `kw`: keyword arguments for
    `Linkage.from_dict`.

    **Returns:** a `Linkage`.
    """
    return Linkage.load(path, **kw)


def view(lk: Linkage, *, host: str = "127.0.0.1", port: int | None = None):
    """Show a linkage live in the browser: a page served from Python (viser) with a
    slider per input and play/pause, every frame the closure core's solution with its
    status (a motion limit is shown where it happens), each tracer's curve, and the
    design's joints editable (the curves follow) and saved as a description. Listens on
    `host` (default 127.0.0.1: this machine only) at `port` (default: a free one).
    Needs the `view` extra (`pip install "diffmech[view]"`).

    **Arguments:** `lk`: the linkage; `host`, `port`. **Returns:** a `LinkageViewer`
    (`url`, `set_inputs`, `set_joint`, `play`, `save`, `close`); in Jupyter,
    `viewer.server.scene.show()` embeds it.
    """
    from .._view import view as _view

    return _view(lk, host=host, port=port)

"""Linkages of points, lines and planes (Sharma & Purwar, seed 003): planar,
spherical and spatial n-bars with revolute, prismatic and spherical joints, one input
(revolute, prismatic or a linear actuator), simulated on the closure core."""

from ._model import Linkage as Linkage
from ._model import residual as residual
from ._schema import GEOMETRIES as GEOMETRIES
from ._schema import LinkageError as LinkageError
from ._simulate import (
    Motion as Motion,
)
from ._simulate import (
    check_initial as check_initial,
)
from ._simulate import (
    default_inputs as default_inputs,
)
from ._simulate import (
    mobility as mobility,
)
from ._simulate import (
    motion_rates as motion_rates,
)
from ._simulate import (
    rates as rates,
)
from ._simulate import (
    simulate as simulate,
)
from ._simulate import (
    simulate_functional as simulate_functional,
)
from ._simulate import (
    solve as solve,
)


def load(path, **kw) -> Linkage:
    """Load a linkage description from a JSON or TOML file (see `Linkage.from_dict`
    for the format); errors name the file, the item and the reason."""
    return Linkage.load(path, **kw)

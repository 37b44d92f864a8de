"""Screw algebra (public namespace): twists `(ω; v)`, wrenches `(f; τ)`, the
reciprocal product, adjoint transforms, unit screws of R and P joints. See
`diffmech._screw` for the conventions."""

from ._screw import (
    N_MATRIX as N_MATRIX,
)
from ._screw import (
    adjoint as adjoint,
)
from ._screw import (
    compose as compose,
)
from ._screw import (
    exp as exp,
)
from ._screw import (
    prismatic as prismatic,
)
from ._screw import (
    reciprocal as reciprocal,
)
from ._screw import (
    revolute as revolute,
)
from ._screw import (
    rotation as rotation,
)
from ._screw import (
    rotation_vector as rotation_vector,
)
from ._screw import (
    skew as skew,
)
from ._screw import (
    transform as transform,
)
from ._screw import (
    twist_of as twist_of,
)
from ._screw import (
    vee as vee,
)
from ._screw import (
    wrench as wrench,
)

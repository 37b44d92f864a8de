"""Four-bar synthesis — path generation (free, prescribed or cyclically ordered timing),
motion generation (rigid-body guidance) and function generation — under box bounds, a
fixed frame, Grashof, full-rotation and transmission-angle constraints, both assembly
branches; and path generation of linkages, by gradient descent from many starts."""

from ._synthesis import (
    InfeasibleError as InfeasibleError,
)
from ._synthesis import (
    PlacedFourBar as PlacedFourBar,
)
from ._synthesis import (
    Synthesis as Synthesis,
)
from ._synthesis import (
    function_generation as function_generation,
)
from ._synthesis import (
    motion_generation as motion_generation,
)
from ._synthesis import (
    path_generation as path_generation,
)
from ._synthesis import (
    save_design as save_design,
)

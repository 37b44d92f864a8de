"""Four-bar synthesis — path generation (free, prescribed or cyclically ordered timing),
motion generation (rigid-body guidance) and function generation — under box bounds, a
fixed frame, Grashof, full-rotation and transmission-angle constraints, both assembly
branches; and path generation of linkages, by gradient descent from many starts."""

from ._synthesis import (
    AbstractTask as AbstractTask,
    Constraints as Constraints,
    Function as Function,
    InfeasibleError as InfeasibleError,
    Motion as Motion,
    MultiStart as MultiStart,
    Path as Path,
    PlacedFourBar as PlacedFourBar,
    Synthesis as Synthesis,
    function_generation as function_generation,
    motion_generation as motion_generation,
    path_generation as path_generation,
    save_design as save_design,
    synthesize as synthesize,
)
